/*
 * tools-net.h - the network tools the model may call:
 *
 *	web_fetch	GET a URL, return its text (HTML lightly stripped)
 *	http_post	POST a body to a URL, return the status and response text
 *	web_search	query a SearXNG-compatible JSON endpoint configured by the
 *			user ([tools.web_search] endpoint), return compact results
 *
 * Every call is refused, with a message saying why, when:
 *   - the stage has no network (policy->network_allowed is false);
 *   - the URL is not http/https, carries user:password@, or is malformed;
 *   - the address actually being connected to (checked in libcurl's
 *     connect hook, for every hop and every address tried, so DNS
 *     rebinding cannot switch it after the check) is loopback, private,
 *     carrier-grade NAT, link-local, unspecified, multicast, broadcast,
 *     reserved, one of this host's own addresses, or an IPv6 form
 *     embedding one of those -- unless allow_local_network is set; cloud
 *     metadata addresses are refused even then (netguard.h);
 *   - there are more than max_redirects (at most 5) redirects; every hop is
 *     re-parsed and re-checked (and put to redirect_hook, below).  http_post never follows redirects (it
 *     reports the 3xx and its Location), so a body is only ever sent to
 *     the URL the call named.
 *
 * Proxies are never used (environment proxies included): a proxy would
 * resolve names where the guard cannot see the address.
 *
 * The configured web_search endpoint is the user's choice, so its first
 * hop may be a local address (a SearXNG on localhost) even without
 * allow_local_network; redirects from it are checked like any other, and
 * metadata addresses stay refused.
 *
 * All three return 0 and fill *out, also for refusals and failures (those
 * have is_error set and say why in text, for the model); a negative return
 * is only for a caller error (unknown tool, NULL arguments).
 */
#pragma once

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"
#include "liblev/base/tooltable.h"

struct lev_net_policy {
	bool network_allowed;		/* the stage's [sandbox] network; false refuses */
	bool allow_local_network;	/* [security] allow_local_network */
	size_t max_download;		/* bytes read per hop; 0: 2 MiB */
	size_t max_result;		/* bytes of text handed to the model; 0: 64 KiB */
	long connect_timeout_ms;	/* 0: 10 s */
	long timeout_ms;		/* total per hop; 0: 30 s */
	unsigned max_redirects;		/* 0: 5; values above 5 count as 5 */
	const char *search_endpoint;	/* [tools.web_search] endpoint; NULL: not configured */
	const char *user_agent;		/* NULL: "lev/VERSION" */
	/*
	 * "HOST:PORT:ADDRESS" pins (libcurl CURLOPT_RESOLVE), or NULL.  The
	 * pinned address still goes through the guard.  Tests use it to make
	 * a public-looking name resolve to loopback without DNS.
	 */
	const char *const *resolve;
	volatile sig_atomic_t *cancel;	/* NULL: not cancellable */
	/*
	 * Asked before each redirect is followed, with the tool and the URL
	 * the hop will request (normalised, as libcurl sends it).  A negative
	 * return refuses the hop: the call fails with ERR's message and the
	 * URL is not contacted.  NULL: every hop the address guard passes is
	 * followed.  lev run points it at the taint gate, so a redirect (an
	 * open redirect on an allowed host, say) cannot carry a URL with
	 * tainted data to a host the gate would refuse.
	 */
	int (*redirect_hook)(void *data, const char *tool, const char *url, struct lev_err *err);
	void *redirect_hook_data;
};

enum lev_net_outcome {
	LEV_NET_OK,			/* an HTTP answer came back (see http_status) */
	LEV_NET_BAD_ARGS,		/* arguments missing or of the wrong type */
	LEV_NET_NETWORK_OFF,		/* refused: the stage has no network */
	LEV_NET_ADDRESS_REFUSED,	/* refused: a local/private/metadata address */
	LEV_NET_URL_REFUSED,		/* refused: scheme, credentials, too many redirects */
	LEV_NET_NOT_CONFIGURED,		/* web_search without an endpoint */
	LEV_NET_FAILED,			/* timeout, connection, too large, not text */
	_LEV_NET_OUTCOME_MAX,
};

/* Owned strings; lev_net_result_release() frees them. */
struct lev_net_result {
	char *text;		/* for the model; never NULL after a 0 return */
	bool is_error;		/* refusals, failures and HTTP status >= 400 */
	enum lev_net_outcome outcome;
	char *target_host;	/* the last host contacted or refused (after redirects),
				 * for the taint gate and the audit record; NULL when no
				 * URL could be parsed */
	char *final_url;	/* the last URL requested, or NULL */
	long http_status;	/* 0 when no HTTP answer */
	unsigned hops;		/* requests made */
	char **hop_urls;	/* the URL of each request made, in order (strv), or NULL */
};

void lev_net_result_release(struct lev_net_result *r);
const char *lev_net_outcome_name(enum lev_net_outcome o);

/* args: {"url": string} */
int lev_tool_web_fetch(const json_t *args, const struct lev_net_policy *policy,
		       struct lev_net_result *out, struct lev_err *err);
/* args: {"url": string, "body": string (default ""), "content_type": string
 * (default "application/json")} */
int lev_tool_http_post(const json_t *args, const struct lev_net_policy *policy,
		       struct lev_net_result *out, struct lev_err *err);
/* args: {"query": string, "max_results": 1..20 (default 5)} */
int lev_tool_web_search(const json_t *args, const struct lev_net_policy *policy,
			struct lev_net_result *out, struct lev_err *err);

/* True for the tool table's network tools (web_fetch, http_post, web_search). */
bool lev_tool_is_net(const char *tool);

/* Run TOOL (one of the above); -ENOENT for any other name. */
int lev_tool_net_run(const char *tool, const json_t *args, const struct lev_net_policy *policy,
		     struct lev_net_result *out, struct lev_err *err);

/*
 * The host a call will contact first, for the taint gate before the call
 * runs: the host of args.url, or of the search endpoint for web_search.
 * *out is a fresh string (caller frees).  -EINVAL when the arguments name
 * no parsable URL (the call itself will then be refused).
 */
int lev_tool_net_target(const char *tool, const json_t *args,
			const struct lev_net_policy *policy, char **out, struct lev_err *err);

/* The JSON Schema of the arguments of the network tool OP runs (new reference), or NULL. */
json_t *lev_tool_net_parameters(enum lev_tool_op op);

/*
 * Turn HTML into readable text: drops script/style/noscript/template/svg
 * and comments, turns block elements into line breaks ("- " for list
 * items), decodes entities, collapses whitespace outside <pre>.  The
 * result is valid UTF-8, at most MAX bytes (cut at a character boundary).
 * Caller frees.
 */
char *lev_html_to_text(const char *html, size_t len, size_t max);
