/*
 * cmd_stages.c - lev stages RUN [--regions] [--json]: a run's per-stage
 * token ledger, from the model_response events of its record.
 */
#include <stdio.h>
#include <string.h>

#include "lev/cmd.h"
#include "lev/report.h"
#include "lev/runevents.h"
#include "liblev/base/util.h"
#include "liblev/daemon/proto.h"

const char lev_usage_stages[] =
	"usage: lev stages RUN [--regions] [--json]\n"
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
	"  --json     {run, stages: [{stage, status, iterations, prompt_tokens,\n"
	"             output_tokens, cache_read_tokens, cache_write_tokens,\n"
	"             context_high_water}], total: {prompt_tokens, output_tokens}}\n";

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

int cmd_stages(int argc, char **argv, struct lev_ctx *ctx)
{
	const char *run = NULL;
	bool json = false, regions = false;
	json_int_t tp = 0, to = 0;
	json_t *events = NULL, *rows, *r;
	size_t i;
	int rc;

	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			json = true;
		else if (!strcmp(argv[k], "--regions"))
			regions = true;
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
	rows = ledger(events);
	json_decref(events);
	json_array_foreach(rows, i, r) {
		tp += json_integer_value(json_object_get(r, "prompt_tokens"));
		to += json_integer_value(json_object_get(r, "output_tokens"));
	}
	if (json) {
		lev_report_print_json(json_pack("{s:s, s:o, s:{s:I, s:I}}", "run", run, "stages",
						rows, "total", "prompt_tokens", (json_int_t)tp,
						"output_tokens", (json_int_t)to));
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
	printf("%-20s %-14s %10lld %10lld\n", "TOTAL", "", (long long)tp, (long long)to);
	json_decref(rows);
	return LEV_EXIT_OK;
}
