/*
 * sandbox.c - the sandbox front: options, masks, the kernel probe, the
 * spawn/wait loop every backend shares, and the plan printer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/securebits.h>

#include "liblev/base/cleanup.h"
#include "liblev/conf/datadir.h"
#include "liblev/sandbox/landlock-rules.h"
#include "liblev/sandbox/sandbox-internal.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* How long we keep reading after the command ended or was killed. */
#define GRACE_MS 1000
#define READ_CHUNK 65536

static const char *const layer_names[_LEV_LAYER_COUNT] = {
	"userns", "mountns", "pidns", "ipcns", "utsns", "netns", "landlock", "seccomp",
	"nnp", "caps", "rlimits", "container",
};

const char *lev_sandbox_layer_name(unsigned layer)
{
	int i;

	for (i = 0; i < _LEV_LAYER_COUNT; i++)
		if (layer == (1u << i))
			return layer_names[i];
	return NULL;
}

int lev_sandbox_layers_format(unsigned layers, struct lev_buf *out)
{
	bool first = true;
	int i, r = 0;

	for (i = 0; i < _LEV_LAYER_COUNT && r == 0; i++) {
		if (!(layers & (1u << i)))
			continue;
		r = lev_buf_addf(out, "%s%s", first ? "" : ", ", layer_names[i]);
		first = false;
	}
	if (r == 0 && first)
		r = lev_buf_adds(out, "none");
	return r;
}

void lev_sandbox_limits_fill(struct lev_sandbox_limits *l)
{
	if (!l->timeout_ms)
		l->timeout_ms = LEV_SANDBOX_DEFAULT_TIMEOUT_MS;
	if (!l->output_max)
		l->output_max = LEV_SANDBOX_DEFAULT_OUTPUT_MAX;
	if (!l->nproc)
		l->nproc = 512;
	if (!l->mem_bytes)
		l->mem_bytes = (uint64_t)4 << 30;
	if (!l->fsize)
		l->fsize = (uint64_t)1 << 30;
	if (!l->nofile)
		l->nofile = 1024;
	if (!l->cpu_secs) {
		uint64_t t = (l->timeout_ms + 999) / 1000 * 2;
		l->cpu_secs = t > 60 ? t : 60;
	}
	if (!l->tmp_bytes)
		l->tmp_bytes = (uint64_t)512 << 20;
}

void lev_sbx_report(int fd, enum lev_sbx_phase phase, int index, int err)
{
	struct lev_sbx_report r = { LEV_SBX_REPORT_MAGIC, (int32_t)phase, index, err };
	ssize_t n;

	if (fd < 0)
		return;
	do
		n = write(fd, &r, sizeof(r));
	while (n < 0 && errno == EINTR);
}

struct lev_sandbox_proc *lev_sbx_proc_alloc(struct lev_sandbox *sb, enum lev_sbx_mode mode)
{
	struct lev_sandbox_proc *p = xcalloc(1, sizeof(*p));

	p->sb = sb;
	p->mode = mode;
	p->pid = -1;
	p->pidfd = p->out_fd = p->err_fd = p->report_fd = p->status_fd = p->sock = -1;
	p->fwd_out = p->fwd_err = p->cancel_fd = -1;
	return p;
}

void lev_sbx_proc_started(struct lev_sandbox_proc *p, int out_fd, int err_fd, const char *argv0,
			  const struct lev_sandbox_io *io, const struct lev_sandbox_limits *limits)
{
	p->out_fd = out_fd;
	p->err_fd = err_fd;
	(void)fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	(void)fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
	p->fwd_out = io->stdout_fd;
	p->fwd_err = io->stderr_fd;
	p->cancel_fd = io->cancel_fd;
	p->timeout_ms = limits->timeout_ms;
	p->output_max = limits->output_max;
	p->start_ms = lev_monotonic_ms();
	p->argv0 = xstrdup(argv0);
}

/* ---- exec helpers (the child side is async-signal-safe) ---- */

const char *lev_sbx_env_path(char *const *envp)
{
	for (; envp && *envp; envp++)
		if (!strncmp(*envp, "PATH=", 5))
			return *envp + 5;
	return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
}

char **lev_sbx_exec_candidates(const char *argv0, const char *path)
{
	char **v = NULL;
	const char *p = path, *colon;

	if (strchr(argv0, '/'))
		return lev_strv_push(NULL, argv0);
	if (!*argv0)
		return NULL;
	for (;;) {
		size_t n;

		colon = strchr(p, ':');
		n = colon ? (size_t)(colon - p) : strlen(p);
		if (n == 0)
			v = lev_strv_push_take(v, xasprintf("./%s", argv0));
		else
			v = lev_strv_push_take(v, xasprintf("%.*s/%s", (int)n, p, argv0));
		if (!colon)
			break;
		p = colon + 1;
	}
	return v;
}

int lev_sbx_exec(char *const *cands, char *const *argv, char *const *envp)
{
	static char *const empty[] = { NULL };
	int saved = ENOENT;
	bool eacces = false;

	for (; cands && *cands; cands++) {
		execve(*cands, argv, envp ? envp : empty);
		switch (errno) {
		case EACCES:
			eacces = true;
			break;
		case ENOENT:
		case ENOTDIR:
		case ESTALE:
		case ENODEV:
		case ETIMEDOUT:
			break;
		default:
			return errno;	/* found but cannot run: stop, as execvp does */
		}
		saved = errno;
	}
	return eacces ? EACCES : saved;
}

void lev_sbx_reset_signals(void)
{
	struct sigaction sa;
	sigset_t all;
	int s;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (s = 1; s < _NSIG; s++)
		(void)sigaction(s, &sa, NULL);
	sigemptyset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, NULL);
}

int lev_sbx_apply_rlimits(const struct lev_sandbox_limits *l, bool root, int *failed)
{
	const struct {
		int res;
		uint64_t v;
	} set[] = {
		{ RLIMIT_NPROC, l->nproc }, { RLIMIT_DATA, l->mem_bytes },
		{ RLIMIT_FSIZE, l->fsize }, { RLIMIT_NOFILE, l->nofile },
		{ RLIMIT_CORE, 0 }, { RLIMIT_CPU, l->cpu_secs },
	};
	size_t i;

	(void)root;
	for (i = 0; i < ARRAY_SIZE(set); i++) {
		struct rlimit cur, nw;

		if (getrlimit(set[i].res, &cur) < 0) {
			*failed = set[i].res;
			return -errno;
		}
		nw.rlim_max = (rlim_t)set[i].v;
		if (cur.rlim_max != RLIM_INFINITY && nw.rlim_max > cur.rlim_max)
			nw.rlim_max = cur.rlim_max;	/* we can only lower */
		nw.rlim_cur = nw.rlim_max;
		if (setrlimit(set[i].res, &nw) < 0) {
			*failed = set[i].res;
			return -errno;
		}
	}
	return 0;
}

void lev_sbx_drop_bounding(void)
{
	int cap;

	/* Without CAP_SETPCAP (an unprivileged caller with no user namespace)
	 * the securebits and bounding set stay; there is nothing to drop then,
	 * and no_new_privs keeps exec from adding any. */
	(void)prctl(PR_SET_SECUREBITS,
		    SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		    SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
		    SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED, 0, 0, 0);
	for (cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;	/* past the last capability */
		}
	}
}

int lev_sbx_drop_caps(bool bounding)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (bounding)
		lev_sbx_drop_bounding();
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	/* Verify, as Codex does: nothing effective, permitted or inheritable. */
	memset(data, 0xff, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	if (data[0].effective || data[1].effective || data[0].permitted || data[1].permitted ||
	    data[0].inheritable || data[1].inheritable)
		return -EPERM;
	return 0;
}

/* ---- lev's user namespace ---- */

static int userns_fd = -1;	/* or -errno */
static pthread_once_t userns_once = PTHREAD_ONCE_INIT;

/* Wait for PID, our child: its status, or -errno. */
static int wait_child(pid_t pid, int *st)
{
	while (waitpid(pid, st, __WALL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* What the holder child needs: lev's end of its pipe. */
struct holder_arg {
	int wr;
};

/* In the holder (lev's memory, its own stack, lev stopped until the exec):
 * ask to be traced and execute lev's own program; on failure say why. */
static int holder_child(void *arg)
{
	static char *const argv[] = { (char *)"lev-userns", NULL };
	static char *const envp[] = { NULL };
	const struct holder_arg *a = arg;
	int e;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0)
		(void)execve("/proc/self/exe", argv, envp);
	e = errno;
	(void)!write(a->wr, &e, sizeof(e));
	_exit(127);
}

/*
 * The process whose user namespace lev takes: a child cloned into a new
 * user namespace that asks to be traced and executes lev's own program, so
 * it stops (SIGTRAP) after the exec, before its first instruction.  Its
 * memory is then the program's image, fresh from the file, nothing of
 * lev's, and it is dumpable: lev may write its maps.  Until the exec it
 * runs in lev's memory on a stack of its own while lev waits
 * (CLONE_VM | CLONE_VFORK, as posix_spawn does): no copy of lev's memory is
 * ever made for it.  PID, or -errno.
 */
static long userns_holder(void)
{
	char stack[16384] __attribute__((aligned(16)));
	struct holder_arg a;
	int p[2], e = EIO, st = 0, tries;
	ssize_t n;
	long pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	a.wr = p[1];
	pid = clone(holder_child, stack + sizeof(stack),
		    CLONE_NEWUSER | CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	if (pid < 0) {
		e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	close(p[1]);
	/* a signal before the exec stops it too: pass it on (a few times) */
	for (tries = 0; tries < 8; tries++) {
		if (wait_child((pid_t)pid, &st) < 0 || !WIFSTOPPED(st))
			break;
		if (WSTOPSIG(st) == SIGTRAP) {
			close(p[0]);
			return pid;
		}
		(void)ptrace(PTRACE_CONT, (pid_t)pid, NULL, (void *)(long)WSTOPSIG(st));
	}
	do
		n = read(p[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	(void)kill((pid_t)pid, SIGKILL);
	if (!WIFEXITED(st) && !WIFSIGNALED(st))
		(void)wait_child((pid_t)pid, &st);
	return n == (ssize_t)sizeof(e) && e > 0 ? -e : -EIO;
}

static void make_userns(void)
{
	char path[64];
	long pid = userns_holder();
	int st, r = 0;

	if (pid < 0) {
		userns_fd = (int)pid;
		return;
	}
	r = lev_sbx_write_maps((pid_t)pid, getuid(), getgid(), NULL);
	if (r == 0) {
		snprintf(path, sizeof(path), "/proc/%ld/ns/user", pid);
		r = open(path, O_RDONLY | O_CLOEXEC);
		if (r < 0)
			r = -errno;
	}
	(void)kill((pid_t)pid, SIGKILL);
	(void)wait_child((pid_t)pid, &st);
	userns_fd = r;
}

int lev_sbx_userns(void)
{
	pthread_once(&userns_once, make_userns);
	return userns_fd;
}

/*
 * In the middle process of lev_sbx_ns_clone(), a vfork() child: its locals
 * live in a frame of their own, never in lev's.  Enter lev's user namespace
 * and create the child in it as lev's own (CLONE_PARENT); tell lev its PID
 * (or -errno) and exit.  Returns 0 in that child only.
 */
static __attribute__((noinline)) long ns_clone_mid(int ns, unsigned long flags, const int p[2])
{
	long c;

	close(p[0]);
	if (setns(ns, CLONE_NEWUSER) < 0) {
		c = -errno;
	} else {
		c = syscall(SYS_clone, CLONE_PARENT | (flags & ~(CLONE_NEWUSER | 0xffUL)),
			    0, NULL, NULL, 0);
		if (c == 0) {
			close(p[1]);
			close(ns);
			return 0;
		}
		if (c < 0)
			c = -errno;
	}
	(void)!write(p[1], &c, sizeof(c));
	_exit(0);
}

long lev_sbx_ns_clone(unsigned long flags, int *pidfd)
{
	int ns = lev_sbx_userns(), p[2], st, e;
	long mid, pid = -EIO;
	ssize_t n;

	if (ns < 0)
		return ns;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	/* lev's memory, lev stopped until it exits: nothing copied for it */
	mid = vfork();
	if (mid == 0 && ns_clone_mid(ns, flags, p) == 0)
		return 0;	/* the child, in a copy of lev's memory */
	if (mid < 0) {
		e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	close(p[1]);
	do
		n = read(p[0], &pid, sizeof(pid));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	(void)wait_child((pid_t)mid, &st);
	if (n != (ssize_t)sizeof(pid))
		return -EIO;
	if (pid < 0)
		return pid;
	*pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (*pidfd < 0) {
		e = errno;
		(void)kill((pid_t)pid, SIGKILL);
		(void)wait_child((pid_t)pid, &st);
		return -e;
	}
	return pid;
}

/* ---- the kernel probe, once per process ---- */

static struct lev_sbx_kernel kernel;
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;

/* In the probe child: 0, or the errno of the failed step. */
static int probe_child_mounts(void)
{
	struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY };
	int t = (int)syscall(SYS_open_tree, AT_FDCWD, "/",
			     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);

	if (t < 0)
		return errno;
	if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0)
		return errno;
	close(t);
	return 0;
}

/* In the probe child (PID 1 of a new PID namespace): can it set its own
 * pid_max (Linux 6.14+)?  0, or the errno. */
static int probe_child_pidmax(void)
{
	char buf[32];
	ssize_t n;
	int fd;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return errno;
	fd = open("/proc/sys/kernel/pid_max", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof(buf));
	if (n <= 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		int e = n <= 0 ? EIO : errno;
		close(fd);
		return e;
	}
	close(fd);
	return 0;
}

static void probe_kernel(void)
{
	int pidfd = -1, status = 0, resp[2];
	int res[2] = { EIO, EIO };
	long pid;

	kernel.landlock_abi = lev_landlock_abi();
	kernel.seccomp = lev_scfilter_probe();
	kernel.pidmax_ns = -EIO;

	kernel.userns = lev_sbx_userns();
	if (kernel.userns >= 0)
		kernel.userns = 0;
	if (kernel.userns < 0) {
		kernel.mount_api = kernel.pidmax_ns = kernel.userns;
		return;
	}
	if (pipe2(resp, O_CLOEXEC) < 0) {
		kernel.mount_api = -errno;
		return;
	}
	pid = lev_sbx_ns_clone(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
			       CLONE_NEWNET, &pidfd);
	if (pid == 0) {
		int r[2];

		(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		r[0] = probe_child_mounts();
		r[1] = probe_child_pidmax();
		_exit(write(resp[1], r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(resp[1]);
	if (pid < 0) {
		kernel.userns = kernel.mount_api = kernel.pidmax_ns = (int)pid;
		close(resp[0]);
		return;
	}
	if (read(resp[0], res, sizeof(res)) != (ssize_t)sizeof(res))
		res[0] = res[1] = EIO;
	close(resp[0]);
	(void)wait_child((pid_t)pid, &status);
	close(pidfd);
	kernel.mount_api = -res[0];
	kernel.pidmax_ns = -res[1];
}

const struct lev_sbx_kernel *lev_sbx_kernel(void)
{
	pthread_once(&kernel_once, probe_kernel);
	return &kernel;
}

/* ---- masks ---- */

/* Secrets under the home directory hidden in every sandbox. */
static const char *const home_secrets[] = {
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc",
	".git-credentials", ".config/gh", ".config/hub", ".password-store", ".npmrc",
	".pypirc", ".pgpass", ".vault-token", ".cargo/credentials", ".cargo/credentials.toml",
	".config/containers/auth.json", ".local/share/keyrings",
};

const char *const *lev_sandbox_home_secrets(size_t *n)
{
	*n = ARRAY_SIZE(home_secrets);
	return home_secrets;
}

/* Host-wide secrets (readable only by root, which a root caller would be). */
static const char *const host_secrets[] = {
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
};

/* Normalise an absolute path lexically (no symlink resolution): collapse
 * "//" and "/./", refuse "..".  Fresh string or NULL. */
static char *normalize_abs(const char *p)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(PATH_MAX);
	const char *s = p;

	if (p[0] != '/')
		return NULL;
	while (*s) {
		const char *e;
		size_t n;

		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchr(s, '/');
		n = e ? (size_t)(e - s) : strlen(s);
		if (n == 1 && s[0] == '.') {
			s += n;
			continue;
		}
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			lev_buf_release(&b);
			return NULL;
		}
		if (lev_buf_addch(&b, '/') < 0 || lev_buf_add(&b, s, n) < 0) {
			lev_buf_release(&b);
			return NULL;
		}
		s += n;
	}
	if (b.len == 0 && lev_buf_addch(&b, '/') < 0) {
		lev_buf_release(&b);
		return NULL;
	}
	return lev_buf_detach(&b, NULL);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add the mask P (expanded, absolute) and its real path when it exists. */
static void add_mask(struct lev_sandbox *sb, char ***all, const char *p)
{
	_cleanup_free_ char *norm = normalize_abs(p);
	char real[PATH_MAX];
	struct stat st;

	/* a mask named twice (the guard of several own files) is resolved once */
	if (!norm || lev_strv_contains(*all, norm))
		return;
	*all = lev_strv_push(*all, norm);
	/* a path that is not there has no other name (and realpath() would read every component) */
	if (lstat(norm, &st) == 0 && realpath(norm, real) && strcmp(real, norm) != 0)
		*all = lev_strv_push(*all, real);
	(void)sb;
}

static int expand_user_path(const char *home, const char *p, const char *what, char **out,
			    struct lev_err *err)
{
	if (!strcmp(p, "~"))
		*out = xstrdup(home);
	else if (!strncmp(p, "~/", 2))
		*out = lev_path_join(home, p + 2);
	else if (p[0] == '/')
		*out = xstrdup(p);
	else
		return lev_err_set(err, LEV_EUSAGE,
				   "%s entry '%s' must be absolute or start with '~/'", what, p);
	return 0;
}

static int build_masks(struct lev_sandbox *sb, const struct lev_sandbox_opts *o,
		       struct lev_err *err)
{
	char **all = NULL, **out = NULL;
	char *const *d;
	size_t i, n;
	int r;

	for (i = 0; i < ARRAY_SIZE(home_secrets); i++) {
		_cleanup_free_ char *p = lev_path_join(sb->home, home_secrets[i]);
		add_mask(sb, &all, p);
	}
	for (i = 0; i < ARRAY_SIZE(host_secrets); i++)
		add_mask(sb, &all, host_secrets[i]);
	{
		glob_t g;

		if (glob("/etc/ssh/ssh_host_*_key", GLOB_NOSORT, NULL, &g) == 0) {
			for (i = 0; i < g.gl_pathc; i++)
				add_mask(sb, &all, g.gl_pathv[i]);
		}
		globfree(&g);
	}
	/* lev's own files (ownfiles.h): each, or its guard while it is missing */
	for (i = 0; i < sb->own.n; i++) {
		const char *m = lev_ownfile_mask(&sb->own.v[i]);

		if (m)
			add_mask(sb, &all, m);
	}
	for (d = sb->spec.deny_read; d && *d; d++) {
		_cleanup_free_ char *p = NULL;

		r = expand_user_path(sb->home, *d, "deny_read", &p, err);
		if (r < 0) {
			lev_strv_free(all);
			return r;
		}
		add_mask(sb, &all, p);
	}
	for (d = o->extra_masks; d && *d; d++) {
		_cleanup_free_ char *p = NULL;

		r = expand_user_path(sb->home, *d, "deny_read", &p, err);
		if (r < 0) {
			lev_strv_free(all);
			return r;
		}
		add_mask(sb, &all, p);
	}

	/* sort, drop duplicates and paths beneath another mask */
	n = lev_strv_len(all);
	if (n)
		qsort(all, n, sizeof(*all), cmp_str);
	for (i = 0; i < n; i++) {
		size_t k = lev_strv_len(out);

		if (k && lev_path_under(all[i], out[k - 1]))
			continue;
		out = lev_strv_push(out, all[i]);
	}
	lev_strv_free(all);
	sb->masks = out;
	return 0;
}

/*
 * [sandbox] writable, expanded: where a fenced host command may write
 * besides the workdir and its scratch /tmp.  An entry that lies in a
 * masked path, is the home directory, or holds a mask outside the home
 * directory is refused: writing there would reach the secrets or lev's own
 * files.  A directory below the home that holds a mask (~/.cargo holds
 * ~/.cargo/credentials.toml) is opened around it by the fence.
 */
static int build_writable(struct lev_sandbox *sb, struct lev_err *err)
{
	for (char *const *w = sb->spec.writable; w && *w; w++) {
		_cleanup_free_ char *p = NULL;
		char real[PATH_MAX];
		int r = expand_user_path(sb->home, *w, "writable", &p, err);

		if (r < 0)
			return r;
		if (realpath(p, real)) {
			free(p);
			p = xstrdup(real);
		}
		for (char *const *m = sb->masks; m && *m; m++)
			if (lev_path_under(p, *m) || !strcmp(p, sb->home) ||
			    (lev_path_under(*m, p) && !lev_path_under(p, sb->home)))
				return lev_err_set(err, LEV_EUSAGE,
						   "[sandbox] writable entry '%s' is or holds the "
						   "masked path '%s'; name a directory below it", *w,
						   *m);
		sb->writable = lev_strv_push(sb->writable, p);
	}
	return 0;
}

/*
 * Granted read paths, for the confined reads of a pre-approved host
 * command: each entry's leading part up to its first glob character,
 * expanded (a grant of ~/docs/ANY.md opens ~/docs).  Masked paths stay out
 * (the rule planner walks around them).
 */
static void build_read_paths(struct lev_sandbox *sb, char *const *grants)
{
	for (char *const *g = grants; g && *g; g++) {
		_cleanup_free_ char *lead = xstrndup(*g, strcspn(*g, "*?[{"));
		_cleanup_free_ char *p = NULL;
		char *slash;

		if (strpbrk(*g, "*?[{") && (slash = strrchr(lead, '/')))
			slash[slash == lead ? 1 : 0] = '\0';
		if (!lead[0] || expand_user_path(sb->home, lead, "read_paths", &p, NULL) < 0)
			continue;
		if (!strcmp(p, "/") || !strcmp(p, sb->home))
			continue;	/* a grant of everything opens no tree here */
		sb->read_paths = lev_strv_push(sb->read_paths, p);
	}
}

/* ---- new / free ---- */

static const char *const forbidden_workdirs[] = {
	"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/run",
	"/sbin", "/sys", "/usr", "/var", "/var/run",
};

static int check_workdir(struct lev_sandbox *sb, const char *given, struct lev_err *err)
{
	char real[PATH_MAX];
	struct stat st;
	size_t i;
	char *const *m;

	if (!given || !*given)
		return lev_err_set(err, LEV_EUSAGE, "the sandbox needs a workdir");
	if (!realpath(given, real))
		return lev_err_errno(err, -errno, "cannot use workdir '%s'", given);
	if (stat(real, &st) < 0)
		return lev_err_errno(err, -errno, "cannot use workdir '%s'", given);
	if (!S_ISDIR(st.st_mode))
		return lev_err_set(err, LEV_EUSAGE, "workdir '%s' is not a directory", given);
	for (i = 0; i < ARRAY_SIZE(forbidden_workdirs); i++)
		if (!strcmp(real, forbidden_workdirs[i]))
			return lev_err_set(err, LEV_EUSAGE,
					   "workdir '%s' is a system directory; pick a project directory",
					   given);
	if (lev_path_under(real, "/proc") || lev_path_under(real, "/sys") || lev_path_under(real, "/dev") ||
	    lev_path_under(real, "/run"))
		return lev_err_set(err, LEV_EUSAGE, "workdir '%s' lies in '%s'; pick a project directory",
				   given, real);
	for (m = sb->masks; m && *m; m++)
		if (lev_path_under(real, *m))
			return lev_err_set(err, LEV_EUSAGE,
					   "workdir '%s' lies inside the masked path '%s'", given, *m);
	sb->workdir = xstrdup(real);
	return 0;
}

/*
 * lev's own files (ownfiles.h) inside the workdir.  A sandbox with a mount
 * namespace (namespace, container) covers them with a mask; one that does
 * not exist yet is covered by its guard directory (the data root, Leviath's
 * directory, the units' directory), created first (LEV_DIR_MODE) to have
 * something to mask: otherwise a command could create ~/.leviath/config.toml
 * or ~/.config/leviath/policy.toml for the next run to obey.  Without a
 * mount namespace (kind none, or a namespace that fell back to Landlock
 * only) the workdir is writable as a whole, so such a workdir is refused.
 */
static int own_files_in_workdir(struct lev_sandbox *sb, bool masked, struct lev_err *err)
{
	size_t i;

	for (i = 0; i < sb->own.n; i++) {
		const struct lev_ownfile *e = &sb->own.v[i];
		const char *mask;

		if (!lev_path_under(e->path, sb->workdir) &&
		    !(e->real && lev_path_under(e->real, sb->workdir)))
			continue;
		if (!masked)
			return lev_err_set(err, LEV_EUSAGE,
				"workdir '%s' contains lev's own files (%s, '%s'): with sandbox "
				"kind none a command could rewrite lev's config and policy; run in "
				"a project directory, or set [sandbox] kind = \"namespace\"",
				sb->workdir, e->what, e->path);
		if (sb->plan_only || lev_ownfile_mask(e) != e->guard || !e->guard ||
		    (access(e->guard, F_OK) == 0 || errno != ENOENT))
			continue;
		if (lev_datadir_ensure(e->guard, NULL) < 0)
			return lev_err_set(err, LEV_EUSAGE,
					   "cannot create '%s' to keep %s ('%s') out of the "
					   "workdir's commands", e->guard, e->what, e->path);
		mask = e->guard;
		if (!lev_strv_contains(sb->masks, mask))
			sb->masks = lev_strv_push(sb->masks, mask);
	}
	return 0;
}

/*
 * Kind none with network = false (as configured, or after a container fell
 * back to the host): every command runs under no_new_privs and the
 * network-only seccomp filter.  Without seccomp the network cannot be
 * closed, so the sandbox is refused whatever on_unavailable says: a
 * `network = false` is never advisory.
 */
static int host_network_fence(struct lev_sandbox *sb, struct lev_err *err)
{
	const struct lev_sbx_kernel *k = lev_sbx_kernel();
	struct lev_err e2 = LEV_ERR_INIT;

	lev_scfilter_release(&sb->sc);
	sb->have_sc = false;
	if (k->seccomp < 0)
		return lev_err_set(err, LEV_EUNSUPP,
				   "network = false with sandbox kind none needs seccomp, which "
				   "this kernel does not offer; use kind = 'namespace' or allow "
				   "the network");
	if (lev_scfilter_build(LEV_SCFILTER_NET_ONLY, &sb->sc, &e2) < 0)
		return lev_err_set(err, LEV_EUNSUPP,
				   "network = false with sandbox kind none needs seccomp: %s",
				   e2.msg);
	sb->have_sc = true;
	sb->layers |= LEV_LAYER_SECCOMP | LEV_LAYER_NNP;
	sb->wanted |= LEV_LAYER_SECCOMP | LEV_LAYER_NNP;
	return 0;
}

void lev_sandbox_update(struct lev_sandbox *sb, const struct lev_sandbox_opts *opts)
{
	lev_strv_free(sb->env_withhold);
	lev_strv_free(sb->env_allow);
	sb->env_withhold = lev_strv_copy(opts->env.withhold);
	sb->env_allow = lev_strv_copy(opts->env.allow);
	sb->env.mode = opts->env.mode;
	sb->env.withhold = sb->env_withhold;
	sb->env.allow = sb->env_allow;
	if (opts->limits.timeout_ms && opts->limits.timeout_ms < sb->limits.timeout_ms)
		sb->limits.timeout_ms = opts->limits.timeout_ms;
	if (opts->limits.output_max && opts->limits.output_max < sb->limits.output_max)
		sb->limits.output_max = opts->limits.output_max;
}

int lev_sandbox_new(const struct lev_sandbox_spec *spec, const struct lev_sandbox_opts *opts,
		    struct lev_sandbox **out, struct lev_err *err)
{
	struct lev_sandbox *sb;
	char real[PATH_MAX];
	int r;

	sb = xcalloc(1, sizeof(*sb));
	sb->fence = xcalloc(2, sizeof(*sb->fence));
	lev_sandbox_spec_copy(&sb->spec, spec);
	sb->kind = spec->has_kind ? spec->kind : LEV_SANDBOX_NONE;
	sb->uid = getuid();
	sb->gid = getgid();
	sb->limits = opts->limits;
	lev_sandbox_limits_fill(&sb->limits);
	sb->env_withhold = lev_strv_copy(opts->env.withhold);
	sb->env_allow = lev_strv_copy(opts->env.allow);
	sb->env.mode = opts->env.mode;
	sb->env.withhold = sb->env_withhold;
	sb->env.allow = sb->env_allow;
	sb->engine_args = lev_strv_copy(opts->engine_args);
	sb->oci_helper = opts->oci_helper ? xstrdup(opts->oci_helper) : NULL;
	sb->path_env = opts->path_env ? xstrdup(opts->path_env) : NULL;
	sb->plan_only = opts->plan_only;
	if (opts->cold)
		sb->cold = xstrdup("cold start asked for");

	if (opts->home) {
		sb->home = xstrdup(opts->home);
	} else {
		r = lev_home_dir(&sb->home, err);
		if (r < 0)
			goto fail;
	}
	if (sb->home[0] != '/') {
		r = lev_err_set(err, LEV_EUSAGE, "the home directory '%s' is not absolute", sb->home);
		goto fail;
	}
	if (realpath(sb->home, real)) {
		free(sb->home);
		sb->home = xstrdup(real);
	}
	{
		struct lev_ownfiles_opts oo = { .data_root = opts->data_root };

		r = lev_ownfiles_list(&oo, &sb->own, err);
		if (r < 0)
			goto fail;
	}
	r = build_masks(sb, opts, err);
	if (r < 0)
		goto fail;
	r = check_workdir(sb, opts->workdir, err);
	if (r < 0)
		goto fail;
	r = build_writable(sb, err);
	if (r < 0)
		goto fail;
	build_read_paths(sb, opts->read_paths);
	if (sb->kind != LEV_SANDBOX_NONE) {
		/* make sure the data root exists to be masked (checked again below) */
		r = own_files_in_workdir(sb, true, err);
		if (r < 0)
			goto fail;
	}

	switch (sb->kind) {
	case LEV_SANDBOX_NONE:
		r = 0;
		break;
	case LEV_SANDBOX_NAMESPACE:
		r = lev_sbx_ns_setup(sb, err);
		break;
	case LEV_SANDBOX_CONTAINER:
	default:
		r = lev_sbx_oci_setup(sb, opts, err);
		break;
	}
	if (r == 0 && sb->kind != LEV_SANDBOX_CONTAINER && !(sb->layers & LEV_LAYER_MOUNTNS))
		r = own_files_in_workdir(sb, false, err);
	if (r == 0 && sb->kind == LEV_SANDBOX_NONE && !sb->spec.network)
		r = host_network_fence(sb, err);
	if (r < 0)
		goto fail;
	*out = sb;
	return 0;
fail:
	lev_sandbox_free(sb);
	return r;
}

struct lev_sandbox *lev_sandbox_free(struct lev_sandbox *sb)
{
	if (!sb)
		return NULL;
	lev_sbx_warm_free(sb->warm);
	free(sb->cold);
	if (sb->own_pool)
		lev_sandbox_pool_free(sb->pool);
	lev_sandbox_spec_release(&sb->spec);
	lev_scfilter_release(&sb->sc);
	free(sb->degraded);
	free(sb->workdir);
	free(sb->home);
	free(sb->resolv_target);
	lev_strv_free(sb->writable);
	lev_strv_free(sb->read_paths);
	for (size_t i = 0; sb->fence && i < 2; i++) {
		lev_strv_free(sb->fence[i].paths);
		free(sb->fence[i].access);
		free(sb->fence[i].path_env);
	}
	free(sb->fence);
	lev_strv_free(sb->masks);
	lev_ownfiles_release(&sb->own);
	lev_strv_free(sb->env_withhold);
	lev_strv_free(sb->env_allow);
	lev_strv_free(sb->engine_args);
	free(sb->oci_helper);
	free(sb->path_env);
	free(sb);
	return NULL;
}

enum lev_sandbox_kind lev_sandbox_kind(const struct lev_sandbox *sb)
{
	return sb->kind;
}

bool lev_sandbox_network(const struct lev_sandbox *sb)
{
	return sb->spec.network;
}

unsigned lev_sandbox_layers(const struct lev_sandbox *sb)
{
	return sb->layers;
}

unsigned lev_sandbox_missing(const struct lev_sandbox *sb)
{
	return sb->missing;
}

const char *lev_sandbox_degraded(const struct lev_sandbox *sb)
{
	return sb->degraded;
}

const char *lev_sandbox_cold(const struct lev_sandbox *sb)
{
	if (sb->kind != LEV_SANDBOX_NAMESPACE || !(sb->layers & LEV_LAYER_USERNS))
		return NULL;
	return sb->cold;
}

/* ---- spawn / wait ---- */

static bool cwd_ok(const struct lev_sandbox *sb, const char *cwd, char **real_out,
		   struct lev_err *err)
{
	char real[PATH_MAX];

	if (!cwd) {
		*real_out = xstrdup(sb->workdir);
		return true;
	}
	if (!realpath(cwd, real)) {
		lev_err_errno(err, -errno, "cannot use directory '%s'", cwd);
		return false;
	}
	if (!lev_path_under(real, sb->workdir)) {
		lev_err_set(err, LEV_EUSAGE, "directory '%s' is outside the sandbox workdir '%s'",
			    cwd, sb->workdir);
		return false;
	}
	*real_out = xstrdup(real);
	return true;
}

int lev_sandbox_spawn(struct lev_sandbox *sb, char *const *argv, char *const *envp,
		      const char *cwd, const struct lev_sandbox_limits *limits,
		      const struct lev_sandbox_io *io, struct lev_sandbox_proc **out,
		      struct lev_err *err)
{
	static const struct lev_sandbox_io capture = LEV_SANDBOX_IO_CAPTURE;
	struct lev_sandbox_limits lim;
	_cleanup_free_ char *realcwd = NULL;

	if (!argv || !argv[0] || !argv[0][0])
		return lev_err_set(err, LEV_EUSAGE, "no command to run");
	if (sb->plan_only)
		return lev_err_set(err, LEV_EUSAGE, "a sandbox made for a plan runs nothing");
	if (!cwd_ok(sb, cwd, &realcwd, err))
		return err ? err->code : -EINVAL;
	if (limits) {
		/* unset fields: the sandbox's own, then the defaults */
		lim = *limits;
		lim.timeout_ms = lim.timeout_ms ? lim.timeout_ms : sb->limits.timeout_ms;
		lim.output_max = lim.output_max ? lim.output_max : sb->limits.output_max;
		lim.nproc = lim.nproc ? lim.nproc : sb->limits.nproc;
		lim.mem_bytes = lim.mem_bytes ? lim.mem_bytes : sb->limits.mem_bytes;
		lim.fsize = lim.fsize ? lim.fsize : sb->limits.fsize;
		lim.nofile = lim.nofile ? lim.nofile : sb->limits.nofile;
		lim.cpu_secs = lim.cpu_secs ? lim.cpu_secs : sb->limits.cpu_secs;
		lim.tmp_bytes = lim.tmp_bytes ? lim.tmp_bytes : sb->limits.tmp_bytes;
		lev_sandbox_limits_fill(&lim);
	} else {
		lim = sb->limits;
	}
	if (!io)
		io = &capture;
	if (sb->kind == LEV_SANDBOX_CONTAINER)
		return lev_sbx_oci_spawn(sb, argv, envp, realcwd, &lim, io, out, err);
	return lev_sbx_ns_spawn(sb, argv, envp, realcwd, &lim, io, out, err);
}

static void kill_proc(struct lev_sandbox_proc *p)
{
	switch (p->mode) {
	case LEV_SBX_NS_WARM:
		/* the cell's pidfd comes once a cell took the command: wait for it */
		if (!p->reaped && !p->warm_done && lev_sbx_warm_pidfd(p, true) == 0)
			(void)syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
		break;
	case LEV_SBX_OCI_FAST:
		lev_sbx_oci_kill(p);
		break;
	case LEV_SBX_PLAIN:
		if (p->pid > 0 && !p->reaped)
			(void)kill(-p->pid, SIGKILL);
		/* fall through */
	case LEV_SBX_NS:
	case LEV_SBX_OCI_EXEC:
	default:
		if (p->pidfd >= 0 && !p->reaped)
			(void)syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
		break;
	}
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

struct stream {
	int *fd;
	int fwd;
	struct lev_buf buf;
	uint64_t total;
	bool truncated;
	bool fwd_broken;
};

static void drain(struct stream *s, uint64_t cap)
{
	char chunk[READ_CHUNK];
	ssize_t n = read(*s->fd, chunk, sizeof(chunk));

	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return;
		close_fd(s->fd);
		return;
	}
	if (n == 0) {
		close_fd(s->fd);
		return;
	}
	{
		uint64_t keep = 0;

		if (s->total < cap)
			keep = cap - s->total < (uint64_t)n ? cap - s->total : (uint64_t)n;
		if (keep < (uint64_t)n)
			s->truncated = true;
		s->total += (uint64_t)n;
		if (!keep)
			return;
		if (s->fwd >= 0) {
			if (!s->fwd_broken && lev_write_all(s->fwd, chunk, keep) < 0)
				s->fwd_broken = true;
		} else {
			(void)lev_buf_add(&s->buf, chunk, keep);
		}
	}
}

static void status_to_result(int wstatus, struct lev_sandbox_result *res)
{
	if (WIFSIGNALED(wstatus)) {
		res->signaled = true;
		res->signal = WTERMSIG(wstatus);
		res->exit_code = 128 + res->signal;
	} else if (WIFEXITED(wstatus)) {
		res->exit_code = WEXITSTATUS(wstatus);
	} else {
		res->exit_code = 128 + SIGKILL;
		res->signaled = true;
		res->signal = SIGKILL;
	}
}

/*
 * A warm cell is the helper's child, not ours: it is gone (with its whole
 * PID namespace) when its pidfd is readable.
 */
static bool reap_cell(struct lev_sandbox_proc *p, int *wstatus, bool block)
{
	struct pollfd pf = { p->pidfd, POLLIN, 0 };

	if (p->warm_done) {
		p->reaped = true;
		return true;
	}
	if (p->pidfd < 0) {
		/* no cell has taken it yet: wait for its pidfd (or learn there is none) */
		int r = lev_sbx_warm_pidfd(p, block);

		if (r < 0) {
			p->reaped = true;
			*wstatus = SIGKILL;
			return true;
		}
		if (r > 0)
			return false;
		pf.fd = p->pidfd;
	}
	while (poll(&pf, 1, block ? -1 : 0) < 0)
		if (errno != EINTR)
			break;
	if (!pf.revents)
		return false;
	p->reaped = true;
	*wstatus = SIGKILL;	/* WIFSIGNALED, unless the status pipe says otherwise */
	return true;
}

/* Reap our child through its pidfd; returns true when it is gone. */
static bool reap(struct lev_sandbox_proc *p, int *wstatus, bool block)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (!p->reaped && p->mode == LEV_SBX_NS_WARM)
		return reap_cell(p, wstatus, block);
	if (p->reaped || p->pidfd < 0)
		return p->reaped;
	while (waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED | (block ? 0 : WNOHANG)) < 0) {
		if (errno != EINTR) {
			p->reaped = true;
			*wstatus = SIGKILL;	/* WIFSIGNALED */
			return true;
		}
	}
	if (si.si_pid == 0)
		return false;
	p->reaped = true;
	if (si.si_code == CLD_EXITED)
		*wstatus = (si.si_status & 0xff) << 8;
	else
		*wstatus = si.si_status & 0x7f;
	return true;
}

/* What lev_sandbox_wait() has learnt so far about one command. */
struct waiter {
	struct stream so, se;
	struct lev_sbx_report setup;	/* the set-up failure reported, when setup_failed */
	bool have_status, killed, setup_failed, timed_out, cancelled;
	int wstatus, exec_errno, child_status;
	uint64_t deadline, grace_end;	/* grace_end: 0 until the end is in sight */
};

enum wait_fd { WAIT_OUT, WAIT_ERR, WAIT_REPORT, WAIT_PIDFD, WAIT_SOCK, WAIT_CANCEL, WAIT_STATUS };

/* Kill the command and give its streams a grace period to drain. */
static void kill_with_grace(struct lev_sandbox_proc *p, struct waiter *w)
{
	kill_proc(p);
	w->killed = true;
	w->grace_end = lev_monotonic_ms() + GRACE_MS;
}

static void start_grace(struct waiter *w)
{
	if (!w->grace_end)
		w->grace_end = lev_monotonic_ms() + GRACE_MS;
}

/* The fds still worth watching, into PF and IDX (enum wait_fd); their number. */
static int wait_fds(const struct lev_sandbox_proc *p, const struct waiter *w, struct pollfd *pf,
		    enum wait_fd *idx)
{
	int nf = 0;

#define ADD(fdv, tag)                                  \
	do {                                           \
		if ((fdv) >= 0) {                      \
			pf[nf].fd = (fdv);             \
			pf[nf].events = POLLIN;        \
			pf[nf].revents = 0;            \
			idx[nf++] = (tag);             \
		}                                      \
	} while (0)
	ADD(p->out_fd, WAIT_OUT);
	ADD(p->err_fd, WAIT_ERR);
	ADD(p->report_fd, WAIT_REPORT);
	if (!p->reaped)
		ADD(p->pidfd, WAIT_PIDFD);
	if (p->mode == LEV_SBX_OCI_FAST && !w->have_status)
		ADD(p->sock, WAIT_SOCK);
	if (p->mode == LEV_SBX_NS_WARM && !w->have_status)
		ADD(p->status_fd, WAIT_STATUS);
	if (!w->killed)
		ADD(p->cancel_fd, WAIT_CANCEL);
#undef ADD
	return nf;
}

static void handle_report(struct lev_sandbox_proc *p, struct waiter *w,
			  const struct lev_sbx_report *r);

/* The child's report: exec's errno, or the set-up step that failed (then kill it). */
static void on_report(struct lev_sandbox_proc *p, struct waiter *w)
{
	struct lev_sbx_report rep;
	ssize_t k = read(p->report_fd, &rep, sizeof(rep));

	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (k != (ssize_t)sizeof(rep) || rep.magic != LEV_SBX_REPORT_MAGIC) {
		close_fd(&p->report_fd);
		return;
	}
	handle_report(p, w, &rep);
}

static void handle_report(struct lev_sandbox_proc *p, struct waiter *w,
			  const struct lev_sbx_report *r)
{
	struct lev_sbx_report rep = *r;

	if (rep.phase == LEV_SBX_PH_EXEC) {
		w->exec_errno = rep.err;
	} else if (!w->setup_failed) {
		w->setup = rep;
		w->setup_failed = true;
		if (!w->killed)
			kill_with_grace(p, w);
	}
}

/* The child we started exited: its status (or the namespace init's report of it). */
static void on_child_exit(struct lev_sandbox_proc *p, struct waiter *w)
{
	if (!reap(p, &w->child_status, false))
		return;
	if (p->mode == LEV_SBX_NS_WARM) {
		struct lev_sbx_report rep;

		while (!p->warm_done && lev_sbx_warm_read(p, &rep) > 0)
			;
		w->wstatus = p->warm_done ? p->warm_status : w->child_status;
	} else if (p->mode == LEV_SBX_NS) {
		int st;
		ssize_t k = p->status_fd >= 0 ? read(p->status_fd, &st, sizeof(st)) : -1;

		w->wstatus = k == (ssize_t)sizeof(st) ? st : w->child_status;
	} else if (p->mode != LEV_SBX_OCI_FAST) {
		w->wstatus = w->child_status;
	}
	if (p->mode != LEV_SBX_OCI_FAST)
		w->have_status = true;
	if (p->mode == LEV_SBX_PLAIN && p->pid > 0)
		(void)kill(-p->pid, SIGKILL);	/* leftovers */
	start_grace(w);
}

/*
 * A warm cell's status: it writes the command's wait status once every
 * other process of its PID namespace is gone, then exits, so the command
 * is over (nothing left to kill or reap).  EOF: the cell was killed, and
 * its pidfd says when its namespace is gone.
 */
static void on_cell_status(struct lev_sandbox_proc *p, struct waiter *w)
{
	struct lev_sbx_report rep;
	int r;

	while ((r = lev_sbx_warm_read(p, &rep)) == 3)
		handle_report(p, w, &rep);
	if (p->warm_done) {
		close_fd(&p->status_fd);
		w->wstatus = p->warm_status;
		w->have_status = true;
		p->reaped = true;
		start_grace(w);
	} else if (r < 0 && lev_sbx_warm_pidfd(p, true) < 0 && !w->setup_failed) {
		/* the helper died before any cell took the command: it never ran */
		w->setup.magic = LEV_SBX_REPORT_MAGIC;
		w->setup.phase = LEV_SBX_PH_HELPER;
		w->setup.err = EPIPE;
		w->setup_failed = true;
		p->reaped = true;
		start_grace(w);
	}
	/* else at EOF: the cell was killed; its pidfd says when its namespace is gone */
}

/* The container helper's answer: the command's status and exec's errno. */
static void on_helper_answer(struct lev_sandbox_proc *p, struct waiter *w)
{
	int st = 0, ee = 0;

	if (lev_sbx_oci_read_answer(p, &st, &ee) == 0) {
		w->wstatus = st;
		if (ee)
			w->exec_errno = ee;
	} else {
		w->wstatus = SIGKILL;
	}
	w->have_status = true;
	close_fd(&p->sock);
	start_grace(w);
}

/*
 * Poll until the command has a status and its streams are drained, or the
 * grace period after a kill is over.  0, or a negative errno when poll fails.
 */
static int wait_loop(struct lev_sandbox_proc *p, struct waiter *w)
{
	for (;;) {
		struct pollfd pf[7];
		enum wait_fd idx[7];
		int nf, i, n, tmo;
		uint64_t now = lev_monotonic_ms(), until;

		if (w->have_status && p->out_fd < 0 && p->err_fd < 0 && p->report_fd < 0)
			return 0;
		if (w->grace_end && now >= w->grace_end)
			return 0;
		if (!w->killed && now >= w->deadline) {
			kill_with_grace(p, w);
			w->timed_out = true;
		}
		until = w->grace_end ? w->grace_end : w->deadline;
		tmo = until > now ? (int)(until - now > 60000 ? 60000 : until - now) : 0;

		nf = wait_fds(p, w, pf, idx);
		if (nf == 0) {
			if (!w->have_status) {
				/* nothing left to watch but no status: give up */
				w->wstatus = SIGKILL;
				w->have_status = true;
			}
			return 0;
		}
		n = poll(pf, (nfds_t)nf, tmo);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (i = 0; i < nf; i++) {
			if (!pf[i].revents)
				continue;
			switch (idx[i]) {
			case WAIT_OUT:
				drain(&w->so, p->output_max);
				break;
			case WAIT_ERR:
				drain(&w->se, p->output_max);
				break;
			case WAIT_REPORT:
				on_report(p, w);
				break;
			case WAIT_PIDFD:
				on_child_exit(p, w);
				break;
			case WAIT_SOCK:
				on_helper_answer(p, w);
				break;
			case WAIT_STATUS:
				on_cell_status(p, w);
				break;
			case WAIT_CANCEL:
				kill_with_grace(p, w);
				w->cancelled = true;
				break;
			}
		}
	}
}

/* Make sure the child is gone before reporting. */
static void wait_reap(struct lev_sandbox_proc *p, struct waiter *w)
{
	if (!p->reaped && (p->pidfd >= 0 || p->mode == LEV_SBX_NS_WARM)) {
		if (!w->have_status)
			kill_proc(p);
		if (!reap(p, &w->child_status, false)) {
			kill_proc(p);
			(void)reap(p, &w->child_status, true);
		}
		if (!w->have_status)
			w->wstatus = w->child_status;
	}
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	close_fd(&p->report_fd);
}

/* What W learnt, into RES; the captured output moves there. */
static void wait_result(const struct lev_sandbox_proc *p, struct waiter *w,
			struct lev_sandbox_result *res)
{
	status_to_result(w->wstatus, res);
	if (w->timed_out || w->cancelled) {
		res->signaled = true;
		res->signal = SIGKILL;
		res->exit_code = 128 + SIGKILL;
	}
	res->timed_out = w->timed_out;
	res->cancelled = w->cancelled;
	res->exec_errno = w->exec_errno;
	if (w->exec_errno && !w->timed_out && !w->cancelled) {
		res->signaled = false;
		res->signal = 0;
		res->exit_code = w->exec_errno == ENOENT ? 127 : 126;
	}
	if (p->fwd_out < 0)
		res->out = lev_buf_detach(&w->so.buf, &res->out_len);
	if (p->fwd_err < 0)
		res->err = lev_buf_detach(&w->se.buf, &res->err_len);
	res->out_total = w->so.total;
	res->err_total = w->se.total;
	res->out_truncated = w->so.truncated;
	res->err_truncated = w->se.truncated;
	res->layers = p->sb->layers;
	res->warm = p->mode == LEV_SBX_NS_WARM;
	res->elapsed_ms = lev_monotonic_ms() - p->start_ms;
	res->timeout_ms = p->timeout_ms;
}

int lev_sandbox_wait(struct lev_sandbox_proc *p, struct lev_sandbox_result *res,
		     struct lev_err *err)
{
	struct waiter w = {
		.so = { &p->out_fd, p->fwd_out, LEV_BUF_INIT, 0, false, false },
		.se = { &p->err_fd, p->fwd_err, LEV_BUF_INIT, 0, false, false },
		.deadline = p->start_ms + p->timeout_ms,
	};
	int r;

	memset(res, 0, sizeof(*res));
	r = wait_loop(p, &w);
	if (r < 0) {
		kill_proc(p);
		r = lev_err_errno(err, r, "cannot wait for the command");
		goto out;
	}
	wait_reap(p, &w);
	if (w.setup_failed) {
		lev_sbx_ns_explain(p, &w.setup, err);
		r = err ? err->code : -EIO;
		goto out;
	}
	if (p->mode == LEV_SBX_OCI_FAST || p->mode == LEV_SBX_OCI_EXEC) {
		r = lev_sbx_oci_after(p, err);
		if (r < 0)
			goto out;
	}
	wait_result(p, &w, res);
	r = 0;
out:
	lev_buf_release(&w.so.buf);
	lev_buf_release(&w.se.buf);
	return r;
}

int lev_sandbox_proc_take_output(struct lev_sandbox_proc *p, int *out_fd, int *err_fd)
{
	if (!p || p->out_fd < 0 || p->err_fd < 0 || p->fwd_out >= 0 || p->fwd_err >= 0)
		return -EINVAL;
	*out_fd = TAKE_FD(p->out_fd);
	*err_fd = TAKE_FD(p->err_fd);
	return 0;
}

struct lev_sandbox_proc *lev_sandbox_proc_free(struct lev_sandbox_proc *p)
{
	int st;

	if (!p)
		return NULL;
	if (p->mode == LEV_SBX_OCI_FAST && p->sock >= 0)
		lev_sbx_oci_kill(p);
	if (!p->reaped && (p->pidfd >= 0 || p->mode == LEV_SBX_NS_WARM)) {
		kill_proc(p);
		(void)reap(p, &st, true);
	}
	close_fd(&p->pidfd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	close_fd(&p->report_fd);
	close_fd(&p->status_fd);
	close_fd(&p->sock);
	if (p->tmpdir) {
		(void)lev_rm_rf(p->tmpdir, NULL);
		free(p->tmpdir);
	}
	lev_sbx_nsplan_free(p->plan);
	free(p->cwd);
	free(p->argv0);
	free(p);
	return NULL;
}

void lev_sandbox_result_release(struct lev_sandbox_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* ---- describe ---- */

static int print_json_text(json_t *v, int indent, struct lev_buf *out);

static int print_scalar(json_t *v, struct lev_buf *out)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return lev_buf_adds(out, json_string_value(v));
	case JSON_INTEGER:
		return lev_buf_addf(out, "%lld", (long long)json_integer_value(v));
	case JSON_TRUE:
		return lev_buf_adds(out, "yes");
	case JSON_FALSE:
		return lev_buf_adds(out, "no");
	case JSON_NULL:
		return lev_buf_adds(out, "-");
	default:
		return 0;
	}
}

static int print_json_text(json_t *v, int indent, struct lev_buf *out)
{
	const char *key;
	json_t *val;
	size_t i;
	int r = 0;

	json_object_foreach(v, key, val) {
		r = lev_buf_addf(out, "%*s%s:", indent, "", key);
		if (r < 0)
			return r;
		if (json_is_object(val)) {
			r = lev_buf_addch(out, '\n');
			if (r == 0)
				r = print_json_text(val, indent + 2, out);
		} else if (json_is_array(val)) {
			json_t *item;

			if (json_array_size(val) == 0)
				r = lev_buf_adds(out, " (none)\n");
			else
				r = lev_buf_addch(out, '\n');
			json_array_foreach(val, i, item) {
				if (r < 0)
					break;
				r = lev_buf_addf(out, "%*s  ", indent, "");
				if (r == 0)
					r = print_scalar(item, out);
				if (r == 0)
					r = lev_buf_addch(out, '\n');
			}
		} else {
			r = lev_buf_addch(out, ' ');
			if (r == 0)
				r = print_scalar(val, out);
			if (r == 0)
				r = lev_buf_addch(out, '\n');
		}
		if (r < 0)
			return r;
	}
	return r;
}

static json_t *layers_json(unsigned layers)
{
	json_t *a = json_array();
	int i;

	for (i = 0; i < _LEV_LAYER_COUNT; i++)
		if (layers & (1u << i))
			json_array_append_new(a, json_string(layer_names[i]));
	return a;
}

int lev_sandbox_describe(const struct lev_sandbox *sb, char *const *argv, const char *cwd,
			 bool json, struct lev_buf *out, struct lev_err *err)
{
	json_t *o = json_object();
	char *const *a;
	json_t *av = json_array();
	int r;

	json_object_set_new(o, "kind", json_string(lev_sandbox_kind_name(sb->kind)));
	json_object_set_new(o, "layers", layers_json(sb->layers));
	json_object_set_new(o, "missing", layers_json(sb->missing));
	if (sb->degraded)
		json_object_set_new(o, "degraded", json_string(sb->degraded));
	{
		/* the resolved [sandbox] this came from (after the clamps) */
		json_t *rv = json_object(), *m = json_array();
		char *const *s;

		json_object_set_new(rv, "kind", json_string(lev_sandbox_kind_name(sb->spec.kind)));
		json_object_set_new(rv, "network", json_boolean(sb->spec.network));
		json_object_set_new(rv, "image", sb->spec.image ? json_string(sb->spec.image) : json_null());
		json_object_set_new(rv, "engine", sb->spec.engine ? json_string(sb->spec.engine) : json_null());
		for (s = sb->spec.mounts; s && *s; s++)
			json_array_append_new(m, json_string(*s));
		json_object_set_new(rv, "mounts", m);
		json_object_set_new(rv, "on_unavailable",
				    json_string(lev_on_unavailable_name(sb->spec.on_unavailable)));
		json_object_set_new(o, "resolved", rv);
	}
	json_object_set_new(o, "on_unavailable",
			    json_string(lev_on_unavailable_name(sb->spec.on_unavailable)));
	json_object_set_new(o, "network", json_boolean(sb->spec.network));
	json_object_set_new(o, "workdir", json_string(sb->workdir));
	json_object_set_new(o, "cwd", json_string(cwd ? cwd : sb->workdir));
	for (a = argv; a && *a; a++)
		json_array_append_new(av, json_string(*a));
	json_object_set_new(o, "argv", av);
	{
		json_t *lim = json_object();

		json_object_set_new(lim, "timeout_ms", json_integer((json_int_t)sb->limits.timeout_ms));
		json_object_set_new(lim, "output_max", json_integer((json_int_t)sb->limits.output_max));
		json_object_set_new(o, "limits", lim);
	}
	if (sb->kind == LEV_SANDBOX_CONTAINER)
		r = lev_sbx_oci_describe(sb, argv, cwd, o, out, err);
	else
		r = lev_sbx_ns_describe(sb, argv, cwd, o, out, err);
	if (r == 0) {
		if (json) {
			char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

			if (!s) {
				r = lev_err_set(err, -ENOMEM, "cannot format the plan");
			} else {
				r = lev_buf_adds(out, s);
				if (r == 0)
					r = lev_buf_addch(out, '\n');
				free(s);
			}
		} else {
			r = print_json_text(o, 0, out);
		}
		if (r == -E2BIG)
			r = lev_err_set(err, r, "the plan is too large to print");
	}
	json_decref(o);
	return r;
}

/* ---- probe ---- */

int lev_sbx_oci_probe_engines(const char *path_env, struct lev_sandbox_probe *out);

int lev_sandbox_probe(const char *path_env, struct lev_sandbox_probe *out, struct lev_err *err)
{
	const struct lev_sbx_kernel *k = lev_sbx_kernel();
	long fd;

	(void)err;
	memset(out, 0, sizeof(*out));
	out->userns = k->userns;
	out->mount_api = k->mount_api;
	out->landlock_abi = k->landlock_abi;
	out->seccomp = k->seccomp;
	out->pidmax_ns = k->pidmax_ns;
	out->root = getuid() == 0;
	{
		struct {
			uint64_t flags, mode, resolve;
		} how = { O_RDONLY | O_CLOEXEC | O_DIRECTORY, 0, 0 };

		fd = syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));
		if (fd < 0) {
			out->openat2 = -errno;
		} else {
			out->openat2 = 0;
			close((int)fd);
		}
	}
	return lev_sbx_oci_probe_engines(path_env, out);
}

void lev_sandbox_probe_release(struct lev_sandbox_probe *p)
{
	size_t i;

	for (i = 0; i < p->n_engines; i++) {
		free(p->engines[i].name);
		free(p->engines[i].path);
		free(p->engines[i].version);
	}
	memset(p, 0, sizeof(*p));
}

unsigned lev_sandbox_probe_layers(const struct lev_sandbox_probe *p, bool network)
{
	unsigned l = LEV_LAYER_NNP | LEV_LAYER_CAPS | LEV_LAYER_RLIMITS;

	if (p->root && (p->pidmax_ns < 0 || p->userns < 0))
		l &= ~LEV_LAYER_RLIMITS;	/* nothing caps root's processes */
	if (p->userns == 0) {
		l |= LEV_LAYER_USERNS | LEV_LAYER_PIDNS | LEV_LAYER_IPCNS | LEV_LAYER_UTSNS;
		if (!network)
			l |= LEV_LAYER_NETNS;
		if (p->mount_api == 0)
			l |= LEV_LAYER_MOUNTNS;
	}
	if (p->landlock_abi > 0)
		l |= LEV_LAYER_LANDLOCK;
	if (p->seccomp == 0)
		l |= LEV_LAYER_SECCOMP;
	return l;
}
