/*
 * cmd_list.c - lev list [--json]: installed agents, their version and
 * description, whether their files still match what `lev add` recorded,
 * and how many of their declared read paths the config grants.
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

const char lev_usage_list[] =
	"usage: lev list [--json] [-f|--filter all|agents|blueprints]\n"
	"\n"
	"List installed agents with their version, description, whether their files\n"
	"still match the fingerprint 'lev add' recorded (per-agent grants in your\n"
	"config apply only then), and how many of the read paths they declare your\n"
	"config grants.\n"
	"\n"
	"  --json   print {agents: [{name, version, description, path, files,\n"
	"           files_note, read_paths: {declared, granted}, error}]}; files is\n"
	"           verified, changed, no-record or unchecked\n"
	"  -f, --filter all|agents|blueprints\n"
	"           Leviath's listing filter: all and agents are the installed\n"
	"           agents; blueprints are bundled ones, and lev bundles none (it\n"
	"           lists nothing and says so); another value is a usage error\n";

/* Agent A as --json lists it; GRANT_ERR set: its grants could not be told. */
static json_t *agent_json(const struct lev_agent_info *a, size_t declared, size_t granted,
			  const char *grant_err)
{
	json_t *o = json_object();
	json_t *rp = json_object();

	json_object_set_new(o, "name", json_string(a->name));
	json_object_set_new(o, "version", a->bp ? lev_report_jstr(a->bp->version) : json_null());
	json_object_set_new(o, "description",
			    a->bp ? lev_report_jstr(a->bp->description) : json_null());
	json_object_set_new(o, "path", lev_report_jstr(a->dir));
	json_object_set_new(o, "files", json_string(lev_agent_identity_name(a->identity)));
	json_object_set_new(o, "files_note", lev_report_jstr(a->identity_note));
	json_object_set_new(rp, "declared", json_integer((json_int_t)declared));
	json_object_set_new(rp, "granted",
			    grant_err ? json_null() : json_integer((json_int_t)granted));
	json_object_set_new(o, "read_paths", rp);
	json_object_set_new(o, "error", a->bp ? (grant_err ? lev_report_jstr(grant_err) : json_null())
					      : lev_report_jstr(a->error));
	return o;
}

int cmd_list(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_agent_info *agents = NULL;
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *workdir = NULL;
	_cleanup_free_ char *home = NULL;
	json_t *arr = NULL;
	bool json = false, bundled_only = false;
	size_t i, n = 0;
	int k;

	for (k = 1; k < argc; k++) {
		const char *f = NULL;

		if (!strcmp(argv[k], "--json"))
			json = true;
		else if (!strcmp(argv[k], "-f") || !strcmp(argv[k], "--filter")) {
			if (++k >= argc)
				return lev_usage_error("list", "%s needs all, agents or blueprints",
						       argv[k - 1]);
			f = argv[k];
		} else if (!strncmp(argv[k], "--filter=", 9))
			f = argv[k] + 9;
		else if (argv[k][0] == '-')
			return lev_usage_error("list", "unknown option '%s'", argv[k]);
		else
			return lev_usage_error("list", "unexpected argument '%s'", argv[k]);
		if (f && strcmp(f, "all") && strcmp(f, "agents") && strcmp(f, "blueprints"))
			return lev_usage_error("list", "unknown filter '%s' (all, agents or "
					       "blueprints)", f);
		if (f)
			bundled_only = !strcmp(f, "blueprints");
	}
	if (bundled_only) {
		/* lev ships no bundled blueprints: there is nothing of that kind to list */
		if (json)
			lev_report_print_json(json_pack("{s:[]}", "agents"));
		else
			printf("lev bundles no blueprints: install one with 'lev add DIR'\n");
		return LEV_EXIT_OK;
	}
	if (lev_setup(ctx, CMD_NEEDS_CONFIG) < 0)
		return LEV_EXIT_FAIL;
	if (lev_agentstore_list(&agents, &n, &err) < 0)
		return lev_fail("%s", err.msg);
	lev_report_lint_dirs(&workdir, &home);
	if (json)
		arr = json_array();
	else if (n == 0)
		printf("no agents installed (install one with 'lev add DIR')\n");

	for (i = 0; i < n; i++) {
		const struct lev_agent_info *a = &agents[i];
		_cleanup_free_ enum lev_grant_status *st = NULL;
		struct lev_err rerr = LEV_ERR_INIT;
		size_t declared = 0, granted = 0;
		bool report_ok = true;

		if (a->bp) {
			declared = lev_strv_len(a->bp->read_paths);
			report_ok = lev_lint_grant_report(a->bp, &ctx->cfg, workdir, home, &st, &granted,
							  &rerr) == 0;
		}
		if (json) {
			json_array_append_new(arr, agent_json(a, declared, granted,
							      report_ok ? NULL : rerr.msg));
			continue;
		}
		if (!a->bp) {
			printf("%s (cannot load: %s)\n", a->name, a->error);
			continue;
		}
		printf("%s %s", a->name, a->bp->version);
		if (a->bp->description[0])
			printf(" - %s", a->bp->description);
		putchar('\n');
		switch (a->identity) {
		case LEV_IDENTITY_VERIFIED:
			printf("    files: as installed\n");
			break;
		case LEV_IDENTITY_CHANGED:
			printf("    files: CHANGED since 'lev add': per-agent grants withheld (%s)\n",
			       a->identity_note);
			break;
		default:
			printf("    files: not verified: per-agent grants withheld (%s)\n",
			       a->identity_note ? a->identity_note : "unknown");
			break;
		}
		if (!report_ok)
			printf("    read_paths: %zu declared, grants unknown: %s\n", declared,
			       rerr.msg);
		else if (granted < declared)
			printf("    read_paths: %zu declared, %zu granted - `lev validate %s` shows "
			       "which\n",
			       declared, granted, a->name);
		else
			printf("    read_paths: %zu declared, %zu granted\n", declared, granted);
	}
	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "agents", arr);
		lev_report_print_json(o);
	}
	lev_agentstore_list_free(agents, n);
	return LEV_EXIT_OK;
}
