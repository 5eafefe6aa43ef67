/*
 * store.h - the daemon's state in SQLite: <data root>/lev.db.
 *
 * The database runs in WAL mode with synchronous = NORMAL: a committed
 * write survives kill -9 of the daemon (and of everything else), not a
 * power cut.  Tables:
 *
 *	runs		one row per run: id, agent, status, stage, iteration,
 *			tools, reads_granted, reads_declared, created, updated,
 *			and `doc`, the run's whole JSON (what `lev ps --json`
 *			shows, grants and result included)
 *	questions	the asks a run is waiting on: id, run, body (JSON),
 *			created, answered, answer
 *	journal		the tool calls: one row written before a call is
 *			dispatched (state "dispatched", or "denied"), completed
 *			when its result arrives (state "done", ok, result)
 *
 * Writes are batched: the first write begins a transaction and every
 * later one joins it until lev_store_commit(); nothing is durable before
 * that.  The daemon commits once per turn of its loop and before it lets a
 * journalled call run (store.c tx()).  Reads see the writes not yet
 * committed.
 *
 * Ownership: the store owns its connection; JSON passed in is borrowed.
 * Nothing here prints.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "liblev/base/error.h"

struct lev_store;

/* Open (creating) the database at PATH, 0600. */
int lev_store_open(const char *path, struct lev_store **out, struct lev_err *err);
/* Commits what is pending first.  NULL-safe; returns NULL. */
struct lev_store *lev_store_close(struct lev_store *st);

/* Commit the writes made since the last commit (a no-op when there are none). */
int lev_store_commit(struct lev_store *st, struct lev_err *err);
/* Whether writes wait for lev_store_commit(). */
bool lev_store_pending(const struct lev_store *st);

/*
 * Write RUN (an object with at least "id"; "agent", "status", "stage",
 * "iteration", "tools", "read_paths" {"granted","declared"}, "created",
 * "updated" are taken when present) as its row.
 */
int lev_store_run_put(struct lev_store *st, const json_t *run, struct lev_err *err);

/* Every run's doc, oldest first (a new array in *out). */
int lev_store_runs_load(struct lev_store *st, json_t **out, struct lev_err *err);

/* The journal: a call about to be dispatched (or denied), then its result. */
int lev_store_journal_call(struct lev_store *st, const char *run, const char *call_id,
			   const char *tool, const json_t *args, bool allowed, struct lev_err *err);
int lev_store_journal_result(struct lev_store *st, const char *run, const char *call_id,
			     bool ok, const char *text, struct lev_err *err);
/* How many journal rows RUN has in STATE ("dispatched", "denied", "done"). */
int lev_store_journal_count(struct lev_store *st, const char *run, const char *state,
			    long *out, struct lev_err *err);

/* A question a run waits on, and its answer (ANSWER NULL: withdrawn). */
int lev_store_question_put(struct lev_store *st, const char *id, const char *run,
			   const json_t *body, struct lev_err *err);
int lev_store_question_close(struct lev_store *st, const char *id, const char *answer,
			     struct lev_err *err);
