/*
 * test-config-edit.c - lev mcp add/remove edit config.toml as text: the
 * user's bytes kept, an edit that would not be valid refused, round trips
 * exact, odd strings quoted so they read back the same.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/conf/config-edit.h"

static const char base[] =
	"# mine: keep this\n"
	"taint_tracking = true   # and this\n"
	"\n"
	"[[mcp_servers]]\n"
	"name = \"a\"\n"
	"command = \"true\"\n"
	"\n"
	"# about limits\n"
	"[limits]\n";

static void test_add_keeps_bytes_and_round_trips(void **state)
{
	char a0[] = "x\"y", a1[] = "back\\slash", a2[] = "tab\there";
	char e0[] = "A=b=c", e1[] = "odd.name=v", name[] = "b", cmd[] = "srv";
	char *args[] = { a0, a1, a2, NULL };
	char *env[] = { e0, e1, NULL };
	struct lev_mcp_server_conf s = {
		.name = name, .command = cmd, .args = args, .env = env, .timeout_secs = 7,
	};
	struct lev_err err = LEV_ERR_INIT;
	char *added = NULL, *removed = NULL;
	struct lev_config cfg;
	const struct lev_mcp_server_conf *got;

	(void)state;
	assert_int_equal(lev_config_mcp_add_text(base, "c.toml", &s, &added, &err), 0);
	assert_memory_equal(added, base, strlen(base));
	assert_int_equal(lev_config_parse(added, strlen(added), "c.toml", &cfg, &err), 0);
	got = lev_config_mcp_server(&cfg, "b");
	assert_non_null(got);
	assert_string_equal(got->args[0], "x\"y");
	assert_string_equal(got->args[1], "back\\slash");
	assert_string_equal(got->args[2], "tab\there");
	assert_string_equal(got->env[0], "A=b=c");
	assert_string_equal(got->env[1], "odd.name=v");
	assert_int_equal(got->timeout_secs, 7);
	lev_config_release(&cfg);
	assert_int_equal(lev_config_mcp_remove_text(added, "c.toml", "b", &removed, &err), 0);
	assert_string_equal(removed, base);
	free(added);
	free(removed);
}

static void test_remove_cuts_only_the_block(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	char *out = NULL;

	(void)state;
	assert_int_equal(lev_config_mcp_remove_text(base, "c.toml", "a", &out, &err), 0);
	assert_string_equal(out, "# mine: keep this\n"
				 "taint_tracking = true   # and this\n"
				 "\n"
				 "# about limits\n"
				 "[limits]\n");
	free(out);
	assert_int_equal(lev_config_mcp_remove_text(base, "c.toml", "zz", &out, &err), -ENOENT);
}

static void test_refusals(void **state)
{
	char a[] = "a", n[] = "n", x[] = "x";
	struct lev_mcp_server_conf s = { .name = a, .command = x };
	struct lev_err err = LEV_ERR_INIT;
	char *out = NULL;

	(void)state;
	/* the name is taken */
	assert_int_equal(lev_config_mcp_add_text(base, "c.toml", &s, &out, &err), -EEXIST);
	/* a file that does not parse is not edited */
	s.name = n;
	assert_true(lev_config_mcp_add_text("[broken\n", "c.toml", &s, &out, &err) < 0);
	/* a sub-table after the block would move to another server: refused */
	assert_true(lev_config_mcp_remove_text(
		"[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\n[mcp_servers.env]\nK = \"v\"\n"
		"[[mcp_servers]]\nname = \"b\"\ncommand = \"y\"\n", "c.toml", "a", &out, &err) < 0);
	assert_non_null(strstr(err.msg, "nothing was written"));
	/* an inline array is not a block of its own */
	assert_true(lev_config_mcp_remove_text(
		"mcp_servers = [{ name = \"a\", command = \"x\" }]\n", "c.toml", "a", &out,
		&err) < 0);
	assert_null(out);
}

/* FILE's bytes, fresh. */
static char *slurp(const char *file)
{
	struct lev_err err = LEV_ERR_INIT;
	char *t = NULL;

	assert_int_equal(lev_read_file(file, 1 << 20, &t, NULL, &err), 0);
	return t;
}

/*
 * lev_config_replace() over every prefix of a valid config (most of them
 * cut mid-token): the file is the prefix exactly when the loader's parser
 * accepts it, else the old bytes untouched; the mode is kept either way
 * and no temporary file is left beside it.
 */
static void test_replace_all_or_nothing(void **state)
{
	char dir[] = "/tmp/test-config-edit-XXXXXX", *file, *before, *now;
	struct lev_err err = LEV_ERR_INIT;
	size_t n = strlen(base), written = 0, refused = 0;
	struct lev_config cfg;
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	file = lev_path_join(dir, "config.toml");
	assert_int_equal(lev_write_file_atomic(file, "# old\n", 6, 0640, &err), 0);
	for (size_t len = 0; len <= n; len++) {
		char **warnings = NULL;
		bool ok = lev_config_parse(base, len, "config.toml", &cfg, &err) == 0;
		int r;

		if (ok)
			lev_config_release(&cfg);
		before = slurp(file);
		r = lev_config_replace(file, base, len, "config.toml", &warnings, &err);
		now = slurp(file);
		assert_int_equal(r == 0, ok);
		if (ok) {
			assert_int_equal(strlen(now), len);
			assert_memory_equal(now, base, len);
			written++;
		} else {
			assert_string_equal(now, before);
			assert_non_null(strstr(err.msg, "config.toml:"));
			refused++;
		}
		assert_int_equal(stat(file, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0640);
		lev_strv_free(warnings);
		free(before);
		free(now);
	}
	assert_true(written > 0 && refused > 0);
	assert_int_equal(unlink(file), 0);
	assert_int_equal(rmdir(dir), 0);	/* nothing else left in it */
	free(file);
}

static void test_pair(void **state)
{
	char **v = NULL;

	(void)state;
	assert_true(lev_config_mcp_pair(&v, "A=b=c", "="));
	assert_true(lev_config_mcp_pair(&v, "X-Key=v", ": "));
	assert_false(lev_config_mcp_pair(&v, "=v", "="));
	assert_false(lev_config_mcp_pair(&v, "novalue", "="));
	assert_int_equal(lev_strv_len(v), 2);
	assert_string_equal(v[0], "A=b=c");
	assert_string_equal(v[1], "X-Key: v");
	lev_strv_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_keeps_bytes_and_round_trips),
		cmocka_unit_test(test_remove_cuts_only_the_block),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_replace_all_or_nothing),
		cmocka_unit_test(test_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
