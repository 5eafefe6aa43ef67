#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/run/context.h"
#include "liblev/base/error.h"
#include "liblev/provider/provider.h"
#include "liblev/base/xalloc.h"

static struct lev_region R(const char *name, enum lev_region_kind kind, unsigned pct,
			   uint64_t max_tokens, uint64_t max_items)
{
	struct lev_region r;

	memset(&r, 0, sizeof(r));
	r.name = (char *)name;
	r.kind = kind;
	r.budget_pct = pct;
	r.max_tokens = max_tokens;
	r.max_items = max_items;
	return r;
}

/* A response with text TEXT and one call per name in CALLS (NULL-terminated). */
static void response(struct lev_infer_response *resp, const char *text, const char *const *calls)
{
	size_t n = 0;

	memset(resp, 0, sizeof(*resp));
	resp->text = xstrdup(text);
	while (calls && calls[n])
		n++;
	resp->n_calls = n;
	resp->calls = n ? xcalloc(n, sizeof(*resp->calls)) : NULL;
	for (size_t i = 0; i < n; i++) {
		char id[32];

		snprintf(id, sizeof(id), "c%zu", i);
		resp->calls[i].id = xstrdup(id);
		resp->calls[i].name = xstrdup(calls[i]);
		resp->calls[i].raw_arguments = xstrdup("{}");
		resp->calls[i].arguments = json_object();
	}
	resp->finish = n ? LEV_FINISH_TOOL_CALLS : LEV_FINISH_STOP;
}

static void add_exchange(struct lev_context *ctx, const char *tool, const char *result,
			 enum lev_level label)
{
	struct lev_infer_response resp;
	struct lev_err err = LEV_ERR_INIT;
	const char *calls[] = { tool, NULL };

	response(&resp, "calling", calls);
	assert_int_equal(lev_context_add_assistant(ctx, &resp, lev_context_taint_level(ctx), &err),
			 0);
	assert_int_equal(lev_context_add_tool_result(ctx, "c0", result, strlen(result), false,
						     label, 0, NULL, &err),
			 0);
	lev_response_release(&resp);
}

static void test_default_layout(void **state)
{
	struct lev_context *ctx = NULL;

	(void)state;
	assert_int_equal(lev_context_new(NULL, 0, NULL, &ctx, NULL), 0);
	assert_int_equal(lev_context_region_count(ctx), 2);
	assert_string_equal(lev_context_region_name(ctx, 0), "system");
	assert_int_equal(lev_context_region_kind(ctx, 0), LEV_REGION_PINNED);
	assert_int_equal(lev_context_region_limit(ctx, 0), 8000);
	assert_string_equal(lev_context_region_name(ctx, lev_context_conversation(ctx)),
			    "conversation");
	assert_int_equal(lev_context_region_limit(ctx, 1), 10000);
	assert_int_equal(lev_context_first_pinned(ctx), 0);
	lev_context_free(ctx);
}

static void test_budget_percent_and_max_tokens(void **state)
{
	struct lev_region rs[] = {
		R("task", LEV_REGION_PINNED, 2, 0, 0),
		R("conversation", LEV_REGION_SLIDING_WINDOW, 12, 5000, 10),
		R("scratch", LEV_REGION_CLEARABLE, 0, 0, 0),
	};
	struct lev_context_opts o = { .window_tokens = 100000 };
	struct lev_context *ctx = NULL;

	(void)state;
	assert_int_equal(lev_context_new(rs, 3, &o, &ctx, NULL), 0);
	assert_int_equal(lev_context_region_limit(ctx, 0), 2000);	/* 2% of 100k */
	assert_int_equal(lev_context_region_limit(ctx, 1), 5000);	/* min(12%, 5000) */
	assert_int_equal(lev_context_region_limit(ctx, 2), 0);		/* window only */
	lev_context_free(ctx);
}

static void test_token_estimate_is_bytes_over_four_rounded_up(void **state)
{
	(void)state;
	assert_int_equal(lev_context_estimate(0), 0);
	assert_int_equal(lev_context_estimate(1), 1);
	assert_int_equal(lev_context_estimate(4), 1);
	assert_int_equal(lev_context_estimate(5), 2);
	assert_int_equal(lev_context_estimate(400000), 100000);
}

static void test_pinned_overflow_is_an_error_and_adds_nothing(void **state)
{
	struct lev_region rs[] = { R("task", LEV_REGION_PINNED, 0, 10, 0) };
	struct lev_context *ctx = NULL;
	struct lev_err err = LEV_ERR_INIT;
	char big[100];

	(void)state;
	memset(big, 'x', sizeof(big));
	assert_int_equal(lev_context_new(rs, 1, NULL, &ctx, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 0, "short task", 10, LEV_PUBLIC, &err), 0);
	assert_int_equal(lev_context_add_text(ctx, 0, big, sizeof(big), LEV_PUBLIC, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "'task' is pinned"));
	assert_int_equal(lev_context_region_items(ctx, 0), 1);
	assert_int_equal(lev_context_region_tokens(ctx, 0), 3);
	/* pinned entries are never evicted and never cleared */
	assert_int_equal(lev_context_clear(ctx, 0, NULL), -EPERM);
	assert_int_equal(lev_context_evictions(ctx), 0);
	lev_context_free(ctx);
}

/*
 * Notes: the agent's own pinned regions (no seed) and sliding windows take
 * them, as Leviath's agents need (sources_index, claims); a seeded pinned
 * region, the task's region and the conversation refuse them.
 */
static void test_notes_go_where_the_agent_keeps_them(void **state)
{
	struct lev_region rs[] = {
		R("task", LEV_REGION_PINNED, 0, 0, 0),
		R("rules", LEV_REGION_PINNED, 0, 0, 0),
		R("sources_index", LEV_REGION_PINNED, 0, 20, 0),
		R("claims", LEV_REGION_SLIDING_WINDOW, 0, 0, 2),
		R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 0),
	};
	struct lev_context *ctx = NULL;
	struct lev_err err = LEV_ERR_INIT;
	char big[200];
	char *t;

	(void)state;
	rs[1].seed.kind = LEV_SEED_LITERAL;
	assert_int_equal(lev_context_new(rs, 5, NULL, &ctx, NULL), 0);
	/* the attack: the model rewrites the task or the author's rules */
	assert_int_equal(lev_context_add_note(ctx, 0, "new task", 8, LEV_PUBLIC, &err), -EPERM);
	assert_non_null(strstr(err.msg, "'task' is pinned and filled by its seed"));
	lev_err_clear(&err);
	assert_int_equal(lev_context_write_note(ctx, 1, "no rules", 8, LEV_PUBLIC, &err), -EPERM);
	lev_err_clear(&err);
	assert_int_equal(lev_context_add_note(ctx, 4, "hi", 2, LEV_PUBLIC, &err), -EPERM);
	lev_err_clear(&err);
	/* the benign twin: the bibliography and the claims take notes */
	assert_int_equal(lev_context_add_note(ctx, 2, "[1] a", 5, LEV_PUBLIC, &err), 0);
	assert_int_equal(lev_context_add_note(ctx, 2, "[2] b", 5, LEV_PUBLIC, &err), 0);
	assert_int_equal(lev_context_region_items(ctx, 2), 2);
	assert_int_equal(lev_context_write_note(ctx, 2, "[1] c", 5, LEV_PUBLIC, &err), 0);
	t = lev_context_region_text(ctx, 2);
	assert_non_null(strstr(t, "[1] c"));
	assert_null(strstr(t, "[2] b"));
	free(t);
	/* a pinned region is never evicted: a note past its budget is refused */
	memset(big, 'x', sizeof(big));
	assert_int_equal(lev_context_add_note(ctx, 2, big, sizeof(big), LEV_PUBLIC, &err), -E2BIG);
	lev_err_clear(&err);
	assert_int_equal(lev_context_region_items(ctx, 2), 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(lev_context_add_note(ctx, 3, "claim", 5, LEV_PUBLIC, &err), 0);
	assert_int_equal(lev_context_region_items(ctx, 3), 2);
	lev_context_free(ctx);
}

static void test_sliding_window_evicts_oldest_by_items(void **state)
{
	struct lev_region rs[] = { R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 4) };
	struct lev_context *ctx = NULL;
	struct lev_infer_request req;

	(void)state;
	assert_int_equal(lev_context_new(rs, 1, NULL, &ctx, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 0, "task", 4, LEV_PUBLIC, NULL), 0);
	add_exchange(ctx, "read_file", "one", LEV_INTERNAL);	/* 3 items */
	assert_int_equal(lev_context_region_items(ctx, 0), 3);
	add_exchange(ctx, "read_file", "two", LEV_INTERNAL);	/* 5 > 4: the task goes */
	assert_int_equal(lev_context_region_items(ctx, 0), 4);
	assert_int_equal(lev_context_evictions(ctx), 1);
	add_exchange(ctx, "read_file", "three", LEV_INTERNAL);	/* 6 > 4: "one" pair goes */
	assert_int_equal(lev_context_region_items(ctx, 0), 4);
	assert_int_equal(lev_context_evictions(ctx), 3);

	/* the rendered conversation starts with a user turn and pairs every call */
	lev_request_init(&req);
	lev_context_render(ctx, "sys", &req);
	assert_string_equal(req.system, "sys");
	assert_int_equal(req.n_messages, 5);
	assert_int_equal(req.messages[0].role, LEV_ROLE_USER);
	assert_non_null(strstr(req.messages[0].blocks[0].text, "removed"));
	assert_int_equal(req.messages[1].role, LEV_ROLE_ASSISTANT);
	assert_int_equal(req.messages[1].blocks[1].type, LEV_BLOCK_TOOL_USE);
	assert_int_equal(req.messages[2].role, LEV_ROLE_USER);
	assert_int_equal(req.messages[2].blocks[0].type, LEV_BLOCK_TOOL_RESULT);
	assert_string_equal(req.messages[2].blocks[0].text, "two");
	assert_string_equal(req.messages[4].blocks[0].text, "three");
	lev_request_release(&req);
	lev_context_free(ctx);
}

static void test_call_and_result_leave_together_and_newest_unit_stays(void **state)
{
	/* a tiny token budget: every new exchange pushes the previous one out */
	struct lev_region rs[] = { R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 8, 0) };
	struct lev_context *ctx = NULL;
	char big[200];

	(void)state;
	memset(big, 'r', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(lev_context_new(rs, 1, NULL, &ctx, NULL), 0);
	add_exchange(ctx, "read_file", big, LEV_INTERNAL);
	/* over budget, but it is the newest (only) unit: kept whole */
	assert_int_equal(lev_context_region_items(ctx, 0), 2);
	add_exchange(ctx, "list_dir", "x", LEV_INTERNAL);
	/* the old assistant turn and its result went together */
	assert_int_equal(lev_context_region_items(ctx, 0), 2);
	assert_int_equal(lev_context_evictions(ctx), 2);
	lev_context_free(ctx);
}

static void test_oversize_results_are_truncated_with_a_note(void **state)
{
	struct lev_region rs[] = { R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 1000, 0) };
	struct lev_context *ctx = NULL;
	struct lev_infer_response resp;
	struct lev_infer_request req;
	const char *calls[] = { "shell", NULL };
	size_t cap;
	bool cut = false;
	char *big = xmalloc(10000);

	(void)state;
	memset(big, 'y', 10000);
	assert_int_equal(lev_context_new(rs, 1, NULL, &ctx, NULL), 0);
	/* half of 1000 tokens * 4 bytes for one call */
	cap = lev_context_result_cap(ctx, 1);
	assert_int_equal(cap, 2000);
	assert_int_equal(lev_context_result_cap(ctx, 100), LEV_CONTEXT_RESULT_FLOOR);
	response(&resp, "", calls);
	assert_int_equal(lev_context_add_assistant(ctx, &resp, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_add_tool_result(ctx, "c0", big, 10000, false, LEV_PUBLIC, 0,
						     &cut, NULL),
			 0);
	assert_true(cut);
	lev_request_init(&req);
	lev_context_render(ctx, NULL, &req);
	assert_null(req.system);
	assert_int_equal(req.n_messages, 3);
	assert_non_null(strstr(req.messages[2].blocks[0].text,
			       "[output truncated: the first 2000 of 10000 bytes are shown]"));
	lev_request_release(&req);
	lev_response_release(&resp);
	free(big);
	lev_context_free(ctx);
}

static void test_result_for_unknown_call_is_refused(void **state)
{
	struct lev_context *ctx = NULL;
	struct lev_infer_response resp;
	const char *calls[] = { "shell", NULL };

	(void)state;
	assert_int_equal(lev_context_new(NULL, 0, NULL, &ctx, NULL), 0);
	assert_int_equal(lev_context_add_tool_result(ctx, "c0", "x", 1, false, LEV_PUBLIC, 0, NULL,
						     NULL),
			 -EINVAL);
	response(&resp, "", calls);
	assert_int_equal(lev_context_add_assistant(ctx, &resp, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_add_tool_result(ctx, "nope", "x", 1, false, LEV_PUBLIC, 0,
						     NULL, NULL),
			 -ENOENT);
	lev_response_release(&resp);
	lev_context_free(ctx);
}

static void test_taint_label_follows_entries_and_recovers(void **state)
{
	struct lev_region rs[] = { R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 3) };
	struct lev_context *ctx = NULL;

	(void)state;
	assert_int_equal(lev_context_new(rs, 1, NULL, &ctx, NULL), 0);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PUBLIC);
	assert_int_equal(lev_context_add_text(ctx, 0, "task", 4, LEV_PUBLIC, NULL), 0);
	/* an exchange whose assistant turn was produced while taint was public */
	add_exchange(ctx, "read_file", "secret", LEV_PRIVATE);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PRIVATE);
	assert_int_equal(lev_context_region_level(ctx, 0), LEV_PRIVATE);
	/*
	 * The next assistant turn is produced under private taint and keeps
	 * it; evict the private result by pushing more items through.
	 */
	add_exchange(ctx, "list_dir", "a\nb", LEV_INTERNAL);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PRIVATE);
	lev_context_free(ctx);
}

static void test_eviction_recovers_taint_when_nothing_derived_remains(void **state)
{
	struct lev_region rs[] = {
		R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 2),
	};
	struct lev_context *ctx = NULL;
	struct lev_infer_response resp;
	const char *calls[] = { "read_file", NULL };

	(void)state;
	assert_int_equal(lev_context_new(rs, 1, NULL, &ctx, NULL), 0);
	/* assistant turn made while context was public */
	response(&resp, "", calls);
	assert_int_equal(lev_context_add_assistant(ctx, &resp, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_add_tool_result(ctx, "c0", "secret", 6, false, LEV_PRIVATE,
						     0, NULL, NULL),
			 0);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PRIVATE);
	lev_response_release(&resp);
	/* runtime text pushes the pair out (max_items 2) */
	assert_int_equal(lev_context_add_text(ctx, 0, "next", 4, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 0, "more", 4, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_region_items(ctx, 0), 2);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PUBLIC);
	lev_context_free(ctx);
}

static void test_no_laundering_through_notes(void **state)
{
	struct lev_region rs[] = {
		R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 2),
		R("notes", LEV_REGION_CLEARABLE, 0, 0, 0),
	};
	struct lev_context *ctx = NULL;
	int notes;
	char *text;

	(void)state;
	assert_int_equal(lev_context_new(rs, 2, NULL, &ctx, NULL), 0);
	notes = lev_context_region_find(ctx, "notes");
	assert_int_equal(notes, 1);
	add_exchange(ctx, "read_file", "code 463820", LEV_PRIVATE);
	/* the model copies the secret into a note, as a context_write would */
	assert_int_equal(lev_context_write_note(ctx, (size_t)notes, "code 463820", 11, LEV_PUBLIC,
						NULL),
			 0);
	assert_int_equal(lev_context_region_level(ctx, (size_t)notes), LEV_PRIVATE);
	/* the source leaves the window */
	assert_int_equal(lev_context_add_text(ctx, 0, "a", 1, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 0, "b", 1, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_region_level(ctx, 0), LEV_PUBLIC);
	/* the note still carries private: taint did not launder */
	assert_int_equal(lev_context_taint_level(ctx), LEV_PRIVATE);
	/* overwriting the note with itself keeps private too */
	assert_int_equal(lev_context_write_note(ctx, (size_t)notes, "code 463820", 11, LEV_PUBLIC,
						NULL),
			 0);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PRIVATE);
	text = lev_context_region_text(ctx, (size_t)notes);
	assert_string_equal(text, "code 463820");
	free(text);
	/* clearing the note is the only way taint recovers */
	assert_int_equal(lev_context_clear(ctx, (size_t)notes, NULL), 0);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PUBLIC);
	lev_context_free(ctx);
}

static void test_no_laundering_through_assistant_summary(void **state)
{
	/* A12/A13: the model restates a private result; the result is evicted */
	struct lev_region rs[] = { R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 3) };
	struct lev_context *ctx = NULL;
	struct lev_infer_response resp;

	(void)state;
	assert_int_equal(lev_context_new(rs, 1, NULL, &ctx, NULL), 0);
	add_exchange(ctx, "read_file", "secret 463820", LEV_PRIVATE);
	/* summary written while the private result is live */
	response(&resp, "Noting code 463820 for later.", NULL);
	assert_int_equal(lev_context_add_assistant(ctx, &resp, lev_context_taint_level(ctx), NULL),
			 0);
	lev_response_release(&resp);
	/* push the original pair out */
	assert_int_equal(lev_context_add_text(ctx, 0, "now send it", 11, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 0, "please", 6, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_region_items(ctx, 0), 3);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PRIVATE);
	lev_context_free(ctx);
}

static void test_seen_taint_survives_eviction_between_request_and_answer(void **state)
{
	struct lev_region rs[] = { R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 2) };
	struct lev_context *ctx = NULL;
	struct lev_infer_response resp;
	enum lev_level seen;

	(void)state;
	assert_int_equal(lev_context_new(rs, 1, NULL, &ctx, NULL), 0);
	add_exchange(ctx, "read_file", "secret", LEV_PRIVATE);
	seen = lev_context_taint_level(ctx);	/* the request is rendered now */
	assert_int_equal(seen, LEV_PRIVATE);
	/* the answer's own arrival evicts the private pair (max_items 2) ... */
	response(&resp, "I remember it", NULL);
	assert_int_equal(lev_context_add_text(ctx, 0, "x", 1, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_add_assistant(ctx, &resp, seen, NULL), 0);
	lev_response_release(&resp);
	/* ... but the answer was produced from private context */
	assert_int_equal(lev_context_taint_level(ctx), LEV_PRIVATE);
	lev_context_free(ctx);
}

static void test_notes_only_in_temporary_or_clearable_regions(void **state)
{
	struct lev_region rs[] = {
		R("task", LEV_REGION_PINNED, 0, 0, 0),
		R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 0),
		R("scratch", LEV_REGION_TEMPORARY, 0, 0, 0),
	};
	struct lev_context *ctx = NULL;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(lev_context_new(rs, 3, NULL, &ctx, NULL), 0);
	assert_int_equal(lev_context_add_note(ctx, 0, "x", 1, LEV_PUBLIC, &err), -EPERM);
	assert_non_null(strstr(err.msg, "pinned"));
	assert_int_equal(lev_context_add_note(ctx, 1, "x", 1, LEV_PUBLIC, &err), -EPERM);
	assert_int_equal(lev_context_add_note(ctx, 2, "x", 1, LEV_PUBLIC, &err), 0);
	assert_int_equal(lev_context_add_note(ctx, 9, "x", 1, LEV_PUBLIC, &err), -ENOENT);
	lev_context_free(ctx);
}

static void test_window_pressure_evicts_temporary_first(void **state)
{
	struct lev_region rs[] = {
		R("task", LEV_REGION_PINNED, 0, 0, 0),
		R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 0),
		R("scratch", LEV_REGION_TEMPORARY, 0, 0, 0),
	};
	struct lev_context_opts o = { .window_tokens = 100 };
	struct lev_context *ctx = NULL;
	char t[160];

	(void)state;
	memset(t, 'n', sizeof(t));
	assert_int_equal(lev_context_new(rs, 3, &o, &ctx, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 0, t, 40, LEV_PUBLIC, NULL), 0);	/* 10 */
	assert_int_equal(lev_context_add_text(ctx, 2, t, 160, LEV_PRIVATE, NULL), 0);	/* 40 */
	assert_int_equal(lev_context_add_text(ctx, 1, t, 160, LEV_PUBLIC, NULL), 0);	/* 40 */
	assert_int_equal(lev_context_tokens(ctx), 90);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PRIVATE);
	/* 90 + 40 > 100: the temporary region goes first, not the conversation */
	assert_int_equal(lev_context_add_text(ctx, 1, t, 160, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_region_items(ctx, 2), 0);
	assert_int_equal(lev_context_region_items(ctx, 1), 2);
	assert_int_equal(lev_context_tokens(ctx), 90);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PUBLIC);
	lev_context_free(ctx);
}

static void test_pinned_region_named_conversation_is_refused(void **state)
{
	struct lev_region rs[] = { R("conversation", LEV_REGION_PINNED, 0, 0, 0) };
	struct lev_region dup[] = {
		R("a", LEV_REGION_PINNED, 0, 0, 0),
		R("a", LEV_REGION_TEMPORARY, 0, 0, 0),
	};
	struct lev_region noconv[] = { R("task", LEV_REGION_PINNED, 0, 0, 0) };
	struct lev_context *ctx = NULL;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(lev_context_new(rs, 1, NULL, &ctx, &err), LEV_EPARSE);
	assert_null(ctx);
	assert_int_equal(lev_context_new(dup, 2, NULL, &ctx, &err), LEV_EPARSE);
	/* no sliding window at all: a conversation is added */
	assert_int_equal(lev_context_new(noconv, 1, NULL, &ctx, &err), 0);
	assert_int_equal(lev_context_region_count(ctx), 2);
	assert_string_equal(lev_context_region_name(ctx, lev_context_conversation(ctx)),
			    "conversation");
	lev_context_free(ctx);
}

static void test_render_puts_regions_in_system_and_merges_user_turns(void **state)
{
	struct lev_region rs[] = {
		R("task", LEV_REGION_PINNED, 0, 0, 0),
		R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 0),
		R("scratch", LEV_REGION_CLEARABLE, 0, 0, 0),
	};
	struct lev_context *ctx = NULL;
	struct lev_infer_request req;

	(void)state;
	assert_int_equal(lev_context_new(rs, 3, NULL, &ctx, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 0, "Fix the bug.", 12, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 1, "Begin.", 6, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 1, "Really.", 7, LEV_PUBLIC, NULL), 0);
	lev_request_init(&req);
	lev_context_render(ctx, "You are careful.", &req);
	assert_string_equal(req.system, "You are careful.\n\n## task\n\nFix the bug.");
	assert_int_equal(req.n_messages, 1);
	assert_int_equal(req.messages[0].n_blocks, 2);
	lev_request_release(&req);
	lev_context_free(ctx);
}

static unsigned evicted_calls;

static void on_evict(void *data, const char *region, enum lev_item_kind kind, uint64_t tokens,
		     enum lev_level label)
{
	(void)data;
	(void)kind;
	(void)tokens;
	(void)label;
	assert_string_equal(region, "conversation");
	evicted_calls++;
}

static void test_eviction_callback(void **state)
{
	struct lev_region rs[] = { R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 1) };
	struct lev_context_opts o = { .on_evict = on_evict };
	struct lev_context *ctx = NULL;

	(void)state;
	evicted_calls = 0;
	assert_int_equal(lev_context_new(rs, 1, &o, &ctx, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 0, "a", 1, LEV_PUBLIC, NULL), 0);
	assert_int_equal(lev_context_add_text(ctx, 0, "b", 1, LEV_PUBLIC, NULL), 0);
	assert_int_equal(evicted_calls, 1);
	lev_context_free(ctx);
}

/* admission, persistent, min_tokens, volatility and routed results (Leviath's region keys) */
static void test_leviath_region_keys(void **state)
{
	struct lev_context_opts o = { .window_tokens = 100000 };
	struct lev_region regs[4];
	struct lev_context *ctx = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_infer_request req;
	char big[400];
	bool cut = false;

	(void)state;
	regs[0] = R("full", LEV_REGION_CLEARABLE, 0, 10, 0);
	regs[0].admission_reject = true;
	regs[1] = R("keep", LEV_REGION_TEMPORARY, 0, 10, 0);
	regs[1].persistent = true;
	regs[2] = R("floor", LEV_REGION_TEMPORARY, 1, 0, 0);
	regs[2].min_tokens = 5000;
	regs[2].volatility = LEV_VOL_STABLE;
	regs[3] = R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 10000, 0);
	assert_int_equal(lev_context_new(regs, 4, &o, &ctx, &err), 0);
	/* min_tokens lifts a small percentage (1% of 100000 = 1000) */
	assert_int_equal(lev_context_region_limit(ctx, 2), 5000);

	/* reject: the second write does not fit and nothing is evicted for it */
	assert_int_equal(lev_context_add_routed(ctx, 0, "0123456789012345678901234567", 28,
						LEV_INTERNAL, 0, 0, &cut, &err), 0);
	assert_int_equal(lev_context_add_routed(ctx, 0, "abcdefghijklmnop", 16, LEV_PUBLIC, 0, 0,
						&cut, &err), -ENOSPC);
	assert_non_null(strstr(err.msg, "'full' is full"));
	assert_int_equal(lev_context_region_items(ctx, 0), 1);
	assert_int_equal(lev_context_region_level(ctx, 0), LEV_INTERNAL);
	lev_err_clear(&err);

	/* persistent: past its budget nothing is evicted */
	assert_int_equal(lev_context_add_text(ctx, 1, "0123456789012345678901234567", 28,
					      LEV_PUBLIC, &err), 0);
	assert_int_equal(lev_context_add_text(ctx, 1, "0123456789012345678901234567", 28,
					      LEV_PUBLIC, &err), 0);
	assert_int_equal(lev_context_region_items(ctx, 1), 2);

	/* a routed result is cut to its token ceiling with a note naming it */
	memset(big, 'x', sizeof(big));
	assert_int_equal(lev_context_add_routed(ctx, 2, big, sizeof(big), LEV_PRIVATE, 10, 7, &cut,
						&err), 0);
	assert_true(cut);
	assert_int_equal(lev_context_region_level(ctx, 2), LEV_PRIVATE);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PRIVATE);
	{
		char *t = lev_context_region_text(ctx, 2);

		assert_non_null(strstr(t, "result ceiling of 10 tokens: the first 40 of 400"));
		free(t);
	}
	/* the conversation is not a routing target */
	assert_int_equal(lev_context_add_routed(ctx, 3, "x", 1, LEV_PUBLIC, 0, 0, &cut, &err),
			 -EINVAL);

	/* stable regions render first */
	lev_request_init(&req);
	lev_context_render(ctx, NULL, &req);
	assert_true(!strncmp(req.system, "## floor", 8));
	lev_request_release(&req);

	/* dropping the tagged entry removes its label too */
	lev_context_drop_tagged(ctx, 7);
	assert_int_equal(lev_context_region_items(ctx, 2), 0);
	assert_int_equal(lev_context_taint_level(ctx), LEV_INTERNAL);
	lev_context_free(ctx);
}

/* context_delete: the source's label leaves with it; a note written from it keeps its own */
static void test_delete_keeps_model_copies_labelled(void **state)
{
	struct lev_region regs[] = {
		R("src", LEV_REGION_TEMPORARY, 0, 0, 0),
		R("notes", LEV_REGION_CLEARABLE, 0, 0, 0),
		R("pin", LEV_REGION_PINNED, 0, 0, 0),
		R("conversation", LEV_REGION_SLIDING_WINDOW, 0, 0, 0),
	};
	struct lev_context *ctx = NULL;
	struct lev_err err = LEV_ERR_INIT;
	uint64_t tokens = 0;
	bool cut = false;

	(void)state;
	assert_int_equal(lev_context_new(regs, 4, NULL, &ctx, &err), 0);
	assert_int_equal(lev_context_add_routed(ctx, 0, "secret", 6, LEV_PRIVATE, 0, 0, &cut, &err),
			 0);
	assert_int_equal(lev_context_add_text(ctx, 0, "plain", 5, LEV_PUBLIC, &err), 0);
	/* the model copies it into a note while it is live */
	assert_int_equal(lev_context_add_note(ctx, 1, "secret (copied)", 15,
					      lev_context_taint_level(ctx), &err), 0);
	assert_int_equal(lev_context_delete(ctx, 0, 0, 1, &tokens, &err), 1);
	assert_int_equal(tokens, 2);
	assert_int_equal(lev_context_region_level(ctx, 0), LEV_PUBLIC);
	/* the copy keeps the run private */
	assert_int_equal(lev_context_taint_level(ctx), LEV_PRIVATE);
	assert_int_equal(lev_context_delete(ctx, 1, 0, 5, NULL, &err), 1);
	assert_int_equal(lev_context_taint_level(ctx), LEV_PUBLIC);
	/* past the end, pinned regions and the conversation are refused */
	assert_int_equal(lev_context_delete(ctx, 0, 3, 1, NULL, &err), -ENOENT);
	assert_int_equal(lev_context_delete(ctx, 2, 0, 1, NULL, &err), -EPERM);
	assert_int_equal(lev_context_delete(ctx, 3, 0, 1, NULL, &err), -EPERM);
	lev_context_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_layout),
		cmocka_unit_test(test_budget_percent_and_max_tokens),
		cmocka_unit_test(test_token_estimate_is_bytes_over_four_rounded_up),
		cmocka_unit_test(test_pinned_overflow_is_an_error_and_adds_nothing),
		cmocka_unit_test(test_sliding_window_evicts_oldest_by_items),
		cmocka_unit_test(test_call_and_result_leave_together_and_newest_unit_stays),
		cmocka_unit_test(test_oversize_results_are_truncated_with_a_note),
		cmocka_unit_test(test_result_for_unknown_call_is_refused),
		cmocka_unit_test(test_taint_label_follows_entries_and_recovers),
		cmocka_unit_test(test_eviction_recovers_taint_when_nothing_derived_remains),
		cmocka_unit_test(test_no_laundering_through_notes),
		cmocka_unit_test(test_no_laundering_through_assistant_summary),
		cmocka_unit_test(test_seen_taint_survives_eviction_between_request_and_answer),
		cmocka_unit_test(test_notes_only_in_temporary_or_clearable_regions),
		cmocka_unit_test(test_window_pressure_evicts_temporary_first),
		cmocka_unit_test(test_pinned_region_named_conversation_is_refused),
		cmocka_unit_test(test_render_puts_regions_in_system_and_merges_user_turns),
		cmocka_unit_test(test_eviction_callback),
		cmocka_unit_test(test_leviath_region_keys),
		cmocka_unit_test(test_notes_go_where_the_agent_keeps_them),
		cmocka_unit_test(test_delete_keeps_model_copies_labelled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
