/*
 * worker.c - one run in its own process (see worker.h).
 */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/secrets.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/agentstore.h"
#include "liblev/conf/blueprint.h"
#include "liblev/conf/config.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/sock.h"
#include "liblev/daemon/store.h"
#include "liblev/daemon/worker.h"
#include "liblev/policy/effective.h"
#include "liblev/policy/lint.h"
#include "liblev/run/agent.h"
#include "liblev/run/replay.h"

static volatile sig_atomic_t w_cancel;
static int w_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	w_cancel = 1;
	if (w_pipe[1] >= 0)
		(void)!write(w_pipe[1], "x", 1);
	errno = saved;
}

struct worker {
	int fd;
	bool broken;		/* the daemon went away: answer nothing more */
	int timeout_ms;
	struct lev_replay *replay;	/* a run resumed from the journal, or NULL */
	const char *run;		/* a resumed run: the daemon's id of it (borrowed) */
	long live_turns;	/* model turns taken from the provider */
	struct lev_effective eff;	/* the run's one policy (the agent borrows its config) */
	bool eff_loaded;
	bool reload;		/* the daemon said the config changed */
	bool paused;		/* lev pause: hold at the next step boundary */
	char **msgs;		/* lev msg: for the conversation before the next turn */
	bool pool;		/* the daemon limits model requests: ask first (pool.h) */
	bool infer_held;	/* the daemon let this request through */
	struct lev_buf out;	/* event frames not sent yet (w_flush()) */
	/* adoption (w_adopt()): a new daemon takes the worker over when its own dies */
	pid_t daemon;		/* the daemon that started it (its parent) */
	const char *adopt_path;	/* where it listens for one (borrowed; NULL: it does not) */
	int adopt_fd;		/* listening there from its start, so a new daemon's connect
				 * waits in the backlog while the worker is busy; -1: none */
	const char *adopt_secret;	/* what the new daemon proves itself with (borrowed) */
	struct lev_buf resend;	/* frames sent since the daemon last committed them */
	long calls;		/* tool calls sent, counted as the daemon's journal counts them */
	bool kept;		/* the last call's result is in the journal (or needs none) */
	long calls_synced;	/* the same at the start of resend */
	bool kept_synced;
	size_t sync_mark;	/* resend's length when "sync" was asked; 0: none asked */
	long sync_n;		/* that request's number */
	long calls_mark;
	bool kept_mark;
	json_t *pending;	/* a request a reply is waited for (ask, infer, paused) */
};

static void resend_synced(struct worker *w, long n);

/* A message the daemon sends whenever it likes (pause, resume, msg, reload, synced). */
static void w_handle(struct worker *w, const json_t *m)
{
	const char *op = lev_json_str(m, "op");

	if (lev_streq(op, "reload"))
		w->reload = true;	/* taken at the next step */
	else if (lev_streq(op, "pause"))
		w->paused = true;
	else if (lev_streq(op, "resume"))
		w->paused = false;
	else if (lev_streq(op, "msg") && lev_json_str(m, "text"))
		w->msgs = lev_strv_push(w->msgs, lev_json_str(m, "text"));
	else if (lev_streq(op, "synced"))
		resend_synced(w, (long)json_integer_value(json_object_get(m, "n")));
}

/*
 * The daemon is gone (its end of the link closed or failed): the run stops
 * as cancelled at its next check, as on the SIGTERM of PR_SET_PDEATHSIG
 * that may come after.  It never goes on without the daemon: nothing would
 * journal its calls, and an ask nobody can answer now is asked again when
 * a new daemon resumes it (a run that ended "complete" is not resumed).
 */
static int w_adopt(struct worker *w);

static void link_lost(struct worker *w)
{
	if (w_adopt(w) == 0)
		return;	/* a new daemon took it over: the link is its */
	w->broken = true;
	w_cancel = 1;
}

/*
 * What the daemon committed: the frames sent before its "ack" (every one:
 * it commits before it acks), or before a "sync" numbered N.
 */
static void resend_drop(struct worker *w, size_t n, long calls, bool kept)
{
	if (n >= w->resend.len)
		lev_buf_release(&w->resend);	/* a waiting run holds no buffer */
	else {
		memmove(w->resend.buf, w->resend.buf + n, w->resend.len - n);
		lev_buf_truncate(&w->resend, w->resend.len - n);
	}
	w->calls_synced = calls;
	w->kept_synced = kept;
}

static void resend_acked(struct worker *w)
{
	resend_drop(w, w->resend.len, w->calls, w->kept);
	w->sync_mark = 0;	/* a "synced" still to come says nothing more */
}

static void resend_synced(struct worker *w, long n)
{
	if (!w->sync_mark || n != w->sync_n)
		return;
	resend_drop(w, w->sync_mark, w->calls_mark, w->kept_mark);
	w->sync_mark = 0;
}

/* Ask the daemon to commit what it was sent so far (answered "synced", w_handle()). */
static void w_sync(struct worker *w)
{
	json_t *m;

	if (!w->adopt_path || w->sync_mark || !w->resend.len || w->broken)
		return;
	w->sync_mark = w->resend.len;
	w->calls_mark = w->calls;
	w->kept_mark = w->kept;
	m = lev_proto_request("sync");
	json_object_set_new(m, "n", json_integer(++w->sync_n));
	if (lev_proto_send(w->fd, m, NULL) < 0)
		link_lost(w);
	json_decref(m);
}

/* How much the worker holds for a new daemon before it asks for a commit. */
#define W_RESEND_SYNC ((size_t)16 << 10)

/*
 * Send the frames held back, as one write.  A worker that can be adopted
 * keeps them until the daemon has committed them: a new daemon is sent
 * them again (the journal takes a call or a turn again at its place).
 */
static void w_flush(struct worker *w)
{
	if (w->out.len && !w->broken) {
		/* (a frame it could not keep: the journal could miss it, so no adoption) */
		if (w->adopt_path && lev_buf_add(&w->resend, w->out.buf, w->out.len) < 0)
			w->adopt_path = NULL;
		if (lev_proto_send_frames(w->fd, w->out.buf, w->out.len, NULL) < 0)
			link_lost(w);	/* adopted: resend went to the new daemon */
		if (w->resend.len >= W_RESEND_SYNC)
			w_sync(w);
	}
	lev_buf_reset(&w->out);
}

/* Send MSG (taken), after whatever is held back. */
static void w_send(struct worker *w, json_t *msg)
{
	size_t n;
	char *f;

	msg = lev_secrets_redact_take(msg);	/* what lev.db, the log, followers get */
	f = lev_proto_frame(msg, &n);
	if (f)
		lev_buf_add(&w->out, f, n);
	else
		w->broken = true;
	free(f);
	json_decref(msg);
	w_flush(w);
}

/*
 * Send request MSG (taken), which a reply answers: a new daemon that
 * adopts the worker while it waits is sent it again.
 */
static void w_request(struct worker *w, json_t *msg)
{
	msg = lev_secrets_redact_take(msg);
	w_flush(w);
	json_decref(w->pending);
	w->pending = msg;
	if (!w->broken && lev_proto_send(w->fd, msg, NULL) < 0)
		link_lost(w);
}

static void w_request_done(struct worker *w)
{
	json_decref(w->pending);
	w->pending = NULL;
}

/*
 * How long a worker whose daemon died waits for a new one to adopt it;
 * then the run stops as cancelled, and a new daemon resumes it from its
 * record.
 */
#define W_ADOPT_WAIT_MS (600 * 1000)

static bool secret_eq(const char *a, const char *b)
{
	size_t n = strlen(b);
	unsigned char diff = 0;

	if (!a || strlen(a) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

/* A daemon on CFD: it runs as our uid and its hello proves it has the run's secret. */
static bool adopt_hello(const struct worker *w, int cfd)
{
	struct timeval tv = { 2, 0 };
	json_t *m = NULL;
	uid_t uid;
	pid_t pid;
	bool ok;

	if (!lev_sock_peer_ok(cfd, &uid, &pid))
		return false;
	(void)setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (lev_proto_recv(cfd, &m, NULL) < 0 || !m)
		return false;
	ok = lev_streq(lev_json_str(m, "op"), "adopt") &&
	     secret_eq(lev_json_str(m, "secret"), w->adopt_secret);
	json_decref(m);
	tv.tv_sec = 0;
	(void)setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return ok;
}

/*
 * To the new daemon: where the journal stood at the last commit the worker
 * heard of, every frame sent since (the dead daemon may have lost them), and
 * the request a reply is waited for.
 */
static int adopt_resend(struct worker *w)
{
	json_t *m = lev_proto_request("adopted");
	int r;

	json_object_set_new(m, "pid", json_integer(getpid()));
	json_object_set_new(m, "calls", json_integer(w->calls_synced));
	json_object_set_new(m, "kept", json_boolean(w->kept_synced));
	r = lev_proto_send(w->fd, m, NULL);
	json_decref(m);
	if (r == 0)
		r = lev_proto_send_frames(w->fd, w->resend.buf, w->resend.len, NULL);
	if (r == 0 && w->pending)
		r = lev_proto_send(w->fd, w->pending, NULL);
	w->sync_mark = 0;
	return r;
}

/*
 * The daemon's link is lost.  When the daemon itself is gone (the worker's
 * parent changed; a daemon that only closed the link is still its parent),
 * the worker listens on its adoption socket (the daemon's private
 * directory, named in its start frame) until a new daemon of our uid
 * proves it has the run's secret, and goes on with it.  0 once adopted.
 */
static int w_adopt(struct worker *w)
{
	uint64_t end;

	if (w->adopt_fd < 0 || !w->adopt_secret || w_cancel)
		return -1;
	/* a dying daemon closes its fds a moment before its children are moved */
	for (int i = 0; i < 200 && getppid() == w->daemon; i++)
		usleep(1000);
	if (getppid() == w->daemon)
		return -1;
	end = lev_monotonic_ns() / 1000000 + W_ADOPT_WAIT_MS;
	while (!w_cancel) {
		struct pollfd p[2] = { { .fd = w->adopt_fd, .events = POLLIN },
				       { .fd = w_pipe[0], .events = POLLIN } };
		uint64_t t = lev_monotonic_ns() / 1000000;
		int cfd;

		if (t >= end || (poll(p, 2, (int)(end - t)) < 0 && errno != EINTR))
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		cfd = accept4(w->adopt_fd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			continue;
		if (!adopt_hello(w, cfd) || dup3(cfd, w->fd, O_CLOEXEC) < 0) {
			close(cfd);
			continue;
		}
		close(cfd);
		/* (it goes on listening: the new daemon may die too) */
		return adopt_resend(w) < 0 ? -1 : 0;
	}
	return -1;
}

/* Listen where a new daemon looks for the worker (adopt.h); without it, it cannot be adopted. */
static void adopt_listen(struct worker *w, const json_t *start)
{
	w->adopt_path = lev_json_str(start, "adopt_path");
	w->adopt_secret = lev_json_str(start, "adopt_secret");
	if (w->adopt_path && w->adopt_secret &&
	    lev_sock_listen(w->adopt_path, &w->adopt_fd, NULL) < 0)
		w->adopt_fd = -1;
	if (w->adopt_fd < 0)
		w->adopt_path = NULL;	/* nothing kept for a daemon that cannot come */
}

static void adopt_close(struct worker *w)
{
	if (w->adopt_fd < 0)
		return;
	(void)unlink(w->adopt_path);
	close(w->adopt_fd);
	w->adopt_fd = -1;
}

/* Wait for a reply with op OP; NULL on timeout, cancel or a broken link. */
static json_t *w_wait(struct worker *w, const char *op, int timeout_ms)
{
	w_flush(w);
	while (!w->broken) {
		struct pollfd p[2] = { { .fd = w->fd, .events = POLLIN },
				       { .fd = w_pipe[0], .events = POLLIN } };
		json_t *m = NULL;
		int r = poll(p, 2, timeout_ms);

		if (r < 0 && errno == EINTR) {
			if (w_cancel)
				return NULL;
			continue;
		}
		if (r <= 0 || w_cancel)
			return NULL;
		if (lev_proto_recv(w->fd, &m, NULL) < 0 || !m) {
			link_lost(w);	/* adopted: wait on the new daemon */
			continue;
		}
		if (lev_streq(lev_json_str(m, "op"), op))
			return m;
		w_handle(w, m);
		json_decref(m);
	}
	return NULL;
}

/*
 * The same for a wait on a person (an answer, a resume), which may last
 * hours: the heap's free pages go back to the kernel first (about 24 KiB
 * of a waiting run's 0.27 MiB, bench/README.md).
 */
static json_t *w_wait_person(struct worker *w, const char *op, int timeout_ms)
{
	w_sync(w);	/* the held frames go once committed ("synced") */
	malloc_trim(0);
	return w_wait(w, op, timeout_ms);
}

/*
 * A step boundary: take what the daemon sent meanwhile; when paused, say
 * so and hold until resumed (or cancelled).
 */
static void w_checkpoint(struct worker *w)
{
	w_flush(w);
	while (!w->broken) {
		struct pollfd p = { .fd = w->fd, .events = POLLIN };
		json_t *m = NULL;

		if (poll(&p, 1, 0) <= 0)
			break;
		if (lev_proto_recv(w->fd, &m, NULL) < 0 || !m) {
			link_lost(w);
			continue;
		}
		w_handle(w, m);
		json_decref(m);
	}
	if (!w->paused || w->broken || w_cancel)
		return;
	w_request(w, lev_proto_request("paused"));
	while (w->paused) {
		json_t *m = w_wait_person(w, "resume", -1);

		if (!m)
			break;
		w->paused = false;
		json_decref(m);
	}
	w_request_done(w);
}

static char *hook_boundary(void *data)
{
	struct worker *w = data;
	char *text;
	size_t n;

	w_checkpoint(w);
	n = lev_strv_len(w->msgs);
	if (!n)
		return NULL;
	text = w->msgs[0];
	memmove(w->msgs, w->msgs + 1, n * sizeof(*w->msgs));
	return text;
}

/* Long strings in EV cut to SLIM_MAX bytes (a fresh copy), so it fits a frame. */
#define SLIM_MAX 4096

static json_t *slim(const json_t *ev)
{
	json_t *copy = json_object(), *v;
	const char *k;

	json_object_foreach((json_t *)ev, k, v) {
		if (json_is_string(v) && json_string_length(v) > SLIM_MAX) {
			const char *s = json_string_value(v);
			size_t n = SLIM_MAX;

			while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
				n--;	/* never cut a UTF-8 sequence */
			json_object_set_new(copy, k, json_sprintf("%.*s...", (int)n, s));
		} else if (json_is_object(v) || json_is_array(v)) {
			char *d = json_dumps(v, JSON_COMPACT);

			if (d && strlen(d) > SLIM_MAX)
				json_object_set_new(copy, k, json_string("(cut: too long)"));
			else
				json_object_set(copy, k, v);
			free(d);
		} else {
			json_object_set(copy, k, v);
		}
	}
	json_object_set_new(copy, "cut", json_true());
	return copy;
}

/*
 * Whether a call may run before the daemon has journalled it: a built-in
 * tool that only reads files changes nothing, so running it again after a
 * crash is harmless.  Its row is committed with the daemon's next batch;
 * every other call waits for the ack (the row committed) before it runs.
 */
static bool needs_ack(const json_t *ev)
{
	const struct lev_tool_desc *t;

	if (!lev_streq(lev_json_str(ev, "event"), "tool_call") ||
	    !lev_streq(lev_json_str(ev, "decision"), "allow"))
		return false;
	t = lev_tooltable_find(lev_json_str(ev, "tool"));
	return !t || (t->flags & LEV_TOOLF_FOREIGN) || t->kind != LEV_TOOL_FS ||
	       t->touches != LEV_TOUCH_READS;
}

/*
 * Events that may wait for the next write: a read-only call and a call's
 * result come in bursts, and what follows them soon (the next call, the
 * next model request, a step) sends them.  Anything else goes at once, so
 * a follower sees a model request or a call that takes time as it starts.
 */
#define W_OUT_MAX ((size_t)32 << 10)

static bool deferrable(const json_t *ev)
{
	const char *name = lev_json_str(ev, "event");

	return lev_streq(name, "tool_call") || lev_streq(name, "tool_result");
}

/* The journal's count of calls, as the daemon keeps it (daemon.c journal_event()). */
static void count_call(struct worker *w, const json_t *ev)
{
	const char *name = lev_json_str(ev, "event"), *replayed = lev_json_str(ev, "replayed");

	if (!lev_json_str(ev, "id"))
		return;
	if (lev_streq(name, "tool_call")) {
		w->calls++;
		w->kept = lev_streq(replayed, "done") || lev_streq(replayed, "denied");
	} else if (lev_streq(name, "tool_result") && w->calls) {
		w->kept = true;
	}
}

static void hook_event(void *data, const json_t *ev, const char *line)
{
	struct worker *w = data;
	bool ack = needs_ack(ev);
	json_t *cut = line && strlen(line) > LEV_PROTO_MAX / 2 ? slim(ev) : NULL;
	size_t at = w->out.len;

	/* the daemon keeps the journal and the status; the record has it all */
	lev_buf_add(&w->out, "\0\0\0\0", 4);
	lev_buf_adds(&w->out, ack ? LEV_PROTO_EVENT_HEAD("true") : LEV_PROTO_EVENT_HEAD("false"));
	if (!lev_buf_add_json(&w->out, cut ? cut : ev)) {
		char *text = json_dumps(cut ? cut : ev, JSON_COMPACT);

		if (!text) {
			json_decref(cut);
			lev_buf_truncate(&w->out, at);
			w->broken = true;
			return;
		}
		lev_buf_adds(&w->out, text);
		free(text);
	}
	json_decref(cut);
	lev_buf_addch(&w->out, '}');
	lev_proto_put_len(w->out.buf + at, w->out.len - at - 4);
	count_call(w, ev);
	if (ack) {
		json_t *a = w_wait(w, "ack", -1);

		if (a)
			resend_acked(w);	/* committed, and all before it */
		json_decref(a);
		w_checkpoint(w);	/* before the call runs: never inside it */
	} else if (!deferrable(ev) || w->out.len >= W_OUT_MAX) {
		w_flush(w);
	}
}

/*
 * The run's policy as it stands goes to the daemon, for lev.db
 * (effective.h).  One a frame cannot carry is sent as incomplete: a resume
 * then refuses rather than run looser.
 */
static void send_policy(struct worker *w)
{
	json_t *m = lev_proto_request("policy"), *snap = lev_effective_snapshot(&w->eff);
	char *text = json_dumps(snap, JSON_COMPACT);

	if (!text || strlen(text) > LEV_PROTO_MAX - 4096) {
		json_decref(snap);
		snap = json_pack("{s:i, s:[], s:b}", "v", 1, "policies", "incomplete", 1);
	}
	free(text);
	json_object_set_new(m, "snapshot", snap);
	w_send(w, m);
}

/*
 * The config or the policy changed (the daemon checked them): the run's
 * effective policy becomes, whole, the tighter of itself and the files
 * now (its own config: LEVIATH_CONFIG_PATH; policy.toml, Leviath's), from
 * its next decision on, and the daemon keeps the result.  A file that
 * does not load changes nothing.  The daemon hears how it went.
 */
static void apply_reload(struct worker *w, struct lev_agent *a)
{
	static const struct lev_effective_paths now = { NULL, NULL, NULL };
	json_t *m = lev_proto_request("reloaded");
	struct lev_err e = LEV_ERR_INIT;
	struct lev_effective next;

	w->reload = false;
	if (lev_effective_load(&next, &now, &e) == 0) {
		lev_effective_tighten(&w->eff, &next);
		lev_effective_release(&next);
		(void)lev_agent_config_changed(a, &e);
		lev_agent_policy_changed(a, w->eff.pol);
		send_policy(w);
	}
	if (e.msg[0])
		json_object_set_new(m, "error", json_string(e.msg));
	w_send(w, m);
}

/* A step boundary: take what the daemon sent (a pause holds here), then a reload. */
static void hook_step(void *data, struct lev_agent *a)
{
	struct worker *w = data;

	w_checkpoint(w);
	if (w->reload)
		apply_reload(w, a);
}

/*
 * TEXT (LEN bytes of UTF-8) as "part" frames, for the frame that follows
 * them (worker.h): each part is small enough to fit a frame even when
 * every byte of it is escaped, and never cuts a UTF-8 sequence.
 */
#define W_PART_MAX ((size_t)128 << 10)

static void w_send_parts(struct worker *w, const char *text, size_t len)
{
	while (len && !w->broken) {
		size_t n = len < W_PART_MAX ? len : W_PART_MAX;
		json_t *m = lev_proto_request("part");

		while (n < len && n > 1 && ((unsigned char)text[n] & 0xc0) == 0x80)
			n--;
		json_object_set_new(m, "text", json_stringn(text, n));
		w_send(w, m);
		text += n;
		len -= n;
	}
}

/*
 * TEXT (a string of LEN bytes) into frame M under KEY, or, when a frame
 * could not carry it, sent in parts before M and M marked "parts".
 */
static void w_put_large(struct worker *w, json_t *m, const char *key, const char *text,
			size_t len)
{
	if (len < LEV_PROTO_MAX / 8) {
		json_object_set_new(m, key, json_stringn(text, len));
		return;
	}
	w_send_parts(w, text, len);
	json_object_set_new(m, "parts", json_true());
}

/* A model turn, for the journal: its place in the run and the turn, of any size. */
static void hook_turn(void *data, const json_t *turn)
{
	struct worker *w = data;
	json_t *m = lev_proto_request("turn");
	char *t = json_dumps(turn, JSON_COMPACT);

	w->live_turns++;
	json_object_set_new(m, "seq", json_integer((json_int_t)(lev_replay_turns_played(w->replay) +
								(size_t)w->live_turns)));
	if (t && strlen(t) < LEV_PROTO_MAX / 8) {
		json_object_set(m, "turn", (json_t *)turn);
	} else if (t) {
		/* in parts: the journal has every turn, so no call runs twice (worker.h) */
		w_send_parts(w, t, strlen(t));
		json_object_set_new(m, "parts", json_true());
	}
	free(t);
	w_send(w, m);
}

/* The answer the journal has for Q (a resumed run), or NONE. */
static enum lev_ask_answer replayed_answer(struct worker *w, const struct lev_ask *q,
					   const enum lev_ask_answer *answers, size_t n)
{
	const char *s = lev_replay_answer(w->replay, w->run, q->call_id,
					  q->kind == LEV_ASK_TAINT ? "taint" : "permission",
					  q->digest);

	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(s, lev_ask_answer_name(answers[i])))
			return answers[i];
	return LEV_ANSWER_NONE;
}

static enum lev_ask_answer hook_ask(void *data, const struct lev_ask *q)
{
	static const enum lev_ask_answer answers[] = { LEV_ANSWER_ONCE, LEV_ANSWER_STAGE,
							LEV_ANSWER_RUN, LEV_ANSWER_DENY };
	struct worker *w = data;
	json_t *m = lev_proto_request("ask"), *reply;
	enum lev_ask_answer a = replayed_answer(w, q, answers,
						sizeof(answers) / sizeof(answers[0]));
	const char *s;

	/* a call a frame cannot carry whole cannot be shown whole: nobody is asked */
	if (a != LEV_ANSWER_NONE || (q->call && strlen(q->call) > LEV_PROTO_MAX / 2)) {
		json_decref(m);
		return a;
	}
	json_object_set_new(m, "kind",
			    json_string(q->kind == LEV_ASK_TAINT ? "taint" : "permission"));
	json_object_set_new(m, "stage", json_string(q->stage ? q->stage : ""));
	json_object_set_new(m, "call_id", json_string(q->call_id ? q->call_id : ""));
	json_object_set_new(m, "tool", json_string(q->tool ? q->tool : ""));
	json_object_set_new(m, "prompt", json_string(q->prompt ? q->prompt : ""));
	/* what every surface shows, and what an answer is bound to (callshow.h) */
	json_object_set_new(m, "call", json_string(q->call ? q->call : ""));
	json_object_set_new(m, "digest", json_string(q->digest ? q->digest : ""));
	if (q->detail)
		json_object_set_new(m, "detail", json_string(q->detail));
	if (q->stage_label)
		json_object_set_new(m, "stage_label", json_string(q->stage_label));
	if (q->run_label)
		json_object_set_new(m, "run_label", json_string(q->run_label));
	w_request(w, m);
	reply = w_wait_person(w, "answer", w->timeout_ms);
	w_request_done(w);
	s = lev_json_str(reply, "answer");
	/* the daemon sends lev_ask_answer_name()'s words */
	for (size_t i = 0; s && i < sizeof(answers) / sizeof(answers[0]); i++)
		if (!strcmp(s, lev_ask_answer_name(answers[i])))
			a = answers[i];
	if (q->kind == LEV_ASK_TAINT && a == LEV_ANSWER_STAGE)
		a = LEV_ANSWER_DENY;
	json_decref(reply);
	return a;
}

static int hook_question(void *data, const struct lev_question *q, char **answer)
{
	static const char *const kinds[] = { "text", "choice", "confirm" };
	struct worker *w = data;
	json_t *m = lev_proto_request("ask"), *reply, *choices = json_array();
	const char *t;

	json_object_set_new(m, "kind", json_string("question"));
	json_object_set_new(m, "question_kind", json_string(kinds[q->kind]));
	json_object_set_new(m, "stage", json_string(q->stage ? q->stage : ""));
	json_object_set_new(m, "call_id", json_string(q->call_id ? q->call_id : ""));
	json_object_set_new(m, "prompt", json_string(q->question ? q->question : ""));
	for (char *const *c = q->choices; c && *c; c++)
		json_array_append_new(choices, json_string(*c));
	json_object_set_new(m, "choices", choices);
	/* an interaction point's: the run shows Leviath's "waiting: checkpoint" */
	if (q->point)
		json_object_set_new(m, "point", json_true());
	w_request(w, m);
	reply = w_wait_person(w, "answer", w->timeout_ms);
	w_request_done(w);
	t = lev_json_str(reply, "text");
	if (!t) {
		json_decref(reply);
		return -1;
	}
	*answer = xstrdup(t);
	json_decref(reply);
	return 0;
}

static void send_done(struct worker *w, const char *status, const char *output, const char *error)
{
	json_t *m = lev_proto_request("done");

	json_object_set_new(m, "status", json_string(status));
	/* an output of any size: a frame's worth would end the run in error */
	if (output)
		w_put_large(w, m, "output", output, strlen(output));
	if (error)
		json_object_set_new(m, "error", json_string(error));
	w_send(w, m);
}

static void send_info(struct worker *w, const struct lev_blueprint *bp,
		      const struct lev_config *cfg, const char *workdir, const char *home)
{
	json_t *m = lev_proto_request("info"), *rp = json_object(), *grants = json_array();
	size_t n = lev_strv_len(bp->read_paths), granted = 0;
	enum lev_grant_status *status = NULL;

	if (n && lev_lint_grant_report(bp, cfg, workdir, home, &status, &granted, NULL) == 0) {
		for (size_t i = 0; i < n; i++)
			json_array_append_new(
				grants, json_pack("{s:s, s:b}", "path", bp->read_paths[i],
						  "granted", status[i] != LEV_GRANT_NOT_GRANTED));
	}
	free(status);
	json_object_set_new(rp, "granted", json_integer((json_int_t)granted));
	json_object_set_new(rp, "declared", json_integer((json_int_t)n));
	json_object_set_new(rp, "grants", grants);
	json_object_set_new(m, "agent", json_string(bp->name ? bp->name : "?"));
	json_object_set_new(m, "read_paths", rp);
	{
		json_t *acc = json_array();

		for (size_t i = 0; i < bp->n_stages; i++)
			if (bp->stages[i].accepts_messages)
				json_array_append_new(acc, json_string(bp->stages[i].name));
		json_object_set_new(m, "accepts_messages", acc);
	}
	w_send(w, m);
}

/*
 * A run the daemon resumes after a restart: its replay log from the
 * journal in <ROOT>/lev.db (read here: it may be larger than a frame),
 * and its policy the tighter of its snapshot there and the files now.
 */
static int load_replay(struct worker *w, const char *root, const char *run, struct lev_err *err)
{
	_cleanup_free_ char *db = lev_path_join(root, LEV_DATADIR_DB);
	struct lev_store *st = NULL;
	json_t *log = NULL, *snap = NULL;
	int r;

	r = lev_store_open(db, &st, err);
	if (r == 0)
		r = lev_store_replay_load(st, run, &log, err);
	if (r == 0)
		r = lev_store_policy_get(st, run, &snap, err);
	lev_store_close(st);
	if (r == 0 && snap)
		r = lev_effective_restore(&w->eff, snap, err);
	if (r == 0)
		r = lev_replay_new(log, &w->replay, err);
	json_decref(log);
	json_decref(snap);
	return r < 0 ? lev_err_wrap(err, "cannot resume run '%s'", run) : 0;
}

/* A run the daemon resumes: its replay log, and its record goes on. */
static int resume_setup(struct worker *w, const char *run, const char *root, const char *runs,
			struct lev_agent_opts *o, struct lev_err *err)
{
	_cleanup_free_ char *rec = NULL;
	int r = load_replay(w, root, run, err);

	if (r < 0)
		return r;
	o->replay = w->replay;
	w->run = run;	/* the replay answers only this run's questions */
	/* the record goes on, unless the run stopped before it had one */
	rec = lev_path_join(runs, run);
	o->resume = access(rec, F_OK) == 0;
	return 0;
}

/*
 * [limits] max_concurrent_inferences: before each model request the run
 * asks the daemon for a place and waits its turn ({"op":"infer"}, answered
 * {"op":"infer_go"} in the order asked); once the answer came it gives the
 * place back ({"op":"infer_done"}).  Cancelled while waiting: no request
 * (the agent sees the cancel first).
 */
static void hook_thinking(void *data, bool on)
{
	struct worker *w = data;
	json_t *m;

	if (!w->pool)
		return;
	if (!on) {
		if (w->infer_held)
			w_send(w, lev_proto_request("infer_done"));
		w->infer_held = false;
		return;
	}
	w_request(w, lev_proto_request("infer"));
	m = w_wait(w, "infer_go", -1);
	w_request_done(w);
	w->infer_held = m != NULL;
	json_decref(m);
}

static void set_hooks(struct lev_agent_opts *o, struct worker *w, const json_t *req)
{
	/* a follower without a terminal: nobody to ask, as in lev run --foreground */
	if (!json_is_false(json_object_get(req, "interactive"))) {
		o->hooks.ask = hook_ask;
		o->hooks.question = hook_question;
	}
	o->hooks.event = hook_event;
	o->hooks.turn = hook_turn;
	o->hooks.step = hook_step;
	o->hooks.boundary = hook_boundary;
	o->hooks.thinking = hook_thinking;
	o->hooks.data = w;
}

static int setup_signals(struct lev_err *err)
{
	struct sigaction sa;
	sigset_t none;

	if (pipe2(w_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return lev_err_errno(err, -errno, "cannot make a pipe");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	return 0;
}

/* The worker's process: its link (FD) is its own, no command inherits it; its signals. */
static int worker_setup(int fd, struct lev_err *err)
{
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return lev_err_errno(err, -errno, "cannot keep the daemon's link to the worker");
	return setup_signals(err);
}

/*
 * A resumed run failed with E: when E names a variable lev.db did not keep
 * (the request's "withheld_env", daemon.c), say so and how to go on.  A
 * malloc'ed message.
 */
/* Whether the "NAME=value" entry E names a variable of the array NAMES. */
static bool names_entry(const json_t *names, const char *e)
{
	size_t i, n = strcspn(e, "=");
	json_t *v;

	json_array_foreach(names, i, v) {
		const char *s = json_string_value(v);

		if (s && strlen(s) == n && !strncmp(s, e, n))
			return true;
	}
	return false;
}

/*
 * Once the run is built (its keys resolved into pages no child of this
 * worker reads, base/secrets.h), the values of the variables the client
 * marked secret by their role ("secret_env") are zeroed in REQ and ENV: a
 * sandbox's helper or cell cloned from the worker would copy them.
 */
static void wipe_secret_env(json_t *req, char **env)
{
	const json_t *names = json_object_get(req, "secret_env");
	json_t *arr = json_object_get(req, "env"), *e;
	size_t i;

	for (char **p = env; p && *p; p++)
		if (names_entry(names, *p))
			explicit_bzero(*p, strlen(*p));
	json_array_foreach(arr, i, e) {
		const char *s = json_string_value(e);

		if (s && names_entry(names, s)) {
			explicit_bzero((char *)s, json_string_length(e));
			json_array_set_new(arr, i, json_string(""));
		}
	}
}

static char *resume_error(const json_t *req, const char *e)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(req, "withheld_env"), i, v) {
		const char *name = json_string_value(v);

		if (name && strstr(e, name))
			return xasprintf("%s (this run was resumed after the daemon stopped, and "
					 "lev.db keeps no credential-shaped variables such as "
					 "'%s': keep the key in lev's credential store "
					 "(credentials.toml), or set it and submit the run again)",
					 e, name);
	}
	return xstrdup(e);
}

/* The launch request's output and depth over the blueprint's (lev run --output-*, --max-depth). */
static int launch_override(struct lev_blueprint *bp, const json_t *req, struct lev_err *err)
{
	const json_t *md = json_object_get(req, "max_depth");
	struct lev_launch_override lo = {
		.output_format = lev_json_str(req, "output_format"),
		.output_instructions = lev_json_str(req, "output_instructions"),
		.output_schema = lev_json_str(req, "output_schema"),
		.max_depth = json_is_integer(md) ? (long)json_integer_value(md) : -1,
	};

	return lev_blueprint_launch_override(bp, &lo, err);
}

/* The data root's paths a run needs, each owned by the caller. */
static int data_paths(char **root, char **runs, char **policy, char **rules, char **creds,
		      char **cfg_path, struct lev_err *e)
{
	if (lev_datadir_root(root, e) < 0 || lev_datadir_runs_dir(runs, e) < 0 ||
	    lev_datadir_policy_path(policy, e) < 0 || lev_datadir_rules_dir(rules, e) < 0 ||
	    lev_datadir_credentials_path(creds, e) < 0 || lev_datadir_config_path(cfg_path, e) < 0)
		return -1;
	return 0;
}

/* How long a question waits for its answer: [limits] interaction_timeout_secs, else an hour. */
static int answer_timeout_ms(const struct lev_config *cfg)
{
	if (!cfg->limits.interaction_timeout_secs)
		return 3600 * 1000;
	return cfg->limits.interaction_timeout_secs > INT_MAX / 1000
		       ? INT_MAX
		       : (int)cfg->limits.interaction_timeout_secs * 1000;
}

/* Tell the daemon where the run's record is. */
static void send_record(struct worker *w, struct lev_agent *agent)
{
	json_t *m = lev_proto_request("info");

	if (lev_agent_record_dir(agent))
		json_object_set_new(m, "record", json_string(lev_agent_record_dir(agent)));
	w_send(w, m);
}

/* What the launch request REQ says of the run into O (borrowing REQ). */
static void opts_from_request(struct lev_agent_opts *o, const json_t *req)
{
	o->task = lev_json_str(req, "task");
	o->yolo = json_is_true(json_object_get(req, "yolo"));
	o->yolo_flow = json_is_true(json_object_get(req, "yolo_flow"));
	o->model = lev_json_str(req, "model");
	o->no_seed_commands = json_is_true(json_object_get(req, "no_seed_commands"));
	o->oci_helper = lev_json_str(req, "oci_helper");
}

/* What the daemon's start frame START says of the run into O (borrowing START). */
static void opts_from_start(struct lev_agent_opts *o, const json_t *start)
{
	o->run_id = lev_json_str(start, "run");	/* the record is named as the daemon's run */
	if (lev_json_str(start, "policy_path"))
		o->policy_path = lev_json_str(start, "policy_path");
	o->leviath_policy_path = lev_json_str(start, "leviath_policy_path");
}

/* The run AGENT ended: its status, output and why (REPLAY: said as a resumed run's). */
static void send_end(struct worker *w, struct lev_agent *agent, const json_t *req, bool replay)
{
	const char *why = lev_agent_error(agent);
	_cleanup_free_ char *msg = why && replay ? resume_error(req, why) : NULL;

	send_done(w, lev_run_status_name(lev_agent_status(agent)), lev_agent_output(agent),
		  msg ? msg : why);
}

/* What the worker W holds of its own. */
static void w_release(struct worker *w)
{
	lev_replay_free(w->replay);
	lev_strv_free(w->msgs);
	lev_buf_release(&w->out);
	adopt_close(w);
	lev_buf_release(&w->resend);
	json_decref(w->pending);
}

int lev_worker_main(int fd, struct lev_err *err)
{
	struct worker w = { .fd = fd, .timeout_ms = -1, .out = LEV_BUF_INIT,
			    .resend = LEV_BUF_INIT, .adopt_fd = -1 };
	struct lev_agent_opts o = { .cancel_fd = -1 };
	struct lev_blueprint *bp = NULL;
	struct lev_agent *agent = NULL;
	struct lev_effective_paths paths;
	json_t *start = NULL, *req;
	char **allow = NULL, **env = NULL, **inputs = NULL;
	_cleanup_strv_ char **input_files = NULL;
	_cleanup_free_ char *home = NULL, *root = NULL, *runs = NULL, *policy = NULL,
			    *rules = NULL, *creds = NULL, *cfg_path = NULL;
	struct lev_err e = LEV_ERR_INIT;
	const char *path, *workdir;
	int r;

	r = worker_setup(fd, err);
	if (r < 0)
		return r;
	r = lev_proto_recv(fd, &start, err);
	if (r < 0)
		return r;
	if (!start || !lev_streq(lev_json_str(start, "op"), "start")) {
		json_decref(start);
		return lev_err_set(err, LEV_EPARSE, "the daemon sent no run");
	}
	req = json_object_get(start, "request");
	w.daemon = getppid();
	adopt_listen(&w, start);
	path = lev_json_str(req, "blueprint");
	workdir = lev_json_str(req, "workdir");
	if (!path || !workdir) {
		send_done(&w, "error", NULL, "the request names no blueprint or workdir");
		goto out;
	}
	if (lev_blueprint_load(path, &bp, &e) < 0 || launch_override(bp, req, &e) < 0) {
		send_done(&w, "error", NULL, e.msg);
		goto out;
	}
	lev_agentstore_bind(bp);
	/* a broken file: the daemon hands the last good copy (NULL: the data root's) */
	paths.config = lev_json_str(start, "config_path");
	paths.policy = lev_json_str(start, "policy_path");
	paths.leviath = lev_json_str(start, "leviath_policy_path");
	if (lev_effective_load(&w.eff, &paths, &e) < 0) {
		send_done(&w, "error", NULL, e.msg);
		goto out;
	}
	w.eff_loaded = true;
	if (lev_home_dir(&home, NULL) < 0)
		home = NULL;
	if (data_paths(&root, &runs, &policy, &rules, &creds, &cfg_path, &e) < 0) {
		send_done(&w, "error", NULL, e.msg);
		goto out;
	}
	if (json_is_true(json_object_get(start, "recover")) &&
	    resume_setup(&w, lev_json_str(start, "run"), root, runs, &o, &e) < 0) {
		send_done(&w, "error", NULL, e.msg);
		goto out;
	}
	w.timeout_ms = answer_timeout_ms(&w.eff.cfg);
	send_info(&w, bp, &w.eff.cfg, workdir, home);
	w.pool = json_is_true(json_object_get(start, "infer_pool"));

	allow = lev_strv_from_json(json_object_get(req, "allow"));
	inputs = lev_strv_from_json(json_object_get(req, "inputs"));
	env = lev_strv_from_json(json_object_get(req, "env"));
	input_files = lev_strv_from_json(json_object_get(req, "input_files"));
	o.bp = bp;
	o.cfg = &w.eff.cfg;
	o.workdir = workdir;
	o.inputs = inputs;
	o.input_files = input_files;
	o.allow = allow;
	o.runs_dir = runs;
	opts_from_request(&o, req);
	o.data_root = root;
	o.policy_path = policy;
	opts_from_start(&o, start);
	o.rules_dir = rules;
	o.policy_fixed = true;	/* changes come as reload frames, the tighter */
	o.credentials_path = creds;
	o.config_path = cfg_path;
	o.home = home;
	o.envp = env;
	o.cancel = &w_cancel;
	o.cancel_fd = w_pipe[0];
	set_hooks(&o, &w, req);

	if (lev_agent_new(&o, &agent, &e) < 0) {
		_cleanup_free_ char *msg = o.replay ? resume_error(req, e.msg) : xstrdup(e.msg);

		send_done(&w, "error", NULL, msg);
		goto out;
	}
	wipe_secret_env(req, env);
	/* the run's policy is its snapshot's too (a resumed run: the tighter of both) */
	lev_agent_policy_changed(agent, w.eff.pol);
	send_policy(&w);
	send_record(&w, agent);
	if (lev_agent_run(agent, &e) < 0) {
		_cleanup_free_ char *msg = o.replay ? resume_error(req, e.msg) : xstrdup(e.msg);

		send_done(&w, "error", NULL, msg);
		goto out;
	}
	send_end(&w, agent, req, o.replay != NULL);
out:
	lev_agent_free(agent);
	if (w.eff_loaded)
		lev_effective_release(&w.eff);
	lev_blueprint_free(bp);
	lev_strv_free(allow);
	lev_strv_free(inputs);
	lev_strv_free(env);
	w_release(&w);
	json_decref(start);
	return 0;
}
