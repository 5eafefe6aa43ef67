/*
 * proto.c - framed JSON (see proto.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/proto.h"

/* Send the IOV's bytes whole (SIGPIPE never raised); IOV is consumed. */
static int send_all(int fd, struct iovec *iov, int n_iov)
{
	while (n_iov > 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n_iov };
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (w < 0 && errno == ENOTSOCK)
			w = writev(fd, iov, n_iov);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n_iov > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n_iov--;
		}
		if (n_iov > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

void lev_proto_put_len(char hdr[4], size_t len)
{
	hdr[0] = (char)(uint8_t)(len >> 24);
	hdr[1] = (char)(uint8_t)(len >> 16);
	hdr[2] = (char)(uint8_t)(len >> 8);
	hdr[3] = (char)(uint8_t)len;
}

int lev_proto_send_raw(int fd, const char *json, size_t len, struct lev_err *err)
{
	char hdr[4];
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (char *)json, len } };
	int r;

	if (len > LEV_PROTO_MAX)
		return lev_err_set(err, -EMSGSIZE, "a message of %zu bytes is over the limit of %zu",
				   len, LEV_PROTO_MAX);
	lev_proto_put_len(hdr, len);
	r = send_all(fd, iov, 2);
	if (r < 0)
		return lev_err_errno(err, r, "cannot send a message");
	return 0;
}

int lev_proto_send_frames(int fd, const char *frames, size_t len, struct lev_err *err)
{
	struct iovec iov = { (char *)frames, len };
	int r = len ? send_all(fd, &iov, 1) : 0;

	if (r < 0)
		return lev_err_errno(err, r, "cannot send a message");
	return 0;
}

char *lev_proto_frame(const json_t *msg, size_t *len)
{
	char *s = json_dumps(msg, JSON_COMPACT), *f;
	size_t n;

	if (!s)
		return NULL;
	n = strlen(s);
	if (n > LEV_PROTO_MAX) {
		free(s);
		return NULL;
	}
	f = xmalloc(n + 4);
	lev_proto_put_len(f, n);
	memcpy(f + 4, s, n);
	free(s);
	*len = n + 4;
	return f;
}

int lev_proto_send(int fd, const json_t *msg, struct lev_err *err)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	int r;

	if (!s)
		return lev_err_set(err, -EINVAL, "cannot encode a message");
	r = lev_proto_send_raw(fd, s, strlen(s), err);
	free(s);
	return r;
}

static size_t frame_len(const uint8_t *h)
{
	return (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | (size_t)h[3];
}

int lev_proto_decode(const char *body, size_t len, json_t **out, struct lev_err *err)
{
	json_error_t je;
	json_t *j;

	if (memchr(body, '\0', len))
		return lev_err_set(err, LEV_EPARSE, "a message holds a NUL byte");
	j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return lev_err_set(err, LEV_EPARSE, "a message is not JSON: %s", je.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return lev_err_set(err, LEV_EPARSE, "a message is not a JSON object");
	}
	*out = j;
	return 0;
}

static int read_full(int fd, void *p, size_t n, size_t *got)
{
	char *c = p;

	*got = 0;
	while (*got < n) {
		ssize_t r = read(fd, c + *got, n - *got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		*got += (size_t)r;
	}
	return 0;
}

int lev_proto_recv_raw(int fd, char **out, size_t *out_len, struct lev_err *err)
{
	uint8_t hdr[4];
	size_t got, len;
	char *body;
	int r;

	r = read_full(fd, hdr, sizeof(hdr), &got);
	if (r < 0)
		return lev_err_errno(err, r, "cannot read a message");
	if (got == 0) {
		*out = NULL;
		*out_len = 0;
		return 0;
	}
	if (got < sizeof(hdr))
		return lev_err_set(err, -EPIPE, "the stream ended inside a message");
	len = frame_len(hdr);
	if (len > LEV_PROTO_MAX)
		return lev_err_set(err, -EMSGSIZE, "a message of %zu bytes is over the limit of %zu",
				   len, LEV_PROTO_MAX);
	body = xmalloc(len + 1);
	r = read_full(fd, body, len, &got);
	if (r < 0 || got < len) {
		free(body);
		return r < 0 ? lev_err_errno(err, r, "cannot read a message")
			     : lev_err_set(err, -EPIPE, "the stream ended inside a message");
	}
	body[len] = '\0';
	*out = body;
	*out_len = len;
	return 0;
}

int lev_proto_recv(int fd, json_t **out, struct lev_err *err)
{
	char *body = NULL;
	size_t len;
	int r = lev_proto_recv_raw(fd, &body, &len, err);

	if (r < 0 || !body) {
		if (r == 0)
			*out = NULL;
		return r;
	}
	r = lev_proto_decode(body, len, out, err);
	free(body);
	return r;
}

/* Room in IN for WANT unread bytes: moved to the front, grown if need be. */
static void in_room(struct lev_proto_in *in, size_t want)
{
	size_t have = in->end - in->start;

	if (in->start && (in->cap - in->start < want || have == 0)) {
		memmove(in->buf, in->buf + in->start, have);
		in->start = 0;
		in->end = have;
	}
	if (in->cap < want) {
		size_t cap = want < LEV_PROTO_IN_CHUNK ? LEV_PROTO_IN_CHUNK : want;

		in->buf = xrealloc(in->buf, cap);
		in->cap = cap;
	}
}

int lev_proto_in_next(struct lev_proto_in *in, int fd, const char **frame, size_t *len,
		      struct lev_err *err)
{
	for (;;) {
		size_t have = in->end - in->start, want = 4;
		ssize_t r;

		if (have == 0 && in->cap > LEV_PROTO_IN_CHUNK) {
			/* a large frame was read: give its memory back */
			lev_proto_in_release(in);
		}
		if (have >= 4) {
			size_t n = frame_len((const uint8_t *)in->buf + in->start);

			if (n > LEV_PROTO_MAX)
				return lev_err_set(err, -EMSGSIZE,
						   "a message of %zu bytes is over the limit of %zu", n,
						   LEV_PROTO_MAX);
			if (have >= 4 + n) {
				*frame = in->buf + in->start;
				*len = n;
				in->start += 4 + n;
				return 1;
			}
			want = 4 + n;
		}
		in_room(in, want);
		r = recv(fd, in->buf + in->end, in->cap - in->end, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return lev_err_errno(err, -errno, "cannot read a message");
		}
		if (r == 0)
			return lev_err_set(err, -EPIPE, "end of stream");
		in->end += (size_t)r;
	}
}

int lev_proto_in_read(struct lev_proto_in *in, int fd, json_t **out, struct lev_err *err)
{
	const char *f;
	size_t n;
	int r = lev_proto_in_next(in, fd, &f, &n, err);

	if (r <= 0)
		return r;
	r = lev_proto_decode(f + 4, n, out, err);
	return r < 0 ? r : 1;
}

bool lev_proto_in_idle(const struct lev_proto_in *in)
{
	return in->end == in->start;
}

void lev_proto_in_release(struct lev_proto_in *in)
{
	free(in->buf);
	memset(in, 0, sizeof(*in));
}

json_t *lev_proto_request(const char *op)
{
	return json_pack("{s:i, s:s}", "v", LEV_PROTO_VERSION, "op", op);
}

json_t *lev_proto_ok(void)
{
	return json_pack("{s:i, s:b}", "v", LEV_PROTO_VERSION, "ok", 1);
}

json_t *lev_proto_fail(const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT;
	va_list ap;
	json_t *j;

	va_start(ap, fmt);
	(void)lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	j = json_pack("{s:i, s:b, s:s}", "v", LEV_PROTO_VERSION, "ok", 0, "error",
		      b.buf ? b.buf : "");
	lev_buf_release(&b);
	return j;
}

int lev_proto_check(const json_t *msg, const char **op, struct lev_err *err)
{
	const json_t *v = json_object_get(msg, "v");
	const char *o = lev_json_str(msg, "op");

	if (!json_is_integer(v))
		return lev_err_set(err, LEV_EPARSE, "a message without a protocol version");
	if (json_integer_value(v) != LEV_PROTO_VERSION)
		return lev_err_set(err, LEV_EPARSE, "protocol version %lld is not %d",
				   (long long)json_integer_value(v), LEV_PROTO_VERSION);
	if (!o || !*o)
		return lev_err_set(err, LEV_EPARSE, "a message without an 'op'");
	*op = o;
	return 0;
}

const char *lev_json_str(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

_Static_assert(LEV_PROTO_VERSION == 1, "LEV_PROTO_EVENT_HEAD spells the version");

size_t lev_proto_event_peek(const char *body, size_t len, const char **name)
{
	static const char head[] = LEV_PROTO_EVENT_HEAD("false") "{\"event\":\"";
	const char *p, *end = body + len;

	if (len < sizeof(head) - 1 || memcmp(body, head, sizeof(head) - 1) != 0)
		return 0;
	p = body + sizeof(head) - 1;
	for (const char *q = p; q < end && q - p <= 64; q++) {
		if (*q == '"') {
			*name = p;
			return (size_t)(q - p);
		}
		if (!((*q >= 'a' && *q <= 'z') || *q == '_'))
			return 0;
	}
	return 0;
}
