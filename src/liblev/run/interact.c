/*
 * interact.c - a stage's interaction points (Leviath's checkpoints): asked
 * at the stage's end, every time, before it may move on, through the same
 * question path as the ask_user_* tools (agent_question(): the terminal in
 * the foreground, `lev respond` for a daemon run).  An answer in
 * abort_options cancels the run, one in edit_options lets the person
 * replace the stage's output, a directive's key sends its text to the model
 * and runs the stage again; any other answer approves.  What the person
 * said lands in the context as their own (trusted) text, and in the run
 * record.
 */
#include "liblev/run/agent-internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/context.h"

#define REVISION_ROUNDS_MAX 4	/* Leviath's MAX_REVISION_ROUNDS, per stage visit */
#define DOCUMENT_SHOWN_MAX ((size_t)16 << 10)

/* Leviath's match: exact, else ignoring case, dashes, underscores and whitespace. */
static bool same_option(const char *a, const char *b)
{
	if (!strcmp(a, b))
		return true;
	for (;;) {
		while (*a && (isspace((unsigned char)*a) || *a == '-' || *a == '_'))
			a++;
		while (*b && (isspace((unsigned char)*b) || *b == '-' || *b == '_'))
			b++;
		if (!*a || !*b)
			return !*a && !*b;
		if (tolower((unsigned char)*a++) != tolower((unsigned char)*b++))
			return false;
	}
}

static int option_in(char *const *list, const char *answer)
{
	for (size_t i = 0; list && list[i]; i++)
		if (same_option(list[i], answer))
			return (int)i;
	return -1;
}

static void point_event(struct lev_agent *a, const char *name, const char *answer, bool automatic,
			const char *outcome)
{
	json_t *ev = agent_event_new("interaction");

	json_object_set_new(ev, "stage", agent_jtext(a->stages[a->cur].st->name));
	json_object_set_new(ev, "point", agent_jtext(name));
	json_object_set_new(ev, "answer", agent_jtext(answer));
	json_object_set_new(ev, "automatic", json_boolean(automatic));
	json_object_set_new(ev, "outcome", json_string(outcome));
	agent_emit(a, ev);
}

/* The person's words, into the conversation as their own text. */
static void user_text(struct lev_agent *a, const char *text)
{
	struct lev_err err = LEV_ERR_INIT;

	if (lev_context_add_text(a->ctx, lev_context_conversation(a->ctx), text, strlen(text),
				 LEV_PUBLIC, &err) < 0 &&
	    !a->internal_error)
		a->internal_error = xasprintf("cannot add an answer to the context: %s", err.msg);
}

static char *document(struct lev_agent *a, const struct lev_interaction_point *ip)
{
	int r = ip->document_region ? lev_context_region_find(a->ctx, ip->document_region) : -1;
	char *t = r >= 0 ? lev_context_region_text(a->ctx, (size_t)r) : NULL;

	if (a->stage_output && a->stage_output[0]) {
		free(t);
		t = xstrdup(a->stage_output);
	}
	if (t && strlen(t) > DOCUMENT_SHOWN_MAX)
		t[DOCUMENT_SHOWN_MAX] = '\0';
	return t;
}

/* Ask IP; *answer is NULL when nobody answered. Returns -1 when asking was impossible. */
static int ask_point(struct lev_agent *a, const struct lev_interaction_point *ip,
		     const char *name, enum lev_question_kind kind, const char *text,
		     char **answer)
{
	struct lev_question q = {
		.kind = kind,
		.stage = a->stages[a->cur].st->name,
		.call_id = name,
		.question = text,
		.choices = kind == LEV_QUESTION_CHOICE ? ip->options : NULL,
		.checkpoint = true,
	};

	*answer = NULL;
	return agent_question(a, &q, answer);
}

/* The edit: the person's text replaces the stage's output. */
static void edit(struct lev_agent *a, const struct lev_interaction_point *ip, const char *name)
{
	_cleanup_free_ char *doc = document(a, ip);
	_cleanup_free_ char *q = xasprintf("Edit the output of stage '%s'; your text replaces it."
					   "\n\n%s", a->stages[a->cur].st->name, doc ? doc : "");
	_cleanup_free_ char *text = NULL;

	if (ask_point(a, ip, name, LEV_QUESTION_TEXT, q, &text) < 0 || !text) {
		point_event(a, name, NULL, false, "edit_unanswered");
		return;
	}
	free(a->stage_output);
	a->stage_output = xstrdup(text);
	point_event(a, name, text, false, "edited");
}

static enum lev_question_kind kind_of(const struct lev_interaction_point *ip)
{
	if (ip->style == LEV_IP_CONFIRM)
		return LEV_QUESTION_CONFIRM;
	if (ip->style == LEV_IP_MULTIPLE_CHOICE || lev_strv_len(ip->options) >= 2)
		return LEV_QUESTION_CHOICE;
	return LEV_QUESTION_TEXT;
}

/* Nobody is there to answer: auto_approve takes the first option, ask fails the run. */
static enum flow_verdict unattended(struct lev_agent *a, const struct lev_interaction_point *ip,
				    const char *name)
{
	const char *first = ip->options && ip->options[0] ? ip->options[0]
			    : ip->style == LEV_IP_CONFIRM  ? "yes"
							   : "";

	if (ip->unattended_ask || ip->required) {
		free(a->flow.fail_why);
		a->flow.fail_why = xasprintf("stage '%s': interaction point '%s' needs an answer "
					     "and nobody can give one in this run",
					     a->stages[a->cur].st->name, name);
		point_event(a, name, NULL, true, "unanswered");
		return FLOW_FAIL;
	}
	point_event(a, name, first, true, "auto_approved");
	return FLOW_END;
}

/* One point: FLOW_END when it is satisfied. */
static enum flow_verdict one_point(struct lev_agent *a, const struct lev_interaction_point *ip,
				   const char *name)
{
	const struct lev_stage *st = a->stages[a->cur].st;
	enum lev_question_kind kind = kind_of(ip);
	bool nobody = !a->o.hooks.question || (a->o.yolo && !ip->unattended_ask);

	if (nobody)
		return unattended(a, ip, name);
	for (unsigned round = 0;; round++) {
		/* the document as it is now: an edit shows in the next question */
		_cleanup_free_ char *doc = document(a, ip);
		_cleanup_free_ char *q = xasprintf("%s%s%s", ip->prompt ? ip->prompt
								   : "Approve the output of this stage?",
						   doc && doc[0] ? "\n\n" : "", doc ? doc : "");
		_cleanup_free_ char *answer = NULL;
		int d;

		if (ask_point(a, ip, name, kind, q, &answer) < 0 || !answer) {
			if (ip->unattended_ask || ip->required)
				return unattended(a, ip, name);
			point_event(a, name, NULL, false, "no_answer");
			return FLOW_END;
		}
		if (option_in(ip->abort_options, answer) >= 0) {
			point_event(a, name, answer, false, "aborted");
			free(a->flow.abort_why);
			a->flow.abort_why = xasprintf("aborted at interaction point '%s' of stage "
						      "'%s' ('%s')", name, st->name, answer);
			return FLOW_ABORT;
		}
		if (option_in(ip->edit_options, answer) >= 0 && round < REVISION_ROUNDS_MAX) {
			edit(a, ip, name);
			continue;	/* and asked once more */
		}
		{
			_cleanup_free_ char *said = xasprintf("The user answered '%s' at the "
							      "checkpoint '%s'.", answer, name);

			user_text(a, said);
		}
		d = option_in(ip->directive_keys, answer);
		if (d < 0 && kind == LEV_QUESTION_CONFIRM && same_option(answer, "no"))
			d = -2;
		if (d != -1 && a->flow.ip_rounds < REVISION_ROUNDS_MAX) {
			a->flow.ip_rounds++;
			user_text(a, d >= 0 ? ip->directive_texts[d]
					    : "The user did not approve. Revise the work, then "
					      "finish the stage again.");
			point_event(a, name, answer, false, "revise");
			return FLOW_GO_ON;
		}
		d = option_in(ip->followup_keys, answer);
		{
			char *extra = xasprintf("%s%sAt the checkpoint '%s' the user answered '%s'."
						"%s%s",
						a->flow.handoff_extra ? a->flow.handoff_extra : "",
						a->flow.handoff_extra ? "\n" : "", name, answer,
						d >= 0 ? " " : "", d >= 0 ? ip->followup_texts[d] : "");

			free(a->flow.handoff_extra);
			a->flow.handoff_extra = extra;
		}
		point_event(a, name, answer, false, "approved");
		return FLOW_END;
	}
}

enum flow_verdict agent_interact_points(struct lev_agent *a)
{
	const struct lev_stage *st = a->stages[a->cur].st;

	for (size_t i = 0; i < st->n_points; i++) {
		_cleanup_free_ char *name = st->points[i].name ? xstrdup(st->points[i].name)
							       : xasprintf("point %zu", i + 1);
		enum flow_verdict v = one_point(a, &st->points[i], name);

		if (v != FLOW_END)
			return v;
	}
	return FLOW_END;
}

/* ---- present_for_review, edit_document ------------------------------------ */

/* The stage's document region: the first interaction point's, or NULL. */
static const struct lev_interaction_point *doc_point(const struct lev_agent *a)
{
	const struct lev_stage *st = a->stages[a->cur].st;

	for (size_t i = 0; i < st->n_points; i++)
		if (st->points[i].document_region)
			return &st->points[i];
	return st->n_points ? &st->points[0] : NULL;
}

static char *region_doc(struct lev_agent *a, const char *region)
{
	int r = region ? lev_context_region_find(a->ctx, region) : -1;

	return r >= 0 ? lev_context_region_text(a->ctx, (size_t)r) : NULL;
}

/* The person's text replaces the document region's (through the note path: labelled). */
static void replace_region(struct lev_agent *a, const char *region, const char *text)
{
	struct lev_err err = LEV_ERR_INIT;
	int r = region ? lev_context_region_find(a->ctx, region) : -1;

	if (r >= 0 && lev_context_write_note(a->ctx, (size_t)r, text, strlen(text), a->seen,
					     &err) < 0)
		agent_warn(a, "region '%s' keeps its text: %s", region, err.msg);
}

/* The review's words when the stage's points name none (writable: lev_question's type). */
static char w_approve[] = "Approve", w_edit[] = "Edit", w_abort[] = "Abort";
static char *const review_opts[] = { w_approve, w_edit, w_abort, NULL };
static char *const review_edit[] = { w_edit, NULL };
static char *const review_abort[] = { w_abort, NULL };

static void review(struct lev_agent *a, const json_t *args, struct lev_tool_output *out)
{
	const struct lev_interaction_point *ip = doc_point(a);
	const char *region = ip ? ip->document_region : NULL;
	const char *md = agent_arg_str(args, "markdown");
	_cleanup_free_ char *doc = md && md[0] ? xstrdup(md) : region_doc(a, region);
	char *const *opts = ip && lev_strv_len(ip->options) >= 2 ? ip->options : review_opts;
	char *const *edits = ip && ip->edit_options ? ip->edit_options : review_edit;
	char *const *aborts = ip && ip->abort_options ? ip->abort_options : review_abort;
	const char *title = agent_arg_str(args, "title");
	_cleanup_free_ char *q = xasprintf("%s\n\n%s", title ? title : "Review", doc ? doc : "");
	struct lev_question qq = { .kind = LEV_QUESTION_CHOICE,
				   .stage = a->stages[a->cur].st->name,
				   .call_id = lev_tooltable_name(LEV_OP_PRESENT_FOR_REVIEW),
				   .question = q, .choices = opts };
	_cleanup_free_ char *answer = NULL, *text = NULL;

	if (agent_question(a, &qq, &answer) < 0 || !answer) {
		lev_tool_output_set(out, "[no answer] Nobody reviewed the document. Go on.", true);
		return;
	}
	point_event(a, lev_tooltable_name(LEV_OP_PRESENT_FOR_REVIEW), answer, false, "answered");
	if (option_in(aborts, answer) >= 0) {
		free(a->flow.abort_why);
		a->flow.abort_why = xasprintf("aborted at the review in stage '%s' ('%s')",
					      a->stages[a->cur].st->name, answer);
		a->stage_done = true;
		lev_tool_output_set(out, "[aborted] The user aborted the run.", true);
		return;
	}
	if (option_in(edits, answer) >= 0) {
		qq.kind = LEV_QUESTION_TEXT;
		qq.choices = NULL;
		free(q);
		q = xasprintf("Edit the document; your text replaces it.\n\n%s", doc ? doc : "");
		qq.question = q;
		if (agent_question(a, &qq, &text) == 0 && text) {
			_cleanup_free_ char *res = xasprintf("The user edited the document. It is "
							     "now:\n\n%s", text);

			replace_region(a, region, text);
			lev_tool_output_set(out, res, false);
			return;
		}
	}
	text = xasprintf("The user answered '%s'.", answer);
	lev_tool_output_set(out, text, false);
}

static void edit_doc(struct lev_agent *a, const json_t *args, struct lev_tool_output *out)
{
	const char *content = agent_arg_str(args, "content");
	const char *title = agent_arg_str(args, "title");
	_cleanup_free_ char *q = xasprintf("%s (your text replaces it)\n\n%s",
					   title ? title : "Edit this document",
					   content ? content : "");
	struct lev_question qq = { .kind = LEV_QUESTION_TEXT, .stage = a->stages[a->cur].st->name,
				   .call_id = lev_tooltable_name(LEV_OP_EDIT_DOCUMENT),
				   .question = q };
	_cleanup_free_ char *text = NULL;

	if (agent_question(a, &qq, &text) < 0 || !text) {
		lev_tool_output_set(out, "[no answer] The user did not edit the document.", true);
		return;
	}
	point_event(a, lev_tooltable_name(LEV_OP_EDIT_DOCUMENT), NULL, false, "edited");
	lev_tool_output_set(out, text, false);
}

bool agent_interact_tool(struct lev_agent *a, enum lev_tool_op op, const json_t *args,
			 struct lev_tool_output *out)
{
	if (op == LEV_OP_PRESENT_FOR_REVIEW)
		review(a, args, out);
	else if (op == LEV_OP_EDIT_DOCUMENT)
		edit_doc(a, args, out);
	else
		return false;
	return true;
}
