/*
 * test-replay.c - the replay log a resumed run is rebuilt from: turns are
 * taken in order while they are the stage's, calls are matched in order
 * (an id that repeats is told apart), a cut turn or another stage's ends
 * the log, and nothing is looked up outside a logged turn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/xalloc.h"
#include "liblev/run/replay.h"

/* A turn of STAGE with text TEXT and one call CALL_ID of shell (args "{}"), or none. */
static json_t *turn(const char *stage, const char *text, const char *call_id)
{
	struct lev_infer_response r = { 0 };
	json_t *t;

	r.text = xstrdup(text);
	r.finish = call_id ? LEV_FINISH_TOOL_CALLS : LEV_FINISH_STOP;
	if (call_id) {
		r.calls = xcalloc(1, sizeof(*r.calls));
		r.n_calls = 1;
		r.calls[0].id = xstrdup(call_id);
		r.calls[0].name = xstrdup("shell");
		r.calls[0].raw_arguments = xstrdup("{\"command\":\"echo hi\"}");
		r.calls[0].arguments = json_pack("{s:s}", "command", "echo hi");
	}
	t = lev_replay_turn_json(stage, &r);
	lev_response_release(&r);
	return t;
}

static json_t *call(const char *id, const char *state, const char *result)
{
	return json_pack("{s:s, s:s, s:b, s:s?}", "id", id, "state", state, "ok", 1, "result",
			 result);
}

static struct lev_replay *replay_of(json_t *log)
{
	struct lev_replay *rp = NULL;
	struct lev_err err = LEV_ERR_INIT;

	assert_int_equal(lev_replay_new(log, &rp, &err), 0);
	json_decref(log);
	return rp;
}

static void test_turns_round_trip(void **state)
{
	json_t *log = json_pack("{s:[o, o], s:[], s:[]}", "turns", turn("main", "one", "c1"),
				turn("main", "two", NULL), "calls", "answers");
	struct lev_replay *rp = replay_of(log);
	struct lev_infer_response r = { 0 };

	(void)state;
	assert_false(lev_replay_in_turn(rp));
	assert_int_equal(lev_replay_next_turn(rp, "main", &r), 1);
	assert_true(lev_replay_in_turn(rp));
	assert_string_equal(r.text, "one");
	assert_int_equal(r.finish, LEV_FINISH_TOOL_CALLS);
	assert_int_equal(r.n_calls, 1);
	assert_string_equal(r.calls[0].id, "c1");
	assert_string_equal(r.calls[0].name, "shell");
	assert_string_equal(json_string_value(json_object_get(r.calls[0].arguments, "command")),
			    "echo hi");
	assert_null(r.calls[0].parse_error);
	lev_response_release(&r);
	assert_int_equal(lev_replay_next_turn(rp, "main", &r), 1);
	assert_string_equal(r.text, "two");
	assert_int_equal(r.n_calls, 0);
	lev_response_release(&r);
	assert_int_equal(lev_replay_turns_played(rp), 2);
	/* past the end: live */
	assert_int_equal(lev_replay_next_turn(rp, "main", &r), 0);
	assert_false(lev_replay_in_turn(rp));
	lev_replay_free(rp);
}

/* A turn of another stage, or a cut one, ends the log: the run goes on live. */
static void test_other_stage_or_cut_ends_it(void **state)
{
	struct lev_replay *rp = replay_of(json_pack("{s:[o, o]}", "turns", turn("a", "x", NULL),
						   turn("b", "y", NULL)));
	struct lev_infer_response r = { 0 };

	(void)state;
	assert_int_equal(lev_replay_next_turn(rp, "b", &r), 0);
	assert_int_equal(lev_replay_next_turn(rp, "a", &r), 0);
	lev_replay_free(rp);

	rp = replay_of(json_pack("{s:[{s:b}, o]}", "turns", "cut", 1, turn("a", "x", NULL)));
	assert_int_equal(lev_replay_next_turn(rp, "a", &r), 0);
	assert_int_equal(lev_replay_next_turn(rp, "a", &r), 0);
	lev_replay_free(rp);
}

static void test_calls_in_order(void **state)
{
	json_t *log = json_pack("{s:[o, o, o], s:[o, o, o, o]}", "turns", turn("s1", "t", "c1"),
				turn("s2", "t", "c1"), turn("s2", "t", "c9"), "calls",
				call("seed_1", "done", "seed"), call("c1", "done", "first"),
				call("c1", "dispatched", NULL), call("c2", "denied", "[denied] no"));
	struct lev_replay *rp = replay_of(log);
	struct lev_infer_response r = { 0 };
	const char *text;
	bool ok;

	(void)state;
	/* outside a logged turn nothing is replayed */
	assert_int_equal(lev_replay_call(rp, "c1", &text, &ok), LEV_REPLAY_LIVE);
	assert_int_equal(lev_replay_next_turn(rp, "s1", &r), 1);
	lev_response_release(&r);
	/* the seed's row is passed over; the first c1 is done */
	assert_int_equal(lev_replay_call(rp, "c1", &text, &ok), LEV_REPLAY_DONE);
	assert_string_equal(text, "first");
	assert_true(ok);
	assert_int_equal(lev_replay_next_turn(rp, "s2", &r), 1);
	lev_response_release(&r);
	/* the same id in the next stage is the next row: in flight */
	assert_int_equal(lev_replay_call(rp, "c1", &text, &ok), LEV_REPLAY_IN_FLIGHT);
	assert_null(text);
	assert_int_equal(lev_replay_call(rp, "c2", &text, &ok), LEV_REPLAY_DENIED);
	assert_string_equal(text, "[denied] no");
	/* a call the journal never saw is live */
	assert_int_equal(lev_replay_call(rp, "c7", &text, &ok), LEV_REPLAY_LIVE);
	/* the run left the log: the rest of it is dropped; two turns were played */
	lev_replay_end(rp);
	assert_int_equal(lev_replay_turns_played(rp), 2);
	assert_false(lev_replay_in_turn(rp));
	assert_int_equal(lev_replay_next_turn(rp, "s2", &r), 0);
	lev_replay_free(rp);
}

/* An answer as the journal keeps it: bound to its run, its call and the call as shown. */
static json_t *answer(const char *run, const char *call, const char *kind, const char *digest,
		      const char *ans)
{
	json_t *a = json_pack("{s:s, s:s, s:s}", "call_id", call, "kind", kind, "answer", ans);

	if (run)
		json_object_set_new(a, "run", json_string(run));
	if (digest)
		json_object_set_new(a, "digest", json_string(digest));
	return a;
}

static void test_answers(void **state)
{
	json_t *log = json_pack(
		"{s:[o], s:[], s:[o, o, o, o, o, o]}", "turns", turn("main", "t", "c1"), "calls",
		"answers", answer("r1", "call_1", "permission", "d1", "once"),
		answer("r1", "call_1", "taint", "d1", "deny"),
		answer("r1", "call_1", "permission", "d1", "run"),
		/* another run's, another digest's, one without a digest: never replayed */
		answer("r2", "call_2", "permission", "d2", "once"),
		answer("r1", "call_2", "permission", "dX", "once"),
		answer("r1", "call_3", "permission", NULL, "once"));
	struct lev_replay *rp = replay_of(log);
	struct lev_infer_response r = { 0 };

	(void)state;
	/* answers are given only inside a logged turn */
	assert_null(lev_replay_answer(rp, "r1", "call_1", "permission", "d1"));
	assert_int_equal(lev_replay_next_turn(rp, "main", &r), 1);
	lev_response_release(&r);
	/* the last answer to the question wins */
	assert_string_equal(lev_replay_answer(rp, "r1", "call_1", "permission", "d1"), "run");
	assert_string_equal(lev_replay_answer(rp, "r1", "call_1", "taint", "d1"), "deny");
	/* run, place and digest must all match */
	assert_null(lev_replay_answer(rp, "r1", "call_1", "permission", "d2"));
	assert_null(lev_replay_answer(rp, "r2", "call_1", "permission", "d1"));
	assert_null(lev_replay_answer(rp, "r1", "call_2", "permission", "d1"));
	assert_null(lev_replay_answer(rp, "r1", "call_2", "permission", "d2"));
	assert_string_equal(lev_replay_answer(rp, "r2", "call_2", "permission", "d2"), "once");
	assert_null(lev_replay_answer(rp, "r1", "call_3", "permission", ""));
	assert_null(lev_replay_answer(rp, "r1", "call_3", "permission", NULL));
	lev_replay_free(rp);
}

static void test_malformed(void **state)
{
	struct lev_replay *rp = NULL;
	struct lev_err err = LEV_ERR_INIT;
	json_t *bad[] = {
		json_string("x"),
		json_pack("{s:s}", "turns", "x"),
		json_pack("{s:[{s:s}]}", "calls", "id", "c1"),
		json_pack("{s:[{s:s, s:s}]}", "calls", "id", "c1", "state", "maybe"),
		json_pack("{s:[{s:s}]}", "answers", "call_id", "c1"),
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_true(lev_replay_new(bad[i], &rp, &err) < 0);
		assert_null(rp);
		json_decref(bad[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_turns_round_trip),
		cmocka_unit_test(test_other_stage_or_cut_ends_it),
		cmocka_unit_test(test_calls_in_order),
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
