/*
 * runevents.h - a run's events, read from its record (<runs>/ID/events.jsonl)
 * for the commands that report on a run without its daemon (lev stages,
 * lev context) or beside it (lev dash, lev agent-client).  The one reader of
 * that file: the id checked, the file opened O_NOFOLLOW, every line bounded.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

#include "lev/cmd.h"
#include "liblev/base/buf.h"

/* An event line longer than this is not parsed (the callback gets NULL for it). */
#define LEV_RUN_EVENT_LINE_MAX (8u << 20)

/* A record's events.jsonl read incrementally: what was read, what is still coming. */
struct lev_run_events {
	int fd;			/* the file (-1: not open) */
	off_t off;		/* bytes consumed: every line up to here was handed out */
	bool skip;		/* inside a line over LEV_RUN_EVENT_LINE_MAX */
	struct lev_buf part;	/* a line still being written, bounded */
};
#define LEV_RUN_EVENTS_INIT { .fd = -1, .part = LEV_BUF_INIT_MAX(LEV_RUN_EVENT_LINE_MAX) }

/*
 * Open the events of run ID for reading into RD (LEV_RUN_EVENTS_INIT).  ID is
 * a run id ([A-Za-z0-9_-], as lev makes them).  0; or a negative errno with
 * the reason in ERR (-EINVAL: not a run id, -ENOENT: no record).  The
 * command's row must declare CMD_NEEDS_DATA_ROOT.
 */
int lev_run_events_open(struct lev_ctx *ctx, const char *id, struct lev_run_events *rd,
			struct lev_err *err);
/*
 * Hand every whole line beyond what RD read to FN: the line's JSON object, or
 * NULL for a line too long to parse (a line that is no JSON object is
 * skipped).  A last line with no newline yet waits for the next call, unless
 * AT_END (the record is complete).  Stops after MAX bytes in all (0: none).
 * Returns the number of lines handed out.
 */
size_t lev_run_events_read(struct lev_run_events *rd, bool at_end, off_t max,
			   void (*fn)(const json_t *ev, void *arg), void *arg);
void lev_run_events_close(struct lev_run_events *rd);

/*
 * The events of run ID as a new array in *out, the whole record at once.  A
 * bad id or a missing record fails with one line printed and LEV_EXIT_FAIL
 * returned; 0 on success.
 */
int lev_run_events(struct lev_ctx *ctx, const char *id, json_t **out);
/*
 * The events of the record directory DIRFD (its events.jsonl, opened
 * beneath it, never through a symlink) as a new array; NULL when it has
 * none or it cannot be read.
 */
json_t *lev_run_events_at(int dirfd);
