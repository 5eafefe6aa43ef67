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

#include <stdbool.h>
#include <stddef.h>
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

/*
 * Push "NAME=value" KV onto *LIST as "NAME<SEP>value" (SEP "=" for an env
 * entry, ": " for a header), as `lev mcp add --env/--header` and POST
 * /api/mcp/servers take them; false (nothing pushed) when KV has no '=' or
 * no name before it.
 */
bool lev_config_mcp_pair(char ***list, const char *kv, const char *sep);

/*
 * Replace the config at PATH with TEXT (LEN bytes), as lev serve's PUT
 * /api/config writes it: TEXT is parsed first by lev_config_parse() as
 * NAME_IN_MSG (the loader's parser, every key's check; an error names its
 * line and column) and nothing is written unless it is valid; then the file
 * is replaced atomically with its mode kept, a symlink followed as above.
 * *warnings_out (optional) gets the parser's warnings (a strv, may be NULL).
 * Nothing is merged: the file becomes TEXT byte for byte.
 */
int lev_config_replace(const char *path, const char *text, size_t len, const char *name_in_msg,
		       char ***warnings_out, struct lev_err *err);
