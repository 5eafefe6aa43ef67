/*
 * mcp-oauth.c - OAuth 2.1 + PKCE for HTTP MCP servers (mcp-oauth.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/http.h"
#include "liblev/base/mhdapi.h"
#include "liblev/base/secrets.h"
#include "liblev/base/sha256.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/tomlval.h"
#include "liblev/policy/netguard.h"
#include "liblev/tools/mcp-http.h"
#include "liblev/tools/mcp-oauth.h"

#define META_MAX ((size_t)256 << 10)
#define HTTP_TIMEOUT_MS 30000
#define REFRESH_MARGIN_SECS 30
#define STORE_PREFIX "mcp-oauth-"

/* ---- small pieces ----------------------------------------------------------- */

static const char b64url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *b64url_enc(const uint8_t *p, size_t n)
{
	char *o = xmalloc(n / 3 * 4 + 5), *q = o;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*q++ = b64url[(v >> 18) & 63];
		*q++ = b64url[(v >> 12) & 63];
		if (i + 1 < n)
			*q++ = b64url[(v >> 6) & 63];
		if (i + 2 < n)
			*q++ = b64url[v & 63];
	}
	*q = 0;
	return o;
}

/* S decoded, NUL-terminated, or NULL when it is not base64url. */
static char *b64url_dec(const char *s)
{
	size_t n = strlen(s), bits = 0;
	char *o = xmalloc(n * 3 / 4 + 2), *q = o;
	uint32_t acc = 0;

	for (size_t i = 0; i < n; i++) {
		const char *c = strchr(b64url, s[i]);

		if (!s[i] || !c) {
			lev_secret_free(o);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)(c - b64url);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*q++ = (char)((acc >> bits) & 0xff);
		}
	}
	*q = 0;
	return o;
}

/* N random bytes, base64url: PKCE's verifier, the state. */
static int random_b64(size_t n, char **out, struct lev_err *err)
{
	uint8_t b[64];

	if (n > sizeof(b) || getrandom(b, n, 0) != (ssize_t)n)
		return lev_err_errno(err, -errno, "cannot get random bytes");
	*out = b64url_enc(b, n);
	explicit_bzero(b, sizeof(b));
	return 0;
}

static char *s256(const char *verifier)
{
	struct lev_sha256 c;
	uint8_t d[LEV_SHA256_LEN];

	lev_sha256_init(&c);
	lev_sha256_update(&c, verifier, strlen(verifier));
	lev_sha256_final(&c, d);
	return b64url_enc(d, sizeof(d));
}

/* URL's origin, "scheme://host:port" (the port always written), into *out. */
static int origin_of(const char *url, char **out, struct lev_err *err)
{
	struct lev_url u;
	bool v6;

	if (lev_url_parse(url, &u, err) < 0)
		return err->code;
	v6 = strchr(u.host, ':') != NULL;
	*out = xasprintf("%s://%s%s%s:%u", u.scheme, v6 ? "[" : "", u.host, v6 ? "]" : "",
			 u.port);
	lev_url_release(&u);
	return 0;
}

static bool host_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/*
 * Every URL lev uses for OAuth (metadata, endpoints, the server's for a
 * login): https, or http to a loopback address literal; WHAT names it.
 */
static int endpoint_check(const char *what, const char *url, struct lev_err *err)
{
	struct lev_url u;
	int r = 0;

	if (lev_url_parse(url, &u, err) < 0)
		return lev_err_wrap(err, "%s", what);
	if (strcmp(u.scheme, "https") && !host_is_loopback(u.host))
		r = lev_err_set(err, -EACCES, "%s '%s' is plain http: OAuth is refused over http "
				"except to a loopback address", what, u.url);
	lev_url_release(&u);
	return r;
}

static int guard_hook(void *ud, const struct sockaddr *sa, socklen_t len, struct lev_err *err)
{
	bool allow_local = *(bool *)ud;
	enum lev_netaddr_class c = lev_netaddr_classify(sa, len);
	char addr[INET6_ADDRSTRLEN + 8];

	if (c != LEV_NETADDR_METADATA && lev_netaddr_allowed(c, allow_local))
		return 0;
	lev_netaddr_format(sa, len, addr, sizeof(addr));
	return lev_err_set(err, -EACCES, "OAuth: %s is a %s address (allow_local_network is "
			   "not set for this server)", addr, lev_netaddr_class_name(c));
}

/* ---- HTTP with JSON answers ------------------------------------------------- */

struct call {
	const char *what;	/* names it in messages */
	const char *url;
	const char *form;	/* a POST's body (CTYPE), or NULL: GET */
	const char *ctype;	/* NULL: a form */
	const char *capture;	/* a response header to keep, or NULL */
	bool allow_local;
	/* out */
	long status;
	json_t *json;		/* the body when it is a JSON object, else NULL */
	char *captured;
};

static void call_release(struct call *c)
{
	json_decref(c->json);
	c->json = NULL;
	free(c->captured);
	c->captured = NULL;
}

static int call_do(struct call *c, struct lev_err *err)
{
	_cleanup_strv_ char **hdrs = lev_strv_push(NULL, "Accept: application/json");
	_cleanup_free_ char *ct = NULL;
	struct lev_http_response resp;
	struct lev_http_request req = {
		.method = c->form ? "POST" : "GET",
		.url = c->url,
		.body = c->form,
		.body_len = c->form ? strlen(c->form) : 0,
		.timeout_ms = HTTP_TIMEOUT_MS,
		.max_response = META_MAX,
		.connect_hook = guard_hook,
		.connect_hook_data = &c->allow_local,
		.capture_header = c->capture,
	};
	int r = endpoint_check(c->what, c->url, err);

	if (r < 0)
		return r;
	if (c->form) {
		ct = xasprintf("Content-Type: %s",
			       c->ctype ? c->ctype : "application/x-www-form-urlencoded");
		hdrs = lev_strv_push(hdrs, ct);
	}
	req.headers = (const char *const *)hdrs;
	r = lev_http_perform(&req, &resp, err);
	if (r < 0)
		return lev_err_wrap(err, "%s", c->what);
	c->status = resp.status;
	c->json = resp.body_len ? json_loadb(resp.body, resp.body_len, JSON_REJECT_DUPLICATES,
					     NULL) : NULL;
	if (c->json && !json_is_object(c->json)) {
		json_decref(c->json);
		c->json = NULL;
	}
	c->captured = resp.captured ? xstrdup(resp.captured) : NULL;
	if (resp.body)
		explicit_bzero(resp.body, resp.body_len);	/* it may hold tokens */
	lev_http_response_release(&resp);
	return 0;
}

/* The answer call_do() got must be a 2xx with a JSON object, else one line naming WHAT. */
static int call_check(struct call *c, struct lev_err *err)
{
	if (c->status < 200 || c->status > 299) {
		const char *e = json_string_value(json_object_get(c->json, "error"));
		_cleanup_free_ char *p = e ? lev_printable(e, strlen(e), 80) : NULL;

		return lev_err_set(err, -EPROTO, "%s '%s' answered HTTP %ld%s%s", c->what, c->url,
				   c->status, p ? ": " : "", p ? p : "");
	}
	if (!c->json)
		return lev_err_set(err, LEV_EPARSE, "%s '%s' is not a JSON object", c->what,
				   c->url);
	return 0;
}

static int call_json(struct call *c, struct lev_err *err)
{
	int r = call_do(c, err);

	return r < 0 ? r : call_check(c, err);
}

/* O's KEY as a string (*out borrowed); WHAT names O in the error. */
static int need_str(const json_t *o, const char *key, const char *what, const char **out,
		    struct lev_err *err)
{
	const char *v = json_string_value(json_object_get(o, key));

	if (!v || !*v)
		return lev_err_set(err, LEV_EPARSE, "%s has no '%s' (a string)", what, key);
	*out = v;
	return 0;
}

static void form_add(struct lev_buf *b, const char *k, const char *v)
{
	_cleanup_free_ char *e = NULL;

	if (!v)
		return;
	e = lev_http_urlencode(v);
	(void)lev_buf_addf(b, "%s%s=%s", b->len ? "&" : "", k, e);
	explicit_bzero(e, strlen(e));
}

/* ---- the stored record ------------------------------------------------------ */

static char *store_name(const char *origin)
{
	struct lev_sha256 c;
	uint8_t d[LEV_SHA256_LEN];
	char hex[LEV_SHA256_HEX_LEN + 1];

	lev_sha256_init(&c);
	lev_sha256_update(&c, origin, strlen(origin));
	lev_sha256_final(&c, d);
	lev_sha256_hex(d, hex);
	return xasprintf(STORE_PREFIX "%.32s", hex);
}

/* The record for ORIGIN, or *out = NULL; one whose origin is another's is none. */
static int record_load(const struct lev_credstore *s, const char *origin, json_t **out,
		       struct lev_err *err)
{
	_cleanup_free_ char *name = store_name(origin);
	char *v = NULL, *text;
	json_t *j;
	int r = lev_credstore_get(s, name, &v, err);

	*out = NULL;
	if (r < 0 || !v)
		return r;
	text = b64url_dec(v);
	lev_secret_free(v);
	j = text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
	lev_secret_free(text);
	if (!json_is_object(j) ||
	    !lev_streq(json_string_value(json_object_get(j, "origin")), origin) ||
	    !json_is_string(json_object_get(j, "access_token"))) {
		json_decref(j);
		return 0;
	}
	*out = j;
	return 0;
}

static int record_save(const struct lev_credstore *s, json_t *rec, struct lev_err *err)
{
	_cleanup_free_ char *name = store_name(json_string_value(json_object_get(rec, "origin")));
	char *text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS), *v;
	int r;

	if (!text)
		return lev_err_set(err, -ENOMEM, "cannot encode the tokens");
	v = b64url_enc((const uint8_t *)text, strlen(text));
	lev_secret_free(text);
	if (strlen(v) > LEV_API_KEY_MAX)
		r = lev_err_set(err, -E2BIG, "the server's tokens are too long for the credential "
				"store (%zu bytes encoded, at most %d)", strlen(v), LEV_API_KEY_MAX);
	else
		r = lev_credstore_set(s, name, v, err);
	lev_secret_free(v);
	return r;
}

static void json_secret_free(json_t *j)
{
	const char *k;
	json_t *v;

	json_object_foreach(j, k, v)
		if (json_is_string(v))
			explicit_bzero((char *)json_string_value(v), json_string_length(v));
	json_decref(j);
}

/*
 * A token endpoint's answer ANS into REC: access_token (a Bearer),
 * expires_in, a new refresh_token (the old one kept when none comes).
 */
static int token_answer(const json_t *ans, json_t *rec, struct lev_err *err)
{
	const char *at = json_string_value(json_object_get(ans, "access_token"));
	const char *rt = json_string_value(json_object_get(ans, "refresh_token"));
	const char *tt = json_string_value(json_object_get(ans, "token_type"));
	const json_t *ei = json_object_get(ans, "expires_in");

	if (!at || !lev_api_key_valid(at))
		return lev_err_set(err, LEV_EPARSE, "the token endpoint's answer has no usable "
				   "'access_token'");
	if (!tt || strcasecmp(tt, "bearer"))
		return lev_err_set(err, LEV_EPARSE, "the token endpoint's 'token_type' is not "
				   "'Bearer'");
	if (ei && (!json_is_integer(ei) || json_integer_value(ei) < 0))
		return lev_err_set(err, LEV_EPARSE, "the token endpoint's 'expires_in' is not a "
				   "number of seconds");
	if (rt && !lev_api_key_valid(rt))
		return lev_err_set(err, LEV_EPARSE, "the token endpoint's 'refresh_token' is not "
				   "usable");
	json_object_set_new(rec, "access_token", json_string(at));
	if (rt)
		json_object_set_new(rec, "refresh_token", json_string(rt));
	json_object_set_new(rec, "expires_at", json_integer(ei ? (json_int_t)time(NULL) +
							     json_integer_value(ei) : 0));
	return 0;
}

/* ---- discovery -------------------------------------------------------------- */

struct flow {
	const struct lev_mcp_oauth_login_opts *o;
	char *origin;		/* the server's */
	const char *resource;	/* its URL, normalised (u.url) */
	struct lev_url u;
	char *prm_url;		/* from WWW-Authenticate's resource_metadata, or NULL */
	json_t *prm, *asm_;	/* the two metadata documents */
	const char *issuer, *authz, *token, *reg, *revoke;
	char *scope;
	char *client_id, *client_secret;
	char *redirect, *verifier, *state;
};

static void flow_release(struct flow *f)
{
	free(f->origin);
	lev_url_release(&f->u);
	free(f->prm_url);
	json_decref(f->prm);
	json_decref(f->asm_);
	free(f->scope);
	free(f->client_id);
	lev_secret_free(f->client_secret);
	free(f->redirect);
	lev_secret_free(f->verifier);
	free(f->state);
}

/* resource_metadata="URL" out of a WWW-Authenticate value, or NULL. */
static char *resource_metadata(const char *h)
{
	const char *p = h ? strcasestr(h, "resource_metadata=") : NULL;
	size_t n;

	if (!p)
		return NULL;
	p += strlen("resource_metadata=");
	if (*p == '"')
		n = strcspn(++p, "\"");
	else
		n = strcspn(p, ", ");
	return n ? xstrndup(p, n) : NULL;
}

/* POST an initialize without a token: *status, and the resource metadata it names. */
static int probe_server(const struct lev_mcp_server_conf *c, bool allow_local, long *status,
			char **prm_url, struct lev_err *err)
{
	static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
		"\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
		"\"clientInfo\":{\"name\":\"lev\",\"version\":\"0\"}}}";
	_cleanup_strv_ char **hdrs = lev_strv_push(NULL, "Content-Type: application/json");
	struct lev_http_response resp;
	struct lev_http_request req = {
		.method = "POST", .url = c->url, .body = init, .body_len = strlen(init),
		.timeout_ms = HTTP_TIMEOUT_MS, .max_response = META_MAX,
		.connect_hook = guard_hook, .connect_hook_data = &allow_local,
		.capture_header = "www-authenticate",
	};
	int r = 0;

	hdrs = lev_strv_push(hdrs, "Accept: application/json, text/event-stream");
	for (char *const *p = c->headers; p && *p && r == 0; p++) {
		char *e = NULL;

		r = lev_mcp_expand(c->name, "a header", *p, &e, err);
		if (r == 0)
			hdrs = lev_strv_push_take(hdrs, e);
	}
	req.headers = (const char *const *)hdrs;
	if (r == 0 && (r = lev_http_perform(&req, &resp, err)) < 0)
		lev_err_wrap(err, "asking the server");
	for (char **p = hdrs; p && *p; p++)
		explicit_bzero(*p, strlen(*p));
	if (r < 0)
		return r;
	*status = resp.status;
	if (prm_url)
		*prm_url = resource_metadata(resp.captured);
	lev_http_response_release(&resp);
	return 0;
}

int lev_mcp_oauth_probe(const struct lev_mcp_server_conf *c, bool allow_local, bool *needs,
			struct lev_err *err)
{
	long status = 0;
	int r = probe_server(c, allow_local, &status, NULL, err);

	*needs = r == 0 && status == 401;
	return r;
}

/* The path of URL after its origin ("" for "/"). */
static const char *url_path(const char *url)
{
	const char *p = strstr(url, "://");
	const char *s = p ? strchr(p + 3, '/') : NULL;

	return !s || !strcmp(s, "/") ? "" : s;
}

/* The protected-resource metadata (RFC 9728): its resource must be of the server's origin. */
static int discover_prm(struct flow *f, struct lev_err *err)
{
	_cleanup_free_ char *ro = NULL;
	const char *res = NULL, *w = "the protected-resource metadata";
	const json_t *as;
	struct call c = { .what = w, .allow_local = f->o->allow_local };
	char *urls[2] = { f->prm_url ? xstrdup(f->prm_url) : NULL, NULL };
	int r = -ENOENT;

	if (!urls[0]) {
		urls[0] = xasprintf("%s/.well-known/oauth-protected-resource%s", f->origin,
				    url_path(f->resource));
		urls[1] = xasprintf("%s/.well-known/oauth-protected-resource", f->origin);
	}
	for (size_t i = 0; i < 2 && urls[i] && r == -ENOENT; i++) {
		c.url = urls[i];
		r = call_do(&c, err);
		if (r == 0 && c.status == 404 && i == 0 && urls[1]) {
			call_release(&c);
			r = -ENOENT;
		} else if (r == 0) {
			r = call_check(&c, err);
		}
	}
	free(urls[0]);
	free(urls[1]);
	if (r < 0)
		goto out;
	f->prm = TAKE_PTR(c.json);
	as = json_array_get(json_object_get(f->prm, "authorization_servers"), 0);
	if ((r = need_str(f->prm, "resource", w, &res, err)) < 0)
		goto out;
	if (!json_is_string(as)) {
		r = lev_err_set(err, LEV_EPARSE, "%s has no 'authorization_servers' (an array of "
				"URLs)", w);
		goto out;
	}
	if ((r = origin_of(res, &ro, err)) < 0 || strcmp(ro, f->origin)) {
		r = lev_err_set(err, -EACCES, "%s names the resource '%s', not one of the server's "
				"origin %s", w, res, f->origin);
		goto out;
	}
	f->issuer = json_string_value(as);
	r = endpoint_check("the authorization server", f->issuer, err);
out:
	call_release(&c);
	return r;
}

/* Join the strings of A with spaces, or NULL. */
static char *join_scopes(const json_t *a)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(4096);
	size_t i;
	const json_t *v;

	json_array_foreach(a, i, v)
		if (json_is_string(v))
			(void)lev_buf_addf(&b, "%s%s", b.len ? " " : "", json_string_value(v));
	if (!b.len) {
		lev_buf_release(&b);
		return NULL;
	}
	return lev_buf_detach(&b, NULL);
}

static bool has_s256(const json_t *a)
{
	size_t i;
	const json_t *v;

	json_array_foreach(a, i, v)
		if (lev_streq(json_string_value(v), "S256"))
			return true;
	return false;
}

/* Fetch the authorization server's metadata (RFC 8414, else OpenID's). */
static int fetch_asm(struct flow *f, struct lev_err *err)
{
	_cleanup_free_ char *io = NULL;
	const char *w = "the authorization server's metadata";
	const char *wk[] = { "oauth-authorization-server", "openid-configuration" };
	struct call c = { .what = w, .allow_local = f->o->allow_local };
	int r = origin_of(f->issuer, &io, err);

	for (size_t i = 0; i < 2 && r == 0; i++) {
		_cleanup_free_ char *u = xasprintf("%s/.well-known/%s%s", io, wk[i],
						   url_path(f->issuer));

		c.url = u;
		r = call_do(&c, err);
		if (r == 0 && c.status == 404 && i == 0) {
			call_release(&c);
			continue;
		}
		if (r == 0)
			r = call_check(&c, err);
		break;
	}
	if (r == 0)
		f->asm_ = TAKE_PTR(c.json);
	call_release(&c);
	return r;
}

/* Its metadata: the issuer check, the endpoints, S256. */
static int discover_as(struct flow *f, struct lev_err *err)
{
	const char *w = "the authorization server's metadata", *iss = NULL;
	int r = fetch_asm(f, err);

	if (r == 0)
		r = need_str(f->asm_, "issuer", w, &iss, err);
	if (r == 0 && strcmp(iss, f->issuer))
		r = lev_err_set(err, -EACCES, "%s names the issuer '%s', not '%s' (RFC 8414 "
				"issuer check)", w, iss, f->issuer);
	if (r == 0)
		r = need_str(f->asm_, "authorization_endpoint", w, &f->authz, err);
	if (r == 0)
		r = need_str(f->asm_, "token_endpoint", w, &f->token, err);
	if (r == 0 && !has_s256(json_object_get(f->asm_, "code_challenge_methods_supported")))
		r = lev_err_set(err, -ENOTSUP, "%s does not list S256 in "
				"'code_challenge_methods_supported': lev logs in only with PKCE", w);
	if (r == 0)
		r = endpoint_check("the authorization endpoint", f->authz, err);
	if (r == 0)
		r = endpoint_check("the token endpoint", f->token, err);
	f->reg = json_string_value(json_object_get(f->asm_, "registration_endpoint"));
	f->revoke = json_string_value(json_object_get(f->asm_, "revocation_endpoint"));
	if (r == 0 && f->reg)
		r = endpoint_check("the registration endpoint", f->reg, err);
	if (r == 0 && f->revoke)
		r = endpoint_check("the revocation endpoint", f->revoke, err);
	if (r == 0)
		f->scope = join_scopes(json_object_get(f->prm, "scopes_supported"));
	return r;
}

/* Dynamic client registration (RFC 7591) for lev's loopback redirect. */
static int register_client(struct flow *f, struct lev_err *err)
{
	const char *w = "the registration endpoint", *id = NULL;
	_cleanup_free_ char *body = NULL;
	struct call c = { .what = w, .url = f->reg, .ctype = "application/json",
			  .allow_local = f->o->allow_local };
	const json_t *uris, *v;
	json_t *req;
	size_t i;
	bool ours = false;
	int r;

	if (f->o->conf->oauth_client_id) {
		f->client_id = xstrdup(f->o->conf->oauth_client_id);	/* registered by the user */
		return 0;
	}
	if (!f->reg)
		return lev_err_set(err, -ENOTSUP, "the authorization server offers no "
				   "'registration_endpoint' to register lev as a client; set "
				   "oauth_client_id in the server's [[mcp_servers]] entry");
	req = json_pack("{s:s, s:[s], s:[s,s], s:[s], s:s}", "client_name", "lev",
			"redirect_uris", f->redirect, "grant_types", "authorization_code",
			"refresh_token", "response_types", "code", "token_endpoint_auth_method",
			"none");
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	c.form = body;
	r = call_json(&c, err);
	if (r == 0)
		r = need_str(c.json, "client_id", "the registration's answer", &id, err);
	uris = json_object_get(c.json, "redirect_uris");
	json_array_foreach(uris, i, v)
		ours = ours || lev_streq(json_string_value(v), f->redirect);
	if (r == 0 && uris && (!ours || json_array_size(uris) != 1))
		r = lev_err_set(err, -EACCES, "the authorization server registered a redirect_uri "
				"that is not lev's loopback listener %s: refused", f->redirect);
	if (r == 0) {
		f->client_id = xstrdup(id);
		v = json_object_get(c.json, "client_secret");
		f->client_secret = json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
	}
	call_release(&c);
	return r;
}

/* ---- the loopback listener -------------------------------------------------- */

struct listener {
	struct MHD_Daemon *d;
	int pipe[2];
	pthread_mutex_t mu;
	const char *state;	/* the one expected */
	char *code, *error;
	bool done;
	unsigned port;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned st, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	(void)MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	ret = MHD_queue_response(c, st, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **req_cls)
{
	struct listener *l = cls;
	const char *state = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
	const char *code = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "code");
	const char *error = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "error");
	bool first;

	(void)version, (void)upload, (void)upload_size, (void)req_cls;
	if (strcmp(method, "GET") || strcmp(url, "/callback"))
		return reply(c, 404, "lev: not found\n");
	/* a forged or stale redirect: answered, and lev goes on waiting for its own */
	if (!state || strcmp(state, l->state))
		return reply(c, 400, "lev: refused: this answer's state is not the one of the "
			     "login lev started\n");
	if (!code && !error)
		return reply(c, 400, "lev: the answer has neither a code nor an error\n");
	pthread_mutex_lock(&l->mu);
	first = !l->done;
	if (first) {
		l->done = true;
		l->code = code ? xstrdup(code) : NULL;
		l->error = error ? lev_printable(error, strlen(error), 80) : NULL;
	}
	pthread_mutex_unlock(&l->mu);
	if (!first)
		return reply(c, 409, "lev: this login was answered already\n");
	(void)!write(l->pipe[1], "x", 1);
	return reply(c, 200, "lev: login received; you can close this tab\n");
}

static int listener_start(struct listener *l, struct lev_err *err)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const union MHD_DaemonInfo *di;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int r = lev_mhdapi_load(err);

	if (r < 0)
		return r;
	if (pipe2(l->pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return lev_err_errno(err, -errno, "cannot make a pipe");
	pthread_mutex_init(&l->mu, NULL);
	l->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, l,
				MHD_OPTION_SOCK_ADDR, &sin, MHD_OPTION_CONNECTION_LIMIT, 8,
				MHD_OPTION_CONNECTION_TIMEOUT, 30, MHD_OPTION_END);
	di = l->d ? MHD_get_daemon_info(l->d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
	if (!di || !di->port)
		return lev_err_set(err, -EADDRNOTAVAIL, "cannot listen on 127.0.0.1 for the "
				   "browser's answer");
	l->port = di->port;
	return 0;
}

static void listener_stop(struct listener *l)
{
	if (l->d)
		MHD_stop_daemon(l->d);
	l->d = NULL;
	if (l->pipe[0] >= 0) {
		close(l->pipe[0]);
		close(l->pipe[1]);
		pthread_mutex_destroy(&l->mu);
	}
	l->pipe[0] = l->pipe[1] = -1;
	lev_secret_free(l->code);
	free(l->error);
}

static int listener_wait(struct listener *l, unsigned secs, struct lev_err *err)
{
	struct pollfd p = { .fd = l->pipe[0], .events = POLLIN };
	int n;

	do
		n = poll(&p, 1, (int)secs * 1000);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return lev_err_set(err, -ETIMEDOUT, "no answer from the browser within %u seconds",
				   secs);
	if (l->error)
		return lev_err_set(err, -EACCES, "the authorization server refused the login: %s",
				   l->error);
	return 0;
}

/* ---- the login -------------------------------------------------------------- */

static char *auth_url(const struct flow *f, const char *challenge)
{
	struct lev_buf q = LEV_BUF_INIT_MAX(16 * 1024);
	char *u;

	form_add(&q, "response_type", "code");
	form_add(&q, "client_id", f->client_id);
	form_add(&q, "redirect_uri", f->redirect);
	form_add(&q, "code_challenge", challenge);
	form_add(&q, "code_challenge_method", "S256");
	form_add(&q, "state", f->state);
	form_add(&q, "resource", f->resource);
	form_add(&q, "scope", f->scope);
	u = xasprintf("%s%c%s", f->authz, strchr(f->authz, '?') ? '&' : '?', q.buf);
	lev_buf_release(&q);
	return u;
}

/* Exchange CODE for tokens: the record to store, into *rec. */
static int exchange(struct flow *f, const char *code, json_t **rec, struct lev_err *err)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(64 * 1024);
	struct call c = { .what = "the token endpoint", .url = f->token,
			  .allow_local = f->o->allow_local };
	json_t *j;
	int r;

	form_add(&b, "grant_type", "authorization_code");
	form_add(&b, "code", code);
	form_add(&b, "redirect_uri", f->redirect);
	form_add(&b, "client_id", f->client_id);
	form_add(&b, "client_secret", f->client_secret);
	form_add(&b, "code_verifier", f->verifier);
	form_add(&b, "resource", f->resource);
	c.form = b.buf;
	r = call_json(&c, err);
	explicit_bzero(b.buf, b.len);
	lev_buf_release(&b);
	if (r < 0) {
		call_release(&c);
		return r;
	}
	j = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s}", "origin", f->origin, "client_id",
		      f->client_id, "token_endpoint", f->token, "client_secret", f->client_secret,
		      "revocation_endpoint", f->revoke, "resource", f->resource);
	r = token_answer(c.json, j, err);
	json_secret_free(TAKE_PTR(c.json));
	call_release(&c);
	if (r < 0) {
		json_secret_free(j);
		return r;
	}
	*rec = j;
	return 0;
}

/* The browser step: the listener, the client, the URL shown, the code, the tokens. */
static int authorize(struct flow *f, json_t **rec, struct lev_err *err)
{
	struct listener l = { .pipe = { -1, -1 } };
	_cleanup_free_ char *challenge = NULL, *url = NULL;
	int r;

	if ((r = random_b64(32, &f->verifier, err)) < 0 || (r = random_b64(16, &f->state, err)) < 0)
		return r;
	l.state = f->state;
	challenge = s256(f->verifier);
	r = listener_start(&l, err);
	if (r == 0) {
		f->redirect = xasprintf("http://127.0.0.1:%u/callback", l.port);
		r = register_client(f, err);
	}
	if (r == 0) {
		url = auth_url(f, challenge);
		if (f->o->show_url)
			f->o->show_url(f->o->ud, url);
		r = listener_wait(&l, f->o->wait_secs ? f->o->wait_secs : 300, err);
	}
	if (r == 0 && !l.code)
		r = lev_err_set(err, -EPROTO, "the browser's answer has no code");
	if (r == 0)
		r = exchange(f, l.code, rec, err);
	listener_stop(&l);
	return r;
}

int lev_mcp_oauth_login(const struct lev_mcp_oauth_login_opts *o, bool *not_needed,
			struct lev_err *err)
{
	struct flow f = { .o = o };
	json_t *rec = NULL;
	long status = 0;
	int r;

	if (not_needed)
		*not_needed = false;
	if (!o->conf->url)
		return lev_err_set(err, -EINVAL, "MCP server '%s' is a command: OAuth is for a "
				   "--url server", o->conf->name);
	r = lev_url_parse(o->conf->url, &f.u, err);
	if (r == 0) {
		f.resource = f.u.url;
		r = origin_of(f.resource, &f.origin, err);
	}
	if (r == 0)
		r = endpoint_check("the MCP server", f.resource, err);
	if (r == 0)
		r = probe_server(o->conf, o->allow_local, &status, &f.prm_url, err);
	if (r == 0 && status != 401) {
		if (not_needed)
			*not_needed = true;
		flow_release(&f);
		return 0;
	}
	if (r == 0 && f.prm_url)
		r = endpoint_check("the protected-resource metadata", f.prm_url, err);
	if (r == 0)
		r = discover_prm(&f, err);
	if (r == 0)
		r = discover_as(&f, err);
	if (r == 0)
		r = authorize(&f, &rec, err);
	if (r == 0)
		r = record_save(o->store, rec, err);
	json_secret_free(rec);
	flow_release(&f);
	return r < 0 ? lev_err_wrap(err, "MCP server '%s': login refused", o->conf->name) : 0;
}

/* ---- using the tokens ------------------------------------------------------- */

static int refresh(const struct lev_credstore *s, json_t *rec, bool allow_local,
		   struct lev_err *err)
{
	const char *rt = json_string_value(json_object_get(rec, "refresh_token"));
	const char *te = json_string_value(json_object_get(rec, "token_endpoint"));
	struct lev_buf b = LEV_BUF_INIT_MAX(64 * 1024);
	struct call c = { .what = "the token endpoint", .url = te, .allow_local = allow_local };
	int r;

	if (!rt || !te)
		return lev_err_set(err, LEV_MCP_NEEDS_LOGIN, "the login has expired and has no "
				   "refresh token");
	form_add(&b, "grant_type", "refresh_token");
	form_add(&b, "refresh_token", rt);
	form_add(&b, "client_id", json_string_value(json_object_get(rec, "client_id")));
	form_add(&b, "client_secret", json_string_value(json_object_get(rec, "client_secret")));
	form_add(&b, "resource", json_string_value(json_object_get(rec, "resource")));
	c.form = b.buf;
	r = call_json(&c, err);
	explicit_bzero(b.buf, b.len);
	lev_buf_release(&b);
	if (r == -EPROTO) {
		lev_err_wrap(err, "the login has expired and its refresh was refused");
		r = err->code = LEV_MCP_NEEDS_LOGIN;
	}
	if (r == 0)
		r = token_answer(c.json, rec, err);
	if (c.json)
		json_secret_free(TAKE_PTR(c.json));
	call_release(&c);
	if (r == 0)
		r = record_save(s, rec, err);
	return r;
}

int lev_mcp_oauth_bearer(const struct lev_credstore *s, const char *url, bool allow_local,
			 bool force, char **out, struct lev_err *err)
{
	_cleanup_free_ char *origin = NULL;
	json_t *rec = NULL;
	json_int_t exp;
	int r;

	*out = NULL;
	r = origin_of(url, &origin, err);
	if (r == 0)
		r = record_load(s, origin, &rec, err);
	if (r < 0 || !rec)
		return r;
	exp = json_integer_value(json_object_get(rec, "expires_at"));
	if (force || (exp && exp <= (json_int_t)time(NULL) + REFRESH_MARGIN_SECS))
		r = refresh(s, rec, allow_local, err);
	if (r == 0)
		*out = xstrdup(json_string_value(json_object_get(rec, "access_token")));
	json_secret_free(rec);
	return r;
}

int lev_mcp_oauth_has(const struct lev_credstore *s, const char *url, bool *has,
		      struct lev_err *err)
{
	_cleanup_free_ char *origin = NULL;
	json_t *rec = NULL;
	int r = origin_of(url, &origin, err);

	if (r == 0)
		r = record_load(s, origin, &rec, err);
	*has = rec != NULL;
	json_secret_free(rec);
	return r;
}

/* RFC 7009: ask the server to forget TOKEN; true when it said yes. */
static bool revoke_token(const json_t *rec, const char *token, const char *hint, bool allow_local)
{
	const char *re = json_string_value(json_object_get(rec, "revocation_endpoint"));
	struct lev_buf b = LEV_BUF_INIT_MAX(64 * 1024);
	struct call c = { .what = "the revocation endpoint", .url = re,
			  .allow_local = allow_local };
	struct lev_err err = LEV_ERR_INIT;
	bool ok;

	if (!re || !token)
		return false;
	form_add(&b, "token", token);
	form_add(&b, "token_type_hint", hint);
	form_add(&b, "client_id", json_string_value(json_object_get(rec, "client_id")));
	form_add(&b, "client_secret", json_string_value(json_object_get(rec, "client_secret")));
	c.form = b.buf;
	ok = call_do(&c, &err) == 0 && c.status == 200;
	explicit_bzero(b.buf, b.len);
	lev_buf_release(&b);
	call_release(&c);
	return ok;
}

int lev_mcp_oauth_logout(const struct lev_credstore *s, const char *url, bool allow_local,
			 bool *had, bool *revoked, struct lev_err *err)
{
	_cleanup_free_ char *origin = NULL, *name = NULL;
	json_t *rec = NULL;
	int r = origin_of(url, &origin, err);

	*had = *revoked = false;
	if (r == 0)
		r = record_load(s, origin, &rec, err);
	if (r < 0)
		return r;
	if (rec) {
		bool a = revoke_token(rec, json_string_value(json_object_get(rec, "refresh_token")),
				"refresh_token", allow_local);
		bool b = revoke_token(rec, json_string_value(json_object_get(rec, "access_token")),
				"access_token", allow_local);

		*revoked = a || b;
	}
	name = store_name(origin);
	r = lev_credstore_remove(s, name, had, err);
	json_secret_free(rec);
	return r;
}
