/*
 * fuzz-acp.c - lev agent-client's reader (lev_acp_in, lev_acp_parse(),
 * lev_acp_prompt_text(), lev_acp_param_str()) on arbitrary bytes.
 *
 * The input is fed to the line reader in chunks whose sizes come from the
 * input itself.  Besides "no crash, no leak, no UB": every line handed out
 * is at most LEV_ACP_LINE_MAX bytes and holds no newline; a line parsed
 * is either refused with a JSON-RPC code and one line of message, or is a
 * request (a string method, params an object or absent) or a response
 * (an id, exactly one of result and error); a prompt's text is never empty
 * and never over the max.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/serve/acp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

static void check_line(const char *line, size_t len)
{
	struct lev_acp_msg m = LEV_ACP_MSG_INIT;
	struct lev_err err = LEV_ERR_INIT;
	int r;

	CHECK(len <= LEV_ACP_LINE_MAX && !memchr(line, '\n', len) && line[len] == '\0');
	r = lev_acp_parse(line, len, &m, &err);
	if (r < 0) {
		CHECK(r == LEV_ACP_PARSE_ERROR || r == LEV_ACP_INVALID_REQUEST);
		CHECK(err.msg[0] && !strchr(err.msg, '\n'));
	} else if (m.method) {
		const char *s = NULL;
		char *text = NULL;

		CHECK(!m.params || json_is_object(m.params));
		CHECK(!m.id || json_is_string(m.id) || json_is_integer(m.id));
		lev_err_clear(&err);
		if (lev_acp_prompt_text(m.params, &text, &err) == 0) {
			CHECK(text[0] && strlen(text) <= LEV_ACP_LINE_MAX);
			free(text);
		} else {
			CHECK(err.code == LEV_ACP_INVALID_PARAMS && err.msg[0]);
		}
		lev_err_clear(&err);
		if (lev_acp_param_str(m.params, "sessionId", &s, &err) == 0)
			CHECK(s[0]);
	} else {
		CHECK(m.id && !m.result != !m.error);
	}
	lev_acp_msg_release(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lev_acp_in in = LEV_ACP_IN_INIT;
	size_t off = 0, step = size ? (size_t)data[0] % 61 + 1 : 1;
	char *line;
	size_t len;
	int r;

	while (off < size) {
		size_t n = size - off < step ? size - off : step;

		lev_acp_in_push(&in, (const char *)data + off, n);
		off += n;
		while ((r = lev_acp_in_next(&in, &line, &len)) != 0) {
			if (r < 0) {
				CHECK(r == -EMSGSIZE);
				continue;
			}
			check_line(line, len);
			free(line);
		}
	}
	while ((r = lev_acp_in_last(&in, &line, &len)) != 0) {
		if (r > 0) {
			check_line(line, len);
			free(line);
		}
	}
	lev_acp_in_release(&in);
	return 0;
}
