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
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lev-version.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/secrets.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/adopt.h"
#include "liblev/daemon/daemon.h"
#include "liblev/daemon/pool.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/reload.h"
#include "liblev/daemon/sock.h"
#include "liblev/daemon/meta.h"
#include "liblev/daemon/store.h"
#include "liblev/daemon/summary.h"
#include "liblev/daemon/webhook.h"
#include "liblev/daemon/worker.h"
#include "liblev/daemon/zygote.h"
#include "liblev/policy/envfilter.h"
#include "liblev/run/agent.h"
#include "liblev/run/runrecord.h"

/*
 * A finished run stays in `lev ps` this long (opts->retention_secs when
 * set), and in memory: after it, only the database holds it (`lev ps
 * --all`, `lev result` and the rest read it there), so a daemon that has
 * run a million runs is not a million runs big, nor slow to start.
 */
#define FINISHED_RETENTION_SECS 300
#define RETENTION(d) ((d)->o->retention_secs ? (double)(d)->o->retention_secs \
					     : (double)FINISHED_RETENTION_SECS)
#define MAX_CONNS 256
#define MAX_ENV 4096
/* A follower this far behind (bytes queued) is dropped: it never stalls the daemon. */
#define FOLLOW_OUT_MAX ((size_t)8 << 20)
/*
 * The latest events a run keeps for a follower who attaches later (lev run
 * follows from its submit and needs none; the record has every event).
 * Small: a thousand runs hold at most 32 MiB of it.
 */
#define BACKLOG_MAX_BYTES ((size_t)32 << 10)
/*
 * The most a turn or an output sent in parts may hold (worker.h): past it
 * the turn is journalled as cut and the output is not kept.
 */
#define PARTS_MAX ((size_t)256 << 20)
/* How long the previous daemon's workers get to end before SIGKILL (recover()). */
#define OLD_WORKER_GRACE_SECS 10
/* How often the loop looks for them meanwhile (ms). */
#define OLD_WORKER_POLL_MS 10
/*
 * Runs the loop resumes at each turn after a restart (recover()): the
 * daemon answers between batches, so `lev daemon start` and every client
 * wait for none of them.
 */
#define RECOVER_BATCH 8

struct run;

struct conn {
	int fd;
	struct lev_proto_in in;
	struct run *follow;	/* the run this connection follows (attach), or NULL */
	struct run *follow_next;	/* set by a request: follow it once replied to */
	char *out;		/* frames queued for a follower */
	size_t out_len, out_off;
	bool close_after;	/* close once out is sent: the run ended */
	bool dead;		/* closed at the next turn of the loop */
	bool watch;		/* follows every run (watch): each frame wrapped with its run */
	bool watch_next;	/* set by watch: begin once replied to */
};

struct frame {
	char *buf;
	size_t len;
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
	long call_seq;		/* the journal: the last call's place in the run */
	long turn_seq;		/* the model turns the worker took so far */
	bool result_kept;	/* the last call's result is the journal's already */
	bool paused;		/* lev pause: held at its next step until lev resume */
	bool muted;		/* its worker stopped taking frames: read on to its end */
	pid_t old_pid;		/* the previous daemon's worker, still going: recovery waits */
	bool old_killed;	/* old_pid was sent SIGKILL */
	bool recover_due;	/* held by the previous daemon: the loop resumes it (recover()) */
	bool recover_first;	/* it was going (not waiting on a person): resumed before those */
	bool hook_fired;	/* its webhook went to a delivery thread (hook_end()) */
	int pidfd;		/* an adopted worker (not our child): its pidfd; else -1 */
	bool adoptable;		/* old_pid runs our executable: adopted once it listens */
	struct lev_buf parts;	/* a turn or an output sent in "part" frames (worker.h) */
	bool parts_cut;		/* the parts went past PARTS_MAX: dropped */
	struct frame *backlog;	/* its latest event frames, for followers */
	size_t n_backlog, backlog_bytes;
	unsigned long dropped;	/* events no longer in the backlog */
	bool dirty;		/* doc moved since it was last written (flush_runs()) */
	char *meta_status;	/* the status meta.json was last written with; owned */
	bool meta_stale;	/* doc moved since meta.json was written (meta_sync()) */
	char *dump;		/* doc as JSON text, for ps (doc_text()); owned */
	size_t dump_len;
	double dump_updated, dump_moved;	/* doc's "updated" and "moved" when dumped */
};

struct daemon {
	const struct lev_daemon_opts *o;
	struct lev_store *st;
	struct lev_reload *rl;	/* the config's watch; NULL: none */
	struct conn *conns;
	size_t n_conns;
	struct run **runs;
	size_t n_runs;
	unsigned long qseq;	/* the last question's number (lev.db's: never given twice) */
	bool stopping;
	double started;
	double last_busy;
	double last_flush;	/* when flush_runs() last wrote the runs that moved */
	double pending_since;	/* the oldest write not committed; 0: none */
	double last_evict;	/* when runs_evict() last looked */
	bool trim_due;		/* a run ended: give the heap back once none is left */
	double old_deadline;	/* when the previous daemon's workers get SIGKILL */
	char *runs_dir;		/* <data root>/runs: each run's meta.json (meta.h) */
	char *hooks_dir;	/* <data root>/webhooks: the pending webhooks (webhook.h) */
	struct lev_pool *pool;	/* [limits] max_concurrent_inferences (pool.h) */
	int zyg_fd;		/* the link to the zygote (zygote.h); -1: none */
	pid_t zyg_pid;
	char *adopt_dir;	/* where a worker waits for a new daemon (adopt.h) */
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
	lev_secrets_redact(b.buf);
	d->o->log(d->o->log_data, b.buf);
	lev_buf_release(&b);
}

/* The statuses a run ends with. */
static const char *const final_statuses[] = { "complete", "error", "cancelled", NULL };

static bool status_final(const char *s)
{
	for (size_t i = 0; final_statuses[i]; i++)
		if (lev_streq(s, final_statuses[i]))
			return true;
	return false;
}

static const char *run_status(const struct run *r)
{
	return lev_json_str(r->doc, "status");
}

/* Put R's doc in the database (committed by flush_runs()). */
static void run_put(struct daemon *d, struct run *r)
{
	struct lev_err err = LEV_ERR_INIT;

	json_object_set_new(r->doc, "updated", json_real(now()));
	r->dirty = false;
	if (lev_store_run_put(d->st, r->doc, &err) < 0)
		dlog(d, "run %s: %s", r->id, err.msg);
	lev_err_clear(&err);
}

/*
 * What Leviath's harnesses poll, as the run goes: meta.json is rewritten
 * (a temporary file renamed over it, most of a spawn's cost) when the
 * run's status moved, or when FORCE (flush_runs(), at most every
 * FLUSH_SECS); else it is only marked stale.
 */
static void meta_sync(struct daemon *d, struct run *r, bool force)
{
	struct lev_err err = LEV_ERR_INIT;
	const char *status = run_status(r) ? run_status(r) : "";

	if (!force && r->meta_status && lev_streq(r->meta_status, status)) {
		r->meta_stale = true;
		return;
	}
	if (lev_meta_write(d->runs_dir, r->doc, &err) < 0)
		dlog(d, "run %s: %s", r->id, err.msg);
	lev_err_clear(&err);
	free(r->meta_status);
	r->meta_status = xstrdup(status);
	r->meta_stale = false;
}

static void run_save(struct daemon *d, struct run *r)
{
	run_put(d, r);
	meta_sync(d, r, false);
}

static void follow_end(struct daemon *d, struct run *r);

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
		for (size_t i = 0; i < d->n_runs; i++) {
			if (d->runs[i]->dirty)
				run_save(d, d->runs[i]);
			if (d->runs[i]->meta_stale)
				meta_sync(d, d->runs[i], true);
		}
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

static void hook_end(struct daemon *d, struct run *r);

static void run_set_status(struct daemon *d, struct run *r, const char *status)
{
	bool ended = status_final(status) && !status_final(run_status(r));

	json_object_set_new(r->doc, "status", json_string(status));
	json_object_set_new(r->doc, "moved", json_real(now()));
	if (status_final(status)) {
		json_object_set_new(r->doc, "finished", json_real(now()));
		json_object_del(r->doc, "workers");	/* they ended with it */
		d->last_busy = now();
		/* nothing will resume it: its request (and the keys in it) goes */
		(void)lev_store_request_drop(d->st, r->id, NULL);
		d->trim_due = true;
	}
	run_save(d, r);
	if (status_final(status))
		follow_end(d, r);
	if (ended)
		hook_end(d, r);
}

/* Run ID if it is in memory (going, or finished lately), else NULL. */
static struct run *run_resident(struct daemon *d, const char *id)
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
	r->pidfd = -1;
	lev_buf_init(&r->parts, PARTS_MAX);
	d->runs = xreallocarray(d->runs, d->n_runs + 1, sizeof(*d->runs));
	d->runs[d->n_runs++] = r;
	return r;
}

/*
 * Run ID: in memory, or taken back from the database when it finished long
 * ago (it leaves memory again at the next runs_evict()); NULL when there is
 * no such run.
 */
static struct run *run_find(struct daemon *d, const char *id)
{
	struct run *r = run_resident(d, id);
	struct lev_err err = LEV_ERR_INIT;
	json_t *doc = NULL;
	int k;

	if (r || !id)
		return r;
	k = lev_store_run_get(d->st, id, &doc, &err);
	if (k < 0)
		dlog(d, "run %s: %s", id, err.msg);
	return k == 0 ? run_add(d, id, doc) : NULL;
}

static void backlog_free(struct run *r)
{
	for (size_t i = 0; i < r->n_backlog; i++)
		free(r->backlog[i].buf);
	free(r->backlog);
	r->backlog = NULL;
	r->n_backlog = r->backlog_bytes = 0;
}

static void run_free(struct run *r)
{
	backlog_free(r);
	if (r->fd >= 0)
		close(r->fd);
	if (r->pidfd >= 0)
		close(r->pidfd);
	lev_proto_in_release(&r->in);
	json_decref(r->doc);
	json_decref(r->question);
	free(r->dump);
	free(r->meta_status);
	lev_buf_release(&r->parts);
	free(r->id);
	free(r);
}

static bool run_followed(const struct daemon *d, const struct run *r)
{
	for (size_t i = 0; i < d->n_conns; i++)
		if (d->conns[i].follow == r || d->conns[i].follow_next == r)
			return true;
	return false;
}

/*
 * Let go of the runs that finished more than RETENTION(d) seconds ago
 * (once their worker is reaped, their last state written and nobody follows
 * them): the database has them.  At most once a second.
 */
static void runs_evict(struct daemon *d, double t)
{
	size_t kept = 0;

	if (t - d->last_evict < 1.0)
		return;
	d->last_evict = t;
	for (size_t i = 0; i < d->n_runs; i++) {
		struct run *r = d->runs[i];

		if (status_final(run_status(r)) && r->pid <= 0 && r->fd < 0 && !r->dirty &&
		    t - json_number_value(json_object_get(r->doc, "finished")) > RETENTION(d) &&
		    !run_followed(d, r)) {
			run_free(r);
			d->trim_due = true;
			continue;
		}
		d->runs[kept++] = r;
	}
	d->n_runs = kept;
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

/* ---- followers ----------------------------------------------------------- */

/*
 * A follower (lev run, lev attach) gets a run's frames on its connection:
 * the backlog, then every event, question, answer and pause as it happens,
 * and at last {"op":"end"}.  Frames are queued and sent without blocking;
 * a follower that falls FOLLOW_OUT_MAX behind is disconnected (it says so
 * and can attach again), so a slow terminal never holds up the daemon or
 * a run.  Connections are only marked dead here and closed by the loop.
 */
static void conn_flush(struct conn *c)
{
	while (!c->dead && c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w < 0) {
			c->dead = true;
			return;
		}
		c->out_off += (size_t)w;
	}
	if (c->out_off == c->out_len) {
		c->out_off = c->out_len = 0;
		if (c->close_after)
			c->dead = true;
	}
}

static void conn_queue(struct daemon *d, struct conn *c, const char *f, size_t n)
{
	if (c->dead)
		return;
	if (c->out_len - c->out_off + n > FOLLOW_OUT_MAX) {
		dlog(d, "run %s: dropped a follower that reads too slowly",
		     c->follow ? c->follow->id : "(every run: watch)");
		c->dead = true;
		return;
	}
	if (c->out_off) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	c->out = xrealloc(c->out, c->out_len + n);
	memcpy(c->out + c->out_len, f, n);
	c->out_len += n;
}

static void conn_queue_msg(struct daemon *d, struct conn *c, json_t *msg)
{
	size_t n = 0;
	char *f = lev_proto_frame(msg, &n);

	if (f)
		conn_queue(d, c, f, n);
	free(f);
	json_decref(msg);
}

static void backlog_add(struct run *r, char *f, size_t n)
{
	size_t drop = 0;

	if (n > BACKLOG_MAX_BYTES) {
		free(f);
		r->dropped++;
		return;
	}
	r->backlog = xreallocarray(r->backlog, r->n_backlog + 1, sizeof(*r->backlog));
	r->backlog[r->n_backlog++] = (struct frame){ f, n };
	r->backlog_bytes += n;
	while (r->backlog_bytes > BACKLOG_MAX_BYTES) {
		r->backlog_bytes -= r->backlog[drop].len;
		free(r->backlog[drop].buf);
		drop++;
	}
	if (drop) {
		memmove(r->backlog, r->backlog + drop, (r->n_backlog - drop) * sizeof(*r->backlog));
		r->n_backlog -= drop;
		r->dropped += drop;
	}
}

/*
 * R's frame F (N bytes, with its header) to the connections that watch every
 * run, as {"v":1,"op":"run_frame","run":ID,"frame":F}: F's bytes are copied
 * once into the wrapper, never decoded.  A frame the wrapper would take past
 * LEV_PROTO_MAX is counted as dropped for them ({"op":"dropped","run":ID}).
 */
static void watch_push(struct daemon *d, const struct run *r, const char *f, size_t n)
{
	json_t *idj = NULL;
	char *id = NULL, *w = NULL;
	size_t k = 0, len = 0;

	for (size_t i = 0; i < d->n_conns; i++) {
		if (!d->conns[i].watch || d->conns[i].dead)
			continue;
		if (!w) {
			idj = json_string(r->id);
			id = json_dumps(idj, JSON_ENCODE_ANY);
			json_decref(idj);
			if (!id)
				return;
			len = 4 + strlen("{\"v\":1,\"op\":\"run_frame\",\"run\":,\"frame\":}") +
			      strlen(id) + (n - 4);
			if (len - 4 > LEV_PROTO_MAX) {
				json_t *m = lev_proto_request("dropped");

				json_object_set_new(m, "run", json_string(r->id));
				json_object_set_new(m, "events", json_integer(1));
				w = lev_proto_frame(m, &len);
				json_decref(m);
			} else {
				w = xmalloc(len);
				lev_proto_put_len(w, len - 4);
				k = 4 + (size_t)sprintf(w + 4, "{\"v\":1,\"op\":\"run_frame\",\"run\":%s,"
							 "\"frame\":", id);
				memcpy(w + k, f + 4, n - 4);
				w[len - 1] = '}';
			}
			free(id);
			if (!w)
				return;
		}
		conn_queue(d, &d->conns[i], w, len);
		conn_flush(&d->conns[i]);
	}
	free(w);
}

/* Send frame F (N bytes, taken) to R's followers; KEEP: also into its backlog. */
static void follow_push_frame(struct daemon *d, struct run *r, char *f, size_t n, bool keep)
{
	for (size_t i = 0; i < d->n_conns; i++) {
		if (d->conns[i].follow != r)
			continue;
		conn_queue(d, &d->conns[i], f, n);
		conn_flush(&d->conns[i]);
	}
	watch_push(d, r, f, n);
	if (keep)
		backlog_add(r, f, n);
	else
		free(f);
}

/* Send MSG (taken) to R's followers; KEEP: also into its backlog. */
static void follow_push(struct daemon *d, struct run *r, json_t *msg, bool keep)
{
	size_t n = 0;
	char *f = lev_proto_frame(msg, &n);

	json_decref(msg);
	if (f)
		follow_push_frame(d, r, f, n, keep);
}

/*
 * M (a reply or a frame) made to fit one frame when a run's output is what
 * makes it too large: OBJ (M, or the copy of a doc in it) leaves its
 * "result" out and says "result_in_record": the client reads the output
 * from the run's record (result.json), as `lev result` and `lev run` do.
 */
static void fit_result(const json_t *m, json_t *obj)
{
	char *s;
	size_t n;

	if (!json_is_string(json_object_get(obj, "result")))
		return;
	s = json_dumps(m, JSON_COMPACT);
	n = s ? strlen(s) : 0;
	free(s);
	if (n <= LEV_PROTO_MAX - 4096)
		return;
	json_object_del(obj, "result");
	json_object_set_new(obj, "result_in_record", json_true());
}

/* OK (a reply) with a copy of R's doc as "run", fit to a frame. */
static json_t *with_doc(json_t *ok, const struct run *r)
{
	json_t *doc = json_copy(r->doc);

	json_object_set_new(ok, "run", doc);
	fit_result(ok, doc);
	return ok;
}

static json_t *end_msg(const struct run *r)
{
	json_t *m = lev_proto_request("end");
	const char *keys[] = { "status", "result", "error", "record", NULL };

	json_object_set_new(m, "run", json_string(r->id));
	for (int i = 0; keys[i]; i++)
		if (json_object_get(r->doc, keys[i]))
			json_object_set(m, keys[i], json_object_get(r->doc, keys[i]));
	fit_result(m, m);
	return m;
}

static void follow_end(struct daemon *d, struct run *r)
{
	follow_push(d, r, end_msg(r), false);
	for (size_t i = 0; i < d->n_conns; i++) {
		if (d->conns[i].follow != r)
			continue;
		d->conns[i].close_after = true;
		conn_flush(&d->conns[i]);
	}
	/* an ended run's followers get its end and its record, not its events */
	backlog_free(r);
}

/* Make C follow R: what R holds so far, then whatever comes. */
static void follow_begin(struct daemon *d, struct conn *c, struct run *r)
{
	int fl = fcntl(c->fd, F_GETFL);

	if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		c->dead = true;
		return;
	}
	c->follow = r;
	if (r->dropped) {
		json_t *m = lev_proto_request("dropped");

		json_object_set_new(m, "events", json_integer((json_int_t)r->dropped));
		conn_queue_msg(d, c, m);
	}
	for (size_t i = 0; i < r->n_backlog; i++)
		conn_queue(d, c, r->backlog[i].buf, r->backlog[i].len);
	if (r->question) {
		json_t *m = lev_proto_request("ask");

		json_object_set(m, "question", r->question);
		conn_queue_msg(d, c, m);
	}
	if (r->paused)
		conn_queue_msg(d, c, lev_proto_request("paused"));
	if (status_final(run_status(r))) {
		conn_queue_msg(d, c, end_msg(r));
		c->close_after = true;
	}
	conn_flush(c);
}

/* ---- workers ------------------------------------------------------------- */

static void close_run_fd(struct run *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	r->muted = false;
	lev_proto_in_release(&r->in);
	lev_buf_release(&r->parts);
	r->parts_cut = false;
}

/*
 * A frame to R's worker.  When it cannot be sent (the worker has exited,
 * or is going), the link is only shut for writing: what the worker sent
 * before it went, its "done" included, is still read to the end of the
 * stream (run_readable(), reap()), never dropped with the socket.
 */
static void run_send(struct daemon *d, struct run *r, json_t *msg)
{
	struct lev_err err = LEV_ERR_INIT;

	if (r->fd >= 0 && !r->muted && lev_proto_send(r->fd, msg, &err) < 0) {
		dlog(d, "run %s: %s", r->id, err.msg);
		r->muted = true;
		(void)shutdown(r->fd, SHUT_WR);
	}
	json_decref(msg);
}

/* The child side of a worker: never returns. */
static void worker_exec(const struct lev_daemon_opts *o, int fd, char **env, pid_t parent,
			bool zygote)
{
	char *argv[] = { (char *)o->worker_exe, (char *)LEV_DAEMON_WORKER_CMD,
			 zygote ? (char *)LEV_ZYGOTE_FLAG : NULL, NULL };
	struct rlimit core = { 0, 0 };
	sigset_t none;
	int null;

	/*
	 * The daemon gone, the zygote goes; a worker waits for a new daemon to
	 * adopt it (worker.c w_adopt())
	 */
	if ((zygote && prctl(PR_SET_PDEATHSIG, SIGTERM) < 0) || getppid() != parent)
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
	bool zygote;
};

static int spawn_child(void *arg)
{
	struct spawn *s = arg;

	worker_exec(s->o, s->fd, s->env, s->parent, s->zygote);
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
static pid_t worker_spawn(const struct lev_daemon_opts *o, int fd, char **env, pid_t parent,
			  bool zygote)
{
#ifdef LEV_SPAWN_FORK
	pid_t pid = fork();

	if (pid == 0)
		worker_exec(o, fd, env, parent, zygote);
	return pid;
#else
	static char stack[64 * 1024] __attribute__((aligned(64)));
	struct spawn s = { o, fd, env, parent, zygote };
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

/*
 * The zygote every worker is forked from (zygote.h): exec'd with nothing of
 * the daemon's, before any run.  Without it (LEV_DAEMON_ZYGOTE=0, or it
 * failed) each worker is exec'd.
 */
static void zygote_start(struct daemon *d)
{
	char *env[] = { (char *)"LD_BIND_NOW=1", NULL };
	struct timeval tv = { 10, 0 };
	int sv[2];

	d->zyg_fd = -1;
	d->zyg_pid = -1;
	if (d->o->no_zygote)
		return;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		dlog(d, "cannot make the zygote's link: %s", strerror(errno));
		return;
	}
	/* a zygote that hangs costs one spawn 10 s, then is given up */
	(void)setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	d->zyg_pid = worker_spawn(d->o, sv[1], env, getpid(), true);
	close(sv[1]);
	if (d->zyg_pid < 0) {
		dlog(d, "cannot start the zygote: %s", strerror(errno));
		close(sv[0]);
		return;
	}
	d->zyg_fd = sv[0];
}

/* Let the zygote go (it exits when its link ends) and reap it. */
static void zygote_stop(struct daemon *d)
{
	if (d->zyg_fd >= 0)
		close(d->zyg_fd);
	d->zyg_fd = -1;
	if (d->zyg_pid > 0) {
		kill(d->zyg_pid, SIGKILL);
		(void)waitpid(d->zyg_pid, NULL, 0);
	}
	d->zyg_pid = -1;
}

/* Fork and exec a worker for REQ; *pid and *fd (the daemon's end) on success. */
static int spawn_worker(struct daemon *d, const json_t *req, pid_t *pid_out, int *fd_out,
			struct lev_err *err)
{
	char **env;
	int sv[2];
	pid_t pid, self = getpid();

	env = env_of(json_object_get(req, "env"), err);
	if (!env)
		return err ? err->code : LEV_EPARSE;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		strv_free(env);
		return lev_err_errno(err, -errno, "cannot make a socketpair");
	}
	pid = -1;
	if (d->zyg_fd >= 0) {
		struct lev_err e = LEV_ERR_INIT;

		pid = lev_zygote_spawn(d->zyg_fd, sv[1], env, d->o->run_data_limit, &e);
		if (pid < 0) {
			dlog(d, "%s: the workers are exec'd from here on", e.msg);
			zygote_stop(d);
		}
	}
	if (pid < 0)
		pid = worker_spawn(d->o, sv[1], env, self, false);
	if (pid < 0) {
		int e = -errno;

		close(sv[0]);
		close(sv[1]);
		strv_free(env);
		return lev_err_errno(err, e, "cannot start a worker");
	}
	close(sv[1]);
	strv_free(env);
	*pid_out = pid;
	*fd_out = sv[0];
	return 0;
}

/* ---- hot reload ------------------------------------------------------------ */

/* The config REQ's client named (LEVIATH_CONFIG_PATH), or NULL: the daemon's own. */
static const char *request_config_path(const json_t *req)
{
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(req, "env"), i, e) {
		const char *s = json_string_value(e);

		size_t n = strlen("LEVIATH_CONFIG_PATH=");

		if (s && !strncmp(s, "LEVIATH_CONFIG_PATH=", n) && s[n])
			return s + n;
	}
	return NULL;
}

/*
 * A file on disk is broken: a new run starts from the last good copy.  A
 * run submitted with a config of its own never runs under another file:
 * its own is watched, and the daemon's good copy is not handed to it.
 */
static void reload_start_paths(struct daemon *d, json_t *start, const json_t *req)
{
	const char *config = NULL, *policy = NULL, *leviath = NULL,
		   *own = request_config_path(req);

	lev_reload_good_paths(d->rl, &config, &policy, &leviath);
	if (own && !lev_reload_is_config(d->rl, own))
		config = NULL;
	lev_reload_watch_config(d->rl, own);
	if (config)
		json_object_set_new(start, "config_path", json_string(config));
	if (policy)
		json_object_set_new(start, "policy_path", json_string(policy));
	if (leviath)
		json_object_set_new(start, "leviath_policy_path", json_string(leviath));
}

/*
 * A watched file changed.  A broken one is reported (log, status, ps
 * health) and the last good copy stays in force; a good change is sent to
 * every running run, which takes the tighter of old and new (worker.h).
 */
static void pool_set_max(struct daemon *d);

static void reload_changed(struct daemon *d)
{
	struct lev_err err = LEV_ERR_INIT;
	size_t n = 0;

	if (lev_reload_check(d->rl, &err) < 0) {
		dlog(d, "config: %s; the last good copy stays in force", err.msg);
		return;
	}
	pool_set_max(d);
	for (size_t i = 0; i < d->n_runs; i++) {
		struct run *r = d->runs[i];

		if (r->fd >= 0 && !status_final(run_status(r))) {
			run_send(d, r, lev_proto_request("reload"));
			n++;
		}
	}
	dlog(d, "config: reloaded; %zu running run(s) get the tighter of old and new", n);
}

/* ---- the inference pool (pool.h) ------------------------------------------ */

static void pool_grant(struct daemon *d)
{
	const void *who;

	while ((who = lev_pool_next(d->pool))) {
		struct run *r = (struct run *)who;

		run_send(d, r, lev_proto_request("infer_go"));
		dlog(d, "run %s: model request let through (%zu in flight, %zu queued)", r->id,
		     lev_pool_in_flight(d->pool), lev_pool_queued(d->pool));
	}
}

/* Run R asks to make a model request ({"op":"infer"}, worker.h). */
static void pool_ask(struct daemon *d, struct run *r)
{
	if (lev_pool_ask(d->pool, r)) {
		run_send(d, r, lev_proto_request("infer_go"));
		return;
	}
	dlog(d, "run %s: model request queued (%zu in flight, %zu queued)", r->id,
	     lev_pool_in_flight(d->pool), lev_pool_queued(d->pool));
}

/* Run R's request is answered, or its worker is gone: its place goes to the next. */
static void pool_leave(struct daemon *d, struct run *r)
{
	lev_pool_leave(d->pool, r);
	pool_grant(d);
}

static void pool_set_max(struct daemon *d)
{
	lev_pool_set_max(d->pool, (size_t)lev_reload_max_inferences(d->rl));
	pool_grant(d);
}

/* The daemon's health, as ping answers it and `lev ps --json` shows it. A new object. */
static json_t *health_json(struct daemon *d)
{
	size_t waiting, live = live_runs(d, &waiting);
	const char *e = lev_reload_error(d->rl);
	json_t *o = json_pack("{s:i, s:i, s:i, s:i, s:f, s:s}", "pid", (int)getpid(), "runs",
			      (int)live, "waiting", (int)waiting, "in_memory", (int)d->n_runs,
			      "uptime", now() - d->started, "version", LEV_VERSION);

	if (e)
		json_object_set_new(o, "config_error", json_string(e));
	/* the process the workers are forked from (zygote.h); absent: exec'd */
	if (d->zyg_pid > 0)
		json_object_set_new(o, "zygote", json_integer(d->zyg_pid));
	json_object_set_new(o, "inferences",
			    json_pack("{s:I, s:I, s:I}", "max", (json_int_t)lev_pool_max(d->pool),
				      "in_flight", (json_int_t)lev_pool_in_flight(d->pool),
				      "queued", (json_int_t)lev_pool_queued(d->pool)));
	return o;
}

/* Hand run R (its worker just started) its request; RECOVER: from its journal. */
static void run_start(struct daemon *d, struct run *r, const json_t *req, bool recover,
		      const char *secret)
{
	json_t *start = lev_proto_request("start");
	char *adopt = lev_adopt_path(d->adopt_dir, r->id);

	json_object_set_new(start, "run", json_string(r->id));
	/* where it waits for a new daemon should this one die, and the proof it asks */
	if (adopt && secret) {
		json_object_set_new(start, "adopt_path", json_string(adopt));
		json_object_set_new(start, "adopt_secret", json_string(secret));
	}
	free(adopt);
	json_object_set(start, "request", (json_t *)req);
	if (recover)
		json_object_set_new(start, "recover", json_true());
	/* a limit in force: the worker asks before each model request */
	if (lev_pool_max(d->pool))
		json_object_set_new(start, "infer_pool", json_true());
	reload_start_paths(d, start, req);
	run_send(d, r, start);
}

/*
 * The request as lev.db keeps it: the client's environment without the
 * variables it marked secret by their role ("secret_env": providers' keys,
 * MCP servers' ${VAR}s), whose values join the daemon's secret set
 * (base/secrets.h: its log and lev.db are redacted with it), and without
 * the credential-shaped ones (the shell_env filter's rule, envfilter.h;
 * the data root's variables stay).  Their names go in "withheld_env" so a
 * resumed run that misses one can say which (worker.c).  A new reference.
 */
/* Whether the array ARR holds the string NAME. */
static bool names_has(const json_t *arr, const char *name)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e)
		if (lev_streq(json_string_value(e), name))
			return true;
	return false;
}

static json_t *request_to_keep(const json_t *req)
{
	static char home[] = "LEVIATH_HOME", config[] = "LEVIATH_CONFIG_PATH";
	static char *const keep[] = { home, config, NULL };
	const struct lev_envfilter f = { LEV_SHELL_ENV_FILTERED, NULL, keep };
	json_t *kept = json_deep_copy(req), *env = json_array(), *withheld = json_array(), *e;
	size_t i;

	json_array_foreach(json_object_get(req, "env"), i, e) {
		const char *s = json_string_value(e), *eq = s ? strchr(s, '=') : NULL;
		_cleanup_free_ char *name = eq ? xstrndup(s, (size_t)(eq - s)) : NULL;

		if (!name)
			continue;
		if (names_has(json_object_get(req, "secret_env"), name)) {
			lev_secrets_add(eq + 1);
			json_array_append_new(withheld, json_string(name));
		} else if (lev_envfilter_withholds(&f, name))
			json_array_append_new(withheld, json_string(name));
		else
			json_array_append(env, e);
	}
	json_object_set_new(kept, "env", env);
	if (json_array_size(withheld))
		json_object_set_new(kept, "withheld_env", withheld);
	else
		json_decref(withheld);
	return kept;
}

static json_t *op_submit(struct daemon *d, struct conn *c, const json_t *msg)
{
	const json_t *req = json_object_get(msg, "request");
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *id = NULL;
	int fd;
	pid_t pid;
	struct run *r;
	json_t *doc;

	if (d->stopping)
		return lev_proto_fail("the daemon is stopping");
	if (!json_is_object(req) || !lev_json_str(req, "blueprint") ||
	    !lev_json_str(req, "workdir"))
		return lev_proto_fail("a run request names a blueprint and a workdir");
	if (spawn_worker(d, req, &pid, &fd, &err) < 0)
		return lev_proto_fail("%s", err.msg);

	do {
		free(id);
		id = lev_run_id_new();
	} while (run_find(d, id));
	doc = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:f, s:f, s:i, s:s, s:s, s:b, s:s?}", "id",
			id, "agent", lev_json_str(req, "agent") ? lev_json_str(req, "agent") : "?",
			"status", "idle", "stage", "", "iteration", 0, "tools", 0, "created", now(),
			"moved", now(), "pid", (int)pid, "workdir", lev_json_str(req, "workdir"),
			"blueprint_path", lev_json_str(req, "blueprint"), "yolo",
			json_is_true(json_object_get(req, "yolo")), "model",
			lev_json_str(req, "model"));
	if (lev_json_str(req, "title"))	/* Leviath's [title], the client's */
		json_object_set_new(doc, "title", json_string(lev_json_str(req, "title")));
	r = run_add(d, id, doc);
	r->pid = pid;
	r->fd = fd;
	run_put(d, r);
	/* its directory and meta.json before lev run --json returns (harnesses poll it) */
	if (lev_meta_submit(d->runs_dir, r->doc, &err) < 0)
		dlog(d, "run %s: %s", id, err.msg);
	lev_err_clear(&err);
	r->meta_status = xstrdup(run_status(r));
	/* kept until the run ends: a restarted daemon resumes the run from it */
	{
		json_t *keep = request_to_keep(req);
		_cleanup_free_ char *secret = lev_adopt_secret_new();

		json_object_set_new(keep, "adopt_secret", json_string(secret));
		if (lev_store_request_put(d->st, id, keep, &err) < 0)
			dlog(d, "run %s: %s", id, err.msg);
		json_decref(keep);
		run_start(d, r, req, false, secret);
	}
	/* a watcher (every run's stream) learns of the run first */
	follow_push(d, r, json_pack("{s:i,s:s,s:s,s:O}", "v", LEV_PROTO_VERSION, "op", "spawned",
				    "run", id, "agent", json_object_get(r->doc, "agent")), false);
	dlog(d, "run %s: started worker %d for '%s'", id, (int)pid, lev_json_str(req, "blueprint"));
	d->last_busy = now();
	if (json_is_true(json_object_get(msg, "follow")))
		c->follow_next = r;
	{
		json_t *ok = lev_proto_ok();

		json_object_set_new(ok, "run", json_string(id));
		return ok;
	}
}

static bool run_ended_in_record(struct daemon *d, struct run *r);

/* Mark a run whose worker is gone; STATUS from waitpid. */
static void pool_leave(struct daemon *d, struct run *r);

static void run_reaped(struct daemon *d, struct run *r, int status)
{
	char *adopt = lev_adopt_path(d->adopt_dir, r->id);

	/* where its worker listened for a new daemon (adopt.h), left by a killed one */
	if (adopt)
		(void)unlink(adopt);
	free(adopt);
	pool_leave(d, r);
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
	/* every frame it sent is read (reap()): a run its record says completed did */
	if (run_ended_in_record(d, r))
		return;
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

/* An adopted worker (not our child) has ended: read what it said, then as reaped. */
static void reap_adopted(struct daemon *d)
{
	for (size_t i = 0; i < d->n_runs; i++) {
		struct run *r = d->runs[i];

		if (r->pidfd < 0 || !lev_adopt_exited(r->pidfd))
			continue;
		if (r->fd >= 0)
			run_readable(d, r);
		close(r->pidfd);
		r->pidfd = -1;
		run_reaped(d, r, 0);
	}
}

/* Signal SIG to run R's worker: an adopted one through its pidfd. */
static void run_kill(struct run *r, int sig)
{
	if (r->pidfd >= 0)
		(void)lev_adopt_signal(r->pidfd, sig);
	else if (r->pid > 0)
		kill(r->pid, sig);
}

static void reap(struct daemon *d)
{
	int status;
	pid_t pid;

	reap_adopted(d);

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == d->zyg_pid) {
			d->zyg_pid = -1;
			dlog(d, "the zygote is gone: the workers are exec'd from here on");
			zygote_stop(d);
			continue;
		}
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

/*
 * The journal, by each call's place in the run: a call a replay settled
 * from the journal ("done", "denied") keeps its row as it is; any other
 * call (one in flight included) is written again at its place.
 */
static void journal_event(struct daemon *d, struct run *r, const json_t *ev)
{
	const char *name = lev_json_str(ev, "event");
	const char *replayed = lev_json_str(ev, "replayed");
	struct lev_err err = LEV_ERR_INIT;
	int rc = 0;

	if (lev_streq(name, "tool_call") && lev_json_str(ev, "id")) {
		r->call_seq++;
		r->result_kept = lev_streq(replayed, "done") || lev_streq(replayed, "denied");
		if (!r->result_kept)
			rc = lev_store_journal_call(
				d->st, r->id, r->call_seq, lev_json_str(ev, "id"),
				lev_json_str(ev, "tool"), json_object_get(ev, "args"),
				lev_streq(lev_json_str(ev, "decision"), "allow"), &err);
	} else if (lev_streq(name, "tool_result") && lev_json_str(ev, "id") && r->call_seq &&
		   !r->result_kept) {
		/* a call's result follows its call; a skipped call has no row */
		rc = lev_store_journal_result(d->st, r->id, r->call_seq,
					      json_is_true(json_object_get(ev, "ok")),
					      lev_json_str(ev, "text"), &err);
		r->result_kept = true;
	}
	if (rc < 0)
		dlog(d, "run %s: %s", r->id, err.msg);
}

/* A "part" frame: its text joins the parts of the turn or output it precedes. */
static void parts_add(struct run *r, const json_t *m)
{
	const json_t *t = json_object_get(m, "text");

	if (r->parts_cut)
		return;
	if (!json_is_string(t) ||
	    lev_buf_add(&r->parts, json_string_value(t), json_string_length(t)) < 0) {
		lev_buf_release(&r->parts);
		r->parts_cut = true;
	}
}

/*
 * The text sent in parts before frame M, when M says it has some ("parts"):
 * a new string, or NULL when there is none or it was cut.  The parts are
 * emptied for the next one.
 */
static json_t *parts_take(struct run *r, const json_t *m)
{
	json_t *s = NULL;

	if (json_is_true(json_object_get(m, "parts")) && !r->parts_cut)
		s = json_stringn(r->parts.buf, r->parts.len);
	lev_buf_release(&r->parts);
	r->parts_cut = false;
	return s;
}

/*
 * The worker took a model turn live: the journal keeps it for a replay,
 * whatever its size (one too large for a frame comes in parts).
 */
static void journal_turn(struct daemon *d, struct run *r, const json_t *m)
{
	json_t *text = parts_take(r, m), *whole = NULL;
	const json_t *turn = json_object_get(m, "turn");
	json_t *cut = NULL;
	struct lev_err err = LEV_ERR_INIT;
	json_int_t seq = json_integer_value(json_object_get(m, "seq"));

	if (text) {
		whole = json_loadb(json_string_value(text), json_string_length(text), 0, NULL);
		turn = whole;
	}
	if (!json_is_object(turn))
		turn = cut = json_pack("{s:b}", "cut", 1);	/* too large to send: the log ends */
	if (seq > 0 && lev_store_turn_put(d->st, r->id, (long)seq, r->call_seq, turn, &err) < 0)
		dlog(d, "run %s: %s", r->id, err.msg);
	json_decref(cut);
	json_decref(whole);
	json_decref(text);
}

/*
 * The run's effective policy as it stands (policy/effective.h), committed
 * at once: a run resumed after a crash is never looser than it was.
 */
static void store_policy(struct daemon *d, struct run *r, const json_t *m)
{
	struct lev_err err = LEV_ERR_INIT;
	const json_t *snap = json_object_get(m, "snapshot");

	if (!json_is_object(snap) || lev_store_policy_put(d->st, r->id, snap, &err) < 0)
		dlog(d, "run %s: cannot keep its policy snapshot: %s", r->id,
		     err.msg[0] ? err.msg : "none sent");
	flush_runs(d, false);
}

/*
 * The events worker_event() acts on (the journal's, the status's, the
 * progress's): any other goes to the followers as it came, undecoded.
 */
static bool event_acted_on(const char *name, size_t n)
{
	static const char *const acted[] = { "tool_call", "tool_result", "run_started",
					     "stage_started", "model_request", "model_response",
					     "child_started", "child_finished", NULL };

	for (int i = 0; acted[i]; i++)
		if (strlen(acted[i]) == n && !memcmp(acted[i], name, n))
			return true;
	return false;
}

/* Add EV's token count KEY to DOC's running total (meta.json's). */
static void add_tokens(json_t *doc, const json_t *ev, const char *key)
{
	const json_t *v = json_object_get(ev, key);

	if (json_is_integer(v) && json_integer_value(v) > 0)
		json_object_set_new(doc, key,
				    json_integer(json_integer_value(json_object_get(doc, key)) +
						 json_integer_value(v)));
}

/*
 * What a run with no open question is doing: "waiting: workers(N)" while N
 * fan-out workers run (each a process of the run's worker, listed in the
 * doc's "workers"), "children(N)" for spawn_agent children, else "active".
 */
static const char *run_busy_status(const struct run *r)
{
	static char busy[96];
	const json_t *ws = json_object_get(r->doc, "workers"), *x;
	size_t nw = 0, nc = 0, i;

	json_array_foreach(ws, i, x)
		if (lev_streq(lev_json_str(x, "kind"), "worker"))
			nw++;
		else
			nc++;
	if (nw && nc)
		snprintf(busy, sizeof(busy), "waiting: workers(%zu), children(%zu)", nw, nc);
	else if (nw || nc)
		snprintf(busy, sizeof(busy), "waiting: %s(%zu)", nw ? "workers" : "children",
			 nw ? nw : nc);
	else
		snprintf(busy, sizeof(busy), "active");
	return busy;
}

/* A worker or child of R started or finished: the doc lists those running. */
static void child_moved(struct daemon *d, struct run *r, const json_t *ev, bool started)
{
	json_t *ws = json_object_get(r->doc, "workers"), *x;
	const char *id = lev_json_str(ev, "child");
	size_t i;

	if (!json_is_array(ws)) {
		ws = json_array();
		json_object_set_new(r->doc, "workers", ws);
	}
	json_array_foreach(ws, i, x)
		if (lev_streq(lev_json_str(x, "child"), id)) {
			json_array_remove(ws, i);
			break;
		}
	if (started)
		json_array_append_new(ws, json_pack("{s:s?, s:s?, s:s?, s:s?, s:O?}", "child", id,
						    "kind", lev_json_str(ev, "kind"), "agent",
						    lev_json_str(ev, "agent"), "stage",
						    lev_json_str(ev, "entry_stage"), "pid",
						    json_object_get(ev, "pid")));
	if (!r->question && !status_final(run_status(r)) && !r->paused)
		run_set_status(d, r, run_busy_status(r));
}

static void worker_event(struct daemon *d, struct run *r, const json_t *ev)
{
	const char *name = lev_json_str(ev, "event");

	journal_event(d, r, ev);
	if (lev_streq(name, "run_started")) {
		run_set_status(d, r, "active");
		return;
	}
	if (lev_streq(name, "child_started") || lev_streq(name, "child_finished")) {
		child_moved(d, r, ev, lev_streq(name, "child_started"));
		return;
	}
	if (lev_streq(name, "stage_started") && lev_json_str(ev, "stage")) {
		json_object_set_new(r->doc, "stage", json_string(lev_json_str(ev, "stage")));
	} else if (lev_streq(name, "model_request") && json_object_get(ev, "iteration")) {
		json_object_set(r->doc, "iteration", json_object_get(ev, "iteration"));
	} else if (lev_streq(name, "tool_call")) {
		json_int_t n = json_integer_value(json_object_get(r->doc, "tools"));

		json_object_set_new(r->doc, "tools", json_integer(n + 1));
	} else if (lev_streq(name, "model_response")) {
		add_tokens(r->doc, ev, "prompt_tokens");
		add_tokens(r->doc, ev, "completion_tokens");
		add_tokens(r->doc, ev, "cached_tokens");
		add_tokens(r->doc, ev, "cache_write_tokens");
		r->dirty = true;
		return;	/* tokens are not progress */
	} else {
		return;
	}
	json_object_set_new(r->doc, "moved", json_real(now()));
	r->dirty = true;	/* ps reads the doc; the database gets it in flush_runs() */
}

/* Why a run waits on question Q: Leviath's words (an interaction point: checkpoint). */
static const char *ask_status(const json_t *q)
{
	const char *kind = lev_json_str(q, "kind");

	if (lev_streq(kind, "taint"))
		return "waiting: taint gate";
	if (json_is_true(json_object_get(q, "point")))
		return "waiting: checkpoint";
	if (lev_streq(kind, "question"))
		return "waiting: user prompt";
	return "waiting: tool approval";
}

/* M came as the LEN bytes of FRAME (borrowed): an event goes on as it came. */
static void worker_msg(struct daemon *d, struct run *r, json_t *m, const char *frame, size_t len)
{
	const char *op = lev_json_str(m, "op");

	if (lev_streq(op, "event")) {
		const json_t *ev = json_object_get(m, "event");

		if (json_is_object(ev)) {
			worker_event(d, r, ev);
			/* the worker's frame is a follower's: {"v", "op": "event", "event"} */
			follow_push_frame(d, r, xmemdup(frame, len), len, true);
		}
		if (json_is_true(json_object_get(m, "ack"))) {
			/* the journal row is committed before the call runs */
			flush_runs(d, false);
			run_send(d, r, lev_proto_request("ack"));
		}
	} else if (lev_streq(op, "sync")) {
		/* what it sent so far committed: it may drop its copies (worker.c) */
		json_t *a = lev_proto_request("synced");

		flush_runs(d, false);
		json_object_set(a, "n", json_object_get(m, "n"));
		run_send(d, r, a);
	} else if (lev_streq(op, "adopted") && r->pidfd >= 0) {
		/* the journal as the worker last saw it committed; what it sends again follows */
		r->call_seq = (long)json_integer_value(json_object_get(m, "calls"));
		r->result_kept = json_is_true(json_object_get(m, "kept"));
		dlog(d, "run %s: adopted worker %d", r->id, (int)r->pid);
	} else if (lev_streq(op, "infer")) {
		pool_ask(d, r);
	} else if (lev_streq(op, "infer_done")) {
		pool_leave(d, r);
	} else if (lev_streq(op, "part")) {
		parts_add(r, m);
	} else if (lev_streq(op, "turn")) {
		journal_turn(d, r, m);
	} else if (lev_streq(op, "policy")) {
		store_policy(d, r, m);
	} else if (lev_streq(op, "reloaded")) {
		if (lev_json_str(m, "error"))
			dlog(d, "run %s: cannot take the new config: %s", r->id,
			     lev_json_str(m, "error"));
		else
			dlog(d, "run %s: took the tighter of its config and the new one", r->id);
	} else if (lev_streq(op, "paused")) {
		if (r->paused && !status_final(run_status(r))) {
			run_set_status(d, r, "paused");
			follow_push(d, r, lev_proto_request("paused"), false);
			dlog(d, "run %s: paused", r->id);
		}
	} else if (lev_streq(op, "info")) {
		const char *keys[] = { "agent", "read_paths", "record", "accepts_messages", NULL };

		for (int i = 0; keys[i]; i++)
			if (json_object_get(m, keys[i]))
				json_object_set(r->doc, keys[i], json_object_get(m, keys[i]));
		run_save(d, r);
	} else if (lev_streq(op, "ask")) {
		struct lev_err err = LEV_ERR_INIT;
		json_t *q = json_deep_copy(m);
		char *id = xasprintf("q%lu", ++d->qseq);

		json_object_del(q, "v");
		json_object_del(q, "op");
		json_object_set_new(q, "id", json_string(id));
		json_object_set_new(q, "run", json_string(r->id));
		json_object_set(q, "agent", json_object_get(r->doc, "agent"));
		json_decref(r->question);
		r->question = q;
		if (lev_store_question_put(d->st, id, r->id, q, &err) < 0)
			dlog(d, "run %s: %s", r->id, err.msg);
		run_set_status(d, r, ask_status(q));
		dlog(d, "run %s: waiting for an answer to %s", r->id, id);
		free(id);
		{
			json_t *f = lev_proto_request("ask");

			json_object_set(f, "question", q);
			follow_push(d, r, f, false);
		}
	} else if (lev_streq(op, "done")) {
		const char *status = lev_json_str(m, "status");
		json_t *output = parts_take(r, m);	/* an output too large for a frame */

		if (!status_final(status))
			status = "error";
		if (output)
			json_object_set_new(r->doc, "result", output);
		else if (lev_json_str(m, "output"))
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
		const char *f;
		size_t len;
		int n = lev_proto_in_next(&r->in, r->fd, &f, &len, &err);
		const char *name = NULL;
		size_t nl = n > 0 ? lev_proto_event_peek(f + 4, len, &name) : 0;

		if (nl && !event_acted_on(name, nl)) {
			/* nothing here needs it decoded: on to the followers */
			follow_push_frame(d, r, xmemdup(f, len + 4), len + 4, true);
			continue;
		}
		if (n > 0 && lev_proto_decode(f + 4, len, &m, &err) < 0)
			n = LEV_EPARSE;
		if (n == 0)
			return;
		if (n < 0) {
			if (n != -EPIPE || !lev_proto_in_idle(&r->in))
				dlog(d, "run %s: the worker's link: %s", r->id, err.msg);
			close_run_fd(r);
			return;
		}
		worker_msg(d, r, m, f, len + 4);
		json_decref(m);
		if (r->fd < 0)
			return;
	}
}

/* ---- requests ------------------------------------------------------------ */

static json_t *op_ping(struct daemon *d)
{
	json_t *ok = lev_proto_ok(), *h = health_json(d);

	json_object_update(ok, h);
	json_decref(h);
	return ok;
}

/* Runs in one page of `ps --all` unless the request asks fewer ("limit"). */
#define PS_PAGE_DEFAULT 500
#define PS_PAGE_MAX 5000

/*
 * R's summary as JSON text, kept until the doc moves: every change to a
 * doc sets its "moved" (run_set_status(), worker_event()) or its "updated"
 * (run_save()).  A thousand runs' docs cost ps a memcpy each, not an
 * encoding.
 */
static const char *doc_text(struct run *r, size_t *len)
{
	double u = json_number_value(json_object_get(r->doc, "updated"));
	double m = json_number_value(json_object_get(r->doc, "moved"));

	if (!r->dump || u != r->dump_updated || m != r->dump_moved) {
		free(r->dump);
		r->dump = lev_run_summary(r->doc);
		r->dump_len = r->dump ? strlen(r->dump) : 0;
		r->dump_updated = u;
		r->dump_moved = m;
	}
	*len = r->dump_len;
	return r->dump ? r->dump : "{}";
}

/* The N-th run's JSON TEXT (LEN bytes) into a list in B. */
static void ps_add(struct lev_buf *b, size_t n, const char *text, size_t len)
{
	if (n)
		(void)lev_buf_addch(b, ',');
	(void)lev_buf_add(b, text, len);
}

/* One page of `ps --all`'s finished runs. */
struct ps_page {
	struct daemon *d;
	struct lev_buf *b;
	size_t before;		/* the runs the list holds before the page's */
	size_t n;
	char *last;		/* the id of the last run listed */
	bool full;		/* the page holds what a reply may: the rest on the next */
};

/*
 * One finished run for `ps --all`, as a summary: the one in memory when it
 * is there (it may be newer).  A page ends before it holds half of what a
 * reply may.
 */
static int ps_page_one(void *data, const char *id, const char *doc, size_t len)
{
	struct ps_page *pg = data;
	struct run *r = run_resident(pg->d, id);

	/* at least one run a page: the paging always moves on */
	if (pg->n && pg->b->len > LEV_PROTO_MAX / 2) {
		pg->full = true;
		return 1;
	}
	if (r)
		doc = doc_text(r, &len);	/* else lev.db's stored summary */
	ps_add(pg->b, pg->before + pg->n++, doc, len);
	free(pg->last);
	pg->last = xstrdup(id);
	return 0;
}

/*
 * The page of ended runs after id AFTER (NULL: the first) into B, whose
 * list holds BEFORE runs already: how many; *next (malloc'ed) the id to
 * ask the next page after, NULL at the end.
 */
static size_t ps_page(struct daemon *d, struct lev_buf *b, size_t before, const char *after,
		      long limit, char **next)
{
	struct ps_page pg = { d, b, before, 0, NULL, false };
	struct lev_err err = LEV_ERR_INIT;

	if (lev_store_runs_page(d->st, final_statuses, after, limit, ps_page_one, &pg, &err) < 0)
		dlog(d, "%s", err.msg);
	if (pg.full || (long)pg.n == limit)
		*next = pg.last;
	else
		free(pg.last);
	return pg.n;
}

/*
 * The runs going (LIVE) or those finished in the last RETENTION(d) seconds
 * into B, whose list holds BEFORE runs already: how many.
 */
static size_t ps_list(struct daemon *d, struct lev_buf *b, size_t before, bool live, double t)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n_runs; i++) {
		struct run *r = d->runs[i];
		const char *text;
		size_t len;

		if (status_final(run_status(r)) == live)
			continue;
		if (!live && t - json_number_value(json_object_get(r->doc, "finished")) > RETENTION(d))
			continue;
		text = doc_text(r, &len);
		ps_add(b, before + n++, text, len);
	}
	return n;
}

/* ",KEY":ID, ID a JSON string, or null when ID is NULL, into B. */
static void ps_add_id(struct lev_buf *b, const char *key, const char *id)
{
	json_t *n = id ? json_string(id) : json_null();
	char *s = json_dumps(n, JSON_ENCODE_ANY);

	(void)lev_buf_addf(b, ",\"%s\":%s", key, s ? s : "null");
	free(s);
	json_decref(n);
}

/*
 * ps, written straight to connection FD: LEV_PROTO_OK_PREFIX, then "runs"
 * (the runs going; none on a page after the first), "finished" (those that
 * ended in the last RETENTION(d) seconds, or with "all" one page of every
 * ended run: "after" the last id of the page before, at most "limit"),
 * "next" when another page follows, and "health".  Each run is a summary
 * (lev_run_summary()).  With "items" (lev serve's GET /api/runs) the
 * reply is instead LEV_PROTO_OK_PREFIX, then the API's list as it is sent:
 * "items" (the runs going, then the ended ones) and "next_cursor" (the id
 * or null), and nothing else, so lev serve passes it on unparsed.
 */
static int send_ps(struct daemon *d, int fd, const json_t *msg, struct lev_err *err)
{
	bool all = json_is_true(json_object_get(msg, "all"));
	bool items = json_is_true(json_object_get(msg, "items"));
	const char *after = lev_json_str(msg, "after");
	json_int_t limit = json_integer_value(json_object_get(msg, "limit"));
	struct lev_buf b = LEV_BUF_INIT;	/* the size is checked once it is written */
	_cleanup_free_ char *next = NULL;
	size_t listed = 0;
	int r;

	if (limit <= 0 || limit > PS_PAGE_MAX)
		limit = PS_PAGE_DEFAULT;
	(void)lev_buf_adds(&b, LEV_PROTO_OK_PREFIX);
	(void)lev_buf_adds(&b, items ? "\"items\":[" : "\"runs\":[");
	if (!after)
		listed = ps_list(d, &b, 0, true, now());
	if (!items)
		(void)lev_buf_adds(&b, "],\"finished\":[");
	listed += all ? ps_page(d, &b, items ? listed : 0, after, (long)limit, &next)
		      : ps_list(d, &b, items ? listed : 0, false, now());
	(void)lev_buf_addch(&b, ']');
	if (items || next)
		ps_add_id(&b, items ? "next_cursor" : "next", next);
	if (!items) {
		json_t *health = health_json(d);
		char *h = json_dumps(health, JSON_COMPACT);

		(void)lev_buf_adds(&b, ",\"health\":");
		(void)lev_buf_adds(&b, h ? h : "{}");
		free(h);
		json_decref(health);
	}
	(void)lev_buf_addch(&b, '}');
	if (b.len > LEV_PROTO_MAX) {
		json_t *fail = lev_proto_fail("%zu runs do not fit in one reply of %zu bytes",
					      listed, LEV_PROTO_MAX);

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

	if (!r)
		return lev_proto_fail("no run '%s'", lev_json_str(msg, "run") ? lev_json_str(msg, "run")
									     : "");
	return with_doc(lev_proto_ok(), r);
}

/* The number of question id "qN" (0: not one). */
static unsigned long question_num(const char *id)
{
	return id && id[0] == 'q' ? strtoul(id + 1, NULL, 10) : 0;
}

/* The open question numbered lowest above AFTER (only ID's, when given), or NULL. */
static json_t *question_after(struct daemon *d, unsigned long after, const char *id)
{
	json_t *best = NULL;
	unsigned long bn = 0;

	for (size_t i = 0; i < d->n_runs; i++) {
		json_t *q = d->runs[i]->question;
		unsigned long k = q ? question_num(lev_json_str(q, "id")) : 0;

		if (!q || (id && !lev_streq(lev_json_str(q, "id"), id)))
			continue;
		if (k > after && (!best || k < bn)) {
			best = q;
			bn = k;
		}
	}
	return best;
}

/*
 * The open questions, oldest first, in pages: those numbered after "after"
 * (a question id), at most "limit" of them (0 or none: no count) and never
 * more than half a frame of them (a call may be long), at least one; "next"
 * names the last one given when more remain.  With "id": that one alone.
 */
static json_t *op_requests(struct daemon *d, const json_t *msg)
{
	json_t *ok = lev_proto_ok(), *arr = json_array(), *q;
	unsigned long last = question_num(lev_json_str(msg, "after"));
	json_int_t limit = json_integer_value(json_object_get(msg, "limit"));
	size_t bytes = 0, n = 0;

	while ((q = question_after(d, last, lev_json_str(msg, "id")))) {
		char *t = json_dumps(q, JSON_COMPACT);
		size_t len = t ? strlen(t) : 0;

		free(t);
		if (n && ((limit > 0 && (json_int_t)n >= limit) || bytes + len > LEV_PROTO_MAX / 2)) {
			json_object_set_new(ok, "next", json_sprintf("q%lu", last));
			break;
		}
		json_array_append(arr, q);
		bytes += len;
		n++;
		last = question_num(lev_json_str(q, "id"));
	}
	json_object_set_new(ok, "requests", arr);
	return ok;
}

static bool pid_running(pid_t pid);

static json_t *op_cancel(struct daemon *d, const json_t *msg)
{
	struct run *r = run_find(d, lev_json_str(msg, "run"));

	if (!r)
		return lev_proto_fail("no run '%s'", lev_json_str(msg, "run") ? lev_json_str(msg, "run")
									     : "");
	if (status_final(run_status(r)))
		return lev_proto_fail("run '%s' has already ended (%s)", r->id, run_status(r));
	r->cancel_requested = true;
	/* --force: the worker is killed, not asked; the run ends cancelled when it is reaped */
	if (r->pid > 0)
		run_kill(r, json_is_true(json_object_get(msg, "force")) ? SIGKILL : SIGTERM);
	else if (r->old_pid > 0 && json_is_true(json_object_get(msg, "force")) &&
		 pid_running(r->old_pid) && !r->old_killed) {
		/* the previous daemon's worker: recovery sees it gone, and cancels the run */
		kill(r->old_pid, SIGKILL);
		r->old_killed = true;
	} else if (r->old_pid <= 0)
		/* no worker (a run held paused across a restart): nothing to wait for */
		run_set_status(d, r, "cancelled");
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

/*
 * An answer approves what was shown: a question that carries the digest of
 * its call (callshow.h) takes an approval only when sent with that digest,
 * the one the client computed from the call it displayed.  A deny needs
 * none: refusing a call is safe whatever the call is.
 */
static bool answer_shown(const json_t *q, const json_t *msg, char **why)
{
	const char *want = lev_json_str(q, "digest"), *got = lev_json_str(msg, "digest");

	if (!want || lev_streq(want, got) || lev_streq(lev_json_str(msg, "answer"), "deny"))
		return true;
	*why = xstrdup(got ? "the answer was given to another call than the one the run "
			     "asks about (its digest does not match); list it again with "
			     "'lev respond'"
			   : "the answer names no digest of the call it approves; "
			     "answer with 'lev respond', which shows the call first");
	return false;
}

static json_t *op_respond(struct daemon *d, const json_t *msg)
{
	const char *id = lev_json_str(msg, "id");
	_cleanup_free_ char *why = NULL;
	struct run *r = NULL;
	json_t *a, *shown, *told;

	for (size_t i = 0; id && i < d->n_runs; i++)
		if (d->runs[i]->question &&
		    lev_streq(lev_json_str(d->runs[i]->question, "id"), id))
			r = d->runs[i];
	if (!r)
		return lev_proto_fail("no open request '%s'", id ? id : "");
	if (!answer_shown(r->question, msg, &why))
		return lev_proto_fail("request '%s': %s", id, why);
	a = answer_of(r->question, msg, &why);
	if (!a)
		return lev_proto_fail("request '%s': %s", id, why ? why : "no answer given");
	shown = json_object_get(a, "answer") ? json_object_get(a, "answer")
					     : json_object_get(a, "text");
	(void)lev_store_question_close(d->st, id, json_string_value(shown), NULL);
	dlog(d, "run %s: %s answered", r->id, id);
	json_decref(r->question);
	r->question = NULL;
	told = lev_proto_request("answered");
	json_object_set_new(told, "id", json_string(id));
	if (json_string_value(shown))
		json_object_set_new(told, "answer", json_string(json_string_value(shown)));
	run_send(d, r, a);
	run_set_status(d, r, run_busy_status(r));
	follow_push(d, r, told, false);
	return lev_proto_ok();
}

static bool resume_run(struct daemon *d, struct run *r);

static struct run *run_of(struct daemon *d, const json_t *msg, json_t **fail)
{
	struct run *r = run_find(d, lev_json_str(msg, "run"));

	if (!r)
		*fail = lev_proto_fail("no run '%s'", lev_json_str(msg, "run") ? lev_json_str(msg, "run")
										: "");
	else if (status_final(run_status(r)))
		*fail = lev_proto_fail("run '%s' has already ended (%s)", r->id, run_status(r));
	return *fail ? NULL : r;
}

/* Follow a run: the reply holds it as ps shows it; its frames follow. */
static json_t *op_attach(struct daemon *d, struct conn *c, const json_t *msg)
{
	struct run *r = run_find(d, lev_json_str(msg, "run"));
	json_t *ok;

	if (!r)
		return lev_proto_fail("no run '%s'", lev_json_str(msg, "run") ? lev_json_str(msg, "run")
									     : "");
	ok = with_doc(lev_proto_ok(), r);
	c->follow_next = r;
	return ok;
}

/*
 * Follow every run: each frame any run's followers get from now on, wrapped
 * with the run's id (watch_push()), runs that start later included.  The
 * reply lists the runs live now (ids and statuses); nothing of their past
 * is replayed (their records hold it).
 */
static json_t *op_watch(struct daemon *d, struct conn *c)
{
	json_t *ok = lev_proto_ok(), *runs = json_array();

	for (size_t i = 0; i < d->n_runs; i++)
		if (!status_final(run_status(d->runs[i])))
			json_array_append_new(runs, json_pack("{s:s,s:s}", "id", d->runs[i]->id,
							      "status", run_status(d->runs[i])));
	json_object_set_new(ok, "runs", runs);
	c->watch_next = true;
	return ok;
}

/* lev pause: the worker holds at its next step boundary and says "paused". */
static json_t *op_pause(struct daemon *d, const json_t *msg)
{
	json_t *fail = NULL;
	struct run *r = run_of(d, msg, &fail);

	if (!r)
		return fail;
	if (r->paused)
		return lev_proto_fail("run '%s' is already paused", r->id);
	r->paused = true;
	run_send(d, r, lev_proto_request("pause"));
	dlog(d, "run %s: pause requested", r->id);
	return lev_proto_ok();
}

static json_t *op_resume(struct daemon *d, const json_t *msg)
{
	json_t *fail = NULL;
	struct run *r = run_of(d, msg, &fail);

	if (!r)
		return fail;
	if (!r->paused)
		return lev_proto_fail("run '%s' is not paused", r->id);
	r->paused = false;
	if (r->pid <= 0 && r->fd < 0) {
		/* held across a restart: a worker resumes it from the journal */
		if (r->old_pid > 0)
			run_set_status(d, r, "idle");
		else if (!resume_run(d, r)) {
			r->paused = true;
			return lev_proto_fail("run '%s' cannot be resumed (see the daemon's log)",
					      r->id);
		}
		follow_push(d, r, lev_proto_request("resumed"), false);
		return lev_proto_ok();
	}
	run_send(d, r, lev_proto_request("resume"));
	if (lev_streq(run_status(r), "paused"))
		run_set_status(d, r, r->question ? ask_status(r->question) : run_busy_status(r));
	follow_push(d, r, lev_proto_request("resumed"), false);
	dlog(d, "run %s: resumed", r->id);
	return lev_proto_ok();
}

/* lev msg: for the run's current stage, when it accepts messages. */
static json_t *op_msg(struct daemon *d, const json_t *msg)
{
	json_t *fail = NULL, *m, *st;
	struct run *r = run_of(d, msg, &fail);
	const char *text = lev_json_str(msg, "text"), *stage;
	bool ok = false;
	size_t i;

	if (!r)
		return fail;
	if (!text || !*text)
		return lev_proto_fail("a message needs text");
	stage = lev_json_str(r->doc, "stage");
	if (!stage || !*stage)
		return lev_proto_fail("run '%s' has not started a stage yet", r->id);
	json_array_foreach(json_object_get(r->doc, "accepts_messages"), i, st)
		ok = ok || lev_streq(json_string_value(st), stage);
	if (!ok)
		return lev_proto_fail("stage '%s' of run '%s' does not accept messages (its "
				      "blueprint sets 'accepts_messages = false')",
				      stage, r->id);
	m = lev_proto_request("msg");
	json_object_set_new(m, "text", json_string(text));
	run_send(d, r, m);
	dlog(d, "run %s: a message for stage '%s'", r->id, stage);
	return lev_proto_ok();
}

/* ---- completion webhooks (webhook.h) ------------------------------------------- */

/* R ended (or had ended when its webhook came): deliver its kept webhook, if it has one. */
static void hook_end(struct daemon *d, struct run *r)
{
	struct lev_webhook_opts o;
	struct lev_err err = LEV_ERR_INIT;
	json_t *end;

	if (r->hook_fired || !lev_webhook_kept(d->hooks_dir, r->id))
		return;
	r->hook_fired = true;
	lev_webhook_defaults(&o);
	lev_reload_webhook(d->rl, &o.conf, &o.allow_local);
	/* the daemon's log, not D: the thread may outlive the loop (its lines hold no secret) */
	o.log = d->o->log;
	o.log_data = d->o->log_data;
	end = end_msg(r);
	if (lev_webhook_fire(d->hooks_dir, r->id, end, &o, &err) < 0)
		dlog(d, "webhook for run %s: not sent: %s", r->id, err.msg);
	json_decref(end);
}

/*
 * webhook {run, url, secret}: the daemon delivers RUN's completion (lev
 * serve's spawn with callback_url; the URL was checked there).  The secret
 * is kept in its file only (webhook.h) and goes into no line, so it is not
 * added to the redaction set: 8 of its bytes shared with a path would
 * redact that path from the requests lev.db keeps, and a resumed run would
 * lose its blueprint.
 */
static json_t *op_webhook(struct daemon *d, const json_t *msg)
{
	const char *url = lev_json_str(msg, "url"), *secret = lev_json_str(msg, "secret");
	struct lev_err err = LEV_ERR_INIT;
	struct run *r;

	if (!url || !secret || !*secret)
		return lev_proto_fail("a webhook has a url and a secret");
	r = run_find(d, lev_json_str(msg, "run"));
	if (!r)
		return lev_proto_fail("no run '%s'", lev_json_str(msg, "run") ? lev_json_str(msg, "run")
										: "");
	if (lev_webhook_keep(d->hooks_dir, r->id, url, secret, &err) < 0)
		return lev_proto_fail("%s", err.msg);
	dlog(d, "run %s: its completion webhook is kept", r->id);
	if (status_final(run_status(r)))	/* it ended before its webhook came */
		hook_end(d, r);
	return lev_proto_ok();
}

/* Once started: the webhooks a previous daemon did not deliver. */
static void hooks_resume(struct daemon *d)
{
	char **ids = lev_webhook_pending(d->hooks_dir);

	for (char **id = ids; id && *id; id++) {
		struct run *r = run_find(d, *id);
		_cleanup_free_ char *path = NULL;

		if (r && status_final(run_status(r))) {	/* hook_end() skips one it fired */
			hook_end(d, r);
		} else if (!r) {
			path = lev_path_join(d->hooks_dir, *id);
			(void)unlink(path);
			dlog(d, "webhook for run %s: dropped: no such run", *id);
		}
	}
	lev_strv_free(ids);
}

static json_t *handle(struct daemon *d, struct conn *c, const json_t *msg, const char *op)
{
	if (!strcmp(op, "ping"))
		return op_ping(d);
	if (!strcmp(op, "submit"))
		return op_submit(d, c, msg);
	if (!strcmp(op, "attach"))
		return op_attach(d, c, msg);
	if (!strcmp(op, "watch"))
		return op_watch(d, c);
	if (!strcmp(op, "pause"))
		return op_pause(d, msg);
	if (!strcmp(op, "resume"))
		return op_resume(d, msg);
	if (!strcmp(op, "msg"))
		return op_msg(d, msg);
	if (!strcmp(op, "get"))
		return op_get(d, msg);
	if (!strcmp(op, "requests"))
		return op_requests(d, msg);
	if (!strcmp(op, "respond"))
		return op_respond(d, msg);
	if (!strcmp(op, "cancel"))
		return op_cancel(d, msg);
	if (!strcmp(op, "webhook"))
		return op_webhook(d, msg);
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
	free(d->conns[i].out);
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
		memset(&d->conns[d->n_conns], 0, sizeof(d->conns[d->n_conns]));
		d->conns[d->n_conns].fd = fd;
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
		/* a follower only reads: anything it sends ends its connection */
		if (d->conns[i].follow || d->conns[i].watch || lev_proto_check(m, &op, &err) < 0) {
			if (!d->conns[i].follow && !d->conns[i].watch)
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
		reply = handle(d, &d->conns[i], m, op);
		json_decref(m);
		/* what the reply reports is committed first */
		flush_runs(d, false);
		if (lev_proto_send(d->conns[i].fd, reply, &err) < 0) {
			json_decref(reply);
			conn_close(d, i);
			return false;
		}
		json_decref(reply);
		if (d->conns[i].follow_next) {
			follow_begin(d, &d->conns[i], d->conns[i].follow_next);
			d->conns[i].follow_next = NULL;
			return true;
		}
		if (d->conns[i].watch_next) {
			int fl = fcntl(d->conns[i].fd, F_GETFL);

			d->conns[i].watch_next = false;
			d->conns[i].watch = true;
			if (fl < 0 || fcntl(d->conns[i].fd, F_SETFL, fl | O_NONBLOCK) < 0)
				d->conns[i].dead = true;
			return true;
		}
	}
}

/* ---- the loop ------------------------------------------------------------- */

static bool status_paused(const char *s)
{
	return s && !strncmp(s, "paused", 6);
}

/*
 * Resume run R, which the previous daemon held when it stopped: a new
 * worker with the run's request rebuilds it from the journal (see
 * worker.h) and goes on.  False when it cannot be (no request kept).
 */
static bool resume_run(struct daemon *d, struct run *r)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *req = NULL;
	int fd;
	pid_t pid;

	_cleanup_free_ char *secret = lev_adopt_secret_new();

	if (lev_store_request_get(d->st, r->id, &req, &err) < 0 ||
	    spawn_worker(d, req, &pid, &fd, &err) < 0) {
		dlog(d, "run %s: cannot resume it: %s", r->id, err.msg);
		json_decref(req);
		return false;
	}
	/* a new worker, a new secret: the one before cannot be adopted any more */
	json_object_set_new(req, "adopt_secret", json_string(secret));
	if (lev_store_request_put(d->st, r->id, req, &err) < 0)
		dlog(d, "run %s: %s", r->id, err.msg);
	lev_err_clear(&err);
	r->pid = pid;
	r->fd = fd;
	json_object_set_new(r->doc, "pid", json_integer(pid));
	json_object_set_new(r->doc, "restarts",
			    json_integer(json_integer_value(json_object_get(r->doc, "restarts")) + 1));
	json_object_del(r->doc, "error");
	run_set_status(d, r, "idle");
	run_start(d, r, req, true, secret);
	dlog(d, "run %s: resumed from the journal in worker %d", r->id, (int)pid);
	if (json_array_size(json_object_get(req, "withheld_env"))) {
		_cleanup_free_ char *names = json_dumps(json_object_get(req, "withheld_env"),
							JSON_COMPACT);

		dlog(d, "run %s: resumed without %s: lev.db keeps no credential-shaped variables",
		     r->id, names ? names : "?");
	}
	json_decref(req);
	return true;
}

/* PID runs (a zombie nobody reaped yet has ended). */
static bool pid_running(pid_t pid)
{
	char path[64], st[256];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, st, sizeof(st) - 1);
	close(fd);
	if (n <= 0)
		return false;
	st[n] = '\0';
	p = strrchr(st, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* PID is a worker (of the previous daemon) still going. */
static bool old_worker_alive(pid_t pid)
{
	char path[64], cmd[256] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	/* argv[1] is the worker command: anything else is not ours any more */
	return n > 0 && memmem(cmd, (size_t)n, LEV_DAEMON_WORKER_CMD,
			       strlen(LEV_DAEMON_WORKER_CMD)) &&
	       pid_running(pid);
}

/*
 * R completed before the previous daemon heard of it (killed between the
 * worker's last write and its own): the record's result.json, written and
 * synced when the run ended, says so.  The run is finished as it said,
 * never resumed: a resumed run would replay all of its turns for nothing.
 * Only "complete" is taken: a worker ends "cancelled" (or on an error of
 * its link) because the daemon died, and that run is resumed.
 */
static bool run_ended_in_record(struct daemon *d, struct run *r)
{
	const char *rec = lev_json_str(r->doc, "record");
	json_t *res = NULL, *v;

	if (!rec || lev_runrecord_result_load(rec, &res, NULL) < 0)
		return false;
	if (!lev_streq(json_string_value(json_object_get(res, "status")), "complete")) {
		json_decref(res);
		return false;
	}
	v = json_object_get(res, "output");
	if (json_is_string(v))
		json_object_set(r->doc, "result", v);
	v = json_object_get(res, "error");
	if (json_is_string(v))
		json_object_set(r->doc, "error", v);
	run_set_status(d, r, "complete");
	dlog(d, "run %s: completed, as its record says", r->id);
	json_decref(res);
	return true;
}

/*
 * Go on with run R of the previous daemon, whose worker is gone: finished
 * as its record says, cancelled when that was asked meanwhile, held when
 * paused (`lev resume` resumes it, `lev cancel` ends it), else resumed
 * from the journal.
 */
static void recover_one(struct daemon *d, struct run *r)
{
	if (run_ended_in_record(d, r))
		return;
	if (r->cancel_requested) {
		run_set_status(d, r, "cancelled");
		dlog(d, "run %s: cancelled before it was resumed", r->id);
	} else if (r->paused) {
		/*
		 * A worker replays it from the journal and holds at its first step
		 * boundary, as paused: lev resume lets it go on at once.
		 */
		if (resume_run(d, r)) {
			run_send(d, r, lev_proto_request("pause"));
			dlog(d, "run %s: paused; held by its worker, replayed from the journal",
			     r->id);
		} else {
			dlog(d, "run %s: paused; resumed from the journal when it is resumed", r->id);
		}
		run_set_status(d, r, "paused");
	} else if (!resume_run(d, r)) {
		json_object_set_new(r->doc, "error",
				    json_string("the daemon stopped while the run was going"));
		run_set_status(d, r, "error");
		dlog(d, "run %s: marked failed: the daemon stopped while it ran", r->id);
	}
}

/*
 * Take over R's worker PID, which the previous daemon left going
 * (adopt.h): the run goes on in it, shown as its record says until the
 * worker sends again what the dead daemon may have missed (a question
 * pending included).  Whether it was; R->adoptable when PID is our worker
 * but does not listen yet.
 */
static bool adopt_run(struct daemon *d, struct run *r, pid_t pid)
{
	_cleanup_free_ char *path = lev_adopt_path(d->adopt_dir, r->id);
	struct lev_err err = LEV_ERR_INIT;
	json_t *req = NULL;
	int fd, pidfd, k;

	if (lev_store_request_get(d->st, r->id, &req, &err) < 0)
		return false;
	k = lev_adopt_connect(pid, d->o->worker_exe, path, lev_json_str(req, "adopt_secret"), &fd,
			      &pidfd);
	json_decref(req);
	r->adoptable = k == -EAGAIN;
	if (k < 0)
		return false;
	r->pid = pid;
	r->fd = fd;
	r->pidfd = pidfd;
	r->old_pid = 0;
	r->recover_due = false;
	json_object_del(r->doc, "old_worker");
	json_object_set_new(r->doc, "pid", json_integer(pid));
	json_object_set_new(r->doc, "moved", json_real(now()));
	run_put(d, r);
	r->meta_stale = true;
	return true;
}

/*
 * The runs whose previous worker has ended since the last look are
 * recovered (two workers never write one record); one still there at
 * d->old_deadline gets SIGKILL.  Whether any is still waited on.
 */
static bool old_workers_check(struct daemon *d)
{
	double t = now();
	bool any = false;

	for (size_t i = 0; i < d->n_runs; i++) {
		struct run *r = d->runs[i];

		if (r->old_pid <= 0)
			continue;
		/* ours, and listening by now: adopted */
		if (r->adoptable && !r->old_killed && adopt_run(d, r, r->old_pid))
			continue;
		if (pid_running(r->old_pid)) {
			if (t >= d->old_deadline && !r->old_killed) {
				dlog(d, "the previous daemon's worker %d is still there: killing it",
				     (int)r->old_pid);
				kill(r->old_pid, SIGKILL);
				r->old_killed = true;
			}
			any = true;
			continue;
		}
		r->old_pid = 0;
		json_object_del(r->doc, "old_worker");
		r->recover_due = true;	/* recover_some(), the runs that were going first */
	}
	return any;
}

/*
 * The runs recover() left to the loop, RECOVER_BATCH at a time, in the
 * order lev.db lists them, those that were going first.  Whether any is
 * left.
 */
static bool recover_some(struct daemon *d)
{
	size_t done = 0;

	/* the runs that were going first: one waiting on a person can wait */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < d->n_runs; i++) {
			struct run *r = d->runs[i];

			if (!r->recover_due || r->recover_first != (pass == 0))
				continue;
			if (done == RECOVER_BATCH)
				return true;
			r->recover_due = false;
			/* resumed meanwhile (lev resume of a paused run), or ended (lev cancel) */
			if (r->pid > 0 || r->fd >= 0 || status_final(run_status(r)))
				continue;
			recover_one(d, r);
			done++;
		}
	}
	return false;
}

/*
 * Show R, held by the previous daemon, as waiting to be resumed: lev.db
 * gets it now, its meta.json (still the previous daemon's word) is only
 * marked stale: a hundred renames here would delay lev daemon start, and
 * its resumption writes the file anyway (flush_runs() within a second).
 */
static void recover_hold(struct daemon *d, struct run *r)
{
	json_object_set_new(r->doc, "status", json_string(r->paused ? "paused" : "idle"));
	json_object_set_new(r->doc, "moved", json_real(now()));
	run_put(d, r);
	r->meta_stale = true;
}

/*
 * The runs the previous daemon held.  Its workers were cancelled when it
 * died and may still be finishing (killing a command, closing a record):
 * the daemon does not wait for them (it serves at once); each such run
 * shows "idle" (or "paused") and is recovered by the loop once its old
 * worker is gone (old_workers_check()), SIGKILLed after
 * OLD_WORKER_GRACE_SECS.  The others are resumed by the loop too
 * (recover_some()), a batch at each turn, so the daemon answers from its
 * first turn however many runs it resumes.
 */
static void recover(struct daemon *d)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *arr = NULL, *doc;
	size_t i;

	if (lev_store_runs_load(d->st, final_statuses, now() - RETENTION(d), &arr,
				&err) < 0) {
		dlog(d, "%s", err.msg);
		return;
	}
	d->old_deadline = now() + (d->o->old_worker_grace_secs ? d->o->old_worker_grace_secs
							      : OLD_WORKER_GRACE_SECS);
	json_array_foreach(arr, i, doc) {
		const char *id = lev_json_str(doc, "id");
		pid_t pid;
		struct run *r;

		if (!id || run_resident(d, id))
			continue;
		r = run_add(d, id, json_incref(doc));
		if (status_final(run_status(r)))
			continue;
		pid = (pid_t)json_integer_value(json_object_get(r->doc, "pid"));
		json_object_del(r->doc, "pid");
		r->paused = status_paused(run_status(r));
		r->recover_first = !r->paused && strncmp(run_status(r) ? run_status(r) : "",
							  "waiting", 7);
		if (pid > 0 && old_worker_alive(pid)) {
			if (adopt_run(d, r, pid))
				continue;
			r->old_pid = pid;
			json_object_set_new(r->doc, "old_worker", json_integer(r->old_pid));
			recover_hold(d, r);
			dlog(d, "run %s: recovered once the previous daemon's worker %d is gone",
			     r->id, (int)r->old_pid);
			continue;
		}
		r->recover_due = true;
		recover_hold(d, r);
	}
	json_decref(arr);
}

static void stop_workers(struct daemon *d)
{
	for (size_t i = 0; i < d->n_runs; i++) {
		struct run *r = d->runs[i];

		if (r->pid > 0) {
			r->cancel_requested = true;
			run_kill(r, SIGTERM);
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
			run_kill(d->runs[i], SIGKILL);
	for (size_t i = 0; i < d->n_runs; i++) {
		int status;

		if (d->runs[i]->pid > 0 && d->runs[i]->pidfd < 0 &&
		    waitpid(d->runs[i]->pid, &status, 0) > 0)
			run_reaped(d, d->runs[i], status);
	}
}

static int loop(struct daemon *d, int lfd, int sfd)
{
	struct pollfd *p = NULL;
	struct run **who = NULL;

	bool old_waiting = true, recovering = true;

	while (!d->stopping && !(d->o->stop && *d->o->stop)) {
		size_t n = 0, base, nrun;
		int r, timeout = flush_due(d);

		/* the previous daemon's workers are looked for until they are gone */
		if (old_waiting && timeout > OLD_WORKER_POLL_MS)
			timeout = OLD_WORKER_POLL_MS;
		/* runs to resume: answer what is there, then go on with them */
		if (recovering)
			timeout = 0;

		for (size_t i = d->n_conns; i-- > 0;)
			if (d->conns[i].dead)
				conn_close(d, i);
		p = xreallocarray(p, 4 + d->n_conns + 2 * d->n_runs, sizeof(*p));
		who = xreallocarray(who, d->n_runs + 1, sizeof(*who));
		p[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = d->o->stop_fd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = lev_reload_fd(d->rl), .events = POLLIN };
		base = n;
		for (size_t i = 0; i < d->n_conns; i++)
			p[n++] = (struct pollfd){ .fd = d->conns[i].fd,
						  .events = (short)(POLLIN | (d->conns[i].out_len
									      ? POLLOUT : 0)) };
		for (size_t i = 0; i < d->n_runs; i++) {
			if (d->runs[i]->fd < 0)
				continue;
			who[n - base - d->n_conns] = d->runs[i];
			p[n++] = (struct pollfd){ .fd = d->runs[i]->fd, .events = POLLIN };
		}
		nrun = n;
		/* an adopted worker is not our child: its pidfd says when it ends (reap()) */
		for (size_t i = 0; i < d->n_runs; i++)
			if (d->runs[i]->pidfd >= 0)
				p[n++] = (struct pollfd){ .fd = d->runs[i]->pidfd, .events = POLLIN };
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
			if (p[3].revents && lev_reload_pending(d->rl))
				reload_changed(d);
			/* workers first: a reply they wait on may be due */
			for (size_t i = base + nc; i < nrun; i++)
				if (p[i].revents && who[i - base - nc]->fd == p[i].fd)
					run_readable(d, who[i - base - nc]);
			/* connections from the end, as closing one moves the last */
			for (size_t i = nc; i-- > 0;) {
				if (p[base + i].revents & POLLOUT)
					conn_flush(&d->conns[i]);
				if (p[base + i].revents & ~POLLOUT)
					(void)conn_readable(d, i);
			}
			if (p[0].revents)
				accept_all(d, lfd);
		}
		reap(d);
		old_waiting = old_workers_check(d);
		recovering = recover_some(d);
		runs_evict(d, now());
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
	struct daemon d = { .o = o, .zyg_fd = -1, .zyg_pid = -1 };
	_cleanup_free_ char *root = NULL, *sock = NULL, *lock = NULL, *db = NULL, *pidfile = NULL;
	_cleanup_close_ int lockfd = -1, lfd = -1, sfd = -1;
	sigset_t chld, old;
	int r;

	if (lev_datadir_root(&root, err) < 0 || lev_datadir_ensure(root, err) < 0 ||
	    lev_sock_path(&sock, err) < 0 || lev_sock_lock_path(&lock, err) < 0)
		return err ? err->code : -EINVAL;
	db = lev_path_join(root, LEV_DATADIR_DB);
	r = lev_sock_lock(lock, &lockfd, err);
	if (r < 0)
		return r;
	if (lev_datadir_runs_dir(&d.runs_dir, err) < 0)
		return err ? err->code : -EINVAL;
	d.adopt_dir = lev_path_join(root, "adopt");
	if (mkdir(d.adopt_dir, 0700) < 0 && errno != EEXIST) {
		dlog(&d, "cannot make '%s': %s; no worker outlives this daemon", d.adopt_dir,
		     strerror(errno));
		free(d.adopt_dir);
		d.adopt_dir = NULL;
	}
	pidfile = lev_path_join(root, LEV_DAEMON_PIDFILE);
	{
		struct lev_err e = LEV_ERR_INIT;

		if (lev_meta_pidfile(pidfile, &e) < 0)
			dlog(&d, "%s", e.msg);
	}
	r = lev_store_open(db, &d.st, err);
	if (r < 0)
		return r;
	r = lev_store_question_last(d.st, &d.qseq, err);
	if (r < 0) {
		lev_store_close(d.st);
		return r;
	}
	d.started = d.last_busy = d.last_flush = now();
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
	/* the config's watch, before any run starts */
	{
		struct lev_err e = LEV_ERR_INIT;

		if (lev_reload_open(&d.rl, &e) < 0)
			dlog(&d, "%s: a config change needs a restart", e.msg);
		else if (lev_reload_check(d.rl, &e) < 0)
			dlog(&d, "config: %s", e.msg);
	}
	d.pool = lev_pool_new((size_t)lev_reload_max_inferences(d.rl));
	zygote_start(&d);
	d.hooks_dir = lev_path_join(root, LEV_DATADIR_WEBHOOKS);
	/* runs the previous daemon held: resumed, once SIGCHLD is ours */
	recover(&d);
	/* and the webhooks it did not deliver */
	hooks_resume(&d);
	dlog(&d, "listening on '%s' (pid %d)", sock, (int)getpid());
	if (o->ready)
		o->ready(o->log_data);
	r = loop(&d, lfd, sfd);
	if (r < 0)
		lev_err_errno(err, r, "the daemon's loop failed");
	/* nobody new may reach a daemon that is going away */
	(void)unlink(sock);
	zygote_stop(&d);
	stop_workers(&d);
	flush_runs(&d, true);
	dlog(&d, "stopped");
out_mask:
	sigprocmask(SIG_SETMASK, &old, NULL);
out:
	for (size_t i = 0; i < d.n_conns; i++) {
		conn_flush(&d.conns[i]);
		close(d.conns[i].fd);
		lev_proto_in_release(&d.conns[i].in);
		free(d.conns[i].out);
	}
	free(d.conns);
	for (size_t i = 0; i < d.n_runs; i++)
		run_free(d.runs[i]);
	free(d.runs);
	lev_store_close(d.st);
	lev_reload_free(d.rl);
	/* the lock is still ours: the pid file names this daemon, nobody else's */
	(void)unlink(pidfile);
	free(d.runs_dir);
	free(d.hooks_dir);
	free(d.adopt_dir);
	lev_pool_free(d.pool);
	return r;
}
