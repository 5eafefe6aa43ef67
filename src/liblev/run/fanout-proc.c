/*
 * fanout-proc.c - running sub-agents (fan_out workers, spawn_agent
 * children): each in a process of its own, at most max_workers at once
 * (docs/sub-agents.md "Running in parallel").
 *
 * The parent forks one process per sub-agent.  The process is a copy of
 * the parent as it stands, so the child is built there by agent_new_child()
 * exactly as it would be in the parent (its ancestors' permission inputs,
 * the parent's file context and read grants, the sandbox ceiling, the
 * taint switch: the one effective policy of the run), runs its stage loop
 * to its end and reports back over a pipe, one frame per message (a 4-byte
 * big-endian length, then JSON):
 *
 *	child -> parent	{"op":"ask", the struct lev_ask}	answer: {"answer": N}
 *			{"op":"question", the struct lev_question}	answer: {"answer": "..."}
 *			{"op":"done", "ok", "answer", "error", "label", "untrusted", "record"}
 *	parent -> child	{"op":"message", "text", "region", "label", "untrusted"}
 *			(send_to_agent while it runs: taken before its next
 *			model turn, or kept while it waits for an answer)
 *
 * The parent multiplexes its children's pipes with poll(): an ask goes to
 * the parent's own hooks (the same prompt, the same lev respond path under
 * the daemon), one at a time; a result is kept in the job; the label and
 * integrity of what the child saw come back with it.  The parent's cancel
 * (its cancel flag or fd) sends SIGTERM to every child, which ends as a
 * cancelled run; a child whose parent dies gets SIGTERM too
 * (PR_SET_PDEATHSIG).  Only the parent writes the parent's record: a
 * child writes its own sub-record (children/<id>/), and the label ledger
 * is a file shared under flock (policy/filelabel.h).
 */
#include "liblev/run/fanout-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/provider/provider.h"
#include "liblev/run/context.h"
#include "liblev/run/runrecord.h"

#define FRAME_MAX ((size_t)64 << 20)	/* one message between a child and its parent */

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

void child_result_release(struct child_result *r)
{
	free(r->answer);
	free(r->error);
	free(r->record);
	memset(r, 0, sizeof(*r));
}

bool agent_kids_forked(const struct lev_agent *a)
{
	const struct lev_provider *p = a->stages[a->cur].prov;

	return !p || lev_provider_kind(p) != LEV_PROVIDER_SCRIPT;
}

/* ---- events ---------------------------------------------------------------- */

static void child_event(struct lev_agent *a, const char *name, const struct child_job *j,
			const struct child_result *res)
{
	json_t *ev = agent_event_new(name);

	json_object_set_new(ev, "stage", agent_jtext(a->stages[a->cur].st->name));
	json_object_set_new(ev, "child", agent_jtext(j->id));
	json_object_set_new(ev, "kind", json_string(j->worker ? "worker" : "child"));
	json_object_set_new(ev, "role", json_string(j->worker ? "worker" : "child"));
	json_object_set_new(ev, "agent", agent_jtext(j->bp->name));
	if (j->entry)
		json_object_set_new(ev, "entry_stage", agent_jtext(j->entry));
	json_object_set_new(ev, "depth", json_integer(a->depth + 1));
	if (!res && j->pid > 0)
		json_object_set_new(ev, "pid", json_integer(j->pid));
	if (res) {
		json_object_set_new(ev, "ok", json_boolean(res->ok));
		json_object_set_new(ev, "error", agent_jtext(res->error));
		json_object_set_new(ev, "label", json_string(lev_level_name(res->label)));
		json_object_set_new(ev, "integrity", json_string(res->untrusted ? "untrusted"
										: "trusted"));
		json_object_set_new(ev, "record", agent_jtext(res->record));
		json_object_set_new(ev, "output", agent_jtext_capped(res->answer));
	}
	agent_emit(a, ev);
}

/* ---- one child, in this process -------------------------------------------- */

/*
 * Run J as a child of A to its end here, with O (A's options, its hooks as
 * the caller wants them).  Never fails as a call: a child that cannot be
 * built or does not finish is a failed result saying why.  Emits nothing.
 */
static void child_exec(struct lev_agent *a, struct lev_agent_opts *o, const struct child_job *j,
		       struct child_result *res)
{
	struct agent_child_spec cs = {
		.parent = a,
		.entry = j->entry,
		.depth_limit = j->depth_limit,
		.task_label = j->task_label,
		.task_untrusted = j->task_untrusted,
	};
	_cleanup_free_ char *runs = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_agent *c = NULL;
	const char *out;

	memset(res, 0, sizeof(*res));
	res->label = j->task_label;
	res->untrusted = j->task_untrusted;
	if (a->rec)
		runs = lev_path_join(lev_runrecord_dir(a->rec), "children");
	o->bp = j->bp;
	o->task = j->task;
	o->runs_dir = runs;
	o->run_id = NULL;
	o->resume = false;
	o->replay = NULL;
	/* asks and questions reach the same person; progress and the journal stay the parent's */
	o->hooks.event = NULL;
	o->hooks.turn = NULL;
	o->hooks.step = NULL;
	o->hooks.boundary = NULL;
	if (agent_new_child(o, &cs, &c, &err) < 0) {
		res->error = xasprintf("the sub-agent could not start: %s", err.msg);
		return;
	}
	/* its calls' ids say where they were made: "c1/call_2" */
	c->call_prefix = xasprintf("%s%s/", a->call_prefix ? a->call_prefix : "", j->id);
	(void)lev_agent_run(c, &err);
	out = lev_agent_output(c);
	res->label = lev_level_max(res->label, c->peak);
	res->untrusted = res->untrusted || c->ever_untrusted;
	res->record = lev_agent_record_dir(c) ? xstrdup(lev_agent_record_dir(c)) : NULL;
	if (lev_agent_status(c) != LEV_RUN_COMPLETE)
		res->error = xasprintf("the sub-agent %s: %s",
				       lev_agent_status(c) == LEV_RUN_CANCELLED ? "was cancelled"
										: "failed",
				       lev_agent_error(c) ? lev_agent_error(c) : "no reason given");
	else if (!out || !out[0])
		res->error = xstrdup("the sub-agent finished without an output");
	else {
		res->ok = true;
		res->answer = xstrdup(out);
	}
	lev_agent_free(c);
}

/* ---- frames ---------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Send M (taken) as one frame. */
static int frame_send(int fd, json_t *m)
{
	_cleanup_free_ char *s = json_dumps(m, JSON_COMPACT);
	size_t n = s ? strlen(s) : 0;
	unsigned char h[4] = { n >> 24, n >> 16, n >> 8, n };

	json_decref(m);
	if (!s || n > FRAME_MAX)
		return -1;
	return write_all(fd, (const char *)h, 4) < 0 ? -1 : write_all(fd, s, n);
}

/* The first whole frame of B, taken off it; NULL: none yet (*bad: never will be). */
static json_t *frame_take(struct lev_buf *b, bool *bad)
{
	const unsigned char *u = (const unsigned char *)b->buf;
	size_t n;
	json_t *m;

	if (b->len < 4)
		return NULL;
	n = (size_t)u[0] << 24 | (size_t)u[1] << 16 | (size_t)u[2] << 8 | u[3];
	if (n > FRAME_MAX) {
		*bad = true;
		return NULL;
	}
	if (b->len < 4 + n)
		return NULL;
	m = json_loadb(b->buf + 4, n, 0, NULL);
	memmove(b->buf, b->buf + 4 + n, b->len - 4 - n);
	lev_buf_truncate(b, b->len - 4 - n);
	if (!json_is_object(m)) {
		json_decref(m);
		*bad = true;
		return NULL;
	}
	return m;
}

/* Read one frame from FD, waiting for it; NULL: the other end is gone. */
static json_t *frame_recv(int fd)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(FRAME_MAX + 4);
	char chunk[4096];
	bool bad = false;
	json_t *m = NULL;

	while (!m && !bad) {
		ssize_t r = read(fd, chunk, sizeof(chunk));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || lev_buf_add(&b, chunk, (size_t)r) < 0)
			break;
		m = frame_take(&b, &bad);
	}
	lev_buf_release(&b);
	return m;
}

/* ---- the child's side ------------------------------------------------------ */

static volatile sig_atomic_t kid_cancel;
static volatile sig_atomic_t *kid_flag = &kid_cancel;
static int kid_cancel_wr = -1;

static void kid_on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	*kid_flag = 1;
	if (kid_cancel_wr >= 0)
		(void)!write(kid_cancel_wr, "x", 1);
	errno = saved;
}

struct relay {
	int up, down;
	json_t *mail;		/* messages that came while it waited for an answer */
};

static bool is_mail(const json_t *m)
{
	return lev_streq(jstr(m, "op"), "message");
}

static json_t *relay_call(struct relay *r, json_t *m)
{
	json_t *a;

	if (frame_send(r->up, m) < 0)
		return NULL;
	while ((a = frame_recv(r->down)) && is_mail(a))
		json_array_append_new(r->mail, a);
	return a;
}

/* The next message from the parent: one kept, else one waiting on the pipe. */
static int relay_mail(void *data, struct lev_agent_mail *out)
{
	struct relay *r = data;
	struct pollfd p = { .fd = r->down, .events = POLLIN };
	json_t *m = NULL;
	json_int_t label;

	if (json_array_size(r->mail)) {
		m = json_incref(json_array_get(r->mail, 0));
		json_array_remove(r->mail, 0);
	}
	while (!m && poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
		m = frame_recv(r->down);
		if (!m)
			return 0;
		if (!is_mail(m)) {	/* an answer nobody asked for: not mail */
			json_decref(m);
			m = NULL;
		}
	}
	if (!m)
		return 0;
	label = json_integer_value(json_object_get(m, "label"));
	*out = (struct lev_agent_mail){
		.text = xstrdup(jstr(m, "text") ? jstr(m, "text") : ""),
		.region = jstr(m, "region") ? xstrdup(jstr(m, "region")) : NULL,
		/* a label it cannot read is private; a missing integrity untrusted */
		.label = label >= LEV_PUBLIC && label <= LEV_PRIVATE ? (enum lev_level)label
								     : LEV_PRIVATE,
		.untrusted = !json_is_false(json_object_get(m, "untrusted")),
	};
	json_decref(m);
	return 1;
}

static enum lev_ask_answer relay_ask(void *data, const struct lev_ask *q)
{
	json_t *m = json_pack("{s:s, s:i, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?}",
			      "op", "ask", "kind", (int)q->kind, "stage", q->stage,
			      "call_id", q->call_id, "tool", q->tool, "prompt", q->prompt,
			      "detail", q->detail, "stage_label", q->stage_label,
			      "run_label", q->run_label, "call", q->call, "digest", q->digest);
	json_t *a = m ? relay_call(data, m) : NULL;
	json_int_t n = json_integer_value(json_object_get(a, "answer"));

	json_decref(a);
	return n >= LEV_ANSWER_NONE && n <= LEV_ANSWER_RUN ? (enum lev_ask_answer)n
							   : LEV_ANSWER_NONE;
}

static int relay_question(void *data, const struct lev_question *q, char **answer)
{
	json_t *choices = json_array();
	json_t *m, *a;
	const char *s;

	for (size_t i = 0; q->choices && q->choices[i]; i++)
		json_array_append_new(choices, json_string(q->choices[i]));
	m = json_pack("{s:s, s:i, s:s?, s:s?, s:s?, s:o}", "op", "question", "kind",
		      (int)q->kind, "stage", q->stage, "call_id", q->call_id, "question",
		      q->question, "choices", choices);
	a = m ? relay_call(data, m) : NULL;
	s = json_string_value(json_object_get(a, "answer"));
	*answer = s ? xstrdup(s) : NULL;
	json_decref(a);
	return s ? 0 : -1;
}

/* The process of J: run it, report, end. */
static _Noreturn void kid_main(struct lev_agent *a, struct child_job *j, pid_t parent)
{
	struct sigaction sa = { .sa_handler = kid_on_signal };
	struct relay rl = { .up = j->up, .down = j->down, .mail = json_array() };
	struct lev_agent_opts o = a->o;
	struct child_result res;
	sigset_t set;
	int cp[2];

	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
		_exit(1);
	if (pipe2(cp, O_CLOEXEC | O_NONBLOCK) < 0)
		_exit(1);
	kid_cancel_wr = cp[1];
	/*
	 * the flag the run's providers were built to watch (they are the root
	 * run's, shared: agent-setup.c), this process's copy of it
	 */
	if (a->o.cancel)
		kid_flag = a->o.cancel;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	/* this process's cancel: its signal sets it, the parent's fd is not watched */
	o.cancel = kid_flag;
	o.cancel_fd = cp[0];
	o.hooks.ask = a->o.hooks.ask ? relay_ask : NULL;
	o.hooks.question = a->o.hooks.question ? relay_question : NULL;
	o.hooks.thinking = NULL;
	o.hooks.mail = relay_mail;
	o.hooks.data = &rl;
	child_exec(a, &o, j, &res);
	(void)frame_send(j->up, json_pack("{s:s, s:b, s:s?, s:s?, s:i, s:b, s:s?}", "op", "done",
					  "ok", res.ok, "answer", res.answer, "error",
					  res.error, "label", (int)res.label, "untrusted",
					  res.untrusted, "record", res.record));
	_exit(0);
}

/* ---- the parent's side ----------------------------------------------------- */

static bool parent_cancelled(const struct lev_agent *a)
{
	struct pollfd p = { .fd = a->o.cancel_fd, .events = POLLIN };

	if (agent_cancelled(a))
		return true;
	return a->o.cancel_fd >= 0 && poll(&p, 1, 0) > 0;
}

static void job_close(struct child_job *j)
{
	if (j->up >= 0)
		close(j->up);
	if (j->down >= 0)
		close(j->down);
	j->up = j->down = -1;
	lev_buf_release(&j->in);
}

/* Answer the ask or question M of J through A's own hooks. */
static void relay_answer(struct lev_agent *a, struct child_job *j, const json_t *m)
{
	const char *op = jstr(m, "op");
	json_t *reply;

	if (lev_streq(op, "ask")) {
		struct lev_ask q = {
			.kind = (enum lev_ask_kind)json_integer_value(json_object_get(m, "kind")),
			.stage = jstr(m, "stage"),
			.call_id = jstr(m, "call_id"),
			.tool = jstr(m, "tool"),
			.prompt = jstr(m, "prompt"),
			.detail = jstr(m, "detail"),
			.stage_label = jstr(m, "stage_label"),
			.run_label = jstr(m, "run_label"),
			.call = jstr(m, "call"),
			.digest = jstr(m, "digest"),
		};
		enum lev_ask_answer ans = a->o.hooks.ask && !parent_cancelled(a)
						  ? a->o.hooks.ask(a->o.hooks.data, &q)
						  : LEV_ANSWER_NONE;

		reply = json_pack("{s:i}", "answer", (int)ans);
	} else {
		const json_t *cv = json_object_get(m, "choices");
		char **choices = xcalloc(json_array_size(cv) + 1, sizeof(*choices));
		struct lev_question q = {
			.kind = (enum lev_question_kind)json_integer_value(json_object_get(m, "kind")),
			.stage = jstr(m, "stage"),
			.call_id = jstr(m, "call_id"),
			.question = jstr(m, "question"),
			.choices = choices,
		};
		char *ans = NULL;

		for (size_t i = 0; i < json_array_size(cv); i++)
			choices[i] = (char *)json_string_value(json_array_get(cv, i));
		if (!a->o.hooks.question || parent_cancelled(a) ||
		    a->o.hooks.question(a->o.hooks.data, &q, &ans) < 0)
			reply = json_object();
		else
			reply = json_pack("{s:s}", "answer", ans);
		free(ans);
		free(choices);
	}
	if (frame_send(j->down, reply) < 0)
		kill(j->pid, SIGTERM);
}

static void job_done_frame(struct child_job *j, const json_t *m)
{
	json_int_t label = json_integer_value(json_object_get(m, "label"));

	child_result_release(&j->res);
	j->res.ok = json_is_true(json_object_get(m, "ok"));
	j->res.answer = jstr(m, "answer") ? xstrdup(jstr(m, "answer")) : NULL;
	j->res.error = jstr(m, "error") ? xstrdup(jstr(m, "error")) : NULL;
	j->res.record = jstr(m, "record") ? xstrdup(jstr(m, "record")) : NULL;
	/* what it saw raises what it started with, never lowers it */
	if (label >= LEV_PUBLIC && label <= LEV_PRIVATE)
		j->res.label = lev_level_max(j->task_label, (enum lev_level)label);
	else
		j->res.label = LEV_PRIVATE;
	j->res.untrusted = j->task_untrusted || json_is_true(json_object_get(m, "untrusted"));
	j->ended = true;
}

/* J's process is gone: reap it; without a result, it failed saying how. */
static void job_reap(struct lev_agent *a, struct child_job *j)
{
	int st = 0;

	while (waitpid(j->pid, &st, 0) < 0 && errno == EINTR)
		;
	job_close(j);
	if (!j->ended) {
		child_result_release(&j->res);
		j->res.label = lev_level_max(j->task_label, LEV_PRIVATE);
		j->res.untrusted = true;	/* it may have seen anything */
		j->res.error = WIFSIGNALED(st)
				       ? xasprintf("the sub-agent's process was killed by signal %d",
						   WTERMSIG(st))
				       : xasprintf("the sub-agent's process ended (status %d) "
						   "without an answer", WEXITSTATUS(st));
		j->ended = true;
	}
	j->pid = 0;
	child_event(a, "child_finished", j, &j->res);
}

/* Take what J sent; true: its process is gone (reaped). */
static bool job_read(struct lev_agent *a, struct child_job *j)
{
	char chunk[16384];
	ssize_t r = read(j->up, chunk, sizeof(chunk));
	bool bad = false;
	json_t *m;

	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return false;
	if (r <= 0 || lev_buf_add(&j->in, chunk, (size_t)r) < 0) {
		job_reap(a, j);
		return true;
	}
	while ((m = frame_take(&j->in, &bad))) {
		if (lev_streq(jstr(m, "op"), "done"))
			job_done_frame(j, m);
		else
			relay_answer(a, j, m);
		json_decref(m);
	}
	if (bad) {
		kill(j->pid, SIGKILL);
		job_reap(a, j);
		return true;
	}
	return false;
}

bool agent_kid_start(struct lev_agent *a, struct child_job *j)
{
	int up[2], down[2];
	pid_t self = getpid();

	j->started = true;
	j->up = j->down = -1;
	if (j->no_start) {
		child_event(a, "child_started", j, NULL);
		j->res.label = j->task_label;
		j->res.error = xstrdup(j->no_start);
		j->ended = true;
		child_event(a, "child_finished", j, &j->res);
		return false;
	}
	if (!agent_kids_forked(a)) {
		struct lev_agent_opts o = a->o;

		o.hooks.mail = NULL;	/* its parent's mail is not its own */

		child_event(a, "child_started", j, NULL);
		child_exec(a, &o, j, &j->res);
		j->ended = true;
		child_event(a, "child_finished", j, &j->res);
		return false;
	}
	if (pipe2(up, O_CLOEXEC) < 0)
		goto no_proc;
	if (pipe2(down, O_CLOEXEC) < 0) {
		close(up[0]);
		close(up[1]);
		goto no_proc;
	}
	lev_buf_init(&j->in, FRAME_MAX + 4);
	j->pid = fork();
	if (j->pid < 0) {
		lev_buf_release(&j->in);
		close(up[0]);
		close(up[1]);
		close(down[0]);
		close(down[1]);
		goto no_proc;
	}
	if (j->pid == 0) {
		close(up[0]);
		close(down[1]);
		j->up = up[1];
		j->down = down[0];
		kid_main(a, j, self);
	}
	close(up[1]);
	close(down[0]);
	j->up = up[0];
	j->down = down[1];
	child_event(a, "child_started", j, NULL);
	return true;
no_proc:
	j->pid = 0;
	child_event(a, "child_started", j, NULL);
	j->res.label = j->task_label;
	j->res.error = xasprintf("the sub-agent's process could not start: %s", strerror(errno));
	j->ended = true;
	child_event(a, "child_finished", j, &j->res);
	return false;
}

int agent_kid_send(struct child_job *j, const char *text, const char *region,
		   enum lev_level label, bool untrusted, struct lev_err *err)
{
	struct pollfd p = { .fd = j->down, .events = POLLOUT };

	if (j->pid <= 0 || j->ended || j->down < 0)
		return lev_err_set(err, -ESRCH, "it is not running");
	/* a child that has not read what it was sent yet: never block the parent on it */
	if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLOUT))
		return lev_err_set(err, -EAGAIN, "it has not read the earlier messages yet");
	if (frame_send(j->down, json_pack("{s:s, s:s, s:s?, s:i, s:b}", "op", "message", "text",
					  text, "region", region, "label", (int)label,
					  "untrusted", untrusted)) < 0)
		return lev_err_set(err, -EPIPE, "its pipe is closed");
	return 0;
}

/*
 * Serve the running jobs of JOBS[0..N) (those with a pid) until one ends or
 * TIMEOUT_MS passes (-1: until one ends).  Returns how many ended.  On A's
 * cancel every running job gets SIGTERM once (*signalled).
 */
static size_t serve(struct lev_agent *a, struct child_job *jobs, size_t n, int timeout_ms,
		    bool *signalled)
{
	_cleanup_free_ struct pollfd *p = xcalloc(n + 1, sizeof(*p));
	_cleanup_free_ size_t *who = xcalloc(n, sizeof(*who));
	size_t k = 0, ended = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		if (jobs[i].pid <= 0)
			continue;
		p[k].fd = jobs[i].up;
		p[k].events = POLLIN;
		who[k++] = i;
	}
	if (!k)
		return 0;
	p[k].fd = *signalled ? -1 : a->o.cancel_fd;
	p[k].events = POLLIN;
	/* a cancel flag without an fd is looked at every quarter second */
	r = poll(p, k + 1, timeout_ms < 0 || timeout_ms > 250 ? 250 : timeout_ms);
	if (!*signalled && parent_cancelled(a)) {
		*signalled = true;
		for (size_t i = 0; i < k; i++)
			kill(jobs[who[i]].pid, SIGTERM);
	}
	for (size_t i = 0; r > 0 && i < k; i++)
		if (p[i].revents && job_read(a, &jobs[who[i]]))
			ended++;
	return ended;
}

void agent_kid_wait(struct lev_agent *a, struct child_job *j)
{
	bool signalled = false;

	while (j->pid > 0)
		(void)serve(a, j, 1, -1, &signalled);
}

/* Serve J without waiting: take what it has sent, reap it if it ended. */
void agent_kid_poll(struct lev_agent *a, struct child_job *j)
{
	bool signalled = false;

	if (j->pid > 0)
		(void)serve(a, j, 1, 0, &signalled);
}

void agent_kid_cancel(struct lev_agent *a, struct child_job *j)
{
	if (j->pid > 0)
		kill(j->pid, SIGTERM);
	agent_kid_wait(a, j);
}

void agent_kids_run(struct lev_agent *a, struct child_job *jobs, size_t n, unsigned max,
		    bool fail_stop)
{
	size_t next = 0, live = 0;
	bool stop = false, signalled = false;

	if (!max)
		max = UINT32_MAX;
	for (;;) {
		while (!stop && !signalled && live < max && next < n) {
			if (agent_kid_start(a, &jobs[next]))
				live++;
			else if (fail_stop && !jobs[next].res.ok)
				stop = jobs[next].stop_cause = true;
			next++;
		}
		if (!live)
			break;
		live -= serve(a, jobs, next, -1, &signalled);
		if (fail_stop && !stop) {
			for (size_t i = 0; i < next && !stop; i++)
				if (jobs[i].ended && !jobs[i].res.ok)
					stop = jobs[i].stop_cause = true;
			/* on_worker_failure = "fail": the ones still running are stopped */
			for (size_t i = 0; stop && i < next; i++)
				if (jobs[i].pid > 0)
					kill(jobs[i].pid, SIGTERM);
		}
	}
}
