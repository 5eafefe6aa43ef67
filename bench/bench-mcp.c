/*
 * bench-mcp.c - the gate overhead of an MCP call over the bare JSON-RPC
 * round trip to the same server, in the same process and run.
 *
 *	bench-mcp SERVER [N]	(SERVER: tests/helpers/mcp-hostile; default N = 2000)
 *
 * Starts the test server twice, on the host (sandbox = "none": the pipes
 * cost the same inside a sandbox, and the benchmark needs no namespaces):
 *
 *	bare	lev_mcp_call() on a server of its own: one tools/call round trip
 *	gates	lev_agent_dispatch() of b__echo in a run built as `lev run`
 *		builds it (offered -> schema -> permission -> taint on), then
 *		the same round trip and the result's label
 *
 * Prints the medians of 9 interleaved rounds, the overhead per call in
 * microseconds, and the difference of the fastest rounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench-util.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/blueprint.h"
#include "liblev/conf/config.h"
#include "liblev/run/agent.h"
#include "liblev/tools/mcp.h"

#define ROUNDS 9

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "bench-mcp: %s: %s\n", what, msg);
	exit(1);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		die("cannot write", path);
}

static double time_bare(struct lev_mcp_server *s, const json_t *args, long n)
{
	struct lev_err err = LEV_ERR_INIT;
	double t0 = bench_now();

	for (long i = 0; i < n; i++) {
		struct lev_tool_output out = { 0 };

		if (lev_mcp_call(s, "echo", args, -1, &out, &err) < 0 || out.is_error)
			die("bare call", out.text ? out.text : err.msg);
		lev_tool_output_release(&out);
	}
	return bench_now() - t0;
}

static double time_gates(struct lev_agent *a, const struct lev_tool_call *call, long n)
{
	struct lev_err err = LEV_ERR_INIT;
	double t0 = bench_now();

	for (long i = 0; i < n; i++) {
		struct lev_tool_output out = { 0 };
		struct lev_call_decision dec = { 0 };

		if (lev_agent_dispatch(a, call, &out, &dec, &err) < 0 || !dec.allowed ||
		    out.is_error)
			die("gated call", out.text ? out.text : dec.reason ? dec.reason : err.msg);
		lev_call_decision_release(&dec);
		lev_tool_output_release(&out);
	}
	return bench_now() - t0;
}

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/lev-bench-mcp.XXXXXX";
	struct lev_err err = LEV_ERR_INIT;
	struct lev_agent_opts o = { .cancel_fd = -1 };
	struct lev_sandbox_opts so = LEV_SANDBOX_OPTS_INIT;
	struct lev_sandbox_spec eff;
	struct lev_sandbox *sb = NULL;
	struct lev_mcp_server *bare = NULL;
	struct lev_blueprint *bp = NULL;
	struct lev_agent *agent = NULL;
	struct lev_tool_call call = { 0 };
	struct lev_config cfg;
	double tb[ROUNDS], tg[ROUNDS];
	char *dir, *work, *conf, *p;
	long n;

	if (argc < 2)
		die("usage", "bench-mcp SERVER [N]");
	n = argc > 2 ? strtol(argv[2], NULL, 10) : 2000;
	if (n <= 0)
		n = 2000;
	dir = mkdtemp(tmpl);
	if (!dir)
		die("mkdtemp", tmpl);
	work = xasprintf("%s/work", dir);
	(void)lev_mkdir_p(work, 0700, NULL);
	p = xasprintf("%s/agent.leviath", dir);
	put(p, "[agent]\nname = \"bench\"\n[security]\ntaint_tracking = true\n[stages.main]\n"
	       "model = { provider = \"script\", script = \"turns.toml\" }\n"
	       "available_connectors = [\"b\"]\n");
	free(p);
	p = xasprintf("%s/turns.toml", dir);
	put(p, "[[turn]]\ntext = \"done\"\n");
	free(p);
	conf = xasprintf("[tool_permissions]\nb__echo = \"allow\"\n[[mcp_servers]]\nname = \"b\"\n"
			 "command = \"python3\"\nargs = [\"%s\", \"echo\"]\nsandbox = \"none\"\n",
			 argv[1]);
	if (lev_config_parse(conf, strlen(conf), "bench.toml", &cfg, &err) < 0)
		die("config", err.msg);
	if (lev_blueprint_load(dir, &bp, &err) < 0)
		die("blueprint", err.msg);
	o.bp = bp;
	o.cfg = &cfg;
	o.workdir = work;
	o.home = dir;
	o.data_root = p = xasprintf("%s/.leviath", dir);	/* the approved tools go there */
	if (lev_agent_new(&o, &agent, &err) < 0)
		die("agent", err.msg);

	lev_sandbox_resolve(&cfg.sandbox, NULL, NULL, &eff);
	so.workdir = work;
	so.home = dir;
	if (lev_sandbox_new(&eff, &so, &sb, &err) < 0)
		die("sandbox", err.msg);
	{
		struct lev_mcp_opts mo = { .conf = &cfg.mcp_servers[0], .sandbox = sb };

		if (lev_mcp_start(&mo, &bare, &err) < 0)
			die("server", err.msg);
	}
	call.id = xstrdup("bench");
	call.name = xstrdup("b__echo");
	call.raw_arguments = xstrdup("{\"text\":\"hello\"}");
	call.arguments = json_pack("{s:s}", "text", "hello");

	for (int r = 0; r < ROUNDS; r++) {
		tb[r] = time_bare(bare, call.arguments, n);
		tg[r] = time_gates(agent, &call, n);
	}
	bench_sort(tb, (size_t)ROUNDS);
	bench_sort(tg, (size_t)ROUNDS);
	printf("bench-mcp: %ld tools/call per round, median of %d rounds\n", n, ROUNDS);
	printf("bare round trip %7.2f us  through every gate %7.2f us  overhead %6.2f us/call"
	       "  (fastest rounds: %6.2f us)\n",
	       tb[ROUNDS / 2] / (double)n * 1e6, tg[ROUNDS / 2] / (double)n * 1e6,
	       (tg[ROUNDS / 2] - tb[ROUNDS / 2]) / (double)n * 1e6,
	       (tg[0] - tb[0]) / (double)n * 1e6);

	lev_mcp_free(bare);
	lev_sandbox_free(sb);
	lev_sandbox_spec_release(&eff);
	lev_agent_free(agent);
	lev_blueprint_free(bp);
	lev_config_release(&cfg);
	json_decref(call.arguments);
	free(call.id);
	free(call.name);
	free(call.raw_arguments);
	(void)lev_rm_rf(dir, NULL);
	free(work);
	free(conf);
	return 0;
}
