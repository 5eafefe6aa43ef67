/*
 * test-proto.c - the daemon's framing: a round trip, a frame fed one byte
 * at a time, the size limit (refused from the header, before the body),
 * malformed frames, the version check.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/base/buf.h"
#include "liblev/daemon/proto.h"

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void put_frame(int fd, const char *body, size_t len, size_t claimed)
{
	uint8_t h[4] = { (uint8_t)(claimed >> 24), (uint8_t)(claimed >> 16), (uint8_t)(claimed >> 8),
			 (uint8_t)claimed };

	assert_int_equal(write(fd, h, 4), 4);
	if (len)
		assert_int_equal(write(fd, body, len), (ssize_t)len);
}

static void test_round_trip(void **state)
{
	json_t *req = lev_proto_request("ping"), *got = NULL;
	const char *op = NULL;
	int sv[2];

	(void)state;
	pair(sv);
	json_object_set_new(req, "text", json_string("caf\xc3\xa9 \"quoted\"\n"));
	assert_int_equal(lev_proto_send(sv[0], req, NULL), 0);
	assert_int_equal(lev_proto_recv(sv[1], &got, NULL), 0);
	assert_non_null(got);
	assert_true(json_equal(req, got));
	assert_int_equal(lev_proto_check(got, &op, NULL), 0);
	assert_string_equal(op, "ping");
	json_decref(got);
	/* a clean end of stream between frames */
	close(sv[0]);
	got = (json_t *)1;
	assert_int_equal(lev_proto_recv(sv[1], &got, NULL), 0);
	assert_null(got);
	close(sv[1]);
	json_decref(req);
}

static void test_piecewise(void **state)
{
	struct lev_proto_in in = LEV_PROTO_IN_INIT;
	const char body[] = "{\"v\":1,\"op\":\"ps\"}";
	uint8_t h[4] = { 0, 0, 0, sizeof(body) - 1 };
	json_t *got = NULL;
	int sv[2], r = 0;

	(void)state;
	pair(sv);
	assert_true(lev_proto_in_idle(&in));
	for (size_t i = 0; i < 4 + sizeof(body) - 1; i++) {
		char c = i < 4 ? (char)h[i] : body[i - 4];

		assert_int_equal(write(sv[0], &c, 1), 1);
		r = lev_proto_in_read(&in, sv[1], &got, NULL);
		if (i + 1 < 4 + sizeof(body) - 1) {
			assert_int_equal(r, 0);
			assert_false(lev_proto_in_idle(&in));
		}
	}
	assert_int_equal(r, 1);
	assert_string_equal(lev_json_str(got, "op"), "ps");
	assert_true(lev_proto_in_idle(&in));
	json_decref(got);
	/* the peer goes away between frames: -EPIPE, and idle */
	close(sv[0]);
	assert_int_equal(lev_proto_in_read(&in, sv[1], &got, NULL), -EPIPE);
	assert_true(lev_proto_in_idle(&in));
	lev_proto_in_release(&in);
	close(sv[1]);
}

/*
 * A burst: many frames, one of them larger than the reader's first buffer,
 * written at once and then the end of stream.  Every frame comes out whole
 * and in order before the end is reported, and the frames forwarded raw
 * (lev_proto_in_next()) are byte for byte what was sent.
 */
static void test_burst(void **state)
{
	struct lev_proto_in in = LEV_PROTO_IN_INIT;
	struct lev_buf all = LEV_BUF_INIT;
	size_t big = LEV_PROTO_IN_CHUNK * 3, sent = 0, off = 0;
	int sv[2], seen = 0;
	const char *f;
	size_t len;

	(void)state;
	pair(sv);
	for (int i = 0; i < 40; i++) {
		json_t *m = lev_proto_request("event");
		size_t n = 0;
		char *fr;

		json_object_set_new(m, "i", json_integer(i));
		if (i == 17) {
			char *s = malloc(big + 1);

			memset(s, 'y', big);
			s[big] = '\0';
			json_object_set_new(m, "pad", json_string(s));
			free(s);
		}
		fr = lev_proto_frame(m, &n);
		assert_non_null(fr);
		lev_buf_add(&all, fr, n);
		free(fr);
		json_decref(m);
	}
	assert_int_equal(lev_proto_send_frames(sv[0], all.buf, all.len, NULL), 0);
	close(sv[0]);
	for (;;) {
		int r = lev_proto_in_next(&in, sv[1], &f, &len, NULL);
		json_t *m = NULL;

		if (r == 0)
			continue;	/* the kernel gave part of the burst */
		if (r < 0) {
			assert_int_equal(r, -EPIPE);
			break;
		}
		assert_memory_equal(f, all.buf + off, len + 4);
		off += len + 4;
		assert_int_equal(lev_proto_decode(f + 4, len, &m, NULL), 0);
		assert_int_equal(json_integer_value(json_object_get(m, "i")), seen);
		seen++;
		sent += len;
		json_decref(m);
	}
	assert_int_equal(seen, 40);
	assert_int_equal(off, all.len);
	assert_true(sent > big);
	assert_true(lev_proto_in_idle(&in));
	lev_proto_in_release(&in);
	lev_buf_release(&all);
	close(sv[1]);
}

static void test_oversized(void **state)
{
	struct lev_proto_in in = LEV_PROTO_IN_INIT;
	struct lev_err err = LEV_ERR_INIT;
	json_t *got = NULL, *big;
	char *s;
	int sv[2];

	(void)state;
	pair(sv);
	/* refused from the header alone: no body needs to follow */
	put_frame(sv[0], NULL, 0, 10 << 20);
	assert_int_equal(lev_proto_in_read(&in, sv[1], &got, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "over the limit of 1048576"));
	lev_proto_in_release(&in);
	put_frame(sv[0], NULL, 0, LEV_PROTO_MAX + 1);
	assert_int_equal(lev_proto_recv(sv[1], &got, NULL), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);

	/* nor is one sent */
	pair(sv);
	s = malloc(LEV_PROTO_MAX + 1);
	memset(s, 'x', LEV_PROTO_MAX);
	s[LEV_PROTO_MAX] = '\0';
	big = json_pack("{s:s}", "x", s);
	assert_int_equal(lev_proto_send(sv[0], big, NULL), -EMSGSIZE);
	json_decref(big);
	free(s);
	close(sv[0]);
	close(sv[1]);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = { "nojso", "[1,2]", "\"str\"", "{\"a\":1,\"a\":2}" };
	json_t *got = NULL;
	int sv[2];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pair(sv);
		put_frame(sv[0], bad[i], strlen(bad[i]), strlen(bad[i]));
		assert_int_equal(lev_proto_recv(sv[1], &got, NULL), LEV_EPARSE);
		close(sv[0]);
		close(sv[1]);
	}
	/* a NUL inside the JSON */
	pair(sv);
	put_frame(sv[0], "{\"a\":\"\0\"}", 9, 9);
	assert_int_equal(lev_proto_recv(sv[1], &got, NULL), LEV_EPARSE);
	close(sv[0]);
	close(sv[1]);
	/* a stream that ends inside a frame */
	pair(sv);
	put_frame(sv[0], "{\"v\"", 4, 20);
	close(sv[0]);
	assert_int_equal(lev_proto_recv(sv[1], &got, NULL), -EPIPE);
	close(sv[1]);
}

static void test_check(void **state)
{
	json_t *m;
	const char *op = NULL;

	(void)state;
	m = json_pack("{s:i, s:s}", "v", 2, "op", "ping");
	assert_int_equal(lev_proto_check(m, &op, NULL), LEV_EPARSE);
	json_decref(m);
	m = json_pack("{s:s}", "op", "ping");
	assert_int_equal(lev_proto_check(m, &op, NULL), LEV_EPARSE);
	json_decref(m);
	m = json_pack("{s:i}", "v", 1);
	assert_int_equal(lev_proto_check(m, &op, NULL), LEV_EPARSE);
	json_decref(m);
	m = json_pack("{s:i, s:s}", "v", 1, "op", "");
	assert_int_equal(lev_proto_check(m, &op, NULL), LEV_EPARSE);
	json_decref(m);
	m = lev_proto_fail("no run '%s'", "x");
	assert_false(json_is_true(json_object_get(m, "ok")));
	assert_string_equal(lev_json_str(m, "error"), "no run 'x'");
	json_decref(m);
}

/* An event frame's body as a worker writes it: the head, then the event. */
static char *event_body(const char *head, const json_t *ev)
{
	char *e = json_dumps(ev, JSON_COMPACT), *b = malloc(strlen(head) + strlen(e) + 2);

	strcpy(b, head);
	strcat(b, e);
	strcat(b, "}");
	free(e);
	return b;
}

static void test_event_peek(void **state)
{
	json_t *ev = json_pack("{s:s, s:s, s:i}", "event", "model_response", "text", "hi \"x\"",
			       "n", 3);
	json_t *dec = NULL;
	struct lev_err err = LEV_ERR_INIT;
	const char *name = NULL;
	char *b;

	(void)state;
	/* the body is a frame any follower decodes, and its name is read without decoding */
	b = event_body(LEV_PROTO_EVENT_HEAD("false"), ev);
	assert_int_equal(lev_proto_decode(b, strlen(b), &dec, &err), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(dec, "event"),
							      "event")),
			    "model_response");
	json_decref(dec);
	assert_int_equal(lev_proto_event_peek(b, strlen(b), &name), strlen("model_response"));
	assert_memory_equal(name, "model_response", strlen("model_response"));
	/* cut short: no name */
	assert_int_equal(lev_proto_event_peek(b, strlen(LEV_PROTO_EVENT_HEAD("false")) + 12,
					      &name), 0);
	free(b);
	/* an ack'ed frame is always decoded */
	b = event_body(LEV_PROTO_EVENT_HEAD("true"), ev);
	assert_int_equal(lev_proto_event_peek(b, strlen(b), &name), 0);
	free(b);
	/* a name with an escape, or an event whose first key is another: decoded */
	json_object_set_new(ev, "event", json_string("we\"ird"));
	b = event_body(LEV_PROTO_EVENT_HEAD("false"), ev);
	assert_int_equal(lev_proto_event_peek(b, strlen(b), &name), 0);
	free(b);
	json_decref(ev);
	ev = json_pack("{s:s, s:s}", "text", "t", "event", "model_response");
	b = event_body(LEV_PROTO_EVENT_HEAD("false"), ev);
	assert_int_equal(lev_proto_event_peek(b, strlen(b), &name), 0);
	free(b);
	json_decref(ev);
	/* another op */
	b = strdup("{\"v\":1,\"op\":\"turn\",\"event\":{\"event\":\"model_response\"}}");
	assert_int_equal(lev_proto_event_peek(b, strlen(b), &name), 0);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip), cmocka_unit_test(test_piecewise),
		cmocka_unit_test(test_burst),
		cmocka_unit_test(test_oversized),  cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_event_peek),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
