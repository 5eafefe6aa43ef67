/*
 * perm.c - tool permission resolution, the effect clamp, safe-list and
 * grant coverage, the grant store, and the account of each decision.
 * See perm.h for the rules.  Nothing here reads the config or the
 * blueprint (perm-config.c builds the input), and resolution does not
 * allocate: it runs on every tool call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/policy/perm.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"

/*
 * The reviewed list is the tool table's LEV_TOOLF_DEFAULT_ALLOW (tooltable.h):
 * exact names only, so a script or MCP tool whose name merely looks like one
 * ("context_exfiltrate") gets no default allow.
 */
static enum lev_verdict default_of(const struct lev_tool_desc *d)
{
	return d && (d->flags & LEV_TOOLF_DEFAULT_ALLOW) ? LEV_ALLOW : LEV_ASK;
}

enum lev_verdict lev_perm_default(const char *tool)
{
	return default_of(lev_tooltable_find(tool));
}

/* Does the tool spelled WRITTEN name CANON, the canonical name of D (NULL: unknown)? */
static inline bool names(const char *written, const char *canon, const struct lev_tool_desc *d)
{
	if (!strcmp(written, canon))
		return true;
	for (const char *const *al = d ? d->aliases : NULL; al && *al; al++)
		if (!strcmp(written, *al))
			return true;
	return false;
}

/* The strictest entry of V for the canonical tool CANON, or NULL. */
static const struct lev_perm_rule *lookup(const struct lev_perm_rule *v, size_t n,
					  const char *canon, const struct lev_tool_desc *d)
{
	const struct lev_perm_rule *best = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].tool && names(v[i].tool, canon, d) &&
		    (!best || v[i].verdict > best->verdict))
			best = &v[i];
	return best;
}

/* The launch override for CANON: the --allow spelling, "--yolo", or NULL. */
static const char *launch_for(const struct lev_perm_input *in, const char *canon,
			      const struct lev_tool_desc *d)
{
	const char *const *a;

	for (a = in->allow; a && *a; a++)
		if (names(*a, canon, d))
			return *a;
	return in->yolo ? "--yolo" : NULL;
}

void lev_perm_resolve(const struct lev_perm_input *in, const char *tool,
		      struct lev_perm_resolution *out)
{
	const struct lev_tool_desc *d = lev_tooltable_find(tool);
	const char *canon = d ? d->name : tool;
	const struct lev_perm_rule *ceil, *glob, *bp;
	enum lev_verdict def;

	memset(out, 0, sizeof(*out));
	out->tool = canon;
	ceil = lookup(in->user_agent, in->n_user_agent, canon, d);
	glob = lookup(in->user_global, in->n_user_global, canon, d);
	if (ceil && in->user_agent_tighten_only &&
	    ceil->verdict < (glob ? glob->verdict : default_of(d)))
		ceil = NULL;	/* it would loosen, for a blueprint that only claims the name */
	if (!ceil)
		ceil = glob;
	bp = lookup(in->bp_stage, in->n_bp_stage, canon, d);
	if (!bp)
		bp = lookup(in->bp_agent, in->n_bp_agent, canon, d);

	if (bp && ceil) {
		if (bp->verdict > ceil->verdict) {
			out->configured_why = LEV_PERM_WHY_BLUEPRINT;
			out->rule = bp;
		} else {
			out->configured_why = LEV_PERM_WHY_USER;
			out->rule = ceil;
			if (bp->verdict < ceil->verdict)
				out->capped = bp;
		}
		out->configured = out->rule->verdict;
	} else if (bp) {
		def = default_of(d);
		if (in->blueprint_may_loosen || (d && (d->flags & LEV_TOOLF_BLUEPRINT_ALLOW)) ||
		    bp->verdict >= def) {
			out->configured_why = LEV_PERM_WHY_BLUEPRINT;
			out->rule = bp;
			out->configured = bp->verdict;
		} else {
			out->configured_why = LEV_PERM_WHY_DEFAULT;
			out->capped = bp;
			out->configured = def;
		}
	} else if (ceil) {
		out->configured_why = LEV_PERM_WHY_USER;
		out->rule = ceil;
		out->configured = ceil->verdict;
	} else {
		out->configured_why = LEV_PERM_WHY_DEFAULT;
		out->configured = default_of(d);
	}

	out->verdict = out->configured;
	out->why = out->configured_why;
	out->launch = launch_for(in, canon, d);
	if (out->configured == LEV_DENY || !out->launch)
		return; /* deny is final; launch stays recorded to say it was refused */
	if (out->configured != LEV_ALLOW) {
		out->verdict = LEV_ALLOW;
		out->why = LEV_PERM_WHY_LAUNCH;
	} else {
		out->launch = NULL; /* the configuration already allowed it */
	}
}

/* ---- grants ------------------------------------------------------------------ */

void lev_grants_init(struct lev_grants *g)
{
	g->stage = NULL;
	g->run = NULL;
	g->stage_index = -1;
}

void lev_grants_release(struct lev_grants *g)
{
	g->stage = lev_strv_free(g->stage);
	g->run = lev_strv_free(g->run);
	g->stage_index = -1;
}

void lev_grants_enter_stage(struct lev_grants *g, long index)
{
	if (index != g->stage_index)
		g->stage = lev_strv_free(g->stage);
	g->stage_index = index;
}

int lev_grants_add(struct lev_grants *g, enum lev_grant_scope scope, char *const *keys)
{
	char ***v;
	size_t have, add = 0;

	if (scope == LEV_GRANT_ONCE || !keys)
		return 0;
	v = scope == LEV_GRANT_STAGE ? &g->stage : &g->run;
	have = lev_strv_len(g->stage) + lev_strv_len(g->run);
	for (; *keys; keys++) {
		if (lev_strv_contains(*v, *keys))
			continue;
		if (have + add >= LEV_GRANTS_MAX)
			return -E2BIG;
		*v = lev_strv_push(*v, *keys);
		add++;
	}
	return 0;
}

bool lev_grants_has(const struct lev_grants *g, const char *key)
{
	return g && (lev_strv_contains(g->stage, key) || lev_strv_contains(g->run, key));
}

/* ---- one call ------------------------------------------------------------------ */

char **lev_perm_call_keys(const char *tool, const struct lev_shellkeys *sk)
{
	const char *canon = lev_tool_canonical(tool);

	if (!lev_tooltable_touches(canon, LEV_TOUCH_SHELL))
		return lev_strv_push(NULL, canon);
	if (!sk || !sk->grantable)
		return NULL;
	return lev_strv_copy(sk->keys);
}

static void note_source(struct lev_perm_decision *d, const char *source)
{
	size_t i;

	for (i = 0; i < d->n_safe_sources; i++)
		if (!strcmp(d->safe_sources[i], source))
			return;
	if (d->n_safe_sources < LEV_PERM_MAX_SOURCES)
		d->safe_sources[d->n_safe_sources++] = source;
}

/* Is KEY covered: exactly on a safe list, by its program, or by a grant? */
static bool covered(const struct lev_perm_input *in, const struct lev_grants *grants,
		    const char *key, const char *outside, struct lev_perm_decision *d)
{
	bool program = lev_shellkeys_is_program_key(key);
	const char *sp = program ? strchr(key, ' ') : NULL;
	size_t plen = sp ? (size_t)(sp - key) : 0;
	size_t i;

	for (i = 0; i < in->n_safe; i++) {
		const char *s = in->safe[i].key;

		if (!s)
			continue;
		if (!strcmp(s, key) || (plen && strlen(s) == plen && !strncmp(s, key, plen))) {
			/* read-only is not confined: a safe list covers the workdir only */
			if (outside) {
				d->safe_outside = outside;
				break;
			}
			note_source(d, in->safe[i].source ? in->safe[i].source : "safe commands");
			return true;
		}
	}
	if (lev_grants_has(grants, key)) {
		d->by_grant = true;
		return true;
	}
	return false;
}

void lev_perm_decide(const struct lev_perm_input *in, const char *tool,
		     const struct lev_shellkeys *sk, const struct lev_grants *grants,
		     struct lev_perm_decision *out)
{
	bool shell;

	memset(out, 0, sizeof(*out));
	lev_perm_resolve(in, tool, &out->own);
	out->verdict = out->own.verdict;
	out->why = out->own.why;
	shell = lev_tooltable_touches(out->own.tool, LEV_TOUCH_SHELL);

	/* A shell line that writes a file answers to write_file as well. */
	if (shell && sk && sk->writes && out->verdict != LEV_DENY) {
		lev_perm_resolve(in, lev_tooltable_name(LEV_OP_WRITE_FILE), &out->write);
		if (out->write.verdict > out->verdict) {
			out->write_clamp = true;
			out->verdict = out->write.verdict;
			out->why = LEV_PERM_WHY_CLAMP;
		}
	}

	if (out->verdict != LEV_ASK)
		return;
	if (shell) {
		char *const *k;

		if (!sk || !sk->grantable || !sk->keys || !sk->keys[0])
			return;
		for (k = sk->keys; *k; k++)
			if (!covered(in, grants, *k, sk->reads_outside, out))
				goto not_covered;
	} else if (!covered(in, grants, out->own.tool, NULL, out)) {
		goto not_covered;
	}
	out->verdict = LEV_ALLOW;
	out->why = LEV_PERM_WHY_COVERED;
	return;
not_covered:
	out->n_safe_sources = 0;
	out->by_grant = false;
}

/* ---- accounts ------------------------------------------------------------------- */

/*
 * "SOURCE TOOL = \"VERDICT\"".  Every call's account starts with one, so it
 * is put together from its pieces, without printf.
 */
static int rule_text(struct lev_buf *b, enum lev_perm_why why, const struct lev_perm_rule *rule,
		     const char *tool, enum lev_verdict v)
{
	const char *source = "built-in default";
	int e = 0;

	if (why != LEV_PERM_WHY_DEFAULT && rule) {
		source = rule->source ? rule->source : "(unknown)";
		tool = rule->tool;
		v = rule->verdict;
	}
	e |= lev_buf_adds(b, source);
	e |= lev_buf_addch(b, ' ');
	e |= lev_buf_adds(b, tool);
	e |= lev_buf_adds(b, " = \"");
	e |= lev_buf_adds(b, lev_verdict_name(v));
	e |= lev_buf_addch(b, '"');
	return e;
}

/* "--allow shell (over " or "--yolo (over " */
static int launch_text(struct lev_buf *b, const char *launch)
{
	int e = 0;

	if (!strcmp(launch, "--yolo"))
		return lev_buf_adds(b, "--yolo (over ");
	e |= lev_buf_adds(b, "--allow ");
	e |= lev_buf_adds(b, launch);
	e |= lev_buf_adds(b, " (over ");
	return e;
}

/* The rare additions to an account: a capped entry, a final deny. */
static __attribute__((cold, noinline)) int limits_text(struct lev_buf *b,
						       const struct lev_perm_resolution *r)
{
	int e = 0;

	if (r->capped)
		e |= lev_buf_addf(b, "; %s %s = \"%s\" cannot loosen it",
				  r->capped->source ? r->capped->source : "the blueprint's entry",
				  r->capped->tool, lev_verdict_name(r->capped->verdict));
	if (r->verdict == LEV_DENY && r->launch)
		e |= lev_buf_addf(b, "; a deny is final: %s does not lift it",
				  strcmp(r->launch, "--yolo") ? "--allow" : "--yolo");
	return e;
}

static int resolution_text(struct lev_buf *b, const struct lev_perm_resolution *r)
{
	int e = 0;

	if (r->why == LEV_PERM_WHY_LAUNCH)
		e |= launch_text(b, r->launch);
	e |= rule_text(b, r->configured_why, r->rule, r->tool, r->configured);
	if (r->why == LEV_PERM_WHY_LAUNCH)
		e |= lev_buf_addch(b, ')');
	if (r->capped || (r->verdict == LEV_DENY && r->launch))
		e |= limits_text(b, r);
	return e ? -E2BIG : 0;
}

int lev_perm_describe(const struct lev_perm_decision *d, struct lev_buf *out)
{
	int e = 0;
	size_t i;

	if (d->why == LEV_PERM_WHY_COVERED) {
		e |= lev_buf_adds(out, "every key of the call is covered by ");
		for (i = 0; i < d->n_safe_sources; i++) {
			e |= lev_buf_adds(out, i ? ", " : "the safe commands of ");
			e |= lev_buf_adds(out, d->safe_sources[i]);
		}
		if (d->by_grant)
			e |= lev_buf_adds(out, d->n_safe_sources ? " and a grant" : "a grant");
		e |= lev_buf_adds(out, " (otherwise: ");
	}
	if (d->write_clamp) {
		e |= lev_buf_adds(out, "the line writes a file, so write_file's rule applies: ");
		e |= resolution_text(out, &d->write);
		e |= lev_buf_adds(out, "; shell alone: ");
	}
	e |= resolution_text(out, &d->own);
	if (d->why == LEV_PERM_WHY_COVERED)
		e |= lev_buf_addch(out, ')');
	else if (d->safe_outside && d->verdict == LEV_ASK)
		e |= lev_buf_addf(out, "; the safe commands do not cover it: it names '%.200s', "
				  "outside the working directory",
				  d->safe_outside);
	return e ? -E2BIG : 0;
}

/* ---- the write fence ---------------------------------------------------------- */

enum lev_verdict lev_perm_fence_check(const struct lev_shellkeys *sk, enum lev_sandbox_kind kind,
				      bool fenced, struct lev_buf *why)
{
	if (!sk || !sk->needs_fence || (kind != LEV_SANDBOX_NONE && fenced))
		return LEV_ALLOW;
	if (why)
		(void)lev_buf_addf(why,
				   "this line cannot be fully analysed before it runs (%s), so it "
				   "runs only inside a sandbox that keeps writes in the working "
				   "directory (kind = \"namespace\" or \"container\"); %s, and "
				   "no approval or --yolo lifts this",
				   sk->fence_reason ? sk->fence_reason : "it cannot be read",
				   kind == LEV_SANDBOX_NONE
					   ? "this stage runs with kind = \"none\""
					   : "this stage's sandbox runs without its write fence");
	return LEV_DENY;
}
