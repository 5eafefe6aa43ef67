/*
 * cmd.h - the CLI front end.  Each command lives in its own cmd_<name>.c,
 * parses its arguments, calls liblev, and prints.  Nothing in src/lev does
 * policy work itself.
 *
 * Exit codes shared by every command: 0 ok, 1 failed or denied, 2 usage.
 * Commands with more codes (check, sandbox exec, run) document them in
 * their usage text and in README.md.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "liblev/base/error.h"
#include "liblev/conf/config.h"

enum {
	LEV_EXIT_OK = 0,
	LEV_EXIT_FAIL = 1,
	LEV_EXIT_USAGE = 2,
};

/*
 * What a command needs set up, declared in its lev_cmds[] row (git's
 * RUN_SETUP).  main.c does the set-up and owns what it made: a command
 * neither loads nor frees any of it.
 */
enum lev_cmd_needs {
	CMD_NEEDS_CONFIG = 1 << 0,	/* ctx->cfg: the user's config.toml */
	CMD_NEEDS_DATA_ROOT = 1 << 1,	/* ctx->paths: the data root and lev's files under it */
	CMD_NEEDS_SANDBOX = 1 << 2,	/* ctx->oci_helper: the container fast path's helper */
};

/* Where lev's own files are (liblev/conf/datadir.h); each a fresh string. */
struct lev_data_paths {
	char *root;
	char *config;
	char *policy;
	char *rules;
	char *runs;
	char *credentials;
};

struct lev_ctx {
	const char *argv0;
	int verbose;
	const struct lev_cmd *cmd;	/* the command being run */
	/*
	 * Set up as cmd->needs asks.  CMD_NEEDS_SANDBOX is filled before the
	 * command runs (it cannot fail and prints nothing); the config and
	 * the data root on the command's first lev_setup(), after it parsed
	 * its arguments, so a usage error is reported before a broken config.
	 */
	struct lev_config cfg;
	struct lev_data_paths paths;
	char *oci_helper;		/* NULL when not found */
	struct lev_err err;		/* why lev_setup() failed */
	unsigned done;			/* the CMD_NEEDS_* set up so far */
};

struct lev_cmd {
	const char *name;
	int (*fn)(int argc, char **argv, struct lev_ctx *ctx);
	const char *summary;	/* one line, shown by `lev help` */
	const char *usage;	/* full usage text, shown by `lev help NAME` and `--help` */
	unsigned needs;		/* CMD_NEEDS_* */
};

extern const struct lev_cmd lev_cmds[];

const struct lev_cmd *lev_cmd_find(const char *name);

/*
 * Set up NEEDS (CMD_NEEDS_* the command's row declares; asking for more is
 * a bug and aborts), the config before the data root, each once.  0, or -1
 * after printing "lev: error: <why>"; the reason stays in ctx->err.
 */
int lev_setup(struct lev_ctx *ctx, unsigned needs);

/* Print the usage of NAME to F. */
void lev_cmd_usage(const char *name, FILE *f);

/* "lev NAME: <msg>" + the usage line, on stderr; returns LEV_EXIT_USAGE. */
int lev_usage_error(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "lev: error: <msg>" on stderr; returns LEV_EXIT_FAIL. */
int lev_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "lev: warning: <msg>" on stderr. */
void lev_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* True when ARGV holds -h or --help before any "--". */
bool lev_wants_help(int argc, char **argv);

/* The container fast path's helper binary, or NULL; the caller frees it. */
char *lev_find_oci_helper(void);

/* Commands (one file each). */
int cmd_help(int argc, char **argv, struct lev_ctx *ctx);
int cmd_version(int argc, char **argv, struct lev_ctx *ctx);
int cmd_sandbox(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_sandbox[];
int cmd_validate(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_validate[];
int cmd_list(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_list[];
int cmd_add(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_add[];
int cmd_remove(int argc, char **argv, struct lev_ctx *ctx);
int cmd_create(int argc, char **argv, struct lev_ctx *ctx);
int cmd_doctor(int argc, char **argv, struct lev_ctx *ctx);
int cmd_auth(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_auth[];
extern const char lev_usage_doctor[];
extern const char lev_usage_create[];
extern const char lev_usage_remove[];
int cmd_policy(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_policy[];
int cmd_check(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_check[];
int cmd_run(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_run[];
int cmd_daemon(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_daemon[];
/* Start a detached daemon unless one answers; QUIET: print nothing on success. */
int lev_daemon_start(bool quiet, unsigned idle_exit_secs);
/* The hidden command a run's worker process serves (liblev/daemon/worker.h). */
int cmd_worker(int argc, char **argv, struct lev_ctx *ctx);
int cmd_ps(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_ps[];
/*
 * Run R (a ps summary) as a row of lev ps: RUN AGENT STATUS STAGE ITER
 * TOOLS READS AGE, each cell fresh, one terminal-safe line (lev dash too).
 */
#define LEV_PS_NCOLS 8
void lev_ps_row(const json_t *r, char *row[LEV_PS_NCOLS]);
/* A worker or child K of a run (an entry of its "workers"), as the indented row under it. */
void lev_ps_worker_row(const json_t *k, char *row[LEV_PS_NCOLS]);
int cmd_respond(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_respond[];
int cmd_agent_client(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_agent_client[];
int cmd_result(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_result[];
int cmd_logs(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_logs[];
int cmd_cancel(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_cancel[];
extern const char lev_usage_kill[];
int cmd_stages(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_stages[];
int cmd_context(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_context[];
int cmd_models(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_models[];
int cmd_setup(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_setup[];
int cmd_pack(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_pack[];
int cmd_test(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_test[];
int cmd_tools(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_tools[];
int cmd_update(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_update[];
int cmd_approvals(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_approvals[];
int cmd_attach(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_attach[];
/* Follow daemon run RUN on this terminal (cmd_run.c); the exit code of lev attach. */
int lev_run_attach(const char *run, bool json);
int cmd_mcp(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_mcp[];
int cmd_pause(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_pause[];
int cmd_resume(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_resume[];
int cmd_msg(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_msg[];
int cmd_label(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_label[];
int cmd_serve(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_serve[];
int cmd_dash(int argc, char **argv, struct lev_ctx *ctx);
extern const char lev_usage_dash[];
/* Send REQ (consumed) to the daemon; 0 and *reply, or a message printed and LEV_EXIT_FAIL. */
int lev_daemon_call(json_t *req, json_t **reply);
/*
 * Every page of one of the daemon's lists (lev ps --all's runs, lev respond's
 * requests): REQ (borrowed) asked with "limit" PAGE and, after the first page,
 * "after" the "next" cursor the page before gave; EACH(reply, ud) for every
 * page as it comes (REPLY borrowed).  A cursor that does not move on
 * (LATER(next, after) false; AFTER is NULL on the first page) is the
 * daemon's error naming WHAT, never a loop.  LEV_EXIT_OK, or a message
 * printed and LEV_EXIT_FAIL.
 */
int lev_daemon_pages(const json_t *req, long page, const char *what,
		     bool (*later)(const char *next, const char *after),
		     void (*each)(json_t *reply, void *ud), void *ud);
