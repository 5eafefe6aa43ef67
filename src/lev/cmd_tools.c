/*
 * cmd_tools.c - lev tools [--json]: the built-in tool catalogue, as the
 * model is offered it: each tool's other spellings, its built-in default
 * permission, its arguments (and the earlier names still accepted), and its
 * description.
 */
#include <stdio.h>
#include <string.h>

#include "lev/cmd.h"
#include "lev/report.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/tooltable.h"
#include "liblev/policy/perm.h"
#include "liblev/tools/tools.h"

const char lev_usage_tools[] =
	"usage: lev tools [--json]\n"
	"\n"
	"List the built-in tools a stage may offer in available_tools: each one's\n"
	"other spellings, its built-in default permission (before your config or a\n"
	"blueprint changes it), its arguments (required ones marked *, earlier names\n"
	"still accepted in brackets) and what the model is told it does.  Script\n"
	"tools are a blueprint's own (its tools/ directory, docs/script-tools.md);\n"
	"lev reads no global tool directory.\n"
	"\n"
	"  --json   print {tools: [{name, aliases, default, description, parameters,\n"
	"           argument_aliases: {earlier: name}}]}\n";

/* TI's arguments as one line: "path*, offset, limit [max_results=count]". */
static void print_args(const struct lev_tool_info *ti)
{
	const json_t *props = json_object_get(ti->schema, "properties");
	const json_t *req = json_object_get(ti->schema, "required"), *v;
	const char *const *al = ti->desc ? ti->desc->arg_aliases : NULL;
	const char *key, *sep = "";
	size_t i;

	json_object_foreach((json_t *)props, key, v) {
		bool r = false;

		json_array_foreach(req, i, v)
			r = r || !strcmp(json_string_value(v), key);
		printf("%s%s%s", sep, key, r ? "*" : "");
		sep = ", ";
	}
	for (i = 0; al && al[i]; i += 2)
		printf("%s%s=%s%s", i ? " " : " [", al[i], al[i + 1], al[i + 2] ? "" : "]");
	if (!*sep)
		printf("none");
}

static json_t *tool_json(const struct lev_tool_info *ti)
{
	const char *const *al = ti->desc ? ti->desc->arg_aliases : NULL;
	json_t *o = json_object(), *aliases = json_array(), *arg_al = json_object();

	for (size_t i = 0; ti->aliases && ti->aliases[i]; i++)
		json_array_append_new(aliases, json_string(ti->aliases[i]));
	for (size_t i = 0; al && al[i]; i += 2)
		json_object_set_new(arg_al, al[i], json_string(al[i + 1]));
	json_object_set_new(o, "name", json_string(ti->name));
	json_object_set_new(o, "aliases", aliases);
	json_object_set_new(o, "default", json_string(lev_verdict_name(lev_perm_default(ti->name))));
	json_object_set_new(o, "description", json_string(ti->description ? ti->description : ""));
	json_object_set(o, "parameters", ti->schema ? ti->schema : json_null());
	json_object_set_new(o, "argument_aliases", arg_al);
	return o;
}

int cmd_tools(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_tools *tools = NULL;
	struct lev_err err = LEV_ERR_INIT;
	bool json = false;
	json_t *arr;
	size_t i;

	(void)ctx;
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			json = true;
		else if (argv[k][0] == '-')
			return lev_usage_error("tools", "unknown option '%s'", argv[k]);
		else
			return lev_usage_error("tools", "unexpected argument '%s'", argv[k]);
	}
	if (lev_tools_new(&tools, &err) < 0)
		return lev_fail("%s", err.msg);
	arr = json ? json_array() : NULL;
	for (i = 0; i < lev_tools_count(tools); i++) {
		const struct lev_tool_info *ti = lev_tools_at(tools, i);

		if (json) {
			json_array_append_new(arr, tool_json(ti));
			continue;
		}
		printf("%s", ti->name);
		for (size_t a = 0; ti->aliases && ti->aliases[a]; a++)
			printf(" (%s)", ti->aliases[a]);
		printf("  [%s]\n  arguments: ", lev_verdict_name(lev_perm_default(ti->name)));
		print_args(ti);
		printf("\n  %s\n", ti->description ? ti->description : "");
	}
	if (json)
		lev_report_print_json(json_pack("{s:o}", "tools", arr));
	lev_tools_free(tools);
	return LEV_EXIT_OK;
}
