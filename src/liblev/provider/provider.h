/*
 * provider.h - model providers behind one interface: a provider-neutral
 * conversation (request), the model's answer (response), and the
 * providers that map them onto a wire format:
 *
 *	LEV_PROVIDER_OPENAI	Chat Completions with tools (OpenAI, Ollama,
 *				llama.cpp server, vLLM: base_url decides)
 *	LEV_PROVIDER_ANTHROPIC	Messages API with tool_use / tool_result
 *	LEV_PROVIDER_SCRIPT	deterministic turns from a TOML file, no network
 *
 * Typical use (the runtime):
 *
 *	struct lev_provider_spec spec;
 *	lev_provider_spec_init(&spec);
 *	r = lev_provider_spec_from_config(&spec, cfg, "openai", "gpt-4o", NULL,
 *					  blueprint_dir, credentials_path, &err);
 *	r = lev_provider_new(&spec, &p, &err);
 *	lev_provider_spec_release(&spec);
 *	lev_request_init(&req); ... add system, messages, tools ...
 *	r = lev_provider_infer(p, &req, &resp, &err);
 *	... run resp.calls[i], then lev_request_add_response(&req, &resp) and
 *	    one lev_message_add_tool_result() per call in a user message ...
 *	lev_response_release(&resp); lev_request_release(&req);
 *	p = lev_provider_free(p);
 *
 * Ownership.  Every struct here owns its strings and arrays.  json_t
 * fields hold exactly one reference each, released by the owner's
 * release function; functions that take a json_t argument take their own
 * reference (json_incref) and never steal the caller's.  Pointers returned
 * by lev_request_add_message() stay valid until the next call to it or
 * lev_request_release().
 *
 * API keys.  A key is read from the environment variable the provider's
 * config names (api_key_env), or from credentials.toml (credentials.h).
 * It is held only inside struct lev_provider, zeroed when freed, sent
 * only in the auth header, and never appears in an error message: every
 * message is passed through lev_redact_secret() before it is returned,
 * which also catches a server that echoes (part of) the key back.
 *
 * Errors.  lev_provider_infer() returns 0 or a negative code with a
 * one-line message in ERR; lev_provider_last_status() says which class of
 * failure it was (enum lev_provider_error), the HTTP status and the number
 * of attempts.  429, 5xx and dropped/refused connections are retried with
 * capped exponential backoff and jitter (Retry-After is honoured exactly,
 * up to a cap); nothing else is retried.
 */
#pragma once

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/conf/config.h"
#include "liblev/base/error.h"
#include "liblev/base/secrets.h"	/* lev_redact_secret() */

/* ---- the conversation --------------------------------------------------- */

enum lev_role {
	LEV_ROLE_USER,
	LEV_ROLE_ASSISTANT,
};

enum lev_block_type {
	LEV_BLOCK_TEXT,
	LEV_BLOCK_TOOL_USE,
	LEV_BLOCK_TOOL_RESULT,
};

struct lev_block {
	enum lev_block_type type;
	char *text;		/* TEXT: the text; TOOL_RESULT: the result content */
	char *id;		/* TOOL_USE: the call id; TOOL_RESULT: the id it answers */
	char *name;		/* TOOL_USE: the tool */
	json_t *input;		/* TOOL_USE: the arguments object, NULL if they were invalid */
	char *raw_input;	/* TOOL_USE: the arguments as the model wrote them, or NULL */
	bool is_error;		/* TOOL_RESULT */
};

struct lev_message {
	enum lev_role role;
	struct lev_block *blocks;
	size_t n_blocks;
	size_t alloc_blocks;
};

struct lev_tool_def {
	char *name;
	char *description;
	json_t *parameters;	/* JSON Schema object; NULL: no parameters */
};

struct lev_infer_request {
	char *system;		/* NULL: none */
	struct lev_message *messages;
	size_t n_messages;
	size_t alloc_messages;
	struct lev_tool_def *tools;
	size_t n_tools;
	size_t alloc_tools;
	char *model;		/* NULL: the provider's model */
	unsigned max_tokens;	/* 0: the provider's default */
	bool has_temperature;
	double temperature;
};

void lev_request_init(struct lev_infer_request *r);
void lev_request_release(struct lev_infer_request *r);
/* Replace the system text (NULL clears it). */
void lev_request_set_system(struct lev_infer_request *r, const char *text);
/* Set the per-request model override (NULL: the provider's). */
void lev_request_set_model(struct lev_infer_request *r, const char *model);
/* Append an empty message; the pointer is valid until the next append. */
struct lev_message *lev_request_add_message(struct lev_infer_request *r, enum lev_role role);
/* Shorthand: append a user message holding TEXT. */
void lev_request_add_user_text(struct lev_infer_request *r, const char *text);
/* Offer a tool; PARAMETERS (may be NULL) gets a new reference. */
void lev_request_add_tool(struct lev_infer_request *r, const char *name, const char *description,
			  json_t *parameters);

void lev_message_add_text(struct lev_message *m, const char *text);
/*
 * Record a tool call the model made.  INPUT (may be NULL when the model's
 * arguments were not valid JSON) gets a new reference; RAW (may be NULL)
 * is the arguments text as sent, replayed to OpenAI-style servers as is.
 */
void lev_message_add_tool_use(struct lev_message *m, const char *id, const char *name,
			      json_t *input, const char *raw);
void lev_message_add_tool_result(struct lev_message *m, const char *tool_use_id,
				 const char *content, bool is_error);

struct lev_infer_response;
/*
 * Append the assistant turn RESP as a message (its text, then one
 * tool_use block per call), so the next request carries it.
 */
void lev_request_add_response(struct lev_infer_request *r, const struct lev_infer_response *resp);

/* ---- the answer ---------------------------------------------------------- */

#define LEV_PROVIDER_MAX_CALLS 128	/* tool calls in one response */
#define LEV_PROVIDER_MAX_NAME 256	/* bytes in a tool name or call id */

struct lev_tool_call {
	/*
	 * never NULL.  The provider's id ("call_N" when the model sent none)
	 * until the run numbers the call: then lev's own id, unique within the
	 * run, and the provider's id moves to label (see lev_tool_call_wire_id())
	 */
	char *id;
	char *label;		/* the provider's id once lev numbered the call, else NULL */
	char *name;		/* never NULL (may be empty: the runtime refuses it) */
	json_t *arguments;	/* a JSON object, or NULL when the model's JSON was invalid */
	char *raw_arguments;	/* never NULL: the arguments text as sent */
	char *parse_error;	/* NULL when arguments parsed; else why they did not */
};

/* The id the provider knows the call by: what the conversation sends back. */
static inline const char *lev_tool_call_wire_id(const struct lev_tool_call *c)
{
	return c->label ? c->label : c->id;
}

enum lev_finish {
	LEV_FINISH_STOP,	/* the model finished its answer */
	LEV_FINISH_TOOL_CALLS,	/* it wants its tool calls run */
	LEV_FINISH_LENGTH,	/* cut off at max_tokens */
	LEV_FINISH_FILTERED,	/* content filter or refusal */
	LEV_FINISH_OTHER,	/* anything else (see finish_raw) */
	LEV_FINISH_SCRIPT_END,	/* script provider: no turns left; the run is complete */
	_LEV_FINISH_MAX,
};

struct lev_infer_response {
	char *text;		/* never NULL after success ("" when none) */
	struct lev_tool_call *calls;
	size_t n_calls;
	bool has_prompt_tokens;
	bool has_completion_tokens;
	uint64_t prompt_tokens;		/* input tokens, cache reads and writes included */
	uint64_t completion_tokens;
	uint64_t cached_tokens;		/* of prompt_tokens, read from the provider's cache */
	uint64_t cache_write_tokens;	/* of prompt_tokens, written to it */
	enum lev_finish finish;
	char *finish_raw;	/* as the server wrote it, or NULL */
};

void lev_response_release(struct lev_infer_response *r);
const char *lev_finish_name(enum lev_finish f);

/* ---- errors and retries -------------------------------------------------- */

enum lev_provider_error {
	LEV_PERR_NONE,
	LEV_PERR_AUTH,			/* 401/403, or no key: code -EACCES */
	LEV_PERR_RATE_LIMITED,		/* 429: -EBUSY */
	LEV_PERR_SERVER,		/* 5xx: -EREMOTEIO */
	LEV_PERR_TIMEOUT,		/* connect/total timeout, 408: -ETIMEDOUT */
	LEV_PERR_CONNECTION,		/* refused, dropped, unresolvable, TLS: -ECONNRESET
					 * (retried, except TLS/protocol failures) */
	LEV_PERR_INVALID_RESPONSE,	/* not the wire format, or an unexpected redirect: -EBADMSG */
	LEV_PERR_TOO_LARGE,		/* response past max_response: -EFBIG */
	LEV_PERR_REQUEST,		/* another 4xx: the server rejected the request: -EPROTO */
	LEV_PERR_CANCELLED,		/* the cancel flag was raised: -ECANCELED */
	LEV_PERR_CONFIG,		/* bad spec, unreadable script: -EINVAL or LEV_EPARSE */
	_LEV_PERR_MAX,
};

const char *lev_provider_error_name(enum lev_provider_error e);

struct lev_provider_status {
	enum lev_provider_error error;	/* LEV_PERR_NONE after a success */
	long http_status;		/* last HTTP status seen, 0 if none */
	long retry_after_secs;		/* last Retry-After, -1 if none */
	unsigned attempts;		/* requests sent by the last infer */
};

/* Sleep MS milliseconds (tests inject one that records and returns at once). */
typedef void (*lev_sleep_fn)(void *userdata, unsigned ms);

struct lev_retry_policy {
	unsigned max_attempts;		/* tries in all, the first included; 0: 4 */
	unsigned base_delay_ms;		/* first backoff; 0: 500 */
	unsigned max_delay_ms;		/* cap on one computed backoff; 0: 30000 */
	unsigned max_retry_after_ms;	/* a longer Retry-After is not waited for; 0: 120000 */
};

/*
 * The wait before retry number ATTEMPT (1 = after the first failure):
 * RETRY_AFTER_SECS (>= 0) when the server sent one, else
 * min(max_delay, base << (ATTEMPT-1)) with "equal jitter": half fixed,
 * half drawn from RANDOM.  Returns -1 when the server asked for a wait
 * longer than max_retry_after_ms (the caller gives up at once).
 */
long lev_retry_delay_ms(const struct lev_retry_policy *p, unsigned attempt,
			long retry_after_secs, uint32_t random);

/* Whether a failure of class E is worth retrying (429, 5xx, connection). */
bool lev_provider_error_retryable(enum lev_provider_error e);

/* ---- creating a provider ------------------------------------------------- */

#define LEV_PROVIDER_DEFAULT_MAX_TOKENS 4096
#define LEV_PROVIDER_DEFAULT_MAX_RESPONSE ((size_t)8 << 20)

/*
 * Everything a provider needs, all strings owned (lev_provider_spec_release).
 * lev_provider_spec_from_config() fills it from the user's config and the
 * blueprint's model reference; tests fill it by hand.
 */
struct lev_provider_spec {
	enum lev_provider_kind kind;
	char *name;		/* the provider name the user wrote ("openai", "ollama") */
	char *model;		/* sent to the API; not used by the script provider */
	char *base_url;		/* NULL: https://api.openai.com/v1 or https://api.anthropic.com/v1 */
	char *api_key_env;	/* variable holding the key; NULL: no key from the environment */
	char *credentials_path;	/* credentials.toml to consult, or NULL */
	char *config_path;	/* config.toml holding Leviath's [providers] NAME_api_key, or NULL */
	bool keychain;		/* the config asks for credential_store = "keychain" */
	char *script_path;	/* script provider: the turns file (resolved) */
	char *proxy;		/* NULL: no proxy (environment proxies are ignored) */
	char *anthropic_version;	/* NULL: "2023-06-01" */
	bool max_completion_tokens;	/* openai: send max_completion_tokens, not max_tokens */
	unsigned max_tokens;		/* when the request says 0; 0: 4096 */
	long connect_timeout_ms;	/* 0: 10 s */
	long timeout_ms;		/* total per request; 0: 300 s */
	size_t max_response;		/* 0: LEV_PROVIDER_DEFAULT_MAX_RESPONSE */
	struct lev_retry_policy retry;
	lev_sleep_fn sleep;		/* NULL: a real sleep that watches *cancel */
	void *sleep_data;
	/*
	 * Before each retry (not the first attempt): the caller's limit on
	 * requests ([rate_limits]) counts every request sent; < 0 (with ERR)
	 * gives up.  NULL: none.
	 */
	int (*before_retry)(void *data, const char *provider, struct lev_err *err);
	void *before_retry_data;
	uint64_t jitter_seed;		/* 0: random */
	volatile sig_atomic_t *cancel;	/* NULL: not cancellable */
};

void lev_provider_spec_init(struct lev_provider_spec *s);
void lev_provider_spec_release(struct lev_provider_spec *s);

/*
 * Fill S for PROVIDER (a blueprint's model.provider, or the part before
 * '/' of --model) and MODEL (NULL: the provider's configured model) from
 * CFG (may be NULL: built-in defaults only):
 *
 *   - [providers.PROVIDER] gives kind, base_url, api_key_env, model,
 *     timeout_secs;
 *   - without one, the built-in names (lev_builtin_provider(): openai,
 *     anthropic, openrouter, google, ollama, script) mean their public
 *     endpoints with keys in OPENAI_API_KEY, ANTHROPIC_API_KEY,
 *     OPENROUTER_API_KEY, GOOGLE_API_KEY (ollama at
 *     http://localhost:11434/v1 needs none); Leviath's flat
 *     [providers] NAME_base_url, or the variable NAME_BASE_URL
 *     (OLLAMA_HOST), moves the endpoint, and NAME_api_key in config.toml
 *     is read before the variable; any other name is an error telling the
 *     user what to add;
 *   - CFG's request_timeout_secs is the timeout where the provider's
 *     table sets none;
 *   - the script provider needs SCRIPT, a path relative to BLUEPRINT_DIR
 *     that must stay inside it (no absolute path, no "..", no symlink out);
 *   - with [security] credential_store = "file", CREDENTIALS_PATH (may be
 *     NULL) is consulted when the environment has no key.
 *
 * A blueprint can only name a provider and a model: where requests go and
 * which key they carry come from the user's config alone.
 * S must have been initialised.  What the caller already set in S for
 * sleep, sleep_data, cancel, jitter_seed, retry, connect_timeout_ms,
 * max_response, max_tokens (and timeout_ms when the config sets none) is
 * kept; everything else is replaced.  On failure S is left as it was.
 */
int lev_provider_spec_from_config(struct lev_provider_spec *s, const struct lev_config *cfg,
				  const char *provider, const char *model, const char *script,
				  const char *blueprint_dir, const char *credentials_path,
				  struct lev_err *err);

struct lev_provider;

/*
 * Create a provider from SPEC (copied; the caller keeps SPEC).  Resolves
 * the API key now (env first, then credentials.toml) and fails with
 * LEV_PERR_AUTH-style message naming the variable to set when a key is
 * required and missing; loads and checks a script now.  *out is owned by
 * the caller (lev_provider_free).
 */
int lev_provider_new(const struct lev_provider_spec *spec, struct lev_provider **out,
		     struct lev_err *err);

/*
 * Ask the model.  On success fills *out (caller releases with
 * lev_response_release) and returns 0.  On failure returns a negative code
 * (see enum lev_provider_error), *out untouched, and the message in ERR
 * never contains the API key.
 */
int lev_provider_infer(struct lev_provider *p, const struct lev_infer_request *req,
		       struct lev_infer_response *out, struct lev_err *err);

/*
 * A turn was taken from elsewhere (a run replayed from its journal) in
 * place of this provider's next one: the script provider moves past its
 * next turn, so it goes on where the run was; a live model keeps nothing.
 */
void lev_provider_skip_turn(struct lev_provider *p);

const struct lev_provider_status *lev_provider_last_status(const struct lev_provider *p);
const char *lev_provider_name(const struct lev_provider *p);
const char *lev_provider_model(const struct lev_provider *p);
enum lev_provider_kind lev_provider_kind(const struct lev_provider *p);

/* Free P (the key is zeroed first); accepts NULL; returns NULL. */
struct lev_provider *lev_provider_free(struct lev_provider *p);

/* ---- wire formats (exposed for tests and fuzzing) ------------------------ */

/* The JSON body for REQ; *out is a fresh string (caller frees). */
int lev_openai_encode(const struct lev_infer_request *req, const char *model,
		      unsigned max_tokens, bool max_completion_tokens, char **out,
		      struct lev_err *err);
int lev_anthropic_encode(const struct lev_infer_request *req, const char *model,
			 unsigned max_tokens, char **out, struct lev_err *err);
/*
 * Parse a successful (2xx) response body.  Invalid tool-call arguments are
 * not an error (see struct lev_tool_call); a body that is not the wire
 * format is (-EBADMSG).  *out is written only on success.
 */
int lev_openai_decode(const char *body, size_t len, struct lev_infer_response *out,
		      struct lev_err *err);
int lev_anthropic_decode(const char *body, size_t len, struct lev_infer_response *out,
			 struct lev_err *err);

/*
 * The human message in an error body ({"error":{"message":...}},
 * {"error":"..."}, {"message":...}), printable and cut to MAX bytes, or
 * NULL when there is none.  Caller frees.
 */
char *lev_provider_error_message(const char *body, size_t len, size_t max);

