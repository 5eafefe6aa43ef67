/*
 * cmd_dash.c - lev dash: a terminal dashboard over the daemon's protocol.
 *
 * It decides nothing: the runs are the daemon's "ps", a run's events its
 * record's events.jsonl (runevents.h, as lev stages reads them), a question the daemon's
 * "requests" shown and answered through respond.h (as lev respond does,
 * bound to the digest of the call on screen), and pause, resume and cancel
 * the daemon's own requests.  Everything a run wrote goes through termtext
 * before it reaches the screen.
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <curses.h>

#include "lev/cmd.h"
#include "lev/cursesapi.h"
#include "lev/respond.h"
#include "lev/runevents.h"
#include "lev/spawnrun.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/termtext.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/agentstore.h"
#include "liblev/daemon/client.h"
#include "liblev/daemon/proto.h"

const char lev_usage_dash[] =
	"usage: lev dash\n"
	"\n"
	"A full-screen view of the daemon's runs: their status (and what a waiting\n"
	"run waits on), stage, elapsed time, tool calls and READS, their running\n"
	"workers and children under them; a run's events as they come; and its open\n"
	"question, the whole call shown as 'lev respond' shows it and answered as\n"
	"'lev respond' answers it.  n starts a run as 'lev run AGENT --detach' does.\n"
	"Press ? for the keys.\n"
	"It needs a terminal on stdin and stdout.  Exit status: 0 when quit.\n";

#define EVENT_LINES_MAX 5000	/* a run's event lines kept in the detail view */
#define INPUT_MAX 4096		/* an answer typed in, in bytes */
#define POLL_MS 200		/* how often the daemon is asked */

enum view { VIEW_LIST, VIEW_DETAIL, VIEW_ANSWER, VIEW_NEW };
enum prompt { PROMPT_NONE, PROMPT_FILTER, PROMPT_TEXT, PROMPT_CANCEL };

struct lines {
	char **v;		/* owned, each terminal-safe, one screen line */
	size_t n;
	size_t max;		/* keep the newest MAX (0: keep them all) */
};

/* A row of the list: a run, or one of its sub-agents nested under it. */
struct row {
	size_t run;		/* index into runs */
	ssize_t kid;		/* -1: the run's own row; else the index in its "workers" */
};

struct dash {
	struct lev_ctx *ctx;
	json_t *runs;		/* the runs as ps lists them, going then ended (owned) */
	struct row *rows;	/* the rows the filter keeps */
	size_t nrows, sel, top;
	bool down;		/* the daemon did not answer the last time */
	char *down_why;
	bool ever_up;
	enum view view;
	enum prompt prompt;
	bool help;
	char *run;		/* the run open in the detail or answer view */
	char *cancel;		/* the run x asks about */
	struct lines events;	/* its events, as lines */
	struct lev_run_events ev;	/* its record's events.jsonl, read so far */
	json_t *question;	/* the open request being answered, as shown (owned) */
	char *shown_text;	/* its text, as lev respond shows it (owned) */
	struct lines shown;	/* that text in rows of shown_cols columns */
	int shown_cols;
	size_t scroll;		/* first line shown of the detail / answer pane */
	bool follow;		/* the detail pane sticks to the newest line */
	struct lev_agent_info *agents;	/* the new-run screen's installed agents */
	size_t n_agents, agent_sel;
	bool in_task;		/* its task field has the keyboard */
	char filter[128];
	char input[INPUT_MAX];
	char toast[512];
};

/* ---- text ---- */

/* S made terminal-safe, tabs as spaces (fresh). */
static char *safe_text(const char *s)
{
	struct lev_buf b = LEV_BUF_INIT;
	char *out;

	lev_termtext_add(&b, s ? s : "", s ? strlen(s) : 0);
	out = lev_buf_detach(&b, NULL);
	for (char *p = out; *p; p++)
		if (*p == '\t')
			*p = ' ';
	return out;
}

/* S as one line: terminal-safe, newlines and tabs as spaces (fresh). */
static char *safe_cell(const char *s)
{
	char *out = safe_text(s);

	for (char *p = out; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return out;
}

/*
 * The bytes of S (terminal-safe UTF-8) that fill at most COLS columns: a
 * wide character takes two, so a row never wraps onto the next.
 */
static int fit(const char *s, int cols)
{
	size_t len = strlen(s), i = 0;
	int used = 0;

	while (i < len) {
		uint32_t cp = (unsigned char)s[i];
		size_t n = cp < 0x80 ? 1 : lev_utf8_decode(s + i, len - i, &cp);
		int w = n ? wcwidth((wchar_t)cp) : 1;

		if (w < 0)
			w = 1;
		if (used + w > cols)
			break;
		used += w;
		i += n ? n : 1;
	}
	return (int)i;
}

static void lines_clear(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Add S (owned) to L, dropping the oldest line of a full L. */
static void lines_push(struct lines *l, char *s)
{
	if (l->max && l->n == l->max) {
		free(l->v[0]);
		memmove(l->v, l->v + 1, (l->n - 1) * sizeof(*l->v));
		l->n--;
	}
	l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = s;
}

/*
 * Add TEXT (untrusted) to L: terminal-safe, PREFIX before its first line
 * and an indent before the others, each line cut into rows of COLS columns
 * (a long line is wrapped as a terminal would, never cut off).
 */
static void lines_add(struct lines *l, const char *prefix, const char *text, int cols)
{
	_cleanup_free_ char *safe = safe_text(text);
	_cleanup_free_ char *all = xasprintf("%s%s", prefix, safe);
	char *p, *nl;

	if (cols < 8)
		cols = 8;
	for (p = all;; p = nl + 1) {
		_cleanup_free_ char *line = NULL;
		size_t off = 0, len;

		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		line = xasprintf("%s%s", p == all || !*prefix ? "" : "    ", p);
		len = strlen(line);
		do {
			int n = fit(line + off, cols);

			if (n == 0)
				n = 1;	/* a character wider than the pane */
			lines_push(l, xstrndup(line + off, (size_t)n));
			off += (size_t)n;
		} while (off < len);
		if (!nl)
			break;
	}
}

/* Put terminal-safe S at Y, X, cut at the right edge. */
static void put(int y, int x, const char *s)
{
	if (y < 0 || y >= LINES || x >= COLS)
		return;
	mvaddnstr(y, x, s, fit(s, COLS - x));
}

/* ---- what the daemon says ---- */

static bool run_ended(const json_t *r)
{
	const char *s = lev_json_str(r, "status");

	return lev_streq(s, "complete") || lev_streq(s, "error") || lev_streq(s, "cancelled");
}

/* A status that waits on a person (not on its own sub-agents). */
static bool run_asks(const json_t *r)
{
	const char *s = lev_json_str(r, "status");

	return s && lev_startswith(s, "waiting: ") && !lev_startswith(s, "waiting: workers(") &&
	       !lev_startswith(s, "waiting: children(");
}

/* Seconds as 12s, 3m04s, 2h05m. */
static char *elapsed(double secs)
{
	long s = secs < 0 ? 0 : (long)secs;

	if (s < 60)
		return xasprintf("%lds", s);
	if (s < 3600)
		return xasprintf("%ldm%02lds", s / 60, s % 60);
	return xasprintf("%ldh%02ldm", s / 3600, s / 60 % 60);
}

/*
 * The row of run R: its cells as lev ps shows them, and how long it has
 * run (ended: how long it ran), each fresh and one terminal-safe line.
 */
#define NCOLS (LEV_PS_NCOLS + 1)

static void row_cells(const json_t *r, char **c)
{
	double created = json_number_value(json_object_get(r, "created"));
	double end = run_ended(r) ? json_number_value(json_object_get(r, "finished")) : 0;

	lev_ps_row(r, c);
	c[LEV_PS_NCOLS] = created > 0 ? elapsed((end > 0 ? end : (double)time(NULL)) - created)
				      : xstrdup("-");
}

/* Case-insensitive: does run R show NEEDLE in its id, agent, status or stage? */
static bool run_matches(const json_t *r, const char *needle)
{
	static const char *const keys[] = { "id", "agent", "status", "stage", "error" };

	if (!*needle)
		return true;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (lev_json_str(r, keys[i]) && strcasestr(lev_json_str(r, keys[i]), needle))
			return true;
	return false;
}

/* Sub-agent K of row I, or NULL for a run's own row. */
static const json_t *row_kid(const struct dash *d, size_t i)
{
	const json_t *r = json_array_get(d->runs, d->rows[i].run);

	return d->rows[i].kid < 0 ? NULL
				  : json_array_get(json_object_get(r, "workers"), (size_t)d->rows[i].kid);
}

/* What names row I across polls: its run's id, and its sub-agent's (fresh). */
static char *row_key(const struct dash *d, size_t i)
{
	const json_t *r = json_array_get(d->runs, d->rows[i].run), *k = row_kid(d, i);

	return xasprintf("%s\n%s", lev_json_str(r, "id") ? lev_json_str(r, "id") : "",
			 k && lev_json_str(k, "child") ? lev_json_str(k, "child") : "");
}

/*
 * The rows: each run the filter keeps, and under it its running workers and
 * children as lev ps lists them; the selection stays on row KEEP (row_key())
 * while the list changes under it.
 */
static void refilter(struct dash *d, const char *keep)
{
	size_t i, n = 0, k;
	json_t *r, *x;

	json_array_foreach(d->runs, i, r)
		n += 1 + json_array_size(json_object_get(r, "workers"));
	free(d->rows);
	d->rows = xcalloc(n + 1, sizeof(*d->rows));
	d->nrows = 0;
	json_array_foreach(d->runs, i, r) {
		if (!run_matches(r, d->filter))
			continue;
		d->rows[d->nrows++] = (struct row){ i, -1 };
		json_array_foreach(json_object_get(r, "workers"), k, x)
			d->rows[d->nrows++] = (struct row){ i, (ssize_t)k };
	}
	for (i = 0; keep && i < d->nrows; i++) {
		_cleanup_free_ char *key = row_key(d, i);

		if (lev_streq(key, keep))
			d->sel = i;
	}
	if (d->sel >= d->nrows)
		d->sel = d->nrows ? d->nrows - 1 : 0;
}

/* The run of the selected row (a sub-agent's row: the run it runs under). */
static const json_t *selected(const struct dash *d)
{
	return d->nrows ? json_array_get(d->runs, d->rows[d->sel].run) : NULL;
}

/* row_key() of the selected row, or NULL (fresh). */
static char *selected_key(const struct dash *d)
{
	return d->nrows ? row_key(d, d->sel) : NULL;
}

static const json_t *run_by_id(const struct dash *d, const char *id)
{
	size_t i;
	json_t *r;

	json_array_foreach(d->runs, i, r)
		if (lev_streq(lev_json_str(r, "id"), id))
			return r;
	return NULL;
}

/* lev_client_call() with REQ consumed. */
static int call(json_t *req, json_t **reply, struct lev_err *err)
{
	int r = lev_client_call(req, reply, err);

	json_decref(req);
	return r;
}

/* Ask the daemon for its runs; say when it stops answering and when it is back. */
static void poll_runs(struct dash *d)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *reply = NULL, *all;
	_cleanup_free_ char *keep = selected_key(d);
	int r = call(lev_proto_request("ps"), &reply, &err);

	if (r == -EREMOTEIO) {
		/* it answered, and said no: not a daemon gone */
		_cleanup_free_ char *why = safe_cell(err.msg);

		snprintf(d->toast, sizeof(d->toast), "the daemon refused the run list: %s", why);
		lev_err_clear(&err);
		return;
	}
	if (r < 0) {
		if (!d->down)
			snprintf(d->toast, sizeof(d->toast), "the daemon stopped answering");
		d->down = true;
		free(d->down_why);
		d->down_why = safe_cell(err.msg);
		lev_err_clear(&err);
		return;
	}
	if (d->down && d->ever_up)
		snprintf(d->toast, sizeof(d->toast), "the daemon is back");
	d->down = false;
	d->ever_up = true;
	all = json_array();
	json_array_extend(all, json_object_get(reply, "runs"));
	json_array_extend(all, json_object_get(reply, "finished"));
	json_decref(reply);
	json_decref(d->runs);
	d->runs = all;
	refilter(d, keep);
}

/* Send REQ (consumed); the daemon's refusal, or what went wrong, in the toast. */
static bool send_op(struct dash *d, json_t *req, const char *done)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *reply = NULL;
	_cleanup_free_ char *why = NULL;
	int r = call(req, &reply, &err);

	json_decref(reply);
	if (r < 0) {
		why = safe_cell(err.msg);
		snprintf(d->toast, sizeof(d->toast), "refused: %s", why);
		lev_err_clear(&err);
		return false;
	}
	snprintf(d->toast, sizeof(d->toast), "%s", done);
	return true;
}

/* pause, resume or cancel run ID: the daemon's own requests, as lev pause & co. send them. */
static void run_op(struct dash *d, const char *op, const char *id)
{
	json_t *req = lev_proto_request(op);
	_cleanup_free_ char *safe = safe_cell(id);
	_cleanup_free_ char *done = xasprintf("%s: %s", op, safe);

	json_object_set_new(req, "run", json_string(id));
	(void)send_op(d, req, done);
}

/* ---- a run's events (its record's events.jsonl, as lev logs reads it) ---- */

/* A call's arguments, compact (fresh). */
static char *args_text(const json_t *ev)
{
	char *s = json_dumps(json_object_get(ev, "args"), JSON_COMPACT | JSON_ENCODE_ANY);

	return s ? s : xstrdup("");
}

/* Event EV as lines of L. */
static void event_lines(struct lines *l, const json_t *ev)
{
	const char *name = lev_json_str(ev, "event"), *text = lev_json_str(ev, "text");
	_cleanup_free_ char *s = NULL;

	if (lev_streq(name, "stage_started")) {
		s = xasprintf("== stage '%s'", lev_json_str(ev, "stage"));
	} else if (lev_streq(name, "stage_finished")) {
		s = xasprintf("== stage '%s' ended (%s)", lev_json_str(ev, "stage"),
			      lev_json_str(ev, "end") ? lev_json_str(ev, "end") : "-");
	} else if (lev_streq(name, "model_response")) {
		if (text && *text)
			lines_add(l, "model: ", text, COLS - 2);
		return;
	} else if (lev_streq(name, "tool_call")) {
		_cleanup_free_ char *a = args_text(ev);
		bool allowed = lev_streq(lev_json_str(ev, "decision"), "allow");

		s = xasprintf("call %s %s -> %s%s%s", lev_json_str(ev, "tool"), a,
			      allowed ? "allow" : "DENIED", allowed ? "" : ": ",
			      allowed ? "" : lev_json_str(ev, "reason") ? lev_json_str(ev, "reason")
									 : "-");
	} else if (lev_streq(name, "tool_result")) {
		lines_add(l, json_is_true(json_object_get(ev, "ok")) ? "  = " : "  ! ",
			  text ? text : "", COLS - 2);
		return;
	} else if (lev_streq(name, "model_request")) {
		return;	/* the model's answer says more */
	} else if (lev_streq(name, "run_finished")) {
		s = xasprintf("run finished: %s", lev_json_str(ev, "status") ? lev_json_str(ev, "status")
									      : "-");
	} else {
		s = xstrdup(name ? name : "?");
	}
	lines_add(l, "", s, COLS - 2);
}

static void event_in(const json_t *ev, void *arg)
{
	struct lines *l = arg;

	if (ev)
		event_lines(l, ev);
	else
		lines_add(l, "", "(an event too long to show here: lev logs has it)", COLS - 2);
}

/* Read what the run's events.jsonl holds beyond what was read (runevents.h). */
static void read_events(struct dash *d)
{
	if (d->ev.fd < 0) {
		struct lev_err err = LEV_ERR_INIT;

		if (lev_run_events_open(d->ctx, d->run, &d->ev, &err) < 0) {
			lev_err_clear(&err);
			return;	/* no record yet: asked again at the next poll */
		}
	}
	lev_run_events_read(&d->ev, false, 0, event_in, &d->events);
}

/* ---- the views ---- */

static void open_run(struct dash *d, const char *id, enum view v)
{
	if (!lev_streq(d->run, id)) {
		free(d->run);
		d->run = xstrdup(id);
		lines_clear(&d->events);
		lev_run_events_close(&d->ev);
	}
	d->view = v;
	d->scroll = 0;
	d->follow = v != VIEW_ANSWER;	/* a question is read from its top */
	read_events(d);
}

/*
 * The open request of run ID from the daemon's "requests", asked for in
 * pages as lev respond asks (new reference), or NULL with the reason in
 * the toast.
 */
static json_t *request_of(struct dash *d, const char *id)
{
	_cleanup_free_ char *after = NULL;

	for (int pages = 0; pages < 1000; pages++) {
		json_t *req = lev_proto_request("requests"), *reply = NULL, *q, *found = NULL;
		struct lev_err err = LEV_ERR_INIT;
		const char *next;
		size_t i;

		if (after)
			json_object_set_new(req, "after", json_string(after));
		if (call(req, &reply, &err) < 0) {
			_cleanup_free_ char *why = safe_cell(err.msg);

			snprintf(d->toast, sizeof(d->toast), "%s", why);
			lev_err_clear(&err);
			return NULL;
		}
		json_array_foreach(json_object_get(reply, "requests"), i, q)
			if (!found && lev_streq(lev_json_str(q, "run"), id))
				found = json_incref(q);
		next = lev_json_str(reply, "next");
		free(after);
		after = next && !found ? xstrdup(next) : NULL;
		json_decref(reply);
		if (found)
			return found;
		if (!after)
			break;
	}
	snprintf(d->toast, sizeof(d->toast), "no open question for this run");
	return NULL;
}

/* The answer view on run ID's open question, shown whole as lev respond shows it. */
static void open_answer(struct dash *d, const char *id)
{
	struct lev_buf b = LEV_BUF_INIT;
	json_t *q = request_of(d, id);

	if (!q)
		return;
	json_decref(d->question);
	d->question = q;
	lev_respond_format(&b, q);
	free(d->shown_text);
	d->shown_text = lev_buf_detach(&b, NULL);
	d->shown_cols = 0;	/* wrapped when drawn */
	open_run(d, id, VIEW_ANSWER);
}

/*
 * Answer the question shown: the respond request of respond.h (its digest
 * that of the call on screen) with ANSWER, SCOPE, TEXT or CHOICE (< 0:
 * none) added, as lev respond adds its flags.
 */
static void answer(struct dash *d, const char *ans, const char *scope, const char *text,
		   long choice)
{
	json_t *req = lev_respond_request(d->question, NULL);
	_cleanup_free_ char *qid = safe_cell(lev_json_str(d->question, "id"));
	_cleanup_free_ char *done = NULL;

	if (ans)
		json_object_set_new(req, "answer", json_string(ans));
	if (scope)
		json_object_set_new(req, "scope", json_string(scope));
	if (text) {
		json_t *t = json_string(text);	/* jansson takes UTF-8 only */

		if (!t) {
			json_decref(req);
			snprintf(d->toast, sizeof(d->toast), "the answer must be UTF-8 text");
			return;
		}
		json_object_set_new(req, "text", t);
	}
	if (choice >= 0)
		json_object_set_new(req, "choice", json_integer(choice));
	done = xasprintf("%s answered (%s%s%s)", qid, ans ? ans : text ? "text" : "choice",
			 scope ? " for the " : "", scope ? scope : "");
	if (send_op(d, req, done)) {
		json_decref(d->question);
		d->question = NULL;
		open_run(d, d->run, VIEW_DETAIL);
	}
}

/* ---- drawing ---- */

/*
 * The answer view, once the daemon no longer lists the question shown as
 * its run's (answered elsewhere, the run ended): back to the run.
 */
static void question_gone(struct dash *d)
{
	const json_t *r = run_by_id(d, d->run);
	json_t *q;

	if (d->view != VIEW_ANSWER || d->down || d->prompt == PROMPT_TEXT || (r && run_asks(r)))
		return;
	q = request_of(d, d->run);
	if (q && lev_streq(lev_json_str(q, "id"), lev_json_str(d->question, "id"))) {
		json_decref(q);
		return;
	}
	json_decref(q);
	snprintf(d->toast, sizeof(d->toast), "the question was answered elsewhere, or the run "
					     "stopped asking");
	json_decref(d->question);
	d->question = NULL;
	open_run(d, d->run, VIEW_DETAIL);
}

static void draw_header(const struct dash *d)
{
	_cleanup_free_ char *h = NULL;
	size_t waiting = 0, i;
	json_t *r;

	json_array_foreach(d->runs, i, r)
		waiting += run_asks(r);
	h = xasprintf(" lev dash   %zu run%s, %zu waiting for an answer%s%s   ",
		      json_array_size(d->runs), json_array_size(d->runs) == 1 ? "" : "s", waiting,
		      *d->filter ? "   filter: " : "", d->filter);
	attron(A_REVERSE);
	mvhline(0, 0, ' ', COLS);
	put(0, 0, h);
	if (d->down) {
		_cleanup_free_ char *s = xasprintf("[daemon not answering, retrying: %s]",
						   d->down_why ? d->down_why : "");

		put(0, (int)strlen(h) < COLS ? (int)strlen(h) : COLS, s);
	}
	attroff(A_REVERSE);
}

/* The two last rows: a toast (what just happened) and the keys or a prompt. */
static void draw_footer(const struct dash *d, const char *keys)
{
	_cleanup_free_ char *in = NULL;

	move(LINES - 2, 0);
	clrtobot();
	attron(A_BOLD);
	put(LINES - 2, 0, d->toast);
	attroff(A_BOLD);
	if (d->prompt == PROMPT_FILTER || d->prompt == PROMPT_TEXT) {
		_cleanup_free_ char *safe = safe_cell(d->input);

		in = xasprintf("%s%s_", d->prompt == PROMPT_FILTER ? "filter /" : "answer> ", safe);
	} else if (d->prompt == PROMPT_CANCEL) {
		_cleanup_free_ char *id = safe_cell(d->cancel);

		in = xasprintf("cancel run %s? y: cancel it, any other key: keep it", id);
	}
	attron(in ? A_BOLD : A_DIM);
	put(LINES - 1, 0, in ? in : keys);
	attroff(in ? A_BOLD : A_DIM);
}

/* The rows of the list under their column heads, each column as wide as it needs. */
static void draw_list(struct dash *d)
{
	static const char *const head[NCOLS] = { "RUN",	 "AGENT", "STATUS", "STAGE", "ITER",
						 "TOOLS", "READS", "AGE",    "ELAPSED" };
	int w[NCOLS], avail = LINES - 4, x;
	char *(*cells)[NCOLS] = xcalloc(d->nrows + 1, sizeof(*cells));

	for (int c = 0; c < NCOLS; c++)
		w[c] = (int)strlen(head[c]);
	for (size_t i = 0; i < d->nrows; i++) {
		if (row_kid(d, i)) {
			lev_ps_worker_row(row_kid(d, i), cells[i]);
			cells[i][LEV_PS_NCOLS] = xstrdup("-");
		} else {
			row_cells(json_array_get(d->runs, d->rows[i].run), cells[i]);
		}
		for (int c = 0; c < NCOLS; c++) {
			int n = (int)(strlen(cells[i][c]) < 60 ? strlen(cells[i][c]) : 60);

			w[c] = n > w[c] ? n : w[c];
		}
	}
	attron(A_BOLD);
	for (int c = 0, x0 = 1; c < NCOLS; x0 += w[c++] + 2)
		put(1, x0, head[c]);
	attroff(A_BOLD);
	if (!d->nrows)
		put(3, 2, d->down ? "(no runs known: the daemon is not answering)"
			: *d->filter ? "(no run matches the filter; Esc clears it)"
				     : "(no runs: start one with 'lev run AGENT --detach')");
	if (avail < 1)
		avail = 1;
	if (d->sel < d->top)
		d->top = d->sel;
	if (d->sel >= d->top + (size_t)avail)
		d->top = d->sel - (size_t)avail + 1;
	for (size_t i = 0; i < d->nrows; i++) {
		const json_t *r = json_array_get(d->runs, d->rows[i].run);
		int y = 2 + (int)(i - d->top);
		attr_t a = i == d->sel	     ? A_REVERSE
			   : row_kid(d, i) ? 0
			   : run_asks(r)   ? A_BOLD
			   : run_ended(r)  ? A_DIM
					   : 0;

		if (i >= d->top && y < 2 + avail) {
			attron(a);
			if (i == d->sel)
				mvhline(y, 0, ' ', COLS);
			x = 1;
			for (int c = 0; c < NCOLS; x += w[c++] + 2) {
				cells[i][c][fit(cells[i][c], w[c])] = '\0';
				put(y, x, cells[i][c]);
			}
			attroff(a);
		}
		for (int c = 0; c < NCOLS; c++)
			free(cells[i][c]);
	}
	free(cells);
}

/*
 * Lines L from d->scroll in rows TOP to the footer (the newest when
 * following), with a mark on the row above TOP where more lies above or
 * below.
 */
static void draw_lines(struct dash *d, const struct lines *l, int top)
{
	int rows = LINES - 2 - top;

	if (rows < 1)
		return;
	if (d->follow || d->scroll + (size_t)rows > l->n)
		d->scroll = l->n > (size_t)rows ? l->n - (size_t)rows : 0;
	for (int y = 0; y < rows && d->scroll + (size_t)y < l->n; y++)
		put(top + y, 1, l->v[d->scroll + (size_t)y]);
	/* on the rule over the pane, never over a line of it */
	attron(A_REVERSE);
	if (d->scroll > 0)
		put(top - 1, COLS > 48 ? COLS - 48 : 0, " more above: Up/PgUp ");
	if (d->scroll + (size_t)rows < l->n)
		put(top - 1, COLS > 26 ? COLS - 26 : 0, " more below: Down/PgDn ");
	attroff(A_REVERSE);
}

/* The open run: its row's facts over its events. */
static void draw_detail(struct dash *d)
{
	const json_t *r = run_by_id(d, d->run);
	char *c[NCOLS];
	_cleanup_free_ char *l1 = NULL, *l2 = NULL;

	if (!r) {
		_cleanup_free_ char *id = safe_cell(d->run);

		l1 = xasprintf("run %s (not in the daemon's list now)", id);
		put(1, 1, l1);
	} else {
		row_cells(r, c);
		l1 = xasprintf("run %s   agent %s   stage %s", c[0], c[1], c[3]);
		l2 = xasprintf("status: %s   iteration %s   tool calls %s   reads %s   elapsed %s   "
			       "moved %s ago",
			       c[2], c[4], c[5], c[6], c[8], c[7]);
		for (int k = 0; k < NCOLS; k++)
			free(c[k]);
		attron(A_BOLD);
		put(1, 1, l1);
		attroff(A_BOLD);
		put(2, 1, l2);
	}
	mvhline(3, 0, ACS_HLINE, COLS);
	put(3, 2, d->view == VIEW_ANSWER ? " its question, the whole call " : " events ");
	if (d->view == VIEW_ANSWER && d->shown_cols != COLS - 2) {
		/* wrapped to the pane's width, again after a resize */
		lines_clear(&d->shown);
		lines_add(&d->shown, "", d->shown_text ? d->shown_text : "", COLS - 2);
		d->shown_cols = COLS - 2;
	}
	draw_lines(d, d->view == VIEW_ANSWER ? &d->shown : &d->events, 4);
}

static const char *const help_text[] = {
	"lev dash: keys",
	"",
	"the run list",
	"  Up/Down, k/j      select a run          Home/End, g/G  first / last run",
	"  Enter             open the run          i              answer the selected run",
	"  p / r             pause / resume it     x              cancel it (asks first)",
	"  /                 filter (Enter keeps it, Esc clears it)",
	"  n                 start a run: pick an installed agent, type the task, Enter",
	"  Esc               clear the filter      q, Ctrl-C      quit",
	"",
	"a run (its events)",
	"  Up/Down, k/j      scroll                PgUp/PgDn      scroll a screen",
	"  Home/End, b/e     first / newest line   i              answer its question",
	"  p / r, x          pause, resume, cancel Esc            back to the list",
	"",
	"its question (the whole call, as 'lev respond' shows it)",
	"  a                 approve once          s              approve for the stage",
	"  S                 approve for the run (--session)      d              deny",
	"  y / n             yes / no (a confirm question; approve / deny a call)",
	"  0-9               pick that choice      t, Enter       type an answer, Enter sends it",
	"  Esc               back, unanswered",
	"",
	"  ? / F1            this help             Ctrl-C         quit anywhere",
	NULL,
};

/* The keys that answer Q: the answers lev respond offers for its kind. */
static const char *answer_keys(const json_t *q)
{
	const char *kind = lev_json_str(q, "kind"), *qk = lev_json_str(q, "question_kind");

	if (lev_streq(kind, "permission"))
		return "a approve once  s approve for the stage  S approve for the run  d deny  "
		       "Esc back";
	if (lev_streq(kind, "taint"))
		return "a approve once  S approve for the run  d deny  Esc back";
	if (lev_streq(qk, "choice"))
		return "0-9 pick that choice  t type the choice  Esc back";
	if (lev_streq(qk, "confirm"))
		return "y yes  n no  Esc back";
	return "t or Enter type the answer (Enter sends it)  Esc back";
}

/* ---- the new-run screen ---- */

static void agents_free(struct dash *d)
{
	lev_agentstore_list_free(d->agents, d->n_agents);
	d->agents = NULL;
	d->n_agents = d->agent_sel = 0;
}

/* n: the installed agents to pick from, and a task to type. */
static void open_new(struct dash *d)
{
	struct lev_err err = LEV_ERR_INIT;

	agents_free(d);
	if (lev_agentstore_list(&d->agents, &d->n_agents, &err) < 0) {
		_cleanup_free_ char *why = safe_cell(err.msg);

		snprintf(d->toast, sizeof(d->toast), "cannot list the agents: %s", why);
		lev_err_clear(&err);
		return;
	}
	if (!d->n_agents) {
		snprintf(d->toast, sizeof(d->toast),
			 "no agents installed: 'lev add DIR' installs one");
		return;
	}
	d->in_task = false;
	d->input[0] = '\0';
	d->view = VIEW_NEW;
}

/* Enter in the task: the run started as lev run AGENT --detach starts it (spawnrun.h). */
static void start_new(struct dash *d)
{
	const char *agent = d->agents[d->agent_sel].name;
	struct lev_err err = LEV_ERR_INIT;
	char cwd[4096];
	_cleanup_free_ char *run = NULL, *safe = NULL;

	if (!*d->input) {
		snprintf(d->toast, sizeof(d->toast), "type the task first");
		return;
	}
	if (!getcwd(cwd, sizeof(cwd)) ||
	    lev_spawn_detached(agent, cwd, d->input, false, &run, &err) < 0) {
		_cleanup_free_ char *why = safe_cell(err.msg[0] ? err.msg : strerror(errno));

		snprintf(d->toast, sizeof(d->toast), "not started: %s", why);
		lev_err_clear(&err);
		return;
	}
	agents_free(d);
	safe = safe_cell(run);
	poll_runs(d);
	open_run(d, run, VIEW_DETAIL);
	snprintf(d->toast, sizeof(d->toast), "started run %s", safe);
}

static void draw_new(const struct dash *d)
{
	char cwd[4096];
	_cleanup_free_ char *where = safe_cell(getcwd(cwd, sizeof(cwd)) ? cwd : "?");
	_cleanup_free_ char *task = safe_cell(d->input);
	_cleanup_free_ char *head = xasprintf(" start a run in %s", where);
	int rows = LINES - 9, first;

	attron(A_BOLD);
	put(1, 1, head);
	attroff(A_BOLD);
	put(2, 2, d->in_task ? "the agent:" : "pick the agent (Up/Down):");
	if (rows < 1)
		rows = 1;
	first = (int)d->agent_sel >= rows ? (int)d->agent_sel - rows + 1 : 0;
	for (int i = 0; i < rows && (size_t)(first + i) < d->n_agents; i++) {
		const struct lev_agent_info *ag = &d->agents[first + i];
		_cleanup_free_ char *name = safe_cell(ag->name);
		_cleanup_free_ char *line = xasprintf("%s %s%s%s", (size_t)(first + i) ==
						      d->agent_sel ? ">" : " ", name,
						      ag->error ? "   (does not load: " : "",
						      ag->error ? "see lev validate)" : "");

		if ((size_t)(first + i) == d->agent_sel)
			attron(A_REVERSE);
		put(3 + i, 3, line);
		attroff(A_REVERSE);
	}
	put(LINES - 5, 2, d->in_task ? "the task (Enter starts the run):" : "the task (Tab or Enter to "
										"type it):");
	{
		_cleanup_free_ char *field = xasprintf("task> %s%s", task, d->in_task ? "_" : "");

		if (d->in_task)
			attron(A_BOLD);
		put(LINES - 4, 3, field);
		attroff(A_BOLD);
	}
}

static void draw(struct dash *d)
{
	static const char *const keys[] = {
		[VIEW_LIST] = "Enter open  i answer  n new run  p/r pause/resume  x cancel  / filter  "
			      "? help  q quit",
		[VIEW_DETAIL] = "i answer  p/r pause/resume  x cancel  Up/Down/PgUp/PgDn scroll  Esc back  "
				"? help",
		[VIEW_ANSWER] = "",
		[VIEW_NEW] = "",
	};

	erase();
	draw_header(d);
	if (d->help) {
		for (int i = 0; help_text[i]; i++)
			put(2 + i, 2, help_text[i]);
		draw_footer(d, "any key closes the help");
	} else {
		if (d->view == VIEW_LIST)
			draw_list(d);
		else if (d->view == VIEW_NEW)
			draw_new(d);
		else
			draw_detail(d);
		draw_footer(d, d->view == VIEW_ANSWER ? answer_keys(d->question)
			       : d->view != VIEW_NEW ? keys[d->view]
			       : d->in_task	      ? "Enter start the run  Tab/Esc back to the agents"
						      : "Up/Down pick  Tab/Enter to the task  Esc close, "
							"nothing started");
	}
	refresh();
}

/* ---- keys ---- */

#define KEY_CTRL_C 3
#define KEY_ESC 27

static bool is_enter(int ch)
{
	return ch == '\n' || ch == '\r' || ch == KEY_ENTER;
}

static bool is_backspace(int ch)
{
	return ch == KEY_BACKSPACE || ch == 127 || ch == 8;
}

/* Drop the last character (UTF-8) of S. */
static void drop_last(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && ((unsigned char)s[n - 1] & 0xc0) == 0x80)
		n--;
	s[n ? n - 1 : 0] = '\0';
}

/* A key while a prompt takes the keyboard. */
static void key_prompt(struct dash *d, int ch)
{
	size_t n = strlen(d->input);
	enum prompt p = d->prompt;

	if (p == PROMPT_CANCEL) {
		d->prompt = PROMPT_NONE;
		if (ch == 'y')
			run_op(d, "cancel", d->cancel);
		else
			snprintf(d->toast, sizeof(d->toast), "not cancelled");
		return;
	}
	if (ch == KEY_ESC) {
		d->prompt = PROMPT_NONE;
		if (p == PROMPT_FILTER)
			d->filter[0] = '\0';
	} else if (is_enter(ch)) {
		d->prompt = PROMPT_NONE;
		if (p == PROMPT_TEXT && d->question)
			answer(d, NULL, NULL, d->input, -1);
	} else if (is_backspace(ch)) {
		drop_last(d->input);
	} else if (ch >= 0x20 && ch <= 0xff && ch != 0x7f && n + 1 < sizeof(d->input) &&
		   (p != PROMPT_FILTER || n + 1 < sizeof(d->filter))) {
		d->input[n] = (char)ch;
		d->input[n + 1] = '\0';
	}
	if (p == PROMPT_FILTER && d->prompt == PROMPT_FILTER) {
		/* the input was kept shorter than the filter */
		memcpy(d->filter, d->input, strnlen(d->input, sizeof(d->filter) - 1));
		d->filter[strnlen(d->input, sizeof(d->filter) - 1)] = '\0';
	}
	if (p == PROMPT_FILTER) {
		_cleanup_free_ char *keep = selected_key(d);

		refilter(d, keep);
	}
}

static void start_prompt(struct dash *d, enum prompt p)
{
	d->prompt = p;
	d->input[0] = '\0';
	if (p == PROMPT_FILTER)
		snprintf(d->input, sizeof(d->input), "%s", d->filter);
}

/* Keys the list, the detail and the answer view share: on run ID. */
static bool key_run(struct dash *d, int ch, const char *id)
{
	if (!id)
		return false;
	if (ch == 'p' || ch == 'r') {
		run_op(d, ch == 'p' ? "pause" : "resume", id);
	} else if (ch == 'x') {
		free(d->cancel);
		d->cancel = xstrdup(id);
		start_prompt(d, PROMPT_CANCEL);
	} else if (ch == 'i') {
		const json_t *r = run_by_id(d, id);
		_cleanup_free_ char *safe = safe_cell(id);

		if (r && run_asks(r))
			open_answer(d, id);
		else
			snprintf(d->toast, sizeof(d->toast), "run %s waits on no answer", safe);
	} else {
		return false;
	}
	return true;
}

/* Scroll keys of a pane of lines. */
static bool key_scroll(struct dash *d, int ch)
{
	size_t page = LINES > 8 ? (size_t)LINES - 8 : 1;

	if (ch == KEY_UP || ch == 'k' || ch == KEY_PPAGE) {
		d->follow = false;
		d->scroll -= d->scroll < (ch == KEY_PPAGE ? page : 1) ? d->scroll
			     : (ch == KEY_PPAGE ? page : 1);
	} else if (ch == KEY_DOWN || ch == 'j' || ch == KEY_NPAGE) {
		d->follow = false;
		d->scroll += ch == KEY_NPAGE ? page : 1;	/* draw_lines() stops it at the end */
	} else if (ch == KEY_HOME || ch == 'b') {
		d->follow = false;
		d->scroll = 0;
	} else if (ch == KEY_END || ch == 'e') {
		d->follow = true;
	} else {
		return false;
	}
	return true;
}

static void key_list(struct dash *d, int ch)
{
	const json_t *r = selected(d);

	if ((ch == KEY_UP || ch == 'k') && d->sel > 0)
		d->sel--;
	else if ((ch == KEY_DOWN || ch == 'j') && d->sel + 1 < d->nrows)
		d->sel++;
	else if (ch == KEY_HOME || ch == 'g')
		d->sel = 0;
	else if ((ch == KEY_END || ch == 'G') && d->nrows)
		d->sel = d->nrows - 1;
	else if (is_enter(ch) && r)
		open_run(d, lev_json_str(r, "id"), VIEW_DETAIL);
	else if (ch == '/')
		start_prompt(d, PROMPT_FILTER);
	else if (ch == KEY_ESC) {
		_cleanup_free_ char *keep = selected_key(d);

		d->filter[0] = '\0';
		refilter(d, keep);
	} else if (ch == 'n')
		open_new(d);
	else
		(void)key_run(d, ch, r ? lev_json_str(r, "id") : NULL);
}

/* The new-run screen: pick the agent, type the task, Enter starts it; Esc starts nothing. */
static void key_new(struct dash *d, int ch)
{
	size_t n = strlen(d->input);

	if (!d->in_task) {
		if ((ch == KEY_UP || ch == 'k') && d->agent_sel > 0)
			d->agent_sel--;
		else if ((ch == KEY_DOWN || ch == 'j') && d->agent_sel + 1 < d->n_agents)
			d->agent_sel++;
		else if (ch == '\t' || is_enter(ch))
			d->in_task = true;
		else if (ch == KEY_ESC) {
			agents_free(d);
			d->view = VIEW_LIST;
			snprintf(d->toast, sizeof(d->toast), "no run started");
		}
	} else if (ch == KEY_ESC || ch == '\t') {
		d->in_task = false;
	} else if (is_enter(ch)) {
		start_new(d);
	} else if (is_backspace(ch)) {
		drop_last(d->input);
	} else if (ch >= 0x20 && ch <= 0xff && ch != 0x7f && n + 1 < sizeof(d->input)) {
		d->input[n] = (char)ch;
		d->input[n + 1] = '\0';
	}
}

/* The answer view: the answers lev respond takes, by key. */
static void key_answer(struct dash *d, int ch)
{
	if (ch == KEY_ESC) {
		d->view = VIEW_DETAIL;
		d->follow = true;
	} else if (ch == 'a' || ch == 'y') {
		answer(d, "approve", NULL, NULL, -1);
	} else if (ch == 's') {
		answer(d, "approve", "stage", NULL, -1);
	} else if (ch == 'S') {
		answer(d, "approve", "run", NULL, -1);
	} else if (ch == 'd' || ch == 'n') {
		answer(d, "deny", NULL, NULL, -1);
	} else if (ch >= '0' && ch <= '9') {
		answer(d, NULL, NULL, NULL, ch - '0');
	} else if (ch == 't' || is_enter(ch)) {
		start_prompt(d, PROMPT_TEXT);
	} else if (!key_scroll(d, ch)) {
		(void)key_run(d, ch, d->run);
	}
}

/* One key; false: quit. */
static bool key(struct dash *d, int ch)
{
	if (ch == KEY_CTRL_C)
		return false;
	d->toast[0] = '\0';
	if (d->prompt != PROMPT_NONE) {
		key_prompt(d, ch);
		return true;
	}
	if (d->help) {
		d->help = false;
		return true;
	}
	if (d->view == VIEW_NEW) {
		if (ch == KEY_F(1))
			d->help = true;
		else
			key_new(d, ch);	/* ? and q are typed here */
		return true;
	}
	if (ch == '?' || ch == KEY_F(1)) {
		d->help = true;
		return true;
	}
	if (d->view == VIEW_LIST) {
		if (ch == 'q')
			return false;
		key_list(d, ch);
	} else if (d->view == VIEW_ANSWER) {
		key_answer(d, ch);
	} else if (ch == KEY_ESC) {
		d->view = VIEW_LIST;
	} else if (!key_scroll(d, ch)) {
		(void)key_run(d, ch, d->run);
	}
	return true;
}

/* ---- the loop ---- */

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void dash_loop(struct dash *d)
{
	long last = 0;

	while (!stop) {
		int ch;

		if (now_ms() - last >= POLL_MS) {
			poll_runs(d);
			if (d->view != VIEW_LIST && d->run)
				read_events(d);
			question_gone(d);
			last = now_ms();
		}
		draw(d);
		ch = getch();
		if (ch == ERR || ch == KEY_RESIZE)
			continue;	/* a resize: drawn again at the new size */
		if (!key(d, ch))
			break;
	}
}

static void dash_release(struct dash *d)
{
	json_decref(d->runs);
	json_decref(d->question);
	free(d->rows);
	free(d->down_why);
	free(d->run);
	free(d->cancel);
	lines_clear(&d->events);
	lines_clear(&d->shown);
	free(d->shown_text);
	agents_free(d);
	lev_run_events_close(&d->ev);
	lev_buf_release(&d->ev.part);
}

int cmd_dash(int argc, char **argv, struct lev_ctx *ctx)
{
	struct dash d = { .ctx = ctx, .ev = LEV_RUN_EVENTS_INIT, .follow = true,
			  .events.max = EVENT_LINES_MAX };
	struct sigaction sa = { .sa_handler = on_stop };
	struct lev_err err = LEV_ERR_INIT;
	FILE *out;
	SCREEN *scr;
	int fd;

	if (argc > 1)
		return lev_usage_error("dash", "unexpected argument '%s'", argv[1]);
	if (lev_setup(ctx, CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;	/* the runs' records are read from it */
	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
		return lev_fail("lev dash draws on a terminal: stdin and stdout must be one");
	if (lev_cursesapi_load(&err) < 0) {
		lev_fail("%s", err.msg);
		lev_err_clear(&err);
		return LEV_EXIT_FAIL;
	}
	/* the screen is drawn on fd 1 itself: stdout is filtered (termout.h) */
	fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!out) {
		if (fd >= 0)
			close(fd);
		return lev_fail("cannot open the terminal: %s", strerror(errno));
	}
	setlocale(LC_CTYPE, "");
	scr = newterm(NULL, out, stdin);
	if (!scr) {
		fclose(out);
		return lev_fail("cannot draw on this terminal (TERM='%s')",
				getenv("TERM") ? getenv("TERM") : "");
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	raw();
	noecho();
	keypad(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	timeout(POLL_MS);
	dash_loop(&d);
	endwin();
	delscreen(scr);
	fclose(out);
	dash_release(&d);
	return LEV_EXIT_OK;
}
