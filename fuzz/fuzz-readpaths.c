/*
 * fuzz-readpaths.c - [read_paths] entries and paths from arbitrary bytes.
 *
 * Input: one flag byte, then ENTRY, a NUL (or newline), then PATH.  The
 * entry goes through the syntax check, the broad lint, compilation against
 * a workdir and home picked by the flag byte, matching (real and lexical)
 * and the grant report.  Besides "no crash, no leak, no UB, no hang" it
 * checks: whatever compiles also passes the syntax check; matching is
 * deterministic; a path that is not in real-path form never matches; the
 * report writes a valid status.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/conf/readpaths.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

static const char *const workdirs[] = { "/", "/w/x", "/w/[a]*/?", "/home/me/proj" };
static const char *const homes[] = { "/home/me", "/", "/h.x+(y)", NULL };

/* Canonical form: absolute, no empty, "." or ".." components. */
static int real_form(const char *p)
{
	const char *s;

	if (p[0] != '/')
		return 0;
	if (!p[1])
		return 1;
	for (s = p + 1;;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return 0;
		s += n;
		if (!*s)
			return 1;
		s++;
	}
}

/*
 * The indexed lookup in a set must agree with trying each entry alone, in
 * order: ENTRY among fixed neighbours that share or miss its prefixes.
 */
static void check_index(char *entry, const char *path, unsigned flags)
{
	char *v[] = { (char *)"glob:/w/**", entry, (char *)"regex:/h.*", (char *)"/",
		      entry, (char *)"glob:**/x", NULL };
	const char *wd = workdirs[flags & 3], *home = homes[(flags >> 2) & 3];
	struct lev_readpaths *all = NULL;
	long want = -1, got;
	size_t i;

	if (flags & 64)
		v[3] = (char *)"/nonexistent-lev-fuzz";
	if (lev_readpaths_new(v, wd, home, &all, NULL) < 0)
		return;
	for (i = 0; v[i] && want < 0; i++) {
		char *one[2] = { v[i], NULL };
		struct lev_readpaths *s = NULL;
		CHECK(lev_readpaths_new(one, wd, home, &s, NULL) == 0);
		if (lev_readpaths_match(s, path))
			want = (long)i;
		lev_readpaths_free(s);
	}
	got = lev_readpaths_find(all, path);
	CHECK(got == want);
	lev_readpaths_free(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lev_readpaths *s = NULL;
	char *entry, *path, *sep;
	char *v[2] = { NULL, NULL };
	enum lev_grant_status st = (enum lev_grant_status)-1;
	unsigned flags;
	bool m1, m2;
	int syn;

	if (size < 1 || size > 3 * LEV_READPATH_ENTRY_MAX)
		return 0;
	flags = data[0];
	entry = malloc(size);
	if (!entry)
		return 0;
	memcpy(entry, data + 1, size - 1);
	entry[size - 1] = '\0';
	sep = memchr(entry, '\0', size - 1);
	if (!sep || sep == entry + size - 1)
		sep = strchr(entry, '\n');
	if (sep) {
		*sep = '\0';
		path = sep + 1;
	} else {
		path = entry + strlen(entry);
	}
	v[0] = entry;

	syn = lev_readpath_check_syntax(entry, NULL);
	(void)lev_readpath_is_broad(entry);
	check_index(entry, path, flags);
	if (lev_readpaths_new(v, workdirs[flags & 3], homes[(flags >> 2) & 3], &s, NULL) == 0) {
		CHECK(syn == 0);
		CHECK(lev_readpaths_count(s) == 1);
		m1 = lev_readpaths_match(s, path);
		m2 = lev_readpaths_match(s, path);
		CHECK(m1 == m2);
		if (!real_form(path))
			CHECK(!m1);
		(void)lev_readpaths_match_lexically(s, path);
		lev_readpaths_free(s);
	}
	if (lev_readpaths_report(v, (flags & 16) ? v : NULL, flags & 32, workdirs[flags & 3],
				 homes[(flags >> 2) & 3], &st, NULL) == 0)
		CHECK(st == LEV_GRANT_GRANTED || st == LEV_GRANT_NOT_GRANTED ||
		      st == LEV_GRANT_UNDETERMINED);
	free(entry);
	return 0;
}
