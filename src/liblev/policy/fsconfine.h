/*
 * fsconfine.h - open files without leaving a directory, and learn the real
 * path of what was opened.  The TOCTOU-proof half of the file tools.
 *
 * Nothing here checks a path string and then opens it.  Confinement is done
 * by the kernel while it resolves the path:
 *
 *   openat2(root_fd, path, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
 *	refuses "..", absolute paths, symlinks that leave the root and
 *	/proc magic links, atomically.  An absolute symlink whose target is
 *	inside the root (the kernel refuses every absolute symlink under
 *	RESOLVE_BENEATH) is then retried with the walk below, which is
 *	exactly as strict.
 *
 *   the walk (kernels without openat2, or LEV_CONFINE_WALK)
 *	opens one component at a time with O_PATH | O_NOFOLLOW relative to
 *	the directory fd it already holds, keeps the fds of the directories
 *	it went through so ".." pops back to the fd it came from (never the
 *	kernel's "..", which a concurrent rename could move outside), follows
 *	symlinks itself with readlinkat() (at most 40 hops; a relative target
 *	continues from the symlink's directory fd, an absolute one only when
 *	it names a path inside the root), and refuses any symlink that lives
 *	on procfs (magic links).  Every step is relative to an fd that is
 *	already inside the root, so no swap of any component at any moment
 *	can move the walk outside.
 *
 * For a read outside the workdir the caller opens the absolute path with
 * lev_confine_open_abs() (O_PATH: no side effect on FIFOs or devices), reads
 * the real path back with lev_confine_fd_path(), decides on it, and only then
 * upgrades the same object with lev_confine_reopen().  The bytes read always
 * come from the object the decision was made about.
 *
 * All functions return 0 or a negative errno, and set ERR (which may be
 * NULL).  The errnos callers branch on: -EXDEV (the path leaves the root),
 * -ELOOP (a magic link, or too many symlinks), -ENOENT, -ENOTDIR,
 * -ENAMETOOLONG, -ESTALE (the object changed while it was being checked),
 * -EAGAIN (the walk saw a component swapped under it again and again and
 * gave up: under a racing attacker the answer is a refusal, never a guess).
 * Every fd returned has O_CLOEXEC.
 */
#pragma once

#include <stdbool.h>

#include "liblev/base/error.h"

enum lev_confine_mode {
	LEV_CONFINE_AUTO,	/* openat2 when the kernel has it, else the walk */
	LEV_CONFINE_WALK,	/* always the walk (tests; must be exactly as safe) */
};

/* Hop limit for symlinks, as the kernel's. */
#define LEV_CONFINE_MAX_SYMLINKS 40
/* Directories the walk may be inside at once. */
#define LEV_CONFINE_MAX_DEPTH 256

/* True when the running kernel answers openat2 (probed once, then cached). */
bool lev_confine_have_openat2(void);

/*
 * Open PATH beneath the directory ROOT_FD, never leaving it.  PATH must be
 * relative (an absolute PATH is -EXDEV: strip the root's prefix first);
 * "" and "." name the root itself.  ROOT_REAL, the real path of ROOT_FD, may
 * be NULL; when given, an absolute symlink whose target lies under it is
 * followed inside the root.  FLAGS are open(2) flags (O_RDONLY, O_PATH,
 * O_DIRECTORY, O_NONBLOCK ...); O_CREAT and O_TMPFILE are refused with
 * -EINVAL; O_CLOEXEC and O_NOCTTY are added.  On success *FD_OUT is the new fd.
 */
int lev_confine_open(int root_fd, const char *root_real, const char *path, int flags,
		     enum lev_confine_mode mode, int *fd_out, struct lev_err *err);

/*
 * Open the absolute PATH with ordinary symlink resolution from "/", except
 * that no /proc magic link is ever followed (-ELOOP).  Meant for O_PATH
 * opens of paths outside the workdir, before the decision.
 */
int lev_confine_open_abs(const char *path, int flags, enum lev_confine_mode mode, int *fd_out,
			 struct lev_err *err);

/*
 * The real path of FD (caller frees *OUT), read back from /proc/self/fd and
 * verified: the path must name the very object FD holds (same st_dev and
 * st_ino), else -ESTALE.  A deleted file, or an fd with no path (pipe,
 * socket), is -ESTALE or -ENOENT.
 */
int lev_confine_fd_path(int fd, char **out, struct lev_err *err);

/*
 * Open the object FD holds (typically an O_PATH fd) again with FLAGS,
 * without resolving any name: a directory through openat(FD, "."), anything
 * else through /proc/self/fd/FD.  The new fd is checked to be the same
 * object (-ESTALE otherwise).
 */
int lev_confine_reopen(int fd, int flags, int *fd_out, struct lev_err *err);
