/*
 * blueprint-routing.c - a stage's tool_routing (blueprint.h struct
 * lev_tool_routing): where each tool's result lands and how large it may be.
 *
 * Leviath's schema: default_region, persist, max_result_tokens (>= 1),
 * overrides (tool -> region, or -> { region, max_result_tokens }, at least
 * one of the two) and max_result_tokens_per_tool (tool -> tokens >= 0).
 * Tool names are stored canonical (bash -> shell) so an alias matches the
 * tool it aliases; a name lev does not know (an MCP tool) is kept as written.
 */
#include <string.h>

#include "liblev/conf/blueprint-internal.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define ROUTES_MAX 256
#define RESULT_TOKENS_MAX ((uint64_t)1 << 24)

static const char *const routing_keys[] = { "default_region", "persist", "max_result_tokens",
					    "overrides", "max_result_tokens_per_tool", NULL };

static const char *canonical(const char *name)
{
	const struct lev_tool_desc *d = lev_tooltable_find(name);

	return d ? d->name : name;
}

static struct lev_route *route_get(struct lev_tool_routing *rt, const char *tool)
{
	const char *name = canonical(tool);
	struct lev_route *r;

	for (size_t i = 0; i < rt->n_routes; i++)
		if (!strcmp(rt->routes[i].tool, name))
			return &rt->routes[i];
	rt->routes = xreallocarray(rt->routes, rt->n_routes + 1, sizeof(*rt->routes));
	r = &rt->routes[rt->n_routes++];
	memset(r, 0, sizeof(*r));
	r->tool = xstrdup(name);
	return r;
}

static int region_name(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		       const char *path, char **dst, struct lev_err *err)
{
	int r = lev_tomlval_set_str(c, v, path, dst, err);

	if (r == 0 && !**dst)
		r = lev_tomlval_fail(c, v->line, v->col, err, "'%s' is empty", path);
	return r;
}

/* overrides.TOOL = "region" | { region = "...", max_result_tokens = N } */
static int parse_override(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			  const char *path, struct lev_route *rt, struct lev_err *err)
{
	static const char *const keys[] = { "region", "max_result_tokens", NULL };
	const struct lev_toml_table *t = NULL;
	int r;

	if (v->type == LEV_TOML_STRING) {
		free(rt->region);
		rt->region = NULL;
		return region_name(c, v, path, &rt->region, err);
	}
	if (v->type != LEV_TOML_TABLE)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be a region name or a table with 'region' "
					"and/or 'max_result_tokens', not %s",
					path, lev_toml_type_name(v->type));
	r = lev_tomlval_table(c, v, path, &t, err);
	if (r == 0)
		r = lev_tomlval_check_keys(c, t, path, keys, true, err);
	if (r < 0)
		return r;
	if (lev_toml_table_len(t) == 0)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must set 'region', 'max_result_tokens' or both",
					path);
	for (size_t i = 0; i < lev_toml_table_len(t) && r == 0; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);
		const struct lev_toml_value *e = lev_toml_table_value(t, i);

		if (lev_tomlval_key_is(t, i, "region")) {
			free(rt->region);
			rt->region = NULL;
			r = region_name(c, e, p, &rt->region, err);
		} else {
			r = lev_tomlval_u64(c, e, p, 0, RESULT_TOKENS_MAX, &rt->max_result_tokens,
					    err);
			rt->has_max = r == 0;
		}
	}
	return r;
}

/* A table keyed by tool name: each value through parse_override or as a token count. */
static int parse_tool_map(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			  const char *path, bool overrides, struct lev_tool_routing *rt,
			  struct lev_err *err)
{
	const struct lev_toml_table *t = NULL;
	int r = lev_tomlval_table(c, v, path, &t, err);

	if (r < 0)
		return r;
	if (lev_toml_table_len(t) + rt->n_routes > ROUTES_MAX)
		return lev_tomlval_fail(c, v->line, v->col, err, "'%s' has too many tools", path);
	for (size_t i = 0; i < lev_toml_table_len(t) && r == 0; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);
		_cleanup_free_ char *tool = lev_tomlval_key_dup(t, i);
		const struct lev_toml_value *e = lev_toml_table_value(t, i);
		struct lev_route *route;
		uint64_t max = 0;

		if (!*tool || strlen(tool) > 128)
			return lev_tomlval_fail(c, e->line, e->col, err,
						"'%s' is not a tool name", p);
		if (overrides) {
			r = parse_override(c, e, p, route_get(rt, tool), err);
			continue;
		}
		r = lev_tomlval_u64(c, e, p, 0, RESULT_TOKENS_MAX, &max, err);
		if (r < 0)
			return r;
		route = route_get(rt, tool);
		/* the override's own ceiling wins over the per-tool table */
		if (!route->has_max) {
			route->has_max = true;
			route->max_result_tokens = max;
		}
	}
	return r;
}

int lev__bp_parse_routing(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			  const char *path, struct lev_tool_routing *rt, struct lev_err *err)
{
	const struct lev_toml_table *t = NULL;
	const struct lev_toml_value *per_tool = NULL;
	_cleanup_free_ char *per_tool_path = NULL;
	int r = lev_tomlval_table(c, v, path, &t, err);

	if (r == 0)
		r = lev_tomlval_check_keys(c, t, path, routing_keys, true, err);
	if (r < 0)
		return r;
	rt->present = true;
	rt->persist = true;
	for (size_t i = 0; i < lev_toml_table_len(t) && r == 0; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);
		const struct lev_toml_value *e = lev_toml_table_value(t, i);

		if (lev_tomlval_key_is(t, i, "default_region"))
			r = region_name(c, e, p, &rt->default_region, err);
		else if (lev_tomlval_key_is(t, i, "persist"))
			r = lev_tomlval_bool(c, e, p, &rt->persist, err);
		else if (lev_tomlval_key_is(t, i, "max_result_tokens"))
			r = lev_tomlval_u64(c, e, p, 1, RESULT_TOKENS_MAX, &rt->max_result_tokens,
					    err);
		else if (lev_tomlval_key_is(t, i, "overrides"))
			r = parse_tool_map(c, e, p, true, rt, err);
		else {
			/* after the overrides, whatever order they were written in */
			per_tool = e;
			per_tool_path = xstrdup(p);
		}
	}
	if (r == 0 && per_tool)
		r = parse_tool_map(c, per_tool, per_tool_path, false, rt, err);
	return r;
}

void lev__bp_routing_release(struct lev_tool_routing *rt)
{
	for (size_t i = 0; i < rt->n_routes; i++) {
		free(rt->routes[i].tool);
		free(rt->routes[i].region);
	}
	free(rt->routes);
	free(rt->default_region);
	memset(rt, 0, sizeof(*rt));
}

/* The regions every Leviath stage carries; lev keeps their results in the conversation. */
static const char *const carried[] = { "conversation", "tool_results", "final_output",
				       "stage_instructions", NULL };

static int check_target(const struct lev_blueprint *bp, const struct lev_stage *st,
			const char *what, const char *region, struct lev_err *err)
{
	for (const char *const *k = carried; region && *k; k++)
		if (!strcmp(*k, region))
			return 0;
	if (region && st->has_context && !lev_strv_contains(st->context_regions, region))
		return lev_err_set(err, LEV_EPARSE,
				   "%s: stage '%s' routes %s to region '%.64s', which is not in "
				   "its own [stages.%s.context.regions], so it could not read it "
				   "back; add it there",
				   bp->path, st->name, what, region, st->name);
	if (!region || lev_blueprint_region(bp, region))
		return 0;
	return lev_err_set(err, LEV_EPARSE,
			   "%s: stage '%s' routes %s to region '%.64s', which is not in "
			   "[context.regions]; add it there",
			   bp->path, st->name, what, region);
}

int lev__bp_check_routing(const struct lev_blueprint *bp, const struct lev_stage *st,
			  struct lev_err *err)
{
	const struct lev_tool_routing *rt = &st->routing;
	int r;

	if (!rt->present)
		return 0;
	r = check_target(bp, st, "tool results", rt->default_region, err);
	for (size_t i = 0; i < rt->n_routes && r == 0; i++) {
		_cleanup_free_ char *what = xasprintf("'%s'", rt->routes[i].tool);

		r = check_target(bp, st, what, rt->routes[i].region, err);
	}
	return r;
}

void lev_blueprint_route(const struct lev_stage *stage, const char *tool, const char **region,
			 uint64_t *max_tokens)
{
	const struct lev_tool_routing *rt = &stage->routing;
	const char *name = tool ? canonical(tool) : "";

	*region = rt->default_region;
	*max_tokens = rt->max_result_tokens;
	for (size_t i = 0; i < rt->n_routes; i++) {
		if (strcmp(rt->routes[i].tool, name))
			continue;
		if (rt->routes[i].region)
			*region = rt->routes[i].region;
		if (rt->routes[i].has_max)
			*max_tokens = rt->routes[i].max_result_tokens;
	}
}
