/*
 * tighter.c - the tighter of two configs, field by field (see tighter.h).
 */
#include <stdlib.h>
#include <string.h>

#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/xalloc.h"
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

void lev_policy_tighter(struct lev_config *run, const struct lev_config *next)
{
	run->taint_tracking = run->taint_tracking || next->taint_tracking;
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
