/*
 * configjson.c - the configuration, redacted (configjson.h).
 */
#include <errno.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/config.h"
#include "liblev/conf/credstore.h"
#include "liblev/conf/datadir.h"
#include "liblev/serve/configjson.h"

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();

	for (; v && *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

/* The names of "NAME=value" or "Name: value" entries; their values withheld. */
static json_t *names_only(char *const *v, const char *sep)
{
	json_t *a = json_array();

	for (; v && *v; v++)
		json_array_append_new(a, json_stringn(*v, strcspn(*v, sep)));
	return a;
}

static json_t *providers_json(const struct lev_config *c, char *const *keyed)
{
	json_t *a = json_array();

	for (size_t i = 0; i < c->n_providers; i++) {
		const struct lev_provider_conf *p = &c->providers[i];

		json_array_append_new(a, json_pack("{s:s,s:s,s:s?,s:s?,s:s?,s:I,s:b}", "name", p->name,
						   "kind", lev_provider_kind_name(p->kind),
						   "base_url", p->base_url, "model", p->model,
						   "api_key_env", p->api_key_env,
						   "timeout_secs", (json_int_t)p->timeout_secs,
						   "key_set", lev_strv_contains(keyed, p->name)));
	}
	for (size_t i = 0; i < c->n_flat_providers; i++) {
		const struct lev_flat_provider *p = &c->flat_providers[i];

		json_array_append_new(a, json_pack("{s:s,s:s?,s:b}", "name", p->name, "base_url",
						   p->base_url, "key_set",
						   p->has_key || lev_strv_contains(keyed, p->name)));
	}
	return a;
}

static json_t *mcp_json(const struct lev_config *c)
{
	json_t *a = json_array();

	for (size_t i = 0; i < c->n_mcp_servers; i++) {
		const struct lev_mcp_server_conf *m = &c->mcp_servers[i];

		json_array_append_new(a, json_pack("{s:s,s:s?,s:I,s:b,s:o,s:o,s:I,s:b}", "name",
						   m->name, "command", m->command, "args_count",
						   (json_int_t)lev_strv_len(m->args), "url_set", m->url != NULL,
						   "env_set", names_only(m->env, "="), "headers_set",
						   names_only(m->headers, ":"), "timeout_secs",
						   (json_int_t)m->timeout_secs, "sandbox_none",
						   m->sandbox_none));
	}
	return a;
}

static json_t *limits_json(const struct lev_limits *l)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
			 "script_shell_timeout_secs", (json_int_t)l->script_shell_timeout_secs,
			 "shell_timeout_secs", (json_int_t)l->shell_timeout_secs,
			 "interaction_timeout_secs", (json_int_t)l->interaction_timeout_secs,
			 "max_tool_call_write_bytes", (json_int_t)l->max_tool_call_write_bytes,
			 "max_run_write_bytes", (json_int_t)l->max_run_write_bytes,
			 "max_tool_output_bytes", (json_int_t)l->max_tool_output_bytes,
			 "max_iterations", (json_int_t)l->max_iterations,
			 "max_concurrent_inferences", (json_int_t)l->max_concurrent_inferences);
}

static json_t *security_json(const struct lev_config *c)
{
	return json_pack("{s:o,s:b,s:b,s:o,s:s,s:s,s:o}",
			 "allowed_workdirs", strv_json(c->allowed_workdirs),
			 "allow_seed_commands", c->allow_seed_commands,
			 "allow_local_network", c->allow_local_network,
			 "allow_env_vars", strv_json(c->allow_env_vars),
			 "shell_env", lev_shell_env_name(c->shell_env),
			 "credential_store", c->credential_store == LEV_CRED_KEYCHAIN ? "keychain"
										      : "file",
			 "read_paths", strv_json(c->read_paths));
}

int lev_config_redacted(json_t **out, struct lev_err *err)
{
	struct lev_config c;
	_cleanup_free_ char *creds = NULL;
	_cleanup_strv_ char **keyed = NULL;
	struct lev_credstore s;
	int r;

	lev_config_init(&c);
	r = lev_config_load(&c, err);
	if (r < 0) {
		lev_config_release(&c);
		return r;
	}
	(void)lev_datadir_credentials_path(&creds, NULL);
	s = (struct lev_credstore){ c.credential_store, creds, c.path };
	/* which providers have a key: their names, never the keys (credstore.h) */
	if (creds && lev_credstore_list(&s, &keyed, NULL) < 0)
		keyed = NULL;
	*out = json_pack("{s:s?,s:b,s:o,s:o,s:o,s:o,s:s?,s:s?,s:b}", "path", c.path,
			 "taint_tracking", c.taint_tracking, "security", security_json(&c),
			 "limits", limits_json(&c.limits), "providers", providers_json(&c, keyed),
			 "mcp_servers", mcp_json(&c), "default_provider", c.default_provider,
			 "default_model", c.default_model, "web_search_endpoint_set",
			 c.web_search_endpoint != NULL);
	lev_config_release(&c);
	return *out ? 0 : lev_err_set(err, -ENOMEM, "cannot write the configuration");
}
