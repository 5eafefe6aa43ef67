/*
 * cmd_result.c - lev result RUN [--json]: how a run ended, and its output.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lev/cmd.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/proto.h"
#include "liblev/run/runrecord.h"

const char lev_usage_result[] =
	"usage: lev result RUN [--json | --raw]\n"
	"\n"
	"Print the output of a run the daemon holds.  A run still going, or one\n"
	"that ended without output, failed or was cancelled, says so on stderr and\n"
	"exits 1, so 'lev result RUN > out.txt' never writes an empty answer quietly.\n"
	"\n"
	"  --json    {\"id\", \"agent\", \"status\", \"result\", \"error\", \"record\"}\n"
	"  --raw     the answer alone, byte for byte as submitted (no newline added),\n"
	"            for a pipeline; the failures above are the same\n";

/* The record's result.json (its integrity and sources), or NULL. */
static json_t *record_result(json_t *run)
{
	const char *rec = lev_json_str(run, "record");
	json_t *j = NULL;

	if (rec && lev_runrecord_result_load(rec, &j, NULL) < 0)
		return NULL;
	return j;
}

/* The answer was produced under untrusted influence: say so, with its sources. */
static void say_untrusted(const json_t *res)
{
	size_t i;
	json_t *s;

	if (!lev_streq(lev_json_str(res, "integrity"), "untrusted"))
		return;
	fputs("lev: the answer was produced under untrusted influence (sources: ", stderr);
	json_array_foreach(json_object_get(res, "sources"), i, s)
		fprintf(stderr, "%s%s", i ? ", " : "", json_string_value(s));
	fputs(")\n", stderr);
}

int cmd_result(int argc, char **argv, struct lev_ctx *ctx)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "raw", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *status, *output, *id;
	bool json = false, raw = false;
	json_t *req, *reply = NULL, *run, *res = NULL;
	int c, rc = LEV_EXIT_FAIL;

	(void)ctx;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c != 'j' && c != 'r')
			return lev_usage_error("result", "unknown option '%s'", argv[optind - 1]);
		json = json || c == 'j';
		raw = raw || c == 'r';
	}
	if (json && raw)
		return lev_usage_error("result", "--json and --raw are two answers: give one");
	if (optind >= argc)
		return lev_usage_error("result", "which run? give its RUN id");
	if (optind + 1 < argc)
		return lev_usage_error("result", "unexpected argument '%s'", argv[optind + 1]);
	req = lev_proto_request("get");
	json_object_set_new(req, "run", json_string(argv[optind]));
	if (lev_daemon_call(req, &reply) != LEV_EXIT_OK)
		return LEV_EXIT_FAIL;
	run = json_object_get(reply, "run");
	status = lev_json_str(run, "status");
	id = lev_json_str(run, "id");
	res = record_result(run);
	/* an output too large for a reply is read from the record (docs/daemon.md) */
	output = json_is_true(json_object_get(run, "result_in_record"))
			 ? lev_json_str(res, "output")
			 : lev_json_str(run, "result");
	if (output && !json_object_get(run, "result"))
		json_object_set_new(run, "result", json_string(output));
	if (json) {
		json_t *out = json_object();
		const char *keys[] = { "id", "agent", "status", "result", "error", "record", NULL };

		for (int i = 0; keys[i]; i++)
			json_object_set(out, keys[i],
					json_object_get(run, keys[i]) ? json_object_get(run, keys[i])
								      : json_null());
		if (json_object_get(res, "integrity")) {
			json_object_set(out, "integrity", json_object_get(res, "integrity"));
			if (json_object_get(res, "sources"))
				json_object_set(out, "sources", json_object_get(res, "sources"));
		}
		json_dumpf(out, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(out);
		rc = lev_streq(status, "complete") ? LEV_EXIT_OK : LEV_EXIT_FAIL;
	} else if (lev_streq(status, "complete") && output && *output) {
		say_untrusted(res);
		fputs(output, stdout);
		if (!raw && output[strlen(output) - 1] != '\n')
			fputc('\n', stdout);
		rc = LEV_EXIT_OK;
	} else if (lev_streq(status, "complete")) {
		lev_fail("run %s completed without output", id);
	} else if (lev_streq(status, "error")) {
		lev_fail("run %s failed: %s", id,
			 lev_json_str(run, "error") ? lev_json_str(run, "error") : "unknown error");
	} else if (lev_streq(status, "cancelled")) {
		lev_fail("run %s was cancelled", id);
	} else {
		lev_fail("run %s has not ended (%s); try again later, or follow it with "
			 "'lev logs -f %s'",
			 id, status ? status : "?", id);
	}
	json_decref(res);
	json_decref(reply);
	return rc;
}
