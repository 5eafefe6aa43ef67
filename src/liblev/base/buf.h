/*
 * buf.h - the one growable string buffer of liblev.
 *
 * Invariants (git strbuf): after LEV_BUF_INIT or lev_buf_init(), `buf` is
 * never NULL and is always NUL-terminated; `len` excludes the terminator.
 * Every buffer has a mandatory `max` (curl dynbuf): an append that would make
 * `len` exceed `max` fails with -E2BIG and leaves the buffer unchanged.
 * lev_buf_detach() is the only way to take ownership of the bytes; the
 * buffer is reset and may be reused.  lev_buf_release() frees the contents.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

struct lev_buf {
	char *buf;
	size_t len;
	size_t alloc;	/* 0 while buf points at the shared empty string */
	size_t max;
};

extern char lev_buf_empty[];

/* 1 GiB: the default cap for buffers nobody bounded more tightly. */
#define LEV_BUF_DEFAULT_MAX ((size_t)1 << 30)

#define LEV_BUF_INIT { lev_buf_empty, 0, 0, LEV_BUF_DEFAULT_MAX }
#define LEV_BUF_INIT_MAX(m) { lev_buf_empty, 0, 0, (m) }

void lev_buf_init(struct lev_buf *b, size_t max);
void lev_buf_release(struct lev_buf *b);
/* Return the bytes (caller frees); the buffer is left empty. */
char *lev_buf_detach(struct lev_buf *b, size_t *len_out);
void lev_buf_reset(struct lev_buf *b);

/* Each append returns 0, or -E2BIG when it would pass b->max. */
int lev_buf_add(struct lev_buf *b, const void *data, size_t len);
int lev_buf_adds(struct lev_buf *b, const char *s);
int lev_buf_addch(struct lev_buf *b, char c);
int lev_buf_addf(struct lev_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int lev_buf_vaddf(struct lev_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Ensure room for EXTRA more bytes without changing len. */
int lev_buf_grow(struct lev_buf *b, size_t extra);
/* Shorten to LEN bytes (LEN <= b->len). */
void lev_buf_truncate(struct lev_buf *b, size_t len);
/* Append S as a JSON string literal, quotes included. */
int lev_buf_add_json_str(struct lev_buf *b, const char *s, size_t len);
/*
 * The same for text that may not be valid UTF-8 (a file, a model's
 * answer): each byte that does not start a well-formed character is
 * written as \ufffd.  With ASCII, every non-ASCII character is written as
 * \uXXXX (a surrogate pair past U+FFFF), as jansson's JSON_ENSURE_ASCII
 * does; without, it is copied.
 */
int lev_buf_add_json_text(struct lev_buf *b, const char *s, size_t len, bool ascii);

/*
 * Append V as json_dumps(V, JSON_COMPACT | JSON_ENSURE_ASCII) writes it,
 * byte for byte, without jansson's per-byte callbacks.  False (B as it
 * was) for what it does not write itself - a real number, invalid UTF-8,
 * nesting deeper than 64 - and the caller uses json_dumps().
 */
bool lev_buf_add_json(struct lev_buf *b, const json_t *v);

/*
 * The one UTF-8 sanitizer: append the LEN bytes at S to B as valid UTF-8,
 * each byte that does not start a valid sequence (and, with nul_bad, each
 * NUL) written as U+FFFD.  *REPLACED (may be NULL) gets the number of bytes
 * replaced.  With B NULL it only counts.  Returns 0, or -ENOSPC when B's cap
 * is reached.
 */
int lev_buf_add_utf8(struct lev_buf *b, const void *s, size_t len, bool nul_bad, size_t *replaced);

static inline void lev_buf_releasep(struct lev_buf *b)
{
	lev_buf_release(b);
}
#define _cleanup_buf_ __attribute__((cleanup(lev_buf_releasep)))
