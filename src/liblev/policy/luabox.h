/*
 * luabox.h - a hardened Lua 5.4 state: the one sandbox both the gate rules
 * (rules.h) and the script tools (tools/script.h) run in.  Each user owns
 * its own box; no state is ever shared between them.
 *
 * What a box gives a chunk (its "safe table", the __index of every
 * environment the user builds):
 *   - only the base, string, table and math libraries, without print, warn,
 *     load, loadfile, dofile, require, collectgarbage, rawset and
 *     string.dump; no io, os, debug, package or coroutine; xpcall calls its
 *     handler after unwinding (a message handler would run with the count
 *     hook disabled); setmetatable refuses __gc (a finalizer would run
 *     outside any budget);
 *   - library tables and the string metatable are read-only proxies;
 *   - chunks are loaded as text only (binary chunks are refused);
 *   - an instruction budget (count hook) and a wall-clock deadline, with C
 *     library calls charged by the size of their work (string.rep, pattern
 *     matching, table.move, ...) so a single call cannot outrun the budget;
 *     patterns whose worst case is too expensive for their subject are
 *     refused; once the budget is spent every instruction raises, so a
 *     chunk cannot pcall its way past it;
 *   - a memory cap enforced by the allocator.
 *
 * Cheap to build, for a fresh state per script call: string, table and math
 * are opened on first use (the safe table's __index; a string's methods
 * and arithmetic go through a metatable that opens the string library
 * first), and the allocator serves a small state from a 128 KiB arena
 * allocated once per box (bump allocation, malloc past it).
 *
 * The struct is public so its two users can read the evaluation's state
 * (over, timed_out, mem_hit); only luabox.c writes it.  Every call into Lua
 * that can allocate must run under lua_pcall.
 */
#pragma once

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "liblev/base/error.h"

struct json_t;

struct lev_luabox_limits {
	uint64_t instructions;	/* per evaluation */
	uint64_t wall_ns;	/* per evaluation */
	size_t memory;		/* for the whole Lua state, bytes */
};

struct lev_luabox {
	lua_State *L;
	struct lev_luabox_limits lim;
	const char *who;	/* "rule", "script": in the messages a chunk sees */

	/* allocator */
	size_t mem_used;
	bool mem_hit;
	char *arena;		/* luabox.c's: the block small states live in */
	size_t arena_used;
	char *arena_last;

	/* the evaluation in progress */
	uint64_t used;
	uint64_t deadline;	/* lev_monotonic_ns() */
	bool over;		/* budget or deadline exhausted */
	bool timed_out;

	int safe_ref;		/* registry: the safe table */
	void *user;		/* for the box's user (host functions) */
};

/*
 * Build the state and its safe table.  LIM's fields must be set (no
 * defaults here); WHO is a static string.  Aborts only when memory runs out
 * before any input was read.  B must not move afterwards (the state points
 * back at it).
 */
void lev_luabox_init(struct lev_luabox *b, const struct lev_luabox_limits *lim, const char *who);
void lev_luabox_release(struct lev_luabox *b);

/* The box a state belongs to. */
struct lev_luabox *lev_luabox_of(lua_State *L);

/* Start an evaluation: a fresh budget and deadline. */
void lev_luabox_start(struct lev_luabox *b);
/* Put the count hook on (before a pcall of untrusted code) or off (after it). */
void lev_luabox_arm(struct lev_luabox *b);
void lev_luabox_disarm(struct lev_luabox *b);
/* Move the deadline NS later (the time a host function spent waiting is not the chunk's). */
void lev_luabox_extend(struct lev_luabox *b, uint64_t ns);

/*
 * Compile LEN bytes of Lua text (never bytecode) named CHUNKNAME ("=file")
 * and keep it as a registry reference in *ref.  A syntax error, a binary
 * chunk or the memory cap fails with LEV_EPARSE.
 */
int lev_luabox_load(struct lev_luabox *b, const char *src, size_t len, const char *chunkname,
		    int *ref, struct lev_err *err);

/* A bounded (200 bytes), printable copy of the error at IDX (caller frees). */
char *lev_luabox_msg(lua_State *L, int idx);

/* Replace the table at the top of the stack by a read-only proxy of it. */
void lev_luabox_ro_proxy(lua_State *L);

/*
 * Push J (NULL: an empty table) as a Lua value, protected: objects and
 * arrays become tables (read-only proxies when RO), at most 10,000 values
 * 32 deep.  False (nothing pushed, *msg set, caller frees) when it does not
 * fit.
 */
bool lev_luabox_push_json(struct lev_luabox *b, const struct json_t *j, bool ro, char **msg);
