/*
 * cmd_stages.c - lev stages RUN [--regions] [--json]: a run's per-stage
 * token ledger, from the model_response events of its record.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "lev/report.h"
#include "lev/runevents.h"
#include "liblev/base/util.h"
#include "liblev/daemon/proto.h"

const char lev_usage_stages[] =
	"usage: lev stages RUN [--regions] [--tree] [--json]\n"
	"\n"
	"The run's per-stage token ledger, from its record (no daemon needed): each\n"
	"stage entered, in order (a stage entered again is one row), how it ended\n"
	"(complete, or error, max_iterations, stuck, cancelled ...; active while it\n"
	"runs), and the prompt and output tokens its model\n"
	"requests reported.  lev's providers report no cache reads or writes: those\n"
	"columns show '-' (null in --json).\n"
	"\n"
	"  --regions  also each stage's context high-water mark: the largest window\n"
	"             a request of it carried (lev records the whole window, not each\n"
	"             region's share)\n"
	"  --tree     the run and its sub-agents (spawn_agent children, fan_out\n"
	"             workers, theirs), each with its status and tokens, and the\n"
	"             totals with every descendant's, from their sub-records\n"
	"  --json     {run, stages: [{stage, status, iterations, prompt_tokens,\n"
	"             output_tokens, cache_read_tokens, cache_write_tokens,\n"
	"             context_high_water}], total: {prompt_tokens, output_tokens}}\n"
	"             with --tree: {run, id, kind, tokens, total: {prompt_tokens,\n"
	"             output_tokens, agents}, children: [{id, kind, agent, status,\n"
	"             error, tokens, total, children}]}\n";

/* How deep --tree follows sub-records (a run's sub-agents nest at most 8 deep). */
#define TREE_DEPTH_MAX 16

/* The row of STAGE in ROWS (made when missing). */
static json_t *row_of(json_t *rows, const char *stage)
{
	size_t i;
	json_t *r;

	json_array_foreach(rows, i, r)
		if (lev_streq(lev_json_str(r, "stage"), stage))
			return r;
	r = json_pack("{s:s, s:s, s:i, s:i, s:i, s:n, s:n, s:i}", "stage", stage, "status",
		      "active", "iterations", 0, "prompt_tokens", 0, "output_tokens", 0,
		      "cache_read_tokens", "cache_write_tokens", "context_high_water", 0);
	json_array_append_new(rows, r);
	return r;
}

/*
 * A stage's end (run.md's stage_finished "end") as the ledger's status: an
 * end that is a failure shows as itself, every other end as "complete".
 */
static const char *end_status(const char *end)
{
	static const char *const failed[] = { "error", "max_iterations", "stuck", "aborted",
					      "cancelled", NULL };

	for (size_t i = 0; end && failed[i]; i++)
		if (!strcmp(end, failed[i]))
			return failed[i];
	return end ? "complete" : "finished";
}

static void add_int(json_t *o, const char *key, json_int_t v)
{
	json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) + v));
}

static json_t *ledger(const json_t *events)
{
	json_t *rows = json_array(), *ev;
	size_t i;

	json_array_foreach(events, i, ev) {
		const char *kind = lev_json_str(ev, "event"), *stage = lev_json_str(ev, "stage");
		json_t *r;

		if (!stage)
			continue;
		r = row_of(rows, stage);
		if (lev_streq(kind, "model_response")) {
			add_int(r, "prompt_tokens",
				json_integer_value(json_object_get(ev, "prompt_tokens")));
			add_int(r, "output_tokens",
				json_integer_value(json_object_get(ev, "completion_tokens")));
		} else if (lev_streq(kind, "model_request")) {
			json_int_t c = json_integer_value(json_object_get(ev, "context_tokens"));

			add_int(r, "iterations", 1);
			if (c > json_integer_value(json_object_get(r, "context_high_water")))
				json_object_set_new(r, "context_high_water", json_integer(c));
		} else if (lev_streq(kind, "stage_finished")) {
			json_object_set_new(r, "status", json_string(end_status(lev_json_str(ev,
											      "end"))));
		} else if (lev_streq(kind, "stage_started")) {
			json_object_set_new(r, "status", json_string("active"));
		}
	}
	return rows;
}

/* The prompt and output tokens of ROWS (a ledger), as {prompt_tokens, output_tokens}. */
static json_t *rows_total(const json_t *rows)
{
	json_int_t tp = 0, to = 0;
	json_t *r;
	size_t i;

	json_array_foreach(rows, i, r) {
		tp += json_integer_value(json_object_get(r, "prompt_tokens"));
		to += json_integer_value(json_object_get(r, "output_tokens"));
	}
	return json_pack("{s:I,s:I}", "prompt_tokens", tp, "output_tokens", to);
}

/* The tokens of EVENTS: its ledger's total, as `lev stages` shows it. */
static json_t *tokens_of(const json_t *events)
{
	json_t *rows = ledger(events), *t = rows_total(rows);

	json_decref(rows);
	return t;
}

/* The sub-agents EVENTS started, by their child_started / child_finished events: a new array. */
static json_t *kids_of(const json_t *events)
{
	json_t *kids = json_object(), *list = json_array(), *ev, *k;
	const char *id;
	size_t i;

	json_array_foreach(events, i, ev) {
		const char *what = lev_json_str(ev, "event");
		bool done = lev_streq(what, "child_finished");

		if ((!done && !lev_streq(what, "child_started")) || !(id = lev_json_str(ev, "child")))
			continue;
		if (!(k = json_object_get(kids, id))) {
			k = json_pack("{s:s,s:O*,s:O*,s:s,s:n,s:n}", "id", id, "kind",
				      json_object_get(ev, "kind"), "agent", json_object_get(ev, "agent"),
				      "status", "running", "error", "record");
			json_object_set_new(kids, id, k);
			json_array_append(list, k);
		}
		if (done) {
			json_object_set_new(k, "status", json_string(json_is_true(json_object_get(
						ev, "ok")) ? "complete" : "error"));
			json_object_set(k, "error", json_object_get(ev, "error"));
			json_object_set(k, "record", json_object_get(ev, "record"));
		}
	}
	json_decref(kids);
	return list;
}

static void total_add(json_t *total, const json_t *add, const char *key)
{
	json_object_set_new(total, key, json_integer(json_integer_value(json_object_get(total, key)) +
						     json_integer_value(json_object_get(add, key))));
}

/*
 * NODE filled from the record directory DIRFD's EVENTS: its tokens, its
 * sub-agents (each read from its sub-record, opened by the last segment of
 * the record its parent named beneath DIRFD's children/, never through a
 * symlink or out of it), and the totals with every descendant's.
 */
static void tree_fill(json_t *node, int dirfd, const json_t *events, unsigned depth)
{
	json_t *kids = kids_of(events), *k, *total;
	int cdir = depth < TREE_DEPTH_MAX ? openat(dirfd, "children", O_RDONLY | O_DIRECTORY |
						  O_NOFOLLOW | O_CLOEXEC) : -1;
	size_t i;

	json_object_set_new(node, "tokens", tokens_of(events));
	total = json_deep_copy(json_object_get(node, "tokens"));
	json_object_set_new(total, "agents", json_integer(1));
	json_array_foreach(kids, i, k) {
		const char *rec = lev_json_str(k, "record"), *name = rec ? strrchr(rec, '/') : NULL;
		int fd = -1;
		json_t *evs = NULL;

		name = name ? name + 1 : rec;
		if (cdir >= 0 && name && *name && *name != '.')
			fd = openat(cdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		evs = fd >= 0 ? lev_run_events_at(fd) : NULL;
		json_object_del(k, "record");
		tree_fill(k, fd, evs ? evs : json_array(), depth + 1);
		if (!evs)	/* running, or no sub-record: its tokens are not known yet */
			json_object_set_new(json_object_get(k, "tokens"), "recorded", json_false());
		json_decref(evs);
		if (fd >= 0)
			close(fd);
		total_add(total, json_object_get(k, "total"), "prompt_tokens");
		total_add(total, json_object_get(k, "total"), "output_tokens");
		total_add(total, json_object_get(k, "total"), "agents");
	}
	if (cdir >= 0)
		close(cdir);
	json_object_set_new(node, "children", kids);
	json_object_set_new(node, "total", total);
}

static void tree_print(const json_t *node, unsigned indent)
{
	const json_t *t = json_object_get(node, "total"), *k;
	size_t i;

	printf("%*s%-*s %-10s %10lld %10lld   (with sub-agents: %lld, %lld)\n", (int)indent, "",
	       (int)(24 - (indent < 20 ? indent : 20)), lev_json_str(node, "id"),
	       lev_json_str(node, "status") ? lev_json_str(node, "status") : "",
	       (long long)json_integer_value(json_object_get(json_object_get(node, "tokens"),
							     "prompt_tokens")),
	       (long long)json_integer_value(json_object_get(json_object_get(node, "tokens"),
							     "output_tokens")),
	       (long long)json_integer_value(json_object_get(t, "prompt_tokens")),
	       (long long)json_integer_value(json_object_get(t, "output_tokens")));
	json_array_foreach(json_object_get(node, "children"), i, k)
		tree_print(k, indent + 2);
}

/* lev stages RUN --tree: the run and its sub-agents, each with its tokens, and the totals. */
static int stages_tree(struct lev_ctx *ctx, const char *run, const json_t *events, bool json)
{
	json_t *node = json_pack("{s:s,s:s,s:s}", "run", run, "id", run, "kind", "run");
	char *dir = lev_path_join(ctx->paths.runs, run);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	free(dir);
	tree_fill(node, fd, events, 0);
	if (fd >= 0)
		close(fd);
	if (json) {
		lev_report_print_json(node);
		return LEV_EXIT_OK;
	}
	printf("%-24s %-10s %10s %10s\n", "AGENT", "STATUS", "PROMPT", "OUTPUT");
	tree_print(node, 0);
	json_decref(node);
	return LEV_EXIT_OK;
}

int cmd_stages(int argc, char **argv, struct lev_ctx *ctx)
{
	const char *run = NULL;
	bool json = false, regions = false, tree = false;
	json_t *events = NULL, *rows, *r, *total;
	size_t i;
	int rc;

	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			json = true;
		else if (!strcmp(argv[k], "--regions"))
			regions = true;
		else if (!strcmp(argv[k], "--tree"))
			tree = true;
		else if (argv[k][0] == '-')
			return lev_usage_error("stages", "unknown option '%s'", argv[k]);
		else if (run)
			return lev_usage_error("stages", "unexpected argument '%s'", argv[k]);
		else
			run = argv[k];
	}
	if (!run)
		return lev_usage_error("stages", "which run? give its RUN id");
	rc = lev_run_events(ctx, run, &events);
	if (rc)
		return rc;
	if (tree) {
		rc = stages_tree(ctx, run, events, json);
		json_decref(events);
		return rc;
	}
	rows = ledger(events);
	json_decref(events);
	total = rows_total(rows);
	if (json) {
		lev_report_print_json(json_pack("{s:s, s:o, s:o}", "run", run, "stages", rows,
						"total", total));
		return LEV_EXIT_OK;
	}
	printf("%-20s %-14s %10s %10s %10s %10s%s\n", "STAGE", "STATUS", "PROMPT", "OUTPUT",
	       "CACHE RD", "CACHE WR", regions ? "   CONTEXT" : "");
	json_array_foreach(rows, i, r) {
		printf("%-20s %-14s %10lld %10lld %10s %10s", lev_json_str(r, "stage"),
		       lev_json_str(r, "status"),
		       (long long)json_integer_value(json_object_get(r, "prompt_tokens")),
		       (long long)json_integer_value(json_object_get(r, "output_tokens")), "-", "-");
		if (regions)
			printf(" %9lld", (long long)json_integer_value(
						 json_object_get(r, "context_high_water")));
		putchar('\n');
	}
	printf("%-20s %-14s %10lld %10lld\n", "TOTAL", "",
	       (long long)json_integer_value(json_object_get(total, "prompt_tokens")),
	       (long long)json_integer_value(json_object_get(total, "output_tokens")));
	json_decref(total);
	json_decref(rows);
	return LEV_EXIT_OK;
}
