/*
 * bench-taint.c - taint gate throughput.
 *
 *   1. decisions per second with 100 allowlist rules, the matching rule
 *      being the last one (worst case), targets already extracted; beside
 *      it, in the same run, the baseline of the same gate deciding a call
 *      that needs no rule (a non-outbound tool), and the full path with
 *      target extraction from JSON arguments;
 *   2. the median time of a decision that runs one Lua rule, beside the
 *      median of the same decision answered by an allowlist rule.
 *
 * Goals (issue 4): >= 2 M decisions/s without Lua; <= 20 us median with one
 * Lua rule.  Figures only; nothing here asserts a time.  Times are the
 * thread's CPU time (see bench_cpu_s(CLOCK_THREAD_CPUTIME_ID)).
 *
 * usage: bench-taint [ITERATIONS]   (default 2000000)
 */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench-util.h"
#include "liblev/base/buf.h"
#include "liblev/policy/taintgate.h"
#include "liblev/base/util.h"

/*
 * CPU time of this thread: the machines this runs on are shared, and wall
 * time would charge the gate for other processes' time slices.
 */
static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || lev_write_all(fd, text, strlen(text)) < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
}

static struct lev_gate *make_gate(const char *policy, const char *rules_dir)
{
	struct lev_gate_options o = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	struct lev_gate *g = NULL;

	o.policy_path = policy;
	o.rules_dir = rules_dir;
	o.enabled = true;
	if (lev_gate_new(&o, &g, &err) < 0) {
		fprintf(stderr, "bench-taint: %s\n", err.msg);
		exit(1);
	}
	return g;
}

/* Decisions per second for CALL, expecting SOURCE. */
static double rate(struct lev_gate *g, const struct lev_gate_call *call, long n,
		   enum lev_gate_source want)
{
	struct lev_gate_decision d;
	double t0, t1;
	long i;

	for (i = 0; i < n / 10 + 1; i++) {	/* warm up */
		lev_gate_check(g, call, &d, NULL);
		lev_gate_decision_release(&d);
	}
	lev_gate_check(g, call, &d, NULL);
	if (d.source != want) {
		fprintf(stderr, "bench-taint: wrong decision: %s\n", lev_gate_source_name(d.source));
		exit(1);
	}
	lev_gate_decision_release(&d);
	t0 = bench_cpu_s(CLOCK_THREAD_CPUTIME_ID);
	for (i = 0; i < n; i++) {
		lev_gate_check(g, call, &d, NULL);
		lev_gate_decision_release(&d);
	}
	t1 = bench_cpu_s(CLOCK_THREAD_CPUTIME_ID);
	return (double)n / (t1 - t0);
}

/* Median microseconds per decision over N single timed decisions. */
static double median_us(struct lev_gate *g, const struct lev_gate_call *call, int n,
			enum lev_gate_source want)
{
	struct lev_gate_decision d;
	double *v = malloc(sizeof(double) * (size_t)n), m;
	int i;

	for (i = 0; i < 200; i++) {
		lev_gate_check(g, call, &d, NULL);
		lev_gate_decision_release(&d);
	}
	for (i = 0; i < n; i++) {
		double t0 = bench_cpu_s(CLOCK_THREAD_CPUTIME_ID);

		lev_gate_check(g, call, &d, NULL);
		v[i] = (bench_cpu_s(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e6;
		if (d.source != want) {
			fprintf(stderr, "bench-taint: wrong decision: %s\n",
				lev_gate_source_name(d.source));
			exit(1);
		}
		lev_gate_decision_release(&d);
	}
	m = bench_median(v, (size_t)n);
	free(v);
	return m;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/lev-bench-taint.XXXXXX";
	struct lev_buf pol = LEV_BUF_INIT;
	struct lev_gate *g;
	struct lev_gate_call c = { 0 };
	char *target[] = { (char *)"api.service99.example.com", NULL };
	char *ppath, *rdir, *rfile, *p1path;
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	double r_rules, r_base, r_json, r_parsed, r_empty, m_lua, m_allow;
	struct json_t *parsed = NULL;
	int i;

	if (n <= 0 || !mkdtemp(dir))
		return 1;
	ppath = lev_path_join(dir, "policy.toml");
	p1path = lev_path_join(dir, "one.toml");
	rdir = lev_path_join(dir, "rules");
	rfile = lev_path_join(rdir, "ops.lua");

	/* 100 rules over 50 tools; the call matches only the last one */
	for (i = 0; i < 100; i++)
		lev_buf_addf(&pol,
			     "[[allowlist]]\ntool = \"%s\"\nto = [\"*.service%d.example.com\", "
			     "\"ops%d@example.com\"]\nmax_sensitivity = \"%s\"\n\n",
			     i % 2 ? "http_post" : "send_email", i, i, i == 99 ? "private" : "internal");
	write_file(ppath, pol.buf);
	lev_buf_release(&pol);

	g = make_gate(ppath, NULL);
	c.tool = "http_post";
	c.taint = LEV_PRIVATE;
	c.targets_given = true;
	c.targets = target;
	r_rules = rate(g, &c, n, LEV_GATE_SRC_ALLOWLIST);

	c.tool = "read_file";
	r_base = rate(g, &c, n, LEV_GATE_SRC_NOT_OUTBOUND);

	c.tool = "http_post";
	c.targets_given = false;
	c.targets = NULL;
	c.args_json = "{\"url\":\"https://api.service99.example.com/v1/items?x=1\","
		      "\"body\":\"{\\\"a\\\":1}\"}";
	c.args_len = strlen(c.args_json);
	r_json = rate(g, &c, n / 4, LEV_GATE_SRC_ALLOWLIST);
	/* the runtime has the arguments parsed already */
	if (lev_taint_args_parse(c.args_json, c.args_len, &parsed, NULL) < 0)
		return 1;
	c.args = parsed;
	r_parsed = rate(g, &c, n / 4, LEV_GATE_SRC_ALLOWLIST);
	c.args = NULL;
	json_decref(parsed);
	lev_gate_free(g);

	write_file(p1path, "\n");
	g = make_gate(p1path, NULL);
	c.targets_given = true;
	c.targets = target;
	c.args_json = NULL;
	c.args_len = 0;
	r_empty = rate(g, &c, n, LEV_GATE_SRC_NONE);
	lev_gate_free(g);

	/* one Lua rule vs the same call answered by one allowlist rule */
	mkdir(rdir, 0700);
	write_file(rfile, "return tool == 'http_post' and target ~= nil and "
			  "target:sub(-12) == '.example.com' and taint ~= 'public' and "
			  "args.body ~= nil");
	g = make_gate(p1path, rdir);
	c.args_json = "{\"url\":\"https://api.service99.example.com/v1\",\"body\":\"x\"}";
	c.args_len = strlen(c.args_json);
	c.targets_given = false;
	c.targets = NULL;
	m_lua = median_us(g, &c, 20001, LEV_GATE_SRC_RULE);
	lev_gate_free(g);
	write_file(p1path, "[[allowlist]]\ntool = \"http_post\"\nto = [\"*.example.com\"]\n"
			   "max_sensitivity = \"private\"\n");
	g = make_gate(p1path, NULL);
	m_allow = median_us(g, &c, 20001, LEV_GATE_SRC_ALLOWLIST);
	lev_gate_free(g);

	printf("gate, 100 allowlist rules, match on #100:   %.2f M decisions/s  (goal >= 2 M/s)\n",
	       r_rules / 1e6);
	printf("  baseline, non-outbound tool (no rules):    %.2f M decisions/s\n", r_base / 1e6);
	printf("  baseline, empty policy (needs the user):   %.2f M decisions/s\n", r_empty / 1e6);
	printf("  same, reading the target from JSON args:   %.2f M decisions/s\n", r_json / 1e6);
	printf("  same, from arguments already parsed:       %.2f M decisions/s\n", r_parsed / 1e6);
	printf("gate, one Lua rule allows (median):          %.2f us  (goal <= 20 us)\n", m_lua);
	printf("  baseline, same call by an allowlist rule:  %.2f us\n", m_allow);

	lev_rm_rf(dir, NULL);
	free(ppath);
	free(p1path);
	free(rdir);
	free(rfile);
	return 0;
}
