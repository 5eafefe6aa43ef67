/*
 * test-tighter.c - lev_policy_tighter(): the config a running run keeps
 * after config.toml changes is, field by field, the tighter of its own and
 * the new one.  One test per field, each with its loosening twin (a looser
 * new value leaves the run's as it was).  Then lev_policy_tighten(): the same
 * for policy.toml.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/buf.h"
#include "liblev/base/strv.h"
#include "liblev/policy/effective.h"
#include "liblev/policy/integrity.h"
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

/* RUN := tighten(parse(OLD), parse(NEW)) for policy.toml */
static struct lev_policy *pol_tighten(const char *old, const char *new)
{
	struct lev_policy *run = NULL, *next = NULL;
	struct lev_err err = LEV_ERR_INIT;

	assert_int_equal(lev_policy_parse(old, strlen(old), "old.toml", &run, &err), 0);
	assert_int_equal(lev_policy_parse(new, strlen(new), "new.toml", &next, &err), 0);
	lev_policy_tighten(run, next);
	lev_policy_free(next);
	return run;
}

/* Does P allow TOOL to TARGET (NULL: no target) at TAINT?  The index and the linear scan agree. */
static bool allows(const struct lev_policy *p, const char *tool, const char *target,
		   enum lev_level taint)
{
	char *t[2] = { (char *)target, NULL };
	int i = lev_policy_match(p, tool, target ? t : NULL, taint);

	assert_int_equal(i, lev_policy_match_linear(p, tool, target ? t : NULL, taint));
	return i >= 0;
}

#define RULE(tool, pats, max) \
	"[[allowlist]]\ntool = \"" tool "\"\n" pats "max_sensitivity = \"" max "\"\n"

static void test_policy_allowlist_intersected(void **state)
{
	struct lev_policy *p;

	(void)state;
	/* an entry the new file removes is gone; one it keeps stays */
	p = pol_tighten(RULE("web_fetch", "to = [\"a.example\", \"b.example\"]\n", "private"),
			RULE("web_fetch", "to = [\"a.example\"]\n", "private"));
	assert_true(allows(p, "web_fetch", "a.example", LEV_PRIVATE));
	assert_false(allows(p, "web_fetch", "b.example", LEV_PUBLIC));
	lev_policy_free(p);
	/* the twin: an entry the new file adds does not reach the run */
	p = pol_tighten(RULE("web_fetch", "to = [\"a.example\"]\n", "private"),
			RULE("web_fetch", "to = [\"a.example\", \"c.example\"]\n", "private") RULE(
				"send_email", "", "private"));
	assert_true(allows(p, "web_fetch", "a.example", LEV_PRIVATE));
	assert_false(allows(p, "web_fetch", "c.example", LEV_PUBLIC));
	assert_false(allows(p, "send_email", "x@y.example", LEV_PUBLIC));
	lev_policy_free(p);
	/* the lower max_sensitivity holds, whichever side says it */
	p = pol_tighten(RULE("web_fetch", "to = [\"a.example\"]\n", "private"),
			RULE("web_fetch", "to = [\"a.example\"]\n", "internal"));
	assert_true(allows(p, "web_fetch", "a.example", LEV_INTERNAL));
	assert_false(allows(p, "web_fetch", "a.example", LEV_PRIVATE));
	lev_policy_free(p);
	/* a rule with no patterns (any target) meets one with: the patterns hold */
	p = pol_tighten(RULE("web_fetch", "", "private"),
			RULE("web_fetch", "to = [\"a.example\"]\n", "private"));
	assert_true(allows(p, "web_fetch", "a.example", LEV_PRIVATE));
	assert_false(allows(p, "web_fetch", "b.example", LEV_PRIVATE));
	assert_false(allows(p, "web_fetch", NULL, LEV_PRIVATE));
	lev_policy_free(p);
	/* two rules that share no pattern allow nothing (not "any target") */
	p = pol_tighten(RULE("web_fetch", "to = [\"a.example\"]\n", "private"),
			RULE("web_fetch", "to = [\"b.example\"]\n", "private"));
	assert_int_equal(p->n_rules, 0);
	assert_false(allows(p, "web_fetch", "a.example", LEV_PUBLIC));
	assert_false(allows(p, "web_fetch", "b.example", LEV_PUBLIC));
	lev_policy_free(p);
	/* an empty new file: no allowlist at all */
	p = pol_tighten(RULE("web_fetch", "", "private"), "");
	assert_false(allows(p, "web_fetch", "a.example", LEV_PUBLIC));
	lev_policy_free(p);
}

static void classify(const struct lev_policy *p, const char *tool, struct lev_tool_class *c)
{
	lev_policy_classify(p, tool, c);
}

static void test_policy_overrides_tighter(void **state)
{
	const char *loose = "[mcp_overrides.\"gh.create_issue\"]\nsensitivity = \"public\"\n"
			    "clearance = \"private\"\ndirection = \"inbound\"\n";
	const char *tight = "[mcp_overrides.\"gh.create_issue\"]\nsensitivity = \"private\"\n"
			    "clearance = \"public\"\ndirection = \"outbound\"\n";
	struct lev_tool_class builtin, c;
	struct lev_policy *p;

	(void)state;
	p = pol_tighten(loose, tight);
	classify(p, "gh__create_issue", &c);
	assert_int_equal(c.sensitivity, LEV_PRIVATE);
	assert_int_equal(c.clearance, LEV_PUBLIC);
	assert_int_equal(c.direction, LEV_DIR_OUTBOUND);
	lev_policy_free(p);
	/* the twin: a loosening does not reach the run */
	p = pol_tighten(tight, loose);
	classify(p, "gh__create_issue", &c);
	assert_int_equal(c.sensitivity, LEV_PRIVATE);
	assert_int_equal(c.clearance, LEV_PUBLIC);
	assert_int_equal(c.direction, LEV_DIR_OUTBOUND);
	lev_policy_free(p);
	/* a new file dropping a raised clearance: the built-in one holds again */
	lev_policy_classify(NULL, "gh__create_issue", &builtin);
	p = pol_tighten(loose, "");
	classify(p, "gh__create_issue", &c);
	assert_int_equal(c.clearance, builtin.clearance < LEV_PRIVATE ? builtin.clearance
								      : LEV_PRIVATE);
	assert_int_equal(c.direction, builtin.direction);
	lev_policy_free(p);
}

static void test_policy_integrity_tighter(void **state)
{
	struct lev_policy *p;
	const struct lev_integrity_policy *ip;

	(void)state;
	p = pol_tighten("[integrity]\ntrusted = [\"docs/**\", \"src/**\"]\n"
			"untrusted = [\"inbox/**\"]\nprotected = [\".git/**\"]\n"
			"writes = \"protected\"\n"
			"[[integrity.allow]]\ntool = \"web_fetch\"\ntarget = \"a.example\"\n"
			"[[integrity.allow]]\ntool = \"web_fetch\"\ntarget = \"b.example\"\n",
			"[integrity]\ntrusted = [\"docs/**\"]\nuntrusted = [\"mail/**\"]\n"
			"protected = [\"Makefile\"]\nworkdir = \"untrusted\"\n"
			"[[integrity.allow]]\ntool = \"web_fetch\"\ntarget = \"a.example\"\n"
			"args_from_trusted = true\n"
			"[[integrity.allow]]\ntool = \"web_fetch\"\ntarget = \"c.example\"\n");
	ip = lev_policy_integrity(p);
	assert_non_null(ip);
	assert_int_equal(lev_strv_len(ip->trusted), 1);
	assert_string_equal(ip->trusted[0], "docs/**");
	assert_true(lev_strv_contains(ip->untrusted, "inbox/**"));
	assert_true(lev_strv_contains(ip->untrusted, "mail/**"));
	assert_true(lev_strv_contains(ip->protected_files, ".git/**"));
	assert_true(lev_strv_contains(ip->protected_files, "Makefile"));
	assert_true(ip->workdir_untrusted);
	assert_false(ip->writes_protected_only);
	assert_int_equal(ip->n_allow, 1);
	assert_string_equal(ip->allow[0].target, "a.example");
	assert_true(ip->allow[0].args_from_trusted);
	assert_int_equal(lev_integrity_of_file(ip, "src/x.c", NULL), LEV_UNTRUSTED);
	lev_policy_free(p);
	/* the twin: a new file loosening everything leaves the run as it was */
	p = pol_tighten("[integrity]\nworkdir = \"untrusted\"\nprotected = [\"Makefile\"]\n", "");
	ip = lev_policy_integrity(p);
	assert_true(ip->workdir_untrusted);
	assert_true(lev_strv_contains(ip->protected_files, "Makefile"));
	lev_policy_free(p);
}

static void test_policy_sources_tighter(void **state)
{
	struct lev_policy *p;
	const struct lev_source_label *s;

	(void)state;
	p = pol_tighten("[[sources]]\nhost = \"a.example\"\nsensitivity = \"internal\"\n"
			"integrity = \"trusted\"\n"
			"[[sources]]\nhost = \"b.example\"\nsensitivity = \"public\"\n",
			"[[sources]]\nhost = \"a.example\"\nsensitivity = \"private\"\n"
			"integrity = \"trusted\"\n"
			"[[sources]]\nhost = \"c.example\"\nsensitivity = \"public\"\n"
			"[[sources]]\nhost = \"d.example\"\nintegrity = \"untrusted\"\n");
	s = lev_integrity_source(lev_policy_integrity(p), "a.example", NULL, NULL, NULL);
	assert_non_null(s);
	assert_int_equal(s->sensitivity, LEV_PRIVATE);
	assert_int_equal(s->integrity, LEV_TRUSTED);
	/* a label only one side has, lowering a default: gone */
	assert_null(lev_integrity_source(lev_policy_integrity(p), "b.example", NULL, NULL, NULL));
	assert_null(lev_integrity_source(lev_policy_integrity(p), "c.example", NULL, NULL, NULL));
	/* ... raising it to the top: kept */
	s = lev_integrity_source(lev_policy_integrity(p), "d.example", NULL, NULL, NULL);
	assert_non_null(s);
	assert_true(s->has_integrity);
	assert_int_equal(s->integrity, LEV_UNTRUSTED);
	lev_policy_free(p);
}


/* [agent_tool_permissions.X] added mid-run reaches X, and only X (the twin). */
static void test_agent_table_tighter(void **state)
{
	struct lev_config run;
	struct lev_tool_perms x, y;
	char **gx, **gy;

	(void)state;
	tighten("[tool_permissions]\nshell = \"allow\"\n[security]\nread_paths = [\"/a\", \"/b\"]\n",
		"[tool_permissions]\nshell = \"allow\"\n[security]\nread_paths = [\"/b\"]\n"
		"[agent_tool_permissions.x]\nshell = \"deny\"\n"
		"[agent_read_paths.y]\nallow = [\"/a\"]\n",
		&run);
	lev_config_permissions_for_agent(&run, "x", &x);
	lev_config_permissions_for_agent(&run, "y", &y);
	assert_int_equal(verdict_of(&(struct lev_config){ .tool_permissions = x }, "shell"),
			 LEV_DENY);
	assert_int_equal(verdict_of(&(struct lev_config){ .tool_permissions = y }, "shell"),
			 LEV_ALLOW);
	/* /a was granted to everyone, now only to y: y keeps it, x does not */
	gx = lev_config_read_path_grants_for_agent(&run, "x");
	gy = lev_config_read_path_grants_for_agent(&run, "y");
	assert_false(lev_strv_contains(gx, "/a"));
	assert_true(lev_strv_contains(gy, "/a"));
	assert_true(lev_strv_contains(gx, "/b"));
	lev_strv_free(gx);
	lev_strv_free(gy);
	lev_tool_perms_release(&x);
	lev_tool_perms_release(&y);
	lev_config_release(&run);
}

static unsigned long rnd_state = 12345;

static unsigned rnd(unsigned n)
{
	rnd_state = rnd_state * 6364136223846793005UL + 1442695040888963407UL;
	return (unsigned)(rnd_state >> 33) % n;
}

/* A config of random policy fields (and a provider key, which no snapshot keeps). */
static void random_config(struct lev_buf *b)
{
	static const char *const tools[] = { "shell", "read_file", "write_file", "web_fetch" };
	static const char *const verdicts[] = { "allow", "ask", "deny" };
	static const char *const envs[] = { "filtered", "strict", "inherit" };
	static const char *const paths[] = { "\"/a\"", "\"/b\"", "\"/c\"" };
	static const char *const agents[] = { "x", "y" };

	lev_buf_reset(b);
	lev_buf_addf(b, "taint_tracking = %s\nopenai_api_key = \"sk-never-kept\"\n",
		     rnd(2) ? "true" : "false");
	lev_buf_addf(b, "[security]\nshell_env = \"%s\"\nallow_local_network = %s\n",
		     envs[rnd(3)], rnd(2) ? "true" : "false");
	lev_buf_addf(b, "read_paths = [%s, %s]\n", paths[rnd(3)], paths[rnd(3)]);
	lev_buf_addf(b, "[limits]\nshell_timeout_secs = %u\n", 1 + rnd(100));
	lev_buf_adds(b, "[tool_permissions]\n");
	for (size_t i = 0; i < 4; i++)
		if (rnd(2))
			lev_buf_addf(b, "%s = \"%s\"\n", tools[i], verdicts[rnd(3)]);
	for (size_t a = 0; a < 2; a++) {
		if (rnd(2)) {
			lev_buf_addf(b, "[agent_tool_permissions.%s]\n%s = \"%s\"\n", agents[a],
				     tools[rnd(4)], verdicts[rnd(3)]);
		}
		if (rnd(2))
			lev_buf_addf(b, "[agent_read_paths.%s]\nallow = [%s]\n", agents[a],
				     paths[rnd(3)]);
	}
}

static json_t *snapshot_of(struct lev_config *c)
{
	struct lev_effective e = { .cfg = *c, .gens = json_array() };
	json_t *s = lev_effective_snapshot(&e);

	json_decref(e.gens);
	return s;
}

/*
 * The snapshot lev.db keeps carries everything the tighter reads: for
 * random files-now N and run configs R, restoring R's snapshot over N gives
 * exactly tighter(N, R); and the snapshot holds no key.
 */
static void test_snapshot_restore_is_tighter(void **state)
{
	struct lev_buf bn = LEV_BUF_INIT, br = LEV_BUF_INIT;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	for (int i = 0; i < 2000; i++) {
		struct lev_effective n = { .gens = json_array() };
		struct lev_config want, r;
		json_t *snap, *got, *exp;
		char *text;

		random_config(&bn);
		random_config(&br);
		assert_int_equal(lev_config_parse(bn.buf, bn.len, "n.toml", &n.cfg, &err), 0);
		assert_int_equal(lev_config_parse(bn.buf, bn.len, "n.toml", &want, &err), 0);
		assert_int_equal(lev_config_parse(br.buf, br.len, "r.toml", &r, &err), 0);
		n.pol = lev_policy_new_empty("p");
		snap = snapshot_of(&r);
		text = json_dumps(snap, JSON_COMPACT);
		assert_null(strstr(text, "sk-never-kept"));
		free(text);
		assert_int_equal(lev_effective_restore(&n, snap, &err), 0);
		lev_policy_tighter(&want, &r);
		got = snapshot_of(&n.cfg);
		exp = snapshot_of(&want);
		if (!json_equal(got, exp))
			fail_msg("case %d:\n--- files now\n%s--- run\n%s", i, bn.buf, br.buf);
		json_decref(snap);
		json_decref(got);
		json_decref(exp);
		lev_config_release(&want);
		lev_config_release(&r);
		lev_effective_release(&n);
	}
	lev_buf_release(&bn);
	lev_buf_release(&br);
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
		cmocka_unit_test(test_policy_allowlist_intersected),
		cmocka_unit_test(test_policy_overrides_tighter),
		cmocka_unit_test(test_policy_integrity_tighter),
		cmocka_unit_test(test_policy_sources_tighter),
		cmocka_unit_test(test_agent_table_tighter),
		cmocka_unit_test(test_snapshot_restore_is_tighter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
