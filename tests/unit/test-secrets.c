#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/base/secrets.h"

#define CASES 5000

static uint64_t rng = 0x5eed5eed12345678ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* A key: printable ASCII without spaces (what lev_api_key_valid() takes), no '[' ']'. */
static void gen_secret(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c;

		do
			c = (char)(0x21 + rnd(0x5e));
		while (c == '[' || c == ']');
		s[i] = c;
	}
	s[n] = '\0';
}

/* Text around the secrets: words, punctuation, JSON-ish, key-like runs. */
static void add_filler(char *t, size_t *len, size_t max)
{
	static const char *const bits[] = { " ", "the key is ", "\"", "\n", "Bearer ", "=",
					    "sk-", ":", "{\"args\":", "abc", "_", "-", "/",
					    "token", "0123", "\t", "x" };
	size_t k = rnd(6);

	for (size_t i = 0; i < k; i++) {
		const char *b = bits[rnd(sizeof(bits) / sizeof(bits[0]))];
		size_t n = strlen(b);

		if (*len + n < max) {
			memcpy(t + *len, b, n);
			*len += n;
		}
	}
}

/* Does any 8 consecutive bytes of SECRET occur in S? */
static bool leaks(const char *s, const char *secret)
{
	size_t n = strlen(secret);

	for (size_t i = 0; i + LEV_SECRET_MIN <= n; i++)
		if (memmem(s, strlen(s), secret + i, LEV_SECRET_MIN))
			return true;
	return false;
}

/* A case: filler, the secret (whole or an 8+ byte piece) 1..3 times, filler. */
static void gen_case(char *t, size_t max, const char *secret)
{
	size_t len = 0, sl = strlen(secret), k = 1 + rnd(3);

	for (size_t j = 0; j < k; j++) {
		size_t from = 0, n = sl;

		add_filler(t, &len, max);
		if (rnd(3) == 0) {	/* a piece of it, as a server echoes a prefix or a tail */
			n = LEV_SECRET_MIN + rnd((uint32_t)(sl - LEV_SECRET_MIN + 1));
			from = rnd((uint32_t)(sl - n + 1));
		}
		if (len + n < max) {
			memcpy(t + len, secret + from, n);
			len += n;
		}
	}
	add_filler(t, &len, max);
	t[len] = '\0';
}

/*
 * For thousands of generated keys and placements (whole, in pieces, glued
 * to words, in JSON, several times), no 8 bytes of the key are left and
 * the text never grows; the twin: text without 8 bytes of the key in
 * common is left byte for byte.
 */
static void test_property_placements(void **state)
{
	char secret[128], t[1024], before[1024];

	(void)state;
	for (int c = 0; c < CASES; c++) {
		size_t sl = LEV_SECRET_MIN + rnd(72);

		gen_secret(secret, sl);
		if (strstr(secret, "redacted"))
			continue;
		gen_case(t, sizeof(t), secret);
		strcpy(before, t);
		lev_redact_secret(t, secret);
		if (leaks(t, secret) || strlen(t) > strlen(before))
			fail_msg("case %d: key '%s' in '%s' -> '%s'", c, secret, before, t);

		/* the twin: filler only */
		size_t len = 0;
		add_filler(t, &len, sizeof(t) - 1);
		t[len] = '\0';
		if (leaks(t, secret))
			continue;
		strcpy(before, t);
		lev_redact_secret(t, secret);
		if (strcmp(t, before))
			fail_msg("case %d: twin '%s' changed to '%s'", c, before, t);
	}
}

/* The process-wide set: every secret added is redacted at once, others stay. */
static void test_set(void **state)
{
	char a[64], b[64], t[512];

	(void)state;
	lev_secrets_wipe();
	gen_secret(a, 40);
	gen_secret(b, 12);
	lev_secrets_add(a);
	lev_secrets_add(b);
	lev_secrets_add("short");	/* too short: not kept */
	assert_int_equal(lev_secrets_count(), 2);
	snprintf(t, sizeof(t), "one %s two %s three short", a, b);
	lev_secrets_redact(t);
	assert_false(leaks(t, a));
	assert_false(leaks(t, b));
	assert_non_null(strstr(t, "three short"));
	lev_secrets_wipe();
	assert_int_equal(lev_secrets_count(), 0);
	snprintf(t, sizeof(t), "one %s", a);
	lev_secrets_redact(t);
	assert_true(leaks(t, a));
}

/*
 * JSON: a key in any string, an object key, an array, after an embedded
 * NUL, and one holding '"' and '\' (as a JSON text spells it): none is
 * left in the value nor in its serialisation.
 */
static void test_json(void **state)
{
	char a[64], q[] = "sk-\"quoted\\key-0123456789";
	json_t *v;
	char *text;

	(void)state;
	lev_secrets_wipe();
	for (int c = 0; c < CASES / 10; c++) {
		gen_secret(a, 16 + rnd(40));
		lev_secrets_add(a);
		lev_secrets_add(q);
		v = json_pack("{s:s, s:[s, {s:s}], s:s}", "args", a, "list", "plain text", a, q,
			      "quoted", q);
		{
			char buf[128];
			size_t n = (size_t)snprintf(buf, sizeof(buf), "a%cb %s", '\0', a);
			json_object_set_new(v, "after_nul", json_stringn(buf, n));
		}
		{
			json_t *orig = json_deep_copy(v), *r = lev_secrets_redacted_json(v);

			/* V itself is untouched (a call's arguments run as given) */
			assert_true(json_equal(v, orig));
			json_decref(orig);
			json_decref(v);
			v = r;
		}
		text = json_dumps(v, JSON_COMPACT);
		assert_non_null(text);
		if (leaks(text, a) || leaks(text, q) || leaks(text, "sk-\\\"quoted\\\\key-0123456789"))
			fail_msg("case %d: '%s' left in %s", c, a, text);
		assert_non_null(strstr(text, "plain text"));	/* the twin */
		free(text);
		json_decref(v);
		/* a JSON text redacted as text: the escaped spelling is in the set too */
		v = json_pack("{s:s}", "q", q);
		text = json_dumps(v, JSON_COMPACT);
		json_decref(v);
		lev_secrets_redact(text);
		assert_false(leaks(text, "sk-\\\"quoted\\\\key-0123456789"));
		free(text);
		lev_secrets_wipe();
	}
}

/*
 * A child that does not share lev's memory (fork, a sandbox's clone) holds
 * no secret of the set and reads zeros where lev keeps a key's copy.
 */
static void test_child_sees_none(void **state)
{
	char a[64], t[256];
	pid_t pid;
	int status;

	(void)state;
	lev_secrets_wipe();
	char *copy;

	gen_secret(a, 32);
	lev_secrets_add(a);
	copy = lev_secret_dup(a);
	assert_string_equal(copy, a);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		snprintf(t, sizeof(t), "x %s y", a);
		lev_secrets_redact(t);
		/* the set's memory and the key's copy read as zeros */
		_exit(leaks(t, a) && !*copy ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* the twin: the parent still redacts */
	snprintf(t, sizeof(t), "x %s y", a);
	lev_secrets_redact(t);
	assert_false(leaks(t, a));
	assert_string_equal(copy, a);
	assert_true(lev_secret_release(copy));
	assert_false(lev_secret_release(t));	/* not one of its copies: untouched */
	lev_secrets_wipe();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_property_placements),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_child_sees_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
