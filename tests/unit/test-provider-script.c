/*
 * The script provider: turns files parsed with our TOML parser, played in
 * order whatever the request says, with the path confined to the
 * blueprint directory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/provider/provider.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/lev-test-script.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_at(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Make a script provider for SCRIPT (relative to the blueprint dir). */
static int make(const char *script, struct lev_provider **p, struct lev_err *err)
{
	struct lev_provider_spec s;
	int r;

	lev_provider_spec_init(&s);
	r = lev_provider_spec_from_config(&s, NULL, "script", NULL, script, dir, NULL, err);
	if (r == 0)
		r = lev_provider_new(&s, p, err);
	lev_provider_spec_release(&s);
	return r;
}

static const char turns[] =
	"# a scripted agent\n"
	"[[turn]]\n"
	"text = \"Reading the README first.\"\n"
	"[[turn.call]]\n"
	"tool = \"read_file\"\n"
	"args = { path = \"README.md\" }\n"
	"[[turn.call]]\n"
	"tool = \"shell\"\n"
	"id = \"my-id\"\n"
	"[turn.call.args]\n"
	"command = \"make test\"\n"
	"timeout = 30\n"
	"ratio = 0.5\n"
	"verbose = true\n"
	"env = [\"A=1\", \"B=2\"]\n"
	"nested = { deep = { x = [1, [2, 3]] } }\n"
	"when = 1979-05-27T07:32:00Z\n"
	"day = 1979-05-27\n"
	"\n"
	"[[turn]]\n"
	"[[turn.call]]\n"
	"tool = \"write_file\"\n"
	"raw_args = '{\"path\": \"x\", '\n"
	"[[turn.call]]\n"
	"tool = \"not_offered_anywhere\"\n"
	"\n"
	"[[turn]]\n"
	"text = \"All done.\"\n";

static void test_play_turns(void **state)
{
	struct lev_provider *p = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_infer_request req;
	struct lev_infer_response r;
	const json_t *a;

	(void)state;
	write_at("turns.toml", turns);
	if (make("turns.toml", &p, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(lev_provider_kind(p), LEV_PROVIDER_SCRIPT);
	lev_request_init(&req);
	lev_request_add_user_text(&req, "anything: the script does not listen");

	assert_int_equal(lev_provider_infer(p, &req, &r, &err), 0);
	assert_string_equal(r.text, "Reading the README first.");
	assert_int_equal(r.finish, LEV_FINISH_TOOL_CALLS);
	assert_int_equal(r.n_calls, 2);
	assert_string_equal(r.calls[0].id, "call_1_1");
	assert_string_equal(r.calls[0].name, "read_file");
	assert_string_equal(r.calls[0].raw_arguments, "{\"path\":\"README.md\"}");
	assert_string_equal(r.calls[1].id, "my-id");
	a = r.calls[1].arguments;
	assert_non_null(a);
	assert_string_equal(json_string_value(json_object_get(a, "command")), "make test");
	assert_int_equal(json_integer_value(json_object_get(a, "timeout")), 30);
	assert_true(json_real_value(json_object_get(a, "ratio")) == 0.5);
	assert_true(json_is_true(json_object_get(a, "verbose")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(a, "env"), 1)), "B=2");
	assert_int_equal(json_integer_value(json_array_get(
				 json_array_get(json_object_get(json_object_get(json_object_get(a, "nested"),
										 "deep"),
								"x"),
						1),
				 1)),
			 3);
	assert_string_equal(json_string_value(json_object_get(a, "when")), "1979-05-27T07:32:00Z");
	assert_string_equal(json_string_value(json_object_get(a, "day")), "1979-05-27");
	assert_false(r.has_prompt_tokens);
	lev_request_add_response(&req, &r);
	lev_response_release(&r);

	assert_int_equal(lev_provider_infer(p, &req, &r, &err), 0);
	assert_string_equal(r.text, "");
	assert_int_equal(r.n_calls, 2);
	assert_string_equal(r.calls[0].id, "call_2_1");
	assert_null(r.calls[0].arguments);
	assert_non_null(r.calls[0].parse_error);
	assert_string_equal(r.calls[0].raw_arguments, "{\"path\": \"x\", ");
	/* no args at all: {} */
	assert_int_equal(json_object_size(r.calls[1].arguments), 0);
	lev_response_release(&r);

	/* a turn without calls ends the stage */
	assert_int_equal(lev_provider_infer(p, &req, &r, &err), 0);
	assert_string_equal(r.text, "All done.");
	assert_int_equal(r.n_calls, 0);
	assert_int_equal(r.finish, LEV_FINISH_STOP);
	lev_response_release(&r);

	/* out of turns: the run is complete, every time it is asked */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(lev_provider_infer(p, &req, &r, &err), 0);
		assert_int_equal(r.finish, LEV_FINISH_SCRIPT_END);
		assert_int_equal(r.n_calls, 0);
		assert_string_equal(r.text, "");
		lev_response_release(&r);
	}
	lev_request_release(&req);
	lev_provider_free(p);
}

static void test_empty_script(void **state)
{
	struct lev_provider *p = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_infer_request req;
	struct lev_infer_response r;

	(void)state;
	write_at("empty.toml", "# nothing\n");
	assert_int_equal(make("empty.toml", &p, &err), 0);
	lev_request_init(&req);
	assert_int_equal(lev_provider_infer(p, &req, &r, &err), 0);
	assert_int_equal(r.finish, LEV_FINISH_SCRIPT_END);
	lev_response_release(&r);
	lev_provider_free(p);
}

struct bad_case {
	const char *text;
	const char *msg;
};

static void test_bad_scripts(void **state)
{
	static const struct bad_case cases[] = {
		{ "turns = 1\n", "bad.toml:1:1: unknown key 'turns' in the script (valid: turn)" },
		{ "turn = 1\n", "bad.toml:1:8: 'turn' must be an array of tables" },
		{ "[[turn]]\ntext = 5\n", "bad.toml:2:8: 'text' must be a string" },
		{ "[[turn]]\nsay = \"x\"\n", "bad.toml:2:1: unknown key 'say' in [[turn]] (valid: text, call)" },
		{ "[[turn]]\n[[turn.call]]\nargs = {}\n", "bad.toml:2:1: [[turn.call]] needs 'tool'" },
		{ "[[turn]]\n[[turn.call]]\ntool = \"\"\n", "bad.toml:3:8: 'tool' must be a non-empty string" },
		{ "[[turn]]\n[[turn.call]]\ntool = \"x\"\nargs = 5\n", "bad.toml:4:8: 'args' must be a table" },
		{ "[[turn]]\n[[turn.call]]\ntool = \"x\"\nargs = {}\nraw_args = \"{}\"\n",
		  "'raw_args' cannot be combined with 'args'" },
		{ "[[turn]]\n[[turn.call]]\ntool = \"x\"\nargs = { v = inf }\n", "cannot be inf or nan" },
		{ "[[turn]]\n[[turn.call]]\ntool = \"x\"\nargz = {}\n",
		  "bad.toml:4:1: unknown key 'argz' in [[turn.call]]" },
		{ "[[turn]\n", "bad.toml:1:" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lev_provider *p = NULL;
		struct lev_err err = LEV_ERR_INIT;

		write_at("bad.toml", cases[i].text);
		if (make("bad.toml", &p, &err) == 0) {
			lev_provider_free(p);
			fail_msg("accepted: %s", cases[i].text);
		}
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("'%s': message '%s' lacks '%s'", cases[i].text, err.msg,
				 cases[i].msg);
	}
}

static void test_script_confined(void **state)
{
	struct lev_provider *p = NULL;
	struct lev_err err = LEV_ERR_INIT;
	char path[256], outside[128];

	(void)state;
	write_at("ok.toml", "[[turn]]\ntext = \"hi\"\n");
	assert_int_equal(make("ok.toml", &p, &err), 0);
	lev_provider_free(p);
	assert_int_equal(make("./ok.toml", &p, &err), 0);
	lev_provider_free(p);

	assert_int_equal(make("../ok.toml", &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "inside the blueprint directory"));
	assert_int_equal(make("sub/../../x.toml", &p, &err), -EINVAL);
	assert_int_equal(make("/etc/passwd", &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "relative"));
	assert_int_equal(make("", &p, &err), -EINVAL);
	assert_int_equal(make(NULL, &p, &err), -EINVAL);
	assert_int_equal(make("missing.toml", &p, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "missing.toml"));

	/* a symlink pointing out of the directory */
	snprintf(outside, sizeof(outside), "%s.outside.toml", dir);
	{
		FILE *f = fopen(outside, "we");
		assert_non_null(f);
		fputs("[[turn]]\ntext = \"escaped\"\n", f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/link.toml", dir);
	assert_int_equal(symlink(outside, path), 0);
	assert_int_equal(make("link.toml", &p, &err), -EPERM);
	assert_non_null(strstr(err.msg, "outside the blueprint directory"));
	unlink(outside);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_play_turns),
		cmocka_unit_test(test_empty_script),
		cmocka_unit_test(test_bad_scripts),
		cmocka_unit_test(test_script_confined),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
