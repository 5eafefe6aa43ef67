/*
 * fuzz-argcheck.c - lev_argcheck_schema() and lev_argcheck() on arbitrary
 * JSON.
 *
 * The input is JSON text.  When it is an array [SCHEMA, ARGS] the pair is
 * checked; the whole document is also checked as the arguments of a fixed
 * tool schema (the shape of read_file's).  Besides "no crash, no leak, no
 * UB": a verdict is 0 or carries a one-line message, an invalid schema is
 * never used to accept arguments, and lev_argcheck() agrees with
 * lev_argcheck_schema() + lev_argcheck_checked().
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/policy/argcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

static const char fixed_schema[] =
	"{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"maxLength\":4096},"
	"\"offset\":{\"type\":\"integer\",\"minimum\":0},\"paths\":{\"type\":\"array\","
	"\"items\":{\"type\":\"string\"},\"maxItems\":64},\"mode\":{\"enum\":[\"a\",1,true]}},"
	"\"required\":[\"path\"],\"additionalProperties\":false}";

static void one(const json_t *schema, const json_t *args)
{
	struct lev_err e1 = LEV_ERR_INIT, e2 = LEV_ERR_INIT;
	int r = lev_argcheck(schema, args, &e1);
	int rs = schema ? lev_argcheck_schema(schema, NULL) : 0;

	CHECK(r == 0 || r == -EINVAL || r == LEV_EPARSE);
	if (r < 0) {
		CHECK(e1.msg[0] != '\0');
		CHECK(!strchr(e1.msg, '\n'));
	}
	if (rs < 0) {
		/* a schema outside the subset never accepts anything */
		CHECK(r == LEV_EPARSE);
		return;
	}
	CHECK(r == lev_argcheck_checked(schema, args, &e2));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *fixed;
	json_t *doc;

	if (!fixed)
		fixed = json_loads(fixed_schema, 0, NULL);
	CHECK(fixed && lev_argcheck_schema(fixed, NULL) == 0);
	doc = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
	if (!doc)
		return 0;
	one(fixed, doc);
	one(NULL, doc);
	if (json_is_array(doc) && json_array_size(doc) == 2)
		one(json_array_get(doc, 0), json_array_get(doc, 1));
	json_decref(doc);
	return 0;
}
