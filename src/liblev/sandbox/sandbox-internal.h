/*
 * sandbox-internal.h - what sandbox.c, sandbox-ns.c and sandbox-oci.c share.
 * Not for other modules: they use sandbox.h.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "liblev/conf/ownfiles.h"
#include "liblev/sandbox/scfilter.h"
#include "liblev/sandbox/sandbox.h"

/* How a spawned command is driven. */
enum lev_sbx_mode {
	LEV_SBX_NS,		/* PID 1 of new namespaces forks the command; status via a pipe */
	LEV_SBX_PLAIN,		/* the command is our direct child in its own session */
	LEV_SBX_OCI_FAST,	/* a helper inside the container runs it; status via a socket */
	LEV_SBX_OCI_EXEC,	/* `<engine> exec` is our direct child */
	LEV_SBX_NS_WARM,	/* a cell of the warm helper runs it; status via a pipe */
};

struct lev_sbx_ct;		/* a warm container (sandbox-oci.c) */
struct lev_sbx_warm;		/* a warm namespace helper (ns-helper.c) */

struct lev_sandbox {
	struct lev_sandbox_spec spec;	/* the resolved spec, copied */
	enum lev_sandbox_kind kind;	/* what runs: none after a warn fallback */
	unsigned wanted;		/* layers the kind asks for */
	unsigned layers;		/* layers in force */
	unsigned missing;		/* wanted - layers */
	char *degraded;			/* why layers are missing, or NULL */

	char *workdir;			/* realpath of opts->workdir */
	char *home;			/* the user's home (realpath when it exists) */
	char **masks;			/* absolute real paths to hide, sorted, no duplicates */
	struct lev_ownfiles own;	/* lev's own files, masked (ownfiles.h) */
	char **env_withhold;		/* owned copies for env */
	char **env_allow;
	struct lev_envfilter env;
	struct lev_sandbox_limits limits;
	uid_t uid;
	gid_t gid;

	/* namespace and plain backends */
	int ll_abi;			/* > 0 when Landlock is used */
	bool have_sc;
	struct lev_scfilter sc;
	char *resolv_target;		/* /etc/resolv.conf's target when it lives under /run */
	struct lev_sbx_fence *fence;	/* kind none, two of them: the host fence's read rules, built on
					 * first use: [0] everywhere but the masks, [1] the
					 * confined reads of a pre-approved line */
	char **writable;		/* [sandbox] writable, expanded (absolute) */
	char **read_paths;		/* opts->read_paths' trees, expanded */
	struct lev_sbx_warm *warm;	/* namespace: the warm helper, started by the first command */
	char *cold;			/* namespace: why commands start cold, or NULL */

	/* container backend */
	struct lev_sandbox_pool *pool;
	bool own_pool;
	struct lev_sbx_ct *ct;		/* borrowed from the pool */
	char **engine_args;
	char *oci_helper;
	char *path_env;
	bool plan_only;			/* opts->plan_only: describe, never start or run */
};

/*
 * The read rules of the kind-none host fence: walking / and the home
 * directory around the masks costs a few hundred system calls, so they are
 * planned once per sandbox and reused by every fenced spawn.
 */
/*
 * The files under WORKDIR that GLOBS ([integrity] protected) name, into a
 * fresh *OUT (NULL: none).  LEV_EUNSUPP past 50,000 entries looked at.
 */
int lev_sbx_protected_files(const char *workdir, char *const *globs, char ***out,
			    struct lev_err *err);

struct lev_sbx_fence {
	bool ready;
	char *path_env;		/* [1]: the PATH its directories were read from */
	char **paths;
	uint64_t *access;
	size_t n;
};

/* A setup report from a child: which step failed, and how. */
enum lev_sbx_phase {
	LEV_SBX_PH_NONE,
	LEV_SBX_PH_SYNC,		/* the parent went away before the maps were written */
	LEV_SBX_PH_MOUNT,		/* index: the mount op */
	LEV_SBX_PH_HOSTNAME,
	LEV_SBX_PH_CHDIR,
	LEV_SBX_PH_RLIMIT,		/* index: the resource */
	LEV_SBX_PH_NNP,
	LEV_SBX_PH_LANDLOCK,		/* index: the rule, or -1 */
	LEV_SBX_PH_CAPS,
	LEV_SBX_PH_SECCOMP,
	LEV_SBX_PH_FORK,
	LEV_SBX_PH_STDIO,
	LEV_SBX_PH_EXEC,		/* not a setup failure: the command cannot run */
	LEV_SBX_PH_HELPER,		/* the warm helper went away before a cell took the command */
};

struct lev_sbx_report {
	uint32_t magic;
	int32_t phase;
	int32_t index;
	int32_t err;			/* errno */
};

#define LEV_SBX_REPORT_MAGIC 0x4c455652u	/* "LEVR" */

struct lev_sbx_nsplan;

struct lev_sandbox_proc {
	struct lev_sandbox *sb;
	enum lev_sbx_mode mode;
	pid_t pid;			/* our child (init, the command, or the engine client) */
	int pidfd;
	int out_fd;			/* read ends of the command's stdout/stderr */
	int err_fd;
	int report_fd;			/* setup reports (read end), -1 when closed */
	int status_fd;			/* NS: init writes the command's wait status */
	int sock;			/* OCI_FAST: the helper connection; NS_WARM: the cell's pidfd comes here */
	int fwd_out;			/* where to copy stdout, -1: capture */
	int fwd_err;
	int cancel_fd;
	uint64_t timeout_ms;
	uint64_t output_max;
	uint64_t start_ms;
	int64_t start_wall;		/* OCI: wall-clock seconds at the start, for the scrub */
	bool reaped;
	char *tmpdir;			/* PLAIN fallback: private TMPDIR to remove */
	struct lev_sbx_nsplan *plan;	/* for naming a failed mount step */
	const struct lev_sbx_nsplan *warm_plan;	/* NS_WARM: the helper's, borrowed */
	char *cwd;			/* NS_WARM: for naming a failed chdir */
	int warm_status;		/* NS_WARM: the wait status the cell sent, with warm_done */
	bool warm_done;
	char *argv0;			/* for messages */
};

/* Write a report to FD (async-signal-safe). */
void lev_sbx_report(int fd, enum lev_sbx_phase phase, int index, int err);

/* A fresh, zeroed proc with every fd at -1. */
struct lev_sandbox_proc *lev_sbx_proc_alloc(struct lev_sandbox *sb, enum lev_sbx_mode mode);

/*
 * The command ARGV0 is running: P reads its output from OUT_FD and ERR_FD
 * (taken, made non-blocking), forwards and cancels it as IO says and times
 * it out and caps it as LIMITS say, from now.
 */
void lev_sbx_proc_started(struct lev_sandbox_proc *p, int out_fd, int err_fd, const char *argv0,
			  const struct lev_sandbox_io *io, const struct lev_sandbox_limits *limits);

/*
 * Candidate paths for execve() of ARGV0 under PATH (execvp's search; a
 * name with a '/' is its own only candidate).  Fresh strv.
 */
char **lev_sbx_exec_candidates(const char *argv0, const char *path);
/* The PATH in ENVP, or the default search path. Borrowed. */
const char *lev_sbx_env_path(char *const *envp);

/* Try each candidate with execve; returns the errno that execvp would report. */
int lev_sbx_exec(char *const *cands, char *const *argv, char *const *envp);

/* Child-side helpers, async-signal-safe. */
void lev_sbx_reset_signals(void);
int lev_sbx_apply_rlimits(const struct lev_sandbox_limits *l, bool root, int *failed);
/*
 * The securebits locked and the bounding set emptied (what exec could give
 * back); a warm helper does it once for all its cells.
 */
void lev_sbx_drop_bounding(void);
/* Every capability dropped (the bounding set too with BOUNDING) and verified: 0 or -errno. */
int lev_sbx_drop_caps(bool bounding);

/* Namespace backend (sandbox-ns.c). */
int lev_sbx_ns_setup(struct lev_sandbox *sb, struct lev_err *err);
int lev_sbx_ns_spawn(struct lev_sandbox *sb, char *const *argv, char *const *envp,
		     const char *cwd, const struct lev_sandbox_limits *limits,
		     const struct lev_sandbox_io *io, struct lev_sandbox_proc **out,
		     struct lev_err *err);
int lev_sbx_ns_describe(const struct lev_sandbox *sb, char *const *argv, const char *cwd,
			void *json, struct lev_buf *out, struct lev_err *err);
void lev_sbx_nsplan_free(struct lev_sbx_nsplan *p);
/* Describe the failed step of a report. */
void lev_sbx_ns_explain(const struct lev_sandbox_proc *p, const struct lev_sbx_report *r,
			struct lev_err *err);

/* The probe, cached for the process. */
struct lev_sbx_kernel {
	int userns;		/* 0 or -errno */
	int mount_api;		/* 0 or -errno */
	int landlock_abi;	/* >= 1 or -errno */
	int seccomp;		/* 0 or -errno */
	int pidmax_ns;		/* 0: a new PID namespace can cap its pid_max (6.14+), or -errno */
};
/* Write the uid/gid maps (own ids, one each) of the new user namespace of PID. */
int lev_sbx_write_maps(pid_t pid, uid_t uid, gid_t gid, struct lev_err *err);

/*
 * lev's user namespace, made once per process (its fd, or -errno): no
 * namespace child is ever dumpable, so none could have its maps written
 * (a process that is not dumpable has root's /proc files); they are
 * written instead on a process that is no copy of lev: a child cloned into
 * a new user namespace that executes lev's program under ptrace and is
 * stopped before that program's first instruction, then killed.  Needs
 * PTRACE_TRACEME (Yama's ptrace_scope 3 refuses it: then no user namespace).
 */
int lev_sbx_userns(void);
/*
 * Fork a process in new namespaces (FLAGS: CLONE_NEW*; CLONE_NEWUSER is
 * implied) inside lev's user namespace, as fork() does: 0 in the child, its
 * pid in the parent with *PIDFD set, or -errno.  A short-lived intermediate
 * (a plain fork) joins the user namespace and clones the child as lev's own
 * (CLONE_PARENT).  The child inherits lev's dumpable flag (off) and keeps it;
 * it must stay async-signal-safe (lev may have threads).
 */
long lev_sbx_ns_clone(unsigned long flags, int *pidfd);
const struct lev_sbx_kernel *lev_sbx_kernel(void);

/*
 * The warm helper (ns-helper.c).  lev_sbx_warm_spawn() runs the command in
 * a cell of the sandbox's helper, starting the helper first when there is
 * none (or it died).  Returns 0 with *out, a negative error, or 1 when the
 * warm path cannot take this command (then sb->cold may say why for good):
 * the caller starts it cold.
 */
int lev_sbx_warm_spawn(struct lev_sandbox *sb, char *const *argv, char *const *envp,
		       const char *cwd, const struct lev_sandbox_limits *limits,
		       const struct lev_sandbox_io *io, struct lev_sandbox_proc **out,
		       struct lev_err *err);
/*
 * Read one message of the cell of P from its status socket (P->status_fd):
 * 2 the command's status (into P->warm_status, P->warm_done: every process
 * of its namespace is gone), 3 a report (into *REP: exec's errno, or the
 * set-up step that failed), 0 nothing yet, -1 EOF (the socket is closed).
 */
int lev_sbx_warm_read(struct lev_sandbox_proc *p, struct lev_sbx_report *rep);
/*
 * The cell's pidfd, from P->sock, into P->pidfd: 0 (it is there), 1 not
 * yet (only when not BLOCK), -1 never (no cell took the command: the
 * helper went away).
 */
int lev_sbx_warm_pidfd(struct lev_sandbox_proc *p, bool block);
/* Kill the helper (and every command it runs) and free W. */
void lev_sbx_warm_free(struct lev_sbx_warm *w);

/* Container backend (sandbox-oci.c). */
int lev_sbx_oci_setup(struct lev_sandbox *sb, const struct lev_sandbox_opts *opts,
		      struct lev_err *err);
int lev_sbx_oci_spawn(struct lev_sandbox *sb, char *const *argv, char *const *envp,
		      const char *cwd, const struct lev_sandbox_limits *limits,
		      const struct lev_sandbox_io *io, struct lev_sandbox_proc **out,
		      struct lev_err *err);
/*
 * After a container command ended (all of its processes gone): strip the
 * setuid/setgid bits and device nodes it left in the workdir.  0, or an
 * error naming what could not be checked.
 */
int lev_sbx_oci_after(struct lev_sandbox_proc *p, struct lev_err *err);
int lev_sbx_oci_describe(const struct lev_sandbox *sb, char *const *argv, const char *cwd,
			 void *json, struct lev_buf *out, struct lev_err *err);
/* Read the helper's answer on P->sock into *status / *exec_errno: 0, or -errno. */
int lev_sbx_oci_read_answer(struct lev_sandbox_proc *p, int *status, int *exec_errno);
/* Ask the helper to kill the command. */
void lev_sbx_oci_kill(struct lev_sandbox_proc *p);
