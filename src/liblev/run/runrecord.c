/*
 * runrecord.c - the on-disk record of a run (see runrecord.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/secrets.h"
#include "liblev/conf/datadir.h"
#include "liblev/provider/provider.h"
#include "liblev/run/runrecord.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

struct lev_runrecord {
	char *id;
	char *dir;
	int dir_fd;
	int events_fd;
	int audit_fd;
	uint64_t events_seq;
	uint64_t audit_seq;
	bool finished;
	struct lev_buf audit_pending;	/* audit lines not yet written */
	struct lev_buf events_pending;	/* tool_call/tool_result lines not yet written */
	struct lev_buf body;		/* an event's JSON (reused) */
	struct lev_buf line;		/* the line being written (reused) */
};

/* A reused buffer above this size is given back rather than kept for the next line. */
#define SCRATCH_KEEP ((size_t)64 << 10)

json_t *lev_json_text(const char *s, size_t len)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t bad;
	json_t *j;

	if (!s)
		return json_null();
	/* a NUL would end the string early: it is replaced too */
	(void)lev_buf_add_utf8(NULL, s, len, true, &bad);
	if (!bad)
		j = json_stringn(s, len);
	else {
		(void)lev_buf_add_utf8(&b, s, len, true, NULL);
		j = json_stringn(b.buf, b.len);
	}
	lev_buf_release(&b);
	if (!j)
		abort();	/* only on out-of-memory */
	return j;
}

static uint32_t random24(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;

		/* no entropy yet: uniqueness still comes from mkdir() */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 8);
	}
	return v & 0xffffff;
}

char *lev_run_id_new(void)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	return xasprintf("%04d%02d%02d-%02d%02d%02d-%03ld-%06x", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
			 random24());
}

bool lev_run_id_valid(const char *s)
{
	static const char shape[] = "dddddddd-dddddd-ddd-xxxxxx";
	size_t i;

	if (!s || strlen(s) != LEV_RUN_ID_LEN)
		return false;
	for (i = 0; i < LEV_RUN_ID_LEN; i++) {
		char c = s[i];

		switch (shape[i]) {
		case 'd':
			if (c < '0' || c > '9')
				return false;
			break;
		case 'x':
			if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
				return false;
			break;
		default:
			if (c != shape[i])
				return false;
		}
	}
	return true;
}

static void timestamp(char *buf, size_t size)
{
	/* the date part changes once a second: format it once (per thread) */
	static _Thread_local time_t cached_sec = -1;
	static _Thread_local char cached[64];
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != cached_sec) {
		struct tm tm;

		gmtime_r(&ts.tv_sec, &tm);
		snprintf(cached, sizeof(cached), "%04d-%02d-%02dT%02d:%02d:%02d",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec);
		cached_sec = ts.tv_sec;
	}
	{
		/* "<cached>.mmmZ", without a printf per line */
		size_t n = strlen(cached);
		int ms = (int)(ts.tv_nsec / 1000000) % 1000;

		if (n + 6 > size) {
			snprintf(buf, size, "%s.%03dZ", cached, ms);
			return;
		}
		memcpy(buf, cached, n);
		buf[n] = '.';
		buf[n + 1] = (char)('0' + ms / 100);
		buf[n + 2] = (char)('0' + ms / 10 % 10);
		buf[n + 3] = (char)('0' + ms % 10);
		buf[n + 4] = 'Z';
		buf[n + 5] = '\0';
	}
}

static int open_new(int dir_fd, const char *dir, const char *name, int *fd_out,
		    struct lev_err *err)
{
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
			LEV_FILE_MODE);

	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot create '%s/%s'", dir, name);
	*fd_out = fd;
	return 0;
}

/* Open DIR/NAME to append to it; *seq gets the number of lines it holds. */
static int open_more(int dir_fd, const char *dir, const char *name, int *fd_out, uint64_t *seq,
		     struct lev_err *err)
{
	char buf[65536];
	uint64_t n = 0;
	ssize_t got;
	int fd = openat(dir_fd, name, O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot open '%s/%s'", dir, name);
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < got; i++)
			n += buf[i] == '\n';
	if (got < 0) {
		int e = -errno;

		close(fd);
		return lev_err_errno(err, e, "cannot read '%s/%s'", dir, name);
	}
	*fd_out = fd;
	*seq = n;
	return 0;
}

/* Replace DIR/NAME with DATA (temporary file in the same directory, rename). */
static int replace_file(struct lev_runrecord *rr, const char *name, const char *data, size_t len,
			struct lev_err *err)
{
	_cleanup_free_ char *tmp = xasprintf(".%s.tmp", name);
	_cleanup_close_ int fd = -1;
	int r;

	(void)unlinkat(rr->dir_fd, tmp, 0);
	fd = openat(rr->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		    LEV_FILE_MODE);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot create '%s/%s'", rr->dir, tmp);
	r = lev_write_all(fd, data, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && renameat(rr->dir_fd, tmp, rr->dir_fd, name) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(rr->dir_fd, tmp, 0);
		return lev_err_errno(err, r, "cannot write '%s/%s'", rr->dir, name);
	}
	(void)fsync(rr->dir_fd);
	return 0;
}

int lev_runrecord_create(const char *runs_dir, struct lev_runrecord **out, struct lev_err *err)
{
	return lev_runrecord_create_as(runs_dir, NULL, out, err);
}

static struct lev_runrecord *record_alloc(void)
{
	struct lev_runrecord *rr = xcalloc(1, sizeof(*rr));

	rr->dir_fd = rr->events_fd = rr->audit_fd = -1;
	lev_buf_init(&rr->audit_pending, (size_t)64 << 20);
	lev_buf_init(&rr->events_pending, (size_t)64 << 20);
	lev_buf_init(&rr->body, SIZE_MAX / 2);	/* append_body caps the line */
	lev_buf_init(&rr->line, LEV_RUNRECORD_LINE_MAX + 256);
	return rr;
}

int lev_runrecord_reopen(const char *runs_dir, const char *id, struct lev_runrecord **out,
			 struct lev_err *err)
{
	struct lev_runrecord *rr;
	int r;

	if (!lev_run_id_valid(id))
		return lev_err_set(err, -EINVAL, "'%s' is not a run id", id ? id : "");
	rr = record_alloc();
	rr->id = xstrdup(id);
	rr->dir = lev_path_join(runs_dir, id);
	rr->dir_fd = open(rr->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (rr->dir_fd < 0) {
		r = lev_err_errno(err, -errno, "cannot open '%s'", rr->dir);
		goto fail;
	}
	r = open_more(rr->dir_fd, rr->dir, "events.jsonl", &rr->events_fd, &rr->events_seq, err);
	if (r == 0)
		r = open_more(rr->dir_fd, rr->dir, "audit.jsonl", &rr->audit_fd, &rr->audit_seq,
			      err);
	if (r == 0)
		r = lev_runrecord_status(rr, "running", err);
	if (r < 0)
		goto fail;
	*out = rr;
	return 0;
fail:
	lev_runrecord_free(rr);
	return r;
}

int lev_runrecord_create_as(const char *runs_dir, const char *id, struct lev_runrecord **out,
			    struct lev_err *err)
{
	struct lev_runrecord *rr;
	int r, tries;

	if (id && !lev_run_id_valid(id))
		return lev_err_set(err, -EINVAL, "'%s' is not a run id", id);
	r = lev_datadir_ensure(runs_dir, err);
	if (r < 0)
		return r;

	rr = record_alloc();
	for (tries = 0;; tries++) {
		rr->id = id ? xstrdup(id) : lev_run_id_new();
		rr->dir = lev_path_join(runs_dir, rr->id);
		/* a given id's directory may be made already at its submission
		 * (lev_meta_submit()); its record files are still created anew */
		if (mkdir(rr->dir, LEV_DIR_MODE) == 0 || (id && errno == EEXIST))
			break;
		r = -errno;
		free(rr->id);
		free(rr->dir);
		rr->id = rr->dir = NULL;
		if (r != -EEXIST || tries >= 16 || id) {
			lev_err_errno(err, r, "cannot create run directory in '%s'", runs_dir);
			lev_runrecord_free(rr);
			return r;
		}
	}
	rr->dir_fd = open(rr->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (rr->dir_fd < 0) {
		r = lev_err_errno(err, -errno, "cannot open '%s'", rr->dir);
		goto fail;
	}
	r = open_new(rr->dir_fd, rr->dir, "events.jsonl", &rr->events_fd, err);
	if (r < 0)
		goto fail;
	r = open_new(rr->dir_fd, rr->dir, "audit.jsonl", &rr->audit_fd, err);
	if (r < 0)
		goto fail;
	r = lev_runrecord_status(rr, "running", err);
	if (r < 0)
		goto fail;
	*out = rr;
	return 0;
fail:
	lev_runrecord_free(rr);
	return r;
}

struct lev_runrecord *lev_runrecord_free(struct lev_runrecord *rr)
{
	if (!rr)
		return NULL;
	(void)lev_runrecord_flush(rr, NULL);
	lev_buf_release(&rr->audit_pending);
	lev_buf_release(&rr->events_pending);
	lev_buf_release(&rr->body);
	lev_buf_release(&rr->line);
	if (rr->events_fd >= 0)
		close(rr->events_fd);
	if (rr->audit_fd >= 0)
		close(rr->audit_fd);
	if (rr->dir_fd >= 0)
		close(rr->dir_fd);
	free(rr->id);
	free(rr->dir);
	free(rr);
	return NULL;
}

const char *lev_runrecord_id(const struct lev_runrecord *rr)
{
	return rr->id;
}

const char *lev_runrecord_dir(const struct lev_runrecord *rr)
{
	return rr->dir;
}

/* {"ts":"TS","seq":SEQ - the head of every line */
static int add_head(struct lev_buf *b, const char *ts, uint64_t seq)
{
	char num[24];
	size_t i = sizeof(num);
	int r;

	do {
		num[--i] = (char)('0' + seq % 10);
		seq /= 10;
	} while (seq);
	r = lev_buf_add(b, "{\"ts\":\"", 7);
	if (r == 0)
		r = lev_buf_adds(b, ts);
	if (r == 0)
		r = lev_buf_add(b, "\",\"seq\":", 8);
	if (r == 0)
		r = lev_buf_add(b, num + i, sizeof(num) - i);
	return r;
}

/* Empty the reused buffer B, and give its memory back when one long line made it large. */
static void scratch_done(struct lev_buf *b)
{
	if (b->alloc > SCRATCH_KEEP) {
		lev_buf_release(b);
		lev_buf_init(b, b->max);
	}
	lev_buf_reset(b);
}

/*
 * Serialise OBJ with "ts" and "seq" first, redact, and append one line to
 * FD.  The line is written with a single write(2) on an O_APPEND fd, so it
 * lands whole or (on a full disk) is reported.
 */
static int append_body(struct lev_runrecord *rr, int fd, struct lev_buf *pending, uint64_t *seq,
		       const char *body, size_t body_len, const char *event, const char *file,
		       char **line_out, struct lev_err *err)
{
	struct lev_buf *line = &rr->line;	/* reused: emptied, and freed when it grew large */
	char ts[80];
	int r;

	lev_buf_reset(line);
	timestamp(ts, sizeof(ts));
	(*seq)++;
	(void)lev_buf_grow(line, body_len < LEV_RUNRECORD_LINE_MAX ? body_len + 96 : 256);
	r = add_head(line, ts, *seq);
	if (r == 0 && body_len > LEV_RUNRECORD_LINE_MAX) {
		r = lev_buf_adds(line, ",\"event\":");
		if (r == 0)
			r = lev_buf_add_json_str(line, event ? event : "unknown",
						 strlen(event ? event : "unknown"));
		if (r == 0)
			r = lev_buf_addf(line, ",\"truncated\":true,\"bytes\":%zu}", body_len);
	} else if (r == 0) {
		if (body_len > 2)
			r = lev_buf_addch(line, ',');
		if (r == 0)
			r = lev_buf_add(line, body + 1, body_len - 1);	/* drop the '{' */
	}
	if (r < 0) {
		scratch_done(line);
		return lev_err_set(err, r, "a line for '%s' is too long", file);
	}
	if (lev_secrets_count()) {
		lev_secrets_redact(line->buf);
		line->len = strlen(line->buf);
	}
	if (line_out)
		*line_out = xstrdup(line->buf);
	r = lev_buf_addch(line, '\n');
	if (r == 0 && pending) {
		r = lev_buf_add(pending, line->buf, line->len);
	} else if (r == 0) {
		ssize_t n = write(fd, line->buf, line->len);

		if (n < 0)
			r = -errno;
		else if ((size_t)n != line->len)
			r = -ENOSPC;
	}
	scratch_done(line);
	if (r < 0) {
		if (line_out) {
			free(*line_out);
			*line_out = NULL;
		}
		return lev_err_errno(err, r, "cannot write '%s/%s'", rr->dir, file);
	}
	return 0;
}

static int append_line(struct lev_runrecord *rr, int fd, struct lev_buf *pending, uint64_t *seq,
		       const json_t *obj, const char *file, char **line_out, struct lev_err *err)
{
	struct lev_buf *body = &rr->body;	/* reused, as the line is */
	const json_t *ev;
	int r;

	if (!json_is_object(obj))
		return lev_err_set(err, -EINVAL, "a record line must be a JSON object");
	if (!lev_buf_add_json(body, obj)) {
		char *text = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);

		lev_buf_reset(body);
		if (!text)
			return lev_err_set(err, -ENOMEM, "cannot serialise a record line");
		(void)lev_buf_adds(body, text);
		free(text);
	}
	ev = json_object_get(obj, "event");
	r = append_body(rr, fd, pending, seq, body->buf, body->len,
			json_is_string(ev) ? json_string_value(ev) : NULL, file, line_out, err);
	scratch_done(body);
	return r;
}

static int write_pending(struct lev_runrecord *rr, int fd, struct lev_buf *pending,
			 const char *file, struct lev_err *err)
{
	ssize_t n;

	if (!pending->len)
		return 0;
	n = write(fd, pending->buf, pending->len);
	if (n < 0 || (size_t)n != pending->len) {
		int r = n < 0 ? -errno : -ENOSPC;

		lev_buf_reset(pending);
		return lev_err_errno(err, r, "cannot write '%s/%s'", rr->dir, file);
	}
	lev_buf_reset(pending);
	return 0;
}

int lev_runrecord_flush(struct lev_runrecord *rr, struct lev_err *err)
{
	int r = write_pending(rr, rr->events_fd, &rr->events_pending, "events.jsonl", err);
	int r2 = write_pending(rr, rr->audit_fd, &rr->audit_pending, "audit.jsonl",
			       r < 0 ? NULL : err);

	return r < 0 ? r : r2;
}

/* A call and its result come in bursts: they wait for the next write. */
static bool deferrable(const json_t *event)
{
	const char *name = json_string_value(json_object_get(event, "event"));

	return name && (!strcmp(name, "tool_call") || !strcmp(name, "tool_result"));
}

int lev_runrecord_event(struct lev_runrecord *rr, const json_t *event, char **line_out,
			struct lev_err *err)
{
	int r;

	if (deferrable(event)) {
		r = append_line(rr, rr->events_fd, &rr->events_pending, &rr->events_seq, event,
				"events.jsonl", line_out, err);
		if (r == 0 && rr->events_pending.len + rr->audit_pending.len > LEV_RUNRECORD_PENDING_MAX)
			r = lev_runrecord_flush(rr, err);
		return r;
	}
	r = lev_runrecord_flush(rr, err);
	if (r < 0)
		return r;
	return append_line(rr, rr->events_fd, NULL, &rr->events_seq, event, "events.jsonl",
			   line_out, err);
}

/* ,"KEY":VALUE with VALUE a JSON string of S, or null; nothing when S is NULL and !NULLABLE. */
static void audit_field(struct lev_buf *b, const char *key, const char *s, bool nullable)
{
	if (!s && !nullable)
		return;
	if (b->len > 1)
		(void)lev_buf_addch(b, ',');
	(void)lev_buf_addch(b, '"');
	(void)lev_buf_adds(b, key);
	(void)lev_buf_adds(b, "\":");
	if (s)
		(void)lev_buf_add_json_text(b, s, strlen(s), true);
	else
		(void)lev_buf_adds(b, "null");
}

/*
 * Audit lines are written field by field (several per tool call, so no
 * jansson object is built and dumped for them): the same JSON, in the
 * same key order, as the events' serialiser would give.
 */
int lev_runrecord_audit(struct lev_runrecord *rr, const struct lev_audit *a, struct lev_err *err)
{
	struct lev_buf *b = &rr->body;	/* reused; append_body caps the line */
	int r;

	(void)lev_buf_addch(b, '{');
	audit_field(b, "stage", a->stage, false);
	audit_field(b, "call", a->call_id, false);
	audit_field(b, "tool", a->tool, false);
	audit_field(b, "gate", a->gate, false);
	audit_field(b, "rule", a->rule, true);
	audit_field(b, "decision", a->decision, false);
	(void)lev_buf_adds(b, a->asked ? ",\"asked\":true" : ",\"asked\":false");
	audit_field(b, "answer", a->answer, false);
	audit_field(b, "target", a->target, true);
	audit_field(b, "taint", a->has_taint ? lev_level_name(a->taint) : NULL, true);
	audit_field(b, "clearance", a->has_clearance ? lev_level_name(a->clearance) : NULL, true);
	audit_field(b, "reason", a->reason, false);
	(void)lev_buf_addch(b, '}');
	r = append_body(rr, rr->audit_fd, &rr->audit_pending, &rr->audit_seq, b->buf, b->len, NULL,
			"audit.jsonl", NULL, err);
	scratch_done(b);
	return r;
}

int lev_runrecord_sync(struct lev_runrecord *rr, struct lev_err *err)
{
	int r = lev_runrecord_flush(rr, err);

	if (r < 0)
		return r;
	if (fdatasync(rr->events_fd) < 0 && errno != EINVAL)
		return lev_err_errno(err, -errno, "cannot sync '%s/events.jsonl'", rr->dir);
	if (fdatasync(rr->audit_fd) < 0 && errno != EINVAL)
		return lev_err_errno(err, -errno, "cannot sync '%s/audit.jsonl'", rr->dir);
	return 0;
}

int lev_runrecord_status(struct lev_runrecord *rr, const char *status, struct lev_err *err)
{
	_cleanup_free_ char *line = xasprintf("%s\n", status);

	/* whoever reads the new status finds the events that led to it */
	(void)lev_runrecord_flush(rr, NULL);

	return replace_file(rr, "status", line, strlen(line), err);
}

int lev_runrecord_finish(struct lev_runrecord *rr, const char *status, const char *output,
			 const char *error, const json_t *extra, struct lev_err *err)
{
	_cleanup_free_ char *text = NULL;
	json_t *o = json_object();
	char ts[80];
	int r;

	timestamp(ts, sizeof(ts));
	json_object_set_new(o, "run", json_string(rr->id));
	json_object_set_new(o, "status", json_string(status));
	json_object_set_new(o, "output", lev_json_text(output, output ? strlen(output) : 0));
	json_object_set_new(o, "error", lev_json_text(error, error ? strlen(error) : 0));
	json_object_set_new(o, "finished", json_string(ts));
	if (extra && json_is_object(extra))
		json_object_update_missing(o, (json_t *)extra);
	o = lev_secrets_redact_take(o);
	text = json_dumps(o, JSON_INDENT(2) | JSON_ENSURE_ASCII);
	json_decref(o);
	if (!text)
		return lev_err_set(err, -ENOMEM, "cannot serialise the run result");
	lev_secrets_redact(text);

	r = lev_runrecord_sync(rr, err);
	if (r < 0)
		return r;
	{
		_cleanup_free_ char *withnl = xasprintf("%s\n", text);

		r = replace_file(rr, "result.json", withnl, strlen(withnl), err);
	}
	if (r < 0)
		return r;
	r = lev_runrecord_status(rr, status, err);
	if (r < 0)
		return r;
	rr->finished = true;
	return 0;
}

int lev_runrecord_result_load(const char *dir, json_t **out, struct lev_err *err)
{
	_cleanup_close_ int dfd = -1, fd = -1;
	json_error_t je;
	const char *st;
	json_t *j;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return lev_err_errno(err, -errno, "cannot open the run record '%s'", dir);
	fd = openat(dfd, "result.json", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot open '%s/result.json'", dir);
	j = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return lev_err_set(err, LEV_EPARSE, "%s/result.json:%d:%d: %s", dir, je.line,
				   je.column, je.text);
	st = json_is_object(j) ? json_string_value(json_object_get(j, "status")) : NULL;
	if (!st || (strcmp(st, "complete") && strcmp(st, "error") && strcmp(st, "cancelled"))) {
		json_decref(j);
		return lev_err_set(err, LEV_EPARSE, "%s/result.json: no final 'status'", dir);
	}
	*out = j;
	return 0;
}
