/*
 * scfilter.h - the seccomp layer of the sandboxes (libseccomp).
 *
 * One filter, built in the parent with libseccomp and exported as a cBPF
 * program, so the child installs it with a single seccomp(2) call and no
 * allocation (the child of a fork must stay async-signal-safe).  Default
 * action: allow.  A matching rule returns EPERM, except clone3, which
 * returns ENOSYS so libc falls back to clone(2), whose flags the filter can
 * see.  Syscalls of another architecture (i386 int 0x80, x32) kill the
 * process, so `socketcall` cannot walk around the socket rule.
 *
 * Always denied:
 *	io_uring_setup io_uring_enter io_uring_register (sockets without socket())
 *	ptrace process_vm_readv process_vm_writev pidfd_getfd process_madvise
 *	bpf perf_event_open userfaultfd
 *	kexec_load kexec_file_load init_module finit_module delete_module
 *	keyctl add_key request_key
 *	mount umount2 pivot_root chroot fsopen fsconfig fsmount fspick
 *	move_mount open_tree open_tree_attr mount_setattr
 *	open_by_handle_at name_to_handle_at
 *	setns; unshare and clone with any CLONE_NEW* flag; clone3 (ENOSYS)
 *	ioctl TIOCSTI and TIOCLINUX (compared on the low 32 bits, as the kernel does)
 * Without LEV_SCFILTER_NET, also socket and socketpair of every family but
 * AF_UNIX.  A warm helper's filter for its cells (LEV_SCFILTER_CELLS) leaves
 * out the few a cell sets itself up with, see below.
 *
 * struct lev_scfilter owns its program; release it with
 * lev_scfilter_release().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/buf.h"
#include "liblev/base/error.h"

enum {
	LEV_SCFILTER_NET = 1u << 0,	/* network allowed: no socket-family rule */
	/*
	 * Only the rules that keep a process off the network: socket and
	 * socketpair of every family but AF_UNIX, io_uring, and the calls
	 * that reach into another process (ptrace, process_vm_readv/writev,
	 * pidfd_getfd), which could borrow its sockets.  The filter of kind
	 * none with network = false.  Other architectures are still killed.
	 */
	LEV_SCFILTER_NET_ONLY = 1u << 1,
	/*
	 * The filter a namespace sandbox's warm helper installs once, before
	 * its first cell, for every cell and command after it: loading a
	 * filter costs the kernel a JIT compile and its teardown, per process,
	 * more than the rest of a cell together.  A cell's own set-up, after
	 * the helper cloned it, needs what this filter leaves out: mount,
	 * open_tree, move_mount, mount_setattr, and clone with CLONE_NEWNS,
	 * CLONE_NEWPID or CLONE_NEWIPC.  Each of them needs CAP_SYS_ADMIN in
	 * the sandbox's user namespace, which the cell drops (and verifies)
	 * before the command runs; Landlock refuses mount and move_mount
	 * besides.  The warm helper uses it only with Landlock in force.
	 * Everything else (user namespaces, setns, unshare, umount2,
	 * pivot_root, the fs* calls, ...) stays refused.
	 */
	LEV_SCFILTER_CELLS = 1u << 2,
};

struct lev_scfilter {
	void *prog;		/* struct sock_filter[len] */
	unsigned short len;	/* instructions */
	unsigned flags;
};

/* Build the filter for FLAGS into *out (fresh; release it). */
int lev_scfilter_build(unsigned flags, struct lev_scfilter *out, struct lev_err *err);

void lev_scfilter_release(struct lev_scfilter *f);

/*
 * Install F on the calling thread.  PR_SET_NO_NEW_PRIVS must already be set
 * (or the caller hold CAP_SYS_ADMIN).  Async-signal-safe.  0 or -errno.
 */
int lev_scfilter_install(const struct lev_scfilter *f);

/* Whether this kernel lets us install a filter: 0, or -errno. */
int lev_scfilter_probe(void);

/* Append the rules for FLAGS, one "name: action" per line, to OUT. */
int lev_scfilter_describe(unsigned flags, struct lev_buf *out);

/* The program's size in bytes. */
static inline size_t lev_scfilter_size(const struct lev_scfilter *f)
{
	return (size_t)f->len * 8;
}
