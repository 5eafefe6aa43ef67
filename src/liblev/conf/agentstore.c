/*
 * agentstore.c - install, list and remove agents atomically.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "liblev/conf/agentstore.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/datadir.h"
#include "liblev/base/sha256.h"
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
		if (depth == 0 && (!strcmp(de->d_name, ".git") ||
				   !strcmp(de->d_name, LEV_STORE_RECORD)))
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

/* ---- fingerprints ---- */

struct fp_state {
	struct lev_sha256 h;
	size_t files;
	size_t bytes;
};

static void fp_add(struct fp_state *fs, const char *s)
{
	lev_sha256_update(&fs->h, s, strlen(s) + 1);	/* with its NUL: unambiguous */
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int fp_file(int dfd, const char *name, const char *rel, struct fp_state *fs,
		   struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	char buf[65536], meta[64];
	struct stat st;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot open '%s'", rel);
	if (fstat(fd, &st) < 0)
		return lev_err_errno(err, -errno, "cannot stat '%s'", rel);
	if (!S_ISREG(st.st_mode))
		return lev_err_set(err, -EINVAL, "'%s' changed while being read", rel);
	snprintf(meta, sizeof(meta), "%o %jd", (unsigned)(st.st_mode & 07777),
		 (intmax_t)st.st_size);
	fp_add(fs, "f");
	fp_add(fs, rel);
	fp_add(fs, meta);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return lev_err_errno(err, -errno, "cannot read '%s'", rel);
		if (n == 0)
			break;
		fs->bytes += (size_t)n;
		if (fs->bytes > LEV_STORE_MAX_BYTES)
			return lev_err_set(err, -EFBIG, "the agent directory is too large (over %zu MiB)",
					   LEV_STORE_MAX_BYTES >> 20);
		lev_sha256_update(&fs->h, buf, (size_t)n);
	}
	return 0;
}

static int fp_tree(int dfd, const char *rel, unsigned depth, struct fp_state *fs,
		   struct lev_err *err)
{
	char **names = NULL;
	size_t n = 0, i;
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	if (depth > LEV_STORE_MAX_DEPTH)
		return lev_err_set(err, -ELOOP, "the agent directory is nested too deeply");
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot list '%s'", *rel ? rel : ".");
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return lev_err_errno(err, r, "cannot list '%s'", *rel ? rel : ".");
	}
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (depth == 0 && !strcmp(de->d_name, LEV_STORE_RECORD))
			continue;
		if (++fs->files > LEV_STORE_MAX_FILES) {
			r = lev_err_set(err, -EFBIG, "the agent directory has too many entries");
			break;
		}
		names = lev_strv_push(names, de->d_name);
		n++;
	}
	if (!r && errno)
		r = lev_err_errno(err, -errno, "cannot list '%s'", *rel ? rel : ".");
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; r == 0 && i < n; i++) {
		_cleanup_free_ char *sub = *rel ? xasprintf("%s/%s", rel, names[i])
						: xstrdup(names[i]);
		struct stat st;

		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = lev_err_errno(err, -errno, "cannot stat '%s'", sub);
		} else if (S_ISDIR(st.st_mode)) {
			char mode[16];
			_cleanup_close_ int sfd = openat(dirfd(d), names[i],
							 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
								 O_CLOEXEC);

			snprintf(mode, sizeof(mode), "%o", (unsigned)(st.st_mode & 07777));
			fp_add(fs, "d");
			fp_add(fs, sub);
			fp_add(fs, mode);
			if (sfd < 0)
				r = lev_err_errno(err, -errno, "cannot open '%s'", sub);
			else
				r = fp_tree(sfd, sub, depth + 1, fs, err);
		} else if (S_ISREG(st.st_mode)) {
			r = fp_file(dirfd(d), names[i], sub, fs, err);
		} else {
			char kind[16];

			snprintf(kind, sizeof(kind), "%o", (unsigned)(st.st_mode & S_IFMT));
			fp_add(fs, "o");
			fp_add(fs, sub);
			fp_add(fs, kind);
		}
	}
	lev_strv_free(names);
	closedir(d);
	return r;
}

static int fingerprint_fd(int dfd, char *out, struct lev_err *err)
{
	struct fp_state fs = { .files = 0, .bytes = 0 };
	uint8_t dg[LEV_SHA256_LEN];
	char hex[LEV_SHA256_HEX_LEN + 1];
	int r;

	lev_sha256_init(&fs.h);
	fp_add(&fs, "lev agent fingerprint 1");
	r = fp_tree(dfd, "", 0, &fs, err);
	lev_sha256_final(&fs.h, dg);
	if (r < 0)
		return r;
	lev_sha256_hex(dg, hex);
	snprintf(out, LEV_AGENT_FINGERPRINT_LEN + 1, "sha256:%s", hex);
	return 0;
}

int lev_agentstore_fingerprint(const char *dir, char *out, struct lev_err *err)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot open '%s'", dir);
	return fingerprint_fd(fd, out, err);
}

/* Write the record (fingerprint of DFD, install path DEST) into DFD. */
static int write_record(int dfd, const char *dest, struct lev_err *err)
{
	char fp[LEV_AGENT_FINGERPRINT_LEN + 1];
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *text = NULL;
	json_t *o;
	int r;

	r = fingerprint_fd(dfd, fp, err);
	if (r < 0)
		return lev_err_wrap(err, "cannot fingerprint the copy");
	o = json_pack("{s:s, s:s}", "fingerprint", fp, "path", dest);
	if (!o)
		return lev_err_set(err, -EINVAL, "install path '%s' is not valid UTF-8", dest);
	text = json_dumps(o, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(o);
	if (!text)
		return lev_err_set(err, -ENOMEM, "cannot encode the install record");
	fd = openat(dfd, LEV_STORE_RECORD, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot write '%s'", LEV_STORE_RECORD);
	r = lev_write_all(fd, text, strlen(text));
	if (r == 0)
		r = lev_write_all(fd, "\n", 1);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0)
		return lev_err_errno(err, r, "cannot write '%s'", LEV_STORE_RECORD);
	return 0;
}

const char *lev_agent_identity_name(enum lev_agent_identity id)
{
	switch (id) {
	case LEV_IDENTITY_VERIFIED:
		return "verified";
	case LEV_IDENTITY_PATH:
		return "path";
	case LEV_IDENTITY_NO_RECORD:
		return "no-record";
	case LEV_IDENTITY_CHANGED:
		return "changed";
	case LEV_IDENTITY_UNCHECKED:
		break;
	}
	return "unchecked";
}

static bool same_dir(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

enum lev_agent_identity lev_agentstore_verify(const char *dir, const char *name,
					      char **note_out)
{
	struct lev_err lerr = LEV_ERR_INIT;
	_cleanup_free_ char *inst = NULL;
	_cleanup_free_ char *rpath = NULL;
	_cleanup_free_ char *data = NULL;
	char now[LEV_AGENT_FINGERPRINT_LEN + 1];
	const char *rec_fp = NULL, *rec_path = NULL;
	enum lev_agent_identity id;
	char *note = NULL;
	json_t *o = NULL;
	int r;

	if (!name || lev_datadir_agent_dir(name, &inst, NULL) < 0 || !same_dir(dir, inst)) {
		id = LEV_IDENTITY_PATH;
		note = xasprintf("'%s' is not the installed agent '%s'; per-agent grants in your "
				 "config apply only to the agent installed with 'lev add'",
				 dir, name ? name : "");
		goto out;
	}
	rpath = lev_path_join(inst, LEV_STORE_RECORD);
	r = lev_read_file(rpath, 64 << 10, &data, NULL, &lerr);
	if (r == -ENOENT) {
		id = LEV_IDENTITY_NO_RECORD;
		note = xasprintf("installed agent '%s' has no fingerprint (an older lev installed "
				 "it); reinstall it with 'lev add --force'", name);
		goto out;
	}
	if (r < 0) {
		id = LEV_IDENTITY_UNCHECKED;
		note = xasprintf("cannot check installed agent '%s': %s", name, lerr.msg);
		goto out;
	}
	o = json_loads(data, 0, NULL);
	if (!o || json_unpack(o, "{s:s, s:s}", "fingerprint", &rec_fp, "path", &rec_path) < 0) {
		id = LEV_IDENTITY_CHANGED;
		note = xasprintf("the install record of agent '%s' is damaged; review the agent, "
				 "then reinstall it with 'lev add --force'", name);
		goto out;
	}
	if (!same_dir(rec_path, inst)) {
		id = LEV_IDENTITY_CHANGED;
		note = xasprintf("installed agent '%s' was recorded for '%s', not '%s'; reinstall "
				 "it with 'lev add --force'", name, rec_path, inst);
		goto out;
	}
	if (lev_agentstore_fingerprint(inst, now, &lerr) < 0) {
		id = LEV_IDENTITY_UNCHECKED;
		note = xasprintf("cannot check installed agent '%s': %s", name, lerr.msg);
		goto out;
	}
	if (strcmp(now, rec_fp)) {
		id = LEV_IDENTITY_CHANGED;
		note = xasprintf("the files of installed agent '%s' changed since 'lev add' "
				 "(recorded %.19s..., now %.19s...); review them, then reinstall it "
				 "with 'lev add --force'", name, rec_fp, now);
		goto out;
	}
	id = LEV_IDENTITY_VERIFIED;
out:
	json_decref(o);
	if (note_out)
		*note_out = note;
	else
		free(note);
	return id;
}

void lev_agentstore_bind(struct lev_blueprint *bp)
{
	char *note = NULL;

	bp->identity_verified =
		lev_agentstore_verify(bp->dir, bp->name, &note) == LEV_IDENTITY_VERIFIED;
	free(bp->identity_note);
	bp->identity_note = note;
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
	r = write_record(dfd, dest, err);
	if (r < 0)
		goto out;
	if (fsync(dfd) < 0) {
		r = lev_err_errno(err, -errno, "cannot write '%s'", tmp);
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
	lev_agentstore_bind(copy);
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

/* Fill the fresh directory SRC for a manifest install of NAME at DEST (see the header). */
static int manifest_dir(const char *src, const char *dest, const char *name, const char *text,
			size_t len, bool replace, struct lev_err *err)
{
	_cleanup_free_ char *mf = lev_path_join(src, LEV_BLUEPRINT_FILE);
	struct lev_blueprint *bp = NULL;
	int r;

	if (replace) {
		_cleanup_close_ int sfd = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_close_ int dfd = -1;
		struct copy_state cs = { 0, 0 };

		if (sfd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
			return lev_err_set(err, -ENOENT, "agent '%s' is not installed", name);
		if (sfd < 0)
			return lev_err_errno(err, -errno, "cannot open '%s'", dest);
		dfd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			return lev_err_errno(err, -errno, "cannot open '%s'", src);
		r = copy_tree(sfd, dfd, "", 0, &cs, err);
		if (r < 0)
			return lev_err_wrap(err, "cannot copy '%s'", dest);
	}
	r = lev_write_file_atomic(mf, text, len, 0600, err);
	if (r < 0)
		return r;
	r = lev_blueprint_load(src, &bp, err);
	if (r < 0) {
		size_t n = strlen(src);

		/* name the manifest, not the scratch directory it was loaded from */
		if (!strncmp(err->msg, src, n) && err->msg[n] == '/')
			memmove(err->msg, err->msg + n + 1, strlen(err->msg + n + 1) + 1);
		/* the client's manifest is at fault, whatever the loader's code */
		lev_err_wrap(err, "the manifest of '%s' does not load", name);
		err->code = -EINVAL;
		return -EINVAL;
	}
	if (strcmp(bp->name, name))
		r = lev_err_set(err, -EINVAL, "the manifest names agent '%s', not '%s'", bp->name,
				name);
	lev_blueprint_free(bp);
	return r;
}

int lev_agentstore_install_manifest(const char *name, const char *text, size_t len, bool replace,
				    struct lev_blueprint **bp_out, struct lev_err *err)
{
	_cleanup_free_ char *agents = NULL, *dest = NULL, *src = NULL;
	struct stat st;
	int r;

	r = lev_datadir_agent_dir(name, &dest, err);
	if (r == 0)
		r = lev_datadir_agents_dir(&agents, err);
	if (r == 0)
		r = lev_datadir_ensure(agents, err);
	if (r < 0)
		return r;
	if (memchr(text, '\0', len))
		return lev_err_set(err, -EINVAL, "the manifest of '%s' holds a NUL byte", name);
	if (!replace && lstat(dest, &st) == 0)
		return lev_err_set(err, -EEXIST, "agent '%s' is already installed", name);
	/* ".tmp-": a crashed lev's is swept (sweep_stale()) */
	src = xasprintf("%s/.tmp-src-%s-XXXXXX", agents, name);
	if (!mkdtemp(src))
		return lev_err_errno(err, -errno, "cannot create a directory in '%s'", agents);
	r = manifest_dir(src, dest, name, text, len, replace, err);
	if (r == 0)
		r = lev_agentstore_install(src, replace, bp_out, NULL, err);
	(void)lev_rm_rf(src, NULL);
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
		free(v[i].identity_note);
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
		a->identity = lev_agentstore_verify(a->dir, a->name, &a->identity_note);
		if (a->bp) {
			a->bp->identity_verified = a->identity == LEV_IDENTITY_VERIFIED;
			a->bp->identity_note = a->identity_note ? xstrdup(a->identity_note) : NULL;
		}
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
