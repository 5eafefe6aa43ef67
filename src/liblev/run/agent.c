/*
 * agent.c - the run loop (see agent.h).
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "liblev/run/agent.h"
#include "liblev/policy/argcheck.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/run/context.h"
#include "liblev/conf/credentials.h"
#include "liblev/policy/envfilter.h"
#include "liblev/run/gatechain.h"
#include "liblev/sandbox/landlock-rules.h"
#include "liblev/policy/perm-config.h"
#include "liblev/policy/perm.h"
#include "liblev/run/runrecord.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/base/strv.h"
#include "liblev/policy/taintgate.h"
#include "liblev/tools/tools-fs.h"
#include "liblev/tools/tools-net.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

/* Bounds. */
#define DEFAULT_MAX_ITERATIONS 50
#define MAX_STAGE_VISITS 100		/* a stage re-entered more often ends the run */
#define SEED_GLOB_MAX 64
#define OUTPUT_EVENT_MAX ((size_t)64 << 10)	/* text shown in one event */

struct prov_entry {
	char *key;			/* "provider\nmodel\nscript" */
	struct lev_provider *p;
};

struct stage_rt {
	const struct lev_stage *st;
	struct lev_sandbox_spec eff;
	struct lev_sandbox *sb;
	struct lev_provider *prov;	/* borrowed from a->provs */
	char **offered;			/* canonical tool names offered */
	char *offered_list;		/* "a, b" for messages */
	unsigned visits;
};

struct lev_agent {
	struct lev_agent_opts o;
	const struct lev_blueprint *bp;
	const struct lev_config *cfg;
	char *workdir;			/* real */

	struct lev_runrecord *rec;
	struct lev_tools *tools;
	struct lev_fs_ctx *fs;
	struct lev_gate *gate;
	struct lev_context *ctx;
	struct lev_perm_setup *perms;	/* one per stage */
	struct lev_perm_input safe_only;	/* the safe lists alone (command seeds) */
	struct lev_sandbox_pool *pool;
	struct stage_rt *stages;
	size_t n_stages;
	struct prov_entry *provs;
	size_t n_provs;
	char **envp;			/* base environment for commands */
	char **key_vars;		/* provider key variables, never passed on */
	bool taint_enabled;
	bool seeding;			/* a tool seed is being dispatched: nobody is asked */
	bool landlock;			/* the kernel has Landlock (the kind-none read fence) */

	size_t cur;			/* current stage */
	unsigned iteration;
	enum lev_level seen;		/* taint when the current request was rendered */
	struct lev_grants grants;
	uint64_t calls;

	bool stage_done;
	char *stage_output;
	enum lev_level stage_output_label;
	const char *stage_end;	/* "answer", "submit_output", ... (static strings) */

	char *last_text;		/* the model's last answer text */
	bool started;			/* run_started was recorded */
	char **pending_warnings;	/* warnings found before it */
	char *internal_error;		/* record or context trouble seen on the way */

	enum lev_run_status status;
	char *output;
	char *error;
};

const char *lev_run_status_name(enum lev_run_status s)
{
	switch (s) {
	case LEV_RUN_RUNNING:
		return "running";
	case LEV_RUN_COMPLETE:
		return "complete";
	case LEV_RUN_ERROR:
		return "error";
	case LEV_RUN_CANCELLED:
		return "cancelled";
	}
	return "error";
}

const char *lev_ask_answer_name(enum lev_ask_answer a)
{
	static const char *const names[] = { "none", "deny", "once", "stage", "run" };

	return (unsigned)a < ARRAY_SIZE(names) ? names[a] : "none";
}

void lev_call_decision_release(struct lev_call_decision *d)
{
	free(d->rule);
	free(d->reason);
	memset(d, 0, sizeof(*d));
}

static bool cancelled(const struct lev_agent *a)
{
	return a->o.cancel && *a->o.cancel;
}

/* ---- events and audit ---------------------------------------------------- */

/* Record EV (stealing the reference) and show it to the front end. */
static void emit(struct lev_agent *a, json_t *ev)
{
	struct lev_err err = LEV_ERR_INIT;
	char *line = NULL;

	if (a->rec && lev_runrecord_event(a->rec, ev, &line, &err) < 0 && !a->internal_error)
		a->internal_error = xasprintf("cannot keep the run record: %s", err.msg);
	if (a->o.hooks.event) {
		if (!line)
			line = json_dumps(ev, JSON_COMPACT | JSON_ENSURE_ASCII);
		a->o.hooks.event(a->o.hooks.data, ev, line ? line : "{}");
	}
	free(line);
	json_decref(ev);
}

static json_t *event_new(const char *name)
{
	json_t *ev = json_object();

	json_object_set_new(ev, "event", json_string(name));
	return ev;
}

static json_t *jtext(const char *s)
{
	return lev_json_text(s, s ? strlen(s) : 0);
}

/* A JSON string of S cut to OUTPUT_EVENT_MAX bytes for an event. */
static json_t *jtext_capped(const char *s)
{
	size_t len, keep;

	if (!s)
		return json_null();
	len = strlen(s);
	if (len <= OUTPUT_EVENT_MAX)
		return lev_json_text(s, len);
	keep = OUTPUT_EVENT_MAX;
	while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
		keep--;
	return lev_json_text(s, keep);
}

static void warn_event(struct lev_agent *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void warn_event(struct lev_agent *a, const char *fmt, ...)
{
	json_t *ev = event_new("warning");
	va_list ap;
	char *msg = NULL;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!a->started) {
		/* the record starts with run_started: keep it for then */
		a->pending_warnings = lev_strv_push(a->pending_warnings, msg ? msg : "(warning)");
		free(msg);
		json_decref(ev);
		return;
	}
	json_object_set_new(ev, "message", jtext(msg ? msg : "(warning)"));
	free(msg);
	emit(a, ev);
}

struct audit_line {
	const char *call_id;
	const char *tool;
	const char *gate;
	const char *rule;
	bool allowed;
	bool asked;
	const char *answer;
	const char *target;
	bool has_clearance;
	enum lev_level clearance;
	const char *reason;
};

static void audit(struct lev_agent *a, const struct audit_line *l)
{
	struct lev_audit au = {
		.stage = a->n_stages ? a->stages[a->cur].st->name : NULL,
		.call_id = l->call_id,
		.tool = l->tool,
		.gate = l->gate,
		.rule = l->rule,
		.decision = l->allowed ? "allow" : "deny",
		.asked = l->asked,
		.answer = l->answer,
		.target = l->target,
		.has_taint = true,
		.taint = a->ctx ? lev_context_taint_level(a->ctx) : LEV_PUBLIC,
		.has_clearance = l->has_clearance,
		.clearance = l->clearance,
		.reason = l->reason,
	};
	struct lev_err err = LEV_ERR_INIT;

	if (a->rec && lev_runrecord_audit(a->rec, &au, &err) < 0 && !a->internal_error)
		a->internal_error = xasprintf("cannot keep the run record: %s", err.msg);
}

/* ---- building ------------------------------------------------------------ */

static void on_evict(void *data, const char *region, enum lev_item_kind kind, uint64_t tokens,
		     enum lev_level label)
{
	static const char *const kinds[] = { "text", "note", "user", "assistant", "tool_result" };
	struct lev_agent *a = data;
	json_t *ev = event_new("context_evicted");

	json_object_set_new(ev, "region", jtext(region));
	json_object_set_new(ev, "kind", json_string((unsigned)kind < ARRAY_SIZE(kinds)
							     ? kinds[kind] : "text"));
	json_object_set_new(ev, "tokens", json_integer((json_int_t)tokens));
	json_object_set_new(ev, "label", json_string(lev_level_name(label)));
	emit(a, ev);
}

/* The provider name a stage uses: --model's, the stage's, the config's first, "anthropic". */
static char *stage_provider_name(const struct lev_agent *a, const struct lev_stage *st)
{
	if (a->o.model) {
		const char *slash = strchr(a->o.model, '/');

		return slash ? xstrndup(a->o.model, (size_t)(slash - a->o.model))
			     : xstrdup(a->o.model);
	}
	return st->model.provider ? xstrdup(st->model.provider)
	       : a->cfg->n_providers ? xstrdup(a->cfg->providers[0].name)
				     : xstrdup("anthropic");
}

/*
 * The window the context is fitted to: the smallest context_window among
 * the providers the stages use, so the context fits every model that
 * reads it.  0 (the default window) when none is configured.
 */
static uint64_t run_window(const struct lev_agent *a)
{
	uint64_t w = 0;

	if (a->o.window_tokens)
		return a->o.window_tokens;
	for (size_t i = 0; i < a->bp->n_stages; i++) {
		_cleanup_free_ char *name = stage_provider_name(a, &a->bp->stages[i]);
		const struct lev_provider_conf *pc = lev_config_provider(a->cfg, name);

		if (pc && pc->context_window && (!w || pc->context_window < w))
			w = pc->context_window;
	}
	return w;
}

static int get_provider(struct lev_agent *a, const struct lev_stage *st, struct lev_provider **out,
			struct lev_err *err)
{
	_cleanup_free_ char *prov_name = NULL;
	_cleanup_free_ char *model = NULL;
	_cleanup_free_ char *key = NULL;
	const char *script = NULL;
	struct lev_provider_spec spec;
	struct lev_provider *p = NULL;
	int r;

	prov_name = stage_provider_name(a, st);
	if (a->o.model) {
		const char *slash = strchr(a->o.model, '/');

		model = slash && slash[1] ? xstrdup(slash + 1) : NULL;
		if (lev_streq(prov_name, st->model.provider))
			script = st->model.script;
	} else {
		model = st->model.model ? xstrdup(st->model.model) : NULL;
		script = st->model.script;
	}
	if (!*prov_name)
		return lev_err_set(err, LEV_EUSAGE, "--model '%s' names no provider", a->o.model);
	key = xasprintf("%s\n%s\n%s", prov_name, model ? model : "", script ? script : "");
	for (size_t i = 0; i < a->n_provs; i++) {
		if (!strcmp(a->provs[i].key, key)) {
			*out = a->provs[i].p;
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
	if (spec.api_key_env && !lev_strv_contains(a->key_vars, spec.api_key_env))
		a->key_vars = lev_strv_push(a->key_vars, spec.api_key_env);
	/* the record redacts the key should anything ever echo it */
	if (a->rec && spec.kind != LEV_PROVIDER_SCRIPT) {
		char *secret = NULL;
		enum lev_key_source src = LEV_KEY_NONE;

		if (lev_api_key_resolve(spec.name, spec.api_key_env, spec.credentials_path, &secret,
					&src, NULL) == 0 && secret)
			lev_runrecord_add_secret(a->rec, secret);
		lev_secret_free(secret);
	}
	r = lev_provider_new(&spec, &p, err);
	lev_provider_spec_release(&spec);
	if (r < 0)
		return lev_err_wrap(err, "stage '%s'", st->name);
	a->provs = xreallocarray(a->provs, a->n_provs + 1, sizeof(*a->provs));
	a->provs[a->n_provs].key = TAKE_PTR(key);
	a->provs[a->n_provs].p = p;
	a->n_provs++;
	*out = p;
	return 0;
}

static void build_offered(struct lev_agent *a, struct stage_rt *s)
{
	char **skipped = NULL;

	/* the gate chain's own offer: `lev check` computes the same one */
	s->offered = lev_gatechain_offered(a->tools, s->st, a->o.hooks.question != NULL,
					   &s->offered_list, &skipped);
	for (char **k = skipped; k && *k; k++) {
		char *tab = strchr(*k, '\t');

		if (tab)
			*tab++ = '\0';
		warn_event(a, "stage '%s' lists '%s', %s; it is not offered", s->st->name, *k,
			   tab ? tab : "");
	}
	lev_strv_free(skipped);
}

/* The environment commands start from: ENVP without the provider key variables. */
static void build_env(struct lev_agent *a)
{
	for (char *const *e = a->o.envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		bool drop = false;

		if (!eq)
			continue;
		for (char **k = a->key_vars; k && *k; k++)
			if (strlen(*k) == (size_t)(eq - *e) && !strncmp(*e, *k, (size_t)(eq - *e)))
				drop = true;
		if (!drop)
			a->envp = lev_strv_push(a->envp, *e);
	}
}

static int build_sandboxes(struct lev_agent *a, struct lev_err *err)
{
	struct lev_sandbox_opts so = LEV_SANDBOX_OPTS_INIT;
	int r;

	so.workdir = a->workdir;
	so.home = a->o.home;
	so.data_root = a->o.data_root;
	so.engine_args = a->cfg->sandbox_engine_args;
	so.oci_helper = a->o.oci_helper;
	so.pool = a->pool;
	so.env.mode = a->cfg->shell_env;
	so.env.withhold = a->cfg->shell_env_withhold;
	so.env.allow = a->cfg->allow_env_vars;
	so.limits.timeout_ms = a->cfg->limits.shell_timeout_secs * 1000;
	so.limits.output_max = a->cfg->limits.max_tool_output_bytes;

	for (size_t i = 0; i < a->n_stages; i++) {
		struct stage_rt *s = &a->stages[i];

		lev_sandbox_resolve(&a->cfg->sandbox, &a->bp->sandbox, &s->st->sandbox, &s->eff);
		/* containers are shared through the pool; other kinds are cheap */
		r = lev_sandbox_new(&s->eff, &so, &s->sb, err);
		if (r < 0)
			return lev_err_wrap(err, "sandbox for stage '%s'", s->st->name);
		if (lev_sandbox_missing(s->sb))
			warn_event(a, "stage '%s': sandbox runs without %s",
				   s->st->name, lev_sandbox_degraded(s->sb)
							? lev_sandbox_degraded(s->sb) : "some layers");
	}
	return 0;
}

int lev_agent_new(const struct lev_agent_opts *opts, struct lev_agent **out, struct lev_err *err)
{
	struct lev_agent *a;
	struct lev_fs_opts fo = { 0 };
	struct lev_gate_options go = { 0 };
	struct lev_context_opts co = { 0 };
	char **grants = NULL;
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

	if (opts->runs_dir) {
		r = lev_runrecord_create(opts->runs_dir, &a->rec, err);
		if (r < 0)
			goto fail;
	}

	r = lev_tools_new(&a->tools, err);
	if (r < 0)
		goto fail;

	grants = lev_config_read_path_grants_for_agent(a->cfg, lev_blueprint_grant_name(a->bp));
	fo.workdir = a->workdir;
	fo.agent = a->bp->name;
	fo.home = opts->home;
	fo.declared = a->bp->read_paths;
	fo.grants = grants;
	fo.allow_blueprint = a->cfg->allow_blueprint_read_paths;
	fo.config_path = opts->config_path;
	fo.data_root = opts->data_root;
	r = lev_fs_ctx_new(&fo, &a->fs, err);
	lev_strv_free(grants);
	if (r < 0)
		goto fail;

	a->taint_enabled = lev_taint_enabled(a->cfg->taint_tracking, lev_blueprint_wants_taint(a->bp));
	go.policy_path = opts->policy_path;
	go.rules_dir = opts->rules_dir;
	go.enabled = a->taint_enabled;
	go.yolo = opts->yolo;
	/* a read's label comes from the fd it read (result_label()), not from the run */
	go.read_grant_active = false;
	r = lev_gate_new(&go, &a->gate, err);
	if (r < 0) {
		lev_err_wrap(err, "taint gate");
		goto fail;
	}

	co.window_tokens = run_window(a);
	co.on_evict = on_evict;
	co.evict_data = a;
	r = lev_context_new(a->bp->regions, a->bp->n_regions, &co, &a->ctx, err);
	if (r < 0)
		goto fail;

	lev_grants_init(&a->grants);

	r = lev_sandbox_pool_new(a->rec ? lev_runrecord_id(a->rec) : NULL, &a->pool, err);
	if (r < 0)
		goto fail;

	a->n_stages = a->bp->n_stages;
	a->stages = xcalloc(a->n_stages ? a->n_stages : 1, sizeof(*a->stages));
	for (size_t i = 0; i < a->n_stages; i++) {
		a->stages[i].st = &a->bp->stages[i];
		if (a->bp->entry_stage && !strcmp(a->bp->stages[i].name, a->bp->entry_stage))
			a->cur = i;
	}
	if (!a->n_stages) {
		r = lev_err_set(err, LEV_EPARSE, "blueprint '%s' has no stages", a->bp->name);
		goto fail;
	}
	a->perms = xcalloc(a->n_stages, sizeof(*a->perms));
	for (size_t i = 0; i < a->n_stages; i++) {
		r = lev_perm_setup_init(&a->perms[i], a->cfg, a->bp, a->stages[i].st->name,
					opts->yolo, opts->allow, err);
		if (r < 0) {
			for (size_t j = 0; j < i; j++)
				lev_perm_setup_release(&a->perms[j]);
			free(a->perms);
			a->perms = NULL;
			goto fail;
		}
	}
	for (char **w = a->perms[0].warnings; w && *w; w++)
		warn_event(a, "%s", *w);
	a->safe_only.safe = a->perms[0].in.safe;
	a->safe_only.n_safe = a->perms[0].in.n_safe;
	a->landlock = lev_landlock_abi() >= 1;
	for (size_t i = 0; i < a->n_stages; i++) {
		r = get_provider(a, a->stages[i].st, &a->stages[i].prov, err);
		if (r < 0)
			goto fail;
	}
	/* every configured provider's key variable is withheld from commands */
	for (size_t i = 0; i < a->cfg->n_providers; i++) {
		const char *k = a->cfg->providers[i].api_key_env;

		if (k && !lev_strv_contains(a->key_vars, k))
			a->key_vars = lev_strv_push(a->key_vars, k);
	}
	if (!lev_strv_contains(a->key_vars, "OPENAI_API_KEY"))
		a->key_vars = lev_strv_push(a->key_vars, "OPENAI_API_KEY");
	if (!lev_strv_contains(a->key_vars, "ANTHROPIC_API_KEY"))
		a->key_vars = lev_strv_push(a->key_vars, "ANTHROPIC_API_KEY");
	for (size_t i = 0; i < a->n_stages; i++)
		build_offered(a, &a->stages[i]);
	build_env(a);
	/* the keys leave lev's own environment block too (/proc/<pid>/environ) */
	lev_credentials_scrub_env(a->key_vars);
	r = build_sandboxes(a, err);
	if (r < 0)
		goto fail;
	*out = a;
	return 0;
fail:
	if (a->rec) {
		json_t *ev = event_new("run_started");

		json_object_set_new(ev, "run", jtext(lev_runrecord_id(a->rec)));
		json_object_set_new(ev, "agent", jtext(a->bp->name));
		json_object_set_new(ev, "workdir", jtext(a->workdir));
		json_object_set_new(ev, "record", jtext(lev_runrecord_dir(a->rec)));
		json_object_set_new(ev, "pid", json_integer(getpid()));
		emit(a, ev);
		a->started = true;
		for (char **w = a->pending_warnings; w && *w; w++)
			warn_event(a, "%s", *w);
		ev = event_new("run_finished");

		json_object_set_new(ev, "status", json_string("error"));
		json_object_set_new(ev, "output", json_null());
		json_object_set_new(ev, "error", jtext(err ? err->msg : "setup failed"));
		emit(a, ev);
		(void)lev_runrecord_finish(a->rec, "error", NULL, err ? err->msg : "setup failed",
					   NULL, NULL);
	}
	lev_agent_free(a);
	return r;
}

struct lev_agent *lev_agent_free(struct lev_agent *a)
{
	if (!a)
		return NULL;
	for (size_t i = 0; i < a->n_stages; i++) {
		lev_sandbox_free(a->stages[i].sb);
		lev_sandbox_spec_release(&a->stages[i].eff);
		lev_strv_free(a->stages[i].offered);
		free(a->stages[i].offered_list);
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
	lev_context_free(a->ctx);
	lev_gate_free(a->gate);
	lev_fs_ctx_free(a->fs);
	lev_tools_free(a->tools);
	lev_runrecord_free(a->rec);
	lev_strv_free(a->envp);
	lev_strv_free(a->key_vars);
	lev_grants_release(&a->grants);
	free(a->stage_output);
	free(a->last_text);
	free(a->internal_error);
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

/* ---- the gates ----------------------------------------------------------- */

/* The first line of S, at most 120 bytes (caller frees). */
static char *first_line(const char *s)
{
	size_t n = strcspn(s, "\n");

	if (n > 120)
		return xasprintf("%.*s...", 117, s);
	return xstrndup(s, n);
}

static const char *arg_str(const json_t *args, const char *key)
{
	const json_t *v = args ? json_object_get(args, key) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* What the permission prompt shows after the tool name (the entry says which argument). */
static char *call_detail(const struct lev_tool_info *ti, const json_t *args)
{
	const char *s = NULL;

	if (ti && ti->detail_arg)
		s = arg_str(args, ti->detail_arg);
	if (!s && ti && ti->detail_arg2)
		s = arg_str(args, ti->detail_arg2);
	return s ? first_line(s) : NULL;
}

/* "k1, k2, k3 +N more" */
static char *keys_label(char *const *keys)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t n = lev_strv_len(keys);

	for (size_t i = 0; i < n && i < 3; i++) {
		if (i)
			(void)lev_buf_adds(&b, ", ");
		(void)lev_buf_adds(&b, keys[i]);
	}
	if (n > 3)
		(void)lev_buf_addf(&b, " +%zu more", n - 3);
	return lev_buf_detach(&b, NULL);
}

/* The record's status says when the run waits for the person at the terminal. */
static void set_waiting(struct lev_agent *a, bool waiting)
{
	if (a->rec)
		(void)lev_runrecord_status(a->rec, waiting ? "waiting" : "running", NULL);
}

static enum lev_ask_answer ask(struct lev_agent *a, const struct lev_ask *q)
{
	enum lev_ask_answer ans;

	/* a seed runs before the run has anyone to ask (lint says so too) */
	if (!a->o.hooks.ask || cancelled(a) || a->seeding)
		return LEV_ANSWER_NONE;
	set_waiting(a, true);
	ans = a->o.hooks.ask(a->o.hooks.data, q);
	set_waiting(a, false);
	return ans;
}

struct call_state {
	const struct lev_tool_call *call;
	const char *tool;		/* canonical, or the name as sent */
	const struct lev_tool_info *ti;
	const json_t *args;
	struct lev_call_decision *dec;
	struct lev_tool_output *out;
	struct lev_gatechain_decision gd;	/* the chain's record */
};

/* The chain's environment for the current stage. */
static void chain_env(struct lev_agent *a, enum lev_gatechain_mode mode, const char *home,
		      struct lev_gatechain_env *env)
{
	const struct stage_rt *s = &a->stages[a->cur];

	memset(env, 0, sizeof(*env));
	env->tools = a->tools;
	env->stage = s->st->name;
	env->offered = s->offered;
	env->offered_list = s->offered_list;
	env->mode = mode;
	env->seed_commands = a->cfg->allow_seed_commands && !a->o.no_seed_commands;
	env->seed_off_why = a->o.no_seed_commands ? "--no-seed-commands"
						  : "[security] allow_seed_commands = false";
	env->perm = mode == LEV_GATECHAIN_COMMAND_SEED ? &a->safe_only : &a->perms[a->cur].in;
	env->grants = mode == LEV_GATECHAIN_COMMAND_SEED ? NULL : &a->grants;
	env->fs = a->fs;
	env->home = home;
	env->kind = s->eff.kind;
	env->network = s->eff.network;
	env->shell_offline = lev_gatechain_shell_offline(&s->eff, s->sb);
	env->landlock = a->landlock;
	/* the write fence: what the stage's sandbox actually has in force */
	env->fenced = lev_gatechain_fenced(&s->eff, s->sb);
	env->taint = a->gate;
	env->taint_enabled = a->taint_enabled;
	env->taint_ctx = lev_context_taint(a->ctx);
	env->taint_level = lev_context_taint_level(a->ctx);
}

/* One audit line per gate the chain ran (asks are recorded with their answer). */
static void audit_steps(struct lev_agent *a, const char *call_id, const char *tool,
			const struct lev_gatechain_decision *gd, const char *target)
{
	for (size_t g = 1; g < _LEV_GATE_ID_MAX; g++) {
		const struct lev_gatechain_step *st = &gd->steps[g];
		bool taint = g == LEV_GATE_TAINT && gd->ran_taint;

		if (!st->ran || st->verdict == LEV_ASK)
			continue;
		audit(a, &(struct audit_line){
			.call_id = call_id, .tool = tool, .gate = lev_gate_id_name(g),
			.rule = st->rule, .allowed = st->verdict == LEV_ALLOW,
			.target = target ? target : st->target,
			.reason = st->verdict == LEV_DENY ? st->reason
				  : taint ? gd->taint.target_error : NULL,
			.has_clearance = taint, .clearance = taint ? gd->taint.clearance : 0 });
	}
}

/* The call's final decision from the chain's record; TEXT (when refused) goes to the model. */
static void conclude(struct call_state *cs, bool allowed, const char *text)
{
	cs->dec->allowed = allowed;
	cs->dec->verdict = cs->gd.verdict;
	cs->dec->taint = cs->gd.taint_level;
	cs->dec->gate = lev_gate_id_name(cs->gd.gate);
	free(cs->dec->rule);
	cs->dec->rule = cs->gd.rule ? xstrdup(cs->gd.rule) : NULL;
	free(cs->dec->reason);
	cs->dec->reason = cs->gd.reason ? xstrdup(cs->gd.reason) : NULL;
	if (!allowed)
		lev_tool_output_set(cs->out, text ? text : "[denied] refused", true);
}

static enum lev_gate_answer taint_answer(enum lev_ask_answer ans)
{
	switch (ans) {
	case LEV_ANSWER_ONCE:
	case LEV_ANSWER_STAGE:
		return LEV_GATE_ANSWER_ONCE;
	case LEV_ANSWER_RUN:
		return LEV_GATE_ANSWER_RUN;
	case LEV_ANSWER_DENY:
		return LEV_GATE_ANSWER_DENY;
	default:
		return LEV_GATE_ANSWER_NONE;
	}
}

/* One audit line per gate that asked, with the answer (NONE: nobody was asked). */
static void audit_asks(struct lev_agent *a, const struct call_state *cs, enum lev_ask_answer ans)
{
	const struct lev_gatechain_decision *gd = &cs->gd;
	bool yes = ans == LEV_ANSWER_ONCE || ans == LEV_ANSWER_STAGE || ans == LEV_ANSWER_RUN;
	static const enum lev_gate_id asking[] = { LEV_GATE_PERMISSION, LEV_GATE_TAINT };

	for (size_t i = 0; i < ARRAY_SIZE(asking); i++) {
		enum lev_gate_id g = asking[i];
		const struct lev_gatechain_step *st = &gd->steps[g];

		if (!st->ran || st->verdict != LEV_ASK)
			continue;
		audit(a, &(struct audit_line){
			.call_id = cs->call->id, .tool = cs->tool, .gate = lev_gate_id_name(g),
			.rule = yes || ans == LEV_ANSWER_DENY ? "user" : "no answer",
			.allowed = yes, .asked = ans != LEV_ANSWER_NONE,
			.answer = lev_ask_answer_name(ans), .reason = st->rule,
			.target = st->target,
			.has_clearance = g == LEV_GATE_TAINT,
			.clearance = g == LEV_GATE_TAINT ? gd->taint.clearance : 0 });
	}
}

/*
 * The chain asks (permission, taint, or both): one question for all of
 * them.  Allow once / for this stage / for this run answer every ask (a
 * taint ask allowed "for this stage" is allowed once); deny refuses.
 */
static void ask_together(struct lev_agent *a, struct call_state *cs)
{
	struct lev_gatechain_decision *gd = &cs->gd;
	struct lev_buf desc = LEV_BUF_INIT;
	_cleanup_free_ char *detail = call_detail(cs->ti, cs->args);
	_cleanup_free_ char *prompt = NULL, *more = NULL, *slabel = NULL, *rlabel = NULL;
	_cleanup_free_ char *klabel = gd->keys ? keys_label(gd->keys) : NULL;
	struct lev_ask q = { 0 };
	enum lev_ask_answer ans;
	bool yes;

	if (gd->ask_taint)
		(void)lev_gate_describe(&gd->taint, &desc);
	q.stage = a->stages[a->cur].st->name;
	q.call_id = cs->call->id;
	q.tool = cs->tool;
	if (gd->ask_permission) {
		prompt = detail ? xasprintf("Allow tool call: `%s` - `%s`?", cs->tool, detail)
				: xasprintf("Allow tool call: `%s`?", cs->tool);
		more = gd->ask_taint ? xasprintf("%s\ntaint: %s", gd->perm_why, desc.buf)
				     : xstrdup(gd->perm_why);
		slabel = klabel ? xasprintf("Allow %s for this stage", klabel)
				: xstrdup("Allow for this stage (nothing reusable - it will ask "
					  "again)");
		rlabel = klabel ? xasprintf("Allow %s for this run", klabel)
				: xstrdup("Allow for this run (nothing reusable - it will ask "
					  "again)");
		q.kind = LEV_ASK_PERMISSION;
		q.stage_label = slabel;
		q.run_label = rlabel;
	} else {
		prompt = xasprintf("%s. Allow it?", desc.buf);
		more = gd->host ? xasprintf("target: %s", gd->host) : NULL;
		q.kind = LEV_ASK_TAINT;
		q.run_label = "Allow for this run";
	}
	q.prompt = prompt;
	q.detail = more;
	ans = ask(a, &q);
	cs->dec->asked = ans != LEV_ANSWER_NONE;
	cs->dec->answer = ans;
	yes = ans == LEV_ANSWER_ONCE || ans == LEV_ANSWER_STAGE || ans == LEV_ANSWER_RUN;
	if (gd->ask_taint)
		(void)lev_gate_answer(a->gate, &gd->taint, taint_answer(ans));
	if (yes && gd->ask_permission && ans != LEV_ANSWER_ONCE)
		(void)lev_grants_add(&a->grants,
				     ans == LEV_ANSWER_STAGE ? LEV_GRANT_STAGE : LEV_GRANT_RUN,
				     gd->keys);
	audit_asks(a, cs, ans);
	if (yes) {
		conclude(cs, true, NULL);
	} else if (ans == LEV_ANSWER_DENY) {
		_cleanup_free_ char *t =
			gd->ask_permission
				? xasprintf("[denied] User declined tool call '%s'.", cs->tool)
				: xasprintf("[blocked] %s. Denied by user.", desc.buf);

		conclude(cs, false, t);
	} else {
		conclude(cs, false, gd->text);
	}
	lev_buf_release(&desc);
}

static char *gate_rule_name(const struct lev_gate_decision *d)
{
	switch (d->source) {
	case LEV_GATE_SRC_ALLOWLIST:
		return xasprintf("allowlist #%zu", d->rule_index);
	case LEV_GATE_SRC_RULE:
		return xasprintf("rule %s", d->rule_name ? d->rule_name : "?");
	default:
		return xstrdup(lev_gate_source_name(d->source));
	}
}

static char *joined_targets(char *const *targets)
{
	struct lev_buf b = LEV_BUF_INIT;

	for (char *const *t = targets; t && *t; t++) {
		if (b.len)
			(void)lev_buf_adds(&b, ", ");
		(void)lev_buf_adds(&b, *t);
	}
	return b.len ? lev_buf_detach(&b, NULL) : (lev_buf_release(&b), NULL);
}

/*
 * Put one outbound call (GATE_TOOL with ARGS_JSON) to the taint gate,
 * asking the user when the gate would ask, and record the decision under
 * the taint gate.  REDIRECT is the URL of a redirect hop the call is about
 * to follow, or NULL for the call itself; it shapes the prompt and the
 * audit reason.  Returns 0 with *D filled (release it) and *RULE (free it),
 * or a negative code with ERR set when the gate failed (recorded too).
 */
static int taint_decide(struct lev_agent *a, struct call_state *cs, const char *gate_tool,
			const char *args_json, const char *redirect, struct lev_gate_decision *d,
			char **rule, struct lev_err *err)
{
	struct lev_gate_call gc = {
		.tool = gate_tool,
		.args_json = args_json,
		.args_len = args_json ? strlen(args_json) : 0,
		.ctx = lev_context_taint(a->ctx),
		.taint = lev_context_taint_level(a->ctx),
	};
	_cleanup_free_ char *targets = NULL;
	_cleanup_free_ char *reason = NULL;
	enum lev_ask_answer ans = LEV_ANSWER_NONE;
	bool asked = false;
	int r;

	memset(d, 0, sizeof(*d));
	r = lev_gate_check(a->gate, &gc, d, err);
	if (r < 0) {
		audit(a, &(struct audit_line){ .call_id = cs->call->id, .tool = cs->tool,
					       .gate = lev_gate_id_name(LEV_GATE_TAINT), .rule = "error", .target = redirect,
					       .reason = err ? err->msg : NULL });
		return r;
	}
	targets = joined_targets(d->targets);
	if (d->result == LEV_GATE_NEEDS_USER) {
		struct lev_buf desc = LEV_BUF_INIT;
		_cleanup_free_ char *prompt = NULL;
		_cleanup_free_ char *detail = NULL;
		struct lev_ask q = { 0 };

		(void)lev_gate_describe(d, &desc);
		prompt = redirect ? xasprintf("%s was redirected: %s. Allow it?", cs->tool, desc.buf)
				  : xasprintf("%s. Allow it?", desc.buf);
		detail = redirect ? xstrdup(redirect)
			 : targets ? xasprintf("target: %s", targets)
				   : NULL;
		q.kind = LEV_ASK_TAINT;
		q.stage = a->stages[a->cur].st->name;
		q.call_id = cs->call->id;
		q.tool = cs->tool;
		q.prompt = prompt;
		q.detail = detail;
		q.run_label = "Allow for this run";
		ans = ask(a, &q);
		asked = ans != LEV_ANSWER_NONE;
		(void)lev_gate_answer(a->gate, d,
				      ans == LEV_ANSWER_ONCE || ans == LEV_ANSWER_STAGE
					      ? LEV_GATE_ANSWER_ONCE
				      : ans == LEV_ANSWER_RUN  ? LEV_GATE_ANSWER_RUN
				      : ans == LEV_ANSWER_DENY ? LEV_GATE_ANSWER_DENY
							       : LEV_GATE_ANSWER_NONE);
		lev_buf_release(&desc);
	}
	if (redirect)
		reason = xasprintf("redirect to '%.300s'%s%s", redirect, d->target_error ? ": " : "",
				   d->target_error ? d->target_error : "");
	*rule = gate_rule_name(d);
	cs->dec->asked = cs->dec->asked || asked;
	audit(a, &(struct audit_line){ .call_id = cs->call->id, .tool = cs->tool, .gate = lev_gate_id_name(LEV_GATE_TAINT),
				       .rule = *rule, .allowed = d->result == LEV_GATE_ALLOWED,
				       .asked = asked,
				       .answer = asked ? lev_ask_answer_name(ans) : NULL,
				       .target = targets, .has_clearance = true,
				       .clearance = d->clearance,
				       .reason = redirect ? reason : d->target_error });
	return 0;
}

/* ---- execution ----------------------------------------------------------- */

struct redirect_ctx {
	struct lev_agent *a;
	struct call_state *cs;
};

/*
 * A network tool is about to follow a redirect to URL: the taint gate
 * judges the new target as it would judge a web_fetch of URL now (the
 * hop is a GET of it), asking when it would ask.  Every hop is one line
 * of audit.jsonl under the taint gate.
 */
static int redirect_gate(void *data, const char *tool, const char *url, struct lev_err *err)
{
	struct redirect_ctx *rc = data;
	struct lev_gate_decision d;
	struct lev_err gerr = LEV_ERR_INIT;
	_cleanup_free_ char *args_json = NULL;
	_cleanup_free_ char *rule = NULL;
	json_t *args;
	int r;

	(void)tool;	/* the call's own tool; the gate judges the hop as a GET */
	if (!rc->a->taint_enabled)
		return 0;
	args = json_pack("{s:s}", "url", url);
	args_json = args ? json_dumps(args, JSON_COMPACT) : NULL;
	json_decref(args);
	if (taint_decide(rc->a, rc->cs, "web_fetch", args_json, url, &d, &rule, &gerr) < 0)
		return lev_err_set(err, LEV_EDENIED, "the taint gate failed: %s", gerr.msg);
	if (d.result != LEV_GATE_ALLOWED) {
		struct lev_buf desc = LEV_BUF_INIT;

		(void)lev_gate_describe(&d, &desc);
		r = lev_err_set(err, LEV_EDENIED, "the taint gate refuses it (%s); call the "
				"tool with that URL if you need it", desc.buf);
		lev_buf_release(&desc);
		lev_gate_decision_release(&d);
		return r;
	}
	lev_gate_decision_release(&d);
	return 0;
}

static void run_inline(struct lev_agent *a, struct call_state *cs)
{
	struct lev_err err = LEV_ERR_INIT;
	const char *region = arg_str(cs->args, "region");
	int idx = region ? lev_context_region_find(a->ctx, region) : -ENOENT;

	if (cs->ti->op == LEV_OP_SUBMIT_OUTPUT) {
		const char *o = arg_str(cs->args, "output");

		free(a->stage_output);
		a->stage_output = xstrdup(o ? o : "");
		a->stage_output_label = lev_level_max(a->seen, lev_context_taint_level(a->ctx));
		a->stage_done = true;
		a->stage_end = "submit_output";
		lev_tool_output_set(cs->out, "[ok] output submitted; this stage ends here.", false);
		return;
	}
	if (idx < 0) {
		_cleanup_free_ char *t = xasprintf("[error] there is no context region '%s'",
						   region ? region : "");

		lev_tool_output_set(cs->out, t, true);
		return;
	}
	if (cs->ti->op == LEV_OP_CONTEXT_READ) {
		char *text = lev_context_region_text(a->ctx, (size_t)idx);

		lev_tool_output_release(cs->out);
		cs->out->text = text;
		cs->out->len = strlen(text);
		return;
	}
	{
		const char *content = arg_str(cs->args, "content");
		int r = cs->ti->op == LEV_OP_CONTEXT_WRITE
				? lev_context_write_note(a->ctx, (size_t)idx, content, strlen(content),
							 a->seen, &err)
				: lev_context_add_note(a->ctx, (size_t)idx, content, strlen(content),
						       a->seen, &err);

		if (r < 0) {
			_cleanup_free_ char *t = xasprintf("[error] %s", err.msg);

			lev_tool_output_set(cs->out, t, true);
		} else {
			_cleanup_free_ char *t = xasprintf("[ok] region '%s' updated", region);

			lev_tool_output_set(cs->out, t, false);
		}
	}
}

/* ask_user_*: the question goes to the front end; its answer is the result. */
static void run_ask(struct lev_agent *a, struct call_state *cs)
{
	const json_t *jc = json_object_get(cs->args, "choices");
	struct lev_question q = {
		.kind = cs->ti->op == LEV_OP_ASK_CHOICE	   ? LEV_QUESTION_CHOICE
			: cs->ti->op == LEV_OP_ASK_CONFIRM ? LEV_QUESTION_CONFIRM
							   : LEV_QUESTION_TEXT,
		.stage = a->stages[a->cur].st->name,
		.call_id = cs->call->id,
		.question = arg_str(cs->args, "question"),
	};
	_cleanup_strv_ char **choices = NULL;
	_cleanup_free_ char *answer = NULL;
	size_t i;
	json_t *v;
	int r;

	json_array_foreach(jc, i, v)
		choices = lev_strv_push(choices, json_string_value(v));
	q.choices = choices;
	if (!a->o.hooks.question || cancelled(a)) {
		lev_tool_output_set(cs->out, "[no answer] Nobody can answer a question in this run. "
				    "Decide yourself and go on.", true);
		return;
	}
	set_waiting(a, true);
	r = a->o.hooks.question(a->o.hooks.data, &q, &answer);
	set_waiting(a, false);
	if (r < 0 || !answer)
		lev_tool_output_set(cs->out, "[no answer] The user did not answer. Go on without "
				    "the answer, or end the stage.", true);
	else
		lev_tool_output_set(cs->out, answer, false);
}

/* current_time: local time with its offset, and UTC (ISO 8601). */
static void run_time(struct call_state *cs)
{
	char local[64] = "", utc[64] = "", text[160];
	time_t now = time(NULL);
	struct tm tm;

	if (localtime_r(&now, &tm))
		strftime(local, sizeof(local), "%Y-%m-%dT%H:%M:%S%z (%Z, %A)", &tm);
	if (gmtime_r(&now, &tm))
		strftime(utc, sizeof(utc), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(text, sizeof(text), "local: %s\nutc: %s", local, utc);
	lev_tool_output_set(cs->out, text, false);
}

static void execute(struct lev_agent *a, struct call_state *cs)
{
	struct stage_rt *s = &a->stages[a->cur];
	struct lev_err err = LEV_ERR_INIT;

	switch (cs->ti->kind) {
	case LEV_TOOL_FS: {
		struct lev_fs_result res = { 0 };

		/* on the fds the path gate opened: the path is never resolved again */
		lev_fs_run(a->fs, cs->tool, cs->args, cs->gd.fs, &res);
		lev_tool_output_release(cs->out);
		cs->out->text = res.text ? res.text : xstrdup("");
		cs->out->len = res.text ? res.len : 0;
		cs->out->is_error = res.is_error;
		res.text = NULL;
		lev_fs_result_release(&res);
		break;
	}
	case LEV_TOOL_SHELL: {
		struct lev_shell_opts so = {
			.sandbox = s->sb,
			.envp = a->envp,
			.cancel_fd = a->o.cancel_fd,
			.read_fence = cs->gd.read_fence,
			.git_hooks_off = cs->gd.git_hooks_off,
		};

		if (lev_tool_shell(&so, arg_str(cs->args, "command"), cs->out, &err) < 0) {
			_cleanup_free_ char *t = xasprintf("[error] %s", err.msg);

			lev_tool_output_set(cs->out, t, true);
		}
		break;
	}
	case LEV_TOOL_NET: {
		struct lev_net_policy np = {
			.network_allowed = s->eff.network,
			.allow_local_network = a->cfg->allow_local_network,
			.search_endpoint = a->cfg->web_search_endpoint,
			.cancel = a->o.cancel,
		};
		struct lev_net_result res = { 0 };
		struct redirect_ctx rc = { .a = a, .cs = cs };

		np.redirect_hook = redirect_gate;
		np.redirect_hook_data = &rc;
		if (lev_tool_net_run(cs->tool, cs->args, &np, &res, &err) < 0) {
			_cleanup_free_ char *t = xasprintf("[error] %s", err.msg);

			lev_tool_output_set(cs->out, t, true);
		} else {
			lev_tool_output_set(cs->out, res.text ? res.text : "", res.is_error);
		}
		lev_net_result_release(&res);
		break;
	}
	case LEV_TOOL_INLINE:
		if (cs->ti->op == LEV_OP_CURRENT_TIME)
			run_time(cs);
		else
			run_inline(a, cs);
		break;
	case LEV_TOOL_ASK:
		run_ask(a, cs);
		break;
	}
}

/* A read grant is active: what a shell may read is labelled as a granted read. */
static enum lev_level grant_floor(const struct lev_agent *a, enum lev_level l)
{
	return lev_fs_ctx_read_paths_granted(a->fs) ? LEV_PRIVATE : l;
}

/*
 * The label of an executed call's result.  A file tool's comes from the
 * fds it read: Private when one of them lies outside the workdir (a
 * [read_paths] grant), whatever the path says now.
 */
static enum lev_level result_label(struct lev_agent *a, const struct call_state *cs)
{
	struct lev_tool_class cls;
	enum lev_level l;

	lev_gate_classify(a->gate, cs->tool, &cls);
	l = cls.sensitivity;
	if (cs->ti && cs->ti->kind == LEV_TOOL_FS && lev_fs_targets_outside(cs->gd.fs))
		l = LEV_PRIVATE;
	if (cs->ti && cs->ti->kind == LEV_TOOL_SHELL) {
		/* a shell reads what read_file reads: its output is labelled at least as high */
		struct lev_tool_class rf;

		lev_gate_classify(a->gate, "read_file", &rf);
		l = lev_level_max(l, grant_floor(a, rf.sensitivity));
	}
	if (cs->ti && cs->ti->op == LEV_OP_CONTEXT_READ) {
		int idx = lev_context_region_find(a->ctx, arg_str(cs->args, "region"));

		if (idx >= 0)
			l = lev_level_max(l, lev_context_region_level(a->ctx, (size_t)idx));
	}
	return l;
}

/* ---- one call ------------------------------------------------------------ */

/* Somebody looks at the events (a record or a front end). */
static bool observed(const struct lev_agent *a)
{
	return a->rec || a->o.hooks.event;
}

static void tool_call_event(struct lev_agent *a, const struct call_state *cs)
{
	json_t *ev;

	if (!observed(a))
		return;
	ev = event_new("tool_call");

	json_object_set_new(ev, "id", jtext(cs->call->id));
	json_object_set_new(ev, "stage", jtext(a->stages[a->cur].st->name));
	json_object_set_new(ev, "tool", jtext(cs->call->name));
	if (cs->call->arguments)
		json_object_set(ev, "args", cs->call->arguments);
	else
		json_object_set_new(ev, "args", jtext_capped(cs->call->raw_arguments));
	json_object_set_new(ev, "decision", json_string(cs->dec->allowed ? "allow" : "deny"));
	json_object_set_new(ev, "verdict", json_string(lev_verdict_name(cs->dec->verdict)));
	json_object_set_new(ev, "taint", json_string(lev_level_name(cs->dec->taint)));
	json_object_set_new(ev, "gate", json_string(cs->dec->gate));
	json_object_set_new(ev, "rule", jtext(cs->dec->rule));
	json_object_set_new(ev, "reason", jtext(cs->dec->reason));
	json_object_set_new(ev, "asked", json_boolean(cs->dec->asked));
	json_object_set_new(ev, "answer", json_string(lev_ask_answer_name(cs->dec->answer)));
	emit(a, ev);
}

/* Put the call to the gate chain, and act on its record: allow, refuse, or ask once. */
static void decide_and_run(struct lev_agent *a, struct call_state *cs)
{
	const struct lev_tool_call *call = cs->call;
	struct lev_gatechain_env env;
	struct lev_gatechain_call gc = {
		.name = call->name,
		.args = call->arguments,
		.parse_error = call->parse_error,
	};
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *home = NULL;

	if (a->o.home)
		home = xstrdup(a->o.home);
	else if (lev_home_dir(&home, NULL) < 0)
		home = NULL;
	chain_env(a, a->seeding ? LEV_GATECHAIN_TOOL_SEED : LEV_GATECHAIN_CALL, home, &env);
	(void)lev_gatechain_decide(&env, &gc, &cs->gd, &err);
	cs->tool = cs->gd.canon;
	cs->ti = cs->gd.tool;
	cs->args = call->arguments;
	audit_steps(a, call->id, cs->gd.tool ? cs->tool : call->name, &cs->gd, NULL);
	if (cs->gd.verdict == LEV_ALLOW)
		conclude(cs, true, NULL);
	else if (cs->gd.verdict == LEV_DENY)
		conclude(cs, false, cs->gd.text);
	else if (a->seeding) {
		/* a tool seed runs before anybody can be asked */
		audit_asks(a, cs, LEV_ANSWER_NONE);
		conclude(cs, false, cs->gd.text);
	} else
		ask_together(a, cs);
}

int lev_agent_dispatch(struct lev_agent *a, const struct lev_tool_call *call,
		       struct lev_tool_output *out, struct lev_call_decision *dec,
		       struct lev_err *err)
{
	struct call_state cs = { 0 };

	if (!a || !call || !out || !dec)
		return lev_err_set(err, -EINVAL, "dispatch needs a run, a call and outputs");
	memset(dec, 0, sizeof(*dec));
	cs.call = call;
	cs.dec = dec;
	cs.out = out;
	a->calls++;
	decide_and_run(a, &cs);
	/* the decision is recorded before the call runs: it was made before */
	tool_call_event(a, &cs);
	if (dec->allowed) {
		/* the decisions so far are on disk before any side effect happens */
		if (a->rec && !lev_tool_read_only(cs.ti))
			(void)lev_runrecord_sync(a->rec, NULL);
		execute(a, &cs);
		dec->label = result_label(a, &cs);
	}
	lev_gatechain_decision_release(&cs.gd);
	return 0;
}

/* Dispatch CALL, add its result to the context and record the result event. */
static void run_call(struct lev_agent *a, const struct lev_tool_call *call)
{
	struct lev_tool_output out = { 0 };
	struct lev_call_decision dec = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	enum lev_level label = LEV_PUBLIC;
	bool truncated = false;
	json_t *ev;

	if (lev_agent_dispatch(a, call, &out, &dec, &err) < 0)
		lev_tool_output_set(&out, "[error] internal error", true);
	if (dec.allowed)
		label = dec.label;
	if (lev_context_add_tool_result(a->ctx, call->id, out.text ? out.text : "", out.len,
					out.is_error, label, 0, &truncated, &err) < 0 &&
	    !a->internal_error)
		a->internal_error = xasprintf("cannot add a tool result to the context: %s",
					      err.msg);
	if (!observed(a))
		goto out;
	ev = event_new("tool_result");
	json_object_set_new(ev, "id", jtext(call->id));
	json_object_set_new(ev, "tool", jtext(call->name));
	json_object_set_new(ev, "ok", json_boolean(dec.allowed && !out.is_error));
	json_object_set_new(ev, "label", json_string(lev_level_name(label)));
	json_object_set_new(ev, "bytes", json_integer((json_int_t)out.len));
	json_object_set_new(ev, "truncated", json_boolean(truncated || out.truncated));
	json_object_set_new(ev, "text", jtext_capped(out.text));
	emit(a, ev);
out:
	lev_call_decision_release(&dec);
	lev_tool_output_release(&out);
}

/* Every call of an interrupted turn still gets a result. */
static void skip_call(struct lev_agent *a, const struct lev_tool_call *call, const char *why)
{
	json_t *ev;

	(void)lev_context_add_tool_result(a->ctx, call->id, why, strlen(why), true, LEV_PUBLIC, 0,
					  NULL, NULL);
	ev = event_new("tool_result");
	json_object_set_new(ev, "id", jtext(call->id));
	json_object_set_new(ev, "tool", jtext(call->name));
	json_object_set_new(ev, "ok", json_false());
	json_object_set_new(ev, "label", json_string("public"));
	json_object_set_new(ev, "bytes", json_integer((json_int_t)strlen(why)));
	json_object_set_new(ev, "truncated", json_false());
	json_object_set_new(ev, "text", jtext(why));
	emit(a, ev);
}

/* ---- seeds --------------------------------------------------------------- */

static int strcmp_ptr(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

struct seed_result {
	char *text;
	enum lev_level label;
	char *error;
};

static void seed_files(struct lev_agent *a, char *const *paths, struct seed_result *sr)
{
	struct lev_buf b = LEV_BUF_INIT;
	struct lev_tool_class cls;

	lev_gate_classify(a->gate, "read_file", &cls);
	sr->label = grant_floor(a, cls.sensitivity);
	for (char *const *p = paths; p && *p; p++) {
		struct lev_fs_result res = { 0 };

		lev_fs_read_file(a->fs, *p, 0, 0, &res);
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
	struct lev_gatechain_call gc = { .name = "shell", .args = args };
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
	chain_env(a, LEV_GATECHAIN_COMMAND_SEED, home, &env);
	(void)lev_gatechain_decide(&env, &gc, &gd, NULL);
	json_decref(args);
	audit_steps(a, NULL, "shell", &gd, region);
	if (gd.verdict != LEV_ALLOW) {
		sr->error = gd.verdict == LEV_DENY
				    ? xstrdup(gd.reason)
				    : xasprintf("seed command '%s' would need an answer, and nobody "
						"is asked at spawn: %s", command, gd.reason);
		lev_gatechain_decision_release(&gd);
		return;
	}
	so.read_fence = gd.read_fence;
	so.git_hooks_off = gd.git_hooks_off;
	lev_gatechain_decision_release(&gd);
	(void)lev_tool_shell(&so, command, &out, NULL);
	if (out.is_error) {
		sr->error = xasprintf("seed command '%s' failed: %s", command,
				      out.text ? out.text : "");
	} else {
		/* command output is labelled like a shell result (see result_label) */
		lev_gate_classify(a->gate, "shell", &cls);
		lev_gate_classify(a->gate, "read_file", &rf);
		sr->label = lev_level_max(cls.sensitivity, grant_floor(a, rf.sensitivity));
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
		const char *cmd = arg_str(call.arguments, ti->detail_arg);

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

static int run_seeds(struct lev_agent *a, struct lev_err *err)
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
				task_placed = true;
			} else if (!lev_streq(rg->seed.value, "task")) {
				sr.error = xasprintf("input '%s' is not supported by lev run (only "
						     "--task)", rg->seed.value);
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
		ev = event_new("seed");
		json_object_set_new(ev, "region", jtext(rg->name));
		json_object_set_new(ev, "kind", json_string(lev_seed_kind_name(rg->seed.kind)));
		json_object_set_new(ev, "ok", json_boolean(!sr.error));
		json_object_set_new(ev, "bytes", json_integer(sr.text ? (json_int_t)strlen(sr.text)
								       : 0));
		json_object_set_new(ev, "label", json_string(lev_level_name(sr.label)));
		json_object_set_new(ev, "error", jtext(sr.error));
		emit(a, ev);
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

		r = lev_context_add_text(a->ctx, region, t, strlen(t), LEV_PUBLIC, err);
		if (r < 0)
			return lev_err_wrap(err, "the task");
	}
	return 0;
}

/* ---- stages -------------------------------------------------------------- */

static int stage_index(const struct lev_agent *a, const char *name)
{
	for (size_t i = 0; name && i < a->n_stages; i++)
		if (!strcmp(a->stages[i].st->name, name))
			return (int)i;
	return -ENOENT;
}

/* Where STAGE goes after ending WHEN: its target stage name, or NULL. */
static const char *next_stage(const struct lev_stage *st, enum lev_transition_when when,
			      const char **hint)
{
	*hint = NULL;
	for (size_t i = 0; i < st->n_transitions; i++) {
		if (st->transitions[i].when == when) {
			*hint = st->transitions[i].hint;
			return st->transitions[i].target;
		}
	}
	if (when == LEV_WHEN_DONE)
		return st->next;
	return NULL;
}

static uint64_t max_iterations(const struct lev_agent *a, const struct lev_stage *st)
{
	if (st->max_iterations)
		return st->max_iterations;
	if (a->cfg->limits.max_iterations)
		return a->cfg->limits.max_iterations;
	return DEFAULT_MAX_ITERATIONS;
}

static int enter_stage(struct lev_agent *a, size_t idx, const char *from, const char *handoff,
		       enum lev_level label, const char *hint, struct lev_err *err)
{
	struct stage_rt *s = &a->stages[idx];
	const struct lev_stage *st = s->st;
	struct lev_buf kick = LEV_BUF_INIT;
	struct lev_buf layers = LEV_BUF_INIT;
	json_t *ev, *tools;
	int r;

	a->cur = idx;
	a->iteration = 0;
	a->stage_done = false;
	a->stage_end = NULL;
	free(a->stage_output);
	a->stage_output = NULL;
	lev_grants_enter_stage(&a->grants, (long)idx);
	s->visits++;

	/* a new stage starts a new conversation; its input is the hand-off */
	r = lev_context_clear(a->ctx, lev_context_conversation(a->ctx), err);
	if (r < 0)
		return r;

	ev = event_new("stage_started");
	json_object_set_new(ev, "stage", jtext(st->name));
	json_object_set_new(ev, "from", jtext(from));
	json_object_set_new(ev, "max_iterations", json_integer((json_int_t)max_iterations(a, st)));
	json_object_set_new(ev, "sandbox", json_string(lev_sandbox_kind_name(
						   lev_sandbox_kind(s->sb))));
	(void)lev_sandbox_layers_format(lev_sandbox_layers(s->sb), &layers);
	json_object_set_new(ev, "layers", jtext(layers.buf));
	lev_buf_release(&layers);
	json_object_set_new(ev, "network", json_boolean(s->eff.network));
	json_object_set_new(ev, "model", jtext(lev_provider_model(s->prov)
						       ? lev_provider_model(s->prov)
						       : lev_provider_name(s->prov)));
	json_object_set_new(ev, "provider", jtext(lev_provider_name(s->prov)));
	tools = json_array();
	for (char **t = s->offered; t && *t; t++)
		json_array_append_new(tools, json_string(*t));
	json_object_set_new(ev, "tools", tools);
	emit(a, ev);

	if (handoff) {
		(void)lev_buf_addf(&kick, "Output of stage '%s':\n\n", from);
		(void)lev_buf_adds(&kick, handoff);
		(void)lev_buf_adds(&kick, "\n\n");
		if (hint)
			(void)lev_buf_addf(&kick, "%s\n\n", hint);
	}
	(void)lev_buf_addf(&kick, "You are in stage '%s'", st->name);
	if (st->description)
		(void)lev_buf_addf(&kick, ": %s", st->description);
	(void)lev_buf_adds(&kick, ". ");
	if (st->require_output || st->mode == LEV_MODE_OUTPUT)
		(void)lev_buf_adds(&kick, "When you are done, call submit_output with the stage's "
					  "output.");
	else
		(void)lev_buf_adds(&kick, "When you are done, answer with your final output and no "
					  "tool calls.");
	r = lev_context_add_text(a->ctx, lev_context_conversation(a->ctx), kick.buf, kick.len,
				 handoff ? label : LEV_PUBLIC, err);
	lev_buf_release(&kick);
	return r;
}

static void finish(struct lev_agent *a, enum lev_run_status st, const char *output,
		   const char *error)
{
	json_t *ev, *extra;

	if (!error && st != LEV_RUN_COMPLETE && a->internal_error)
		error = a->internal_error;
	a->status = st;
	free(a->output);
	a->output = output ? xstrdup(output) : NULL;
	free(a->error);
	a->error = error ? xstrdup(error) : NULL;

	ev = event_new("run_finished");
	json_object_set_new(ev, "run", jtext(lev_agent_run_id(a)));
	json_object_set_new(ev, "status", json_string(lev_run_status_name(st)));
	json_object_set_new(ev, "output", jtext_capped(output));
	json_object_set_new(ev, "error", jtext(error));
	json_object_set_new(ev, "tool_calls", json_integer((json_int_t)a->calls));
	emit(a, ev);
	if (a->rec) {
		extra = json_object();
		json_object_set_new(extra, "agent", jtext(a->bp->name));
		json_object_set_new(extra, "workdir", jtext(a->workdir));
		json_object_set_new(extra, "tool_calls", json_integer((json_int_t)a->calls));
		json_object_set_new(extra, "taint", json_string(lev_level_name(
							    lev_context_taint_level(a->ctx))));
		(void)lev_runrecord_finish(a->rec, lev_run_status_name(st), output, error, extra,
					   NULL);
		json_decref(extra);
	}
}

static void model_response_event(struct lev_agent *a, const struct lev_infer_response *resp)
{
	json_t *ev = event_new("model_response"), *calls = json_array();

	json_object_set_new(ev, "stage", jtext(a->stages[a->cur].st->name));
	json_object_set_new(ev, "iteration", json_integer(a->iteration));
	json_object_set_new(ev, "text", jtext_capped(resp->text));
	for (size_t i = 0; i < resp->n_calls; i++)
		json_array_append_new(calls, jtext(resp->calls[i].name));
	json_object_set_new(ev, "calls", calls);
	json_object_set_new(ev, "finish", json_string(lev_finish_name(resp->finish)));
	if (resp->has_prompt_tokens)
		json_object_set_new(ev, "prompt_tokens", json_integer((json_int_t)resp->prompt_tokens));
	if (resp->has_completion_tokens)
		json_object_set_new(ev, "completion_tokens",
				    json_integer((json_int_t)resp->completion_tokens));
	emit(a, ev);
}

/*
 * Every call of a turn needs an id of its own (its result answers that id):
 * a model that repeats one, or sends an empty one, gets it made unique.
 */
static void unique_call_ids(struct lev_infer_response *resp)
{
	for (size_t i = 0; i < resp->n_calls; i++) {
		bool dup = !resp->calls[i].id || !resp->calls[i].id[0];

		for (size_t j = 0; j < i && !dup; j++)
			dup = lev_streq(resp->calls[i].id, resp->calls[j].id);
		if (dup) {
			char *id = xasprintf("%s_%zu", resp->calls[i].id && resp->calls[i].id[0]
							       ? resp->calls[i].id : "call",
					     i + 1);

			free(resp->calls[i].id);
			resp->calls[i].id = id;
		}
	}
}

enum stage_end {
	END_DONE,
	END_MAX_ITERATIONS,
	END_ERROR,
	END_SCRIPT,		/* the script provider has no turns left */
	END_CANCELLED,
};

/* Run the current stage to its end; *why gets the error text for END_ERROR. */
static enum stage_end run_stage(struct lev_agent *a, char **why)
{
	struct stage_rt *s = &a->stages[a->cur];
	const struct lev_stage *st = s->st;
	uint64_t max = max_iterations(a, st);
	struct lev_err err = LEV_ERR_INIT;

	while (!a->stage_done) {
		struct lev_infer_request req;
		struct lev_infer_response resp;
		json_t *ev;
		int r;

		if (cancelled(a))
			return END_CANCELLED;
		if (a->iteration >= max)
			return END_MAX_ITERATIONS;
		a->iteration++;

		lev_request_init(&req);
		lev_context_render(a->ctx, st->system_prompt, &req);
		lev_tools_offer(a->tools, s->offered, &req);
		if (st->model.max_tokens)
			req.max_tokens = (unsigned)(st->model.max_tokens > 1000000
							    ? 1000000 : st->model.max_tokens);
		if (st->model.has_temperature) {
			req.has_temperature = true;
			req.temperature = st->model.temperature;
		}
		a->seen = lev_context_taint_level(a->ctx);
		ev = event_new("model_request");
		json_object_set_new(ev, "stage", jtext(st->name));
		json_object_set_new(ev, "iteration", json_integer(a->iteration));
		json_object_set_new(ev, "context_tokens",
				    json_integer((json_int_t)lev_context_tokens(a->ctx)));
		json_object_set_new(ev, "taint", json_string(lev_level_name(a->seen)));
		emit(a, ev);

		if (a->o.hooks.thinking)
			a->o.hooks.thinking(a->o.hooks.data, true);
		memset(&resp, 0, sizeof(resp));
		lev_err_clear(&err);
		r = lev_provider_infer(s->prov, &req, &resp, &err);
		if (a->o.hooks.thinking)
			a->o.hooks.thinking(a->o.hooks.data, false);
		lev_request_release(&req);
		if (r < 0) {
			if (cancelled(a) || r == -ECANCELED)
				return END_CANCELLED;
			*why = xasprintf("model request failed in stage '%s': %s", st->name,
					 err.msg[0] ? err.msg : strerror(-r));
			return END_ERROR;
		}
		if (resp.finish == LEV_FINISH_SCRIPT_END) {
			lev_response_release(&resp);
			return END_SCRIPT;
		}
		unique_call_ids(&resp);
		model_response_event(a, &resp);
		free(a->last_text);
		a->last_text = xstrdup(resp.text ? resp.text : "");
		r = lev_context_add_assistant(a->ctx, &resp, a->seen, &err);
		if (r < 0) {
			lev_response_release(&resp);
			*why = xasprintf("cannot keep the model's turn: %s", err.msg);
			return END_ERROR;
		}
		if (resp.n_calls == 0) {
			if (st->require_output || st->mode == LEV_MODE_OUTPUT) {
				static const char nudge[] =
					"This stage ends only through submit_output: call it with "
					"the stage's output.";

				r = lev_context_add_text(a->ctx, lev_context_conversation(a->ctx),
							 nudge, strlen(nudge), LEV_PUBLIC, &err);
			} else {
				free(a->stage_output);
				a->stage_output = xstrdup(resp.text ? resp.text : "");
				a->stage_output_label = lev_level_max(a->seen,
								      lev_context_taint_level(a->ctx));
				a->stage_done = true;
				a->stage_end = "answer";
			}
			lev_response_release(&resp);
			continue;
		}
		for (size_t i = 0; i < resp.n_calls; i++) {
			if (cancelled(a))
				skip_call(a, &resp.calls[i], "[cancelled] the run was interrupted "
							     "before this call ran");
			else if (a->stage_done)
				skip_call(a, &resp.calls[i], "[skipped] the stage ended with "
							     "submit_output before this call");
			else
				run_call(a, &resp.calls[i]);
		}
		lev_response_release(&resp);
		if (a->rec)
			(void)lev_runrecord_sync(a->rec, NULL);
	}
	return END_DONE;
}

int lev_agent_run(struct lev_agent *a, struct lev_err *err)
{
	struct lev_err e = LEV_ERR_INIT;
	size_t entry = a->cur;
	json_t *ev;
	int r;

	ev = event_new("run_started");
	json_object_set_new(ev, "run", jtext(lev_agent_run_id(a)));
	json_object_set_new(ev, "agent", jtext(a->bp->name));
	/* the installed agent, unchanged since `lev add` (agentstore.h) */
	json_object_set_new(ev, "agent_verified", json_boolean(a->bp->identity_verified));
	json_object_set_new(ev, "workdir", jtext(a->workdir));
	json_object_set_new(ev, "record", jtext(lev_agent_record_dir(a)));
	json_object_set_new(ev, "pid", json_integer(getpid()));
	json_object_set_new(ev, "entry_stage", jtext(a->stages[entry].st->name));
	json_object_set_new(ev, "taint_tracking", json_boolean(a->taint_enabled));
	json_object_set_new(ev, "yolo", json_boolean(a->o.yolo));
	emit(a, ev);
	a->started = true;
	for (char **w = a->pending_warnings; w && *w; w++)
		warn_event(a, "%s", *w);
	a->pending_warnings = lev_strv_free(a->pending_warnings);

	r = run_seeds(a, &e);
	if (r == 0)
		r = enter_stage(a, entry, NULL, NULL, LEV_PUBLIC, NULL, &e);
	if (r < 0) {
		finish(a, LEV_RUN_ERROR, NULL, e.msg);
		return 0;
	}

	for (;;) {
		const struct lev_stage *st = a->stages[a->cur].st;
		_cleanup_free_ char *why = NULL;
		enum stage_end end = run_stage(a, &why);
		enum lev_transition_when when = LEV_WHEN_DONE;
		const char *hint = NULL, *target;
		int next;

		ev = event_new("stage_finished");
		json_object_set_new(ev, "stage", jtext(st->name));
		json_object_set_new(ev, "iterations", json_integer(a->iteration));
		json_object_set_new(ev, "end", json_string(
						      end == END_DONE ? (a->stage_end ? a->stage_end
										      : "answer")
						      : end == END_MAX_ITERATIONS ? "max_iterations"
						      : end == END_ERROR	  ? "error"
						      : end == END_SCRIPT ? "script_end"
									  : "cancelled"));
		json_object_set_new(ev, "output", jtext_capped(a->stage_output));
		emit(a, ev);

		if (end == END_CANCELLED) {
			finish(a, LEV_RUN_CANCELLED, NULL, "interrupted");
			return 0;
		}
		if (end == END_SCRIPT) {
			finish(a, LEV_RUN_COMPLETE, a->stage_output ? a->stage_output
								    : a->last_text,
			       NULL);
			return 0;
		}
		if (end == END_MAX_ITERATIONS)
			when = LEV_WHEN_MAX_ITERATIONS;
		else if (end == END_ERROR)
			when = LEV_WHEN_ERROR;
		target = next_stage(st, when, &hint);
		if (!target) {
			if (end == END_DONE) {
				finish(a, LEV_RUN_COMPLETE, a->stage_output, NULL);
			} else if (end == END_MAX_ITERATIONS) {
				_cleanup_free_ char *m = xasprintf(
					"stage '%s' reached max_iterations (%llu) without finishing",
					st->name, (unsigned long long)max_iterations(a, st));

				finish(a, LEV_RUN_ERROR, NULL, m);
			} else {
				finish(a, LEV_RUN_ERROR, NULL, why ? why : "the stage failed");
			}
			return 0;
		}
		next = stage_index(a, target);
		if (next < 0 || a->stages[next].visits >= MAX_STAGE_VISITS) {
			_cleanup_free_ char *m =
				next < 0 ? xasprintf("stage '%s' names an unknown stage '%s'", st->name,
						     target)
					 : xasprintf("stage '%s' was entered %d times; the run stops "
						     "here", target, MAX_STAGE_VISITS);

			finish(a, LEV_RUN_ERROR, NULL, m);
			return 0;
		}
		{
			_cleanup_free_ char *handoff =
				a->stage_output ? xstrdup(a->stage_output)
				: why		? xasprintf("(the stage failed: %s)", why)
						: xstrdup("(the stage ended without an output)");
			enum lev_level label = a->stage_output
						       ? a->stage_output_label
						       : lev_context_taint_level(a->ctx);
			_cleanup_free_ char *from = xstrdup(st->name);

			r = enter_stage(a, (size_t)next, from, handoff, label, hint, &e);
		}
		if (r < 0) {
			finish(a, LEV_RUN_ERROR, NULL, e.msg);
			return 0;
		}
	}
	(void)err;
	return 0;
}
