/*
 * test-ownfiles.c - the one list of lev's own files: every path a loader
 * reads (each datadir getter, the daemon's socket and unit) is on it, found
 * by its path, its real path and anything beneath a directory entry, the
 * most specific entry named; a sibling is not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/conf/ownfiles.h"
#include "liblev/daemon/sock.h"
#include "liblev/daemon/unit.h"

static char home[] = "/tmp/lev-test-ownfiles-XXXXXX";

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(home))
		return -1;
	setenv("HOME", home, 1);
	unsetenv("LEVIATH_HOME");
	unsetenv("LEVIATH_CONFIG_PATH");
	unsetenv("XDG_CONFIG_HOME");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return lev_rm_rf(home, NULL);
}

typedef int (*getter)(char **, struct lev_err *);

static void test_every_loader_path_is_on_the_list(void **state)
{
	static const getter loaders[] = {
		lev_datadir_root, lev_datadir_config_path, lev_datadir_policy_path,
		lev_datadir_rules_dir, lev_datadir_runs_dir, lev_datadir_credentials_path,
		lev_datadir_leviath_policy_path, lev_datadir_leviath_rules_dir,
		lev_datadir_agents_dir, lev_datadir_socket_path, lev_datadir_lock_path,
		lev_datadir_db_path, lev_datadir_unit_path, lev_sock_path, lev_sock_lock_path,
		lev_unit_path,
	};
	struct lev_ownfiles l = { 0 };

	(void)state;
	assert_int_equal(lev_ownfiles_list(NULL, &l, NULL), 0);
	for (size_t i = 0; i < ARRAY_SIZE(loaders); i++) {
		_cleanup_free_ char *p = NULL;

		assert_int_equal(loaders[i](&p, NULL), 0);
		if (!lev_ownfiles_find(&l, p, NULL))
			fail_msg("'%s' is loaded but not on the list of lev's own files", p);
	}
	lev_ownfiles_release(&l);
}

static void test_find_names_the_most_specific_entry(void **state)
{
	struct lev_ownfiles l = { 0 };
	_cleanup_free_ char *creds = NULL, *sib = NULL, *rule = NULL, *lpol = NULL;
	const char *matched = NULL;
	const struct lev_ownfile *e;

	(void)state;
	assert_int_equal(lev_ownfiles_list(NULL, &l, NULL), 0);
	assert_int_equal(lev_datadir_credentials_path(&creds, NULL), 0);
	e = lev_ownfiles_find(&l, creds, &matched);
	assert_non_null(e);
	assert_string_equal(e->what, "the credentials");
	assert_string_equal(matched, creds);
	rule = xasprintf("%s/.leviath/rules/a/b.lua", home);
	e = lev_ownfiles_find(&l, rule, NULL);
	assert_non_null(e);
	assert_string_equal(e->what, "the Lua rules");
	assert_int_equal(lev_datadir_leviath_policy_path(&lpol, NULL), 0);
	e = lev_ownfiles_find(&l, lpol, NULL);
	assert_non_null(e);
	assert_string_equal(e->what, "Leviath's policy");
	assert_non_null(e->guard);
	/* benign twins: a sibling of the data root, of Leviath's directory */
	sib = xasprintf("%s/.leviathan", home);
	assert_null(lev_ownfiles_find(&l, sib, NULL));
	free(sib);
	sib = xasprintf("%s/.config/leviath.txt", home);
	assert_null(lev_ownfiles_find(&l, sib, NULL));
	lev_ownfiles_release(&l);
}

static void test_a_symlinked_data_root_is_found_where_it_really_is(void **state)
{
	_cleanup_free_ char *real = xasprintf("%s/elsewhere", home);
	_cleanup_free_ char *link = xasprintf("%s/.leviath", home);
	_cleanup_free_ char *inside = xasprintf("%s/elsewhere/config.toml", home);
	struct lev_ownfiles l = { 0 };
	const char *matched = NULL;

	(void)state;
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(symlink(real, link), 0);
	assert_int_equal(lev_ownfiles_list(NULL, &l, NULL), 0);
	assert_non_null(lev_ownfiles_find(&l, inside, &matched));
	assert_non_null(strstr(matched, "/elsewhere"));
	{
		_cleanup_strv_ char **paths = lev_ownfiles_paths(&l);

		assert_true(lev_strv_contains(paths, link));
		assert_true(lev_strv_contains(paths, real));
	}
	lev_ownfiles_release(&l);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(rmdir(real), 0);
}

static void test_environment_moves_entries(void **state)
{
	struct lev_ownfiles l = { 0 };
	struct lev_ownfiles_opts o = { .config_path = "/srv/lev/run.toml" };
	_cleanup_free_ char *xdg = xasprintf("%s/xdg", home);
	_cleanup_free_ char *lpol = xasprintf("%s/xdg/leviath/policy.toml", home);

	(void)state;
	setenv("LEVIATH_CONFIG_PATH", "/etc/lev/config.toml", 1);
	setenv("XDG_CONFIG_HOME", xdg, 1);
	assert_int_equal(lev_ownfiles_list(&o, &l, NULL), 0);
	assert_non_null(lev_ownfiles_find(&l, "/etc/lev/config.toml", NULL));
	assert_non_null(lev_ownfiles_find(&l, "/srv/lev/run.toml", NULL));
	assert_non_null(lev_ownfiles_find(&l, lpol, NULL));
	assert_null(lev_ownfiles_find(&l, "/etc/lev/other.toml", NULL));
	lev_ownfiles_release(&l);
	unsetenv("LEVIATH_CONFIG_PATH");
	unsetenv("XDG_CONFIG_HOME");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_loader_path_is_on_the_list),
		cmocka_unit_test(test_find_names_the_most_specific_entry),
		cmocka_unit_test(test_a_symlinked_data_root_is_found_where_it_really_is),
		cmocka_unit_test(test_environment_moves_entries),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
