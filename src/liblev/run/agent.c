/*
 * agent.c - events and audit lines, the stage loop (see agent-internal.h).
 */
#include "liblev/run/agent-internal.h"
#include "liblev/run/ratelimit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/secrets.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/context.h"
#include "liblev/run/replay.h"
#include "liblev/run/runrecord.h"

const char *lev_run_status_name(enum lev_run_status s)
{
	switch (s) {
	case LEV_RUN_RUNNING:
		return "running";
	case LEV_RUN_COMPLETE:
		return "complete";
	case LEV_RUN_ERROR:
		return "error";
	case LEV_RUN_CANCELLED:
		return "cancelled";
	}
	return "error";
}

const char *lev_ask_answer_name(enum lev_ask_answer a)
{
	static const char *const names[] = { "none", "deny", "once", "stage", "run" };

	return (unsigned)a < ARRAY_SIZE(names) ? names[a] : "none";
}

void lev_call_decision_release(struct lev_call_decision *d)
{
	free(d->rule);
	free(d->reason);
	memset(d, 0, sizeof(*d));
}

bool agent_cancelled(const struct lev_agent *a)
{
	return a->o.cancel && *a->o.cancel;
}

/* ---- events and audit ---------------------------------------------------- */

/* Record EV (stealing the reference) and show it to the front end. */
void agent_emit(struct lev_agent *a, json_t *ev)
{
	struct lev_err err = LEV_ERR_INIT;
	char *line = NULL;

	/* every exit (the record, --json, the terminal, the daemon) gets it
	 * redacted: a copy, never the call's own arguments */
	ev = lev_secrets_redact_take(ev);
	/* the line as recorded is copied out only for a front end to show */
	if (a->rec && lev_runrecord_event(a->rec, ev, a->o.hooks.event ? &line : NULL, &err) < 0 &&
	    !a->internal_error)
		a->internal_error = xasprintf("cannot keep the run record: %s", err.msg);
	if (a->o.hooks.event) {
		if (!line)
			line = json_dumps(ev, JSON_COMPACT | JSON_ENSURE_ASCII);
		a->o.hooks.event(a->o.hooks.data, ev, line ? line : "{}");
	}
	free(line);
	json_decref(ev);
}

json_t *agent_event_new(const char *name)
{
	json_t *ev = json_object();

	json_object_set_new(ev, "event", json_string(name));
	return ev;
}

json_t *agent_jtext(const char *s)
{
	return lev_json_text(s, s ? strlen(s) : 0);
}

/* A JSON string of S cut to OUTPUT_EVENT_MAX bytes for an event. */
json_t *agent_jtext_capped(const char *s)
{
	size_t len, keep;

	if (!s)
		return json_null();
	len = strlen(s);
	if (len <= OUTPUT_EVENT_MAX)
		return lev_json_text(s, len);
	keep = OUTPUT_EVENT_MAX;
	while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
		keep--;
	return lev_json_text(s, keep);
}

void agent_warn(struct lev_agent *a, const char *fmt, ...)
{
	json_t *ev = agent_event_new("warning");
	va_list ap;
	char *msg = NULL;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!a->started) {
		/* the record starts with run_started: keep it for then */
		a->pending_warnings = lev_strv_push(a->pending_warnings, msg ? msg : "(warning)");
		free(msg);
		json_decref(ev);
		return;
	}
	json_object_set_new(ev, "message", agent_jtext(msg ? msg : "(warning)"));
	free(msg);
	agent_emit(a, ev);
}

void agent_audit(struct lev_agent *a, const struct audit_line *l)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_audit au;

	if (!a->rec)
		return;	/* nothing keeps audit lines in this run */
	au = (struct lev_audit){
		.stage = a->n_stages ? a->stages[a->cur].st->name : NULL,
		.call_id = l->call_id,
		.tool = l->tool,
		.gate = l->gate,
		.rule = l->rule,
		.decision = lev_verdict_name(l->allowed ? LEV_ALLOW : LEV_DENY),
		.asked = l->asked,
		.answer = l->answer,
		.target = l->target,
		.has_taint = true,
		.taint = a->ctx ? lev_context_taint_level(a->ctx) : LEV_PUBLIC,
		.has_clearance = l->has_clearance,
		.clearance = l->clearance,
		.reason = l->reason,
	};
	if (a->nested)
		au.taint = lev_level_max(au.taint, a->nested->level);
	if (lev_runrecord_audit(a->rec, &au, &err) < 0 && !a->internal_error)
		a->internal_error = xasprintf("cannot keep the run record: %s", err.msg);
}

/* ---- stages -------------------------------------------------------------- */

static int stage_index(const struct lev_agent *a, const char *name)
{
	for (size_t i = 0; name && i < a->n_stages; i++)
		if (!strcmp(a->stages[i].st->name, name))
			return (int)i;
	return -ENOENT;
}

uint64_t agent_max_iterations(const struct lev_agent *a, const struct lev_stage *st)
{
	if (st->max_iterations)
		return st->max_iterations;
	if (a->cfg->limits.max_iterations)
		return a->cfg->limits.max_iterations;
	return DEFAULT_MAX_ITERATIONS;
}

static int enter_stage(struct lev_agent *a, size_t idx, const char *from, const char *handoff,
		       enum lev_level label, const char *hint, struct lev_err *err)
{
	struct stage_rt *s = &a->stages[idx];
	const struct lev_stage *st = s->st;
	struct lev_buf kick = LEV_BUF_INIT;
	struct lev_buf layers = LEV_BUF_INIT;
	json_t *ev, *tools;
	int r;

	a->cur = idx;
	a->iteration = 0;
	a->stage_done = false;
	a->stage_end = NULL;
	free(a->stage_output);
	a->stage_output = NULL;
	a->fanout_attempts = 0;
	free(a->fanout_fail);
	a->fanout_fail = NULL;
	lev_grants_enter_stage(&a->grants, (long)idx);
	s->visits++;
	agent_flow_enter(a);

	/* a new stage starts a new conversation; its input is the hand-off */
	r = lev_context_clear(a->ctx, lev_context_conversation(a->ctx), err);
	if (r < 0)
		return r;

	ev = agent_event_new("stage_started");
	json_object_set_new(ev, "stage", agent_jtext(st->name));
	json_object_set_new(ev, "from", agent_jtext(from));
	json_object_set_new(ev, "max_iterations", json_integer((json_int_t)agent_max_iterations(a, st)));
	json_object_set_new(ev, "sandbox", json_string(lev_sandbox_kind_name(
						   lev_sandbox_kind(s->sb))));
	(void)lev_sandbox_layers_format(lev_sandbox_layers(s->sb), &layers);
	json_object_set_new(ev, "layers", agent_jtext(layers.buf));
	lev_buf_release(&layers);
	json_object_set_new(ev, "network", json_boolean(s->eff.network));
	json_object_set_new(ev, "model", agent_jtext(lev_provider_model(s->prov)
						       ? lev_provider_model(s->prov)
						       : lev_provider_name(s->prov)));
	json_object_set_new(ev, "provider", agent_jtext(lev_provider_name(s->prov)));
	tools = json_array();
	for (char **t = s->offered; t && *t; t++)
		json_array_append_new(tools, json_string(*t));
	json_object_set_new(ev, "tools", tools);
	agent_emit(a, ev);

	if (handoff) {
		(void)lev_buf_addf(&kick, "Output of stage '%s':\n\n", from);
		(void)lev_buf_adds(&kick, handoff);
		(void)lev_buf_adds(&kick, "\n\n");
		if (hint)
			(void)lev_buf_addf(&kick, "%s\n\n", hint);
	}
	(void)lev_buf_addf(&kick, "You are in stage '%s'", st->name);
	if (st->description)
		(void)lev_buf_addf(&kick, ": %s", st->description);
	(void)lev_buf_adds(&kick, ". ");
	if (st->mode == LEV_MODE_FAN_OUT)
		agent_fanout_kick(a, &kick);
	else if (st->require_output || st->mode == LEV_MODE_OUTPUT)
		(void)lev_buf_adds(&kick, "When you are done, call submit_output with the stage's "
					  "output.");
	else
		(void)lev_buf_adds(&kick, "When you are done, answer with your final output and no "
					  "tool calls.");
	agent_flow_kick(a, &kick);
	r = lev_context_add_text(a->ctx, lev_context_conversation(a->ctx), kick.buf, kick.len,
				 handoff ? label : LEV_PUBLIC, err);
	lev_buf_release(&kick);
	/* the previous stage's output keeps its integrity across the hand-off */
	if (r == 0 && handoff && a->handoff_untrusted)
		lev_context_mark_untrusted(a->ctx);
	return r;
}

static void finish(struct lev_agent *a, enum lev_run_status st, const char *output,
		   const char *error)
{
	json_t *ev, *extra;

	if (!error && st != LEV_RUN_COMPLETE && a->internal_error)
		error = a->internal_error;
	a->status = st;
	free(a->output);
	a->output = output ? xstrdup(output) : NULL;
	free(a->error);
	a->error = error ? xstrdup(error) : NULL;

	ev = agent_event_new("run_finished");
	json_object_set_new(ev, "run", agent_jtext(lev_agent_run_id(a)));
	json_object_set_new(ev, "status", json_string(lev_run_status_name(st)));
	json_object_set_new(ev, "output", agent_jtext_capped(output));
	json_object_set_new(ev, "error", agent_jtext(error));
	json_object_set_new(ev, "tool_calls", json_integer((json_int_t)a->calls));
	if (output)
		agent_integrity_json(a, a->stage_output_integrity, ev);
	agent_emit(a, ev);
	if (a->rec) {
		extra = json_object();
		json_object_set_new(extra, "agent", agent_jtext(a->bp->name));
		json_object_set_new(extra, "workdir", agent_jtext(a->workdir));
		json_object_set_new(extra, "tool_calls", json_integer((json_int_t)a->calls));
		json_object_set_new(extra, "taint", json_string(lev_level_name(
							    lev_context_taint_level(a->ctx))));
		if (output)
			agent_integrity_json(a, a->stage_output_integrity, extra);
		(void)lev_runrecord_finish(a->rec, lev_run_status_name(st), output, error, extra,
					   NULL);
		json_decref(extra);
	}
}

static void model_response_event(struct lev_agent *a, const struct lev_infer_response *resp)
{
	json_t *ev = agent_event_new("model_response"), *calls = json_array();

	json_object_set_new(ev, "stage", agent_jtext(a->stages[a->cur].st->name));
	json_object_set_new(ev, "iteration", json_integer(a->iteration));
	json_object_set_new(ev, "text", agent_jtext_capped(resp->text));
	for (size_t i = 0; i < resp->n_calls; i++)
		json_array_append_new(calls, agent_jtext(resp->calls[i].name));
	json_object_set_new(ev, "calls", calls);
	json_object_set_new(ev, "finish", json_string(lev_finish_name(resp->finish)));
	if (lev_replay_in_turn(a->o.replay))
		json_object_set_new(ev, "replayed", json_true());
	if (resp->has_prompt_tokens)
		json_object_set_new(ev, "prompt_tokens", json_integer((json_int_t)resp->prompt_tokens));
	if (resp->has_completion_tokens)
		json_object_set_new(ev, "completion_tokens",
				    json_integer((json_int_t)resp->completion_tokens));
	if (resp->cached_tokens)
		json_object_set_new(ev, "cached_tokens", json_integer((json_int_t)resp->cached_tokens));
	if (resp->cache_write_tokens)
		json_object_set_new(ev, "cache_write_tokens",
				    json_integer((json_int_t)resp->cache_write_tokens));
	agent_emit(a, ev);
}

/*
 * Every call of a turn needs an id of its own (its result answers that id):
 * a model that repeats one, or sends an empty one, gets it made unique.
 */
static void unique_call_ids(struct lev_infer_response *resp)
{
	for (size_t i = 0; i < resp->n_calls; i++) {
		bool dup = !resp->calls[i].id || !resp->calls[i].id[0];

		for (size_t j = 0; j < i && !dup; j++)
			dup = lev_streq(resp->calls[i].id, resp->calls[j].id);
		if (dup) {
			char *id = xasprintf("%s_%zu", resp->calls[i].id && resp->calls[i].id[0]
							       ? resp->calls[i].id : "call",
					     i + 1);

			free(resp->calls[i].id);
			resp->calls[i].id = id;
		}
	}
}

/*
 * Every call of a turn gets lev's own id, unique within the run: "call_N",
 * numbered run-wide (never restarting per stage or per turn), a
 * sub-agent's under its place ("c1/call_N").  What lev decides, records,
 * journals and asks about is keyed by it; the provider's id stays only as
 * the call's label, which the conversation sends back.  A replayed turn
 * is numbered as it was the first time: the journal keeps the provider's.
 */
static void agent_number_calls(struct lev_agent *a, struct lev_infer_response *resp)
{
	for (size_t i = 0; i < resp->n_calls; i++) {
		struct lev_tool_call *c = &resp->calls[i];

		free(c->label);
		c->label = c->id;
		c->id = xasprintf("%scall_%" PRIu64, a->call_prefix ? a->call_prefix : "",
				  ++a->call_no);
	}
}

enum stage_end {
	END_DONE,
	END_MAX_ITERATIONS,
	END_ERROR,
	END_STUCK,		/* a stuck edge's threshold tripped (flow.c) */
	END_ABORTED,		/* an interaction point aborted the run */
	END_SCRIPT,		/* the script provider has no turns left */
	END_CANCELLED,
};

/* Run the current stage to its end; *why gets the error text for END_ERROR. */
/*
 * After a failed request: when the stage has a model list with an entry
 * left and the failure is the provider's (5xx, 429, timeout, connection),
 * move to the next entry and say so.  Returns whether it moved.
 */
static bool fail_over(struct lev_agent *a, struct stage_rt *s, const char *msg)
{
	const struct lev_provider_status *ps = lev_provider_last_status(s->prov);
	const struct lev_provider *next;

	if (s->alt + 1 >= s->n_alts || !ps)
		return false;
	switch (ps->error) {
	case LEV_PERR_SERVER:
	case LEV_PERR_RATE_LIMITED:
	case LEV_PERR_TIMEOUT:
	case LEV_PERR_CONNECTION:
		break;
	default:
		return false;
	}
	next = s->alts[s->alt + 1];
	agent_warn(a, "stage '%s': provider '%s' failed (%s); moving to '%s/%s', entry %zu of "
		   "its model list",
		   s->st->name, lev_provider_name(s->prov), msg[0] ? msg : "no answer",
		   lev_provider_name(next), lev_provider_model(next) ? lev_provider_model(next) : "",
		   s->alt + 2);
	s->alt++;
	s->prov = s->alts[s->alt];
	return true;
}

static bool ratelimit_cancelled(void *data)
{
	return agent_cancelled(data);
}

int agent_ratelimit_retry(void *data, const char *provider, struct lev_err *err)
{
	struct lev_agent *a = data;
	const struct lev_rate_limit *rl = lev_ratelimit_find(a->cfg, provider);

	return rl ? lev_ratelimit_take(rl, ratelimit_cancelled, a, err) : 0;
}

/*
 * Every model request of the run, a stage's turn or one of its own (choosing
 * an edge, a summary), goes here: the one place that decides when it may
 * go.  It waits its turn in the machine's minute ([rate_limits.PROVIDER],
 * ratelimit.h), then for a place among the daemon's inferences
 * ([limits] max_concurrent_inferences: the thinking hook, worker.c asks the
 * pool, daemon/pool.h); a cancel meanwhile asks nothing.  The answer's
 * tokens are charged to the minute.
 */
int agent_infer(struct lev_agent *a, struct lev_provider *p, const struct lev_infer_request *req,
		struct lev_infer_response *resp, struct lev_err *err)
{
	const struct lev_rate_limit *rl = lev_ratelimit_find(a->cfg, lev_provider_name(p));
	int r;

	if (rl && lev_ratelimit_take(rl, ratelimit_cancelled, a, err) < 0)
		return err->code;
	if (a->o.hooks.thinking)
		a->o.hooks.thinking(a->o.hooks.data, true);
	if (agent_cancelled(a)) {
		if (a->o.hooks.thinking)
			a->o.hooks.thinking(a->o.hooks.data, false);
		return lev_err_set(err, -ECANCELED, "the run was cancelled");
	}
	r = lev_provider_infer(p, req, resp, err);
	if (a->o.hooks.thinking)
		a->o.hooks.thinking(a->o.hooks.data, false);
	if (rl && r == 0)
		lev_ratelimit_charge(rl, resp->prompt_tokens + resp->completion_tokens);
	return r;
}

/*
 * The model's turn: the next one of a replay log while it lasts (the
 * provider moves past it too, so a script goes on where the run was),
 * else the provider's, reported to the front end for its journal.
 */
static int take_turn(struct lev_agent *a, struct stage_rt *s, const struct lev_infer_request *req,
		     struct lev_infer_response *resp, struct lev_err *err)
{
	if (a->o.replay && lev_replay_next_turn(a->o.replay, s->st->name, resp) == 1) {
		lev_provider_skip_turn(s->prov);
		return 0;
	}
	return agent_infer(a, s->prov, req, resp, err);
}

/*
 * A turn arrived: its calls' ids made unique, the turn reported to the
 * front end's journal as the provider sent it, then each call numbered.
 */
static void report_turn(struct lev_agent *a, struct lev_infer_response *resp)
{
	json_t *t;

	unique_call_ids(resp);
	if (a->o.hooks.turn && !lev_replay_in_turn(a->o.replay)) {
		t = lev_replay_turn_json(a->stages[a->cur].st->name, resp);
		a->o.hooks.turn(a->o.hooks.data, t);
		json_decref(t);
	}
	agent_number_calls(a, resp);
}

/* The front end's step boundary: a pause, and the messages sent to the run. */
static int step_boundary(struct lev_agent *a, const struct lev_stage *st, char **why)
{
	struct lev_err err = LEV_ERR_INIT;
	char *text;

	while (!agent_cancelled(a) && (text = a->o.hooks.boundary(a->o.hooks.data))) {
		json_t *ev = agent_event_new("user_message");
		int r = lev_context_add_text(a->ctx, lev_context_conversation(a->ctx), text,
					     strlen(text), LEV_PUBLIC, &err);

		json_object_set_new(ev, "stage", agent_jtext(st->name));
		json_object_set_new(ev, "text", agent_jtext(text));
		agent_emit(a, ev);
		free(text);
		if (r < 0) {
			*why = xasprintf("cannot add a message in stage '%s': %s", st->name,
					 err.msg);
			return r;
		}
	}
	return 0;
}

/* Mail M from the parent into the region it names (else the conversation), with its labels. */
static int add_mail(struct lev_agent *a, const struct lev_stage *st, const struct lev_agent_mail *m,
		    char **why)
{
	struct lev_err err = LEV_ERR_INIT;
	size_t conv = lev_context_conversation(a->ctx);
	int found = m->region ? lev_context_region_find(a->ctx, m->region) : -1;
	size_t region = found >= 0 ? (size_t)found : conv;
	_cleanup_free_ char *text = xasprintf("Message from the agent that started you:\n%s",
					      m->text ? m->text : "");
	json_t *ev;
	int r = lev_context_add_text(a->ctx, region, text, strlen(text), m->label, &err);

	if (r < 0 && region != conv) {	/* a region that cannot take it: the conversation */
		region = conv;
		lev_err_clear(&err);
		r = lev_context_add_text(a->ctx, region, text, strlen(text), m->label, &err);
	}
	if (r < 0) {
		*why = xasprintf("cannot add a message in stage '%s': %s", st->name, err.msg);
		return r;
	}
	/* a message written in an untrusted context makes this one untrusted */
	if (m->untrusted) {
		lev_context_mark_untrusted(a->ctx);
		a->ever_untrusted = true;
	}
	ev = agent_event_new("parent_message");
	json_object_set_new(ev, "stage", agent_jtext(st->name));
	json_object_set_new(ev, "region", agent_jtext(lev_context_region_name(a->ctx, region)));
	json_object_set_new(ev, "label", json_string(lev_level_name(m->label)));
	json_object_set_new(ev, "integrity", json_string(m->untrusted ? "untrusted" : "trusted"));
	json_object_set_new(ev, "text", agent_jtext(m->text ? m->text : ""));
	agent_emit(a, ev);
	return 0;
}

/* A sub-agent's messages from its parent, before the model is asked again. */
static int take_mail(struct lev_agent *a, const struct lev_stage *st, char **why)
{
	struct lev_agent_mail m;

	while (!agent_cancelled(a) && a->o.hooks.mail(a->o.hooks.data, &m) == 1) {
		int r = add_mail(a, st, &m, why);

		free(m.text);
		free(m.region);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The model says the stage is done: flow.c decides whether it ends (true,
 * *end set), or runs on with a note to the model (false).
 */
static bool stage_may_end(struct lev_agent *a, char **why, enum stage_end *end)
{
	switch (agent_flow_may_end(a)) {
	case FLOW_END:
		agent_children_settle(a);	/* requires_children: every child has ended */
		*end = END_DONE;
		return true;
	case FLOW_FAIL:
		*why = xstrdup(a->flow.fail_why);
		*end = END_ERROR;
		return true;
	case FLOW_ABORT:
		*end = END_ABORTED;
		return true;
	case FLOW_GO_ON:
		break;
	}
	a->stage_done = false;
	a->stage_end = NULL;
	return false;
}

/*
 * The next model request of A's stage S into REQ: the context (compacted,
 * seen through the stage's view), its tools and settings; the labels the
 * model now sees are noted and the request announced.
 */
static void build_request(struct lev_agent *a, struct stage_rt *s, struct lev_infer_request *req)
{
	const struct lev_stage *st = s->st;
	const struct lev_model_caps *mc;
	json_t *ev;

	agent_compact_regions(a);
	lev_context_set_view(a->ctx, st->has_context ? st->context_regions : NULL);
	lev_request_init(req);
	lev_context_render(a->ctx, st->system_prompt, req);
	lev_tools_offer(a->tools, s->offered, req);
	agent_flow_offer_schema(a, req);
	if (st->model.max_tokens)
		req->max_tokens = (unsigned)(st->model.max_tokens > 1000000
						    ? 1000000 : st->model.max_tokens);
	/* [model_capabilities] max_output_tokens: the model's own ceiling caps any ask */
	mc = lev_config_model_caps(a->cfg, lev_provider_model(s->prov));
	if (mc && mc->max_output_tokens && (!req->max_tokens || req->max_tokens > mc->max_output_tokens))
		req->max_tokens = (unsigned)mc->max_output_tokens;
	if (st->model.has_temperature) {
		req->has_temperature = true;
		req->temperature = st->model.temperature;
	}
	a->seen = lev_context_taint_level(a->ctx);
	a->peak = lev_level_max(a->peak, a->seen);
	if (lev_taint_model_integrity(lev_context_taint(a->ctx)) == LEV_UNTRUSTED)
		a->ever_untrusted = true;
	lev_taint_mark_seen(lev_context_taint(a->ctx));
	ev = agent_event_new("model_request");
	json_object_set_new(ev, "stage", agent_jtext(st->name));
	json_object_set_new(ev, "iteration", json_integer(a->iteration));
	json_object_set_new(ev, "context_tokens",
			    json_integer((json_int_t)lev_context_tokens(a->ctx)));
	json_object_set_new(ev, "taint", json_string(lev_level_name(a->seen)));
	agent_emit(a, ev);
}

static enum stage_end run_stage(struct lev_agent *a, char **why)
{
	struct stage_rt *s = &a->stages[a->cur];
	const struct lev_stage *st = s->st;
	uint64_t max = agent_max_iterations(a, st);
	struct lev_err err = LEV_ERR_INIT;

	for (;;) {
		struct lev_infer_request req;
		struct lev_infer_response resp;
		int r;

		if (a->stage_done && a->fanout_fail) {
			*why = xstrdup(a->fanout_fail);
			return END_ERROR;
		}
		if (a->stage_done) {
			enum stage_end e;

			if (stage_may_end(a, why, &e))
				return e;
			continue;
		}
		if (a->o.hooks.boundary && step_boundary(a, st, why) < 0)
			return END_ERROR;
		if (a->o.hooks.mail && take_mail(a, st, why) < 0)
			return END_ERROR;
		if (agent_cancelled(a))
			return END_CANCELLED;
		agent_children_pump(a);		/* the children running beside it */
		if (a->o.hooks.step)
			a->o.hooks.step(a->o.hooks.data, a);
		/* a fan-out stage is bounded by max_attempts, not max_iterations */
		if (a->iteration >= max && st->mode != LEV_MODE_FAN_OUT)
			return END_MAX_ITERATIONS;
		a->iteration++;

		build_request(a, s, &req);

		memset(&resp, 0, sizeof(resp));
		lev_err_clear(&err);
		r = take_turn(a, s, &req, &resp, &err);
		lev_request_release(&req);
		if (r < 0) {
			if (agent_cancelled(a) || r == -ECANCELED)
				return END_CANCELLED;
			if (fail_over(a, s, err.msg)) {
				a->iteration--;	/* the same turn, asked of the next entry */
				continue;
			}
			*why = xasprintf("model request failed in stage '%s': %s", st->name,
					 err.msg[0] ? err.msg : strerror(-r));
			return END_ERROR;
		}
		if (resp.finish == LEV_FINISH_SCRIPT_END) {
			lev_response_release(&resp);
			return END_SCRIPT;
		}
		report_turn(a, &resp);
		model_response_event(a, &resp);
		free(a->last_text);
		a->last_text = xstrdup(resp.text ? resp.text : "");
		r = lev_context_add_assistant(a->ctx, &resp, a->seen, &err);
		if (r < 0) {
			lev_response_release(&resp);
			*why = xasprintf("cannot keep the model's turn: %s", err.msg);
			return END_ERROR;
		}
		if (resp.n_calls == 0) {
			if (agent_flow_choosing(a)) {
				a->stage_done = true;	/* its answer names the next stage */
			} else if (st->mode == LEV_MODE_FAN_OUT) {
				if (agent_fanout_no_call(a, why)) {
					lev_response_release(&resp);
					return END_ERROR;
				}
			} else if (st->require_output || st->mode == LEV_MODE_OUTPUT) {
				agent_flow_owes_output(a);
			} else if (!agent_flow_nudge(a) && !agent_required_nudge(a)) {
				free(a->stage_output);
				a->stage_output = xstrdup(resp.text ? resp.text : "");
				a->stage_output_label = lev_level_max(a->seen,
								      lev_context_taint_level(a->ctx));
				a->stage_output_integrity =
					lev_taint_model_integrity(lev_context_taint(a->ctx));
				a->stage_done = true;
				a->stage_end = "answer";
			}
			lev_response_release(&resp);
			continue;
		}
		for (size_t i = 0; i < resp.n_calls; i++) {
			if (agent_cancelled(a))
				agent_skip_call(a, &resp.calls[i], "[cancelled] the run was interrupted "
							     "before this call ran");
			else if (a->stage_done)
				agent_skip_call(a, &resp.calls[i], "[skipped] the stage ended with "
							     "submit_output before this call");
			else
				agent_run_call(a, &resp.calls[i]);
		}
		agent_watch_turn_end(a);
		lev_response_release(&resp);
		if (st->mode == LEV_MODE_FAN_OUT && !a->stage_done && agent_fanout_no_call(a, why))
			return END_ERROR;
		if (a->rec)
			(void)lev_runrecord_sync(a->rec, NULL);
		if (!a->stage_done && agent_flow_stuck(a, why))
			return END_STUCK;
	}
}

/* The record starts with run_started, then the warnings found before it. */
static void run_started_event(struct lev_agent *a, size_t entry)
{
	json_t *ev = agent_event_new("run_started");

	json_object_set_new(ev, "run", agent_jtext(lev_agent_run_id(a)));
	json_object_set_new(ev, "agent", agent_jtext(a->bp->name));
	/* the installed agent, unchanged since `lev add` (agentstore.h) */
	json_object_set_new(ev, "agent_verified", json_boolean(a->bp->identity_verified));
	json_object_set_new(ev, "workdir", agent_jtext(a->workdir));
	json_object_set_new(ev, "record", agent_jtext(lev_agent_record_dir(a)));
	json_object_set_new(ev, "pid", json_integer(getpid()));
	json_object_set_new(ev, "entry_stage", agent_jtext(a->stages[entry].st->name));
	json_object_set_new(ev, "taint_tracking", json_boolean(a->taint_enabled));
	json_object_set_new(ev, "yolo", json_boolean(a->o.yolo));
	if (a->o.resume)
		json_object_set_new(ev, "resumed", json_true());
	agent_emit(a, ev);
	a->started = true;
	for (char **w = a->pending_warnings; w && *w; w++)
		agent_warn(a, "%s", *w);
	a->pending_warnings = lev_strv_free(a->pending_warnings);
}

static void stage_finished_event(struct lev_agent *a, const struct lev_stage *st,
				 enum stage_end end)
{
	json_t *ev = agent_event_new("stage_finished");

	json_object_set_new(ev, "stage", agent_jtext(st->name));
	json_object_set_new(ev, "iterations", json_integer(a->iteration));
	json_object_set_new(ev, "end", json_string(end == END_DONE ? (a->stage_end ? a->stage_end
										      : "answer")
						   : end == END_MAX_ITERATIONS ? "max_iterations"
						   : end == END_ERROR	       ? "error"
						   : end == END_SCRIPT	       ? "script_end"
						   : end == END_STUCK	       ? "stuck"
						   : end == END_ABORTED	       ? "aborted"
										: "cancelled"));
	json_object_set_new(ev, "output", agent_jtext_capped(a->stage_output));
	if (a->stage_output)
		agent_integrity_json(a, a->stage_output_integrity, ev);
	agent_emit(a, ev);
}

/* The run's end when the stage has nowhere to go: complete, or the reason it failed. */
static void no_way_on(struct lev_agent *a, enum stage_end end, bool terminal, const char *why,
		      const char *flow_why)
{
	const struct lev_stage *st = a->stages[a->cur].st;

	if (end == END_DONE && terminal) {
		finish(a, LEV_RUN_COMPLETE, a->stage_output, NULL);
	} else if (flow_why) {
		finish(a, LEV_RUN_ERROR, NULL, flow_why);
	} else if (end == END_MAX_ITERATIONS) {
		_cleanup_free_ char *m = xasprintf(
			"stage '%s' reached max_iterations (%llu) without finishing", st->name,
			(unsigned long long)agent_max_iterations(a, st));

		finish(a, LEV_RUN_ERROR, NULL, m);
	} else {
		finish(a, LEV_RUN_ERROR, NULL, why ? why : "the stage failed");
	}
}

/* Why the run moved on, for the next stage: into its report region when declared. */
static char *handoff_text(struct lev_agent *a, enum stage_end end, const char *why,
			  const char *summary)
{
	struct lev_buf b = LEV_BUF_INIT;
	const char *report = end == END_STUCK ? "stuck_report" : "error_report";
	int region = lev_context_region_find(a->ctx, report);

	if (a->stage_output)
		(void)lev_buf_adds(&b, a->stage_output);
	else if (end == END_STUCK)
		(void)lev_buf_addf(&b, "(the stage was stopped: %s)", why ? why : "stuck");
	else if (end == END_MAX_ITERATIONS)
		(void)lev_buf_adds(&b, "(the stage was cut off at its max_iterations: its work "
				       "is not finished)");
	else
		(void)lev_buf_addf(&b, why ? "(the stage failed: %s)"
					   : "(the stage ended without an output)", why);
	if (end != END_DONE && region >= 0 && region != (int)lev_context_conversation(a->ctx))
		(void)lev_context_add_text(a->ctx, (size_t)region, b.buf, b.len, LEV_PUBLIC, NULL);
	if (a->flow.handoff_extra)
		(void)lev_buf_addf(&b, "\n\n%s", a->flow.handoff_extra);
	if (summary)
		(void)lev_buf_addf(&b, "\n\nSummary of the stage's conversation:\n%s", summary);
	return lev_buf_detach(&b, NULL);
}

static void transition_event(struct lev_agent *a, const char *target, const char *how,
			     const struct lev_transition *edge)
{
	json_t *ev = agent_event_new("stage_transition");

	json_object_set_new(ev, "from", agent_jtext(a->stages[a->cur].st->name));
	json_object_set_new(ev, "to", agent_jtext(target));
	json_object_set_new(ev, "how", agent_jtext(how));
	json_object_set_new(ev, "transform", json_string(lev_transform_name(
						     edge ? edge->transform : LEV_TRANSFORM_DIRECT)));
	agent_emit(a, ev);
}

/* After a stage ended END: enter the next one (1), or finish the run (0). */
static int take_edge(struct lev_agent *a, enum stage_end end, const char *why)
{
	const struct lev_stage *st = a->stages[a->cur].st;
	enum lev_transition_when when = end == END_MAX_ITERATIONS ? LEV_WHEN_MAX_ITERATIONS
					: end == END_ERROR	  ? LEV_WHEN_ERROR
					: end == END_STUCK	  ? LEV_WHEN_STUCK
								  : LEV_WHEN_DONE;
	const struct lev_transition *edge = NULL;
	_cleanup_free_ char *flow_why = NULL, *summary = NULL, *handoff = NULL, *from = NULL;
	struct lev_err e = LEV_ERR_INIT;
	enum lev_level label, slabel = LEV_PUBLIC;
	const char *how = NULL, *target;
	bool terminal = false;
	int next;

	target = end == END_DONE ? agent_fanout_merge(a) : NULL;
	if (target)
		how = "merge_stage";
	else
		target = agent_flow_next(a, when, &edge, &terminal, &how, &flow_why);
	if (!target) {
		no_way_on(a, end, terminal, why, flow_why);
		return 0;
	}
	next = stage_index(a, target);
	if (next >= 0 && a->stages[next].st->has_max_revisits &&
	    a->stages[next].visits > a->stages[next].st->max_revisits) {
		_cleanup_free_ char *m = xasprintf(
			"stage '%s' was re-entered %llu time(s), its max_revisits; the run stops "
			"here", target, (unsigned long long)a->stages[next].st->max_revisits);

		finish(a, LEV_RUN_ERROR, NULL, m);
		return 0;
	}
	if (next < 0 || a->stages[next].visits >= MAX_STAGE_VISITS) {
		_cleanup_free_ char *m =
			next < 0 ? xasprintf("stage '%s' names an unknown stage '%s'", st->name, target)
				 : xasprintf("stage '%s' was entered %d times; the run stops here",
					     target, MAX_STAGE_VISITS);

		finish(a, LEV_RUN_ERROR, NULL, m);
		return 0;
	}
	transition_event(a, target, how, edge);
	if (agent_flow_transform(a, edge, &summary, &slabel, &e) < 0) {
		finish(a, LEV_RUN_ERROR, NULL, e.msg);
		return 0;
	}
	handoff = handoff_text(a, end, why, summary);
	label = a->stage_output ? a->stage_output_label : lev_context_taint_level(a->ctx);
	label = lev_level_max(label, slabel);
	from = xstrdup(st->name);
	/* the hand-off, a transform's summary included, is as trusted as what wrote it */
	a->handoff_untrusted =
		(a->stage_output ? a->stage_output_integrity
				 : lev_taint_model_integrity(lev_context_taint(a->ctx))) == LEV_UNTRUSTED ||
		(summary && lev_taint_model_integrity(lev_context_taint(a->ctx)) == LEV_UNTRUSTED);
	if (enter_stage(a, (size_t)next, from, handoff, label, edge ? edge->hint : NULL, &e) < 0) {
		finish(a, LEV_RUN_ERROR, NULL, e.msg);
		return 0;
	}
	return 1;
}

int lev_agent_run(struct lev_agent *a, struct lev_err *err)
{
	struct lev_err e = LEV_ERR_INIT;
	size_t entry = a->cur;
	int r;

	if (a->o.resume) {
		/* the record goes on: say where, and why */
		json_t *ev = agent_event_new("run_resumed");

		json_object_set_new(ev, "reason", json_string("the daemon restarted"));
		json_object_set_new(ev, "replay", json_boolean(a->o.replay != NULL));
		agent_emit(a, ev);
	}
	run_started_event(a, entry);

	r = agent_run_seeds(a, &e);
	if (r == 0)
		r = enter_stage(a, entry, NULL, NULL, LEV_PUBLIC, NULL, &e);
	if (r < 0) {
		finish(a, LEV_RUN_ERROR, NULL, e.msg);
		return 0;
	}

	for (;;) {
		const struct lev_stage *st = a->stages[a->cur].st;
		_cleanup_free_ char *why = NULL;
		enum stage_end end = run_stage(a, &why);

		stage_finished_event(a, st, end);
		agent_route_stage_end(a);

		if (end == END_CANCELLED) {
			finish(a, LEV_RUN_CANCELLED, NULL, "interrupted");
			return 0;
		}
		if (end == END_SCRIPT) {
			finish(a, LEV_RUN_COMPLETE, a->stage_output ? a->stage_output
								    : a->last_text,
			       NULL);
			return 0;
		}
		if (end == END_ABORTED) {
			finish(a, LEV_RUN_CANCELLED, NULL, a->flow.abort_why);
			return 0;
		}
		if (take_edge(a, end, why) == 0)
			return 0;
	}
	(void)err;
	return 0;
}
