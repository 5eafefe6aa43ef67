/*
 * sandbox-oci.c - the container backend: Docker or Podman through their
 * CLI, always with an argv array (posix_spawn, never a shell string).
 *
 * One warm container per distinct (engine, engine args, image, network,
 * mounts, workdir) lives in a pool for the run; identical stage configs
 * share it, and freeing the pool removes every container, on error paths
 * too.  Each container carries labels naming the run, the owning lev
 * (host:pid:start time) and the uid, so containers left behind by a lev
 * that died are removed the next time a pool starts one on that engine.
 *
 * Fixed relative to the original (leviath-spec §5.3, §12): commands run as
 * the invoking uid:gid, so files in the workdir never come out root-owned
 * (rootless podman runs them as its root, which is the caller); a refused
 * mount is an error, not a silent drop; mounts are read-only without any
 * ":ro" suffix games.
 *
 * Fast path: the container's main process is lev-oci-helper, listening on
 * a UNIX socket in a bind-mounted directory.  A command is one connect(),
 * one sendmsg() carrying the stdio descriptors, and the helper's fork+exec
 * inside the container, instead of an `<engine> exec` (~100 ms).  The
 * helper also installs lev's seccomp filter before exec, so io_uring,
 * ptrace, TIOCSTI and friends are refused inside containers too.  lev
 * checks the listener's SO_PEERCRED pid against the container's main
 * process, so a command cannot plant a fake helper for the next one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/policy/envfilter.h"
#include "liblev/sandbox/oci-proto.h"
#include "liblev/sandbox/sandbox-internal.h"
#include "liblev/sandbox/sandbox-oci.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

extern char **environ;

#define RUN_TIMEOUT_MS 120000
#define CMD_TIMEOUT_MS 30000
#define READY_TIMEOUT_MS 15000
#define CAPTURE_MAX (64 * 1024)

/* ---- pure parts ---- */

static char **start_argv(const char *engine, char *const *engine_args)
{
	char **v = lev_strv_push(NULL, engine);
	char *const *a;

	for (a = engine_args; a && *a; a++)
		v = lev_strv_push(v, *a);
	return v;
}

char **lev_oci_run_argv(const struct lev_oci_run_cfg *c)
{
	char **v = start_argv(c->engine, c->engine_args);
	char *const *m;

	v = lev_strv_push(v, "run");
	v = lev_strv_push(v, "-d");
	v = lev_strv_push(v, "--rm");
	/* the image comes from the user's machine: never from a registry */
	v = lev_strv_push(v, "--pull=never");
	v = lev_strv_push(v, "--name");
	v = lev_strv_push(v, c->name);
	v = lev_strv_push(v, "--label");
	v = lev_strv_push(v, "lev.sandbox=1");
	v = lev_strv_push(v, "--label");
	v = lev_strv_push_take(v, xasprintf("lev.run=%s", c->run_id));
	v = lev_strv_push(v, "--label");
	v = lev_strv_push_take(v, xasprintf("lev.owner=%s", c->owner));
	v = lev_strv_push(v, "--label");
	v = lev_strv_push_take(v, xasprintf("lev.uid=%u", (unsigned)c->label_uid));
	if (c->host_dir) {
		v = lev_strv_push(v, "--label");
		v = lev_strv_push_take(v, xasprintf("lev.dir=%s", c->host_dir));
	}
	v = lev_strv_push(v, "--cap-drop");
	v = lev_strv_push(v, "ALL");
	if (c->setfcap) {
		v = lev_strv_push(v, "--cap-add");
		v = lev_strv_push(v, "SETFCAP");
	}
	v = lev_strv_push(v, "--security-opt");
	v = lev_strv_push(v, "no-new-privileges");
	v = lev_strv_push(v, "--pids-limit");
	v = lev_strv_push_take(v, xasprintf("%llu", (unsigned long long)c->pids));
	v = lev_strv_push(v, "--memory");
	v = lev_strv_push_take(v, xasprintf("%llu", (unsigned long long)c->mem_bytes));
	v = lev_strv_push(v, "--ulimit");
	v = lev_strv_push_take(v, xasprintf("nofile=%llu:%llu", (unsigned long long)c->nofile,
					     (unsigned long long)c->nofile));
	v = lev_strv_push(v, "--ulimit");
	v = lev_strv_push_take(v, xasprintf("nproc=%llu:%llu", (unsigned long long)c->nproc,
					     (unsigned long long)c->nproc));
	if (!c->network) {
		v = lev_strv_push(v, "--network");
		v = lev_strv_push(v, "none");
	}
	/* files in the workdir must come out the caller's: rootful engines run
	 * the uid the caller picked (never root); a rootless engine maps its
	 * root to the caller */
	v = lev_strv_push(v, "--user");
	if (c->rootless)
		v = lev_strv_push(v, "0:0");
	else
		v = lev_strv_push_take(v, xasprintf("%u:%u", (unsigned)c->uid, (unsigned)c->gid));
	/* the environment is exactly lev's: no host proxies, no engine defaults */
	if (c->podman) {
		v = lev_strv_push(v, "--http-proxy=false");
		v = lev_strv_push(v, "--unsetenv-all");
	}
	for (m = c->env; m && *m; m++) {
		v = lev_strv_push(v, "-e");
		v = lev_strv_push(v, *m);
	}
	v = lev_strv_push(v, "--read-only");
	v = lev_strv_push(v, "--tmpfs");
	v = lev_strv_push(v, "/tmp");
	v = lev_strv_push(v, "-v");
	if (c->podman)
		v = lev_strv_push_take(v, xasprintf("%s:%s:nosuid,nodev", c->workdir, c->workdir));
	else
		v = lev_strv_push_take(v, xasprintf("%s:%s", c->workdir, c->workdir));
	v = lev_strv_push(v, "-w");
	v = lev_strv_push(v, c->workdir);
	for (m = c->hide_dirs; c->empty_dir && m && *m; m++) {
		v = lev_strv_push(v, "-v");
		v = lev_strv_push_take(v, xasprintf("%s:%s:ro", c->empty_dir, *m));
	}
	for (m = c->hide_files; c->empty_file && m && *m; m++) {
		v = lev_strv_push(v, "-v");
		v = lev_strv_push_take(v, xasprintf("%s:%s:ro", c->empty_file, *m));
	}
	for (m = c->mounts; m && *m; m++) {
		v = lev_strv_push(v, "-v");
		v = lev_strv_push_take(v, xasprintf("%s:%s:ro", *m, *m));
	}
	if (c->helper_dir) {
		v = lev_strv_push(v, "-v");
		v = lev_strv_push_take(v, xasprintf("%s:%s:ro", c->helper_dir, LEV_OCI_DIR));
		v = lev_strv_push(v, "-v");
		v = lev_strv_push_take(v, xasprintf("%s:%s", c->sock_dir, LEV_OCI_SOCK_DIR));
		v = lev_strv_push(v, "--entrypoint");
		v = lev_strv_push(v, LEV_OCI_DIR "/" LEV_OCI_HELPER_NAME);
		v = lev_strv_push(v, c->image);
		v = lev_strv_push(v, "serve");
		v = lev_strv_push(v, LEV_OCI_SOCK_DIR "/" LEV_OCI_SOCK_NAME);
	} else {
		v = lev_strv_push(v, "--entrypoint");
		v = lev_strv_push(v, "sleep");
		v = lev_strv_push(v, c->image);
		v = lev_strv_push(v, "infinity");
	}
	return v;
}

char **lev_oci_exec_argv(const char *engine, char *const *engine_args, const char *name,
			 const char *cwd, bool interactive, bool helper, bool seccomp,
			 uint64_t timeout_ms, char *const *env, char *const *argv)
{
	char **v = start_argv(engine, engine_args);
	char *const *a;

	v = lev_strv_push(v, "exec");
	if (interactive)
		v = lev_strv_push(v, "-i");
	for (a = env; a && *a; a++) {
		v = lev_strv_push(v, "-e");
		v = lev_strv_push(v, *a);
	}
	v = lev_strv_push(v, "-w");
	v = lev_strv_push(v, cwd);
	v = lev_strv_push(v, name);
	if (helper) {
		v = lev_strv_push(v, LEV_OCI_DIR "/" LEV_OCI_HELPER_NAME);
		v = lev_strv_push(v, "run");
		v = lev_strv_push(v, "--timeout-ms");
		v = lev_strv_push_take(v, xasprintf("%llu", (unsigned long long)timeout_ms));
		if (seccomp) {
			v = lev_strv_push(v, "--seccomp");
			v = lev_strv_push(v, LEV_OCI_DIR "/" LEV_OCI_FILTER_NAME);
		}
		v = lev_strv_push(v, "--");
	}
	for (a = argv; a && *a; a++)
		v = lev_strv_push(v, *a);
	return v;
}

bool lev_oci_is_podman(const char *engine)
{
	const char *base = strrchr(engine, '/');

	base = base ? base + 1 : engine;
	return !strncmp(base, "podman", 6);
}

char **lev_oci_rm_argv(const char *engine, char *const *engine_args, const char *name)
{
	char **v = start_argv(engine, engine_args);

	v = lev_strv_push(v, "rm");
	v = lev_strv_push(v, "-f");
	if (lev_oci_is_podman(engine)) {
		v = lev_strv_push(v, "-t");
		v = lev_strv_push(v, "0");
	}
	v = lev_strv_push(v, name);
	return v;
}

char **lev_oci_ps_argv(const char *engine, char *const *engine_args, uid_t uid)
{
	char **v = start_argv(engine, engine_args);

	v = lev_strv_push(v, "ps");
	v = lev_strv_push(v, "-a");
	v = lev_strv_push(v, "-q");
	v = lev_strv_push(v, "--filter");
	v = lev_strv_push(v, "label=lev.sandbox=1");
	v = lev_strv_push(v, "--filter");
	v = lev_strv_push_take(v, xasprintf("label=lev.uid=%u", (unsigned)uid));
	return v;
}

static const char *const mount_denylist[] = {
	"/", "/proc", "/sys", "/dev", "/etc", "/boot", "/run", "/var/run",
	"/var/run/docker.sock", "/run/docker.sock", "/run/podman", "/var/run/podman",
	"/run/containerd", "/var/run/containerd", "/var/lib/docker", "/var/lib/containers",
};

int lev_oci_mount_normalize(const char *path, char **out, struct lev_err *err)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(PATH_MAX);
	const char *s;
	size_t i;

	if (!path || !*path)
		return lev_err_set(err, LEV_EUSAGE, "an empty mount is not allowed");
	if (strlen(path) >= PATH_MAX)
		return lev_err_set(err, LEV_EUSAGE, "mount '%.64s...' is too long", path);
	if (path[0] != '/')
		return lev_err_set(err, LEV_EUSAGE,
				   "mount '%s' is not absolute (a relative path would resolve "
				   "against the engine's directory)", path);
	if (strchr(path, ':'))
		return lev_err_set(err, LEV_EUSAGE,
				   "mount '%s' contains ':'; mounts are always read-only, write the "
				   "path alone", path);
	/* collapse "//" and "/./", refuse "..", drop a trailing "/" */
	for (s = path; *s;) {
		const char *e;
		size_t k;

		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchr(s, '/');
		k = e ? (size_t)(e - s) : strlen(s);
		if (k == 2 && s[0] == '.' && s[1] == '.') {
			lev_buf_release(&b);
			return lev_err_set(err, LEV_EUSAGE, "mount '%s' contains '..'", path);
		}
		if (!(k == 1 && s[0] == '.'))
			(void)(lev_buf_addch(&b, '/') == 0 && lev_buf_add(&b, s, k) == 0);
		s += k;
	}
	if (b.len == 0)
		(void)lev_buf_addch(&b, '/');
	for (i = 0; i < ARRAY_SIZE(mount_denylist); i++) {
		const char *d = mount_denylist[i];

		if (!strcmp(d, "/")) {
			/* everything lies beneath "/": only "/" itself is refused here */
			if (strcmp(b.buf, "/") != 0)
				continue;
		}
		if (lev_path_under(b.buf, d)) {
			lev_buf_release(&b);
			return lev_err_set(err, LEV_EUSAGE,
					   "mount '%s' is not allowed: it exposes '%s' to the container",
					   path, d);
		}
		if (lev_path_under(d, b.buf)) {
			lev_buf_release(&b);
			return lev_err_set(err, LEV_EUSAGE,
					   "mount '%s' is not allowed: it contains '%s'", path, d);
		}
	}
	*out = lev_buf_detach(&b, NULL);
	return 0;
}

int lev_oci_mount_check(const char *path, struct lev_err *err)
{
	char *norm = NULL;
	int r = lev_oci_mount_normalize(path, &norm, err);

	free(norm);
	return r;
}

char *lev_oci_container_name(const char *run_id, uint64_t sig)
{
	char *s = xasprintf("lev-%s-%016llx", run_id, (unsigned long long)sig);
	char *c;

	for (c = s + 4; *c && c < s + strlen(s) - 17; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
			*c = '-';
	return s;
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	h ^= 0xff;	/* field separator */
	h *= 1099511628211ULL;
	return h;
}

uint64_t lev_oci_signature(const char *engine, char *const *engine_args, const char *image,
			   bool network, char *const *mounts, const char *workdir)
{
	uint64_t h = 14695981039346656037ULL;
	char *const *a;

	h = fnv(h, engine);
	for (a = engine_args; a && *a; a++)
		h = fnv(h, *a);
	h = fnv(h, "|");
	h = fnv(h, image);
	h = fnv(h, network ? "net" : "nonet");
	for (a = mounts; a && *a; a++)
		h = fnv(h, *a);
	h = fnv(h, "|");
	h = fnv(h, workdir);
	return h;
}

char *lev_oci_find_engine(const char *name, const char *path_env)
{
	const char *p, *colon;
	struct stat st;

	if (!name || !*name)
		return NULL;
	if (strchr(name, '/')) {
		if (stat(name, &st) == 0 && S_ISREG(st.st_mode) && access(name, X_OK) == 0)
			return xstrdup(name);
		return NULL;
	}
	p = path_env ? path_env : getenv("PATH");
	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	for (;;) {
		size_t n;
		char *cand;

		colon = strchr(p, ':');
		n = colon ? (size_t)(colon - p) : strlen(p);
		if (n > 0 && p[0] == '/') {
			cand = xasprintf("%.*s/%s", (int)n, p, name);
			if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
				return cand;
			free(cand);
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	return NULL;
}

static bool is_proxy_var(const char *name, size_t n)
{
	static const char *const names[] = {
		"http_proxy", "https_proxy", "ftp_proxy", "all_proxy", "no_proxy",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (n == strlen(names[i]) && !strncasecmp(name, names[i], n))
			return true;
	return false;
}

char **lev_oci_engine_env(char *const *envp)
{
	static const char *const keep[] = { "DOCKER_", "CONTAINER_", "CONTAINERS_", "PODMAN_" };
	char **v = NULL;
	char *const *e;

	for (e = envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		_cleanup_free_ char *name = NULL;
		bool kept = false;
		size_t i;

		if (!eq || eq == *e)
			continue;
		if (is_proxy_var(*e, (size_t)(eq - *e)))
			continue;
		name = xstrndup(*e, (size_t)(eq - *e));
		for (i = 0; i < ARRAY_SIZE(keep); i++)
			if (!strncmp(name, keep[i], strlen(keep[i])))
				kept = true;
		if (!kept && lev_env_name_sensitive(name))
			continue;
		v = lev_strv_push(v, *e);
	}
	return v;
}

/* Clear the setuid and setgid bits of NAME in DFD, which must still be ST. */
static int strip_bits(int dfd, const char *name, const struct stat *st)
{
	char proc[64];
	struct stat now;
	_cleanup_close_ int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) < 0)
		return -errno;
	if (now.st_dev != st->st_dev || now.st_ino != st->st_ino || !S_ISREG(now.st_mode))
		return -ESTALE;
	/* chmod through the O_PATH descriptor: the very inode, no path walk */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (chmod(proc, now.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) < 0)
		return -errno;
	return 0;
}

/* Takes DFD. */
static int scrub_dir(int dfd, uid_t uid, int64_t since, unsigned depth, unsigned *fixed)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int first = 0;

	if (!d) {
		first = -errno;
		close(dfd);
		return first;
	}
	while ((errno = 0, de = readdir(d))) {
		const char *n = de->d_name;
		struct stat st;
		int r = 0;

		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT && first == 0)
				first = -errno;
			continue;
		}
		if ((S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && st.st_ctim.tv_sec >= since) {
			r = unlinkat(dirfd(d), n, 0) < 0 ? -errno : 0;
			if (r == 0)
				(*fixed)++;
		} else if (S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID)) &&
			   st.st_uid == uid && st.st_ctim.tv_sec >= since) {
			r = strip_bits(dirfd(d), n, &st);
			if (r == 0)
				(*fixed)++;
		} else if (S_ISDIR(st.st_mode)) {
			int sub;

			if (depth >= LEV_OCI_SCRUB_DEPTH) {
				r = -ELOOP;
			} else {
				sub = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub < 0)
					r = -errno;
				else
					r = scrub_dir(sub, uid, since, depth + 1, fixed);
			}
		}
		if (r < 0 && first == 0)
			first = r;
	}
	if (errno && first == 0)
		first = -errno;
	closedir(d);
	return first;
}

int lev_oci_scrub(int dirfd, uid_t uid, int64_t since, unsigned *fixed)
{
	/* a fresh open file description: a dup would share (and move) the offset */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*fixed = 0;
	if (fd < 0)
		return -errno;
	return scrub_dir(fd, uid, since, 0, fixed);
}

/* ---- running engine commands ---- */

/*
 * posix_spawn the engine with lev_oci_engine_env(), in a process group of
 * its own (so a kill reaches all it starts), with no signal blocked or
 * ignored: 0 or an errno.
 */
static int spawn_engine(pid_t *pid, char *const *argv, const posix_spawn_file_actions_t *fa)
{
	static char *const empty[] = { NULL };
	char **env = lev_oci_engine_env(environ);
	posix_spawnattr_t at;
	sigset_t none, all;
	int rc;

	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
				 POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	rc = posix_spawn(pid, argv[0], fa, &at, argv, env ? env : empty);
	posix_spawnattr_destroy(&at);
	lev_strv_free(env);
	return rc;
}

/*
 * Run ARGV (no shell) with stdin /dev/null, collecting up to CAPTURE_MAX
 * bytes of stdout and stderr, killing it after TIMEOUT_MS.  Returns the
 * exit code (>= 0), or -errno when it could not be run or was killed.
 */
static int run_capture(char *const *argv, uint64_t timeout_ms, char **out_s, char **err_s)
{
	posix_spawn_file_actions_t fa;
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, rc;
	pid_t pid;
	struct lev_buf ob = LEV_BUF_INIT_MAX(CAPTURE_MAX), eb = LEV_BUF_INIT_MAX(CAPTURE_MAX);
	uint64_t deadline = lev_monotonic_ms() + timeout_ms;
	bool killed = false;
	int st = 0;

	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		rc = -errno;
		if (po[0] >= 0) {
			close(po[0]);
			close(po[1]);
		}
		return rc;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	rc = spawn_engine(&pid, argv, &fa);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	close(pe[1]);
	if (rc != 0) {
		close(po[0]);
		close(pe[0]);
		return -rc;
	}
	while (po[0] >= 0 || pe[0] >= 0) {
		struct pollfd pf[2];
		int nf = 0, i;
		uint64_t now = lev_monotonic_ms();
		char buf[4096];

		if (now >= deadline && !killed) {
			kill(-pid, SIGKILL);
			killed = true;
			deadline = now + 2000;
		} else if (now >= deadline) {
			break;
		}
		if (po[0] >= 0) {
			pf[nf].fd = po[0];
			pf[nf++].events = POLLIN;
		}
		if (pe[0] >= 0) {
			pf[nf].fd = pe[0];
			pf[nf++].events = POLLIN;
		}
		if (poll(pf, (nfds_t)nf, (int)(deadline - now)) < 0 && errno != EINTR)
			break;
		for (i = 0; i < nf; i++) {
			ssize_t n;
			int *fd = pf[i].fd == po[0] ? &po[0] : &pe[0];
			struct lev_buf *b = fd == &po[0] ? &ob : &eb;

			if (!pf[i].revents)
				continue;
			n = read(*fd, buf, sizeof(buf));
			if (n <= 0) {
				if (n < 0 && errno == EINTR)
					continue;
				close(*fd);
				*fd = -1;
				continue;
			}
			if (b->len + (size_t)n <= CAPTURE_MAX)
				(void)lev_buf_add(b, buf, (size_t)n);
		}
	}
	if (po[0] >= 0)
		close(po[0]);
	if (pe[0] >= 0)
		close(pe[0]);
	if (!killed && lev_monotonic_ms() >= deadline) {
		kill(-pid, SIGKILL);
		killed = true;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (out_s)
		*out_s = lev_buf_detach(&ob, NULL);
	if (err_s)
		*err_s = lev_buf_detach(&eb, NULL);
	lev_buf_release(&ob);
	lev_buf_release(&eb);
	if (killed)
		return -ETIMEDOUT;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return -EINTR;
}

/* The first non-empty line of S, trimmed, for messages (points into S). */
static const char *first_line(char *s)
{
	char *nl;

	if (!s)
		return "";
	while (*s == '\n' || *s == ' ')
		s++;
	nl = strchr(s, '\n');
	if (nl)
		*nl = '\0';
	return s;
}

/* ---- the pool ---- */

struct lev_sbx_ct {
	char *name;
	uint64_t sig;
	char *engine;		/* resolved path */
	char **engine_args;
	char *hostdir;		/* helper + filter + sock/ */
	char *sockpath;		/* NULL: no fast path */
	pid_t init_pid;		/* the helper's pid on the host, 0 when unknown */
	bool seccomp;		/* the helper installs the filter */
	bool pidns;		/* the helper gives each command its own PID namespace */
	int pidns_errno;	/* ... or why not */
	bool no_cgroup_limits;	/* the engine ignored --pids-limit and --memory */
	bool planned;		/* plan_only: described, never started (nothing to remove) */
	char **run_argv;	/* for describe */
	char **env;		/* the image's environment: every command's base */
	uid_t run_uid;		/* --user */
	gid_t run_gid;
	uid_t file_uid;		/* who owns on the host what commands create */
	bool rootless;		/* --user 0:0, the engine's root being the caller */
};

struct lev_sandbox_pool {
	char *run_id;
	struct lev_sbx_ct **cts;
	size_t n;
	char **swept;		/* engines already swept for orphans */
};

int lev_sandbox_pool_new(const char *run_id, struct lev_sandbox_pool **out, struct lev_err *err)
{
	struct lev_sandbox_pool *p;

	(void)err;
	p = xcalloc(1, sizeof(*p));
	p->run_id = run_id ? xstrdup(run_id) : xasprintf("exec-%d", (int)getpid());
	*out = p;
	return 0;
}

static void ct_free(struct lev_sbx_ct *c)
{
	if (!c)
		return;
	free(c->name);
	free(c->engine);
	lev_strv_free(c->engine_args);
	if (c->hostdir) {
		/* the mode-000 mask directory must be opened to be removed */
		_cleanup_free_ char *empty = lev_path_join(c->hostdir, "empty-dir");

		(void)chmod(empty, 0700);
		(void)lev_rm_rf(c->hostdir, NULL);
		free(c->hostdir);
	}
	free(c->sockpath);
	lev_strv_free(c->run_argv);
	lev_strv_free(c->env);
	free(c);
}

static int ct_remove(struct lev_sbx_ct *c, struct lev_err *err)
{
	char **argv;
	_cleanup_free_ char *o = NULL, *e = NULL;
	int rc;

	if (c->planned)
		return 0;	/* never started: the engine is not run to remove it */
	argv = lev_oci_rm_argv(c->engine, c->engine_args, c->name);
	rc = run_capture(argv, CMD_TIMEOUT_MS, &o, &e);
	lev_strv_free(argv);
	if (rc != 0)
		return lev_err_set(err, rc < 0 ? rc : -EIO, "cannot remove container '%s': %s",
				   c->name, rc < 0 ? strerror(-rc) : first_line(e));
	return 0;
}

int lev_sandbox_pool_teardown(struct lev_sandbox_pool *p, struct lev_err *err)
{
	size_t i;
	int first = 0;

	if (!p)
		return 0;
	for (i = 0; i < p->n; i++) {
		struct lev_err e2 = LEV_ERR_INIT;
		int r = ct_remove(p->cts[i], &e2);

		if (r < 0 && first == 0) {
			first = r;
			if (err)
				*err = e2;
		}
		ct_free(p->cts[i]);
	}
	free(p->cts);
	p->cts = NULL;
	p->n = 0;
	return first;
}

struct lev_sandbox_pool *lev_sandbox_pool_free(struct lev_sandbox_pool *p)
{
	if (!p)
		return NULL;
	(void)lev_sandbox_pool_teardown(p, NULL);
	free(p->run_id);
	lev_strv_free(p->swept);
	free(p);
	return NULL;
}

size_t lev_sandbox_pool_size(const struct lev_sandbox_pool *p)
{
	return p ? p->n : 0;
}

/* ---- ownership labels and orphans ---- */

static unsigned long long start_time(pid_t pid)
{
	char path[64], buf[1024];
	_cleanup_close_ int fd = -1;
	ssize_t n;
	char *s;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	s = strrchr(buf, ')');	/* the command name may hold spaces */
	if (!s)
		return 0;
	for (field = 2; field < 22 && s; field++)
		s = strchr(s + 1, ' ');
	return s ? strtoull(s + 1, NULL, 10) : 0;
}

static char *owner_label(void)
{
	char host[256];

	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	return xasprintf("%s:%d:%llu", host, (int)getpid(), start_time(getpid()));
}

static bool owner_alive(const char *owner)
{
	char host[256];
	char *pid_s, *st_s;
	_cleanup_free_ char *copy = xstrdup(owner);
	unsigned long long st;
	long pid;

	if (gethostname(host, sizeof(host)) < 0)
		return true;
	host[sizeof(host) - 1] = '\0';
	st_s = strrchr(copy, ':');
	if (!st_s)
		return true;	/* not ours to judge */
	*st_s++ = '\0';
	pid_s = strrchr(copy, ':');
	if (!pid_s)
		return true;
	*pid_s++ = '\0';
	if (strcmp(copy, host) != 0)
		return true;	/* another machine's */
	pid = strtol(pid_s, NULL, 10);
	st = strtoull(st_s, NULL, 10);
	if (pid <= 0)
		return true;
	return start_time((pid_t)pid) == st && st != 0;
}

static void sweep_orphans(struct lev_sandbox_pool *pool, const char *engine,
			  char *const *engine_args)
{
	char **argv;
	_cleanup_free_ char *o = NULL, *e = NULL;
	char *line, *save = NULL;
	char **ids = NULL, **insp;
	int rc;

	if (lev_strv_contains(pool->swept, engine))
		return;
	pool->swept = lev_strv_push(pool->swept, engine);
	argv = lev_oci_ps_argv(engine, engine_args, getuid());
	rc = run_capture(argv, CMD_TIMEOUT_MS, &o, &e);
	lev_strv_free(argv);
	if (rc != 0 || !o)
		return;
	for (line = strtok_r(o, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (*line)
			ids = lev_strv_push(ids, line);
	if (!ids)
		return;

	insp = start_argv(engine, engine_args);
	insp = lev_strv_push(insp, "inspect");
	insp = lev_strv_push(insp, "--format");
	insp = lev_strv_push(insp, "{{.Id}} {{index .Config.Labels \"lev.owner\"}} "
				   "{{index .Config.Labels \"lev.dir\"}}");
	{
		char **i;

		for (i = ids; *i; i++)
			insp = lev_strv_push(insp, *i);
	}
	free(o);
	o = NULL;
	free(e);
	e = NULL;
	rc = run_capture(insp, CMD_TIMEOUT_MS, &o, &e);
	lev_strv_free(insp);
	lev_strv_free(ids);
	if (rc != 0 || !o)
		return;
	save = NULL;
	for (line = strtok_r(o, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *owner = strchr(line, ' '), *dir;

		if (!owner)
			continue;
		*owner++ = '\0';
		dir = strchr(owner, ' ');
		if (dir)
			*dir++ = '\0';
		if (!owner_alive(owner)) {
			char **rm = lev_oci_rm_argv(engine, engine_args, line);
			struct stat st;

			(void)run_capture(rm, CMD_TIMEOUT_MS, NULL, NULL);
			lev_strv_free(rm);
			/* its helper directory, if it is one of ours */
			if (dir && !strncmp(dir, "/tmp/lev-oci-", 13) && !strchr(dir + 13, '/') &&
			    lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid()) {
				_cleanup_free_ char *empty = lev_path_join(dir, "empty-dir");

				(void)chmod(empty, 0700);
				(void)lev_rm_rf(dir, NULL);
			}
		}
	}
}

/* ---- engine detection ---- */

static bool engine_responds(const char *path, char *const *engine_args)
{
	char **argv = start_argv(path, engine_args);
	int rc;

	argv = lev_strv_push(argv, "ps");
	argv = lev_strv_push(argv, "-q");
	argv = lev_strv_push(argv, "--filter");
	argv = lev_strv_push(argv, "label=lev.probe=1");
	rc = run_capture(argv, CMD_TIMEOUT_MS, NULL, NULL);
	lev_strv_free(argv);
	return rc == 0;
}

/* The user's engine, else the first of docker, podman on PATH that answers
 * (else the first found, so the error names it). */
static char *pick_engine(const char *user, const char *path_env, char *const *engine_args)
{
	static const char *const names[] = { "docker", "podman" };
	char *first = NULL;
	size_t i;

	if (user)
		return lev_oci_find_engine(user, path_env);
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		char *p = lev_oci_find_engine(names[i], path_env);

		if (!p)
			continue;
		if (engine_responds(p, engine_args)) {
			free(first);
			return p;
		}
		if (!first)
			first = p;
		else
			free(p);
	}
	return first;
}

int lev_sbx_oci_probe_engines(const char *path_env, struct lev_sandbox_probe *out);

int lev_sbx_oci_probe_engines(const char *path_env, struct lev_sandbox_probe *out)
{
	static const char *const names[] = { "docker", "podman" };
	size_t i;

	out->engine_pick = -1;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		struct lev_sandbox_engine_info *e = &out->engines[out->n_engines++];

		e->name = xstrdup(names[i]);
		e->path = lev_oci_find_engine(names[i], path_env);
		if (e->path) {
			char *argv[] = { e->path, (char *)"--version", NULL };
			_cleanup_free_ char *o = NULL, *er = NULL;

			if (run_capture(argv, CMD_TIMEOUT_MS, &o, &er) == 0 && o && *o)
				e->version = xstrdup(first_line(o));
			e->responds = engine_responds(e->path, NULL);
			if (e->responds && out->engine_pick < 0)
				out->engine_pick = (int)i;
		}
	}
	if (out->engine_pick < 0)
		for (i = 0; i < out->n_engines; i++)
			if (out->engines[i].path) {
				out->engine_pick = (int)i;
				break;
			}
	return 0;
}

/* ---- setup ---- */

static int connect_helper(const struct lev_sbx_ct *c, struct lev_err *err);

static int copy_file(const char *src, const char *dst, mode_t mode, struct lev_err *err)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int r;

	r = lev_read_file(src, (size_t)64 << 20, &data, &len, err);
	if (r < 0)
		return r;
	return lev_write_file_atomic(dst, data, len, mode, err);
}

static int write_bytes(const char *dst, const void *data, size_t len, struct lev_err *err)
{
	return lev_write_file_atomic(dst, data, len, 0444, err);
}

static int wait_ready(struct lev_sbx_ct *c, struct lev_err *err)
{
	uint64_t deadline = lev_monotonic_ms() + READY_TIMEOUT_MS;
	struct sockaddr_un sa;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->sockpath);
	for (;;) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (s < 0)
			return lev_err_errno(err, -errno, "cannot create a socket");
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(s);	/* the helper sees EOF before a request and moves on */
			return 0;
		}
		close(s);
		if (c->init_pid > 0 && kill(c->init_pid, 0) < 0 && errno == ESRCH)
			return lev_err_set(err, -ECHILD,
					   "the helper in container '%s' exited before it came up",
					   c->name);
		if (lev_monotonic_ms() >= deadline)
			return lev_err_set(err, -ETIMEDOUT,
					   "the helper in container '%s' did not come up", c->name);
		usleep(5000);
	}
}

static pid_t inspect_pid(struct lev_sbx_ct *c)
{
	char **argv = start_argv(c->engine, c->engine_args);
	_cleanup_free_ char *o = NULL, *e = NULL;
	long pid = 0;

	argv = lev_strv_push(argv, "inspect");
	argv = lev_strv_push(argv, "--format");
	argv = lev_strv_push(argv, "{{.State.Pid}}");
	argv = lev_strv_push(argv, c->name);
	if (run_capture(argv, CMD_TIMEOUT_MS, &o, &e) == 0 && o)
		pid = strtol(o, NULL, 10);
	lev_strv_free(argv);
	return pid > 0 ? (pid_t)pid : 0;
}

/*
 * The image's own environment (its ENV lines), which every command starts
 * from.  Asking the local store is also the check that the image is here:
 * lev never pulls, so a missing image is an error that says how to get it.
 */
static int image_env(struct lev_sbx_ct *c, const char *image, struct lev_buf *why)
{
	char **argv = start_argv(c->engine, c->engine_args);
	_cleanup_free_ char *o = NULL, *e = NULL;
	json_t *j, *item;
	size_t i;
	int rc;

	argv = lev_strv_push(argv, "image");
	argv = lev_strv_push(argv, "inspect");
	argv = lev_strv_push(argv, "--format");
	argv = lev_strv_push(argv, "{{json .Config.Env}}");
	argv = lev_strv_push(argv, image);
	rc = run_capture(argv, CMD_TIMEOUT_MS, &o, &e);
	lev_strv_free(argv);
	if (rc != 0) {
		const char *base = strrchr(c->engine, '/');

		(void)lev_buf_addf(why, "image '%s' is not on this machine (%s); lev never pulls "
				   "images: fetch it yourself ('%s pull %s') or name a local one "
				   "in [sandbox] image", image,
				   rc < 0 ? strerror(-rc) : first_line(e), base ? base + 1 : c->engine,
				   image);
		return LEV_EUNSUPP;
	}
	j = json_loads(o ? o : "", JSON_DECODE_ANY, NULL);
	json_array_foreach(j, i, item) {
		const char *v = json_string_value(item);

		if (v && strchr(v, '=') && v[0] != '=')
			c->env = lev_strv_push(c->env, v);
	}
	json_decref(j);
	/* a home the command can write: the container's private /tmp */
	{
		char *const *h;

		for (h = c->env; h && *h && strncmp(*h, "HOME=", 5); h++)
			;
		if (!h || !*h)
			c->env = lev_strv_push(c->env, "HOME=/tmp");
	}
	return 0;
}

/*
 * Who commands run as.  A normal caller: itself (rootless podman: its own
 * root, which is the caller).  Root: never root, whose files outlive the
 * sandbox as root's (a setuid copy of a shell would be a root shell for
 * every local user): the owner of the workdir when that is not root, else
 * nobody (65534); the group is the workdir's unless that is root's.
 */
static void pick_user(const struct lev_sandbox *sb, bool rootless, struct lev_sbx_ct *c)
{
	struct stat st;

	c->run_uid = sb->uid;
	c->run_gid = sb->gid;
	c->file_uid = sb->uid;
	c->rootless = rootless;
	if (rootless || sb->uid != 0)
		return;
	c->run_uid = 65534;
	c->run_gid = 65534;
	if (stat(sb->workdir, &st) == 0) {
		if (st.st_uid != 0)
			c->run_uid = st.st_uid;
		if (st.st_gid != 0)
			c->run_gid = st.st_gid;
	}
	c->file_uid = c->run_uid;
}

/* Ask the helper what it can do for each command (a PID namespace). */
static void probe_helper(struct lev_sbx_ct *c)
{
	struct lev_oci_req req;
	struct lev_oci_ans a;
	static const char payload[] = "/\0true";
	struct msghdr mh;
	struct iovec iov[2];
	union lev_oci_cmsg u;
	_cleanup_close_ int s = -1, nul = -1;
	int fds[3];
	size_t got = 0;

	c->pidns = false;
	c->pidns_errno = EIO;
	s = connect_helper(c, NULL);
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (s < 0 || nul < 0)
		return;
	memset(&req, 0, sizeof(req));
	req.magic = LEV_OCI_REQ_MAGIC;
	req.flags = LEV_OCI_FLAG_PROBE;
	req.nstr = 2;
	req.len = sizeof(payload);
	iov[0].iov_base = &req;
	iov[0].iov_len = sizeof(req);
	iov[1].iov_base = (void *)payload;
	iov[1].iov_len = sizeof(payload);
	lev_oci_msg_init(&mh, iov, 2, &u);
	fds[0] = fds[1] = fds[2] = nul;
	lev_oci_msg_put_fds(&mh, fds);
	if (sendmsg(s, &mh, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) + sizeof(payload)))
		return;
	memset(&a, 0, sizeof(a));
	while (got < sizeof(a)) {
		struct pollfd pf = { s, POLLIN, 0 };
		ssize_t n;

		if (poll(&pf, 1, CMD_TIMEOUT_MS) <= 0)
			return;
		n = read(s, (char *)&a + got, sizeof(a) - got);
		if (n <= 0)
			return;
		got += (size_t)n;
	}
	if (a.magic != LEV_OCI_ANS_MAGIC)
		return;
	c->pidns = (a.flags & LEV_OCI_ANS_PIDNS) != 0;
	c->pidns_errno = c->pidns ? 0 : (a.pidns_errno ? a.pidns_errno : EIO);
}

/* Start the warm container for SB; *why gets the reason on failure. */
/* The container's host directory, with the empty dir and file masks are bound from. */
static int ct_hostdir(struct lev_sbx_ct *c, struct lev_err *err)
{
	_cleanup_free_ char *empty_dir = NULL, *empty_file = NULL;
	char tmpl[] = "/tmp/lev-oci-XXXXXX";

	if (!mkdtemp(tmpl))
		return lev_err_errno(err, -errno, "cannot create a directory for the container");
	c->hostdir = xstrdup(tmpl);
	(void)chmod(c->hostdir, 0755);
	empty_dir = lev_path_join(c->hostdir, "empty-dir");
	empty_file = lev_path_join(c->hostdir, "empty-file");
	if (mkdir(empty_dir, 0) < 0 || lev_write_file_atomic(empty_file, "", 0, 0, err) < 0)
		return lev_err_errno(err, -errno, "cannot create '%s'", empty_dir);
	return 0;
}

/* The secrets the workdir bind would bring in, split into directories and files. */
static void workdir_masks(const struct lev_sandbox *sb, char ***dirs, char ***files)
{
	size_t n = strlen(sb->workdir);
	char *const *m;

	for (m = sb->masks; m && *m; m++) {
		struct stat st;

		if (strncmp(*m, sb->workdir, n) != 0 || (*m)[n] != '/' || lstat(*m, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			*dirs = lev_strv_push(*dirs, *m);
		else
			*files = lev_strv_push(*files, *m);
	}
}

/* The fast path: the helper, our seccomp filter and the socket directory in the host dir. */
static int ct_helper_files(const struct lev_sandbox *sb, struct lev_sbx_ct *c,
			   struct lev_err *err)
{
	_cleanup_free_ char *hp = NULL, *sockdir = NULL, *fp = NULL;
	int r;

	hp = lev_path_join(c->hostdir, LEV_OCI_HELPER_NAME);
	r = copy_file(sb->oci_helper, hp, 0555, err);
	if (r == 0 && sb->have_sc) {
		fp = lev_path_join(c->hostdir, LEV_OCI_FILTER_NAME);
		r = write_bytes(fp, sb->sc.prog, lev_scfilter_size(&sb->sc), err);
		c->seccomp = r == 0;
	}
	if (r < 0)
		return r;
	sockdir = lev_path_join(c->hostdir, "sock");
	if (mkdir(sockdir, 0700) < 0)
		return lev_err_errno(err, -errno, "cannot create '%s'", sockdir);
	/* the helper runs as the command's uid and binds its socket here (lev
	 * checks who serves it: SO_PEERCRED) */
	if (c->run_uid != sb->uid && chown(sockdir, c->run_uid, c->run_gid) < 0)
		return lev_err_errno(err, -errno, "cannot hand '%s' to uid %u", sockdir,
				     (unsigned)c->run_uid);
	c->sockpath = lev_path_join(sockdir, LEV_OCI_SOCK_NAME);
	return 0;
}

/* C's `<engine> run` argv, into c->run_argv. */
static void ct_run_argv(const struct lev_sandbox *sb, struct lev_sbx_ct *c, char **mounts,
			char **hide_dirs, char **hide_files)
{
	_cleanup_free_ char *owner = owner_label();
	_cleanup_free_ char *empty_dir = lev_path_join(c->hostdir, "empty-dir");
	_cleanup_free_ char *empty_file = lev_path_join(c->hostdir, "empty-file");
	_cleanup_free_ char *sockdir = lev_path_join(c->hostdir, "sock");
	struct lev_oci_run_cfg rc;

	memset(&rc, 0, sizeof(rc));
	rc.engine = c->engine;
	rc.engine_args = c->engine_args;
	rc.name = c->name;
	rc.run_id = sb->pool->run_id;
	rc.owner = owner;
	rc.label_uid = sb->uid;
	rc.uid = c->run_uid;
	rc.gid = c->run_gid;
	rc.rootless = lev_oci_is_podman(c->engine) && sb->uid != 0;
	rc.podman = lev_oci_is_podman(c->engine);
	rc.env = c->env;
	rc.image = sb->spec.image;
	rc.network = sb->spec.network;
	rc.mounts = mounts;
	rc.workdir = sb->workdir;
	rc.pids = sb->limits.nproc;
	rc.mem_bytes = sb->limits.mem_bytes;
	rc.nofile = sb->limits.nofile;
	rc.nproc = 1024;
	rc.hide_dirs = hide_dirs;
	rc.hide_files = hide_files;
	rc.empty_dir = empty_dir;
	rc.empty_file = empty_file;
	rc.host_dir = c->hostdir;
	if (c->sockpath) {
		/* mapping uid 0 into a new user namespace takes CAP_SETFCAP
		 * (Linux 5.12+); only the helper keeps it */
		rc.setfcap = rc.rootless;
		rc.helper_dir = c->hostdir;
		rc.sock_dir = sockdir;
	}
	c->run_argv = lev_oci_run_argv(&rc);
}

/*
 * Run C's `<engine> run` and, on the fast path, wait for its helper.  0,
 * or LEV_EUNSUPP with the reason in WHY (the container is then removed).
 */
static int ct_start(struct lev_sandbox *sb, struct lev_sbx_ct *c, struct lev_buf *why)
{
	_cleanup_free_ char *o = NULL, *e = NULL;
	int r;

	sweep_orphans(sb->pool, c->engine, c->engine_args);
	r = run_capture(c->run_argv, RUN_TIMEOUT_MS, &o, &e);
	if (r != 0) {
		(void)lev_buf_addf(why, "failed to start container '%s' via '%s': %s", sb->spec.image,
				   c->engine, r < 0 ? strerror(-r) : first_line(e));
		/* a half-created container must not stay */
		(void)ct_remove(c, NULL);
		return LEV_EUNSUPP;
	}
	/* rootless podman on cgroup v1 starts the container anyway, without
	 * --pids-limit and --memory: that layer is then missing, and we say so */
	if (e && strstr(e, "Resource limits are not supported and ignored"))
		c->no_cgroup_limits = true;
	if (c->sockpath) {
		struct lev_err e2 = LEV_ERR_INIT;

		c->init_pid = inspect_pid(c);
		if (wait_ready(c, &e2) < 0) {
			(void)lev_buf_addf(why, "%s", e2.msg);
			(void)ct_remove(c, NULL);
			return LEV_EUNSUPP;
		}
		probe_helper(c);
	}
	return 0;
}

static int start_container(struct lev_sandbox *sb, const char *engine, char **mounts,
			   uint64_t sig, struct lev_sbx_ct **out, struct lev_buf *why,
			   struct lev_err *err)
{
	struct lev_sbx_ct *c = xcalloc(1, sizeof(*c));
	char **hide_dirs = NULL, **hide_files = NULL;
	int r;

	c->name = lev_oci_container_name(sb->pool->run_id, sig);
	c->sig = sig;
	c->engine = xstrdup(engine);
	c->engine_args = lev_strv_copy(sb->engine_args);
	r = image_env(c, sb->spec.image, why);
	if (r < 0)
		goto fail;
	pick_user(sb, lev_oci_is_podman(engine) && sb->uid != 0, c);
	r = ct_hostdir(c, err);
	if (r < 0)
		goto fail;
	if (sb->oci_helper) {
		r = ct_helper_files(sb, c, err);
		if (r < 0)
			goto fail;
	}
	workdir_masks(sb, &hide_dirs, &hide_files);
	ct_run_argv(sb, c, mounts, hide_dirs, hide_files);
	lev_strv_free(hide_dirs);
	lev_strv_free(hide_files);
	if (sb->plan_only) {
		/* --dry-run: the plan names the run argv; the engine never runs */
		c->planned = true;
	} else {
		r = ct_start(sb, c, why);
		if (r < 0)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	ct_free(c);
	return r;
}

/*
 * The [sandbox] mounts, checked and with trailing slashes trimmed, into a
 * fresh *OUT: a bad mount is a configuration error whatever on_unavailable
 * says.
 */
static int check_mounts(const struct lev_sandbox *sb, char ***out, struct lev_err *err)
{
	char **mounts = NULL, *const *m;
	int r;

	for (m = sb->spec.mounts; m && *m; m++) {
		char real[PATH_MAX];
		char *const *s;
		_cleanup_free_ char *trim = NULL;

		r = lev_oci_mount_normalize(*m, &trim, err);
		if (r < 0)
			goto fail;
		if (realpath(trim, real)) {
			r = lev_oci_mount_check(real, err);
			if (r < 0) {
				lev_err_wrap(err, "'%s' resolves to '%s'", *m, real);
				goto fail;
			}
		} else {
			snprintf(real, sizeof(real), "%s", trim);
		}
		for (s = sb->masks; s && *s; s++) {
			size_t k = strlen(real), q = strlen(*s);

			if ((!strncmp(*s, real, k) && ((*s)[k] == '/' || (*s)[k] == '\0')) ||
			    (!strncmp(real, *s, q) && (real[q] == '/' || real[q] == '\0'))) {
				r = lev_err_set(err, LEV_EUSAGE,
						"mount '%s' is not allowed: it exposes the secret '%s'",
						*m, *s);
				goto fail;
			}
		}
		if (!lev_strv_contains(mounts, trim))
			mounts = lev_strv_push(mounts, trim);
	}
	*out = mounts;
	return 0;
fail:
	lev_strv_free(mounts);
	return r;
}

/* The engine to use, or NULL with the reason in WHY. */
static char *choose_engine(const struct lev_sandbox *sb, struct lev_buf *why)
{
	char *engine = pick_engine(sb->spec.engine, sb->path_env, sb->engine_args);

	if (engine)
		return engine;
	if (sb->spec.engine)
		(void)lev_buf_addf(why, "container engine '%s' not found", sb->spec.engine);
	else
		(void)lev_buf_adds(why, "no container engine found; install docker or podman, "
				   "or set 'engine' in [sandbox]");
	return NULL;
}

/*
 * Our seccomp filter and a PID namespace per command come with the helper:
 * without it, or without seccomp, those layers are missing, and that is
 * said (and refused under on_unavailable = "error").  The layers lacking.
 */
static unsigned helper_layers(struct lev_sandbox *sb, const char *engine, struct lev_buf *why)
{
	sb->wanted |= LEV_LAYER_SECCOMP;
	if (!sb->oci_helper) {
		(void)lev_buf_addf(why, "seccomp, pidns: lev-oci-helper was not found (next "
				   "to lev, in the libexec directory, or at $LEV_OCI_HELPER), so "
				   "commands go through '%s exec' without lev's seccomp filter and "
				   "without a PID namespace per command", engine);
		return LEV_LAYER_SECCOMP | LEV_LAYER_PIDNS;
	}
	if (lev_sbx_kernel()->seccomp != 0 ||
	    lev_scfilter_build(sb->spec.network ? LEV_SCFILTER_NET : 0, &sb->sc, NULL) != 0) {
		(void)lev_buf_adds(why, "seccomp: the filter cannot be built here");
		return LEV_LAYER_SECCOMP;
	}
	sb->have_sc = true;
	return 0;
}

/*
 * sb->ct: the pool's container for this engine, image, network, mounts and
 * workdir, started when there is none.  0, LEV_EUNSUPP with the reason in
 * WHY, or a negative errno.
 */
static int join_pool(struct lev_sandbox *sb, const struct lev_sandbox_opts *opts,
		     const char *engine, char **mounts, struct lev_buf *why, struct lev_err *err)
{
	struct lev_sbx_ct *c = NULL;
	uint64_t sig;
	size_t i;
	int r;

	if (opts->pool) {
		sb->pool = opts->pool;
	} else {
		r = lev_sandbox_pool_new(NULL, &sb->pool, err);
		if (r < 0)
			return r;
		sb->own_pool = true;
	}
	sig = lev_oci_signature(engine, sb->engine_args, sb->spec.image, sb->spec.network, mounts,
				sb->workdir);
	for (i = 0; i < sb->pool->n; i++)
		if (sb->pool->cts[i]->sig == sig && sb->pool->cts[i]->planned == sb->plan_only)
			sb->ct = sb->pool->cts[i];
	if (sb->ct)
		return 0;
	r = start_container(sb, engine, mounts, sig, &c, why, err);
	if (r < 0)
		return r;
	sb->pool->cts = xreallocarray(sb->pool->cts, sb->pool->n + 1, sizeof(*sb->pool->cts));
	sb->pool->cts[sb->pool->n++] = c;
	sb->ct = c;
	return 0;
}

/* What the running container turned out to lack, added to WHY; the layers. */
static unsigned container_lacks(const struct lev_sandbox *sb, const char *engine, unsigned lack,
				struct lev_buf *why)
{
	unsigned more = 0;

	if (!sb->ct->seccomp && !(lack & LEV_LAYER_SECCOMP)) {
		more |= LEV_LAYER_SECCOMP;
		(void)lev_buf_addf(why, "%sseccomp: the filter could not be handed to the "
				   "container", why->len ? "; " : "");
	}
	/* a plan starts no container, so the helper is not asked: it plans the layer */
	if (sb->ct->sockpath && !sb->ct->planned && !sb->ct->pidns) {
		more |= LEV_LAYER_PIDNS;
		(void)lev_buf_addf(why, "%spidns: the helper cannot give each command a PID "
				   "namespace of its own (%s); what a command leaves behind is "
				   "killed by a scan only", why->len ? "; " : "",
				   strerror(sb->ct->pidns_errno));
	}
	if (sb->ct->no_cgroup_limits) {
		more |= LEV_LAYER_RLIMITS;
		(void)lev_buf_addf(why, "%srlimits: '%s' ignores --pids-limit and --memory "
				   "here (rootless on cgroup v1); the ulimits still apply",
				   why->len ? "; " : "", engine);
	}
	return more;
}

static int refuse_lacking(const char *why, struct lev_err *err)
{
	return lev_err_set(err, LEV_EUNSUPP,
			   "container sandbox unavailable: %s; set on_unavailable = \"warn\" "
			   "in [sandbox] to run without them", why);
}

int lev_sbx_oci_setup(struct lev_sandbox *sb, const struct lev_sandbox_opts *opts,
		      struct lev_err *err)
{
	_cleanup_buf_ struct lev_buf why = LEV_BUF_INIT_MAX(2048);
	_cleanup_buf_ struct lev_buf lack_why = LEV_BUF_INIT_MAX(2048);
	_cleanup_free_ char *engine = NULL;
	_cleanup_strv_ char **mounts = NULL;
	unsigned lack;
	int r;

	sb->wanted = LEV_LAYER_CONTAINER | LEV_LAYER_MOUNTNS | LEV_LAYER_PIDNS | LEV_LAYER_IPCNS |
		     LEV_LAYER_UTSNS | LEV_LAYER_NNP | LEV_LAYER_CAPS | LEV_LAYER_RLIMITS;
	if (!sb->spec.network)
		sb->wanted |= LEV_LAYER_NETNS;
	r = check_mounts(sb, &mounts, err);
	if (r < 0)
		return r;
	if (!sb->spec.image || !*sb->spec.image) {
		(void)lev_buf_adds(&why, "the container sandbox needs an image: set 'image' in [sandbox]");
		goto unavailable;
	}
	engine = choose_engine(sb, &why);
	if (!engine)
		goto unavailable;
	lack = helper_layers(sb, engine, &lack_why);
	if (lack && sb->spec.on_unavailable == LEV_ON_UNAVAILABLE_ERROR)
		return refuse_lacking(lack_why.buf, err);

	r = join_pool(sb, opts, engine, mounts, &why, err);
	if (r == LEV_EUNSUPP)
		goto unavailable;
	if (r < 0)
		return r;
	lack |= container_lacks(sb, engine, lack, &lack_why);
	sb->layers = sb->wanted & ~lack;
	sb->missing = sb->wanted & lack;
	if (lack && sb->spec.on_unavailable == LEV_ON_UNAVAILABLE_ERROR)
		return refuse_lacking(lack_why.buf, err);
	if (lack)
		sb->degraded = xstrdup(lack_why.buf);
	return 0;

unavailable:
	if (sb->spec.on_unavailable == LEV_ON_UNAVAILABLE_ERROR)
		return lev_err_set(err, LEV_EUNSUPP,
				   "container sandbox unavailable: %s; set on_unavailable = \"warn\" "
				   "in [sandbox] to fall back to the host", why.buf);
	/* warn: the host, and say so */
	sb->kind = LEV_SANDBOX_NONE;
	sb->missing = sb->wanted;
	sb->layers = 0;
	sb->degraded = xasprintf("container: %s; running on the host", why.buf);
	return 0;
}

/* ---- spawn ---- */

static int send_request(int s, const struct lev_sbx_ct *c, int fds[3], const char *cwd,
			char *const *argv, char *const *env, uint64_t timeout_ms)
{
	struct lev_oci_req req;
	struct lev_buf payload = LEV_BUF_INIT_MAX(LEV_OCI_REQ_MAX);
	struct msghdr mh;
	struct iovec iov;
	union lev_oci_cmsg u;
	char *const *a;
	uint32_t nstr = 1, nenv = 0;
	ssize_t n;
	int r;

	r = lev_buf_add(&payload, cwd, strlen(cwd) + 1);
	for (a = argv; a && *a && r == 0; a++, nstr++)
		r = lev_buf_add(&payload, *a, strlen(*a) + 1);
	for (a = env; a && *a && r == 0; a++, nenv++)
		r = lev_buf_add(&payload, *a, strlen(*a) + 1);
	if (r < 0 || nstr > LEV_OCI_ARGS_MAX || nenv > LEV_OCI_ARGS_MAX) {
		lev_buf_release(&payload);
		return -E2BIG;
	}
	memset(&req, 0, sizeof(req));
	req.magic = LEV_OCI_REQ_MAGIC;
	req.flags = c->seccomp ? LEV_OCI_FLAG_SECCOMP : 0;
	req.timeout_ms = timeout_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)timeout_ms;
	req.nstr = nstr;
	req.nenv = nenv;
	req.len = (uint32_t)payload.len;

	iov.iov_base = &req;
	iov.iov_len = sizeof(req);
	lev_oci_msg_init(&mh, &iov, 1, &u);
	lev_oci_msg_put_fds(&mh, fds);
	do
		n = sendmsg(s, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(req)) {
		r = n < 0 ? -errno : -EIO;
		lev_buf_release(&payload);
		return r;
	}
	{
		size_t off = 0;

		while (off < payload.len) {
			n = send(s, payload.buf + off, payload.len - off, MSG_NOSIGNAL);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				r = -errno;
				lev_buf_release(&payload);
				return r;
			}
			off += (size_t)n;
		}
	}
	lev_buf_release(&payload);
	return 0;
}

static int connect_helper(const struct lev_sbx_ct *c, struct lev_err *err)
{
	struct sockaddr_un sa;
	int s;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(c->sockpath) >= sizeof(sa.sun_path))
		return lev_err_set(err, -ENAMETOOLONG, "socket path '%s' is too long", c->sockpath);
	memcpy(sa.sun_path, c->sockpath, strlen(c->sockpath) + 1);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return lev_err_errno(err, -errno, "cannot create a socket");
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(s);
		return lev_err_errno(err, r, "cannot reach the helper in container '%s'", c->name);
	}
	if (c->init_pid > 0) {
		struct ucred cr;
		socklen_t len = sizeof(cr);

		if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.pid != c->init_pid) {
			close(s);
			return lev_err_set(err, -EPERM,
					   "the socket of container '%s' is not served by its helper "
					   "(pid %d, expected %d)", c->name, (int)cr.pid,
					   (int)c->init_pid);
		}
	}
	return s;
}

static int spawn_exec(struct lev_sandbox *sb, const struct lev_sbx_ct *ct, char *const *argv,
		      char *const *allowed, const char *cwd,
		      const struct lev_sandbox_limits *limits, const struct lev_sandbox_io *io,
		      int outw, int errw, pid_t *pid_out, struct lev_err *err)
{
	posix_spawn_file_actions_t fa;
	char **v;
	pid_t pid;
	int rc;

	v = lev_oci_exec_argv(ct->engine, ct->engine_args, ct->name, cwd,
			      io->stdin_fd >= 0, sb->oci_helper != NULL, ct->seccomp,
			      limits->timeout_ms, allowed, argv);
	posix_spawn_file_actions_init(&fa);
	if (io->stdin_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, io->stdin_fd, 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, outw, 1);
	posix_spawn_file_actions_adddup2(&fa, errw, 2);
	rc = spawn_engine(&pid, v, &fa);
	posix_spawn_file_actions_destroy(&fa);
	lev_strv_free(v);
	if (rc != 0)
		return lev_err_errno(err, -rc, "cannot run '%s'", ct->engine);
	*pid_out = pid;
	return 0;
}

/*
 * The container a command runs in while untrusted content is live and the
 * workdir holds the protected files PROT: the stage's own, with each of
 * them bound read-only over the workdir (as [sandbox] mounts are), pooled
 * by its signature like any container, so it starts once.  In it `>>`,
 * `truncate` and `cp` over a protected file meet a read-only file system,
 * `sed -i`, `mv`, `ln -sf` and `rm` a busy mount point.  A protected file
 * in a subdirectory (which a command could rename away) or that is a
 * symbolic link (a bind lands on what it names) is refused.
 */
static int ct_protected(struct lev_sandbox *sb, char **prot, struct lev_sbx_ct **out,
			struct lev_err *err)
{
	_cleanup_buf_ struct lev_buf why = LEV_BUF_INIT_MAX(4096);
	_cleanup_strv_ char **mounts = NULL;
	size_t wl = strlen(sb->workdir), i;
	struct lev_sbx_ct *c = NULL;
	uint64_t sig;
	int r;

	for (char **f = prot; *f; f++) {
		struct stat st;

		if (strchr(*f + wl + 1, '/') || lstat(*f, &st) < 0 || S_ISLNK(st.st_mode))
			return lev_err_set(err, LEV_EUNSUPP,
					   "the protected file '%s' is a symbolic link or lies in a "
					   "subdirectory of the workdir, which the container sandbox "
					   "cannot hold in place: while untrusted content is live no "
					   "command runs beside it (kind \"namespace\" can)", *f);
	}
	r = check_mounts(sb, &mounts, err);
	if (r < 0)
		return r;
	for (char **f = prot; *f; f++)
		mounts = lev_strv_push(mounts, *f);
	sig = lev_oci_signature(sb->ct->engine, sb->engine_args, sb->spec.image, sb->spec.network,
				mounts, sb->workdir);
	for (i = 0; i < sb->pool->n; i++)
		if (sb->pool->cts[i]->sig == sig && sb->pool->cts[i]->planned == sb->plan_only) {
			*out = sb->pool->cts[i];
			return 0;
		}
	r = start_container(sb, sb->ct->engine, mounts, sig, &c, &why, err);
	if (r == LEV_EUNSUPP)
		return lev_err_set(err, LEV_EUNSUPP, "cannot start the container that keeps the "
				   "protected files read-only: %s", why.buf);
	if (r < 0)
		return r;
	sb->pool->cts = xreallocarray(sb->pool->cts, sb->pool->n + 1, sizeof(*sb->pool->cts));
	sb->pool->cts[sb->pool->n++] = c;
	*out = c;
	return 0;
}

/*
 * The variables of ENVP that [security] allow_env_vars names (exact,
 * case-insensitive; never the shell start-up ones): the only part of the
 * host's environment a container command sees.  Fresh strv or NULL.
 */
static char **allowed_env(const struct lev_sandbox *sb, char *const *envp)
{
	char **v = NULL;
	char *const *e, *const *a;

	for (e = envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		_cleanup_free_ char *name = NULL;

		if (!eq || eq == *e)
			continue;
		name = xstrndup(*e, (size_t)(eq - *e));
		if (lev_env_name_shell_startup(name))
			continue;
		for (a = sb->env_allow; a && *a; a++)
			if (!strcasecmp(*a, name)) {
				v = lev_strv_push(v, *e);
				break;
			}
	}
	return v;
}

/* The image's environment with ALLOWED set over it: a command's whole one. */
static char **command_env(const struct lev_sbx_ct *c, char *const *allowed)
{
	char **v = NULL;
	char *const *e, *const *a;

	for (e = c->env; e && *e; e++) {
		size_t n = (size_t)(strchr(*e, '=') - *e);
		bool over = false;

		for (a = allowed; a && *a; a++)
			if (!strncmp(*a, *e, n + 1))
				over = true;
		if (!over)
			v = lev_strv_push(v, *e);
	}
	for (a = allowed; a && *a; a++)
		v = lev_strv_push(v, *a);
	return v;
}

int lev_sbx_oci_spawn(struct lev_sandbox *sb, char *const *argv, char *const *envp,
		      const char *cwd, const struct lev_sandbox_limits *limits,
		      const struct lev_sandbox_io *io, struct lev_sandbox_proc **out,
		      struct lev_err *err)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, in = -1, s = -1, r;
	struct lev_sandbox_proc *p;
	struct lev_sbx_ct *ct = sb->ct;
	bool fast = ct->sockpath != NULL;
	_cleanup_strv_ char **allowed = NULL, **prot = NULL;
	struct timespec now;

	/* while untrusted content is live (lev_sandbox_limits.protect), in the
	 * container that has the protected files bound read-only */
	if (lev_sbx_protected_files(sb->workdir, limits->protect, &prot, err) < 0)
		return err ? err->code : LEV_EUNSUPP;
	if (prot) {
		r = ct_protected(sb, prot, &ct, err);
		if (r < 0)
			return r;
		fast = ct->sockpath != NULL;
	}
	allowed = allowed_env(sb, envp);
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		r = lev_err_errno(err, -errno, "cannot create pipes");
		goto fail;
	}
	p = lev_sbx_proc_alloc(sb, fast ? LEV_SBX_OCI_FAST : LEV_SBX_OCI_EXEC);
	if (fast) {
		int fds[3];

		if (io->stdin_fd >= 0) {
			in = io->stdin_fd;
		} else {
			in = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (in < 0) {
				r = lev_err_errno(err, -errno, "cannot open '/dev/null'");
				free(p);
				goto fail;
			}
		}
		s = connect_helper(ct, err);
		if (s < 0) {
			r = s;
			if (io->stdin_fd < 0)
				close(in);
			free(p);
			goto fail;
		}
		fds[0] = in;
		fds[1] = outp[1];
		fds[2] = errp[1];
		{
			char **env = command_env(ct, allowed);

			r = send_request(s, ct, fds, cwd, argv, env, limits->timeout_ms);
			lev_strv_free(env);
		}
		if (io->stdin_fd < 0)
			close(in);
		if (r < 0) {
			r = lev_err_errno(err, r, "cannot hand '%s' to the container helper", argv[0]);
			close(s);
			free(p);
			goto fail;
		}
		p->sock = s;
	} else {
		pid_t pid = -1;

		r = spawn_exec(sb, ct, argv, allowed, cwd, limits, io, outp[1], errp[1], &pid, err);
		if (r < 0) {
			free(p);
			goto fail;
		}
		p->pid = pid;
		p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	}
	close(outp[1]);
	close(errp[1]);
	lev_sbx_proc_started(p, outp[0], errp[0], argv[0], io, limits);
	clock_gettime(CLOCK_REALTIME, &now);
	p->start_wall = (int64_t)now.tv_sec;
	*out = p;
	return 0;
fail:
	if (outp[0] >= 0) {
		close(outp[0]);
		close(outp[1]);
	}
	if (errp[0] >= 0) {
		close(errp[0]);
		close(errp[1]);
	}
	return r;
}

int lev_sbx_oci_read_answer(struct lev_sandbox_proc *p, int *status, int *exec_errno)
{
	struct lev_oci_ans a;
	size_t got = 0;

	memset(&a, 0, sizeof(a));

	while (got < sizeof(a)) {
		ssize_t n = read(p->sock, (char *)&a + got, sizeof(a) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		got += (size_t)n;
	}
	if (a.magic != LEV_OCI_ANS_MAGIC)
		return -EPROTO;
	if (a.setup_errno)
		return -a.setup_errno;
	*status = a.status;
	*exec_errno = a.exec_errno;
	return 0;
}

void lev_sbx_oci_kill(struct lev_sandbox_proc *p)
{
	if (p->sock >= 0)
		(void)send(p->sock, "K", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int lev_sbx_oci_after(struct lev_sandbox_proc *p, struct lev_err *err)
{
	const struct lev_sandbox *sb = p->sb;
	_cleanup_close_ int fd = open(sb->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	unsigned fixed = 0;
	int r;

	/* the helper's filter refused every way to set those bits, and no
	 * container here may make device nodes: nothing to walk for */
	if (p->mode == LEV_SBX_OCI_FAST && sb->ct->seccomp)
		return 0;
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot check the workdir '%s' after '%s'",
				     sb->workdir, p->argv0);
	/* one second of slack: file times come from a coarse clock */
	r = lev_oci_scrub(fd, sb->ct->file_uid, p->start_wall - 1, &fixed);
	if (r < 0)
		return lev_err_errno(err, r, "cannot check what '%s' left in the workdir '%s'",
				     p->argv0, sb->workdir);
	return 0;
}

/* ---- describe ---- */

/* "UID:GID", and who that is. */
static const char *describe_user(const struct lev_sbx_ct *c, char *buf, size_t n)
{
	if (c->rootless)
		snprintf(buf, n, "0:0 (rootless: the engine's root is the invoking user)");
	else if (getuid() == 0)
		snprintf(buf, n, "%u:%u (lev runs as root: the workdir's owner, else nobody; "
			 "never root)", (unsigned)c->run_uid, (unsigned)c->run_gid);
	else
		snprintf(buf, n, "%u:%u (the invoking user)", (unsigned)c->run_uid,
			 (unsigned)c->run_gid);
	return buf;
}

int lev_sbx_oci_describe(const struct lev_sandbox *sb, char *const *argv, const char *cwd,
			 void *jv, struct lev_buf *out, struct lev_err *err)
{
	char ubuf[160];
	json_t *o = jv, *c = json_object(), *a;
	char **v;
	char *const *s;

	(void)out;
	(void)err;
	json_object_set_new(c, "engine", json_string(sb->ct->engine));
	json_object_set_new(c, "image", json_string(sb->spec.image));
	json_object_set_new(c, "name", json_string(sb->ct->name));
	json_object_set_new(c, "started", json_boolean(!sb->ct->planned));
	json_object_set_new(c, "user", json_string_nocheck(describe_user(sb->ct, ubuf,
									   sizeof(ubuf))));
	a = json_array();
	for (s = sb->ct->run_argv; s && *s; s++)
		json_array_append_new(a, json_string(*s));
	json_object_set_new(c, "run_argv", a);
	if (sb->ct->sockpath) {
		json_object_set_new(c, "commands", json_string("fast path: the helper in the container"));
		json_object_set_new(c, "socket", json_string(sb->ct->sockpath));
	} else {
		v = lev_oci_exec_argv(sb->ct->engine, sb->ct->engine_args, sb->ct->name,
				      cwd ? cwd : sb->workdir, false, false, false,
				      sb->limits.timeout_ms, NULL, argv);
		a = json_array();
		for (s = v; s && *s; s++)
			json_array_append_new(a, json_string(*s));
		json_object_set_new(c, "exec_argv", a);
		lev_strv_free(v);
	}
	json_object_set_new(c, "seccomp", json_boolean(sb->ct->seccomp));
	json_object_set_new(c, "environment",
			    json_string("the image's, plus [security] allow_env_vars (nothing else "
					"of the host's, nothing the engine adds)"));
	json_object_set_new(o, "container", c);
	return 0;
}
