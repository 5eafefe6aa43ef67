/*
 * cmd_attach.c - lev attach RUN [--json]: follow a daemon run.
 */
#include <string.h>

#include "lev/cmd.h"

const char lev_usage_attach[] =
	"usage: lev attach RUN [--json]\n"
	"\n"
	"Follow a run the daemon holds, as 'lev run --follow' follows the run it starts: its\n"
	"latest progress, then everything as it happens, its questions on the\n"
	"terminal (/dev/tty; 'lev respond' from anywhere may answer first), and how it\n"
	"ended.  With --json, one JSON object per event on stdout.  Ctrl-C detaches:\n"
	"the run goes on.\n"
	"Exit status: as 'lev run --follow' (0 complete, 1 error, 130 cancelled); 0 when\n"
	"detached; 1 when the daemon has no such run; 2 usage.\n";

int cmd_attach(int argc, char **argv, struct lev_ctx *ctx)
{
	const char *run = NULL;
	bool json = false;

	(void)ctx;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (argv[i][0] == '-')
			return lev_usage_error("attach", "unknown option '%s'", argv[i]);
		else if (run)
			return lev_usage_error("attach", "unexpected argument '%s'", argv[i]);
		else
			run = argv[i];
	}
	if (!run)
		return lev_usage_error("attach", "which run? give its RUN id");
	return lev_run_attach(run, json);
}
