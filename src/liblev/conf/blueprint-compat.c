/*
 * blueprint-compat.c - the keys of Leviath's blueprint format that lev reads
 * but does not run.
 *
 * Each key is type-checked the way Leviath's schema describes it (a wrong
 * type, a word outside an enum, or a sub-key in no schema is an error, as
 * for lev's own keys) and then kept as a finding naming what lev does
 * instead.  None of them can loosen anything: lev ignores what it does not
 * run, and the blueprint's asks (tools, permissions, paths, sandbox) stay
 * under lev's own rules in blueprint.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/conf/blueprint-internal.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

enum kt {
	KT_STR,
	KT_BOOL,
	KT_INT,			/* an integer >= 0 */
	KT_NUM,			/* an integer or a float */
	KT_STRV,		/* an array of strings */
	KT_ENUM,		/* a string, one of `words` */
	KT_TABLE,		/* a table with the keys in `sub` */
	KT_OBJECT,		/* any table (passed on verbatim in Leviath) */
	KT_MAP,			/* a table whose every value is an `elem` */
	KT_TABLES,		/* an array of tables with the keys in `sub` */
	KT_STR_OR_TABLE,	/* a string, or a table with the keys in `sub` */
	KT_STR_OR_TABLES,	/* an array of strings or tables with the keys in `sub` */
};

struct ckey {
	const char *key;
	enum kt type;
	enum kt elem;			/* KT_MAP: the values' type */
	const char *const *words;	/* KT_ENUM: NULL-terminated */
	const struct ckey *sub;		/* tables: their keys, ended by { NULL } */
	const char *what;		/* the finding; NULL: a sub-key (no finding of its own) */
	const char *instead;
};

#define K(k, t) { .key = (k), .type = (t) }
#define KE(k, w) { .key = (k), .type = KT_ENUM, .words = (w) }
#define KS(k, t, s) { .key = (k), .type = (t), .sub = (s) }
#define END { .key = NULL }

static const char *const w_map_transform[] = { "direct", "summarize", "extract", NULL };
static const char *const w_refresh[] = { "once", "each_stage", NULL };

static const struct ckey hook_keys[] = {
	K("on_stage_enter", KT_STR), K("on_stage_exit", KT_STR), K("before_inference", KT_STR),
	K("after_inference", KT_STR), K("on_tool_call", KT_STR), K("on_completion", KT_STR),
	K("on_error", KT_STR), END,
};
static const struct ckey mapping_keys[] = { K("from_region", KT_STR), K("to_region", KT_STR),
					    KE("transform", w_map_transform), K("fields", KT_STRV),
					    END };
static const struct ckey transforms_keys[] = { K("from_blueprint", KT_STR),
					       K("to_blueprint", KT_STR),
					       KS("mappings", KT_TABLES, mapping_keys), END };
static const struct ckey seed_tool_keys[] = { K("name", KT_STR), K("args", KT_OBJECT), END };

#define FIND(k, t, w, i) { .key = (k), .type = (t), .what = (w), .instead = (i) }
#define FINDS(k, t, s, w, i) { .key = (k), .type = (t), .sub = (s), .what = (w), .instead = (i) }
#define FINDE(k, ws, w, i) { .key = (k), .type = KT_ENUM, .words = (ws), .what = (w), .instead = (i) }

static const char no_hints[] = "lev's tool descriptions and the stage's system_prompt";

static const struct ckey root_keys[] = {
	FINDS("transforms", KT_TABLES, transforms_keys, "cross-blueprint context mappings",
	      "a seed (files, literal, command) in the receiving blueprint"),
	END,
};

static const struct ckey context_keys[] = {
	END,
};

static const struct ckey agent_keys[] = {
	FIND("dynamic_tools", KT_BOOL, "dynamic tools", "a stage's available_tools"),
	FIND("batch_tool_hint", KT_BOOL, "the batch-tool hint", no_hints),
	FIND("shell_hint", KT_BOOL, "the shell hint", no_hints),
	END,
};

static const struct ckey stage_keys[] = {
	FIND("allow_blocking_tools", KT_BOOL, "the blocking-tool switch",
	     "lev's permission prompts, which ask whoever runs lev"),
	FIND("batch_tool_hint", KT_BOOL, "the batch-tool hint", no_hints),
	FIND("shell_hint", KT_BOOL, "the shell hint", no_hints),
	FINDS("hooks", KT_TABLE, hook_keys, "Rhai stage hooks",
	      "Lua rules in your rules/ folder (see docs/rules.md)"),
	END,
};

static const struct ckey model_keys[] = {
	FIND("parameters", KT_OBJECT, "provider parameters",
	     "the model table's temperature and max_tokens"),
	END,
};

/* every edge key is run (blueprint-flow.c) */
static const struct ckey transition_keys[] = {
	END,
};

static const struct ckey region_keys[] = {
	FIND("description", KT_STR, "region descriptions", "the stage's system_prompt"),
	FIND("script", KT_STR, "Rhai region scripts",
	     "a seed (command or tool), or a Lua rule for checks"),
	END,
};

static const struct ckey seed_keys[] = {
	FIND("rhai", KT_STR, "Rhai seed scripts", "seed = { command = \"...\" } or { tool = ... }"),
	FINDS("tools", KT_STR_OR_TABLES, seed_tool_keys, "multi-tool seeds",
	      "one region per tool with seed = { tool = \"...\", args = {...} }"),
	FINDE("refresh", w_refresh, "re-seeding on each stage",
	      "a seed, which lev runs once at the start"),
	END,
};

static const struct ckey sandbox_keys[] = {
	FIND("persist", KT_BOOL, "persistent sandboxes",
	     "a mount (every lev sandbox is thrown away after its command)"),
	END,
};

static const struct ckey *const tables[_LEV_BPT_MAX] = {
	[LEV_BPT_ROOT] = root_keys,	      [LEV_BPT_AGENT] = agent_keys,
	[LEV_BPT_STAGE] = stage_keys,	      [LEV_BPT_MODEL] = model_keys,
	[LEV_BPT_TRANSITION] = transition_keys, [LEV_BPT_REGION] = region_keys,
	[LEV_BPT_SEED] = seed_keys,	      [LEV_BPT_SANDBOX] = sandbox_keys,
	[LEV_BPT_CONTEXT] = context_keys,
};

void lev__bp_finding(const struct lev_tomlval_ctx *c, unsigned line, unsigned col,
		     const char *key, const char *stage, const char *what, const char *instead)
{
	struct lev_blueprint *bp = ((const struct lev_bp_ctx *)c)->bp;
	struct lev_blueprint_finding *f;

	if (bp->n_findings >= LEV_BLUEPRINT_MAX_FINDINGS)
		return;
	bp->findings = xreallocarray(bp->findings, bp->n_findings + 1, sizeof(*bp->findings));
	f = &bp->findings[bp->n_findings++];
	memset(f, 0, sizeof(*f));
	f->key = xstrdup(key);
	f->stage = stage ? xstrdup(stage) : NULL;
	f->line = line;
	f->col = col;
	f->message = xasprintf("not run by lev: %s ('%s'); use %s", what, key, instead);
}

static int check_value(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		       const char *path, enum kt type, const struct ckey *spec,
		       struct lev_err *err);

static const struct ckey *find_key(const struct ckey *keys, const struct lev_toml_table *t,
				   size_t i)
{
	for (; keys && keys->key; keys++)
		if (lev_tomlval_key_is(t, i, keys->key))
			return keys;
	return NULL;
}

/* A table with exactly the keys in SUB, each checked. */
static int check_table(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		       const char *path, const struct ckey *sub, struct lev_err *err)
{
	const struct lev_toml_table *t = NULL;
	size_t i, n;
	int r = lev_tomlval_table(c, v, path, &t, err);

	if (r < 0)
		return r;
	n = lev_toml_table_len(t);
	for (i = 0; i < n; i++) {
		const struct ckey *k = find_key(sub, t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);

		if (!k) {
			struct lev_buf b = LEV_BUF_INIT_MAX(1024);
			_cleanup_free_ char *name = lev_tomlval_key_dup(t, i);
			unsigned line = 0, col = 0;

			for (k = sub; k->key; k++)
				(void)lev_buf_addf(&b, "%s%s", k == sub ? "" : ", ", k->key);
			lev_toml_table_key_pos(t, i, &line, &col);
			r = lev_tomlval_fail(c, line, col, err, "unknown key '%s' in '%s' (valid: %s)",
					     name, path, b.buf);
			lev_buf_release(&b);
			return r;
		}
		r = check_value(c, lev_toml_table_value(t, i), p, k->type, k, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_value(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		       const char *path, enum kt type, const struct ckey *spec,
		       struct lev_err *err)
{
	const struct lev_toml_table *t = NULL;
	uint64_t u = 0;
	size_t i, n;
	int r = 0, e = 0;

	switch (type) {
	case KT_STR:
		return lev_tomlval_type(c, v, LEV_TOML_STRING, path, err);
	case KT_BOOL:
		return lev_tomlval_type(c, v, LEV_TOML_BOOL, path, err);
	case KT_INT:
		return lev_tomlval_u64(c, v, path, 0, INT64_MAX, &u, err);
	case KT_NUM:
		if (v->type == LEV_TOML_INTEGER || v->type == LEV_TOML_FLOAT)
			return 0;
		return lev_tomlval_fail(c, v->line, v->col, err, "'%s' must be a number, not %s",
					path, lev_toml_type_name(v->type));
	case KT_STRV: {
		_cleanup_strv_ char **l = NULL;
		return lev_tomlval_strv(c, v, path, &l, err);
	}
	case KT_ENUM:
		return lev_tomlval_enum(c, v, path, spec->words, lev_strv_len((char **)spec->words),
					&e, err);
	case KT_TABLE:
		return check_table(c, v, path, spec->sub, err);
	case KT_OBJECT:
		return lev_tomlval_table(c, v, path, &t, err);
	case KT_MAP:
		r = lev_tomlval_table(c, v, path, &t, err);
		n = r < 0 ? 0 : lev_toml_table_len(t);
		for (i = 0; i < n && r == 0; i++) {
			_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);
			r = check_value(c, lev_toml_table_value(t, i), p, spec->elem, spec, err);
		}
		return r;
	case KT_STR_OR_TABLE:
		if (v->type == LEV_TOML_STRING)
			return 0;
		if (v->type != LEV_TOML_TABLE)
			return lev_tomlval_fail(c, v->line, v->col, err,
						"'%s' must be a string or a table, not %s", path,
						lev_toml_type_name(v->type));
		return check_table(c, v, path, spec->sub, err);
	case KT_TABLES:
	case KT_STR_OR_TABLES:
		r = lev_tomlval_type(c, v, LEV_TOML_ARRAY, path, err);
		n = r < 0 ? 0 : lev_toml_array_len(v->u.array);
		if (n > LEV_TOMLVAL_LIST_MAX)
			return lev_tomlval_fail(c, v->line, v->col, err, "'%s' has too many entries",
						path);
		for (i = 0; i < n && r == 0; i++) {
			_cleanup_free_ char *p = xasprintf("%s[%zu]", path, i);
			r = check_value(c, lev_toml_array_at(v->u.array, i), p,
					type == KT_TABLES ? KT_TABLE : KT_STR_OR_TABLE, spec, err);
		}
		return r;
	}
	return 0;
}

int lev__bp_compat_key(const struct lev_tomlval_ctx *c, enum lev_bp_table kind,
		       const struct lev_toml_table *t, size_t i, const char *table,
		       const char *stage, struct lev_err *err)
{
	const struct ckey *k = find_key(tables[kind], t, i);
	_cleanup_free_ char *p = NULL;
	unsigned line = 0, col = 0;
	int r;

	if (!k)
		return 0;
	p = lev_tomlval_key_path(table, t, i);
	r = check_value(c, lev_toml_table_value(t, i), p, k->type, k, err);
	if (r < 0)
		return r;
	lev_toml_table_key_pos(t, i, &line, &col);
	lev__bp_finding(c, line, col, p, stage, k->what, k->instead);
	return 1;
}

void lev__bp_compat_names(enum lev_bp_table kind, struct lev_buf *b)
{
	const struct ckey *k;

	for (k = tables[kind]; k && k->key; k++)
		(void)lev_buf_addf(b, ", %s", k->key);
}

bool lev__bp_compat_has(enum lev_bp_table kind, const struct lev_toml_table *t, size_t i)
{
	return find_key(tables[kind], t, i) != NULL;
}

int lev__bp_check_keys(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
		       const char *where, const char *table, const char *const *known,
		       enum lev_bp_table kind, const char *stage, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);
	int r;

	for (i = 0; i < n; i++) {
		const char *const *k;
		bool ok = false;

		for (k = known; *k && !ok; k++)
			ok = lev_tomlval_key_is(t, i, *k);
		if (ok)
			continue;
		r = lev__bp_compat_key(c, kind, t, i, table, stage, err);
		if (r < 0)
			return r;
		if (r == 0) {
			struct lev_buf b = LEV_BUF_INIT_MAX(2048);
			_cleanup_free_ char *name = lev_tomlval_key_dup(t, i);
			unsigned line = 0, col = 0;

			for (k = known; *k; k++)
				(void)lev_buf_addf(&b, "%s%s", k == known ? "" : ", ", *k);
			lev__bp_compat_names(kind, &b);
			lev_toml_table_key_pos(t, i, &line, &col);
			r = lev_tomlval_fail(c, line, col, err, "unknown key '%s' in %s (valid: %s)",
					     name, where, b.buf);
			lev_buf_release(&b);
			return r;
		}
	}
	return 0;
}
