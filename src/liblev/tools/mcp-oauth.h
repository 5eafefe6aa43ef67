/*
 * mcp-oauth.h - OAuth 2.1 + PKCE for HTTP MCP servers (docs/mcp.md "OAuth").
 *
 * The MCP authorization flow: a 401 from the server (its WWW-Authenticate
 * resource_metadata) or the well-known path gives the protected-resource
 * metadata (RFC 9728), whose authorization server's metadata (RFC 8414,
 * oauth-authorization-server, else openid-configuration) must name itself
 * as its issuer; a client is registered (RFC 7591) for lev's loopback
 * listener; the user opens the authorization URL (PKCE S256, a random
 * state, resource = the server's URL); the code that comes back to the
 * listener with the right state is exchanged for tokens.
 *
 * Tokens are bound to the server's ORIGIN (scheme, host, port), the one
 * decision about where they may go: they are stored in the credential
 * store (credstore.h) under a name derived from the origin, the record
 * names the origin again, and lev_mcp_oauth_bearer() hands them only to a
 * URL of that origin.  The HTTP client follows no redirect, so a token
 * never leaves with one.  Every endpoint lev talks to for OAuth must be
 * https, or http on a loopback address literal.  Tokens are secrets:
 * never in a message, added to lev's redaction list when used.
 */
#pragma once

#include <stdbool.h>

#include "liblev/base/error.h"
#include "liblev/conf/config.h"
#include "liblev/conf/credstore.h"

/* A 401 without a login: the code of the "run 'lev mcp login NAME'" error. */
#define LEV_MCP_NEEDS_LOGIN (-EKEYREJECTED)

struct lev_mcp_oauth_login_opts {
	const struct lev_mcp_server_conf *conf;	/* a url server */
	const struct lev_credstore *store;
	bool allow_local;		/* [security] allow_local_network */
	unsigned wait_secs;		/* for the browser's answer; 0: 300 */
	/* Show the authorization URL to the user (and open a browser). */
	void (*show_url)(void *ud, const char *url);
	void *ud;
};

/*
 * Log in to O->conf's server and store its tokens.  *not_needed (may be
 * NULL) is set when the server answered without asking for a login:
 * nothing is stored then.  Nothing is stored on any failure.
 */
int lev_mcp_oauth_login(const struct lev_mcp_oauth_login_opts *o, bool *not_needed,
			struct lev_err *err);

/*
 * Does the server at C's url answer an initialize without a login?
 * *needs is set when it answers 401.
 */
int lev_mcp_oauth_probe(const struct lev_mcp_server_conf *c, bool allow_local, bool *needs,
			struct lev_err *err);

/*
 * The access token for URL's origin: *out a fresh secret, or NULL when the
 * store holds none for that origin.  Refreshed (refresh_token grant, the
 * new tokens stored) when it has expired or FORCE is set.
 */
int lev_mcp_oauth_bearer(const struct lev_credstore *s, const char *url, bool allow_local,
			 bool force, char **out, struct lev_err *err);

/* Whether the store holds tokens for URL's origin. */
int lev_mcp_oauth_has(const struct lev_credstore *s, const char *url, bool *has,
		      struct lev_err *err);

/*
 * Delete the tokens for URL's origin; *had says whether there were any,
 * *revoked whether the server's revocation endpoint accepted them.
 */
int lev_mcp_oauth_logout(const struct lev_credstore *s, const char *url, bool allow_local,
			 bool *had, bool *revoked, struct lev_err *err);
