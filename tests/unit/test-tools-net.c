/*
 * The network tools against a loopback web fixture (tests/helpers/
 * mock-model routes).  Only 127.0.0.1 is ever contacted: the guard is
 * tested by running with allow_local_network = false against loopback
 * (must be refused, and the fixture must record no request) and with
 * true (must work).  Redirects to 169.254.169.254 and friends are
 * refused by the guard before any socket exists.  A "public" name that
 * resolves to loopback is made with a CURLOPT_RESOLVE-style pin, never DNS.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/tools/tools-net.h"
#include "mock-server.h"

static struct mock m;

static const char fixture[] =
	"{\"routes\":{"
	"\"/page\":{\"content_type\":\"text/html; charset=utf-8\",\"body\":"
	"\"<!DOCTYPE html><html><head><title>Hello page</title><style>p{color:red}</style>"
	"<script>var secret = 1;</script></head><body><h1>Welcome</h1><p>Fish &amp; chips"
	" &lt;3 &#169; &#x263A;</p><!-- hidden --><ul><li>one</li><li>two</li></ul>"
	"</body></html>\"},"
	"\"/plain\":{\"content_type\":\"text/plain\",\"body\":\"just text\\n\"},"
	"\"/latin1\":{\"content_type\":\"text/plain; charset=iso-8859-1\",\"body_latin1\":\"caf\\u00e9\"},"
	"\"/image\":{\"content_type\":\"image/png\",\"body\":\"PNG....\"},"
	"\"/missing\":{\"status\":404,\"content_type\":\"text/plain\",\"body\":\"nope\"},"
	"\"/big\":{\"content_type\":\"text/plain\",\"fault\":\"huge\",\"body\":null},"
	"\"/slow\":{\"content_type\":\"text/plain\",\"fault\":\"slow\",\"delay_ms\":1500,"
	"\"body\":\"late\"},"
	"\"/r1\":{\"status\":302,\"headers\":{\"Location\":\"/r2\"}},"
	"\"/r2\":{\"status\":301,\"headers\":{\"Location\":\"http://127.0.0.1:${PORT}/plain\"}},"
	"\"/to-metadata\":{\"status\":302,\"headers\":{\"Location\":"
	"\"http://169.254.169.254/latest/meta-data/\"}},"
	"\"/to-metadata6\":{\"status\":302,\"headers\":{\"Location\":\"http://[fd00:ec2::254]/\"}},"
	"\"/to-mapped\":{\"status\":307,\"headers\":{\"Location\":"
	"\"http://[::ffff:169.254.169.254]/\"}},"
	"\"/to-file\":{\"status\":302,\"headers\":{\"Location\":\"file:///etc/passwd\"}},"
	"\"/to-gopher\":{\"status\":302,\"headers\":{\"Location\":\"gopher://127.0.0.1:${PORT}/\"}},"
	"\"/to-local\":{\"status\":302,\"headers\":{\"Location\":\"http://127.0.0.1:${PORT}/plain\"}},"
	"\"/loop\":{\"status\":302,\"headers\":{\"Location\":\"/loop\"}},"
	"\"/post\":{\"status\":201,\"content_type\":\"application/json\",\"body\":\"{\\\"ok\\\":true}\"},"
	"\"/post-redirect\":{\"status\":307,\"headers\":{\"Location\":\"/post\"}},"
	"\"/search\":{\"content_type\":\"application/json\",\"body\":"
	"\"{\\\"query\\\":\\\"q\\\",\\\"results\\\":["
	"{\\\"title\\\":\\\"First\\\",\\\"url\\\":\\\"https://a.example/1\\\","
	"\\\"content\\\":\\\"snippet\\\\none\\\"},"
	"{\\\"title\\\":\\\"Second\\\",\\\"url\\\":\\\"https://b.example/2\\\"},"
	"{\\\"url\\\":\\\"https://c.example/3\\\"}]}\"},"
	"\"/search-empty\":{\"content_type\":\"application/json\",\"body\":\"{\\\"results\\\":[]}\"},"
	"\"/search-html\":{\"content_type\":\"text/html\",\"body\":\"<html>no json</html>\"},"
	"\"/search-redirect\":{\"status\":302,\"headers\":{\"Location\":\"http://127.0.0.1:${PORT}/search\"}}"
	"}}";

static int setup(void **state)
{
	(void)state;
	mock_start(&m, fixture);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mock_stop(&m);
	return 0;
}

static size_t request_count(void)
{
	json_t *rec = mock_requests(&m);
	size_t n = json_array_size(rec);

	json_decref(rec);
	return n;
}

static struct lev_net_policy local_ok(void)
{
	struct lev_net_policy p = {
		.network_allowed = true,
		.allow_local_network = true,
		.timeout_ms = 5000,
	};
	return p;
}

static void run(const char *tool, const char *args_json, const struct lev_net_policy *p,
		struct lev_net_result *out)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *args = json_loads(args_json, 0, NULL);

	assert_non_null(args);
	assert_int_equal(lev_tool_net_run(tool, args, p, out, &err), 0);
	assert_non_null(out->text);
	json_decref(args);
}

static char *url(const char *path)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "{\"url\":\"%s%s\"}", m.root_url, path);
	return buf;
}

static void test_network_off(void **state)
{
	struct lev_net_policy p = local_ok();
	struct lev_net_result r;
	size_t before = request_count();

	(void)state;
	p.network_allowed = false;
	run("web_fetch", url("/plain"), &p, &r);
	assert_true(r.is_error);
	assert_int_equal(r.outcome, LEV_NET_NETWORK_OFF);
	assert_non_null(strstr(r.text, "network = false"));
	lev_net_result_release(&r);
	run("http_post", url("/post"), &p, &r);
	assert_int_equal(r.outcome, LEV_NET_NETWORK_OFF);
	lev_net_result_release(&r);
	p.search_endpoint = "http://127.0.0.1:1/search";
	run("web_search", "{\"query\":\"x\"}", &p, &r);
	assert_int_equal(r.outcome, LEV_NET_NETWORK_OFF);
	lev_net_result_release(&r);
	assert_int_equal(request_count(), before);
}

static void test_loopback_refused_without_allow_local(void **state)
{
	static const char *const forms[] = { "127.0.0.1", "127.1", "2130706433", "0x7f.1",
					     "0177.0.0.1", "[::ffff:127.0.0.1]", "localhost" };
	struct lev_net_policy p = local_ok();
	size_t before = request_count();

	(void)state;
	p.allow_local_network = false;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct lev_net_result r;
		char args[256];
		snprintf(args, sizeof(args), "{\"url\":\"http://%s:%u/plain\"}", forms[i], m.port);
		run("web_fetch", args, &p, &r);
		if (r.outcome != LEV_NET_ADDRESS_REFUSED)
			fail_msg("%s: outcome %s: %s", forms[i], lev_net_outcome_name(r.outcome),
				 r.text);
		assert_true(r.is_error);
		assert_non_null(strstr(r.text, "loopback"));
		assert_non_null(strstr(r.text, "allow_local_network"));
		assert_non_null(r.target_host);
		lev_net_result_release(&r);
	}
	/* nothing reached the server */
	assert_int_equal(request_count(), before);
}

static void test_fetch_html(void **state)
{
	struct lev_net_policy p = local_ok();
	struct lev_net_result r;

	(void)state;
	run("web_fetch", url("/page"), &p, &r);
	assert_false(r.is_error);
	assert_int_equal(r.outcome, LEV_NET_OK);
	assert_int_equal(r.http_status, 200);
	assert_string_equal(r.target_host, "127.0.0.1");
	assert_non_null(strstr(r.text, "Status: 200"));
	assert_non_null(strstr(r.text, "Welcome"));
	assert_non_null(strstr(r.text, "Fish & chips <3 \xc2\xa9 \xe2\x98\xba"));
	assert_non_null(strstr(r.text, "- one\n- two"));
	assert_null(strstr(r.text, "secret"));
	assert_null(strstr(r.text, "color:red"));
	assert_null(strstr(r.text, "hidden"));
	assert_null(strstr(r.text, "<p>"));
	lev_net_result_release(&r);

	run("web_fetch", url("/latin1"), &p, &r);
	assert_non_null(strstr(r.text, "caf\xc3\xa9"));
	lev_net_result_release(&r);

	run("web_fetch", url("/missing"), &p, &r);
	assert_true(r.is_error);
	assert_int_equal(r.outcome, LEV_NET_OK);
	assert_int_equal(r.http_status, 404);
	assert_non_null(strstr(r.text, "nope"));
	lev_net_result_release(&r);

	run("web_fetch", url("/image"), &p, &r);
	assert_true(r.is_error);
	assert_non_null(strstr(r.text, "not text"));
	lev_net_result_release(&r);
}

static void test_fetch_limits(void **state)
{
	struct lev_net_policy p = local_ok();
	struct lev_net_result r;

	(void)state;
	p.max_download = 1 << 20;
	run("web_fetch", url("/big"), &p, &r);
	assert_true(r.is_error);
	assert_int_equal(r.outcome, LEV_NET_FAILED);
	assert_non_null(strstr(r.text, "larger than"));
	lev_net_result_release(&r);

	p.timeout_ms = 300;
	run("web_fetch", url("/slow"), &p, &r);
	assert_int_equal(r.outcome, LEV_NET_FAILED);
	assert_non_null(strstr(r.text, "timed out"));
	lev_net_result_release(&r);

	p = local_ok();
	p.max_result = 20;
	run("web_fetch", url("/page"), &p, &r);
	assert_non_null(strstr(r.text, "[truncated: 20 of"));
	lev_net_result_release(&r);
}

static void test_redirects(void **state)
{
	struct lev_net_policy p = local_ok();
	struct lev_net_result r;
	size_t before;

	(void)state;
	run("web_fetch", url("/r1"), &p, &r);
	assert_false(r.is_error);
	assert_int_equal(r.hops, 3);
	assert_non_null(strstr(r.final_url, "/plain"));
	assert_non_null(strstr(r.text, "just text"));
	lev_net_result_release(&r);

	/* metadata stays refused even with allow_local_network = true */
	static const char *const meta[] = { "/to-metadata", "/to-metadata6", "/to-mapped" };
	for (size_t i = 0; i < 3; i++) {
		run("web_fetch", url(meta[i]), &p, &r);
		if (r.outcome != LEV_NET_ADDRESS_REFUSED)
			fail_msg("%s: %s", meta[i], r.text);
		assert_non_null(strstr(r.text, "cloud metadata"));
		assert_non_null(strstr(r.text, "redirect"));
		assert_int_equal(r.hops, 2);
		lev_net_result_release(&r);
	}
	run("web_fetch", url("/to-metadata"), &p, &r);
	assert_string_equal(r.target_host, "169.254.169.254");
	lev_net_result_release(&r);

	run("web_fetch", url("/to-file"), &p, &r);
	assert_int_equal(r.outcome, LEV_NET_URL_REFUSED);
	assert_non_null(strstr(r.text, "scheme"));
	lev_net_result_release(&r);
	before = request_count();
	run("web_fetch", url("/to-gopher"), &p, &r);
	assert_int_equal(r.outcome, LEV_NET_URL_REFUSED);
	lev_net_result_release(&r);
	assert_int_equal(request_count(), before + 1);	/* only the first hop */

	before = request_count();
	run("web_fetch", url("/loop"), &p, &r);
	assert_int_equal(r.outcome, LEV_NET_URL_REFUSED);
	assert_non_null(strstr(r.text, "more than 5 redirects"));
	lev_net_result_release(&r);
	assert_int_equal(request_count(), before + 6);
	p.max_redirects = 2;
	run("web_fetch", url("/r1"), &p, &r);
	assert_int_equal(r.outcome, LEV_NET_OK);
	lev_net_result_release(&r);
	p.max_redirects = 1;
	run("web_fetch", url("/r1"), &p, &r);
	assert_int_equal(r.outcome, LEV_NET_URL_REFUSED);
	lev_net_result_release(&r);
}

/* A name that looks public but resolves to loopback: pinned, no DNS. */
static void test_pinned_name(void **state)
{
	struct lev_net_policy p = local_ok();
	struct lev_net_result r;
	char pin[128], args[256];
	const char *resolve[2] = { pin, NULL };
	json_t *rec;
	size_t before = request_count();

	(void)state;
	snprintf(pin, sizeof(pin), "public.example.com:%u:127.0.0.1", m.port);
	snprintf(args, sizeof(args), "{\"url\":\"http://public.example.com:%u/plain\"}", m.port);
	p.resolve = resolve;
	p.allow_local_network = false;
	run("web_fetch", args, &p, &r);
	assert_int_equal(r.outcome, LEV_NET_ADDRESS_REFUSED);
	assert_non_null(strstr(r.text, "'public.example.com' is 127.0.0.1"));
	assert_string_equal(r.target_host, "public.example.com");
	lev_net_result_release(&r);
	assert_int_equal(request_count(), before);

	p.allow_local_network = true;
	run("web_fetch", args, &p, &r);
	assert_int_equal(r.outcome, LEV_NET_OK);
	assert_string_equal(r.target_host, "public.example.com");
	lev_net_result_release(&r);
	rec = mock_requests(&m);
	{
		char host[64];
		snprintf(host, sizeof(host), "public.example.com:%u", m.port);
		assert_string_equal(json_string_value(json_object_get(
					    json_object_get(json_array_get(rec, json_array_size(rec) - 1),
							    "headers"),
					    "host")),
				    host);
	}
	json_decref(rec);
}

static void test_http_post(void **state)
{
	struct lev_net_policy p = local_ok();
	struct lev_net_result r;
	char args[512];
	json_t *rec, *last;

	(void)state;
	snprintf(args, sizeof(args),
		 "{\"url\":\"%s/post\",\"body\":\"{\\\"a\\\":1}\",\"content_type\":\"application/json\"}",
		 m.root_url);
	run("http_post", args, &p, &r);
	assert_false(r.is_error);
	assert_int_equal(r.http_status, 201);
	assert_non_null(strstr(r.text, "Status: 201"));
	assert_non_null(strstr(r.text, "{\"ok\":true}"));
	lev_net_result_release(&r);
	rec = mock_requests(&m);
	last = json_array_get(rec, json_array_size(rec) - 1);
	assert_string_equal(json_string_value(json_object_get(last, "method")), "POST");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(last, "body"), "a")), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(last, "headers"),
							     "content-type")),
			    "application/json");
	json_decref(rec);

	/* never follows a redirect with the body */
	snprintf(args, sizeof(args), "{\"url\":\"%s/post-redirect\",\"body\":\"x\"}", m.root_url);
	{
		size_t before = request_count();
		run("http_post", args, &p, &r);
		assert_int_equal(r.http_status, 307);
		assert_non_null(strstr(r.text, "not followed"));
		assert_int_equal(request_count(), before + 1);
		lev_net_result_release(&r);
	}
	/* header injection through the content type */
	snprintf(args, sizeof(args),
		 "{\"url\":\"%s/post\",\"content_type\":\"text/plain\\r\\nX-Evil: 1\"}", m.root_url);
	run("http_post", args, &p, &r);
	assert_int_equal(r.outcome, LEV_NET_BAD_ARGS);
	lev_net_result_release(&r);
	p.allow_local_network = false;
	run("http_post", url("/post"), &p, &r);
	assert_int_equal(r.outcome, LEV_NET_ADDRESS_REFUSED);
	lev_net_result_release(&r);
}

static void test_web_search(void **state)
{
	struct lev_net_policy p = local_ok();
	struct lev_net_result r;
	char endpoint[128];
	json_t *rec, *q;

	(void)state;
	run("web_search", "{\"query\":\"x\"}", &p, &r);
	assert_int_equal(r.outcome, LEV_NET_NOT_CONFIGURED);
	assert_non_null(strstr(r.text, "[tools.web_search] endpoint"));
	lev_net_result_release(&r);

	snprintf(endpoint, sizeof(endpoint), "%s/search", m.root_url);
	p.search_endpoint = endpoint;
	/* the user's own endpoint may be local even without allow_local_network */
	p.allow_local_network = false;
	run("web_search", "{\"query\":\"fish & chips?\",\"count\":2,\"freshness\":\"pw\"}", &p,
	    &r);
	assert_false(r.is_error);
	assert_string_equal(r.text, "Results for \"fish & chips?\":\n"
				    "1. First\n   https://a.example/1\n   snippet one\n"
				    "2. Second\n   https://b.example/2\n");
	assert_string_equal(r.target_host, "127.0.0.1");
	lev_net_result_release(&r);
	rec = mock_requests(&m);
	q = json_object_get(json_array_get(rec, json_array_size(rec) - 1), "query");
	assert_string_equal(json_string_value(json_object_get(q, "q")), "fish & chips?");
	assert_string_equal(json_string_value(json_object_get(q, "format")), "json");
	/* freshness pw: the past week, as SearXNG's time_range */
	assert_string_equal(json_string_value(json_object_get(q, "time_range")), "week");
	json_decref(rec);
	/* the twin: no freshness, no time_range */
	run("web_search", "{\"query\":\"x\",\"count\":1}", &p, &r);
	assert_false(r.is_error);
	lev_net_result_release(&r);
	rec = mock_requests(&m);
	q = json_object_get(json_array_get(rec, json_array_size(rec) - 1), "query");
	assert_null(json_object_get(q, "time_range"));
	json_decref(rec);
	/* a date range: refused, nothing sent */
	run("web_search", "{\"query\":\"x\",\"freshness\":\"2024-01-01to2024-02-01\"}", &p, &r);
	assert_int_equal(r.outcome, LEV_NET_BAD_ARGS);
	lev_net_result_release(&r);

	run("web_search", "{\"query\":\"x\"}", &p, &r);
	assert_non_null(strstr(r.text, "3. (untitled)\n   https://c.example/3"));
	lev_net_result_release(&r);

	/* ...but a redirect from it to a local address is checked */
	snprintf(endpoint, sizeof(endpoint), "%s/search-redirect", m.root_url);
	run("web_search", "{\"query\":\"x\"}", &p, &r);
	assert_int_equal(r.outcome, LEV_NET_ADDRESS_REFUSED);
	lev_net_result_release(&r);

	p.allow_local_network = true;
	snprintf(endpoint, sizeof(endpoint), "%s/search-empty", m.root_url);
	run("web_search", "{\"query\":\"x\"}", &p, &r);
	assert_string_equal(r.text, "No results for \"x\".");
	lev_net_result_release(&r);
	snprintf(endpoint, sizeof(endpoint), "%s/search-html", m.root_url);
	run("web_search", "{\"query\":\"x\"}", &p, &r);
	assert_int_equal(r.outcome, LEV_NET_FAILED);
	lev_net_result_release(&r);
	run("web_search", "{\"query\":\"\"}", &p, &r);
	assert_int_equal(r.outcome, LEV_NET_BAD_ARGS);
	lev_net_result_release(&r);
	run("web_search", "{\"query\":\"x\",\"count\":50}", &p, &r);
	assert_int_equal(r.outcome, LEV_NET_BAD_ARGS);
	lev_net_result_release(&r);
}

static void test_bad_args(void **state)
{
	static const char *const cases[][2] = {
		{ "web_fetch", "{}" },
		{ "web_fetch", "{\"url\":5}" },
		{ "web_fetch", "[]" },
		{ "http_post", "{\"url\":\"http://x/\",\"body\":5}" },
		{ "web_search", "{\"query\":5}" },
	};
	struct lev_net_policy p = local_ok();
	struct lev_err err = LEV_ERR_INIT;
	struct lev_net_result r;
	json_t *args;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run(cases[i][0], cases[i][1], &p, &r);
		assert_int_equal(r.outcome, LEV_NET_BAD_ARGS);
		assert_true(r.is_error);
		lev_net_result_release(&r);
	}
	run("web_fetch", "{\"url\":\"ftp://127.0.0.1/\"}", &p, &r);
	assert_int_equal(r.outcome, LEV_NET_URL_REFUSED);
	lev_net_result_release(&r);
	run("web_fetch", "{\"url\":\"http://user:pw@127.0.0.1/\"}", &p, &r);
	assert_int_equal(r.outcome, LEV_NET_URL_REFUSED);
	lev_net_result_release(&r);
	args = json_object();
	assert_int_equal(lev_tool_net_run("shell", args, &p, &r, &err), -ENOENT);
	json_decref(args);
}

static void test_target_and_schema(void **state)
{
	struct lev_net_policy p = local_ok();
	struct lev_err err = LEV_ERR_INIT;
	char *host = NULL;
	json_t *args = json_pack("{s:s}", "url", "https://Docs.Example.org:8443/a?b");
	json_t *schema;

	(void)state;
	assert_int_equal(lev_tool_net_target("web_fetch", args, &p, &host, &err), 0);
	assert_string_equal(host, "docs.example.org");
	free(host);
	p.search_endpoint = "http://search.local:8888/search";
	assert_int_equal(lev_tool_net_target("web_search", args, &p, &host, &err), 0);
	assert_string_equal(host, "search.local");
	free(host);
	assert_int_equal(lev_tool_net_target("read_file", args, &p, &host, &err), -ENOENT);
	json_decref(args);
	args = json_object();
	assert_int_equal(lev_tool_net_target("http_post", args, &p, &host, &err), -EINVAL);
	json_decref(args);

	assert_true(lev_tool_is_net("web_fetch"));
	assert_false(lev_tool_is_net("shell"));
	assert_false(lev_tool_is_net(NULL));
	assert_false(lev_tool_is_net("fetch"));	/* a foreign name: classified, not run */
	for (int i = 0; i < 3; i++) {
		enum lev_tool_op op = (enum lev_tool_op[]){ LEV_OP_WEB_FETCH, LEV_OP_HTTP_POST,
							    LEV_OP_WEB_SEARCH }[i];
		const struct lev_tool_desc *d = lev_tooltable_op(op);

		assert_true(lev_tool_is_net(d->name));
		schema = lev_tool_net_parameters(op);
		assert_non_null(schema);
		assert_string_equal(json_string_value(json_object_get(schema, "type")), "object");
		assert_true(json_array_size(json_object_get(schema, "required")) == 1);
		json_decref(schema);
		assert_non_null(d->description);
	}
	assert_null(lev_tool_net_parameters(LEV_OP_SHELL));
}

struct h2t_case {
	const char *html;
	const char *text;
};

static void test_html_to_text(void **state)
{
	static const struct h2t_case cases[] = {
		{ "plain", "plain" },
		{ "<p>a</p><p>b</p>", "a\n\nb" },
		{ "a<br>b<br/>c", "a\nb\nc" },
		{ "  lots   of \n\n spaces  ", "lots of spaces" },
		{ "x<pre>  keep\n    this</pre>after", "x\n  keep\n    this\nafter" },
		{ "x <script>alert('<p>')</script> y", "x y" },
		{ "x <SCRIPT type=a>bad</SCRIPT > y", "x y" },
		{ "<style>a{}</style>z", "z" },
		{ "<!-- c <p> -->v", "v" },
		{ "a &lt; b &amp;&amp; c &gt; d", "a < b && c > d" },
		{ "&#65;&#x42;&#x1F600;", "AB\xf0\x9f\x98\x80" },
		{ "&#0;&#xD800;&#99999999;", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "&unknown; & &", "&unknown; & &" },
		{ "a < b", "a < b" },
		{ "<a href=\"x>y\">link</a>", "link" },
		{ "<ul><li>1</li><li>2</li></ul>", "- 1\n- 2" },
		{ "<table><tr><td>a</td><td>b</td></tr></table>", "a b" },
		{ "bad \xff utf8", "bad \xef\xbf\xbd utf8" },
		{ "<script>never closed", "" },
		{ "soft&shy;hyphen", "softhyphen" },
		{ "<p", "" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = lev_html_to_text(cases[i].html, strlen(cases[i].html), 1000);
		if (strcmp(t, cases[i].text) != 0)
			fail_msg("'%s' -> '%s', want '%s'", cases[i].html, t, cases[i].text);
		free(t);
	}
	{
		/* the cut never splits a character */
		char *t = lev_html_to_text("\xc3\xa9\xc3\xa9", 4, 3);
		assert_string_equal(t, "\xc3\xa9");
		free(t);
	}
}

struct hook_log {
	unsigned calls;
	char last[512];
	const char *refuse_containing;	/* refuse a hop whose URL holds this */
};

static int hook(void *data, const char *tool, const char *u, struct lev_err *err)
{
	struct hook_log *h = data;

	h->calls++;
	assert_string_equal(tool, "web_fetch");
	snprintf(h->last, sizeof(h->last), "%s", u);
	if (h->refuse_containing && strstr(u, h->refuse_containing))
		return lev_err_set(err, LEV_EDENIED, "test says no");
	return 0;
}

static void test_redirect_hook(void **state)
{
	struct lev_net_policy p = local_ok();
	struct hook_log h = { 0 };
	struct lev_net_result r;
	size_t before;

	(void)state;
	p.redirect_hook = hook;
	p.redirect_hook_data = &h;
	/* /r1 -> /r2 -> /plain: asked for each hop, not for the first request */
	run("web_fetch", url("/r1"), &p, &r);
	assert_false(r.is_error);
	assert_int_equal(h.calls, 2);
	assert_non_null(strstr(h.last, "/plain"));
	lev_net_result_release(&r);

	/* refusing the second hop: /plain is never requested */
	h = (struct hook_log){ .refuse_containing = "/plain" };
	before = request_count();
	run("web_fetch", url("/r1"), &p, &r);
	assert_true(r.is_error);
	assert_int_equal(r.outcome, LEV_NET_URL_REFUSED);
	assert_non_null(strstr(r.text, "refused to follow a redirect to"));
	assert_non_null(strstr(r.text, "test says no"));
	assert_int_equal(request_count() - before, 2);	/* /r1 and /r2 only */
	assert_int_equal(h.calls, 2);
	lev_net_result_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_network_off),
		cmocka_unit_test(test_loopback_refused_without_allow_local),
		cmocka_unit_test(test_fetch_html),
		cmocka_unit_test(test_fetch_limits),
		cmocka_unit_test(test_redirects),
		cmocka_unit_test(test_redirect_hook),
		cmocka_unit_test(test_pinned_name),
		cmocka_unit_test(test_http_post),
		cmocka_unit_test(test_web_search),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_target_and_schema),
		cmocka_unit_test(test_html_to_text),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
