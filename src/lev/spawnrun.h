/*
 * spawnrun.h - start a run in the daemon as `lev run AGENT --detach` starts
 * it, for the front ends that start runs (lev agent-client, lev dash): the
 * same command, so the same checks, workdir rules and submit request.
 */
#pragma once

#include <stdbool.h>

#include "liblev/base/error.h"

/*
 * `lev run AGENT --workdir WORKDIR --detach --json --task @/dev/stdin
 * [--yolo]`, TASK on its stdin, in a session of its own (no terminal to
 * ask on), its stderr kept from the caller's screen: 0 and *run (owned),
 * the id it printed; else an error in ERR carrying the last line lev run
 * printed on stderr.
 */
int lev_spawn_detached(const char *agent, const char *workdir, const char *task, bool yolo,
		       char **run, struct lev_err *err);
