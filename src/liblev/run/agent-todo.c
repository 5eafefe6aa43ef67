/*
 * agent-todo.c - the tools that manage context the model chose to keep:
 * context_delete, and Leviath's checklist tools todo_add, todo_done and
 * todo_note (docs/context.md).
 *
 * A checklist is run-local state: its items live here, and each change
 * rewrites the region as one block, open items first, through
 * lev_context_write_note(), so the block is model-written text labelled at
 * least as high as what it replaces and the taint that was live (ticking an
 * item off never lowers a label).  Ids count up from 1 and are never reused,
 * so a todo_done cannot land on another item than the one it names.
 */
#include <errno.h>
#include <string.h>

#include "liblev/run/agent-internal.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/context.h"

#define TODO_MAX 500		/* items in one run */
#define TODO_NOTES_MAX 20	/* notes on one item */

struct todo {
	uint64_t id;
	char *region;
	char *text;
	char **notes;
	bool done;
};

struct agent_todos {
	struct todo *v;
	size_t n;
	uint64_t next_id;
};

void agent_todos_free(struct lev_agent *a)
{
	struct agent_todos *t = a->todos;

	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].region);
		free(t->v[i].text);
		lev_strv_free(t->v[i].notes);
	}
	free(t->v);
	free(t);
	a->todos = NULL;
}

static void render_items(const struct agent_todos *t, const char *region, bool done,
			 struct lev_buf *b)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct todo *it = &t->v[i];

		if (it->done != done || strcmp(it->region, region))
			continue;
		(void)lev_buf_addf(b, "- [%c] #%llu %s\n", done ? 'x' : ' ',
				   (unsigned long long)it->id, it->text);
		for (char **n = it->notes; n && *n; n++)
			(void)lev_buf_addf(b, "  note: %s\n", *n);
	}
}

/* Rewrite REGION (index IDX) from the items: open first, then done. */
static int render(struct lev_agent *a, const char *region, size_t idx, struct lev_err *err)
{
	struct lev_buf b = LEV_BUF_INIT;
	int r;

	render_items(a->todos, region, false, &b);
	render_items(a->todos, region, true, &b);
	r = lev_context_write_note(a->ctx, idx, b.buf ? b.buf : "", b.len, a->seen, err);
	lev_buf_release(&b);
	return r;
}

static struct todo *find_item(struct agent_todos *t, const char *region, json_int_t id)
{
	for (size_t i = 0; t && i < t->n; i++)
		if ((json_int_t)t->v[i].id == id && !strcmp(t->v[i].region, region))
			return &t->v[i];
	return NULL;
}

/* An error result: sets *IS_ERROR and passes MSG on. */
static char *fail(bool *is_error, char *msg)
{
	*is_error = true;
	return msg;
}

static char *todo_run(struct lev_agent *a, enum lev_tool_op op, const char *region, size_t idx,
		      const json_t *args, bool *is_error)
{
	struct lev_err err = LEV_ERR_INIT;
	json_int_t id = json_integer_value(json_object_get(args, "id"));
	enum lev_region_kind k = lev_context_region_kind(a->ctx, idx);
	struct todo *it;

	if (idx == lev_context_conversation(a->ctx) || k == LEV_REGION_PINNED ||
	    k == LEV_REGION_SLIDING_WINDOW)
		return fail(is_error, xasprintf("[error] region '%s' cannot hold a checklist: "
						"use a region of kind \"checklist\" (or "
						"clearable)",
						region));
	if (!a->todos)
		a->todos = xcalloc(1, sizeof(*a->todos));
	if (op == LEV_OP_TODO_ADD) {
		const char *text = agent_arg_str(args, "item");

		if (a->todos->n >= TODO_MAX)
			return fail(is_error, xasprintf("[error] this run has %d checklist items "
							"already", TODO_MAX));
		a->todos->v = xreallocarray(a->todos->v, a->todos->n + 1, sizeof(*a->todos->v));
		it = &a->todos->v[a->todos->n++];
		memset(it, 0, sizeof(*it));
		it->id = ++a->todos->next_id;
		it->region = xstrdup(region);
		it->text = xstrdup(text ? text : "");
	} else {
		it = find_item(a->todos, region, id);
		if (!it)
			return fail(is_error, xasprintf("[error] region '%s' has no checklist item "
							"#%lld", region, (long long)id));
		if (op == LEV_OP_TODO_DONE) {
			it->done = true;
		} else {
			const char *note = agent_arg_str(args, "note");

			if (lev_strv_len(it->notes) >= TODO_NOTES_MAX)
				return fail(is_error, xasprintf("[error] item #%lld has %d notes "
								"already", (long long)id,
								TODO_NOTES_MAX));
			it->notes = lev_strv_push(it->notes, note ? note : "");
		}
	}
	if (render(a, region, idx, &err) < 0)
		return fail(is_error, xasprintf("[error] %s", err.msg));
	if (op == LEV_OP_TODO_ADD)
		return xasprintf("[ok] item #%llu added to '%s'", (unsigned long long)it->id,
				 region);
	return xasprintf("[ok] item #%llu %s", (unsigned long long)it->id,
			 op == LEV_OP_TODO_DONE ? "is done" : "has the note");
}

static char *delete_run(struct lev_agent *a, const char *region, size_t idx, const json_t *args,
			bool *is_error)
{
	struct lev_err err = LEV_ERR_INIT;
	const json_t *index = json_object_get(args, "index");
	const json_t *oldest = json_object_get(args, "oldest");
	size_t n = lev_context_region_items(a->ctx, idx);
	uint64_t tokens = 0;
	int r;

	const char *key = agent_arg_str(args, "key");
	ssize_t at = key ? lev_context_keyed_index(a->ctx, idx, key) : -1;

	*is_error = true;
	if (!!key + !!index + !!oldest > 1)
		return xasprintf("[error] give one of 'key', 'index' or 'oldest'");
	if (key && at < 0)
		return xasprintf("[error] region '%s' has no entry keyed '%s'", region, key);
	if (!key && !index && !oldest &&
	    lev_context_region_kind(a->ctx, idx) != LEV_REGION_CLEARABLE)
		return xasprintf("[error] region '%s' is not clearable: name an entry by 'index' "
				 "or release the 'oldest' N",
				 region);
	r = lev_context_delete(a->ctx, idx,
			       key ? (size_t)at : index ? (size_t)json_integer_value(index) : 0,
			       key || index ? 1 : oldest ? (size_t)json_integer_value(oldest) : n,
			       &tokens, &err);
	if (r < 0)
		return xasprintf("[error] %s", err.msg);
	*is_error = false;
	return xasprintf("[ok] released %d entr%s of '%s' (about %llu tokens)", r,
			 r == 1 ? "y" : "ies", region, (unsigned long long)tokens);
}

bool agent_run_todo(struct lev_agent *a, enum lev_tool_op op, const json_t *args,
		    struct lev_tool_output *out)
{
	const char *region = agent_arg_str(args, "region");
	int idx;
	bool is_error = false;
	_cleanup_free_ char *text = NULL;

	if (op != LEV_OP_CONTEXT_DELETE && op != LEV_OP_TODO_ADD && op != LEV_OP_TODO_DONE &&
	    op != LEV_OP_TODO_NOTE)
		return false;
	idx = region ? lev_context_region_find_shown(a->ctx, region) : -ENOENT;
	if (idx < 0) {
		text = xasprintf("[error] there is no context region '%s'", region ? region : "");
		is_error = true;
	} else if (op == LEV_OP_CONTEXT_DELETE) {
		text = delete_run(a, region, (size_t)idx, args, &is_error);
	} else {
		text = todo_run(a, op, region, (size_t)idx, args, &is_error);
	}
	lev_tool_output_set(out, text, is_error);
	return true;
}
