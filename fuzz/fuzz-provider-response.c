/*
 * fuzz-provider-response.c - a model server's answer is untrusted input:
 * feed arbitrary bytes to both wire-format decoders (OpenAI Chat
 * Completions and Anthropic Messages), to the error-body reader and to
 * the key redactor.
 *
 * Invariants checked besides "no crash, no leak, no UB": a decoded answer
 * has text, at most LEV_PROVIDER_MAX_CALLS calls, and every call has an
 * id, a name and its raw arguments, with exactly one of a JSON object or
 * a parse error; a decoded answer replays into a request that encodes in
 * both formats; redaction never leaves the key in the text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/provider/provider.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

#define FUZZ_KEY "sk-fuzz-0123456789abcdef"

static void check_response(const struct lev_infer_response *r)
{
	struct lev_infer_request req;
	struct lev_err err = LEV_ERR_INIT;
	char *body = NULL;

	CHECK(r->text != NULL);
	CHECK(r->n_calls <= LEV_PROVIDER_MAX_CALLS);
	CHECK((unsigned)r->finish < _LEV_FINISH_MAX);
	for (size_t i = 0; i < r->n_calls; i++) {
		const struct lev_tool_call *c = &r->calls[i];
		CHECK(c->id && c->name && c->raw_arguments);
		CHECK(strlen(c->id) <= LEV_PROVIDER_MAX_NAME);
		CHECK(strlen(c->name) <= LEV_PROVIDER_MAX_NAME);
		CHECK((c->arguments != NULL) != (c->parse_error != NULL));
		if (c->arguments)
			CHECK(json_is_object(c->arguments));
	}
	lev_request_init(&req);
	lev_request_add_response(&req, r);
	CHECK(lev_openai_encode(&req, "m", 16, false, &body, &err) == 0);
	free(body);
	CHECK(lev_anthropic_encode(&req, "m", 16, &body, &err) == 0);
	free(body);
	lev_request_release(&req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lev_infer_response r;
	struct lev_err err = LEV_ERR_INIT;
	const char *body = (const char *)data;
	char *m;

	if (size > ((size_t)1 << 20))
		return 0;
	if (lev_openai_decode(body, size, &r, &err) == 0) {
		check_response(&r);
		lev_response_release(&r);
	} else {
		CHECK(err.msg[0] != '\0');
	}
	if (lev_anthropic_decode(body, size, &r, &err) == 0) {
		check_response(&r);
		lev_response_release(&r);
	} else {
		CHECK(err.msg[0] != '\0');
	}
	m = lev_provider_error_message(body, size, 300);
	if (m) {
		CHECK(strlen(m) <= 303);
		free(m);
	}
	{
		/* Redact the key from arbitrary text with the key planted in it. */
		size_t n = size > 400 ? 400 : size;
		char buf[1024];
		memcpy(buf, data, n);
		buf[n] = '\0';
		for (size_t i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		strcat(buf, " " FUZZ_KEY " ");
		lev_redact_secret(buf, FUZZ_KEY);
		CHECK(strstr(buf, FUZZ_KEY) == NULL);
	}
	return 0;
}
