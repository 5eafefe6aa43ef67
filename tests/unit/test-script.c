/*
 * test-script.c - Lua script tools: the header (conf/scripttool.h) and one
 * call in a fresh hardened state (tools/script.h), with hostile scripts
 * that must fail their own call only, each beside a benign twin.
 */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/scripttool.h"
#include "liblev/tools/script.h"

static int parse(const char *src, struct lev_script_tool *t, struct lev_err *err)
{
	return lev_scripttool_parse(src, strlen(src), "/bp/tools/t.lua", t, err);
}

static void test_header(void **state)
{
	struct lev_script_tool t;
	struct lev_err err = LEV_ERR_INIT;
	json_t *s;
	char *text;

	(void)state;
	assert_int_equal(parse("#!/ignored? no: a comment line follows\n", &t, &err) < 0, 1);
	assert_int_equal(parse("-- @tool t\n-- @description Upper-case text  \n"
			       "-- a plain comment\n\n"
			       "-- @param text string required \"the input\"\n"
			       "-- @param n integer\n"
			       "-- @requires network, shell\n-- @requires shell\n"
			       "return 1\n-- @param late string\n", &t, &err), 0);
	assert_string_equal(t.name, "t");
	assert_string_equal(t.description, "Upper-case text");
	assert_int_equal(t.n_params, 2);
	assert_true(t.params[0].required);
	assert_false(t.params[1].required);
	assert_int_equal(t.params[1].type, LEV_SCRIPT_INTEGER);
	assert_int_equal(t.needs, LEV_SCRIPT_NEEDS_NETWORK | LEV_SCRIPT_NEEDS_SHELL);
	assert_string_equal(lev_script_needs_text(t.needs), "network, shell");
	s = lev_script_schema(&t);
	text = json_dumps(s, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(text, "{\"properties\":{\"n\":{\"type\":\"integer\"},\"text\":{"
				  "\"description\":\"the input\",\"type\":\"string\"}},"
				  "\"required\":[\"text\"],\"type\":\"object\"}");
	free(text);
	json_decref(s);
	lev_scripttool_release(&t);
}

static void expect_error(const char *src, const char *where_what)
{
	struct lev_script_tool t;
	struct lev_err err = LEV_ERR_INIT;

	assert_int_equal(parse(src, &t, &err), LEV_EPARSE);
	if (!strstr(err.msg, where_what))
		fail_msg("'%s' not in '%s'", where_what, err.msg);
}

static void test_bad_headers(void **state)
{
	(void)state;
	expect_error("return 1\n", "/bp/tools/t.lua:1:1: no '-- @tool t' line");
	expect_error("-- @tool other\n", "/bp/tools/t.lua:1:10: the tool 'other' must be in a file "
		     "named 'other.lua'");
	expect_error("-- @tool t\n-- @param x strin\n", "t.lua:2:13: @param 'x' needs a type");
	expect_error("-- @tool t\n  -- @bogus\n", "t.lua:2:6: unknown directive '@bogus'");
	expect_error("-- @tool t\n-- @requires disk\n", "t.lua:2:14: unknown requirement 'disk'");
	expect_error("-- @tool t\n-- @requires\n", "t.lua:2:13: @requires needs");
	expect_error("-- @tool t\n-- @param x string maybe\n", "t.lua:2:20: expected 'required'");
	expect_error("-- @tool t\n-- @param x string \"open\n", "t.lua:2:20: the description has no");
	expect_error("-- @tool t\n-- @param x string\n-- @param x number\n",
		     "t.lua:3:11: a second @param 'x'");
	expect_error("-- @tool t\n-- @tool t\n", "t.lua:2:10: a second @tool");
}

struct host_log {
	enum lev_tool_op op;
	char *args;
	const char *answer;
	bool refuse;
};

static void fake_call(void *data, enum lev_tool_op op, const json_t *args,
		      struct lev_tool_output *out)
{
	struct host_log *h = data;

	h->op = op;
	free(h->args);
	h->args = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
	lev_tool_output_set(out, h->answer, h->refuse);
}

/* Run SRC (its header is added: needs NEEDS) with ARGS; the result text in *out. */
static void run(const char *body, const char *needs, const char *args, struct host_log *h,
		struct lev_tool_output *out)
{
	struct lev_script_tool t;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_script_host host = { fake_call, h };
	char *src = xasprintf("-- @tool t\n%s%s%s%s", needs ? "-- @requires " : "",
			      needs ? needs : "", needs ? "\n" : "", body);
	json_t *a = args ? json_loads(args, 0, NULL) : NULL;

	assert_int_equal(parse(src, &t, &err), 0);
	memset(out, 0, sizeof(*out));
	lev_script_run(&t, a, NULL, h ? &host : NULL, out);
	json_decref(a);
	lev_scripttool_release(&t);
	free(src);
}

static void expect(const char *body, const char *needs, bool is_error, const char *part)
{
	struct lev_tool_output out;

	run(body, needs, "{\"text\":\"hi\"}", NULL, &out);
	if (out.is_error != is_error || !strstr(out.text, part))
		fail_msg("%s: got %s'%s', want '%s'", body, out.is_error ? "error " : "",
			 out.text, part);
	lev_tool_output_release(&out);
}

static void test_results(void **state)
{
	(void)state;
	expect("return string.upper(params.text)", NULL, false, "HI");
	expect("return { a = 1, b = { true, 2.5, 'x' } }", NULL, false,
	       "\"b\":[true,2.5,\"x\"]");
	expect("local n = 0\nfor i = 1, 10 do n = n + i end\ng = n\nreturn tostring(g)", NULL, false,
	       "55");
	expect("return nil", NULL, false, "");
	/* the libraries open on first use, a string's methods and arithmetic included */
	expect("return (\"10\" + 1) .. (\"abc\"):upper() .. -\"2\" .. math.floor(2.5) .. "
	       "table.concat({ 1, 2 }, \",\")", NULL, false, "11ABC-221,2");
	expect("return (\"10\" * \"3\") .. string.rep(\"a\", 2)", NULL, false, "30aa");
	expect("return getmetatable(\"\")", NULL, false, "false");
	expect("return string.dump", NULL, false, "");
	expect("return function() end", NULL, true, "not a string, and not JSON");
	expect("error('nope')", NULL, true, "[error] script tool 't': /bp/tools/t.lua:2: nope");
}

/* Every escape fails its own call; a fresh state each call means nothing carries over. */
static void test_hostile_scripts_fail_their_call(void **state)
{
	(void)state;
	expect("return io.open('/etc/passwd'):read('a')", NULL, true, "global 'io'");
	expect("return os.execute('id')", NULL, true, "global 'os'");
	expect("return require('os')", NULL, true, "global 'require'");
	expect("return debug.getinfo(1).source", NULL, true, "global 'debug'");
	expect("return load('\\27Lua')()", NULL, true, "global 'load'");
	expect("return string.dump(function() end)", NULL, true, "field 'dump'");
	expect("return collectgarbage('count')", NULL, true, "global 'collectgarbage'");
	expect("return setmetatable({}, { __gc = function() end })", NULL, true, "__gc");
	expect("return package.path", NULL, true, "global 'package'");
	expect("while true do end", NULL, true, "instruction budget (an endless loop?)");
	expect("local ok = pcall(function() while true do end end)\nwhile true do end", NULL,
	       true, "instruction budget");
	expect("return #string.rep('x', 1 << 30)", NULL, true, "memory cap");
	expect("local t = {}\nfor i = 1, 1e9 do t[i] = i end", NULL, true, "cap");
	expect("\27Lua", NULL, true, "");
	/* the benign twin, after all of them */
	expect("return #string.rep('x', 1 << 20)", NULL, false, "1048576");
}

static void test_host_functions(void **state)
{
	struct host_log h = { 0 };
	struct lev_tool_output out;

	(void)state;
	h.answer = "file text";
	run("return read_file('a.txt')", NULL, NULL, &h, &out);
	assert_false(out.is_error);
	assert_string_equal(out.text, "file text");
	assert_int_equal(h.op, LEV_OP_READ_FILE);
	assert_string_equal(h.args, "{\"path\":\"a.txt\"}");
	lev_tool_output_release(&out);

	run("return write_file('b.txt', 'x')", NULL, NULL, &h, &out);
	assert_int_equal(h.op, LEV_OP_WRITE_FILE);
	assert_string_equal(h.args, "{\"content\":\"x\",\"path\":\"b.txt\"}");
	lev_tool_output_release(&out);

	/* without @requires, the function says what is missing and nothing runs */
	h.op = LEV_OP_NONE;
	run("return shell('id')", NULL, NULL, &h, &out);
	assert_true(out.is_error);
	assert_non_null(strstr(out.text, "shell() needs '-- @requires shell'"));
	assert_int_equal(h.op, LEV_OP_NONE);
	lev_tool_output_release(&out);
	run("return http_get('http://x/')", "shell", NULL, &h, &out);
	assert_non_null(strstr(out.text, "http_get() needs '-- @requires network'"));
	assert_int_equal(h.op, LEV_OP_NONE);
	lev_tool_output_release(&out);

	run("return shell('id')", "shell", NULL, &h, &out);
	assert_int_equal(h.op, LEV_OP_SHELL);
	assert_string_equal(h.args, "{\"command\":\"id\"}");
	lev_tool_output_release(&out);
	run("return http_post('http://x/', 'b')", "network", NULL, &h, &out);
	assert_int_equal(h.op, LEV_OP_HTTP_POST);
	assert_string_equal(h.args, "{\"body\":\"b\",\"url\":\"http://x/\"}");
	lev_tool_output_release(&out);

	/* a refused call raises; the script may catch it */
	h.refuse = true;
	h.answer = "[denied] no";
	run("return http_get('http://x/')", "network", NULL, &h, &out);
	assert_true(out.is_error);
	assert_non_null(strstr(out.text, "http_get(): [denied] no"));
	lev_tool_output_release(&out);
	run("local ok, e = pcall(http_get, 'http://x/')\nreturn ok and 'got' or 'caught'",
	    "network", NULL, &h, &out);
	assert_false(out.is_error);
	assert_string_equal(out.text, "caught");
	lev_tool_output_release(&out);
	free(h.args);
}

static void put(const char *dir, const char *name, const char *text, mode_t mode)
{
	char *p = xasprintf("%s/tools/%s", dir, name);
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
	free(p);
}

static void test_load_dir(void **state)
{
	char tmpl[] = "/tmp/lev-script.XXXXXX";
	char *dir = mkdtemp(tmpl), *tools;
	struct lev_script_tool *v = NULL;
	struct lev_err err = LEV_ERR_INIT;
	size_t n = 9;

	(void)state;
	assert_non_null(dir);
	/* no tools/ folder: none */
	assert_int_equal(lev_scripttools_load(dir, &v, &n, &err), 0);
	assert_null(v);
	assert_int_equal(n, 0);
	tools = xasprintf("%s/tools", dir);
	assert_int_equal(mkdir(tools, 0755), 0);
	put(dir, "b.lua", "-- @tool b\n-- @requires network\nreturn 1\n", 0644);
	put(dir, "a.lua", "-- @tool a\nreturn 1\n", 0644);
	put(dir, "a.rhai", "// @tool a\n", 0644);
	assert_int_equal(lev_scripttools_load(dir, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].name, "a");
	assert_string_equal(v[1].name, "b");
	assert_int_equal(v[1].needs, LEV_SCRIPT_NEEDS_NETWORK);
	lev_scripttools_free(v, n);
	/* writable by others: refused, nothing loaded */
	put(dir, "b.lua", "-- @tool b\nreturn 1\n", 0666);
	assert_int_equal(lev_scripttools_load(dir, &v, &n, &err), -EPERM);
	assert_non_null(strstr(err.msg, "writable by group or others"));
	put(dir, "b.lua", "-- @tool b\nreturn 1\n", 0644);
	/* the name of a built-in tool */
	put(dir, "read_file.lua", "-- @tool read_file\nreturn 1\n", 0644);
	assert_int_equal(lev_scripttools_load(dir, &v, &n, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "has the name of lev's built-in tool"));
	assert_int_equal(lev_rm_rf(dir, NULL), 0);
	free(tools);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_results),
		cmocka_unit_test(test_hostile_scripts_fail_their_call),
		cmocka_unit_test(test_host_functions),
		cmocka_unit_test(test_load_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
