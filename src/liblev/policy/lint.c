/*
 * lint.c - findings about a blueprint under the user's config.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/policy/lint.h"
#include "liblev/policy/argcheck.h"
#include "liblev/policy/perm-config.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include <sys/stat.h>

static const char *const severity_names[] = { "error", "warning", "note" };

/* Messages are one line and bounded, whatever the blueprint holds. */
#define MSG_MAX 4096

const char *lev_severity_name(enum lev_severity s)
{
	return s < _LEV_SEV_MAX ? severity_names[s] : "error";
}

void lev_findings_add(struct lev_findings *f, enum lev_severity sev, const char *code,
		      const char *stage, const char *fix, const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(MSG_MAX);
	struct lev_finding *x;
	va_list ap;

	va_start(ap, fmt);
	if (lev_buf_vaddf(&b, fmt, ap) < 0) {
		lev_buf_reset(&b);
		(void)lev_buf_adds(&b, "(message too long)");
	}
	va_end(ap);
	f->v = xreallocarray(f->v, f->n + 1, sizeof(*f->v));
	x = &f->v[f->n++];
	x->severity = sev;
	x->code = xstrdup(code);
	x->stage = stage ? xstrdup(stage) : NULL;
	x->message = lev_buf_detach(&b, NULL);
	x->fix = fix ? xstrndup(fix, MSG_MAX) : NULL;
	x->file = NULL;
	x->line = x->col = 0;
	x->key = NULL;
}

void lev_findings_add_at(struct lev_findings *f, enum lev_severity sev, const char *code,
			 const char *stage, const char *file, unsigned line, unsigned col,
			 const char *key, const char *message)
{
	struct lev_finding *x;

	lev_findings_add(f, sev, code, stage, NULL, "%s", message);
	x = &f->v[f->n - 1];
	x->file = file ? xstrdup(file) : NULL;
	x->line = line;
	x->col = col;
	x->key = key ? xstrdup(key) : NULL;
}

size_t lev_findings_count(const struct lev_findings *f, enum lev_severity sev)
{
	size_t i, n = 0;

	for (i = 0; i < f->n; i++)
		n += f->v[i].severity == sev;
	return n;
}

void lev_findings_release(struct lev_findings *f)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		free(f->v[i].code);
		free(f->v[i].stage);
		free(f->v[i].message);
		free(f->v[i].fix);
		free(f->v[i].file);
		free(f->v[i].key);
	}
	free(f->v);
	f->v = NULL;
	f->n = 0;
}

char *lev_toml_quote(const char *s)
{
	struct lev_buf b = LEV_BUF_INIT;

	(void)lev_buf_addch(&b, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			(void)lev_buf_addf(&b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			(void)lev_buf_addf(&b, "\\u%04x", c);
		else
			(void)lev_buf_addch(&b, (char)c);
	}
	(void)lev_buf_addch(&b, '"');
	return lev_buf_detach(&b, NULL);
}

/* "a, b, c" of a strv, each passed through lev_printable. */
static void add_list(struct lev_buf *b, char *const *v, const char *sep)
{
	size_t i;

	for (i = 0; v && v[i]; i++) {
		_cleanup_free_ char *p = lev_printable(v[i], strlen(v[i]), 256);
		(void)lev_buf_addf(b, "%s%s", i ? sep : "", p);
	}
}

int lev_lint_grant_report(const struct lev_blueprint *bp, const struct lev_config *cfg,
			  const char *workdir, const char *home,
			  enum lev_grant_status **status_out, size_t *granted_out,
			  struct lev_err *err)
{
	size_t i, n = lev_strv_len(bp->read_paths), granted = 0;
	_cleanup_strv_ char **grants = NULL;
	enum lev_grant_status *st;
	int r;

	if (n == 0) {
		*status_out = NULL;
		*granted_out = 0;
		return 0;
	}
	grants = lev_config_read_path_grants_for_agent(cfg, lev_blueprint_grant_name(bp));
	st = xcalloc(n, sizeof(*st));
	r = lev_readpaths_report(bp->read_paths, grants,
				 cfg->allow_blueprint_read_paths, workdir, home, st, err);
	if (r < 0) {
		free(st);
		return r;
	}
	for (i = 0; i < n; i++)
		granted += st[i] == LEV_GRANT_GRANTED;
	*status_out = st;
	*granted_out = granted;
	return 0;
}

static void lint_read_paths(const struct lev_blueprint *bp, const struct lev_config *cfg,
			    const char *workdir, const char *home, struct lev_findings *out)
{
	size_t i, n = lev_strv_len(bp->read_paths), granted = 0;
	_cleanup_free_ enum lev_grant_status *st = NULL;
	struct lev_err rerr = LEV_ERR_INIT;
	struct lev_buf msg = LEV_BUF_INIT_MAX(MSG_MAX);
	struct lev_buf fix = LEV_BUF_INIT_MAX(MSG_MAX);

	for (i = 0; i < n; i++) {
		_cleanup_free_ char *p = NULL;

		if (!lev_readpath_is_broad(bp->read_paths[i]))
			continue;
		p = lev_printable(bp->read_paths[i], strlen(bp->read_paths[i]), 256);
		lev_findings_add(out, LEV_SEV_WARNING, "broad-read-path", NULL,
				 "name the directory it actually needs",
				 "read_paths entry '%s' is very broad: it can match your whole home "
				 "directory or any path on this machine",
				 p);
	}
	if (n == 0)
		return;

	if (cfg && lev_lint_grant_report(bp, cfg, workdir, home, &st, &granted, &rerr) < 0) {
		lev_findings_add(out, LEV_SEV_WARNING, "read-paths-grant-invalid", NULL,
				 "fix the entry in your config.toml, or remove it",
				 "read_paths grant in your config.toml: %s", rerr.msg);
		cfg = NULL;	/* report the declarations without a verdict */
	}
	if (!cfg) {
		add_list(&msg, bp->read_paths, ", ");
		lev_findings_add(out, LEV_SEV_NOTE, "read-paths-declared", NULL,
				 "these are refused unless your own config grants them",
				 "declares [read_paths] (reads outside the run workdir): %s", msg.buf);
		lev_buf_release(&msg);
		return;
	}

	if (cfg->allow_blueprint_read_paths) {
		(void)lev_buf_adds(&fix, "all granted by [security] allow_blueprint_read_paths = true");
	} else {
		for (i = 0; i < n; i++) {
			_cleanup_free_ char *p = lev_printable(bp->read_paths[i],
							       strlen(bp->read_paths[i]), 256);
			(void)lev_buf_addf(&fix, "%s%s: %s", i ? "; " : "", p,
					   lev_grant_status_label(st[i]));
		}
	}
	lev_findings_add(out, LEV_SEV_NOTE, "read-paths-declared", NULL, fix.buf,
			 "declares [read_paths] (reads outside the run workdir): %zu declared, %zu "
			 "granted",
			 n, granted);

	lev_buf_reset(&msg);
	lev_buf_reset(&fix);
	(void)lev_buf_addf(&fix, "add to your config.toml: [agent_read_paths.%s] allow = [", bp->name);
	for (i = 0; i < n; i++) {
		_cleanup_free_ char *p = NULL;
		_cleanup_free_ char *q = NULL;

		if (st[i] != LEV_GRANT_NOT_GRANTED)
			continue;
		p = lev_printable(bp->read_paths[i], strlen(bp->read_paths[i]), 256);
		q = lev_toml_quote(bp->read_paths[i]);
		(void)lev_buf_addf(&msg, "%s%s", msg.len ? ", " : "", p);
		(void)lev_buf_addf(&fix, "%s%s", fix.buf[fix.len - 1] == '[' ? "" : ", ", q);
	}
	(void)lev_buf_adds(&fix, "]");
	if (msg.len)
		lev_findings_add(out, LEV_SEV_WARNING, "read-paths-not-granted", NULL, fix.buf,
				 "your config does not grant %s: reads matching them will be refused",
				 msg.buf);
	lev_buf_release(&msg);
	lev_buf_release(&fix);
}

static void lint_shell_policy(const struct lev_blueprint *bp, struct lev_findings *out)
{
	const char *shell = lev_tooltable_name(LEV_OP_SHELL);
	size_t i;

	for (i = 0; i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];
		enum lev_verdict v;
		_cleanup_free_ char *fix = NULL;

		if (!lev_strv_contains(st->available_tools, shell))
			continue;
		if (lev_blueprint_tool_verdict(bp, st, shell, &v))
			continue;
		fix = xasprintf("set shell = \"ask\", \"allow\" or \"deny\" under [tool_permissions] "
				"or [stages.%s.tool_permissions]",
				st->name);
		lev_findings_add(out, LEV_SEV_WARNING, "implicit-shell-policy", st->name, fix,
				 "offers 'shell' with no permission set for it, so every command "
				 "asks, and with nobody at a terminal it is denied");
	}
}

static void lint_seeds(const struct lev_blueprint *bp, const struct lev_config *cfg,
		       struct lev_findings *out)
{
	struct lev_buf cmds = LEV_BUF_INIT_MAX(MSG_MAX);
	struct lev_buf tools = LEV_BUF_INIT_MAX(MSG_MAX);
	size_t i, ncmd = 0, ntool = 0, refused = 0;
	bool disabled = cfg && !cfg->allow_seed_commands;

	for (i = 0; i < bp->n_regions; i++) {
		const struct lev_region *rg = &bp->regions[i];

		if (rg->seed.kind == LEV_SEED_COMMAND) {
			_cleanup_free_ char *p = lev_printable(rg->seed.value, strlen(rg->seed.value),
							       256);
			bool ok = lev_safecmd_default_covers(rg->seed.value);

			refused += !ok;
			(void)lev_buf_addf(&cmds, "%s%s: `%s` (%s)", ncmd ? "; " : "", rg->name, p,
					   ok ? "pre-approved by the built-in safe list"
					      : "NOT on the built-in safe list, so it will be refused");
			ncmd++;
		} else if (rg->seed.kind == LEV_SEED_TOOL) {
			_cleanup_free_ char *p = lev_printable(rg->seed.value, strlen(rg->seed.value),
							       128);
			(void)lev_buf_addf(&tools, "%s%s: %s", ntool ? "; " : "", rg->name, p);
			ntool++;
		}
	}
	if (ncmd) {
		const char *fix;
		enum lev_severity sev = LEV_SEV_NOTE;

		if (disabled)
			fix = "your config sets [security] allow_seed_commands = false: these are "
			      "skipped, and a required region fails the run";
		else if (refused) {
			sev = LEV_SEV_WARNING;
			fix = "a command seed must be covered by the built-in safe list (read-only "
			      "commands such as `git ls-files`); change it or drop the seed";
		} else
			fix = "review the commands; turn all command seeds off with [security] "
			      "allow_seed_commands = false";
		lev_findings_add(out, sev, "command-seed", NULL, fix,
				 "%zu region(s) run a shell command at spawn, before the first "
				 "inference and before any tool-approval prompt: %s",
				 ncmd, cmds.buf);
	}
	if (ntool)
		lev_findings_add(out, LEV_SEV_NOTE, "tool-seed", NULL,
				 "a seed tool meets every gate a model's call does, with nobody to "
				 "ask: it runs only where the policy says allow (ask and deny are "
				 "refused); a shell seed is a command seed",
				 "%zu region(s) call a tool at spawn, before any prompt: %s", ntool,
				 tools.buf);
	lev_buf_release(&cmds);
	lev_buf_release(&tools);
}

static void lint_sandbox(const struct lev_blueprint *bp, const struct lev_config *cfg,
			 struct lev_findings *out)
{
	bool user_active = cfg && cfg->sandbox.present && cfg->sandbox.kind != LEV_SANDBOX_NONE;
	size_t i;

	for (i = 0; i <= bp->n_stages; i++) {
		const struct lev_sandbox_spec *s = i == 0 ? &bp->sandbox : &bp->stages[i - 1].sandbox;
		const char *stage = i == 0 ? NULL : bp->stages[i - 1].name;

		if (s->present && s->image)
			lev_findings_add(out, LEV_SEV_WARNING, "sandbox-image-ignored", stage,
					 "set [sandbox] image in your config.toml to choose the "
					 "container image",
					 "names a container image; it is ignored: only your config "
					 "chooses what the engine runs (or fetches)");
		if (s->present && s->mounts)
			lev_findings_add(out, LEV_SEV_WARNING, "sandbox-mounts-ignored", stage,
					 "list host paths under [sandbox] mounts in your config.toml",
					 "asks for host mounts; they are ignored: only your config "
					 "mounts host paths into a sandbox");
		if (!s->present || s->kind != LEV_SANDBOX_NONE)
			continue;
		if (user_active)
			lev_findings_add(out, LEV_SEV_NOTE, "sandbox-none-requested", stage,
					 "nothing to do: a blueprint cannot turn your sandbox off",
					 "asks to run tools directly on the host (sandbox kind = none); "
					 "your config's %s sandbox applies anyway",
					 lev_sandbox_kind_name(cfg->sandbox.kind));
		else
			lev_findings_add(out, LEV_SEV_WARNING, "sandbox-none-requested", stage,
					 "set [sandbox] kind = \"namespace\" (or \"container\") in "
					 "your config.toml to sandbox every agent",
					 "asks to run tools directly on the host (sandbox kind = none), "
					 "and your config sets no sandbox: shell commands run on the host, "
					 "behind only the Landlock host fence");
	}
}

static bool loosenable(const char *tool, const struct lev_config *cfg)
{
	if (cfg && cfg->allow_blueprint_permissions)
		return true;
	return lev_tooltable_flags(tool) & LEV_TOOLF_BLUEPRINT_ALLOW;
}

static void lint_preapproved(const struct lev_blueprint *bp, const struct lev_config *cfg,
			     struct lev_findings *out)
{
	size_t i, j;

	for (i = 0; i <= bp->n_stages; i++) {
		const struct lev_tool_perms *p = i == 0 ? &bp->tool_permissions
							: &bp->stages[i - 1].tool_permissions;
		const char *stage = i == 0 ? NULL : bp->stages[i - 1].name;
		struct lev_buf all = LEV_BUF_INIT_MAX(MSG_MAX);
		struct lev_buf honoured = LEV_BUF_INIT_MAX(MSG_MAX);

		for (j = 0; j < p->n; j++) {
			_cleanup_free_ char *t = NULL;

			if (p->v[j].verdict != LEV_ALLOW)
				continue;
			t = lev_printable(p->v[j].tool, strlen(p->v[j].tool), 128);
			(void)lev_buf_addf(&all, "%s%s", all.len ? ", " : "", t);
			if (loosenable(p->v[j].tool, cfg))
				(void)lev_buf_addf(&honoured, "%s%s", honoured.len ? ", " : "", t);
		}
		if (honoured.len)
			lev_findings_add(out, LEV_SEV_WARNING, "preapproved-tools", stage,
					 "to be asked instead, set them to \"ask\" in your config's "
					 "[tool_permissions] (your setting always wins)",
					 "pre-approves tools that will run without a prompt: %s",
					 honoured.buf);
		else if (all.len)
			lev_findings_add(out, LEV_SEV_NOTE, "preapproved-tools", stage,
					 "nothing to do: your config and the built-in defaults still "
					 "decide (set [security] allow_blueprint_permissions = true to "
					 "honour blueprint grants)",
					 "sets these tools to allow: %s; a blueprint cannot loosen "
					 "permissions, so your config and the built-in defaults decide",
					 all.buf);
		lev_buf_release(&all);
		lev_buf_release(&honoured);
	}
}

static void lint_orphans(const struct lev_blueprint *bp, struct lev_findings *out)
{
	size_t i, j;

	for (i = 0; i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];

		for (j = 0; j < st->tool_permissions.n; j++) {
			const char *tool = st->tool_permissions.v[j].tool;
			_cleanup_free_ char *t = NULL;

			if (lev_strv_contains(st->available_tools, lev_tool_canonical(tool)))
				continue;
			t = lev_printable(tool, strlen(tool), 128);
			lev_findings_add(out, LEV_SEV_WARNING, "orphan-stage-permission", st->name,
					 "add the tool to available_tools, or remove the permission",
					 "sets a permission for '%s', which the stage does not offer",
					 t);
		}
	}
}

/* MCP connectors: a name you did not configure, a server you let run on the host. */
/* A fan-out stage's worker_agent must be installed when the run starts. */
static void lint_workers(const struct lev_blueprint *bp, struct lev_findings *out)
{
	for (size_t i = 0; i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];
		const char *name = st->fanout.worker_agent;
		_cleanup_free_ char *dir = NULL;
		struct stat sb;

		if (st->mode != LEV_MODE_FAN_OUT || !name)
			continue;
		if (lev_datadir_agent_dir(name, &dir, NULL) == 0 && stat(dir, &sb) == 0)
			continue;
		lev_findings_add(out, LEV_SEV_WARNING, "worker-agent-not-installed", st->name,
				 "install it with 'lev add' before running this agent",
				 "stage '%s' hands its work items to the agent '%s', which is not "
				 "installed: a run refuses to start", st->name, name);
	}
}

static void lint_mcp(const struct lev_blueprint *bp, const struct lev_config *cfg,
		     struct lev_findings *out)
{
	for (size_t i = 0; cfg && i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];

		for (char **c = st->available_connectors; c && *c; c++) {
			const struct lev_mcp_server_conf *m = lev_config_mcp_server(cfg, *c);
			_cleanup_free_ char *t = lev_printable(*c, strlen(*c), 64);

			if (!m)
				lev_findings_add(out, LEV_SEV_WARNING, "mcp-server-not-configured",
						 st->name, "add it to [[mcp_servers]] in your config.toml "
						 "if you grant it", "names MCP server '%s', which your "
						 "config does not have; its tools are not offered", t);
			else if (m->sandbox_none)
				lev_findings_add(out, LEV_SEV_NOTE, "mcp-server-on-host", st->name,
						 NULL, "MCP server '%s' runs on the host when the "
						 "stage's sandbox kind is none (sandbox = \"none\" in "
						 "your config)", t);
		}
	}
}

/* Safe-list entries that name a program running its operands (env, timeout ...). */
static void lint_runner_entries(char *const *shell, const char *source, struct lev_findings *out)
{
	for (; shell && *shell; shell++)
		if (lev_shellkeys_runs_operands(*shell))
			lev_findings_add(out, LEV_SEV_WARNING, "safe-command-runs-operands", NULL,
					 "list the program it runs instead (a line is keyed "
					 "through to it)",
					 "%s: shell entry '%s' names a program that runs its "
					 "operands; it is refused, so it pre-approves nothing",
					 source, *shell);
}

static void lint_safe_commands(const struct lev_blueprint *bp, const struct lev_config *cfg,
			       struct lev_findings *out)
{
	const struct lev_agent_safe_commands *asc =
		cfg ? lev_config_agent_safe_commands(cfg, lev_blueprint_grant_name(bp)) : NULL;

	struct lev_buf b = LEV_BUF_INIT_MAX(MSG_MAX);
	bool honoured = cfg && lev_config_honours_blueprint_safe_commands(cfg, lev_blueprint_grant_name(bp));
	_cleanup_free_ char *fix = NULL;

	lint_runner_entries(cfg ? cfg->safe_shell : NULL, "[safe_commands]", out);
	lint_runner_entries(asc ? asc->shell : NULL, "[agent_safe_commands]", out);
	lint_runner_entries(bp->safe_shell, "blueprint [safe_commands]", out);
	if (!bp->safe_tools && !bp->safe_shell)
		return;
	add_list(&b, bp->safe_tools, ", ");
	if (bp->safe_tools && bp->safe_shell)
		(void)lev_buf_adds(&b, ", ");
	add_list(&b, bp->safe_shell, ", ");
	if (honoured)
		fix = xstrdup("your config honours these: matching calls run without a prompt");
	else
		fix = xasprintf("inert until you opt in: [agent_safe_commands.%s] allow_blueprint = "
				"true in your config.toml",
				bp->name);
	lev_findings_add(out, honoured ? LEV_SEV_WARNING : LEV_SEV_NOTE, "safe-commands-declared",
			 NULL, fix, "declares [safe_commands]: %s", b.buf);
	lev_buf_release(&b);
}

/*
 * Whether lev can build provider NAME: one the config defines, or one it
 * knows without a table (as lev_provider_spec_from_config() does).
 */
static bool provider_usable(const struct lev_config *cfg, const char *name)
{
	return (cfg && lev_config_provider(cfg, name)) || lev_builtin_provider(name);
}

/* Leviath model lists: an entry lev cannot use is skipped; none usable is an error. */
static void lint_model_lists(const struct lev_blueprint *bp, const struct lev_config *cfg,
			     struct lev_findings *out)
{
	for (size_t i = 0; i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];
		const struct lev_model_ref *m = &st->model;
		size_t usable = 0;

		for (size_t j = 0; j < m->n_choices; j++) {
			const struct lev_model_choice *c = &m->choices[j];
			_cleanup_free_ char *msg = NULL;

			if (provider_usable(cfg, c->provider)) {
				usable++;
				continue;
			}
			msg = xasprintf("model entry '%s/%s' is skipped: lev has no provider '%s'",
					c->provider, c->model, c->provider);
			lev_findings_add_at(out, LEV_SEV_WARNING, "model-entry-skipped", st->name,
					    bp->path, c->line, c->col, NULL, msg);
		}
		if (m->n_choices && !usable)
			lev_findings_add(out, LEV_SEV_ERROR, "no-usable-model", st->name,
					 "add a [providers.NAME] table for one of the entries to "
					 "your config.toml, or run with --model PROVIDER/MODEL",
					 "no entry of the stage's model list names a provider lev has");
	}
}

/* The one-line reason lev cannot run provider NAME. */
static char *provider_why(const struct lev_config *cfg, const char *name)
{
	_cleanup_free_ char *t = lev_printable(name, strlen(name), 64);

	if (cfg && lev_strv_contains(cfg->script_providers, name))
		return xasprintf("its provider '%s' is a Rhai script provider ([model_providers.%s] "
				 "in config.toml), which lev does not run", t, t);
	return xasprintf("its provider '%s' is neither one of lev's nor a [providers.%s] table "
			 "of your config", t, t);
}

/*
 * A stage whose one provider lev cannot run (a model list is lint_model_lists'):
 * the run would fail at its first request, so it is an error now.
 */
static void lint_providers(const struct lev_blueprint *bp, const struct lev_config *cfg,
			   struct lev_findings *out)
{
	for (size_t i = 0; i < bp->n_stages; i++) {
		const struct lev_model_ref *m = &bp->stages[i].model;
		const char *p = m->provider;
		_cleanup_free_ char *why = NULL;

		if (m->n_choices)
			continue;
		if (!p && cfg && !m->no_user_default)
			p = cfg->default_provider;
		if (!p || provider_usable(cfg, p))
			continue;
		why = provider_why(cfg, p);
		lev_findings_add(out, LEV_SEV_ERROR, "provider-not-run", bp->stages[i].name,
				 "name a provider lev has (lev doctor lists them), add a "
				 "[providers.NAME] table with kind = \"openai\" for an "
				 "OpenAI-compatible API, or run with --model PROVIDER/MODEL",
				 "the stage cannot run: %s", why);
	}
}

/*
 * [model_capabilities."MODEL"] supports_tools = false: a stage offering
 * tools to that model would fail its first request; an error now.
 */
static void lint_model_tools(const struct lev_blueprint *bp, const struct lev_config *cfg,
			     struct lev_findings *out)
{
	for (size_t i = 0; cfg && i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];
		const char *model = st->model.model;
		const struct lev_model_caps *mc;
		_cleanup_free_ char *t = NULL;

		if (!model && st->model.provider && lev_config_provider(cfg, st->model.provider))
			model = lev_config_provider(cfg, st->model.provider)->model;
		mc = lev_config_model_caps(cfg, model);
		if (!mc || !mc->no_tools || !st->available_tools || !st->available_tools[0])
			continue;
		t = lev_printable(model, strlen(model), 64);
		lev_findings_add(out, LEV_SEV_ERROR, "model-without-tools", st->name,
				 "give the stage available_tools = [], or a model that has tools",
				 "the stage offers tools to model '%s', which config.toml's "
				 "[model_capabilities] says has none (supports_tools = false)", t);
	}
}

/* Does the blueprint ship a script tool NAME lev runs (tools/NAME.lua)? */
static bool lua_tool(const struct lev_blueprint *bp, const char *name)
{
	_cleanup_free_ char *f = xasprintf("%s/tools/%s.lua", bp->dir, name);
	struct stat st;

	return !strchr(name, '/') && stat(f, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * available_tools naming a tool nothing provides (Leviath's glob, grep, a
 * Rhai script): the run would never offer it.  A <server>__<tool> name of a
 * configured MCP server may exist; a bare name may be an MCP server's when
 * servers are configured (a warning then), else it is an error.
 */
static void lint_unknown_tools(const struct lev_blueprint *bp, const struct lev_config *cfg,
			       struct lev_findings *out)
{
	bool servers = cfg && cfg->n_mcp_servers > 0;

	for (size_t i = 0; i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];

		for (char **t = st->available_tools; t && *t; t++) {
			const struct lev_tool_desc *d = lev_tooltable_find(*t);
			const char *sep = strstr(*t, "__");
			_cleanup_free_ char *server = sep ? xstrndup(*t, (size_t)(sep - *t)) : NULL;
			_cleanup_free_ char *n = NULL;

			if ((d && !(d->flags & LEV_TOOLF_FOREIGN)) || lua_tool(bp, *t))
				continue;
			if (server && cfg && lev_config_mcp_server(cfg, server))
				continue;
			n = lev_printable(*t, strlen(*t), 64);
			lev_findings_add(out, servers && !sep ? LEV_SEV_WARNING : LEV_SEV_ERROR,
					 "unknown-tool", st->name,
					 "remove it from available_tools, or use a tool 'lev tools' "
					 "lists (shell runs grep and find), a tools/NAME.lua script "
					 "tool, or an MCP server's <server>__<tool>",
					 servers && !sep
						 ? "available_tools names '%s', which is no tool of lev's "
						   "or of this blueprint: offered only if one of your MCP "
						   "servers has a tool of that name"
						 : "available_tools names '%s', which no tool provides: "
						   "lev has no such tool and the blueprint ships no "
						   "script of that name",
					 n);
		}
	}
}

/* An output schema outside argcheck's subset: the run refuses every submission. */
static void lint_output_schemas(const struct lev_blueprint *bp, struct lev_findings *out)
{
	for (size_t i = 0; i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];
		struct lev_err err = LEV_ERR_INIT;
		json_t *j;

		if (!st->output.schema_json)
			continue;
		j = json_loads(st->output.schema_json, 0, NULL);
		if (!j || lev_argcheck_schema(j, &err) < 0)
			lev_findings_add(out, LEV_SEV_WARNING, "output-schema-unchecked", st->name,
					 "keep the schema to the keywords docs/blueprint.md lists",
					 "the output schema is outside what lev checks (%s): every "
					 "submission is refused",
					 err.msg[0] ? err.msg : "not JSON");
		json_decref(j);
	}
}

int lev_lint(const struct lev_blueprint *bp, const struct lev_config *cfg, const char *workdir,
	     const char *home, struct lev_findings *out, struct lev_err *err)
{
	char **w;

	for (w = cfg ? cfg->warnings : NULL; w && *w; w++) {
		bool leviath = strstr(*w, ": not run by lev: ") != NULL;

		lev_findings_add(out, LEV_SEV_WARNING, leviath ? "not-run-by-lev" : "config-unknown-key",
				 NULL,
				 leviath ? NULL : "remove it from your config.toml, or check its spelling",
				 "%s", *w);
	}
	for (w = bp->warnings; w && *w; w++)
		lev_findings_add(out, LEV_SEV_WARNING, "ignored-setting", NULL,
				 "remove it, or check its spelling", "%s", *w);
	for (size_t i = 0; i < bp->n_findings; i++) {
		const struct lev_blueprint_finding *bf = &bp->findings[i];

		lev_findings_add_at(out, LEV_SEV_WARNING, "not-run-by-lev", bf->stage,
				    bf->file ? bf->file : bp->path,
				    bf->line, bf->col, bf->key, bf->message);
	}
	lint_model_lists(bp, cfg, out);
	lint_providers(bp, cfg, out);
	lint_model_tools(bp, cfg, out);
	lint_unknown_tools(bp, cfg, out);
	lint_output_schemas(bp, out);
	lint_read_paths(bp, cfg, workdir, home, out);
	lint_shell_policy(bp, out);
	lint_seeds(bp, cfg, out);
	lint_sandbox(bp, cfg, out);
	lint_preapproved(bp, cfg, out);
	lint_orphans(bp, out);
	lint_safe_commands(bp, cfg, out);
	lint_mcp(bp, cfg, out);
	lint_workers(bp, out);
	if (cfg) {
		_cleanup_free_ char *held = lev_perm_withheld_grants(cfg, bp);

		if (held)
			lev_findings_add(out, LEV_SEV_WARNING, "agent-grants-withheld", NULL,
					 "run the installed agent by name; after reviewing a "
					 "changed agent, reinstall it with 'lev add --force'",
					 "%s", held);
	}
	if (lev_blueprint_wants_taint(bp))
		lev_findings_add(out, LEV_SEV_NOTE, "taint-opt-in", NULL, NULL,
				 "turns taint tracking on for its runs: outbound tools are gated "
				 "once the context holds something sensitive");
	(void)err;
	return 0;
}

static char **push_line(char **lines, struct lev_buf *b)
{
	lines = lev_strv_push(lines, b->buf);
	lev_buf_reset(b);
	return lines;
}

static void describe_sandbox(struct lev_buf *b, const struct lev_sandbox_spec *s)
{
	if (s->kind == LEV_SANDBOX_NONE) {
		(void)lev_buf_adds(b, "declines a sandbox: asks to run tools directly on the host "
				      "(sandbox kind = none)");
		return;
	}
	(void)lev_buf_addf(b, "requests a %s sandbox", lev_sandbox_kind_name(s->kind));
	(void)lev_buf_adds(b, s->network ? ", network on" : ", network off");
	if (s->image) {
		_cleanup_free_ char *p = lev_printable(s->image, strlen(s->image), 128);
		(void)lev_buf_addf(b, ", image '%s' (ignored: your config chooses it)", p);
	}
	if (s->mounts) {
		(void)lev_buf_adds(b, ", mounts ");
		add_list(b, s->mounts, ", ");
		(void)lev_buf_adds(b, " (ignored: your config chooses them)");
	}
}

/* The script tools the blueprint ships in tools/: the Lua ones lev runs, and the other files. */
static void inventory_scripts(const struct lev_blueprint *bp, struct lev_buf *b, char ***lines)
{
	_cleanup_strv_ char **scripts = lev_blueprint_script_tools(bp->dir);
	_cleanup_strv_ char **seen = NULL;
	char **others = NULL;

	if (bp->n_script_tools) {
		(void)lev_buf_addf(b, "ships %zu Lua script tool(s) in tools/ (each asks unless you "
				   "allow it): ", bp->n_script_tools);
		for (size_t i = 0; i < bp->n_script_tools; i++)
			(void)lev_buf_addf(b, "%s%s (requires %s)", i ? ", " : "",
					   bp->script_tools[i].name,
					   lev_script_needs_text(bp->script_tools[i].needs));
		*lines = push_line(*lines, b);
	}
	for (char **n = scripts; n && *n; n++) {
		bool lua = false;

		for (size_t i = 0; i < bp->n_script_tools && !lua; i++)
			lua = !strcmp(bp->script_tools[i].name, *n);
		if (lua && !lev_strv_contains(seen, *n))
			seen = lev_strv_push(seen, *n);	/* its .lua file */
		else
			others = lev_strv_push(others, *n);
	}
	if (others) {
		(void)lev_buf_addf(b, "ships %zu other file(s) in tools/ lev does not run: ",
				   lev_strv_len(others));
		add_list(b, others, ", ");
		*lines = push_line(*lines, b);
	}
	lev_strv_free(others);
}

/* The tools the blueprint sets to allow, agent-wide and per stage. */
static void inventory_preapprovals(const struct lev_blueprint *bp, const struct lev_config *cfg,
				   struct lev_buf *b, char ***lines)
{
	bool honour_all = cfg && cfg->allow_blueprint_permissions;
	size_t i, j;

	for (i = 0; i <= bp->n_stages; i++) {
		const struct lev_tool_perms *p = i == 0 ? &bp->tool_permissions
							: &bp->stages[i - 1].tool_permissions;
		size_t before = b->len;

		for (j = 0; j < p->n; j++) {
			_cleanup_free_ char *t = NULL;

			if (p->v[j].verdict != LEV_ALLOW)
				continue;
			t = lev_printable(p->v[j].tool, strlen(p->v[j].tool), 128);
			(void)lev_buf_addf(b, "%s%s", b->len ? ", " : "", t);
		}
		if (b->len > before && i > 0)
			(void)lev_buf_addf(b, " (stage '%s')", bp->stages[i - 1].name);
	}
	if (b->len) {
		_cleanup_free_ char *list = lev_buf_detach(b, NULL);
		(void)lev_buf_addf(b, "pre-approves these tools (no prompt at run time): %s; %s",
				   list,
				   honour_all ? "your config honours blueprint pre-approvals"
					      : "your config and the built-in defaults still decide, "
						"except for web_search and web_fetch");
		*lines = push_line(*lines, b);
	}
}

/* The sandbox each level asks for, or that it asks for none. */
static void inventory_sandbox(const struct lev_blueprint *bp, const struct lev_config *cfg,
			      struct lev_buf *b, char ***lines)
{
	bool any_sandbox = false;
	size_t i;

	for (i = 0; i <= bp->n_stages; i++) {
		const struct lev_sandbox_spec *s = i == 0 ? &bp->sandbox : &bp->stages[i - 1].sandbox;

		if (!s->present)
			continue;
		any_sandbox = true;
		describe_sandbox(b, s);
		if (i > 0)
			(void)lev_buf_addf(b, " for stage '%s'", bp->stages[i - 1].name);
		if (cfg && cfg->sandbox.present && cfg->sandbox.kind != LEV_SANDBOX_NONE)
			(void)lev_buf_addf(b, "; your %s sandbox is the floor and ceiling",
					   lev_sandbox_kind_name(cfg->sandbox.kind));
		*lines = push_line(*lines, b);
	}
	if (!any_sandbox) {
		(void)lev_buf_addf(b, "requests no sandbox; your config decides (%s)",
				   cfg && cfg->sandbox.present
					   ? lev_sandbox_kind_name(cfg->sandbox.kind)
					   : "none: tools run on the host");
		*lines = push_line(*lines, b);
	}
}

/* The [read_paths] it declares and how many the config grants. */
static void inventory_read_paths(const struct lev_blueprint *bp, const struct lev_config *cfg,
				 const char *workdir, const char *home, struct lev_buf *b,
				 char ***lines)
{
	_cleanup_free_ enum lev_grant_status *st = NULL;
	size_t granted = 0, n = lev_strv_len(bp->read_paths);
	struct lev_err rerr = LEV_ERR_INIT;

	if (!bp->read_paths)
		return;
	(void)lev_buf_adds(b, "asks to read outside its workdir (read-only): ");
	add_list(b, bp->read_paths, ", ");
	if (!cfg)
		(void)lev_buf_adds(b, "; refused unless your config grants them");
	else if (lev_lint_grant_report(bp, cfg, workdir, home, &st, &granted, &rerr) < 0)
		(void)lev_buf_addf(b, "; cannot tell what is granted: %s", rerr.msg);
	else if (granted == n)
		(void)lev_buf_addf(b, "; %zu declared, %zu granted", n, granted);
	else
		(void)lev_buf_addf(b,
				   "; %zu declared, %zu granted - grant the rest with "
				   "[agent_read_paths.%s] in your config",
				   n, granted, bp->name);
	*lines = push_line(*lines, b);
}

/* The commands and tools its regions run at start, before any prompt. */
static void inventory_seeds(const struct lev_blueprint *bp, const struct lev_config *cfg,
			    struct lev_buf *b, char ***lines)
{
	size_t i;

	for (i = 0; i < bp->n_regions; i++) {
		const struct lev_region *rg = &bp->regions[i];
		_cleanup_free_ char *v = NULL;

		if (rg->seed.kind != LEV_SEED_COMMAND && rg->seed.kind != LEV_SEED_TOOL)
			continue;
		v = lev_printable(rg->seed.value, strlen(rg->seed.value), 256);
		if (rg->seed.kind == LEV_SEED_COMMAND) {
			bool ok = lev_safecmd_default_covers(rg->seed.value);
			(void)lev_buf_addf(b,
					   "runs this command at start, before any prompt: `%s` "
					   "(region '%s'; %s)",
					   v, rg->name,
					   cfg && !cfg->allow_seed_commands
						   ? "skipped: your config turns command seeds off"
					   : ok ? "on the built-in safe list"
						: "NOT on the built-in safe list, so it will be refused");
		} else {
			(void)lev_buf_addf(b, "calls tool '%s' at start, before any prompt (region "
					       "'%s')",
					   v, rg->name);
		}
		*lines = push_line(*lines, b);
	}
}

/* The safe commands it declares and whether the config honours them. */
static void inventory_safe_commands(const struct lev_blueprint *bp, const struct lev_config *cfg,
				    struct lev_buf *b, char ***lines)
{
	bool honoured;

	if (!bp->safe_tools && !bp->safe_shell)
		return;
	honoured = cfg && lev_config_honours_blueprint_safe_commands(cfg, lev_blueprint_grant_name(bp));
	(void)lev_buf_adds(b, "declares safe commands: ");
	add_list(b, bp->safe_tools, ", ");
	if (bp->safe_tools && bp->safe_shell)
		(void)lev_buf_adds(b, ", ");
	add_list(b, bp->safe_shell, ", ");
	(void)lev_buf_adds(b, honoured ? "; your config honours them"
				       : "; inert unless your config opts in");
	*lines = push_line(*lines, b);
}

/* The host access its script tools ask for ([tool_script_permissions] keys). */
static void inventory_script_perms(const struct lev_blueprint *bp, struct lev_buf *b,
				   char ***lines)
{
	const struct lev_script_perms *sp = &bp->script_permissions;
	const struct {
		const char *name;
		enum lev_script_perm v;
	} f[] = {
		{ "http_get", sp->http_get },	{ "http_post", sp->http_post },
		{ "shell", sp->shell },		{ "read_file", sp->read_file },
		{ "write_file", sp->write_file }, { "env_var", sp->env_var },
	};
	size_t i;

	if (!bp->has_script_permissions)
		return;
	for (i = 0; i < ARRAY_SIZE(f); i++)
		if (f[i].v == LEV_SCRIPT_ALLOW)
			(void)lev_buf_addf(b, "%s%s", b->len ? ", " : "", f[i].name);
	if (b->len) {
		_cleanup_free_ char *list = lev_buf_detach(b, NULL);
		(void)lev_buf_addf(b, "requests script host access: %s (it can only tighten "
				      "your [tool_script_permissions])",
				   list);
		*lines = push_line(*lines, b);
	}
}

void lev_lint_inventory(const struct lev_blueprint *bp, const struct lev_config *cfg,
			const char *workdir, const char *home, char ***lines_out)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(MSG_MAX);
	char **lines = NULL;

	inventory_scripts(bp, &b, &lines);
	inventory_preapprovals(bp, cfg, &b, &lines);
	inventory_sandbox(bp, cfg, &b, &lines);
	inventory_read_paths(bp, cfg, workdir, home, &b, &lines);
	inventory_seeds(bp, cfg, &b, &lines);
	inventory_safe_commands(bp, cfg, &b, &lines);
	inventory_script_perms(bp, &b, &lines);
	if (lev_blueprint_wants_taint(bp)) {
		(void)lev_buf_adds(&b, "turns taint tracking on for its runs");
		lines = push_line(lines, &b);
	}
	lev_buf_release(&b);
	*lines_out = lines;
}
