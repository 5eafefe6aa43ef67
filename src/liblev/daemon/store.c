/*
 * store.c - the daemon's SQLite state (see store.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/store.h"

struct lev_store {
	sqlite3 *db;
	sqlite3_stmt *run_put;
	sqlite3_stmt *j_call;
	sqlite3_stmt *j_result;
	sqlite3_stmt *q_put;
	sqlite3_stmt *q_close;
	sqlite3_stmt *tx_begin;
	sqlite3_stmt *tx_commit;
	bool in_tx;		/* a write is waiting for lev_store_commit() */
};

static const char schema[] =
	"PRAGMA journal_mode = WAL;"
	"PRAGMA synchronous = NORMAL;"
	"PRAGMA busy_timeout = 5000;"
	"CREATE TABLE IF NOT EXISTS runs ("
	" id TEXT PRIMARY KEY, agent TEXT, status TEXT, stage TEXT,"
	" iteration INTEGER, tools INTEGER, reads_granted INTEGER, reads_declared INTEGER,"
	" created REAL, updated REAL, doc TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS questions ("
	" id TEXT PRIMARY KEY, run TEXT NOT NULL, body TEXT NOT NULL,"
	" created REAL, answered REAL, answer TEXT);"
	"CREATE TABLE IF NOT EXISTS journal ("
	" run TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT, args TEXT, state TEXT NOT NULL,"
	" started REAL, finished REAL, ok INTEGER, result TEXT,"
	" PRIMARY KEY (run, call_id));";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int db_fail(struct lev_store *st, struct lev_err *err, const char *what)
{
	return lev_err_set(err, -EIO, "the daemon's database: %s: %s", what,
			   sqlite3_errmsg(st->db));
}

static int prep(struct lev_store *st, const char *sql, sqlite3_stmt **out, struct lev_err *err)
{
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, out, NULL) != SQLITE_OK)
		return db_fail(st, err, "cannot prepare a statement");
	return 0;
}

int lev_store_open(const char *path, struct lev_store **out, struct lev_err *err)
{
	struct lev_store *st = xcalloc(1, sizeof(*st));
	char *msg = NULL;
	int fd;

	/* create it 0600 before SQLite does, whatever the umask */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, LEV_FILE_MODE);
	if (fd < 0) {
		free(st);
		return lev_err_errno(err, -errno, "cannot open '%s'", path);
	}
	close(fd);
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) !=
	    SQLITE_OK) {
		lev_err_set(err, -EIO, "cannot open '%s': %s", path,
			    st->db ? sqlite3_errmsg(st->db) : "out of memory");
		lev_store_close(st);
		return -EIO;
	}
	if (sqlite3_exec(st->db, schema, NULL, NULL, &msg) != SQLITE_OK) {
		lev_err_set(err, -EIO, "cannot set up '%s': %s", path, msg ? msg : "?");
		sqlite3_free(msg);
		lev_store_close(st);
		return -EIO;
	}
	if (prep(st,
		 "INSERT OR REPLACE INTO runs (id, agent, status, stage, iteration, tools,"
		 " reads_granted, reads_declared, created, updated, doc)"
		 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
		 &st->run_put, err) < 0 ||
	    prep(st,
		 "INSERT OR REPLACE INTO journal (run, call_id, tool, args, state, started)"
		 " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
		 &st->j_call, err) < 0 ||
	    prep(st,
		 "UPDATE journal SET state = 'done', finished = ?3, ok = ?4, result = ?5"
		 " WHERE run = ?1 AND call_id = ?2",
		 &st->j_result, err) < 0 ||
	    prep(st,
		 "INSERT OR REPLACE INTO questions (id, run, body, created) VALUES (?1, ?2, ?3, ?4)",
		 &st->q_put, err) < 0 ||
	    prep(st, "UPDATE questions SET answered = ?2, answer = ?3 WHERE id = ?1",
		 &st->q_close, err) < 0 ||
	    prep(st, "BEGIN", &st->tx_begin, err) < 0 || prep(st, "COMMIT", &st->tx_commit, err) < 0) {
		lev_store_close(st);
		return err ? err->code : -EIO;
	}
	*out = st;
	return 0;
}

struct lev_store *lev_store_close(struct lev_store *st)
{
	if (!st)
		return NULL;
	(void)lev_store_commit(st, NULL);
	sqlite3_finalize(st->tx_begin);
	sqlite3_finalize(st->tx_commit);
	sqlite3_finalize(st->run_put);
	sqlite3_finalize(st->j_call);
	sqlite3_finalize(st->j_result);
	sqlite3_finalize(st->q_put);
	sqlite3_finalize(st->q_close);
	sqlite3_close(st->db);
	free(st);
	return NULL;
}

static int step(struct lev_store *st, sqlite3_stmt *s, struct lev_err *err, const char *what)
{
	int r = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (r != SQLITE_DONE && r != SQLITE_ROW)
		return db_fail(st, err, what);
	return 0;
}

/*
 * Every write joins the open transaction, begun by the first one: a commit
 * is a write(2) to the WAL, tens of microseconds, so the daemon commits
 * once per turn of its loop (and before it lets a call run), not once per
 * row.
 */
static int tx(struct lev_store *st, struct lev_err *err)
{
	if (st->in_tx)
		return 0;
	if (step(st, st->tx_begin, err, "cannot begin a transaction") < 0)
		return err ? err->code : -EIO;
	st->in_tx = true;
	return 0;
}

int lev_store_commit(struct lev_store *st, struct lev_err *err)
{
	if (!st || !st->in_tx)
		return 0;
	if (step(st, st->tx_commit, err, "cannot commit") < 0)
		return err ? err->code : -EIO;
	st->in_tx = false;
	return 0;
}

bool lev_store_pending(const struct lev_store *st)
{
	return st && st->in_tx;
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

static void bind_int(sqlite3_stmt *s, int i, const json_t *v)
{
	if (json_is_integer(v))
		sqlite3_bind_int64(s, i, json_integer_value(v));
	else
		sqlite3_bind_null(s, i);
}

static void bind_real(sqlite3_stmt *s, int i, const json_t *v)
{
	if (json_is_number(v))
		sqlite3_bind_double(s, i, json_number_value(v));
	else
		sqlite3_bind_null(s, i);
}

int lev_store_run_put(struct lev_store *st, const json_t *run, struct lev_err *err)
{
	const json_t *rp = json_object_get(run, "read_paths");
	char *doc = json_dumps(run, JSON_COMPACT);
	sqlite3_stmt *s = st->run_put;
	int r;

	if (!doc)
		return lev_err_set(err, -EINVAL, "cannot encode a run");
	if (tx(st, err) < 0) {
		free(doc);
		return err ? err->code : -EIO;
	}
	bind_text(s, 1, lev_json_str(run, "id"));
	bind_text(s, 2, lev_json_str(run, "agent"));
	bind_text(s, 3, lev_json_str(run, "status"));
	bind_text(s, 4, lev_json_str(run, "stage"));
	bind_int(s, 5, json_object_get(run, "iteration"));
	bind_int(s, 6, json_object_get(run, "tools"));
	bind_int(s, 7, json_object_get(rp, "granted"));
	bind_int(s, 8, json_object_get(rp, "declared"));
	bind_real(s, 9, json_object_get(run, "created"));
	bind_real(s, 10, json_object_get(run, "updated"));
	sqlite3_bind_text(s, 11, doc, -1, free);
	r = step(st, s, err, "cannot write a run");
	return r;
}

int lev_store_runs_load(struct lev_store *st, json_t **out, struct lev_err *err)
{
	sqlite3_stmt *s = NULL;
	json_t *arr;
	int r;

	if (prep(st, "SELECT doc FROM runs ORDER BY created, id", &s, err) < 0)
		return err ? err->code : -EIO;
	arr = json_array();
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		const char *doc = (const char *)sqlite3_column_text(s, 0);
		json_t *j = doc ? json_loads(doc, 0, NULL) : NULL;

		if (json_is_object(j))
			json_array_append_new(arr, j);
		else
			json_decref(j);
	}
	sqlite3_finalize(s);
	if (r != SQLITE_DONE) {
		json_decref(arr);
		return db_fail(st, err, "cannot read the runs");
	}
	*out = arr;
	return 0;
}

int lev_store_journal_call(struct lev_store *st, const char *run, const char *call_id,
			   const char *tool, const json_t *args, bool allowed, struct lev_err *err)
{
	sqlite3_stmt *s = st->j_call;
	char *a;

	if (tx(st, err) < 0)
		return err ? err->code : -EIO;
	a = args ? json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	bind_text(s, 1, run);
	bind_text(s, 2, call_id);
	bind_text(s, 3, tool);
	if (a)
		sqlite3_bind_text(s, 4, a, -1, free);
	else
		sqlite3_bind_null(s, 4);
	bind_text(s, 5, allowed ? "dispatched" : "denied");
	sqlite3_bind_double(s, 6, now());
	return step(st, s, err, "cannot journal a call");
}

int lev_store_journal_result(struct lev_store *st, const char *run, const char *call_id,
			     bool ok, const char *text, struct lev_err *err)
{
	sqlite3_stmt *s = st->j_result;

	if (tx(st, err) < 0)
		return err ? err->code : -EIO;
	bind_text(s, 1, run);
	bind_text(s, 2, call_id);
	sqlite3_bind_double(s, 3, now());
	sqlite3_bind_int(s, 4, ok);
	bind_text(s, 5, text);
	return step(st, s, err, "cannot journal a result");
}

int lev_store_journal_count(struct lev_store *st, const char *run, const char *state,
			    long *out, struct lev_err *err)
{
	sqlite3_stmt *s = NULL;
	int r;

	if (prep(st, "SELECT count(*) FROM journal WHERE run = ?1 AND state = ?2", &s, err) < 0)
		return err ? err->code : -EIO;
	bind_text(s, 1, run);
	bind_text(s, 2, state);
	r = sqlite3_step(s);
	if (r == SQLITE_ROW)
		*out = (long)sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return r == SQLITE_ROW ? 0 : db_fail(st, err, "cannot count the journal");
}

int lev_store_question_put(struct lev_store *st, const char *id, const char *run,
			   const json_t *body, struct lev_err *err)
{
	sqlite3_stmt *s = st->q_put;
	char *b = json_dumps(body, JSON_COMPACT);

	if (!b)
		return lev_err_set(err, -EINVAL, "cannot encode a question");
	if (tx(st, err) < 0) {
		free(b);
		return err ? err->code : -EIO;
	}
	bind_text(s, 1, id);
	bind_text(s, 2, run);
	sqlite3_bind_text(s, 3, b, -1, free);
	sqlite3_bind_double(s, 4, now());
	return step(st, s, err, "cannot write a question");
}

int lev_store_question_close(struct lev_store *st, const char *id, const char *answer,
			     struct lev_err *err)
{
	sqlite3_stmt *s = st->q_close;

	if (tx(st, err) < 0)
		return err ? err->code : -EIO;
	bind_text(s, 1, id);
	sqlite3_bind_double(s, 2, now());
	bind_text(s, 3, answer);
	return step(st, s, err, "cannot close a question");
}
