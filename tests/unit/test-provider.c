/*
 * Provider unit tests without a network: the wire formats both ways,
 * tool-call parsing (including invalid arguments), error-body parsing,
 * key redaction, backoff arithmetic, credentials and provider specs.
 * The real HTTP path is in test-provider-http.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/base/xalloc.h"
#include "liblev/conf/config.h"
#include "liblev/conf/credentials.h"
#include "liblev/provider/provider.h"

static json_t *parse(const char *s)
{
	json_error_t e;
	json_t *v = json_loads(s, 0, &e);

	if (!v)
		fail_msg("bad JSON in test: %s: %s", e.text, s);
	return v;
}

/* A conversation exercising every block kind. */
static void build_request(struct lev_infer_request *r)
{
	struct lev_message *m;
	json_t *args = parse("{\"path\":\"README.md\"}");
	json_t *schema = parse("{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}");

	lev_request_init(r);
	lev_request_set_system(r, "You are careful.");
	lev_request_add_user_text(r, "Summarise the README.");
	m = lev_request_add_message(r, LEV_ROLE_ASSISTANT);
	lev_message_add_text(m, "Reading it.");
	lev_message_add_tool_use(m, "call_1", "read_file", args, NULL);
	lev_message_add_tool_use(m, "call_2", "list_dir", NULL, "{not json");
	m = lev_request_add_message(r, LEV_ROLE_USER);
	lev_message_add_text(m, "");
	lev_message_add_tool_result(m, "call_1", "# Title\nbody", false);
	lev_message_add_tool_result(m, "call_2", "arguments are not valid JSON", true);
	lev_message_add_text(m, "Go on.");
	lev_request_add_tool(r, "read_file", "Read a file", schema);
	lev_request_add_tool(r, "list_dir", NULL, NULL);
	r->has_temperature = true;
	r->temperature = 0.5;
	json_decref(args);
	json_decref(schema);
}

static void test_openai_encode(void **state)
{
	struct lev_infer_request r;
	struct lev_err err = LEV_ERR_INIT;
	char *body = NULL;
	json_t *j, *msgs, *m, *tc;

	(void)state;
	build_request(&r);
	assert_int_equal(lev_openai_encode(&r, "gpt-test", 1000, false, &body, &err), 0);
	j = parse(body);
	assert_string_equal(json_string_value(json_object_get(j, "model")), "gpt-test");
	assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 1000);
	assert_null(json_object_get(j, "max_completion_tokens"));
	assert_true(json_real_value(json_object_get(j, "temperature")) == 0.5);
	assert_true(json_is_false(json_object_get(j, "stream")));
	msgs = json_object_get(j, "messages");
	/* system, user, assistant, tool, tool, user */
	assert_int_equal(json_array_size(msgs), 6);
	m = json_array_get(msgs, 0);
	assert_string_equal(json_string_value(json_object_get(m, "role")), "system");
	assert_string_equal(json_string_value(json_object_get(m, "content")), "You are careful.");
	m = json_array_get(msgs, 2);
	assert_string_equal(json_string_value(json_object_get(m, "role")), "assistant");
	assert_string_equal(json_string_value(json_object_get(m, "content")), "Reading it.");
	tc = json_object_get(m, "tool_calls");
	assert_int_equal(json_array_size(tc), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(tc, 0), "id")), "call_1");
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(json_array_get(tc, 0), "function"), "arguments")),
			    "{\"path\":\"README.md\"}");
	/* the model's own invalid JSON is replayed as written */
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(json_array_get(tc, 1), "function"), "arguments")),
			    "{not json");
	m = json_array_get(msgs, 3);
	assert_string_equal(json_string_value(json_object_get(m, "role")), "tool");
	assert_string_equal(json_string_value(json_object_get(m, "tool_call_id")), "call_1");
	assert_string_equal(json_string_value(json_object_get(m, "content")), "# Title\nbody");
	m = json_array_get(msgs, 4);
	assert_string_equal(json_string_value(json_object_get(m, "content")),
			    "Error: arguments are not valid JSON");
	m = json_array_get(msgs, 5);
	assert_string_equal(json_string_value(json_object_get(m, "role")), "user");
	assert_string_equal(json_string_value(json_object_get(m, "content")), "Go on.");
	tc = json_object_get(j, "tools");
	assert_int_equal(json_array_size(tc), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(tc, 0), "type")),
			    "function");
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(json_object_get(json_array_get(tc, 0), "function"),
						    "parameters"),
				    "type")),
			    "object");
	/* a tool with no schema still gets an (empty) object schema */
	assert_non_null(json_object_get(json_object_get(json_object_get(json_array_get(tc, 1),
									 "function"),
							"parameters"),
					"properties"));
	json_decref(j);
	free(body);

	assert_int_equal(lev_openai_encode(&r, "o-test", 77, true, &body, &err), 0);
	j = parse(body);
	assert_int_equal(json_integer_value(json_object_get(j, "max_completion_tokens")), 77);
	assert_null(json_object_get(j, "max_tokens"));
	json_decref(j);
	free(body);
	assert_int_equal(lev_openai_encode(&r, NULL, 77, true, &body, &err), -EINVAL);
	lev_request_release(&r);
}

static void test_anthropic_encode(void **state)
{
	struct lev_infer_request r;
	struct lev_err err = LEV_ERR_INIT;
	char *body = NULL;
	json_t *j, *msgs, *c, *b;
	struct lev_message *m;

	(void)state;
	build_request(&r);
	/* two user messages in a row must merge */
	lev_request_add_user_text(&r, "And be quick.");
	m = lev_request_add_message(&r, LEV_ROLE_ASSISTANT);
	lev_message_add_text(m, "");	/* empty: dropped with its message */
	assert_int_equal(lev_anthropic_encode(&r, "claude-test", 0, &body, &err), 0);
	j = parse(body);
	assert_string_equal(json_string_value(json_object_get(j, "system")), "You are careful.");
	assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 4096);
	msgs = json_object_get(j, "messages");
	assert_int_equal(json_array_size(msgs), 3);
	c = json_object_get(json_array_get(msgs, 1), "content");
	assert_int_equal(json_array_size(c), 3);
	b = json_array_get(c, 1);
	assert_string_equal(json_string_value(json_object_get(b, "type")), "tool_use");
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "input"), "path")),
			    "README.md");
	b = json_array_get(c, 2);
	/* invalid arguments go back as an empty input object */
	assert_int_equal(json_object_size(json_object_get(b, "input")), 0);
	c = json_object_get(json_array_get(msgs, 2), "content");
	/* tool results first, then the texts; the empty text is gone */
	assert_int_equal(json_array_size(c), 4);
	assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "type")),
			    "tool_result");
	assert_null(json_object_get(json_array_get(c, 0), "is_error"));
	assert_true(json_is_true(json_object_get(json_array_get(c, 1), "is_error")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(c, 2), "text")),
			    "Go on.");
	assert_string_equal(json_string_value(json_object_get(json_array_get(c, 3), "text")),
			    "And be quick.");
	b = json_array_get(json_object_get(j, "tools"), 0);
	assert_string_equal(json_string_value(json_object_get(b, "name")), "read_file");
	assert_non_null(json_object_get(b, "input_schema"));
	json_decref(j);
	free(body);
	lev_request_release(&r);
}

static void test_encode_invalid_utf8(void **state)
{
	struct lev_infer_request r;
	struct lev_err err = LEV_ERR_INIT;
	char *body = NULL;
	json_t *j;

	(void)state;
	lev_request_init(&r);
	lev_request_add_user_text(&r, "bad \xff\xfe bytes \xc3");
	assert_int_equal(lev_openai_encode(&r, "m", 10, false, &body, &err), 0);
	j = parse(body);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(j, "messages"), 0), "content")),
			    "bad \xef\xbf\xbd\xef\xbf\xbd bytes \xef\xbf\xbd");
	json_decref(j);
	free(body);
	lev_request_release(&r);
}

static void test_openai_decode_calls(void **state)
{
	static const char body[] =
		"{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"ok\","
		"\"tool_calls\":["
		"{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\","
		"\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}},"
		"{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"shell\","
		"\"arguments\":\"{\\\"cmd\\\": \\\"ls\"}},"
		"{\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":\"[1,2]\"}},"
		"{\"id\":\"c4\",\"function\":{\"name\":\"y\",\"arguments\":{\"k\":1}}},"
		"{\"id\":\"c5\",\"function\":{\"name\":\"z\",\"arguments\":\"\"}}"
		"]},\"finish_reason\":\"tool_calls\"}],"
		"\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":5}}";
	struct lev_infer_response r;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(lev_openai_decode(body, strlen(body), &r, &err), 0);
	assert_string_equal(r.text, "ok");
	assert_int_equal(r.n_calls, 5);
	assert_string_equal(r.calls[0].id, "c1");
	assert_string_equal(r.calls[0].name, "read_file");
	assert_null(r.calls[0].parse_error);
	assert_string_equal(json_string_value(json_object_get(r.calls[0].arguments, "path")), "a");
	/* invalid JSON: no arguments, the raw text and a reason */
	assert_null(r.calls[1].arguments);
	assert_string_equal(r.calls[1].raw_arguments, "{\"cmd\": \"ls");
	assert_non_null(r.calls[1].parse_error);
	assert_non_null(strstr(r.calls[1].parse_error, "not valid JSON"));
	/* valid JSON but not an object; a missing id is synthesised */
	assert_null(r.calls[2].arguments);
	assert_string_equal(r.calls[2].parse_error, "arguments are not a JSON object");
	assert_string_equal(r.calls[2].id, "call_3");
	/* an object instead of a string is accepted */
	assert_int_equal(json_integer_value(json_object_get(r.calls[3].arguments, "k")), 1);
	assert_string_equal(r.calls[3].raw_arguments, "{\"k\":1}");
	/* empty arguments mean {} */
	assert_int_equal(json_object_size(r.calls[4].arguments), 0);
	assert_int_equal(r.finish, LEV_FINISH_TOOL_CALLS);
	assert_true(r.has_prompt_tokens);
	assert_int_equal(r.prompt_tokens, 12);
	assert_int_equal(r.completion_tokens, 5);
	lev_response_release(&r);
}

static void test_openai_decode_shapes(void **state)
{
	struct lev_infer_response r;
	struct lev_err err = LEV_ERR_INIT;
	const char *b;

	(void)state;
	b = "{\"choices\":[{\"message\":{\"content\":null},\"finish_reason\":\"length\"}]}";
	assert_int_equal(lev_openai_decode(b, strlen(b), &r, &err), 0);
	assert_string_equal(r.text, "");
	assert_int_equal(r.finish, LEV_FINISH_LENGTH);
	assert_false(r.has_prompt_tokens);
	lev_response_release(&r);

	b = "{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
	    "{\"type\":\"text\",\"text\":\"b\"}]},\"finish_reason\":\"content_filter\"}]}";
	assert_int_equal(lev_openai_decode(b, strlen(b), &r, &err), 0);
	assert_string_equal(r.text, "ab");
	assert_int_equal(r.finish, LEV_FINISH_FILTERED);
	lev_response_release(&r);

	/* "stop" with calls: the calls decide */
	b = "{\"choices\":[{\"message\":{\"content\":\"\",\"tool_calls\":[{\"id\":\"a\","
	    "\"function\":{\"name\":\"n\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"stop\"}]}";
	assert_int_equal(lev_openai_decode(b, strlen(b), &r, &err), 0);
	assert_int_equal(r.finish, LEV_FINISH_TOOL_CALLS);
	lev_response_release(&r);
}

static void test_openai_decode_errors(void **state)
{
	static const char *const bad[] = {
		"",
		"not json",
		"[1,2]",
		"{}",
		"{\"choices\":[]}",
		"{\"choices\":[{}]}",
		"{\"choices\":[{\"message\":{\"content\":5}}]}",
		"{\"choices\":[{\"message\":{\"tool_calls\":{}}}]}",
		"{\"choices\":[{\"message\":{\"tool_calls\":[{\"id\":\"a\"}]}}]}",
		"{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{\"name\":5}}]}}]}",
		"{\"error\":{\"message\":\"model overloaded\"}}",
	};
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lev_infer_response r;
		if (lev_openai_decode(bad[i], strlen(bad[i]), &r, &err) != -EBADMSG)
			fail_msg("accepted: %s", bad[i]);
		assert_true(err.msg[0] != '\0');
	}
	assert_non_null(strstr(err.msg, "model overloaded"));
}

static void test_decode_bounds(void **state)
{
	struct lev_infer_response r;
	struct lev_err err = LEV_ERR_INIT;
	char *b = xmalloc(200000), *p;
	char name[400];

	(void)state;
	/* 129 calls */
	p = b + sprintf(b, "{\"choices\":[{\"message\":{\"tool_calls\":[");
	for (int i = 0; i < 129; i++)
		p += sprintf(p, "%s{\"id\":\"i%d\",\"function\":{\"name\":\"n\",\"arguments\":\"{}\"}}",
			     i ? "," : "", i);
	sprintf(p, "]}}]}");
	assert_int_equal(lev_openai_decode(b, strlen(b), &r, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "128"));
	/* a 300-byte tool name */
	memset(name, 'a', 300);
	name[300] = '\0';
	sprintf(b, "{\"content\":[{\"type\":\"tool_use\",\"id\":\"x\",\"name\":\"%s\",\"input\":{}}]}",
		name);
	assert_int_equal(lev_anthropic_decode(b, strlen(b), &r, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "longer"));
	free(b);
}

static void test_anthropic_decode(void **state)
{
	static const char body[] =
		"{\"type\":\"message\",\"content\":["
		"{\"type\":\"thinking\",\"thinking\":\"hmm\"},"
		"{\"type\":\"text\",\"text\":\"Let me look.\"},"
		"{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read_file\","
		"\"input\":{\"path\":\"x\"}},"
		"{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"shell\",\"input\":\"{bad\"},"
		"{\"type\":\"tool_use\",\"id\":\"toolu_3\",\"name\":\"shell\",\"input\":[1]}"
		"],\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":10,"
		"\"cache_read_input_tokens\":5,\"output_tokens\":3}}";
	struct lev_infer_response r;
	struct lev_err err = LEV_ERR_INIT;
	const char *b;

	(void)state;
	assert_int_equal(lev_anthropic_decode(body, strlen(body), &r, &err), 0);
	assert_string_equal(r.text, "Let me look.");
	assert_int_equal(r.n_calls, 3);
	assert_string_equal(r.calls[0].id, "toolu_1");
	assert_string_equal(json_string_value(json_object_get(r.calls[0].arguments, "path")), "x");
	assert_string_equal(r.calls[0].raw_arguments, "{\"path\":\"x\"}");
	assert_null(r.calls[1].arguments);
	assert_string_equal(r.calls[1].raw_arguments, "{bad");
	assert_non_null(r.calls[1].parse_error);
	assert_null(r.calls[2].arguments);
	assert_non_null(r.calls[2].parse_error);
	assert_int_equal(r.finish, LEV_FINISH_TOOL_CALLS);
	assert_int_equal(r.prompt_tokens, 15);
	assert_int_equal(r.completion_tokens, 3);
	lev_response_release(&r);

	b = "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}],\"stop_reason\":\"end_turn\"}";
	assert_int_equal(lev_anthropic_decode(b, strlen(b), &r, &err), 0);
	assert_int_equal(r.finish, LEV_FINISH_STOP);
	assert_int_equal(r.n_calls, 0);
	lev_response_release(&r);
	b = "{\"content\":[],\"stop_reason\":\"max_tokens\"}";
	assert_int_equal(lev_anthropic_decode(b, strlen(b), &r, &err), 0);
	assert_int_equal(r.finish, LEV_FINISH_LENGTH);
	lev_response_release(&r);

	b = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}";
	assert_int_equal(lev_anthropic_decode(b, strlen(b), &r, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "Overloaded"));
	b = "{\"content\":\"text\"}";
	assert_int_equal(lev_anthropic_decode(b, strlen(b), &r, &err), -EBADMSG);
}

static void test_response_roundtrip(void **state)
{
	static const char body[] =
		"{\"choices\":[{\"message\":{\"content\":\"hi\",\"tool_calls\":["
		"{\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}},"
		"{\"id\":\"c2\",\"function\":{\"name\":\"g\",\"arguments\":\"oops\"}}]}}]}";
	struct lev_infer_response resp;
	struct lev_infer_request req;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_message *m;

	(void)state;
	assert_int_equal(lev_openai_decode(body, strlen(body), &resp, &err), 0);
	lev_request_init(&req);
	lev_request_add_response(&req, &resp);
	m = &req.messages[0];
	assert_int_equal(m->role, LEV_ROLE_ASSISTANT);
	assert_int_equal(m->n_blocks, 3);
	assert_string_equal(m->blocks[0].text, "hi");
	assert_string_equal(m->blocks[1].id, "c1");
	assert_non_null(m->blocks[1].input);
	assert_null(m->blocks[2].input);
	assert_string_equal(m->blocks[2].raw_input, "oops");
	lev_response_release(&resp);
	/* the request holds its own references */
	assert_int_equal(json_integer_value(json_object_get(m->blocks[1].input, "a")), 1);
	lev_request_release(&req);
}

static void test_error_message(void **state)
{
	char *m;
	const char *b;

	(void)state;
	b = "{\"error\":{\"message\":\"Incorrect API key\\nprovided\",\"type\":\"x\"}}";
	m = lev_provider_error_message(b, strlen(b), 300);
	assert_string_equal(m, "Incorrect API key provided");
	free(m);
	b = "{\"error\":\"model 'x' not found\"}";
	m = lev_provider_error_message(b, strlen(b), 300);
	assert_string_equal(m, "model 'x' not found");
	free(m);
	b = "{\"message\":\"Unauthorized\"}";
	m = lev_provider_error_message(b, strlen(b), 300);
	assert_string_equal(m, "Unauthorized");
	free(m);
	b = "{\"error\":{\"message\":\"0123456789abcdef\"}}";
	m = lev_provider_error_message(b, strlen(b), 4);
	assert_string_equal(m, "0123...");
	free(m);
	assert_null(lev_provider_error_message("<html>", 6, 300));
	assert_null(lev_provider_error_message("{}", 2, 300));
	assert_null(lev_provider_error_message(NULL, 0, 300));
}

static void test_redact(void **state)
{
	const char *key = "sk-proj-AbCdEfGh1234567890XyZ";
	char s[512];

	(void)state;
	snprintf(s, sizeof(s), "Incorrect API key provided: %s. See docs.", key);
	lev_redact_secret(s, key);
	assert_null(strstr(s, key));
	assert_non_null(strstr(s, "[redacted]"));
	assert_non_null(strstr(s, "See docs."));

	/* a server echoing only part of the key */
	snprintf(s, sizeof(s), "key sk-proj-****************7890XyZ is invalid");
	lev_redact_secret(s, key);
	assert_null(strstr(s, "7890XyZ"));
	assert_string_equal(s, "key [redacted] is invalid");

	/* the key's tail inside a short token is starred out */
	snprintf(s, sizeof(s), "x 890XyZ12 y");
	lev_redact_secret(s, key);
	assert_string_equal(s, "x 890XyZ12 y");	/* only 6 common bytes: kept */
	snprintf(s, sizeof(s), "x 67890XyZ y");
	lev_redact_secret(s, key);
	assert_string_equal(s, "x ******** y");

	/* unrelated text and short secrets leave the message alone */
	snprintf(s, sizeof(s), "server error (HTTP 500): boom");
	lev_redact_secret(s, key);
	assert_string_equal(s, "server error (HTTP 500): boom");
	lev_redact_secret(s, "short");
	lev_redact_secret(s, NULL);
	lev_redact_secret(NULL, key);
	assert_string_equal(s, "server error (HTTP 500): boom");

	/* the key twice */
	snprintf(s, sizeof(s), "%s and %s", key, key);
	lev_redact_secret(s, key);
	assert_string_equal(s, "[redacted] and [redacted]");
}

static void test_retry_delay(void **state)
{
	struct lev_retry_policy p = { .max_attempts = 5, .base_delay_ms = 100, .max_delay_ms = 1000,
				      .max_retry_after_ms = 10000 };
	struct lev_retry_policy d = { 0 };

	(void)state;
	/* Retry-After is honoured exactly, up to the cap */
	assert_int_equal(lev_retry_delay_ms(&p, 1, 2, 12345), 2000);
	assert_int_equal(lev_retry_delay_ms(&p, 3, 0, 12345), 0);
	assert_int_equal(lev_retry_delay_ms(&p, 1, 10, 0), 10000);
	assert_int_equal(lev_retry_delay_ms(&p, 1, 11, 0), -1);
	/* exponential with equal jitter: [d/2, d] */
	for (uint32_t rnd = 0; rnd < 5000; rnd += 37) {
		long a1 = lev_retry_delay_ms(&p, 1, -1, rnd);
		long a2 = lev_retry_delay_ms(&p, 2, -1, rnd);
		long a3 = lev_retry_delay_ms(&p, 3, -1, rnd);
		long a9 = lev_retry_delay_ms(&p, 9, -1, rnd);
		long a99 = lev_retry_delay_ms(&p, 99, -1, rnd);
		assert_true(a1 >= 50 && a1 <= 100);
		assert_true(a2 >= 100 && a2 <= 200);
		assert_true(a3 >= 200 && a3 <= 400);
		assert_true(a9 >= 500 && a9 <= 1000);
		assert_true(a99 >= 500 && a99 <= 1000);
	}
	/* both ends of the jitter are reachable */
	assert_int_equal(lev_retry_delay_ms(&p, 2, -1, 0), 100);
	assert_int_equal(lev_retry_delay_ms(&p, 2, -1, 100), 200);
	/* defaults: 500 ms base, 30 s cap, 120 s Retry-After cap */
	assert_true(lev_retry_delay_ms(&d, 1, -1, 0) == 250);
	assert_true(lev_retry_delay_ms(&d, 30, -1, 0) == 15000);
	assert_int_equal(lev_retry_delay_ms(&d, 1, 120, 0), 120000);
	assert_int_equal(lev_retry_delay_ms(&d, 1, 121, 0), -1);

	assert_true(lev_provider_error_retryable(LEV_PERR_RATE_LIMITED));
	assert_true(lev_provider_error_retryable(LEV_PERR_SERVER));
	assert_true(lev_provider_error_retryable(LEV_PERR_CONNECTION));
	assert_false(lev_provider_error_retryable(LEV_PERR_AUTH));
	assert_false(lev_provider_error_retryable(LEV_PERR_TIMEOUT));
	assert_false(lev_provider_error_retryable(LEV_PERR_TOO_LARGE));
	assert_false(lev_provider_error_retryable(LEV_PERR_INVALID_RESPONSE));
	assert_false(lev_provider_error_retryable(LEV_PERR_REQUEST));
	assert_string_equal(lev_provider_error_name(LEV_PERR_RATE_LIMITED), "rate_limited");
	assert_string_equal(lev_finish_name(LEV_FINISH_SCRIPT_END), "script_end");
}

/* ---- credentials ---- */

static char tmpdir[64];

static int setup_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lev-test-provider.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f;

	unlink(path);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_credentials_file(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	char path[128], link[128];
	char *key = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/credentials.toml", tmpdir);
	/* missing file: no key, no error */
	assert_int_equal(lev_credentials_lookup(path, "openai", &key, &err), 0);
	assert_null(key);

	write_file(path, "[providers.openai]\napi_key = \"sk-file-0123456789\"\n", 0600);
	assert_int_equal(lev_credentials_lookup(path, "openai", &key, &err), 0);
	assert_string_equal(key, "sk-file-0123456789");
	lev_secret_free(key);
	assert_int_equal(lev_credentials_lookup(path, "anthropic", &key, &err), 0);
	assert_null(key);

	/* readable by others: refused, with the fix, never read */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(lev_credentials_lookup(path, "openai", &key, &err), -EPERM);
	assert_non_null(strstr(err.msg, "chmod 600"));
	assert_null(strstr(err.msg, "sk-file"));
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(lev_credentials_lookup(path, "openai", &key, &err), -EPERM);
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(lev_credentials_lookup(path, "openai", &key, &err), 0);
	lev_secret_free(key);
	assert_int_equal(chmod(path, 0600), 0);

	/* a symlink to it: refused */
	snprintf(link, sizeof(link), "%s/link.toml", tmpdir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(lev_credentials_lookup(link, "openai", &key, &err), -EPERM);
	assert_non_null(strstr(err.msg, "symbolic link"));

	/* wrong types and bad keys */
	write_file(path, "providers = 1\n", 0600);
	assert_int_equal(lev_credentials_lookup(path, "openai", &key, &err), LEV_EPARSE);
	assert_non_null(strstr(err.msg, ":1:"));
	write_file(path, "[providers.openai]\napi_key = 5\n", 0600);
	assert_int_equal(lev_credentials_lookup(path, "openai", &key, &err), LEV_EPARSE);
	write_file(path, "[providers.openai]\napi_key = \"sk-x\\r\\nX-Evil: 1\"\n", 0600);
	assert_int_equal(lev_credentials_lookup(path, "openai", &key, &err), -EINVAL);
	assert_null(strstr(err.msg, "Evil"));
	write_file(path, "[providers.openai\n", 0600);
	assert_int_equal(lev_credentials_lookup(path, "openai", &key, &err), LEV_EPARSE);
}

static void test_key_resolution(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	enum lev_key_source src;
	char path[128];
	char *key = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/credentials.toml", tmpdir);
	write_file(path, "[providers.openai]\napi_key = \"sk-file-0123456789\"\n", 0600);
	unsetenv("LEV_TEST_KEY_A");
	assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_KEY_A", NULL, path, false, &key, &src, &err), 0);
	assert_int_equal(src, LEV_KEY_FILE);
	assert_string_equal(key, "sk-file-0123456789");
	lev_secret_free(key);
	/* what the user can see wins: the environment first */
	setenv("LEV_TEST_KEY_A", "sk-env-0123456789", 1);
	assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_KEY_A", NULL, path, false, &key, &src, &err), 0);
	assert_int_equal(src, LEV_KEY_ENV);
	assert_string_equal(key, "sk-env-0123456789");
	lev_secret_free(key);
	/* an empty variable counts as unset */
	setenv("LEV_TEST_KEY_A", "", 1);
	assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_KEY_A", NULL, NULL, false, &key, &src, &err), 0);
	assert_int_equal(src, LEV_KEY_NONE);
	assert_null(key);
	/* a key with a newline would inject a header */
	setenv("LEV_TEST_KEY_A", "sk-a\nX-Evil: 1", 1);
	assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_KEY_A", NULL, NULL, false, &key, &src, &err),
			 -EINVAL);
	assert_null(strstr(err.msg, "Evil"));
	assert_non_null(strstr(err.msg, "LEV_TEST_KEY_A"));
	unsetenv("LEV_TEST_KEY_A");
	assert_true(lev_api_key_valid("abc"));
	assert_false(lev_api_key_valid(""));
	assert_false(lev_api_key_valid("a b"));
	assert_false(lev_api_key_valid(NULL));
}

/* A key taken out of the environment is gone from it, and still resolves. */
static void test_scrubbed_key_still_resolves(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	enum lev_key_source src;
	char s1[] = "LEV_TEST_KEY_S", s2[] = "LEV_TEST_KEY_UNSET";
	char *names[] = { s1, s2, NULL };
	char *key = NULL;

	(void)state;
	setenv("LEV_TEST_KEY_S", "sk-scrub-0123456789", 1);
	unsetenv("LEV_TEST_KEY_UNSET");
	lev_credentials_scrub_env(names);
	assert_null(getenv("LEV_TEST_KEY_S"));
	assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_KEY_S", NULL, NULL, false, &key, &src, &err), 0);
	assert_int_equal(src, LEV_KEY_ENV);
	assert_string_equal(key, "sk-scrub-0123456789");
	lev_secret_free(key);
	/* a variable that was not set stays a missing key */
	assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_KEY_UNSET", NULL, NULL, false, &key, &src,
					     &err), 0);
	assert_null(key);
	/* what is in the environment now still wins */
	setenv("LEV_TEST_KEY_S", "sk-newer-0123456789", 1);
	assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_KEY_S", NULL, NULL, false, &key, &src, &err), 0);
	assert_string_equal(key, "sk-newer-0123456789");
	lev_secret_free(key);
	unsetenv("LEV_TEST_KEY_S");
	/* scrubbing twice is harmless */
	lev_credentials_scrub_env(names);
	assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_KEY_S", NULL, NULL, false, &key, &src, &err), 0);
	assert_string_equal(key, "sk-scrub-0123456789");
	lev_secret_free(key);
}

/* ---- specs ---- */

static void test_spec_defaults(void **state)
{
	struct lev_provider_spec s;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	lev_provider_spec_init(&s);
	assert_int_equal(lev_provider_spec_from_config(&s, NULL, "openai", "gpt-x", NULL, NULL,
						       "/nonexistent/credentials.toml", &err),
			 0);
	assert_int_equal(s.kind, LEV_PROVIDER_OPENAI);
	assert_string_equal(s.api_key_env, "OPENAI_API_KEY");
	assert_null(s.base_url);
	assert_string_equal(s.model, "gpt-x");
	assert_string_equal(s.credentials_path, "/nonexistent/credentials.toml");

	assert_int_equal(lev_provider_spec_from_config(&s, NULL, "anthropic", "claude-x", NULL, NULL,
						       NULL, &err),
			 0);
	assert_int_equal(s.kind, LEV_PROVIDER_ANTHROPIC);
	assert_string_equal(s.api_key_env, "ANTHROPIC_API_KEY");
	assert_null(s.credentials_path);

	assert_int_equal(lev_provider_spec_from_config(&s, NULL, "ollama", "llama3", NULL, NULL,
						       NULL, &err),
			 0);
	assert_string_equal(s.base_url, "http://localhost:11434/v1");
	assert_null(s.api_key_env);

	/* a failure leaves the spec as it was */
	assert_int_equal(lev_provider_spec_from_config(&s, NULL, "mystery", "m", NULL, NULL, NULL,
						       &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "[providers.mystery]"));
	assert_string_equal(s.model, "llama3");
	assert_int_equal(lev_provider_spec_from_config(&s, NULL, "openai", NULL, NULL, NULL, NULL,
						       &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "needs a model"));
	lev_provider_spec_release(&s);
}

static void test_spec_from_config(void **state)
{
	struct lev_provider_conf pc[2] = {
		{ .name = (char *)"local", .kind = LEV_PROVIDER_OPENAI,
		  .base_url = (char *)"http://127.0.0.1:8080/v1", .model = (char *)"qwen",
		  .timeout_secs = 42 },
		{ .name = (char *)"openai", .kind = LEV_PROVIDER_ANTHROPIC,
		  .api_key_env = (char *)"MY_KEY" },
	};
	struct lev_config cfg;
	struct lev_provider_spec s;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.providers = pc;
	cfg.n_providers = 2;
	cfg.credential_store = LEV_CRED_KEYCHAIN;
	lev_provider_spec_init(&s);
	s.retry.max_attempts = 2;
	assert_int_equal(lev_provider_spec_from_config(&s, &cfg, "local", NULL, NULL, NULL,
						       "/x/credentials.toml", &err),
			 0);
	assert_string_equal(s.base_url, "http://127.0.0.1:8080/v1");
	assert_string_equal(s.model, "qwen");
	assert_null(s.api_key_env);	/* a custom endpoint gets no default key variable */
	assert_int_equal(s.timeout_ms, 42000);
	assert_null(s.credentials_path);	/* credential_store is not "file" */
	assert_int_equal(s.retry.max_attempts, 2);	/* caller's settings survive */
	/* the user's table beats the built-in meaning of a name */
	assert_int_equal(lev_provider_spec_from_config(&s, &cfg, "openai", "m", NULL, NULL, NULL,
						       &err),
			 0);
	assert_int_equal(s.kind, LEV_PROVIDER_ANTHROPIC);
	assert_string_equal(s.api_key_env, "MY_KEY");
	lev_provider_spec_release(&s);
}

static void test_new_without_key(void **state)
{
	struct lev_provider_spec s;
	struct lev_provider *p = NULL;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	unsetenv("LEV_TEST_NO_SUCH_KEY");
	lev_provider_spec_init(&s);
	s.kind = LEV_PROVIDER_OPENAI;
	s.name = strdup("openai");
	s.model = strdup("gpt-x");
	s.api_key_env = strdup("LEV_TEST_NO_SUCH_KEY");
	assert_int_equal(lev_provider_new(&s, &p, &err), -EACCES);
	assert_null(p);
	assert_non_null(strstr(err.msg, "LEV_TEST_NO_SUCH_KEY"));
	assert_non_null(strstr(err.msg, "no API key"));
	assert_null(strstr(err.msg, "keychain"));
	/* a keychain the config asks for cannot be reached (no session bus):
	 * an error naming the fix, never a fall back to a file */
	s.keychain = true;
	unsetenv("DBUS_SESSION_BUS_ADDRESS");
	setenv("XDG_RUNTIME_DIR", "/nonexistent", 1);
	assert_int_equal(lev_provider_new(&s, &p, &err), LEV_EUNSUPP);
	assert_null(p);
	assert_non_null(strstr(err.msg, "provider 'openai'"));
	assert_non_null(strstr(err.msg, "gnome-keyring-daemon"));
	assert_non_null(strstr(err.msg, "credential_store = \"file\""));
	/* the variable still comes first and needs no keychain */
	setenv("LEV_TEST_NO_SUCH_KEY", "sk-from-env", 1);
	assert_int_equal(lev_provider_new(&s, &p, &err), 0);
	p = lev_provider_free(p);
	unsetenv("LEV_TEST_NO_SUCH_KEY");
	s.keychain = false;
	/* no key variable: a keyless local server is fine */
	free(s.api_key_env);
	s.api_key_env = NULL;
	assert_int_equal(lev_provider_new(&s, &p, &err), 0);
	assert_string_equal(lev_provider_name(p), "openai");
	assert_string_equal(lev_provider_model(p), "gpt-x");
	assert_int_equal(lev_provider_kind(p), LEV_PROVIDER_OPENAI);
	p = lev_provider_free(p);
	assert_null(p);
	free(s.base_url);
	s.base_url = strdup("ftp://example.com/");
	assert_int_equal(lev_provider_new(&s, &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "base_url"));
	lev_provider_spec_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_encode),
		cmocka_unit_test(test_anthropic_encode),
		cmocka_unit_test(test_encode_invalid_utf8),
		cmocka_unit_test(test_openai_decode_calls),
		cmocka_unit_test(test_openai_decode_shapes),
		cmocka_unit_test(test_openai_decode_errors),
		cmocka_unit_test(test_decode_bounds),
		cmocka_unit_test(test_anthropic_decode),
		cmocka_unit_test(test_response_roundtrip),
		cmocka_unit_test(test_error_message),
		cmocka_unit_test(test_redact),
		cmocka_unit_test(test_retry_delay),
		cmocka_unit_test(test_credentials_file),
		cmocka_unit_test(test_key_resolution),
		cmocka_unit_test(test_spec_defaults),
		cmocka_unit_test(test_spec_from_config),
		cmocka_unit_test(test_new_without_key),
		cmocka_unit_test(test_scrubbed_key_still_resolves),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
