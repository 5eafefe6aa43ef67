/*
 * apibody.c - the one reader of lev serve's request bodies.
 */
#include <errno.h>
#include <string.h>

#include "liblev/serve/apibody.h"

static const char *type_name(enum lev_apibody_type t)
{
	switch (t) {
	case LEV_APIBODY_STRING:
		return "a string";
	case LEV_APIBODY_BOOL:
		return "true or false";
	case LEV_APIBODY_UINT:
		return "a whole number >= 0";
	case LEV_APIBODY_STRINGS:
		return "an array of strings";
	}
	return "?";
}

static bool type_ok(const json_t *v, enum lev_apibody_type t)
{
	size_t i;
	json_t *e;

	switch (t) {
	case LEV_APIBODY_STRING:
		return json_is_string(v);
	case LEV_APIBODY_BOOL:
		return json_is_boolean(v);
	case LEV_APIBODY_UINT:
		return json_is_integer(v) && json_integer_value(v) >= 0;
	case LEV_APIBODY_STRINGS:
		if (!json_is_array(v))
			return false;
		json_array_foreach(v, i, e)
			if (!json_is_string(e))
				return false;
		return true;
	}
	return false;
}

static const struct lev_apibody_field *find(const struct lev_apibody_field *f, size_t n,
					    const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

int lev_apibody_parse(const char *body, size_t len, const struct lev_apibody_field *fields,
		      size_t n, json_t **out, struct lev_err *err)
{
	json_error_t je;
	const char *key;
	json_t *j, *v;

	if (len > LEV_APIBODY_MAX)
		return lev_err_set(err, -EMSGSIZE, "the body is %zu bytes, over the %zu allowed", len,
				   LEV_APIBODY_MAX);
	if (len && memchr(body, '\0', len))
		return lev_err_set(err, LEV_EPARSE, "the body holds a NUL byte");
	j = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return lev_err_set(err, LEV_EPARSE, "the body is not JSON: line %d col %d: %s",
				   je.line, je.column, je.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return lev_err_set(err, LEV_EPARSE, "the body must be a JSON object");
	}
	json_object_foreach(j, key, v) {
		const struct lev_apibody_field *f = find(fields, n, key);

		int r = 0;

		/* KEY is J's: the message is made before J goes */
		if (!f)
			r = lev_err_set(err, LEV_EPARSE, "unknown field '%s'", key);
		else if (!type_ok(v, f->type))
			r = lev_err_set(err, LEV_EPARSE, "field '%s' must be %s", key,
					type_name(f->type));
		if (r < 0) {
			json_decref(j);
			return r;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (fields[i].required && !json_object_get(j, fields[i].name)) {
			json_decref(j);
			return lev_err_set(err, LEV_EPARSE, "field '%s' is required", fields[i].name);
		}
	*out = j;
	return 0;
}

bool lev_apibody_token_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	/* every byte of A is compared, whatever B holds */
	for (size_t i = 0; i < la; i++)
		d |= (unsigned char)(a[i] ^ (lb ? b[i % lb] : 0));
	return d == 0;
}
