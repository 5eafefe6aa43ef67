/*
 * agentstore.h - installed agents under <data root>/agents/<name>/.
 *
 * An install is all or nothing: the blueprint is parsed where it is, copied
 * into a fresh temporary directory inside <root>/agents (mode 0700, files
 * 0600), parsed again from the copy, and only then renamed into place.  Any
 * failure removes the temporary directory, so a reader never sees a
 * half-installed agent.  The copy refuses symbolic links, devices, FIFOs
 * and sockets, and trees past LEV_STORE_MAX_FILES files, LEV_STORE_MAX_DEPTH
 * levels or LEV_STORE_MAX_BYTES bytes.  A `.git` directory is not copied.
 *
 * Replacing an installed agent needs FORCE; the swap is atomic
 * (renameat2(RENAME_EXCHANGE)), then the old tree is deleted.
 *
 * Strings and blueprints handed out through OUT parameters are owned by
 * the caller.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/conf/blueprint.h"
#include "liblev/base/error.h"

#define LEV_STORE_MAX_FILES 2000
#define LEV_STORE_MAX_DEPTH 16
#define LEV_STORE_MAX_BYTES ((size_t)64 << 20)

/*
 * Install the blueprint directory SRC (or the directory of an agent.leviath
 * file).  On success *bp_out (optional) gets the installed blueprint (its
 * dir/path point into the store) and *replaced_out (optional) says whether
 * an older install was replaced.  -EEXIST when the agent is installed and
 * FORCE is false.
 */
int lev_agentstore_install(const char *src, bool force, struct lev_blueprint **bp_out,
			   bool *replaced_out, struct lev_err *err);

/* Remove the installed agent NAME; -ENOENT when it is not installed. */
int lev_agentstore_remove(const char *name, struct lev_err *err);

struct lev_agent_info {
	char *name;
	char *dir;
	struct lev_blueprint *bp;	/* NULL when it does not load */
	char *error;			/* why it does not load, else NULL */
};

/*
 * The installed agents, sorted by name.  A missing store is an empty list.
 * Free with lev_agentstore_list_free().
 */
int lev_agentstore_list(struct lev_agent_info **out, size_t *n_out, struct lev_err *err);
void lev_agentstore_list_free(struct lev_agent_info *v, size_t n);

/*
 * Turn a command-line PATH|NAME into a blueprint path: an existing path (or
 * anything with a '/') is used as is; otherwise a valid agent name names an
 * installed agent.  -ENOENT with a message when neither exists.
 */
int lev_agentstore_resolve(const char *arg, char **path_out, struct lev_err *err);
