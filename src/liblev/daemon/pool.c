/*
 * pool.c - the daemon's inference pool (pool.h): the holders in an array,
 * the waiting in a FIFO ring.
 */
#include <stdlib.h>

#include "liblev/base/xalloc.h"
#include "liblev/daemon/pool.h"

struct lev_pool {
	size_t max;
	const void **held;	/* the members holding a slot */
	size_t n_held, cap_held;
	const void **ring;	/* the queue: ring[(head + i) % cap_ring], i < n_queued */
	size_t head, n_queued, cap_ring;
	size_t peak;
};

struct lev_pool *lev_pool_new(size_t max)
{
	struct lev_pool *p = xcalloc(1, sizeof(*p));

	p->max = max;
	return p;
}

struct lev_pool *lev_pool_free(struct lev_pool *p)
{
	if (p) {
		free(p->held);
		free(p->ring);
		free(p);
	}
	return NULL;
}

static void hold(struct lev_pool *p, const void *who)
{
	if (p->n_held == p->cap_held) {
		p->cap_held = p->cap_held ? p->cap_held * 2 : 16;
		p->held = xreallocarray(p->held, p->cap_held, sizeof(*p->held));
	}
	p->held[p->n_held++] = who;
	if (p->n_held > p->peak)
		p->peak = p->n_held;
}

static bool has_room(const struct lev_pool *p)
{
	return p->max == 0 || p->n_held < p->max;
}

static void enqueue(struct lev_pool *p, const void *who)
{
	if (p->n_queued == p->cap_ring) {
		size_t cap = p->cap_ring ? p->cap_ring * 2 : 16;
		const void **ring = xcalloc(cap, sizeof(*ring));

		for (size_t i = 0; i < p->n_queued; i++)
			ring[i] = p->ring[(p->head + i) % p->cap_ring];
		free(p->ring);
		p->ring = ring;
		p->cap_ring = cap;
		p->head = 0;
	}
	p->ring[(p->head + p->n_queued++) % p->cap_ring] = who;
}

bool lev_pool_ask(struct lev_pool *p, const void *who)
{
	/* nobody jumps the queue: a free slot while others wait is theirs */
	if (has_room(p) && p->n_queued == 0) {
		hold(p, who);
		return true;
	}
	enqueue(p, who);
	return false;
}

void lev_pool_leave(struct lev_pool *p, const void *who)
{
	size_t i;

	for (i = 0; i < p->n_held; i++) {
		if (p->held[i] == who) {
			p->held[i] = p->held[--p->n_held];
			return;
		}
	}
	for (i = 0; i < p->n_queued; i++) {
		if (p->ring[(p->head + i) % p->cap_ring] != who)
			continue;
		/* close the gap, keeping the order */
		for (; i + 1 < p->n_queued; i++)
			p->ring[(p->head + i) % p->cap_ring] =
				p->ring[(p->head + i + 1) % p->cap_ring];
		p->n_queued--;
		return;
	}
}

void lev_pool_set_max(struct lev_pool *p, size_t max)
{
	p->max = max;
}

const void *lev_pool_next(struct lev_pool *p)
{
	const void *who;

	if (!p->n_queued || !has_room(p))
		return NULL;
	who = p->ring[p->head];
	p->head = (p->head + 1) % p->cap_ring;
	p->n_queued--;
	hold(p, who);
	return who;
}

size_t lev_pool_max(const struct lev_pool *p)
{
	return p->max;
}

size_t lev_pool_in_flight(const struct lev_pool *p)
{
	return p->n_held;
}

size_t lev_pool_queued(const struct lev_pool *p)
{
	return p->n_queued;
}

size_t lev_pool_peak(const struct lev_pool *p)
{
	return p->peak;
}
