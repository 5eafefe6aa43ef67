/*
 * lev-oci-helper - the main process of lev's warm containers.
 *
 *	lev-oci-helper serve SOCKET
 *	lev-oci-helper run [--timeout-ms N] [--seccomp FILE] -- ARGV...
 *
 * `serve` listens on SOCKET (in a directory lev bind-mounts) and runs one
 * command per connection, as described in src/liblev/sandbox/oci-proto.h: the
 * command gets the three descriptors lev sent as its stdio, a new session,
 * and (with LEV_OCI_FLAG_SECCOMP) lev's seccomp filter from
 * /.lev/seccomp.bpf; when it ends, or when lev says so, its process group
 * and every process it left behind are killed, and its status goes back.
 * As PID 1 of the container it also reaps orphans, and exits on SIGTERM.
 *
 * `run` is the same for one command given on the command line, for `<engine>
 * exec` when the fast path is not used; it exits with the command's code
 * (128+n when killed by signal n).
 *
 * Statically linked and free of liblev, so it runs in any image.  It is
 * non-dumpable, so the commands it starts (same uid) cannot read or write
 * its memory through /proc.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "liblev/sandbox/oci-proto.h"

#define FILTER_MAX_BYTES (4096 * 8)

static void reset_signals(void)
{
	struct sigaction sa;
	sigset_t none;
	int s;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (s = 1; s < _NSIG; s++)
		(void)sigaction(s, &sa, NULL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

static int load_filter(const char *path)
{
	static unsigned char buf[FILTER_MAX_BYTES];
	struct sock_fprog prog;
	ssize_t n;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, buf + got, sizeof(buf) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(buf))
			break;
	}
	close(fd);
	if (n < 0)
		return -errno;
	if (got == 0 || got % sizeof(struct sock_filter) != 0)
		return -EINVAL;
	prog.len = (unsigned short)(got / sizeof(struct sock_filter));
	prog.filter = (struct sock_filter *)buf;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
}

/* Kill every process whose parent is us (orphans reparented to a subreaper). */
static void kill_children(void)
{
	char path[64], buf[512];
	pid_t me = getpid();
	int round;

	for (round = 0; round < 64; round++) {
		DIR *d = opendir("/proc");
		struct dirent *de;
		int found = 0;

		if (!d)
			return;
		while ((de = readdir(d))) {
			long pid = strtol(de->d_name, NULL, 10);
			char *s;
			int fd;
			ssize_t n;

			if (pid <= 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n <= 0)
				continue;
			buf[n] = '\0';
			s = strrchr(buf, ')');
			if (!s || strlen(s) < 5)
				continue;
			/* ") S PPID ..." */
			if (strtol(s + 4, NULL, 10) == (long)me) {
				kill((pid_t)pid, SIGKILL);
				found++;
			}
		}
		closedir(d);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (!found)
			return;
	}
}

struct cmd {
	int fds[3];
	const char *cwd;
	char **argv;
	const char *filter;	/* NULL: none */
};

/* Fork the command; returns its pid (> 0), or -errno.  *execfd gets the read
 * end of a pipe that carries the errno when exec fails. */
static pid_t start(const struct cmd *c, int *execfd)
{
	int ep[2];
	pid_t pid;

	if (pipe2(ep, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(ep[0]);
		close(ep[1]);
		return -e;
	}
	if (pid == 0) {
		int e, i;

		close(ep[0]);
		(void)setsid();
		for (i = 0; i < 3; i++)
			if (c->fds[i] != i && dup2(c->fds[i], i) < 0)
				_exit(125);
		reset_signals();
		(void)syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
		if (c->cwd && chdir(c->cwd) < 0) {
			e = errno;
			goto fail;
		}
		if (c->filter) {
			int r = load_filter(c->filter);
			if (r < 0) {
				e = -r;
				goto fail;
			}
		}
		execvp(c->argv[0], c->argv);
		e = errno;
fail:
		(void)!write(ep[1], &e, sizeof(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	close(ep[1]);
	*execfd = ep[0];
	return pid;
}

/*
 * Wait for PID; a byte or EOF on CTL (when >= 0), or TIMEOUT_MS (when > 0),
 * kills it.  Returns its wait status; *exec_errno gets the exec failure.
 */
static int supervise(pid_t pid, int execfd, int ctl, uint32_t timeout_ms, int *exec_errno)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int st = 0;
	int waited_ms = 0;
	bool killed = false;

	*exec_errno = 0;
	for (;;) {
		struct pollfd pf[3];
		int nf = 0, n, i, tmo = 100;

		if (pidfd >= 0) {
			pf[nf].fd = pidfd;
			pf[nf++].events = POLLIN;
		}
		if (execfd >= 0) {
			pf[nf].fd = execfd;
			pf[nf++].events = POLLIN;
		}
		if (ctl >= 0 && !killed) {
			pf[nf].fd = ctl;
			pf[nf++].events = POLLIN;
		}
		n = poll(pf, (nfds_t)nf, tmo);
		if (n < 0 && errno != EINTR)
			break;
		if (n == 0 && timeout_ms) {
			waited_ms += tmo;
			if ((uint32_t)waited_ms >= timeout_ms && !killed) {
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				killed = true;
			}
		}
		for (i = 0; i < nf && n > 0; i++) {
			if (!pf[i].revents)
				continue;
			if (pf[i].fd == execfd) {
				int e;
				ssize_t k = read(execfd, &e, sizeof(e));

				if (k == (ssize_t)sizeof(e))
					*exec_errno = e;
				close(execfd);
				execfd = -1;
			} else if (pf[i].fd == ctl) {
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				killed = true;
			}
		}
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
	}
	if (execfd >= 0) {
		int e;

		if (read(execfd, &e, sizeof(e)) == (ssize_t)sizeof(e))
			*exec_errno = e;
		close(execfd);
	}
	if (pidfd >= 0)
		close(pidfd);
	/* what the command left behind goes with it */
	kill(-pid, SIGKILL);
	kill_children();
	return st;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static void answer(int s, int status, int exec_errno, int setup_errno)
{
	struct lev_oci_ans a = { LEV_OCI_ANS_MAGIC, status, exec_errno, setup_errno };

	(void)!send(s, &a, sizeof(a), MSG_NOSIGNAL);
}

/* One connection: receive, run, answer.  Runs in its own process. */
static void handle(int s)
{
	struct lev_oci_req req;
	struct msghdr mh;
	struct iovec iov;
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct cmsghdr *cm;
	struct cmd c = { { -1, -1, -1 }, NULL, NULL, NULL };
	char *payload = NULL, *p, *end;
	uint32_t i;
	ssize_t n;
	int execfd = -1, st, ee;
	pid_t pid;

	memset(&mh, 0, sizeof(mh));
	memset(&u, 0, sizeof(u));
	iov.iov_base = &req;
	iov.iov_len = sizeof(req);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	do
		n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return;		/* a readiness probe */
	cm = CMSG_FIRSTHDR(&mh);
	if (n != (ssize_t)sizeof(req) || req.magic != LEV_OCI_REQ_MAGIC || !cm ||
	    cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(3 * sizeof(int)) || (mh.msg_flags & MSG_CTRUNC)) {
		answer(s, 0, 0, EPROTO);
		return;
	}
	memcpy(c.fds, CMSG_DATA(cm), sizeof(c.fds));
	if (req.len == 0 || req.len > LEV_OCI_REQ_MAX || req.nstr < 2 ||
	    req.nstr > LEV_OCI_ARGS_MAX) {
		answer(s, 0, 0, E2BIG);
		return;
	}
	payload = malloc(req.len + 1);
	c.argv = calloc(req.nstr, sizeof(char *));
	if (!payload || !c.argv) {
		answer(s, 0, 0, ENOMEM);
		goto out;
	}
	if (read_full(s, payload, req.len) < 0) {
		answer(s, 0, 0, EPROTO);
		goto out;
	}
	payload[req.len] = '\0';
	p = payload;
	end = payload + req.len;
	for (i = 0; i < req.nstr; i++) {
		char *z = memchr(p, '\0', (size_t)(end - p));

		if (!z || p >= end) {
			answer(s, 0, 0, EPROTO);
			goto out;
		}
		if (i == 0)
			c.cwd = p;
		else
			c.argv[i - 1] = p;
		p = z + 1;
	}
	c.argv[req.nstr - 1] = NULL;
	c.filter = (req.flags & LEV_OCI_FLAG_SECCOMP) ? LEV_OCI_DIR "/" LEV_OCI_FILTER_NAME : NULL;

	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	pid = start(&c, &execfd);
	for (i = 0; i < 3; i++)
		close(c.fds[i]);
	if (pid < 0) {
		answer(s, 0, 0, (int)-pid);
		goto out;
	}
	st = supervise(pid, execfd, s, 0, &ee);
	answer(s, st, ee, 0);
out:
	free(payload);
	free(c.argv);
}

static int serve(const char *path)
{
	struct sockaddr_un sa;
	sigset_t set;
	int s, sfd;

	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		perror("lev-oci-helper: signalfd");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "lev-oci-helper: socket path too long\n");
		return 1;
	}
	strcpy(sa.sun_path, path);
	(void)unlink(path);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
	    listen(s, 64) < 0) {
		perror("lev-oci-helper: socket");
		return 1;
	}
	for (;;) {
		struct pollfd pf[2] = { { s, POLLIN, 0 }, { sfd, POLLIN, 0 } };

		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (pf[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
			    si.ssi_signo != SIGCHLD) {
				(void)unlink(path);
				return 0;
			}
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		}
		if (pf[0].revents) {
			int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
			pid_t pid;

			if (c < 0)
				continue;
			pid = fork();
			if (pid == 0) {
				close(s);
				close(sfd);
				handle(c);
				_exit(0);
			}
			close(c);
		}
	}
}

static int run_once(int argc, char **argv)
{
	struct cmd c;
	uint32_t timeout_ms = 0;
	int i, execfd = -1, st, ee;
	pid_t pid;

	memset(&c, 0, sizeof(c));
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc) {
			timeout_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--seccomp") && i + 1 < argc) {
			c.filter = argv[++i];
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else {
			fprintf(stderr, "lev-oci-helper: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "lev-oci-helper: no command\n");
		return 2;
	}
	c.fds[0] = 0;
	c.fds[1] = 1;
	c.fds[2] = 2;
	c.argv = argv + i;
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	pid = start(&c, &execfd);
	if (pid < 0) {
		fprintf(stderr, "lev-oci-helper: cannot start '%s': %s\n", argv[i], strerror((int)-pid));
		return 125;
	}
	st = supervise(pid, execfd, -1, timeout_ms, &ee);
	if (ee) {
		fprintf(stderr, "lev-oci-helper: cannot execute '%s': %s\n", argv[i], strerror(ee));
		return ee == ENOENT ? 127 : 126;
	}
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 125;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "run"))
		return run_once(argc, argv);
	fprintf(stderr, "usage: lev-oci-helper serve SOCKET\n"
			"       lev-oci-helper run [--timeout-ms N] [--seccomp FILE] -- ARGV...\n");
	return 2;
}
