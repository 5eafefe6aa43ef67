/*
 * cmd_test.c - lev test: refused, with lev's equivalents.
 */
#include <stdio.h>

#include "lev/cmd.h"

const char lev_usage_test[] =
	"usage: lev test [PATH] [-f|--filter PATTERN] [--dry-run]\n"
	"\n"
	"Refused (exit 2): lev has no runner for a blueprint's tests/*.toml cases\n"
	"(one inference each).  lev's equivalents: 'lev check AGENT --tool NAME\n"
	"--args JSON' decides a call through every gate without a provider, and a\n"
	"stage on the script provider (model = { provider = \"script\", script =\n"
	"\"turns.toml\" }) plays a scripted conversation through a real run.\n";

int cmd_test(int argc, char **argv, struct lev_ctx *ctx)
{
	(void)argc;
	(void)argv;
	(void)ctx;
	return lev_usage_error("test", "refused: lev has no runner for tests/*.toml cases; "
			       "'lev check' decides a call without a provider, and the script "
			       "provider plays a conversation through a real run");
}
