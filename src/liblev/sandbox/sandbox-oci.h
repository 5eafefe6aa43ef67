/*
 * sandbox-oci.h - the pure parts of the container backend: engine argv
 * builders, the mount rules, container names and signatures.  Exposed for
 * the unit tests (tests/unit/test-oci-argv.c) and `lev sandbox exec
 * --dry-run`; everything else uses sandbox.h.
 *
 * Every builder returns a fresh strv (free with lev_strv_free()); nothing
 * is ever joined into a shell string.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "liblev/base/error.h"

struct lev_oci_run_cfg {
	const char *engine;		/* binary name or path */
	char *const *engine_args;	/* global engine options (user config only) */
	const char *name;		/* container name */
	const char *run_id;		/* label lev.run */
	const char *owner;		/* label lev.owner: "host:pid:starttime" */
	uid_t uid;			/* --user uid:gid, and label lev.uid */
	gid_t gid;
	bool rootless;			/* rootless engine: its root is the caller (--user 0:0) */
	const char *image;
	bool network;			/* false: --network none */
	char *const *mounts;		/* extra read-only mounts, already checked */
	const char *workdir;		/* bind-mounted read-write at the same path */
	uint64_t pids;			/* --pids-limit */
	uint64_t mem_bytes;		/* --memory */
	uint64_t nofile;		/* --ulimit nofile=N:N */
	uint64_t nproc;			/* --ulimit nproc=N:N */
	const char *helper_dir;		/* host dir mounted at /.lev (ro); NULL: `sleep infinity` */
	const char *sock_dir;		/* host dir mounted at /.lev-sock (with helper_dir) */
	char *const *hide_dirs;		/* secrets inside the workdir: covered by EMPTY_DIR */
	char *const *hide_files;	/* ... and by EMPTY_FILE */
	const char *empty_dir;		/* host: an empty directory, mode 000 */
	const char *empty_file;		/* host: an empty file, mode 000 */
	const char *host_dir;		/* label lev.dir: removed with an orphan; NULL: none */
};

/*
 * <engine> [engine_args] run -d --rm --name NAME
 *	--label lev.sandbox=1 --label lev.run=RUN --label lev.owner=OWNER --label lev.uid=UID
 *	[--label lev.dir=HOST_DIR]
 *	--cap-drop ALL --security-opt no-new-privileges
 *	--pids-limit N --memory BYTES --ulimit nofile=N:N --ulimit nproc=N:N
 *	[--network none] --user UID:GID (rootless: --user 0:0, which is the caller)
 *	--read-only --tmpfs /tmp
 *	-v WORKDIR:WORKDIR -w WORKDIR [-v EMPTY_DIR:D:ro ...] [-v EMPTY_FILE:F:ro ...]
 *	[-v M:M:ro ...]
 *	then either  -v HELPER_DIR:/.lev:ro -v SOCK_DIR:/.lev-sock
 *	             --entrypoint /.lev/lev-oci-helper IMAGE serve /.lev-sock/ctl
 *	or           --entrypoint sleep IMAGE infinity
 */
char **lev_oci_run_argv(const struct lev_oci_run_cfg *c);

/*
 * <engine> [engine_args] exec [-i] -w CWD NAME
 *	[/.lev/lev-oci-helper run --timeout-ms N [--seccomp /.lev/seccomp.bpf] --] ARGV...
 * HELPER false: ARGV directly.
 */
char **lev_oci_exec_argv(const char *engine, char *const *engine_args, const char *name,
			 const char *cwd, bool interactive, bool helper, bool seccomp,
			 uint64_t timeout_ms, char *const *argv);

/* <engine> [engine_args] rm -f [-t 0 for podman] NAME */
char **lev_oci_rm_argv(const char *engine, char *const *engine_args, const char *name);

/* <engine> [engine_args] ps -a -q --filter label=lev.sandbox=1 --filter label=lev.uid=UID */
char **lev_oci_ps_argv(const char *engine, char *const *engine_args, uid_t uid);

/*
 * The rules for an extra mount (user config, or a blueprint's opt-in):
 * absolute, no '..' component, no ':' (mounts are always read-only: write
 * the path alone), and neither equal to, beneath, nor above any of /,
 * /proc, /sys, /dev, /etc, /boot, /run, /var/run, the engine sockets and
 * stores (/var/run/docker.sock, /run/docker.sock, /run/podman,
 * /var/run/podman, /run/containerd, /var/lib/docker, /var/lib/containers).
 * The path is normalised first ("//", "/./" and a trailing '/' go).
 * Refusals are errors (LEV_EUSAGE) naming the mount, never a silent drop.
 * Pure: no file system access.
 */
int lev_oci_mount_check(const char *path, struct lev_err *err);
/* The same check; on success *out is the normalised path ("//a/./b/" -> "/a/b"), fresh. */
int lev_oci_mount_normalize(const char *path, char **out, struct lev_err *err);

/* "lev-<run id, [A-Za-z0-9_-] kept, others '-'>-<sig as %016llx>" (fresh). */
char *lev_oci_container_name(const char *run_id, uint64_t sig);

/* FNV-1a over (engine, engine_args, image, network, mounts, workdir). */
uint64_t lev_oci_signature(const char *engine, char *const *engine_args, const char *image,
			   bool network, char *const *mounts, const char *workdir);

/*
 * Find NAME (a bare name is searched in PATH_ENV, NULL: $PATH; a name with
 * a '/' is used as is) as an executable regular file.  Fresh path or NULL.
 */
char *lev_oci_find_engine(const char *name, const char *path_env);
