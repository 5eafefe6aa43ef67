/*
 * tighter.c - the tighter of two configs, field by field (see tighter.h).
 */
#include <stdlib.h>
#include <string.h>

#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/xalloc.h"
#include "liblev/base/cleanup.h"
#include "liblev/policy/integrity.h"
#include "liblev/policy/tighter.h"

enum lev_verdict lev_policy_default_verdict(const char *tool)
{
	const struct lev_tool_desc *d = lev_tooltable_find(tool);

	return d && (d->flags & LEV_TOOLF_DEFAULT_ALLOW) ? LEV_ALLOW : LEV_ASK;
}

static bool same_tool(const char *a, const char *b)
{
	const struct lev_tool_desc *x = lev_tooltable_find(a), *y = lev_tooltable_find(b);

	return x && y ? x == y : !strcmp(a, b);
}

static const struct lev_tool_perm *perm_find(const struct lev_tool_perms *t, const char *tool)
{
	const struct lev_tool_perm *found = NULL;

	/* a table naming a tool twice (two spellings) holds the stricter */
	for (size_t i = 0; i < t->n; i++)
		if (same_tool(t->v[i].tool, tool) && (!found || t->v[i].verdict > found->verdict))
			found = &t->v[i];
	return found;
}

static enum lev_verdict verdict_max(enum lev_verdict a, enum lev_verdict b)
{
	return a > b ? a : b;
}

static void perms_tighter(struct lev_tool_perms *run, const struct lev_tool_perms *next)
{
	size_t n = run->n;

	for (size_t i = 0; i < n; i++) {
		const struct lev_tool_perm *p = perm_find(next, run->v[i].tool);
		enum lev_verdict other = p ? p->verdict
					   : lev_policy_default_verdict(run->v[i].tool);

		run->v[i].verdict = verdict_max(run->v[i].verdict, other);
	}
	for (size_t i = 0; i < next->n; i++) {
		const struct lev_tool_perm *p = perm_find(run, next->v[i].tool);
		enum lev_verdict v;

		if (p)
			continue;	/* met above */
		v = verdict_max(next->v[i].verdict, lev_policy_default_verdict(next->v[i].tool));
		if (v == lev_policy_default_verdict(next->v[i].tool))
			continue;	/* no tighter than saying nothing */
		run->v = xreallocarray(run->v, run->n + 1, sizeof(*run->v));
		run->v[run->n].tool = xstrdup(next->v[i].tool);
		run->v[run->n].verdict = v;
		run->n++;
	}
}

/* Keep in *RUN only what NEXT holds too. */
static void strv_intersect(char ***run, char *const *next)
{
	char **kept = NULL;

	for (char **p = *run; p && *p; p++)
		if (lev_strv_contains(next, *p))
			kept = lev_strv_push(kept, *p);
	lev_strv_free(*run);
	*run = kept;
}

static void strv_union(char ***run, char *const *next)
{
	for (char *const *p = next; p && *p; p++)
		if (!lev_strv_contains(*run, *p))
			*run = lev_strv_push(*run, *p);
}

static int shell_env_rank(enum lev_shell_env e)
{
	switch (e) {
	case LEV_SHELL_ENV_INHERIT:
		return 0;
	case LEV_SHELL_ENV_CUSTOM:
		return 1;
	case LEV_SHELL_ENV_FILTERED:
		return 2;
	default:
		return 3;
	}
}

static void shell_env_tighter(struct lev_config *run, const struct lev_config *next)
{
	if (run->shell_env == LEV_SHELL_ENV_CUSTOM && next->shell_env == LEV_SHELL_ENV_CUSTOM)
		strv_union(&run->shell_env_withhold, next->shell_env_withhold);
	else if (shell_env_rank(next->shell_env) > shell_env_rank(run->shell_env))
		run->shell_env = next->shell_env;
}

static void sandbox_tighter(struct lev_sandbox_spec *run, const struct lev_sandbox_spec *next)
{
	if (run->has_kind && next->has_kind && next->kind > run->kind)
		run->kind = next->kind;
	if (next->has_network && !next->network) {
		run->has_network = true;
		run->network = false;
	}
}

/* The lower of two limits; 0 is "no limit" and loses to any. */
static void limit_lower(uint64_t *run, uint64_t next)
{
	if (next && (!*run || next < *run))
		*run = next;
}

static void limits_tighter(struct lev_limits *run, const struct lev_limits *next)
{
	limit_lower(&run->script_shell_timeout_secs, next->script_shell_timeout_secs);
	limit_lower(&run->shell_timeout_secs, next->shell_timeout_secs);
	limit_lower(&run->interaction_timeout_secs, next->interaction_timeout_secs);
	limit_lower(&run->max_tool_call_write_bytes, next->max_tool_call_write_bytes);
	limit_lower(&run->max_run_write_bytes, next->max_run_write_bytes);
	limit_lower(&run->max_tool_output_bytes, next->max_tool_output_bytes);
	limit_lower(&run->max_iterations, next->max_iterations);
}

/* Every agent either side names in a per-agent table (a fresh strv). */
static char **agents_named(const struct lev_config *run, const struct lev_config *next)
{
	const struct lev_config *sides[] = { run, next };
	char **names = NULL;

	for (size_t s = 0; s < 2; s++) {
		const struct lev_config *c = sides[s];
		const char *n;

		for (size_t i = 0; i < c->n_agent_tool_permissions; i++)
			if (!lev_strv_contains(names, (n = c->agent_tool_permissions[i].agent)))
				names = lev_strv_push(names, n);
		for (size_t i = 0; i < c->n_agent_read_paths; i++)
			if (!lev_strv_contains(names, (n = c->agent_read_paths[i].agent)))
				names = lev_strv_push(names, n);
		for (size_t i = 0; i < c->n_agent_safe_commands; i++)
			if (!lev_strv_contains(names, (n = c->agent_safe_commands[i].agent)))
				names = lev_strv_push(names, n);
	}
	return names;
}

static void agent_perms_set(struct lev_config *c, const char *agent, struct lev_tool_perms *p)
{
	struct lev_agent_tool_perms *e = NULL;

	for (size_t i = 0; i < c->n_agent_tool_permissions && !e; i++)
		if (!strcmp(c->agent_tool_permissions[i].agent, agent))
			e = &c->agent_tool_permissions[i];
	if (!e) {
		c->agent_tool_permissions = xreallocarray(c->agent_tool_permissions,
							  c->n_agent_tool_permissions + 1,
							  sizeof(*e));
		e = &c->agent_tool_permissions[c->n_agent_tool_permissions++];
		e->agent = xstrdup(agent);
	} else {
		lev_tool_perms_release(&e->perms);
	}
	e->perms = *p;
}

static void agent_reads_set(struct lev_config *c, const char *agent, char **allow)
{
	struct lev_agent_read_paths *e = NULL;

	for (size_t i = 0; i < c->n_agent_read_paths && !e; i++)
		if (!strcmp(c->agent_read_paths[i].agent, agent))
			e = &c->agent_read_paths[i];
	if (!e) {
		c->agent_read_paths = xreallocarray(c->agent_read_paths, c->n_agent_read_paths + 1,
						    sizeof(*e));
		e = &c->agent_read_paths[c->n_agent_read_paths++];
		e->agent = xstrdup(agent);
	} else {
		lev_strv_free(e->allow);
	}
	e->allow = allow;
}

static struct lev_agent_safe_commands *agent_safe_entry(struct lev_config *c, const char *agent)
{
	struct lev_agent_safe_commands *e = NULL;

	for (size_t i = 0; i < c->n_agent_safe_commands && !e; i++)
		if (!strcmp(c->agent_safe_commands[i].agent, agent))
			e = &c->agent_safe_commands[i];
	if (!e) {
		c->agent_safe_commands = xreallocarray(c->agent_safe_commands,
						       c->n_agent_safe_commands + 1, sizeof(*e));
		e = &c->agent_safe_commands[c->n_agent_safe_commands++];
		memset(e, 0, sizeof(*e));
		e->agent = xstrdup(agent);
	}
	return e;
}

/*
 * The per-agent tables, before the machine-wide fields change: for each
 * agent either side names, its table becomes the tighter of what each
 * side gives that agent (its own entries over the machine-wide ones), so
 * [agent_tool_permissions.X] shell = "deny" added mid-run reaches X, and a
 * read grant or safe command either side lacks is gone for X.
 */
static void agents_tighter(struct lev_config *run, const struct lev_config *next)
{
	_cleanup_strv_ char **names = agents_named(run, next);

	for (char **a = names; a && *a; a++) {
		struct lev_tool_perms pr, pn;
		bool dr, dn;
		char **rt, **rs, **nt, **ns, **gr, **gn;
		struct lev_agent_safe_commands *sc;
		bool honour = lev_config_honours_blueprint_safe_commands(run, *a) &&
			      lev_config_honours_blueprint_safe_commands(next, *a);

		lev_config_permissions_for_agent(run, *a, &pr);
		lev_config_permissions_for_agent(next, *a, &pn);
		perms_tighter(&pr, &pn);
		lev_tool_perms_release(&pn);
		agent_perms_set(run, *a, &pr);

		gr = lev_config_read_path_grants_for_agent(run, *a);
		gn = lev_config_read_path_grants_for_agent(next, *a);
		strv_intersect(&gr, gn);
		lev_strv_free(gn);
		agent_reads_set(run, *a, gr);

		lev_config_safe_commands_for_agent(run, *a, NULL, NULL, &dr, &rt, &rs);
		lev_config_safe_commands_for_agent(next, *a, NULL, NULL, &dn, &nt, &ns);
		strv_intersect(&rt, nt);
		strv_intersect(&rs, ns);
		lev_strv_free(nt);
		lev_strv_free(ns);
		sc = agent_safe_entry(run, *a);
		lev_strv_free(sc->tools);
		lev_strv_free(sc->shell);
		sc->tools = rt;
		sc->shell = rs;
		sc->allow_blueprint = honour;
	}
}

void lev_policy_tighter(struct lev_config *run, const struct lev_config *next)
{
	agents_tighter(run, next);
	run->taint_tracking = run->taint_tracking || next->taint_tracking;
	run->yolo_allows_flow = run->yolo_allows_flow && next->yolo_allows_flow;
	strv_intersect(&run->allowed_workdirs, next->allowed_workdirs);
	run->allow_seed_commands = run->allow_seed_commands && next->allow_seed_commands;
	run->allow_local_network = run->allow_local_network && next->allow_local_network;
	strv_intersect(&run->allow_env_vars, next->allow_env_vars);
	run->allow_blueprint_read_paths =
		run->allow_blueprint_read_paths && next->allow_blueprint_read_paths;
	run->allow_blueprint_safe_commands =
		run->allow_blueprint_safe_commands && next->allow_blueprint_safe_commands;
	run->allow_blueprint_permissions =
		run->allow_blueprint_permissions && next->allow_blueprint_permissions;
	shell_env_tighter(run, next);
	strv_intersect(&run->read_paths, next->read_paths);
	sandbox_tighter(&run->sandbox, &next->sandbox);
	limit_lower(&run->sandbox_timeout_secs, next->sandbox_timeout_secs);
	perms_tighter(&run->tool_permissions, &next->tool_permissions);
	run->safe_defaults = run->safe_defaults && next->safe_defaults;
	strv_intersect(&run->safe_tools, next->safe_tools);
	strv_intersect(&run->safe_shell, next->safe_shell);
	limits_tighter(&run->limits, &next->limits);
}

/* ---- policy.toml ---- */

static bool strv_equal(char *const *a, char *const *b)
{
	for (; a && *a && b && *b; a++, b++)
		if (strcmp(*a, *b))
			return false;
	return !(a && *a) && !(b && *b);
}

static bool str_same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

/* The patterns both sides accept: an empty side accepts any target. */
static char **patterns_both(char *const *a, char *const *b, bool a_any, bool b_any)
{
	char **out = NULL;

	if (a_any)
		return lev_strv_copy(b);
	for (char *const *p = a; p && *p; p++)
		if (b_any || lev_strv_contains(b, *p))
			out = lev_strv_push(out, *p);
	return out;
}

/*
 * A rule that matches only what both R (the run's) and N (the new file's)
 * match, into *OUT; false when there is none.  Its patterns are those the
 * two share (spelled alike); its max_sensitivity the lower.
 */
static bool rule_both(const struct lev_allow_rule *r, const struct lev_allow_rule *n,
		      struct lev_allow_rule *out)
{
	bool r_any = !r->to && !r->channel, n_any = !n->to && !n->channel;
	_cleanup_strv_ char **nall = NULL, **rall = NULL;

	if (r->tool_hash != n->tool_hash || strcmp(r->norm, n->norm))
		return false;
	nall = lev_strv_copy(n->to);
	strv_union(&nall, n->channel);
	rall = lev_strv_copy(r->to);
	strv_union(&rall, r->channel);
	memset(out, 0, sizeof(*out));
	out->to = patterns_both(r->to, nall, r_any, n_any);
	out->channel = patterns_both(r->channel, nall, r_any, n_any);
	if (r_any) {
		/* N's own split between `to` and `channel` */
		lev_strv_free(out->to);
		lev_strv_free(out->channel);
		out->to = lev_strv_copy(n->to);
		out->channel = lev_strv_copy(n->channel);
	}
	if (!r_any && !n_any && !out->to && !out->channel)
		return false;	/* no target both accept: not "any target" */
	out->tool = xstrdup(n->tool);
	out->norm = xstrdup(n->norm);
	out->tool_hash = n->tool_hash;
	out->line = n->line;
	out->max_sensitivity = r->max_sensitivity < n->max_sensitivity ? r->max_sensitivity
								      : n->max_sensitivity;
	return true;
}

static bool rule_same(const struct lev_allow_rule *a, const struct lev_allow_rule *b)
{
	return a->tool_hash == b->tool_hash && !strcmp(a->norm, b->norm) &&
	       a->max_sensitivity == b->max_sensitivity && strv_equal(a->to, b->to) &&
	       strv_equal(a->channel, b->channel);
}

static void rule_release(struct lev_allow_rule *r)
{
	free(r->tool);
	free(r->norm);
	lev_strv_free(r->to);
	lev_strv_free(r->channel);
}

/* Every pair of rules, one of each side, for one tool: what both allow. */
static void rules_tighter(struct lev_policy *run, const struct lev_policy *next)
{
	struct lev_allow_rule *v = NULL;
	size_t n = 0;

	for (size_t i = 0; i < run->n_rules; i++) {
		for (size_t j = 0; j < next->n_rules && n < LEV_POLICY_RULES_MAX; j++) {
			struct lev_allow_rule both;
			bool dup = false;

			if (!rule_both(&run->rules[i], &next->rules[j], &both))
				continue;
			for (size_t k = 0; k < n && !dup; k++)
				dup = rule_same(&v[k], &both);
			if (dup) {
				rule_release(&both);
				continue;
			}
			v = xreallocarray(v, n + 1, sizeof(*v));
			v[n++] = both;
		}
	}
	for (size_t i = 0; i < run->n_rules; i++)
		rule_release(&run->rules[i]);
	free(run->rules);
	run->rules = v;
	run->n_rules = n;
	lev_policy_reindex(run);
}

static const struct lev_tool_override *override_named(const struct lev_policy *p, const char *name)
{
	for (size_t i = 0; i < p->n_overrides; i++)
		if (!strcmp(p->overrides[i].norm, name))
			return &p->overrides[i];
	return NULL;
}

static enum lev_level level_min(enum lev_level a, enum lev_level b)
{
	return a < b ? a : b;
}

/*
 * The override named like O in the tighter policy: each field either side
 * sets becomes the tighter of the two sides' classification of that name
 * (a side that does not set it classifies it as its built-in or server
 * default), the higher sensitivity, the lower clearance, outbound over
 * internal over inbound.  The run's declared target argument stays.
 */
static void override_both(const struct lev_policy *run, const struct lev_policy *next,
			  const struct lev_tool_override *o, struct lev_tool_override *out)
{
	const struct lev_tool_override *r = override_named(run, o->norm),
				       *n = override_named(next, o->norm),
				       *lr = run->leviath ? override_named(run->leviath, o->norm) : NULL,
				       *ln = next->leviath ? override_named(next->leviath, o->norm) : NULL;
	const struct lev_tool_override *any[] = { r, n, lr, ln };
	struct lev_tool_class cr, cn;

	lev_policy_classify(run, o->name, &cr);
	lev_policy_classify(next, o->name, &cn);
	memset(out, 0, sizeof(*out));
	out->name = xstrdup(o->name);
	out->alt_name = o->alt_name ? xstrdup(o->alt_name) : NULL;
	out->norm = xstrdup(o->norm);
	out->line = o->line;
	for (size_t k = 0; k < ARRAY_SIZE(any); k++) {
		out->has_sensitivity |= any[k] && any[k]->has_sensitivity;
		out->has_clearance |= any[k] && any[k]->has_clearance;
		out->has_direction |= any[k] && any[k]->has_direction;
	}
	out->sensitivity = lev_level_max(cr.sensitivity, cn.sensitivity);
	if (!(r && r->has_sensitivity) && !(n && n->has_sensitivity) && out->sensitivity < LEV_PRIVATE &&
	    !(lev_tooltable_find(o->name) &&
	      !(lev_tooltable_find(o->name)->flags & LEV_TOOLF_FOREIGN)))
		/* Leviath's file alone never classifies an MCP or script tool's results
		 * below the Private they get when lev's file does not classify them */
		out->has_sensitivity = false;
	out->clearance = level_min(cr.clearance, cn.clearance);
	out->direction = cr.direction > cn.direction ? cr.direction : cn.direction;
	for (size_t k = 0; k < ARRAY_SIZE(any) && !out->target; k++)
		if (any[k] && any[k]->target)
			out->target = xstrdup(any[k]->target);
}

static void override_release(struct lev_tool_override *o)
{
	free(o->name);
	free(o->norm);
	free(o->alt_name);
	free(o->target);
}

/* Is NORM named in V[0..N)? */
static bool override_in(const struct lev_tool_override *v, size_t n, const char *norm)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].norm, norm))
			return true;
	return false;
}

/*
 * Every name either side overrides, in its own file or in Leviath's (kept
 * apart, see policy.h), becomes one of RUN's own overrides with the tighter
 * classification of the two; RUN keeps Leviath's overrides it had, which can
 * only tighten further.
 */
static void overrides_tighter(struct lev_policy *run, const struct lev_policy *next)
{
	const struct lev_policy *from[] = { run, next, run->leviath, next->leviath };
	size_t cap = 0, n = 0;
	struct lev_tool_override *v;

	for (size_t k = 0; k < ARRAY_SIZE(from); k++)
		cap += from[k] ? from[k]->n_overrides : 0;
	v = cap ? xcalloc(cap, sizeof(*v)) : NULL;
	/* computed against both policies as they are, before RUN changes */
	for (size_t k = 0; k < ARRAY_SIZE(from); k++)
		for (size_t i = 0; from[k] && i < from[k]->n_overrides; i++)
			if (!override_in(v, n, from[k]->overrides[i].norm))
				override_both(run, next, &from[k]->overrides[i], &v[n++]);
	for (size_t i = 0; i < run->n_overrides; i++)
		override_release(&run->overrides[i]);
	free(run->overrides);
	run->overrides = v;
	run->n_overrides = n;
}

/* Two [[sources]] labels for the same place (host, path, server). */
static bool source_same_place(const struct lev_source_label *a, const struct lev_source_label *b)
{
	return str_same(a->host, b->host) && str_same(a->path, b->path) &&
	       str_same(a->server, b->server);
}

/*
 * One field of a label, the tighter of the two sides (HB: the other side's
 * label sets it too).  A field only one side sets stays only at its
 * tightest value TOP: the other side's default may be tighter than less.
 */
static void label_field(bool *ha, int *va, bool hb, int vb, int top)
{
	if (*ha && hb) {
		*va = *va > vb ? *va : vb;
		return;
	}
	if (hb) {
		*ha = true;
		*va = vb;
	}
	if (*ha && *va != top)
		*ha = false;
}

static void source_copy(struct lev_source_label *out, const struct lev_source_label *s)
{
	*out = *s;
	out->host = s->host ? xstrdup(s->host) : NULL;
	out->path = s->path ? xstrdup(s->path) : NULL;
	out->server = s->server ? xstrdup(s->server) : NULL;
}

/* Label S of one side merged with the other side's label for its place (or none); false: drop. */
static bool source_both(const struct lev_source_label *s, const struct lev_integrity_policy *other,
			struct lev_source_label *out)
{
	const struct lev_source_label *b = NULL;
	int sens, integ;

	for (size_t i = 0; other && i < other->n_sources && !b; i++)
		if (source_same_place(s, &other->sources[i]))
			b = &other->sources[i];
	source_copy(out, s);
	sens = (int)out->sensitivity;
	integ = (int)out->integrity;
	label_field(&out->has_sensitivity, &sens, b && b->has_sensitivity,
		    b ? (int)b->sensitivity : 0, LEV_PRIVATE);
	label_field(&out->has_integrity, &integ, b && b->has_integrity, b ? (int)b->integrity : 0,
		    LEV_UNTRUSTED);
	out->sensitivity = (enum lev_level)sens;
	out->integrity = (enum lev_integrity)integ;
	if (out->has_sensitivity || out->has_integrity)
		return true;
	free(out->host);
	free(out->path);
	free(out->server);
	return false;
}

static void sources_tighter(struct lev_integrity_policy *run, const struct lev_integrity_policy *next)
{
	size_t cap = run->n_sources + (next ? next->n_sources : 0), n = 0;
	struct lev_source_label *v = cap ? xcalloc(cap, sizeof(*v)) : NULL;

	for (size_t i = 0; i < run->n_sources; i++)
		if (source_both(&run->sources[i], next, &v[n]))
			n++;
	for (size_t i = 0; next && i < next->n_sources; i++) {
		bool met = false;

		for (size_t j = 0; j < run->n_sources && !met; j++)
			met = source_same_place(&next->sources[i], &run->sources[j]);
		if (!met && source_both(&next->sources[i], NULL, &v[n]))
			n++;
	}
	for (size_t i = 0; i < run->n_sources; i++) {
		free(run->sources[i].host);
		free(run->sources[i].path);
		free(run->sources[i].server);
	}
	free(run->sources);
	run->sources = v;
	run->n_sources = n;
}

/* [integrity] allow entries: the run keeps those the new file has too. */
static void integrity_allow_tighter(struct lev_integrity_policy *run,
				    const struct lev_integrity_policy *next)
{
	size_t n = 0;

	for (size_t i = 0; i < run->n_allow; i++) {
		struct lev_integrity_allow *a = &run->allow[i];
		const struct lev_integrity_allow *b = NULL;

		for (size_t j = 0; next && j < next->n_allow && !b; j++)
			if (lev_policy_tool_same(a->tool, next->allow[j].tool) &&
			    str_same(a->target, next->allow[j].target))
				b = &next->allow[j];
		if (!b) {
			free(a->tool);
			free(a->target);
			continue;
		}
		a->args_from_trusted = a->args_from_trusted || b->args_from_trusted;
		a->line = b->line;
		run->allow[n++] = *a;
	}
	run->n_allow = n;
}

static void integrity_tighter(struct lev_policy *run, const struct lev_policy *next)
{
	const struct lev_integrity_policy *ni = next->integrity;
	struct lev_integrity_policy *ri = run->integrity;

	if (!ri && !ni)
		return;
	if (!ri)
		ri = run->integrity = xcalloc(1, sizeof(*ri));
	strv_intersect(&ri->trusted, ni ? ni->trusted : NULL);
	if (ni) {
		strv_union(&ri->untrusted, ni->untrusted);
		strv_union(&ri->protected_files, ni->protected_files);
	}
	ri->workdir_untrusted = ri->workdir_untrusted || (ni && ni->workdir_untrusted);
	ri->writes_protected_only = ri->writes_protected_only && ni && ni->writes_protected_only;
	integrity_allow_tighter(ri, ni);
	sources_tighter(ri, ni);
}

void lev_policy_tighten(struct lev_policy *run, const struct lev_policy *next)
{
	rules_tighter(run, next);
	overrides_tighter(run, next);
	integrity_tighter(run, next);
}
