/*
 * xalloc.h - allocation that aborts on out-of-memory.
 *
 * Ordinary code never handles NULL from allocation.  Every size that an
 * attacker can influence is bounded before it reaches these functions, so
 * the abort cannot be triggered from input.
 */
#pragma once

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
/* Grow P to hold N elements of SIZE bytes, checking for overflow. */
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
void *xmemdup(const void *p, size_t n);
/* printf into a fresh heap string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
