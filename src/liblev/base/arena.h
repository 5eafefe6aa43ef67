/*
 * arena.h - a bump allocator for short-lived work: many small blocks,
 * freed all at once.
 *
 * Blocks come from the memory the caller gives lev_arena_init() (a buffer
 * on its stack, say) and, once that is used up, from heap chunks of
 * growing size.  A block is never freed on its own: lev_arena_reset()
 * forgets every block (and frees the heap chunks), lev_arena_release()
 * does the same for good.  The arena owns every block it hands out; a
 * pointer into it must not outlive the next reset.  Allocation aborts on
 * out-of-memory (xmalloc); callers bound their input first.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Every block starts at a multiple of this. */
#define LEV_ARENA_ALIGN ((size_t)16)

struct lev_arena_chunk;

struct lev_arena {
	char *cur, *end;		/* the free part of the current chunk */
	char *first;			/* the caller's memory (may be NULL) */
	size_t first_size;
	struct lev_arena_chunk *chunks;	/* heap chunks, newest first */
};

/* An empty arena that allocates from MEM (SIZE bytes, may be NULL/0) first. */
void lev_arena_init(struct lev_arena *a, void *mem, size_t size);
/* Forget every block; the caller's memory is reused, heap chunks freed. */
void lev_arena_reset(struct lev_arena *a);
void lev_arena_release(struct lev_arena *a);

void *lev_arena_alloc_slow(struct lev_arena *a, size_t size);

/* SIZE bytes (at least 1), aligned to LEV_ARENA_ALIGN, uninitialised. */
static inline void *lev_arena_alloc(struct lev_arena *a, size_t size)
{
	uintptr_t p = ((uintptr_t)a->cur + LEV_ARENA_ALIGN - 1) & ~(uintptr_t)(LEV_ARENA_ALIGN - 1);

	if (a->cur && size && size <= (uintptr_t)a->end - p && p <= (uintptr_t)a->end) {
		a->cur = (char *)(p + size);
		return (void *)p;
	}
	return lev_arena_alloc_slow(a, size);
}

/*
 * Grow the block P (OLD bytes, from this arena; NULL with OLD 0) to NEW
 * bytes, in place when it is the newest block and there is room, else by
 * copying into a new block.  Returns the block.
 */
void *lev_arena_grow(struct lev_arena *a, void *p, size_t old, size_t new);
/* N * SIZE bytes for an array, checking for overflow. */
void *lev_arena_array(struct lev_arena *a, size_t n, size_t size);
/* A NUL-terminated copy of the LEN bytes at S. */
char *lev_arena_strndup(struct lev_arena *a, const char *s, size_t len);
char *lev_arena_strdup(struct lev_arena *a, const char *s);
