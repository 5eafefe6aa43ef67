/*
 * cmd_approvals.c - lev approvals safe [--agent NAME] [--json]: what runs
 * without an approval prompt, and which file put each entry there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lev/cmd.h"
#include "lev/report.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/agentstore.h"
#include "liblev/conf/blueprint.h"
#include "liblev/policy/perm-config.h"

const char lev_usage_approvals[] =
	"usage: lev approvals safe [--agent NAME] [--json]\n"
	"\n"
	"Print what runs without an approval prompt: every safe-list key in force\n"
	"(shell:PREFIX for a command line, or a tool name), the table it comes from\n"
	"and the file that holds that table: lev's built-in list, [safe_commands] in\n"
	"your config.toml, and with --agent the installed agent's\n"
	"[agent_safe_commands.NAME] and, where your config honours it, the agent's\n"
	"own [safe_commands].  Nothing else is persisted: an approval given at a\n"
	"prompt lasts for its run (or stage) only.\n"
	"\n"
	"  --agent NAME  include that installed agent's entries\n"
	"  --json        print {safe: [{key, source, file}], warnings: [...]}\n";

/* The file the table SOURCE was read from (NULL: lev's built-in list). */
static const char *source_file(const char *source, const struct lev_config *cfg,
			       const struct lev_blueprint *bp)
{
	if (!strncmp(source, "blueprint ", 10))
		return bp ? bp->path : NULL;
	if (source[0] == '[')
		return cfg->path ? cfg->path : "config.toml (not written: defaults)";
	return NULL;
}

static int parse(int argc, char **argv, const char **agent, bool *json)
{
	if (argc < 2)
		return lev_usage_error("approvals", "which listing? 'safe' is the one there is");
	if (strcmp(argv[1], "safe"))
		return lev_usage_error("approvals", "unknown subcommand '%s' (there is only "
				       "'safe': approvals given at a prompt are not kept)",
				       argv[1]);
	for (int k = 2; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			*json = true;
		else if (!strcmp(argv[k], "--agent") && k + 1 < argc)
			*agent = argv[++k];
		else if (!strcmp(argv[k], "--agent"))
			return lev_usage_error("approvals", "--agent needs a NAME");
		else
			return lev_usage_error("approvals", "unknown argument '%s'", argv[k]);
	}
	return 0;
}

int cmd_approvals(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_blueprint *bp = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_perm_setup s;
	_cleanup_free_ char *path = NULL;
	const char *agent = NULL;
	bool json = false;
	json_t *arr = NULL, *warn = NULL;
	int r = parse(argc, argv, &agent, &json);

	if (r)
		return r;
	if (lev_setup(ctx, CMD_NEEDS_CONFIG) < 0)
		return LEV_EXIT_FAIL;
	if (agent) {
		if (lev_agentstore_resolve(agent, &path, &err) < 0 ||
		    lev_blueprint_load(path, &bp, &err) < 0)
			return lev_fail("%s", err.msg);
		lev_agentstore_bind(bp);
	}
	lev_perm_safe_init(&s, &ctx->cfg, bp);
	if (json) {
		arr = json_array();
		warn = json_array();
	}
	for (size_t i = 0; i < s.in.n_safe; i++) {
		const struct lev_perm_safe *e = &s.in.safe[i];
		const char *file = source_file(e->source, &ctx->cfg, bp);

		if (json)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s?}", "key", e->key,
							     "source", e->source, "file", file));
		else
			printf("%-40s %s%s%s\n", e->key, e->source, file ? "  " : "",
			       file ? file : "");
	}
	for (char **w = s.warnings; w && *w; w++) {
		if (json)
			json_array_append_new(warn, json_string(*w));
		else
			lev_warn("%s", *w);
	}
	if (json)
		lev_report_print_json(json_pack("{s:o, s:o}", "safe", arr, "warnings", warn));
	else if (!s.in.n_safe)
		printf("nothing runs without a prompt: the safe list is empty\n");
	lev_perm_setup_release(&s);
	lev_blueprint_free(bp);
	return LEV_EXIT_OK;
}
