#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/credentials.h"
#include "liblev/base/http.h"
#include "liblev/provider/provider-internal.h"
#include "liblev/provider/provider.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

/* ---- request ------------------------------------------------------------- */

void lev_request_init(struct lev_infer_request *r)
{
	memset(r, 0, sizeof(*r));
}

static void block_release(struct lev_block *b)
{
	free(b->text);
	free(b->id);
	free(b->name);
	json_decref(b->input);
	free(b->raw_input);
}

void lev_request_release(struct lev_infer_request *r)
{
	if (!r)
		return;
	free(r->system);
	for (size_t i = 0; i < r->n_messages; i++) {
		for (size_t j = 0; j < r->messages[i].n_blocks; j++)
			block_release(&r->messages[i].blocks[j]);
		free(r->messages[i].blocks);
	}
	free(r->messages);
	for (size_t i = 0; i < r->n_tools; i++) {
		free(r->tools[i].name);
		free(r->tools[i].description);
		json_decref(r->tools[i].parameters);
	}
	free(r->tools);
	free(r->model);
	memset(r, 0, sizeof(*r));
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void lev_request_set_system(struct lev_infer_request *r, const char *text)
{
	free(r->system);
	r->system = dup_or_null(text);
}

void lev_request_set_model(struct lev_infer_request *r, const char *model)
{
	free(r->model);
	r->model = dup_or_null(model);
}

struct lev_message *lev_request_add_message(struct lev_infer_request *r, enum lev_role role)
{
	struct lev_message *m;

	if (r->n_messages == r->alloc_messages) {
		r->alloc_messages = r->alloc_messages ? r->alloc_messages * 2 : 8;
		r->messages = xreallocarray(r->messages, r->alloc_messages, sizeof(*r->messages));
	}
	m = &r->messages[r->n_messages++];
	memset(m, 0, sizeof(*m));
	m->role = role;
	return m;
}

void lev_request_add_user_text(struct lev_infer_request *r, const char *text)
{
	lev_message_add_text(lev_request_add_message(r, LEV_ROLE_USER), text);
}

void lev_request_add_tool(struct lev_infer_request *r, const char *name, const char *description,
			  json_t *parameters)
{
	struct lev_tool_def *t;

	if (r->n_tools == r->alloc_tools) {
		r->alloc_tools = r->alloc_tools ? r->alloc_tools * 2 : 8;
		r->tools = xreallocarray(r->tools, r->alloc_tools, sizeof(*r->tools));
	}
	t = &r->tools[r->n_tools++];
	t->name = xstrdup(name ? name : "");
	t->description = dup_or_null(description);
	t->parameters = parameters ? json_incref(parameters) : NULL;
}

static struct lev_block *message_add_block(struct lev_message *m, enum lev_block_type type)
{
	struct lev_block *b;

	if (m->n_blocks == m->alloc_blocks) {
		m->alloc_blocks = m->alloc_blocks ? m->alloc_blocks * 2 : 4;
		m->blocks = xreallocarray(m->blocks, m->alloc_blocks, sizeof(*m->blocks));
	}
	b = &m->blocks[m->n_blocks++];
	memset(b, 0, sizeof(*b));
	b->type = type;
	return b;
}

void lev_message_add_text(struct lev_message *m, const char *text)
{
	message_add_block(m, LEV_BLOCK_TEXT)->text = xstrdup(text ? text : "");
}

void lev_message_add_tool_use(struct lev_message *m, const char *id, const char *name,
			      json_t *input, const char *raw)
{
	struct lev_block *b = message_add_block(m, LEV_BLOCK_TOOL_USE);

	b->id = xstrdup(id ? id : "");
	b->name = xstrdup(name ? name : "");
	b->input = input ? json_incref(input) : NULL;
	b->raw_input = dup_or_null(raw);
}

void lev_message_add_tool_result(struct lev_message *m, const char *tool_use_id,
				 const char *content, bool is_error)
{
	struct lev_block *b = message_add_block(m, LEV_BLOCK_TOOL_RESULT);

	b->id = xstrdup(tool_use_id ? tool_use_id : "");
	b->text = xstrdup(content ? content : "");
	b->is_error = is_error;
}

void lev_request_add_response(struct lev_infer_request *r, const struct lev_infer_response *resp)
{
	struct lev_message *m = lev_request_add_message(r, LEV_ROLE_ASSISTANT);

	if (resp->text && resp->text[0])
		lev_message_add_text(m, resp->text);
	for (size_t i = 0; i < resp->n_calls; i++)
		lev_message_add_tool_use(m, lev_tool_call_wire_id(&resp->calls[i]),
					 resp->calls[i].name, resp->calls[i].arguments,
					 resp->calls[i].raw_arguments);
}

/* ---- response ------------------------------------------------------------ */

void lev_response_release(struct lev_infer_response *r)
{
	if (!r)
		return;
	free(r->text);
	for (size_t i = 0; i < r->n_calls; i++) {
		free(r->calls[i].id);
		free(r->calls[i].label);
		free(r->calls[i].name);
		json_decref(r->calls[i].arguments);
		free(r->calls[i].raw_arguments);
		free(r->calls[i].parse_error);
	}
	free(r->calls);
	free(r->finish_raw);
	memset(r, 0, sizeof(*r));
}

const char *lev_finish_name(enum lev_finish f)
{
	static const char *const names[_LEV_FINISH_MAX] = {
		[LEV_FINISH_STOP] = "stop",
		[LEV_FINISH_TOOL_CALLS] = "tool_calls",
		[LEV_FINISH_LENGTH] = "length",
		[LEV_FINISH_FILTERED] = "filtered",
		[LEV_FINISH_OTHER] = "other",
		[LEV_FINISH_SCRIPT_END] = "script_end",
	};
	return (unsigned)f < _LEV_FINISH_MAX ? names[f] : "unknown";
}

struct lev_tool_call *lev__response_add_call(struct lev_infer_response *r)
{
	struct lev_tool_call *c;

	r->calls = xreallocarray(r->calls, r->n_calls + 1, sizeof(*r->calls));
	c = &r->calls[r->n_calls++];
	memset(c, 0, sizeof(*c));
	return c;
}

char *lev__json_compact(const json_t *v)
{
	char *s;

	if (!v)
		return xstrdup("{}");
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!s)
		abort();	/* only on out-of-memory */
	return s;
}

void lev__tool_call_set_raw(struct lev_tool_call *c, const char *raw, size_t len)
{
	json_error_t jerr;
	json_t *v;
	size_t i = 0;

	c->raw_arguments = xstrndup(raw, len);
	while (i < len && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r'))
		i++;
	if (i == len) {
		c->arguments = json_object();
		return;
	}
	v = json_loadb(raw, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!v) {
		c->parse_error = xasprintf("arguments are not valid JSON: %s (line %d, column %d)",
					   jerr.text, jerr.line, jerr.column);
		return;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		c->parse_error = xstrdup("arguments are not a JSON object");
		return;
	}
	c->arguments = v;
}

int lev__json_parse_object(const char *body, size_t len, json_t **out, struct lev_err *err)
{
	json_error_t jerr;
	json_t *v;

	v = json_loadb(body, len, 0, &jerr);
	if (!v)
		return lev_err_set(err, -EBADMSG, "response is not JSON: %s (line %d, column %d)",
				   jerr.text, jerr.line, jerr.column);
	if (!json_is_object(v)) {
		json_decref(v);
		return lev_err_set(err, -EBADMSG, "response is not a JSON object");
	}
	*out = v;
	return 0;
}

int lev__bounded_name(const json_t *v, const char *what, char **out, struct lev_err *err)
{
	size_t n;

	if (!json_is_string(v))
		return lev_err_set(err, -EBADMSG, "%s is not a string", what);
	n = json_string_length(v);
	if (n > LEV_PROVIDER_MAX_NAME)
		return lev_err_set(err, -EBADMSG, "%s is longer than %d bytes", what,
				   LEV_PROVIDER_MAX_NAME);
	if (memchr(json_string_value(v), '\0', n))
		return lev_err_set(err, -EBADMSG, "%s holds a NUL byte", what);
	*out = xstrndup(json_string_value(v), n);
	return 0;
}

/* ---- errors, retries, redaction ------------------------------------------- */

const char *lev_provider_error_name(enum lev_provider_error e)
{
	static const char *const names[_LEV_PERR_MAX] = {
		[LEV_PERR_NONE] = "none",
		[LEV_PERR_AUTH] = "auth",
		[LEV_PERR_RATE_LIMITED] = "rate_limited",
		[LEV_PERR_SERVER] = "server",
		[LEV_PERR_TIMEOUT] = "timeout",
		[LEV_PERR_CONNECTION] = "connection",
		[LEV_PERR_INVALID_RESPONSE] = "invalid_response",
		[LEV_PERR_TOO_LARGE] = "too_large",
		[LEV_PERR_REQUEST] = "request",
		[LEV_PERR_CANCELLED] = "cancelled",
		[LEV_PERR_CONFIG] = "config",
	};
	return (unsigned)e < _LEV_PERR_MAX ? names[e] : "unknown";
}

bool lev_provider_error_retryable(enum lev_provider_error e)
{
	return e == LEV_PERR_RATE_LIMITED || e == LEV_PERR_SERVER || e == LEV_PERR_CONNECTION;
}

static unsigned or_default(unsigned v, unsigned def)
{
	return v ? v : def;
}

long lev_retry_delay_ms(const struct lev_retry_policy *p, unsigned attempt,
			long retry_after_secs, uint32_t random)
{
	unsigned base = or_default(p->base_delay_ms, 500);
	unsigned cap = or_default(p->max_delay_ms, 30000);
	unsigned ra_cap = or_default(p->max_retry_after_ms, 120000);
	uint64_t d;

	if (retry_after_secs >= 0) {
		if ((uint64_t)retry_after_secs * 1000 > ra_cap)
			return -1;
		return retry_after_secs * 1000;
	}
	if (attempt == 0)
		attempt = 1;
	d = attempt - 1 >= 32 ? (uint64_t)cap : (uint64_t)base << (attempt - 1);
	if (d > cap)
		d = cap;
	/* Equal jitter: never less than half the backoff, never more than all of it. */
	return (long)(d / 2 + random % (d - d / 2 + 1));
}

static char *printable_copy(const char *s, size_t max)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t n = strlen(s);

	for (size_t i = 0; i < n && b.len < max; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n' || c == '\r' || c == '\t')
			lev_buf_addch(&b, ' ');
		else if (c < 0x20 || c == 0x7f)
			continue;
		else
			lev_buf_addch(&b, (char)c);
	}
	if (n > max)
		lev_buf_adds(&b, "...");
	return lev_buf_detach(&b, NULL);
}

char *lev_provider_error_message(const char *body, size_t len, size_t max)
{
	json_t *root, *e;
	const char *msg = NULL;
	char *r = NULL;

	if (!body || len == 0)
		return NULL;
	root = json_loadb(body, len, 0, NULL);
	if (!root)
		return NULL;
	e = json_object_get(root, "error");
	if (json_is_object(e))
		msg = json_string_value(json_object_get(e, "message"));
	else if (json_is_string(e))
		msg = json_string_value(e);
	if (!msg)
		msg = json_string_value(json_object_get(root, "message"));
	if (!msg)
		msg = json_string_value(json_object_get(root, "detail"));
	if (msg && *msg)
		r = printable_copy(msg, max);
	json_decref(root);
	return r;
}

/* ---- spec ----------------------------------------------------------------- */

void lev_provider_spec_init(struct lev_provider_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->kind = LEV_PROVIDER_OPENAI;
}

void lev_provider_spec_release(struct lev_provider_spec *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->model);
	free(s->base_url);
	free(s->api_key_env);
	free(s->credentials_path);
	free(s->config_path);
	free(s->script_path);
	free(s->proxy);
	free(s->anthropic_version);
	lev_provider_spec_init(s);
}

static void spec_copy(struct lev_provider_spec *dst, const struct lev_provider_spec *src)
{
	*dst = *src;
	dst->name = dup_or_null(src->name);
	dst->model = dup_or_null(src->model);
	dst->base_url = dup_or_null(src->base_url);
	dst->api_key_env = dup_or_null(src->api_key_env);
	dst->credentials_path = dup_or_null(src->credentials_path);
	dst->config_path = dup_or_null(src->config_path);
	dst->script_path = dup_or_null(src->script_path);
	dst->proxy = dup_or_null(src->proxy);
	dst->anthropic_version = dup_or_null(src->anthropic_version);
}

/*
 * Resolve SCRIPT against DIR, refusing anything that leaves DIR: absolute
 * paths, ".." components and symbolic links pointing out.
 */
static int resolve_script(const char *dir, const char *script, char **out, struct lev_err *err)
{
	_cleanup_free_ char *joined = NULL, *real_dir = NULL, *real = NULL;
	size_t n;

	if (!script || !*script)
		return lev_err_set(err, -EINVAL,
				   "the script provider needs 'script', a file beside the blueprint");
	if (!dir)
		return lev_err_set(err, -EINVAL, "no blueprint directory to resolve script '%s'",
				   script);
	if (script[0] == '/')
		return lev_err_set(err, -EINVAL,
				   "script '%s' must be a path relative to the blueprint directory",
				   script);
	for (const char *p = script; *p;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return lev_err_set(err, -EINVAL,
					   "script '%s' must stay inside the blueprint directory "
					   "(no '..')",
					   script);
		p += len;
		while (*p == '/')
			p++;
	}
	joined = lev_path_join(dir, script);
	real_dir = realpath(dir, NULL);
	if (!real_dir)
		return lev_err_errno(err, -errno, "cannot resolve blueprint directory '%s'", dir);
	real = realpath(joined, NULL);
	if (!real)
		return lev_err_errno(err, -errno, "cannot open script '%s'", joined);
	n = strlen(real_dir);
	if (strncmp(real, real_dir, n) != 0 || (real[n] != '/' && strcmp(real_dir, "/") != 0))
		return lev_err_set(err, -EPERM,
				   "script '%s' resolves to '%s', outside the blueprint directory",
				   script, real);
	*out = TAKE_PTR(real);
	return 0;
}

/* BASE with SUFFIX (e.g. "/v1") unless it already ends so; trailing slashes dropped. */
static char *base_with(const char *base, const char *suffix)
{
	size_t n = strlen(base), k = suffix ? strlen(suffix) : 0;

	while (n > 0 && base[n - 1] == '/')
		n--;
	if (!k || (n >= k && !strncmp(base + n - k, suffix, k)))
		return xstrndup(base, n);
	return xasprintf("%.*s%s", (int)n, base, suffix);
}

/* Fill N for the built-in provider NAME; -ENOENT for a name lev does not know. */
static int builtin_spec(struct lev_provider_spec *n, const struct lev_config *cfg,
			const char *name)
{
	const struct lev_flat_provider *f = lev_config_flat_provider(cfg, name);
	const struct lev_builtin_provider *b = lev_builtin_provider(name);
	const char *base;

	if (!b)
		return -ENOENT;
	n->kind = b->kind;
	n->api_key_env = b->key_env ? xstrdup(b->key_env) : NULL;
	/* the config's NAME_base_url, then the variable, then the public endpoint */
	base = f && f->base_url ? f->base_url : NULL;
	if (!base && b->base_env) {
		base = secure_getenv(b->base_env);
		if (base && !*base)
			base = NULL;
	}
	if (base)
		n->base_url = base_with(base, b->suffix);
	else if (b->base_url)
		n->base_url = xstrdup(b->base_url);
	if (f && f->has_key && cfg->path)
		n->config_path = xstrdup(cfg->path);
	return 0;
}

int lev_provider_spec_from_config(struct lev_provider_spec *s, const struct lev_config *cfg,
				  const char *provider, const char *model, const char *script,
				  const char *blueprint_dir, const char *credentials_path,
				  struct lev_err *err)
{
	const struct lev_provider_conf *conf = NULL;
	struct lev_provider_spec n;
	int r;

	if (!provider || !*provider)
		return lev_err_set(err, -EINVAL, "no model provider named");
	for (size_t i = 0; cfg && i < cfg->n_providers; i++)
		if (lev_streq(cfg->providers[i].name, provider))
			conf = &cfg->providers[i];

	lev_provider_spec_init(&n);
	n.name = xstrdup(provider);
	if (conf) {
		n.kind = conf->kind;
		n.base_url = dup_or_null(conf->base_url);
		n.api_key_env = dup_or_null(conf->api_key_env);
		n.model = dup_or_null(conf->model);
		n.timeout_ms = conf->timeout_secs > 0 && conf->timeout_secs < 86400
				       ? (long)conf->timeout_secs * 1000
				       : 0;
	} else if (builtin_spec(&n, cfg, provider) < 0) {
		lev_provider_spec_release(&n);
		return lev_err_set(err, -EINVAL,
				   "unknown model provider '%s': add a [providers.%s] table with its "
				   "kind and base_url to config.toml",
				   provider, provider);
	}
	if (!n.timeout_ms && cfg && cfg->request_timeout_secs)
		n.timeout_ms = (long)cfg->request_timeout_secs * 1000;
	if (model && *model) {
		free(n.model);
		n.model = xstrdup(model);
	}
	if (n.kind == LEV_PROVIDER_SCRIPT) {
		r = resolve_script(blueprint_dir, script, &n.script_path, err);
		if (r < 0) {
			lev_provider_spec_release(&n);
			return r;
		}
	} else if (!n.model || !*n.model) {
		lev_provider_spec_release(&n);
		return lev_err_set(err, -EINVAL,
				   "provider '%s' needs a model: set 'model' in the blueprint's model "
				   "table or in [providers.%s]",
				   provider, provider);
	}
	if (credentials_path && (!cfg || cfg->credential_store == LEV_CRED_FILE))
		n.credentials_path = xstrdup(credentials_path);
	n.keychain = cfg && cfg->credential_store == LEV_CRED_KEYCHAIN;
	/* Keep the caller's test hooks and limits. */
	n.sleep = s->sleep;
	n.sleep_data = s->sleep_data;
	n.cancel = s->cancel;
	n.jitter_seed = s->jitter_seed;
	n.retry = s->retry;
	/* Leviath's [limits] inference_retry_*: the config's, where the caller set none */
	if (!n.retry.max_attempts && cfg)
		n.retry.max_attempts = (unsigned)cfg->limits.inference_retry_attempts;
	if (!n.retry.base_delay_ms && cfg)
		n.retry.base_delay_ms = (unsigned)cfg->limits.inference_retry_base_ms;
	if (!n.timeout_ms)
		n.timeout_ms = s->timeout_ms;
	n.connect_timeout_ms = s->connect_timeout_ms;
	n.max_response = s->max_response;
	n.max_tokens = s->max_tokens;
	lev_provider_spec_release(s);
	*s = n;
	return 0;
}

/* ---- provider ------------------------------------------------------------- */

struct lev_provider {
	struct lev_provider_spec spec;
	char *key;
	enum lev_key_source key_source;
	char *url;
	struct lev_script *script;
	struct lev_provider_status status;
	uint64_t rng;
};

static uint32_t next_random(struct lev_provider *p)
{
	/* splitmix64 */
	uint64_t z = (p->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static char *endpoint_url(const struct lev_provider_spec *s)
{
	const char *base = s->base_url;
	size_t n;

	if (!base)
		base = s->kind == LEV_PROVIDER_ANTHROPIC ? "https://api.anthropic.com/v1"
							 : "https://api.openai.com/v1";
	n = strlen(base);
	while (n > 0 && base[n - 1] == '/')
		n--;
	return xasprintf("%.*s%s", (int)n, base,
			 s->kind == LEV_PROVIDER_ANTHROPIC ? "/messages" : "/chat/completions");
}

struct lev_provider *lev_provider_free(struct lev_provider *p)
{
	if (!p)
		return NULL;
	lev_secret_free(p->key);
	free(p->url);
	lev_script_free(p->script);
	lev_provider_spec_release(&p->spec);
	free(p);
	return NULL;
}

int lev_provider_new(const struct lev_provider_spec *spec, struct lev_provider **out,
		     struct lev_err *err)
{
	struct lev_provider *p;
	const char *name = spec->name ? spec->name : "provider";
	int r;

	if ((unsigned)spec->kind >= _LEV_PROVIDER_KIND_MAX)
		return lev_err_set(err, -EINVAL, "provider '%s': unknown kind", name);
	p = xcalloc(1, sizeof(*p));
	spec_copy(&p->spec, spec);
	if (!p->spec.name)
		p->spec.name = xstrdup(name);
	p->status.retry_after_secs = -1;
	p->rng = spec->jitter_seed;
	if (!p->rng && getrandom(&p->rng, sizeof(p->rng), GRND_NONBLOCK) != sizeof(p->rng))
		p->rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

	if (spec->kind == LEV_PROVIDER_SCRIPT) {
		r = lev_script_load(spec->script_path, &p->script, err);
		if (r < 0)
			goto fail;
		*out = p;
		return 0;
	}

	if (!spec->model || !*spec->model) {
		r = lev_err_set(err, -EINVAL, "provider '%s': no model configured", name);
		goto fail;
	}
	if (spec->base_url) {
		/* Only http and https; the URL itself is the user's choice. */
		if (!lev_startswith(spec->base_url, "http://") &&
		    !lev_startswith(spec->base_url, "https://")) {
			r = lev_err_set(err, -EINVAL,
					"provider '%s': base_url '%s' must start with http:// or https://",
					name, spec->base_url);
			goto fail;
		}
	}
	r = lev_api_key_resolve(p->spec.name, spec->api_key_env, spec->config_path,
				spec->credentials_path, spec->keychain, &p->key, &p->key_source,
				err);
	if (r < 0) {
		lev_err_wrap(err, "provider '%s'", name);
		goto fail;
	}
	if (!p->key && spec->api_key_env) {
		if (spec->credentials_path)
			r = lev_err_set(err, -EACCES,
					"provider '%s': no API key: set %s in the environment, or add "
					"[providers.%s] api_key to '%s'",
					name, spec->api_key_env, name, spec->credentials_path);
		else if (spec->keychain)
			r = lev_err_set(err, -EACCES,
					"provider '%s': no API key: set %s in the environment, or "
					"store one in the keychain with 'lev auth set %s'",
					name, spec->api_key_env, name);
		else
			r = lev_err_set(err, -EACCES,
					"provider '%s': no API key: set %s in the environment", name,
					spec->api_key_env);
		goto fail;
	}
	p->url = endpoint_url(&p->spec);
	*out = p;
	return 0;
fail:
	lev_provider_free(p);
	return r;
}

const struct lev_provider_status *lev_provider_last_status(const struct lev_provider *p)
{
	return &p->status;
}

const char *lev_provider_name(const struct lev_provider *p)
{
	return p->spec.name;
}

const char *lev_provider_model(const struct lev_provider *p)
{
	return p->spec.model;
}

enum lev_provider_kind lev_provider_kind(const struct lev_provider *p)
{
	return p->spec.kind;
}

static void real_sleep(void *ud, unsigned ms)
{
	volatile sig_atomic_t *cancel = ud;

	while (ms > 0 && !(cancel && *cancel)) {
		unsigned step = ms > 100 ? 100 : ms;
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)step * 1000000L };
		nanosleep(&ts, NULL);
		ms -= step;
	}
}

static int code_of(enum lev_provider_error e)
{
	switch (e) {
	case LEV_PERR_NONE:
		return 0;
	case LEV_PERR_AUTH:
		return -EACCES;
	case LEV_PERR_RATE_LIMITED:
		return -EBUSY;
	case LEV_PERR_SERVER:
		return -EREMOTEIO;
	case LEV_PERR_TIMEOUT:
		return -ETIMEDOUT;
	case LEV_PERR_CONNECTION:
		return -ECONNRESET;
	case LEV_PERR_INVALID_RESPONSE:
		return -EBADMSG;
	case LEV_PERR_TOO_LARGE:
		return -EFBIG;
	case LEV_PERR_REQUEST:
		return -EPROTO;
	case LEV_PERR_CANCELLED:
		return -ECANCELED;
	case LEV_PERR_CONFIG:
	case _LEV_PERR_MAX:
		break;
	}
	return -EINVAL;
}

/* Where the user fixes a key problem, for auth messages. */
static void key_hint(const struct lev_provider *p, char *buf, size_t size)
{
	if (p->key_source == LEV_KEY_FILE)
		snprintf(buf, size, "check [providers.%s] api_key in '%s'", p->spec.name,
			 p->spec.credentials_path);
	else if (p->key_source == LEV_KEY_CONFIG)
		snprintf(buf, size, "check [providers] %s_api_key in '%s'", p->spec.name,
			 p->spec.config_path);
	else if (p->key_source == LEV_KEY_KEYCHAIN)
		snprintf(buf, size, "check the keychain's key ('lev auth set %s' replaces it)",
			 p->spec.name);
	else if (p->key_source == LEV_KEY_ENV)
		snprintf(buf, size, "check the key in $%s", p->spec.api_key_env);
	else
		snprintf(buf, size, "set api_key_env in [providers.%s] and export that variable",
			 p->spec.name);
}

/*
 * Classify one HTTP exchange: 0 when RESP is a usable 2xx, else the error
 * class with a message in ERR (server text included, redacted later).
 */
static enum lev_provider_error classify(struct lev_provider *p, int r,
					const struct lev_http_response *resp,
					struct lev_err *err)
{
	_cleanup_free_ char *smsg = NULL;
	char hint[512];
	long st;

	if (r < 0) {
		switch (r) {
		case -ETIMEDOUT:
			return LEV_PERR_TIMEOUT;
		case -EFBIG:
			return LEV_PERR_TOO_LARGE;
		case -ECANCELED:
			return LEV_PERR_CANCELLED;
		case -EINVAL:
			return LEV_PERR_CONFIG;
		default:
			return LEV_PERR_CONNECTION;
		}
	}
	st = resp->status;
	if (st >= 200 && st < 300)
		return LEV_PERR_NONE;
	smsg = lev_provider_error_message(resp->body, resp->body_len, 300);
	if (st >= 300 && st < 400) {
		lev_err_set(err, -EBADMSG,
			    "unexpected redirect (HTTP %ld) to '%.200s'; redirects are not "
			    "followed, check base_url",
			    st, resp->redirect_url ? resp->redirect_url : "");
		return LEV_PERR_INVALID_RESPONSE;
	}
	if (st == 401 || st == 403) {
		key_hint(p, hint, sizeof(hint));
		lev_err_set(err, -EACCES, "%s (HTTP %ld%s%s); %s",
			    st == 401 ? "authentication failed" : "access denied", st,
			    smsg ? ": " : "", smsg ? smsg : "", hint);
		return LEV_PERR_AUTH;
	}
	if (st == 429) {
		lev_err_set(err, -EBUSY, "rate limited (HTTP 429%s%s)", smsg ? ": " : "",
			    smsg ? smsg : "");
		return LEV_PERR_RATE_LIMITED;
	}
	if (st == 408) {
		lev_err_set(err, -ETIMEDOUT, "the server timed out the request (HTTP 408)");
		return LEV_PERR_TIMEOUT;
	}
	if (st >= 500) {
		lev_err_set(err, -EREMOTEIO, "server error (HTTP %ld%s%s)", st, smsg ? ": " : "",
			    smsg ? smsg : "");
		return LEV_PERR_SERVER;
	}
	lev_err_set(err, -EPROTO, "request rejected (HTTP %ld%s%s)", st, smsg ? ": " : "",
		    smsg ? smsg : "");
	return LEV_PERR_REQUEST;
}

/*
 * "NAME: KEY" in one allocation of its exact size: never through
 * xasprintf(), whose vasprintf() formats into a larger buffer and frees it
 * unwiped (a copy of the key left in freed heap, which a sandbox child
 * cloned from lev then holds).  free_secret_strv() wipes it.
 */
static char *secret_header(const char *name, const char *key)
{
	size_t n = strlen(name), k = strlen(key);
	char *h = xmalloc(n + k + 1);

	memcpy(h, name, n);
	memcpy(h + n, key, k + 1);
	return h;
}

static int build_headers(const struct lev_provider *p, char ***out)
{
	char **h = NULL;

	h = lev_strv_push(h, "Content-Type: application/json");
	h = lev_strv_push(h, "Accept: application/json");
	if (p->spec.kind == LEV_PROVIDER_ANTHROPIC) {
		h = lev_strv_push_take(h, xasprintf("anthropic-version: %s",
						    p->spec.anthropic_version
							    ? p->spec.anthropic_version
							    : "2023-06-01"));
		if (p->key)
			h = lev_strv_push_take(h, secret_header("x-api-key: ", p->key));
	} else if (p->key) {
		h = lev_strv_push_take(h, secret_header("Authorization: Bearer ", p->key));
	}
	*out = h;
	return 0;
}

static void free_secret_strv(char **v)
{
	for (char **q = v; q && *q; q++) {
		explicit_bzero(*q, strlen(*q));
		free(*q);
	}
	free(v);
}

static int infer_http(struct lev_provider *p, const struct lev_infer_request *req,
		      struct lev_infer_response *out, struct lev_err *err)
{
	const struct lev_provider_spec *s = &p->spec;
	const char *model = req->model ? req->model : s->model;
	unsigned max_tokens = req->max_tokens ? req->max_tokens
					      : (s->max_tokens ? s->max_tokens
							       : LEV_PROVIDER_DEFAULT_MAX_TOKENS);
	unsigned max_attempts = s->retry.max_attempts ? s->retry.max_attempts : 4;
	_cleanup_free_ char *body = NULL;
	char **headers = NULL;
	enum lev_provider_error e = LEV_PERR_NONE;
	struct lev_err e1 = LEV_ERR_INIT;
	int r;

	if (s->kind == LEV_PROVIDER_ANTHROPIC)
		r = lev_anthropic_encode(req, model, max_tokens, &body, err);
	else
		r = lev_openai_encode(req, model, max_tokens, s->max_completion_tokens, &body, err);
	if (r < 0) {
		p->status.error = LEV_PERR_CONFIG;
		return r;
	}
	if (strlen(body) > LEV_PROVIDER_MAX_REQUEST) {
		p->status.error = LEV_PERR_REQUEST;
		return lev_err_set(err, -E2BIG, "request of %zu bytes is over the %zu-byte limit",
				   strlen(body), LEV_PROVIDER_MAX_REQUEST);
	}
	build_headers(p, &headers);

	for (unsigned attempt = 1;; attempt++) {
		struct lev_http_request hr = {
			.method = "POST",
			.url = p->url,
			.headers = (const char *const *)headers,
			.body = body,
			.body_len = strlen(body),
			.connect_timeout_ms = s->connect_timeout_ms,
			.timeout_ms = s->timeout_ms ? s->timeout_ms : 300000,
			.max_response = s->max_response ? s->max_response
							: LEV_PROVIDER_DEFAULT_MAX_RESPONSE,
			.proxy = s->proxy,
			.cancel = s->cancel,
		};
		struct lev_http_response resp;
		long delay;

		p->status.attempts = attempt;
		lev_err_clear(&e1);
		r = lev_http_perform(&hr, &resp, &e1);
		p->status.http_status = r < 0 ? 0 : resp.status;
		p->status.retry_after_secs = r < 0 ? -1 : resp.retry_after_secs;
		e = classify(p, r, &resp, &e1);
		if (e == LEV_PERR_NONE) {
			if (s->kind == LEV_PROVIDER_ANTHROPIC)
				r = lev_anthropic_decode(resp.body, resp.body_len, out, &e1);
			else
				r = lev_openai_decode(resp.body, resp.body_len, out, &e1);
			if (r < 0)
				e = LEV_PERR_INVALID_RESPONSE;
		}
		lev_http_response_release(&resp);
		/* A TLS or protocol failure will not heal by itself: not retried. */
		if (e == LEV_PERR_NONE || !lev_provider_error_retryable(e) || r == -EPROTO ||
		    attempt >= max_attempts)
			break;
		delay = lev_retry_delay_ms(&s->retry, attempt, p->status.retry_after_secs,
					   next_random(p));
		if (delay < 0) {
			size_t len = strlen(e1.msg);
			snprintf(e1.msg + len, sizeof(e1.msg) - len,
				 "; the server asked to wait %ld s, longer than the %u s cap",
				 p->status.retry_after_secs,
				 or_default(s->retry.max_retry_after_ms, 120000) / 1000);
			break;
		}
		if (s->sleep)
			s->sleep(s->sleep_data, (unsigned)delay);
		else
			real_sleep((void *)s->cancel, (unsigned)delay);
		if (s->cancel && *s->cancel) {
			e = LEV_PERR_CANCELLED;
			lev_err_set(&e1, -ECANCELED, "request cancelled");
			break;
		}
		/* a retry is a request too: it waits its turn as the first did */
		if (s->before_retry && s->before_retry(s->before_retry_data, s->name, &e1) < 0) {
			e = LEV_PERR_CANCELLED;
			break;
		}
	}
	free_secret_strv(headers);
	p->status.error = e;
	if (e == LEV_PERR_NONE)
		return 0;

	if (e == LEV_PERR_TIMEOUT && r < 0)
		lev_err_set(err, code_of(e), "provider '%s': no answer from '%s' in time (%s)",
			    s->name, p->url, e1.msg);
	else if (p->status.attempts > 1)
		lev_err_set(err, code_of(e), "provider '%s': %s (gave up after %u attempts)",
			    s->name, e1.msg, p->status.attempts);
	else
		lev_err_set(err, code_of(e), "provider '%s': %s", s->name, e1.msg);
	if (err) {
		lev_redact_secret(err->msg, p->key);
		if (err->code == 0)
			err->code = -EINVAL;
	}
	return code_of(e);
}

int lev_provider_infer(struct lev_provider *p, const struct lev_infer_request *req,
		       struct lev_infer_response *out, struct lev_err *err)
{
	int r;

	p->status.error = LEV_PERR_NONE;
	p->status.http_status = 0;
	p->status.retry_after_secs = -1;
	p->status.attempts = 0;
	if (p->spec.cancel && *p->spec.cancel) {
		p->status.error = LEV_PERR_CANCELLED;
		return lev_err_set(err, -ECANCELED, "provider '%s': request cancelled",
				   p->spec.name);
	}
	if (p->spec.kind == LEV_PROVIDER_SCRIPT) {
		p->status.attempts = 1;
		r = lev_script_next(p->script, out, err);
		if (r < 0)
			p->status.error = LEV_PERR_CONFIG;
		return r;
	}
	return infer_http(p, req, out, err);
}

void lev_provider_skip_turn(struct lev_provider *p)
{
	if (p && p->spec.kind == LEV_PROVIDER_SCRIPT)
		lev_script_skip(p->script);
}

/* ---- UTF-8 ----------------------------------------------------------------- */

json_t *lev__jstrn(const char *s, size_t len)
{
	struct lev_buf b = LEV_BUF_INIT;
	json_t *v;

	if (!s)
		return json_string("");
	v = json_stringn(s, len);
	if (v)
		return v;
	(void)lev_buf_add_utf8(&b, s, len, false, NULL);
	v = json_stringn(b.buf, b.len);
	lev_buf_release(&b);
	if (!v)
		abort();	/* only on out-of-memory */
	return v;
}

json_t *lev__jstr(const char *s)
{
	return lev__jstrn(s, s ? strlen(s) : 0);
}
