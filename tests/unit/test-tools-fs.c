/*
 * test-tools-fs.c - the five file tools and lev_fs_check(): workdir
 * confinement, [read_paths] decisions on real paths, refusal guidance,
 * atomic writes, races, and one answer from both the check and the tools.
 * Every filesystem test runs twice: openat2 and the forced walk.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/error.h"
#include "liblev/base/strv.h"
#include "liblev/tools/tools-fs.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define OUT_MARKER "OUTSIDE-MARKER-7f3a"
#define SSH_MARKER "SSH-SECRET-MARKER-91c2"
#define RACE_ROUNDS 3000

static char T[PATH_MAX / 2];
static const enum lev_confine_mode MODE_AUTO = LEV_CONFINE_AUTO;
static const enum lev_confine_mode MODE_WALK = LEV_CONFINE_WALK;

static char *tp(const char *rel)
{
	return xasprintf("%s/%s", T, rel);
}

static void put(const char *rel, const char *content, size_t len)
{
	char *p = tp(rel);
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(content, 1, len, f), len);
	fclose(f);
	free(p);
}

static void puts_(const char *rel, const char *content)
{
	put(rel, content, strlen(content));
}

static char *get(const char *rel)
{
	char *p = tp(rel), *s = NULL;

	if (lev_read_file(p, 1 << 30, &s, NULL, NULL) < 0)
		s = NULL;
	free(p);
	return s;
}

static bool exists(const char *rel)
{
	char *p = tp(rel);
	struct stat st;
	bool r = lstat(p, &st) == 0;

	free(p);
	return r;
}

static void mk(const char *rel)
{
	char *p = tp(rel);
	assert_int_equal(lev_mkdir_p(p, 0755, NULL), 0);
	free(p);
}

static void ln(const char *target, const char *rel)
{
	char *p = tp(rel);
	assert_int_equal(symlink(target, p), 0);
	free(p);
}

static void ln_abs(const char *target_rel, const char *rel)
{
	char *t = tp(target_rel);
	ln(t, rel);
	free(t);
}

static int group_setup(void **state)
{
	char t[] = "/tmp/lev-toolsfs-XXXXXX";
	char *r, *a, *b;

	(void)state;
	umask(022);
	if (!mkdtemp(t))
		return -1;
	r = realpath(t, NULL);
	snprintf(T, sizeof(T), "%s", r);
	free(r);
	mk("wd/sub");
	mk("wd/sub2");
	mk("home/.ssh");
	mk("granted/sub");
	mk("outside/dir");
	puts_("wd/file.txt", "hello\nworld\n");
	puts_("wd/lines.txt", "l1\nl2\nl3\nl4\nl5\n");
	puts_("wd/sub/a.txt", "a\n");
	puts_("wd/.hidden", "h\n");
	put("wd/binary.bin", "ab\0cd", 5);
	puts_("wd/bad_utf8.txt", "ab\xff" "cd\n");
	puts_("wd/empty.txt", "");
	puts_("home/.ssh/id_rsa", SSH_MARKER "\n");
	puts_("granted/doc.md", "granted doc\n");
	puts_("granted/sub/inner.md", "inner\n");
	puts_("outside/x.txt", OUT_MARKER "\n");
	puts_("outside/hardsrc.txt", "hardlinked\n");
	ln_abs("granted", "wd/to_granted");
	ln_abs("home/.ssh", "wd/to_ssh");
	ln("../outside/x.txt", "wd/rel_out");
	ln("nothere", "wd/dangling");
	ln("sub", "wd/in_link");
	ln("file.txt", "wd/in_file_link");
	ln_abs("outside", "wd/outlink_dir");
	ln_abs("home/.ssh/id_rsa", "granted/evil");
	ln("sub/inner.md", "granted/inlink");
	a = tp("outside/hardsrc.txt");
	b = tp("wd/hard.txt");
	assert_int_equal(link(a, b), 0);
	free(a);
	free(b);
	a = tp("wd/fifo");
	assert_int_equal(mkfifo(a, 0644), 0);
	free(a);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return lev_rm_rf(T, NULL);
}

static enum lev_confine_mode M(void **state)
{
	return *(const enum lev_confine_mode *)*state;
}

/* A context over T/wd.  DECL and GRANTS are NULL-terminated lists of
 * entries; "@/x" is expanded to T/x. */
static struct lev_fs_ctx *ctx_x(void **state, const char *const *decl, const char *const *grants,
				bool allow_bp)
{
	struct lev_fs_opts o;
	struct lev_fs_ctx *c = NULL;
	struct lev_err err = LEV_ERR_INIT;
	char **d = NULL, **g = NULL, *wd = tp("wd"), *home = tp("home");
	size_t i;

	for (i = 0; decl && decl[i]; i++)
		d = lev_strv_push_take(d, decl[i][0] == '@' ? tp(decl[i] + 2) : xstrdup(decl[i]));
	for (i = 0; grants && grants[i]; i++)
		g = lev_strv_push_take(g, grants[i][0] == '@' ? tp(grants[i] + 2) :
							       xstrdup(grants[i]));
	memset(&o, 0, sizeof(o));
	o.workdir = wd;
	o.agent = "tester";
	o.home = home;
	o.declared = d;
	o.grants = g;
	o.allow_blueprint = allow_bp;
	o.config_path = "/cfg/config.toml";
	o.confine = M(state);
	if (lev_fs_ctx_new(&o, &c, &err) < 0)
		fail_msg("ctx: %s", err.msg);
	lev_strv_free(d);
	lev_strv_free(g);
	free(wd);
	free(home);
	return c;
}

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })

static struct lev_fs_ctx *ctx0(void **state)
{
	return ctx_x(state, NULL, NULL, false);
}

/* read_file into a fresh string; *is_error set */
static char *rf(struct lev_fs_ctx *c, const char *path, bool *is_error)
{
	struct lev_fs_result r;

	lev_fs_read_file(c, path, 0, 0, &r);
	*is_error = r.is_error;
	assert_int_equal(strlen(r.text), r.len);
	return r.text;
}

static void expect_read(struct lev_fs_ctx *c, const char *path, const char *want)
{
	bool e;
	char *s = rf(c, path, &e);

	if (e || strcmp(s, want))
		fail_msg("read_file('%s') = '%s' (error %d), wanted '%s'", path, s, e, want);
	free(s);
}

/* read_file must fail, the text must contain NEEDLE, and no marker */
static char *expect_refusal(struct lev_fs_ctx *c, const char *path, const char *needle)
{
	bool e;
	char *s = rf(c, path, &e);

	if (!e || strncmp(s, "[error] ", 8) || (needle && !strstr(s, needle)))
		fail_msg("read_file('%s') = '%s', wanted an error with '%s'", path, s,
			 needle ? needle : "");
	assert_null(strstr(s, OUT_MARKER));
	assert_null(strstr(s, SSH_MARKER));
	return s;
}

/* ---- reading inside --------------------------------------------------------- */

static void read_file_reads_inside_the_workdir(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	char *abs = tp("wd/file.txt");

	expect_read(c, "file.txt", "hello\nworld\n");
	expect_read(c, abs, "hello\nworld\n");
	expect_read(c, "./sub/../file.txt", "hello\nworld\n");
	expect_read(c, "in_link/../file.txt", "hello\nworld\n");
	expect_read(c, "in_file_link", "hello\nworld\n");
	expect_read(c, "empty.txt", "");
	expect_read(c, "/dev/null", "");
	free(abs);
	lev_fs_ctx_free(c);
}

static void read_file_pages_by_lines(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	struct lev_fs_result r;

	lev_fs_read_file(c, "lines.txt", 2, 2, &r);
	assert_false(r.is_error);
	assert_true(lev_startswith(r.text, "l2\nl3\n[showing lines 2-3"));
	assert_non_null(strstr(r.text, "offset=4"));
	lev_fs_result_release(&r);
	lev_fs_read_file(c, "lines.txt", 4, 0, &r);
	assert_string_equal(r.text, "l4\nl5\n");
	lev_fs_result_release(&r);
	lev_fs_read_file(c, "lines.txt", 5, 1, &r);
	assert_string_equal(r.text, "l5\n");
	lev_fs_result_release(&r);
	lev_fs_read_file(c, "lines.txt", 9, 0, &r);
	assert_false(r.is_error);
	assert_non_null(strstr(r.text, "offset 9 is past the end"));
	assert_non_null(strstr(r.text, "which has 5 lines"));
	lev_fs_result_release(&r);
	lev_fs_ctx_free(c);
}

static void read_file_caps_its_output_with_a_note(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	struct lev_buf b = LEV_BUF_INIT;
	struct lev_fs_result r, r2;
	const char *note;
	unsigned long next;
	int i;

	for (i = 1; i <= 3000; i++)
		lev_buf_addf(&b, "line %06d %s\n", i, "................................................................................................");
	put("wd/big.txt", b.buf, b.len);
	lev_buf_release(&b);
	lev_fs_read_file(c, "big.txt", 0, 0, &r);
	assert_false(r.is_error);
	note = strstr(r.text, "[truncated at the 256 KiB output cap after line ");
	assert_non_null(note);
	assert_true((size_t)(note - r.text) <= LEV_FS_READ_CAP);
	assert_true(note[-1] == '\n');	/* cut at a line boundary */
	assert_int_equal(sscanf(strstr(note, "offset=") + 7, "%lu", &next), 1);
	lev_fs_read_file(c, "big.txt", next, 1, &r2);
	{
		char want[32];
		snprintf(want, sizeof(want), "line %06lu ", next);
		assert_true(lev_startswith(r2.text, want));
	}
	lev_fs_result_release(&r);
	lev_fs_result_release(&r2);

	/* a single line longer than the cap */
	{
		char *big = xmalloc(300 * 1024);
		memset(big, 'x', 300 * 1024);
		put("wd/oneline.txt", big, 300 * 1024);
		free(big);
	}
	lev_fs_read_file(c, "oneline.txt", 0, 0, &r);
	assert_false(r.is_error);
	assert_non_null(strstr(r.text, "is longer than the 256 KiB output cap"));
	lev_fs_result_release(&r);
	lev_fs_ctx_free(c);
}

static void read_file_refuses_what_is_not_text(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	char *s;
	int fd;

	free(expect_refusal(c, "binary.bin", "looks like a binary file"));
	free(expect_refusal(c, "sub", "is a directory; use list_dir"));
	free(expect_refusal(c, "fifo", "is not a regular file"));	/* and did not block */
	free(expect_refusal(c, "nothere.txt", "No such file or directory"));
	/* a huge (sparse) file */
	s = tp("wd/huge.bin");
	fd = open(s, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)LEV_FS_READ_FILE_MAX + 1), 0);
	close(fd);
	free(s);
	free(expect_refusal(c, "huge.bin", "is too large"));
	lev_fs_ctx_free(c);
}

static void invalid_utf8_is_replaced_and_noted(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	bool e;
	char *s = rf(c, "bad_utf8.txt", &e);

	assert_false(e);
	assert_true(lev_startswith(s, "ab\xef\xbf\xbd" "cd\n"));
	assert_non_null(strstr(s, "1 byte of 'bad_utf8.txt' was not valid UTF-8"));
	free(s);
	lev_fs_ctx_free(c);
}

static void bad_path_arguments_are_clear_errors(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	struct lev_fs_result r;
	json_t *args;

	free(expect_refusal(c, "", "path is empty"));
	free(expect_refusal(c, "bad\xff", "path is not valid UTF-8"));
	args = json_pack("{s:s%}", "path", "file.txt\0../../etc/passwd", (size_t)25);
	lev_fs_call(c, "read_file", args, &r);
	assert_true(r.is_error);
	assert_non_null(strstr(r.text, "NUL byte"));
	lev_fs_result_release(&r);
	json_decref(args);
	args = json_pack("{s:i}", "path", 3);
	lev_fs_call(c, "read_file", args, &r);
	assert_non_null(strstr(r.text, "'path' must be a string"));
	lev_fs_result_release(&r);
	json_decref(args);
	lev_fs_call(c, "chmod_file", NULL, &r);
	assert_true(r.is_error);
	lev_fs_result_release(&r);
	lev_fs_ctx_free(c);
}

/* ---- leaving the workdir ------------------------------------------------------- */

static void an_inactive_policy_keeps_the_workdir_error(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	char *abs = tp("outside/x.txt"), *s, *want;
	struct lev_fs_result r;

	s = expect_refusal(c, abs, "is outside the working directory");
	want = xasprintf("[error] path '%s' is outside the working directory (%s/wd); use a path "
			 "inside it - a relative path resolves against it (this agent's blueprint "
			 "declares no [read_paths], so nothing outside the working directory can be "
			 "read)", abs, T);
	assert_string_equal(s, want);
	/* the same words from list_dir and read_files */
	lev_fs_list_dir(c, abs, &r);
	assert_string_equal(r.text, want);
	lev_fs_result_release(&r);
	free(s);
	free(want);
	free(expect_refusal(c, "../outside/x.txt", "is outside the working directory"));
	free(expect_refusal(c, "rel_out", "resolves outside the working directory"));
	free(expect_refusal(c, "to_ssh/id_rsa", "through a symlink"));
	free(expect_refusal(c, "outlink_dir/x.txt", "through a symlink"));
	free(abs);
	lev_fs_ctx_free(c);
}

static void dangling_symlinks_are_missing_files(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);

	free(expect_refusal(c, "dangling", "cannot open 'dangling': No such file or directory"));
	lev_fs_ctx_free(c);
}

static void magic_links_are_never_followed(void **state)
{
	/* even when the user grants everything */
	struct lev_fs_ctx *c = ctx_x(state, L("/"), L("/"), false);
	char *p = xasprintf("/proc/self/root%s/outside/x.txt", T);
	char *q = xasprintf("/proc/%d/root%s/home/.ssh/id_rsa", (int)getpid(), T);
	char *abs = tp("outside/x.txt");

	free(expect_refusal(c, p, "magic link"));
	free(expect_refusal(c, q, "magic link"));
	free(expect_refusal(c, "/proc/self/cwd/x", "magic link"));
	/* the control: the same file by its real name is readable under that grant */
	expect_read(c, abs, OUT_MARKER "\n");
	free(p);
	free(q);
	free(abs);
	lev_fs_ctx_free(c);
}

static void hard_links_read_as_the_file_they_name(void **state)
{
	/* documented: a hard link inside the workdir is a file of the workdir */
	struct lev_fs_ctx *c = ctx0(state);

	expect_read(c, "hard.txt", "hardlinked\n");
	lev_fs_ctx_free(c);
}

static void read_tools_reach_a_declared_and_granted_outside_path(void **state)
{
	struct lev_fs_ctx *c = ctx_x(state, L("@/granted"), L("@/granted"), false);
	char *doc = tp("granted/doc.md"), *inner = tp("granted/sub/inner.md");
	char *dir = tp("granted");
	const char *paths[2] = { doc, inner };
	struct lev_fs_result r;

	expect_read(c, doc, "granted doc\n");
	lev_fs_read_files(c, paths, 2, &r);
	assert_false(r.is_error);
	assert_non_null(strstr(r.text, "granted doc"));
	assert_non_null(strstr(r.text, "inner\n"));
	lev_fs_result_release(&r);
	lev_fs_list_dir(c, dir, &r);
	assert_false(r.is_error);
	assert_string_equal(r.text, "doc.md\nevil@\ninlink@\nsub/\n");
	lev_fs_result_release(&r);
	/* through a symlink in the workdir, decided on the real path */
	expect_read(c, "to_granted/doc.md", "granted doc\n");
	/* a relative request that leaves and enters the grant */
	expect_read(c, "../granted/sub/../doc.md", "granted doc\n");
	free(doc), free(inner), free(dir);
	lev_fs_ctx_free(c);
}

static void an_ungranted_declaration_is_refused_with_guidance(void **state)
{
	struct lev_fs_ctx *c = ctx_x(state, L("@/granted"), NULL, false);
	char *doc = tp("granted/doc.md"), *entry = tp("granted"), *s, *want;

	s = expect_refusal(c, doc, "your config does not grant it");
	want = xasprintf("add allow = [\"%s\"] under [agent_read_paths.tester] in "
			 "/cfg/config.toml", entry);
	assert_non_null(strstr(s, want));
	assert_non_null(strstr(s, "allow_blueprint_read_paths = true under [security]"));
	free(s), free(want), free(doc), free(entry);
	lev_fs_ctx_free(c);
}

static void the_blanket_override_honors_declarations(void **state)
{
	char *g = xasprintf("glob:%s/granted/**", T);
	struct lev_fs_ctx *c = ctx_x(state, L(g), NULL, true);
	char *doc = tp("granted/doc.md"), *out = tp("outside/x.txt");

	free(g);
	expect_read(c, doc, "granted doc\n");
	free(expect_refusal(c, out, "not in this agent's [read_paths]"));
	free(doc), free(out);
	lev_fs_ctx_free(c);
}

static void a_symlink_inside_a_granted_directory_cannot_escape_it(void **state)
{
	char *g = xasprintf("glob:%s/granted/**", T), *evil = tp("granted/evil");
	char *inl = tp("granted/inlink"), *real = tp("home/.ssh/id_rsa"), *s;
	int k;

	/* an exact grant, a glob grant, and the blanket override */
	for (k = 0; k < 3; k++) {
		struct lev_fs_ctx *c =
			k == 0 ? ctx_x(state, L("@/granted"), L("@/granted"), false) :
			k == 1 ? ctx_x(state, L(g), L(g), false) :
				 ctx_x(state, L("@/granted"), NULL, true);
		s = expect_refusal(c, evil, "not in this agent's [read_paths]");
		assert_non_null(strstr(s, real));	/* names where it really leads */
		free(s);
		/* a symlink that stays inside the grant is fine */
		expect_read(c, inl, "inner\n");
		lev_fs_ctx_free(c);
	}
	free(g), free(evil), free(inl), free(real);
}

static void write_and_edit_stay_confined_despite_read_grants(void **state)
{
	struct lev_fs_ctx *c = ctx_x(state, L("/"), L("/"), true);
	char *newf = tp("granted/new.txt"), *doc = tp("granted/doc.md");
	struct lev_fs_result r;

	lev_fs_write_file(c, newf, "x", 1, &r);
	assert_true(r.is_error);
	assert_non_null(strstr(r.text, "write_file never writes outside the working directory"));
	lev_fs_result_release(&r);
	assert_false(exists("granted/new.txt"));
	lev_fs_edit_file(c, doc, "granted", 7, "GRANTED", 7, &r);
	assert_true(r.is_error);
	assert_non_null(strstr(r.text, "edit_file never writes outside"));
	lev_fs_result_release(&r);
	{
		char *s = get("granted/doc.md");
		assert_string_equal(s, "granted doc\n");
		free(s);
	}
	lev_fs_write_file(c, "to_granted/new.txt", "x", 1, &r);
	assert_true(r.is_error);
	lev_fs_result_release(&r);
	assert_false(exists("granted/new.txt"));
	free(newf), free(doc);
	lev_fs_ctx_free(c);
}

static void a_relative_request_reaches_a_relative_grant(void **state)
{
	struct lev_fs_ctx *c = ctx_x(state, L("../granted"), L("../granted"), false);
	char *dot = xasprintf("%s/granted/./doc.md", T);

	expect_read(c, "../granted/doc.md", "granted doc\n");
	expect_read(c, dot, "granted doc\n");
	free(expect_refusal(c, "../outside/x.txt", "not in this agent's [read_paths]"));
	free(dot);
	lev_fs_ctx_free(c);
}

static void refusals_do_not_reveal_whether_a_file_exists(void **state)
{
	struct lev_fs_ctx *c = ctx_x(state, L("@/granted"), L("@/granted"), false);
	char *there = tp("home/.ssh/id_rsa"), *absent = tp("home/.ssh/id_ed25519");
	char *a = expect_refusal(c, there, NULL), *b = expect_refusal(c, absent, NULL);
	char *wa = xasprintf("[error] path '%s' is outside the working directory and not in this "
			     "agent's [read_paths]", there);
	char *wb = xasprintf("[error] path '%s' is outside the working directory and not in this "
			     "agent's [read_paths]", absent);

	assert_string_equal(a, wa);
	assert_string_equal(b, wb);
	free(a), free(b), free(wa), free(wb), free(there), free(absent);
	lev_fs_ctx_free(c);
}


static void open_read_obeys_the_same_policy(void **state)
{
	struct lev_fs_ctx *c = ctx_x(state, L("@/granted"), NULL, false);
	char *doc = tp("granted/doc.md"), buf[16];
	struct lev_err err = LEV_ERR_INIT;
	int fd = -1;
	ssize_t n;

	assert_int_equal(lev_fs_open_read(c, "file.txt", false, &fd, &err), 0);
	n = read(fd, buf, sizeof(buf));
	assert_int_equal(n, 12);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	fd = -1;
	assert_int_equal(lev_fs_open_read(c, doc, false, &fd, &err), LEV_EDENIED);
	assert_non_null(strstr(err.msg, "your config does not grant it"));
	assert_int_equal(fd, -1);
	assert_int_equal(lev_fs_open_read(c, "nothere", false, &fd, &err), -ENOENT);
	assert_int_equal(lev_fs_open_read(c, "sub", false, &fd, &err), -EISDIR);
	assert_int_equal(lev_fs_open_read(c, "fifo", false, &fd, &err), -EINVAL);
	assert_int_equal(lev_fs_open_read(c, "sub", true, &fd, &err), 0);
	close(fd);
	free(doc);
	lev_fs_ctx_free(c);
}

/* ---- read_files and list_dir ----------------------------------------------------- */

static void read_files_reports_errors_per_file(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	char *out = tp("outside/x.txt"), *want;
	const char *paths[3] = { "file.txt", out, "nothere" };
	const char *bad[2] = { "nothere", "binary.bin" };
	struct lev_fs_result r;

	lev_fs_read_files(c, paths, 3, &r);
	assert_false(r.is_error);
	assert_true(lev_startswith(r.text, "### [file.txt]\nhello\nworld\n\n### ["));
	want = xasprintf("### [%s]\n[error] path '%s' is outside", out, out);
	assert_non_null(strstr(r.text, want));
	assert_non_null(strstr(r.text, "### [nothere]\n[error] cannot open 'nothere'"));
	assert_null(strstr(r.text, OUT_MARKER));
	lev_fs_result_release(&r);
	lev_fs_read_files(c, bad, 2, &r);
	assert_true(r.is_error);
	lev_fs_result_release(&r);
	lev_fs_read_files(c, NULL, 0, &r);
	assert_true(r.is_error);
	lev_fs_result_release(&r);
	free(out), free(want);
	lev_fs_ctx_free(c);
}

static void list_dir_sorts_and_marks_types(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	struct lev_fs_result r;

	if (!exists("wd/ls")) {
		mk("wd/ls");
		puts_("wd/ls/b.txt", "");
		puts_("wd/ls/.dot", "");
		puts_("wd/ls/A", "");
		mk("wd/ls/dir");
		ln("b.txt", "wd/ls/link");
		puts_("wd/ls/odd\xff" "name", "");
		puts_("wd/ls/new\nline", "");
	}
	lev_fs_list_dir(c, "ls", &r);
	assert_false(r.is_error);
	assert_string_equal(r.text,
			    ".dot\nA\nb.txt\ndir/\nlink@\n"
			    "new\\x0aline  [name is not plain UTF-8 text; shown escaped]\n"
			    "odd\\xffname  [name is not plain UTF-8 text; shown escaped]\n"
			    "[names flagged above cannot be passed to the file tools as written; "
			    "use the shell]\n");
	lev_fs_result_release(&r);
	lev_fs_list_dir(c, "sub2", &r);
	assert_string_equal(r.text, "(empty directory)\n");
	lev_fs_result_release(&r);
	lev_fs_list_dir(c, "file.txt", &r);
	assert_true(r.is_error);
	assert_non_null(strstr(r.text, "is not a directory; use read_file"));
	lev_fs_result_release(&r);
	lev_fs_list_dir(c, NULL, &r);
	assert_non_null(strstr(r.text, "file.txt\n"));
	assert_non_null(strstr(r.text, "fifo|\n"));
	lev_fs_result_release(&r);
	lev_fs_ctx_free(c);
}

/* ---- write_file ----------------------------------------------------------------------- */

static struct lev_fs_result wf(struct lev_fs_ctx *c, const char *path, const char *content)
{
	struct lev_fs_result r;

	lev_fs_write_file(c, path, content, strlen(content), &r);
	return r;
}

static void expect_write_refused(struct lev_fs_ctx *c, const char *path, const char *needle)
{
	struct lev_fs_result r = wf(c, path, "PWNED");

	if (!r.is_error || !strstr(r.text, needle))
		fail_msg("write_file('%s') = '%s', wanted an error with '%s'", path, r.text, needle);
	lev_fs_result_release(&r);
}

static bool no_temp_files(const char *rel)
{
	char *p = tp(rel);
	DIR *d = opendir(p);
	struct dirent *de;
	bool ok = true;

	free(p);
	if (!d)
		return false;
	while ((de = readdir(d)))
		if (lev_startswith(de->d_name, ".lev-tmp-"))
			ok = false;
	closedir(d);
	return ok;
}

static void write_file_creates_and_replaces_atomically(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	struct lev_fs_result r;
	struct stat st;
	char *p, *s;
	const char *nm = M(state) == LEV_CONFINE_WALK ? "w_new_w.txt" : "w_new_a.txt";

	r = wf(c, nm, "one\n");
	assert_false(r.is_error);
	assert_non_null(strstr(r.text, "created"));
	lev_fs_result_release(&r);
	p = xasprintf("%s/wd/%s", T, nm);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(chmod(p, 0600), 0);
	r = wf(c, nm, "two\n");
	assert_non_null(strstr(r.text, "updated"));
	lev_fs_result_release(&r);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);	/* kept */
	assert_int_equal(lev_read_file(p, 100, &s, NULL, NULL), 0);
	assert_string_equal(s, "two\n");
	free(s);
	free(p);
	assert_true(no_temp_files("wd"));
	/* missing parents are created, confined */
	r = wf(c, "newdir/a/b.txt", "deep\n");
	assert_false(r.is_error);
	lev_fs_result_release(&r);
	s = get("wd/newdir/a/b.txt");
	assert_string_equal(s, "deep\n");
	free(s);
	/* through a symlinked parent that stays inside */
	r = wf(c, "in_link/w.txt", "via link\n");
	assert_false(r.is_error);
	lev_fs_result_release(&r);
	s = get("wd/sub/w.txt");
	assert_string_equal(s, "via link\n");
	free(s);
	/* the null device swallows it */
	r = wf(c, "/dev/null", "nothing");
	assert_false(r.is_error);
	lev_fs_result_release(&r);
	lev_fs_ctx_free(c);
}

static void write_file_never_leaves_the_workdir(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	char *abs = tp("outside/w.txt"), *s;

	expect_write_refused(c, "../outside/w.txt", "is outside the working directory");
	expect_write_refused(c, abs, "is outside the working directory");
	/* through a symlinked parent that points out */
	expect_write_refused(c, "outlink_dir/w.txt", "through a symlink");
	assert_false(exists("outside/w.txt"));
	/* missing parents are not created through a link out either */
	expect_write_refused(c, "outlink_dir/newsub/w.txt", "through a symlink");
	assert_false(exists("outside/newsub"));
	/* a final component that is a symlink out is never followed */
	expect_write_refused(c, "rel_out", "is a symlink");
	s = get("outside/x.txt");
	assert_string_equal(s, OUT_MARKER "\n");
	free(s);
	/* nor one that stays inside (documented) */
	expect_write_refused(c, "in_file_link", "is a symlink");
	s = get("wd/file.txt");
	assert_string_equal(s, "hello\nworld\n");
	free(s);
	expect_write_refused(c, "sub", "is a directory");
	expect_write_refused(c, "sub/", "names a directory");
	expect_write_refused(c, "file.txt/x", "not a directory");
	expect_write_refused(c, "/proc/self/root/tmp/x", "is outside the working directory");
	free(abs);
	lev_fs_ctx_free(c);
}


static void paths_that_do_not_exist_yet_stay_confined(void **state)
{
	/* threats §6 item 2: a target created later must not be reachable early */
	struct lev_fs_ctx *c = ctx_x(state, L("@/granted"), L("@/granted"), false);
	bool walk = M(state) == LEV_CONFINE_WALK;
	const char *dd = walk ? "wd/dangdir_w" : "wd/dangdir_a";
	const char *fu = walk ? "wd/future_w" : "wd/future_a";
	const char *dtarget = walk ? "outside/newdir_w" : "outside/newdir_a";
	const char *ftarget = walk ? "outside/future_w.txt" : "outside/future_a.txt";
	char *w1 = xasprintf("%s/x.txt", dd + 3), *s;

	ln_abs(dtarget, dd);
	ln_abs(ftarget, fu);
	expect_write_refused(c, w1, "through a symlink");
	assert_false(exists(dtarget));
	expect_write_refused(c, fu + 3, "is a symlink");
	assert_false(exists(ftarget));
	free(expect_refusal(c, fu + 3, "not in this agent's [read_paths]"));
	/* once the outside file exists it is still refused, and the check agrees */
	puts_(ftarget, OUT_MARKER "\n");
	s = expect_refusal(c, fu + 3, "resolves to");
	free(s);
	{
		struct lev_fs_decision d;
		assert_int_equal(lev_fs_check(c, "read_file", fu + 3, &d, NULL), 0);
		assert_int_equal(d.verdict, LEV_DENY);
		lev_fs_decision_release(&d);
	}
	/* a granted directory created after the context still counts (exact roots
	 * are looked up again while they do not exist) */
	lev_fs_ctx_free(c);
	{
		const char *late = walk ? "late_w" : "late_a";
		char *root = tp(late), *f = xasprintf("%s/doc.md", root);
		char *rel = xasprintf("%s/doc.md", late);
		c = ctx_x(state, L(root), L(root), false);
		free(expect_refusal(c, f, NULL));
		mk(late);
		puts_(rel, "late\n");
		expect_read(c, f, "late\n");
		free(root), free(f), free(rel);
	}
	free(w1);
	lev_fs_ctx_free(c);
}

/* ---- edit_file -------------------------------------------------------------------------- */

static void edit_file_replaces_exactly_one_occurrence(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	const char *nm = M(state) == LEV_CONFINE_WALK ? "ed_w.txt" : "ed_a.txt";
	char *rel = xasprintf("wd/%s", nm), *p = tp(rel), *s;
	struct lev_fs_result r;
	struct stat st;

	puts_(rel, "alpha beta gamma beta aaa\n");
	assert_int_equal(chmod(p, 0640), 0);
	lev_fs_edit_file(c, nm, "alpha", 5, "ALPHA", 5, &r);
	assert_false(r.is_error);
	lev_fs_result_release(&r);
	s = get(rel);
	assert_string_equal(s, "ALPHA beta gamma beta aaa\n");
	free(s);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	lev_fs_edit_file(c, nm, "beta", 4, "B", 1, &r);
	assert_true(r.is_error);
	assert_non_null(strstr(r.text, "occurs 2 times"));
	lev_fs_result_release(&r);
	lev_fs_edit_file(c, nm, "aa", 2, "b", 1, &r);	/* overlapping: "aaa" holds it twice */
	assert_non_null(strstr(r.text, "occurs 2 times"));
	lev_fs_result_release(&r);
	lev_fs_edit_file(c, nm, "delta", 5, "D", 1, &r);
	assert_non_null(strstr(r.text, "was not found"));
	lev_fs_result_release(&r);
	lev_fs_edit_file(c, nm, "", 0, "D", 1, &r);
	assert_non_null(strstr(r.text, "old_str is empty"));
	lev_fs_result_release(&r);
	lev_fs_edit_file(c, "binary.bin", "ab", 2, "x", 1, &r);
	assert_non_null(strstr(r.text, "binary"));
	lev_fs_result_release(&r);
	lev_fs_edit_file(c, "missing.txt", "a", 1, "b", 1, &r);
	assert_non_null(strstr(r.text, "does not exist; create it with write_file"));
	lev_fs_result_release(&r);
	lev_fs_edit_file(c, "in_file_link", "hello", 5, "HELLO", 5, &r);
	assert_non_null(strstr(r.text, "is a symlink"));
	lev_fs_result_release(&r);
	lev_fs_edit_file(c, "rel_out", "OUTSIDE", 7, "x", 1, &r);
	assert_true(r.is_error);
	lev_fs_result_release(&r);
	s = get("outside/x.txt");
	assert_string_equal(s, OUT_MARKER "\n");
	free(s);
	s = get(rel);
	assert_string_equal(s, "ALPHA beta gamma beta aaa\n");
	free(s);
	assert_true(no_temp_files("wd"));
	free(rel), free(p);
	lev_fs_ctx_free(c);
}

static void the_json_entry_runs_each_tool(void **state)
{
	struct lev_fs_ctx *c = ctx0(state);
	const char *nm = M(state) == LEV_CONFINE_WALK ? "j_w.txt" : "j_a.txt";
	struct lev_fs_result r;
	json_t *a;

	a = json_pack("{s:s,s:s%}", "path", nm, "content", "x\0y\n", (size_t)4);
	lev_fs_call(c, "write_file", a, &r);
	assert_false(r.is_error);
	lev_fs_result_release(&r);
	json_decref(a);
	a = json_pack("{s:s,s:s,s:s}", "path", nm, "old_str", "x", "new_str", "z");
	lev_fs_call(c, "edit_file", a, &r);
	assert_true(r.is_error);	/* the file now holds a NUL: binary */
	lev_fs_result_release(&r);
	json_decref(a);
	a = json_pack("{s:s,s:i,s:i}", "path", "lines.txt", "offset", 3, "limit", 1);
	lev_fs_call(c, "read_file", a, &r);
	assert_true(lev_startswith(r.text, "l3\n"));
	lev_fs_result_release(&r);
	json_decref(a);
	a = json_pack("{s:i}", "offset", -1);
	json_object_set_new(a, "path", json_string("lines.txt"));
	lev_fs_call(c, "read_file", a, &r);
	assert_non_null(strstr(r.text, "non-negative integer"));
	lev_fs_result_release(&r);
	json_decref(a);
	a = json_pack("{s:[s,s]}", "paths", "file.txt", "lines.txt");
	lev_fs_call(c, "read_files", a, &r);
	assert_non_null(strstr(r.text, "### [lines.txt]\nl1"));
	lev_fs_result_release(&r);
	json_decref(a);
	lev_fs_call(c, "list_dir", NULL, &r);
	assert_non_null(strstr(r.text, "lines.txt\n"));
	lev_fs_result_release(&r);
	lev_fs_ctx_free(c);
}

/* ---- one answer from the check and the tools ---------------------------------------------- */

static bool is_policy_refusal(const char *s)
{
	return strstr(s, "outside the working directory") || strstr(s, "[read_paths]") ||
	       strstr(s, "never follows a symlink") || strstr(s, "magic link") ||
	       strstr(s, "does not grant");
}

static void run_tool(struct lev_fs_ctx *c, const char *tool, const char *path,
		     struct lev_fs_result *r)
{
	if (!strcmp(tool, "read_file"))
		lev_fs_read_file(c, path, 0, 0, r);
	else if (!strcmp(tool, "read_files"))
		lev_fs_read_files(c, &path, 1, r);
	else if (!strcmp(tool, "list_dir"))
		lev_fs_list_dir(c, path, r);
	else if (!strcmp(tool, "write_file"))
		lev_fs_write_file(c, path, "table\n", 6, r);
	else
		lev_fs_edit_file(c, path, "zzz-not-there", 13, "x", 1, r);
}

static void the_check_and_the_tools_give_the_same_answer(void **state)
{
	static const char *const tools[] = {
		"read_file", "read_files", "list_dir", "write_file", "edit_file",
	};
	static const char *const rel_paths[] = {
		"file.txt", "sub", "sub/a.txt", "in_link/a.txt", "in_file_link", "../outside/x.txt",
		"rel_out", "to_ssh/id_rsa", "to_granted/doc.md", "to_granted/evil", "dangling",
		"nothere/deeper.txt", "outlink_dir/x.txt", "../granted/doc.md", "../granted",
		"/dev/null", "fifo", "binary.bin", "../../../../../../etc/hostname",
		"in_link/../file.txt", "@/granted/inlink", "@/granted/evil", "@/granted/doc.md",
		"@/granted/missing.md", "@/home/.ssh/id_rsa", "@/home/.ssh/nothere",
		"@/outside/x.txt", "@/wd/file.txt", "/proc/self/root/etc/hostname",
	};
	struct lev_fs_ctx *ctxs[4];
	size_t ci, ti, pi;
	unsigned checked = 0, denied = 0;
	char *g = xasprintf("glob:%s/granted/**", T);

	ctxs[0] = ctx0(state);
	ctxs[1] = ctx_x(state, L("@/granted"), L("@/granted"), false);
	ctxs[2] = ctx_x(state, L(g, "@/home"), NULL, false);
	ctxs[3] = ctx_x(state, L("@/granted", "@/outside"), NULL, true);
	for (ci = 0; ci < 4; ci++) {
		for (ti = 0; ti < ARRAY_SIZE(tools); ti++) {
			for (pi = 0; pi < ARRAY_SIZE(rel_paths); pi++) {
				struct lev_fs_decision d;
				struct lev_fs_result r;
				struct lev_err err = LEV_ERR_INIT;
				char *path = rel_paths[pi][0] == '@' ? tp(rel_paths[pi] + 2) :
								   xstrdup(rel_paths[pi]);

				if (lev_fs_check(ctxs[ci], tools[ti], path, &d, &err) < 0)
					fail_msg("check %s %s: %s", tools[ti], path, err.msg);
				run_tool(ctxs[ci], tools[ti], path, &r);
				checked++;
				if (d.verdict == LEV_DENY) {
					char *want = strcmp(tools[ti], "read_files") ?
							     xasprintf("[error] %s", d.reason) :
							     xasprintf("### [%s]\n[error] %s\n", path,
								       d.reason);
					denied++;
					if (strcmp(r.text, want))
						fail_msg("ctx %zu %s '%s': check denied with '%s' but "
							 "the tool said '%s'", ci, tools[ti], path,
							 d.reason, r.text);
					free(want);
				} else if (r.is_error && is_policy_refusal(r.text)) {
					fail_msg("ctx %zu %s '%s': check allowed ('%s') but the tool "
						 "refused: '%s'", ci, tools[ti], path, d.reason,
						 r.text);
				}
				assert_null(strstr(r.text, SSH_MARKER));
				if (ci != 3 && strcmp(tools[ti], "write_file"))
					assert_null(strstr(r.text, OUT_MARKER));
				lev_fs_decision_release(&d);
				lev_fs_result_release(&r);
				free(path);
			}
		}
		lev_fs_ctx_free(ctxs[ci]);
	}
	free(g);
	print_message("# %u cases, %u denied\n", checked, denied);
	assert_true(denied > 0 && denied < checked);
}

static void the_check_reports_gate_and_real_path(void **state)
{
	struct lev_fs_ctx *c = ctx_x(state, L("@/granted"), L("@/granted"), false);
	struct lev_fs_decision d;
	char *want;

	assert_int_equal(lev_fs_check(c, "read_file", "in_link/a.txt", &d, NULL), 0);
	assert_int_equal(d.verdict, LEV_ALLOW);
	assert_int_equal(d.gate, LEV_FS_GATE_WORKDIR);
	want = tp("wd/sub/a.txt");
	assert_string_equal(d.path, want);
	free(want);
	lev_fs_decision_release(&d);

	assert_int_equal(lev_fs_check(c, "read_file", "to_granted/doc.md", &d, NULL), 0);
	assert_int_equal(d.verdict, LEV_ALLOW);
	assert_int_equal(d.gate, LEV_FS_GATE_READ_PATHS);
	want = tp("granted/doc.md");
	assert_string_equal(d.path, want);
	assert_non_null(strstr(d.reason, "your grant"));
	free(want);
	lev_fs_decision_release(&d);

	assert_int_equal(lev_fs_check(c, "list_dir", "to_ssh", &d, NULL), 0);
	assert_int_equal(d.verdict, LEV_DENY);
	assert_int_equal(d.gate, LEV_FS_GATE_READ_PATHS);
	want = tp("home/.ssh");
	assert_string_equal(d.path, want);
	free(want);
	lev_fs_decision_release(&d);

	assert_int_equal(lev_fs_check(c, "write_file", "to_granted/x", &d, NULL), 0);
	assert_int_equal(d.verdict, LEV_DENY);
	assert_int_equal(d.gate, LEV_FS_GATE_WORKDIR);
	lev_fs_decision_release(&d);

	/* a new file in new directories: allowed, and nothing is created */
	assert_int_equal(lev_fs_check(c, "write_file", "chk/new/dir/f.txt", &d, NULL), 0);
	assert_int_equal(d.verdict, LEV_ALLOW);
	want = tp("wd/chk/new/dir/f.txt");
	assert_string_equal(d.path, want);
	free(want);
	assert_false(exists("wd/chk"));
	lev_fs_decision_release(&d);

	{
		struct lev_err err = LEV_ERR_INIT;
		json_t *a = json_pack("{s:[s,s]}", "paths", "file.txt", "to_ssh/id_rsa");
		assert_int_equal(lev_fs_check(c, "shell", "x", &d, &err), LEV_EUSAGE);
		assert_int_equal(lev_fs_check(c, "read_file", "", &d, &err), LEV_EUSAGE);
		assert_int_equal(lev_fs_check_call(c, "read_files", a, &d, &err), 0);
		assert_int_equal(d.verdict, LEV_DENY);
		lev_fs_decision_release(&d);
		json_decref(a);
	}
	lev_fs_ctx_free(c);
}

static void bad_configuration_fails_the_context(void **state)
{
	struct lev_fs_opts o;
	struct lev_fs_ctx *c = NULL;
	struct lev_err err = LEV_ERR_INIT;
	char *wd = tp("wd");
	char *bad[] = { (char *)"regex:.*", NULL };

	memset(&o, 0, sizeof(o));
	o.workdir = wd;
	o.agent = "tester";
	o.home = "/nonexistent-home";
	o.confine = M(state);
	o.declared = bad;
	assert_true(lev_fs_ctx_new(&o, &c, &err) < 0);
	assert_non_null(strstr(err.msg, "agent 'tester' [read_paths]: read_paths entry 'regex:.*'"));
	o.declared = NULL;
	o.grants = bad;
	o.config_path = "/cfg/config.toml";
	lev_err_clear(&err);
	assert_true(lev_fs_ctx_new(&o, &c, &err) < 0);
	assert_non_null(strstr(err.msg, "read_paths grant in /cfg/config.toml"));
	o.grants = NULL;
	o.workdir = "/nonexistent/lev/workdir";
	assert_true(lev_fs_ctx_new(&o, &c, &err) < 0);
	assert_null(c);
	free(wd);
}

/* ---- races ------------------------------------------------------------------------------------- */

struct racer {
	atomic_bool stop;
	char *a, *dst;
};

static void *race_main(void *arg)
{
	struct racer *r = arg;

	while (!atomic_load(&r->stop))
		syscall(SYS_renameat2, AT_FDCWD, r->a, AT_FDCWD, r->dst, 2 /* RENAME_EXCHANGE */);
	return NULL;
}

static void race(struct lev_fs_ctx *c, const char *dst_rel, const char *good, const char *bad,
		 const char *read_path, const char *want)
{
	struct racer rc;
	pthread_t th;
	int i, ok = 0, refused = 0;

	memset(&rc, 0, sizeof(rc));
	rc.dst = tp(dst_rel);
	rc.a = xasprintf("%s.alt", rc.dst);
	assert_int_equal(symlink(good, rc.dst), 0);
	assert_int_equal(symlink(bad, rc.a), 0);
	assert_int_equal(pthread_create(&th, NULL, race_main, &rc), 0);
	for (i = 0; i < RACE_ROUNDS; i++) {
		struct lev_fs_result r;
		lev_fs_read_file(c, read_path, 0, 0, &r);
		if (strstr(r.text, SSH_MARKER) || strstr(r.text, OUT_MARKER)) {
			atomic_store(&rc.stop, true);
			pthread_join(th, NULL);
			fail_msg("round %d read forbidden bytes: %s", i, r.text);
		}
		if (r.is_error)
			refused++;
		else if (!strcmp(r.text, want))
			ok++;
		else
			fail_msg("round %d: unexpected '%s'", i, r.text);
		lev_fs_result_release(&r);
	}
	atomic_store(&rc.stop, true);
	pthread_join(th, NULL);
	print_message("# race on %s: %d read, %d refused\n", dst_rel, ok, refused);
	unlink(rc.dst);
	unlink(rc.a);
	free(rc.dst);
	free(rc.a);
}

static void a_symlink_swapped_in_a_granted_directory_never_leaks(void **state)
{
	struct lev_fs_ctx *c = ctx_x(state, L("@/granted"), L("@/granted"), false);
	bool walk = M(state) == LEV_CONFINE_WALK;
	char *ssh = tp("home/.ssh/id_rsa"), *rp = tp(walk ? "granted/race_w" : "granted/race_a");

	race(c, walk ? "granted/race_w" : "granted/race_a", "doc.md", ssh, rp, "granted doc\n");
	free(ssh), free(rp);
	lev_fs_ctx_free(c);
}

static void a_symlink_swapped_in_the_workdir_never_leaks(void **state)
{
	struct lev_fs_ctx *c = ctx_x(state, L("@/granted"), L("@/granted"), false);
	bool walk = M(state) == LEV_CONFINE_WALK;
	char *out = tp("outside/x.txt");

	puts_("wd/race_good.txt", "good\n");
	race(c, walk ? "wd/race_w" : "wd/race_a", "race_good.txt", out,
	     walk ? "race_w" : "race_a", "good\n");
	free(out);
	lev_fs_ctx_free(c);
	c = ctx0(state);
	out = tp("home/.ssh/id_rsa");
	race(c, walk ? "wd/race2_w" : "wd/race2_a", "race_good.txt", out,
	     walk ? "race2_w" : "race2_a", "good\n");
	free(out);
	lev_fs_ctx_free(c);
}

/* ---- lev's own files (issue 13) ------------------------------------------- */

/* A context whose workdir is a scratch home holding lev's data root. */
static struct lev_fs_ctx *ctx_home(void **state, bool default_root)
{
	struct lev_fs_opts o;
	struct lev_fs_ctx *c = NULL;
	struct lev_err err = LEV_ERR_INIT;
	char *wd = tp("uhome"), *root = tp("uhome/.leviath");

	memset(&o, 0, sizeof(o));
	o.workdir = wd;
	o.agent = "tester";
	o.home = wd;
	o.data_root = default_root ? NULL : root;
	o.confine = M(state);
	if (lev_fs_ctx_new(&o, &c, &err) < 0)
		fail_msg("ctx: %s", err.msg);
	free(wd);
	free(root);
	return c;
}

static void write_expect_refused(struct lev_fs_ctx *c, const char *path)
{
	struct lev_fs_result r;
	struct lev_fs_decision d;

	lev_fs_write_file(c, path, "pwned\n", 6, &r);
	if (!r.is_error || !strstr(r.text, "one of lev's own files"))
		fail_msg("write_file('%s') = '%s', wanted a refusal", path, r.text);
	lev_fs_result_release(&r);
	assert_int_equal(lev_fs_check(c, "write_file", path, &d, NULL), 0);
	assert_int_equal(d.verdict, LEV_DENY);
	lev_fs_decision_release(&d);
}

static void lev_own_files_are_never_written_even_inside_the_workdir(void **state)
{
	struct lev_fs_ctx *c;
	struct lev_fs_result r;
	char *abs = tp("uhome/.leviath/config.toml");
	char *s;

	mk("uhome/.leviath/rules");
	puts_("uhome/.leviath/policy.toml", "# policy\n");
	puts_("uhome/.leviath/config.toml", "# config\n");
	if (!exists("uhome/leviath-link"))
		ln(".leviath", "uhome/leviath-link");
	c = ctx_home(state, false);
	write_expect_refused(c, ".leviath/policy.toml");
	write_expect_refused(c, "./sub/../.leviath/policy.toml");
	write_expect_refused(c, abs);
	write_expect_refused(c, ".leviath/rules/new.lua");
	write_expect_refused(c, ".leviath/agents/x/agent.leviath");	/* not there yet */
	write_expect_refused(c, "leviath-link/policy.toml");		/* through a symlink */
	write_expect_refused(c, ".leviath");				/* the root itself */
	assert_false(exists("uhome/.leviath/agents"));			/* nothing created */
	lev_fs_edit_file(c, ".leviath/config.toml", "config", 6, "owned", 5, &r);
	assert_true(r.is_error);
	assert_non_null(strstr(r.text, "one of lev's own files"));
	lev_fs_result_release(&r);
	s = get("uhome/.leviath/policy.toml");
	assert_string_equal(s, "# policy\n");
	free(s);
	s = get("uhome/.leviath/config.toml");
	assert_string_equal(s, "# config\n");
	free(s);

	/* the benign twins in the same workdir */
	lev_fs_write_file(c, "notes.txt", "notes\n", 6, &r);
	assert_false(r.is_error);
	lev_fs_result_release(&r);
	lev_fs_write_file(c, ".leviath-notes/a.txt", "a\n", 2, &r);	/* a prefix is not a match */
	assert_false(r.is_error);
	lev_fs_result_release(&r);
	s = get("uhome/notes.txt");
	assert_string_equal(s, "notes\n");
	free(s);
	lev_fs_ctx_free(c);
	free(abs);
}

static void lev_own_files_default_to_the_environments_data_root(void **state)
{
	struct lev_fs_ctx *c;
	char *lh = tp("uhome");
	char *old = getenv("LEVIATH_HOME") ? xstrdup(getenv("LEVIATH_HOME")) : NULL;

	mk("uhome/.leviath");
	setenv("LEVIATH_HOME", lh, 1);
	c = ctx_home(state, true);
	write_expect_refused(c, ".leviath/policy.toml");
	lev_fs_ctx_free(c);
	if (old)
		setenv("LEVIATH_HOME", old, 1);
	else
		unsetenv("LEVIATH_HOME");
	free(old);
	free(lh);
}

#define BOTH(fn)                                                                        \
	{ #fn " (auto)", fn, NULL, NULL, (void *)&MODE_AUTO },                          \
	{ #fn " (walk)", fn, NULL, NULL, (void *)&MODE_WALK }

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(read_file_reads_inside_the_workdir),
		BOTH(read_file_pages_by_lines),
		BOTH(read_file_caps_its_output_with_a_note),
		BOTH(read_file_refuses_what_is_not_text),
		BOTH(invalid_utf8_is_replaced_and_noted),
		BOTH(bad_path_arguments_are_clear_errors),
		BOTH(an_inactive_policy_keeps_the_workdir_error),
		BOTH(dangling_symlinks_are_missing_files),
		BOTH(magic_links_are_never_followed),
		BOTH(hard_links_read_as_the_file_they_name),
		BOTH(read_tools_reach_a_declared_and_granted_outside_path),
		BOTH(an_ungranted_declaration_is_refused_with_guidance),
		BOTH(the_blanket_override_honors_declarations),
		BOTH(a_symlink_inside_a_granted_directory_cannot_escape_it),
		BOTH(write_and_edit_stay_confined_despite_read_grants),
		BOTH(a_relative_request_reaches_a_relative_grant),
		BOTH(refusals_do_not_reveal_whether_a_file_exists),
		BOTH(open_read_obeys_the_same_policy),
		BOTH(read_files_reports_errors_per_file),
		BOTH(write_file_creates_and_replaces_atomically),
		BOTH(write_file_never_leaves_the_workdir),
		BOTH(paths_that_do_not_exist_yet_stay_confined),
		BOTH(edit_file_replaces_exactly_one_occurrence),
		BOTH(the_json_entry_runs_each_tool),
		BOTH(the_check_and_the_tools_give_the_same_answer),
		BOTH(the_check_reports_gate_and_real_path),
		BOTH(bad_configuration_fails_the_context),
		BOTH(a_symlink_swapped_in_a_granted_directory_never_leaks),
		BOTH(a_symlink_swapped_in_the_workdir_never_leaks),
		BOTH(list_dir_sorts_and_marks_types),
		BOTH(lev_own_files_are_never_written_even_inside_the_workdir),
		BOTH(lev_own_files_default_to_the_environments_data_root),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
