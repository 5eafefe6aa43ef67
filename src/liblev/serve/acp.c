/*
 * acp.c - the Agent Client Protocol's wire: lines, JSON-RPC 2.0 messages
 * and the params lev agent-client reads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/xalloc.h"
#include "liblev/serve/acp.h"

void lev_acp_in_push(struct lev_acp_in *in, const char *data, size_t n)
{
	if (in->skipping) {
		const char *nl = memchr(data, '\n', n);

		if (!nl)
			return;
		in->skipping = false;
		n -= (size_t)(nl + 1 - data);
		data = nl + 1;
	}
	if (in->len + n + 1 > in->cap) {
		in->cap = in->len + n + 1 > 2 * in->cap ? in->len + n + 1 : 2 * in->cap;
		in->buf = xrealloc(in->buf, in->cap);
	}
	memcpy(in->buf + in->len, data, n);
	in->len += n;
	/* a line that cannot end within the max (and a CR) is dropped now, not kept growing */
	if (in->len > LEV_ACP_LINE_MAX + 1 && !memchr(in->buf, '\n', in->len)) {
		in->len = 0;
		in->skipping = true;
		in->oversized = true;
	}
}

/* Hand out the first N bytes of IN as a line and drop them and SKIP more. */
static int take(struct lev_acp_in *in, size_t n, size_t skip, char **line, size_t *len)
{
	size_t keep = n;

	if (keep && in->buf[keep - 1] == '\r')
		keep--;
	if (keep > LEV_ACP_LINE_MAX) {
		memmove(in->buf, in->buf + n + skip, in->len - n - skip);
		in->len -= n + skip;
		return -EMSGSIZE;
	}
	*line = xmalloc(keep + 1);
	memcpy(*line, in->buf, keep);
	(*line)[keep] = '\0';
	*len = keep;
	memmove(in->buf, in->buf + n + skip, in->len - n - skip);
	in->len -= n + skip;
	return 1;
}

int lev_acp_in_next(struct lev_acp_in *in, char **line, size_t *len)
{
	const char *nl;

	if (in->oversized) {
		in->oversized = false;
		return -EMSGSIZE;
	}
	nl = in->len ? memchr(in->buf, '\n', in->len) : NULL;
	if (!nl)
		return 0;
	return take(in, (size_t)(nl - in->buf), 1, line, len);
}

int lev_acp_in_last(struct lev_acp_in *in, char **line, size_t *len)
{
	int r = lev_acp_in_next(in, line, len);

	if (r || !in->len)
		return r;
	return take(in, in->len, 0, line, len);
}

void lev_acp_in_release(struct lev_acp_in *in)
{
	free(in->buf);
	*in = (struct lev_acp_in)LEV_ACP_IN_INIT;
}

void lev_acp_msg_release(struct lev_acp_msg *m)
{
	json_decref(m->root);
	*m = (struct lev_acp_msg)LEV_ACP_MSG_INIT;
}

static int invalid(struct lev_err *err, const char *why)
{
	return lev_err_set(err, LEV_ACP_INVALID_REQUEST, "invalid request: %s", why);
}

int lev_acp_parse(const char *line, size_t len, struct lev_acp_msg *m, struct lev_err *err)
{
	json_error_t je;
	const json_t *id, *method, *params;

	*m = (struct lev_acp_msg)LEV_ACP_MSG_INIT;
	m->root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!m->root)
		return lev_err_set(err, LEV_ACP_PARSE_ERROR, "parse error: line 1:%d: %s",
				   je.column, je.text);
	if (!json_is_object(m->root))
		return lev_err_set(err, LEV_ACP_PARSE_ERROR, "parse error: not a JSON object");
	id = json_object_get(m->root, "id");
	if (id && (json_is_string(id) || json_is_integer(id)))
		m->id = id;
	if (!json_is_string(json_object_get(m->root, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(m->root, "jsonrpc")), "2.0"))
		return invalid(err, "'jsonrpc' must be \"2.0\"");
	if (id && !m->id)
		return invalid(err, "'id' must be a string or an integer");
	method = json_object_get(m->root, "method");
	params = json_object_get(m->root, "params");
	if (method) {
		if (!json_is_string(method) || !json_string_length(method))
			return invalid(err, "'method' must be a string");
		if (params && !json_is_object(params))
			return invalid(err, "'params' must be an object");
		if (json_object_get(m->root, "result") || json_object_get(m->root, "error"))
			return invalid(err, "a request has no 'result' or 'error'");
		m->method = json_string_value(method);
		m->params = params;
		return 0;
	}
	m->result = json_object_get(m->root, "result");
	m->error = json_object_get(m->root, "error");
	if (!m->id)
		return invalid(err, "no 'method', and no 'id' a response would answer");
	if (!m->result == !m->error)
		return invalid(err, "a response has exactly one of 'result' and 'error'");
	if (m->error && !json_is_object(m->error))
		return invalid(err, "'error' must be an object");
	return 0;
}

/* "invalid params: 'KEY' WHY" */
static int bad_param(struct lev_err *err, const char *key, const char *why)
{
	return lev_err_set(err, LEV_ACP_INVALID_PARAMS, "invalid params: '%s' %s", key, why);
}

int lev_acp_param_str(const json_t *params, const char *key, const char **out,
		      struct lev_err *err)
{
	const json_t *v = json_object_get(params, key);

	if (!json_is_string(v) || !json_string_length(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return bad_param(err, key, "must be a non-empty string");
	*out = json_string_value(v);
	return 0;
}

/* Add the text of block B (index I) to OUT: 0, or LEV_ACP_INVALID_PARAMS. */
static int add_block(struct lev_buf *out, const json_t *b, size_t i, struct lev_err *err)
{
	const char *type = json_string_value(json_object_get(b, "type"));
	const json_t *t = NULL;

	if (!json_is_object(b) || !type)
		return lev_err_set(err, LEV_ACP_INVALID_PARAMS,
				   "invalid params: 'prompt[%zu]' must be an object with a "
				   "string 'type'", i);
	if (!strcmp(type, "text")) {
		t = json_object_get(b, "text");
	} else if (!strcmp(type, "resource")) {
		const json_t *r = json_object_get(b, "resource");

		t = json_object_get(r, "text");
		if (json_is_string(json_object_get(r, "uri")) && json_is_string(t))
			(void)lev_buf_addf(out, "%s--- %s\n", out->len ? "\n" : "",
					   json_string_value(json_object_get(r, "uri")));
	} else if (!strcmp(type, "resource_link")) {
		t = json_object_get(b, "uri");
	} else {
		return lev_err_set(err, LEV_ACP_INVALID_PARAMS,
				   "invalid params: 'prompt[%zu]': lev takes text, not '%.40s' blocks",
				   i, type);
	}
	if (!json_is_string(t) || strlen(json_string_value(t)) != json_string_length(t))
		return lev_err_set(err, LEV_ACP_INVALID_PARAMS,
				   "invalid params: 'prompt[%zu]' has no text", i);
	if ((out->len && lev_buf_addch(out, '\n') < 0) ||
	    lev_buf_add(out, json_string_value(t), json_string_length(t)) < 0)
		return bad_param(err, "prompt", "is too long");
	return 0;
}

int lev_acp_prompt_text(const json_t *params, char **text, struct lev_err *err)
{
	struct lev_buf out = LEV_BUF_INIT_MAX(LEV_ACP_LINE_MAX);
	const json_t *prompt = json_object_get(params, "prompt"), *b;
	size_t i;

	if (!json_is_array(prompt))
		return bad_param(err, "prompt", "must be an array of content blocks");
	json_array_foreach(prompt, i, b) {
		int r = add_block(&out, b, i, err);

		if (r < 0) {
			lev_buf_release(&out);
			return r;
		}
	}
	if (!out.len || strspn(out.buf, " \t\r\n") == out.len) {
		lev_buf_release(&out);
		return bad_param(err, "prompt", "holds no text");
	}
	*text = lev_buf_detach(&out, NULL);
	return 0;
}
