/*
 * cmd_context.c - lev context RUN [--json]: how a run's context window went,
 * from its record: each request's window, each eviction, each transform and
 * seed.
 */
#include <stdio.h>
#include <string.h>

#include "lev/cmd.h"
#include "lev/report.h"
#include "lev/runevents.h"
#include "liblev/base/util.h"
#include "liblev/daemon/proto.h"

const char lev_usage_context[] =
	"usage: lev context RUN [--json]\n"
	"\n"
	"How the run's context window went, from its record (no daemon needed), one\n"
	"line an event: each model request with the window it carried (tokens,\n"
	"estimated), each entry evicted from a region (its kind, tokens, label),\n"
	"each transform of a region at a stage edge, each region seeded at spawn.\n"
	"Leviath's --full (each region's contents) is refused: lev's record keeps no\n"
	"region contents; 'lev logs RUN' shows the model's text and every tool call.\n"
	"\n"
	"  --json   {run, history: [the events above, as the record has them]}\n";

static bool context_event(const char *kind)
{
	static const char *const kinds[] = { "seed", "model_request", "context_evicted",
					     "transform", "stage_started", NULL };

	for (size_t i = 0; kinds[i]; i++)
		if (lev_streq(kind, kinds[i]))
			return true;
	return false;
}

static void print_event(const json_t *ev, const char **stage)
{
	const char *kind = lev_json_str(ev, "event");
	long long tok = (long long)json_integer_value(json_object_get(ev, "tokens"));

	if (lev_streq(kind, "stage_started")) {
		*stage = lev_json_str(ev, "stage");
		printf("== stage '%s'\n", *stage ? *stage : "?");
	} else if (lev_streq(kind, "model_request")) {
		printf("  request %lld: window %lld tokens (%s)\n",
		       (long long)json_integer_value(json_object_get(ev, "iteration")),
		       (long long)json_integer_value(json_object_get(ev, "context_tokens")),
		       lev_json_str(ev, "taint") ? lev_json_str(ev, "taint") : "?");
	} else if (lev_streq(kind, "context_evicted")) {
		printf("  evicted from '%s': a %s entry, %lld tokens (%s)\n",
		       lev_json_str(ev, "region"), lev_json_str(ev, "kind"), tok,
		       lev_json_str(ev, "label"));
	} else if (lev_streq(kind, "transform")) {
		printf("  %s of region '%s'\n", lev_json_str(ev, "op"), lev_json_str(ev, "region"));
	} else {
		printf("  seeded region '%s' (%s, %lld bytes)%s\n", lev_json_str(ev, "region"),
		       lev_json_str(ev, "kind"),
		       (long long)json_integer_value(json_object_get(ev, "bytes")),
		       json_is_false(json_object_get(ev, "ok")) ? ": failed" : "");
	}
}

int cmd_context(int argc, char **argv, struct lev_ctx *ctx)
{
	const char *run = NULL, *stage = NULL;
	json_t *events = NULL, *hist, *ev;
	bool json = false;
	size_t i;
	int rc;

	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			json = true;
		else if (!strcmp(argv[k], "--full"))
			return lev_usage_error("context", "--full is refused: lev's record keeps no "
					       "region contents ('lev logs RUN' shows the model's "
					       "text and every tool call)");
		else if (argv[k][0] == '-')
			return lev_usage_error("context", "unknown option '%s'", argv[k]);
		else if (run)
			return lev_usage_error("context", "unexpected argument '%s'", argv[k]);
		else
			run = argv[k];
	}
	if (!run)
		return lev_usage_error("context", "which run? give its RUN id");
	rc = lev_run_events(ctx, run, &events);
	if (rc)
		return rc;
	hist = json_array();
	json_array_foreach(events, i, ev)
		if (context_event(lev_json_str(ev, "event")))
			json_array_append(hist, ev);
	json_decref(events);
	if (json) {
		lev_report_print_json(json_pack("{s:s, s:o}", "run", run, "history", hist));
		return LEV_EXIT_OK;
	}
	json_array_foreach(hist, i, ev)
		print_event(ev, &stage);
	json_decref(hist);
	return LEV_EXIT_OK;
}
