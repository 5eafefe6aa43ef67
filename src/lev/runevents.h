/*
 * runevents.h - a run's events, read from its record for the commands that
 * report on a run without its daemon (lev stages, lev context).
 */
#pragma once

#include <jansson.h>

#include "lev/cmd.h"

/*
 * The events of run ID (<runs>/ID/events.jsonl, one JSON object a line) as
 * a new array in *out.  ID is a run id ([A-Za-z0-9_-], as lev makes them);
 * anything else, a missing record or an unreadable line fails with one line
 * printed and LEV_EXIT_FAIL returned; 0 on success.
 */
int lev_run_events(struct lev_ctx *ctx, const char *id, json_t **out);
/*
 * The events of the record directory DIRFD (its events.jsonl, opened
 * beneath it, never through a symlink) as a new array; NULL when it has
 * none or it cannot be read.
 */
json_t *lev_run_events_at(int dirfd);
