/*
 * test-envfilter.c - [security] shell_env (leviath-spec §3.8): which
 * variables a sandboxed command loses.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/policy/envfilter.h"
#include "liblev/base/strv.h"

static void test_credential_shaped_names(void **state)
{
	static const char *const yes[] = {
		"GITHUB_TOKEN", "MY_SECRET", "DB_PASSWORD", "PASSWD", "GPG_PASSPHRASE",
		"GOOGLE_APPLICATION_CREDENTIALS", "OPENAI_APIKEY", "OPENAI_API_KEY",
		"AWS_ACCESS_KEY_ID", "SSH_PRIVATE_KEY", "SOME_KEY", "GH_PAT", "SESSION_ID",
		"COOKIE_JAR", "HTTP_AUTH", "BEARER", "REQUEST_SIGNATURE", "SIGNING_CERT", "SENTRY_DSN",
		"NETRC", "KUBECONFIG", "DATABASE_URL", "DATABASE_DSN", "REDIS_URL", "MONGO_URL",
		"MONGODB_URI", "AMQP_URL", "SSH_AUTH_SOCK", "LEVIATH_HOME", "AWS_REGION",
		"AZURE_TENANT", "GCP_PROJECT", "github_token", "Aws_Profile", "database_url",
	};
	static const char *const no[] = {
		"PATH", "HOME", "LANG", "TERM", "EDITOR", "SHELL", "USER", "PWD", "LC_ALL",
		"TMPDIR", "CARGO_HOME", "DATABASE", "REDIS_HOST", "GOPATH", "NODE_ENV",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		if (!lev_env_name_sensitive(yes[i])) {
			print_error("'%s' should be sensitive\n", yes[i]);
			fail();
		}
	for (i = 0; i < sizeof(no) / sizeof(*no); i++)
		if (lev_env_name_sensitive(no[i])) {
			print_error("'%s' should not be sensitive\n", no[i]);
			fail();
		}
}

static void test_filtered_keeps_ssh_auth_sock_only(void **state)
{
	struct lev_envfilter f = LEV_ENVFILTER_INIT;

	(void)state;
	assert_true(lev_envfilter_withholds(&f, "GITHUB_TOKEN"));
	assert_true(lev_envfilter_withholds(&f, "AWS_PROFILE"));
	assert_true(lev_envfilter_withholds(&f, "KUBECONFIG"));
	assert_false(lev_envfilter_withholds(&f, "SSH_AUTH_SOCK"));
	assert_false(lev_envfilter_withholds(&f, "PATH"));
}

static void test_strict_withholds_ssh_auth_sock(void **state)
{
	struct lev_envfilter f = { LEV_SHELL_ENV_STRICT, NULL, NULL };

	(void)state;
	assert_true(lev_envfilter_withholds(&f, "SSH_AUTH_SOCK"));
	assert_true(lev_envfilter_withholds(&f, "GITHUB_TOKEN"));
	assert_false(lev_envfilter_withholds(&f, "HOME"));
}

static void test_custom_is_exactly_the_list(void **state)
{
	char *withhold[] = { (char *)"PATH", (char *)"my_var", NULL };
	struct lev_envfilter f = { LEV_SHELL_ENV_CUSTOM, withhold, NULL };

	(void)state;
	assert_true(lev_envfilter_withholds(&f, "PATH"));
	assert_true(lev_envfilter_withholds(&f, "MY_VAR"));
	assert_false(lev_envfilter_withholds(&f, "GITHUB_TOKEN"));
	assert_false(lev_envfilter_withholds(&f, "MY_VAR2"));
}

static void test_inherit_withholds_nothing(void **state)
{
	char *allow[] = { (char *)"X", NULL };
	struct lev_envfilter f = { LEV_SHELL_ENV_INHERIT, NULL, allow };

	(void)state;
	assert_false(lev_envfilter_withholds(&f, "GITHUB_TOKEN"));
	assert_false(lev_envfilter_withholds(&f, "AWS_SECRET_ACCESS_KEY"));
}

static void test_shell_startup_variables_go_in_every_mode(void **state)
{
	char *allow[] = { (char *)"BASH_ENV", (char *)"IFS", NULL };
	static const enum lev_shell_env modes[] = {
		LEV_SHELL_ENV_INHERIT, LEV_SHELL_ENV_CUSTOM, LEV_SHELL_ENV_FILTERED,
		LEV_SHELL_ENV_STRICT,
	};
	char *envp[] = { (char *)"BASH_ENV=/tmp/x", (char *)"BASH_FUNC_ls%%=() { id; }",
			 (char *)"IFS=x", (char *)"PROMPT_COMMAND=id", (char *)"HOME=/h", NULL };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct lev_envfilter f = { modes[i], NULL, allow };
		char **kept = lev_envfilter_apply(&f, envp);

		assert_non_null(kept);
		assert_string_equal(kept[0], "HOME=/h");
		assert_null(kept[1]);
		lev_strv_free(kept);
	}
	assert_false(lev_env_name_shell_startup("BASH_ENVX"));
	assert_false(lev_env_name_shell_startup("PATH"));
}

static void test_allow_env_vars_win_in_every_mode(void **state)
{
	char *allow[] = { (char *)"github_token", (char *)"PATH", NULL };
	char *withhold[] = { (char *)"PATH", NULL };
	struct lev_envfilter f = { LEV_SHELL_ENV_STRICT, NULL, allow };

	(void)state;
	assert_false(lev_envfilter_withholds(&f, "GITHUB_TOKEN"));	/* case-insensitive */
	assert_true(lev_envfilter_withholds(&f, "GITLAB_TOKEN"));	/* exact, no wildcard */
	f.mode = LEV_SHELL_ENV_FILTERED;
	assert_false(lev_envfilter_withholds(&f, "GITHUB_TOKEN"));
	f.mode = LEV_SHELL_ENV_CUSTOM;
	f.withhold = withhold;
	assert_false(lev_envfilter_withholds(&f, "PATH"));
}

static void test_unknown_mode_is_strict(void **state)
{
	struct lev_envfilter f = { (enum lev_shell_env)99, NULL, NULL };

	(void)state;
	assert_true(lev_envfilter_withholds(&f, "SSH_AUTH_SOCK"));
}

static void test_apply_keeps_order_and_drops_malformed(void **state)
{
	char *env[] = {
		(char *)"PATH=/usr/bin", (char *)"GITHUB_TOKEN=ghp_x", (char *)"NOEQUALS",
		(char *)"=nameless", (char *)"HOME=/home/me", (char *)"AWS_SECRET_ACCESS_KEY=k",
		(char *)"EMPTY=", NULL,
	};
	struct lev_envfilter f = LEV_ENVFILTER_INIT;
	char **out;

	(void)state;
	out = lev_envfilter_apply(&f, env);
	assert_int_equal(lev_strv_len(out), 3);
	assert_string_equal(out[0], "PATH=/usr/bin");
	assert_string_equal(out[1], "HOME=/home/me");
	assert_string_equal(out[2], "EMPTY=");
	lev_strv_free(out);
	assert_null(lev_envfilter_apply(&f, NULL));
}

static void test_absurdly_long_names_are_withheld(void **state)
{
	char *name = malloc(400);
	char *env[2];
	struct lev_envfilter f = LEV_ENVFILTER_INIT;
	char **out;

	(void)state;
	memset(name, 'A', 398);
	name[398] = '=';
	name[399] = '\0';
	env[0] = name;
	env[1] = NULL;
	name[398] = '\0';
	assert_true(lev_env_name_sensitive(name));	/* too long to judge: sensitive */
	name[398] = '=';
	out = lev_envfilter_apply(&f, env);
	assert_null(out);
	f.mode = LEV_SHELL_ENV_INHERIT;
	out = lev_envfilter_apply(&f, env);
	assert_int_equal(lev_strv_len(out), 1);
	lev_strv_free(out);
	free(name);
}

static void test_parse_and_names(void **state)
{
	enum lev_shell_env m;

	(void)state;
	assert_int_equal(lev_shell_env_parse("Strict", &m), 0);
	assert_int_equal(m, LEV_SHELL_ENV_STRICT);
	assert_int_equal(lev_shell_env_parse("inherit", &m), 0);
	assert_int_equal(m, LEV_SHELL_ENV_INHERIT);
	assert_int_equal(lev_shell_env_parse("everything", &m), -EINVAL);
	assert_int_equal(lev_shell_env_parse(NULL, &m), -EINVAL);
	assert_string_equal(lev_shell_env_name(LEV_SHELL_ENV_CUSTOM), "custom");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_credential_shaped_names),
		cmocka_unit_test(test_shell_startup_variables_go_in_every_mode),
		cmocka_unit_test(test_filtered_keeps_ssh_auth_sock_only),
		cmocka_unit_test(test_strict_withholds_ssh_auth_sock),
		cmocka_unit_test(test_custom_is_exactly_the_list),
		cmocka_unit_test(test_inherit_withholds_nothing),
		cmocka_unit_test(test_allow_env_vars_win_in_every_mode),
		cmocka_unit_test(test_unknown_mode_is_strict),
		cmocka_unit_test(test_apply_keeps_order_and_drops_malformed),
		cmocka_unit_test(test_absurdly_long_names_are_withheld),
		cmocka_unit_test(test_parse_and_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
