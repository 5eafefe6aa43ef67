/*
 * check.h - every gate for one hypothetical tool call, against the real
 * filesystem, without running it (`lev check`).
 *
 * The check builds what a run of the stage would build (the permission
 * input, the file tools' workdir and [read_paths], the stage's sandbox
 * settings, the taint gate) and puts the call to the one gate chain the
 * runtime uses (gatechain.h lev_gatechain_decide()): its verdict, gate,
 * rule and reason are the runtime's, word for word.  An ASK is what a run
 * would ask the person at the terminal (with nobody there, the run refuses
 * it with the record's text).
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
#include "liblev/run/gatechain.h"
#include "liblev/base/types.h"

#define LEV_CHECK_ARGS_MAX ((size_t)1 << 20)

struct lev_check_opts {
	const char *tool;		/* required, any spelling */
	const char *args_json;		/* the call's JSON object; NULL: {} */
	const char *workdir;		/* required: an existing directory */
	const char *stage;		/* NULL: the entry stage */
	enum lev_level taint;		/* the context's taint (LEV_PUBLIC: none) */
	enum lev_integrity integrity;	/* the context's integrity (LEV_TRUSTED: none) */
	char *const *untrusted_args;	/* --untrusted-arg NAME...: from untrusted text */
	bool yolo;
	bool yolo_flow;			/* --yolo-flow (or the config's yolo_allows_flow) */
	char *const *allow;		/* --allow TOOL...; may be NULL */
	const char *home;		/* NULL: lev_home_dir() */
	const char *policy_path;	/* the taint policy.toml; NULL: none */
	const char *rules_dir;		/* the Lua gate rules; NULL: none */
	enum lev_confine_mode confine;	/* LEV_CONFINE_AUTO (or _WALK, for tests) */
	bool no_terminal;		/* as a run with nobody to ask: ask_user_* not offered */
	const char *data_root;		/* the MCP approvals' (mcp-pins.h); NULL: from the environment */
	char *const *envp;		/* the stage's MCP servers' environment */
	const char *credentials_path;	/* their OAuth tokens (credentials.toml); NULL: none */
};

struct lev_check_result {
	enum lev_verdict decision;
	enum lev_gate_id gate;		/* the gate that decided (or approved) */
	char *reason;			/* owned, never NULL after success */
	char *rule;			/* owned: the rule within that gate, NULL if none */
	char *text;			/* owned: what the model would get when refused */
	char *host;			/* owned: a network tool's canonical target(s) */
	char *path;			/* owned: the resolved real path, when a path was involved */
	char **keys;			/* owned strv: a shell call's approval keys (NULL: none) */
	char **warnings;		/* owned strv: skipped safe-command entries ... */
	enum lev_integrity integrity;	/* the context's, as decided under */
	char **untrusted_args;		/* owned strv: the arguments the integrity gate saw marked */
};

void lev_check_result_release(struct lev_check_result *r);

/*
 * Run every gate for O against CFG and BP.  The MCP servers the stage names
 * are started as a run starts them (mcp-start.h), so their tools are known
 * under the run's names, held to the same approvals, and a server no
 * [[sources]] entry trusts makes the context untrusted.  Returns 0 with
 * *out filled, or LEV_EUSAGE for a call that cannot be checked (--args
 * that is not a JSON object, an unknown stage), or another negative code for a failure (the
 * workdir cannot be opened, a read_paths entry or the taint policy does
 * not load, an MCP server the stage names does not start).  Arguments that
 * do not fit the tool's schema are a deny at the schema gate, as at run
 * time.
 */
int lev_check_run(const struct lev_config *cfg, const struct lev_blueprint *bp,
		  const struct lev_check_opts *o, struct lev_check_result *out, struct lev_err *err);
