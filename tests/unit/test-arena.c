#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/arena.h"

static bool aligned(const void *p)
{
	return ((uintptr_t)p & (LEV_ARENA_ALIGN - 1)) == 0;
}

/* Blocks come from the caller's memory first, aligned and apart. */
static void test_first_memory_then_heap(void **state)
{
	_Alignas(16) char room[256];
	struct lev_arena a;
	char *x, *y, *z;

	(void)state;
	lev_arena_init(&a, room, sizeof(room));
	x = lev_arena_alloc(&a, 10);
	y = lev_arena_alloc(&a, 3);
	assert_true(x >= room && x + 10 <= room + sizeof(room));
	assert_true(y >= x + 10 && y + 3 <= room + sizeof(room));
	assert_true(aligned(x) && aligned(y));
	memset(x, 'x', 10);
	memset(y, 'y', 3);
	/* does not fit any more: a heap chunk, the earlier blocks untouched */
	z = lev_arena_alloc(&a, 1000);
	assert_true(z + 1000 <= room || z >= room + sizeof(room));
	assert_true(aligned(z));
	memset(z, 'z', 1000);
	assert_int_equal(x[9], 'x');
	assert_int_equal(y[2], 'y');
	/* a reset starts over in the caller's memory */
	lev_arena_reset(&a);
	assert_ptr_equal(lev_arena_alloc(&a, 1), x);
	lev_arena_release(&a);
}

/* Without memory of its own, and with blocks bigger than a chunk. */
static void test_heap_only_and_big_blocks(void **state)
{
	struct lev_arena a;
	char *p[64];
	size_t i;

	(void)state;
	lev_arena_init(&a, NULL, 0);
	for (i = 0; i < 64; i++) {
		size_t n = i * 1000 + 1;

		p[i] = lev_arena_alloc(&a, n);
		assert_true(aligned(p[i]));
		memset(p[i], (int)i, n);
	}
	for (i = 0; i < 64; i++)
		assert_int_equal((unsigned char)p[i][i * 1000], i);
	/* a zero-byte request is still a distinct block */
	assert_ptr_not_equal(lev_arena_alloc(&a, 0), lev_arena_alloc(&a, 0));
	lev_arena_release(&a);
	assert_null(a.chunks);
}

/* The newest block grows where it is; an older one is copied. */
static void test_grow(void **state)
{
	_Alignas(16) char room[128];
	struct lev_arena a;
	char *p, *q, *r;

	(void)state;
	lev_arena_init(&a, room, sizeof(room));
	p = lev_arena_grow(&a, NULL, 0, 8);
	memcpy(p, "abcdefg", 8);
	q = lev_arena_grow(&a, p, 8, 16);
	assert_ptr_equal(q, p);
	r = lev_arena_alloc(&a, 4);
	q = lev_arena_grow(&a, p, 16, 32);
	assert_ptr_not_equal(q, p);
	assert_string_equal(q, "abcdefg");
	assert_true(q >= r + 4 || q + 32 <= r);
	/* past the caller's memory: into a heap chunk, contents kept */
	p = lev_arena_grow(&a, q, 32, 4096);
	assert_string_equal(p, "abcdefg");
	assert_ptr_equal(lev_arena_grow(&a, p, 4096, 100), p);
	lev_arena_release(&a);
}

static void test_strings(void **state)
{
	struct lev_arena a;
	char *s;

	(void)state;
	lev_arena_init(&a, NULL, 0);
	s = lev_arena_strndup(&a, "hello world", 5);
	assert_string_equal(s, "hello");
	assert_string_equal(lev_arena_strdup(&a, "x y"), "x y");
	assert_string_equal(lev_arena_strdup(&a, ""), "");
	assert_non_null(lev_arena_array(&a, 10, sizeof(long)));
	lev_arena_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_memory_then_heap),
		cmocka_unit_test(test_heap_only_and_big_blocks),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
