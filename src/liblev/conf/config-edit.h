/*
 * config-edit.h - `lev mcp add` and `lev mcp remove` edit config.toml as
 * text (docs/mcp.md).
 *
 * The user's file is kept byte for byte: add appends one [[mcp_servers]]
 * block; remove cuts exactly the lines of the block that names the server
 * (from its [[mcp_servers]] line to the line before the next table header,
 * the comments and blank lines just above that header kept, and one blank
 * line above the block, which add puts there).  The result is
 * parsed with lev's own parser before anything is written, and must be a
 * valid config with the server added (or gone) and every other server
 * unchanged; otherwise nothing is written.  The file is replaced
 * atomically (a temporary file, fsync, rename) with its mode kept (0600
 * when it is new); a symlink is followed to the file it names.
 */
#pragma once

#include <sys/types.h>

#include "liblev/base/error.h"
#include "liblev/conf/config.h"

/* The [[mcp_servers]] block for S, as add appends it (fresh). */
char *lev_config_mcp_block(const struct lev_mcp_server_conf *s);

/*
 * Add server S to the config at PATH (created when missing).  A server of
 * that name already there is -EEXIST.
 */
int lev_config_mcp_add(const char *path, const struct lev_mcp_server_conf *s,
		       struct lev_err *err);

/* Remove server NAME from the config at PATH; -ENOENT when it has none. */
int lev_config_mcp_remove(const char *path, const char *name, struct lev_err *err);

/*
 * The edits themselves, on text: a fresh *out.  TEXT must parse; the
 * result is checked as above.  NAME_IN_MSG names the file in messages.
 */
int lev_config_mcp_add_text(const char *text, const char *name_in_msg,
			    const struct lev_mcp_server_conf *s, char **out, struct lev_err *err);
int lev_config_mcp_remove_text(const char *text, const char *name_in_msg, const char *name,
			       char **out, struct lev_err *err);

/*
 * Read the config at PATH for an edit, a symlink followed: *real (the file
 * to replace), *text (a missing file is "") and *mode (its mode, 0600 when
 * missing), each fresh.
 */
int lev_config_read_for_edit(const char *path, char **real, char **text, mode_t *mode,
			     struct lev_err *err);
