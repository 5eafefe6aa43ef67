/*
 * rules.c - sandboxed Lua 5.4 gate rules.  See rules.h for the contract.
 *
 * Every call into Lua that can allocate runs under lua_pcall, so a memory
 * cap hit or an error never reaches the panic handler.  The count hook and
 * the charged library wrappers share one budget per evaluation; once it is
 * spent the hook fires on every instruction and keeps raising, so a rule
 * cannot pcall its way past the limit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/policy/policy.h"
#include "liblev/policy/rules.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define HOOK_STEP 1000
#define ARGS_NODES_MAX 10000
#define ARGS_DEPTH_MAX 32
#define MSG_MAX 200
/* Worst-case steps a pattern may need for its subject, and the charge rate. */
#define PATTERN_COST_MAX 2e7
#define PATTERN_COST_DIV 32
/* Bytes of string or table work per charged instruction. */
#define BYTES_PER_INSN 16

struct rule {
	char *name;
	char *file;
	int ref;		/* registry reference to the compiled chunk */
};

struct watched {
	char *name;
	struct lev_file_stamp stamp;
};

struct lev_rules {
	lua_State *L;
	struct lev_rules_limits lim;

	/* allocator */
	size_t mem_used;
	bool mem_hit;

	/* the evaluation in progress */
	uint64_t used;
	struct timespec deadline;
	bool over;		/* budget or deadline exhausted */
	bool timed_out;

	int safe_ref;		/* registry: the table behind every environment */
	struct rule *rules;
	size_t n_rules;

	char *dir;
	struct lev_file_stamp dir_stamp;
	struct watched *watched;
	size_t n_watched;
	char **load_errors;
};

static const char *const outcome_names[] = {
	"false", "true", "error", "budget", "memory", "not-boolean", "bad-args",
};

const char *lev_rule_outcome_name(enum lev_rule_outcome o)
{
	return (size_t)o < ARRAY_SIZE(outcome_names) ? outcome_names[o] : "error";
}

static struct lev_rules *rules_of(lua_State *L)
{
	return *(struct lev_rules **)lua_getextraspace(L);
}

/* ---- limits ---- */

static void *rules_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct lev_rules *r = ud;
	size_t old = ptr ? osize : 0;
	void *p;

	if (nsize == 0) {
		free(ptr);
		r->mem_used -= old;
		return NULL;
	}
	if (nsize > old && r->mem_used - old + nsize > r->lim.memory) {
		r->mem_hit = true;
		return NULL;
	}
	p = realloc(ptr, nsize);
	if (!p)
		return NULL;
	r->mem_used = r->mem_used - old + nsize;
	return p;
}

static bool past_deadline(const struct lev_rules *r)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > r->deadline.tv_sec ||
	       (now.tv_sec == r->deadline.tv_sec && now.tv_nsec >= r->deadline.tv_nsec);
}

static void hook(lua_State *L, lua_Debug *ar);

static int exhausted(lua_State *L, struct lev_rules *r)
{
	r->over = true;
	/* from now on every instruction raises, so pcall inside the rule cannot hold on */
	lua_sethook(L, hook, LUA_MASKCOUNT, 1);
	return luaL_error(L, r->timed_out ? "rule ran past its deadline"
					  : "rule ran past its instruction budget");
}

static void hook(lua_State *L, lua_Debug *ar)
{
	struct lev_rules *r = rules_of(L);

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
	struct lev_rules *r = rules_of(L);

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
			double cap = (double)rules_of(L)->lim.memory;

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

static int env_newindex(lua_State *L)
{
	const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?";

	return luaL_error(L, "rules may not set globals (tried '%s'); use local variables", k);
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

/* Replace the table at the top of the stack by a read-only proxy of it. */
static void make_ro_proxy(lua_State *L)
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
			return luaL_error(L, "rules may not set __gc metamethods");
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
	if (rules_of(L)->over)
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
 * Copy library LIB (a global) into a new table at the top of the stack,
 * leaving out "dump" and wrapping functions in charged calls when CHARGED.
 */
static void push_filtered_lib(lua_State *L, const char *lib, bool charged)
{
	int src, dst;

	lua_getglobal(L, lib);
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

static int setup_state(lua_State *L)
{
	const char *const *n;
	int safe;

	luaL_requiref(L, "_G", luaopen_base, 1);
	luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
	luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
	luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
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

	push_filtered_lib(L, "string", true);
	make_ro_proxy(L);
	/* the string metatable: methods through the proxy, metatable hidden */
	lua_pushliteral(L, "");
	if (lua_getmetatable(L, -1)) {
		lua_pushvalue(L, -3);
		lua_setfield(L, -2, "__index");
		lua_pushboolean(L, 0);
		lua_setfield(L, -2, "__metatable");
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	lua_setfield(L, safe, "string");

	push_filtered_lib(L, "table", true);
	make_ro_proxy(L);
	lua_setfield(L, safe, "table");
	push_filtered_lib(L, "math", false);
	make_ro_proxy(L);
	lua_setfield(L, safe, "math");

	/* nothing should reach the real globals, but leave nothing there to find */
	for (n = unsafe_base; *n; n++) {
		lua_pushnil(L);
		lua_setglobal(L, *n);
	}
	lua_pushinteger(L, luaL_ref(L, LUA_REGISTRYINDEX));
	return 1;
}

struct lev_rules *lev_rules_new(const struct lev_rules_limits *limits)
{
	struct lev_rules *r = xcalloc(1, sizeof(*r));

	if (limits)
		r->lim = *limits;
	if (!r->lim.instructions)
		r->lim.instructions = LEV_RULES_DEFAULT_INSTRUCTIONS;
	if (!r->lim.wall_ns)
		r->lim.wall_ns = LEV_RULES_DEFAULT_WALL_NS;
	if (!r->lim.memory)
		r->lim.memory = LEV_RULES_DEFAULT_MEMORY;
	r->safe_ref = LUA_NOREF;
	r->L = lua_newstate(rules_alloc, r);
	if (!r->L)
		abort();	/* out of memory before any input was read */
	*(struct lev_rules **)lua_getextraspace(r->L) = r;
	lua_pushcfunction(r->L, setup_state);
	if (lua_pcall(r->L, 0, 1, 0) != LUA_OK)
		abort();	/* a fresh state fits far below any sane cap */
	r->safe_ref = (int)lua_tointeger(r->L, -1);
	lua_settop(r->L, 0);
	return r;
}

struct lev_rules *lev_rules_free(struct lev_rules *r)
{
	size_t i;

	if (!r)
		return NULL;
	if (r->L)
		lua_close(r->L);
	for (i = 0; i < r->n_rules; i++) {
		free(r->rules[i].name);
		free(r->rules[i].file);
	}
	for (i = 0; i < r->n_watched; i++)
		free(r->watched[i].name);
	free(r->rules);
	free(r->watched);
	free(r->dir);
	lev_strv_free(r->load_errors);
	free(r);
	return NULL;
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

/* A bounded, printable copy of the string at IDX (or a type description). */
static char *msg_at(lua_State *L, int idx)
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

static bool rule_name_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > LEV_RULES_NAME_MAX || s[0] == '.')
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

int lev_rules_add_source(struct lev_rules *r, const char *name, const char *file, const char *src,
			 size_t len, struct lev_err *err)
{
	_cleanup_free_ char *chunkname = NULL;
	struct load_req q = { src, len, NULL, LUA_NOREF };
	int st;

	if (!rule_name_ok(name))
		return lev_err_set(err, -EINVAL,
				   "invalid rule name '%s' (1 to %d bytes of [A-Za-z0-9._-])", name,
				   LEV_RULES_NAME_MAX);
	if (r->n_rules >= LEV_RULES_MAX)
		return lev_err_set(err, -E2BIG, "more than %d rules", LEV_RULES_MAX);
	if (len > LEV_RULES_FILE_MAX)
		return lev_err_set(err, -EFBIG, "rule '%s' is larger than %zu bytes", name,
				   LEV_RULES_FILE_MAX);
	/* messages name the file ("/.../rules/x.lua:3: ...") when there is one */
	chunkname = xasprintf("=%s", file && *file ? file : name);
	q.chunkname = chunkname;
	lua_settop(r->L, 0);
	r->mem_hit = false;
	lua_pushcfunction(r->L, load_chunk);
	lua_pushlightuserdata(r->L, &q);
	st = lua_pcall(r->L, 1, 0, 0);
	if (st != LUA_OK) {
		_cleanup_free_ char *m = st == LUA_ERRMEM || r->mem_hit
						 ? xstrdup("out of memory while compiling")
						 : msg_at(r->L, -1);

		lua_settop(r->L, 0);
		return lev_err_set(err, LEV_EPARSE, "%s", m);
	}
	lua_settop(r->L, 0);
	r->rules = xreallocarray(r->rules, r->n_rules + 1, sizeof(*r->rules));
	r->rules[r->n_rules].name = xstrdup(name);
	r->rules[r->n_rules].file = xstrdup(file ? file : "");
	r->rules[r->n_rules].ref = q.ref;
	r->n_rules++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void load_error(struct lev_rules *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void load_error(struct lev_rules *r, const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(1024);
	va_list ap;

	if (lev_strv_len(r->load_errors) >= 64)
		return;
	va_start(ap, fmt);
	(void)lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	r->load_errors = lev_strv_push_take(r->load_errors, lev_buf_detach(&b, NULL));
}

static void watch(struct lev_rules *r, const char *name, const struct stat *st)
{
	struct watched *w;

	r->watched = xreallocarray(r->watched, r->n_watched + 1, sizeof(*r->watched));
	w = &r->watched[r->n_watched++];
	w->name = xstrdup(name);
	memset(&w->stamp, 0, sizeof(w->stamp));
	if (st) {
		w->stamp.exists = true;
		w->stamp.dev = st->st_dev;
		w->stamp.ino = st->st_ino;
		w->stamp.size = st->st_size;
		w->stamp.mtime = st->st_mtim;
		w->stamp.ctime = st->st_ctim;
	}
}

static void load_one(struct lev_rules *r, int dfd, const char *dir, const char *fname)
{
	_cleanup_free_ char *path = lev_path_join(dir, fname);
	_cleanup_free_ char *stem = xstrndup(fname, strlen(fname) - 4);
	_cleanup_free_ char *src = NULL;
	_cleanup_close_ int fd = -1;
	struct lev_err e = LEV_ERR_INIT;
	struct stat st;
	size_t len = 0;

	fd = openat(dfd, fname, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		watch(r, fname, NULL);
		load_error(r, "%s: cannot open: %s", path, strerror(errno));
		return;
	}
	watch(r, fname, &st);
	if (!S_ISREG(st.st_mode)) {
		load_error(r, "%s: not a regular file", path);
		return;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		load_error(r, "%s: writable by group or others; skipped", path);
		return;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		load_error(r, "%s: owned by another user; skipped", path);
		return;
	}
	if (!rule_name_ok(stem)) {
		load_error(r, "%s: invalid rule name (1 to %d bytes of [A-Za-z0-9._-])", path,
			   LEV_RULES_NAME_MAX);
		return;
	}
	if (lev_read_fd(fd, path, LEV_RULES_FILE_MAX, &src, &len, &e) < 0) {
		load_error(r, "%s", e.msg);
		return;
	}
	if (lev_rules_add_source(r, stem, path, src, len, &e) < 0)
		load_error(r, "%s", e.msg);
}

int lev_rules_load_dir(const char *dir, const struct lev_rules_limits *limits,
		       struct lev_rules **out, struct lev_err *err)
{
	struct lev_rules *r;
	_cleanup_close_ int dfd = -1;
	char **names = NULL;
	struct stat st;
	DIR *d;
	struct dirent *de;
	size_t i, n;
	int fd2;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		if (errno != ENOENT)
			return lev_err_errno(err, -errno, "cannot open '%s'", dir);
		r = lev_rules_new(limits);
		r->dir = xstrdup(dir);
		*out = r;
		return 0;
	}
	if (fstat(dfd, &st) < 0)
		return lev_err_errno(err, -errno, "cannot stat '%s'", dir);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return lev_err_set(err, -EPERM,
				   "'%s' is writable by group or others; run 'chmod go-w %s'", dir, dir);
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return lev_err_set(err, -EPERM, "'%s' is owned by another user", dir);

	fd2 = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (fd2 < 0)
		return lev_err_errno(err, -errno, "cannot list '%s'", dir);
	d = fdopendir(fd2);
	if (!d) {
		close(fd2);
		return lev_err_errno(err, -errno, "cannot list '%s'", dir);
	}
	for (;;) {
		size_t l;

		de = readdir(d);
		if (!de)
			break;
		l = strlen(de->d_name);

		if (de->d_name[0] == '.' || l < 5 || strcmp(de->d_name + l - 4, ".lua") != 0)
			continue;
		if (lev_strv_len(names) >= 4 * LEV_RULES_MAX)
			break;
		names = lev_strv_push(names, de->d_name);
	}
	closedir(d);

	r = lev_rules_new(limits);
	r->dir = xstrdup(dir);
	r->dir_stamp.exists = true;
	r->dir_stamp.dev = st.st_dev;
	r->dir_stamp.ino = st.st_ino;
	r->dir_stamp.size = st.st_size;
	r->dir_stamp.mtime = st.st_mtim;
	r->dir_stamp.ctime = st.st_ctim;
	n = lev_strv_len(names);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		if (r->n_rules >= LEV_RULES_MAX) {
			load_error(r, "%s: more than %d rule files; the rest are ignored", dir,
				   LEV_RULES_MAX);
			break;
		}
		load_one(r, dfd, dir, names[i]);
	}
	lev_strv_free(names);
	*out = r;
	return 0;
}

bool lev_rules_changed(const struct lev_rules *r)
{
	struct lev_file_stamp now;
	size_t i;

	if (!r->dir)
		return false;
	if (lev_file_stamp_get(r->dir, &now) < 0 || !lev_file_stamp_equal(&now, &r->dir_stamp))
		return true;
	for (i = 0; i < r->n_watched; i++) {
		_cleanup_free_ char *path = lev_path_join(r->dir, r->watched[i].name);
		struct lev_file_stamp fs;
		struct stat st;

		memset(&fs, 0, sizeof(fs));
		if (stat(path, &st) == 0) {
			fs.exists = true;
			fs.dev = st.st_dev;
			fs.ino = st.st_ino;
			fs.size = st.st_size;
			fs.mtime = st.st_mtim;
			fs.ctime = st.st_ctim;
		}
		if (!lev_file_stamp_equal(&fs, &r->watched[i].stamp))
			return true;
	}
	return false;
}

const char *lev_rules_dir(const struct lev_rules *r)
{
	return r->dir;
}

size_t lev_rules_count(const struct lev_rules *r)
{
	return r->n_rules;
}

const char *lev_rules_name(const struct lev_rules *r, size_t i)
{
	return i < r->n_rules ? r->rules[i].name : NULL;
}

const char *lev_rules_file(const struct lev_rules *r, size_t i)
{
	return i < r->n_rules ? r->rules[i].file : NULL;
}

char *const *lev_rules_load_errors(const struct lev_rules *r)
{
	return r->load_errors;
}

/* ---- evaluation ---- */

struct args_req {
	const json_t *args;
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
		make_ro_proxy(L);
		break;
	}
	case JSON_ARRAY: {
		size_t i, n = json_array_size(j);

		lua_createtable(L, (int)(n > 1024 ? 1024 : n), 0);
		for (i = 0; i < n; i++) {
			push_json(L, json_array_get(j, i), depth + 1, q);
			lua_rawseti(L, -2, (lua_Integer)i + 1);
		}
		make_ro_proxy(L);
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

	if (q->args)
		push_json(L, q->args, 0, q);
	else {
		lua_newtable(L);
		make_ro_proxy(L);
	}
	return 1;
}

/* The `call` table: the globals again, and the integrity side (IN). */
static void push_call(lua_State *L, const struct lev_rule_input *in, const char *target,
		      int args_idx)
{
	size_t n = 0;

	lua_createtable(L, 0, 8);
	lua_pushstring(L, in->tool);
	lua_setfield(L, -2, "tool");
	if (target) {
		lua_pushstring(L, target);
		lua_setfield(L, -2, "target");
	}
	lua_pushstring(L, lev_level_name(in->taint));
	lua_setfield(L, -2, "taint");
	lua_pushvalue(L, args_idx);
	lua_setfield(L, -2, "args");
	if (in->has_integrity) {
		lua_pushstring(L, lev_integrity_name(in->integrity));
		lua_setfield(L, -2, "integrity");
	}
	lua_pushboolean(L, in->consequential);
	lua_setfield(L, -2, "consequential");
	lua_createtable(L, 4, 0);
	for (char *const *a = in->untrusted_args; a && *a && n < 256; a++) {
		lua_pushstring(L, *a);
		lua_rawseti(L, -2, (lua_Integer)++n);
	}
	make_ro_proxy(L);
	lua_setfield(L, -2, "untrusted_args");
	make_ro_proxy(L);
}

/* The input of the evaluation under way. */
struct eval_req {
	const struct lev_rule_input *in;
	const char *target;
};

/* Protected: (req, args proxy) -> the call table. */
static int build_call(lua_State *L)
{
	struct eval_req *q = lua_touserdata(L, 1);

	push_call(L, q->in, q->target, 2);
	return 1;
}

/*
 * Run in protected mode with (chunk, tool, target|nil, taint, args, call): build
 * the evaluation's environment, install it as the chunk's _ENV, call it,
 * return its first result.
 */
static int run_rule(lua_State *L)
{
	struct lev_rules *r = rules_of(L);

	/* the values: a fresh table whose misses fall through to the safe library */
	lua_createtable(L, 0, 4);
	lua_pushvalue(L, 2);
	lua_setfield(L, -2, "tool");
	lua_pushvalue(L, 3);
	lua_setfield(L, -2, "target");
	lua_pushvalue(L, 4);
	lua_setfield(L, -2, "taint");
	lua_pushvalue(L, 5);
	lua_setfield(L, -2, "args");
	lua_pushvalue(L, 6);
	lua_setfield(L, -2, "call");
	lua_createtable(L, 0, 1);
	lua_rawgeti(L, LUA_REGISTRYINDEX, r->safe_ref);
	lua_setfield(L, -2, "__index");
	lua_setmetatable(L, -2);
	/* the environment: empty, reads through the values, refuses writes */
	lua_createtable(L, 0, 0);
	lua_createtable(L, 0, 3);
	lua_pushvalue(L, -3);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, env_newindex);
	lua_setfield(L, -2, "__newindex");
	lua_pushboolean(L, 0);
	lua_setfield(L, -2, "__metatable");
	lua_setmetatable(L, -2);
	if (!lua_setupvalue(L, 1, 1))
		return luaL_error(L, "rule has no environment");
	lua_settop(L, 1);
	lua_call(L, 0, 1);
	return 1;
}

static void start_budget(struct lev_rules *r)
{
	clock_gettime(CLOCK_MONOTONIC, &r->deadline);
	r->deadline.tv_sec += (time_t)(r->lim.wall_ns / 1000000000ULL);
	r->deadline.tv_nsec += (long)(r->lim.wall_ns % 1000000000ULL);
	if (r->deadline.tv_nsec >= 1000000000L) {
		r->deadline.tv_sec++;
		r->deadline.tv_nsec -= 1000000000L;
	}
	r->used = 0;
	r->over = false;
	r->timed_out = false;
	r->mem_hit = false;
}

/* Evaluate rule I once; ARGS_IDX is the stack index of the args proxy. */
static enum lev_rule_outcome eval_once(struct lev_rules *r, size_t i,
				       const struct lev_rule_input *in, const char *target,
				       int args_idx, char **msg)
{
	const char *tool = in->tool;
	enum lev_level taint = in->taint;
	struct eval_req q = { in, target };
	lua_State *L = r->L;
	enum lev_rule_outcome o;
	int top = lua_gettop(L), st;

	if (!lua_checkstack(L, 8)) {
		*msg = xstrdup("Lua stack exhausted");
		return LEV_RULE_MEMORY;
	}
	start_budget(r);
	lua_pushcfunction(L, run_rule);
	lua_rawgeti(L, LUA_REGISTRYINDEX, r->rules[i].ref);
	lua_pushstring(L, tool);
	if (target)
		lua_pushstring(L, target);
	else
		lua_pushnil(L);
	lua_pushstring(L, lev_level_name(taint));
	lua_pushvalue(L, args_idx);
	lua_pushcfunction(L, build_call);
	lua_pushlightuserdata(L, &q);
	lua_pushvalue(L, args_idx);
	if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
		lua_settop(L, top);
		*msg = xstrdup("the call table does not fit in the rules' memory cap");
		return LEV_RULE_MEMORY;
	}
	lua_sethook(L, hook, LUA_MASKCOUNT, HOOK_STEP);
	st = lua_pcall(L, 6, 1, 0);
	lua_sethook(L, NULL, 0, 0);

	if (r->over) {
		o = LEV_RULE_BUDGET;
		*msg = xstrdup(r->timed_out ? "ran past its deadline"
					    : "ran past its instruction budget");
	} else if (r->mem_hit || st == LUA_ERRMEM) {
		o = LEV_RULE_MEMORY;
		*msg = xasprintf("hit the memory cap (%zu bytes)", r->lim.memory);
	} else if (st != LUA_OK) {
		o = LEV_RULE_ERROR;
		*msg = msg_at(L, -1);
	} else if (lua_type(L, -1) == LUA_TBOOLEAN) {
		o = lua_toboolean(L, -1) ? LEV_RULE_TRUE : LEV_RULE_FALSE;
	} else {
		o = LEV_RULE_NOT_BOOLEAN;
		*msg = xasprintf("returned a %s, not a boolean", luaL_typename(L, -1));
	}
	lua_settop(L, top);
	/* keep a long-lived state small: collect after a heavy evaluation */
	if (r->mem_used > r->lim.memory / 2)
		lua_gc(L, LUA_GCCOLLECT);
	return o;
}

/* Push the args proxy for IN (protected); false when it cannot be built. */
static bool push_args(struct lev_rules *r, const struct json_t *args, char **msg)
{
	struct args_req q = { args, 0, false };
	int st;

	r->mem_hit = false;
	lua_pushcfunction(r->L, build_args);
	lua_pushlightuserdata(r->L, &q);
	st = lua_pcall(r->L, 1, 1, 0);
	if (st != LUA_OK || q.too_big) {
		lua_pop(r->L, 1);
		*msg = q.too_big ? xasprintf("arguments are larger than rules accept (%d values, "
					     "depth %d)", ARGS_NODES_MAX, ARGS_DEPTH_MAX)
				 : xstrdup("arguments do not fit in the rules' memory cap");
		return false;
	}
	return true;
}

/* Evaluate rule I for every target of IN (each must say true). */
static enum lev_rule_outcome eval_all_targets(struct lev_rules *r, size_t i,
					      const struct lev_rule_input *in, int args_idx,
					      char **msg)
{
	size_t t, n = lev_strv_len(in->targets);
	enum lev_rule_outcome o = LEV_RULE_FALSE;

	for (t = 0; t < (n ? n : 1); t++) {
		o = eval_once(r, i, in, n ? in->targets[t] : NULL, args_idx, msg);
		if (o != LEV_RULE_TRUE)
			return o;
	}
	return o;
}

int lev_rules_eval(struct lev_rules *r, size_t i, const struct lev_rule_input *in,
		   enum lev_rule_outcome *out, char **msg_out, struct lev_err *err)
{
	char *msg = NULL;
	enum lev_rule_outcome o;

	if (i >= r->n_rules)
		return lev_err_set(err, -EINVAL, "no rule %zu", i);
	if (!in->tool)
		return lev_err_set(err, -EINVAL, "no tool");
	lua_settop(r->L, 0);
	if (!push_args(r, in->args, &msg)) {
		o = LEV_RULE_BAD_ARGS;
	} else {
		o = eval_all_targets(r, i, in, lua_gettop(r->L), &msg);
		lua_settop(r->L, 0);
	}
	*out = o;
	if (msg_out)
		*msg_out = msg;
	else
		free(msg);
	return 0;
}

int lev_rules_first_allowing(struct lev_rules *r, const struct lev_rule_input *in, char ***diags)
{
	char *msg = NULL;
	size_t i;
	int found = -1;

	if (!r || r->n_rules == 0 || !in->tool)
		return -1;
	lua_settop(r->L, 0);
	if (!push_args(r, in->args, &msg)) {
		*diags = lev_strv_push_take(*diags, xasprintf("rules: %s", msg));
		free(msg);
		return -1;
	}
	for (i = 0; i < r->n_rules && found < 0; i++) {
		enum lev_rule_outcome o = eval_all_targets(r, i, in, 1, &msg);

		if (o == LEV_RULE_TRUE)
			found = (int)i;
		else if (o != LEV_RULE_FALSE && lev_strv_len(*diags) < 64)
			*diags = lev_strv_push_take(*diags, xasprintf("%s: %s: %s", r->rules[i].name,
								      lev_rule_outcome_name(o),
								      msg ? msg : ""));
		free(msg);
		msg = NULL;
	}
	lua_settop(r->L, 0);
	return found;
}
