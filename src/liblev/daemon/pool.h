/*
 * pool.h - [limits] max_concurrent_inferences: at most MAX model requests at
 * once across the daemon, the rest queued in the order they asked
 * (Leviath's inference pool).
 *
 * A member is any pointer (the daemon's struct run); the pool never
 * dereferences it.  A worker asks before each model request ({"op":"infer"},
 * worker.h) and says when the answer came ({"op":"infer_done"}); the daemon
 * asks the pool and answers {"op":"infer_go"} to whoever it grants.
 * MAX 0: no limit (every ask is granted at once).  Nothing here prints.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct lev_pool;

struct lev_pool *lev_pool_new(size_t max);
/* NULL-safe; returns NULL. */
struct lev_pool *lev_pool_free(struct lev_pool *p);

/* WHO asks for a slot: true when granted now, false when queued (last). */
bool lev_pool_ask(struct lev_pool *p, const void *who);
/*
 * WHO leaves: its slot is given back, or it leaves the queue (its request
 * ended, or its worker is gone).  A WHO the pool does not hold: nothing.
 */
void lev_pool_leave(struct lev_pool *p, const void *who);
/* Change the limit (a reload); 0: none.  Held slots stay held. */
void lev_pool_set_max(struct lev_pool *p, size_t max);
/*
 * The first queued member a free slot now goes to (it holds the slot from
 * here), or NULL: call it after a leave or a new limit until it says NULL.
 */
const void *lev_pool_next(struct lev_pool *p);

size_t lev_pool_max(const struct lev_pool *p);
size_t lev_pool_in_flight(const struct lev_pool *p);
size_t lev_pool_queued(const struct lev_pool *p);
/* The most held at once since the pool was made. */
size_t lev_pool_peak(const struct lev_pool *p);
