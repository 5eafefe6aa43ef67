#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "lev-version.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/curlapi.h"
#include "liblev/base/http.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_TIMEOUT_MS 60000L
#define DEFAULT_MAX_RESPONSE ((size_t)8 << 20)
#define MAX_HEADER_BYTES ((size_t)256 << 10)

struct xfer {
	const struct lev_curlapi *C;
	const struct lev_http_request *req;
	struct lev_buf body;
	bool too_large;
	size_t header_bytes;
	bool headers_too_large;
	long retry_after;
	char *captured;		/* req->capture_header's value */
	int refusals;
	struct lev_err refusal;
};

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;

	if (lev_buf_add(&x->body, ptr, n) < 0) {
		x->too_large = true;
		return 0;	/* abort the transfer */
	}
	return n;
}

/* Parse a Retry-After value: delta-seconds or an HTTP date. */
static long parse_retry_after(const struct lev_curlapi *C, const char *v, size_t len)
{
	_cleanup_free_ char *s = NULL;
	uint64_t secs;
	time_t when, now;

	while (len && (v[0] == ' ' || v[0] == '\t')) {
		v++;
		len--;
	}
	while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ' ||
		       v[len - 1] == '\t'))
		len--;
	if (len == 0 || len > 64)
		return -1;
	s = xstrndup(v, len);
	if (lev_parse_u64(s, &secs) == 0)
		return secs > 86400 * 365 ? 86400 * 365 : (long)secs;
	when = C->getdate(s, NULL);
	if (when == (time_t)-1)
		return -1;
	now = time(NULL);
	return when > now ? (long)(when - now) : 0;
}

/* Keep the value of the header the request names (trimmed, bounded, printable). */
static void capture(struct xfer *x, const char *p, size_t n)
{
	size_t k = strlen(x->req->capture_header);

	if (n <= k || p[k] != ':' || strncasecmp(p, x->req->capture_header, k))
		return;
	p += k + 1;
	n -= k + 1;
	while (n && (*p == ' ' || *p == '\t')) {
		p++;
		n--;
	}
	while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x21 || (unsigned char)p[i] > 0x7e)
			return;
	if (n == 0 || n > LEV_HTTP_CAPTURE_MAX)
		return;
	free(x->captured);
	x->captured = xstrndup(p, n);
}

static size_t header_cb(char *ptr, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nitems;
	static const char name[] = "retry-after:";

	x->header_bytes += n;
	if (x->header_bytes > MAX_HEADER_BYTES) {
		x->headers_too_large = true;
		return 0;
	}
	/* A new status line starts a new response (after 1xx): forget old headers. */
	if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
		x->retry_after = -1;
		free(x->captured);
		x->captured = NULL;
	} else if (n > sizeof(name) - 1 && strncasecmp(ptr, name, sizeof(name) - 1) == 0) {
		x->retry_after = parse_retry_after(x->C, ptr + sizeof(name) - 1, n - (sizeof(name) - 1));
	} else if (x->req->capture_header) {
		capture(x, ptr, n);
	}
	return n;
}

static int xferinfo_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct xfer *x = ud;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return x->req->cancel && *x->req->cancel ? 1 : 0;
}

static curl_socket_t opensocket_cb(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct xfer *x = ud;
	struct lev_err e = LEV_ERR_INIT;
	int fd;

	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKET_BAD;
	if (x->req->connect_hook &&
	    x->req->connect_hook(x->req->connect_hook_data, &a->addr, a->addrlen, &e) < 0) {
		x->refusals++;
		x->refusal = e;
		return CURL_SOCKET_BAD;
	}
	fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	return fd < 0 ? CURL_SOCKET_BAD : fd;
}

static int map_error(CURLcode rc, const struct xfer *x, const char *errbuf, size_t max,
		     struct lev_err *err)
{
	const char *detail = errbuf[0] ? errbuf : x->C->easy_strerror(rc);

	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return lev_err_set(err, -ETIMEDOUT, "timed out: %s", detail);
	case CURLE_COULDNT_RESOLVE_HOST:
		return lev_err_set(err, -EHOSTUNREACH, "cannot resolve host: %s", detail);
	case CURLE_COULDNT_CONNECT:
		if (x->refusals > 0)
			return lev_err_set(err, -EACCES, "%s", x->refusal.msg);
		return lev_err_set(err, -ECONNREFUSED, "cannot connect: %s", detail);
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		return lev_err_set(err, -ECONNRESET, "connection dropped: %s", detail);
	case CURLE_FILESIZE_EXCEEDED:
		return lev_err_set(err, -EFBIG, "response larger than the %zu-byte cap", max);
	case CURLE_WRITE_ERROR:
		if (x->too_large)
			return lev_err_set(err, -EFBIG,
					   "response larger than the %zu-byte cap (transfer aborted)",
					   max);
		break;
	case CURLE_ABORTED_BY_CALLBACK:
		return lev_err_set(err, -ECANCELED, "request cancelled");
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return lev_err_set(err, -EINVAL, "bad URL: %s", detail);
	default:
		if (x->headers_too_large)
			return lev_err_set(err, -EFBIG, "response headers larger than %zu bytes",
					   MAX_HEADER_BYTES);
		break;
	}
	return lev_err_set(err, -EPROTO, "request failed: %s", detail);
}

/*
 * Set one option; the first one libcurl refuses fails the request, so a
 * protection (TLS verification, protocol list, proxy override) is never
 * silently missing.  Uses C, h, r and err of lev_http_perform().
 */
#define SETOPT(opt, val)							\
	do {									\
		if (r == 0 && C->easy_setopt(h, opt, val) != CURLE_OK)		\
			r = lev_err_set(err, -EPROTO,				\
					"libcurl refuses option %s", #opt);	\
	} while (0)

/* Append each of the NULL-terminated LINES to *LIST. */
static int slist_add(const struct lev_curlapi *C, struct curl_slist **list,
		     const char *const *lines, struct lev_err *err)
{
	for (const char *const *p = lines; p && *p; p++) {
		struct curl_slist *n = C->slist_append(*list, *p);

		if (!n)
			return lev_err_set(err, -ENOMEM, "out of memory");
		*list = n;
	}
	return 0;
}

/*
 * Every option of the transfer on H.  The order does not matter; each
 * option is one policy decision, and a refused one fails the request.
 */
static int set_options(const struct lev_curlapi *C, CURL *h, const struct lev_http_request *req,
		       struct xfer *x, struct curl_slist *hdrs, struct curl_slist *resolve,
		       const char *ua, char *errbuf, size_t max, bool post, struct lev_err *err)
{
	int r = 0;

	if (C->easy_setopt(h, CURLOPT_URL, req->url) != CURLE_OK)
		return lev_err_set(err, -EINVAL, "bad URL");
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	SETOPT(CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	/* An empty string disables proxies, including those from the environment. */
	SETOPT(CURLOPT_PROXY, req->proxy ? req->proxy : "");
	SETOPT(CURLOPT_NETRC, (long)CURL_NETRC_IGNORED);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS,
	       req->connect_timeout_ms > 0 ? req->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS);
	SETOPT(CURLOPT_TIMEOUT_MS, req->timeout_ms > 0 ? req->timeout_ms : DEFAULT_TIMEOUT_MS);
	SETOPT(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
	SETOPT(CURLOPT_FORBID_REUSE, 1L);
	SETOPT(CURLOPT_ERRORBUFFER, errbuf);
	SETOPT(CURLOPT_USERAGENT, ua);
	SETOPT(CURLOPT_HTTPHEADER, hdrs);
	SETOPT(CURLOPT_WRITEFUNCTION, write_cb);
	SETOPT(CURLOPT_WRITEDATA, x);
	SETOPT(CURLOPT_HEADERFUNCTION, header_cb);
	SETOPT(CURLOPT_HEADERDATA, x);
	SETOPT(CURLOPT_NOPROGRESS, 0L);
	SETOPT(CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
	SETOPT(CURLOPT_XFERINFODATA, x);
	SETOPT(CURLOPT_OPENSOCKETFUNCTION, opensocket_cb);
	SETOPT(CURLOPT_OPENSOCKETDATA, x);
	if (resolve)
		SETOPT(CURLOPT_RESOLVE, resolve);
	if (post) {
		SETOPT(CURLOPT_POST, 1L);
		SETOPT(CURLOPT_POSTFIELDS, req->body ? req->body : "");
		SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	} else {
		SETOPT(CURLOPT_HTTPGET, 1L);
	}
	return r;
}

/* Fill OUT from the finished transfer on H; OUT takes X's body. */
static void take_response(const struct lev_curlapi *C, CURL *h, struct xfer *x,
			  struct lev_http_response *out)
{
	long status = 0;
	char *ct = NULL, *loc = NULL, *ip = NULL;

	C->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	C->easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
	C->easy_getinfo(h, CURLINFO_REDIRECT_URL, &loc);
	C->easy_getinfo(h, CURLINFO_PRIMARY_IP, &ip);
	out->status = status;
	out->content_type = ct ? xstrdup(ct) : NULL;
	out->redirect_url = loc && status >= 300 && status < 400 ? xstrdup(loc) : NULL;
	out->primary_ip = ip && ip[0] ? xstrdup(ip) : NULL;
	out->retry_after_secs = x->retry_after;
	out->captured = x->captured;
	x->captured = NULL;
	out->body = lev_buf_detach(&x->body, &out->body_len);
}

int lev_http_perform(const struct lev_http_request *req, struct lev_http_response *out,
		     struct lev_err *err)
{
	static const char *const no_expect[] = { "Expect:", NULL };
	size_t max = req->max_response ? req->max_response : DEFAULT_MAX_RESPONSE;
	struct xfer x = {
		.req = req,
		.body = LEV_BUF_INIT_MAX(max),
		.retry_after = -1,
	};
	struct curl_slist *hdrs = NULL, *resolve = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	_cleanup_free_ char *ua = NULL;
	const char *method = req->method ? req->method : "GET";
	bool post;
	const struct lev_curlapi *C;
	CURLcode rc;
	CURL *h;
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->retry_after_secs = -1;
	if (!req->url)
		return lev_err_set(err, -EINVAL, "no URL");
	if (strcmp(method, "GET") == 0)
		post = false;
	else if (strcmp(method, "POST") == 0)
		post = true;
	else
		return lev_err_set(err, -EINVAL, "unsupported method '%s'", method);
	r = lev_curlapi_get(&C, err);
	if (r < 0)
		return r;
	x.C = C;

	h = C->easy_init();
	if (!h)
		return lev_err_set(err, -ENOMEM, "cannot create a libcurl handle");
	/* no "Expect: 100-continue" round trip for bodies */
	r = slist_add(C, &hdrs, req->headers, err);
	if (r == 0)
		r = slist_add(C, &hdrs, no_expect, err);
	if (r == 0)
		r = slist_add(C, &resolve, req->resolve, err);
	if (r < 0)
		goto out;
	ua = req->user_agent ? xstrdup(req->user_agent) : xasprintf("lev/%s", LEV_VERSION);
	r = set_options(C, h, req, &x, hdrs, resolve, ua, errbuf, max, post, err);
	if (r < 0)
		goto out;

	rc = C->easy_perform(h);
	if (rc != CURLE_OK) {
		r = map_error(rc, &x, errbuf, max, err);
		goto out;
	}
	take_response(C, h, &x, out);
out:
	lev_buf_release(&x.body);
	free(x.captured);
	/* Header lines may hold API keys: do not leave them in freed memory. */
	for (struct curl_slist *n = hdrs; n; n = n->next)
		explicit_bzero(n->data, strlen(n->data));
	C->slist_free_all(hdrs);
	C->slist_free_all(resolve);
	C->easy_cleanup(h);
	return r;
}

void lev_http_response_release(struct lev_http_response *r)
{
	if (!r)
		return;
	free(r->body);
	free(r->content_type);
	free(r->redirect_url);
	free(r->primary_ip);
	free(r->captured);
	memset(r, 0, sizeof(*r));
	r->retry_after_secs = -1;
}

char *lev_http_urlencode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	struct lev_buf b = LEV_BUF_INIT;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			lev_buf_addch(&b, (char)*p);
		} else {
			lev_buf_addch(&b, '%');
			lev_buf_addch(&b, hex[*p >> 4]);
			lev_buf_addch(&b, hex[*p & 15]);
		}
	}
	return lev_buf_detach(&b, NULL);
}
