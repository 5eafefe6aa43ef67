/*
 * fsconfine.c - openat2(RESOLVE_BENEATH) and an equally strict
 * component-by-component walk; real paths read back from file descriptors.
 * See fsconfine.h for the design.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/policy/fsconfine.h"
#include "liblev/base/xalloc.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* -1 unknown, 0 missing, 1 present */
static atomic_int have_openat2 = -1;

static int sys_openat2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how;

	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)flags;
	how.resolve = resolve;
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

bool lev_confine_have_openat2(void)
{
	int v = atomic_load(&have_openat2);

	if (v < 0) {
		int fd = sys_openat2(AT_FDCWD, "/", O_PATH | O_CLOEXEC, RESOLVE_NO_MAGICLINKS);
		/* ENOSYS: old kernel; EPERM: a seccomp profile that does not know it */
		v = fd >= 0 || (errno != ENOSYS && errno != EPERM);
		if (fd >= 0)
			close(fd);
		atomic_store(&have_openat2, v);
	}
	return v == 1;
}

static void note_no_openat2(void)
{
	atomic_store(&have_openat2, 0);
}

static bool path_under(const char *path, size_t plen, const char *root, size_t rlen)
{
	if (rlen == 1 && root[0] == '/')
		return true;
	return plen >= rlen && memcmp(path, root, rlen) == 0 && (plen == rlen || path[rlen] == '/');
}

static const char *mode_name(enum lev_confine_mode mode)
{
	return mode == LEV_CONFINE_WALK ? "walk" : "openat2";
}

/* ---- the walk --------------------------------------------------------- */

struct walk {
	int stack[LEV_CONFINE_MAX_DEPTH];	/* stack[0] is the root (borrowed) */
	int depth;
	char *rem;				/* the path still to walk */
	size_t rem_len;
	size_t pos;
	int hops;
};

#define REM_MAX (2 * PATH_MAX)

static void walk_pop_all(struct walk *w)
{
	while (w->depth > 0)
		close(w->stack[w->depth--]);
}

static int cur(const struct walk *w)
{
	return w->stack[w->depth];
}

/*
 * Replace the walked component with TARGET, keeping what is still to walk
 * (which is empty or starts with '/').
 */
static int rem_splice(struct walk *w, const char *target, size_t tlen)
{
	size_t rest = w->rem_len - w->pos;
	char *n;

	if (tlen + rest + 1 > REM_MAX)
		return -ENAMETOOLONG;
	n = xmalloc(tlen + rest + 1);
	memcpy(n, target, tlen);
	memcpy(n + tlen, w->rem + w->pos, rest);
	n[tlen + rest] = '\0';
	free(w->rem);
	w->rem = n;
	w->rem_len = tlen + rest;
	w->pos = 0;
	return 0;
}

/*
 * Follow the symlink held by the O_PATH fd LFD, which lives in the current
 * directory.  ROOT_REAL names the root for absolute targets; CLAMP says the
 * root is "/" (".." at the root stays there, every absolute target is
 * inside).  The link is read through LFD itself, so what is followed is the
 * link that was opened, not whatever has the name now.
 */
static int follow(struct walk *w, int lfd, const char *root_real, bool clamp)
{
	char target[PATH_MAX];
	struct statfs sfs;
	ssize_t n;

	if (++w->hops > LEV_CONFINE_MAX_SYMLINKS)
		return -ELOOP;
	if (fstatfs(lfd, &sfs) < 0)
		return -errno;
	if (sfs.f_type == PROC_SUPER_MAGIC)
		return -ELOOP;	/* never follow anything on procfs: magic links */
	n = readlinkat(lfd, "", target, sizeof(target));
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(target))
		return -ENAMETOOLONG;
	if (n == 0)
		return -ENOENT;
	target[n] = '\0';
	if (target[0] != '/')
		return rem_splice(w, target, (size_t)n);
	if (clamp) {
		walk_pop_all(w);
		return rem_splice(w, target + 1, (size_t)n - 1);
	}
	if (root_real && root_real[0] == '/') {
		size_t rl = strlen(root_real);
		if (path_under(target, (size_t)n, root_real, rl)) {
			size_t skip = (rl == 1) ? 1 : rl;
			walk_pop_all(w);
			return rem_splice(w, target + skip, (size_t)n - skip);
		}
	}
	return -EXDEV;
}

static bool only_slashes(const char *s)
{
	while (*s == '/')
		s++;
	return *s == '\0';
}

/* Push the directory FD (taken) on the walk's stack. */
static int walk_push(struct walk *w, int fd)
{
	if (w->depth + 1 >= LEV_CONFINE_MAX_DEPTH) {
		close(fd);
		return -ENAMETOOLONG;
	}
	w->stack[++w->depth] = fd;
	return 0;
}

/* An O_PATH fd of NAME itself (never followed) and its stat, or a negative errno. */
static int open_nofollow(const struct walk *w, const char *name, struct stat *st)
{
	int fd = openat(cur(w), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

/*
 * The next component into NAME: 1, 0 at the end of the path, or a
 * negative errno.  *LAST: nothing but slashes follows; *DIR_WANTED: a
 * slash follows.
 */
static int walk_next(struct walk *w, char name[NAME_MAX + 1], bool *last, bool *dir_wanted)
{
	const char *c;
	size_t len;

	while (w->rem[w->pos] == '/')
		w->pos++;
	if (!w->rem[w->pos])
		return 0;
	c = w->rem + w->pos;
	len = strcspn(c, "/");
	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, c, len);
	name[len] = '\0';
	w->pos += len;
	*last = only_slashes(w->rem + w->pos);
	*dir_wanted = w->rem[w->pos] == '/';
	return 1;
}

/* A component that must be a directory: step into it, or follow the link it is. */
static int walk_dir(struct walk *w, const char *name, const char *root_real, bool clamp)
{
	struct stat st;
	int fd, r;

	/* the common case in one call: a real directory (never a link) */
	fd = openat(cur(w), name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		return walk_push(w, fd);
	if (errno != ENOTDIR)
		return -errno;
	/* a symlink, or not a directory at all */
	fd = open_nofollow(w, name, &st);
	if (fd < 0)
		return fd;
	if (S_ISLNK(st.st_mode)) {
		r = follow(w, fd, root_real, clamp);
		close(fd);
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		close(fd);
		return -ENOTDIR;
	}
	return walk_push(w, fd);
}

/*
 * The final component, opened with FLAGS: 1 with *FD_OUT set, 0 when it
 * was a link that has been followed (walk on), or a negative errno.
 */
static int walk_last(struct walk *w, const char *name, int flags, const char *root_real,
		     bool clamp, int *fd_out)
{
	struct stat st;
	int fd, r;

	fd = openat(cur(w), name, flags | O_NOFOLLOW);
	if (fd >= 0) {
		if (!(flags & O_PATH)) {
			*fd_out = fd;
			return 1;
		}
		if (fstat(fd, &st) < 0) {
			r = -errno;
			close(fd);
			return r;
		}
		if (!S_ISLNK(st.st_mode)) {
			if ((flags & O_DIRECTORY) && !S_ISDIR(st.st_mode)) {
				close(fd);
				return -ENOTDIR;
			}
			*fd_out = fd;
			return 1;
		}
		/* an O_PATH fd of the link itself */
	} else {
		int e = errno;

		if (e != ELOOP && e != ENOTDIR && e != EMLINK)
			return -e;
		fd = open_nofollow(w, name, &st);
		if (fd < 0)
			return fd;
		if (!S_ISLNK(st.st_mode)) {
			close(fd);
			/* ELOOP but no link any more: it was swapped under us */
			return e == ENOTDIR && !S_ISDIR(st.st_mode) ? -ENOTDIR : -EAGAIN;
		}
	}
	r = follow(w, fd, root_real, clamp);
	close(fd);
	return r;
}

static int walk_open(int root_fd, const char *root_real, const char *path, int flags, bool clamp,
		     int *fd_out)
{
	struct walk w;
	int r = 0;

	w.stack[0] = root_fd;
	w.depth = 0;
	w.rem_len = strlen(path);
	if (w.rem_len >= REM_MAX)
		return -ENAMETOOLONG;
	w.rem = xstrdup(path);
	w.pos = 0;
	w.hops = 0;

	for (;;) {
		char name[NAME_MAX + 1];
		bool last, dir_wanted;

		r = walk_next(&w, name, &last, &dir_wanted);
		if (r <= 0)
			break;
		r = 0;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			if (w.depth == 0) {
				if (clamp)
					continue;
				r = -EXDEV;
				goto out;
			}
			close(w.stack[w.depth--]);
			continue;
		}
		if (!last || dir_wanted) {
			r = walk_dir(&w, name, root_real, clamp);
		} else {
			r = walk_last(&w, name, flags, root_real, clamp, fd_out);
			if (r > 0) {
				r = 0;
				goto out;
			}
		}
		if (r < 0)
			goto out;
	}
	if (r < 0)
		goto out;
	/* The path ended on a directory ("", ".", "..", or a trailing slash). */
	{
		int fd = openat(cur(&w), ".", flags);
		if (fd < 0)
			r = -errno;
		else
			*fd_out = fd;
	}
out:
	walk_pop_all(&w);
	free(w.rem);
	return r;
}

/* ---- public ------------------------------------------------------------ */

static int check_flags(int flags, struct lev_err *err)
{
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		return lev_err_set(err, -EINVAL, "confined opens never create files");
	return 0;
}

/* openat2 refuses O_PATH with anything but these. */
static int fix_flags(int flags)
{
	if (flags & O_PATH)
		return (flags & (O_PATH | O_DIRECTORY | O_NOFOLLOW)) | O_CLOEXEC;
	return flags | O_CLOEXEC | O_NOCTTY;
}

int lev_confine_open(int root_fd, const char *root_real, const char *path, int flags,
		     enum lev_confine_mode mode, int *fd_out, struct lev_err *err)
{
	int r = check_flags(flags, err), fd = -1, tries;

	if (r < 0)
		return r;
	if (!path)
		return lev_err_set(err, -EINVAL, "no path");
	if (path[0] == '/')
		return lev_err_set(err, -EXDEV, "'%s' is absolute", path);
	if (strlen(path) >= PATH_MAX)
		return lev_err_set(err, -ENAMETOOLONG, "path is too long");
	flags = fix_flags(flags);
	if (!path[0])
		path = ".";

	if (mode == LEV_CONFINE_AUTO && lev_confine_have_openat2()) {
		for (tries = 0; tries < 4; tries++) {
			fd = sys_openat2(root_fd, path, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
			if (fd >= 0 || errno != EAGAIN)
				break;
		}
		if (fd >= 0) {
			*fd_out = fd;
			return 0;
		}
		r = -errno;
		if (r == -ENOSYS || r == -EPERM) {
			if (r == -ENOSYS)
				note_no_openat2();
			/* fall through to the walk */
		} else if (r != -EXDEV && r != -EAGAIN) {
			return lev_err_errno(err, r, "cannot open '%s'", path);
		}
		/* EXDEV: an absolute symlink may still point inside; the walk decides */
	}
	for (tries = 0; tries < 8; tries++) {
		r = walk_open(root_fd, root_real, path, flags, false, &fd);
		if (r != -EAGAIN)
			break;
	}
	if (r < 0)
		return lev_err_errno(err, r, "cannot open '%s' (%s)", path, mode_name(LEV_CONFINE_WALK));
	*fd_out = fd;
	return 0;
}

int lev_confine_open_abs(const char *path, int flags, enum lev_confine_mode mode, int *fd_out,
			 struct lev_err *err)
{
	_cleanup_close_ int rootfd = -1;
	int r = check_flags(flags, err), fd = -1, tries;

	if (r < 0)
		return r;
	if (!path || path[0] != '/')
		return lev_err_set(err, -EINVAL, "'%s' is not an absolute path", path ? path : "");
	if (strlen(path) >= PATH_MAX)
		return lev_err_set(err, -ENAMETOOLONG, "path is too long");
	flags = fix_flags(flags);

	if (mode == LEV_CONFINE_AUTO && lev_confine_have_openat2()) {
		fd = sys_openat2(AT_FDCWD, path, flags, RESOLVE_NO_MAGICLINKS);
		if (fd >= 0) {
			*fd_out = fd;
			return 0;
		}
		r = -errno;
		if (r != -ENOSYS && r != -EPERM)
			return lev_err_errno(err, r, "cannot open '%s'", path);
		if (r == -ENOSYS)
			note_no_openat2();
	}
	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return lev_err_errno(err, -errno, "cannot open '/'");
	for (tries = 0; tries < 8; tries++) {
		r = walk_open(rootfd, "/", path + 1, flags, true, &fd);
		if (r != -EAGAIN)
			break;
	}
	if (r < 0)
		return lev_err_errno(err, r, "cannot open '%s'", path);
	*fd_out = fd;
	return 0;
}

int lev_confine_fd_path(int fd, char **out, struct lev_err *err)
{
	char proc[64], buf[PATH_MAX];
	struct stat a, b;
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, sizeof(buf));
	if (n < 0) {
		int e = errno;
		if (e == ENOENT && access("/proc/self/fd", F_OK) < 0)
			return lev_err_set(err, -ENOENT,
					   "cannot read the real path of a file: /proc is not mounted");
		return lev_err_errno(err, -e, "cannot read the real path of fd %d", fd);
	}
	if ((size_t)n >= sizeof(buf))
		return lev_err_set(err, -ENAMETOOLONG, "the real path is too long");
	buf[n] = '\0';
	if (buf[0] != '/')
		return lev_err_set(err, -ENOENT, "the object has no path ('%s')", buf);
	if (fstat(fd, &a) < 0)
		return lev_err_errno(err, -errno, "cannot stat fd %d", fd);
	if (fstatat(AT_FDCWD, buf, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		return lev_err_set(err, -ESTALE, "'%s' changed while it was being checked", buf);
	*out = xstrdup(buf);
	return 0;
}

int lev_confine_reopen(int fd, int flags, int *fd_out, struct lev_err *err)
{
	_cleanup_close_ int nfd = -1;
	struct stat a, b;

	if (fstat(fd, &a) < 0)
		return lev_err_errno(err, -errno, "cannot stat fd %d", fd);
	if ((flags & O_TMPFILE) == O_TMPFILE)
		flags &= ~O_TMPFILE;
	flags = fix_flags(flags & ~(O_CREAT | O_TRUNC | O_EXCL));
	if (S_ISDIR(a.st_mode)) {
		nfd = openat(fd, ".", flags | O_DIRECTORY);
	} else {
		char proc[64];
		if (flags & O_DIRECTORY)
			return lev_err_set(err, -ENOTDIR, "not a directory");
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		nfd = open(proc, flags);
	}
	if (nfd < 0)
		return lev_err_errno(err, -errno, "cannot reopen fd %d", fd);
	if (fstat(nfd, &b) < 0)
		return lev_err_errno(err, -errno, "cannot stat fd %d", nfd);
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return lev_err_set(err, -ESTALE, "the file changed while it was being opened");
	*fd_out = TAKE_FD(nfd);
	return 0;
}
