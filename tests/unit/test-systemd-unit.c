/*
 * test-systemd-unit.c - the systemd unit of `lev daemon install`: its lines, the
 * quoting of paths with the characters systemd reads specially (" \ %),
 * a path it cannot hold refused, and the unit's path under
 * $XDG_CONFIG_HOME or ~/.config.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/daemon/unit.h"

static void test_text(void **state)
{
	char *t = lev_unit_text("/usr/bin/lev", NULL, NULL);

	(void)state;
	assert_non_null(t);
	assert_non_null(strstr(t, "\nExecStart=\"/usr/bin/lev\" daemon\n"));
	assert_non_null(strstr(t, "\n[Install]\nWantedBy=default.target\n"));
	assert_non_null(strstr(t, "\nRestart=on-failure\n"));
	assert_null(strstr(t, "Environment="));
	free(t);
}

static void test_quoting(void **state)
{
	char *t = lev_unit_text("/opt/my lev/\"x\"\\100%/lev", "/data/50%", NULL);

	(void)state;
	assert_non_null(t);
	assert_non_null(strstr(t, "\nExecStart=\"/opt/my lev/\\\"x\\\"\\\\100%%/lev\" daemon\n"));
	assert_non_null(strstr(t, "\nEnvironment=\"LEVIATH_HOME=/data/50%%\"\n"));
	free(t);
}

static void test_refused(void **state)
{
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_null(lev_unit_text("lev", NULL, &err));
	assert_non_null(strstr(err.msg, "absolute path"));
	assert_null(lev_unit_text("/usr/bin/le\nv", NULL, NULL));
	assert_null(lev_unit_text("/usr/bin/lev", "/a\nExecStartPre=/bin/evil", NULL));
}

static void test_path(void **state)
{
	char *p = NULL;

	(void)state;
	setenv("XDG_CONFIG_HOME", "/cfg", 1);
	assert_int_equal(lev_unit_path(&p, NULL), 0);
	assert_string_equal(p, "/cfg/systemd/user/lev.service");
	free(p);
	setenv("XDG_CONFIG_HOME", "relative", 1);
	setenv("HOME", "/home/u", 1);
	assert_int_equal(lev_unit_path(&p, NULL), 0);
	assert_string_equal(p, "/home/u/.config/systemd/user/lev.service");
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_quoting),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
