/*
 * lev-probe - runs INSIDE a sandbox and reports what the kernel allowed.
 *
 *	lev-probe WHAT [ARGS...]
 *
 * Prints one stable word on stdout: "ok", or the errno name of the refusal
 * (EPERM, EACCES, EROFS, ENOSYS, ...), sometimes followed by details on
 * the same line.  Exits 0 whenever the probe itself ran, 2 on a usage
 * error, so shell tests assert on kernel facts, not on exit codes.
 * Statically linked (it also runs inside container images).
 *
 * Probes:
 *   write PATH            create/truncate PATH and write to it
 *   read PATH             open PATH and read it
 *   cat PATH              print PATH's contents (or the errno name)
 *   ls DIR                list DIR
 *   mkdir PATH            create a directory
 *   create-mode PATH OCT  open(PATH, O_CREAT|O_EXCL|O_WRONLY, OCT): a setuid mode at birth
 *   socket FAMILY         socket(): inet inet6 unix netlink packet vsock
 *   socket-hi FAMILY      socket() with garbage in the high 32 bits of the family
 *   connect IP PORT       TCP connect to an IPv4/IPv6 literal
 *   abstract NAME         connect to the abstract UNIX socket @NAME
 *   ptrace PID            PTRACE_ATTACH
 *   vmread PID            process_vm_readv one byte of PID's memory
 *   kill PID [SIG]        kill(PID, SIG) (default 0)
 *   pid-visible PID       stat /proc/PID
 *   list-pids             how many processes /proc shows
 *   fds                   our open descriptors, "N:what" each (what: pipe, socket, the
 *                         path, ...), but the one that lists them
 *   io_uring              io_uring_setup
 *   bpf                   bpf(BPF_MAP_CREATE)
 *   perf                  perf_event_open
 *   keyctl                keyctl(KEYCTL_GET_KEYRING_ID)
 *   userfaultfd           userfaultfd
 *   tiocsti               TIOCSTI on a fresh pty that is our controlling terminal
 *   tiocsti-hi            the same with garbage in the high 32 bits of the request
 *   unshare-user          unshare(CLONE_NEWUSER)
 *   unshare-remount DIR   unshare(user+mount), map root, mount a tmpfs on DIR
 *   clone3-user           clone3(CLONE_NEWUSER)
 *   mount-tmpfs DIR       mount a tmpfs on DIR
 *   mount-ops DIR [own-ns]  the calls a warm cell sets itself up with: mount a tmpfs
 *                         on DIR, open_tree(OPEN_TREE_CLONE) of it, move_mount onto
 *                         it, mount_setattr(NOSUID) on it, clone with CLONE_NEWNS,
 *                         CLONE_NEWPID, CLONE_NEWIPC: "name=WORD" each, one line;
 *                         own-ns: in a user and mount namespace of our own (the
 *                         benign twin: each one works there)
 *   umount DIR            umount2(DIR, MNT_DETACH)
 *   setns                 setns into /proc/1/ns/net
 *   fork-bomb [MAX]       fork until refused (children pause); the errno, or ok at MAX
 *   alloc-bomb [MAX_MB] [touch]  allocate 64 MiB chunks (touching them) until refused
 *   spin                  burn CPU forever
 *   sleep SECS            sleep
 *   background SECS       start a child that sleeps SECS, then exit at once
 *   whoami                uid, euid, gid, egid
 *   caps                  CapEff, CapPrm, CapBnd, NoNewPrivs, Seccomp from /proc/self/status
 *   hostname              the host name
 *   env NAME              the variable's value, or "unset"
 *   exit CODE             exit with CODE
 *   signal SIG            kill ourselves with SIG
 *   flood BYTES           write BYTES bytes to stdout
 *   flood-err BYTES       write BYTES bytes to stderr
 *   umask                 the umask, in octal
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <linux/sched.h>

static int word(int e)
{
	const char *n = e ? strerrorname_np(e) : "ok";

	if (e && !n)
		printf("errno%d\n", e);
	else
		printf("%s\n", n);
	fflush(stdout);
	return 0;
}

static int result(long r)
{
	return word(r < 0 ? errno : 0);
}

static int family(const char *s)
{
	if (!strcmp(s, "inet"))
		return AF_INET;
	if (!strcmp(s, "inet6"))
		return AF_INET6;
	if (!strcmp(s, "unix"))
		return AF_UNIX;
	if (!strcmp(s, "netlink"))
		return AF_NETLINK;
	if (!strcmp(s, "packet"))
		return AF_PACKET;
	if (!strcmp(s, "vsock"))
		return AF_VSOCK;
	return -1;
}

static int p_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return word(errno);
	if (write(fd, "lev-probe\n", 10) != 10) {
		int e = errno;
		close(fd);
		return word(e ? e : EIO);
	}
	close(fd);
	return word(0);
}

static int p_read(const char *path, bool print)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return word(errno);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (print)
			fwrite(buf, 1, (size_t)n, stdout);
	if (n < 0) {
		int e = errno;
		close(fd);
		return word(e);
	}
	close(fd);
	if (!print)
		return word(0);
	return 0;
}

static int p_ls(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;

	if (!d)
		return word(errno);
	while (readdir(d))
		n++;
	closedir(d);
	printf("ok %d\n", n);
	return 0;
}

static int p_connect(const char *ip, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, fam;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		fam = AF_INET;
		((struct sockaddr_in *)&ss)->sin_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)atoi(port));
		len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, ip, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		fam = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)atoi(port));
		len = sizeof(struct sockaddr_in6);
	} else {
		fprintf(stderr, "lev-probe: '%s' is not an IP literal\n", ip);
		return 2;
	}
	fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return word(errno);
	if (connect(fd, (struct sockaddr *)&ss, len) < 0)
		return word(errno);
	close(fd);
	return word(0);
}

static int p_abstract(const char *name)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t n = strlen(name);

	if (fd < 0)
		return word(errno);
	if (n + 1 >= sizeof(sa.sun_path))
		return 2;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, name, n);
	if (connect(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0)
		return word(errno);
	return word(0);
}

static int p_tiocsti(bool hi)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return word(errno);
	if (pid == 0) {
		int m, s;
		char c = 'x';
		unsigned long req = TIOCSTI;
		long r;

		if (setsid() < 0)
			_exit(word(errno));
		m = posix_openpt(O_RDWR | O_NOCTTY);
		if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
			_exit(printf("nopty-%s\n", strerrorname_np(errno)) < 0);
		s = open(ptsname(m), O_RDWR);	/* becomes our controlling terminal */
		if (s < 0)
			_exit(printf("nopty-%s\n", strerrorname_np(errno)) < 0);
		if (hi)
			req |= 1UL << 32;
		r = syscall(SYS_ioctl, s, req, &c);
		_exit(result(r));
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return 0;
}

/* A user and mount namespace of our own, root mapped to us: 0, or 1 (said why). */
static int own_userns(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fd;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return word(errno), 1;
	fd = open("/proc/self/setgroups", O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, "deny", 4);
		close(fd);
	}
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	fd = open("/proc/self/uid_map", O_WRONLY);
	if (fd < 0 || write(fd, map, strlen(map)) < 0)
		return printf("maps-%s\n", strerrorname_np(errno)), 1;
	close(fd);
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	fd = open("/proc/self/gid_map", O_WRONLY);
	if (fd < 0 || write(fd, map, strlen(map)) < 0)
		return printf("maps-%s\n", strerrorname_np(errno)), 1;
	close(fd);
	return 0;
}

static int p_unshare_remount(const char *dir)
{
	if (own_userns())
		return 0;
	return result(mount("tmpfs", dir, "tmpfs", 0, NULL));
}

static const char *ename(int e)
{
	return e ? strerrorname_np(e) : "ok";
}

/* clone(FLAG): 0 or the errno (the child exits at once) */
static int clone_ns(unsigned long flag)
{
	long pid = syscall(SYS_clone, flag | SIGCHLD, 0, NULL, NULL, 0);

	if (pid == 0)
		_exit(0);
	if (pid < 0)
		return errno;
	while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}

static int p_mount_ops(const char *dir, bool own)
{
	struct {
		uint64_t attr_set, attr_clr, propagation, userns_fd;
	} attr = { 0x2 /* MOUNT_ATTR_NOSUID */, 0, 0, 0 };
	int e[7], fd;

	if (own && own_userns())
		return 0;
	e[0] = mount("tmpfs", dir, "tmpfs", 0, NULL) < 0 ? errno : 0;
	fd = (int)syscall(SYS_open_tree, AT_FDCWD, dir, 1 /* OPEN_TREE_CLONE */ | O_CLOEXEC);
	e[1] = fd < 0 ? errno : 0;
	if (fd < 0)	/* a plain handle: move_mount still gets something to move */
		fd = (int)syscall(SYS_open_tree, AT_FDCWD, dir, O_CLOEXEC);
	e[2] = fd < 0 ? errno
		      : syscall(SYS_move_mount, fd, "", AT_FDCWD, dir, 0x4 /* F_EMPTY_PATH */) < 0
		      ? errno : 0;
	e[3] = syscall(SYS_mount_setattr, AT_FDCWD, dir, 0, &attr, sizeof(attr)) < 0 ? errno : 0;
	e[4] = clone_ns(CLONE_NEWNS);
	e[5] = clone_ns(CLONE_NEWPID);
	e[6] = clone_ns(CLONE_NEWIPC);
	printf("mount=%s open_tree=%s move_mount=%s mount_setattr=%s clone_newns=%s "
	       "clone_newpid=%s clone_newipc=%s\n", ename(e[0]), ename(e[1]), ename(e[2]),
	       ename(e[3]), ename(e[4]), ename(e[5]), ename(e[6]));
	fflush(stdout);
	return 0;
}

static int p_fork_bomb(long max)
{
	long n;

	for (n = 0; n < max; n++) {
		pid_t p = fork();

		if (p < 0) {
			int e = errno;
			printf("%s after %ld\n", strerrorname_np(e), n);
			fflush(stdout);
			return 0;	/* the paused children are the sandbox's to kill */
		}
		if (p == 0) {
			pause();
			_exit(0);
		}
	}
	printf("ok %ld\n", n);
	fflush(stdout);
	return 0;
}

static int p_alloc_bomb(long max_mb, bool touch)
{
	long mb;

	for (mb = 0; mb < max_mb; mb += 64) {
		char *p = malloc((size_t)64 << 20);

		if (!p) {
			printf("ENOMEM after %ld MiB\n", mb);
			return 0;
		}
		if (touch)
			memset(p, 1, (size_t)64 << 20);
	}
	printf("ok %ld MiB\n", mb);
	return 0;
}

static int p_caps(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return word(errno);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "CapEff:", 7) || !strncmp(line, "CapPrm:", 7) ||
		    !strncmp(line, "CapBnd:", 7) || !strncmp(line, "NoNewPrivs:", 11) ||
		    !strncmp(line, "Seccomp:", 8)) {
			char *c = strchr(line, ':');
			char *v = c + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			v[strcspn(v, "\n")] = '\0';
			*c = '\0';
			printf("%s=%s ", line, v);
		}
	}
	fclose(f);
	printf("\n");
	return 0;
}

static int p_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	bool first = true;

	if (!d)
		return word(errno);
	while ((de = readdir(d))) {
		char path[300], what[256];
		ssize_t n;
		char *br;

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || atoi(de->d_name) == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, what, sizeof(what) - 1);
		what[n < 0 ? 0 : n] = '\0';
		br = strstr(what, ":[");
		if (br)
			*br = '\0';	/* pipe:[123] -> pipe */
		printf("%s%s:%s", first ? "" : " ", de->d_name, what);
		first = false;
	}
	closedir(d);
	printf("\n");
	return 0;
}

static int p_flood(long bytes, int fd)
{
	static char buf[65536];
	long left = bytes;

	memset(buf, 'x', sizeof(buf));
	while (left > 0) {
		size_t k = left > (long)sizeof(buf) ? sizeof(buf) : (size_t)left;
		ssize_t n = write(fd, buf, k);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		left -= n;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: lev-probe WHAT [ARGS...] (see the comment at the top of lev-probe.c)\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *w = argc > 1 ? argv[1] : "";
	const char *a1 = argc > 2 ? argv[2] : NULL;
	const char *a2 = argc > 3 ? argv[3] : NULL;

	if (!strcmp(w, "write") && a1)
		return p_write(a1);
	if (!strcmp(w, "read") && a1)
		return p_read(a1, false);
	if (!strcmp(w, "cat") && a1)
		return p_read(a1, true);
	if (!strcmp(w, "ls") && a1)
		return p_ls(a1);
	if (!strcmp(w, "mkdir") && a1)
		return result(mkdir(a1, 0755));
	if (!strcmp(w, "create-mode") && a1 && a2) {
		int fd = open(a1, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
			      (mode_t)strtoul(a2, NULL, 8));

		if (fd >= 0)
			close(fd);
		return result(fd < 0 ? -1 : 0);
	}
	if ((!strcmp(w, "socket") || !strcmp(w, "socket-hi")) && a1) {
		long fam = family(a1);

		if (fam < 0)
			return usage();
		if (w[6] == '-')
			fam |= 1L << 32;
		return result(syscall(SYS_socket, fam, fam == AF_PACKET ? SOCK_RAW : SOCK_DGRAM, 0));
	}
	if (!strcmp(w, "connect") && a1 && a2)
		return p_connect(a1, a2);
	if (!strcmp(w, "abstract") && a1)
		return p_abstract(a1);
	if (!strcmp(w, "ptrace") && a1) {
		long r = ptrace(PTRACE_ATTACH, (pid_t)atoi(a1), NULL, NULL);

		if (r == 0)
			ptrace(PTRACE_DETACH, (pid_t)atoi(a1), NULL, NULL);
		return result(r);
	}
	if (!strcmp(w, "vmread") && a1) {
		char b;
		struct iovec l = { &b, 1 }, r = { (void *)0x400000, 1 };

		return result(process_vm_readv((pid_t)atoi(a1), &l, 1, &r, 1, 0));
	}
	if (!strcmp(w, "kill") && a1)
		return result(kill((pid_t)atoi(a1), a2 ? atoi(a2) : 0));
	if (!strcmp(w, "pid-visible") && a1) {
		char p[64];
		struct stat st;

		snprintf(p, sizeof(p), "/proc/%d", atoi(a1));
		return result(stat(p, &st));
	}
	if (!strcmp(w, "list-pids")) {
		DIR *d = opendir("/proc");
		struct dirent *de;
		int n = 0;

		if (!d)
			return word(errno);
		while ((de = readdir(d)))
			if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
				n++;
		closedir(d);
		printf("%d\n", n);
		return 0;
	}
	if (!strcmp(w, "fds"))
		return p_fds();
	if (!strcmp(w, "io_uring")) {
		struct io_uring_params p;

		memset(&p, 0, sizeof(p));
		return result(syscall(SYS_io_uring_setup, 4, &p));
	}
	if (!strcmp(w, "bpf")) {
		char attr[128];

		memset(attr, 0, sizeof(attr));
		return result(syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof(attr)));
	}
	if (!strcmp(w, "perf")) {
		struct perf_event_attr pa;

		memset(&pa, 0, sizeof(pa));
		pa.type = PERF_TYPE_SOFTWARE;
		pa.size = sizeof(pa);
		pa.config = PERF_COUNT_SW_CPU_CLOCK;
		return result(syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
	}
	if (!strcmp(w, "keyctl"))
		return result(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
	if (!strcmp(w, "userfaultfd"))
		return result(syscall(SYS_userfaultfd, 0));
	if (!strcmp(w, "tiocsti"))
		return p_tiocsti(false);
	if (!strcmp(w, "tiocsti-hi"))
		return p_tiocsti(true);
	if (!strcmp(w, "unshare-user"))
		return result(unshare(CLONE_NEWUSER));
	if (!strcmp(w, "unshare-remount") && a1)
		return p_unshare_remount(a1);
	if (!strcmp(w, "clone3-user")) {
		struct clone_args ca;
		long r;

		memset(&ca, 0, sizeof(ca));
		ca.flags = CLONE_NEWUSER;
		ca.exit_signal = SIGCHLD;
		r = syscall(SYS_clone3, &ca, sizeof(ca));
		if (r == 0)
			_exit(0);
		if (r > 0)
			waitpid((pid_t)r, NULL, 0);
		return result(r < 0 ? -1 : 0);
	}
	if (!strcmp(w, "mount-tmpfs") && a1)
		return result(mount("tmpfs", a1, "tmpfs", 0, NULL));
	if (!strcmp(w, "mount-ops") && a1)
		return p_mount_ops(a1, a2 && !strcmp(a2, "own-ns"));
	if (!strcmp(w, "umount") && a1)
		return result(umount2(a1, MNT_DETACH));
	if (!strcmp(w, "setns")) {
		int fd = open("/proc/1/ns/net", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return word(errno);
		return result(setns(fd, 0));
	}
	if (!strcmp(w, "fork-bomb"))
		return p_fork_bomb(a1 ? atol(a1) : 100000);
	if (!strcmp(w, "alloc-bomb"))
		return p_alloc_bomb(a1 ? atol(a1) : 65536, a2 && !strcmp(a2, "touch"));
	if (!strcmp(w, "spin"))
		for (;;)
			;
	if (!strcmp(w, "sleep") && a1) {
		sleep((unsigned)atoi(a1));
		return word(0);
	}
	if (!strcmp(w, "background") && a1) {
		pid_t p = fork();

		if (p == 0) {
			sleep((unsigned)atoi(a1));
			_exit(0);
		}
		return word(p < 0 ? errno : 0);
	}
	if (!strcmp(w, "whoami")) {
		printf("uid=%u euid=%u gid=%u egid=%u\n", (unsigned)getuid(), (unsigned)geteuid(),
		       (unsigned)getgid(), (unsigned)getegid());
		return 0;
	}
	if (!strcmp(w, "caps"))
		return p_caps();
	if (!strcmp(w, "hostname")) {
		char h[256];

		if (gethostname(h, sizeof(h)) < 0)
			return word(errno);
		h[sizeof(h) - 1] = '\0';
		printf("%s\n", h);
		return 0;
	}
	if (!strcmp(w, "env") && a1) {
		const char *v = getenv(a1);

		printf("%s\n", v ? v : "unset");
		return 0;
	}
	if (!strcmp(w, "exit") && a1)
		return atoi(a1);
	if (!strcmp(w, "signal") && a1) {
		signal(atoi(a1), SIG_DFL);
		raise(atoi(a1));
		return 3;
	}
	if (!strcmp(w, "flood") && a1)
		return p_flood(atol(a1), 1);
	if (!strcmp(w, "flood-err") && a1)
		return p_flood(atol(a1), 2);
	if (!strcmp(w, "umask")) {
		mode_t m = umask(0);

		printf("%04o\n", (unsigned)m);
		return 0;
	}
	return usage();
}
