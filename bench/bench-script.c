/*
 * bench-script.c - a Lua script tool's start-up, beside a bare Lua state,
 * in the same process and run.
 *
 *	bench-script [N]	(default N = 2000 per round)
 *
 *	bare	luaL_newstate() + lua_close(): the floor any fresh state pays
 *	box	lev_luabox_init() + release: the state with the rules' hardening
 *		(libraries filtered, charged and wrapped in read-only proxies)
 *	call	lev_script_run() of a tool whose header declares one string
 *		parameter, on {"text": "hi"}: a fresh hardened state, the chunk
 *		compiled as text, `params` built from the arguments, the host
 *		functions set, the chunk run under its budget, `return params.text`
 *		taken as the result, the state closed
 *
 * Prints the medians of 9 interleaved rounds in microseconds per call.
 */
#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench-util.h"
#include "liblev/conf/scripttool.h"
#include "liblev/policy/luabox.h"
#include "liblev/tools/script.h"

#define ROUNDS 9

static const char tool_src[] = "-- @tool echo\n"
			       "-- @description Say it back\n"
			       "-- @param text string required \"what to say\"\n"
			       "return params.text\n";

static double round_bare(int n)
{
	double t0 = bench_now();

	for (int i = 0; i < n; i++) {
		lua_State *L = luaL_newstate();

		if (!L)
			abort();
		lua_close(L);
	}
	return (bench_now() - t0) / n * 1e6;
}

static double round_box(int n)
{
	struct lev_luabox_limits lim = { LEV_SCRIPT_DEFAULT_INSTRUCTIONS,
					 LEV_SCRIPT_DEFAULT_WALL_NS, LEV_SCRIPT_DEFAULT_MEMORY };
	double t0 = bench_now();

	for (int i = 0; i < n; i++) {
		struct lev_luabox b;

		lev_luabox_init(&b, &lim, "script");
		lev_luabox_release(&b);
	}
	return (bench_now() - t0) / n * 1e6;
}

static double round_call(int n, const struct lev_script_tool *st, const json_t *args)
{
	double t0 = bench_now();

	for (int i = 0; i < n; i++) {
		struct lev_tool_output out = { 0 };

		lev_script_run(st, args, NULL, NULL, &out);
		if (out.is_error || strcmp(out.text, "hi")) {
			fprintf(stderr, "bench-script: the call failed: %s\n", out.text);
			exit(1);
		}
		lev_tool_output_release(&out);
	}
	return (bench_now() - t0) / n * 1e6;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	double bare[ROUNDS], box[ROUNDS], call[ROUNDS];
	struct lev_script_tool st;
	struct lev_err err = LEV_ERR_INIT;
	json_t *args = json_pack("{s:s}", "text", "hi");

	if (n <= 0)
		n = 2000;
	if (lev_scripttool_parse(tool_src, strlen(tool_src), "bench/echo.lua", &st, &err) < 0) {
		fprintf(stderr, "bench-script: %s\n", err.msg);
		return 1;
	}
	/* warm up: page in the code and the allocator's arenas */
	(void)round_bare(n / 10 + 1);
	(void)round_box(n / 10 + 1);
	(void)round_call(n / 10 + 1, &st, args);
	for (int r = 0; r < ROUNDS; r++) {
		bare[r] = round_bare(n);
		box[r] = round_box(n);
		call[r] = round_call(n, &st, args);
	}
	bench_sort(bare, (size_t)ROUNDS);
	bench_sort(box, (size_t)ROUNDS);
	bench_sort(call, (size_t)ROUNDS);
	printf("bench-script: %d calls x %d rounds, median us per call (fastest round)\n", n,
	       ROUNDS);
	printf("  bare luaL_newstate+lua_close  %8.2f  (%.2f)\n", bare[ROUNDS / 2], bare[0]);
	printf("  hardened state (luabox)       %8.2f  (%.2f)\n", box[ROUNDS / 2], box[0]);
	printf("  script tool start-up + call   %8.2f  (%.2f)\n", call[ROUNDS / 2], call[0]);
	printf("  over the bare state           %8.2f\n", call[ROUNDS / 2] - bare[ROUNDS / 2]);
	lev_scripttool_release(&st);
	json_decref(args);
	return 0;
}
