/*
 * test-store.c - the daemon's SQLite state: a run's row round-trips, the
 * journal is written before and after a call, questions open and close,
 * and the file is WAL, 0600.
 */
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
#include <errno.h>
#include <sqlite3.h>

#include "liblev/base/buf.h"
#include "liblev/base/secrets.h"
#include "liblev/base/util.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/store.h"
#include "liblev/daemon/summary.h"

static char dir[] = "/tmp/lev-test-store.XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return lev_rm_rf(dir, NULL);
}

static const char *const final[] = { "complete", "error", "cancelled", NULL };

static void test_runs_and_journal(void **state)
{
	char *path = lev_path_join(dir, "lev.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;
	json_t *run, *all = NULL, *args;
	struct stat sb;
	long n = -1;

	(void)state;
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	run = json_pack("{s:s, s:s, s:s, s:i, s:{s:i, s:i}, s:f}", "id", "r1", "agent", "a",
			"status", "active", "tools", 3, "read_paths", "granted", 1, "declared", 2,
			"created", 1.0);
	assert_int_equal(lev_store_run_put(st, run, &err), 0);
	json_object_set_new(run, "status", json_string("complete"));
	assert_int_equal(lev_store_run_put(st, run, &err), 0);
	args = json_pack("{s:s}", "command", "make");
	assert_int_equal(lev_store_journal_call(st, "r1", 1, "c1", "shell", args, true, &err), 0);
	assert_int_equal(lev_store_journal_call(st, "r1", 2, "c2", "shell", args, false, &err), 0);
	assert_int_equal(lev_store_journal_count(st, "r1", "dispatched", &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(lev_store_journal_result(st, "r1", 1, true, "ok", &err), 0);
	assert_int_equal(lev_store_journal_count(st, "r1", "done", &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(lev_store_journal_count(st, "r1", "denied", &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(lev_store_question_put(st, "q1", "r1", args, &err), 0);
	assert_int_equal(lev_store_question_close(st, "q1", "once", &err), 0);
	st = lev_store_close(st);

	/* what was committed is there for the next daemon */
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	assert_int_equal(lev_store_runs_load(st, final, 0, &all, &err), 0);
	assert_int_equal(json_array_size(all), 1);
	assert_true(json_equal(json_array_get(all, 0), run));
	st = lev_store_close(st);
	json_decref(all);
	json_decref(args);
	json_decref(run);
	free(path);
}

static int each_id(void *data, const char *id, const char *doc, size_t len)
{
	struct lev_buf *b = data;

	assert_int_equal(strlen(doc), len);
	assert_non_null(strstr(doc, id));
	(void)lev_buf_addf(b, "%s ", id);
	return 0;
}

/*
 * A starting daemon loads the runs going and the recently written ones;
 * the rest it reads when asked: one by id, or all that finished, in order.
 */
static void test_runs_loaded_and_read_back(void **state)
{
	char *path = lev_path_join(dir, "runs.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_buf b = LEV_BUF_INIT;
	json_t *all = NULL, *doc = NULL;
	static const struct {
		const char *id, *status;
		double created, updated;
	} rows[] = {
		{ "old-done", "complete", 1, 10 },	/* finished long ago */
		{ "old-going", "active", 2, 10 },	/* going, not written lately */
		{ "new-failed", "error", 3, 100 },	/* finished lately */
		{ "old-cancelled", "cancelled", 4, 20 },
		{ "paused", "paused", 5, 30 },
	};

	(void)state;
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *r = json_pack("{s:s, s:s, s:f, s:f}", "id", rows[i].id, "status",
				      rows[i].status, "created", rows[i].created, "updated",
				      rows[i].updated);

		assert_int_equal(lev_store_run_put(st, r, &err), 0);
		json_decref(r);
	}
	assert_int_equal(lev_store_commit(st, &err), 0);
	assert_int_equal(lev_store_runs_load(st, final, 50, &all, &err), 0);
	assert_int_equal(json_array_size(all), 3);
	assert_string_equal(lev_json_str(json_array_get(all, 0), "id"), "old-going");
	assert_string_equal(lev_json_str(json_array_get(all, 1), "id"), "new-failed");
	assert_string_equal(lev_json_str(json_array_get(all, 2), "id"), "paused");
	json_decref(all);
	/* the benign twin: with no cut-off every run is loaded */
	assert_int_equal(lev_store_runs_load(st, final, 0, &all, &err), 0);
	assert_int_equal(json_array_size(all), 5);
	json_decref(all);

	assert_int_equal(lev_store_run_get(st, "old-done", &doc, &err), 0);
	assert_string_equal(lev_json_str(doc, "status"), "complete");
	json_decref(doc);
	assert_int_equal(lev_store_run_get(st, "no-such-run", &doc, &err), 1);

	assert_int_equal(lev_store_runs_each(st, final, each_id, &b, &err), 0);
	assert_string_equal(b.buf, "old-done new-failed old-cancelled ");
	lev_buf_release(&b);
	st = lev_store_close(st);
	free(path);
}

/* Every status a run's doc can hold: a page over these lists every run. */
static const char *const statuses[] = { "idle",	     "active",	 "paused", "waiting: input",
					"complete", "error",	 "cancelled", NULL };

/* Each run of a page, its summary checked against one made now from its doc in lev.db. */
static int same_summary(void *data, const char *id, const char *text, size_t len)
{
	struct lev_store *st = data;
	struct lev_err err = LEV_ERR_INIT;
	json_t *doc = NULL;
	char *fresh;

	assert_int_equal(strlen(text), len);
	assert_int_equal(lev_store_run_get(st, id, &doc, &err), 0);
	fresh = lev_run_summary(doc);
	if (strcmp(fresh, text))
		fail_msg("run %s: stored summary %s, fresh %s", id, text, fresh);
	free(fresh);
	json_decref(doc);
	return 0;
}

/* Page through every run of ST (FN on each, DATA st): how many. */
static size_t page_all(struct lev_store *st,
		       int (*fn)(void *data, const char *id, const char *text, size_t len))
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_buf ids = LEV_BUF_INIT;
	size_t n = 0;

	assert_int_equal(lev_store_runs_page(st, statuses, NULL, 1000, fn, st, &err), 0);
	assert_int_equal(lev_store_runs_page(st, statuses, NULL, 1000, each_id, &ids, &err), 0);
	for (const char *p = ids.buf; p && *p; p++)
		n += *p == ' ';
	lev_buf_release(&ids);
	return n;
}

/* The number SQL (a count) answers in the database at PATH. */
static long count_rows(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	long n = -1;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = (long)sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

/* A random error for a run's doc: none, short, or past what ps shows, a UTF-8 letter across the cut. */
static json_t *random_error(unsigned *seed)
{
	struct lev_buf b = LEV_BUF_INIT;
	json_t *e;

	switch (rand_r(seed) % 3) {
	case 0:
		return NULL;
	case 1:
		return json_string("boom");
	}
	for (int i = rand_r(seed) % 3; i > 0; i--)
		(void)lev_buf_addch(&b, 'x');
	while (b.len < LEV_SUMMARY_ERROR_MAX + 40)
		(void)lev_buf_adds(&b, "\xc3\xa9");	/* é */
	e = json_string(b.buf);
	lev_buf_release(&b);
	return e;
}

/*
 * Property: after any sequence of writes (random status changes, errors,
 * results, counts, times), the summary lev.db keeps for each run equals
 * one made afresh from its stored doc.  A write path that forgot the
 * summary, or kept an older one, fails here.
 */
static void test_summaries_follow_every_write(void **state)
{
	char *path = lev_path_join(dir, "summary.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;
	unsigned seed = 3003;
	enum { RUNS = 40, WRITES = 1500 };

	(void)state;
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	for (int i = 0; i < WRITES; i++) {
		int k = i < RUNS ? i : rand_r(&seed) % RUNS;
		json_t *e = random_error(&seed);
		json_t *doc = json_pack("{s:s, s:s, s:s, s:i, s:f, s:f, s:s}", "id", "", "status",
					statuses[rand_r(&seed) % 7], "task", "fix it\nnow", "tools",
					rand_r(&seed) % 50, "created", (double)k,
					"updated", (double)i, "agent", "a");

		json_object_set_new(doc, "id", json_sprintf("run-%03d", k));
		if (e)
			json_object_set_new(doc, "error", e);
		if (rand_r(&seed) % 2)
			json_object_set_new(doc, "result", json_string("the whole output"));
		assert_int_equal(lev_store_run_put(st, doc, &err), 0);
		json_decref(doc);
		if (i % 97 == 0)
			assert_int_equal(lev_store_commit(st, &err), 0);
	}
	assert_int_equal(page_all(st, same_summary), RUNS);
	st = lev_store_close(st);
	/* every row holds its own (a page would make a missing one afresh) */
	assert_int_equal(count_rows(path, "SELECT count(*) FROM runs WHERE summary IS NULL"), 0);
	/* and across a restart, what was committed */
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	assert_int_equal(page_all(st, same_summary), RUNS);
	st = lev_store_close(st);
	free(path);
}

/* What holds_needle() looks for in a page's summaries (DATA: a bool set when one holds it). */
static const char *needle;

static int holds_needle(void *data, const char *id, const char *text, size_t len)
{
	(void)id;
	if (memmem(text, len, needle, strlen(needle)))
		*(bool *)data = true;
	return 0;
}

/*
 * A secret in a run's error (straddling the cut at LEV_SUMMARY_ERROR_MAX)
 * and in its title reaches neither lev.db's summary nor one made in
 * memory: the summary is redacted before the error is cut.  The benign
 * twin: the same text without the secret is kept, up to the cut.
 */
static void test_summary_holds_no_secret(void **state)
{
	static const char secret[] = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
	char *path = lev_path_join(dir, "secret.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;
	char pad[LEV_SUMMARY_ERROR_MAX - 10 + 1], *text;
	bool seen = false;
	json_t *doc;

	(void)state;
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = 0;
	lev_secrets_add(secret);
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	doc = json_pack("{s:s, s:s, s:s, s:f, s:f, s:s}", "id", "run-s", "status", "error",
			"agent", "a", "created", 1.0, "updated", 2.0, "task", secret);
	json_object_set_new(doc, "error", json_sprintf("%s%s then more", pad, secret));
	assert_int_equal(lev_store_run_put(st, doc, &err), 0);
	text = lev_run_summary(doc);
	assert_non_null(text);
	assert_null(strstr(text, "sk-test-9f8e"));	/* nor the part before the cut */
	free(text);
	needle = "sk-test-9f8e";
	assert_int_equal(lev_store_runs_page(st, statuses, NULL, 1000, holds_needle, &seen, &err), 0);
	assert_false(seen);
	/* the twin: ordinary text stays, cut where it was */
	json_object_set_new(doc, "error", json_sprintf("%sordinary-words then more", pad));
	json_object_set_new(doc, "task", json_string("ordinary-words"));
	assert_int_equal(lev_store_run_put(st, doc, &err), 0);
	needle = "ordinary-w";
	assert_int_equal(lev_store_runs_page(st, statuses, NULL, 1000, holds_needle, &seen, &err), 0);
	assert_true(seen);
	json_decref(doc);
	st = lev_store_close(st);
	lev_secrets_wipe();
	free(path);
}

/*
 * A lev.db from before summaries were kept: it gets the column, and a
 * page makes each missing summary from the doc (the same text).  The
 * benign twin of the property above: rows whose summary is absent.
 */
static void test_summaries_of_an_old_db(void **state)
{
	char *path = lev_path_join(dir, "old-runs.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;
	sqlite3 *db = NULL;

	(void)state;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
				      "CREATE TABLE runs (id TEXT PRIMARY KEY, agent TEXT, status TEXT,"
				      " stage TEXT, iteration INTEGER, tools INTEGER, reads_granted "
				      "INTEGER, reads_declared INTEGER, created REAL, updated REAL, "
				      "doc TEXT NOT NULL);"
				      "INSERT INTO runs (id, status, doc) VALUES ('old', 'complete',"
				      " '{\"id\":\"old\",\"status\":\"complete\",\"result\":\"r\"}');",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	assert_int_equal(page_all(st, same_summary), 1);
	st = lev_store_close(st);
	free(path);
}

static void test_refuses_a_symlink(void **state)
{
	char *path = lev_path_join(dir, "link.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(symlink("/tmp/elsewhere.db", path), 0);
	assert_true(lev_store_open(path, &st, &err) < 0);
	assert_null(st);
	assert_non_null(strstr(err.msg, "cannot open"));
	free(path);
}

/* A run's replay log: its turns, its calls in order (a repeated id apart), its answers. */
static void test_replay_log(void **state)
{
	char *path = lev_path_join(dir, "replay.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;
	json_t *log = NULL, *t1 = json_pack("{s:s, s:s}", "stage", "main", "text", "one"),
	       *t2 = json_pack("{s:s, s:s}", "stage", "main", "text", "two"),
	       *q = json_pack("{s:s, s:s, s:s, s:s}", "call_id", "c1", "kind", "permission", "run",
			      "r1", "digest", "d1"),
	       *req = NULL,
	       *calls;

	(void)state;
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	assert_int_equal(lev_store_turn_put(st, "r1", 1, 0, t1, &err), 0);
	assert_int_equal(lev_store_turn_put(st, "r1", 2, 0, t1, &err), 0);
	assert_int_equal(lev_store_turn_put(st, "r1", 3, 0, t1, &err), 0);
	assert_int_equal(lev_store_journal_call(st, "r1", 1, "c1", "shell", NULL, true, &err), 0);
	assert_int_equal(lev_store_journal_call(st, "r1", 2, "old", "shell", NULL, true, &err), 0);
	/* a turn taken live at 2 after 1 call drops what the log held from there on */
	assert_int_equal(lev_store_turn_put(st, "r1", 2, 1, t2, &err), 0);
	assert_int_equal(lev_store_journal_result(st, "r1", 1, true, "hi", &err), 0);
	assert_int_equal(lev_store_journal_call(st, "r1", 2, "c1", "shell", NULL, false, &err), 0);
	assert_int_equal(lev_store_journal_result(st, "r1", 2, false, "[denied] no", &err), 0);
	assert_int_equal(lev_store_journal_call(st, "r1", 3, "c3", "shell", NULL, true, &err), 0);
	assert_int_equal(lev_store_question_put(st, "q1", "r1", q, &err), 0);
	assert_int_equal(lev_store_question_close(st, "q1", "run", &err), 0);
	assert_int_equal(lev_store_question_put(st, "q2", "r1", q, &err), 0);
	assert_int_equal(lev_store_replay_load(st, "r1", &log, &err), 0);
	assert_int_equal(json_array_size(json_object_get(log, "turns")), 2);
	assert_true(json_equal(json_array_get(json_object_get(log, "turns"), 1), t2));
	calls = json_object_get(log, "calls");
	assert_int_equal(json_array_size(calls), 3);
	assert_string_equal(lev_json_str(json_array_get(calls, 0), "state"), "done");
	assert_string_equal(lev_json_str(json_array_get(calls, 0), "result"), "hi");
	/* a refusal keeps its state, with its text */
	assert_string_equal(lev_json_str(json_array_get(calls, 1), "state"), "denied");
	assert_string_equal(lev_json_str(json_array_get(calls, 1), "result"), "[denied] no");
	assert_string_equal(lev_json_str(json_array_get(calls, 2), "state"), "dispatched");
	/* the open question is not an answer */
	assert_int_equal(json_array_size(json_object_get(log, "answers")), 1);
	assert_string_equal(lev_json_str(json_array_get(json_object_get(log, "answers"), 0),
					 "answer"), "run");
	/* what binds the answer comes with it: its run and the digest of the call shown */
	assert_string_equal(lev_json_str(json_array_get(json_object_get(log, "answers"), 0),
					 "run"), "r1");
	assert_string_equal(lev_json_str(json_array_get(json_object_get(log, "answers"), 0),
					 "digest"), "d1");
	json_decref(log);
	{
		unsigned long last = 0;

		/* a new daemon numbers its questions after the highest "qN" ever kept */
		assert_int_equal(lev_store_question_last(st, &last, &err), 0);
		assert_int_equal(last, 2);
		assert_int_equal(lev_store_question_put(st, "q12", "r2", q, &err), 0);
		assert_int_equal(lev_store_question_put(st, "q99x", "r2", q, &err), 0);
		assert_int_equal(lev_store_question_last(st, &last, &err), 0);
		assert_int_equal(last, 12);
	}

	/* the request is kept while the run goes on */
	assert_true(lev_store_request_get(st, "r1", &req, &err) == -ENOENT);
	assert_int_equal(lev_store_request_put(st, "r1", q, &err), 0);
	assert_int_equal(lev_store_request_get(st, "r1", &req, &err), 0);
	assert_true(json_equal(req, q));
	json_decref(req);
	assert_int_equal(lev_store_request_drop(st, "r1", &err), 0);
	assert_true(lev_store_request_get(st, "r1", &req, &err) == -ENOENT);
	lev_store_close(st);
	json_decref(t1);
	json_decref(t2);
	json_decref(q);
	free(path);
}

/* A database of the first daemon (journal keyed by call id) is moved over on open. */
static void test_migrates_an_old_journal(void **state)
{
	char *path = lev_path_join(dir, "old.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;
	sqlite3 *db = NULL;
	json_t *log = NULL, *calls;

	(void)state;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
		"CREATE TABLE journal (run TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT,"
		" args TEXT, state TEXT NOT NULL, started REAL, finished REAL, ok INTEGER,"
		" result TEXT, PRIMARY KEY (run, call_id));"
		"INSERT INTO journal VALUES ('r1', 'b', 'shell', NULL, 'done', 1, 2, 1, 'first');"
		"INSERT INTO journal VALUES ('r2', 'x', 'shell', NULL, 'dispatched', 1, NULL, NULL,"
		" NULL);"
		"INSERT INTO journal VALUES ('r1', 'a', 'shell', NULL, 'done', 3, 4, 1, 'second');",
		NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	assert_int_equal(lev_store_replay_load(st, "r1", &log, &err), 0);
	calls = json_object_get(log, "calls");
	assert_int_equal(json_array_size(calls), 2);
	assert_string_equal(lev_json_str(json_array_get(calls, 0), "id"), "b");
	assert_string_equal(lev_json_str(json_array_get(calls, 1), "id"), "a");
	json_decref(log);
	/* the next call of r1 comes after them */
	assert_int_equal(lev_store_journal_call(st, "r1", 3, "a", "shell", NULL, true, &err), 0);
	assert_int_equal(lev_store_replay_load(st, "r1", &log, &err), 0);
	assert_int_equal(json_array_size(json_object_get(log, "calls")), 3);
	json_decref(log);
	lev_store_close(st);
	/* opening it again changes nothing */
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	lev_store_close(st);
	free(path);
}

/*
 * The statements kept prepared (store.c cached()): 2,000 random puts, gets
 * and drops of requests, policies and runs, against a model of what the
 * store holds, with a second connection checkpointing the WAL between
 * them (which a statement left mid-read would hold back).  It would catch
 * a kept statement never reset (a read that sees an old snapshot, a
 * checkpoint blocked), bindings carried over from the use before, two
 * texts sharing one statement.
 */
static void test_kept_statements_answer_as_fresh_ones(void **state)
{
	char *path = lev_path_join(dir, "kept.db");
	struct lev_store *st = NULL;
	struct lev_err err = LEV_ERR_INIT;
	json_t *model_req = json_object(), *model_pol = json_object(), *got;
	sqlite3 *other = NULL;
	unsigned seed = 31;

	(void)state;
	assert_int_equal(lev_store_open(path, &st, &err), 0);
	assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
	for (int i = 0; i < 2000; i++) {
		char id[16];
		unsigned op = (unsigned)rand_r(&seed) % 6;
		json_t *v = json_pack("{s:i, s:s}", "n", i, "what", op % 2 ? "policy" : "request");

		snprintf(id, sizeof(id), "r%d", rand_r(&seed) % 20);
		if (op == 0) {
			assert_int_equal(lev_store_request_put(st, id, v, &err), 0);
			json_object_set(model_req, id, v);
		} else if (op == 1) {
			assert_int_equal(lev_store_policy_put(st, id, v, &err), 0);
			json_object_set(model_pol, id, v);
		} else if (op == 2) {
			assert_int_equal(lev_store_request_drop(st, id, &err), 0);
			json_object_del(model_req, id);
			json_object_del(model_pol, id);
		} else if (op == 3) {
			int r = lev_store_request_get(st, id, &got, &err);

			if (json_object_get(model_req, id)) {
				assert_int_equal(r, 0);
				assert_true(json_equal(got, json_object_get(model_req, id)));
				json_decref(got);
			} else {
				assert_int_equal(r, -ENOENT);
			}
		} else if (op == 4) {
			assert_int_equal(lev_store_policy_get(st, id, &got, &err), 0);
			assert_true(json_object_get(model_pol, id) ? json_equal(got,
				    json_object_get(model_pol, id)) : got == NULL);
			json_decref(got);
		} else {
			assert_int_equal(lev_store_run_get(st, id, &got, &err), 1);
			assert_int_equal(lev_store_commit(st, &err), 0);
			assert_int_equal(sqlite3_wal_checkpoint_v2(other, NULL,
								   SQLITE_CHECKPOINT_TRUNCATE,
								   NULL, NULL), SQLITE_OK);
		}
		json_decref(v);
	}
	sqlite3_close(other);
	lev_store_close(st);
	json_decref(model_req);
	json_decref(model_pol);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_and_journal),
		cmocka_unit_test(test_runs_loaded_and_read_back),
		cmocka_unit_test(test_refuses_a_symlink),
		cmocka_unit_test(test_summaries_follow_every_write),
		cmocka_unit_test(test_summaries_of_an_old_db),
		cmocka_unit_test(test_summary_holds_no_secret),
		cmocka_unit_test(test_replay_log),
		cmocka_unit_test(test_migrates_an_old_journal),
		cmocka_unit_test(test_kept_statements_answer_as_fresh_ones),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
