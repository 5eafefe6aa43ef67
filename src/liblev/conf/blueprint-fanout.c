/*
 * blueprint-fanout.c - a fan-out stage's keys and the sub-agent keys
 * (docs/sub-agents.md): mode = "fan_out" with worker_stage / worker_agent,
 * merge_stage, results_region, split_prompt, max_workers, max_items,
 * max_attempts, on_worker_failure; a worker stage's allow_as_worker; a
 * stage's requires_children; [agent] max_child_depth.  Read here, run by
 * run/fanout.c.
 */
#include <stdlib.h>
#include <string.h>

#include "liblev/conf/blueprint-internal.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"

/* Leviath's words and lev's shorter one for the same meaning */
static const char *const onfail_words[] = { "continue", "fail", "fail_all" };

static int set_pos_str(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t, size_t i,
		       const char *p, char **dst, unsigned *line, unsigned *col,
		       struct lev_err *err)
{
	const struct lev_toml_value *v = lev_toml_table_value(t, i);
	int r = lev_tomlval_set_str(c, v, p, dst, err);

	if (r == 0 && !(*dst)[0])
		r = lev_tomlval_fail(c, v->line, v->col, err, "'%s' must not be empty", p);
	if (r == 0 && line) {
		*line = v->line;
		*col = v->col;
	}
	return r;
}

int lev__bp_fanout_stage_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			     size_t i, const char *table, struct lev_stage *st, struct lev_err *err)
{
	const struct lev_toml_value *v = lev_toml_table_value(t, i);
	_cleanup_free_ char *p = lev_tomlval_key_path(table, t, i);
	struct lev_fanout_spec *f = &st->fanout;
	int r, e = 0;

	if (lev_tomlval_key_is(t, i, "worker_stage"))
		r = set_pos_str(c, t, i, p, &f->worker_stage, &f->line, &f->col, err);
	else if (lev_tomlval_key_is(t, i, "worker_agent")) {
		r = set_pos_str(c, t, i, p, &f->worker_agent, NULL, NULL, err);
		if (r == 0 && !lev_agent_name_valid(f->worker_agent))
			r = lev_tomlval_fail(c, v->line, v->col, err,
					     "'%s' = '%.64s' is not a valid agent name", p,
					     f->worker_agent);
		if (r == 0 && !f->worker_stage) {
			f->line = v->line;
			f->col = v->col;
		}
	} else if (lev_tomlval_key_is(t, i, "worker_query")) {
		r = set_pos_str(c, t, i, p, &f->worker_query, NULL, NULL, err);
		if (r == 0)
			lev__bp_finding(c, v->line, v->col, p, st->name,
					"worker_query (lev matches no agent types)",
					"worker_agent = \"<an installed agent>\"");
	} else if (lev_tomlval_key_is(t, i, "merge_stage"))
		r = set_pos_str(c, t, i, p, &f->merge_stage, &f->merge_line, &f->merge_col, err);
	else if (lev_tomlval_key_is(t, i, "results_region"))
		r = set_pos_str(c, t, i, p, &f->results_region, &f->region_line, &f->region_col,
				err);
	else if (lev_tomlval_key_is(t, i, "split_prompt"))
		r = lev_tomlval_set_str(c, v, p, &f->split_prompt, err);
	else if (lev_tomlval_key_is(t, i, "max_workers"))
		r = lev_tomlval_u64(c, v, p, 0, 100000, &f->max_workers, err);
	else if (lev_tomlval_key_is(t, i, "max_items"))
		r = lev_tomlval_u64(c, v, p, 0, LEV_FANOUT_ITEMS_MAX, &f->max_items, err);
	else if (lev_tomlval_key_is(t, i, "max_attempts"))
		r = lev_tomlval_u64(c, v, p, 0, 100, &f->max_attempts, err);
	else if (lev_tomlval_key_is(t, i, "on_worker_failure")) {
		r = lev_tomlval_enum(c, v, p, onfail_words, ARRAY_SIZE(onfail_words), &e, err);
		if (r == 0)
			f->on_failure = e ? LEV_WORKERS_FAIL : LEV_WORKERS_CONTINUE;
	} else if (lev_tomlval_key_is(t, i, "allow_as_worker"))
		r = lev_tomlval_bool(c, v, p, &st->allow_as_worker, err);
	else if (lev_tomlval_key_is(t, i, "requires_children"))
		r = lev_tomlval_bool(c, v, p, &st->requires_children, err);
	else
		return 0;
	return r < 0 ? r : 1;
}

int lev__bp_fanout_agent_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			     size_t i, struct lev_blueprint *bp, struct lev_err *err)
{
	_cleanup_free_ char *p = lev_tomlval_key_path("agent", t, i);
	int r;

	if (!lev_tomlval_key_is(t, i, "max_child_depth"))
		return 0;
	r = lev_tomlval_u64(c, lev_toml_table_value(t, i), p, 0, LEV_CHILD_DEPTH_MAX,
			    &bp->max_child_depth, err);
	bp->has_max_child_depth = r == 0;
	return r < 0 ? r : 1;
}

void lev__bp_fanout_init(struct lev_stage *st)
{
	st->fanout.max_workers = LEV_FANOUT_MAX_WORKERS_DEFAULT;
	st->fanout.max_attempts = LEV_FANOUT_MAX_ATTEMPTS_DEFAULT;
}

void lev__bp_fanout_release(struct lev_stage *st)
{
	struct lev_fanout_spec *f = &st->fanout;

	free(f->worker_stage);
	free(f->worker_agent);
	free(f->worker_query);
	free(f->merge_stage);
	free(f->results_region);
	free(f->split_prompt);
	memset(f, 0, sizeof(*f));
}

static bool has_worker_keys(const struct lev_fanout_spec *f)
{
	return f->worker_stage || f->worker_agent || f->worker_query || f->merge_stage ||
	       f->results_region || f->split_prompt;
}

/* One fan-out stage's references: its worker, its merge stage, its region. */
static int check_stage(const struct lev_tomlval_ctx *c, struct lev_blueprint *bp,
		       struct lev_stage *st, struct lev_err *err)
{
	struct lev_fanout_spec *f = &st->fanout;
	const char *tool = lev_tooltable_name(LEV_OP_FAN_OUT);
	const struct lev_stage *w;

	if (st->mode != LEV_MODE_FAN_OUT) {
		if (has_worker_keys(f))
			lev_tomlval_warn(c, f->line ? f->line : f->merge_line,
					 "stage '%s' sets fan-out keys but not mode = \"fan_out\"; "
					 "they apply to its fan_out calls only", st->name);
		return 0;
	}
	if ((f->worker_stage != NULL) + (f->worker_agent != NULL) > 1)
		return lev_tomlval_fail(c, f->line, f->col, err,
					"stage '%s' sets both worker_stage and worker_agent; set "
					"exactly one", st->name);
	if (!f->worker_stage && !f->worker_agent && !f->worker_query)
		return lev_err_set(err, LEV_EPARSE,
				   "%s: fan-out stage '%s' names no worker: set worker_stage (a "
				   "stage with allow_as_worker = true) or worker_agent (an "
				   "installed agent)",
				   c->file, st->name);
	if (f->worker_stage) {
		w = lev_blueprint_stage(bp, f->worker_stage);
		if (!w)
			return lev_tomlval_fail(c, f->line, f->col, err,
						"stage '%s' has worker_stage = '%.64s', which is not "
						"a stage", st->name, f->worker_stage);
		if (w == st)
			return lev_tomlval_fail(c, f->line, f->col, err,
						"stage '%s' names itself as its worker_stage",
						st->name);
		if (!w->allow_as_worker)
			return lev_tomlval_fail(c, f->line, f->col, err,
						"stage '%s' has worker_stage = '%s', which does not "
						"set allow_as_worker = true", st->name, w->name);
	}
	if (f->merge_stage && !lev_blueprint_stage(bp, f->merge_stage))
		return lev_tomlval_fail(c, f->merge_line, f->merge_col, err,
					"stage '%s' has merge_stage = '%.64s', which is not a stage",
					st->name, f->merge_stage);
	if (f->results_region && strcmp(f->results_region, "conversation") &&
	    !lev_blueprint_region(bp, f->results_region))
		return lev_tomlval_fail(c, f->region_line, f->region_col, err,
					"stage '%s' has results_region = '%.64s', which is not in "
					"[context.regions]", st->name, f->results_region);
	/* the stage's one job: offer the tool that does it */
	if (!lev_strv_contains(st->available_tools, tool))
		st->available_tools = lev_strv_push(st->available_tools, tool);
	return 0;
}

int lev__bp_fanout_check(const struct lev_tomlval_ctx *c, struct lev_blueprint *bp,
			 struct lev_err *err)
{
	for (size_t i = 0; i < bp->n_stages; i++) {
		int r = check_stage(c, bp, &bp->stages[i], err);

		if (r < 0)
			return r;
	}
	return 0;
}

unsigned lev_blueprint_child_depth(const struct lev_blueprint *bp)
{
	return bp->has_max_child_depth ? (unsigned)bp->max_child_depth : LEV_CHILD_DEPTH_DEFAULT;
}
