/*
 * fsdirs.h - GET /api/fs/dirs: one level of subdirectories for a spawn's
 * workdir picker, confined beneath a root (the user's home).
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

/*
 * The subdirectories of PATH (absolute, or relative to ROOT; NULL or "":
 * ROOT itself), opened beneath ROOT with lev_confine_open() (openat2
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): a path out of ROOT, ".." or a
 * symlink out is 403.  Neither lev's own files (ownfiles.h) nor a credential
 * store the sandboxes mask (~/.ssh, ~/.gnupg ...) is opened or listed (403);
 * dot-names only with HIDDEN.  The HTTP status and *reply (a new reference).
 */
unsigned lev_fs_dirs(const char *root, const char *path, bool hidden, json_t **reply);

/* ITEMS (consumed), objects with a "name", sorted by it: a new array. */
json_t *lev_fs_sorted_by_name(json_t *items);
