/*
 * http.h - the one small HTTP client of liblev (libcurl), shared by the
 * model providers and the network tools.
 *
 * One call, lev_http_perform(), does one request and never follows a
 * redirect: callers that follow redirects (the network tools) do it hop by
 * hop so that every hop is checked.  Every request is bounded:
 *
 *   - the response body is capped (max_response); past the cap the
 *     transfer is aborted and the call fails with -EFBIG;
 *   - connect and total timeouts (-ETIMEDOUT);
 *   - only http:// and https:// (CURLOPT_PROTOCOLS_STR), TLS peer and host
 *     verification always on;
 *   - no proxy unless the caller names one: http_proxy, https_proxy,
 *     ALL_PROXY and NO_PROXY in the environment are ignored;
 *   - no cookies, no .netrc, no HSTS or alt-svc files, no verbose output.
 *
 * Headers passed in `headers` may carry secrets (API keys).  They are never
 * copied into error messages, and this module never logs.
 *
 * Errors (negative return, message in ERR):
 *	-EINVAL		bad URL or request
 *	-ETIMEDOUT	connect or total timeout
 *	-ECONNREFUSED	could not connect
 *	-ECONNRESET	the connection dropped (empty reply, partial body,
 *			send or receive failure)
 *	-EHOSTUNREACH	the host name did not resolve
 *	-EFBIG		the response body passed max_response
 *	-EACCES		the connect hook refused every address
 *	-ECANCELED	*cancel became non-zero
 *	-EPROTO		TLS or any other transfer failure
 * An HTTP error status (4xx, 5xx) is not an error here: it is returned in
 * the response for the caller to classify.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "liblev/base/error.h"

/*
 * Called for every socket libcurl is about to connect, with the address
 * it will connect to.  Return 0 to allow; a negative code (with a message
 * in ERR) refuses that address: the connection attempt fails and, if no
 * other address works, lev_http_perform() returns -EACCES with the message
 * of the last refusal.
 */
typedef int (*lev_http_connect_hook)(void *userdata, const struct sockaddr *addr,
				     socklen_t addrlen, struct lev_err *err);

struct lev_http_request {
	const char *method;		/* "GET" or "POST" (NULL: GET) */
	const char *url;
	const char *const *headers;	/* NULL-terminated "Name: value" lines, or NULL */
	const char *body;		/* POST body (may be NULL with body_len 0) */
	size_t body_len;

	long connect_timeout_ms;	/* 0: 10 s */
	long timeout_ms;		/* total; 0: 60 s */
	size_t max_response;		/* body cap in bytes; 0: 8 MiB */
	const char *proxy;		/* NULL: no proxy at all */
	const char *user_agent;		/* NULL: "lev/VERSION" */

	/* Pin HOST:PORT:ADDRESS entries (CURLOPT_RESOLVE), or NULL. */
	const char *const *resolve;
	lev_http_connect_hook connect_hook;	/* NULL: no address check */
	void *connect_hook_data;

	/* When non-NULL and it becomes non-zero, the transfer is aborted. */
	volatile sig_atomic_t *cancel;

	/* A response header to keep (name without ':', any case), or NULL. */
	const char *capture_header;
};

/* Everything here is owned by the response; lev_http_response_release() frees it. */
struct lev_http_response {
	long status;		/* HTTP status code */
	char *body;		/* NUL-terminated (body may hold NUL bytes: see body_len) */
	size_t body_len;
	char *content_type;	/* NULL when absent */
	char *redirect_url;	/* absolute Location target of a 3xx, or NULL */
	long retry_after_secs;	/* Retry-After in seconds (date form converted); -1 absent */
	char *primary_ip;	/* the address connected to, or NULL */
	char *captured;		/* the value of req->capture_header (trimmed, at most
				   LEV_HTTP_CAPTURE_MAX bytes), or NULL */
};

#define LEV_HTTP_CAPTURE_MAX 1024

/*
 * Perform REQ.  On success (any HTTP status) fills *out, which the caller
 * releases with lev_http_response_release().  On failure *out is left
 * zeroed (safe to release) and a negative code from the list above is
 * returned.
 */
int lev_http_perform(const struct lev_http_request *req, struct lev_http_response *out,
		     struct lev_err *err);

void lev_http_response_release(struct lev_http_response *r);

/*
 * Percent-encode S for use in a query string (RFC 3986 unreserved
 * characters kept).  Returns a fresh string the caller frees.
 */
char *lev_http_urlencode(const char *s);
