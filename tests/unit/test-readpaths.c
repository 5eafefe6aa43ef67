/*
 * test-readpaths.c - [read_paths] syntax, compilation, matching, the policy
 * decision and the pattern-level grant report (spec §6 and Appendix A.B).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
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
#include "liblev/base/error.h"
#include "liblev/conf/readpaths.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

/* -Wwrite-strings: literals are const; strv APIs take char *const *. */
#define S(x) ((char *)(x))

static char tmp[PATH_MAX];	/* real path of a scratch directory */

static int setup(void **state)
{
	char t[] = "/tmp/lev-readpaths-XXXXXX";
	char *r;

	(void)state;
	if (!mkdtemp(t))
		return -1;
	r = realpath(t, NULL);
	snprintf(tmp, sizeof(tmp), "%s", r);
	free(r);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return lev_rm_rf(tmp, NULL);
}

static char *tp(const char *rel)
{
	return xasprintf("%s/%s", tmp, rel);
}

static void mkdirs(const char *rel)
{
	char *p = tp(rel);
	assert_int_equal(lev_mkdir_p(p, 0755, NULL), 0);
	free(p);
}

/* Compile ENTRY alone against WD and HOME; NULL on error (message in ERR). */
static struct lev_readpaths *one(const char *entry, const char *wd, const char *home,
				 struct lev_err *err)
{
	char *v[2] = { (char *)entry, NULL };
	struct lev_readpaths *s = NULL;

	if (lev_readpaths_new(v, wd, home, &s, err) < 0)
		return NULL;
	return s;
}

static bool m1(const char *entry, const char *wd, const char *home, const char *path)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_readpaths *s = one(entry, wd, home, &err);
	bool r;

	if (!s)
		fail_msg("'%s' did not compile: %s", entry, err.msg);
	r = lev_readpaths_match(s, path);
	lev_readpaths_free(s);
	return r;
}

static void assert_refused(const char *entry, const char *wd, const char *home, const char *needle)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_readpaths *s = one(entry, wd, home, &err);

	if (s)
		fail_msg("'%s' compiled but should not", entry);
	assert_int_equal(err.code, LEV_EPARSE);
	if (needle && !strstr(err.msg, needle))
		fail_msg("error for '%s' is '%s', expected it to mention '%s'", entry, err.msg, needle);
}

/* ---- compile errors ------------------------------------------------------ */

static void empty_and_whitespace_entries_are_refused(void **state)
{
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_refused("", "/w", "/h", "read_paths entry is empty");
	assert_refused("   \t", "/w", "/h", "read_paths entry is empty");
	assert_refused("glob:", "/w", "/h", "glob pattern is empty");
	assert_refused("glob:  ", "/w", "/h", "glob pattern is empty");
	assert_refused("regex:", "/w", "/h", "regex pattern is empty");
	assert_int_equal(lev_readpath_check_syntax("", &err), LEV_EPARSE);
	assert_int_equal(lev_readpath_check_syntax("regex: ", &err), LEV_EPARSE);
}

static void invalid_patterns_are_refused(void **state)
{
	(void)state;
	assert_refused("regex:/a(", "/w", "/h", "invalid regex");
	assert_refused("regex:/a[", "/w", "/h", "invalid regex");
	assert_refused("glob:/a/[bc", "/w", "/h", "unterminated '['");
	assert_refused("glob:/a/b**", "/w", "/h", "'**' must be a whole path component");
	assert_refused("glob:/a/**b/c", "/w", "/h", "'**' must be a whole path component");
	/* the entry is named in the message */
	assert_refused("glob:/x/[q", "/w", "/h", "'glob:/x/[q'");
}

static void a_relative_regex_is_refused(void **state)
{
	(void)state;
	assert_refused("regex:.*", "/w", "/h", "use 'glob:' for workdir-relative patterns");
	assert_refused("regex:docs/.*", "/w", "/h", "must start with '/'");
	assert_refused("regex:(/etc)", "/w", "/h", "must start with '/'");
}

static void regex_bodies_cannot_break_out_of_the_anchors(void **state)
{
	(void)state;
	/* an unbalanced body would close our group and alternate past "^" */
	assert_refused("regex:/nothing)|(.*", "/w", "/h", "invalid regex");
	assert_refused("regex:/x)(?:", "/w", "/h", "invalid regex");
	/* (*ACCEPT) cannot end a match before the end of the path */
	assert_false(m1("regex:/a(*ACCEPT)", "/w", "/h", "/ab"));
	assert_false(m1("regex:/a(*ACCEPT)", "/w", "/h", "/a/etc/shadow"));
	assert_true(m1("regex:/a(*ACCEPT)", "/w", "/h", "/a"));
	/* $ does not match before a trailing newline */
	assert_false(m1("regex:/etc/runs$", "/w", "/h", "/etc/runs\n"));
	/* an inline (?m) cannot end the match before the end of the path */
	assert_false(m1("regex:/a(?m)$", "/w", "/h", "/a\n/b"));
}

static void tilde_user_forms_are_refused(void **state)
{
	(void)state;
	assert_refused("~root/x", "/w", "/h", "only '~/' home expansion is supported");
	assert_refused("glob:~root/*", "/w", "/h", "only '~/' home expansion is supported");
	assert_refused("regex:~root/.*", "/w", "/h", "only '~/' home expansion is supported");
}

static void tilde_without_a_home_is_refused(void **state)
{
	(void)state;
	assert_refused("~/x", "/w", NULL, "no home directory resolved for '~' expansion");
	assert_refused("~", "/w", NULL, "no home directory resolved");
	assert_refused("glob:~/x/**", "/w", NULL, "no home directory resolved");
	assert_refused("regex:~/.*", "/w", NULL, "no home directory resolved");
	/* a relative home is no home */
	assert_refused("~/x", "/w", "relative/home", "no home directory resolved");
}

static void interior_dot_components_in_globs_are_refused(void **state)
{
	(void)state;
	assert_refused("glob:/a/../b", "/w", "/h", "cannot contain '.' or '..' components");
	assert_refused("glob:/a/./b", "/w", "/h", "cannot contain '.' or '..' components");
	assert_refused("glob:src/../x", "/w", "/h", "cannot contain '.' or '..' components");
	assert_refused("glob:~/x/../.ssh", "/w", "/h", "cannot contain '.' or '..' components");
	/* the leading run of a relative entry is folded, not refused */
	assert_true(m1("glob:./../x/*", "/w/a", "/h", "/w/x/y"));
}

static void a_relative_glob_cannot_climb_past_the_root(void **state)
{
	(void)state;
	assert_refused("glob:../../x", "/w", "/h", "relative pattern escapes the filesystem root");
	assert_refused("glob:../..", "/w", "/h", "escapes the filesystem root");
	assert_true(m1("glob:../x", "/w", "/h", "/x"));
}

static void entries_are_bounded(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	char *big = xmalloc(LEV_READPATH_ENTRY_MAX + 2);
	char **v = NULL;
	struct lev_readpaths *s = NULL;
	size_t i;

	(void)state;
	big[0] = '/';
	memset(big + 1, 'a', LEV_READPATH_ENTRY_MAX);
	big[LEV_READPATH_ENTRY_MAX + 1] = '\0';
	assert_int_equal(lev_readpath_check_syntax(big, &err), LEV_EPARSE);
	assert_non_null(strstr(err.msg, "too long"));
	free(big);

	for (i = 0; i < LEV_READPATHS_MAX + 1; i++)
		v = lev_strv_push(v, "/x");
	assert_int_equal(lev_readpaths_new(v, "/w", "/h", &s, &err), LEV_EPARSE);
	assert_null(s);
	assert_non_null(strstr(err.msg, "too many"));
	lev_strv_free(v);

	assert_int_equal(lev_readpath_check_syntax("/a\nb", &err), LEV_EPARSE);
	assert_non_null(strstr(err.msg, "control character"));
	assert_non_null(strstr(err.msg, "\\x0a"));
}

/* ---- exact entries ------------------------------------------------------- */

static void an_exact_root_grants_its_subtree_and_nothing_else(void **state)
{
	char *d = tp("ex/d"), *in = tp("ex/d/sub/x.txt"), *self = tp("ex/d");
	char *sib = tp("ex/dx"), *parent = tp("ex"), *sibf = tp("ex/dx/y");

	(void)state;
	mkdirs("ex/d/sub");
	mkdirs("ex/dx");
	assert_true(m1(d, "/w", "/h", self));
	assert_true(m1(d, "/w", "/h", in));
	assert_false(m1(d, "/w", "/h", sib));
	assert_false(m1(d, "/w", "/h", sibf));
	assert_false(m1(d, "/w", "/h", parent));
	/* "/" covers everything */
	assert_true(m1("/", "/w", "/h", "/etc/passwd"));
	free(d), free(in), free(self), free(sib), free(parent), free(sibf);
}

static void an_uncanonicalized_exact_root_still_matches(void **state)
{
	char *link = tp("unc/link"), *target = tp("unc/real"), *in = tp("unc/real/f");
	char *dotted = tp("unc/./real/../real");

	(void)state;
	mkdirs("unc/real");
	assert_int_equal(symlink(target, link), 0);
	assert_true(m1(link, "/w", "/h", in));
	assert_true(m1(dotted, "/w", "/h", in));
	free(link), free(target), free(in), free(dotted);
}

static void a_nonexistent_exact_root_never_matches(void **state)
{
	char *root = tp("later/dir"), *in = tp("later/dir/f");
	char *v[2] = { root, NULL };
	struct lev_readpaths *s = NULL;

	(void)state;
	assert_int_equal(lev_readpaths_new(v, "/w", "/h", &s, NULL), 0);
	assert_false(lev_readpaths_match(s, in));
	assert_false(lev_readpaths_match(s, root));
	/* created later: tried again at match time */
	mkdirs("later/dir");
	assert_true(lev_readpaths_match(s, in));
	lev_readpaths_free(s);
	free(root), free(in);
}

static void a_relative_exact_entry_resolves_against_the_workdir(void **state)
{
	char *wd = tp("rel/wd"), *in = tp("rel/shared/doc.md"), *not = tp("rel/wd/shared/doc.md");

	(void)state;
	mkdirs("rel/wd");
	mkdirs("rel/shared");
	assert_true(m1("../shared", wd, "/h", in));
	assert_false(m1("../shared", wd, "/h", not));
	assert_true(m1("./", wd, "/h", not));
	free(wd), free(in), free(not);
}

static void tilde_exact_entries_expand_to_the_home_argument(void **state)
{
	char *home = tp("home"), *in = tp("home/notes/a.md"), *h = tp("home/x");

	(void)state;
	mkdirs("home/notes");
	assert_true(m1("~/notes", "/w", home, in));
	assert_false(m1("~/notes", "/w", home, h));
	assert_true(m1("~", "/w", home, h));
	assert_true(m1("~\\notes", "/w", home, in));
	free(home), free(in), free(h);
}

/* ---- globs ---------------------------------------------------------------- */

static void star_stays_within_one_component_and_doublestar_crosses(void **state)
{
	(void)state;
	assert_true(m1("glob:/a/*/c", "/w", "/h", "/a/b/c"));
	assert_false(m1("glob:/a/*/c", "/w", "/h", "/a/b/x/c"));
	assert_false(m1("glob:/a/*/c", "/w", "/h", "/a/c"));
	assert_true(m1("glob:/a/**/c", "/w", "/h", "/a/c"));
	assert_true(m1("glob:/a/**/c", "/w", "/h", "/a/b/c"));
	assert_true(m1("glob:/a/**/c", "/w", "/h", "/a/b/x/y/c"));
	assert_false(m1("glob:/a/**/c", "/w", "/h", "/a/b/x/y/d"));
	assert_true(m1("glob:/a/**", "/w", "/h", "/a"));
	assert_true(m1("glob:/a/**", "/w", "/h", "/a/b/c/d"));
	assert_false(m1("glob:/a/**", "/w", "/h", "/ab"));
	/* '*' matches dotfiles */
	assert_true(m1("glob:/a/*.md", "/w", "/h", "/a/.hidden.md"));
	assert_true(m1("glob:/a/*", "/w", "/h", "/a/.ssh"));
	assert_false(m1("glob:/a/*.md", "/w", "/h", "/a/b/x.md"));
	/* '?' is one character, never a separator */
	assert_true(m1("glob:/a/?", "/w", "/h", "/a/b"));
	assert_true(m1("glob:/a/?", "/w", "/h", "/a/\xc3\xa9"));
	assert_false(m1("glob:/a/?", "/w", "/h", "/a/bc"));
	assert_false(m1("glob:/a?b", "/w", "/h", "/a/b"));
	/* several stars and '**' runs */
	assert_true(m1("glob:/**/*a*b*c", "/w", "/h", "/x/y/zaXbYc"));
	assert_false(m1("glob:/**/*a*b*c", "/w", "/h", "/x/y/zaXbY"));
	assert_true(m1("glob:/x/**/**/y", "/w", "/h", "/x/y"));
}

static void character_classes_stay_in_one_component(void **state)
{
	(void)state;
	assert_true(m1("glob:/a/[bc]d", "/w", "/h", "/a/bd"));
	assert_true(m1("glob:/a/[bc]d", "/w", "/h", "/a/cd"));
	assert_false(m1("glob:/a/[bc]d", "/w", "/h", "/a/ad"));
	assert_true(m1("glob:/a/[!b]d", "/w", "/h", "/a/xd"));
	assert_false(m1("glob:/a/[!b]d", "/w", "/h", "/a/bd"));
	assert_true(m1("glob:/a/[a-c]", "/w", "/h", "/a/b"));
	assert_false(m1("glob:/a/[a-c]", "/w", "/h", "/a/d"));
	assert_true(m1("glob:/a/[]]", "/w", "/h", "/a/]"));
	assert_true(m1("glob:/a/[*]", "/w", "/h", "/a/*"));
	assert_false(m1("glob:/a/[*]", "/w", "/h", "/a/x"));
	assert_true(m1("glob:/a/[\xc3\xa9]", "/w", "/h", "/a/\xc3\xa9"));
}

static void pathological_patterns_finish(void **state)
{
	char path[PATH_MAX];
	size_t i, o = 0;

	(void)state;
	for (i = 0; i < 200; i++)
		o += (size_t)snprintf(path + o, sizeof(path) - o, "/aaaaaaaaa");
	assert_false(m1("glob:/**/**/**/**/**/*a*a*a*a*a*a*a*a*b", "/w", "/h", path));
	assert_false(m1("regex:/(a+)+(a+)+(a+)+b", "/w", "/h", path));
}

static void a_relative_glob_is_anchored_at_the_workdir(void **state)
{
	(void)state;
	assert_true(m1("glob:*.md", "/w/x", "/h", "/w/x/a.md"));
	assert_false(m1("glob:*.md", "/w/x", "/h", "/w/x/y/a.md"));
	assert_false(m1("glob:*.md", "/w/x", "/h", "/other/a.md"));
	assert_true(m1("glob:../docs/**", "/w/x", "/h", "/w/docs/a/b"));
	assert_false(m1("glob:../docs/**", "/w/x", "/h", "/w/x/docs/a"));
}

static void a_relative_glob_works_from_a_root_workdir(void **state)
{
	(void)state;
	assert_true(m1("glob:etc/*", "/", "/h", "/etc/passwd"));
	assert_false(m1("glob:etc/*", "/", "/h", "/x/etc/passwd"));
}

static void a_dots_only_glob_matches_the_folded_directory_itself(void **state)
{
	(void)state;
	assert_true(m1("glob:../", "/w/x", "/h", "/w"));
	assert_false(m1("glob:../", "/w/x", "/h", "/w/x"));
	assert_false(m1("glob:../", "/w/x", "/h", "/w/y"));
	assert_true(m1("glob:.", "/w/x", "/h", "/w/x"));
}

static void a_metachar_workdir_is_escaped_in_relative_globs(void **state)
{
	(void)state;
	assert_true(m1("glob:f", "/w/[ab]*", "/h", "/w/[ab]*/f"));
	assert_false(m1("glob:f", "/w/[ab]*", "/h", "/w/a/f"));
	assert_false(m1("glob:f", "/w/[ab]*", "/h", "/w/bzz/f"));
	assert_true(m1("glob:?", "/w/?", "/h", "/w/?/z"));
	assert_false(m1("glob:?", "/w/?", "/h", "/w/q/z"));
}

static void a_metachar_home_is_escaped_in_tilde_globs(void **state)
{
	(void)state;
	assert_true(m1("glob:~/f", "/w", "/h/*", "/h/*/f"));
	assert_false(m1("glob:~/f", "/w", "/h/*", "/h/x/f"));
	assert_true(m1("glob:~", "/w", "/h/*", "/h/*"));
}

static void backslash_glob_patterns_are_normalized(void **state)
{
	(void)state;
	assert_true(m1("glob:/a\\*", "/w", "/h", "/a/b"));
	assert_true(m1("glob:~\\docs\\**", "/w", "/h", "/h/docs/x/y"));
	/* an exact entry keeps its backslash: a Unix name may contain one */
	{
		char *v[] = { S("/a\\b"), NULL };
		struct lev_readpaths *s = NULL;
		assert_int_equal(lev_readpaths_new(v, "/w", "/h", &s, NULL), 0);
		assert_false(lev_readpaths_match_lexically(s, "/a/b"));
		assert_true(lev_readpaths_match_lexically(s, "/a\\b/x"));
		lev_readpaths_free(s);
	}
}

static void a_drive_letter_glob_never_matches_here(void **state)
{
	(void)state;
	assert_int_equal(lev_readpath_check_syntax("glob:C:/x/**", NULL), 0);
	assert_false(m1("glob:C:/x/**", "/w", "/h", "/x/y"));
	assert_false(m1("glob:C:/x/**", "/w", "/h", "/C:/x/y"));
}

/* ---- regexes --------------------------------------------------------------- */

static void regexes_are_anchored_to_the_whole_path(void **state)
{
	(void)state;
	assert_true(m1("regex:/etc/runs", "/w", "/h", "/etc/runs"));
	assert_false(m1("regex:/etc/runs", "/w", "/h", "/etc/runs-anything"));
	assert_false(m1("regex:/etc/runs", "/w", "/h", "/prefix/etc/runs"));
	assert_false(m1("regex:/etc/runs", "/w", "/h", "/etc/runs/x"));
	assert_true(m1("regex:/data/.*", "/w", "/h", "/data/a/b"));
	assert_false(m1("regex:/data/.*", "/w", "/h", "/database"));
	assert_true(m1("regex:/a|/b", "/w", "/h", "/b"));
	assert_false(m1("regex:/a|/b", "/w", "/h", "/x/b"));
	assert_false(m1("regex:/a|/b", "/w", "/h", "/bb"));
	/* quantified last literal: the prefix filter must not require it */
	assert_true(m1("regex:/data/x?y", "/w", "/h", "/data/y"));
	assert_true(m1("regex:/data/ab?", "/w", "/h", "/data/a"));
	assert_true(m1("regex:/data/x*y", "/w", "/h", "/data/y"));
	assert_true(m1("regex:/data/x{0,1}y", "/w", "/h", "/data/y"));
	assert_true(m1("regex:/data\\.d/.*", "/w", "/h", "/data.d/f"));
	assert_false(m1("regex:/data\\.d/.*", "/w", "/h", "/dataXd/f"));
}

static void a_metachar_home_is_escaped_in_tilde_regexes(void **state)
{
	(void)state;
	assert_true(m1("regex:~/.*", "/w", "/h.x+(y) z", "/h.x+(y) z/a"));
	assert_false(m1("regex:~/.*", "/w", "/h.x+(y) z", "/hAxx(y) z/a"));
	assert_false(m1("regex:~/.*", "/w", "/h.x+(y) z", "/h.xx(y) z/a"));
	assert_true(m1("regex:~", "/w", "/home/me", "/home/me"));
	assert_true(m1("regex:~/x", "/w", "/", "/x"));
}

static void a_drive_letter_regex_is_accepted(void **state)
{
	(void)state;
	assert_int_equal(lev_readpath_check_syntax("regex:C:/data/.*", NULL), 0);
	assert_int_equal(lev_readpath_check_syntax("regex:c:\\\\x", NULL), 0);
	assert_false(m1("regex:C:/data/.*", "/w", "/h", "/data/x"));
}

/* ---- real-path input -------------------------------------------------------- */

static void only_real_paths_are_matched(void **state)
{
	(void)state;
	assert_false(m1("glob:/**", "/w", "/h", "relative/x"));
	assert_false(m1("glob:/**", "/w", "/h", "/a/../b"));
	assert_false(m1("glob:/**", "/w", "/h", "/a/./b"));
	assert_false(m1("glob:/**", "/w", "/h", "/a//b"));
	assert_false(m1("glob:/**", "/w", "/h", "/a/"));
	assert_false(m1("glob:/**", "/w", "/h", ""));
	assert_true(m1("glob:/**", "/w", "/h", "/"));
	assert_false(m1("/", "/w", "/h", "/a/../../etc"));
}

/* ---- policy -------------------------------------------------------------------- */

struct pol {
	struct lev_readpaths *d, *g;
	struct lev_readpath_policy p;
};

static void pol_make(struct pol *p, char **declared, char **grants, bool allow_bp)
{
	assert_int_equal(lev_readpaths_new(declared, "/w", "/h", &p->d, NULL), 0);
	assert_int_equal(lev_readpaths_new(grants, "/w", "/h", &p->g, NULL), 0);
	p->p.declared = p->d;
	p->p.grants = p->g;
	p->p.allow_blueprint = allow_bp;
}

static void pol_free(struct pol *p)
{
	lev_readpaths_free(p->d);
	lev_readpaths_free(p->g);
}

static void an_inactive_policy_declares_nothing(void **state)
{
	char *grants[] = { S("glob:/**"), NULL };
	struct pol p;

	(void)state;
	pol_make(&p, NULL, grants, true);
	assert_false(lev_readpath_policy_active(&p.p));
	assert_int_equal(lev_readpath_policy_decide(&p.p, "/etc/passwd"), LEV_READPATH_NOT_DECLARED);
	pol_free(&p);
}

static void a_path_the_blueprint_never_declared_is_not_declared(void **state)
{
	char *declared[] = { S("glob:/data/**"), NULL }, *grants[] = { S("glob:/**"), NULL };
	struct pol p;

	(void)state;
	pol_make(&p, declared, grants, false);
	assert_true(lev_readpath_policy_active(&p.p));
	assert_int_equal(lev_readpath_policy_decide(&p.p, "/etc/passwd"), LEV_READPATH_NOT_DECLARED);
	pol_free(&p);
}

static void a_declared_but_ungranted_path_is_not_granted(void **state)
{
	char *declared[] = { S("glob:/data/**"), NULL };
	struct pol p;

	(void)state;
	pol_make(&p, declared, NULL, false);
	assert_int_equal(lev_readpath_policy_decide(&p.p, "/data/x"), LEV_READPATH_NOT_GRANTED);
	pol_free(&p);
}

static void a_granted_path_is_allowed(void **state)
{
	char *declared[] = { S("glob:/data/**"), NULL }, *grants[] = { S("glob:/data/**"), NULL };
	struct pol p;

	(void)state;
	pol_make(&p, declared, grants, false);
	assert_int_equal(lev_readpath_policy_decide(&p.p, "/data/x"), LEV_READPATH_ALLOWED);
	assert_string_equal(lev_readpath_decision_name(LEV_READPATH_ALLOWED), "allowed");
	pol_free(&p);
}

static void a_broader_grant_covers_a_narrow_declaration(void **state)
{
	char *declared[] = { S("regex:/data/docs/[a-z]+\\.md"), NULL }, *grants[] = { S("/"), NULL };
	struct pol p;

	(void)state;
	pol_make(&p, declared, grants, false);
	assert_int_equal(lev_readpath_policy_decide(&p.p, "/data/docs/a.md"), LEV_READPATH_ALLOWED);
	assert_int_equal(lev_readpath_policy_decide(&p.p, "/data/docs/A.md"),
			 LEV_READPATH_NOT_DECLARED);
	pol_free(&p);
}

static void a_nonoverlapping_grant_does_not_help(void **state)
{
	char *declared[] = { S("glob:/data/**"), NULL }, *grants[] = { S("glob:/other/**"), NULL };
	struct pol p;

	(void)state;
	pol_make(&p, declared, grants, false);
	assert_int_equal(lev_readpath_policy_decide(&p.p, "/data/x"), LEV_READPATH_NOT_GRANTED);
	assert_int_equal(lev_readpath_policy_decide(&p.p, "/other/x"), LEV_READPATH_NOT_DECLARED);
	pol_free(&p);
}

static void the_blanket_override_honors_declarations_without_grants(void **state)
{
	char *declared[] = { S("glob:/data/**"), NULL };
	struct pol p;

	(void)state;
	pol_make(&p, declared, NULL, true);
	assert_int_equal(lev_readpath_policy_decide(&p.p, "/data/x"), LEV_READPATH_ALLOWED);
	assert_int_equal(lev_readpath_policy_decide(&p.p, "/etc/x"), LEV_READPATH_NOT_DECLARED);
	pol_free(&p);
}

static void an_empty_set_matches_nothing(void **state)
{
	struct lev_readpaths *s = NULL;
	char *none[] = { NULL };

	(void)state;
	assert_int_equal(lev_readpaths_new(none, "/w", "/h", &s, NULL), 0);
	assert_int_equal(lev_readpaths_count(s), 0);
	assert_false(lev_readpaths_match(s, "/"));
	assert_false(lev_readpaths_match(NULL, "/"));
	assert_int_equal(lev_readpaths_find(s, "/x"), -1);
	lev_readpaths_free(s);
}

static void find_reports_the_first_matching_entry(void **state)
{
	char *v[] = { S("/nope"), S("glob:/data/*"), S("regex:/data/.*"), NULL };
	struct lev_readpaths *s = NULL;

	(void)state;
	assert_int_equal(lev_readpaths_new(v, "/w", "/h", &s, NULL), 0);
	assert_int_equal(lev_readpaths_find(s, "/data/x"), 1);
	assert_int_equal(lev_readpaths_find(s, "/data/x/y"), 2);
	assert_string_equal(lev_readpaths_entry(s, 2), "regex:/data/.*");
	assert_int_equal(lev_readpaths_kind(s, 1), LEV_READPATH_GLOB);
	assert_null(lev_readpaths_entry(s, 3));
	lev_readpaths_free(s);
}


static void the_index_agrees_with_a_linear_scan(void **state)
{
	static const char *const entries[] = {
		"glob:/data/**/*.md", "/", "regex:/data/a.*", "glob:/data/x/*", "glob:/**/z",
		"regex:/srv/archive/[0-9]+", "glob:/srv/*/log", "regex:/", "glob:/data", "/nope/x",
		"regex:/data/x/y|/srv/q", "glob:/home/u/**", "regex:/home/u/d\\.x/.*", "glob:*",
		"regex:/h(ome)?/u", "glob:/data/x/y/z", "glob:/[dh]*/**", "regex:/data/xy?",
	};
	static const char *const paths[] = {
		"/", "/data", "/data/a", "/data/x", "/data/x/y", "/data/x/y/z", "/data/q.md",
		"/data/x/y/q.md", "/srv/archive/123", "/srv/9/log", "/srv/q", "/home/u",
		"/home/u/d.x/a", "/hu/u", "/h/u", "/w/x/file", "/z", "/a/b/z", "/data/xy",
		"/data/x", "/nope/x/y", "/home/u/dXx/a",
	};
	size_t n = ARRAY_SIZE(entries), i, p, k;

	(void)state;
	/* rotate the order so every entry takes every position */
	for (k = 0; k < n; k++) {
		char *v[ARRAY_SIZE(entries) + 1];
		struct lev_readpaths *all = NULL;

		for (i = 0; i < n; i++)
			v[i] = S(entries[(i + k) % n]);
		v[n] = NULL;
		assert_int_equal(lev_readpaths_new(v, "/w/x", "/home/u", &all, NULL), 0);
		for (p = 0; p < ARRAY_SIZE(paths); p++) {
			long want = -1;
			for (i = 0; i < n && want < 0; i++)
				if (m1(v[i], "/w/x", "/home/u", paths[p]))
					want = (long)i;
			if (lev_readpaths_find(all, paths[p]) != want)
				fail_msg("rotation %zu, path '%s': index says %ld, scan says %ld", k,
					 paths[p], lev_readpaths_find(all, paths[p]), want);
		}
		lev_readpaths_free(all);
	}
}

struct thr {
	struct lev_readpaths *s;
	int hits;
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	int i;

	for (i = 0; i < 2000; i++)
		t->hits += lev_readpaths_match(t->s, i % 2 ? "/data/a/b.md" : "/etc/x");
	return NULL;
}

static void a_set_is_safe_to_share_between_threads(void **state)
{
	char *v[] = { S("glob:/x/**"), S("regex:/data/.*\\.md"), S("/nope"), NULL };
	struct thr t[4];
	pthread_t th[4];
	int i;

	(void)state;
	memset(t, 0, sizeof(t));
	assert_int_equal(lev_readpaths_new(v, "/w", "/h", &t[0].s, NULL), 0);
	for (i = 0; i < 4; i++) {
		t[i].s = t[0].s;
		assert_int_equal(pthread_create(&th[i], NULL, thr_main, &t[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(t[i].hits, 1000);
	}
	lev_readpaths_free(t[0].s);
}

/* ---- syntax and lint -------------------------------------------------------------- */

static void syntax_validation_accepts_well_formed_entries(void **state)
{
	static const char *const ok[] = {
		"/data/runs", "~/.leviath/runs", "~", "../shared-docs", "docs",
		"glob:~/design-docs/**", "glob:*.md", "glob:../../../../../../x/**",
		"regex:/data/archives/.*", "regex:~/notes/[0-9]{4}\\.md", "regex:/.*",
		"glob:/a/[!b]?*", "glob:C:/x", "regex:D:/x",
	};
	struct lev_err err = LEV_ERR_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(ok); i++)
		if (lev_readpath_check_syntax(ok[i], &err) != 0)
			fail_msg("'%s' refused: %s", ok[i], err.msg);
}

static void syntax_validation_refuses_malformed_entries(void **state)
{
	static const char *const bad[] = {
		"", " ", "glob:", "regex:", "regex:.*", "regex:docs", "~root/x", "glob:~x/*",
		"glob:/a/../b", "glob:/a/b**", "glob:/a/[b", "regex:/a(", "regex:/a)|(.*",
	};
	struct lev_err err = LEV_ERR_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		lev_err_clear(&err);
		if (lev_readpath_check_syntax(bad[i], &err) != LEV_EPARSE)
			fail_msg("'%s' accepted", bad[i]);
		assert_true(strstr(err.msg, "read_paths entry") == err.msg);
	}
}

static void the_broad_entry_heuristic_covers_each_shape(void **state)
{
	static const char *const broad[] = {
		"/", "~", "~/", "glob:/**", "glob:**/x", "glob:**", "regex:/.*", "regex:/.+",
		"regex:/.*foo", "glob:~/**", "regex:~/.*", "glob:/*/**", "glob:~/*/**",
		"regex:/(a|.*)", "glob:\\**", "../../../../../../../../../../../../../../../../..",
	};
	static const char *const narrow[] = {
		"~/docs", "glob:~/design-docs/**", "regex:/data/archive/.*", "/etc",
		"glob:/data/*.md", "../shared", "glob:*.md", "regex:/[a-z]+/x",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(broad); i++)
		if (!lev_readpath_is_broad(broad[i]))
			fail_msg("'%s' should be broad", broad[i]);
	for (i = 0; i < ARRAY_SIZE(narrow); i++)
		if (lev_readpath_is_broad(narrow[i]))
			fail_msg("'%s' should not be broad", narrow[i]);
	assert_false(lev_readpath_is_broad(NULL));
	assert_false(lev_readpath_is_broad("regex:.*x"));	/* malformed: not broad */
}

/* ---- report ------------------------------------------------------------------------- */

static enum lev_grant_status rep1(const char *declared, char **grants, bool allow_bp,
				  const char *wd, const char *home)
{
	char *d[2] = { (char *)declared, NULL };
	enum lev_grant_status st = (enum lev_grant_status)99;
	struct lev_err err = LEV_ERR_INIT;

	if (lev_readpaths_report(d, grants, allow_bp, wd, home, &st, &err) < 0)
		fail_msg("report failed: %s", err.msg);
	return st;
}

static void nothing_granted_means_every_entry_is_refused(void **state)
{
	(void)state;
	assert_int_equal(rep1("/data", NULL, false, "/w", "/h"), LEV_GRANT_NOT_GRANTED);
	assert_int_equal(rep1("glob:[ab]", NULL, false, "/w", "/h"), LEV_GRANT_NOT_GRANTED);
}

static void the_blanket_override_grants_every_declaration(void **state)
{
	(void)state;
	assert_int_equal(rep1("/data", NULL, true, "/w", "/h"), LEV_GRANT_GRANTED);
	assert_int_equal(rep1("glob:/x/[ab]", NULL, true, "/w", "/h"), LEV_GRANT_GRANTED);
}

static void a_partial_grant_is_reported_entry_by_entry(void **state)
{
	char *d[] = { S("~/.leviath/runs"), S("glob:~/design-docs/**"), S("regex:/data/.*"), NULL };
	char *g[] = { S("~/.leviath/runs"), S("/data"), NULL };
	enum lev_grant_status st[3];

	(void)state;
	assert_int_equal(lev_readpaths_report(d, g, false, "/w", "/home/me", st, NULL), 0);
	assert_int_equal(st[0], LEV_GRANT_GRANTED);
	assert_int_equal(st[1], LEV_GRANT_NOT_GRANTED);
	assert_int_equal(st[2], LEV_GRANT_GRANTED);
}

static void a_grant_covers_a_declaration_written_differently(void **state)
{
	char *g[] = { S("/data"), NULL }, *gg[] = { S("glob:/data/**"), NULL };

	(void)state;
	assert_int_equal(rep1("glob:/data/docs/**", g, false, "/w", "/h"), LEV_GRANT_GRANTED);
	assert_int_equal(rep1("/data/docs", gg, false, "/w", "/h"), LEV_GRANT_GRANTED);
	assert_int_equal(rep1("../data/x", g, false, "/w", "/h"), LEV_GRANT_GRANTED);
}

static void a_grant_for_a_sibling_directory_does_not_count(void **state)
{
	char *g[] = { S("/data/doc"), NULL };

	(void)state;
	assert_int_equal(rep1("/data/docs", g, false, "/w", "/h"), LEV_GRANT_NOT_GRANTED);
	assert_int_equal(rep1("glob:/data/docs/*", g, false, "/w", "/h"), LEV_GRANT_NOT_GRANTED);
}

static void an_uncheckable_entry_is_undetermined_not_ungranted(void **state)
{
	char *g[] = { S("/x"), NULL };

	(void)state;
	assert_int_equal(rep1("glob:/data/[ab]", g, false, "/w", "/h"), LEV_GRANT_UNDETERMINED);
	assert_int_equal(rep1("regex:/(a|b)/x", g, false, "/w", "/h"), LEV_GRANT_UNDETERMINED);
	assert_string_equal(lev_grant_status_label(LEV_GRANT_UNDETERMINED),
			    "cannot be checked from the pattern alone");
	assert_string_equal(lev_grant_status_label(LEV_GRANT_GRANTED), "granted");
	assert_string_equal(lev_grant_status_label(LEV_GRANT_NOT_GRANTED), "NOT granted");
}

static void a_declaration_that_cannot_compile_here_is_undetermined(void **state)
{
	char *g[] = { S("/x"), NULL };

	(void)state;
	assert_int_equal(rep1("~/docs", g, false, "/w", NULL), LEV_GRANT_UNDETERMINED);
}

static void a_malformed_config_grant_is_an_error(void **state)
{
	char *d[] = { S("/data"), NULL }, *g[] = { S("/ok"), S("regex:.*"), NULL };
	enum lev_grant_status st[1] = { (enum lev_grant_status)77 };
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(lev_readpaths_report(d, g, false, "/w", "/h", st, &err), LEV_EPARSE);
	assert_non_null(strstr(err.msg, "regex:.*"));
	assert_int_equal(st[0], 77);	/* untouched on failure */
}

static void samples_are_built_from_each_kind(void **state)
{
	char *g[] = { S("glob:/data/*/_leviath_probe"), NULL }, *g2[] = { S("/data/archive"), NULL };
	char *g3[] = { S("regex:/data/archive"), NULL };

	(void)state;
	/* glob wildcards are filled with a literal component */
	assert_int_equal(rep1("glob:/data/**", g, false, "/w", "/h"), LEV_GRANT_NOT_GRANTED);
	assert_int_equal(rep1("glob:/data/*/*", g, false, "/w", "/h"), LEV_GRANT_GRANTED);
	/* a regex samples a file inside its literal prefix */
	assert_int_equal(rep1("regex:/data/archive/.*", g2, false, "/w", "/h"), LEV_GRANT_GRANTED);
	/* ... or the bare prefix when that is what it matches */
	assert_int_equal(rep1("regex:/data/archive", g3, false, "/w", "/h"), LEV_GRANT_GRANTED);
	/* a regex whose sample fails its own pattern has none */
	assert_int_equal(rep1("regex:/a/b+", g2, false, "/w", "/h"), LEV_GRANT_UNDETERMINED);
}

static void lexical_matching_covers_a_root_and_its_subtree(void **state)
{
	char *v[] = { S("/does/not/exist"), S("/"), NULL }, *v2[] = { S("/does/not/exist"), NULL };
	struct lev_readpaths *s = NULL, *s2 = NULL;

	(void)state;
	assert_int_equal(lev_readpaths_new(v2, "/w", "/h", &s2, NULL), 0);
	assert_true(lev_readpaths_match_lexically(s2, "/does/not/exist/x"));
	assert_true(lev_readpaths_match_lexically(s2, "/does/not/exist"));
	assert_false(lev_readpaths_match_lexically(s2, "/does/not/existing"));
	assert_false(lev_readpaths_match(s2, "/does/not/exist/x"));
	assert_int_equal(lev_readpaths_new(v, "/w", "/h", &s, NULL), 0);
	assert_true(lev_readpaths_match_lexically(s, "/anything/at/all"));
	lev_readpaths_free(s);
	lev_readpaths_free(s2);
}

static void an_unknown_workdir_leaves_relative_declarations_undetermined(void **state)
{
	char *g[] = { S("/data"), NULL }, *rel[] = { S("../shared"), NULL };

	(void)state;
	assert_int_equal(rep1("../shared", g, false, NULL, "/h"), LEV_GRANT_UNDETERMINED);
	assert_int_equal(rep1("../shared", rel, false, NULL, "/h"), LEV_GRANT_GRANTED);
	assert_int_equal(rep1("/data/x", g, false, NULL, "/h"), LEV_GRANT_GRANTED);
	assert_int_equal(rep1("/other", rel, false, NULL, "/h"), LEV_GRANT_NOT_GRANTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_and_whitespace_entries_are_refused),
		cmocka_unit_test(invalid_patterns_are_refused),
		cmocka_unit_test(a_relative_regex_is_refused),
		cmocka_unit_test(regex_bodies_cannot_break_out_of_the_anchors),
		cmocka_unit_test(tilde_user_forms_are_refused),
		cmocka_unit_test(tilde_without_a_home_is_refused),
		cmocka_unit_test(interior_dot_components_in_globs_are_refused),
		cmocka_unit_test(a_relative_glob_cannot_climb_past_the_root),
		cmocka_unit_test(entries_are_bounded),
		cmocka_unit_test(an_exact_root_grants_its_subtree_and_nothing_else),
		cmocka_unit_test(an_uncanonicalized_exact_root_still_matches),
		cmocka_unit_test(a_nonexistent_exact_root_never_matches),
		cmocka_unit_test(a_relative_exact_entry_resolves_against_the_workdir),
		cmocka_unit_test(tilde_exact_entries_expand_to_the_home_argument),
		cmocka_unit_test(star_stays_within_one_component_and_doublestar_crosses),
		cmocka_unit_test(character_classes_stay_in_one_component),
		cmocka_unit_test(pathological_patterns_finish),
		cmocka_unit_test(a_relative_glob_is_anchored_at_the_workdir),
		cmocka_unit_test(a_relative_glob_works_from_a_root_workdir),
		cmocka_unit_test(a_dots_only_glob_matches_the_folded_directory_itself),
		cmocka_unit_test(a_metachar_workdir_is_escaped_in_relative_globs),
		cmocka_unit_test(a_metachar_home_is_escaped_in_tilde_globs),
		cmocka_unit_test(backslash_glob_patterns_are_normalized),
		cmocka_unit_test(a_drive_letter_glob_never_matches_here),
		cmocka_unit_test(regexes_are_anchored_to_the_whole_path),
		cmocka_unit_test(a_metachar_home_is_escaped_in_tilde_regexes),
		cmocka_unit_test(a_drive_letter_regex_is_accepted),
		cmocka_unit_test(only_real_paths_are_matched),
		cmocka_unit_test(an_inactive_policy_declares_nothing),
		cmocka_unit_test(a_path_the_blueprint_never_declared_is_not_declared),
		cmocka_unit_test(a_declared_but_ungranted_path_is_not_granted),
		cmocka_unit_test(a_granted_path_is_allowed),
		cmocka_unit_test(a_broader_grant_covers_a_narrow_declaration),
		cmocka_unit_test(a_nonoverlapping_grant_does_not_help),
		cmocka_unit_test(the_blanket_override_honors_declarations_without_grants),
		cmocka_unit_test(an_empty_set_matches_nothing),
		cmocka_unit_test(find_reports_the_first_matching_entry),
		cmocka_unit_test(the_index_agrees_with_a_linear_scan),
		cmocka_unit_test(a_set_is_safe_to_share_between_threads),
		cmocka_unit_test(syntax_validation_accepts_well_formed_entries),
		cmocka_unit_test(syntax_validation_refuses_malformed_entries),
		cmocka_unit_test(the_broad_entry_heuristic_covers_each_shape),
		cmocka_unit_test(nothing_granted_means_every_entry_is_refused),
		cmocka_unit_test(the_blanket_override_grants_every_declaration),
		cmocka_unit_test(a_partial_grant_is_reported_entry_by_entry),
		cmocka_unit_test(a_grant_covers_a_declaration_written_differently),
		cmocka_unit_test(a_grant_for_a_sibling_directory_does_not_count),
		cmocka_unit_test(an_uncheckable_entry_is_undetermined_not_ungranted),
		cmocka_unit_test(a_declaration_that_cannot_compile_here_is_undetermined),
		cmocka_unit_test(a_malformed_config_grant_is_an_error),
		cmocka_unit_test(samples_are_built_from_each_kind),
		cmocka_unit_test(lexical_matching_covers_a_root_and_its_subtree),
		cmocka_unit_test(an_unknown_workdir_leaves_relative_declarations_undetermined),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
