#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/buf.h"
#include "liblev/base/error.h"
#include "liblev/base/util.h"

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

/* The fast paths (room already there) and the first-append guess keep the same limits. */
static void test_fast_paths_keep_the_limits(void **state)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(10);
	char big[301];

	(void)state;
	/* a formatted append to an empty buffer that would pass max: nothing added */
	assert_int_equal(lev_buf_addf(&b, "%s", "0123456789x"), -E2BIG);
	assert_string_equal(b.buf, "");
	assert_int_equal(b.len, 0);
	/* exactly max, one byte at a time, then one more refused */
	for (int i = 0; i < 10; i++)
		assert_int_equal(lev_buf_addch(&b, (char)('0' + i)), 0);
	assert_int_equal(lev_buf_addch(&b, 'x'), -E2BIG);
	assert_int_equal(lev_buf_add(&b, "", 0), 0);
	assert_int_equal(lev_buf_add(&b, "x", 1), -E2BIG);
	assert_string_equal(b.buf, "0123456789");
	lev_buf_release(&b);

	/* a formatted append longer than the first guess, into an empty buffer */
	memset(big, 'a', 300);
	big[300] = '\0';
	b = (struct lev_buf)LEV_BUF_INIT;
	assert_int_equal(lev_buf_addf(&b, "<%s>", big), 0);
	assert_int_equal(b.len, 302);
	assert_int_equal(b.buf[0], '<');
	assert_int_equal(b.buf[301], '>');
	assert_int_equal(b.buf[302], '\0');
	assert_int_equal(lev_buf_addf(&b, "%d", 7), 0);
	assert_int_equal(b.len, 303);
	assert_int_equal(strcmp(b.buf + 300, "a>7"), 0);
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

static void test_utf8_decode(void **state)
{
	static const struct {
		const char *s;
		size_t n;
		size_t len;
		uint32_t cp;
	} cases[] = {
		{ "a", 1, 1, 'a' },
		{ "", 1, 1, 0 },			/* NUL is ASCII */
		{ "\xc3\xa9", 2, 2, 0xe9 },
		{ "\xe2\x80\xae", 3, 3, 0x202e },
		{ "\xf0\x9f\x90\x8b", 4, 4, 0x1f40b },
		{ "\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff },
		{ "\xc0\xaf", 2, 0, 0 },		/* overlong */
		{ "\xc1\xbf", 2, 0, 0 },
		{ "\xe0\x9f\xbf", 3, 0, 0 },		/* overlong, 3 bytes */
		{ "\xf0\x8f\xbf\xbf", 4, 0, 0 },	/* overlong, 4 bytes */
		{ "\xed\xa0\x80", 3, 0, 0 },		/* surrogate */
		{ "\xf4\x90\x80\x80", 4, 0, 0 },	/* past U+10FFFF */
		{ "\xf5\x80\x80\x80", 4, 0, 0 },
		{ "\xe2\x80", 2, 0, 0 },		/* cut short */
		{ "\xe2\x80\xae", 2, 0, 0 },		/* cut by N */
		{ "\x80", 1, 0, 0 },			/* lone continuation */
		{ "\xc3(", 2, 0, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t cp = 0xdeadbeef;
		size_t len = lev_utf8_decode(cases[i].s, cases[i].n, &cp);

		if (len != cases[i].len || (len && cp != cases[i].cp))
			fail_msg("case %zu: got %zu U+%04X", i, len, (unsigned)cp);
	}
}

static void test_json_text(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;
	const char in[] = "a\"\n\xc3\xa9\xff\xf0\x9f\x90\x8b\x1b";

	(void)state;
	assert_int_equal(lev_buf_add_json_text(&b, in, sizeof(in) - 1, false), 0);
	assert_string_equal(b.buf, "\"a\\\"\\n\xc3\xa9\\ufffd\xf0\x9f\x90\x8b\\u001b\"");
	lev_buf_reset(&b);
	assert_int_equal(lev_buf_add_json_text(&b, in, sizeof(in) - 1, true), 0);
	assert_string_equal(b.buf, "\"a\\\"\\n\\u00e9\\ufffd\\ud83d\\udc0b\\u001b\"");
	lev_buf_reset(&b);
	assert_int_equal(lev_buf_add_json_text(&b, "", 0, true), 0);
	assert_string_equal(b.buf, "\"\"");
	lev_buf_release(&b);
}

static void test_add_utf8(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t bad = 99;

	(void)state;
	/* valid text, ASCII and multi-byte, is copied as it is */
	assert_int_equal(lev_buf_add_utf8(&b, "a\xc3\xa9\xe2\x82\xac", 6, false, &bad), 0);
	assert_string_equal(b.buf, "a\xc3\xa9\xe2\x82\xac");
	assert_int_equal(bad, 0);
	lev_buf_reset(&b);
	/* a stray continuation byte, a cut sequence, an overlong form */
	assert_int_equal(lev_buf_add_utf8(&b, "x\x80y\xe2\x82", 5, false, &bad), 0);
	assert_string_equal(b.buf, "x\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbd");
	assert_int_equal(bad, 3);
	lev_buf_reset(&b);
	assert_int_equal(lev_buf_add_utf8(&b, "\xc0\xaf", 2, false, &bad), 0);
	assert_int_equal(bad, 2);
	lev_buf_reset(&b);
	/* NUL: kept, or replaced with nul_bad */
	assert_int_equal(lev_buf_add_utf8(&b, "a\0b", 3, false, &bad), 0);
	assert_int_equal(b.len, 3);
	assert_int_equal(bad, 0);
	lev_buf_reset(&b);
	assert_int_equal(lev_buf_add_utf8(&b, "a\0b", 3, true, &bad), 0);
	assert_string_equal(b.buf, "a\xef\xbf\xbd" "b");
	assert_int_equal(bad, 1);
	/* counting only */
	assert_int_equal(lev_buf_add_utf8(NULL, "\xff\xfe ok", 5, false, &bad), 0);
	assert_int_equal(bad, 2);
	lev_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_is_empty_and_terminated),
		cmocka_unit_test(test_append_and_detach),
		cmocka_unit_test(test_max_is_enforced_and_buffer_unchanged),
		cmocka_unit_test(test_fast_paths_keep_the_limits),
		cmocka_unit_test(test_json_string_escapes),
		cmocka_unit_test(test_utf8_decode),
		cmocka_unit_test(test_json_text),
		cmocka_unit_test(test_add_utf8),
		cmocka_unit_test(test_err_set_and_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
