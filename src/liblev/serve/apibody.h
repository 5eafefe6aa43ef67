/*
 * apibody.h - the JSON bodies and the token of lev serve's HTTP API.
 *
 * Every body a route takes is declared as a table of fields (name, type,
 * required); lev_apibody_parse() is the one reader of them all: a body that
 * is not one JSON object, holds a NUL or a duplicate key, names a field the
 * route does not take, gives a field of the wrong type or leaves out a
 * required one is refused with one line naming the field, and nothing is
 * acted on.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"

/* The largest request body lev serve reads (bytes); a longer one is 413. */
#define LEV_APIBODY_MAX ((size_t)64 << 10)

enum lev_apibody_type {
	LEV_APIBODY_STRING,
	LEV_APIBODY_BOOL,
	LEV_APIBODY_UINT,		/* an integer >= 0 */
	LEV_APIBODY_STRINGS,		/* an array of strings */
};

struct lev_apibody_field {
	const char *name;
	enum lev_apibody_type type;
	bool required;
};

/*
 * Parse the LEN bytes of BODY against FIELDS (N of them): 0 and *out (a new
 * reference: an object holding only fields of FIELDS, each of its type) or
 * LEV_EPARSE with err saying what is wrong (-EMSGSIZE over LEV_APIBODY_MAX).
 */
int lev_apibody_parse(const char *body, size_t len, const struct lev_apibody_field *fields,
		      size_t n, json_t **out, struct lev_err *err);

/* Whether A and B are the same token, in time that depends on their lengths only. */
bool lev_apibody_token_eq(const char *a, const char *b);
