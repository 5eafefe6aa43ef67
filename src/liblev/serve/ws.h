/*
 * ws.h - lev serve's WebSocket stream: a run's live events, the frames of
 * the SSE stream, as WebSocket text messages.
 *
 * The HTTP handshake is libmicrohttpd's (an upgrade response, in the front
 * end); every WebSocket frame is parsed and written by libwslay.  Nothing
 * here parses a frame by hand.  Sec-WebSocket-Accept's SHA-1 and base64 are
 * GnuTLS's (which libmicrohttpd links already, for its TLS).
 */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define LEV_WS_ACCEPT_LEN 28

/*
 * Sec-WebSocket-Accept for the client's Sec-WebSocket-Key KEY (RFC 6455
 * 4.2.2) in OUT: 0, or -1 when KEY is not the base64 of 16 bytes.
 */
int lev_ws_accept(const char *key, char out[LEV_WS_ACCEPT_LEN + 1]);

/*
 * One daemon frame M as the stream's JSON text (a new string; its "v"
 * removed), and its op in *OP (borrowed from M, "message" if none).  The
 * SSE stream and the WebSocket send the same text.  A watch's frame
 * ({"op":"run_frame","run","frame"}: every run's stream) is the run's own
 * frame with "run_id" and "agent_id" added (Leviath's tags).
 */
char *lev_serve_event_text(json_t *m, const char **op);

/*
 * Serve one upgraded connection SOCK until the run's stream (the daemon
 * connection DFD, an attach follower; -1 for none) ends, the client closes
 * or fails, or *STOP: each daemon frame is one text message; pings are
 * answered, an idle stream is pinged, a close is answered with a close.
 * EXTRA (N bytes) is what the client sent after the handshake.  A client
 * that reads too slowly (over 16 MiB queued) is dropped.  Closes neither
 * SOCK nor DFD.
 */
void lev_ws_follow(int sock, const void *extra, size_t n, int dfd, const atomic_bool *stop);
