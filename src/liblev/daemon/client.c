/*
 * client.c - a request and its reply (see client.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/daemon/client.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/sock.h"

/* Send REQ, read the reply's frame (*body owned); *fd_out (may be NULL) keeps the connection. */
static int exchange(const json_t *req, int *fd_out, char **body, size_t *len,
		    struct lev_err *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	*body = NULL;
	r = lev_sock_path(&path, err);
	if (r < 0)
		return r;
	r = lev_sock_connect(path, &fd, err);
	if (r < 0) {
		if (r == -ENOENT || r == -ECONNREFUSED)
			return lev_err_set(err, r, "no daemon is running (start one with 'lev daemon "
						   "start')");
		return r;
	}
	r = lev_proto_send(fd, req, err);
	if (r == 0)
		r = lev_proto_recv_raw(fd, body, len, err);
	/* a daemon refuses a peer (or a message) by closing the connection */
	if (r == -EPIPE || r == -ECONNRESET || (r == 0 && !*body))
		return lev_err_set(err, -EPIPE, "the daemon closed the connection without a reply "
						"(see its log)");
	if (r == 0 && fd_out)
		*fd_out = TAKE_FD(fd);
	return r;
}

/* The reply BODY decoded, when it says ok; consumes BODY. */
static int reply_of(char *body, size_t len, json_t **reply, struct lev_err *err)
{
	json_t *m = NULL;
	int r = lev_proto_decode(body, len, &m, err);

	free(body);
	if (r < 0)
		return r;
	if (!json_is_true(json_object_get(m, "ok"))) {
		const char *e = lev_json_str(m, "error");

		r = lev_err_set(err, -EREMOTEIO, "%s", e ? e : "the daemon refused the request");
		json_decref(m);
		return r;
	}
	*reply = m;
	return 0;
}

int lev_client_open(const json_t *req, int *fd_out, json_t **reply, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	char *body;
	size_t len;
	int r = exchange(req, fd_out ? &fd : NULL, &body, &len, err);

	if (r < 0)
		return r;
	r = reply_of(body, len, reply, err);
	if (r == 0 && fd_out)
		*fd_out = TAKE_FD(fd);
	return r;
}

int lev_client_call(const json_t *req, json_t **reply, struct lev_err *err)
{
	return lev_client_open(req, NULL, reply, err);
}

int lev_client_call_raw(const json_t *req, char **ok_body, size_t *len, struct lev_err *err)
{
	char *body;
	json_t *m = NULL;
	int r = exchange(req, NULL, &body, len, err);

	if (r < 0)
		return r;
	if (!strncmp(body, LEV_PROTO_OK_PREFIX, strlen(LEV_PROTO_OK_PREFIX))) {
		*ok_body = body;
		return 0;
	}
	/* a refusal (or a daemon that writes its replies otherwise): decoded */
	r = reply_of(body, *len, &m, err);
	if (r < 0)
		return r;
	*ok_body = json_dumps(m, JSON_COMPACT);
	json_decref(m);
	if (!*ok_body)
		return lev_err_set(err, -EINVAL, "cannot encode the daemon's reply");
	*len = strlen(*ok_body);
	return 0;
}

int lev_client_ping_err(json_t **reply, struct lev_err *err)
{
	json_t *req = lev_proto_request("ping"), *m = NULL;
	int r = lev_client_call(req, &m, err);

	json_decref(req);
	if (r < 0)
		return r;
	if (reply)
		*reply = m;
	else
		json_decref(m);
	return 0;
}

bool lev_client_ping(json_t **reply)
{
	return lev_client_ping_err(reply, NULL) == 0;
}
