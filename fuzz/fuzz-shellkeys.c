/*
 * fuzz-shellkeys.c - shell command lines from arbitrary bytes.
 *
 * The bytes (up to the first NUL) are one command line.  Besides "no crash,
 * no leak, no UB, no hang" it checks the invariants the permission layer
 * relies on: a grantable line has a non-empty, sorted, duplicate-free list
 * of ASCII keys in the shell: namespace and an ungrantable one has none; a
 * write key, an unlocatable write or an unreadable line all count as
 * writing; a line without a '>' byte names no write target and no
 * unlocatable write; the convenience wrappers agree with the parse; the
 * parse is deterministic; and a line's keys cover themselves.  Also:
 * an unreadable line or an unlocatable write needs a write fence (and says
 * why); lev_shellkeys_commands() answers exactly for grantable lines, and
 * no predicted field is opaque (a word only known at run time gives no key).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/policy/shellkeys.h"
#include "liblev/base/strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

static int strv_eq(char *const *a, char *const *b)
{
	size_t i;

	if (!a || !b)
		return a == b;
	for (i = 0; a[i] && b[i]; i++)
		if (strcmp(a[i], b[i]))
			return 0;
	return !a[i] && !b[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lev_shellkeys k, again;
	char *line, **v;
	bool has_gt, write_key = false;
	size_t i;

	if (size > LEV_SHELLKEYS_MAX_LINE + 16)
		return 0;
	line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	has_gt = strchr(line, '>') != NULL;

	lev_shellkeys_parse(line, &k);
	if (k.grantable) {
		CHECK(k.keys && k.keys[0]);
		CHECK(!k.reason);
		for (i = 0; k.keys[i]; i++) {
			const unsigned char *c;

			CHECK(!strncmp(k.keys[i], "shell:", 6) && k.keys[i][6]);
			for (c = (const unsigned char *)k.keys[i]; *c; c++)
				CHECK(*c < 0x80);
			if (i)
				CHECK(strcmp(k.keys[i - 1], k.keys[i]) < 0);
			if (!strncmp(k.keys[i], "shell:>", 7))
				write_key = true;
		}
		CHECK(lev_shellkeys_all_covered(k.keys, k.keys, NULL));
		CHECK(lev_shellkeys_all_covered(k.keys, NULL, k.keys));
		CHECK(!k.unlocatable_write);
	} else {
		CHECK(!k.keys);
		CHECK(k.reason);
	}
	if (write_key || k.unlocatable_write)
		CHECK(k.writes);
	if (k.unlocatable_write)
		CHECK(k.write_reason);
	if (!has_gt) {
		CHECK(!k.write_targets);
		CHECK(!k.unlocatable_write);
	}
	if (k.unlocatable_write)
		CHECK(k.needs_fence);
	CHECK(k.needs_fence == (k.fence_reason != NULL));
	v = lev_shellkeys_commands(line);
	CHECK((v != NULL) == k.grantable);
	for (i = 0; v && v[i]; i++) {
		const char *f = v[i];

		/* every field starts with its kind; none is opaque */
		while (f && *f) {
			CHECK(strchr("LTGgP", f[0]));
			f = strchr(f, 0x1f);
			f = f ? f + 1 : NULL;
		}
	}
	lev_strv_free(v);

	lev_shellkeys_parse(line, &again);
	CHECK(again.grantable == k.grantable && again.writes == k.writes &&
	      again.unlocatable_write == k.unlocatable_write &&
	      again.needs_fence == k.needs_fence);
	CHECK(strv_eq(again.keys, k.keys));
	CHECK(strv_eq(again.write_targets, k.write_targets));
	lev_shellkeys_release(&again);

	v = lev_shellkeys_keys(line);
	CHECK(strv_eq(v, k.keys));
	lev_strv_free(v);
	v = lev_shellkeys_write_targets(line);
	CHECK(strv_eq(v, k.write_targets));
	lev_strv_free(v);
	CHECK(lev_shellkeys_writes_a_file(line) == k.writes);
	(void)lev_safecmd_default_covers(line);

	if (size < 1024 && lev_shellkeys_is_valid_prefix(line) && strncmp(line, "env:", 4)) {
		CHECK(k.grantable && k.keys[0] && !k.keys[1]);
		CHECK(!strcmp(k.keys[0] + 6, line));
	}

	lev_shellkeys_release(&k);
	free(line);
	return 0;
}
