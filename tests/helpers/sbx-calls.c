/*
 * sbx-calls - several calls in one container sandbox of one run, the way
 * the runtime makes them, for t4510:
 *
 *	sbx-calls WORKDIR ENGINE IMAGE TIMEOUT_SECS LINE...
 *
 * Each LINE runs in turn as `sh -c LINE` in the same warm container
 * (network off, the helper from $LEV_OCI_HELPER, on_unavailable = warn),
 * with at most TIMEOUT_SECS each; a LINE that starts with "host:" runs on
 * the host instead (`/bin/sh -c`), between two calls, while the container
 * lives.  Each call's stdout is passed on, then a line "rc=N" (and
 * "timed-out" when it was killed at the timeout).  Exit 0 when every call
 * could be made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "liblev/sandbox/sandbox.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"

extern char **environ;

int main(int argc, char **argv)
{
	struct lev_sandbox_opts o = LEV_SANDBOX_OPTS_INIT;
	struct lev_sandbox_pool *pool = NULL;
	struct lev_sandbox_spec s;
	struct lev_sandbox *sb = NULL;
	struct lev_err err = LEV_ERR_INIT;
	int i, rc = 0;

	if (argc < 6) {
		fprintf(stderr, "usage: sbx-calls WORKDIR ENGINE IMAGE TIMEOUT_SECS LINE...\n");
		return 2;
	}
	if (lev_sandbox_pool_new("t4510-calls", &pool, &err) < 0)
		return 1;
	o.workdir = argv[1];
	o.pool = pool;
	o.oci_helper = getenv("LEV_OCI_HELPER");
	o.limits.timeout_ms = strtoull(argv[4], NULL, 10) * 1000;
	memset(&s, 0, sizeof(s));
	s.present = s.has_kind = s.has_network = s.has_on_unavailable = true;
	s.kind = LEV_SANDBOX_CONTAINER;
	s.network = false;
	s.on_unavailable = LEV_ON_UNAVAILABLE_WARN;
	s.engine = xstrdup(argv[2]);
	s.image = xstrdup(argv[3]);
	if (lev_sandbox_new(&s, &o, &sb, &err) < 0) {
		fprintf(stderr, "sbx-calls: %s\n", err.msg);
		rc = 1;
		goto out;
	}
	for (i = 5; i < argc; i++) {
		struct lev_sandbox_proc *p = NULL;
		struct lev_sandbox_result res;

		fflush(stdout);
		if (!strncmp(argv[i], "host:", 5)) {
			int st = 0;
			pid_t pid = fork();

			if (pid == 0) {
				execl("/bin/sh", "sh", "-c", argv[i] + 5, (char *)NULL);
				_exit(127);
			}
			waitpid(pid, &st, 0);
			printf("rc=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			continue;
		}
		{
			char *line[] = { (char *)"sh", (char *)"-c", argv[i], NULL };

			if (lev_sandbox_spawn(sb, line, environ, NULL, NULL, NULL, &p, &err) < 0 ||
			    lev_sandbox_wait(p, &res, &err) < 0) {
				fprintf(stderr, "sbx-calls: %s\n", err.msg);
				lev_sandbox_proc_free(p);
				rc = 1;
				break;
			}
		}
		lev_sandbox_proc_free(p);
		fputs(res.out ? res.out : "", stdout);
		printf("rc=%d\n%s", res.exit_code, res.timed_out ? "timed-out\n" : "");
		lev_sandbox_result_release(&res);
	}
out:
	lev_sandbox_free(sb);
	lev_sandbox_pool_free(pool);
	lev_sandbox_spec_release(&s);
	return rc;
}
