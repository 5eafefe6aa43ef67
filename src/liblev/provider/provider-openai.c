/*
 * provider-openai.c - the Chat Completions wire format (OpenAI, and the
 * OpenAI-compatible servers: Ollama, llama.cpp's server, vLLM).
 *
 * Mapping of the neutral conversation:
 *   system text          -> {"role":"system"} first
 *   user text blocks     -> one {"role":"user"} joined by blank lines
 *   user tool_result     -> {"role":"tool","tool_call_id":...} each, placed
 *                           before the user text (they must follow the
 *                           assistant message that made the calls);
 *                           is_error results are prefixed "Error: "
 *   assistant text+calls -> {"role":"assistant","content","tool_calls"},
 *                           arguments sent as the raw text the model wrote
 *                           when we have it, so a retry shows the model its
 *                           own invalid JSON
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/provider/provider-internal.h"
#include "liblev/base/xalloc.h"

static json_t *joined_text(const struct lev_message *m)
{
	struct lev_buf b = LEV_BUF_INIT;
	bool any = false;
	json_t *v;

	for (size_t i = 0; i < m->n_blocks; i++) {
		if (m->blocks[i].type != LEV_BLOCK_TEXT || !m->blocks[i].text ||
		    !m->blocks[i].text[0])
			continue;
		if (any)
			lev_buf_adds(&b, "\n\n");
		lev_buf_adds(&b, m->blocks[i].text ? m->blocks[i].text : "");
		any = true;
	}
	v = any ? lev__jstrn(b.buf, b.len) : NULL;
	lev_buf_release(&b);
	return v;
}

static json_t *tool_result_msg(const struct lev_block *b)
{
	json_t *m = json_object();
	const char *text = b->text ? b->text : "";

	json_object_set_new(m, "role", json_string("tool"));
	json_object_set_new(m, "tool_call_id", lev__jstr(b->id));
	if (b->is_error && strncasecmp(text, "error", 5) != 0) {
		_cleanup_free_ char *s = xasprintf("Error: %s", text);
		json_object_set_new(m, "content", lev__jstr(s));
	} else {
		json_object_set_new(m, "content", lev__jstr(text));
	}
	return m;
}

static json_t *assistant_msg(const struct lev_message *m)
{
	json_t *msg = json_object(), *calls = json_array(), *text = joined_text(m);

	json_object_set_new(msg, "role", json_string("assistant"));
	for (size_t i = 0; i < m->n_blocks; i++) {
		const struct lev_block *b = &m->blocks[i];
		json_t *call, *fn;
		_cleanup_free_ char *args = NULL;

		if (b->type != LEV_BLOCK_TOOL_USE)
			continue;
		args = b->raw_input ? xstrdup(b->raw_input) : lev__json_compact(b->input);
		fn = json_object();
		json_object_set_new(fn, "name", lev__jstr(b->name));
		json_object_set_new(fn, "arguments", lev__jstr(args));
		call = json_object();
		json_object_set_new(call, "id", lev__jstr(b->id));
		json_object_set_new(call, "type", json_string("function"));
		json_object_set_new(call, "function", fn);
		json_array_append_new(calls, call);
	}
	if (text)
		json_object_set_new(msg, "content", text);
	else
		json_object_set_new(msg, "content",
				    json_array_size(calls) ? json_null() : json_string(""));
	if (json_array_size(calls))
		json_object_set_new(msg, "tool_calls", calls);
	else
		json_decref(calls);
	return msg;
}

int lev_openai_encode(const struct lev_infer_request *req, const char *model,
		      unsigned max_tokens, bool max_completion_tokens, char **out,
		      struct lev_err *err)
{
	json_t *root = json_object(), *msgs = json_array();
	char *s;

	if (!model || !*model) {
		json_decref(root);
		json_decref(msgs);
		return lev_err_set(err, -EINVAL, "no model given");
	}
	json_object_set_new(root, "model", lev__jstr(model));
	if (req->system && *req->system) {
		json_t *m = json_object();
		json_object_set_new(m, "role", json_string("system"));
		json_object_set_new(m, "content", lev__jstr(req->system));
		json_array_append_new(msgs, m);
	}
	for (size_t i = 0; i < req->n_messages; i++) {
		const struct lev_message *m = &req->messages[i];

		if (m->role == LEV_ROLE_ASSISTANT) {
			json_array_append_new(msgs, assistant_msg(m));
			continue;
		}
		for (size_t j = 0; j < m->n_blocks; j++)
			if (m->blocks[j].type == LEV_BLOCK_TOOL_RESULT)
				json_array_append_new(msgs, tool_result_msg(&m->blocks[j]));
		{
			json_t *text = joined_text(m);
			if (text) {
				json_t *u = json_object();
				json_object_set_new(u, "role", json_string("user"));
				json_object_set_new(u, "content", text);
				json_array_append_new(msgs, u);
			}
		}
	}
	json_object_set_new(root, "messages", msgs);
	if (req->n_tools) {
		json_t *tools = json_array();
		for (size_t i = 0; i < req->n_tools; i++) {
			const struct lev_tool_def *t = &req->tools[i];
			json_t *fn = json_object(), *tool = json_object();
			json_object_set_new(fn, "name", lev__jstr(t->name));
			if (t->description)
				json_object_set_new(fn, "description", lev__jstr(t->description));
			if (t->parameters)
				json_object_set(fn, "parameters", t->parameters);
			else
				json_object_set_new(fn, "parameters",
						    json_pack("{s:s, s:{}}", "type", "object",
							      "properties"));
			json_object_set_new(tool, "type", json_string("function"));
			json_object_set_new(tool, "function", fn);
			json_array_append_new(tools, tool);
		}
		json_object_set_new(root, "tools", tools);
	}
	json_object_set_new(root, max_completion_tokens ? "max_completion_tokens" : "max_tokens",
			    json_integer(max_tokens));
	if (req->has_temperature)
		json_object_set_new(root, "temperature", json_real(req->temperature));
	json_object_set_new(root, "stream", json_false());

	s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (!s)
		return lev_err_set(err, -EINVAL, "cannot encode the request (a non-finite number?)");
	*out = s;
	return 0;
}

static enum lev_finish finish_of(const char *s)
{
	if (!s)
		return LEV_FINISH_OTHER;
	if (strcmp(s, "stop") == 0)
		return LEV_FINISH_STOP;
	if (strcmp(s, "tool_calls") == 0 || strcmp(s, "function_call") == 0)
		return LEV_FINISH_TOOL_CALLS;
	if (strcmp(s, "length") == 0)
		return LEV_FINISH_LENGTH;
	if (strcmp(s, "content_filter") == 0)
		return LEV_FINISH_FILTERED;
	return LEV_FINISH_OTHER;
}

/* message.content: a string, null, or an array of {"type":"text","text"} parts. */
static int content_text(const json_t *c, char **out, struct lev_err *err)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t i;
	json_t *part;

	if (!c || json_is_null(c)) {
		*out = xstrdup("");
		return 0;
	}
	if (json_is_string(c)) {
		*out = xstrndup(json_string_value(c), json_string_length(c));
		return 0;
	}
	if (!json_is_array(c))
		return lev_err_set(err, -EBADMSG, "message content is neither text nor parts");
	json_array_foreach(c, i, part) {
		const json_t *t = json_object_get(part, "text");
		if (json_is_string(t))
			lev_buf_add(&b, json_string_value(t), json_string_length(t));
	}
	*out = lev_buf_detach(&b, NULL);
	return 0;
}

static int parse_calls(const json_t *calls, struct lev_infer_response *r, struct lev_err *err)
{
	size_t i;
	json_t *c;

	if (!calls || json_is_null(calls))
		return 0;
	if (!json_is_array(calls))
		return lev_err_set(err, -EBADMSG, "tool_calls is not an array");
	if (json_array_size(calls) > LEV_PROVIDER_MAX_CALLS)
		return lev_err_set(err, -EBADMSG, "more than %d tool calls in one answer",
				   LEV_PROVIDER_MAX_CALLS);
	json_array_foreach(calls, i, c) {
		const json_t *fn = json_object_get(c, "function"), *id, *name, *args;
		struct lev_tool_call *tc;
		int rr;

		if (!json_is_object(c) || !json_is_object(fn))
			return lev_err_set(err, -EBADMSG, "tool call %zu has no function object", i);
		tc = lev__response_add_call(r);
		id = json_object_get(c, "id");
		if (json_is_string(id) && json_string_length(id) > 0) {
			rr = lev__bounded_name(id, "tool call id", &tc->id, err);
			if (rr < 0)
				return rr;
		} else {
			tc->id = xasprintf("call_%zu", i + 1);
		}
		name = json_object_get(fn, "name");
		if (name) {
			rr = lev__bounded_name(name, "tool name", &tc->name, err);
			if (rr < 0)
				return rr;
		} else {
			tc->name = xstrdup("");
		}
		args = json_object_get(fn, "arguments");
		if (json_is_string(args)) {
			lev__tool_call_set_raw(tc, json_string_value(args), json_string_length(args));
		} else if (!args || json_is_null(args)) {
			lev__tool_call_set_raw(tc, "", 0);
		} else {
			/* Some servers send an object instead of a string. */
			_cleanup_free_ char *s = lev__json_compact(args);
			lev__tool_call_set_raw(tc, s, strlen(s));
		}
	}
	return 0;
}

static void parse_usage(const json_t *u, struct lev_infer_response *r, const char *in,
			const char *outk)
{
	const json_t *p = json_object_get(u, in), *c = json_object_get(u, outk);
	const json_t *cached = json_object_get(json_object_get(u, "prompt_tokens_details"),
					       "cached_tokens");

	if (json_is_integer(p) && json_integer_value(p) >= 0) {
		r->has_prompt_tokens = true;
		r->prompt_tokens = (uint64_t)json_integer_value(p);
	}
	/* OpenAI's cache reads, part of prompt_tokens (it reports no writes) */
	if (json_is_integer(cached) && json_integer_value(cached) >= 0)
		r->cached_tokens = (uint64_t)json_integer_value(cached);
	if (json_is_integer(c) && json_integer_value(c) >= 0) {
		r->has_completion_tokens = true;
		r->completion_tokens = (uint64_t)json_integer_value(c);
	}
}

int lev_openai_decode(const char *body, size_t len, struct lev_infer_response *out,
		      struct lev_err *err)
{
	struct lev_infer_response r = { 0 };
	json_t *root = NULL;
	const json_t *choices, *choice, *msg, *fr;
	int rc;

	rc = lev__json_parse_object(body, len, &root, err);
	if (rc < 0)
		return rc;
	if (json_object_get(root, "error") && !json_object_get(root, "choices")) {
		_cleanup_free_ char *m = lev_provider_error_message(body, len, 300);
		rc = lev_err_set(err, -EBADMSG, "the server answered with an error: %s",
				 m ? m : "(no message)");
		goto out;
	}
	choices = json_object_get(root, "choices");
	if (!json_is_array(choices) || json_array_size(choices) == 0) {
		rc = lev_err_set(err, -EBADMSG, "response has no choices");
		goto out;
	}
	choice = json_array_get(choices, 0);
	msg = json_object_get(choice, "message");
	if (!json_is_object(msg)) {
		rc = lev_err_set(err, -EBADMSG, "response choice has no message");
		goto out;
	}
	rc = content_text(json_object_get(msg, "content"), &r.text, err);
	if (rc < 0)
		goto out;
	rc = parse_calls(json_object_get(msg, "tool_calls"), &r, err);
	if (rc < 0)
		goto out;
	fr = json_object_get(choice, "finish_reason");
	if (json_is_string(fr)) {
		r.finish_raw = xstrndup(json_string_value(fr), 64);
		r.finish = finish_of(r.finish_raw);
	} else {
		r.finish = r.n_calls ? LEV_FINISH_TOOL_CALLS : LEV_FINISH_STOP;
	}
	/* Some servers say "stop" while returning calls; the calls decide. */
	if (r.n_calls && r.finish == LEV_FINISH_STOP)
		r.finish = LEV_FINISH_TOOL_CALLS;
	parse_usage(json_object_get(root, "usage"), &r, "prompt_tokens", "completion_tokens");
	*out = r;
	memset(&r, 0, sizeof(r));
	rc = 0;
out:
	lev_response_release(&r);
	json_decref(root);
	return rc;
}
