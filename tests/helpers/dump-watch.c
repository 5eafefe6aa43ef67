/*
 * dump-watch - is any copy of a program's memory ever dumpable?  Checked
 * from outside at every system call of every process of a tree (t4605).
 *
 *	dump-watch OUT EXE CMD [ARG...]
 *
 * Runs CMD under a seccomp filter that hands every system call (but
 * sendmsg, which passes the filter's descriptor here) to this program
 * first (SECCOMP_RET_USER_NOTIF; it is let through unchanged).  At each
 * call of a process running EXE, it looks at that process from outside:
 * a process is dumpable when its /proc/PID/mem is owned by its own
 * effective uid (a process that is not dumpable has root's), which is what
 * lets another process of that user open its mem, environ, maps.  A *copy*
 * is a process running EXE that was not seen executing it (forked or
 * cloned: it holds a copy of its parent's memory).  Writes to OUT:
 *
 *	copy PID              the first call of each copy seen
 *	dumpable PID NR       a copy dumpable at its call NR, or a process that
 *	                      executed EXE dumpable again after it was seen not
 *	                      dumpable
 *	calls N               the calls seen, at the end
 *
 * Deterministic: a copy made dumpable for a moment is stopped at its next
 * call (the one that makes it non-dumpable again, at the latest) while it
 * still is.  The tree must not run as root (root's files are root's either
 * way).  Exit: CMD's status, 125 on a set-up failure.
 *
 *	dump-watch --fork [window]
 *
 * is the detector's own control: it makes itself non-dumpable and forks a
 * child that exits, after (with "window") making itself dumpable just for
 * one write, as lev's namespace children did for their uid maps.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_PROCS 65536

struct seen {
	int pid;
	unsigned char execd, copy, nondump, reported;
};

static struct seen procs[MAX_PROCS];
static size_t n_procs;
static char exe_path[PATH_MAX];
static FILE *out;

static struct seen *find(int pid)
{
	for (size_t i = n_procs; i > 0; i--)
		if (procs[i - 1].pid == pid)
			return &procs[i - 1];
	if (n_procs == MAX_PROCS)
		return NULL;
	procs[n_procs].pid = pid;
	return &procs[n_procs++];
}

static int runs_exe(int pid)
{
	char path[64], buf[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return strcmp(buf, exe_path) == 0;
}

/* PID's effective uid from /proc: 0, or -1 when it is gone. */
static int proc_euid(int pid, long *euid)
{
	char path[64], line[256];
	FILE *f;
	int got = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		long r;

		if (sscanf(line, "Uid: %ld %ld", &r, euid) == 2)
			got = 1;
	}
	fclose(f);
	return got ? 0 : -1;
}

static void check(int pid, int nr)
{
	char path[64];
	struct stat st;
	struct seen *s;
	int dumpable;
	long euid = -1;

	if (!runs_exe(pid) || proc_euid(pid, &euid) < 0) {
		if ((nr == SYS_execve || nr == SYS_execveat) && (s = find(pid)))
			s->execd = 1;
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	if (stat(path, &st) < 0 || !(s = find(pid)))
		return;
	dumpable = euid != 0 && (long)st.st_uid == euid;
	if (!s->execd && !s->copy) {
		s->copy = 1;
		fprintf(out, "copy %d\n", pid);
	}
	if (!dumpable) {
		s->nondump = 1;
	} else if ((s->copy || s->nondump) && !s->reported) {
		s->reported = 1;
		fprintf(out, "dumpable %d %d\n", pid, nr);
	}
	if (nr == SYS_execve || nr == SYS_execveat) {
		/* a fresh image from here (when the call succeeds) */
		s->execd = 1;
		s->copy = s->nondump = 0;
	}
}

/* In the child: every call but sendmsg goes to the listener, sent on SOCK. */
static void child(int sock, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sendmsg, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte = 'l';
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int fd;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(125);
	fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			  &prog);
	if (fd < 0)
		_exit(125);
	memset(u.buf, 0, sizeof(u.buf));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(sock, &msg, 0) != 1)
		_exit(125);
	/* from here every call waits for the parent, which has the listener */
	close(fd);
	close(sock);
	execvp(argv[0], argv);
	_exit(127);
}

static int recv_fd(int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int fd = -1;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static unsigned long supervise(int lfd)
{
	struct seccomp_notif_sizes sz;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	unsigned long calls = 0;

	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0)
		return 0;
	req = calloc(1, sz.seccomp_notif < sizeof(*req) ? sizeof(*req) : sz.seccomp_notif);
	resp = calloc(1, sz.seccomp_notif_resp < sizeof(*resp) ? sizeof(*resp)
							       : sz.seccomp_notif_resp);
	for (;;) {
		struct pollfd p = { lfd, POLLIN, 0 };

		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!(p.revents & POLLIN))
			break;	/* POLLHUP: every process of the tree is gone */
		memset(req, 0, sz.seccomp_notif);
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			break;
		}
		calls++;
		check((int)req->pid, req->data.nr);
		memset(resp, 0, sz.seccomp_notif_resp);
		resp->id = req->id;
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		(void)ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, resp);
	}
	free(req);
	free(resp);
	return calls;
}

static int fork_control(bool window)
{
	int st = 0;
	pid_t pid;

	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	pid = fork();
	if (pid == 0) {
		if (window)
			(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
		(void)!write(1, "forked\n", 7);
		(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		_exit(0);
	}
	if (pid < 0)
		return 125;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return 0;
}

int main(int argc, char **argv)
{
	int sv[2], lfd, st = 0;
	unsigned long calls;
	pid_t pid;

	if (argc >= 2 && !strcmp(argv[1], "--fork"))
		return fork_control(argc > 2 && !strcmp(argv[2], "window"));
	if (argc < 4) {
		fprintf(stderr, "usage: dump-watch OUT EXE CMD [ARG...]\n");
		return 125;
	}
	if (!realpath(argv[2], exe_path)) {
		fprintf(stderr, "dump-watch: '%s': %s\n", argv[2], strerror(errno));
		return 125;
	}
	out = fopen(argv[1], "we");
	if (!out || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		fprintf(stderr, "dump-watch: %s\n", strerror(errno));
		return 125;
	}
	setvbuf(out, NULL, _IOLBF, 0);
	pid = fork();
	if (pid < 0)
		return 125;
	if (pid == 0) {
		close(sv[0]);
		child(sv[1], argv + 3);
	}
	close(sv[1]);
	lfd = recv_fd(sv[0]);
	close(sv[0]);
	if (lfd < 0) {
		fprintf(stderr, "dump-watch: no seccomp listener (user notification unsupported?)\n");
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return 125;
	}
	calls = supervise(lfd);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	fprintf(out, "calls %lu\n", calls);
	fclose(out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
