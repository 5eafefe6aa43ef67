/*
 * test-store.c - the daemon's SQLite state: a run's row round-trips, the
 * journal is written before and after a call, questions open and close,
 * and the file is WAL, 0600.
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

#include "liblev/base/util.h"
#include "liblev/daemon/store.h"

static char dir[] = "/tmp/lev-test-store.XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return lev_rm_rf(dir, NULL);
}

static void test_runs_and_journal(void **state)
{
	char *path = lev_path_join(dir, "lev.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;
	json_t *run, *all = NULL, *args;
	struct stat sb;
	long n = -1;

	(void)state;
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	run = json_pack("{s:s, s:s, s:s, s:i, s:{s:i, s:i}, s:f}", "id", "r1", "agent", "a",
			"status", "active", "tools", 3, "read_paths", "granted", 1, "declared", 2,
			"created", 1.0);
	assert_int_equal(lev_store_run_put(st, run, &err), 0);
	json_object_set_new(run, "status", json_string("complete"));
	assert_int_equal(lev_store_run_put(st, run, &err), 0);
	args = json_pack("{s:s}", "command", "make");
	assert_int_equal(lev_store_journal_call(st, "r1", "c1", "shell", args, true, &err), 0);
	assert_int_equal(lev_store_journal_call(st, "r1", "c2", "shell", args, false, &err), 0);
	assert_int_equal(lev_store_journal_count(st, "r1", "dispatched", &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(lev_store_journal_result(st, "r1", "c1", true, "ok", &err), 0);
	assert_int_equal(lev_store_journal_count(st, "r1", "done", &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(lev_store_journal_count(st, "r1", "denied", &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(lev_store_question_put(st, "q1", "r1", args, &err), 0);
	assert_int_equal(lev_store_question_close(st, "q1", "once", &err), 0);
	st = lev_store_close(st);

	/* what was committed is there for the next daemon */
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	assert_int_equal(lev_store_runs_load(st, &all, &err), 0);
	assert_int_equal(json_array_size(all), 1);
	assert_true(json_equal(json_array_get(all, 0), run));
	st = lev_store_close(st);
	json_decref(all);
	json_decref(args);
	json_decref(run);
	free(path);
}

static void test_refuses_a_symlink(void **state)
{
	char *path = lev_path_join(dir, "link.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(symlink("/tmp/elsewhere.db", path), 0);
	assert_true(lev_store_open(path, &st, &err) < 0);
	assert_null(st);
	assert_non_null(strstr(err.msg, "cannot open"));
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_and_journal),
		cmocka_unit_test(test_refuses_a_symlink),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
