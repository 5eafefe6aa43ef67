/*
 * adopt.c - a new daemon takes over the workers of the one that died
 * (adopt.h).
 */
#include "liblev/daemon/adopt.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/sock.h"

char *lev_adopt_secret_new(void)
{
	unsigned char b[16];
	char *s = xmalloc(2 * sizeof(b) + 1);
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0 && errno != EINTR)
			abort();	/* no entropy: nothing safe to go on with */
		if (n > 0)
			got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(s + 2 * i, 3, "%02x", b[i]);
	return s;
}

char *lev_adopt_path(const char *dir, const char *id)
{
	struct sockaddr_un sa;
	char *p;

	if (!dir || !id || strchr(id, '/'))
		return NULL;
	p = xasprintf("%s/%s", dir, id);
	if (strlen(p) >= sizeof(sa.sun_path)) {
		free(p);
		return NULL;
	}
	return p;
}

bool lev_adopt_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) != 0;
}

int lev_adopt_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

/* Whether PID runs the file EXE is. */
static bool runs_exe(pid_t pid, const char *exe)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return stat(path, &a) == 0 && stat(exe, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

int lev_adopt_connect(pid_t pid, const char *exe, const char *path, const char *secret, int *fd,
		      int *pidfd)
{
	_cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, pid, 0), cfd = -1;
	json_t *hello;
	uid_t uid;
	pid_t peer;
	int r;

	if (pfd < 0)
		return -ESRCH;
	/* looked at through the pidfd: a pid reused after this shows as exited */
	if (!runs_exe(pid, exe))
		return lev_adopt_exited(pfd) ? -ESRCH : -ENOEXEC;
	if (!path || !secret || lev_sock_connect_any(path, &cfd, NULL) < 0)
		return lev_adopt_exited(pfd) ? -ESRCH : -EAGAIN;
	if (!lev_sock_peer_ok(cfd, &uid, &peer) || peer != pid)
		return -EPERM;
	if (lev_adopt_exited(pfd))
		return -ESRCH;
	hello = lev_proto_request("adopt");
	json_object_set_new(hello, "secret", json_string(secret));
	r = lev_proto_send(cfd, hello, NULL);
	json_decref(hello);
	if (r < 0)
		return -EAGAIN;
	*fd = TAKE_FD(cfd);
	*pidfd = TAKE_FD(pfd);
	return 0;
}
