/*
 * zygote.h - the template process every run's worker is forked from.
 *
 * The daemon starts one `lev __worker --zygote` (exec'd with an empty
 * environment, LD_BIND_NOW=1 and nothing of the daemon's: no run, no
 * secret, no socket but its own link) before it starts any run.  For each
 * run it sends the zygote the run's end of a socketpair, the run's
 * environment and its RLIMIT_DATA; the zygote forks a child with
 * CLONE_PARENT, so the worker is the daemon's child as an exec'd one is
 * (reaped, killed and PR_SET_PDEATHSIG'd as before), and answers its pid.
 * The child takes the run's link as LEV_WORKER_FD, the run's environment
 * as its own, and goes on as `lev __worker` would.
 *
 * Still one process per run; what the workers share copy-on-write is what
 * the zygote made before any run: the libraries' relocated pages, lev's
 * own data and the loader's heap (about 0.2 MiB a run that each exec'd
 * worker wrote privately).  The workers share the zygote's address layout
 * and stack-protector canary (as Android's apps share theirs): ASLR and the
 * canary separate a worker from the daemon and from other programs, not
 * from its sibling workers.
 *
 * Nothing here prints.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "liblev/base/error.h"

/* The flag `lev __worker` takes to serve as the zygote. */
#define LEV_ZYGOTE_FLAG "--zygote"

/*
 * The zygote's loop on CTL (its link to the daemon): 1 in a new worker
 * (LEV_WORKER_FD is the run's link, the environment the run's; go on as a
 * worker), 0 in the zygote once the daemon closed the link, or < 0.
 */
int lev_zygote_serve(int ctl, struct lev_err *err);

/*
 * The daemon's side: a worker for the run whose link is RUN_FD (still the
 * caller's to close), with ENV (NULL-terminated "NAME=VALUE") and
 * RLIMIT_DATA DATA_LIMIT (0: none).  The worker's pid, or < 0 (the zygote
 * is gone or refused: start the worker another way).
 */
pid_t lev_zygote_spawn(int ctl, int run_fd, char *const *env, uint64_t data_limit,
		       struct lev_err *err);
