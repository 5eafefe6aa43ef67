/*
 * agent-call.c - one tool call through the gate chain, asks and execution (see agent-internal.h).
 */
#include "liblev/run/agent-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/hot.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/policy/perm-config.h"
#include "liblev/run/callshow.h"
#include "liblev/run/context.h"
#include "liblev/run/replay.h"
#include "liblev/run/runrecord.h"
#include "liblev/tools/tools-net.h"

/* ---- the gates ----------------------------------------------------------- */

/*
 * The first line of S, at most 120 bytes, saying when there is more (the
 * whole call is shown under the prompt: callshow.h).  Caller frees.
 */
static char *first_line(const char *s)
{
	size_t n = strcspn(s, "\n"), lines = 1;

	for (const char *p = s + n; *p; p++)
		lines += *p == '\n';
	if (lines > 1)
		return xasprintf("%.*s%s [+%zu more line%s: see the whole call]",
				 (int)(n > 117 ? 117 : n), s, n > 117 ? "..." : "", lines - 1,
				 lines > 2 ? "s" : "");
	if (n > 120)
		return xasprintf("%.*s...", 117, s);
	return xstrndup(s, n);
}

const char *agent_arg_str(const json_t *args, const char *key)
{
	const json_t *v = args ? json_object_get(args, key) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* What the permission prompt shows after the tool name (the entry says which argument). */
static char *call_detail(const struct lev_tool_info *ti, const json_t *args)
{
	const char *s = NULL;

	if (ti && ti->detail_arg)
		s = agent_arg_str(args, ti->detail_arg);
	if (!s && ti && ti->detail_arg2)
		s = agent_arg_str(args, ti->detail_arg2);
	return s ? first_line(s) : NULL;
}

/* "k1, k2, k3": every key (an answer for the stage or the run grants them all) */
static char *keys_label(char *const *keys)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t n = lev_strv_len(keys);

	for (size_t i = 0; i < n; i++) {
		if (i)
			(void)lev_buf_adds(&b, ", ");
		(void)lev_buf_adds(&b, keys[i]);
	}
	return lev_buf_detach(&b, NULL);
}

/* The record's status says when the run waits for the person at the terminal. */
static void set_waiting(struct lev_agent *a, bool waiting)
{
	/* a sub-agent's question keeps the run the user started waiting too */
	for (; a; a = a->parent)
		if (a->rec)
			(void)lev_runrecord_status(a->rec, waiting ? "waiting" : "running", NULL);
}

/*
 * Ask Q about CALL (the model's call; TOOL: the tool it runs; HOP: the
 * redirect it would follow, or NULL): Q shows the whole call and carries
 * the digest an answer is bound to (callshow.h).
 */
static enum lev_ask_answer ask(struct lev_agent *a, struct lev_ask *q,
			       const struct lev_tool_call *call, const char *tool,
			       const json_t *args, const char *hop)
{
	/* ARGS: the call's arguments under their canonical names (the chain's record) */
	_cleanup_free_ char *shown = lev_callshow_text(tool ? tool : call->name,
							args ? args : call->arguments,
							call->raw_arguments, hop);
	char digest[LEV_SHA256_HEX_LEN + 1];
	enum lev_ask_answer ans;

	lev_callshow_digest(shown, digest);
	q->call_id = call->id;
	q->call = shown;
	q->digest = digest;

	/* a seed runs before the run has anyone to ask (lint says so too) */
	if (!a->o.hooks.ask || agent_cancelled(a) || a->seeding)
		return LEV_ANSWER_NONE;
	set_waiting(a, true);
	ans = a->o.hooks.ask(a->o.hooks.data, q);
	set_waiting(a, false);
	return ans;
}

struct call_state {
	const struct lev_tool_call *call;
	const char *tool;		/* canonical, or the name as sent */
	const struct lev_tool_info *ti;
	const json_t *args;
	struct lev_call_decision *dec;
	struct lev_tool_output *out;
	struct lev_gatechain_decision gd;	/* the chain's record */
	bool own_text;			/* the result is lev's own message (a transport error) */
	enum lev_level inner;		/* a script tool: what its host functions read;
					 * a sub-agent tool: what the children saw */
	bool inner_untrusted;		/* a sub-agent tool: a child saw untrusted content */
	char **hops;			/* a network tool: every URL it requested (strv) */
};

/*
 * The chain's environment for the current stage: the run's side of
 * lev_gatechain_env_build(), for every call the run decides (the model's,
 * a script tool's host function, an MCP tool, a sub-agent's, a redirect
 * hop, a seed).  A script tool's host function is decided in the script's
 * context: the run's, raised by what its earlier host calls returned.
 */
void agent_chain_env(struct lev_agent *a, enum lev_gatechain_mode mode, const char *home,
		      struct lev_gatechain_env *env)
{
	const struct stage_rt *s = &a->stages[a->cur];
	const struct lev_gatechain_site site = {
		.tools = a->tools,
		.stage = s->st->name,
		.offered = a->nested ? a->nested->offered : s->offered,
		.offered_list = s->offered_list,
		.perm = &a->perms[a->cur].in,
		.safe_only = &a->safe_only,
		.ceilings = a->ceilings,
		.grants = &a->grants,
		.fs = a->fs,
		.eff = &s->eff,
		.sb = s->sb,
		.landlock = a->landlock,
		.taint = a->gate,
		.taint_enabled = a->taint_enabled,
		.seed_commands = a->cfg->allow_seed_commands && !a->o.no_seed_commands,
		.seed_off_why = a->o.no_seed_commands ? "--no-seed-commands"
						      : "[security] allow_seed_commands = false",
	};
	struct lev_gatechain_ctx ctx = {
		.taint_ctx = lev_context_taint(a->ctx),
		.taint = lev_context_taint_level(a->ctx),
		.integrity = LEV_TRUSTED,	/* beyond what the run's context holds */
		.provenance = a->prov,
	};

	if (a->nested) {
		ctx.taint = lev_level_max(ctx.taint, a->nested->level);
		ctx.integrity = a->nested->integrity;
	}
	/* an MCP server's tool descriptions are in the request: its text, as trusted as it is */
	if (lev_unlikely(s->mcp_servers != NULL) && agent_mcp_untrusted(a, s->mcp_servers))
		ctx.integrity = LEV_UNTRUSTED;
	lev_gatechain_env_build(env, &site, mode, home, &ctx);
}

/* One audit line per gate the chain ran (asks are recorded with their answer). */
void agent_audit_steps(struct lev_agent *a, const char *call_id, const char *tool,
			const struct lev_gatechain_decision *gd, const char *target)
{
	if (!a->rec)
		return;	/* nothing keeps audit lines in this run */
	for (size_t g = 1; g < _LEV_GATE_ID_MAX; g++) {
		const struct lev_gatechain_step *st = &gd->steps[g];
		bool taint = g == LEV_GATE_TAINT && gd->ran_taint;

		if (!st->ran || st->verdict == LEV_ASK)
			continue;
		agent_audit(a, &(struct audit_line){
			.call_id = call_id, .tool = tool, .gate = lev_gate_id_name(g),
			.rule = st->rule, .allowed = st->verdict == LEV_ALLOW,
			.target = target ? target : st->target,
			.reason = st->verdict == LEV_DENY ? st->reason
				  : taint ? gd->taint.target_error : NULL,
			.has_clearance = taint, .clearance = taint ? gd->taint.clearance : 0 });
	}
}

/* The call's final decision from the chain's record; TEXT (when refused) goes to the model. */
static void conclude(struct call_state *cs, bool allowed, const char *text)
{
	cs->dec->allowed = allowed;
	cs->dec->verdict = cs->gd.verdict;
	cs->dec->taint = cs->gd.taint_level;
	cs->dec->gate = lev_gate_id_name(cs->gd.gate);
	free(cs->dec->rule);
	cs->dec->rule = cs->gd.rule ? xstrdup(cs->gd.rule) : NULL;
	free(cs->dec->reason);
	cs->dec->reason = cs->gd.reason ? xstrdup(cs->gd.reason) : NULL;
	if (!allowed)
		lev_tool_output_set(cs->out, text ? text : "[denied] refused", true);
}

static enum lev_gate_answer taint_answer(enum lev_ask_answer ans)
{
	switch (ans) {
	case LEV_ANSWER_ONCE:
	case LEV_ANSWER_STAGE:
		return LEV_GATE_ANSWER_ONCE;
	case LEV_ANSWER_RUN:
		return LEV_GATE_ANSWER_RUN;
	case LEV_ANSWER_DENY:
		return LEV_GATE_ANSWER_DENY;
	default:
		return LEV_GATE_ANSWER_NONE;
	}
}

/* One audit line per gate that asked, with the answer (NONE: nobody was asked). */
static LEV_COLD void audit_asks(struct lev_agent *a, const struct call_state *cs,
			       enum lev_ask_answer ans)
{
	const struct lev_gatechain_decision *gd = &cs->gd;
	bool yes = ans == LEV_ANSWER_ONCE || ans == LEV_ANSWER_STAGE || ans == LEV_ANSWER_RUN;
	static const enum lev_gate_id asking[] = { LEV_GATE_PERMISSION, LEV_GATE_TAINT,
						    LEV_GATE_INTEGRITY };

	for (size_t i = 0; i < ARRAY_SIZE(asking); i++) {
		enum lev_gate_id g = asking[i];
		const struct lev_gatechain_step *st = &gd->steps[g];

		if (!st->ran || st->verdict != LEV_ASK)
			continue;
		agent_audit(a, &(struct audit_line){
			.call_id = cs->call->id, .tool = cs->tool, .gate = lev_gate_id_name(g),
			.rule = yes || ans == LEV_ANSWER_DENY ? "user" : "no answer",
			.allowed = yes, .asked = ans != LEV_ANSWER_NONE,
			.answer = lev_ask_answer_name(ans), .reason = st->rule,
			.target = st->target,
			.has_clearance = g == LEV_GATE_TAINT,
			.clearance = g == LEV_GATE_TAINT ? gd->taint.clearance : 0 });
	}
}

/*
 * The chain asks (permission, taint, or both): one question for all of
 * them.  Allow once / for this stage / for this run answer every ask (a
 * taint ask allowed "for this stage" is allowed once); deny refuses.
 */
static LEV_COLD void ask_together(struct lev_agent *a, struct call_state *cs)
{
	struct lev_gatechain_decision *gd = &cs->gd;
	struct lev_buf desc = LEV_BUF_INIT;
	_cleanup_free_ char *detail = call_detail(cs->ti, cs->args);
	_cleanup_free_ char *prompt = NULL, *more = NULL, *slabel = NULL, *rlabel = NULL;
	_cleanup_free_ char *klabel = gd->keys ? keys_label(gd->keys) : NULL;
	struct lev_ask q = { 0 };
	enum lev_ask_answer ans;
	bool yes;

	if (gd->ask_taint)
		(void)lev_gate_describe(&gd->taint, &desc);
	if (gd->ask_integrity) {
		if (desc.len)
			(void)lev_buf_adds(&desc, "; ");
		(void)lev_integrity_describe(cs->tool, &gd->integ, &desc);
		if (gd->untrusted_args) {
			_cleanup_free_ char *names = keys_label(gd->untrusted_args);

			(void)lev_buf_addf(&desc, " (from untrusted text: %s)", names);
		}
	}
	q.stage = a->stages[a->cur].st->name;
	q.tool = cs->tool;
	if (gd->ask_permission) {
		prompt = detail ? xasprintf("Allow tool call: `%s` - `%s`?", cs->tool, detail)
				: xasprintf("Allow tool call: `%s`?", cs->tool);
		more = gd->ask_taint || gd->ask_integrity
			       ? xasprintf("%s\n%s: %s", gd->perm_why,
					   gd->ask_taint ? "taint" : "integrity", desc.buf)
			       : xstrdup(gd->perm_why);
		slabel = klabel ? xasprintf("Allow %s for this stage", klabel)
				: xstrdup("Allow for this stage (nothing reusable - it will ask "
					  "again)");
		rlabel = klabel ? xasprintf("Allow %s for this run", klabel)
				: xstrdup("Allow for this run (nothing reusable - it will ask "
					  "again)");
		q.kind = LEV_ASK_PERMISSION;
		q.stage_label = slabel;
		q.run_label = rlabel;
	} else {
		prompt = xasprintf("%s. Allow it?", desc.buf);
		more = gd->host ? xasprintf("target: %s", gd->host) : NULL;
		q.kind = LEV_ASK_TAINT;
		q.run_label = "Allow for this run";
	}
	q.prompt = prompt;
	q.detail = more;
	ans = ask(a, &q, cs->call, cs->tool, cs->args, NULL);
	cs->dec->asked = ans != LEV_ANSWER_NONE;
	cs->dec->answer = ans;
	yes = ans == LEV_ANSWER_ONCE || ans == LEV_ANSWER_STAGE || ans == LEV_ANSWER_RUN;
	if (gd->ask_taint)
		(void)lev_gate_answer(a->gate, &gd->taint, taint_answer(ans));
	if (gd->ask_integrity)
		(void)lev_integrity_answer(a->gate, cs->tool, &gd->integ, taint_answer(ans));
	if (yes && gd->ask_permission && ans != LEV_ANSWER_ONCE)
		(void)lev_grants_add(&a->grants,
				     ans == LEV_ANSWER_STAGE ? LEV_GRANT_STAGE : LEV_GRANT_RUN,
				     gd->keys);
	audit_asks(a, cs, ans);
	if (yes) {
		conclude(cs, true, NULL);
	} else if (ans == LEV_ANSWER_DENY) {
		_cleanup_free_ char *t =
			gd->ask_permission
				? xasprintf("[denied] User declined tool call '%s'.", cs->tool)
				: xasprintf("[blocked] %s. Denied by user.", desc.buf);

		conclude(cs, false, t);
	} else {
		conclude(cs, false, gd->text);
	}
	lev_buf_release(&desc);
}

/* ---- execution ----------------------------------------------------------- */

struct redirect_ctx {
	struct lev_agent *a;
	struct call_state *cs;
	char *from;		/* owned: the URL that answered with the redirect */
};

/* A hop's question: PROMPT about URL; the answer (NONE when nobody is asked). */
static enum lev_ask_answer redirect_ask(struct redirect_ctx *rc, const char *prompt,
					const char *url)
{
	struct lev_agent *a = rc->a;
	struct lev_ask q = { 0 };
	enum lev_ask_answer ans;

	q.kind = LEV_ASK_TAINT;
	q.stage = a->stages[a->cur].st->name;
	q.tool = rc->cs->tool;
	q.prompt = prompt;
	q.detail = url;
	q.run_label = "Allow for this run";
	ans = a->seeding ? LEV_ANSWER_NONE : ask(a, &q, rc->cs->call, rc->cs->tool, rc->cs->args, url);
	rc->cs->dec->asked = rc->cs->dec->asked || ans != LEV_ANSWER_NONE;
	return ans;
}

/* The answer to a hop's question, one audit line under GATE. */
static void redirect_audit_answer(struct redirect_ctx *rc, enum lev_gate_id gate, bool allowed,
				  enum lev_ask_answer ans, const char *url)
{
	_cleanup_free_ char *reason = xasprintf("redirect to '%.300s'", url);

	agent_audit(rc->a, &(struct audit_line){
		.call_id = rc->cs->call->id, .tool = rc->cs->tool, .gate = lev_gate_id_name(gate),
		.rule = allowed || ans == LEV_ANSWER_DENY ? "user" : "no answer",
		.allowed = allowed, .asked = ans != LEV_ANSWER_NONE,
		.answer = lev_ask_answer_name(ans), .target = url, .reason = reason });
}

/* GATE (taint or integrity) asked about the hop GD judged: ask; 0 when the answer allows it. */
static int redirect_hop_ask(struct redirect_ctx *rc, struct lev_gatechain_decision *gd,
			    enum lev_gate_id gate, const char *url, struct lev_err *err)
{
	bool taint = gate == LEV_GATE_TAINT;
	struct lev_buf desc = LEV_BUF_INIT;
	_cleanup_free_ char *prompt = NULL;
	enum lev_ask_answer ans;
	bool allowed;
	int r = 0;

	if (taint)
		(void)lev_gate_describe(&gd->taint, &desc);
	else
		(void)lev_integrity_describe(gd->canon, &gd->integ, &desc);
	prompt = xasprintf("%s was redirected: %s. Allow it?", rc->cs->tool, desc.buf);
	ans = redirect_ask(rc, prompt, url);
	if (taint)
		(void)lev_gate_answer(rc->a->gate, &gd->taint, taint_answer(ans));
	else
		(void)lev_integrity_answer(rc->a->gate, gd->canon, &gd->integ, taint_answer(ans));
	allowed = (taint ? gd->taint.result : gd->integ.result) == LEV_GATE_ALLOWED;
	redirect_audit_answer(rc, gate, allowed, ans, url);
	if (!allowed)
		r = lev_err_set(err, LEV_EDENIED, "the %s gate refuses it (%s); call the tool "
				"with that URL if you need it", lev_gate_id_name(gate), desc.buf);
	lev_buf_release(&desc);
	return r;
}

/*
 * A network tool is about to follow a redirect to URL: the chain judges
 * the hop as a web_fetch of URL in the call's own environment
 * (agent_chain_env(), lev_gatechain_redirect(): the taint and integrity
 * gates), asking when a gate would ask.  Every hop's gates are lines of
 * audit.jsonl.  Returns 0 when the hop may be followed.
 */
static int redirect_gate(void *data, const char *tool, const char *url, struct lev_err *err)
{
	struct redirect_ctx *rc = data;
	struct lev_agent *a = rc->a;
	struct lev_gatechain_decision gd;
	struct lev_gatechain_env env;
	int r = 0;

	(void)tool;	/* the call's own tool; the gates judge the hop as a GET */
	agent_chain_env(a, LEV_GATECHAIN_CALL, NULL, &env);
	lev_gatechain_redirect(&env, url, agent_hop_untrusted(a, rc->from), &gd);
	agent_audit_steps(a, rc->cs->call->id, rc->cs->tool, &gd, url);
	if (gd.verdict == LEV_DENY)
		r = lev_err_set(err, LEV_EDENIED, "the %s gate refuses it (%s)",
				lev_gate_id_name(gd.gate), gd.reason);
	if (!r && gd.ask_taint)
		r = redirect_hop_ask(rc, &gd, LEV_GATE_TAINT, url, err);
	if (!r && gd.ask_integrity)
		r = redirect_hop_ask(rc, &gd, LEV_GATE_INTEGRITY, url, err);
	lev_gatechain_decision_release(&gd);
	free(rc->from);
	rc->from = xstrdup(url);
	return r;
}

static void run_inline(struct lev_agent *a, struct call_state *cs)
{
	struct lev_err err = LEV_ERR_INIT;
	const char *region = agent_arg_str(cs->args, "region");
	int idx = region ? lev_context_region_find_shown(a->ctx, region) : -ENOENT;

	if (cs->ti->op == LEV_OP_TRANSITION) {
		agent_flow_transition_tool(a, cs->args, cs->out);
		return;
	}
	if (cs->ti->op == LEV_OP_SUBMIT_OUTPUT) {
		const char *o = agent_arg_str(cs->args, "content");
		_cleanup_free_ char *why = NULL;

		if (agent_flow_check_output(a, o ? o : "", &why) < 0) {
			_cleanup_free_ char *t = xasprintf("[invalid output] %s", why);

			lev_tool_output_set(cs->out, t, true);
			if (a->flow.fail_why)
				a->stage_done = true;	/* its attempts are spent: the stage fails */
			return;
		}
		free(a->stage_output);
		a->stage_output = xstrdup(o ? o : "");
		a->stage_output_label = lev_level_max(a->seen, lev_context_taint_level(a->ctx));
		a->stage_output_integrity = lev_taint_model_integrity(lev_context_taint(a->ctx));
		a->stage_done = true;
		a->stage_end = lev_tooltable_name(LEV_OP_SUBMIT_OUTPUT);
		lev_tool_output_set(cs->out, "[ok] output submitted; this stage ends here.", false);
		return;
	}
	if (idx < 0) {
		_cleanup_free_ char *t = xasprintf("[error] there is no context region '%s'",
						   region ? region : "");

		lev_tool_output_set(cs->out, t, true);
		return;
	}
	if (cs->ti->op == LEV_OP_CONTEXT_READ) {
		const char *key = agent_arg_str(cs->args, "key");
		char *text = key ? lev_context_keyed_text(a->ctx, (size_t)idx, key)
				 : lev_context_region_text(a->ctx, (size_t)idx);

		if (!text) {
			_cleanup_free_ char *t = xasprintf("[error] region '%s' has no entry keyed "
							   "'%s'", region, key);

			lev_tool_output_set(cs->out, t, true);
			return;
		}
		lev_tool_output_release(cs->out);
		cs->out->text = text;
		cs->out->len = strlen(text);
		return;
	}
	{
		const char *content = agent_arg_str(cs->args, "content");
		const char *key = agent_arg_str(cs->args, "key");
		bool write = cs->ti->op == LEV_OP_CONTEXT_WRITE;
		int r = key ? lev_context_keyed_note(a->ctx, (size_t)idx, key, content,
						     strlen(content), write, a->seen, &err)
			: write ? lev_context_write_note(a->ctx, (size_t)idx, content,
							 strlen(content), a->seen, &err)
				: lev_context_add_note(a->ctx, (size_t)idx, content, strlen(content),
						       a->seen, &err);

		if (r < 0) {
			_cleanup_free_ char *t = xasprintf("[error] %s", err.msg);

			lev_tool_output_set(cs->out, t, true);
		} else {
			_cleanup_free_ char *t = xasprintf("[ok] region '%s' updated", region);

			lev_tool_output_set(cs->out, t, false);
		}
	}
}

/* A question for the person (ask_user_*, interaction points): -1 when nobody can answer. */
int agent_question(struct lev_agent *a, const struct lev_question *q, char **answer)
{
	int r;

	*answer = NULL;
	if (!a->o.hooks.question || agent_cancelled(a))
		return -1;
	set_waiting(a, true);
	r = a->o.hooks.question(a->o.hooks.data, q, answer);
	set_waiting(a, false);
	return r;
}

/* ask_user_*: the question goes to the front end; its answer is the result. */
static void run_ask(struct lev_agent *a, struct call_state *cs)
{
	const json_t *jc = json_object_get(cs->args, "options");
	struct lev_question q = {
		.kind = cs->ti->op == LEV_OP_ASK_CHOICE	   ? LEV_QUESTION_CHOICE
			: cs->ti->op == LEV_OP_ASK_CONFIRM ? LEV_QUESTION_CONFIRM
							   : LEV_QUESTION_TEXT,
		.stage = a->stages[a->cur].st->name,
		.call_id = cs->call->id,
		.question = agent_arg_str(cs->args, "prompt"),
	};
	_cleanup_strv_ char **choices = NULL;
	_cleanup_free_ char *answer = NULL;
	size_t i;
	json_t *v;
	int r;

	json_array_foreach(jc, i, v)
		choices = lev_strv_push(choices, json_string_value(v));
	q.choices = choices;
	if (!a->o.hooks.question || agent_cancelled(a)) {
		lev_tool_output_set(cs->out, "[no answer] Nobody can answer a question in this run. "
				    "Decide yourself and go on.", true);
		return;
	}
	r = agent_question(a, &q, &answer);
	if (r < 0 || !answer)
		lev_tool_output_set(cs->out, "[no answer] The user did not answer. Go on without "
				    "the answer, or end the stage.", true);
	else
		lev_tool_output_set(cs->out, answer, false);
}


/*
 * While untrusted content is live, the files [integrity] protects are
 * read-only to the shell line (the host fence splits the workdir's write
 * grant around them; a namespace binds them read-only): the globs, or NULL.
 * A model's call and a command seed alike (agent-internal.h).
 */
char *const *agent_shell_protects(const struct lev_agent *a, enum lev_integrity integrity)
{
	const struct lev_integrity_policy *ip;

	if (!a->gate || integrity == LEV_TRUSTED)
		return NULL;
	ip = lev_policy_integrity(lev_gate_policy(a->gate));
	return ip ? ip->protected_files : NULL;
}

static void execute(struct lev_agent *a, struct call_state *cs)
{
	struct stage_rt *s = &a->stages[a->cur];
	struct lev_err err = LEV_ERR_INIT;

	switch (cs->ti->kind) {
	case LEV_TOOL_FS: {
		struct lev_fs_result res = { 0 };

		/* on the fds the path gate opened: the path is never resolved again */
		lev_fs_run(a->fs, cs->tool, cs->args, cs->gd.fs, &res);
		lev_tool_output_release(cs->out);
		cs->out->text = res.text ? res.text : xstrdup("");
		cs->out->len = res.text ? res.len : 0;
		cs->out->is_error = res.is_error;
		res.text = NULL;
		lev_fs_result_release(&res);
		break;
	}
	case LEV_TOOL_SHELL: {
		struct lev_shell_opts so = {
			.sandbox = s->sb,
			.envp = a->envp,
			.cancel_fd = a->o.cancel_fd,
			.read_fence = cs->gd.read_fence,
			.protect = agent_shell_protects(a, cs->gd.integrity),
			.git_hooks_off = cs->gd.git_hooks_off,
		};

		struct timespec t0;
		bool watch = agent_label_shell_start(a, &t0);

		if (lev_tool_shell(&so, agent_arg_str(cs->args, "command"), cs->out, &err) < 0) {
			_cleanup_free_ char *t = xasprintf("[error] %s", err.msg);

			lev_tool_output_set(cs->out, t, true);
		}
		if (watch)
			agent_label_shell_done(a, &t0);
		break;
	}
	case LEV_TOOL_NET: {
		struct lev_net_policy np = {
			.network_allowed = s->eff.network,
			.allow_local_network = a->cfg->allow_local_network,
			.search_endpoint = a->cfg->web_search_endpoint,
			.cancel = a->o.cancel,
		};
		struct lev_net_result res = { 0 };
		struct redirect_ctx rc = { .a = a, .cs = cs,
					   .from = xstrdup(agent_arg_str(cs->args, "url") ?: "") };

		np.redirect_hook = redirect_gate;
		np.redirect_hook_data = &rc;
		if (lev_tool_net_run(cs->tool, cs->args, &np, &res, &err) < 0) {
			_cleanup_free_ char *t = xasprintf("[error] %s", err.msg);

			lev_tool_output_set(cs->out, t, true);
			cs->own_text = true;	/* nothing came back from the far end */
		} else {
			lev_tool_output_set(cs->out, res.text ? res.text : "", res.is_error);
			cs->hops = TAKE_PTR(res.hop_urls);
		}
		lev_net_result_release(&res);
		free(rc.from);
		break;
	}
	case LEV_TOOL_INLINE:
		if (!agent_run_info(a, cs->ti->op, cs->args, cs->out) &&
		    !agent_run_todo(a, cs->ti->op, cs->args, cs->out))
			run_inline(a, cs);
		break;
	case LEV_TOOL_ASK:
		if (!agent_interact_tool(a, cs->ti->op, cs->args, cs->out))
			run_ask(a, cs);
		break;
	case LEV_TOOL_MCP:
		agent_mcp_call(a, cs->ti, cs->args, cs->out);
		break;
	case LEV_TOOL_SCRIPT:
		cs->inner = agent_script_call(a, cs->call->id, cs->ti, cs->args, cs->out);
		break;
	case LEV_TOOL_AGENT:
		agent_children_tool(a, cs->ti, cs->args, cs->out, &cs->inner, &cs->inner_untrusted);
		break;
	}
}

/* A read grant is active: what a shell may read is labelled as a granted read. */
enum lev_level agent_grant_floor(const struct lev_agent *a, enum lev_level l)
{
	return lev_fs_ctx_read_paths_granted(a->fs) ? LEV_PRIVATE : l;
}

/*
 * The label of an executed call's result.  A file tool's comes from the
 * fds it read: Private when one of them lies outside the workdir (a
 * [read_paths] grant), whatever the path says now.
 */
static enum lev_level agent_result_label(struct lev_agent *a, const struct call_state *cs)
{
	struct lev_tool_class cls;
	enum lev_level l;

	lev_gate_classify(a->gate, cs->tool, &cls);
	l = cls.sensitivity;
	if (cs->ti && cs->ti->kind == LEV_TOOL_FS && lev_fs_targets_outside(cs->gd.fs))
		l = LEV_PRIVATE;
	if (cs->ti && cs->ti->kind == LEV_TOOL_SHELL) {
		/* a shell reads what read_file reads: its output is labelled at least as high */
		struct lev_tool_class rf;

		lev_gate_classify(a->gate, lev_tooltable_name(LEV_OP_READ_FILE), &rf);
		l = lev_level_max(l, agent_grant_floor(a, rf.sensitivity));
	}
	if (cs->ti && (cs->ti->kind == LEV_TOOL_MCP || cs->ti->kind == LEV_TOOL_SCRIPT)) {
		/* a server or script nobody classified: its results are Private */
		const struct lev_policy *p = lev_gate_policy(a->gate);
		const struct lev_tool_override *o = lev_policy_override_find(p, cs->tool);
		const struct lev_tool_override *so = lev_policy_server_override(p, cs->tool);

		if (!(o && o->has_sensitivity) && !(so && so->has_sensitivity))
			l = LEV_PRIVATE;
	}
	if (cs->ti && (cs->ti->kind == LEV_TOOL_SCRIPT || cs->ti->kind == LEV_TOOL_AGENT))
		l = lev_level_max(l, cs->inner);
	if (cs->ti && cs->ti->op == LEV_OP_CONTEXT_READ) {
		int idx = lev_context_region_find(a->ctx, agent_arg_str(cs->args, "region"));

		if (idx >= 0)
			l = lev_level_max(l, lev_context_region_level(a->ctx, (size_t)idx));
	}
	return agent_source_level(a, cs->ti, cs->args, l);
}

/* True when V is a string that, read against DIR by its words alone, is the path P. */
static bool names_path(const json_t *v, const char *dir, const char *p)
{
	_cleanup_free_ char *lex = NULL;

	if (!json_is_string(v) || !json_string_length(v))
		return false;
	lex = lev_path_lexical(dir, json_string_value(v));
	return !strcmp(lex, p);
}

/*
 * True when the call named the path P itself: a string argument (or a
 * string in an array argument) that is P without following any symlink.
 */
static bool args_name(const json_t *args, const char *dir, const char *p)
{
	const char *key;
	const json_t *v, *e;
	size_t i;

	json_object_foreach((json_t *)args, key, v) {
		if (names_path(v, dir, p))
			return true;
		json_array_foreach(v, i, e)
			if (names_path(e, dir, p))
				return true;
	}
	return false;
}

/*
 * The label of a refusal's text, which is never lower than what it quotes:
 * the call's own arguments (the model wrote them from a context it saw at
 * a->seen, so an argument can carry a private file's line), a path the
 * path gate found outside the workdir that the call did not name itself
 * (where a symlink really leads: as private as a read there), and, when
 * the taint gate refused, the context it judged.  A refusal is never a way
 * to turn private words into public ones.
 */
static LEV_NOINLINE enum lev_level refusal_label(const struct lev_agent *a,
						 const struct call_state *cs)
{
	const char *p = cs->gd.path;
	enum lev_level l = a->seen;

	if (p && p[0] == '/' && !lev_path_under(p, a->workdir) &&
	    !(cs->args && args_name(cs->args, a->workdir, p)))
		l = LEV_PRIVATE;
	if (cs->gd.gate == LEV_GATE_TAINT)
		l = lev_level_max(l, cs->gd.taint_level);
	return l;
}

/*
 * An executed (or replayed) call's labels: by the tool, then raised or set
 * by what it touched (agent-label.c): the objects a read file tool read,
 * every hop a network tool requested.  A write is recorded in the ledger.
 */
static void result_labels(struct lev_agent *a, struct call_state *cs)
{
	struct lev_call_decision *dec = cs->dec;

	dec->label = agent_result_label(a, cs);
	dec->integrity = cs->own_text ? lev_taint_model_integrity(lev_context_taint(a->ctx))
				      : agent_result_integrity(a, cs->ti, cs->args, cs->gd.path);
	if (!cs->ti || cs->own_text)
		return;
	if (cs->ti->kind == LEV_TOOL_FS && !(cs->ti->touches & LEV_TOUCH_WRITES))
		(void)agent_label_fs(a, cs->gd.fs, &dec->label, &dec->integrity);
	else if (cs->ti->kind == LEV_TOOL_FS && !dec->replayed && !cs->out->is_error)
		agent_label_written(a, cs->gd.fs);
	else if (cs->ti->kind == LEV_TOOL_NET)
		(void)agent_label_hops(a, cs->hops, &dec->label, &dec->integrity);
}

/* ---- one call ------------------------------------------------------------ */

/* Somebody looks at the events (a record or a front end). */
static bool observed(const struct lev_agent *a)
{
	return a->rec || a->o.hooks.event;
}

static LEV_NOINLINE void tool_call_event(struct lev_agent *a, const struct call_state *cs)
{
	json_t *ev;

	if (!observed(a))
		return;
	ev = agent_event_new("tool_call");

	json_object_set_new(ev, "id", agent_jtext(cs->call->id));
	json_object_set_new(ev, "stage", agent_jtext(a->stages[a->cur].st->name));
	json_object_set_new(ev, "tool", agent_jtext(cs->call->name));
	if (cs->call->label)
		json_object_set_new(ev, "label", agent_jtext(cs->call->label));
	if (cs->call->arguments)
		json_object_set(ev, "args", cs->call->arguments);
	else
		json_object_set_new(ev, "args", agent_jtext_capped(cs->call->raw_arguments));
	json_object_set_new(ev, "decision", json_string(lev_verdict_name(cs->dec->allowed ? LEV_ALLOW : LEV_DENY)));
	json_object_set_new(ev, "verdict", json_string(lev_verdict_name(cs->dec->verdict)));
	json_object_set_new(ev, "taint", json_string(lev_level_name(cs->dec->taint)));
	json_object_set_new(ev, "integrity", json_string(lev_integrity_name(cs->gd.integrity)));
	if (cs->gd.untrusted_args) {
		json_t *ua = json_array();

		for (char **s = cs->gd.untrusted_args; *s; s++)
			json_array_append_new(ua, agent_jtext(*s));
		json_object_set_new(ev, "untrusted_args", ua);
	}
	json_object_set_new(ev, "gate", json_string(cs->dec->gate));
	json_object_set_new(ev, "rule", agent_jtext(cs->dec->rule));
	json_object_set_new(ev, "reason", agent_jtext(cs->dec->reason));
	json_object_set_new(ev, "asked", json_boolean(cs->dec->asked));
	json_object_set_new(ev, "answer", json_string(lev_ask_answer_name(cs->dec->answer)));
	if (cs->dec->replayed)
		json_object_set_new(ev, "replayed", json_string(cs->dec->replayed));
	agent_emit(a, ev);
}

/* Put the call to the gate chain, and act on its record: allow, refuse, or ask once. */
static void decide_and_run(struct lev_agent *a, struct call_state *cs)
{
	const struct lev_tool_call *call = cs->call;
	struct lev_gatechain_env env;
	struct lev_gatechain_call gc = {
		.name = call->name,
		.args = call->arguments,
		.parse_error = call->parse_error,
	};
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *own_home = NULL;
	const char *home = a->o.home;

	if (!home && lev_home_dir(&own_home, NULL) == 0)
		home = own_home;
	agent_chain_env(a, a->seeding ? LEV_GATECHAIN_TOOL_SEED : LEV_GATECHAIN_CALL, home, &env);
	(void)lev_gatechain_decide(&env, &gc, &cs->gd, &err);
	cs->tool = cs->gd.canon;
	cs->ti = cs->gd.tool;
	cs->args = cs->gd.args ? cs->gd.args : call->arguments;
	agent_audit_steps(a, call->id, cs->gd.tool ? cs->tool : call->name, &cs->gd, NULL);
	if (cs->gd.verdict == LEV_ALLOW)
		conclude(cs, true, NULL);
	else if (cs->gd.verdict == LEV_DENY)
		conclude(cs, false, cs->gd.text);
	else if (a->seeding) {
		/* a tool seed runs before anybody can be asked */
		audit_asks(a, cs, LEV_ANSWER_NONE);
		conclude(cs, false, cs->gd.text);
	} else
		ask_together(a, cs);
}

/*
 * A call of a turn replayed from the journal (replay.h), after the gates
 * decided it again: the tighter of that and the journal wins.  Returns true
 * when the journal settled the call (its result is in cs->out; it is not
 * run), false when it runs (or is refused) as decided now.
 */
static bool replayed_call(struct lev_agent *a, struct call_state *cs)
{
	const char *text = NULL;
	enum lev_replay_state rs;
	bool ok = false;

	if (!lev_replay_in_turn(a->o.replay) || a->seeding)
		return false;
	rs = lev_replay_call(a->o.replay, cs->call->id, &text, &ok);
	if (rs == LEV_REPLAY_LIVE)
		return false;
	if (!cs->dec->allowed) {
		/* refused now: what the model said after the logged result no longer holds */
		if (rs != LEV_REPLAY_DENIED)
			lev_replay_end(a->o.replay);
		return false;
	}
	if (rs == LEV_REPLAY_DENIED) {
		conclude(cs, false, text ? text : "[denied] refused");
		cs->dec->replayed = "denied";
		return true;
	}
	/* the run's own state (context, output) is rebuilt by running them again */
	if (cs->ti->kind == LEV_TOOL_INLINE)
		return false;
	if (rs == LEV_REPLAY_DONE) {
		lev_tool_output_set(cs->out, text ? text : "", !ok);
		cs->dec->replayed = "done";
		return true;
	}
	/* a question nobody answered is asked again */
	if (cs->ti->kind == LEV_TOOL_ASK)
		return false;
	lev_tool_output_set(cs->out, LEV_REPLAY_IN_FLIGHT_TEXT, true);
	cs->dec->replayed = "in_flight";
	return true;
}

int lev_agent_dispatch(struct lev_agent *a, const struct lev_tool_call *call,
		       struct lev_tool_output *out, struct lev_call_decision *dec,
		       struct lev_err *err)
{
	struct call_state cs = { 0 };

	if (!a || !call || !out || !dec)
		return lev_err_set(err, -EINVAL, "dispatch needs a run, a call and outputs");
	memset(dec, 0, sizeof(*dec));
	if (a->o.hooks.step && !a->seeding)
		a->o.hooks.step(a->o.hooks.data, a);
	cs.call = call;
	cs.dec = dec;
	cs.out = out;
	a->calls++;
	decide_and_run(a, &cs);
	if (replayed_call(a, &cs)) {
		tool_call_event(a, &cs);
		if (dec->allowed) {
			result_labels(a, &cs);
		} else {
			dec->label = refusal_label(a, &cs);
			dec->integrity = lev_taint_model_integrity(lev_context_taint(a->ctx));
		}
		lev_gatechain_decision_release(&cs.gd);
		return 0;
	}
	/* the decision is recorded before the call runs: it was made before */
	if (observed(a))
		tool_call_event(a, &cs);
	if (dec->allowed) {
		/* the decisions so far are on disk before any side effect happens */
		dec->acted = !lev_tool_read_only(cs.ti);
		if (a->rec && dec->acted)
			(void)lev_runrecord_sync(a->rec, NULL);
		execute(a, &cs);
		result_labels(a, &cs);
		if (cs.inner_untrusted)
			dec->integrity = LEV_UNTRUSTED;
	} else {
		dec->label = refusal_label(a, &cs);
		dec->integrity = lev_taint_model_integrity(lev_context_taint(a->ctx));
	}
	lev_gatechain_decision_release(&cs.gd);
	lev_strv_free(cs.hops);
	return 0;
}

void agent_result_event(struct lev_agent *a, const struct lev_tool_call *call,
			const struct lev_tool_output *out, const struct lev_call_decision *dec,
			enum lev_level label, bool truncated)
{
	json_t *ev;

	if (!observed(a))
		return;
	ev = agent_event_new("tool_result");
	json_object_set_new(ev, "id", agent_jtext(call->id));
	json_object_set_new(ev, "tool", agent_jtext(call->name));
	json_object_set_new(ev, "ok", json_boolean(dec->allowed && !out->is_error));
	json_object_set_new(ev, "label", json_string(lev_level_name(label)));
	json_object_set_new(ev, "integrity", json_string(lev_integrity_name(dec->integrity)));
	json_object_set_new(ev, "bytes", json_integer((json_int_t)out->len));
	json_object_set_new(ev, "truncated", json_boolean(truncated || out->truncated));
	json_object_set_new(ev, "text", agent_jtext_capped(out->text));
	if (dec->replayed)
		json_object_set_new(ev, "replayed", json_string(dec->replayed));
	if (a->route_note)
		json_object_set_new(ev, "routed", agent_jtext(a->route_note));
	agent_emit(a, ev);
}

/* Dispatch CALL, add its result to the context and record the result event. */
void agent_run_call(struct lev_agent *a, const struct lev_tool_call *call)
{
	struct lev_tool_output out = { 0 };
	struct lev_call_decision dec = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	enum lev_level label = LEV_PUBLIC;
	bool truncated = false;
	int r;

	if (lev_agent_dispatch(a, call, &out, &dec, &err) < 0)
		lev_tool_output_set(&out, "[error] internal error", true);
	label = dec.label;
	a->peak = lev_level_max(a->peak, label);
	if (dec.integrity == LEV_UNTRUSTED && dec.allowed)
		a->ever_untrusted = true;
	agent_flow_after_call(a, call, dec.allowed && !out.is_error);
	r = agent_route_result(a, call, &out, label, &truncated, &err);
	if (r > 0)
		r = lev_context_add_tool_result(a->ctx, lev_tool_call_wire_id(call),
						out.text ? out.text : "", out.len, out.is_error, label,
						0, &truncated, &err);
	agent_watch_call(a, call, dec.allowed, out.is_error);
	if (r < 0 && !a->internal_error)
		a->internal_error = xasprintf("cannot add a tool result to the context: %s",
					      err.msg);
	agent_integrity_result(a, call->name, call->arguments, dec.integrity, out.text, out.len,
			       dec.allowed);
	agent_result_event(a, call, &out, &dec, label, truncated);
	/* a read's result may wait for the next write; an action's is written now */
	if (a->rec && dec.acted)
		(void)lev_runrecord_flush(a->rec, NULL);
	free(a->route_note);
	a->route_note = NULL;
	lev_call_decision_release(&dec);
	lev_tool_output_release(&out);
}

/* Every call of an interrupted turn still gets a result. */
void agent_skip_call(struct lev_agent *a, const struct lev_tool_call *call, const char *why)
{
	json_t *ev;

	(void)lev_context_add_tool_result(a->ctx, lev_tool_call_wire_id(call), why, strlen(why),
					  true, LEV_PUBLIC, 0, NULL, NULL);
	ev = agent_event_new("tool_result");
	json_object_set_new(ev, "id", agent_jtext(call->id));
	json_object_set_new(ev, "tool", agent_jtext(call->name));
	json_object_set_new(ev, "ok", json_false());
	json_object_set_new(ev, "label", json_string("public"));
	json_object_set_new(ev, "bytes", json_integer((json_int_t)strlen(why)));
	json_object_set_new(ev, "truncated", json_false());
	json_object_set_new(ev, "text", agent_jtext(why));
	agent_emit(a, ev);
}
