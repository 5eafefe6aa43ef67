/*
 * ws.c - lev serve's WebSocket stream on libwslay (see ws.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <wslay/wslay.h>

#include "liblev/base/mhdapi.h"
#include "liblev/base/util.h"
#include "liblev/daemon/proto.h"
#include "liblev/serve/ws.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_POLL_MS 1000
#define WS_PING_POLLS 15	/* an idle stream is pinged every 15 s */
#define WS_CLOSE_POLLS 5	/* a client that does not answer a close in 5 s is dropped */
#define WS_QUEUE_MAX ((size_t)16 << 20)
#define WS_RECV_MAX ((uint64_t)64 << 10)

int lev_ws_accept(const char *key, char out[LEV_WS_ACCEPT_LEN + 1])
{
	unsigned char in[24 + sizeof(WS_GUID)], md[20];
	gnutls_datum_t k = { (unsigned char *)key, 24 }, raw = { 0 }, b64 = { 0 };
	bool ok;

	if (lev_mhdapi_load(NULL) < 0)	/* GnuTLS comes with libmicrohttpd */
		return -1;
	/* 16 bytes in base64: 24 characters */
	if (!key || strlen(key) != 24 || gnutls_base64_decode2(&k, &raw) < 0)
		return -1;
	ok = raw.size == 16;
	gnutls_free(raw.data);
	memcpy(in, key, 24);
	memcpy(in + 24, WS_GUID, sizeof(WS_GUID) - 1);
	if (!ok || gnutls_hash_fast(GNUTLS_DIG_SHA1, in, 24 + sizeof(WS_GUID) - 1, md) < 0 ||
	    gnutls_base64_encode2(&(gnutls_datum_t){ md, 20 }, &b64) < 0)
		return -1;
	ok = b64.size == LEV_WS_ACCEPT_LEN;
	if (ok) {
		memcpy(out, b64.data, LEV_WS_ACCEPT_LEN);
		out[LEV_WS_ACCEPT_LEN] = '\0';
	}
	gnutls_free(b64.data);
	return ok ? 0 : -1;
}

char *lev_serve_event_text(json_t *m, const char **op)
{
	json_t *inner = json_object_get(m, "frame");
	char *text;

	/* a watch's frame (every run's stream): the run's frame, tagged with its run */
	if (lev_streq(lev_json_str(m, "op"), "run_frame") && json_is_object(inner) &&
	    lev_json_str(m, "run")) {
		json_object_set(inner, "run_id", json_object_get(m, "run"));
		json_object_set(inner, "agent_id", json_object_get(m, "run"));
		json_object_del(inner, "v");
		*op = lev_json_str(inner, "op") ? lev_json_str(inner, "op") : "message";
		text = json_dumps(inner, JSON_COMPACT);
		return text ? text : strdup("{}");
	}
	*op = lev_json_str(m, "op") ? lev_json_str(m, "op") : "message";
	json_object_del(m, "v");
	text = json_dumps(m, JSON_COMPACT);
	return text ? text : strdup("{}");
}

struct ws {
	int sock;
	const unsigned char *extra;
	size_t n_extra;
};

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
		       void *user)
{
	struct ws *w = user;
	ssize_t r;

	(void)flags;
	if (w->n_extra) {
		size_t k = w->n_extra < len ? w->n_extra : len;

		memcpy(buf, w->extra, k);
		w->extra += k;
		w->n_extra -= k;
		return (ssize_t)k;
	}
	while ((r = recv(w->sock, buf, len, 0)) < 0 && errno == EINTR)
		;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	else if (r <= 0)
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);	/* gone, or failed */
	return r > 0 ? r : -1;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
		       void *user)
{
	struct ws *w = user;
	ssize_t r;

	while ((r = send(w->sock, data, len,
			 MSG_NOSIGNAL | (flags & WSLAY_MSG_MORE ? MSG_MORE : 0))) < 0 &&
	       errno == EINTR)
		;
	if (r < 0)
		wslay_event_set_error(ctx, errno == EAGAIN || errno == EWOULDBLOCK
					   ? WSLAY_ERR_WOULDBLOCK : WSLAY_ERR_CALLBACK_FAILURE);
	return r;
}

/* What a client sends is not a request: only pings and a close mean something, and wslay answers those. */
static void ws_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
		   void *user)
{
	(void)ctx, (void)arg, (void)user;
}

static void ws_text(wslay_event_context_ptr ctx, const char *text)
{
	struct wslay_event_msg m = {
		.opcode = WSLAY_TEXT_FRAME, .msg = (const uint8_t *)text, .msg_length = strlen(text),
	};

	(void)wslay_event_queue_msg(ctx, &m);
}

static void ws_close(wslay_event_context_ptr ctx, uint16_t code, const char *why)
{
	(void)wslay_event_queue_close(ctx, code, (const uint8_t *)why, strlen(why));
}

/*
 * One frame from the daemon as a message: 0, or -1 when the stream is done
 * (*why: the close to send once the messages before it are out; wslay sends
 * a queued close ahead of queued messages).
 */
static int ws_daemon(wslay_event_context_ptr ctx, int dfd, uint16_t *code, const char **why)
{
	json_t *m = NULL;
	const char *op;
	char *text;
	bool end;

	*why = NULL;
	if (lev_proto_recv(dfd, &m, NULL) < 0 || !m) {
		*code = 1011;
		*why = "the daemon closed the stream";
		return -1;
	}
	/* a watch's frames are wrapped: one run's end is not the stream's */
	end = lev_streq(lev_json_str(m, "op"), "end");
	text = lev_serve_event_text(m, &op);
	ws_text(ctx, text);
	free(text);
	json_decref(m);
	if (!end)
		return 0;
	*code = 1000;
	*why = "the run's stream ended";
	return -1;
}

void lev_ws_follow(int sock, const void *extra, size_t n, int dfd, const atomic_bool *stop)
{
	struct wslay_event_callbacks cb = { .recv_callback = ws_recv, .send_callback = ws_send,
					    .on_msg_recv_callback = ws_msg };
	struct ws w = { .sock = sock, .extra = extra, .n_extra = n };
	wslay_event_context_ptr ctx;
	unsigned idle = 0, closing = 0;
	const char *why = NULL;
	uint16_t code = 1000;
	int fl = fcntl(sock, F_GETFL);

	if (fl < 0 || fcntl(sock, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    wslay_event_context_server_init(&ctx, &cb, &w) != 0)
		return;
	wslay_event_config_set_max_recv_msg_length(ctx, WS_RECV_MAX);
	while (wslay_event_want_read(ctx) || wslay_event_want_write(ctx)) {
		struct pollfd p[2] = {
			{ .fd = sock, .events = (short)((wslay_event_want_read(ctx) ? POLLIN : 0) |
						       (wslay_event_want_write(ctx) ? POLLOUT : 0)) },
			{ .fd = closing || why ? -1 : dfd, .events = POLLIN },
		};
		int r = w.n_extra ? 0 : poll(p, 2, WS_POLL_MS);

		if (r < 0 && errno != EINTR)
			break;
		if (atomic_load(stop) && !closing) {
			closing = 1;
			ws_close(ctx, 1001, "lev serve is stopping");
		}
		if (r == 0 && !w.n_extra && (closing ? ++closing > WS_CLOSE_POLLS
						     : ++idle >= WS_PING_POLLS)) {
			if (closing)
				break;
			idle = 0;
			(void)wslay_event_queue_msg(ctx, &(struct wslay_event_msg){ WSLAY_PING, NULL, 0 });
		}
		if ((w.n_extra || (p[0].revents & (POLLIN | POLLHUP | POLLERR))) &&
		    wslay_event_want_read(ctx) && wslay_event_recv(ctx) != 0)
			break;
		if (!closing && !why && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			idle = 0;
			(void)ws_daemon(ctx, dfd, &code, &why);
		}
		if (wslay_event_get_queued_msg_length(ctx) > WS_QUEUE_MAX ||
		    (wslay_event_want_write(ctx) && wslay_event_send(ctx) != 0))
			break;
		if (!closing && why && !wslay_event_get_queued_msg_count(ctx)) {
			closing = 1;
			ws_close(ctx, code, why);
		}
	}
	wslay_event_context_free(ctx);
}
