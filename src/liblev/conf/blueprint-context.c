/*
 * blueprint-context.c - the agent-wide context keys lev runs:
 * [repetition_detection] and [context.file_tracking] (blueprint.h).
 */
#include <string.h>

#include "liblev/conf/blueprint-internal.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/xalloc.h"

int lev__bp_parse_repetition(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			     struct lev_repetition *rd, struct lev_err *err)
{
	static const char *const keys[] = { "enabled", "max_repeat_calls", "max_readonly_streak",
					    NULL };
	int r = lev_tomlval_check_keys(c, t, "repetition_detection", keys, true, err);

	rd->present = true;
	rd->enabled = true;
	rd->max_repeat_calls = 3;
	rd->max_readonly_streak = 10;
	for (size_t i = 0; i < lev_toml_table_len(t) && r == 0; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path("repetition_detection", t, i);
		const struct lev_toml_value *v = lev_toml_table_value(t, i);

		if (lev_tomlval_key_is(t, i, "enabled"))
			r = lev_tomlval_bool(c, v, p, &rd->enabled, err);
		else if (lev_tomlval_key_is(t, i, "max_repeat_calls"))
			r = lev_tomlval_u64(c, v, p, 1, 1000, &rd->max_repeat_calls, err);
		else
			r = lev_tomlval_u64(c, v, p, 1, 100000, &rd->max_readonly_streak, err);
	}
	return r;
}

int lev__bp_parse_file_tracking(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
				struct lev_file_tracking *ft, struct lev_err *err)
{
	static const char *const keys[] = { "region", "track_reads", "track_writes",
					    "max_file_tokens", NULL };
	const struct lev_toml_table *t = NULL;
	int r = lev_tomlval_table(c, v, "context.file_tracking", &t, err);

	if (r == 0)
		r = lev_tomlval_check_keys(c, t, "context.file_tracking", keys, true, err);
	ft->present = true;
	ft->track_reads = true;
	ft->track_writes = true;
	for (size_t i = 0; i < (r == 0 ? lev_toml_table_len(t) : 0) && r == 0; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path("context.file_tracking", t, i);
		const struct lev_toml_value *e = lev_toml_table_value(t, i);

		if (lev_tomlval_key_is(t, i, "region"))
			r = lev_tomlval_set_str(c, e, p, &ft->region, err);
		else if (lev_tomlval_key_is(t, i, "track_reads"))
			r = lev_tomlval_bool(c, e, p, &ft->track_reads, err);
		else if (lev_tomlval_key_is(t, i, "track_writes"))
			r = lev_tomlval_bool(c, e, p, &ft->track_writes, err);
		else
			r = lev_tomlval_u64(c, e, p, 1, (uint64_t)1 << 24, &ft->max_file_tokens,
					    err);
	}
	if (r == 0 && !ft->region)
		ft->region = xstrdup("files");
	return r;
}

int lev__bp_parse_compaction(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			     struct lev_compaction *cp, struct lev_err *err)
{
	static const char *const keys[] = { "provider", "model", "system_prompt",
					    "max_summary_tokens", "temperature", NULL };
	int r = lev_tomlval_check_keys(c, t, "compaction", keys, true, err);

	cp->max_summary_tokens = 2000;
	cp->temperature = 0.2;
	for (size_t i = 0; i < lev_toml_table_len(t) && r == 0; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path("compaction", t, i);
		const struct lev_toml_value *v = lev_toml_table_value(t, i);

		if (lev_tomlval_key_is(t, i, "provider"))
			r = lev_tomlval_set_str(c, v, p, &cp->provider, err);
		else if (lev_tomlval_key_is(t, i, "model"))
			r = lev_tomlval_set_str(c, v, p, &cp->model, err);
		else if (lev_tomlval_key_is(t, i, "system_prompt"))
			r = lev_tomlval_set_str(c, v, p, &cp->system_prompt, err);
		else if (lev_tomlval_key_is(t, i, "max_summary_tokens"))
			r = lev_tomlval_u64(c, v, p, 1, 100000, &cp->max_summary_tokens, err);
		else if (v->type == LEV_TOML_INTEGER || v->type == LEV_TOML_FLOAT)
			cp->temperature = v->type == LEV_TOML_FLOAT ? v->u.flt
								    : (double)v->u.integer;
		else
			r = lev_tomlval_fail(c, v->line, v->col, err, "'%s' must be a number", p);
	}
	return r;
}
