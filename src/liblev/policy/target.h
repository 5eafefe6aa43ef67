/*
 * target.h - where an outbound tool call sends its bytes, in a canonical
 * form the taint gate can compare with allowlist patterns.
 *
 * A target is one of:
 *   - a host: the host part of a URL, lower-case ASCII after percent-decoding
 *     and IDNA (UTS #46, non-transitional, the mapping libcurl applies), one
 *     trailing dot removed, IPv4 in dotted-quad form, IPv6 as "[addr]" in its
 *     RFC 5952 form;
 *   - a recipient: "local@domain" with DOMAIN canonicalised like a host, or a
 *     phone number "+digits";
 *   - a name: a channel ("#team"), account or other token declared by a
 *     tool's classification, lower-cased, from a small safe alphabet.
 * Anything that does not canonicalise is refused (an error), so an odd
 * spelling can never slip past a pattern: the gate then treats the call as
 * having no usable target, which only target-less rules can allow.
 *
 * Patterns (allowlist `to`/`channel` entries):
 *   "*"               any target (a call with no usable target is matched
 *                     only by a rule that lists no patterns at all)
 *   "*.example.com"   a strict sub-domain of example.com (the apex
 *                     "example.com" is NOT matched; list it on its own)
 *   "*@example.com"   any recipient at exactly example.com
 *   "prefix*"         targets starting with PREFIX (e.g. "+1555*", "megan@*")
 *   "exact"           that target only
 * A pattern is canonicalised like a target (lower case, IDNA, trailing dot)
 * before use; "*" anywhere else, "**", or a suffix pattern not starting with
 * "*." or "*@" (which would match "evilexample.com") is refused.
 *
 * Strings returned through `char **out` are owned by the caller (free()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"

/* Longest canonical target and pattern we accept (a DNS name is <= 253). */
#define LEV_TARGET_MAX 320
/* Longest URL we parse. */
#define LEV_TARGET_URL_MAX 8192

/*
 * A parsed absolute http(s) URL.  All strings are owned by the struct.
 * `canonical` is the URL rebuilt from the parsed parts (scheme, userinfo,
 * canonical host, port, path and query; the fragment is dropped): a fetcher
 * that wants to be sure it contacts the host the gate judged must fetch
 * `canonical`, not the string the model wrote.
 */
struct lev_target_url {
	char *scheme;		/* "http" or "https" */
	char *userinfo;		/* NULL when absent (still percent-encoded) */
	char *host;		/* canonical host, as described above */
	unsigned port;		/* 0: not written */
	char *path;		/* path + "?" + query as written ("/" when empty) */
	char *canonical;
};

void lev_target_url_release(struct lev_target_url *u);

/*
 * Parse URL (NUL-terminated, at most LEV_TARGET_URL_MAX bytes).  A URL without
 * "scheme://" is read as "http://URL", as libcurl guesses.  Only http and
 * https are accepted.  Refused (LEV_EPARSE): spaces, control bytes,
 * backslashes, more than one '@' in the authority, an empty or invalid
 * host, a bad port, a host that still holds '%' after one decoding pass,
 * and any URL libcurl reads a different host or port out of (libcurl's own
 * URL parser is run on the same string as a cross-check, so the gate and
 * the fetch cannot disagree about where the request goes).
 * On success fills *out (release with lev_target_url_release()).
 */
int lev_target_url_parse(const char *url, struct lev_target_url *out, struct lev_err *err);

/*
 * Canonicalise a host name or IP literal (LEN bytes at HOST, percent-encoded
 * or not) into *out.
 */
int lev_target_host_canon(const char *host, size_t len, char **out, struct lev_err *err);

/* Canonicalise an e-mail address ("local@domain") or a phone number ("+1555..."). */
int lev_target_recipient_canon(const char *s, char **out, struct lev_err *err);

/*
 * Canonicalise a value of a declared target argument: a URL with "://"
 * gives its host, "x@y" a recipient, "+digits" a phone number, anything
 * else must be a plain name from [a-z0-9._:+/-] (after lower-casing), with an
 * optional leading '#' (a channel).
 */
int lev_target_value_canon(const char *s, char **out, struct lev_err *err);

/*
 * Check PAT is a valid pattern and return its canonical form in *out
 * (caller frees).  On error the message explains what is wrong.
 */
int lev_target_pattern_canon(const char *pat, char **out, struct lev_err *err);

/*
 * True when canonical TARGET matches canonical pattern PAT (both as
 * produced above).  Pure string comparison; no allocation.
 */
bool lev_target_pattern_match(const char *pat, const char *target);
