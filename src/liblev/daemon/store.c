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

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/secrets.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/store.h"
#include "liblev/daemon/summary.h"

/* the statements exec_run() and load_rows() keep prepared (10 SQL texts today) */
#define STMT_CACHE_MAX 16

struct lev_store {
	sqlite3 *db;
	sqlite3_stmt *run_put;
	sqlite3_stmt *j_call;
	sqlite3_stmt *j_result;
	sqlite3_stmt *t_drop;
	sqlite3_stmt *j_drop;
	sqlite3_stmt *t_put;
	sqlite3_stmt *q_put;
	sqlite3_stmt *q_close;
	sqlite3_stmt *tx_begin;
	sqlite3_stmt *tx_commit;
	bool in_tx;		/* a write is waiting for lev_store_commit() */
	struct {
		char *sql;
		sqlite3_stmt *s;
	} cache[STMT_CACHE_MAX];	/* exec_run()'s and load_rows()'s, by their SQL */
	size_t n_cache;
};

static const char schema[] =
	"PRAGMA journal_mode = WAL;"
	"PRAGMA synchronous = NORMAL;"
	"CREATE TABLE IF NOT EXISTS runs ("
	" id TEXT PRIMARY KEY, agent TEXT, status TEXT, stage TEXT,"
	" iteration INTEGER, tools INTEGER, reads_granted INTEGER, reads_declared INTEGER,"
	" created REAL, updated REAL, doc TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS questions ("
	" id TEXT PRIMARY KEY, run TEXT NOT NULL, body TEXT NOT NULL,"
	" created REAL, answered REAL, answer TEXT);"
	"CREATE TABLE IF NOT EXISTS journal ("
	" run TEXT NOT NULL, seq INTEGER NOT NULL, call_id TEXT NOT NULL, tool TEXT, args TEXT,"
	" state TEXT NOT NULL, started REAL, finished REAL, ok INTEGER, result TEXT,"
	" PRIMARY KEY (run, seq));"
	"CREATE TABLE IF NOT EXISTS turns ("
	" run TEXT NOT NULL, seq INTEGER NOT NULL, turn TEXT NOT NULL, PRIMARY KEY (run, seq));"
	"CREATE TABLE IF NOT EXISTS requests (run TEXT PRIMARY KEY, request TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS policies (run TEXT PRIMARY KEY, snapshot TEXT NOT NULL);";

/*
 * The first daemon's journal was keyed by (run, call_id), which a model
 * may repeat; it is keyed by the call's place in the run now.  An old
 * table is moved over, its rows numbered in the order they were written.
 */
static const char migrate_journal[] =
	"BEGIN;"
	"ALTER TABLE journal RENAME TO journal_v1;"
	"CREATE TABLE journal ("
	" run TEXT NOT NULL, seq INTEGER NOT NULL, call_id TEXT NOT NULL, tool TEXT, args TEXT,"
	" state TEXT NOT NULL, started REAL, finished REAL, ok INTEGER, result TEXT,"
	" PRIMARY KEY (run, seq));"
	"INSERT INTO journal SELECT run, (SELECT count(*) FROM journal_v1 o WHERE o.run = j.run"
	" AND o.rowid <= j.rowid), call_id, tool, args, state, started, finished, ok, result"
	" FROM journal_v1 j;"
	"DROP TABLE journal_v1;"
	"COMMIT;";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* V as lev.db keeps it: JSON text redacted with the process's secret set (base/secrets.h). */
static char *dump(const json_t *v, size_t flags)
{
	char *t = json_dumps(v, flags);

	lev_secrets_redact(t);
	return t;
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

/*
 * Whether TABLE has a column NAME (the schema of an older lev; a failed
 * look-up counts as "has": nothing is migrated blind).
 */
static bool has_column(struct lev_store *st, const char *table, const char *name)
{
	_cleanup_buf_ struct lev_buf sql = LEV_BUF_INIT;
	sqlite3_stmt *s = NULL;
	bool has = false;

	(void)lev_buf_addf(&sql, "PRAGMA table_info(%s)", table);
	if (sqlite3_prepare_v2(st->db, sql.buf, -1, &s, NULL) != SQLITE_OK)
		return true;
	while (sqlite3_step(s) == SQLITE_ROW)
		has = has || !strcmp((const char *)sqlite3_column_text(s, 1), name);
	sqlite3_finalize(s);
	return has;
}

/*
 * The runs' summaries (summary.h: what `lev ps` shows of each), written
 * with the doc by lev_store_run_put() and nowhere else, so a page of
 * `ps --all` is read, never re-encoded.  A lev.db from before gets the
 * column, empty: runs_where() makes a missing summary from the doc.
 */
static int migrate_summary(struct lev_store *st, char **msg)
{
	if (has_column(st, "runs", "summary"))
		return 0;
	if (sqlite3_exec(st->db, "ALTER TABLE runs ADD COLUMN summary TEXT", NULL, NULL, msg) !=
	    SQLITE_OK)
		return -EIO;
	return 0;
}

/* Move an old journal (keyed by call id) to the new one; *msg says why it failed. */
static int migrate(struct lev_store *st, char **msg)
{
	sqlite3_stmt *s = NULL;
	bool has_seq = false;

	if (sqlite3_prepare_v2(st->db, "PRAGMA table_info(journal)", -1, &s, NULL) != SQLITE_OK)
		return -EIO;
	while (sqlite3_step(s) == SQLITE_ROW)
		has_seq = has_seq || !strcmp((const char *)sqlite3_column_text(s, 1), "seq");
	sqlite3_finalize(s);
	if (has_seq)
		return 0;
	if (sqlite3_exec(st->db, migrate_journal, NULL, NULL, msg) != SQLITE_OK) {
		(void)sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		return -EIO;
	}
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
	/*
	 * before the schema: setting WAL mode takes a lock, and a worker
	 * opening the database while the daemon commits must wait for it,
	 * not fail "database is locked" (a run resumed after a restart did)
	 */
	sqlite3_busy_timeout(st->db, 5000);
	if (sqlite3_exec(st->db, schema, NULL, NULL, &msg) != SQLITE_OK ||
	    migrate(st, &msg) < 0 || migrate_summary(st, &msg) < 0) {
		lev_err_set(err, -EIO, "cannot set up '%s': %s", path, msg ? msg : "?");
		sqlite3_free(msg);
		lev_store_close(st);
		return -EIO;
	}
	if (prep(st,
		 "INSERT OR REPLACE INTO runs (id, agent, status, stage, iteration, tools,"
		 " reads_granted, reads_declared, created, updated, doc, summary)"
		 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
		 &st->run_put, err) < 0 ||
	    prep(st,
		 "INSERT OR REPLACE INTO journal (run, seq, call_id, tool, args, state, started)"
		 " VALUES (?1, ?7, ?2, ?3, ?4, ?5, ?6)",
		 &st->j_call, err) < 0 ||
	    prep(st,
		 "UPDATE journal SET state = CASE state WHEN 'denied' THEN 'denied' ELSE 'done' END,"
		 " finished = ?3, ok = ?4, result = ?5 WHERE run = ?1 AND seq = ?2",
		 &st->j_result, err) < 0 ||
	    prep(st, "DELETE FROM turns WHERE run = ?1 AND seq >= ?2", &st->t_drop, err) < 0 ||
	    prep(st, "DELETE FROM journal WHERE run = ?1 AND seq > ?2", &st->j_drop, err) < 0 ||
	    prep(st, "INSERT INTO turns (run, seq, turn) VALUES (?1, ?2, ?3)", &st->t_put, err) <
		    0 ||
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
	sqlite3_finalize(st->t_drop);
	sqlite3_finalize(st->j_drop);
	sqlite3_finalize(st->t_put);
	sqlite3_finalize(st->q_put);
	sqlite3_finalize(st->q_close);
	for (size_t i = 0; i < st->n_cache; i++) {
		sqlite3_finalize(st->cache[i].s);
		free(st->cache[i].sql);
	}
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
	char *doc = dump(run, JSON_COMPACT);
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
	sqlite3_bind_text(s, 12, lev_run_summary(run), -1, free);	/* NULL: none */
	r = step(st, s, err, "cannot write a run");
	return r;
}

/* Where runs_where() starts and how far it goes: by id, after AFTER, LIMIT rows. */
struct runs_page {
	const char *after;
	long limit;
};

/*
 * FN(DATA, ID, its summary, its length) for row S of a page (id, doc,
 * summary): the one stored with the doc, or for a row written before
 * lev.db kept them, made from the doc now.
 */
static int page_row(sqlite3_stmt *s, const char *id,
		    int (*fn)(void *data, const char *id, const char *doc, size_t len), void *data)
{
	const char *sum = (const char *)sqlite3_column_text(s, 2);
	_cleanup_free_ char *own = NULL;
	json_t *j;

	if (sum)
		return fn(data, id, sum, (size_t)sqlite3_column_bytes(s, 2));
	j = json_loadb((const char *)sqlite3_column_text(s, 1),
		       (size_t)sqlite3_column_bytes(s, 1), 0, NULL);
	own = j ? lev_run_summary(j) : NULL;
	json_decref(j);
	return fn(data, id, own ? own : "{}", own ? strlen(own) : 2);
}

/*
 * FN(DATA, id, doc text, its length) for each row of "SELECT id, doc FROM
 * runs WHERE <HEAD>(?F, ...) ORDER BY created, id", LIST's strings bound
 * from ?F on (F is 2 when ?1 is *SINCE or PAGE's after), oldest first; with
 * PAGE, "ORDER BY id LIMIT limit" and FN gets each run's summary
 * (page_row()) instead of its doc; FN returning non-zero stops.  0 or < 0.
 */
static int runs_where(struct lev_store *st, const char *head, const char *const *list,
		      const double *since, const struct runs_page *page,
		      int (*fn)(void *data, const char *id, const char *doc, size_t len),
		      void *data, struct lev_err *err)
{
	_cleanup_buf_ struct lev_buf sql = LEV_BUF_INIT;
	int from = since || page ? 2 : 1, r, stop = 0;
	sqlite3_stmt *s = NULL;

	(void)lev_buf_addf(&sql, "SELECT id, doc%s FROM runs WHERE %s(", page ? ", summary" : "",
			   head);
	for (int i = 0; list[i]; i++)
		(void)lev_buf_addf(&sql, "%s?%d", i ? ", " : "", from + i);
	if (page)
		(void)lev_buf_addf(&sql, ") ORDER BY id LIMIT %ld", page->limit);
	else
		(void)lev_buf_adds(&sql, ") ORDER BY created, id");
	if (sqlite3_prepare_v2(st->db, sql.buf, -1, &s, NULL) != SQLITE_OK)
		return db_fail(st, err, "cannot prepare a statement");
	if (since)
		sqlite3_bind_double(s, 1, *since);
	if (page)
		bind_text(s, 1, page->after);
	for (int i = 0; list[i]; i++)
		bind_text(s, from + i, list[i]);
	while (!stop && (r = sqlite3_step(s)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(s, 0);
		const char *doc = (const char *)sqlite3_column_text(s, 1);

		if (id && doc && page)
			stop = page_row(s, id, fn, data);
		else if (id && doc)
			stop = fn(data, id, doc, (size_t)sqlite3_column_bytes(s, 1));
	}
	sqlite3_finalize(s);
	if (!stop && r != SQLITE_DONE)
		return db_fail(st, err, "cannot read the runs");
	return 0;
}

/* Append DOC, parsed, to the array DATA (a doc that is not an object is skipped). */
static int add_doc(void *data, const char *id, const char *doc, size_t len)
{
	json_t *j = json_loadb(doc, len, 0, NULL);

	(void)id;
	if (json_is_object(j))
		json_array_append_new(data, j);
	else
		json_decref(j);
	return 0;
}

int lev_store_runs_load(struct lev_store *st, const char *const *final, double since, json_t **out,
			struct lev_err *err)
{
	json_t *arr = json_array();
	int r = runs_where(st, "coalesce(updated, 0) >= ?1 OR coalesce(status, '') NOT IN ", final,
			   &since, NULL, add_doc, arr, err);

	if (r < 0) {
		json_decref(arr);
		return r;
	}
	*out = arr;
	return 0;
}

int lev_store_runs_each(struct lev_store *st, const char *const *final,
			int (*fn)(void *data, const char *id, const char *doc, size_t len),
			void *data, struct lev_err *err)
{
	return runs_where(st, "status IN ", final, NULL, NULL, fn, data, err);
}

int lev_store_runs_page(struct lev_store *st, const char *const *final, const char *after,
			long limit,
			int (*fn)(void *data, const char *id, const char *doc, size_t len),
			void *data, struct lev_err *err)
{
	const struct runs_page page = { after ? after : "", limit };

	return runs_where(st, "id > ?1 AND status IN ", final, NULL, &page, fn, data, err);
}

int lev_store_journal_call(struct lev_store *st, const char *run, long seq, const char *call_id,
			   const char *tool, const json_t *args, bool allowed, struct lev_err *err)
{
	sqlite3_stmt *s = st->j_call;
	char *a;

	if (tx(st, err) < 0)
		return err ? err->code : -EIO;
	a = args ? dump(args, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	sqlite3_bind_int64(s, 7, seq);
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

int lev_store_journal_result(struct lev_store *st, const char *run, long seq, bool ok,
			     const char *text, struct lev_err *err)
{
	sqlite3_stmt *s = st->j_result;

	if (tx(st, err) < 0)
		return err ? err->code : -EIO;
	bind_text(s, 1, run);
	sqlite3_bind_int64(s, 2, seq);
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
	char *b = dump(body, JSON_COMPACT);

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

int lev_store_turn_put(struct lev_store *st, const char *run, long seq, long calls,
		       const json_t *turn, struct lev_err *err)
{
	char *t = dump(turn, JSON_COMPACT);
	int r;

	if (!t)
		return lev_err_set(err, -EINVAL, "cannot encode a turn");
	/* a turn taken live replaces whatever the log held from there on */
	bind_text(st->t_drop, 1, run);
	sqlite3_bind_int64(st->t_drop, 2, seq);
	r = step(st, st->t_drop, err, "cannot journal a turn");
	if (r == 0) {
		bind_text(st->j_drop, 1, run);
		sqlite3_bind_int64(st->j_drop, 2, calls);
		r = step(st, st->j_drop, err, "cannot journal a turn");
	}
	if (r < 0) {
		free(t);
		return r;
	}
	bind_text(st->t_put, 1, run);
	sqlite3_bind_int64(st->t_put, 2, seq);
	sqlite3_bind_text(st->t_put, 3, t, -1, free);
	return step(st, st->t_put, err, "cannot journal a turn");
}

/* Run SQL (a statement binding ?1 to RUN and maybe ?2 to TEXT) once. */
/*
 * SQL's statement into *out: prepared at its first use and kept until the
 * store closes (preparing one cost the daemon more than the write it made:
 * 12 % of its time a spawn); *own when the cache is full and the caller
 * finalizes it.  Give it back with done_with().
 */
static int cached(struct lev_store *st, const char *sql, sqlite3_stmt **out, bool *own,
		  struct lev_err *err)
{
	for (size_t i = 0; i < st->n_cache; i++)
		if (!strcmp(st->cache[i].sql, sql)) {
			*out = st->cache[i].s;
			*own = false;
			return 0;
		}
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, out, NULL) !=
	    SQLITE_OK)
		return db_fail(st, err, "cannot prepare a statement");
	*own = st->n_cache == STMT_CACHE_MAX;
	if (!*own) {
		st->cache[st->n_cache].sql = xstrdup(sql);
		st->cache[st->n_cache++].s = *out;
	}
	return 0;
}

static void done_with(sqlite3_stmt *s, bool own)
{
	if (own) {
		sqlite3_finalize(s);
		return;
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
}

static int exec_run(struct lev_store *st, const char *sql, const char *run, const char *text,
		    struct lev_err *err)
{
	sqlite3_stmt *s = NULL;
	bool own;
	int r;

	r = cached(st, sql, &s, &own, err);
	if (r < 0)
		return r;
	bind_text(s, 1, run);
	if (text)
		bind_text(s, 2, text);
	r = sqlite3_step(s);
	done_with(s, own);
	return r == SQLITE_DONE ? 0 : db_fail(st, err, "cannot write a run's request");
}

int lev_store_request_put(struct lev_store *st, const char *run, const json_t *request,
			  struct lev_err *err)
{
	_cleanup_free_ char *t = dump(request, JSON_COMPACT);

	if (!t)
		return lev_err_set(err, -EINVAL, "cannot encode a request");
	return exec_run(st, "INSERT OR REPLACE INTO requests (run, request) VALUES (?1, ?2)", run,
			t, err);
}

int lev_store_request_drop(struct lev_store *st, const char *run, struct lev_err *err)
{
	int r = exec_run(st, "DELETE FROM requests WHERE run = ?1", run, NULL, err);

	/* the policy snapshot goes with it: an ended run is never resumed */
	return r < 0 ? r : exec_run(st, "DELETE FROM policies WHERE run = ?1", run, NULL, err);
}

/* Each row of SQL (binding ?1 to RUN) as JSON from ROW, appended to ARR. */
static int load_rows(struct lev_store *st, const char *sql, const char *run, json_t *arr,
		     json_t *(*row)(sqlite3_stmt *s), struct lev_err *err)
{
	sqlite3_stmt *s = NULL;
	bool own;
	int r;

	r = cached(st, sql, &s, &own, err);
	if (r < 0)
		return r;
	bind_text(s, 1, run);
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		json_t *j = row(s);

		if (j)
			json_array_append_new(arr, j);
	}
	done_with(s, own);
	return r == SQLITE_DONE ? 0 : db_fail(st, err, "cannot read the journal");
}

static json_t *col_json(sqlite3_stmt *s, int i)
{
	const char *t = (const char *)sqlite3_column_text(s, i);

	return t ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;
}

static json_t *col_str(sqlite3_stmt *s, int i)
{
	const char *t = (const char *)sqlite3_column_text(s, i);

	return t ? json_string(t) : json_null();
}

static json_t *row_request(sqlite3_stmt *s)
{
	return col_json(s, 0);
}

static json_t *row_turn(sqlite3_stmt *s)
{
	json_t *t = col_json(s, 0);

	if (json_is_object(t))
		return t;
	json_decref(t);
	/* an unreadable turn ends the log there, as a cut one does */
	return json_pack("{s:b}", "cut", 1);
}

static json_t *row_call(sqlite3_stmt *s)
{
	json_t *c = json_object();

	json_object_set_new(c, "id", col_str(s, 0));
	json_object_set_new(c, "state", col_str(s, 1));
	json_object_set_new(c, "ok", json_boolean(sqlite3_column_int(s, 2)));
	json_object_set_new(c, "result", col_str(s, 3));
	return c;
}

static json_t *row_answer(sqlite3_stmt *s)
{
	json_t *body = col_json(s, 0), *a = NULL;
	const char *call = lev_json_str(body, "call_id"), *kind = lev_json_str(body, "kind");

	if (call && kind && sqlite3_column_text(s, 1)) {
		a = json_pack("{s:s, s:s, s:s}", "call_id", call, "kind", kind, "answer",
			      (const char *)sqlite3_column_text(s, 1));
		/* what binds the answer: its run and the digest of the call as shown */
		if (lev_json_str(body, "run"))
			json_object_set(a, "run", json_object_get(body, "run"));
		if (lev_json_str(body, "digest"))
			json_object_set(a, "digest", json_object_get(body, "digest"));
	}
	json_decref(body);
	return a;
}

int lev_store_request_get(struct lev_store *st, const char *run, json_t **out,
			  struct lev_err *err)
{
	json_t *arr = json_array();
	int r = load_rows(st, "SELECT request FROM requests WHERE run = ?1", run, arr, row_request,
			  err);

	if (r == 0 && !json_is_object(json_array_get(arr, 0)))
		r = lev_err_set(err, -ENOENT, "the daemon's database holds no request for run '%s'",
				run);
	if (r == 0)
		*out = json_incref(json_array_get(arr, 0));
	json_decref(arr);
	return r;
}

int lev_store_policy_put(struct lev_store *st, const char *run, const json_t *snapshot,
			 struct lev_err *err)
{
	_cleanup_free_ char *t = json_dumps(snapshot, JSON_COMPACT);

	if (!t)
		return lev_err_set(err, -EINVAL, "cannot encode a policy snapshot");
	return exec_run(st, "INSERT OR REPLACE INTO policies (run, snapshot) VALUES (?1, ?2)", run,
			t, err);
}

int lev_store_policy_get(struct lev_store *st, const char *run, json_t **out,
			 struct lev_err *err)
{
	json_t *arr = json_array();
	int r = load_rows(st, "SELECT snapshot FROM policies WHERE run = ?1", run, arr,
			  row_request, err);

	*out = NULL;
	if (r == 0 && json_is_object(json_array_get(arr, 0)))
		*out = json_incref(json_array_get(arr, 0));
	json_decref(arr);
	return r;
}

int lev_store_run_get(struct lev_store *st, const char *id, json_t **out, struct lev_err *err)
{
	json_t *arr = json_array();
	int r = load_rows(st, "SELECT doc FROM runs WHERE id = ?1", id, arr, row_request, err);

	if (r == 0 && !json_is_object(json_array_get(arr, 0)))
		r = 1;
	if (r == 0)
		*out = json_incref(json_array_get(arr, 0));
	json_decref(arr);
	return r;
}

int lev_store_replay_load(struct lev_store *st, const char *run, json_t **out,
			  struct lev_err *err)
{
	json_t *log = json_pack("{s:[], s:[], s:[]}", "turns", "calls", "answers");
	int r = load_rows(st, "SELECT turn FROM turns WHERE run = ?1 ORDER BY seq", run,
			  json_object_get(log, "turns"), row_turn, err);

	if (r == 0)
		r = load_rows(st,
			      "SELECT call_id, state, ok, result FROM journal WHERE run = ?1"
			      " ORDER BY seq",
			      run, json_object_get(log, "calls"), row_call, err);
	if (r == 0)
		r = load_rows(st,
			      "SELECT body, answer FROM questions WHERE run = ?1 AND answer IS NOT NULL"
			      " ORDER BY answered",
			      run, json_object_get(log, "answers"), row_answer, err);
	if (r < 0) {
		json_decref(log);
		return r;
	}
	*out = log;
	return 0;
}

int lev_store_question_last(struct lev_store *st, unsigned long *out, struct lev_err *err)
{
	sqlite3_stmt *s = NULL;
	int r;

	if (prep(st,
		 "SELECT max(CAST(substr(id, 2) AS INTEGER)) FROM questions"
		 " WHERE id GLOB 'q[0-9]*' AND substr(id, 2) NOT GLOB '*[^0-9]*'",
		 &s, err) < 0)
		return err ? err->code : -EIO;
	r = sqlite3_step(s);
	if (r == SQLITE_ROW)
		*out = sqlite3_column_type(s, 0) == SQLITE_NULL
			       ? 0 : (unsigned long)sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return r == SQLITE_ROW ? 0 : db_fail(st, err, "cannot read the questions' numbers");
}
