/*
 * test-blueprint-flow.c - Leviath's flow keys as the blueprint parser reads
 * them (blueprint-flow.c): edges' transform, gate and stuck triggers; a
 * stage's output spec, nudge and interaction points; bad values fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/conf/blueprint.h"
#include "liblev/base/strv.h"

#define REGIONS "[context.regions]\nplan = { kind = \"temporary\" }\n"
#define HEAD "[agent]\nname = \"t\"\n" REGIONS

static struct lev_blueprint *parse(const char *text, struct lev_err *err)
{
	struct lev_blueprint *bp = NULL;

	(void)lev_blueprint_parse(text, strlen(text), "agent.leviath", "/bp", &bp, err);
	return bp;
}

static void test_edges(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_blueprint *bp = parse(
		HEAD "[stages.a]\nallow_complete = true\ntransition_prompt = \"pick\"\n"
		"[stages.a.transitions.b]\nhint = \"h\"\ntransform = \"summarize\"\n"
		"gate = { require_modifications = true, require_regions = [\"plan\"], "
		"tools = [\"bash\"], message = \"m\" }\n"
		"[stages.a.transitions.c]\ncondition = \"stuck\"\nstuck_after_iterations = 4\n"
		"stuck_after_same_file_edits = 2\ntransform = \"custom\"\n"
		"transform_config = { carry = [\"plan\"], clear = [\"x\"], compact_prompt = \"p\" }\n"
		"[stages.a.transitions.d]\ncondition = \"always\"\n"
		"[stages.b]\n[stages.c]\n[stages.d]\n",
		&err);
	const struct lev_stage *a;

	(void)state;
	if (!bp)
		fail_msg("%s", err.msg);
	a = lev_blueprint_stage(bp, "a");
	assert_int_equal(a->n_transitions, 3);
	assert_string_equal(a->transition_prompt, "pick");
	assert_int_equal(a->transitions[0].transform, LEV_TRANSFORM_COMPACT);
	assert_true(a->transitions[0].gate.present);
	assert_true(a->transitions[0].gate.require_modifications);
	assert_string_equal(a->transitions[0].gate.require_regions[0], "plan");
	assert_string_equal(a->transitions[0].gate.tools[0], "shell");
	assert_int_equal(a->transitions[0].gate.max_attempts, 3);
	assert_int_equal(a->transitions[1].when, LEV_WHEN_STUCK);
	assert_int_equal(a->transitions[1].stuck_iterations, 4);
	assert_int_equal(a->transitions[1].stuck_same_file_edits, 2);
	assert_int_equal(a->transitions[1].transform, LEV_TRANSFORM_CUSTOM);
	assert_string_equal(a->transitions[1].clear[0], "x");
	assert_true(a->transitions[2].always);
	/* one choice edge and allow_complete: the model picks, with the tool */
	assert_true(lev_strv_contains(a->available_tools, "transition"));
	lev_blueprint_free(bp);
}

static void test_stage_specs(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_blueprint *bp = parse(
		"[agent]\nname = \"t\"\nnudge = { max = 2, text = \"go\" }\n"
		"output = { format = \"json\" }\n" REGIONS
		"[stages.a]\nmode = \"output\"\nnudge = { enabled = false }\n"
		"output = { schema = { type = \"object\" } }\n"
		"[[stages.a.interaction_points]]\nname = \"ok\"\nstyle = \"multiple_choice\"\n"
		"options = [\"Approve\", \"Revise\"]\nabort_options = [\"Abort\"]\n"
		"directives = { Revise = \"again\" }\nunattended = \"ask\"\n",
		&err);
	const struct lev_stage *a;

	(void)state;
	if (!bp)
		fail_msg("%s", err.msg);
	a = lev_blueprint_stage(bp, "a");
	/* the stage's own key wins, the others come from [agent] */
	assert_true(a->nudge.has_enabled && !a->nudge.enabled);
	assert_int_equal(a->nudge.max, 2);
	assert_string_equal(a->nudge.text, "go");
	assert_string_equal(a->output.format, "json");
	assert_string_equal(a->output.schema_json, "{\"type\":\"object\"}");
	assert_int_equal(a->n_points, 1);
	assert_true(a->points[0].unattended_ask);
	/* abort options are options too */
	assert_int_equal(lev_strv_len(a->points[0].options), 3);
	assert_string_equal(a->points[0].directive_texts[0], "again");
	lev_blueprint_free(bp);
}

static void expect_error(const char *text, const char *needle)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_blueprint *bp = parse(text, &err);

	if (bp)
		fail_msg("parsed, but should not have:\n%s", text);
	if (!strstr(err.msg, needle))
		fail_msg("error '%s' does not contain '%s'", err.msg, needle);
}

static void test_bad_values_fail(void **state)
{
	(void)state;
	expect_error(HEAD "[stages.a.transitions.b]\ntransform = \"squash\"\n[stages.b]\n",
		     "squash");
	expect_error(HEAD "[stages.a.transitions.b]\ngate = { require_modification = true }\n"
		     "[stages.b]\n", "unknown key 'require_modification'");
	expect_error(HEAD "[stages.a.transitions.b]\nstuck_after_minutes = -1\n[stages.b]\n",
		     "stuck_after_minutes");
	expect_error(HEAD "[stages.a]\noutput = { fromat = \"json\" }\n", "unknown key 'fromat'");
	expect_error(HEAD "[stages.a]\nnudge = { max = \"3\" }\n", "nudge.max");
	expect_error(HEAD "[[stages.a.interaction_points]]\nstyle = \"multiple_choice\"\n"
		     "options = [\"only\"]\n", "needs at least 2 options");
	expect_error(HEAD "[[stages.a.interaction_points]]\nunattended = \"sometimes\"\n",
		     "sometimes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_stage_specs),
		cmocka_unit_test(test_bad_values_fail),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
