/*
 * cmd_pack.c - lev pack: refused, with what lev shares blueprints by.
 */
#include <stdio.h>

#include "lev/cmd.h"

const char lev_usage_pack[] =
	"usage: lev pack [PATH] [-o FILE]\n"
	"\n"
	"Refused (exit 2): lev installs a blueprint from its directory ('lev add\n"
	"DIR'), fingerprinting every file it installs, and reads no\n"
	".leviath-bundle archive, so it makes none either.  Share the directory\n"
	"(git, tar); the receiver runs 'lev add DIR', which shows what the\n"
	"blueprint asks for before installing it.\n";

int cmd_pack(int argc, char **argv, struct lev_ctx *ctx)
{
	(void)argc;
	(void)argv;
	(void)ctx;
	return lev_usage_error("pack", "refused: lev installs blueprints from their directory "
			       "('lev add DIR') and reads no .leviath-bundle; share the directory");
}
