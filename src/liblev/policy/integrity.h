/*
 * integrity.h - integrity labels in policy.toml, and the integrity gate:
 * may text the attacker could have written decide this call?
 *
 *	[integrity]
 *	trusted   = ["notes/ *.md"]        # files whose contents are trusted
 *	untrusted = ["vendor/ *", "/srv/inbox/ *"]   # files that are not
 *	workdir   = "untrusted"           # every file read is untrusted (a cloned repo)
 *	protected = ["bank/orders.csv"]   # writes and edits here are consequential
 *
 *	[[integrity.allow]]               # a consequential call allowed in an untrusted context
 *	tool = "http_post"
 *	target = "chat.example.com"       # optional: host pattern (target.h) or path glob
 *	args_from_trusted = true          # optional: only when no argument came from
 *	                                  # untrusted text (provenance.h)
 *
 *	[[sources]]                       # labels of a source's results
 *	host = "chat.example.com"         # or path = "glob", or server = "mcp-name"
 *	sensitivity = "private"           # optional
 *	integrity = "trusted"             # optional
 *
 * (Read "notes/ *.md" without the space: a C comment cannot hold it.)
 * Globs are fnmatch(3) patterns without FNM_PATHNAME (`*` crosses `/`): a
 * relative glob is matched against the workdir-relative path, an absolute
 * one against the real (symlink-resolved) path.
 *
 * The gate, for one call, in order:
 *   1. taint tracking off                      -> allowed  (integrity_disabled)
 *   2. the call is not consequential           -> allowed  (not_consequential)
 *   3. the live context is trusted             -> allowed  (trusted_context)
 *   4. an [[integrity.allow]] entry matches    -> allowed  (integrity allow #N)
 *   5. a Lua rule returns true                 -> allowed  (rule NAME)
 *   6. "allow for this run" answered earlier   -> allowed  (user_run)
 *   7. --yolo with yolo_allows_flow            -> allowed  (yolo)
 *   8. otherwise                               -> needs the user (none)
 * A protected file is consequential whatever the tool, and only an entry
 * whose `target` matches the file covers it (a bare `tool` entry does not).
 *
 * Ownership: a `struct lev_integrity_policy` owns its strings; a decision
 * owns its strings (lev_integrity_decision_release()).  Nothing prints.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"
#include "liblev/base/types.h"
#include "liblev/policy/taintgate.h"

#define LEV_INTEGRITY_GLOBS_MAX 1024
#define LEV_INTEGRITY_ALLOW_MAX 4096
#define LEV_SOURCES_MAX 1024

struct lev_integrity_allow {
	char *tool;
	char *target;		/* a host pattern (canonical) or a path glob, or NULL */
	bool target_is_path;	/* TARGET holds a '/' or starts with '.' or '*': a path glob */
	bool args_from_trusted;	/* = true, or a list (TRUSTED_ARGS) */
	char **trusted_args;	/* = ["url", "body"]: only these must not be marked (strv) */
	unsigned line;
};

struct lev_source_label {
	char *host;		/* canonical host pattern, or NULL */
	char *path;		/* path glob, or NULL */
	char *server;		/* MCP server name, or NULL */
	bool has_sensitivity, has_integrity;
	enum lev_level sensitivity;
	enum lev_integrity integrity;
	unsigned line;
};

struct lev_integrity_policy {
	char **trusted;		/* path globs (strv) */
	char **untrusted;
	char **protected_files;
	bool workdir_untrusted;
	/* writes = "protected": a file tool's write or edit is consequential only
	 * on a protected file; "all" (the default): every one is */
	bool writes_protected_only;
	struct lev_integrity_allow *allow;
	size_t n_allow;
	struct lev_source_label *sources;
	size_t n_sources;
};

struct lev_toml_table;
struct lev_tomlval_ctx;

/*
 * Read [integrity] and [[sources]] of policy.toml's ROOT into *out (always
 * set on success, empty when neither is there).  Errors name FILE:LINE:COL.
 */
int lev_integrity_policy_parse(const struct lev_tomlval_ctx *c, const struct lev_toml_table *root,
			       struct lev_integrity_policy **out, struct lev_err *err);
/* Accepts NULL; returns NULL. */
struct lev_integrity_policy *lev_integrity_policy_free(struct lev_integrity_policy *p);

/* True when a glob of GLOBS matches REL (workdir-relative, may be NULL) or ABS (may be NULL). */
bool lev_integrity_globs_match(char *const *globs, const char *rel, const char *abs);

/*
 * The integrity of a file read at real path ABS (REL: relative to the
 * workdir, NULL outside it): `untrusted` globs win over `trusted` ones,
 * then `workdir = "untrusted"`, else trusted.  P NULL: trusted.
 */
enum lev_integrity lev_integrity_of_file(const struct lev_integrity_policy *p, const char *rel,
					 const char *abs);

/*
 * The [[sources]] entry for a result from HOST (canonical), file ABS/REL or
 * MCP SERVER (any may be NULL), or NULL: the first that matches.
 */
const struct lev_source_label *lev_integrity_source(const struct lev_integrity_policy *p,
						    const char *host, const char *rel,
						    const char *abs, const char *server);

/* Does TOOL (canonical) with this DESC/kind change state or leave the machine? */
struct lev_tool_desc;
bool lev_integrity_tool_consequential(const struct lev_tool_desc *desc, bool runtime_mcp,
				      unsigned touches);

enum lev_integrity_source {
	LEV_INTEG_SRC_DISABLED,		/* "integrity_disabled" */
	LEV_INTEG_SRC_NOT_CONSEQUENTIAL,	/* "not_consequential" */
	LEV_INTEG_SRC_TRUSTED,		/* "trusted_context" */
	LEV_INTEG_SRC_ALLOW,		/* "allowlist" */
	LEV_INTEG_SRC_RULE,		/* "rule" */
	LEV_INTEG_SRC_YOLO,		/* "yolo" */
	LEV_INTEG_SRC_NONE,		/* "none": needs the user */
	LEV_INTEG_SRC_USER_ONCE,	/* "user_once" */
	LEV_INTEG_SRC_USER_RUN,		/* "user_run" */
	LEV_INTEG_SRC_USER_DENY,	/* "user_deny" */
	LEV_INTEG_SRC_NO_ANSWER,	/* "no_answer" */
	_LEV_INTEG_SRC_MAX,
};

const char *lev_integrity_source_name(enum lev_integrity_source s);

struct lev_integrity_call {
	const char *tool;		/* canonical */
	const struct json_t *args;	/* the call's arguments (for rules), or NULL */
	bool consequential;		/* the tool is (lev_integrity_tool_consequential()) */
	enum lev_integrity integrity;	/* of the live context */
	enum lev_level taint;		/* for the rules */
	char *const *targets;		/* canonical host/recipient targets (strv), or NULL */
	const char *path_rel;		/* a file tool's path inside the workdir, or NULL */
	const char *path_abs;		/* ... its real path, or NULL */
	char *const *untrusted_args;	/* argument names from untrusted text (strv), or NULL */
};

struct lev_integrity_decision {
	enum lev_gate_result result;
	enum lev_integrity_source source;
	bool consequential;		/* the call, protected files included */
	bool protected_file;		/* the call writes a protected file */
	enum lev_integrity integrity;
	size_t rule_index;		/* allowlist: 1-based */
	unsigned rule_line;
	char *rule_name;		/* Lua rule: file stem */
	char **diags;			/* rule failures (strv) */
};

void lev_integrity_decision_release(struct lev_integrity_decision *d);

/*
 * Decide CALL with G's policy and rules (G may be NULL: no policy, no rules,
 * disabled).  Always fills *out.
 */
void lev_integrity_check(struct lev_gate *g, const struct lev_integrity_call *call,
			 struct lev_integrity_decision *out);

/* Record the user's answer (like lev_gate_answer()); -EINVAL when none was needed. */
int lev_integrity_answer(struct lev_gate *g, const char *tool, struct lev_integrity_decision *d,
			 enum lev_gate_answer a);

/* "'http_post' is consequential and the context holds untrusted content" and the like. */
int lev_integrity_describe(const char *tool, const struct lev_integrity_decision *d,
			   struct lev_buf *out);
