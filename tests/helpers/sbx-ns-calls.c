/*
 * sbx-ns-calls - several calls in one namespace sandbox, the way the
 * runtime makes them, for t4020 (the warm helper):
 *
 *	sbx-ns-calls [--cold] WORKDIR TIMEOUT_SECS LINE...
 *
 * Each LINE runs in turn as `sh -c LINE` in the same sandbox (network off,
 * on_unavailable = error), with at most TIMEOUT_SECS each.  A LINE that
 * starts with "host:" runs on the host instead (`/bin/sh -c`, a child of
 * this program), between two calls, while the helper lives; one that
 * starts with "bg:" is started and left running; "wait" waits for those,
 * in order.  Each call's stdout is passed on, then a line "rc=N warm=W"
 * (W: 1 when it ran in a cell of the warm helper), and "timed-out" when it
 * was killed at the timeout.  Exit 0 when every call could be made.
 * Like lev (lev_credentials_protect_process()), it is not dumpable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "liblev/sandbox/sandbox.h"
#include "liblev/base/xalloc.h"

extern char **environ;

#define MAX_BG 16

static int finish(struct lev_sandbox_proc *p)
{
	struct lev_sandbox_result res;
	struct lev_err err = LEV_ERR_INIT;

	if (lev_sandbox_wait(p, &res, &err) < 0) {
		fprintf(stderr, "sbx-ns-calls: %s\n", err.msg);
		lev_sandbox_proc_free(p);
		return -1;
	}
	lev_sandbox_proc_free(p);
	fputs(res.out ? res.out : "", stdout);
	printf("rc=%d warm=%d\n%s", res.exit_code, res.warm, res.timed_out ? "timed-out\n" : "");
	lev_sandbox_result_release(&res);
	return 0;
}

static int host(const char *line)
{
	int st = 0;
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	printf("rc=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}

int main(int argc, char **argv)
{
	struct lev_sandbox_opts o = LEV_SANDBOX_OPTS_INIT;
	struct lev_sandbox_proc *bg[MAX_BG];
	struct lev_sandbox_spec s;
	struct lev_sandbox *sb = NULL;
	struct lev_err err = LEV_ERR_INIT;
	int i, a = 1, nbg = 0, rc = 0;

	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (argc > 1 && !strcmp(argv[1], "--cold")) {
		o.cold = true;
		a++;
	}
	if (argc < a + 3) {
		fprintf(stderr, "usage: sbx-ns-calls [--cold] WORKDIR TIMEOUT_SECS LINE...\n");
		return 2;
	}
	o.workdir = argv[a];
	o.limits.timeout_ms = strtoull(argv[a + 1], NULL, 10) * 1000;
	memset(&s, 0, sizeof(s));
	s.present = s.has_kind = s.has_network = s.has_on_unavailable = true;
	s.kind = LEV_SANDBOX_NAMESPACE;
	s.network = false;
	s.on_unavailable = LEV_ON_UNAVAILABLE_ERROR;
	if (lev_sandbox_new(&s, &o, &sb, &err) < 0) {
		fprintf(stderr, "sbx-ns-calls: %s\n", err.msg);
		rc = 1;
		goto out;
	}
	for (i = a + 2; i < argc && rc == 0; i++) {
		const char *line = argv[i];
		bool keep = !strncmp(line, "bg:", 3);
		struct lev_sandbox_proc *p = NULL;

		fflush(stdout);
		if (!strncmp(line, "host:", 5)) {
			host(line + 5);
			continue;
		}
		if (!strcmp(line, "wait")) {
			for (int k = 0; k < nbg && rc == 0; k++)
				rc = finish(bg[k]) < 0;
			nbg = 0;
			continue;
		}
		{
			char *cmd[] = { (char *)"sh", (char *)"-c", (char *)(keep ? line + 3 : line),
					NULL };

			if (lev_sandbox_spawn(sb, cmd, environ, NULL, NULL, NULL, &p, &err) < 0) {
				fprintf(stderr, "sbx-ns-calls: %s\n", err.msg);
				rc = 1;
				break;
			}
		}
		if (keep && nbg < MAX_BG)
			bg[nbg++] = p;
		else
			rc = finish(p) < 0;
	}
	for (i = 0; i < nbg; i++)
		lev_sandbox_proc_free(bg[i]);
	if (lev_sandbox_cold(sb))
		printf("cold: %s\n", lev_sandbox_cold(sb));
out:
	fflush(stdout);
	lev_sandbox_free(sb);
	lev_sandbox_spec_release(&s);
	return rc;
}
