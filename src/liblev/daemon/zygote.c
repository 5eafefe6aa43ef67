/*
 * zygote.c - the template process every run's worker is forked from
 * (zygote.h).
 */
#include "liblev/daemon/zygote.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/worker.h"

#define ZYGOTE_MAGIC 0x6c65767aU	/* "levz" */
#define ZYGOTE_MAX_ENV (4U << 20)

/* One request: this header (with the run's link as SCM_RIGHTS), then the
 * environment's strings, each ending in NUL, ENV_LEN bytes in all. */
struct zhdr {
	uint32_t magic;
	uint32_t env_len;
	uint64_t data_limit;
};

static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The header and the fd that came with it: 1, 0 at the end of the link, or -errno. */
static int recv_hdr(int ctl, struct zhdr *h, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { h, sizeof(*h) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(ctl, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : 0;
	c = CMSG_FIRSTHDR(&m);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(c), sizeof(int));
	if ((size_t)n < sizeof(*h) && read_full(ctl, (char *)h + n, sizeof(*h) - (size_t)n) < 0)
		return -EPIPE;
	if (*fd < 0 || (m.msg_flags & MSG_CTRUNC) || h->magic != ZYGOTE_MAGIC ||
	    h->env_len > ZYGOTE_MAX_ENV)
		return -EPROTO;
	return 1;
}

/* In the new worker: the run's link, session, limits and environment. */
static int child_setup(int ctl, int fd, char *env, size_t len, uint64_t limit, pid_t daemon,
		       struct lev_err *err)
{
	/*
	 * The daemon's child (CLONE_PARENT), which outlives it: a new daemon
	 * adopts it (worker.c w_adopt()), as an exec'd worker
	 */
	if (getppid() != daemon)
		return lev_err_set(err, -ESRCH, "the daemon is gone");
	setsid();
	if (dup2(fd, LEV_WORKER_FD) < 0)
		return lev_err_errno(err, -errno, "cannot take the run's link");
	close(fd);
	if (ctl != LEV_WORKER_FD)
		close(ctl);
	close_range(LEV_WORKER_FD + 1, ~0U, 0);
	if (limit) {
		struct rlimit data = { limit, limit };

		(void)setrlimit(RLIMIT_DATA, &data);
	}
	clearenv();
	for (size_t i = 0; i < len; i += strlen(env + i) + 1)
		if (strchr(env + i, '=') && putenv(env + i) != 0)
			return lev_err_errno(err, -errno, "cannot set the run's environment");
	return 1;
}

int lev_zygote_serve(int ctl, struct lev_err *err)
{
	pid_t daemon = getppid();

	for (;;) {
		struct zhdr h;
		int fd, r = recv_hdr(ctl, &h, &fd);
		char *env;
		int32_t reply;
		pid_t pid;

		if (r <= 0) {
			if (fd >= 0)
				close(fd);
			return r < 0 ? lev_err_errno(err, r, "the daemon's request") : 0;
		}
		env = xmalloc((size_t)h.env_len + 1);
		env[h.env_len] = '\0';
		if (read_full(ctl, env, h.env_len) < 0) {
			free(env);
			close(fd);
			return lev_err_set(err, -EPIPE, "the daemon's request ended early");
		}
		/* the daemon's child, not ours: it reaps it as an exec'd worker */
		pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
		if (pid == 0)
			return child_setup(ctl, fd, env, h.env_len, h.data_limit, daemon, err);
		reply = pid < 0 ? -errno : pid;
		close(fd);
		free(env);
		r = lev_write_all(ctl, &reply, sizeof(reply));
		if (r < 0)
			return lev_err_errno(err, r, "cannot answer the daemon");
	}
}

pid_t lev_zygote_spawn(int ctl, int run_fd, char *const *env, uint64_t data_limit,
		       struct lev_err *err)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(ZYGOTE_MAX_ENV);
	struct zhdr h = { ZYGOTE_MAGIC, 0, data_limit };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int32_t reply;
	ssize_t n;
	int r;

	r = 0;
	for (char *const *e = env; e && *e && r == 0; e++)
		r = lev_buf_add(&b, *e, strlen(*e) + 1);
	if (r < 0) {
		lev_buf_release(&b);
		return lev_err_set(err, -E2BIG, "the run's environment is too large for the zygote");
	}
	h.env_len = (uint32_t)b.len;
	memset(u.buf, 0, sizeof(u.buf));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &run_fd, sizeof(int));
	do
		n = sendmsg(ctl, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	r = n < 0 ? -errno : 0;
	if (r == 0 && (size_t)n < sizeof(h))
		r = lev_write_all(ctl, (char *)&h + n, sizeof(h) - (size_t)n);
	if (r == 0)
		r = lev_write_all(ctl, b.buf, b.len);
	lev_buf_release(&b);
	if (r == 0)
		r = read_full(ctl, &reply, sizeof(reply));
	if (r < 0)
		return lev_err_errno(err, r, "the zygote");
	if (reply <= 0)
		return lev_err_errno(err, reply < 0 ? reply : -EPROTO, "the zygote cannot fork");
	return (pid_t)reply;
}
