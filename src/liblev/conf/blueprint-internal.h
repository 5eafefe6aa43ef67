/*
 * blueprint-internal.h - shared by blueprint.c and blueprint-compat.c.
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "liblev/base/buf.h"
#include "liblev/conf/blueprint.h"
#include "liblev/conf/toml.h"
#include "liblev/conf/tomlval.h"

/* The parse context: the tomlval context first, so one converts to the other. */
struct lev_bp_ctx {
	struct lev_tomlval_ctx c;
	struct lev_blueprint *bp;
};

/* The table kinds whose Leviath keys blueprint-compat.c knows. */
enum lev_bp_table {
	LEV_BPT_ROOT,
	LEV_BPT_AGENT,
	LEV_BPT_STAGE,
	LEV_BPT_MODEL,
	LEV_BPT_TRANSITION,
	LEV_BPT_REGION,
	LEV_BPT_SEED,
	LEV_BPT_SANDBOX,
	LEV_BPT_CONTEXT,
	_LEV_BPT_MAX,
};

/*
 * Record a finding at LINE:COL for KEY (STAGE: NULL when not in a stage):
 * "not run by lev: WHAT; use INSTEAD".  C must be a struct lev_bp_ctx.
 */
void lev__bp_finding(const struct lev_tomlval_ctx *c, unsigned line, unsigned col,
		     const char *key, const char *stage, const char *what, const char *instead);

/*
 * If the I-th key of T (a table of kind KIND at dotted path TABLE) is one of
 * Leviath's keys lev does not run: type-check its value as Leviath's schema
 * has it (a sub-key in no schema is an error), record its finding and
 * return 1.  Return 0 when KIND has no such key, negative on a bad value.
 */
int lev__bp_compat_key(const struct lev_tomlval_ctx *c, enum lev_bp_table kind,
		       const struct lev_toml_table *t, size_t i, const char *table,
		       const char *stage, struct lev_err *err);

/* Whether the I-th key of T is one of KIND's Leviath keys. */
bool lev__bp_compat_has(enum lev_bp_table kind, const struct lev_toml_table *t, size_t i);

/*
 * Check T's keys: each must be in KNOWN (lev's own) or one of KIND's
 * Leviath keys (checked, and a finding recorded); anything else is an error
 * naming the key and the valid set.  TABLE is T's dotted path, WHERE its
 * name in messages.
 */
int lev__bp_check_keys(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
		       const char *where, const char *table, const char *const *known,
		       enum lev_bp_table kind, const char *stage, struct lev_err *err);

/* Append ", k1, k2, ..." of KIND's Leviath keys to B (for "valid:" lists). */
void lev__bp_compat_names(enum lev_bp_table kind, struct lev_buf *b);

/* blueprint-routing.c: parse [stages.X.tool_routing] at PATH into RT. */
int lev__bp_parse_routing(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			  const char *path, struct lev_tool_routing *rt, struct lev_err *err);
void lev__bp_routing_release(struct lev_tool_routing *rt);
/* Every region ST routes to exists (or is one the runtime carries). */
int lev__bp_check_routing(const struct lev_blueprint *bp, const struct lev_stage *st,
			  struct lev_err *err);

/* blueprint-context.c: [repetition_detection] and [context.file_tracking] */
int lev__bp_parse_repetition(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			     struct lev_repetition *rd, struct lev_err *err);
int lev__bp_parse_file_tracking(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
				struct lev_file_tracking *ft, struct lev_err *err);
int lev__bp_parse_compaction(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			     struct lev_compaction *cp, struct lev_err *err);

/* V as JSON (a new reference), or NULL for a value JSON cannot carry (dates). */
json_t *lev__bp_toml_to_json(const struct lev_toml_value *v);

/*
 * blueprint-flow.c: the I-th key of T when it is one of the flow keys it
 * reads (an edge's transform, transform_config, gate, stuck_after_*; a
 * stage's output, nudge, interaction_points, transition_prompt; [agent]
 * output and nudge): parsed into TR / ST / BP, returns 1; 0 when it is not
 * one of them; negative on a bad value.  PATH / TABLE is T's dotted path.
 */
int lev__bp_flow_transition_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
				size_t i, const char *path, struct lev_transition *tr,
				struct lev_err *err);
int lev__bp_flow_stage_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			   size_t i, const char *table, struct lev_stage *st, struct lev_err *err);
/* blueprint-fanout.c: the fan-out and sub-agent keys (1: read, 0: not one of them) */
int lev__bp_fanout_stage_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			     size_t i, const char *table, struct lev_stage *st, struct lev_err *err);
int lev__bp_fanout_agent_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			     size_t i, struct lev_blueprint *bp, struct lev_err *err);
void lev__bp_fanout_init(struct lev_stage *st);
void lev__bp_fanout_release(struct lev_stage *st);
/* After the parse: each fan-out stage's worker, merge stage and region exist. */
int lev__bp_fanout_check(const struct lev_tomlval_ctx *c, struct lev_blueprint *bp,
			 struct lev_err *err);

int lev__bp_flow_agent_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			   size_t i, struct lev_blueprint *bp, struct lev_err *err);
/* After the parse: [agent] output / nudge defaults, region references. */
int lev__bp_flow_finish(const struct lev_tomlval_ctx *c, struct lev_blueprint *bp,
			struct lev_err *err);
void lev__bp_output_release(struct lev_output_spec *o);
void lev__bp_nudge_release(struct lev_nudge *n);
void lev__bp_transition_release(struct lev_transition *tr);
void lev__bp_points_release(struct lev_stage *st);
