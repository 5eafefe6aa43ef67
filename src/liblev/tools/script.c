/*
 * script.c - one call of a Lua script tool in a fresh hardened state.  See script.h.
 */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/policy/luabox.h"
#include "liblev/tools/script.h"

#define RESULT_NODES_MAX 100000
#define RESULT_DEPTH_MAX 32

json_t *lev_script_schema(const struct lev_script_tool *st)
{
	json_t *props = json_object(), *req = json_array();
	json_t *s = json_pack("{s:s}", "type", "object");

	for (size_t i = 0; i < st->n_params; i++) {
		const struct lev_script_param *p = &st->params[i];
		json_t *ps = json_pack("{s:s}", "type", lev_script_type_name(p->type));

		if (p->description && *p->description)
			json_object_set_new(ps, "description", json_string(p->description));
		json_object_set_new(props, p->name, ps);
		if (p->required)
			json_array_append_new(req, json_string(p->name));
	}
	json_object_set_new(s, "properties", props);
	if (json_array_size(req))
		json_object_set_new(s, "required", req);
	else
		json_decref(req);
	return s;
}

/* What one call shares with its host functions (the box's user pointer). */
struct script_call {
	const struct lev_script_tool *st;
	const struct lev_script_host *host;
	struct lev_luabox box;
	int chunk_ref;
	const json_t *args;
	size_t result_max;
	struct lev_tool_output *out;
};

/* ---- host functions ---- */

static const char *const host_names[] = { "read_file", "write_file", "shell", "http_get",
					   "http_post" };

int lev_script_tools_add(struct lev_tools *tools, const struct lev_script_tool *v, size_t n,
			 struct lev_err *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct lev_script_tool *st = &v[i];
		json_t *schema = lev_script_schema(st);
		struct lev_tool_info ti = {
			.name = st->name,
			.description = *st->description ? st->description : st->name,
			.kind = LEV_TOOL_SCRIPT,
			.op = LEV_OP_NONE,
			.touches = LEV_TOUCH_READS | LEV_TOUCH_WRITES |
				   (st->needs & LEV_SCRIPT_NEEDS_NETWORK ? LEV_TOUCH_NETWORK : 0) |
				   (st->needs & LEV_SCRIPT_NEEDS_SHELL
					    ? LEV_TOUCH_SHELL | LEV_TOUCH_PROCESS : 0),
			.outbound = true,
			.label = LEV_PRIVATE,
			.schema = schema,
		};
		int r = lev_tools_add(tools, &ti, err);

		json_decref(schema);
		if (r < 0)
			return lev_err_wrap(err, "script tool '%s'", st->name);
	}
	return 0;
}

static enum lev_tool_op host_op(int which)
{
	static const enum lev_tool_op ops[] = { LEV_OP_READ_FILE, LEV_OP_WRITE_FILE, LEV_OP_SHELL,
						LEV_OP_WEB_FETCH, LEV_OP_HTTP_POST };

	return ops[which];
}

/* The built-in tool's arguments for host function WHICH (a new reference). */
static json_t *host_args(lua_State *L, int which)
{
	const char *a = luaL_checkstring(L, 1);

	switch (which) {
	case 0:
		return json_pack("{s:s}", "path", a);
	case 1:
		return json_pack("{s:s,s:s}", "path", a, "content", luaL_checkstring(L, 2));
	case 2:
		return json_pack("{s:s}", "command", a);
	case 3:
		return json_pack("{s:s}", "url", a);
	default:
		return json_pack("{s:s,s:s}", "url", a, "body", luaL_checkstring(L, 2));
	}
}

static int host_call(lua_State *L)
{
	struct lev_luabox *b = lev_luabox_of(L);
	struct script_call *sc = b->user;
	int which = (int)lua_tointeger(L, lua_upvalueindex(1));
	struct lev_tool_output o = { 0 };
	json_t *args = host_args(L, which);
	uint64_t t0;

	if (!args)
		return luaL_error(L, "%s(): the arguments are not valid UTF-8 text",
				  host_names[which]);
	if (!sc->host || !sc->host->call) {
		json_decref(args);
		return luaL_error(L, "%s(): no host runs tools here", host_names[which]);
	}
	t0 = lev_monotonic_ns();
	sc->host->call(sc->host->data, host_op(which), args, &o);
	lev_luabox_extend(b, lev_monotonic_ns() - t0);
	json_decref(args);
	if (o.is_error) {
		/* the error message is a Lua string; copy it before freeing ours */
		lua_pushfstring(L, "%s(): %s", host_names[which], o.text ? o.text : "failed");
		lev_tool_output_release(&o);
		return lua_error(L);
	}
	lua_pushlstring(L, o.text ? o.text : "", o.text ? o.len : 0);
	lev_tool_output_release(&o);
	return 1;
}

static int host_missing(lua_State *L)
{
	int which = (int)lua_tointeger(L, lua_upvalueindex(1));

	return luaL_error(L, "%s() needs '-- @requires %s' in the script's header",
			  host_names[which], which == 2 ? "shell" : "network");
}

/* Set the host functions into the table at the top of the stack. */
static void push_hosts(lua_State *L, unsigned needs)
{
	for (int i = 0; i < (int)ARRAY_SIZE(host_names); i++) {
		bool ok = i < 2 || (i == 2 && (needs & LEV_SCRIPT_NEEDS_SHELL)) ||
			  (i > 2 && (needs & LEV_SCRIPT_NEEDS_NETWORK));

		lua_pushinteger(L, i);
		lua_pushcclosure(L, ok ? host_call : host_missing, 1);
		lua_setfield(L, -2, host_names[i]);
	}
}

/* ---- the result ---- */

struct conv {
	size_t nodes;
	const char *why;	/* why the value cannot be JSON */
};

static json_t *to_json(lua_State *L, int idx, int depth, struct conv *c);

/* A sequence 1..n with nothing else is an array. */
static bool is_array(lua_State *L, int t, size_t *n)
{
	size_t count = 0;

	*n = lua_rawlen(L, t);
	lua_pushnil(L);
	while (lua_next(L, t)) {
		count++;
		lua_pop(L, 1);
	}
	return count == *n && (*n > 0 || count == 0);
}

static json_t *table_json(lua_State *L, int t, int depth, struct conv *c)
{
	size_t n;
	json_t *j;

	if (!lua_checkstack(L, 4)) {
		c->why = "nested too deeply";
		return NULL;
	}
	if (is_array(L, t, &n) && n > 0) {
		j = json_array();
		for (size_t i = 1; i <= n && !c->why; i++) {
			lua_rawgeti(L, t, (lua_Integer)i);
			json_array_append_new(j, to_json(L, lua_gettop(L), depth + 1, c));
			lua_pop(L, 1);
		}
		return j;
	}
	j = json_object();
	lua_pushnil(L);
	while (!c->why && lua_next(L, t)) {
		if (lua_type(L, -2) != LUA_TSTRING) {
			c->why = "a table key is not a string";
			lua_pop(L, 2);
			break;
		}
		json_object_set_new(j, lua_tostring(L, -2), to_json(L, lua_gettop(L), depth + 1, c));
		lua_pop(L, 1);
	}
	return j;
}

static json_t *to_json(lua_State *L, int idx, int depth, struct conv *c)
{
	if (c->why)
		return json_null();
	if (++c->nodes > RESULT_NODES_MAX || depth > RESULT_DEPTH_MAX) {
		c->why = "larger than 100,000 values or 32 levels";
		return json_null();
	}
	switch (lua_type(L, idx)) {
	case LUA_TNIL:
		return json_null();
	case LUA_TBOOLEAN:
		return json_boolean(lua_toboolean(L, idx));
	case LUA_TNUMBER:
		if (lua_isinteger(L, idx))
			return json_integer((json_int_t)lua_tointeger(L, idx));
		if (!isfinite(lua_tonumber(L, idx))) {
			c->why = "a number is not finite";
			return json_null();
		}
		return json_real(lua_tonumber(L, idx));
	case LUA_TSTRING: {
		size_t len;
		const char *s = lua_tolstring(L, idx, &len);
		json_t *j = json_stringn(s, len);

		if (!j)
			c->why = "a string is not valid UTF-8";
		return j ? j : json_null();
	}
	case LUA_TTABLE: {
		json_t *j = table_json(L, idx, depth, c);

		return j ? j : json_null();
	}
	default:
		c->why = "it holds a function or another value JSON cannot hold";
		return json_null();
	}
}

/* The value at the top of the stack as the call's result text (malloc'd), or NULL (*why). */
static char *result_text(lua_State *L, size_t *len, const char **why)
{
	struct conv c = { 0, NULL };
	json_t *j;
	char *s;

	if (lua_type(L, -1) == LUA_TNIL) {
		*len = 0;
		return xstrdup("");
	}
	if (lua_type(L, -1) == LUA_TSTRING) {
		const char *p = lua_tolstring(L, -1, len);
		char *t = xmalloc(*len + 1);

		memcpy(t, p, *len);
		t[*len] = '\0';
		return t;
	}
	j = to_json(L, lua_gettop(L), 0, &c);
	if (c.why) {
		json_decref(j);
		*why = c.why;
		return NULL;
	}
	s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(j);
	if (!s) {
		*why = "it cannot be written as JSON";
		return NULL;
	}
	*len = strlen(s);
	return s;
}

/* ---- the call ---- */

/* Protected: the environment, the chunk, its result into sc->out. */
static int run_chunk(lua_State *L)
{
	struct script_call *sc = lev_luabox_of(L)->user;
	const char *why = NULL;
	size_t len = 0;
	char *text, *m = NULL;

	lua_rawgeti(L, LUA_REGISTRYINDEX, sc->chunk_ref);
	/* the environment: its own globals, then params and the host functions, then the library */
	lua_createtable(L, 0, 0);
	lua_createtable(L, 0, 2);
	lua_createtable(L, 0, 6);
	if (!lev_luabox_push_json(&sc->box, sc->args, false, &m)) {
		lua_pushstring(L, m);
		free(m);
		return lua_error(L);
	}
	lua_setfield(L, -2, "params");
	push_hosts(L, sc->st->needs);
	lua_createtable(L, 0, 1);
	lua_rawgeti(L, LUA_REGISTRYINDEX, sc->box.safe_ref);
	lua_setfield(L, -2, "__index");
	lua_setmetatable(L, -2);
	lua_setfield(L, -2, "__index");
	lua_pushboolean(L, 0);
	lua_setfield(L, -2, "__metatable");
	lua_setmetatable(L, -2);
	if (!lua_setupvalue(L, -2, 1))
		return luaL_error(L, "the script has no environment");
	lua_call(L, 0, 1);
	text = result_text(L, &len, &why);
	if (!text)
		return luaL_error(L, "the script's result is not a string, and not JSON: %s", why);
	lev_tool_output_release(sc->out);
	if (len > sc->result_max) {
		sc->out->truncated = true;
		text[sc->result_max] = '\0';
		len = sc->result_max;
	}
	sc->out->text = text;
	sc->out->len = len;
	sc->out->is_error = false;
	return 0;
}

static void fail(struct script_call *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct script_call *sc, const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(4096);
	va_list ap;

	(void)lev_buf_addf(&b, "[error] script tool '%s': ", sc->st->name);
	va_start(ap, fmt);
	(void)lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	lev_tool_output_set(sc->out, b.buf, true);
	lev_buf_release(&b);
}

static void limits_of(const struct lev_script_limits *lim, struct lev_luabox_limits *bl,
		      size_t *result_max)
{
	bl->instructions = lim && lim->instructions ? lim->instructions
						   : LEV_SCRIPT_DEFAULT_INSTRUCTIONS;
	bl->wall_ns = lim && lim->wall_ns ? lim->wall_ns : LEV_SCRIPT_DEFAULT_WALL_NS;
	bl->memory = lim && lim->memory ? lim->memory : LEV_SCRIPT_DEFAULT_MEMORY;
	*result_max = lim && lim->result_max ? lim->result_max : LEV_SCRIPT_DEFAULT_RESULT_MAX;
}

void lev_script_run(const struct lev_script_tool *st, const json_t *args,
		    const struct lev_script_limits *lim, const struct lev_script_host *host,
		    struct lev_tool_output *out)
{
	struct script_call *sc = xcalloc(1, sizeof(*sc));
	_cleanup_free_ char *chunkname = xasprintf("=%s", st->file ? st->file : st->name);
	struct lev_luabox_limits bl;
	struct lev_err err = LEV_ERR_INIT;
	int r;

	sc->st = st;
	sc->host = host;
	sc->args = args;
	sc->out = out;
	limits_of(lim, &bl, &sc->result_max);
	lev_luabox_init(&sc->box, &bl, "script");
	sc->box.user = sc;
	if (lev_luabox_load(&sc->box, st->source, st->len, chunkname, &sc->chunk_ref, &err) < 0) {
		fail(sc, "%s", err.msg);
		goto done;
	}
	lev_luabox_start(&sc->box);
	lua_pushcfunction(sc->box.L, run_chunk);
	lev_luabox_arm(&sc->box);
	r = lua_pcall(sc->box.L, 0, 0, 0);
	lev_luabox_disarm(&sc->box);
	if (sc->box.over)
		fail(sc, "%s", sc->box.timed_out ? "ran past its deadline (an endless loop?)"
						 : "ran past its instruction budget (an endless "
						   "loop?)");
	else if (sc->box.mem_hit || r == LUA_ERRMEM)
		fail(sc, "hit the memory cap (%zu bytes)", sc->box.lim.memory);
	else if (r != LUA_OK)
		fail(sc, "%s", lua_type(sc->box.L, -1) == LUA_TSTRING
				       ? lua_tostring(sc->box.L, -1)
				       : "raised an error that is not a string");
done:
	lev_luabox_release(&sc->box);
	free(sc);
}
