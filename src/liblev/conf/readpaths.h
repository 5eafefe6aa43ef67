/*
 * readpaths.h - [read_paths] entries: syntax, compilation, matching, the
 * declared-and-granted decision, and the pattern-level grant report.
 *
 * An entry is one of
 *	exact	"/data/runs", "~/notes", "../shared"	grants its whole subtree
 *	glob	"glob:~/docs/ **", "glob:*.md"		'*' '?' '[...]' stay in one
 *							component, '**' crosses
 *	regex	"regex:/data/archive/.*"		PCRE2, anchored to the whole path
 * (The space in "/ **" above only keeps this comment a comment.)
 * Relative exact and glob entries resolve against the workdir; "~" and
 * "~/..." against the home directory.  Every match is made against a REAL
 * path (absolute, no symlinks, no "." or ".." components): the caller reads
 * it back from an open file descriptor (see fsconfine.h), never from a
 * string the agent wrote.
 *
 * Two sets make a policy: the blueprint's declarations and the user's
 * grants ([security] read_paths ++ [agent_read_paths.<agent>] allow).  A read
 * outside the workdir is allowed only when both match the same real path, or
 * when the user set allow_blueprint_read_paths = true and the declarations
 * match.  The policy is active iff the blueprint declares at least one entry.
 *
 * Ownership: a `struct lev_readpaths` owns copies of everything it was given;
 * it is immutable after lev_readpaths_new() and safe to match from several
 * threads at once.  Nothing here prints.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"

/* Bounds on untrusted input: bytes per entry, entries per set. */
#define LEV_READPATH_ENTRY_MAX 4096
#define LEV_READPATHS_MAX 4096

enum lev_readpath_kind {
	LEV_READPATH_EXACT,
	LEV_READPATH_GLOB,
	LEV_READPATH_REGEX,
};

/*
 * Check the syntax of one entry without touching the filesystem or needing a
 * workdir or home: prefixes, '~' forms, glob components and classes, regex
 * shape and compilation.  Returns 0 or LEV_EPARSE with a message naming the
 * entry ("read_paths entry 'glob:a/../b': ...").
 */
int lev_readpath_check_syntax(const char *raw, struct lev_err *err);

/*
 * The broad-read-path lint: true when RAW can match the whole home directory
 * or any path on the machine: "/", "~", "regex:/.*", a glob of nothing but
 * '**' under "/" or "~", and anything that matches a probe path anywhere on
 * the machine or anywhere in the home.  Pure; a malformed entry is not broad.
 */
bool lev_readpath_is_broad(const char *raw);

struct lev_readpaths;

/*
 * Compile ENTRIES (a strv; NULL or empty gives an empty set) into *OUT.
 * WORKDIR (absolute) anchors relative entries (NULL: a relative entry is an
 * error); pass the workdir's real path so that glob and regex entries
 * compare against real paths.  HOME
 * (absolute, or NULL when there is none) expands "~".  Exact roots are
 * canonicalised here (realpath); a root that does not exist yet is tried
 * again at each match and never matches while it does not exist.  Any bad
 * entry fails the whole set with an error naming it (LEV_EPARSE).
 * The caller frees *OUT with lev_readpaths_free().
 */
int lev_readpaths_new(char *const *entries, const char *workdir, const char *home,
		      struct lev_readpaths **out, struct lev_err *err);

/* Free S (NULL is fine); returns NULL. */
struct lev_readpaths *lev_readpaths_free(struct lev_readpaths *s);

/* Number of entries (0 for NULL). */
size_t lev_readpaths_count(const struct lev_readpaths *s);

/* The entry text as written (borrowed), or NULL past the end. */
const char *lev_readpaths_entry(const struct lev_readpaths *s, size_t i);

/* The kind of entry I. */
enum lev_readpath_kind lev_readpaths_kind(const struct lev_readpaths *s, size_t i);

/*
 * Index of the first entry matching REAL_PATH, or -1.  REAL_PATH must be an
 * absolute canonical path; anything else (relative, "." or ".." components,
 * empty components, longer than PATH_MAX) matches nothing.
 */
long lev_readpaths_find(const struct lev_readpaths *s, const char *real_path);

static inline bool lev_readpaths_match(const struct lev_readpaths *s, const char *real_path)
{
	return lev_readpaths_find(s, real_path) >= 0;
}

/*
 * Pattern-level matching for reports: exact roots compare as lexically
 * normalised paths by whole components (the root need not exist; "/" covers
 * everything), globs and regexes match PATH as written.
 */
bool lev_readpaths_match_lexically(const struct lev_readpaths *s, const char *path);

enum lev_readpath_decision {
	LEV_READPATH_NOT_DECLARED,	/* the blueprint never asked for it */
	LEV_READPATH_ALLOWED,		/* declared, and granted by the user */
	LEV_READPATH_NOT_GRANTED,	/* declared, but the user's config does not grant it */
};

/* Borrowed sets; GRANTS may be NULL (nothing granted). */
struct lev_readpath_policy {
	const struct lev_readpaths *declared;
	const struct lev_readpaths *grants;
	bool allow_blueprint;		/* [security] allow_blueprint_read_paths */
};

/* Active iff the blueprint declares at least one entry. */
bool lev_readpath_policy_active(const struct lev_readpath_policy *p);

/* The decision for one real path (an inactive policy declares nothing). */
enum lev_readpath_decision lev_readpath_policy_decide(const struct lev_readpath_policy *p,
						      const char *real_path);

/* "not-declared", "allowed", "not-granted". */
const char *lev_readpath_decision_name(enum lev_readpath_decision d);

enum lev_grant_status {
	LEV_GRANT_GRANTED,
	LEV_GRANT_NOT_GRANTED,
	LEV_GRANT_UNDETERMINED,
};

/* "granted", "NOT granted", "cannot be checked from the pattern alone". */
const char *lev_grant_status_label(enum lev_grant_status s);

/*
 * The pattern-level grant report (no filesystem access): for each entry of
 * DECLARED, whether GRANTS cover it.  allow_blueprint grants everything; no
 * grants grant nothing; otherwise a sample path is built from the entry
 * (the exact root itself; a glob with its wildcards filled in; a regex's
 * literal prefix) and matched lexically against GRANTS.  An entry with no
 * sample, or that cannot compile here (say, "~" without a home), is
 * UNDETERMINED.  WORKDIR may be NULL (unknown): relative declarations and
 * grants are then compared against the same stand-in directory.
 * STATUS_OUT must hold lev_strv_len(DECLARED) elements; it is written only on
 * success.  A grant that does not compile is an error (LEV_EPARSE) naming it.
 */
int lev_readpaths_report(char *const *declared, char *const *grants, bool allow_blueprint,
			 const char *workdir, const char *home, enum lev_grant_status *status_out,
			 struct lev_err *err);
