/*
 * netguard.h - which network addresses a tool may reach (SSRF guard), and
 * URL parsing for the network tools.
 *
 * The classifier works on addresses, never on names: the network tools
 * call it from the libcurl connect hook (lev_http_connect_hook) with the
 * address actually being connected, for every hop, so a name that
 * resolves (or re-resolves, DNS rebinding) to a private address is
 * refused at connect time.
 *
 * IPv6 forms that embed an IPv4 address are classified by the embedded
 * address: IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d),
 * IPv4-translated (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4
 * (2002::/16).  Teredo (2001::/32) and the local-use NAT64 prefix
 * (64:ff9b:1::/48) are refused outright, as is any IPv6 address outside
 * global unicast (2000::/3).
 *
 * Pure functions except lev_netaddr_is_host_address() (getifaddrs).
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "liblev/base/error.h"

enum lev_netaddr_class {
	LEV_NETADDR_PUBLIC,
	LEV_NETADDR_LOOPBACK,		/* 127/8, ::1 */
	LEV_NETADDR_PRIVATE,		/* 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10 */
	LEV_NETADDR_SHARED,		/* 100.64/10 (carrier-grade NAT) */
	LEV_NETADDR_LINK_LOCAL,		/* 169.254/16, fe80::/10 */
	LEV_NETADDR_METADATA,		/* cloud metadata endpoints (see below) */
	LEV_NETADDR_UNSPECIFIED,	/* 0/8, :: */
	LEV_NETADDR_MULTICAST,		/* 224/4, ff00::/8 */
	LEV_NETADDR_BROADCAST,		/* 255.255.255.255 */
	LEV_NETADDR_RESERVED,		/* documentation, benchmarking, 240/4, Teredo, non-2000::/3 */
	LEV_NETADDR_HOST,		/* an address of one of this host's interfaces */
	_LEV_NETADDR_MAX,
};

/*
 * Cloud metadata endpoints, classified LEV_NETADDR_METADATA and refused
 * even with allow_local_network = true: 169.254.169.254 (AWS, GCP, Azure,
 * OpenStack, Oracle), 169.254.170.2 (ECS task credentials), 100.100.100.200
 * (Alibaba), 168.63.129.16 (Azure wireserver), fd00:ec2::254 (AWS IPv6).
 */

/* ADDR in host byte order. */
enum lev_netaddr_class lev_netaddr_classify_v4(uint32_t addr);
enum lev_netaddr_class lev_netaddr_classify_v6(const struct in6_addr *addr);
/* AF_INET or AF_INET6; anything else (or a short LEN) is LEV_NETADDR_RESERVED. */
enum lev_netaddr_class lev_netaddr_classify(const struct sockaddr *sa, socklen_t len);

/* "public", "loopback", "private", ... for messages. */
const char *lev_netaddr_class_name(enum lev_netaddr_class c);

/*
 * May a tool connect to an address of class C?  Public: always.
 * Metadata: never.  Anything else: only with ALLOW_LOCAL.
 */
bool lev_netaddr_allowed(enum lev_netaddr_class c, bool allow_local);

/* Is SA one of the addresses configured on this host's interfaces? */
bool lev_netaddr_is_host_address(const struct sockaddr *sa, socklen_t len);

/*
 * Parse an IP address literal the way the C library does for a host name:
 * IPv4 in any inet_aton() form ("127.1", "0x7f.1", "2130706433",
 * "0177.0.0.1") or IPv6, with or without [brackets] (a %zone is refused).
 * Returns 0 and fills *out (AF_INET or AF_INET6 sockaddr) and *len_out, or
 * -EINVAL when TEXT is not an address literal.
 */
int lev_netaddr_parse(const char *text, struct sockaddr_storage *out, socklen_t *len_out);

/* Format SA's address (no port) into BUF of SIZE bytes; returns BUF. */
const char *lev_netaddr_format(const struct sockaddr *sa, socklen_t len, char *buf, size_t size);

#define LEV_URL_MAX 8192

/* A URL split for the guard; every string is owned (lev_url_release). */
struct lev_url {
	char *scheme;		/* "http" or "https" */
	char *host;		/* lower case, IDN as punycode, no brackets */
	unsigned port;		/* explicit or the scheme default */
	char *url;		/* the normalised URL libcurl will use */
	bool host_is_literal;	/* host is an IP address literal */
};

/*
 * Parse URL with libcurl's own parser (so the guard sees the same host the
 * transfer will use).  Refuses, with a message naming the URL: a URL over
 * LEV_URL_MAX bytes or with control characters or spaces, a scheme other
 * than http/https, a missing host, user:password@ credentials.
 */
int lev_url_parse(const char *url, struct lev_url *out, struct lev_err *err);
void lev_url_release(struct lev_url *u);
