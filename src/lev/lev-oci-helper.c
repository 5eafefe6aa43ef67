/*
 * lev-oci-helper - the main process of lev's warm containers.
 *
 *	lev-oci-helper serve SOCKET
 *	lev-oci-helper run [--timeout-ms N] [--seccomp FILE] -- ARGV...
 *
 * `serve` listens on SOCKET (in a directory lev bind-mounts) and runs one
 * command per connection, as described in src/liblev/sandbox/oci-proto.h: the
 * command gets the three descriptors lev sent as its stdio, exactly the
 * environment lev sent, a new session, a PID namespace of its own (whose
 * first process dies with the per-connection supervisor, and whose end
 * kills everything the command started), no capabilities, and (with
 * LEV_OCI_FLAG_SECCOMP) lev's seccomp filter from /.lev/seccomp.bpf; when
 * it ends, or when lev says so, the namespace is killed and its status
 * goes back.  As PID 1 of the container it also reaps orphans, and exits
 * on SIGTERM.
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
#include <sched.h>
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
#include <stddef.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "liblev/sandbox/oci-proto.h"

#define FILTER_MAX_BYTES (4096 * 8)

extern char **environ;

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

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_ARCH AUDIT_ARCH_RISCV64
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#else
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i) + 4)
#endif
#define SUIDBITS (S_ISUID | S_ISGID)

/* NR with its mode in argument MODE: setuid/setgid bits are refused. */
#define BLOCK_MODE(nr, mode)                                                    \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 4),                         \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(mode)),                        \
	BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, SUIDBITS, 0, 1),                    \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),                    \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
/* ... only when argument FLAGS creates a file (O_CREAT, O_TMPFILE). */
#define BLOCK_CREATE(nr, flags, mode)                                           \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 6),                         \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(flags)),                       \
	BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_CREAT | __O_TMPFILE, 0, 3),       \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(mode)),                        \
	BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, SUIDBITS, 0, 1),                    \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),                    \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/*
 * No setuid or setgid file comes out of a command: every way to set those
 * bits (chmod and friends, creating a file with them: open, creat, mknod)
 * fails with EPERM, and openat2, whose mode the filter cannot read, with
 * ENOSYS (libc falls back to openat).  The workdir outlives the container,
 * and a setuid file there would be one on the host.  lev still walks the
 * workdir after a call that ran without this filter.
 */
static int load_nosuid_filter(void)
{
#ifdef NATIVE_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef __x86_64__
		/* the x32 ABI: its numbers carry bit 30 */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
#endif
#ifdef __NR_chmod
		BLOCK_MODE(__NR_chmod, 1),
#endif
		BLOCK_MODE(__NR_fchmod, 1),
		BLOCK_MODE(__NR_fchmodat, 2),
		BLOCK_MODE(__NR_fchmodat2, 2),
#ifdef __NR_creat
		BLOCK_MODE(__NR_creat, 1),
#endif
#ifdef __NR_mknod
		BLOCK_MODE(__NR_mknod, 1),
#endif
		BLOCK_MODE(__NR_mknodat, 2),
#ifdef __NR_open
		BLOCK_CREATE(__NR_open, 1, 2),
#endif
		BLOCK_CREATE(__NR_openat, 2, 3),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
#else
	return -ENOSYS;
#endif
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
	return load_nosuid_filter();
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
	char **envp;		/* NULL: ours */
	const char *filter;	/* NULL: none */
};

static int write_file(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int e;

	if (fd < 0)
		return -errno;
	n = write(fd, data, strlen(data));
	e = n == (ssize_t)strlen(data) ? 0 : (n < 0 ? -errno : -EIO);
	close(fd);
	return e;
}

/*
 * Move this process (the per-command supervisor) into a new user namespace
 * that maps only its own ids, and make its next child the first process of
 * a new PID namespace: when that child ends, the kernel kills everything
 * the command started, however deep; and from inside, the supervisor has
 * no PID and cannot be signalled.  0, or -errno (the caller falls back).
 */
static int enter_pidns(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int r;

	if (unshare(CLONE_NEWUSER | CLONE_NEWPID) < 0)
		return -errno;
	/* our /proc files belong to root while we are not dumpable: open them
	 * up for the three writes (nothing that could use that window can
	 * address us: earlier commands sit in PID namespaces of their own) */
	(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	r = write_file("/proc/self/uid_map", map);
	if (r == 0)
		r = write_file("/proc/self/setgroups", "deny\n");
	if (r == 0) {
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		r = write_file("/proc/self/gid_map", map);
	}
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return r;
}

/* Every capability we hold, gone (async-signal-safe); dropping the bounding
 * set needs CAP_SETPCAP, which the fallback path lacks: no_new_privs then
 * keeps exec from granting any. */
static int drop_caps(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	int cap;

	for (cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno == EINVAL)
			break;
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return 0;
}

/* In the child: become the command, or write the errno to EP and exit. */
static void become(const struct cmd *c, int ep)
{
	int e, i;

	for (i = 0; i < 3; i++)
		if (c->fds[i] != i && dup2(c->fds[i], i) < 0)
			_exit(125);
	reset_signals();
	(void)syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
	if (c->cwd && chdir(c->cwd) < 0) {
		e = errno;
		goto fail;
	}
	/* whatever the helper holds (the capabilities of a new user
	 * namespace; CAP_SETFCAP in a rootless container) is not the command's */
	if (drop_caps() < 0) {
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
	if (c->envp)
		environ = c->envp;
	execvp(c->argv[0], c->argv);
	e = errno;
fail:
	(void)!write(ep, &e, sizeof(e));
	_exit(e == ENOENT ? 127 : 126);
}

/*
 * The first process of the command's PID namespace: run the command, reap
 * whatever ends up with us, and when the command ends send its wait status
 * on SP and exit, which kills the rest of the namespace.  It dies with its
 * parent, the supervisor.
 */
static void ns_init(const struct cmd *c, int ep, int sp, pid_t parent)
{
	pid_t cmd;
	int st = 0;

	/* (no getppid() check for a parent that died before this: from inside
	 * the new namespace the parent has no PID; the supervisor can die only
	 * by a signal from outside, and the SIGPIPE on SP ends us then) */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	(void)parent;
	(void)setsid();
	cmd = fork();
	if (cmd < 0) {
		int e = errno;

		(void)!write(ep, &e, sizeof(e));
		_exit(126);
	}
	if (cmd == 0) {
		close(sp);
		become(c, ep);
	}
	close(ep);
	for (;;) {
		int s;
		pid_t w = waitpid(-1, &s, 0);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			break;
		if (w == cmd) {
			st = s;
			break;
		}
	}
	(void)!write(sp, &st, sizeof(st));
	_exit(0);
}

/*
 * Fork the command; returns the pid of our child (> 0), or -errno.  *execfd
 * gets the read end of a pipe that carries the errno when exec fails, and
 * with a PID namespace *statfd the command's wait status (else -1).
 */
static pid_t start(const struct cmd *c, bool pidns, int *execfd, int *statfd)
{
	int ep[2], sp[2] = { -1, -1 };
	pid_t pid, me = getpid();

	if (pipe2(ep, O_CLOEXEC) < 0)
		return -errno;
	if (pidns && pipe2(sp, O_CLOEXEC) < 0) {
		int e = errno;

		close(ep[0]);
		close(ep[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(ep[0]);
		close(ep[1]);
		if (sp[0] >= 0) {
			close(sp[0]);
			close(sp[1]);
		}
		return -e;
	}
	if (pid == 0) {
		close(ep[0]);
		if (pidns) {
			close(sp[0]);
			ns_init(c, ep[1], sp[1], me);
		}
		(void)setsid();
		become(c, ep[1]);
	}
	close(ep[1]);
	*execfd = ep[0];
	*statfd = -1;
	if (pidns) {
		close(sp[1]);
		*statfd = sp[0];
	}
	return pid;
}

/*
 * Wait for PID; a byte or EOF on CTL (when >= 0), or TIMEOUT_MS (when > 0),
 * kills it.  Returns its wait status (with a PID namespace, the command's,
 * read from STATFD); *exec_errno gets the exec failure.
 */
static int supervise(pid_t pid, int execfd, int statfd, int ctl, uint32_t timeout_ms,
		     int *exec_errno)
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
	if (statfd >= 0) {
		int cst;

		/* the namespace's first process passes the command's status on;
		 * nothing means it was killed before the command ended */
		if (!killed && read(statfd, &cst, sizeof(cst)) == (ssize_t)sizeof(cst))
			st = cst;
		else if (!WIFSIGNALED(st))
			st = SIGKILL;
		close(statfd);
	}
	/* what the command left behind goes with it (with a PID namespace
	 * the kernel has done that already; this is the fallback) */
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

static void answer(int s, int status, int exec_errno, int setup_errno, uint32_t flags,
		   int pidns_errno)
{
	struct lev_oci_ans a = { LEV_OCI_ANS_MAGIC, status, exec_errno, setup_errno, flags,
				 pidns_errno };

	(void)!send(s, &a, sizeof(a), MSG_NOSIGNAL);
}

/* One connection: receive, run, answer.  Runs in its own process. */
static void handle(int s)
{
	struct lev_oci_req req;
	struct msghdr mh;
	struct iovec iov;
	union lev_oci_cmsg u;
	struct cmsghdr *cm;
	struct cmd c = { { -1, -1, -1 }, NULL, NULL, NULL, NULL };
	char *payload = NULL, *p, *end;
	uint32_t i, total;
	ssize_t n;
	int execfd = -1, statfd = -1, st, ee, pe;
	pid_t pid;

	iov.iov_base = &req;
	iov.iov_len = sizeof(req);
	lev_oci_msg_init(&mh, &iov, 1, &u);
	do
		n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return;		/* a readiness probe */
	cm = CMSG_FIRSTHDR(&mh);
	if (n != (ssize_t)sizeof(req) || req.magic != LEV_OCI_REQ_MAGIC || !cm ||
	    cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(3 * sizeof(int)) || (mh.msg_flags & MSG_CTRUNC)) {
		answer(s, 0, 0, EPROTO, 0, 0);
		return;
	}
	memcpy(c.fds, CMSG_DATA(cm), sizeof(c.fds));
	total = req.nstr + req.nenv;
	if (req.len == 0 || req.len > LEV_OCI_REQ_MAX || req.nstr < 2 ||
	    req.nstr > LEV_OCI_ARGS_MAX || req.nenv > LEV_OCI_ARGS_MAX) {
		answer(s, 0, 0, E2BIG, 0, 0);
		goto out;
	}
	payload = malloc(req.len + 1);
	c.argv = calloc(req.nstr, sizeof(char *));
	c.envp = calloc(req.nenv + 1, sizeof(char *));
	if (!payload || !c.argv || !c.envp) {
		answer(s, 0, 0, ENOMEM, 0, 0);
		goto out;
	}
	if (read_full(s, payload, req.len) < 0) {
		answer(s, 0, 0, EPROTO, 0, 0);
		goto out;
	}
	payload[req.len] = '\0';
	p = payload;
	end = payload + req.len;
	for (i = 0; i < total; i++) {
		char *z = p < end ? memchr(p, '\0', (size_t)(end - p)) : NULL;

		if (!z) {
			answer(s, 0, 0, EPROTO, 0, 0);
			goto out;
		}
		if (i == 0)
			c.cwd = p;
		else if (i < req.nstr)
			c.argv[i - 1] = p;
		else
			c.envp[i - req.nstr] = p;
		p = z + 1;
	}
	c.argv[req.nstr - 1] = NULL;
	c.envp[req.nenv] = NULL;
	c.filter = (req.flags & LEV_OCI_FLAG_SECCOMP) ? LEV_OCI_DIR "/" LEV_OCI_FILTER_NAME : NULL;

	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	pe = enter_pidns();
	if (req.flags & LEV_OCI_FLAG_PROBE) {
		answer(s, 0, 0, 0, pe == 0 ? LEV_OCI_ANS_PIDNS : 0, -pe);
		goto out;
	}
	pid = start(&c, pe == 0, &execfd, &statfd);
	for (i = 0; i < 3; i++)
		close(c.fds[i]);
	c.fds[0] = c.fds[1] = c.fds[2] = -1;
	if (pid < 0) {
		answer(s, 0, 0, (int)-pid, 0, 0);
		goto out;
	}
	st = supervise(pid, execfd, statfd, s, 0, &ee);
	answer(s, st, ee, 0, pe == 0 ? LEV_OCI_ANS_PIDNS : 0, -pe);
out:
	for (i = 0; i < 3; i++)
		if (c.fds[i] >= 0)
			close(c.fds[i]);
	free(payload);
	free(c.argv);
	free(c.envp);
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
	int i, execfd = -1, statfd = -1, st, ee, pe;
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
	pe = enter_pidns();
	pid = start(&c, pe == 0, &execfd, &statfd);
	if (pid < 0) {
		fprintf(stderr, "lev-oci-helper: cannot start '%s': %s\n", argv[i], strerror((int)-pid));
		return 125;
	}
	st = supervise(pid, execfd, statfd, -1, timeout_ms, &ee);
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
