/*
 * cmd_setup.c - lev setup: what lev does instead of Leviath's wizard.  Keys
 * are never taken on the command line (they would stay in shell history).
 */
#include <stdio.h>
#include <string.h>

#include "lev/cmd.h"

const char lev_usage_setup[] =
	"usage: lev setup [--non-interactive] [--no-verify] [--install-agents]\n"
	"\n"
	"Print how lev is set up, in three steps, and change nothing:\n"
	"  1. store a provider's key: lev auth set PROVIDER (it reads the key from\n"
	"     stdin, never from the command line)\n"
	"  2. pick the default: default_provider and default_model in config.toml\n"
	"  3. check the wiring: lev doctor (one real request)\n"
	"Leviath's --anthropic-key, --openai-key, --google-key and --openrouter-key\n"
	"are refused (a key on the command line stays in your shell history), as\n"
	"are --default-model, --ollama-url and --claude-code* (write config.toml:\n"
	"docs/config.md); --non-interactive, --no-verify and --install-agents are\n"
	"accepted and change nothing (lev bundles no agents).\n";

int cmd_setup(int argc, char **argv, struct lev_ctx *ctx)
{
	(void)ctx;
	for (int k = 1; k < argc; k++) {
		const char *a = argv[k];

		if (!strcmp(a, "--non-interactive") || !strcmp(a, "--no-verify") ||
		    !strcmp(a, "--install-agents"))
			continue;
		if (strstr(a, "-key"))
			return lev_usage_error("setup", "'%s' is refused: a key on the command line "
					       "stays in your shell history; 'lev auth set PROVIDER' "
					       "reads it from stdin", a);
		return lev_usage_error("setup", "'%s' is refused: set it in config.toml "
				       "(docs/config.md)", a);
	}
	printf("lev is set up in three steps:\n"
	       "  1. lev auth set PROVIDER    store a key (read from stdin, never an argument)\n"
	       "  2. config.toml              default_provider = \"...\", default_model = \"...\"\n"
	       "  3. lev doctor               check the wiring with one real request\n");
	return LEV_EXIT_OK;
}
