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
 * `nstr` NUL-terminated strings: the working directory, then argv.  The
 * helper forks the command in a new session with those descriptors, applies
 * the seccomp program, and answers with one struct lev_oci_ans when it
 * exits.  Any byte from lev (or EOF) before then means "kill it": the
 * helper kills the command's process group and every descendant.
 *
 * Both sides bound everything: LEV_OCI_REQ_MAX bytes, LEV_OCI_ARGS_MAX
 * strings.  Host byte order (both ends run on the same kernel).
 */
#pragma once

#include <stdint.h>

#define LEV_OCI_REQ_MAGIC 0x3156454cu	/* "LEV1" */
#define LEV_OCI_ANS_MAGIC 0x4156454cu	/* "LEVA" */
#define LEV_OCI_REQ_MAX (1u << 20)
#define LEV_OCI_ARGS_MAX 65536u

#define LEV_OCI_FLAG_SECCOMP 1u		/* install /.lev/seccomp.bpf before exec */

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
	uint32_t len;		/* bytes that follow */
};

struct lev_oci_ans {
	uint32_t magic;
	int32_t status;		/* the command's wait status */
	int32_t exec_errno;	/* the command could not be executed: errno, else 0 */
	int32_t setup_errno;	/* the helper could not set up: errno, else 0 */
};
