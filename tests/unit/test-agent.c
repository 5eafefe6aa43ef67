/*
 * test-agent.c - the run loop through its library API: dispatch order and
 * gates, prompts and grants through the ask hook, stages, cancellation,
 * and the events the front end sees.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/run/agent.h"
#include "liblev/conf/blueprint.h"
#include "liblev/conf/config.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static char *scratch;

static void put(const char *dir, const char *name, const char *text)
{
	char *p = lev_path_join(dir, name);
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	free(p);
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/lev-test-agent.XXXXXX";
	char *work;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	scratch = xstrdup(tmpl);
	work = lev_path_join(scratch, "work");
	assert_int_equal(lev_mkdir_p(work, 0700, NULL), 0);
	put(work, "hello.txt", "hello\n");
	free(work);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	(void)lev_rm_rf(scratch, NULL);
	free(scratch);
	return 0;
}

/* What the hooks saw. */
struct seen {
	char **events;		/* event names */
	char **calls;		/* "tool decision gate" */
	enum lev_ask_answer answer;
	unsigned asked;
	volatile sig_atomic_t *cancel_on_call;
};

static void on_event(void *data, const json_t *ev, const char *line)
{
	struct seen *s = data;
	const char *name = json_string_value(json_object_get(ev, "event"));

	assert_non_null(line);
	s->events = lev_strv_push(s->events, name);
	if (!strcmp(name, "tool_call")) {
		char *c = xasprintf("%s %s %s", json_string_value(json_object_get(ev, "tool")),
				    json_string_value(json_object_get(ev, "decision")),
				    json_string_value(json_object_get(ev, "gate")));

		s->calls = lev_strv_push_take(s->calls, c);
		if (s->cancel_on_call)
			*s->cancel_on_call = 1;
	}
}

static enum lev_ask_answer on_ask(void *data, const struct lev_ask *q)
{
	struct seen *s = data;

	assert_non_null(q->prompt);
	s->asked++;
	return s->answer;
}

struct fixture {
	struct lev_blueprint *bp;
	struct lev_config cfg;
	struct lev_agent *agent;
	struct seen seen;
	char *work;
};

static void start(struct fixture *f, const char *blueprint, const char *turns, bool yolo,
		  volatile sig_atomic_t *cancel)
{
	struct lev_agent_opts o = { .cancel_fd = -1 };
	struct lev_err err = LEV_ERR_INIT;
	char *dir = lev_path_join(scratch, "agent");

	memset(f, 0, sizeof(*f));
	(void)lev_rm_rf(dir, NULL);
	assert_int_equal(lev_mkdir_p(dir, 0700, NULL), 0);
	put(dir, "agent.leviath", blueprint);
	put(dir, "turns.toml", turns);
	if (lev_blueprint_load(dir, &f->bp, &err) < 0)
		fail_msg("blueprint: %s", err.msg);
	free(dir);
	lev_config_init(&f->cfg);
	f->work = lev_path_join(scratch, "work");
	o.bp = f->bp;
	o.cfg = &f->cfg;
	o.workdir = f->work;
	o.home = scratch;
	o.yolo = yolo;
	o.cancel = cancel;
	o.hooks.event = on_event;
	o.hooks.ask = on_ask;
	o.hooks.data = &f->seen;
	if (lev_agent_new(&o, &f->agent, &err) < 0)
		fail_msg("agent: %s", err.msg);
}

static void stop(struct fixture *f)
{
	lev_agent_free(f->agent);
	lev_config_release(&f->cfg);
	lev_blueprint_free(f->bp);
	lev_strv_free(f->seen.events);
	lev_strv_free(f->seen.calls);
	free(f->work);
}

static const char basic_bp[] = "[agent]\nname = \"t\"\n"
			       "[stages.main]\n"
			       "model = { provider = \"script\", script = \"turns.toml\" }\n"
			       "available_tools = [\"read_file\", \"write_file\", \"shell\"]\n";

static void call_init(struct lev_tool_call *c, const char *name, const char *raw)
{
	memset(c, 0, sizeof(*c));
	c->id = xstrdup("c1");
	c->name = xstrdup(name);
	c->raw_arguments = xstrdup(raw);
	c->arguments = json_loads(raw, 0, NULL);
}

static void call_release(struct lev_tool_call *c)
{
	free(c->id);
	free(c->name);
	free(c->raw_arguments);
	json_decref(c->arguments);
}

/* Dispatch NAME(RAW) and check the decision; returns the output text (caller frees). */
static char *dispatch(struct fixture *f, const char *name, const char *raw, bool allowed,
		      const char *gate)
{
	struct lev_tool_call c;
	struct lev_tool_output out = { 0 };
	struct lev_call_decision dec = { 0 };
	char *text;

	call_init(&c, name, raw);
	assert_int_equal(lev_agent_dispatch(f->agent, &c, &out, &dec, NULL), 0);
	if (dec.allowed != allowed || strcmp(dec.gate, gate))
		fail_msg("%s %s: got %s at %s (%s)", name, raw, dec.allowed ? "allow" : "deny",
			 dec.gate, dec.reason ? dec.reason : "");
	text = out.text ? xstrdup(out.text) : xstrdup("");
	lev_call_decision_release(&dec);
	lev_tool_output_release(&out);
	call_release(&c);
	return text;
}

static void test_dispatch_order_and_gates(void **state)
{
	struct fixture f;
	char *t;

	(void)state;
	start(&f, basic_bp, "[[turn]]\ntext = \"x\"\n", false, NULL);
	t = dispatch(&f, "read_file", "{\"path\":\"hello.txt\"}", true, "permission");
	assert_string_equal(t, "hello\n");
	free(t);
	t = dispatch(&f, "list_dir", "{}", false, "offered");
	assert_non_null(strstr(t, "[unavailable]"));
	assert_non_null(strstr(t, "You may call: read_file, write_file, shell"));
	free(t);
	t = dispatch(&f, "read_file", "{\"path\":3}", false, "schema");
	assert_non_null(strstr(t, "must be a string"));
	free(t);
	t = dispatch(&f, "read_file", "{\"path\":\"../x\"}", false, "workdir");
	assert_non_null(strstr(t, "[error]"));
	free(t);
	/* a redirect out of the workdir is refused before anyone is asked */
	f.seen.answer = LEV_ANSWER_ONCE;
	t = dispatch(&f, "shell", "{\"command\":\"echo x > ../out.txt\"}", false, "redirect");
	assert_int_equal(f.seen.asked, 0);
	free(t);
	stop(&f);
}

static void test_ask_answers_and_grants(void **state)
{
	struct fixture f;
	char *t;

	(void)state;
	start(&f, basic_bp, "[[turn]]\ntext = \"x\"\n", false, NULL);
	/* nobody answers: deny */
	f.seen.answer = LEV_ANSWER_NONE;
	t = dispatch(&f, "write_file", "{\"path\":\"a.txt\",\"content\":\"a\"}", false,
		     "permission");
	assert_non_null(strstr(t, "nobody can answer"));
	free(t);
	/* the user says no */
	f.seen.answer = LEV_ANSWER_DENY;
	t = dispatch(&f, "write_file", "{\"path\":\"a.txt\",\"content\":\"a\"}", false,
		     "permission");
	assert_non_null(strstr(t, "User declined"));
	free(t);
	/* once: allowed, and asked again next time */
	f.seen.answer = LEV_ANSWER_ONCE;
	f.seen.asked = 0;
	free(dispatch(&f, "write_file", "{\"path\":\"a.txt\",\"content\":\"a\"}", true,
		      "permission"));
	free(dispatch(&f, "write_file", "{\"path\":\"b.txt\",\"content\":\"b\"}", true,
		      "permission"));
	assert_int_equal(f.seen.asked, 2);
	/* for the run: the next call is covered by the grant, no question */
	f.seen.answer = LEV_ANSWER_RUN;
	f.seen.asked = 0;
	free(dispatch(&f, "shell", "{\"command\":\"sort hello.txt\"}", true, "permission"));
	f.seen.answer = LEV_ANSWER_DENY;
	free(dispatch(&f, "shell", "{\"command\":\"sort hello.txt\"}", true, "permission"));
	assert_int_equal(f.seen.asked, 1);
	/* ... but not a chained command with another program */
	t = dispatch(&f, "shell", "{\"command\":\"sort hello.txt; rm hello.txt\"}", false,
		     "permission");
	assert_int_equal(f.seen.asked, 2);
	free(t);
	stop(&f);
}

static void test_yolo_allows_but_deny_holds(void **state)
{
	static const char bp[] = "[agent]\nname = \"t\"\n"
				 "[tool_permissions]\nwrite_file = \"deny\"\n"
				 "[stages.main]\n"
				 "model = { provider = \"script\", script = \"turns.toml\" }\n"
				 "available_tools = [\"write_file\", \"shell\"]\n";
	struct fixture f;

	(void)state;
	start(&f, bp, "[[turn]]\ntext = \"x\"\n", true, NULL);
	free(dispatch(&f, "shell", "{\"command\":\"sort hello.txt\"}", true, "permission"));
	free(dispatch(&f, "write_file", "{\"path\":\"a\",\"content\":\"a\"}", false, "permission"));
	/* a shell line that writes is held to write_file's deny */
	free(dispatch(&f, "shell", "{\"command\":\"sort hello.txt > sorted.txt\"}", false,
		      "permission"));
	stop(&f);
}

static void test_full_run_stages_and_events(void **state)
{
	static const char bp[] = "[agent]\nname = \"t\"\n"
				 "[stages.one]\n"
				 "model = { provider = \"script\", script = \"turns.toml\" }\n"
				 "available_tools = [\"read_file\"]\nnext = \"two\"\n"
				 "[stages.two]\nmode = \"output\"\n"
				 "model = { provider = \"script\", script = \"turns.toml\" }\n";
	static const char turns[] = "[[turn]]\n[[turn.call]]\ntool = \"read_file\"\n"
				    "args = { path = \"hello.txt\" }\n"
				    "[[turn]]\ntext = \"one done\"\n"
				    "[[turn]]\n[[turn.call]]\ntool = \"submit_output\"\n"
				    "args = { output = \"final\" }\n";
	struct fixture f;

	(void)state;
	start(&f, bp, turns, false, NULL);
	assert_int_equal(lev_agent_run(f.agent, NULL), 0);
	assert_int_equal(lev_agent_status(f.agent), LEV_RUN_COMPLETE);
	assert_string_equal(lev_agent_output(f.agent), "final");
	assert_null(lev_agent_error(f.agent));
	assert_null(lev_agent_run_id(f.agent));	/* no record asked for */
	assert_string_equal(f.seen.events[0], "run_started");
	assert_string_equal(f.seen.events[lev_strv_len(f.seen.events) - 1], "run_finished");
	assert_int_equal(lev_strv_len(f.seen.calls), 2);
	assert_string_equal(f.seen.calls[0], "read_file allow permission");
	assert_string_equal(f.seen.calls[1], "submit_output allow permission");
	stop(&f);
}

static void test_cancel_between_steps(void **state)
{
	static const char turns[] = "[[turn]]\n[[turn.call]]\ntool = \"read_file\"\n"
				    "args = { path = \"hello.txt\" }\n"
				    "[[turn.call]]\ntool = \"read_file\"\n"
				    "args = { path = \"hello.txt\" }\n"
				    "[[turn]]\ntext = \"never\"\n";
	volatile sig_atomic_t cancel = 0;
	struct fixture f;

	(void)state;
	start(&f, basic_bp, turns, false, &cancel);
	f.seen.cancel_on_call = &cancel;	/* "Ctrl-C" right after the first call */
	assert_int_equal(lev_agent_run(f.agent, NULL), 0);
	assert_int_equal(lev_agent_status(f.agent), LEV_RUN_CANCELLED);
	/* the second call was not run, but still got a result */
	assert_int_equal(lev_strv_len(f.seen.calls), 1);
	assert_true(lev_strv_contains(f.seen.events, "run_finished"));
	stop(&f);
}

static void test_max_iterations_fails_the_run(void **state)
{
	static const char bp[] = "[agent]\nname = \"t\"\n"
				 "[stages.main]\n"
				 "model = { provider = \"script\", script = \"turns.toml\" }\n"
				 "available_tools = [\"read_file\"]\nmax_iterations = 1\n";
	static const char turns[] = "[[turn]]\n[[turn.call]]\ntool = \"read_file\"\n"
				    "args = { path = \"hello.txt\" }\n"
				    "[[turn]]\ntext = \"late\"\n";
	struct fixture f;

	(void)state;
	start(&f, bp, turns, false, NULL);
	assert_int_equal(lev_agent_run(f.agent, NULL), 0);
	assert_int_equal(lev_agent_status(f.agent), LEV_RUN_ERROR);
	assert_non_null(strstr(lev_agent_error(f.agent), "max_iterations (1)"));
	stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dispatch_order_and_gates),
		cmocka_unit_test(test_ask_answers_and_grants),
		cmocka_unit_test(test_yolo_allows_but_deny_holds),
		cmocka_unit_test(test_full_run_stages_and_events),
		cmocka_unit_test(test_cancel_between_steps),
		cmocka_unit_test(test_max_iterations_fails_the_run),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
