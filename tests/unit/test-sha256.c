/*
 * test-sha256.c - SHA-256 against the FIPS 180-4 / NIST example vectors,
 * fed whole and in awkward pieces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/sha256.h"

static void hex_of(const void *data, size_t len, size_t step, char out[LEV_SHA256_HEX_LEN + 1])
{
	struct lev_sha256 c;
	uint8_t d[LEV_SHA256_LEN];
	const uint8_t *p = data;
	size_t off;

	lev_sha256_init(&c);
	for (off = 0; off < len; off += step)
		lev_sha256_update(&c, p + off, len - off < step ? len - off : step);
	lev_sha256_final(&c, d);
	lev_sha256_hex(d, out);
}

static void test_vectors(void **state)
{
	static const struct {
		const char *in;
		const char *hex;
	} v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
		  "klmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	static const size_t steps[] = { 1, 3, 63, 64, 65, 1000 };
	char out[LEV_SHA256_HEX_LEN + 1];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++)
		for (size_t s = 0; s < sizeof(steps) / sizeof(*steps); s++) {
			hex_of(v[i].in, strlen(v[i].in), steps[s], out);
			assert_string_equal(out, v[i].hex);
		}
}

static void test_million_a(void **state)
{
	char *a = malloc(1000000);
	char out[LEV_SHA256_HEX_LEN + 1];

	(void)state;
	assert_non_null(a);
	memset(a, 'a', 1000000);
	hex_of(a, 1000000, 4093, out);
	assert_string_equal(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_million_a),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
