#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/curlapi.h"
#include "liblev/policy/netguard.h"
#include "liblev/base/xalloc.h"

struct v4_range {
	uint32_t net;
	unsigned bits;
	enum lev_netaddr_class cls;
};

#define V4(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

/* Most specific entries first: the first match wins. */
static const struct v4_range v4_ranges[] = {
	{ V4(169, 254, 169, 254), 32, LEV_NETADDR_METADATA },
	{ V4(169, 254, 170, 2), 32, LEV_NETADDR_METADATA },
	{ V4(100, 100, 100, 200), 32, LEV_NETADDR_METADATA },
	{ V4(168, 63, 129, 16), 32, LEV_NETADDR_METADATA },
	{ V4(255, 255, 255, 255), 32, LEV_NETADDR_BROADCAST },
	{ V4(0, 0, 0, 0), 8, LEV_NETADDR_UNSPECIFIED },
	{ V4(10, 0, 0, 0), 8, LEV_NETADDR_PRIVATE },
	{ V4(100, 64, 0, 0), 10, LEV_NETADDR_SHARED },
	{ V4(127, 0, 0, 0), 8, LEV_NETADDR_LOOPBACK },
	{ V4(169, 254, 0, 0), 16, LEV_NETADDR_LINK_LOCAL },
	{ V4(172, 16, 0, 0), 12, LEV_NETADDR_PRIVATE },
	{ V4(192, 0, 0, 0), 24, LEV_NETADDR_RESERVED },		/* IETF protocol assignments */
	{ V4(192, 0, 2, 0), 24, LEV_NETADDR_RESERVED },		/* TEST-NET-1 */
	{ V4(192, 88, 99, 0), 24, LEV_NETADDR_RESERVED },	/* 6to4 relay anycast */
	{ V4(192, 168, 0, 0), 16, LEV_NETADDR_PRIVATE },
	{ V4(198, 18, 0, 0), 15, LEV_NETADDR_RESERVED },	/* benchmarking */
	{ V4(198, 51, 100, 0), 24, LEV_NETADDR_RESERVED },	/* TEST-NET-2 */
	{ V4(203, 0, 113, 0), 24, LEV_NETADDR_RESERVED },	/* TEST-NET-3 */
	{ V4(224, 0, 0, 0), 4, LEV_NETADDR_MULTICAST },
	{ V4(240, 0, 0, 0), 4, LEV_NETADDR_RESERVED },
};

enum lev_netaddr_class lev_netaddr_classify_v4(uint32_t addr)
{
	for (size_t i = 0; i < ARRAY_SIZE(v4_ranges); i++) {
		uint32_t mask = v4_ranges[i].bits == 0 ? 0 : ~(uint32_t)0 << (32 - v4_ranges[i].bits);
		if ((addr & mask) == v4_ranges[i].net)
			return v4_ranges[i].cls;
	}
	return LEV_NETADDR_PUBLIC;
}

static uint32_t be32_at(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static bool prefix_match(const uint8_t *a, const uint8_t *prefix, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, prefix, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[full] ^ prefix[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

enum lev_netaddr_class lev_netaddr_classify_v6(const struct in6_addr *in)
{
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	static const uint8_t nat64_local[6] = { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 };
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t translated[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 };
	static const uint8_t aws_meta[16] = { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0,
					      0, 0, 0, 0, 0, 0, 0x02, 0x54 };
	static const uint8_t teredo[4] = { 0x20, 0x01, 0x00, 0x00 };
	static const uint8_t doc[4] = { 0x20, 0x01, 0x0d, 0xb8 };
	static const uint8_t orchid[4] = { 0x20, 0x01, 0x00, 0x10 };	/* 2001:10::/28, 2001:20::/28 */
	static const uint8_t orchid2[4] = { 0x20, 0x01, 0x00, 0x20 };
	static const uint8_t discard[8] = { 0x01, 0x00 };		/* 100::/64 */
	const uint8_t *a = in->s6_addr;

	if (all_zero(a, 16))
		return LEV_NETADDR_UNSPECIFIED;
	if (all_zero(a, 15) && a[15] == 1)
		return LEV_NETADDR_LOOPBACK;
	if (memcmp(a, mapped, 12) == 0 || memcmp(a, translated, 12) == 0 ||
	    memcmp(a, nat64, 12) == 0)
		return lev_netaddr_classify_v4(be32_at(a + 12));
	if (all_zero(a, 12))	/* IPv4-compatible ::a.b.c.d (deprecated) */
		return lev_netaddr_classify_v4(be32_at(a + 12));
	if (memcmp(a, nat64_local, 6) == 0)
		return LEV_NETADDR_PRIVATE;
	if (memcmp(a, aws_meta, 16) == 0)
		return LEV_NETADDR_METADATA;
	if (a[0] == 0xff)
		return LEV_NETADDR_MULTICAST;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return LEV_NETADDR_LINK_LOCAL;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
		return LEV_NETADDR_PRIVATE;	/* site-local (deprecated) */
	if ((a[0] & 0xfe) == 0xfc)
		return LEV_NETADDR_PRIVATE;	/* unique local */
	if (a[0] == 0x20 && a[1] == 0x02)	/* 6to4: 2002:AABB:CCDD::/48 */
		return lev_netaddr_classify_v4(be32_at(a + 2));
	if (memcmp(a, teredo, 4) == 0 || prefix_match(a, doc, 32) ||
	    prefix_match(a, orchid, 28) || prefix_match(a, orchid2, 28) ||
	    prefix_match(a, discard, 64))
		return LEV_NETADDR_RESERVED;
	if ((a[0] & 0xe0) != 0x20)	/* outside global unicast 2000::/3 */
		return LEV_NETADDR_RESERVED;
	return LEV_NETADDR_PUBLIC;
}

enum lev_netaddr_class lev_netaddr_classify(const struct sockaddr *sa, socklen_t len)
{
	if (!sa)
		return LEV_NETADDR_RESERVED;
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)sa;
		return lev_netaddr_classify_v4(ntohl(s4->sin_addr.s_addr));
	}
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)sa;
		return lev_netaddr_classify_v6(&s6->sin6_addr);
	}
	return LEV_NETADDR_RESERVED;
}

const char *lev_netaddr_class_name(enum lev_netaddr_class c)
{
	static const char *const names[_LEV_NETADDR_MAX] = {
		[LEV_NETADDR_PUBLIC] = "public",
		[LEV_NETADDR_LOOPBACK] = "loopback",
		[LEV_NETADDR_PRIVATE] = "private",
		[LEV_NETADDR_SHARED] = "shared (carrier-grade NAT)",
		[LEV_NETADDR_LINK_LOCAL] = "link-local",
		[LEV_NETADDR_METADATA] = "cloud metadata",
		[LEV_NETADDR_UNSPECIFIED] = "unspecified",
		[LEV_NETADDR_MULTICAST] = "multicast",
		[LEV_NETADDR_BROADCAST] = "broadcast",
		[LEV_NETADDR_RESERVED] = "reserved",
		[LEV_NETADDR_HOST] = "this host's own",
	};
	return (unsigned)c < _LEV_NETADDR_MAX ? names[c] : "unknown";
}

bool lev_netaddr_allowed(enum lev_netaddr_class c, bool allow_local)
{
	if (c == LEV_NETADDR_PUBLIC)
		return true;
	if (c == LEV_NETADDR_METADATA || (unsigned)c >= _LEV_NETADDR_MAX)
		return false;
	return allow_local;
}

bool lev_netaddr_is_host_address(const struct sockaddr *sa, socklen_t len)
{
	struct ifaddrs *ifa = NULL;
	bool found = false;

	if (!sa || getifaddrs(&ifa) < 0)
		return false;
	for (struct ifaddrs *p = ifa; p && !found; p = p->ifa_next) {
		if (!p->ifa_addr || p->ifa_addr->sa_family != sa->sa_family)
			continue;
		if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
			const struct sockaddr_in *a = (const void *)sa, *b = (const void *)p->ifa_addr;
			found = a->sin_addr.s_addr == b->sin_addr.s_addr;
		} else if (sa->sa_family == AF_INET6 &&
			   len >= (socklen_t)sizeof(struct sockaddr_in6)) {
			const struct sockaddr_in6 *a = (const void *)sa, *b = (const void *)p->ifa_addr;
			found = memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(a->sin6_addr)) == 0;
		}
	}
	freeifaddrs(ifa);
	return found;
}

int lev_netaddr_parse(const char *text, struct sockaddr_storage *out, socklen_t *len_out)
{
	char tmp[64];
	size_t n;

	if (!text)
		return -EINVAL;
	n = strlen(text);
	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)text[i] <= ' ' || text[i] == '%' || (unsigned char)text[i] >= 0x7f)
			return -EINVAL;
	if (text[0] == '[') {
		if (n < 3 || text[n - 1] != ']')
			return -EINVAL;
		memcpy(tmp, text + 1, n - 2);
		tmp[n - 2] = '\0';
	} else {
		memcpy(tmp, text, n + 1);
	}

	memset(out, 0, sizeof(*out));
	if (strchr(tmp, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)out;
		if (inet_pton(AF_INET6, tmp, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		*len_out = sizeof(*s6);
		return 0;
	}
	if (text[0] == '[')
		return -EINVAL;
	{
		struct sockaddr_in *s4 = (struct sockaddr_in *)out;
		/* inet_aton: the forms getaddrinfo() accepts for a numeric host. */
		if (inet_aton(tmp, &s4->sin_addr) == 0)
			return -EINVAL;
		s4->sin_family = AF_INET;
		*len_out = sizeof(*s4);
	}
	return 0;
}

const char *lev_netaddr_format(const struct sockaddr *sa, socklen_t len, char *buf, size_t size)
{
	if (size == 0)
		return buf;
	buf[0] = '\0';
	if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
			  (socklen_t)size);
	else if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6))
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf,
			  (socklen_t)size);
	else
		snprintf(buf, size, "(unknown address)");
	return buf;
}

void lev_url_release(struct lev_url *u)
{
	if (!u)
		return;
	free(u->scheme);
	free(u->host);
	free(u->url);
	memset(u, 0, sizeof(*u));
}

static char *url_get(const struct lev_curlapi *C, CURLU *h, CURLUPart part, unsigned flags)
{
	char *s = NULL, *r;

	if (C->url_get(h, part, &s, flags) != CURLUE_OK || !s)
		return NULL;
	r = xstrdup(s);
	C->free(s);
	return r;
}

int lev_url_parse(const char *url, struct lev_url *out, struct lev_err *err)
{
	_cleanup_free_ char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL,
			    *pass = NULL, *norm = NULL;
	struct sockaddr_storage ss;
	socklen_t sslen;
	const struct lev_curlapi *C;
	CURLUcode uc;
	unsigned long portnum;
	int r;
	size_t n;
	CURLU *h;
	char *end;

	if (!url || !*url)
		return lev_err_set(err, -EINVAL, "no URL given");
	n = strlen(url);
	if (n > LEV_URL_MAX)
		return lev_err_set(err, -EINVAL, "URL longer than %d bytes", LEV_URL_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)url[i] <= ' ' || url[i] == 0x7f)
			return lev_err_set(err, -EINVAL,
					   "URL holds a space or control character (encode it)");
	r = lev_curlapi_get(&C, err);
	if (r < 0)
		return r;
	h = C->url();
	if (!h)
		return lev_err_set(err, -ENOMEM, "out of memory");
	uc = C->url_set(h, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
	if (uc != CURLUE_OK) {
		C->url_cleanup(h);
		return lev_err_set(err, -EINVAL, "bad URL '%.200s': %s", url, C->url_strerror(uc));
	}
	scheme = url_get(C, h, CURLUPART_SCHEME, 0);
	host = url_get(C, h, CURLUPART_HOST, CURLU_PUNYCODE);
	port = url_get(C, h, CURLUPART_PORT, CURLU_DEFAULT_PORT);
	user = url_get(C, h, CURLUPART_USER, 0);
	pass = url_get(C, h, CURLUPART_PASSWORD, 0);
	norm = url_get(C, h, CURLUPART_URL, CURLU_PUNYCODE);
	C->url_cleanup(h);

	if (!scheme || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
		return lev_err_set(err, -EINVAL, "URL scheme '%.40s' is not allowed (only http and https)",
				   scheme ? scheme : "");
	if (!host || !*host)
		return lev_err_set(err, -EINVAL, "URL '%.200s' has no host", url);
	if (user || pass)
		return lev_err_set(err, -EINVAL, "URLs with credentials (user@host) are not allowed");
	if (!norm)
		return lev_err_set(err, -EINVAL, "bad URL '%.200s'", url);
	errno = 0;
	portnum = port ? strtoul(port, &end, 10) : 0;
	if (!port || *end || errno || portnum == 0 || portnum > 65535)
		return lev_err_set(err, -EINVAL, "URL '%.200s' has a bad port", url);

	/* Strip IPv6 brackets; lower-case the name (libcurl keeps the case). */
	n = strlen(host);
	if (host[0] == '[' && n >= 2 && host[n - 1] == ']') {
		memmove(host, host + 1, n - 2);
		host[n - 2] = '\0';
	}
	for (char *p = host; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');

	memset(out, 0, sizeof(*out));
	out->host_is_literal = lev_netaddr_parse(host, &ss, &sslen) == 0 || strchr(host, ':');
	out->scheme = TAKE_PTR(scheme);
	out->host = TAKE_PTR(host);
	out->port = (unsigned)portnum;
	out->url = TAKE_PTR(norm);
	return 0;
}
