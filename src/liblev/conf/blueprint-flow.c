/*
 * blueprint-flow.c - the keys of Leviath's blueprint format that shape a
 * run's flow, read into struct lev_stage / lev_transition for run/flow.c:
 * an edge's transform, transform_config, gate and stuck_after_* triggers; a
 * stage's (and [agent]'s) output spec and nudge; a stage's interaction
 * points.  Each value is checked as Leviath's schema has it; a bad one is an
 * error at FILE:LINE:COL.
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/conf/blueprint-internal.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define GATE_MAX_ATTEMPTS_DEFAULT 3
#define POINTS_MAX 16

static const char *const transform_names[] = { "direct", "clear", "compact", "custom" };
static const char *const when_words[] = { "done", "error", "max_iterations", "stuck",
					  "dead_end" };
static const char *const style_names[] = { "free_text", "multiple_choice", "confirm" };
static const char *const unattended_names[] = { "auto_approve", "ask" };

const char *lev_transform_name(enum lev_transform t)
{
	return (unsigned)t < ARRAY_SIZE(transform_names) ? transform_names[t] : "direct";
}

const char *lev_transition_when_name(enum lev_transition_when w)
{
	return (unsigned)w < ARRAY_SIZE(when_words) ? when_words[w] : "done";
}

/* The I-th key of T, its value and its dotted path. */
struct kv {
	const struct lev_toml_value *v;
	char *path;
};

static int unknown_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t, size_t i,
		       const char *path, const char *valid, struct lev_err *err)
{
	_cleanup_free_ char *k = lev_tomlval_key_dup(t, i);
	unsigned line = 0, col = 0;

	lev_toml_table_key_pos(t, i, &line, &col);
	return lev_tomlval_fail(c, line, col, err, "unknown key '%s' in '%s' (valid: %s)", k, path,
				valid);
}

/* A tool list as written, each name stored canonically (bash -> shell). */
static int canon_tools(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		       const char *path, char ***out, struct lev_err *err)
{
	_cleanup_strv_ char **l = NULL;
	int r = lev_tomlval_strv(c, v, path, &l, err);

	if (r < 0)
		return r;
	for (char **p = l; p && *p; p++)
		*out = lev_strv_push(*out, lev_tool_canonical(*p));
	return 0;
}

/* ---- edges ------------------------------------------------------------- */

static int parse_gate(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		      const char *path, struct lev_edge_gate *g, struct lev_err *err)
{
	const struct lev_toml_table *t = NULL;
	int r = lev_tomlval_table(c, v, path, &t, err);

	if (r < 0)
		return r;
	g->present = true;
	g->max_attempts = GATE_MAX_ATTEMPTS_DEFAULT;
	for (size_t i = 0, n = lev_toml_table_len(t); i < n && r == 0; i++) {
		const struct lev_toml_value *e = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);

		if (lev_tomlval_key_is(t, i, "require_modifications"))
			r = lev_tomlval_bool(c, e, p, &g->require_modifications, err);
		else if (lev_tomlval_key_is(t, i, "require_regions"))
			r = lev_tomlval_set_strv(c, e, p, &g->require_regions, err);
		else if (lev_tomlval_key_is(t, i, "require_region_updated"))
			r = lev_tomlval_set_str(c, e, p, &g->require_region_updated, err);
		else if (lev_tomlval_key_is(t, i, "require_no_open_items"))
			r = lev_tomlval_set_str(c, e, p, &g->require_no_open_items, err);
		else if (lev_tomlval_key_is(t, i, "message"))
			r = lev_tomlval_set_str(c, e, p, &g->message, err);
		else if (lev_tomlval_key_is(t, i, "region"))
			r = lev_tomlval_set_str(c, e, p, &g->region, err);
		else if (lev_tomlval_key_is(t, i, "tools"))
			r = canon_tools(c, e, p, &g->tools, err);
		else if (lev_tomlval_key_is(t, i, "max_attempts"))
			r = lev_tomlval_u64(c, e, p, 1, 100, &g->max_attempts, err);
		else
			r = unknown_key(c, t, i, path,
					"require_modifications, require_regions, "
					"require_region_updated, require_no_open_items, message, "
					"region, tools, max_attempts",
					err);
	}
	return r;
}

static int parse_tconfig(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			 const char *path, struct lev_transition *tr, struct lev_err *err)
{
	const struct lev_toml_table *t = NULL;
	int r = lev_tomlval_table(c, v, path, &t, err);

	for (size_t i = 0, n = r < 0 ? 0 : lev_toml_table_len(t); i < n && r == 0; i++) {
		const struct lev_toml_value *e = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);

		if (lev_tomlval_key_is(t, i, "carry"))
			r = lev_tomlval_set_strv(c, e, p, &tr->carry, err);
		else if (lev_tomlval_key_is(t, i, "compact"))
			r = lev_tomlval_set_strv(c, e, p, &tr->compact, err);
		else if (lev_tomlval_key_is(t, i, "clear"))
			r = lev_tomlval_set_strv(c, e, p, &tr->clear, err);
		else if (lev_tomlval_key_is(t, i, "compact_prompt"))
			r = lev_tomlval_set_str(c, e, p, &tr->compact_prompt, err);
		else
			r = unknown_key(c, t, i, path, "carry, compact, clear, compact_prompt", err);
	}
	return r;
}

int lev__bp_flow_transition_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
				size_t i, const char *path, struct lev_transition *tr,
				struct lev_err *err)
{
	const struct lev_toml_value *v = lev_toml_table_value(t, i);
	_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);

	if (lev_tomlval_key_is(t, i, "transform")) {
		static const char *const words[] = { "direct", "clear", "compact", "summarize",
						     "custom" };
		int w = 0;
		int r = lev_tomlval_enum(c, v, p, words, ARRAY_SIZE(words), &w, err);

		if (r < 0)
			return r;
		tr->transform = w == 0	 ? LEV_TRANSFORM_DIRECT
				: w == 1 ? LEV_TRANSFORM_CLEAR
				: w == 4 ? LEV_TRANSFORM_CUSTOM
					 : LEV_TRANSFORM_COMPACT;
		return 1;
	}
	if (lev_tomlval_key_is(t, i, "transform_config"))
		return parse_tconfig(c, v, p, tr, err) < 0 ? LEV_EPARSE : 1;
	if (lev_tomlval_key_is(t, i, "gate"))
		return parse_gate(c, v, p, &tr->gate, err) < 0 ? LEV_EPARSE : 1;
	if (lev_tomlval_key_is(t, i, "stuck_after_iterations"))
		return lev_tomlval_u64(c, v, p, 1, UINT32_MAX, &tr->stuck_iterations, err) < 0
			       ? LEV_EPARSE : 1;
	if (lev_tomlval_key_is(t, i, "stuck_after_minutes"))
		return lev_tomlval_u64(c, v, p, 1, 10000000, &tr->stuck_minutes, err) < 0
			       ? LEV_EPARSE : 1;
	if (lev_tomlval_key_is(t, i, "stuck_after_tool_calls"))
		return lev_tomlval_u64(c, v, p, 1, UINT32_MAX, &tr->stuck_tool_calls, err) < 0
			       ? LEV_EPARSE : 1;
	if (lev_tomlval_key_is(t, i, "stuck_after_same_file_edits"))
		return lev_tomlval_u64(c, v, p, 1, UINT32_MAX, &tr->stuck_same_file_edits, err) < 0
			       ? LEV_EPARSE : 1;
	return 0;
}

/* ---- output, nudge ----------------------------------------------------- */

static int parse_output(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			const char *path, const char *stage, struct lev_output_spec *o,
			struct lev_err *err)
{
	const struct lev_toml_table *t = NULL;
	int r = lev_tomlval_table(c, v, path, &t, err);

	if (r < 0)
		return r;
	o->present = true;
	for (size_t i = 0, n = lev_toml_table_len(t); i < n && r == 0; i++) {
		const struct lev_toml_value *e = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);

		if (lev_tomlval_key_is(t, i, "format"))
			r = lev_tomlval_set_str(c, e, p, &o->format, err);
		else if (lev_tomlval_key_is(t, i, "instructions"))
			r = lev_tomlval_set_str(c, e, p, &o->instructions, err);
		else if (lev_tomlval_key_is(t, i, "example"))
			r = lev_tomlval_set_str(c, e, p, &o->example, err);
		else if (lev_tomlval_key_is(t, i, "schema")) {
			const struct lev_toml_table *st = NULL;
			json_t *j;

			r = lev_tomlval_table(c, e, p, &st, err);
			if (r < 0)
				break;
			j = lev__bp_toml_to_json(e);
			if (!j)
				r = lev_tomlval_fail(c, e->line, e->col, err,
						     "'%s' holds a value JSON cannot carry", p);
			free(o->schema_json);
			o->schema_json = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
			json_decref(j);
		} else if (lev_tomlval_key_is(t, i, "validator")) {
			r = lev_tomlval_type(c, e, LEV_TOML_STRING, p, err);
			o->has_validator = true;
			if (r == 0)
				lev__bp_finding(c, e->line, e->col, p, stage,
						"Rhai output validators",
						"output.schema (a JSON Schema lev checks) or a Lua "
						"rule");
		} else
			r = unknown_key(c, t, i, path,
					"format, instructions, example, schema, validator", err);
	}
	return r;
}

static int parse_nudge(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		       const char *path, struct lev_nudge *nd, struct lev_err *err)
{
	const struct lev_toml_table *t = NULL;
	int r = lev_tomlval_table(c, v, path, &t, err);

	if (r < 0)
		return r;
	nd->present = true;
	for (size_t i = 0, n = lev_toml_table_len(t); i < n && r == 0; i++)
		if ((r = lev_config_nudge_key(c, t, i, path, nd, err)) == 1)
			r = unknown_key(c, t, i, path, "enabled, max, text", err);
	return r;
}

/* ---- interaction points ------------------------------------------------ */

/* A table of strings, its keys and values in order. */
static int str_map(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		   const char *path, char ***keys, char ***vals, struct lev_err *err)
{
	const struct lev_toml_table *t = NULL;
	int r = lev_tomlval_table(c, v, path, &t, err);

	for (size_t i = 0, n = r < 0 ? 0 : lev_toml_table_len(t); i < n && r == 0; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);
		_cleanup_free_ char *s = NULL;

		r = lev_tomlval_string(c, lev_toml_table_value(t, i), p, &s, err);
		if (r == 0) {
			_cleanup_free_ char *k = lev_tomlval_key_dup(t, i);

			*keys = lev_strv_push(*keys, k);
			*vals = lev_strv_push(*vals, s);
		}
	}
	return r;
}

static int point_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t, size_t i,
		     const char *path, struct lev_interaction_point *ip, struct lev_err *err)
{
	const struct lev_toml_value *e = lev_toml_table_value(t, i);
	_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);
	_cleanup_strv_ char **more = NULL;
	int w = 0, r;

	if (lev_tomlval_key_is(t, i, "name"))
		return lev_tomlval_set_str(c, e, p, &ip->name, err);
	if (lev_tomlval_key_is(t, i, "prompt"))
		return lev_tomlval_set_str(c, e, p, &ip->prompt, err);
	if (lev_tomlval_key_is(t, i, "required"))
		return lev_tomlval_bool(c, e, p, &ip->required, err);
	if (lev_tomlval_key_is(t, i, "unattended")) {
		r = lev_tomlval_enum(c, e, p, unattended_names, ARRAY_SIZE(unattended_names), &w,
				     err);
		ip->unattended_ask = w == 1;
		return r;
	}
	if (lev_tomlval_key_is(t, i, "style")) {
		r = lev_tomlval_enum(c, e, p, style_names, ARRAY_SIZE(style_names), &w, err);
		ip->style = (enum lev_ip_style)w;
		return r;
	}
	if (lev_tomlval_key_is(t, i, "options") || lev_tomlval_key_is(t, i, "choices")) {
		r = lev_tomlval_strv(c, e, p, &more, err);
		for (char **m = more; r == 0 && m && *m; m++)
			if (!lev_strv_contains(ip->options, *m))
				ip->options = lev_strv_push(ip->options, *m);
		return r;
	}
	if (lev_tomlval_key_is(t, i, "abort_options"))
		return lev_tomlval_set_strv(c, e, p, &ip->abort_options, err);
	if (lev_tomlval_key_is(t, i, "edit_options"))
		return lev_tomlval_set_strv(c, e, p, &ip->edit_options, err);
	if (lev_tomlval_key_is(t, i, "document_region"))
		return lev_tomlval_set_str(c, e, p, &ip->document_region, err);
	if (lev_tomlval_key_is(t, i, "directives"))
		return str_map(c, e, p, &ip->directive_keys, &ip->directive_texts, err);
	if (lev_tomlval_key_is(t, i, "followups"))
		return str_map(c, e, p, &ip->followup_keys, &ip->followup_texts, err);
	return unknown_key(c, t, i, path,
			   "name, prompt, required, unattended, style, options, choices, "
			   "directives, followups, abort_options, edit_options, document_region",
			   err);
}

static int parse_points(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			const char *path, struct lev_stage *st, struct lev_err *err)
{
	size_t n;
	int r = lev_tomlval_type(c, v, LEV_TOML_ARRAY, path, err);

	if (r < 0)
		return r;
	n = lev_toml_array_len(v->u.array);
	if (n > POINTS_MAX)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' has more than %d interaction points", path,
					POINTS_MAX);
	st->points = xcalloc(n ? n : 1, sizeof(*st->points));
	for (size_t k = 0; k < n; k++) {
		const struct lev_toml_value *e = lev_toml_array_at(v->u.array, k);
		struct lev_interaction_point *ip = &st->points[st->n_points++];
		_cleanup_free_ char *p = xasprintf("%s[%zu]", path, k);
		const struct lev_toml_table *t = NULL;

		r = lev_tomlval_table(c, e, p, &t, err);
		for (size_t i = 0, m = r < 0 ? 0 : lev_toml_table_len(t); i < m && r == 0; i++)
			r = point_key(c, t, i, p, ip, err);
		if (r < 0)
			return r;
		for (char **o = ip->abort_options; o && *o; o++)
			if (!lev_strv_contains(ip->options, *o))
				ip->options = lev_strv_push(ip->options, *o);
		for (char **o = ip->edit_options; o && *o; o++)
			if (!lev_strv_contains(ip->options, *o))
				ip->options = lev_strv_push(ip->options, *o);
		if (ip->style == LEV_IP_MULTIPLE_CHOICE && lev_strv_len(ip->options) < 2)
			return lev_tomlval_fail(c, e->line, e->col, err,
						"'%s' is multiple_choice and needs at least 2 "
						"options",
						p);
	}
	return 0;
}

int lev__bp_flow_stage_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			   size_t i, const char *table, struct lev_stage *st, struct lev_err *err)
{
	const struct lev_toml_value *v = lev_toml_table_value(t, i);
	_cleanup_free_ char *p = lev_tomlval_key_path(table, t, i);
	int r;

	if (lev_tomlval_key_is(t, i, "output"))
		r = parse_output(c, v, p, st->name, &st->output, err);
	else if (lev_tomlval_key_is(t, i, "nudge"))
		r = parse_nudge(c, v, p, &st->nudge, err);
	else if (lev_tomlval_key_is(t, i, "interaction_points"))
		r = parse_points(c, v, p, st, err);
	else if (lev_tomlval_key_is(t, i, "transition_prompt"))
		r = lev_tomlval_set_str(c, v, p, &st->transition_prompt, err);
	else
		return 0;
	return r < 0 ? r : 1;
}

int lev__bp_flow_agent_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			   size_t i, struct lev_blueprint *bp, struct lev_err *err)
{
	const struct lev_toml_value *v = lev_toml_table_value(t, i);
	_cleanup_free_ char *p = lev_tomlval_key_path("agent", t, i);
	int r;

	if (lev_tomlval_key_is(t, i, "output"))
		r = parse_output(c, v, p, NULL, &bp->output, err);
	else if (lev_tomlval_key_is(t, i, "nudge"))
		r = parse_nudge(c, v, p, &bp->nudge, err);
	else
		return 0;
	return r < 0 ? r : 1;
}

/* ---- after the parse --------------------------------------------------- */

static void inherit(char **dst, const char *src)
{
	if (!*dst && src)
		*dst = xstrdup(src);
}

/*
 * A region an edge's gate or a point names must be declared.  Leviath
 * refuses the blueprint; lev warns (the key is still read) and, at run
 * time, a gate on a region that does not exist holds: no work could
 * satisfy it.
 */
static int check_region(const struct lev_tomlval_ctx *c, const struct lev_blueprint *bp,
			const struct lev_stage *st, unsigned line, const char *what,
			const char *name, struct lev_err *err)
{
	(void)err;
	if (name && !lev_blueprint_region(bp, name))
		lev_tomlval_warn(c, line, "stage '%s': %s names region '%.64s', which no "
				 "[context.regions] declares (it is treated as satisfied)",
				 st->name, what, name);
	return 0;
}

static int check_edge(const struct lev_tomlval_ctx *c, const struct lev_blueprint *bp,
		      const struct lev_stage *st, const struct lev_transition *tr,
		      struct lev_err *err)
{
	const struct lev_edge_gate *g = &tr->gate;
	int r = 0;

	for (char **p = g->require_regions; r == 0 && p && *p; p++)
		r = check_region(c, bp, st, tr->line, "a gate's require_regions", *p, err);
	if (r == 0)
		r = check_region(c, bp, st, tr->line, "a gate's require_region_updated",
				 g->require_region_updated, err);
	if (r == 0)
		r = check_region(c, bp, st, tr->line, "a gate's require_no_open_items",
				 g->require_no_open_items, err);
	if (r == 0)
		r = check_region(c, bp, st, tr->line, "a gate's region", g->region, err);
	if (r == 0 && tr->when == LEV_WHEN_STUCK && !tr->stuck_iterations &&
	    !tr->stuck_minutes && !tr->stuck_tool_calls && !tr->stuck_same_file_edits)
		lev__bp_finding(c, tr->line, tr->col, tr->target, st->name,
				"a stuck edge with no stuck_after_* threshold (it never fires)",
				"stuck_after_iterations, _minutes, _tool_calls or "
				"_same_file_edits on the edge");
	return r;
}

/*
 * A stage the model leaves by choosing (two edges or more it may pick, or
 * one and allow_complete) is offered the transition tool, as an output
 * stage is offered submit_output.
 */
static void offer_transition(struct lev_stage *st)
{
	const char *name = lev_tooltable_name(LEV_OP_TRANSITION);
	size_t choices = 0;

	for (size_t j = 0; j < st->n_transitions; j++)
		if (st->transitions[j].when == LEV_WHEN_DONE && !st->transitions[j].always)
			choices++;
	if ((choices >= 2 || (choices && st->allow_complete)) &&
	    !lev_strv_contains(st->available_tools, name))
		st->available_tools = lev_strv_push(st->available_tools, name);
}

/*
 * After the whole file: the [agent] output and nudge become each stage's
 * defaults (a stage's own fields win), and the regions an edge or a point
 * names must exist.
 */
int lev__bp_flow_finish(const struct lev_tomlval_ctx *c, struct lev_blueprint *bp,
			struct lev_err *err)
{
	for (size_t i = 0; i < bp->n_stages; i++) {
		struct lev_stage *st = &bp->stages[i];
		int r = 0;

		if (bp->output.present && (st->output.present || st->require_output)) {
			st->output.present = true;
			inherit(&st->output.format, bp->output.format);
			inherit(&st->output.instructions, bp->output.instructions);
			inherit(&st->output.example, bp->output.example);
			inherit(&st->output.schema_json, bp->output.schema_json);
		}
		if (bp->nudge.present) {
			struct lev_nudge *n = &st->nudge;

			n->present = true;
			if (!n->has_enabled && bp->nudge.has_enabled) {
				n->has_enabled = true;
				n->enabled = bp->nudge.enabled;
			}
			if (!n->has_max && bp->nudge.has_max) {
				n->has_max = true;
				n->max = bp->nudge.max;
			}
			inherit(&n->text, bp->nudge.text);
		}
		for (size_t j = 0; j < st->n_transitions && r == 0; j++)
			r = check_edge(c, bp, st, &st->transitions[j], err);
		offer_transition(st);
		for (size_t j = 0; j < st->n_points && r == 0; j++)
			r = check_region(c, bp, st, 0, "an interaction point's document_region",
					 st->points[j].document_region, err);
		if (r < 0)
			return r;
	}
	return 0;
}

void lev__bp_output_release(struct lev_output_spec *o)
{
	free(o->format);
	free(o->instructions);
	free(o->example);
	free(o->schema_json);
	memset(o, 0, sizeof(*o));
}

void lev__bp_nudge_release(struct lev_nudge *n)
{
	free(n->text);
	memset(n, 0, sizeof(*n));
}

void lev__bp_transition_release(struct lev_transition *tr)
{
	free(tr->target);
	free(tr->hint);
	lev_strv_free(tr->carry);
	lev_strv_free(tr->compact);
	lev_strv_free(tr->clear);
	free(tr->compact_prompt);
	lev_strv_free(tr->gate.require_regions);
	free(tr->gate.require_region_updated);
	free(tr->gate.require_no_open_items);
	free(tr->gate.message);
	free(tr->gate.region);
	lev_strv_free(tr->gate.tools);
	memset(tr, 0, sizeof(*tr));
}

void lev__bp_points_release(struct lev_stage *st)
{
	for (size_t i = 0; i < st->n_points; i++) {
		struct lev_interaction_point *ip = &st->points[i];

		free(ip->name);
		free(ip->prompt);
		lev_strv_free(ip->options);
		lev_strv_free(ip->abort_options);
		lev_strv_free(ip->edit_options);
		lev_strv_free(ip->directive_keys);
		lev_strv_free(ip->directive_texts);
		lev_strv_free(ip->followup_keys);
		lev_strv_free(ip->followup_texts);
		free(ip->document_region);
	}
	free(st->points);
	st->points = NULL;
	st->n_points = 0;
}

static void override_stage(struct lev_output_spec *o, const struct lev_launch_override *lo)
{
	o->present = true;
	if (lo->output_format) {
		free(o->format);
		o->format = xstrdup(lo->output_format);
		/* a check written for one shape says nothing about another */
		if (!lo->output_schema) {
			free(o->schema_json);
			o->schema_json = NULL;
		}
	}
	if (lo->output_instructions) {
		free(o->instructions);
		o->instructions = xstrdup(lo->output_instructions);
	}
	if (lo->output_schema) {
		free(o->schema_json);
		o->schema_json = xstrdup(lo->output_schema);
	}
}

int lev_blueprint_launch_override(struct lev_blueprint *bp, const struct lev_launch_override *lo,
				  struct lev_err *err)
{
	bool any = false;

	if (lo->output_schema) {
		json_t *j = json_loads(lo->output_schema, JSON_REJECT_DUPLICATES, NULL);
		bool ok = json_is_object(j);

		json_decref(j);
		if (!ok)
			return lev_err_set(err, -EINVAL, "--output-schema: not a JSON object");
	}
	if (lo->max_depth >= 0) {
		bp->has_max_child_depth = true;
		bp->max_child_depth = (uint64_t)lo->max_depth;
	}
	if (!lo->output_format && !lo->output_instructions && !lo->output_schema)
		return 0;
	for (size_t i = 0; i < bp->n_stages; i++)
		any = any || bp->stages[i].output.present || bp->stages[i].require_output;
	for (size_t i = 0; i < bp->n_stages; i++) {
		struct lev_stage *st = &bp->stages[i];

		if (!any || st->output.present || st->require_output)
			override_stage(&st->output, lo);
	}
	return 0;
}
