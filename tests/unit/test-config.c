/*
 * test-config.c - config.toml model, loading rules and the data root.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "liblev/base/cleanup.h"
#include "liblev/conf/config.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/datadir.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static char tmpdir[] = "/tmp/lev-test-config.XXXXXX";

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return lev_rm_rf(tmpdir, NULL);
}

static char *write_tmp(const char *name, const char *text, mode_t mode)
{
	char *p = lev_path_join(tmpdir, name);
	int fd;

	unlink(p);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(lev_write_all(fd, text, strlen(text)), 0);
	close(fd);
	assert_int_equal(chmod(p, mode), 0);
	return p;
}

static int parse(const char *text, struct lev_config *c, struct lev_err *err)
{
	return lev_config_parse(text, strlen(text), "config.toml", c, err);
}

/* Parse TEXT, which must fail; the message must contain every NEEDLE. */
static void expect_error(const char *text, ...)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	const char *needle;
	va_list ap;

	memset(&c, 0x5a, sizeof(c));
	assert_true(parse(text, &c, &err) < 0);
	va_start(ap, text);
	while ((needle = va_arg(ap, const char *))) {
		if (!strstr(err.msg, needle))
			fail_msg("error '%s' does not contain '%s'", err.msg, needle);
	}
	va_end(ap);
	assert_null(strchr(err.msg, '\n'));
}

static void test_defaults(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *missing = lev_path_join(tmpdir, "nope.toml");

	(void)state;
	assert_int_equal(lev_config_load_file(missing, &c, &err), 0);
	assert_null(c.path);
	assert_false(c.taint_tracking);
	assert_true(c.allow_seed_commands);
	assert_false(c.allow_local_network);
	assert_false(c.allow_blueprint_read_paths);
	assert_false(c.allow_blueprint_safe_commands);
	assert_false(c.allow_blueprint_permissions);
	assert_int_equal(c.shell_env, LEV_SHELL_ENV_FILTERED);
	assert_int_equal(c.credential_store, LEV_CRED_FILE);
	assert_true(c.safe_defaults);
	assert_false(c.sandbox.present);
	assert_int_equal(c.tool_permissions.n, 0);
	assert_null(c.read_paths);
	assert_int_equal(c.limits.script_shell_timeout_secs, 60);
	assert_int_equal(c.limits.interaction_timeout_secs, 3600);
	assert_int_equal(c.limits.max_run_write_bytes, 0);
	assert_null(c.warnings);
	lev_config_release(&c);
}

/* [webhook]: Leviath's defaults, each key read and bounded, an unknown key refused */
static void test_webhook(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(parse("", &c, &err), 0);
	assert_int_equal(c.webhook.max_retries, 3);
	assert_int_equal(c.webhook.base_delay_ms, 500);
	assert_int_equal(c.webhook.max_delay_ms, 30000);
	assert_int_equal(c.webhook.timeout_secs, 10);
	lev_config_release(&c);
	assert_int_equal(parse("[webhook]\nmax_retries = 0\nbase_delay_ms = 0\n"
			       "max_delay_ms = 7\ntimeout_secs = 600\n", &c, &err), 0);
	assert_int_equal(c.webhook.max_retries, 0);
	assert_int_equal(c.webhook.base_delay_ms, 0);
	assert_int_equal(c.webhook.max_delay_ms, 7);
	assert_int_equal(c.webhook.timeout_secs, 600);
	assert_null(c.warnings);
	lev_config_release(&c);
	expect_error("[webhook]\nmax_retries = 101\n", "config.toml:2:", "webhook.max_retries",
		     NULL);
	expect_error("[webhook]\ntimeout_secs = 0\n", "webhook.timeout_secs", NULL);
	expect_error("[webhook]\ntimeout_secs = 601\n", "webhook.timeout_secs", NULL);
	expect_error("[webhook]\nmax_delay_ms = 3600001\n", "webhook.max_delay_ms", NULL);
	expect_error("[webhook]\nbase_delay_ms = -1\n", "webhook.base_delay_ms", NULL);
	expect_error("[webhook]\nmax_delay_ms = 100\nbase_delay_ms = 200\n",
		     "webhook.base_delay_ms (200) is above webhook.max_delay_ms (100)", NULL);
	expect_error("[webhook]\ntimeout = 5\n", "config.toml:2:1:",
		     "unknown key 'webhook.timeout'", NULL);
	expect_error("webhook = 3\n", "webhook", NULL);
}

static const char full[] =
	"taint_tracking = true\n"
	"[security]\n"
	"allowed_workdirs = [\"/srv/work\"]\n"
	"allow_seed_commands = false\n"
	"allow_local_network = true\n"
	"allow_env_vars = [\"RUST_LOG\"]\n"
	"allow_blueprint_read_paths = true\n"
	"allow_blueprint_safe_commands = true\n"
	"allow_blueprint_permissions = true\n"
	"shell_env = \"custom\"\n"
	"shell_env_withhold = [\"SECRET_X\"]\n"
	"read_paths = [\"~/docs\", \"glob:/data/**\"]\n"
	"credential_store = \"keychain\"\n"
	"[agent_read_paths.cto]\n"
	"allow = [\"~/.leviath/runs\"]\n"
	"[sandbox]\n"
	"kind = \"container\"\n"
	"image = \"debian:bookworm-slim\"\n"
	"engine = \"podman\"\n"
	"network = false\n"
	"mounts = [\"/opt/toolchain\"]\n"
	"on_unavailable = \"warn\"\n"
	"deny_read = [\"/secret\"]\n"
	"engine_args = [\"--ulimit\", \"nofile=1024:1024\"]\n"
	"timeout_secs = 30\n"
	"[tool_permissions]\n"
	"shell = \"ask\"\n"
	"write_file = \"DENY\"\n"
	"web_fetch = \"allow\"\n"
	"[agent_tool_permissions.coder]\n"
	"bash = \"allow\"\n"
	"[tool_script_permissions]\n"
	"http_post = \"deny\"\n"
	"shell = \"allow\"\n"
	"[safe_commands]\n"
	"defaults = false\n"
	"tools = [\"read_files\"]\n"
	"shell = [\"cargo test\", \"rg\"]\n"
	"[agent_safe_commands.coder]\n"
	"shell = [\"./gradlew\"]\n"
	"allow_blueprint = true\n"
	"[limits]\n"
	"script_shell_timeout_secs = 5\n"
	"interaction_timeout_secs = 10\n"
	"max_tool_call_write_bytes = 2147483648\n"
	"max_run_write_bytes = 10737418240\n"
	"[providers.local]\n"
	"kind = \"openai\"\n"
	"base_url = \"http://127.0.0.1:11434/v1\"\n"
	"api_key_env = \"OLLAMA_KEY\"\n"
	"model = \"qwen2.5\"\n";

static void test_every_key(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	enum lev_verdict v;
	const struct lev_provider_conf *p;

	(void)state;
	if (parse(full, &c, &err) < 0)
		fail_msg("%s", err.msg);
	assert_null(c.warnings);
	assert_true(c.taint_tracking);
	assert_string_equal(c.allowed_workdirs[0], "/srv/work");
	assert_false(c.allow_seed_commands);
	assert_true(c.allow_local_network);
	assert_string_equal(c.allow_env_vars[0], "RUST_LOG");
	assert_true(c.allow_blueprint_read_paths);
	assert_true(c.allow_blueprint_safe_commands);
	assert_true(c.allow_blueprint_permissions);
	assert_int_equal(c.shell_env, LEV_SHELL_ENV_CUSTOM);
	assert_string_equal(c.shell_env_withhold[0], "SECRET_X");
	assert_int_equal(lev_strv_len(c.read_paths), 2);
	assert_int_equal(c.credential_store, LEV_CRED_KEYCHAIN);
	assert_int_equal(c.n_agent_read_paths, 1);
	assert_string_equal(c.agent_read_paths[0].agent, "cto");
	assert_true(c.sandbox.present);
	assert_int_equal(c.sandbox.kind, LEV_SANDBOX_CONTAINER);
	assert_string_equal(c.sandbox.image, "debian:bookworm-slim");
	assert_string_equal(c.sandbox.engine, "podman");
	assert_true(c.sandbox.has_network);
	assert_false(c.sandbox.network);
	assert_string_equal(c.sandbox.mounts[0], "/opt/toolchain");
	assert_int_equal(c.sandbox.on_unavailable, LEV_ON_UNAVAILABLE_WARN);
	assert_string_equal(c.sandbox.deny_read[0], "/secret");
	assert_int_equal(lev_strv_len(c.sandbox_engine_args), 2);
	assert_int_equal(c.sandbox_timeout_secs, 30);
	assert_int_equal(c.tool_permissions.n, 3);
	assert_string_equal(c.tool_permissions.v[0].tool, "shell");	/* order kept */
	assert_true(lev_tool_perms_lookup(&c.tool_permissions, "write_file", &v));
	assert_int_equal(v, LEV_DENY);	/* case-insensitive */
	assert_true(lev_tool_perms_lookup(&c.tool_permissions, "bash", &v));
	assert_int_equal(v, LEV_ASK);	/* bash finds shell */
	assert_int_equal(c.script_permissions.http_post, LEV_SCRIPT_DENY);
	assert_int_equal(c.script_permissions.shell, LEV_SCRIPT_ALLOW);
	assert_int_equal(c.script_permissions.read_file, LEV_SCRIPT_INHERIT);
	assert_false(c.safe_defaults);
	assert_string_equal(c.safe_tools[0], "read_files");
	assert_int_equal(lev_strv_len(c.safe_shell), 2);
	assert_int_equal(c.n_agent_safe_commands, 1);
	assert_true(c.agent_safe_commands[0].allow_blueprint);
	assert_int_equal(c.limits.script_shell_timeout_secs, 5);
	assert_int_equal(c.limits.interaction_timeout_secs, 10);
	assert_int_equal(c.limits.max_tool_call_write_bytes, 2147483648ULL);
	assert_int_equal(c.limits.max_run_write_bytes, 10737418240ULL);
	p = lev_config_provider(&c, "local");
	assert_non_null(p);
	assert_int_equal(p->kind, LEV_PROVIDER_OPENAI);
	assert_string_equal(p->base_url, "http://127.0.0.1:11434/v1");
	assert_string_equal(p->api_key_env, "OLLAMA_KEY");
	assert_string_equal(p->model, "qwen2.5");
	assert_null(lev_config_provider(&c, "other"));
	lev_config_release(&c);
}

static void test_unknown_keys_warn_with_line(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(parse("colour = 1\n"
			       "[security]\n"
			       "allow_seed_comands = false\n"
			       "[frobnicate]\n"
			       "x = 1\n"
			       "[sandbox]\n"
			       "persist = true\n",
			       &c, &err),
			 0);
	assert_int_equal(lev_strv_len(c.warnings), 4);
	assert_string_equal(c.warnings[0], "config.toml:1: unknown key 'colour' at the top level");
	assert_string_equal(c.warnings[1],
			    "config.toml:3: unknown key 'allow_seed_comands' in [security]");
	assert_non_null(strstr(c.warnings[2], "'frobnicate'"));
	/* Leviath's key: known, and said to be not run */
	assert_string_equal(c.warnings[3], "config.toml:7: not run by lev: Leviath's "
					   "'sandbox.persist'; use a mount: every lev sandbox is "
					   "thrown away after its command");
	/* the misspelt key changed nothing: the default stands */
	assert_true(c.allow_seed_commands);
	lev_config_release(&c);
}

/* Leviath's flat [providers] form and [limits] names load. */
static void test_leviath_config(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(parse("default_provider = \"anthropic\"\n"
			       "[providers]\n"
			       "anthropic_api_key = \"sk-x\"\n"
			       "fallback_order = [\"anthropic/a\", \"openai/b\"]\n"
			       "[providers.mine]\n"
			       "kind = \"openai\"\n"
			       "[limits]\n"
			       "default_max_iterations = 7\n"
			       "max_concurrent_tools = 8\n",
			       &c, &err),
			 0);
	assert_int_equal(c.limits.max_iterations, 7);
	assert_int_equal(lev_strv_len(c.fallback_order), 2);
	assert_string_equal(c.fallback_order[1], "openai/b");
	assert_non_null(lev_config_provider(&c, "mine"));
	/* read now: default_provider, the flat key (its name, never its value) */
	assert_string_equal(c.default_provider, "anthropic");
	assert_non_null(lev_config_flat_provider(&c, "anthropic"));
	assert_true(lev_config_flat_provider(&c, "anthropic")->has_key);
	assert_int_equal(lev_strv_len(c.warnings), 1);
	assert_non_null(strstr(c.warnings[0], "'limits.max_concurrent_tools'"));
	lev_config_release(&c);

	/* default_model is a bare id: "<default_provider>/" is dropped, and said */
	assert_int_equal(parse("default_provider = \"ollama\"\n"
			       "default_model = \"ollama/qwen3:8b\"\n"
			       "request_timeout_secs = 90\n"
			       "ollama_base_url = \"http://gpu.lan:11434\"\n"
			       "openrouter_api_key = \"sk-or-1\"\n"
			       "[providers]\n"
			       "openai_base_url = \"https://gw.corp/v1\"\n",
			       &c, &err),
			 0);
	assert_string_equal(c.default_model, "qwen3:8b");
	assert_int_equal(c.request_timeout_secs, 90);
	assert_string_equal(lev_config_flat_provider(&c, "ollama")->base_url, "http://gpu.lan:11434");
	assert_string_equal(lev_config_flat_provider(&c, "openai")->base_url, "https://gw.corp/v1");
	assert_true(lev_config_flat_provider(&c, "openrouter")->has_key);
	assert_int_equal(lev_strv_len(c.warnings), 1);
	assert_non_null(strstr(c.warnings[0], "config.toml:2: default_model 'ollama/qwen3:8b' is read as 'qwen3:8b'"));
	lev_config_release(&c);
	/* a key with a space would be a header injection: refused, never echoed */
	assert_true(parse("[providers]\nopenai_api_key = \"sk x\"\n", &c, &err) < 0);
	assert_non_null(strstr(err.msg, "printable"));
	assert_null(strstr(err.msg, "sk x"));
	assert_true(parse("default_provider = \"Bad Name\"\n", &c, &err) < 0);
	assert_true(parse("[providers]\nFoo_api_key = \"k\"\n", &c, &err) < 0);

	assert_true(parse("[providers]\nanthropic_api_key = 3\n", &c, &err) < 0);
	assert_non_null(strstr(err.msg, "'providers.anthropic_api_key'"));
	assert_true(parse("[providers]\nfallback_order = [\"nomodel\"]\n", &c, &err) < 0);
	assert_non_null(strstr(err.msg, "provider/model"));
	assert_true(parse("[providers]\nfrob = \"x\"\n", &c, &err) < 0);
	assert_non_null(strstr(err.msg, "must be a table"));
}

static void test_wrong_types_are_errors(void **state)
{
	(void)state;
	expect_error("taint_tracking = \"yes\"\n", "config.toml:1:18:", "'taint_tracking'",
		     "boolean", NULL);
	expect_error("[security]\nallow_seed_commands = 1\n", "config.toml:2:",
		     "'security.allow_seed_commands'", "boolean", NULL);
	expect_error("[security]\nread_paths = \"~/x\"\n", "'security.read_paths'", "array", NULL);
	expect_error("[security]\nread_paths = [\"~/x\", 3]\n", "'security.read_paths[1]'",
		     "string", NULL);
	expect_error("security = 3\n", "'security'", "table", NULL);
	expect_error("[limits]\nmax_run_write_bytes = \"10G\"\n", "'limits.max_run_write_bytes'",
		     "integer", NULL);
	expect_error("[sandbox]\nnetwork = \"false\"\n", "'sandbox.network'", NULL);
}

static void test_invalid_enums_never_fail_open(void **state)
{
	(void)state;
	expect_error("[security]\nshell_env = \"loose\"\n", "config.toml:2:",
		     "filtered, strict, custom, inherit", "'loose'", NULL);
	expect_error("[security]\ncredential_store = \"vault\"\n", "file, keychain", NULL);
	expect_error("[tool_permissions]\nshell = \"allwo\"\n", "'tool_permissions.shell'",
		     "allow, ask, deny", NULL);
	expect_error("[tool_permissions]\nshell = true\n", "allow, ask, deny", NULL);
	expect_error("[agent_tool_permissions.x]\nshell = \"maybe\"\n",
		     "'agent_tool_permissions.x.shell'", NULL);
	expect_error("[sandbox]\nkind = \"vm\"\n", "none, namespace, container", NULL);
	expect_error("[sandbox]\non_unavailable = \"ignore\"\n", "error, warn", NULL);
	expect_error("[tool_script_permissions]\nshell = \"yes\"\n", "inherit, allow, deny", NULL);
	expect_error("[providers.x]\nkind = \"gpt\"\n", "openai, anthropic, script", NULL);
}

static void test_bounds_and_hostile_values(void **state)
{
	(void)state;
	expect_error("[limits]\nscript_shell_timeout_secs = 0\n", "between 1 and", NULL);
	expect_error("[limits]\ninteraction_timeout_secs = -5\n", "between", NULL);
	expect_error("[security]\nread_paths = [\"a\\u0000b\"]\n", "NUL byte", NULL);
	expect_error("[providers.x]\nmodel = \"m\"\n", "needs 'kind'", NULL);
	expect_error("[providers.x]\nkind = \"openai\"\napi_key = \"sk-1\"\n", "api_key_env",
		     NULL);
	expect_error("[security\n", "config.toml:1:", NULL);
	expect_error("taint_tracking = true\ntaint_tracking = false\n", "config.toml:2:", NULL);
}

static void test_odd_key_bytes_are_quoted_in_warnings(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(parse("\"a\\nb\\u0001'\" = 1\n", &c, &err), 0);
	assert_int_equal(lev_strv_len(c.warnings), 1);
	assert_null(strchr(c.warnings[0], '\n'));
	assert_non_null(strstr(c.warnings[0], "a\\x0ab\\x01\\x27"));
	lev_config_release(&c);
}

static void test_permission_checks_on_the_file(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *p = NULL;

	(void)state;
	p = write_tmp("config.toml", "taint_tracking = true\n", 0600);
	assert_int_equal(lev_config_load_file(p, &c, &err), 0);
	assert_true(c.taint_tracking);
	assert_string_equal(c.path, p);
	lev_config_release(&c);

	assert_int_equal(chmod(p, 0620), 0);
	assert_int_equal(lev_config_load_file(p, &c, &err), -EPERM);
	assert_non_null(strstr(err.msg, "writable by its group"));
	assert_non_null(strstr(err.msg, "chmod 600"));
	assert_non_null(strstr(err.msg, p));

	assert_int_equal(chmod(p, 0602), 0);
	assert_int_equal(lev_config_load_file(p, &c, &err), -EPERM);
	assert_non_null(strstr(err.msg, "writable by everyone"));

	assert_int_equal(chmod(p, 0644), 0);	/* readable by others is fine */
	assert_int_equal(lev_config_load_file(p, &c, &err), 0);
	lev_config_release(&c);
}

/* Leviath's [providers] NAME_api_key: used, and only from a file nobody else can read. */
static void test_flat_key_in_config(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	enum lev_key_source src = LEV_KEY_NONE;
	_cleanup_free_ char *p = NULL;
	char *key = NULL;

	(void)state;
	p = write_tmp("keyed.toml", "openrouter_api_key = \"sk-or-top\"\n"
		      "[providers]\nopenai_api_key = \"sk-flat-1\"\n", 0600);
	assert_int_equal(lev_config_load_file(p, &c, &err), 0);
	lev_config_release(&c);
	/* the config's key comes before the variable, as in Leviath */
	setenv("LEV_TEST_FLAT", "sk-env-1", 1);
	assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_FLAT", p, NULL, false, &key, &src, &err), 0);
	assert_string_equal(key, "sk-flat-1");
	assert_int_equal(src, LEV_KEY_CONFIG);
	lev_secret_free(key);
	assert_int_equal(lev_api_key_resolve("openrouter", NULL, p, NULL, false, &key, &src, &err), 0);
	assert_string_equal(key, "sk-or-top");
	lev_secret_free(key);
	/* a provider without a flat key falls back to its variable */
	assert_int_equal(lev_api_key_resolve("anthropic", "LEV_TEST_FLAT", p, NULL, false, &key, &src, &err), 0);
	assert_string_equal(key, "sk-env-1");
	assert_int_equal(src, LEV_KEY_ENV);
	lev_secret_free(key);
	unsetenv("LEV_TEST_FLAT");

	/* readable by others: the config is refused whole, with the fix, never the key */
	assert_int_equal(chmod(p, 0644), 0);
	assert_int_equal(lev_config_load_file(p, &c, &err), -EPERM);
	assert_non_null(strstr(err.msg, "holds an API key ('openrouter_api_key')"));
	assert_non_null(strstr(err.msg, "chmod 600"));
	assert_null(strstr(err.msg, "sk-"));
	assert_true(lev_api_key_resolve("openai", NULL, p, NULL, false, &key, &src, &err) < 0);
	assert_null(strstr(err.msg, "sk-"));
}

static void test_not_a_regular_file(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *fifo = lev_path_join(tmpdir, "fifo.toml");

	(void)state;
	assert_true(lev_config_load_file(tmpdir, &c, &err) < 0);
	assert_non_null(strstr(err.msg, "not a regular file"));
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_true(lev_config_load_file(fifo, &c, &err) < 0);	/* and does not block */
	assert_non_null(strstr(err.msg, "not a regular file"));
}

static void test_size_cap(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	size_t n = LEV_CONFIG_MAX_FILE + 10;
	_cleanup_free_ char *big = xmalloc(n + 1);
	_cleanup_free_ char *p = NULL;

	(void)state;
	memset(big, '#', n);
	big[n] = '\0';
	p = write_tmp("big.toml", big, 0600);
	assert_int_equal(lev_config_load_file(p, &c, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "too large"));
}

static void test_permissions_for_agent(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_tool_perms p;
	enum lev_verdict v;

	(void)state;
	assert_int_equal(parse("[tool_permissions]\n"
			       "shell = \"deny\"\n"
			       "write_file = \"ask\"\n"
			       "[agent_tool_permissions.coder]\n"
			       "bash = \"allow\"\n"
			       "edit_file = \"deny\"\n",
			       &c, &err),
			 0);
	lev_config_permissions_for_agent(&c, "coder", &p);
	/* the agent's bash replaced the global shell: one entry, allow */
	assert_true(lev_tool_perms_lookup(&p, "shell", &v));
	assert_int_equal(v, LEV_ALLOW);
	assert_true(lev_tool_perms_lookup(&p, "write_file", &v));
	assert_int_equal(v, LEV_ASK);
	assert_true(lev_tool_perms_lookup(&p, "edit_file", &v));
	assert_int_equal(v, LEV_DENY);
	assert_int_equal(p.n, 3);
	lev_tool_perms_release(&p);

	lev_config_permissions_for_agent(&c, "other", &p);
	assert_true(lev_tool_perms_lookup(&p, "bash", &v));
	assert_int_equal(v, LEV_DENY);
	assert_false(lev_tool_perms_lookup(&p, "edit_file", &v));
	lev_tool_perms_release(&p);
	lev_config_release(&c);
}

static void test_two_spellings_take_the_stricter(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	enum lev_verdict v;

	(void)state;
	assert_int_equal(parse("[tool_permissions]\nshell = \"allow\"\nbash = \"deny\"\n", &c, &err),
			 0);
	assert_true(lev_tool_perms_lookup(&c.tool_permissions, "shell", &v));
	assert_int_equal(v, LEV_DENY);
	lev_config_release(&c);
}

static void test_read_path_grants_and_safe_lists(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	char **g;
	char *bp_shell[] = { (char *)"make check", NULL };
	char **tools = NULL, **shell = NULL;
	bool defaults = false;

	(void)state;
	assert_int_equal(parse("[security]\n"
			       "read_paths = [\"/a\"]\n"
			       "[agent_read_paths.cto]\n"
			       "allow = [\"/b\", \"glob:/c/**\"]\n"
			       "[safe_commands]\n"
			       "shell = [\"rg\"]\n"
			       "[agent_safe_commands.cto]\n"
			       "shell = [\"./gradlew\"]\n"
			       "allow_blueprint = true\n",
			       &c, &err),
			 0);
	g = lev_config_read_path_grants_for_agent(&c, "cto");
	assert_int_equal(lev_strv_len(g), 3);
	assert_string_equal(g[0], "/a");
	assert_string_equal(g[1], "/b");
	assert_string_equal(g[2], "glob:/c/**");
	lev_strv_free(g);
	g = lev_config_read_path_grants_for_agent(&c, "other");
	assert_int_equal(lev_strv_len(g), 1);
	lev_strv_free(g);

	lev_config_safe_commands_for_agent(&c, "cto", NULL, bp_shell, &defaults, &tools, &shell);
	assert_true(defaults);
	assert_null(tools);
	assert_int_equal(lev_strv_len(shell), 3);
	assert_string_equal(shell[0], "rg");
	assert_string_equal(shell[1], "./gradlew");
	assert_string_equal(shell[2], "make check");
	lev_strv_free(shell);

	/* another agent: no agent entry, the blueprint's list is not honoured */
	lev_config_safe_commands_for_agent(&c, "other", NULL, bp_shell, &defaults, &tools, &shell);
	assert_int_equal(lev_strv_len(shell), 1);
	lev_strv_free(shell);
	lev_config_release(&c);
}

static void test_datadir(void **state)
{
	_cleanup_free_ char *root = NULL;
	_cleanup_free_ char *cfg = NULL;
	_cleanup_free_ char *agent = NULL;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	setenv("LEVIATH_HOME", "/srv/lev", 1);
	unsetenv("LEVIATH_CONFIG_PATH");
	assert_int_equal(lev_datadir_root(&root, &err), 0);
	assert_string_equal(root, "/srv/lev/.leviath");
	assert_int_equal(lev_datadir_config_path(&cfg, &err), 0);
	assert_string_equal(cfg, "/srv/lev/.leviath/config.toml");
	free(cfg);
	setenv("LEVIATH_CONFIG_PATH", "/etc/x.toml", 1);
	assert_int_equal(lev_datadir_config_path(&cfg, &err), 0);
	assert_string_equal(cfg, "/etc/x.toml");
	assert_int_equal(lev_datadir_agent_dir("demo", &agent, &err), 0);
	assert_string_equal(agent, "/srv/lev/.leviath/agents/demo");
	assert_int_equal(lev_datadir_agent_dir("../x", &root, &err), -EINVAL);

	free(root);
	root = NULL;
	setenv("LEVIATH_HOME", "relative", 1);
	assert_int_equal(lev_datadir_root(&root, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "absolute"));
	setenv("HOME", "/home/u", 1);
	unsetenv("LEVIATH_HOME");
	assert_int_equal(lev_datadir_root(&root, &err), 0);
	assert_string_equal(root, "/home/u/.leviath");
	unsetenv("LEVIATH_CONFIG_PATH");
}

static void test_agent_names(void **state)
{
	(void)state;
	assert_true(lev_agent_name_valid("demo"));
	assert_true(lev_agent_name_valid("code-review_2.1"));
	assert_false(lev_agent_name_valid(""));
	assert_false(lev_agent_name_valid("."));
	assert_false(lev_agent_name_valid(".."));
	assert_false(lev_agent_name_valid(".hidden"));
	assert_false(lev_agent_name_valid("-rf"));
	assert_false(lev_agent_name_valid("a/b"));
	assert_false(lev_agent_name_valid("a b"));
	assert_false(lev_agent_name_valid("caf\xc3\xa9"));
	assert_false(lev_agent_name_valid(NULL));
	assert_true(lev_agent_name_valid(
		"a123456789012345678901234567890123456789012345678901234567890123"));
	assert_false(lev_agent_name_valid(
		"a1234567890123456789012345678901234567890123456789012345678901234"));
}

static void test_web_search_endpoint(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(parse("[tools.web_search]\nendpoint = \"https://search.example/search\"\n",
			       &c, &err), 0);
	assert_string_equal(c.web_search_endpoint, "https://search.example/search");
	lev_config_release(&c);
	assert_int_equal(parse("", &c, &err), 0);
	assert_null(c.web_search_endpoint);
	lev_config_release(&c);
	expect_error("[tools.web_search]\nendpoint = \"file:///etc/passwd\"\n",
		     "config.toml:2:", "http:// or https://", NULL);
	expect_error("[tools.web_search]\nendpoint = 3\n", "config.toml:2:", NULL);
}

static void test_mcp_servers(void **state)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	const struct lev_mcp_server_conf *m;

	(void)state;
	assert_int_equal(parse("[[mcp_servers]]\nname = \"fs\"\ncommand = \"srv\"\n"
			       "args = [\"-y\", \"x\"]\nenv = { A = \"1\" }\nsandbox = \"none\"\n"
			       "[[mcp_servers]]\nname = \"remote\"\nurl = \"https://mcp.example/\"\n"
			       "headers = { Authorization = \"Bearer ${TOK}\" }\ntimeout_secs = 5\n",
			       &c, &err), 0);
	assert_int_equal(c.n_mcp_servers, 2);
	m = lev_config_mcp_server(&c, "fs");
	assert_non_null(m);
	assert_string_equal(m->command, "srv");
	assert_string_equal(m->args[1], "x");
	assert_string_equal(m->env[0], "A=1");
	assert_true(m->sandbox_none);
	assert_int_equal(m->timeout_secs, 60);
	assert_int_equal(m->max_result_bytes, 1 << 20);
	m = lev_config_mcp_server(&c, "remote");
	assert_string_equal(m->headers[0], "Authorization: Bearer ${TOK}");
	assert_int_equal(m->timeout_secs, 5);
	assert_false(m->sandbox_none);
	lev_config_release(&c);

	expect_error("[[mcp_servers]]\ncommand = \"x\"\n", "config.toml:1:", "needs 'name'", NULL);
	expect_error("[[mcp_servers]]\nname = \"a b\"\ncommand = \"x\"\n", "config.toml:1:",
		     "mcp_servers[0].name", NULL);
	expect_error("[[mcp_servers]]\nname = \"a__b\"\ncommand = \"x\"\n", "'__'", NULL);
	expect_error("[[mcp_servers]]\nname = \"a\"\n", "either 'command'", NULL);
	expect_error("[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h/\"\n",
		     "not both", NULL);
	expect_error("[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\n"
		     "[[mcp_servers]]\nname = \"a\"\ncommand = \"y\"\n",
		     "config.toml:4:", "configured twice", NULL);
	expect_error("[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\nsandbox = \"off\"\n",
		     "config.toml:4:", "inherit, none", NULL);
	expect_error("[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\ntimeout_secs = 0\n",
		     "config.toml:4:", NULL);
	expect_error("[[mcp_servers]]\nname = \"a\"\nurl = \"ftp://h/\"\n", "http://", NULL);
	expect_error("[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\nenv = { \"A=B\" = \"1\" }\n",
		     "not a valid variable name", NULL);
	expect_error("mcp_servers = 3\n", "config.toml:1:", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_unknown_keys_warn_with_line),
		cmocka_unit_test(test_wrong_types_are_errors),
		cmocka_unit_test(test_leviath_config),
		cmocka_unit_test(test_invalid_enums_never_fail_open),
		cmocka_unit_test(test_bounds_and_hostile_values),
		cmocka_unit_test(test_odd_key_bytes_are_quoted_in_warnings),
		cmocka_unit_test(test_permission_checks_on_the_file),
		cmocka_unit_test(test_flat_key_in_config),
		cmocka_unit_test(test_not_a_regular_file),
		cmocka_unit_test(test_size_cap),
		cmocka_unit_test(test_permissions_for_agent),
		cmocka_unit_test(test_two_spellings_take_the_stricter),
		cmocka_unit_test(test_read_path_grants_and_safe_lists),
		cmocka_unit_test(test_datadir),
		cmocka_unit_test(test_agent_names),
		cmocka_unit_test(test_web_search_endpoint),
		cmocka_unit_test(test_mcp_servers),
		cmocka_unit_test(test_webhook),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
