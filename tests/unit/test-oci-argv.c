/*
 * test-oci-argv.c - the container backend's argv builders and mount rules,
 * exactly (leviath-spec §8 "Argv", Appendix A: crates/leviath-sys/src/sandbox.rs),
 * with the original's gaps fixed: --user, errors instead of dropped mounts.
 */
#include <errno.h>
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

#include "liblev/base/error.h"
#include "liblev/sandbox/sandbox-oci.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static void assert_argv(char **got, const char *const *want)
{
	size_t i;

	for (i = 0; want[i]; i++) {
		if (!got[i] || strcmp(got[i], want[i]) != 0) {
			print_error("argv[%zu]: got '%s', want '%s'\n", i, got[i] ? got[i] : "(end)",
				    want[i]);
			fail();
		}
	}
	if (got[i]) {
		print_error("argv[%zu]: extra '%s'\n", i, got[i]);
		fail();
	}
}

static struct lev_oci_run_cfg base_cfg(void)
{
	struct lev_oci_run_cfg c;

	memset(&c, 0, sizeof(c));
	c.engine = "docker";
	c.name = "lev-run1-00000000000000ab";
	c.run_id = "run1";
	c.owner = "host:42:777";
	c.uid = 1000;
	c.gid = 1001;
	c.image = "debian:bookworm-slim";
	c.network = true;
	c.workdir = "/home/me/proj";
	c.pids = 512;
	c.mem_bytes = 2147483648ULL;
	c.nofile = 1024;
	c.nproc = 1024;
	return c;
}

static void test_container_run_argv_with_network(void **state)
{
	struct lev_oci_run_cfg c = base_cfg();
	char *mounts[] = { (char *)"/opt/toolchain", NULL };
	const char *const want[] = {
		"docker", "run", "-d", "--rm", "--name", "lev-run1-00000000000000ab",
		"--label", "lev.sandbox=1", "--label", "lev.run=run1", "--label", "lev.owner=host:42:777",
		"--label", "lev.uid=1000",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--pids-limit", "512", "--memory", "2147483648",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"--user", "1000:1001", "--read-only", "--tmpfs", "/tmp",
		"-v", "/home/me/proj:/home/me/proj", "-w", "/home/me/proj",
		"-v", "/opt/toolchain:/opt/toolchain:ro",
		"--entrypoint", "sleep", "debian:bookworm-slim", "infinity", NULL,
	};
	char **v;

	(void)state;
	c.mounts = mounts;
	v = lev_oci_run_argv(&c);
	assert_argv(v, want);
	lev_strv_free(v);
}

static void test_container_run_argv_no_network_uses_none(void **state)
{
	struct lev_oci_run_cfg c = base_cfg();
	char **v;
	size_t i;
	bool found = false;

	(void)state;
	c.network = false;
	v = lev_oci_run_argv(&c);
	for (i = 0; v[i]; i++)
		if (!strcmp(v[i], "--network")) {
			assert_non_null(v[i + 1]);
			assert_string_equal(v[i + 1], "none");
			found = true;
		}
	assert_true(found);
	lev_strv_free(v);
	c.network = true;
	v = lev_oci_run_argv(&c);
	for (i = 0; v[i]; i++)
		assert_string_not_equal(v[i], "--network");
	lev_strv_free(v);
}

static void test_container_run_argv_with_the_fast_path_helper(void **state)
{
	struct lev_oci_run_cfg c = base_cfg();
	char *args[] = { (char *)"--runtime", (char *)"runc", NULL };
	char *hide_dirs[] = { (char *)"/home/me/proj/.ssh", NULL };
	char *hide_files[] = { (char *)"/home/me/proj/.netrc", NULL };
	const char *const want[] = {
		"/usr/bin/podman", "--runtime", "runc", "run", "-d", "--rm", "--name",
		"lev-run1-00000000000000ab",
		"--label", "lev.sandbox=1", "--label", "lev.run=run1", "--label", "lev.owner=host:42:777",
		"--label", "lev.uid=1000",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--pids-limit", "512", "--memory", "2147483648",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"--network", "none",
		"--user", "0:0", "--read-only", "--tmpfs", "/tmp",
		"-v", "/home/me/proj:/home/me/proj", "-w", "/home/me/proj",
		"-v", "/tmp/lev-oci-x/empty-dir:/home/me/proj/.ssh:ro",
		"-v", "/tmp/lev-oci-x/empty-file:/home/me/proj/.netrc:ro",
		"-v", "/tmp/lev-oci-x:/.lev:ro", "-v", "/tmp/lev-oci-x/sock:/.lev-sock",
		"--entrypoint", "/.lev/lev-oci-helper", "debian:bookworm-slim",
		"serve", "/.lev-sock/ctl", NULL,
	};
	char **v;

	(void)state;
	c.engine = "/usr/bin/podman";
	c.engine_args = args;
	c.network = false;
	c.rootless = true;
	c.helper_dir = "/tmp/lev-oci-x";
	c.sock_dir = "/tmp/lev-oci-x/sock";
	c.hide_dirs = hide_dirs;
	c.hide_files = hide_files;
	c.empty_dir = "/tmp/lev-oci-x/empty-dir";
	c.empty_file = "/tmp/lev-oci-x/empty-file";
	v = lev_oci_run_argv(&c);
	assert_argv(v, want);
	lev_strv_free(v);
}

static void test_container_run_argv_accepts_arbitrary_engine(void **state)
{
	struct lev_oci_run_cfg c = base_cfg();
	char **v;

	(void)state;
	c.engine = "/opt/bin/nerdctl";
	v = lev_oci_run_argv(&c);
	assert_string_equal(v[0], "/opt/bin/nerdctl");
	assert_string_equal(v[1], "run");
	lev_strv_free(v);
}

static void test_container_runs_as_the_invoking_user(void **state)
{
	struct lev_oci_run_cfg c = base_cfg();
	char **v;
	size_t i;

	(void)state;
	c.uid = 0;
	c.gid = 0;
	v = lev_oci_run_argv(&c);
	for (i = 0; v[i] && strcmp(v[i], "--user"); i++)
		;
	assert_non_null(v[i]);
	assert_string_equal(v[i + 1], "0:0");
	lev_strv_free(v);
}

static void test_container_exec_argv_shape(void **state)
{
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)"echo $HOME; rm -rf /", NULL };
	const char *const plain[] = {
		"docker", "exec", "-w", "/w/sub", "lev-x", "sh", "-c", "echo $HOME; rm -rf /", NULL,
	};
	const char *const helper[] = {
		"podman", "exec", "-i", "-w", "/w", "lev-x", "/.lev/lev-oci-helper", "run",
		"--timeout-ms", "60000", "--seccomp", "/.lev/seccomp.bpf", "--",
		"sh", "-c", "echo $HOME; rm -rf /", NULL,
	};
	char **v;

	(void)state;
	v = lev_oci_exec_argv("docker", NULL, "lev-x", "/w/sub", false, false, false, 60000, argv);
	assert_argv(v, plain);
	lev_strv_free(v);
	v = lev_oci_exec_argv("podman", NULL, "lev-x", "/w", true, true, true, 60000, argv);
	assert_argv(v, helper);
	lev_strv_free(v);
}

static void test_container_rm_argv_shape(void **state)
{
	char *args[] = { (char *)"--host", (char *)"unix:///x", NULL };
	const char *const docker[] = { "docker", "--host", "unix:///x", "rm", "-f", "lev-a", NULL };
	const char *const podman[] = { "/usr/bin/podman", "rm", "-f", "-t", "0", "lev-a", NULL };
	char **v;

	(void)state;
	v = lev_oci_rm_argv("docker", args, "lev-a");
	assert_argv(v, docker);
	lev_strv_free(v);
	v = lev_oci_rm_argv("/usr/bin/podman", NULL, "lev-a");
	assert_argv(v, podman);
	lev_strv_free(v);
}

static void test_container_ps_argv_shape(void **state)
{
	const char *const want[] = {
		"podman", "ps", "-a", "-q", "--filter", "label=lev.sandbox=1",
		"--filter", "label=lev.uid=1000", NULL,
	};
	char **v;

	(void)state;
	v = lev_oci_ps_argv("podman", NULL, 1000);
	assert_argv(v, want);
	lev_strv_free(v);
}

static void refused(const char *m, const char *why)
{
	struct lev_err err = LEV_ERR_INIT;

	if (lev_oci_mount_check(m, &err) != LEV_EUSAGE) {
		print_error("mount '%s' was not refused\n", m);
		fail();
	}
	if (!strstr(err.msg, m) || (why && !strstr(err.msg, why))) {
		print_error("mount '%s': message '%s' lacks '%s'\n", m, err.msg, why ? why : m);
		fail();
	}
}

static void test_forbidden_mounts_are_refused(void **state)
{
	static const char *const bad[] = {
		"/", "/proc", "/proc/1/root", "/sys", "/sys/fs/cgroup", "/dev", "/dev/sda", "/etc",
		"/etc/shadow", "/etc/", "/boot", "/run", "/run/user/1000", "/var/run",
		"/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock",
		"/var/run/podman", "/run/containerd", "/var/lib/docker", "/var/lib/containers/storage",
		"/var", "/var/lib", "//etc", "/etc//passwd",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused(bad[i], "not allowed");
}

static void test_relative_and_traversing_mounts_are_refused(void **state)
{
	(void)state;
	refused("opt/toolchain", "not absolute");
	refused("./x", "not absolute");
	refused("~/x", "not absolute");
	refused("/opt/../etc", "'..'");
	refused("/opt/toolchain/..", "'..'");
	refused("..", "not absolute");
}

static void test_a_ro_suffix_is_refused_with_a_hint(void **state)
{
	(void)state;
	refused("/opt/toolchain:ro", "always read-only");
	refused("/opt:/etc", "':'");
}

static void test_mount_rules_do_not_depend_on_the_host_platform(void **state)
{
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(lev_oci_mount_check("/etcetera", &err), 0);
	assert_int_equal(lev_oci_mount_check("/opt/toolchain", &err), 0);
	assert_int_equal(lev_oci_mount_check("/opt/toolchain/", &err), 0);
	assert_int_equal(lev_oci_mount_check("/home/me/project", &err), 0);
	assert_int_equal(lev_oci_mount_check("/data/..x", &err), 0);
	assert_int_equal(lev_oci_mount_check("/srv/run", &err), 0);
	refused("", NULL);
}

static void test_sanitize_replaces_unsafe_chars(void **state)
{
	char *n;

	(void)state;
	n = lev_oci_container_name("run/1 x;$(id)", 0xabcULL);
	assert_string_equal(n, "lev-run-1-x---id--0000000000000abc");
	free(n);
	n = lev_oci_container_name("ok_Run-2", 1);
	assert_string_equal(n, "lev-ok_Run-2-0000000000000001");
	free(n);
}

static void test_signatures_dedup_identical_configs_only(void **state)
{
	char *m1[] = { (char *)"/a", NULL };
	char *m2[] = { (char *)"/b", NULL };
	uint64_t a, b;

	(void)state;
	a = lev_oci_signature("podman", NULL, "img", false, m1, "/w");
	b = lev_oci_signature("podman", NULL, "img", false, m1, "/w");
	assert_true(a == b);
	assert_true(a != lev_oci_signature("podman", NULL, "img", true, m1, "/w"));
	assert_true(a != lev_oci_signature("podman", NULL, "img", false, m2, "/w"));
	assert_true(a != lev_oci_signature("podman", NULL, "img2", false, m1, "/w"));
	assert_true(a != lev_oci_signature("docker", NULL, "img", false, m1, "/w"));
	assert_true(a != lev_oci_signature("podman", NULL, "img", false, m1, "/w2"));
	assert_true(a != lev_oci_signature("podman", NULL, "img", false, NULL, "/w"));
}

static void test_detect_finds_executables_on_path_only(void **state)
{
	char dir[] = "/tmp/lev-test-oci-XXXXXX";
	char *path_env, *p, *found;

	(void)state;
	assert_non_null(mkdtemp(dir));
	p = lev_path_join(dir, "podman");
	assert_int_equal(lev_write_file_atomic(p, "#!/bin/sh\n", 10, 0755, NULL), 0);
	free(p);
	p = lev_path_join(dir, "docker");
	assert_int_equal(lev_write_file_atomic(p, "#!/bin/sh\n", 10, 0644, NULL), 0);
	free(p);
	path_env = xasprintf("/nonexistent:%s", dir);

	found = lev_oci_find_engine("podman", path_env);
	assert_non_null(found);
	assert_true(lev_endswith(found, "/podman"));
	free(found);
	assert_null(lev_oci_find_engine("docker", path_env));	/* not executable */
	assert_null(lev_oci_find_engine("nerdctl", path_env));
	found = lev_oci_find_engine("/bin/sh", path_env);	/* a path is used as is */
	assert_non_null(found);
	free(found);
	assert_null(lev_oci_find_engine("/nonexistent/engine", path_env));
	free(path_env);
	assert_int_equal(lev_rm_rf(dir, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_container_run_argv_with_network),
		cmocka_unit_test(test_container_run_argv_no_network_uses_none),
		cmocka_unit_test(test_container_run_argv_with_the_fast_path_helper),
		cmocka_unit_test(test_container_run_argv_accepts_arbitrary_engine),
		cmocka_unit_test(test_container_runs_as_the_invoking_user),
		cmocka_unit_test(test_container_exec_argv_shape),
		cmocka_unit_test(test_container_rm_argv_shape),
		cmocka_unit_test(test_container_ps_argv_shape),
		cmocka_unit_test(test_forbidden_mounts_are_refused),
		cmocka_unit_test(test_relative_and_traversing_mounts_are_refused),
		cmocka_unit_test(test_a_ro_suffix_is_refused_with_a_hint),
		cmocka_unit_test(test_mount_rules_do_not_depend_on_the_host_platform),
		cmocka_unit_test(test_sanitize_replaces_unsafe_chars),
		cmocka_unit_test(test_signatures_dedup_identical_configs_only),
		cmocka_unit_test(test_detect_finds_executables_on_path_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
