/*
 * script.h - running a Lua script tool (a blueprint's tools/NAME.lua,
 * conf/scripttool.h) for one call.  docs/script-tools.md is the user's side.
 *
 * Every call gets a fresh hardened state (policy/luabox.h: the rules'
 * hardening, never the rules' state): base, string, table and math only,
 * text chunks only, an instruction budget, a wall-clock deadline (time spent
 * in host functions does not count) and a memory cap.  The chunk sees:
 *
 *	params			the call's arguments (a table)
 *	read_file(path)		the file tools, through the host: every gate,
 *	write_file(path, text)	the workdir confinement
 *	shell(cmd)		with -- @requires shell
 *	http_get(url)		with -- @requires network
 *	http_post(url, body)	with -- @requires network
 *
 * Each host function is one call of the built-in tool (read_file,
 * write_file, shell, web_fetch, http_post) that the host decides through
 * the run's gate chain like a model's call; a refused or failed call raises
 * a Lua error carrying the tool's result text (catch it with pcall).  A
 * function the header did not ask for raises an error saying so.
 *
 * The chunk's return value is the result: a string as it is, a table as
 * JSON (objects with string keys, arrays for sequences), nil as "", a
 * number or boolean as its JSON text, cut at the result cap.  An error, the
 * budget, the deadline or the memory cap fails this call only, with an
 * "[error] ..." result.
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "liblev/base/tooltable.h"
#include "liblev/conf/scripttool.h"
#include "liblev/tools/tools.h"

#define LEV_SCRIPT_DEFAULT_INSTRUCTIONS 10000000ULL
#define LEV_SCRIPT_DEFAULT_WALL_NS (10ULL * 1000 * 1000 * 1000)
#define LEV_SCRIPT_DEFAULT_MEMORY ((size_t)64 << 20)
#define LEV_SCRIPT_DEFAULT_RESULT_MAX ((size_t)1 << 20)

struct lev_script_limits {
	uint64_t instructions;	/* 0: the default */
	uint64_t wall_ns;	/* 0: the default; host functions' time not counted */
	size_t memory;		/* 0: the default */
	size_t result_max;	/* 0: the default */
};

/*
 * The run's side of the host functions: run the built-in tool OP with ARGS
 * (borrowed) as a call of the script tool's stage, through every gate, and
 * fill OUT.  Never NULL in a run; NULL (tests, the benchmark) refuses every
 * host function.
 */
struct lev_script_host {
	void (*call)(void *data, enum lev_tool_op op, const json_t *args,
		     struct lev_tool_output *out);
	void *data;
};

/* The tool's argument schema from its @param lines (a new reference). */
json_t *lev_script_schema(const struct lev_script_tool *st);

/*
 * Add the N script tools V to the registry TOOLS: run-time entries like an
 * MCP tool's (outbound, results private, touching what the header asks
 * for).  The run and `lev check` both register them this way.
 */
int lev_script_tools_add(struct lev_tools *tools, const struct lev_script_tool *v, size_t n,
			 struct lev_err *err);

/* Run ST for one call with ARGS (an object, or NULL); the result goes to OUT. */
void lev_script_run(const struct lev_script_tool *st, const json_t *args,
		    const struct lev_script_limits *lim, const struct lev_script_host *host,
		    struct lev_tool_output *out);
