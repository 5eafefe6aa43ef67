/*
 * test-blueprint.c - the agent.leviath model and the agent store.
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

#include "liblev/conf/agentstore.h"
#include "liblev/conf/blueprint.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/datadir.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static char tmpdir[] = "/tmp/lev-test-blueprint.XXXXXX";

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	setenv("LEVIATH_HOME", tmpdir, 1);
	unsetenv("LEVIATH_CONFIG_PATH");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return lev_rm_rf(tmpdir, NULL);
}

#define AGENT "[agent]\nname = \"t\"\n"
#define STAGE "[stages.main]\n"

static struct lev_blueprint *parse_ok(const char *text)
{
	struct lev_blueprint *bp = NULL;
	struct lev_err err = LEV_ERR_INIT;

	if (lev_blueprint_parse(text, strlen(text), "agent.leviath", "/bp", &bp, &err) < 0)
		fail_msg("unexpected error: %s", err.msg);
	return bp;
}

/* TEXT must fail; the message must contain every NEEDLE and be one line. */
static void expect_error(const char *text, ...)
{
	struct lev_blueprint *bp = NULL;
	struct lev_err err = LEV_ERR_INIT;
	const char *needle;
	va_list ap;

	if (lev_blueprint_parse(text, strlen(text), "agent.leviath", "/bp", &bp, &err) == 0)
		fail_msg("parsed, but should not have:\n%s", text);
	assert_null(bp);
	va_start(ap, text);
	while ((needle = va_arg(ap, const char *)))
		if (!strstr(err.msg, needle))
			fail_msg("error '%s' does not contain '%s'", err.msg, needle);
	va_end(ap);
	assert_null(strchr(err.msg, '\n'));
}

static void test_minimal(void **state)
{
	struct lev_blueprint *bp = parse_ok(AGENT STAGE "description = \"d\"\n");

	(void)state;
	assert_string_equal(bp->name, "t");
	assert_string_equal(bp->version, "0.1.0");
	assert_string_equal(bp->description, "");
	assert_string_equal(bp->entry_stage, "main");
	assert_int_equal(bp->n_stages, 1);
	assert_int_equal(bp->stages[0].mode, LEV_MODE_AUTONOMOUS);
	assert_true(bp->default_regions);
	assert_int_equal(bp->n_regions, 2);
	assert_string_equal(bp->regions[0].name, "system");
	assert_int_equal(bp->regions[0].kind, LEV_REGION_PINNED);
	assert_string_equal(bp->regions[1].name, "conversation");
	assert_int_equal(bp->regions[1].kind, LEV_REGION_SLIDING_WINDOW);
	assert_int_equal(bp->regions[1].max_items, 10);
	assert_false(bp->has_security);
	assert_false(lev_blueprint_wants_taint(bp));
	assert_false(bp->sandbox.present);
	assert_false(bp->has_read_paths);
	assert_null(bp->warnings);
	lev_blueprint_free(bp);
}

static const char full[] =
	"[agent]\n"
	"name = \"reviewer\"\n"
	"version = \"1.2.0\"\n"
	"description = \"reviews code\"\n"
	"entry_stage = \"review\"\n"
	"[tool_permissions]\n"
	"read_file = \"allow\"\n"
	"bash = \"Ask\"\n"
	"[stages.plan]\n"
	"mode = \"interactive\"\n"
	"model = \"anthropic/claude-sonnet-4-6\"\n"
	"next = \"review\"\n"
	"[stages.review]\n"
	"description = \"look at the diff\"\n"
	"mode = \"output\"\n"
	"model = { provider = \"script\", script = \"turns/review.toml\", max_tokens = 1000, "
	"temperature = 0.5 }\n"
	"available_tools = [\"read_file\", \"bash\", \"shell\", \"list_dir\"]\n"
	"required_tools = [\"bash\"]\n"
	"system_prompt = \"\"\"\nbe careful\n\"\"\"\n"
	"max_iterations = 12\n"
	"allow_complete = true\n"
	"tool_permissions = { shell = \"deny\" }\n"
	"security = {}\n"
	"[stages.review.sandbox]\n"
	"kind = \"container\"\n"
	"image = \"debian:bookworm-slim\"\n"
	"engine = \"/tmp/evil\"\n"
	"network = false\n"
	"mount = [\"/a\"]\n"
	"mounts = [\"/b\", \"/a\"]\n"
	"on_unavailable = \"warn\"\n"
	"[stages.review.transitions.plan]\n"
	"hint = \"go back\"\n"
	"condition = \"error\"\n"
	"[context.regions]\n"
	"task = { kind = \"pinned\", budget = \"5%\", required = true, seed = \"task\", "
	"required_message = \"give --task\" }\n"
	"files = { kind = \"pinned\", budget = \"3%\", seed = { command = \"git ls-files\" } }\n"
	"docs = { seed = { files = [\"README.md\", \"docs/a.md\"] } }\n"
	"one = { seed = { files = \"x.md\" } }\n"
	"src = { seed = { glob = \"src/**/*.c\" } }\n"
	"lit = { seed = { literal = \"hello\" } }\n"
	"ls = { seed = { tool = \"list_dir\", args = { path = \".\", depth = 2 } } }\n"
	"conv = { kind = \"sliding_window\", max_items = 20, max_tokens = 9000 }\n"
	"[security]\n"
	"[sandbox]\n"
	"kind = \"namespace\"\n"
	"[read_paths]\n"
	"allow = [\"~/.leviath/runs\", \"../shared\", \"glob:~/design/**\", \"regex:/data/.*\"]\n"
	"[safe_commands]\n"
	"tools = [\"read_files\"]\n"
	"shell = [\"make check\"]\n"
	"[tool_script_permissions]\n"
	"shell = \"deny\"\n"
	"http_get = \"allow\"\n";

static void test_full(void **state)
{
	struct lev_blueprint *bp = parse_ok(full);
	const struct lev_stage *plan, *review;
	const struct lev_region *r;
	enum lev_verdict v;

	(void)state;
	assert_string_equal(bp->version, "1.2.0");
	assert_string_equal(bp->description, "reviews code");
	assert_string_equal(bp->entry_stage, "review");
	assert_int_equal(bp->n_stages, 2);
	assert_string_equal(bp->stages[0].name, "plan");	/* document order */
	assert_string_equal(bp->stages[1].name, "review");

	plan = lev_blueprint_stage(bp, "plan");
	assert_int_equal(plan->mode, LEV_MODE_INTERACTIVE);
	assert_string_equal(plan->model.provider, "anthropic");
	assert_string_equal(plan->model.model, "claude-sonnet-4-6");
	assert_string_equal(plan->next, "review");
	assert_false(plan->sandbox.present);
	assert_ptr_equal(lev_blueprint_stage_sandbox(bp, plan), &bp->sandbox);

	review = lev_blueprint_stage(bp, "review");
	assert_int_equal(review->mode, LEV_MODE_OUTPUT);
	assert_true(review->require_output);
	assert_true(review->allow_complete);
	assert_string_equal(review->model.provider, "script");
	assert_string_equal(review->model.script, "turns/review.toml");
	assert_int_equal(review->model.max_tokens, 1000);
	assert_true(review->model.has_temperature);
	/* bash and shell are one tool; output mode adds submit_output */
	assert_int_equal(lev_strv_len(review->available_tools), 4);
	assert_string_equal(review->available_tools[0], "read_file");
	assert_string_equal(review->available_tools[1], "shell");
	assert_string_equal(review->available_tools[2], "list_dir");
	assert_string_equal(review->available_tools[3], "submit_output");
	assert_string_equal(review->required_tools[0], "shell");
	assert_string_equal(review->system_prompt, "be careful\n");
	assert_int_equal(review->max_iterations, 12);
	assert_true(review->has_security);
	assert_true(review->taint_tracking);
	assert_int_equal(review->n_transitions, 1);
	assert_string_equal(review->transitions[0].target, "plan");
	assert_string_equal(review->transitions[0].hint, "go back");
	assert_int_equal(review->transitions[0].when, LEV_WHEN_ERROR);

	/* stage sandbox: both spellings read, engine dropped with a warning */
	assert_true(review->sandbox.present);
	assert_int_equal(review->sandbox.kind, LEV_SANDBOX_CONTAINER);
	assert_null(review->sandbox.engine);
	assert_false(review->sandbox.network);
	assert_int_equal(lev_strv_len(review->sandbox.mounts), 2);
	assert_string_equal(review->sandbox.mounts[0], "/a");
	assert_string_equal(review->sandbox.mounts[1], "/b");
	assert_int_equal(review->sandbox.on_unavailable, LEV_ON_UNAVAILABLE_WARN);
	assert_ptr_equal(lev_blueprint_stage_sandbox(bp, review), &review->sandbox);
	assert_int_equal(lev_strv_len(bp->warnings), 1);
	assert_non_null(strstr(bp->warnings[0], "engine"));
	assert_non_null(strstr(bp->warnings[0], "agent.leviath:"));

	/* permissions: stage over agent, any spelling */
	assert_true(lev_blueprint_tool_verdict(bp, review, "bash", &v));
	assert_int_equal(v, LEV_DENY);
	assert_true(lev_blueprint_tool_verdict(bp, plan, "shell", &v));
	assert_int_equal(v, LEV_ASK);
	assert_true(lev_blueprint_tool_verdict(bp, plan, "read_file", &v));
	assert_int_equal(v, LEV_ALLOW);
	assert_false(lev_blueprint_tool_verdict(bp, plan, "write_file", &v));

	/* regions and every seed form */
	assert_false(bp->default_regions);
	assert_int_equal(bp->n_regions, 8);
	r = lev_blueprint_region(bp, "task");
	assert_int_equal(r->kind, LEV_REGION_PINNED);
	assert_int_equal(r->budget_pct, 5);
	assert_true(r->required);
	assert_int_equal(r->seed.kind, LEV_SEED_CALLER);
	assert_string_equal(r->seed.value, "task");
	assert_string_equal(r->required_message, "give --task");
	r = lev_blueprint_region(bp, "files");
	assert_int_equal(r->seed.kind, LEV_SEED_COMMAND);
	assert_string_equal(r->seed.value, "git ls-files");
	r = lev_blueprint_region(bp, "docs");
	assert_int_equal(r->kind, LEV_REGION_TEMPORARY);	/* the default kind */
	assert_int_equal(r->seed.kind, LEV_SEED_FILES);
	assert_int_equal(lev_strv_len(r->seed.list), 2);
	r = lev_blueprint_region(bp, "one");
	assert_int_equal(lev_strv_len(r->seed.list), 1);
	assert_int_equal(lev_blueprint_region(bp, "src")->seed.kind, LEV_SEED_GLOB);
	assert_string_equal(lev_blueprint_region(bp, "lit")->seed.value, "hello");
	r = lev_blueprint_region(bp, "ls");
	assert_int_equal(r->seed.kind, LEV_SEED_TOOL);
	assert_string_equal(r->seed.value, "list_dir");
	assert_string_equal(r->seed.args_json, "{\"depth\":2,\"path\":\".\"}");
	r = lev_blueprint_region(bp, "conv");
	assert_int_equal(r->max_items, 20);
	assert_int_equal(r->max_tokens, 9000);

	assert_true(bp->has_security);
	assert_true(bp->taint_tracking);	/* a bare [security] means true */
	assert_true(lev_blueprint_wants_taint(bp));
	assert_true(bp->sandbox.present);
	assert_int_equal(bp->sandbox.kind, LEV_SANDBOX_NAMESPACE);
	assert_true(bp->sandbox.network);	/* default true when the block is present */
	assert_false(bp->sandbox.has_network);
	assert_int_equal(lev_strv_len(bp->read_paths), 4);
	assert_string_equal(bp->safe_tools[0], "read_files");
	assert_string_equal(bp->safe_shell[0], "make check");
	assert_true(bp->has_script_permissions);
	assert_int_equal(bp->script_permissions.shell, LEV_SCRIPT_DENY);
	assert_int_equal(bp->script_permissions.http_get, LEV_SCRIPT_ALLOW);
	assert_int_equal(bp->script_permissions.read_file, LEV_SCRIPT_INHERIT);
	lev_blueprint_free(bp);
}

static void test_structure_errors(void **state)
{
	(void)state;
	expect_error(STAGE "description = \"x\"\n", "missing [agent]", NULL);
	expect_error("[agent]\nversion = \"1\"\n" STAGE, "agent.leviath:1:", "needs 'name'", NULL);
	expect_error("[agent]\nname = \"../x\"\n" STAGE, "agent.leviath:2:", "not a valid agent name",
		     NULL);
	expect_error("[agent]\nname = \"a/b\"\n" STAGE, "not a valid agent name", NULL);
	expect_error(AGENT, "no stages", NULL);
	expect_error(AGENT "[stages]\n", "no stages", NULL);
	expect_error(AGENT "agent = 1\n", NULL);	/* duplicate key: a TOML error */
	expect_error("[agent]\nname = 7\n" STAGE, "'agent.name'", "string", NULL);
	expect_error("stages = 3\n" AGENT, "'stages'", "table", NULL);
	expect_error(AGENT "[stages.\"bad name\"]\n", "stage name", NULL);
}

static void test_unknown_stage_keys_are_errors(void **state)
{
	(void)state;
	expect_error(AGENT STAGE "descripton = \"x\"\n", "agent.leviath:4:1:",
		     "stage 'main' has unknown key 'descripton'", "valid:", "available_tools",
		     NULL);
	expect_error(AGENT STAGE "model = { provider = \"a\", modle = \"b\" }\n", "'modle'",
		     "stages.main.model", NULL);
	expect_error(AGENT STAGE "sandbox = { kind = \"namespace\", netwrok = false }\n",
		     "'netwrok'", NULL);
	expect_error(AGENT STAGE "security = { taint = true }\n", "'taint'", NULL);
	expect_error(AGENT STAGE "transitions = { main = { when = \"x\" } }\n", "'when'", NULL);
	expect_error(AGENT STAGE "[sandbox]\nnetwrok = false\n", "'netwrok'", "[sandbox]", NULL);
	expect_error(AGENT STAGE "[security]\nallow_seed_commands = true\n",
		     "'allow_seed_commands'", "valid: taint_tracking", NULL);
	expect_error(AGENT STAGE "[read_paths]\nallw = []\n", "'allw'", NULL);
	expect_error(AGENT STAGE "[safe_commands]\nshel = []\n", "'shel'", NULL);
	expect_error(AGENT STAGE "[tool_script_permissions]\nshel = \"deny\"\n", "'shel'", NULL);
}

static void test_mcp_servers_are_requests(void **state)
{
	struct lev_blueprint *bp = parse_ok(AGENT STAGE "[[mcp_servers]]\nname = \"fs\"\n"
						  "command = \"npx\"\n");

	(void)state;
	assert_int_equal(bp->n_findings, 1);
	assert_string_equal(bp->findings[0].key, "mcp_servers");
	assert_non_null(strstr(bp->findings[0].message, "MCP server 'fs'"));
	assert_non_null(strstr(bp->findings[0].message, "never starts a server"));
	assert_int_equal(lev_strv_len(bp->warnings), 0);
	lev_blueprint_free(bp);
}

static void test_unknown_keys_elsewhere_warn(void **state)
{
	struct lev_blueprint *bp = parse_ok(AGENT "colour = \"red\"\n" STAGE
						  "[mcp_servers]\nx = 1\n"
						  "[context.regions.r]\nshade = \"stable\"\n");

	(void)state;
	assert_int_equal(lev_strv_len(bp->warnings), 3);
	assert_string_equal(bp->warnings[0], "agent.leviath:3: unknown key 'colour' in [agent]");
	assert_non_null(strstr(bp->warnings[1], "'mcp_servers'"));
	assert_non_null(strstr(bp->warnings[2], "'shade'"));
	assert_int_equal(bp->n_findings, 0);
	lev_blueprint_free(bp);
}

static void test_enums_fail_closed(void **state)
{
	(void)state;
	expect_error(AGENT STAGE "mode = \"fanout\"\n", "autonomous, interactive, output", NULL);
	expect_error(AGENT "[tool_permissions]\nshell = \"dney\"\n" STAGE, "'tool_permissions.shell'",
		     "allow, ask, deny", NULL);
	expect_error(AGENT STAGE "tool_permissions = { shell = \"nope\" }\n",
		     "'stages.main.tool_permissions.shell'", NULL);
	expect_error(AGENT "[tool_permissions]\nshell = false\n" STAGE, "allow, ask, deny", NULL);
	expect_error(AGENT STAGE "[sandbox]\nkind = \"chroot\"\n", "none, namespace, container",
		     NULL);
	expect_error(AGENT STAGE "[sandbox]\non_unavailable = \"skip\"\n", "error, warn", NULL);
	expect_error(AGENT STAGE "[tool_script_permissions]\nshell = \"ok\"\n",
		     "inherit, allow, deny", NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nkind = \"compactin\"\n",
		     "pinned, sliding_window, temporary, clearable", NULL);
	expect_error(AGENT STAGE "transitions = { main = { condition = \"stuk\" } }\n",
		     "done, error, max_iterations", NULL);
	expect_error(AGENT STAGE "[security]\ntaint_tracking = \"yes\"\n", "boolean", NULL);
}

static void test_references(void **state)
{
	(void)state;
	expect_error("[agent]\nname = \"t\"\nentry_stage = \"nope\"\n" STAGE,
		     "'agent.entry_stage' names 'nope'", NULL);
	expect_error(AGENT STAGE "next = \"gone\"\n", "next = 'gone'", NULL);
	expect_error(AGENT STAGE "next = \"main\"\n", "names itself", NULL);
	expect_error(AGENT STAGE "transitions = [\"gone\"]\n", "transition to 'gone'", NULL);
	expect_error(AGENT STAGE "transitions = { gone = {} }\n", "transition to 'gone'", NULL);
	expect_error(AGENT STAGE "available_tools = [\"read_file\"]\nrequired_tools = "
				 "[\"ask_user_text\"]\n",
		     "requires tool 'ask_user_text'", NULL);
	expect_error(AGENT STAGE "next = \"b\"\ntransitions = [\"b\"]\n[stages.b]\n",
		     "both 'next' and 'transitions'", NULL);
	expect_error(AGENT STAGE "available_tools = [\"rm -rf\"]\n", "not a tool name", NULL);
}

static void test_read_paths_checked_at_parse(void **state)
{
	struct lev_blueprint *bp;

	(void)state;
	expect_error(AGENT STAGE "[read_paths]\nallow = [\"/ok\", \"regex:.*\"]\n",
		     "agent.leviath:5:", "'regex:.*'", NULL);
	expect_error(AGENT STAGE "[read_paths]\nallow = [\"glob:a/../b\"]\n", "glob:a/../b", NULL);
	expect_error(AGENT STAGE "[read_paths]\nallow = [\"\"]\n", "read_paths", NULL);
	expect_error(AGENT STAGE "[read_paths]\nallow = [\"/ok\", 1]\n", "'read_paths.allow[1]'",
		     "string", NULL);
	expect_error(AGENT STAGE "[read_paths]\nallow = \"/ok\"\n", "array", NULL);
	bp = parse_ok(AGENT STAGE "[read_paths]\n");
	assert_true(bp->has_read_paths);
	assert_null(bp->read_paths);
	lev_blueprint_free(bp);
}

static void test_regions_and_seeds(void **state)
{
	(void)state;
	expect_error(AGENT STAGE "[context.regions.r]\nseed = { comand = \"ls\" }\n", "'comand'",
		     NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nseed = {}\n", "exactly one", NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nseed = { glob = \"*\", literal = \"x\" }\n",
		     "exactly one", NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nseed = { glob = \"*\", args = {} }\n",
		     "only goes with a 'tool'", NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nseed = 3\n", "caller-input", NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nseed = \"no spaces\"\n", "caller input",
		     NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nseed = { command = \"\" }\n", "empty", NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nbudget = \"150%\"\n", "\"1%\" to \"100%\"",
		     NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nbudget = 5\n", "string", NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nbudget = \"1.x%\"\n", "\"1%\" to \"100%\"",
		     NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nrequired = true\nseed = { rhai = \"x.rhai\" }\n",
		     "no seed lev runs", NULL);
	expect_error(AGENT STAGE "[context.regions.r]\nseed = { tool = \"x\", args = { when = "
				 "1979-05-27 } }\n",
		     "no JSON form", NULL);
}

/* Leviath's keys: type-checked, kept as findings, never silently valid. */
static void test_leviath_keys_are_findings(void **state)
{
	struct lev_blueprint *bp = parse_ok(
		AGENT "dynamic_tools = true\n"
		"[stages.main]\nmode = \"interactive_points\"\n"
		"hooks = { on_stage_enter = \"h.rhai\" }\n"
		"transitions = { main = { condition = \"stuck\", stuck_after_iterations = 3 } }\n"
		"[context.regions]\n"
		"a = { budget = \"60%\", kind = \"compacting\", strategy = \"bulk\" }\n"
		"b = { budget = \"50.5%\", required = true }\n");
	static const char *const keys[] = {
		"agent.dynamic_tools", "stages.main.hooks",
	};
	size_t i;

	(void)state;
	assert_int_equal(bp->n_findings, ARRAY_SIZE(keys));
	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		assert_string_equal(bp->findings[i].key, keys[i]);
		assert_true(!strncmp(bp->findings[i].message, "not run by lev: ", 16));
		assert_non_null(strstr(bp->findings[i].message, "; use "));
	}
	assert_int_equal(bp->findings[0].line, 3);
	assert_int_equal(bp->findings[0].col, 1);
	assert_string_equal(bp->findings[1].stage, "main");
	assert_null(bp->findings[0].stage);
	assert_int_equal(bp->stages[0].mode, LEV_MODE_INTERACTIVE);
	assert_int_equal(bp->stages[0].transitions[0].when, LEV_WHEN_STUCK);
	/* Leviath's compacting kind runs: a temporary region with its strategy as written */
	assert_int_equal(bp->regions[0].kind, LEV_REGION_TEMPORARY);
	assert_int_equal(bp->regions[0].strategy, LEV_STRATEGY_BULK);
	/* budgets are ceilings: together they may pass 100% */
	assert_int_equal(bp->regions[0].budget_pct, 60);
	assert_int_equal(bp->regions[1].budget_pct, 50);
	/* Leviath's required (no seed): a stage may not end while it is empty */
	assert_false(bp->regions[1].required);
	assert_true(bp->regions[1].required_fill);
	lev_blueprint_free(bp);

	/* inside a Leviath table, a key in no schema and a wrong type are errors */
	expect_error(AGENT STAGE "hooks = { on_enter = \"h.rhai\" }\n", "'on_enter'",
		     "'stages.main.hooks'", "valid: on_stage_enter", NULL);
	expect_error(AGENT STAGE "max_workers = \"4\"\n", "'stages.main.max_workers'", NULL);
	expect_error(AGENT STAGE "tool_routing = { overrides = { x = 3 } }\n",
		     "'stages.main.tool_routing.overrides.x'", NULL);
	expect_error(AGENT STAGE "on_worker_failure = \"retry\"\n", "continue, fail, fail_all",
		     NULL);
	expect_error(AGENT STAGE "model = { models = [{ provider = \"openai\" }] }\n",
		     "needs both 'provider' and 'model'", NULL);
	/* a stage key in no schema stays an error naming Leviath's keys as valid */
	expect_error(AGENT STAGE "max_revisit = 1\n", "unknown key 'max_revisit'", "max_revisits",
		     "tool_routing", NULL);
}

/* mode = "fan_out" and its keys: read, checked against the stages, FILE:LINE:COL on error. */
static void test_fanout_keys(void **state)
{
	struct lev_blueprint *bp = parse_ok(
		AGENT "max_child_depth = 2\n"
		"[stages.split]\nmode = \"fan_out\"\nworker_stage = \"one\"\nmerge_stage = \"merge\"\n"
		"results_region = \"rows\"\nmax_items = 5\nmax_workers = 0\nmax_attempts = 0\n"
		"on_worker_failure = \"fail_all\"\nsplit_prompt = \"split it\"\n"
		"[stages.one]\nallow_as_worker = true\n"
		"[stages.merge]\nrequires_children = true\n"
		"[context.regions]\nrows = { kind = \"temporary\" }\n");
	const struct lev_fanout_spec *f = &bp->stages[0].fanout;

	(void)state;
	assert_int_equal(bp->n_findings, 0);
	assert_int_equal(bp->stages[0].mode, LEV_MODE_FAN_OUT);
	assert_string_equal(f->worker_stage, "one");
	assert_string_equal(f->merge_stage, "merge");
	assert_string_equal(f->results_region, "rows");
	assert_string_equal(f->split_prompt, "split it");
	assert_int_equal(f->max_items, 5);
	assert_int_equal(f->max_workers, 0);
	assert_int_equal(f->max_attempts, 0);
	assert_int_equal(f->on_failure, LEV_WORKERS_FAIL);
	assert_true(bp->stages[1].allow_as_worker);
	assert_true(bp->stages[2].requires_children);
	assert_int_equal(lev_blueprint_child_depth(bp), 2);
	/* the stage's one job: the tool is offered */
	assert_true(lev_strv_contains(bp->stages[0].available_tools,
				      lev_tooltable_name(LEV_OP_FAN_OUT)));
	/* the defaults: 30 at once, 3 asks, continue; no depth written is the default */
	assert_int_equal(bp->stages[1].fanout.max_workers, LEV_FANOUT_MAX_WORKERS_DEFAULT);
	assert_int_equal(bp->stages[1].fanout.max_attempts, LEV_FANOUT_MAX_ATTEMPTS_DEFAULT);
	assert_int_equal(bp->stages[1].fanout.on_failure, LEV_WORKERS_CONTINUE);
	lev_blueprint_free(bp);
	bp = parse_ok(AGENT "[stages.split]\nmode = \"fan_out\"\nworker_agent = \"researcher\"\n");
	assert_string_equal(bp->stages[0].fanout.worker_agent, "researcher");
	assert_int_equal(lev_blueprint_child_depth(bp), LEV_CHILD_DEPTH_DEFAULT);
	lev_blueprint_free(bp);

	/* references: a worker_stage that does not exist or does not opt in, merge_stage, region */
	expect_error(AGENT "[stages.split]\nmode = \"fan_out\"\nworker_stage = \"nope\"\n",
		     "agent.leviath:5:16:", "worker_stage = 'nope', which is not a stage", NULL);
	expect_error(AGENT "[stages.split]\nmode = \"fan_out\"\nworker_stage = \"one\"\n"
		     "[stages.one]\n", "agent.leviath:5:16:", "does not set allow_as_worker", NULL);
	expect_error(AGENT "[stages.split]\nmode = \"fan_out\"\nworker_stage = \"split\"\n",
		     "names itself as its worker_stage", NULL);
	expect_error(AGENT "[stages.split]\nmode = \"fan_out\"\nworker_agent = \"r\"\n"
		     "merge_stage = \"gone\"\n", "agent.leviath:6:15:", "merge_stage = 'gone'", NULL);
	expect_error(AGENT "[stages.split]\nmode = \"fan_out\"\nworker_agent = \"r\"\n"
		     "results_region = \"rows\"\n", "agent.leviath:6:18:", "results_region = 'rows'",
		     NULL);
	expect_error(AGENT "[stages.split]\nmode = \"fan_out\"\n", "names no worker", NULL);
	expect_error(AGENT "[stages.split]\nmode = \"fan_out\"\nworker_agent = \"r\"\n"
		     "worker_stage = \"one\"\n[stages.one]\nallow_as_worker = true\n",
		     "sets both worker_stage and worker_agent", NULL);
	expect_error(AGENT "[stages.split]\nmode = \"fan_out\"\nworker_agent = \"../x\"\n",
		     "not a valid agent name", NULL);
	/* bad values: negative, not a whole number, out of range, a wrong word */
	expect_error(AGENT STAGE "max_items = -1\n", "'stages.main.max_items'", NULL);
	expect_error(AGENT STAGE "max_workers = 2.5\n", "'stages.main.max_workers'", NULL);
	expect_error(AGENT STAGE "max_attempts = 1000\n", "'stages.main.max_attempts'", NULL);
	expect_error(AGENT "max_child_depth = 99\n" STAGE, "'agent.max_child_depth'", NULL);
	expect_error(AGENT STAGE "allow_as_worker = \"yes\"\n", "'stages.main.allow_as_worker'",
		     NULL);
}

static void test_tool_routing(void **state)
{
	struct lev_blueprint *bp = parse_ok(
		AGENT STAGE "[stages.main.tool_routing]\ndefault_region = \"scratch\"\n"
		"max_result_tokens = 4000\npersist = false\n"
		"max_result_tokens_per_tool = { read_file = 50, grep = 7 }\n"
		"overrides = { read_file = { region = \"code\", max_result_tokens = 20 }, "
		"bash = \"code\", list_dir = { max_result_tokens = 0 } }\n"
		"[context.regions]\nscratch = { kind = \"clearable\", admission = \"reject\" }\n"
		"code = { budget = \"60%\", min_tokens = 900, volatility = \"stable\", "
		"max_entries = 5, persistent = true, summarizable = false }\n"
		"conversation = { kind = \"sliding_window\", budget = \"70%\" }\n");
	const struct lev_stage *st = &bp->stages[0];
	const char *region = NULL;
	uint64_t max = 0;

	(void)state;
	assert_int_equal(bp->n_findings, 0);
	assert_true(st->routing.present);
	assert_false(st->routing.persist);
	/* the override's own ceiling wins over the per-tool table, which wins over the stage's */
	lev_blueprint_route(st, "read_file", &region, &max);
	assert_string_equal(region, "code");
	assert_int_equal(max, 20);
	/* an alias matches the tool it aliases */
	lev_blueprint_route(st, "shell", &region, &max);
	assert_string_equal(region, "code");
	assert_int_equal(max, 4000);
	lev_blueprint_route(st, "grep", &region, &max);
	assert_string_equal(region, "scratch");
	assert_int_equal(max, 7);
	lev_blueprint_route(st, "list_dir", &region, &max);
	assert_string_equal(region, "scratch");
	assert_int_equal(max, 0);
	lev_blueprint_route(st, "web_fetch", &region, &max);
	assert_string_equal(region, "scratch");
	assert_int_equal(max, 4000);
	assert_true(bp->regions[0].admission_reject);
	assert_int_equal(bp->regions[1].min_tokens, 900);
	assert_int_equal(bp->regions[1].max_items, 5);
	assert_int_equal(bp->regions[1].volatility, LEV_VOL_STABLE);
	assert_true(bp->regions[1].persistent);
	assert_true(bp->regions[1].not_summarizable);
	lev_blueprint_free(bp);

	/* a route into a region nobody declared is refused, naming the stage and region */
	expect_error(AGENT STAGE "tool_routing = { default_region = \"nowhere\" }\n",
		     "stage 'main' routes tool results to region 'nowhere'", NULL);
	expect_error(AGENT STAGE "tool_routing = { overrides = { read_file = {} } }\n",
		     "must set 'region', 'max_result_tokens' or both", NULL);
	expect_error(AGENT STAGE "tool_routing = { max_result_tokens = 0 }\n",
		     "'stages.main.tool_routing.max_result_tokens'", NULL);
	expect_error(AGENT STAGE "tool_routing = { route = {} }\n", "unknown key 'route'", NULL);
	expect_error(AGENT STAGE "[context.regions]\nx = { admission = \"drop\" }\n",
		     "'context.regions.x.admission'", NULL);
	/* the runtime's own regions are always valid targets */
	bp = parse_ok(AGENT STAGE "tool_routing = { default_region = \"tool_results\" }\n");
	lev_blueprint_free(bp);
}

static void test_repetition_and_file_tracking(void **state)
{
	struct lev_blueprint *bp = parse_ok(
		AGENT STAGE "[repetition_detection]\nmax_readonly_streak = 4\n"
		"[context.file_tracking]\ntrack_writes = false\n"
		"[context.regions]\nfiles = { kind = \"temporary\" }\n");

	(void)state;
	assert_int_equal(bp->n_findings, 0);
	assert_true(bp->repetition.present && bp->repetition.enabled);
	assert_int_equal(bp->repetition.max_repeat_calls, 3);
	assert_int_equal(bp->repetition.max_readonly_streak, 4);
	assert_string_equal(bp->file_tracking.region, "files");
	assert_true(bp->file_tracking.track_reads);
	assert_false(bp->file_tracking.track_writes);
	lev_blueprint_free(bp);
	expect_error(AGENT STAGE "[context.file_tracking]\nregion = \"nope\"\n",
		     "region 'nope', which is not in [context.regions]", NULL);
	expect_error(AGENT STAGE "[repetition_detection]\nmax_repeat = 2\n", "max_repeat", NULL);
	expect_error(AGENT STAGE "[repetition_detection]\nmax_repeat_calls = 0\n",
		     "'repetition_detection.max_repeat_calls'", NULL);
}

static void test_stage_context_and_foreign_tools(void **state)
{
	struct lev_blueprint *bp = parse_ok(
		AGENT "[stages.a]\navailable_tools = [\"read_file\", \"send_to_agent\"]\n"
		"[stages.a.context.regions]\nnotes = {}\nown = { kind = \"clearable\" }\n"
		"[stages.b]\n"
		"[context.regions]\nnotes = { kind = \"clearable\", max_items = 3 }\n");

	(void)state;
	/* the stage-only region joins the run's regions; the shared one keeps the agent's */
	assert_int_equal(bp->n_regions, 2);
	assert_string_equal(bp->regions[1].name, "own");
	assert_int_equal(bp->regions[0].max_items, 3);
	assert_true(bp->stages[0].has_context);
	assert_string_equal(bp->stages[0].context_regions[0], "notes");
	assert_string_equal(bp->stages[0].context_regions[1], "own");
	assert_false(bp->stages[1].has_context);
	/* a tool lev knows by name and does not have is a finding naming the stage */
	assert_int_equal(bp->n_findings, 1);
	assert_string_equal(bp->findings[0].key, "stages.a.available_tools");
	assert_string_equal(bp->findings[0].stage, "a");
	assert_non_null(strstr(bp->findings[0].message, "'send_to_agent'"));
	lev_blueprint_free(bp);
	expect_error(AGENT STAGE "context = { layout = {} }\n", "unknown key 'layout'", NULL);
}

static void test_model_lists(void **state)
{
	struct lev_blueprint *bp = parse_ok(
		AGENT STAGE "model = { models = [{ provider = \"google\", model = \"g\" }, "
		"{ provider = \"openai\", model = \"o\" }], fallbacks = [{ provider = "
		"\"anthropic\", model = \"a\" }], request_timeout_secs = 30, "
		"allow_user_default = false, parameters = { top_p = 1 } }\n");
	const struct lev_model_ref *m = &bp->stages[0].model;

	(void)state;
	assert_int_equal(m->n_choices, 3);
	assert_string_equal(m->choices[0].provider, "google");
	assert_string_equal(m->choices[1].model, "o");
	assert_string_equal(m->choices[2].provider, "anthropic");
	assert_string_equal(m->provider, "google");
	assert_string_equal(m->model, "g");
	/* run with Leviath's meaning now; `parameters` is still a finding */
	assert_int_equal(m->timeout_secs, 30);
	assert_true(m->no_user_default);
	assert_int_equal(bp->n_findings, 1);
	assert_string_equal(bp->findings[0].key, "stages.main.model.parameters");
	assert_string_equal(bp->findings[0].stage, "main");
	lev_blueprint_free(bp);
}

static void test_models(void **state)
{
	(void)state;
	expect_error(AGENT STAGE "model = { provider = \"script\" }\n", "needs 'script'", NULL);
	expect_error(AGENT STAGE "model = { provider = \"script\", script = \"../x.toml\" }\n",
		     "inside the blueprint directory", NULL);
	expect_error(AGENT STAGE "model = { provider = \"script\", script = \"/etc/x\" }\n",
		     "inside the blueprint directory", NULL);
	expect_error(AGENT STAGE "model = { provider = \"openai\", script = \"x\" }\n",
		     "only the \"script\" provider", NULL);
	expect_error(AGENT STAGE "model = \"gpt\"\n", "provider/model", NULL);
	expect_error(AGENT STAGE "model = { provider = \"a\", temperature = 9 }\n",
		     "between 0 and 2", NULL);
	expect_error(AGENT STAGE "model = 5\n", "provider/model", NULL);
}

static void test_taint_cannot_be_turned_off(void **state)
{
	struct lev_blueprint *bp = parse_ok(AGENT STAGE "[security]\ntaint_tracking = false\n");

	(void)state;
	assert_true(bp->has_security);
	assert_false(bp->taint_tracking);
	assert_false(lev_blueprint_wants_taint(bp));
	assert_int_equal(lev_strv_len(bp->warnings), 1);
	assert_non_null(strstr(bp->warnings[0], "never off"));
	lev_blueprint_free(bp);
}

static void test_sandbox_block_without_kind_is_none(void **state)
{
	struct lev_blueprint *bp = parse_ok(AGENT STAGE "[sandbox]\nnetwork = false\n");

	(void)state;
	assert_true(bp->sandbox.present);
	assert_false(bp->sandbox.has_kind);
	assert_int_equal(bp->sandbox.kind, LEV_SANDBOX_NONE);
	lev_blueprint_free(bp);
}

static void test_hostile_bytes(void **state)
{
	static const char bin[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0";
	struct lev_blueprint *bp = NULL;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_true(lev_blueprint_parse(bin, sizeof(bin) - 1, "agent.leviath", "/bp", &bp, &err) < 0);
	assert_non_null(strstr(err.msg, "agent.leviath:1:"));
	assert_null(strchr(err.msg, '\n'));
	expect_error(AGENT STAGE "description = \"a\\u0000b\"\n", "NUL byte", NULL);
	/* a description cannot drive the terminal of whoever lists it */
	expect_error("[agent]\nname = \"t\"\ndescription = \"x\\u001b]0;pwned\\u0007\"\n" STAGE,
		     "'agent.description' must be one line", NULL);
	expect_error("[agent]\nname = \"t\"\nversion = \"1\\u009b2J\"\n" STAGE,
		     "'agent.version' must be one line", NULL);
	expect_error(AGENT STAGE "description = \"two\\nlines\"\n", "one line", NULL);
	/* truncated in the middle of a string */
	expect_error("[agent]\nname = \"abc", "agent.leviath:2:", NULL);
	expect_error("[agent]\nname = \"t\"\n[stages.main]\nsystem_prompt = \"\"\"\nunterminated",
		     "agent.leviath:", NULL);
}

static char *write_file(const char *dir, const char *name, const char *text)
{
	char *p = lev_path_join(dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(lev_write_all(fd, text, strlen(text)), 0);
	close(fd);
	return p;
}

static char *make_bp_dir(const char *name, const char *text)
{
	char *d = lev_path_join(tmpdir, name);
	struct lev_err err = LEV_ERR_INIT;

	(void)lev_rm_rf(d, NULL);
	assert_int_equal(lev_mkdir_p(d, 0700, &err), 0);
	free(write_file(d, "agent.leviath", text));
	return d;
}

static void test_load_dir_file_and_limits(void **state)
{
	_cleanup_free_ char *d = make_bp_dir("src-load", AGENT STAGE);
	_cleanup_free_ char *f = lev_path_join(d, "agent.leviath");
	_cleanup_free_ char *other = NULL;
	_cleanup_free_ char *big = NULL;
	_cleanup_free_ char *fifo = lev_path_join(tmpdir, "fifo-bp");
	struct lev_blueprint *bp = NULL;
	struct lev_err err = LEV_ERR_INIT;
	size_t n = LEV_BLUEPRINT_MAX_FILE + 1;

	(void)state;
	assert_int_equal(lev_blueprint_load(d, &bp, &err), 0);
	assert_string_equal(bp->dir, d);
	assert_string_equal(bp->path, f);
	bp = lev_blueprint_free(bp);
	assert_int_equal(lev_blueprint_load(f, &bp, &err), 0);
	assert_string_equal(bp->dir, d);
	bp = lev_blueprint_free(bp);

	big = xmalloc(n + 1);
	memset(big, '#', n);
	big[n] = '\0';
	other = write_file(d, "big.leviath", big);
	assert_int_equal(lev_blueprint_load(other, &bp, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "too large"));

	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_true(lev_blueprint_load(fifo, &bp, &err) < 0);
	assert_non_null(strstr(err.msg, "not a regular file"));
	assert_true(lev_blueprint_load(tmpdir, &bp, &err) < 0);	/* no agent.leviath */
}

/* Nothing but finished installs may ever sit in the store. */
static void assert_store_clean(void)
{
	_cleanup_free_ char *agents = NULL;
	struct lev_err err = LEV_ERR_INIT;
	char cmd[512];

	assert_int_equal(lev_datadir_agents_dir(&agents, &err), 0);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s' 2>/dev/null | grep '^\\.')\"", agents);
	assert_int_equal(system(cmd), 0);
}

static void test_store_install_list_remove(void **state)
{
	_cleanup_free_ char *d = make_bp_dir("src-demo",
					     "[agent]\nname = \"demo\"\nversion = \"1.0\"\n" STAGE);
	_cleanup_free_ char *sub = lev_path_join(d, "tools");
	_cleanup_free_ char *installed = NULL;
	_cleanup_free_ char *copied = NULL;
	struct lev_blueprint *bp = NULL;
	struct lev_agent_info *list = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct stat st;
	bool replaced = true;
	size_t n = 0;

	(void)state;
	assert_int_equal(mkdir(sub, 0755), 0);
	free(write_file(sub, "fetch.lua", "-- @tool fetch\nreturn 1\n"));
	assert_int_equal(lev_agentstore_install(d, false, &bp, &replaced, &err), 0);
	assert_false(replaced);
	assert_int_equal(lev_datadir_agent_dir("demo", &installed, &err), 0);
	assert_string_equal(bp->dir, installed);
	bp = lev_blueprint_free(bp);
	copied = lev_path_join(installed, "tools/fetch.lua");
	assert_int_equal(stat(copied, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(installed, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);

	/* a second install needs force, and force replaces */
	assert_int_equal(lev_agentstore_install(d, false, NULL, NULL, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "--force"));
	free(write_file(d, "agent.leviath", "[agent]\nname = \"demo\"\nversion = \"2.0\"\n" STAGE));
	assert_int_equal(lev_agentstore_install(d, true, &bp, &replaced, &err), 0);
	assert_true(replaced);
	assert_string_equal(bp->version, "2.0");
	bp = lev_blueprint_free(bp);
	assert_store_clean();

	assert_int_equal(lev_agentstore_list(&list, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0].name, "demo");
	assert_non_null(list[0].bp);
	assert_string_equal(list[0].bp->version, "2.0");
	lev_agentstore_list_free(list, n);

	assert_int_equal(lev_agentstore_remove("demo", &err), 0);
	assert_int_equal(stat(installed, &st), -1);
	assert_int_equal(lev_agentstore_remove("demo", &err), -ENOENT);
	assert_non_null(strstr(err.msg, "not installed"));
	assert_int_equal(lev_agentstore_remove("../etc", &err), -EINVAL);
	assert_store_clean();
}

static void test_store_refuses_links_and_specials(void **state)
{
	_cleanup_free_ char *d = make_bp_dir("src-link", "[agent]\nname = \"linky\"\n" STAGE);
	_cleanup_free_ char *lnk = lev_path_join(d, "secret");
	_cleanup_free_ char *fifo = NULL;
	_cleanup_free_ char *installed = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct stat st;

	(void)state;
	assert_int_equal(symlink("/etc/passwd", lnk), 0);
	assert_int_equal(lev_agentstore_install(d, false, NULL, NULL, &err), -EPERM);
	assert_non_null(strstr(err.msg, "symbolic link"));
	assert_int_equal(lev_datadir_agent_dir("linky", &installed, &err), 0);
	assert_int_equal(stat(installed, &st), -1);
	assert_store_clean();

	assert_int_equal(unlink(lnk), 0);
	fifo = lev_path_join(d, "pipe");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(lev_agentstore_install(d, false, NULL, NULL, &err), -EPERM);
	assert_non_null(strstr(err.msg, "special file"));
	assert_int_equal(stat(installed, &st), -1);
	assert_store_clean();
}

static void test_store_refuses_invalid_and_huge(void **state)
{
	_cleanup_free_ char *d = make_bp_dir("src-bad", "[agent]\nname = \"bad\"\n");
	_cleanup_free_ char *installed = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct stat st;
	char name[32];
	int i;

	(void)state;
	assert_true(lev_agentstore_install(d, false, NULL, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "no stages"));
	assert_int_equal(lev_datadir_agent_dir("bad", &installed, &err), 0);
	assert_int_equal(stat(installed, &st), -1);

	free(write_file(d, "agent.leviath", "[agent]\nname = \"bad\"\n" STAGE));
	for (i = 0; i <= LEV_STORE_MAX_FILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		free(write_file(d, name, "x"));
	}
	assert_int_equal(lev_agentstore_install(d, false, NULL, NULL, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "too many entries"));
	assert_int_equal(stat(installed, &st), -1);
	assert_store_clean();
}

static void test_store_resolve(void **state)
{
	_cleanup_free_ char *p = NULL;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(lev_agentstore_resolve("./x", &p, &err), 0);
	assert_string_equal(p, "./x");
	free(p);
	p = NULL;
	assert_int_equal(lev_agentstore_resolve("not-installed", &p, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "neither"));
}

static void test_script_tools(void **state)
{
	_cleanup_free_ char *d = make_bp_dir("src-tools", AGENT STAGE);
	_cleanup_free_ char *t = lev_path_join(d, "tools");
	char **names;

	(void)state;
	assert_null(lev_blueprint_script_tools(d));
	assert_int_equal(mkdir(t, 0700), 0);
	free(write_file(t, "web_fetch.lua", "x"));
	free(write_file(t, "a_tool.lua", "x"));
	free(write_file(t, ".hidden", "x"));
	names = lev_blueprint_script_tools(d);
	assert_int_equal(lev_strv_len(names), 2);
	assert_string_equal(names[0], "a_tool");
	assert_string_equal(names[1], "web_fetch");
	lev_strv_free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_structure_errors),
		cmocka_unit_test(test_unknown_stage_keys_are_errors),
		cmocka_unit_test(test_unknown_keys_elsewhere_warn),
		cmocka_unit_test(test_mcp_servers_are_requests),
		cmocka_unit_test(test_enums_fail_closed),
		cmocka_unit_test(test_references),
		cmocka_unit_test(test_read_paths_checked_at_parse),
		cmocka_unit_test(test_regions_and_seeds),
		cmocka_unit_test(test_models),
		cmocka_unit_test(test_leviath_keys_are_findings),
		cmocka_unit_test(test_fanout_keys),
		cmocka_unit_test(test_tool_routing),
		cmocka_unit_test(test_repetition_and_file_tracking),
		cmocka_unit_test(test_stage_context_and_foreign_tools),
		cmocka_unit_test(test_model_lists),
		cmocka_unit_test(test_taint_cannot_be_turned_off),
		cmocka_unit_test(test_sandbox_block_without_kind_is_none),
		cmocka_unit_test(test_hostile_bytes),
		cmocka_unit_test(test_load_dir_file_and_limits),
		cmocka_unit_test(test_store_install_list_remove),
		cmocka_unit_test(test_store_refuses_links_and_specials),
		cmocka_unit_test(test_store_refuses_invalid_and_huge),
		cmocka_unit_test(test_store_resolve),
		cmocka_unit_test(test_script_tools),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
