/*
 * test-acp.c - lev agent-client's reader (liblev/serve/acp.h).
 *
 * The line reader against the obvious split, over many generated streams
 * (lines of random bytes and lengths, some over the max, some ending in CR,
 * fed in random chunks): every line out is a line in, in order, and each
 * line over the max is one -EMSGSIZE and nothing else.  Then the message
 * checks and the prompt's text, case by case, each refusal with its code.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/xalloc.h"
#include "liblev/serve/acp.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* One line's length: mostly short, now and then around or over the max. */
static size_t gen_len(void)
{
	switch (next() % 16) {
	case 0:
		return LEV_ACP_LINE_MAX + 1 + next() % 40000;
	case 1:
		return LEV_ACP_LINE_MAX - next() % 3;
	default:
		return next() % 300;
	}
}

static void drain(struct lev_acp_in *in, bool last, char **want, size_t *wlen, bool *over,
		  size_t n_lines, size_t *got)
{
	char *line;
	size_t len;
	int r;

	while ((r = last ? lev_acp_in_last(in, &line, &len) : lev_acp_in_next(in, &line, &len))) {
		assert_true(*got < n_lines);
		if (over[*got]) {
			assert_int_equal(r, -EMSGSIZE);
		} else {
			assert_int_equal(r, 1);
			assert_int_equal(len, wlen[*got]);
			assert_memory_equal(line, want[*got], len);
			assert_int_equal(line[len], '\0');
			free(line);
		}
		(*got)++;
	}
}

static void test_lines_as_split(void **state)
{
	(void)state;
	for (int round = 0; round < 300; round++) {
		size_t n = 1 + next() % 12, total = 0, off = 0, got = 0;
		char **want = xcalloc(n, sizeof(*want)), *stream;
		size_t *wlen = xcalloc(n, sizeof(*wlen));
		bool *over = xcalloc(n, sizeof(*over)), last_open = next() % 2;
		struct lev_acp_in in = LEV_ACP_IN_INIT;

		for (size_t i = 0; i < n; i++) {
			wlen[i] = gen_len();
			want[i] = xmalloc(wlen[i] + 1);
			for (size_t k = 0; k < wlen[i]; k++) {
				want[i][k] = (char)(next() % 256);
				if (want[i][k] == '\n')
					want[i][k] = 'n';
			}
			if (wlen[i] && want[i][wlen[i] - 1] == '\r')
				want[i][wlen[i] - 1] = 'r';
			over[i] = wlen[i] > LEV_ACP_LINE_MAX;
			total += wlen[i] + 2;
		}
		stream = xmalloc(total);
		for (size_t i = 0; i < n; i++) {
			bool cr = next() % 4 == 0;

			memcpy(stream + off, want[i], wlen[i]);
			off += wlen[i];
			if (cr)
				stream[off++] = '\r';
			if (i + 1 < n || !last_open)
				stream[off++] = '\n';
		}
		total = off;
		for (off = 0; off < total;) {
			size_t k = 1 + next() % (next() % 2 ? 64 : 20000);

			k = k > total - off ? total - off : k;
			lev_acp_in_push(&in, stream + off, k);
			off += k;
			drain(&in, false, want, wlen, over, n, &got);
		}
		drain(&in, true, want, wlen, over, n, &got);
		assert_int_equal(got, n);
		lev_acp_in_release(&in);
		for (size_t i = 0; i < n; i++)
			free(want[i]);
		free(want);
		free(wlen);
		free(over);
		free(stream);
	}
}

static int parse(const char *line, struct lev_acp_msg *m)
{
	struct lev_err err = LEV_ERR_INIT;
	int r = lev_acp_parse(line, strlen(line), m, &err);

	if (r < 0)
		assert_true(err.msg[0] && !strchr(err.msg, '\n'));
	return r;
}

static void test_messages(void **state)
{
	static const struct {
		const char *line;
		int code;
	} cases[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\"}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", 0 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":1}}", 0 },
		{ "{bad", LEV_ACP_PARSE_ERROR },
		{ "[]", LEV_ACP_PARSE_ERROR },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"x\"}", LEV_ACP_PARSE_ERROR },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"} {}", LEV_ACP_PARSE_ERROR },
		{ "{\"id\":1,\"method\":\"x\"}", LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":2,\"id\":1,\"method\":\"x\"}", LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}", LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}", LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[]}",
		  LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"result\":1}",
		  LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"result\":{}}", LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1}", LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}",
		  LEV_ACP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"x\"}", LEV_ACP_INVALID_REQUEST },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lev_acp_msg m = LEV_ACP_MSG_INIT;
		int r = parse(cases[i].line, &m);

		if (r != cases[i].code)
			fail_msg("%s: got %d, want %d", cases[i].line, r, cases[i].code);
		lev_acp_msg_release(&m);
	}
}

static void test_error_keeps_a_good_id(void **state)
{
	struct lev_acp_msg m = LEV_ACP_MSG_INIT;

	(void)state;
	assert_int_equal(parse("{\"jsonrpc\":\"1.0\",\"id\":42,\"method\":\"x\"}", &m),
			 LEV_ACP_INVALID_REQUEST);
	assert_true(m.id && json_integer_value(m.id) == 42);
	lev_acp_msg_release(&m);
	assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"x\"}", &m),
			 LEV_ACP_INVALID_REQUEST);
	assert_null(m.id);
	lev_acp_msg_release(&m);
}

static int prompt(const char *params_json, char **text)
{
	json_t *p = json_loads(params_json, 0, NULL);
	struct lev_err err = LEV_ERR_INIT;
	int r;

	assert_non_null(p);
	*text = NULL;
	r = lev_acp_prompt_text(p, text, &err);
	if (r < 0)
		assert_true(err.code == LEV_ACP_INVALID_PARAMS && strstr(err.msg, "'prompt"));
	json_decref(p);
	return r;
}

static void test_prompt_text(void **state)
{
	char *t;

	(void)state;
	assert_int_equal(prompt("{\"prompt\":[{\"type\":\"text\",\"text\":\"a\"},"
				"{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///f\","
				"\"text\":\"body\"}},{\"type\":\"resource_link\",\"uri\":\"u\"}]}",
				&t),
			 0);
	assert_string_equal(t, "a\n--- file:///f\n\nbody\nu");
	free(t);
	assert_true(prompt("{}", &t) < 0);
	assert_true(prompt("{\"prompt\":\"text\"}", &t) < 0);
	assert_true(prompt("{\"prompt\":[]}", &t) < 0);
	assert_true(prompt("{\"prompt\":[{\"type\":\"text\",\"text\":\" \\n\"}]}", &t) < 0);
	assert_true(prompt("{\"prompt\":[1]}", &t) < 0);
	assert_true(prompt("{\"prompt\":[{\"type\":\"image\",\"data\":\"x\"}]}", &t) < 0);
	assert_true(prompt("{\"prompt\":[{\"type\":\"text\",\"text\":7}]}", &t) < 0);
	assert_null(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_as_split),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_error_keeps_a_good_id),
		cmocka_unit_test(test_prompt_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
