/*
 * tools.c - the registry of built-in tools and the shell tool (tools.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "liblev/policy/argcheck.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/conf/blueprint.h"
#include "liblev/tools/tools-net.h"
#include "liblev/tools/tools.h"
#include "liblev/base/types.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

struct lev_tools {
	struct lev_tool_info *v;
	size_t n, cap;
};

static json_t *obj_schema(json_t *props, const char *const *required)
{
	json_t *req = json_array();

	for (size_t i = 0; required && required[i]; i++)
		json_array_append_new(req, json_string(required[i]));
	return json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props, "required",
			 req, "additionalProperties", 0);
}

static json_t *str_prop(const char *description)
{
	return json_pack("{s:s, s:s}", "type", "string", "description", description);
}

static json_t *int_prop(const char *description, int minimum)
{
	return json_pack("{s:s, s:i, s:i, s:s}", "type", "integer", "minimum", minimum, "maximum",
			 1000000, "description", description);
}

static json_t *key_prop(const char *description)
{
	return json_pack("{s:s, s:i, s:i, s:s}", "type", "string", "minLength", 1, "maxLength",
			 200, "description", description);
}

static json_t *question_prop(const char *description)
{
	return json_pack("{s:s, s:i, s:i, s:s}", "type", "string", "minLength", 1, "maxLength",
			 4000, "description", description);
}

/* schema_for() of the information, checklist, sub-agent and network tools, into P. */
static json_t *schema_rest(enum lev_tool_op op, json_t *p)
{
	switch (op) {
	case LEV_OP_CURRENT_TIME:
	case LEV_OP_LOCALE_INFO:
	case LEV_OP_SYSTEM_INFO:
	case LEV_OP_ENVIRONMENT_INFO:
	case LEV_OP_RUNTIME_INFO:
		return obj_schema(p, NULL);
	case LEV_OP_WHICH_COMMAND:
		json_object_set_new(p, "command",
				    json_pack("{s:s, s:i, s:i, s:s}", "type", "string", "minLength", 1,
					      "maxLength", 255, "description",
					      "The program's name, without a '/'"));
		return obj_schema(p, (const char *const[]){ "command", NULL });
	case LEV_OP_CONTEXT_LIST:
		json_object_set_new(p, "region", str_prop("One region to describe (default: all)"));
		return obj_schema(p, NULL);
	case LEV_OP_CONTEXT_DELETE:
		json_object_set_new(p, "region", str_prop("The context region"));
		json_object_set_new(p, "index", int_prop("The entry to release, 0 being the oldest",
							 0));
		json_object_set_new(p, "oldest", int_prop("How many of the oldest entries to "
							  "release", 1));
		json_object_set_new(p, "key", key_prop("Release the note of this name (as "
						       "context_write or context_append gave it)"));
		return obj_schema(p, (const char *const[]){ "region", NULL });
	case LEV_OP_TODO_ADD:
		json_object_set_new(p, "region", str_prop("The checklist region"));
		json_object_set_new(p, "item", question_prop("The item, in a line or two"));
		return obj_schema(p, (const char *const[]){ "region", "item", NULL });
	case LEV_OP_TODO_DONE:
		json_object_set_new(p, "region", str_prop("The checklist region"));
		json_object_set_new(p, "id", int_prop("The item's id, as todo_add returned it", 1));
		return obj_schema(p, (const char *const[]){ "region", "id", NULL });
	case LEV_OP_TODO_NOTE:
		json_object_set_new(p, "region", str_prop("The checklist region"));
		json_object_set_new(p, "id", int_prop("The item's id, as todo_add returned it", 1));
		json_object_set_new(p, "note", question_prop("The note"));
		return obj_schema(p, (const char *const[]){ "region", "id", "note", NULL });
	case LEV_OP_FAN_OUT: {
		/* context: any JSON value (Leviath's is an object; a string is fine too) */
		json_t *item = json_pack("{s:s, s:{s:o, s:{s:s}}, s:[s,s]}", "type", "object",
					 "properties", "id", str_prop("A short slug naming the item"),
					 "context", "description", "Everything the worker gets",
					 "required", "id", "context");

		json_object_set_new(p, "items", json_pack("{s:s, s:o, s:i, s:s}", "type", "array",
							  "items", item, "maxItems",
							  LEV_FANOUT_ITEMS_MAX, "description",
							  "One entry per work item (empty: nothing "
							  "to hand out)"));
		json_object_set_new(p, "agent", str_prop("The installed agent each worker runs "
							 "(a fan-out stage names its own worker)"));
		return obj_schema(p, (const char *const[]){ "items", NULL });
	}
	case LEV_OP_SPAWN_AGENT:
		json_object_set_new(p, "blueprint", str_prop("An installed agent, or a stage of "
							     "this blueprint with allow_as_worker"));
		json_object_set_new(p, "task", str_prop("Everything the child needs: it does not "
							"see this conversation"));
		json_object_set_new(p, "wait", json_pack("{s:s, s:s}", "type", "boolean",
							 "description", "Block until it finishes "
							 "and return its answer (default false)"));
		json_object_set_new(p, "seed_context", str_prop("Starting material for the "
								"child's first pinned region"));
		json_object_set_new(p, "max_child_depth", int_prop("How deep the child's own "
								   "children may nest", 0));
		json_object_set_new(p, "output_format", str_prop("The shape of answer to ask the "
								 "child for"));
		json_object_set_new(p, "output_instructions", str_prop("How the child should "
								       "write its answer"));
		return obj_schema(p, (const char *const[]){ "blueprint", "task", NULL });
	case LEV_OP_CHECK_AGENT:
	case LEV_OP_WAIT_FOR_AGENT:
	case LEV_OP_KILL_AGENT:
		json_object_set_new(p, "agent_id", str_prop("The id spawn_agent returned"));
		return obj_schema(p, (const char *const[]){ "agent_id", NULL });
	case LEV_OP_SEND_TO_AGENT:
		json_object_set_new(p, "agent_id", str_prop("The id spawn_agent returned"));
		json_object_set_new(p, "message", question_prop("The message"));
		json_object_set_new(p, "target_region", str_prop("A context region of the "
								 "sub-agent for the message "
								 "(default: its conversation)"));
		return obj_schema(p, (const char *const[]){ "agent_id", "message", NULL });
	case LEV_OP_WEB_FETCH:
	case LEV_OP_HTTP_POST:
	case LEV_OP_WEB_SEARCH:
		json_decref(p);
		return lev_tool_net_parameters(op);
	default:
		break;
	}
	json_decref(p);
	return NULL;
}

/* The argument schema of the tool that OP runs (network tools: tools-net.c). */
static json_t *schema_for(enum lev_tool_op op)
{
	json_t *p = json_object();

	switch (op) {
	case LEV_OP_READ_FILE:
		json_object_set_new(p, "path", str_prop("The file to read, relative to the working "
							"directory"));
		json_object_set_new(p, "offset",
				    json_pack("{s:s, s:i, s:s}", "type", "integer", "minimum", 0,
					      "description", "1-based number of the first line to "
							     "return (default 1)"));
		json_object_set_new(p, "limit",
				    json_pack("{s:s, s:i, s:s}", "type", "integer", "minimum", 0,
					      "description", "Most lines to return (default: all)"));
		return obj_schema(p, (const char *const[]){ "path", NULL });
	case LEV_OP_READ_FILES:
		json_object_set_new(p, "paths",
				    json_pack("{s:s, s:{s:s}, s:i, s:i, s:s}", "type", "array",
					      "items", "type", "string", "minItems", 1, "maxItems",
					      64, "description", "The files to read"));
		return obj_schema(p, (const char *const[]){ "paths", NULL });
	case LEV_OP_LIST_DIR:
		json_object_set_new(p, "path", str_prop("The directory to list (default: the "
							"working directory)"));
		return obj_schema(p, NULL);
	case LEV_OP_WRITE_FILE:
		json_object_set_new(p, "path", str_prop("The file to create or replace, inside the "
							"working directory"));
		json_object_set_new(p, "content", str_prop("The complete new content"));
		return obj_schema(p, (const char *const[]){ "path", "content", NULL });
	case LEV_OP_EDIT_FILE:
		json_object_set_new(p, "path", str_prop("The file to edit"));
		json_object_set_new(p, "old_str", str_prop("Text that occurs exactly once in the "
							   "file"));
		json_object_set_new(p, "new_str", str_prop("The replacement text"));
		return obj_schema(p, (const char *const[]){ "path", "old_str", "new_str", NULL });
	case LEV_OP_SHELL:
		json_object_set_new(p, "command", str_prop("The shell command line to run"));
		return obj_schema(p, (const char *const[]){ "command", NULL });
	case LEV_OP_SUBMIT_OUTPUT:
		json_object_set_new(p, "content", str_prop("The stage's final output"));
		return obj_schema(p, (const char *const[]){ "content", NULL });
	case LEV_OP_TRANSITION:
		json_object_set_new(p, "target", str_prop("The stage to go to, or DONE"));
		return obj_schema(p, (const char *const[]){ "target", NULL });
	case LEV_OP_CONTEXT_WRITE:
	case LEV_OP_CONTEXT_APPEND:
		json_object_set_new(p, "region", str_prop("The name of a context region you keep "
							  "notes in"));
		json_object_set_new(p, "content", str_prop("The note to keep there"));
		json_object_set_new(p, "key", key_prop("A name for the note: context_write "
						       "replaces the note of that name (not the "
						       "whole region); context_read reads it back"));
		return obj_schema(p, (const char *const[]){ "region", "content", NULL });
	case LEV_OP_CONTEXT_READ:
		json_object_set_new(p, "region", str_prop("The name of a context region"));
		json_object_set_new(p, "key", key_prop("Read only the note of this name"));
		return obj_schema(p, (const char *const[]){ "region", NULL });
	case LEV_OP_ASK_TEXT:
	case LEV_OP_ASK_CONFIRM:
		json_object_set_new(p, "prompt",
				    question_prop("The question, in one or a few sentences"));
		return obj_schema(p, (const char *const[]){ "prompt", NULL });
	case LEV_OP_ASK_CHOICE:
		json_object_set_new(p, "prompt", question_prop("The question"));
		json_object_set_new(p, "options",
				    json_pack("{s:s, s:{s:s, s:i, s:i}, s:i, s:i, s:s}", "type",
					      "array", "items", "type", "string", "minLength", 1,
					      "maxLength", 200, "minItems", 2, "maxItems", 20,
					      "description", "The answers to choose from"));
		return obj_schema(p, (const char *const[]){ "prompt", "options", NULL });
	case LEV_OP_PRESENT_FOR_REVIEW:
		json_object_set_new(p, "title", question_prop("The document's title"));
		json_object_set_new(p, "markdown", str_prop("The document (markdown); empty: the "
							    "stage's document region"));
		return obj_schema(p, (const char *const[]){ "title", NULL });
	case LEV_OP_EDIT_DOCUMENT:
		json_object_set_new(p, "content", str_prop("The document to edit"));
		json_object_set_new(p, "prompt", question_prop("What the document is, or what to "
							       "do with it"));
		return obj_schema(p, (const char *const[]){ "content", NULL });
	default:
		break;
	}
	return schema_rest(op, p);
}

/* The registry entry of the tool table's entry D. */
static void info_of(const struct lev_tool_desc *d, struct lev_tool_info *ti)
{
	*ti = (struct lev_tool_info){
		.desc = d,
		.name = d->name,
		.aliases = d->aliases,
		.description = d->description,
		.kind = d->kind,
		.op = d->op,
		.touches = d->touches,
		.detail_arg = d->detail_arg,
		.detail_arg2 = d->detail_arg2,
		.outbound = d->direction == LEV_DIR_OUTBOUND,
		.label = d->label,
		.schema = schema_for(d->op),
	};
}

/* The registry of lev's own tools: every entry of the tool table lev implements. */
int lev_tools_new(struct lev_tools **out, struct lev_err *err)
{
	struct lev_tools *t = xcalloc(1, sizeof(*t));
	size_t i, n = lev_tooltable_count();

	t->v = xcalloc(n, sizeof(*t->v));
	t->cap = n;
	for (i = 0; i < n; i++) {
		const struct lev_tool_desc *d = lev_tooltable_at(i);
		struct lev_tool_info *ti;
		int r;

		if (d->flags & LEV_TOOLF_FOREIGN)
			continue;
		ti = &t->v[t->n++];
		info_of(d, ti);
		if (!ti->schema || !ti->description) {
			lev_tools_free(t);
			return lev_err_set(err, -EINVAL, "tool '%s' has no schema", d->name);
		}
		r = lev_argcheck_schema(ti->schema, err);
		if (r < 0) {
			lev_err_wrap(err, "tool '%s'", d->name);
			lev_tools_free(t);
			return r;
		}
	}
	*out = t;
	return 0;
}

struct lev_tools *lev_tools_free(struct lev_tools *t)
{
	if (!t)
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		json_decref(t->v[i].schema);
	free(t->v);
	free(t);
	return NULL;
}

const struct lev_tool_info *lev_tools_find(const struct lev_tools *t, const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		if (!strcmp(t->v[i].name, name))
			return &t->v[i];
		for (const char *const *al = t->v[i].aliases; al && *al; al++)
			if (!strcmp(*al, name))
				return &t->v[i];
	}
	return NULL;
}

int lev_tools_add(struct lev_tools *t, const struct lev_tool_info *entry, struct lev_err *err)
{
	int r;

	if (!entry || !entry->name || !entry->schema || !entry->description)
		return lev_err_set(err, -EINVAL, "a tool entry needs a name, a description and a "
				   "schema");
	if (lev_tools_find(t, entry->name))
		return lev_err_set(err, -EEXIST, "tool '%s' exists already", entry->name);
	for (const char *const *al = entry->aliases; al && *al; al++)
		if (lev_tools_find(t, *al))
			return lev_err_set(err, -EEXIST, "tool name '%s' is taken", *al);
	r = lev_argcheck_schema(entry->schema, err);
	if (r < 0)
		return lev_err_wrap(err, "tool '%s'", entry->name);
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->v = xreallocarray(t->v, t->cap, sizeof(*t->v));
	}
	t->v[t->n] = *entry;
	json_incref(t->v[t->n].schema);
	t->n++;
	return 0;
}

size_t lev_tools_count(const struct lev_tools *t)
{
	return t->n;
}

const struct lev_tool_info *lev_tools_at(const struct lev_tools *t, size_t i)
{
	return i < t->n ? &t->v[i] : NULL;
}

void lev_tools_offer(const struct lev_tools *t, char *const *names, struct lev_infer_request *req)
{
	for (size_t i = 0; names && names[i]; i++) {
		const struct lev_tool_info *ti = lev_tools_find(t, names[i]);

		if (ti)
			lev_request_add_tool(req, ti->name, ti->description, ti->schema);
	}
}

/* ---- outputs ------------------------------------------------------------ */

void lev_tool_output_release(struct lev_tool_output *o)
{
	free(o->text);
	memset(o, 0, sizeof(*o));
}

void lev_tool_output_set(struct lev_tool_output *o, const char *text, bool is_error)
{
	free(o->text);
	o->text = xstrdup(text);
	o->len = strlen(o->text);
	o->is_error = is_error;
}

/* ---- shell -------------------------------------------------------------- */

char **lev_shell_argv(enum lev_sandbox_kind kind, const char *command)
{
	const char *sh = "/bin/sh";
	char **v = NULL;

	if (kind != LEV_SANDBOX_CONTAINER && access("/bin/bash", X_OK) == 0)
		sh = "/bin/bash";
	else if (kind == LEV_SANDBOX_CONTAINER)
		sh = "sh";
	v = lev_strv_push(v, sh);
	v = lev_strv_push(v, "-c");
	v = lev_strv_push(v, command);
	return v;
}

/* Append LEN bytes of a stream, with its truncation note. */
static void add_stream(struct lev_buf *b, const char *s, size_t len, bool truncated,
		       uint64_t total)
{
	if (s && len)
		(void)lev_buf_add(b, s, len);
	if (truncated)
		(void)lev_buf_addf(b, "%s[output truncated: %zu of %llu bytes shown]",
				   len && s[len - 1] != '\n' ? "\n" : "", len,
				   (unsigned long long)total);
}

void lev_shell_format(const char *command, const struct lev_sandbox_result *res,
		      uint64_t timeout_ms, struct lev_tool_output *out)
{
	struct lev_buf b = LEV_BUF_INIT;
	bool failed = res->exit_code != 0 || res->signaled || res->timed_out || res->cancelled ||
		      res->exec_errno;

	if (res->timed_out) {
		/* the timeout the sandbox enforced, whoever chose it */
		uint64_t ms = res->timeout_ms ? res->timeout_ms
				: timeout_ms ? timeout_ms : LEV_SANDBOX_DEFAULT_TIMEOUT_MS;
		uint64_t secs = (ms + 999) / 1000;

		(void)lev_buf_addf(&b, "[timed out] Command exceeded %llus: %s",
				   (unsigned long long)secs, command);
	} else if (res->cancelled) {
		(void)lev_buf_addf(&b, "[cancelled] the run was interrupted: %s", command);
	} else if (res->exec_errno) {
		(void)lev_buf_addf(&b, "[exit code %d] cannot run the shell: %s", res->exit_code,
				   strerror(res->exec_errno));
	} else if (failed) {
		(void)lev_buf_addf(&b, "[exit code %d]", res->exit_code);
	}

	if (!failed) {
		if (res->out_len || res->out_truncated)
			add_stream(&b, res->out, res->out_len, res->out_truncated, res->out_total);
		if (res->err_len || res->err_truncated) {
			if (b.len && b.buf[b.len - 1] != '\n')
				(void)lev_buf_addch(&b, '\n');
			(void)lev_buf_adds(&b, "stderr:\n");
			add_stream(&b, res->err, res->err_len, res->err_truncated, res->err_total);
		}
		if (!b.len)
			(void)lev_buf_adds(&b, "(command succeeded with no output)");
	} else if (res->out_len || res->err_len || res->out_truncated || res->err_truncated ||
		   !res->timed_out) {
		(void)lev_buf_adds(&b, "\nstdout:\n");
		add_stream(&b, res->out, res->out_len, res->out_truncated, res->out_total);
		if (b.buf[b.len - 1] != '\n')
			(void)lev_buf_addch(&b, '\n');
		(void)lev_buf_adds(&b, "stderr:\n");
		add_stream(&b, res->err, res->err_len, res->err_truncated, res->err_total);
	}
	lev_tool_output_release(out);
	out->text = lev_buf_detach(&b, &out->len);
	out->is_error = failed;
	out->truncated = res->out_truncated || res->err_truncated;
}

int lev_tool_shell(const struct lev_shell_opts *opts, const char *command,
		   struct lev_tool_output *out, struct lev_err *err)
{
	struct lev_sandbox_limits limits = { 0 };
	struct lev_sandbox_io io = LEV_SANDBOX_IO_CAPTURE;
	struct lev_sandbox_result res = { 0 };
	struct lev_sandbox_proc *p = NULL;
	struct lev_err e = LEV_ERR_INIT;
	char **argv, **genv = NULL;
	int r;

	if (!opts || !opts->sandbox || !command)
		return lev_err_set(err, -EINVAL, "the shell tool needs a sandbox and a command");
	limits.timeout_ms = opts->timeout_ms;
	limits.output_max = opts->output_max;
	limits.read_fence = opts->read_fence;
	limits.host_fence = true;	/* kind none: every shell line runs fenced */
	limits.protect = opts->protect;
	io.cancel_fd = opts->cancel_fd;
	argv = lev_shell_argv(lev_sandbox_kind(opts->sandbox), command);
	if (opts->git_hooks_off) {
		for (size_t i = 0; opts->envp && opts->envp[i]; i++)
			if (strncmp(opts->envp[i], "GIT_CONFIG_PARAMETERS=", 22) != 0)
				genv = lev_strv_push(genv, opts->envp[i]);
		genv = lev_strv_push(genv, LEV_SHELL_GIT_SAFE_ENV);
	}
	r = lev_sandbox_spawn(opts->sandbox, argv, genv ? genv : opts->envp, opts->cwd,
			      &limits,
			      &io, &p, &e);
	lev_strv_free(argv);
	lev_strv_free(genv);
	if (r == 0)
		r = lev_sandbox_wait(p, &res, &e);
	lev_sandbox_proc_free(p);
	if (r < 0) {
		struct lev_buf b = LEV_BUF_INIT;

		(void)lev_buf_addf(&b, "[error] the command could not run in its sandbox: %s",
				   e.msg[0] ? e.msg : strerror(-r));
		lev_tool_output_release(out);
		out->text = lev_buf_detach(&b, &out->len);
		out->is_error = true;
		return 0;
	}
	lev_shell_format(command, &res, opts->timeout_ms, out);
	lev_sandbox_result_release(&res);
	return 0;
}
