/*
 * policy.h - the taint policy file, `<data root>/policy.toml`.
 *
 *	[[allowlist]]
 *	tool            = "send_email"        # the tool name as dispatched
 *	to              = ["*@example.com"]   # target patterns (target.h); optional
 *	channel         = ["#team-standup"]   # more patterns; optional
 *	max_sensitivity = "internal"          # required: public | internal | private
 *
 *	[mcp_overrides."github".tools]        # nested shape: key "github.create_issue"
 *	create_issue = { sensitivity = "private", direction = "outbound",
 *	                 clearance = "internal", target = "repo" }
 *	[mcp_overrides."github.list_issues"]  # flat shape, accepted too
 *	direction = "inbound"
 *	consequential = false                 # the integrity gate's (docs/integrity.md)
 *
 * An allowlist rule matches a call when the tool is the same, the taint is
 * at most max_sensitivity, and either the rule lists no patterns at all, or
 * the call has at least one target and EVERY target matches one of the
 * rule's `to`/`channel` patterns.  Rules are tried in file order; the first
 * match wins and is reported by its 1-based index.
 *
 * A missing or invalid max_sensitivity, a bad pattern, a wrong type or an
 * invalid level or direction is an error naming FILE:LINE:COL: a policy
 * never fails open.  Unknown keys are warnings (collected, never printed).
 *
 * An override names a tool "server.tool"; it also applies to the dispatched
 * MCP spelling "server__tool".  Each field it sets replaces the built-in
 * one; `target` declares which argument holds the call's target.
 *
 * Leviath's policy.toml (lev_policy_merge()) never loosens lev's: a call is
 * classified under each file on its own and the stricter value of each
 * field is kept (lev_policy_classify()).
 *
 * Ownership: a `struct lev_policy` owns everything in it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "liblev/base/buf.h"
#include "liblev/base/error.h"
#include "liblev/policy/taint.h"
#include "liblev/base/types.h"

#define LEV_POLICY_RULES_MAX 4096
#define LEV_POLICY_OVERRIDES_MAX 4096
#define LEV_POLICY_TOOL_MAX 256

struct lev_allow_rule {
	char *tool;
	char **to;		/* canonical patterns (strv; NULL: none) */
	char **channel;
	enum lev_level max_sensitivity;
	unsigned line;		/* where the [[allowlist]] table starts */
	unsigned source;	/* 0: lev's policy.toml, 1: Leviath's (lev_policy_merge()) */
	char *norm;		/* the tool name normalised for comparison */
	uint64_t tool_hash;	/* of NORM */
};

struct lev_tool_override {
	char *name;		/* "server.tool" (or a plain tool name) */
	char *alt_name;		/* "server__tool", or NULL */
	char *norm;		/* NAME normalised for comparison */
	bool has_sensitivity, has_direction, has_clearance;
	enum lev_level sensitivity;
	enum lev_direction direction;
	enum lev_level clearance;
	char *target;		/* declared target argument, or NULL */
	bool has_consequential;	/* consequential = true|false (MCP and script tools only) */
	bool consequential;
	unsigned consequential_line, consequential_col;	/* where it is set */
	unsigned line;
	unsigned source;	/* as in struct lev_allow_rule */
};

struct lev_policy_index;

struct lev_policy {
	char *file;		/* the name used in messages */
	struct lev_allow_rule *rules;
	size_t n_rules;
	struct lev_tool_override *overrides;
	size_t n_overrides;
	char **warnings;	/* "FILE:LINE: ..." (strv) */
	struct lev_policy_index *index;	/* derived from RULES by lev_policy_parse() */
	struct lev_integrity_policy *integrity;	/* [integrity], [[sources]] (integrity.h) */
	unsigned integrity_line;	/* where [integrity] or [[sources]] starts; 0: none */
	char *also_file;	/* Leviath's policy.toml merged in (source 1), or NULL */
	/*
	 * Leviath's overrides, kept apart (its rules are in RULES, source 1):
	 * a call is classified under them on their own, never merged by key,
	 * so that an entry of theirs (a tool's) never replaces one of ours (its
	 * server's).  OVERRIDES above are lev's alone.  NULL: none.
	 */
	struct lev_policy *leviath;
};

/*
 * Leviath's Rhai gate rules (RHAI_DIR/\*.rhai, beside its policy.toml) are
 * not run.  One finding per file, sorted: "PATH: ..." naming its Lua
 * equivalent, LUA_DIR/NAME.lua (docs/taint.md#lua-rules), and whether it
 * exists.  A fresh strv, NULL when there are none (or no directory).
 */
char **lev_policy_rhai_findings(const char *rhai_dir, const char *lua_dir);

/*
 * Merge THEIRS, Leviath's policy.toml (named by its file), into P, the
 * stricter winning everywhere, and take THEIRS (freed on error too):
 *   - allowlist: a call is allowed only when no file that has rules for
 *     its tool refuses it: where both files have rules for a tool, a rule
 *     of each must match (so a lower max_sensitivity wins); a file with no
 *     rule for the tool has no say;
 *   - overrides: kept apart in P->leviath; lev_policy_classify() classifies
 *     a call under each file (its server's entry, then its own, in each)
 *     and keeps the higher sensitivity, the more outbound direction, the
 *     lower clearance; a target argument only THEIRS declares is used, one
 *     that differs from P's keeps P's, with a warning;
 *   - [integrity], [[sources]] and `consequential` are lev's alone: in
 *     THEIRS they are an error naming FILE:LINE:COL (a `consequential =
 *     false` there would let a tool past the integrity gate).
 * Each rule and override keeps its source for messages.  On error P is
 * unchanged.
 */
int lev_policy_merge(struct lev_policy *p, struct lev_policy *theirs, struct lev_err *err);


/* P's [integrity] and [[sources]] (NULL: none). */
const struct lev_integrity_policy *lev_policy_integrity(const struct lev_policy *p);

/*
 * Parse LEN bytes of policy text; NAME is used in messages.  On success
 * *out owns the policy (lev_policy_free()).
 */
int lev_policy_parse(const char *buf, size_t len, const char *name, struct lev_policy **out,
		     struct lev_err *err);

/*
 * Load the policy at PATH.  A missing file is an empty policy.  A file that
 * group or others may write, or that someone else owns, is refused.  When
 * STAMP_OUT is not NULL it gets the file's identity (see below).
 */
struct lev_file_stamp {
	bool exists;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

int lev_policy_load(const char *path, struct lev_policy **out, struct lev_file_stamp *stamp_out,
		    struct lev_err *err);

/*
 * lev_policy_load() of PATH, then of LEVIATH_PATH (NULL: none; missing:
 * nothing to merge) merged in; STAMP_OUT / LEVIATH_STAMP_OUT (may be
 * NULL) get each file's identity.  An error names the file it is in.
 */
int lev_policy_load_both(const char *path, const char *leviath_path, struct lev_policy **out,
			 struct lev_file_stamp *stamp_out, struct lev_file_stamp *leviath_stamp_out,
			 struct lev_err *err);

/* Accepts NULL; returns NULL. */
struct lev_policy *lev_policy_free(struct lev_policy *p);

/* Rebuild P's rule index after its rules changed (lev_policy_tighten()). */
void lev_policy_reindex(struct lev_policy *p);

/* The empty policy (no rules, no overrides). */
struct lev_policy *lev_policy_new_empty(const char *name);

/* stat() PATH into *out (exists = false when it is missing). */
int lev_file_stamp_get(const char *path, struct lev_file_stamp *out);
bool lev_file_stamp_equal(const struct lev_file_stamp *a, const struct lev_file_stamp *b);

/*
 * For an MCP tool "server__tool": the override of the whole server
 * ([mcp_overrides."server"] with fields directly inside), or NULL.
 * lev_policy_classify() applies it first, then the tool's own.
 */
const struct lev_tool_override *lev_policy_server_override(const struct lev_policy *p,
							   const char *tool);

/* The same tool: equal canonical names, or "server.tool" vs "server__tool". */
bool lev_policy_tool_same(const char *a, const char *b);

/*
 * Does RULE allow a call to TOOL with the canonical TARGETS (strv; NULL:
 * none or unusable) at taint TAINT?
 */
bool lev_allow_rule_matches(const struct lev_allow_rule *rule, const char *tool,
			    char *const *targets, enum lev_level taint);

/*
 * The index (0-based) of the first matching rule, or -1.  Uses the policy's
 * index (rules are looked up by tool and by the target's exact form,
 * domain suffixes and mail domain), so the cost does not grow with rules
 * that cannot match.
 */
int lev_policy_match(const struct lev_policy *p, const char *tool, char *const *targets,
		     enum lev_level taint);
/* The same by trying every rule in order (the reference the index must agree with). */
int lev_policy_match_linear(const struct lev_policy *p, const char *tool, char *const *targets,
			    enum lev_level taint);

/* The override for TOOL, or NULL. */
const struct lev_tool_override *lev_policy_override_find(const struct lev_policy *p,
							 const char *tool);

/*
 * Is the run-time tool TOOL (an MCP or script tool) consequential for the
 * integrity gate?  Its own override's `consequential`, else its server's,
 * else DFLT.  A built-in tool is always DFLT (the tool table decides).
 */
bool lev_policy_consequential(const struct lev_policy *p, const char *tool, bool dflt);

/*
 * The classification of TOOL: the built-in one with P's overrides applied
 * (its server's, then its own), and, when Leviath's policy was merged in,
 * the stricter per field of that and the same under Leviath's overrides
 * alone (P may be NULL).
 */
void lev_policy_classify(const struct lev_policy *p, const char *tool, struct lev_tool_class *out);

/*
 * The TOML text of a new allowlist rule.  TOOL must be 1..LEV_POLICY_TOOL_MAX
 * printable ASCII bytes; PATTERN (NULL: none) must be a valid pattern and
 * is written in canonical form.
 */
int lev_policy_rule_text(const char *tool, const char *pattern, enum lev_level max,
			 struct lev_buf *out, struct lev_err *err);

/*
 * Append a rule to the policy file at PATH without touching anything else
 * in it: the new [[allowlist]] block is added to the end of the original
 * bytes, the result is parsed to check that it holds exactly one more rule
 * and that rule is the one asked for, and the file is replaced atomically
 * (temporary file, fsync, rename) under an exclusive lock on its directory.
 * The directory is created (0700) when missing, the file 0600 when new;
 * an existing file keeps its mode.  A policy file that does not parse is
 * left alone and the error returned.  *index_out (optional) gets the new
 * rule's 1-based index.
 */
int lev_policy_append_rule(const char *path, const char *tool, const char *pattern,
			   enum lev_level max, size_t *index_out, struct lev_err *err);
