/*
 * replay.h - a run rebuilt from its journal after the daemon stopped.
 *
 * The daemon's journal (daemon/store.h) keeps, for each run, the model's
 * turns in order, every tool call with its state ("dispatched", "denied",
 * "done") and result, and the answers given to its questions.  When the
 * daemon restarts it hands a run's log to a new worker, and the run loop
 * (agent.c, agent-call.c) consults it:
 *
 *	a turn		the next logged turn of the current stage is taken
 *			instead of asking the provider; past the end of the
 *			log (or once the run has left it) the run is live
 *	a call		of a logged turn goes through every gate again; the
 *			tighter of that decision and the journal's wins:
 *			logged "done" and allowed now: its recorded result,
 *			never run again; logged "dispatched" without a result:
 *			the in-flight message (LEV_REPLAY_IN_FLIGHT_TEXT);
 *			logged "denied": refused again with the recorded text;
 *			denied now: refused as decided now, and the log ends
 *			there (what the model said next was based on a result
 *			it no longer gets)
 *	an answer	a permission or taint question the user answered is
 *			answered again from the log when its run, its call's
 *			place in the run (lev's call id) and the digest of the
 *			call as it was shown all match; any other is asked
 *			again
 *
 * Tools that touch only the run's own state (context_*, submit_output,
 * current_time) run again, as they rebuild it; a question to the user
 * (ask_user_*) answered before returns its answer, one in flight is asked
 * again.
 *
 * The log's JSON: {"turns": [TURN...], "calls": [CALL...], "answers":
 * [ANSWER...]}, where TURN is lev_replay_turn_json()'s object (or
 * {"cut": true}: a turn too large to journal, where the log ends), CALL
 * {"id", "state", "ok", "result"} in the order the calls were made, and
 * ANSWER {"run", "call_id", "kind": "permission|taint", "digest", "answer"}.
 *
 * Ownership: the replay owns a copy of what it needs; returned strings are
 * borrowed until the replay is freed.  Nothing here prints.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"
#include "liblev/provider/provider.h"

#define LEV_REPLAY_IN_FLIGHT_TEXT                                                             \
	"[error] this call was in flight when lev stopped: it may or may not have happened; " \
	"check before repeating it"

enum lev_replay_state {
	LEV_REPLAY_LIVE,	/* not in the log: decide and run it now */
	LEV_REPLAY_DONE,	/* it ran; its result is recorded */
	LEV_REPLAY_IN_FLIGHT,	/* dispatched, no result: it may or may not have happened */
	LEV_REPLAY_DENIED,	/* it was refused; the refusal is recorded */
};

struct lev_replay;

/* Build a replay from LOG (borrowed; see above).  A malformed log is LEV_EPARSE. */
int lev_replay_new(const json_t *log, struct lev_replay **out, struct lev_err *err);
/* NULL-safe; returns NULL. */
struct lev_replay *lev_replay_free(struct lev_replay *rp);

/* The JSON of one model turn of STAGE, as the log keeps it (a new reference). */
json_t *lev_replay_turn_json(const char *stage, const struct lev_infer_response *resp);

/*
 * The next logged turn, when it is STAGE's: 1 and *out (the caller releases
 * it).  0 when the log has no more turns for the run to take: from here the
 * run is live (a turn of another stage, or a cut one, ends the log too).
 */
int lev_replay_next_turn(struct lev_replay *rp, const char *stage,
			 struct lev_infer_response *out);
/* True while the turn being played came from the log. */
bool lev_replay_in_turn(const struct lev_replay *rp);
/* Drop the rest of the log's turns: the run left it and goes on live. */
void lev_replay_end(struct lev_replay *rp);
/* How many logged turns were played so far. */
size_t lev_replay_turns_played(const struct lev_replay *rp);

/*
 * The journal's word on call CALL_ID of the turn being played (LIVE outside
 * a logged turn).  *result (borrowed, may be NULL) and *ok say what it
 * returned.  Calls are matched in order: the search starts after the last
 * call matched, so ids that repeat across stages are told apart.
 */
enum lev_replay_state lev_replay_call(struct lev_replay *rp, const char *call_id,
				      const char **result, bool *ok);

/*
 * The recorded answer ("once", "stage", "run", "deny") to a question of
 * KIND, given in RUN to the call CALL_ID (lev's id: the call's place in the
 * run) shown with DIGEST (callshow.h), or NULL: all of them must match, so
 * an answer is replayed only to the very call it approved, as it was shown.
 */
const char *lev_replay_answer(const struct lev_replay *rp, const char *run, const char *call_id,
			      const char *kind, const char *digest);
