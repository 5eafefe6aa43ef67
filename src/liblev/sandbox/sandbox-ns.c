/*
 * sandbox-ns.c - the namespace backend (our own code; no bwrap), and the
 * host backend it falls back to.
 *
 * The parent builds a plan (plain data: mount steps, Landlock rules, the
 * seccomp program, rlimits, the environment, exec candidates), then clones
 * a child into new mount, PID, IPC and UTS namespaces (+ network when
 * network = false) in lev's user namespace (below) and lets it go.  The
 * child is PID 1 of the new PID namespace.  It only makes system calls (the parent
 * may have threads, so nothing that allocates or locks):
 *
 *   1. mounts: the workdir and device nodes are cloned (open_tree) while
 *      the tree is still writable; then the whole tree becomes read-only,
 *      nosuid, nodev (mount_setattr, recursive); fresh tmpfs on /tmp, /run
 *      and /dev (with null, zero, full, random, urandom, tty bound in, a
 *      private devpts and /dev/shm); a fresh /proc for the PID namespace
 *      (its pid_max caps the processes); the workdir re-attached read-write
 *      at its own path; every secret covered by an empty read-only mount;
 *   2. hostname, chdir, rlimits, PR_SET_NO_NEW_PRIVS, Landlock (writes only
 *      in the workdir, /tmp, /dev/shm and the harmless device nodes; TCP and
 *      abstract UNIX sockets and signals scoped where the ABI has them), all
 *      capabilities dropped, non-dumpable, the seccomp filter;
 *   3. it forks the command (in a new session, stdio on pipes, signals
 *      reset), reaps everything, writes the command's status to a pipe and
 *      exits, which kills whatever is left in the namespace.  It dies with
 *      lev (PR_SET_PDEATHSIG), and lev kills it at the timeout.
 *
 * Setup failures are reported on a close-on-exec pipe as (step, errno);
 * the parent names the step.  A successful exec closes the pipe.
 *
 * Without user namespaces (or the mount API) under on_unavailable = warn,
 * the command runs as our direct child in its own session with the layers
 * that remain: Landlock (reads of the masked paths excluded rule by rule,
 * writes only in the workdir and a private TMPDIR), seccomp, no_new_privs,
 * capabilities and rlimits.  Kind none uses the same path with no layers
 * but no_new_privs and no capabilities.
 *
 * lev itself is not dumpable (lev_credentials_protect_process()), and a
 * forked child inherits that and keeps it: being a copy of lev's memory, it
 * is never made dumpable.  Its user namespace is lev's, made once with its
 * maps written on a process that holds nothing of lev's (lev_sbx_userns()),
 * and lev_sbx_ns_clone() creates the child in it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/sandbox/landlock-rules.h"
#include "liblev/sandbox/ns-internal.h"
#include "liblev/sandbox/sandbox-internal.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/policy/integrity.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static const char *keep(struct lev_sbx_nsplan *pl, char *s)
{
	pl->strs = lev_strv_push_take(pl->strs, s);
	return s;
}

static void add_op(struct lev_sbx_nsplan *pl, enum mop_kind kind, const char *path,
		   const char *arg, int slot, bool optional)
{
	struct mop *m;

	pl->ops = xreallocarray(pl->ops, pl->n_ops + 1, sizeof(*pl->ops));
	m = &pl->ops[pl->n_ops++];
	m->kind = kind;
	m->path = path ? keep(pl, xstrdup(path)) : NULL;
	m->arg = arg ? keep(pl, xstrdup(arg)) : NULL;
	m->slot = slot;
	m->recursive = false;
	m->optional = optional;
}

static void add_rule(struct lev_sbx_nsplan *pl, const char *path, uint64_t access)
{
	pl->rules = xreallocarray(pl->rules, pl->n_rules + 1, sizeof(*pl->rules));
	pl->rules[pl->n_rules].path = keep(pl, xstrdup(path));
	pl->rules[pl->n_rules].access = access;
	pl->n_rules++;
}

void lev_sbx_nsplan_free(struct lev_sbx_nsplan *p)
{
	if (!p)
		return;
	free(p->ops);
	free(p->rules);
	lev_strv_free(p->strs);
	lev_strv_free(p->argv);
	lev_strv_free(p->envp);
	lev_strv_free(p->cands);
	free(p->cwd);
	free(p->tmpdir);
	lev_scfilter_release(&p->sc_cells);
	free(p);
}

static bool is_real_dir(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- setup: which layers this sandbox gets ---- */

static void note(struct lev_buf *b, const char *layer, const char *what, int e)
{
	(void)lev_buf_addf(b, "%s%s: %s (%s)", b->len ? "; " : "", layer, what, strerror(-e));
}

int lev_sbx_ns_setup(struct lev_sandbox *sb, struct lev_err *err)
{
	const struct lev_sbx_kernel *k = lev_sbx_kernel();
	_cleanup_buf_ struct lev_buf why = LEV_BUF_INIT_MAX(4096);
	unsigned wanted, have;
	const unsigned nslayers = LEV_LAYER_USERNS | LEV_LAYER_MOUNTNS | LEV_LAYER_PIDNS |
				  LEV_LAYER_IPCNS | LEV_LAYER_UTSNS | LEV_LAYER_NETNS;
	struct lev_err e2 = LEV_ERR_INIT;

	wanted = LEV_LAYER_USERNS | LEV_LAYER_MOUNTNS | LEV_LAYER_PIDNS | LEV_LAYER_IPCNS |
		 LEV_LAYER_UTSNS | LEV_LAYER_LANDLOCK | LEV_LAYER_SECCOMP | LEV_LAYER_NNP |
		 LEV_LAYER_CAPS | LEV_LAYER_RLIMITS;
	if (!sb->spec.network)
		wanted |= LEV_LAYER_NETNS;
	have = wanted;

	if (k->userns < 0) {
		note(&why, "userns", "cannot create user namespaces", k->userns);
		have &= ~nslayers;
	} else if (k->mount_api < 0) {
		note(&why, "mountns", "the mount API (open_tree, mount_setattr) is unavailable",
		     k->mount_api);
		have &= ~nslayers;
	}
	if (k->landlock_abi < 0) {
		note(&why, "landlock", "not available on this kernel", k->landlock_abi);
		have &= ~LEV_LAYER_LANDLOCK;
	}
	if (k->seccomp < 0) {
		note(&why, "seccomp", "not available on this kernel", k->seccomp);
		have &= ~LEV_LAYER_SECCOMP;
	}
	if (have & LEV_LAYER_SECCOMP) {
		if (lev_scfilter_build(sb->spec.network ? LEV_SCFILTER_NET : 0, &sb->sc, &e2) < 0) {
			(void)lev_buf_addf(&why, "%sseccomp: %s", why.len ? "; " : "", e2.msg);
			have &= ~LEV_LAYER_SECCOMP;
		} else {
			sb->have_sc = true;
		}
	}
	if (have & LEV_LAYER_LANDLOCK)
		sb->ll_abi = k->landlock_abi;
	/* RLIMIT_NPROC does not bind root: its process cap is the namespace's
	 * pid_max, which kernels before 6.14 do not let it set */
	if ((have & LEV_LAYER_RLIMITS) && sb->uid == 0 &&
	    (!(have & LEV_LAYER_PIDNS) || k->pidmax_ns < 0)) {
		note(&why, "rlimits", "no process cap for root (RLIMIT_NPROC does not bind root "
		     "and there is no PID namespace whose pid_max could)",
		     k->pidmax_ns < 0 ? k->pidmax_ns : -EPERM);
		have &= ~LEV_LAYER_RLIMITS;
	}

	/* network = false is never advisory: one of the two layers must close it */
	if (!sb->spec.network && !(have & (LEV_LAYER_NETNS | LEV_LAYER_SECCOMP)))
		return lev_err_set(err, LEV_EUNSUPP,
				   "namespace sandbox unavailable: network = false needs a network "
				   "namespace or seccomp, and neither is available: %s", why.buf);
	sb->wanted = wanted;
	sb->layers = have;
	sb->missing = wanted & ~have;
	if (sb->missing) {
		if (sb->spec.on_unavailable == LEV_ON_UNAVAILABLE_ERROR)
			return lev_err_set(err, LEV_EUNSUPP,
					   "namespace sandbox unavailable: %s; set on_unavailable = "
					   "\"warn\" in [sandbox] to run with the remaining layers",
					   why.buf);
		sb->degraded = xstrdup(why.buf);
	}

	if (sb->spec.network && (have & LEV_LAYER_MOUNTNS)) {
		char real[PATH_MAX];

		if (realpath("/etc/resolv.conf", real) && lev_path_under(real, "/run"))
			sb->resolv_target = xstrdup(real);
	}
	return 0;
}

/* ---- plan ---- */

static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };

#define DEV_RW (LEV_LL_FS_READ_FILE | LEV_LL_FS_WRITE_FILE | LEV_LL_FS_TRUNCATE | \
		LEV_LL_FS_IOCTL_DEV)

/*
 * pid_max of the new PID namespace caps the processes (root ignores
 * RLIMIT_NPROC); kernels before 6.14 have one global pid_max, which a
 * caller without root cannot write, and RLIMIT_NPROC does the job.
 */
static void plan_pid_max(struct lev_sbx_nsplan *pl)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu",
		 (unsigned long long)(pl->limits.nproc + 2 < 301 ? 301 : pl->limits.nproc + 2));
	add_op(pl, MOP_WRITE, "/proc/sys/kernel/pid_max", buf, -1,
	       lev_sbx_kernel()->pidmax_ns < 0 || getuid() != 0);
}

static void plan_mounts(struct lev_sbx_nsplan *pl, const struct lev_sandbox *sb)
{
	char buf[64];
	size_t i;
	char *const *m;
	bool wd_in_fresh = lev_path_under(sb->workdir, "/tmp") || lev_path_under(sb->workdir, "/run");

	add_op(pl, MOP_PRIVATE, "/", NULL, -1, false);
	add_op(pl, MOP_CLONE, sb->workdir, NULL, SLOT_WORKDIR, false);
	pl->ops[pl->n_ops - 1].recursive = true;
	for (i = 0; i < ARRAY_SIZE(dev_nodes); i++) {
		_cleanup_free_ char *p = xasprintf("/dev/%s", dev_nodes[i]);
		add_op(pl, MOP_CLONE, p, NULL, SLOT_DEV0 + (int)i, true);
	}
	if (sb->resolv_target)
		add_op(pl, MOP_CLONE, sb->resolv_target, NULL, SLOT_RESOLV, true);

	add_op(pl, MOP_RO_ROOT, "/", NULL, -1, false);

	snprintf(buf, sizeof(buf), "mode=1777,size=%llu", (unsigned long long)pl->limits.tmp_bytes);
	add_op(pl, MOP_TMPFS, "/tmp", buf, -1, false);
	if (is_real_dir("/run"))
		add_op(pl, MOP_TMPFS, "/run", "mode=0755,size=1m", -1, false);
	if (is_real_dir("/var/run"))
		add_op(pl, MOP_TMPFS, "/var/run", "mode=0755,size=1m", -1, false);
	if (sb->resolv_target) {
		_cleanup_free_ char *dir = xstrdup(sb->resolv_target);
		char *slash = strrchr(dir, '/');

		if (slash && slash != dir) {
			*slash = '\0';
			add_op(pl, MOP_MKDIRS, dir, NULL, -1, true);
		}
		add_op(pl, MOP_MKFILE, sb->resolv_target, NULL, -1, true);
		add_op(pl, MOP_ATTACH, sb->resolv_target, NULL, SLOT_RESOLV, true);
	}

	add_op(pl, MOP_TMPFS, "/dev", "mode=0755,size=1m", -1, false);
	for (i = 0; i < ARRAY_SIZE(dev_nodes); i++) {
		_cleanup_free_ char *p = xasprintf("/dev/%s", dev_nodes[i]);
		bool opt = !strcmp(dev_nodes[i], "tty");

		add_op(pl, MOP_MKFILE, p, NULL, -1, opt);
		add_op(pl, MOP_ATTACH, p, NULL, SLOT_DEV0 + (int)i, opt);
	}
	add_op(pl, MOP_MKDIRS, "/dev/pts", NULL, -1, false);
	add_op(pl, MOP_MKDIRS, "/dev/shm", NULL, -1, false);
	add_op(pl, MOP_SYMLINK, "/dev/fd", "/proc/self/fd", -1, false);
	add_op(pl, MOP_SYMLINK, "/dev/stdin", "/proc/self/fd/0", -1, false);
	add_op(pl, MOP_SYMLINK, "/dev/stdout", "/proc/self/fd/1", -1, false);
	add_op(pl, MOP_SYMLINK, "/dev/stderr", "/proc/self/fd/2", -1, false);
	add_op(pl, MOP_SYMLINK, "/dev/ptmx", "pts/ptmx", -1, false);
	add_op(pl, MOP_DEVPTS, "/dev/pts", "newinstance,ptmxmode=0666,mode=620", -1, false);
	add_op(pl, MOP_TMPFS, "/dev/shm", "mode=1777,size=64m", -1, false);
	add_op(pl, MOP_SETRO, "/dev", NULL, -1, false);

	add_op(pl, MOP_PROC, "/proc", NULL, -1, false);
	plan_pid_max(pl);
	add_op(pl, MOP_SETRO, "/proc", NULL, -1, false);

	if (wd_in_fresh)
		add_op(pl, MOP_MKDIRS, sb->workdir, NULL, -1, false);
	add_op(pl, MOP_ATTACH, sb->workdir, NULL, SLOT_WORKDIR, false);

	for (m = sb->masks; m && *m; m++) {
		struct stat st;

		/* /tmp, /run and /dev are fresh: nothing of the host's is there,
		 * except what the workdir brings back */
		if ((lev_path_under(*m, "/tmp") || lev_path_under(*m, "/run") ||
		     lev_path_under(*m, "/var/run") || lev_path_under(*m, "/dev") ||
		     lev_path_under(*m, "/proc")) &&
		    !lev_path_under(*m, sb->workdir))
			continue;
		if (lstat(*m, &st) < 0)
			continue;
		add_op(pl, S_ISDIR(st.st_mode) ? MOP_MASK_DIR : MOP_MASK_FILE, *m, NULL, -1, true);
	}
}

/*
 * Whether a warm helper installs one filter for all its cells
 * (LEV_SCFILTER_CELLS): only when Landlock also refuses their commands'
 * mounts, and capabilities and no_new_privs are part of the fence.
 */
static bool cells_share_filter(const struct lev_sbx_nsplan *pl)
{
	return pl->mode == LEV_SBX_NS && pl->use_sc && pl->use_ll && pl->use_caps && pl->use_nnp;
}

/*
 * What a warm cell adds to the helper's mounts: what one command may change
 * (the tmpfs on /tmp and /dev/shm) is fresh for each, and /proc shows the
 * cell's own PID namespace.  A workdir under /tmp is cloned (with the masks
 * on it) before the new /tmp covers it, and attached again inside it.
 */
void lev_sbx_ns_plan_cell(struct lev_sbx_nsplan *pl, const struct lev_sandbox *sb)
{
	bool wd_in_tmp = lev_path_under(sb->workdir, "/tmp");
	char buf[64];

	pl->n_helper_ops = pl->n_ops;
	if (wd_in_tmp) {
		add_op(pl, MOP_CLONE, sb->workdir, NULL, SLOT_WORKDIR, false);
		pl->ops[pl->n_ops - 1].recursive = true;
	}
	snprintf(buf, sizeof(buf), "mode=1777,size=%llu", (unsigned long long)pl->limits.tmp_bytes);
	add_op(pl, MOP_TMPFS, "/tmp", buf, -1, false);
	if (wd_in_tmp) {
		add_op(pl, MOP_MKDIRS, sb->workdir, NULL, -1, false);
		add_op(pl, MOP_ATTACH, sb->workdir, NULL, SLOT_WORKDIR, false);
	}
	add_op(pl, MOP_TMPFS, "/dev/shm", "mode=1777,size=64m", -1, false);
	add_op(pl, MOP_PROC, "/proc", NULL, -1, false);
	plan_pid_max(pl);
	add_op(pl, MOP_SETRO, "/proc", NULL, -1, false);
	/* else (or when it cannot be built) each cell loads the full filter */
	if (cells_share_filter(pl) &&
	    lev_scfilter_build(pl->sc->flags | LEV_SCFILTER_CELLS, &pl->sc_cells, NULL) == 0)
		pl->use_sc_cells = true;
}

/* Is P an ancestor (strictly above) of some mask? */
static bool above_a_mask(const char *p, char *const *masks)
{
	for (; masks && *masks; masks++)
		if (strcmp(p, *masks) != 0 && lev_path_under(*masks, p))
			return true;
	return false;
}

static bool is_masked(const char *p, char *const *masks)
{
	for (; masks && *masks; masks++)
		if (lev_path_under(p, *masks))
			return true;
	return false;
}

/* Grant LEAF on everything under DIR except the masks, rule by rule (no
 * mount namespace to hide them): every ancestor of a mask gets SELF only,
 * every other entry LEAF, unless it resolves into or above a mask. */
static void plan_except(struct lev_sbx_nsplan *pl, const char *dir, char *const *masks,
			uint64_t self, uint64_t leaf, int depth)
{
	DIR *d;
	struct dirent *de;

	if (self)
		add_rule(pl, dir, self);
	if (depth > 32)
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		_cleanup_free_ char *child = NULL;
		char real[PATH_MAX];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		child = lev_path_join(dir, de->d_name);
		if (is_masked(child, masks))
			continue;
		if (above_a_mask(child, masks)) {
			if (is_real_dir(child))
				plan_except(pl, child, masks, self, leaf, depth + 1);
			continue;
		}
		if (realpath(child, real) && (is_masked(real, masks) || above_a_mask(real, masks)))
			continue;	/* a link into (or above) a secret */
		add_rule(pl, child, leaf);
	}
	closedir(d);
}

/* Reads everywhere under DIR except the masks: their ancestors are only listable. */
static void plan_read_except(struct lev_sbx_nsplan *pl, const char *dir, char *const *masks,
			     int depth)
{
	plan_except(pl, dir, masks, LEV_LL_FS_READ_DIR, LEV_LL_FS_READ, depth);
}

static int plan_workdir_writes(struct lev_sbx_nsplan *pl, const char *workdir,
			       char *const *protect, struct lev_err *err);

/*
 * The Landlock rules of a namespace sandbox.  With a mount namespace the
 * protected files (PROTECT) are read-only mounts (plan_protect_mounts());
 * without one the workdir's write grant is split around them.
 */
static int plan_landlock(struct lev_sbx_nsplan *pl, const struct lev_sandbox *sb,
			 char *const *protect, struct lev_err *err)
{
	size_t i;

	pl->use_ll = true;
	pl->ll.abi = sb->ll_abi;
	pl->ll.handled_fs = lev_landlock_fs_rights(sb->ll_abi);
	pl->ll.handled_net = sb->spec.network ? 0 : lev_landlock_net_rights(sb->ll_abi);
	pl->ll.scoped = lev_landlock_scopes(sb->ll_abi);

	if (pl->mode == LEV_SBX_NS) {
		add_rule(pl, "/", LEV_LL_FS_READ);
		add_rule(pl, "/tmp", LEV_LL_FS_ALL);
		add_rule(pl, "/dev/shm", LEV_LL_FS_ALL);
		add_rule(pl, "/dev/pts", LEV_LL_FS_READ_DIR | DEV_RW);
	} else {
		/* no mount namespace: the masks must be kept out by Landlock */
		char **all = lev_strv_copy(sb->masks);

		plan_read_except(pl, "/", all, 0);
		lev_strv_free(all);
		if (pl->tmpdir)
			add_rule(pl, pl->tmpdir, LEV_LL_FS_ALL);
	}
	for (i = 0; i < ARRAY_SIZE(dev_nodes); i++) {
		_cleanup_free_ char *p = xasprintf("/dev/%s", dev_nodes[i]);
		add_rule(pl, p, DEV_RW);
	}
	if (pl->mode == LEV_SBX_NS) {
		add_rule(pl, sb->workdir, LEV_LL_FS_ALL);
	} else {
		int r = plan_workdir_writes(pl, sb->workdir, protect, err);

		if (r < 0)
			return r;
	}
	pl->ll.rules = pl->rules;
	pl->ll.n_rules = pl->n_rules;
	return 0;
}

/* The system trees a pre-approved host command may read (with the masks kept out). */
static const char *const system_trees[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
	"/proc", "/sys", "/dev",
};

/*
 * Read TREE, walking around the masks beneath it (or beneath what it
 * resolves to); nothing when it, or what it resolves to, is masked.  A tree
 * that holds a mask (/etc holds /etc/shadow) is walked, never dropped.
 */
static void add_read_tree(struct lev_sbx_nsplan *pl, const char *tree, char *const *masks)
{
	char real[PATH_MAX];
	const char *r = realpath(tree, real) ? real : tree;

	if (is_masked(tree, masks) || is_masked(r, masks))
		return;
	if (above_a_mask(tree, masks))
		plan_read_except(pl, tree, masks, 0);
	else if (above_a_mask(r, masks))
		plan_read_except(pl, r, masks, 0);
	else
		add_rule(pl, tree, LEV_LL_FS_READ);
}

#define PATH_LINKS_MAX 4096	/* entries of one PATH directory looked at for links */

/*
 * The programs DIR (a directory on PATH) links to elsewhere (~/.local/bin/x
 * -> ~/.local/share/x/bin/x): each target file itself, so that the line can
 * run what its PATH names, and nothing else beside that file.
 */
static void add_path_links(struct lev_sbx_nsplan *pl, const struct lev_sandbox *sb,
			   const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	size_t seen = 0;

	if (!dp)
		return;
	while ((de = readdir(dp)) && ++seen <= PATH_LINKS_MAX) {
		_cleanup_free_ char *link = NULL;
		char real[PATH_MAX];
		struct stat st;

		if (de->d_type != DT_LNK)
			continue;
		link = lev_path_join(dir, de->d_name);
		if (!realpath(link, real) || stat(real, &st) < 0 || !S_ISREG(st.st_mode) ||
		    is_masked(real, sb->masks) || above_a_mask(real, sb->masks))
			continue;
		add_rule(pl, real, LEV_LL_FS_READ);
	}
	closedir(dp);
}

/*
 * The directories on PATH a pre-approved host command may also read and
 * run programs from (~/.cargo/bin, a tool's own bin directory), and the
 * programs their links name: absolute
 * ones only, and never one that is the root, the home or above it (a PATH
 * naming ~ would otherwise open the whole home to a confined line).  PATH
 * is the one of the environment the command is spawned with (what its
 * shell looks programs up in), never lev's own.
 */
static void add_path_dirs(struct lev_sbx_nsplan *pl, const struct lev_sandbox *sb,
			  const char *path)
{
	_cleanup_free_ char *copy = path ? xstrdup(path) : NULL;
	char *save = NULL;

	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
		char real[PATH_MAX];

		if (d[0] != '/' || !realpath(d, real) || !strcmp(real, "/") ||
		    (sb->home && lev_path_under(sb->home, real)))
			continue;
		add_read_tree(pl, real, sb->masks);
		add_path_links(pl, sb, real);
	}
}

/* The user's git configuration files, under ~/.config/git or $XDG_CONFIG_HOME/git. */
static const char *const git_config_files[] = { "config", "attributes", "ignore" };

/*
 * What git reads of the user's own (~/.gitconfig, and the files above under
 * ~/.config/git and $XDG_CONFIG_HOME/git), so that a pre-approved git line
 * behaves as it does outside lev: each file only, never its directory (git's
 * credential store may sit beside them, $XDG_CONFIG_HOME/git/credentials),
 * and never a masked one (a link into lev's own files or a secret).
 */
static void add_git_config(struct lev_sbx_nsplan *pl, const struct lev_sandbox *sb)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	_cleanup_free_ char *user = NULL, *home_dir = NULL, *xdg_dir = NULL;
	size_t i;

	if (sb->home) {
		user = lev_path_join(sb->home, ".gitconfig");
		add_read_tree(pl, user, sb->masks);
		home_dir = lev_path_join(sb->home, ".config/git");
	}
	if (xdg && xdg[0] == '/')
		xdg_dir = lev_path_join(xdg, "git");
	for (i = 0; i < ARRAY_SIZE(git_config_files); i++) {
		_cleanup_free_ char *a = home_dir ? lev_path_join(home_dir, git_config_files[i]) : NULL;
		_cleanup_free_ char *b = xdg_dir ? lev_path_join(xdg_dir, git_config_files[i]) : NULL;

		if (a)
			add_read_tree(pl, a, sb->masks);
		if (b)
			add_read_tree(pl, b, sb->masks);
	}
}

/*
 * The read rules of the host fence, planned once per sandbox (the walk
 * around the masks is the costly part) and kept in sb->fence[CONFINED]:
 * everywhere but the masks, or (CONFINED) the system trees, the directories on PATH, the
 * user's git configuration files, the workdir,
 * [sandbox] writable and the granted read paths.  The root directory
 * itself is listable in both (a shell stats its way down from it).
 */
static const struct lev_sbx_fence *fence_reads(const struct lev_sandbox *sb, bool confined,
					      const char *path_env)
{
	struct lev_sbx_fence *f = &sb->fence[confined];
	struct lev_sbx_nsplan *scratch;
	size_t i;

	if (f->ready && (!confined || !strcmp(f->path_env, path_env)))
		return f;
	/* planned again for a command whose PATH differs */
	f->paths = lev_strv_free(f->paths);
	free(f->access);
	free(f->path_env);
	f->path_env = xstrdup(path_env);
	scratch = xcalloc(1, sizeof(*scratch));
	if (!confined) {
		plan_read_except(scratch, "/", sb->masks, 0);
	} else {
		add_rule(scratch, "/", LEV_LL_FS_READ_DIR);
		for (i = 0; i < ARRAY_SIZE(system_trees); i++)
			add_read_tree(scratch, system_trees[i], sb->masks);
		for (char *const *r = sb->read_paths; r && *r; r++)
			add_read_tree(scratch, *r, sb->masks);
		add_path_dirs(scratch, sb, path_env);
		add_git_config(scratch, sb);
	}
	f->access = xreallocarray(NULL, scratch->n_rules ? scratch->n_rules : 1,
				  sizeof(*f->access));
	for (i = 0; i < scratch->n_rules; i++) {
		f->paths = lev_strv_push(f->paths, scratch->rules[i].path);
		f->access[i] = scratch->rules[i].access;
	}
	f->n = scratch->n_rules;
	f->ready = true;
	lev_sbx_nsplan_free(scratch);
	return f;
}

#define PROTECT_WALK_MAX 50000	/* workdir entries looked at for protected files */

/* Collect the files under DIR (REL from the workdir) that GLOBS protect. */
static int find_protected(const char *dir, const char *rel, char *const *globs, char ***out,
			  size_t *seen, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int r = 0;

	if (!d)
		return 0;
	while (r == 0 && (de = readdir(d))) {
		_cleanup_free_ char *child = NULL, *crel = NULL;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++*seen > PROTECT_WALK_MAX) {
			r = -E2BIG;
			break;
		}
		child = lev_path_join(dir, de->d_name);
		crel = rel ? lev_path_join(rel, de->d_name) : xstrdup(de->d_name);
		if (lev_integrity_globs_match(globs, crel, child))
			*out = lev_strv_push(*out, child);
		else if (de->d_type == DT_DIR && depth < 32)
			r = find_protected(child, crel, globs, out, seen, depth + 1);
	}
	closedir(d);
	return r;
}

int lev_sbx_protected_files(const char *workdir, char *const *globs, char ***out,
			    struct lev_err *err)
{
	size_t seen = 0;

	*out = NULL;
	if (!globs || !globs[0])
		return 0;
	if (find_protected(workdir, NULL, globs, out, &seen, 0) < 0) {
		*out = lev_strv_free(*out);
		return lev_err_set(err, LEV_EUNSUPP,
				   "the workdir holds more than %d entries, too many to keep its "
				   "protected files read-only", PROTECT_WALK_MAX);
	}
	return 0;
}

/*
 * The workdir's write grant.  With files [integrity] protects in it
 * (lev_sandbox_limits.protect), Landlock (which only grants) gets the grant
 * split around them: every directory that holds one keeps reading and
 * making entries but neither writes, truncates, removes nor renames (so
 * `>>`, `sed -i`, `cp` and `mv` over the file all fail), everything else
 * in it stays fully writable, and the protected files themselves are only
 * read.  The trade: in those directories a new file can be made but not
 * written, and nothing can be removed or renamed, while the grant is split.
 */
static int plan_workdir_writes(struct lev_sbx_nsplan *pl, const char *workdir,
			       char *const *protect, struct lev_err *err)
{
	_cleanup_strv_ char **files = NULL;

	if (lev_sbx_protected_files(workdir, protect, &files, err) < 0)
		return err ? err->code : LEV_EUNSUPP;
	if (!files) {
		add_rule(pl, workdir, LEV_LL_FS_ALL);
		return 0;
	}
	plan_except(pl, workdir, files,
		    LEV_LL_FS_READ | LEV_LL_FS_MAKE_REG | LEV_LL_FS_MAKE_DIR | LEV_LL_FS_MAKE_SYM |
			    LEV_LL_FS_MAKE_FIFO | LEV_LL_FS_MAKE_SOCK,
		    LEV_LL_FS_ALL, 0);
	for (char **f = files; *f; f++)
		add_rule(pl, *f, LEV_LL_FS_READ_FILE);
	return 0;
}

/*
 * The protected files of a namespace sandbox with a mount namespace: each
 * bound onto itself read-only (so `>>`, `truncate` and `cp` over it meet a
 * read-only file system, and `sed -i`, `mv`, `ln -sf` and `rm` a busy mount
 * point), and every directory between the workdir and it bound onto itself
 * (a mount point is not renamed either, so `mv sub elsewhere` cannot carry
 * the file away and put another in its place).  Everything else in those
 * directories stays writable.  Without a mount namespace Landlock splits
 * the workdir's write grant (plan_workdir_writes()); with neither, a
 * workdir that holds a protected file runs no command.
 */
static int plan_protect_mounts(struct lev_sbx_nsplan *pl, const struct lev_sandbox *sb,
			       char *const *protect, struct lev_err *err)
{
	_cleanup_strv_ char **files = NULL, **dirs = NULL;
	size_t wl = strlen(sb->workdir);

	if (lev_sbx_protected_files(sb->workdir, protect, &files, err) < 0)
		return err ? err->code : LEV_EUNSUPP;
	if (!files)
		return 0;
	if (pl->mode != LEV_SBX_NS && !pl->use_ll)
		return lev_err_set(err, LEV_EUNSUPP,
				   "the workdir holds files [integrity] protects ('%s'), and this "
				   "sandbox has neither a mount namespace nor Landlock to keep them "
				   "read-only while untrusted content is live", files[0]);
	if (pl->mode != LEV_SBX_NS)
		return 0;	/* plan_landlock() split the write grant */
	/* each directory after the ones above it: a bind carries what is below */
	for (char **f = files; *f; f++)
		for (const char *s = strchr(*f + wl + 1, '/'); s; s = strchr(s + 1, '/')) {
			_cleanup_free_ char *d = xstrndup(*f, (size_t)(s - *f));

			if (!lev_strv_contains(dirs, d))
				dirs = lev_strv_push(dirs, d);
		}
	for (char **d = dirs; d && *d; d++)
		add_op(pl, MOP_BIND_SELF, *d, NULL, -1, false);
	for (char **f = files; *f; f++) {
		struct stat st;

		/* a mount lands on what a link names: the link itself could be replaced */
		if (lstat(*f, &st) == 0 && S_ISLNK(st.st_mode))
			return lev_err_set(err, LEV_EUNSUPP,
					   "the protected file '%s' is a symbolic link, which a "
					   "read-only mount cannot keep in place; while untrusted "
					   "content is live no command runs beside it", *f);
		add_op(pl, MOP_RO_SELF, *f, NULL, -1, false);
	}
	return 0;
}

/*
 * The host fence of kind none (lev_sandbox_limits.host_fence, read_fence):
 * Landlock under no_new_privs.  Writes: the workdir, the command's scratch
 * directory, [sandbox] writable and the harmless devices.  Reads: see
 * fence_reads().  Landlock only allows, so a secret is kept out by never
 * granting a tree that holds it.
 */
static int plan_host_fence(struct lev_sbx_nsplan *pl, const struct lev_sandbox *sb, bool confined,
			   char *const *protect, const char *path_env, struct lev_err *err)
{
	int abi = lev_landlock_abi();
	const struct lev_sbx_fence *f;
	size_t i;
	int r;

	if (abi < 1)
		return lev_err_set(err, LEV_EUNSUPP,
				   "sandbox kind none runs every command inside a Landlock fence, "
				   "and this kernel has no Landlock (missing layer: landlock)");
	pl->use_nnp = true;
	pl->use_ll = true;
	pl->ll.abi = abi;
	pl->ll.handled_fs = lev_landlock_fs_rights(abi);
	f = fence_reads(sb, confined, path_env);
	for (i = 0; i < f->n; i++)
		add_rule(pl, f->paths[i], f->access[i]);
	for (i = 0; i < ARRAY_SIZE(dev_nodes); i++) {
		_cleanup_free_ char *p = xasprintf("/dev/%s", dev_nodes[i]);
		add_rule(pl, p, DEV_RW);
	}
	add_rule(pl, "/dev/pts", LEV_LL_FS_READ_DIR | DEV_RW);
	r = plan_workdir_writes(pl, sb->workdir, protect, err);
	if (r < 0)
		return r;
	if (pl->tmpdir)
		add_rule(pl, pl->tmpdir, LEV_LL_FS_ALL);
	/* a writable tree that holds a mask (~/.cargo holds ~/.cargo/credentials)
	 * is opened around it: its entries, not the tree itself */
	for (char *const *w = sb->writable; w && *w; w++)
		if (above_a_mask(*w, sb->masks))
			plan_except(pl, *w, sb->masks, 0, LEV_LL_FS_ALL, 0);
		else
			add_rule(pl, *w, LEV_LL_FS_ALL);
	pl->ll.rules = pl->rules;
	pl->ll.n_rules = pl->n_rules;
	return 0;
}

char **lev_sbx_ns_env(const struct lev_sandbox *sb, char *const *envp, const char *tmpdir)
{
	char **env = lev_envfilter_apply(&sb->env, envp);
	char **out = NULL, **e;

	if (!tmpdir)
		return env;
	/* only one temporary directory is writable: point TMPDIR at it */
	for (e = env; e && *e; e++)
		if (strncmp(*e, "TMPDIR=", 7) != 0)
			out = lev_strv_push(out, *e);
	out = lev_strv_push_take(out, xasprintf("TMPDIR=%s", tmpdir));
	lev_strv_free(env);
	return out;
}

/* A private scratch directory under /tmp (only named, when MAKE is false: a plan). */
static int plan_tmpdir(struct lev_sbx_nsplan *pl, bool make, struct lev_err *err)
{
	char tmpl[] = "/tmp/lev-sandbox-XXXXXX";

	if (make && !mkdtemp(tmpl))
		return lev_err_errno(err, -errno, "cannot create a private temporary directory");
	pl->tmpdir = xstrdup(tmpl);
	return 0;
}

int lev_sbx_ns_build_plan(const struct lev_sandbox *sb, char *const *argv, char *const *envp,
			  const char *cwd, const struct lev_sandbox_limits *limits,
			  bool make_tmpdir, struct lev_sbx_nsplan **out, struct lev_err *err)
{
	struct lev_sbx_nsplan *pl = xcalloc(1, sizeof(*pl));
	const char *tmp_env = NULL;

	pl->limits = *limits;
	pl->uid = sb->uid;
	pl->gid = sb->gid;
	pl->cwd = xstrdup(cwd ? cwd : sb->workdir);
	pl->argv = lev_strv_copy(argv);

	if (sb->kind == LEV_SANDBOX_NAMESPACE && (sb->layers & LEV_LAYER_USERNS)) {
		pl->mode = LEV_SBX_NS;
		pl->clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
				  CLONE_NEWUTS;
		if (!sb->spec.network)
			pl->clone_flags |= CLONE_NEWNET;
		pl->set_hostname = true;
		tmp_env = "/tmp";
	} else {
		pl->mode = LEV_SBX_PLAIN;
	}

	if (sb->kind == LEV_SANDBOX_NAMESPACE) {
		int r = 0;

		pl->use_nnp = true;
		pl->use_caps = true;
		pl->use_rlimits = true;
		if (pl->mode == LEV_SBX_PLAIN && (sb->layers & LEV_LAYER_LANDLOCK)) {
			if (plan_tmpdir(pl, make_tmpdir, err) < 0) {
				lev_sbx_nsplan_free(pl);
				return err ? err->code : -EIO;
			}
			tmp_env = pl->tmpdir;
		}
		if (pl->mode == LEV_SBX_NS)
			plan_mounts(pl, sb);
		if (sb->layers & LEV_LAYER_LANDLOCK)
			r = plan_landlock(pl, sb, limits->protect, err);
		if (r == 0)
			r = plan_protect_mounts(pl, sb, limits->protect, err);
		if (r < 0) {
			if (pl->tmpdir)
				(void)rmdir(pl->tmpdir);
			lev_sbx_nsplan_free(pl);
			return r;
		}
		if (sb->have_sc) {
			pl->use_sc = true;
			pl->sc = &sb->sc;
		}
	}
	if (sb->kind == LEV_SANDBOX_NONE) {
		/* no fence, but nothing to reach lev with either: as root,
		 * CAP_SYS_PTRACE would read lev's memory and /proc entries */
		pl->use_nnp = true;
		pl->use_caps = true;
	}
	if (sb->kind == LEV_SANDBOX_NONE && sb->have_sc && (sb->sc.flags & LEV_SCFILTER_NET_ONLY)) {
		/* network = false on the host: the network-only filter */
		pl->use_sc = true;
		pl->sc = &sb->sc;
	}
	if (sb->kind == LEV_SANDBOX_NONE && (limits->host_fence || limits->read_fence)) {
		int r = plan_tmpdir(pl, make_tmpdir, err);

		if (r == 0) {
			pl->envp = lev_sbx_ns_env(sb, envp, pl->tmpdir);
			r = plan_host_fence(pl, sb, limits->read_fence, limits->protect,
					    lev_sbx_env_path(pl->envp), err);
		}
		if (r < 0) {
			lev_sbx_nsplan_free(pl);
			return r;
		}
		tmp_env = pl->tmpdir;
	}
	if (!pl->envp)
		pl->envp = lev_sbx_ns_env(sb, envp, tmp_env);
	pl->cands = lev_sbx_exec_candidates(argv[0], lev_sbx_env_path(pl->envp));
	*out = pl;
	return 0;
}

/* ---- the child (async-signal-safe from here to the parent's spawn) ---- */

static int mkdirs(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path), i;

	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		if (i < n)
			buf[i] = '/';
	}
	return 0;
}

static int make_staging(void)
{
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	int fs, mnt, fd;

	fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		close(fs);
		return -1;
	}
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	close(fs);
	if (mnt < 0)
		return -1;
	if (mkdirat(mnt, "d", 0) < 0)
		goto fail;
	fd = openat(mnt, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	close(fd);
	if (mount_setattr(mnt, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0)
		goto fail;
	return mnt;
fail:
	close(mnt);
	return -1;
}

static int run_op(const struct mop *m, int *slots, int *staging)
{
	struct mount_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	switch (m->kind) {
	case MOP_PRIVATE:
		return mount(NULL, m->path, NULL, MS_REC | MS_PRIVATE, NULL);
	case MOP_CLONE:
		fd = open_tree(AT_FDCWD, m->path,
			       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (m->recursive ? AT_RECURSIVE : 0));
		if (fd < 0)
			return -1;
		slots[m->slot] = fd;
		return 0;
	case MOP_RO_ROOT:
		a.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		return mount_setattr(AT_FDCWD, m->path, AT_RECURSIVE, &a, sizeof(a));
	case MOP_TMPFS:
		return mount("tmpfs", m->path, "tmpfs", MS_NOSUID | MS_NODEV, m->arg);
	case MOP_MKDIRS:
		return mkdirs(m->path);
	case MOP_MKFILE:
		fd = open(m->path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd < 0)
			return -1;
		close(fd);
		return 0;
	case MOP_SYMLINK:
		return symlink(m->arg, m->path);
	case MOP_ATTACH:
		if (slots[m->slot] < 0) {
			errno = ENOENT;
			return -1;
		}
		return move_mount(slots[m->slot], "", AT_FDCWD, m->path, MOVE_MOUNT_F_EMPTY_PATH);
	case MOP_DEVPTS:
		return mount("devpts", m->path, "devpts", MS_NOSUID | MS_NOEXEC, m->arg);
	case MOP_PROC:
		return mount("proc", m->path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	case MOP_WRITE: {
		ssize_t n;
		size_t len = strlen(m->arg);

		fd = open(m->path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		n = write(fd, m->arg, len);
		close(fd);
		if (n != (ssize_t)len) {
			if (n >= 0)
				errno = EIO;
			return -1;
		}
		return 0;
	}
	case MOP_SETRO:
		a.attr_set = MOUNT_ATTR_RDONLY;
		return mount_setattr(AT_FDCWD, m->path, 0, &a, sizeof(a));
	case MOP_BIND_SELF:
	case MOP_RO_SELF: {
		int r;

		fd = open_tree(AT_FDCWD, m->path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (fd < 0)
			return -1;
		a.attr_set = MOUNT_ATTR_RDONLY;
		r = m->kind == MOP_RO_SELF
			    ? mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a))
			    : 0;
		if (r == 0)
			r = move_mount(fd, "", AT_FDCWD, m->path, MOVE_MOUNT_F_EMPTY_PATH);
		close(fd);
		return r;
	}
	case MOP_MASK_DIR:
	case MOP_MASK_FILE: {
		int t, r;

		if (*staging < 0) {
			*staging = make_staging();
			if (*staging < 0)
				return -1;
		}
		t = open_tree(*staging, m->kind == MOP_MASK_DIR ? "d" : "f",
			      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (t < 0)
			return -1;
		r = move_mount(t, "", AT_FDCWD, m->path, MOVE_MOUNT_F_EMPTY_PATH);
		close(t);
		return r;
	}
	}
	errno = EINVAL;
	return -1;
}

int lev_sbx_ns_run_ops(const struct lev_sbx_nsplan *pl, size_t from, size_t to, int *failed)
{
	int slots[NSLOTS], staging = -1;
	size_t i;
	int rc = 0;

	for (i = 0; i < NSLOTS; i++)
		slots[i] = -1;
	for (i = from; i < to && i < pl->n_ops; i++) {
		if (run_op(&pl->ops[i], slots, &staging) < 0 && !pl->ops[i].optional) {
			rc = -errno;
			*failed = (int)i;
			break;
		}
	}
	for (i = 0; i < NSLOTS; i++)
		if (slots[i] >= 0)
			close(slots[i]);
	if (staging >= 0)
		close(staging);
	return rc;
}

int lev_sbx_ns_rlimits(const struct lev_sbx_nsplan *pl, const struct lev_sandbox_limits *limits,
		       int report_fd)
{
	int idx = -1, r;

	if (!pl->use_rlimits)
		return 0;
	r = lev_sbx_apply_rlimits(limits, pl->uid == 0, &idx);
	if (r < 0) {
		lev_sbx_report(report_fd, LEV_SBX_PH_RLIMIT, idx, -r);
		return -1;
	}
	return 0;
}

int lev_sbx_ns_helper_lockdown(const struct lev_sbx_nsplan *pl, int *phase)
{
	int r;

	if (pl->use_caps)
		lev_sbx_drop_bounding();
	if (!pl->use_sc_cells)
		return 0;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		*phase = LEV_SBX_PH_NNP;
		return -errno;
	}
	r = lev_scfilter_install(&pl->sc_cells);
	if (r < 0)
		*phase = LEV_SBX_PH_SECCOMP;
	return r;
}

int lev_sbx_ns_lockdown(const struct lev_sbx_nsplan *pl, int ll_fd, bool cell, int *phase,
			int *idx)
{
	int r;

	*idx = -1;
	if (pl->use_nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		*phase = LEV_SBX_PH_NNP;
		*idx = 0;
		return -errno;
	}
	if (pl->use_ll) {
		r = ll_fd >= 0 ? lev_landlock_restrict(ll_fd) : lev_landlock_enforce(&pl->ll, idx);
		if (r < 0) {
			*phase = LEV_SBX_PH_LANDLOCK;
			return r;
		}
	}
	if (pl->use_caps) {
		r = lev_sbx_drop_caps(!cell);
		if (r < 0) {
			*phase = LEV_SBX_PH_CAPS;
			*idx = 0;
			return r;
		}
	}
	if (pl->use_sc && !(cell && pl->use_sc_cells)) {
		r = lev_scfilter_install(pl->sc);
		if (r < 0) {
			*phase = LEV_SBX_PH_SECCOMP;
			*idx = 0;
			return r;
		}
	}
	return 0;
}

int lev_sbx_ns_fence(const struct lev_sbx_nsplan *pl, const char *cwd,
		     const struct lev_sandbox_limits *limits, int ll_fd, int report_fd)
{
	int phase = LEV_SBX_PH_NONE, idx = -1, r;

	if (chdir(cwd) < 0) {
		lev_sbx_report(report_fd, LEV_SBX_PH_CHDIR, 0, errno);
		return -1;
	}
	if (limits && lev_sbx_ns_rlimits(pl, limits, report_fd) < 0)
		return -1;
	r = lev_sbx_ns_lockdown(pl, ll_fd, false, &phase, &idx);
	if (r < 0) {
		lev_sbx_report(report_fd, (enum lev_sbx_phase)phase, idx, -r);
		return -1;
	}
	return 0;
}


__attribute__((noreturn)) void lev_sbx_ns_exec(char *const *cands, char *const *argv,
					       char *const *envp,
					       const struct lev_sbx_childfds *f, bool reset_signals)
{
	int e;

	if (setsid() < 0) {
		lev_sbx_report(f->report_wr, LEV_SBX_PH_STDIO, 0, errno);
		_exit(125);
	}
	if ((f->in != 0 && dup2(f->in, 0) < 0) || dup2(f->out, 1) < 0 || dup2(f->err, 2) < 0) {
		lev_sbx_report(f->report_wr, LEV_SBX_PH_STDIO, 1, errno);
		_exit(125);
	}
	if (reset_signals)
		lev_sbx_reset_signals();
	(void)umask(022);	/* lev runs with 077; commands get the usual default */
	(void)syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
	e = lev_sbx_exec(cands, argv, envp);
	lev_sbx_report(f->report_wr, LEV_SBX_PH_EXEC, 0, e);
	_exit(e == ENOENT ? 127 : 126);
}

static __attribute__((noreturn)) void ns_init(const struct lev_sbx_nsplan *pl,
					      const struct lev_sbx_childfds *f)
{
	char go;
	ssize_t n;
	long w;
	int st;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	do
		n = read(f->sync_rd, &go, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1) {
		lev_sbx_report(f->report_wr, LEV_SBX_PH_SYNC, 0, EPIPE);
		_exit(125);
	}
	close(f->sync_rd);

	{
		int failed = -1, r = lev_sbx_ns_run_ops(pl, 0, pl->n_ops, &failed);

		if (r < 0) {
			lev_sbx_report(f->report_wr, LEV_SBX_PH_MOUNT, failed, -r);
			_exit(125);
		}
	}
	if (pl->set_hostname && sethostname("lev-sandbox", 11) < 0) {
		lev_sbx_report(f->report_wr, LEV_SBX_PH_HOSTNAME, 0, errno);
		_exit(125);
	}
	if (lev_sbx_ns_fence(pl, pl->cwd, &pl->limits, -1, f->report_wr) < 0)
		_exit(125);
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	w = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
	if (w < 0) {
		lev_sbx_report(f->report_wr, LEV_SBX_PH_FORK, 0, errno);
		_exit(125);
	}
	if (w == 0)
		lev_sbx_ns_exec(pl->cands, pl->argv, pl->envp, f, true);

	/* PID 1: reap everything; report the command's status, then go, which
	 * kills whatever is left in the namespace. */
	close(f->report_wr);
	if (f->in > 2)
		close(f->in);
	close(f->out);
	close(f->err);
	for (;;) {
		long r = waitpid(-1, &st, __WALL);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			_exit(125);
		}
		if (r == w) {
			do
				n = write(f->status_wr, &st, sizeof(st));
			while (n < 0 && errno == EINTR);
			_exit(0);
		}
	}
}

static __attribute__((noreturn)) void plain_child(const struct lev_sbx_nsplan *pl,
						  const struct lev_sbx_childfds *f, pid_t parent)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(125);
	if (lev_sbx_ns_fence(pl, pl->cwd, &pl->limits, -1, f->report_wr) < 0)
		_exit(125);
	lev_sbx_ns_exec(pl->cands, pl->argv, pl->envp, f, true);
}

/* ---- the parent ---- */

static int write_file(const char *path, const char *s)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(s);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int lev_sbx_write_maps(pid_t pid, uid_t uid, gid_t gid, struct lev_err *err)
{
	char path[64], map[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
	r = write_file(path, "deny");
	if (r < 0 && r != -ENOENT)
		return lev_err_errno(err, r, "cannot write '%s'", path);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	r = write_file(path, map);
	if (r < 0)
		return lev_err_errno(err, r, "cannot write '%s'", path);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	r = write_file(path, map);
	if (r < 0)
		return lev_err_errno(err, r, "cannot write '%s'", path);
	return 0;
}

static void closep2(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}

/* The pipes between lev and a command it starts (sync, status: namespace only). */
struct spawn_pipes {
	int rep[2], out[2], err[2];
	int sync[2], stat[2];
};

#define SPAWN_PIPES_INIT                                                        \
	{ { -1, -1 }, { -1, -1 }, { -1, -1 }, { -1, -1 }, { -1, -1 } }

static void spawn_pipes_close(struct spawn_pipes *sp)
{
	closep2(sp->rep);
	closep2(sp->out);
	closep2(sp->err);
	closep2(sp->sync);
	closep2(sp->stat);
}

static int spawn_pipes_open(const struct lev_sbx_nsplan *pl, struct spawn_pipes *sp,
			    struct lev_err *err)
{
	if (pipe2(sp->rep, O_CLOEXEC) < 0 || pipe2(sp->out, O_CLOEXEC) < 0 ||
	    pipe2(sp->err, O_CLOEXEC) < 0 ||
	    (pl->mode == LEV_SBX_NS && (pipe2(sp->sync, O_CLOEXEC) < 0 ||
					pipe2(sp->stat, O_CLOEXEC) < 0)))
		return lev_err_errno(err, -errno, "cannot create pipes");
	return 0;
}

static void close_end(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Close the child's ends of the pipes in the parent. */
static void spawn_pipes_parent(struct spawn_pipes *sp)
{
	close_end(&sp->rep[1]);
	close_end(&sp->out[1]);
	close_end(&sp->err[1]);
	close_end(&sp->sync[0]);
	close_end(&sp->stat[1]);
}

/*
 * The namespace child waits for lev's go-ahead (so it does nothing once lev
 * is gone): let it go.  On failure the child is killed and reaped.
 */
static int release_ns_child(pid_t pid, int pidfd, struct spawn_pipes *sp, struct lev_err *err)
{
	char go = 'g';
	int r = 0, st;

	/* a child that died first is EPIPE, never a SIGPIPE */
	if (lev_write_nosig(sp->sync[1], &go, 1) != 1)
		r = lev_err_errno(err, -errno, "cannot start the sandbox");
	closep2(sp->sync);
	if (r == 0)
		return 0;
	(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	while (waitpid(pid, &st, __WALL) < 0 && errno == EINTR)
		;
	return r;
}

/* The running command: PL and the read ends of SP move into it. */
static struct lev_sandbox_proc *spawned_proc(struct lev_sandbox *sb, struct lev_sbx_nsplan *pl,
					     pid_t pid, int pidfd, struct spawn_pipes *sp,
					     const char *argv0,
					     const struct lev_sandbox_limits *limits,
					     const struct lev_sandbox_io *io)
{
	struct lev_sandbox_proc *p = lev_sbx_proc_alloc(sb, pl->mode);

	p->pid = pid;
	p->pidfd = pidfd;
	p->report_fd = TAKE_FD(sp->rep[0]);
	p->status_fd = TAKE_FD(sp->stat[0]);
	p->tmpdir = TAKE_PTR(pl->tmpdir);
	p->plan = pl;
	lev_sbx_proc_started(p, TAKE_FD(sp->out[0]), TAKE_FD(sp->err[0]), argv0, io, limits);
	if (p->status_fd >= 0)
		(void)fcntl(p->status_fd, F_SETFL, O_NONBLOCK);
	return p;
}

int lev_sbx_ns_spawn(struct lev_sandbox *sb, char *const *argv, char *const *envp,
		     const char *cwd, const struct lev_sandbox_limits *limits,
		     const struct lev_sandbox_io *io, struct lev_sandbox_proc **out,
		     struct lev_err *err)
{
	struct lev_sbx_nsplan *pl = NULL;
	struct spawn_pipes sp = SPAWN_PIPES_INIT;
	int in = -1, pidfd = -1, r;
	bool own_in = false;
	struct lev_sbx_childfds f;
	pid_t parent = getpid();
	long pid;

	/* a warm cell is fenced before its command comes: protected files
	 * (lev_sandbox_limits.protect) are mounted read-only by a cold start */
	if (sb->kind == LEV_SANDBOX_NAMESPACE && (sb->layers & LEV_LAYER_USERNS) && !sb->cold &&
	    !(limits->protect && limits->protect[0])) {
		r = lev_sbx_warm_spawn(sb, argv, envp, cwd, limits, io, out, err);
		if (r != 1)
			return r;
	}
	r = lev_sbx_ns_build_plan(sb, argv, envp, cwd, limits, true, &pl, err);
	if (r < 0)
		return r;
	r = spawn_pipes_open(pl, &sp, err);
	if (r < 0)
		goto fail;
	if (io->stdin_fd >= 0) {
		in = io->stdin_fd;
	} else {
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (in < 0) {
			r = lev_err_errno(err, -errno, "cannot open '/dev/null'");
			goto fail;
		}
		own_in = true;
	}
	f.sync_rd = sp.sync[0];
	f.report_wr = sp.rep[1];
	f.status_wr = sp.stat[1];
	f.in = in;
	f.out = sp.out[1];
	f.err = sp.err[1];

	if (pl->mode == LEV_SBX_NS)
		pid = lev_sbx_ns_clone(pl->clone_flags, &pidfd);
	else if ((pid = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, &pidfd, NULL, 0)) < 0)
		pid = -errno;
	if (pid < 0) {
		r = (int)pid;
		if (pl->mode == LEV_SBX_NS)
			r = lev_err_errno(err, r, "cannot create the sandbox namespaces");
		else
			r = lev_err_errno(err, r, "cannot start '%s'", argv[0]);
		goto fail;
	}
	if (pid == 0) {
		if (pl->mode == LEV_SBX_NS)
			ns_init(pl, &f);
		plain_child(pl, &f, parent);
	}

	/* parent */
	if (own_in)
		close(in);
	spawn_pipes_parent(&sp);
	if (pl->mode == LEV_SBX_NS) {
		r = release_ns_child((pid_t)pid, pidfd, &sp, err);
		if (r < 0) {
			close(pidfd);
			spawn_pipes_close(&sp);
			lev_sbx_nsplan_free(pl);
			return r;
		}
	}
	*out = spawned_proc(sb, pl, (pid_t)pid, pidfd, &sp, argv[0], limits, io);
	return 0;

fail:
	if (own_in && in >= 0)
		close(in);
	spawn_pipes_close(&sp);
	if (pl && pl->tmpdir)
		(void)rmdir(pl->tmpdir);
	lev_sbx_nsplan_free(pl);
	return r;
}

/* ---- explaining a failed step ---- */

static void mop_desc(const struct mop *m, char *buf, size_t size)
{
	switch (m->kind) {
	case MOP_PRIVATE:
		snprintf(buf, size, "make '%s' private (recursive)", m->path);
		break;
	case MOP_CLONE:
		snprintf(buf, size, "clone the mount at '%s'%s", m->path,
			 m->recursive ? " (recursive)" : "");
		break;
	case MOP_RO_ROOT:
		snprintf(buf, size, "make '%s' read-only, nosuid, nodev (recursive)", m->path);
		break;
	case MOP_TMPFS:
		snprintf(buf, size, "mount a tmpfs on '%s' (%s)", m->path, m->arg);
		break;
	case MOP_MKDIRS:
		snprintf(buf, size, "create directory '%s'", m->path);
		break;
	case MOP_MKFILE:
		snprintf(buf, size, "create mount point '%s'", m->path);
		break;
	case MOP_SYMLINK:
		snprintf(buf, size, "link '%s' -> '%s'", m->path, m->arg);
		break;
	case MOP_ATTACH:
		snprintf(buf, size, "bind '%s' back (read-%s)", m->path,
			 m->slot == SLOT_WORKDIR ? "write" : "only");
		break;
	case MOP_DEVPTS:
		snprintf(buf, size, "mount a private devpts on '%s'", m->path);
		break;
	case MOP_PROC:
		snprintf(buf, size, "mount a fresh proc on '%s'", m->path);
		break;
	case MOP_WRITE:
		snprintf(buf, size, "write '%s' to '%s'", m->arg, m->path);
		break;
	case MOP_SETRO:
		snprintf(buf, size, "make '%s' read-only", m->path);
		break;
	case MOP_MASK_DIR:
		snprintf(buf, size, "mask directory '%s'", m->path);
		break;
	case MOP_MASK_FILE:
		snprintf(buf, size, "mask file '%s'", m->path);
		break;
	case MOP_BIND_SELF:
		snprintf(buf, size, "bind '%s' onto itself (it holds a protected file)", m->path);
		break;
	case MOP_RO_SELF:
		snprintf(buf, size, "bind the protected file '%s' read-only", m->path);
		break;
	}
}

static const char *rlimit_name(int res)
{
	switch (res) {
	case RLIMIT_NPROC:
		return "RLIMIT_NPROC";
	case RLIMIT_DATA:
		return "RLIMIT_DATA";
	case RLIMIT_FSIZE:
		return "RLIMIT_FSIZE";
	case RLIMIT_NOFILE:
		return "RLIMIT_NOFILE";
	case RLIMIT_CORE:
		return "RLIMIT_CORE";
	case RLIMIT_CPU:
		return "RLIMIT_CPU";
	default:
		return "a resource limit";
	}
}

void lev_sbx_ns_explain(const struct lev_sandbox_proc *p, const struct lev_sbx_report *r,
			struct lev_err *err)
{
	const struct lev_sbx_nsplan *pl = p->plan ? p->plan : p->warm_plan;

	lev_sbx_ns_explain_plan(pl, p->cwd ? p->cwd : pl ? pl->cwd : NULL, p->argv0, r, err);
}

void lev_sbx_ns_explain_plan(const struct lev_sbx_nsplan *pl, const char *cwd, const char *argv0,
			     const struct lev_sbx_report *r, struct lev_err *err)
{
	char what[PATH_MAX + 128];
	int code = r->err > 0 ? -r->err : -EIO;

	switch (r->phase) {
	case LEV_SBX_PH_SYNC:
		snprintf(what, sizeof(what), "lev went away during setup");
		break;
	case LEV_SBX_PH_MOUNT:
		if (pl && r->index >= 0 && (size_t)r->index < pl->n_ops)
			mop_desc(&pl->ops[r->index], what, sizeof(what));
		else
			snprintf(what, sizeof(what), "set up the mounts");
		break;
	case LEV_SBX_PH_HOSTNAME:
		snprintf(what, sizeof(what), "set the hostname");
		break;
	case LEV_SBX_PH_CHDIR:
		snprintf(what, sizeof(what), "enter '%s'", cwd ? cwd : "?");
		break;
	case LEV_SBX_PH_RLIMIT:
		snprintf(what, sizeof(what), "set %s", rlimit_name(r->index));
		break;
	case LEV_SBX_PH_NNP:
		snprintf(what, sizeof(what), "set no_new_privs");
		break;
	case LEV_SBX_PH_LANDLOCK:
		if (pl && r->index >= 0 && (size_t)r->index < pl->n_rules)
			snprintf(what, sizeof(what), "add the Landlock rule for '%s'",
				 pl->rules[r->index].path);
		else
			snprintf(what, sizeof(what), "enforce the Landlock ruleset");
		break;
	case LEV_SBX_PH_CAPS:
		snprintf(what, sizeof(what), "drop every capability");
		break;
	case LEV_SBX_PH_SECCOMP:
		snprintf(what, sizeof(what), "install the seccomp filter");
		break;
	case LEV_SBX_PH_FORK:
		snprintf(what, sizeof(what), "start '%s'", argv0 ? argv0 : "?");
		break;
	case LEV_SBX_PH_STDIO:
		snprintf(what, sizeof(what), "set up the standard streams");
		break;
	case LEV_SBX_PH_HELPER:
		snprintf(what, sizeof(what), "start '%s': the warm helper went away",
			 argv0 ? argv0 : "?");
		break;
	default:
		snprintf(what, sizeof(what), "set up the sandbox");
		break;
	}
	lev_err_errno(err, code, "cannot set up the sandbox: cannot %s", what);
}

/* ---- describe ---- */

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();

	for (; v && *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

static json_t *namespaces_json(const struct lev_sbx_nsplan *pl)
{
	json_t *a = json_array();
	char line[128];

	if (pl->clone_flags & CLONE_NEWUSER) {
		snprintf(line, sizeof(line), "user (uid %u -> %u, gid %u -> %u)", (unsigned)pl->uid,
			 (unsigned)pl->uid, (unsigned)pl->gid, (unsigned)pl->gid);
		json_array_append_new(a, json_string(line));
	}
	if (pl->clone_flags & CLONE_NEWNS)
		json_array_append_new(a, json_string("mount"));
	if (pl->clone_flags & CLONE_NEWPID)
		json_array_append_new(a, json_string("pid"));
	if (pl->clone_flags & CLONE_NEWIPC)
		json_array_append_new(a, json_string("ipc"));
	if (pl->clone_flags & CLONE_NEWUTS)
		json_array_append_new(a, json_string("uts (hostname lev-sandbox)"));
	if (pl->clone_flags & CLONE_NEWNET)
		json_array_append_new(a, json_string("net (no interfaces up)"));
	return a;
}

static json_t *mounts_json(const struct lev_sbx_nsplan *pl)
{
	json_t *a = json_array();
	char line[PATH_MAX + 256];
	size_t i;

	for (i = 0; i < pl->n_ops; i++) {
		mop_desc(&pl->ops[i], line, sizeof(line));
		json_array_append_new(a, json_string(line));
	}
	return a;
}

static json_t *landlock_json(const struct lev_sbx_nsplan *pl)
{
	json_t *ll = json_object(), *a = json_array();
	char line[PATH_MAX + 256];
	char names[512];
	size_t i;

	json_object_set_new(ll, "abi", json_integer(pl->ll.abi));
	lev_landlock_fs_names(pl->ll.handled_fs, names, sizeof(names));
	json_object_set_new(ll, "handled_fs", json_string(names));
	json_object_set_new(ll, "handled_net",
			    json_string(pl->ll.handled_net ? "bind_tcp,connect_tcp" : "-"));
	json_object_set_new(ll, "scoped",
			    json_string(pl->ll.scoped ? "abstract_unix_socket,signal" : "-"));
	for (i = 0; i < pl->n_rules; i++) {
		lev_landlock_fs_names(pl->rules[i].access & pl->ll.handled_fs, names, sizeof(names));
		snprintf(line, sizeof(line), "%s: %s", pl->rules[i].path, names);
		json_array_append_new(a, json_string(line));
	}
	json_object_set_new(ll, "rules", a);
	return ll;
}

/* The seccomp rules for FLAGS, one string a line of lev_scfilter_describe(). */
static json_t *seccomp_json(unsigned flags)
{
	_cleanup_buf_ struct lev_buf b = LEV_BUF_INIT_MAX(1 << 20);
	json_t *a = json_array();
	char *s, *nl;

	(void)lev_scfilter_describe(flags, &b);
	for (s = b.buf; *s; s = nl + 1) {
		nl = strchr(s, '\n');
		if (!nl)
			break;
		json_array_append_new(a, json_stringn(s, (size_t)(nl - s)));
	}
	return a;
}

static json_t *process_json(const struct lev_sandbox *sb, const struct lev_sbx_nsplan *pl)
{
	json_t *a = json_array();
	char line[256];

	if (pl->use_nnp)
		json_array_append_new(a, json_string("no_new_privs"));
	if (pl->use_caps)
		json_array_append_new(a, json_string("all capabilities dropped, securebits locked"));
	if (pl->use_rlimits) {
		snprintf(line, sizeof(line),
			 "rlimits: nproc %llu, data %llu, fsize %llu, nofile %llu, core 0, cpu %llu s",
			 (unsigned long long)pl->limits.nproc, (unsigned long long)pl->limits.mem_bytes,
			 (unsigned long long)pl->limits.fsize, (unsigned long long)pl->limits.nofile,
			 (unsigned long long)pl->limits.cpu_secs);
		json_array_append_new(a, json_string(line));
	}
	json_array_append_new(a, json_string("new session (no controlling terminal)"));
	if (pl->mode == LEV_SBX_NS && sb->cold) {
		snprintf(line, sizeof(line), "cold start per command (%s)", sb->cold);
		json_array_append_new(a, json_string(line));
	} else if (pl->mode == LEV_SBX_NS) {
		json_array_append_new(a, json_string("warm helper: the mounts are made once; each "
						     "command in a fresh cell (PID, mount and IPC "
						     "namespaces, /tmp, /dev/shm, /proc)"));
	}
	if (pl->mode == LEV_SBX_NS)
		json_array_append_new(a, json_string("PID 1 reaps, dies with lev, kills all on exit"));
	else
		json_array_append_new(a, json_string("process group killed on exit"));
	return a;
}

/* The names the command keeps and the names of ENVIRON the filter withholds. */
static json_t *environment_json(const struct lev_sandbox *sb, const struct lev_sbx_nsplan *pl,
				char *const *environ_)
{
	json_t *env = json_object(), *kept = json_array(), *withheld = json_array();
	char *const *e;

	for (e = pl->envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		json_array_append_new(kept, json_stringn(*e, eq ? (size_t)(eq - *e) : strlen(*e)));
	}
	for (e = environ_; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256];
		size_t n = eq ? (size_t)(eq - *e) : strlen(*e);

		if (n == 0 || n >= sizeof(name))
			continue;
		memcpy(name, *e, n);
		name[n] = '\0';
		if (lev_envfilter_withholds(&sb->env, name))
			json_array_append_new(withheld, json_string(name));
	}
	json_object_set_new(env, "shell_env", json_string(lev_shell_env_name(sb->env.mode)));
	json_object_set_new(env, "kept", kept);
	json_object_set_new(env, "withheld", withheld);
	return env;
}

int lev_sbx_ns_describe(const struct lev_sandbox *sb, char *const *argv, const char *cwd,
			void *jv, struct lev_buf *out, struct lev_err *err)
{
	json_t *o = jv;
	struct lev_sbx_nsplan *pl = NULL;
	extern char **environ;
	int r;

	(void)out;
	r = lev_sbx_ns_build_plan(sb, argv, environ, cwd, &sb->limits, false, &pl, err);
	if (r < 0)
		return r;

	json_object_set_new(o, "mode", json_string(pl->mode == LEV_SBX_NS ? "namespaces" :
						   sb->kind == LEV_SANDBOX_NONE ? "host" :
						   "host with layers"));
	json_object_set_new(o, "namespaces", namespaces_json(pl));
	json_object_set_new(o, "mounts", mounts_json(pl));
	json_object_set_new(o, "masks", strv_json(sb->masks));
	if (pl->use_ll)
		json_object_set_new(o, "landlock", landlock_json(pl));
	if (pl->use_sc)
		json_object_set_new(o, "seccomp", seccomp_json(pl->sc->flags));
	if (cells_share_filter(pl))
		json_object_set_new(o, "seccomp_warm_cells",
				    seccomp_json(pl->sc->flags | LEV_SCFILTER_CELLS));
	json_object_set_new(o, "process", process_json(sb, pl));
	json_object_set_new(o, "environment", environment_json(sb, pl, environ));
	lev_sbx_nsplan_free(pl);
	return 0;
}
