/*
 * ns-helper.c - the warm helper of a namespace sandbox: what the container
 * fast path does with lev-oci-helper, for lev's own namespaces.
 *
 * The first command of a sandbox starts its helper: lev clones it into new
 * mount, PID, IPC and UTS namespaces (and network, when network = false) in
 * lev's user namespace (lev_sbx_ns_clone(): never dumpable), and it runs
 * every mount step of the cold plan once (read-only root, private /run and
 * /dev, the workdir, the masks), sets the hostname, empties the capability bounding set and, with Landlock
 * in force, installs the seccomp filter every cell and command inherits
 * (LEV_SCFILTER_CELLS: without the few calls a cell sets itself up with,
 * which need the CAP_SYS_ADMIN a cell drops before any command runs; a
 * filter loaded per cell cost the kernel a JIT compile and its teardown
 * each time, a third of a command's cost, measured).  It then keeps one
 * *cell* ready: a child in new PID, mount and IPC namespaces of its own
 * that has mounted what one command may change or must see afresh (/tmp,
 * /dev/shm, a /proc of its PID namespace) and built the Landlock ruleset,
 * and waits on the socket to lev.
 *
 * A command is one request on that socket (struct warm_req, then the
 * strings: cwd, argv, the filtered environment, exec candidates) carrying
 * its stdin, stdout, stderr, a report pipe and a status pipe (SCM_RIGHTS).
 * The ready cell takes it, closes the socket, and does what the cold PID 1
 * does: chdir, fork the command (rlimits, new session, stdio, exec); then
 * it answers with a pidfd of itself, tells the helper (which starts the
 * next cell: that work no longer delays the command), and reaps.  The rest
 * of the cold PID 1's fence (no_new_privs, Landlock, capabilities, and
 * seccomp when the helper did not install it) the cell did before it
 * waited for the request: it reads the request already confined.  When the
 * command ends it kills and reaps everything else in its namespace, writes
 * the command's wait status and exits: so lev has the status only once
 * nothing the command started is left.  lev kills a cell through its pidfd
 * at the timeout or a cancel, which ends its PID namespace; the pidfd is
 * readable once that namespace is gone.
 *
 * What the helper holds is never a command's: it runs no command code, it
 * reads nothing but a cell's one "taken" byte, it is PID 1 of a namespace
 * no command can see into (each command sees only its own cell's), it is
 * not dumpable, and the socket and pipes are closed in the cell before the
 * command is forked (and every other descriptor at exec).  The helper dies
 * with lev (PR_SET_PDEATHSIG) and when lev closes the socket; being PID 1,
 * its death ends every cell and command.  lev notices a dead helper (its
 * pidfd, or the socket at EOF) and starts another for the next command.
 *
 * Everything after the clone is async-signal-safe (lev may have threads):
 * system calls only, buffers mapped before the first cell.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/sandbox/landlock-rules.h"
#include "liblev/sandbox/ns-internal.h"
#include "liblev/sandbox/sandbox-internal.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define WARM_REQ_MAGIC 0x514e574cu	/* "LWNQ" */
#define WARM_ANS_MAGIC 0x414e574cu	/* "LWNA": from a cell */
#define WARM_NFDS 5			/* stdin, stdout, stderr, status, pidfd */
#define WARM_REQ_MAX (1u << 20)		/* bytes of strings */
#define WARM_STRS_MAX 16384u		/* strings, all lists together */

struct warm_req {
	uint32_t magic;
	uint32_t nargv;
	uint32_t nenv;
	uint32_t ncand;
	uint32_t len;			/* bytes of strings: cwd, argv, env, candidates */
	uint32_t pad;
	struct lev_sandbox_limits limits;
};

/* What a cell sends on the command's status socket: its pidfd, then the wait status. */
enum { WARM_MSG_PIDFD = 1, WARM_MSG_STATUS = 2 };

struct warm_msg {
	uint32_t magic;
	uint32_t kind;
	int32_t value;		/* STATUS: the wait status; PIDFD: 0, or the errno of pidfd_open */
};

union warm_cmsg {
	char buf[CMSG_SPACE(WARM_NFDS * sizeof(int))];
	struct cmsghdr align;
};

struct lev_sbx_warm {
	pthread_mutex_t lock;		/* one request on the socket at a time */
	struct lev_sbx_nsplan *plan;	/* the helper's steps, then each cell's */
	int pidfd;			/* the helper, our child; -1: none */
	int sock;			/* our end */
};

/* What the helper and its cells work with (set up before the first cell). */
struct helper {
	const struct lev_sbx_nsplan *pl;
	int sock;
	char *buf;			/* WARM_REQ_MAX + 1 bytes */
	char **ptrs;			/* WARM_STRS_MAX + 4 pointers */
	char *stack;			/* CMD_STACK bytes for the command until it execs */
};

#define CMD_STACK (256u << 10)

/*
 * Cells share the helper's memory (CLONE_VM), as the command shares its
 * cell's until it execs: a cell costs no copy of the helper's page tables
 * when it starts and no teardown when it ends, work that on two CPUs lands
 * on the command's path (measured: 4.9 ms a command with copied cells, 3.3
 * with shared ones, /bin/true).  So each cell needs memory of its own in
 * that shared space: a slot, its stack, the command's stack, the request's
 * buffers, one mapping reused by the next cell once its cell is gone (its
 * pages stay faulted in).  Nothing of a command's runs in it: the command
 * runs lev's code until it execs into an address space of its own.  The
 * one thing cells and the helper still share by accident is errno (one
 * thread's TLS): a racing write can only make a loop retry or a report
 * name the wrong errno, never let a step pass that failed.
 *
 * AddressSanitizer cannot run on stacks of ours: there the helper forks
 * its cells (each a copy, the buffers of struct helper its own).
 */
#define CELL_STACK (128u << 10)
#define CELL_SLOTS 256u	/* cells alive at once: a command running in each */
#define PAGE_UP(n) (((n) + 4095u) & ~(size_t)4095u)
#define SLOT_BUF_OFF (4096u + CELL_STACK + 4096u + CMD_STACK)
#define SLOT_PTRS_OFF (SLOT_BUF_OFF + PAGE_UP(WARM_REQ_MAX + 1u))
#define SLOT_SIZE (SLOT_PTRS_OFF + PAGE_UP((WARM_STRS_MAX + 4u) * sizeof(char *)))

struct cell_slot {
	char *mem;		/* SLOT_SIZE bytes, or NULL until first used */
	int pidfd;		/* the cell in it; -1: free */
	int taken_rd, taken_wr;
	struct helper h;	/* the cell's copy, pointing into MEM */
};

/* ---- the cell (async-signal-safe) ---- */

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

/* Receive one request and its descriptors: 0, or -1 at EOF or on garbage. */
static int recv_request(const struct helper *h, struct warm_req *req, int fds[WARM_NFDS])
{
	union warm_cmsg u;
	struct iovec iov = { req, sizeof(*req) };
	struct msghdr mh;
	struct cmsghdr *cm;
	ssize_t n;

	memset(&mh, 0, sizeof(mh));
	memset(&u, 0, sizeof(u));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	do
		n = recvmsg(h->sock, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	cm = CMSG_FIRSTHDR(&mh);
	if (n != (ssize_t)sizeof(*req) || !cm || cm->cmsg_level != SOL_SOCKET ||
	    cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(WARM_NFDS * sizeof(int)))
		return -1;
	memcpy(fds, CMSG_DATA(cm), WARM_NFDS * sizeof(int));
	if (req->magic != WARM_REQ_MAGIC || (mh.msg_flags & MSG_CTRUNC) || req->len > WARM_REQ_MAX ||
	    read_full(h->sock, h->buf, req->len) < 0)
		return -1;
	h->buf[req->len] = '\0';
	return 0;
}

/* Send lev a pidfd of this cell (or the reason there is none) on the status socket. */
static void send_pidfd(int sock)
{
	struct warm_msg a = { WARM_ANS_MAGIC, WARM_MSG_PIDFD, 0 };
	union warm_cmsg u;
	struct iovec iov = { &a, sizeof(a) };
	struct msghdr mh;
	struct cmsghdr *cm;
	int self = (int)syscall(SYS_pidfd_open, getpid(), 0);

	memset(&mh, 0, sizeof(mh));
	memset(&u, 0, sizeof(u));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (self >= 0) {
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &self, sizeof(int));
	} else {
		a.value = errno;
	}
	(void)sendmsg(sock, &mh, MSG_NOSIGNAL);
	if (self >= 0)
		close(self);
}

/* Write one byte in every page of [P, P + LEN): fault it in now. */
static void touch_pages(char *p, size_t len)
{
	volatile char *v = p;
	size_t off;

	for (off = 0; off < len; off += 4096)
		v[off] = 0;
}

/* Fault in our stack's next STACK_TOUCH bytes (a copy of the helper's until written). */
#define STACK_TOUCH (32u << 10)
static __attribute__((noinline)) void touch_stack(void)
{
	char pad[STACK_TOUCH];

	touch_pages(pad, sizeof(pad));
	__asm__ volatile("" : : "r"(pad) : "memory");
}

/*
 * A page fault is cheap on bare metal and dear in some virtual machines
 * (10 us and more each, measured): the pages a command's path writes
 * (the cell's stack, the request's buffers, the command's stack until it
 * execs) are faulted in while the cell waits, not after lev asked.
 */
#define REQ_TOUCH (16u << 10)
#define CMD_STACK_TOUCH (64u << 10)
static void cell_prefault(const struct helper *h)
{
	touch_stack();
	touch_pages(h->buf, REQ_TOUCH);
	touch_pages((char *)h->ptrs, 4096);
	touch_pages(h->stack + CMD_STACK - CMD_STACK_TOUCH, CMD_STACK_TOUCH);
}

/*
 * The request is ours: send lev our pidfd on PIDFD_SOCK, then tell the
 * helper on TAKEN_WR (it starts the next cell).
 */
static void cell_taken(int taken_wr, int pidfd_sock)
{
	send_pidfd(pidfd_sock);
	close(pidfd_sock);
	(void)!write(taken_wr, "t", 1);
	close(taken_wr);
}

/* Split the request's strings into the NULL-terminated lists in H->ptrs. */
static int parse_request(const struct helper *h, const struct warm_req *req, const char **cwd,
			 char ***argv, char ***envp, char ***cands)
{
	uint32_t counts[3] = { req->nargv, req->nenv, req->ncand };
	char *p = h->buf, *end = h->buf + req->len, **slot = h->ptrs;
	char **lists[3];
	int l;

	if (req->nargv < 1 || (uint64_t)req->nargv + req->nenv + req->ncand > WARM_STRS_MAX)
		return -1;
	*cwd = p;
	p += strlen(p) + 1;
	for (l = 0; l < 3; l++) {
		uint32_t i;

		lists[l] = slot;
		for (i = 0; i < counts[l]; i++) {
			if (p >= end)
				return -1;
			*slot++ = p;
			p += strlen(p) + 1;
		}
		*slot++ = NULL;
	}
	if (p > end + 1)
		return -1;
	*argv = lists[0];
	*envp = lists[1];
	*cands = lists[2];
	return 0;
}

struct cmd_args {
	char *const *cands, *const *argv, *const *envp;
	const struct lev_sbx_childfds *f;
	const struct lev_sbx_nsplan *pl;
	const struct lev_sandbox_limits *limits;
};

static int cmd_child(void *arg)
{
	const struct cmd_args *a = arg;

	/* the command's limits bind the command: set last, just before exec */
	if (lev_sbx_ns_rlimits(a->pl, a->limits, a->f->report_wr) < 0)
		_exit(125);
	lev_sbx_ns_exec(a->cands, a->argv, a->envp, a->f, false);
}

/*
 * Start the command (sharing our memory until it execs, as posix_spawn
 * does, while the cell only waits; no CLONE_VFORK, so the cell sleeps once,
 * until the command ends), reap until it ends, then kill and reap everything else
 * in the namespace (we are its PID 1: nothing can hide from kill(-1), and
 * ECHILD means nothing is left), and only then pass its status on.
 */
static __attribute__((noreturn)) void cell_run(const struct helper *h, char *const *cands,
					       char *const *argv, char *const *envp,
					       const struct lev_sbx_childfds *f,
					       const struct lev_sandbox_limits *limits, int taken_wr,
					       int pidfd_sock)
{
	struct cmd_args a = { cands, argv, envp, f, h->pl, limits };
#if defined(__SANITIZE_ADDRESS__)
	/* AddressSanitizer cannot run on a stack of ours: a plain fork there */
	long cmd = fork();

	if (cmd == 0)
		_exit(cmd_child(&a));
#else
	long cmd = clone(cmd_child, h->stack + CMD_STACK, CLONE_VM | SIGCHLD, &a);
#endif
	struct warm_msg m = { WARM_ANS_MAGIC, WARM_MSG_STATUS, SIGKILL };
	int s;
	ssize_t n;

	if (cmd < 0) {
		int e = errno;

		cell_taken(taken_wr, pidfd_sock);
		lev_sbx_report(f->report_wr, LEV_SBX_PH_FORK, 0, e);
		_exit(125);
	}
	/* only now: neither lev's pidfd nor the helper's next cell delays the command */
	cell_taken(taken_wr, pidfd_sock);
	close(f->in);
	for (;;) {
		long r = waitpid(-1, &s, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		if (r == cmd) {
			m.value = s;
			break;
		}
	}
	for (;;) {
		(void)kill(-1, SIGKILL);
		if (waitpid(-1, &s, __WALL) < 0 && errno == ECHILD)
			break;
	}
	/* our copies kept the output open until now: lev sees its end and the
	 * status at once, and wakes once */
	close(f->out);
	close(f->err);
	do
		n = send(f->status_wr, &m, sizeof(m), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	_exit(0);
}

/*
 * A cell: prepare (mounts, the Landlock ruleset), fence itself
 * (no_new_privs, Landlock, capabilities, seccomp), wait for one request,
 * chdir, start the command, and only then answer lev with our pidfd and
 * tell the helper on TAKEN_WR.  A failed preparation or fence is reported
 * on the request's report pipe.
 */
static __attribute__((noreturn)) void cell_main(const struct helper *h, int taken_wr)
{
	const struct lev_sbx_nsplan *pl = h->pl;
	struct lev_sbx_childfds f = { -1, -1, -1, -1, -1, -1 };
	struct warm_req req;
	int fds[WARM_NFDS], idx = -1, ll_fd = -1, phase = LEV_SBX_PH_NONE, e = 0, r;
	const char *cwd;
	char **argv, **envp, **cands;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	{
		/* the helper reset every disposition and the mask; it ignores
		 * SIGCHLD, we reap our commands */
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		(void)sigaction(SIGCHLD, &dfl, NULL);
	}
	(void)prctl(PR_SET_NAME, "lev-ns-cell", 0, 0, 0);
	r = lev_sbx_ns_run_ops(pl, pl->n_helper_ops, pl->n_ops, &idx);
	if (r < 0) {
		phase = LEV_SBX_PH_MOUNT;
		e = -r;
	} else if (pl->use_ll) {
		ll_fd = lev_landlock_build(&pl->ll, &idx);
		if (ll_fd < 0) {
			phase = LEV_SBX_PH_LANDLOCK;
			e = -ll_fd;
		}
	}
	if (phase == LEV_SBX_PH_NONE) {
		/* fenced before the request comes: what reads it is already
		 * confined, and the command does not wait for the filter */
		r = lev_sbx_ns_lockdown(pl, ll_fd, true, &phase, &idx);
		if (r < 0)
			e = -r;	/* reported on the request's pipe, below */
	}
	cell_prefault(h);
	if (recv_request(h, &req, fds) < 0)
		_exit(0);	/* lev is gone, or not lev */
	close(h->sock);
	f.in = fds[0];
	f.out = fds[1];
	f.err = fds[2];
	f.report_wr = fds[3];	/* set-up failures and the status, in that order */
	f.status_wr = fds[3];
	if (phase == LEV_SBX_PH_NONE && parse_request(h, &req, &cwd, &argv, &envp, &cands) < 0) {
		phase = LEV_SBX_PH_STDIO;
		e = EPROTO;
	}
	if (phase == LEV_SBX_PH_NONE && chdir(cwd) < 0) {
		phase = LEV_SBX_PH_CHDIR;
		idx = 0;
		e = errno;
	}
	if (phase != LEV_SBX_PH_NONE) {
		cell_taken(taken_wr, fds[4]);
		lev_sbx_report(f.report_wr, (enum lev_sbx_phase)phase, idx, e);
		_exit(125);
	}
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	cell_run(h, cands, argv, envp, &f, &req.limits, taken_wr, fds[4]);
}

/* ---- the helper (async-signal-safe) ---- */

/* Close every descriptor from 3 up but the N in KEEP (sorted here). */
static void keep_only(int *keep, size_t n)
{
	unsigned lo = 3;
	size_t i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < lo)
			continue;
		if ((unsigned)keep[i] > lo)
			(void)syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0U);
		lo = (unsigned)keep[i] + 1;
	}
	(void)syscall(SYS_close_range, lo, ~0U, 0U);
}

/*
 * Wait until the cell on TAKEN_RD took a request (1) or died without one
 * (0); lev closing the socket ends the helper.
 */
static int wait_taken(const struct helper *h, int taken_rd)
{
	for (;;) {
		struct pollfd pf[2] = { { taken_rd, POLLIN, 0 }, { h->sock, 0, 0 } };
		char c;

		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (pf[1].revents & (POLLHUP | POLLERR))
			_exit(0);
		if (pf[0].revents)
			return read(taken_rd, &c, 1) == 1;
	}
}

#if !defined(__SANITIZE_ADDRESS__)
/* A free slot (its last cell gone), its memory mapped; NULL when none is. */
static struct cell_slot *slot_get(struct cell_slot *slots)
{
	struct cell_slot *unmapped = NULL;
	unsigned i;

	for (i = 0; i < CELL_SLOTS; i++) {
		struct cell_slot *sl = &slots[i];

		if (sl->pidfd >= 0) {
			struct pollfd pf = { sl->pidfd, POLLIN, 0 };

			if (poll(&pf, 1, 0) <= 0 || !pf.revents)
				continue;	/* alive */
			close(sl->pidfd);
			sl->pidfd = -1;
		}
		if (sl->mem)
			return sl;
		if (!unmapped)
			unmapped = sl;
	}
	if (!unmapped)
		return NULL;
	unmapped->mem = mmap(NULL, SLOT_SIZE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (unmapped->mem == MAP_FAILED) {
		unmapped->mem = NULL;
		return NULL;
	}
	/* a guard page under each stack */
	(void)mprotect(unmapped->mem, 4096, PROT_NONE);
	(void)mprotect(unmapped->mem + 4096 + CELL_STACK, 4096, PROT_NONE);
	return unmapped;
}

/* Every slot busy: wait until a cell ends (or lev goes). */
static void slot_wait(const struct helper *h, const struct cell_slot *slots)
{
	struct pollfd pf[CELL_SLOTS + 1];
	unsigned i, n = 0;

	pf[n++] = (struct pollfd){ h->sock, 0, 0 };
	for (i = 0; i < CELL_SLOTS; i++)
		if (slots[i].pidfd >= 0)
			pf[n++] = (struct pollfd){ slots[i].pidfd, POLLIN, 0 };
	if (poll(pf, n, 1000) > 0 && (pf[0].revents & (POLLHUP | POLLERR)))
		_exit(0);
}

static int cell_entry(void *arg)
{
	struct cell_slot *sl = arg;

	close(sl->taken_rd);
	cell_main(&sl->h, sl->taken_wr);
}

/* Start a cell in a slot of SLOTS: its pid, or -1. */
static long cell_start(const struct helper *h, struct cell_slot *slots, int tk[2])
{
	struct cell_slot *sl;
	long c;

	while (!(sl = slot_get(slots)))
		slot_wait(h, slots);
	sl->h = *h;
	sl->h.stack = sl->mem + 4096 + CELL_STACK + 4096;
	sl->h.buf = sl->mem + SLOT_BUF_OFF;
	sl->h.ptrs = (char **)(void *)(sl->mem + SLOT_PTRS_OFF);
	sl->taken_rd = tk[0];
	sl->taken_wr = tk[1];
	c = clone(cell_entry, sl->mem + 4096 + CELL_STACK,
		  CLONE_VM | CLONE_PIDFD | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | SIGCHLD, sl,
		  &sl->pidfd);
	if (c < 0)
		sl->pidfd = -1;
	return c;
}
#endif

/* Keep one cell ready, forever (until lev goes). */
static __attribute__((noreturn)) void helper_loop(const struct helper *h)
{
	unsigned early_deaths = 0;
#if !defined(__SANITIZE_ADDRESS__)
	struct cell_slot *slots = mmap(NULL, CELL_SLOTS * sizeof(*slots), PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned i;

	if (slots == MAP_FAILED)
		_exit(1);
	for (i = 0; i < CELL_SLOTS; i++)
		slots[i].pidfd = -1;
#endif

	for (;;) {
		int tk[2];
		long c;

		if (early_deaths > 3) {
			/* cells die before taking anything: do not spin */
			struct pollfd pf = { h->sock, 0, 0 };

			if (poll(&pf, 1, 100) > 0)
				_exit(0);
		}
		if (pipe2(tk, O_CLOEXEC) < 0)
			_exit(1);
#if defined(__SANITIZE_ADDRESS__)
		c = syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | SIGCHLD, 0, NULL,
			    NULL, 0);
		if (c == 0) {
			close(tk[0]);
			cell_main(h, tk[1]);
		}
#else
		c = cell_start(h, slots, tk);
#endif
		close(tk[1]);
		if (c < 0 || !wait_taken(h, tk[0]))
			early_deaths++;
		else
			early_deaths = 0;
		close(tk[0]);
	}
}

struct helper_fds {
	int sync_rd, rep_wr, sock;
};

static __attribute__((noreturn)) void helper_main(const struct lev_sbx_nsplan *pl,
						  struct helper_fds *fd)
{
	int keep[3] = { fd->sync_rd, fd->rep_wr, fd->sock };
	struct sigaction ign;
	struct helper h = { pl, fd->sock, NULL, NULL, NULL };
	int idx = -1, phase = LEV_SBX_PH_NONE, r, null;
	char go;
	ssize_t n;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	keep_only(keep, 3);	/* nothing of lev's stays open here */
	do
		n = read(fd->sync_rd, &go, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1) {
		lev_sbx_report(fd->rep_wr, LEV_SBX_PH_SYNC, 0, EPIPE);
		_exit(125);
	}
	close(fd->sync_rd);
	r = lev_sbx_ns_run_ops(pl, 0, pl->n_helper_ops, &idx);
	if (r < 0) {
		lev_sbx_report(fd->rep_wr, LEV_SBX_PH_MOUNT, idx, -r);
		_exit(125);
	}
	if (pl->set_hostname && sethostname("lev-sandbox", 11) < 0) {
		lev_sbx_report(fd->rep_wr, LEV_SBX_PH_HOSTNAME, 0, errno);
		_exit(125);
	}
	r = lev_sbx_ns_helper_lockdown(pl, &phase);
	if (r < 0) {
		lev_sbx_report(fd->rep_wr, (enum lev_sbx_phase)phase, 0, -r);
		_exit(125);
	}
	(void)setsid();
	(void)prctl(PR_SET_NAME, "lev-ns-helper", 0, 0, 0);
	lev_sbx_reset_signals();
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	(void)sigaction(SIGCHLD, &ign, NULL);	/* cells are reaped by the kernel */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
#if defined(__SANITIZE_ADDRESS__)
	/* forked cells: each has a copy of these (else each its slot's) */
	h.buf = mmap(NULL, WARM_REQ_MAX + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	h.ptrs = mmap(NULL, (WARM_STRS_MAX + 4) * sizeof(char *), PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	h.stack = mmap(NULL, CMD_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
		       -1, 0);
#endif
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
	    h.buf == MAP_FAILED || h.ptrs == MAP_FAILED || h.stack == MAP_FAILED) {
		lev_sbx_report(fd->rep_wr, LEV_SBX_PH_STDIO, 0, errno);
		_exit(125);
	}
	close(null);
	close(fd->rep_wr);	/* ready */
	helper_loop(&h);
}

/* ---- lev's side ---- */

static void warm_stop(struct lev_sbx_warm *w)
{
	siginfo_t si;

	if (w->pidfd >= 0) {
		(void)syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
		while (waitid((idtype_t)P_PIDFD, (id_t)w->pidfd, &si, WEXITED) < 0 && errno == EINTR)
			;
		close(w->pidfd);
	}
	if (w->sock >= 0)
		close(w->sock);
	w->pidfd = w->sock = -1;
}

static bool warm_alive(const struct lev_sbx_warm *w)
{
	struct pollfd pf = { w->pidfd, POLLIN, 0 };

	return w->pidfd >= 0 && poll(&pf, 1, 0) == 0;
}

/* The helper's set-up: EOF on REP_RD means ready, a report names the failed step. */
static int warm_wait_ready(const struct lev_sbx_warm *w, int rep_rd, struct lev_err *err)
{
	struct lev_sbx_report rep;
	ssize_t n;

	do
		n = read(rep_rd, &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 0;
	if (n != (ssize_t)sizeof(rep) || rep.magic != LEV_SBX_REPORT_MAGIC)
		return lev_err_set(err, -EIO, "the warm helper died while setting up");
	lev_sbx_ns_explain_plan(w->plan, w->plan->cwd, "lev-ns-helper", &rep, err);
	return err ? err->code : -EIO;
}

static int warm_start(struct lev_sbx_warm *w, struct lev_err *err)
{
	int sv[2] = { -1, -1 }, sync[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int pidfd = -1, r;
	char go = 'g';
	long pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(sync, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0) {
		r = lev_err_errno(err, -errno, "cannot start the warm helper");
		goto out;
	}
	pid = lev_sbx_ns_clone(w->plan->clone_flags, &pidfd);
	if (pid < 0) {
		r = lev_err_errno(err, (int)pid, "cannot create the sandbox namespaces");
		goto out;
	}
	if (pid == 0) {
		struct helper_fds hf = { sync[0], rep[1], sv[1] };

		helper_main(w->plan, &hf);
	}
	close(TAKE_FD(sync[0]));
	close(TAKE_FD(rep[1]));
	close(TAKE_FD(sv[1]));
	w->pidfd = pidfd;
	w->sock = TAKE_FD(sv[0]);
	r = 0;
	/* a helper that died first is EPIPE, never a SIGPIPE */
	if (lev_write_nosig(sync[1], &go, 1) != 1)
		r = lev_err_errno(err, -errno, "cannot start the warm helper");
	close(TAKE_FD(sync[1]));
	if (r == 0)
		r = warm_wait_ready(w, rep[0], err);
	if (r < 0)
		warm_stop(w);
out:
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (sync[i] >= 0)
			close(sync[i]);
		if (rep[i] >= 0)
			close(rep[i]);
	}
	return r;
}

/* The request's strings, one after another, each with its NUL: 0, or -E2BIG. */
static int add_strs(struct lev_buf *b, char *const *v, uint32_t *count)
{
	*count = 0;
	for (; v && *v; v++, (*count)++)
		if (lev_buf_add(b, *v, strlen(*v) + 1) < 0)
			return -E2BIG;
	return 0;
}

/* The command, as a request header and its strings in B: 0, or 1 when it does not fit. */
static int warm_request(const struct lev_sandbox *sb, char *const *argv, char *const *envp,
			const char *cwd, const struct lev_sandbox_limits *limits,
			struct warm_req *req, struct lev_buf *b)
{
	_cleanup_strv_ char **env = lev_sbx_ns_env(sb, envp, "/tmp");
	_cleanup_strv_ char **cands = lev_sbx_exec_candidates(argv[0], lev_sbx_env_path(env));

	memset(req, 0, sizeof(*req));
	req->magic = WARM_REQ_MAGIC;
	req->limits = *limits;
	if (lev_buf_add(b, cwd, strlen(cwd) + 1) < 0 || add_strs(b, argv, &req->nargv) < 0 ||
	    add_strs(b, env, &req->nenv) < 0 || add_strs(b, cands, &req->ncand) < 0 ||
	    (uint64_t)req->nargv + req->nenv + req->ncand > WARM_STRS_MAX)
		return 1;
	req->len = (uint32_t)b->len;
	return 0;
}

static int warm_send(const struct lev_sbx_warm *w, const struct warm_req *req,
		     const struct lev_buf *b, const int fds[WARM_NFDS])
{
	union warm_cmsg u;
	struct iovec iov[2] = { { (void *)req, sizeof(*req) }, { b->buf, b->len } };
	struct msghdr mh;
	struct cmsghdr *cm;
	size_t total = sizeof(*req) + b->len, sent;
	ssize_t n;

	memset(&mh, 0, sizeof(mh));
	memset(&u, 0, sizeof(u));
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(WARM_NFDS * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, WARM_NFDS * sizeof(int));
	do
		n = sendmsg(w->sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* the rest of a long request (the cell is reading it) */
	for (sent = (size_t)n; sent < total; sent += (size_t)n) {
		size_t off = sent - sizeof(*req);

		if (sent < sizeof(*req))
			n = send(w->sock, (const char *)req + sent, sizeof(*req) - sent, MSG_NOSIGNAL);
		else
			n = send(w->sock, b->buf + off, b->len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n < 0)
			return -errno;
	}
	return 0;
}

/* The helper for SB, planned on first use: NULL (with sb->cold set) when it cannot be. */
static struct lev_sbx_warm *warm_get(struct lev_sandbox *sb)
{
	static pthread_mutex_t make = PTHREAD_MUTEX_INITIALIZER;
	static char *const probe_argv[] = { (char *)"true", NULL };
	struct lev_sbx_warm *w;
	struct lev_sbx_nsplan *pl = NULL;
	struct lev_err e = LEV_ERR_INIT;

	pthread_mutex_lock(&make);
	if (!sb->warm && !sb->cold) {
		if (lev_sbx_ns_build_plan(sb, probe_argv, NULL, NULL, &sb->limits, false, &pl, &e) < 0 ||
		    pl->mode != LEV_SBX_NS) {
			sb->cold = xasprintf("the warm helper cannot be planned: %s",
					     e.msg[0] ? e.msg : "no namespaces");
			lev_sbx_nsplan_free(pl);
		} else {
			lev_sbx_ns_plan_cell(pl, sb);
			w = xcalloc(1, sizeof(*w));
			pthread_mutex_init(&w->lock, NULL);
			w->plan = pl;
			w->pidfd = w->sock = -1;
			sb->warm = w;
		}
	}
	w = sb->cold ? NULL : sb->warm;
	pthread_mutex_unlock(&make);
	return w;
}

/*
 * Hand the request to the helper's socket (starting the helper when there
 * is none, or it died): 0, 1 when it cannot start (the sandbox goes cold),
 * or < 0.  The cell that takes it sends its pidfd on the status socket.
 */
static int warm_hand_over(struct lev_sandbox *sb, struct lev_sbx_warm *w,
			  const struct warm_req *req, const struct lev_buf *b,
			  const int fds[WARM_NFDS], struct lev_err *err)
{
	int attempt, r = -EPIPE;

	for (attempt = 0; attempt < 2 && r == -EPIPE; attempt++) {
		if (!warm_alive(w)) {
			struct lev_err e = LEV_ERR_INIT;

			warm_stop(w);
			r = warm_start(w, &e);
			if (r < 0) {
				/* from now on every command starts cold, and says why */
				sb->cold = xasprintf("the warm helper cannot start: %s", e.msg);
				return 1;
			}
		}
		r = warm_send(w, req, b, fds);
		if (r == -EPIPE || r == -ECONNRESET) {
			warm_stop(w);
			r = -EPIPE;
		}
	}
	if (r < 0)
		return lev_err_errno(err, r, "cannot hand the command to the sandbox's warm helper");
	return 0;
}

/* One message from SOCK into M (and a descriptor into *FD): its size, 0 at EOF, -errno. */
static ssize_t recv_msg(int sock, void *m, size_t size, int *fd, bool block)
{
	union warm_cmsg u;
	struct iovec iov = { m, size };
	struct msghdr mh;
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	memset(&mh, 0, sizeof(mh));
	memset(&u, 0, sizeof(u));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | (block ? 0 : MSG_DONTWAIT));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	return n;
}

int lev_sbx_warm_read(struct lev_sandbox_proc *p, struct lev_sbx_report *rep)
{
	union {
		struct warm_msg m;
		struct lev_sbx_report r;
	} u;
	int fd;
	ssize_t n;

	if (p->status_fd < 0)
		return -1;
	n = recv_msg(p->status_fd, &u, sizeof(u), &fd, false);
	if (fd >= 0)
		close(fd);
	if (n == -EAGAIN)
		return 0;
	if (n == (ssize_t)sizeof(u.m) && u.m.magic == WARM_ANS_MAGIC && u.m.kind == WARM_MSG_STATUS) {
		p->warm_status = u.m.value;
		p->warm_done = true;
		return 2;
	}
	if (n == (ssize_t)sizeof(u.r) && u.r.magic == LEV_SBX_REPORT_MAGIC) {
		*rep = u.r;
		return 3;
	}
	close(p->status_fd);
	p->status_fd = -1;
	return -1;
}

int lev_sbx_warm_pidfd(struct lev_sandbox_proc *p, bool block)
{
	struct warm_msg m;
	int fd;
	ssize_t n;

	if (p->pidfd >= 0)
		return 0;
	if (p->sock < 0)
		return -1;
	n = recv_msg(p->sock, &m, sizeof(m), &fd, block);
	if (n == -EAGAIN)
		return 1;
	if (n == (ssize_t)sizeof(m) && m.magic == WARM_ANS_MAGIC && m.kind == WARM_MSG_PIDFD &&
	    fd >= 0) {
		p->pidfd = fd;
		return 0;
	}
	if (fd >= 0)
		close(fd);
	close(p->sock);
	p->sock = -1;
	return -1;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(TAKE_FD(p[i]));
}

int lev_sbx_warm_spawn(struct lev_sandbox *sb, char *const *argv, char *const *envp,
		       const char *cwd, const struct lev_sandbox_limits *limits,
		       const struct lev_sandbox_io *io, struct lev_sandbox_proc **out,
		       struct lev_err *err)
{
	_cleanup_buf_ struct lev_buf b = LEV_BUF_INIT_MAX(WARM_REQ_MAX);
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, pc[2] = { -1, -1 }, ps[2] = { -1, -1 };
	_cleanup_close_ int null = -1;
	struct lev_sbx_warm *w;
	struct lev_sandbox_proc *p;
	struct warm_req req;
	int fds[WARM_NFDS], r;

	/* a cell's /tmp and pid_max are the sandbox's: other limits start cold */
	if (limits->tmp_bytes != sb->limits.tmp_bytes || limits->nproc != sb->limits.nproc)
		return 1;
	if (!cwd)
		cwd = sb->workdir;
	if (warm_request(sb, argv, envp, cwd, limits, &req, &b) != 0)
		return 1;
	w = warm_get(sb);
	if (!w)
		return 1;
	if (io->stdin_fd < 0) {
		null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null < 0)
			return lev_err_errno(err, -errno, "cannot open '/dev/null'");
	}
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ps) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pc) < 0) {
		r = lev_err_errno(err, -errno, "cannot create pipes");
		goto fail;
	}
	fds[0] = io->stdin_fd >= 0 ? io->stdin_fd : null;
	fds[1] = po[1];
	fds[2] = pe[1];
	fds[3] = ps[1];
	fds[4] = pc[1];
	pthread_mutex_lock(&w->lock);
	r = warm_hand_over(sb, w, &req, &b, fds, err);
	pthread_mutex_unlock(&w->lock);
	if (r != 0)
		goto fail;

	p = lev_sbx_proc_alloc(sb, LEV_SBX_NS_WARM);
	p->status_fd = TAKE_FD(ps[0]);
	p->sock = TAKE_FD(pc[0]);
	p->warm_plan = w->plan;
	p->cwd = xstrdup(cwd);
	close_pair(pc);
	close_pair(ps);
	close(TAKE_FD(po[1]));
	close(TAKE_FD(pe[1]));
	lev_sbx_proc_started(p, TAKE_FD(po[0]), TAKE_FD(pe[0]), argv[0], io, limits);
	*out = p;
	return 0;
fail:
	close_pair(po);
	close_pair(pe);
	close_pair(pc);
	close_pair(ps);
	return r;
}

void lev_sbx_warm_free(struct lev_sbx_warm *w)
{
	if (!w)
		return;
	warm_stop(w);
	lev_sbx_nsplan_free(w->plan);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
