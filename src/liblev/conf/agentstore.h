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
 * Every install records a fingerprint: SHA-256 over every file and
 * directory of the installed copy (relative path, kind, permission bits,
 * size, contents, in sorted order), with the install path, in
 * <root>/agents/<name>/LEV_STORE_RECORD (a source file of that name is not
 * copied, and the record is not part of the fingerprint).  The user's
 * per-agent loosening ([agent_tool_permissions.X] allow,
 * [agent_read_paths.X], [agent_safe_commands.X]) applies only to the
 * installed agent X whose files still match (lev_agentstore_bind()): not to
 * a blueprint run from a path that merely calls itself X, nor to an
 * installed agent whose files changed since `lev add`.
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
#define LEV_STORE_RECORD ".lev-install.json"

enum lev_agent_identity {
	LEV_IDENTITY_VERIFIED,	/* the installed agent, files as at `lev add` */
	LEV_IDENTITY_PATH,	/* not the installed agent of its name (run from a path) */
	LEV_IDENTITY_NO_RECORD,	/* installed without a fingerprint (an older lev) */
	LEV_IDENTITY_CHANGED,	/* its files changed since `lev add` */
	LEV_IDENTITY_UNCHECKED,	/* the check itself failed (see the note) */
};

/* "verified", "path", "no-record", "changed", "unchecked". */
const char *lev_agent_identity_name(enum lev_agent_identity id);

/*
 * The fingerprint of the agent directory DIR ("sha256:" + 64 hex digits,
 * written to OUT, LEV_AGENT_FINGERPRINT_LEN + 1 bytes).  Symbolic links and
 * special files are counted by name and kind (an install never holds
 * them).  The limits of an install apply.
 */
#define LEV_AGENT_FINGERPRINT_LEN (7 + 64)
int lev_agentstore_fingerprint(const char *dir, char *out, struct lev_err *err);

/*
 * Is the agent directory DIR the installed agent NAME, unchanged?  Never
 * fails: a check that cannot be made is LEV_IDENTITY_UNCHECKED.  *note_out
 * (optional) gets a sentence saying why not (NULL when verified).
 */
enum lev_agent_identity lev_agentstore_verify(const char *dir, const char *name,
					      char **note_out);

/* Set BP->identity_verified and BP->identity_note (lev_agentstore_verify()). */
void lev_agentstore_bind(struct lev_blueprint *bp);

/*
 * Install the blueprint directory SRC (or the directory of an agent.leviath
 * file).  On success *bp_out (optional) gets the installed blueprint (its
 * dir/path point into the store), *replaced_out (optional) says whether
 * an older install was replaced, and the fingerprint is recorded.  -EEXIST when the agent is installed and
 * FORCE is false.
 */
int lev_agentstore_install(const char *src, bool force, struct lev_blueprint **bp_out,
			   bool *replaced_out, struct lev_err *err);

/*
 * Install the manifest TEXT (LEN bytes: an agent.leviath) as the agent NAME
 * (lev serve's POST and PUT /api/blueprints): written 0600 alone into a
 * fresh directory of the store (with REPLACE, into a copy of the installed
 * agent's files, so its script tools and the like stay), checked to name
 * NAME, then installed by lev_agentstore_install() with every check `lev
 * add` makes.  -EINVAL for a name that is not a valid agent name or a
 * manifest that does not load or names another agent; without REPLACE
 * -EEXIST when NAME is installed, with it -ENOENT when it is not.  Nothing
 * is left behind on failure.
 */
int lev_agentstore_install_manifest(const char *name, const char *text, size_t len, bool replace,
				    struct lev_blueprint **bp_out, struct lev_err *err);

/* Remove the installed agent NAME; -ENOENT when it is not installed. */
int lev_agentstore_remove(const char *name, struct lev_err *err);

struct lev_agent_info {
	char *name;
	char *dir;
	struct lev_blueprint *bp;	/* NULL when it does not load */
	char *error;			/* why it does not load, else NULL */
	enum lev_agent_identity identity;	/* its files against its fingerprint */
	char *identity_note;		/* why not verified, else NULL */
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
