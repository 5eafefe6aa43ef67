/*
 * effective.h - one effective policy per run.
 *
 * Everything that decides what a run may do, as one object: the config's
 * policy fields (tool permissions and the per-agent tables, read grants,
 * the taint switch, shell_env, the sandbox, the limits) and policy.toml
 * merged with Leviath's (the allowlist, the overrides, [integrity] and
 * [[sources]]).  A run starts from the files (lev_effective_load()); a
 * reload replaces it whole with the tighter of old and new
 * (lev_effective_tighten(), tighter.h field by field), so an edit can only
 * ever tighten a running run.
 *
 * The snapshot (lev_effective_snapshot()) is what the daemon keeps in
 * lev.db for the run: the config's policy fields as they stand (never
 * a provider, key or server: nothing secret) and the text of every
 * distinct policy.toml / Leviath policy.toml pair the run has seen (at most
 * LEV_EFFECTIVE_GENS_MAX; past that, or past what the daemon's frame
 * carries, the snapshot says "incomplete" and a resume refuses).  A run resumed after a crash loads the files as
 * they are now and takes the tighter of that and its snapshot
 * (lev_effective_restore()), so a config loosened while the daemon was
 * down does not reach it.
 */
#pragma once

#include <jansson.h>

#include "liblev/base/error.h"
#include "liblev/conf/config.h"
#include "liblev/policy/policy.h"

#define LEV_EFFECTIVE_GENS_MAX 32

/* The files a run's policy comes from; NULL: none (Leviath's) or the data root's. */
struct lev_effective_paths {
	const char *config;
	const char *policy;
	const char *leviath;
};

struct lev_effective {
	struct lev_config cfg;	/* the run's config (a run borrows it) */
	struct lev_policy *pol;	/* ours merged with Leviath's */
	json_t *gens;		/* [{"policy": text|null, "leviath": text|null}] seen */
	bool gens_full;		/* more than LEV_EFFECTIVE_GENS_MAX: a resume refuses */
};

/* Load the files P names; on failure E is untouched. */
int lev_effective_load(struct lev_effective *e, const struct lev_effective_paths *p,
		       struct lev_err *err);
void lev_effective_release(struct lev_effective *e);

/* RUN becomes the tighter of RUN and NEXT (borrowed), config and policy. */
void lev_effective_tighten(struct lev_effective *run, const struct lev_effective *next);

/* The snapshot lev.db keeps (a new reference). */
json_t *lev_effective_snapshot(const struct lev_effective *e);

/*
 * E (loaded from the files now) becomes the tighter of itself and the
 * snapshot SNAP.  A snapshot that cannot be read, or that lost generations,
 * is an error: the run must not go on looser than it was.
 */
int lev_effective_restore(struct lev_effective *e, const json_t *snap, struct lev_err *err);
