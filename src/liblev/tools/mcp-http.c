/*
 * mcp-http.c - streamable HTTP for the MCP client (mcp-http.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/http.h"
#include "liblev/base/secrets.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/credentials.h"
#include "liblev/policy/netguard.h"
#include "liblev/tools/mcp-http.h"
#include "liblev/tools/mcp-oauth.h"

#define VAR_MAX 128

struct lev_mcp_http {
	const char *name;		/* the server's, borrowed from its conf */
	struct lev_url url;
	char **headers;			/* "Name: value", expanded */
	bool allow_local;
	char *session;			/* Mcp-Session-Id, or NULL */
	char *version;			/* MCP-Protocol-Version, or NULL */
	struct lev_credstore store;	/* where OAuth tokens are (paths borrowed) */
	bool oauth;			/* use them: a store and no Authorization header */
	char *bearer;			/* the OAuth access token in use, or NULL */
};

int lev_mcp_expand(const char *server, const char *what, const char *v, char **out,
		   struct lev_err *err)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(64 * 1024);

	while (*v) {
		const char *end = strncmp(v, "${", 2) ? NULL : strchr(v + 2, '}');
		_cleanup_free_ char *var = NULL;
		char *val;

		if (!end) {
			(void)lev_buf_addch(&b, *v++);
			continue;
		}
		var = xstrndup(v + 2, (size_t)(end - v - 2));
		/* taken out of lev's environment with the other secret variables */
		val = *var && strlen(var) <= VAR_MAX ? lev_credentials_env(var) : NULL;
		if (!val || strpbrk(val, "\r\n")) {
			lev_secret_free(val);
			lev_buf_release(&b);
			return lev_err_set(err, -ENOENT, "MCP server '%s': %s names ${%s}, "
					   "which is not set in lev's environment", server, what, var);
		}
		lev_secrets_add(val);	/* secret by its role: a header's value */
		(void)lev_buf_add(&b, val, strlen(val));
		lev_secret_free(val);
		v = end + 1;
	}
	*out = lev_buf_detach(&b, NULL);
	return 0;
}

int lev_mcp_http_new(const struct lev_mcp_server_conf *c, bool allow_local,
		     const struct lev_credstore *store, struct lev_mcp_http **out,
		     struct lev_err *err)
{
	struct lev_mcp_http *h = xcalloc(1, sizeof(*h));
	int r;

	h->name = c->name;
	h->oauth = store != NULL;
	if (store)
		h->store = *store;
	h->allow_local = allow_local || c->allow_local_network;
	r = lev_url_parse(c->url, &h->url, err);
	if (r < 0) {
		free(h);
		return lev_err_wrap(err, "MCP server '%s'", c->name);
	}
	for (char *const *p = c->headers; p && *p && r == 0; p++) {
		char *e = NULL;

		r = lev_mcp_expand(c->name, "a header", *p, &e, err);
		if (r == 0 && !strncasecmp(e, "authorization:", 14))
			h->oauth = false;	/* the user's own credential wins */
		if (r == 0)
			h->headers = lev_strv_push_take(h->headers, e);
	}
	if (r < 0) {
		lev_mcp_http_free(h);
		return r;
	}
	*out = h;
	return 0;
}

void lev_mcp_http_free(struct lev_mcp_http *h)
{
	if (!h)
		return;
	for (char **p = h->headers; p && *p; p++)
		explicit_bzero(*p, strlen(*p));		/* they may hold tokens */
	lev_strv_free(h->headers);
	lev_url_release(&h->url);
	free(h->session);
	free(h->version);
	lev_secret_free(h->bearer);
	free(h);
}

void lev_mcp_http_set_version(struct lev_mcp_http *h, const char *version)
{
	free(h->version);
	h->version = xstrdup(version);
}

struct guard {
	const struct lev_mcp_http *h;
	enum lev_netaddr_class cls;
};

static int guard_hook(void *ud, const struct sockaddr *sa, socklen_t len, struct lev_err *err)
{
	struct guard *g = ud;
	enum lev_netaddr_class c = lev_netaddr_classify(sa, len);
	char addr[INET6_ADDRSTRLEN + 8];

	if (c == LEV_NETADDR_PUBLIC && !g->h->allow_local && lev_netaddr_is_host_address(sa, len))
		c = LEV_NETADDR_HOST;
	if (c != LEV_NETADDR_METADATA && lev_netaddr_allowed(c, g->h->allow_local))
		return 0;
	g->cls = c;
	lev_netaddr_format(sa, len, addr, sizeof(addr));
	return lev_err_set(err, -EACCES, "MCP server '%s': '%s' is %s (a %s address); %s",
			   g->h->name, g->h->url.host, addr, lev_netaddr_class_name(c),
			   c == LEV_NETADDR_METADATA ? "cloud metadata addresses are always refused"
			   : "set allow_local_network = true in its [[mcp_servers]] entry if you "
			     "trust it");
}

/* One JSON-RPC message or a batch of them in TEXT onto A. */
static int add_json(json_t *a, const char *text, size_t len)
{
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	size_t i;
	json_t *it;

	if (json_is_object(j))
		return json_array_append_new(a, j) ? LEV_EPARSE : 0;
	if (!json_is_array(j)) {
		json_decref(j);
		return LEV_EPARSE;
	}
	json_array_foreach(j, i, it)
		if (!json_is_object(it) || json_array_append(a, it)) {
			json_decref(j);
			return LEV_EPARSE;
		}
	json_decref(j);
	return 0;
}

/* Server-sent events: each event's data lines joined, one message each. */
static int add_events(json_t *a, const char *body, size_t len)
{
	struct lev_buf data = LEV_BUF_INIT_MAX(len + 1);
	const char *p = body, *end = body + len;
	int r = 0;

	while (p <= end && r == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n && p[n - 1] == '\r')
			n--;
		if (n == 0) {
			if (data.len)
				r = add_json(a, data.buf, data.len);
			lev_buf_reset(&data);
		} else if (n >= 5 && !strncmp(p, "data:", 5)) {
			size_t skip = n > 5 && p[5] == ' ' ? 6 : 5;

			if (data.len)
				(void)lev_buf_addch(&data, '\n');
			(void)lev_buf_add(&data, p + skip, n - skip);
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	if (r == 0 && data.len)
		r = add_json(a, data.buf, data.len);
	lev_buf_release(&data);
	return r;
}

static int needs_login(const struct lev_mcp_http *h, struct lev_err *err);

static int answer(struct lev_mcp_http *h, const struct lev_http_response *resp, json_t **msgs,
		  struct lev_err *err)
{
	const char *ct = resp->content_type ? resp->content_type : "";
	json_t *a;
	int r = 0;

	if (resp->status == 404 && h->session)
		return lev_err_set(err, -EPROTO, "MCP server '%s' ended the session (HTTP 404)",
				   h->name);
	if (resp->status == 401)
		return needs_login(h, err);
	if (resp->status < 200 || resp->status > 299)
		return lev_err_set(err, -EPROTO, "MCP server '%s' answered HTTP %ld", h->name,
				   resp->status);
	if (resp->captured && !lev_streq(resp->captured, h->session)) {
		free(h->session);
		h->session = xstrdup(resp->captured);
	}
	a = json_array();
	if (resp->body_len && !strncasecmp(ct, "text/event-stream", 17))
		r = add_events(a, resp->body, resp->body_len);
	else if (resp->body_len && !strncasecmp(ct, "application/json", 16))
		r = add_json(a, resp->body, resp->body_len);
	else if (resp->body_len)
		r = LEV_EPARSE;
	if (r < 0) {
		json_decref(a);
		return lev_err_set(err, LEV_EPARSE, "MCP server '%s' answered with a body that is "
				   "not JSON-RPC (%s)", h->name, *ct ? ct : "no content type");
	}
	*msgs = a;
	return 0;
}

static int post_once(struct lev_mcp_http *h, const char *msg, uint64_t timeout_ms, uint64_t max,
		     json_t **msgs, struct lev_err *err)
{
	_cleanup_strv_ char **hdrs = lev_strv_push(NULL, "Content-Type: application/json");
	struct lev_http_response resp;
	struct guard g = { .h = h };
	struct lev_http_request req = {
		.method = "POST",
		.url = h->url.url,
		.body = msg,
		.body_len = strlen(msg),
		.timeout_ms = (long)timeout_ms,
		.max_response = max + 1,
		.connect_hook = guard_hook,
		.connect_hook_data = &g,
		.capture_header = "mcp-session-id",
	};
	int r;

	hdrs = lev_strv_push(hdrs, "Accept: application/json, text/event-stream");
	if (h->session)
		hdrs = lev_strv_push_take(hdrs, xasprintf("Mcp-Session-Id: %s", h->session));
	if (h->version)
		hdrs = lev_strv_push_take(hdrs, xasprintf("MCP-Protocol-Version: %s", h->version));
	for (char **p = h->headers; p && *p; p++)
		hdrs = lev_strv_push(hdrs, *p);
	if (h->bearer)
		hdrs = lev_strv_push_take(hdrs, xasprintf("Authorization: Bearer %s", h->bearer));
	req.headers = (const char *const *)hdrs;
	r = lev_http_perform(&req, &resp, err);
	for (char **p = hdrs; p && *p; p++)
		explicit_bzero(*p, strlen(*p));
	if (r == -EFBIG || (r == 0 && resp.body_len > max))
		r = -EFBIG;
	else if (r == 0)
		r = answer(h, &resp, msgs, err);
	else if (r != -ETIMEDOUT && r != -EACCES)
		r = lev_err_wrap(err, "MCP server '%s'", h->name);
	lev_http_response_release(&resp);
	return r;
}

/*
 * The OAuth token for the server's origin (mcp-oauth.h decides which one it
 * may have): loaded once, refreshed when FORCE (a 401 came back).
 */
static int load_bearer(struct lev_mcp_http *h, bool force, struct lev_err *err)
{
	char *t = NULL;
	int r;

	r = lev_mcp_oauth_bearer(&h->store, h->url.url, h->allow_local, force, &t, err);
	if (r < 0)
		return r;
	lev_secret_free(h->bearer);
	h->bearer = t;
	if (t)
		lev_secrets_add(t);	/* never in a log, a result or the audit */
	return 0;
}

static int needs_login(const struct lev_mcp_http *h, struct lev_err *err)
{
	return lev_err_set(err, LEV_MCP_NEEDS_LOGIN, "MCP server '%s' answered HTTP 401: %s; "
			   "run 'lev mcp login %s'", h->name, h->bearer ? "its login was refused"
			   : "it needs a login", h->name);
}

int lev_mcp_http_post(struct lev_mcp_http *h, const char *msg, uint64_t timeout_ms, uint64_t max,
		      json_t **msgs, struct lev_err *err)
{
	bool loaded = h->bearer != NULL;
	int r;

	if (h->oauth && !loaded && (r = load_bearer(h, false, err)) < 0)
		return r == LEV_MCP_NEEDS_LOGIN ? needs_login(h, err)
						: lev_err_wrap(err, "MCP server '%s'", h->name);
	r = post_once(h, msg, timeout_ms, max, msgs, err);
	if (r != LEV_MCP_NEEDS_LOGIN || !h->bearer)
		return r;
	/* a 401 with a token: refresh it once and try again */
	r = load_bearer(h, true, err);
	if (r == LEV_MCP_NEEDS_LOGIN || (r == 0 && !h->bearer))
		return needs_login(h, err);
	if (r < 0)
		return lev_err_wrap(err, "MCP server '%s'", h->name);
	r = post_once(h, msg, timeout_ms, max, msgs, err);
	return r == LEV_MCP_NEEDS_LOGIN ? needs_login(h, err) : r;
}
