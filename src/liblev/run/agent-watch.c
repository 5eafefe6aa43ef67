/*
 * agent-watch.c - what the run notices about the model's calls:
 * [repetition_detection] (the same call back to back, or a streak of
 * read-only calls, gets a "[System]" note in the conversation, as in
 * Leviath; it nudges and never stops the run) and [context.file_tracking]
 * (the files read and written, listed once each in a region).
 *
 * Notes wait for the end of the turn (agent_watch_turn_end()): a user turn
 * in the middle of a turn's results would separate them from their calls.
 */
#include <string.h>

#include "liblev/run/agent-internal.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/context.h"
#include "liblev/tools/tools.h"

#define TRACKED_MAX 1000	/* files listed in one run */

struct agent_watch {
	char *last;		/* the previous call: "tool\nargs" */
	unsigned repeats;	/* calls equal to `last`, back to back */
	unsigned streak;	/* read-only calls since something changed */
	char **notes;		/* for the end of the turn */
	char **tracked;		/* "read\npath" / "wrote\npath" already listed */
};

void agent_watch_free(struct lev_agent *a)
{
	struct agent_watch *w = a->watch;

	if (!w)
		return;
	free(w->last);
	lev_strv_free(w->notes);
	lev_strv_free(w->tracked);
	free(w);
	a->watch = NULL;
}

static void repetition(struct lev_agent *a, struct agent_watch *w, const struct lev_tool_call *call,
		       const struct lev_tool_info *ti)
{
	const struct lev_repetition *rd = &a->bp->repetition;
	_cleanup_free_ char *sig = xasprintf("%s\n%s", call->name ? call->name : "",
					     call->raw_arguments ? call->raw_arguments : "");

	if (w->last && !strcmp(w->last, sig)) {
		w->repeats++;
	} else {
		free(w->last);
		w->last = TAKE_PTR(sig);
		w->repeats = 1;
	}
	if (w->repeats >= rd->max_repeat_calls) {
		w->notes = lev_strv_push_take(
			w->notes, xasprintf("[System] You have made the same call ('%s', same "
					    "arguments) %u times in a row. Its result will not "
					    "change: try something else.",
					    call->name, w->repeats));
		w->repeats = 0;
		a->repetition_hits++;
	}
	w->streak = lev_tool_read_only(ti) ? w->streak + 1 : 0;
	if (w->streak >= rd->max_readonly_streak) {
		w->notes = lev_strv_push_take(
			w->notes, xasprintf("[System] You have made %u read-only calls in a row "
					    "without changing anything. Decide what to do with "
					    "what you have read, and act on it.",
					    w->streak));
		w->streak = 0;
		a->repetition_hits++;
	}
}

/* One line "read: PATH" / "wrote: PATH" in the tracking region, once per file. */
static void track(struct lev_agent *a, struct agent_watch *w, const char *verb, const char *path)
{
	const struct lev_file_tracking *ft = &a->bp->file_tracking;
	int idx = lev_context_region_find(a->ctx, ft->region);
	_cleanup_free_ char *key = xasprintf("%s\n%s", verb, path);
	_cleanup_free_ char *line = NULL;
	struct lev_err err = LEV_ERR_INIT;

	if (idx < 0 || lev_strv_contains(w->tracked, key) ||
	    lev_strv_len(w->tracked) >= TRACKED_MAX)
		return;
	line = xasprintf("%s: %s", verb, path);
	/* the path is the model's words: it carries the taint it was written under */
	if (lev_context_add_text(a->ctx, (size_t)idx, line, strlen(line), a->seen, &err) == 0)
		w->tracked = lev_strv_push(w->tracked, key);
}

static void file_tracking(struct lev_agent *a, struct agent_watch *w,
			  const struct lev_tool_info *ti, const json_t *args)
{
	const struct lev_file_tracking *ft = &a->bp->file_tracking;
	bool reads = ti->op == LEV_OP_READ_FILE || ti->op == LEV_OP_READ_FILES;
	bool writes = ti->op == LEV_OP_WRITE_FILE || ti->op == LEV_OP_EDIT_FILE;
	const char *verb = writes ? "wrote" : "read";
	const json_t *paths = json_object_get(args, "paths");
	const json_t *p;
	size_t i;

	if ((!reads || !ft->track_reads) && (!writes || !ft->track_writes))
		return;
	if (json_is_string(json_object_get(args, "path")))
		track(a, w, verb, json_string_value(json_object_get(args, "path")));
	json_array_foreach(paths, i, p)
		if (json_is_string(p))
			track(a, w, verb, json_string_value(p));
}

void agent_watch_call(struct lev_agent *a, const struct lev_tool_call *call, bool ran,
		      bool failed)
{
	const struct lev_tool_info *ti = lev_tools_find(a->tools, call->name);
	struct agent_watch *w;

	if (!a->bp->repetition.present && !a->bp->file_tracking.present)
		return;
	if (!a->watch)
		a->watch = xcalloc(1, sizeof(*a->watch));
	w = a->watch;
	if (a->bp->repetition.present && a->bp->repetition.enabled)
		repetition(a, w, call, ti);
	if (a->bp->file_tracking.present && ran && !failed && ti && ti->kind == LEV_TOOL_FS)
		file_tracking(a, w, ti, call->arguments);
}

void agent_watch_turn_end(struct lev_agent *a)
{
	struct lev_err err = LEV_ERR_INIT;
	size_t conv;

	if (!a->watch || !a->watch->notes)
		return;
	conv = lev_context_conversation(a->ctx);
	for (char **n = a->watch->notes; *n; n++) {
		agent_warn(a, "repetition: %s", *n + strlen("[System] "));
		(void)lev_context_add_text(a->ctx, conv, *n, strlen(*n), LEV_PUBLIC, &err);
	}
	a->watch->notes = lev_strv_free(a->watch->notes);
}
