/*
 * fanout.c - sub-agents: fan_out (one worker per work item, merged into one
 * report), spawn_agent, check_agent, wait_for_agent and kill_agent, and a
 * fan-out stage's own steps (docs/sub-agents.md).
 *
 * A sub-agent is a run of its own (agent_new_child(), in a process of its
 * own: fanout-proc.c): its own context, stages and gate chain, built
 * under its parent's policy or tighter, never looser:
 *	config		the same config, the same --allow / --yolo
 *	permissions	each call is decided by its own stage's input AND by
 *			each ancestor's (gatechain.c ceiling_permission())
 *	read paths	the parent's file context itself (workdir, [read_paths]
 *			grants): a child reads nothing its parent could not
 *	sandbox		resolved with the parent's stage sandbox as the ceiling
 *			(kind the stronger, network off wins)
 *	taint		the task carries the parent's taint and integrity; the
 *			answer comes back labelled with the highest label the
 *			child saw, untrusted when it saw untrusted content
 *	asks		the parent's hooks: the same prompt, the same lev respond
 *	record		a sub-record under the parent's record (children/<id>),
 *			named by the parent's child_started / child_finished
 *			events
 * Workers and children run in parallel, at most max_workers at once
 * (fanout-proc.c); with a script model, one after another here, and a
 * spawn_agent child without wait then runs when check_agent or
 * wait_for_agent first asks for it.
 */
#include "liblev/run/fanout-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/agentstore.h"
#include "liblev/conf/datadir.h"
#include "liblev/run/context.h"
#include "liblev/run/runrecord.h"

#define SECTION_MAX ((size_t)32 << 10)	/* one worker's share of the report */
#define ITEM_ID_MAX 64
#define KIDS_MAX 256			/* spawn_agent children of one run */

enum kid_state {
	KID_QUEUED,
	KID_RUNNING,			/* in a process of its own */
	KID_DONE,
	KID_FAILED,
	KID_KILLED,
};

struct agent_kid {
	char *id;			/* "c1" */
	char *task;
	struct lev_blueprint *own_bp;	/* an installed agent's, or NULL (this blueprint) */
	char *entry;			/* the stage it starts in, or NULL */
	unsigned depth_limit;
	enum lev_level task_label;
	bool task_untrusted;
	enum kid_state state;
	struct child_job job;		/* its run, once started */
};

struct agent_kids {
	struct agent_kid *v;
	size_t n;
	unsigned workers;		/* fan_out workers started, for their ids */
};

void agent_children_free(struct lev_agent *a)
{
	if (!a->kids)
		return;
	for (size_t i = 0; i < a->kids->n; i++) {
		struct agent_kid *k = &a->kids->v[i];

		free(k->id);
		free(k->task);
		free(k->entry);
		lev_blueprint_free(k->own_bp);
		/* a child still running when its parent ends is cancelled with it */
		if (k->job.pid > 0) {
			kill(k->job.pid, SIGTERM);
			while (waitpid(k->job.pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
		if (k->job.up >= 0)
			close(k->job.up);
		if (k->job.down >= 0)
			close(k->job.down);
		lev_buf_release(&k->job.in);
		child_result_release(&k->job.res);
	}
	free(a->kids->v);
	free(a->kids);
	a->kids = NULL;
	free(a->fanout_fail);
	a->fanout_fail = NULL;
}

static struct agent_kids *kids(struct lev_agent *a)
{
	if (!a->kids)
		a->kids = xcalloc(1, sizeof(*a->kids));
	return a->kids;
}

/* ---- finding the worker --------------------------------------------------- */

/* The installed agent NAME, loaded and bound (its identity checked). */
static int load_installed(const char *name, struct lev_blueprint **out, struct lev_err *err)
{
	_cleanup_free_ char *dir = NULL;
	struct stat st;

	if (!name || !lev_agent_name_valid(name))
		return lev_err_set(err, -EINVAL, "'%.64s' is not an agent name",
				   name ? name : "");
	if (lev_datadir_agent_dir(name, &dir, err) < 0)
		return -EINVAL;
	if (stat(dir, &st) < 0)
		return lev_err_set(err, -ENOENT, "agent '%s' is not installed (lev add it first)",
				   name);
	if (lev_blueprint_load(dir, out, err) < 0)
		return lev_err_wrap(err, "agent '%s'", name);
	lev_agentstore_bind(*out);
	return 0;
}

/*
 * NAME as a worker: a stage of this blueprint that allows workers, else an
 * installed agent.  *own gets the installed agent's blueprint (NULL: this
 * one), *entry the stage to start in (NULL: its entry stage).
 */
static int resolve_worker(struct lev_agent *a, const char *stage, const char *agent,
			  struct lev_blueprint **own, const char **entry, struct lev_err *err)
{
	const struct lev_stage *st;

	*own = NULL;
	*entry = NULL;
	if (stage) {
		st = lev_blueprint_stage(a->bp, stage);
		if (!st || !st->allow_as_worker)
			return lev_err_set(err, -EINVAL, "stage '%.64s' %s", stage,
					   st ? "does not set allow_as_worker = true"
					      : "is not a stage of this blueprint");
		*entry = st->name;
		return 0;
	}
	return load_installed(agent, own, err);
}

/* ---- running one child ----------------------------------------------------- */

static bool any_ancestor_untrusted(struct lev_agent *a)
{
	return lev_taint_model_integrity(lev_context_taint(a->ctx)) == LEV_UNTRUSTED;
}

static enum lev_level parent_level(struct lev_agent *a)
{
	return lev_level_max(a->seen, lev_context_taint_level(a->ctx));
}

/* The depth a child of A may not exceed, or a refusal in *why. */
static bool depth_ok(struct lev_agent *a, char **why)
{
	if (a->depth + 1 <= a->depth_limit)
		return true;
	*why = xasprintf("[denied] max_child_depth: this run is %s (depth %u) and sub-agents may "
			 "nest at most %u deep; a sub-agent here would be at depth %u",
			 a->depth ? "a sub-agent" : "the top-level run", a->depth, a->depth_limit,
			 a->depth + 1);
	return false;
}

/* The limit for a child from BP (its own max_child_depth counts from its depth). */
static unsigned child_limit(struct lev_agent *a, const struct lev_blueprint *bp, unsigned extra)
{
	unsigned d = a->depth + 1, lim = a->depth_limit;

	if (d + lev_blueprint_child_depth(bp) < lim)
		lim = d + lev_blueprint_child_depth(bp);
	if (extra != UINT32_MAX && d + extra < lim)
		lim = d + extra;
	return lim;
}

/* ---- fan_out ---------------------------------------------------------------- */

/* The item's id: printable and short, else "item-N". */
static char *item_id(const json_t *item, size_t i)
{
	const char *id = json_string_value(json_object_get(item, "id"));
	size_t n = id ? strlen(id) : 0;

	if (!n || n > ITEM_ID_MAX)
		return xasprintf("item-%zu", i + 1);
	for (size_t j = 0; j < n; j++)
		if ((unsigned char)id[j] < 0x20 || id[j] == 0x7f)
			return xasprintf("item-%zu", i + 1);
	return xstrdup(id);
}

/* What a worker is told: its item and nothing else. */
static char *item_task(const char *id, const json_t *item)
{
	const json_t *ctx = json_object_get(item, "context");
	_cleanup_free_ char *body = NULL;

	if (json_is_string(ctx))
		body = xstrdup(json_string_value(ctx));
	else
		body = json_dumps(ctx ? ctx : item, JSON_INDENT(2) | JSON_SORT_KEYS);
	return xasprintf("Work item '%s':\n%s", id, body ? body : "{}");
}

/* One worker's section of the report, cut to its share. */
static void add_section(struct lev_buf *b, const char *id, const struct child_result *r)
{
	const char *text = r->ok ? r->answer : r->error;
	size_t len = strlen(text), keep = len;

	if (keep > SECTION_MAX) {
		keep = SECTION_MAX;
		while (keep && ((unsigned char)text[keep] & 0xc0) == 0x80)
			keep--;
	}
	(void)lev_buf_addf(b, "\n\n## worker %s%s\n", id, r->ok ? "" : " FAILED");
	(void)lev_buf_add(b, text, keep);
	if (keep < len)
		(void)lev_buf_addf(b, "\n(cut at %zu of %zu bytes: the worker's record has it all)",
				   keep, len);
}

struct fanout_plan {
	const char *stage;		/* worker stage, or NULL */
	const char *agent;		/* worker agent, or NULL */
	uint64_t max_items;
	enum lev_worker_failure on_failure;
	const char *region;		/* results region, or NULL: the report */
};

/* Where the workers come from: the fan-out stage's keys, else the call's agent. */
static int fanout_plan(struct lev_agent *a, const json_t *args, struct fanout_plan *p,
		       struct lev_err *err)
{
	const struct lev_stage *st = a->stages[a->cur].st;
	const struct lev_fanout_spec *f = &st->fanout;
	const char *agent = json_string_value(json_object_get(args, "agent"));

	memset(p, 0, sizeof(*p));
	p->max_items = f->max_items;
	p->on_failure = f->on_failure;
	if (f->results_region && strcmp(f->results_region, "conversation"))
		p->region = f->results_region;
	if (st->mode == LEV_MODE_FAN_OUT || f->worker_stage || f->worker_agent) {
		if (f->worker_query && !f->worker_stage && !f->worker_agent)
			return lev_err_set(err, -EINVAL, "stage '%s' names its worker by "
					   "worker_query, which lev does not match; set "
					   "worker_agent", st->name);
		p->stage = f->worker_stage;
		p->agent = f->worker_agent;
		return 0;
	}
	if (!agent)
		return lev_err_set(err, -EINVAL, "name the installed agent each worker runs in "
				   "'agent' (this stage names no worker)");
	p->agent = agent;
	return 0;
}

struct fanout_run {
	size_t ok, failed, not_run;
	enum lev_level label;
	bool untrusted;
	char *fail_why;
};

/* Put worker J's answer (item ID) into the results region, or its section into SECTIONS. */
static void fanout_result(struct lev_agent *a, int region, const char *id,
			  const struct child_result *r, struct lev_buf *sections)
{
	struct lev_buf one = LEV_BUF_INIT;

	if (region < 0) {
		add_section(sections, id, r);
		return;
	}
	add_section(&one, id, r);
	(void)lev_context_add_text(a->ctx, (size_t)region, one.buf + 2, one.len - 2, r->label,
				   NULL);
	if (r->untrusted)
		lev_context_mark_untrusted(a->ctx);
	lev_buf_release(&one);
	(void)lev_buf_addf(sections, "\n- %s: %s", id, r->ok ? "done" : "FAILED");
}

static void fanout_workers(struct lev_agent *a, const struct fanout_plan *p, const json_t *items,
			   size_t n, struct lev_buf *sections, struct fanout_run *fr)
{
	struct lev_blueprint *own = NULL;
	struct lev_err err = LEV_ERR_INIT;
	const struct lev_blueprint *bp;
	const char *entry = NULL;
	int region = p->region ? lev_context_region_find(a->ctx, p->region) : -1;
	bool have_worker = resolve_worker(a, p->stage, p->agent, &own, &entry, &err) == 0;
	_cleanup_free_ char *why_not = have_worker ? NULL : xasprintf("no worker: %s", err.msg);
	_cleanup_free_ struct child_job *jobs = xcalloc(n ? n : 1, sizeof(*jobs));
	char **ids = xcalloc(n + 1, sizeof(*ids)), **tags = xcalloc(n + 1, sizeof(*tags));
	char **tasks = xcalloc(n + 1, sizeof(*tasks));

	bp = own ? own : a->bp;
	for (size_t i = 0; i < n; i++) {
		const json_t *item = json_array_get(items, i);

		ids[i] = item_id(item, i);
		tasks[i] = item_task(ids[i], item);
		tags[i] = xasprintf("w%u", ++kids(a)->workers);
		jobs[i] = (struct child_job){
			.id = tags[i],
			.bp = bp,
			.entry = entry,
			.task = tasks[i],
			.depth_limit = child_limit(a, bp, UINT32_MAX),
			.task_label = parent_level(a),
			.task_untrusted = any_ancestor_untrusted(a),
			.worker = true,
			.no_start = why_not,
			.up = -1,
			.down = -1,
		};
	}
	agent_kids_run(a, jobs, n, (unsigned)a->stages[a->cur].st->fanout.max_workers,
		       p->on_failure == LEV_WORKERS_FAIL);
	/* the worker whose failure stopped the rest is named, not one stopped because of it */
	for (size_t i = 0; i < n && p->on_failure == LEV_WORKERS_FAIL; i++)
		if (jobs[i].stop_cause && !fr->fail_why)
			fr->fail_why = xasprintf("worker '%s' failed (on_worker_failure = \"fail\"): %s",
						 ids[i], jobs[i].res.error);
	/* in the order of the items, whatever order they ended in */
	for (size_t i = 0; i < n; i++) {
		struct child_result *r = &jobs[i].res;

		if (!jobs[i].started) {
			fr->not_run++;
			continue;
		}
		fr->label = lev_level_max(fr->label, r->label);
		fr->untrusted = fr->untrusted || r->untrusted;
		if (r->ok)
			fr->ok++;
		else
			fr->failed++;
		fanout_result(a, region, ids[i], r, sections);
		if (!r->ok && p->on_failure == LEV_WORKERS_FAIL && !fr->fail_why)
			fr->fail_why = xasprintf("worker '%s' failed (on_worker_failure = \"fail\"): %s",
						 ids[i], r->error);
		child_result_release(r);
	}
	lev_strv_free(ids);
	lev_strv_free(tags);
	lev_strv_free(tasks);
	lev_blueprint_free(own);
}

static void fan_out(struct lev_agent *a, const json_t *args, struct lev_tool_output *out,
		    enum lev_level *label, bool *untrusted)
{
	const json_t *items = json_object_get(args, "items");
	struct lev_buf report = LEV_BUF_INIT, sections = LEV_BUF_INIT;
	struct lev_err err = LEV_ERR_INIT;
	struct fanout_run fr = { 0 };
	struct fanout_plan p;
	size_t n = json_array_size(items), run = n;
	const struct lev_stage *st = a->stages[a->cur].st;
	_cleanup_free_ char *why = NULL;

	if (fanout_plan(a, args, &p, &err) < 0) {
		_cleanup_free_ char *t = xasprintf("[error] fan_out: %s", err.msg);

		lev_tool_output_set(out, t, true);
		return;
	}
	if (n && !depth_ok(a, &why)) {
		lev_tool_output_set(out, why, true);
		return;
	}
	if (p.max_items && run > p.max_items)
		run = (size_t)p.max_items;
	fanout_workers(a, &p, items, run, &sections, &fr);
	fr.not_run += n - run;
	(void)lev_buf_addf(&report, "[fan_out results: %zu succeeded, %zu failed]", fr.ok,
			   fr.failed);
	if (n > run)
		(void)lev_buf_addf(&report, "\n%zu item(s) not run: over max_items = %llu", n - run,
				   (unsigned long long)p.max_items);
	if (fr.fail_why && fr.not_run > n - run)
		(void)lev_buf_addf(&report, "\n%zu item(s) not run: a worker failed",
				   fr.not_run - (n - run));
	if (p.region && n)
		(void)lev_buf_addf(&report, "\nEach worker's answer is in context region '%s':",
				   p.region);
	(void)lev_buf_add(&report, sections.buf, sections.len);
	lev_buf_release(&sections);
	lev_tool_output_set(out, report.buf, fr.fail_why != NULL);
	*label = lev_level_max(*label, fr.label);
	*untrusted = *untrusted || fr.untrusted;
	/* a cancelled run ends as cancelled at its next check, not by the stage's edges */
	if (st->mode == LEV_MODE_FAN_OUT && !agent_cancelled(a)) {
		/* the stage's one job is done: its report is its output */
		free(a->stage_output);
		a->stage_output = lev_buf_detach(&report, NULL);
		a->stage_output_label = lev_level_max(parent_level(a), fr.label);
		a->stage_output_integrity = fr.untrusted || any_ancestor_untrusted(a)
						    ? LEV_UNTRUSTED : LEV_TRUSTED;
		a->stage_done = true;
		a->stage_end = "fanned_out";
		free(a->fanout_fail);
		a->fanout_fail = TAKE_PTR(fr.fail_why);
	}
	lev_buf_release(&report);
	free(fr.fail_why);
}

/* ---- spawn_agent & co. --------------------------------------------------- */

static struct agent_kid *kid_find(struct lev_agent *a, const char *id)
{
	for (size_t i = 0; a->kids && id && i < a->kids->n; i++)
		if (!strcmp(a->kids->v[i].id, id))
			return &a->kids->v[i];
	return NULL;
}

/* The kid's state once its job has ended. */
static void kid_settle(struct agent_kid *k)
{
	if (k->state == KID_RUNNING && k->job.ended && k->job.pid <= 0)
		k->state = k->job.res.ok ? KID_DONE : KID_FAILED;
}

/* Start queued kid K now; *waits for it when it cannot run beside its parent. */
static void kid_start(struct lev_agent *a, struct agent_kid *k)
{
	if (k->state != KID_QUEUED)
		return;
	/* it starts now: with what its parent holds now, not when it was queued */
	k->task_label = lev_level_max(k->task_label, parent_level(a));
	k->task_untrusted = k->task_untrusted || any_ancestor_untrusted(a);
	k->job = (struct child_job){
		.id = k->id,
		.bp = k->own_bp ? k->own_bp : a->bp,
		.entry = k->entry,
		.task = k->task,
		.depth_limit = k->depth_limit,
		.task_label = k->task_label,
		.task_untrusted = k->task_untrusted,
		.up = -1,
		.down = -1,
	};
	k->state = KID_RUNNING;
	(void)agent_kid_start(a, &k->job);
	kid_settle(k);
}

/* Take what the running kids sent; start queued ones while fewer than max_workers run. */
static void kids_pump(struct lev_agent *a)
{
	uint64_t cap = a->stages[a->cur].st->fanout.max_workers, running = 0;

	for (size_t i = 0; a->kids && i < a->kids->n; i++) {
		struct agent_kid *k = &a->kids->v[i];

		agent_kid_poll(a, &k->job);
		kid_settle(k);
		running += k->state == KID_RUNNING;
	}
	for (size_t i = 0; a->kids && i < a->kids->n && agent_kids_forked(a); i++) {
		if (cap && running >= cap)
			break;
		if (a->kids->v[i].state == KID_QUEUED) {
			kid_start(a, &a->kids->v[i]);
			running += a->kids->v[i].state == KID_RUNNING;
		}
	}
}

/* Run kid K to its end (start it when queued). */
static void kid_run(struct lev_agent *a, struct agent_kid *k)
{
	kid_start(a, k);
	if (k->state == KID_RUNNING)
		agent_kid_wait(a, &k->job);
	kid_settle(k);
}

/* The kid's answer as a tool result (its label and integrity raise the call's). */
static void kid_answer(const struct agent_kid *k, bool status, struct lev_tool_output *out,
		       enum lev_level *label, bool *untrusted)
{
	_cleanup_free_ char *t = NULL;

	*label = lev_level_max(*label, k->job.res.label);
	*untrusted = *untrusted || k->job.res.untrusted;
	if (k->state == KID_KILLED)
		t = xasprintf("[error] sub-agent '%s' was killed %s", k->id,
			      k->job.started ? "while it ran" : "before it ran");
	else if (k->state == KID_FAILED)
		t = xasprintf("[error] sub-agent '%s' failed: %s", k->id, k->job.res.error);
	else if (status)
		t = xasprintf("sub-agent '%s': done\n\n%s", k->id, k->job.res.answer);
	else
		t = xstrdup(k->job.res.answer);
	lev_tool_output_set(out, t, k->state != KID_DONE);
}

/* The task a child gets: the task, then what the caller added to it. */
static char *spawn_task(const json_t *args)
{
	struct lev_buf b = LEV_BUF_INIT;
	const char *seed = json_string_value(json_object_get(args, "seed_context"));
	const char *fmt = json_string_value(json_object_get(args, "output_format"));
	const char *ins = json_string_value(json_object_get(args, "output_instructions"));

	(void)lev_buf_adds(&b, json_string_value(json_object_get(args, "task")));
	if (seed && *seed)
		(void)lev_buf_addf(&b, "\n\nStarting material:\n%s", seed);
	if (fmt && *fmt)
		(void)lev_buf_addf(&b, "\n\nGive your final answer as %s.", fmt);
	if (ins && *ins)
		(void)lev_buf_addf(&b, "\n\nHow to write your answer: %s", ins);
	return lev_buf_detach(&b, NULL);
}

static void spawn(struct lev_agent *a, const json_t *args, struct lev_tool_output *out,
		  enum lev_level *label, bool *untrusted)
{
	const char *name = json_string_value(json_object_get(args, "blueprint"));
	const json_t *mcd = json_object_get(args, "max_child_depth");
	struct lev_err err = LEV_ERR_INIT;
	struct lev_blueprint *own = NULL;
	const struct lev_stage *st = name ? lev_blueprint_stage(a->bp, name) : NULL;
	const char *entry = NULL;
	_cleanup_free_ char *why = NULL, *t = NULL;
	struct agent_kids *ks;
	struct agent_kid *k;

	if (!depth_ok(a, &why)) {
		lev_tool_output_set(out, why, true);
		return;
	}
	if (a->kids && a->kids->n >= KIDS_MAX) {
		lev_tool_output_set(out, "[error] this run has started as many sub-agents as it "
				    "may", true);
		return;
	}
	/* a stage of this blueprint (it must allow workers), else an installed agent */
	if (resolve_worker(a, st ? name : NULL, name, &own, &entry, &err) < 0) {
		t = xasprintf("[error] spawn_agent: %s", err.msg);
		lev_tool_output_set(out, t, true);
		return;
	}
	ks = kids(a);
	ks->v = xreallocarray(ks->v, ks->n + 1, sizeof(*ks->v));
	k = &ks->v[ks->n];
	memset(k, 0, sizeof(*k));
	k->id = xasprintf("c%zu", ks->n + 1);
	k->task = spawn_task(args);
	k->own_bp = own;
	k->entry = entry ? xstrdup(entry) : NULL;
	k->depth_limit = child_limit(a, own ? own : a->bp,
				     json_is_integer(mcd) ? (unsigned)json_integer_value(mcd)
							  : UINT32_MAX);
	k->task_label = parent_level(a);
	k->task_untrusted = any_ancestor_untrusted(a);
	k->state = KID_QUEUED;
	ks->n++;
	if (json_is_true(json_object_get(args, "wait"))) {
		kid_run(a, k);
		kid_answer(k, false, out, label, untrusted);
		return;
	}
	kids_pump(a);
	if (k->state == KID_QUEUED && !agent_kids_forked(a))
		t = xasprintf("spawned sub-agent '%s' (queued: with a script model lev runs "
			      "sub-agents one at a time, so it runs when check_agent or "
			      "wait_for_agent first asks for it)", k->id);
	else if (k->state == KID_QUEUED)
		t = xasprintf("spawned sub-agent '%s' (queued: max_workers sub-agents are running; "
			      "it starts when one ends)", k->id);
	else
		t = xasprintf("spawned sub-agent '%s' (running)", k->id);
	lev_tool_output_set(out, t, false);
}

#define MAIL_MAX 16384	/* bytes of one message to a running sub-agent: well within its pipe */

/*
 * send_to_agent to running child K: over its pipe, with the labels its
 * parent holds now (a message written in an untrusted context makes the
 * child's context untrusted), into target_region when the child has it.
 */
static void send_running(struct lev_agent *a, struct agent_kid *k, const json_t *args,
			 struct lev_tool_output *out)
{
	const char *msg = json_string_value(json_object_get(args, "message"));
	const char *region = json_string_value(json_object_get(args, "target_region"));
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *t = NULL;

	if (!msg || strlen(msg) > MAIL_MAX)
		t = xasprintf("[error] a message to a running sub-agent is text of at most %d "
			      "bytes", MAIL_MAX);
	else if (agent_kid_send(&k->job, msg, region && *region ? region : NULL, parent_level(a),
				any_ancestor_untrusted(a), &err) < 0)
		t = xasprintf("[error] sub-agent '%s' cannot be reached: %s", k->id, err.msg);
	if (t) {
		lev_tool_output_set(out, t, true);
		return;
	}
	t = xasprintf("message sent to sub-agent '%s' (running: it reads it before its next "
		      "model turn%s%s%s)", k->id, region && *region ? ", in its region '" : "",
		      region && *region ? region : "", region && *region ? "' if it has one" : "");
	lev_tool_output_set(out, t, false);
}

static void kid_tool(struct lev_agent *a, enum lev_tool_op op, const json_t *args,
		     struct lev_tool_output *out, enum lev_level *label, bool *untrusted)
{
	const char *id = json_string_value(json_object_get(args, "agent_id"));
	struct agent_kid *k = kid_find(a, id);
	_cleanup_free_ char *t = NULL;

	if (!k) {
		t = xasprintf("[error] no sub-agent '%.64s' in this run", id ? id : "");
		lev_tool_output_set(out, t, true);
		return;
	}
	kids_pump(a);
	switch (op) {
	case LEV_OP_KILL_AGENT:
		if (k->state == KID_QUEUED) {
			k->state = KID_KILLED;
			t = xasprintf("sub-agent '%s' killed (it had not started)", k->id);
		} else if (k->state == KID_RUNNING) {
			agent_kid_cancel(a, &k->job);
			k->state = KID_KILLED;
			t = xasprintf("sub-agent '%s' killed (it was running)", k->id);
		} else {
			t = xasprintf("sub-agent '%s' has already finished (%s)", k->id,
				      k->state == KID_DONE ? "done" : k->state == KID_KILLED
								? "killed" : "failed");
		}
		lev_tool_output_set(out, t, false);
		return;
	case LEV_OP_SEND_TO_AGENT:
		if (k->state == KID_RUNNING) {
			send_running(a, k, args, out);
			return;
		}
		if (k->state != KID_QUEUED) {
			t = xasprintf("[error] sub-agent '%s' has already finished (%s); a message "
				      "reaches a sub-agent only while it is queued or running",
				      k->id, k->state == KID_DONE ? "done" : k->state == KID_KILLED
							 ? "killed" : "failed");
			lev_tool_output_set(out, t, true);
			return;
		}
		/* it carries what the parent saw when it wrote the message */
		t = xasprintf("%s\n\nMessage from the agent that started you:\n%s", k->task,
			      json_string_value(json_object_get(args, "message")));
		free(k->task);
		k->task = TAKE_PTR(t);
		k->task_label = lev_level_max(k->task_label, parent_level(a));
		k->task_untrusted = k->task_untrusted || any_ancestor_untrusted(a);
		t = xasprintf("message added for sub-agent '%s' (it reads it after its task)", k->id);
		lev_tool_output_set(out, t, false);
		return;
	case LEV_OP_CHECK_AGENT:
		if (k->state == KID_RUNNING || (k->state == KID_QUEUED && agent_kids_forked(a))) {
			t = xasprintf("sub-agent '%s': %s", k->id, k->state == KID_RUNNING
						 ? "running" : "queued");
			lev_tool_output_set(out, t, false);
			return;
		}
		/* a script model's queued child runs now */
		__attribute__((fallthrough));
	case LEV_OP_WAIT_FOR_AGENT:
		kid_run(a, k);
		kid_answer(k, op == LEV_OP_CHECK_AGENT, out, label, untrusted);
		return;
	default:
		lev_tool_output_set(out, "[error] not a sub-agent tool", true);
		return;
	}
}

void agent_children_pump(struct lev_agent *a)
{
	if (a->kids && a->kids->n)
		kids_pump(a);
}

void agent_children_settle(struct lev_agent *a)
{
	if (!a->stages[a->cur].st->requires_children)
		return;
	for (size_t i = 0; a->kids && i < a->kids->n; i++)
		kid_run(a, &a->kids->v[i]);
}

void agent_children_tool(struct lev_agent *a, const struct lev_tool_info *ti, const json_t *args,
			 struct lev_tool_output *out, enum lev_level *label, bool *untrusted)
{
	switch (ti->op) {
	case LEV_OP_FAN_OUT:
		fan_out(a, args, out, label, untrusted);
		break;
	case LEV_OP_SPAWN_AGENT:
		spawn(a, args, out, label, untrusted);
		break;
	default:
		kid_tool(a, ti->op, args, out, label, untrusted);
		break;
	}
}

/* ---- the fan-out stage ----------------------------------------------------- */

int agent_fanout_check(struct lev_agent *a, struct lev_err *err)
{
	for (size_t i = 0; i < a->bp->n_stages; i++) {
		const struct lev_stage *st = &a->bp->stages[i];
		_cleanup_free_ char *dir = NULL;
		struct stat sb;

		if (st->mode != LEV_MODE_FAN_OUT || !st->fanout.worker_agent)
			continue;
		if (lev_datadir_agent_dir(st->fanout.worker_agent, &dir, NULL) < 0 ||
		    stat(dir, &sb) < 0)
			return lev_err_set(err, -ENOENT, "stage '%s' hands its work items to the "
					   "agent '%s', which is not installed; install it with "
					   "'lev add'", st->name, st->fanout.worker_agent);
	}
	return 0;
}

bool agent_fanout_no_call(struct lev_agent *a, char **why)
{
	const struct lev_stage *st = a->stages[a->cur].st;
	const char *tool = lev_tooltable_name(LEV_OP_FAN_OUT);
	_cleanup_free_ char *nudge = NULL;

	if (++a->fanout_attempts > st->fanout.max_attempts) {
		*why = xasprintf("fan-out stage '%s' ended without calling %s (asked %llu "
				 "time(s), its max_attempts)", st->name, tool,
				 (unsigned long long)st->fanout.max_attempts);
		return true;
	}
	nudge = xasprintf("This stage's job is one %s call: call %s with one entry in items "
			  "per work item (an empty items array when there is nothing to hand out).",
			  tool, tool);
	(void)lev_context_add_text(a->ctx, lev_context_conversation(a->ctx), nudge,
				   strlen(nudge), LEV_PUBLIC, NULL);
	return false;
}

void agent_fanout_kick(struct lev_agent *a, struct lev_buf *kick)
{
	const struct stage_rt *s = &a->stages[a->cur];
	const struct lev_fanout_spec *f = &s->st->fanout;

	if (f->split_prompt)
		(void)lev_buf_addf(kick, "\n\n%s\n\n", f->split_prompt);
	(void)lev_buf_addf(kick, "This stage's whole job is one %s call: items is one entry "
				 "per work item, {\"id\": \"<short-slug>\", \"context\": {...}}; "
				 "each item's context is everything its worker gets.",
			   lev_tooltable_name(LEV_OP_FAN_OUT));
	if (f->max_items)
		(void)lev_buf_addf(kick, " At most %llu items are run.",
				   (unsigned long long)f->max_items);
	if (s->visits > 1)
		(void)lev_buf_addf(kick, " This is round %u of this stage: hand out only what is "
					 "still unanswered (an empty items array if nothing is).",
				   s->visits);
}

const char *agent_fanout_merge(const struct lev_agent *a)
{
	const struct lev_stage *st = a->stages[a->cur].st;

	return st->mode == LEV_MODE_FAN_OUT && !a->fanout_fail ? st->fanout.merge_stage : NULL;
}
