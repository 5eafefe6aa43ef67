/*
 * perm.h - tool permissions: allow / ask / deny for one tool call, the
 * grants a person gives at run time, and the shell redirect containment.
 *
 * Resolution (spec §3.3, with the built-in defaults of §3.2), for TOOL:
 *   ceiling    the user's entry: [agent_tool_permissions.<agent>] if it
 *              names the tool (any spelling), else [tool_permissions]
 *   blueprint  the stage's [stages.S.tool_permissions] entry, else the
 *              blueprint's agent-level [tool_permissions] entry
 *   configured both set        -> the stricter of the two
 *              blueprint only  -> the stricter of it and the built-in
 *                                 default, except web_search / web_fetch
 *                                 and allow_blueprint_permissions = true,
 *                                 where the blueprint's word stands
 *              ceiling only    -> the ceiling
 *              neither         -> the built-in default
 *   deny is final: nothing below lifts it
 *   launch     --allow TOOL, then --yolo, turn anything else into allow
 * Several spellings of one tool in one table: the strictest wins.  `bash`
 * and `shell` are one tool (the tool table's aliases, tooltable.h).
 *
 * Then for a call (lev_perm_decide()):
 *   effect clamp  a shell line that writes a file (shellkeys.h) is held to
 *                 the write_file policy too: the stricter of both
 *   coverage      an ask becomes allow when every approval key of the call
 *                 is on a safe list (program keys widen onto their
 *                 program: `cat` covers `cat x`) or exactly in a stage or
 *                 run grant.  A call with no key (an ungrantable shell
 *                 line) is never covered.
 *
 * The redirect gate (lev_perm_redirect_check()) is separate and comes
 * first at run time: a shell line whose literal write redirect lands
 * outside the workdir, or whose write cannot be located, is refused
 * outright - no permission, grant, --allow or --yolo lifts it.
 *
 * Every decision names the rule that made it (lev_perm_describe()), for
 * `lev check` and the audit trail.  The input is plain data borrowed from
 * the caller; nothing here reads the config or the blueprint
 * (perm-config.c builds the input from them).  Resolution does not
 * allocate.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/buf.h"
#include "liblev/base/error.h"
#include "liblev/base/tooltable.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/base/types.h"

/* One `tool = "verdict"` entry and where it was written (both borrowed). */
struct lev_perm_rule {
	const char *tool;	/* as written, any spelling */
	enum lev_verdict verdict;
	const char *source;	/* "[tool_permissions]", "[agent_tool_permissions.coder]",
				 * "blueprint [stages.build.tool_permissions]" ... */
};

/* One safe-list key ("shell:ls", "shell:env:RUST_LOG", "read_files") and its source. */
struct lev_perm_safe {
	const char *key;
	const char *source;	/* "built-in list", "[safe_commands]", ... */
};

struct lev_perm_input {
	const struct lev_perm_rule *user_global;	/* [tool_permissions] */
	size_t n_user_global;
	const struct lev_perm_rule *user_agent;		/* [agent_tool_permissions.<agent>] */
	size_t n_user_agent;
	/* the blueprint is not the installed agent it names (agentstore.h): a
	 * user_agent entry applies only where it is at least as strict as the
	 * user_global entry (or the default) it would replace */
	bool user_agent_tighten_only;
	const struct lev_perm_rule *bp_stage;		/* [stages.S.tool_permissions] */
	size_t n_bp_stage;
	const struct lev_perm_rule *bp_agent;		/* the blueprint's [tool_permissions] */
	size_t n_bp_agent;
	bool blueprint_may_loosen;	/* [security] allow_blueprint_permissions */

	bool yolo;			/* --yolo */
	const char *const *allow;	/* --allow TOOL..., NULL-terminated; may be NULL */

	/* Every safe key in force (built-in list included when it is on). */
	const struct lev_perm_safe *safe;
	size_t n_safe;
};

/* Why a decision came out the way it did. */
enum lev_perm_why {
	LEV_PERM_WHY_DEFAULT,	/* the built-in default */
	LEV_PERM_WHY_USER,	/* the user's ceiling entry (rule) */
	LEV_PERM_WHY_BLUEPRINT,	/* the blueprint's entry (rule) */
	LEV_PERM_WHY_LAUNCH,	/* --yolo / --allow */
	LEV_PERM_WHY_CLAMP,	/* a writing shell line, held to write_file's resolution */
	LEV_PERM_WHY_COVERED,	/* an ask whose every key is on a safe list or granted */
	_LEV_PERM_WHY_MAX,
};

/*
 * One tool's resolution (lev_perm_resolve()).  Pointers borrow from the
 * lev_perm_input and from string literals.
 */
struct lev_perm_resolution {
	enum lev_verdict verdict;		/* after --allow / --yolo */
	enum lev_perm_why why;			/* DEFAULT, USER, BLUEPRINT or LAUNCH */
	enum lev_verdict configured;		/* before --allow / --yolo */
	enum lev_perm_why configured_why;	/* DEFAULT, USER or BLUEPRINT */
	const char *tool;			/* canonical */
	const struct lev_perm_rule *rule;	/* with USER / BLUEPRINT, else NULL */
	const struct lev_perm_rule *capped;	/* a blueprint entry that asked for more */
	const char *launch;			/* "--yolo" or the --allow spelling that
						 * applied, or that a deny refused */
};

#define LEV_PERM_MAX_SOURCES 4

/* A call's decision (lev_perm_decide()); borrows like the resolution. */
struct lev_perm_decision {
	enum lev_verdict verdict;	/* final */
	enum lev_perm_why why;		/* final: own.why, CLAMP or COVERED */
	struct lev_perm_resolution own;	/* the tool's own resolution */
	bool write_clamp;		/* write_file's resolution tightened the call */
	struct lev_perm_resolution write;	/* with write_clamp */
	/* With COVERED: the safe-list sources used, and whether grants were. */
	const char *safe_sources[LEV_PERM_MAX_SOURCES];
	size_t n_safe_sources;
	bool by_grant;
	/*
	 * A safe list would have covered a key, but the line names this path
	 * outside the working directory (lev_shellkeys.reads_outside,
	 * borrowed), so it did not: safe lists pre-approve reading the
	 * workdir, not the machine.  Grants and explicit allows still apply.
	 */
	const char *safe_outside;
};

/* The gate name every permission decision reports. */

/*
 * The built-in default for TOOL (any spelling): allow for the reviewed
 * read-only and bookkeeping tools, ask for everything else (write_file,
 * edit_file, shell, web_*, MCP and script tools, unknown names).
 */
enum lev_verdict lev_perm_default(const char *tool);
/* The tools the built-in default allows: the tool table's LEV_TOOLF_DEFAULT_ALLOW. */

/* Resolve TOOL's policy (no call arguments).  Never fails, never allocates. */
void lev_perm_resolve(const struct lev_perm_input *in, const char *tool,
		      struct lev_perm_resolution *out);

/*
 * The runtime's grants: keys approved "for this stage" or "for this run".
 * Stage grants are dropped when lev_grants_enter_stage() names another
 * stage.  Nothing is persisted.  Keys are compared exactly.
 */
struct lev_grants {
	char **stage;		/* strv, may be NULL */
	char **run;		/* strv, may be NULL */
	long stage_index;	/* -1: none entered yet */
};

enum lev_grant_scope {
	LEV_GRANT_ONCE,		/* records nothing */
	LEV_GRANT_STAGE,
	LEV_GRANT_RUN,
};

#define LEV_GRANTS_MAX 4096

void lev_grants_init(struct lev_grants *g);
void lev_grants_release(struct lev_grants *g);
/* The run is now in stage INDEX; a different index drops the stage grants. */
void lev_grants_enter_stage(struct lev_grants *g, long index);
/*
 * Record KEYS (the call's approval keys) under SCOPE.  NULL or empty KEYS
 * (an ungrantable call) record nothing.  -E2BIG past LEV_GRANTS_MAX keys.
 */
int lev_grants_add(struct lev_grants *g, enum lev_grant_scope scope, char *const *keys);
bool lev_grants_has(const struct lev_grants *g, const char *key);

/*
 * The approval keys of a call: [canonical TOOL] for any tool but the
 * shell; for the shell, SK's keys (NULL when SK is NULL - no command - or
 * the line is ungrantable).  Caller frees (lev_strv_free()).
 */
char **lev_perm_call_keys(const char *tool, const struct lev_shellkeys *sk);

/*
 * Decide one call to TOOL.  SK is the parsed command of a shell call (NULL
 * for other tools, and for a shell call without a command, which then gets
 * no clamp and no key).  GRANTS may be NULL.  Never fails.
 */
void lev_perm_decide(const struct lev_perm_input *in, const char *tool,
		     const struct lev_shellkeys *sk, const struct lev_grants *grants,
		     struct lev_perm_decision *out);

/*
 * Append a one-line account of D to OUT, e.g.
 *	[agent_tool_permissions.coder] shell = "deny"
 *	built-in default shell = "ask"
 *	--yolo (over built-in default shell = "ask")
 *	the line writes a file, so write_file's rule applies: [tool_permissions] write_file = "deny"
 * Returns 0 or -E2BIG.
 */
int lev_perm_describe(const struct lev_perm_decision *d, struct lev_buf *out);

/* ---- the write fence ---------------------------------------------------- */

/*
 * A shell line the key parser cannot fully analyse (sk->needs_fence: eval,
 * source, a shell running a file or its input, sh -c, a program name
 * expanded at run time, exec, an unreadable line, a write it cannot
 * locate) may hide a write the redirect gate never sees.  It runs only
 * inside a sandbox that keeps writes in the workdir (FENCED: kind
 * namespace with its mount namespace or Landlock in force, or container),
 * whatever approved it, --yolo included.  Returns LEV_ALLOW, or LEV_DENY
 * with the refusal text appended to WHY (may be NULL).  SK NULL allows.
 */
enum lev_verdict lev_perm_fence_check(const struct lev_shellkeys *sk, enum lev_sandbox_kind kind,
				      bool fenced, struct lev_buf *why);

/* ---- the redirect gate ------------------------------------------------- */


struct lev_redirect_decision {
	enum lev_verdict verdict;	/* LEV_ALLOW or LEV_DENY */
	char *target;			/* owned: the refused target as written (NULL on allow,
					 * or when the write cannot be located) */
	char *path;			/* owned: where the refused target resolves (the real
					 * path of its deepest existing part + the rest), or NULL */
	char *reason;			/* owned: the refusal text, NULL on allow */
};

void lev_redirect_decision_release(struct lev_redirect_decision *d);

/*
 * Check every literal write target of SK against the workdir open at WD_FD
 * (an O_PATH or O_DIRECTORY fd) whose real path is WD_REAL.  A relative
 * target resolves against the workdir through fsconfine (the kernel's own
 * resolution, symlinks and ".." included); an absolute one must lie under
 * WD_REAL; "~" and "~/..." use HOME (NULL: refused).  A target that does not
 * exist yet must have its deepest existing ancestor inside and no ".."
 * after it; a dangling symbolic link is refused.  A write that cannot be
 * located (sk->unlocatable_write) is refused.  SK NULL allows.
 *
 * The check reads the filesystem as it is before the line runs: a line
 * that first plants a symbolic link and then writes through it is the
 * sandbox's to stop (Landlock), not this gate's.
 *
 * Returns 0 with *out filled (release it), or a negative errno on an
 * internal failure (treat as deny).
 */
int lev_perm_redirect_check(int wd_fd, const char *wd_real, const char *home,
			    const struct lev_shellkeys *sk, struct lev_redirect_decision *out,
			    struct lev_err *err);

/*
 * For messages: where the absolute path ABS really leads - the real path of
 * its deepest existing ancestor (symlinks followed, /proc magic links not),
 * followed by the names that do not exist yet; a copy of ABS when not even
 * that can be read.  Caller frees.
 */
char *lev_perm_real_path(const char *abs);
