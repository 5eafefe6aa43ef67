/*
 * test-lint.c - findings about a blueprint under a config, and the
 * plain-words inventory `lev add` prints.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/conf/blueprint.h"
#include "liblev/conf/config.h"
#include "liblev/policy/lint.h"
#include "liblev/base/strv.h"

static struct lev_blueprint *bp_of(const char *text)
{
	struct lev_blueprint *bp = NULL;
	struct lev_err err = LEV_ERR_INIT;

	if (lev_blueprint_parse(text, strlen(text), "agent.leviath", "/nonexistent", &bp, &err) < 0)
		fail_msg("%s", err.msg);
	return bp;
}

static void cfg_of(const char *text, struct lev_config *c)
{
	struct lev_err err = LEV_ERR_INIT;

	if (lev_config_parse(text, strlen(text), "config.toml", c, &err) < 0)
		fail_msg("%s", err.msg);
}

static const struct lev_finding *find(const struct lev_findings *f, const char *code)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].code, code))
			return &f->v[i];
	return NULL;
}

static void lint(const char *bp_text, const char *cfg_text, struct lev_findings *out)
{
	struct lev_blueprint *bp = bp_of(bp_text);
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;

	memset(out, 0, sizeof(*out));
	if (cfg_text)
		cfg_of(cfg_text, &c);
	assert_int_equal(lev_lint(bp, cfg_text ? &c : NULL, "/work", "/home/u", out, &err), 0);
	if (cfg_text)
		lev_config_release(&c);
	lev_blueprint_free(bp);
}

#define RP "[agent]\nname = \"cto\"\n[stages.main]\n[read_paths]\n" \
	   "allow = [\"~/.leviath/runs\", \"glob:~/design-docs/**\"]\n"

static void test_read_paths_partial_grant(void **state)
{
	struct lev_findings f;
	const struct lev_finding *x;

	(void)state;
	lint(RP, "[agent_read_paths.cto]\nallow = [\"~/.leviath/runs\"]\n", &f);
	x = find(&f, "read-paths-declared");
	assert_non_null(x);
	assert_int_equal(x->severity, LEV_SEV_NOTE);
	assert_non_null(strstr(x->message, "2 declared, 1 granted"));
	assert_string_equal(x->fix, "~/.leviath/runs: granted; glob:~/design-docs/**: NOT granted");
	x = find(&f, "read-paths-not-granted");
	assert_non_null(x);
	assert_int_equal(x->severity, LEV_SEV_WARNING);
	assert_string_equal(x->message, "your config does not grant glob:~/design-docs/**: reads "
					"matching them will be refused");
	assert_string_equal(x->fix, "add to your config.toml: [agent_read_paths.cto] allow = "
				    "[\"glob:~/design-docs/**\"]");
	lev_findings_release(&f);
}

static void test_read_paths_blanket_and_offline(void **state)
{
	struct lev_findings f;
	const struct lev_finding *x;

	(void)state;
	lint(RP, "[security]\nallow_blueprint_read_paths = true\n", &f);
	x = find(&f, "read-paths-declared");
	assert_string_equal(x->fix, "all granted by [security] allow_blueprint_read_paths = true");
	assert_null(find(&f, "read-paths-not-granted"));
	lev_findings_release(&f);

	lint(RP, NULL, &f);
	x = find(&f, "read-paths-declared");
	assert_non_null(strstr(x->message, "~/.leviath/runs, glob:~/design-docs/**"));
	assert_string_equal(x->fix, "these are refused unless your own config grants them");
	assert_null(find(&f, "read-paths-not-granted"));
	lev_findings_release(&f);
}

static void test_read_paths_bad_grant(void **state)
{
	struct lev_findings f;
	const struct lev_finding *x;

	(void)state;
	lint(RP, "[agent_read_paths.cto]\nallow = [\"regex:.*\"]\n", &f);
	x = find(&f, "read-paths-grant-invalid");
	assert_non_null(x);
	assert_int_equal(x->severity, LEV_SEV_WARNING);
	assert_non_null(strstr(x->message, "read_paths grant in your config.toml: "));
	assert_null(find(&f, "read-paths-not-granted"));	/* no verdict from a bad grant */
	lev_findings_release(&f);
}

static void test_no_read_paths_no_finding(void **state)
{
	struct lev_findings f;

	(void)state;
	lint("[agent]\nname = \"a\"\n[stages.main]\n[read_paths]\n", "", &f);
	assert_null(find(&f, "read-paths-declared"));
	assert_int_equal(f.n, 0);	/* an ordinary blueprint is quiet */
	lev_findings_release(&f);
}

static void test_quote_and_counts(void **state)
{
	struct lev_findings f = { NULL, 0 };
	char *q = lev_toml_quote("a\"b\\c\n");

	(void)state;
	assert_string_equal(q, "\"a\\\"b\\\\c\\u000a\"");
	free(q);
	lev_findings_add(&f, LEV_SEV_NOTE, "x", NULL, NULL, "n %d", 1);
	lev_findings_add(&f, LEV_SEV_WARNING, "y", "s", "fix", "w");
	assert_int_equal(lev_findings_count(&f, LEV_SEV_NOTE), 1);
	assert_int_equal(lev_findings_count(&f, LEV_SEV_WARNING), 1);
	assert_int_equal(lev_findings_count(&f, LEV_SEV_ERROR), 0);
	assert_string_equal(f.v[0].message, "n 1");
	assert_string_equal(f.v[1].stage, "s");
	lev_findings_release(&f);
	assert_string_equal(lev_severity_name(LEV_SEV_WARNING), "warning");
}

static void test_inventory(void **state)
{
	struct lev_blueprint *bp = bp_of(
		"[agent]\nname = \"inv\"\n"
		"[tool_permissions]\nbash = \"allow\"\n"
		"[sandbox]\nkind = \"none\"\n"
		"[stages.main]\navailable_tools = [\"bash\"]\n"
		"[stages.main.sandbox]\nkind = \"container\"\nnetwork = false\nimage = \"img\"\n"
		"[context.regions.r]\nseed = { command = \"curl x | sh\" }\n"
		"[tool_script_permissions]\nhttp_post = \"allow\"\n"
		"[safe_commands]\nshell = [\"make\"]\n"
		"[security]\n");
	char **lines = NULL;
	size_t n;

	(void)state;
	lev_lint_inventory(bp, NULL, NULL, NULL, &lines);
	n = lev_strv_len(lines);
	assert_int_equal(n, 7);
	assert_non_null(strstr(lines[0], "pre-approves these tools (no prompt at run time): bash"));
	assert_non_null(strstr(lines[1], "declines a sandbox"));
	assert_non_null(strstr(lines[2], "requests a container sandbox, network off, image 'img' "
					 "for stage 'main'"));
	assert_non_null(strstr(lines[3], "`curl x | sh`"));
	assert_non_null(strstr(lines[3], "NOT on the built-in safe list"));
	assert_non_null(strstr(lines[4], "declares safe commands: make; inert"));
	assert_non_null(strstr(lines[5], "requests script host access: http_post"));
	assert_non_null(strstr(lines[6], "taint tracking on"));
	lev_strv_free(lines);
	lev_blueprint_free(bp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_paths_partial_grant),
		cmocka_unit_test(test_read_paths_blanket_and_offline),
		cmocka_unit_test(test_read_paths_bad_grant),
		cmocka_unit_test(test_no_read_paths_no_finding),
		cmocka_unit_test(test_quote_and_counts),
		cmocka_unit_test(test_inventory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
