/*
 * cmd_cancel.c - lev cancel RUN.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lev/cmd.h"
#include "liblev/daemon/client.h"
#include "liblev/daemon/forcecancel.h"
#include "liblev/daemon/proto.h"

const char lev_usage_cancel[] =
	"usage: lev cancel RUN [--force]\n"
	"\n"
	"Cancel a run the daemon holds: its worker stops between steps (a running\n"
	"command is killed) and the run ends 'cancelled'.\n"
	"\n"
	"  --force  end it now: the daemon kills its worker (SIGKILL, also a worker\n"
	"           left by a previous daemon) instead of asking it to stop.  With no\n"
	"           daemon answering, the run is written cancelled in the daemon's\n"
	"           store (the lock held, so none starts meanwhile), so the next\n"
	"           daemon does not resume it; refused while its worker may still\n"
	"           run, or while a daemon holds the lock without answering.\n";

const char lev_usage_kill[] =
	"usage: lev kill RUN\n"
	"\n"
	"Leviath's alias of 'lev cancel': see 'lev help cancel'.\n";

int cmd_cancel(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *req, *reply = NULL;
	const char *run = NULL;
	bool force = false;
	int r;

	(void)ctx;
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--force"))
			force = true;
		else if (argv[k][0] == '-')
			return lev_usage_error("cancel", "unknown option '%s'", argv[k]);
		else if (run)
			return lev_usage_error("cancel", "unexpected argument '%s'", argv[k]);
		else
			run = argv[k];
	}
	if (!run)
		return lev_usage_error("cancel", "which run? give its RUN id");
	req = lev_proto_request("cancel");
	json_object_set_new(req, "run", json_string(run));
	if (force)
		json_object_set_new(req, "force", json_true());
	r = lev_client_call(req, &reply, &err);
	json_decref(req);
	if (r == -ENOENT || r == -ECONNREFUSED) {
		if (!force)
			return lev_fail("%s", err.msg);
		/* no daemon: the run's row is ended where the next daemon reads it */
		lev_err_clear(&err);
		if (lev_force_cancel(run, &err) < 0)
			return lev_fail("%s", err.msg);
		printf("lev: run %s cancelled (no daemon ran: written in its store)\n", run);
		return LEV_EXIT_OK;
	}
	if (r < 0)
		return lev_fail("%s", err.msg);
	json_decref(reply);
	printf("lev: cancelling run %s%s\n", run, force ? " (its worker killed)" : "");
	return LEV_EXIT_OK;
}
