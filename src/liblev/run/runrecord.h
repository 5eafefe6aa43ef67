/*
 * runrecord.h - the record of one run on disk (the `store`).
 *
 *	<data root>/runs/<id>/		0700
 *		events.jsonl		0600  one JSON object per line: what happened
 *		audit.jsonl		0600  one line per gate decision
 *		result.json		0600  written once, when the run ends
 *		status			0600  "running", then complete|error|cancelled
 *
 * The record is written as the run goes, in whole lines: each write(2) to
 * a file opened O_APPEND carries whole lines, so a run killed at any moment
 * (SIGKILL included) leaves files that hold only whole lines.  The audit
 * lines, and the tool_call and tool_result events, are gathered and written
 * with one write(2) per file when any other event is recorded, when they
 * pass LEV_RUNRECORD_PENDING_MAX bytes, or when lev_runrecord_flush(),
 * _sync() or _status() is called (the runtime syncs before any tool that
 * is not read-only runs, at the end of every model turn, and before it
 * waits for an answer): a burst of reads costs two writes, not two per
 * call, and a run killed in the middle of one loses at most the reads of
 * the turn in flight, whose results no model saw.  The
 * files are fdatasync'ed at every lev_runrecord_sync() (the runtime calls it
 * once per tool call) and when the run ends, so a machine crash loses at
 * most the events of the call in flight.  `status` and `result.json` are
 * replaced atomically (temporary file, fsync, rename).  A run that was
 * killed keeps status "running" with a pid in its run_started event that no
 * longer exists.
 *
 * Run ids sort by start time and are unique: "YYYYMMDD-HHMMSS-mmm-XXXXXX"
 * (UTC, milliseconds, 24 random bits), and the directory is created with
 * mkdir(2), which fails rather than reuse an existing one (a new id is then
 * drawn).
 *
 * Secrets: every line and the result are passed through the process's one
 * secret set (base/secrets.h: the providers' keys, MCP header values, ...)
 * before they are written.
 *
 * Ownership: the record owns its fds and strings.  JSON values passed in are
 * borrowed.  Nothing here prints.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/base/types.h"

#define LEV_RUN_ID_LEN 26	/* "YYYYMMDD-HHMMSS-mmm-XXXXXX" */
/* One line of events or audit at most (a longer event is cut, see below). */
#define LEV_RUNRECORD_LINE_MAX ((size_t)4 << 20)

struct lev_runrecord;

/*
 * A JSON string (new reference) holding the LEN bytes at S with every
 * invalid UTF-8 sequence and NUL byte replaced by U+FFFD, so arbitrary tool
 * output can go into an event.  S NULL gives JSON null.
 */
json_t *lev_json_text(const char *s, size_t len);

/* A fresh run id (caller frees). */
char *lev_run_id_new(void);

/* True when S has the shape of a run id (used before joining it to a path). */
bool lev_run_id_valid(const char *s);

/*
 * Create a new run directory under RUNS_DIR (created 0700 when missing) and
 * its files, and write status "running".  *out owns the record.
 */
int lev_runrecord_create(const char *runs_dir, struct lev_runrecord **out, struct lev_err *err);
/* The same with the id ID (a valid run id; a directory of that name is an error); NULL: new. */
int lev_runrecord_create_as(const char *runs_dir, const char *id, struct lev_runrecord **out,
			    struct lev_err *err);
/*
 * Open the existing record ID under RUNS_DIR to go on with it (a run
 * resumed after the daemon restarted): its events and audit lines are
 * appended to, numbered on from the last, and its status is "running" again.
 */
int lev_runrecord_reopen(const char *runs_dir, const char *id, struct lev_runrecord **out,
			 struct lev_err *err);

/*
 * Close the record.  A record never finished keeps its last status (a
 * crash or kill reads as "running").  Accepts NULL; returns NULL.
 */
struct lev_runrecord *lev_runrecord_free(struct lev_runrecord *rr);

const char *lev_runrecord_id(const struct lev_runrecord *rr);
const char *lev_runrecord_dir(const struct lev_runrecord *rr);

/*
 * Append EVENT (a JSON object, borrowed) to events.jsonl with "ts" (RFC 3339,
 * milliseconds, UTC) and "seq" (1, 2, ...) added in front.  A line longer
 * than LEV_RUNRECORD_LINE_MAX is replaced by a short event saying so.
 * *line_out (optional) gets the line as written, without the newline
 * (caller frees) so a front end can print exactly what was recorded.
 */
int lev_runrecord_event(struct lev_runrecord *rr, const json_t *event, char **line_out,
			struct lev_err *err);

/* One gate decision. */
struct lev_audit {
	const char *stage;
	const char *call_id;
	const char *tool;
	const char *gate;	/* offered, schema, permission, redirect, workdir,
				   read_paths, network, taint, seed, ... */
	const char *rule;	/* what decided within the gate (may be NULL) */
	const char *decision;	/* "allow" or "deny" */
	bool asked;		/* a person was asked */
	const char *answer;	/* the answer given when asked (may be NULL) */
	const char *target;	/* the call's target (may be NULL) */
	bool has_taint;
	enum lev_level taint;	/* the run's taint when the gate ran */
	bool has_clearance;
	enum lev_level clearance;
	const char *reason;	/* one line (may be NULL) */
};

/* Append A to audit.jsonl (with ts and seq). */
int lev_runrecord_audit(struct lev_runrecord *rr, const struct lev_audit *a, struct lev_err *err);

/* Gathered lines past this many bytes are written at once. */
#define LEV_RUNRECORD_PENDING_MAX ((size_t)32 << 10)

/* Write the gathered audit lines and events now. */
int lev_runrecord_flush(struct lev_runrecord *rr, struct lev_err *err);

/* Flush, then fdatasync events.jsonl and audit.jsonl. */
int lev_runrecord_sync(struct lev_runrecord *rr, struct lev_err *err);

/* Replace the status file with STATUS ("running", "waiting", ...). */
int lev_runrecord_status(struct lev_runrecord *rr, const char *status, struct lev_err *err);

/*
 * End the run: write result.json {run, status, output, error, ...EXTRA's
 * members} and the status file, and sync everything.  STATUS is
 * "complete", "error" or "cancelled"; OUTPUT and ERROR may be NULL; EXTRA
 * (an object, borrowed) may be NULL.
 */
int lev_runrecord_finish(struct lev_runrecord *rr, const char *status, const char *output,
			 const char *error, const json_t *extra, struct lev_err *err);

/*
 * The result.json of the record in directory DIR, written when its run
 * ended: *out gets it (an object with a "status" of complete, error or
 * cancelled).  -ENOENT when the run has not ended (no result.json).
 */
int lev_runrecord_result_load(const char *dir, json_t **out, struct lev_err *err);
