/*
 * ratelimit.h - [rate_limits.PROVIDER] requests_per_minute and
 * tokens_per_minute: a sliding window of one minute, shared by every lev
 * process of the machine (the daemon's worker processes and foreground runs
 * alike) through one file per provider under the data root
 * (ratelimit/PROVIDER), read and written under flock().
 *
 * A request over the limit waits (it is queued, never failed) until the
 * window has room again.  Tokens are charged after the answer from the
 * provider's reported usage, so a request is let through while the minute's
 * tokens are under the limit (Leviath's client-side limiter does the same).
 *
 * Tests only: LEV_TEST_RATELIMIT_CLOCK=FILE makes the limiter's clock the
 * number of milliseconds FILE holds (re-read while waiting), so a test moves
 * time on instead of waiting for it.  Nothing here prints.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/conf/config.h"

/* The [rate_limits] entry for PROVIDER in CFG, or NULL when it has none. */
const struct lev_rate_limit *lev_ratelimit_find(const struct lev_config *cfg, const char *provider);

/*
 * Before a model request on PROVIDER under limit RL: wait until the window
 * lets it go, then count it.  CANCELLED(DATA) is asked while waiting: true
 * ends the wait with -ECANCELED.  Other errors (the state file): -errno.
 */
int lev_ratelimit_take(const struct lev_rate_limit *rl, bool (*cancelled)(void *), void *data,
		       struct lev_err *err);
/* After the answer: charge TOKENS (prompt + completion) to RL's minute. */
void lev_ratelimit_charge(const struct lev_rate_limit *rl, uint64_t tokens);
