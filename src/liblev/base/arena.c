/*
 * arena.c - the bump allocator of arena.h.
 */
#include <stdlib.h>
#include <string.h>

#include "liblev/base/arena.h"
#include "liblev/base/xalloc.h"

/* The first heap chunk; each later one doubles, up to CHUNK_MAX (bigger blocks get their own). */
#define CHUNK_MIN ((size_t)4096)
#define CHUNK_MAX ((size_t)1 << 20)

struct lev_arena_chunk {
	struct lev_arena_chunk *next;
	size_t size;		/* bytes of data */
	_Alignas(16) char data[];
};

void lev_arena_init(struct lev_arena *a, void *mem, size_t size)
{
	a->first = mem;
	a->first_size = mem ? size : 0;
	a->chunks = NULL;
	a->cur = a->first;
	a->end = a->first ? a->first + a->first_size : NULL;
}

static void free_chunks(struct lev_arena *a)
{
	while (a->chunks) {
		struct lev_arena_chunk *c = a->chunks;

		a->chunks = c->next;
		free(c);
	}
}

void lev_arena_reset(struct lev_arena *a)
{
	free_chunks(a);
	a->cur = a->first;
	a->end = a->first ? a->first + a->first_size : NULL;
}

void lev_arena_release(struct lev_arena *a)
{
	free_chunks(a);
	lev_arena_init(a, NULL, 0);
}

__attribute__((cold)) void *lev_arena_alloc_slow(struct lev_arena *a, size_t size)
{
	size_t want = CHUNK_MIN;
	struct lev_arena_chunk *c;

	if (!size)
		size = 1;
	if (a->cur) {
		uintptr_t p = ((uintptr_t)a->cur + LEV_ARENA_ALIGN - 1) &
			      ~(uintptr_t)(LEV_ARENA_ALIGN - 1);

		if (p <= (uintptr_t)a->end && size <= (uintptr_t)a->end - p) {
			a->cur = (char *)(p + size);
			return (void *)p;
		}
	}
	if (a->chunks)
		want = a->chunks->size < CHUNK_MAX ? a->chunks->size * 2 : CHUNK_MAX;
	if (want < size)
		want = size;
	if (want > SIZE_MAX - sizeof(*c))
		abort();
	c = xmalloc(sizeof(*c) + want);
	c->size = want;
	c->next = a->chunks;
	a->chunks = c;
	a->cur = c->data + size;
	a->end = c->data + want;
	return c->data;
}

void *lev_arena_grow(struct lev_arena *a, void *p, size_t old, size_t new)
{
	char *q;

	if (p && new <= old)
		return p;
	/* the newest block, with room after it: extend it where it is */
	if (p && (char *)p + old == a->cur && new - old <= (size_t)(a->end - a->cur)) {
		a->cur += new - old;
		return p;
	}
	q = lev_arena_alloc(a, new);
	if (old)
		memcpy(q, p, old);
	return q;
}

void *lev_arena_array(struct lev_arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		abort();
	return lev_arena_alloc(a, n * size);
}

char *lev_arena_strndup(struct lev_arena *a, const char *s, size_t len)
{
	char *d = lev_arena_alloc(a, len + 1);

	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

char *lev_arena_strdup(struct lev_arena *a, const char *s)
{
	return lev_arena_strndup(a, s, strlen(s));
}
