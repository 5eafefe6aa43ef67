/*
 * sock.c - the control socket (see sock.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/sock.h"

int lev_sock_path(char **out, struct lev_err *err)
{
	return lev_datadir_socket_path(out, err);
}

int lev_sock_lock_path(char **out, struct lev_err *err)
{
	return lev_datadir_lock_path(out, err);
}

static int sock_addr(const char *path, struct sockaddr_un *sa, struct lev_err *err)
{
	size_t n = strlen(path);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (n >= sizeof(sa->sun_path))
		return lev_err_set(err, -ENAMETOOLONG,
				   "the socket path '%s' is %zu bytes, longer than the %zu a unix "
				   "socket allows; set LEVIATH_HOME to a shorter directory",
				   path, n, sizeof(sa->sun_path) - 1);
	memcpy(sa->sun_path, path, n + 1);
	return 0;
}

int lev_sock_lock(const char *lock_path, int *out, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	char pid[32];
	int n;

	fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, LEV_FILE_MODE);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot open '%s'", lock_path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		if (e == EWOULDBLOCK)
			return lev_err_set(err, -EBUSY, "a daemon is already running (pid %d)",
					   (int)lev_sock_lock_owner(lock_path));
		return lev_err_errno(err, -e, "cannot lock '%s'", lock_path);
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		return lev_err_errno(err, -errno, "cannot write '%s'", lock_path);
	*out = TAKE_FD(fd);
	return 0;
}

pid_t lev_sock_lock_owner(const char *lock_path)
{
	_cleanup_close_ int fd = open(lock_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	char buf[32] = { 0 };
	uint64_t v;
	ssize_t n;

	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		return 0;	/* nobody holds it */
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[strcspn(buf, "\n")] = '\0';
	if (lev_parse_u64(buf, &v) < 0 || v == 0 || v > 0x7fffffff)
		return 0;
	return (pid_t)v;
}

static int check_dir(const char *path, struct lev_err *err)
{
	_cleanup_free_ char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	struct stat st;

	if (slash && slash != dir)
		*slash = '\0';
	if (stat(dir, &st) < 0)
		return lev_err_errno(err, -errno, "cannot stat '%s'", dir);
	if (st.st_uid != getuid())
		return lev_err_set(err, -EPERM, "'%s' is not owned by you; the daemon's socket "
					       "must live in a directory only you can reach",
				   dir);
	if (st.st_mode & 077)
		return lev_err_set(err, -EPERM,
				   "'%s' is open to other users (mode %03o); the daemon's socket "
				   "must live in a directory only you can reach: chmod 700 '%s'",
				   dir, (unsigned)(st.st_mode & 0777), dir);
	return 0;
}

int lev_sock_listen(const char *path, int *out, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa;
	mode_t old;
	int r;

	r = sock_addr(path, &sa, err);
	if (r < 0)
		return r;
	r = check_dir(path, err);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot create a socket");
	if (unlink(path) < 0 && errno != ENOENT)
		return lev_err_errno(err, -errno, "cannot remove the stale socket '%s'", path);
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0)
		return lev_err_errno(err, -errno, "cannot bind '%s'", path);
	if (chmod(path, LEV_FILE_MODE) < 0)
		return lev_err_errno(err, -errno, "cannot chmod '%s'", path);
	if (listen(fd, 128) < 0)
		return lev_err_errno(err, -errno, "cannot listen on '%s'", path);
	*out = TAKE_FD(fd);
	return 0;
}

int lev_sock_connect_any(const char *path, int *out, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa;
	int r = sock_addr(path, &sa, err);

	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot create a socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return lev_err_errno(err, -errno, "cannot connect to '%s'", path);
	*out = TAKE_FD(fd);
	return 0;
}

/* Whether UID may own a directory on the way to the socket: us or root. */
static bool uid_trusted(uid_t uid)
{
	return uid == getuid() || uid == 0;
}

/*
 * Every directory above the data root DIR (a real path): owned by us or
 * root, and not writable by group or others unless sticky (as /tmp), so
 * nobody else can rename the data root away and put theirs in its place.
 */
static int check_parents(const char *dir, struct lev_err *err)
{
	_cleanup_free_ char *p = xstrdup(dir);
	char *slash = p;
	struct stat st;

	while ((slash = strrchr(p, '/'))) {
		slash[slash == p ? 1 : 0] = '\0';
		if (stat(p, &st) < 0)
			return lev_err_errno(err, -errno, "cannot stat '%s'", p);
		if (!uid_trusted(st.st_uid))
			return lev_err_set(err, -EPERM, "refusing to talk to the daemon: '%s', above "
					   "the data root '%s', belongs to another user (uid %u)",
					   p, dir, (unsigned)st.st_uid);
		if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
			return lev_err_set(err, -EPERM, "refusing to talk to the daemon: '%s', above "
					   "the data root '%s', is writable by other users (mode %03o)",
					   p, dir, (unsigned)(st.st_mode & 0777));
		if (slash == p)
			break;
	}
	return 0;
}

int lev_sock_check_path(const char *path, struct lev_err *err)
{
	_cleanup_free_ char *dir = xstrdup(path), *real = NULL;
	char *slash = strrchr(dir, '/');
	struct stat st;
	int r;

	if (slash && slash != dir)
		*slash = '\0';
	real = realpath(dir, NULL);
	if (!real)
		return lev_err_errno(err, -errno, "cannot reach the daemon at '%s'", path);
	r = check_parents(real, err);
	if (r < 0)
		return r;
	if (stat(real, &st) < 0)
		return lev_err_errno(err, -errno, "cannot stat '%s'", real);
	if (st.st_uid != getuid())
		return lev_err_set(err, -EPERM, "refusing to talk to the daemon: the data root '%s' "
				   "belongs to another user (uid %u)", dir, (unsigned)st.st_uid);
	if (st.st_mode & 077)
		return lev_err_set(err, -EPERM, "refusing to talk to the daemon: the data root '%s' "
				   "is open to other users (mode %03o); it must be yours alone: "
				   "chmod 700 '%s'", dir, (unsigned)(st.st_mode & 0777), dir);
	if (lstat(path, &st) < 0)
		return lev_err_errno(err, -errno, "cannot reach the daemon at '%s'", path);
	if (!S_ISSOCK(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
		return lev_err_set(err, -EPERM, "refusing to talk to the daemon: '%s' is not a "
				   "socket of yours alone (uid %u, mode %03o)",
				   path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
	return 0;
}

int lev_sock_connect(const char *path, int *out, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int r;

	r = sock_addr(path, &sa, err);
	if (r < 0)
		return r;
	r = lev_sock_check_path(path, err);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot create a socket");
	while ((r = connect(fd, (struct sockaddr *)&sa, sizeof(sa))) < 0 && errno == EINTR)
		;
	if (r < 0)
		return lev_err_errno(err, -errno, "cannot reach the daemon at '%s'", path);
	/* the path may have changed hands since it was checked: the peer decides */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr))
		return lev_err_errno(err, -errno, "cannot tell who listens at '%s'", path);
	if (!uid_trusted(cr.uid))
		return lev_err_set(err, -EPERM, "refusing to talk to the daemon: '%s' is answered by "
				   "another user (uid %u, pid %d), not by your daemon",
				   path, (unsigned)cr.uid, (int)cr.pid);
	*out = TAKE_FD(fd);
	return 0;
}

bool lev_sock_peer_ok(int fd, uid_t *uid, pid_t *pid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	*uid = (uid_t)-1;
	*pid = -1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr))
		return false;
	*uid = cr.uid;
	*pid = cr.pid;
	return cr.uid == getuid();
}
