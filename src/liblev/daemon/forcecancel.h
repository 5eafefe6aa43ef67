/*
 * forcecancel.h - `lev cancel --force` when no daemon answers: the run's
 * row in the daemon's store is written cancelled, so the next daemon does
 * not resume a run whose worker is gone.
 */
#pragma once

#include "liblev/base/error.h"

/*
 * Take the daemon lock (so no daemon starts meanwhile), and write run ID
 * cancelled in the store of this data root.  Refused (-EBUSY) when a
 * daemon holds the lock (it is there: ask it), -EALREADY when the run has
 * ended, -ENOENT when there is no such run, -ETXTBSY when the worker its
 * row names is still running (the daemon recovers or cancels it).
 */
int lev_force_cancel(const char *id, struct lev_err *err);
