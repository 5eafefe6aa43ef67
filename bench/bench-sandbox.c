/*
 * bench-sandbox - wall time per command of /bin/true, nine ways, in one run:
 *
 *   (a) a bare fork+exec (posix_spawn + waitpid): the baseline
 *   (b) lev's namespace sandbox through the library, network off, warm: each
 *       command in a pre-forked cell of the sandbox's helper (its own PID,
 *       mount and IPC namespaces, fresh /tmp /dev/shm /proc, Landlock,
 *       seccomp, rlimits, caps) inside the helper's user, mount, UTS and
 *       network namespaces (read-only root, private /dev /run, masks)
 *   (b') the same, cold: every namespace and mount built for each command
 *   (b") the first command of a fresh warm sandbox: lev_sandbox_new(), the
 *       helper's start, the command, lev_sandbox_free()
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
 * in milliseconds, then whether the goals hold: (b) <= 1.5 x (a), (b') <=
 * (c), (e) <= 5 ms.  (a), (b) and (b') are measured interleaved, in ten
 * rounds of N/10 each, so a machine whose load changes during the run
 * weighs on all three alike.
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

#include "bench/bench-util.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"

extern char **environ;

#define WARMUP 5

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

/* Time N calls of FN into T (after WARMUP untimed ones when WARM). */
static int time_calls(runner fn, void *ctx, int n, bool warm, double *t)
{
	int i;

	for (i = 0; warm && i < WARMUP; i++)
		if (fn(ctx) < 0)
			return -1;
	for (i = 0; i < n; i++) {
		double t0 = bench_now_ms();

		if (fn(ctx) < 0)
			return -1;
		t[i] = bench_now_ms() - t0;
	}
	return 0;
}

static void summarize(struct row *row, double *t, int n)
{
	row->median = bench_median(t, (size_t)n);
	row->p90 = t[(n * 9) / 10];
	row->ran = true;
}

static int measure(struct row *row, runner fn, void *ctx, int n)
{
	double *t = xcalloc((size_t)n, sizeof(*t));
	int r = time_calls(fn, ctx, n, true, t);

	if (r == 0)
		summarize(row, t, n);
	free(t);
	return r;
}

#define ROUNDS 10

/* K rows measured in ROUNDS interleaved rounds of N / ROUNDS calls each. */
static void measure_interleaved(struct row **rows, runner *fns, void **ctxs, int k, int n)
{
	int per = n / ROUNDS, i, j;
	double *t[8];
	bool ok[8];

	for (j = 0; j < k; j++) {
		t[j] = xcalloc((size_t)(per * ROUNDS), sizeof(double));
		ok[j] = ctxs[j] && time_calls(fns[j], ctxs[j], 0, true, t[j]) == 0;
	}
	for (i = 0; i < ROUNDS; i++)
		for (j = 0; j < k; j++)
			if (ok[j] && time_calls(fns[j], ctxs[j], per, i == 0, t[j] + i * per) < 0) {
				fprintf(stderr, "bench-sandbox: %s failed\n", rows[j]->name);
				ok[j] = false;
			}
	for (j = 0; j < k; j++) {
		if (ok[j])
			summarize(rows[j], t[j], per * ROUNDS);
		free(t[j]);
	}
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
				const char *image, const char *helper, struct lev_sandbox_pool *pool,
				bool cold)
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
	o.cold = cold;
	if (lev_sandbox_new(&s, &o, &sb, &err) < 0) {
		fprintf(stderr, "bench-sandbox: %s\n", err.msg);
		sb = NULL;
	}
	lev_sandbox_spec_release(&s);
	return sb;
}

/* (b"): a fresh warm sandbox for one command (CTX: the workdir). */
static int run_first(void *ctx)
{
	struct lev_sandbox *sb = make(LEV_SANDBOX_NAMESPACE, ctx, NULL, NULL, NULL, NULL, false);
	int r;

	if (!sb)
		return -1;
	r = run_sandbox(sb);
	if (r == 0 && lev_sandbox_cold(sb)) {
		fprintf(stderr, "bench-sandbox: not warm: %s\n", lev_sandbox_cold(sb));
		r = -1;
	}
	lev_sandbox_free(sb);
	return r;
}

int main(int argc, char **argv)
{
	const char *workdir = NULL, *engine = NULL, *image = NULL, *helper = NULL;
	char cwd[4096];
	int n = 200, c;
	struct row rows[9] = {
		{ "(a) fork+exec (baseline)", 0, 0, false },
		{ "(b) lev namespace sandbox, warm", 0, 0, false },
		{ "(c) bubblewrap, same namespaces", 0, 0, false },
		{ "(d) <engine> exec, warm container", 0, 0, false },
		{ "(e) lev container fast path", 0, 0, false },
		{ "(f) kind none", 0, 0, false },
		{ "(g) kind none, read fence", 0, 0, false },
		{ "(b') lev namespace sandbox, cold", 0, 0, false },
		{ "(b\") first command, new warm sandbox", 0, 0, false },
	};
	struct lev_sandbox *ns = NULL, *ns_cold = NULL, *fast = NULL, *none = NULL;
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

	/* (a), (b), (b'), interleaved */
	ns = make(LEV_SANDBOX_NAMESPACE, workdir, NULL, NULL, NULL, NULL, false);
	ns_cold = make(LEV_SANDBOX_NAMESPACE, workdir, NULL, NULL, NULL, NULL, true);
	{
		struct row *r3[3] = { &rows[0], &rows[1], &rows[7] };
		runner f3[3] = { run_spawn, run_sandbox, run_sandbox };
		void *c3[3] = { true_argv, ns, ns_cold };

		measure_interleaved(r3, f3, c3, 3, n);
	}
	if (ns && lev_sandbox_cold(ns))
		fprintf(stderr, "bench-sandbox: (b) ran cold: %s\n", lev_sandbox_cold(ns));
	/* (b") */
	if (measure(&rows[8], run_first, (void *)workdir, n / 4 < 10 ? 10 : n / 4) < 0)
		fprintf(stderr, "bench-sandbox: (b\") failed\n");

	/* (f), (g): the kind-none read fence of pre-approved lines */
	none = make(LEV_SANDBOX_NONE, workdir, NULL, NULL, NULL, NULL, false);
	if (none && measure(&rows[5], run_sandbox, none, n) < 0)
		fprintf(stderr, "bench-sandbox: (f) failed\n");
	if (none && measure(&rows[6], run_fenced, none, n) < 0)
		fprintf(stderr, "bench-sandbox: (g) failed\n");
	lev_sandbox_free(none);

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
		fast = make(LEV_SANDBOX_CONTAINER, workdir, engine, image, helper, pool, false);
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

	printf("/bin/true, wall time per command in ms (%d runs per row, %d for (d) and (b\")):\n",
	       n, n / 4 < 10 ? 10 : n / 4);
	printf("  %-38s %9s %9s %9s\n", "", "median", "p90", "x (a)");
	for (i = 0; i < 9; i++) {
		/* (b), (b'), (b") together */
		static const int order[9] = { 0, 1, 7, 8, 2, 3, 4, 5, 6 };
		int at = order[i];

		if (rows[at].ran && rows[0].ran)
			printf("  %-38s %9.3f %9.3f %8.2fx\n", rows[at].name, rows[at].median,
			       rows[at].p90, rows[at].median / rows[0].median);
		else
			printf("  %-38s %9s\n", rows[at].name, "skipped");
	}
	if (rows[1].ran && rows[0].ran)
		printf("goal (b) warm <= 1.5x (a): %s (%.2fx; cold (b') %.2fx)\n",
		       rows[1].median <= 1.5 * rows[0].median ? "met" : "MISSED",
		       rows[1].median / rows[0].median,
		       rows[7].ran ? rows[7].median / rows[0].median : 0.0);
	if (rows[7].ran && rows[2].ran)
		printf("goal (b') <= (c): %s (%.2fx)\n", rows[7].median <= rows[2].median ? "met" : "MISSED",
		       rows[7].median / rows[2].median);
	if (rows[4].ran)
		printf("goal (e) <= 5 ms: %s; (e) is %.0fx faster than (d)\n",
		       rows[4].median <= 5.0 ? "met" : "MISSED",
		       rows[3].ran ? rows[3].median / rows[4].median : 0.0);
	if (rows[5].ran && rows[6].ran)
		printf("the read fence adds %.2f ms per pre-approved command with no sandbox\n",
		       rows[6].median - rows[5].median);

	lev_sandbox_free(fast);
	lev_sandbox_free(ns);
	lev_sandbox_free(ns_cold);
	lev_sandbox_pool_free(pool);
	lev_strv_free(bwrap);
	lev_strv_free(exec_argv);
	return rc;
}
