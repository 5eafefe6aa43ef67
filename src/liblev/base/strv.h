/*
 * strv.h - NULL-terminated arrays of owned strings (systemd strv).
 *
 * A `char **` strv owns its strings and the array; lev_strv_free() frees
 * both, accepts NULL and returns NULL.  An empty list may be NULL.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

size_t lev_strv_len(char *const *v);
/* Append a copy of S; returns the (possibly moved) array. */
char **lev_strv_push(char **v, const char *s);
/* Append S itself, taking ownership of it. */
char **lev_strv_push_take(char **v, char *s);
bool lev_strv_contains(char *const *v, const char *s);
char **lev_strv_copy(char *const *v);
char **lev_strv_free(char **v);

static inline void lev_strv_freep(char ***p)
{
	lev_strv_free(*p);
}
/* A strv freed when it goes out of scope. */
#define _cleanup_strv_ __attribute__((cleanup(lev_strv_freep)))

/* The strings of the JSON array ARR, in order (other elements skipped); fresh, NULL when none. */
struct json_t;
char **lev_strv_from_json(const struct json_t *arr);
