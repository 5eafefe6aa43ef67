/*
 * test-landlock-rules.c - the Landlock layer, enforced for real in a child:
 * rights masked to the ABI, writes only beneath the granted directory, TCP
 * connect refused when handled, missing paths skipped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/sandbox/landlock-rules.h"
#include "liblev/base/util.h"

static int abi;
static char dir[] = "/tmp/lev-test-landlock-XXXXXX";
static char *allowed, *denied;

static int setup(void **state)
{
	(void)state;
	abi = lev_landlock_abi();
	if (!mkdtemp(dir))
		return -1;
	allowed = lev_path_join(dir, "allowed");
	denied = lev_path_join(dir, "denied");
	if (mkdir(allowed, 0700) < 0 || mkdir(denied, 0700) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	(void)lev_rm_rf(dir, NULL);
	free(allowed);
	free(denied);
	return 0;
}

static void need_landlock(void)
{
	const char *must = getenv("LEV_TEST_MUST_WORK");

	if (abi > 0)
		return;
	if (must && !strcmp(must, "1"))
		fail_msg("Landlock is unavailable and LEV_TEST_MUST_WORK=1");
	skip();
}

static int try_write(const char *d, const char *name)
{
	char *p = lev_path_join(d, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int e = fd < 0 ? errno : 0;

	if (fd >= 0)
		close(fd);
	free(p);
	return e;
}

static int run_child(const struct lev_landlock_spec *s, int (*check)(void))
{
	int st, failed = -2;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(100);
		if (lev_landlock_enforce(s, &failed) < 0)
			_exit(101);
		_exit(check());
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int check_fs(void)
{
	int fd;

	if (try_write(allowed, "f") != 0)
		return 1;
	if (try_write(denied, "f") != EACCES)
		return 2;
	fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);	/* reads stay open */
	if (fd < 0)
		return 3;
	close(fd);
	{
		char *sub = lev_path_join(denied, "sub");
		int ok = mkdir(sub, 0700) < 0 && errno == EACCES;

		free(sub);
		if (!ok)
			return 4;
	}
	return 0;
}

static void test_writes_only_beneath_the_granted_directory(void **state)
{
	struct lev_landlock_rule rules[] = {
		{ "/", LEV_LL_FS_READ },
		{ allowed, LEV_LL_FS_ALL },
		{ "/nonexistent/lev-test", LEV_LL_FS_ALL },	/* skipped, not an error */
		{ "/etc/passwd", LEV_LL_FS_ALL },		/* a file: masked to file rights */
	};
	struct lev_landlock_spec s;

	(void)state;
	need_landlock();
	memset(&s, 0, sizeof(s));
	s.abi = abi;
	s.handled_fs = lev_landlock_fs_rights(abi);
	s.rules = rules;
	s.n_rules = 4;
	assert_int_equal(run_child(&s, check_fs), 0);
	assert_int_equal(access(denied, F_OK), 0);
}

static int check_tcp(void)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return 10;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(9);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno != EACCES)
		return 11;
	return 0;
}

static void test_tcp_connect_is_refused_when_handled(void **state)
{
	struct lev_landlock_rule rules[] = { { "/", LEV_LL_FS_ALL } };
	struct lev_landlock_spec s;

	(void)state;
	need_landlock();
	if (abi < 4)
		skip();
	memset(&s, 0, sizeof(s));
	s.abi = abi;
	s.handled_fs = lev_landlock_fs_rights(abi);
	s.handled_net = lev_landlock_net_rights(abi);
	s.scoped = lev_landlock_scopes(abi);
	s.rules = rules;
	s.n_rules = 1;
	assert_int_equal(run_child(&s, check_tcp), 0);
}

static void test_rights_are_masked_to_the_abi(void **state)
{
	(void)state;
	assert_int_equal(lev_landlock_fs_rights(0), 0);
	assert_true(lev_landlock_fs_rights(1) == ((1ULL << 13) - 1));
	assert_true(lev_landlock_fs_rights(2) == ((1ULL << 14) - 1));
	assert_true(lev_landlock_fs_rights(3) == ((1ULL << 15) - 1));
	assert_true(lev_landlock_fs_rights(4) == ((1ULL << 15) - 1));
	assert_true(lev_landlock_fs_rights(5) == ((1ULL << 16) - 1));
	assert_true(lev_landlock_fs_rights(7) == LEV_LL_FS_ALL);
	assert_int_equal(lev_landlock_net_rights(3), 0);
	assert_true(lev_landlock_net_rights(4) == 3);
	assert_int_equal(lev_landlock_scopes(5), 0);
	assert_true(lev_landlock_scopes(6) == 3);
}

static void test_an_abi_below_one_is_refused(void **state)
{
	struct lev_landlock_spec s;

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(lev_landlock_enforce(&s, NULL), -EOPNOTSUPP);
}

static void test_names(void **state)
{
	char buf[256];

	(void)state;
	lev_landlock_fs_names(LEV_LL_FS_READ, buf, sizeof(buf));
	assert_string_equal(buf, "execute,read_file,read_dir");
	lev_landlock_fs_names(LEV_LL_FS_ALL, buf, 16);
	assert_true(strlen(buf) < 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writes_only_beneath_the_granted_directory),
		cmocka_unit_test(test_tcp_connect_is_refused_when_handled),
		cmocka_unit_test(test_rights_are_masked_to_the_abi),
		cmocka_unit_test(test_an_abi_below_one_is_refused),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
