/*
 * mcp.h - a Model Context Protocol client (docs/mcp.md).
 *
 * A stdio server is one process started inside a sandbox (sandbox.h) and
 * spoken to in JSON-RPC 2.0, one JSON message per line on its standard
 * input and output; a url server is spoken to over streamable HTTP through
 * lev's network guard (mcp-http.h), with the same caps and timeouts:
 *
 *	lev_mcp_start()		spawn; initialize (the protocol version is
 *				negotiated), notifications/initialized,
 *				tools/list following nextCursor
 *	lev_mcp_call()		tools/call; notifications/cancelled on a
 *				timeout or a cancel
 *	lev_mcp_free()		close its input, kill it, reap it
 *
 * Memory stays bounded whatever the server sends: a message longer than
 * the server's max_result_bytes is read and thrown away, never buffered,
 * and fails the request it answers.  A server that crashes, hangs, sends
 * garbage or too much costs the request in flight an error result, never
 * the run.  Its standard error is drained (the last few KiB are kept for
 * messages).
 *
 * notifications/tools/list_changed only marks the list stale: before the
 * next call the tools are listed again and each tool's pin (a SHA-256 of
 * its name, description and input schema) is compared with the one taken
 * at start-up.  A tool whose pin changed is refused, named with what
 * changed; an unchanged list (some servers announce a change right after
 * initialize) costs nothing.
 *
 * Descriptions and result texts are made terminal-safe (termtext.h).
 *
 * Ownership: a server owns its tools; lev_mcp_tool_at() borrows.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/base/sha256.h"
#include "liblev/conf/config.h"
#include "liblev/conf/credstore.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/tools/tools.h"

/* The protocol versions lev speaks, newest first (the first is offered). */
extern const char *const lev_mcp_versions[];

#define LEV_MCP_TOOLS_MAX 1024
/* initialize and the first tools/list wait at least this long (ms) */
#define LEV_MCP_START_TIMEOUT_MS 30000
#define LEV_MCP_LIST_PAGES_MAX 64

struct lev_mcp_tool {
	char *name;			/* the server's own name for it */
	char *description;		/* terminal-safe */
	json_t *schema;			/* inputSchema (an object) */
	char pin[LEV_SHA256_HEX_LEN + 1];	/* sha256 of name, description, schema */
	char *unusable;			/* why lev cannot offer it (a schema outside the
					   argcheck subset), or NULL */
	char *changed;			/* what changed since start-up: refused for the
					   rest of the run; NULL */
};

struct lev_mcp_server;

struct lev_mcp_opts {
	const struct lev_mcp_server_conf *conf;	/* borrowed for the server's life */
	struct lev_sandbox *sandbox;	/* where it runs (borrowed for its life); NULL for a url */
	char *const *envp;		/* the environment before the sandbox's filter */
	bool allow_local_network;	/* url: [security] allow_local_network */
	const struct lev_credstore *store;	/* url: its OAuth tokens (NULL: none) */
};

/*
 * Start the server CONF describes in O->sandbox, initialize it and list
 * its tools.  Fails (with the server's last standard error in the
 * message) when it cannot start, exits, times out or answers nonsense.
 */
int lev_mcp_start(const struct lev_mcp_opts *o, struct lev_mcp_server **out, struct lev_err *err);
/* Accepts NULL; returns NULL. */
struct lev_mcp_server *lev_mcp_free(struct lev_mcp_server *s);

const char *lev_mcp_name(const struct lev_mcp_server *s);
/* The protocol version agreed on, and what the server calls itself (may be ""). */
const char *lev_mcp_version(const struct lev_mcp_server *s);
const char *lev_mcp_server_info(const struct lev_mcp_server *s);
size_t lev_mcp_tool_count(const struct lev_mcp_server *s);
const struct lev_mcp_tool *lev_mcp_tool_at(const struct lev_mcp_server *s, size_t i);

/* Do not offer tool I: WHY says why (kept when it already has a reason). */
void lev_mcp_tool_refuse(struct lev_mcp_server *s, size_t i, const char *why);

/*
 * Call TOOL (the server's name) with ARGS (an object) and fill *out: the
 * result's text content (other content is named, not copied), is_error
 * when the server says so or the call failed ("[error] MCP server 's' ...",
 * "[timed out] ...", "[cancelled] ...", "[changed] ...").  CANCEL_FD -1:
 * none; readable: give up now.  A negative return is for caller errors only.
 */
int lev_mcp_call(struct lev_mcp_server *s, const char *tool, const json_t *args, int cancel_fd,
		 struct lev_tool_output *out, struct lev_err *err);

/* The advertised name "<server>__<tool>", sanitised to [A-Za-z0-9_-] (caller frees). */
char *lev_mcp_qualified_name(const char *server, const char *tool);
/* The pin of NAME, DESCRIPTION, SCHEMA into OUT. */
void lev_mcp_pin(const char *name, const char *description, const json_t *schema,
		 char out[LEV_SHA256_HEX_LEN + 1]);
