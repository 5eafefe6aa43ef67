/*
 * oci-proto.h - the wire format between lev and lev-oci-helper, the small
 * static program that is the main process of every warm container.
 *
 * Layout inside a container:
 *	/.lev/lev-oci-helper	the helper (read-only bind of a host directory)
 *	/.lev/seccomp.bpf	the sandbox seccomp program (struct sock_filter[])
 *	/.lev-sock/ctl		the helper's listening socket (a host directory)
 *
 * lev connects to <host dir>/sock/ctl and sends one request: a struct
 * lev_oci_req in a sendmsg() that carries three file descriptors
 * (SCM_RIGHTS: stdin, stdout, stderr of the command), then `len` bytes of
 * `nstr` NUL-terminated strings: the working directory, then argv, then
 * `nenv` more: the command's whole environment ("NAME=VALUE"; the helper's
 * own, which the engine made, is never passed on).  The helper makes the
 * command the only child of the first process of a new PID namespace (so
 * everything the command starts dies with it, and the command cannot
 * signal its supervisor), applies the seccomp program, and answers with
 * one struct lev_oci_ans when it exits.  Any byte from lev (or EOF) before
 * then means "kill it": the helper kills the namespace.  When the kernel
 * refuses the namespace, the helper falls back to killing the process group
 * and what it left behind, and says so in the answer's flags.
 *
 * Both sides bound everything: LEV_OCI_REQ_MAX bytes, LEV_OCI_ARGS_MAX
 * strings.  Host byte order (both ends run on the same kernel).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#define LEV_OCI_REQ_MAGIC 0x3256454cu	/* "LEV2" */
#define LEV_OCI_ANS_MAGIC 0x4156454cu	/* "LEVA" */
#define LEV_OCI_REQ_MAX (1u << 20)
#define LEV_OCI_ARGS_MAX 65536u

#define LEV_OCI_FLAG_SECCOMP 1u		/* install /.lev/seccomp.bpf before exec */
#define LEV_OCI_FLAG_PROBE 2u		/* run nothing: answer with the flags below */

#define LEV_OCI_ANS_PIDNS 1u		/* the command ran in a PID namespace of its own */

#define LEV_OCI_DIR "/.lev"
#define LEV_OCI_SOCK_DIR "/.lev-sock"
#define LEV_OCI_HELPER_NAME "lev-oci-helper"
#define LEV_OCI_FILTER_NAME "seccomp.bpf"
#define LEV_OCI_SOCK_NAME "ctl"

struct lev_oci_req {
	uint32_t magic;
	uint32_t flags;
	uint32_t timeout_ms;	/* 0: none (lev enforces its own) */
	uint32_t nstr;		/* strings that follow: cwd, argv[0], ... */
	uint32_t nenv;		/* then this many environment strings */
	uint32_t len;		/* bytes that follow */
};

struct lev_oci_ans {
	uint32_t magic;
	int32_t status;		/* the command's wait status */
	int32_t exec_errno;	/* the command could not be executed: errno, else 0 */
	int32_t setup_errno;	/* the helper could not set up: errno, else 0 */
	uint32_t flags;		/* LEV_OCI_ANS_* */
	int32_t pidns_errno;	/* no PID namespace: why, else 0 */
};

/*
 * The message a request travels in, for both ends (the helper is static
 * and links nothing of liblev, so these are inline).  U is the control
 * buffer, with room for the three fds.
 */
union lev_oci_cmsg {
	char buf[CMSG_SPACE(3 * sizeof(int))];
	struct cmsghdr align;
};

static inline void lev_oci_msg_init(struct msghdr *mh, struct iovec *iov, size_t niov,
				    union lev_oci_cmsg *u)
{
	memset(mh, 0, sizeof(*mh));
	memset(u, 0, sizeof(*u));
	mh->msg_iov = iov;
	mh->msg_iovlen = niov;
	mh->msg_control = u->buf;
	mh->msg_controllen = sizeof(u->buf);
}

/* The sender's side: FDS (stdin, stdout, stderr) as SCM_RIGHTS in MH. */
static inline void lev_oci_msg_put_fds(struct msghdr *mh, const int fds[3])
{
	struct cmsghdr *cm = CMSG_FIRSTHDR(mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, 3 * sizeof(int));
}
