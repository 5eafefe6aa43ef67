/*
 * test-taint.c - levels, tool classifications, labelled context regions
 * (eviction recovery and every laundering route we know of), and reading
 * the real target out of a call's arguments.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/buf.h"
#include "liblev/base/strv.h"
#include "liblev/policy/taint.h"
#include "liblev/base/types.h"

/* ---- levels and directions ---- */

static void test_level_order_and_max(void **state)
{
	enum lev_level l;

	(void)state;
	assert_true(LEV_PUBLIC < LEV_INTERNAL && LEV_INTERNAL < LEV_PRIVATE);
	assert_int_equal(lev_level_max(LEV_PUBLIC, LEV_PRIVATE), LEV_PRIVATE);
	assert_int_equal(lev_level_max(LEV_INTERNAL, LEV_PUBLIC), LEV_INTERNAL);
	assert_int_equal(lev_level_parse("PRIVATE", &l), 0);
	assert_int_equal(l, LEV_PRIVATE);
	assert_int_equal(lev_level_parse("secret", &l), -EINVAL);
	assert_int_equal(lev_level_parse("", &l), -EINVAL);
	assert_string_equal(lev_level_name(LEV_INTERNAL), "internal");
}

static void test_direction_parse(void **state)
{
	enum lev_direction d = LEV_DIR_INBOUND;

	(void)state;
	assert_int_equal(lev_direction_parse("Outbound", &d), 0);
	assert_int_equal(d, LEV_DIR_OUTBOUND);
	assert_int_equal(lev_direction_parse("out", &d), -EINVAL);
	assert_int_equal(d, LEV_DIR_OUTBOUND);
	assert_string_equal(lev_direction_name(LEV_DIR_INTERNAL), "internal");
}

/* ---- classification ---- */

struct cls_case {
	const char *tool;
	enum lev_level sensitivity;
	enum lev_direction direction;
	enum lev_target_from from;
};

static const struct cls_case cls_cases[] = {
	{ "read_file", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "read_files", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "list_dir", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "write_file", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
	{ "edit_file", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
	{ "shell", LEV_PUBLIC, LEV_DIR_OUTBOUND, LEV_TARGET_FROM_NONE },
	{ "bash", LEV_PUBLIC, LEV_DIR_OUTBOUND, LEV_TARGET_FROM_NONE },
	{ "web_search", LEV_PUBLIC, LEV_DIR_OUTBOUND, LEV_TARGET_FROM_NONE },
	{ "web_fetch", LEV_PUBLIC, LEV_DIR_OUTBOUND, LEV_TARGET_FROM_URL },
	{ "http_get", LEV_PUBLIC, LEV_DIR_OUTBOUND, LEV_TARGET_FROM_URL },
	{ "http_post", LEV_PUBLIC, LEV_DIR_OUTBOUND, LEV_TARGET_FROM_URL },
	{ "fetch", LEV_PUBLIC, LEV_DIR_OUTBOUND, LEV_TARGET_FROM_URL },
	{ "current_time", LEV_PUBLIC, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "locale_info", LEV_PUBLIC, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "system_info", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "environment_info", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "which_command", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "runtime_info", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "ask_user_text", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
	{ "ask_user_choice", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
	{ "ask_user_confirm", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
	{ "present_for_review", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
	/* what a sub-agent hands back comes in (the run raises it to what the child saw) */
	{ "fan_out", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "spawn_agent", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "check_agent", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "wait_for_agent", LEV_INTERNAL, LEV_DIR_INBOUND, LEV_TARGET_FROM_NONE },
	{ "send_to_agent", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
	{ "kill_agent", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
	{ "submit_output", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
	{ "todo_write", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
	{ "context_write", LEV_INTERNAL, LEV_DIR_INTERNAL, LEV_TARGET_FROM_NONE },
};

static void test_builtin_classifications(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cls_cases) / sizeof(cls_cases[0]); i++) {
		struct lev_tool_class c;

		lev_taint_builtin_class(cls_cases[i].tool, &c);
		if (!c.known || c.sensitivity != cls_cases[i].sensitivity ||
		    c.direction != cls_cases[i].direction || c.clearance != LEV_PUBLIC ||
		    c.target_from != cls_cases[i].from)
			fail_msg("classification of '%s' is wrong", cls_cases[i].tool);
	}
}

static void test_read_files_is_classified_like_read_file(void **state)
{
	struct lev_tool_class a, b;

	(void)state;
	lev_taint_builtin_class("read_file", &a);
	lev_taint_builtin_class("read_files", &b);
	assert_true(b.known);
	assert_int_equal(a.sensitivity, b.sensitivity);
	assert_int_equal(a.direction, b.direction);
	assert_int_equal(b.direction, LEV_DIR_INBOUND);
	/* an inbound tool is never gated, whatever the taint */
	assert_false(lev_taint_exceeds(&b, LEV_PRIVATE));
}

static void test_unknown_tools_fail_closed(void **state)
{
	const char *unknown[] = { "github__create_issue", "send_email", "post_to_chat",
				  "Web_Fetch", "", "read_file " };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		struct lev_tool_class c;

		lev_taint_builtin_class(unknown[i], &c);
		assert_false(c.known);
		assert_int_equal(c.sensitivity, LEV_PUBLIC);
		assert_int_equal(c.direction, LEV_DIR_OUTBOUND);
		assert_int_equal(c.clearance, LEV_PUBLIC);
		assert_int_equal(c.target_from, LEV_TARGET_FROM_RECIPIENTS);
		assert_true(lev_taint_exceeds(&c, LEV_INTERNAL));
		assert_false(lev_taint_exceeds(&c, LEV_PUBLIC));
	}
}

static void test_network_tools_are_outbound(void **state)
{
	const char *net[] = { "shell", "bash", "web_fetch", "web_search", "http_post", "http_get",
			      "fetch" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(net) / sizeof(net[0]); i++) {
		struct lev_tool_class c;

		lev_taint_builtin_class(net[i], &c);
		assert_int_equal(c.direction, LEV_DIR_OUTBOUND);
		assert_true(lev_taint_exceeds(&c, LEV_INTERNAL));
	}
}

static void test_read_grant_raises_read_tools_to_private(void **state)
{
	const char *reads[] = { "read_file", "read_files", "list_dir" };
	struct lev_tool_class c;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		lev_taint_builtin_class(reads[i], &c);
		lev_taint_read_grant_bump(reads[i], false, &c);
		assert_int_equal(c.sensitivity, LEV_INTERNAL);
		lev_taint_read_grant_bump(reads[i], true, &c);
		assert_int_equal(c.sensitivity, LEV_PRIVATE);
	}
	lev_taint_builtin_class("write_file", &c);
	lev_taint_read_grant_bump("write_file", true, &c);
	assert_int_equal(c.sensitivity, LEV_INTERNAL);
}

static void test_enabling_blueprint_opts_in_never_out(void **state)
{
	(void)state;
	assert_false(lev_taint_enabled(false, false));
	assert_true(lev_taint_enabled(true, false));	/* a blueprint cannot opt out */
	assert_true(lev_taint_enabled(false, true));	/* but can opt in */
	assert_true(lev_taint_enabled(true, true));
}

/* ---- regions ---- */

static struct lev_taint_ctx *ctx3(int *conv, int *scratch, int *notes)
{
	struct lev_taint_ctx *ctx = lev_taint_ctx_new();

	*conv = lev_taint_region_add(ctx, "conversation", NULL);
	*scratch = lev_taint_region_add(ctx, "scratch", NULL);
	*notes = lev_taint_region_add(ctx, "notes", NULL);
	assert_true(*conv >= 0 && *scratch >= 0 && *notes >= 0);
	return ctx;
}

static void test_regions_start_public_and_names_are_checked(void **state)
{
	struct lev_taint_ctx *ctx = lev_taint_ctx_new();
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(lev_taint_current(ctx), LEV_PUBLIC);
	assert_int_equal(lev_taint_region_add(ctx, "a", NULL), 0);
	assert_int_equal(lev_taint_region_add(ctx, "a", &err), -EEXIST);
	assert_int_equal(lev_taint_region_add(ctx, "", NULL), -EINVAL);
	assert_int_equal(lev_taint_region_add(ctx, "has space", NULL), -EINVAL);
	assert_int_equal(lev_taint_region_find(ctx, "a"), 0);
	assert_int_equal(lev_taint_region_find(ctx, "b"), -ENOENT);
	assert_int_equal(lev_taint_region_level(ctx, 0), LEV_PUBLIC);
	assert_int_equal(lev_taint_add_entry(ctx, 5, LEV_PRIVATE, NULL, NULL), -EINVAL);
	assert_int_equal(lev_taint_current(ctx), LEV_PUBLIC);
	lev_taint_ctx_free(ctx);
}

static void test_region_level_is_max_of_live_entries(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t a, b, c;

	(void)state;
	assert_int_equal(lev_taint_add_entry(ctx, conv, LEV_INTERNAL, &a, NULL), 0);
	assert_int_equal(lev_taint_region_level(ctx, conv), LEV_INTERNAL);
	assert_int_equal(lev_taint_add_entry(ctx, conv, LEV_PUBLIC, &b, NULL), 0);
	assert_int_equal(lev_taint_region_level(ctx, conv), LEV_INTERNAL);	/* public does not lower */
	assert_int_equal(lev_taint_add_entry(ctx, scratch, LEV_PRIVATE, &c, NULL), 0);
	assert_int_equal(lev_taint_current(ctx), LEV_PRIVATE);
	assert_int_equal(lev_taint_region_level(ctx, notes), LEV_PUBLIC);
	assert_true(a < b && b < c);
	assert_int_equal(lev_taint_entry_count(ctx), 3);
	lev_taint_ctx_free(ctx);
}

static void test_eviction_recovers_taint(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t pub, priv, mid;
	enum lev_level l;

	(void)state;
	lev_taint_add_entry(ctx, conv, LEV_PUBLIC, &pub, NULL);
	lev_taint_add_entry(ctx, conv, LEV_PRIVATE, &priv, NULL);
	lev_taint_add_entry(ctx, conv, LEV_INTERNAL, &mid, NULL);
	assert_int_equal(lev_taint_current(ctx), LEV_PRIVATE);
	assert_int_equal(lev_taint_evict(ctx, priv, NULL), 0);
	assert_int_equal(lev_taint_current(ctx), LEV_INTERNAL);
	assert_int_equal(lev_taint_entry_label(ctx, priv, &l), -ENOENT);
	assert_int_equal(lev_taint_evict(ctx, priv, NULL), -ENOENT);	/* twice */
	assert_int_equal(lev_taint_evict(ctx, 999999, NULL), -ENOENT);
	assert_int_equal(lev_taint_evict(ctx, mid, NULL), 0);
	assert_int_equal(lev_taint_current(ctx), LEV_PUBLIC);
	assert_int_equal(lev_taint_evict(ctx, pub, NULL), 0);
	assert_int_equal(lev_taint_region_level(ctx, conv), LEV_PUBLIC);
	assert_int_equal(lev_taint_entry_count(ctx), 0);
	lev_taint_ctx_free(ctx);
}

static void test_many_entries_and_sweeping_keep_ids_findable(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t ids[1000], keep = 0;
	enum lev_level l;
	size_t i;

	(void)state;
	for (i = 0; i < 1000; i++)
		assert_int_equal(lev_taint_add_entry(ctx, conv, i == 500 ? LEV_PRIVATE : LEV_PUBLIC,
						     &ids[i], NULL), 0);
	for (i = 0; i < 1000; i++)
		if (i != 500)
			assert_int_equal(lev_taint_evict(ctx, ids[i], NULL), 0);
	/* adding more entries sweeps the dead ones; the survivor must stay findable */
	for (i = 0; i < 10; i++)
		assert_int_equal(lev_taint_add_entry(ctx, scratch, LEV_PUBLIC, &keep, NULL), 0);
	assert_int_equal(lev_taint_entry_label(ctx, ids[500], &l), 0);
	assert_int_equal(l, LEV_PRIVATE);
	assert_int_equal(lev_taint_current(ctx), LEV_PRIVATE);
	assert_int_equal(lev_taint_evict(ctx, ids[500], NULL), 0);
	assert_int_equal(lev_taint_current(ctx), LEV_PUBLIC);
	assert_int_equal(lev_taint_entry_label(ctx, keep, &l), 0);
	lev_taint_ctx_free(ctx);
}

static void test_contributors_name_regions_above_clearance(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	struct lev_buf b = LEV_BUF_INIT;

	(void)state;
	lev_taint_add_entry(ctx, conv, LEV_INTERNAL, NULL, NULL);
	lev_taint_add_entry(ctx, notes, LEV_PRIVATE, NULL, NULL);
	assert_int_equal(lev_taint_contributors(ctx, LEV_PUBLIC, &b), 2);
	assert_string_equal(b.buf, "conversation, notes");
	lev_buf_reset(&b);
	assert_int_equal(lev_taint_contributors(ctx, LEV_INTERNAL, &b), 1);
	assert_string_equal(b.buf, "notes");
	lev_buf_reset(&b);
	assert_int_equal(lev_taint_contributors(ctx, LEV_PRIVATE, &b), 0);
	lev_buf_release(&b);
	lev_taint_ctx_free(ctx);
}

/* ---- laundering ---- */

/* A12: copy a Private result into a note, evict the original: the note stays Private. */
static void test_note_copy_then_evict_stays_private(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t secret, note;
	enum lev_level l;

	(void)state;
	lev_taint_add_entry(ctx, conv, LEV_PUBLIC, NULL, NULL);	/* the task */
	lev_taint_add_entry(ctx, scratch, LEV_PRIVATE, &secret, NULL);	/* read secrets.txt */
	assert_int_equal(lev_taint_add_model_text(ctx, notes, LEV_PUBLIC, &note, NULL), 0);
	assert_int_equal(lev_taint_evict(ctx, secret, NULL), 0);
	assert_int_equal(lev_taint_entry_label(ctx, note, &l), 0);
	assert_int_equal(l, LEV_PRIVATE);
	assert_int_equal(lev_taint_current(ctx), LEV_PRIVATE);
	/* B08: once the derived note goes too, taint recovers */
	assert_int_equal(lev_taint_evict(ctx, note, NULL), 0);
	assert_int_equal(lev_taint_current(ctx), LEV_PUBLIC);
	lev_taint_ctx_free(ctx);
}

/* The runtime evicted the source between building the prompt and storing the answer. */
static void test_model_text_keeps_what_the_prompt_saw(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t secret, answer;
	enum lev_level seen, l;

	(void)state;
	lev_taint_add_entry(ctx, scratch, LEV_PRIVATE, &secret, NULL);
	seen = lev_taint_current(ctx);
	lev_taint_evict(ctx, secret, NULL);	/* overflow while the model was thinking */
	assert_int_equal(lev_taint_current(ctx), LEV_PUBLIC);
	lev_taint_add_model_text(ctx, conv, seen, &answer, NULL);
	assert_int_equal(lev_taint_entry_label(ctx, answer, &l), 0);
	assert_int_equal(l, LEV_PRIVATE);
	/* an out-of-range SEEN fails closed */
	lev_taint_add_model_text(ctx, conv, (enum lev_level)42, &answer, NULL);
	assert_int_equal(lev_taint_entry_label(ctx, answer, &l), 0);
	assert_int_equal(l, LEV_PRIVATE);
	lev_taint_ctx_free(ctx);
}

/* A13: summarise Private entries, the summary inherits Private. */
static void test_compaction_summary_inherits(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t ids[4], summary;
	enum lev_level l;

	(void)state;
	lev_taint_add_entry(ctx, conv, LEV_PUBLIC, &ids[0], NULL);
	lev_taint_add_entry(ctx, conv, LEV_PRIVATE, &ids[1], NULL);
	lev_taint_add_entry(ctx, conv, LEV_INTERNAL, &ids[2], NULL);
	lev_taint_add_entry(ctx, conv, LEV_PUBLIC, &ids[3], NULL);
	assert_int_equal(lev_taint_compact(ctx, conv, ids, 4, LEV_PUBLIC, &summary, NULL), 0);
	assert_int_equal(lev_taint_entry_count(ctx), 1);
	assert_int_equal(lev_taint_entry_label(ctx, summary, &l), 0);
	assert_int_equal(l, LEV_PRIVATE);
	assert_int_equal(lev_taint_current(ctx), LEV_PRIVATE);
	lev_taint_ctx_free(ctx);
}

static void test_compaction_with_unknown_id_changes_nothing(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t ids[2], summary = 0;

	(void)state;
	lev_taint_add_entry(ctx, conv, LEV_PRIVATE, &ids[0], NULL);
	ids[1] = 12345;
	assert_int_equal(lev_taint_compact(ctx, conv, ids, 2, LEV_PUBLIC, &summary, NULL), -ENOENT);
	assert_int_equal(summary, 0);
	assert_int_equal(lev_taint_entry_count(ctx), 1);
	lev_taint_ctx_free(ctx);
}

/* Summary laundering the naive way: evict first, then summarise. */
static void test_summary_written_after_eviction_uses_seen(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t secret, summary;
	enum lev_level seen, l;

	(void)state;
	lev_taint_add_entry(ctx, conv, LEV_PRIVATE, &secret, NULL);
	seen = lev_taint_current(ctx);	/* the summariser's prompt was built here */
	lev_taint_region_clear(ctx, conv, NULL);
	lev_taint_add_model_text(ctx, conv, seen, &summary, NULL);
	assert_int_equal(lev_taint_entry_label(ctx, summary, &l), 0);
	assert_int_equal(l, LEV_PRIVATE);
	lev_taint_ctx_free(ctx);
}

/* clear() removes entries but a derived entry elsewhere keeps its label. */
static void test_clear_does_not_launder_derived_text(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t secret, note, pub;
	enum lev_level l;

	(void)state;
	lev_taint_add_entry(ctx, scratch, LEV_PRIVATE, &secret, NULL);
	lev_taint_add_entry(ctx, scratch, LEV_PUBLIC, &pub, NULL);
	lev_taint_add_model_text(ctx, notes, LEV_PUBLIC, &note, NULL);
	assert_int_equal(lev_taint_region_clear(ctx, scratch, NULL), 0);
	assert_int_equal(lev_taint_region_level(ctx, scratch), LEV_PUBLIC);
	assert_int_equal(lev_taint_entry_label(ctx, secret, &l), -ENOENT);
	assert_int_equal(lev_taint_entry_label(ctx, note, &l), 0);
	assert_int_equal(l, LEV_PRIVATE);
	assert_int_equal(lev_taint_current(ctx), LEV_PRIVATE);
	/* clearing the notes region itself does recover (the text is gone) */
	assert_int_equal(lev_taint_region_clear(ctx, notes, NULL), 0);
	assert_int_equal(lev_taint_current(ctx), LEV_PUBLIC);
	assert_int_equal(lev_taint_region_clear(ctx, 77, NULL), -EINVAL);
	lev_taint_ctx_free(ctx);
}

/* A note written into the SAME region as its source, then the source evicted. */
static void test_same_region_copy_then_evict(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t secret, note;

	(void)state;
	lev_taint_add_entry(ctx, conv, LEV_PRIVATE, &secret, NULL);
	lev_taint_add_model_text(ctx, conv, LEV_PUBLIC, &note, NULL);
	lev_taint_evict(ctx, secret, NULL);
	assert_int_equal(lev_taint_region_level(ctx, conv), LEV_PRIVATE);
	lev_taint_ctx_free(ctx);
}

/* Chains of derivation: note of a note of a secret stays Private. */
static void test_derivation_chains_keep_the_label(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	uint64_t secret, n1, n2;
	enum lev_level l;

	(void)state;
	lev_taint_add_entry(ctx, scratch, LEV_PRIVATE, &secret, NULL);
	lev_taint_add_model_text(ctx, notes, LEV_PUBLIC, &n1, NULL);
	lev_taint_evict(ctx, secret, NULL);
	lev_taint_add_model_text(ctx, conv, LEV_PUBLIC, &n2, NULL);
	lev_taint_evict(ctx, n1, NULL);
	assert_int_equal(lev_taint_entry_label(ctx, n2, &l), 0);
	assert_int_equal(l, LEV_PRIVATE);
	assert_int_equal(lev_taint_current(ctx), LEV_PRIVATE);
	lev_taint_ctx_free(ctx);
}

/* Restoring a run from its record rebuilds the max from stored labels. */
static void test_restore_rebuilds_from_stored_labels(void **state)
{
	int conv, scratch, notes;
	struct lev_taint_ctx *ctx = ctx3(&conv, &scratch, &notes);
	const enum lev_level stored[] = { LEV_PUBLIC, LEV_PRIVATE, LEV_INTERNAL };
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++)
		lev_taint_add_entry(ctx, notes, stored[i], NULL, NULL);
	assert_int_equal(lev_taint_region_level(ctx, notes), LEV_PRIVATE);
	lev_taint_ctx_free(ctx);
}

/* ---- targets ---- */

static char **targets_of(const char *tool, const char *json, int want_r)
{
	struct lev_err err = LEV_ERR_INIT;
	char **v = NULL;
	int r = lev_taint_target_of(tool, NULL, json, strlen(json), &v, &err);

	if (r != want_r)
		fail_msg("%s %s: got %d (%s), wanted %d", tool, json, r, err.msg, want_r);
	return v;
}

static void test_url_tools_target_the_real_host(void **state)
{
	char **v;

	(void)state;
	v = targets_of("web_fetch", "{\"url\":\"https://evil.com#.example.com\"}", 0);
	assert_int_equal(lev_strv_len(v), 1);
	assert_string_equal(v[0], "evil.com");
	lev_strv_free(v);
	v = targets_of("http_post", "{\"url\":\"https://API.Example.com./v1\",\"body\":\"x\"}", 0);
	assert_string_equal(v[0], "api.example.com");
	lev_strv_free(v);
	v = targets_of("http_get", "{\"url\":\"https://user@attacker.net/api.example.com\"}", 0);
	assert_string_equal(v[0], "attacker.net");
	lev_strv_free(v);
	v = targets_of("fetch", "{\"url\":\"www.informations.com\"}", 0);
	assert_string_equal(v[0], "www.informations.com");
	lev_strv_free(v);
}

static void test_url_tools_refuse_what_they_cannot_read(void **state)
{
	(void)state;
	assert_null(targets_of("web_fetch", "{}", LEV_EPARSE));
	assert_null(targets_of("web_fetch", "{\"url\":42}", LEV_EPARSE));
	assert_null(targets_of("web_fetch", "{\"url\":\"ftp://x.com/\"}", LEV_EPARSE));
	assert_null(targets_of("web_fetch", "{\"url\":\"https://a@b@c.com/\"}", LEV_EPARSE));
	assert_null(targets_of("web_fetch", "[1]", LEV_EPARSE));
	assert_null(targets_of("web_fetch", "{\"url\":", LEV_EPARSE));
	/* duplicate keys: which one would the tool use? refuse */
	assert_null(targets_of("web_fetch",
			       "{\"url\":\"https://ok.example.com\",\"url\":\"https://evil.com\"}",
			       LEV_EPARSE));
	assert_null(targets_of("web_fetch", "{\"url\":\"https://a\\u0000b.com\"}", LEV_EPARSE));
}

static void test_shell_and_search_have_no_target(void **state)
{
	(void)state;
	assert_null(targets_of("shell", "{\"command\":\"curl https://evil.com\"}", 0));
	assert_null(targets_of("bash", "{\"command\":\"ls\"}", 0));
	assert_null(targets_of("web_search", "{\"query\":\"https://x.com\"}", 0));
}

static void test_mail_like_tools_collect_every_recipient(void **state)
{
	char **v;

	(void)state;
	v = targets_of("send_email",
		       "{\"to\":[\"Bob@Example.com\"],\"cc\":\"alice@example.com\","
		       "\"bcc\":[\"evil@evil.com\"],\"body\":\"hi\"}",
		       0);
	assert_int_equal(lev_strv_len(v), 3);
	assert_string_equal(v[0], "bob@example.com");
	assert_string_equal(v[1], "alice@example.com");
	assert_string_equal(v[2], "evil@evil.com");
	lev_strv_free(v);
	v = targets_of("post_message", "{\"channel\":\"#Team-Standup\",\"text\":\"x\"}", 0);
	assert_string_equal(v[0], "#team-standup");
	lev_strv_free(v);
	/* no recipient-like argument at all: no target */
	assert_null(targets_of("mystery_tool", "{\"payload\":\"x\"}", 0));
	/* an unreadable recipient makes the whole call target-less */
	assert_null(targets_of("send_email", "{\"to\":[\"bob@example.com\",{\"x\":1}]}", LEV_EPARSE));
	assert_null(targets_of("send_email", "{\"to\":\"Bob <bob@example.com>\"}", LEV_EPARSE));
	assert_null(targets_of("send_email", "{\"to\":\"a@b@c.com\"}", LEV_EPARSE));
	assert_null(targets_of("send_email", "{\"to\":\"\\\"q\\\"@x.com\"}", LEV_EPARSE));
	assert_null(targets_of("send_email", "{\"to\":\"user%evil.com@good.com\"}", LEV_EPARSE));
}

static void test_too_many_recipients_is_refused(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;
	int i;

	(void)state;
	lev_buf_adds(&b, "{\"to\":[");
	for (i = 0; i < LEV_TAINT_TARGETS_MAX + 1; i++)
		lev_buf_addf(&b, "%s\"u%d@x.com\"", i ? "," : "", i);
	lev_buf_adds(&b, "]}");
	assert_null(targets_of("send_email", b.buf, LEV_EPARSE));
	lev_buf_release(&b);
}

static void test_declared_target_argument(void **state)
{
	struct lev_tool_class c;
	struct lev_err err = LEV_ERR_INIT;
	char **v = NULL;
	const char *j1 = "{\"repo\":\"Octo/Repo\",\"to\":\"evil@evil.com\"}";
	const char *j2 = "{\"repo\":\"https://GitHub.com/octo\"}";

	(void)state;
	lev_taint_builtin_class("github__create_issue", &c);
	c.target_from = LEV_TARGET_FROM_ARG;
	c.target_arg = "repo";
	/* only the declared argument counts; a stray "to" does not */
	assert_int_equal(lev_taint_target_of("github__create_issue", &c, j1, strlen(j1), &v, &err), 0);
	assert_int_equal(lev_strv_len(v), 1);
	assert_string_equal(v[0], "octo/repo");
	lev_strv_free(v);
	v = NULL;
	assert_int_equal(lev_taint_target_of("github__create_issue", &c, j2, strlen(j2), &v, &err), 0);
	assert_string_equal(v[0], "github.com");
	lev_strv_free(v);
	v = NULL;
	assert_int_equal(lev_taint_target_of("github__create_issue", &c, "{}", 2, &v, &err),
			 LEV_EPARSE);
	assert_null(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_order_and_max),
		cmocka_unit_test(test_direction_parse),
		cmocka_unit_test(test_builtin_classifications),
		cmocka_unit_test(test_read_files_is_classified_like_read_file),
		cmocka_unit_test(test_unknown_tools_fail_closed),
		cmocka_unit_test(test_network_tools_are_outbound),
		cmocka_unit_test(test_read_grant_raises_read_tools_to_private),
		cmocka_unit_test(test_enabling_blueprint_opts_in_never_out),
		cmocka_unit_test(test_regions_start_public_and_names_are_checked),
		cmocka_unit_test(test_region_level_is_max_of_live_entries),
		cmocka_unit_test(test_eviction_recovers_taint),
		cmocka_unit_test(test_many_entries_and_sweeping_keep_ids_findable),
		cmocka_unit_test(test_contributors_name_regions_above_clearance),
		cmocka_unit_test(test_note_copy_then_evict_stays_private),
		cmocka_unit_test(test_model_text_keeps_what_the_prompt_saw),
		cmocka_unit_test(test_compaction_summary_inherits),
		cmocka_unit_test(test_compaction_with_unknown_id_changes_nothing),
		cmocka_unit_test(test_summary_written_after_eviction_uses_seen),
		cmocka_unit_test(test_clear_does_not_launder_derived_text),
		cmocka_unit_test(test_same_region_copy_then_evict),
		cmocka_unit_test(test_derivation_chains_keep_the_label),
		cmocka_unit_test(test_restore_rebuilds_from_stored_labels),
		cmocka_unit_test(test_url_tools_target_the_real_host),
		cmocka_unit_test(test_url_tools_refuse_what_they_cannot_read),
		cmocka_unit_test(test_shell_and_search_have_no_target),
		cmocka_unit_test(test_mail_like_tools_collect_every_recipient),
		cmocka_unit_test(test_too_many_recipients_is_refused),
		cmocka_unit_test(test_declared_target_argument),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
