/*
 * runevents.c - a run's events from its record (runevents.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lev/runevents.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define EVENTS_MAX (256u << 20)	/* a record's events.jsonl is bounded well below this */

static bool run_id_ok(const char *id)
{
	size_t n = strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");

	return n > 0 && n <= 128 && !id[n];
}

int lev_run_events_open(struct lev_ctx *ctx, const char *id, struct lev_run_events *rd,
			struct lev_err *err)
{
	_cleanup_free_ char *p = NULL;
	int fd;

	if (!id || !run_id_ok(id))
		return lev_err_set(err, -EINVAL, "'%.64s' is not a run id", id ? id : "");
	if (lev_setup(ctx, CMD_NEEDS_DATA_ROOT) < 0)
		return lev_err_set(err, -EIO, "no data root");
	p = xasprintf("%s/%s/events.jsonl", ctx->paths.runs, id);
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT
			       ? lev_err_set(err, -ENOENT, "no run '%s' here (no record at '%s')", id, p)
			       : lev_err_errno(err, -errno, "cannot read the record of run '%s' ('%s')",
					       id, p);
	lev_run_events_close(rd);
	rd->fd = fd;
	return 0;
}

/* The whole line LINE (NUL in place of its newline) to FN. */
static void hand_out(char *line, size_t len, void (*fn)(const json_t *, void *), void *arg)
{
	json_t *ev = json_loadb(line, len, 0, NULL);

	if (json_is_object(ev))
		fn(ev, arg);
	json_decref(ev);
}

/* Bytes BUF[0..N) read from the file: whole lines out, the rest kept in RD->part. */
static size_t take(struct lev_run_events *rd, const char *buf, size_t n,
		   void (*fn)(const json_t *, void *), void *arg)
{
	size_t lines = 0;

	while (n) {
		const char *nl = memchr(buf, '\n', n);
		size_t k = nl ? (size_t)(nl - buf) : n;

		if (!rd->skip && lev_buf_add(&rd->part, buf, k) < 0) {
			/* over the bound: said once, the rest of the line skipped */
			lev_buf_reset(&rd->part);
			rd->skip = true;
			fn(NULL, arg);
			lines++;
		}
		if (nl) {
			if (!rd->skip && rd->part.len) {
				hand_out(rd->part.buf, rd->part.len, fn, arg);
				lines++;
			}
			lev_buf_reset(&rd->part);
			rd->skip = false;
			k++;
		}
		buf += k;
		n -= k;
	}
	return lines;
}

size_t lev_run_events_read(struct lev_run_events *rd, bool at_end, off_t max,
			   void (*fn)(const json_t *ev, void *arg), void *arg)
{
	char buf[65536];
	size_t lines = 0;

	if (rd->fd < 0)
		return 0;
	for (;;) {
		ssize_t n = pread(rd->fd, buf, sizeof(buf), rd->off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (max && rd->off >= max))
			break;
		lines += take(rd, buf, (size_t)n, fn, arg);
		rd->off += n;
	}
	if (at_end && !rd->skip && rd->part.len) {
		hand_out(rd->part.buf, rd->part.len, fn, arg);
		lev_buf_reset(&rd->part);
		lines++;
	}
	return lines;
}

void lev_run_events_close(struct lev_run_events *rd)
{
	if (rd->fd >= 0)
		close(rd->fd);
	rd->fd = -1;
	rd->off = 0;
	rd->skip = false;
	lev_buf_reset(&rd->part);
}

static void append(const json_t *ev, void *arg)
{
	if (ev)
		json_array_append((json_t *)arg, (json_t *)ev);
}

int lev_run_events(struct lev_ctx *ctx, const char *id, json_t **out)
{
	struct lev_run_events rd = LEV_RUN_EVENTS_INIT;
	struct lev_err err = LEV_ERR_INIT;
	json_t *arr;

	if (lev_run_events_open(ctx, id, &rd, &err) < 0) {
		if (err.code == -EIO)
			return LEV_EXIT_FAIL;	/* lev_setup() said why */
		lev_fail("%s", err.msg);
		lev_err_clear(&err);
		return LEV_EXIT_FAIL;
	}
	arr = json_array();
	lev_run_events_read(&rd, true, EVENTS_MAX, append, arr);
	lev_run_events_close(&rd);
	lev_buf_release(&rd.part);
	*out = arr;
	return 0;
}

json_t *lev_run_events_at(int dirfd)
{
	struct lev_run_events rd = LEV_RUN_EVENTS_INIT;
	json_t *arr;

	rd.fd = openat(dirfd, "events.jsonl", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (rd.fd < 0)
		return NULL;
	arr = json_array();
	lev_run_events_read(&rd, true, EVENTS_MAX, append, arr);
	lev_run_events_close(&rd);
	lev_buf_release(&rd.part);
	return arr;
}
