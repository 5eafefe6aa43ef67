/*
 * agent-seed.c - the regions' seeds (see agent-internal.h).
 */
#include "liblev/run/agent-internal.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/context.h"

/* ---- seeds --------------------------------------------------------------- */

static int strcmp_ptr(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

struct seed_result {
	char *text;
	enum lev_level label;
	enum lev_integrity integrity;	/* docs/integrity.md: as the tool's result would be */
	char *error;
};

/*
 * Read PATH as read_file does, into RES, and raise SR's labels by what was
 * read: the path decided and opened once, the labels from that object
 * (agent_label_fs(): its real path and the label ledger).
 */
static void seed_read(struct lev_agent *a, const char *path, struct lev_fs_result *res,
		      struct seed_result *sr)
{
	const char *tool = lev_tooltable_name(LEV_OP_READ_FILE);
	json_t *args = json_pack("{s:s}", "path", path);
	struct lev_fs_decision fd = { 0 };
	struct lev_fs_targets *ts = NULL;
	struct lev_err e = LEV_ERR_INIT;
	enum lev_integrity i = LEV_TRUSTED;

	memset(res, 0, sizeof(*res));
	if (!args || lev_fs_decide(a->fs, tool, args, false, &fd, &ts, &e) < 0) {
		res->text = xasprintf("[error] %s", args ? e.msg : "out of memory");
		res->is_error = true;
	} else if (fd.verdict != LEV_ALLOW) {
		res->text = xasprintf("[error] %s", fd.reason ? fd.reason : "refused");
		res->is_error = true;
	} else {
		lev_fs_run(a->fs, tool, args, ts, res);
		if (!agent_label_fs(a, ts, &sr->label, &i))
			i = agent_file_integrity(a, path);
		if (lev_fs_targets_outside(ts))
			sr->label = LEV_PRIVATE;
		if (i == LEV_UNTRUSTED)
			sr->integrity = LEV_UNTRUSTED;
	}
	if (res->is_error && !res->len)
		res->len = strlen(res->text);
	lev_fs_decision_release(&fd);
	lev_fs_targets_free(ts);
	json_decref(args);
}

static void seed_files(struct lev_agent *a, char *const *paths, struct seed_result *sr)
{
	struct lev_buf b = LEV_BUF_INIT;
	struct lev_tool_class cls;

	lev_gate_classify(a->gate, lev_tooltable_name(LEV_OP_READ_FILE), &cls);
	sr->label = agent_grant_floor(a, cls.sensitivity);
	for (char *const *p = paths; p && *p; p++) {
		struct lev_fs_result res = { 0 };

		seed_read(a, *p, &res, sr);
		if (res.is_error) {
			sr->error = xasprintf("seed file '%s': %s", *p, res.text);
			lev_fs_result_release(&res);
			break;
		}
		if (b.len)
			(void)lev_buf_adds(&b, "\n\n");
		(void)lev_buf_addf(&b, "### %s\n", *p);
		(void)lev_buf_add(&b, res.text, res.len);
		lev_fs_result_release(&res);
	}
	if (sr->error)
		lev_buf_release(&b);
	else
		sr->text = lev_buf_detach(&b, NULL);
}

static void seed_glob(struct lev_agent *a, const char *pattern, struct seed_result *sr)
{
	_cleanup_free_ char *full = NULL;
	char **paths = NULL;
	glob_t g;
	size_t wl = strlen(a->workdir);
	int r;

	if (!pattern || pattern[0] == '/' || pattern[0] == '~' || strstr(pattern, "..")) {
		sr->error = xasprintf("seed glob '%s' must be relative to the working directory and "
				      "stay inside it", pattern ? pattern : "");
		return;
	}
	full = lev_path_join(a->workdir, pattern);
	memset(&g, 0, sizeof(g));
	r = glob(full, GLOB_NOSORT | GLOB_NOESCAPE, NULL, &g);
	if (r == GLOB_NOMATCH) {
		globfree(&g);
		sr->text = xstrdup("");
		return;
	}
	if (r != 0) {
		globfree(&g);
		sr->error = xasprintf("seed glob '%s' failed", pattern);
		return;
	}
	for (size_t i = 0; i < g.gl_pathc && i < SEED_GLOB_MAX; i++)
		if (lev_startswith(g.gl_pathv[i], a->workdir) && g.gl_pathv[i][wl] == '/')
			paths = lev_strv_push(paths, g.gl_pathv[i] + wl + 1);
	globfree(&g);
	if (paths)
		qsort(paths, lev_strv_len(paths), sizeof(*paths), strcmp_ptr);
	/* each match is read through the file tools' confinement */
	seed_files(a, paths, sr);
	lev_strv_free(paths);
}

static void seed_command(struct lev_agent *a, const char *region, const char *command,
			 struct seed_result *sr)
{
	struct stage_rt *entry = &a->stages[a->cur];
	struct lev_tool_output out = { 0 };
	struct lev_tool_class cls, rf;
	struct lev_gatechain_env env;
	struct lev_gatechain_decision gd;
	json_t *args = json_pack("{s:s}", "command", command);
	struct lev_gatechain_call gc = { .name = lev_tooltable_name(LEV_OP_SHELL), .args = args };
	struct lev_shell_opts so = {
		.sandbox = entry->sb,
		.envp = a->envp,
		.cancel_fd = a->o.cancel_fd,
		.timeout_ms = a->cfg->limits.script_shell_timeout_secs * 1000,
		.output_max = 900 * 1024,
	};
	_cleanup_free_ char *home = NULL;

	if (a->o.home)
		home = xstrdup(a->o.home);
	else if (lev_home_dir(&home, NULL) < 0)
		home = NULL;
	/* the same chain as a call, with the safe lists alone: nobody is asked at spawn */
	agent_chain_env(a, LEV_GATECHAIN_COMMAND_SEED, home, &env);
	(void)lev_gatechain_decide(&env, &gc, &gd, NULL);
	json_decref(args);
	agent_audit_steps(a, NULL, gc.name, &gd, region);
	if (gd.verdict != LEV_ALLOW) {
		sr->error = gd.verdict == LEV_DENY
				    ? xstrdup(gd.reason)
				    : xasprintf("seed command '%s' would need an answer, and nobody "
						"is asked at spawn: %s", command, gd.reason);
		lev_gatechain_decision_release(&gd);
		return;
	}
	so.read_fence = gd.read_fence;
	so.protect = agent_shell_protects(a, gd.integrity);
	so.git_hooks_off = gd.git_hooks_off;
	lev_gatechain_decision_release(&gd);
	(void)lev_tool_shell(&so, command, &out, NULL);
	if (out.is_error) {
		sr->error = xasprintf("seed command '%s' failed: %s", command,
				      out.text ? out.text : "");
	} else {
		/* command output is labelled like a shell result (see result_label) */
		lev_gate_classify(a->gate, gc.name, &cls);
		lev_gate_classify(a->gate, lev_tooltable_name(LEV_OP_READ_FILE), &rf);
		sr->label = lev_level_max(cls.sensitivity, agent_grant_floor(a, rf.sensitivity));
		sr->integrity = agent_result_integrity(
			a, lev_tools_find(a->tools, lev_tooltable_name(LEV_OP_SHELL)), NULL, NULL);
		sr->text = TAKE_PTR(out.text);
	}
	lev_tool_output_release(&out);
}

/*
 * A tool seed calls a real tool before the first inference, in the entry
 * stage, through the gates a model's call meets (schema, permission, paths,
 * network, taint), with one difference: nobody is asked, so only what
 * resolves to allow runs.  A shell seed is a command seed and meets the
 * command-seed rules as well (allow_seed_commands, the safe list), so
 * `tool = "shell"` is no way around them.
 */
static void seed_tool(struct lev_agent *a, const struct lev_region *rg, struct seed_result *sr)
{
	const struct lev_tool_info *ti = lev_tools_find(a->tools, rg->seed.value);
	const char *tool = ti ? ti->name : rg->seed.value ? rg->seed.value : "";
	const char *raw = rg->seed.args_json ? rg->seed.args_json : "{}";
	struct lev_tool_call call = { 0 };
	struct lev_tool_output out = { 0 };
	struct lev_call_decision dec = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	json_error_t je;

	call.arguments = json_loads(raw, JSON_REJECT_DUPLICATES, &je);
	if (ti && ti->kind == LEV_TOOL_SHELL) {
		const char *cmd = agent_arg_str(call.arguments, ti->detail_arg);

		if (cmd)
			seed_command(a, rg->name, cmd, sr);
		else
			sr->error = xasprintf("shell seed for region '%s' has no command", rg->name);
		json_decref(call.arguments);
		return;
	}
	call.id = xasprintf("seed:%s", rg->name);
	call.name = xstrdup(rg->seed.value);
	call.raw_arguments = xstrdup(raw);
	if (!json_is_object(call.arguments)) {
		json_decref(call.arguments);
		call.arguments = NULL;
		call.parse_error = xstrdup("the args table is not a JSON object");
	}
	a->seeding = true;
	if (lev_agent_dispatch(a, &call, &out, &dec, &err) < 0)
		sr->error = xasprintf("seed tool '%s': %s", tool, err.msg);
	else if (!dec.allowed)
		sr->error = xasprintf("seed tool '%s' refused by the %s gate: %s", tool,
				      dec.gate ? dec.gate : "?", dec.reason ? dec.reason : "denied");
	else if (out.is_error)
		sr->error = xasprintf("seed tool '%s' failed: %.300s", tool,
				      out.text ? out.text : "");
	else {
		sr->label = dec.label;
		sr->integrity = dec.integrity;
		sr->text = TAKE_PTR(out.text);
	}
	a->seeding = false;
	lev_call_decision_release(&dec);
	lev_tool_output_release(&out);
	json_decref(call.arguments);
	free(call.id);
	free(call.name);
	free(call.raw_arguments);
	free(call.parse_error);
}

/*
 * The value of the caller input that seeds RG (lev_blueprint_caller_input()),
 * or NULL; *KEY (caller frees) the name it was given under.
 */
static const char *caller_input(const struct lev_agent *a, const struct lev_region *rg,
				char **key_out)
{
	for (char *const *in = a->o.inputs; in && *in; in++) {
		const char *eq = strchr(*in, '=');
		_cleanup_free_ char *key = eq ? xstrndup(*in, (size_t)(eq - *in)) : NULL;

		if (key && lev_blueprint_caller_input(a->bp, key) == rg) {
			*key_out = TAKE_PTR(key);
			return eq + 1;
		}
	}
	return NULL;
}

int agent_run_seeds(struct lev_agent *a, struct lev_err *err)
{
	bool task_placed = false;
	int r;

	for (size_t i = 0; i < a->bp->n_regions; i++) {
		const struct lev_region *rg = &a->bp->regions[i];
		struct seed_result sr = { .label = LEV_PUBLIC };
		int idx = lev_context_region_find(a->ctx, rg->name);
		json_t *ev;

		if (rg->seed.kind == LEV_SEED_NONE || idx < 0)
			continue;
		switch (rg->seed.kind) {
		case LEV_SEED_CALLER:
			if (lev_streq(rg->seed.value, "task") && a->o.task) {
				sr.text = xstrdup(a->o.task);
				sr.label = a->task_label;
				if (a->task_untrusted)
					sr.integrity = LEV_UNTRUSTED;
				task_placed = true;
			} else if (!lev_streq(rg->seed.value, "task")) {
				_cleanup_free_ char *key = NULL;
				const char *v = caller_input(a, rg, &key);

				if (v) {
					/* the user's own input, labelled as the task is, and
					 * one read from a file as read_file of it would be */
					sr.text = xstrdup(v);
					sr.label = a->task_label;
					if (a->task_untrusted)
						sr.integrity = LEV_UNTRUSTED;
					(void)agent_label_input(a, key, &sr.label,
								&sr.integrity);
				} else {
					sr.error = xasprintf("no input '%s' was given (lev run "
							     "--%s VALUE)", rg->seed.value,
							     rg->seed.value);
				}
			}
			break;
		case LEV_SEED_LITERAL:
			sr.text = xstrdup(rg->seed.value ? rg->seed.value : "");
			break;
		case LEV_SEED_FILES:
			seed_files(a, rg->seed.list, &sr);
			break;
		case LEV_SEED_GLOB:
			seed_glob(a, rg->seed.value, &sr);
			break;
		case LEV_SEED_COMMAND:
			seed_command(a, rg->name, rg->seed.value, &sr);
			break;
		case LEV_SEED_TOOL:
			seed_tool(a, rg, &sr);
			break;
		default:
			sr.error = xasprintf("unknown seed kind");
			break;
		}
		ev = agent_event_new("seed");
		json_object_set_new(ev, "region", agent_jtext(rg->name));
		json_object_set_new(ev, "kind", json_string(lev_seed_kind_name(rg->seed.kind)));
		json_object_set_new(ev, "ok", json_boolean(!sr.error));
		json_object_set_new(ev, "bytes", json_integer(sr.text ? (json_int_t)strlen(sr.text)
								       : 0));
		json_object_set_new(ev, "label", json_string(lev_level_name(sr.label)));
		json_object_set_new(ev, "integrity", json_string(lev_integrity_name(sr.integrity)));
		json_object_set_new(ev, "error", agent_jtext(sr.error));
		agent_emit(a, ev);
		if (sr.error || !sr.text || !*sr.text) {
			if (rg->required) {
				r = lev_err_set(err, LEV_EUSAGE, "required region '%s': %s", rg->name,
						rg->required_message ? rg->required_message
						: sr.error	      ? sr.error
								      : "its seed gave nothing");
				free(sr.text);
				free(sr.error);
				return r;
			}
			free(sr.text);
			free(sr.error);
			continue;
		}
		r = lev_context_add_text(a->ctx, (size_t)idx, sr.text, strlen(sr.text), sr.label,
					 err);
		if (r == 0)
			agent_integrity_result(a, rg->name, NULL, sr.integrity, sr.text,
					       strlen(sr.text), true);
		free(sr.text);
		free(sr.error);
		if (r < 0)
			return r;
	}

	/* no region takes the task: keep it pinned, where it cannot be evicted */
	if (a->o.task && !task_placed) {
		int pinned = lev_context_first_pinned(a->ctx);
		_cleanup_free_ char *t = xasprintf("Task:\n%s", a->o.task);
		size_t region = pinned >= 0 ? (size_t)pinned : lev_context_conversation(a->ctx);

		r = lev_context_add_text(a->ctx, region, t, strlen(t), a->task_label, err);
		if (r < 0)
			return lev_err_wrap(err, "the task");
		if (a->task_untrusted)
			lev_context_mark_untrusted(a->ctx);
	}
	return 0;
}

int lev_agent_seed(struct lev_agent *a, struct lev_err *err)
{
	return agent_run_seeds(a, err);
}
