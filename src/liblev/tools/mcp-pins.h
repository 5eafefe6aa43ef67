/*
 * mcp-pins.h - the MCP tools a user approved, kept across runs (docs/mcp.md).
 *
 * A server's record is <data root>/mcp-pins/<server>.json (0600, written
 * atomically): for each tool its pin (mcp.h) and the SHA-256 of its
 * description and of its input schema apart, so a change can be named.
 *
 *	lev_mcp_pins_enforce()	at a run's start: a tool that is new or whose
 *				pin differs from the record is not offered
 *				(lev_mcp_tool_refuse()); with no record yet
 *				(the first use of a server the user
 *				configured) the tools listed now are recorded
 *	lev_mcp_pins_approve()	`lev mcp approve`: record what the server
 *				lists now
 *	lev_mcp_pins_forget()	`lev mcp remove`: drop the record
 *
 * DATA_ROOT NULL: the data root from the environment (datadir.h).
 */
#pragma once

#include <jansson.h>

#include "liblev/base/error.h"
#include "liblev/tools/mcp.h"

#define LEV_MCP_PINS_DIR "mcp-pins"
#define LEV_MCP_PINS_MAX (4 << 20)

/* <data root>/mcp-pins/<server>.json into *out (fresh). */
int lev_mcp_pins_path(const char *data_root, const char *server, char **out,
		      struct lev_err *err);
/* The record of SERVER into *out (owned), or *out = NULL when there is none. */
int lev_mcp_pins_load(const char *data_root, const char *server, json_t **out,
		      struct lev_err *err);
/*
 * How tool T differs from RECORD (a record lev_mcp_pins_load() gave):
 * NULL when it is the approved tool, else "it is new", "its description
 * changed" (the description first) or "its input schema changed" (static
 * strings).
 */
const char *lev_mcp_pins_diff(const json_t *record, const struct lev_mcp_tool *t);
/* The tools RECORD holds that S no longer lists (a fresh strv, NULL when none). */
char **lev_mcp_pins_gone(const json_t *record, const struct lev_mcp_server *s);

/*
 * Hold S's tools to its record (see above): a refused tool is unusable
 * (lev_mcp_tool_refuse(), its reason names the change).  *notes (a fresh
 * strv, may be NULL) gets a line per approved tool that is gone, or one
 * saying the record was made now.  A record lev cannot read or write is an error.
 */
int lev_mcp_pins_enforce(struct lev_mcp_server *s, const char *data_root, char ***notes,
			 struct lev_err *err);
/* Record the tools S lists now as approved. */
int lev_mcp_pins_approve(const struct lev_mcp_server *s, const char *data_root,
			 struct lev_err *err);
/* Drop SERVER's record; none is not an error. */
int lev_mcp_pins_forget(const char *data_root, const char *server, struct lev_err *err);

/*
 * Remove MCP server NAME, as `lev mcp remove` and lev serve's DELETE
 * /api/mcp/servers/{name} do: its block cut from the config at CONFIG_PATH
 * (lev_config_mcp_remove(): -ENOENT when it has none), then its record
 * dropped, so a server added later under that name starts unapproved.
 * 1 with ERR saying why when the server is gone from the config but its
 * record could not be dropped.
 */
int lev_mcp_server_remove(const char *config_path, const char *data_root, const char *name,
			  struct lev_err *err);
