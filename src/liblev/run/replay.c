/*
 * replay.c - a run rebuilt from its journal (see replay.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/replay.h"

struct replay_call {
	char *id;
	enum lev_replay_state state;
	bool ok;
	char *result;
};

struct replay_answer {
	char *run;
	char *call_id;
	char *kind;
	char *digest;
	char *answer;
};

struct lev_replay {
	json_t *turns;		/* owned copy of the log's turns */
	size_t next_turn;
	size_t played;		/* turns taken from the log */
	bool in_turn;
	struct replay_call *calls;
	size_t n_calls;
	size_t next_call;	/* the search for a call starts here */
	struct replay_answer *answers;
	size_t n_answers;
};

static const char *str_or_null(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static int state_of(const char *s, enum lev_replay_state *out)
{
	if (lev_streq(s, "done"))
		*out = LEV_REPLAY_DONE;
	else if (lev_streq(s, "dispatched"))
		*out = LEV_REPLAY_IN_FLIGHT;
	else if (lev_streq(s, "denied"))
		*out = LEV_REPLAY_DENIED;
	else
		return -1;
	return 0;
}

static int add_calls(struct lev_replay *rp, const json_t *calls, struct lev_err *err)
{
	size_t i;
	json_t *c;

	rp->calls = xcalloc(json_array_size(calls) + 1, sizeof(*rp->calls));
	json_array_foreach(calls, i, c) {
		struct replay_call *rc = &rp->calls[rp->n_calls];
		const char *id = str_or_null(c, "id");

		if (!id || state_of(str_or_null(c, "state"), &rc->state) < 0)
			return lev_err_set(err, LEV_EPARSE,
					   "replay log: call %zu has no id or an unknown state", i);
		rc->id = xstrdup(id);
		rc->ok = json_is_true(json_object_get(c, "ok"));
		rc->result = dup_or_null(str_or_null(c, "result"));
		rp->n_calls++;
	}
	return 0;
}

static int add_answers(struct lev_replay *rp, const json_t *answers, struct lev_err *err)
{
	size_t i;
	json_t *a;

	rp->answers = xcalloc(json_array_size(answers) + 1, sizeof(*rp->answers));
	json_array_foreach(answers, i, a) {
		const char *id = str_or_null(a, "call_id"), *kind = str_or_null(a, "kind"),
			   *ans = str_or_null(a, "answer");

		if (!id || !kind || !ans)
			return lev_err_set(err, LEV_EPARSE,
					   "replay log: answer %zu needs call_id, kind and answer", i);
		rp->answers[rp->n_answers].run = dup_or_null(str_or_null(a, "run"));
		rp->answers[rp->n_answers].call_id = xstrdup(id);
		rp->answers[rp->n_answers].kind = xstrdup(kind);
		rp->answers[rp->n_answers].digest = dup_or_null(str_or_null(a, "digest"));
		rp->answers[rp->n_answers].answer = xstrdup(ans);
		rp->n_answers++;
	}
	return 0;
}

int lev_replay_new(const json_t *log, struct lev_replay **out, struct lev_err *err)
{
	const json_t *turns = json_object_get(log, "turns"), *calls = json_object_get(log, "calls"),
		     *answers = json_object_get(log, "answers");
	struct lev_replay *rp;
	int r;

	if (!json_is_object(log) || (turns && !json_is_array(turns)) ||
	    (calls && !json_is_array(calls)) || (answers && !json_is_array(answers)))
		return lev_err_set(err, LEV_EPARSE,
				   "replay log: expected an object of 'turns', 'calls' and 'answers'");
	rp = xcalloc(1, sizeof(*rp));
	rp->turns = turns ? json_deep_copy(turns) : json_array();
	r = add_calls(rp, calls, err);
	if (r == 0)
		r = add_answers(rp, answers, err);
	if (r < 0) {
		lev_replay_free(rp);
		return r;
	}
	*out = rp;
	return 0;
}

struct lev_replay *lev_replay_free(struct lev_replay *rp)
{
	if (!rp)
		return NULL;
	json_decref(rp->turns);
	for (size_t i = 0; i < rp->n_calls; i++) {
		free(rp->calls[i].id);
		free(rp->calls[i].result);
	}
	free(rp->calls);
	for (size_t i = 0; i < rp->n_answers; i++) {
		free(rp->answers[i].run);
		free(rp->answers[i].call_id);
		free(rp->answers[i].kind);
		free(rp->answers[i].digest);
		free(rp->answers[i].answer);
	}
	free(rp->answers);
	free(rp);
	return NULL;
}

json_t *lev_replay_turn_json(const char *stage, const struct lev_infer_response *resp)
{
	json_t *t = json_object(), *calls = json_array();

	json_object_set_new(t, "stage", json_string(stage ? stage : ""));
	json_object_set_new(t, "text", json_string(resp->text ? resp->text : ""));
	json_object_set_new(t, "finish", json_string(lev_finish_name(resp->finish)));
	for (size_t i = 0; i < resp->n_calls; i++) {
		const struct lev_tool_call *c = &resp->calls[i];
		json_t *jc = json_object();

		json_object_set_new(jc, "id", json_string(c->id ? c->id : ""));
		json_object_set_new(jc, "name", json_string(c->name ? c->name : ""));
		json_object_set_new(jc, "raw", json_string(c->raw_arguments ? c->raw_arguments : ""));
		json_object_set_new(jc, "args", c->arguments ? json_deep_copy(c->arguments)
							     : json_null());
		if (c->parse_error)
			json_object_set_new(jc, "parse_error", json_string(c->parse_error));
		json_array_append_new(calls, jc);
	}
	json_object_set_new(t, "calls", calls);
	if (resp->has_prompt_tokens)
		json_object_set_new(t, "prompt_tokens", json_integer((json_int_t)resp->prompt_tokens));
	if (resp->has_completion_tokens)
		json_object_set_new(t, "completion_tokens",
				    json_integer((json_int_t)resp->completion_tokens));
	if (resp->cached_tokens)
		json_object_set_new(t, "cached_tokens", json_integer((json_int_t)resp->cached_tokens));
	if (resp->cache_write_tokens)
		json_object_set_new(t, "cache_write_tokens",
				    json_integer((json_int_t)resp->cache_write_tokens));
	return t;
}

static enum lev_finish finish_of(const char *s)
{
	for (int f = 0; f < _LEV_FINISH_MAX; f++)
		if (lev_streq(s, lev_finish_name((enum lev_finish)f)))
			return (enum lev_finish)f;
	return LEV_FINISH_OTHER;
}

/* TURN's token count KEY; 0 when it has none. */
static uint64_t count_of(const json_t *turn, const char *key)
{
	const json_t *v = json_object_get(turn, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* TURN as a response; false when it is not one (the log ends there). */
static bool response_of(const json_t *turn, struct lev_infer_response *out)
{
	const json_t *calls = json_object_get(turn, "calls"), *c;
	struct lev_infer_response r = { 0 };
	size_t i;

	if (!json_is_array(calls) || json_array_size(calls) > LEV_PROVIDER_MAX_CALLS ||
	    !str_or_null(turn, "text"))
		return false;
	r.text = xstrdup(str_or_null(turn, "text"));
	r.finish = finish_of(str_or_null(turn, "finish"));
	r.calls = xcalloc(json_array_size(calls) + 1, sizeof(*r.calls));
	json_array_foreach(calls, i, c) {
		struct lev_tool_call *tc = &r.calls[r.n_calls++];
		const json_t *args = json_object_get(c, "args");

		tc->id = xstrdup(str_or_null(c, "id") ? str_or_null(c, "id") : "");
		tc->name = xstrdup(str_or_null(c, "name") ? str_or_null(c, "name") : "");
		tc->raw_arguments = xstrdup(str_or_null(c, "raw") ? str_or_null(c, "raw") : "");
		tc->arguments = json_is_object(args) ? json_deep_copy(args) : NULL;
		tc->parse_error = dup_or_null(str_or_null(c, "parse_error"));
		if (!tc->arguments && !tc->parse_error)
			tc->parse_error = xstrdup("the arguments are not a JSON object");
	}
	if (json_is_integer(json_object_get(turn, "prompt_tokens"))) {
		r.has_prompt_tokens = true;
		r.prompt_tokens = (uint64_t)json_integer_value(json_object_get(turn, "prompt_tokens"));
	}
	if (json_is_integer(json_object_get(turn, "completion_tokens"))) {
		r.has_completion_tokens = true;
		r.completion_tokens =
			(uint64_t)json_integer_value(json_object_get(turn, "completion_tokens"));
	}
	r.cached_tokens = count_of(turn, "cached_tokens");
	r.cache_write_tokens = count_of(turn, "cache_write_tokens");
	*out = r;
	return true;
}

int lev_replay_next_turn(struct lev_replay *rp, const char *stage,
			 struct lev_infer_response *out)
{
	const json_t *t;

	rp->in_turn = false;
	if (rp->next_turn >= json_array_size(rp->turns))
		return 0;
	t = json_array_get(rp->turns, rp->next_turn);
	if (json_is_true(json_object_get(t, "cut")) ||
	    !lev_streq(str_or_null(t, "stage"), stage) || !response_of(t, out)) {
		lev_replay_end(rp);
		return 0;
	}
	rp->next_turn++;
	rp->played++;
	rp->in_turn = true;
	return 1;
}

bool lev_replay_in_turn(const struct lev_replay *rp)
{
	return rp && rp->in_turn;
}

void lev_replay_end(struct lev_replay *rp)
{
	rp->next_turn = json_array_size(rp->turns);
	rp->in_turn = false;
}

size_t lev_replay_turns_played(const struct lev_replay *rp)
{
	return rp ? rp->played : 0;
}

enum lev_replay_state lev_replay_call(struct lev_replay *rp, const char *call_id,
				      const char **result, bool *ok)
{
	*result = NULL;
	*ok = false;
	if (!rp || !rp->in_turn || !call_id)
		return LEV_REPLAY_LIVE;
	for (size_t i = rp->next_call; i < rp->n_calls; i++) {
		if (strcmp(rp->calls[i].id, call_id))
			continue;
		rp->next_call = i + 1;
		*result = rp->calls[i].result;
		*ok = rp->calls[i].ok;
		return rp->calls[i].state;
	}
	return LEV_REPLAY_LIVE;
}

const char *lev_replay_answer(const struct lev_replay *rp, const char *run, const char *call_id,
			      const char *kind, const char *digest)
{
	const char *found = NULL;

	if (!rp || !rp->in_turn || !run || !call_id || !kind || !digest)
		return NULL;
	/* the last answer given to that very call wins; one without a digest never does */
	for (size_t i = 0; i < rp->n_answers; i++) {
		const struct replay_answer *an = &rp->answers[i];

		if (lev_streq(an->run, run) && !strcmp(an->call_id, call_id) &&
		    !strcmp(an->kind, kind) && lev_streq(an->digest, digest))
			found = an->answer;
	}
	return found;
}
