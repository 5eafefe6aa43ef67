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
 *			when its result arrives (state "done", ok, result),
 *			keyed by (run, seq), the call's place in the run
 *	turns		the model's turns of each run, in order (run, seq, turn)
 *	requests	the request each unfinished run was submitted with
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
 * "updated" are taken when present) as its row, with its summary
 * (summary.h), made here and only here, so it never lags the doc.
 */
int lev_store_run_put(struct lev_store *st, const json_t *run, struct lev_err *err);

/*
 * The runs a starting daemon keeps in memory, oldest first (a new array in
 * *out): every run whose status is none of FINAL (NULL-terminated), and
 * every run written at or after SINCE.
 */
int lev_store_runs_load(struct lev_store *st, const char *const *final, double since, json_t **out,
			struct lev_err *err);

/* Run ID's doc (fresh, in *out): 0, 1 when there is no such run, or < 0. */
/*
 * A run's effective policy snapshot (policy/effective.h), kept so a run
 * resumed after a crash is never looser than it was; *out is NULL when
 * none was kept.
 */
int lev_store_policy_put(struct lev_store *st, const char *run, const json_t *snapshot,
			 struct lev_err *err);
int lev_store_policy_get(struct lev_store *st, const char *run, json_t **out,
			 struct lev_err *err);
int lev_store_run_get(struct lev_store *st, const char *id, json_t **out, struct lev_err *err);

/*
 * FN(DATA, id, doc text, its length) for every run whose status is one of
 * FINAL, oldest first (the strings are borrowed for the call); FN returning
 * non-zero stops.  0 or < 0.
 */
int lev_store_runs_each(struct lev_store *st, const char *const *final,
			int (*fn)(void *data, const char *id, const char *doc, size_t len),
			void *data, struct lev_err *err);
/*
 * The same for one page: at most LIMIT runs whose status is one of FINAL
 * and whose id sorts after AFTER (NULL: from the first), in id order, so
 * that pages from each last id list every run once.  FN gets each run's
 * summary (lev_run_summary() of its doc, kept beside it), not its doc.
 */
int lev_store_runs_page(struct lev_store *st, const char *const *final, const char *after,
			long limit,
			int (*fn)(void *data, const char *id, const char *doc, size_t len),
			void *data, struct lev_err *err);

/*
 * The journal: a call about to be dispatched (or denied), then its result
 * ("denied" rows keep their state and get the refusal's text).  SEQ is the
 * call's place in the run (1, 2, ...): a call at a SEQ already written
 * replaces that row (the run left its replay log there).
 */
int lev_store_journal_call(struct lev_store *st, const char *run, long seq, const char *call_id,
			   const char *tool, const json_t *args, bool allowed, struct lev_err *err);
int lev_store_journal_result(struct lev_store *st, const char *run, long seq, bool ok,
			     const char *text, struct lev_err *err);
/*
 * The model's turn number SEQ of RUN (lev_replay_turn_json()), taken live
 * after CALLS calls: what the journal held past that point (turns from
 * SEQ on, calls after CALLS) is from a log the run has left, and is dropped.
 */
int lev_store_turn_put(struct lev_store *st, const char *run, long seq, long calls,
		       const json_t *turn, struct lev_err *err);
/*
 * RUN's replay log (run/replay.h: its turns, its calls in order, the
 * answers its questions got), a new object in *out.
 */
int lev_store_replay_load(struct lev_store *st, const char *run, json_t **out,
			  struct lev_err *err);

/*
 * The request a run was submitted with (what a new worker needs to resume
 * it after a restart), kept while the run goes on.  It holds the
 * environment the client sent, the providers' key variables included: the
 * daemon drops it when the run ends.  *out: a new reference; -ENOENT when
 * there is none.
 */
int lev_store_request_put(struct lev_store *st, const char *run, const json_t *request,
			  struct lev_err *err);
int lev_store_request_get(struct lev_store *st, const char *run, json_t **out,
			  struct lev_err *err);
int lev_store_request_drop(struct lev_store *st, const char *run, struct lev_err *err);
/* How many journal rows RUN has in STATE ("dispatched", "denied", "done"). */
int lev_store_journal_count(struct lev_store *st, const char *run, const char *state,
			    long *out, struct lev_err *err);

/* A question a run waits on, and its answer (ANSWER NULL: withdrawn). */
int lev_store_question_put(struct lev_store *st, const char *id, const char *run,
			   const json_t *body, struct lev_err *err);
int lev_store_question_close(struct lev_store *st, const char *id, const char *answer,
			     struct lev_err *err);
/*
 * The highest N of a question "qN" lev.db has ever kept (0: none): a new
 * daemon numbers its questions after it, so an id is never given twice.
 */
int lev_store_question_last(struct lev_store *st, unsigned long *out, struct lev_err *err);
