/*
 * config-mcp.c - [[mcp_servers]] in config.toml (docs/mcp.md).
 *
 * Only the user's config starts a server: a blueprint's [[mcp_servers]] is
 * a request (blueprint.h), never read here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/config.h"
#include "liblev/conf/toml.h"
#include "liblev/conf/tomlval.h"

#define MCP_NAME_MAX 64

static const char *const server_keys[] = {
	"name", "command", "args", "env", "cwd", "url", "headers", "timeout_secs",
	"max_result_bytes", "sandbox", "transport", "allow_local_network",
	"oauth_client_id", NULL,
};

static const char *const sandbox_words[] = { "inherit", "none" };
/* Leviath's optional transport word; it must agree with command/url */
static const char *const transport_words[] = { "stdio", "http" };

bool lev_mcp_server_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > MCP_NAME_MAX || strstr(name, "__"))
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
			return false;
	return true;
}

const struct lev_mcp_server_conf *lev_config_mcp_server(const struct lev_config *c,
							const char *name)
{
	for (size_t i = 0; name && i < c->n_mcp_servers; i++)
		if (!strcmp(c->mcp_servers[i].name, name))
			return &c->mcp_servers[i];
	return NULL;
}

static void server_release(struct lev_mcp_server_conf *s)
{
	free(s->name);
	free(s->command);
	lev_strv_free(s->args);
	lev_strv_free(s->env);
	free(s->cwd);
	free(s->url);
	lev_strv_free(s->headers);
	free(s->oauth_client_id);
}

void lev__mcp_servers_release(struct lev_config *cfg)
{
	for (size_t i = 0; i < cfg->n_mcp_servers; i++)
		server_release(&cfg->mcp_servers[i]);
	free(cfg->mcp_servers);
	cfg->mcp_servers = NULL;
	cfg->n_mcp_servers = 0;
}

/* env = { NAME = "value" } or headers = { Name = "value" }, into "NAMEsepvalue" entries. */
static int string_map(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		      const char *path, const char *sep, bool env_names, char ***out,
		      struct lev_err *err)
{
	const struct lev_toml_table *t = NULL;
	char **list = NULL;
	size_t i, n;
	int r;

	r = lev_tomlval_table(c, v, path, &t, err);
	if (r < 0)
		return r;
	n = lev_toml_table_len(t);
	for (i = 0; i < n; i++) {
		_cleanup_free_ char *key = lev_tomlval_key_dup(t, i);
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);
		_cleanup_free_ char *val = NULL;
		bool ok = *key && !strpbrk(key, env_names ? "=" : ":\r\n");

		for (const char *k = key; ok && *k; k++)
			ok = (unsigned char)*k > 0x20 && (unsigned char)*k < 0x7f;
		if (!ok) {
			unsigned line = 0, col = 0;

			lev_toml_table_key_pos(t, i, &line, &col);
			lev_strv_free(list);
			return lev_tomlval_fail(c, line, col, err, "'%s' is not a valid %s name", p,
						env_names ? "variable" : "header");
		}
		r = lev_tomlval_string(c, lev_toml_table_value(t, i), p, &val, err);
		if (r == 0 && strpbrk(val, "\r\n"))
			r = lev_tomlval_fail(c, lev_toml_table_value(t, i)->line,
					     lev_toml_table_value(t, i)->col, err,
					     "'%s' may not hold a line break", p);
		if (r < 0) {
			lev_strv_free(list);
			return r;
		}
		list = lev_strv_push_take(list, xasprintf("%s%s%s", key, sep, val));
	}
	*out = list;
	return 0;
}

static int server_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t, size_t i,
		      const char *p, struct lev_mcp_server_conf *s, struct lev_err *err)
{
	const struct lev_toml_value *v = lev_toml_table_value(t, i);
	int r = 0, e = 0;

	if (lev_tomlval_key_is(t, i, "name"))
		r = lev_tomlval_set_str(c, v, p, &s->name, err);
	else if (lev_tomlval_key_is(t, i, "command"))
		r = lev_tomlval_set_str(c, v, p, &s->command, err);
	else if (lev_tomlval_key_is(t, i, "args"))
		r = lev_tomlval_set_strv(c, v, p, &s->args, err);
	else if (lev_tomlval_key_is(t, i, "env"))
		r = string_map(c, v, p, "=", true, &s->env, err);
	else if (lev_tomlval_key_is(t, i, "cwd"))
		r = lev_tomlval_set_str(c, v, p, &s->cwd, err);
	else if (lev_tomlval_key_is(t, i, "url"))
		r = lev_tomlval_set_str(c, v, p, &s->url, err);
	else if (lev_tomlval_key_is(t, i, "oauth_client_id"))
		r = lev_tomlval_set_str(c, v, p, &s->oauth_client_id, err);
	else if (lev_tomlval_key_is(t, i, "headers"))
		r = string_map(c, v, p, ": ", false, &s->headers, err);
	else if (lev_tomlval_key_is(t, i, "timeout_secs"))
		r = lev_tomlval_u64(c, v, p, 1, 86400, &s->timeout_secs, err);
	else if (lev_tomlval_key_is(t, i, "max_result_bytes"))
		r = lev_tomlval_u64(c, v, p, 1024, (uint64_t)1 << 30, &s->max_result_bytes, err);
	else if (lev_tomlval_key_is(t, i, "sandbox")) {
		r = lev_tomlval_enum(c, v, p, sandbox_words, ARRAY_SIZE(sandbox_words), &e, err);
		if (r == 0)
			s->sandbox_none = e == 1;
	} else if (lev_tomlval_key_is(t, i, "allow_local_network")) {
		r = lev_tomlval_bool(c, v, p, &s->allow_local_network, err);
	} else if (lev_tomlval_key_is(t, i, "transport")) {
		r = lev_tomlval_enum(c, v, p, transport_words, ARRAY_SIZE(transport_words), &e, err);
		if (r == 0)
			s->transport = e + 1;
	}
	return r;
}

/* The whole entry is read; now the rules that span keys. */
static int server_check(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			const char *path, const struct lev_mcp_server_conf *s,
			const struct lev_config *cfg, struct lev_err *err)
{
	unsigned line = 0, col = 0;

	lev_toml_table_pos(t, &line, &col);
	if (!s->name)
		return lev_tomlval_fail(c, line, col, err, "[%s] needs 'name'", path);
	if (!lev_mcp_server_name_ok(s->name))
		return lev_tomlval_fail(c, line, col, err,
					"'%s.name' must be 1 to %d of A-Z a-z 0-9 _ - . without '__' "
					"(got '%s')", path, MCP_NAME_MAX, s->name);
	if (lev_config_mcp_server(cfg, s->name))
		return lev_tomlval_fail(c, line, col, err, "MCP server '%s' is configured twice",
					s->name);
	if (!!s->command == !!s->url)
		return lev_tomlval_fail(c, line, col, err,
					"MCP server '%s' needs either 'command' (stdio) or 'url' "
					"(HTTP), not %s", s->name, s->command ? "both" : "neither");
	if (s->url && !lev_startswith(s->url, "https://") && !lev_startswith(s->url, "http://"))
		return lev_tomlval_fail(c, line, col, err,
					"'%s.url' must be an http:// or https:// URL", path);
	if (s->url && (s->args || s->env || s->cwd))
		return lev_tomlval_fail(c, line, col, err,
					"MCP server '%s' has a 'url': 'args', 'env' and 'cwd' are "
					"for a 'command'", s->name);
	if (s->command && (s->headers || s->allow_local_network || s->oauth_client_id))
		return lev_tomlval_fail(c, line, col, err,
					"MCP server '%s' has a 'command': '%s' is for a 'url'",
					s->name, s->headers ? "headers" : s->allow_local_network ?
					"allow_local_network" : "oauth_client_id");
	if (s->transport && (s->transport == 1) != !!s->command)
		return lev_tomlval_fail(c, line, col, err,
					"MCP server '%s': transport '%s' does not match its '%s'",
					s->name, transport_words[s->transport - 1],
					s->command ? "command" : "url");
	if (s->command && !*s->command)
		return lev_tomlval_fail(c, line, col, err, "'%s.command' is empty", path);
	return 0;
}

static int parse_server(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			const char *path, struct lev_config *cfg, struct lev_err *err)
{
	struct lev_mcp_server_conf s = {
		.timeout_secs = LEV_MCP_DEFAULT_TIMEOUT_SECS,
		.max_result_bytes = LEV_MCP_DEFAULT_RESULT_MAX,
	};
	unsigned col = 0;
	int r;

	lev_toml_table_pos(t, &s.line, &col);
	r = lev_tomlval_check_keys(c, t, "[[mcp_servers]]", server_keys, false, err);
	for (size_t i = 0; r == 0 && i < lev_toml_table_len(t); i++) {
		_cleanup_free_ char *p = lev_tomlval_key_path(path, t, i);

		r = server_key(c, t, i, p, &s, err);
	}
	if (r == 0)
		r = server_check(c, t, path, &s, cfg, err);
	if (r < 0) {
		server_release(&s);
		return r;
	}
	cfg->mcp_servers = xreallocarray(cfg->mcp_servers, cfg->n_mcp_servers + 1, sizeof(s));
	cfg->mcp_servers[cfg->n_mcp_servers++] = s;
	return 0;
}

int lev__mcp_servers_parse(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			   struct lev_config *cfg, struct lev_err *err)
{
	const struct lev_toml_array *a;
	size_t i, n;
	int r;

	r = lev_tomlval_type(c, v, LEV_TOML_ARRAY, "mcp_servers", err);
	if (r < 0)
		return r;
	a = v->u.array;
	n = lev_toml_array_len(a);
	if (n > LEV_MCP_SERVERS_MAX)
		return lev_tomlval_fail(c, v->line, v->col, err,
					"more than %d [[mcp_servers]]", LEV_MCP_SERVERS_MAX);
	for (i = 0; i < n; i++) {
		const struct lev_toml_table *t = NULL;
		_cleanup_free_ char *path = xasprintf("mcp_servers[%zu]", i);

		r = lev_tomlval_table(c, lev_toml_array_at(a, i), path, &t, err);
		if (r == 0)
			r = parse_server(c, t, path, cfg, err);
		if (r < 0)
			return r;
	}
	return 0;
}
