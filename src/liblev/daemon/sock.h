/*
 * sock.h - the daemon's control socket and its lock.
 *
 *	<data root>/daemon.sock		the socket, 0600; the data root must be
 *					0700 (no bits for group or others)
 *	<data root>/daemon.lock		held (flock) by the running daemon; holds
 *					its pid
 *
 * A socket path longer than sun_path allows is refused with a message
 * naming it, never truncated.  Every accepted connection is checked with
 * SO_PEERCRED: a peer of another uid is refused by lev_sock_peer_ok().
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "liblev/base/error.h"

/* <data root>/daemon.sock and <data root>/daemon.lock (fresh strings). */
int lev_sock_path(char **out, struct lev_err *err);
int lev_sock_lock_path(char **out, struct lev_err *err);

/*
 * Take the daemon lock at LOCK_PATH (created 0600) and write our pid into
 * it.  *out is the fd that holds it (close it to let go).  -EBUSY with the
 * other daemon's pid in the message when one holds it.
 */
int lev_sock_lock(const char *lock_path, int *out, struct lev_err *err);

/* The pid written in LOCK_PATH when a process holds the lock; 0 when none does. */
pid_t lev_sock_lock_owner(const char *lock_path);

/*
 * Listen on PATH (the caller holds the lock, so a file left there is
 * stale and removed).  The directory must be owned by us with no access
 * for group or others.  *out is the listening fd (non-blocking, CLOEXEC).
 */
int lev_sock_listen(const char *path, int *out, struct lev_err *err);

/*
 * Whether the socket PATH can be trusted with what a client sends (API
 * keys among it): the data root (PATH's directory) is ours with no access
 * for group or others; every directory above it is ours or root's and
 * not writable by others unless sticky; PATH is a socket of ours, 0600.
 * -EPERM with one line saying which and why; -ENOENT when it is missing.
 */
int lev_sock_check_path(const char *path, struct lev_err *err);
/*
 * Connect to PATH after lev_sock_check_path(), and before anything is sent
 * check the peer (SO_PEERCRED): our uid or root, else -EPERM.  -ENOENT /
 * -ECONNREFUSED when no daemon answers.
 */
int lev_sock_connect(const char *path, int *out, struct lev_err *err);

/*
 * Connect to the unix socket PATH, nothing checked: the caller checks the
 * peer (lev_sock_peer_ok()) before it sends anything.
 */
int lev_sock_connect_any(const char *path, int *out, struct lev_err *err);

/*
 * True when FD's peer runs as our uid (SO_PEERCRED); *uid and *pid say who
 * it was either way (-1 when unknown).
 */
bool lev_sock_peer_ok(int fd, uid_t *uid, pid_t *pid);
