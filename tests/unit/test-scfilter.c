/*
 * test-scfilter.c - the sandbox seccomp filter, installed for real in a
 * child process: what it refuses, what it lets through, and its rules.
 */
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/base/buf.h"
#include "liblev/sandbox/scfilter.h"

/* Run CHECK in a child under the filter for FLAGS; CHECK returns 0 when the
 * kernel answered as expected, else a line number. */
static int under_filter(unsigned flags, int (*check)(void))
{
	struct lev_scfilter f;
	int st;
	pid_t pid;

	assert_int_equal(lev_scfilter_build(flags, &f, NULL), 0);
	assert_true(f.len > 10);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || lev_scfilter_install(&f) < 0)
			_exit(200);
		_exit(check());
	}
	lev_scfilter_release(&f);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

#define EXPECT_ERRNO(call, e)                             \
	do {                                              \
		errno = 0;                                \
		if ((call) != -1 || errno != (e))         \
			return __LINE__ % 199 + 1;        \
	} while (0)

static int check_network_off(void)
{
	int fd;

	EXPECT_ERRNO(socket(AF_INET, SOCK_STREAM, 0), EPERM);
	EXPECT_ERRNO(socket(AF_INET6, SOCK_DGRAM, 0), EPERM);
	EXPECT_ERRNO(socket(AF_NETLINK, SOCK_RAW, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_socket, AF_INET | (1L << 32), SOCK_STREAM, 0), EPERM);
	{
		int sv[2];
		EXPECT_ERRNO(socketpair(AF_INET, SOCK_STREAM, 0, sv), EPERM);
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
			return 1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return 2;
	return 0;
}

static int check_network_on(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	return fd < 0 ? 3 : 0;
}

static int check_always_denied(void)
{
	char c = 'x';

	EXPECT_ERRNO(syscall(SYS_io_uring_setup, 4, NULL), EPERM);
	EXPECT_ERRNO(syscall(SYS_ptrace, 0, 1, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_process_vm_readv, 1, NULL, 0, NULL, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_bpf, 0, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_keyctl, 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_mount, "none", "/", "tmpfs", 0, NULL), EPERM);
	EXPECT_ERRNO(syscall(SYS_umount2, "/", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_open_tree, -1, "/", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_fsopen, "tmpfs", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_mount_setattr, -1, "/", 0, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_setns, 0, 0), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWUSER), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWNS), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWNET | CLONE_FILES), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone3, NULL, 0), ENOSYS);
	EXPECT_ERRNO(syscall(SYS_ioctl, 0, TIOCSTI, &c), EPERM);
	EXPECT_ERRNO(syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &c), EPERM);
	EXPECT_ERRNO(syscall(SYS_ioctl, 0, 0x541C /* TIOCLINUX */, &c), EPERM);
	return 0;
}

static int check_ordinary_calls_work(void)
{
	pid_t p;
	int st;

	if (unshare(CLONE_FILES) < 0)	/* no namespace flag: allowed */
		return 4;
	p = fork();			/* clone without namespace flags */
	if (p < 0)
		return 5;
	if (p == 0)
		_exit(7);
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
		return 6;
	if (getpid() <= 0)
		return 8;
	return 0;
}

/* A kernel without seccomp cannot run these: skip, unless it must work. */
static void need_seccomp(void)
{
	const char *must = getenv("LEV_TEST_MUST_WORK");

	if (lev_scfilter_probe() == 0)
		return;
	if (must && !strcmp(must, "1"))
		fail_msg("seccomp is unavailable and LEV_TEST_MUST_WORK=1");
	skip();
}

static void test_network_off_allows_only_unix_sockets(void **state)
{
	(void)state;
	need_seccomp();
	assert_int_equal(under_filter(0, check_network_off), 0);
}

static void test_network_on_allows_inet(void **state)
{
	(void)state;
	need_seccomp();
	assert_int_equal(under_filter(LEV_SCFILTER_NET, check_network_on), 0);
}

static void test_dangerous_calls_are_always_refused(void **state)
{
	(void)state;
	need_seccomp();
	assert_int_equal(under_filter(0, check_always_denied), 0);
	assert_int_equal(under_filter(LEV_SCFILTER_NET, check_always_denied), 0);
}

static void test_ordinary_calls_still_work(void **state)
{
	(void)state;
	need_seccomp();
	assert_int_equal(under_filter(0, check_ordinary_calls_work), 0);
}

static void test_describe_names_every_rule(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;

	(void)state;
	assert_int_equal(lev_scfilter_describe(0, &b), 0);
	assert_non_null(strstr(b.buf, "io_uring_setup: EPERM"));
	assert_non_null(strstr(b.buf, "clone3: ENOSYS"));
	assert_non_null(strstr(b.buf, "socket: EPERM unless AF_UNIX"));
	assert_non_null(strstr(b.buf, "ioctl: EPERM for TIOCSTI"));
	lev_buf_reset(&b);
	assert_int_equal(lev_scfilter_describe(LEV_SCFILTER_NET, &b), 0);
	assert_null(strstr(b.buf, "socket: "));
	assert_non_null(strstr(b.buf, "ptrace: EPERM"));
	lev_buf_release(&b);
}

/* What the network-only filter (kind none, network = false) leaves alone. */
static int check_net_only_leaves_the_rest(void)
{
	int fd;

	EXPECT_ERRNO(syscall(SYS_io_uring_setup, 4, NULL), EPERM);
	EXPECT_ERRNO(syscall(SYS_ptrace, 0, 1, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_pidfd_getfd, -1, 0, 0), EPERM);
	/* not network: the kernel answers, not the filter (EBADF, not EPERM) */
	errno = 0;
	if (syscall(SYS_setns, -1, 0) != -1 || errno != EBADF)
		return 9;
	if (unshare(CLONE_FILES) < 0)
		return 10;
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (fd < 0)
		return 11;
	close(fd);
	return 0;
}

static void test_network_only_filter(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;

	(void)state;
	assert_int_equal(lev_scfilter_describe(LEV_SCFILTER_NET_ONLY, &b), 0);
	assert_non_null(strstr(b.buf, "socket: EPERM unless AF_UNIX"));
	assert_non_null(strstr(b.buf, "ptrace: EPERM"));
	assert_null(strstr(b.buf, "mount: "));
	assert_null(strstr(b.buf, "keyctl: "));
	lev_buf_release(&b);
	need_seccomp();
	assert_int_equal(under_filter(LEV_SCFILTER_NET_ONLY, check_network_off), 0);
	assert_int_equal(under_filter(LEV_SCFILTER_NET_ONLY, check_net_only_leaves_the_rest), 0);
}

/*
 * The warm helper's filter (LEV_SCFILTER_CELLS): what a cell's set-up needs
 * reaches the kernel, which answers it (arguments it refuses before any
 * capability check: EINVAL or ENOENT, never the filter's EPERM); the rest
 * stays refused.
 */
static int cells_filtered;	/* set before under_filter(): the full filter refuses these */

static int check_cell_calls(void)
{
#define KERNEL(e) (cells_filtered ? EPERM : (e))
	EXPECT_ERRNO(syscall(SYS_mount, "none", "/nonexistent-lev-cell", "tmpfs", 0, NULL),
		     KERNEL(ENOENT));
	EXPECT_ERRNO(syscall(SYS_open_tree, -1, "/", ~0U), KERNEL(EINVAL));
	EXPECT_ERRNO(syscall(SYS_move_mount, -1, "", -1, "", ~0U), KERNEL(EINVAL));
	EXPECT_ERRNO(syscall(SYS_mount_setattr, -1, "/", ~0U, NULL, 0), KERNEL(EINVAL));
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWNS | CLONE_FS | SIGCHLD, 0, 0, 0, 0),
		     KERNEL(EINVAL));
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWPID | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM,
			     0, 0, 0, 0), KERNEL(EINVAL));
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWIPC | CLONE_SYSVSEM | SIGCHLD, 0, 0, 0, 0),
		     KERNEL(EINVAL));
#undef KERNEL
	return 0;
}

static int check_cells_keep_the_rest(void)
{
	char c = 'x';

	EXPECT_ERRNO(syscall(SYS_io_uring_setup, 4, NULL), EPERM);
	EXPECT_ERRNO(syscall(SYS_ptrace, 0, 1, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_bpf, 0, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_keyctl, 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_umount2, "/", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_pivot_root, "/", "/"), EPERM);
	EXPECT_ERRNO(syscall(SYS_fsopen, "tmpfs", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_setns, 0, 0), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWUSER), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWNS), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWPID), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWUTS | SIGCHLD, 0, 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWCGROUP | SIGCHLD, 0, 0, 0, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone3, NULL, 0), ENOSYS);
	EXPECT_ERRNO(syscall(SYS_ioctl, 0, TIOCSTI, &c), EPERM);
	return 0;
}

static void test_cells_filter(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;

	(void)state;
	assert_int_equal(lev_scfilter_describe(LEV_SCFILTER_CELLS, &b), 0);
	assert_non_null(strstr(b.buf, "\nmount: not filtered in a warm cell"));
	assert_non_null(strstr(b.buf, "\nmount_setattr: not filtered in a warm cell"));
	assert_non_null(strstr(b.buf, "\numount2: EPERM"));
	assert_non_null(strstr(b.buf, "\nunshare: EPERM with CLONE_NEW* flags"));
	assert_non_null(strstr(b.buf, "\nclone: EPERM with CLONE_NEWUSER, NEWNET, NEWUTS or NEWCGROUP"));
	assert_non_null(strstr(b.buf, "socket: EPERM unless AF_UNIX"));
	lev_buf_release(&b);
	need_seccomp();
	cells_filtered = 0;
	assert_int_equal(under_filter(LEV_SCFILTER_CELLS, check_cell_calls), 0);
	cells_filtered = 1;
	assert_int_equal(under_filter(0, check_cell_calls), 0);
	assert_int_equal(under_filter(LEV_SCFILTER_CELLS, check_cells_keep_the_rest), 0);
	assert_int_equal(under_filter(LEV_SCFILTER_CELLS, check_network_off), 0);
	assert_int_equal(under_filter(LEV_SCFILTER_CELLS | LEV_SCFILTER_NET, check_network_on), 0);
}

static void test_probe_answers(void **state)
{
	(void)state;
	need_seccomp();
	assert_int_equal(lev_scfilter_probe(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_network_off_allows_only_unix_sockets),
		cmocka_unit_test(test_network_on_allows_inet),
		cmocka_unit_test(test_dangerous_calls_are_always_refused),
		cmocka_unit_test(test_ordinary_calls_still_work),
		cmocka_unit_test(test_describe_names_every_rule),
		cmocka_unit_test(test_network_only_filter),
		cmocka_unit_test(test_cells_filter),
		cmocka_unit_test(test_probe_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
