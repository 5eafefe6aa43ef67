#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/policy/netguard.h"

struct addr_case {
	const char *text;
	enum lev_netaddr_class cls;
};

/* Every address form an SSRF payload likes, and the public controls. */
static const struct addr_case addr_cases[] = {
	/* IPv4 loopback in every inet_aton spelling */
	{ "127.0.0.1", LEV_NETADDR_LOOPBACK },
	{ "127.1", LEV_NETADDR_LOOPBACK },
	{ "127.0.1", LEV_NETADDR_LOOPBACK },
	{ "2130706433", LEV_NETADDR_LOOPBACK },
	{ "0x7f000001", LEV_NETADDR_LOOPBACK },
	{ "0x7f.1", LEV_NETADDR_LOOPBACK },
	{ "0x7F.0.0.1", LEV_NETADDR_LOOPBACK },
	{ "0177.0.0.1", LEV_NETADDR_LOOPBACK },
	{ "017700000001", LEV_NETADDR_LOOPBACK },
	{ "127.255.255.254", LEV_NETADDR_LOOPBACK },
	/* unspecified */
	{ "0.0.0.0", LEV_NETADDR_UNSPECIFIED },
	{ "0", LEV_NETADDR_UNSPECIFIED },
	{ "0.1.2.3", LEV_NETADDR_UNSPECIFIED },
	{ "::", LEV_NETADDR_UNSPECIFIED },
	/* private */
	{ "10.0.0.1", LEV_NETADDR_PRIVATE },
	{ "10.255.255.255", LEV_NETADDR_PRIVATE },
	{ "167772161", LEV_NETADDR_PRIVATE },
	{ "172.16.0.1", LEV_NETADDR_PRIVATE },
	{ "172.31.255.255", LEV_NETADDR_PRIVATE },
	{ "192.168.1.1", LEV_NETADDR_PRIVATE },
	{ "0xc0.0xa8.1.1", LEV_NETADDR_PRIVATE },
	/* edges that are public */
	{ "172.15.255.255", LEV_NETADDR_PUBLIC },
	{ "172.32.0.0", LEV_NETADDR_PUBLIC },
	{ "11.0.0.1", LEV_NETADDR_PUBLIC },
	{ "9.255.255.255", LEV_NETADDR_PUBLIC },
	{ "192.169.0.1", LEV_NETADDR_PUBLIC },
	{ "100.63.255.255", LEV_NETADDR_PUBLIC },
	{ "100.128.0.0", LEV_NETADDR_PUBLIC },
	{ "169.253.255.255", LEV_NETADDR_PUBLIC },
	{ "8.8.8.8", LEV_NETADDR_PUBLIC },
	{ "1.1.1.1", LEV_NETADDR_PUBLIC },
	{ "223.255.255.255", LEV_NETADDR_PUBLIC },
	/* CGNAT */
	{ "100.64.0.1", LEV_NETADDR_SHARED },
	{ "100.127.255.255", LEV_NETADDR_SHARED },
	/* link-local and metadata */
	{ "169.254.0.1", LEV_NETADDR_LINK_LOCAL },
	{ "169.254.169.254", LEV_NETADDR_METADATA },
	{ "2852039166", LEV_NETADDR_METADATA },
	{ "0xa9fea9fe", LEV_NETADDR_METADATA },
	{ "0251.0376.0251.0376", LEV_NETADDR_METADATA },
	{ "169.254.43518", LEV_NETADDR_METADATA },
	{ "169.254.170.2", LEV_NETADDR_METADATA },
	{ "100.100.100.200", LEV_NETADDR_METADATA },
	{ "168.63.129.16", LEV_NETADDR_METADATA },
	{ "fd00:ec2::254", LEV_NETADDR_METADATA },
	{ "[fd00:ec2::254]", LEV_NETADDR_METADATA },
	/* multicast, broadcast, reserved */
	{ "224.0.0.1", LEV_NETADDR_MULTICAST },
	{ "239.255.255.250", LEV_NETADDR_MULTICAST },
	{ "255.255.255.255", LEV_NETADDR_BROADCAST },
	{ "4294967295", LEV_NETADDR_BROADCAST },
	{ "240.0.0.1", LEV_NETADDR_RESERVED },
	{ "192.0.2.1", LEV_NETADDR_RESERVED },
	{ "198.51.100.1", LEV_NETADDR_RESERVED },
	{ "203.0.113.1", LEV_NETADDR_RESERVED },
	{ "198.18.0.1", LEV_NETADDR_RESERVED },
	{ "192.0.0.8", LEV_NETADDR_RESERVED },
	/* IPv6 */
	{ "::1", LEV_NETADDR_LOOPBACK },
	{ "[::1]", LEV_NETADDR_LOOPBACK },
	{ "0:0:0:0:0:0:0:1", LEV_NETADDR_LOOPBACK },
	{ "fe80::1", LEV_NETADDR_LINK_LOCAL },
	{ "febf::1", LEV_NETADDR_LINK_LOCAL },
	{ "fec0::1", LEV_NETADDR_PRIVATE },
	{ "fc00::1", LEV_NETADDR_PRIVATE },
	{ "fd12:3456::1", LEV_NETADDR_PRIVATE },
	{ "ff02::1", LEV_NETADDR_MULTICAST },
	{ "2001:db8::1", LEV_NETADDR_RESERVED },
	{ "2001::1", LEV_NETADDR_RESERVED },	/* Teredo */
	{ "100::1", LEV_NETADDR_RESERVED },
	{ "::2", LEV_NETADDR_UNSPECIFIED },	/* compat form of 0.0.0.2 */
	{ "4000::1", LEV_NETADDR_RESERVED },	/* outside 2000::/3 */
	{ "2606:4700:4700::1111", LEV_NETADDR_PUBLIC },
	{ "2a00:1450:4001::1", LEV_NETADDR_PUBLIC },
	/* IPv4 embedded in IPv6 */
	{ "::ffff:127.0.0.1", LEV_NETADDR_LOOPBACK },
	{ "[::ffff:127.0.0.1]", LEV_NETADDR_LOOPBACK },
	{ "::ffff:7f00:1", LEV_NETADDR_LOOPBACK },
	{ "::ffff:169.254.169.254", LEV_NETADDR_METADATA },
	{ "::ffff:10.0.0.1", LEV_NETADDR_PRIVATE },
	{ "::ffff:0:127.0.0.1", LEV_NETADDR_LOOPBACK },	/* IPv4-translated */
	{ "::127.0.0.1", LEV_NETADDR_LOOPBACK },	/* IPv4-compatible */
	{ "::192.168.0.1", LEV_NETADDR_PRIVATE },
	{ "64:ff9b::127.0.0.1", LEV_NETADDR_LOOPBACK },	/* NAT64 */
	{ "64:ff9b::a9fe:a9fe", LEV_NETADDR_METADATA },
	{ "64:ff9b::8.8.8.8", LEV_NETADDR_PUBLIC },
	{ "64:ff9b:1::1", LEV_NETADDR_PRIVATE },	/* local-use NAT64 */
	{ "2002:7f00:1::1", LEV_NETADDR_LOOPBACK },	/* 6to4 of 127.0.0.1 */
	{ "2002:a9fe:a9fe::", LEV_NETADDR_METADATA },
	{ "2002:0808:0808::1", LEV_NETADDR_PUBLIC },
	{ "::ffff:8.8.8.8", LEV_NETADDR_PUBLIC },
};

static void test_classifier_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(addr_cases) / sizeof(addr_cases[0]); i++) {
		struct sockaddr_storage ss;
		socklen_t len = 0;
		enum lev_netaddr_class got;

		if (lev_netaddr_parse(addr_cases[i].text, &ss, &len) != 0)
			fail_msg("cannot parse '%s'", addr_cases[i].text);
		got = lev_netaddr_classify((struct sockaddr *)&ss, len);
		if (got != addr_cases[i].cls)
			fail_msg("'%s': got %s, want %s", addr_cases[i].text,
				 lev_netaddr_class_name(got), lev_netaddr_class_name(addr_cases[i].cls));
	}
}

static void test_not_addresses(void **state)
{
	static const char *const bad[] = {
		"", "localhost", "example.com", "127.0.0.1 ", " 127.0.0.1", "127.0.0.1.", "1.2.3.4.5",
		"256.0.0.1", "fe80::1%eth0", "[fe80::1%25eth0]", "[127.0.0.1]", "::ffff:1.2.3",
		"0x", "1..1", "[::1", "::1]", "127.0.0.1\n",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sockaddr_storage ss;
		socklen_t len = 0;
		if (lev_netaddr_parse(bad[i], &ss, &len) == 0)
			fail_msg("'%s' parsed as an address", bad[i]);
	}
}

static void test_allowed_policy(void **state)
{
	(void)state;
	assert_true(lev_netaddr_allowed(LEV_NETADDR_PUBLIC, false));
	assert_true(lev_netaddr_allowed(LEV_NETADDR_PUBLIC, true));
	for (int c = LEV_NETADDR_LOOPBACK; c < _LEV_NETADDR_MAX; c++) {
		assert_false(lev_netaddr_allowed((enum lev_netaddr_class)c, false));
		if (c == LEV_NETADDR_METADATA)
			assert_false(lev_netaddr_allowed((enum lev_netaddr_class)c, true));
		else
			assert_true(lev_netaddr_allowed((enum lev_netaddr_class)c, true));
	}
	assert_false(lev_netaddr_allowed(_LEV_NETADDR_MAX, true));
}

static void test_odd_sockaddrs(void **state)
{
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	struct sockaddr sa = { .sa_family = AF_UNIX };

	(void)state;
	s4.sin_addr.s_addr = htonl(0x08080808);
	assert_int_equal(lev_netaddr_classify((struct sockaddr *)&s4, sizeof(s4)), LEV_NETADDR_PUBLIC);
	/* A short length is never trusted. */
	assert_int_equal(lev_netaddr_classify((struct sockaddr *)&s4, 4), LEV_NETADDR_RESERVED);
	assert_int_equal(lev_netaddr_classify(&sa, sizeof(sa)), LEV_NETADDR_RESERVED);
	assert_int_equal(lev_netaddr_classify(NULL, 0), LEV_NETADDR_RESERVED);
}

static void test_host_address(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len;

	(void)state;
	/* Loopback is configured on every Linux host (lo). */
	assert_int_equal(lev_netaddr_parse("127.0.0.1", &ss, &len), 0);
	assert_true(lev_netaddr_is_host_address((struct sockaddr *)&ss, len));
	assert_int_equal(lev_netaddr_parse("192.0.2.77", &ss, &len), 0);
	assert_false(lev_netaddr_is_host_address((struct sockaddr *)&ss, len));
}

struct url_case {
	const char *url;
	int ok;
	const char *host;
	unsigned port;
	const char *scheme;
};

static const struct url_case url_cases[] = {
	{ "http://example.com/", 1, "example.com", 80, "http" },
	{ "https://Example.COM:8443/x?y=1#z", 1, "example.com", 8443, "https" },
	{ "http://127.0.0.1:8080/", 1, "127.0.0.1", 8080, "http" },
	{ "http://[::1]/", 1, "::1", 80, "http" },
	{ "http://[::ffff:127.0.0.1]/", 1, "::ffff:127.0.0.1", 80, "http" },
	{ "http://2130706433/", 1, "127.0.0.1", 80, "http" },
	{ "http://0x7f.1/", 1, "127.0.0.1", 80, "http" },
	{ "http://127.1/", 1, "127.0.0.1", 80, "http" },
	{ "HTTP://example.com", 1, "example.com", 80, "http" },
	{ "ftp://example.com/", 0, NULL, 0, NULL },
	{ "file:///etc/passwd", 0, NULL, 0, NULL },
	{ "gopher://127.0.0.1:6379/_", 0, NULL, 0, NULL },
	{ "dict://127.0.0.1:11211/", 0, NULL, 0, NULL },
	{ "javascript:alert(1)", 0, NULL, 0, NULL },
	{ "http://user:pass@example.com/", 0, NULL, 0, NULL },
	{ "http://example.com@127.0.0.1/", 0, NULL, 0, NULL },
	/* libcurl's normalisation; the guard and the transfer both use its result */
	{ "http:///path", 1, "path", 80, "http" },
	{ "http://exa mple.com/", 0, NULL, 0, NULL },
	{ "http://example.com/\r\nX-Injected: 1", 0, NULL, 0, NULL },
	{ "", 0, NULL, 0, NULL },
	{ "http://example.com:0/", 0, NULL, 0, NULL },
	{ "http://example.com:99999/", 0, NULL, 0, NULL },
};

static void test_url_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(url_cases) / sizeof(url_cases[0]); i++) {
		const struct url_case *c = &url_cases[i];
		struct lev_err err = LEV_ERR_INIT;
		struct lev_url u;
		int r = lev_url_parse(c->url, &u, &err);

		if (c->ok && r != 0)
			fail_msg("'%s' refused: %s", c->url, err.msg);
		if (!c->ok && r == 0) {
			lev_url_release(&u);
			fail_msg("'%s' accepted", c->url);
		}
		if (!c->ok) {
			assert_true(err.msg[0] != '\0');
			continue;
		}
		if (c->host && strcmp(u.host, c->host) != 0)
			fail_msg("'%s': host '%s', want '%s'", c->url, u.host, c->host);
		assert_int_equal(u.port, c->port);
		assert_string_equal(u.scheme, c->scheme);
		lev_url_release(&u);
	}
}

/* Whatever spelling the URL uses, the host the guard sees is an address that classifies right. */
static void test_url_numeric_hosts_classify(void **state)
{
	static const char *const loopbacks[] = {
		"http://2130706433/", "http://0x7f.1/", "http://127.1/", "http://0177.0.0.1/",
		"http://[::ffff:127.0.0.1]/", "http://[::1]/", "http://0x7f000001/",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(loopbacks) / sizeof(loopbacks[0]); i++) {
		struct lev_err err = LEV_ERR_INIT;
		struct sockaddr_storage ss;
		struct lev_url u;
		socklen_t len;

		assert_int_equal(lev_url_parse(loopbacks[i], &u, &err), 0);
		assert_true(u.host_is_literal);
		if (lev_netaddr_parse(u.host, &ss, &len) != 0)
			fail_msg("'%s' gave host '%s', not an address", loopbacks[i], u.host);
		assert_int_equal(lev_netaddr_classify((struct sockaddr *)&ss, len),
				 LEV_NETADDR_LOOPBACK);
		lev_url_release(&u);
	}
	{
		struct lev_err err = LEV_ERR_INIT;
		struct lev_url u;
		assert_int_equal(lev_url_parse("http://0.0.0.0:80/", &u, &err), 0);
		assert_true(u.host_is_literal);
		lev_url_release(&u);
		assert_int_equal(lev_url_parse("http://example.com/", &u, &err), 0);
		assert_false(u.host_is_literal);
		lev_url_release(&u);
	}
}

static void test_url_too_long(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_url u;
	char *big = malloc(LEV_URL_MAX + 64);

	(void)state;
	strcpy(big, "http://example.com/");
	memset(big + strlen(big), 'a', LEV_URL_MAX);
	big[LEV_URL_MAX + 40] = '\0';
	assert_int_equal(lev_url_parse(big, &u, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "longer"));
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classifier_table),
		cmocka_unit_test(test_not_addresses),
		cmocka_unit_test(test_allowed_policy),
		cmocka_unit_test(test_odd_sockaddrs),
		cmocka_unit_test(test_host_address),
		cmocka_unit_test(test_url_table),
		cmocka_unit_test(test_url_numeric_hosts_classify),
		cmocka_unit_test(test_url_too_long),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
