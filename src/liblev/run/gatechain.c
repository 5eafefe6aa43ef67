/*
 * gatechain.c - every gate for one call, decided once (see gatechain.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/policy/argcheck.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/hot.h"
#include "liblev/run/gatechain.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static const char *const gate_names[_LEV_GATE_ID_MAX] = {
	[LEV_GATE_NONE] = "none",
	[LEV_GATE_OFFERED] = "offered",
	[LEV_GATE_SCHEMA] = "schema",
	[LEV_GATE_SEED] = "seed",
	[LEV_GATE_REDIRECT] = "redirect",
	[LEV_GATE_PERMISSION] = "permission",
	[LEV_GATE_WORKDIR] = "workdir",
	[LEV_GATE_READ_PATHS] = "read_paths",
	[LEV_GATE_NETWORK] = "network",
	[LEV_GATE_TAINT] = "taint",
	[LEV_GATE_INTEGRITY] = "integrity",
};

const char *lev_gate_id_name(enum lev_gate_id g)
{
	return (unsigned)g < _LEV_GATE_ID_MAX ? gate_names[g] : "none";
}

static const char *const reason_names[_LEV_REASON_MAX] = {
	[LEV_REASON_AVAILABLE_TOOLS] = "available_tools",
	[LEV_REASON_NOT_OFFERED] = "not offered in this stage",
	[LEV_REASON_UNKNOWN_TOOL] = "unknown tool",
	[LEV_REASON_SEED] = "seed",
	[LEV_REASON_JSON] = "json",
	[LEV_REASON_SCHEMA] = "schema",
	[LEV_REASON_SEEDS_DISABLED] = "seed commands disabled",
	[LEV_REASON_SAFE_LIST] = "safe list",
	[LEV_REASON_NO_READ_FENCE] = "no read fence",
	[LEV_REASON_WORKDIR] = "workdir",
	[LEV_REASON_UNLOCATABLE_WRITE] = "unlocatable write",
	[LEV_REASON_WRITE_FENCE] = "write fence",
	[LEV_REASON_PATH] = "path",
	[LEV_REASON_CONFINED] = "confined to the workdir",
	[LEV_REASON_READ_PATHS] = "[read_paths]",
	[LEV_REASON_READ_PATHS_GRANTED] = "[read_paths] declared and granted",
	[LEV_REASON_NETWORK_OFF] = "network = false",
	[LEV_REASON_NETWORK_ON] = "network = true",
	[LEV_REASON_OFFLINE] = "not_outbound: the stage's sandbox has no network",
	[LEV_REASON_TAINT_DISABLED] = "taint_disabled",
	[LEV_REASON_NOT_OUTBOUND] = "not_outbound",
	[LEV_REASON_TAINT_ERROR] = "error",
};

const char *lev_gate_reason_name(enum lev_gate_reason r)
{
	return (unsigned)r < _LEV_REASON_MAX ? reason_names[r] : "?";
}

#define R(x) reason_names[LEV_REASON_##x]

void lev_gatechain_decision_release(struct lev_gatechain_decision *d)
{
	size_t i;

	if (!d)
		return;
	free(d->text);
	for (i = 0; i < d->n_own; i++)
		free(d->own[i]);
	free(d->perm_why);
	lev_strv_free(d->keys);
	if (d->ran_taint)
		lev_gate_decision_release(&d->taint);
	if (d->ran_integ)
		lev_integrity_decision_release(&d->integ);
	lev_strv_free(d->untrusted_args);
	if (d->have_sk)
		lev_shellkeys_release(&d->sk);
	lev_fs_targets_free(d->fs);
	free(d->path);
	free(d->host);
	json_decref(d->args);
	memset(d, 0, sizeof(*d));
}

/* S (owned, may be NULL) is the record's from now on; returns S. */
static const char *own(struct lev_gatechain_decision *d, char *s)
{
	if (!s)
		return NULL;
	/* every gate runs once and keeps at most three strings: this cannot fill */
	if (d->n_own >= LEV_GATECHAIN_OWN_MAX)
		abort();
	d->own[d->n_own++] = s;
	return s;
}

/* The first line of S, at most 300 bytes, without a "[denied] " style prefix. */
static char *one_line(const char *s)
{
	const char *close;
	size_t n;

	if (s[0] == '[' && (close = strchr(s, ']')) && close[1] == ' ')
		s = close + 2;
	n = strcspn(s, "\n");
	if (n > 300)
		return xasprintf("%.*s...", 297, s);
	return xstrndup(s, n);
}

/*
 * Record GATE's say.  RULE, REASON and TARGET are borrowed: static text, or
 * text the record owns already (own()).
 */
static void step(struct lev_gatechain_decision *d, enum lev_gate_id gate, enum lev_verdict v,
		 const char *rule, const char *reason, const char *target)
{
	struct lev_gatechain_step *s = &d->steps[gate];

	s->ran = true;
	s->verdict = v;
	s->rule = rule;
	s->reason = reason;
	s->target = target;
}

/*
 * A refusal at GATE: TEXT (taken) is what the model gets.  Cold, like every
 * refusal and ask builder below: the per-call path of an allowed call stays
 * in few cache lines (bench/cg-gates.sh).
 */
static LEV_COLD void refuse(struct lev_gatechain_decision *d, enum lev_gate_id gate, const char *rule,
		   char *text, const char *target)
{
	step(d, gate, LEV_DENY, rule, own(d, one_line(text)), target);
	if (d->verdict != LEV_DENY) {
		d->verdict = LEV_DENY;
		d->gate = gate;
		free(d->text);
		d->text = text;
	} else {
		free(text);
	}
}

static const char *arg_str(const json_t *args, const char *key)
{
	const json_t *v = args ? json_object_get(args, key) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* ---- offered, schema, seed -------------------------------------------- */

static LEV_COLD bool refuse_offered(const struct lev_gatechain_env *env, const char *name,
				    const struct lev_tool_info *ti, struct lev_gatechain_decision *d)
{
	char *t;

	if (env->mode == LEV_GATECHAIN_TOOL_SEED) {
		refuse(d, LEV_GATE_OFFERED, R(SEED),
		       xasprintf("[unavailable] '%s' cannot seed a region: only file, shell "
				 "and network tools run at spawn", name),
		       NULL);
		return false;
	}
	t = env->offered ? xasprintf("[unavailable] '%s' is not available in this stage. You "
				     "may call: %s.", name, env->offered_list)
			 : xasprintf("[unavailable] '%s' is not available in this stage, "
				     "which has no tools at all. Answer directly.", name);
	refuse(d, LEV_GATE_OFFERED, ti ? R(NOT_OFFERED) : R(UNKNOWN_TOOL), t, NULL);
	return false;
}

static bool gate_offered(const struct lev_gatechain_env *env, const struct lev_gatechain_call *c,
			 struct lev_gatechain_decision *d)
{
	const struct lev_tool_info *ti = d->tool;

	if (lev_likely(env->mode == LEV_GATECHAIN_CALL)) {
		if (lev_unlikely(!ti || !lev_strv_contains(env->offered, ti->name)))
			return refuse_offered(env, c->name ? c->name : "", ti, d);
		/* the offered gate never approves a call: its reason is not formatted */
		step(d, LEV_GATE_OFFERED, LEV_ALLOW, R(AVAILABLE_TOOLS), "the stage offers it",
		     NULL);
		return true;
	}
	if (env->mode == LEV_GATECHAIN_COMMAND_SEED) {
		step(d, LEV_GATE_OFFERED, LEV_ALLOW, R(SEED), "a command seed", NULL);
		return true;
	}
	if (!ti || ti->kind == LEV_TOOL_INLINE || ti->kind == LEV_TOOL_ASK ||
	    ti->kind == LEV_TOOL_AGENT)
		return refuse_offered(env, c->name ? c->name : "", ti, d);
	step(d, LEV_GATE_OFFERED, LEV_ALLOW, R(SEED), "a tool seed", NULL);
	return true;
}

static LEV_COLD bool refuse_json(const struct lev_gatechain_call *c,
				 struct lev_gatechain_decision *d)
{
	refuse(d, LEV_GATE_SCHEMA, R(JSON),
	       xasprintf("[error] the arguments of '%s' are not a valid JSON object (%s). "
			 "Send them again as one JSON object.", d->canon,
			 c->parse_error ? c->parse_error : "not JSON"),
	       NULL);
	return false;
}

static LEV_COLD bool refuse_schema(const struct lev_err *e, struct lev_gatechain_decision *d)
{
	refuse(d, LEV_GATE_SCHEMA, R(SCHEMA),
	       xasprintf("[error] invalid arguments for '%s': %s", d->canon, e->msg), NULL);
	return false;
}

static LEV_COLD bool refuse_alias(const char *alias, const char *name,
				  struct lev_gatechain_decision *d)
{
	refuse(d, LEV_GATE_SCHEMA, R(SCHEMA),
	       xasprintf("[error] invalid arguments for '%s': '%s' and '%s' are two names of one "
			 "argument; send it once, as '%s'", d->canon, alias, name, name),
	       NULL);
	return false;
}

/*
 * The call's arguments under the names the tool's schema gives them, into
 * d->args: an alias the tool table lists (an earlier lev name) is renamed,
 * once, here, so every gate, the approval's digest and the tool see one
 * spelling.  An alias sent beside its name is refused, never resolved.
 */
static bool canon_args(const struct lev_gatechain_call *c, struct lev_gatechain_decision *d)
{
	const char *const *al = d->tool->desc ? d->tool->desc->arg_aliases : NULL;
	bool any = false;
	json_t *v;

	if (lev_unlikely(!c->args || !json_is_object(c->args)))
		return refuse_json(c, d);
	for (size_t i = 0; al && al[i]; i += 2)
		any = any || json_object_get(c->args, al[i]);
	if (lev_likely(!any)) {
		d->args = json_incref((json_t *)c->args);
		return true;
	}
	d->args = json_copy((json_t *)c->args);
	for (size_t i = 0; al[i]; i += 2) {
		v = json_object_get(d->args, al[i]);
		if (!v)
			continue;
		if (json_object_get(d->args, al[i + 1]))
			return refuse_alias(al[i], al[i + 1], d);
		json_object_set(d->args, al[i + 1], v);
		json_object_del(d->args, al[i]);
	}
	return true;
}

static bool gate_schema(const struct lev_gatechain_call *c, struct lev_gatechain_decision *d)
{
	struct lev_err e = LEV_ERR_INIT;

	if (lev_unlikely(!c->args || !json_is_object(c->args)))
		return refuse_json(c, d);
	if (lev_unlikely(lev_argcheck_checked(d->tool->schema, c->args, &e) < 0))
		return refuse_schema(&e, d);
	step(d, LEV_GATE_SCHEMA, LEV_ALLOW, R(SCHEMA), "the arguments fit the schema", NULL);
	return true;
}

/* A command seed: enabled, every program safe-listed, a fence where there is no sandbox. */
static LEV_COLD void gate_seed(const struct lev_gatechain_env *env, const char *command,
		      struct lev_gatechain_decision *d)
{
	struct lev_perm_decision pd;

	if (!env->seed_commands) {
		refuse(d, LEV_GATE_SEED, R(SEEDS_DISABLED),
		       xasprintf("command seeds are disabled (%s)",
				 env->seed_off_why ? env->seed_off_why : "by the configuration"),
		       NULL);
		return;
	}
	if (env->perm)
		lev_perm_decide(env->perm, lev_tooltable_name(LEV_OP_SHELL),
				d->have_sk ? &d->sk : NULL, NULL, &pd);
	if (!env->perm || pd.verdict != LEV_ALLOW || pd.why != LEV_PERM_WHY_COVERED) {
		refuse(d, LEV_GATE_SEED, R(SAFE_LIST),
		       d->have_sk && d->sk.grantable && d->sk.keys
			       ? xasprintf("seed command '%s' is not pre-approved: a seed runs before "
					   "the first inference, so every program in it must be on "
					   "the safe list", command)
			       : xasprintf("seed command '%s' cannot be pre-approved: %s", command,
					   d->have_sk && d->sk.reason
						   ? d->sk.reason
						   : "nothing in it names what would run"),
		       NULL);
		return;
	}
	if (env->kind == LEV_SANDBOX_NONE && !env->landlock) {
		refuse(d, LEV_GATE_SEED, R(NO_READ_FENCE),
		       xasprintf("seed command '%s' cannot run: with no sandbox, a command seed "
				 "runs inside a Landlock read fence, and this kernel has none",
				 command),
		       NULL);
		return;
	}
	d->read_fence = env->kind == LEV_SANDBOX_NONE;
	d->git_hooks_off = true;
	step(d, LEV_GATE_SEED, LEV_ALLOW, R(SAFE_LIST), own(d, xstrdup(command)), NULL);
}

/* ---- redirect, permission ----------------------------------------------- */

static LEV_NOINLINE int gate_redirect(const struct lev_gatechain_env *env,
				      struct lev_gatechain_decision *d, struct lev_err *err)
{
	struct lev_redirect_decision rd = { 0 };
	struct lev_buf fwhy = LEV_BUF_INIT;
	struct lev_err e = LEV_ERR_INIT;
	const char *rule;
	int r;

	/* a line that cannot be fully analysed runs only behind a write fence */
	if (lev_perm_fence_check(&d->sk, env->kind, env->fenced, &fwhy) != LEV_ALLOW) {
		refuse(d, LEV_GATE_REDIRECT, R(WRITE_FENCE), xasprintf("[denied] %s", fwhy.buf),
		       NULL);
		lev_buf_release(&fwhy);
		return 0;
	}
	lev_buf_release(&fwhy);
	if (!d->sk.writes && !d->sk.unlocatable_write && !d->sk.write_targets)
		return 0;
	rule = d->sk.unlocatable_write ? R(UNLOCATABLE_WRITE) : R(WORKDIR);
	if (lev_unlikely(!env->fs)) {
		refuse(d, LEV_GATE_REDIRECT, rule,
		       xstrdup("[denied] the line writes a file, and this call has no working "
			       "directory"), NULL);
		return 0;
	}
	r = lev_perm_redirect_check(lev_fs_ctx_root_fd(env->fs), lev_fs_ctx_workdir(env->fs),
				    env->home, &d->sk, &rd, &e);
	(void)err;
	if (r < 0 || rd.verdict != LEV_ALLOW) {
		const char *why = r < 0 ? e.msg : rd.reason ? rd.reason : "the redirect is refused";

		refuse(d, LEV_GATE_REDIRECT, rule,
		       why[0] == '[' ? xstrdup(why) : xasprintf("[denied] %s", why),
		       own(d, rd.path ? xstrdup(rd.path) : rd.target ? xstrdup(rd.target) : NULL));
		if (rd.path && !d->path)
			d->path = xstrdup(rd.path);
	} else {
		step(d, LEV_GATE_REDIRECT, LEV_ALLOW, R(WORKDIR),
		     "every redirect stays inside the working directory", NULL);
	}
	lev_redirect_decision_release(&rd);
	return 0;
}

/* Which permission answers a choice made (anything but the built-in default). */
static bool perm_chosen(const struct lev_perm_decision *pd)
{
	return pd->why != LEV_PERM_WHY_DEFAULT;
}

/*
 * A shell line nobody approved (a safe list did) runs, with no sandbox,
 * inside a Landlock read fence; without Landlock it cannot, so it asks
 * like any other line (fail closed).
 */
static LEV_NOINLINE void safe_listed_shell(const struct lev_gatechain_env *env,
					   struct lev_gatechain_decision *d,
					   struct lev_perm_decision *pd, struct lev_buf *why)
{
	d->git_hooks_off = true;
	if (env->kind != LEV_SANDBOX_NONE)
		return;
	if (env->landlock) {
		d->read_fence = true;
	} else {
		pd->verdict = pd->own.verdict;
		pd->why = pd->own.why;
		(void)lev_buf_adds(why, "; with no sandbox, pre-approved commands need a "
				   "Landlock read fence, and this kernel has none");
	}
}

/* The permission gate refuses, or asks: the model's text, the ask's words and keys. */
static LEV_COLD void permission_not_allowed(struct lev_gatechain_decision *d,
					    enum lev_verdict v, const char *rule)
{
	if (v == LEV_DENY) {
		refuse(d, LEV_GATE_PERMISSION, rule,
		       xasprintf("[denied] Tool '%s' is not permitted (%s).", d->canon, rule), NULL);
		return;
	}
	step(d, LEV_GATE_PERMISSION, LEV_ASK, rule,
	     own(d, xasprintf("Tool '%s' needs approval (%s)", d->canon, rule)), NULL);
	d->ask_permission = true;
	d->perm_why = xstrdup(rule);
	d->keys = lev_perm_call_keys(d->canon, d->have_sk ? &d->sk : NULL);
}

/*
 * A sub-agent's call: decided again under each ancestor's permission input
 * (with the child's grants); a stricter verdict there wins, named as the
 * parent run's rule.  A child never gets what its parent could not have.
 */
static LEV_NOINLINE void ceiling_permission(const struct lev_gatechain_env *env,
					    struct lev_gatechain_decision *d,
					    struct lev_perm_decision *pd, const char **rule)
{
	for (const struct lev_perm_input *const *c = env->ceilings; *c; c++) {
		struct lev_perm_decision cd;
		struct lev_buf why = LEV_BUF_INIT;

		lev_perm_decide(*c, d->canon, d->have_sk ? &d->sk : NULL, env->grants, &cd);
		if (cd.verdict == LEV_ALLOW || (cd.verdict == LEV_ASK && pd->verdict != LEV_ALLOW))
			continue;
		(void)lev_buf_adds(&why, "the parent run's ");
		(void)lev_perm_describe(&cd, &why);
		*rule = own(d, lev_buf_detach(&why, NULL));
		*pd = cd;
		if (cd.verdict == LEV_DENY)
			return;
	}
}

static void gate_permission(const struct lev_gatechain_env *env, struct lev_gatechain_decision *d,
			    bool *approved)
{
	struct lev_perm_decision pd;
	struct lev_buf why = LEV_BUF_INIT;
	const char *rule;

	if (lev_unlikely(!env->perm)) {
		/* nothing says what this caller may do: the person decides */
		permission_not_allowed(d, LEV_ASK, "no permission input");
		return;
	}
	lev_perm_decide(env->perm, d->canon, d->have_sk ? &d->sk : NULL, env->grants, &pd);
	/* room for the usual account at once ("built-in default read_file = \"allow\"") */
	(void)lev_buf_grow(&why, 80);
	(void)lev_perm_describe(&pd, &why);
	if (pd.verdict == LEV_ALLOW && pd.why == LEV_PERM_WHY_COVERED && pd.n_safe_sources &&
	    d->tool->kind == LEV_TOOL_SHELL)
		safe_listed_shell(env, d, &pd, &why);
	rule = own(d, lev_buf_detach(&why, NULL));
	if (lev_unlikely(env->ceilings != NULL) && pd.verdict != LEV_DENY)
		ceiling_permission(env, d, &pd, &rule);
	if (lev_unlikely(pd.verdict != LEV_ALLOW)) {
		permission_not_allowed(d, pd.verdict, rule);
		return;
	}
	/* the rule is the reason: the permission gate approves unless a later gate does */
	step(d, LEV_GATE_PERMISSION, LEV_ALLOW, rule, rule, NULL);
	*approved = perm_chosen(&pd);
}

/* ---- paths, network ----------------------------------------------------- */

/* A path the file tools refuse (where it really leads), or cannot use at all (E). */
static LEV_COLD void refuse_path(struct lev_gatechain_decision *d, enum lev_gate_id gate,
				 struct lev_fs_decision *fd, const struct lev_err *e)
{
	if (e) {
		/* a path no tool can use (empty, a NUL byte, not UTF-8 ...) */
		refuse(d, LEV_GATE_WORKDIR, R(PATH), xasprintf("[error] %s", e->msg), NULL);
		return;
	}
	if (fd->path && fd->path[0] == '/') {
		/* a refused escape is reported where it really leads */
		char *real = lev_perm_real_path(fd->path);

		free(fd->path);
		fd->path = real;
	}
	free(d->path);
	d->path = TAKE_PTR(fd->path);
	refuse(d, gate, gate == LEV_GATE_READ_PATHS ? R(READ_PATHS) : R(CONFINED),
	       xasprintf("[error] %s", fd->reason ? fd->reason : "refused"), d->path);
	/* nothing of a refused call is kept open */
	d->fs = lev_fs_targets_free(d->fs);
}

static void gate_paths(const struct lev_gatechain_env *env, const struct lev_gatechain_call *c,
		       struct lev_gatechain_decision *d, bool *approved)
{
	struct lev_fs_decision fd = { 0 };
	struct lev_err e = LEV_ERR_INIT;
	enum lev_gate_id gate;

	if (lev_unlikely(!env->fs)) {
		lev_err_set(&e, -EINVAL, "this call has no working directory");
		refuse_path(d, LEV_GATE_WORKDIR, NULL, &e);
		return;
	}
	if (lev_unlikely(lev_fs_decide(env->fs, d->canon, c->args, env->real_paths, &fd, &d->fs,
				       &e) < 0)) {
		refuse_path(d, LEV_GATE_WORKDIR, NULL, &e);
		return;
	}
	gate = fd.gate == LEV_FS_GATE_READ_PATHS ? LEV_GATE_READ_PATHS : LEV_GATE_WORKDIR;
	if (lev_unlikely(fd.verdict != LEV_ALLOW)) {
		refuse_path(d, gate, &fd, NULL);
	} else {
		free(d->path);
		d->path = TAKE_PTR(fd.path);
		step(d, gate, LEV_ALLOW, gate == LEV_GATE_READ_PATHS ? R(READ_PATHS_GRANTED)
								     : R(CONFINED),
		     own(d, TAKE_PTR(fd.reason)), d->path);
		if (gate == LEV_GATE_READ_PATHS)
			*approved = true;
	}
	lev_fs_decision_release(&fd);
}

static LEV_NOINLINE void gate_network(const struct lev_gatechain_env *env,
				      const struct lev_gatechain_call *c,
				      struct lev_gatechain_decision *d)
{
	const char *url = arg_str(c->args, "url");

	const char *target = own(d, url ? xstrdup(url) : NULL);

	if (!env->network) {
		refuse(d, LEV_GATE_NETWORK, R(NETWORK_OFF),
		       xasprintf("[denied] '%s' cannot reach the network: stage '%s' runs with "
				 "network = false.", d->canon, env->stage ? env->stage : "?"),
		       target);
		return;
	}
	/* the network gate never approves a call: its reason is not formatted */
	step(d, LEV_GATE_NETWORK, LEV_ALLOW, R(NETWORK_ON), "the stage runs with network = true",
	     target);
}

/* ---- the context ---------------------------------------------------------- */

/* The context's taint: the run's context raised by the caller's floor (unlabelled: private). */
static enum lev_level chain_level(const struct lev_gatechain_env *env)
{
	enum lev_level l = env->taint_level;

	if (lev_unlikely(!env->labelled))
		return LEV_PRIVATE;
	if (env->taint_ctx)
		l = lev_level_max(l, lev_taint_current(env->taint_ctx));
	return l;
}

/* The context's integrity, the same way (unlabelled: untrusted). */
static enum lev_integrity chain_integrity(const struct lev_gatechain_env *env)
{
	if (lev_unlikely(!env->labelled))
		return LEV_UNTRUSTED;
	if (env->taint_ctx && lev_taint_integrity(env->taint_ctx) == LEV_UNTRUSTED)
		return LEV_UNTRUSTED;
	return env->integrity;
}

/* The names of ARGS' arguments from untrusted text (unlabelled: every one) into *OUT. */
static void chain_untrusted_args(const struct lev_gatechain_env *env, const json_t *args,
				 char ***out)
{
	const char *k;
	json_t *v;

	*out = NULL;
	if (!env->labelled) {
		json_object_foreach((json_t *)args, k, v)
			*out = lev_strv_push(*out, k);
		return;
	}
	if (env->provenance)
		lev_provenance_untrusted_args(env->provenance, args, out);
	for (char *const *a = env->untrusted_args; a && *a; a++)
		if (!lev_strv_contains(*out, *a))
			*out = lev_strv_push(*out, *a);
}

/* ---- taint ---------------------------------------------------------------- */

static const char *taint_rule_name(struct lev_gatechain_decision *d, const struct lev_gate_decision *t)
{
	switch (t->source) {
	case LEV_GATE_SRC_ALLOWLIST:
		return own(d, xasprintf("allowlist #%zu", t->rule_index));
	case LEV_GATE_SRC_RULE:
		return own(d, xasprintf("rule %s", t->rule_name ? t->rule_name : "?"));
	default:
		return lev_gate_source_name(t->source);
	}
}

/* The taint gate's one-line reason: it names the levels, not the run's regions
 * (`lev check` has none). */
static const char *taint_reason(struct lev_gatechain_decision *d)
{
	struct lev_buf desc = LEV_BUF_INIT;
	char *regions = d->taint.regions;
	const char *line;

	d->taint.regions = NULL;
	(void)lev_gate_describe(&d->taint, &desc);
	d->taint.regions = regions;
	line = own(d, one_line(desc.buf));
	lev_buf_release(&desc);
	return line;
}

static char *joined(char *const *v)
{
	struct lev_buf b = LEV_BUF_INIT;

	for (; v && *v; v++)
		(void)lev_buf_addf(&b, "%s%s", b.len ? ", " : "", *v);
	return b.len ? lev_buf_detach(&b, NULL) : (lev_buf_release(&b), NULL);
}

/* The taint gate proper, for an outbound tool under taint tracking. */
static LEV_NOINLINE int taint_outbound(const struct lev_gatechain_env *env,
				       const struct lev_gatechain_call *c,
				       struct lev_gatechain_decision *d, bool *approved,
				       struct lev_err *err)
{
	enum lev_level level = chain_level(env);
	struct lev_gate_call gc = {
		.tool = d->canon,
		.args = c->args,
		/* the run's context names its contributors, unless the caller's floor is higher */
		.ctx = env->labelled && env->taint_ctx && lev_taint_current(env->taint_ctx) >= level
			       ? env->taint_ctx : NULL,
		.taint = level,
	};
	const char *rule;
	int r;

	r = lev_gate_check(env->taint, &gc, &d->taint, err);
	if (r < 0) {
		refuse(d, LEV_GATE_TAINT, R(TAINT_ERROR),
		       xasprintf("[blocked] the taint gate failed: %s", err ? err->msg : "?"), NULL);
		return r;
	}
	d->ran_taint = true;
	free(d->host);
	d->host = joined(d->taint.targets);
	rule = taint_rule_name(d, &d->taint);
	if (d->taint.result == LEV_GATE_ALLOWED) {
		step(d, LEV_GATE_TAINT, LEV_ALLOW, rule,
		     own(d, xasprintf("taint: %s", lev_gate_source_name(d->taint.source))),
		     d->host);
		if (d->taint.source == LEV_GATE_SRC_ALLOWLIST || d->taint.source == LEV_GATE_SRC_RULE ||
		    d->taint.source == LEV_GATE_SRC_YOLO || d->taint.source == LEV_GATE_SRC_USER_ONCE ||
		    d->taint.source == LEV_GATE_SRC_USER_RUN)
			*approved = true;
	} else if (d->taint.result == LEV_GATE_NEEDS_USER) {
		step(d, LEV_GATE_TAINT, LEV_ASK, rule, taint_reason(d), d->host);
		d->ask_taint = true;
	} else {
		struct lev_buf full = LEV_BUF_INIT;

		(void)lev_gate_describe(&d->taint, &full);
		refuse(d, LEV_GATE_TAINT, rule,
		       d->taint.source == LEV_GATE_SRC_USER_DENY
			       ? xasprintf("[blocked] %s. Denied by user.", full.buf)
			       : xasprintf("[blocked] %s. Add an allowlist rule with `lev policy add` "
					   "to permit it.", full.buf),
		       d->host);
		/* the one-line reason without the run's regions, as for an ask */
		d->steps[LEV_GATE_TAINT].reason = taint_reason(d);
		lev_buf_release(&full);
	}
	return 0;
}

static int gate_taint(const struct lev_gatechain_env *env, const struct lev_gatechain_call *c,
		      struct lev_gatechain_decision *d, bool *approved, struct lev_err *err)
{
	struct lev_tool_class cls;

	if (d->tool->kind == LEV_TOOL_SHELL && !env->taint_off && env->shell_offline) {
		step(d, LEV_GATE_TAINT, LEV_ALLOW, R(OFFLINE),
		     "taint: not outbound: the stage's sandbox has no network", NULL);
		return 0;
	}
	if (env->taint_off) {
		step(d, LEV_GATE_TAINT, LEV_ALLOW, R(TAINT_DISABLED),
		     "taint: taint tracking is off for this agent", NULL);
		return 0;
	}
	if (lev_unlikely(!env->taint)) {
		/* tracked, and nothing to judge an outbound call by: refused */
		if (!d->tool->outbound && d->tool->kind != LEV_TOOL_SHELL &&
		    d->tool->kind != LEV_TOOL_NET) {
			step(d, LEV_GATE_TAINT, LEV_ALLOW, R(NOT_OUTBOUND),
			     "taint: the tool is not outbound", NULL);
			return 0;
		}
		refuse(d, LEV_GATE_TAINT, R(TAINT_ERROR),
		       xasprintf("[blocked] '%s' is outbound and no taint gate can judge it",
				 d->canon), NULL);
		return 0;
	}
	lev_gate_classify(env->taint, d->canon, &cls);
	if (cls.direction != LEV_DIR_OUTBOUND) {
		step(d, LEV_GATE_TAINT, LEV_ALLOW, R(NOT_OUTBOUND), "taint: the tool is not outbound",
		     NULL);
		return 0;
	}
	return taint_outbound(env, c, d, approved, err);
}

/* ---- integrity ------------------------------------------------------------ */

static bool call_consequential(const struct lev_gatechain_decision *d)
{
	const struct lev_tool_info *ti = d->tool;

	return lev_integrity_tool_consequential(ti->desc, ti->kind == LEV_TOOL_MCP, ti->touches);
}

/* A file tool's path, inside the workdir (*REL) and real (*ABS, owned by the record). */
static void call_paths(const struct lev_gatechain_env *env, struct lev_gatechain_decision *d,
		       const char **rel, const char **abs)
{
	const char *wd = env->fs ? lev_fs_ctx_workdir(env->fs) : NULL;
	const char *p = d->path;
	size_t n;

	*rel = *abs = NULL;
	if (!p)
		return;
	if (p[0] != '/') {
		*rel = p;
		*abs = wd ? own(d, xasprintf("%s/%s", wd, p)) : NULL;
		return;
	}
	*abs = p;
	n = wd ? strlen(wd) : 0;
	if (wd && !strncmp(p, wd, n) && p[n] == '/')
		*rel = p + n + 1;
}

static const char *integ_rule_name(struct lev_gatechain_decision *d)
{
	switch (d->integ.source) {
	case LEV_INTEG_SRC_ALLOW:
		return own(d, xasprintf("integrity allow #%zu", d->integ.rule_index));
	case LEV_INTEG_SRC_RULE:
		return own(d, xasprintf("rule %s", d->integ.rule_name ? d->integ.rule_name : "?"));
	default:
		return lev_integrity_source_name(d->integ.source);
	}
}

/* The call's canonical targets for the rules (the taint gate's, when it ran). */
static char **integ_targets(const struct lev_gatechain_call *c, struct lev_gatechain_decision *d)
{
	char **v = NULL;

	if (d->ran_taint)
		return lev_strv_copy(d->taint.targets);
	if (lev_taint_target_of_json(d->canon, NULL, c->args, &v, NULL) < 0)
		return NULL;
	return v;
}

/* A consequential call in an untrusted context: allowlist, rules, the user. */
static LEV_NOINLINE void integrity_untrusted(const struct lev_gatechain_env *env,
					     const struct lev_gatechain_call *c,
					     struct lev_gatechain_decision *d, bool consequential,
					     bool *approved)
{
	char **targets = integ_targets(c, d);
	struct lev_integrity_call ic = {
		.tool = d->canon,
		.args = c->args,
		.consequential = consequential,
		.integrity = d->integrity,
		.taint = chain_level(env),
		.targets = targets,
	};
	struct lev_buf desc = LEV_BUF_INIT;
	const char *rule;

	chain_untrusted_args(env, c->args, &d->untrusted_args);
	ic.untrusted_args = d->untrusted_args;
	call_paths(env, d, &ic.path_rel, &ic.path_abs);
	lev_integrity_check(env->taint, &ic, &d->integ);
	d->ran_integ = true;
	lev_strv_free(targets);
	rule = integ_rule_name(d);
	(void)lev_integrity_describe(d->canon, &d->integ, &desc);
	if (d->integ.result == LEV_GATE_ALLOWED) {
		step(d, LEV_GATE_INTEGRITY, LEV_ALLOW, rule,
		     own(d, xasprintf("integrity: %s", lev_integrity_source_name(d->integ.source))),
		     d->host ? d->host : d->path);
		*approved = d->integ.source != LEV_INTEG_SRC_NOT_CONSEQUENTIAL;
	} else {
		step(d, LEV_GATE_INTEGRITY, LEV_ASK, rule, own(d, lev_buf_detach(&desc, NULL)),
		     d->host ? d->host : d->path);
		d->ask_integrity = true;
	}
	lev_buf_release(&desc);
}

/* inlined into both callers: the chain's copy stays on the hot path (src/liblev/hot-path.ld) */
static inline __attribute__((always_inline)) void
gate_integrity(const struct lev_gatechain_env *env, const struct lev_gatechain_call *c,
	       struct lev_gatechain_decision *d, bool *approved)
{
	bool consequential;

	d->integrity = chain_integrity(env);
	if (env->taint_off) {
		step(d, LEV_GATE_INTEGRITY, LEV_ALLOW, "integrity_disabled",
		     "integrity: taint tracking is off for this agent", NULL);
		return;
	}
	if (lev_likely(d->integrity == LEV_TRUSTED)) {
		step(d, LEV_GATE_INTEGRITY, LEV_ALLOW, "trusted_context",
		     "integrity: the context holds no untrusted content", NULL);
		return;
	}
	consequential = call_consequential(d);
	/*
	 * a protected file makes any file tool's call consequential, and
	 * policy.toml may say what a run-time tool is: those go to the gate
	 */
	if (!consequential && d->tool->desc &&
	    !(d->tool->kind == LEV_TOOL_FS && (d->tool->touches & LEV_TOUCH_WRITES) && d->path)) {
		step(d, LEV_GATE_INTEGRITY, LEV_ALLOW, "not_consequential",
		     "integrity: the tool is not consequential", NULL);
		return;
	}
	integrity_untrusted(env, c, d, consequential, approved);
}

/* ---- the chain ------------------------------------------------------------ */

/* The verdict when no gate refused: ASK when a gate asks, else ALLOW by APPROVER. */
/* A gate asks (permission first): the verdict ASK, and the text for when nobody can answer. */
static LEV_COLD void conclude_ask(struct lev_gatechain_decision *d)
{
	enum lev_gate_id g = d->ask_permission ? LEV_GATE_PERMISSION
			     : d->ask_taint    ? LEV_GATE_TAINT
					       : LEV_GATE_INTEGRITY;
	const struct lev_gatechain_step *s = &d->steps[g];
	struct lev_buf desc = LEV_BUF_INIT;

	d->verdict = LEV_ASK;
	d->gate = g;
	d->rule = s->rule ? s->rule : "";
	d->reason = s->reason ? s->reason : "";
	if (g == LEV_GATE_PERMISSION) {
		d->text = xasprintf("[denied] Tool '%s' needs approval (%s) and nobody can "
				    "answer here; the user can allow it with --allow %s.",
				    d->canon, d->perm_why, d->canon);
	} else if (g == LEV_GATE_TAINT) {
		(void)lev_gate_describe(&d->taint, &desc);
		d->text = xasprintf("[blocked] %s. Add an allowlist rule with `lev policy "
				    "add` to permit it.", desc.buf);
	} else {
		(void)lev_integrity_describe(d->canon, &d->integ, &desc);
		d->text = xasprintf("[blocked] %s, and nobody can answer here. An "
				    "[[integrity.allow]] entry in policy.toml or a rule can "
				    "permit it.", desc.buf);
	}
	lev_buf_release(&desc);
}

/* The verdict when no gate refused: ASK when a gate asks, else ALLOW by APPROVER. */
static void conclude(struct lev_gatechain_decision *d, enum lev_gate_id approver)
{
	const struct lev_gatechain_step *s;

	if (lev_unlikely(d->ask_permission || d->ask_taint || d->ask_integrity)) {
		conclude_ask(d);
		return;
	}
	d->verdict = LEV_ALLOW;
	d->gate = approver;
	s = &d->steps[approver];
	d->rule = s->rule;
	d->reason = s->reason ? s->reason : "every gate allows it";
}

/*
 * A redirect hop of an allowed network call: the taint and integrity gates
 * judge it as a web_fetch of URL (the hop is a GET of it) in the same
 * environment as the call, so an allowlist entry, [[integrity.allow]] entry
 * or rule for the first host does not carry over to wherever that host
 * sends the call.  URL_UNTRUSTED: the hop's URL came from a reply no source
 * label trusts (the Location header), so "url" counts as untrusted.
 */
void lev_gatechain_redirect(const struct lev_gatechain_env *env, const char *url,
			    bool url_untrusted, struct lev_gatechain_decision *d)
{
	static char *const url_arg[] = { (char *)"url", NULL };
	struct lev_gatechain_env e = *env;
	json_t *args = json_pack("{s:s}", "url", url ? url : "");
	struct lev_gatechain_call c = { .args = args };
	enum lev_gate_id approver = LEV_GATE_INTEGRITY;
	struct lev_err err = LEV_ERR_INIT;
	bool ok = false;

	memset(d, 0, sizeof(*d));
	d->verdict = LEV_ALLOW;
	d->taint_level = chain_level(env);
	d->integrity = chain_integrity(env);
	c.name = d->canon = lev_tooltable_name(LEV_OP_WEB_FETCH);
	d->tool = (env->tools ? lev_tools_find(env->tools, d->canon) : NULL);
	if (!d->tool || !args) {
		/* no web_fetch entry to judge the hop by: refuse it */
		step(d, LEV_GATE_INTEGRITY, LEV_DENY, "none", "integrity: the hop cannot be judged",
		     NULL);
		d->verdict = LEV_DENY;
		d->gate = LEV_GATE_INTEGRITY;
		d->rule = "none";
		d->reason = d->steps[LEV_GATE_INTEGRITY].reason;
		json_decref(args);
		return;
	}
	d->host = url ? xstrdup(url) : NULL;
	if (url_untrusted) {
		e.provenance = NULL;
		e.untrusted_args = url_arg;
	}
	if (gate_taint(&e, &c, d, &ok, &err) < 0 || d->verdict == LEV_DENY) {
		d->rule = d->steps[d->gate].rule;
		d->reason = d->steps[d->gate].reason ? d->steps[d->gate].reason : "refused";
		json_decref(args);
		return;
	}
	if (ok)
		approver = LEV_GATE_TAINT;
	ok = false;
	gate_integrity(&e, &c, d, &ok);
	if (ok)
		approver = LEV_GATE_INTEGRITY;
	conclude(d, approver);
	json_decref(args);
}

int lev_gatechain_flow(const struct lev_gatechain_env *env, const char *tool, const json_t *args,
		       char *const *targets, bool targets_given, bool integrity,
		       struct lev_gate_decision *td, struct lev_integrity_decision *id,
		       struct lev_err *err)
{
	enum lev_level level = chain_level(env);
	const struct lev_tool_desc *known = lev_tooltable_find(tool);
	struct lev_gate_call gc = {
		.tool = tool,
		.args = args,
		.targets_given = targets_given,
		.targets = targets,
		.ctx = env->labelled && env->taint_ctx && lev_taint_current(env->taint_ctx) >= level
			       ? env->taint_ctx : NULL,
		.taint = level,
	};
	struct lev_integrity_call ic = { .tool = lev_tool_canonical(tool), .args = args };
	char **untrusted = NULL;
	int r;

	r = lev_gate_check(env->taint, &gc, td, err);
	if (r < 0 || !integrity)
		return r;
	chain_untrusted_args(env, args, &untrusted);
	ic.consequential = lev_integrity_tool_consequential(known, !known, 0);
	ic.integrity = chain_integrity(env);
	ic.taint = td->taint;
	ic.targets = td->targets;
	ic.untrusted_args = untrusted;
	ic.path_rel = arg_str(args, "path");
	lev_integrity_check(env->taint, &ic, id);
	lev_strv_free(untrusted);
	return 0;
}

/* A shell call's line, parsed into its keys once for every gate. */
static LEV_NOINLINE void parse_line(const struct lev_gatechain_call *c,
				    struct lev_gatechain_decision *d)
{
	const json_t *cmd = json_object_get(c->args, "command");
	const char *s = json_string_value(cmd);

	/* a NUL inside the command is unreadable, not a shorter command */
	lev_shellkeys_parse(s && strlen(s) == json_string_length(cmd) ? s : NULL, &d->sk);
	d->have_sk = true;
}

int lev_gatechain_decide(const struct lev_gatechain_env *env, const struct lev_gatechain_call *c,
			 struct lev_gatechain_decision *d, struct lev_err *err)
{
	enum lev_gate_id approver = LEV_GATE_PERMISSION;
	struct lev_gatechain_call canon = *c;
	bool ok = false;
	int r = 0;

	memset(d, 0, sizeof(*d));
	d->verdict = LEV_ALLOW;
	/* the context as decided under, whichever gate decides (a refusal's record too) */
	d->taint_level = chain_level(env);
	d->integrity = chain_integrity(env);
	d->canon = c->name ? lev_tool_canonical(c->name) : "";
	d->tool = (env->tools ? lev_tools_find(env->tools, d->canon) : NULL);
	if (d->tool)
		d->canon = d->tool->name;

	/* offered, then schema: nothing else can be asked of a call that fails them */
	if (lev_unlikely(!gate_offered(env, c, d) || !canon_args(c, d)))
		goto done;
	/* from here on every gate sees the arguments under their canonical names */
	canon.args = d->args;
	c = &canon;
	if (lev_unlikely(!gate_schema(c, d)))
		goto done;
	if (d->tool->kind == LEV_TOOL_SHELL)
		parse_line(c, d);
	if (lev_unlikely(env->mode == LEV_GATECHAIN_COMMAND_SEED)) {
		gate_seed(env, arg_str(c->args, "command") ? arg_str(c->args, "command") : "", d);
		if (d->verdict == LEV_DENY)
			goto done;
		approver = LEV_GATE_SEED;
	}

	/* every other gate, stopping at the first refusal (nothing after it could lift it) */
	if (d->have_sk) {
		r = gate_redirect(env, d, err);
		if (r < 0 || d->verdict == LEV_DENY)
			goto done;
	}
	if (env->mode != LEV_GATECHAIN_COMMAND_SEED) {
		ok = false;
		gate_permission(env, d, &ok);
		if (lev_unlikely(d->verdict == LEV_DENY))
			goto done;
		if (ok)
			approver = LEV_GATE_PERMISSION;
	}
	if (d->tool->kind == LEV_TOOL_FS) {
		ok = false;
		gate_paths(env, c, d, &ok);
		if (lev_unlikely(d->verdict == LEV_DENY))
			goto done;
		if (ok)
			approver = LEV_GATE_READ_PATHS;
	}
	if (d->tool->kind == LEV_TOOL_NET) {
		gate_network(env, c, d);
		if (d->verdict == LEV_DENY)
			goto done;
	}
	ok = false;
	r = gate_taint(env, c, d, &ok, err);
	if (lev_unlikely(r < 0 || d->verdict == LEV_DENY))
		goto done;
	if (ok)
		approver = LEV_GATE_TAINT;
	ok = false;
	gate_integrity(env, c, d, &ok);
	if (ok)
		approver = LEV_GATE_INTEGRITY;
	conclude(d, approver);
	return 0;
done:
	if (d->verdict == LEV_DENY) {
		const struct lev_gatechain_step *s = &d->steps[d->gate];

		d->rule = s->rule;
		d->reason = s->reason ? s->reason : "refused";
		d->fs = lev_fs_targets_free(d->fs);
	}
	return r;
}

/* ---- the stage's offer, the shell's network ------------------------------- */

char **lev_gatechain_offered(const struct lev_tools *tools, const struct lev_stage *st,
			     bool can_ask, bool unattended, char **list, char ***skipped)
{
	struct lev_buf b = LEV_BUF_INIT;
	char **offered = NULL;

	for (char **t = st->available_tools; t && *t; t++) {
		const struct lev_tool_info *ti = lev_tools_find(tools, *t);

		if (!ti) {
			if (skipped)
				*skipped = lev_strv_push_take(
					*skipped, xasprintf("%s\twhich lev does not provide", *t));
			continue;
		}
		if (ti->kind == LEV_TOOL_ASK && !can_ask) {
			if (skipped)
				*skipped = lev_strv_push_take(
					*skipped, xasprintf("%s\tbut nobody can answer a question in "
							    "this run (no terminal)", *t));
			continue;
		}
		if (ti->kind == LEV_TOOL_ASK && unattended &&
		    !lev_strv_contains(st->required_tools, ti->name)) {
			if (skipped)
				*skipped = lev_strv_push_take(
					*skipped, xasprintf("%s\tbut the run is unattended (--yolo): "
							    "nobody is watching", *t));
			continue;
		}
		if (!lev_strv_contains(offered, ti->name))
			offered = lev_strv_push(offered, ti->name);
	}
	/* available_connectors: every tool of the named MCP servers */
	for (size_t i = 0; st->available_connectors && i < lev_tools_count(tools); i++) {
		const struct lev_tool_info *ti = lev_tools_at(tools, i);

		if (ti->group && lev_strv_contains(st->available_connectors, ti->group) &&
		    !lev_strv_contains(offered, ti->name))
			offered = lev_strv_push(offered, ti->name);
	}
	if ((st->require_output || st->mode == LEV_MODE_OUTPUT) &&
	    !lev_strv_contains(offered, lev_tooltable_name(LEV_OP_SUBMIT_OUTPUT)))
		offered = lev_strv_push(offered, lev_tooltable_name(LEV_OP_SUBMIT_OUTPUT));
	for (char **t = offered; t && *t; t++)
		(void)lev_buf_addf(&b, "%s%s", b.len ? ", " : "", *t);
	*list = lev_buf_detach(&b, NULL);
	return offered;
}

bool lev_gatechain_shell_offline(const struct lev_sandbox_spec *eff, const struct lev_sandbox *sb)
{
	enum lev_sandbox_kind k = sb ? lev_sandbox_kind(sb) : eff->kind;

	if (eff->network)
		return false;
	if (k == LEV_SANDBOX_NAMESPACE)
		return sb && (lev_sandbox_layers(sb) & LEV_LAYER_NETNS) != 0;
	return k == LEV_SANDBOX_CONTAINER;
}

bool lev_gatechain_fenced(const struct lev_sandbox_spec *eff, const struct lev_sandbox *sb)
{
	if (!sb)
		return eff->kind != LEV_SANDBOX_NONE;
	return (lev_sandbox_layers(sb) & (LEV_LAYER_MOUNTNS | LEV_LAYER_LANDLOCK |
					  LEV_LAYER_CONTAINER)) != 0;
}

/* ---- the one builder of the chain's inputs -------------------------------- */

void lev_gatechain_env_build(struct lev_gatechain_env *env, const struct lev_gatechain_site *site,
			     enum lev_gatechain_mode mode, const char *home,
			     const struct lev_gatechain_ctx *ctx)
{
	bool seed = mode == LEV_GATECHAIN_COMMAND_SEED;

	memset(env, 0, sizeof(*env));
	env->tools = site->tools;
	env->stage = site->stage;
	env->offered = site->offered;
	env->offered_list = site->offered_list;
	env->mode = mode;
	env->seed_commands = site->seed_commands;
	env->seed_off_why = site->seed_off_why;
	/* a command seed answers to the safe lists alone, with no grants */
	env->perm = seed ? site->safe_only : site->perm;
	env->grants = seed ? NULL : site->grants;
	env->ceilings = site->ceilings;
	env->fs = site->fs;
	env->home = home;
	env->real_paths = site->real_paths;
	if (site->eff) {
		/* the kind in force: a container that fell back to the host is kind none */
		env->kind = site->sb ? lev_sandbox_kind(site->sb) : site->eff->kind;
		env->network = site->eff->network;
		/* what the sandbox actually has in force; one that could not be set up, nothing */
		if (site->sb || site->eff->kind != LEV_SANDBOX_NAMESPACE) {
			env->shell_offline = lev_gatechain_shell_offline(site->eff, site->sb);
			env->fenced = lev_gatechain_fenced(site->eff, site->sb);
		}
	}
	env->landlock = site->landlock;
	env->taint = site->taint;
	env->taint_off = !site->taint_enabled;
	if (!ctx)
		return;	/* nobody said what the context holds: private and untrusted */
	env->labelled = true;
	env->taint_ctx = ctx->taint_ctx;
	env->taint_level = ctx->taint;
	env->integrity = ctx->integrity;
	env->provenance = ctx->provenance;
	env->untrusted_args = ctx->untrusted_args;
}
