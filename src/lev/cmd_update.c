/*
 * cmd_update.c - lev update: how lev is updated.  lev does not replace its
 * own binary: the one line says who does.
 */
#include <stdio.h>
#include <string.h>

#include "lev/cmd.h"

const char lev_usage_update[] =
	"usage: lev update [--check] [--json] [--yes] [--dry-run] [--channel C]\n"
	"                  [--install-agents]\n"
	"\n"
	"Say how lev is updated, and change nothing: lev never replaces its own\n"
	"binary (a program that rewrites itself is a program an attacker can\n"
	"rewrite).  Update it the way it was installed: your distribution's package\n"
	"manager, or a rebuild from source (meson setup build && ninja -C build\n"
	"install).  Installed agents are updated with 'lev add DIR' again; lev's\n"
	"config needs no migration.  Leviath's flags are accepted and change nothing;\n"
	"--json prints {updated: false, how}.\n";

static const char how[] =
	"lev is updated by whoever installed it: your package manager, or a rebuild "
	"from source (meson setup build && ninja -C build install); lev update changes "
	"nothing";

int cmd_update(int argc, char **argv, struct lev_ctx *ctx)
{
	bool json = false;

	(void)ctx;
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			json = true;
		else if (!strcmp(argv[k], "--channel")) {
			if (++k >= argc)
				return lev_usage_error("update", "--channel needs a value");
		} else if (strcmp(argv[k], "--check") && strcmp(argv[k], "--yes") &&
			   strcmp(argv[k], "--dry-run") && strcmp(argv[k], "--install-agents"))
			return lev_usage_error("update", "unknown argument '%s'", argv[k]);
	}
	if (json)
		printf("{\"updated\": false, \"how\": \"%s\"}\n", how);
	else
		printf("%s\n", how);
	return LEV_EXIT_OK;
}
