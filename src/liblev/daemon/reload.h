/*
 * reload.h - the daemon watches config.toml, policy.toml (lev's, and
 * Leviath's that runs merge in: policy.h) and the Lua rule files, and says
 * whether they are good.
 *
 * The watches are on the directories (inotify), so a file replaced by
 * rename, as editors save, is followed, and one created later is seen.
 * After a change the daemon checks the files as a run would load them
 * (lev_reload_check()): a file that does not parse is reported, FILE:LINE:COL
 * first, and the last good copy stays in force: the daemon keeps one of
 * config.toml, policy.toml and Leviath's policy.toml (as
 * leviath-policy.toml) in <data root>/daemon-good/, and a run
 * started while the file on disk is broken is handed those (see
 * lev_reload_good_paths()).  Nothing here prints.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/conf/config.h"

struct lev_reload;

/* Watch the files the data directory names (datadir.h). */
int lev_reload_open(struct lev_reload **out, struct lev_err *err);
/* NULL-safe; returns NULL. */
struct lev_reload *lev_reload_free(struct lev_reload *rl);

/*
 * Watch PATH too: the config a run was submitted with (LEVIATH_CONFIG_PATH)
 * when it is not the daemon's own; a change to it is a change (each run
 * reloads its own file).  A directory that does not exist is watched
 * through its nearest existing parent until it appears.
 */
void lev_reload_watch_config(struct lev_reload *rl, const char *path);
/* Whether PATH is the daemon's own config.toml. */
bool lev_reload_is_config(const struct lev_reload *rl, const char *path);

/* The inotify fd to poll (readable after a change). */
int lev_reload_fd(const struct lev_reload *rl);
/* Read what the fd holds; true when a watched file changed. */
bool lev_reload_pending(struct lev_reload *rl);

/*
 * Check the files now.  0 when every one is good (their copies are kept as
 * the last good ones); else the first problem, also kept for
 * lev_reload_error().
 */
int lev_reload_check(struct lev_reload *rl, struct lev_err *err);
/*
 * The last good config.toml's [limits] max_concurrent_inferences (0: none
 * set, or no good config yet): the daemon's inference pool (pool.h).
 */
uint64_t lev_reload_max_inferences(const struct lev_reload *rl);
/*
 * The last good config.toml's [webhook] and [security] allow_local_network
 * (Leviath's defaults and false while there was never a good config).
 */
void lev_reload_webhook(const struct lev_reload *rl, struct lev_webhook_conf *conf,
			bool *allow_local);
/* The problem the last check found, or NULL (borrowed). */
const char *lev_reload_error(const struct lev_reload *rl);
/*
 * While a file is broken: the last good copies to start new runs with
 * (borrowed; NULL when the file is good, or there was never a good copy).
 */
void lev_reload_good_paths(const struct lev_reload *rl, const char **config,
			   const char **policy, const char **leviath);
