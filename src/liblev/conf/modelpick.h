/*
 * modelpick.h - which model a stage starts on, and its failover chain, as
 * Leviath decides it (docs/providers.md "Which entry a stage starts on"):
 *
 *   1. (lev run --model overrides everything; the caller handles it)
 *   2. the config's default_provider, when it is configured and the stage
 *      did not say allow_user_default = false: the stage's entries on that
 *      provider move to the front, in the blueprint's order;
 *   3. the config's default_model, when set, leads them (on
 *      default_provider);
 *   4. then the stage's entries whose provider is configured, in order;
 *   5. then the config's [providers] fallback_order (configured ones);
 *   6. and when nothing is left, the stage's first entry, whatever it is,
 *      so that building it says what is missing.
 *
 * A provider is "configured" when the config has a [providers.NAME] table,
 * or NAME is built in and needs no key (ollama, script), or its key can be
 * found (config.toml's NAME_api_key, its variable, credentials.toml).  It
 * depends on the provider, never on whether the model exists.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"
#include "liblev/conf/blueprint.h"
#include "liblev/conf/config.h"

struct lev_model_pick {
	char *provider;
	char *model;		/* NULL: the provider's configured model */
	const char *why;	/* static: "default_model", "default_provider", "blueprint",
				 * "fallback_order", "first entry" */
};

struct lev_model_picks {
	struct lev_model_pick *v;
	size_t n;
	/* "provider/model" of the stage's entries whose provider lev does not
	 * have at all (neither built in nor a [providers.NAME]): strv, NULL if none */
	char **unknown;
};

/*
 * The chain for model block M (a stage's; its single provider/model counts
 * as a list of one; no provider at all means default_provider, then the
 * config's first [providers.NAME], then "anthropic").  CREDENTIALS_PATH
 * (may be NULL) is consulted to decide whether a provider has a key.
 * Never empty.  Release with lev_model_picks_release().
 */
void lev_model_pick(const struct lev_config *cfg, const struct lev_model_ref *m,
		    const char *credentials_path, struct lev_model_picks *out);
void lev_model_picks_release(struct lev_model_picks *p);

/*
 * `--model SPEC` for model block M (lev run, lev doctor): "PROVIDER/MODEL"
 * names both (MODEL may hold slashes itself: openrouter/vendor/model; an
 * empty MODEL means the provider's configured one); a bare model id keeps
 * the provider M's chain starts on (lev_model_pick()) and replaces only the
 * model.  *provider and *model (NULL: the provider's model) are the
 * caller's.  -EINVAL, *provider NULL, for an empty SPEC or one that starts
 * with '/'.
 */
int lev_model_override(const struct lev_config *cfg, const struct lev_model_ref *m,
		       const char *spec, const char *credentials_path, char **provider,
		       char **model);

/* Is PROVIDER configured on this machine (see above)? */
bool lev_model_provider_configured(const struct lev_config *cfg, const char *provider,
				   const char *credentials_path);
