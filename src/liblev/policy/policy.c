/*
 * policy.c - policy.toml: allowlist rules and tool overrides, matching, and
 * the textual append behind `lev policy add`.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/policy/integrity.h"
#include "liblev/policy/policy.h"
#include "liblev/base/strv.h"
#include "liblev/policy/target.h"
#include "liblev/base/tooltable.h"
#include "liblev/conf/toml.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static const char *const level_words[] = { "public", "internal", "private" };
static const char *const dir_words[] = { "inbound", "internal", "outbound" };

/* ---- tool names ---- */

/*
 * Normalise a tool name for comparison: "bash" is "shell", and the MCP
 * spelling "server__tool" is "server.tool".  NAME must be at most
 * LEV_POLICY_TOOL_MAX bytes; BUF holds LEV_POLICY_TOOL_MAX + 1.
 */
static void tool_norm(const char *name, char *buf)
{
	const char *c = lev_tool_canonical(name);
	size_t i, j = 0;
	bool dotted = strchr(c, '.') != NULL;

	for (i = 0; c[i] && j < LEV_POLICY_TOOL_MAX; i++) {
		if (!dotted && i > 0 && c[i] == '_' && c[i + 1] == '_') {
			buf[j++] = '.';
			i++;
			dotted = true;
			continue;
		}
		buf[j++] = c[i];
	}
	buf[j] = '\0';
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

bool lev_policy_tool_same(const char *a, const char *b)
{
	char na[LEV_POLICY_TOOL_MAX + 1], nb[LEV_POLICY_TOOL_MAX + 1];

	if (!a || !b || strlen(a) > LEV_POLICY_TOOL_MAX || strlen(b) > LEV_POLICY_TOOL_MAX)
		return false;
	tool_norm(a, na);
	tool_norm(b, nb);
	return !strcmp(na, nb);
}

static bool tool_name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > LEV_POLICY_TOOL_MAX)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\')
			return false;
	}
	return true;
}

/* ---- the rule index ---- */

/*
 * A hash map from (kind, tool, text) to the ascending list of rules that
 * entry can make match.  KIND is 'N' (rules with no patterns: any call),
 * 'A' (a '*' pattern: any target), 'P' (a prefix pattern: checked by hand),
 * 'E' (an exact pattern: TEXT), 'S' (a "*.TEXT" pattern) or 'M' (a
 * "*@TEXT" pattern).  Candidates are verified with the full rule match, so
 * the index only has to never miss a rule.  TEXT is hashed from its end, so
 * the hashes of every domain suffix of a target come out of one pass.
 */
struct index_slot {
	char kind;
	const char *tool;	/* borrows the rule's norm */
	char *text;
	size_t tlen;
	uint64_t h;
	uint32_t *rules;
	uint32_t n, alloc;
};

struct lev_policy_index {
	struct index_slot *slots;
	size_t n_slots;		/* a power of two */
	bool has_kind[128];
};

#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME 1099511628211ULL

static void index_free(struct lev_policy_index *ix)
{
	size_t i;

	if (!ix)
		return;
	for (i = 0; i < ix->n_slots; i++) {
		free(ix->slots[i].text);
		free(ix->slots[i].rules);
	}
	free(ix->slots);
	free(ix);
}

/* FNV-1a over TEXT from its last byte to its first. */
static uint64_t hash_rev(const char *text, size_t n)
{
	uint64_t h = FNV_OFFSET;

	while (n--) {
		h ^= (unsigned char)text[n];
		h *= FNV_PRIME;
	}
	return h;
}

static uint64_t slot_hash(char kind, uint64_t tool_h, uint64_t text_h)
{
	uint64_t h = tool_h ^ (text_h * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)(unsigned char)kind;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

static struct index_slot *index_find(const struct lev_policy_index *ix, char kind,
				     const char *tool, const char *text, size_t tlen, uint64_t h)
{
	size_t mask = ix->n_slots - 1, i = (size_t)h & mask;

	while (ix->slots[i].tool) {
		const struct index_slot *sl = &ix->slots[i];

		if (sl->h == h && sl->kind == kind && sl->tlen == tlen &&
		    !memcmp(sl->text, text, tlen) && !strcmp(sl->tool, tool))
			return &ix->slots[i];
		i = (i + 1) & mask;
	}
	return NULL;
}

static void index_add(struct lev_policy_index *ix, char kind, const struct lev_allow_rule *r,
		      const char *text, uint32_t rule)
{
	size_t tlen = strlen(text), mask, i;
	uint64_t h = slot_hash(kind, r->tool_hash, hash_rev(text, tlen));
	struct index_slot *sl = index_find(ix, kind, r->norm, text, tlen, h);

	if (!sl) {
		mask = ix->n_slots - 1;
		for (i = (size_t)h & mask; ix->slots[i].tool; i = (i + 1) & mask)
			;
		sl = &ix->slots[i];
		sl->kind = kind;
		sl->tool = r->norm;
		sl->text = xstrdup(text);
		sl->tlen = tlen;
		sl->h = h;
		ix->has_kind[(unsigned char)kind] = true;
	}
	if (sl->n && sl->rules[sl->n - 1] == rule)
		return;
	if (sl->n == sl->alloc) {
		sl->alloc = sl->alloc ? sl->alloc * 2 : 4;
		sl->rules = xreallocarray(sl->rules, sl->alloc, sizeof(*sl->rules));
	}
	sl->rules[sl->n++] = rule;
}

static void index_pattern(struct lev_policy_index *ix, const struct lev_allow_rule *r,
			  const char *pat, uint32_t rule)
{
	size_t l = strlen(pat);

	if (!strcmp(pat, "*"))
		index_add(ix, 'A', r, "", rule);
	else if (pat[0] == '*' && pat[1] == '.')
		index_add(ix, 'S', r, pat + 2, rule);
	else if (pat[0] == '*' && pat[1] == '@')
		index_add(ix, 'M', r, pat + 2, rule);
	else if (l > 0 && pat[l - 1] == '*')
		index_add(ix, 'P', r, "", rule);
	else
		index_add(ix, 'E', r, pat, rule);
}

static struct lev_policy_index *index_build(const struct lev_policy *p)
{
	struct lev_policy_index *ix = xcalloc(1, sizeof(*ix));
	size_t i, keys = 0;
	char *const *q;

	for (i = 0; i < p->n_rules; i++)
		keys += 1 + lev_strv_len(p->rules[i].to) + lev_strv_len(p->rules[i].channel);
	for (ix->n_slots = 16; ix->n_slots < 2 * keys; ix->n_slots *= 2)
		;
	ix->slots = xcalloc(ix->n_slots, sizeof(*ix->slots));
	for (i = 0; i < p->n_rules; i++) {
		const struct lev_allow_rule *r = &p->rules[i];

		if (!r->to && !r->channel) {
			index_add(ix, 'N', r, "", (uint32_t)i);
			continue;
		}
		for (q = r->to; q && *q; q++)
			index_pattern(ix, r, *q, (uint32_t)i);
		for (q = r->channel; q && *q; q++)
			index_pattern(ix, r, *q, (uint32_t)i);
	}
	return ix;
}

void lev_policy_reindex(struct lev_policy *p)
{
	index_free(p->index);
	p->index = index_build(p);
}

/* The lowest rule above FLOOR in the list of (KIND, TOOL, TEXT); UINT32_MAX: none. */
static uint32_t lowest_above(const struct lev_policy_index *ix, char kind, const char *tool,
			     uint64_t tool_h, const char *text, size_t tlen, uint64_t text_h,
			     int64_t floor)
{
	const struct index_slot *sl;
	size_t lo, hi;

	if (!ix->has_kind[(unsigned char)kind])
		return UINT32_MAX;
	sl = index_find(ix, kind, tool, text, tlen, slot_hash(kind, tool_h, text_h));
	if (!sl)
		return UINT32_MAX;
	/* the list is ascending: binary-search the first entry above FLOOR */
	lo = 0;
	hi = sl->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if ((int64_t)sl->rules[mid] <= floor)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sl->n ? sl->rules[lo] : UINT32_MAX;
}

/* ---- lifecycle ---- */

static void rule_release(struct lev_allow_rule *r)
{
	free(r->tool);
	free(r->norm);
	lev_strv_free(r->to);
	lev_strv_free(r->channel);
}

static void override_release(struct lev_tool_override *o)
{
	free(o->name);
	free(o->norm);
	free(o->alt_name);
	free(o->target);
}

struct lev_policy *lev_policy_free(struct lev_policy *p)
{
	size_t i;

	if (!p)
		return NULL;
	for (i = 0; i < p->n_rules; i++)
		rule_release(&p->rules[i]);
	for (i = 0; i < p->n_overrides; i++)
		override_release(&p->overrides[i]);
	index_free(p->index);
	free(p->rules);
	free(p->overrides);
	free(p->file);
	free(p->also_file);
	lev_strv_free(p->warnings);
	lev_integrity_policy_free(p->integrity);
	lev_policy_free(p->leviath);
	free(p);
	return NULL;
}

DEFINE_CLEANUP_FUNC(struct lev_policy, lev_policy_free)
static void policy_doc_freep(struct lev_toml_doc **d)
{
	lev_toml_free(*d);
}

struct lev_policy *lev_policy_new_empty(const char *name)
{
	struct lev_policy *p = xcalloc(1, sizeof(*p));

	p->file = xstrdup(name ? name : "policy.toml");
	return p;
}

/* ---- parsing ---- */

static int parse_patterns(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			  const char *path, char ***out, struct lev_err *err)
{
	char **raw = NULL, **canon = NULL;
	size_t i;
	int r;

	if (v->type == LEV_TOML_STRING) {
		char *s = NULL;

		r = lev_tomlval_string(c, v, path, &s, err);
		if (r < 0)
			return r;
		raw = lev_strv_push_take(NULL, s);
	} else {
		r = lev_tomlval_strv(c, v, path, &raw, err);
		if (r < 0)
			return r;
	}
	for (i = 0; raw && raw[i]; i++) {
		struct lev_err e2 = LEV_ERR_INIT;
		char *p = NULL;

		if (lev_target_pattern_canon(raw[i], &p, &e2) < 0) {
			lev_strv_free(raw);
			lev_strv_free(canon);
			return lev_tomlval_fail(c, v->line, v->col, err, "'%s': %s", path, e2.msg);
		}
		canon = lev_strv_push_take(canon, p);
	}
	lev_strv_free(raw);
	*out = canon;
	return 0;
}

static const char *const rule_keys[] = { "tool", "to", "channel", "max_sensitivity", NULL };

static int parse_rule(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v, size_t idx,
		      struct lev_allow_rule *out, struct lev_err *err)
{
	_cleanup_free_ char *path = xasprintf("allowlist[%zu]", idx + 1);
	_cleanup_free_ char *p2 = NULL;
	const struct lev_toml_table *t;
	const struct lev_toml_value *f;
	struct lev_allow_rule rule = { 0 };
	unsigned line = 0, col = 0;
	int r, lvl = 0;

	if (v->type != LEV_TOML_TABLE)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be a table ([[allowlist]]), not %s", path,
					lev_toml_type_name(v->type));
	t = v->u.table;
	lev_toml_table_pos(t, &line, &col);
	rule.line = line;
	r = lev_tomlval_check_keys(c, t, "[[allowlist]]", rule_keys, false, err);
	if (r < 0)
		return r;

	f = lev_toml_table_get(t, "tool");
	if (!f)
		return lev_tomlval_fail(c, line, col, err, "'%s' has no 'tool'", path);
	p2 = xasprintf("%s.tool", path);
	r = lev_tomlval_string(c, f, p2, &rule.tool, err);
	if (r < 0)
		return r;
	if (!tool_name_ok(rule.tool, strlen(rule.tool))) {
		rule_release(&rule);
		return lev_tomlval_fail(c, f->line, f->col, err,
					"'%s' must be 1 to %d printable bytes without spaces or quotes",
					p2, LEV_POLICY_TOOL_MAX);
	}
	{
		char nb[LEV_POLICY_TOOL_MAX + 1];

		tool_norm(rule.tool, nb);
		rule.norm = xstrdup(nb);
		rule.tool_hash = hash_str(nb);
	}

	f = lev_toml_table_get(t, "max_sensitivity");
	if (!f) {
		rule_release(&rule);
		return lev_tomlval_fail(c, line, col, err,
					"'%s' has no 'max_sensitivity' (one of public, internal, private)",
					path);
	}
	free(p2);
	p2 = xasprintf("%s.max_sensitivity", path);
	r = lev_tomlval_enum(c, f, p2, level_words, 3, &lvl, err);
	if (r < 0) {
		rule_release(&rule);
		return r;
	}
	rule.max_sensitivity = (enum lev_level)lvl;

	f = lev_toml_table_get(t, "to");
	if (f) {
		free(p2);
		p2 = xasprintf("%s.to", path);
		r = parse_patterns(c, f, p2, &rule.to, err);
	}
	f = lev_toml_table_get(t, "channel");
	if (r == 0 && f) {
		free(p2);
		p2 = xasprintf("%s.channel", path);
		r = parse_patterns(c, f, p2, &rule.channel, err);
	}
	if (r < 0) {
		rule_release(&rule);
		return r;
	}
	*out = rule;
	return 0;
}

static const char *const override_keys[] = { "sensitivity", "direction", "clearance", "target",
					      "consequential", NULL };

static bool is_override_key(const struct lev_toml_table *t, size_t i)
{
	const char *const *k;

	for (k = override_keys; *k; k++)
		if (lev_tomlval_key_is(t, i, *k))
			return true;
	return false;
}

static bool target_arg_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 128)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '_' || ch == '-' || ch == '.'))
			return false;
	}
	return true;
}

/* Read the override fields of table T (only the keys listed in override_keys). */
static int parse_override_fields(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
				 const char *path, struct lev_tool_override *o, struct lev_err *err)
{
	const struct lev_toml_value *f;
	_cleanup_free_ char *p = NULL;
	int r, i;

	f = lev_toml_table_get(t, "sensitivity");
	if (f) {
		p = xasprintf("%s.sensitivity", path);
		r = lev_tomlval_enum(c, f, p, level_words, 3, &i, err);
		if (r < 0)
			return r;
		o->has_sensitivity = true;
		o->sensitivity = (enum lev_level)i;
		free(TAKE_PTR(p));
	}
	f = lev_toml_table_get(t, "direction");
	if (f) {
		p = xasprintf("%s.direction", path);
		r = lev_tomlval_enum(c, f, p, dir_words, 3, &i, err);
		if (r < 0)
			return r;
		o->has_direction = true;
		o->direction = (enum lev_direction)i;
		free(TAKE_PTR(p));
	}
	f = lev_toml_table_get(t, "clearance");
	if (f) {
		p = xasprintf("%s.clearance", path);
		r = lev_tomlval_enum(c, f, p, level_words, 3, &i, err);
		if (r < 0)
			return r;
		o->has_clearance = true;
		o->clearance = (enum lev_level)i;
		free(TAKE_PTR(p));
	}
	f = lev_toml_table_get(t, "consequential");
	if (f) {
		const struct lev_tool_desc *bt = lev_tooltable_find(o->name);

		p = xasprintf("%s.consequential", path);
		/* a built-in is what the tool table says ([integrity] writes covers writes) */
		if (bt && !(bt->flags & LEV_TOOLF_FOREIGN))
			return lev_tomlval_fail(c, f->line, f->col, err,
						"'%s': '%s' is a built-in tool; only MCP and script "
						"tools can be marked", p, o->name);
		r = lev_tomlval_bool(c, f, p, &o->consequential, err);
		if (r < 0)
			return r;
		o->has_consequential = true;
		o->consequential_line = f->line;
		o->consequential_col = f->col;
		free(TAKE_PTR(p));
	}
	f = lev_toml_table_get(t, "target");
	if (f) {
		char *s = NULL;

		p = xasprintf("%s.target", path);
		r = lev_tomlval_string(c, f, p, &s, err);
		if (r < 0)
			return r;
		if (!target_arg_ok(s)) {
			free(s);
			return lev_tomlval_fail(c, f->line, f->col, err,
						"'%s' must name an argument ([A-Za-z0-9_.-], at most 128 bytes)",
						p);
		}
		o->target = s;
	}
	return 0;
}

static int add_override(const struct lev_tomlval_ctx *c, struct lev_policy *pol, const char *name,
			const struct lev_toml_table *t, const char *path, unsigned line,
			struct lev_err *err)
{
	struct lev_tool_override o = { 0 };
	const char *dot;
	int r;

	if (!tool_name_ok(name, strlen(name)))
		return lev_tomlval_fail(c, line, 1, err, "'%s': invalid tool name", path);
	if (pol->n_overrides >= LEV_POLICY_OVERRIDES_MAX)
		return lev_tomlval_fail(c, line, 1, err, "more than %d tool overrides",
					LEV_POLICY_OVERRIDES_MAX);
	o.name = xstrdup(name);
	r = parse_override_fields(c, t, path, &o, err);
	if (r < 0) {
		override_release(&o);
		return r;
	}
	{
		char nb[LEV_POLICY_TOOL_MAX + 1];

		tool_norm(name, nb);
		o.norm = xstrdup(nb);
	}
	dot = strchr(name, '.');
	if (dot && dot != name)
		o.alt_name = xasprintf("%.*s__%s", (int)(dot - name), name, dot + 1);
	o.line = line;
	pol->overrides = xreallocarray(pol->overrides, pol->n_overrides + 1, sizeof(o));
	pol->overrides[pol->n_overrides++] = o;
	return 0;
}

static int parse_overrides(const struct lev_tomlval_ctx *c, struct lev_policy *pol,
			   const struct lev_toml_value *v, struct lev_err *err)
{
	const struct lev_toml_table *root;
	size_t i, j;
	int r;

	r = lev_tomlval_type(c, v, LEV_TOML_TABLE, "mcp_overrides", err);
	if (r < 0)
		return r;
	root = v->u.table;
	for (i = 0; i < lev_toml_table_len(root); i++) {
		const struct lev_toml_value *sv = lev_toml_table_value(root, i);
		_cleanup_free_ char *server = lev_tomlval_key_dup(root, i);
		_cleanup_free_ char *spath = xasprintf("mcp_overrides.%s", server);
		const struct lev_toml_table *st;
		bool flat = false;
		unsigned line = 0, col = 0;

		r = lev_tomlval_type(c, sv, LEV_TOML_TABLE, spath, err);
		if (r < 0)
			return r;
		st = sv->u.table;
		lev_toml_table_pos(st, &line, &col);
		for (j = 0; j < lev_toml_table_len(st); j++) {
			const struct lev_toml_value *tv = lev_toml_table_value(st, j);
			unsigned kl = 0, kc = 0;

			lev_toml_table_key_pos(st, j, &kl, &kc);
			if (lev_tomlval_key_is(st, j, "tools")) {
				const struct lev_toml_table *tt;
				size_t k;
				_cleanup_free_ char *tpath = xasprintf("%s.tools", spath);

				r = lev_tomlval_type(c, tv, LEV_TOML_TABLE, tpath, err);
				if (r < 0)
					return r;
				tt = tv->u.table;
				for (k = 0; k < lev_toml_table_len(tt); k++) {
					const struct lev_toml_value *ov = lev_toml_table_value(tt, k);
					_cleanup_free_ char *tool = lev_tomlval_key_dup(tt, k);
					_cleanup_free_ char *name = xasprintf("%s.%s", server, tool);
					_cleanup_free_ char *opath = xasprintf("%s.%s", tpath, tool);
					unsigned ol = 0, oc = 0;

					lev_toml_table_key_pos(tt, k, &ol, &oc);
					r = lev_tomlval_type(c, ov, LEV_TOML_TABLE, opath, err);
					if (r < 0)
						return r;
					r = lev_tomlval_check_keys(c, ov->u.table, opath, override_keys,
								   false, err);
					if (r < 0)
						return r;
					r = add_override(c, pol, name, ov->u.table, opath, ol, err);
					if (r < 0)
						return r;
				}
			} else if (is_override_key(st, j)) {
				flat = true;
			} else {
				_cleanup_free_ char *key = lev_tomlval_key_dup(st, j);

				lev_tomlval_warn(c, kl, "unknown key '%s' in [%s]", key, spath);
			}
		}
		if (flat) {
			/* [mcp_overrides."server.tool"] with the fields directly inside */
			r = add_override(c, pol, server, st, spath, line, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static const char *const root_keys[] = { "allowlist", "mcp_overrides", "integrity", "sources",
					 NULL };

const struct lev_integrity_policy *lev_policy_integrity(const struct lev_policy *p)
{
	return p ? p->integrity : NULL;
}

int lev_policy_parse(const char *buf, size_t len, const char *name, struct lev_policy **out,
		     struct lev_err *err)
{
	_cleanup_(policy_doc_freep) struct lev_toml_doc *doc = NULL;
	_cleanup_(lev_policy_freep) struct lev_policy *pol = NULL;
	const struct lev_toml_table *root;
	const struct lev_toml_value *v;
	struct lev_tomlval_ctx c;
	int r;

	if (!name)
		name = "policy.toml";
	if (len > LEV_TOML_MAX_FILE)
		return lev_err_set(err, LEV_EPARSE, "%s: larger than %zu bytes", name,
				   LEV_TOML_MAX_FILE);
	r = lev_toml_parse(buf, len, name, &doc, err);
	if (r < 0)
		return r;
	pol = lev_policy_new_empty(name);
	c.file = name;
	c.warnings = &pol->warnings;
	root = lev_toml_root(doc);
	r = lev_tomlval_check_keys(&c, root, "policy.toml", root_keys, false, err);
	if (r < 0)
		return r;

	v = lev_toml_table_get(root, "allowlist");
	if (v) {
		const struct lev_toml_array *a;
		size_t i, n;

		r = lev_tomlval_type(&c, v, LEV_TOML_ARRAY, "allowlist", err);
		if (r < 0)
			return r;
		a = v->u.array;
		n = lev_toml_array_len(a);
		if (n > LEV_POLICY_RULES_MAX)
			return lev_tomlval_fail(&c, v->line, v->col, err,
						"more than %d allowlist rules", LEV_POLICY_RULES_MAX);
		pol->rules = n ? xcalloc(n, sizeof(*pol->rules)) : NULL;
		for (i = 0; i < n; i++) {
			r = parse_rule(&c, lev_toml_array_at(a, i), i, &pol->rules[i], err);
			if (r < 0)
				return r;
			pol->n_rules++;
		}
	}
	v = lev_toml_table_get(root, "mcp_overrides");
	if (v) {
		r = parse_overrides(&c, pol, v, err);
		if (r < 0)
			return r;
	}
	r = lev_integrity_policy_parse(&c, root, &pol->integrity, err);
	if (r < 0)
		return r;
	v = lev_toml_table_get(root, "integrity");
	if (!v)
		v = lev_toml_table_get(root, "sources");
	pol->integrity_line = v ? v->line : 0;
	pol->index = index_build(pol);
	*out = TAKE_PTR(pol);
	return 0;
}

/* ---- files ---- */

static void stamp_from(const struct stat *st, struct lev_file_stamp *out)
{
	memset(out, 0, sizeof(*out));
	out->exists = true;
	out->dev = st->st_dev;
	out->ino = st->st_ino;
	out->size = st->st_size;
	out->mtime = st->st_mtim;
	out->ctime = st->st_ctim;
}

int lev_file_stamp_get(const char *path, struct lev_file_stamp *out)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		memset(out, 0, sizeof(*out));
		return errno == ENOENT ? 0 : -errno;
	}
	stamp_from(&st, out);
	return 0;
}

bool lev_file_stamp_equal(const struct lev_file_stamp *a, const struct lev_file_stamp *b)
{
	if (a->exists != b->exists)
		return false;
	if (!a->exists)
		return true;
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* Refuse a policy someone else could have written. */
static int check_owner(const char *path, const struct stat *st, struct lev_err *err)
{
	if (!S_ISREG(st->st_mode))
		return lev_err_set(err, -EINVAL, "'%s' is not a regular file", path);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return lev_err_set(err, -EPERM,
				   "'%s' is writable by group or others; run 'chmod go-w %s'", path,
				   path);
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return lev_err_set(err, -EPERM, "'%s' is owned by another user", path);
	return 0;
}

/* Read PATH (missing: *out = NULL); checks ownership; fills *st_out. */
static int read_policy_file(const char *path, char **out, size_t *len_out, struct stat *st_out,
			    struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT) {
			*out = NULL;
			*len_out = 0;
			memset(st_out, 0, sizeof(*st_out));
			return 0;
		}
		return lev_err_errno(err, -errno, "cannot open '%s'", path);
	}
	if (fstat(fd, st_out) < 0)
		return lev_err_errno(err, -errno, "cannot stat '%s'", path);
	r = check_owner(path, st_out, err);
	if (r < 0)
		return r;
	return lev_read_fd(fd, path, LEV_TOML_MAX_FILE, out, len_out, err);
}

int lev_policy_load(const char *path, struct lev_policy **out, struct lev_file_stamp *stamp_out,
		    struct lev_err *err)
{
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	r = read_policy_file(path, &buf, &len, &st, err);
	if (r < 0)
		return r;
	if (!buf) {
		*out = lev_policy_new_empty(path);
		if (stamp_out)
			memset(stamp_out, 0, sizeof(*stamp_out));
		return 0;
	}
	r = lev_policy_parse(buf, len, path, out, err);
	if (r < 0)
		return r;
	if (stamp_out)
		stamp_from(&st, stamp_out);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **lev_policy_rhai_findings(const char *rhai_dir, const char *lua_dir)
{
	_cleanup_strv_ char **names = NULL;
	char **out = NULL;
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	if (!rhai_dir || !(d = opendir(rhai_dir)))
		return NULL;
	while ((de = readdir(d)) && n < LEV_POLICY_RULES_MAX) {
		size_t len = strlen(de->d_name);

		if (len > 5 && !strcmp(de->d_name + len - 5, ".rhai")) {
			names = lev_strv_push(names, de->d_name);
			n++;
		}
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *lua = xasprintf("%s/%.*s.lua", lua_dir ? lua_dir : "rules",
						     (int)(strlen(names[i]) - 5), names[i]);
		bool have = access(lua, F_OK) == 0;

		out = lev_strv_push_take(
			out, xasprintf("%s/%s: a Leviath Rhai gate rule, which lev does not run; "
				       "its Lua equivalent is '%s' (%s), returning true to allow, "
				       "with the globals tool, target, taint and args "
				       "(docs/taint.md#lua-rules)",
				       rhai_dir, names[i], lua, have ? "present" : "missing: write it"));
	}
	return out;
}

/* What THEIRS (Leviath's) may not say: lev's integrity settings and `consequential`. */
static int leviath_refusals(const struct lev_policy *p, const struct lev_policy *theirs,
			    struct lev_err *err)
{
	if (theirs->integrity_line)
		return lev_err_set(err, LEV_EPARSE,
				   "%s:%u:1: [integrity] and [[sources]] belong in lev's policy.toml "
				   "('%s'), not in Leviath's", theirs->file, theirs->integrity_line,
				   p->file);
	for (size_t i = 0; i < theirs->n_overrides; i++) {
		const struct lev_tool_override *t = &theirs->overrides[i];

		if (t->has_consequential)
			return lev_err_set(err, LEV_EPARSE,
					   "%s:%u:%u: '%s': consequential belongs in lev's "
					   "policy.toml ('%s'), not in Leviath's: it decides what the "
					   "integrity gate checks", theirs->file, t->consequential_line,
					   t->consequential_col, t->name, p->file);
	}
	if (p->n_rules + theirs->n_rules > LEV_POLICY_RULES_MAX ||
	    p->n_overrides + theirs->n_overrides > LEV_POLICY_OVERRIDES_MAX)
		return lev_err_set(err, LEV_EPARSE, "%s and %s: more than %d rules or overrides",
				   p->file, theirs->file, LEV_POLICY_RULES_MAX);
	return 0;
}

/* A target argument THEIRS declares that P's own entry for the tool names differently. */
static void warn_targets(struct lev_policy *p, const struct lev_policy *theirs)
{
	for (size_t i = 0; i < theirs->n_overrides; i++) {
		const struct lev_tool_override *t = &theirs->overrides[i], *o = NULL;

		for (size_t j = 0; j < p->n_overrides && !o; j++)
			if (!strcmp(p->overrides[j].norm, t->norm))
				o = &p->overrides[j];
		if (o && t->target && o->target && strcmp(t->target, o->target))
			p->warnings = lev_strv_push_take(
				p->warnings,
				xasprintf("%s:%u: override of '%s' names target '%s', %s:%u names "
					  "'%s': '%s' is used",
					  theirs->file, t->line, t->name, t->target, p->file, o->line,
					  o->target, o->target));
	}
}

int lev_policy_merge(struct lev_policy *p, struct lev_policy *theirs, struct lev_err *err)
{
	size_t i;
	int r = leviath_refusals(p, theirs, err);

	if (r < 0) {
		lev_policy_free(theirs);
		return r;
	}
	p->rules = xreallocarray(p->rules, p->n_rules + theirs->n_rules + 1, sizeof(*p->rules));
	for (i = 0; i < theirs->n_rules; i++) {
		p->rules[p->n_rules] = theirs->rules[i];
		p->rules[p->n_rules++].source = 1;
	}
	theirs->n_rules = 0;
	for (i = 0; i < theirs->n_overrides; i++)
		theirs->overrides[i].source = 1;
	warn_targets(p, theirs);
	for (char **w = theirs->warnings; w && *w; w++)
		p->warnings = lev_strv_push(p->warnings, *w);
	theirs->warnings = lev_strv_free(theirs->warnings);
	free(p->also_file);
	p->also_file = xstrdup(theirs->file);
	index_free(p->index);
	p->index = index_build(p);
	index_free(theirs->index);
	theirs->index = index_build(theirs);
	lev_policy_free(p->leviath);
	p->leviath = theirs;
	return 0;
}

int lev_policy_load_both(const char *path, const char *leviath_path, struct lev_policy **out,
			 struct lev_file_stamp *stamp_out, struct lev_file_stamp *leviath_stamp_out,
			 struct lev_err *err)
{
	struct lev_policy *ours = NULL, *theirs = NULL;
	struct lev_file_stamp st;
	int r;

	if (leviath_stamp_out)
		memset(leviath_stamp_out, 0, sizeof(*leviath_stamp_out));
	r = lev_policy_load(path, &ours, stamp_out, err);
	if (r < 0 || !leviath_path)
		goto done;
	r = lev_policy_load(leviath_path, &theirs, &st, err);
	if (r < 0) {
		lev_err_wrap(err, "Leviath's policy");
		goto done;
	}
	if (leviath_stamp_out)
		*leviath_stamp_out = st;
	if (st.exists)
		r = lev_policy_merge(ours, theirs, err);
	else
		lev_policy_free(theirs);
done:
	if (r < 0) {
		lev_policy_free(ours);
		return r;
	}
	*out = ours;
	return 0;
}

/* ---- matching ---- */

static bool target_matches_any(char *const *pats, const char *target)
{
	for (; pats && *pats; pats++)
		if (lev_target_pattern_match(*pats, target))
			return true;
	return false;
}

static bool rule_matches(const struct lev_allow_rule *rule, uint64_t h, const char *norm,
			 char *const *targets, enum lev_level taint)
{
	if (rule->tool_hash != h || strcmp(rule->norm, norm) != 0)
		return false;
	if (taint > rule->max_sensitivity)
		return false;
	if (!rule->to && !rule->channel)
		return true;
	if (!targets || !*targets)
		return false;
	for (; *targets; targets++)
		if (!target_matches_any(rule->to, *targets) && !target_matches_any(rule->channel, *targets))
			return false;
	return true;
}

bool lev_allow_rule_matches(const struct lev_allow_rule *rule, const char *tool,
			    char *const *targets, enum lev_level taint)
{
	char nb[LEV_POLICY_TOOL_MAX + 1];

	if (!tool || strlen(tool) > LEV_POLICY_TOOL_MAX)
		return false;
	tool_norm(tool, nb);
	return rule_matches(rule, hash_str(nb), nb, targets, taint);
}

/*
 * With Leviath's file merged in: rule I (or -1) of one file stands only if
 * the other file has no rule for TOOL or one of its rules matches too.
 */
static int both_files_agree(const struct lev_policy *p, int i, const char *nb, uint64_t h,
			    char *const *targets, enum lev_level taint)
{
	bool has_say = false;
	unsigned other;

	if (i < 0 || !p->also_file)
		return i;
	other = !p->rules[i].source;
	for (size_t j = 0; j < p->n_rules; j++) {
		const struct lev_allow_rule *r = &p->rules[j];

		if (r->source != other || r->tool_hash != h || strcmp(r->norm, nb))
			continue;
		has_say = true;
		if (rule_matches(r, h, nb, targets, taint))
			return i;
	}
	return has_say ? -1 : i;
}

int lev_policy_match_linear(const struct lev_policy *p, const char *tool, char *const *targets,
			    enum lev_level taint)
{
	char nb[LEV_POLICY_TOOL_MAX + 1];
	uint64_t h;
	size_t i;

	if (!p || !tool || strlen(tool) > LEV_POLICY_TOOL_MAX)
		return -1;
	tool_norm(tool, nb);
	h = hash_str(nb);
	for (i = 0; i < p->n_rules; i++)
		if (rule_matches(&p->rules[i], h, nb, targets, taint))
			return both_files_agree(p, (int)i, nb, h, targets, taint);
	return -1;
}

/* What the index needs to know about the first target, computed once. */
struct target_keys {
	const char *t;
	size_t len;
	uint64_t h;		/* of the whole target */
	const char *domain;	/* after '@', or NULL */
	size_t dlen;
	uint64_t dh;
	size_t n_suffix;	/* label suffixes: after each '.' */
	const char *suffix[LEV_TARGET_MAX / 2 + 1];
	uint64_t sh[LEV_TARGET_MAX / 2 + 1];
};

static void target_keys_init(struct target_keys *k, const char *t)
{
	uint64_t h = FNV_OFFSET;
	const char *at = strchr(t, '@');
	size_t n = strlen(t), i = n;

	k->t = t;
	k->len = n;
	k->n_suffix = 0;
	k->domain = NULL;
	k->dlen = 0;
	k->dh = 0;
	/* one pass from the end: the hash so far is the hash of the suffix after position i */
	while (i--) {
		if (t[i] == '.' && k->n_suffix < sizeof(k->sh) / sizeof(k->sh[0])) {
			k->suffix[k->n_suffix] = t + i + 1;
			k->sh[k->n_suffix++] = h;
		}
		if (at && t + i == at) {
			k->domain = at + 1;
			k->dlen = n - i - 1;
			k->dh = h;
		}
		h ^= (unsigned char)t[i];
		h *= FNV_PRIME;
	}
	k->h = h;
}

/* The lowest rule above FLOOR that the index says may match the first target. */
static uint32_t next_candidate(const struct lev_policy_index *ix, const char *nb, uint64_t th,
			       const struct target_keys *k, int64_t floor)
{
	static const uint64_t empty_h = FNV_OFFSET;
	uint32_t best = lowest_above(ix, 'N', nb, th, "", 0, empty_h, floor), c;
	size_t i;

#define TAKE(x)                                                                                 \
	do {                                                                                    \
		c = (x);                                                                        \
		if (c < best)                                                                   \
			best = c;                                                               \
	} while (0)

	if (!k)
		return best;
	TAKE(lowest_above(ix, 'A', nb, th, "", 0, empty_h, floor));
	TAKE(lowest_above(ix, 'P', nb, th, "", 0, empty_h, floor));
	TAKE(lowest_above(ix, 'E', nb, th, k->t, k->len, k->h, floor));
	if (k->domain)
		TAKE(lowest_above(ix, 'M', nb, th, k->domain, k->dlen, k->dh, floor));
	for (i = 0; i < k->n_suffix; i++)
		TAKE(lowest_above(ix, 'S', nb, th, k->suffix[i],
				  k->len - (size_t)(k->suffix[i] - k->t), k->sh[i], floor));
#undef TAKE
	return best;
}

int lev_policy_match(const struct lev_policy *p, const char *tool, char *const *targets,
		     enum lev_level taint)
{
	char nb[LEV_POLICY_TOOL_MAX + 1];
	const char *first = targets && *targets ? *targets : NULL;
	struct target_keys k;
	int64_t floor = -1;
	uint64_t h;

	if (!p || !tool || strlen(tool) > LEV_POLICY_TOOL_MAX)
		return -1;
	if (!p->index)
		return lev_policy_match_linear(p, tool, targets, taint);
	if (first && strlen(first) > LEV_TARGET_MAX)
		return -1;
	tool_norm(tool, nb);
	h = hash_str(nb);
	if (first)
		target_keys_init(&k, first);
	/* walk the candidates for the first target in rule order; verify each in full */
	for (;;) {
		uint32_t c = next_candidate(p->index, nb, h, first ? &k : NULL, floor);

		if (c == UINT32_MAX || c >= p->n_rules)
			return -1;
		if (rule_matches(&p->rules[c], h, nb, targets, taint))
			return both_files_agree(p, (int)c, nb, h, targets, taint);
		floor = c;
	}
}

const struct lev_tool_override *lev_policy_override_find(const struct lev_policy *p,
							 const char *tool)
{
	size_t i;

	if (!p || !tool)
		return NULL;
	for (i = 0; i < p->n_overrides; i++) {
		const struct lev_tool_override *o = &p->overrides[i];

		if (!strcmp(o->name, tool) || (o->alt_name && !strcmp(o->alt_name, tool)))
			return o;
	}
	if (p->n_overrides && strlen(tool) <= LEV_POLICY_TOOL_MAX) {
		char nb[LEV_POLICY_TOOL_MAX + 1];

		tool_norm(tool, nb);
		for (i = 0; i < p->n_overrides; i++)
			if (!strcmp(p->overrides[i].norm, nb))
				return &p->overrides[i];
	}
	return NULL;
}

static void apply_override(const struct lev_tool_override *o, struct lev_tool_class *out)
{
	if (o->has_sensitivity)
		out->sensitivity = o->sensitivity;
	if (o->has_direction)
		out->direction = o->direction;
	if (o->has_clearance)
		out->clearance = o->clearance;
	if (o->target) {
		out->target_from = LEV_TARGET_FROM_ARG;
		out->target_arg = o->target;
	}
}

const struct lev_tool_override *lev_policy_server_override(const struct lev_policy *p,
							   const char *tool)
{
	const char *sep = tool ? strstr(tool, "__") : NULL;
	char srv[LEV_POLICY_TOOL_MAX + 1];

	if (!sep || sep == tool || (size_t)(sep - tool) > LEV_POLICY_TOOL_MAX)
		return NULL;
	memcpy(srv, tool, (size_t)(sep - tool));
	srv[sep - tool] = '\0';
	return lev_policy_override_find(p, srv);
}

bool lev_policy_consequential(const struct lev_policy *p, const char *tool, bool dflt)
{
	const struct lev_tool_override *o = lev_policy_override_find(p, tool);
	const struct lev_tool_desc *bt = lev_tooltable_find(tool);

	if (!p || !tool || (bt && !(bt->flags & LEV_TOOLF_FOREIGN)))
		return dflt;
	if (o && o->has_consequential)
		return o->consequential;
	o = lev_policy_server_override(p, tool);
	return o && o->has_consequential ? o->consequential : dflt;
}

/* What an override sets (classify_one()'s *SET). */
enum {
	SET_SENSITIVITY = 1 << 0,
	SET_DIRECTION = 1 << 1,
	SET_CLEARANCE = 1 << 2,
	SET_TARGET = 1 << 3,
};

static unsigned override_sets(const struct lev_tool_override *o)
{
	if (!o)
		return 0;
	return (o->has_sensitivity ? SET_SENSITIVITY : 0) | (o->has_direction ? SET_DIRECTION : 0) |
	       (o->has_clearance ? SET_CLEARANCE : 0) | (o->target ? SET_TARGET : 0);
}

/*
 * TOOL's built-in classification with P's own overrides applied (its
 * server's, then its own); *SET gets the fields they set.
 */
static void classify_one(const struct lev_policy *p, const char *tool, struct lev_tool_class *out,
			 unsigned *set)
{
	const struct lev_tool_override *o = lev_policy_override_find(p, tool);
	const struct lev_tool_override *so = lev_policy_server_override(p, tool);

	lev_taint_builtin_class(tool, out);
	*set = 0;
	if (so && so != o) {
		apply_override(so, out);
		*set |= override_sets(so);
	}
	if (o) {
		apply_override(o, out);
		*set |= override_sets(o);
	}
}

void lev_policy_classify(const struct lev_policy *p, const char *tool, struct lev_tool_class *out)
{
	struct lev_tool_class t;
	unsigned ours, theirs;

	classify_one(p, tool, out, &ours);
	if (!p || !p->leviath)
		return;
	/*
	 * Leviath's file on its own: each field it sets can only make ours
	 * (lev's file alone, built-in where it is silent) stricter.
	 */
	classify_one(p->leviath, tool, &t, &theirs);
	if (theirs & SET_SENSITIVITY)
		out->sensitivity = lev_level_max(out->sensitivity, t.sensitivity);
	if ((theirs & SET_DIRECTION) && t.direction > out->direction)
		out->direction = t.direction;
	if ((theirs & SET_CLEARANCE) && t.clearance < out->clearance)
		out->clearance = t.clearance;
	if ((theirs & SET_TARGET) && !(ours & SET_TARGET)) {
		out->target_from = t.target_from;
		out->target_arg = t.target_arg;
	}
}

/* ---- lev policy add ---- */

static int add_toml_string(struct lev_buf *b, const char *s)
{
	int r = lev_buf_addch(b, '"');

	for (; r == 0 && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			r = lev_buf_addf(b, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			r = lev_buf_addf(b, "\\u%04x", ch);
		else
			r = lev_buf_addch(b, (char)ch);
	}
	return r ? r : lev_buf_addch(b, '"');
}

int lev_policy_rule_text(const char *tool, const char *pattern, enum lev_level max,
			 struct lev_buf *out, struct lev_err *err)
{
	_cleanup_free_ char *canon = NULL;
	int r;

	if (!tool || !tool_name_ok(tool, strnlen(tool, LEV_POLICY_TOOL_MAX + 1)))
		return lev_err_set(err, -EINVAL,
				   "invalid tool name: 1 to %d printable bytes without spaces or quotes",
				   LEV_POLICY_TOOL_MAX);
	if ((unsigned)max >= _LEV_LEVEL_MAX)
		return lev_err_set(err, -EINVAL, "invalid max sensitivity");
	if (pattern) {
		r = lev_target_pattern_canon(pattern, &canon, err);
		if (r < 0)
			return r;
	}
	r = lev_buf_adds(out, "[[allowlist]]\ntool = ");
	if (r == 0)
		r = add_toml_string(out, tool);
	if (r == 0 && canon) {
		r = lev_buf_adds(out, "\nto = [");
		if (r == 0)
			r = add_toml_string(out, canon);
		if (r == 0)
			r = lev_buf_adds(out, "]");
	}
	if (r == 0)
		r = lev_buf_addf(out, "\nmax_sensitivity = \"%s\"\n", lev_level_name(max));
	return r < 0 ? lev_err_set(err, r, "rule text too long") : 0;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

int lev_policy_append_rule(const char *path, const char *tool, const char *pattern,
			   enum lev_level max, size_t *index_out, struct lev_err *err)
{
	_cleanup_free_ char *dir = dir_of(path);
	_cleanup_free_ char *orig = NULL;
	_cleanup_close_ int dfd = -1;
	_cleanup_(lev_policy_freep) struct lev_policy *before = NULL, *after = NULL;
	struct lev_buf text = LEV_BUF_INIT_MAX(LEV_TOML_MAX_FILE);
	struct lev_buf rule = LEV_BUF_INIT_MAX(4096);
	const struct lev_allow_rule *last;
	_cleanup_free_ char *canon = NULL, *real = NULL;
	struct stat st;
	size_t len = 0;
	mode_t mode = 0600;
	int r;

	r = lev_policy_rule_text(tool, pattern, max, &rule, err);
	if (r < 0)
		goto out;
	if (pattern)
		(void)lev_target_pattern_canon(pattern, &canon, NULL);

	r = lev_mkdir_p(dir, 0700, err);
	if (r < 0)
		goto out;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = lev_err_errno(err, -errno, "cannot open '%s'", dir);
		goto out;
	}
	if (flock(dfd, LOCK_EX) < 0) {
		r = lev_err_errno(err, -errno, "cannot lock '%s'", dir);
		goto out;
	}

	r = read_policy_file(path, &orig, &len, &st, err);
	if (r < 0)
		goto out;
	if (orig) {
		/* keep the mode (group/other write was refused when reading) */
		mode = (st.st_mode & 0755) | S_IRUSR | S_IWUSR;
		r = lev_policy_parse(orig, len, path, &before, err);
		if (r < 0) {
			lev_err_wrap(err, "not changing a policy that does not parse");
			goto out;
		}
		r = lev_buf_add(&text, orig, len);
		if (r == 0 && len > 0 && orig[len - 1] != '\n')
			r = lev_buf_addch(&text, '\n');
		if (r == 0 && len > 0)
			r = lev_buf_addch(&text, '\n');
	} else {
		before = lev_policy_new_empty(path);
		r = lev_buf_adds(&text, "# lev taint policy: see 'lev policy' and docs/taint.md\n\n");
	}
	if (r == 0)
		r = lev_buf_add(&text, rule.buf, rule.len);
	if (r < 0) {
		r = lev_err_set(err, -E2BIG, "'%s' would grow past %zu bytes", path,
				LEV_TOML_MAX_FILE);
		goto out;
	}

	/* the new text must read back as the old rules plus exactly ours */
	r = lev_policy_parse(text.buf, text.len, path, &after, err);
	if (r < 0) {
		lev_err_wrap(err, "the rule cannot be appended to '%s'", path);
		goto out;
	}
	last = after->n_rules ? &after->rules[after->n_rules - 1] : NULL;
	if (after->n_rules != before->n_rules + 1 || !last || strcmp(last->tool, tool) != 0 ||
	    last->max_sensitivity != max || last->channel ||
	    (canon ? !(last->to && lev_strv_len(last->to) == 1 && !strcmp(last->to[0], canon))
		   : last->to != NULL)) {
		r = lev_err_set(err, LEV_EPARSE,
				"'%s': the appended rule does not read back as written; not changing it",
				path);
		goto out;
	}
	/* write through a symlink (dotfile managers link policy.toml) */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		real = realpath(path, NULL);
		if (!real) {
			r = lev_err_errno(err, -errno, "cannot resolve '%s'", path);
			goto out;
		}
	}
	r = lev_write_file_atomic(real ? real : path, text.buf, text.len, mode, err);
	if (r < 0)
		goto out;
	if (index_out)
		*index_out = after->n_rules;
out:
	lev_buf_release(&text);
	lev_buf_release(&rule);
	return r;
}
