/*
 * api.h - lev serve's routes: one table, each route a client of the
 * daemon's protocol (daemon/client.h) and nothing more.
 *
 * The table is the one list of what lev serve answers: lev_api_dispatch()
 * routes by it, lev_api_openapi() writes the OpenAPI document from it, and
 * the test that holds the two in lockstep reads the document back.  No
 * route decides anything: a run's question is answered by the daemon's
 * `respond`, bound to the digest of the call the client was shown, exactly
 * as `lev respond` answers it.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"
#include "liblev/serve/apibody.h"

/* What a route answers with. */
enum lev_api_kind {
	LEV_API_JSON,		/* a JSON reply (lev_api_dispatch()) */
	LEV_API_EVENTS,		/* a run's live events as server-sent events (the front end) */
	LEV_API_OPENAPI,	/* this document */
	LEV_API_WS,		/* a run's live events over WebSocket (the front end upgrades) */
	LEV_API_REFUSED,	/* a Leviath route lev does not serve: 501, its summary says why */
	LEV_API_TEXT,		/* a JSON reply already encoded: a 200's *reply is a JSON string
				   holding the text to send as it is (lev_api_dispatch()) */
};

struct lev_api_call {
	const char *method;
	const char *path;		/* without the query */
	const char *body;		/* may be NULL when len is 0 */
	size_t len;
	/* the query argument KEY, or NULL (borrowed) */
	const char *(*query)(void *qctx, const char *key);
	void *qctx;
};

struct lev_api_opts {
	bool allow_admin;	/* mount the mutating admin routes */
	/*
	 * Hand a run to the daemon as `lev run --detach` does: BODY is the
	 * checked spawn body; 0 and *run (owned) its id.
	 */
	int (*spawn)(void *ctx, const json_t *body, char **run, struct lev_err *err);
	void *spawn_ctx;	/* also lev_json()'s */
	/*
	 * What the lev command ARGS (NULL-terminated: "list", "--json") prints
	 * with --json: 0 and *out (a new reference, an object or an array)
	 * whatever its exit status.
	 */
	int (*lev_json)(void *ctx, const char *const *args, json_t **out, struct lev_err *err);
	const char *fs_root;	/* GET /api/fs/dirs lists beneath it; NULL (lev serve): the home */
};

/*
 * Route CALL: the HTTP status and *reply (a new reference, a JSON object;
 * {"error": "..."} for a 4xx/5xx; with *kind LEV_API_TEXT a 200's is a JSON
 * string, the reply's text).  *kind says when the route is not a JSON
 * one (the front end then serves it itself, for the run *run: owned).
 */
unsigned lev_api_dispatch(const struct lev_api_opts *o, const struct lev_api_call *call,
			  enum lev_api_kind *kind, char **run, json_t **reply);

/* The OpenAPI document of the routes O mounts (a new reference). */
json_t *lev_api_openapi(const struct lev_api_opts *o);
