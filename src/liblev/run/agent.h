/*
 * agent.h - the run loop: stages, context, and every tool call through
 * every gate.
 *
 * A run is built from a blueprint and the user's config (lev_agent_new()),
 * which prepares everything before the first inference and fails the run
 * early when something cannot be honoured: the run record, the file tools'
 * workdir and [read_paths], the taint gate (policy.toml, Lua rules), one
 * sandbox per stage (containers are started now, on_unavailable decides
 * what a missing layer means), the model providers, and the context
 * regions with their seeds.  lev_agent_run() then drives the stages:
 *
 *	stage loop	the entry stage first; each iteration renders the
 *			context, asks the model, records its turn and runs its
 *			calls.  A stage ends when the model answers without tool
 *			calls or calls submit_output (stages in mode = "output"
 *			must use submit_output), or fails at max_iterations.
 *			Its output goes to the next stage (`next`, or the first
 *			transition for how it ended); with none the run is
 *			complete.  The script provider running out of turns also
 *			completes the run.
 *
 *	each call	offered in this stage?  ->  arguments valid JSON matching
 *			the tool's schema?  ->  shell redirect containment  ->
 *			permission (allow / ask / deny; ask goes to the front
 *			end: allow once / for this stage / for this run / deny,
 *			and with nobody to ask it is a deny)  ->  network (a
 *			network tool in a stage with network = false is
 *			refused)  ->  taint gate (allowlist, Lua rule, then the
 *			front end: allow once / for this run / deny)  ->
 *			execution (shell in the stage's sandbox)  ->  the result
 *			is labelled and added to the context.  The paths gate
 *			(workdir, [read_paths]) is the file tools' own decision,
 *			made atomically when they open the path; no file tool is
 *			a network or outbound tool, so it meets nothing after.
 *			Inline tools (submit_output, context_*, current_time)
 *			and the questions for the user (ask_user_*, offered only
 *			when the front end can ask) go through the same gates.  Every gate's decision is one line of
 *			audit.jsonl naming the gate and the rule that decided;
 *			every call gets exactly one tool_result.
 *
 * Cancellation: the front end sets *cancel (and makes cancel_fd readable)
 * from its SIGINT handler.  The loop checks it between steps; a running
 * shell command is killed through cancel_fd and a model request through
 * the provider's cancel flag.  The run then ends "cancelled", and
 * lev_agent_free() removes every container.
 *
 * Ownership: the agent owns everything it builds; the blueprint and config
 * passed in are borrowed and must outlive it.  Nothing here prints: the
 * front end sees the run through its hooks.
 */
#pragma once

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/conf/blueprint.h"
#include "liblev/conf/config.h"
#include "liblev/base/error.h"
#include "liblev/provider/provider.h"
#include "liblev/tools/tools.h"

enum lev_run_status {
	LEV_RUN_RUNNING,
	LEV_RUN_COMPLETE,
	LEV_RUN_ERROR,
	LEV_RUN_CANCELLED,
};

/* "running", "complete", "error", "cancelled". */
const char *lev_run_status_name(enum lev_run_status s);

enum lev_ask_kind {
	LEV_ASK_PERMISSION,	/* offers once / stage / run / deny */
	LEV_ASK_TAINT,		/* offers once / run / deny */
};

enum lev_ask_answer {
	LEV_ANSWER_NONE,	/* nobody answered: deny */
	LEV_ANSWER_DENY,
	LEV_ANSWER_ONCE,
	LEV_ANSWER_STAGE,	/* permission prompts only */
	LEV_ANSWER_RUN,
};

/* "none", "deny", "once", "stage", "run". */
const char *lev_ask_answer_name(enum lev_ask_answer a);

/* One question for the person at the terminal.  Strings are borrowed. */
struct lev_ask {
	enum lev_ask_kind kind;
	const char *stage;
	const char *call_id;
	const char *tool;
	const char *prompt;		/* one line: "Allow tool call: `shell` - `make test`?" */
	const char *detail;		/* more lines (targets, taint), or NULL */
	const char *stage_label;	/* "Allow shell:make for this stage" (permission) */
	const char *run_label;		/* "Allow shell:make for this run" */
	/*
	 * The whole call, as every surface that asks must show it
	 * (lev_callshow_text(): every line, every byte visible), and the
	 * digest of that text an answer is bound to (lev_callshow_digest()).
	 * CALL_ID is lev's id of the call: its place in the run.
	 */
	const char *call;
	const char *digest;
};

/* A question the model asks the user (ask_user_*).  Strings are borrowed. */
enum lev_question_kind {
	LEV_QUESTION_TEXT,	/* a free-text answer */
	LEV_QUESTION_CHOICE,	/* one of `choices` */
	LEV_QUESTION_CONFIRM,	/* yes or no */
};

struct lev_question {
	enum lev_question_kind kind;
	const char *stage;
	const char *call_id;
	const char *question;		/* the model's words: show them as text, never raw */
	char *const *choices;		/* LEV_QUESTION_CHOICE: 2..20 answers */
	bool point;			/* a stage's interaction point (Leviath's checkpoint),
					 * not the agent's own question */
};

struct lev_agent;
struct lev_policy;

/* A message a running sub-agent's parent sent it, with the parent's labels then. */
struct lev_agent_mail {
	char *text;
	char *region;			/* a region of the sub-agent's, or NULL: its conversation */
	enum lev_level label;
	bool untrusted;
};

struct lev_agent_hooks {
	/*
	 * Ask the person at the terminal.  NULL, or LEV_ANSWER_NONE, means
	 * nobody can answer: the call is denied.
	 */
	enum lev_ask_answer (*ask)(void *data, const struct lev_ask *q);
	/*
	 * Put a question to the user.  Returns 0 and *answer (malloc'ed:
	 * the text; for a choice, the chosen entry; for confirm, "yes" or
	 * "no"), or -1 when nobody answered (timeout, end of input).  NULL:
	 * nobody can be asked, and ask_user_* are not offered to the model.
	 */
	int (*question)(void *data, const struct lev_question *q, char **answer);
	/* Each event as recorded: the object and its line (both borrowed). */
	void (*event)(void *data, const json_t *event, const char *line);
	/*
	 * A model turn as the provider gave it (lev_replay_turn_json(), borrowed),
	 * before any of its calls is decided, so a journal can keep it for a
	 * replay.  Turns taken from a replay log are not reported.  May be NULL.
	 */
	void (*turn)(void *data, const json_t *turn);
	/*
	 * A step boundary: before each model request and each tool call is
	 * decided.  The front end may call lev_agent_config_changed() here
	 * (A is the run).  May be NULL.
	 */
	void (*step)(void *data, struct lev_agent *a);
	/* The model is thinking (true) or has answered (false). */
	void (*thinking)(void *data, bool on);
	/*
	 * A step boundary, before each model turn: it may block (a paused
	 * run waits here; cancel_fd wakes it).  Returns a message for the
	 * conversation, added as a user turn before the model is asked
	 * (malloc'ed; a "user_message" event records it), or NULL; it is
	 * called again until it returns NULL.  NULL hook: no boundary.
	 */
	char *(*boundary)(void *data);
	/*
	 * A sub-agent's messages from the agent that started it (send_to_agent
	 * while it runs), before each model turn: returns 1 and fills *M (its
	 * strings malloc'ed) while there is one, else 0.  NULL: none.
	 */
	int (*mail)(void *data, struct lev_agent_mail *m);
	void *data;
};

struct lev_agent_opts {
	const struct lev_blueprint *bp;	/* required */
	const struct lev_config *cfg;	/* required */
	const char *workdir;		/* required: an existing directory */
	const char *task;		/* --task text, or NULL */
	char *const *inputs;		/* the other caller inputs, "KEY=VALUE" (strv, may
					 * be NULL): `lev run --input KEY=VALUE`, `--KEY VALUE` */
	char *const *input_files;	/* "KEY=DEV:INO:PATH" ("task=..." for the task):
					 * the file an input was read from (`--KEY @FILE`):
					 * its identity and the real path of the descriptor
					 * read (a PATH now another object labels it
					 * untrusted and private), whose text
					 * is labelled as read_file of PATH would be: the
					 * ledger, [[sources]] path entries, [integrity]
					 * globs (strv, may be NULL) */
	bool yolo;			/* --yolo: every permission ask becomes allow */
	bool yolo_flow;			/* --yolo-flow: and taint and integrity asks too */
	char *const *allow;		/* --allow TOOL... (strv, may be NULL) */
	const char *model;		/* --model PROVIDER/MODEL, or NULL */
	bool no_seed_commands;		/* --no-seed-commands */
	const char *runs_dir;		/* <data root>/runs; NULL: no record (benchmarks) */
	const char *run_id;		/* the record's id (the daemon's); NULL: a new one */
	const char *data_root;		/* masked inside sandboxes, never written by file
					   tools; NULL: from the env */
	const char *policy_path;	/* policy.toml; NULL: none */
	const char *leviath_policy_path;	/* Leviath's policy.toml merged in; NULL: its own */
	const char *rules_dir;		/* Lua rules; NULL: none */
	bool policy_fixed;		/* the run never re-reads policy.toml or the rules
					 * itself: its owner sends the changes
					 * (lev_agent_policy_changed()) */
	const char *credentials_path;	/* credentials.toml; NULL: none */
	const char *config_path;	/* named in messages; NULL: "your config.toml" */
	const char *home;		/* NULL: $HOME */
	const char *oci_helper;		/* lev-oci-helper on the host, or NULL */
	char *const *envp;		/* environment shell commands start from (filtered) */
	volatile sig_atomic_t *cancel;	/* set when the run must stop; may be NULL */
	int cancel_fd;			/* readable once cancelled; -1: none */
	struct lev_replay *replay;	/* a run resumed from its journal (replay.h), borrowed;
					 * NULL: a new run */
	bool resume;			/* go on with the record run_id names (lev_runrecord_reopen) */
	uint64_t window_tokens;		/* model window for budgets; 0: the smallest [providers.X]
					 * context_window of the stages, else the default */
	struct lev_agent_hooks hooks;
};

struct lev_agent;
struct lev_policy;
struct lev_replay;

/*
 * Prepare a run (see above).  On failure nothing is left behind except a
 * run record saying why, when one could be created (its path is in the
 * message).
 */
int lev_agent_new(const struct lev_agent_opts *opts, struct lev_agent **out, struct lev_err *err);

/*
 * Run to the end.  Returns 0 whatever the outcome: lev_agent_status() says
 * how it ended and lev_agent_error() why it failed.  A negative return is
 * only a failure to keep the record.
 */
int lev_agent_run(struct lev_agent *a, struct lev_err *err);

/*
 * The config the run borrows (opts.cfg) was changed by its owner, between
 * steps (a hot reload: the daemon's worker makes it the tighter of old and
 * new, policy/effective.h).  Rebuilds what the run derived from it: each
 * stage's permission input, the read grants, the taint switch (on, never
 * off), the commands' environment filter, timeout and output cap, and the
 * network tools' switch.  The stages' sandbox kinds, the Lua rules and the
 * providers stay as the run started.  Call it from a hook (hooks.step).
 * Each part only tightens, so a part that fails leaves the others applied
 * (the error names the first that failed).
 */
int lev_agent_config_changed(struct lev_agent *a, struct lev_err *err);

/*
 * policy.toml changed to NEXT (borrowed, parsed): the run's taint and
 * integrity gates take the tighter of their policy and NEXT
 * (lev_policy_tighten()) from the next decision on.  For a run with
 * opts.policy_fixed; call it from a hook (hooks.step).
 */
void lev_agent_policy_changed(struct lev_agent *a, const struct lev_policy *next);

/* Kill commands, remove containers, close the record.  NULL-safe; returns NULL. */
struct lev_agent *lev_agent_free(struct lev_agent *a);

enum lev_run_status lev_agent_status(const struct lev_agent *a);
/* The final output (NULL when none) and the error (NULL when none); borrowed. */
const char *lev_agent_output(const struct lev_agent *a);
const char *lev_agent_error(const struct lev_agent *a);
/* The run id and record directory (NULL without a record). */
const char *lev_agent_run_id(const struct lev_agent *a);
const char *lev_agent_record_dir(const struct lev_agent *a);

/* How a call was decided, for front ends, tests and benchmarks. */
struct lev_call_decision {
	bool allowed;		/* final: after any answer */
	enum lev_verdict verdict;	/* the gate chain's verdict (gatechain.h) */
	const char *gate;	/* static: the gate that decided or approved (see docs/run.md) */
	char *rule;		/* owned: the rule within the gate, or NULL */
	char *reason;		/* owned: one line, or NULL */
	bool asked;		/* somebody answered */
	enum lev_ask_answer answer;
	enum lev_level label;	/* the label of what the model gets back: an allowed call's
				 * result, or a refusal's text (see agent-call.c) */
	enum lev_level taint;	/* the context's taint the call was decided under */
	enum lev_integrity integrity;	/* the integrity of what the model gets back */
	const char *replayed;	/* static: "done", "in_flight" or "denied" when a replay log
				 * settled the call (replay.h); NULL: it was run */
	bool acted;		/* it ran a tool that is not read-only: the record was synced
				 * before it and is flushed after its result */
};

void lev_call_decision_release(struct lev_call_decision *d);

/*
 * Run one tool call through every gate and, when allowed, execute it, in
 * the current stage, exactly as the run loop does (it is what the loop
 * calls), and fill *out with what the model would get and *dec with the
 * decision.  The result is NOT added to the context (the loop does that).
 * For benchmarks and tests; returns 0 or a negative internal error.
 */
int lev_agent_dispatch(struct lev_agent *a, const struct lev_tool_call *call,
		       struct lev_tool_output *out, struct lev_call_decision *dec,
		       struct lev_err *err);

/*
 * Fill the context regions from their seeds, labelled as a run labels
 * them (lev_agent_run() does this first; call it at most once, and not
 * with lev_agent_run()).  For benchmarks and tests: a context holding
 * what a run would hold before the first request.
 */
int lev_agent_seed(struct lev_agent *a, struct lev_err *err);
