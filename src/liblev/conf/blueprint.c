/*
 * blueprint.c - agent.leviath into struct lev_blueprint.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/conf/blueprint.h"
#include "liblev/conf/blueprint-internal.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/datadir.h"
#include "liblev/conf/readpaths.h"
#include "liblev/base/strv.h"
#include "liblev/conf/toml.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static const char *const mode_names[] = { "autonomous", "interactive", "output", "fan_out" };
static const char *const region_kind_names[] = { "pinned", "sliding_window", "temporary",
						 "clearable" };
static const char *const seed_kind_names[] = { "none", "caller", "files", "glob",
					       "literal", "command", "tool" };
static const char *const when_names[] = { "done", "error", "max_iterations", "stuck",
					  "dead_end" };
/* Leviath's spellings: mode, region kind and condition words lev maps to its own */
static const struct {
	const char *word;
	int as;			/* the lev value it runs as */
	const char *what;	/* NULL: the same meaning, no finding */
	const char *instead;
} leviath_modes[] = {
	{ "interactive_points", LEV_MODE_INTERACTIVE, NULL, NULL },
	{ "fan_out_merge", LEV_MODE_FAN_OUT, NULL, NULL },
}, leviath_kinds[] = {
	/* strategy "compact" (parse_region): summarised, not dropped */
	{ "compacting", LEV_REGION_TEMPORARY, NULL, NULL },
	{ "compact_history", LEV_REGION_TEMPORARY, NULL, NULL },
	{ "hashmap", LEV_REGION_CLEARABLE, "map regions (this one is clearable: the model "
	  "can clear it, not edit one entry)", "clearable" },
	{ "hash_map", LEV_REGION_CLEARABLE, "map regions (this one is clearable: the model "
	  "can clear it, not edit one entry)", "clearable" },
	/* the todo tools keep it; never evicted (parse_region) */
	{ "checklist", LEV_REGION_CLEARABLE, NULL, NULL },
	{ "custom", LEV_REGION_TEMPORARY, "Rhai custom regions (this one is temporary)",
	  "a built-in kind" },
}, leviath_conditions[] = {
	{ "always", LEV_WHEN_DONE, NULL, NULL },
	{ "llm_choice", LEV_WHEN_DONE, NULL, NULL },
};
static const char *const kind_words[] = { "none", "namespace", "container" };
static const char *const onun_words[] = { "error", "warn" };

static const char *const stage_keys[] = {
	"allow_complete", "available_connectors", "available_tools", "description", "max_iterations", "mode", "model",
	"next", "required_tools", "sandbox", "security", "system_prompt", "tool_permissions",
	"transitions", "max_revisits", "require_output", "transition_prompt", "accepts_messages",
	"tool_routing", "context", "output", "nudge", "interaction_points", "worker_stage",
	"worker_agent", "worker_query", "merge_stage", "results_region", "split_prompt",
	"max_workers", "max_items", "max_attempts", "on_worker_failure", "allow_as_worker",
	"requires_children", NULL,
};
static const char *const model_keys[] = { "provider", "model", "script", "max_tokens",
					   "temperature", "models", "fallbacks",
					   "allow_user_default", "request_timeout_secs", NULL };
static const char *const choice_keys[] = { "provider", "model", NULL };
static const char *const sandbox_keys[] = { "kind", "image", "engine", "network", "mount",
					    "mounts", "on_unavailable", "writable", NULL };
static const char *const security_keys[] = { "taint_tracking", NULL };
static const char *const transition_keys[] = {
	"hint", "condition", "transform", "transform_config", "gate", "stuck_after_iterations",
	"stuck_after_minutes", "stuck_after_tool_calls", "stuck_after_same_file_edits", NULL,
};
static const char *const read_paths_keys[] = { "allow", NULL };
static const char *const safe_keys[] = { "tools", "shell", NULL };
static const char *const seed_keys[] = { "files", "glob", "literal", "command", "tool", "args",
					 "caller", NULL };

#define NAME_MAX_LEN 64
#define TOOL_NAME_MAX 128

const char *lev_stage_mode_name(enum lev_stage_mode m)
{
	return m < _LEV_MODE_MAX ? mode_names[m] : "?";
}

static const char *const volatility_names[] = { "rewritten", "grows", "stable" };
static const char *const strategy_names[] = { "per_item", "bulk", "compact" };

const char *lev_volatility_name(enum lev_volatility v)
{
	return v < _LEV_VOL_MAX ? volatility_names[v] : "?";
}

const char *lev_region_kind_name(enum lev_region_kind k)
{
	return k < _LEV_REGION_KIND_MAX ? region_kind_names[k] : "?";
}

const char *lev_seed_kind_name(enum lev_seed_kind k)
{
	return k < _LEV_SEED_KIND_MAX ? seed_kind_names[k] : "?";
}

/* ---- freeing ---------------------------------------------------------- */

static void seed_release(struct lev_seed *s)
{
	free(s->value);
	lev_strv_free(s->list);
	free(s->args_json);
	memset(s, 0, sizeof(*s));
}

static void region_release(struct lev_region *r)
{
	free(r->name);
	seed_release(&r->seed);
	free(r->required_message);
	free(r->source_region);
	memset(r, 0, sizeof(*r));
}

static void stage_release(struct lev_stage *s)
{
	size_t i;

	lev_strv_free(s->context_regions);
	for (i = 0; i < s->n_parse_regions; i++)
		region_release(&s->parse_regions[i]);
	free(s->parse_regions);

	free(s->name);
	free(s->description);
	free(s->model.provider);
	free(s->model.model);
	free(s->model.script);
	for (i = 0; i < s->model.n_choices; i++) {
		free(s->model.choices[i].provider);
		free(s->model.choices[i].model);
	}
	free(s->model.choices);
	lev_strv_free(s->available_tools);
	lev_strv_free(s->required_tools);
	lev_strv_free(s->available_connectors);
	lev_tool_perms_release(&s->tool_permissions);
	lev_sandbox_spec_release(&s->sandbox);
	free(s->system_prompt);
	free(s->next);
	for (i = 0; i < s->n_transitions; i++)
		lev__bp_transition_release(&s->transitions[i]);
	free(s->transitions);
	lev__bp_routing_release(&s->routing);
	free(s->transition_prompt);
	lev__bp_output_release(&s->output);
	lev__bp_nudge_release(&s->nudge);
	lev__bp_points_release(s);
	lev__bp_fanout_release(s);
	memset(s, 0, sizeof(*s));
}

struct lev_blueprint *lev_blueprint_free(struct lev_blueprint *bp)
{
	size_t i;

	if (!bp)
		return NULL;
	free(bp->dir);
	free(bp->path);
	free(bp->name);
	free(bp->version);
	free(bp->description);
	free(bp->entry_stage);
	for (i = 0; i < bp->n_stages; i++)
		stage_release(&bp->stages[i]);
	free(bp->stages);
	for (i = 0; i < bp->n_regions; i++)
		region_release(&bp->regions[i]);
	free(bp->regions);
	free(bp->file_tracking.region);
	free(bp->compaction.provider);
	free(bp->compaction.model);
	free(bp->compaction.system_prompt);
	lev_tool_perms_release(&bp->tool_permissions);
	lev__bp_output_release(&bp->output);
	lev__bp_nudge_release(&bp->nudge);
	lev_sandbox_spec_release(&bp->sandbox);
	lev_strv_free(bp->read_paths);
	lev_strv_free(bp->safe_tools);
	lev_strv_free(bp->safe_shell);
	lev_strv_free(bp->warnings);
	lev_scripttools_free(bp->script_tools, bp->n_script_tools);
	for (i = 0; i < bp->n_findings; i++) {
		free(bp->findings[i].file);
		free(bp->findings[i].key);
		free(bp->findings[i].stage);
		free(bp->findings[i].message);
	}
	free(bp->findings);
	free(bp->identity_note);
	free(bp);
	return NULL;
}

const struct lev_region *lev_blueprint_caller_input(const struct lev_blueprint *bp,
						    const char *name)
{
	for (size_t i = 0; bp && name && i < bp->n_regions; i++) {
		const struct lev_region *rg = &bp->regions[i];

		if (rg->seed.kind == LEV_SEED_CALLER &&
		    (lev_streq(rg->seed.value, name) || lev_streq(rg->name, name)))
			return rg;
	}
	return NULL;
}

const char *lev_blueprint_grant_name(const struct lev_blueprint *bp)
{
	return bp && bp->identity_verified ? bp->name : NULL;
}

/* ---- helpers ---------------------------------------------------------- */

static int cmp_str(const void *a, const void *b);
static char **tools_dir_files(const char *dir);

static int fail_at_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t, size_t i,
		       struct lev_err *err, const char *msg)
{
	unsigned line = 0, col = 0;

	lev_toml_table_key_pos(t, i, &line, &col);
	return lev_tomlval_fail(c, line, col, err, "%s", msg);
}

static int fail_at_table(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 struct lev_err *err, const char *msg)
{
	unsigned line = 0, col = 0;

	lev_toml_table_pos(t, &line, &col);
	return lev_tomlval_fail(c, line, col, err, "%s", msg);
}

/* Stage and region names: [A-Za-z0-9_-], 1..64 bytes. */
static bool ident_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > NAME_MAX_LEN)
		return false;
	for (i = 0; i < len; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

/* Tool names: [A-Za-z0-9_.-], 1..128 bytes (MCP-style server__tool included). */
static bool tool_name_ok(const char *s)
{
	size_t i, len = strlen(s);

	if (len == 0 || len > TOOL_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return false;
	}
	return true;
}

/*
 * One printable line: no C0 control byte, DEL, or C1 control (U+0080 to
 * U+009F, which some terminals obey), so a name, version or description
 * printed by `lev list` cannot drive the user's terminal.
 */
static bool line_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return false;
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			return false;
	}
	return true;
}

static int set_line(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		    const char *path, char **dst, struct lev_err *err);

static int set_line(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		    const char *path, char **dst, struct lev_err *err)
{
	int r = lev_tomlval_set_str(c, v, path, dst, err);

	if (r == 0 && !line_ok(*dst))
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be one line of printable text (it holds a "
					"control character)",
					path);
	return r;
}

/* A list of tool names, canonicalised and deduplicated. */
static int tool_list(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		     const char *path, char ***out, struct lev_err *err)
{
	_cleanup_strv_ char **raw = NULL;
	const struct lev_toml_array *a;
	char **res = NULL;
	size_t i;
	int r = lev_tomlval_strv(c, v, path, &raw, err);

	if (r < 0)
		return r;
	a = v->u.array;
	for (i = 0; raw && raw[i]; i++) {
		const char *canon = lev_tool_canonical(raw[i]);

		if (!tool_name_ok(raw[i])) {
			const struct lev_toml_value *e = lev_toml_array_at(a, i);
			_cleanup_free_ char *p = lev_printable(raw[i], strlen(raw[i]), 64);
			lev_strv_free(res);
			return lev_tomlval_fail(c, e->line, e->col, err,
						"'%s' names '%s', which is not a tool name "
						"(letters, digits, '_', '-', '.')",
						path, p);
		}
		if (!lev_strv_contains(res, canon))
			res = lev_strv_push(res, canon);
	}
	lev_strv_free(*out);
	*out = res;
	return 0;
}

/*
 * A finding for each tool of the list V (at PATH, in STAGE) that lev knows
 * by name but does not have (a foreign entry of the tool table): the stage
 * runs without it.
 */
static void foreign_tool_findings(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
				  const char *path, const char *stage)
{
	for (size_t i = 0; i < lev_toml_array_len(v->u.array); i++) {
		const struct lev_toml_value *e = lev_toml_array_at(v->u.array, i);
		const struct lev_tool_desc *d =
			e->type == LEV_TOML_STRING ? lev_tooltable_find(e->u.str.ptr) : NULL;
		_cleanup_free_ char *what = NULL;

		if (!d || !(d->flags & LEV_TOOLF_FOREIGN))
			continue;
		what = xasprintf("the tool '%s' (the stage runs without it)", d->name);
		lev__bp_finding(c, e->line, e->col, path, stage, what,
				"the tools lev has (docs/run.md), or an MCP server's tool");
	}
}

/*
 * An enum that also takes Leviath's words for it (WORDS, N): a Leviath word
 * runs as its lev value and leaves a finding when the meaning differs.
 */
#define leviath_enum(c, v, path, names, n, words, stage, out, err)                            \
	leviath_enum_n(c, v, path, names, n, words, ARRAY_SIZE(words), stage, out, err)
static int leviath_enum_n(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			  const char *path, const char *const *names, size_t n,
			  const void *words_, size_t nw, const char *stage, int *out,
			  struct lev_err *err)
{
	const struct {
		const char *word;
		int as;
		const char *what;
		const char *instead;
	} *words = words_;
	size_t i;

	for (i = 0; v->type == LEV_TOML_STRING && i < nw; i++) {
		if (v->u.str.len != strlen(words[i].word) ||
		    strncasecmp(v->u.str.ptr, words[i].word, v->u.str.len))
			continue;
		if (words[i].what)
			lev__bp_finding(c, v->line, v->col, path, stage, words[i].what,
					words[i].instead);
		*out = words[i].as;
		return 0;
	}
	return lev_tomlval_enum(c, v, path, names, n, out, err);
}

/* ---- [sandbox] -------------------------------------------------------- */

static int parse_sandbox(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 const char *table, struct lev_sandbox_spec *s, struct lev_err *err)
{
	_cleanup_free_ char *where = xasprintf("[%s]", table);
	size_t i, n = lev_toml_table_len(t);
	int r;

	r = lev__bp_check_keys(c, t, where, table, sandbox_keys, LEV_BPT_SANDBOX, NULL, err);
	if (r < 0)
		return r;
	s->present = true;
	s->kind = LEV_SANDBOX_NONE;	/* a block without kind means none */
	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(table, t, i);
		int e = 0;

		if (lev_tomlval_key_is(t, i, "kind")) {
			r = lev_tomlval_enum(c, v, p, kind_words, _LEV_SANDBOX_KIND_MAX, &e, err);
			if (r == 0) {
				s->has_kind = true;
				s->kind = (enum lev_sandbox_kind)e;
			}
		} else if (lev_tomlval_key_is(t, i, "image")) {
			r = lev_tomlval_set_str(c, v, p, &s->image, err);
		} else if (lev_tomlval_key_is(t, i, "engine")) {
			_cleanup_free_ char *engine = NULL;
			r = lev_tomlval_string(c, v, p, &engine, err);
			if (r == 0)
				lev_tomlval_warn(c, v->line,
						 "'%s' is ignored: only your config.toml chooses "
						 "the container engine",
						 p);
		} else if (lev_tomlval_key_is(t, i, "network")) {
			r = lev_tomlval_bool(c, v, p, &s->network, err);
			if (r == 0)
				s->has_network = true;
		} else if (lev_tomlval_key_is(t, i, "mount") || lev_tomlval_key_is(t, i, "mounts")) {
			_cleanup_strv_ char **list = NULL;
			char **m;
			r = lev_tomlval_strv(c, v, p, &list, err);
			for (m = list; r == 0 && m && *m; m++)
				if (!lev_strv_contains(s->mounts, *m))
					s->mounts = lev_strv_push(s->mounts, *m);
		} else if (lev_tomlval_key_is(t, i, "writable")) {
			/* narrows the user's list only (lev_sandbox_resolve) */
			r = lev_tomlval_set_strv(c, v, p, &s->writable, err);
			if (r == 0)
				s->has_writable = true;
		} else if (lev__bp_compat_has(LEV_BPT_SANDBOX, t, i)) {
			continue;
		} else {
			r = lev_tomlval_enum(c, v, p, onun_words, _LEV_ON_UNAVAILABLE_MAX, &e, err);
			if (r == 0) {
				s->has_on_unavailable = true;
				s->on_unavailable = (enum lev_on_unavailable)e;
			}
		}
		if (r < 0)
			return r;
	}
	if (!s->has_network)
		s->network = true;
	return 0;
}

/* [security] (agent or stage): only taint_tracking; a bare block means true. */
static int parse_security(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			  const char *table, bool *taint, struct lev_err *err)
{
	_cleanup_free_ char *where = xasprintf("[%s]", table);
	const struct lev_toml_value *v;
	_cleanup_free_ char *p = xasprintf("%s.taint_tracking", table);
	int r;

	r = lev_tomlval_check_keys(c, t, where, security_keys, true, err);
	if (r < 0)
		return r;
	*taint = true;
	v = lev_toml_table_get(t, "taint_tracking");
	if (!v)
		return 0;
	r = lev_tomlval_bool(c, v, p, taint, err);
	if (r < 0)
		return r;
	if (!*taint)
		lev_tomlval_warn(c, v->line,
				 "'%s = false' has no effect: a blueprint can turn taint tracking "
				 "on, never off",
				 p);
	return 0;
}

/* ---- model ------------------------------------------------------------ */

/* A path inside the blueprint directory: relative, no '..' component. */
static bool inside_path_ok(const char *p)
{
	const char *s = p;

	if (!*p || *p == '/')
		return false;
	while (*s) {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len == 2 && s[0] == '.' && s[1] == '.')
			return false;
		if (!e)
			break;
		s = e + 1;
	}
	return true;
}

/* models = [{ provider, model }, ...] (or fallbacks): appended to m->choices. */
static int parse_choices(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			 const char *path, struct lev_model_ref *m, struct lev_err *err)
{
	size_t i, n;
	int r = lev_tomlval_type(c, v, LEV_TOML_ARRAY, path, err);

	if (r < 0)
		return r;
	n = lev_toml_array_len(v->u.array);
	if (n > 64 || m->n_choices + n > 64)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' has too many entries (the limit is 64)", path);
	m->choices = xreallocarray(m->choices, m->n_choices + n + 1, sizeof(*m->choices));
	for (i = 0; i < n; i++) {
		const struct lev_toml_value *e = lev_toml_array_at(v->u.array, i);
		const struct lev_toml_table *t = NULL;
		_cleanup_free_ char *p = xasprintf("%s[%zu]", path, i);
		_cleanup_free_ char *where = xasprintf("'%s'", p);
		_cleanup_free_ char *pp = xasprintf("%s.provider", p);
		_cleanup_free_ char *mp = xasprintf("%s.model", p);
		struct lev_model_choice ch = { NULL, NULL, e->line, e->col };
		const struct lev_toml_value *pv, *mv;

		r = lev_tomlval_table(c, e, p, &t, err);
		if (r == 0)
			r = lev_tomlval_check_keys(c, t, where, choice_keys, true, err);
		if (r < 0)
			return r;
		pv = lev_toml_table_get(t, "provider");
		mv = lev_toml_table_get(t, "model");
		if (!pv || !mv)
			return lev_tomlval_fail(c, e->line, e->col, err,
						"'%s' needs both 'provider' and 'model'", p);
		r = lev_tomlval_string(c, pv, pp, &ch.provider, err);
		if (r == 0)
			r = lev_tomlval_string(c, mv, mp, &ch.model, err);
		if (r == 0 && (!ch.provider[0] || !strcmp(ch.provider, "script")))
			r = lev_tomlval_fail(c, pv->line, pv->col, err,
					     "'%s' must name a provider (\"script\" goes in the "
					     "model table itself)",
					     pp);
		if (r < 0) {
			free(ch.provider);
			free(ch.model);
			return r;
		}
		m->choices[m->n_choices++] = ch;
	}
	return 0;
}

static int parse_model(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		       const char *path, const char *stage, struct lev_model_ref *m,
		       struct lev_err *err)
{
	const struct lev_toml_table *t;
	_cleanup_free_ char *where = xasprintf("'%s'", path);
	size_t i, n;
	int r;

	if (v->type == LEV_TOML_STRING) {
		_cleanup_free_ char *s = NULL;
		char *slash;

		r = lev_tomlval_string(c, v, path, &s, err);
		if (r < 0)
			return r;
		slash = strchr(s, '/');
		if (!slash || slash == s || !slash[1])
			return lev_tomlval_fail(c, v->line, v->col, err,
						"'%s' must be \"provider/model\" or a table "
						"{ provider = .., model = .. }",
						path);
		m->provider = xstrndup(s, (size_t)(slash - s));
		m->model = xstrdup(slash + 1);
		return 0;
	}
	if (v->type != LEV_TOML_TABLE)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be \"provider/model\" or a table, not %s", path,
					lev_toml_type_name(v->type));
	t = v->u.table;
	r = lev__bp_check_keys(c, t, where, path, model_keys, LEV_BPT_MODEL, stage, err);
	if (r < 0)
		return r;
	n = lev_toml_table_len(t);
	for (i = 0; i < n; i++) {
		const struct lev_toml_value *e = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);

		if (lev_tomlval_key_is(t, i, "provider"))
			r = lev_tomlval_set_str(c, e, p, &m->provider, err);
		else if (lev_tomlval_key_is(t, i, "model"))
			r = lev_tomlval_set_str(c, e, p, &m->model, err);
		else if (lev_tomlval_key_is(t, i, "script")) {
			r = lev_tomlval_set_str(c, e, p, &m->script, err);
			if (r == 0 && !inside_path_ok(m->script))
				r = lev_tomlval_fail(c, e->line, e->col, err,
						     "'%s' must be a relative path inside the "
						     "blueprint directory (no leading '/', no '..')",
						     p);
		} else if (lev_tomlval_key_is(t, i, "max_tokens"))
			r = lev_tomlval_u64(c, e, p, 1, (uint64_t)1 << 24, &m->max_tokens, err);
		else if (lev_tomlval_key_is(t, i, "request_timeout_secs"))
			r = lev_tomlval_u64(c, e, p, 1, 86400, &m->timeout_secs, err);
		else if (lev_tomlval_key_is(t, i, "allow_user_default")) {
			bool b = true;
			r = lev_tomlval_bool(c, e, p, &b, err);
			m->no_user_default = !b;
		}
		else if (lev_tomlval_key_is(t, i, "models") || lev_tomlval_key_is(t, i, "fallbacks"))
			continue;	/* below, models first */
		else if (lev__bp_compat_has(LEV_BPT_MODEL, t, i))
			continue;
		else {
			double d;
			if (e->type == LEV_TOML_INTEGER)
				d = (double)e->u.integer;
			else if (e->type == LEV_TOML_FLOAT)
				d = e->u.flt;
			else
				return lev_tomlval_fail(c, e->line, e->col, err,
							"'%s' must be a number, not %s", p,
							lev_toml_type_name(e->type));
			if (!(d >= 0.0 && d <= 2.0))
				return lev_tomlval_fail(c, e->line, e->col, err,
							"'%s' must be between 0 and 2", p);
			m->has_temperature = true;
			m->temperature = d;
			r = 0;
		}
		if (r < 0)
			return r;
	}
	for (i = 0; i < 2; i++) {
		const char *key = i ? "fallbacks" : "models";
		const struct lev_toml_value *e = lev_toml_table_get(t, key);
		_cleanup_free_ char *p = xasprintf("%s.%s", path, key);

		if (e && (r = parse_choices(c, e, p, m, err)) < 0)
			return r;
	}
	if (m->n_choices && !m->provider && !m->model) {
		m->provider = xstrdup(m->choices[0].provider);
		m->model = xstrdup(m->choices[0].model);
	}
	if (m->provider && !strcmp(m->provider, "script") && !m->script)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' uses provider \"script\" and needs 'script' (the turns "
					"file, relative to the blueprint)",
					path);
	if (m->script && (!m->provider || strcmp(m->provider, "script")))
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' sets 'script', which only the \"script\" provider reads",
					path);
	return 0;
}

/* ---- stages ----------------------------------------------------------- */

static int parse_transitions(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			     const char *path, struct lev_stage *st, struct lev_err *err)
{
	size_t i, n;
	int r;

	if (v->type == LEV_TOML_ARRAY) {
		_cleanup_strv_ char **targets = NULL;

		r = lev_tomlval_strv(c, v, path, &targets, err);
		if (r < 0)
			return r;
		n = lev_strv_len(targets);
		st->transitions = xcalloc(n ? n : 1, sizeof(*st->transitions));
		for (i = 0; i < n; i++) {
			st->transitions[i].target = TAKE_PTR(targets[i]);
			st->n_transitions++;
		}
		return 0;
	}
	if (v->type != LEV_TOML_TABLE)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be an array of stage names or a table of "
					"stage = { hint, condition }, not %s",
					path, lev_toml_type_name(v->type));
	n = lev_toml_table_len(v->u.table);
	st->transitions = xcalloc(n ? n : 1, sizeof(*st->transitions));
	for (i = 0; i < n; i++) {
		const struct lev_toml_table *tt = v->u.table;
		const struct lev_toml_table *sub = NULL;
		const struct lev_toml_value *e;
		struct lev_transition *tr = &st->transitions[st->n_transitions];
		_cleanup_free_ char *p = lev_tomlval_key_path(path, tt, i);
		_cleanup_free_ char *where = xasprintf("'%s'", p);
		int w = 0;

		r = lev_tomlval_table(c, lev_toml_table_value(tt, i), p, &sub, err);
		if (r < 0)
			return r;
		r = lev__bp_check_keys(c, sub, where, p, transition_keys, LEV_BPT_TRANSITION,
				       st->name, err);
		if (r < 0)
			return r;
		tr->target = lev_tomlval_key_dup(tt, i);
		lev_toml_table_key_pos(tt, i, &tr->line, &tr->col);
		st->n_transitions++;
		for (size_t k = 0, nk = lev_toml_table_len(sub); k < nk; k++) {
			r = lev__bp_flow_transition_key(c, sub, k, p, tr, err);
			if (r < 0)
				return r;
		}
		e = lev_toml_table_get(sub, "hint");
		if (e) {
			_cleanup_free_ char *hp = xasprintf("%s.hint", p);
			r = lev_tomlval_set_str(c, e, hp, &tr->hint, err);
			if (r < 0)
				return r;
		}
		e = lev_toml_table_get(sub, "condition");
		if (e) {
			_cleanup_free_ char *cp = xasprintf("%s.condition", p);
			r = leviath_enum(c, e, cp, when_names, _LEV_WHEN_MAX, leviath_conditions,
					 st->name, &w, err);
			if (r < 0)
				return r;
			tr->when = (enum lev_transition_when)w;
			tr->always = e->type == LEV_TOML_STRING && e->u.str.len == 6 &&
				     !memcmp(e->u.str.ptr, "always", 6);
		}
	}
	return 0;
}

static int parse_region(const struct lev_tomlval_ctx *c, const char *name,
			const struct lev_toml_table *t, struct lev_region *rg, struct lev_err *err);

/* The regions table REGIONS at PATH into *OUT / *N (which own what was parsed, even on error). */
static int parse_regions(const struct lev_tomlval_ctx *c, const struct lev_toml_table *regions,
			 const char *path, struct lev_region **out, size_t *n_out,
			 struct lev_err *err)
{
	size_t n = lev_toml_table_len(regions);
	int r;

	if (n > LEV_BLUEPRINT_MAX_REGIONS)
		return fail_at_table(c, regions, err, "too many context regions");
	*out = xcalloc(n ? n : 1, sizeof(**out));
	for (size_t i = 0; i < n; i++) {
		const struct lev_toml_table *sub = NULL;
		size_t klen = 0;
		const char *k = lev_toml_table_key(regions, i, &klen);
		_cleanup_free_ char *name = lev_tomlval_key_dup(regions, i);
		_cleanup_free_ char *p = xasprintf("%s.%s", path, name);

		if (!ident_ok(k, klen)) {
			_cleanup_free_ char *msg = xasprintf(
				"region name '%s' must be 1-%d letters, digits, '_' or '-'", name,
				NAME_MAX_LEN);
			return fail_at_key(c, regions, i, err, msg);
		}
		r = lev_tomlval_table(c, lev_toml_table_value(regions, i), p, &sub, err);
		if (r == 0)
			r = parse_region(c, name, sub, &(*out)[(*n_out)++], err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* [stages.X.context]: only `regions`, each a region as in [context.regions]. */
static int parse_stage_context(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			       const char *path, struct lev_stage *st, struct lev_err *err)
{
	static const char *const keys[] = { "regions", NULL };
	const struct lev_toml_table *t = NULL, *regions = NULL;
	_cleanup_free_ char *rp = xasprintf("%s.regions", path);
	const struct lev_toml_value *rv;
	int r = lev_tomlval_table(c, v, path, &t, err);

	if (r == 0)
		r = lev_tomlval_check_keys(c, t, path, keys, true, err);
	rv = r == 0 ? lev_toml_table_get(t, "regions") : NULL;
	if (r < 0 || !rv)
		return r;
	r = lev_tomlval_table(c, rv, rp, &regions, err);
	if (r < 0)
		return r;
	st->has_context = true;
	r = parse_regions(c, regions, rp, &st->parse_regions, &st->n_parse_regions, err);
	for (size_t i = 0; i < st->n_parse_regions; i++)
		st->context_regions = lev_strv_push(st->context_regions,
						    st->parse_regions[i].name);
	return r;
}

/*
 * After the parse: a region a stage declares and [context.regions] does not
 * joins the blueprint's regions (shown only in the stages that list it); one
 * both declare keeps the agent's settings.
 */
static int merge_stage_regions(struct lev_blueprint *bp, struct lev_err *err)
{
	for (size_t i = 0; i < bp->n_stages; i++) {
		struct lev_stage *st = &bp->stages[i];

		for (size_t j = 0; j < st->n_parse_regions; j++) {
			struct lev_region *rg = &st->parse_regions[j];

			if (lev_blueprint_region(bp, rg->name)) {
				region_release(rg);
				continue;
			}
			if (bp->n_regions >= LEV_BLUEPRINT_MAX_REGIONS)
				return lev_err_set(err, LEV_EPARSE, "%s: too many context regions",
						   bp->path);
			bp->regions = xreallocarray(bp->regions, bp->n_regions + 1,
						    sizeof(*bp->regions));
			bp->regions[bp->n_regions++] = *rg;
			memset(rg, 0, sizeof(*rg));
		}
		free(st->parse_regions);
		st->parse_regions = NULL;
		st->n_parse_regions = 0;
	}
	return 0;
}

/* Every key of stage NAME's table T is lev's or Leviath's (checked, with its finding). */
static int check_stage_keys(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			    const char *table, const char *name, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);
	int r;

	for (i = 0; i < n; i++) {
		const char *const *k;
		bool known = false;

		for (k = stage_keys; *k && !known; k++)
			known = lev_tomlval_key_is(t, i, *k);
		if (!known) {
			r = lev__bp_compat_key(c, LEV_BPT_STAGE, t, i, table, name, err);
			if (r < 0)
				return r;
			known = r > 0;
		}
		if (!known) {
			struct lev_buf b = LEV_BUF_INIT_MAX(2048);
			_cleanup_free_ char *key = lev_tomlval_key_dup(t, i);

			for (k = stage_keys; *k; k++)
				(void)lev_buf_addf(&b, "%s%s", k == stage_keys ? "" : ", ", *k);
			lev__bp_compat_names(LEV_BPT_STAGE, &b);
			{
				unsigned line = 0, col = 0;
				lev_toml_table_key_pos(t, i, &line, &col);
				r = lev_tomlval_fail(c, line, col, err,
						     "stage '%s' has unknown key '%s' (valid: %s)",
						     name, key, b.buf);
			}
			lev_buf_release(&b);
			return r;
		}
	}
	return 0;
}

static int parse_stage(const struct lev_tomlval_ctx *c, const char *name,
		       const struct lev_toml_table *t, struct lev_stage *st, struct lev_err *err)
{
	_cleanup_free_ char *table = xasprintf("stages.%s", name);
	size_t i, n = lev_toml_table_len(t);
	int r;

	r = check_stage_keys(c, t, table, name, err);
	if (r < 0)
		return r;
	st->name = xstrdup(name);
	st->mode = LEV_MODE_AUTONOMOUS;
	st->accepts_messages = true;	/* Leviath's default: lev msg reaches every stage */
	lev__bp_fanout_init(st);
	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(table, t, i);
		int e = 0;

		if (lev_tomlval_key_is(t, i, "description"))
			r = set_line(c, v, p, &st->description, err);
		else if (lev_tomlval_key_is(t, i, "mode")) {
			r = leviath_enum(c, v, p, mode_names, _LEV_MODE_MAX, leviath_modes, name, &e,
					 err);
			if (r == 0)
				st->mode = (enum lev_stage_mode)e;
		} else if (lev_tomlval_key_is(t, i, "model"))
			r = parse_model(c, v, p, name, &st->model, err);
		else if (lev_tomlval_key_is(t, i, "available_tools")) {
			r = tool_list(c, v, p, &st->available_tools, err);
			if (r == 0)
				foreign_tool_findings(c, v, p, name);
		}
		else if (lev_tomlval_key_is(t, i, "available_connectors"))
			r = lev_tomlval_set_strv(c, v, p, &st->available_connectors, err);
		else if (lev_tomlval_key_is(t, i, "required_tools"))
			r = tool_list(c, v, p, &st->required_tools, err);
		else if (lev_tomlval_key_is(t, i, "tool_permissions")) {
			const struct lev_toml_table *sub = NULL;
			r = lev_tomlval_table(c, v, p, &sub, err);
			if (r == 0)
				r = lev__tool_perms_parse(c, sub, p, &st->tool_permissions, err);
		} else if (lev_tomlval_key_is(t, i, "sandbox")) {
			const struct lev_toml_table *sub = NULL;
			r = lev_tomlval_table(c, v, p, &sub, err);
			if (r == 0)
				r = parse_sandbox(c, sub, p, &st->sandbox, err);
		} else if (lev_tomlval_key_is(t, i, "security")) {
			const struct lev_toml_table *sub = NULL;
			r = lev_tomlval_table(c, v, p, &sub, err);
			if (r == 0)
				r = parse_security(c, sub, p, &st->taint_tracking, err);
			st->has_security = true;
		} else if (lev_tomlval_key_is(t, i, "system_prompt"))
			r = lev_tomlval_set_str(c, v, p, &st->system_prompt, err);
		else if (lev_tomlval_key_is(t, i, "max_iterations"))
			r = lev_tomlval_u64(c, v, p, 1, 100000, &st->max_iterations, err);
		else if (lev_tomlval_key_is(t, i, "next"))
			r = lev_tomlval_set_str(c, v, p, &st->next, err);
		else if (lev_tomlval_key_is(t, i, "transitions"))
			r = parse_transitions(c, v, p, st, err);
		else if (lev_tomlval_key_is(t, i, "max_revisits")) {
			r = lev_tomlval_u64(c, v, p, 0, 100000, &st->max_revisits, err);
			st->has_max_revisits = r == 0;
		} else if (lev_tomlval_key_is(t, i, "require_output")) {
			bool on = false;
			r = lev_tomlval_bool(c, v, p, &on, err);
			if (r == 0 && on)
				st->require_output = true;
		} else if ((r = lev__bp_flow_stage_key(c, t, i, table, st, err)) != 0) {
			r = r < 0 ? r : 0;
		} else if ((r = lev__bp_fanout_stage_key(c, t, i, table, st, err)) != 0) {
			r = r < 0 ? r : 0;
		} else if (lev_tomlval_key_is(t, i, "allow_complete"))
			r = lev_tomlval_bool(c, v, p, &st->allow_complete, err);
		else if (lev_tomlval_key_is(t, i, "accepts_messages"))
			r = lev_tomlval_bool(c, v, p, &st->accepts_messages, err);
		else if (lev_tomlval_key_is(t, i, "tool_routing"))
			r = lev__bp_parse_routing(c, v, p, &st->routing, err);
		else if (lev_tomlval_key_is(t, i, "context"))
			r = parse_stage_context(c, v, p, st, err);
		else
			continue;	/* a Leviath key, checked above */
		if (r < 0)
			return r;
	}
	if (st->next && st->n_transitions) {
		_cleanup_free_ char *msg = xasprintf("stage '%s' sets both 'next' and "
						     "'transitions'; use one of them", name);
		return fail_at_table(c, t, err, msg);
	}
	if (st->mode == LEV_MODE_OUTPUT)
		st->require_output = true;
	if (st->require_output) {
		const char *submit = lev_tooltable_name(LEV_OP_SUBMIT_OUTPUT);

		if (!lev_strv_contains(st->available_tools, submit))
			st->available_tools = lev_strv_push(st->available_tools, submit);
	}
	return 0;
}

/* ---- regions ---------------------------------------------------------- */

json_t *lev__bp_toml_to_json(const struct lev_toml_value *v)
{
	json_t *j;
	size_t i, n;

	switch (v->type) {
	case LEV_TOML_STRING:
		return json_stringn(v->u.str.ptr, v->u.str.len);
	case LEV_TOML_INTEGER:
		return json_integer(v->u.integer);
	case LEV_TOML_FLOAT:
		return isfinite(v->u.flt) ? json_real(v->u.flt) : NULL;
	case LEV_TOML_BOOL:
		return json_boolean(v->u.boolean);
	case LEV_TOML_ARRAY:
		j = json_array();
		n = lev_toml_array_len(v->u.array);
		for (i = 0; i < n; i++) {
			json_t *e = lev__bp_toml_to_json(lev_toml_array_at(v->u.array, i));
			if (!e || json_array_append_new(j, e) < 0) {
				json_decref(j);
				return NULL;
			}
		}
		return j;
	case LEV_TOML_TABLE:
		j = json_object();
		n = lev_toml_table_len(v->u.table);
		for (i = 0; i < n; i++) {
			size_t klen = 0;
			const char *k = lev_toml_table_key(v->u.table, i, &klen);
			json_t *e = lev__bp_toml_to_json(lev_toml_table_value(v->u.table, i));
			if (!e || memchr(k, '\0', klen) || json_object_setn_new(j, k, klen, e) < 0) {
				json_decref(e);
				json_decref(j);
				return NULL;
			}
		}
		return j;
	default:
		return NULL;	/* dates and times have no JSON form */
	}
}

/* A seed { tool = E, args = ARGS } at PATH (P: PATH.tool) into S. */
static int parse_seed_tool(const struct lev_tomlval_ctx *c, const struct lev_toml_value *e,
			   const struct lev_toml_value *args, const char *path, const char *p,
			   struct lev_seed *s, struct lev_err *err)
{
	int r;

	r = lev_tomlval_string(c, e, p, &s->value, err);
	if (r < 0)
		return r;
	if (!tool_name_ok(s->value))
		return lev_tomlval_fail(c, e->line, e->col, err, "'%s' is not a tool name",
					p);
	if (args) {
		_cleanup_free_ char *ap = xasprintf("%s.args", path);
		json_t *j;

		r = lev_tomlval_type(c, args, LEV_TOML_TABLE, ap, err);
		if (r < 0)
			return r;
		j = lev__bp_toml_to_json(args);
		if (!j)
			return lev_tomlval_fail(c, args->line, args->col, err,
						"'%s' holds a value with no JSON form "
						"(a date, a time, inf or nan)",
						ap);
		s->args_json = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(j);
		if (!s->args_json)
			return lev_tomlval_fail(c, args->line, args->col, err,
						"'%s' cannot be encoded as JSON", ap);
	} else {
		s->args_json = xstrdup("{}");
	}
	return 0;
}

static int parse_seed(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		      const char *path, struct lev_seed *s, struct lev_err *err)
{
	static const struct {
		const char *key;
		enum lev_seed_kind kind;
	} forms[] = {
		{ "files", LEV_SEED_FILES },	 { "glob", LEV_SEED_GLOB },
		{ "literal", LEV_SEED_LITERAL }, { "command", LEV_SEED_COMMAND },
		{ "tool", LEV_SEED_TOOL },
	};
	const struct lev_toml_table *t;
	const struct lev_toml_value *e = NULL, *args;
	_cleanup_free_ char *where = xasprintf("'%s'", path);
	_cleanup_free_ char *p = NULL;
	size_t i, found = 0;
	int r;

	if (v->type == LEV_TOML_STRING) {
		r = lev_tomlval_string(c, v, path, &s->value, err);
		if (r < 0)
			return r;
		if (!ident_ok(s->value, strlen(s->value)))
			return lev_tomlval_fail(c, v->line, v->col, err,
						"'%s' names a caller input, which must be 1-%d "
						"letters, digits, '_' or '-'",
						path, NAME_MAX_LEN);
		s->kind = LEV_SEED_CALLER;
		return 0;
	}
	if (v->type != LEV_TOML_TABLE)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be a caller-input name (a string) or a table with "
					"one of files, glob, literal, command, tool; not %s",
					path, lev_toml_type_name(v->type));
	t = v->u.table;
	r = lev__bp_check_keys(c, t, where, path, seed_keys, LEV_BPT_SEED, NULL, err);
	if (r < 0)
		return r;
	e = lev_toml_table_get(t, "caller");
	if (e) {
		/* Leviath's { caller = "task" } is lev's seed = "task" */
		if (lev_toml_table_get(t, "files") || lev_toml_table_get(t, "glob") ||
		    lev_toml_table_get(t, "literal") || lev_toml_table_get(t, "command") ||
		    lev_toml_table_get(t, "tool"))
			return lev_tomlval_fail(c, v->line, v->col, err,
						"'%s' must have exactly one of caller, files, glob, "
						"literal, command, tool",
						path);
		return parse_seed(c, e, path, s, err);
	}
	for (i = 0; i < ARRAY_SIZE(forms); i++) {
		const struct lev_toml_value *x = lev_toml_table_get(t, forms[i].key);
		if (!x)
			continue;
		found++;
		e = x;
		s->kind = forms[i].kind;
	}
	if (found == 0 && (lev_toml_table_get(t, "rhai") || lev_toml_table_get(t, "tools")))
		return 0;	/* a Leviath seed lev does not run: its finding is recorded */
	if (found != 1)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must have exactly one of files, glob, literal, command, "
					"tool (it has %zu)",
					path, found);
	args = lev_toml_table_get(t, "args");
	if (args && s->kind != LEV_SEED_TOOL)
		return lev_tomlval_fail(c, args->line, args->col, err,
					"'%s.args' only goes with a 'tool' seed", path);
	p = xasprintf("%s.%s", path, seed_kind_names[s->kind]);
	switch (s->kind) {
	case LEV_SEED_FILES:
		if (e->type == LEV_TOML_STRING) {
			char *one = NULL;
			r = lev_tomlval_string(c, e, p, &one, err);
			if (r == 0)
				s->list = lev_strv_push_take(NULL, one);
		} else {
			r = lev_tomlval_strv(c, e, p, &s->list, err);
		}
		if (r == 0 && !s->list)
			r = lev_tomlval_fail(c, e->line, e->col, err, "'%s' is empty", p);
		return r;
	case LEV_SEED_TOOL:
		return parse_seed_tool(c, e, args, path, p, s, err);
	default:
		r = lev_tomlval_string(c, e, p, &s->value, err);
		if (r == 0 && !s->value[0])
			r = lev_tomlval_fail(c, e->line, e->col, err, "'%s' is empty", p);
		if (r == 0 && s->kind == LEV_SEED_COMMAND && strlen(s->value) > 4096)
			r = lev_tomlval_fail(c, e->line, e->col, err,
					     "'%s' is too long (the limit is 4096 bytes)", p);
		return r;
	}
}

/* budget = "N%" with N in 1..100. */
static int parse_budget(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			const char *path, unsigned *out, struct lev_err *err)
{
	_cleanup_free_ char *s = NULL;
	_cleanup_free_ char *num = NULL;
	uint64_t pct = 0;
	size_t len;
	int r = lev_tomlval_string(c, v, path, &s, err);

	if (r < 0)
		return r;
	len = strlen(s);
	if (len >= 2 && s[len - 1] == '%') {
		const char *dot = strchr(s, '.');
		/* Leviath writes "12.5%": lev keeps whole percents (12) */
		num = xstrndup(s, (size_t)((dot ? dot : s + len - 1) - s));
		if (dot && strspn(dot + 1, "0123456789") != strlen(dot + 1) - 1)
			num[0] = 'x';
		if (lev_parse_u64(num, &pct) == 0 && pct >= 1 && pct <= 100) {
			*out = (unsigned)pct;
			return 0;
		}
	}
	return lev_tomlval_fail(c, v->line, v->col, err,
				"'%s' must be a percentage of the context, \"1%%\" to \"100%%\"",
				path);
}

static int parse_region(const struct lev_tomlval_ctx *c, const char *name,
			const struct lev_toml_table *t, struct lev_region *rg, struct lev_err *err)
{
	_cleanup_free_ char *table = xasprintf("context.regions.%s", name);
	size_t i, n = lev_toml_table_len(t);
	int r;

	uint64_t max_entries = 0;
	bool strategy_set = false;

	rg->name = xstrdup(name);
	rg->kind = LEV_REGION_TEMPORARY;
	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(table, t, i);
		int e = 0;

		if (lev_tomlval_key_is(t, i, "kind")) {
			r = leviath_enum(c, v, p, region_kind_names, _LEV_REGION_KIND_MAX,
					 leviath_kinds, NULL, &e, err);
			if (r == 0)
				rg->kind = (enum lev_region_kind)e;
			if (r == 0 && v->type == LEV_TOML_STRING &&
			    !strcasecmp(v->u.str.ptr, "checklist"))
				rg->persistent = true;
			if (r == 0 && v->type == LEV_TOML_STRING &&
			    !strncasecmp(v->u.str.ptr, "compact", 7) && !strategy_set)
				rg->strategy = LEV_STRATEGY_COMPACT;
		} else if (lev_tomlval_key_is(t, i, "budget"))
			r = parse_budget(c, v, p, &rg->budget_pct, err);
		else if (lev_tomlval_key_is(t, i, "max_tokens"))
			r = lev_tomlval_u64(c, v, p, 1, (uint64_t)1 << 24, &rg->max_tokens, err);
		else if (lev_tomlval_key_is(t, i, "max_items"))
			r = lev_tomlval_u64(c, v, p, 1, 1000000, &rg->max_items, err);
		else if (lev_tomlval_key_is(t, i, "seed"))
			r = parse_seed(c, v, p, &rg->seed, err);
		else if (lev_tomlval_key_is(t, i, "required"))
			r = lev_tomlval_bool(c, v, p, &rg->required, err);
		else if (lev_tomlval_key_is(t, i, "required_message"))
			r = lev_tomlval_set_str(c, v, p, &rg->required_message, err);
		else if (lev_tomlval_key_is(t, i, "min_tokens"))
			r = lev_tomlval_u64(c, v, p, 0, (uint64_t)1 << 24, &rg->min_tokens, err);
		else if (lev_tomlval_key_is(t, i, "max_entries"))
			r = lev_tomlval_u64(c, v, p, 1, 1000000, &max_entries, err);
		else if (lev_tomlval_key_is(t, i, "persistent"))
			r = lev_tomlval_bool(c, v, p, &rg->persistent, err);
		else if (lev_tomlval_key_is(t, i, "summarizable")) {
			bool on = true;
			r = lev_tomlval_bool(c, v, p, &on, err);
			rg->not_summarizable = !on;
		} else if (lev_tomlval_key_is(t, i, "admission")) {
			static const char *const w[] = { "evict", "reject" };
			r = lev_tomlval_enum(c, v, p, w, 2, &e, err);
			rg->admission_reject = r == 0 && e == 1;
		} else if (lev_tomlval_key_is(t, i, "strategy")) {
			r = lev_tomlval_enum(c, v, p, strategy_names, _LEV_STRATEGY_MAX, &e, err);
			if (r == 0)
				rg->strategy = (enum lev_strategy)e;
			strategy_set = true;
		} else if (lev_tomlval_key_is(t, i, "overflow"))
			r = lev_tomlval_u64(c, v, p, 1, 1000000, &rg->overflow, err);
		else if (lev_tomlval_key_is(t, i, "compact_count"))
			r = lev_tomlval_u64(c, v, p, 1, 1000000, &rg->compact_count, err);
		else if (lev_tomlval_key_is(t, i, "compact_at"))
			r = parse_budget(c, v, p, &rg->compact_at_pct, err);
		else if (lev_tomlval_key_is(t, i, "threshold_tokens"))
			r = lev_tomlval_u64(c, v, p, 1, (uint64_t)1 << 24, &rg->threshold_tokens,
					    err);
		else if (lev_tomlval_key_is(t, i, "source_region"))
			r = lev_tomlval_set_str(c, v, p, &rg->source_region, err);
		else if (lev_tomlval_key_is(t, i, "volatility")) {
			r = lev_tomlval_enum(c, v, p, volatility_names, _LEV_VOL_MAX, &e, err);
			if (r == 0)
				rg->volatility = (enum lev_volatility)e;
		}
		else if ((r = lev__bp_compat_key(c, LEV_BPT_REGION, t, i, table, NULL, err)) != 0)
			r = r < 0 ? r : 0;
		else {
			_cleanup_free_ char *k = lev_tomlval_key_dup(t, i);
			unsigned line = 0, col = 0;
			lev_toml_table_key_pos(t, i, &line, &col);
			lev_tomlval_warn(c, line, "unknown key '%s' in region '%s' (lev ignores it)",
					 k, name);
			r = 0;
		}
		if (r < 0)
			return r;
	}
	if (!rg->max_items)
		rg->max_items = max_entries;
	if (rg->required && rg->seed.kind == LEV_SEED_NONE) {
		const struct lev_toml_value *sv = lev_toml_table_get(t, "seed");

		if (sv && sv->type == LEV_TOML_TABLE) {
			_cleanup_free_ char *msg = xasprintf(
				"region '%s' is required but has no seed lev runs", name);
			return fail_at_table(c, t, err, msg);
		}
		/* Leviath: a stage may not end while the region is empty (context.md) */
		rg->required = false;
		rg->required_fill = true;
	}
	return 0;
}

static int parse_context(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 struct lev_blueprint *bp, struct lev_err *err)
{
	const struct lev_toml_table *regions = NULL;
	size_t i, n = lev_toml_table_len(t);
	int r;

	for (i = 0; i < n; i++) {
		if (lev_tomlval_key_is(t, i, "regions")) {
			r = lev_tomlval_table(c, lev_toml_table_value(t, i), "context.regions", &regions,
				     err);
			if (r < 0)
				return r;
		} else if (lev_tomlval_key_is(t, i, "file_tracking")) {
			r = lev__bp_parse_file_tracking(c, lev_toml_table_value(t, i),
							&bp->file_tracking, err);
			if (r < 0)
				return r;
		} else if ((r = lev__bp_compat_key(c, LEV_BPT_CONTEXT, t, i, "context", NULL,
						   err)) != 0) {
			if (r < 0)
				return r;
		} else {
			_cleanup_free_ char *k = lev_tomlval_key_dup(t, i);
			unsigned line = 0, col = 0;
			lev_toml_table_key_pos(t, i, &line, &col);
			lev_tomlval_warn(c, line, "unknown key '%s' in [context]", k);
		}
	}
	if (!regions)
		return 0;
	/* each budget is a ceiling (context.c), so together they may pass 100% */
	return parse_regions(c, regions, "context.regions", &bp->regions, &bp->n_regions, err);
}

static void default_regions(struct lev_blueprint *bp)
{
	bp->default_regions = true;
	bp->n_regions = 2;
	bp->regions = xcalloc(2, sizeof(*bp->regions));
	bp->regions[0].name = xstrdup("system");
	bp->regions[0].kind = LEV_REGION_PINNED;
	bp->regions[0].max_tokens = 8000;
	bp->regions[1].name = xstrdup("conversation");
	bp->regions[1].kind = LEV_REGION_SLIDING_WINDOW;
	bp->regions[1].max_items = 10;
	bp->regions[1].max_tokens = 10000;
}

/* ---- top level -------------------------------------------------------- */

static int parse_agent(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
		       struct lev_blueprint *bp, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);
	int r;

	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path("agent", t, i);

		if (lev_tomlval_key_is(t, i, "name")) {
			r = lev_tomlval_set_str(c, v, p, &bp->name, err);
			if (r == 0 && !lev_agent_name_valid(bp->name)) {
				_cleanup_free_ char *q = lev_printable(bp->name, strlen(bp->name), 64);
				r = lev_tomlval_fail(c, v->line, v->col, err,
						     "'agent.name' = '%s' is not a valid agent name "
						     "(1-%d letters, digits, '.', '_' or '-', starting "
						     "with a letter or digit)",
						     q, LEV_AGENT_NAME_MAX);
			}
		} else if (lev_tomlval_key_is(t, i, "version")) {
			r = set_line(c, v, p, &bp->version, err);
			if (r == 0 && (!bp->version[0] || strlen(bp->version) > 64))
				r = lev_tomlval_fail(c, v->line, v->col, err,
						     "'agent.version' must be 1-64 bytes");
		} else if (lev_tomlval_key_is(t, i, "description"))
			r = set_line(c, v, p, &bp->description, err);
		else if (lev_tomlval_key_is(t, i, "entry_stage"))
			r = lev_tomlval_set_str(c, v, p, &bp->entry_stage, err);
		else if ((r = lev__bp_flow_agent_key(c, t, i, bp, err)) != 0)
			r = r < 0 ? r : 0;
		else if ((r = lev__bp_fanout_agent_key(c, t, i, bp, err)) != 0)
			r = r < 0 ? r : 0;
		else if ((r = lev__bp_compat_key(c, LEV_BPT_AGENT, t, i, "agent", NULL, err)) != 0)
			r = r < 0 ? r : 0;
		else {
			_cleanup_free_ char *k = lev_tomlval_key_dup(t, i);
			unsigned line = 0, col = 0;
			lev_toml_table_key_pos(t, i, &line, &col);
			lev_tomlval_warn(c, line, "unknown key '%s' in [agent]", k);
			r = 0;
		}
		if (r < 0)
			return r;
	}
	if (!bp->name)
		return fail_at_table(c, t, err, "[agent] needs 'name'");
	if (!bp->version)
		bp->version = xstrdup("0.1.0");
	if (!bp->description)
		bp->description = xstrdup("");
	return 0;
}

static int parse_stages(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			struct lev_blueprint *bp, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);
	int r;

	if (n > LEV_BLUEPRINT_MAX_STAGES)
		return fail_at_table(c, t, err, "[stages] has too many stages");
	bp->stages = xcalloc(n ? n : 1, sizeof(*bp->stages));
	for (i = 0; i < n; i++) {
		const struct lev_toml_table *sub = NULL;
		size_t klen = 0;
		const char *k = lev_toml_table_key(t, i, &klen);
		_cleanup_free_ char *name = lev_tomlval_key_dup(t, i);
		_cleanup_free_ char *p = xasprintf("stages.%s", name);

		if (!ident_ok(k, klen)) {
			_cleanup_free_ char *msg = xasprintf(
				"stage name '%s' must be 1-%d letters, digits, '_' or '-'", name,
				NAME_MAX_LEN);
			return fail_at_key(c, t, i, err, msg);
		}
		r = lev_tomlval_table(c, lev_toml_table_value(t, i), p, &sub, err);
		if (r < 0)
			return r;
		r = parse_stage(c, name, sub, &bp->stages[bp->n_stages++], err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_read_paths(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			    struct lev_blueprint *bp, struct lev_err *err)
{
	const struct lev_toml_value *v;
	size_t i;
	int r;

	r = lev_tomlval_check_keys(c, t, "[read_paths]", read_paths_keys, true, err);
	if (r < 0)
		return r;
	bp->has_read_paths = true;
	v = lev_toml_table_get(t, "allow");
	if (!v)
		return 0;
	r = lev_tomlval_strv(c, v, "read_paths.allow", &bp->read_paths, err);
	if (r < 0)
		return r;
	for (i = 0; bp->read_paths && bp->read_paths[i]; i++) {
		const struct lev_toml_value *e = lev_toml_array_at(v->u.array, i);
		struct lev_err rerr = LEV_ERR_INIT;

		if (lev_readpath_check_syntax(bp->read_paths[i], &rerr) < 0) {
			_cleanup_free_ char *q = lev_printable(bp->read_paths[i],
							       strlen(bp->read_paths[i]), 128);
			return lev_tomlval_fail(c, e->line, e->col, err,
						"[read_paths] entry '%s': %s", q, rerr.msg);
		}
	}
	return 0;
}

static int parse_safe_commands(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			       struct lev_blueprint *bp, struct lev_err *err)
{
	const struct lev_toml_value *v;
	size_t i;
	int r;

	r = lev_tomlval_check_keys(c, t, "[safe_commands]", safe_keys, true, err);
	if (r < 0)
		return r;
	bp->has_safe_commands = true;
	v = lev_toml_table_get(t, "tools");
	if (v) {
		r = lev_tomlval_strv(c, v, "safe_commands.tools", &bp->safe_tools, err);
		if (r < 0)
			return r;
		for (i = 0; bp->safe_tools && bp->safe_tools[i]; i++) {
			const struct lev_toml_value *e = lev_toml_array_at(v->u.array, i);
			if (!tool_name_ok(bp->safe_tools[i]))
				return lev_tomlval_fail(c, e->line, e->col, err,
							"'safe_commands.tools[%zu]' is not a tool "
							"name (shell commands go under 'shell')",
							i);
		}
	}
	v = lev_toml_table_get(t, "shell");
	if (v) {
		r = lev_tomlval_strv(c, v, "safe_commands.shell", &bp->safe_shell, err);
		if (r < 0)
			return r;
		for (i = 0; bp->safe_shell && bp->safe_shell[i]; i++) {
			const struct lev_toml_value *e = lev_toml_array_at(v->u.array, i);
			if (!bp->safe_shell[i][0] || strchr(bp->safe_shell[i], '\n'))
				return lev_tomlval_fail(c, e->line, e->col, err,
							"'safe_commands.shell[%zu]' must be one "
							"non-empty line",
							i);
		}
	}
	return 0;
}

/*
 * A blueprint's [[mcp_servers]] is a request, never a server: each entry
 * becomes a finding `lev validate` shows; the user grants it by configuring
 * the server in config.toml (docs/mcp.md).  False when V is not an array.
 */
static bool mcp_requests(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v)
{
	if (v->type != LEV_TOML_ARRAY)
		return false;
	for (size_t i = 0; i < lev_toml_array_len(v->u.array); i++) {
		const struct lev_toml_value *e = lev_toml_array_at(v->u.array, i);
		const struct lev_toml_value *nm = e->type == LEV_TOML_TABLE
							  ? lev_toml_table_get(e->u.table, "name")
							  : NULL;
		_cleanup_free_ char *name = nm && nm->type == LEV_TOML_STRING
						    ? lev_printable(nm->u.str.ptr, nm->u.str.len, 64)
						    : xstrdup("?");
		_cleanup_free_ char *what = xasprintf("the blueprint's own MCP server '%s'", name);

		lev__bp_finding(c, e->line, e->col, "mcp_servers", NULL, what,
				"a [[mcp_servers]] entry in your config.toml if you grant it (a "
				"blueprint never starts a server)");
	}
	return true;
}

static int parse_root(const struct lev_tomlval_ctx *c, const struct lev_toml_table *root,
		      struct lev_blueprint *bp, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(root);
	bool seen_agent = false, seen_stages = false;
	int r;

	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(root, i);
		const struct lev_toml_table *t = NULL;
		_cleanup_free_ char *p = lev_tomlval_key_dup(root, i);
		static const char *const tables[] = {
			"agent", "stages", "context", "tool_permissions", "security", "sandbox",
			"read_paths", "safe_commands", "tool_script_permissions",
			"repetition_detection", "compaction", NULL,
		};
		const char *const *k;
		bool known = false;

		for (k = tables; *k && !known; k++)
			known = lev_tomlval_key_is(root, i, *k);
		if (!known) {
			r = lev__bp_compat_key(c, LEV_BPT_ROOT, root, i, "", NULL, err);
			if (r < 0)
				return r;
			if (r > 0)
				continue;
		}
		if (!known && lev_tomlval_key_is(root, i, "mcp_servers") && mcp_requests(c, v))
			continue;
		if (!known) {
			unsigned line = 0, col = 0;
			lev_toml_table_key_pos(root, i, &line, &col);
			lev_tomlval_warn(c, line, "unknown key '%s' at the top level (lev ignores it)",
					 p);
			continue;
		}
		r = lev_tomlval_table(c, v, p, &t, err);
		if (r < 0)
			return r;
		if (lev_tomlval_key_is(root, i, "agent")) {
			seen_agent = true;
			r = parse_agent(c, t, bp, err);
		} else if (lev_tomlval_key_is(root, i, "stages")) {
			seen_stages = true;
			r = parse_stages(c, t, bp, err);
		} else if (lev_tomlval_key_is(root, i, "context"))
			r = parse_context(c, t, bp, err);
		else if (lev_tomlval_key_is(root, i, "repetition_detection"))
			r = lev__bp_parse_repetition(c, t, &bp->repetition, err);
		else if (lev_tomlval_key_is(root, i, "compaction"))
			r = lev__bp_parse_compaction(c, t, &bp->compaction, err);
		else if (lev_tomlval_key_is(root, i, "tool_permissions"))
			r = lev__tool_perms_parse(c, t, "tool_permissions", &bp->tool_permissions,
						  err);
		else if (lev_tomlval_key_is(root, i, "security")) {
			bp->has_security = true;
			r = parse_security(c, t, "security", &bp->taint_tracking, err);
		} else if (lev_tomlval_key_is(root, i, "sandbox"))
			r = parse_sandbox(c, t, "sandbox", &bp->sandbox, err);
		else if (lev_tomlval_key_is(root, i, "read_paths"))
			r = parse_read_paths(c, t, bp, err);
		else if (lev_tomlval_key_is(root, i, "safe_commands"))
			r = parse_safe_commands(c, t, bp, err);
		else {
			bp->has_script_permissions = true;
			r = lev__script_perms_parse(c, t, "tool_script_permissions", true,
						    &bp->script_permissions, err);
		}
		if (r < 0)
			return r;
	}
	if (!seen_agent)
		return lev_err_set(err, LEV_EPARSE,
				   "%s:1:1: missing [agent] table (a blueprint starts with [agent] "
				   "and its name)",
				   c->file);
	if (!seen_stages || bp->n_stages == 0)
		return lev_err_set(err, LEV_EPARSE,
				   "%s:1:1: no stages: add at least one [stages.<name>] table",
				   c->file);
	return 0;
}

/* next, transitions, entry_stage and required_tools must all make sense. */
static int check_references(const struct lev_tomlval_ctx *c, struct lev_blueprint *bp,
			    struct lev_err *err)
{
	size_t i, j;

	if (!bp->entry_stage)
		bp->entry_stage = xstrdup(bp->stages[0].name);
	else if (!lev_blueprint_stage(bp, bp->entry_stage))
		return lev_err_set(err, LEV_EPARSE,
				   "%s: 'agent.entry_stage' names '%.64s', which is not a stage",
				   c->file, bp->entry_stage);
	for (i = 0; i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];

		if (st->next && !lev_blueprint_stage(bp, st->next))
			return lev_err_set(err, LEV_EPARSE,
					   "%s: stage '%s' has next = '%.64s', which is not a stage",
					   c->file, st->name, st->next);
		if (st->next && !strcmp(st->next, st->name))
			return lev_err_set(err, LEV_EPARSE,
					   "%s: stage '%s' names itself as next, which never ends",
					   c->file, st->name);
		for (j = 0; j < st->n_transitions; j++)
			if (!lev_blueprint_stage(bp, st->transitions[j].target))
				return lev_err_set(err, LEV_EPARSE,
						   "%s: stage '%s' has a transition to '%.64s', "
						   "which is not a stage",
						   c->file, st->name, st->transitions[j].target);
		for (j = 0; st->required_tools && st->required_tools[j]; j++)
			if (!lev_strv_contains(st->available_tools, st->required_tools[j]))
				return lev_err_set(err, LEV_EPARSE,
						   "%s: stage '%s' requires tool '%s', which is not "
						   "in its available_tools",
						   c->file, st->name, st->required_tools[j]);
		if (lev__bp_check_routing(bp, st, err) < 0)
			return LEV_EPARSE;
	}
	if (bp->file_tracking.present && !lev_blueprint_region(bp, bp->file_tracking.region))
		return lev_err_set(err, LEV_EPARSE,
				   "%s: [context.file_tracking] lists files in region '%.64s', "
				   "which is not in [context.regions]; add it there",
				   c->file, bp->file_tracking.region);
	return 0;
}

int lev_blueprint_parse(const char *buf, size_t len, const char *name, const char *dir,
			struct lev_blueprint **out, struct lev_err *err)
{
	struct lev_toml_doc *doc = NULL;
	struct lev_blueprint *bp;
	struct lev_bp_ctx bc;
	struct lev_tomlval_ctx *c = &bc.c;
	int r;

	if (len > LEV_BLUEPRINT_MAX_FILE)
		return lev_err_set(err, -EFBIG, "'%s' is too large (%zu bytes; the limit is %zu)",
				   name, len, LEV_BLUEPRINT_MAX_FILE);
	r = lev_toml_parse(buf, len, name, &doc, err);
	if (r < 0)
		return r;
	bp = xcalloc(1, sizeof(*bp));
	c->file = name;
	c->warnings = &bp->warnings;
	bc.bp = bp;
	bp->dir = xstrdup(dir ? dir : ".");
	bp->path = xstrdup(name);
	r = parse_root(c, lev_toml_root(doc), bp, err);
	lev_toml_free(doc);
	if (r == 0)
		r = merge_stage_regions(bp, err);
	if (r == 0)
		r = check_references(c, bp, err);
	if (r == 0)
		r = lev__bp_flow_finish(c, bp, err);
	if (r == 0)
		r = lev__bp_fanout_check(c, bp, err);
	if (r < 0) {
		lev_blueprint_free(bp);
		return r;
	}
	if (bp->n_regions == 0)
		default_regions(bp);
	*out = bp;
	return 0;
}

/* The script tool NAME the blueprint ships (tools/NAME.lua), or NULL. */
static const struct lev_script_tool *script_tool(const struct lev_blueprint *bp, const char *name)
{
	for (size_t i = 0; i < bp->n_script_tools; i++)
		if (!strcmp(bp->script_tools[i].name, name))
			return &bp->script_tools[i];
	return NULL;
}

/*
 * Leviath's script tools (tools/NAME.rhai): lev runs none of them.  One that
 * shadows a built-in lev provides runs as that built-in instead; one next
 * to a Lua script tool of its name is ignored for it.
 */
static void rhai_tool_findings(struct lev_blueprint *bp)
{
	_cleanup_free_ char *tools = lev_path_join(bp->dir, "tools");
	_cleanup_strv_ char **names = tools_dir_files(bp->dir);
	char **n;

	for (n = names; n && *n && bp->n_findings < LEV_BLUEPRINT_MAX_FINDINGS; n++) {
		size_t l = strlen(*n);
		struct lev_blueprint_finding *f;
		const struct lev_tool_desc *builtin;
		char *base;

		if (l <= 5 || strcmp(*n + l - 5, ".rhai"))
			continue;
		bp->findings = xreallocarray(bp->findings, bp->n_findings + 1,
					     sizeof(*bp->findings));
		f = &bp->findings[bp->n_findings++];
		memset(f, 0, sizeof(*f));
		f->file = lev_path_join(tools, *n);
		f->key = xasprintf("tools/%s", *n);
		f->line = 1;
		f->col = 1;
		base = *n;
		base[l - 5] = '\0';
		builtin = lev_tooltable_find(base);
		if (script_tool(bp, base))
			f->message = xasprintf("ignored: the Rhai tool '%s' ('%s'); lev runs the Lua "
					       "script tool 'tools/%s.lua' instead", base, f->key,
					       base);
		else if (builtin)	/* web_fetch, web_search, ...: lev's own runs */
			f->message = xasprintf("not run by lev: the Rhai tool '%s' ('%s'); lev's "
					       "built-in '%s' runs instead",
					       base, f->key, builtin->name);
		else
			f->message = xasprintf("not run by lev: the Rhai tool '%s' ('%s'); use a "
					       "built-in tool, or a command the shell tool runs, "
					       "with a Lua rule in rules/ for its policy",
					       base, f->key);
	}
}

int lev_blueprint_load(const char *path, struct lev_blueprint **out, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *file = NULL;
	_cleanup_free_ char *dir = NULL;
	_cleanup_free_ char *data = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	if (stat(path, &st) < 0)
		return lev_err_errno(err, -errno, "cannot open blueprint '%s'", path);
	if (S_ISDIR(st.st_mode)) {
		dir = xstrdup(path);
		file = lev_path_join(path, LEV_BLUEPRINT_FILE);
	} else {
		const char *slash = strrchr(path, '/');
		file = xstrdup(path);
		dir = slash ? (slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path)))
			    : xstrdup(".");
	}
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot open blueprint '%s'", file);
	if (fstat(fd, &st) < 0)
		return lev_err_errno(err, -errno, "cannot stat blueprint '%s'", file);
	if (!S_ISREG(st.st_mode))
		return lev_err_set(err, -EINVAL, "blueprint '%s' is not a regular file", file);
	r = lev_read_fd(fd, file, LEV_BLUEPRINT_MAX_FILE, &data, &len, err);
	if (r < 0)
		return r;
	r = lev_blueprint_parse(data, len, file, dir, out, err);
	if (r < 0)
		return r;
	r = lev_scripttools_load(dir, &(*out)->script_tools, &(*out)->n_script_tools, err);
	if (r < 0) {
		*out = lev_blueprint_free(*out);
		return r;
	}
	rhai_tool_findings(*out);
	return 0;
}

/* ---- queries ---------------------------------------------------------- */

const struct lev_stage *lev_blueprint_stage(const struct lev_blueprint *bp, const char *name)
{
	size_t i;

	for (i = 0; name && i < bp->n_stages; i++)
		if (!strcmp(bp->stages[i].name, name))
			return &bp->stages[i];
	return NULL;
}

const struct lev_region *lev_blueprint_region(const struct lev_blueprint *bp, const char *name)
{
	size_t i;

	for (i = 0; name && i < bp->n_regions; i++)
		if (!strcmp(bp->regions[i].name, name))
			return &bp->regions[i];
	return NULL;
}

const struct lev_sandbox_spec *lev_blueprint_stage_sandbox(const struct lev_blueprint *bp,
							   const struct lev_stage *stage)
{
	if (stage && stage->sandbox.present)
		return &stage->sandbox;
	return &bp->sandbox;
}

bool lev_blueprint_wants_taint(const struct lev_blueprint *bp)
{
	size_t i;

	if (bp->has_security && bp->taint_tracking)
		return true;
	for (i = 0; i < bp->n_stages; i++)
		if (bp->stages[i].has_security && bp->stages[i].taint_tracking)
			return true;
	return false;
}

bool lev_blueprint_tool_verdict(const struct lev_blueprint *bp, const struct lev_stage *stage,
				const char *tool, enum lev_verdict *out)
{
	if (stage && lev_tool_perms_lookup(&stage->tool_permissions, tool, out))
		return true;
	return lev_tool_perms_lookup(&bp->tool_permissions, tool, out);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files in DIR/tools (at most 256), full names, sorted; NULL when none. */
static char **tools_dir_files(const char *dir)
{
	_cleanup_free_ char *tools = lev_path_join(dir, "tools");
	_cleanup_close_ int fd = open(tools, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char **res = NULL;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		return NULL;
	fd = -1;
	while ((de = readdir(d)) && lev_strv_len(res) < 256) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		res = lev_strv_push(res, de->d_name);
	}
	closedir(d);
	if (res)
		qsort(res, lev_strv_len(res), sizeof(*res), cmp_str);
	return res;
}

char **lev_blueprint_script_tools(const char *dir)
{
	char **res = tools_dir_files(dir);
	char **n, *dot;

	for (n = res; n && *n; n++)
		if ((dot = strrchr(*n, '.')))
			*dot = '\0';
	if (res)
		qsort(res, lev_strv_len(res), sizeof(*res), cmp_str);
	return res;
}
