/*
 * test-curlapi.c - libcurl is loaded on first use, once, and a library
 * that cannot be loaded fails cleanly.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/curlapi.h"
#include "liblev/policy/netguard.h"

/* Runs first: nothing in this process has needed libcurl yet. */
static void test_not_loaded_until_needed(void **state)
{
	(void)state;
	assert_false(lev_curlapi_loaded());
}

static void test_missing_library(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_curlapi c;

	(void)state;
	memset(&c, 0xaa, sizeof(c));
	assert_int_equal(lev_curlapi_open("libnot-a-curl-lev-test.so.4", &c, &err), LEV_EUNSUPP);
	assert_non_null(strstr(err.msg, "cannot load libnot-a-curl-lev-test.so.4"));
	assert_false(lev_curlapi_loaded());
}

static void test_library_without_symbols(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_curlapi c;

	(void)state;
	/* libc loads, but is no libcurl: the first missing symbol is named. */
	assert_int_equal(lev_curlapi_open("libc.so.6", &c, &err), LEV_EUNSUPP);
	assert_non_null(strstr(err.msg, "lacks curl_global_init"));
	assert_null(c.easy_init);
	assert_false(lev_curlapi_loaded());
}

static void test_loaded_by_url_parse(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	const struct lev_curlapi *a = NULL, *b = NULL;
	struct lev_url u;

	(void)state;
	assert_int_equal(lev_url_parse("https://Example.COM:8443/x", &u, &err), 0);
	assert_string_equal(u.host, "example.com");
	lev_url_release(&u);
	assert_true(lev_curlapi_loaded());
	assert_int_equal(lev_curlapi_get(&a, &err), 0);
	assert_int_equal(lev_curlapi_get(&b, &err), 0);
	assert_ptr_equal(a, b);
	assert_non_null(a->easy_init);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_loaded_until_needed),
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_library_without_symbols),
		cmocka_unit_test(test_loaded_by_url_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
