#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "liblev/base/secrets.h"
#include "liblev/base/xalloc.h"

#define WIN LEV_SECRET_MIN
#define MARK "[redacted]"
#define MARK_LEN (sizeof(MARK) - 1)

/* A set of 8-byte windows: open addressing, 0 is an empty slot (a window
 * of a C string never is 0). */
struct wintab {
	uint64_t *slot;
	size_t cap;		/* a power of two, or 0 */
	size_t used;
	bool mapped;		/* slot is an mmap()ed region (the process-wide set) */
};

static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wintab set;
static size_t set_values;

static size_t win_hash(uint64_t w, size_t cap)
{
	return (size_t)((w * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static bool tab_has(const struct wintab *t, uint64_t w)
{
	if (!t->cap)
		return false;
	for (size_t i = win_hash(w, t->cap);; i = (i + 1) & (t->cap - 1)) {
		if (t->slot[i] == w)
			return true;
		if (!t->slot[i])
			return false;
	}
}

static void tab_put(struct wintab *t, uint64_t w)
{
	size_t i = win_hash(w, t->cap);

	while (t->slot[i] && t->slot[i] != w)
		i = (i + 1) & (t->cap - 1);
	if (!t->slot[i]) {
		t->slot[i] = w;
		t->used++;
	}
}

static uint64_t *slots_new(size_t cap, bool mapped)
{
	void *p;

	if (!mapped)
		return xcalloc(cap, sizeof(uint64_t));
	p = mmap(NULL, cap * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		abort();	/* out of memory, as xmalloc */
	/* a child that does not share our memory sees zeros; no core holds it */
	(void)madvise(p, cap * sizeof(uint64_t), MADV_WIPEONFORK);
	(void)madvise(p, cap * sizeof(uint64_t), MADV_DONTDUMP);
	return p;
}

static void slots_free(uint64_t *s, size_t cap, bool mapped)
{
	if (!s)
		return;
	explicit_bzero(s, cap * sizeof(uint64_t));
	if (mapped)
		munmap(s, cap * sizeof(uint64_t));
	else
		free(s);
}

/* Room for N more windows at a load of at most a half. */
static void tab_reserve(struct wintab *t, size_t n)
{
	struct wintab old = *t;
	size_t cap = t->cap ? t->cap : 64;

	while ((t->used + n) * 2 > cap)
		cap *= 2;
	if (cap == t->cap)
		return;
	t->slot = slots_new(cap, t->mapped);
	t->cap = cap;
	t->used = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.slot[i])
			tab_put(t, old.slot[i]);
	slots_free(old.slot, old.cap, old.mapped);
}

static void tab_add(struct wintab *t, const char *value)
{
	size_t n = strlen(value);

	tab_reserve(t, n - WIN + 1);
	for (size_t i = 0; i + WIN <= n; i++) {
		uint64_t w;

		memcpy(&w, value + i, WIN);
		tab_put(t, w);
	}
}

static bool token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '*' || c == '+' || c == '/' || c == '=';
}

static bool hit_at(const struct wintab *t, const char *s, size_t at, size_t len)
{
	uint64_t w;

	if (at + WIN > len)
		return false;
	memcpy(&w, s + at, WIN);
	return tab_has(t, w);
}

/* The first window of S at or after FROM that T holds, or LEN. */
static size_t next_hit(const struct wintab *t, const char *s, size_t from, size_t len)
{
	while (from + WIN <= len && !hit_at(t, s, from, len))
		from++;
	return from + WIN <= len ? from : len;
}

/*
 * The region around the window at H: every overlapping or adjacent window
 * T holds, widened to the tokens at its ends, until nothing widens it;
 * never before LOW.
 */
static void region(const struct wintab *t, const char *s, size_t len, size_t low, size_t h,
		   size_t *start_out, size_t *end_out)
{
	size_t start = h, end = h + WIN, seen = h + 1;
	bool grew = true;

	while (grew) {
		grew = false;
		for (; seen <= end && seen + WIN <= len; seen++)
			if (hit_at(t, s, seen, len) && seen + WIN > end) {
				end = seen + WIN;
				grew = true;
			}
		while (start > low && token_char(s[start - 1]) && token_char(s[start]))
			start--;
		while (end < len && token_char(s[end]) && token_char(s[end - 1])) {
			end++;
			grew = true;
		}
	}
	*start_out = start;
	*end_out = end;
}

/* Redact the LEN bytes at S in place; their new length (S is not terminated). */
static size_t redact_buf(char *s, size_t len, const struct wintab *t)
{
	size_t r = 0, w = 0;

	if (!t->used)
		return len;
	while (r < len) {
		size_t h = next_hit(t, s, r, len), start, end, n;

		if (h == len) {
			memmove(s + w, s + r, len - r);
			w += len - r;
			break;
		}
		region(t, s, len, r, h, &start, &end);
		memmove(s + w, s + r, start - r);
		w += start - r;
		n = end - start;
		if (n >= MARK_LEN) {
			memcpy(s + w, MARK, MARK_LEN);
			w += MARK_LEN;
		} else {
			memset(s + w, '*', n);
			w += n;
		}
		r = end;
	}
	return w;
}

static void redact_tab(char *s, const struct wintab *t)
{
	if (s)
		s[redact_buf(s, strlen(s), t)] = '\0';
}

void lev_redact_secret(char *s, const char *secret)
{
	struct wintab t = { 0 };

	if (!s || !secret || strlen(secret) < WIN)
		return;
	tab_add(&t, secret);
	redact_tab(s, &t);
	slots_free(t.slot, t.cap, false);
}

/* VALUE as a JSON string's contents spell it, when that differs (a '"' or '\\'), or NULL. */
static char *json_spelling(const char *value)
{
	size_t n = strlen(value), k = 0;
	char *e;

	if (!strpbrk(value, "\"\\"))
		return NULL;
	e = xmalloc(2 * n + 1);
	for (size_t i = 0; i < n; i++) {
		if (value[i] == '"' || value[i] == '\\')
			e[k++] = '\\';
		e[k++] = value[i];
	}
	e[k] = '\0';
	return e;
}

void lev_secrets_add(const char *value)
{
	char *esc;

	if (!value || strlen(value) < WIN)
		return;
	esc = json_spelling(value);
	pthread_mutex_lock(&set_lock);
	set.mapped = true;
	tab_add(&set, value);
	if (esc)	/* as a line of JSON holds it */
		tab_add(&set, esc);
	set_values++;
	pthread_mutex_unlock(&set_lock);
	if (esc) {
		explicit_bzero(esc, strlen(esc));
		free(esc);
	}
}

size_t lev_secrets_count(void)
{
	size_t n;

	pthread_mutex_lock(&set_lock);
	n = set_values;
	pthread_mutex_unlock(&set_lock);
	return n;
}

void lev_secrets_redact(char *s)
{
	pthread_mutex_lock(&set_lock);
	redact_tab(s, &set);
	pthread_mutex_unlock(&set_lock);
}

char *lev_secrets_redacted(const char *s)
{
	char *c = s ? xstrdup(s) : NULL;

	lev_secrets_redact(c);
	return c;
}

/* S redacted, or NULL when the set leaves it as it is. */
static char *changed(const char *s)
{
	char *c = lev_secrets_redacted(s);

	if (c && !strcmp(c, s)) {
		free(c);
		return NULL;
	}
	return c;
}

static json_t *redacted_json(json_t *v);

/* A string V redacted (a new string), or V itself (a new reference). */
static json_t *redacted_string(json_t *v)
{
	size_t n = json_string_length(v), m;
	json_t *out;
	char *c;

	if (n < WIN)
		return json_incref(v);
	c = xmemdup(json_string_value(v), n);
	pthread_mutex_lock(&set_lock);
	m = redact_buf(c, n, &set);
	pthread_mutex_unlock(&set_lock);
	out = m != n || memcmp(c, json_string_value(v), n) ? json_stringn(c, m) : json_incref(v);
	free(c);
	return out;
}

/* Copy on write: *COPY is made (shallow) the first time a member changes. */
static json_t *redacted_array(json_t *v)
{
	json_t *copy = NULL, *e;
	size_t i;

	json_array_foreach(v, i, e) {
		json_t *r = redacted_json(e);

		if (r != e && !copy)
			copy = json_copy(v);
		if (r != e)
			json_array_set_new(copy, i, r);
		else
			json_decref(r);
	}
	return copy ? copy : json_incref(v);
}

static json_t *redacted_object(json_t *v)
{
	json_t *copy = NULL, *e;
	const char *k;

	json_object_foreach(v, k, e) {
		json_t *r = redacted_json(e);
		char *nk = changed(k);

		if ((r != e || nk) && !copy)
			copy = json_copy(v);
		if (nk) {
			json_object_del(copy, k);
			json_object_set_new(copy, nk, r);
		} else if (r != e) {
			json_object_set_new(copy, k, r);
		} else {
			json_decref(r);
		}
		free(nk);
	}
	return copy ? copy : json_incref(v);
}

static json_t *redacted_json(json_t *v)
{
	if (json_is_string(v))
		return redacted_string(v);
	if (json_is_array(v))
		return redacted_array(v);
	if (json_is_object(v))
		return redacted_object(v);
	return json_incref(v);
}

json_t *lev_secrets_redacted_json(json_t *v)
{
	if (!v || !lev_secrets_count())
		return json_incref(v);
	return redacted_json(v);
}

json_t *lev_secrets_redact_take(json_t *v)
{
	json_t *r = lev_secrets_redacted_json(v);

	json_decref(v);
	return r;
}

/* The copies lev_secret_dup() made: few (a run's keys), so a short list. */
#define DUPS_MAX 256
static struct dup {
	char *p;
	size_t size;
} dups[DUPS_MAX];

char *lev_secret_dup(const char *s)
{
	size_t n, size, page = (size_t)sysconf(_SC_PAGESIZE);
	char *p;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	size = (n + page - 1) / page * page;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		abort();	/* out of memory, as xmalloc */
	(void)madvise(p, size, MADV_WIPEONFORK);
	(void)madvise(p, size, MADV_DONTDUMP);
	memcpy(p, s, n);
	pthread_mutex_lock(&set_lock);
	for (size_t i = 0; i < DUPS_MAX; i++) {
		if (!dups[i].p) {
			dups[i].p = p;
			dups[i].size = size;
			pthread_mutex_unlock(&set_lock);
			return p;
		}
	}
	pthread_mutex_unlock(&set_lock);
	/* the list is full: an ordinary copy, still zeroed when freed */
	explicit_bzero(p, n);
	munmap(p, size);
	return xstrdup(s);
}

bool lev_secret_release(char *s)
{
	size_t size = 0;

	if (!s)
		return false;
	pthread_mutex_lock(&set_lock);
	for (size_t i = 0; i < DUPS_MAX && !size; i++) {
		if (dups[i].p == s) {
			size = dups[i].size;
			dups[i].p = NULL;
		}
	}
	pthread_mutex_unlock(&set_lock);
	if (!size)
		return false;
	explicit_bzero(s, size);
	munmap(s, size);
	return true;
}

void lev_secrets_wipe(void)
{
	pthread_mutex_lock(&set_lock);
	slots_free(set.slot, set.cap, set.mapped);
	set.slot = NULL;
	set.cap = set.used = 0;
	set_values = 0;
	pthread_mutex_unlock(&set_lock);
}
