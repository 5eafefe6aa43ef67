/*
 * filelabel.h - the label ledger: files keep the labels of the context that
 * wrote them, across runs (docs/integrity.md "Files keep their labels").
 *
 * A file written while untrusted or private content was live (by a file
 * tool, or changed by a shell command run then) gets an entry in
 * <data root>/labels.jsonl, one JSON object a line:
 *
 *	{"dev":64769,"ino":1234,"btime":1765100000123456789,"path":"/w/TODO.md",
 *	 "size":42,"sha256":"<hex>","integrity":"untrusted","sensitivity":"private",
 *	 "run":"20261207-...","at":1765100000}
 *
 * Every file tool, seed and child run reads it back: an object matches an
 * entry by any of three keys, so a command that renames, copies or rewrites
 * the file does not wash the label off:
 *   inode    the same (st_dev, st_ino) and, where the filesystem records
 *            it, the same birth time (an inode number used again for a new
 *            file does not match);
 *   path     the same real path (a file replaced under its name);
 *   content  the same size and SHA-256 (a copy) of bytes a file tool wrote,
 *            never for an empty file.
 * Why a ledger and not an extended attribute: `user.lev.label` can be
 * removed by any command that can write the file (setfattr -x, cp, an
 * editor's rename), and tmpfs or a container's overlay may not keep it;
 * the ledger lives in lev's data root, which file tools never write and
 * sandboxes mask.  Labels only rise: a later write under a trusted context
 * does not lower one; only the user does (lev_filelabels_clear(), `lev
 * label --clear PATH`).
 *
 * The ledger is appended under an exclusive flock(2) and read under a
 * shared one; a reader re-reads it when its size or mtime changed, so a
 * run sees what its children and other runs wrote.  A missing ledger is an
 * empty one.  Nothing prints.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/base/sha256.h"
#include "liblev/base/types.h"

#define LEV_FILELABELS_NAME "labels.jsonl"

struct lev_filelabel {
	bool has;			/* some entry matched */
	enum lev_integrity integrity;	/* the highest of the matches */
	enum lev_level sensitivity;
};

struct lev_filelabel_entry {
	uint64_t dev, ino;
	int64_t btime;			/* ns since the epoch; 0: not recorded */
	char *path;			/* the real path when written */
	uint64_t size;
	char sha256[LEV_SHA256_HEX_LEN + 1];	/* "" when not hashed (too large) */
	enum lev_integrity integrity;
	enum lev_level sensitivity;
	char *run;			/* the run that wrote it, or NULL */
	int64_t at;			/* seconds since the epoch */
};

struct lev_filelabels;

/* The ledger of the data root DATA_ROOT (nothing is read or created yet). */
struct lev_filelabels *lev_filelabels_new(const char *data_root);
/* Accepts NULL; returns NULL. */
struct lev_filelabels *lev_filelabels_free(struct lev_filelabels *l);

/*
 * The label of the object open at FD (a regular file or a directory, O_PATH
 * or readable) whose real path is REAL.  A directory's listing is labelled
 * by the entries for files directly in it (their names were chosen then).
 * A ledger that cannot be read fails closed: *OUT untrusted and private,
 * and the error in ERR (the return is still 0).  Returns 0.
 */
int lev_filelabels_of(struct lev_filelabels *l, int fd, const char *real,
		      struct lev_filelabel *out, struct lev_err *err);

/*
 * Record that the regular file open at FD (real path REAL) was written
 * under INTEGRITY and SENSITIVITY by RUN (may be NULL).  BY_CONTENT: its
 * bytes are the writer's own (a file tool wrote them), so a copy of them
 * matches too; a file a command changed is matched by inode and path only
 * (its bytes may be a copy of a file nobody labelled, which must not then
 * match).  Creates the ledger (LEV_FILE_MODE) when missing.  Returns 0 or
 * a negative errno.
 */
int lev_filelabels_record(struct lev_filelabels *l, int fd, const char *real,
			  enum lev_integrity integrity, enum lev_level sensitivity,
			  const char *run, bool by_content, struct lev_err *err);

/*
 * The entries matching the object at FD (-1: match REAL by path only);
 * *OUT gets an array of borrowed pointers valid until the next call on L
 * (free the array), *WHY (optional) a parallel array of "inode", "path" or
 * "content".  Returns the count, or a negative errno.
 */
long lev_filelabels_find(struct lev_filelabels *l, int fd, const char *real,
			 const struct lev_filelabel_entry ***out, const char ***why,
			 struct lev_err *err);

/* Remove every entry matching (as lev_filelabels_find()); *N_OUT: how many. */
int lev_filelabels_clear(struct lev_filelabels *l, int fd, const char *real, size_t *n_out,
			 struct lev_err *err);
