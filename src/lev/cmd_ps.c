/*
 * cmd_ps.c - lev ps [--all] [--json]: the daemon's runs.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lev/cmd.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/termtext.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/client.h"
#include "liblev/daemon/proto.h"

const char lev_usage_ps[] =
	"usage: lev ps [--all [--page N]] [--json]\n"
	"\n"
	"List the runs the daemon holds, and those that ended in the last five\n"
	"minutes:  RUN AGENT STATUS STAGE ITER TOOLS READS AGE\n"
	"\n"
	"  --all     every ended run the daemon has on record, however old (asked\n"
	"            for in pages, each run listed once)\n"
	"  --page N  runs per page of --all (default 500)\n"
	"  --json    {\"runs\": [...], \"finished\": [...], \"health\": {...}}\n"
	"\n"
	"Each run is a summary: its output is 'lev result RUN'.\n"
	"\n"
	"STATUS is active, idle (started, not yet running), waiting: tool approval,\n"
	"waiting: taint gate, waiting: user prompt, waiting: checkpoint (answer with\n"
	"'lev respond'),\n"
	"waiting: workers(N) / children(N) (its sub-agents are running: each is\n"
	"listed under it, with its pid),\n"
	"complete, cancelled or error: WHY.  READS is granted/declared [read_paths];\n"
	"AGE is how long since the run last moved.\n";

#define CELL_MAX 60
#define NCOLS LEV_PS_NCOLS

/* S as one terminal-safe line of at most CELL_MAX characters (fresh). */
static char *cell(const char *s)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t chars = 0, i;
	char *out;

	lev_termtext_add(&b, s ? s : "", s ? strlen(s) : 0);
	out = lev_buf_detach(&b, NULL);
	for (i = 0; out[i]; i++) {
		if (out[i] == '\n' || out[i] == '\t')
			out[i] = ' ';
		if (((unsigned char)out[i] & 0xc0) != 0x80 && ++chars > CELL_MAX) {
			strcpy(out + i, "...");
			break;
		}
	}
	return out;
}

static size_t width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static char *age(double since)
{
	double d = difftime(time(NULL), (time_t)since);

	if (d < 0)
		d = 0;
	if (d < 120)
		return xasprintf("%.0fs", d);
	if (d < 7200)
		return xasprintf("%.0fm", floor(d / 60));
	if (d < 172800)
		return xasprintf("%.0fh", floor(d / 3600));
	return xasprintf("%.0fd", floor(d / 86400));
}

void lev_ps_row(const json_t *r, char *row[LEV_PS_NCOLS])
{
	const json_t *rp = json_object_get(r, "read_paths");
	const char *status = lev_json_str(r, "status");
	const char *error = lev_json_str(r, "error");
	_cleanup_free_ char *st = NULL;

	if (lev_streq(status, "error") && error)
		st = xasprintf("error: %s", error);
	row[0] = cell(lev_json_str(r, "id"));
	row[1] = cell(lev_json_str(r, "agent"));
	row[2] = cell(st ? st : status);
	row[3] = cell(lev_json_str(r, "stage") && *lev_json_str(r, "stage") ? lev_json_str(r, "stage")
									  : "-");
	row[4] = xasprintf("%lld", (long long)json_integer_value(json_object_get(r, "iteration")));
	row[5] = xasprintf("%lld", (long long)json_integer_value(json_object_get(r, "tools")));
	if (json_integer_value(json_object_get(rp, "declared")) > 0)
		row[6] = xasprintf("%lld/%lld",
				   (long long)json_integer_value(json_object_get(rp, "granted")),
				   (long long)json_integer_value(json_object_get(rp, "declared")));
	else
		row[6] = xstrdup("-");
	row[7] = age(json_number_value(json_object_get(r, "moved")));
}

/* A worker or child of a run, in a row under it: its id, agent, pid and stage. */
void lev_ps_worker_row(const json_t *k, char *row[LEV_PS_NCOLS])
{
	_cleanup_free_ char *id = xasprintf("  %s", lev_json_str(k, "child") ? lev_json_str(k, "child")
									  : "?");
	_cleanup_free_ char *st = xasprintf("running (%s, pid %lld)",
					    lev_streq(lev_json_str(k, "kind"), "worker") ? "worker"
											 : "child",
					    (long long)json_integer_value(json_object_get(k, "pid")));

	row[0] = cell(id);
	row[1] = cell(lev_json_str(k, "agent"));
	row[2] = cell(st);
	row[3] = cell(lev_json_str(k, "stage") ? lev_json_str(k, "stage") : "-");
	for (int c = 4; c < NCOLS; c++)
		row[c] = xstrdup("-");
}

static void print_table(const json_t *runs, const json_t *fin)
{
	static const char *const head[NCOLS] = { "RUN",	  "AGENT", "STATUS", "STAGE",
						 "ITER", "TOOLS", "READS",  "AGE" };
	size_t n = 0, w[NCOLS], nr = json_array_size(runs), i, k;
	char *(*rows)[NCOLS];
	const json_t *r, *x;

	json_array_foreach(runs, i, r)
		n += 1 + json_array_size(json_object_get(r, "workers"));
	n += json_array_size(fin);
	rows = xcalloc(n + 1, sizeof(*rows));
	for (int c = 0; c < NCOLS; c++) {
		rows[0][c] = xstrdup(head[c]);
		w[c] = strlen(head[c]);
	}
	n = 0;
	for (i = 0; i < nr + json_array_size(fin); i++) {
		r = i < nr ? json_array_get(runs, i) : json_array_get(fin, i - nr);
		lev_ps_row(r, rows[++n]);
		/* its workers and children, each a process of its own, under it */
		json_array_foreach(json_object_get(r, "workers"), k, x)
			if (i < nr)
				lev_ps_worker_row(x, rows[++n]);
	}
	for (i = 1; i <= n; i++)
		for (int c = 0; c < NCOLS; c++)
			if (width(rows[i][c]) > w[c])
				w[c] = width(rows[i][c]);
	for (i = 0; i <= n; i++) {
		for (int c = 0; c < NCOLS; c++) {
			if (c == NCOLS - 1)
				printf("%s\n", rows[i][c]);
			else
				printf("%s%*s", rows[i][c], (int)(w[c] - width(rows[i][c]) + 2), "");
			free(rows[i][c]);
		}
	}
	free(rows);
}

/* REPLY's runs, finished and health as one JSON line. */
static int print_reply_json(const json_t *reply)
{
	json_t *out = json_pack("{s:O, s:O, s:O}", "runs", json_object_get(reply, "runs"),
				"finished", json_object_get(reply, "finished"), "health",
				json_object_get(reply, "health"));

	json_dumpf(out, stdout, JSON_COMPACT);
	fputc('\n', stdout);
	json_decref(out);
	return LEV_EXIT_OK;
}

/*
 * --json: the daemon's reply without "v" and "ok", passed through as it
 * came (parsing and re-encoding a thousand runs would cost more than the
 * rest of the command).
 */
static int print_json(json_t *req)
{
	struct lev_err err = LEV_ERR_INIT;
	const size_t skip = strlen(LEV_PROTO_OK_PREFIX);
	_cleanup_free_ char *body = NULL;
	json_t *reply = NULL;
	size_t len;
	int r = lev_client_call_raw(req, &body, &len, &err);

	json_decref(req);
	if (r < 0)
		return lev_fail("%s", err.msg);
	if (!strncmp(body, LEV_PROTO_OK_PREFIX, skip)) {
		putchar('{');
		fwrite(body + skip, 1, len - skip, stdout);
		putchar('\n');
		return LEV_EXIT_OK;
	}
	if (lev_proto_decode(body, len, &reply, &err) < 0)
		return lev_fail("%s", err.msg);
	print_reply_json(reply);
	json_decref(reply);
	return LEV_EXIT_OK;
}


/* Run ids sort by when they were made: a page's cursor moves on when it sorts later. */
static bool run_later(const char *next, const char *after)
{
	return !after || strcmp(next, after) > 0;
}

/* One page of ps --all joined into the reply (*ud): its ended runs after the first page's. */
static void ps_join_page(json_t *reply, void *ud)
{
	json_t **all = ud;

	if (!*all)
		*all = json_incref(reply);
	else
		json_array_extend(json_object_get(*all, "finished"),
				  json_object_get(reply, "finished"));
}

/* ps --all: every page of the ended runs (lev_daemon_pages()), joined into one reply (*out, new). */
static int ps_all_pages(long page, json_t **out)
{
	json_t *req = lev_proto_request("ps"), *all = NULL;
	int r;

	json_object_set_new(req, "all", json_true());
	r = lev_daemon_pages(req, page, "runs", run_later, ps_join_page, &all);
	json_decref(req);
	if (r != LEV_EXIT_OK) {
		json_decref(all);
		return r;
	}
	json_object_del(all, "next");
	*out = all;
	return LEV_EXIT_OK;
}

int cmd_ps(int argc, char **argv, struct lev_ctx *ctx)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "page", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	bool all = false, json = false;
	json_t *req, *reply = NULL;
	const json_t *runs, *fin;
	size_t waiting = 0, i;
	uint64_t page = 500;
	json_t *r;
	int c;

	(void)ctx;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'a')
			all = true;
		else if (c == 'j')
			json = true;
		else if (c == 'p' && (lev_parse_u64(optarg, &page) < 0 || !page || page > 5000))
			return lev_usage_error("ps", "--page takes a number from 1 to 5000");
		else if (c != 'p')
			return lev_usage_error("ps", "unknown option '%s'", argv[optind - 1]);
	}
	if (optind < argc)
		return lev_usage_error("ps", "unexpected argument '%s'", argv[optind]);
	if (all) {
		if (ps_all_pages((long)page, &reply) != LEV_EXIT_OK)
			return LEV_EXIT_FAIL;
		if (json) {
			print_reply_json(reply);
			json_decref(reply);
			return LEV_EXIT_OK;
		}
	} else {
		req = lev_proto_request("ps");
		if (json)
			return print_json(req);
		if (lev_daemon_call(req, &reply) != LEV_EXIT_OK)
			return LEV_EXIT_FAIL;
	}
	runs = json_object_get(reply, "runs");
	fin = json_object_get(reply, "finished");
	if (!json_array_size(runs) && !json_array_size(fin)) {
		printf("no runs\n");
		json_decref(reply);
		return LEV_EXIT_OK;
	}
	print_table(runs, fin);
	json_array_foreach(runs, i, r)
		if (lev_startswith(lev_json_str(r, "status") ? lev_json_str(r, "status") : "",
				   "waiting: ") &&
		    !lev_startswith(lev_json_str(r, "status"), "waiting: workers(") &&
		    !lev_startswith(lev_json_str(r, "status"), "waiting: children("))
			waiting++;
	if (waiting)
		printf("\n%zu run%s an answer: lev respond\n", waiting,
		       waiting == 1 ? " needs" : "s need");
	json_decref(reply);
	return LEV_EXIT_OK;
}
