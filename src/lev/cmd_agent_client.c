/*
 * cmd_agent_client.c - lev agent-client AGENT [--yolo]: the Agent Client
 * Protocol on stdio, a front end on the daemon (docs/agent-client.md).
 *
 * A session is a directory; its prompt becomes a run of AGENT there, made
 * by `lev run AGENT --detach` exactly as on the command line (the workdir
 * rules and the blueprint's are lev run's), or a `lev msg` into the run
 * when one is already going.  The run's events come back as session/update
 * notifications; each question it asks becomes a session/request_permission
 * showing the whole call as `lev respond` shows it, and the host's choice
 * is sent as `lev respond` sends it, bound to the digest of the call shown.
 * Nothing here decides anything: every gate stays in the run.  stdout is
 * the protocol's; everything else goes to stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "lev/respond.h"
#include "lev/runevents.h"
#include "lev/spawnrun.h"
#include "lev-version.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/secrets.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/client.h"
#include "liblev/daemon/proto.h"
#include "liblev/run/callshow.h"
#include "liblev/run/runrecord.h"
#include "liblev/serve/acp.h"

const char lev_usage_agent_client[] =
	"usage: lev agent-client AGENT [--yolo]\n"
	"   or: lev agent-client --agent AGENT [--yolo]\n"
	"\n"
	"Speak the Agent Client Protocol (JSON-RPC 2.0, one object a line) on stdin and\n"
	"stdout, for an editor that runs AGENT (an installed agent's name, or a path)\n"
	"as a child process.  Each session's prompt becomes a daemon run of AGENT in\n"
	"the session's directory, as 'lev run AGENT --workdir DIR' makes it; its\n"
	"progress streams back as session/update notifications, and every question\n"
	"it asks comes to the editor as session/request_permission with the whole\n"
	"call, answered as 'lev respond' answers it.  Diagnostics go to stderr.\n"
	"\n"
	"  --yolo    pass --yolo to every run, for editors that cannot answer\n"
	"            (the gates still apply, as with 'lev run --yolo')\n";

/* How long a turn waits for the daemon to come back (seconds). */
#define RECONNECT_SECS 30

struct session {
	char *id;
	char *cwd;		/* real path */
	char *run;		/* the run its turn follows; NULL between turns */
};

struct acp {
	struct lev_ctx *ctx;
	const char *agent;
	bool yolo;
	bool can_ask;		/* the host sent clientCapabilities */
	struct session *s;
	size_t n_s;
	/* the turn in flight (one at a time) */
	struct session *turn;
	json_t *waiting;	/* the ids of the prompts it answers */
	int fd;			/* the daemon's stream of its run; -1 */
	json_t *plan;		/* its stages, as a plan's entries */
	json_t *asked;		/* our request id -> the question it shows */
	char *last_text;	/* the model's last text this turn */
	unsigned long n_events;	/* the run's events the stream gave this turn */
	unsigned long next_rid;
};

/* ---- writing to the host -------------------------------------------------- */

static void send_msg(json_t *m)
{
	char *text = json_dumps(m, JSON_COMPACT);

	json_decref(m);
	if (!text)
		return;
	fputs(text, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	free(text);
}

static void reply(const json_t *id, json_t *result)
{
	send_msg(json_pack("{s:s, s:O?, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static void reply_err(const json_t *id, int code, const char *msg)
{
	json_t *m = json_pack("{s:s, s:o, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
			      id ? json_incref((json_t *)id) : json_null(), "error", "code", code,
			      "message", msg);

	send_msg(m);
}

static void update(const struct session *s, json_t *u)
{
	send_msg(json_pack("{s:s, s:s, s:{s:s, s:o}}", "jsonrpc", "2.0", "method",
			   "session/update", "params", "sessionId", s->id, "update", u));
}

static void say(const struct session *s, const char *text)
{
	update(s, json_pack("{s:s, s:{s:s, s:s}}", "sessionUpdate", "agent_message_chunk", "content",
			    "type", "text", "text", text));
}

/* ---- a run's events as session updates ------------------------------------- */

static json_t *text_content(const char *text)
{
	return json_pack("[{s:s, s:{s:s, s:s}}]", "type", "content", "content", "type", "text",
			 "text", text ? text : "");
}

/* ACP's kind of a call of TOOL (what the editor shows it as; nothing is decided by it). */
static const char *call_kind(const char *tool)
{
	const struct lev_tool_desc *d = tool ? lev_tooltable_find(tool) : NULL;

	if (!d)
		return "other";
	if (d->touches & (LEV_TOUCH_SHELL | LEV_TOUCH_PROCESS))
		return "execute";
	if (d->touches & LEV_TOUCH_WRITES)
		return "edit";
	if (d->touches & LEV_TOUCH_NETWORK)
		return "fetch";
	return d->touches & LEV_TOUCH_READS ? "read" : "other";
}

/* The plan's entries as they stand, with stage NAME in STATUS. */
static void plan_stage(struct acp *a, const char *name, const char *status)
{
	json_t *e, *found = NULL;
	size_t i;
	_cleanup_free_ char *label = xasprintf("stage '%s'", name ? name : "?");

	json_array_foreach(a->plan, i, e)
		if (lev_streq(lev_json_str(e, "content"), label))
			found = e;
	if (!found) {
		found = json_pack("{s:s, s:s}", "content", label, "priority", "medium");
		json_array_append_new(a->plan, found);
	}
	json_object_set_new(found, "status", json_string(status));
	update(a->turn, json_pack("{s:s, s:O}", "sessionUpdate", "plan", "entries", a->plan));
}

static void on_tool_call(struct acp *a, const json_t *ev)
{
	bool allowed = lev_streq(lev_json_str(ev, "decision"), "allow");
	json_t *u = json_pack("{s:s, s:s?, s:s?, s:s, s:s}", "sessionUpdate", "tool_call",
			      "toolCallId", lev_json_str(ev, "id"), "title", lev_json_str(ev, "tool"),
			      "kind", call_kind(lev_json_str(ev, "tool")), "status",
			      allowed ? "in_progress" : "failed");

	if (json_object_get(ev, "args"))
		json_object_set(u, "rawInput", json_object_get(ev, "args"));
	if (!allowed) {
		_cleanup_free_ char *why = xasprintf(
			"denied by %s: %s", lev_json_str(ev, "gate") ? lev_json_str(ev, "gate") : "?",
			lev_json_str(ev, "reason") ? lev_json_str(ev, "reason") : "");

		json_object_set_new(u, "content", text_content(why));
	}
	update(a->turn, u);
}

static void on_event(struct acp *a, const json_t *ev)
{
	const char *name = lev_json_str(ev, "event");

	if (lev_streq(name, "model_response") && lev_json_str(ev, "text") &&
	    *lev_json_str(ev, "text")) {
		free(a->last_text);
		a->last_text = xstrdup(lev_json_str(ev, "text"));
		say(a->turn, a->last_text);
	} else if (lev_streq(name, "user_message") && lev_json_str(ev, "text")) {
		update(a->turn, json_pack("{s:s, s:{s:s, s:s}}", "sessionUpdate",
					  "user_message_chunk", "content", "type", "text", "text",
					  lev_json_str(ev, "text")));
	} else if (lev_streq(name, "tool_call")) {
		on_tool_call(a, ev);
	} else if (lev_streq(name, "tool_result") && lev_json_str(ev, "id")) {
		update(a->turn,
		       json_pack("{s:s, s:s, s:s, s:o}", "sessionUpdate", "tool_call_update",
				 "toolCallId", lev_json_str(ev, "id"), "status",
				 json_is_true(json_object_get(ev, "ok")) ? "completed" : "failed",
				 "content", text_content(lev_json_str(ev, "text"))));
	} else if (lev_streq(name, "stage_started")) {
		plan_stage(a, lev_json_str(ev, "stage"), "in_progress");
	} else if (lev_streq(name, "stage_finished")) {
		plan_stage(a, lev_json_str(ev, "stage"), "completed");
	} else if (lev_streq(name, "warning") && lev_json_str(ev, "message")) {
		_cleanup_free_ char *w = xasprintf("lev: warning: %s", lev_json_str(ev, "message"));

		update(a->turn, json_pack("{s:s, s:{s:s, s:s}}", "sessionUpdate",
					  "agent_thought_chunk", "content", "type", "text", "text", w));
	}
}

/* ---- questions ---------------------------------------------------------------- */

static json_t *option(const char *id, const char *name, const char *kind)
{
	return json_pack("{s:s, s:s, s:s}", "optionId", id, "name", name, "kind", kind);
}

/* The options the host may pick for question Q; NULL when none fits (free text). */
static json_t *options_for(const json_t *q)
{
	const char *kind = lev_json_str(q, "kind"), *qk = lev_json_str(q, "question_kind");
	json_t *o = json_array(), *c;
	size_t i;

	if (!lev_streq(kind, "question")) {
		json_array_append_new(o, option("allow_once", "Allow once", "allow_once"));
		if (lev_streq(kind, "permission") && lev_json_str(q, "stage_label"))
			json_array_append_new(o, option("allow_stage", lev_json_str(q, "stage_label"),
							"allow_always"));
		if (lev_json_str(q, "run_label"))
			json_array_append_new(o, option("allow_run", lev_json_str(q, "run_label"),
							"allow_always"));
		json_array_append_new(o, option("reject_once", "Deny", "reject_once"));
	} else if (lev_streq(qk, "confirm")) {
		json_array_append_new(o, option("allow_once", "Yes", "allow_once"));
		json_array_append_new(o, option("reject_once", "No", "reject_once"));
	} else if (lev_streq(qk, "choice")) {
		json_array_foreach(json_object_get(q, "choices"), i, c) {
			_cleanup_free_ char *id = xasprintf("choice_%zu", i);

			if (json_is_string(c))
				json_array_append_new(o, option(id, json_string_value(c),
								"allow_once"));
		}
	}
	if (!json_array_size(o)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Question Q of the run: to the host, or said as output when it cannot be asked there. */
static void on_ask(struct acp *a, const json_t *q)
{
	struct lev_buf text = LEV_BUF_INIT;
	json_t *opts = a->can_ask ? options_for(q) : NULL;
	char rid[32];

	lev_respond_describe(&text, q);
	if (!opts) {
		_cleanup_free_ char *s = xasprintf("run %s waits for an answer:\n%s\nanswer it with "
						   "'lev respond %s'",
						   a->turn->run, text.buf, lev_json_str(q, "id"));

		say(a->turn, s);
		lev_buf_release(&text);
		return;
	}
	snprintf(rid, sizeof(rid), "lev-%lu", ++a->next_rid);
	json_object_set(a->asked, rid, (json_t *)q);
	send_msg(json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:s?, s:s, s:s, s:s, s:o}, s:o}}", "jsonrpc",
			   "2.0", "id", rid, "method", "session/request_permission", "params",
			   "sessionId", a->turn->id, "toolCall", "toolCallId",
			   lev_json_str(q, "call_id"), "title",
			   lev_json_str(q, "prompt") ? lev_json_str(q, "prompt") : "",
			   "kind", call_kind(lev_json_str(q, "tool")), "status", "pending", "content",
			   text_content(text.buf),
			   "options", opts));
	lev_buf_release(&text);
}

/*
 * The host's answer M to our request_permission: sent to the daemon as
 * `lev respond` sends it (approve/deny, the scope, the digest of the call
 * as shown).  Anything but an allow is a deny.
 */
static void on_answer(struct acp *a, const struct lev_acp_msg *m)
{
	const char *rid = json_string_value(m->id);
	json_t *q = rid ? json_object_get(a->asked, rid) : NULL, *req, *back = NULL;
	const json_t *out = json_object_get(m->result, "outcome");
	const char *pick = lev_streq(lev_json_str(out, "outcome"), "selected")
				   ? lev_json_str(out, "optionId") : NULL;
	struct lev_err err = LEV_ERR_INIT;

	if (!q)
		return;
	/* the id and the digest of the call as shown, as lev respond sends them */
	req = lev_respond_request(q, NULL);
	if (pick && lev_startswith(pick, "choice_")) {
		json_object_set_new(req, "choice", json_integer(atoi(pick + 7)));
	} else {
		bool yes = lev_streq(pick, "allow_once") || lev_streq(pick, "allow_stage") ||
			   lev_streq(pick, "allow_run");

		json_object_set_new(req, "answer", json_string(yes ? "approve" : "deny"));
		if (lev_streq(pick, "allow_stage") || lev_streq(pick, "allow_run"))
			json_object_set_new(req, "scope", json_string(pick + 6));
	}
	if (lev_client_call(req, &back, &err) < 0 && !lev_startswith(err.msg, "no open request"))
		lev_warn("answering %s: %s", lev_json_str(q, "id"), err.msg);
	json_decref(req);
	json_decref(back);
	json_object_del(a->asked, rid);
}

/* ---- the turn ----------------------------------------------------------------- */

/* Answer every prompt the turn holds: RESULT's stopReason, or an error MSG. */
static void turn_end(struct acp *a, const char *stop, const char *msg)
{
	const json_t *id;
	size_t i;

	json_array_foreach(a->waiting, i, id) {
		if (stop)
			reply(id, json_pack("{s:s}", "stopReason", stop));
		else
			reply_err(id, LEV_ACP_INTERNAL_ERROR, msg);
	}
	json_array_clear(a->waiting);
	json_object_clear(a->asked);
	json_array_clear(a->plan);
	free(a->last_text);
	a->last_text = NULL;
	a->n_events = 0;
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
	free(a->turn->run);
	a->turn->run = NULL;
	a->turn = NULL;
}

static void replay_event(const json_t *ev, void *arg)
{
	if (ev)
		on_event(arg, ev);
}

/*
 * A run that ended before we followed it: the daemon sends its end, not its
 * events (an ended run keeps none for followers), so they are read from its
 * record (runevents.h), which holds every one, and streamed as they would
 * have been.
 */
static int replay_record(struct acp *a, const char *run, struct lev_err *err)
{
	struct lev_run_events rd = LEV_RUN_EVENTS_INIT;
	int r = lev_run_events_open(a->ctx, run, &rd, err);

	if (r < 0)
		return r;
	lev_run_events_read(&rd, true, 0, replay_event, a);
	lev_run_events_close(&rd);
	lev_buf_release(&rd.part);
	return 0;
}

/* The run's end frame M: its output as one more chunk, and the turn's stop reason. */
static void on_end(struct acp *a, const json_t *m)
{
	const char *status = lev_json_str(m, "status"), *out = lev_json_str(m, "result");
	json_t *res = NULL;
	_cleanup_free_ char *msg = NULL;
	struct lev_err err = LEV_ERR_INIT;

	if (!a->n_events && replay_record(a, a->turn->run, &err) < 0) {
		lev_warn("replaying run %s: %s", a->turn->run, err.msg);
		lev_err_clear(&err);
	}

	if (json_is_true(json_object_get(m, "result_in_record")) && lev_json_str(m, "record") &&
	    lev_runrecord_result_load(lev_json_str(m, "record"), &res, NULL) == 0)
		out = lev_json_str(res, "output");
	/* the final output, unless it is the model's last text, streamed already */
	if (lev_streq(status, "complete") && out && *out && !lev_streq(out, a->last_text)) {
		_cleanup_free_ char *shown = lev_secrets_redacted(out);

		say(a->turn, shown);
	}
	json_decref(res);
	if (lev_streq(status, "complete") || lev_streq(status, "cancelled")) {
		turn_end(a, lev_streq(status, "complete") ? "end_turn" : "cancelled", NULL);
		return;
	}
	msg = xasprintf("run %s failed: %s (record: %s)", a->turn->run,
			lev_json_str(m, "error") ? lev_json_str(m, "error") : "unknown error",
			lev_json_str(m, "record") ? lev_json_str(m, "record") : "none");
	turn_end(a, NULL, msg);
}

/* Follow run RUN: 0 and a->fd, or -EREMOTEIO (the daemon refused) or another error. */
static int attach(struct acp *a, struct lev_err *err)
{
	json_t *req = lev_proto_request("attach"), *back = NULL;
	int r;

	json_object_set_new(req, "run", json_string(a->turn->run));
	r = lev_client_open(req, &a->fd, &back, err);
	json_decref(req);
	json_decref(back);
	return r;
}

/*
 * The daemon's stream ended before the run did: start the daemon again if
 * none answers (as lev run does; it resumes its runs from the journal) and
 * follow the run there, for at most RECONNECT_SECS; else end the turn.
 */
static void reconnect(struct acp *a)
{
	time_t end = time(NULL) + RECONNECT_SECS;
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *msg = NULL;

	close(a->fd);
	a->fd = -1;
	json_object_clear(a->asked);	/* a question asked again gets a request of its own */
	fprintf(stderr, "lev: lost the daemon's stream of run %s; following it again\n",
		a->turn->run);
	for (;;) {
		struct timespec ts = { 0, 200 * 1000 * 1000 };

		lev_err_clear(&err);
		if (lev_client_ping(NULL) || lev_daemon_start(true, 300) == LEV_EXIT_OK) {
			int r = attach(a, &err);

			if (r == 0)
				return;
			if (r == -EREMOTEIO)
				break;
		}
		if (time(NULL) >= end)
			break;
		nanosleep(&ts, NULL);
	}
	msg = xasprintf("lost run %s: %s; see 'lev ps --all', follow it with 'lev attach %s'",
			a->turn->run, err.msg[0] ? err.msg : "the daemon did not come back",
			a->turn->run);
	turn_end(a, NULL, msg);
}

/* One frame of the run's stream (NULL: it ended before the run). */
static void on_frame(struct acp *a, const json_t *m)
{
	const char *op = lev_json_str(m, "op");

	if (!m) {
		reconnect(a);
	} else if (lev_streq(op, "event") && json_is_object(json_object_get(m, "event"))) {
		a->n_events++;
		on_event(a, json_object_get(m, "event"));
	} else if (lev_streq(op, "ask") && json_is_object(json_object_get(m, "question"))) {
		on_ask(a, json_object_get(m, "question"));
	} else if (lev_streq(op, "answered")) {
		const char *key;
		json_t *q, *tmp;

		json_object_foreach_safe(a->asked, tmp, key, q)
			if (lev_streq(lev_json_str(q, "id"), lev_json_str(m, "id")))
				json_object_del(a->asked, key);
	} else if (lev_streq(op, "end")) {
		on_end(a, m);
	}
}

/* A prompt TEXT (request ID) for session S. */
static void prompt(struct acp *a, struct session *s, const json_t *id, const char *text)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *req, *back = NULL;

	if (a->turn && a->turn != s) {
		reply_err(id, LEV_ACP_INVALID_REQUEST, "another session's turn is in flight");
		return;
	}
	if (a->turn) {
		/* a prompt while the run goes on is a message into it */
		req = lev_proto_request("msg");
		json_object_set_new(req, "run", json_string(s->run));
		json_object_set_new(req, "text", json_string(text));
		if (lev_client_call(req, &back, &err) < 0)
			reply_err(id, LEV_ACP_INTERNAL_ERROR, err.msg);
		else
			json_array_append(a->waiting, (json_t *)id);
		json_decref(req);
		json_decref(back);
		return;
	}
	fflush(stdout);
	if (lev_spawn_detached(a->agent, s->cwd, text, a->yolo, &s->run, &err) < 0) {
		reply_err(id, LEV_ACP_INTERNAL_ERROR, err.msg);
		return;
	}
	a->turn = s;
	json_array_append(a->waiting, (json_t *)id);
	if (attach(a, &err) < 0) {
		_cleanup_free_ char *msg = xasprintf("cannot follow run %s: %s", s->run, err.msg);

		turn_end(a, NULL, msg);
	}
}

/* ---- the host's requests ------------------------------------------------------ */

static struct session *session_of(struct acp *a, const json_t *params, struct lev_err *err)
{
	const char *sid = NULL;

	if (lev_acp_param_str(params, "sessionId", &sid, err) < 0)
		return NULL;
	for (size_t i = 0; i < a->n_s; i++)
		if (!strcmp(a->s[i].id, sid))
			return &a->s[i];
	lev_err_set(err, LEV_ACP_INVALID_PARAMS, "invalid params: no session '%.64s'", sid);
	return NULL;
}

/* Params' "cwd", an absolute directory, as its real path in REAL (PATH_MAX). */
static int session_cwd(const json_t *params, char *real, struct lev_err *err)
{
	const char *cwd = NULL;
	struct stat st;

	if (lev_acp_param_str(params, "cwd", &cwd, err) < 0)
		return err->code;
	if (cwd[0] != '/' || !realpath(cwd, real) || stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
		return lev_err_set(err, LEV_ACP_INVALID_PARAMS,
				   "invalid params: 'cwd' must be the absolute path of a directory");
	return 0;
}

/* A new session in directory CWD named ID (NULL: a fresh name), or NULL with ERR. */
static struct session *session_add(struct acp *a, const char *id, const char *cwd,
				   struct lev_err *err)
{
	struct session *s;

	if (a->n_s >= 1000) {
		lev_err_set(err, LEV_ACP_INTERNAL_ERROR, "too many sessions");
		return NULL;
	}
	a->s = xrealloc(a->s, (a->n_s + 1) * sizeof(*a->s));
	s = &a->s[a->n_s++];
	s->id = id ? xstrdup(id) : xasprintf("lev-session-%zu", a->n_s);
	s->cwd = xstrdup(cwd);
	s->run = NULL;
	return s;
}

/* Forget the session session_add() made last. */
static void session_drop(struct acp *a)
{
	struct session *s = &a->s[--a->n_s];

	free(s->id);
	free(s->cwd);
	free(s->run);
}

static int session_new(struct acp *a, const json_t *params, json_t **result, struct lev_err *err)
{
	char real[PATH_MAX];
	struct session *s;

	if (session_cwd(params, real, err) < 0)
		return err->code;
	if (!(s = session_add(a, NULL, real, err)))
		return err->code;
	*result = json_pack("{s:s}", "sessionId", s->id);
	return 0;
}

/*
 * session/load: session ID is a lev run; its history, the run's record as
 * runevents.h reads it, comes back as the session/update notifications it
 * streamed, then the answer; the session goes on in CWD, its next prompt a
 * turn like any other session's.  An id that is no run's record is an
 * error, and nothing is started.
 */
static int session_load(struct acp *a, const json_t *params, json_t **result,
			struct lev_err *err)
{
	const char *sid = NULL;
	char real[PATH_MAX];
	struct session *s;
	struct lev_err why = LEV_ERR_INIT;
	size_t i;
	int r;

	if (lev_acp_param_str(params, "sessionId", &sid, err) < 0 ||
	    session_cwd(params, real, err) < 0)
		return err->code;
	if (a->turn)
		return lev_err_set(err, LEV_ACP_INVALID_REQUEST,
				   "invalid request: a turn is in flight");
	for (i = 0; i < a->n_s; i++)
		if (!strcmp(a->s[i].id, sid))
			return lev_err_set(err, LEV_ACP_INVALID_PARAMS,
					   "invalid params: session '%.64s' is open already", sid);
	if (!(s = session_add(a, sid, real, err)))
		return err->code;
	a->turn = s;	/* the updates name it */
	r = replay_record(a, sid, &why);
	json_array_clear(a->plan);
	free(a->last_text);
	a->last_text = NULL;
	a->turn = NULL;
	if (r < 0) {
		session_drop(a);
		r = lev_err_set(err, LEV_ACP_INVALID_PARAMS, "invalid params: no session '%.64s': %s",
				sid, why.msg);
		lev_err_clear(&why);
		return r;
	}
	*result = json_null();
	return 0;
}

/* Request or notification M (checked); a request gets its answer here or at the turn's end. */
static void on_request(struct acp *a, const struct lev_acp_msg *m)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *result = NULL;
	struct session *s = NULL;
	_cleanup_free_ char *text = NULL;
	int r = 0;

	if (!strcmp(m->method, "initialize")) {
		a->can_ask = json_is_object(json_object_get(m->params, "clientCapabilities"));
		result = json_pack("{s:i, s:{s:b, s:{s:b, s:b, s:b}}, s:[], s:{s:s, s:s}}",
				   "protocolVersion", 1, "agentCapabilities", "loadSession", 1,
				   "promptCapabilities", "image", 0, "audio", 0, "embeddedContext", 1,
				   "authMethods", "agentInfo", "name", "lev", "version", LEV_VERSION);
	} else if (!strcmp(m->method, "session/new")) {
		r = session_new(a, m->params, &result, &err);
	} else if (!strcmp(m->method, "session/load")) {
		r = session_load(a, m->params, &result, &err);
	} else if (!strcmp(m->method, "session/prompt")) {
		if (!(s = session_of(a, m->params, &err)))
			r = err.code;
		else if ((r = lev_acp_prompt_text(m->params, &text, &err)) == 0 && m->id) {
			prompt(a, s, m->id, text);
			return;
		}
	} else if (!strcmp(m->method, "session/cancel")) {
		if ((s = session_of(a, m->params, &err)) && a->turn == s) {
			json_t *req = lev_proto_request("cancel"), *back = NULL;

			json_object_set_new(req, "run", json_string(s->run));
			if (lev_client_call(req, &back, &err) < 0)
				lev_warn("cancelling run %s: %s", s->run, err.msg);
			json_decref(req);
			json_decref(back);
		}
		return;	/* a notification: no answer */
	} else {
		r = lev_err_set(&err, LEV_ACP_METHOD_NOT_FOUND, "method not found: '%.64s'",
				m->method);
	}
	if (!m->id) {
		json_decref(result);
		return;
	}
	if (r < 0)
		reply_err(m->id, r, err.msg);
	else
		reply(m->id, result);
}

/* One line the host wrote. */
static void on_line(struct acp *a, const char *line, size_t len)
{
	struct lev_acp_msg m = LEV_ACP_MSG_INIT;
	struct lev_err err = LEV_ERR_INIT;

	if (!len)
		return;
	if (lev_acp_parse(line, len, &m, &err) < 0)
		reply_err(m.id, err.code, err.msg);
	else if (m.method)
		on_request(a, &m);
	else
		on_answer(a, &m);
	lev_acp_msg_release(&m);
}

/* Read what stdin has: false at its end. */
static bool read_host(struct acp *a, struct lev_acp_in *in)
{
	char buf[16384], *line;
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
	size_t len;
	int r;

	if (n < 0 && errno == EINTR)
		return true;
	if (n > 0)
		lev_acp_in_push(in, buf, (size_t)n);
	while ((r = n > 0 ? lev_acp_in_next(in, &line, &len) : lev_acp_in_last(in, &line, &len))) {
		if (r < 0) {
			_cleanup_free_ char *msg = xasprintf(
				"invalid request: a line over %zu bytes", LEV_ACP_LINE_MAX);

			reply_err(NULL, LEV_ACP_INVALID_REQUEST, msg);
			continue;
		}
		on_line(a, line, len);
		free(line);
	}
	return n > 0;
}

static void serve(struct acp *a)
{
	struct lev_acp_in in = LEV_ACP_IN_INIT;
	bool host = true;

	/* the host's end is the end: a run in flight goes on in the daemon */
	while (host) {
		struct pollfd p[2] = { { .fd = host ? STDIN_FILENO : -1, .events = POLLIN },
				       { .fd = a->fd, .events = POLLIN } };
		struct lev_err err = LEV_ERR_INIT;
		json_t *m = NULL;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents)
			host = read_host(a, &in);
		if (a->fd < 0 || !p[1].revents)
			continue;
		if (lev_proto_recv(a->fd, &m, &err) < 0)
			m = NULL;
		on_frame(a, m);
		json_decref(m);
	}
	lev_acp_in_release(&in);
}

int cmd_agent_client(int argc, char **argv, struct lev_ctx *ctx)
{
	static const struct option longopts[] = {
		{ "agent", required_argument, NULL, 'a' },
		{ "yolo", no_argument, NULL, 'y' },
		{ NULL, 0, NULL, 0 },
	};
	struct acp a = { .ctx = ctx, .fd = -1 };
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'a' && !a.agent)
			a.agent = optarg;
		else if (c == 'y')
			a.yolo = true;
		else if (c == 'a')
			return lev_usage_error("agent-client", "give the agent once");
		else
			return lev_usage_error("agent-client", "unknown option '%s'",
					       argv[optind - 1]);
	}
	if (optind < argc && !a.agent)
		a.agent = argv[optind++];
	if (optind < argc)
		return lev_usage_error("agent-client", "unexpected argument '%s'", argv[optind]);
	if (!a.agent)
		return lev_usage_error("agent-client", "which agent? give its name or path");
	if (lev_setup(ctx, CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;	/* a run's record is read from it */
	signal(SIGPIPE, SIG_IGN);
	a.waiting = json_array();
	a.plan = json_array();
	a.asked = json_object();
	serve(&a);
	for (size_t i = 0; i < a.n_s; i++) {
		free(a.s[i].id);
		free(a.s[i].cwd);
		free(a.s[i].run);
	}
	free(a.s);
	free(a.last_text);
	json_decref(a.waiting);
	json_decref(a.plan);
	json_decref(a.asked);
	return LEV_EXIT_OK;
}
