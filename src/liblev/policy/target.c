/*
 * target.c - canonical call targets (URL hosts, recipients, names) and the
 * allowlist pattern language.  See target.h for the rules.
 *
 * Every function here refuses what it cannot read unambiguously: the taint
 * gate treats a refused target as "no target", which only a target-less
 * rule can allow, so refusing is the fail-closed answer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <idn2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/curlapi.h"
#include "liblev/policy/target.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/xalloc.h"

#define HOST_IN_MAX 1024

void lev_target_url_release(struct lev_target_url *u)
{
	free(u->scheme);
	free(u->userinfo);
	free(u->host);
	free(u->path);
	free(u->canonical);
	memset(u, 0, sizeof(*u));
}

static bool is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool is_xdigit(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hexval(unsigned char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c - 'A' + 10;
}

static unsigned char lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

/* Characters of a canonical DNS label (underscore is common in practice). */
static bool is_label_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_';
}

/*
 * WHATWG IPv4 parsing: the host's last label is numeric, so the host is an
 * address (as libcurl and browsers read it).  Parts may be decimal, octal
 * (leading 0) or hex (0x); "127.1" is 127.0.0.1.  Writes dotted-quad.
 */
static bool last_label_numeric(const char *h)
{
	const char *last = strrchr(h, '.');
	const char *p = last ? last + 1 : h;

	if (*p == '\0')
		return false;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		for (p += 2; *p; p++)
			if (!is_xdigit((unsigned char)*p))
				return false;
		return true;
	}
	for (; *p; p++)
		if (!is_digit((unsigned char)*p))
			return false;
	return true;
}

static int parse_ipv4_part(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	unsigned base = 10;
	size_t i = 0;

	if (n == 0)
		return -EINVAL;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	} else if (n >= 2 && s[0] == '0') {
		base = 8;
		i = 1;
	}
	for (; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		unsigned d;

		if (base == 16 && is_xdigit(c))
			d = (unsigned)hexval(c);
		else if (is_digit(c) && (unsigned)(c - '0') < base)
			d = (unsigned)(c - '0');
		else
			return -EINVAL;
		v = v * base + d;
		if (v > 0xffffffffULL)
			return -ERANGE;
	}
	*out = v;
	return 0;
}

static int ipv4_canon(const char *h, char **out)
{
	uint64_t parts[4];
	const char *p = h;
	size_t n = 0;
	uint64_t addr;
	size_t i;

	for (;;) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);

		if (n == 4 || parse_ipv4_part(p, len, &parts[n]) < 0)
			return -EINVAL;
		n++;
		if (!dot)
			break;
		p = dot + 1;
	}
	for (i = 0; i + 1 < n; i++)
		if (parts[i] > 255)
			return -EINVAL;
	if (parts[n - 1] >= (1ULL << (8 * (5 - n))))
		return -EINVAL;
	addr = parts[n - 1];
	for (i = 0; i + 1 < n; i++)
		addr += parts[i] << (8 * (3 - i));
	*out = xasprintf("%u.%u.%u.%u", (unsigned)(addr >> 24) & 255, (unsigned)(addr >> 16) & 255,
			 (unsigned)(addr >> 8) & 255, (unsigned)addr & 255);
	return 0;
}

static int ipv6_canon(const char *in, size_t len, char **out, struct lev_err *err)
{
	char tmp[64], txt[INET6_ADDRSTRLEN];
	struct in6_addr a;

	if (len == 0 || len >= sizeof(tmp) || memchr(in, '%', len))
		return lev_err_set(err, LEV_EPARSE, "invalid IPv6 address");
	memcpy(tmp, in, len);
	tmp[len] = '\0';
	if (inet_pton(AF_INET6, tmp, &a) != 1 || !inet_ntop(AF_INET6, &a, txt, sizeof(txt)))
		return lev_err_set(err, LEV_EPARSE, "invalid IPv6 address");
	*out = xasprintf("[%s]", txt);
	return 0;
}

int lev_target_host_canon(const char *host, size_t len, char **out, struct lev_err *err)
{
	char dec[HOST_IN_MAX + 1];
	_cleanup_free_ char *ascii = NULL;
	bool non_ascii = false;
	size_t i, n = 0, label = 0;
	char *h;

	if (len == 0)
		return lev_err_set(err, LEV_EPARSE, "empty host");
	if (len > HOST_IN_MAX)
		return lev_err_set(err, LEV_EPARSE, "host is too long");
	if (host[0] == '[') {
		if (host[len - 1] != ']')
			return lev_err_set(err, LEV_EPARSE, "unterminated IPv6 literal");
		return ipv6_canon(host + 1, len - 2, out, err);
	}

	/* one pass of percent-decoding; what remains must be a plain host */
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)host[i];

		if (c == '%') {
			if (i + 2 >= len || !is_xdigit((unsigned char)host[i + 1]) ||
			    !is_xdigit((unsigned char)host[i + 2]))
				return lev_err_set(err, LEV_EPARSE, "bad percent-encoding in host");
			c = (unsigned char)(hexval((unsigned char)host[i + 1]) * 16 +
					    hexval((unsigned char)host[i + 2]));
			i += 2;
		}
		if (c >= 0x80) {
			non_ascii = true;
		} else if (!(is_alpha(c) || is_digit(c) || c == '.' || c == '-' || c == '_')) {
			return lev_err_set(err, LEV_EPARSE, "host holds the character 0x%02x", c);
		}
		dec[n++] = (char)c;
	}
	dec[n] = '\0';

	if (non_ascii) {
		/* the mapping libcurl applies: UTS #46 non-transitional, then transitional */
		char *a = NULL;
		int r = idn2_to_ascii_8z(dec, &a, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);

		if (r != IDN2_OK) {
			free(a);
			a = NULL;
			r = idn2_to_ascii_8z(dec, &a, IDN2_TRANSITIONAL);
		}
		if (r != IDN2_OK) {
			free(a);
			return lev_err_set(err, LEV_EPARSE, "host is not a valid internationalised name: %s",
					   idn2_strerror(r));
		}
		ascii = a;
		h = ascii;
	} else {
		h = dec;
	}

	n = strlen(h);
	for (i = 0; i < n; i++)
		h[i] = (char)lower((unsigned char)h[i]);
	if (n > 0 && h[n - 1] == '.')
		h[--n] = '\0';
	if (n == 0)
		return lev_err_set(err, LEV_EPARSE, "empty host");
	if (n > 253)
		return lev_err_set(err, LEV_EPARSE, "host is longer than 253 bytes");
	for (i = 0; i <= n; i++) {
		unsigned char c = (unsigned char)h[i];

		if (c == '.' || c == '\0') {
			if (label == 0)
				return lev_err_set(err, LEV_EPARSE, "host has an empty label");
			if (label > 63)
				return lev_err_set(err, LEV_EPARSE, "host label is longer than 63 bytes");
			label = 0;
			continue;
		}
		if (!is_label_char(c))
			return lev_err_set(err, LEV_EPARSE, "host holds the character 0x%02x", c);
		label++;
	}
	if (last_label_numeric(h)) {
		if (ipv4_canon(h, out) < 0)
			return lev_err_set(err, LEV_EPARSE, "invalid IPv4 address");
		return 0;
	}
	*out = xstrdup(h);
	return 0;
}

/*
 * Differential check: libcurl, which performs the fetch, must read the same
 * host and port out of URL.  Any disagreement is a parser confusion an
 * attacker could use to show the gate one host and connect to another.
 */
static int cross_check_curl(const char *url, const char *host, unsigned port,
			    struct lev_err *err)
{
	_cleanup_free_ char *canon = NULL;
	char *chost = NULL, *cport = NULL;
	const struct lev_curlapi *C;
	CURLUcode rc;
	CURLU *h;
	int r;

	r = lev_curlapi_get(&C, err);
	if (r < 0)
		return r;
	h = C->url();
	if (!h)
		return lev_err_set(err, -ENOMEM, "cannot allocate a URL handle");
	rc = C->url_set(h, CURLUPART_URL, url, CURLU_GUESS_SCHEME);
	if (rc == CURLUE_OK)
		rc = C->url_get(h, CURLUPART_HOST, &chost, 0);
	if (rc != CURLUE_OK) {
		r = lev_err_set(err, LEV_EPARSE, "libcurl refuses the URL: %s", C->url_strerror(rc));
		goto out;
	}
	if (C->url_get(h, CURLUPART_PORT, &cport, 0) != CURLUE_OK)
		cport = NULL;
	if (lev_target_host_canon(chost, strlen(chost), &canon, NULL) < 0 || strcmp(canon, host) != 0) {
		r = lev_err_set(err, LEV_EPARSE, "libcurl reads a different host out of the URL");
		goto out;
	}
	if ((cport ? (unsigned)strtoul(cport, NULL, 10) : 0u) != port) {
		r = lev_err_set(err, LEV_EPARSE, "libcurl reads a different port out of the URL");
		goto out;
	}
out:
	C->free(chost);
	C->free(cport);
	C->url_cleanup(h);
	return r;
}

static bool is_scheme_char(unsigned char c)
{
	return is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
}

int lev_target_url_parse(const char *url, struct lev_target_url *out, struct lev_err *err)
{
	_cleanup_free_ char *scheme = NULL, *userinfo = NULL, *host = NULL, *path = NULL;
	const char *auth, *auth_end, *hp, *hp_end, *host_end, *at = NULL, *frag;
	unsigned port = 0;
	size_t len, i;
	int r;

	len = strnlen(url, LEV_TARGET_URL_MAX + 1);
	if (len > LEV_TARGET_URL_MAX)
		return lev_err_set(err, LEV_EPARSE, "URL is longer than %d bytes", LEV_TARGET_URL_MAX);
	if (len == 0)
		return lev_err_set(err, LEV_EPARSE, "empty URL");
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)url[i];

		if (c <= 0x20 || c == 0x7f || c == '\\')
			return lev_err_set(err, LEV_EPARSE,
					   "URL holds a space, control character or backslash");
	}

	/* scheme: only when followed by "://"; otherwise guess http as libcurl does */
	for (i = 0; i < len && is_scheme_char((unsigned char)url[i]); i++)
		;
	if (i > 0 && is_alpha((unsigned char)url[0]) && i + 3 <= len && !memcmp(url + i, "://", 3)) {
		scheme = xstrndup(url, i);
		auth = url + i + 3;
	} else if (i > 0 && i + 1 < len && url[i] == ':' && url[i + 1] == '/') {
		return lev_err_set(err, LEV_EPARSE, "URL scheme must be followed by '://'");
	} else {
		scheme = xstrdup("http");
		auth = url;
	}
	for (i = 0; scheme[i]; i++)
		scheme[i] = (char)lower((unsigned char)scheme[i]);
	if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
		return lev_err_set(err, LEV_EPARSE, "unsupported URL scheme '%s'", scheme);

	auth_end = auth + strcspn(auth, "/?#");
	for (hp = auth; hp < auth_end; hp++) {
		if (*hp == '@') {
			if (at)
				return lev_err_set(err, LEV_EPARSE, "URL authority holds more than one '@'");
			at = hp;
		}
	}
	if (at) {
		userinfo = xstrndup(auth, (size_t)(at - auth));
		hp = at + 1;
	} else {
		hp = auth;
	}
	hp_end = auth_end;
	if (hp == hp_end)
		return lev_err_set(err, LEV_EPARSE, "URL has no host");

	if (*hp == '[') {
		const char *rb = memchr(hp, ']', (size_t)(hp_end - hp));

		if (!rb)
			return lev_err_set(err, LEV_EPARSE, "unterminated IPv6 literal in URL");
		host_end = rb + 1;
		if (host_end != hp_end && *host_end != ':')
			return lev_err_set(err, LEV_EPARSE, "unexpected text after IPv6 literal");
	} else {
		const char *colon = NULL, *p;

		for (p = hp; p < hp_end; p++)
			if (*p == ':')
				colon = p;
		host_end = colon ? colon : hp_end;
	}
	if (host_end < hp_end) {
		/* ":port"; an empty port is allowed and means the default */
		const char *p = host_end + 1;

		if (hp_end - p > 5)
			return lev_err_set(err, LEV_EPARSE, "invalid port in URL");
		for (; p < hp_end; p++) {
			if (!is_digit((unsigned char)*p))
				return lev_err_set(err, LEV_EPARSE, "invalid port in URL");
			port = port * 10 + (unsigned)(*p - '0');
		}
		if (port > 65535 || (port == 0 && hp_end - host_end > 1))
			return lev_err_set(err, LEV_EPARSE, "invalid port in URL");
	}
	r = lev_target_host_canon(hp, (size_t)(host_end - hp), &host, err);
	if (r < 0)
		return r;

	r = cross_check_curl(url, host, port, err);
	if (r < 0)
		return r;

	frag = strchr(auth_end, '#');
	if (auth_end[0] == '/')
		path = xstrndup(auth_end, frag ? (size_t)(frag - auth_end) : strlen(auth_end));
	else
		path = xasprintf("/%.*s", (int)(frag ? (size_t)(frag - auth_end) : strlen(auth_end)),
				 auth_end);

	out->canonical = port ? xasprintf("%s://%s%s%s:%u%s", scheme, userinfo ? userinfo : "",
					  userinfo ? "@" : "", host, port, path)
			      : xasprintf("%s://%s%s%s%s", scheme, userinfo ? userinfo : "",
					  userinfo ? "@" : "", host, path);
	out->scheme = TAKE_PTR(scheme);
	out->userinfo = TAKE_PTR(userinfo);
	out->host = TAKE_PTR(host);
	out->port = port;
	out->path = TAKE_PTR(path);
	return 0;
}

/* RFC 5322 atext minus what mail systems route on ('%', '!') or quote. */
static bool is_local_char(unsigned char c)
{
	return is_alpha(c) || is_digit(c) || (c && strchr(".#$&'*+/=?^_`{|}~-", c));
}

int lev_target_recipient_canon(const char *s, char **out, struct lev_err *err)
{
	_cleanup_free_ char *domain = NULL;
	const char *at;
	size_t len = strnlen(s, LEV_TARGET_MAX + 1), i, local_len;
	char *res;
	int r;

	if (len == 0)
		return lev_err_set(err, LEV_EPARSE, "empty recipient");
	if (len > LEV_TARGET_MAX)
		return lev_err_set(err, LEV_EPARSE, "recipient is too long");
	if (s[0] == '+') {
		if (len < 4 || len > 21)
			return lev_err_set(err, LEV_EPARSE, "invalid phone number");
		for (i = 1; i < len; i++)
			if (!is_digit((unsigned char)s[i]))
				return lev_err_set(err, LEV_EPARSE, "invalid phone number");
		*out = xstrdup(s);
		return 0;
	}
	at = strchr(s, '@');
	if (!at || strchr(at + 1, '@'))
		return lev_err_set(err, LEV_EPARSE, "a recipient must hold exactly one '@'");
	local_len = (size_t)(at - s);
	if (local_len == 0 || local_len > 64)
		return lev_err_set(err, LEV_EPARSE, "invalid local part in recipient");
	for (i = 0; i < local_len; i++)
		if (!is_local_char((unsigned char)s[i]))
			return lev_err_set(err, LEV_EPARSE, "recipient local part holds the character 0x%02x",
					   (unsigned char)s[i]);
	if (s[0] == '.' || s[local_len - 1] == '.')
		return lev_err_set(err, LEV_EPARSE, "invalid local part in recipient");
	r = lev_target_host_canon(at + 1, strlen(at + 1), &domain, err);
	if (r < 0)
		return lev_err_wrap(err, "recipient domain");
	if (domain[0] == '[' || last_label_numeric(domain))
		return lev_err_set(err, LEV_EPARSE, "a recipient domain must be a name, not an address");
	res = xasprintf("%.*s@%s", (int)local_len, s, domain);
	for (i = 0; i < local_len; i++)
		res[i] = (char)lower((unsigned char)res[i]);
	*out = res;
	return 0;
}

static bool is_name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || is_digit(c) || (c && strchr("._#:+-/", c));
}

static bool looks_like_host(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (!(c >= 0x80 || is_alpha(c) || is_digit(c) || c == '.' || c == '-' || c == '_' ||
		      c == '%'))
			return false;
	}
	return true;
}

int lev_target_value_canon(const char *s, char **out, struct lev_err *err)
{
	size_t len = strnlen(s, LEV_TARGET_URL_MAX + 1), i;
	char *res;

	if (len == 0)
		return lev_err_set(err, LEV_EPARSE, "empty target");
	if (strstr(s, "://")) {
		struct lev_target_url u = { 0 };
		int r = lev_target_url_parse(s, &u, err);

		if (r < 0)
			return r;
		*out = TAKE_PTR(u.host);
		lev_target_url_release(&u);
		return 0;
	}
	if (len > LEV_TARGET_MAX)
		return lev_err_set(err, LEV_EPARSE, "target is too long");
	if (s[0] == '+' || strchr(s, '@'))
		return lev_target_recipient_canon(s, out, err);
	if (s[0] == '[' || looks_like_host(s))
		return lev_target_host_canon(s, len, out, err);
	res = xstrdup(s);
	for (i = 0; i < len; i++) {
		res[i] = (char)lower((unsigned char)res[i]);
		/* '#' only leads a channel name: "evil.com#.example.com" is no name */
		if (!is_name_char((unsigned char)res[i]) || (res[i] == '#' && i > 0)) {
			unsigned char c = (unsigned char)res[i];

			free(res);
			return lev_err_set(err, LEV_EPARSE, "target holds the character 0x%02x", c);
		}
	}
	*out = res;
	return 0;
}

int lev_target_pattern_canon(const char *pat, char **out, struct lev_err *err)
{
	size_t len = strnlen(pat, LEV_TARGET_MAX + 1), i;
	_cleanup_free_ char *shown = NULL;
	const char *star;
	char *c = NULL;
	int r;

	if (len == 0)
		return lev_err_set(err, LEV_EPARSE, "empty pattern");
	if (len > LEV_TARGET_MAX)
		return lev_err_set(err, LEV_EPARSE, "pattern is too long");
	/* patterns come from files and the command line: quote them printably */
	shown = lev_printable(pat, len, 80);
	if (!strcmp(pat, "*")) {
		*out = xstrdup("*");
		return 0;
	}
	star = strchr(pat, '*');
	if (!star) {
		r = lev_target_value_canon(pat, out, err);
		return r < 0 ? lev_err_wrap(err, "pattern '%s'", shown) : 0;
	}
	if (strchr(star + 1, '*'))
		return lev_err_set(err, LEV_EPARSE, "pattern '%s' holds more than one '*'", shown);
	if (star == pat) {
		if (pat[1] != '.' && pat[1] != '@')
			return lev_err_set(err, LEV_EPARSE,
					   "pattern '%s': a leading '*' must be followed by '.' or '@' "
					   "(write '*.%s' to match sub-domains)",
					   shown, shown + 1);
		r = lev_target_host_canon(pat + 2, len - 2, &c, err);
		if (r < 0)
			return lev_err_wrap(err, "pattern '%s'", shown);
		if (c[0] == '[' || last_label_numeric(c)) {
			free(c);
			return lev_err_set(err, LEV_EPARSE, "pattern '%s': a suffix must be a domain name",
					   shown);
		}
		*out = xasprintf("*%c%s", pat[1], c);
		free(c);
		return 0;
	}
	if (star != pat + len - 1)
		return lev_err_set(err, LEV_EPARSE,
				   "pattern '%s': '*' may only start or end a pattern", shown);
	c = xstrndup(pat, len - 1);
	for (i = 0; c[i]; i++) {
		unsigned char ch = lower((unsigned char)c[i]);

		if (!(is_name_char(ch) || ch == '@' || ch == '[' || ch == ']')) {
			free(c);
			return lev_err_set(err, LEV_EPARSE, "pattern '%s' holds the character 0x%02x", shown,
					   ch);
		}
		c[i] = (char)ch;
	}
	*out = xasprintf("%s*", c);
	free(c);
	return 0;
}

static bool is_host_target(const char *t)
{
	for (; *t; t++)
		if (!is_label_char((unsigned char)*t) && *t != '.')
			return false;
	return true;
}

bool lev_target_pattern_match(const char *pat, const char *target)
{
	size_t pl, tl;

	if (!pat || !target || !*target)
		return false;
	if (pat[0] == '*' && pat[1] == '\0')
		return true;
	pl = strlen(pat);
	tl = strlen(target);
	if (pat[0] == '*' && pat[1] == '.') {
		/* strict sub-domain: ".example.com" must be a proper suffix */
		return is_host_target(target) && tl > pl - 1 &&
		       !memcmp(target + tl - (pl - 1), pat + 1, pl - 1);
	}
	if (pat[0] == '*' && pat[1] == '@') {
		const char *at = strchr(target, '@');

		return at && !strcmp(at + 1, pat + 2) && at != target;
	}
	if (pat[pl - 1] == '*')
		return tl >= pl - 1 && !memcmp(target, pat, pl - 1);
	return !strcmp(pat, target);
}
