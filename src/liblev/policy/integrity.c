/*
 * integrity.c - [integrity] and [[sources]] of policy.toml, and the
 * integrity gate (integrity.h).
 */
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/hot.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/toml.h"
#include "liblev/conf/tomlval.h"
#include "liblev/policy/integrity.h"
#include "liblev/policy/target.h"

static const char *const level_words[] = { "public", "internal", "private" };
static const char *const integ_words[] = { "trusted", "untrusted" };

static const char *const source_names[_LEV_INTEG_SRC_MAX] = {
	"integrity_disabled", "not_consequential", "trusted_context", "allowlist", "rule",
	"yolo", "none", "user_once", "user_run", "user_deny", "no_answer",
};

const char *lev_integrity_source_name(enum lev_integrity_source s)
{
	return (unsigned)s < _LEV_INTEG_SRC_MAX ? source_names[s] : "none";
}

struct lev_integrity_policy *lev_integrity_policy_free(struct lev_integrity_policy *p)
{
	if (!p)
		return NULL;
	lev_strv_free(p->trusted);
	lev_strv_free(p->untrusted);
	lev_strv_free(p->protected_files);
	for (size_t i = 0; i < p->n_allow; i++) {
		free(p->allow[i].tool);
		free(p->allow[i].target);
		lev_strv_free(p->allow[i].trusted_args);
	}
	free(p->allow);
	for (size_t i = 0; i < p->n_sources; i++) {
		free(p->sources[i].host);
		free(p->sources[i].path);
		free(p->sources[i].server);
	}
	free(p->sources);
	free(p);
	return NULL;
}

/* ---- parsing ---- */

static int parse_globs(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		       const char *path, char ***out, struct lev_err *err)
{
	char **g = NULL;
	int r = lev_tomlval_strv(c, v, path, &g, err);

	if (r < 0)
		return r;
	if (lev_strv_len(g) > LEV_INTEGRITY_GLOBS_MAX) {
		lev_strv_free(g);
		return lev_tomlval_fail(c, v->line, v->col, err, "'%s' holds more than %d patterns",
					path, LEV_INTEGRITY_GLOBS_MAX);
	}
	for (char **s = g; s && *s; s++) {
		if (!**s) {
			lev_strv_free(g);
			return lev_tomlval_fail(c, v->line, v->col, err, "'%s' holds an empty pattern",
						path);
		}
	}
	*out = g;
	return 0;
}

static bool looks_like_path(const char *s)
{
	return strchr(s, '/') || s[0] == '.' || s[0] == '~';
}

static const char *const allow_keys[] = { "tool", "target", "args_from_trusted", NULL };

static int parse_allow(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v, size_t idx,
		       struct lev_integrity_allow *out, struct lev_err *err)
{
	_cleanup_free_ char *path = xasprintf("integrity.allow[%zu]", idx + 1);
	const struct lev_toml_value *f;
	unsigned line = 0, col = 0;
	int r;

	if (v->type != LEV_TOML_TABLE)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be a table ([[integrity.allow]])", path);
	lev_toml_table_pos(v->u.table, &line, &col);
	out->line = line;
	r = lev_tomlval_check_keys(c, v->u.table, "[[integrity.allow]]", allow_keys, false, err);
	if (r < 0)
		return r;
	f = lev_toml_table_get(v->u.table, "tool");
	if (!f)
		return lev_tomlval_fail(c, line, col, err, "'%s' has no 'tool'", path);
	r = lev_tomlval_string(c, f, "tool", &out->tool, err);
	if (r == 0 && (!*out->tool || strlen(out->tool) > 256))
		r = lev_tomlval_fail(c, f->line, f->col, err, "'%s.tool' must be 1 to 256 bytes",
				     path);
	f = lev_toml_table_get(v->u.table, "target");
	if (r == 0 && f) {
		_cleanup_free_ char *raw = NULL;

		r = lev_tomlval_string(c, f, "target", &raw, err);
		if (r == 0 && looks_like_path(raw)) {
			out->target = TAKE_PTR(raw);
			out->target_is_path = true;
		} else if (r == 0) {
			struct lev_err e = LEV_ERR_INIT;

			if (lev_target_pattern_canon(raw, &out->target, &e) < 0)
				r = lev_tomlval_fail(c, f->line, f->col, err, "'%s.target': %s", path,
						     e.msg);
		}
	}
	f = lev_toml_table_get(v->u.table, "args_from_trusted");
	if (r == 0 && f && f->type == LEV_TOML_ARRAY) {
		/* the arguments that must not come from untrusted text ("url", "url?hotel") */
		_cleanup_free_ char *apath = xasprintf("%s.args_from_trusted", path);

		r = lev_tomlval_strv(c, f, apath, &out->trusted_args, err);
		if (r == 0 && (!out->trusted_args || lev_strv_len(out->trusted_args) > 64))
			r = lev_tomlval_fail(c, f->line, f->col, err,
					     "'%s' must list 1 to 64 argument names", apath);
		for (char **a = out->trusted_args; r == 0 && a && *a; a++)
			if (!**a || strlen(*a) > 256)
				r = lev_tomlval_fail(c, f->line, f->col, err,
						     "'%s' holds an empty or too long name", apath);
		out->args_from_trusted = r == 0;
	} else if (r == 0 && f) {
		r = lev_tomlval_bool(c, f, "args_from_trusted", &out->args_from_trusted, err);
	}
	return r;
}

static const char *const source_keys[] = { "host", "path", "server", "sensitivity", "integrity",
					   NULL };

static int parse_source(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v, size_t idx,
			struct lev_source_label *out, struct lev_err *err)
{
	_cleanup_free_ char *path = xasprintf("sources[%zu]", idx + 1);
	const struct lev_toml_table *t;
	const struct lev_toml_value *f;
	unsigned line = 0, col = 0;
	int r, w = 0, n = 0;

	if (v->type != LEV_TOML_TABLE)
		return lev_tomlval_fail(c, v->line, v->col, err, "'%s' must be a table ([[sources]])",
					path);
	t = v->u.table;
	lev_toml_table_pos(t, &line, &col);
	out->line = line;
	r = lev_tomlval_check_keys(c, t, "[[sources]]", source_keys, false, err);
	if (r < 0)
		return r;
	if ((f = lev_toml_table_get(t, "host"))) {
		_cleanup_free_ char *raw = NULL;
		struct lev_err e = LEV_ERR_INIT;

		n++;
		r = lev_tomlval_string(c, f, "host", &raw, err);
		if (r == 0 && lev_target_pattern_canon(raw, &out->host, &e) < 0)
			r = lev_tomlval_fail(c, f->line, f->col, err, "'%s.host': %s", path, e.msg);
	}
	if (r == 0 && (f = lev_toml_table_get(t, "path"))) {
		n++;
		r = lev_tomlval_string(c, f, "path", &out->path, err);
	}
	if (r == 0 && (f = lev_toml_table_get(t, "server"))) {
		n++;
		r = lev_tomlval_string(c, f, "server", &out->server, err);
	}
	if (r == 0 && n != 1)
		return lev_tomlval_fail(c, line, col, err,
					"'%s' needs exactly one of 'host', 'path' or 'server'", path);
	if (r == 0 && (f = lev_toml_table_get(t, "sensitivity"))) {
		r = lev_tomlval_enum(c, f, "sensitivity", level_words, 3, &w, err);
		out->has_sensitivity = r == 0;
		out->sensitivity = (enum lev_level)w;
	}
	if (r == 0 && (f = lev_toml_table_get(t, "integrity"))) {
		r = lev_tomlval_enum(c, f, "integrity", integ_words, 2, &w, err);
		out->has_integrity = r == 0;
		out->integrity = (enum lev_integrity)w;
	}
	return r;
}

static const char *const integ_keys[] = { "trusted", "untrusted", "workdir", "protected", "writes",
					  "allow", NULL };
static const char *const writes_words[] = { "all", "protected" };

static int parse_integrity_table(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
				 struct lev_integrity_policy *p, struct lev_err *err)
{
	const struct lev_toml_table *t;
	const struct lev_toml_value *f;
	int r, w = 0;

	r = lev_tomlval_type(c, v, LEV_TOML_TABLE, "integrity", err);
	if (r < 0)
		return r;
	t = v->u.table;
	r = lev_tomlval_check_keys(c, t, "[integrity]", integ_keys, false, err);
	if (r == 0 && (f = lev_toml_table_get(t, "trusted")))
		r = parse_globs(c, f, "integrity.trusted", &p->trusted, err);
	if (r == 0 && (f = lev_toml_table_get(t, "untrusted")))
		r = parse_globs(c, f, "integrity.untrusted", &p->untrusted, err);
	if (r == 0 && (f = lev_toml_table_get(t, "protected")))
		r = parse_globs(c, f, "integrity.protected", &p->protected_files, err);
	if (r == 0 && (f = lev_toml_table_get(t, "writes"))) {
		int wr = 0;

		r = lev_tomlval_enum(c, f, "integrity.writes", writes_words, 2, &wr, err);
		p->writes_protected_only = r == 0 && wr == 1;
	}
	if (r == 0 && (f = lev_toml_table_get(t, "workdir"))) {
		r = lev_tomlval_enum(c, f, "integrity.workdir", integ_words, 2, &w, err);
		p->workdir_untrusted = r == 0 && w == LEV_UNTRUSTED;
	}
	if (r == 0 && (f = lev_toml_table_get(t, "allow"))) {
		size_t n;

		r = lev_tomlval_type(c, f, LEV_TOML_ARRAY, "integrity.allow", err);
		if (r < 0)
			return r;
		n = lev_toml_array_len(f->u.array);
		if (n > LEV_INTEGRITY_ALLOW_MAX)
			return lev_tomlval_fail(c, f->line, f->col, err,
						"more than %d [[integrity.allow]] entries",
						LEV_INTEGRITY_ALLOW_MAX);
		p->allow = n ? xcalloc(n, sizeof(*p->allow)) : NULL;
		for (size_t i = 0; i < n && r == 0; i++) {
			p->n_allow++;
			r = parse_allow(c, lev_toml_array_at(f->u.array, i), i, &p->allow[i], err);
		}
	}
	return r;
}

int lev_integrity_policy_parse(const struct lev_tomlval_ctx *c, const struct lev_toml_table *root,
			       struct lev_integrity_policy **out, struct lev_err *err)
{
	struct lev_integrity_policy *p = xcalloc(1, sizeof(*p));
	const struct lev_toml_value *v;
	int r = 0;

	v = lev_toml_table_get(root, "integrity");
	if (v)
		r = parse_integrity_table(c, v, p, err);
	v = lev_toml_table_get(root, "sources");
	if (r == 0 && v) {
		size_t n;

		r = lev_tomlval_type(c, v, LEV_TOML_ARRAY, "sources", err);
		n = r == 0 ? lev_toml_array_len(v->u.array) : 0;
		if (n > LEV_SOURCES_MAX)
			r = lev_tomlval_fail(c, v->line, v->col, err, "more than %d [[sources]]",
					     LEV_SOURCES_MAX);
		else if (n)
			p->sources = xcalloc(n, sizeof(*p->sources));
		for (size_t i = 0; r == 0 && i < n; i++) {
			p->n_sources++;
			r = parse_source(c, lev_toml_array_at(v->u.array, i), i, &p->sources[i], err);
		}
	}
	if (r < 0) {
		lev_integrity_policy_free(p);
		return r;
	}
	*out = p;
	return 0;
}

/* ---- labels ---- */

static bool glob_match(const char *glob, const char *rel, const char *abs)
{
	if (glob[0] == '/')
		return abs && fnmatch(glob, abs, 0) == 0;
	return rel && fnmatch(glob, rel, 0) == 0;
}

bool lev_integrity_globs_match(char *const *globs, const char *rel, const char *abs)
{
	for (; globs && *globs; globs++)
		if (glob_match(*globs, rel, abs))
			return true;
	return false;
}

enum lev_integrity lev_integrity_of_file(const struct lev_integrity_policy *p, const char *rel,
					 const char *abs)
{
	if (!p)
		return LEV_TRUSTED;
	if (lev_integrity_globs_match(p->untrusted, rel, abs))
		return LEV_UNTRUSTED;
	if (lev_integrity_globs_match(p->trusted, rel, abs))
		return LEV_TRUSTED;
	return p->workdir_untrusted ? LEV_UNTRUSTED : LEV_TRUSTED;
}

const struct lev_source_label *lev_integrity_source(const struct lev_integrity_policy *p,
						    const char *host, const char *rel,
						    const char *abs, const char *server)
{
	for (size_t i = 0; p && i < p->n_sources; i++) {
		const struct lev_source_label *s = &p->sources[i];

		if (s->host && host && lev_target_pattern_match(s->host, host))
			return s;
		if (s->path && glob_match(s->path, rel, abs))
			return s;
		if (s->server && server && !strcmp(s->server, server))
			return s;
	}
	return NULL;
}

bool lev_integrity_tool_consequential(const struct lev_tool_desc *desc, bool runtime_mcp,
				      unsigned touches)
{
	if (desc)
		return desc->flags & LEV_TOOLF_CONSEQUENTIAL;
	/* run-time entries: MCP tools, and script tools that reach out or run commands */
	return runtime_mcp || (touches & (LEV_TOUCH_NETWORK | LEV_TOUCH_SHELL | LEV_TOUCH_WRITES));
}

/* ---- the gate ---- */

/* Is TOOL a file tool that writes (write_file, edit_file)? */
static bool file_write(const char *tool)
{
	const struct lev_tool_desc *t = lev_tooltable_find(tool);

	return t && !(t->flags & LEV_TOOLF_FOREIGN) && t->kind == LEV_TOOL_FS &&
	       (t->touches & LEV_TOUCH_WRITES);
}

void lev_integrity_decision_release(struct lev_integrity_decision *d)
{
	free(d->rule_name);
	lev_strv_free(d->diags);
	memset(d, 0, sizeof(*d));
}

static bool allow_matches(const struct lev_integrity_allow *al, const struct lev_integrity_call *c,
			  bool protected_file)
{
	if (!lev_policy_tool_same(al->tool, c->tool))
		return false;
	if (al->args_from_trusted && c->untrusted_args && *c->untrusted_args) {
		if (!al->trusted_args)
			return false;	/* = true: no argument may be marked */
		for (char *const *a = al->trusted_args; *a; a++)
			if (lev_strv_contains(c->untrusted_args, *a))
				return false;
	}
	if (!al->target)
		return !protected_file;
	if (al->target_is_path)
		return (c->path_rel || c->path_abs) && glob_match(al->target, c->path_rel, c->path_abs);
	if (!c->targets || !*c->targets)
		return false;
	for (char *const *t = c->targets; *t; t++)
		if (!lev_target_pattern_match(al->target, *t))
			return false;
	return true;
}

static LEV_NOINLINE bool by_rules(struct lev_gate *g, const struct lev_integrity_call *c,
				  struct lev_integrity_decision *d)
{
	struct lev_rules *rules = lev_gate_rules(g);
	struct lev_rule_input in = {
		.tool = c->tool,
		.targets = c->targets,
		.taint = c->taint,
		.args = c->args,
		.integrity = c->integrity,
		.consequential = d->consequential,
		.untrusted_args = c->untrusted_args,
		.has_integrity = true,
	};
	int idx;

	if (!rules || lev_rules_count(rules) == 0)
		return false;
	idx = lev_rules_first_allowing(rules, &in, &d->diags);
	if (idx < 0)
		return false;
	d->source = LEV_INTEG_SRC_RULE;
	d->rule_name = xstrdup(lev_rules_name(rules, (size_t)idx));
	return true;
}

void lev_integrity_check(struct lev_gate *g, const struct lev_integrity_call *c,
			 struct lev_integrity_decision *d)
{
	const struct lev_integrity_policy *p;

	if (g && c->integrity == LEV_UNTRUSTED)
		lev_gate_refresh(g);	/* policy.toml or the rules may have changed */
	p = g ? lev_policy_integrity(lev_gate_policy(g)) : NULL;
	memset(d, 0, sizeof(*d));
	d->result = LEV_GATE_ALLOWED;
	d->integrity = c->integrity;
	d->protected_file = p && (c->path_rel || c->path_abs) &&
			    lev_integrity_globs_match(p->protected_files, c->path_rel, c->path_abs);
	d->consequential = (lev_policy_consequential(g ? lev_gate_policy(g) : NULL, c->tool,
						     c->consequential) &&
			    !(p && p->writes_protected_only && file_write(c->tool))) ||
			   d->protected_file;
	if (!g || !lev_gate_enabled(g)) {
		d->source = LEV_INTEG_SRC_DISABLED;
		return;
	}
	if (!d->consequential) {
		d->source = LEV_INTEG_SRC_NOT_CONSEQUENTIAL;
		return;
	}
	if (c->integrity == LEV_TRUSTED) {
		d->source = LEV_INTEG_SRC_TRUSTED;
		return;
	}
	for (size_t i = 0; p && i < p->n_allow; i++) {
		if (allow_matches(&p->allow[i], c, d->protected_file)) {
			d->source = LEV_INTEG_SRC_ALLOW;
			d->rule_index = i + 1;
			d->rule_line = p->allow[i].line;
			return;
		}
	}
	if (by_rules(g, c, d))
		return;
	if (lev_gate_integrity_raised(g, c->tool)) {
		d->source = LEV_INTEG_SRC_USER_RUN;
		return;
	}
	if (lev_gate_yolo(g)) {
		d->source = LEV_INTEG_SRC_YOLO;
		return;
	}
	d->result = LEV_GATE_NEEDS_USER;
	d->source = LEV_INTEG_SRC_NONE;
}

int lev_integrity_answer(struct lev_gate *g, const char *tool, struct lev_integrity_decision *d,
			 enum lev_gate_answer a)
{
	if (d->result != LEV_GATE_NEEDS_USER)
		return -EINVAL;
	switch (a) {
	case LEV_GATE_ANSWER_ONCE:
		d->result = LEV_GATE_ALLOWED;
		d->source = LEV_INTEG_SRC_USER_ONCE;
		break;
	case LEV_GATE_ANSWER_RUN:
		d->result = LEV_GATE_ALLOWED;
		d->source = LEV_INTEG_SRC_USER_RUN;
		/* a protected file is asked about every time */
		if (g && !d->protected_file)
			lev_gate_integrity_raise(g, tool);
		break;
	case LEV_GATE_ANSWER_DENY:
		d->result = LEV_GATE_BLOCKED;
		d->source = LEV_INTEG_SRC_USER_DENY;
		break;
	default:
		d->result = LEV_GATE_BLOCKED;
		d->source = LEV_INTEG_SRC_NO_ANSWER;
		break;
	}
	return 0;
}

int lev_integrity_describe(const char *tool, const struct lev_integrity_decision *d,
			   struct lev_buf *out)
{
	_cleanup_free_ char *t = lev_printable(tool, strlen(tool), 128);

	if (!d->consequential)
		return lev_buf_addf(out, "'%s' is not consequential", t);
	return lev_buf_addf(out, "'%s' %s while the context holds untrusted content", t,
			    d->protected_file ? "would change a protected file"
					      : "is consequential");
}
