/*
 * test-fsconfine.c - confinement beneath a directory fd, in both modes
 * (openat2, and the forced component-by-component walk), against the
 * bypass catalogue of threats-and-anchors.md §6 item 1: symlinks out,
 * dangling symlinks, ".." through a symlinked directory, /proc magic links,
 * and symlinks swapped by a racing thread.  Every test runs twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <seccomp.h>
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
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/error.h"
#include "liblev/policy/fsconfine.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define MARKER "MARKER-OUTSIDE-0xDEADBEEF"
#define RACE_ROUNDS 4000

static char T[PATH_MAX / 2];	/* scratch root (real path) */
static char WD[PATH_MAX];	/* T/wd */
static int wdfd = -1;

static const enum lev_confine_mode MODE_AUTO = LEV_CONFINE_AUTO;
static const enum lev_confine_mode MODE_WALK = LEV_CONFINE_WALK;

static void put(const char *rel, const char *content)
{
	char *p = xasprintf("%s/%s", T, rel);
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(content, f);
	fclose(f);
	free(p);
}

static void mk(const char *rel)
{
	char *p = xasprintf("%s/%s", T, rel);
	assert_int_equal(lev_mkdir_p(p, 0755, NULL), 0);
	free(p);
}

static void ln(const char *target, const char *rel)
{
	char *p = xasprintf("%s/%s", T, rel);
	if (symlink(target, p) < 0)
		fail_msg("symlink %s -> %s: %s", p, target, strerror(errno));
	free(p);
}

static int group_setup(void **state)
{
	char t[] = "/tmp/lev-fsconfine-XXXXXX";
	char *r, *abs;
	int i;

	(void)state;
	if (!mkdtemp(t))
		return -1;
	r = realpath(t, NULL);
	snprintf(T, sizeof(T), "%s", r);
	free(r);
	snprintf(WD, sizeof(WD), "%s/wd", T);
	mk("wd/sub/inner");
	mk("outside/dir");
	put("outside/secret.txt", MARKER "\n");
	put("outside/dir/secret.txt", MARKER "\n");
	put("wd/file.txt", "inside\n");
	put("wd/sub/deep.txt", "deep\n");
	put("wd/sub/inner/secret.txt", "inside-secret\n");
	ln("sub", "wd/link_in");
	abs = xasprintf("%s/sub", WD);
	ln(abs, "wd/link_abs_in");
	free(abs);
	ln("../outside", "wd/link_out");
	abs = xasprintf("%s/outside", T);
	ln(abs, "wd/link_out_abs");
	free(abs);
	ln("../outside/secret.txt", "wd/link_file_out");
	ln("nothere", "wd/dangling_in");
	ln("/nonexistent/lev/x", "wd/dangling_out");
	ln("loop2", "wd/loop1");
	ln("loop1", "wd/loop2");
	ln("/proc/self/root", "wd/proc_root");
	ln("..", "wd/sub/up");
	ln("../..", "wd/sub/upup");
	/* a chain of 39 relative links, and one of 41 */
	for (i = 0; i < 41; i++) {
		char name[64], target[64];
		snprintf(name, sizeof(name), "wd/chain%d", i);
		if (i == 0)
			snprintf(target, sizeof(target), "file.txt");
		else
			snprintf(target, sizeof(target), "chain%d", i - 1);
		ln(target, name);
	}
	wdfd = open(WD, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return wdfd < 0 ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	close(wdfd);
	return lev_rm_rf(T, NULL);
}

static enum lev_confine_mode M(void **state)
{
	return *(const enum lev_confine_mode *)*state;
}

/* Open REL beneath the workdir; returns 0 or -errno. */
static int co(void **state, const char *rel, int flags, int *fd)
{
	*fd = -1;
	return lev_confine_open(wdfd, WD, rel, flags, M(state), fd, NULL);
}

/* Read the whole fd into a fresh string. */
static char *slurp(int fd)
{
	char *s = NULL;
	size_t n = 0;

	if (lev_read_fd(fd, "x", 1 << 20, &s, &n, NULL) < 0)
		return xstrdup("<read error>");
	return s;
}

static void expect_content(void **state, const char *rel, const char *want)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *s = NULL;
	int r = co(state, rel, O_RDONLY, &fd);

	if (r < 0)
		fail_msg("'%s': %s", rel, strerror(-r));
	s = slurp(fd);
	assert_string_equal(s, want);
}

static void expect_err(void **state, const char *rel, int flags, int want)
{
	int fd = -1, r = co(state, rel, flags, &fd);

	if (fd >= 0)
		close(fd);
	if (r != want)
		fail_msg("'%s': got %d (%s), wanted %d (%s)", rel, r, r ? strerror(-r) : "ok", want,
			 strerror(-want));
}

/* ---- inside ------------------------------------------------------------- */

static void plain_paths_inside_the_root_open(void **state)
{
	expect_content(state, "file.txt", "inside\n");
	expect_content(state, "sub/deep.txt", "deep\n");
	expect_content(state, "./sub//deep.txt", "deep\n");
	expect_content(state, "sub/../file.txt", "inside\n");
}

static void the_root_itself_opens_as_empty_or_dot(void **state)
{
	int fds[2] = { -1, -1 };
	struct stat st;

	assert_int_equal(co(state, "", O_PATH, &fds[0]), 0);
	assert_int_equal(co(state, ".", O_RDONLY | O_DIRECTORY, &fds[1]), 0);
	assert_int_equal(fstat(fds[0], &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(fstat(fds[1], &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	close(fds[0]);
	close(fds[1]);
}

static void a_symlink_within_the_root_is_followed(void **state)
{
	expect_content(state, "link_in/deep.txt", "deep\n");
	/* the kernel refuses absolute symlinks beneath a root; the walk decides */
	expect_content(state, "link_abs_in/deep.txt", "deep\n");
	expect_content(state, "sub/up/file.txt", "inside\n");
}

static void dotdot_through_a_symlinked_directory_follows_the_target(void **state)
{
	/* link_in -> sub, so link_in/.. is the workdir (kernel semantics) */
	expect_content(state, "link_in/../file.txt", "inside\n");
	/* sub/up -> .., so sub/up/.. would be the workdir's parent: refused */
	expect_err(state, "sub/up/../outside/secret.txt", O_RDONLY, -EXDEV);
}

static void a_chain_of_symlinks_is_followed_up_to_the_limit(void **state)
{
	expect_content(state, "chain38", "inside\n");	/* 39 hops */
	expect_err(state, "chain40", O_RDONLY, -ELOOP);	/* 41 hops */
}

/* ---- escapes ------------------------------------------------------------- */

static void dotdot_and_absolute_escapes_are_refused(void **state)
{
	char *abs = xasprintf("%s/outside/secret.txt", T);

	expect_err(state, "../outside/secret.txt", O_RDONLY, -EXDEV);
	expect_err(state, "..", O_PATH, -EXDEV);
	expect_err(state, "sub/../../outside/secret.txt", O_RDONLY, -EXDEV);
	expect_err(state, abs, O_RDONLY, -EXDEV);
	expect_err(state, "/etc/passwd", O_RDONLY, -EXDEV);
	free(abs);
}

static void a_symlink_out_of_the_root_is_refused(void **state)
{
	expect_err(state, "link_out/secret.txt", O_RDONLY, -EXDEV);
	expect_err(state, "link_out", O_PATH, -EXDEV);
	expect_err(state, "link_out_abs/secret.txt", O_RDONLY, -EXDEV);
	expect_err(state, "link_file_out", O_RDONLY, -EXDEV);
	expect_err(state, "sub/upup/outside/secret.txt", O_RDONLY, -EXDEV);
	/* leaving and coming back is still leaving */
	expect_err(state, "link_out/../wd/file.txt", O_RDONLY, -EXDEV);
}

static void dangling_symlinks_do_not_open(void **state)
{
	expect_err(state, "dangling_in", O_RDONLY, -ENOENT);
	expect_err(state, "dangling_out", O_RDONLY, -EXDEV);
	expect_err(state, "loop1", O_RDONLY, -ELOOP);
}

static void magic_links_are_refused(void **state)
{
	_cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = -1, r;

	/* beneath the workdir, an absolute magic link is outside anyway */
	expect_err(state, "proc_root/etc/passwd", O_RDONLY, -EXDEV);
	/* beneath "/", /proc is inside, and its magic links are still refused */
	r = lev_confine_open(rootfd, "/", "proc/self/root/etc/passwd", O_RDONLY, M(state), &fd, NULL);
	assert_int_equal(r, -ELOOP);
	r = lev_confine_open(rootfd, "/", "proc/self/cwd", O_PATH, M(state), &fd, NULL);
	assert_int_equal(r, -ELOOP);
	r = lev_confine_open(rootfd, "/", "proc/self/fd/0", O_PATH, M(state), &fd, NULL);
	assert_int_equal(r, -ELOOP);
	r = lev_confine_open_abs("/proc/self/root/etc/passwd", O_PATH, M(state), &fd, NULL);
	assert_int_equal(r, -ELOOP);
	r = lev_confine_open_abs("/proc/self/cwd/x", O_PATH, M(state), &fd, NULL);
	assert_int_equal(r, -ELOOP);
	assert_int_equal(fd, -1);
}

static void creation_flags_are_refused(void **state)
{
	expect_err(state, "new.txt", O_WRONLY | O_CREAT, -EINVAL);
	expect_err(state, ".", O_RDWR | O_TMPFILE, -EINVAL);
}

static void a_trailing_slash_needs_a_directory(void **state)
{
	int fd = -1;

	expect_err(state, "file.txt/", O_PATH, -ENOTDIR);
	expect_err(state, "file.txt/x", O_PATH, -ENOTDIR);
	assert_int_equal(co(state, "sub/", O_PATH, &fd), 0);
	close(fd);
	expect_err(state, "file.txt", O_RDONLY | O_DIRECTORY, -ENOTDIR);
}

static void the_walk_bounds_its_depth(void **state)
{
	char rel[2 * (LEV_CONFINE_MAX_DEPTH + 8) + 1];
	char *p;
	size_t i;
	int fd = -1, r;

	for (i = 0; i < LEV_CONFINE_MAX_DEPTH + 8; i++) {
		rel[2 * i] = 'n';
		rel[2 * i + 1] = '/';
	}
	rel[2 * i - 1] = '\0';
	p = xasprintf("%s/deep/%s", T, rel);
	assert_int_equal(lev_mkdir_p(p, 0755, NULL), 0);
	free(p);
	p = xasprintf("deep/%s", rel);
	/* the depth bound is the walk's (it fails closed); openat2 has none */
	{
		_cleanup_close_ int tfd = open(T, O_PATH | O_DIRECTORY | O_CLOEXEC);
		r = lev_confine_open(tfd, T, p, O_PATH, M(state), &fd, NULL);
		if (M(state) == LEV_CONFINE_WALK || !lev_confine_have_openat2())
			assert_int_equal(r, -ENAMETOOLONG);
		else
			assert_int_equal(r, 0);
	}
	if (fd >= 0)
		close(fd);
	free(p);
}

/* ---- real paths and reopening ---------------------------------------------- */

static void the_real_path_is_read_back_from_the_fd(void **state)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *real = NULL, *want = xasprintf("%s/sub/deep.txt", WD);

	assert_int_equal(co(state, "link_in/deep.txt", O_PATH, &fd), 0);
	assert_int_equal(lev_confine_fd_path(fd, &real, NULL), 0);
	assert_string_equal(real, want);
}

static void a_deleted_file_has_no_verifiable_path(void **state)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *real = NULL, *p = xasprintf("%s/gone.txt", WD);
	struct lev_err err = LEV_ERR_INIT;
	int r;

	put("wd/gone.txt", "x");
	assert_int_equal(co(state, "gone.txt", O_PATH, &fd), 0);
	assert_int_equal(unlink(p), 0);
	r = lev_confine_fd_path(fd, &real, &err);
	assert_true(r == -ESTALE || r == -ENOENT);
	assert_null(real);
}

static void reopen_gives_the_same_object(void **state)
{
	_cleanup_close_ int pfd = -1, rfd = -1, dfd = -1, rdfd = -1;
	_cleanup_free_ char *s = NULL;

	assert_int_equal(co(state, "sub/deep.txt", O_PATH, &pfd), 0);
	assert_int_equal(lev_confine_reopen(pfd, O_RDONLY, &rfd, NULL), 0);
	s = slurp(rfd);
	assert_string_equal(s, "deep\n");
	assert_int_equal(co(state, "sub", O_PATH, &dfd), 0);
	assert_int_equal(lev_confine_reopen(dfd, O_RDONLY | O_DIRECTORY, &rdfd, NULL), 0);
	assert_true(fcntl(rdfd, F_GETFD) & FD_CLOEXEC);
	{
		int x = -1;
		assert_int_equal(lev_confine_reopen(pfd, O_RDONLY | O_DIRECTORY, &x, NULL), -ENOTDIR);
	}
}

static void abs_opens_follow_ordinary_symlinks(void **state)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *real = NULL, *p = xasprintf("%s/link_out/secret.txt", WD);
	_cleanup_free_ char *want = xasprintf("%s/outside/secret.txt", T);

	assert_int_equal(lev_confine_open_abs(p, O_PATH, M(state), &fd, NULL), 0);
	assert_int_equal(lev_confine_fd_path(fd, &real, NULL), 0);
	assert_string_equal(real, want);
	{
		int x = -1;
		assert_int_equal(lev_confine_open_abs("relative", O_PATH, M(state), &x, NULL),
				 -EINVAL);
		assert_int_equal(lev_confine_open_abs("/../..//etc/../etc/hostname", O_PATH,
						      M(state), &x, NULL), 0);
		close(x);
	}
}

static void every_fd_is_close_on_exec(void **state)
{
	_cleanup_close_ int a = -1, b = -1, c = -1;
	_cleanup_free_ char *p = xasprintf("%s/file.txt", WD);

	assert_int_equal(co(state, "file.txt", O_RDONLY, &a), 0);
	assert_int_equal(co(state, "link_abs_in/deep.txt", O_PATH, &b), 0);
	assert_int_equal(lev_confine_open_abs(p, O_PATH, M(state), &c, NULL), 0);
	assert_true(fcntl(a, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(b, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(c, F_GETFD) & FD_CLOEXEC);
}

/* ---- races -------------------------------------------------------------------- */

struct racer {
	atomic_bool stop;
	char *a, *dst;		/* a is swapped with dst, over and over */
	unsigned long swaps;
};

static void *race_main(void *arg)
{
	struct racer *r = arg;

	while (!atomic_load(&r->stop)) {
		/* RENAME_EXCHANGE swaps atomically: dst is always one of the two */
		if (syscall(SYS_renameat2, AT_FDCWD, r->a, AT_FDCWD, r->dst, 2 /* EXCHANGE */) == 0)
			r->swaps++;
	}
	return NULL;
}

/*
 * A thread keeps swapping REL (inside the workdir) between an inside object
 * and a symlink to the outside, while we open and read it thousands of
 * times.  No read may ever return the outside marker.
 */
static void run_race(void **state, const char *rel_name, const char *inside_kind,
		     const char *open_rel)
{
	struct racer rc;
	pthread_t th;
	int i, ok = 0, refused = 0;

	memset(&rc, 0, sizeof(rc));
	rc.dst = xasprintf("%s/%s", WD, rel_name);
	rc.a = xasprintf("%s/%s.alt", WD, rel_name);
	/* dst starts as the inside object, alt as the escaping symlink */
	if (!strcmp(inside_kind, "file")) {
		char *rel = xasprintf("wd/%s", rel_name);
		put(rel, "inside-race\n");
		free(rel);
		assert_int_equal(symlink("../outside/secret.txt", rc.a), 0);
	} else {
		char *rel = xasprintf("wd/%s/secret.txt", rel_name), *d = xasprintf("wd/%s", rel_name);
		mk(d);
		put(rel, "inside-race\n");
		free(rel);
		free(d);
		assert_int_equal(symlink("../outside/dir", rc.a), 0);
	}
	assert_int_equal(pthread_create(&th, NULL, race_main, &rc), 0);
	for (i = 0; i < RACE_ROUNDS; i++) {
		int fd = -1, r = co(state, open_rel, O_RDONLY, &fd);
		if (r == 0) {
			char *s = slurp(fd);
			close(fd);
			if (strstr(s, MARKER)) {
				atomic_store(&rc.stop, true);
				pthread_join(th, NULL);
				fail_msg("round %d: read bytes from outside the root", i);
			}
			assert_string_equal(s, "inside-race\n");
			free(s);
			ok++;
		} else {
			/* EAGAIN: the walk saw the swap and gave up: closed, not open */
			if (r != -EXDEV && r != -ENOENT && r != -ENOTDIR && r != -EAGAIN)
				fail_msg("round %d: unexpected error %s", i, strerror(-r));
			refused++;
		}
	}
	atomic_store(&rc.stop, true);
	pthread_join(th, NULL);
	print_message("# %s race (%s): %d reads inside, %d refused, %lu swaps\n", rel_name,
		      M(state) == LEV_CONFINE_WALK ? "walk" : "auto", ok, refused, rc.swaps);
	assert_int_equal(ok + refused, RACE_ROUNDS);
	free(rc.a);
	free(rc.dst);
}

static void a_symlink_swapped_under_the_open_never_leaks(void **state)
{
	const char *name = M(state) == LEV_CONFINE_WALK ? "racef_w" : "racef_a";
	run_race(state, name, "file", name);
}

static void a_directory_swapped_under_the_walk_never_leaks(void **state)
{
	const char *name = M(state) == LEV_CONFINE_WALK ? "raced_w" : "raced_a";
	char *rel = xasprintf("%s/secret.txt", name);
	run_race(state, name, "dir", rel);
	free(rel);
}

/* ---- the fallback is chosen when the kernel lacks openat2 ------------------------ */

static void without_openat2_auto_falls_back_and_stays_confined(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
		int fd = -1, code = 0;

		if (!f || seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0) < 0 ||
		    seccomp_load(f) < 0)
			_exit(3);
		seccomp_release(f);
		if (syscall(SYS_openat2, AT_FDCWD, "/", NULL, 0) != -1 || errno != ENOSYS)
			_exit(4);
		if (lev_confine_open(wdfd, WD, "link_abs_in/deep.txt", O_RDONLY, LEV_CONFINE_AUTO,
				     &fd, NULL) != 0)
			code |= 8;
		if (lev_confine_open(wdfd, WD, "link_out/secret.txt", O_RDONLY, LEV_CONFINE_AUTO,
				     &fd, NULL) != -EXDEV)
			code |= 16;
		if (lev_confine_open_abs("/proc/self/root/etc/passwd", O_PATH, LEV_CONFINE_AUTO, &fd,
					 NULL) != -ELOOP)
			code |= 32;
		if (lev_confine_have_openat2())
			code |= 64;
		_exit(code);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

#define BOTH(fn)                                                                        \
	{ #fn " (auto)", fn, NULL, NULL, (void *)&MODE_AUTO },                          \
	{ #fn " (walk)", fn, NULL, NULL, (void *)&MODE_WALK }

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(plain_paths_inside_the_root_open),
		BOTH(the_root_itself_opens_as_empty_or_dot),
		BOTH(a_symlink_within_the_root_is_followed),
		BOTH(dotdot_through_a_symlinked_directory_follows_the_target),
		BOTH(a_chain_of_symlinks_is_followed_up_to_the_limit),
		BOTH(dotdot_and_absolute_escapes_are_refused),
		BOTH(a_symlink_out_of_the_root_is_refused),
		BOTH(dangling_symlinks_do_not_open),
		BOTH(magic_links_are_refused),
		BOTH(creation_flags_are_refused),
		BOTH(a_trailing_slash_needs_a_directory),
		BOTH(the_walk_bounds_its_depth),
		BOTH(the_real_path_is_read_back_from_the_fd),
		BOTH(a_deleted_file_has_no_verifiable_path),
		BOTH(reopen_gives_the_same_object),
		BOTH(abs_opens_follow_ordinary_symlinks),
		BOTH(every_fd_is_close_on_exec),
		BOTH(a_symlink_swapped_under_the_open_never_leaks),
		BOTH(a_directory_swapped_under_the_walk_never_leaks),
		cmocka_unit_test(without_openat2_auto_falls_back_and_stays_confined),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
