/*
 * tomlval.c - typed, located reads from a TOML document.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/xalloc.h"

char *lev_printable(const char *s, size_t len, size_t max)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (b.len >= max) {
			(void)lev_buf_adds(&b, "...");
			break;
		}
		if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\')
			(void)lev_buf_addf(&b, "\\x%02x", c);
		else
			(void)lev_buf_addch(&b, (char)c);
	}
	return lev_buf_detach(&b, NULL);
}

void lev_tomlval_warn(const struct lev_tomlval_ctx *c, unsigned line, const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(2048);
	va_list ap;
	size_t n;

	if (!c->warnings)
		return;
	n = lev_strv_len(*c->warnings);
	if (n > LEV_TOMLVAL_WARN_MAX)
		return;
	if (n == LEV_TOMLVAL_WARN_MAX) {
		*c->warnings = lev_strv_push(*c->warnings, "(further warnings not shown)");
		return;
	}
	(void)lev_buf_addf(&b, "%s:%u: ", c->file, line);
	va_start(ap, fmt);
	(void)lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	*c->warnings = lev_strv_push_take(*c->warnings, lev_buf_detach(&b, NULL));
}

int lev_tomlval_fail(const struct lev_tomlval_ctx *c, unsigned line, unsigned col,
		     struct lev_err *err, const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(LEV_ERR_MSG_MAX * 2);
	va_list ap;
	int r;

	va_start(ap, fmt);
	(void)lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	r = lev_err_set(err, LEV_EPARSE, "%s:%u:%u: %s", c->file, line, col, b.buf);
	lev_buf_release(&b);
	return r;
}

bool lev_tomlval_key_is(const struct lev_toml_table *t, size_t i, const char *word)
{
	size_t len = 0;
	const char *k = lev_toml_table_key(t, i, &len);

	return k && len == strlen(word) && memcmp(k, word, len) == 0;
}

char *lev_tomlval_key_dup(const struct lev_toml_table *t, size_t i)
{
	size_t len = 0;
	const char *k = lev_toml_table_key(t, i, &len);

	return lev_printable(k ? k : "", k ? len : 0, 128);
}

int lev_tomlval_type(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		     enum lev_toml_type want, const char *path, struct lev_err *err)
{
	static const char *const article[] = {
		[LEV_TOML_STRING] = "a string",
		[LEV_TOML_INTEGER] = "an integer",
		[LEV_TOML_FLOAT] = "a number",
		[LEV_TOML_BOOL] = "a boolean (true or false)",
		[LEV_TOML_DATETIME] = "a date-time",
		[LEV_TOML_DATETIME_LOCAL] = "a date-time",
		[LEV_TOML_DATE_LOCAL] = "a date",
		[LEV_TOML_TIME_LOCAL] = "a time",
		[LEV_TOML_ARRAY] = "an array",
		[LEV_TOML_TABLE] = "a table",
	};

	if (v->type == want)
		return 0;
	return lev_tomlval_fail(c, v->line, v->col, err, "'%s' must be %s, not %s", path,
				article[want],
				v->type == LEV_TOML_BOOL ? "a boolean" : article[v->type]);
}

static int string_ok(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		     const char *path, struct lev_err *err)
{
	int r = lev_tomlval_type(c, v, LEV_TOML_STRING, path, err);

	if (r < 0)
		return r;
	if (v->u.str.len > LEV_TOMLVAL_STR_MAX)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' is too long (%zu bytes; the limit is %zu)", path,
					v->u.str.len, LEV_TOMLVAL_STR_MAX);
	if (memchr(v->u.str.ptr, '\0', v->u.str.len))
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' holds a NUL byte, which lev does not accept", path);
	return 0;
}

int lev_tomlval_string(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		       const char *path, char **out, struct lev_err *err)
{
	int r = string_ok(c, v, path, err);

	if (r < 0)
		return r;
	*out = xstrndup(v->u.str.ptr, v->u.str.len);
	return 0;
}

int lev_tomlval_bool(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		     const char *path, bool *out, struct lev_err *err)
{
	int r = lev_tomlval_type(c, v, LEV_TOML_BOOL, path, err);

	if (r < 0)
		return r;
	*out = v->u.boolean;
	return 0;
}

int lev_tomlval_u64(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		    const char *path, uint64_t min, uint64_t max, uint64_t *out,
		    struct lev_err *err)
{
	int r = lev_tomlval_type(c, v, LEV_TOML_INTEGER, path, err);

	if (r < 0)
		return r;
	if (v->u.integer < 0 || (uint64_t)v->u.integer < min || (uint64_t)v->u.integer > max)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be between %" PRIu64 " and %" PRIu64
					" (got %" PRId64 ")",
					path, min, max, v->u.integer);
	*out = (uint64_t)v->u.integer;
	return 0;
}

int lev_tomlval_strv(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		     const char *path, char ***out, struct lev_err *err)
{
	const struct lev_toml_array *a;
	char **list = NULL;
	size_t i, n;
	int r = lev_tomlval_type(c, v, LEV_TOML_ARRAY, path, err);

	if (r < 0)
		return r;
	a = v->u.array;
	n = lev_toml_array_len(a);
	if (n > LEV_TOMLVAL_LIST_MAX)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' has too many entries (%zu; the limit is %d)", path, n,
					LEV_TOMLVAL_LIST_MAX);
	for (i = 0; i < n; i++) {
		const struct lev_toml_value *e = lev_toml_array_at(a, i);
		_cleanup_free_ char *name = xasprintf("%s[%zu]", path, i);

		r = string_ok(c, e, name, err);
		if (r < 0) {
			lev_strv_free(list);
			return r;
		}
		list = lev_strv_push_take(list, xstrndup(e->u.str.ptr, e->u.str.len));
	}
	*out = list;
	return 0;
}

int lev_tomlval_enum(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		     const char *path, const char *const *names, size_t n, int *out,
		     struct lev_err *err)
{
	struct lev_buf valid = LEV_BUF_INIT_MAX(1024);
	_cleanup_free_ char *got = NULL;
	size_t i;
	int r;

	r = string_ok(c, v, path, err);
	for (i = 0; r == 0 && i < n; i++) {
		if (strlen(names[i]) == v->u.str.len && !strcasecmp(names[i], v->u.str.ptr)) {
			*out = (int)i;
			return 0;
		}
	}
	for (i = 0; i < n; i++)
		(void)lev_buf_addf(&valid, "%s%s", i ? ", " : "", names[i]);
	if (r == 0) {
		got = lev_printable(v->u.str.ptr, v->u.str.len, 64);
		r = lev_tomlval_fail(c, v->line, v->col, err, "'%s' must be one of %s (got '%s')",
				     path, valid.buf, got);
	} else if (v->type != LEV_TOML_STRING) {
		r = lev_tomlval_fail(c, v->line, v->col, err,
				     "'%s' must be one of %s, given as a string (not %s)", path,
				     valid.buf, lev_toml_type_name(v->type));
	}
	lev_buf_release(&valid);
	return r;
}

int lev_tomlval_check_keys(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			   const char *table, const char *const *known, bool unknown_is_error,
			   struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);

	for (i = 0; i < n; i++) {
		const char *const *k;
		bool found = false;
		unsigned line = 0, col = 0;
		_cleanup_free_ char *key = NULL;

		for (k = known; *k && !found; k++)
			found = lev_tomlval_key_is(t, i, *k);
		if (found)
			continue;
		key = lev_tomlval_key_dup(t, i);
		lev_toml_table_key_pos(t, i, &line, &col);
		if (unknown_is_error) {
			struct lev_buf valid = LEV_BUF_INIT_MAX(1024);
			int r;

			for (k = known; *k; k++)
				(void)lev_buf_addf(&valid, "%s%s", k == known ? "" : ", ", *k);
			r = lev_tomlval_fail(c, line, col, err, "unknown key '%s' in %s (valid: %s)",
					     key, table, valid.buf);
			lev_buf_release(&valid);
			return r;
		}
		lev_tomlval_warn(c, line, "unknown key '%s' in %s", key, table);
	}
	return 0;
}

char *lev_tomlval_key_path(const char *table, const struct lev_toml_table *t, size_t i)
{
	_cleanup_free_ char *k = lev_tomlval_key_dup(t, i);

	return *table ? xasprintf("%s.%s", table, k) : xstrdup(k);
}

int lev_tomlval_table(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		      const char *path, const struct lev_toml_table **out, struct lev_err *err)
{
	int r = lev_tomlval_type(c, v, LEV_TOML_TABLE, path, err);

	if (r < 0)
		return r;
	*out = v->u.table;
	return 0;
}

int lev_tomlval_set_str(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			const char *path, char **dst, struct lev_err *err)
{
	char *s = NULL;
	int r = lev_tomlval_string(c, v, path, &s, err);

	if (r < 0)
		return r;
	free(*dst);
	*dst = s;
	return 0;
}

int lev_tomlval_set_strv(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			 const char *path, char ***dst, struct lev_err *err)
{
	char **list = NULL;
	int r = lev_tomlval_strv(c, v, path, &list, err);

	if (r < 0)
		return r;
	lev_strv_free(*dst);
	*dst = list;
	return 0;
}
