/*
 * taintgate.h - the taint gate: may this outbound call run under the
 * current taint?
 *
 * For each call, in order:
 *   1. taint tracking off                 -> allowed   (taint_disabled)
 *   2. the tool is not outbound           -> allowed   (not_outbound)
 *   3. taint <= the tool's clearance      -> allowed   (within_clearance)
 *   4. an [[allowlist]] rule matches      -> allowed   (allowlist, 1-based index)
 *   5. a Lua rule returns true            -> allowed   (rule, file stem)
 *   6. --yolo                             -> allowed   (yolo)
 *   7. otherwise                          -> needs the user (none)
 * The runtime then asks (allow once / allow for this run / deny) and calls
 * lev_gate_answer(); no answer or no terminal is a deny.  "Allow for this
 * run" raises that tool's clearance to Private for the rest of the run (the
 * life of the `struct lev_gate`).
 *
 * The gate reads the call's real target from its arguments (taint.h), so
 * allowlist patterns and Lua rules judge the host the request goes to.
 * policy.toml and the rules directory are re-read when they change
 * (checked at most every `recheck_ns`), unless the gate is `fixed` (a run
 * the daemon holds: it sends the tighter policy, lev_gate_tighten()).  A policy that stops parsing
 * mid-run keeps its last good tool overrides but contributes no allowlist
 * rules until it is fixed (fail closed); the decision's diagnostics say so.
 *
 * Every decision is a `struct lev_gate_decision`; the gate chain
 * (run/gatechain.c) records it in the run's audit.
 *
 * Ownership: the gate owns its policy and rules; a decision owns its
 * strings (lev_gate_decision_release()).  The library never prints.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "liblev/base/buf.h"
#include "liblev/base/error.h"
#include "liblev/policy/policy.h"
#include "liblev/policy/rules.h"
#include "liblev/policy/taint.h"

enum lev_gate_result {
	LEV_GATE_ALLOWED,
	LEV_GATE_NEEDS_USER,	/* blocked unless the user allows it */
	LEV_GATE_BLOCKED,	/* the user said no, or nobody answered */
	_LEV_GATE_RESULT_MAX,
};

enum lev_gate_source {
	LEV_GATE_SRC_TAINT_DISABLED,
	LEV_GATE_SRC_NOT_OUTBOUND,
	LEV_GATE_SRC_WITHIN_CLEARANCE,
	LEV_GATE_SRC_ALLOWLIST,
	LEV_GATE_SRC_RULE,
	LEV_GATE_SRC_YOLO,
	LEV_GATE_SRC_NONE,		/* nothing allowed it */
	LEV_GATE_SRC_USER_ONCE,
	LEV_GATE_SRC_USER_RUN,
	LEV_GATE_SRC_USER_DENY,
	LEV_GATE_SRC_NO_ANSWER,		/* no terminal, timeout, or no answer */
	_LEV_GATE_SRC_MAX,
};

/* "allowed", "needs_user", "blocked". */
const char *lev_gate_result_name(enum lev_gate_result r);
/* "taint_disabled", "not_outbound", "within_clearance", "allowlist", "rule",
 * "yolo", "none", "user_once", "user_run", "user_deny", "no_answer". */
const char *lev_gate_source_name(enum lev_gate_source s);

struct lev_gate_decision {
	char *tool;
	char **targets;			/* canonical targets (strv; NULL: none) */
	char *target_error;		/* why the target could not be read, or NULL */
	enum lev_level sensitivity;
	enum lev_direction direction;
	enum lev_level clearance;
	bool clearance_raised;		/* by an earlier "allow for this run" */
	bool outbound;
	enum lev_level taint;
	char *regions;			/* regions above the clearance ("a, b"), or NULL */
	enum lev_gate_result result;
	enum lev_gate_source source;
	size_t rule_index;		/* allowlist: 1-based; 0 otherwise */
	unsigned rule_line;		/* allowlist: line in policy.toml */
	char *rule_name;		/* Lua rule: file stem; NULL otherwise */
	char **diags;			/* rule failures, policy/rules reload problems (strv) */
	struct timespec time;		/* CLOCK_REALTIME when decided */
};

void lev_gate_decision_release(struct lev_gate_decision *d);

#define LEV_GATE_RECHECK_DEFAULT_NS (200ULL * 1000 * 1000)

struct lev_gate_options {
	const char *policy_path;	/* NULL: no policy file */
	const char *rules_dir;		/* NULL: no Lua rules */
	bool leviath_policy;		/* with policy_path: merge Leviath's policy.toml in
					 * (lev_datadir_leviath_policy_path(), policy.h) */
	const char *leviath_policy_path;	/* ... this copy of it instead (the daemon's
						 * last good one); NULL: the file itself */
	bool enabled;			/* lev_taint_enabled(config, blueprint) */
	bool yolo;			/* allow what would go to the user (recorded):
					 * --yolo with yolo_allows_flow only */
	bool read_grant_active;		/* a [read_paths] grant is active */
	int64_t recheck_ns;		/* stat the files at most this often; 0: the
					 * default (200 ms); < 0: on every call */
	const struct lev_rules_limits *rule_limits;	/* NULL: defaults */
	bool fixed;			/* never re-read policy.toml or the rules: the
					 * caller delivers changes (lev_gate_tighten()) */
};

struct lev_gate;

/*
 * Build a gate: load the policy and the rules.  A policy that does not
 * parse or a rules directory that is unsafe is an error here (the run
 * should not start).  Rule files that cannot be used are only reported
 * (lev_gate_rules_load_errors()).
 */
int lev_gate_new(const struct lev_gate_options *opts, struct lev_gate **out, struct lev_err *err);
/* Accepts NULL; returns NULL. */
struct lev_gate *lev_gate_free(struct lev_gate *g);

/*
 * policy.toml changed to NEXT (borrowed): the gate's policy becomes the
 * tighter of the two (lev_policy_tighten()) from its next decision on.
 */
void lev_gate_tighten(struct lev_gate *g, const struct lev_policy *next);

/*
 * The classification the gate uses for TOOL: built-in, then the policy's
 * override, the read-grant bump, and any "allow for this run" raise.
 * out->target_arg borrows from the gate's policy: valid until the next
 * lev_gate_check() (which may reload it).
 */
void lev_gate_classify(struct lev_gate *g, const char *tool, struct lev_tool_class *out);

struct lev_gate_call {
	const char *tool;
	const char *args_json;		/* the call's JSON arguments, or NULL */
	size_t args_len;
	/*
	 * Or the arguments already parsed (a JSON object; preferred over
	 * ARGS_JSON).  Parse with JSON_REJECT_DUPLICATES (or use
	 * lev_taint_args_parse()): with duplicate keys, the gate and the tool
	 * could read different values.
	 */
	const struct json_t *args;
	bool targets_given;		/* use TARGETS instead of reading ARGS_JSON */
	char *const *targets;		/* raw targets (canonicalised by the gate) */
	const struct lev_taint_ctx *ctx; /* the run's context; NULL: use TAINT */
	enum lev_level taint;
};

/*
 * Decide CALL.  Fills *out (release it with lev_gate_decision_release()).
 * Returns 0, or a negative error for an internal failure, which the caller
 * must treat as a deny.
 */
int lev_gate_check(struct lev_gate *g, const struct lev_gate_call *call,
		   struct lev_gate_decision *out, struct lev_err *err);

enum lev_gate_answer {
	LEV_GATE_ANSWER_NONE,		/* no terminal, timeout, no answer: deny */
	LEV_GATE_ANSWER_DENY,
	LEV_GATE_ANSWER_ONCE,
	LEV_GATE_ANSWER_RUN,		/* allow, and raise the tool's clearance to Private */
};

/*
 * Record the user's answer to a decision that needed one (-EINVAL
 * otherwise): D's result and source are updated; ANSWER_RUN raises D's
 * tool's clearance for the rest of the run.
 */
int lev_gate_answer(struct lev_gate *g, struct lev_gate_decision *d, enum lev_gate_answer a);

/* Taint tracking is on (the integrity gate runs only then). */
bool lev_gate_enabled(const struct lev_gate *g);
/* Turn the gate on (a reload that turns taint_tracking on); never off. */
void lev_gate_enable(struct lev_gate *g);
/* Asks nobody answers are allowed (--yolo with yolo_allows_flow). */
bool lev_gate_yolo(const struct lev_gate *g);
/* The integrity gate's "allow for this run": TOOL was allowed, or allow it from now on. */
bool lev_gate_integrity_raised(const struct lev_gate *g, const char *tool);
void lev_gate_integrity_raise(struct lev_gate *g, const char *tool);
/* Re-read policy.toml and the rules when they changed (lev_gate_check() does it too). */
void lev_gate_refresh(struct lev_gate *g);

/* The policy in use (never NULL) and the rules (never NULL). */
const struct lev_policy *lev_gate_policy(const struct lev_gate *g);
struct lev_rules *lev_gate_rules(struct lev_gate *g);
/* Rule files that were skipped at the last (re)load (strv; may be NULL). */
char *const *lev_gate_rules_load_errors(const struct lev_gate *g);

/*
 * A one-line description for prompts and for the result given back to the
 * model, e.g. "'http_post' would send private data over a channel cleared
 * for public (tainted by: conversation)".  Targets are not repeated (they
 * may come from the model); the prompt shows them separately.
 */
int lev_gate_describe(const struct lev_gate_decision *d, struct lev_buf *out);
