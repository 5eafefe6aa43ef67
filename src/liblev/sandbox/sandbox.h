/*
 * sandbox.h - where commands run: one interface, three kinds.
 *
 * The caller resolves the effective [sandbox] block (user config, blueprint
 * agent block, stage block) with lev_sandbox_resolve(), makes a sandbox from
 * it, and runs commands in it.  The caller never sees which backend runs
 * them (minijail's pattern of use):
 *
 *	struct lev_sandbox_spec eff;
 *	struct lev_sandbox_opts o = LEV_SANDBOX_OPTS_INIT;
 *	struct lev_sandbox *sb;
 *	struct lev_sandbox_proc *p;
 *	struct lev_sandbox_result res;
 *
 *	lev_sandbox_resolve(&cfg->sandbox, &bp->sandbox, &stage->sandbox, &eff);
 *	o.workdir = "/home/me/project";
 *	lev_sandbox_new(&eff, &o, &sb, &err);		// plans, probes, warms a container
 *	lev_sandbox_spawn(sb, argv, environ, NULL, NULL, NULL, &p, &err);
 *	lev_sandbox_wait(p, &res, &err);		// drains output, enforces the timeout
 *	lev_sandbox_proc_free(p);
 *	lev_sandbox_result_release(&res);
 *	lev_sandbox_free(sb);
 *
 * Kinds (types.h), ranked container > namespace > none:
 *   none       the host, with the timeout, output cap and environment filter
 *   namespace  our own backend (sandbox-ns.c): user, mount, PID, IPC and UTS
 *              namespaces (+ network when network = false), a read-only root,
 *              the workdir read-write at its own path, private /tmp, /dev and
 *              /proc, secrets masked, Landlock, seccomp, no_new_privs, no
 *              capabilities, rlimits, a PID 1 that dies with lev
 *   container  Docker or Podman (sandbox-oci.c): one warm container per
 *              distinct (engine, image, network, mounts, workdir) in a pool,
 *              commands handed to a helper inside it (or `exec`)
 *
 * Layers are never dropped silently: a sandbox knows which layers it wanted,
 * which are active and which are missing.  With on_unavailable = error a
 * missing layer makes lev_sandbox_new() fail with LEV_EUNSUPP naming it;
 * with warn the sandbox runs with the remaining layers and
 * lev_sandbox_missing()/lev_sandbox_degraded() say what is gone.
 *
 * Ownership: lev_sandbox_new() copies everything it needs from the spec and
 * options (they may be freed afterwards).  Procs must be freed before their
 * sandbox, sandboxes before their pool.  Results own their buffers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "liblev/base/buf.h"
#include "liblev/policy/envfilter.h"
#include "liblev/base/error.h"
#include "liblev/base/types.h"

/* The security layers a sandbox can stack (bit flags). */
enum lev_sandbox_layer {
	LEV_LAYER_USERNS = 1u << 0,	/* a user namespace: capabilities over nothing real */
	LEV_LAYER_MOUNTNS = 1u << 1,	/* read-only root, private /tmp /dev /proc /run, masks */
	LEV_LAYER_PIDNS = 1u << 2,	/* host processes invisible; PID 1 kills all on exit */
	LEV_LAYER_IPCNS = 1u << 3,
	LEV_LAYER_UTSNS = 1u << 4,
	LEV_LAYER_NETNS = 1u << 5,	/* only when network = false */
	LEV_LAYER_LANDLOCK = 1u << 6,	/* writes only in the workdir and private tmp */
	LEV_LAYER_SECCOMP = 1u << 7,
	LEV_LAYER_NNP = 1u << 8,	/* PR_SET_NO_NEW_PRIVS */
	LEV_LAYER_CAPS = 1u << 9,	/* every capability dropped */
	LEV_LAYER_RLIMITS = 1u << 10,	/* processes, memory, file size, files, core, CPU */
	LEV_LAYER_CONTAINER = 1u << 11,	/* a Docker/Podman container */
	_LEV_LAYER_COUNT = 12,
};

/* "userns", "mountns", ...; NULL for a value that is not one layer. */
/*
 * The credential stores under the home directory (".ssh", ".gnupg",
 * ".aws" ...) every sandbox masks: *N entries, relative to the home.
 */
const char *const *lev_sandbox_home_secrets(size_t *n);

const char *lev_sandbox_layer_name(unsigned layer);
/* Append "userns, mountns, ..." (or "none") for the set LAYERS to OUT. */
int lev_sandbox_layers_format(unsigned layers, struct lev_buf *out);

/* Per-command limits; 0 in any field means the default shown. */
struct lev_sandbox_limits {
	uint64_t timeout_ms;	/* 60 000: the whole namespace is killed past it */
	uint64_t output_max;	/* 1 MiB per stream; the rest is drained and counted */
	uint64_t nproc;		/* 512 processes (RLIMIT_NPROC, pid_max, --pids-limit) */
	uint64_t mem_bytes;	/* 4 GiB (RLIMIT_DATA, --memory) */
	uint64_t fsize;		/* 1 GiB largest file written (RLIMIT_FSIZE) */
	uint64_t nofile;	/* 1024 open files */
	uint64_t cpu_secs;	/* CPU seconds; default max(60, 2 * timeout) */
	uint64_t tmp_bytes;	/* 512 MiB private /tmp */
	/*
	 * Kind none only: run the command inside the host fence, Landlock
	 * with no_new_privs: writes only to the workdir, a private scratch
	 * directory under /tmp (TMPDIR points at it) and [sandbox] writable;
	 * reads everywhere but the masks (secrets, lev's own files,
	 * deny_read).  lev run sets it for every shell line.  Fails with
	 * LEV_EUNSUPP when the kernel has no Landlock.
	 */
	bool host_fence;
	/*
	 * Kind none only: the host fence with reads confined to the system
	 * trees, the workdir, the scratch directory, [sandbox] writable and
	 * the granted read paths (opts.read_paths).  lev run sets it for a
	 * shell line that runs without a question only because a safe list
	 * covered it, so a file name taken from data (`strings @list.rsp`)
	 * cannot carry a pre-approved program to ~/docs.  Implies host_fence.
	 */
	bool read_fence;
	/*
	 * Kind none, inside the host fence: path globs ([integrity] protected,
	 * matched as lev_integrity_globs_match() does) whose files in the
	 * workdir commands may read but not change, create over, rename or
	 * remove.  lev run sets it while untrusted content is live.  NULL:
	 * none.  Borrowed for the spawn.
	 */
	char *const *protect;
};

#define LEV_SANDBOX_DEFAULT_TIMEOUT_MS 60000ULL
#define LEV_SANDBOX_DEFAULT_OUTPUT_MAX ((uint64_t)1 << 20)

/* Fill the zero fields of L with the defaults. */
void lev_sandbox_limits_fill(struct lev_sandbox_limits *l);

struct lev_sandbox_pool;

struct lev_sandbox_opts {
	const char *workdir;		/* required: an existing directory, read-write inside */
	const char *home;		/* NULL: $HOME, else the password database */
	const char *data_root;		/* lev's data root, masked; NULL: from LEVIATH_HOME/HOME */
	char *const *extra_masks;	/* more paths to hide (deny_read comes from the spec) */
	char *const *read_paths;	/* granted read paths (globs; their leading trees are
					 * readable to a pre-approved host command) */
	char *const *engine_args;	/* [sandbox] engine_args: global engine options, user only */
	const char *oci_helper;		/* host path of lev-oci-helper; NULL: plain `exec` */
	struct lev_sandbox_pool *pool;	/* warm containers of the run; NULL: a private pool */
	const char *path_env;		/* PATH to find engines in; NULL: $PATH */
	struct lev_envfilter env;	/* [security] shell_env */
	struct lev_sandbox_limits limits;	/* defaults for every spawn */
	/*
	 * Plan only (--dry-run): the sandbox is set up far enough to be
	 * described, but no container is started and the engine is never run
	 * to start or remove one; lev_sandbox_spawn() refuses with LEV_EUSAGE.
	 */
	bool plan_only;
	/*
	 * Namespace kind: start every command cold, building its namespaces
	 * from scratch, instead of in a cell of the sandbox's warm helper
	 * (benchmarks compare the two).
	 */
	bool cold;
};

#define LEV_SANDBOX_OPTS_INIT { .env = LEV_ENVFILTER_INIT }

/*
 * Resolve the effective sandbox for one stage (leviath-spec §5.2), the
 * stage block replacing the agent block wholesale.  GLOBAL is the user's
 * config; AGENT and STAGE come from a blueprint (any may be NULL or have
 * present == false).  Each field merges by its own rule, so tightening one
 * field never reopens another:
 *   - kind: the stronger of the two (a blueprint's none never lowers it);
 *   - network: on only when neither side writes false;
 *   - on_unavailable: error when either says error (the user's unwritten
 *     value is error);
 *   - image, engine, mounts, deny_read: the user's only.
 * *out is complete (present and every has_* set, defaults filled) and owned
 * by the caller (release it with lev_sandbox_spec_release()).
 */
void lev_sandbox_resolve(const struct lev_sandbox_spec *global, const struct lev_sandbox_spec *agent,
			 const struct lev_sandbox_spec *stage, struct lev_sandbox_spec *out);

/*
 * A pool of warm containers for one run (RUN_ID names them and labels
 * them; NULL: "exec-<pid>").  Freeing the pool removes every container it
 * started.  Containers left by a lev that died are removed the first time
 * the pool starts one on the same engine.
 */
int lev_sandbox_pool_new(const char *run_id, struct lev_sandbox_pool **out, struct lev_err *err);
/* Remove every container; the first failure is reported (the rest still run). */
int lev_sandbox_pool_teardown(struct lev_sandbox_pool *p, struct lev_err *err);
struct lev_sandbox_pool *lev_sandbox_pool_free(struct lev_sandbox_pool *p);
/* How many containers the pool holds now. */
size_t lev_sandbox_pool_size(const struct lev_sandbox_pool *p);

struct lev_sandbox;

/*
 * Make a sandbox for the resolved SPEC.  Probes the kernel (cached), plans
 * the layers, and for a container starts or reuses the warm one.  Fails
 * with LEV_EUNSUPP when a layer is missing under on_unavailable = error,
 * LEV_EUSAGE for a bad workdir or mount, or -errno.
 */
int lev_sandbox_new(const struct lev_sandbox_spec *spec, const struct lev_sandbox_opts *opts,
		    struct lev_sandbox **out, struct lev_err *err);
/*
 * A reload (the run's effective policy, only ever tighter): SB takes the
 * environment filter of OPTS, and its timeout and output cap when lower,
 * for its next command.
 */
void lev_sandbox_update(struct lev_sandbox *sb, const struct lev_sandbox_opts *opts);
struct lev_sandbox *lev_sandbox_free(struct lev_sandbox *sb);

/* The kind that actually runs (none after a warn fallback to the host). */
enum lev_sandbox_kind lev_sandbox_kind(const struct lev_sandbox *sb);
/* Whether commands may use the network (the resolved spec's network). */
bool lev_sandbox_network(const struct lev_sandbox *sb);
/* Layers in force, and layers wanted but missing (warn mode). */
unsigned lev_sandbox_layers(const struct lev_sandbox *sb);
unsigned lev_sandbox_missing(const struct lev_sandbox *sb);
/* Why layers are missing ("landlock: ...; seccomp: ..."), or NULL. Borrowed. */
const char *lev_sandbox_degraded(const struct lev_sandbox *sb);
/*
 * Namespace kind: why its commands start cold rather than in a cell of the
 * warm helper (the helper could not start, or the caller asked), or NULL
 * while the warm path is in use (or the kind has none).  Borrowed.
 */
const char *lev_sandbox_cold(const struct lev_sandbox *sb);

/*
 * Append the declarative plan for running ARGV in CWD (NULL: the workdir)
 * to OUT: kind, layers, namespaces, mounts and masks, Landlock rules,
 * seccomp rules, environment names kept, rlimits, container argv.  Plain
 * text, or one JSON object when JSON.
 */
int lev_sandbox_describe(const struct lev_sandbox *sb, char *const *argv, const char *cwd,
			 bool json, struct lev_buf *out, struct lev_err *err);

/* Where a command's standard streams go. */
struct lev_sandbox_io {
	int stdin_fd;		/* -1: /dev/null */
	int stdout_fd;		/* -1: captured into the result; else copied there (capped) */
	int stderr_fd;		/* as stdout_fd */
	int cancel_fd;		/* -1: none; readable means "kill the command now" */
};

#define LEV_SANDBOX_IO_CAPTURE { -1, -1, -1, -1 }

struct lev_sandbox_proc;

/*
 * Start ARGV (argv[0] is looked up in the filtered environment's PATH
 * inside the sandbox) with the environment ENVP (filtered by the sandbox's
 * envfilter; NULL: empty; a container command gets exactly the image's
 * environment plus the ENVP variables [security] allow_env_vars names)
 * in CWD (NULL: the workdir; it must be the workdir or beneath it).  LIMITS
 * NULL: the sandbox's; IO NULL: capture both streams, stdin /dev/null.
 * Returns once the command is set up to run; the output is drained and the
 * timeout enforced by lev_sandbox_wait().
 */
int lev_sandbox_spawn(struct lev_sandbox *sb, char *const *argv, char *const *envp,
		      const char *cwd, const struct lev_sandbox_limits *limits,
		      const struct lev_sandbox_io *io, struct lev_sandbox_proc **out,
		      struct lev_err *err);

struct lev_sandbox_result {
	int exit_code;		/* shell style: the code, 126/127 cannot execute / not found,
				   128+n killed by signal n */
	bool signaled;
	int signal;		/* with signaled */
	int exec_errno;		/* the command could not be executed: its errno, else 0 */
	bool timed_out;		/* killed at the timeout */
	bool cancelled;		/* killed because cancel_fd became readable */
	char *out;		/* captured stdout (NUL-terminated), or NULL when forwarded */
	size_t out_len;
	char *err;		/* captured stderr */
	size_t err_len;
	uint64_t out_total;	/* bytes the command wrote, kept or not */
	uint64_t err_total;
	bool out_truncated;	/* the cap was hit */
	bool err_truncated;
	unsigned layers;	/* layers the command ran under */
	bool warm;		/* namespace: it ran in a cell of the warm helper */
	uint64_t elapsed_ms;
	uint64_t timeout_ms;	/* the timeout that was enforced (name it in messages) */
};

/*
 * Drain the output, enforce the timeout and collect the status into *res
 * (fresh; release it).  A failure to set the sandbox up (a mount, a
 * layer) is an error: -errno or LEV_EUNSUPP with the reason, and *res is
 * left empty.  A command that fails is not an error.
 */
int lev_sandbox_wait(struct lev_sandbox_proc *p, struct lev_sandbox_result *res,
		     struct lev_err *err);

/*
 * Take the read ends of P's standard output and error (O_CLOEXEC,
 * non-blocking) for a caller that talks to a long-lived command over its
 * pipes (an MCP server); the caller owns and closes them, and must drain
 * both.  lev_sandbox_wait() then only collects the status (the timeout,
 * counted from the spawn, still applies to it).  -EINVAL when P's output
 * is not on pipes (a container helper's fast path).
 */
int lev_sandbox_proc_take_output(struct lev_sandbox_proc *p, int *out_fd, int *err_fd);

/* Kill the command if it is still running, reap it, and free P. Returns NULL. */
struct lev_sandbox_proc *lev_sandbox_proc_free(struct lev_sandbox_proc *p);

void lev_sandbox_result_release(struct lev_sandbox_result *r);

/* What this machine offers (lev sandbox probe). */
struct lev_sandbox_engine_info {
	char *name;		/* "docker", "podman" */
	char *path;		/* NULL: not on PATH */
	char *version;		/* first line of `<engine> --version`, or NULL */
	bool responds;		/* `<engine> ps` works (a daemon or a local store answers) */
};

struct lev_sandbox_probe {
	int userns;		/* 0, or -errno from creating a user namespace */
	int mount_api;		/* 0, or -errno (open_tree/mount_setattr in a new namespace) */
	int landlock_abi;	/* >= 1, or -errno */
	int seccomp;		/* 0, or -errno */
	int openat2;		/* 0, or -errno */
	int pidmax_ns;		/* 0: a PID namespace can cap its own pid_max (6.14+), or -errno */
	bool root;		/* running as uid 0 */
	struct lev_sandbox_engine_info engines[2];
	size_t n_engines;
	int engine_pick;	/* index into engines that auto-detection picks, or -1 */
};

/* Probe everything (fresh: release it).  PATH_ENV NULL: $PATH. */
int lev_sandbox_probe(const char *path_env, struct lev_sandbox_probe *out, struct lev_err *err);
void lev_sandbox_probe_release(struct lev_sandbox_probe *p);
/* The layers a namespace sandbox gets on this machine (network on/off). */
unsigned lev_sandbox_probe_layers(const struct lev_sandbox_probe *p, bool network);
