/*
 * test-taintgate.c - target canonicalisation and pattern tricks, the
 * policy.toml format, the gate's decision order, "allow for this run",
 * reloading, audit records, and `lev policy add`'s textual append.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/policy/policy.h"
#include "liblev/base/strv.h"
#include "liblev/policy/taint.h"
#include "liblev/policy/taintgate.h"
#include "liblev/policy/target.h"
#include "liblev/base/util.h"

static char *tmpdir;

/* Rules are judged by counted work only, whatever the machine's load. */
static const struct lev_rules_limits test_limits = { 0, 60ULL * 1000 * 1000 * 1000, 0 };

static int setup_dir(void **state)
{
	char tmpl[] = "/tmp/lev-taintgate.XXXXXX";

	(void)state;
	if (!mkdtemp(tmpl))
		return -1;
	tmpdir = strdup(tmpl);
	return 0;
}

static int teardown_dir(void **state)
{
	(void)state;
	lev_rm_rf(tmpdir, NULL);
	free(tmpdir);
	tmpdir = NULL;
	return 0;
}

static char *path_in(const char *name)
{
	return lev_path_join(tmpdir, name);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	assert_true(fd >= 0);
	assert_int_equal(lev_write_all(fd, text, strlen(text)), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

__attribute__((noinline)) static char *read_all(const char *path)
{
	char *s = NULL;

	assert_int_equal(lev_read_file(path, 1 << 20, &s, NULL, NULL), 0);
	return s;
}

/* ---- hosts, URLs and patterns ---- */

struct host_case {
	const char *in;
	const char *want;	/* NULL: refused */
};

static const struct host_case host_cases[] = {
	{ "EXAMPLE.com", "example.com" },
	{ "example.com.", "example.com" },
	{ "example.com..", NULL },
	{ "a..b", NULL },
	{ "ex%61mple.com", "example.com" },
	{ "evil.com%2f.example.com", NULL },
	{ "evil.com%23.example.com", NULL },
	{ "a%252eb", NULL },		/* one decoding pass only */
	{ "a%zz", NULL },
	{ "evil.com\xe3\x80\x82" "example.com", "evil.com.example.com" },	/* U+3002 */
	{ "api.example.com\xe3\x80\x82" "evil.com", "api.example.com.evil.com" },
	{ "\xef\xbd\x81\xef\xbd\x90\xef\xbd\x89.example.com", "api.example.com" },	/* fullwidth */
	{ "b\xc3\xbc" "cher.example", "xn--bcher-kva.example" },
	{ "\xff\xfe.com", NULL },
	{ "[::1]", "[::1]" },
	{ "[0:0:0:0:0:0:0:1]", "[::1]" },
	{ "[::ffff:1.2.3.4]", "[::ffff:1.2.3.4]" },
	{ "[fe80::1%25eth0]", NULL },
	{ "[::1", NULL },
	{ "127.1", "127.0.0.1" },
	{ "0x7f.1", "127.0.0.1" },
	{ "2130706433", "127.0.0.1" },
	{ "0177.0.0.1", "127.0.0.1" },
	{ "1.2.3.256", NULL },
	{ "under_score.example.com", "under_score.example.com" },
	{ "ex ample.com", NULL },
	{ "a@b.com", NULL },
	{ "", NULL },
};

static void test_host_canonicalisation(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(host_cases) / sizeof(host_cases[0]); i++) {
		struct lev_err err = LEV_ERR_INIT;
		char *out = NULL;
		int r = lev_target_host_canon(host_cases[i].in, strlen(host_cases[i].in), &out, &err);

		if (host_cases[i].want && (r != 0 || strcmp(out, host_cases[i].want) != 0))
			fail_msg("host '%s': got %d '%s' (%s), wanted '%s'", host_cases[i].in, r,
				 out ? out : "", err.msg, host_cases[i].want);
		if (!host_cases[i].want && r == 0)
			fail_msg("host '%s' should be refused, got '%s'", host_cases[i].in, out);
		free(out);
	}
}

static void test_url_parse_and_canonical_form(void **state)
{
	struct lev_target_url u = { 0 };
	struct lev_err err = LEV_ERR_INIT;

	(void)state;
	assert_int_equal(lev_target_url_parse("HTTPS://u:p@API.Example.COM.:8443/v1?q=1#frag", &u, &err),
			 0);
	assert_string_equal(u.scheme, "https");
	assert_string_equal(u.userinfo, "u:p");
	assert_string_equal(u.host, "api.example.com");
	assert_int_equal(u.port, 8443);
	assert_string_equal(u.path, "/v1?q=1");
	assert_string_equal(u.canonical, "https://u:p@api.example.com:8443/v1?q=1");
	lev_target_url_release(&u);

	assert_int_equal(lev_target_url_parse("example.com", &u, &err), 0);
	assert_string_equal(u.canonical, "http://example.com/");
	lev_target_url_release(&u);

	assert_int_equal(lev_target_url_parse("https://[::1]:8080", &u, &err), 0);
	assert_string_equal(u.host, "[::1]");
	assert_int_equal(u.port, 8080);
	lev_target_url_release(&u);

	assert_int_equal(lev_target_url_parse("https://a.com:99999/", &u, &err), LEV_EPARSE);
	assert_int_equal(lev_target_url_parse("https://a.com:0/", &u, &err), LEV_EPARSE);
	assert_int_equal(lev_target_url_parse("https://a.com:8x/", &u, &err), LEV_EPARSE);
	assert_int_equal(lev_target_url_parse("http://evil.com\\@good.com/", &u, &err), LEV_EPARSE);
	assert_int_equal(lev_target_url_parse("https://a@b@c.com/", &u, &err), LEV_EPARSE);
	assert_int_equal(lev_target_url_parse("file:///etc/passwd", &u, &err), LEV_EPARSE);
	assert_int_equal(lev_target_url_parse("javascript://x.com/", &u, &err), LEV_EPARSE);
	assert_int_equal(lev_target_url_parse("http:/x.com", &u, &err), LEV_EPARSE);
	assert_int_equal(lev_target_url_parse("https://", &u, &err), LEV_EPARSE);
	assert_int_equal(lev_target_url_parse("https://x.com/a b", &u, &err), LEV_EPARSE);
	assert_int_equal(lev_target_url_parse("", &u, &err), LEV_EPARSE);
	assert_null(u.host);
}

struct pat_case {
	const char *in;
	const char *want;	/* NULL: refused */
};

static const struct pat_case pat_cases[] = {
	{ "*", "*" },
	{ "*.EXAMPLE.com.", "*.example.com" },
	{ "*@Example.COM", "*@example.com" },
	{ "megan@*", "megan@*" },
	{ "+1555*", "+1555*" },
	{ "API.Example.com", "api.example.com" },
	{ "Bob@Example.com", "bob@example.com" },
	{ "#Team-Standup", "#team-standup" },
	{ "*example.com", NULL },	/* would match evilexample.com */
	{ "a*b", NULL },
	{ "**", NULL },
	{ "*.*.com", NULL },
	{ "*.1.2.3.4", NULL },
	{ "*.", NULL },
	{ "", NULL },
	{ "ex ample*", NULL },
};

static void test_pattern_canonicalisation(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(pat_cases) / sizeof(pat_cases[0]); i++) {
		struct lev_err err = LEV_ERR_INIT;
		char *out = NULL;
		int r = lev_target_pattern_canon(pat_cases[i].in, &out, &err);

		if (pat_cases[i].want && (r != 0 || strcmp(out, pat_cases[i].want) != 0))
			fail_msg("pattern '%s': got %d '%s' (%s)", pat_cases[i].in, r, out ? out : "",
				 err.msg);
		if (!pat_cases[i].want && r == 0)
			fail_msg("pattern '%s' should be refused, got '%s'", pat_cases[i].in, out);
		if (!pat_cases[i].want)
			assert_true(err.msg[0] != '\0');
		free(out);
	}
}

struct match_case {
	const char *pat, *target;
	bool want;
};

static const struct match_case match_cases[] = {
	{ "*.example.com", "a.example.com", true },
	{ "*.example.com", "a.b.example.com", true },
	{ "*.example.com", "example.com", false },	/* the apex is not a sub-domain */
	{ "*.example.com", "evilexample.com", false },
	{ "*.example.com", "example.com.evil.com", false },
	{ "*.example.com", "bob@a.example.com", false },
	{ "*.example.com", "#chan.example.com", false },
	{ "*@example.com", "bob@example.com", true },
	{ "*@example.com", "bob@a.example.com", false },
	{ "*@example.com", "bob@example.com.evil.com", false },
	{ "*@example.com", "example.com", false },
	{ "megan@*", "megan@anything.org", true },
	{ "megan@*", "megan", false },
	{ "+1555*", "+15551234", true },
	{ "+1555*", "+1666", false },
	{ "api.example.com", "api.example.com", true },
	{ "api.example.com", "api.example.com.evil.com", false },
	{ "*", "anything", true },
	{ "*", "", false },
};

static void test_pattern_matching(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++)
		if (lev_target_pattern_match(match_cases[i].pat, match_cases[i].target) !=
		    match_cases[i].want)
			fail_msg("'%s' vs '%s': wanted %d", match_cases[i].pat, match_cases[i].target,
				 match_cases[i].want);
	assert_false(lev_target_pattern_match(NULL, "x"));
	assert_false(lev_target_pattern_match("*", NULL));
}

/* ---- policy.toml ---- */

static struct lev_policy *parse_ok(const char *text)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_policy *p = NULL;

	if (lev_policy_parse(text, strlen(text), "policy.toml", &p, &err) != 0)
		fail_msg("parse failed: %s", err.msg);
	return p;
}

static void parse_fails(const char *text, const char *want_in_msg)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_policy *p = NULL;

	assert_int_equal(lev_policy_parse(text, strlen(text), "policy.toml", &p, &err), LEV_EPARSE);
	assert_null(p);
	if (!strstr(err.msg, want_in_msg))
		fail_msg("message '%s' does not hold '%s'", err.msg, want_in_msg);
}

static void test_policy_parses_rules_and_overrides(void **state)
{
	struct lev_policy *p;
	struct lev_tool_class c;

	(void)state;
	p = parse_ok("# comment\n"
		     "[[allowlist]]\n"
		     "tool = \"send_email\"\n"
		     "to = [\"megan@*\", \"+1555\"]\n"
		     "max_sensitivity = \"private\"\n"
		     "\n"
		     "[[allowlist]]\n"
		     "tool = \"post_to_slack\"\n"
		     "channel = \"#Team\"\n"
		     "max_sensitivity = \"Internal\"\n"
		     "\n"
		     "[mcp_overrides.\"my-server\".tools]\n"
		     "read_customer_data = { sensitivity = \"private\", direction = \"inbound\" }\n"
		     "send = { clearance = \"internal\", target = \"recipient\" }\n"
		     "\n"
		     "[mcp_overrides.\"github.list_issues\"]\n"
		     "direction = \"inbound\"\n");
	assert_int_equal(p->n_rules, 2);
	assert_string_equal(p->rules[0].tool, "send_email");
	assert_int_equal(lev_strv_len(p->rules[0].to), 2);
	assert_int_equal(p->rules[0].max_sensitivity, LEV_PRIVATE);
	assert_int_equal(p->rules[0].line, 2);
	assert_string_equal(p->rules[1].channel[0], "#team");
	assert_int_equal(p->rules[1].max_sensitivity, LEV_INTERNAL);
	assert_int_equal(p->rules[1].line, 7);
	assert_int_equal(p->n_overrides, 3);
	assert_null(p->warnings);

	/* the dispatched MCP spelling finds the override too */
	lev_policy_classify(p, "my-server__read_customer_data", &c);
	assert_int_equal(c.sensitivity, LEV_PRIVATE);
	assert_int_equal(c.direction, LEV_DIR_INBOUND);
	assert_int_equal(c.clearance, LEV_PUBLIC);	/* not set: kept */
	lev_policy_classify(p, "my-server.send", &c);
	assert_int_equal(c.direction, LEV_DIR_OUTBOUND);
	assert_int_equal(c.clearance, LEV_INTERNAL);
	assert_int_equal(c.target_from, LEV_TARGET_FROM_ARG);
	assert_string_equal(c.target_arg, "recipient");
	lev_policy_classify(p, "github__list_issues", &c);
	assert_int_equal(c.direction, LEV_DIR_INBOUND);
	lev_policy_classify(p, "github__other", &c);
	assert_int_equal(c.direction, LEV_DIR_OUTBOUND);
	lev_policy_free(p);
}

static void test_policy_missing_or_bad_max_sensitivity_is_an_error(void **state)
{
	(void)state;
	/* the original read these as Public: fail open */
	parse_fails("\n\n[[allowlist]]\ntool = \"x\"\n", "policy.toml:3:");
	parse_fails("[[allowlist]]\ntool = \"x\"\n", "max_sensitivity");
	parse_fails("[[allowlist]]\ntool = \"x\"\nmax_sensitivity = \"secret\"\n", "policy.toml:3:");
	parse_fails("[[allowlist]]\ntool = \"x\"\nmax_sensitivity = \"secret\"\n", "secret");
	parse_fails("[[allowlist]]\ntool = \"x\"\nmax_sensitivity = 2\n", "policy.toml:3:");
	parse_fails("[[allowlist]]\ntool = \"x\"\nmax_sensitivity = \"\"\n", "max_sensitivity");
}

static void test_policy_other_errors_name_the_place(void **state)
{
	(void)state;
	parse_fails("[[allowlist]]\nmax_sensitivity = \"public\"\n", "has no 'tool'");
	parse_fails("[[allowlist]]\ntool = \"\"\nmax_sensitivity = \"public\"\n", "policy.toml:2:");
	parse_fails("[[allowlist]]\ntool = \"x\"\nto = [\"*example.com\"]\nmax_sensitivity = \"public\"\n",
		    "policy.toml:3:");
	parse_fails("[[allowlist]]\ntool = \"x\"\nto = [1]\nmax_sensitivity = \"public\"\n",
		    "policy.toml:3:");
	parse_fails("[allowlist]\ntool = \"x\"\n", "allowlist");
	parse_fails("allowlist = [1]\n", "policy.toml:1:");
	parse_fails("[mcp_overrides.s.tools]\nt = { direction = \"sideways\" }\n", "policy.toml:2:");
	parse_fails("[mcp_overrides.s.tools]\nt = { sensitivity = \"top\" }\n", "sensitivity");
	parse_fails("[mcp_overrides.s.tools]\nt = { target = \"a b\" }\n", "target");
	parse_fails("[[allowlist]\n", "policy.toml:1:");
}

static void test_policy_unknown_keys_are_warnings(void **state)
{
	struct lev_policy *p;

	(void)state;
	p = parse_ok("colour = \"blue\"\n"
		     "[[allowlist]]\ntool = \"x\"\nmax_sensitivity = \"public\"\nnote = \"hi\"\n"
		     "[mcp_overrides.s]\nextra = 1\n"
		     "[mcp_overrides.s.tools]\nt = { direction = \"inbound\", why = \"x\" }\n");
	assert_int_equal(p->n_rules, 1);
	assert_int_equal(lev_strv_len(p->warnings), 4);
	assert_non_null(strstr(p->warnings[0], "policy.toml:1:"));
	assert_non_null(strstr(p->warnings[0], "colour"));
	assert_non_null(strstr(p->warnings[1], "note"));
	lev_policy_free(p);
}

static void test_allowlist_matching_semantics(void **state)
{
	struct lev_policy *p;
	char *one[] = { (char *)"a.example.com", NULL };
	char *two_ok[] = { (char *)"a.example.com", (char *)"b.example.com", NULL };
	char *mixed[] = { (char *)"a.example.com", (char *)"evil.com", NULL };
	char *bob[] = { (char *)"bob@corp.com", NULL };

	(void)state;
	p = parse_ok("[[allowlist]]\ntool = \"http_post\"\nto = [\"*.example.com\"]\n"
		     "max_sensitivity = \"internal\"\n"
		     "[[allowlist]]\ntool = \"bash\"\nmax_sensitivity = \"private\"\n"
		     "[[allowlist]]\ntool = \"http_post\"\nto = [\"*.example.com\"]\n"
		     "max_sensitivity = \"private\"\n"
		     "[[allowlist]]\ntool = \"mail.send\"\nto = [\"*@corp.com\"]\n"
		     "max_sensitivity = \"private\"\n");
	/* first match wins; max_sensitivity is an upper bound on the taint */
	assert_int_equal(lev_policy_match(p, "http_post", one, LEV_INTERNAL), 0);
	assert_int_equal(lev_policy_match(p, "http_post", one, LEV_PRIVATE), 2);
	assert_int_equal(lev_policy_match(p, "http_post", two_ok, LEV_INTERNAL), 0);
	/* every target must match */
	assert_int_equal(lev_policy_match(p, "http_post", mixed, LEV_INTERNAL), -1);
	/* a patterned rule never matches a call without a target */
	assert_int_equal(lev_policy_match(p, "http_post", NULL, LEV_INTERNAL), -1);
	/* a rule without patterns matches any target or none; bash is shell */
	assert_int_equal(lev_policy_match(p, "shell", NULL, LEV_PRIVATE), 1);
	assert_int_equal(lev_policy_match(p, "shell", mixed, LEV_PRIVATE), 1);
	assert_int_equal(lev_policy_match(p, "mail__send", bob, LEV_PRIVATE), 3);
	assert_int_equal(lev_policy_match(p, "mail_send", bob, LEV_PRIVATE), -1);
	assert_int_equal(lev_policy_match(p, "web_fetch", one, LEV_PUBLIC), -1);
	assert_true(lev_allow_rule_matches(&p->rules[0], "http_post", one, LEV_PUBLIC));
	assert_false(lev_allow_rule_matches(&p->rules[0], "http_get", one, LEV_PUBLIC));
	lev_policy_free(p);
}

/* The index must give the same first match as trying every rule in order. */
static void test_index_agrees_with_linear_matching(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;
	struct lev_policy *p;
	const char *pats[] = { "*.example.com", "api.example.com", "*@example.com", "megan@*",
			       "*", "#team", "*.b.example.com", "+1555*", "b.example.com" };
	const char *tools[] = { "http_post", "send_email", "shell", "mcp.tool" };
	const char *targets[] = { "api.example.com", "a.b.example.com", "b.example.com",
				  "example.com", "bob@example.com", "megan@x.org", "#team",
				  "+15550000", "evil.com", "com", "x.api.example.com" };
	const char *calls[] = { "http_post", "send_email", "bash", "mcp__tool", "other" };
	size_t i, j, k, n = 0;
	int lvl;

	(void)state;
	for (i = 0; i < 60; i++) {
		lev_buf_addf(&b, "[[allowlist]]\ntool = \"%s\"\n", tools[i % 4]);
		if (i % 7 != 3)
			lev_buf_addf(&b, "to = [\"%s\", \"%s\"]\n", pats[i % 9], pats[(i * 5 + 2) % 9]);
		lev_buf_addf(&b, "max_sensitivity = \"%s\"\n\n", lev_level_name((enum lev_level)(i % 3)));
	}
	p = parse_ok(b.buf);
	assert_int_equal(p->n_rules, 60);
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		for (lvl = 0; lvl < 3; lvl++) {
			assert_int_equal(lev_policy_match(p, calls[i], NULL, (enum lev_level)lvl),
					 lev_policy_match_linear(p, calls[i], NULL, (enum lev_level)lvl));
			for (j = 0; j < sizeof(targets) / sizeof(targets[0]); j++) {
				for (k = 0; k < sizeof(targets) / sizeof(targets[0]); k += 3) {
					char *one[] = { (char *)targets[j], NULL };
					char *two[] = { (char *)targets[j], (char *)targets[k], NULL };
					int a = lev_policy_match(p, calls[i], one, (enum lev_level)lvl);

					assert_int_equal(a, lev_policy_match_linear(p, calls[i], one,
										    (enum lev_level)lvl));
					assert_int_equal(lev_policy_match(p, calls[i], two, (enum lev_level)lvl),
							 lev_policy_match_linear(p, calls[i], two,
										 (enum lev_level)lvl));
					n += a >= 0;
				}
			}
		}
	}
	assert_true(n > 100);	/* the comparison saw plenty of matches, not just misses */
	lev_policy_free(p);
	lev_buf_release(&b);
}

/* ---- the gate ---- */

static struct lev_gate *gate_with(const char *policy_text, const char *rule_name,
				  const char *rule_text, bool enabled, bool yolo)
{
	struct lev_gate_options o = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	struct lev_gate *g = NULL;
	char *pol = path_in("policy.toml");
	char *rules = path_in("rules");

	lev_rm_rf(pol, NULL);
	lev_rm_rf(rules, NULL);
	if (policy_text)
		write_file(pol, policy_text, 0600);
	if (rule_name) {
		char *f;

		assert_int_equal(mkdir(rules, 0700), 0);
		f = lev_path_join(rules, rule_name);
		write_file(f, rule_text, 0600);
		free(f);
	}
	o.policy_path = pol;
	o.rules_dir = rules;
	o.enabled = enabled;
	o.yolo = yolo;
	o.recheck_ns = -1;
	o.rule_limits = &test_limits;
	if (lev_gate_new(&o, &g, &err) != 0)
		fail_msg("gate: %s", err.msg);
	free(pol);
	free(rules);
	return g;
}

static void check(struct lev_gate *g, const char *tool, const char *args, enum lev_level taint,
		  struct lev_gate_decision *d)
{
	struct lev_gate_call c = { 0 };
	struct lev_err err = LEV_ERR_INIT;

	c.tool = tool;
	c.args_json = args;
	c.args_len = args ? strlen(args) : 0;
	c.taint = taint;
	if (lev_gate_check(g, &c, d, &err) != 0)
		fail_msg("check: %s", err.msg);
}

static const char *const A14_POLICY = "[[allowlist]]\n"
				      "tool = \"http_post\"\n"
				      "to = [\"*.example.com\"]\n"
				      "max_sensitivity = \"internal\"\n";

struct trick {
	const char *url;
	bool allowed;
};

/* A14 and friends: only the host the request really goes to counts. */
static const struct trick tricks[] = {
	{ "https://example.com.attacker.net/x", false },
	{ "https://attacker.net/?h=.example.com", false },
	{ "https://attacker.net#@api.example.com", false },
	{ "https://user@attacker.net/api.example.com", false },
	{ "https://xn--xample-xxx.com/", false },
	{ "https://evil.com#.example.com", false },
	{ "evil.com#.example.com", false },
	{ "https://api.example.com@evil.com/", false },
	{ "https://api.example.com:443@evil.com/", false },
	{ "http://api.example.com\\@evil.com/", false },
	{ "https://evilexample.com/", false },
	{ "https://example.com/", false },	/* the apex: list it separately */
	{ "https://EXAMPLE.com/", false },
	{ "https://api.example.com\xe3\x80\x82" "evil.com/", false },
	{ "https://evil.com%2f.example.com/", false },
	{ "https://api.example.com%00.evil.com/", false },
	{ "https://api.example.com../", false },
	{ "https://[::1]/", false },
	{ "https://api.example.com:99999/", false },
	{ "ftp://api.example.com/", false },
	{ "https://API.Example.com./v1", true },
	{ "https://api.example.com:443/v1", true },
	{ "https://WWW.EXAMPLE.COM", true },
	{ "https://api%2eexample.com/", true },
	{ "https://\xef\xbd\x81\xef\xbd\x90\xef\xbd\x89.example.com/", true },
	{ "api.example.com/v1", true },
};

static void test_gate_pattern_tricks(void **state)
{
	struct lev_gate *g = gate_with(A14_POLICY, NULL, NULL, true, false);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(tricks) / sizeof(tricks[0]); i++) {
		struct lev_gate_decision d;
		json_t *j = json_pack("{s:s,s:s}", "url", tricks[i].url, "body", "secret");
		char *args = json_dumps(j, 0);
		bool allowed;

		check(g, "http_post", args, LEV_INTERNAL, &d);
		allowed = d.result == LEV_GATE_ALLOWED;
		if (allowed != tricks[i].allowed)
			fail_msg("'%s': %s (target %s, error %s)", tricks[i].url,
				 lev_gate_result_name(d.result), d.targets ? d.targets[0] : "-",
				 d.target_error ? d.target_error : "-");
		if (allowed) {
			assert_int_equal(d.source, LEV_GATE_SRC_ALLOWLIST);
			assert_int_equal(d.rule_index, 1);
			assert_int_equal(d.rule_line, 1);
		} else {
			assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
			assert_int_equal(d.source, LEV_GATE_SRC_NONE);
		}
		lev_gate_decision_release(&d);
		free(args);
		json_decref(j);
	}
	lev_gate_free(g);
}

static void test_gate_decision_order(void **state)
{
	struct lev_gate *g = gate_with(A14_POLICY, NULL, NULL, true, false);
	struct lev_gate_decision d;
	const char *ok = "{\"url\":\"https://api.example.com/\"}";

	(void)state;
	check(g, "read_file", "{\"path\":\"x\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_ALLOWED);
	assert_int_equal(d.source, LEV_GATE_SRC_NOT_OUTBOUND);
	assert_false(d.outbound);
	lev_gate_decision_release(&d);

	check(g, "http_post", ok, LEV_PUBLIC, &d);
	assert_int_equal(d.source, LEV_GATE_SRC_WITHIN_CLEARANCE);
	assert_string_equal(d.targets[0], "api.example.com");	/* recorded even when allowed */
	lev_gate_decision_release(&d);

	check(g, "http_post", ok, LEV_INTERNAL, &d);
	assert_int_equal(d.source, LEV_GATE_SRC_ALLOWLIST);
	lev_gate_decision_release(&d);

	/* max_sensitivity internal does not cover private */
	check(g, "http_post", ok, LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	assert_int_equal(d.taint, LEV_PRIVATE);
	assert_int_equal(d.clearance, LEV_PUBLIC);
	lev_gate_decision_release(&d);

	/* an unknown tool fails closed: gated as outbound */
	check(g, "some_mcp__tool", "{}", LEV_INTERNAL, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	assert_true(d.outbound);
	lev_gate_decision_release(&d);
	lev_gate_free(g);
}

static void test_gate_disabled_and_yolo(void **state)
{
	struct lev_gate *g = gate_with(NULL, NULL, NULL, false, false);
	struct lev_gate_decision d;

	(void)state;
	check(g, "shell", "{\"command\":\"curl x\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_ALLOWED);
	assert_int_equal(d.source, LEV_GATE_SRC_TAINT_DISABLED);
	lev_gate_decision_release(&d);
	lev_gate_free(g);

	g = gate_with(NULL, NULL, NULL, true, true);
	check(g, "shell", "{\"command\":\"curl x\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_ALLOWED);
	assert_int_equal(d.source, LEV_GATE_SRC_YOLO);
	lev_gate_decision_release(&d);
	lev_gate_free(g);
}

static void test_gate_user_answers(void **state)
{
	struct lev_gate *g = gate_with(NULL, NULL, NULL, true, false);
	struct lev_gate_decision d;
	struct lev_tool_class c;

	(void)state;
	check(g, "http_post", "{\"url\":\"https://x.org\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	assert_int_equal(lev_gate_answer(g, &d, LEV_GATE_ANSWER_ONCE), 0);
	assert_int_equal(d.result, LEV_GATE_ALLOWED);
	assert_int_equal(d.source, LEV_GATE_SRC_USER_ONCE);
	/* answering twice is a caller bug */
	assert_int_equal(lev_gate_answer(g, &d, LEV_GATE_ANSWER_RUN), -EINVAL);
	lev_gate_decision_release(&d);

	/* once means once */
	check(g, "http_post", "{\"url\":\"https://x.org\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	assert_int_equal(lev_gate_answer(g, &d, LEV_GATE_ANSWER_DENY), 0);
	assert_int_equal(d.result, LEV_GATE_BLOCKED);
	assert_int_equal(d.source, LEV_GATE_SRC_USER_DENY);
	lev_gate_decision_release(&d);

	check(g, "http_post", "{\"url\":\"https://x.org\"}", LEV_PRIVATE, &d);
	assert_int_equal(lev_gate_answer(g, &d, LEV_GATE_ANSWER_NONE), 0);
	assert_int_equal(d.result, LEV_GATE_BLOCKED);
	assert_int_equal(d.source, LEV_GATE_SRC_NO_ANSWER);
	lev_gate_decision_release(&d);

	/* allow for this run: the tool's clearance becomes Private for the rest of the run */
	check(g, "http_post", "{\"url\":\"https://x.org\"}", LEV_PRIVATE, &d);
	assert_int_equal(lev_gate_answer(g, &d, LEV_GATE_ANSWER_RUN), 0);
	assert_int_equal(d.source, LEV_GATE_SRC_USER_RUN);
	lev_gate_decision_release(&d);
	lev_gate_classify(g, "http_post", &c);
	assert_int_equal(c.clearance, LEV_PRIVATE);
	check(g, "http_post", "{\"url\":\"https://other.org\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_ALLOWED);
	assert_int_equal(d.source, LEV_GATE_SRC_WITHIN_CLEARANCE);
	assert_true(d.clearance_raised);
	assert_int_equal(d.clearance, LEV_PRIVATE);
	lev_gate_decision_release(&d);
	/* only that tool */
	check(g, "web_fetch", "{\"url\":\"https://x.org\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	lev_gate_decision_release(&d);
	lev_gate_free(g);

	/* a new gate is a new run: the raise is gone */
	g = gate_with(NULL, NULL, NULL, true, false);
	check(g, "http_post", "{\"url\":\"https://x.org\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	lev_gate_decision_release(&d);
	lev_gate_free(g);
}

static void test_gate_lua_rule_after_allowlist(void **state)
{
	struct lev_gate *g = gate_with(A14_POLICY, "ops.lua",
				       "return tool == 'send_email' and target == 'ops@corp.com' "
				       "and taint == 'private' and args.subject == 'report'",
				       true, false);
	struct lev_gate_decision d;

	(void)state;
	check(g, "send_email", "{\"to\":\"OPS@corp.com\",\"subject\":\"report\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_ALLOWED);
	assert_int_equal(d.source, LEV_GATE_SRC_RULE);
	assert_string_equal(d.rule_name, "ops");
	lev_gate_decision_release(&d);
	/* every recipient must pass */
	check(g, "send_email", "{\"to\":\"ops@corp.com\",\"bcc\":\"x@evil.com\",\"subject\":\"report\"}",
	      LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	lev_gate_decision_release(&d);
	/* unreadable arguments: rules are not consulted */
	check(g, "send_email", "{\"to\":\"ops@corp.com\",\"to\":\"x@evil.com\",\"subject\":\"report\"}",
	      LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	assert_non_null(d.target_error);
	assert_true(lev_strv_len(d.diags) >= 1);
	lev_gate_decision_release(&d);
	lev_gate_free(g);
}

static void test_gate_overrides_and_read_grants(void **state)
{
	struct lev_gate_options o = { 0 };
	struct lev_gate *g = NULL;
	struct lev_gate_decision d;
	struct lev_tool_class c;
	char *pol = path_in("policy.toml");

	(void)state;
	lev_rm_rf(pol, NULL);
	write_file(pol,
		   "[mcp_overrides.crm.tools]\n"
		   "lookup = { sensitivity = \"private\", direction = \"inbound\" }\n"
		   "notify = { target = \"who\", clearance = \"internal\" }\n"
		   "[[allowlist]]\ntool = \"crm.notify\"\nto = [\"*@corp.com\"]\n"
		   "max_sensitivity = \"private\"\n",
		   0600);
	o.policy_path = pol;
	o.enabled = true;
	o.read_grant_active = true;
	o.recheck_ns = -1;
	assert_int_equal(lev_gate_new(&o, &g, NULL), 0);
	lev_gate_classify(g, "read_files", &c);
	assert_int_equal(c.sensitivity, LEV_PRIVATE);
	lev_gate_classify(g, "crm__lookup", &c);
	assert_int_equal(c.sensitivity, LEV_PRIVATE);
	check(g, "crm__lookup", "{}", LEV_PRIVATE, &d);
	assert_int_equal(d.source, LEV_GATE_SRC_NOT_OUTBOUND);
	lev_gate_decision_release(&d);
	check(g, "crm__notify", "{\"who\":\"ann@corp.com\",\"to\":\"x@evil.com\"}", LEV_INTERNAL, &d);
	assert_int_equal(d.source, LEV_GATE_SRC_WITHIN_CLEARANCE);
	lev_gate_decision_release(&d);
	check(g, "crm__notify", "{\"who\":\"ann@corp.com\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.source, LEV_GATE_SRC_ALLOWLIST);
	assert_string_equal(d.targets[0], "ann@corp.com");
	lev_gate_decision_release(&d);
	check(g, "crm__notify", "{\"who\":\"ann@evil.com\"}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	lev_gate_decision_release(&d);
	lev_gate_free(g);
	free(pol);
}

static void test_gate_reloads_policy_and_fails_closed_on_breakage(void **state)
{
	struct lev_gate *g = gate_with(NULL, NULL, NULL, true, false);
	struct lev_gate_decision d;
	char *pol = path_in("policy.toml");

	(void)state;
	check(g, "shell", "{}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	lev_gate_decision_release(&d);

	write_file(pol, "[[allowlist]]\ntool = \"shell\"\nmax_sensitivity = \"private\"\n", 0600);
	check(g, "shell", "{}", LEV_PRIVATE, &d);
	assert_int_equal(d.source, LEV_GATE_SRC_ALLOWLIST);
	lev_gate_decision_release(&d);

	/* broken mid-run: the allowlist stops counting, and the decision says why */
	write_file(pol, "[[allowlist]]\ntool = \"shell\"\nmax_sensitivity = \"privat\"\n", 0600);
	check(g, "shell", "{}", LEV_PRIVATE, &d);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	assert_int_equal(lev_strv_len(d.diags), 1);
	assert_non_null(strstr(d.diags[0], "allowlist ignored"));
	assert_non_null(strstr(d.diags[0], ":3:"));
	lev_gate_decision_release(&d);

	/* fixed again */
	write_file(pol, "[[allowlist]]\ntool = \"shell\"\nmax_sensitivity = \"private\"\n\n", 0600);
	check(g, "shell", "{}", LEV_PRIVATE, &d);
	assert_int_equal(d.source, LEV_GATE_SRC_ALLOWLIST);
	lev_gate_decision_release(&d);

	/* rules appear too */
	{
		char *rules = path_in("rules");
		char *f = lev_path_join(rules, "late.lua");

		write_file(pol, "\n", 0600);
		assert_int_equal(mkdir(rules, 0700), 0);
		write_file(f, "return tool == 'shell'", 0600);
		check(g, "shell", "{}", LEV_PRIVATE, &d);
		assert_int_equal(d.source, LEV_GATE_SRC_RULE);
		assert_string_equal(d.rule_name, "late");
		lev_gate_decision_release(&d);
		/* edited in place */
		write_file(f, "return false -- now refuses", 0600);
		check(g, "shell", "{}", LEV_PRIVATE, &d);
		assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
		lev_gate_decision_release(&d);
		free(f);
		free(rules);
	}
	lev_gate_free(g);
	free(pol);
}

static void test_gate_refuses_unsafe_or_broken_files_at_start(void **state)
{
	struct lev_gate_options o = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	struct lev_gate *g = NULL;
	char *pol = path_in("policy.toml");

	(void)state;
	o.policy_path = pol;
	o.enabled = true;
	write_file(pol, "[[allowlist]]\ntool = \"x\"\n", 0600);
	assert_int_equal(lev_gate_new(&o, &g, &err), LEV_EPARSE);
	assert_null(g);
	write_file(pol, "\n", 0666);
	assert_int_equal(lev_gate_new(&o, &g, &err), -EPERM);
	assert_non_null(strstr(err.msg, "writable"));
	lev_rm_rf(pol, NULL);
	free(pol);
}

/* The whole A12 story through the real gate. */
static void test_gate_sees_laundered_taint(void **state)
{
	struct lev_gate *g = gate_with(NULL, NULL, NULL, true, false);
	struct lev_taint_ctx *ctx = lev_taint_ctx_new();
	struct lev_gate_call c = { 0 };
	struct lev_gate_decision d;
	int conv = lev_taint_region_add(ctx, "conversation", NULL);
	int scratch = lev_taint_region_add(ctx, "scratch", NULL);
	uint64_t secret, note;

	(void)state;
	lev_taint_add_entry(ctx, conv, LEV_PUBLIC, NULL, NULL);
	lev_taint_add_entry(ctx, scratch, LEV_PRIVATE, &secret, NULL);
	lev_taint_add_model_text(ctx, conv, LEV_PUBLIC, &note, NULL);
	lev_taint_evict(ctx, secret, NULL);
	c.tool = "http_post";
	c.args_json = "{\"url\":\"https://x@partner.net/\",\"body\":\"463820\"}";
	c.args_len = strlen(c.args_json);
	c.ctx = ctx;
	assert_int_equal(lev_gate_check(g, &c, &d, NULL), 0);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	assert_int_equal(d.taint, LEV_PRIVATE);
	assert_string_equal(d.regions, "conversation");
	assert_string_equal(d.targets[0], "partner.net");
	lev_gate_decision_release(&d);
	/* B08: evict the derived note too and the same call is fine */
	lev_taint_evict(ctx, note, NULL);
	assert_int_equal(lev_gate_check(g, &c, &d, NULL), 0);
	assert_int_equal(d.source, LEV_GATE_SRC_WITHIN_CLEARANCE);
	lev_gate_decision_release(&d);
	lev_taint_ctx_free(ctx);
	lev_gate_free(g);
}

static void test_gate_given_targets_are_canonicalised(void **state)
{
	struct lev_gate *g = gate_with(A14_POLICY, NULL, NULL, true, false);
	struct lev_gate_call c = { 0 };
	struct lev_gate_decision d;
	char *good[] = { (char *)"API.EXAMPLE.COM.", NULL };
	char *bad[] = { (char *)"evil.com#.example.com", NULL };

	(void)state;
	c.tool = "http_post";
	c.taint = LEV_INTERNAL;
	c.targets_given = true;
	c.targets = good;
	assert_int_equal(lev_gate_check(g, &c, &d, NULL), 0);
	assert_int_equal(d.source, LEV_GATE_SRC_ALLOWLIST);
	lev_gate_decision_release(&d);
	c.targets = bad;
	assert_int_equal(lev_gate_check(g, &c, &d, NULL), 0);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	assert_non_null(d.target_error);
	lev_gate_decision_release(&d);
	c.tool = NULL;
	assert_int_equal(lev_gate_check(g, &c, &d, NULL), -EINVAL);
	lev_gate_free(g);
}

static void test_gate_takes_parsed_arguments(void **state)
{
	struct lev_gate *g = gate_with(A14_POLICY, NULL, NULL, true, false);
	struct lev_gate_call c = { 0 };
	struct lev_gate_decision d;
	json_t *good = json_pack("{s:s}", "url", "https://api.example.com/x");
	json_t *evil = json_pack("{s:s}", "url", "https://evil.com#.example.com");
	json_t *arr = json_pack("[s]", "x");

	(void)state;
	c.tool = "http_post";
	c.taint = LEV_INTERNAL;
	c.args_json = "{\"url\":\"https://evil.com/\"}";	/* ignored: ARGS wins */
	c.args_len = strlen(c.args_json);
	c.args = good;
	assert_int_equal(lev_gate_check(g, &c, &d, NULL), 0);
	assert_int_equal(d.source, LEV_GATE_SRC_ALLOWLIST);
	assert_string_equal(d.targets[0], "api.example.com");
	lev_gate_decision_release(&d);
	c.args = evil;
	assert_int_equal(lev_gate_check(g, &c, &d, NULL), 0);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	assert_string_equal(d.targets[0], "evil.com");
	lev_gate_decision_release(&d);
	c.args = arr;
	assert_int_equal(lev_gate_check(g, &c, &d, NULL), 0);
	assert_int_equal(d.result, LEV_GATE_NEEDS_USER);
	assert_non_null(d.target_error);
	lev_gate_decision_release(&d);
	json_decref(good);
	json_decref(evil);
	json_decref(arr);
	lev_gate_free(g);
}

static void test_describe_does_not_echo_targets(void **state)
{
	struct lev_gate *g = gate_with(NULL, NULL, NULL, true, false);
	struct lev_gate_decision d;
	struct lev_buf b = LEV_BUF_INIT;

	(void)state;
	check(g, "http_post", "{\"url\":\"https://evil.example/?leak\"}", LEV_PRIVATE, &d);
	assert_int_equal(lev_gate_describe(&d, &b), 0);
	assert_non_null(strstr(b.buf, "'http_post' would send private data"));
	assert_null(strstr(b.buf, "evil"));
	lev_gate_decision_release(&d);
	lev_buf_release(&b);
	lev_gate_free(g);
}

/* ---- lev policy add ---- */

static const char *const ORIGINAL =
	"# my policy: keep this comment\n"
	"colour = \"kept even though unknown\"   # trailing comment\n"
	"\n"
	"[[allowlist]]\n"
	"tool = \"send_email\"\n"
	"to = [\"megan@*\"]\n"
	"max_sensitivity = \"private\"\n"
	"\n"
	"[mcp_overrides.\"my-server\".tools]\n"
	"read_customer_data = { sensitivity = \"private\", direction = \"outbound\", clearance = \"internal\" }\n"
	"# last line without newline";

static void test_append_keeps_every_byte(void **state)
{
	char *p = path_in("policy.toml");
	struct lev_policy *pol = NULL;
	size_t idx = 0;
	struct stat st;
	char *after;

	(void)state;
	write_file(p, ORIGINAL, 0640);
	assert_int_equal(lev_policy_append_rule(p, "http_post", "*.EXAMPLE.com", LEV_INTERNAL, &idx,
						NULL), 0);
	assert_int_equal(idx, 2);
	after = read_all(p);
	assert_memory_equal(after, ORIGINAL, strlen(ORIGINAL));
	assert_non_null(strstr(after + strlen(ORIGINAL), "to = [\"*.example.com\"]"));
	assert_int_equal(lev_policy_load(p, &pol, NULL, NULL), 0);
	assert_int_equal(pol->n_rules, 2);
	assert_string_equal(pol->rules[1].tool, "http_post");
	assert_int_equal(pol->rules[1].max_sensitivity, LEV_INTERNAL);
	assert_int_equal(pol->n_overrides, 1);
	lev_policy_free(pol);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);

	/* a second append keeps the first one too */
	assert_int_equal(lev_policy_append_rule(p, "shell", NULL, LEV_PUBLIC, &idx, NULL), 0);
	assert_int_equal(idx, 3);
	{
		char *again = read_all(p);

		assert_memory_equal(again, after, strlen(after));
		free(again);
	}
	free(after);
	free(p);
}

static void test_append_creates_the_file_and_directory(void **state)
{
	char *dir = path_in("newroot");
	char *p = lev_path_join(dir, "policy.toml");
	struct lev_policy *pol = NULL;
	struct stat st;

	(void)state;
	assert_int_equal(lev_policy_append_rule(p, "web_fetch", "docs.example.com", LEV_PRIVATE, NULL,
						NULL), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(lev_policy_load(p, &pol, NULL, NULL), 0);
	assert_int_equal(pol->n_rules, 1);
	assert_string_equal(pol->rules[0].to[0], "docs.example.com");
	lev_policy_free(pol);
	free(p);
	free(dir);
}

static void test_append_refuses_and_leaves_the_file_alone(void **state)
{
	char *p = path_in("policy.toml");
	struct lev_err err = LEV_ERR_INIT;
	const char *broken = "[[allowlist]]\ntool = \"x\"\n# no max_sensitivity\n";
	const char *inline_arr = "allowlist = []\n";
	char *now;

	(void)state;
	write_file(p, broken, 0600);
	assert_true(lev_policy_append_rule(p, "shell", NULL, LEV_PUBLIC, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "max_sensitivity"));
	now = read_all(p);
	assert_string_equal(now, broken);
	free(now);

	write_file(p, inline_arr, 0600);
	assert_true(lev_policy_append_rule(p, "shell", NULL, LEV_PUBLIC, NULL, &err) < 0);
	now = read_all(p);
	assert_string_equal(now, inline_arr);
	free(now);

	assert_true(lev_policy_append_rule(p, "shell", "*evil.com", LEV_PUBLIC, NULL, &err) < 0);
	assert_true(lev_policy_append_rule(p, "two words", NULL, LEV_PUBLIC, NULL, &err) < 0);
	assert_true(lev_policy_append_rule(p, "q\"uote", NULL, LEV_PUBLIC, NULL, &err) < 0);
	assert_true(lev_policy_append_rule(p, "x", NULL, (enum lev_level)9, NULL, &err) < 0);
	now = read_all(p);
	assert_string_equal(now, inline_arr);
	free(now);
	free(p);
}

/* Leviath's policy.toml merged in: the stricter wins, the index agrees with the linear scan. */
static void test_policy_merge_stricter_wins(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_policy *p, *t;
	char c1[] = "chat.example.com", c2[] = "other.example.org";
	char *chat[] = { c1, NULL }, *other[] = { c2, NULL };
	struct lev_tool_class cls;

	(void)state;
	p = parse_ok("[[allowlist]]\ntool = \"http_post\"\nto = [\"chat.example.com\"]\n"
		     "max_sensitivity = \"private\"\n"
		     "[[allowlist]]\ntool = \"web_fetch\"\nmax_sensitivity = \"private\"\n"
		     "[mcp_overrides.\"crm.export\"]\nclearance = \"private\"\ndirection = \"inbound\"\n");
	t = parse_ok("[[allowlist]]\ntool = \"http_post\"\nto = [\"chat.example.com\"]\n"
		     "max_sensitivity = \"internal\"\n"
		     "[[allowlist]]\ntool = \"send_email\"\nmax_sensitivity = \"private\"\n"
		     "[mcp_overrides.\"crm.export\"]\nclearance = \"public\"\nsensitivity = \"private\"\n");
	/* benign twin before the merge: ours alone allows private data to chat */
	assert_int_equal(lev_policy_match(p, "http_post", chat, LEV_PRIVATE), 0);
	assert_int_equal(lev_policy_merge(p, t, &err), 0);
	assert_non_null(p->also_file);
	assert_int_equal(p->n_rules, 4);
	assert_int_equal(p->rules[2].source, 1);
	/* both have rules for http_post: the lower max_sensitivity wins */
	assert_int_equal(lev_policy_match(p, "http_post", chat, LEV_INTERNAL), 0);
	assert_int_equal(lev_policy_match(p, "http_post", chat, LEV_PRIVATE), -1);
	assert_int_equal(lev_policy_match(p, "http_post", other, LEV_PUBLIC), -1);
	/* only one file speaks about a tool: it decides */
	assert_int_equal(lev_policy_match(p, "web_fetch", NULL, LEV_PRIVATE), 1);
	assert_int_equal(lev_policy_match(p, "send_email", NULL, LEV_PRIVATE), 3);
	for (enum lev_level l = LEV_PUBLIC; l <= LEV_PRIVATE; l++)
		for (char **tg = (char *[]){ c1, c2, NULL }; *tg; tg++) {
			char *one[] = { *tg, NULL };

			assert_int_equal(lev_policy_match(p, "http_post", one, l),
					 lev_policy_match_linear(p, "http_post", one, l));
		}
	/* the overrides stay apart; a call gets each field the stricter of the two */
	assert_int_equal(p->n_overrides, 1);
	assert_non_null(p->leviath);
	assert_int_equal(p->leviath->n_overrides, 1);
	lev_policy_classify(p, "crm__export", &cls);
	assert_int_equal(cls.clearance, LEV_PUBLIC);
	assert_int_equal(cls.sensitivity, LEV_PRIVATE);
	assert_int_equal(cls.direction, LEV_DIR_INBOUND);
	lev_policy_free(p);

	/* consequential belongs to lev's file: an error naming Leviath's line and column */
	p = parse_ok("");
	t = parse_ok("[mcp_overrides.\"crm.export\"]\nclearance = \"public\"\n  consequential = false\n");
	assert_int_equal(lev_policy_merge(p, t, &err), LEV_EPARSE);
	assert_non_null(strstr(err.msg, "policy.toml:3:19: 'crm.export': consequential belongs"));
	assert_null(p->also_file);
	assert_null(p->leviath);
	lev_policy_free(p);

	/* [integrity] belongs to lev's file: an error naming Leviath's line */
	p = parse_ok("");
	t = parse_ok("\n[integrity]\nuntrusted = [\"inbox/*\"]\n");
	assert_int_equal(lev_policy_merge(p, t, &err), LEV_EPARSE);
	assert_non_null(strstr(err.msg, "policy.toml:2:1: [integrity]"));
	assert_null(p->also_file);
	lev_policy_free(p);
}

/* ---- property: Leviath's policy never loosens ours ---- */

/* The generated policy files speak about these keys; calls go to these tools. */
static const char *const gen_keys[] = { "srv", "srv.a", "srv.b", "other.x", "send_email",
					"web_fetch", "read_file" };
static const char *const gen_calls[] = { "srv__a", "srv__b", "srv__c", "other__x", "send_email",
					 "web_fetch", "read_file", "http_post" };
static const char *const gen_levels[] = { "public", "internal", "private" };
static const char *const gen_dirs[] = { "inbound", "internal", "outbound" };
static const char *const gen_hosts[] = { "a.example.com", "b.example.com" };

enum { GF_SENS = 1, GF_DIR = 2, GF_CLR = 4, GF_CONSEQ = 8 };

struct gen_entry {
	unsigned fields;	/* GF_* */
	int sens, dir, clr;
	bool conseq;
};

struct gen_file {
	struct gen_entry e[ARRAY_SIZE(gen_keys)];
	bool rules_for[ARRAY_SIZE(gen_calls)];
	struct lev_buf text;
};

static uint64_t gen_state;

static unsigned gen_rand(unsigned n)
{
	gen_state ^= gen_state << 13;
	gen_state ^= gen_state >> 7;
	gen_state ^= gen_state << 17;
	return (unsigned)(gen_state % n);
}

static bool gen_foreign(const char *key)
{
	return strchr(key, '.') || !strcmp(key, "srv");
}

static void gen_fields(struct lev_buf *b, const struct gen_entry *e, const char *sep)
{
	if (e->fields & GF_SENS)
		assert_int_equal(lev_buf_addf(b, "sensitivity = \"%s\"%s", gen_levels[e->sens], sep), 0);
	if (e->fields & GF_DIR)
		assert_int_equal(lev_buf_addf(b, "direction = \"%s\"%s", gen_dirs[e->dir], sep), 0);
	if (e->fields & GF_CLR)
		assert_int_equal(lev_buf_addf(b, "clearance = \"%s\"%s", gen_levels[e->clr], sep), 0);
	if (e->fields & GF_CONSEQ)
		assert_int_equal(lev_buf_addf(b, "consequential = %s%s", e->conseq ? "true" : "false",
					      sep), 0);
}

/* A random policy file: overrides (flat, or nested for the server's tools) and rules. */
static void gen_file_make(struct gen_file *f, bool conseq_ok)
{
	struct lev_buf *b = &f->text;
	bool nested = gen_rand(2);
	size_t i;

	memset(f, 0, sizeof(*f));
	f->text = (struct lev_buf)LEV_BUF_INIT_MAX(1 << 16);
	for (i = 0; i < ARRAY_SIZE(gen_keys); i++) {
		struct gen_entry *e = &f->e[i];

		if (gen_rand(3) == 0)
			continue;
		e->fields = gen_rand(8);
		if (conseq_ok && gen_foreign(gen_keys[i]) && gen_rand(3) == 0)
			e->fields |= GF_CONSEQ;
		e->sens = (int)gen_rand(3);
		e->dir = (int)gen_rand(3);
		e->clr = (int)gen_rand(3);
		e->conseq = gen_rand(2);
	}
	if (f->e[0].fields)
		nested = false;	/* the server's own entry: its tools flat */
	for (i = 0; i < ARRAY_SIZE(gen_keys); i++) {
		const struct gen_entry *e = &f->e[i];

		if (!e->fields || (nested && !strncmp(gen_keys[i], "srv.", 4)))
			continue;
		assert_int_equal(lev_buf_addf(b, "[mcp_overrides.\"%s\"]\n", gen_keys[i]), 0);
		gen_fields(b, e, "\n");
	}
	if (nested && (f->e[1].fields || f->e[2].fields)) {
		assert_int_equal(lev_buf_adds(b, "[mcp_overrides.\"srv\".tools]\n"), 0);
		for (i = 1; i <= 2; i++) {
			if (!f->e[i].fields)
				continue;
			assert_int_equal(lev_buf_addf(b, "%s = { ", gen_keys[i] + 4), 0);
			gen_fields(b, &f->e[i], ", ");
			b->len -= 2;	/* the last ", " */
			b->buf[b->len] = '\0';
			assert_int_equal(lev_buf_adds(b, " }\n"), 0);
		}
	}
	for (i = gen_rand(4); i > 0; i--) {
		unsigned c = gen_rand(ARRAY_SIZE(gen_calls));

		f->rules_for[c] = true;
		assert_int_equal(lev_buf_addf(b, "[[allowlist]]\ntool = \"%s\"\n", gen_calls[c]), 0);
		if (gen_rand(2))
			assert_int_equal(lev_buf_addf(b, "to = [\"%s\"]\n",
						      gen_hosts[gen_rand(2)]), 0);
		assert_int_equal(lev_buf_addf(b, "max_sensitivity = \"%s\"\n",
					      gen_levels[gen_rand(3)]), 0);
	}
}

/* Does F set FIELD for the call TOOL (its own entry or its server's)? */
static bool gen_sets(const struct gen_file *f, const char *tool, unsigned field)
{
	const char *sep = strstr(tool, "__");

	for (size_t i = 0; i < ARRAY_SIZE(gen_keys); i++) {
		const char *k = gen_keys[i];
		bool mine;

		if (sep) {
			size_t n = (size_t)(sep - tool);
			bool srv = strlen(k) == n && !strncmp(k, tool, n);
			bool own = !strncmp(k, tool, n) && k[n] == '.' && !strcmp(k + n + 1, sep + 2);

			mine = srv || own;
		} else {
			mine = !strcmp(k, tool);
		}
		if (mine && (f->e[i].fields & field))
			return true;
	}
	return false;
}

static struct lev_policy *gen_parse(const struct gen_file *f, const char *name)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_policy *p = NULL;

	if (lev_policy_parse(f->text.buf, f->text.len, name, &p, &err) != 0)
		fail_msg("generated %s does not parse: %s\n%s", name, err.msg, f->text.buf);
	return p;
}

static int dir_rank(enum lev_direction d)
{
	return (int)d;	/* inbound < internal < outbound: higher is stricter */
}

/* One generated pair: every call, every field, every allowlist question. */
static void gen_check_pair(const struct gen_file *fo, const struct gen_file *ft)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_policy *ours = gen_parse(fo, "ours.toml"), *theirs = gen_parse(ft, "theirs.toml");
	struct lev_policy *merged = gen_parse(fo, "ours.toml");
	char *targets[ARRAY_SIZE(gen_hosts)][2];

	assert_int_equal(lev_policy_merge(merged, gen_parse(ft, "theirs.toml"), &err), 0);
	for (size_t h = 0; h < ARRAY_SIZE(gen_hosts); h++) {
		targets[h][0] = (char *)gen_hosts[h];
		targets[h][1] = NULL;
	}
	for (size_t c = 0; c < ARRAY_SIZE(gen_calls); c++) {
		const char *tool = gen_calls[c];
		struct lev_tool_class m, o, t;

		lev_policy_classify(merged, tool, &m);
		lev_policy_classify(ours, tool, &o);
		lev_policy_classify(theirs, tool, &t);
		/* never looser than lev's file alone */
		assert_true(m.sensitivity >= o.sensitivity);
		assert_true(dir_rank(m.direction) >= dir_rank(o.direction));
		assert_true(m.clearance <= o.clearance);
		/* never looser than Leviath's on a field it sets; exactly the stricter (twin) */
		if (gen_sets(ft, tool, GF_SENS)) {
			assert_true(m.sensitivity >= t.sensitivity);
			assert_int_equal(m.sensitivity, lev_level_max(o.sensitivity, t.sensitivity));
		} else {
			assert_int_equal(m.sensitivity, o.sensitivity);
		}
		if (gen_sets(ft, tool, GF_DIR)) {
			assert_true(dir_rank(m.direction) >= dir_rank(t.direction));
			assert_int_equal(m.direction, o.direction > t.direction ? o.direction : t.direction);
		} else {
			assert_int_equal(m.direction, o.direction);
		}
		if (gen_sets(ft, tool, GF_CLR)) {
			assert_true(m.clearance <= t.clearance);
			assert_int_equal(m.clearance, o.clearance < t.clearance ? o.clearance : t.clearance);
		} else {
			assert_int_equal(m.clearance, o.clearance);
		}
		/* consequential is lev's alone */
		for (int d = 0; d < 2; d++)
			assert_int_equal(lev_policy_consequential(merged, tool, d),
					 lev_policy_consequential(ours, tool, d));
		/* the allowlist: allowed only when each file with rules for the tool allows */
		for (int l = LEV_PUBLIC; l <= LEV_PRIVATE; l++)
			for (size_t h = 0; h <= ARRAY_SIZE(gen_hosts); h++) {
				char **tg = h < ARRAY_SIZE(gen_hosts) ? targets[h] : NULL;
				bool mo = lev_policy_match(ours, tool, tg, l) >= 0;
				bool mt = lev_policy_match(theirs, tool, tg, l) >= 0;
				bool mm = lev_policy_match(merged, tool, tg, l) >= 0;
				bool ho = fo->rules_for[c], ht = ft->rules_for[c];

				assert_int_equal(mm, (ho || ht) && (!ho || mo) && (!ht || mt));
			}
	}
	lev_policy_free(ours);
	lev_policy_free(theirs);
	lev_policy_free(merged);
}

static void test_leviath_policy_never_loosens_ours(void **state)
{
	struct gen_file fo, ft;
	unsigned refused = 0;
	int i;

	(void)state;
	gen_state = 0x9e3779b97f4a7c15ULL;
	for (i = 0; i < 3000; i++) {
		struct lev_err err = LEV_ERR_INIT;
		struct lev_policy *p;

		gen_file_make(&fo, true);
		gen_file_make(&ft, gen_rand(4) == 0);
		if (strstr(ft.text.buf, "consequential")) {
			/* refused in Leviath's file, naming file:line:col; ours unchanged */
			p = gen_parse(&fo, "ours.toml");
			assert_int_equal(lev_policy_merge(p, gen_parse(&ft, "theirs.toml"), &err),
					 LEV_EPARSE);
			assert_non_null(strstr(err.msg, "theirs.toml:"));
			assert_non_null(strstr(err.msg, "consequential belongs in lev's"));
			assert_null(p->leviath);
			lev_policy_free(p);
			refused++;
		} else {
			gen_check_pair(&fo, &ft);
		}
		lev_buf_release(&fo.text);
		lev_buf_release(&ft.text);
	}
	/* the generator reached both branches */
	assert_true(refused > 100 && refused < 2000);
	printf("# %u of 3000 Leviath files said consequential and were refused\n", refused);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_merge_stricter_wins),
		cmocka_unit_test(test_leviath_policy_never_loosens_ours),
		cmocka_unit_test(test_host_canonicalisation),
		cmocka_unit_test(test_url_parse_and_canonical_form),
		cmocka_unit_test(test_pattern_canonicalisation),
		cmocka_unit_test(test_pattern_matching),
		cmocka_unit_test(test_policy_parses_rules_and_overrides),
		cmocka_unit_test(test_policy_missing_or_bad_max_sensitivity_is_an_error),
		cmocka_unit_test(test_policy_other_errors_name_the_place),
		cmocka_unit_test(test_policy_unknown_keys_are_warnings),
		cmocka_unit_test(test_allowlist_matching_semantics),
		cmocka_unit_test(test_index_agrees_with_linear_matching),
		cmocka_unit_test_setup_teardown(test_gate_pattern_tricks, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_gate_decision_order, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_gate_disabled_and_yolo, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_gate_user_answers, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_gate_lua_rule_after_allowlist, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_gate_overrides_and_read_grants, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_gate_reloads_policy_and_fails_closed_on_breakage,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_gate_refuses_unsafe_or_broken_files_at_start,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_gate_sees_laundered_taint, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_gate_given_targets_are_canonicalised, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_gate_takes_parsed_arguments, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_describe_does_not_echo_targets, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_append_keeps_every_byte, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_append_creates_the_file_and_directory, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_append_refuses_and_leaves_the_file_alone, setup_dir,
						teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
