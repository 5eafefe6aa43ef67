/*
 * bench-perm.c - (a) permission resolutions per second, beside a trivial
 * baseline measured in the same run.
 *
 *   resolve    lev_perm_resolve() for a cycle of tools (shell, bash,
 *              read_file, write_file, web_fetch, an MCP tool) against a
 *              realistic input: user global and agent tables, blueprint stage
 *              and agent tables, --allow, --yolo off.
 *   decide     lev_perm_decide() for a pre-parsed shell line whose every
 *              key is looked up in the built-in safe list (coverage).
 *   baseline   the least a resolver could do per call: canonicalise the
 *              tool name and compare it with one string.
 *   parse      lev_shellkeys_parse() of a typical chained line (for scale).
 *
 * usage: bench-perm [SECONDS-PER-ROUND]   (default 0.3; 5 rounds, median)
 * Goal (issue 3): resolve >= 5 M/s.  Nothing here asserts a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench-util.h"
#include "liblev/policy/perm.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/base/strv.h"

#define ROUNDS 5

static volatile unsigned sink;

static const char *const tools[] = {
	"shell", "read_file", "write_file", "bash", "web_fetch", "github__create_issue",
	"list_dir", "edit_file",
};
#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

static const struct lev_perm_rule user_global[] = {
	{ "shell", LEV_ASK, "[tool_permissions]" },
	{ "write_file", LEV_ASK, "[tool_permissions]" },
	{ "web_search", LEV_ALLOW, "[tool_permissions]" },
	{ "github__create_issue", LEV_DENY, "[tool_permissions]" },
	{ "edit_file", LEV_ASK, "[tool_permissions]" },
	{ "spawn_agent", LEV_DENY, "[tool_permissions]" },
};
static const struct lev_perm_rule user_agent[] = {
	{ "web_fetch", LEV_ASK, "[agent_tool_permissions.coder]" },
	{ "read_file", LEV_ALLOW, "[agent_tool_permissions.coder]" },
	{ "list_dir", LEV_ALLOW, "[agent_tool_permissions.coder]" },
};
static const struct lev_perm_rule bp_stage[] = {
	{ "write_file", LEV_DENY, "blueprint [stages.build.tool_permissions]" },
	{ "shell", LEV_ALLOW, "blueprint [stages.build.tool_permissions]" },
	{ "web_fetch", LEV_ALLOW, "blueprint [stages.build.tool_permissions]" },
	{ "edit_file", LEV_ASK, "blueprint [stages.build.tool_permissions]" },
};
static const struct lev_perm_rule bp_agent[] = {
	{ "read_file", LEV_ALLOW, "blueprint [tool_permissions]" },
	{ "list_dir", LEV_ALLOW, "blueprint [tool_permissions]" },
	{ "shell", LEV_ASK, "blueprint [tool_permissions]" },
	{ "web_search", LEV_ALLOW, "blueprint [tool_permissions]" },
};

typedef unsigned (*op_fn)(const struct lev_perm_input *in, size_t i, const void *arg);

static unsigned op_resolve(const struct lev_perm_input *in, size_t i, const void *arg)
{
	struct lev_perm_resolution r;

	(void)arg;
	lev_perm_resolve(in, tools[i % NTOOLS], &r);
	return (unsigned)r.verdict;
}

static unsigned op_decide(const struct lev_perm_input *in, size_t i, const void *arg)
{
	struct lev_perm_decision d;

	lev_perm_decide(in, (i & 1) ? "shell" : "bash", arg, NULL, &d);
	return (unsigned)d.verdict;
}

static unsigned op_baseline(const struct lev_perm_input *in, size_t i, const void *arg)
{
	(void)in;
	(void)arg;
	return strcmp(lev_tool_canonical(tools[i % NTOOLS]), "write_file") == 0;
}

static unsigned op_parse(const struct lev_perm_input *in, size_t i, const void *arg)
{
	struct lev_shellkeys k;
	unsigned r;

	(void)in;
	(void)i;
	lev_shellkeys_parse(arg, &k);
	r = k.grantable;
	lev_shellkeys_release(&k);
	return r;
}

/* Median operations per second over ROUNDS rounds of about SECS each. */
static double measure(op_fn fn, const struct lev_perm_input *in, const void *arg, double secs)
{
	double rates[ROUNDS];
	size_t batch = 1024;
	int r;

	for (r = 0; r < ROUNDS; r++) {
		double t0 = bench_now(), t;
		size_t n = 0, i;

		do {
			for (i = 0; i < batch; i++)
				sink += fn(in, n + i, arg);
			n += batch;
			t = bench_now() - t0;
		} while (t < secs);
		rates[r] = (double)n / t;
	}
	return bench_median(rates, (size_t)ROUNDS);
}

static void report(const char *name, double rate)
{
	printf("%-10s %10.2f M/s  %8.1f ns/op\n", name, rate / 1e6, 1e9 / rate);
}

int main(int argc, char **argv)
{
	static const char *const allow[] = { "web_search", NULL };
	static const char line[] = "git status && ls -la src | grep -c foo; cat notes.md 2>/dev/null";
	double secs = argc > 1 ? strtod(argv[1], NULL) : 0.3;
	char **safe_keys = lev_safe_shell_default_keys();
	struct lev_perm_safe safe[128];
	struct lev_perm_input in = {
		.user_global = user_global,
		.n_user_global = sizeof(user_global) / sizeof(user_global[0]),
		.user_agent = user_agent,
		.n_user_agent = sizeof(user_agent) / sizeof(user_agent[0]),
		.bp_stage = bp_stage,
		.n_bp_stage = sizeof(bp_stage) / sizeof(bp_stage[0]),
		.bp_agent = bp_agent,
		.n_bp_agent = sizeof(bp_agent) / sizeof(bp_agent[0]),
		.allow = allow,
		.safe = safe,
	};
	struct lev_shellkeys k;
	double base, res, dec, parse;
	size_t i;

	if (secs <= 0 || secs > 60)
		secs = 0.3;
	for (i = 0; safe_keys[i] && i < 128; i++)
		safe[i] = (struct lev_perm_safe){ safe_keys[i], "built-in list" };
	in.n_safe = i;
	lev_shellkeys_parse(line, &k);
	/* the bench line must be covered, or "decide" would measure a shortcut */
	{
		struct lev_perm_decision d;

		lev_perm_decide(&in, "shell", &k, NULL, &d);
		if (d.why != LEV_PERM_WHY_COVERED) {
			fprintf(stderr, "bench-perm: the bench line is not covered\n");
			return 1;
		}
	}

	base = measure(op_baseline, &in, NULL, secs);
	res = measure(op_resolve, &in, NULL, secs);
	dec = measure(op_decide, &in, &k, secs);
	parse = measure(op_parse, &in, line, secs);

	printf("bench-perm: %d rounds of %.2f s, median\n", ROUNDS, secs);
	report("baseline", base);
	report("resolve", res);
	report("decide", dec);
	report("parse", parse);
	printf("resolve: %.2f M/s (goal >= 5 M/s: %s); %.1fx the baseline's cost\n", res / 1e6,
	       res >= 5e6 ? "met" : "NOT met", base / res);
	lev_shellkeys_release(&k);
	lev_strv_free(safe_keys);
	return sink == 0xdeadbeef;
}
