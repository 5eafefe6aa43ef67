/*
 * flow.c - how a stage ends and where the run goes next, with Leviath's
 * meaning (docs/blueprint.md, "Stage flow"): the edges the model may choose
 * (the transition tool, or its answer to the transition prompt), the edges
 * the runtime fires (error, max_iterations, stuck, dead_end, always), an
 * edge's gate, required_tools, the nudge, the output spec's check and an
 * edge's transform of the regions.  Every decision is an event in the run
 * record.  agent.c calls in at its hooks; nothing here dispatches a tool.
 */
#include "liblev/run/agent-internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/policy/argcheck.h"
#include "liblev/policy/taint.h"
#include "liblev/run/context.h"

#define CHOICE_ASKS_MAX 3	/* transition prompts before the first edge is taken */
#define REQUIRED_ASKS_MAX 3	/* reminders of required_tools before the stage fails */
#define OUTPUT_ATTEMPTS_MAX 3	/* refused submissions before the stage fails */
#define OUTPUT_NUDGES_MAX 3	/* reminders to submit before the stage ends without output */
#define NUDGE_MAX_DEFAULT 3
#define SUMMARY_MAX_TOKENS 2048

static const char default_nudge[] =
	"[System] You have tools available. Use them to do the work of stage '{stage}' "
	"rather than describing it.";

static struct stage_rt *cur(struct lev_agent *a)
{
	return &a->stages[a->cur];
}

static const struct lev_stage *cur_st(const struct lev_agent *a)
{
	return a->stages[a->cur].st;
}

static int stage_idx(const struct lev_agent *a, const char *name)
{
	for (size_t i = 0; name && i < a->n_stages; i++)
		if (!strcmp(a->stages[i].st->name, name))
			return (int)i;
	return -1;
}

/* Runtime text for the model: a user turn in the conversation. */
static void tell(struct lev_agent *a, const char *text)
{
	struct lev_err err = LEV_ERR_INIT;

	if (lev_context_add_text(a->ctx, lev_context_conversation(a->ctx), text, strlen(text),
				 LEV_PUBLIC, &err) < 0 &&
	    !a->internal_error)
		a->internal_error = xasprintf("cannot add a note to the context: %s", err.msg);
}

static void flow_event(struct lev_agent *a, const char *name, const char *k1, const char *v1,
		       const char *k2, const char *v2)
{
	json_t *ev = agent_event_new(name);

	json_object_set_new(ev, "stage", agent_jtext(cur_st(a)->name));
	if (k1)
		json_object_set_new(ev, k1, agent_jtext(v1));
	if (k2)
		json_object_set_new(ev, k2, agent_jtext(v2));
	agent_emit(a, ev);
}

static char *region_text(struct lev_agent *a, const char *name)
{
	int r = name ? lev_context_region_find(a->ctx, name) : -ENOENT;

	return r < 0 ? NULL : lev_context_region_text(a->ctx, (size_t)r);
}

/* ---- entering and leaving ------------------------------------------------ */

static void reset(struct flow_state *f)
{
	lev_strv_free(f->entry_texts);
	lev_strv_free(f->edit_paths);
	free(f->edit_counts);
	lev_strv_free(f->called);
	free(f->stuck_why);
	free(f->refusals);
	free(f->fail_why);
	free(f->handoff_extra);
	json_decref(f->schema);
	{
		unsigned forced = f->gates_forced;
		char *abort_why = f->abort_why;

		memset(f, 0, sizeof(*f));
		f->gates_forced = forced;
		f->abort_why = abort_why;
	}
	f->chosen = -1;
	f->stuck = -1;
}

void agent_flow_release(struct lev_agent *a)
{
	reset(&a->flow);
	free(a->flow.abort_why);
	a->flow.abort_why = NULL;
}

void agent_flow_enter(struct lev_agent *a)
{
	struct flow_state *f = &a->flow;
	const struct lev_stage *st = cur_st(a);

	reset(f);
	f->start = lev_monotonic_ns();
	f->refusals = xcalloc(st->n_transitions + 1, sizeof(*f->refusals));
	f->entry_texts = xcalloc(st->n_transitions + 1, sizeof(*f->entry_texts));
	for (size_t i = 0; i < st->n_transitions; i++) {
		const char *r = st->transitions[i].gate.require_region_updated;
		char *t = r ? region_text(a, r) : NULL;

		/* "" for no region or an empty one: the list stays NULL-terminated */
		f->entry_texts[i] = t ? t : xstrdup("");
	}
	if (st->output.schema_json) {
		struct lev_err err = LEV_ERR_INIT;

		f->schema = json_loads(st->output.schema_json, 0, NULL);
		f->schema_bad = !f->schema || lev_argcheck_schema(f->schema, &err) < 0;
		if (f->schema_bad)
			agent_warn(a, "stage '%s': its output schema is outside what lev checks (%s); "
				   "every submission is refused", st->name,
				   err.msg[0] ? err.msg : "not JSON");
	}
}

/* An edge the model may take now: not out of revisits. */
static bool edge_open(const struct lev_agent *a, const struct lev_transition *tr)
{
	int i = stage_idx(a, tr->target);
	const struct stage_rt *s = i < 0 ? NULL : &a->stages[i];

	return s && (!s->st->has_max_revisits || s->visits <= s->st->max_revisits);
}

static bool choice_edge(const struct lev_transition *tr)
{
	return tr->when == LEV_WHEN_DONE && !tr->always;
}

static size_t open_choices(const struct lev_agent *a)
{
	const struct lev_stage *st = cur_st(a);
	size_t n = 0;

	for (size_t i = 0; i < st->n_transitions; i++)
		n += choice_edge(&st->transitions[i]) && edge_open(a, &st->transitions[i]);
	return n;
}

static bool has_open_always(const struct lev_agent *a)
{
	const struct lev_stage *st = cur_st(a);

	for (size_t i = 0; i < st->n_transitions; i++)
		if (st->transitions[i].when == LEV_WHEN_DONE && st->transitions[i].always &&
		    edge_open(a, &st->transitions[i]))
			return true;
	return false;
}

/* Does the model pick the edge here (two or more open, or one and DONE)? */
static bool model_chooses(const struct lev_agent *a)
{
	size_t n = open_choices(a);

	return !has_open_always(a) && (n >= 2 || (n == 1 && cur_st(a)->allow_complete));
}

static void list_choices(const struct lev_agent *a, struct lev_buf *b)
{
	const struct lev_stage *st = cur_st(a);

	for (size_t i = 0; i < st->n_transitions; i++) {
		const struct lev_transition *tr = &st->transitions[i];

		if (!choice_edge(tr) || !edge_open(a, tr))
			continue;
		(void)lev_buf_addf(b, "\n- %s", tr->target);
		if (tr->hint)
			(void)lev_buf_addf(b, ": %s", tr->hint);
	}
	if (st->allow_complete)
		(void)lev_buf_adds(b, "\n- DONE: finish the run here");
}

/*
 * The transition tool as this stage offers it: its target an enum of the
 * edges open now (the ones the kick lists), DONE when the stage allows it.
 * With none open the tool keeps its plain schema (an empty enum is no schema).
 */
void agent_flow_offer_schema(const struct lev_agent *a, struct lev_infer_request *req)
{
	const struct lev_stage *st = cur_st(a);

	for (size_t i = 0; i < req->n_tools; i++) {
		struct lev_tool_def *t = &req->tools[i];
		json_t *choices = json_array(), *schema, *target;

		if (!lev_tooltable_is(t->name, LEV_OP_TRANSITION) || !t->parameters) {
			json_decref(choices);
			continue;
		}
		for (size_t j = 0; j < st->n_transitions; j++)
			if (choice_edge(&st->transitions[j]) && edge_open(a, &st->transitions[j]))
				json_array_append_new(choices,
						      json_string(st->transitions[j].target));
		if (st->allow_complete)
			json_array_append_new(choices, json_string("DONE"));
		schema = json_deep_copy(t->parameters);
		target = json_object_get(json_object_get(schema, "properties"), "target");
		if (!json_array_size(choices) || !json_is_object(target)) {
			json_decref(choices);
			json_decref(schema);
			continue;
		}
		json_object_set_new(target, "enum", choices);
		json_decref(t->parameters);
		t->parameters = schema;
	}
}

void agent_flow_kick(struct lev_agent *a, struct lev_buf *kick)
{
	const struct lev_output_spec *o = &cur_st(a)->output;

	if (o->present && (o->format || o->instructions || o->example)) {
		(void)lev_buf_adds(kick, "\n\nThe output governs how your answer is presented:");
		if (o->format)
			(void)lev_buf_addf(kick, "\nFormat: %s", o->format);
		if (o->instructions)
			(void)lev_buf_addf(kick, "\nInstructions: %s", o->instructions);
		if (o->example)
			(void)lev_buf_addf(kick, "\nExample:\n%s", o->example);
	}
	if (model_chooses(a)) {
		(void)lev_buf_addf(kick, "\n\nWhen the stage's work is done, call %s with where to "
					 "go next:", lev_tooltable_name(LEV_OP_TRANSITION));
		list_choices(a, kick);
	}
}

/* ---- counting ------------------------------------------------------------ */

static bool counts_as_modifying(const struct lev_stage *st, const char *tool)
{
	if (lev_tooltable_is(tool, LEV_OP_WRITE_FILE) || lev_tooltable_is(tool, LEV_OP_EDIT_FILE) ||
	    lev_tooltable_is(tool, LEV_OP_SUBMIT_OUTPUT))
		return true;
	for (size_t i = 0; i < st->n_transitions; i++)
		if (lev_strv_contains(st->transitions[i].gate.tools, lev_tool_canonical(tool)))
			return true;
	return false;
}

static void count_edit(struct flow_state *f, const char *path)
{
	size_t n = lev_strv_len(f->edit_paths);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(f->edit_paths[i], path)) {
			f->edit_counts[i]++;
			return;
		}
	if (n >= 1024)
		return;
	f->edit_paths = lev_strv_push(f->edit_paths, path);
	f->edit_counts = xreallocarray(f->edit_counts, n + 1, sizeof(*f->edit_counts));
	f->edit_counts[n] = 1;
}

void agent_flow_after_call(struct lev_agent *a, const struct lev_tool_call *call, bool ok)
{
	struct flow_state *f = &a->flow;
	const char *tool = lev_tool_canonical(call->name);
	const char *path = call->arguments ? agent_arg_str(call->arguments, "path") : NULL;

	f->calls++;
	if (ok && counts_as_modifying(cur_st(a), tool))
		f->mods++;
	if (ok && !lev_strv_contains(f->called, tool))
		f->called = lev_strv_push(f->called, tool);
	if ((lev_tooltable_is(tool, LEV_OP_WRITE_FILE) || lev_tooltable_is(tool, LEV_OP_EDIT_FILE)) &&
	    path && path[0])
		count_edit(f, path);
}

/* ---- the nudge ----------------------------------------------------------- */

static char *nudge_text(const struct lev_agent *a, const char *tmpl)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(64 << 10);
	struct lev_buf regions = LEV_BUF_INIT;

	for (size_t i = 0; i < a->bp->n_regions; i++)
		if (a->bp->regions[i].required)
			(void)lev_buf_addf(&regions, "%s%s", regions.len ? ", " : "",
					   a->bp->regions[i].name);
	for (const char *p = tmpl; *p; p++) {
		if (!strncmp(p, "{stage}", 7)) {
			(void)lev_buf_adds(&b, cur_st(a)->name);
			p += 6;
		} else if (!strncmp(p, "{regions}", 9)) {
			(void)lev_buf_adds(&b, regions.len ? regions.buf : "");
			p += 8;
		} else {
			(void)lev_buf_add(&b, p, 1);
		}
	}
	lev_buf_release(&regions);
	return lev_buf_detach(&b, NULL);
}

/* Does the stage offer a tool for its work (not only lev's flow tools)? */
static bool has_work_tools(const struct lev_agent *a)
{
	for (char **t = a->stages[a->cur].offered; t && *t; t++)
		if (!lev_tooltable_is(*t, LEV_OP_TRANSITION) &&
		    !lev_tooltable_is(*t, LEV_OP_SUBMIT_OUTPUT))
			return true;
	return false;
}

bool agent_flow_nudge(struct lev_agent *a)
{
	const struct lev_stage *st = cur_st(a);
	const struct lev_nudge *n = &st->nudge;
	const struct lev_nudge *g = &a->cfg->nudge;	/* [nudge] of the config */
	uint64_t max = n->has_max ? n->max : g->has_max ? g->max : NUDGE_MAX_DEFAULT;
	bool on = n->has_enabled ? n->enabled : g->has_enabled ? g->enabled : st->n_points == 0;
	const char *tmpl = n->text ? n->text : g->text ? g->text : default_nudge;
	_cleanup_free_ char *text = NULL;
	char num[24];

	/*
	 * on by default, as in Leviath; a stage offered no tool for its work is
	 * not told to use its tools (it has none), nor is a stage whose output
	 * is reviewed (n_points)
	 */
	if (!on || st->mode != LEV_MODE_AUTONOMOUS || !has_work_tools(a) || a->flow.calls ||
	    a->flow.choosing || a->flow.nudges >= max)
		return false;
	a->flow.nudges++;
	text = nudge_text(a, tmpl);
	tell(a, text);
	snprintf(num, sizeof(num), "%u", a->flow.nudges);
	flow_event(a, "nudge", "text", text, "count", num);
	return true;
}

/*
 * A text-only turn in a stage that owes an output: the model is told to
 * submit it, at most OUTPUT_NUDGES_MAX times a visit (Leviath's output
 * re-entry cap); then the stage ends without one (output_forced), and the
 * run moves on rather than spend every iteration on a model that will not.
 */
void agent_flow_owes_output(struct lev_agent *a)
{
	_cleanup_free_ char *text = NULL;
	char num[24];

	if (a->flow.output_nudges >= OUTPUT_NUDGES_MAX) {
		agent_warn(a, "stage '%s' never submitted its output (%u reminders); it ends "
			   "without one", cur_st(a)->name, a->flow.output_nudges);
		flow_event(a, "output_forced", NULL, NULL, NULL, NULL);
		free(a->stage_output);
		a->stage_output = NULL;
		a->stage_done = true;
		a->stage_end = "output_forced";
		return;
	}
	a->flow.output_nudges++;
	text = xasprintf("[System] This stage is not finished: you have not called %s. Whatever "
			 "you wrote to files or to context is not what the caller receives, only "
			 "the output is. Call %s now with your answer.",
			 lev_tooltable_name(LEV_OP_SUBMIT_OUTPUT),
			 lev_tooltable_name(LEV_OP_SUBMIT_OUTPUT));
	tell(a, text);
	snprintf(num, sizeof(num), "%u", a->flow.output_nudges);
	flow_event(a, "output_nudge", "count", num, NULL, NULL);
}

bool agent_flow_choosing(const struct lev_agent *a)
{
	return a->flow.choosing;
}

/* ---- the output check ---------------------------------------------------- */

int agent_flow_check_output(struct lev_agent *a, const char *text, char **why)
{
	const struct lev_output_spec *o = &cur_st(a)->output;
	struct flow_state *f = &a->flow;
	struct lev_err err = LEV_ERR_INIT;
	json_error_t je;
	json_t *v = NULL;
	int r = 0;

	*why = NULL;
	if (!o->present)
		return 0;
	if (o->format && !strcasecmp(o->format, "json")) {
		v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
		if (!v)
			*why = xasprintf("the output must be JSON (format = \"json\") and does not "
					 "parse: %s at line %d, column %d; submit the JSON alone, "
					 "with no code fence or preamble",
					 je.text, je.line, je.column);
	}
	if (!*why && o->schema_json) {
		if (!v)
			v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
		if (f->schema_bad)
			*why = xstrdup("the stage's output schema is outside what lev can check, so "
				       "no output can pass it (see lev validate)");
		else if (!v)
			*why = xasprintf("the output must be JSON matching the stage's schema and "
					 "does not parse: %s", je.text);
		else if (lev_argcheck_checked(f->schema, v, &err) < 0)
			*why = xasprintf("the output does not match the stage's schema: %s",
					 err.msg);
	}
	json_decref(v);
	if (*why) {
		f->output_attempts++;
		flow_event(a, "output_rejected", "reason", *why, NULL, NULL);
		if (f->output_attempts >= OUTPUT_ATTEMPTS_MAX) {
			free(f->fail_why);
			f->fail_why = xasprintf("stage '%s': the output was refused %u times: %s",
						cur_st(a)->name, f->output_attempts, *why);
		}
		r = -EINVAL;
	}
	return r;
}

/* ---- gates ---------------------------------------------------------------- */

/* A region that does not exist satisfies every gate on it (no work could). */
static bool region_has_content(struct lev_agent *a, const char *name)
{
	_cleanup_free_ char *t = region_text(a, name);

	return lev_context_region_find(a->ctx, name) < 0 || (t && t[strspn(t, " \t\r\n")]);
}

/* Leviath's checklist: an open item is a "[ ]" box. */
static bool region_has_open_items(struct lev_agent *a, const char *name)
{
	_cleanup_free_ char *t = region_text(a, name);

	return t && strstr(t, "[ ]");
}

/* Why edge I's gate does not hold (allocated), or NULL when it holds. */
static char *gate_missing(struct lev_agent *a, size_t i)
{
	const struct lev_transition *tr = &cur_st(a)->transitions[i];
	const struct lev_edge_gate *g = &tr->gate;
	struct lev_buf b = LEV_BUF_INIT_MAX(4096);

	if (!g->present)
		return NULL;
	if (g->require_modifications && !a->flow.mods &&
	    !(g->region && region_has_content(a, g->region)))
		(void)lev_buf_adds(&b, "; no file was modified in this stage");
	for (char **r = g->require_regions; r && *r; r++)
		if (!region_has_content(a, *r))
			(void)lev_buf_addf(&b, "; region '%s' is empty", *r);
	if (g->require_region_updated) {
		_cleanup_free_ char *now = region_text(a, g->require_region_updated);
		const char *then = a->flow.entry_texts[i] ? a->flow.entry_texts[i] : "";

		if (now && !strcmp(now, then))
			(void)lev_buf_addf(&b, "; region '%s' did not change in this stage",
					   g->require_region_updated);
	}
	if (g->require_no_open_items && region_has_open_items(a, g->require_no_open_items))
		(void)lev_buf_addf(&b, "; region '%s' still has open items",
				   g->require_no_open_items);
	if (!b.len) {
		lev_buf_release(&b);
		return NULL;
	}
	return lev_buf_detach(&b, NULL);
}

/*
 * Check edge I's gate before it is taken.  True: take it (it holds, or its
 * max_attempts are spent and it goes through with a warning).  False: it
 * was refused, and *msg (allocated) goes to the model.
 */
static bool gate_pass(struct lev_agent *a, size_t i, char **msg)
{
	const struct lev_transition *tr = &cur_st(a)->transitions[i];
	_cleanup_free_ char *missing = gate_missing(a, i);

	*msg = NULL;
	if (!missing)
		return true;
	if (a->flow.refusals[i] >= tr->gate.max_attempts) {
		a->flow.gates_forced++;
		agent_warn(a, "stage '%s': the gate of the edge to '%s' still does not hold (%s) "
			   "after %u refusals; the edge is taken anyway",
			   cur_st(a)->name, tr->target, missing + 2, a->flow.refusals[i]);
		flow_event(a, "gate_forced", "target", tr->target, "reason", missing + 2);
		return true;
	}
	a->flow.refusals[i]++;
	*msg = tr->gate.message ? xstrdup(tr->gate.message)
				: xasprintf("The move to stage '%s' is refused: %s. Do that work "
					    "first, then finish the stage again.",
					    tr->target, missing + 2);
	flow_event(a, "gate_refused", "target", tr->target, "message", *msg);
	return false;
}

/* ---- the transition tool --------------------------------------------------- */

/* The open choice edge named NAME (any case), or -1; DONE gives -2 when allowed. */
static int find_choice(const struct lev_agent *a, const char *name, size_t len)
{
	const struct lev_stage *st = cur_st(a);

	if (len == 4 && !strncasecmp(name, "DONE", 4) && st->allow_complete)
		return -2;
	for (size_t i = 0; i < st->n_transitions; i++) {
		const struct lev_transition *tr = &st->transitions[i];

		if (choice_edge(tr) && edge_open(a, tr) && strlen(tr->target) == len &&
		    !strncasecmp(tr->target, name, len))
			return (int)i;
	}
	return -1;
}

/* Take choice C (an edge, or -2 for DONE): false when its gate refused it (*msg). */
static bool choose(struct lev_agent *a, int c, const char *how, char **msg)
{
	const struct lev_stage *st = cur_st(a);

	*msg = NULL;
	if (c >= 0 && !gate_pass(a, (size_t)c, msg))
		return false;
	a->flow.chosen = c >= 0 ? c : -1;
	a->flow.complete = c == -2;
	flow_event(a, "transition_chosen", "target", c >= 0 ? st->transitions[c].target : "DONE",
		   "how", how);
	return true;
}

void agent_flow_transition_tool(struct lev_agent *a, const json_t *args,
				struct lev_tool_output *out)
{
	const char *t = agent_arg_str(args, "target");
	int c = t ? find_choice(a, t, strlen(t)) : -1;
	_cleanup_free_ char *msg = NULL;

	if (c == -1) {
		struct lev_buf b = LEV_BUF_INIT_MAX(8192);

		(void)lev_buf_addf(&b, "[error] '%s' is not one of this stage's choices:",
				   t ? t : "");
		list_choices(a, &b);
		lev_tool_output_set(out, b.buf, true);
		lev_buf_release(&b);
		return;
	}
	if (!choose(a, c, "transition tool", &msg)) {
		_cleanup_free_ char *m = xasprintf("[refused] %s", msg);

		lev_tool_output_set(out, m, true);
		return;
	}
	if (!a->stage_output) {
		a->stage_output = xstrdup(a->last_text ? a->last_text : "");
		a->stage_output_label = lev_level_max(a->seen, lev_context_taint_level(a->ctx));
	}
	a->stage_done = true;
	a->stage_end = lev_tooltable_name(LEV_OP_TRANSITION);
	lev_tool_output_set(out, "[ok] the stage ends here.", false);
}

/* ---- stuck triggers ------------------------------------------------------- */

static char *stuck_reason(const struct lev_agent *a, const struct lev_transition *tr)
{
	const struct flow_state *f = &a->flow;
	uint64_t secs;

	if (tr->stuck_iterations && a->iteration >= tr->stuck_iterations)
		return xasprintf("%u inferences in this stage (stuck_after_iterations = %llu)",
				 a->iteration, (unsigned long long)tr->stuck_iterations);
	if (tr->stuck_tool_calls && f->calls >= tr->stuck_tool_calls)
		return xasprintf("%llu tool calls in this stage (stuck_after_tool_calls = %llu)",
				 (unsigned long long)f->calls,
				 (unsigned long long)tr->stuck_tool_calls);
	for (size_t i = 0; tr->stuck_same_file_edits && f->edit_paths && f->edit_paths[i]; i++)
		if (f->edit_counts[i] >= tr->stuck_same_file_edits)
			return xasprintf("'%s' was written or edited %u times "
					 "(stuck_after_same_file_edits = %llu)",
					 f->edit_paths[i], f->edit_counts[i],
					 (unsigned long long)tr->stuck_same_file_edits);
	secs = (lev_monotonic_ns() - f->start) / 1000000000u;
	if (tr->stuck_minutes && secs >= tr->stuck_minutes * 60)
		return xasprintf("%llu minutes in this stage (stuck_after_minutes = %llu)",
				 (unsigned long long)secs / 60, (unsigned long long)tr->stuck_minutes);
	return NULL;
}

bool agent_flow_stuck(struct lev_agent *a, char **why)
{
	const struct lev_stage *st = cur_st(a);

	for (size_t i = 0; i < st->n_transitions; i++) {
		const struct lev_transition *tr = &st->transitions[i];
		char *r;

		if (tr->when != LEV_WHEN_STUCK || !(r = stuck_reason(a, tr)))
			continue;
		a->flow.stuck = (int)i;
		free(a->flow.stuck_why);
		a->flow.stuck_why = r;
		*why = xasprintf("stage '%s' is stuck: %s", st->name, r);
		flow_event(a, "stuck", "target", tr->target, "reason", r);
		return true;
	}
	return false;
}

/* ---- the end of a stage -------------------------------------------------- */

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* LINE (LEN bytes)'s first word that names an open choice or DONE: its choice, or -1. */
static int line_choice(const struct lev_agent *a, const char *line, size_t len)
{
	for (size_t k = 0; k < len;) {
		size_t e = k;
		int c;

		while (e < len && word_char(line[e]))
			e++;
		if (e > k && (c = find_choice(a, line + k, e - k)) != -1)
			return c;
		k = e + 1;
	}
	return -1;
}

static size_t words_in(const char *line, size_t len)
{
	size_t n = 0;

	for (size_t k = 0; k < len; k++)
		n += word_char(line[k]) && (k == 0 || !word_char(line[k - 1]));
	return n;
}

/*
 * The model's answer to the routing request, matched as Leviath matches it:
 * a whole word of its first non-empty line, else of its last one when that
 * is short (3 words at most) and not the first, naming an open choice (or
 * DONE); -1 when none does.  A stage name mentioned in passing in a
 * paragraph does not route the run.
 */
static int parse_choice(const struct lev_agent *a, const char *text)
{
	const char *first = NULL, *last = NULL;
	size_t first_len = 0, last_len = 0;
	int c;

	for (const char *p = text ? text : ""; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		size_t lead = 0;

		while (lead < len && isspace((unsigned char)p[lead]))
			lead++;
		if (lead < len) {
			if (!first) {
				first = p + lead;
				first_len = len - lead;
			} else {
				last = p + lead;
				last_len = len - lead;
			}
		}
		p = nl ? nl + 1 : p + len;
	}
	if (first && (c = line_choice(a, first, first_len)) != -1)
		return c;
	if (last && words_in(last, last_len) <= 3)
		return line_choice(a, last, last_len);
	return -1;
}

static char *missing_required(const struct lev_agent *a)
{
	const struct lev_stage *st = cur_st(a);
	struct lev_buf b = LEV_BUF_INIT_MAX(4096);

	for (char **t = st->required_tools; t && *t; t++)
		if (!lev_strv_contains(a->flow.called, *t))
			(void)lev_buf_addf(&b, "%s%s", b.len ? ", " : "", *t);
	if (!b.len) {
		lev_buf_release(&b);
		return NULL;
	}
	return lev_buf_detach(&b, NULL);
}

/* The edge the runtime takes when the model does not pick: always, else the first open. */
static int default_edge(const struct lev_agent *a)
{
	const struct lev_stage *st = cur_st(a);

	for (size_t i = 0; i < st->n_transitions; i++)
		if (st->transitions[i].when == LEV_WHEN_DONE && st->transitions[i].always &&
		    edge_open(a, &st->transitions[i]))
			return (int)i;
	for (size_t i = 0; i < st->n_transitions; i++)
		if (choice_edge(&st->transitions[i]) && edge_open(a, &st->transitions[i]))
			return (int)i;
	return -1;
}

/* Leviath's transition prompt: the choices, then how to answer. */
static char *choice_prompt(const struct lev_agent *a)
{
	const struct lev_stage *st = cur_st(a);
	struct lev_buf b = LEV_BUF_INIT_MAX(64 << 10);

	if (st->transition_prompt)
		(void)lev_buf_addf(&b, "%s\n\nAvailable transitions:", st->transition_prompt);
	else
		(void)lev_buf_addf(&b, "Stage '%s' is complete. Available next stages:", st->name);
	list_choices(a, &b);
	if (st->allow_complete)
		(void)lev_buf_adds(&b, "\n\nWhich stage should run next? Respond with ONLY the stage "
				       "name, or ONLY the word DONE if no further stage is needed "
				       "and the run should end here.");
	else
		(void)lev_buf_adds(&b, "\n\nWhich stage should run next? Respond with ONLY the stage "
				       "name.");
	return lev_buf_detach(&b, NULL);
}

/* The answer's choice: a transition call's target (a scripted turn), else its text. */
static int answer_choice(const struct lev_agent *a, const struct lev_infer_response *resp,
			 const char **how)
{
	*how = "answer";
	for (size_t i = 0; i < resp->n_calls; i++) {
		const char *t = resp->calls[i].arguments
					? agent_arg_str(resp->calls[i].arguments, "target")
					: NULL;

		if (lev_tooltable_is(resp->calls[i].name, LEV_OP_TRANSITION) && t) {
			*how = "transition tool";
			return find_choice(a, t, strlen(t));
		}
	}
	return parse_choice(a, resp->text);
}

/*
 * Ask for the next stage as Leviath does: the transition prompt joins the
 * conversation, and one request with no tools (at most 256 tokens,
 * temperature 0) answers it; "Transitioning to: ANSWER" is the model's
 * turn.  An answer naming no choice ends the run where the stage may
 * (allow_complete), else takes the first open edge.
 */
static enum flow_verdict ask_choice(struct lev_agent *a, char **msg)
{
	_cleanup_free_ char *prompt = choice_prompt(a);
	_cleanup_free_ char *said = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_infer_request req;
	struct lev_infer_response resp, turn;
	const char *how;
	int r, c;

	a->flow.choice_asks++;
	a->flow.choosing = true;
	tell(a, prompt);
	flow_event(a, "transition_prompt", "text", prompt, NULL, NULL);
	lev_context_set_view(a->ctx, cur_st(a)->has_context ? cur_st(a)->context_regions : NULL);
	lev_request_init(&req);
	lev_context_render(a->ctx, cur_st(a)->system_prompt, &req);
	req.max_tokens = 256;
	req.has_temperature = true;
	req.temperature = 0.0;
	memset(&resp, 0, sizeof(resp));
	r = agent_infer(a, cur(a)->prov, &req, &resp, &err);
	lev_request_release(&req);
	a->flow.choosing = false;
	if (r < 0) {
		free(a->flow.fail_why);
		a->flow.fail_why = xasprintf("stage '%s': the request for the next stage failed: %s",
					     cur_st(a)->name, err.msg);
		return FLOW_FAIL;
	}
	c = answer_choice(a, &resp, &how);
	if (c == -1) {
		how = "default";
		c = cur_st(a)->allow_complete ? -2 : default_edge(a);
	}
	said = xasprintf("Transitioning to: %s", resp.text ? resp.text : "");
	flow_event(a, "transition_answer", "text", resp.text ? resp.text : "", NULL, NULL);
	memset(&turn, 0, sizeof(turn));
	turn.text = said;
	(void)lev_context_add_assistant(a->ctx, &turn, lev_context_taint_level(a->ctx), &err);
	lev_response_release(&resp);
	if (c == -1 || choose(a, c, how, msg))
		return FLOW_END;
	return FLOW_GO_ON;
}

static enum flow_verdict refused(struct lev_agent *a, char *msg)
{
	tell(a, msg);
	free(msg);
	a->flow.choosing = false;
	a->flow.chosen = -1;
	return FLOW_GO_ON;
}

enum flow_verdict agent_flow_may_end(struct lev_agent *a)
{
	struct flow_state *f = &a->flow;
	_cleanup_free_ char *missing = NULL;
	char *msg = NULL;
	int c;

	if (f->abort_why)
		return FLOW_ABORT;
	if (f->fail_why)
		return FLOW_FAIL;
	if ((missing = missing_required(a))) {
		if (f->required_asks >= REQUIRED_ASKS_MAX) {
			f->fail_why = xasprintf("stage '%s' ended without calling its required "
						"tools: %s", cur_st(a)->name, missing);
			return FLOW_FAIL;
		}
		f->required_asks++;
		msg = xasprintf("[System] This stage may not end until you have called: %s.",
				missing);
		flow_event(a, "required_tools_missing", "tools", missing, NULL, NULL);
		f->chosen = -1;
		f->complete = false;
		return refused(a, msg);
	}
	if (!f->points_done && !f->choosing && cur_st(a)->n_points) {
		enum flow_verdict v = agent_interact_points(a);

		if (v != FLOW_END)
			return v;
		f->points_done = true;
	}
	if (f->chosen < 0 && !f->complete && model_chooses(a)) {
		enum flow_verdict v = f->choice_asks < CHOICE_ASKS_MAX ? ask_choice(a, &msg)
									: FLOW_END;

		if (v == FLOW_GO_ON)
			return refused(a, msg);
		if (v != FLOW_END)
			return v;
		if (f->chosen < 0 && !f->complete)
			agent_warn(a, "stage '%s': no next stage after %u requests; the first open "
				   "edge is taken", cur_st(a)->name, f->choice_asks);
	}
	if (f->chosen < 0 && !f->complete && (c = default_edge(a)) >= 0) {
		if (!gate_pass(a, (size_t)c, &msg))
			return refused(a, msg);
		f->chosen = c;
	}
	return FLOW_END;
}

static const struct lev_transition *first_when(const struct lev_stage *st,
					       enum lev_transition_when when)
{
	for (size_t i = 0; i < st->n_transitions; i++)
		if (st->transitions[i].when == when)
			return &st->transitions[i];
	return NULL;
}

/* Every done edge is out of revisits: dead_end, else error, else the run fails. */
static const char *dead_end(struct lev_agent *a, const struct lev_transition **edge,
			    const char **how, char **why)
{
	const struct lev_stage *st = cur_st(a);
	const struct lev_transition *tr = first_when(st, LEV_WHEN_DEAD_END);
	int i;

	*how = "dead_end";
	if (!tr) {
		tr = first_when(st, LEV_WHEN_ERROR);
		*how = "error (dead end)";
	}
	if (tr) {
		*edge = tr;
		return tr->target;
	}
	for (size_t k = 0; k < st->n_transitions; k++) {
		if (st->transitions[k].when != LEV_WHEN_DONE)
			continue;
		i = stage_idx(a, st->transitions[k].target);
		*why = xasprintf("stage '%s' was re-entered %llu time(s), its max_revisits; the "
				 "run stops here",
				 st->transitions[k].target,
				 (unsigned long long)a->stages[i].st->max_revisits);
		break;
	}
	return NULL;
}

const char *agent_flow_next(struct lev_agent *a, enum lev_transition_when when,
			    const struct lev_transition **edge, bool *terminal, const char **how,
			    char **why)
{
	const struct lev_stage *st = cur_st(a);
	const struct lev_transition *tr;

	*edge = NULL;
	*terminal = false;
	*how = lev_transition_when_name(when);
	*why = NULL;
	if (when == LEV_WHEN_STUCK) {
		tr = a->flow.stuck >= 0 ? &st->transitions[a->flow.stuck] : NULL;
	} else if (when != LEV_WHEN_DONE) {
		tr = first_when(st, when);
	} else if (a->flow.complete) {
		*how = "DONE";
		*terminal = true;
		return NULL;
	} else if (a->flow.chosen >= 0) {
		tr = &st->transitions[a->flow.chosen];
		*how = tr->always ? "always" : "chosen";
	} else if (first_when(st, LEV_WHEN_DONE)) {
		return dead_end(a, edge, how, why);
	} else {
		*how = "next";
		*terminal = !st->next;
		return st->next;
	}
	*edge = tr;
	return tr ? tr->target : NULL;
}

/* ---- transforms ----------------------------------------------------------- */

static const char summarise_system[] =
	"You summarise one part of an agent's working context for the next stage of its "
	"work. Keep facts, decisions, file names, numbers and open questions; drop chatter. "
	"Answer with the summary alone.";

/* A model-written summary of REGION's text (allocated), or NULL when it failed. */
static char *summarise(struct lev_agent *a, size_t region, const char *prompt,
		       struct lev_err *err)
{
	_cleanup_free_ char *text = lev_context_region_text(a->ctx, region);
	struct lev_infer_request req;
	struct lev_infer_response resp;
	_cleanup_free_ char *user = NULL;
	char *out = NULL;

	if (!text || !text[strspn(text, " \t\r\n")])
		return NULL;
	user = xasprintf("%s\n\nRegion '%s':\n\n%s",
			 prompt ? prompt : "Summarise this for the next stage.",
			 lev_context_region_name(a->ctx, region), text);
	lev_request_init(&req);
	lev_request_set_system(&req, summarise_system);
	lev_request_add_user_text(&req, user);
	req.max_tokens = SUMMARY_MAX_TOKENS;
	memset(&resp, 0, sizeof(resp));
	/* a compact edge's summary is the [compaction] model's, as Leviath's */
	if (agent_infer(a, agent_compaction_provider(a, &req), &req, &resp, err) == 0 &&
	    resp.finish != LEV_FINISH_SCRIPT_END && resp.text && resp.text[0])
		out = xstrdup(resp.text);
	else if (!err->msg[0])
		lev_err_set(err, -ENODATA, "the model wrote no summary");
	lev_response_release(&resp);
	lev_request_release(&req);
	return out;
}

static void transform_event(struct lev_agent *a, const char *region, const char *op,
			    enum lev_level label, size_t bytes)
{
	json_t *ev = agent_event_new("transform");

	json_object_set_new(ev, "stage", agent_jtext(cur_st(a)->name));
	json_object_set_new(ev, "region", agent_jtext(region));
	json_object_set_new(ev, "op", json_string(op));
	if (!strcmp(op, "compact")) {
		json_object_set_new(ev, "label", json_string(lev_level_name(label)));
		json_object_set_new(ev, "bytes", json_integer((json_int_t)bytes));
	}
	agent_emit(a, ev);
}

/* Summarise region I in place (the conversation's summary goes to *summary instead). */
static int compact_region(struct lev_agent *a, size_t i, const struct lev_transition *tr,
			  char **summary, enum lev_level *label, struct lev_err *err)
{
	/* what the summary was written from: it carries that taint, never less */
	enum lev_level seen = lev_level_max(lev_context_region_level(a->ctx, i),
					    lev_context_taint_level(a->ctx));
	_cleanup_free_ char *s = summarise(a, i, tr->compact_prompt, err);
	int r = 0;

	if (!s) {
		if (err->msg[0])
			agent_warn(a, "stage '%s': region '%s' was carried as it is: no summary (%s)",
				   cur_st(a)->name, lev_context_region_name(a->ctx, i), err->msg);
		lev_err_clear(err);
		return 0;
	}
	if (i == lev_context_conversation(a->ctx)) {
		*label = lev_level_max(*label, seen);
		free(*summary);
		*summary = xstrdup(s);
	} else {
		r = lev_context_write_note(a->ctx, i, s, strlen(s), seen, err);
	}
	if (r == 0)
		transform_event(a, lev_context_region_name(a->ctx, i), "compact", seen, strlen(s));
	return r;
}

int agent_flow_transform(struct lev_agent *a, const struct lev_transition *tr, char **summary,
			 enum lev_level *label, struct lev_err *err)
{
	size_t n = lev_context_region_count(a->ctx);
	int r = 0;

	*summary = NULL;
	*label = LEV_PUBLIC;
	if (!tr || tr->transform == LEV_TRANSFORM_DIRECT)
		return 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		const char *name = lev_context_region_name(a->ctx, i);
		bool conv = i == lev_context_conversation(a->ctx);
		bool compact = tr->transform == LEV_TRANSFORM_COMPACT ||
			       (tr->transform == LEV_TRANSFORM_CUSTOM &&
				lev_strv_contains(tr->compact, name));
		bool clear = tr->transform == LEV_TRANSFORM_CLEAR ||
			     (tr->transform == LEV_TRANSFORM_CUSTOM &&
			      lev_strv_contains(tr->clear, name));

		/* a pinned region is never touched by an edge */
		if (lev_context_region_kind(a->ctx, i) == LEV_REGION_PINNED ||
		    (tr->transform == LEV_TRANSFORM_CUSTOM && lev_strv_contains(tr->carry, name)))
			continue;
		if (compact)
			r = compact_region(a, i, tr, summary, label, err);
		else if (clear && !conv) {
			r = lev_context_clear(a->ctx, i, err);
			if (r == 0)
				transform_event(a, name, "clear", LEV_PUBLIC, 0);
		}
	}
	return r;
}
