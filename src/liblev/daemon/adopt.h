/*
 * adopt.h - a new daemon takes over the workers of the one that died.
 *
 * A worker outlives its daemon (no PR_SET_PDEATHSIG): when its link ends
 * and its parent is gone, it listens on <data root>/adopt/<run id> (the
 * daemon's private directory, 0700) and waits for a new daemon
 * (worker.c w_adopt()).  The new daemon finds each run's worker by the pid
 * its record names and takes it over only when that process is the thing
 * itself: a pidfd held from the first look (a pid reused meanwhile is
 * seen as exited), the exact executable the daemon runs (/proc/PID/exe is
 * the same file), the socket's peer that very process of our uid
 * (SO_PEERCRED), and, before the worker takes a single request, the
 * run's secret that only lev.db and the worker hold.  A worker that
 * cannot be adopted is resumed from its record.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* A fresh secret (32 hex digits, malloc'ed). */
char *lev_adopt_secret_new(void);

/* DIR/ID (malloc'ed), or NULL when a unix socket cannot be named so. */
char *lev_adopt_path(const char *dir, const char *id);

/*
 * Take over worker PID, which runs EXE (a path that stat() follows to the
 * daemon's own binary), at PATH, proving SECRET.  0 with *fd (the link;
 * the hello is sent, the worker's "adopted" frame comes first on it) and
 * *pidfd; -ESRCH when PID is gone, -ENOEXEC when it does not run EXE (not
 * ours), -EAGAIN when it is ours but does not listen (yet), -EPERM when the
 * socket's peer is another process.
 */
int lev_adopt_connect(pid_t pid, const char *exe, const char *path, const char *secret, int *fd,
		      int *pidfd);

/* Whether the process PIDFD refers to has ended. */
bool lev_adopt_exited(int pidfd);

/* Signal SIG to the process PIDFD refers to (never to a pid reused since). */
int lev_adopt_signal(int pidfd, int sig);
