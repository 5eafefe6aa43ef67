/*
 * scfilter.c - build, describe and install the sandbox seccomp filter.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/sandbox/scfilter.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* The largest program we accept back from libseccomp (BPF_MAXINSNS). */
#define PROG_MAX_INSNS 4096

enum rule_kind {
	R_DENY,		/* EPERM, whatever the arguments */
	R_ENOSYS,	/* ENOSYS, whatever the arguments */
	R_NSFLAGS,	/* EPERM when arg0 carries any namespace flag */
	R_IOCTL,	/* EPERM for the denied ioctl requests */
	R_FAMILY,	/* EPERM when arg0 != AF_UNIX (network off only) */
};

struct rule {
	const char *name;
	int nr_x86_64;		/* used when libseccomp does not know the name; -1: none */
	enum rule_kind kind;
	const char *why;
	bool net;		/* part of the network-only filter (LEV_SCFILTER_NET_ONLY) */
	bool cell;		/* a warm cell's own set-up needs it (LEV_SCFILTER_CELLS) */
};

static const struct rule rules[] = {
	{ "io_uring_setup", 425, R_DENY, "io_uring can open sockets without socket()", true },
	{ "io_uring_enter", 426, R_DENY, "io_uring", true },
	{ "io_uring_register", 427, R_DENY, "io_uring", true },
	{ "ptrace", 101, R_DENY, "no tracing of other processes", true },
	{ "process_vm_readv", 310, R_DENY, "no reading other processes' memory", true },
	{ "process_vm_writev", 311, R_DENY, "no writing other processes' memory", true },
	{ "pidfd_getfd", 438, R_DENY, "no stealing other processes' files", true },
	{ "process_madvise", 440, R_DENY, "no acting on other processes' memory" },
	{ "bpf", 321, R_DENY, "kernel attack surface" },
	{ "perf_event_open", 298, R_DENY, "kernel attack surface, side channels" },
	{ "userfaultfd", 323, R_DENY, "kernel exploitation aid" },
	{ "kexec_load", 246, R_DENY, "kernel replacement" },
	{ "kexec_file_load", 320, R_DENY, "kernel replacement" },
	{ "init_module", 175, R_DENY, "kernel modules" },
	{ "finit_module", 313, R_DENY, "kernel modules" },
	{ "delete_module", 176, R_DENY, "kernel modules" },
	{ "keyctl", 250, R_DENY, "kernel keyrings are not namespaced" },
	{ "add_key", 248, R_DENY, "kernel keyrings" },
	{ "request_key", 249, R_DENY, "kernel keyrings" },
	{ "mount", 165, R_DENY, "the mount table is fixed", false, true },
	{ "umount2", 166, R_DENY, "masks must stay" },
	{ "pivot_root", 155, R_DENY, "the mount table is fixed" },
	{ "chroot", 161, R_DENY, "the mount table is fixed" },
	{ "fsopen", 430, R_DENY, "new mount API" },
	{ "fsconfig", 431, R_DENY, "new mount API" },
	{ "fsmount", 432, R_DENY, "new mount API" },
	{ "fspick", 433, R_DENY, "new mount API" },
	{ "move_mount", 429, R_DENY, "new mount API", false, true },
	{ "open_tree", 428, R_DENY, "new mount API", false, true },
	{ "open_tree_attr", 467, R_DENY, "new mount API" },
	{ "mount_setattr", 442, R_DENY, "new mount API", false, true },
	{ "open_by_handle_at", 304, R_DENY, "opens files around path checks" },
	{ "name_to_handle_at", 303, R_DENY, "file handles" },
	{ "setns", 308, R_DENY, "no joining other namespaces" },
	{ "unshare", 272, R_NSFLAGS, "a new user namespace would give back capabilities" },
	{ "clone", 56, R_NSFLAGS, "a new user namespace would give back capabilities" },
	{ "clone3", 435, R_ENOSYS, "flags are out of reach; libc falls back to clone" },
	{ "ioctl", 16, R_IOCTL, "no typing into the terminal (TIOCSTI, TIOCLINUX)" },
	{ "socket", 41, R_FAMILY, "network off: AF_UNIX only", true },
	{ "socketpair", 53, R_FAMILY, "network off: AF_UNIX only", true },
};

static const struct {
	uint64_t flag;
	const char *name;	/* without CLONE_ */
	bool cell;		/* a warm cell is cloned with it (LEV_SCFILTER_CELLS) */
} ns_flags[] = {
	{ CLONE_NEWUSER, "NEWUSER", false }, { CLONE_NEWNET, "NEWNET", false },
	{ CLONE_NEWUTS, "NEWUTS", false }, { CLONE_NEWCGROUP, "NEWCGROUP", false },
	{ CLONE_NEWNS, "NEWNS", true }, { CLONE_NEWIPC, "NEWIPC", true },
	{ CLONE_NEWPID, "NEWPID", true },
};

/* Whether FLAGS leave rule R out. */
static bool left_out(const struct rule *r, unsigned flags)
{
	if ((flags & LEV_SCFILTER_NET_ONLY) && !r->net)
		return true;
	return (flags & LEV_SCFILTER_CELLS) && r->cell;
}

/* Whether FLAGS leave namespace flag F out of rule R (clone's, for a warm cell). */
static bool flag_left_out(const struct rule *r, size_t f, unsigned flags)
{
	return (flags & LEV_SCFILTER_CELLS) && ns_flags[f].cell && strcmp(r->name, "clone") == 0;
}

/* R_NSFLAGS rule R's action under FLAGS, into OUT: the flags it refuses. */
static int nsflags_action(const struct rule *r, unsigned flags, struct lev_buf *out)
{
	size_t i, n = 0, kept = 0;
	int rc = 0;

	for (i = 0; i < ARRAY_SIZE(ns_flags); i++)
		kept += !flag_left_out(r, i, flags);
	if (kept == ARRAY_SIZE(ns_flags))
		return lev_buf_adds(out, "EPERM with CLONE_NEW* flags");
	for (i = 0; i < ARRAY_SIZE(ns_flags) && rc == 0; i++) {
		if (flag_left_out(r, i, flags))
			continue;
		rc = lev_buf_addf(out, "%s%s",
				  n == 0 ? "EPERM with CLONE_" : n + 1 == kept ? " or " : ", ",
				  ns_flags[i].name);
		n++;
	}
	return rc;
}

static int resolve(const struct rule *r)
{
	int nr = seccomp_syscall_resolve_name(r->name);

	if (nr == __NR_SCMP_ERROR || nr < 0) {
#if defined(__x86_64__)
		return r->nr_x86_64;
#else
		return -1;
#endif
	}
	return nr;
}

static int add_rules(scmp_filter_ctx ctx, const struct rule *r, unsigned flags)
{
	int nr = resolve(r);
	int rc = 0;
	size_t i;

	if (left_out(r, flags))
		return 0;
	if (nr < 0)
		return -ENOSYS;
	switch (r->kind) {
	case R_DENY:
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		break;
	case R_ENOSYS:
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
		break;
	case R_NSFLAGS:
		for (i = 0; i < ARRAY_SIZE(ns_flags) && rc == 0; i++)
			if (!flag_left_out(r, i, flags))
				rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
						      SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i].flag,
							      ns_flags[i].flag));
		/* CLONE_NEWTIME shares its bit with the exit signal in clone(2) */
		if (rc == 0 && strcmp(r->name, "unshare") == 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
					      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWTIME,
						      CLONE_NEWTIME));
		break;
	case R_IOCTL:
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI));
		if (rc == 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
					      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCLINUX));
		break;
	case R_FAMILY:
		if (flags & LEV_SCFILTER_NET)
			break;
		/* compared on all 64 bits: garbage in the high half is refused too */
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
				      SCMP_A0(SCMP_CMP_NE, AF_UNIX));
		break;
	}
	return rc;
}

int lev_scfilter_build(unsigned flags, struct lev_scfilter *out, struct lev_err *err)
{
	scmp_filter_ctx ctx;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ void *prog = NULL;
	size_t i, len = 0;
	int rc;

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return lev_err_set(err, -ENOMEM, "cannot create a seccomp filter");
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	for (i = 0; i < ARRAY_SIZE(rules) && rc == 0; i++) {
		rc = add_rules(ctx, &rules[i], flags);
		if (rc < 0) {
			seccomp_release(ctx);
			return lev_err_errno(err, rc, "cannot add the seccomp rule for '%s'",
					     rules[i].name);
		}
	}
	if (rc < 0) {
		seccomp_release(ctx);
		return lev_err_errno(err, rc, "cannot set up the seccomp filter");
	}

	fd = memfd_create("lev-seccomp", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		seccomp_release(ctx);
		return lev_err_errno(err, rc, "cannot create a memfd for the seccomp filter");
	}
	rc = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (rc < 0)
		return lev_err_errno(err, rc, "cannot export the seccomp filter");

	{
		off_t end = lseek(fd, 0, SEEK_END);
		ssize_t n;

		if (end <= 0 || end % (off_t)sizeof(struct sock_filter) != 0 ||
		    end / (off_t)sizeof(struct sock_filter) > PROG_MAX_INSNS)
			return lev_err_set(err, -EINVAL, "the exported seccomp filter is malformed");
		len = (size_t)end;
		prog = xmalloc(len);
		n = pread(fd, prog, len, 0);
		if (n < 0 || (size_t)n != len)
			return lev_err_errno(err, n < 0 ? -errno : -EIO,
					     "cannot read back the seccomp filter");
	}
	out->prog = TAKE_PTR(prog);
	out->len = (unsigned short)(len / sizeof(struct sock_filter));
	out->flags = flags;
	return 0;
}

void lev_scfilter_release(struct lev_scfilter *f)
{
	free(f->prog);
	f->prog = NULL;
	f->len = 0;
}

int lev_scfilter_install(const struct lev_scfilter *f)
{
	struct sock_fprog fprog = {
		.len = f->len,
		.filter = (struct sock_filter *)f->prog,
	};

	if (!f->prog || f->len == 0)
		return -EINVAL;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
		return -errno;
	return 0;
}

int lev_scfilter_probe(void)
{
	uint32_t action = SECCOMP_RET_ERRNO;

	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0)
		return -errno;
	return 0;
}

int lev_scfilter_describe(unsigned flags, struct lev_buf *out)
{
	_cleanup_buf_ struct lev_buf nsf = LEV_BUF_INIT;
	size_t i;
	int r = 0;

	for (i = 0; i < ARRAY_SIZE(rules) && r == 0; i++) {
		const struct rule *ru = &rules[i];
		const char *action;

		if ((flags & LEV_SCFILTER_CELLS) && ru->cell) {
			r = lev_buf_addf(out, "%s: not filtered in a warm cell (its set-up needs "
					 "it); what it changes needs CAP_SYS_ADMIN, which the "
					 "command lacks (%s)\n", ru->name, ru->why);
			continue;
		}
		if (left_out(ru, flags))
			continue;
		switch (ru->kind) {
		case R_ENOSYS:
			action = "ENOSYS";
			break;
		case R_NSFLAGS:
			lev_buf_reset(&nsf);
			if (nsflags_action(ru, flags, &nsf) < 0)
				return -ENOMEM;
			action = nsf.buf;
			break;
		case R_IOCTL:
			action = "EPERM for TIOCSTI, TIOCLINUX";
			break;
		case R_FAMILY:
			if (flags & LEV_SCFILTER_NET)
				continue;
			action = "EPERM unless AF_UNIX";
			break;
		case R_DENY:
		default:
			action = "EPERM";
			break;
		}
		r = lev_buf_addf(out, "%s: %s (%s)\n", ru->name, action, ru->why);
	}
	if (r == 0)
		r = lev_buf_adds(out, "other architectures: kill\n");
	return r;
}
