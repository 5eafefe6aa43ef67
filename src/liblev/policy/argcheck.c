/*
 * argcheck.c - the JSON Schema subset of argcheck.h.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "liblev/policy/argcheck.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"

/* Longest argument path we spell out in a message. */
#define PATH_MAX_SHOWN 200

static const char *const type_words[] = {
	"object", "string", "integer", "number", "boolean", "array", "null",
};

static const char *const annotation_words[] = {
	"description", "title", "default", "examples", "$schema", "$comment",
};

static const char *const keyword_words[] = {
	"type",	     "properties", "required",	"additionalProperties",
	"items",     "enum",	   "minimum",	"maximum",
	"minLength", "maxLength",  "minItems",	"maxItems",
};

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return "integer";
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	case JSON_NULL:
		return "null";
	}
	return "value";
}

static const char *shown_path(const struct lev_buf *path)
{
	return path->len ? path->buf : "(arguments)";
}

/* Append NAME to B with control bytes, quotes and backslashes as \xNN. */
static int add_printable(struct lev_buf *b, const char *name)
{
	int r = 0;

	for (const unsigned char *p = (const unsigned char *)name; *p && r == 0; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '\'' || *p == '\\')
			r = lev_buf_addf(b, "\\x%02x", *p);
		else
			r = lev_buf_addch(b, (char)*p);
	}
	return r;
}

/* Append ".NAME" or "[I]" to PATH; returns the old length to restore. */
static size_t path_push_name(struct lev_buf *path, const char *name)
{
	size_t old = path->len;

	if (path->len)
		(void)lev_buf_addch(path, '.');
	if (add_printable(path, name) < 0)
		(void)lev_buf_adds(path, "...");
	return old;
}

static size_t path_push_index(struct lev_buf *path, size_t i)
{
	size_t old = path->len;

	(void)lev_buf_addf(path, "[%zu]", i);
	return old;
}

/* A non-negative integer keyword (minLength and friends). */
static bool is_count(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0;
}

static int schema_check(const json_t *s, unsigned depth, struct lev_buf *path,
			struct lev_err *err)
{
	const char *key;
	const json_t *v;
	const json_t *type;

	if (depth > LEV_ARGCHECK_MAX_DEPTH)
		return lev_err_set(err, LEV_EPARSE, "schema at '%s' nests deeper than %d levels",
				   shown_path(path), LEV_ARGCHECK_MAX_DEPTH);
	if (!json_is_object(s))
		return lev_err_set(err, LEV_EPARSE, "schema at '%s' must be an object, got %s",
				   shown_path(path), json_kind(s));

	type = json_object_get(s, "type");
	if (type && (!json_is_string(type) ||
		     !in_list(json_string_value(type), type_words, ARRAY_SIZE(type_words))))
		return lev_err_set(err, LEV_EPARSE,
				   "schema at '%s': 'type' must be one of object, string, integer, "
				   "number, boolean, array, null",
				   shown_path(path));

	json_object_foreach((json_t *)s, key, v) {
		if (in_list(key, annotation_words, ARRAY_SIZE(annotation_words)))
			continue;
		if (!in_list(key, keyword_words, ARRAY_SIZE(keyword_words))) {
			struct lev_buf k = LEV_BUF_INIT_MAX(PATH_MAX_SHOWN);
			int r;

			(void)add_printable(&k, key);
			r = lev_err_set(err, LEV_EPARSE,
					"schema at '%s' uses '%s', which lev does not support",
					shown_path(path), k.buf);
			lev_buf_release(&k);
			return r;
		}
		if (!strcmp(key, "type")) {
			continue;	/* checked above */
		} else if (!strcmp(key, "properties")) {
			const char *name;
			const json_t *sub;

			if (!json_is_object(v))
				return lev_err_set(err, LEV_EPARSE,
						   "schema at '%s': 'properties' must be an object",
						   shown_path(path));
			json_object_foreach((json_t *)v, name, sub) {
				size_t old = path_push_name(path, name);
				int r = schema_check(sub, depth + 1, path, err);

				lev_buf_truncate(path, old);
				if (r < 0)
					return r;
			}
		} else if (!strcmp(key, "required")) {
			size_t i;
			const json_t *e;

			if (!json_is_array(v))
				return lev_err_set(err, LEV_EPARSE,
						   "schema at '%s': 'required' must be an array",
						   shown_path(path));
			json_array_foreach(v, i, e)
				if (!json_is_string(e))
					return lev_err_set(err, LEV_EPARSE,
							   "schema at '%s': 'required' must hold "
							   "property names",
							   shown_path(path));
		} else if (!strcmp(key, "additionalProperties")) {
			if (!json_is_boolean(v))
				return lev_err_set(err, LEV_EPARSE,
						   "schema at '%s': 'additionalProperties' must be "
						   "true or false",
						   shown_path(path));
		} else if (!strcmp(key, "items")) {
			size_t old = path->len;
			int r;

			(void)lev_buf_adds(path, "[]");
			r = schema_check(v, depth + 1, path, err);
			lev_buf_truncate(path, old);
			if (r < 0)
				return r;
		} else if (!strcmp(key, "enum")) {
			size_t i;
			const json_t *e;

			if (!json_is_array(v) || json_array_size(v) == 0)
				return lev_err_set(err, LEV_EPARSE,
						   "schema at '%s': 'enum' must be a non-empty array",
						   shown_path(path));
			json_array_foreach(v, i, e)
				if (!json_is_string(e) && !json_is_integer(e) && !json_is_boolean(e))
					return lev_err_set(err, LEV_EPARSE,
							   "schema at '%s': 'enum' may hold only "
							   "strings, integers and booleans",
							   shown_path(path));
		} else if (!strcmp(key, "minimum") || !strcmp(key, "maximum")) {
			if (!json_is_number(v))
				return lev_err_set(err, LEV_EPARSE,
						   "schema at '%s': '%s' must be a number",
						   shown_path(path), key);
		} else {
			/* minLength, maxLength, minItems, maxItems */
			if (!is_count(v))
				return lev_err_set(err, LEV_EPARSE,
						   "schema at '%s': '%s' must be a non-negative integer",
						   shown_path(path), key);
		}
	}
	return 0;
}

int lev_argcheck_schema(const json_t *schema, struct lev_err *err)
{
	struct lev_buf path = LEV_BUF_INIT_MAX(PATH_MAX_SHOWN);
	int r;

	r = schema_check(schema, 0, &path, err);
	lev_buf_release(&path);
	return r;
}

/* ---- validation --------------------------------------------------------- */

static bool integral(const json_t *v)
{
	double d;

	if (json_is_integer(v))
		return true;
	if (!json_is_real(v))
		return false;
	d = json_real_value(v);
	return isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740992.0;
}

static bool type_matches(const char *want, const json_t *v)
{
	if (!strcmp(want, "object"))
		return json_is_object(v);
	if (!strcmp(want, "string"))
		return json_is_string(v);
	if (!strcmp(want, "integer"))
		return integral(v);
	if (!strcmp(want, "number"))
		return json_is_number(v);
	if (!strcmp(want, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(want, "array"))
		return json_is_array(v);
	if (!strcmp(want, "null"))
		return json_is_null(v);
	return false;
}

static double number_of(const json_t *v)
{
	return json_is_integer(v) ? (double)json_integer_value(v) : json_real_value(v);
}

static bool enum_has(const json_t *list, const json_t *v)
{
	size_t i;
	const json_t *e;

	json_array_foreach(list, i, e) {
		if (json_is_string(e) && json_is_string(v) &&
		    json_string_length(e) == json_string_length(v) &&
		    !memcmp(json_string_value(e), json_string_value(v), json_string_length(v)))
			return true;
		if (json_is_integer(e) && integral(v) && (double)json_integer_value(e) == number_of(v))
			return true;
		if (json_is_boolean(e) && json_is_boolean(v) &&
		    json_boolean_value(e) == json_boolean_value(v))
			return true;
	}
	return false;
}

static int invalid(struct lev_err *err, const struct lev_buf *path, const char *what)
{
	return lev_err_set(err, -EINVAL, "argument '%s' %s", shown_path(path), what);
}

static int check_value(const json_t *s, const json_t *v, unsigned depth, struct lev_buf *path,
		       struct lev_err *err)
{
	const json_t *type, *k;
	int r;

	if (depth > LEV_ARGCHECK_MAX_DEPTH)
		return invalid(err, path, "nests too deeply");

	type = json_object_get(s, "type");
	if (type && !type_matches(json_string_value(type), v)) {
		if (!path->len)
			return lev_err_set(err, -EINVAL, "the arguments must be a JSON %s, got %s",
					   json_string_value(type), json_kind(v));
		return lev_err_set(err, -EINVAL, "argument '%s' must be %s %s, got %s",
				   shown_path(path),
				   strchr("aeiou", json_string_value(type)[0]) ? "an" : "a",
				   json_string_value(type), json_kind(v));
	}

	k = json_object_get(s, "enum");
	if (k && !enum_has(k, v)) {
		struct lev_buf words = LEV_BUF_INIT_MAX(300);
		size_t i;
		const json_t *e;

		json_array_foreach(k, i, e) {
			if (i)
				(void)lev_buf_adds(&words, ", ");
			if (json_is_string(e))
				(void)add_printable(&words, json_string_value(e));
			else if (json_is_integer(e))
				(void)lev_buf_addf(&words, "%lld", (long long)json_integer_value(e));
			else
				(void)lev_buf_adds(&words, json_is_true(e) ? "true" : "false");
		}
		r = lev_err_set(err, -EINVAL, "argument '%s' must be one of: %s", shown_path(path),
				words.buf);
		lev_buf_release(&words);
		return r;
	}

	if (json_is_number(v)) {
		k = json_object_get(s, "minimum");
		if (k && number_of(v) < number_of(k))
			return lev_err_set(err, -EINVAL, "argument '%s' must be at least %g",
					   shown_path(path), number_of(k));
		k = json_object_get(s, "maximum");
		if (k && number_of(v) > number_of(k))
			return lev_err_set(err, -EINVAL, "argument '%s' must be at most %g",
					   shown_path(path), number_of(k));
	}

	if (json_is_string(v)) {
		size_t len = json_string_length(v);

		k = json_object_get(s, "minLength");
		if (k && len < (uint64_t)json_integer_value(k))
			return lev_err_set(err, -EINVAL, "argument '%s' must be at least %lld bytes",
					   shown_path(path), (long long)json_integer_value(k));
		k = json_object_get(s, "maxLength");
		if (k && len > (uint64_t)json_integer_value(k))
			return lev_err_set(err, -EINVAL, "argument '%s' must be at most %lld bytes",
					   shown_path(path), (long long)json_integer_value(k));
	}

	if (json_is_array(v)) {
		size_t n = json_array_size(v), i;
		const json_t *items = json_object_get(s, "items");
		const json_t *e;

		k = json_object_get(s, "minItems");
		if (k && n < (uint64_t)json_integer_value(k))
			return lev_err_set(err, -EINVAL, "argument '%s' needs at least %lld items",
					   shown_path(path), (long long)json_integer_value(k));
		k = json_object_get(s, "maxItems");
		if (k && n > (uint64_t)json_integer_value(k))
			return lev_err_set(err, -EINVAL, "argument '%s' takes at most %lld items",
					   shown_path(path), (long long)json_integer_value(k));
		json_array_foreach(v, i, e) {
			size_t old = path_push_index(path, i);

			r = items ? check_value(items, e, depth + 1, path, err) : 0;
			lev_buf_truncate(path, old);
			if (r < 0)
				return r;
		}
	}

	if (json_is_object(v)) {
		const json_t *props = json_object_get(s, "properties");
		const json_t *req = json_object_get(s, "required");
		const json_t *extra = json_object_get(s, "additionalProperties");
		const char *name;
		const json_t *e;
		size_t i;

		if (req) {
			json_array_foreach(req, i, e) {
				const char *rn = json_string_value(e);

				if (!json_object_get(v, rn)) {
					size_t old = path_push_name(path, rn);

					r = lev_err_set(err, -EINVAL, "argument '%s' is required",
							shown_path(path));
					lev_buf_truncate(path, old);
					return r;
				}
			}
		}
		json_object_foreach((json_t *)v, name, e) {
			const json_t *sub = props ? json_object_get(props, name) : NULL;
			size_t old = path_push_name(path, name);

			r = 0;
			if (sub)
				r = check_value(sub, e, depth + 1, path, err);
			else if (extra && json_is_false(extra))
				r = lev_err_set(err, -EINVAL, "argument '%s' is not a parameter of this "
						"tool", shown_path(path));
			lev_buf_truncate(path, old);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int lev_argcheck_checked(const json_t *schema, const json_t *args, struct lev_err *err)
{
	struct lev_buf path = LEV_BUF_INIT_MAX(PATH_MAX_SHOWN);
	int r;

	if (!args)
		return lev_err_set(err, -EINVAL, "the arguments are missing");
	if (!schema) {
		if (!json_is_object(args))
			return lev_err_set(err, -EINVAL, "the arguments must be a JSON object, got %s",
					   json_kind(args));
		return 0;
	}
	r = check_value(schema, args, 0, &path, err);
	lev_buf_release(&path);
	return r;
}

int lev_argcheck(const json_t *schema, const json_t *args, struct lev_err *err)
{
	int r;

	if (schema) {
		r = lev_argcheck_schema(schema, err);
		if (r < 0)
			return r;
	}
	return lev_argcheck_checked(schema, args, err);
}
