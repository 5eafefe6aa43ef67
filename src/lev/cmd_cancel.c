/*
 * cmd_cancel.c - lev cancel RUN.
 */
#include <stdio.h>

#include "lev/cmd.h"
#include "liblev/daemon/proto.h"

const char lev_usage_cancel[] =
	"usage: lev cancel RUN\n"
	"\n"
	"Cancel a run the daemon holds: its worker stops between steps (a running\n"
	"command is killed) and the run ends 'cancelled'.\n";

const char lev_usage_kill[] =
	"usage: lev kill RUN\n"
	"\n"
	"Leviath's alias of 'lev cancel': see 'lev help cancel'.\n";

int cmd_cancel(int argc, char **argv, struct lev_ctx *ctx)
{
	json_t *req, *reply = NULL;

	(void)ctx;
	if (argc < 2)
		return lev_usage_error("cancel", "which run? give its RUN id");
	if (argc > 2)
		return lev_usage_error("cancel", "unexpected argument '%s'", argv[2]);
	if (argv[1][0] == '-')
		return lev_usage_error("cancel", "unknown option '%s'", argv[1]);
	req = lev_proto_request("cancel");
	json_object_set_new(req, "run", json_string(argv[1]));
	if (lev_daemon_call(req, &reply) != LEV_EXIT_OK)
		return LEV_EXIT_FAIL;
	json_decref(reply);
	printf("lev: cancelling run %s\n", argv[1]);
	return LEV_EXIT_OK;
}
