/*
 * cmd_remove.c - lev remove NAME
 */
#include <stdio.h>
#include <string.h>

#include "lev/cmd.h"
#include "liblev/conf/agentstore.h"

const char lev_usage_remove[] =
	"usage: lev remove NAME\n"
	"\n"
	"Remove the installed agent NAME.\n";

int cmd_remove(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_err err = LEV_ERR_INIT;
	const char *name = NULL;
	bool opts_done = false;
	int i;

	(void)ctx;
	for (i = 1; i < argc; i++) {
		if (!opts_done && !strcmp(argv[i], "--"))
			opts_done = true;
		else if (!opts_done && argv[i][0] == '-' && argv[i][1])
			return lev_usage_error("remove", "unknown option '%s'", argv[i]);
		else if (name)
			return lev_usage_error("remove", "too many arguments");
		else
			name = argv[i];
	}
	if (!name)
		return lev_usage_error("remove", "which agent? give its name");
	if (lev_agentstore_remove(name, &err) < 0)
		return lev_fail("%s", err.msg);
	printf("removed '%s'\n", name);
	return LEV_EXIT_OK;
}
