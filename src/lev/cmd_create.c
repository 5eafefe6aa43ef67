/*
 * cmd_create.c - lev create NAME [--template default|coder]
 */
#include <stdio.h>
#include <string.h>

#include "lev/cmd.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/scaffold.h"

const char lev_usage_create[] =
	"usage: lev create NAME [-t|--template default|coder]\n"
	"\n"
	"Create the blueprint directory NAME (here) with an agent.leviath from a\n"
	"template that validates: 'default' is one stage that reads, edits and\n"
	"runs commands; 'coder' plans, implements and verifies. Both run their\n"
	"commands in a namespace sandbox with no network. NAME must not exist.\n";

int cmd_create(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *dir = NULL;
	const char *name = NULL, *template = NULL;
	int i;

	(void)ctx;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-t") || !strcmp(argv[i], "--template")) {
			if (++i >= argc)
				return lev_usage_error("create", "%s needs a template name", argv[i - 1]);
			template = argv[i];
		} else if (!strncmp(argv[i], "--template=", 11)) {
			template = argv[i] + 11;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return lev_usage_error("create", "unknown option '%s'", argv[i]);
		} else if (name) {
			return lev_usage_error("create", "too many arguments");
		} else {
			name = argv[i];
		}
	}
	if (!name)
		return lev_usage_error("create", "give the new agent's name");
	if (lev_scaffold_create(".", name, template, &dir, &err) < 0)
		return lev_fail("%s", err.msg);
	printf("created %s/agent.leviath (template '%s')\n", name, template ? template : "default");
	printf("next: lev validate %s, then lev run %s --task \"...\"\n", name, name);
	return LEV_EXIT_OK;
}
