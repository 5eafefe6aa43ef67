/*
 * bench-sandbox - wall time per command of /bin/true, seven ways, in one run:
 *
 *   (a) a bare fork+exec (posix_spawn + waitpid): the baseline
 *   (b) lev's namespace sandbox through the library, network off: user,
 *       mount, PID, IPC, UTS and network namespaces, read-only root, private
 *       /tmp /dev /proc /run, masks, Landlock, seccomp, rlimits, caps, PID 1
 *   (c) bubblewrap with the same namespaces (--unshare-user/pid/ipc/uts/net,
 *       --ro-bind / /, --dev, --proc, --tmpfs /tmp, the workdir bound)
 *   (d) `<engine> exec` into a warm container
 *   (e) lev's container fast path (the helper inside the warm container)
 *   (f) kind none (a plain spawn through the library)
 *   (g) kind none inside the read fence of pre-approved lines (Landlock,
 *       reads everywhere but the masks, writes to the workdir)
 *
 *	bench-sandbox [-n N] [-w WORKDIR] [-e ENGINE -i IMAGE -H HELPER]
 *
 * Without -e/-i/-H the container rows are skipped.  Each row is N timed
 * runs after 5 untimed ones; the median and the 90th percentile are printed
 * in milliseconds, then whether the goals hold: (b) <= (c), (e) <= 5 ms.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "liblev/sandbox/sandbox.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"

extern char **environ;

#define WARMUP 5

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int spawn_wait(char *const *argv)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st, r;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return -r;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int sandbox_run(struct lev_sandbox *sb, char *const *argv)
{
	struct lev_sandbox_proc *p = NULL;
	struct lev_sandbox_result res;
	struct lev_err err = LEV_ERR_INIT;
	int r;

	r = lev_sandbox_spawn(sb, argv, environ, NULL, NULL, NULL, &p, &err);
	if (r == 0)
		r = lev_sandbox_wait(p, &res, &err);
	lev_sandbox_proc_free(p);
	if (r < 0) {
		fprintf(stderr, "bench-sandbox: %s\n", err.msg);
		return r;
	}
	r = res.exit_code == 0 ? 0 : -EIO;
	lev_sandbox_result_release(&res);
	return r;
}

struct row {
	const char *name;
	double median, p90;
	bool ran;
};

typedef int (*runner)(void *ctx);

static int measure(struct row *row, runner fn, void *ctx, int n)
{
	double *t = xcalloc((size_t)n, sizeof(*t));
	int i;

	for (i = 0; i < WARMUP; i++)
		if (fn(ctx) < 0) {
			free(t);
			return -1;
		}
	for (i = 0; i < n; i++) {
		double t0 = now_ms();

		if (fn(ctx) < 0) {
			free(t);
			return -1;
		}
		t[i] = now_ms() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	row->median = t[n / 2];
	row->p90 = t[(n * 9) / 10];
	row->ran = true;
	free(t);
	return 0;
}

static int run_spawn(void *ctx)
{
	return spawn_wait(ctx);
}

static int run_sandbox(void *ctx)
{
	static char *argv[] = { (char *)"/bin/true", NULL };

	return sandbox_run(ctx, argv);
}

/* Kind none with the read fence: what a pre-approved shell line costs. */
static int run_fenced(void *ctx)
{
	static char *argv[] = { (char *)"/bin/true", NULL };
	struct lev_sandbox_limits lim = { .read_fence = true };
	struct lev_sandbox_proc *p = NULL;
	struct lev_sandbox_result res;
	struct lev_err err = LEV_ERR_INIT;
	int r;

	r = lev_sandbox_spawn(ctx, argv, environ, NULL, &lim, NULL, &p, &err);
	if (r == 0)
		r = lev_sandbox_wait(p, &res, &err);
	lev_sandbox_proc_free(p);
	if (r < 0) {
		fprintf(stderr, "bench-sandbox: %s\n", err.msg);
		return r;
	}
	r = res.exit_code == 0 ? 0 : -EIO;
	lev_sandbox_result_release(&res);
	return r;
}

static struct lev_sandbox *make(enum lev_sandbox_kind kind, const char *workdir, const char *engine,
				const char *image, const char *helper, struct lev_sandbox_pool *pool)
{
	struct lev_sandbox_spec s;
	struct lev_sandbox_opts o = LEV_SANDBOX_OPTS_INIT;
	struct lev_sandbox *sb = NULL;
	struct lev_err err = LEV_ERR_INIT;

	memset(&s, 0, sizeof(s));
	s.present = s.has_kind = s.has_network = s.has_on_unavailable = true;
	s.kind = kind;
	s.network = false;
	s.on_unavailable = LEV_ON_UNAVAILABLE_ERROR;
	s.engine = engine ? xstrdup(engine) : NULL;
	s.image = image ? xstrdup(image) : NULL;
	o.workdir = workdir;
	o.oci_helper = helper;
	o.pool = pool;
	if (lev_sandbox_new(&s, &o, &sb, &err) < 0) {
		fprintf(stderr, "bench-sandbox: %s\n", err.msg);
		sb = NULL;
	}
	lev_sandbox_spec_release(&s);
	return sb;
}

int main(int argc, char **argv)
{
	const char *workdir = NULL, *engine = NULL, *image = NULL, *helper = NULL;
	char cwd[4096];
	int n = 200, c;
	struct row rows[7] = {
		{ "(a) fork+exec (baseline)", 0, 0, false },
		{ "(b) lev namespace sandbox", 0, 0, false },
		{ "(c) bubblewrap, same namespaces", 0, 0, false },
		{ "(d) <engine> exec, warm container", 0, 0, false },
		{ "(e) lev container fast path", 0, 0, false },
		{ "(f) kind none", 0, 0, false },
		{ "(g) kind none, read fence", 0, 0, false },
	};
	struct lev_sandbox *ns = NULL, *fast = NULL, *none = NULL;
	struct lev_sandbox_pool *pool = NULL;
	char *true_argv[] = { (char *)"/bin/true", NULL };
	char **bwrap = NULL, **exec_argv = NULL;
	int i, rc = 0;

	while ((c = getopt(argc, argv, "n:w:e:i:H:")) != -1) {
		switch (c) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'w':
			workdir = optarg;
			break;
		case 'e':
			engine = optarg;
			break;
		case 'i':
			image = optarg;
			break;
		case 'H':
			helper = optarg;
			break;
		default:
			fprintf(stderr, "usage: bench-sandbox [-n N] [-w WORKDIR] [-e ENGINE -i IMAGE -H HELPER]\n");
			return 2;
		}
	}
	if (n < 10)
		n = 10;
	if (!workdir)
		workdir = getcwd(cwd, sizeof(cwd));

	/* (a) */
	if (measure(&rows[0], run_spawn, true_argv, n) < 0)
		fprintf(stderr, "bench-sandbox: (a) failed\n");

	/* (f), (g): the kind-none read fence of pre-approved lines */
	none = make(LEV_SANDBOX_NONE, workdir, NULL, NULL, NULL, NULL);
	if (none && measure(&rows[5], run_sandbox, none, n) < 0)
		fprintf(stderr, "bench-sandbox: (f) failed\n");
	if (none && measure(&rows[6], run_fenced, none, n) < 0)
		fprintf(stderr, "bench-sandbox: (g) failed\n");
	lev_sandbox_free(none);

	/* (b) */
	ns = make(LEV_SANDBOX_NAMESPACE, workdir, NULL, NULL, NULL, NULL);
	if (ns && measure(&rows[1], run_sandbox, ns, n) < 0)
		fprintf(stderr, "bench-sandbox: (b) failed\n");

	/* (c) */
	bwrap = lev_strv_copy((char *const[]){
		(char *)"/usr/bin/bwrap", (char *)"--unshare-user", (char *)"--unshare-pid",
		(char *)"--unshare-ipc", (char *)"--unshare-uts", (char *)"--unshare-net",
		(char *)"--die-with-parent", (char *)"--new-session", (char *)"--ro-bind", (char *)"/",
		(char *)"/", (char *)"--dev", (char *)"/dev", (char *)"--proc", (char *)"/proc",
		(char *)"--tmpfs", (char *)"/tmp", NULL });
	bwrap = lev_strv_push(bwrap, "--bind");
	bwrap = lev_strv_push(bwrap, workdir);
	bwrap = lev_strv_push(bwrap, workdir);
	bwrap = lev_strv_push(bwrap, "--chdir");
	bwrap = lev_strv_push(bwrap, workdir);
	bwrap = lev_strv_push(bwrap, "/bin/true");
	if (access("/usr/bin/bwrap", X_OK) == 0 && measure(&rows[2], run_spawn, bwrap, n) < 0)
		fprintf(stderr, "bench-sandbox: (c) failed (is bubblewrap usable here?)\n");

	/* (d), (e) */
	if (engine && image && helper) {
		lev_sandbox_pool_new("bench", &pool, NULL);
		fast = make(LEV_SANDBOX_CONTAINER, workdir, engine, image, helper, pool);
		if (fast) {
			char *name = NULL;
			struct lev_buf b = LEV_BUF_INIT;

			/* the warm container's name, from the plan */
			if (lev_sandbox_describe(fast, true_argv, NULL, false, &b, NULL) == 0) {
				char *s = strstr(b.buf, "  name: ");
				if (s)
					name = xstrndup(s + 8, strcspn(s + 8, "\n"));
			}
			lev_buf_release(&b);
			if (name) {
				exec_argv = lev_strv_push(NULL, engine);
				exec_argv = lev_strv_push(exec_argv, "exec");
				exec_argv = lev_strv_push(exec_argv, name);
				exec_argv = lev_strv_push(exec_argv, "/bin/true");
				if (exec_argv[0][0] != '/') {
					/* posix_spawn wants a path */
					char *p = NULL;
					const char *dirs[] = { "/usr/bin", "/usr/local/bin", "/bin", NULL };
					for (i = 0; dirs[i]; i++) {
						p = xasprintf("%s/%s", dirs[i], engine);
						if (access(p, X_OK) == 0)
							break;
						free(p);
						p = NULL;
					}
					if (p) {
						free(exec_argv[0]);
						exec_argv[0] = p;
					}
				}
				if (measure(&rows[3], run_spawn, exec_argv, n / 4 < 10 ? 10 : n / 4) < 0)
					fprintf(stderr, "bench-sandbox: (d) failed\n");
				free(name);
			}
			if (measure(&rows[4], run_sandbox, fast, n) < 0)
				fprintf(stderr, "bench-sandbox: (e) failed\n");
		}
	}

	printf("/bin/true, wall time per command in ms (%d runs per row, %d for (d)):\n", n,
	       n / 4 < 10 ? 10 : n / 4);
	printf("  %-36s %9s %9s\n", "", "median", "p90");
	for (i = 0; i < 7; i++) {
		if (rows[i].ran)
			printf("  %-36s %9.3f %9.3f\n", rows[i].name, rows[i].median, rows[i].p90);
		else
			printf("  %-36s %9s\n", rows[i].name, "skipped");
	}
	if (rows[1].ran && rows[2].ran)
		printf("goal (b) <= (c): %s (%.2fx)\n", rows[1].median <= rows[2].median ? "met" : "MISSED",
		       rows[1].median / rows[2].median);
	if (rows[4].ran)
		printf("goal (e) <= 5 ms: %s; (e) is %.0fx faster than (d)\n",
		       rows[4].median <= 5.0 ? "met" : "MISSED",
		       rows[3].ran ? rows[3].median / rows[4].median : 0.0);
	if (rows[5].ran && rows[6].ran)
		printf("the read fence adds %.2f ms per pre-approved command with no sandbox\n",
		       rows[6].median - rows[5].median);

	lev_sandbox_free(fast);
	lev_sandbox_free(ns);
	lev_sandbox_pool_free(pool);
	lev_strv_free(bwrap);
	lev_strv_free(exec_argv);
	return rc;
}
