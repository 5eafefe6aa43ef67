/*
 * filelabel.c - the label ledger (filelabel.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/policy/filelabel.h"
#include "liblev/policy/fsconfine.h"
#include "liblev/policy/taint.h"

/* The ledger read at most (bytes); a larger one is an error (fail closed). */
#define LEDGER_MAX ((size_t)256 << 20)
/* Files hashed at most (bytes); a larger one is matched by inode and path only. */
#define HASH_MAX ((uint64_t)256 << 20)

struct lev_filelabels {
	char *path;
	struct lev_filelabel_entry *e;
	size_t n;
	bool loaded;
	struct stat seen;		/* the ledger as last read */
};

/* What one object is, for matching; its digest taken on first need. */
struct ident {
	int fd;
	bool dir;
	uint64_t dev, ino, size;
	int64_t btime;
	int hashed;			/* 0: not yet, 1: done, -1: cannot */
	char sha[LEV_SHA256_HEX_LEN + 1];
};

struct lev_filelabels *lev_filelabels_new(const char *data_root)
{
	struct lev_filelabels *l = xcalloc(1, sizeof(*l));

	l->path = lev_path_join(data_root, LEV_FILELABELS_NAME);
	return l;
}

static void entries_release(struct lev_filelabels *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->e[i].path);
		free(l->e[i].run);
	}
	free(l->e);
	l->e = NULL;
	l->n = 0;
}

struct lev_filelabels *lev_filelabels_free(struct lev_filelabels *l)
{
	if (!l)
		return NULL;
	entries_release(l);
	free(l->path);
	free(l);
	return NULL;
}

/* ---- the ledger file ------------------------------------------------------ */

static int parse_line(const char *file, size_t line, const char *s, size_t len,
		      struct lev_filelabel_entry *e, struct lev_err *err)
{
	json_error_t je;
	json_t *j = json_loadb(s, len, 0, &je);
	const char *path = NULL, *sha = "", *integ = NULL, *sens = NULL, *run = NULL;
	json_int_t dev = 0, ino = 0, bt = 0, size = 0, at = 0;
	int r = 0;

	memset(e, 0, sizeof(*e));
	if (!j || json_unpack_ex(j, &je, 0, "{s:I, s:I, s?:I, s:s, s:I, s?:s, s:s, s:s, s?:s, s?:I}",
				 "dev", &dev, "ino", &ino, "btime", &bt, "path", &path, "size",
				 &size, "sha256", &sha, "integrity", &integ, "sensitivity", &sens,
				 "run", &run, "at", &at) < 0) {
		json_decref(j);
		return lev_err_set(err, -EINVAL, "%s:%zu: not a label entry: %s", file, line, je.text);
	}
	if (lev_integrity_parse(integ, &e->integrity) < 0 ||
	    lev_level_parse(sens, &e->sensitivity) < 0 || strlen(sha) > LEV_SHA256_HEX_LEN)
		r = lev_err_set(err, -EINVAL, "%s:%zu: a bad 'integrity', 'sensitivity' or "
				"'sha256'", file, line);
	if (r == 0) {
		e->dev = (uint64_t)dev;
		e->ino = (uint64_t)ino;
		e->btime = bt;
		e->path = xstrdup(path);
		e->size = (uint64_t)size;
		memcpy(e->sha256, sha, strlen(sha) + 1);
		e->run = run ? xstrdup(run) : NULL;
		e->at = at;
	}
	json_decref(j);
	return r;
}

static int parse_all(struct lev_filelabels *l, const char *data, size_t len, struct lev_err *err)
{
	size_t line = 0;

	for (const char *p = data, *end = data + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct lev_filelabel_entry e;
		int r;

		line++;
		if (n) {
			r = parse_line(l->path, line, p, n, &e, err);
			if (r < 0)
				return r;
			l->e = xreallocarray(l->e, l->n + 1, sizeof(*l->e));
			l->e[l->n++] = e;
		}
		p += n + 1;
	}
	return 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Read the entries from FD (the ledger, locked by the caller). */
static int read_entries(struct lev_filelabels *l, int fd, struct lev_err *err)
{
	_cleanup_free_ char *data = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	if (fstat(fd, &st) < 0)
		return lev_err_set(err, -errno, "cannot stat '%s': %s", l->path, strerror(errno));
	r = lev_read_fd(fd, l->path, LEDGER_MAX, &data, &len, err);
	if (r < 0)
		return r;
	entries_release(l);
	l->loaded = false;
	r = parse_all(l, data ? data : "", len, err);
	if (r < 0) {
		entries_release(l);
		return r;
	}
	l->seen = st;
	l->loaded = true;
	return 0;
}

/* Read the ledger again when it changed since the last read. */
static int load(struct lev_filelabels *l, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (stat(l->path, &st) < 0) {
		if (errno != ENOENT)
			return lev_err_set(err, -errno, "cannot stat '%s': %s", l->path,
					   strerror(errno));
		entries_release(l);
		l->loaded = true;
		memset(&l->seen, 0, sizeof(l->seen));
		return 0;
	}
	if (l->loaded && same_file(&st, &l->seen))
		return 0;
	fd = open(l->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_SH) < 0)
		return lev_err_set(err, -errno, "cannot read '%s': %s", l->path, strerror(errno));
	return read_entries(l, fd, err);
}

/* Open the ledger for appending, locked, the file its path names now. */
static int open_locked(struct lev_filelabels *l, int flags, struct lev_err *err)
{
	for (int tries = 0; tries < 8; tries++) {
		struct stat a, b;
		int fd = open(l->path, flags | O_NOFOLLOW | O_CLOEXEC, LEV_FILE_MODE);

		if (fd < 0)
			return lev_err_set(err, -errno, "cannot open '%s': %s", l->path,
					   strerror(errno));
		if (flock(fd, LOCK_EX) < 0 || fstat(fd, &a) < 0) {
			int e = errno;

			close(fd);
			return lev_err_set(err, -e, "cannot lock '%s': %s", l->path, strerror(e));
		}
		/* a clear renamed a new ledger over this one meanwhile: take that */
		if (stat(l->path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return fd;
		close(fd);
	}
	return lev_err_set(err, -EAGAIN, "'%s' keeps being replaced", l->path);
}

/* ---- matching ------------------------------------------------------------- */

static int ident_of(int fd, struct ident *id)
{
	struct statx sx;

	memset(id, 0, sizeof(*id));
	id->fd = fd;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &sx) < 0)
		return -errno;
	id->dir = S_ISDIR(sx.stx_mode);
	id->dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	id->ino = sx.stx_ino;
	id->size = sx.stx_size;
	if (sx.stx_mask & STATX_BTIME)
		id->btime = (int64_t)sx.stx_btime.tv_sec * 1000000000 + sx.stx_btime.tv_nsec;
	return 0;
}

/* The SHA-256 of the file at ID->fd (an O_PATH fd is opened again to read). */
static int hash(struct ident *id)
{
	_cleanup_close_ int own = -1;
	struct lev_sha256 c;
	uint8_t d[LEV_SHA256_LEN];
	char buf[65536];
	uint64_t off = 0;
	int fd = id->fd;

	if (id->hashed)
		return id->hashed > 0 ? 0 : -EIO;
	id->hashed = -1;
	if (id->dir || id->size > HASH_MAX)
		return -EFBIG;
	lev_sha256_init(&c);
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);

		if (n < 0 && errno == EBADF && own < 0 && off == 0) {
			if (lev_confine_reopen(id->fd, O_RDONLY, &own, NULL) < 0)
				return -EBADF;
			fd = own;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		lev_sha256_update(&c, buf, (size_t)n);
		off += (uint64_t)n;
	}
	lev_sha256_final(&c, d);
	lev_sha256_hex(d, id->sha);
	id->hashed = 1;
	return 0;
}

/* Why entry E matches the object ID at REAL ("inode", "path", "content"), or NULL. */
static const char *matches(const struct lev_filelabel_entry *e, struct ident *id,
			   const char *real)
{
	if (id && e->dev == id->dev && e->ino == id->ino &&
	    (!e->btime || !id->btime || e->btime == id->btime))
		return "inode";
	if (real && !strcmp(e->path, real))
		return "path";
	if (id && !id->dir && e->size && e->size == id->size && e->sha256[0] && hash(id) == 0 &&
	    !strcmp(e->sha256, id->sha))
		return "content";
	return NULL;
}

/* True when PATH lies directly in the directory DIR. */
static bool directly_in(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	const char *rest;

	if (strncmp(path, dir, n))
		return false;
	rest = path + n;
	if (n > 1) {
		if (*rest != '/')
			return false;
		rest++;
	} else if (*rest == '/') {
		rest++;
	}
	return *rest && !strchr(rest, '/');
}

static void raise_label(struct lev_filelabel *out, const struct lev_filelabel_entry *e)
{
	if (!out->has) {
		out->has = true;
		out->integrity = e->integrity;
		out->sensitivity = e->sensitivity;
		return;
	}
	if (e->integrity > out->integrity)
		out->integrity = e->integrity;
	out->sensitivity = lev_level_max(out->sensitivity, e->sensitivity);
}

int lev_filelabels_of(struct lev_filelabels *l, int fd, const char *real,
		      struct lev_filelabel *out, struct lev_err *err)
{
	struct ident id;

	memset(out, 0, sizeof(*out));
	if (load(l, err) < 0 || ident_of(fd, &id) < 0) {
		if (err && !err->code)
			(void)lev_err_set(err, -EIO, "cannot stat '%s': %s", real, strerror(errno));
		*out = (struct lev_filelabel){ true, LEV_UNTRUSTED, LEV_PRIVATE };
		return 0;
	}
	for (size_t i = 0; i < l->n; i++) {
		const struct lev_filelabel_entry *e = &l->e[i];

		if (id.dir ? directly_in(e->path, real) || matches(e, &id, NULL)
			   : matches(e, &id, real) != NULL)
			raise_label(out, e);
	}
	return 0;
}

long lev_filelabels_find(struct lev_filelabels *l, int fd, const char *real,
			 const struct lev_filelabel_entry ***out, const char ***why,
			 struct lev_err *err)
{
	const struct lev_filelabel_entry **v = NULL;
	const char **w = NULL;
	struct ident id;
	size_t n = 0;
	int r = load(l, err);

	if (r < 0)
		return r;
	if (fd >= 0 && ident_of(fd, &id) < 0)
		return lev_err_set(err, -errno, "cannot stat '%s': %s", real, strerror(errno));
	for (size_t i = 0; i < l->n; i++) {
		const char *m = matches(&l->e[i], fd >= 0 ? &id : NULL, real);

		if (!m)
			continue;
		v = xreallocarray(v, n + 1, sizeof(*v));
		w = xreallocarray(w, n + 1, sizeof(*w));
		v[n] = &l->e[i];
		w[n++] = m;
	}
	*out = v;
	if (why)
		*why = w;
	else
		free(w);
	return (long)n;
}

/* ---- writing -------------------------------------------------------------- */

static char *entry_line(const struct lev_filelabel_entry *e)
{
	json_t *j = json_pack("{s:I, s:I, s:I, s:s, s:I, s:s, s:s, s:s, s:I}",
			      "dev", (json_int_t)e->dev, "ino", (json_int_t)e->ino,
			      "btime", (json_int_t)e->btime, "path", e->path,
			      "size", (json_int_t)e->size, "sha256", e->sha256,
			      "integrity", lev_integrity_name(e->integrity),
			      "sensitivity", lev_level_name(e->sensitivity), "at", (json_int_t)e->at);
	char *s;

	if (!j)
		return NULL;
	if (e->run)
		json_object_set_new(j, "run", json_string(e->run));
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

/* True when an entry already says as much about ID at REAL. */
static bool known(const struct lev_filelabels *l, const struct lev_filelabel_entry *ne)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct lev_filelabel_entry *e = &l->e[i];

		if (e->dev == ne->dev && e->ino == ne->ino && e->btime == ne->btime &&
		    !strcmp(e->path, ne->path) && !strcmp(e->sha256, ne->sha256) &&
		    e->integrity >= ne->integrity && e->sensitivity >= ne->sensitivity)
			return true;
	}
	return false;
}

int lev_filelabels_record(struct lev_filelabels *l, int fd, const char *real,
			  enum lev_integrity integrity, enum lev_level sensitivity,
			  const char *run, bool by_content, struct lev_err *err)
{
	struct lev_filelabel_entry e = { .integrity = integrity, .sensitivity = sensitivity };
	_cleanup_free_ char *line = NULL;
	_cleanup_close_ int lfd = -1;
	struct ident id;
	int r;

	if (ident_of(fd, &id) < 0)
		return lev_err_set(err, -errno, "cannot stat '%s': %s", real, strerror(errno));
	e.dev = id.dev;
	e.ino = id.ino;
	e.btime = id.btime;
	e.size = id.size;
	e.path = (char *)real;
	e.run = (char *)run;
	e.at = (int64_t)time(NULL);
	if (by_content && hash(&id) == 0)
		memcpy(e.sha256, id.sha, sizeof(e.sha256));
	r = load(l, err);
	if (r < 0)
		return r;
	if (known(l, &e))
		return 0;
	line = entry_line(&e);
	if (!line)
		return lev_err_set(err, -ENOMEM, "cannot format a label entry");
	lfd = open_locked(l, O_WRONLY | O_APPEND | O_CREAT, err);
	if (lfd < 0)
		return lfd;
	{
		_cleanup_free_ char *nl = xasprintf("%s\n", line);
		size_t len = strlen(nl);

		if (write(lfd, nl, len) != (ssize_t)len)
			return lev_err_set(err, -EIO, "cannot write '%s': %s", l->path,
					   strerror(errno));
	}
	return 0;
}

int lev_filelabels_clear(struct lev_filelabels *l, int fd, const char *real, size_t *n_out,
			 struct lev_err *err)
{
	struct lev_buf keep = LEV_BUF_INIT_MAX(LEDGER_MAX);
	_cleanup_close_ int lfd = -1;
	struct ident id;
	size_t gone = 0;
	int r;

	*n_out = 0;
	if (fd >= 0 && ident_of(fd, &id) < 0)
		return lev_err_set(err, -errno, "cannot stat '%s': %s", real, strerror(errno));
	if (access(l->path, F_OK) < 0)
		return 0;	/* no ledger: nothing is labelled */
	lfd = open_locked(l, O_RDWR, err);
	if (lfd < 0)
		return lfd;
	r = read_entries(l, lfd, err);
	for (size_t i = 0; r == 0 && i < l->n; i++) {
		_cleanup_free_ char *line = NULL;

		if (matches(&l->e[i], fd >= 0 ? &id : NULL, real)) {
			gone++;
			continue;
		}
		line = entry_line(&l->e[i]);
		if (!line || lev_buf_addf(&keep, "%s\n", line) < 0)
			r = lev_err_set(err, -ENOMEM, "cannot keep the ledger's entries");
	}
	if (r == 0 && gone)
		r = lev_write_file_atomic(l->path, keep.buf ? keep.buf : "", keep.len,
					  LEV_FILE_MODE, err);
	lev_buf_release(&keep);
	l->loaded = false;
	if (r == 0)
		*n_out = gone;
	return r;
}
