/*
 * daemon.c - the daemon's loop (see daemon.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lev-version.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/daemon.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/sock.h"
#include "liblev/daemon/store.h"
#include "liblev/daemon/worker.h"
#include "liblev/run/agent.h"
#include "liblev/run/runrecord.h"

/* A finished run stays in `lev ps` this long. */
#define FINISHED_RETENTION_SECS 300
#define MAX_CONNS 256
#define MAX_ENV 4096

struct conn {
	int fd;
	struct lev_proto_in in;
};

struct run {
	char *id;
	json_t *doc;		/* what ps shows; owned */
	pid_t pid;		/* 0 once reaped */
	int fd;			/* the socketpair; -1 once closed */
	struct lev_proto_in in;
	json_t *question;	/* the open question, or NULL */
	bool cancel_requested;
	bool done;		/* the worker said how the run ended */
	bool dirty;		/* doc moved since it was last written (flush_runs()) */
	char *dump;		/* doc as JSON text, for ps (doc_text()); owned */
	size_t dump_len;
	double dump_updated, dump_moved;	/* doc's "updated" and "moved" when dumped */
};

struct daemon {
	const struct lev_daemon_opts *o;
	struct lev_store *st;
	struct conn *conns;
	size_t n_conns;
	struct run **runs;
	size_t n_runs;
	unsigned qseq;
	bool stopping;
	double started;
	double last_busy;
	double last_flush;	/* when flush_runs() last wrote the runs that moved */
	double pending_since;	/* the oldest write not committed; 0: none */
	bool trim_due;		/* a run ended: give the heap back once none is left */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void dlog(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void dlog(struct daemon *d, const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT;
	va_list ap;

	if (!d->o->log)
		return;
	va_start(ap, fmt);
	(void)lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	d->o->log(d->o->log_data, b.buf);
	lev_buf_release(&b);
}

static bool status_final(const char *s)
{
	return lev_streq(s, "complete") || lev_streq(s, "error") || lev_streq(s, "cancelled");
}

static const char *run_status(const struct run *r)
{
	return lev_json_str(r->doc, "status");
}

static void run_save(struct daemon *d, struct run *r)
{
	struct lev_err err = LEV_ERR_INIT;

	json_object_set_new(r->doc, "updated", json_real(now()));
	r->dirty = false;
	if (lev_store_run_put(d->st, r->doc, &err) < 0)
		dlog(d, "run %s: %s", r->id, err.msg);
}

/* How often a run's progress (stage, iteration, tools) reaches the database. */
#define FLUSH_SECS 1.0
/* How long a write that nothing waits on (a result, an event) may stay uncommitted. */
#define COMMIT_DELAY_MS 5

/*
 * Write the runs whose progress moved (at most every FLUSH_SECS, or now
 * when ALL) and commit everything pending: once per turn of the loop, so
 * nothing the daemon was told waits in memory while it sleeps in poll().
 */
static void flush_runs(struct daemon *d, bool all)
{
	struct lev_err err = LEV_ERR_INIT;
	double t = now();

	if (all || t - d->last_flush >= FLUSH_SECS) {
		for (size_t i = 0; i < d->n_runs; i++)
			if (d->runs[i]->dirty)
				run_save(d, d->runs[i]);
		d->last_flush = t;
	}
	if (lev_store_commit(d->st, &err) < 0)
		dlog(d, "%s", err.msg);
	d->pending_since = 0;
}

/*
 * The loop's group commit: writes nobody waits on are committed at most
 * COMMIT_DELAY_MS after the first of them, so a busy run costs one commit
 * per batch, not per row.  Returns poll()'s timeout.
 */
static int flush_due(struct daemon *d)
{
	double t = now(), left;

	if (!lev_store_pending(d->st) && t - d->last_flush < FLUSH_SECS)
		return 1000;
	if (!d->pending_since)
		d->pending_since = t;
	left = d->pending_since + COMMIT_DELAY_MS / 1e3 - t;
	if (left <= 0) {
		flush_runs(d, false);
		return 1000;
	}
	return (int)(left * 1e3) + 1;
}

static void run_set_status(struct daemon *d, struct run *r, const char *status)
{
	json_object_set_new(r->doc, "status", json_string(status));
	json_object_set_new(r->doc, "moved", json_real(now()));
	if (status_final(status)) {
		json_object_set_new(r->doc, "finished", json_real(now()));
		d->last_busy = now();
		d->trim_due = true;
	}
	run_save(d, r);
}

static struct run *run_find(struct daemon *d, const char *id)
{
	for (size_t i = 0; id && i < d->n_runs; i++)
		if (!strcmp(d->runs[i]->id, id))
			return d->runs[i];
	return NULL;
}

static struct run *run_add(struct daemon *d, const char *id, json_t *doc)
{
	struct run *r = xcalloc(1, sizeof(*r));

	r->id = xstrdup(id);
	r->doc = doc;
	r->fd = -1;
	d->runs = xreallocarray(d->runs, d->n_runs + 1, sizeof(*d->runs));
	d->runs[d->n_runs++] = r;
	return r;
}

static void run_free(struct run *r)
{
	if (r->fd >= 0)
		close(r->fd);
	lev_proto_in_release(&r->in);
	json_decref(r->doc);
	json_decref(r->question);
	free(r->dump);
	free(r->id);
	free(r);
}

static size_t live_runs(const struct daemon *d, size_t *waiting)
{
	size_t n = 0;

	if (waiting)
		*waiting = 0;
	for (size_t i = 0; i < d->n_runs; i++) {
		if (status_final(run_status(d->runs[i])))
			continue;
		n++;
		if (waiting && d->runs[i]->question)
			(*waiting)++;
	}
	return n;
}

/* ---- workers ------------------------------------------------------------- */

static void close_run_fd(struct run *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	lev_proto_in_release(&r->in);
}

static void run_send(struct daemon *d, struct run *r, json_t *msg)
{
	struct lev_err err = LEV_ERR_INIT;

	if (r->fd >= 0 && lev_proto_send(r->fd, msg, &err) < 0) {
		dlog(d, "run %s: %s", r->id, err.msg);
		close_run_fd(r);
	}
	json_decref(msg);
}

/* The child side of a worker: never returns. */
static void worker_exec(const struct lev_daemon_opts *o, int fd, char **env, pid_t parent)
{
	char *argv[] = { (char *)o->worker_exe, (char *)LEV_DAEMON_WORKER_CMD, NULL };
	struct rlimit core = { 0, 0 };
	sigset_t none;
	int null;

	/* the daemon gone, the run is cancelled */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
		_exit(127);
	setsid();
	/*
	 * The daemon's handlers would run on its memory (worker_spawn()): every
	 * caught signal back to its default before any is let through.
	 */
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL &&
		    sa.sa_handler != SIG_IGN)
			signal(sig, SIG_DFL);
	}
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (fd == LEV_WORKER_FD) {
		if (fcntl(fd, F_SETFD, 0) < 0)
			_exit(127);
	} else if (dup2(fd, LEV_WORKER_FD) < 0) {
		_exit(127);
	}
	close_range(LEV_WORKER_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC);
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		_exit(127);
	(void)setrlimit(RLIMIT_CORE, &core);
	if (o->run_data_limit) {
		struct rlimit data = { o->run_data_limit, o->run_data_limit };

		(void)setrlimit(RLIMIT_DATA, &data);
	}
	execve(o->worker_exe, argv, env);
	_exit(127);
}

/* AddressSanitizer builds fork their workers (see worker_spawn()). */
#if defined(__SANITIZE_ADDRESS__)
#define LEV_SPAWN_FORK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LEV_SPAWN_FORK 1
#endif
#endif

#ifndef LEV_SPAWN_FORK
struct spawn {
	const struct lev_daemon_opts *o;
	int fd;
	char **env;
	pid_t parent;
};

static int spawn_child(void *arg)
{
	struct spawn *s = arg;

	worker_exec(s->o, s->fd, s->env, s->parent);
	return 127;
}
#endif

/*
 * Start a worker: a child that shares the daemon's memory until its exec
 * (CLONE_VM | CLONE_VFORK, as posix_spawn() does), so a daemon holding
 * thousands of runs copies no page tables and takes no copy-on-write
 * faults for each one.  The daemon waits the few syscalls worker_exec()
 * makes; the child touches nothing but its own stack.  AddressSanitizer
 * builds fork.
 */
static pid_t worker_spawn(const struct lev_daemon_opts *o, int fd, char **env, pid_t parent)
{
#ifdef LEV_SPAWN_FORK
	pid_t pid = fork();

	if (pid == 0)
		worker_exec(o, fd, env, parent);
	return pid;
#else
	static char stack[64 * 1024] __attribute__((aligned(64)));
	struct spawn s = { o, fd, env, parent };
	sigset_t all, old;
	pid_t pid;
	int e;

	/* no handler of the daemon's may run in the child (worker_exec() resets them) */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = clone(spawn_child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &s);
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return pid;
#endif
}

static char **env_of(const json_t *arr, struct lev_err *err)
{
	char **v = xcalloc(1, sizeof(*v));
	size_t n = 0, i;
	json_t *e;

	if (arr && !json_is_array(arr)) {
		free(v);
		lev_err_set(err, LEV_EPARSE, "'env' must be an array of strings");
		return NULL;
	}
	if (json_array_size(arr) > MAX_ENV) {
		free(v);
		lev_err_set(err, LEV_EPARSE, "'env' holds more than %d entries", MAX_ENV);
		return NULL;
	}
	json_array_foreach(arr, i, e) {
		const char *s = json_string_value(e);

		if (!s || !strchr(s, '=') || s[0] == '=')
			continue;
		v = xreallocarray(v, n + 2, sizeof(*v));
		v[n++] = xstrdup(s);
		v[n] = NULL;
	}
	return v;
}

static void strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

static json_t *op_submit(struct daemon *d, const json_t *msg)
{
	const json_t *req = json_object_get(msg, "request");
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *id = NULL;
	char **env;
	int sv[2];
	pid_t pid, self = getpid();
	struct run *r;
	json_t *start, *doc;

	if (d->stopping)
		return lev_proto_fail("the daemon is stopping");
	if (!json_is_object(req) || !lev_json_str(req, "blueprint") ||
	    !lev_json_str(req, "workdir"))
		return lev_proto_fail("a run request names a blueprint and a workdir");
	env = env_of(json_object_get(req, "env"), &err);
	if (!env)
		return lev_proto_fail("%s", err.msg);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		strv_free(env);
		return lev_proto_fail("cannot make a socketpair: %s", strerror(errno));
	}
	pid = worker_spawn(d->o, sv[1], env, self);
	if (pid < 0) {
		int e = errno;

		close(sv[0]);
		close(sv[1]);
		strv_free(env);
		return lev_proto_fail("cannot start a worker: %s", strerror(e));
	}
	close(sv[1]);
	strv_free(env);

	do {
		free(id);
		id = lev_run_id_new();
	} while (run_find(d, id));
	doc = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:f, s:f, s:i, s:s}", "id", id,
			"agent", lev_json_str(req, "agent") ? lev_json_str(req, "agent") : "?",
			"status", "idle", "stage", "", "iteration", 0, "tools", 0, "created", now(),
			"moved", now(), "pid", (int)pid, "workdir", lev_json_str(req, "workdir"));
	r = run_add(d, id, doc);
	r->pid = pid;
	r->fd = sv[0];
	run_save(d, r);
	start = lev_proto_request("start");
	json_object_set_new(start, "run", json_string(id));
	json_object_set(start, "request", (json_t *)req);
	run_send(d, r, start);
	dlog(d, "run %s: started worker %d for '%s'", id, (int)pid, lev_json_str(req, "blueprint"));
	d->last_busy = now();
	{
		json_t *ok = lev_proto_ok();

		json_object_set_new(ok, "run", json_string(id));
		return ok;
	}
}

/* Mark a run whose worker is gone; STATUS from waitpid. */
static void run_reaped(struct daemon *d, struct run *r, int status)
{
	r->pid = 0;
	json_object_del(r->doc, "pid");
	if (r->question) {
		(void)lev_store_question_close(d->st, lev_json_str(r->question, "id"), NULL, NULL);
		json_decref(r->question);
		r->question = NULL;
	}
	if (r->done && status_final(run_status(r))) {
		run_save(d, r);
		return;
	}
	if (r->cancel_requested) {
		run_set_status(d, r, "cancelled");
		return;
	}
	if (WIFSIGNALED(status))
		json_object_set_new(r->doc, "error",
				    json_sprintf("the run's worker was killed by signal %d (%s)",
						 WTERMSIG(status), strsignal(WTERMSIG(status))));
	else
		json_object_set_new(r->doc, "error",
				    json_sprintf("the run's worker exited with status %d before "
						 "the run ended",
						 WEXITSTATUS(status)));
	dlog(d, "run %s: %s", r->id, lev_json_str(r->doc, "error"));
	run_set_status(d, r, "error");
}

static void run_readable(struct daemon *d, struct run *r);

static void reap(struct daemon *d)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (size_t i = 0; i < d->n_runs; i++) {
			if (d->runs[i]->pid == pid) {
				/* what it said before it went (its "done") comes first */
				if (d->runs[i]->fd >= 0)
					run_readable(d, d->runs[i]);
				run_reaped(d, d->runs[i], status);
				break;
			}
		}
	}
}

static void journal_event(struct daemon *d, struct run *r, const json_t *ev)
{
	const char *name = lev_json_str(ev, "event");
	struct lev_err err = LEV_ERR_INIT;
	int rc = 0;

	if (lev_streq(name, "tool_call") && lev_json_str(ev, "id"))
		rc = lev_store_journal_call(d->st, r->id, lev_json_str(ev, "id"),
					    lev_json_str(ev, "tool"), json_object_get(ev, "args"),
					    lev_streq(lev_json_str(ev, "decision"), "allow"), &err);
	else if (lev_streq(name, "tool_result") && lev_json_str(ev, "id"))
		rc = lev_store_journal_result(d->st, r->id, lev_json_str(ev, "id"),
					      json_is_true(json_object_get(ev, "ok")),
					      lev_json_str(ev, "text"), &err);
	if (rc < 0)
		dlog(d, "run %s: %s", r->id, err.msg);
}

static void worker_event(struct daemon *d, struct run *r, const json_t *ev)
{
	const char *name = lev_json_str(ev, "event");

	journal_event(d, r, ev);
	if (lev_streq(name, "run_started")) {
		run_set_status(d, r, "active");
		return;
	}
	if (lev_streq(name, "stage_started") && lev_json_str(ev, "stage")) {
		json_object_set_new(r->doc, "stage", json_string(lev_json_str(ev, "stage")));
	} else if (lev_streq(name, "model_request") && json_object_get(ev, "iteration")) {
		json_object_set(r->doc, "iteration", json_object_get(ev, "iteration"));
	} else if (lev_streq(name, "tool_call")) {
		json_int_t n = json_integer_value(json_object_get(r->doc, "tools"));

		json_object_set_new(r->doc, "tools", json_integer(n + 1));
	} else {
		return;
	}
	json_object_set_new(r->doc, "moved", json_real(now()));
	r->dirty = true;	/* ps reads the doc; the database gets it in flush_runs() */
}

static const char *ask_status(const char *kind)
{
	if (lev_streq(kind, "taint"))
		return "waiting: taint gate";
	if (lev_streq(kind, "question"))
		return "waiting: user prompt";
	return "waiting: tool approval";
}

static void worker_msg(struct daemon *d, struct run *r, json_t *m)
{
	const char *op = lev_json_str(m, "op");

	if (lev_streq(op, "event")) {
		const json_t *ev = json_object_get(m, "event");

		if (json_is_object(ev))
			worker_event(d, r, ev);
		if (json_is_true(json_object_get(m, "ack"))) {
			/* the journal row is committed before the call runs */
			flush_runs(d, false);
			run_send(d, r, lev_proto_request("ack"));
		}
	} else if (lev_streq(op, "info")) {
		const char *keys[] = { "agent", "read_paths", "record", NULL };

		for (int i = 0; keys[i]; i++)
			if (json_object_get(m, keys[i]))
				json_object_set(r->doc, keys[i], json_object_get(m, keys[i]));
		run_save(d, r);
	} else if (lev_streq(op, "ask")) {
		struct lev_err err = LEV_ERR_INIT;
		json_t *q = json_deep_copy(m);
		char *id = xasprintf("q%u", ++d->qseq);

		json_object_del(q, "v");
		json_object_del(q, "op");
		json_object_set_new(q, "id", json_string(id));
		json_object_set_new(q, "run", json_string(r->id));
		json_object_set(q, "agent", json_object_get(r->doc, "agent"));
		json_decref(r->question);
		r->question = q;
		if (lev_store_question_put(d->st, id, r->id, q, &err) < 0)
			dlog(d, "run %s: %s", r->id, err.msg);
		run_set_status(d, r, ask_status(lev_json_str(q, "kind")));
		dlog(d, "run %s: waiting for an answer to %s", r->id, id);
		free(id);
	} else if (lev_streq(op, "done")) {
		const char *status = lev_json_str(m, "status");

		if (!status_final(status))
			status = "error";
		if (lev_json_str(m, "output"))
			json_object_set(r->doc, "result", json_object_get(m, "output"));
		if (lev_json_str(m, "error"))
			json_object_set(r->doc, "error", json_object_get(m, "error"));
		r->done = true;
		run_set_status(d, r, status);
		dlog(d, "run %s: %s", r->id, status);
	}
}

static void run_readable(struct daemon *d, struct run *r)
{
	for (;;) {
		struct lev_err err = LEV_ERR_INIT;
		json_t *m = NULL;
		int n = lev_proto_in_read(&r->in, r->fd, &m, &err);

		if (n == 0)
			return;
		if (n < 0) {
			if (n != -EPIPE || !lev_proto_in_idle(&r->in))
				dlog(d, "run %s: the worker's link: %s", r->id, err.msg);
			close_run_fd(r);
			return;
		}
		worker_msg(d, r, m);
		json_decref(m);
		if (r->fd < 0)
			return;
	}
}

/* ---- requests ------------------------------------------------------------ */

static json_t *op_ping(struct daemon *d)
{
	json_t *ok = lev_proto_ok();
	size_t waiting, live = live_runs(d, &waiting);

	json_object_set_new(ok, "pid", json_integer(getpid()));
	json_object_set_new(ok, "runs", json_integer((json_int_t)live));
	json_object_set_new(ok, "waiting", json_integer((json_int_t)waiting));
	json_object_set_new(ok, "version", json_string(LEV_VERSION));
	json_object_set_new(ok, "uptime", json_real(now() - d->started));
	return ok;
}

/*
 * R's doc as JSON text, kept until the doc moves: every change to a doc
 * sets its "moved" (run_set_status(), worker_event()) or its "updated"
 * (run_save()).  A thousand runs' docs cost ps a memcpy each, not an
 * encoding.
 */
static const char *doc_text(struct run *r, size_t *len)
{
	double u = json_number_value(json_object_get(r->doc, "updated"));
	double m = json_number_value(json_object_get(r->doc, "moved"));

	if (!r->dump || u != r->dump_updated || m != r->dump_moved) {
		free(r->dump);
		r->dump = json_dumps(r->doc, JSON_COMPACT);
		r->dump_len = r->dump ? strlen(r->dump) : 0;
		r->dump_updated = u;
		r->dump_moved = m;
	}
	*len = r->dump_len;
	return r->dump ? r->dump : "{}";
}

static void ps_list(struct daemon *d, struct lev_buf *b, bool live, bool all, double t)
{
	bool first = true;

	for (size_t i = 0; i < d->n_runs; i++) {
		struct run *r = d->runs[i];
		const char *text;
		size_t len;

		if (status_final(run_status(r)) == live)
			continue;
		if (!live && !all &&
		    t - json_number_value(json_object_get(r->doc, "finished")) >
			    FINISHED_RETENTION_SECS)
			continue;
		text = doc_text(r, &len);
		if (!first)
			(void)lev_buf_addch(b, ',');
		(void)lev_buf_add(b, text, len);
		first = false;
	}
}

/*
 * ps, written straight to connection FD: LEV_PROTO_OK_PREFIX, then "runs"
 * (the runs going), "finished" (those that ended in the last
 * FINISHED_RETENTION_SECS, or all with "all") and "health".
 */
static int send_ps(struct daemon *d, int fd, const json_t *msg, struct lev_err *err)
{
	bool all = json_is_true(json_object_get(msg, "all"));
	struct lev_buf b = LEV_BUF_INIT;	/* the size is checked once it is written */
	size_t waiting, live = live_runs(d, &waiting);
	double t = now();
	json_t *health;
	char *h;
	int r;

	health = json_pack("{s:i, s:i, s:i, s:f, s:s}", "pid", (int)getpid(), "runs", (int)live,
			   "waiting", (int)waiting, "uptime", t - d->started, "version",
			   LEV_VERSION);
	h = json_dumps(health, JSON_COMPACT);
	json_decref(health);
	(void)lev_buf_adds(&b, LEV_PROTO_OK_PREFIX "\"runs\":[");
	ps_list(d, &b, true, all, t);
	(void)lev_buf_adds(&b, "],\"finished\":[");
	ps_list(d, &b, false, all, t);
	(void)lev_buf_adds(&b, "],\"health\":");
	(void)lev_buf_adds(&b, h ? h : "{}");
	(void)lev_buf_addch(&b, '}');
	free(h);
	if (b.len > LEV_PROTO_MAX) {
		json_t *fail = lev_proto_fail("%zu runs do not fit in one reply of %zu bytes",
					      d->n_runs, LEV_PROTO_MAX);

		r = lev_proto_send(fd, fail, err);
		json_decref(fail);
	} else {
		r = lev_proto_send_raw(fd, b.buf, b.len, err);
	}
	lev_buf_release(&b);
	return r;
}

static json_t *op_get(struct daemon *d, const json_t *msg)
{
	struct run *r = run_find(d, lev_json_str(msg, "run"));
	json_t *ok;

	if (!r)
		return lev_proto_fail("no run '%s'", lev_json_str(msg, "run") ? lev_json_str(msg, "run")
									     : "");
	ok = lev_proto_ok();
	json_object_set(ok, "run", r->doc);
	return ok;
}

static json_t *op_requests(struct daemon *d)
{
	json_t *ok = lev_proto_ok(), *arr = json_array();

	for (size_t i = 0; i < d->n_runs; i++)
		if (d->runs[i]->question)
			json_array_append(arr, d->runs[i]->question);
	json_object_set_new(ok, "requests", arr);
	return ok;
}

static json_t *op_cancel(struct daemon *d, const json_t *msg)
{
	struct run *r = run_find(d, lev_json_str(msg, "run"));

	if (!r)
		return lev_proto_fail("no run '%s'", lev_json_str(msg, "run") ? lev_json_str(msg, "run")
									     : "");
	if (status_final(run_status(r)))
		return lev_proto_fail("run '%s' has already ended (%s)", r->id, run_status(r));
	r->cancel_requested = true;
	if (r->pid > 0)
		kill(r->pid, SIGTERM);
	dlog(d, "run %s: cancel requested", r->id);
	return lev_proto_ok();
}

/* The answer to question Q from a respond request, as the worker takes it. */
static json_t *answer_of(const json_t *q, const json_t *msg, char **why)
{
	const char *kind = lev_json_str(q, "kind");
	const char *answer = lev_json_str(msg, "answer");	/* approve | deny */
	const char *scope = lev_json_str(msg, "scope");		/* once | stage | run */
	const char *text = lev_json_str(msg, "text");
	const json_t *choice = json_object_get(msg, "choice");
	json_t *a = lev_proto_request("answer");

	if (!lev_streq(kind, "question")) {
		if (text || choice) {
			*why = xstrdup("a tool approval takes --approve or --deny");
		} else if (lev_streq(answer, "deny")) {
			json_object_set_new(a, "answer",
					    json_string(lev_ask_answer_name(LEV_ANSWER_DENY)));
			return a;
		} else if (lev_streq(answer, "approve")) {
			if (!scope)
				scope = "once";
			if (lev_streq(kind, "taint") && lev_streq(scope, "stage"))
				*why = xstrdup("a taint gate question offers no '--stage' answer; "
					       "use --session or nothing");
			else if (!lev_streq(scope, "once") && !lev_streq(scope, "stage") &&
				 !lev_streq(scope, "run"))
				*why = xasprintf("unknown scope '%s'", scope);
			if (!*why) {
				json_object_set_new(a, "answer", json_string(scope));
				return a;
			}
		} else {
			*why = xstrdup("answer it with --approve or --deny");
		}
		json_decref(a);
		return NULL;
	}
	{
		const char *qk = lev_json_str(q, "question_kind");
		const json_t *choices = json_object_get(q, "choices");

		if (scope) {
			*why = xstrdup("--stage and --session go with a tool approval");
		} else if (lev_streq(qk, "choice")) {
			if (json_is_integer(choice) && json_integer_value(choice) >= 0 &&
			    (size_t)json_integer_value(choice) < json_array_size(choices)) {
				json_object_set(a, "text",
						json_array_get(choices,
							       (size_t)json_integer_value(choice)));
				return a;
			}
			for (size_t i = 0; text && i < json_array_size(choices); i++) {
				if (lev_streq(json_string_value(json_array_get(choices, i)), text)) {
					json_object_set_new(a, "text", json_string(text));
					return a;
				}
			}
			*why = xasprintf("answer with --choice N, N from 0 to %zu",
					 json_array_size(choices) ? json_array_size(choices) - 1 : 0);
		} else if (lev_streq(qk, "confirm")) {
			if (lev_streq(answer, "approve") || lev_streq(text, "yes"))
				json_object_set_new(a, "text", json_string("yes"));
			else if (lev_streq(answer, "deny") || lev_streq(text, "no"))
				json_object_set_new(a, "text", json_string("no"));
			else
				*why = xstrdup("answer with --approve (yes) or --deny (no)");
			if (!*why)
				return a;
		} else if (text) {
			json_object_set_new(a, "text", json_string(text));
			return a;
		} else {
			*why = xstrdup("the agent asks for text: give it with --text TEXT or as VALUE");
		}
	}
	json_decref(a);
	return NULL;
}

static json_t *op_respond(struct daemon *d, const json_t *msg)
{
	const char *id = lev_json_str(msg, "id");
	_cleanup_free_ char *why = NULL;
	struct run *r = NULL;
	json_t *a, *shown;

	for (size_t i = 0; id && i < d->n_runs; i++)
		if (d->runs[i]->question &&
		    lev_streq(lev_json_str(d->runs[i]->question, "id"), id))
			r = d->runs[i];
	if (!r)
		return lev_proto_fail("no open request '%s'", id ? id : "");
	a = answer_of(r->question, msg, &why);
	if (!a)
		return lev_proto_fail("request '%s': %s", id, why ? why : "no answer given");
	shown = json_object_get(a, "answer") ? json_object_get(a, "answer")
					     : json_object_get(a, "text");
	(void)lev_store_question_close(d->st, id, json_string_value(shown), NULL);
	dlog(d, "run %s: %s answered", r->id, id);
	json_decref(r->question);
	r->question = NULL;
	run_send(d, r, a);
	run_set_status(d, r, "active");
	return lev_proto_ok();
}

static json_t *handle(struct daemon *d, const json_t *msg, const char *op)
{
	if (!strcmp(op, "ping"))
		return op_ping(d);
	if (!strcmp(op, "submit"))
		return op_submit(d, msg);
	if (!strcmp(op, "get"))
		return op_get(d, msg);
	if (!strcmp(op, "requests"))
		return op_requests(d);
	if (!strcmp(op, "respond"))
		return op_respond(d, msg);
	if (!strcmp(op, "cancel"))
		return op_cancel(d, msg);
	if (!strcmp(op, "stop")) {
		d->stopping = true;
		dlog(d, "stopping on request");
		return lev_proto_ok();
	}
	return lev_proto_fail("unknown request '%s'", op);
}

/* ---- connections ---------------------------------------------------------- */

static void conn_close(struct daemon *d, size_t i)
{
	close(d->conns[i].fd);
	lev_proto_in_release(&d->conns[i].in);
	d->conns[i] = d->conns[--d->n_conns];
}

static void accept_all(struct daemon *d, int lfd)
{
	for (;;) {
		struct timeval tv = { .tv_sec = 5 };
		uid_t uid;
		pid_t pid;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (!lev_sock_peer_ok(fd, &uid, &pid)) {
			dlog(d, "refused a connection from uid %d (pid %d): not our uid %d", (int)uid,
			     (int)pid, (int)getuid());
			close(fd);
			continue;
		}
		if (d->n_conns >= MAX_CONNS) {
			dlog(d, "refused a connection: %d are open", MAX_CONNS);
			close(fd);
			continue;
		}
		/* a client that stops reading must not stall the daemon */
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		d->conns = xreallocarray(d->conns, d->n_conns + 1, sizeof(*d->conns));
		d->conns[d->n_conns].fd = fd;
		memset(&d->conns[d->n_conns].in, 0, sizeof(d->conns[d->n_conns].in));
		d->n_conns++;
	}
}

/* Serve what connection I sent; false when it was closed. */
static bool conn_readable(struct daemon *d, size_t i)
{
	for (;;) {
		struct lev_err err = LEV_ERR_INIT;
		json_t *m = NULL, *reply;
		const char *op = NULL;
		int n = lev_proto_in_read(&d->conns[i].in, d->conns[i].fd, &m, &err);

		if (n == 0)
			return true;
		if (n < 0) {
			if (n != -EPIPE || !lev_proto_in_idle(&d->conns[i].in))
				dlog(d, "closed a connection: %s", err.msg);
			conn_close(d, i);
			return false;
		}
		if (lev_proto_check(m, &op, &err) < 0) {
			dlog(d, "closed a connection: %s", err.msg);
			json_decref(m);
			conn_close(d, i);
			return false;
		}
		if (!strcmp(op, "ps")) {
			/* the one reply that can be large is written as text */
			int r = send_ps(d, d->conns[i].fd, m, &err);

			json_decref(m);
			if (r < 0) {
				conn_close(d, i);
				return false;
			}
			continue;
		}
		reply = handle(d, m, op);
		json_decref(m);
		/* what the reply reports is committed first */
		flush_runs(d, false);
		if (lev_proto_send(d->conns[i].fd, reply, &err) < 0) {
			json_decref(reply);
			conn_close(d, i);
			return false;
		}
		json_decref(reply);
	}
}

/* ---- the loop ------------------------------------------------------------- */

static void recover(struct daemon *d)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *arr = NULL, *doc;
	size_t i;

	if (lev_store_runs_load(d->st, &arr, &err) < 0) {
		dlog(d, "%s", err.msg);
		return;
	}
	json_array_foreach(arr, i, doc) {
		const char *id = lev_json_str(doc, "id");
		struct run *r;

		if (!id || run_find(d, id))
			continue;
		r = run_add(d, id, json_incref(doc));
		json_object_del(r->doc, "pid");
		if (!status_final(run_status(r))) {
			json_object_set_new(r->doc, "error",
					    json_string("the daemon stopped while the run was going"));
			run_set_status(d, r, "error");
			dlog(d, "run %s: marked failed: the daemon stopped while it ran", r->id);
		}
	}
	json_decref(arr);
}

static void stop_workers(struct daemon *d)
{
	for (size_t i = 0; i < d->n_runs; i++) {
		struct run *r = d->runs[i];

		if (r->pid > 0) {
			r->cancel_requested = true;
			kill(r->pid, SIGTERM);
		}
	}
	for (int tries = 0; tries < 100; tries++) {
		bool any = false;

		reap(d);
		for (size_t i = 0; i < d->n_runs; i++)
			any = any || d->runs[i]->pid > 0;
		if (!any)
			return;
		usleep(50 * 1000);
	}
	for (size_t i = 0; i < d->n_runs; i++)
		if (d->runs[i]->pid > 0)
			kill(d->runs[i]->pid, SIGKILL);
	for (size_t i = 0; i < d->n_runs; i++) {
		int status;

		if (d->runs[i]->pid > 0 && waitpid(d->runs[i]->pid, &status, 0) > 0)
			run_reaped(d, d->runs[i], status);
	}
}

static int loop(struct daemon *d, int lfd, int sfd)
{
	struct pollfd *p = NULL;
	struct run **who = NULL;

	while (!d->stopping && !(d->o->stop && *d->o->stop)) {
		size_t n = 0, base;
		int r, timeout = flush_due(d);

		p = xreallocarray(p, 3 + d->n_conns + d->n_runs, sizeof(*p));
		who = xreallocarray(who, d->n_runs + 1, sizeof(*who));
		p[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = d->o->stop_fd, .events = POLLIN };
		base = n;
		for (size_t i = 0; i < d->n_conns; i++)
			p[n++] = (struct pollfd){ .fd = d->conns[i].fd, .events = POLLIN };
		for (size_t i = 0; i < d->n_runs; i++) {
			if (d->runs[i]->fd < 0)
				continue;
			who[n - base - d->n_conns] = d->runs[i];
			p[n++] = (struct pollfd){ .fd = d->runs[i]->fd, .events = POLLIN };
		}
		r = poll(p, n, timeout);
		if (r < 0 && errno != EINTR) {
			free(p);
			free(who);
			return -errno;
		}
		if (r > 0) {
			size_t nc = d->n_conns;

			if (p[1].revents) {
				struct signalfd_siginfo si;

				while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
					;
				reap(d);
			}
			/* workers first: a reply they wait on may be due */
			for (size_t i = base + nc; i < n; i++)
				if (p[i].revents && who[i - base - nc]->fd == p[i].fd)
					run_readable(d, who[i - base - nc]);
			/* connections from the end, as closing one moves the last */
			for (size_t i = nc; i-- > 0;)
				if (p[base + i].revents)
					(void)conn_readable(d, i);
			if (p[0].revents)
				accept_all(d, lfd);
		}
		reap(d);
		if (d->trim_due && !live_runs(d, NULL)) {
			/* the runs' buffers are free: an idle daemon returns to its size */
			malloc_trim(0);
			d->trim_due = false;
		}
		if (d->o->idle_exit_secs && !live_runs(d, NULL) &&
		    now() - d->last_busy > d->o->idle_exit_secs) {
			dlog(d, "no runs for %u s: exiting", d->o->idle_exit_secs);
			break;
		}
	}
	free(p);
	free(who);
	return 0;
}

int lev_daemon_serve(const struct lev_daemon_opts *o, struct lev_err *err)
{
	struct daemon d = { .o = o };
	_cleanup_free_ char *root = NULL, *sock = NULL, *lock = NULL, *db = NULL;
	_cleanup_close_ int lockfd = -1, lfd = -1, sfd = -1;
	sigset_t chld, old;
	int r;

	if (lev_datadir_root(&root, err) < 0 || lev_datadir_ensure(root, err) < 0 ||
	    lev_sock_path(&sock, err) < 0 || lev_sock_lock_path(&lock, err) < 0)
		return err ? err->code : -EINVAL;
	db = lev_path_join(root, "lev.db");
	r = lev_sock_lock(lock, &lockfd, err);
	if (r < 0)
		return r;
	r = lev_store_open(db, &d.st, err);
	if (r < 0)
		return r;
	d.started = d.last_busy = now();
	recover(&d);
	r = lev_sock_listen(sock, &lfd, err);
	if (r < 0)
		goto out;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		r = lev_err_errno(err, -errno, "cannot make a signalfd");
		goto out_mask;
	}
	dlog(&d, "listening on '%s' (pid %d)", sock, (int)getpid());
	if (o->ready)
		o->ready(o->log_data);
	r = loop(&d, lfd, sfd);
	if (r < 0)
		lev_err_errno(err, r, "the daemon's loop failed");
	/* nobody new may reach a daemon that is going away */
	(void)unlink(sock);
	stop_workers(&d);
	flush_runs(&d, true);
	dlog(&d, "stopped");
out_mask:
	sigprocmask(SIG_SETMASK, &old, NULL);
out:
	for (size_t i = 0; i < d.n_conns; i++) {
		close(d.conns[i].fd);
		lev_proto_in_release(&d.conns[i].in);
	}
	free(d.conns);
	for (size_t i = 0; i < d.n_runs; i++)
		run_free(d.runs[i]);
	free(d.runs);
	lev_store_close(d.st);
	return r;
}
