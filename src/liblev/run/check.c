/*
 * check.c - compose the gates for one hypothetical call (see check.h).
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/policy/argcheck.h"
#include "liblev/base/buf.h"
#include "liblev/run/check.h"
#include "liblev/base/cleanup.h"
#include "liblev/policy/perm-config.h"
#include "liblev/policy/perm.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/base/strv.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/policy/taintgate.h"
#include "liblev/tools/tools.h"
#include "liblev/tools/tools-fs.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static const char *const gate_names[_LEV_CHECK_GATE_MAX] = {
	[LEV_CHECK_GATE_NONE] = "none",
	[LEV_CHECK_GATE_OFFERED] = "offered",
	[LEV_CHECK_GATE_SCHEMA] = "schema",
	[LEV_CHECK_GATE_REDIRECT] = "redirect",
	[LEV_CHECK_GATE_PERMISSION] = "permission",
	[LEV_CHECK_GATE_WORKDIR] = "workdir",
	[LEV_CHECK_GATE_READ_PATHS] = "read_paths",
	[LEV_CHECK_GATE_NETWORK] = "network",
	[LEV_CHECK_GATE_TAINT] = "taint",
};

const char *lev_check_gate_name(enum lev_check_gate g)
{
	return (unsigned)g < _LEV_CHECK_GATE_MAX ? gate_names[g] : "?";
}

void lev_check_result_release(struct lev_check_result *r)
{
	free(r->reason);
	free(r->rule);
	free(r->path);
	lev_strv_free(r->keys);
	lev_strv_free(r->warnings);
	memset(r, 0, sizeof(*r));
}

/* What one gate said. */
struct said {
	bool ran;
	enum lev_verdict verdict;
	char *reason;
	char *path;
};

struct run {
	struct said g[_LEV_CHECK_GATE_MAX];
	char *rule;
};

static void say(struct run *run, enum lev_check_gate gate, enum lev_verdict v, char *reason,
		char *path)
{
	struct said *s = &run->g[gate];

	s->ran = true;
	s->verdict = v;
	free(s->reason);
	s->reason = reason;
	free(s->path);
	s->path = path;
}

static void run_release(struct run *run)
{
	size_t i;

	for (i = 0; i < _LEV_CHECK_GATE_MAX; i++) {
		free(run->g[i].reason);
		free(run->g[i].path);
	}
	free(run->rule);
}

/* First deny in gate order, else first ask, else allow. */
static void decide(struct run *run, struct lev_check_result *out)
{
	enum lev_verdict want[] = { LEV_DENY, LEV_ASK };
	size_t w, i;
	char *path = NULL;

	for (i = 0; i < _LEV_CHECK_GATE_MAX; i++)
		if (run->g[i].ran && run->g[i].path && !path)
			path = run->g[i].path;
	for (w = 0; w < ARRAY_SIZE(want); w++)
		for (i = 0; i < _LEV_CHECK_GATE_MAX; i++)
			if (run->g[i].ran && run->g[i].verdict == want[w]) {
				out->decision = want[w];
				out->gate = (enum lev_check_gate)i;
				out->reason = TAKE_PTR(run->g[i].reason);
				out->path = run->g[i].path ? xstrdup(run->g[i].path)
							   : path ? xstrdup(path) : NULL;
				out->rule = TAKE_PTR(run->rule);
				return;
			}
	out->decision = LEV_ALLOW;
	out->gate = LEV_CHECK_GATE_NONE;
	out->reason = run->g[LEV_CHECK_GATE_PERMISSION].reason
			      ? xasprintf("every gate allows it (%s)",
					  run->g[LEV_CHECK_GATE_PERMISSION].reason)
			      : xstrdup("every gate allows it");
	out->path = path ? xstrdup(path) : NULL;
	out->rule = TAKE_PTR(run->rule);
}

static char *join(char *const *v, const char *sep)
{
	struct lev_buf b = LEV_BUF_INIT;

	for (; v && *v; v++)
		(void)lev_buf_addf(&b, "%s%s", b.len ? sep : "", *v);
	return lev_buf_detach(&b, NULL);
}

/* Offered: lev provides the tool and the stage lists it (the runtime's words). */
static void offered(const struct lev_tools *tools, const struct lev_stage *st, const char *name,
		    const struct lev_tool_info *ti, struct run *run)
{
	struct lev_buf list = LEV_BUF_INIT_MAX(65536);
	char *const *t;

	if (ti && lev_strv_contains(st->available_tools, ti->name)) {
		say(run, LEV_CHECK_GATE_OFFERED, LEV_ALLOW, NULL, NULL);
		return;
	}
	for (t = st->available_tools; t && *t; t++)
		if (lev_tools_find(tools, *t))
			(void)lev_buf_addf(&list, "%s%s", list.len ? ", " : "", *t);
	if (list.len)
		say(run, LEV_CHECK_GATE_OFFERED, LEV_DENY,
		    xasprintf("[unavailable] '%s' is not available in stage '%s'%s. You may call: "
			      "%s.",
			      name, st->name, ti ? "" : " (lev does not provide it)", list.buf),
		    NULL);
	else
		say(run, LEV_CHECK_GATE_OFFERED, LEV_DENY,
		    xasprintf("[unavailable] '%s' is not available in stage '%s', which has no "
			      "tools at all.",
			      name, st->name),
		    NULL);
	lev_buf_release(&list);
}

static void schema(const struct lev_tool_info *ti, const json_t *args, struct run *run)
{
	struct lev_err e = LEV_ERR_INIT;

	if (lev_argcheck_checked(ti->schema, args, &e) < 0)
		say(run, LEV_CHECK_GATE_SCHEMA, LEV_DENY,
		    xasprintf("[error] invalid arguments for '%s': %s", ti->name, e.msg), NULL);
	else
		say(run, LEV_CHECK_GATE_SCHEMA, LEV_ALLOW, NULL, NULL);
}

/* A stage whose sandbox has no network at all (the runtime's shell_offline(), statically). */
static bool offline(const struct lev_sandbox_spec *eff)
{
	return !eff->network &&
	       (eff->kind == LEV_SANDBOX_CONTAINER || eff->kind == LEV_SANDBOX_NAMESPACE);
}

static void network(const struct lev_tool_info *ti, const struct lev_stage *st,
		    const struct lev_sandbox_spec *eff, struct run *run)
{
	if (ti->kind != LEV_TOOL_NET)
		return;
	if (!eff->network)
		say(run, LEV_CHECK_GATE_NETWORK, LEV_DENY,
		    xasprintf("[denied] '%s' cannot reach the network: stage '%s' runs with "
			      "network = false.",
			      ti->name, st->name),
		    NULL);
	else
		say(run, LEV_CHECK_GATE_NETWORK, LEV_ALLOW, NULL, NULL);
}

static void permission(const struct lev_perm_setup *ps, const char *canon,
		       const struct lev_shellkeys *sk, bool shell, struct run *run,
		       struct lev_check_result *out)
{
	struct lev_perm_decision d;
	struct lev_buf rule = LEV_BUF_INIT_MAX(16384);
	struct lev_buf why = LEV_BUF_INIT_MAX(65536);

	lev_perm_decide(&ps->in, canon, sk, NULL, &d);
	(void)lev_perm_describe(&d, &rule);
	(void)lev_buf_addf(&why, "'%s' %s: %s", canon,
			   d.verdict == LEV_ALLOW ? "is allowed"
			   : d.verdict == LEV_ASK ? "asks before it runs"
						  : "is denied",
			   rule.buf);
	if (shell && d.verdict != LEV_DENY) {
		if (!sk) {
			(void)lev_buf_adds(&why, "; no command was given, so nothing can be granted");
		} else if (!sk->grantable) {
			(void)lev_buf_addf(&why, "; this line can never be granted (%s)", sk->reason);
		} else if (d.verdict == LEV_ASK) {
			_cleanup_free_ char *keys = join(sk->keys, ", ");

			(void)lev_buf_addf(&why, "; a grant would need the keys: %s", keys);
		}
	}
	if (shell && sk && sk->grantable)
		out->keys = lev_strv_copy(sk->keys);
	free(run->rule);
	run->rule = lev_buf_detach(&rule, NULL);
	say(run, LEV_CHECK_GATE_PERMISSION, d.verdict, lev_buf_detach(&why, NULL), NULL);
}

static int paths(struct lev_fs_ctx *fs, const char *canon, const json_t *args, struct run *run,
		 struct lev_err *err)
{
	struct lev_fs_decision d = { 0 };
	int r = lev_fs_check_call(fs, canon, args, &d, err);

	if (r == LEV_EUSAGE) {
		/* a path the tool cannot use (empty, NUL byte, not UTF-8 ...): it refuses */
		say(run, LEV_CHECK_GATE_WORKDIR, LEV_DENY, xstrdup(err ? err->msg : "bad path"),
		    NULL);
		lev_err_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	/* a refused escape is reported where it really leads */
	if (d.verdict == LEV_DENY && d.path && d.path[0] == '/') {
		char *real = lev_perm_real_path(d.path);

		free(d.path);
		d.path = real;
	}
	say(run, d.gate == LEV_FS_GATE_READ_PATHS ? LEV_CHECK_GATE_READ_PATHS
						    : LEV_CHECK_GATE_WORKDIR,
	    d.verdict, d.reason ? TAKE_PTR(d.reason) : xstrdup("the path is inside the policy"),
	    TAKE_PTR(d.path));
	lev_fs_decision_release(&d);
	return 0;
}

static int redirect(struct lev_fs_ctx *fs, const char *home, const struct lev_shellkeys *sk,
		    struct run *run, struct lev_err *err)
{
	struct lev_redirect_decision d;
	_cleanup_free_ char *own_home = NULL;
	int r;

	if (!home && lev_home_dir(&own_home, NULL) == 0)
		home = own_home;
	r = lev_perm_redirect_check(lev_fs_ctx_root_fd(fs), lev_fs_ctx_workdir(fs), home, sk, &d,
				    err);
	if (r < 0)
		return r;
	say(run, LEV_CHECK_GATE_REDIRECT, d.verdict,
	    d.reason ? TAKE_PTR(d.reason)
		     : xstrdup(sk->write_targets ? "every redirect stays inside the working "
						   "directory"
						 : "the line redirects into no file"),
	    TAKE_PTR(d.path));
	lev_redirect_decision_release(&d);
	return 0;
}

static const char *gate_source_text(const struct lev_gate_decision *d, char **own)
{
	switch (d->source) {
	case LEV_GATE_SRC_TAINT_DISABLED:
		return "taint tracking is off for this agent";
	case LEV_GATE_SRC_NOT_OUTBOUND:
		return "the tool is not outbound";
	case LEV_GATE_SRC_WITHIN_CLEARANCE:
		return "the taint is within the tool's clearance";
	case LEV_GATE_SRC_ALLOWLIST:
		*own = xasprintf("policy.toml [[allowlist]] #%zu (line %u)", d->rule_index,
				 d->rule_line);
		return *own;
	case LEV_GATE_SRC_RULE:
		*own = xasprintf("gate rule '%s'", d->rule_name ? d->rule_name : "?");
		return *own;
	case LEV_GATE_SRC_YOLO:
		return "--yolo";
	default:
		return "no allowlist entry or rule allows it";
	}
}

static int taint(const struct lev_config *cfg, const struct lev_blueprint *bp,
		 const struct lev_check_opts *o, struct lev_fs_ctx *fs, const char *canon,
		 const char *args_text, bool shell_offline, struct run *run, struct lev_err *err)
{
	struct lev_gate_options go = {
		.policy_path = o->policy_path,
		.rules_dir = o->rules_dir,
		.enabled = lev_taint_enabled(cfg->taint_tracking, lev_blueprint_wants_taint(bp)),
		.yolo = o->yolo,
		.read_grant_active = lev_fs_ctx_read_paths_granted(fs),
		.recheck_ns = -1,
	};
	struct lev_gate_call call = {
		.tool = canon,
		.args_json = args_text,
		.args_len = strlen(args_text),
		.taint = o->taint,
	};
	struct lev_gate *g = NULL;
	struct lev_gate_decision d;
	struct lev_buf b = LEV_BUF_INIT_MAX(65536);
	_cleanup_free_ char *own = NULL;
	const char *src;
	enum lev_verdict v;
	int r;

	if (go.enabled && shell_offline) {
		say(run, LEV_CHECK_GATE_TAINT, LEV_ALLOW,
		    xstrdup("taint: not outbound: the stage's sandbox has no network"), NULL);
		return 0;
	}
	r = lev_gate_new(&go, &g, err);
	if (r < 0)
		return r;
	r = lev_gate_check(g, &call, &d, err);
	if (r < 0) {
		lev_gate_free(g);
		return r;
	}
	src = gate_source_text(&d, &own);
	v = d.result == LEV_GATE_ALLOWED ? LEV_ALLOW
	    : d.result == LEV_GATE_NEEDS_USER ? LEV_ASK
					      : LEV_DENY;
	if (v == LEV_ALLOW) {
		(void)lev_buf_addf(&b, "taint: %s", src);
	} else {
		(void)lev_gate_describe(&d, &b);
		(void)lev_buf_addf(&b, "; %s%s", src,
				   v == LEV_ASK ? ", so the user would be asked" : "");
		if (d.target_error)
			(void)lev_buf_addf(&b, " (target: %s)", d.target_error);
	}
	say(run, LEV_CHECK_GATE_TAINT, v, lev_buf_detach(&b, NULL), NULL);
	if (v != LEV_ALLOW) {
		free(run->rule);
		run->rule = xstrdup(src);
	}
	lev_gate_decision_release(&d);
	lev_gate_free(g);
	return 0;
}

int lev_check_run(const struct lev_config *cfg, const struct lev_blueprint *bp,
		  const struct lev_check_opts *o, struct lev_check_result *out, struct lev_err *err)
{
	struct run run = { 0 };
	struct lev_perm_setup ps;
	bool have_ps = false, have_sk = false, shell;
	struct lev_shellkeys sk = { 0 };
	struct lev_sandbox_spec eff = { 0 };
	struct lev_fs_ctx *fs = NULL;
	struct lev_tools *tools = NULL;
	const struct lev_tool_info *ti;
	char **grants = NULL;
	const char *args_text, *canon, *stage_name;
	const struct lev_stage *st;
	json_error_t je;
	json_t *args = NULL;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!o->tool || !*o->tool)
		return lev_err_set(err, LEV_EUSAGE, "no tool named");
	if (!o->workdir)
		return lev_err_set(err, LEV_EUSAGE, "no working directory");
	canon = lev_tool_canonical(o->tool);
	shell = !strcmp(canon, "shell");
	args_text = o->args_json ? o->args_json : "{}";
	if (strlen(args_text) > LEV_CHECK_ARGS_MAX)
		return lev_err_set(err, LEV_EUSAGE, "--args is longer than %zu bytes",
				   LEV_CHECK_ARGS_MAX);
	args = json_loads(args_text, JSON_REJECT_DUPLICATES, &je);
	if (!args)
		return lev_err_set(err, LEV_EUSAGE, "--args is not valid JSON: %s (at %d:%d)", je.text,
				   je.line, je.column);
	if (!json_is_object(args)) {
		r = lev_err_set(err, LEV_EUSAGE, "--args must be a JSON object");
		goto out;
	}
	stage_name = o->stage ? o->stage : bp->entry_stage;
	st = lev_blueprint_stage(bp, stage_name);
	if (!st) {
		_cleanup_free_ char *names = NULL;
		struct lev_buf b = LEV_BUF_INIT_MAX(65536);
		size_t i;

		for (i = 0; i < bp->n_stages; i++)
			(void)lev_buf_addf(&b, "%s%s", i ? ", " : "", bp->stages[i].name);
		names = lev_buf_detach(&b, NULL);
		r = lev_err_set(err, LEV_EUSAGE, "agent '%s' has no stage '%s' (stages: %s)", bp->name,
				stage_name, names);
		goto out;
	}
	r = lev_tools_new(&tools, err);
	if (r < 0)
		goto out;
	ti = lev_tools_find(tools, canon);

	/* offered, then schema: nothing else runs for a call that fails them */
	offered(tools, st, o->tool, ti, &run);
	if (run.g[LEV_CHECK_GATE_OFFERED].verdict == LEV_DENY)
		goto decide;
	schema(ti, args, &run);
	if (run.g[LEV_CHECK_GATE_SCHEMA].verdict == LEV_DENY)
		goto decide;

	if (shell) {
		const json_t *cmd = json_object_get(args, "command");

		if (json_is_string(cmd)) {
			const char *c = json_string_value(cmd);

			/* a NUL inside the command is unreadable, not a shorter command */
			lev_shellkeys_parse(strlen(c) == json_string_length(cmd) ? c : NULL, &sk);
			have_sk = true;
		}
	}

	/* the workdir: the file tools and the redirect gate both need it */
	grants = lev_config_read_path_grants_for_agent(cfg, lev_blueprint_grant_name(bp));
	{
		struct lev_fs_opts fo = {
			.workdir = o->workdir,
			.agent = bp->name,
			.home = o->home,
			.declared = bp->read_paths,
			.grants = grants,
			.allow_blueprint = cfg->allow_blueprint_read_paths,
			.config_path = cfg->path,
			.confine = o->confine,
		};

		r = lev_fs_ctx_new(&fo, &fs, err);
		if (r < 0)
			goto out;
	}

	/* redirect, and the write fence of a line that cannot be fully analysed */
	lev_sandbox_resolve(&cfg->sandbox, &bp->sandbox, &st->sandbox, &eff);
	if (shell && have_sk) {
		struct lev_buf why = LEV_BUF_INIT;

		r = redirect(fs, o->home, &sk, &run, err);
		if (r < 0)
			goto out;
		if (run.g[LEV_CHECK_GATE_REDIRECT].verdict == LEV_ALLOW &&
		    lev_perm_fence_check(&sk, eff.kind, eff.kind != LEV_SANDBOX_NONE, &why) ==
			    LEV_DENY)
			say(&run, LEV_CHECK_GATE_REDIRECT, LEV_DENY,
			    xasprintf("[denied] %s", why.buf), NULL);
		lev_buf_release(&why);
	}

	/* permission */
	r = lev_perm_setup_init(&ps, cfg, bp, st->name, o->yolo, o->allow, err);
	if (r < 0)
		goto out;
	have_ps = true;
	out->warnings = lev_strv_copy(ps.warnings);
	permission(&ps, canon, have_sk ? &sk : NULL, shell, &run, out);

	/* workdir / read_paths */
	if (lev_fs_is_tool(canon)) {
		r = paths(fs, canon, args, &run, err);
		if (r < 0)
			goto out;
	}

	/* network, taint */
	network(ti, st, &eff, &run);
	r = taint(cfg, bp, o, fs, canon, args_text, shell && offline(&eff), &run, err);
	if (r < 0)
		goto out;

decide:
	decide(&run, out);
	r = 0;
out:
	if (r < 0)
		lev_check_result_release(out);
	run_release(&run);
	if (have_ps)
		lev_perm_setup_release(&ps);
	lev_shellkeys_release(&sk);
	lev_sandbox_spec_release(&eff);
	lev_fs_ctx_free(fs);
	lev_tools_free(tools);
	lev_strv_free(grants);
	json_decref(args);
	return r;
}
