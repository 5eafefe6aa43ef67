/*
 * check.h - every gate for one hypothetical tool call, against the real
 * filesystem, without running it (`lev check`).
 *
 * The gates, in the order the runtime (agent.c, docs/run.md) meets them:
 *   offered     the tool is one lev provides and the stage lists it in
 *               available_tools
 *   schema      the arguments match the tool's JSON schema (argcheck.h)
 *   redirect    a shell line's write redirects stay inside the workdir
 *               (perm.h lev_perm_redirect_check()); not lifted by --yolo
 *   permission  perm.h: built-in default, the user's ceiling, the
 *               blueprint, --allow / --yolo, the write clamp, safe lists
 *   workdir / read_paths
 *               the file tools' own decision (tools-fs.h lev_fs_check_call()),
 *               word for word the refusal the tool would give
 *   network     a network tool in a stage whose sandbox has network = false
 *   taint       taintgate.h, for outbound tools, under the given taint
 * The answer is the first gate that denies; else the first that asks;
 * else allow (gate "none").  The check is as strict as the runtime: it
 * runs the same functions on the same inputs.  (At run time the file
 * tools decide when they run, after the taint gate; a refusal is a refusal
 * either way, so `lev check` reports it in gate order.)
 *
 * Ownership: a result owns its strings; release it with
 * lev_check_result_release().  The library never prints.
 */
#pragma once

#include <stdbool.h>

#include "liblev/conf/blueprint.h"
#include "liblev/conf/config.h"
#include "liblev/base/error.h"
#include "liblev/policy/fsconfine.h"
#include "liblev/base/types.h"

#define LEV_CHECK_ARGS_MAX ((size_t)1 << 20)

/* In the order the runtime meets them. */
enum lev_check_gate {
	LEV_CHECK_GATE_NONE,
	LEV_CHECK_GATE_OFFERED,
	LEV_CHECK_GATE_SCHEMA,
	LEV_CHECK_GATE_REDIRECT,
	LEV_CHECK_GATE_PERMISSION,
	LEV_CHECK_GATE_WORKDIR,
	LEV_CHECK_GATE_READ_PATHS,
	LEV_CHECK_GATE_NETWORK,
	LEV_CHECK_GATE_TAINT,
	_LEV_CHECK_GATE_MAX,
};

/* "none", "offered", "schema", "redirect", "permission", "workdir", "read_paths",
 * "network", "taint". */
const char *lev_check_gate_name(enum lev_check_gate g);

struct lev_check_opts {
	const char *tool;		/* required, any spelling */
	const char *args_json;		/* the call's JSON object; NULL: {} */
	const char *workdir;		/* required: an existing directory */
	const char *stage;		/* NULL: the entry stage */
	enum lev_level taint;		/* the context's taint (LEV_PUBLIC: none) */
	bool yolo;
	char *const *allow;		/* --allow TOOL...; may be NULL */
	const char *home;		/* NULL: lev_home_dir() */
	const char *policy_path;	/* the taint policy.toml; NULL: none */
	const char *rules_dir;		/* the Lua gate rules; NULL: none */
	enum lev_confine_mode confine;	/* LEV_CONFINE_AUTO (or _WALK, for tests) */
};

struct lev_check_result {
	enum lev_verdict decision;
	enum lev_check_gate gate;	/* the gate that decided */
	char *reason;			/* owned, never NULL after success */
	char *rule;			/* owned: the permission rule in force (or the taint
					 * gate's source), NULL if none */
	char *path;			/* owned: the resolved real path, when a path was involved */
	char **keys;			/* owned strv: a shell call's approval keys (NULL: none) */
	char **warnings;		/* owned strv: skipped safe-command entries ... */
};

void lev_check_result_release(struct lev_check_result *r);

/*
 * Run every gate for O against CFG and BP.  Returns 0 with *out filled, or
 * LEV_EUSAGE for a call that cannot be checked (--args that is not a JSON
 * object, an unknown stage), or another negative code for a failure (the
 * workdir cannot be opened, a read_paths entry or the taint policy does
 * not load).  Arguments that do not fit the tool's schema are a deny at
 * the schema gate, as at run time.
 */
int lev_check_run(const struct lev_config *cfg, const struct lev_blueprint *bp,
		  const struct lev_check_opts *o, struct lev_check_result *out, struct lev_err *err);
