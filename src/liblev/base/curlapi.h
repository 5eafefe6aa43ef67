/*
 * curlapi.h - the libcurl functions liblev uses, loaded on first use.
 *
 * libcurl pulls in some thirty shared libraries (TLS, Kerberos, LDAP, SSH,
 * IDN, ...).  Linking it at start-up cost every `lev` process about 14 ms
 * of dynamic loading, most of the time `lev run` took to reach its first
 * tool call.  Most runs never touch the network, so lev no longer links
 * libcurl: the first call that needs it (an HTTP request, a URL parse in
 * the network guard or the taint gate's target parser) dlopen()s it once
 * for the process and calls curl_global_init().
 *
 * The headers are the system's <curl/curl.h>, so types and constants are
 * checked at compile time; only the link is deferred.  If the library
 * cannot be loaded, lev_curlapi_get() fails with a clear message and every caller
 * fails closed (the request is not made; a target the gate cannot check
 * is refused).
 */
#pragma once

#include <stdbool.h>
#include <time.h>

#include <curl/curl.h>

#include "liblev/base/error.h"

struct lev_curlapi {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *h);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *h);
	const char *(*easy_strerror)(CURLcode rc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	time_t (*getdate)(const char *s, const time_t *unused);
	CURLU *(*url)(void);
	CURLUcode (*url_set)(CURLU *h, CURLUPart part, const char *s, unsigned int flags);
	CURLUcode (*url_get)(const CURLU *h, CURLUPart part, char **out, unsigned int flags);
	void (*url_cleanup)(CURLU *h);
	const char *(*url_strerror)(CURLUcode rc);
	void (*free)(void *p);
};

/*
 * Point *OUT at the loaded, initialised libcurl.  Loads and initialises
 * once per process (thread-safe); later calls cost a pthread_once check.
 * The library stays loaded until exit.  Returns 0, or LEV_EUNSUPP / -EIO
 * with ERR set (and *OUT NULL) when libcurl cannot be loaded or set up.
 */
int lev_curlapi_get(const struct lev_curlapi **out, struct lev_err *err);

/*
 * Fill OUT from the shared object SONAME without initialising it (for
 * tests: a missing library or symbol must fail cleanly).  Returns 0 or a
 * negative code with ERR set; on failure nothing stays loaded.
 */
int lev_curlapi_open(const char *soname, struct lev_curlapi *out, struct lev_err *err);

/* True once libcurl has been loaded in this process (for tests). */
bool lev_curlapi_loaded(void);
