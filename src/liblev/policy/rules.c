/*
 * rules.c - sandboxed Lua 5.4 gate rules.  See rules.h for the contract.
 *
 * The hardening (libraries, budget, memory cap, read-only proxies) is
 * luabox.c's; every call into Lua that can allocate runs under lua_pcall,
 * so a memory cap hit or an error never reaches the panic handler.
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
#include "liblev/policy/luabox.h"
#include "liblev/policy/policy.h"
#include "liblev/policy/rules.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

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
	/* the state: luabox.h (never shared with script tools), built by
	 * rules_box() when the first rule is added: a run with no rules
	 * never holds one */
	struct lev_luabox box;
	struct lev_luabox_limits lim;	/* for the box */
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

static int env_newindex(lua_State *L)
{
	const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?";

	return luaL_error(L, "rules may not set globals (tried '%s'); use local variables", k);
}

struct lev_rules *lev_rules_new(const struct lev_rules_limits *limits)
{
	struct lev_rules *r = xcalloc(1, sizeof(*r));
	struct lev_luabox_limits bl = { 0 };

	if (limits) {
		bl.instructions = limits->instructions;
		bl.wall_ns = limits->wall_ns;
		bl.memory = limits->memory;
	}
	if (!bl.instructions)
		bl.instructions = LEV_RULES_DEFAULT_INSTRUCTIONS;
	if (!bl.wall_ns)
		bl.wall_ns = LEV_RULES_DEFAULT_WALL_NS;
	if (!bl.memory)
		bl.memory = LEV_RULES_DEFAULT_MEMORY;
	r->lim = bl;
	return r;
}

/* The rules' Lua state, built on first use. */
static lua_State *rules_box(struct lev_rules *r)
{
	if (!r->box.L)
		lev_luabox_init(&r->box, &r->lim, "rule");
	return r->box.L;
}

struct lev_rules *lev_rules_free(struct lev_rules *r)
{
	size_t i;

	if (!r)
		return NULL;
	lev_luabox_release(&r->box);
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
	int ref = LUA_NOREF;

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
	lua_settop(rules_box(r), 0);
	if (lev_luabox_load(&r->box, src, len, chunkname, &ref, err) < 0)
		return LEV_EPARSE;
	r->rules = xreallocarray(r->rules, r->n_rules + 1, sizeof(*r->rules));
	r->rules[r->n_rules].name = xstrdup(name);
	r->rules[r->n_rules].file = xstrdup(file ? file : "");
	r->rules[r->n_rules].ref = ref;
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
	lev_luabox_ro_proxy(L);
	lua_setfield(L, -2, "untrusted_args");
	lev_luabox_ro_proxy(L);
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
	struct lev_luabox *b = lev_luabox_of(L);

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
	lua_rawgeti(L, LUA_REGISTRYINDEX, b->safe_ref);
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

/* Evaluate rule I once; ARGS_IDX is the stack index of the args proxy. */
static enum lev_rule_outcome eval_once(struct lev_rules *r, size_t i,
				       const struct lev_rule_input *in, const char *target,
				       int args_idx, char **msg)
{
	const char *tool = in->tool;
	enum lev_level taint = in->taint;
	struct eval_req q = { in, target };
	lua_State *L = r->box.L;
	enum lev_rule_outcome o;
	int top = lua_gettop(L), st;

	if (!lua_checkstack(L, 8)) {
		*msg = xstrdup("Lua stack exhausted");
		return LEV_RULE_MEMORY;
	}
	lev_luabox_start(&r->box);
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
	lev_luabox_arm(&r->box);
	st = lua_pcall(L, 6, 1, 0);
	lev_luabox_disarm(&r->box);

	if (r->box.over) {
		o = LEV_RULE_BUDGET;
		*msg = xstrdup(r->box.timed_out ? "ran past its deadline"
					    : "ran past its instruction budget");
	} else if (r->box.mem_hit || st == LUA_ERRMEM) {
		o = LEV_RULE_MEMORY;
		*msg = xasprintf("hit the memory cap (%zu bytes)", r->box.lim.memory);
	} else if (st != LUA_OK) {
		o = LEV_RULE_ERROR;
		*msg = lev_luabox_msg(L, -1);
	} else if (lua_type(L, -1) == LUA_TBOOLEAN) {
		o = lua_toboolean(L, -1) ? LEV_RULE_TRUE : LEV_RULE_FALSE;
	} else {
		o = LEV_RULE_NOT_BOOLEAN;
		*msg = xasprintf("returned a %s, not a boolean", luaL_typename(L, -1));
	}
	lua_settop(L, top);
	/* keep a long-lived state small: collect after a heavy evaluation */
	if (r->box.mem_used > r->box.lim.memory / 2)
		lua_gc(L, LUA_GCCOLLECT);
	return o;
}

/* Push the args proxy for IN (protected); false when it cannot be built. */
static bool push_args(struct lev_rules *r, const struct json_t *args, char **msg)
{
	return lev_luabox_push_json(&r->box, args, true, msg);
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
	lua_settop(r->box.L, 0);
	if (!push_args(r, in->args, &msg)) {
		o = LEV_RULE_BAD_ARGS;
	} else {
		o = eval_all_targets(r, i, in, lua_gettop(r->box.L), &msg);
		lua_settop(r->box.L, 0);
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
	lua_settop(r->box.L, 0);
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
	lua_settop(r->box.L, 0);
	return found;
}
