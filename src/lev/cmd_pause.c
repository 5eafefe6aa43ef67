/*
 * cmd_pause.c - lev pause RUN, lev resume RUN.
 */
#include <stdio.h>

#include "lev/cmd.h"
#include "liblev/daemon/proto.h"

const char lev_usage_pause[] =
	"usage: lev pause RUN\n"
	"\n"
	"Pause a run the daemon holds: it finishes the step it is in (a model turn or\n"
	"a tool call is never cut) and holds before its next one; 'lev ps' shows it\n"
	"'paused'.  'lev resume RUN' lets it go on.\n";

const char lev_usage_resume[] =
	"usage: lev resume RUN\n"
	"\n"
	"Let a run paused with 'lev pause' go on.\n";

/* OP (pause, resume) for the run named in ARGV[1]. */
static int run_op(const char *name, const char *op, int argc, char **argv)
{
	json_t *req, *reply = NULL;

	if (argc < 2)
		return lev_usage_error(name, "which run? give its RUN id");
	if (argc > 2)
		return lev_usage_error(name, "unexpected argument '%s'", argv[2]);
	if (argv[1][0] == '-')
		return lev_usage_error(name, "unknown option '%s'", argv[1]);
	req = lev_proto_request(op);
	json_object_set_new(req, "run", json_string(argv[1]));
	if (lev_daemon_call(req, &reply) != LEV_EXIT_OK)
		return LEV_EXIT_FAIL;
	json_decref(reply);
	return LEV_EXIT_OK;
}

int cmd_pause(int argc, char **argv, struct lev_ctx *ctx)
{
	int rc = run_op("pause", "pause", argc, argv);

	(void)ctx;
	if (rc == LEV_EXIT_OK)
		printf("lev: run %s pauses at its next step; 'lev resume %s' lets it go on\n",
		       argv[1], argv[1]);
	return rc;
}

int cmd_resume(int argc, char **argv, struct lev_ctx *ctx)
{
	int rc = run_op("resume", "resume", argc, argv);

	(void)ctx;
	if (rc == LEV_EXIT_OK)
		printf("lev: run %s resumed\n", argv[1]);
	return rc;
}
