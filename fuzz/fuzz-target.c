/*
 * fuzz-target.c - URL, host, recipient and pattern canonicalisation, and
 * target extraction from tool arguments, on arbitrary bytes.
 *
 * Properties: canonical forms are fixed points (canonicalising again gives
 * the same string); a parsed URL's canonical form parses back to the same
 * host and port; a canonical host holds only [a-z0-9._-] (or is a bracketed
 * IPv6 address); a "*.suffix" pattern only ever matches a proper
 * sub-domain; extraction yields canonical targets.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/strv.h"
#include "liblev/policy/taint.h"
#include "liblev/policy/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

static void check_host(const char *h)
{
	char *again = NULL;
	const char *p;

	if (h[0] == '[') {
		CHECK(h[strlen(h) - 1] == ']');
	} else {
		for (p = h; *p; p++)
			CHECK((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' ||
			      *p == '-' || *p == '_');
		CHECK(h[0] != '.' && h[strlen(h) - 1] != '.' && !strstr(h, ".."));
	}
	CHECK(lev_target_host_canon(h, strlen(h), &again, NULL) == 0);
	CHECK(strcmp(again, h) == 0);
	free(again);
}

static void check_value(const char *v)
{
	char *again = NULL;

	CHECK(lev_target_value_canon(v, &again, NULL) == 0);
	CHECK(strcmp(again, v) == 0);
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lev_target_url u = { 0 };
	char *s, *c = NULL, *pat = NULL;
	char **v = NULL, **t;
	json_t *args;
	char *json;

	if (size > 4096)
		return 0;
	s = malloc(size + 1);
	CHECK(s);
	memcpy(s, data, size);
	s[size] = '\0';

	if (lev_target_url_parse(s, &u, NULL) == 0) {
		struct lev_target_url u2 = { 0 };

		check_host(u.host);
		CHECK(!strcmp(u.scheme, "http") || !strcmp(u.scheme, "https"));
		CHECK(u.port <= 65535);
		CHECK(lev_target_url_parse(u.canonical, &u2, NULL) == 0);
		CHECK(!strcmp(u2.host, u.host) && u2.port == u.port);
		lev_target_url_release(&u2);
	}
	lev_target_url_release(&u);

	if (lev_target_host_canon(s, size, &c, NULL) == 0)
		check_host(c);
	free(c);
	c = NULL;

	if (lev_target_value_canon(s, &c, NULL) == 0)
		check_value(c);
	free(c);
	c = NULL;

	if (lev_target_pattern_canon(s, &pat, NULL) == 0) {
		char *again = NULL;

		CHECK(lev_target_pattern_canon(pat, &again, NULL) == 0);
		CHECK(!strcmp(again, pat));
		free(again);
		if (pat[0] == '*' && pat[1] == '.') {
			CHECK(!lev_target_pattern_match(pat, pat + 2));	/* never the apex */
			CHECK(!strchr(pat + 2, '*'));
		}
	}

	/* the same bytes as a URL argument and as recipients */
	args = json_pack("{s:s%,s:[s%]}", "url", s, size, "to", s, size);
	if (args) {
		json = json_dumps(args, 0);
		if (json) {
			if (lev_taint_target_of("web_fetch", NULL, json, strlen(json), &v, NULL) == 0) {
				CHECK(lev_strv_len(v) == 1);
				check_host(v[0]);
				if (pat)
					(void)lev_target_pattern_match(pat, v[0]);
			}
			v = lev_strv_free(v);
			if (lev_taint_target_of("send_email", NULL, json, strlen(json), &v, NULL) == 0)
				for (t = v; t && *t; t++)
					check_value(*t);
			v = lev_strv_free(v);
			free(json);
		}
		json_decref(args);
	}
	free(pat);
	free(s);
	return 0;
}
