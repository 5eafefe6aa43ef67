/*
 * The real HTTP client path of the providers, against tests/helpers/
 * mock-model on 127.0.0.1: both wire formats, retries (with an injected
 * sleep that records the delays instead of sleeping), timeouts, dropped
 * connections, oversize answers, auth failures that must not leak the key.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/provider/provider.h"
#include "mock-server.h"

#define TEST_KEY "sk-test-Zq8HvY2mK4pL9wX3rT6n"
#define TEST_KEY_ENV "LEV_TEST_PROVIDER_KEY"

struct sleeps {
	unsigned n;
	unsigned ms[16];
};

static void record_sleep(void *ud, unsigned ms)
{
	struct sleeps *s = ud;

	if (s->n < 16)
		s->ms[s->n] = ms;
	s->n++;
}

struct fixture {
	struct mock m;
	struct lev_provider *p;
	struct sleeps sleeps;
};

/* Start the mock with SCRIPT and a provider of KIND pointed at it. */
static struct lev_provider *start(struct fixture *f, const char *script,
				  enum lev_provider_kind kind, long timeout_ms)
{
	struct lev_provider_spec s;
	struct lev_err err = LEV_ERR_INIT;

	memset(f, 0, sizeof(*f));
	mock_start(&f->m, script);
	setenv(TEST_KEY_ENV, TEST_KEY, 1);
	lev_provider_spec_init(&s);
	s.kind = kind;
	s.name = strdup(kind == LEV_PROVIDER_ANTHROPIC ? "anthropic" : "openai");
	s.model = strdup("mock-model-1");
	s.base_url = strdup(f->m.base_url);
	s.api_key_env = strdup(TEST_KEY_ENV);
	s.sleep = record_sleep;
	s.sleep_data = &f->sleeps;
	s.jitter_seed = 42;
	s.timeout_ms = timeout_ms;
	s.retry.max_attempts = 4;
	s.retry.base_delay_ms = 100;
	s.retry.max_delay_ms = 1000;
	s.retry.max_retry_after_ms = 5000;
	if (lev_provider_new(&s, &f->p, &err) < 0)
		fail_msg("provider: %s", err.msg);
	lev_provider_spec_release(&s);
	return f->p;
}

static void stop(struct fixture *f)
{
	f->p = lev_provider_free(f->p);
	mock_stop(&f->m);
}

static void simple_request(struct lev_infer_request *r)
{
	json_t *schema = json_pack("{s:s, s:{s:{s:s}}}", "type", "object", "properties", "path",
				   "type", "string");

	lev_request_init(r);
	lev_request_set_system(r, "sys");
	lev_request_add_user_text(r, "hello");
	lev_request_add_tool(r, "read_file", "Read a file", schema);
	json_decref(schema);
}

static void test_openai_roundtrip(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;
	json_t *rec, *r0, *body;

	(void)state;
	start(&f,
	      "{\"responses\":[{\"text\":\"looking\",\"calls\":["
	      "{\"name\":\"read_file\",\"arguments\":{\"path\":\"a.txt\"}},"
	      "{\"name\":\"read_file\",\"arguments_raw\":\"{\\\"path\\\": \"},"
	      "{\"name\":\"no_such_tool\",\"arguments\":{}}]}]}",
	      LEV_PROVIDER_OPENAI, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), 0);
	assert_string_equal(resp.text, "looking");
	assert_int_equal(resp.n_calls, 3);
	assert_string_equal(resp.calls[0].name, "read_file");
	assert_string_equal(json_string_value(json_object_get(resp.calls[0].arguments, "path")),
			    "a.txt");
	assert_null(resp.calls[1].arguments);
	assert_non_null(resp.calls[1].parse_error);
	assert_string_equal(resp.calls[1].raw_arguments, "{\"path\": ");
	assert_string_equal(resp.calls[2].name, "no_such_tool");
	assert_int_equal(resp.finish, LEV_FINISH_TOOL_CALLS);
	assert_true(resp.has_prompt_tokens);
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 1);
	assert_int_equal(lev_provider_last_status(f.p)->http_status, 200);

	/* the next turn carries the calls and their results */
	lev_request_add_response(&req, &resp);
	{
		struct lev_message *m = lev_request_add_message(&req, LEV_ROLE_USER);
		lev_message_add_tool_result(m, resp.calls[0].id, "file text", false);
		lev_message_add_tool_result(m, resp.calls[1].id, "invalid JSON", true);
		lev_message_add_tool_result(m, resp.calls[2].id, "unknown tool", true);
	}
	lev_response_release(&resp);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), 0);
	assert_int_equal(resp.n_calls, 0);
	assert_int_equal(resp.finish, LEV_FINISH_STOP);
	lev_response_release(&resp);

	rec = mock_requests(&f.m);
	assert_int_equal(json_array_size(rec), 2);
	r0 = json_array_get(rec, 0);
	assert_string_equal(json_string_value(json_object_get(r0, "path")), "/v1/chat/completions");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r0, "headers"),
							     "authorization")),
			    "Bearer " TEST_KEY);
	body = json_object_get(r0, "body");
	assert_string_equal(json_string_value(json_object_get(body, "model")), "mock-model-1");
	assert_int_equal(json_array_size(json_object_get(body, "tools")), 1);
	body = json_object_get(json_array_get(rec, 1), "body");
	/* system, user, assistant, 3 tool results */
	assert_int_equal(json_array_size(json_object_get(body, "messages")), 6);
	json_decref(rec);
	lev_request_release(&req);
	stop(&f);
}

static void test_anthropic_roundtrip(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;
	json_t *rec, *h;

	(void)state;
	start(&f,
	      "{\"responses\":[{\"text\":\"hi\",\"calls\":["
	      "{\"name\":\"read_file\",\"arguments\":{\"path\":\"b\"}},"
	      "{\"name\":\"read_file\",\"arguments_raw\":\"{oops\"}]}]}",
	      LEV_PROVIDER_ANTHROPIC, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), 0);
	assert_string_equal(resp.text, "hi");
	assert_int_equal(resp.n_calls, 2);
	assert_string_equal(json_string_value(json_object_get(resp.calls[0].arguments, "path")), "b");
	assert_null(resp.calls[1].arguments);
	assert_non_null(resp.calls[1].parse_error);
	assert_int_equal(resp.finish, LEV_FINISH_TOOL_CALLS);
	lev_response_release(&resp);
	rec = mock_requests(&f.m);
	assert_string_equal(json_string_value(json_object_get(json_array_get(rec, 0), "path")),
			    "/v1/messages");
	h = json_object_get(json_array_get(rec, 0), "headers");
	assert_string_equal(json_string_value(json_object_get(h, "x-api-key")), TEST_KEY);
	assert_string_equal(json_string_value(json_object_get(h, "anthropic-version")), "2023-06-01");
	assert_null(json_object_get(h, "authorization"));
	json_decref(rec);
	lev_request_release(&req);
	stop(&f);
}

static void test_500_then_success(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;
	json_t *rec;

	(void)state;
	start(&f,
	      "{\"responses\":[{\"status\":500,\"body\":\"{\\\"error\\\":{\\\"message\\\":\\\"boom\\\"}}\"},"
	      "{\"status\":503,\"body\":\"unavailable\"},"
	      "{\"text\":\"recovered\"}]}",
	      LEV_PROVIDER_OPENAI, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), 0);
	assert_string_equal(resp.text, "recovered");
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 3);
	assert_int_equal(f.sleeps.n, 2);
	/* capped exponential backoff with jitter: [50,100] then [100,200] */
	assert_true(f.sleeps.ms[0] >= 50 && f.sleeps.ms[0] <= 100);
	assert_true(f.sleeps.ms[1] >= 100 && f.sleeps.ms[1] <= 200);
	lev_response_release(&resp);
	rec = mock_requests(&f.m);
	assert_int_equal(json_array_size(rec), 3);
	json_decref(rec);
	lev_request_release(&req);
	stop(&f);
}

static void test_server_error_gives_up(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	start(&f,
	      "{\"responses\":[{\"status\":500,\"body\":\"{\\\"error\\\":\\\"e1\\\"}\"},"
	      "{\"status\":502},{\"status\":500},"
	      "{\"status\":500,\"body\":\"{\\\"error\\\":\\\"still down\\\"}\"},{\"text\":\"late\"}]}",
	      LEV_PROVIDER_OPENAI, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -EREMOTEIO);
	assert_int_equal(lev_provider_last_status(f.p)->error, LEV_PERR_SERVER);
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 4);
	assert_int_equal(f.sleeps.n, 3);
	assert_non_null(strstr(err.msg, "HTTP 500"));
	assert_non_null(strstr(err.msg, "still down"));
	assert_non_null(strstr(err.msg, "4 attempts"));
	assert_non_null(strstr(err.msg, "provider 'openai'"));
	lev_request_release(&req);
	stop(&f);
}

static void test_429_retry_after(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	start(&f,
	      "{\"responses\":[{\"status\":429,\"headers\":{\"Retry-After\":\"2\"},"
	      "\"body\":\"{\\\"error\\\":{\\\"message\\\":\\\"slow down\\\"}}\"},"
	      "{\"text\":\"ok\"}]}",
	      LEV_PROVIDER_ANTHROPIC, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), 0);
	assert_string_equal(resp.text, "ok");
	assert_int_equal(f.sleeps.n, 1);
	assert_int_equal(f.sleeps.ms[0], 2000);	/* exactly what the server asked */
	lev_response_release(&resp);
	lev_request_release(&req);
	stop(&f);
}

static void test_429_retry_after_too_long(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	start(&f,
	      "{\"responses\":[{\"status\":429,\"headers\":{\"Retry-After\":\"600\"}},"
	      "{\"text\":\"never\"}]}",
	      LEV_PROVIDER_OPENAI, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -EBUSY);
	assert_int_equal(lev_provider_last_status(f.p)->error, LEV_PERR_RATE_LIMITED);
	assert_int_equal(lev_provider_last_status(f.p)->retry_after_secs, 600);
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 1);
	assert_int_equal(f.sleeps.n, 0);
	assert_non_null(strstr(err.msg, "rate limited"));
	assert_non_null(strstr(err.msg, "600 s"));
	lev_request_release(&req);
	stop(&f);
}

static void test_timeout(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	start(&f, "{\"responses\":[{\"fault\":\"slow\",\"delay_ms\":1500,\"text\":\"late\"}]}",
	      LEV_PROVIDER_OPENAI, 300);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -ETIMEDOUT);
	assert_int_equal(lev_provider_last_status(f.p)->error, LEV_PERR_TIMEOUT);
	/* a timeout is not retried */
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 1);
	assert_non_null(strstr(err.msg, "in time"));
	lev_request_release(&req);
	stop(&f);
}

static void test_dropped_connection(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	start(&f, "{\"responses\":[{\"fault\":\"drop\"},{\"fault\":\"drop_mid\",\"text\":\"cut\"},"
		  "{\"text\":\"third time\"}]}",
	      LEV_PROVIDER_OPENAI, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), 0);
	assert_string_equal(resp.text, "third time");
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 3);
	lev_response_release(&resp);
	lev_request_release(&req);
	stop(&f);

	/* always dropped: a connection error after the bounded retries */
	start(&f, "{\"responses\":[{\"fault\":\"drop\"},{\"fault\":\"drop\"},{\"fault\":\"drop\"},"
		  "{\"fault\":\"drop\"}]}",
	      LEV_PROVIDER_OPENAI, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -ECONNRESET);
	assert_int_equal(lev_provider_last_status(f.p)->error, LEV_PERR_CONNECTION);
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 4);
	assert_non_null(strstr(err.msg, "connection dropped"));
	lev_request_release(&req);
	stop(&f);
}

static void test_connection_refused(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	start(&f, "{\"responses\":[]}", LEV_PROVIDER_OPENAI, 0);
	/* stop the server but keep the provider: nothing listens on the port now */
	kill(f.m.pid, SIGTERM);
	waitpid(f.m.pid, NULL, 0);
	f.m.pid = 0;
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -ECONNRESET);
	assert_int_equal(lev_provider_last_status(f.p)->error, LEV_PERR_CONNECTION);
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 4);
	assert_non_null(strstr(err.msg, "cannot connect"));
	lev_request_release(&req);
	stop(&f);
}

static void test_huge_response(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	start(&f, "{\"responses\":[{\"fault\":\"huge\"},{\"text\":\"small\"}]}", LEV_PROVIDER_OPENAI,
	      0);
	simple_request(&req);
	/* 10 MiB against the 8 MiB default cap */
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -EFBIG);
	assert_int_equal(lev_provider_last_status(f.p)->error, LEV_PERR_TOO_LARGE);
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 1);
	assert_non_null(strstr(err.msg, "larger than"));
	assert_non_null(strstr(err.msg, "8388608"));
	/* the provider is still usable */
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), 0);
	assert_string_equal(resp.text, "small");
	lev_response_release(&resp);
	lev_request_release(&req);
	stop(&f);
}

static void test_401_never_shows_the_key(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	/* the server echoes the key back, whole and in part */
	start(&f,
	      "{\"responses\":[{\"status\":401,\"body\":\"{\\\"error\\\":{\\\"message\\\":"
	      "\\\"Incorrect API key provided: " TEST_KEY " (sk-test-****pL9wX3rT6n)\\\"}}\"}]}",
	      LEV_PROVIDER_OPENAI, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -EACCES);
	assert_int_equal(lev_provider_last_status(f.p)->error, LEV_PERR_AUTH);
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 1);
	assert_non_null(strstr(err.msg, "authentication failed"));
	assert_non_null(strstr(err.msg, "HTTP 401"));
	assert_non_null(strstr(err.msg, "$" TEST_KEY_ENV));
	assert_null(strstr(err.msg, TEST_KEY));
	assert_null(strstr(err.msg, "pL9wX3rT6n"));
	assert_null(strstr(err.msg, "Zq8HvY2m"));
	lev_request_release(&req);
	stop(&f);

	start(&f, "{\"responses\":[{\"status\":403,\"body\":\"{\\\"error\\\":\\\"no access\\\"}\"}]}",
	      LEV_PROVIDER_ANTHROPIC, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -EACCES);
	assert_non_null(strstr(err.msg, "access denied"));
	assert_non_null(strstr(err.msg, "no access"));
	lev_request_release(&req);
	stop(&f);
}

static void test_other_4xx_and_redirect(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	start(&f,
	      "{\"responses\":[{\"status\":400,\"body\":\"{\\\"error\\\":{\\\"message\\\":"
	      "\\\"model not found\\\"}}\"},"
	      "{\"status\":302,\"headers\":{\"Location\":\"http://127.0.0.1:1/elsewhere\"}},"
	      "{\"body\":\"this is not json\"},"
	      "{\"body\":\"{\\\"choices\\\":[]}\"}]}",
	      LEV_PROVIDER_OPENAI, 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -EPROTO);
	assert_int_equal(lev_provider_last_status(f.p)->error, LEV_PERR_REQUEST);
	assert_int_equal(lev_provider_last_status(f.p)->attempts, 1);
	assert_non_null(strstr(err.msg, "model not found"));
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -EBADMSG);
	assert_int_equal(lev_provider_last_status(f.p)->error, LEV_PERR_INVALID_RESPONSE);
	assert_non_null(strstr(err.msg, "redirect"));
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "not JSON"));
	assert_int_equal(lev_provider_infer(f.p, &req, &resp, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "no choices"));
	lev_request_release(&req);
	{
		json_t *rec = mock_requests(&f.m);
		/* nothing followed the redirect */
		assert_int_equal(json_array_size(rec), 4);
		json_decref(rec);
	}
	stop(&f);
}

/* TLS against a plain-HTTP server: verification is on, and it is not retried. */
static void test_tls_failure(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_provider_spec s;
	struct lev_provider *p = NULL;
	char url[128];

	(void)state;
	start(&f, "{\"responses\":[{\"text\":\"x\"}]}", LEV_PROVIDER_OPENAI, 0);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/v1", f.m.port);
	lev_provider_spec_init(&s);
	s.name = strdup("openai");
	s.model = strdup("m");
	s.base_url = strdup(url);
	s.sleep = record_sleep;
	s.sleep_data = &f.sleeps;
	assert_int_equal(lev_provider_new(&s, &p, &err), 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(p, &req, &resp, &err), -ECONNRESET);
	assert_int_equal(lev_provider_last_status(p)->error, LEV_PERR_CONNECTION);
	assert_int_equal(lev_provider_last_status(p)->attempts, 1);
	assert_int_equal(f.sleeps.n, 0);
	lev_provider_free(p);
	lev_provider_spec_release(&s);
	lev_request_release(&req);
	stop(&f);
}

static void test_cancel(void **state)
{
	struct fixture f;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_provider_spec s;
	volatile sig_atomic_t cancel = 1;
	struct lev_provider *p = NULL;

	(void)state;
	start(&f, "{\"responses\":[{\"text\":\"x\"}]}", LEV_PROVIDER_OPENAI, 0);
	lev_provider_spec_init(&s);
	s.name = strdup("openai");
	s.model = strdup("m");
	s.base_url = strdup(f.m.base_url);
	s.cancel = &cancel;
	assert_int_equal(lev_provider_new(&s, &p, &err), 0);
	simple_request(&req);
	assert_int_equal(lev_provider_infer(p, &req, &resp, &err), -ECANCELED);
	assert_int_equal(lev_provider_last_status(p)->error, LEV_PERR_CANCELLED);
	cancel = 0;
	assert_int_equal(lev_provider_infer(p, &req, &resp, &err), 0);
	lev_response_release(&resp);
	lev_provider_free(p);
	lev_provider_spec_release(&s);
	lev_request_release(&req);
	stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_roundtrip),
		cmocka_unit_test(test_anthropic_roundtrip),
		cmocka_unit_test(test_500_then_success),
		cmocka_unit_test(test_server_error_gives_up),
		cmocka_unit_test(test_429_retry_after),
		cmocka_unit_test(test_429_retry_after_too_long),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_dropped_connection),
		cmocka_unit_test(test_connection_refused),
		cmocka_unit_test(test_huge_response),
		cmocka_unit_test(test_401_never_shows_the_key),
		cmocka_unit_test(test_other_4xx_and_redirect),
		cmocka_unit_test(test_tls_failure),
		cmocka_unit_test(test_cancel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
