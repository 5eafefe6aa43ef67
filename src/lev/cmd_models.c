/*
 * cmd_models.c - lev models list [-p NAME] [-a] [--json]: the providers a
 * stage's model may name, and the model each uses by default.
 */
#include <stdio.h>
#include <string.h>

#include "lev/cmd.h"
#include "lev/report.h"
#include "liblev/base/util.h"
#include "liblev/conf/config.h"
#include "liblev/daemon/proto.h"

const char lev_usage_models[] =
	"usage: lev models list [-p|--provider NAME] [-a|--all] [--json]\n"
	"\n"
	"List the providers a blueprint's model may name here: lev's built-in ones\n"
	"and your config's [providers.NAME] tables, each with its kind, endpoint,\n"
	"the model it uses when none is named, and which one your default_provider\n"
	"picks.  lev keeps no model catalogue: a model id is passed to the provider\n"
	"as written, so Leviath's -r/--remote and 'lev models show' are refused\n"
	"(lev doctor --model P/M sends one real request to try a model).  -a is\n"
	"accepted (every provider is listed, with a key or not).  A --provider that\n"
	"names no provider exits 1.\n"
	"\n"
	"  --json   {providers: [{name, kind, base_url, model, source, default}]}\n";

static json_t *row(const char *name, enum lev_provider_kind kind, const char *base,
		   const char *model, const char *source, const struct lev_config *cfg)
{
	return json_pack("{s:s, s:s, s:s?, s:s?, s:s, s:b}", "name", name, "kind",
			 lev_provider_kind_name(kind), "base_url", base, "model", model,
			 "source", source, "default", lev_streq(cfg->default_provider, name));
}

static json_t *providers(const struct lev_config *cfg, const char *only)
{
	json_t *arr = json_array();
	const struct lev_builtin_provider *b;

	for (size_t i = 0; i < cfg->n_providers; i++) {
		const struct lev_provider_conf *p = &cfg->providers[i];

		if (!only || !strcmp(only, p->name))
			json_array_append_new(arr, row(p->name, p->kind, p->base_url, p->model,
						       "config.toml", cfg));
	}
	for (size_t i = 0; (b = lev_builtin_provider_at(i)); i++) {
		if ((only && strcmp(only, b->name)) || lev_config_provider(cfg, b->name))
			continue;	/* a [providers.NAME] of the same name is the one used */
		json_array_append_new(arr, row(b->name, b->kind, b->base_url,
					       lev_streq(cfg->default_provider, b->name)
						       ? cfg->default_model : NULL,
					       "built-in", cfg));
	}
	return arr;
}

int cmd_models(int argc, char **argv, struct lev_ctx *ctx)
{
	const char *only = NULL;
	bool json = false;
	json_t *arr, *r;
	size_t i;

	if (argc < 2 || strcmp(argv[1], "list"))
		return lev_usage_error("models", argc < 2 || !strcmp(argv[1], "show")
							 ? "only 'list': lev keeps no model catalogue "
							   "to show a model from"
							 : "unknown subcommand (only 'list')");
	for (int k = 2; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			json = true;
		else if (!strcmp(argv[k], "-a") || !strcmp(argv[k], "--all"))
			;
		else if ((!strcmp(argv[k], "-p") || !strcmp(argv[k], "--provider")) && k + 1 < argc)
			only = argv[++k];
		else if (!strcmp(argv[k], "-r") || !strcmp(argv[k], "--remote"))
			return lev_usage_error("models", "--remote is refused: lev asks no provider "
					       "for its catalogue; 'lev doctor --model P/M' tries one");
		else
			return lev_usage_error("models", "unknown argument '%s'", argv[k]);
	}
	if (lev_setup(ctx, CMD_NEEDS_CONFIG) < 0)
		return LEV_EXIT_FAIL;
	arr = providers(&ctx->cfg, only);
	if (only && json_array_size(arr) == 0) {
		json_decref(arr);
		return lev_fail("no provider '%s': neither one of lev's nor a [providers.%s] of "
				"your config", only, only);
	}
	if (json) {
		lev_report_print_json(json_pack("{s:o}", "providers", arr));
		return LEV_EXIT_OK;
	}
	printf("%-14s %-10s %-10s %-30s %s\n", "PROVIDER", "KIND", "SOURCE", "MODEL", "ENDPOINT");
	json_array_foreach(arr, i, r) {
		printf("%-14s %-10s %-10s %-30s %s%s\n", lev_json_str(r, "name"),
		       lev_json_str(r, "kind"), lev_json_str(r, "source"),
		       lev_json_str(r, "model") ? lev_json_str(r, "model") : "-",
		       lev_json_str(r, "base_url") ? lev_json_str(r, "base_url") : "(its default)",
		       json_is_true(json_object_get(r, "default")) ? "  [default_provider]" : "");
	}
	json_decref(arr);
	return LEV_EXIT_OK;
}
