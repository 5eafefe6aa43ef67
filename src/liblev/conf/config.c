/*
 * config.c - config.toml into struct lev_config.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/config.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/datadir.h"
#include "liblev/base/strv.h"
#include "liblev/conf/toml.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static const char *const shell_env_names[] = { "filtered", "strict", "custom", "inherit" };
static const char *const cred_names[] = { "file", "keychain" };
static const char *const script_perm_names[] = { "inherit", "allow", "deny" };
static const char *const provider_kind_names[] = { "openai", "anthropic", "script" };
static const char *const kind_words[] = { "none", "namespace", "container" };
static const char *const onun_words[] = { "error", "warn" };

/* Upper bound for every duration in seconds (a day) and byte limit (1 PiB). */
#define SECS_MAX ((uint64_t)86400)
#define BYTES_MAX ((uint64_t)1 << 50)
#define PER_AGENT_MAX 1024

const char *lev_shell_env_name(enum lev_shell_env e)
{
	return e < _LEV_SHELL_ENV_MAX ? shell_env_names[e] : "strict";
}

const char *lev_script_perm_name(enum lev_script_perm p)
{
	return p < _LEV_SCRIPT_PERM_MAX ? script_perm_names[p] : "deny";
}

const char *lev_provider_kind_name(enum lev_provider_kind k)
{
	return k < _LEV_PROVIDER_KIND_MAX ? provider_kind_names[k] : "?";
}

void lev_config_init(struct lev_config *c)
{
	memset(c, 0, sizeof(*c));
	c->allow_seed_commands = true;
	c->shell_env = LEV_SHELL_ENV_FILTERED;
	c->credential_store = LEV_CRED_FILE;
	c->safe_defaults = true;
	c->limits.script_shell_timeout_secs = 60;
	c->limits.shell_timeout_secs = 60;
	c->limits.interaction_timeout_secs = 3600;
	c->limits.max_tool_output_bytes = (uint64_t)1 << 20;
	c->limits.max_iterations = 50;
	c->webhook = (struct lev_webhook_conf){ LEV_WEBHOOK_MAX_RETRIES, LEV_WEBHOOK_BASE_DELAY_MS,
						LEV_WEBHOOK_MAX_DELAY_MS, LEV_WEBHOOK_TIMEOUT_SECS };
}

void lev_tool_perms_release(struct lev_tool_perms *perms)
{
	size_t i;

	for (i = 0; i < perms->n; i++)
		free(perms->v[i].tool);
	free(perms->v);
	perms->v = NULL;
	perms->n = 0;
}

void lev_tool_perms_set(struct lev_tool_perms *perms, const char *tool, enum lev_verdict v)
{
	size_t i;

	for (i = 0; i < perms->n; i++) {
		if (!strcmp(perms->v[i].tool, tool)) {
			perms->v[i].verdict = v;
			return;
		}
	}
	perms->v = xreallocarray(perms->v, perms->n + 1, sizeof(*perms->v));
	perms->v[perms->n].tool = xstrdup(tool);
	perms->v[perms->n].verdict = v;
	perms->n++;
}

void lev_tool_perms_copy(struct lev_tool_perms *dst, const struct lev_tool_perms *src)
{
	size_t i;

	memset(dst, 0, sizeof(*dst));
	for (i = 0; i < src->n; i++)
		lev_tool_perms_set(dst, src->v[i].tool, src->v[i].verdict);
}

bool lev_tool_perms_lookup(const struct lev_tool_perms *perms, const char *tool,
			   enum lev_verdict *out)
{
	bool found = false;
	enum lev_verdict v = LEV_ALLOW;
	size_t i;

	for (i = 0; i < perms->n; i++) {
		if (!lev_tool_same(perms->v[i].tool, tool))
			continue;
		v = found ? lev_verdict_stricter(v, perms->v[i].verdict) : perms->v[i].verdict;
		found = true;
	}
	if (found)
		*out = v;
	return found;
}

void lev_config_release(struct lev_config *c)
{
	size_t i;

	free(c->path);
	free(c->web_search_endpoint);
	for (i = 0; i < c->n_model_caps; i++)
		free(c->model_caps[i].model);
	free(c->model_caps);
	for (i = 0; i < c->n_rate_limits; i++)
		free(c->rate_limits[i].provider);
	free(c->rate_limits);
	free(c->nudge.text);
	lev_strv_free(c->allowed_workdirs);
	lev_strv_free(c->allow_env_vars);
	lev_strv_free(c->shell_env_withhold);
	lev_strv_free(c->read_paths);
	for (i = 0; i < c->n_agent_read_paths; i++) {
		free(c->agent_read_paths[i].agent);
		lev_strv_free(c->agent_read_paths[i].allow);
	}
	free(c->agent_read_paths);
	lev_sandbox_spec_release(&c->sandbox);
	lev_strv_free(c->sandbox_engine_args);
	lev_tool_perms_release(&c->tool_permissions);
	for (i = 0; i < c->n_agent_tool_permissions; i++) {
		free(c->agent_tool_permissions[i].agent);
		lev_tool_perms_release(&c->agent_tool_permissions[i].perms);
	}
	free(c->agent_tool_permissions);
	lev_strv_free(c->safe_tools);
	lev_strv_free(c->safe_shell);
	lev_strv_free(c->script_providers);
	for (i = 0; i < c->n_agent_safe_commands; i++) {
		free(c->agent_safe_commands[i].agent);
		lev_strv_free(c->agent_safe_commands[i].tools);
		lev_strv_free(c->agent_safe_commands[i].shell);
	}
	free(c->agent_safe_commands);
	for (i = 0; i < c->n_providers; i++) {
		free(c->providers[i].name);
		free(c->providers[i].base_url);
		free(c->providers[i].api_key_env);
		free(c->providers[i].model);
	}
	free(c->providers);
	lev__mcp_servers_release(c);
	lev_strv_free(c->warnings);
	lev_strv_free(c->fallback_order);
	for (i = 0; i < c->n_flat_providers; i++) {
		free(c->flat_providers[i].name);
		free(c->flat_providers[i].base_url);
	}
	free(c->flat_providers);
	free(c->default_provider);
	free(c->default_model);
	memset(c, 0, sizeof(*c));
}

/* ---- parsing ---------------------------------------------------------- */

/*
 * Keys of Leviath's config.toml lev reads but does not run ("" is the top
 * level), with what to use instead.
 */
static const struct {
	const char *table;
	const char *key;
	const char *instead;
} leviath_keys[] = {
	{ "", "agent_paths", "lev add PATH, which installs an agent under lev's data directory" },
	{ "", "batch_tool_hint", "lev's own tool descriptions" },
	{ "", "shell_hint", "lev's own tool descriptions" },
	{ "", "observability", "the run record (events.jsonl, audit.jsonl)" },
	{ "model_capabilities", "supports_temperature", "the stage's temperature, which lev "
							"sends when the stage sets one" },
	{ "model_capabilities", "supports_streaming", "lev's order: lev reads every answer "
						      "whole" },
	{ "model_capabilities", "supports_system_prompt", "lev's order: the system prompt is "
							  "always sent as the provider's own field" },
	{ "model_capabilities", "supports_vision", "lev sends text only" },
	{ "", "model_providers", "[providers.NAME] with kind = \"openai\" for an "
				 "OpenAI-compatible API" },
	{ "limits", "max_concurrent_tools", "lev's order: a run's tool calls run one at a time, "
					    "each in a sandbox of its own" },
	{ "limits", "exact_token_counting", "the provider's own counts, which lev sums "
					    "(lev has no tokenizer to count with)" },
	{ "limits", "mcp_idle_disconnect_secs", "lev's order: a run's MCP servers start and "
						"stop with the run" },
	{ "limits", "stall_timeout_secs", "the request's timeout_secs: lev has no shared "
					  "dispatcher for a run to stall in" },
	{ "limits", "dead_cycles_before_relief", "lev's order: there is no shared tool lane "
						 "to widen" },
	{ "limits", "finished_retention_secs", "lev ps --all, which lists finished runs from "
					       "lev.db until lev rm" },
	{ "limits", "wedge_timeout_secs", "lev cancel --force, which ends a run whose worker "
					  "is gone" },
	{ "limits", "provider_failures_before_open", "a stage's model chain: after a request's "
						     "retries the next entry is tried" },
	{ "limits", "provider_circuit_cooldown_secs", "a stage's model chain: after a "
						      "request's retries the next entry is "
						      "tried" },
	{ "limits", "max_concurrent_inferences_by_model", "[limits] max_concurrent_inferences, "
							  "one pool for the daemon" },
	{ "limits", "max_concurrent_inferences_by_provider", "[limits] "
							     "max_concurrent_inferences, one "
							     "pool for the daemon" },
	{ "sandbox", "persist", "a mount: every lev sandbox is thrown away after its command" },
};

static bool warn_leviath(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 size_t i, const char *where, unsigned line)
{
	_cleanup_free_ char *k = lev_tomlval_key_dup(t, i);
	size_t j;

	for (j = 0; j < ARRAY_SIZE(leviath_keys); j++) {
		if (strcmp(leviath_keys[j].table, where) || !lev_tomlval_key_is(t, i, leviath_keys[j].key))
			continue;
		lev_tomlval_warn(c, line, "not run by lev: Leviath's '%s%s%s'; use %s", where,
				 *where ? "." : "", k, leviath_keys[j].instead);
		return true;
	}
	return false;
}

static void warn_unknown(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 size_t i, const char *where)
{
	_cleanup_free_ char *k = lev_tomlval_key_dup(t, i);
	unsigned line = 0, col = 0;

	lev_toml_table_key_pos(t, i, &line, &col);
	if (warn_leviath(c, t, i, where, line))
		return;
	if (*where)
		lev_tomlval_warn(c, line, "unknown key '%s' in [%s]", k, where);
	else
		lev_tomlval_warn(c, line, "unknown key '%s' at the top level", k);
}

static int parse_security(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			  struct lev_config *cfg, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);

	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path("security", t, i);
		int r, e = 0;

		if (lev_tomlval_key_is(t, i, "allowed_workdirs"))
			r = lev_tomlval_set_strv(c, v, p, &cfg->allowed_workdirs, err);
		else if (lev_tomlval_key_is(t, i, "allow_seed_commands"))
			r = lev_tomlval_bool(c, v, p, &cfg->allow_seed_commands, err);
		else if (lev_tomlval_key_is(t, i, "yolo_allows_flow"))
			r = lev_tomlval_bool(c, v, p, &cfg->yolo_allows_flow, err);
		else if (lev_tomlval_key_is(t, i, "allow_local_network"))
			r = lev_tomlval_bool(c, v, p, &cfg->allow_local_network, err);
		else if (lev_tomlval_key_is(t, i, "allow_env_vars"))
			r = lev_tomlval_set_strv(c, v, p, &cfg->allow_env_vars, err);
		else if (lev_tomlval_key_is(t, i, "allow_blueprint_read_paths"))
			r = lev_tomlval_bool(c, v, p, &cfg->allow_blueprint_read_paths, err);
		else if (lev_tomlval_key_is(t, i, "allow_blueprint_safe_commands"))
			r = lev_tomlval_bool(c, v, p, &cfg->allow_blueprint_safe_commands, err);
		else if (lev_tomlval_key_is(t, i, "allow_blueprint_permissions"))
			r = lev_tomlval_bool(c, v, p, &cfg->allow_blueprint_permissions, err);
		else if (lev_tomlval_key_is(t, i, "shell_env")) {
			r = lev_tomlval_enum(c, v, p, shell_env_names, _LEV_SHELL_ENV_MAX, &e, err);
			if (r == 0)
				cfg->shell_env = (enum lev_shell_env)e;
		} else if (lev_tomlval_key_is(t, i, "shell_env_withhold"))
			r = lev_tomlval_set_strv(c, v, p, &cfg->shell_env_withhold, err);
		else if (lev_tomlval_key_is(t, i, "read_paths"))
			r = lev_tomlval_set_strv(c, v, p, &cfg->read_paths, err);
		else if (lev_tomlval_key_is(t, i, "credential_store")) {
			r = lev_tomlval_enum(c, v, p, cred_names, _LEV_CRED_MAX, &e, err);
			if (r == 0)
				cfg->credential_store = (enum lev_credential_store)e;
		} else {
			warn_unknown(c, t, i, "security");
			r = 0;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* [sandbox]: the user's machine-wide sandbox; unknown keys warn. */
static int parse_sandbox(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 const char *table, struct lev_config *cfg, struct lev_err *err)
{
	struct lev_sandbox_spec *s = &cfg->sandbox;
	size_t i, n = lev_toml_table_len(t);

	s->present = true;
	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(table, t, i);
		int r, e = 0;

		if (lev_tomlval_key_is(t, i, "kind")) {
			r = lev_tomlval_enum(c, v, p, kind_words, _LEV_SANDBOX_KIND_MAX, &e, err);
			if (r == 0) {
				s->has_kind = true;
				s->kind = (enum lev_sandbox_kind)e;
			}
		} else if (lev_tomlval_key_is(t, i, "image"))
			r = lev_tomlval_set_str(c, v, p, &s->image, err);
		else if (lev_tomlval_key_is(t, i, "engine"))
			r = lev_tomlval_set_str(c, v, p, &s->engine, err);
		else if (lev_tomlval_key_is(t, i, "network")) {
			r = lev_tomlval_bool(c, v, p, &s->network, err);
			if (r == 0)
				s->has_network = true;
		} else if (lev_tomlval_key_is(t, i, "mounts"))
			r = lev_tomlval_set_strv(c, v, p, &s->mounts, err);
		else if (lev_tomlval_key_is(t, i, "on_unavailable")) {
			r = lev_tomlval_enum(c, v, p, onun_words, _LEV_ON_UNAVAILABLE_MAX, &e, err);
			if (r == 0) {
				s->has_on_unavailable = true;
				s->on_unavailable = (enum lev_on_unavailable)e;
			}
		} else if (lev_tomlval_key_is(t, i, "deny_read"))
			r = lev_tomlval_set_strv(c, v, p, &s->deny_read, err);
		else if (lev_tomlval_key_is(t, i, "writable")) {
			r = lev_tomlval_set_strv(c, v, p, &s->writable, err);
			if (r == 0)
				s->has_writable = true;
		} else if (lev_tomlval_key_is(t, i, "engine_args"))
			r = lev_tomlval_set_strv(c, v, p, &cfg->sandbox_engine_args, err);
		else if (lev_tomlval_key_is(t, i, "timeout_secs"))
			r = lev_tomlval_u64(c, v, p, 1, SECS_MAX, &cfg->sandbox_timeout_secs, err);
		else {
			warn_unknown(c, t, i, table);
			r = 0;
		}
		if (r < 0)
			return r;
	}
	if (!s->has_network)
		s->network = true;
	return 0;
}

int lev__tool_perms_parse(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			  const char *table, struct lev_tool_perms *out, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);

	if (n > LEV_TOMLVAL_LIST_MAX) {
		unsigned line = 0, col = 0;
		lev_toml_table_pos(t, &line, &col);
		return lev_tomlval_fail(c, line, col, err, "[%s] has too many entries", table);
	}
	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(table, t, i);
		size_t klen = 0;
		const char *k = lev_toml_table_key(t, i, &klen);
		int r, e = 0;

		if (klen == 0 || klen > 128 || memchr(k, '\0', klen)) {
			unsigned line = 0, col = 0;
			lev_toml_table_key_pos(t, i, &line, &col);
			return lev_tomlval_fail(c, line, col, err, "'%s' is not a tool name", p);
		}
		r = lev_tomlval_enum(c, v, p, lev_verdict_names, _LEV_VERDICT_MAX, &e, err);
		if (r < 0)
			return r;
		lev_tool_perms_set(out, k, (enum lev_verdict)e);
	}
	return 0;
}

/* Shared with blueprint.c: [tool_script_permissions]. */
int lev__script_perms_parse(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			    const char *table, bool unknown_is_error, struct lev_script_perms *out,
			    struct lev_err *err)
{
	static const char *const keys[] = { "http_get", "http_post", "shell", "read_file",
					    "write_file", "env_var", NULL };
	enum lev_script_perm *fields[] = { &out->http_get, &out->http_post, &out->shell,
					   &out->read_file, &out->write_file, &out->env_var };
	_cleanup_free_ char *where = xasprintf("[%s]", table);
	size_t i, j, n = lev_toml_table_len(t);
	int r;

	r = lev_tomlval_check_keys(c, t, where, keys, unknown_is_error, err);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		for (j = 0; keys[j]; j++) {
			_cleanup_free_ char *p = NULL;
			int e = 0;

			if (!lev_tomlval_key_is(t, i, keys[j]))
				continue;
			p = lev_tomlval_key_path(table, t, i);
			r = lev_tomlval_enum(c, lev_toml_table_value(t, i), p, script_perm_names,
					     _LEV_SCRIPT_PERM_MAX, &e, err);
			if (r < 0)
				return r;
			*fields[j] = (enum lev_script_perm)e;
		}
	}
	return 0;
}

static int parse_safe(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
		      const char *table, bool *defaults, bool *allow_blueprint, char ***tools,
		      char ***shell, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);

	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(table, t, i);
		int r;

		if (defaults && lev_tomlval_key_is(t, i, "defaults"))
			r = lev_tomlval_bool(c, v, p, defaults, err);
		else if (allow_blueprint && lev_tomlval_key_is(t, i, "allow_blueprint"))
			r = lev_tomlval_bool(c, v, p, allow_blueprint, err);
		else if (lev_tomlval_key_is(t, i, "tools"))
			r = lev_tomlval_set_strv(c, v, p, tools, err);
		else if (lev_tomlval_key_is(t, i, "shell"))
			r = lev_tomlval_set_strv(c, v, p, shell, err);
		else {
			warn_unknown(c, t, i, table);
			r = 0;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int lev_config_nudge_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 size_t i, const char *path, struct lev_nudge *nd, struct lev_err *err)
{
	const struct lev_toml_value *v = lev_toml_table_value(t, i);
	_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);

	nd->present = true;
	if (lev_tomlval_key_is(t, i, "enabled")) {
		nd->has_enabled = true;
		return lev_tomlval_bool(c, v, p, &nd->enabled, err);
	}
	if (lev_tomlval_key_is(t, i, "max")) {
		nd->has_max = true;
		return lev_tomlval_u64(c, v, p, 0, 100, &nd->max, err);
	}
	if (lev_tomlval_key_is(t, i, "text"))
		return lev_tomlval_set_str(c, v, p, &nd->text, err);
	return 1;
}

/* [nudge] (Leviath's): every blueprint's default; an unknown key is a warning */
static int parse_nudge(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
		       struct lev_nudge *nd, struct lev_err *err)
{
	int r = 0;

	for (size_t i = 0, n = lev_toml_table_len(t); i < n && r >= 0; i++)
		if ((r = lev_config_nudge_key(c, t, i, "nudge", nd, err)) == 1)
			warn_unknown(c, t, i, "nudge");
	return r < 0 ? r : 0;
}

/*
 * [title] (Leviath's): enabled (default true) gives each run a title, the
 * first line of its task; provider and model are not run: lev sends the
 * task to no second model to name it.
 */
static int parse_title(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
		       struct lev_config *cfg, struct lev_err *err)
{
	int r = 0;

	for (size_t i = 0, n = lev_toml_table_len(t); i < n && r >= 0; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path("title", t, i);
		bool on = true;

		if (lev_tomlval_key_is(t, i, "enabled")) {
			r = lev_tomlval_bool(c, v, p, &on, err);
			cfg->title_off = !on;
		} else if (lev_tomlval_key_is(t, i, "provider") || lev_tomlval_key_is(t, i, "model")) {
			r = lev_tomlval_type(c, v, LEV_TOML_STRING, p, err);
			if (r == 0)
				lev_tomlval_warn(c, v->line, "not run by lev: Leviath's '%s'; the title "
						 "is the task's first line (lev sends the task to no "
						 "second model to name it)", p);
		} else {
			warn_unknown(c, t, i, "title");
		}
	}
	return r < 0 ? r : 0;
}

static int parse_limits(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			struct lev_limits *l, struct lev_err *err)
{
	static const struct {
		const char *key;
		size_t off;
		uint64_t min, max;
	} keys[] = {
		{ "script_shell_timeout_secs", offsetof(struct lev_limits, script_shell_timeout_secs), 1, SECS_MAX },
		{ "shell_timeout_secs", offsetof(struct lev_limits, shell_timeout_secs), 1, SECS_MAX },
		{ "interaction_timeout_secs", offsetof(struct lev_limits, interaction_timeout_secs), 1, SECS_MAX },
		{ "max_tool_call_write_bytes", offsetof(struct lev_limits, max_tool_call_write_bytes), 1, BYTES_MAX },
		{ "max_run_write_bytes", offsetof(struct lev_limits, max_run_write_bytes), 1, BYTES_MAX },
		{ "max_tool_output_bytes", offsetof(struct lev_limits, max_tool_output_bytes), 1024, (uint64_t)1 << 30 },
		{ "max_iterations", offsetof(struct lev_limits, max_iterations), 1, 100000 },
		/* Leviath's name for the same limit */
		{ "default_max_iterations", offsetof(struct lev_limits, max_iterations), 1, 100000 },
		{ "max_concurrent_inferences", offsetof(struct lev_limits, max_concurrent_inferences), 1, 65536 },
		{ "inference_retry_attempts", offsetof(struct lev_limits, inference_retry_attempts), 1, 100 },
		{ "inference_retry_base_ms", offsetof(struct lev_limits, inference_retry_base_ms), 1, 600000 },
	};
	size_t i, j, n = lev_toml_table_len(t);

	for (i = 0; i < n; i++) {
		bool found = false;

		for (j = 0; j < ARRAY_SIZE(keys) && !found; j++) {
			_cleanup_free_ char *p = NULL;
			int r;

			if (!lev_tomlval_key_is(t, i, keys[j].key))
				continue;
			found = true;
			p = lev_tomlval_key_path("limits", t, i);
			r = lev_tomlval_u64(c, lev_toml_table_value(t, i), p, keys[j].min,
					    keys[j].max, (uint64_t *)((char *)l + keys[j].off), err);
			if (r < 0)
				return r;
		}
		if (!found)
			warn_unknown(c, t, i, "limits");
	}
	return 0;
}

/* One [model_capabilities."MODEL"] table into E. */
static int model_caps_fn(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 const char *path, struct lev_model_caps *e, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);

	for (i = 0; i < n; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);
		uint64_t *to = NULL;
		unsigned line = 0, col = 0;
		int r;

		if (lev_tomlval_key_is(t, i, "supports_tools")) {
			bool yes = true;

			r = lev_tomlval_bool(c, lev_toml_table_value(t, i), p, &yes, err);
			if (r < 0)
				return r;
			e->no_tools = !yes;
			continue;
		}
		if (lev_tomlval_key_is(t, i, "max_context_tokens"))
			to = &e->max_context_tokens;
		else if (lev_tomlval_key_is(t, i, "max_output_tokens"))
			to = &e->max_output_tokens;
		lev_toml_table_key_pos(t, i, &line, &col);
		if (!to && warn_leviath(c, t, i, "model_capabilities", line))
			continue;
		/* Leviath refuses a misspelled key here: a typo must not look like an override */
		if (!to)
			return lev_tomlval_fail(c, line, col, err, "unknown key '%s'", p);
		r = lev_tomlval_u64(c, lev_toml_table_value(t, i), p, 1, (uint64_t)1 << 32, to, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* [model_capabilities."MODEL"] */
static int parse_model_caps(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			    struct lev_config *cfg, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);

	if (n > PER_AGENT_MAX) {
		unsigned line = 0, col = 0;
		lev_toml_table_pos(t, &line, &col);
		return lev_tomlval_fail(c, line, col, err, "[model_capabilities] has too many entries");
	}
	cfg->model_caps = xcalloc(n ? n : 1, sizeof(*cfg->model_caps));
	for (i = 0; i < n; i++) {
		const struct lev_toml_table *sub = NULL;
		_cleanup_free_ char *p = lev_tomlval_key_path("model_capabilities", t, i);
		struct lev_model_caps *e = &cfg->model_caps[cfg->n_model_caps];
		int r = lev_tomlval_table(c, lev_toml_table_value(t, i), p, &sub, err);

		if (r < 0)
			return r;
		e->model = lev_tomlval_key_dup(t, i);
		cfg->n_model_caps++;
		r = model_caps_fn(c, sub, p, e, err);
		if (r < 0)
			return r;
	}
	return 0;
}

const struct lev_model_caps *lev_config_model_caps(const struct lev_config *c, const char *model)
{
	for (size_t i = 0; c && model && i < c->n_model_caps; i++)
		if (!strcmp(c->model_caps[i].model, model))
			return &c->model_caps[i];
	return NULL;
}

/* One [rate_limits.PROVIDER] table into E. */
static int rate_limit_fn(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 const char *path, struct lev_rate_limit *e, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);

	for (i = 0; i < n; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);
		uint64_t *to = NULL;
		int r;

		if (lev_tomlval_key_is(t, i, "requests_per_minute"))
			to = &e->requests_per_minute;
		else if (lev_tomlval_key_is(t, i, "tokens_per_minute"))
			to = &e->tokens_per_minute;
		if (!to) {
			warn_unknown(c, t, i, path);
			continue;
		}
		/* 0 is no way to say "no limit" (Leviath): leave the key out */
		r = lev_tomlval_u64(c, lev_toml_table_value(t, i), p, 1, (uint64_t)1 << 40, to, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* [rate_limits.PROVIDER] requests_per_minute / tokens_per_minute */
static int parse_rate_limits(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			     struct lev_config *cfg, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);

	if (n > PER_AGENT_MAX) {
		unsigned line = 0, col = 0;
		lev_toml_table_pos(t, &line, &col);
		return lev_tomlval_fail(c, line, col, err, "[rate_limits] has too many entries");
	}
	cfg->rate_limits = xcalloc(n ? n : 1, sizeof(*cfg->rate_limits));
	for (i = 0; i < n; i++) {
		const struct lev_toml_table *sub = NULL;
		_cleanup_free_ char *p = lev_tomlval_key_path("rate_limits", t, i);
		struct lev_rate_limit *e = &cfg->rate_limits[cfg->n_rate_limits];
		int r = lev_tomlval_table(c, lev_toml_table_value(t, i), p, &sub, err);

		if (r < 0)
			return r;
		e->provider = lev_tomlval_key_dup(t, i);
		cfg->n_rate_limits++;
		r = rate_limit_fn(c, sub, p, e, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * [webhook] (Leviath's): how the daemon delivers completion webhooks.  Every
 * key is bounded, and a key lev does not know is an error: a misspelled
 * max_retries would otherwise leave the default in force unseen.
 */
static int parse_webhook(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 struct lev_webhook_conf *w, struct lev_err *err)
{
	static const struct {
		const char *key;
		size_t off;
		uint64_t min, max;
	} keys[] = {
		{ "max_retries", offsetof(struct lev_webhook_conf, max_retries), 0,
		  LEV_WEBHOOK_RETRIES_MAX },
		{ "base_delay_ms", offsetof(struct lev_webhook_conf, base_delay_ms), 0,
		  LEV_WEBHOOK_DELAY_MS_MAX },
		{ "max_delay_ms", offsetof(struct lev_webhook_conf, max_delay_ms), 0,
		  LEV_WEBHOOK_DELAY_MS_MAX },
		{ "timeout_secs", offsetof(struct lev_webhook_conf, timeout_secs), 1,
		  LEV_WEBHOOK_TIMEOUT_MAX },
	};
	unsigned line = 0, col = 0;

	for (size_t i = 0, n = lev_toml_table_len(t); i < n; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path("webhook", t, i);
		size_t k;
		int r;

		for (k = 0; k < ARRAY_SIZE(keys) && !lev_tomlval_key_is(t, i, keys[k].key); k++)
			;
		if (k == ARRAY_SIZE(keys)) {
			lev_toml_table_key_pos(t, i, &line, &col);
			return lev_tomlval_fail(c, line, col, err, "unknown key '%s' in [webhook] "
						"(max_retries, base_delay_ms, max_delay_ms, "
						"timeout_secs)", p);
		}
		r = lev_tomlval_u64(c, lev_toml_table_value(t, i), p, keys[k].min, keys[k].max,
				    (uint64_t *)((char *)w + keys[k].off), err);
		if (r < 0)
			return r;
	}
	if (w->base_delay_ms > w->max_delay_ms) {
		lev_toml_table_pos(t, &line, &col);
		return lev_tomlval_fail(c, line, col, err, "webhook.base_delay_ms (%llu) is above "
					"webhook.max_delay_ms (%llu)",
					(unsigned long long)w->base_delay_ms,
					(unsigned long long)w->max_delay_ms);
	}
	return 0;
}

/* [tools.web_search] endpoint = "https://..." */
static int parse_tools(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
		       struct lev_config *cfg, struct lev_err *err)
{
	static const char *const tools_known[] = { "web_search", NULL };
	static const char *const search_known[] = { "endpoint", NULL };
	const struct lev_toml_value *v = lev_toml_table_get(t, "web_search");
	const struct lev_toml_table *ws = NULL;
	const struct lev_toml_value *ep;
	char *url = NULL;
	int r;

	r = lev_tomlval_check_keys(c, t, "[tools]", tools_known, false, err);
	if (r < 0 || !v)
		return r;
	r = lev_tomlval_table(c, v, "tools.web_search", &ws, err);
	if (r < 0)
		return r;
	r = lev_tomlval_check_keys(c, ws, "[tools.web_search]", search_known, false, err);
	if (r < 0)
		return r;
	ep = lev_toml_table_get(ws, "endpoint");
	if (!ep)
		return 0;
	r = lev_tomlval_string(c, ep, "tools.web_search.endpoint", &url, err);
	if (r < 0)
		return r;
	if (!lev_startswith(url, "https://") && !lev_startswith(url, "http://")) {
		free(url);
		return lev_tomlval_fail(c, ep->line, ep->col, err,
					"tools.web_search.endpoint must be an http:// or https:// URL");
	}
	free(cfg->web_search_endpoint);
	cfg->web_search_endpoint = url;
	return 0;
}

static int parse_provider(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			  const char *table, struct lev_provider_conf *pc, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);
	bool has_kind = false;

	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(table, t, i);
		int r, e = 0;

		if (lev_tomlval_key_is(t, i, "kind")) {
			r = lev_tomlval_enum(c, v, p, provider_kind_names, _LEV_PROVIDER_KIND_MAX,
					     &e, err);
			if (r == 0) {
				pc->kind = (enum lev_provider_kind)e;
				has_kind = true;
			}
		} else if (lev_tomlval_key_is(t, i, "base_url"))
			r = lev_tomlval_set_str(c, v, p, &pc->base_url, err);
		else if (lev_tomlval_key_is(t, i, "api_key_env"))
			r = lev_tomlval_set_str(c, v, p, &pc->api_key_env, err);
		else if (lev_tomlval_key_is(t, i, "model"))
			r = lev_tomlval_set_str(c, v, p, &pc->model, err);
		else if (lev_tomlval_key_is(t, i, "timeout_secs"))
			r = lev_tomlval_u64(c, v, p, 1, SECS_MAX, &pc->timeout_secs, err);
		else if (lev_tomlval_key_is(t, i, "context_window"))
			r = lev_tomlval_u64(c, v, p, 1024, 100000000, &pc->context_window, err);
		else if (lev_tomlval_key_is(t, i, "api_key")) {
			/* a key in the config would be readable by anything that reads it */
			unsigned line = 0, col = 0;
			lev_toml_table_key_pos(t, i, &line, &col);
			return lev_tomlval_fail(c, line, col, err,
						"'%s' is not accepted: put the key in an environment "
						"variable and name it with 'api_key_env'", p);
		} else {
			warn_unknown(c, t, i, table);
			r = 0;
		}
		if (r < 0)
			return r;
	}
	if (!has_kind) {
		unsigned line = 0, col = 0;
		lev_toml_table_pos(t, &line, &col);
		return lev_tomlval_fail(c, line, col, err,
					"[%s] needs 'kind' (one of openai, anthropic, script)", table);
	}
	return 0;
}

/*
 * Walk a table of per-agent tables ([agent_read_paths.<agent>] and
 * friends), calling FN for each.  Agent names that can never match an
 * installed agent are warned about.
 */
typedef int (*per_agent_fn)(const struct lev_tomlval_ctx *c, const char *agent,
			    const struct lev_toml_table *t, const char *table,
			    struct lev_config *cfg, struct lev_err *err);

static int per_agent(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
		     const char *name, per_agent_fn fn, struct lev_config *cfg,
		     struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);

	if (n > PER_AGENT_MAX) {
		unsigned line = 0, col = 0;
		lev_toml_table_pos(t, &line, &col);
		return lev_tomlval_fail(c, line, col, err, "[%s] has more than %d agents", name,
					PER_AGENT_MAX);
	}
	for (i = 0; i < n; i++) {
		const struct lev_toml_table *sub = NULL;
		_cleanup_free_ char *p = lev_tomlval_key_path(name, t, i);
		_cleanup_free_ char *agent = lev_tomlval_key_dup(t, i);
		int r;

		r = lev_tomlval_table(c, lev_toml_table_value(t, i), p, &sub, err);
		if (r < 0)
			return r;
		if (!lev_agent_name_valid(agent)) {
			unsigned line = 0, col = 0;
			lev_toml_table_key_pos(t, i, &line, &col);
			lev_tomlval_warn(c, line, "[%s] names '%s', which is not a valid agent name "
					 "and can never apply", p, agent);
		}
		r = fn(c, agent, sub, p, cfg, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int agent_read_paths_fn(const struct lev_tomlval_ctx *c, const char *agent,
			       const struct lev_toml_table *t, const char *table,
			       struct lev_config *cfg, struct lev_err *err)
{
	struct lev_agent_read_paths e = { .agent = NULL, .allow = NULL };
	size_t i, n = lev_toml_table_len(t);

	for (i = 0; i < n; i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path(table, t, i);
		int r;

		if (!lev_tomlval_key_is(t, i, "allow")) {
			warn_unknown(c, t, i, table);
			continue;
		}
		r = lev_tomlval_set_strv(c, lev_toml_table_value(t, i), p, &e.allow, err);
		if (r < 0) {
			lev_strv_free(e.allow);
			return r;
		}
	}
	e.agent = xstrdup(agent);
	cfg->agent_read_paths = xreallocarray(cfg->agent_read_paths, cfg->n_agent_read_paths + 1,
					      sizeof(e));
	cfg->agent_read_paths[cfg->n_agent_read_paths++] = e;
	return 0;
}

static int agent_tool_perms_fn(const struct lev_tomlval_ctx *c, const char *agent,
			       const struct lev_toml_table *t, const char *table,
			       struct lev_config *cfg, struct lev_err *err)
{
	struct lev_agent_tool_perms e = { .agent = NULL, .perms = { NULL, 0 } };
	int r = lev__tool_perms_parse(c, t, table, &e.perms, err);

	if (r < 0) {
		lev_tool_perms_release(&e.perms);
		return r;
	}
	e.agent = xstrdup(agent);
	cfg->agent_tool_permissions = xreallocarray(cfg->agent_tool_permissions,
						    cfg->n_agent_tool_permissions + 1, sizeof(e));
	cfg->agent_tool_permissions[cfg->n_agent_tool_permissions++] = e;
	return 0;
}

static int agent_safe_fn(const struct lev_tomlval_ctx *c, const char *agent,
			 const struct lev_toml_table *t, const char *table,
			 struct lev_config *cfg, struct lev_err *err)
{
	struct lev_agent_safe_commands e = { NULL, NULL, NULL, false };
	int r = parse_safe(c, t, table, NULL, &e.allow_blueprint, &e.tools, &e.shell, err);

	if (r < 0) {
		lev_strv_free(e.tools);
		lev_strv_free(e.shell);
		return r;
	}
	e.agent = xstrdup(agent);
	cfg->agent_safe_commands = xreallocarray(cfg->agent_safe_commands,
						 cfg->n_agent_safe_commands + 1, sizeof(e));
	cfg->agent_safe_commands[cfg->n_agent_safe_commands++] = e;
	return 0;
}

static int provider_fn(const struct lev_tomlval_ctx *c, const char *agent,
		       const struct lev_toml_table *t, const char *table, struct lev_config *cfg,
		       struct lev_err *err)
{
	struct lev_provider_conf pc;
	int r;

	memset(&pc, 0, sizeof(pc));
	r = parse_provider(c, t, table, &pc, err);
	if (r < 0) {
		free(pc.base_url);
		free(pc.api_key_env);
		free(pc.model);
		return r;
	}
	pc.name = xstrdup(agent);
	cfg->providers = xreallocarray(cfg->providers, cfg->n_providers + 1, sizeof(pc));
	cfg->providers[cfg->n_providers++] = pc;
	return 0;
}

/* [providers.<name>]: provider names are not agent names; no name warning. */
static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a > b && !strcmp(s + a - b, suffix);
}

/* A provider name as Leviath spells them: [a-z0-9_-]+ */
static bool provider_name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	return true;
}

/* The flat entry of NAME, added when missing. */
static struct lev_flat_provider *flat_entry(struct lev_config *cfg, const char *name)
{
	struct lev_flat_provider *f;

	for (size_t i = 0; i < cfg->n_flat_providers; i++)
		if (!strcmp(cfg->flat_providers[i].name, name))
			return &cfg->flat_providers[i];
	cfg->flat_providers = xreallocarray(cfg->flat_providers, cfg->n_flat_providers + 1,
					    sizeof(*cfg->flat_providers));
	f = &cfg->flat_providers[cfg->n_flat_providers++];
	*f = (struct lev_flat_provider){ .name = xstrdup(name) };
	return f;
}

/* NAME_api_key / NAME_base_url: NAME must be a provider name and the value a string. */
static int flat_key(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		    const char *path, const char *k, size_t suffix, struct lev_config *cfg,
		    struct lev_err *err)
{
	_cleanup_free_ char *name = xstrndup(k, strlen(k) - suffix);
	struct lev_flat_provider *f;
	int r;

	r = lev_tomlval_type(c, v, LEV_TOML_STRING, path, err);
	if (r < 0)
		return r;
	if (!provider_name_ok(name))
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' names no provider ('%s' is not a provider name)", path,
					name);
	f = flat_entry(cfg, name);
	if (suffix == strlen("_base_url")) {
		free(f->base_url);
		f->base_url = xstrndup(v->u.str.ptr, v->u.str.len);
		return 0;
	}
	/* the key itself is read when a run needs it, never kept here */
	if (!lev_api_key_valid(v->u.str.ptr) || strlen(v->u.str.ptr) != v->u.str.len)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be 1..%d printable characters with no spaces", path,
					LEV_API_KEY_MAX);
	f->has_key = true;
	return 0;
}

/*
 * Leviath's flat [providers] form: `fallback_order`, `NAME_api_key` and
 * `NAME_base_url` are read; the claude_code switches are type-checked and
 * warned about; any other non-table value is an error.
 */
static int provider_flat(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 size_t i, const char *path, struct lev_config *cfg, struct lev_err *err)
{
	const struct lev_toml_value *v = lev_toml_table_value(t, i);
	_cleanup_free_ char *k = lev_tomlval_key_dup(t, i);
	const char *instead = NULL;
	char **e;
	int r;

	if (!strcmp(k, "fallback_order")) {
		r = lev_tomlval_set_strv(c, v, path, &cfg->fallback_order, err);
		for (e = cfg->fallback_order; r == 0 && e && *e; e++) {
			const char *slash = strchr(*e, '/');
			if (!slash || slash == *e || !slash[1])
				r = lev_tomlval_fail(c, v->line, v->col, err,
						     "'%s' entries must be \"provider/model\"", path);
		}
		return r;
	}
	if (ends_with(k, "_api_key"))
		return flat_key(c, v, path, k, strlen("_api_key"), cfg, err);
	if (ends_with(k, "_base_url"))
		return flat_key(c, v, path, k, strlen("_base_url"), cfg, err);
	if (!strcmp(k, "claude_code_enabled")) {
		r = lev_tomlval_type(c, v, LEV_TOML_BOOL, path, err);
		instead = "an HTTP provider: lev does not run the claude CLI";
	} else if (!strcmp(k, "claude_code_binary") || !strcmp(k, "claude_code_effort") ||
		   !strcmp(k, "anthropic_cache_ttl")) {
		r = lev_tomlval_type(c, v, LEV_TOML_STRING, path, err);
		instead = k[0] == 'a' ? "the provider's default cache lifetime"
				      : "an HTTP provider: lev does not run the claude CLI";
	} else {
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be a table [providers.NAME], not %s", path,
					lev_toml_type_name(v->type));
	}
	if (r == 0)
		lev_tomlval_warn(c, v->line, "not run by lev: Leviath's '%s'; use %s", path,
				 instead);
	return r;
}

static int parse_providers(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			   struct lev_config *cfg, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(t);

	if (n > PER_AGENT_MAX) {
		unsigned line = 0, col = 0;
		lev_toml_table_pos(t, &line, &col);
		return lev_tomlval_fail(c, line, col, err, "[providers] has too many entries");
	}
	for (i = 0; i < n; i++) {
		const struct lev_toml_table *sub = NULL;
		_cleanup_free_ char *p = lev_tomlval_key_path("providers", t, i);
		_cleanup_free_ char *name = lev_tomlval_key_dup(t, i);
		int r;

		if (lev_toml_table_value(t, i)->type != LEV_TOML_TABLE) {
			r = provider_flat(c, t, i, p, cfg, err);
			if (r < 0)
				return r;
			continue;
		}
		r = lev_tomlval_table(c, lev_toml_table_value(t, i), p, &sub, err);
		if (r < 0)
			return r;
		r = provider_fn(c, name, sub, p, cfg, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Leviath's top-level model keys: default_provider, default_model,
 * request_timeout_secs, openrouter_api_key, ollama_base_url.  1 when the
 * key at I was one of them, 0 when not.
 */
static int parse_model_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *root,
			   size_t i, const char *p, struct lev_config *cfg, struct lev_err *err)
{
	const struct lev_toml_value *v = lev_toml_table_value(root, i);
	char **dst = NULL;
	int r;

	if (lev_tomlval_key_is(root, i, "openrouter_api_key"))
		return flat_key(c, v, p, "openrouter_api_key", strlen("_api_key"), cfg, err) ?: 1;
	if (lev_tomlval_key_is(root, i, "ollama_base_url"))
		return flat_key(c, v, p, "ollama_base_url", strlen("_base_url"), cfg, err) ?: 1;
	if (lev_tomlval_key_is(root, i, "request_timeout_secs"))
		return lev_tomlval_u64(c, v, p, 1, 86400, &cfg->request_timeout_secs, err) ?: 1;
	if (lev_tomlval_key_is(root, i, "default_provider"))
		dst = &cfg->default_provider;
	else if (lev_tomlval_key_is(root, i, "default_model"))
		dst = &cfg->default_model;
	else
		return 0;
	r = lev_tomlval_type(c, v, LEV_TOML_STRING, p, err);
	if (r < 0)
		return r;
	if (!v->u.str.len || strlen(v->u.str.ptr) != v->u.str.len)
		return lev_tomlval_fail(c, v->line, v->col, err, "'%s' must not be empty", p);
	if (dst == &cfg->default_provider && !provider_name_ok(v->u.str.ptr))
		return lev_tomlval_fail(c, v->line, v->col, err,
					"'%s' must be a provider name ([a-z0-9_-]), not '%s'", p,
					v->u.str.ptr);
	free(*dst);
	*dst = xstrndup(v->u.str.ptr, v->u.str.len);
	if (dst == &cfg->default_model)
		cfg->default_model_line = v->line;
	return 1;
}

/* default_model is a bare id: a leading "<default_provider>/" is dropped, and said. */
static void strip_default_model(const struct lev_tomlval_ctx *c, struct lev_config *cfg)
{
	size_t n;

	if (!cfg->default_model || !cfg->default_provider)
		return;
	n = strlen(cfg->default_provider);
	if (strncmp(cfg->default_model, cfg->default_provider, n) || cfg->default_model[n] != '/' ||
	    !cfg->default_model[n + 1])
		return;
	lev_tomlval_warn(c, cfg->default_model_line, "default_model '%s' is read as '%s' on default_provider '%s' "
			 "(it is a bare model id)", cfg->default_model, cfg->default_model + n + 1,
			 cfg->default_provider);
	memmove(cfg->default_model, cfg->default_model + n + 1, strlen(cfg->default_model + n + 1) + 1);
}

static int parse_root(const struct lev_tomlval_ctx *c, const struct lev_toml_table *root,
		      struct lev_config *cfg, struct lev_err *err)
{
	size_t i, n = lev_toml_table_len(root);

	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v = lev_toml_table_value(root, i);
		const struct lev_toml_table *t = NULL;
		_cleanup_free_ char *p = lev_tomlval_key_path("", root, i);
		int r;

		if (lev_tomlval_key_is(root, i, "taint_tracking")) {
			r = lev_tomlval_bool(c, v, p, &cfg->taint_tracking, err);
			if (r < 0)
				return r;
			continue;
		}
		r = parse_model_key(c, root, i, p, cfg, err);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		if (lev_tomlval_key_is(root, i, "model_providers") &&
		    v->type == LEV_TOML_TABLE) {
			/* Leviath's Rhai script providers: lev runs none; lint names a stage using one */
			for (size_t j = 0; j < lev_toml_table_len(v->u.table); j++)
				cfg->script_providers = lev_strv_push(
					cfg->script_providers, lev_toml_table_key(v->u.table, j, NULL));
		}
		if (lev_tomlval_key_is(root, i, "mcp_servers")) {
			r = lev__mcp_servers_parse(c, v, cfg, err);
			if (r < 0)
				return r;
			continue;
		}
		if (lev_tomlval_key_is(root, i, "security") ||
		    lev_tomlval_key_is(root, i, "agent_read_paths") ||
		    lev_tomlval_key_is(root, i, "sandbox") ||
		    lev_tomlval_key_is(root, i, "tool_permissions") ||
		    lev_tomlval_key_is(root, i, "agent_tool_permissions") ||
		    lev_tomlval_key_is(root, i, "tool_script_permissions") ||
		    lev_tomlval_key_is(root, i, "safe_commands") ||
		    lev_tomlval_key_is(root, i, "agent_safe_commands") ||
		    lev_tomlval_key_is(root, i, "limits") ||
		    lev_tomlval_key_is(root, i, "rate_limits") ||
		    lev_tomlval_key_is(root, i, "webhook") ||
		    lev_tomlval_key_is(root, i, "model_capabilities") ||
		    lev_tomlval_key_is(root, i, "nudge") ||
		    lev_tomlval_key_is(root, i, "title") ||
		    lev_tomlval_key_is(root, i, "tools") ||
		    lev_tomlval_key_is(root, i, "providers")) {
			r = lev_tomlval_table(c, v, p, &t, err);
			if (r < 0)
				return r;
		} else {
			warn_unknown(c, root, i, "");
			continue;
		}

		if (lev_tomlval_key_is(root, i, "security"))
			r = parse_security(c, t, cfg, err);
		else if (lev_tomlval_key_is(root, i, "agent_read_paths"))
			r = per_agent(c, t, "agent_read_paths", agent_read_paths_fn, cfg, err);
		else if (lev_tomlval_key_is(root, i, "sandbox"))
			r = parse_sandbox(c, t, "sandbox", cfg, err);
		else if (lev_tomlval_key_is(root, i, "tool_permissions"))
			r = lev__tool_perms_parse(c, t, "tool_permissions", &cfg->tool_permissions, err);
		else if (lev_tomlval_key_is(root, i, "agent_tool_permissions"))
			r = per_agent(c, t, "agent_tool_permissions", agent_tool_perms_fn, cfg, err);
		else if (lev_tomlval_key_is(root, i, "tool_script_permissions"))
			r = lev__script_perms_parse(c, t, "tool_script_permissions", false,
						    &cfg->script_permissions, err);
		else if (lev_tomlval_key_is(root, i, "safe_commands"))
			r = parse_safe(c, t, "safe_commands", &cfg->safe_defaults, NULL,
				       &cfg->safe_tools, &cfg->safe_shell, err);
		else if (lev_tomlval_key_is(root, i, "agent_safe_commands"))
			r = per_agent(c, t, "agent_safe_commands", agent_safe_fn, cfg, err);
		else if (lev_tomlval_key_is(root, i, "limits"))
			r = parse_limits(c, t, &cfg->limits, err);
		else if (lev_tomlval_key_is(root, i, "rate_limits"))
			r = parse_rate_limits(c, t, cfg, err);
		else if (lev_tomlval_key_is(root, i, "webhook"))
			r = parse_webhook(c, t, &cfg->webhook, err);
		else if (lev_tomlval_key_is(root, i, "model_capabilities"))
			r = parse_model_caps(c, t, cfg, err);
		else if (lev_tomlval_key_is(root, i, "nudge"))
			r = parse_nudge(c, t, &cfg->nudge, err);
		else if (lev_tomlval_key_is(root, i, "title"))
			r = parse_title(c, t, cfg, err);
		else if (lev_tomlval_key_is(root, i, "tools"))
			r = parse_tools(c, t, cfg, err);
		else
			r = parse_providers(c, t, cfg, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int lev_config_parse(const char *buf, size_t len, const char *name, struct lev_config *out,
		     struct lev_err *err)
{
	struct lev_toml_doc *doc = NULL;
	struct lev_config cfg;
	struct lev_tomlval_ctx c = { .file = name, .warnings = &cfg.warnings };
	int r;

	if (len > LEV_CONFIG_MAX_FILE)
		return lev_err_set(err, -EFBIG, "'%s' is too large (%zu bytes; the limit is %zu)",
				   name, len, LEV_CONFIG_MAX_FILE);
	r = lev_toml_parse(buf, len, name, &doc, err);
	if (r < 0)
		return r;
	lev_config_init(&cfg);
	r = parse_root(&c, lev_toml_root(doc), &cfg, err);
	lev_toml_free(doc);
	if (r == 0)
		strip_default_model(&c, &cfg);
	if (r < 0) {
		lev_config_release(&cfg);
		return r;
	}
	*out = cfg;
	return 0;
}

int lev_config_load_file(const char *path, struct lev_config *out, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *data = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT) {
			lev_config_init(out);
			return 0;
		}
		return lev_err_errno(err, -errno, "cannot open config '%s'", path);
	}
	if (fstat(fd, &st) < 0)
		return lev_err_errno(err, -errno, "cannot stat config '%s'", path);
	if (!S_ISREG(st.st_mode))
		return lev_err_set(err, -EINVAL, "config '%s' is not a regular file", path);
	if (st.st_uid != getuid() && st.st_uid != 0)
		return lev_err_set(err, -EPERM,
				   "config '%s' is owned by uid %u, not by you; refusing to take "
				   "policy from it",
				   path, (unsigned)st.st_uid);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return lev_err_set(err, -EPERM,
				   "config '%s' is writable by %s; refusing to take policy from it "
				   "(fix: chmod 600 '%s')",
				   path, (st.st_mode & S_IWOTH) ? "everyone" : "its group", path);
	r = lev_read_fd(fd, path, LEV_CONFIG_MAX_FILE, &data, &len, err);
	if (r < 0)
		return r;
	r = lev_config_parse(data, len, path, out, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < out->n_flat_providers; i++) {
		if (!out->flat_providers[i].has_key || !(st.st_mode & 077))
			continue;
		r = lev_err_set(err, -EPERM,
				"config '%s' holds an API key ('%s_api_key') and its mode %04o lets "
				"others read it; run 'chmod 600 %s', or move the key to "
				"credentials.toml (docs/config.md)",
				path, out->flat_providers[i].name, (unsigned)(st.st_mode & 07777), path);
		lev_config_release(out);
		return r;
	}
	out->path = xstrdup(path);
	return 0;
}

int lev_config_load(struct lev_config *out, struct lev_err *err)
{
	_cleanup_free_ char *path = NULL;
	int r = lev_datadir_config_path(&path, err);

	if (r < 0)
		return r;
	return lev_config_load_file(path, out, err);
}

/* ---- queries ---------------------------------------------------------- */

/*
 * The providers lev knows by name, as Leviath has them: kind, public
 * endpoint, key variable, and the variable that moves the endpoint.
 */
static const struct lev_builtin_provider builtin_providers[] = {
	{ "openai", LEV_PROVIDER_OPENAI, NULL, "OPENAI_API_KEY", "OPENAI_BASE_URL", NULL },
	{ "anthropic", LEV_PROVIDER_ANTHROPIC, NULL, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
	  NULL },
	{ "openrouter", LEV_PROVIDER_OPENAI, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
	  "OPENROUTER_BASE_URL", NULL },
	/* Gemini's OpenAI-compatible endpoint of its REST API */
	{ "google", LEV_PROVIDER_OPENAI, "https://generativelanguage.googleapis.com/v1beta/openai",
	  "GOOGLE_API_KEY", "GOOGLE_BASE_URL", NULL },
	{ "ollama", LEV_PROVIDER_OPENAI, "http://localhost:11434/v1", NULL, "OLLAMA_HOST", "/v1" },
	{ "script", LEV_PROVIDER_SCRIPT, NULL, NULL, NULL, NULL },
};

const struct lev_builtin_provider *lev_builtin_provider_at(size_t i)
{
	return i < ARRAY_SIZE(builtin_providers) ? &builtin_providers[i] : NULL;
}

const struct lev_builtin_provider *lev_builtin_provider(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(builtin_providers); i++)
		if (!strcmp(builtin_providers[i].name, name))
			return &builtin_providers[i];
	return NULL;
}

char **lev_builtin_provider_vars(bool keys_only)
{
	char **v = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(builtin_providers); i++) {
		if (builtin_providers[i].key_env)
			v = lev_strv_push(v, builtin_providers[i].key_env);
		if (!keys_only && builtin_providers[i].base_env)
			v = lev_strv_push(v, builtin_providers[i].base_env);
	}
	return v;
}


/* Push every NAME of a ${NAME} in the "K<sep>V" entries of V onto *OUT. */
static void push_refs(char ***out, char *const *v)
{
	for (; v && *v; v++) {
		for (const char *p = strstr(*v, "${"); p; p = strstr(p, "${")) {
			const char *end = strchr(p + 2, '}');
			_cleanup_free_ char *name = end ? xstrndup(p + 2, (size_t)(end - p - 2)) : NULL;

			if (name && *name && !lev_strv_contains(*out, name))
				*out = lev_strv_push(*out, name);
			p += 2;
		}
	}
}

char **lev_config_secret_vars(const struct lev_config *c)
{
	char **v = lev_builtin_provider_vars(true);

	for (size_t i = 0; c && i < c->n_providers; i++) {
		const char *k = c->providers[i].api_key_env;

		if (k && *k && !lev_strv_contains(v, k))
			v = lev_strv_push(v, k);
	}
	for (size_t i = 0; c && i < c->n_mcp_servers; i++) {
		push_refs(&v, c->mcp_servers[i].headers);
		push_refs(&v, c->mcp_servers[i].env);
	}
	return v;
}

const struct lev_flat_provider *lev_config_flat_provider(const struct lev_config *c,
							 const char *name)
{
	for (size_t i = 0; c && name && i < c->n_flat_providers; i++)
		if (!strcmp(c->flat_providers[i].name, name))
			return &c->flat_providers[i];
	return NULL;
}

void lev_config_permissions_for_agent(const struct lev_config *c, const char *agent,
				      struct lev_tool_perms *out)
{
	struct lev_tool_perms res;
	size_t i, j, k;

	lev_tool_perms_copy(&res, &c->tool_permissions);
	for (i = 0; agent && i < c->n_agent_tool_permissions; i++) {
		const struct lev_tool_perms *ap = &c->agent_tool_permissions[i].perms;

		if (strcmp(c->agent_tool_permissions[i].agent, agent))
			continue;
		/* an agent entry replaces the global value in every spelling */
		for (j = 0; j < ap->n; j++) {
			for (k = 0; k < res.n;) {
				if (lev_tool_same(res.v[k].tool, ap->v[j].tool)) {
					free(res.v[k].tool);
					memmove(&res.v[k], &res.v[k + 1],
						(res.n - k - 1) * sizeof(res.v[0]));
					res.n--;
				} else {
					k++;
				}
			}
		}
		for (j = 0; j < ap->n; j++)
			lev_tool_perms_set(&res, ap->v[j].tool, ap->v[j].verdict);
	}
	*out = res;
}

const struct lev_agent_read_paths *lev_config_agent_read_paths(const struct lev_config *c,
							      const char *agent)
{
	size_t i;

	for (i = 0; agent && i < c->n_agent_read_paths; i++)
		if (!strcmp(c->agent_read_paths[i].agent, agent))
			return &c->agent_read_paths[i];
	return NULL;
}

char **lev_config_read_path_grants_for_agent(const struct lev_config *c, const char *agent)
{
	const struct lev_agent_read_paths *a = lev_config_agent_read_paths(c, agent);
	char **res = lev_strv_copy(c->read_paths);
	char **s;

	for (s = a ? a->allow : NULL; s && *s; s++)
		res = lev_strv_push(res, *s);
	return res;
}

const struct lev_agent_safe_commands *
lev_config_agent_safe_commands(const struct lev_config *c, const char *agent)
{
	size_t i;

	for (i = 0; agent && i < c->n_agent_safe_commands; i++)
		if (!strcmp(c->agent_safe_commands[i].agent, agent))
			return &c->agent_safe_commands[i];
	return NULL;
}

bool lev_config_honours_blueprint_safe_commands(const struct lev_config *c, const char *agent)
{
	const struct lev_agent_safe_commands *a = lev_config_agent_safe_commands(c, agent);

	return c->allow_blueprint_safe_commands || (a && a->allow_blueprint);
}

static char **append_all(char **dst, char *const *src)
{
	for (; src && *src; src++)
		dst = lev_strv_push(dst, *src);
	return dst;
}

void lev_config_safe_commands_for_agent(const struct lev_config *c, const char *agent,
					char *const *bp_tools, char *const *bp_shell,
					bool *defaults_out, char ***tools_out, char ***shell_out)
{
	const struct lev_agent_safe_commands *a = lev_config_agent_safe_commands(c, agent);
	char **tools = append_all(NULL, c->safe_tools);
	char **shell = append_all(NULL, c->safe_shell);

	if (a) {
		tools = append_all(tools, a->tools);
		shell = append_all(shell, a->shell);
	}
	if (lev_config_honours_blueprint_safe_commands(c, agent)) {
		tools = append_all(tools, bp_tools);
		shell = append_all(shell, bp_shell);
	}
	*defaults_out = c->safe_defaults;
	*tools_out = tools;
	*shell_out = shell;
}

const struct lev_provider_conf *lev_config_provider(const struct lev_config *c,
						    const char *name)
{
	size_t i;

	for (i = 0; name && i < c->n_providers; i++)
		if (!strcmp(c->providers[i].name, name))
			return &c->providers[i];
	return NULL;
}
