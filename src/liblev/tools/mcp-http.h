/*
 * mcp-http.h - the streamable HTTP transport of the MCP client (mcp.h,
 * docs/mcp.md).
 *
 * Each JSON-RPC message is one POST to the server's URL with
 * "Accept: application/json, text/event-stream"; the answer is one JSON
 * message (or a batch), a stream of server-sent events each carrying one,
 * or nothing (202).  The session id the server gives (Mcp-Session-Id) is
 * sent back on every later POST, and the negotiated version as
 * MCP-Protocol-Version.  Header values may name ${VAR}s, expanded from lev's
 * environment when the server starts (an unset one refuses it).
 *
 * Every connection passes lev's network guard (netguard.h): a loopback,
 * private or link-local address is refused unless the server's entry says
 * allow_local_network = true (or [security] allow_local_network); a cloud
 * metadata address always.  Redirects are not followed.  An answer is read
 * up to the server's max_result_bytes, within its timeout.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/conf/config.h"
#include "liblev/conf/credstore.h"

struct lev_mcp_http;

/*
 * Each ${VAR} of V (a header's value, WHAT in messages: "a header", "its
 * env") expanded into *out, from lev's environment or what
 * lev_credentials_scrub_env() took out of it; each value joins the secret
 * set (base/secrets.h).  An unset VAR is an error naming SERVER and VAR.
 */
int lev_mcp_expand(const char *server, const char *what, const char *v, char **out,
		   struct lev_err *err);

/*
 * Check C's url, expand its headers: *out is owned (lev_mcp_http_free()).
 * STORE (copied, its paths borrowed for *out's life; NULL: none) holds the
 * OAuth tokens (mcp-oauth.h): without an Authorization header of C's own,
 * the token for the url's origin is sent, refreshed once on a 401; a 401
 * left is LEV_MCP_NEEDS_LOGIN saying to run 'lev mcp login NAME'.
 */
int lev_mcp_http_new(const struct lev_mcp_server_conf *c, bool allow_local,
		     const struct lev_credstore *store, struct lev_mcp_http **out,
		     struct lev_err *err);
void lev_mcp_http_free(struct lev_mcp_http *h);
/* The protocol version agreed on, sent as MCP-Protocol-Version from now on. */
void lev_mcp_http_set_version(struct lev_mcp_http *h, const char *version);

/*
 * POST MSG (one JSON-RPC message, compact).  *msgs gets a fresh array of
 * the messages the server answered with (empty for a 202).  Errors:
 * -ETIMEDOUT, -EFBIG (over MAX bytes), -EACCES (the network guard refused
 * the address), LEV_EPARSE (a body that is not JSON-RPC), -EPROTO (an HTTP
 * error status; 404 once a session exists: the server ended it), others
 * from http.h; the message names the server.
 */
int lev_mcp_http_post(struct lev_mcp_http *h, const char *msg, uint64_t timeout_ms, uint64_t max,
		      json_t **msgs, struct lev_err *err);
