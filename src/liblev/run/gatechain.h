/*
 * gatechain.h - the one place a tool call is decided.
 *
 * `lev run` (agent-call.c and agent-seed.c: model calls, tool seeds, command seeds) and
 * `lev check` (check.c) both put a call to lev_gatechain_decide() and act
 * on the record it returns; neither walks the gates itself.  The gates, in
 * order:
 *
 *   offered     the tool is one lev provides and the stage offers it (a
 *               tool seed: any file, shell or network tool)
 *   schema      the arguments are one JSON object matching the tool's schema
 *   seed        a command seed: seeds enabled, every program safe-listed,
 *               and a read fence where there is no sandbox
 *   redirect    a shell line's write redirects stay inside the workdir, and
 *               a line the key parser cannot fully analyse runs only behind a
 *               write fence (a sandbox that keeps writes in the workdir)
 *   permission  perm.h: defaults, the user's ceiling, the blueprint,
 *               --allow / --yolo, grants made during the run, safe lists
 *               (with no sandbox, a safe-listed line needs Landlock); a
 *               sub-agent's call is also decided under each ancestor's
 *               input, and the strictest verdict wins
 *   workdir, read_paths
 *               the file tools' paths, resolved ONCE (tools-fs.h
 *               lev_fs_decide()): the record keeps the fds, and the tool
 *               runs on them (lev_fs_run()), never on the path again
 *   network     a network tool in a stage with network = false
 *   taint       taintgate.h, for outbound tools, under the context's taint
 *   integrity   integrity.h: a consequential call (or a write to a protected
 *               file) while the live context holds untrusted content needs
 *               an [[integrity.allow]] entry, a Lua rule or the user; the
 *               arguments that came from untrusted text are in the record
 *
 * Every gate is evaluated before anybody is asked.  The verdict is the
 * first gate that refuses, in that order (a refusal beats an ask: nobody is
 * asked about a call a later gate refuses); else, when gates ask (the
 * permission gate, the taint gate, the integrity gate), ASK, with each ask in the record so
 * the caller asks once, for all of them; else ALLOW, naming the gate that
 * approved: the last gate where a choice allowed the call (taint: an
 * allowlist entry, rule or --yolo; read_paths: a granted path outside the
 * workdir; permission: a rule, --allow, --yolo, a safe list, a grant), else
 * the permission gate's built-in default.
 *
 * read_files: a call with any path refused is refused as a whole (nothing
 * is read), at the gate of its first refused path; the same in both.
 *
 * Ownership: the record owns its strings, shell keys, fs targets (fds) and
 * taint decision; release it with lev_gatechain_decision_release().  Its
 * rule, reason and steps borrow from it: copy what outlives it.  The
 * environment is borrowed.  Nothing here asks, prints or runs a tool.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "liblev/conf/blueprint.h"
#include "liblev/base/error.h"
#include "liblev/policy/perm.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/policy/integrity.h"
#include "liblev/policy/provenance.h"
#include "liblev/policy/taintgate.h"
#include "liblev/tools/tools-fs.h"
#include "liblev/tools/tools.h"
#include "liblev/base/types.h"

/*
 * The vocabulary: one gate enum and one string table, used by the audit
 * record, the --json events, `lev check --json` and docs/run.md.
 */
enum lev_gate_id {
	LEV_GATE_NONE,
	LEV_GATE_OFFERED,
	LEV_GATE_SCHEMA,
	LEV_GATE_SEED,
	LEV_GATE_REDIRECT,
	LEV_GATE_PERMISSION,
	LEV_GATE_WORKDIR,
	LEV_GATE_READ_PATHS,
	LEV_GATE_NETWORK,
	LEV_GATE_TAINT,
	LEV_GATE_INTEGRITY,
	_LEV_GATE_ID_MAX,
};

/* "none", "offered", "schema", "seed", "redirect", "permission", "workdir",
 * "read_paths", "network", "taint", "integrity". */
const char *lev_gate_id_name(enum lev_gate_id g);

/*
 * The fixed rules the chain's own gates name (the permission and taint
 * gates also name rules from your config and policy: "[tool_permissions]
 * shell = \"allow\"", "allowlist #2").  One table, lev_gate_reason_name().
 */
enum lev_gate_reason {
	LEV_REASON_AVAILABLE_TOOLS,	/* "available_tools" */
	LEV_REASON_NOT_OFFERED,	/* "not offered in this stage" */
	LEV_REASON_UNKNOWN_TOOL,	/* "unknown tool" */
	LEV_REASON_SEED,	/* "seed" */
	LEV_REASON_JSON,	/* "json" */
	LEV_REASON_SCHEMA,	/* "schema" */
	LEV_REASON_SEEDS_DISABLED,	/* "seed commands disabled" */
	LEV_REASON_SAFE_LIST,	/* "safe list" */
	LEV_REASON_NO_READ_FENCE,	/* "no read fence" */
	LEV_REASON_WORKDIR,	/* "workdir" */
	LEV_REASON_UNLOCATABLE_WRITE,	/* "unlocatable write" */
	LEV_REASON_WRITE_FENCE,	/* "write fence" */
	LEV_REASON_PATH,	/* "path" */
	LEV_REASON_CONFINED,	/* "confined to the workdir" */
	LEV_REASON_READ_PATHS,	/* "[read_paths]" */
	LEV_REASON_READ_PATHS_GRANTED,	/* "[read_paths] declared and granted" */
	LEV_REASON_NETWORK_OFF,	/* "network = false" */
	LEV_REASON_NETWORK_ON,	/* "network = true" */
	LEV_REASON_OFFLINE,	/* "not_outbound: the stage's sandbox has no network" */
	LEV_REASON_TAINT_DISABLED,	/* "taint_disabled" */
	LEV_REASON_NOT_OUTBOUND,	/* "not_outbound" */
	LEV_REASON_TAINT_ERROR,	/* "error" */
	_LEV_REASON_MAX,
};

const char *lev_gate_reason_name(enum lev_gate_reason r);

/* What the chain is asked in. */
enum lev_gatechain_mode {
	LEV_GATECHAIN_CALL,		/* a model's call */
	LEV_GATECHAIN_TOOL_SEED,	/* a tool seed: nobody is asked */
	LEV_GATECHAIN_COMMAND_SEED,	/* a command seed: the safe lists alone */
};

/*
 * The chain's inputs.  Never filled by hand: lev_gatechain_env_build() makes
 * one for every caller (a model's call, a script tool's host function, an
 * MCP call, a sub-agent's, a redirect hop, a seed, `lev check`, `lev policy
 * test`).  Its zero value is the most restrictive one: nothing offered, no
 * network, no fence, no Landlock, taint tracked with no gate to clear an
 * outbound call, no permission input (every call asks), no workdir (every
 * path refused) and, unless LABELLED, a context that is private and
 * untrusted with every argument counted as from untrusted text.
 */
struct lev_gatechain_env {
	const struct lev_tools *tools;
	const char *stage;			/* the stage's name (messages) */
	char *const *offered;			/* canonical names offered (NULL: none) */
	const char *offered_list;		/* "a, b" for messages */
	enum lev_gatechain_mode mode;
	bool seed_commands;			/* command seeds are enabled */
	const char *seed_off_why;		/* why not, for the message */
	const struct lev_perm_input *perm;	/* the stage's permission input (NULL: ask) */
	const struct lev_perm_input *const *ceilings;	/* a sub-agent: each ancestor's
							 * input, NULL-terminated; the
							 * strictest verdict wins (NULL: none) */
	const struct lev_grants *grants;	/* grants made in this run (NULL: none) */
	struct lev_fs_ctx *fs;			/* the file tools' workdir and [read_paths]
						 * (NULL: every path is refused) */
	const char *home;			/* for the redirect gate (NULL: none) */
	bool real_paths;			/* read back real paths inside the workdir too
						 * (the record's path; no decision depends on it) */
	enum lev_sandbox_kind kind;		/* the stage's sandbox */
	bool network;				/* the stage's network = true */
	bool shell_offline;			/* the shell has no network at all */
	bool landlock;				/* the kernel has a Landlock read fence */
	bool fenced;				/* the stage's sandbox keeps a command's writes
						 * in the workdir (mount namespace, Landlock or
						 * container): the write fence (perm.h) */
	struct lev_gate *taint;			/* the taint gate (NULL with tracking on: an
						 * outbound call is refused) */
	bool taint_off;				/* taint tracking is off for this agent */

	/* the context (lev_gatechain_ctx); without LABELLED: private, untrusted, every
	 * argument from untrusted text */
	bool labelled;
	const struct lev_taint_ctx *taint_ctx;	/* the run's context, or NULL */
	enum lev_level taint_level;		/* the context's taint, at least */
	enum lev_integrity integrity;		/* the context's integrity, at least */
	const struct lev_provenance *provenance; /* what was fed to the run, or NULL */
	char *const *untrusted_args;		/* marked as from untrusted text as well */
};

/*
 * Where a call is decided: the stage's pieces as a run, or `lev check`,
 * has them.  Everything borrowed.
 */
struct lev_gatechain_site {
	const struct lev_tools *tools;
	const char *stage;
	char *const *offered;
	const char *offered_list;
	const struct lev_perm_input *perm;	/* the stage's */
	const struct lev_perm_input *safe_only;	/* the safe lists alone (command seeds) */
	const struct lev_perm_input *const *ceilings;
	const struct lev_grants *grants;
	struct lev_fs_ctx *fs;
	const struct lev_sandbox_spec *eff;	/* the stage's sandbox, resolved */
	const struct lev_sandbox *sb;		/* as set up (NULL: none could be; a namespace
						 * sandbox then fences nothing) */
	bool landlock;
	struct lev_gate *taint;
	bool taint_enabled;
	bool seed_commands;
	const char *seed_off_why;
	bool real_paths;
};

/*
 * What the context a call is decided in holds.  A caller that runs inside
 * another (a script tool's host function) raises TAINT and INTEGRITY by
 * what it has seen; the chain takes the higher of them and TAINT_CTX's.
 */
struct lev_gatechain_ctx {
	const struct lev_taint_ctx *taint_ctx;	/* NULL: TAINT and INTEGRITY alone */
	enum lev_level taint;
	enum lev_integrity integrity;
	const struct lev_provenance *provenance;
	char *const *untrusted_args;
};

/*
 * The one builder of the chain's inputs: SITE's stage in MODE (HOME for the
 * redirect gate), in context CTX.  CTX NULL: the context counts as private
 * and untrusted, every argument as from untrusted text (fail closed).
 */
void lev_gatechain_env_build(struct lev_gatechain_env *env, const struct lev_gatechain_site *site,
			     enum lev_gatechain_mode mode, const char *home,
			     const struct lev_gatechain_ctx *ctx);

/* A call as the model sent it. */
struct lev_gatechain_call {
	const char *name;			/* as sent (any spelling) */
	const json_t *args;			/* the parsed object, or NULL */
	const char *parse_error;		/* why ARGS is NULL */
};

/*
 * One gate's say.  The strings are borrowed: static text, or text the
 * record owns (lev_gatechain_decision.own), valid until it is released.
 * A gate that lets a call pass without being able to approve it (offered,
 * schema, redirect, workdir, network, a taint gate that does not apply)
 * gives a fixed reason; only the texts somebody reads are formatted.
 */
struct lev_gatechain_step {
	bool ran;
	enum lev_verdict verdict;
	const char *rule;			/* what decided within the gate */
	const char *reason;			/* one line, or NULL */
	const char *target;			/* what the gate looked at, or NULL */
};

/* The most strings a record owns: at most three per gate, and one for the text. */
#define LEV_GATECHAIN_OWN_MAX (3 * _LEV_GATE_ID_MAX + 1)

struct lev_gatechain_decision {
	enum lev_verdict verdict;		/* ALLOW, ASK or DENY */
	enum lev_gate_id gate;			/* the gate that decided (or approved) */
	const char *rule;			/* the rule within that gate (its step's) */
	const char *reason;			/* one line, never NULL (its step's) */
	char *text;				/* owned: what the model gets when refused
						 * (with its "[denied] " style prefix) */
	const struct lev_tool_info *tool;	/* the entry, or NULL (unknown tool) */
	const char *canon;			/* the canonical name, or the name as sent */
	/*
	 * owned: the call's arguments under their canonical names (an alias the
	 * tool table lists renamed), what every gate decided on and what the
	 * call runs with and is shown as; NULL when the call's were not an object
	 */
	json_t *args;
	struct lev_gatechain_step steps[_LEV_GATE_ID_MAX];

	/* the asks (verdict ASK), to be put to the person together, once */
	bool ask_permission;
	char *perm_why;				/* owned: the permission rule in words */
	char **keys;				/* owned strv: what a grant would cover */
	bool ask_taint;
	struct lev_gate_decision taint;		/* the taint gate's decision (ran_taint) */
	bool ran_taint;
	enum lev_level taint_level;		/* the taint the call was decided under */
	bool ask_integrity;
	struct lev_integrity_decision integ;	/* the integrity gate's decision (ran_integ) */
	bool ran_integ;
	enum lev_integrity integrity;		/* the context's integrity the call was decided under */
	char **untrusted_args;			/* owned strv: arguments from untrusted text */

	/* resolved targets */
	struct lev_shellkeys sk;		/* a shell call's parsed line */
	bool have_sk;
	bool read_fence;			/* run the line inside the read fence */
	bool git_hooks_off;			/* pre-approved by a safe list: git without
						 * repository hooks or fsmonitor */
	struct lev_fs_targets *fs;		/* owned: a file tool's opened paths */
	char *path;				/* owned: a file tool's real path */
	char *host;				/* owned: a network tool's target(s) */

	/* the strings the steps borrow (freed with the record) */
	char *own[LEV_GATECHAIN_OWN_MAX];
	size_t n_own;
};

void lev_gatechain_decision_release(struct lev_gatechain_decision *d);

/*
 * Decide CALL in ENV into *OUT (see above).  Returns 0 (a refusal is a
 * verdict, not an error), or a negative code when a gate could not decide
 * (the taint policy failed): *OUT is then a DENY at the failing gate too,
 * so a caller that goes on refuses.
 */
int lev_gatechain_decide(const struct lev_gatechain_env *env, const struct lev_gatechain_call *call,
			 struct lev_gatechain_decision *out, struct lev_err *err);

/*
 * Judge a redirect hop of an allowed network call by the integrity gate,
 * as a web_fetch of URL in ENV, into *OUT (steps: integrity only; release
 * it).  URL_UNTRUSTED: the hop's URL counts as from untrusted text (it
 * came from a reply no [[sources]] entry trusts).  Never fails: a hop that
 * cannot be judged is a DENY.
 */
void lev_gatechain_redirect(const struct lev_gatechain_env *env, const char *url,
			    bool url_untrusted, struct lev_gatechain_decision *out);

/*
 * The flow gates alone on a call of TOOL (any name: one lev does not know
 * is judged as a run-time tool, outbound and consequential) with ARGS (an
 * object, or NULL) in ENV's context, as `lev policy test` asks them: the
 * taint gate into *TD (TARGETS instead of the arguments' when
 * TARGETS_GIVEN) and, when INTEGRITY, the integrity gate into *ID (release
 * both).  The context (its taint, integrity and untrusted arguments) is
 * the chain's own reading of ENV.  Returns 0, or a negative code when the
 * taint gate failed.
 */
int lev_gatechain_flow(const struct lev_gatechain_env *env, const char *tool, const json_t *args,
		       char *const *targets, bool targets_given, bool integrity,
		       struct lev_gate_decision *td, struct lev_integrity_decision *id,
		       struct lev_err *err);

/*
 * The canonical names STAGE offers from TOOLS (a strv; *LIST "a, b").
 * ask_user_* only when CAN_ASK, and in an UNATTENDED run (--yolo, as
 * Leviath) only those the stage names in required_tools; submit_output
 * always in output stages.  Names lev does not provide, or that nobody could
 * answer, are skipped and reported through *SKIPPED (a strv of "name\twhy",
 * may be NULL).
 */
char **lev_gatechain_offered(const struct lev_tools *tools, const struct lev_stage *st,
			     bool can_ask, bool unattended, char **list, char ***skipped);

/*
 * True when a shell in SB (the stage's sandbox, resolved as EFF) has no
 * network at all: a namespace sandbox with its own empty network namespace,
 * or a container with network = false.  SB NULL: decided from EFF alone.
 */
bool lev_gatechain_shell_offline(const struct lev_sandbox_spec *eff, const struct lev_sandbox *sb);

/*
 * True when a command in SB (the stage's sandbox, resolved as EFF) cannot
 * write outside the workdir: the write fence (perm.h) is in force.  Read
 * from the layers SB has (a mount namespace, Landlock or a container);
 * SB NULL: decided from EFF's kind alone.
 */
bool lev_gatechain_fenced(const struct lev_sandbox_spec *eff, const struct lev_sandbox *sb);
