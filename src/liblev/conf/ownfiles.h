/*
 * ownfiles.h - the one list of lev's own files.
 *
 * Every file lev reads its rules, keys or state from, and that a tool
 * therefore must never write (nor read: the config and credentials hold
 * keys): the data root and what lives beneath it (config.toml, policy.toml,
 * rules/, credentials.toml, the daemon's socket, lock and lev.db), the
 * config wherever LEVIATH_CONFIG_PATH puts it, Leviath's policy.toml and
 * rules/ under ${XDG_CONFIG_HOME:-~/.config}/leviath, and the systemd unit
 * of `lev daemon install`.
 *
 * Each path comes from the same getter its loader uses (datadir.h), so a
 * file lev loads and the list cannot disagree.  The consumers:
 *   - the file tools refuse to read or write anything at or beneath an
 *     entry (tools-fs.c), whatever the workdir;
 *   - the namespace and container sandboxes mask every entry (sandbox.c
 *     build_masks(); an entry that does not exist yet is covered by its
 *     guard directory, created when the workdir could reach it), and a
 *     sandbox without a mount namespace refuses a workdir holding one;
 *   - the Landlock read fence of kind none denies them (fence).
 * A new own file is one row in ownfiles.c; the tests walk the list.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"

struct lev_ownfile {
	const char *what;	/* what it is, for messages ("Leviath's policy"); static */
	char *path;		/* absolute, as its loader names it */
	char *real;		/* its longest existing prefix resolved; NULL when == path */
	/*
	 * The directory masked in its place while PATH does not exist (so a
	 * command cannot create it for the next run to obey), created with
	 * LEV_DIR_MODE when a sandbox's workdir contains it; NULL: none.
	 */
	char *guard;
	bool dir;		/* a directory: everything beneath it is lev's too */
};

struct lev_ownfiles {
	struct lev_ownfile *v;
	size_t n;
};

struct lev_ownfiles_opts {
	const char *data_root;		/* NULL: from LEVIATH_HOME / HOME */
	const char *config_path;	/* the config this run loaded; NULL: the env's only */
};

/*
 * The list, into OUT (release it with lev_ownfiles_release()).  A path that
 * cannot be known (no home directory) is left out; the call itself fails
 * only when nothing at all is known.  O may be NULL.
 */
int lev_ownfiles_list(const struct lev_ownfiles_opts *o, struct lev_ownfiles *out,
		      struct lev_err *err);
void lev_ownfiles_release(struct lev_ownfiles *l);

/*
 * The entry REAL (an absolute real path, e.g. read back from an fd) is or
 * lies beneath, compared with both each entry's path and its real path at a
 * "/" boundary; NULL when none.  *MATCHED (when not NULL) is the one of the
 * two that matched (borrowed).
 */
const struct lev_ownfile *lev_ownfiles_find(const struct lev_ownfiles *l, const char *real,
					    const char **matched);

/*
 * Every path and real path of the list (a fresh strv, NULL when empty),
 * for consumers that compare by prefix (masks, Landlock rules).
 */
char **lev_ownfiles_paths(const struct lev_ownfiles *l);

/* The path a sandbox masks for E: its path when it exists, else its guard (may be NULL). */
const char *lev_ownfile_mask(const struct lev_ownfile *e);
