/*
 * cmd_daemon.c - lev daemon [start|stop|restart|status|install|uninstall], and the
 * hidden command a run's worker process serves (lev __worker).
 *
 * `lev daemon` serves in the foreground and logs to stderr.  `lev daemon
 * start` detaches (a new session, stdin from /dev/null, the log appended to
 * <data root>/daemon.log) and returns once the socket answers; with a
 * daemon already running it says so and succeeds.  The lock
 * (<data root>/daemon.lock) keeps two daemons from ever running.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/client.h"
#include "liblev/daemon/daemon.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/sock.h"
#include "liblev/daemon/unit.h"
#include "liblev/daemon/worker.h"
#include "liblev/daemon/zygote.h"

/* Each worker's RLIMIT_DATA: one run's memory blow-up ends that run only. */
#define RUN_DATA_LIMIT ((uint64_t)4 << 30)

const char lev_usage_daemon[] =
	"usage: lev daemon [start|stop|restart|status|install|uninstall]\n"
	"\n"
	"With no action, run the daemon in the foreground, logging to stderr.\n"
	"\n"
	"  start     start it in the background (a no-op when one is running);\n"
	"            its log goes to <data root>/daemon.log\n"
	"  stop      stop it; its runs are cancelled\n"
	"  restart   stop it (when one runs), then start it\n"
	"  status    say whether a daemon answers, its pid and how many runs it holds\n"
	"  install   write a systemd --user unit (~/.config/systemd/user/lev.service)\n"
	"            running this lev's daemon, and enable and start it; where\n"
	"            systemd is not available it says so and exits 1\n"
	"  uninstall disable and stop it, and remove the unit\n"
	"\n"
	"The control socket is <data root>/daemon.sock (0600; the data root must be\n"
	"0700); Leviath's --socket is refused: LEVIATH_HOME=DIR moves the data root,\n"
	"socket and all, for the daemon and every command alike.  Exit status: 0 ok (status: running), 1 failed (status: not running),\n"
	"2 usage.\n";

static volatile sig_atomic_t d_stop;
static int d_pipe[2] = { -1, -1 };

static void on_stop(int sig)
{
	int saved = errno;

	(void)sig;
	d_stop = 1;
	if (d_pipe[1] >= 0)
		(void)!write(d_pipe[1], "x", 1);
	errno = saved;
}

static void log_line(void *data, const char *line)
{
	struct timespec ts;
	struct tm tm;
	char when[32];

	(void)data;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(stderr, "%s lev daemon: %s\n", when, line);
	fflush(stderr);
}

static int ready_fd = -1;

static void on_ready(void *data)
{
	(void)data;
	if (ready_fd >= 0) {
		(void)!write(ready_fd, "r", 1);
		close(ready_fd);
		ready_fd = -1;
	}
}

/* *OUT from seconds in variable NAME when it is set (1 s to a year); -1 said why. */
static int env_secs(const char *name, unsigned *out)
{
	const char *s = secure_getenv(name);
	uint64_t v;

	if (!s || !*s)
		return 0;
	if (lev_parse_u64(s, &v) < 0 || v < 1 || v > 86400 * 365) {
		lev_fail("%s: '%s' is not a number of seconds from 1 to 31536000", name, s);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

/* Serve in this process until stopped. */
static int serve(unsigned idle_exit_secs)
{
	struct lev_daemon_opts o = {
		.worker_exe = "/proc/self/exe",
		.idle_exit_secs = idle_exit_secs,
		.run_data_limit = RUN_DATA_LIMIT,
		.stop = &d_stop,
		.log = log_line,
		.ready = on_ready,
	};
	struct lev_err err = LEV_ERR_INIT;
	struct sigaction sa;

	/* LEV_DAEMON_ZYGOTE=0: every worker exec'd (a baseline for bench/) */
	{
		const char *z = secure_getenv("LEV_DAEMON_ZYGOTE");

		o.no_zygote = z && !strcmp(z, "0");
	}
	if (env_secs("LEV_DAEMON_RETENTION", &o.retention_secs) < 0 ||
	    env_secs("LEV_DAEMON_OLD_WORKER_GRACE", &o.old_worker_grace_secs) < 0)
		return LEV_EXIT_FAIL;
	if (pipe2(d_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return lev_fail("cannot make a pipe: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	o.stop_fd = d_pipe[0];
	/* tests with a sanitizer build have no use for a data limit */
#if defined(__SANITIZE_ADDRESS__)
	o.run_data_limit = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	o.run_data_limit = 0;
#endif
#endif
	if (lev_daemon_serve(&o, &err) < 0) {
		/* `lev daemon start` waits for this: it says why */
		if (ready_fd >= 0)
			(void)!write(ready_fd, err.msg, strlen(err.msg));
		return lev_fail("%s", err.msg);
	}
	return LEV_EXIT_OK;
}

int lev_daemon_start(bool quiet, unsigned idle_exit_secs)
{
	_cleanup_free_ char *root = NULL, *log = NULL;
	struct lev_err err = LEV_ERR_INIT;
	int p[2], status;
	pid_t pid;
	json_t *ping = NULL;
	char msg[LEV_ERR_MSG_MAX + 1];
	ssize_t n;
	int r = lev_client_ping_err(&ping, &err);

	/* a data root, socket or listener another user controls: never start over it */
	if (r == -EPERM)
		return lev_fail("%s", err.msg);
	lev_err_clear(&err);
	if (r == 0) {
		if (!quiet)
			printf("lev: a daemon is already running (pid %lld)\n",
			       (long long)json_integer_value(json_object_get(ping, "pid")));
		json_decref(ping);
		return LEV_EXIT_OK;
	}
	if (lev_datadir_root(&root, &err) < 0 || lev_datadir_ensure(root, &err) < 0)
		return lev_fail("%s", err.msg);
	log = lev_path_join(root, "daemon.log");
	if (pipe2(p, O_CLOEXEC) < 0)
		return lev_fail("cannot make a pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return lev_fail("cannot fork: %s", strerror(errno));
	if (pid == 0) {
		int null, fd;

		close(p[0]);
		/* nothing of the caller's stays open in the daemon but the pipe */
		if (p[1] > 3)
			close_range(3, (unsigned)p[1] - 1, 0);
		close_range((unsigned)p[1] + 1, ~0U, 0);
		if (setsid() < 0)
			_exit(LEV_EXIT_FAIL);
		pid = fork();
		if (pid != 0)
			_exit(pid < 0 ? LEV_EXIT_FAIL : LEV_EXIT_OK);
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
			  LEV_FILE_MODE);
		if (null < 0 || fd < 0 || dup2(null, STDIN_FILENO) < 0 ||
		    dup2(null, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
			_exit(LEV_EXIT_FAIL);
		close(null);
		close(fd);
		if (chdir("/") < 0)
			_exit(LEV_EXIT_FAIL);
		ready_fd = p[1];
		_exit(serve(idle_exit_secs));
	}
	close(p[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* the daemon writes "r" once it listens, or why it failed */
	n = read(p[0], msg, sizeof(msg) - 1);
	close(p[0]);
	if (n != 1 || msg[0] != 'r') {
		/* another start won the race: that is a daemon too */
		if (lev_client_ping(NULL))
			return LEV_EXIT_OK;
		if (n > 0) {
			msg[n] = '\0';
			return lev_fail("%s", msg);
		}
		return lev_fail("the daemon did not start; see '%s'", log);
	}
	if (!quiet && lev_client_ping(&ping)) {
		printf("lev: daemon started (pid %lld)\n",
		       (long long)json_integer_value(json_object_get(ping, "pid")));
		json_decref(ping);
	}
	return LEV_EXIT_OK;
}

static int stop(void)
{
	_cleanup_free_ char *lock = NULL;
	struct lev_err err = LEV_ERR_INIT;
	json_t *req = lev_proto_request("stop"), *reply = NULL;
	pid_t pid;
	int r;

	if (lev_sock_lock_path(&lock, &err) < 0) {
		json_decref(req);
		return lev_fail("%s", err.msg);
	}
	pid = lev_sock_lock_owner(lock);
	r = lev_client_call(req, &reply, &err);
	json_decref(req);
	json_decref(reply);
	if (r < 0) {
		if (r == -ENOENT || r == -ECONNREFUSED) {
			printf("lev: no daemon is running\n");
			return LEV_EXIT_OK;
		}
		return lev_fail("%s", err.msg);
	}
	/* gone once the lock is free */
	for (int i = 0; i < 600 && lev_sock_lock_owner(lock) == pid && pid; i++)
		usleep(50 * 1000);
	if (pid && lev_sock_lock_owner(lock) == pid)
		return lev_fail("the daemon (pid %d) is still running after 30 s", (int)pid);
	printf("lev: daemon stopped\n");
	return LEV_EXIT_OK;
}

static int status(void)
{
	_cleanup_free_ char *lock = NULL;
	json_t *ping = NULL;
	pid_t pid;

	if (lev_client_ping(&ping)) {
		printf("running: pid %lld, %lld run(s), %lld waiting for an answer\n",
		       (long long)json_integer_value(json_object_get(ping, "pid")),
		       (long long)json_integer_value(json_object_get(ping, "runs")),
		       (long long)json_integer_value(json_object_get(ping, "waiting")));
		/* a broken config edit: the last good copy is in force */
		if (json_is_string(json_object_get(ping, "config_error")))
			printf("config error: %s (the last good copy stays in force)\n",
			       json_string_value(json_object_get(ping, "config_error")));
		json_decref(ping);
		return LEV_EXIT_OK;
	}
	if (lev_sock_lock_path(&lock, NULL) == 0 && (pid = lev_sock_lock_owner(lock)) > 0) {
		printf("not answering: pid %d holds the lock but its socket does not answer\n",
		       (int)pid);
		return LEV_EXIT_FAIL;
	}
	printf("not running\n");
	return LEV_EXIT_FAIL;
}

/* ---- install, uninstall ----------------------------------------------------- */

static bool have_systemctl(void)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *copy = xstrdup(path ? path : "/usr/bin:/bin");
	char *save = NULL;

	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		_cleanup_free_ char *p = lev_path_join(*d ? d : ".", "systemctl");

		if (access(p, X_OK) == 0)
			return true;
	}
	return false;
}

/* `systemctl --user A1 [A2 [A3]]`: its exit status (127: it did not run). */
static int systemctl(const char *a1, const char *a2, const char *a3)
{
	char *argv[] = { (char *)"systemctl", (char *)"--user", (char *)a1, (char *)a2,
			 (char *)a3, NULL };
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return 127;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int no_systemd(const char *why, const char *unit)
{
	return lev_fail("systemd is not available here: %s; the unit is written to '%s': where "
			"systemd runs, enable it with 'systemctl --user daemon-reload' and "
			"'systemctl --user enable --now %s', or start the daemon with 'lev daemon "
			"start'",
			why, unit, LEV_UNIT_NAME);
}

static int install(void)
{
	_cleanup_free_ char *unit = NULL, *text = NULL;
	struct lev_err err = LEV_ERR_INIT;
	char exe[PATH_MAX];
	json_t *ping = NULL;

	if (!realpath("/proc/self/exe", exe))
		return lev_fail("cannot find the lev binary: %s", strerror(errno));
	if (lev_unit_path(&unit, &err) < 0)
		return lev_fail("%s", err.msg);
	text = lev_unit_text(exe, getenv("LEVIATH_HOME"), &err);
	if (!text || lev_unit_write(unit, text, &err) < 0)
		return lev_fail("%s", err.msg);
	printf("lev: wrote '%s' (ExecStart=%s daemon)\n", unit, exe);
	if (!have_systemctl())
		return no_systemd("no 'systemctl' on PATH", unit);
	if (systemctl("daemon-reload", NULL, NULL) != 0)
		return no_systemd("'systemctl --user daemon-reload' failed (no user session bus?)",
				  unit);
	if (lev_client_ping(&ping)) {
		lev_warn("a daemon is already running (pid %lld), and systemd's cannot start beside "
			 "it: run 'lev daemon stop', then 'systemctl --user restart %s'",
			 (long long)json_integer_value(json_object_get(ping, "pid")), LEV_UNIT_NAME);
		json_decref(ping);
	}
	if (systemctl("enable", "--now", LEV_UNIT_NAME) != 0)
		return lev_fail("'systemctl --user enable --now %s' failed", LEV_UNIT_NAME);
	printf("lev: installed: systemd starts the daemon at login and restarts it when it fails\n");
	return LEV_EXIT_OK;
}

static int uninstall(void)
{
	_cleanup_free_ char *unit = NULL;
	struct lev_err err = LEV_ERR_INIT;
	bool sd = have_systemctl();

	if (lev_unit_path(&unit, &err) < 0)
		return lev_fail("%s", err.msg);
	if (access(unit, F_OK) < 0 && errno == ENOENT) {
		printf("lev: no unit at '%s': nothing to uninstall\n", unit);
		return LEV_EXIT_OK;
	}
	if (!sd)
		lev_warn("systemd is not available here (no 'systemctl' on PATH): nothing to disable");
	else if (systemctl("disable", "--now", LEV_UNIT_NAME) != 0)
		lev_warn("'systemctl --user disable --now %s' failed; removing the unit anyway",
			 LEV_UNIT_NAME);
	if (unlink(unit) < 0)
		return lev_fail("cannot remove '%s': %s", unit, strerror(errno));
	if (sd)
		(void)systemctl("daemon-reload", NULL, NULL);
	printf("lev: removed '%s'\n", unit);
	return LEV_EXIT_OK;
}

int cmd_daemon(int argc, char **argv, struct lev_ctx *ctx)
{
	(void)ctx;
	for (int k = 1; k < argc; k++)
		if (!strcmp(argv[k], "--socket") || !strncmp(argv[k], "--socket=", 9))
			return lev_usage_error("daemon", "--socket is refused: the control socket is "
					       "<data root>/daemon.sock, in a directory lev checks is "
					       "yours and 0700, and every command finds it there; "
					       "LEVIATH_HOME=DIR gives the daemon and every command "
					       "another data root and socket");
	if (argc > 2)
		return lev_usage_error("daemon", "unexpected argument '%s'", argv[2]);
	if (argc == 1)
		return serve(0);
	if (!strcmp(argv[1], "start"))
		return lev_daemon_start(false, 0);
	if (!strcmp(argv[1], "stop"))
		return stop();
	if (!strcmp(argv[1], "restart")) {
		int r = stop();

		return r != LEV_EXIT_OK ? r : lev_daemon_start(false, 0);
	}
	if (!strcmp(argv[1], "status"))
		return status();
	if (!strcmp(argv[1], "install"))
		return install();
	if (!strcmp(argv[1], "uninstall"))
		return uninstall();
	return lev_usage_error("daemon", "unknown action '%s'", argv[1]);
}

int cmd_worker(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_err err = LEV_ERR_INIT;

	(void)ctx;
	if (argc > 2 || (argc == 2 && strcmp(argv[1], LEV_ZYGOTE_FLAG)) ||
	    fcntl(LEV_WORKER_FD, F_GETFD) < 0)
		return lev_fail("'%s' is for the daemon's own use", LEV_DAEMON_WORKER_CMD);
	if (argc == 2) {
		/* the zygote: back here only in a new worker, or at its end */
		int r = lev_zygote_serve(LEV_WORKER_FD, &err);

		if (r < 0)
			return lev_fail("zygote: %s", err.msg);
		if (r == 0)
			return LEV_EXIT_OK;
	}
	if (lev_worker_main(LEV_WORKER_FD, &err) < 0)
		return lev_fail("%s", err.msg);
	return LEV_EXIT_OK;
}

int lev_daemon_call(json_t *req, json_t **reply)
{
	struct lev_err err = LEV_ERR_INIT;
	int r = lev_client_call(req, reply, &err);

	json_decref(req);
	if (r < 0)
		return lev_fail("%s", err.msg);
	return LEV_EXIT_OK;
}

int lev_daemon_pages(const json_t *req, long page, const char *what,
		     bool (*later)(const char *next, const char *after),
		     void (*each)(json_t *reply, void *ud), void *ud)
{
	_cleanup_free_ char *after = NULL;

	for (;;) {
		json_t *r = json_deep_copy(req), *reply = NULL;
		const char *next;

		json_object_set_new(r, "limit", json_integer(page));
		if (after)
			json_object_set_new(r, "after", json_string(after));
		if (lev_daemon_call(r, &reply) != LEV_EXIT_OK)
			return LEV_EXIT_FAIL;
		each(reply, ud);
		next = lev_json_str(reply, "next");
		if (next && !later(next, after)) {
			json_decref(reply);
			return lev_fail("the daemon's pages of %s do not move on (after '%s')", what,
					after ? after : "");
		}
		free(after);
		after = next ? xstrdup(next) : NULL;
		json_decref(reply);
		if (!after)
			return LEV_EXIT_OK;
	}
}
