/*
 * config.h - the user's config.toml as plain data.
 *
 * The config is the user's side of every decision: it is the ceiling for
 * tool permissions, the only source of read-path grants, the sandbox floor,
 * and the switches that let a blueprint ask for more.  A blueprint never
 * writes here.
 *
 * Loading never fails open:
 *   - a missing file gives the defaults (lev_config_init);
 *   - a file that group or others can write, or that is owned by another
 *     user, is refused (a config is policy: whoever can write it decides);
 *   - a file over LEV_CONFIG_MAX_FILE bytes is refused;
 *   - a wrong type or an invalid enum word is an error naming
 *     FILE:LINE:COL and the valid values; nothing falls back to a default;
 *   - an unknown key is a warning "FILE:LINE: unknown key 'k' in [table]"
 *     collected in `warnings` (the library never prints).
 *
 * Ownership: struct lev_config owns every string, array and sub-struct in
 * it; lev_config_release() frees them all.  Getters taking a
 * `const struct lev_config *` borrow.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/base/types.h"

#define LEV_CONFIG_MAX_FILE ((size_t)1 << 20)

/* [security] shell_env: which variables shells and command seeds lose. */
enum lev_shell_env {
	LEV_SHELL_ENV_FILTERED,	/* credential-shaped names, except SSH_AUTH_SOCK */
	LEV_SHELL_ENV_STRICT,	/* every credential-shaped name */
	LEV_SHELL_ENV_CUSTOM,	/* exactly shell_env_withhold */
	LEV_SHELL_ENV_INHERIT,	/* nothing withheld */
	_LEV_SHELL_ENV_MAX,
};

enum lev_credential_store {
	LEV_CRED_FILE,		/* <root>/credentials.toml, 0600 */
	LEV_CRED_KEYCHAIN,
	_LEV_CRED_MAX,
};

/* [tool_script_permissions] (config and blueprint): allow | deny | inherit. */
enum lev_script_perm {
	LEV_SCRIPT_INHERIT,
	LEV_SCRIPT_ALLOW,
	LEV_SCRIPT_DENY,
	_LEV_SCRIPT_PERM_MAX,
};

struct lev_script_perms {
	enum lev_script_perm http_get, http_post, shell, read_file, write_file, env_var;
};

/* One `tool = "verdict"` line, tool name as written. */
struct lev_tool_perm {
	char *tool;
	enum lev_verdict verdict;
};

/* An ordered [tool_permissions]-style table. */
struct lev_tool_perms {
	struct lev_tool_perm *v;
	size_t n;
};

enum lev_provider_kind {
	LEV_PROVIDER_OPENAI,	/* Chat Completions (OpenAI, Ollama, llama.cpp, vLLM) */
	LEV_PROVIDER_ANTHROPIC,	/* Messages API */
	LEV_PROVIDER_SCRIPT,	/* deterministic scripted turns, for tests */
	_LEV_PROVIDER_KIND_MAX,
};

/* [providers.<name>] */
struct lev_provider_conf {
	char *name;
	enum lev_provider_kind kind;
	char *base_url;		/* NULL: the kind's default */
	char *api_key_env;	/* NULL: none (or credentials.toml) */
	char *model;		/* NULL: none */
	uint64_t timeout_secs;	/* 0: unset */
	uint64_t context_window;	/* the model's window in tokens; 0: unset (128000) */
};

/*
 * Leviath's flat [providers] form for a built-in provider NAME:
 * NAME_api_key (the key stays in the file: lev_credentials_lookup_config()
 * reads it when a run needs it) and NAME_base_url; top-level
 * ollama_base_url is ollama's.
 */
struct lev_flat_provider {
	char *name;
	char *base_url;		/* NULL: none */
	bool has_key;		/* NAME_api_key is set in the file */
};

/* A provider lev knows by name, without a [providers.NAME] table. */
struct lev_builtin_provider {
	const char *name;
	enum lev_provider_kind kind;
	const char *base_url;	/* NULL: the kind's default endpoint */
	const char *key_env;	/* the variable its key is read from; NULL: needs no key */
	const char *base_env;	/* the variable that moves its endpoint; NULL: none */
	const char *suffix;	/* appended to a base URL from the config or BASE_ENV ("/v1") */
};

/* [agent_read_paths.<agent>] */
struct lev_agent_read_paths {
	char *agent;
	char **allow;		/* strv, may be NULL */
};

/* [agent_tool_permissions.<agent>] */
struct lev_agent_tool_perms {
	char *agent;
	struct lev_tool_perms perms;
};

/* [agent_safe_commands.<agent>] */
struct lev_agent_safe_commands {
	char *agent;
	char **tools;
	char **shell;
	bool allow_blueprint;	/* honour this agent's own [safe_commands] */
};

/*
 * One [[mcp_servers]] entry: an MCP server the user configured (docs/mcp.md).
 * A stdio server has COMMAND (+ ARGS, ENV, CWD); an HTTP server has URL (+
 * HEADERS, "Name: value" with ${VAR} left unexpanded until use).  Exactly
 * one of the two is set.
 */
struct lev_mcp_server_conf {
	char *name;		/* [A-Za-z0-9_.-], unique */
	char *command;		/* stdio: the program, looked up in PATH inside the sandbox */
	char **args;		/* strv, may be NULL */
	char **env;		/* "NAME=value" (strv, may be NULL), on top of the filtered env */
	char *cwd;		/* NULL: the workdir; else a directory beneath it */
	char *url;		/* streamable HTTP */
	char **headers;		/* "Name: value" (strv, may be NULL) */
	uint64_t timeout_secs;	/* per request; default 60 */
	uint64_t max_result_bytes;	/* per message and result; default 1 MiB */
	bool sandbox_none;	/* sandbox = "none": the user opts this server out */
	bool allow_local_network;	/* url: its loopback/private address is allowed */
	char *oauth_client_id;	/* url: lev mcp login's client id; NULL: registered (RFC 7591) */
	int transport;		/* as written: 0 unset, 1 stdio, 2 http */
	unsigned line;		/* where its table starts */
};

#define LEV_MCP_DEFAULT_TIMEOUT_SECS 60
#define LEV_MCP_DEFAULT_RESULT_MAX ((uint64_t)1 << 20)
#define LEV_MCP_SERVERS_MAX 64

/* [limits]; a 0 byte limit means "not set". */
struct lev_limits {
	uint64_t script_shell_timeout_secs;	/* command seeds; default 60 */
	uint64_t shell_timeout_secs;		/* the shell tool; default 60 */
	uint64_t interaction_timeout_secs;	/* unanswered prompt = denied; default 3600 */
	uint64_t max_tool_call_write_bytes;	/* 0: unset */
	uint64_t max_run_write_bytes;		/* 0: unset */
	uint64_t max_tool_output_bytes;		/* per stream; default 1 MiB */
	uint64_t max_iterations;		/* per stage when the blueprint sets none; default 50 */
	uint64_t max_concurrent_inferences;	/* model requests at once across the daemon
						 * (daemon/pool.h); 0: unset, no limit */
	uint64_t inference_retry_attempts;	/* a model request's tries in all, the first
						 * included; 0: the provider's default (4) */
	uint64_t inference_retry_base_ms;	/* its first backoff; 0: the default (500) */
};

/* [model_capabilities."MODEL"]: Leviath's per-model corrections; 0: unset */
struct lev_model_caps {
	char *model;			/* the model id, as a stage's model names it */
	uint64_t max_context_tokens;	/* the window the run's context is fitted to */
	uint64_t max_output_tokens;	/* caps the max_tokens every request sends */
	bool no_tools;			/* supports_tools = false: lint refuses a stage
					 * that offers it tools */
};

/* [webhook]: how the daemon delivers a run's completion webhook (daemon/webhook.h) */
struct lev_webhook_conf {
	uint64_t max_retries;		/* retries after the first attempt; 0: none */
	uint64_t base_delay_ms;		/* the first backoff; doubles per retry */
	uint64_t max_delay_ms;		/* cap on any single backoff */
	uint64_t timeout_secs;		/* per attempt */
};

/* Leviath's [webhook] defaults, and the bounds lev accepts */
#define LEV_WEBHOOK_MAX_RETRIES 3
#define LEV_WEBHOOK_BASE_DELAY_MS 500
#define LEV_WEBHOOK_MAX_DELAY_MS 30000
#define LEV_WEBHOOK_TIMEOUT_SECS 10
#define LEV_WEBHOOK_RETRIES_MAX 100
#define LEV_WEBHOOK_DELAY_MS_MAX 3600000	/* an hour */
#define LEV_WEBHOOK_TIMEOUT_MAX 600

/* [rate_limits.PROVIDER]: per minute, across every run of the machine; 0: unset */
struct lev_rate_limit {
	char *provider;			/* a [providers.NAME] name, or a built-in kind's */
	uint64_t requests_per_minute;
	uint64_t tokens_per_minute;	/* charged from the provider's reported usage */
};

/*
 * A nudge: the config's [nudge] (every blueprint's default), a blueprint's
 * [agent] nudge or a stage's own; each key cascades on its own.
 */
struct lev_nudge {
	bool present;
	bool has_enabled;
	bool enabled;
	bool has_max;
	uint64_t max;
	char *text;		/* NULL: the built-in text; {stage} is replaced */
};

struct lev_tomlval_ctx;
struct lev_toml_table;
/*
 * Key I of the nudge table T (at PATH) into ND: 0, 1 when it is not one of
 * enabled, max, text (the caller decides: a warning or an error), or a
 * negative code.
 */
int lev_config_nudge_key(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			 size_t i, const char *path, struct lev_nudge *nd, struct lev_err *err);

struct lev_config {
	char *path;		/* the file read, NULL when none existed */

	bool taint_tracking;	/* top-level master switch */

	/* [security] */
	char **allowed_workdirs;
	bool allow_seed_commands;		/* default true */
	bool yolo_allows_flow;			/* [security]: --yolo allows taint and
						 * integrity asks too (default false) */
	bool allow_local_network;
	char **allow_env_vars;
	bool allow_blueprint_read_paths;
	bool allow_blueprint_safe_commands;
	bool allow_blueprint_permissions;
	enum lev_shell_env shell_env;		/* default filtered */
	char **shell_env_withhold;
	char **read_paths;			/* machine-wide read grants */
	enum lev_credential_store credential_store;	/* default file */

	struct lev_agent_read_paths *agent_read_paths;
	size_t n_agent_read_paths;

	/* [sandbox]: the machine-wide default and ceiling */
	struct lev_sandbox_spec sandbox;
	char **sandbox_engine_args;	/* extra engine arguments (user config only) */
	uint64_t sandbox_timeout_secs;	/* 0: unset */

	struct lev_tool_perms tool_permissions;
	struct lev_agent_tool_perms *agent_tool_permissions;
	size_t n_agent_tool_permissions;

	struct lev_script_perms script_permissions;

	/* [safe_commands] */
	bool title_off;		/* Leviath's [title] enabled = false: runs get no title */
	bool safe_defaults;	/* default true: the built-in safe list is active */
	char **safe_tools;
	char **safe_shell;
	struct lev_agent_safe_commands *agent_safe_commands;
	size_t n_agent_safe_commands;

	struct lev_limits limits;
	struct lev_nudge nudge;

	/* [model_capabilities."MODEL"]: corrections for one model id */
	struct lev_model_caps *model_caps;
	size_t n_model_caps;

	/* [rate_limits.PROVIDER]: requests/tokens per minute (run/ratelimit.h) */
	struct lev_rate_limit *rate_limits;
	size_t n_rate_limits;

	struct lev_webhook_conf webhook;	/* [webhook] */

	struct lev_provider_conf *providers;
	size_t n_providers;

	/* Leviath's [providers] fallback_order: "provider/model" entries, NULL if none */
	char **fallback_order;
	struct lev_flat_provider *flat_providers;
	size_t n_flat_providers;
	/* Leviath's top-level keys: which entry of a stage's model list leads (docs/providers.md) */
	char *default_provider;		/* NULL: unset */
	char *default_model;		/* NULL: unset; a bare model id on default_provider */
	unsigned default_model_line;	/* where it was set (for messages) */
	uint64_t request_timeout_secs;	/* 0: unset; [providers.NAME] timeout_secs wins */

	/* [tools.web_search] endpoint: a SearXNG-compatible JSON search URL */
	char *web_search_endpoint;

	/* [[mcp_servers]], in file order */
	/* the names of Leviath's [model_providers.NAME] (Rhai script providers lev does not run) */
	char **script_providers;

	struct lev_mcp_server_conf *mcp_servers;
	size_t n_mcp_servers;

	char **warnings;	/* "FILE:LINE: unknown key 'k' in [t]" */
};

/* The defaults (what a missing config.toml means). */
void lev_config_init(struct lev_config *c);
void lev_config_release(struct lev_config *c);

/*
 * Parse LEN bytes at BUF (named NAME in messages) into *out, which must be
 * unused storage; on failure *out holds nothing to release.  No permission
 * check: that belongs to lev_config_load_file().
 */
int lev_config_parse(const char *buf, size_t len, const char *name, struct lev_config *out,
		     struct lev_err *err);

/*
 * Load PATH: a missing file gives the defaults (with path NULL); otherwise
 * the file must be a regular file owned by the caller or root, not
 * writable by group or others, and at most LEV_CONFIG_MAX_FILE bytes.
 */
int lev_config_load_file(const char *path, struct lev_config *out, struct lev_err *err);

/* Load the config at lev_datadir_config_path(). */
int lev_config_load(struct lev_config *out, struct lev_err *err);

/* The flat [providers] entry of NAME, or NULL. */
const struct lev_flat_provider *lev_config_flat_provider(const struct lev_config *c,
							 const char *name);

/*
 * The built-in provider NAME (openai, anthropic, openrouter, google,
 * ollama, script), or NULL.
 */
const struct lev_builtin_provider *lev_builtin_provider(const char *name);
/* The I-th built-in provider (0, 1, ...), or NULL past the last. */
const struct lev_builtin_provider *lev_builtin_provider_at(size_t i);
/*
 * The variables the built-in providers read (a strv the caller frees):
 * their key variables, and with !KEYS_ONLY their endpoint variables too.
 */
char **lev_builtin_provider_vars(bool keys_only);

/*
 * The variables whose values are secret because of their role, whatever
 * their names: every configured provider's api_key_env, every built-in
 * provider's key variable, and every ${VAR} an MCP server's headers or
 * env name.  A fresh strv (never NULL-only: NULL when there are none).
 */
char **lev_config_secret_vars(const struct lev_config *c);

/* Names for messages. */
const char *lev_shell_env_name(enum lev_shell_env e);
const char *lev_script_perm_name(enum lev_script_perm p);
const char *lev_provider_kind_name(enum lev_provider_kind k);

/*
 * Look TOOL up in PERMS by any spelling (bash and shell are one tool).
 * When several spellings are present the strictest wins.  Returns true and
 * sets *out when found.
 */
bool lev_tool_perms_lookup(const struct lev_tool_perms *perms, const char *tool,
			   enum lev_verdict *out);
/* Add or replace TOOL's entry (matched by exact spelling). */
void lev_tool_perms_set(struct lev_tool_perms *perms, const char *tool, enum lev_verdict v);
void lev_tool_perms_copy(struct lev_tool_perms *dst, const struct lev_tool_perms *src);
void lev_tool_perms_release(struct lev_tool_perms *perms);

/*
 * The user's ceiling for AGENT: global [tool_permissions] with
 * [agent_tool_permissions.AGENT] laid over it (an agent entry replaces the
 * global value for the same tool, in any spelling).  *out is fresh; the
 * caller releases it with lev_tool_perms_release().
 */
void lev_config_permissions_for_agent(const struct lev_config *c, const char *agent,
				      struct lev_tool_perms *out);

/*
 * Read-path grants for AGENT: [security] read_paths followed by
 * [agent_read_paths.AGENT] allow.  Returns a fresh strv (NULL when empty).
 */
char **lev_config_read_path_grants_for_agent(const struct lev_config *c, const char *agent);

/* Borrowed per-agent entries, or NULL. */
const struct lev_agent_safe_commands *
lev_config_agent_safe_commands(const struct lev_config *c, const char *agent);
const struct lev_agent_read_paths *lev_config_agent_read_paths(const struct lev_config *c,
							      const char *agent);

/* Whether a blueprint's [safe_commands] is honoured for AGENT. */
bool lev_config_honours_blueprint_safe_commands(const struct lev_config *c, const char *agent);

/*
 * The safe-command lists for AGENT, layered: [safe_commands], then
 * [agent_safe_commands.AGENT], then the blueprint's own lists (BP_TOOLS,
 * BP_SHELL, may be NULL) only when lev_config_honours_blueprint_safe_commands().
 * *defaults_out says whether the built-in safe list is active.  The strvs
 * are fresh (NULL when empty); the caller frees them.
 */
void lev_config_safe_commands_for_agent(const struct lev_config *c, const char *agent,
					char *const *bp_tools, char *const *bp_shell,
					bool *defaults_out, char ***tools_out, char ***shell_out);

/* The [[mcp_servers]] entry named NAME, or NULL. */
const struct lev_mcp_server_conf *lev_config_mcp_server(const struct lev_config *c,
							const char *name);
/* True when NAME is a valid server name ([A-Za-z0-9_.-], 1..64 bytes, no "__"). */
bool lev_mcp_server_name_ok(const char *name);

/* The [providers.NAME] entry, or NULL. */
/* The [model_capabilities] entry for MODEL, or NULL (also for a NULL MODEL). */
const struct lev_model_caps *lev_config_model_caps(const struct lev_config *c, const char *model);

const struct lev_provider_conf *lev_config_provider(const struct lev_config *c,
						    const char *name);

/*
 * Semi-private (shared with blueprint.c): parse a [tool_script_permissions]
 * table named TABLE into *out (fields not written keep their value).
 */
struct lev_tomlval_ctx;
struct lev_toml_table;
int lev__script_perms_parse(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			    const char *table, bool unknown_is_error, struct lev_script_perms *out,
			    struct lev_err *err);

/*
 * Semi-private (shared with blueprint.c): parse a [tool_permissions]-style
 * table named TABLE, adding its entries to *out.
 */
int lev__tool_perms_parse(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			  const char *table, struct lev_tool_perms *out, struct lev_err *err);

/*
 * Semi-private (config-mcp.c): parse the [[mcp_servers]] array V into
 * CFG's list, and free that list.
 */
struct lev_toml_value;
int lev__mcp_servers_parse(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			   struct lev_config *cfg, struct lev_err *err);
void lev__mcp_servers_release(struct lev_config *cfg);
