/*
 * ns-internal.h - what the namespace backend (sandbox-ns.c) shares with its
 * warm helper (ns-helper.c): the plan, its mount steps, and the child-side
 * steps both run.  Not for other modules.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "liblev/sandbox/landlock-rules.h"
#include "liblev/sandbox/sandbox-internal.h"

#define NSLOTS 16
#define SLOT_WORKDIR 0
#define SLOT_RESOLV 1
#define SLOT_DEV0 2

enum mop_kind {
	MOP_PRIVATE,	/* make the tree private, recursively */
	MOP_CLONE,	/* open_tree(CLONE) PATH into a slot */
	MOP_RO_ROOT,	/* read-only, nosuid, nodev, recursively, from / */
	MOP_TMPFS,	/* a fresh tmpfs (ARG: options) */
	MOP_MKDIRS,	/* mkdir -p inside a fresh tmpfs */
	MOP_MKFILE,	/* an empty file to bind onto */
	MOP_SYMLINK,	/* PATH -> ARG */
	MOP_ATTACH,	/* move_mount a slot onto PATH */
	MOP_DEVPTS,	/* a private devpts instance */
	MOP_PROC,	/* a fresh proc for the new PID namespace */
	MOP_WRITE,	/* write ARG to PATH */
	MOP_SETRO,	/* make the mount at PATH read-only */
	MOP_MASK_DIR,	/* an empty, unreadable, read-only directory over PATH */
	MOP_MASK_FILE,	/* an empty, unreadable, read-only file over PATH */
	MOP_BIND_SELF,	/* PATH bound onto itself (recursive): no longer renamed or removed */
	MOP_RO_SELF,	/* PATH bound onto itself read-only: neither written nor replaced */
};

struct mop {
	enum mop_kind kind;
	const char *path;
	const char *arg;
	int slot;
	bool recursive;
	bool optional;		/* a failure is ignored (the path may have gone) */
};

struct lev_sbx_nsplan {
	enum lev_sbx_mode mode;
	unsigned long clone_flags;
	struct mop *ops;
	size_t n_ops;
	size_t n_helper_ops;		/* warm: ops[0, n) the helper runs once, the rest each cell */
	struct lev_landlock_rule *rules;
	size_t n_rules;
	struct lev_landlock_spec ll;
	bool use_ll;
	bool use_sc;
	bool use_nnp;
	bool use_caps;
	bool use_rlimits;
	bool set_hostname;
	const struct lev_scfilter *sc;	/* borrowed from the sandbox */
	/* warm, with Landlock: the filter the helper installs once for all its
	 * cells (LEV_SCFILTER_CELLS), owned; cells then load none of their own */
	struct lev_scfilter sc_cells;
	bool use_sc_cells;
	char **strs;			/* owns the strings ops and rules point at */
	char **argv;
	char **envp;
	char **cands;
	char *cwd;
	struct lev_sandbox_limits limits;
	uid_t uid;
	gid_t gid;
	char *tmpdir;			/* PLAIN with layers: the private TMPDIR */
};

/* The descriptors a namespace child works with (-1: none). */
struct lev_sbx_childfds {
	int sync_rd;
	int report_wr;
	int status_wr;
	int in;
	int out;
	int err;
};

/* Build the plan; MAKE_TMPDIR creates the fallback's private TMPDIR. */
int lev_sbx_ns_build_plan(const struct lev_sandbox *sb, char *const *argv, char *const *envp,
			  const char *cwd, const struct lev_sandbox_limits *limits,
			  bool make_tmpdir, struct lev_sbx_nsplan **out, struct lev_err *err);

/* The command's environment: ENVP filtered, TMPDIR pointed at TMPDIR (when not NULL). Fresh. */
char **lev_sbx_ns_env(const struct lev_sandbox *sb, char *const *envp, const char *tmpdir);

/*
 * Split PL (a namespace plan) for the warm helper: its ops so far are the
 * helper's, and the steps every cell takes on top of them are appended (a
 * fresh /tmp with the workdir back in it when it lives there, a fresh
 * /dev/shm, a proc for the cell's PID namespace).
 */
void lev_sbx_ns_plan_cell(struct lev_sbx_nsplan *pl, const struct lev_sandbox *sb);

/*
 * Child side, async-signal-safe.  Run ops [FROM, TO) of PL: 0, or -errno
 * with *FAILED the index of the step that failed.
 */
int lev_sbx_ns_run_ops(const struct lev_sbx_nsplan *pl, size_t from, size_t to, int *failed);

/*
 * chdir to CWD, LIMITS as rlimits (NULL: not here, see below),
 * no_new_privs, Landlock (the prepared ruleset LL_FD when >= 0, else PL's
 * spec), capabilities, seccomp; a failure is reported on REPORT_FD.  0 or
 * -1.
 */
int lev_sbx_ns_fence(const struct lev_sbx_nsplan *pl, const char *cwd,
		     const struct lev_sandbox_limits *limits, int ll_fd, int report_fd);

/*
 * The part of the fence that does not depend on the command: no_new_privs,
 * Landlock (LL_FD as above), capabilities, seccomp, in that order.  0, or
 * -errno with *PHASE (enum lev_sbx_phase) and *IDX saying which step
 * failed.  A warm cell runs it before it waits for a request (the cell
 * that reads the request is already fenced), with CELL: the helper emptied
 * the bounding set, and installed PL's sc_cells when use_sc_cells (see
 * lev_sbx_ns_helper_lockdown()), so the cell loads no filter of its own.
 */
int lev_sbx_ns_lockdown(const struct lev_sbx_nsplan *pl, int ll_fd, bool cell, int *phase,
			int *idx);

/*
 * What a warm helper locks once for all its cells, after its own set-up:
 * the bounding set, and PL's sc_cells when use_sc_cells (no_new_privs
 * first).  0, or -errno with *PHASE as above.
 */
int lev_sbx_ns_helper_lockdown(const struct lev_sbx_nsplan *pl, int *phase);

/*
 * LIMITS as rlimits, when PL uses them; a failure is reported on REPORT_FD.
 * A warm cell applies them in the command's process, just before it execs,
 * not in the cell: nothing may allocate under the memory limit that lev's
 * own code (an AddressSanitizer build above all) could not live with.
 */
int lev_sbx_ns_rlimits(const struct lev_sbx_nsplan *pl, const struct lev_sandbox_limits *limits,
		       int report_fd);

/*
 * In the command's process: a new session, stdio from F, signal
 * dispositions and mask back to the defaults (unless RESET_SIGNALS is
 * false: a warm cell's command inherits the cell's, already reset), exec;
 * never returns.
 */
__attribute__((noreturn)) void lev_sbx_ns_exec(char *const *cands, char *const *argv,
					       char *const *envp,
					       const struct lev_sbx_childfds *f, bool reset_signals);

/* Describe the failed step R of PL ("cannot set up the sandbox: ..."). */
void lev_sbx_ns_explain_plan(const struct lev_sbx_nsplan *pl, const char *cwd, const char *argv0,
			     const struct lev_sbx_report *r, struct lev_err *err);
