/*
 * test-pathlex.c - lev_path_under(), and lev_path_lexical(), which reads a path by its words
 * alone, against the kernel's own path walk: in a tree without symlinks,
 * every generated path that realpath(3) resolves must come out the same
 * (a differential test on generated input), plus a few fixed cases for
 * paths that do not exist.
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

#include "liblev/base/buf.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static void expect(const char *dir, const char *p, const char *want)
{
	char *got = lev_path_lexical(dir, p);

	assert_string_equal(got, want);
	free(got);
}

static void test_fixed(void **state)
{
	(void)state;
	expect("/w", "a", "/w/a");
	expect("/w", "./a//b/", "/w/a/b");
	expect("/w", "../x", "/x");
	expect("/w", "../../../x", "/x");
	expect("/w", "/etc/./passwd", "/etc/passwd");
	expect("/w", "..", "/");
	expect("/", "a/..", "/");
	expect("/w/x", "", "/w/x");
	expect("/w", "a/b/../../c", "/w/c");
	expect("/w", "...", "/w/...");
	expect("/w", "..a/.b", "/w/..a/.b");
}

static void test_under(void **state)
{
	(void)state;
	assert_true(lev_path_under("/w", "/w"));
	assert_true(lev_path_under("/w/a/b", "/w"));
	assert_false(lev_path_under("/wx", "/w"));
	assert_false(lev_path_under("/", "/w"));
	assert_false(lev_path_under("/v/w", "/w"));
	assert_true(lev_path_under("/anything", "/"));
	assert_true(lev_path_under("/", "/"));
}

/* A small deterministic generator (xorshift), so a failure names its seed. */
static uint32_t next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void test_against_realpath(void **state)
{
	static const char *const words[] = { "a", "b", "c", ".", "..", "", "f" };
	char tmpl[] = "/tmp/lev-pathlex.XXXXXX";
	char *root = mkdtemp(tmpl), *real, *dir, *cmd;
	unsigned compared = 0;
	uint32_t seed = 0x9e3779b9u;

	(void)state;
	assert_non_null(root);
	real = realpath(root, NULL);
	assert_non_null(real);
	/* a, a/b, a/b/c, a/c and b, each with a file f; no symlinks */
	for (const char *d = "a\0a/b\0a/b/c\0a/c\0b\0"; *d; d += strlen(d) + 1) {
		char *sub = xasprintf("%s/%s", real, d), *file = xasprintf("%s/f", sub);
		FILE *f;

		assert_int_equal(mkdir(sub, 0700), 0);
		f = fopen(file, "w");
		assert_non_null(f);
		fclose(f);
		free(sub);
		free(file);
	}
	dir = xasprintf("%s/a/b", real);
	for (int i = 0; i < 20000; i++) {
		size_t n = 1 + next(&seed) % 8;
		struct lev_buf path = LEV_BUF_INIT;
		char *full, *resolved, *lex;

		if (next(&seed) % 4 == 0)
			lev_buf_addf(&path, "%s/", real);
		for (size_t k = 0; k < n; k++)
			lev_buf_addf(&path, "%s%s", k ? "/" : "", words[next(&seed) % 7]);
		if (next(&seed) % 3 == 0)
			lev_buf_adds(&path, "/");
		/* the kernel resolves a relative path against the cwd: give it DIR's */
		full = path.buf[0] == '/' ? xstrdup(path.buf) : xasprintf("%s/%s", dir, path.buf);
		resolved = realpath(full, NULL);
		free(full);
		if (!resolved) {
			lev_buf_release(&path);
			continue;
		}
		lex = lev_path_lexical(dir, path.buf);
		if (strcmp(lex, resolved))
			fail_msg("'%s' from '%s': lexical '%s', kernel '%s' (iteration %d)", path.buf,
				 dir, lex, resolved, i);
		free(lex);
		free(resolved);
		lev_buf_release(&path);
		compared++;
	}
	/* the generator must reach the kernel often enough to mean something */
	assert_true(compared > 2000);
	cmd = xasprintf("rm -rf '%s'", real);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(dir);
	free(real);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_under),
		cmocka_unit_test(test_against_realpath),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
