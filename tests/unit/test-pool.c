/*
 * test-pool.c - the daemon's inference pool: never more than MAX held,
 * granted in the order asked, a leaver's slot passed on, no limit at 0;
 * and, over many generated sequences of asks and leaves, the same checked
 * against a plain model of a FIFO and a counter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "liblev/daemon/pool.h"

static int who[64];

static void test_fifo(void **state)
{
	struct lev_pool *p = lev_pool_new(2);

	assert_true(lev_pool_ask(p, &who[0]));
	assert_true(lev_pool_ask(p, &who[1]));
	assert_false(lev_pool_ask(p, &who[2]));
	assert_false(lev_pool_ask(p, &who[3]));
	assert_false(lev_pool_ask(p, &who[4]));
	assert_int_equal(lev_pool_in_flight(p), 2);
	assert_int_equal(lev_pool_queued(p), 3);
	assert_null(lev_pool_next(p));		/* no room yet */
	lev_pool_leave(p, &who[3]);		/* gone while queued */
	lev_pool_leave(p, &who[1]);
	assert_ptr_equal(lev_pool_next(p), &who[2]);
	assert_null(lev_pool_next(p));
	lev_pool_leave(p, &who[0]);
	assert_ptr_equal(lev_pool_next(p), &who[4]);
	assert_int_equal(lev_pool_peak(p), 2);
	lev_pool_leave(p, &who[9]);		/* never asked: nothing */
	assert_int_equal(lev_pool_in_flight(p), 2);
	lev_pool_free(p);
}

/* benign twin: no limit grants everyone at once */
static void test_unlimited(void **state)
{
	struct lev_pool *p = lev_pool_new(0);

	for (int i = 0; i < 40; i++)
		assert_true(lev_pool_ask(p, &who[i]));
	assert_int_equal(lev_pool_in_flight(p), 40);
	assert_int_equal(lev_pool_queued(p), 0);
	lev_pool_free(p);
}

/* a wider limit (a reload) lets the queue on, in order */
static void test_set_max(void **state)
{
	struct lev_pool *p = lev_pool_new(1);

	assert_true(lev_pool_ask(p, &who[0]));
	assert_false(lev_pool_ask(p, &who[1]));
	assert_false(lev_pool_ask(p, &who[2]));
	lev_pool_set_max(p, 3);
	assert_ptr_equal(lev_pool_next(p), &who[1]);
	assert_ptr_equal(lev_pool_next(p), &who[2]);
	assert_null(lev_pool_next(p));
	lev_pool_free(p);
}

/* generated: asks and leaves at random, against a model */
static void test_model(void **state)
{
	srand(31);
	for (int round = 0; round < 500; round++) {
		size_t max = 1 + (size_t)(rand() % 5);
		struct lev_pool *p = lev_pool_new(max);
		int state_of[64] = { 0 };	/* 0 idle, 1 queued, 2 held */
		int queue[64 * 64], qh = 0, qt = 0;
		size_t held = 0;

		for (int step = 0; step < 300; step++) {
			int i = rand() % 64;

			if (state_of[i] == 0) {
				bool now, want;

				while (qh < qt && queue[qh] < 0)
					qh++;
				want = held < max && qh == qt;
				now = lev_pool_ask(p, &who[i]);

				assert_int_equal(now, want);
				if (now) {
					state_of[i] = 2;
					held++;
				} else {
					state_of[i] = 1;
					queue[qt++] = i;
				}
			} else {
				if (state_of[i] == 2)
					held--;
				for (int k = qh; k < qt; k++)
					if (queue[k] == i)
						queue[k] = -1;
				state_of[i] = 0;
				lev_pool_leave(p, &who[i]);
				for (const void *g; (g = lev_pool_next(p));) {
					while (queue[qh] < 0)
						qh++;
					assert_ptr_equal(g, &who[queue[qh]]);
					state_of[queue[qh++]] = 2;
					held++;
				}
			}
			assert_true(held <= max);
			assert_int_equal(lev_pool_in_flight(p), held);
		}
		assert_true(lev_pool_peak(p) <= max);
		lev_pool_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_unlimited),
		cmocka_unit_test(test_set_max),
		cmocka_unit_test(test_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
