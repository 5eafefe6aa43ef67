/*
 * cmd_add.c - lev add DIR [--force]: install a blueprint directory
 * atomically and say, in plain words, what it asks for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lev/cmd.h"
#include "lev/report.h"
#include "liblev/conf/agentstore.h"
#include "liblev/base/cleanup.h"
#include "liblev/policy/lint.h"
#include "liblev/base/strv.h"

const char lev_usage_add[] =
	"usage: lev add DIR [--force]\n"
	"\n"
	"Install the blueprint directory DIR (or the directory of an agent.leviath\n"
	"file) as <data root>/agents/<name>, atomically, and say in plain words what it\n"
	"asks for: tools it pre-approves, the sandbox it requests or declines, read\n"
	"paths declared and granted, commands it runs at start, script tools it ships.\n"
	"Links, devices and oversized trees are refused; nothing is left half-installed.\n"
	"A fingerprint of its files is recorded: your per-agent grants apply to the\n"
	"installed agent only while its files match (lev list shows it).\n"
	"\n"
	"  -f, --force   replace an installed agent of the same name\n";

int cmd_add(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_blueprint *bp = NULL;
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *workdir = NULL;
	_cleanup_free_ char *home = NULL;
	char **lines = NULL, **l;
	const char *src = NULL;
	bool force = false, replaced = false, opts_done = false;
	int i;

	for (i = 1; i < argc; i++) {
		if (!opts_done && (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f")))
			force = true;
		else if (!opts_done && !strcmp(argv[i], "--"))
			opts_done = true;
		else if (!opts_done && argv[i][0] == '-' && argv[i][1])
			return lev_usage_error("add", "unknown option '%s'", argv[i]);
		else if (src)
			return lev_usage_error("add", "too many arguments");
		else
			src = argv[i];
	}
	if (!src)
		return lev_usage_error("add", "which blueprint? give its directory");
	/* a config we cannot read means we cannot say what is granted: stop first */
	if (lev_setup(ctx, CMD_NEEDS_CONFIG) < 0)
		return LEV_EXIT_FAIL;
	if (lev_agentstore_install(src, force, &bp, &replaced, &err) < 0)
		return lev_fail("%s", err.msg);
	printf("%s '%s' %s in %s\n", replaced ? "replaced" : "installed", bp->name, bp->version,
	       bp->dir);
	{
		char fp[LEV_AGENT_FINGERPRINT_LEN + 1];

		/* per-agent grants in the config follow this fingerprint */
		if (lev_agentstore_fingerprint(bp->dir, fp, &err) == 0)
			printf("fingerprint %s: your per-agent grants for '%s' apply while its "
			       "files match\n", fp, bp->name);
		else
			lev_warn("%s", err.msg);
	}
	lev_report_lint_dirs(&workdir, &home);
	lev_lint_inventory(bp, &ctx->cfg, workdir, home, &lines);
	if (lines) {
		printf("'%s' asks for the following; review it before running it:\n", bp->name);
		for (l = lines; *l; l++)
			printf("  - %s\n", *l);
	} else {
		printf("'%s' asks for nothing beyond the defaults\n", bp->name);
	}
	printf("inspect it with: lev validate %s\n", bp->name);
	lev_strv_free(lines);
	lev_blueprint_free(bp);
	return LEV_EXIT_OK;
}
