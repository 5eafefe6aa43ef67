/*
 * modelpick.c - a stage's model chain, in Leviath's order (modelpick.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/modelpick.h"

bool lev_model_provider_configured(const struct lev_config *cfg, const char *provider,
				   const char *credentials_path)
{
	const struct lev_flat_provider *f = lev_config_flat_provider(cfg, provider);
	const struct lev_builtin_provider *b;
	enum lev_key_source src = LEV_KEY_NONE;
	char *key = NULL;
	int r;

	if (!provider || !*provider)
		return false;
	if (lev_config_provider(cfg, provider))
		return true;
	b = lev_builtin_provider(provider);
	if (!b)
		return false;
	if (!b->key_env)
		return true;
	r = lev_api_key_resolve(provider, b->key_env, f && f->has_key ? cfg->path : NULL,
				cfg && cfg->credential_store == LEV_CRED_FILE ? credentials_path
									      : NULL,
				cfg && cfg->credential_store == LEV_CRED_KEYCHAIN, &key, &src, NULL);
	lev_secret_free(key);
	return r == 0 && src != LEV_KEY_NONE;
}

static bool has(const struct lev_model_picks *p, const char *provider, const char *model)
{
	for (size_t i = 0; i < p->n; i++)
		if (lev_streq(p->v[i].provider, provider) && lev_streq(p->v[i].model, model))
			return true;
	return false;
}

static void add(struct lev_model_picks *p, const char *provider, const char *model,
		const char *why)
{
	if (has(p, provider, model))
		return;
	p->v = xreallocarray(p->v, p->n + 1, sizeof(*p->v));
	p->v[p->n++] = (struct lev_model_pick){
		.provider = xstrdup(provider),
		.model = model ? xstrdup(model) : NULL,
		.why = why,
	};
}

/* The stage's own list: its entries, or its single provider/model, or the default. */
static void stage_list(const struct lev_config *cfg, const struct lev_model_ref *m,
		       struct lev_model_picks *out)
{
	if (m->n_choices) {
		for (size_t i = 0; i < m->n_choices; i++)
			add(out, m->choices[i].provider, m->choices[i].model, "blueprint");
		return;
	}
	if (m->provider) {
		add(out, m->provider, m->model, "blueprint");
		return;
	}
	if (cfg && cfg->default_provider)
		add(out, cfg->default_provider, m->model ? m->model : cfg->default_model,
		    "default_provider");
	else if (cfg && cfg->n_providers)
		add(out, cfg->providers[0].name, m->model, "first entry");
	else
		add(out, "anthropic", m->model, "first entry");
}

void lev_model_pick(const struct lev_config *cfg, const struct lev_model_ref *m,
		    const char *credentials_path, struct lev_model_picks *out)
{
	struct lev_model_picks list = { 0 };
	const char *dp = cfg ? cfg->default_provider : NULL;
	bool user = dp && !m->no_user_default &&
		    lev_model_provider_configured(cfg, dp, credentials_path);

	*out = (struct lev_model_picks){ 0 };
	stage_list(cfg, m, &list);
	if (user && cfg->default_model)
		add(out, dp, cfg->default_model, "default_model");
	for (size_t i = 0; user && i < list.n; i++)
		if (!strcmp(list.v[i].provider, dp))
			add(out, list.v[i].provider, list.v[i].model, "default_provider");
	for (size_t i = 0; i < list.n; i++) {
		const char *pv = list.v[i].provider;

		if (lev_model_provider_configured(cfg, pv, credentials_path))
			add(out, pv, list.v[i].model, list.v[i].why);
		else if (!lev_config_provider(cfg, pv) && !lev_builtin_provider(pv))
			out->unknown = lev_strv_push_take(out->unknown,
							  xasprintf("%s/%s", pv,
								    list.v[i].model ? list.v[i].model
										    : ""));
	}
	for (char **e = cfg ? cfg->fallback_order : NULL; e && *e; e++) {
		const char *slash = strchr(*e, '/');
		char *prov = xstrndup(*e, (size_t)(slash - *e));

		if (lev_model_provider_configured(cfg, prov, credentials_path))
			add(out, prov, slash + 1, "fallback_order");
		free(prov);
	}
	if (!out->n)
		add(out, list.v[0].provider, list.v[0].model, "first entry");
	lev_model_picks_release(&list);
}

void lev_model_picks_release(struct lev_model_picks *p)
{
	for (size_t i = 0; p && i < p->n; i++) {
		free(p->v[i].provider);
		free(p->v[i].model);
	}
	if (p) {
		lev_strv_free(p->unknown);
		free(p->v);
		*p = (struct lev_model_picks){ 0 };
	}
}

int lev_model_override(const struct lev_config *cfg, const struct lev_model_ref *m,
		       const char *spec, const char *credentials_path, char **provider,
		       char **model)
{
	const char *slash = strchr(spec, '/');
	struct lev_model_picks picks;

	*provider = *model = NULL;
	if (!*spec || slash == spec)
		return -EINVAL;
	if (slash) {
		*provider = xstrndup(spec, (size_t)(slash - spec));
		*model = slash[1] ? xstrdup(slash + 1) : NULL;
		return 0;
	}
	lev_model_pick(cfg, m, credentials_path, &picks);
	*provider = xstrdup(picks.v[0].provider);
	*model = xstrdup(spec);
	lev_model_picks_release(&picks);
	return 0;
}
