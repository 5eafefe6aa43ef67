/*
 * provider-anthropic.c - the Anthropic Messages API wire format.
 *
 * Mapping of the neutral conversation:
 *   system text      -> "system"
 *   messages         -> "messages"; consecutive messages of one role are
 *                       merged (the API wants alternating roles), empty
 *                       text blocks are dropped (the API refuses them),
 *                       and in a user message the tool_result blocks come
 *                       first, as the API requires
 *   tool_use         -> {"type":"tool_use","id","name","input"}; input {}
 *                       when the model's arguments were not valid JSON
 *   tool_result      -> {"type":"tool_result","tool_use_id","content","is_error"}
 *   tools            -> {"name","description","input_schema"}
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/provider/provider-internal.h"
#include "liblev/base/xalloc.h"

static void add_blocks(json_t *content, const struct lev_message *m, bool results)
{
	for (size_t i = 0; i < m->n_blocks; i++) {
		const struct lev_block *b = &m->blocks[i];
		json_t *o;

		if ((b->type == LEV_BLOCK_TOOL_RESULT) != results)
			continue;
		switch (b->type) {
		case LEV_BLOCK_TEXT:
			if (!b->text || !*b->text)
				continue;
			o = json_object();
			json_object_set_new(o, "type", json_string("text"));
			json_object_set_new(o, "text", lev__jstr(b->text));
			break;
		case LEV_BLOCK_TOOL_USE:
			o = json_object();
			json_object_set_new(o, "type", json_string("tool_use"));
			json_object_set_new(o, "id", lev__jstr(b->id));
			json_object_set_new(o, "name", lev__jstr(b->name));
			if (json_is_object(b->input))
				json_object_set(o, "input", b->input);
			else
				json_object_set_new(o, "input", json_object());
			break;
		case LEV_BLOCK_TOOL_RESULT:
			o = json_object();
			json_object_set_new(o, "type", json_string("tool_result"));
			json_object_set_new(o, "tool_use_id", lev__jstr(b->id));
			json_object_set_new(o, "content", lev__jstr(b->text ? b->text : ""));
			if (b->is_error)
				json_object_set_new(o, "is_error", json_true());
			break;
		default:
			continue;
		}
		json_array_append_new(content, o);
	}
}

int lev_anthropic_encode(const struct lev_infer_request *req, const char *model,
			 unsigned max_tokens, char **out, struct lev_err *err)
{
	json_t *root, *msgs;
	char *s;

	if (!model || !*model)
		return lev_err_set(err, -EINVAL, "no model given");
	root = json_object();
	msgs = json_array();
	json_object_set_new(root, "model", lev__jstr(model));
	json_object_set_new(root, "max_tokens", json_integer(max_tokens ? max_tokens : 4096));
	if (req->system && *req->system)
		json_object_set_new(root, "system", lev__jstr(req->system));

	for (size_t i = 0; i < req->n_messages;) {
		enum lev_role role = req->messages[i].role;
		json_t *content = json_array(), *msg;
		size_t j;

		/* Merge the run of messages with this role; results first. */
		for (j = i; j < req->n_messages && req->messages[j].role == role; j++)
			add_blocks(content, &req->messages[j], true);
		for (j = i; j < req->n_messages && req->messages[j].role == role; j++)
			add_blocks(content, &req->messages[j], false);
		i = j;
		if (json_array_size(content) == 0) {
			json_decref(content);
			continue;
		}
		msg = json_object();
		json_object_set_new(msg, "role",
				    json_string(role == LEV_ROLE_ASSISTANT ? "assistant" : "user"));
		json_object_set_new(msg, "content", content);
		json_array_append_new(msgs, msg);
	}
	json_object_set_new(root, "messages", msgs);
	if (req->n_tools) {
		json_t *tools = json_array();
		for (size_t i = 0; i < req->n_tools; i++) {
			const struct lev_tool_def *t = &req->tools[i];
			json_t *tool = json_object();
			json_object_set_new(tool, "name", lev__jstr(t->name));
			if (t->description)
				json_object_set_new(tool, "description", lev__jstr(t->description));
			if (t->parameters)
				json_object_set(tool, "input_schema", t->parameters);
			else
				json_object_set_new(tool, "input_schema",
						    json_pack("{s:s, s:{}}", "type", "object",
							      "properties"));
			json_array_append_new(tools, tool);
		}
		json_object_set_new(root, "tools", tools);
	}
	if (req->has_temperature)
		json_object_set_new(root, "temperature", json_real(req->temperature));

	s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (!s)
		return lev_err_set(err, -EINVAL, "cannot encode the request (a non-finite number?)");
	*out = s;
	return 0;
}

static enum lev_finish finish_of(const char *s)
{
	if (strcmp(s, "end_turn") == 0 || strcmp(s, "stop_sequence") == 0)
		return LEV_FINISH_STOP;
	if (strcmp(s, "tool_use") == 0)
		return LEV_FINISH_TOOL_CALLS;
	if (strcmp(s, "max_tokens") == 0)
		return LEV_FINISH_LENGTH;
	if (strcmp(s, "refusal") == 0)
		return LEV_FINISH_FILTERED;
	return LEV_FINISH_OTHER;
}

static int parse_tool_use(const json_t *blk, size_t idx, struct lev_infer_response *r,
			  struct lev_err *err)
{
	const json_t *id = json_object_get(blk, "id"), *name = json_object_get(blk, "name");
	const json_t *input = json_object_get(blk, "input");
	struct lev_tool_call *tc;
	int rc;

	if (r->n_calls >= LEV_PROVIDER_MAX_CALLS)
		return lev_err_set(err, -EBADMSG, "more than %d tool calls in one answer",
				   LEV_PROVIDER_MAX_CALLS);
	tc = lev__response_add_call(r);
	if (json_is_string(id) && json_string_length(id) > 0) {
		rc = lev__bounded_name(id, "tool_use id", &tc->id, err);
		if (rc < 0)
			return rc;
	} else {
		tc->id = xasprintf("call_%zu", idx + 1);
	}
	if (name) {
		rc = lev__bounded_name(name, "tool name", &tc->name, err);
		if (rc < 0)
			return rc;
	} else {
		tc->name = xstrdup("");
	}
	if (json_is_object(input)) {
		tc->raw_arguments = lev__json_compact(input);
		tc->arguments = json_incref((json_t *)input);
	} else if (json_is_string(input)) {
		/* Not the documented shape, but some gateways pass the text through. */
		lev__tool_call_set_raw(tc, json_string_value(input), json_string_length(input));
	} else if (!input) {
		tc->raw_arguments = xstrdup("{}");
		tc->arguments = json_object();
	} else {
		tc->raw_arguments = lev__json_compact(input);
		tc->parse_error = xstrdup("arguments are not a JSON object");
	}
	return 0;
}

int lev_anthropic_decode(const char *body, size_t len, struct lev_infer_response *out,
			 struct lev_err *err)
{
	struct lev_infer_response r = { 0 };
	struct lev_buf text = LEV_BUF_INIT;
	json_t *root = NULL;
	const json_t *content, *blk, *sr, *type;
	size_t i;
	int rc;

	rc = lev__json_parse_object(body, len, &root, err);
	if (rc < 0)
		return rc;
	type = json_object_get(root, "type");
	if (json_is_string(type) && strcmp(json_string_value(type), "error") == 0) {
		_cleanup_free_ char *m = lev_provider_error_message(body, len, 300);
		rc = lev_err_set(err, -EBADMSG, "the server answered with an error: %s",
				 m ? m : "(no message)");
		goto out;
	}
	content = json_object_get(root, "content");
	if (!json_is_array(content)) {
		rc = lev_err_set(err, -EBADMSG, "response has no content array");
		goto out;
	}
	json_array_foreach(content, i, blk) {
		const json_t *bt = json_object_get(blk, "type");
		const char *t = json_string_value(bt);

		if (!t)
			continue;
		if (strcmp(t, "text") == 0) {
			const json_t *tx = json_object_get(blk, "text");
			if (json_is_string(tx))
				lev_buf_add(&text, json_string_value(tx), json_string_length(tx));
		} else if (strcmp(t, "tool_use") == 0) {
			rc = parse_tool_use(blk, r.n_calls, &r, err);
			if (rc < 0)
				goto out;
		}
		/* thinking, redacted_thinking, server tools: not ours to show */
	}
	r.text = lev_buf_detach(&text, NULL);
	sr = json_object_get(root, "stop_reason");
	if (json_is_string(sr)) {
		r.finish_raw = xstrndup(json_string_value(sr), 64);
		r.finish = finish_of(r.finish_raw);
	} else {
		r.finish = r.n_calls ? LEV_FINISH_TOOL_CALLS : LEV_FINISH_STOP;
	}
	if (r.n_calls && r.finish == LEV_FINISH_STOP)
		r.finish = LEV_FINISH_TOOL_CALLS;
	{
		const json_t *u = json_object_get(root, "usage");
		const char *keys[] = { "input_tokens", "cache_read_input_tokens",
				       "cache_creation_input_tokens" };
		const json_t *o = json_object_get(u, "output_tokens");
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
			const json_t *v = json_object_get(u, keys[k]);
			if (json_is_integer(v) && json_integer_value(v) >= 0) {
				r.has_prompt_tokens = true;
				r.prompt_tokens += (uint64_t)json_integer_value(v);
				if (k == 1)
					r.cached_tokens = (uint64_t)json_integer_value(v);
				else if (k == 2)
					r.cache_write_tokens = (uint64_t)json_integer_value(v);
			}
		}
		if (json_is_integer(o) && json_integer_value(o) >= 0) {
			r.has_completion_tokens = true;
			r.completion_tokens = (uint64_t)json_integer_value(o);
		}
	}
	*out = r;
	memset(&r, 0, sizeof(r));
	rc = 0;
out:
	lev_buf_release(&text);
	lev_response_release(&r);
	json_decref(root);
	return rc;
}
