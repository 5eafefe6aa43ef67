/*
 * client.h - talking to the daemon from a command.
 */
#pragma once

#include <jansson.h>

#include "liblev/base/error.h"

/*
 * Send REQ to the daemon of this data root and read its reply.  0 and
 * *reply (a new reference) when the daemon said ok; -ENOENT or
 * -ECONNREFUSED (message: no daemon) when none answers; -EREMOTEIO with the
 * daemon's own message when it refused the request.
 */
int lev_client_call(const json_t *req, json_t **reply, struct lev_err *err);

/*
 * As lev_client_call(), and keep the connection: *fd (CLOEXEC; may be
 * NULL to close it) then carries what the daemon sends after its reply,
 * as for the "attach" request and a "submit" with "follow": frames read
 * with lev_proto_recv() until {"op":"end"} or the end of the stream.
 */
int lev_client_open(const json_t *req, int *fd, json_t **reply, struct lev_err *err);

/*
 * lev_client_call() for a large reply passed on as it came: *body (owned,
 * NUL-terminated) is the reply's JSON text when the daemon said ok, not
 * parsed when it starts with LEV_PROTO_OK_PREFIX (the caller checks nothing
 * more).  Errors as lev_client_call().
 */
int lev_client_call_raw(const json_t *req, char **body, size_t *len, struct lev_err *err);

/*
 * Before anything is sent, the data root and the socket are checked and,
 * once connected, the peer (sock.h lev_sock_connect()): a path or a peer
 * another user could control is -EPERM with one line saying which.
 */

/* Whether a daemon answers a ping here; *reply (may be NULL) is its answer. */
bool lev_client_ping(json_t **reply);
/* As lev_client_ping(): 0, or why not (-EPERM: a path or peer that is not ours). */
int lev_client_ping_err(json_t **reply, struct lev_err *err);
