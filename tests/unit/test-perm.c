/*
 * test-perm.c - tool permissions (spec §3.2/§3.3, Appendix A section C:
 * tools.rs, tool_service.rs, approvals), the effect clamp, coverage by
 * safe lists and grants, the redirect gate against a real directory tree,
 * and the config/blueprint glue.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/conf/blueprint.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/config.h"
#include "liblev/policy/fsconfine.h"
#include "liblev/policy/perm-config.h"
#include "liblev/policy/perm.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

/* ---- building inputs ------------------------------------------------------ */

#define MAXR 16

struct pin {
	struct lev_perm_rule ug[MAXR], ua[MAXR], bs[MAXR], ba[MAXR];
	struct lev_perm_safe safe[64];
	const char *allow[8];
	size_t n_allow;
	struct lev_perm_input in;
};

static void pin_init(struct pin *p)
{
	memset(p, 0, sizeof(*p));
	p->in.user_global = p->ug;
	p->in.user_agent = p->ua;
	p->in.bp_stage = p->bs;
	p->in.bp_agent = p->ba;
	p->in.safe = p->safe;
	p->in.allow = p->allow;
}

static void global(struct pin *p, const char *tool, enum lev_verdict v)
{
	p->ug[p->in.n_user_global++] = (struct lev_perm_rule){ tool, v, "[tool_permissions]" };
}

static void agent(struct pin *p, const char *tool, enum lev_verdict v)
{
	p->ua[p->in.n_user_agent++] =
		(struct lev_perm_rule){ tool, v, "[agent_tool_permissions.coder]" };
}

static void stage(struct pin *p, const char *tool, enum lev_verdict v)
{
	p->bs[p->in.n_bp_stage++] =
		(struct lev_perm_rule){ tool, v, "blueprint [stages.build.tool_permissions]" };
}

static void bpagent(struct pin *p, const char *tool, enum lev_verdict v)
{
	p->ba[p->in.n_bp_agent++] = (struct lev_perm_rule){ tool, v, "blueprint [tool_permissions]" };
}

static void allow(struct pin *p, const char *tool)
{
	p->allow[p->n_allow++] = tool;
	p->allow[p->n_allow] = NULL;
}

static void safe(struct pin *p, const char *key, const char *source)
{
	p->safe[p->in.n_safe++] = (struct lev_perm_safe){ key, source };
}

static char **default_keys;

static int group_setup(void **state)
{
	(void)state;
	default_keys = lev_safe_shell_default_keys();
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	default_keys = lev_strv_free(default_keys);
	return 0;
}

static void safe_defaults(struct pin *p)
{
	size_t i;

	for (i = 0; default_keys[i]; i++)
		safe(p, default_keys[i], "built-in list");
}

static enum lev_verdict res(const struct pin *p, const char *tool)
{
	struct lev_perm_resolution r;

	lev_perm_resolve(&p->in, tool, &r);
	return r.verdict;
}

/* Decide a shell call LINE (NULL: no command) with optional grants. */
static enum lev_verdict shell_call(const struct pin *p, const char *tool, const char *line,
				   const struct lev_grants *g)
{
	struct lev_shellkeys k;
	struct lev_perm_decision d;

	if (!line) {
		lev_perm_decide(&p->in, tool, NULL, g, &d);
		return d.verdict;
	}
	lev_shellkeys_parse(line, &k);
	lev_perm_decide(&p->in, tool, &k, g, &d);
	lev_shellkeys_release(&k);
	return d.verdict;
}

static enum lev_verdict tool_call(const struct pin *p, const char *tool,
				  const struct lev_grants *g)
{
	struct lev_perm_decision d;

	lev_perm_decide(&p->in, tool, NULL, g, &d);
	return d.verdict;
}

/* The account of a resolution or decision, for rule-text assertions. */
static char *account(const struct pin *p, const char *tool, const char *line)
{
	struct lev_buf b = LEV_BUF_INIT;
	struct lev_shellkeys k;
	struct lev_perm_decision d;

	lev_shellkeys_parse(line, &k);
	lev_perm_decide(&p->in, tool, line ? &k : NULL, NULL, &d);
	assert_int_equal(lev_perm_describe(&d, &b), 0);
	lev_shellkeys_release(&k);
	return lev_buf_detach(&b, NULL);
}

/* ---- built-in defaults --------------------------------------------------------- */

static void test_default_policy(void **state)
{
	(void)state;
	assert_int_equal(lev_perm_default("read_file"), LEV_ALLOW);
	assert_int_equal(lev_perm_default("read_files"), LEV_ALLOW);
	assert_int_equal(lev_perm_default("list_dir"), LEV_ALLOW);
	assert_int_equal(lev_perm_default("write_file"), LEV_ASK);
	assert_int_equal(lev_perm_default("edit_file"), LEV_ASK);
	assert_int_equal(lev_perm_default("shell"), LEV_ASK);
	assert_int_equal(lev_perm_default("bash"), LEV_ASK);
	assert_int_equal(lev_perm_default("ask_user_text"), LEV_ALLOW);
	assert_int_equal(lev_perm_default("ask_user_choice"), LEV_ALLOW);
	assert_int_equal(lev_perm_default("ask_user_confirm"), LEV_ALLOW);
	assert_int_equal(lev_perm_default("edit_document"), LEV_ALLOW);
	/* a question to the person at the keyboard, as ask_user_* */
	assert_int_equal(lev_perm_default("present_for_review"), LEV_ALLOW);
	/* ends the stage by one of its own edges: touches the run only */
	assert_int_equal(lev_perm_default("transition"), LEV_ALLOW);
	assert_int_equal(lev_perm_default("context_write"), LEV_ALLOW);
	assert_int_equal(lev_perm_default("todo_add"), LEV_ALLOW);
	assert_int_equal(lev_perm_default("spawn_agent"), LEV_ALLOW);
	/* unknown, MCP, script and web tools ask */
	assert_int_equal(lev_perm_default("web_search"), LEV_ASK);
	assert_int_equal(lev_perm_default("web_fetch"), LEV_ASK);
	assert_int_equal(lev_perm_default("search"), LEV_ASK);
	assert_int_equal(lev_perm_default("glob"), LEV_ASK);
	assert_int_equal(lev_perm_default("http_request"), LEV_ASK);
	assert_int_equal(lev_perm_default("github__create_issue"), LEV_ASK);
	assert_int_equal(lev_perm_default(""), LEV_ASK);
	/* exact names only: a tool that borrows a reviewed prefix is not reviewed */
	assert_int_equal(lev_perm_default("context_exfiltrate"), LEV_ASK);
	assert_int_equal(lev_perm_default("todo_upload"), LEV_ASK);
	assert_int_equal(lev_perm_default("read_file2"), LEV_ASK);
}

/* The reviewed list, spelled out here on purpose: adding an allow is a decision. */
static const char *const reviewed[] = {
	"read_file", "read_files", "list_dir", "context_write", "context_append", "context_read",
	"context_delete", "context_list", "todo_add", "todo_done", "todo_note", "current_time",
	"system_info", "locale_info", "environment_info", "which_command", "runtime_info",
	"submit_output", "transition", "fan_out", "spawn_agent", "check_agent", "wait_for_agent",
	"send_to_agent", "kill_agent",
	"ask_user_text", "ask_user_choice", "ask_user_confirm", "edit_document",
	"present_for_review", NULL,
};

static bool listed(const char *const *v, const char *s)
{
	for (; *v; v++)
		if (!strcmp(*v, s))
			return true;
	return false;
}

static void test_only_reviewed_tools_run_without_asking(void **state)
{
	static const char *const advertised[] = {
		"read_file", "read_files", "write_file", "edit_file", "list_dir", "shell", "bash",
		"ask_user_text", "ask_user_choice", "ask_user_confirm", "present_for_review",
		"edit_document", "context_write", "context_append", "context_read",
		"context_delete", "context_list", "todo_add", "todo_done", "todo_note",
		"submit_output", "transition", "fan_out", "current_time", "system_info", "locale_info",
		"environment_info", "which_command", "runtime_info", "spawn_agent", "check_agent",
		"wait_for_agent", "send_to_agent", "kill_agent", "web_search", "web_fetch",
		"http_get", "http_post", "send_email", NULL,
	};
	size_t i;

	(void)state;
	for (i = 0; advertised[i]; i++) {
		bool allows = lev_perm_default(advertised[i]) == LEV_ALLOW;

		if (allows != listed(reviewed, advertised[i]))
			fail_msg("'%s': default %s, reviewed %d", advertised[i],
				 allows ? "allow" : "ask", listed(reviewed, advertised[i]));
	}
	/* the tool table's default-allow set is exactly the reviewed one */
	for (i = 0; i < lev_tooltable_count(); i++) {
		const struct lev_tool_desc *d = lev_tooltable_at(i);

		if ((d->flags & LEV_TOOLF_DEFAULT_ALLOW) && !listed(reviewed, d->name))
			fail_msg("'%s' is allowed by default but not reviewed", d->name);
	}
	for (i = 0; reviewed[i]; i++) {
		assert_true(lev_tooltable_flags(reviewed[i]) & LEV_TOOLF_DEFAULT_ALLOW);
		assert_int_equal(lev_perm_default(reviewed[i]), LEV_ALLOW);
	}
}

static void test_the_effectful_tools_ask_under_every_spelling(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	assert_int_equal(res(&p, "write_file"), LEV_ASK);
	assert_int_equal(res(&p, "edit_file"), LEV_ASK);
	assert_int_equal(res(&p, "shell"), LEV_ASK);
	assert_int_equal(res(&p, "bash"), LEV_ASK);
}

/* ---- resolution ------------------------------------------------------------------ */

static void test_a_blueprint_cannot_loosen_a_tool_the_user_never_configured(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	bpagent(&p, "shell", LEV_ALLOW);
	assert_int_equal(res(&p, "shell"), LEV_ASK);
	pin_init(&p);
	stage(&p, "bash", LEV_ALLOW);
	assert_int_equal(res(&p, "shell"), LEV_ASK);
	pin_init(&p);
	stage(&p, "write_file", LEV_ALLOW);
	bpagent(&p, "edit_file", LEV_ALLOW);
	assert_int_equal(res(&p, "write_file"), LEV_ASK);
	assert_int_equal(res(&p, "edit_file"), LEV_ASK);
	/* a tool unknown to lev (a script tool the package ships) too */
	pin_init(&p);
	bpagent(&p, "exfiltrate", LEV_ALLOW);
	assert_int_equal(res(&p, "exfiltrate"), LEV_ASK);
}

static void test_a_blueprint_may_still_tighten_anything(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	bpagent(&p, "read_file", LEV_ASK);
	stage(&p, "list_dir", LEV_DENY);
	assert_int_equal(res(&p, "read_file"), LEV_ASK);
	assert_int_equal(res(&p, "list_dir"), LEV_DENY);
	global(&p, "shell", LEV_ALLOW);
	stage(&p, "shell", LEV_ASK);
	assert_int_equal(res(&p, "shell"), LEV_ASK);
}

static void test_a_blueprint_may_preapprove_the_read_only_web_tools(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	bpagent(&p, "web_fetch", LEV_ALLOW);
	stage(&p, "web_search", LEV_ALLOW);
	assert_int_equal(res(&p, "web_fetch"), LEV_ALLOW);
	assert_int_equal(res(&p, "web_search"), LEV_ALLOW);
	/* ...but not past a user's ceiling */
	global(&p, "web_fetch", LEV_ASK);
	assert_int_equal(res(&p, "web_fetch"), LEV_ASK);
}

static void test_an_opted_in_blueprint_may_loosen_anything(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	p.in.blueprint_may_loosen = true;
	bpagent(&p, "shell", LEV_ALLOW);
	stage(&p, "write_file", LEV_ALLOW);
	assert_int_equal(res(&p, "shell"), LEV_ALLOW);
	assert_int_equal(res(&p, "write_file"), LEV_ALLOW);
	/* a user ceiling still bounds it */
	global(&p, "shell", LEV_ASK);
	assert_int_equal(res(&p, "shell"), LEV_ASK);
}

static void test_a_configured_ceiling_still_bounds_a_blueprint(void **state)
{
	struct pin p;

	(void)state;
	/* up to the ceiling... */
	pin_init(&p);
	global(&p, "shell", LEV_ALLOW);
	bpagent(&p, "shell", LEV_ALLOW);
	assert_int_equal(res(&p, "shell"), LEV_ALLOW);
	/* ...and no further */
	pin_init(&p);
	global(&p, "shell", LEV_ASK);
	bpagent(&p, "shell", LEV_ALLOW);
	assert_int_equal(res(&p, "shell"), LEV_ASK);
	pin_init(&p);
	global(&p, "write_file", LEV_DENY);
	stage(&p, "write_file", LEV_ALLOW);
	assert_int_equal(res(&p, "write_file"), LEV_DENY);
}

static void test_stage_and_agent_layers(void **state)
{
	struct pin p;

	(void)state;
	/* the stage may tighten the user's setting but not loosen it */
	pin_init(&p);
	global(&p, "shell", LEV_ALLOW);
	stage(&p, "shell", LEV_DENY);
	assert_int_equal(res(&p, "shell"), LEV_DENY);
	pin_init(&p);
	global(&p, "shell", LEV_DENY);
	stage(&p, "shell", LEV_ALLOW);
	assert_int_equal(res(&p, "shell"), LEV_DENY);
	/* the blueprint's agent layer is clamped the same way */
	pin_init(&p);
	global(&p, "shell", LEV_ASK);
	bpagent(&p, "shell", LEV_ALLOW);
	assert_int_equal(res(&p, "shell"), LEV_ASK);
	/* the stage overrides the blueprint's agent level */
	pin_init(&p);
	global(&p, "shell", LEV_ALLOW);
	bpagent(&p, "shell", LEV_DENY);
	stage(&p, "shell", LEV_ASK);
	assert_int_equal(res(&p, "shell"), LEV_ASK);
	/* the user's agent entry replaces the global one for that agent */
	pin_init(&p);
	global(&p, "shell", LEV_DENY);
	agent(&p, "shell", LEV_ALLOW);
	assert_int_equal(res(&p, "shell"), LEV_ALLOW);
	pin_init(&p);
	global(&p, "shell", LEV_ALLOW);
	agent(&p, "bash", LEV_DENY);
	assert_int_equal(res(&p, "shell"), LEV_DENY);
	/* global overrides the default both ways */
	pin_init(&p);
	global(&p, "write_file", LEV_ALLOW);
	global(&p, "read_file", LEV_DENY);
	assert_int_equal(res(&p, "write_file"), LEV_ALLOW);
	assert_int_equal(res(&p, "read_file"), LEV_DENY);
	/* nothing said: the default */
	pin_init(&p);
	global(&p, "other", LEV_DENY);
	assert_int_equal(res(&p, "read_file"), LEV_ALLOW);
	assert_int_equal(res(&p, "write_file"), LEV_ASK);
	assert_int_equal(res(&p, "github__create_issue"), LEV_ASK);
}

static void test_several_spellings_the_strictest_wins(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	global(&p, "shell", LEV_ALLOW);
	global(&p, "bash", LEV_DENY);
	assert_int_equal(res(&p, "shell"), LEV_DENY);
	assert_int_equal(res(&p, "bash"), LEV_DENY);
}

static void test_deny_is_final(void **state)
{
	struct pin p;

	(void)state;
	/* --yolo does not override a configured deny */
	pin_init(&p);
	global(&p, "shell", LEV_DENY);
	p.in.yolo = true;
	assert_int_equal(res(&p, "shell"), LEV_DENY);
	/* nor does a named --allow */
	pin_init(&p);
	global(&p, "shell", LEV_DENY);
	allow(&p, "shell");
	assert_int_equal(res(&p, "shell"), LEV_DENY);
	/* nor --yolo a blueprint's own deny */
	pin_init(&p);
	stage(&p, "write_file", LEV_DENY);
	p.in.yolo = true;
	assert_int_equal(res(&p, "write_file"), LEV_DENY);
	pin_init(&p);
	bpagent(&p, "bash", LEV_DENY);
	allow(&p, "bash");
	p.in.yolo = true;
	assert_int_equal(res(&p, "shell"), LEV_DENY);
	/* a unanimous deny: nothing lifts it */
	pin_init(&p);
	global(&p, "shell", LEV_DENY);
	agent(&p, "shell", LEV_DENY);
	bpagent(&p, "shell", LEV_DENY);
	stage(&p, "shell", LEV_DENY);
	allow(&p, "shell");
	p.in.yolo = true;
	assert_int_equal(res(&p, "shell"), LEV_DENY);
}

static void test_launch_overrides(void **state)
{
	struct pin p;
	struct lev_perm_resolution r;

	(void)state;
	/* --yolo still collapses ask to allow */
	pin_init(&p);
	p.in.yolo = true;
	assert_int_equal(res(&p, "shell"), LEV_ALLOW);
	assert_int_equal(res(&p, "anything_at_all"), LEV_ALLOW);
	/* a launch flag outranks a stage's ask */
	pin_init(&p);
	stage(&p, "write_file", LEV_ASK);
	allow(&p, "write_file");
	assert_int_equal(res(&p, "write_file"), LEV_ALLOW);
	assert_int_equal(res(&p, "edit_file"), LEV_ASK);
	/* an --allow written as the alias reaches the tool */
	pin_init(&p);
	allow(&p, "bash");
	assert_int_equal(res(&p, "shell"), LEV_ALLOW);
	/* the specific flag is the one named over the wildcard */
	pin_init(&p);
	allow(&p, "shell");
	p.in.yolo = true;
	lev_perm_resolve(&p.in, "shell", &r);
	assert_int_equal(r.why, LEV_PERM_WHY_LAUNCH);
	assert_string_equal(r.launch, "shell");
	lev_perm_resolve(&p.in, "write_file", &r);
	assert_string_equal(r.launch, "--yolo");
	/* full chain without a deny: the stage's ask is the tightest, the flag relaxes it */
	pin_init(&p);
	global(&p, "shell", LEV_ALLOW);
	agent(&p, "shell", LEV_ALLOW);
	bpagent(&p, "shell", LEV_ALLOW);
	stage(&p, "shell", LEV_ASK);
	assert_int_equal(res(&p, "shell"), LEV_ASK);
	allow(&p, "shell");
	assert_int_equal(res(&p, "shell"), LEV_ALLOW);
}

static void test_a_configured_deny_covers_the_sub_agent_tools(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	assert_int_equal(tool_call(&p, "spawn_agent", NULL), LEV_ALLOW);
	assert_int_equal(tool_call(&p, "kill_agent", NULL), LEV_ALLOW);
	global(&p, "spawn_agent", LEV_DENY);
	p.in.yolo = true;
	assert_int_equal(tool_call(&p, "spawn_agent", NULL), LEV_DENY);
	assert_int_equal(tool_call(&p, "kill_agent", NULL), LEV_ALLOW);
}

/* ---- the effect clamp ------------------------------------------------------------ */

static void test_a_denied_write_tool_denies_a_shell_redirect(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	global(&p, "shell", LEV_ALLOW);
	global(&p, "write_file", LEV_DENY);
	assert_int_equal(shell_call(&p, "shell", "ls > out.txt", NULL), LEV_DENY);
	assert_int_equal(shell_call(&p, "bash", "echo x >> log", NULL), LEV_DENY);
	assert_int_equal(shell_call(&p, "shell", "cat <<EOF > f\nx\nEOF\n", NULL), LEV_DENY);
	/* a line that cannot be read counts as writing */
	assert_int_equal(shell_call(&p, "shell", "eval ls", NULL), LEV_DENY);
	assert_int_equal(shell_call(&p, "shell", "ls\r> x", NULL), LEV_DENY);
	/* --yolo does not lift the write deny either */
	p.in.yolo = true;
	assert_int_equal(shell_call(&p, "shell", "ls > out.txt", NULL), LEV_DENY);
}

static void test_the_clamp_never_loosens_a_shell_call(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	global(&p, "write_file", LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "ls > out", NULL), LEV_ASK);
	global(&p, "shell", LEV_DENY);
	assert_int_equal(shell_call(&p, "shell", "ls > out", NULL), LEV_DENY);
}

static void test_a_call_that_writes_nothing_is_untouched(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	global(&p, "shell", LEV_ALLOW);
	global(&p, "write_file", LEV_DENY);
	assert_int_equal(shell_call(&p, "shell", "ls -la", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "ls 2>/dev/null >/dev/null 2>&1", NULL),
			 LEV_ALLOW);
	/* a non-shell tool and a call without a command are not the clamp's business */
	assert_int_equal(tool_call(&p, "read_file", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", NULL, NULL), LEV_ALLOW);
}

static void test_the_write_policy_and_launch_under_the_clamp(void **state)
{
	struct pin p;

	(void)state;
	/* --allow shell alone does not cover the writes a line makes */
	pin_init(&p);
	allow(&p, "shell");
	assert_int_equal(shell_call(&p, "shell", "ls", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "ls > out", NULL), LEV_ASK);
	allow(&p, "write_file");
	assert_int_equal(shell_call(&p, "shell", "ls > out", NULL), LEV_ALLOW);
	/* --yolo covers both */
	pin_init(&p);
	p.in.yolo = true;
	assert_int_equal(shell_call(&p, "shell", "ls > out", NULL), LEV_ALLOW);
}

/* ---- coverage: safe lists and grants ----------------------------------------------- */

static void test_safe_lists_turn_ask_into_allow_only_when_every_key_is_covered(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	safe_defaults(&p);
	assert_int_equal(shell_call(&p, "shell", "ls -la", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "git status && git diff", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "ls && curl x", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "ls > out", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "X=1 ls", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "eval ls", NULL), LEV_ASK);
	/* a safe list never lifts a deny */
	global(&p, "shell", LEV_DENY);
	assert_int_equal(shell_call(&p, "shell", "ls", NULL), LEV_DENY);
	/* user entries widen onto the program they name, env entries are exact */
	pin_init(&p);
	safe(&p, "shell:cargo test", "[safe_commands]");
	safe(&p, "shell:rg", "[safe_commands]");
	safe(&p, "shell:env:RUST_LOG", "[safe_commands]");
	assert_int_equal(shell_call(&p, "shell", "cargo test --all", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "cargo build", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "rg -n foo src", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "RUST_LOG=debug cargo test", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "RUSTFLAGS=x cargo test", NULL), LEV_ASK);
	/* a tools entry pre-approves a non-shell tool */
	safe(&p, "web_fetch", "[safe_commands]");
	assert_int_equal(tool_call(&p, "web_fetch", NULL), LEV_ALLOW);
	assert_int_equal(tool_call(&p, "web_search", NULL), LEV_ASK);
	/* safe lists never reach an allow the clamp took away */
	pin_init(&p);
	safe_defaults(&p);
	global(&p, "shell", LEV_ALLOW);
	global(&p, "write_file", LEV_DENY);
	assert_int_equal(shell_call(&p, "shell", "ls > out", NULL), LEV_DENY);
}

static void test_safe_lists_cover_the_workdir_not_the_machine(void **state)
{
	struct pin p;
	struct lev_grants g;
	char **keys = lev_shellkeys_keys("cat /etc/hostname");
	char *a;

	(void)state;
	pin_init(&p);
	safe_defaults(&p);
	assert_int_equal(shell_call(&p, "shell", "cat README.md", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "cat ~/.ssh/id_rsa", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "cat ../secret", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "grep -r key /etc", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "wc -c < /etc/shadow", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "cd / && cat etc/passwd", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "echo ~ /etc", NULL), LEV_ALLOW);
	a = account(&p, "shell", "cat ~/.ssh/id_rsa");
	assert_non_null(strstr(a, "the safe commands do not cover it: it names '~/.ssh/id_rsa', "
				  "outside the working directory"));
	free(a);
	/* the user's own answers still count: a grant, or shell = "allow" */
	lev_grants_init(&g);
	lev_grants_enter_stage(&g, 0);
	assert_int_equal(lev_grants_add(&g, LEV_GRANT_RUN, keys), 0);
	assert_int_equal(shell_call(&p, "shell", "cat /etc/hostname", &g), LEV_ALLOW);
	lev_grants_release(&g);
	lev_strv_free(keys);
	global(&p, "shell", LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "cat ~/.ssh/id_rsa", NULL), LEV_ALLOW);
}

/* Each attack line asks; its benign twin is pre-approved (issue 13, class 1). */
static void test_safe_programs_are_granted_with_safe_shapes_only(void **state)
{
	static const char *const pairs[][2] = {
		{ "printf {-v,} 'a[$(id)]' x", "printf '%s\\n' x" },
		{ "printf '-v' x y", "printf -- '%s' x" },
		{ "git {--output=o,} log", "git log --oneline" },
		{ "git -c core.fsmonitor=./x status", "git status" },
		{ "git --exec-path=. status", "git status --short" },
		{ "git --git-dir=/x log", "git log" },
		{ "git --work-tree=/ status", "git diff" },
		{ "date {-s,} 2020-01-01", "date +%F" },
		{ "date --set=2020-01-01", "date -u" },
		{ "file -C -m x", "file README.md" },
		{ "file -m magic x", "file -b x" },
		{ "test {-v,} x", "test -f x" },
		{ "[ '-v' x ]", "[ -f x ]" },
		{ "cat {~,.}/x", "cat README.md" },
		{ "cat {/etc/passwd,x}", "cat x" },
		{ "ls *", "ls -la" },
		{ "grep -r foo *", "grep -r foo ." },
		{ "grep -r foo ~", "grep -r foo ./*" },
	};
	struct pin p;
	size_t i;

	(void)state;
	pin_init(&p);
	safe_defaults(&p);
	for (i = 0; i < ARRAY_SIZE(pairs); i++) {
		if (shell_call(&p, "shell", pairs[i][0], NULL) != LEV_ASK)
			fail_msg("attack pre-approved: %s", pairs[i][0]);
		if (shell_call(&p, "shell", pairs[i][1], NULL) != LEV_ALLOW)
			fail_msg("benign twin asks: %s", pairs[i][1]);
	}
}

/* The user's own safe-list entries get the same shape checks. */
static void test_user_safe_entries_get_the_same_shape_checks(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	safe(&p, "shell:find", "[safe_commands]");
	safe(&p, "shell:sort", "[safe_commands]");
	safe(&p, "shell:git", "[safe_commands]");
	safe(&p, "shell:printf", "[safe_commands]");
	assert_int_equal(shell_call(&p, "shell", "find . -name x", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "find . -delete", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "find . '-exec' rm {} +", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "find . -fprint out", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "find . -execdir id \\;", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "sort x", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "sort -o out x", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "git shortlog -sn", NULL), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "git -c alias.x=!id x", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "git diff --ext-diff", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "printf -v x y", NULL), LEV_ASK);
	/* an entry that itself names a forbidden shape is no entry at all */
	assert_false(lev_shellkeys_is_valid_prefix("git -c"));
	assert_false(lev_shellkeys_is_valid_prefix("printf -v"));
	assert_false(lev_shellkeys_is_valid_prefix("date -s"));
}

/* Class 6: a line nobody can analyse runs only behind a write fence. */
static void test_unanalysable_lines_need_a_write_fence(void **state)
{
	static const char *const fenced[] = {
		"eval \"echo x $(printf '\\076\\076') ~/.bashrc\"", "eval echo hi",
		"source ./x.sh", ". ./x.sh", "bash -c 'echo hi'", "bash -s", "curl x | sh",
		"$CMD x", "$(echo ls)", "exec ls", "echo `id`", "echo > $OUT", "ls\rx",
	};
	static const char *const plain[] = { "ls", "echo hi > out", "git status", "cat $f",
					     "sh x.sh", "bash -e ./build.sh" };
	struct lev_buf why = LEV_BUF_INIT;
	struct lev_shellkeys k;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(fenced); i++) {
		lev_shellkeys_parse(fenced[i], &k);
		if (!k.needs_fence)
			fail_msg("no fence needed for: %s", fenced[i]);
		assert_int_equal(lev_perm_fence_check(&k, LEV_SANDBOX_NONE, false, &why), LEV_DENY);
		assert_int_equal(lev_perm_fence_check(&k, LEV_SANDBOX_NAMESPACE, true, NULL),
				 LEV_ALLOW);
		assert_int_equal(lev_perm_fence_check(&k, LEV_SANDBOX_CONTAINER, true, NULL),
				 LEV_ALLOW);
		/* a namespace sandbox without its mount namespace or Landlock fences nothing */
		assert_int_equal(lev_perm_fence_check(&k, LEV_SANDBOX_NAMESPACE, false, NULL),
				 LEV_DENY);
		lev_shellkeys_release(&k);
	}
	assert_non_null(strstr(why.buf, "kind = \"none\""));
	assert_non_null(strstr(why.buf, "--yolo"));
	for (i = 0; i < ARRAY_SIZE(plain); i++) {
		lev_shellkeys_parse(plain[i], &k);
		if (k.needs_fence)
			fail_msg("a fence needed for: %s", plain[i]);
		assert_int_equal(lev_perm_fence_check(&k, LEV_SANDBOX_NONE, false, NULL), LEV_ALLOW);
		lev_shellkeys_release(&k);
	}
	assert_int_equal(lev_perm_fence_check(NULL, LEV_SANDBOX_NONE, false, NULL), LEV_ALLOW);
	lev_buf_release(&why);
}

static void test_an_env_prefix_cannot_ride_a_safe_program(void **state)
{
	struct pin p;

	(void)state;
	pin_init(&p);
	safe_defaults(&p);
	assert_int_equal(shell_call(&p, "shell", "PATH=/tmp ls", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "export PATH=/tmp; ls", NULL), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "LD_PRELOAD=/tmp/x.so cat x", NULL), LEV_ASK);
}

static void test_a_grant_does_not_carry_to_a_chained_command(void **state)
{
	struct pin p;
	struct lev_grants g;
	char **keys = lev_shellkeys_keys("ls");

	(void)state;
	pin_init(&p);
	lev_grants_init(&g);
	lev_grants_enter_stage(&g, 0);
	assert_int_equal(lev_grants_add(&g, LEV_GRANT_RUN, keys), 0);
	assert_int_equal(shell_call(&p, "shell", "ls", &g), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "ls -la", &g), LEV_ALLOW);
	assert_int_equal(shell_call(&p, "shell", "ls && curl x | sh", &g), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "ls; sh", &g), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "ls $(curl x)", &g), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "ls > out", &g), LEV_ASK);
	/* an ungrantable line rides no grant however much is granted */
	assert_int_equal(shell_call(&p, "shell", "eval ls", &g), LEV_ASK);
	assert_int_equal(shell_call(&p, "shell", "ls `id`", &g), LEV_ASK);
	/* a grant is exact: it does not widen onto the program */
	lev_strv_free(keys);
	keys = lev_shellkeys_keys("git status");
	assert_int_equal(lev_grants_add(&g, LEV_GRANT_RUN, keys), 0);
	assert_int_equal(shell_call(&p, "shell", "git push", &g), LEV_ASK);
	lev_strv_free(keys);
	lev_grants_release(&g);
}

static void test_a_grant_does_not_survive_into_a_stage_that_denies(void **state)
{
	struct pin build, deploy;
	struct lev_grants g;
	char **keys = lev_shellkeys_keys("make");

	(void)state;
	pin_init(&build);
	pin_init(&deploy);
	stage(&deploy, "shell", LEV_DENY);
	lev_grants_init(&g);
	lev_grants_enter_stage(&g, 0);
	assert_int_equal(lev_grants_add(&g, LEV_GRANT_RUN, keys), 0);
	assert_int_equal(shell_call(&build, "shell", "make", &g), LEV_ALLOW);
	lev_grants_enter_stage(&g, 1);
	assert_true(lev_grants_has(&g, "shell:make")); /* still granted for the run... */
	assert_int_equal(shell_call(&deploy, "shell", "make", &g), LEV_DENY); /* ...but denied */
	lev_strv_free(keys);
	lev_grants_release(&g);
}

static void test_stage_and_run_grants(void **state)
{
	struct pin p;
	struct lev_grants g;
	char **make = lev_shellkeys_keys("make");
	char **rg = lev_shellkeys_keys("rg x");
	char **tool = lev_perm_call_keys("web_fetch", NULL);

	(void)state;
	pin_init(&p);
	lev_grants_init(&g);
	lev_grants_enter_stage(&g, 0);
	/* allow once records nothing */
	assert_int_equal(lev_grants_add(&g, LEV_GRANT_ONCE, make), 0);
	assert_int_equal(shell_call(&p, "shell", "make", &g), LEV_ASK);
	/* a stage grant covers the rest of the stage */
	assert_int_equal(lev_grants_add(&g, LEV_GRANT_STAGE, make), 0);
	assert_int_equal(lev_grants_add(&g, LEV_GRANT_RUN, rg), 0);
	assert_int_equal(lev_grants_add(&g, LEV_GRANT_STAGE, tool), 0);
	assert_int_equal(shell_call(&p, "shell", "make", &g), LEV_ALLOW);
	assert_int_equal(tool_call(&p, "web_fetch", &g), LEV_ALLOW);
	/* re-entering the same stage keeps it */
	lev_grants_enter_stage(&g, 0);
	assert_int_equal(shell_call(&p, "shell", "make", &g), LEV_ALLOW);
	/* and nothing after the run moves on */
	lev_grants_enter_stage(&g, 1);
	assert_int_equal(shell_call(&p, "shell", "make", &g), LEV_ASK);
	assert_int_equal(tool_call(&p, "web_fetch", &g), LEV_ASK);
	lev_grants_enter_stage(&g, 0);
	assert_int_equal(shell_call(&p, "shell", "make", &g), LEV_ASK);
	/* a run grant survives a stage change */
	assert_int_equal(shell_call(&p, "shell", "rg x", &g), LEV_ALLOW);
	/* an ungrantable call records nothing */
	assert_int_equal(lev_grants_add(&g, LEV_GRANT_RUN, NULL), 0);
	lev_strv_free(make);
	lev_strv_free(rg);
	lev_strv_free(tool);
	lev_grants_release(&g);
}

static void test_grants_are_bounded(void **state)
{
	struct lev_grants g;
	char *k[2] = { NULL, NULL };
	int i, r = 0;

	(void)state;
	lev_grants_init(&g);
	for (i = 0; i <= LEV_GRANTS_MAX && r == 0; i++) {
		k[0] = xasprintf("shell:p%d", i);
		r = lev_grants_add(&g, LEV_GRANT_RUN, k);
		free(k[0]);
	}
	assert_int_equal(r, -E2BIG);
	assert_int_equal(lev_strv_len(g.run), LEV_GRANTS_MAX);
	lev_grants_release(&g);
}

static void test_call_keys(void **state)
{
	struct lev_shellkeys k;
	char **v;

	(void)state;
	v = lev_perm_call_keys("read_file", NULL);
	assert_string_equal(v[0], "read_file");
	assert_null(v[1]);
	lev_strv_free(v);
	/* the alias keys like the tool */
	lev_shellkeys_parse("git status", &k);
	v = lev_perm_call_keys("bash", &k);
	assert_string_equal(v[0], "shell:git status");
	lev_strv_free(v);
	lev_shellkeys_release(&k);
	/* a shell call without a command is not grantable */
	assert_null(lev_perm_call_keys("shell", NULL));
	lev_shellkeys_parse("eval x", &k);
	assert_null(lev_perm_call_keys("shell", &k));
	lev_shellkeys_release(&k);
}

/* ---- the rule each decision names -------------------------------------------------- */

static void test_every_decision_names_its_rule(void **state)
{
	struct pin p;
	char *s;

	(void)state;
	pin_init(&p);
	agent(&p, "shell", LEV_DENY);
	s = account(&p, "shell", "ls");
	assert_string_equal(s, "[agent_tool_permissions.coder] shell = \"deny\"");
	free(s);

	pin_init(&p);
	s = account(&p, "bash", "make");
	assert_string_equal(s, "built-in default shell = \"ask\"");
	free(s);

	pin_init(&p);
	stage(&p, "shell", LEV_ALLOW);
	s = account(&p, "shell", "make");
	assert_string_equal(s, "built-in default shell = \"ask\"; blueprint "
			       "[stages.build.tool_permissions] shell = \"allow\" cannot loosen it");
	free(s);

	pin_init(&p);
	p.in.yolo = true;
	s = account(&p, "shell", "make");
	assert_string_equal(s, "--yolo (over built-in default shell = \"ask\")");
	free(s);

	pin_init(&p);
	stage(&p, "shell", LEV_DENY);
	p.in.yolo = true;
	s = account(&p, "shell", "make");
	assert_string_equal(s, "blueprint [stages.build.tool_permissions] shell = \"deny\"; a deny "
			       "is final: --yolo does not lift it");
	free(s);

	pin_init(&p);
	global(&p, "shell", LEV_ALLOW);
	global(&p, "write_file", LEV_DENY);
	s = account(&p, "shell", "ls > x");
	assert_string_equal(s, "the line writes a file, so write_file's rule applies: "
			       "[tool_permissions] write_file = \"deny\"; shell alone: "
			       "[tool_permissions] shell = \"allow\"");
	free(s);

	pin_init(&p);
	safe_defaults(&p);
	s = account(&p, "shell", "ls");
	assert_string_equal(s, "every key of the call is covered by the safe commands of built-in "
			       "list (otherwise: built-in default shell = \"ask\")");
	free(s);
}

/* ---- the glue: config.toml + agent.leviath -> input --------------------------------- */

static const char bp_text[] =
	"[agent]\nname = \"coder\"\n"
	"[tool_permissions]\nshell = \"allow\"\nweb_fetch = \"allow\"\n"
	"[safe_commands]\nshell = [\"make\"]\ntools = [\"web_search\"]\n"
	"[stages.build]\navailable_tools = [\"shell\", \"web_fetch\", \"web_search\"]\n"
	"[stages.build.tool_permissions]\nwrite_file = \"deny\"\n"
	"[stages.ship]\navailable_tools = [\"shell\"]\n"
	"[stages.ship.tool_permissions]\nshell = \"deny\"\n";

/* The blueprints below are the installed agent 'coder', unchanged, unless a
 * test says otherwise (lev_agentstore_bind() sets this for real). */
static bool bp_verified = true;

static void setup_from(const char *config_text, const char *stage_name, bool yolo,
		       struct lev_perm_setup *s, struct lev_config *cfg, struct lev_blueprint **bp)
{
	struct lev_err err = LEV_ERR_INIT;

	if (lev_config_parse(config_text, strlen(config_text), "config.toml", cfg, &err) < 0)
		fail_msg("config: %s", err.msg);
	if (lev_blueprint_parse(bp_text, strlen(bp_text), "agent.leviath", "/nonexistent", bp,
				&err) < 0)
		fail_msg("blueprint: %s", err.msg);
	(*bp)->identity_verified = bp_verified;
	if (!bp_verified)
		(*bp)->identity_note = strdup("'/nonexistent' is not the installed agent 'coder'");
	if (lev_perm_setup_init(s, cfg, *bp, stage_name, yolo, NULL, &err) < 0)
		fail_msg("setup: %s", err.msg);
}

static void teardown(struct lev_perm_setup *s, struct lev_config *cfg, struct lev_blueprint *bp)
{
	lev_perm_setup_release(s);
	lev_config_release(cfg);
	lev_blueprint_free(bp);
}

static enum lev_verdict setup_shell(const struct lev_perm_setup *s, const char *line)
{
	struct lev_shellkeys k;
	struct lev_perm_decision d;

	lev_shellkeys_parse(line, &k);
	lev_perm_decide(&s->in, "shell", &k, NULL, &d);
	lev_shellkeys_release(&k);
	return d.verdict;
}

static void test_glue_layers_and_sources(void **state)
{
	struct lev_perm_setup s;
	struct lev_config cfg;
	struct lev_blueprint *bp = NULL;
	struct lev_perm_decision d;
	struct lev_buf b = LEV_BUF_INIT;

	(void)state;
	setup_from("[tool_permissions]\nshell = \"ask\"\n"
		   "[agent_tool_permissions.coder]\nedit_file = \"deny\"\n",
		   NULL, false, &s, &cfg, &bp);
	assert_string_equal(s.stage, "build");
	assert_int_equal(setup_shell(&s, "make"), LEV_ASK); /* blueprint list is inert */
	assert_int_equal(setup_shell(&s, "ls"), LEV_ALLOW); /* built-in list */
	assert_int_equal(setup_shell(&s, "ls > x"), LEV_DENY); /* stage denies write_file */
	lev_perm_decide(&s.in, "web_fetch", NULL, NULL, &d);
	assert_int_equal(d.verdict, LEV_ALLOW); /* loosenable */
	lev_perm_decide(&s.in, "web_search", NULL, NULL, &d);
	assert_int_equal(d.verdict, LEV_ASK); /* its safe tools entry is inert too */
	lev_perm_decide(&s.in, "edit_file", NULL, NULL, &d);
	assert_int_equal(lev_perm_describe(&d, &b), 0);
	assert_string_equal(b.buf, "[agent_tool_permissions.coder] edit_file = \"deny\"");
	lev_buf_release(&b);
	teardown(&s, &cfg, bp);

	/* the ship stage denies the shell whatever the launch flags say */
	setup_from("", "ship", true, &s, &cfg, &bp);
	assert_int_equal(setup_shell(&s, "ls"), LEV_DENY);
	teardown(&s, &cfg, bp);
}

static void test_glue_unknown_stage(void **state)
{
	struct lev_config cfg;
	struct lev_blueprint *bp = NULL;
	struct lev_perm_setup s;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	lev_config_init(&cfg);
	assert_int_equal(lev_blueprint_parse(bp_text, strlen(bp_text), "agent.leviath", "/x", &bp,
					     &err),
			 0);
	assert_int_equal(lev_perm_setup_init(&s, &cfg, bp, "nope", false, NULL, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "nope"));
	lev_config_release(&cfg);
	lev_blueprint_free(bp);
}

static void test_a_blueprint_list_is_inert_until_the_user_opts_in(void **state)
{
	struct lev_perm_setup s;
	struct lev_config cfg;
	struct lev_blueprint *bp = NULL;
	struct lev_perm_decision d;

	(void)state;
	setup_from("[security]\nallow_blueprint_safe_commands = true\n", NULL, false, &s, &cfg,
		   &bp);
	assert_int_equal(setup_shell(&s, "make -j4"), LEV_ALLOW);
	lev_perm_decide(&s.in, "web_search", NULL, NULL, &d);
	assert_int_equal(d.verdict, LEV_ALLOW);
	assert_string_equal(d.safe_sources[0], "blueprint [safe_commands]");
	teardown(&s, &cfg, bp);

	setup_from("[agent_safe_commands.coder]\nallow_blueprint = true\n", NULL, false, &s, &cfg,
		   &bp);
	assert_int_equal(setup_shell(&s, "make"), LEV_ALLOW);
	teardown(&s, &cfg, bp);

	setup_from("[agent_safe_commands.other]\nallow_blueprint = true\n", NULL, false, &s, &cfg,
		   &bp);
	assert_int_equal(setup_shell(&s, "make"), LEV_ASK);
	teardown(&s, &cfg, bp);
}

/*
 * Issue 13 class 3: a blueprint that only calls itself 'coder' (run from a
 * path, or an installed copy whose files changed) gets none of the user's
 * loosening for 'coder', and is told; the tightening still applies.
 */
static void test_agent_grants_follow_identity(void **state)
{
	static const char *const cfg_text =
		"[tool_permissions]\nweb_fetch = \"deny\"\nedit_file = \"ask\"\n"
		"[agent_tool_permissions.coder]\nshell = \"allow\"\nweb_fetch = \"ask\"\n"
		"write_file = \"deny\"\nlist_dir = \"ask\"\n"
		"[agent_safe_commands.coder]\nshell = [\"cargo test\"]\nallow_blueprint = true\n"
		"[agent_read_paths.coder]\nallow = [\"/srv/shared\"]\n";
	struct lev_perm_setup s;
	struct lev_config cfg;
	struct lev_blueprint *bp = NULL;
	struct lev_perm_decision d;

	(void)state;
	/* the benign twin: the installed, unchanged 'coder' gets its grants */
	setup_from(cfg_text, NULL, false, &s, &cfg, &bp);
	assert_int_equal(setup_shell(&s, "rm -rf x"), LEV_ALLOW);	/* shell = allow */
	assert_int_equal(setup_shell(&s, "cargo test"), LEV_ALLOW);
	assert_int_equal(setup_shell(&s, "make"), LEV_ALLOW);	/* allow_blueprint */
	lev_perm_decide(&s.in, "web_fetch", NULL, NULL, &d);
	assert_int_equal(d.verdict, LEV_ASK);	/* the agent entry replaces the global deny */
	assert_null(s.warnings);
	teardown(&s, &cfg, bp);

	/* the attack: the same name, not the installed agent */
	bp_verified = false;
	setup_from(cfg_text, NULL, false, &s, &cfg, &bp);
	bp_verified = true;
	assert_int_equal(setup_shell(&s, "rm -rf x"), LEV_ASK);
	assert_int_equal(setup_shell(&s, "cargo test"), LEV_ASK);
	assert_int_equal(setup_shell(&s, "make"), LEV_ASK);
	lev_perm_decide(&s.in, "web_fetch", NULL, NULL, &d);
	assert_int_equal(d.verdict, LEV_DENY);	/* an agent "ask" may not loosen a deny */
	/* tightening still applies to any blueprint of that name */
	lev_perm_decide(&s.in, "write_file", NULL, NULL, &d);
	assert_int_equal(d.verdict, LEV_DENY);
	lev_perm_decide(&s.in, "list_dir", NULL, NULL, &d);
	assert_int_equal(d.verdict, LEV_ASK);	/* stricter than the default allow */
	/* and it is told which grants and why */
	assert_int_equal(lev_strv_len(s.warnings), 1);
	assert_non_null(strstr(s.warnings[0], "per-agent grants for 'coder' are not applied"));
	assert_non_null(strstr(s.warnings[0], "[agent_read_paths.coder]"));
	assert_non_null(strstr(s.warnings[0], "[agent_safe_commands.coder]"));
	assert_non_null(strstr(s.warnings[0], "is not the installed agent 'coder'"));
	teardown(&s, &cfg, bp);

	/* the read-path grants follow the same name */
	assert_int_equal(lev_config_parse(cfg_text, strlen(cfg_text), "config.toml", &cfg, NULL),
			 0);
	{
		char **g = lev_config_read_path_grants_for_agent(&cfg, NULL);

		assert_null(g);
		g = lev_config_read_path_grants_for_agent(&cfg, "coder");
		assert_int_equal(lev_strv_len(g), 1);
		lev_strv_free(g);
	}
	lev_config_release(&cfg);
}

static void test_each_layer_contributes_and_bad_entries_are_skipped(void **state)
{
	struct lev_perm_setup s;
	struct lev_config cfg;
	struct lev_blueprint *bp = NULL;
	struct lev_perm_decision d;
	struct lev_shellkeys k;

	(void)state;
	setup_from("[safe_commands]\ndefaults = false\nshell = [\"rg\", \"ls -la\", \"> x\"]\n"
		   "tools = [\"shell:curl\", \"read_files\"]\n"
		   "[agent_safe_commands.coder]\nshell = [\"cargo test\", \"env:RUST_LOG\"]\n",
		   NULL, false, &s, &cfg, &bp);
	/* defaults = false: the built-in list is off */
	assert_int_equal(setup_shell(&s, "ls"), LEV_ASK);
	assert_int_equal(setup_shell(&s, "rg -n x"), LEV_ALLOW);
	assert_int_equal(setup_shell(&s, "RUST_LOG=1 cargo test"), LEV_ALLOW);
	/* the invalid entries were skipped, with a warning each, and the rest still works */
	assert_int_equal(lev_strv_len(s.warnings), 3);
	assert_non_null(strstr(s.warnings[0], "'shell:curl'"));
	assert_int_equal(setup_shell(&s, "curl x"), LEV_ASK);
	/* the narrowest source is named */
	lev_shellkeys_parse("cargo test", &k);
	lev_perm_decide(&s.in, "shell", &k, NULL, &d);
	assert_int_equal(d.verdict, LEV_ALLOW);
	assert_int_equal(d.n_safe_sources, 1);
	assert_string_equal(d.safe_sources[0], "[agent_safe_commands.coder]");
	lev_shellkeys_release(&k);
	teardown(&s, &cfg, bp);
}

/* ---- the redirect gate --------------------------------------------------------------- */

struct tree {
	char *root;	/* real path of a scratch dir */
	char *wd;	/* root/wd */
	char *home;	/* root/home */
	int wd_fd;
};

static void tree_make(struct tree *t)
{
	char tmpl[] = "/tmp/lev-test-perm.XXXXXX";
	char *p, *real = NULL;
	int fd;

	assert_non_null(mkdtemp(tmpl));
	assert_non_null(real = realpath(tmpl, NULL));
	t->root = real;
	t->wd = xasprintf("%s/wd", real);
	t->home = xasprintf("%s/home", real);
	assert_int_equal(mkdir(t->wd, 0700), 0);
	assert_int_equal(mkdir(t->home, 0700), 0);
	p = xasprintf("%s/home/.ssh", real);
	assert_int_equal(mkdir(p, 0700), 0);
	free(p);
	p = xasprintf("%s/sub", t->wd);
	assert_int_equal(mkdir(p, 0700), 0);
	free(p);
	p = xasprintf("%s/outside", real);
	assert_int_equal(mkdir(p, 0700), 0);
	free(p);
	/* links inside the workdir: one stays in, two leave, one dangles out, one dangles in */
	p = xasprintf("%s/in-link", t->wd);
	assert_int_equal(symlink("sub", p), 0);
	free(p);
	p = xasprintf("%s/out-link", t->wd);
	assert_int_equal(symlink("../outside", p), 0);
	free(p);
	p = xasprintf("%s/ssh-link", t->wd);
	assert_int_equal(symlink(t->home, p), 0);
	free(p);
	p = xasprintf("%s/dangling-out", t->wd);
	assert_int_equal(symlink("/nonexistent-lev-dir/x", p), 0);
	free(p);
	p = xasprintf("%s/dangling-in", t->wd);
	assert_int_equal(symlink("sub/new", p), 0);
	free(p);
	fd = open(t->wd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	t->wd_fd = fd;
}

static void tree_free(struct tree *t)
{
	close(t->wd_fd);
	assert_int_equal(lev_rm_rf(t->root, NULL), 0);
	free(t->root);
	free(t->wd);
	free(t->home);
}

/* The redirect gate's verdict for LINE; *PATH_OUT (optional) gets the refused path. */
static enum lev_verdict redir(const struct tree *t, const char *line, char **path_out)
{
	struct lev_shellkeys k;
	struct lev_redirect_decision d;
	struct lev_err err = LEV_ERR_INIT;
	enum lev_verdict v;

	lev_shellkeys_parse(line, &k);
	if (lev_perm_redirect_check(t->wd_fd, t->wd, t->home, &k, &d, &err) < 0)
		fail_msg("redirect check of '%s': %s", line, err.msg);
	v = d.verdict;
	if (v == LEV_DENY)
		assert_non_null(d.reason);
	if (path_out)
		*path_out = d.path ? xstrdup(d.path) : NULL;
	lev_redirect_decision_release(&d);
	lev_shellkeys_release(&k);
	return v;
}

static void test_a_redirect_outside_the_workdir_is_refused(void **state)
{
	struct tree t;
	struct pin p;
	char *path = NULL, *want;

	(void)state;
	tree_make(&t);
	/* under --yolo the permission says allow... */
	pin_init(&p);
	p.in.yolo = true;
	assert_int_equal(shell_call(&p, "shell", "echo x > ~/.ssh/authorized_keys", NULL),
			 LEV_ALLOW);
	/* ...and the redirect gate still refuses, naming where it would land */
	assert_int_equal(redir(&t, "echo x > ~/.ssh/authorized_keys", &path), LEV_DENY);
	want = xasprintf("%s/.ssh/authorized_keys", t.home);
	assert_string_equal(path, want);
	free(want);
	free(path);
	assert_int_equal(redir(&t, "echo x >> ~/.bashrc", NULL), LEV_DENY);
	assert_int_equal(redir(&t, "ls > ../x", NULL), LEV_DENY);
	assert_int_equal(redir(&t, "ls > sub/../../x", NULL), LEV_DENY);
	assert_int_equal(redir(&t, "ls > /tmp/x", NULL), LEV_DENY);
	assert_int_equal(redir(&t, "ls 2> /etc/passwd", NULL), LEV_DENY);
	assert_int_equal(redir(&t, "ls > /dev/tty", NULL), LEV_DENY);
	assert_int_equal(redir(&t, "echo x > /dev/tcp/127.0.0.1/9", NULL), LEV_DENY);
	/* the second redirect on a line is checked too */
	assert_int_equal(redir(&t, "ls > ok.txt 2> ../err", NULL), LEV_DENY);
	/* a relative redirect after a cd out of the workdir */
	assert_int_equal(redir(&t, "cd /tmp && echo x > f", NULL), LEV_DENY);
	assert_int_equal(redir(&t, "cd .. && echo x > f", NULL), LEV_DENY);
	/* through links inside the workdir that leave it */
	assert_int_equal(redir(&t, "ls > out-link/x", &path), LEV_DENY);
	want = xasprintf("%s/outside/x", t.root);
	assert_string_equal(path, want);
	free(want);
	free(path);
	assert_int_equal(redir(&t, "ls > ssh-link/.ssh/authorized_keys", NULL), LEV_DENY);
	assert_int_equal(redir(&t, "ls > dangling-out", NULL), LEV_DENY);
	/* a dangling link is refused even when it points inside */
	assert_int_equal(redir(&t, "ls > dangling-in", NULL), LEV_DENY);
	/* '..' past a directory that does not exist yet cannot be judged */
	assert_int_equal(redir(&t, "ls > new/../../x", NULL), LEV_DENY);
	/* a write nobody can locate */
	assert_int_equal(redir(&t, "ls > $OUT", NULL), LEV_DENY);
	assert_int_equal(redir(&t, "cd $D && ls > f", NULL), LEV_DENY);
	assert_int_equal(redir(&t, "eval 'ls > /x'", NULL), LEV_DENY);
	/* /proc magic links do not get a redirect out */
	assert_int_equal(redir(&t, "ls > /proc/self/cwd/../x", NULL), LEV_DENY);
	tree_free(&t);
}

static void test_a_redirect_inside_the_workdir_is_allowed(void **state)
{
	struct tree t;
	char *line;

	(void)state;
	tree_make(&t);
	assert_int_equal(redir(&t, "ls > out.txt", NULL), LEV_ALLOW);
	assert_int_equal(redir(&t, "ls > sub/out.txt 2>&1", NULL), LEV_ALLOW);
	assert_int_equal(redir(&t, "ls > in-link/x", NULL), LEV_ALLOW);
	assert_int_equal(redir(&t, "ls > ./sub/../y", NULL), LEV_ALLOW);
	assert_int_equal(redir(&t, "mkdir -p a/b && ls > a/b/c", NULL), LEV_ALLOW);
	assert_int_equal(redir(&t, "cd sub && ls > f", NULL), LEV_ALLOW);
	assert_int_equal(redir(&t, "ls > /dev/null 2>&1", NULL), LEV_ALLOW);
	assert_int_equal(redir(&t, "ls -la", NULL), LEV_ALLOW);
	line = xasprintf("ls > %s/abs.txt", t.wd);
	assert_int_equal(redir(&t, line, NULL), LEV_ALLOW);
	free(line);
	/* no line at all: nothing to refuse */
	{
		struct lev_redirect_decision d;

		assert_int_equal(lev_perm_redirect_check(t.wd_fd, t.wd, t.home, NULL, &d, NULL), 0);
		assert_int_equal(d.verdict, LEV_ALLOW);
		lev_redirect_decision_release(&d);
	}
	tree_free(&t);
}

static void test_home_targets_inside_a_workdir_under_home(void **state)
{
	struct tree t;
	struct lev_shellkeys k;
	struct lev_redirect_decision d;
	char *proj = NULL;
	int fd;

	(void)state;
	tree_make(&t);
	proj = xasprintf("%s/proj", t.home);
	assert_int_equal(mkdir(proj, 0700), 0);
	fd = open(proj, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	lev_shellkeys_parse("ls > ~/proj/x; ls > ~/y", &k);
	assert_int_equal(lev_perm_redirect_check(fd, proj, t.home, &k, &d, NULL), 0);
	assert_int_equal(d.verdict, LEV_DENY);
	assert_string_equal(d.target, "~/y");
	lev_redirect_decision_release(&d);
	lev_shellkeys_release(&k);
	lev_shellkeys_parse("ls > ~/proj/x", &k);
	assert_int_equal(lev_perm_redirect_check(fd, proj, t.home, &k, &d, NULL), 0);
	assert_int_equal(d.verdict, LEV_ALLOW);
	lev_redirect_decision_release(&d);
	/* without a home, '~' is refused */
	assert_int_equal(lev_perm_redirect_check(fd, proj, NULL, &k, &d, NULL), 0);
	assert_int_equal(d.verdict, LEV_DENY);
	lev_redirect_decision_release(&d);
	lev_shellkeys_release(&k);
	close(fd);
	free(proj);
	tree_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_policy),
		cmocka_unit_test(test_only_reviewed_tools_run_without_asking),
		cmocka_unit_test(test_the_effectful_tools_ask_under_every_spelling),
		cmocka_unit_test(test_a_blueprint_cannot_loosen_a_tool_the_user_never_configured),
		cmocka_unit_test(test_a_blueprint_may_still_tighten_anything),
		cmocka_unit_test(test_a_blueprint_may_preapprove_the_read_only_web_tools),
		cmocka_unit_test(test_an_opted_in_blueprint_may_loosen_anything),
		cmocka_unit_test(test_a_configured_ceiling_still_bounds_a_blueprint),
		cmocka_unit_test(test_stage_and_agent_layers),
		cmocka_unit_test(test_several_spellings_the_strictest_wins),
		cmocka_unit_test(test_deny_is_final),
		cmocka_unit_test(test_launch_overrides),
		cmocka_unit_test(test_a_configured_deny_covers_the_sub_agent_tools),
		cmocka_unit_test(test_a_denied_write_tool_denies_a_shell_redirect),
		cmocka_unit_test(test_the_clamp_never_loosens_a_shell_call),
		cmocka_unit_test(test_a_call_that_writes_nothing_is_untouched),
		cmocka_unit_test(test_the_write_policy_and_launch_under_the_clamp),
		cmocka_unit_test(test_safe_lists_turn_ask_into_allow_only_when_every_key_is_covered),
		cmocka_unit_test(test_safe_lists_cover_the_workdir_not_the_machine),
		cmocka_unit_test(test_an_env_prefix_cannot_ride_a_safe_program),
		cmocka_unit_test(test_a_grant_does_not_carry_to_a_chained_command),
		cmocka_unit_test(test_a_grant_does_not_survive_into_a_stage_that_denies),
		cmocka_unit_test(test_stage_and_run_grants),
		cmocka_unit_test(test_grants_are_bounded),
		cmocka_unit_test(test_call_keys),
		cmocka_unit_test(test_every_decision_names_its_rule),
		cmocka_unit_test(test_glue_layers_and_sources),
		cmocka_unit_test(test_glue_unknown_stage),
		cmocka_unit_test(test_a_blueprint_list_is_inert_until_the_user_opts_in),
		cmocka_unit_test(test_each_layer_contributes_and_bad_entries_are_skipped),
		cmocka_unit_test(test_agent_grants_follow_identity),
		cmocka_unit_test(test_a_redirect_outside_the_workdir_is_refused),
		cmocka_unit_test(test_a_redirect_inside_the_workdir_is_allowed),
		cmocka_unit_test(test_home_targets_inside_a_workdir_under_home),
		cmocka_unit_test(test_safe_programs_are_granted_with_safe_shapes_only),
		cmocka_unit_test(test_user_safe_entries_get_the_same_shape_checks),
		cmocka_unit_test(test_unanalysable_lines_need_a_write_fence),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
