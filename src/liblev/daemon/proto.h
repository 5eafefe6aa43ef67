/*
 * proto.h - the daemon's wire format: framed JSON, versioned, bounded.
 *
 * A frame is a 4-byte big-endian length followed by that many bytes of one
 * JSON object (UTF-8, no NUL).  Every request carries {"v": 1, "op": ...};
 * every reply {"v": 1, "ok": true|false, ...} with "error" when ok is false.
 * A frame longer than LEV_PROTO_MAX, one that is not a JSON object, or a
 * request of another version is a protocol error: the daemon closes that
 * connection (and only that one) without reading the rest.
 *
 * The same framing runs between the daemon and its run workers over a
 * socketpair.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/error.h"

#define LEV_PROTO_VERSION 1
/* The largest frame either side accepts (bytes of JSON). */
#define LEV_PROTO_MAX ((size_t)1 << 20)

/*
 * Send MSG as one frame on FD (blocking; SIGPIPE is never raised).
 * -EMSGSIZE when it encodes to more than LEV_PROTO_MAX.
 */
int lev_proto_send(int fd, const json_t *msg, struct lev_err *err);
/* Send LEN bytes of JSON, encoded by the caller, as one frame (as lev_proto_send()). */
int lev_proto_send_raw(int fd, const char *json, size_t len, struct lev_err *err);

/* Frame header: LEN as 4 bytes, big-endian, at HDR. */
void lev_proto_put_len(char hdr[4], size_t len);
/* Send LEN bytes of frames, each already framed (a batch), whole. */
int lev_proto_send_frames(int fd, const char *frames, size_t len, struct lev_err *err);

/*
 * MSG encoded as one frame (the length, then the JSON), *len bytes; NULL
 * when it cannot be encoded or is over LEV_PROTO_MAX.  Caller frees.
 */
char *lev_proto_frame(const json_t *msg, size_t *len);

/*
 * Read one frame from FD (blocking).  0 and *out (a new reference) on a
 * frame; 0 and *out = NULL on a clean end of stream before a frame begins;
 * -EMSGSIZE for a frame over LEV_PROTO_MAX (its body is not read),
 * LEV_EPARSE for one that is not a JSON object, -EPIPE for a stream that
 * ends inside a frame.
 */
int lev_proto_recv(int fd, json_t **out, struct lev_err *err);
/*
 * lev_proto_recv() without the decoding: *out (owned, NUL-terminated) the
 * frame's LEN bytes, NULL at a clean end of stream.  Check it with
 * lev_proto_decode() before trusting it.
 */
int lev_proto_recv_raw(int fd, char **out, size_t *len, struct lev_err *err);
/* Decode a frame's body: a JSON object, no NUL, no duplicate key (LEV_EPARSE). */
int lev_proto_decode(const char *body, size_t len, json_t **out, struct lev_err *err);

/*
 * How every ok reply begins, byte for byte, when the daemon writes it
 * itself (daemon.c `ps`): a client may pass the rest through unparsed.
 */
#define LEV_PROTO_OK_PREFIX "{\"v\":1,\"ok\":true,"

/*
 * Frames being read from a non-blocking stream: what one recv() brought in
 * is kept, so a burst of frames costs one system call, not two a frame.
 * The buffer starts at LEV_PROTO_IN_CHUNK bytes, grows to hold the frame
 * being read (never past LEV_PROTO_MAX plus its header) and is freed when a
 * large frame has been consumed.
 */
struct lev_proto_in {
	char *buf;		/* owned; NULL until the first read */
	size_t cap;
	size_t start, end;	/* the bytes not yet handed out */
};

#define LEV_PROTO_IN_INIT { NULL, 0, 0, 0 }
#define LEV_PROTO_IN_CHUNK ((size_t)16 << 10)

/*
 * The next complete frame, reading what FD has without blocking.  1 and
 * *frame (the header, then *len bytes of body: borrowed, valid until the
 * next call on IN) when one is complete; 0 when more is needed; -EPIPE on
 * end of stream (IN is then empty when it ended between frames: test with
 * lev_proto_in_idle()); -EMSGSIZE for a frame over LEV_PROTO_MAX (its body
 * is not read).  The body is not checked: lev_proto_decode() it.
 */
int lev_proto_in_next(struct lev_proto_in *in, int fd, const char **frame, size_t *len,
		      struct lev_err *err);
/*
 * As lev_proto_in_next(), decoded: 1 and *out (a new reference) when a frame
 * is complete, or the errors of lev_proto_in_next() and lev_proto_decode().
 */
int lev_proto_in_read(struct lev_proto_in *in, int fd, json_t **out, struct lev_err *err);
bool lev_proto_in_idle(const struct lev_proto_in *in);
void lev_proto_in_release(struct lev_proto_in *in);

/*
 * A worker's event frame is written as
 *	{"v":1,"op":"event","ack":false,"event":{"event":"NAME",...}}
 * (LEV_PROTO_EVENT_HEAD, then the event as json_dumps() writes it, whose
 * first key is "event").  lev_proto_event_peek() reads NAME from the LEN
 * bytes of such a frame's body without decoding it: its length, with
 * *name pointing into BODY, when the frame has exactly that shape, is not
 * ack'ed and NAME needs no unescaping; else 0 (decode the frame).
 */
#define LEV_PROTO_EVENT_HEAD(ack) "{\"v\":1,\"op\":\"event\",\"ack\":" ack ",\"event\":"
size_t lev_proto_event_peek(const char *body, size_t len, const char **name);

/* A request {"v": 1, "op": OP} to fill in (new reference). */
json_t *lev_proto_request(const char *op);
/* A reply {"v": 1, "ok": true} (new reference). */
json_t *lev_proto_ok(void);
/* A reply {"v": 1, "ok": false, "error": MSG} (new reference). */
json_t *lev_proto_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Check a received request's shape: an object with "v" == 1 and a string
 * "op" (returned through *op, borrowed).  LEV_EPARSE otherwise.
 */
int lev_proto_check(const json_t *msg, const char **op, struct lev_err *err);

/* The string member KEY of O, or NULL (borrowed). */
const char *lev_json_str(const json_t *o, const char *key);
