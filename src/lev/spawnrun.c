/*
 * spawnrun.c - start a run as `lev run --detach` does (spawnrun.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "lev/spawnrun.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/proto.h"

/* The last line of what FD (a memfd lev run wrote its stderr to) holds, in BUF. */
static void last_line(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);
	char *end, *nl;

	buf[n > 0 ? n : 0] = '\0';
	end = buf + strlen(buf);
	while (end > buf && end[-1] == '\n')
		*--end = '\0';
	nl = strrchr(buf, '\n');
	if (nl)
		memmove(buf, nl + 1, strlen(nl + 1) + 1);
}

int lev_spawn_detached(const char *agent, const char *workdir, const char *task, bool yolo,
		       char **run, struct lev_err *err)
{
	char exe[PATH_MAX], out[4096], why[1024];
	const char *argv[] = { "lev", "run", agent, "--workdir", workdir, "--detach", "--json",
			       "--task", "@/dev/stdin", yolo ? "--yolo" : NULL, NULL };
	_cleanup_close_ int in = memfd_create("lev-run-task", MFD_CLOEXEC);
	_cleanup_close_ int efd = memfd_create("lev-run-stderr", MFD_CLOEXEC);
	int p[2], st;
	size_t n = 0;
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	json_t *spawned;
	pid_t pid;

	if (k <= 0 || in < 0 || efd < 0 ||
	    write(in, task, strlen(task)) != (ssize_t)strlen(task) || lseek(in, 0, SEEK_SET) < 0 ||
	    pipe2(p, O_CLOEXEC) < 0)
		return lev_err_errno(err, -errno, "cannot start the run");
	exe[k] = '\0';
	pid = fork();
	if (pid == 0) {
		setsid();
		if (dup2(in, 0) < 0 || dup2(p[1], 1) < 0 || dup2(efd, 2) < 0)
			_exit(127);
		execv(exe, (char **)argv);
		_exit(127);
	}
	close(p[1]);
	while (pid > 0 && n < sizeof(out) - 1 &&
	       ((k = read(p[0], out + n, sizeof(out) - 1 - n)) > 0 || (k < 0 && errno == EINTR)))
		n += k > 0 ? (size_t)k : 0;
	close(p[0]);
	out[n] = '\0';
	if (pid < 0)
		return lev_err_errno(err, -errno, "cannot start the run");
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		last_line(efd, why, sizeof(why));
		return lev_err_set(err, -EIO, "'lev run %s' failed: %s", agent,
				   *why ? why : "it said nothing");
	}
	spawned = json_loads(out, 0, NULL);
	if (!lev_json_str(spawned, "run_id")) {
		json_decref(spawned);
		return lev_err_set(err, -EIO, "'lev run' printed no run id");
	}
	*run = xstrdup(lev_json_str(spawned, "run_id"));
	json_decref(spawned);
	return 0;
}
