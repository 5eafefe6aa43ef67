/*
 * test-tighter.c - lev_policy_tighter(): the config a running run keeps
 * after config.toml changes is, field by field, the tighter of its own and
 * the new one.  One test per field, each with its loosening twin (a looser
 * new value leaves the run's as it was).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/strv.h"
#include "liblev/policy/tighter.h"

/* RUN := tighter(parse(OLD), parse(NEW)) */
static void tighten(const char *old, const char *new, struct lev_config *run)
{
	struct lev_config next;
	struct lev_err err = LEV_ERR_INIT;

	assert_int_equal(lev_config_parse(old, strlen(old), "old.toml", run, &err), 0);
	assert_int_equal(lev_config_parse(new, strlen(new), "new.toml", &next, &err), 0);
	lev_policy_tighter(run, &next);
	lev_config_release(&next);
}

static enum lev_verdict verdict_of(const struct lev_config *c, const char *tool)
{
	enum lev_verdict v = lev_policy_default_verdict(tool);

	for (size_t i = 0; i < c->tool_permissions.n; i++)
		if (!strcmp(c->tool_permissions.v[i].tool, tool))
			v = c->tool_permissions.v[i].verdict;
	return v;
}

static void test_permission_verdicts(void **state)
{
	struct lev_config c;

	(void)state;
	/* deny > ask > allow, whichever side says it */
	tighten("[tool_permissions]\nshell = \"allow\"\nwrite_file = \"deny\"\n",
		"[tool_permissions]\nshell = \"deny\"\nwrite_file = \"allow\"\n", &c);
	assert_int_equal(verdict_of(&c, "shell"), LEV_DENY);
	assert_int_equal(verdict_of(&c, "write_file"), LEV_DENY);
	lev_config_release(&c);
	/* a tool the new file adds as ask tightens a default allow */
	tighten("", "[tool_permissions]\nread_file = \"ask\"\n", &c);
	assert_int_equal(verdict_of(&c, "read_file"), LEV_ASK);
	lev_config_release(&c);
	/* a tool the new file drops falls back to its default, if that is stricter */
	tighten("[tool_permissions]\nshell = \"allow\"\n", "", &c);
	assert_int_equal(verdict_of(&c, "shell"), LEV_ASK);
	lev_config_release(&c);
	/* the twin: a loosening does nothing */
	tighten("[tool_permissions]\nshell = \"ask\"\n", "[tool_permissions]\nshell = \"allow\"\n",
		&c);
	assert_int_equal(verdict_of(&c, "shell"), LEV_ASK);
	lev_config_release(&c);
	/* spellings are one tool */
	tighten("[tool_permissions]\nshell = \"allow\"\n", "[tool_permissions]\nbash = \"deny\"\n",
		&c);
	assert_int_equal(verdict_of(&c, "shell"), LEV_DENY);
	lev_config_release(&c);
}

static void test_read_grants_intersected(void **state)
{
	struct lev_config c;

	(void)state;
	tighten("[security]\nread_paths = [\"/a\", \"/b\"]\n",
		"[security]\nread_paths = [\"/b\", \"/c\"]\n", &c);
	assert_int_equal(lev_strv_len(c.read_paths), 1);
	assert_string_equal(c.read_paths[0], "/b");
	lev_config_release(&c);
}

static void test_network_off_wins(void **state)
{
	struct lev_config c;

	(void)state;
	tighten("[sandbox]\nkind = \"namespace\"\nnetwork = true\n",
		"[sandbox]\nkind = \"namespace\"\nnetwork = false\n", &c);
	assert_true(c.sandbox.has_network);
	assert_false(c.sandbox.network);
	lev_config_release(&c);
	tighten("[sandbox]\nkind = \"namespace\"\nnetwork = false\n",
		"[sandbox]\nkind = \"namespace\"\nnetwork = true\n", &c);
	assert_false(c.sandbox.network);
	lev_config_release(&c);
	tighten("[security]\nallow_local_network = true\n", "", &c);
	assert_false(c.allow_local_network);
	lev_config_release(&c);
	tighten("", "[security]\nallow_local_network = true\n", &c);
	assert_false(c.allow_local_network);
	lev_config_release(&c);
}

static void test_sandbox_kind_stronger_wins(void **state)
{
	struct lev_config c;

	(void)state;
	tighten("[sandbox]\nkind = \"none\"\n", "[sandbox]\nkind = \"namespace\"\n", &c);
	assert_int_equal(c.sandbox.kind, LEV_SANDBOX_NAMESPACE);
	lev_config_release(&c);
	tighten("[sandbox]\nkind = \"namespace\"\n", "[sandbox]\nkind = \"none\"\n", &c);
	assert_int_equal(c.sandbox.kind, LEV_SANDBOX_NAMESPACE);
	lev_config_release(&c);
}

static void test_limits_lower_wins(void **state)
{
	struct lev_config c;

	(void)state;
	tighten("[limits]\nshell_timeout_secs = 100\nmax_iterations = 10\n",
		"[limits]\nshell_timeout_secs = 20\nmax_iterations = 30\nmax_run_write_bytes = 5\n",
		&c);
	assert_int_equal(c.limits.shell_timeout_secs, 20);
	assert_int_equal(c.limits.max_iterations, 10);
	/* unset ("no limit") loses to any limit */
	assert_int_equal(c.limits.max_run_write_bytes, 5);
	lev_config_release(&c);
	tighten("[limits]\nmax_run_write_bytes = 5\n", "", &c);
	assert_int_equal(c.limits.max_run_write_bytes, 5);
	lev_config_release(&c);
}

static void test_switches_off_wins(void **state)
{
	struct lev_config c;

	(void)state;
	tighten("[security]\nallow_seed_commands = true\nallow_blueprint_permissions = true\n"
		"[safe_commands]\ndefaults = true\n",
		"[security]\nallow_seed_commands = false\n[safe_commands]\ndefaults = false\n", &c);
	assert_false(c.allow_seed_commands);
	assert_false(c.allow_blueprint_permissions);
	assert_false(c.safe_defaults);
	lev_config_release(&c);
	/* taint tracking: on wins */
	tighten("taint_tracking = false\n", "taint_tracking = true\n", &c);
	assert_true(c.taint_tracking);
	lev_config_release(&c);
	tighten("taint_tracking = true\n", "taint_tracking = false\n", &c);
	assert_true(c.taint_tracking);
	lev_config_release(&c);
}

static void test_lists_intersected(void **state)
{
	struct lev_config c;

	(void)state;
	tighten("[safe_commands]\nshell = [\"make\", \"cargo test\"]\ntools = [\"web_fetch\"]\n"
		"[security]\nallow_env_vars = [\"A_TOKEN\", \"B_TOKEN\"]\n",
		"[safe_commands]\nshell = [\"make\"]\n[security]\nallow_env_vars = [\"B_TOKEN\"]\n",
		&c);
	assert_int_equal(lev_strv_len(c.safe_shell), 1);
	assert_string_equal(c.safe_shell[0], "make");
	assert_int_equal(lev_strv_len(c.safe_tools), 0);
	assert_int_equal(lev_strv_len(c.allow_env_vars), 1);
	assert_string_equal(c.allow_env_vars[0], "B_TOKEN");
	lev_config_release(&c);
}

static void test_shell_env_stricter_wins(void **state)
{
	struct lev_config c;

	(void)state;
	tighten("[security]\nshell_env = \"inherit\"\n", "[security]\nshell_env = \"strict\"\n",
		&c);
	assert_int_equal(c.shell_env, LEV_SHELL_ENV_STRICT);
	lev_config_release(&c);
	tighten("[security]\nshell_env = \"strict\"\n", "[security]\nshell_env = \"inherit\"\n",
		&c);
	assert_int_equal(c.shell_env, LEV_SHELL_ENV_STRICT);
	lev_config_release(&c);
	tighten("[security]\nshell_env = \"custom\"\nshell_env_withhold = [\"A\"]\n",
		"[security]\nshell_env = \"custom\"\nshell_env_withhold = [\"B\"]\n", &c);
	assert_int_equal(c.shell_env, LEV_SHELL_ENV_CUSTOM);
	assert_int_equal(lev_strv_len(c.shell_env_withhold), 2);
	lev_config_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_permission_verdicts),
		cmocka_unit_test(test_read_grants_intersected),
		cmocka_unit_test(test_network_off_wins),
		cmocka_unit_test(test_sandbox_kind_stronger_wins),
		cmocka_unit_test(test_limits_lower_wins),
		cmocka_unit_test(test_switches_off_wins),
		cmocka_unit_test(test_lists_intersected),
		cmocka_unit_test(test_shell_env_stricter_wins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
