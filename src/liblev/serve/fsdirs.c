/*
 * fsdirs.c - GET /api/fs/dirs: a directory picker's one level, confined.
 *
 * The directory is opened by the kernel beneath the root's fd
 * (lev_confine_open(): openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, the
 * file tools' one confined open), and what is withheld is decided on the
 * real path read back from the opened fd, never on the string asked for:
 * lev's own files (lev_ownfiles_find(), the list the file tools and the
 * sandboxes use) and the credential stores every sandbox masks
 * (lev_sandbox_home_secrets()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/ownfiles.h"
#include "liblev/policy/fsconfine.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/serve/fsdirs.h"

#define FS_DIRS_MAX 5000	/* entries listed; more: "truncated": true */

static unsigned fail(json_t **reply, unsigned status, const char *msg)
{
	*reply = json_pack("{s:s}", "error", msg);
	return status;
}

/* REAL (a real path read back from an fd) is lev's own, or a credential store or beneath one. */
static bool withheld(const struct lev_ownfiles *own, const char *home, const char *real)
{
	size_t n;
	const char *const *secrets = lev_sandbox_home_secrets(&n);

	if (lev_ownfiles_find(own, real, NULL))
		return true;
	for (size_t i = 0; home && i < n; i++) {
		char *p = lev_path_join(home, secrets[i]);
		bool hit = lev_path_under(real, p);

		free(p);
		if (hit)
			return true;
	}
	return false;
}

static const char *name_of(const json_t *e)
{
	const char *s = json_string_value(json_object_get(e, "name"));

	return s ? s : "";
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(name_of(*(json_t *const *)a), name_of(*(json_t *const *)b));
}

json_t *lev_fs_sorted_by_name(json_t *items)
{
	size_t n = json_array_size(items);
	json_t **v = xcalloc(n ? n : 1, sizeof(*v)), *out = json_array();

	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(items, i);
	qsort(v, n, sizeof(*v), cmp_name);
	for (size_t i = 0; i < n; i++)
		json_array_append(out, v[i]);
	free(v);
	json_decref(items);
	return out;
}

/* Whether the entry E of the directory DFD is a directory itself (a symlink is not). */
static bool is_dir(int dfd, const struct dirent *e)
{
	struct stat sb;

	if (e->d_type != DT_UNKNOWN)
		return e->d_type == DT_DIR;
	return fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode);
}

/* The subdirectories of the directory FD (consumed), whose real path is REAL, sorted. */
static json_t *subdirs(int fd, const char *real, const struct lev_ownfiles *own,
		       const char *home, bool hidden, bool *truncated)
{
	DIR *d = fdopendir(fd);
	json_t *items = json_array();
	struct dirent *e;

	if (!d) {
		close(fd);
		return items;
	}
	while ((e = readdir(d))) {
		char *p;

		if (e->d_name[0] == '.' && (!hidden || !strcmp(e->d_name, ".") ||
					    !strcmp(e->d_name, "..")))
			continue;
		if (!is_dir(dirfd(d), e))
			continue;
		if (json_array_size(items) >= FS_DIRS_MAX) {
			*truncated = true;
			break;
		}
		p = lev_path_join(real, e->d_name);
		if (!withheld(own, home, p))
			json_array_append_new(items, json_pack("{s:s,s:s}", "name", e->d_name,
								"path", p));
		free(p);
	}
	closedir(d);
	return lev_fs_sorted_by_name(items);
}

/* PATH as a path relative to ROOT (or its real path ROOT_REAL); NULL: outside both. */
static const char *relative(const char *root, const char *root_real, const char *path)
{
	const char *base, *rel;

	if (!path || !*path)
		return ".";
	if (path[0] != '/')
		return path;
	base = lev_path_under(path, root) ? root : lev_path_under(path, root_real) ? root_real
										 : NULL;
	if (!base)
		return NULL;
	rel = path + (lev_streq(base, "/") ? 0 : strlen(base));
	rel += strspn(rel, "/");
	return *rel ? rel : ".";
}

/* Open PATH beneath the root fd RFD as a directory: 0 and *fd, or the status. */
static unsigned open_beneath(int rfd, const char *root_real, const char *rel, int *fd,
			     json_t **reply)
{
	int r = lev_confine_open(rfd, root_real, rel, O_PATH | O_DIRECTORY, LEV_CONFINE_AUTO, fd,
				 NULL);

	if (r == -EXDEV || r == -ELOOP)
		return fail(reply, 403, "query 'path': it leaves the root (an absolute path "
					"elsewhere, '..' or a symlink out); give one inside it");
	if (r == -ENOENT)
		return fail(reply, 404, "query 'path': no such directory");
	if (r == -ENOTDIR)
		return fail(reply, 400, "query 'path': not a directory");
	if (r < 0)
		return fail(reply, 400, "query 'path': cannot open it");
	return 0;
}

static unsigned list_at(int pfd, const char *root_real, const char *home, bool hidden,
			json_t **reply)
{
	struct lev_ownfiles own = { 0 };
	char *real = NULL;
	bool truncated = false;
	json_t *dirs;
	int fd;

	if (lev_confine_fd_path(pfd, &real, NULL) < 0)
		return fail(reply, 409, "query 'path': it changed while it was opened; ask again");
	if (lev_ownfiles_list(NULL, &own, NULL) < 0 || withheld(&own, home, real)) {
		lev_ownfiles_release(&own);
		free(real);
		return fail(reply, 403, "query 'path': lev's own files and credential stores "
					"are never listed");
	}
	if (lev_confine_reopen(pfd, O_RDONLY | O_DIRECTORY, &fd, NULL) < 0) {
		lev_ownfiles_release(&own);
		free(real);
		return fail(reply, 409, "query 'path': it changed while it was opened; ask again");
	}
	dirs = subdirs(fd, real, &own, home, hidden, &truncated);
	lev_ownfiles_release(&own);
	*reply = json_pack("{s:s,s:o,s:o,s:b}", "path", real, "parent",
			   lev_streq(real, root_real) ? json_null()
			   : json_stringn(real, (size_t)(strrchr(real, '/') - real) +
						    (strrchr(real, '/') == real)),
			   "dirs", dirs, "truncated", truncated);
	free(real);
	return 200;
}

unsigned lev_fs_dirs(const char *root, const char *path, bool hidden, json_t **reply)
{
	char *root_real = NULL, *home = NULL, *home_real = NULL;
	const char *rel;
	int rfd, pfd = -1;
	unsigned st;

	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0 || lev_confine_fd_path(rfd, &root_real, NULL) < 0) {
		if (rfd >= 0)
			close(rfd);
		return fail(reply, 500, "the listing's root cannot be opened");
	}
	rel = relative(root, root_real, path);
	if (!rel) {
		st = fail(reply, 403, "query 'path': outside the root this server lists");
	} else if (!(st = open_beneath(rfd, root_real, rel, &pfd, reply))) {
		if (lev_home_dir(&home, NULL) == 0)
			home_real = realpath(home, NULL);
		st = list_at(pfd, root_real, home_real ? home_real : home, hidden, reply);
		close(pfd);
	}
	close(rfd);
	free(root_real);
	free(home);
	free(home_real);
	return st;
}
