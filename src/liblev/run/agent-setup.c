/*
 * agent-setup.c - building a run and freeing it (see agent-internal.h).
 */
#include "liblev/run/agent-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/modelpick.h"
#include "liblev/policy/perm-config.h"
#include "liblev/run/context.h"
#include "liblev/run/mcp-start.h"
#include "liblev/run/runrecord.h"
#include "liblev/sandbox/landlock-rules.h"

/* ---- building ------------------------------------------------------------ */

static void on_evict(void *data, const char *region, enum lev_item_kind kind, uint64_t tokens,
		     enum lev_level label)
{
	static const char *const kinds[] = { "text", "note", "user", "assistant", "tool_result" };
	struct lev_agent *a = data;
	json_t *ev = agent_event_new("context_evicted");

	json_object_set_new(ev, "region", agent_jtext(region));
	json_object_set_new(ev, "kind", json_string((unsigned)kind < ARRAY_SIZE(kinds)
							     ? kinds[kind] : "text"));
	json_object_set_new(ev, "tokens", json_integer((json_int_t)tokens));
	json_object_set_new(ev, "label", json_string(lev_level_name(label)));
	agent_emit(a, ev);
}

/*
 * The provider a stage starts on: --model's, else the first of its chain;
 * its model id through MODEL (NULL: the provider's configured one).
 */
static char *stage_provider_name(const struct lev_agent *a, const struct lev_stage *st,
				 char **model)
{
	struct lev_model_picks picks;
	char *prov = NULL;

	*model = NULL;
	if (a->o.model) {
		(void)lev_model_override(a->cfg, &st->model, a->o.model, a->o.credentials_path,
					 &prov, model);
		return prov ? prov : xstrdup("");
	}
	lev_model_pick(a->cfg, &st->model, a->o.credentials_path, &picks);
	prov = xstrdup(picks.v[0].provider);
	*model = picks.v[0].model ? xstrdup(picks.v[0].model) : NULL;
	lev_model_picks_release(&picks);
	return prov;
}

/*
 * The window the context is fitted to: the smallest window among the
 * models the stages use, so the context fits every model that reads it.  A
 * model's window is its [model_capabilities] max_context_tokens, else its
 * provider's context_window.  0 (the default window) when none is configured.
 */
static uint64_t run_window(const struct lev_agent *a)
{
	uint64_t w = 0;

	if (a->o.window_tokens)
		return a->o.window_tokens;
	for (size_t i = 0; i < a->bp->n_stages; i++) {
		_cleanup_free_ char *model = NULL;
		_cleanup_free_ char *name = stage_provider_name(a, &a->bp->stages[i], &model);
		const struct lev_provider_conf *pc = lev_config_provider(a->cfg, name);
		const struct lev_model_caps *mc = NULL;
		uint64_t m;

		if (pc && !model && pc->model)
			model = xstrdup(pc->model);
		mc = lev_config_model_caps(a->cfg, model);
		m = mc && mc->max_context_tokens ? mc->max_context_tokens
						 : pc ? pc->context_window : 0;
		if (m && (!w || m < w))
			w = m;
	}
	return w;
}

/* The provider for PROV_NAME / MODEL / SCRIPT, built once per run and shared. */
static int provider_for(struct lev_agent *a, const struct lev_stage *st, const char *prov_name,
			const char *model, const char *script, struct lev_provider **out,
			struct lev_err *err)
{
	_cleanup_free_ char *key = NULL;
	struct lev_provider_spec spec;
	struct lev_provider *p = NULL;
	int r;

	struct lev_agent *root = agent_root(a);

	/*
	 * key by the blueprint directory too: a script path is relative to it.
	 * Sub-agents share the root run's providers (a script goes on in order).
	 */
	key = xasprintf("%s\n%s\n%s\n%llu\n%s", prov_name, model ? model : "",
			script ? script : "", (unsigned long long)st->model.timeout_secs,
			script ? a->bp->dir : "");
	for (size_t i = 0; i < root->n_provs; i++) {
		if (!strcmp(root->provs[i].key, key)) {
			*out = root->provs[i].p;
			return 0;
		}
	}

	lev_provider_spec_init(&spec);
	r = lev_provider_spec_from_config(&spec, a->cfg, prov_name, model, script, a->bp->dir,
					  a->cfg->credential_store == LEV_CRED_FILE
						  ? a->o.credentials_path : NULL,
					  err);
	if (r < 0) {
		lev_provider_spec_release(&spec);
		return lev_err_wrap(err, "stage '%s'", st->name);
	}
	spec.cancel = a->o.cancel;
	spec.before_retry = agent_ratelimit_retry;
	spec.before_retry_data = a;
	if (st->model.timeout_secs)	/* the stage's request_timeout_secs wins */
		spec.timeout_ms = (long)st->model.timeout_secs * 1000;
	if (spec.api_key_env && !lev_strv_contains(a->key_vars, spec.api_key_env))
		a->key_vars = lev_strv_push(a->key_vars, spec.api_key_env);
	r = lev_provider_new(&spec, &p, err);
	lev_provider_spec_release(&spec);
	if (r < 0)
		return lev_err_wrap(err, "stage '%s'", st->name);
	root->provs = xreallocarray(root->provs, root->n_provs + 1, sizeof(*root->provs));
	root->provs[root->n_provs].key = TAKE_PTR(key);
	root->provs[root->n_provs].p = p;
	root->n_provs++;
	*out = p;
	return 0;
}

/*
 * No --model: the stage's chain in Leviath's order (conf/modelpick.h).
 * An entry that cannot be built (a provider lev does not know, no model)
 * is skipped with a warning; only a chain with no usable entry fails.
 */
static int stage_model_chain(struct lev_agent *a, struct stage_rt *s, struct lev_err *err)
{
	const struct lev_model_ref *m = &s->st->model;
	struct lev_buf why = LEV_BUF_INIT_MAX(4096);
	struct lev_model_picks picks;
	int r = 0;

	lev_model_pick(a->cfg, m, a->o.credentials_path, &picks);
	for (char **u = picks.unknown; u && *u; u++)
		agent_warn(a, "stage '%s': model entry '%s' skipped: lev has no provider of that name",
			   s->st->name, *u);
	s->alts = xcalloc(picks.n, sizeof(*s->alts));
	for (size_t i = 0; i < picks.n; i++) {
		const struct lev_model_pick *c = &picks.v[i];
		const char *script = lev_streq(c->provider, m->provider) ? m->script : NULL;
		struct lev_err e = LEV_ERR_INIT;
		struct lev_provider *p = NULL;

		if (provider_for(a, s->st, c->provider, c->model, script, &p, &e) < 0) {
			/* a lone entry fails as itself: its message says what to fix */
			if (picks.n == 1 && !m->n_choices) {
				r = lev_err_set(err, e.code, "%s", e.msg);
				goto out;
			}
			agent_warn(a, "stage '%s': model entry '%s/%s' skipped: %s", s->st->name,
				   c->provider, c->model ? c->model : "", e.msg);
			(void)lev_buf_addf(&why, "%s'%s/%s': %s", why.len ? "; " : "", c->provider,
					   c->model ? c->model : "", e.msg);
			continue;
		}
		s->alts[s->n_alts++] = p;
	}
	if (!s->n_alts)
		r = lev_err_set(err, -EINVAL, "stage '%s' has no usable model entry (%s)",
				s->st->name, why.buf);
	else
		s->prov = s->alts[0];
out:
	lev_buf_release(&why);
	lev_model_picks_release(&picks);
	return r;
}

static int get_provider(struct lev_agent *a, struct stage_rt *s, struct lev_err *err)
{
	const struct lev_stage *st = s->st;
	_cleanup_free_ char *prov_name = NULL, *model = NULL;
	const char *script = NULL;

	if (!a->o.model)
		return stage_model_chain(a, s, err);
	/* --model overrides every stage and skips the chain (a bare id keeps its provider) */
	if (lev_model_override(a->cfg, &st->model, a->o.model, a->o.credentials_path, &prov_name,
			       &model) < 0)
		return lev_err_set(err, LEV_EUSAGE, "--model '%s' names no provider", a->o.model);
	if (lev_streq(prov_name, st->model.provider))
		script = st->model.script;
	return provider_for(a, st, prov_name, model, script, &s->prov, err);
}

/*
 * [compaction] provider = "...": who writes a compacting region's summaries,
 * whatever the stage runs on (Leviath's meaning).  Not configured here, or
 * under --model (one model for everything), the stage's own provider does.
 */
static void compaction_provider(struct lev_agent *a)
{
	const struct lev_compaction *cp = &a->bp->compaction;
	struct lev_err e = LEV_ERR_INIT;

	if (!cp->provider || a->o.model || !a->n_stages)
		return;
	if (!lev_model_provider_configured(a->cfg, cp->provider, a->o.credentials_path)) {
		agent_warn(a, "[compaction] provider '%s' is not configured here; summaries are "
			   "written by each stage's own provider", cp->provider);
		return;
	}
	if (provider_for(a, a->stages[0].st, cp->provider, cp->model, NULL, &a->compactor,
			 &e) < 0) {
		agent_warn(a, "[compaction] provider '%s' cannot be used (%s); summaries are "
			   "written by each stage's own provider", cp->provider, e.msg);
		a->compactor = NULL;
	}
}

static void build_offered(struct lev_agent *a, struct stage_rt *s)
{
	char **skipped = NULL;

	/* the gate chain's own offer: `lev check` computes the same one */
	s->offered = lev_gatechain_offered(a->tools, s->st, a->o.hooks.question != NULL,
					   a->o.yolo, &s->offered_list, &skipped);
	s->mcp_servers = agent_mcp_offering(a, s->offered);
	for (char **k = skipped; k && *k; k++) {
		char *tab = strchr(*k, '\t');

		if (tab)
			*tab++ = '\0';
		agent_warn(a, "stage '%s' lists '%s', %s; it is not offered", s->st->name, *k,
			   tab ? tab : "");
	}
	lev_strv_free(skipped);
}

/* The environment commands and MCP servers start from: the one filter, lev_run_env(). */
static void build_env(struct lev_agent *a)
{
	a->envp = lev_run_env(a->cfg, a->o.envp);
}

/* The sandboxes' options from the run's config as it stands. */
static void sandbox_opts(const struct lev_agent *a, struct lev_sandbox_opts *so)
{
	so->workdir = a->workdir;
	so->home = a->o.home;
	so->data_root = a->o.data_root;
	so->engine_args = a->cfg->sandbox_engine_args;
	so->oci_helper = a->o.oci_helper;
	so->pool = a->pool;
	so->env.mode = a->cfg->shell_env;
	so->env.withhold = a->cfg->shell_env_withhold;
	so->env.allow = a->cfg->allow_env_vars;
	so->limits.timeout_ms = a->cfg->limits.shell_timeout_secs * 1000;
	so->limits.output_max = a->cfg->limits.max_tool_output_bytes;
}

static int build_sandboxes(struct lev_agent *a, struct lev_err *err)
{
	struct lev_sandbox_opts so = LEV_SANDBOX_OPTS_INIT;
	char **grants;
	/* a sub-agent's ceiling is its parent's sandbox as it stands: same or stricter */
	const struct lev_sandbox_spec *ceiling =
		a->parent ? &a->parent->stages[a->parent->cur].eff : &a->cfg->sandbox;
	int r;

	sandbox_opts(a, &so);
	grants = lev_config_read_path_grants_for_agent(a->cfg, lev_blueprint_grant_name(a->bp));
	so.read_paths = grants;

	for (size_t i = 0; i < a->n_stages; i++) {
		struct stage_rt *s = &a->stages[i];

		lev_sandbox_resolve(ceiling, &a->bp->sandbox, &s->st->sandbox, &s->eff);
		/* containers are shared through the pool; other kinds are cheap */
		r = lev_sandbox_new(&s->eff, &so, &s->sb, err);
		if (r < 0) {
			lev_strv_free(grants);
			return lev_err_wrap(err, "sandbox for stage '%s'", s->st->name);
		}
		if (lev_sandbox_missing(s->sb))
			agent_warn(a, "stage '%s': sandbox runs without %s",
				   s->st->name, lev_sandbox_degraded(s->sb)
							? lev_sandbox_degraded(s->sb) : "some layers");
	}
	lev_strv_free(grants);
	return 0;
}

/*
 * With sandbox kind none every shell line runs inside the host fence
 * (Landlock): a stage that offers the shell on a kernel without Landlock
 * is refused before anything runs.
 */
static int check_host_fence(const struct lev_agent *a, struct lev_err *err)
{
	const char *shell = lev_tooltable_name(LEV_OP_SHELL);

	for (size_t i = 0; i < a->n_stages; i++) {
		const struct stage_rt *s = &a->stages[i];

		if (!a->landlock && lev_sandbox_kind(s->sb) == LEV_SANDBOX_NONE &&
		    lev_strv_contains(s->offered, shell))
			return lev_err_set(err, LEV_EUNSUPP,
					   "stage '%s': sandbox kind none runs every shell line "
					   "inside a Landlock fence, and this kernel has no "
					   "Landlock (missing layer: landlock)", s->st->name);
	}
	return 0;
}

/* The file tools' context: the workdir, [read_paths] and this agent's grants. */
static int setup_fs(struct lev_agent *a, struct lev_err *err)
{
	struct lev_fs_opts fo = { 0 };
	char **grants;
	int r;

	if (a->parent) {
		/* a sub-agent reads what its parent may read, through the same fds' rules */
		a->fs = a->parent->fs;
		a->fs_borrowed = true;
		return 0;
	}
	grants = lev_config_read_path_grants_for_agent(a->cfg, lev_blueprint_grant_name(a->bp));
	fo.workdir = a->workdir;
	fo.agent = a->bp->name;
	fo.home = a->o.home;
	fo.declared = a->bp->read_paths;
	fo.grants = grants;
	fo.allow_blueprint = a->cfg->allow_blueprint_read_paths;
	fo.config_path = a->o.config_path;
	fo.data_root = a->o.data_root;
	r = lev_fs_ctx_new(&fo, &a->fs, err);
	lev_strv_free(grants);
	return r;
}

static int setup_gate(struct lev_agent *a, struct lev_err *err)
{
	struct lev_gate_options go = { 0 };
	int r;

	a->taint_enabled = lev_taint_enabled(a->cfg->taint_tracking, lev_blueprint_wants_taint(a->bp));
	/* a parent that tracks taint has children that do */
	if (a->parent)
		a->taint_enabled = a->taint_enabled || a->parent->taint_enabled;
	go.policy_path = a->o.policy_path;
	go.leviath_policy = true;
	go.leviath_policy_path = a->o.leviath_policy_path;
	go.rules_dir = a->o.rules_dir;
	go.fixed = a->o.policy_fixed;
	go.enabled = a->taint_enabled;
	/* --yolo lifts permission asks only, unless the user opts in for flows too */
	go.yolo = a->o.yolo && (a->o.yolo_flow || a->cfg->yolo_allows_flow);
	/* a read's label comes from the fd it read (agent_result_label()), not from the run */
	go.read_grant_active = false;
	r = lev_gate_new(&go, &a->gate, err);
	if (r < 0)
		return lev_err_wrap(err, "taint gate");
	/*
	 * a sub-agent's policy is never looser than its parent's as it stands
	 * (a parent the daemon tightened keeps that tightening in its children)
	 */
	if (a->parent)
		lev_gate_tighten(a->gate, lev_gate_policy(a->parent->gate));
	return 0;
}

static int setup_context(struct lev_agent *a, struct lev_err *err)
{
	struct lev_context_opts co = { 0 };

	co.window_tokens = run_window(a);
	co.on_evict = on_evict;
	co.evict_data = a;
	return lev_context_new(a->bp->regions, a->bp->n_regions, &co, &a->ctx, err);
}

/* The stages, the entry stage current, and each stage's permission set-up. */
/* One permission input per stage, from the config as it is now. */
static int build_perms(struct lev_agent *a, struct lev_perm_setup **out, struct lev_err *err)
{
	struct lev_perm_setup *p = xcalloc(a->n_stages, sizeof(*p));
	int r;

	for (size_t i = 0; i < a->n_stages; i++) {
		r = lev_perm_setup_init(&p[i], a->cfg, a->bp, a->stages[i].st->name, a->o.yolo,
					a->o.allow, err);
		if (r < 0) {
			for (size_t j = 0; j < i; j++)
				lev_perm_setup_release(&p[j]);
			free(p);
			return r;
		}
	}
	*out = p;
	return 0;
}

/*
 * What the run built from its config besides the permissions, from the
 * config as it stands (only ever tighter): the read grants, the taint
 * switch (on, never off), the commands' environment filter and limits.
 */
static int config_rebuild(struct lev_agent *a, struct lev_err *err)
{
	struct lev_sandbox_opts so = LEV_SANDBOX_OPTS_INIT;
	char **grants;
	int r = 0;

	if (!a->fs_borrowed) {
		grants = lev_config_read_path_grants_for_agent(a->cfg,
							       lev_blueprint_grant_name(a->bp));
		r = lev_fs_ctx_regrant(a->fs, grants, a->cfg->allow_blueprint_read_paths, err);
		lev_strv_free(grants);
	}
	if (!a->taint_enabled && lev_taint_enabled(a->cfg->taint_tracking,
						   lev_blueprint_wants_taint(a->bp))) {
		a->taint_enabled = true;
		lev_gate_enable(a->gate);
	}
	sandbox_opts(a, &so);
	for (size_t i = 0; i < a->n_stages; i++)
		if (a->stages[i].sb)
			lev_sandbox_update(a->stages[i].sb, &so);
	return r;
}

int lev_agent_config_changed(struct lev_agent *a, struct lev_err *err)
{
	struct lev_perm_setup *p = NULL;
	int r = build_perms(a, &p, err), r2;

	if (r == 0) {
		for (size_t i = 0; i < a->n_stages; i++)
			lev_perm_setup_release(&a->perms[i]);
		free(a->perms);
		a->perms = p;
		a->safe_only.safe = a->perms[0].in.safe;
		a->safe_only.n_safe = a->perms[0].in.n_safe;
	}
	/* network off holds for the network tools from the next call on */
	for (size_t i = 0; i < a->n_stages; i++)
		if (a->cfg->sandbox.has_network && !a->cfg->sandbox.network)
			a->stages[i].eff.network = false;
	/* each part only ever tightens: one that fails leaves the others applied */
	r2 = config_rebuild(a, r < 0 ? NULL : err);
	return r < 0 ? r : r2;
}

void lev_agent_policy_changed(struct lev_agent *a, const struct lev_policy *next)
{
	lev_gate_tighten(a->gate, next);
}

static int setup_stages(struct lev_agent *a, const char *entry, struct lev_err *err)
{
	int r;

	if (!entry)
		entry = a->bp->entry_stage;
	a->n_stages = a->bp->n_stages;
	a->stages = xcalloc(a->n_stages ? a->n_stages : 1, sizeof(*a->stages));
	for (size_t i = 0; i < a->n_stages; i++) {
		a->stages[i].st = &a->bp->stages[i];
		if (entry && !strcmp(a->bp->stages[i].name, entry))
			a->cur = i;
	}
	if (!a->n_stages)
		return lev_err_set(err, LEV_EPARSE, "blueprint '%s' has no stages", a->bp->name);
	r = build_perms(a, &a->perms, err);
	if (r < 0)
		return r;
	for (char **w = a->perms[0].warnings; w && *w; w++)
		agent_warn(a, "%s", *w);
	a->safe_only.safe = a->perms[0].in.safe;
	a->safe_only.n_safe = a->perms[0].in.n_safe;
	return 0;
}

/*
 * The variables secret by their role (lev_config_secret_vars(): providers'
 * key variables, MCP servers' ${VAR}s) are withheld from commands, whatever
 * shell_env says, and their values join the process's secret set.
 */
static void withhold_key_vars(struct lev_agent *a)
{
	_cleanup_strv_ char **roles = lev_config_secret_vars(a->cfg);

	for (char **k = roles; k && *k; k++)
		if (!lev_strv_contains(a->key_vars, *k))
			a->key_vars = lev_strv_push(a->key_vars, *k);
}

/* A run that could not be set up still leaves a record that says why. */
static void record_setup_failure(struct lev_agent *a, const struct lev_err *err)
{
	const char *why = err ? err->msg : "setup failed";
	json_t *ev;

	if (!a->rec)
		return;
	ev = agent_event_new("run_started");
	json_object_set_new(ev, "run", agent_jtext(lev_runrecord_id(a->rec)));
	json_object_set_new(ev, "agent", agent_jtext(a->bp->name));
	json_object_set_new(ev, "workdir", agent_jtext(a->workdir));
	json_object_set_new(ev, "record", agent_jtext(lev_runrecord_dir(a->rec)));
	json_object_set_new(ev, "pid", json_integer(getpid()));
	agent_emit(a, ev);
	a->started = true;
	for (char **w = a->pending_warnings; w && *w; w++)
		agent_warn(a, "%s", *w);
	ev = agent_event_new("run_finished");
	json_object_set_new(ev, "status", json_string("error"));
	json_object_set_new(ev, "output", json_null());
	json_object_set_new(ev, "error", agent_jtext(why));
	agent_emit(a, ev);
	(void)lev_runrecord_finish(a->rec, "error", NULL, why, NULL, NULL);
}

/* Everything a run needs, in the order each part depends on the ones before. */
static int setup(struct lev_agent *a, const char *entry, struct lev_err *err)
{
	int r;

	if (a->o.runs_dir) {
		r = a->o.resume ? lev_runrecord_reopen(a->o.runs_dir, a->o.run_id, &a->rec, err)
				: lev_runrecord_create_as(a->o.runs_dir, a->o.run_id, &a->rec, err);
		if (r < 0)
			return r;
	}
	r = lev_tools_new(&a->tools, err);
	if (r < 0)
		return r;
	r = setup_fs(a, err);
	if (r < 0)
		return r;
	r = setup_gate(a, err);
	if (r < 0)
		return r;
	r = setup_context(a, err);
	if (r < 0)
		return r;
	lev_grants_init(&a->grants);
	r = lev_sandbox_pool_new(a->rec ? lev_runrecord_id(a->rec) : NULL, &a->pool, err);
	if (r < 0)
		return r;
	r = setup_stages(a, entry, err);
	if (r < 0)
		return r;
	r = agent_fanout_check(a, err);
	if (r < 0)
		return r;
	if (!a->parent) {
		/* --task @FILE: labelled as read_file of FILE would be */
		enum lev_integrity ti = LEV_TRUSTED;

		if (agent_label_input(a, "task", &a->task_label, &ti) && ti == LEV_UNTRUSTED)
			a->task_untrusted = true;
	}
	agent_integrity_setup(a);
	a->landlock = lev_landlock_abi() >= 1;
	for (size_t i = 0; i < a->n_stages; i++) {
		r = get_provider(a, &a->stages[i], err);
		if (r < 0)
			return r;
	}
	compaction_provider(a);
	withhold_key_vars(a);
	build_env(a);
	/* the keys leave lev's own environment block too (/proc/<pid>/environ) */
	lev_credentials_scrub_env(a->key_vars);
	r = build_sandboxes(a, err);
	if (r < 0)
		return r;
	/* the blueprint's script tools, then MCP servers (in the stages' sandboxes) */
	r = agent_script_start(a, err);
	if (r < 0)
		return r;
	r = agent_mcp_start(a, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < a->n_stages; i++)
		build_offered(a, &a->stages[i]);
	return check_host_fence(a, err);
}

struct lev_agent *agent_root(struct lev_agent *a)
{
	while (a->parent)
		a = a->parent;
	return a;
}

/* A child's permission ceilings: its parent's stage input, then the parent's own ceilings. */
static void child_ceilings(struct lev_agent *a)
{
	struct lev_agent *p = a->parent;
	size_t n = 0;

	for (const struct lev_perm_input **c = p->ceilings; c && *c; c++)
		n++;
	a->ceilings = xcalloc(n + 2, sizeof(*a->ceilings));
	a->ceilings[0] = &p->perms[p->cur].in;
	for (size_t i = 0; i < n; i++)
		a->ceilings[i + 1] = p->ceilings[i];
}

static int agent_new(const struct lev_agent_opts *opts, const struct agent_child_spec *cs,
		     struct lev_agent **out, struct lev_err *err)
{
	struct lev_agent *a;
	char real[PATH_MAX];
	int r;

	if (!opts || !opts->bp || !opts->cfg || !opts->workdir)
		return lev_err_set(err, -EINVAL, "a run needs a blueprint, a config and a workdir");
	if (!realpath(opts->workdir, real))
		return lev_err_errno(err, -errno, "workdir '%s' is not usable", opts->workdir);

	a = xcalloc(1, sizeof(*a));
	a->o = *opts;
	a->bp = opts->bp;
	a->cfg = opts->cfg;
	a->workdir = xstrdup(real);
	a->status = LEV_RUN_RUNNING;
	a->depth_limit = lev_blueprint_child_depth(a->bp);
	if (cs) {
		a->parent = cs->parent;
		a->depth = cs->parent->depth + 1;
		a->depth_limit = cs->depth_limit;
		a->task_label = cs->task_label;
		a->task_untrusted = cs->task_untrusted;
		child_ceilings(a);
	}

	r = setup(a, cs ? cs->entry : NULL, err);
	if (r < 0) {
		record_setup_failure(a, err);
		lev_agent_free(a);
		return r;
	}
	*out = a;
	return 0;
}

int lev_agent_new(const struct lev_agent_opts *opts, struct lev_agent **out, struct lev_err *err)
{
	return agent_new(opts, NULL, out, err);
}

int agent_new_child(const struct lev_agent_opts *opts, const struct agent_child_spec *cs,
		    struct lev_agent **out, struct lev_err *err)
{
	return agent_new(opts, cs, out, err);
}

struct lev_agent *lev_agent_free(struct lev_agent *a)
{
	if (!a)
		return NULL;
	/* its children first: they borrow from it */
	agent_children_free(a);
	free(a->call_prefix);
	/* the servers run in the stages' sandboxes (the registry keeps no pointer it reads) */
	agent_mcp_free(a);
	for (size_t i = 0; i < a->n_stages; i++) {
		lev_sandbox_free(a->stages[i].sb);
		lev_sandbox_spec_release(&a->stages[i].eff);
		lev_strv_free(a->stages[i].offered);
		lev_strv_free(a->stages[i].mcp_servers);
		free(a->stages[i].offered_list);
		free(a->stages[i].alts);
	}
	free(a->stages);
	if (a->pool) {
		(void)lev_sandbox_pool_teardown(a->pool, NULL);
		lev_sandbox_pool_free(a->pool);
	}
	for (size_t i = 0; i < a->n_provs; i++) {
		free(a->provs[i].key);
		lev_provider_free(a->provs[i].p);
	}
	free(a->provs);
	for (size_t i = 0; a->perms && i < a->n_stages; i++)
		lev_perm_setup_release(&a->perms[i]);
	free(a->perms);
	agent_integrity_free(a);
	lev_context_free(a->ctx);
	lev_gate_free(a->gate);
	if (!a->fs_borrowed)
		lev_fs_ctx_free(a->fs);
	free(a->ceilings);
	lev_tools_free(a->tools);
	lev_runrecord_free(a->rec);
	lev_strv_free(a->envp);
	lev_strv_free(a->key_vars);
	lev_grants_release(&a->grants);
	free(a->stage_output);
	agent_flow_release(a);
	free(a->last_text);
	free(a->internal_error);
	free(a->route_note);
	agent_todos_free(a);
	agent_watch_free(a);
	lev_strv_free(a->pending_warnings);
	free(a->output);
	free(a->error);
	free(a->workdir);
	free(a);
	return NULL;
}

enum lev_run_status lev_agent_status(const struct lev_agent *a)
{
	return a->status;
}

const char *lev_agent_output(const struct lev_agent *a)
{
	return a->output;
}

const char *lev_agent_error(const struct lev_agent *a)
{
	return a->error;
}

const char *lev_agent_run_id(const struct lev_agent *a)
{
	return a->rec ? lev_runrecord_id(a->rec) : NULL;
}

const char *lev_agent_record_dir(const struct lev_agent *a)
{
	return a->rec ? lev_runrecord_dir(a->rec) : NULL;
}
