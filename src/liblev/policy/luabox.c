/*
 * luabox.c - a hardened Lua 5.4 state.  See luabox.h for the contract.
 *
 * The count hook and the charged library wrappers share one budget per
 * evaluation; once it is spent the hook fires on every instruction and keeps
 * raising, so a chunk cannot pcall its way past the limit.
 */
#include <errno.h>
#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/policy/luabox.h"

#define HOOK_STEP 1000
/* The allocator's arena: a script tool's fresh state fits in it. */
#define ARENA_SIZE ((size_t)128 << 10)
#define ARENA_ALIGN 16
#define ARGS_NODES_MAX 10000
#define ARGS_DEPTH_MAX 32
#define MSG_MAX 200
/* Worst-case steps a pattern may need for its subject, and the charge rate. */
#define PATTERN_COST_MAX 2e7
#define PATTERN_COST_DIV 32
/* Bytes of string or table work per charged instruction. */
#define BYTES_PER_INSN 16

struct lev_luabox *lev_luabox_of(lua_State *L)
{
	return *(struct lev_luabox **)lua_getextraspace(L);
}

/* ---- limits ---- */

/*
 * The allocator: blocks come from the box's arena (one malloc'd block,
 * bump-allocated; a freed block is given back only when it was the last)
 * until it is used up, then from malloc.  A fresh state for one script call
 * lives in the arena and is dropped with it; the cap counts live bytes.
 */
static bool in_arena(const struct lev_luabox *r, const void *p)
{
	return (const char *)p >= r->arena && (const char *)p < r->arena + ARENA_SIZE;
}

static void *arena_take(struct lev_luabox *r, size_t n)
{
	size_t need = (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
	char *p;

	if (ARENA_SIZE - r->arena_used < need)
		return malloc(n);
	p = r->arena + r->arena_used;
	r->arena_used += need;
	r->arena_last = p;
	return p;
}

/* Resize the arena block PTR (OLD bytes) to N bytes. */
static void *arena_resize(struct lev_luabox *r, char *ptr, size_t old, size_t n)
{
	size_t off = (size_t)(ptr - r->arena);
	size_t need = (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
	void *p;

	if (ptr == r->arena_last && off + need <= ARENA_SIZE) {
		r->arena_used = off + need;
		return ptr;
	}
	if (n <= old)
		return ptr;
	p = arena_take(r, n);
	if (p)
		memcpy(p, ptr, old);
	return p;
}

static void *box_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct lev_luabox *r = ud;
	size_t old = ptr ? osize : 0;
	void *p;

	if (nsize == 0) {
		if (ptr && !in_arena(r, ptr)) {
			free(ptr);
		} else if (ptr && ptr == r->arena_last) {
			r->arena_used = (size_t)((char *)ptr - r->arena);
			r->arena_last = NULL;
		}
		r->mem_used -= old;
		return NULL;
	}
	if (nsize > old && r->mem_used - old + nsize > r->lim.memory) {
		r->mem_hit = true;
		return NULL;
	}
	if (!ptr)
		p = arena_take(r, nsize);
	else if (in_arena(r, ptr))
		p = arena_resize(r, ptr, old, nsize);
	else
		p = realloc(ptr, nsize);
	if (!p)
		return NULL;
	r->mem_used = r->mem_used - old + nsize;
	return p;
}

static bool past_deadline(const struct lev_luabox *r)
{
	return lev_monotonic_ns() >= r->deadline;
}

static void hook(lua_State *L, lua_Debug *ar);

static int exhausted(lua_State *L, struct lev_luabox *r)
{
	r->over = true;
	/* from now on every instruction raises, so pcall inside the rule cannot hold on */
	lua_sethook(L, hook, LUA_MASKCOUNT, 1);
	return luaL_error(L, r->timed_out ? "%s ran past its deadline"
					  : "%s ran past its instruction budget", r->who);
}

static void hook(lua_State *L, lua_Debug *ar)
{
	struct lev_luabox *r = lev_luabox_of(L);

	(void)ar;
	if (r->over)
		(void)exhausted(L, r);
	r->used += HOOK_STEP;
	if (r->used > r->lim.instructions)
		(void)exhausted(L, r);
	if (past_deadline(r)) {
		r->timed_out = true;
		(void)exhausted(L, r);
	}
}

static void charge(lua_State *L, double cost)
{
	struct lev_luabox *r = lev_luabox_of(L);

	if (cost < 1)
		cost = 1;
	if (r->over || cost > (double)r->lim.instructions ||
	    r->used + (uint64_t)cost > r->lim.instructions)
		(void)exhausted(L, r);
	r->used += (uint64_t)cost;
	if (past_deadline(r)) {
		r->timed_out = true;
		(void)exhausted(L, r);
	}
}

/* ---- charged library functions ---- */

enum charge_kind {
	CH_GENERIC,
	CH_REP,
	CH_FIND,	/* find: the 4th argument may ask for a plain search */
	CH_PATTERN,	/* match, gmatch, gsub */
	CH_MOVE,
};

/* Index just past the character class starting with '[' at P[I]. */
static size_t skip_set(const char *p, size_t lp, size_t i)
{
	size_t j = i + 1;

	if (j < lp && p[j] == '^')
		j++;
	do {
		if (j >= lp)
			return lp;
		if (p[j++] == '%')
			j++;
	} while (j < lp && p[j] != ']');
	return j + 1;
}

/*
 * Worst-case steps of Lua's backtracking matcher for pattern P on a
 * subject of LS bytes: every repetition (* + -), balance (%b) or back
 * reference multiplies by the subject length, every '?' by two, and an
 * unanchored search tries every start position.
 */
static double pattern_cost(const char *p, size_t lp, size_t ls)
{
	double n = (double)ls + 1, per = 1;
	bool anchored = false;
	size_t i = 0;

	if (lp > 0 && p[0] == '^') {
		anchored = true;
		i = 1;
	}
	while (i < lp) {
		size_t end;

		if (p[i] == '(' || p[i] == ')') {
			i++;
			continue;
		}
		if (p[i] == '%') {
			char d = i + 1 < lp ? p[i + 1] : '\0';

			if (d == 'b') {
				per *= n;
				i += 4;
				continue;
			}
			if (d == 'f') {
				i = skip_set(p, lp, i + 2);
				continue;
			}
			if (d >= '0' && d <= '9') {
				per *= n;
				i += 2;
				continue;
			}
			end = i + 2;
		} else if (p[i] == '[') {
			end = skip_set(p, lp, i);
		} else {
			end = i + 1;
		}
		if (end < lp) {
			if (p[end] == '*' || p[end] == '+' || p[end] == '-') {
				per *= n;
				end++;
			} else if (p[end] == '?') {
				per *= 2;
				end++;
			}
		}
		i = end;
		if (per > 1e30)
			per = 1e30;
	}
	return anchored ? per : per * n;
}

static bool has_specials(const char *p, size_t lp)
{
	size_t i;

	for (i = 0; i < lp; i++)
		if (strchr("^$*+?.([%-", p[i]))
			return true;
	return false;
}

static int charged_call(lua_State *L)
{
	enum charge_kind kind = (enum charge_kind)lua_tointeger(L, lua_upvalueindex(2));
	int n = lua_gettop(L), i;
	double cost = 1;

	switch (kind) {
	case CH_GENERIC:
		for (i = 1; i <= n; i++) {
			if (lua_type(L, i) == LUA_TSTRING)
				cost += (double)lua_rawlen(L, i) / BYTES_PER_INSN;
			else if (lua_type(L, i) == LUA_TTABLE)
				cost += (double)lua_rawlen(L, i);
		}
		break;
	case CH_REP: {
		lua_Integer count = luaL_checkinteger(L, 2);
		size_t l = 0, lsep = 0;

		luaL_checklstring(L, 1, &l);
		luaL_optlstring(L, 3, "", &lsep);
		if (count <= 0)
			break;
		if (l + lsep == 0) {
			/* nothing to allocate, but string.rep still loops COUNT times */
			cost = (double)count;
		} else {
			/*
			 * The result is allocated before the copying loop, so the
			 * work is bounded by the memory cap: a bomb hits the cap.
			 */
			double total = (double)count * (double)(l + lsep);
			double cap = (double)lev_luabox_of(L)->lim.memory;

			cost = (total < cap ? total : cap) / 64;
		}
		break;
	}
	case CH_FIND:
	case CH_PATTERN: {
		size_t ls = 0, lp = 0;
		const char *p;
		double c;

		luaL_checklstring(L, 1, &ls);
		p = luaL_checklstring(L, 2, &lp);
		if ((kind == CH_FIND && lua_toboolean(L, 4)) || !has_specials(p, lp)) {
			cost = (double)(ls + lp) / BYTES_PER_INSN;
			break;
		}
		c = pattern_cost(p, lp, ls);
		if (c > PATTERN_COST_MAX)
			return luaL_error(L, "pattern is too expensive for a %d-byte subject "
					  "(anchor it, shorten the subject or search plainly)",
					  (int)(ls > 0x7fffffff ? 0x7fffffff : ls));
		cost = c / PATTERN_COST_DIV + (double)ls / BYTES_PER_INSN;
		break;
	}
	case CH_MOVE: {
		lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3);

		if (e >= f)
			cost = (double)e - (double)f + 1;
		break;
	}
	}
	charge(L, cost);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, n, LUA_MULTRET);
	return lua_gettop(L);
}

/* ---- read-only proxies ---- */

static int ro_newindex(lua_State *L)
{
	return luaL_error(L, "attempt to modify a read-only table");
}

static int ro_next(lua_State *L)
{
	lua_settop(L, 2);
	if (lua_next(L, lua_upvalueindex(1)))
		return 2;
	lua_pushnil(L);
	return 1;
}

static int ro_pairs(lua_State *L)
{
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_pushcclosure(L, ro_next, 1);
	lua_pushvalue(L, 1);
	lua_pushnil(L);
	return 3;
}

static int ro_len(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)lua_rawlen(L, lua_upvalueindex(1)));
	return 1;
}

void lev_luabox_ro_proxy(lua_State *L)
{
	int t = lua_gettop(L);

	lua_createtable(L, 0, 0);
	lua_createtable(L, 0, 5);
	lua_pushvalue(L, t);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, ro_newindex);
	lua_setfield(L, -2, "__newindex");
	lua_pushvalue(L, t);
	lua_pushcclosure(L, ro_pairs, 1);
	lua_setfield(L, -2, "__pairs");
	lua_pushvalue(L, t);
	lua_pushcclosure(L, ro_len, 1);
	lua_setfield(L, -2, "__len");
	lua_pushboolean(L, 0);
	lua_setfield(L, -2, "__metatable");
	lua_setmetatable(L, -2);
	lua_replace(L, t);
}

/* setmetatable that refuses finalizers (they would run outside any budget). */
static int safe_setmetatable(lua_State *L)
{
	if (lua_type(L, 2) == LUA_TTABLE) {
		lua_pushliteral(L, "__gc");
		if (lua_rawget(L, 2) != LUA_TNIL)
			return luaL_error(L, "%ss may not set __gc metamethods",
					  lev_luabox_of(L)->who);
		lua_pop(L, 1);
	}
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, 1);
	return 1;
}

/*
 * xpcall without a message handler.  Lua runs a message handler before
 * unwinding, and an error raised by the count hook leaves hooks disabled
 * until the nearest protected call returns, so a handler that loops would
 * never be stopped.  Here the handler is called after the protected call
 * has returned, with hooks back on: it cannot see the traceback, which a
 * rule has no use for.
 */
static int safe_xpcall(lua_State *L)
{
	int n = lua_gettop(L), st;

	luaL_checktype(L, 2, LUA_TFUNCTION);
	lua_pushvalue(L, 1);
	lua_rotate(L, 3, 1);		/* f, h, f, args... */
	st = lua_pcall(L, n - 2, LUA_MULTRET, 0);
	if (st == LUA_OK) {
		lua_pushboolean(L, 1);
		lua_replace(L, 2);	/* f, true, results... */
		return lua_gettop(L) - 1;
	}
	if (lev_luabox_of(L)->over)
		return lua_error(L);
	lua_pushvalue(L, 2);
	lua_insert(L, -2);
	lua_call(L, 1, 1);
	lua_pushboolean(L, 0);
	lua_insert(L, -2);
	return 2;
}
/* ---- state setup ---- */

static const char *const safe_base[] = {
	"assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "rawequal",
	"rawget", "rawlen", "select", "tonumber", "tostring", "type", NULL,
};

static const char *const unsafe_base[] = {
	"collectgarbage", "dofile", "load", "loadfile", "print", "rawset", "require", "warn",
	NULL,
};

struct libspec {
	const char *fn;
	enum charge_kind kind;
};

static enum charge_kind kind_of(const char *lib, const char *fn)
{
	if (!strcmp(lib, "string")) {
		if (!strcmp(fn, "rep"))
			return CH_REP;
		if (!strcmp(fn, "find"))
			return CH_FIND;
		if (!strcmp(fn, "match") || !strcmp(fn, "gmatch") || !strcmp(fn, "gsub"))
			return CH_PATTERN;
	}
	if (!strcmp(lib, "table") && !strcmp(fn, "move"))
		return CH_MOVE;
	return CH_GENERIC;
}

/*
 * Replace library LIB (the table at the top of the stack) by a copy that
 * leaves out "dump" and wraps functions in charged calls when CHARGED.
 */
static void push_filtered_lib(lua_State *L, const char *lib, bool charged)
{
	int src, dst;

	src = lua_gettop(L);
	lua_newtable(L);
	dst = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, src)) {
		const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;

		if (!k || !strcmp(k, "dump")) {
			lua_pop(L, 1);
			continue;
		}
		if (charged && lua_type(L, -1) == LUA_TFUNCTION) {
			lua_pushinteger(L, kind_of(lib, k));
			lua_pushcclosure(L, charged_call, 2);
		}
		lua_setfield(L, dst, k);
	}
	lua_remove(L, src);
}

/*
 * The libraries are opened on first use: a chunk that touches none of them
 * (a script tool's `return params.x`) does not pay for them.  The safe
 * table's __index opens one when its name is looked up; strings get a
 * metatable whose __index and arithmetic open the string library first
 * (Lua 5.4 coerces strings in arithmetic through that library's
 * metamethods), then answer as the library would.
 */
static const struct {
	const char *name;
	lua_CFunction open;
	bool charged;
} lazy_libs[] = {
	{ LUA_STRLIBNAME, luaopen_string, true },
	{ LUA_TABLIBNAME, luaopen_table, true },
	{ LUA_MATHLIBNAME, luaopen_math, false },
};

static const struct {
	const char *event;
	int op;
} string_arith[] = {
	{ "__add", LUA_OPADD }, { "__sub", LUA_OPSUB }, { "__mul", LUA_OPMUL },
	{ "__div", LUA_OPDIV }, { "__mod", LUA_OPMOD }, { "__pow", LUA_OPPOW },
	{ "__unm", LUA_OPUNM }, { "__idiv", LUA_OPIDIV },
};

/* Open library I into the safe table SAFE (filtered, charged, read-only) and push it. */
static void open_lib(lua_State *L, int safe, size_t i)
{
	luaL_requiref(L, lazy_libs[i].name, lazy_libs[i].open, 0);
	push_filtered_lib(L, lazy_libs[i].name, lazy_libs[i].charged);
	lev_luabox_ro_proxy(L);
	if (lazy_libs[i].open == luaopen_string) {
		/* the string metatable the library set: methods through the proxy, hidden */
		lua_pushliteral(L, "");
		if (lua_getmetatable(L, -1)) {
			lua_pushvalue(L, -3);
			lua_setfield(L, -2, "__index");
			lua_pushboolean(L, 0);
			lua_setfield(L, -2, "__metatable");
			lua_pop(L, 1);
		}
		lua_pop(L, 1);
	}
	lua_pushstring(L, lazy_libs[i].name);
	lua_pushvalue(L, -2);
	lua_rawset(L, safe);
}

/* The safe table's __index (safe, key): a library on first use, else nil. */
static int lazy_index(lua_State *L)
{
	const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;

	for (size_t i = 0; k && i < ARRAY_SIZE(lazy_libs); i++)
		if (!strcmp(k, lazy_libs[i].name)) {
			open_lib(L, 1, i);
			return 1;
		}
	lua_pushnil(L);
	return 1;
}

/* Strings before the string library is open: (s, key) -> string[key]; upvalue: safe. */
static int lazy_string_index(lua_State *L)
{
	lua_getfield(L, lua_upvalueindex(1), LUA_STRLIBNAME);
	lua_pushvalue(L, 2);
	lua_gettable(L, -2);
	return 1;
}

/* ... and arithmetic on them: open the library, then do it (its metamethods coerce). */
static int lazy_string_arith(lua_State *L)
{
	int op = (int)lua_tointeger(L, lua_upvalueindex(2));

	lua_getfield(L, lua_upvalueindex(1), LUA_STRLIBNAME);
	lua_pop(L, 1);
	lua_settop(L, 2);
	if (op == LUA_OPUNM)
		lua_pop(L, 1);
	lua_arith(L, op);
	return 1;
}

static void lazy_string_metatable(lua_State *L, int safe)
{
	lua_pushliteral(L, "");
	lua_createtable(L, 0, (int)ARRAY_SIZE(string_arith) + 2);
	lua_pushvalue(L, safe);
	lua_pushcclosure(L, lazy_string_index, 1);
	lua_setfield(L, -2, "__index");
	for (size_t i = 0; i < ARRAY_SIZE(string_arith); i++) {
		lua_pushvalue(L, safe);
		lua_pushinteger(L, string_arith[i].op);
		lua_pushcclosure(L, lazy_string_arith, 2);
		lua_setfield(L, -2, string_arith[i].event);
	}
	lua_pushboolean(L, 0);
	lua_setfield(L, -2, "__metatable");
	lua_setmetatable(L, -2);
	lua_pop(L, 1);
}

/* Open the base library and build the safe table; returns its registry reference. */
static int setup_state(lua_State *L)
{
	const char *const *n;
	int safe;

	luaL_requiref(L, "_G", luaopen_base, 1);
	lua_settop(L, 0);

	lua_newtable(L);
	safe = lua_gettop(L);
	for (n = safe_base; *n; n++) {
		lua_getglobal(L, *n);
		lua_setfield(L, safe, *n);
	}
	lua_getglobal(L, "setmetatable");
	lua_pushcclosure(L, safe_setmetatable, 1);
	lua_setfield(L, safe, "setmetatable");
	lua_pushcfunction(L, safe_xpcall);
	lua_setfield(L, safe, "xpcall");
	lua_pushliteral(L, LUA_VERSION);
	lua_setfield(L, safe, "_VERSION");
	/* string, table and math: on first use */
	lua_createtable(L, 0, 1);
	lua_pushcfunction(L, lazy_index);
	lua_setfield(L, -2, "__index");
	lua_setmetatable(L, safe);
	lazy_string_metatable(L, safe);

	/* nothing should reach the real globals, but leave nothing there to find */
	for (n = unsafe_base; *n; n++) {
		lua_pushnil(L);
		lua_setglobal(L, *n);
	}
	lua_pushinteger(L, luaL_ref(L, LUA_REGISTRYINDEX));
	return 1;
}

/* ---- loading ---- */

struct load_req {
	const char *src;
	size_t len;
	const char *chunkname;
	int ref;
};

static int load_chunk(lua_State *L)
{
	struct load_req *q = lua_touserdata(L, 1);

	if (luaL_loadbufferx(L, q->src, q->len, q->chunkname, "t") != LUA_OK)
		return lua_error(L);
	q->ref = luaL_ref(L, LUA_REGISTRYINDEX);
	return 0;
}

char *lev_luabox_msg(lua_State *L, int idx)
{
	size_t len = 0, i;
	const char *s;
	char *m;

	if (lua_type(L, idx) != LUA_TSTRING)
		return xasprintf("error object is a %s value", luaL_typename(L, idx));
	s = lua_tolstring(L, idx, &len);
	if (len > MSG_MAX)
		len = MSG_MAX;
	m = xstrndup(s, len);
	for (i = 0; m[i]; i++)
		if ((unsigned char)m[i] < 0x20 || (unsigned char)m[i] == 0x7f)
			m[i] = ' ';
	return m;
}

/* ---- values ---- */

struct args_req {
	const json_t *args;
	bool ro;
	size_t nodes;
	bool too_big;
};

static void push_json(lua_State *L, const json_t *j, int depth, struct args_req *q)
{
	if (++q->nodes > ARGS_NODES_MAX || depth > ARGS_DEPTH_MAX || !lua_checkstack(L, 4)) {
		q->too_big = true;
		lua_pushnil(L);
		return;
	}
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		const char *k;
		json_t *v;

		size_t n = json_object_size(j);

		lua_createtable(L, 0, (int)(n > 1024 ? 1024 : n));
		json_object_foreach((json_t *)j, k, v) {
			lua_pushstring(L, k);
			push_json(L, v, depth + 1, q);
			lua_rawset(L, -3);
		}
		if (q->ro)
			lev_luabox_ro_proxy(L);
		break;
	}
	case JSON_ARRAY: {
		size_t i, n = json_array_size(j);

		lua_createtable(L, (int)(n > 1024 ? 1024 : n), 0);
		for (i = 0; i < n; i++) {
			push_json(L, json_array_get(j, i), depth + 1, q);
			lua_rawseti(L, -2, (lua_Integer)i + 1);
		}
		if (q->ro)
			lev_luabox_ro_proxy(L);
		break;
	}
	case JSON_STRING:
		lua_pushlstring(L, json_string_value(j), json_string_length(j));
		break;
	case JSON_INTEGER:
		lua_pushinteger(L, (lua_Integer)json_integer_value(j));
		break;
	case JSON_REAL:
		lua_pushnumber(L, json_real_value(j));
		break;
	case JSON_TRUE:
		lua_pushboolean(L, 1);
		break;
	case JSON_FALSE:
		lua_pushboolean(L, 0);
		break;
	case JSON_NULL:
	default:
		lua_pushnil(L);
		break;
	}
}

static int build_args(lua_State *L)
{
	struct args_req *q = lua_touserdata(L, 1);

	if (q->args) {
		push_json(L, q->args, 0, q);
	} else {
		lua_newtable(L);
		if (q->ro)
			lev_luabox_ro_proxy(L);
	}
	return 1;
}

bool lev_luabox_push_json(struct lev_luabox *b, const struct json_t *j, bool ro, char **msg)
{
	struct args_req q = { j, ro, 0, false };
	int st;

	b->mem_hit = false;
	lua_pushcfunction(b->L, build_args);
	lua_pushlightuserdata(b->L, &q);
	st = lua_pcall(b->L, 1, 1, 0);
	if (st != LUA_OK || q.too_big) {
		lua_pop(b->L, 1);
		*msg = q.too_big ? xasprintf("arguments are larger than %ss accept (%d values, "
					     "depth %d)", b->who, ARGS_NODES_MAX, ARGS_DEPTH_MAX)
				 : xasprintf("arguments do not fit in the %ss' memory cap", b->who);
		return false;
	}
	return true;
}

/* ---- the box ---- */

void lev_luabox_init(struct lev_luabox *b, const struct lev_luabox_limits *lim, const char *who)
{
	memset(b, 0, sizeof(*b));
	b->lim = *lim;
	b->who = who;
	b->safe_ref = LUA_NOREF;
	b->arena = xmalloc(ARENA_SIZE);
	b->L = lua_newstate(box_alloc, b);
	if (!b->L)
		abort();	/* out of memory before any input was read */
	*(struct lev_luabox **)lua_getextraspace(b->L) = b;
	lua_pushcfunction(b->L, setup_state);
	if (lua_pcall(b->L, 0, 1, 0) != LUA_OK)
		abort();	/* a fresh state fits far below any sane cap */
	b->safe_ref = (int)lua_tointeger(b->L, -1);
	lua_settop(b->L, 0);
}

void lev_luabox_release(struct lev_luabox *b)
{
	if (b->L)
		lua_close(b->L);
	b->L = NULL;
	free(b->arena);
	b->arena = NULL;
}

void lev_luabox_start(struct lev_luabox *b)
{
	b->deadline = lev_monotonic_ns() + b->lim.wall_ns;
	b->used = 0;
	b->over = false;
	b->timed_out = false;
	b->mem_hit = false;
}

void lev_luabox_extend(struct lev_luabox *b, uint64_t ns)
{
	b->deadline += ns;
}

void lev_luabox_arm(struct lev_luabox *b)
{
	lua_sethook(b->L, hook, LUA_MASKCOUNT, HOOK_STEP);
}

void lev_luabox_disarm(struct lev_luabox *b)
{
	lua_sethook(b->L, NULL, 0, 0);
}

int lev_luabox_load(struct lev_luabox *b, const char *src, size_t len, const char *chunkname,
		    int *ref, struct lev_err *err)
{
	struct load_req q = { src, len, chunkname, LUA_NOREF };
	int top = lua_gettop(b->L), st;

	b->mem_hit = false;
	lua_pushcfunction(b->L, load_chunk);
	lua_pushlightuserdata(b->L, &q);
	st = lua_pcall(b->L, 1, 0, 0);
	if (st != LUA_OK) {
		_cleanup_free_ char *m = st == LUA_ERRMEM || b->mem_hit
						 ? xstrdup("out of memory while compiling")
						 : lev_luabox_msg(b->L, -1);

		lua_settop(b->L, top);
		return lev_err_set(err, LEV_EPARSE, "%s", m);
	}
	lua_settop(b->L, top);
	*ref = q.ref;
	return 0;
}
