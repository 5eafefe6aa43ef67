/*
 * test-gatechain.c - the one gate chain: a refusal from any gate beats an
 * ask, the asks are gathered, an allowed call names the gate that approved
 * it, read_files is refused as a whole, file tools keep the fds the path
 * gate opened, and the vocabulary tables are complete.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
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

#include "liblev/run/gatechain.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

struct fx {
	char dir[64];
	char *work;
	struct lev_tools *tools;
	struct lev_fs_ctx *fs;
	struct lev_perm_input perm;
	char **offered;
	struct lev_gatechain_env env;
};

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	struct lev_fs_opts fo = { 0 };
	char *p;

	strcpy(f->dir, "/tmp/lev-test-gatechain.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->work = xasprintf("%s/work", f->dir);
	assert_int_equal(mkdir(f->work, 0700), 0);
	p = xasprintf("%s/a.txt", f->work);
	put(p, "a\n");
	free(p);
	p = xasprintf("%s/outside.txt", f->dir);
	put(p, "secret\n");
	free(p);
	assert_int_equal(lev_tools_new(&f->tools, NULL), 0);
	fo.workdir = f->work;
	fo.home = f->dir;
	assert_int_equal(lev_fs_ctx_new(&fo, &f->fs, NULL), 0);
	f->offered = lev_strv_push(f->offered, "read_file");
	f->offered = lev_strv_push(f->offered, "read_files");
	f->offered = lev_strv_push(f->offered, "write_file");
	f->offered = lev_strv_push(f->offered, "shell");
	f->offered = lev_strv_push(f->offered, "web_fetch");
	f->env.tools = f->tools;
	f->env.stage = "main";
	f->env.offered = f->offered;
	f->env.offered_list = "read_file, read_files, write_file, shell, web_fetch";
	f->env.perm = &f->perm;	/* built-in defaults only */
	f->env.fs = f->fs;
	f->env.home = f->dir;
	f->env.kind = LEV_SANDBOX_NAMESPACE;
	f->env.network = false;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	lev_fs_ctx_free(f->fs);
	lev_tools_free(f->tools);
	lev_strv_free(f->offered);
	(void)lev_rm_rf(f->dir, NULL);
	free(f->work);
	free(f);
	return 0;
}

static void decide(struct fx *f, const char *tool, const char *args,
		   struct lev_gatechain_decision *d)
{
	json_t *j = json_loads(args, 0, NULL);
	struct lev_gatechain_call c = { .name = tool, .args = j };

	assert_non_null(j);
	assert_int_equal(lev_gatechain_decide(&f->env, &c, d, NULL), 0);
	json_decref(j);
}

/* write_file asks by default; a path outside the workdir refuses: the refusal wins */
static void test_refusal_beats_ask(void **state)
{
	struct fx *f = *state;
	struct lev_gatechain_decision d;

	decide(f, "write_file", "{\"path\":\"../x.txt\",\"content\":\"x\"}", &d);
	assert_int_equal(d.verdict, LEV_DENY);
	assert_int_equal(d.gate, LEV_GATE_WORKDIR);
	assert_true(d.steps[LEV_GATE_PERMISSION].ran);
	assert_int_equal(d.steps[LEV_GATE_PERMISSION].verdict, LEV_ASK);
	assert_non_null(strstr(d.text, "[error]"));
	assert_null(d.fs);	/* nothing of a refused call stays open */
	lev_gatechain_decision_release(&d);

	/* the benign twin: inside the workdir it asks, and keeps the opened directory */
	decide(f, "write_file", "{\"path\":\"new.txt\",\"content\":\"x\"}", &d);
	assert_int_equal(d.verdict, LEV_ASK);
	assert_int_equal(d.gate, LEV_GATE_PERMISSION);
	assert_true(d.ask_permission);
	assert_non_null(d.fs);
	assert_non_null(strstr(d.text, "nobody can answer"));
	lev_gatechain_decision_release(&d);

	/* a network tool in a stage without network: refused, never asked */
	decide(f, "web_fetch", "{\"url\":\"https://example.com/\"}", &d);
	assert_int_equal(d.verdict, LEV_DENY);
	assert_int_equal(d.gate, LEV_GATE_NETWORK);
	lev_gatechain_decision_release(&d);
}

static void test_allowed_names_the_gate(void **state)
{
	struct fx *f = *state;
	struct lev_gatechain_decision d;

	decide(f, "read_file", "{\"path\":\"a.txt\"}", &d);
	assert_int_equal(d.verdict, LEV_ALLOW);
	assert_int_equal(d.gate, LEV_GATE_PERMISSION);
	assert_non_null(strstr(d.rule, "built-in default read_file"));
	assert_false(lev_fs_targets_outside(d.fs));
	lev_gatechain_decision_release(&d);

	decide(f, "bash", "{\"command\":\"echo x > ../y\"}", &d);
	assert_int_equal(d.verdict, LEV_DENY);
	assert_int_equal(d.gate, LEV_GATE_REDIRECT);
	assert_string_equal(d.canon, "shell");
	lev_gatechain_decision_release(&d);

	decide(f, "nope", "{}", &d);
	assert_int_equal(d.verdict, LEV_DENY);
	assert_int_equal(d.gate, LEV_GATE_OFFERED);
	assert_string_equal(d.rule, lev_gate_reason_name(LEV_REASON_UNKNOWN_TOOL));
	lev_gatechain_decision_release(&d);
}

/*
 * A sub-agent's call meets each ancestor's permission input too: the
 * strictest verdict wins, named as the parent's; an ancestor that allows
 * changes nothing (the benign twin).
 */
static void test_ancestor_ceiling(void **state)
{
	struct fx *f = *state;
	static const struct lev_perm_rule deny_read = { "read_file", LEV_DENY, "[tool_permissions]" };
	static const struct lev_perm_rule ask_read = { "read_file", LEV_ASK, "[tool_permissions]" };
	struct lev_perm_input parent = { .user_global = &deny_read, .n_user_global = 1 };
	struct lev_perm_input asker = { .user_global = &ask_read, .n_user_global = 1 };
	struct lev_perm_input open = { 0 };
	const struct lev_perm_input *chain[3] = { &open, &parent, NULL };
	struct lev_gatechain_decision d;

	/* the grandparent denies: denied, whatever the child and its parent say */
	f->env.ceilings = chain;
	decide(f, "read_file", "{\"path\":\"a.txt\"}", &d);
	assert_int_equal(d.verdict, LEV_DENY);
	assert_int_equal(d.gate, LEV_GATE_PERMISSION);
	assert_non_null(strstr(d.rule, "the parent run's"));
	lev_gatechain_decision_release(&d);

	/* the parent asks where the child would allow: it asks */
	chain[1] = &asker;
	decide(f, "read_file", "{\"path\":\"a.txt\"}", &d);
	assert_int_equal(d.verdict, LEV_ASK);
	assert_true(d.ask_permission);
	lev_gatechain_decision_release(&d);

	/* ancestors that allow: the child's own verdict stands */
	chain[1] = NULL;
	decide(f, "read_file", "{\"path\":\"a.txt\"}", &d);
	assert_int_equal(d.verdict, LEV_ALLOW);
	assert_null(strstr(d.rule, "parent"));
	lev_gatechain_decision_release(&d);
	f->env.ceilings = NULL;
}

static void test_read_files_refused_as_a_whole(void **state)
{
	struct fx *f = *state;
	struct lev_gatechain_decision d;

	decide(f, "read_files", "{\"paths\":[\"a.txt\",\"../outside.txt\"]}", &d);
	assert_int_equal(d.verdict, LEV_DENY);
	assert_int_equal(d.gate, LEV_GATE_WORKDIR);
	lev_gatechain_decision_release(&d);
	/* a path that only fails (missing) is not a refusal */
	decide(f, "read_files", "{\"paths\":[\"a.txt\",\"missing.txt\"]}", &d);
	assert_int_equal(d.verdict, LEV_ALLOW);
	lev_gatechain_decision_release(&d);
}

/* The tool reads the fd the gate opened, even when the path changes after the decision. */
static void test_tool_reads_the_decided_fd(void **state)
{
	struct fx *f = *state;
	struct lev_gatechain_decision d;
	struct lev_fs_result r = { 0 };
	json_t *args = json_pack("{s:s}", "path", "a.txt");
	char *a = xasprintf("%s/a.txt", f->work), *b = xasprintf("%s/b.txt", f->work);

	decide(f, "read_file", "{\"path\":\"a.txt\"}", &d);
	assert_int_equal(d.verdict, LEV_ALLOW);
	put(b, "replaced\n");
	assert_int_equal(rename(b, a), 0);	/* a.txt now names another file */
	lev_fs_run(f->fs, "read_file", args, d.fs, &r);
	assert_false(r.is_error);
	assert_string_equal(r.text, "a\n");
	lev_fs_result_release(&r);
	lev_gatechain_decision_release(&d);
	json_decref(args);
	free(a);
	free(b);
}

static void test_vocabulary(void **state)
{
	(void)state;
	for (int g = 0; g < _LEV_GATE_ID_MAX; g++)
		assert_non_null(lev_gate_id_name(g));
	for (int r = 0; r < _LEV_REASON_MAX; r++)
		assert_true(strcmp(lev_gate_reason_name(r), "?") != 0);
	assert_string_equal(lev_gate_id_name(LEV_GATE_READ_PATHS), "read_paths");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refusal_beats_ask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_allowed_names_the_gate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ancestor_ceiling, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_files_refused_as_a_whole, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tool_reads_the_decided_fd, setup, teardown),
		cmocka_unit_test(test_vocabulary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
