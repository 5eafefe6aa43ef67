/*
 * util.h - small helpers shared across liblev: checked integer parsing,
 * bounded file reads, atomic file writes, directory creation.
 *
 * Strings returned through `char **out` are owned by the caller (free()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "liblev/base/error.h"

/* Parse a whole decimal string; no sign, no spaces, no trailing bytes. */
int lev_parse_u64(const char *s, uint64_t *out);

static inline bool lev_streq(const char *a, const char *b)
{
	return a && b && __builtin_strcmp(a, b) == 0;
}

bool lev_startswith(const char *s, const char *prefix);
bool lev_endswith(const char *s, const char *suffix);

/*
 * Read the whole regular file PATH (at most MAX bytes, else -EFBIG) into a
 * fresh NUL-terminated buffer.  *len_out (optional) gets the size.
 */
int lev_read_file(const char *path, size_t max, char **out, size_t *len_out, struct lev_err *err);

/* Same, from an open fd (not closed). */
int lev_read_fd(int fd, const char *name, size_t max, char **out, size_t *len_out,
		struct lev_err *err);

/*
 * Replace PATH with DATA atomically: write a temporary file in the same
 * directory with MODE, fsync it, rename it over PATH, fsync the directory.
 * On failure PATH is untouched and the temporary file is removed.
 */
int lev_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
			  struct lev_err *err);

/* mkdir -p with MODE for every directory created; existing ones are kept. */
int lev_mkdir_p(const char *path, mode_t mode, struct lev_err *err);

/* Remove a directory tree (never follows symlinks). */
int lev_rm_rf(const char *path, struct lev_err *err);

/* The user's home directory ($HOME, else the password database). */
int lev_home_dir(char **out, struct lev_err *err);

/* Join A and B with exactly one '/' between them. */
char *lev_path_join(const char *a, const char *b);

/* True when PATH is ROOT or lies beneath it, by whole components ("/" holds every path). */
bool lev_path_under(const char *path, const char *root);

/*
 * P made absolute against DIR (when relative) and cleaned by its words
 * alone: "." and empty components dropped, ".." removes the one before
 * (never above "/").  No symlink is looked at: this is what the path says,
 * not where it leads (compare with the resolved path to see whether a
 * symlink took it elsewhere).
 */
char *lev_path_lexical(const char *dir, const char *p);

/*
 * write(2) to a pipe whose reader may be gone (a stdio MCP server that has
 * exited, a sandbox child that died before lev let it go) without the
 * SIGPIPE that would end whichever lev process writes (lev check, lev mcp
 * test, a run): the signal is held for this thread during the write and a
 * SIGPIPE it raised is taken back; the caller sees EPIPE.  Every write lev
 * makes to such a pipe goes through it, so no command needs a SIGPIPE
 * handler of its own for them.
 */
ssize_t lev_write_nosig(int fd, const void *p, size_t len);

/* Write all of BUF to FD, retrying on EINTR and short writes. */
int lev_write_all(int fd, const void *buf, size_t len);

/*
 * Decode the UTF-8 character at S (N > 0 bytes available).  Returns its
 * length (1 to 4) and sets *CP, or 0 when the bytes do not start a
 * well-formed character (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF, no sequence cut short).  ASCII, NUL included,
 * is length 1.  The one UTF-8 decoder of liblev: callers decide what an
 * invalid byte means for them.
 */
size_t lev_utf8_decode(const void *s, size_t n, uint32_t *cp);

/* The monotonic clock (CLOCK_MONOTONIC) in nanoseconds / milliseconds: the one liblev times with. */
uint64_t lev_monotonic_ns(void);
/* The same from CLOCK_MONOTONIC_COARSE: cheaper, a tick (a few ms) coarse. */
uint64_t lev_monotonic_coarse_ns(void);
static inline uint64_t lev_monotonic_ms(void)
{
	return lev_monotonic_ns() / 1000000;
}
