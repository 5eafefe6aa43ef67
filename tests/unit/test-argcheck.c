#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/policy/argcheck.h"
#include "liblev/base/error.h"

static json_t *J(const char *text)
{
	json_error_t je;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &je);

	if (!v)
		fail_msg("bad test JSON '%s': %s", text, je.text);
	return v;
}

/* Validate ARGS against SCHEMA; return the code and copy the message. */
static int check(const char *schema, const char *args, char *msg, size_t size)
{
	json_t *s = J(schema), *a = J(args);
	struct lev_err err = LEV_ERR_INIT;
	int r = lev_argcheck(s, a, &err);

	if (msg)
		snprintf(msg, size, "%s", err.msg);
	json_decref(s);
	json_decref(a);
	return r;
}

#define READ_FILE_SCHEMA                                                                       \
	"{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"                  \
	"\"offset\":{\"type\":\"integer\",\"minimum\":0},\"limit\":{\"type\":\"integer\"}},"   \
	"\"required\":[\"path\"],\"additionalProperties\":false}"

static void test_valid_object_passes(void **state)
{
	(void)state;
	assert_int_equal(check(READ_FILE_SCHEMA, "{\"path\":\"a.txt\"}", NULL, 0), 0);
	assert_int_equal(check(READ_FILE_SCHEMA, "{\"path\":\"a\",\"offset\":3,\"limit\":2}", NULL,
			       0),
			 0);
	/* a real with no fraction is an integer (models write 2.0) */
	assert_int_equal(check(READ_FILE_SCHEMA, "{\"path\":\"a\",\"offset\":2.0}", NULL, 0), 0);
}

static void test_missing_required_is_named(void **state)
{
	char msg[600];

	(void)state;
	assert_int_equal(check(READ_FILE_SCHEMA, "{}", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "'path' is required"));
}

static void test_wrong_type_is_named(void **state)
{
	char msg[600];

	(void)state;
	assert_int_equal(check(READ_FILE_SCHEMA, "{\"path\":5}", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "'path' must be a string, got integer"));
	assert_int_equal(check(READ_FILE_SCHEMA, "{\"path\":\"a\",\"offset\":1.5}", msg,
			       sizeof(msg)),
			 -EINVAL);
	assert_non_null(strstr(msg, "'offset' must be an integer"));
	assert_int_equal(check(READ_FILE_SCHEMA, "{\"path\":\"a\",\"offset\":true}", msg,
			       sizeof(msg)),
			 -EINVAL);
	assert_int_equal(check(READ_FILE_SCHEMA, "[1,2]", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "must be a JSON object, got array"));
}

static void test_additional_properties_false_refuses(void **state)
{
	char msg[600];

	(void)state;
	assert_int_equal(check(READ_FILE_SCHEMA, "{\"path\":\"a\",\"mode\":\"w\"}", msg,
			       sizeof(msg)),
			 -EINVAL);
	assert_non_null(strstr(msg, "'mode' is not a parameter"));
	/* without additionalProperties=false, extras pass unchecked */
	assert_int_equal(check("{\"type\":\"object\",\"properties\":{}}", "{\"x\":[1,{}]}", NULL,
			       0),
			 0);
}

static void test_minimum_and_maximum(void **state)
{
	const char *s = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
			"\"minimum\":1,\"maximum\":20}}}";
	char msg[600];

	(void)state;
	assert_int_equal(check(s, "{\"n\":1}", NULL, 0), 0);
	assert_int_equal(check(s, "{\"n\":20}", NULL, 0), 0);
	assert_int_equal(check(s, "{\"n\":0}", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "at least 1"));
	assert_int_equal(check(s, "{\"n\":21}", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "at most 20"));
}

static void test_arrays_items_and_counts(void **state)
{
	const char *s = "{\"type\":\"object\",\"properties\":{\"paths\":{\"type\":\"array\","
			"\"items\":{\"type\":\"string\"},\"minItems\":1,\"maxItems\":2}},"
			"\"required\":[\"paths\"]}";
	char msg[600];

	(void)state;
	assert_int_equal(check(s, "{\"paths\":[\"a\",\"b\"]}", NULL, 0), 0);
	assert_int_equal(check(s, "{\"paths\":[]}", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "at least 1 items"));
	assert_int_equal(check(s, "{\"paths\":[\"a\",\"b\",\"c\"]}", msg, sizeof(msg)), -EINVAL);
	assert_int_equal(check(s, "{\"paths\":[\"a\",7]}", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "'paths[1]' must be a string"));
}

static void test_enum_and_lengths(void **state)
{
	const char *s = "{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"string\","
			"\"enum\":[\"a\",\"b\"]},\"t\":{\"type\":\"string\",\"minLength\":2,"
			"\"maxLength\":3}}}";
	char msg[600];

	(void)state;
	assert_int_equal(check(s, "{\"m\":\"a\",\"t\":\"xy\"}", NULL, 0), 0);
	assert_int_equal(check(s, "{\"m\":\"c\"}", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "one of: a, b"));
	assert_int_equal(check(s, "{\"t\":\"x\"}", NULL, 0), -EINVAL);
	assert_int_equal(check(s, "{\"t\":\"wxyz\"}", NULL, 0), -EINVAL);
}

static void test_nested_objects(void **state)
{
	const char *s = "{\"type\":\"object\",\"properties\":{\"o\":{\"type\":\"object\","
			"\"properties\":{\"k\":{\"type\":\"boolean\"}},\"required\":[\"k\"],"
			"\"additionalProperties\":false}}}";
	char msg[600];

	(void)state;
	assert_int_equal(check(s, "{\"o\":{\"k\":true}}", NULL, 0), 0);
	assert_int_equal(check(s, "{\"o\":{}}", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "'o.k' is required"));
	assert_int_equal(check(s, "{\"o\":{\"k\":1}}", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "'o.k' must be a boolean"));
}

static void test_unsupported_schema_keywords_fail_closed(void **state)
{
	char msg[600];

	(void)state;
	assert_int_equal(check("{\"type\":\"object\",\"patternProperties\":{}}", "{}", msg,
			       sizeof(msg)),
			 LEV_EPARSE);
	assert_non_null(strstr(msg, "'patternProperties'"));
	assert_int_equal(check("{\"type\":[\"string\",\"null\"]}", "\"x\"", NULL, 0), LEV_EPARSE);
	assert_int_equal(check("{\"type\":\"object\",\"required\":\"path\"}", "{}", NULL, 0),
			 LEV_EPARSE);
	assert_int_equal(check("{\"additionalProperties\":{\"type\":\"string\"}}", "{}", NULL, 0),
			 LEV_EPARSE);
	assert_int_equal(check("{\"minLength\":-1}", "\"\"", NULL, 0), LEV_EPARSE);
	assert_int_equal(check("[]", "{}", NULL, 0), LEV_EPARSE);
	/* annotations are fine */
	assert_int_equal(check("{\"type\":\"object\",\"description\":\"d\",\"title\":\"t\"}", "{}",
			       NULL, 0),
			 0);
}

static void test_deep_schema_is_refused(void **state)
{
	char schema[4096] = "", *p = schema;
	struct lev_err err = LEV_ERR_INIT;
	json_t *s;
	int i;

	(void)state;
	for (i = 0; i < LEV_ARGCHECK_MAX_DEPTH + 2; i++)
		p += sprintf(p, "{\"type\":\"array\",\"items\":");
	p += sprintf(p, "{\"type\":\"string\"}");
	for (i = 0; i < LEV_ARGCHECK_MAX_DEPTH + 2; i++)
		*p++ = '}';
	*p = '\0';
	s = J(schema);
	assert_int_equal(lev_argcheck_schema(s, &err), LEV_EPARSE);
	assert_non_null(strstr(err.msg, "deeper"));
	json_decref(s);
}

static void test_null_schema_needs_an_object(void **state)
{
	json_t *a = J("{\"x\":1}"), *b = J("3");

	(void)state;
	assert_int_equal(lev_argcheck(NULL, a, NULL), 0);
	assert_int_equal(lev_argcheck(NULL, b, NULL), -EINVAL);
	assert_int_equal(lev_argcheck(NULL, NULL, NULL), -EINVAL);
	json_decref(a);
	json_decref(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_object_passes),
		cmocka_unit_test(test_missing_required_is_named),
		cmocka_unit_test(test_wrong_type_is_named),
		cmocka_unit_test(test_additional_properties_false_refuses),
		cmocka_unit_test(test_minimum_and_maximum),
		cmocka_unit_test(test_arrays_items_and_counts),
		cmocka_unit_test(test_enum_and_lengths),
		cmocka_unit_test(test_nested_objects),
		cmocka_unit_test(test_unsupported_schema_keywords_fail_closed),
		cmocka_unit_test(test_deep_schema_is_refused),
		cmocka_unit_test(test_null_schema_needs_an_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
