/*
 * rules.h - Lua 5.4 gate rules, the `.lua` files in `<data root>/rules/`.
 *
 * A rule is a Lua chunk evaluated with four read-only globals:
 *
 *	tool	the tool name as dispatched (string)
 *	target	one canonical target (target.h), or nil when the call has none
 *	taint	"public", "internal" or "private"
 *	args	the call's JSON arguments as a read-only table (nested tables too)
 *
 * and a table `call` with the same and more: call.tool, call.target,
 * call.taint, call.args, call.integrity ("trusted"/"untrusted" of the live
 * context, nil when the caller did not say), call.consequential (bool),
 * call.untrusted_args (a list of the argument names whose value occurs
 * only in untrusted content, provenance.h),
 * and returning true to allow the call.  A rule that returns nil abstains
 * (no match, reported as not-boolean, as any other non-boolean).  A call with several targets is
 * allowed only when the rule returns true for every one of them (it is run
 * once per target).  Rules are only consulted for calls the gate would
 * block, so a rule can only allow what would otherwise go to the user.
 *
 * The sandbox (one lua_State per rule set):
 *   - only the base, string, table and math libraries, without print, warn,
 *     load, loadfile, dofile, require, collectgarbage, rawset and
 *     string.dump; no io, os, debug, package or coroutine; xpcall calls its
 *     handler after unwinding (a message handler would run with the count
 *     hook disabled);
 *   - rule files are loaded as text only (binary chunks are refused);
 *   - each evaluation gets a fresh environment whose metatable refuses new
 *     globals; library tables, the string metatable and `args` are
 *     read-only proxies, and setmetatable refuses __gc;
 *   - an instruction budget (count hook) and a wall-clock deadline, with C
 *     library calls charged by the size of their work (string.rep, pattern
 *     matching, table.move, ...) so a single call cannot outrun the budget;
 *     patterns whose worst case is too expensive for their subject are
 *     refused;
 *   - a memory cap enforced by the allocator.
 * An error, a timeout, an exhausted budget or memory cap, or a result that
 * is not a boolean counts as "no match" and is reported as a diagnostic.
 * The library never prints.
 *
 * Rules are tried in file-name order (bytewise); the first allowing rule
 * wins and is named by its file stem.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/base/types.h"

struct json_t;
struct lev_rules;

struct lev_rules_limits {
	uint64_t instructions;	/* per evaluation of one rule for one target */
	uint64_t wall_ns;	/* per evaluation */
	size_t memory;		/* for the whole Lua state, bytes */
};

#define LEV_RULES_DEFAULT_INSTRUCTIONS 1000000ULL
/* A backstop: the instruction budget (about 5-10 ms of work) normally ends a rule first. */
#define LEV_RULES_DEFAULT_WALL_NS (250ULL * 1000 * 1000)
#define LEV_RULES_DEFAULT_MEMORY ((size_t)16 << 20)
#define LEV_RULES_MAX 256
#define LEV_RULES_FILE_MAX ((size_t)256 << 10)
#define LEV_RULES_NAME_MAX 64

enum lev_rule_outcome {
	LEV_RULE_FALSE,		/* returned false: no match */
	LEV_RULE_TRUE,		/* returned true: allow */
	LEV_RULE_ERROR,		/* raised an error */
	LEV_RULE_BUDGET,	/* ran out of instructions or time */
	LEV_RULE_MEMORY,	/* hit the memory cap */
	LEV_RULE_NOT_BOOLEAN,	/* returned something other than a boolean */
	LEV_RULE_BAD_ARGS,	/* the arguments could not be given to Lua */
};

/* "false", "true", "error", "budget", "memory", "not-boolean", "bad-args". */
const char *lev_rule_outcome_name(enum lev_rule_outcome o);

/* An empty rule set.  LIMITS may be NULL (the defaults). */
struct lev_rules *lev_rules_new(const struct lev_rules_limits *limits);
/* Accepts NULL; returns NULL. */
struct lev_rules *lev_rules_free(struct lev_rules *r);

/*
 * Compile the rule NAME from LEN bytes of Lua source.  A syntax error or a
 * binary chunk fails with LEV_EPARSE (the rule is not added).
 */
int lev_rules_add_source(struct lev_rules *r, const char *name, const char *file, const char *src,
			 size_t len, struct lev_err *err);

/*
 * Load every `*.lua` file of DIR (a missing directory is an empty set).
 * Files that cannot be used (unreadable, too big, writable by others, a
 * syntax error, an invalid name) are skipped and described in the load
 * diagnostics; only a directory that cannot be listed or that group or
 * others may write is an error.  On success *out owns the set.
 */
int lev_rules_load_dir(const char *dir, const struct lev_rules_limits *limits,
		       struct lev_rules **out, struct lev_err *err);

/* True when DIR or a rule file in it changed since R was loaded from it. */
bool lev_rules_changed(const struct lev_rules *r);
/* The directory R was loaded from (NULL for a set built in memory). */
const char *lev_rules_dir(const struct lev_rules *r);

size_t lev_rules_count(const struct lev_rules *r);
const char *lev_rules_name(const struct lev_rules *r, size_t i);
/* The file the rule came from ("" when added from memory). */
const char *lev_rules_file(const struct lev_rules *r, size_t i);
/* "FILE: problem" for each file that was skipped (strv; may be NULL). */
char *const *lev_rules_load_errors(const struct lev_rules *r);

struct lev_rule_input {
	const char *tool;
	char *const *targets;		/* canonical targets (strv; NULL: none) */
	enum lev_level taint;
	const struct json_t *args;	/* JSON object, or NULL for an empty table */
	/* the integrity side (call.integrity, call.consequential, call.untrusted_args) */
	bool has_integrity;		/* false: call.integrity is nil */
	enum lev_integrity integrity;	/* of the live context */
	bool consequential;
	char *const *untrusted_args;	/* argument names from untrusted text (strv) */
};

/*
 * Evaluate rule I on IN.  *out gets the outcome; *msg_out (optional, caller
 * frees, NULL when there is nothing to say) a one-line explanation for the
 * outcomes other than true and false.
 */
int lev_rules_eval(struct lev_rules *r, size_t i, const struct lev_rule_input *in,
		   enum lev_rule_outcome *out, char **msg_out, struct lev_err *err);

/*
 * Evaluate the rules in order and return the index of the first one that
 * allows IN, or -1.  Every rule that failed (error, budget, memory,
 * non-boolean) adds "NAME: message" to *diags (a strv; may stay NULL).
 */
int lev_rules_first_allowing(struct lev_rules *r, const struct lev_rule_input *in, char ***diags);
