/*
 * agentstore.c - install, list and remove agents atomically.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "liblev/conf/agentstore.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/datadir.h"
#include "liblev/base/strv.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

/* Temporary entries older than this are left over from a crash. */
#define STALE_SECS (10 * 60)
#define LIST_MAX 10000

struct copy_state {
	size_t files;
	size_t bytes;
};

static int copy_file(int sfd, int dfd, const char *name, const char *rel, struct copy_state *cs,
		     struct lev_err *err)
{
	_cleanup_close_ int in = -1;
	_cleanup_close_ int out = -1;
	struct stat st;
	char buf[65536];

	in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (in < 0)
		return lev_err_errno(err, -errno, "cannot open '%s'", rel);
	if (fstat(in, &st) < 0)
		return lev_err_errno(err, -errno, "cannot stat '%s'", rel);
	if (!S_ISREG(st.st_mode))
		return lev_err_set(err, -EINVAL, "'%s' changed while being copied", rel);
	out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return lev_err_errno(err, -errno, "cannot create the copy of '%s'", rel);
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return lev_err_errno(err, -errno, "cannot read '%s'", rel);
		if (n == 0)
			break;
		cs->bytes += (size_t)n;
		if (cs->bytes > LEV_STORE_MAX_BYTES)
			return lev_err_set(err, -EFBIG,
					   "the blueprint directory is too large (over %zu MiB)",
					   LEV_STORE_MAX_BYTES >> 20);
		r = lev_write_all(out, buf, (size_t)n);
		if (r < 0)
			return lev_err_errno(err, r, "cannot write the copy of '%s'", rel);
	}
	return 0;
}

static int copy_tree(int sfd, int dfd, const char *rel, unsigned depth, struct copy_state *cs,
		     struct lev_err *err)
{
	int lfd;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > LEV_STORE_MAX_DEPTH)
		return lev_err_set(err, -ELOOP, "the blueprint directory is nested too deeply "
				   "(more than %d levels)", LEV_STORE_MAX_DEPTH);
	lfd = openat(sfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lfd < 0)
		return lev_err_errno(err, -errno, "cannot list '%s'", rel);
	d = fdopendir(lfd);
	if (!d) {
		r = -errno;
		close(lfd);
		return lev_err_errno(err, r, "cannot list '%s'", rel);
	}
	while (r == 0) {
		_cleanup_free_ char *pname = NULL;
		_cleanup_free_ char *sub = NULL;
		struct stat st;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				r = lev_err_errno(err, -errno, "cannot list '%s'", rel);
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (depth == 0 && !strcmp(de->d_name, ".git"))
			continue;
		pname = lev_printable(de->d_name, strlen(de->d_name), 128);
		sub = *rel ? xasprintf("%s/%s", rel, pname) : xstrdup(pname);
		if (++cs->files > LEV_STORE_MAX_FILES) {
			r = lev_err_set(err, -EFBIG,
					"the blueprint directory has too many entries (over %d)",
					LEV_STORE_MAX_FILES);
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = lev_err_errno(err, -errno, "cannot stat '%s'", sub);
		} else if (S_ISLNK(st.st_mode)) {
			r = lev_err_set(err, -EPERM,
					"'%s' is a symbolic link; a blueprint directory may not "
					"contain links",
					sub);
		} else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int s2 = -1;
			_cleanup_close_ int d2 = -1;

			if (mkdirat(dfd, de->d_name, 0700) < 0) {
				r = lev_err_errno(err, -errno, "cannot create the copy of '%s'", sub);
				break;
			}
			s2 = openat(dirfd(d), de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			d2 = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 < 0 || d2 < 0)
				r = lev_err_errno(err, -errno, "cannot open '%s'", sub);
			else
				r = copy_tree(s2, d2, sub, depth + 1, cs, err);
		} else if (S_ISREG(st.st_mode)) {
			r = copy_file(dirfd(d), dfd, de->d_name, sub, cs, err);
		} else {
			r = lev_err_set(err, -EPERM,
					"'%s' is a special file (device, FIFO or socket); a blueprint "
					"directory may hold only files and directories",
					sub);
		}
	}
	closedir(d);
	return r;
}

/* Remove .tmp-* / .rm-* entries a crashed lev left behind. */
static void sweep_stale(const char *agents)
{
	_cleanup_close_ int fd = open(agents, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	time_t now = time(NULL);
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d)
		return;
	fd = -1;
	while ((de = readdir(d))) {
		struct stat st;
		_cleanup_free_ char *p = NULL;

		if (!lev_startswith(de->d_name, ".tmp-") && !lev_startswith(de->d_name, ".rm-"))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || now - st.st_mtime < STALE_SECS)
			continue;
		p = lev_path_join(agents, de->d_name);
		(void)lev_rm_rf(p, NULL);
	}
	closedir(d);
}

/* Move TMP to DEST; with FORCE swap an existing DEST out into OLD_OUT. */
static int put_in_place(const char *tmp, const char *dest, const char *agents, bool force,
			const char *name, char **old_out, struct lev_err *err)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dest, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno == EINVAL || errno == ENOSYS) {
		/* a file system without RENAME_NOREPLACE: check, then rename */
		struct stat st;
		if (lstat(dest, &st) < 0 && errno == ENOENT) {
			if (rename(tmp, dest) == 0)
				return 0;
			return lev_err_errno(err, -errno, "cannot install '%s'", dest);
		}
		errno = EEXIST;
	}
	if (errno != EEXIST && errno != ENOTEMPTY)
		return lev_err_errno(err, -errno, "cannot install '%s'", dest);
	if (!force)
		return lev_err_set(err, -EEXIST,
				   "agent '%s' is already installed; 'lev add --force' replaces it",
				   name);
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dest, RENAME_EXCHANGE) == 0) {
		*old_out = xstrdup(tmp);	/* TMP now holds the old install */
		return 0;
	}
	if (errno == EINVAL || errno == ENOSYS) {
		_cleanup_free_ char *old = lev_path_join(agents, ".rm-XXXXXX");
		if (!mkdtemp(old))
			return lev_err_errno(err, -errno, "cannot replace '%s'", dest);
		_cleanup_free_ char *slot = lev_path_join(old, name);
		if (rename(dest, slot) < 0)
			return lev_err_errno(err, -errno, "cannot replace '%s'", dest);
		if (rename(tmp, dest) < 0) {
			int e = -errno;
			(void)rename(slot, dest);
			return lev_err_errno(err, e, "cannot replace '%s'", dest);
		}
		*old_out = TAKE_PTR(old);
		return 0;
	}
	return lev_err_errno(err, -errno, "cannot replace '%s'", dest);
}

int lev_agentstore_install(const char *src, bool force, struct lev_blueprint **bp_out,
			   bool *replaced_out, struct lev_err *err)
{
	struct lev_blueprint *bp = NULL, *copy = NULL;
	_cleanup_free_ char *agents = NULL;
	_cleanup_free_ char *dest = NULL;
	_cleanup_free_ char *tmp = NULL;
	_cleanup_free_ char *old = NULL;
	_cleanup_close_ int sfd = -1;
	_cleanup_close_ int dfd = -1;
	struct copy_state cs = { 0, 0 };
	bool made_tmp = false;
	int r;

	r = lev_blueprint_load(src, &bp, err);
	if (r < 0)
		return r;
	r = lev_datadir_agents_dir(&agents, err);
	if (r == 0)
		r = lev_datadir_agent_dir(bp->name, &dest, err);
	if (r == 0)
		r = lev_datadir_ensure(agents, err);
	if (r < 0)
		goto out;
	sweep_stale(agents);

	sfd = open(bp->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0) {
		r = lev_err_errno(err, -errno, "cannot open '%s'", bp->dir);
		goto out;
	}
	tmp = xasprintf("%s/.tmp-%s-XXXXXX", agents, bp->name);
	if (!mkdtemp(tmp)) {
		r = lev_err_errno(err, -errno, "cannot create a directory in '%s'", agents);
		goto out;
	}
	made_tmp = true;
	dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		r = lev_err_errno(err, -errno, "cannot open '%s'", tmp);
		goto out;
	}
	r = copy_tree(sfd, dfd, "", 0, &cs, err);
	if (r < 0) {
		lev_err_wrap(err, "cannot copy '%s'", bp->dir);
		goto out;
	}
	/* one flush for the whole copy, before it becomes visible */
	if (syncfs(dfd) < 0) {
		r = lev_err_errno(err, -errno, "cannot write '%s'", tmp);
		goto out;
	}

	/* Judge what was copied, not what was there a moment ago. */
	r = lev_blueprint_load(tmp, &copy, err);
	if (r < 0) {
		lev_err_wrap(err, "the copied blueprint does not load");
		goto out;
	}
	if (strcmp(copy->name, bp->name)) {
		r = lev_err_set(err, -EAGAIN, "'%s' changed while being copied; try again", src);
		goto out;
	}
	r = put_in_place(tmp, dest, agents, force, bp->name, &old, err);
	if (r < 0)
		goto out;
	made_tmp = false;
	if (old)
		(void)lev_rm_rf(old, NULL);
	{
		_cleanup_close_ int afd = open(agents, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (afd >= 0)
			(void)fsync(afd);
	}
	free(copy->dir);
	free(copy->path);
	copy->dir = xstrdup(dest);
	copy->path = lev_path_join(dest, LEV_BLUEPRINT_FILE);
	if (replaced_out)
		*replaced_out = old != NULL;
	if (bp_out)
		*bp_out = TAKE_PTR(copy);
out:
	if (made_tmp)
		(void)lev_rm_rf(tmp, NULL);
	lev_blueprint_free(copy);
	lev_blueprint_free(bp);
	return r;
}

int lev_agentstore_remove(const char *name, struct lev_err *err)
{
	_cleanup_free_ char *agents = NULL;
	_cleanup_free_ char *dest = NULL;
	_cleanup_free_ char *trash = NULL;
	struct stat st;
	int r;

	r = lev_datadir_agent_dir(name, &dest, err);
	if (r < 0)
		return r;
	r = lev_datadir_agents_dir(&agents, err);
	if (r < 0)
		return r;
	if (lstat(dest, &st) < 0) {
		if (errno == ENOENT)
			return lev_err_set(err, -ENOENT, "agent '%s' is not installed", name);
		return lev_err_errno(err, -errno, "cannot stat '%s'", dest);
	}
	if (!S_ISDIR(st.st_mode))
		return lev_err_set(err, -ENOTDIR, "'%s' is not an installed agent directory", dest);
	/* out of sight in one step, then deleted */
	trash = xasprintf("%s/.rm-%s-XXXXXX", agents, name);
	if (!mkdtemp(trash))
		return lev_err_errno(err, -errno, "cannot remove agent '%s'", name);
	{
		_cleanup_free_ char *slot = lev_path_join(trash, name);
		if (rename(dest, slot) < 0) {
			r = lev_err_errno(err, -errno, "cannot remove agent '%s'", name);
			(void)rmdir(trash);
			return r;
		}
	}
	return lev_rm_rf(trash, err);
}

static int cmp_info(const void *a, const void *b)
{
	return strcmp(((const struct lev_agent_info *)a)->name,
		      ((const struct lev_agent_info *)b)->name);
}

void lev_agentstore_list_free(struct lev_agent_info *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].dir);
		lev_blueprint_free(v[i].bp);
		free(v[i].error);
	}
	free(v);
}

int lev_agentstore_list(struct lev_agent_info **out, size_t *n_out, struct lev_err *err)
{
	_cleanup_free_ char *agents = NULL;
	_cleanup_close_ int fd = -1;
	struct lev_agent_info *v = NULL;
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	int r;

	r = lev_datadir_agents_dir(&agents, err);
	if (r < 0)
		return r;
	fd = open(agents, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			return lev_err_errno(err, -errno, "cannot open '%s'", agents);
		*out = NULL;
		*n_out = 0;
		return 0;
	}
	d = fdopendir(fd);
	if (!d)
		return lev_err_errno(err, -errno, "cannot list '%s'", agents);
	fd = -1;
	while ((de = readdir(d)) && n < LIST_MAX) {
		struct lev_err lerr = LEV_ERR_INIT;
		struct lev_agent_info *a;
		struct stat st;

		if (de->d_name[0] == '.' || !lev_agent_name_valid(de->d_name))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		v = xreallocarray(v, n + 1, sizeof(*v));
		a = &v[n++];
		memset(a, 0, sizeof(*a));
		a->name = xstrdup(de->d_name);
		a->dir = lev_path_join(agents, de->d_name);
		if (lev_blueprint_load(a->dir, &a->bp, &lerr) < 0)
			a->error = xstrdup(lerr.msg);
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_info);
	*out = v;
	*n_out = n;
	return 0;
}

int lev_agentstore_resolve(const char *arg, char **path_out, struct lev_err *err)
{
	_cleanup_free_ char *dir = NULL;
	struct stat st;

	if (strchr(arg, '/') || stat(arg, &st) == 0 || !lev_agent_name_valid(arg)) {
		*path_out = xstrdup(arg);
		return 0;
	}
	if (lev_datadir_agent_dir(arg, &dir, err) < 0)
		return -EINVAL;
	if (stat(dir, &st) < 0) {
		_cleanup_free_ char *p = lev_printable(arg, strlen(arg), 128);
		return lev_err_set(err, -ENOENT,
				   "'%s' is neither a blueprint path nor an installed agent", p);
	}
	*path_out = TAKE_PTR(dir);
	return 0;
}
