#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/buf.h"
#include "liblev/error.h"

static void test_init_is_empty_and_terminated(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;

	(void)state;
	assert_non_null(b.buf);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.buf, "");
	lev_buf_release(&b);
}

static void test_append_and_detach(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t len = 0;
	char *s;

	(void)state;
	assert_int_equal(lev_buf_adds(&b, "hello"), 0);
	assert_int_equal(lev_buf_addch(&b, ' '), 0);
	assert_int_equal(lev_buf_addf(&b, "%d-%s", 42, "x"), 0);
	assert_string_equal(b.buf, "hello 42-x");
	s = lev_buf_detach(&b, &len);
	assert_int_equal(len, 10);
	assert_string_equal(s, "hello 42-x");
	assert_int_equal(b.len, 0);
	assert_string_equal(b.buf, "");
	free(s);
}

static void test_max_is_enforced_and_buffer_unchanged(void **state)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(8);

	(void)state;
	assert_int_equal(lev_buf_adds(&b, "12345678"), 0);
	assert_int_equal(lev_buf_addch(&b, '9'), -E2BIG);
	assert_int_equal(lev_buf_addf(&b, "%s", "x"), -E2BIG);
	assert_string_equal(b.buf, "12345678");
	assert_int_equal(b.len, 8);
	lev_buf_release(&b);
}

static void test_json_string_escapes(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;

	(void)state;
	assert_int_equal(lev_buf_add_json_str(&b, "a\"b\\c\n\x01\x7f", 8), 0);
	assert_string_equal(b.buf, "\"a\\\"b\\\\c\\n\\u0001\\u007f\"");
	lev_buf_release(&b);
}

static void test_err_set_and_wrap(void **state)
{
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(lev_err_set(&err, -ENOENT, "cannot open '%s'", "x"), -ENOENT);
	assert_int_equal(lev_err_wrap(&err, "loading %s", "cfg"), -ENOENT);
	assert_string_equal(err.msg, "loading cfg: cannot open 'x'");
	assert_int_equal(lev_err_set(NULL, -EINVAL, "ignored"), -EINVAL);
	assert_int_equal(lev_err_errno(&err, -EACCES, "open"), -EACCES);
	assert_string_equal(err.msg, "open: Permission denied");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_is_empty_and_terminated),
		cmocka_unit_test(test_append_and_detach),
		cmocka_unit_test(test_max_is_enforced_and_buffer_unchanged),
		cmocka_unit_test(test_json_string_escapes),
		cmocka_unit_test(test_err_set_and_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
