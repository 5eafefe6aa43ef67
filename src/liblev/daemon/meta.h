/*
 * meta.h - the files Leviath's harnesses read beside the daemon's own
 * state: each run's <runs>/<id>/meta.json (Leviath's fields, rewritten
 * whole as the run goes) and <data root>/daemon.pid.
 *
 * lev.db stays the daemon's record; these are views of it, written
 * atomically (a temporary file renamed over the old one, never fsynced:
 * they are rewritten from lev.db on the next change), so a reader polling
 * them never sees half a file.
 */
#pragma once

#include <jansson.h>

#include "liblev/base/error.h"

/*
 * Leviath's word for lev's run status S (lev ps's: "idle", "active",
 * "paused", "waiting: REASON", "complete", "error", "cancelled"), and in
 * *reason (may be NULL) the wait reason or NULL: "starting", "running",
 * "paused", "waiting_input", "complete", "error", "cancelled".  Static.
 */
const char *lev_meta_status(const char *s, const char **reason, size_t *reason_len);

/* Leviath's run object for the daemon's run document DOC (a new reference). */
json_t *lev_meta_of(const json_t *doc);

/*
 * Write DOC's meta.json into RUNS_DIR/<its id>/, when that directory
 * exists (lev_meta_submit() makes it; a run whose directory was removed
 * gets none): 0, or a negative errno.
 */
int lev_meta_write(const char *runs_dir, const json_t *doc, struct lev_err *err);

/*
 * At a run's submission: make RUNS_DIR/<DOC's id>/ (the worker's run
 * record goes into it later) and write its first meta.json, so a harness
 * that reads meta.json as soon as lev run --json returns finds it
 * ("starting").  0, or a negative errno.
 */
int lev_meta_submit(const char *runs_dir, const json_t *doc, struct lev_err *err);

/* Write this process's pid to PATH atomically. */
int lev_meta_pidfile(const char *path, struct lev_err *err);
