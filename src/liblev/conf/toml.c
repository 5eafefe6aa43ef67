/*
 * toml.c - a TOML 1.0 parser.
 *
 * Design:
 *  - The input is copied once into a buffer followed by NUL bytes, so the
 *    scanner never checks for the end of input byte by byte: a NUL is a
 *    control character, invalid everywhere in TOML, so every scan loop stops
 *    on it and then tells "end of input" from "a NUL byte" by position.
 *  - Every node of the tree lives in one arena owned by the document; the
 *    whole tree is freed by lev_toml_free() walking the arena's block list
 *    (no recursion).  Memory footprint is what costs most on big documents
 *    (first-touch page faults), so the tree is kept dense: strings go to a
 *    byte-aligned region, arrays are collected on a reused stack and copied
 *    exactly sized, the keys of the current [section] are collected in a
 *    reused vector and copied exactly sized when the section ends, and
 *    storage that a growing array outgrows is recycled by size class.
 *  - Tables keep their entries in document order in an array; once a table
 *    has more than TABLE_SMALL entries it also gets an open-addressing hash
 *    index (keyed SipHash with a per-process random key, so crafted inputs
 *    cannot make duplicate detection quadratic).
 *  - Every table remembers how it came to exist (implicitly through a
 *    header path, by a [header], through dotted keys, inline), which is all
 *    the state the redefinition rules of TOML 1.0 need.
 *  - Nesting (arrays, inline tables, tables) is bounded by
 *    LEV_TOML_MAX_DEPTH, so the recursive descent and every consumer walking
 *    the tree recursively stay within a small stack.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "liblev/base/cleanup.h"
#include "liblev/conf/toml.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

/* The largest document lev_toml_parse() accepts (positions fit in unsigned). */
#define TOML_MAX_INPUT ((size_t)1 << 30)
/* Tables with more entries than this get a hash index. */
#define TABLE_SMALL 16
/* NUL bytes after the copied input (the longest lookahead is well below). */
#define SENTINEL 32

/* ---- arena ---- */

struct arena_block {
	struct arena_block *next;
	size_t size;
	max_align_t data[];
};

#define ARENA_MIN_BLOCK ((size_t)8 << 10)
#define ARENA_MAX_BLOCK ((size_t)1 << 20)

/* ---- tree ---- */

enum table_kind {
	TK_IMPLICIT,	/* created as an intermediate of a [header] path */
	TK_HEADER,	/* defined by [header] or [[header]], or the root */
	TK_DOTTED,	/* created by a dotted key */
	TK_INLINE,	/* an inline table: closed once written */
};

struct tentry {
	const char *key;
	uint32_t klen;
	uint32_t hash;
	unsigned line, col;
	struct lev_toml_value val;
};

struct lev_toml_table {
	struct tentry *e;
	uint32_t len, cap;
	uint32_t *idx;		/* entry index + 1; 0 is empty */
	uint32_t idx_mask;	/* slots - 1 (0 without index) */
	unsigned line, col;
	enum table_kind kind;
};

struct lev_toml_array {
	struct lev_toml_value *v;
	uint32_t len, cap;
	bool aot;		/* an array of tables made by [[header]] */
};

struct recycled;

struct lev_toml_doc {
	struct arena_block *blocks;
	char *cur, *lim;		/* nodes and arrays */
	char *scur, *slim;		/* strings */
	size_t next_block;
	struct recycled *recycled[64];
	/* while parsing: the table of the current section keeps its entries in
	 * SEC_E (heap, reused from section to section) until the section ends */
	struct lev_toml_table *sec_t;
	struct tentry *sec_e;
	uint32_t sec_cap;
	struct lev_toml_table *root;
};

/* ---- process-wide state: character classes, hash key, C locale ---- */

enum {
	C_BARE = 1 << 0,	/* bare key character */
	C_BASIC = 1 << 1,	/* copied verbatim inside a basic string */
	C_LITERAL = 1 << 2,	/* copied verbatim inside a literal string */
	C_COMMENT = 1 << 3,	/* allowed in a comment (ASCII part) */
	C_NUMTAIL = 1 << 4,	/* cannot follow a number */
};

static uint8_t cls[256];
static uint64_t sip_k0, sip_k1;
static locale_t c_locale;
static pthread_once_t toml_once = PTHREAD_ONCE_INIT;

static void toml_init_once(void)
{
	uint64_t key[2] = { 0, 0 };
	unsigned c;

	for (c = 0; c < 256; c++) {
		uint8_t f = 0;
		bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9');
		if (alnum || c == '_' || c == '-')
			f |= C_BARE;
		if (c == '\t' || (c >= 0x20 && c < 0x7f && c != '"' && c != '\\'))
			f |= C_BASIC;
		if (c == '\t' || (c >= 0x20 && c < 0x7f && c != '\''))
			f |= C_LITERAL;
		if (c == '\t' || (c >= 0x20 && c < 0x7f))
			f |= C_COMMENT;
		if (alnum || c == '_' || c == '.' || c == '+' || c == '-' || c == ':')
			f |= C_NUMTAIL;
		cls[c] = f;
	}
	if (getrandom(key, sizeof(key), GRND_NONBLOCK) != (ssize_t)sizeof(key)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		key[0] ^= (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)&ts;
		key[1] ^= (uint64_t)ts.tv_sec * 0xbf58476d1ce4e5b9ULL ^ (uint64_t)getpid();
	}
	sip_k0 = key[0];
	sip_k1 = key[1];
	c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* SipHash-1-3 of N bytes at P, truncated to 32 bits. */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                   \
	do {                                                                       \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);          \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                             \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                             \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);          \
	} while (0)

static uint32_t key_hash(const char *p, size_t n)
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ sip_k0;
	uint64_t v1 = 0x646f72616e646f6dULL ^ sip_k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ sip_k0;
	uint64_t v3 = 0x7465646279746573ULL ^ sip_k1;
	uint64_t b = (uint64_t)n << 56, m;
	size_t left = n;

	for (; left >= 8; left -= 8, p += 8) {
		memcpy(&m, p, 8);
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	m = 0;
	memcpy(&m, p, left);
	b |= m;
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return (uint32_t)(v0 ^ v1 ^ v2 ^ v3);
}

/* ---- arena ---- */

/*
 * Under AddressSanitizer every arena allocation is followed by a poisoned
 * redzone and recycled storage is poisoned, so reads or writes past a node
 * are reported even though the arena hands out memory from big blocks.
 */
#if defined(__SANITIZE_ADDRESS__)
#define TOML_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TOML_ASAN 1
#endif
#endif
#ifdef TOML_ASAN
#include <sanitizer/asan_interface.h>
#define REDZONE ((size_t)16)
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define REDZONE ((size_t)0)
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define ROUND16(n) (((n) + 15) & ~(size_t)15)

/* A new block of at least SIZE bytes; returns its start. */
static char *arena_block(struct lev_toml_doc *d, size_t size)
{
	size_t bs = d->next_block;
	struct arena_block *b;

	if (bs < size)
		bs = size;
	b = xmalloc(sizeof(*b) + bs);
	b->next = d->blocks;
	b->size = bs;
	d->blocks = b;
	if (d->next_block < ARENA_MAX_BLOCK)
		d->next_block *= 2;
	POISON(b->data, bs);
	return (char *)b->data;
}

/* SIZE bytes, 16-aligned, for nodes and arrays. */
static inline void *arena_alloc(struct lev_toml_doc *d, size_t size)
{
	size_t need = ROUND16(size) + REDZONE;
	void *r;

	if ((size_t)(d->lim - d->cur) < need) {
		d->cur = arena_block(d, need);
		d->lim = d->cur + d->blocks->size;
	}
	r = d->cur;
	d->cur += need;
	UNPOISON(r, size);
	return r;
}

static void *arena_zalloc(struct lev_toml_doc *d, size_t size)
{
	return memset(arena_alloc(d, size), 0, size);
}

/*
 * Arrays that grow (table entries, arrays of tables, hash indexes) leave
 * their old storage behind; it goes on a free list by size class and is
 * handed out again, so a document full of small tables that grow 2 -> 4
 * -> 8 entries does not keep every outgrown copy.
 */
struct recycled {
	struct recycled *next;
	size_t size;
};

static inline unsigned size_class(size_t size)
{
	return 63u - (unsigned)__builtin_clzll((unsigned long long)size);
}

/* Recycle the SIZE bytes at P (16-aligned; the end may be unaligned). */
static void arena_recycle(struct lev_toml_doc *d, void *p, size_t size)
{
	struct recycled *r = p;
	unsigned c;

	size &= ~(size_t)15;
	if (!p || size < sizeof(*r))
		return;
	c = size_class(size);
	r->size = size;
	r->next = d->recycled[c];
	d->recycled[c] = r;
	POISON((char *)p + sizeof(*r), size - sizeof(*r));
}

/* SIZE bytes for an array that may grow: recycled storage when some fits. */
static void *arena_alloc_array(struct lev_toml_doc *d, size_t size)
{
	struct recycled *r;
	unsigned c;

	if (size < sizeof(*r))
		return arena_alloc(d, size);
	c = size_class(ROUND16(size));
	r = d->recycled[c];
	if (r && r->size >= size) {
		d->recycled[c] = r->next;
		POISON(r, r->size);
		UNPOISON(r, size);
		return r;
	}
	return arena_alloc(d, size);
}

/*
 * Grow the array P of OLD bytes to NEW bytes: in place when P is the last
 * allocation and the block has room, else by copying (the old storage is
 * recycled).
 */
static void *arena_grow(struct lev_toml_doc *d, void *p, size_t old, size_t new)
{
	void *q;

	if (p && (char *)p + ROUND16(old) + REDZONE == d->cur &&
	    (size_t)(d->lim - (char *)p) >= ROUND16(new) + REDZONE) {
		d->cur = (char *)p + ROUND16(new) + REDZONE;
		UNPOISON(p, new);
		return p;
	}
	q = arena_alloc_array(d, new);
	if (old) {
		memcpy(q, p, old);
		arena_recycle(d, p, old);
	}
	return q;
}

/* Strings (keys and values) live in their own byte-aligned region. */
static char *arena_strndup(struct lev_toml_doc *d, const char *s, size_t n)
{
	char *r;

	if ((size_t)(d->slim - d->scur) < n + 1 + REDZONE) {
		d->scur = arena_block(d, n + 1 + REDZONE);
		d->slim = d->scur + d->blocks->size;
	}
	r = d->scur;
	d->scur += n + 1 + REDZONE;
	UNPOISON(r, n + 1);
	if (n)
		memcpy(r, s, n);
	r[n] = '\0';
	return r;
}

/* ---- tables ---- */

static struct lev_toml_table *table_new(struct lev_toml_doc *d, enum table_kind kind,
					unsigned line, unsigned col)
{
	struct lev_toml_table *t = arena_zalloc(d, sizeof(*t));

	t->kind = kind;
	t->line = line;
	t->col = col;
	return t;
}

/* Find KEY in T; *hash_out gets its hash when T is indexed. */
static struct tentry *table_find(const struct lev_toml_table *t, const char *k, size_t n,
				 uint32_t *hash_out)
{
	uint32_t i;

	if (!t->idx) {
		for (i = 0; i < t->len; i++) {
			const struct tentry *e = &t->e[i];
			if (e->klen == n && memcmp(e->key, k, n) == 0)
				return (struct tentry *)e;
		}
		return NULL;
	} else {
		uint32_t h = key_hash(k, n), slot;

		*hash_out = h;
		for (slot = h & t->idx_mask;; slot = (slot + 1) & t->idx_mask) {
			uint32_t x = t->idx[slot];
			const struct tentry *e;

			if (!x)
				return NULL;
			e = &t->e[x - 1];
			if (e->hash == h && e->klen == n && memcmp(e->key, k, n) == 0)
				return (struct tentry *)e;
		}
	}
}

static void index_put(struct lev_toml_table *t, uint32_t i)
{
	uint32_t slot;

	for (slot = t->e[i].hash & t->idx_mask; t->idx[slot]; slot = (slot + 1) & t->idx_mask)
		;
	t->idx[slot] = i + 1;
}

static void index_build(struct lev_toml_doc *d, struct lev_toml_table *t, uint32_t slots)
{
	uint32_t i;

	if (t->idx)
		arena_recycle(d, t->idx, ((size_t)t->idx_mask + 1) * sizeof(uint32_t));
	t->idx = memset(arena_alloc_array(d, (size_t)slots * sizeof(uint32_t)), 0,
			(size_t)slots * sizeof(uint32_t));
	t->idx_mask = slots - 1;
	for (i = 0; i < t->len; i++)
		index_put(t, i);
}

/*
 * Append KEY (copied) to T, which must not hold it.  HASH is the value
 * table_find() reported (used only when T is indexed).  Returns the entry,
 * valid until the next append to T; the caller fills in the value.
 */
static struct tentry *table_add(struct lev_toml_doc *d, struct lev_toml_table *t, const char *k,
				size_t n, uint32_t hash, unsigned line, unsigned col)
{
	struct tentry *e;

	if (t->len == t->cap) {
		uint32_t ncap = t->cap ? t->cap * 2 : 2;
		if (t == d->sec_t) {
			d->sec_e = xreallocarray(d->sec_e, ncap, sizeof(*e));
			d->sec_cap = ncap;
			t->e = d->sec_e;
		} else {
			t->e = arena_grow(d, t->e, (size_t)t->cap * sizeof(*e),
					  (size_t)ncap * sizeof(*e));
		}
		t->cap = ncap;
	}
	e = &t->e[t->len++];
	e->key = arena_strndup(d, k, n);
	e->klen = (uint32_t)n;
	e->line = line;
	e->col = col;
	memset(&e->val, 0, sizeof(e->val));
	if (t->idx) {
		e->hash = hash;
		if ((size_t)t->len * 2 > (size_t)t->idx_mask + 1)
			index_build(d, t, (t->idx_mask + 1) * 2);
		else
			index_put(t, t->len - 1);
	} else if (t->len > TABLE_SMALL) {
		uint32_t i;
		for (i = 0; i < t->len; i++)
			t->e[i].hash = key_hash(t->e[i].key, t->e[i].klen);
		index_build(d, t, 4 * TABLE_SMALL);
	}
	return e;
}

/* Give T's unused capacity back (T is complete, e.g. a closed inline table). */
static void table_trim(struct lev_toml_doc *d, struct lev_toml_table *t)
{
	if (t->cap > t->len && t != d->sec_t) {
		arena_recycle(d, t->e + t->len, (size_t)(t->cap - t->len) * sizeof(*t->e));
		t->cap = t->len;
		if (!t->len)
			t->e = NULL;
	}
}

/*
 * Sections: the keys under a [header] (or at the top) all go to one table,
 * usually a fresh one.  Rather than growing its entries in the arena, which
 * would leave the outgrown copies and the unused capacity in the document,
 * they are collected in a reused heap vector and copied to the arena, exactly
 * sized, when the section ends.
 */
static void section_close(struct lev_toml_doc *d)
{
	struct lev_toml_table *t = d->sec_t;

	if (!t)
		return;
	d->sec_t = NULL;
	if (!t->len) {
		t->e = NULL;
		t->cap = 0;
		return;
	}
	t->e = memcpy(arena_alloc_array(d, (size_t)t->len * sizeof(*t->e)), d->sec_e,
		      (size_t)t->len * sizeof(*t->e));
	t->cap = t->len;
}

static void section_open(struct lev_toml_doc *d, struct lev_toml_table *t)
{
	section_close(d);
	if (t->cap > d->sec_cap) {
		d->sec_e = xreallocarray(d->sec_e, t->cap, sizeof(*t->e));
		d->sec_cap = t->cap;
	}
	if (t->len) {
		memcpy(d->sec_e, t->e, (size_t)t->len * sizeof(*t->e));
		arena_recycle(d, t->e, (size_t)t->cap * sizeof(*t->e));
	}
	t->e = d->sec_e;
	t->cap = d->sec_cap;
	d->sec_t = t;
}

/* ---- the parser ---- */

struct kpart {
	const char *s;		/* into the input copy or the arena */
	size_t len;
	const char *at;		/* where it was written */
	unsigned line, col;
};

struct parser {
	const char *p;		/* cursor */
	const char *base;	/* input copy */
	const char *text;	/* the text after a byte order mark */
	const char *end;	/* end of input; SENTINEL NULs follow */
	const char *line_start;
	unsigned line;
	const char *name;
	struct lev_err *err;
	struct lev_toml_doc *doc;
	struct lev_toml_table *cur;	/* table that key/values go into */
	unsigned cur_depth;
	/* column cache: the column of col_at on the current line */
	const char *col_at;
	unsigned col_val;
	/* scratch for escaped strings and float digits */
	char *scratch;
	size_t scratch_len, scratch_cap;
	/* value stack for arrays being built */
	struct lev_toml_value *stk;
	size_t stk_len, stk_cap;
	struct kpart keys[LEV_TOML_MAX_DEPTH];
};

#define U(c) ((unsigned char)(c))

/* Column (1-based, in characters) of AT on the current line. */
static unsigned col_of(struct parser *P, const char *at)
{
	const char *q;
	unsigned col;

	if (P->col_at >= P->line_start && P->col_at <= at) {
		q = P->col_at;
		col = P->col_val;
	} else {
		q = P->line_start;
		col = 1;
	}
	for (; q < at; q++)
		col += (U(*q) & 0xc0) != 0x80;
	P->col_at = at;
	P->col_val = col;
	return col;
}

/*
 * Length of the valid UTF-8 sequence at S (lead byte >= 0x80), else 0.
 * The input is NUL-terminated and the decoder stops at the first byte
 * that is not a continuation, so it never reads past the end.
 */
static inline unsigned utf8_len(const char *s)
{
	uint32_t cp;

	return (unsigned)lev_utf8_decode(s, 4, &cp);
}

/* Describe the input at AT for "found ..." in messages. */
static void describe(const struct parser *P, const char *at, char *buf, size_t size)
{
	unsigned char c = U(*at);

	if (at >= P->end)
		snprintf(buf, size, "end of input");
	else if (c == '\n')
		snprintf(buf, size, "end of line");
	else if (c == '\r')
		snprintf(buf, size, at[1] == '\n' ? "end of line" : "a carriage return");
	else if (c == '\t')
		snprintf(buf, size, "a tab");
	else if (c == '\'')
		snprintf(buf, size, "\"'\"");
	else if (c > 0x20 && c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else if (c == ' ')
		snprintf(buf, size, "a space");
	else if (c < 0x80)
		snprintf(buf, size, "control character U+%04X", c);
	else {
		unsigned n = utf8_len(at);
		if (n)
			snprintf(buf, size, "'%.*s'", (int)n, at);
		else
			snprintf(buf, size, "an invalid UTF-8 byte 0x%02x", c);
	}
}

/* Report a parse error at AT. */
static int perr(struct parser *P, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int perr(struct parser *P, const char *at, const char *fmt, ...)
{
	char msg[400];
	const char *q, *ls = P->text;
	unsigned line = 1, col = 1;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (at > P->end)
		at = P->end;
	for (q = P->text; q < at; q++) {
		if (*q == '\n') {
			line++;
			ls = q + 1;
		}
	}
	for (q = ls; q < at; q++)
		col += (U(*q) & 0xc0) != 0x80;
	return lev_err_set(P->err, LEV_EPARSE, "%s:%u:%u: %s", P->name, line, col, msg);
}

/* "expected X, found Y" at AT. */
static int pexpect(struct parser *P, const char *at, const char *what)
{
	char found[64];

	describe(P, at, found, sizeof(found));
	return perr(P, at, "expected %s, found %s", what, found);
}

/* Format a key for messages: quoted when not bare, escaped, shortened. */
static void fmt_key(char *buf, size_t size, const char *k, size_t n)
{
	size_t i, o = 0;
	bool bare = n > 0;

	for (i = 0; i < n; i++)
		if (!(cls[U(k[i])] & C_BARE))
			bare = false;
	if (!bare && o + 1 < size)
		buf[o++] = '"';
	for (i = 0; i < n && o + 8 < size; i++) {
		unsigned char c = U(k[i]);
		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(buf + o, size - o, "\\u%04X", c);
		else if (c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, size - o, "\\%c", c);
		else
			buf[o++] = (char)c;
	}
	if (i < n && o + 4 < size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	if (!bare && o + 1 < size)
		buf[o++] = '"';
	buf[o] = '\0';
}

/* Format the first N parts of the current key path. */
static void fmt_path(const struct parser *P, size_t n, char *buf, size_t size)
{
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < n && o + 2 < size; i++) {
		if (i)
			buf[o++] = '.';
		fmt_key(buf + o, size - o, P->keys[i].s, P->keys[i].len);
		o += strlen(buf + o);
	}
}

static void scratch_reserve(struct parser *P, size_t extra)
{
	if (P->scratch_cap - P->scratch_len < extra) {
		size_t ncap = P->scratch_cap ? P->scratch_cap : 256;
		while (ncap - P->scratch_len < extra)
			ncap *= 2;
		P->scratch = xrealloc(P->scratch, ncap);
		P->scratch_cap = ncap;
	}
}

static inline void scratch_add(struct parser *P, const char *s, size_t n)
{
	if (!n)
		return;
	scratch_reserve(P, n);
	memcpy(P->scratch + P->scratch_len, s, n);
	P->scratch_len += n;
}

static inline void scratch_addch(struct parser *P, char c)
{
	scratch_reserve(P, 1);
	P->scratch[P->scratch_len++] = c;
}

static void scratch_add_utf8(struct parser *P, uint32_t cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	scratch_add(P, b, n);
}

static inline void skip_ws(struct parser *P)
{
	while (*P->p == ' ' || *P->p == '\t')
		P->p++;
}

static inline bool at_eof(const struct parser *P)
{
	return P->p >= P->end;
}

/* At '\n' or '\r': consume one newline. */
static int eat_newline(struct parser *P)
{
	if (*P->p == '\r') {
		if (P->p[1] != '\n')
			return perr(P, P->p, "a carriage return must be followed by a line feed");
		P->p++;
	}
	P->p++;
	P->line++;
	P->line_start = P->p;
	return 0;
}

/* At '#': skip the comment up to (not including) the end of line. */
static int skip_comment(struct parser *P)
{
	const char *p = P->p + 1;

	for (;;) {
		unsigned char c = U(*p);
		unsigned n;

		if (cls[c] & C_COMMENT) {
			p++;
			continue;
		}
		if (c == '\n' || c == '\r' || p >= P->end)
			break;
		if (c < 0x80)
			return perr(P, p, "control character U+%04X is not allowed in a comment", c);
		n = utf8_len(p);
		if (!n)
			return perr(P, p, "invalid UTF-8 in comment");
		p += n;
	}
	P->p = p;
	return 0;
}

/* Skip spaces, tabs, comments and newlines (inside arrays and between lines). */
static int skip_ws_nl(struct parser *P)
{
	for (;;) {
		int r;

		skip_ws(P);
		if (*P->p == '#') {
			r = skip_comment(P);
			if (r < 0)
				return r;
		}
		if (*P->p == '\n' || *P->p == '\r') {
			r = eat_newline(P);
			if (r < 0)
				return r;
			continue;
		}
		return 0;
	}
}

/* ---- strings ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* At the backslash of an escape (not a line-ending one): append it. */
static int parse_escape(struct parser *P, const char **pp)
{
	const char *p = *pp;
	uint32_t cp = 0;
	int i, n;

	switch (p[1]) {
	case 'b': scratch_addch(P, '\b'); break;
	case 't': scratch_addch(P, '\t'); break;
	case 'n': scratch_addch(P, '\n'); break;
	case 'f': scratch_addch(P, '\f'); break;
	case 'r': scratch_addch(P, '\r'); break;
	case '"': scratch_addch(P, '"'); break;
	case '\\': scratch_addch(P, '\\'); break;
	case 'u':
	case 'U':
		n = p[1] == 'u' ? 4 : 8;
		for (i = 0; i < n; i++) {
			int h = hexval(p[2 + i]);
			if (h < 0)
				return perr(P, p, "expected %d hexadecimal digits after '\\%c'", n,
					    p[1]);
			cp = cp << 4 | (uint32_t)h;
		}
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return perr(P, p, "'%.*s' is not a Unicode scalar value", n + 2, p);
		scratch_add_utf8(P, cp);
		*pp = p + 2 + n;
		return 0;
	default: {
		char found[64];
		describe(P, p + 1, found, sizeof(found));
		return perr(P, p, "invalid escape sequence: expected one of \\b \\t \\n \\f \\r "
			    "\\\" \\\\ \\uXXXX \\UXXXXXXXX after '\\', found %s", found);
	}
	}
	*pp = p + 2;
	return 0;
}

/*
 * A character that cannot appear in a string, at Q.  CLOSE is the closing
 * delimiter, for the message about an unterminated string.
 */
static int bad_string_char(struct parser *P, const char *q, const char *open, const char *kind,
			   const char *close)
{
	unsigned char c = U(*q);

	if (q >= P->end || c == '\n' || c == '\r') {
		if (q < P->end && c == '\r' && q[1] != '\n')
			return perr(P, q, "a carriage return must be followed by a line feed");
		return perr(P, open, "unterminated %s: expected the closing %s before the end of "
			    "the %s", kind, close, q >= P->end ? "input" : "line");
	}
	if (c < 0x80)
		return perr(P, q, "control character U+%04X must be escaped in a string", c);
	return perr(P, q, "invalid UTF-8 in string");
}

/*
 * Single-line basic string at '"'.  Sets *s / *n: into the input copy when
 * the string has no escapes (NOT NUL-terminated), else into scratch from
 * SCRATCH_START.  *in_scratch tells which.
 */
static int scan_basic(struct parser *P, const char **s, size_t *n, bool *in_scratch)
{
	const char *open = P->p, *p = P->p + 1, *start = p;
	size_t sstart;

	for (;;) {
		while (cls[U(*p)] & C_BASIC)
			p++;
		if (*p == '"') {
			*s = start;
			*n = (size_t)(p - start);
			*in_scratch = false;
			P->p = p + 1;
			return 0;
		}
		if (*p == '\\')
			break;
		if (U(*p) >= 0x80) {
			unsigned l = utf8_len(p);
			if (!l)
				return perr(P, p, "invalid UTF-8 in string");
			p += l;
			continue;
		}
		return bad_string_char(P, p, open, "string", "'\"'");
	}
	/* slow path: has escapes */
	sstart = P->scratch_len;
	scratch_add(P, start, (size_t)(p - start));
	for (;;) {
		const char *run = p;
		int r;

		while (cls[U(*p)] & C_BASIC)
			p++;
		scratch_add(P, run, (size_t)(p - run));
		if (*p == '"')
			break;
		if (*p == '\\') {
			r = parse_escape(P, &p);
			if (r < 0)
				return r;
			continue;
		}
		if (U(*p) >= 0x80) {
			unsigned l = utf8_len(p);
			if (!l)
				return perr(P, p, "invalid UTF-8 in string");
			scratch_add(P, p, l);
			p += l;
			continue;
		}
		return bad_string_char(P, p, open, "string", "'\"'");
	}
	*s = P->scratch + sstart;
	*n = P->scratch_len - sstart;
	*in_scratch = true;
	P->p = p + 1;
	return 0;
}

/* Single-line literal string at '\''. */
static int scan_literal(struct parser *P, const char **s, size_t *n)
{
	const char *open = P->p, *p = P->p + 1, *start = p;

	for (;;) {
		while (cls[U(*p)] & C_LITERAL)
			p++;
		if (*p == '\'')
			break;
		if (U(*p) >= 0x80) {
			unsigned l = utf8_len(p);
			if (!l)
				return perr(P, p, "invalid UTF-8 in string");
			p += l;
			continue;
		}
		return bad_string_char(P, p, open, "literal string", "\"'\"");
	}
	*s = start;
	*n = (size_t)(p - start);
	P->p = p + 1;
	return 0;
}

/*
 * A multi-line string at its three opening quotes, QUOTE being '"' (basic:
 * escapes and line-ending backslashes) or '\'' (literal); the result goes
 * to scratch.  Always inlined with a constant QUOTE, so each caller gets
 * the loop for its kind alone.
 */
static inline __attribute__((always_inline)) int scan_ml(struct parser *P, const char quote)
{
	const bool basic = quote == '"';
	const unsigned char mask = basic ? C_BASIC : C_LITERAL;
	const char *what = basic ? "multi-line string" : "multi-line literal string";
	const char *open = P->p, *p = P->p + 3;
	int r;

	/* a newline right after the opening quotes is trimmed */
	if (*p == '\n' || (*p == '\r' && p[1] == '\n')) {
		P->p = p;
		r = eat_newline(P);
		if (r < 0)
			return r;
		p = P->p;
	}
	for (;;) {
		const char *run = p;
		unsigned char c;

		while (cls[U(*p)] & mask)
			p++;
		scratch_add(P, run, (size_t)(p - run));
		c = U(*p);
		if (c == (unsigned char)quote) {
			/* up to two quotes may end the content before the closing three */
			size_t q = 1;
			while (p[q] == quote)
				q++;
			if (q >= 3) {
				if (q > 5)
					return perr(P, p + 5, "too many quotes at the end of a %s",
						    what);
				scratch_add(P, p, q - 3);
				P->p = p + q;
				return 0;
			}
			scratch_add(P, p, q);
			p += q;
		} else if (basic && c == '\\') {
			const char *q = p + 1;
			while (*q == ' ' || *q == '\t')
				q++;
			if (*q == '\n' || *q == '\r') {
				/* line-ending backslash: trim all whitespace and newlines */
				for (;;) {
					if (*q == ' ' || *q == '\t') {
						q++;
					} else if (*q == '\n' || *q == '\r') {
						P->p = q;
						r = eat_newline(P);
						if (r < 0)
							return r;
						q = P->p;
					} else {
						break;
					}
				}
				p = q;
			} else {
				r = parse_escape(P, &p);
				if (r < 0)
					return r;
			}
		} else if (c == '\n' || (c == '\r' && p[1] == '\n')) {
			P->p = p;
			eat_newline(P);
			p = P->p;
			scratch_addch(P, '\n');
		} else if (c >= 0x80) {
			unsigned l = utf8_len(p);
			if (!l)
				return perr(P, p, "invalid UTF-8 in string");
			scratch_add(P, p, l);
			p += l;
		} else {
			return bad_string_char(P, p, open, what, basic ? "'\"\"\"'" : "\"'''\"");
		}
	}
}

static int scan_ml_basic(struct parser *P)
{
	return scan_ml(P, '"');
}

static int scan_ml_literal(struct parser *P)
{
	return scan_ml(P, '\'');
}

/* ---- keys ---- */

/* Parse one key part at the cursor into *K. */
static int parse_key_part(struct parser *P, struct kpart *k)
{
	const char *p = P->p;
	int r;

	k->at = p;
	k->line = P->line;
	k->col = col_of(P, p);
	if (cls[U(*p)] & C_BARE) {
		const char *s = p;
		while (cls[U(*p)] & C_BARE)
			p++;
		k->s = s;
		k->len = (size_t)(p - s);
		P->p = p;
		return 0;
	}
	if (*p == '"') {
		bool in_scratch;
		const char *s;
		size_t n, mark = P->scratch_len;

		if (p[1] == '"' && p[2] == '"')
			return perr(P, p, "a multi-line string cannot be a key");
		r = scan_basic(P, &s, &n, &in_scratch);
		if (r < 0)
			return r;
		if (in_scratch) {
			/* scratch is reused: keep the decoded key in the arena */
			s = arena_strndup(P->doc, s, n);
			P->scratch_len = mark;
		}
		k->s = s;
		k->len = n;
		return 0;
	}
	if (*p == '\'') {
		if (p[1] == '\'' && p[2] == '\'')
			return perr(P, p, "a multi-line string cannot be a key");
		r = scan_literal(P, &k->s, &k->len);
		return r;
	}
	return pexpect(P, p, "a key (bare, \"quoted\" or 'literal')");
}

/* Parse a dotted key into P->keys; *n_out gets the number of parts. */
static int parse_key(struct parser *P, size_t *n_out)
{
	size_t n = 0;
	int r;

	for (;;) {
		if (n == LEV_TOML_MAX_DEPTH)
			return perr(P, P->p, "too many dotted key parts (the limit is %d)",
				    LEV_TOML_MAX_DEPTH);
		r = parse_key_part(P, &P->keys[n]);
		if (r < 0)
			return r;
		n++;
		skip_ws(P);
		if (*P->p != '.')
			break;
		P->p++;
		skip_ws(P);
	}
	*n_out = n;
	return 0;
}

/* ---- values ---- */

static int parse_value(struct parser *P, struct lev_toml_value *v, unsigned depth);

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Check that a number at START ends at the cursor. */
static int number_end(struct parser *P, const char *start)
{
	if (cls[U(*P->p)] & C_NUMTAIL) {
		const char *q = P->p;
		while (cls[U(*q)] & C_NUMTAIL)
			q++;
		return perr(P, start, "invalid number '%.*s'",
			    (int)(q - start > 64 ? 64 : q - start), start);
	}
	return 0;
}

static int parse_radix(struct parser *P, struct lev_toml_value *v, const char *start)
{
	const char *p = P->p + 2;
	unsigned shift, base;
	uint64_t acc = 0;
	bool ovf = false;
	char kind = P->p[1];

	shift = kind == 'x' ? 4 : kind == 'o' ? 3 : 1;
	base = 1u << shift;
	for (;;) {
		int d = hexval(*p);
		if (d < 0 || (unsigned)d >= base) {
			char what[64];
			snprintf(what, sizeof(what), "%s digit",
				 kind == 'x' ? "a hexadecimal" : kind == 'o' ? "an octal" : "a binary");
			return pexpect(P, p, what);
		}
		if (acc >> (63 - shift))
			ovf = true;
		acc = acc << shift | (unsigned)d;
		p++;
		if (*p == '_') {
			p++;
			continue;
		}
		if (hexval(*p) < 0 || (unsigned)hexval(*p) >= base)
			break;
	}
	P->p = p;
	if (ovf || acc > (uint64_t)INT64_MAX)
		return perr(P, start, "integer '%.*s' does not fit in 64 bits",
			    (int)(p - start > 64 ? 64 : p - start), start);
	v->type = LEV_TOML_INTEGER;
	v->u.integer = (int64_t)acc;
	return number_end(P, start);
}

static const double pow10_tab[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/*
 * Digits with single underscores between them, at P->p (which must be a
 * digit).  Appends them to scratch when COLLECT; counts into *ndig; adds to
 * the mantissa *m while it stays exact.
 */
static int scan_digits(struct parser *P, bool collect, uint64_t *m, unsigned *ndig)
{
	const char *p = P->p;

	if (!is_digit(*p))
		return pexpect(P, p, "a digit");
	for (;;) {
		if (collect)
			scratch_addch(P, *p);
		if (*ndig < 19)
			*m = *m * 10 + (uint64_t)(*p - '0');
		if (*m || *ndig)
			(*ndig)++;
		p++;
		if (*p == '_') {
			if (!is_digit(p[1]))
				return perr(P, p, "an underscore in a number must be between "
					    "two digits");
			p++;
			continue;
		}
		if (!is_digit(*p))
			break;
	}
	P->p = p;
	return 0;
}

static int parse_float_rest(struct parser *P, struct lev_toml_value *v, const char *start,
			    bool neg, const char *digits)
{
	size_t mark = P->scratch_len;
	uint64_t m = 0;
	unsigned ndig = 0, fdig = 0;
	long exp = 0;
	bool exp_neg = false;
	int r;
	double d;

	/* integer part again, collecting */
	P->p = digits;
	if (neg)
		scratch_addch(P, '-');
	r = scan_digits(P, true, &m, &ndig);
	if (r < 0)
		return r;
	if (*P->p == '.') {
		const char *q;

		P->p++;
		scratch_addch(P, '.');
		if (!is_digit(*P->p))
			return pexpect(P, P->p, "a digit after the decimal point");
		q = P->p;
		r = scan_digits(P, true, &m, &ndig);
		if (r < 0)
			return r;
		for (; q < P->p; q++)
			fdig += is_digit(*q);
	}
	if (*P->p == 'e' || *P->p == 'E') {
		P->p++;
		scratch_addch(P, 'e');
		if (*P->p == '+' || *P->p == '-') {
			exp_neg = *P->p == '-';
			scratch_addch(P, *P->p);
			P->p++;
		}
		if (!is_digit(*P->p))
			return pexpect(P, P->p, "a digit in the exponent");
		for (;;) {
			scratch_addch(P, *P->p);
			if (exp < 100000)
				exp = exp * 10 + (*P->p - '0');
			P->p++;
			if (*P->p == '_') {
				if (!is_digit(P->p[1]))
					return perr(P, P->p, "an underscore in a number must be "
						    "between two digits");
				P->p++;
				continue;
			}
			if (!is_digit(*P->p))
				break;
		}
		if (exp_neg)
			exp = -exp;
	}
	r = number_end(P, start);
	if (r < 0)
		return r;
	exp -= (long)fdig;
	if (ndig <= 15 && exp >= -22 && exp <= 22) {
		d = (double)m;
		if (exp < 0)
			d /= pow10_tab[-exp];
		else
			d *= pow10_tab[exp];
		if (neg)
			d = -d;
	} else {
		scratch_addch(P, '\0');
		d = strtod_l(P->scratch + mark, NULL, c_locale);
		if (isinf(d))
			return perr(P, start, "float '%.*s' is out of range",
				    (int)(P->p - start > 64 ? 64 : P->p - start), start);
	}
	P->scratch_len = mark;
	v->type = LEV_TOML_FLOAT;
	v->u.flt = d;
	return 0;
}

/* A number (integer or float) at the cursor: [+-] digit... or inf/nan. */
static int parse_number(struct parser *P, struct lev_toml_value *v)
{
	const char *start = P->p, *p = P->p, *digits;
	bool neg = false, sign = false;
	uint64_t acc = 0;
	bool ovf = false;

	if (*p == '+' || *p == '-') {
		neg = *p == '-';
		sign = true;
		p++;
	}
	if ((p[0] == 'i' && p[1] == 'n' && p[2] == 'f') ||
	    (p[0] == 'n' && p[1] == 'a' && p[2] == 'n')) {
		v->type = LEV_TOML_FLOAT;
		v->u.flt = p[0] == 'i' ? (double)INFINITY : (double)NAN;
		if (neg)
			v->u.flt = -v->u.flt;
		P->p = p + 3;
		return number_end(P, start);
	}
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o' || p[1] == 'b')) {
		if (sign)
			return perr(P, start, "a sign is not allowed on hexadecimal, octal or "
				    "binary integers");
		return parse_radix(P, v, start);
	}
	if (!is_digit(*p))
		return pexpect(P, start, "a value");
	digits = p;
	if (p[0] == '0' && (is_digit(p[1]) || p[1] == '_'))
		return perr(P, start, "leading zeros are not allowed in a number");
	for (;;) {
		unsigned d = (unsigned)(*p - '0');
		if (acc > (UINT64_MAX - d) / 10)
			ovf = true;
		else
			acc = acc * 10 + d;
		p++;
		if (*p == '_') {
			if (!is_digit(p[1]))
				return perr(P, p, "an underscore in a number must be between two "
					    "digits");
			p++;
			continue;
		}
		if (!is_digit(*p))
			break;
	}
	if (*p == '.' || *p == 'e' || *p == 'E')
		return parse_float_rest(P, v, start, neg, digits);
	P->p = p;
	if (ovf || acc > (uint64_t)INT64_MAX + neg)
		return perr(P, start, "integer '%.*s' does not fit in 64 bits",
			    (int)(p - start > 64 ? 64 : p - start), start);
	v->type = LEV_TOML_INTEGER;
	v->u.integer = neg ? (int64_t)(0 - acc) : (int64_t)acc;
	return number_end(P, start);
}

/* Exactly N digits at *PP into *OUT. */
static bool digits_n(const char **pp, unsigned n, int *out)
{
	const char *p = *pp;
	int v = 0;
	unsigned i;

	for (i = 0; i < n; i++) {
		if (!is_digit(p[i]))
			return false;
		v = v * 10 + (p[i] - '0');
	}
	*out = v;
	*pp = p + n;
	return true;
}

static bool is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* HH:MM:SS[.frac] at *PP into DT. */
static int parse_time(struct parser *P, const char **pp, struct lev_toml_datetime *dt)
{
	const char *p = *pp, *start = p;

	if (!digits_n(&p, 2, &dt->hour) || *p++ != ':' || !digits_n(&p, 2, &dt->minute))
		return perr(P, start, "invalid time: expected HH:MM:SS");
	if (*p != ':')
		return perr(P, start, "invalid time: expected HH:MM:SS (seconds are required)");
	p++;
	if (!digits_n(&p, 2, &dt->second))
		return perr(P, start, "invalid time: expected HH:MM:SS");
	if (dt->hour > 23 || dt->minute > 59 || dt->second > 60)
		return perr(P, start, "invalid time '%.8s': hour must be 00-23, minute 00-59, "
			    "second 00-60", start);
	if (*p == '.') {
		uint32_t ns = 0;
		unsigned n = 0;
		p++;
		if (!is_digit(*p))
			return pexpect(P, p, "a digit after the decimal point of the seconds");
		for (; is_digit(*p); p++) {
			if (n < 9) {
				ns = ns * 10 + (uint32_t)(*p - '0');
				n++;
			}
		}
		dt->frac_digits = n;
		for (; n < 9; n++)
			ns *= 10;
		dt->nanosecond = ns;
	}
	*pp = p;
	return 0;
}

/* A date, date-time or time at the cursor. */
static int parse_datetime(struct parser *P, struct lev_toml_value *v)
{
	const char *start = P->p, *p = P->p;
	struct lev_toml_datetime *dt = &v->u.dt;
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int r;

	memset(dt, 0, sizeof(*dt));
	if (p[2] == ':') {
		r = parse_time(P, &p, dt);
		if (r < 0)
			return r;
		v->type = LEV_TOML_TIME_LOCAL;
		goto out;
	}
	if (!digits_n(&p, 4, &dt->year) || *p++ != '-' || !digits_n(&p, 2, &dt->month) ||
	    *p++ != '-' || !digits_n(&p, 2, &dt->day))
		return perr(P, start, "invalid date: expected YYYY-MM-DD");
	if (dt->month < 1 || dt->month > 12)
		return perr(P, start, "invalid date '%.10s': month must be 01-12", start);
	if (dt->day < 1 ||
	    dt->day > mdays[dt->month - 1] + (dt->month == 2 && is_leap(dt->year)))
		return perr(P, start, "invalid date '%.10s': day out of range for the month",
			    start);
	if (*p == 'T' || *p == 't' ||
	    (*p == ' ' && is_digit(p[1]) && is_digit(p[2]) && p[3] == ':')) {
		p++;
		r = parse_time(P, &p, dt);
		if (r < 0)
			return r;
		if (*p == 'Z' || *p == 'z') {
			dt->has_offset = true;
			dt->offset_z = true;
			p++;
			v->type = LEV_TOML_DATETIME;
		} else if (*p == '+' || *p == '-') {
			const char *o = p;
			int oh, om;
			p++;
			if (!digits_n(&p, 2, &oh) || *p++ != ':' || !digits_n(&p, 2, &om))
				return perr(P, o, "invalid time offset: expected +HH:MM or -HH:MM");
			if (oh > 23 || om > 59)
				return perr(P, o, "invalid time offset '%.6s'", o);
			dt->has_offset = true;
			dt->offset_minutes = (*o == '-' ? -1 : 1) * (oh * 60 + om);
			v->type = LEV_TOML_DATETIME;
		} else {
			v->type = LEV_TOML_DATETIME_LOCAL;
		}
	} else {
		v->type = LEV_TOML_DATE_LOCAL;
	}
out:
	P->p = p;
	if (cls[U(*p)] & C_NUMTAIL) {
		const char *q = p;
		while (cls[U(*q)] & C_NUMTAIL)
			q++;
		return perr(P, start, "invalid date or time '%.*s'",
			    (int)(q - start > 64 ? 64 : q - start), start);
	}
	return 0;
}

static int parse_array(struct parser *P, struct lev_toml_value *v, unsigned depth)
{
	const char *open = P->p;
	size_t base = P->stk_len, n;
	struct lev_toml_array *a;
	int r;

	if (depth > LEV_TOML_MAX_DEPTH)
		return perr(P, open, "nesting too deep (the limit is %d)", LEV_TOML_MAX_DEPTH);
	P->p++;
	for (;;) {
		struct lev_toml_value item;

		r = skip_ws_nl(P);
		if (r < 0)
			return r;
		if (*P->p == ']')
			break;
		r = parse_value(P, &item, depth);
		if (r < 0)
			return r;
		if (P->stk_len == P->stk_cap) {
			P->stk_cap = P->stk_cap ? P->stk_cap * 2 : 64;
			P->stk = xreallocarray(P->stk, P->stk_cap, sizeof(*P->stk));
		}
		P->stk[P->stk_len++] = item;
		r = skip_ws_nl(P);
		if (r < 0)
			return r;
		if (*P->p == ',') {
			P->p++;
			continue;
		}
		if (*P->p == ']')
			break;
		return pexpect(P, P->p, "',' or ']' in array");
	}
	P->p++;
	n = P->stk_len - base;
	a = arena_alloc(P->doc, sizeof(*a));
	a->len = a->cap = (uint32_t)n;
	a->aot = false;
	a->v = NULL;
	if (n) {
		a->v = arena_alloc(P->doc, n * sizeof(*a->v));
		memcpy(a->v, P->stk + base, n * sizeof(*a->v));
	}
	P->stk_len = base;
	v->type = LEV_TOML_ARRAY;
	v->u.array = a;
	return 0;
}

static int parse_keyval(struct parser *P, struct lev_toml_table *t, unsigned depth);

static int parse_inline_table(struct parser *P, struct lev_toml_value *v, unsigned depth)
{
	const char *open = P->p;
	struct lev_toml_table *t;
	int r;

	if (depth > LEV_TOML_MAX_DEPTH)
		return perr(P, open, "nesting too deep (the limit is %d)", LEV_TOML_MAX_DEPTH);
	t = table_new(P->doc, TK_DOTTED, P->line, col_of(P, open));
	P->p++;
	skip_ws(P);
	if (*P->p == '}') {
		P->p++;
	} else {
		for (;;) {
			skip_ws(P);
			r = parse_keyval(P, t, depth);
			if (r < 0)
				return r;
			skip_ws(P);
			if (*P->p == ',') {
				P->p++;
				skip_ws(P);
				if (*P->p == '}')
					return perr(P, P->p, "a trailing comma is not allowed in "
						    "an inline table");
				continue;
			}
			if (*P->p == '}') {
				P->p++;
				break;
			}
			if (*P->p == '\n' || *P->p == '\r')
				return perr(P, P->p, "an inline table must be on one line "
					    "(expected ',' or '}')");
			return pexpect(P, P->p, "',' or '}' in inline table");
		}
	}
	t->kind = TK_INLINE;
	table_trim(P->doc, t);
	v->type = LEV_TOML_TABLE;
	v->u.table = t;
	return 0;
}

/* A value at the cursor; DEPTH is the depth of the container holding it. */
static int parse_value(struct parser *P, struct lev_toml_value *v, unsigned depth)
{
	const char *p = P->p;
	int r;

	v->line = P->line;
	v->col = col_of(P, p);
	switch (*p) {
	case '"':
	case '\'': {
		const char *s = NULL;
		size_t n = 0, mark = P->scratch_len;
		bool in_scratch = true;

		if (p[1] == *p && p[2] == *p)
			r = *p == '"' ? scan_ml_basic(P) : scan_ml_literal(P);
		else if (*p == '"')
			r = scan_basic(P, &s, &n, &in_scratch);
		else {
			r = scan_literal(P, &s, &n);
			in_scratch = false;
		}
		if (r < 0)
			return r;
		if (in_scratch) {
			s = P->scratch ? P->scratch + mark : "";
			n = P->scratch_len - mark;
		}
		v->type = LEV_TOML_STRING;
		v->u.str.ptr = arena_strndup(P->doc, s, n);
		v->u.str.len = n;
		P->scratch_len = mark;
		return 0;
	}
	case 't':
		if (memcmp(p, "true", 4) == 0 && !(cls[U(p[4])] & C_BARE)) {
			v->type = LEV_TOML_BOOL;
			v->u.boolean = true;
			P->p += 4;
			return 0;
		}
		break;
	case 'f':
		if (memcmp(p, "false", 5) == 0 && !(cls[U(p[5])] & C_BARE)) {
			v->type = LEV_TOML_BOOL;
			v->u.boolean = false;
			P->p += 5;
			return 0;
		}
		break;
	case '[':
		return parse_array(P, v, depth + 1);
	case '{':
		return parse_inline_table(P, v, depth + 1);
	case 'i':
	case 'n':
		if (memcmp(p, p[0] == 'i' ? "inf" : "nan", 3) == 0)
			return parse_number(P, v);
		break;
	case '+':
	case '-':
		return parse_number(P, v);
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		if (p[2] == ':' || (is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) &&
				    p[4] == '-'))
			return parse_datetime(P, v);
		return parse_number(P, v);
	default:
		break;
	}
	if (cls[U(*p)] & C_BARE) {
		const char *q = p;
		while (cls[U(*q)] & C_BARE)
			q++;
		return perr(P, p, "expected a value, found '%.*s' (strings must be quoted)",
			    (int)(q - p > 64 ? 64 : q - p), p);
	}
	return pexpect(P, p, "a value");
}

/* "an integer", "an array of tables", ... for messages. */
static const char *a_type(const struct lev_toml_value *v)
{
	switch (v->type) {
	case LEV_TOML_STRING: return "a string";
	case LEV_TOML_INTEGER: return "an integer";
	case LEV_TOML_FLOAT: return "a float";
	case LEV_TOML_BOOL: return "a boolean";
	case LEV_TOML_DATETIME: return "an offset date-time";
	case LEV_TOML_DATETIME_LOCAL: return "a local date-time";
	case LEV_TOML_DATE_LOCAL: return "a local date";
	case LEV_TOML_TIME_LOCAL: return "a local time";
	case LEV_TOML_ARRAY: return v->u.array->aot ? "an array of tables" : "an array";
	case LEV_TOML_TABLE: return "a table";
	}
	return "a value";
}

static const char *table_kind_what(enum table_kind k)
{
	switch (k) {
	case TK_INLINE:
		return "an inline table, which cannot be extended";
	case TK_DOTTED:
		return "defined by dotted keys";
	case TK_HEADER:
		return "defined by a [table] header";
	case TK_IMPLICIT:
	default:
		return "defined by a [table] header";
	}
}

/*
 * A key/value pair at the cursor, into T (at depth DEPTH).  Dotted keys
 * create or walk tables that dotted keys created; they may not enter tables
 * made by headers, inline tables or arrays.
 */
static int parse_keyval(struct parser *P, struct lev_toml_table *t, unsigned depth)
{
	struct lev_toml_value val;
	struct tentry *e;
	struct kpart last;
	uint32_t hash = 0;
	size_t n, i;
	int r;

	r = parse_key(P, &n);
	if (r < 0)
		return r;
	if (depth + n > LEV_TOML_MAX_DEPTH + 1)
		return perr(P, P->keys[0].at, "nesting too deep (the limit is %d)",
			    LEV_TOML_MAX_DEPTH);
	for (i = 0; i + 1 < n; i++) {
		const struct kpart *k = &P->keys[i];

		e = table_find(t, k->s, k->len, &hash);
		if (!e) {
			struct lev_toml_table *nt = table_new(P->doc, TK_DOTTED, k->line, k->col);
			e = table_add(P->doc, t, k->s, k->len, hash, k->line, k->col);
			e->val.type = LEV_TOML_TABLE;
			e->val.line = k->line;
			e->val.col = k->col;
			e->val.u.table = nt;
			t = nt;
		} else if (e->val.type == LEV_TOML_TABLE && e->val.u.table->kind == TK_DOTTED) {
			t = (struct lev_toml_table *)e->val.u.table;
		} else {
			char path[200];
			fmt_path(P, i + 1, path, sizeof(path));
			if (e->val.type == LEV_TOML_TABLE)
				return perr(P, k->at, "cannot add keys to table '%s' with dotted "
					    "keys: it is %s (at line %u, column %u)", path,
					    table_kind_what(e->val.u.table->kind), e->val.line,
					    e->val.col);
			return perr(P, k->at, "cannot use '%s' as a table: it is already %s "
				    "(at line %u, column %u)", path, a_type(&e->val), e->line,
				    e->col);
		}
	}
	last = P->keys[n - 1];
	e = table_find(t, last.s, last.len, &hash);
	if (e) {
		char path[200];
		fmt_path(P, n, path, sizeof(path));
		return perr(P, last.at, "duplicate key '%s' (first defined at line %u, column %u)",
			    path, e->line, e->col);
	}
	skip_ws(P);
	if (*P->p != '=') {
		char path[200], what[260];
		fmt_path(P, n, path, sizeof(path));
		snprintf(what, sizeof(what), "'=' after key '%s'", path);
		return pexpect(P, P->p, what);
	}
	P->p++;
	skip_ws(P);
	r = parse_value(P, &val, depth + (unsigned)n - 1);
	if (r < 0)
		return r;
	e = table_add(P->doc, t, last.s, last.len, hash, last.line, last.col);
	e->val = val;
	return 0;
}

/* A [header] or [[header]] at the cursor. */
static int parse_header(struct parser *P)
{
	const char *open = P->p;
	bool aot = P->p[1] == '[';
	struct lev_toml_table *t = P->doc->root;
	unsigned line = P->line, col = col_of(P, open), depth = 0;
	char path[200];
	uint32_t hash = 0;
	struct tentry *e;
	size_t n, i;
	int r;

	P->p += aot ? 2 : 1;
	skip_ws(P);
	r = parse_key(P, &n);
	if (r < 0)
		return r;
	if (aot && *P->p == ']' && P->p[1] != ']')
		return pexpect(P, P->p + 1, "a second ']' to close the array of tables header");
	if (*P->p != ']' || (aot && P->p[1] != ']'))
		return pexpect(P, P->p, aot ? "']]' to close the array of tables header" :
			       "']' to close the table header");
	P->p += aot ? 2 : 1;

	for (i = 0; i < n; i++) {
		const struct kpart *k = &P->keys[i];
		bool is_last = i + 1 == n;

		e = table_find(t, k->s, k->len, &hash);
		if (!e) {
			struct lev_toml_table *nt;

			depth++;
			if (is_last && aot) {
				struct lev_toml_array *a = arena_zalloc(P->doc, sizeof(*a));
				depth++;
				if (depth > LEV_TOML_MAX_DEPTH)
					break;
				nt = table_new(P->doc, TK_HEADER, line, col);
				a->aot = true;
				a->cap = 4;
				a->len = 1;
				a->v = arena_zalloc(P->doc, 4 * sizeof(*a->v));
				a->v[0].type = LEV_TOML_TABLE;
				a->v[0].line = line;
				a->v[0].col = col;
				a->v[0].u.table = nt;
				e = table_add(P->doc, t, k->s, k->len, hash, k->line, k->col);
				e->val.type = LEV_TOML_ARRAY;
				e->val.line = line;
				e->val.col = col;
				e->val.u.array = a;
			} else {
				if (depth > LEV_TOML_MAX_DEPTH)
					break;
				if (is_last)
					nt = table_new(P->doc, TK_HEADER, line, col);
				else
					nt = table_new(P->doc, TK_IMPLICIT, k->line, k->col);
				e = table_add(P->doc, t, k->s, k->len, hash, k->line, k->col);
				e->val.type = LEV_TOML_TABLE;
				e->val.line = nt->line;
				e->val.col = nt->col;
				e->val.u.table = nt;
			}
			t = nt;
			continue;
		}
		if (e->val.type == LEV_TOML_TABLE) {
			struct lev_toml_table *et = (struct lev_toml_table *)e->val.u.table;

			depth++;
			if (et->kind == TK_INLINE) {
				fmt_path(P, i + 1, path, sizeof(path));
				return perr(P, k->at, "cannot extend '%s': it is an inline table "
					    "(at line %u, column %u), which is closed once written",
					    path, e->val.line, e->val.col);
			}
			if (is_last && aot) {
				fmt_path(P, i + 1, path, sizeof(path));
				return perr(P, open, "cannot define '%s' as an array of tables: it "
					    "is already a table (at line %u, column %u)", path,
					    e->val.line, e->val.col);
			}
			if (is_last) {
				if (et->kind == TK_IMPLICIT) {
					et->kind = TK_HEADER;
					et->line = line;
					et->col = col;
					e->val.line = line;
					e->val.col = col;
				} else if (et->kind == TK_DOTTED) {
					fmt_path(P, i + 1, path, sizeof(path));
					return perr(P, open, "cannot define table '%s': it was "
						    "already defined by dotted keys (at line %u, "
						    "column %u)", path, e->val.line, e->val.col);
				} else {
					fmt_path(P, i + 1, path, sizeof(path));
					return perr(P, open, "table '%s' is defined twice (first at "
						    "line %u, column %u)", path, e->val.line,
						    e->val.col);
				}
			}
			t = et;
		} else if (e->val.type == LEV_TOML_ARRAY && e->val.u.array->aot) {
			struct lev_toml_array *a = (struct lev_toml_array *)e->val.u.array;

			depth += 2;
			if (is_last && !aot) {
				fmt_path(P, i + 1, path, sizeof(path));
				return perr(P, open, "cannot define table '%s': it is already an "
					    "array of tables (at line %u, column %u)", path,
					    e->val.line, e->val.col);
			}
			if (is_last) {
				struct lev_toml_table *nt;
				if (depth > LEV_TOML_MAX_DEPTH)
					break;
				if (a->len == UINT32_MAX) {
					fmt_path(P, i + 1, path, sizeof(path));
					return perr(P, open, "too many tables in array '%s'", path);
				}
				if (a->len == a->cap) {
					uint32_t ncap = a->cap * 2;
					a->v = arena_grow(P->doc, a->v, a->cap * sizeof(*a->v),
							  ncap * sizeof(*a->v));
					a->cap = ncap;
				}
				nt = table_new(P->doc, TK_HEADER, line, col);
				memset(&a->v[a->len], 0, sizeof(a->v[a->len]));
				a->v[a->len].type = LEV_TOML_TABLE;
				a->v[a->len].line = line;
				a->v[a->len].col = col;
				a->v[a->len].u.table = nt;
				a->len++;
				t = nt;
			} else {
				t = (struct lev_toml_table *)a->v[a->len - 1].u.table;
			}
		} else {
			fmt_path(P, i + 1, path, sizeof(path));
			return perr(P, k->at, "cannot use '%s' as a table: it is already %s "
				    "(at line %u, column %u)", path, a_type(&e->val), e->line,
				    e->col);
		}
		if (depth > LEV_TOML_MAX_DEPTH)
			break;
	}
	if (depth > LEV_TOML_MAX_DEPTH)
		return perr(P, open, "nesting too deep (the limit is %d)", LEV_TOML_MAX_DEPTH);
	P->cur = t;
	P->cur_depth = depth;
	section_open(P->doc, t);
	return 0;
}

static int parse_document(struct parser *P)
{
	const char *after = "";
	int r;

	if (U(P->p[0]) == 0xef && U(P->p[1]) == 0xbb && U(P->p[2]) == 0xbf)
		P->p += 3;	/* a byte order mark */
	P->line_start = P->text = P->col_at = P->p;
	P->col_val = 1;
	for (;;) {
		skip_ws(P);
		switch (*P->p) {
		case '#':
			r = skip_comment(P);
			if (r < 0)
				return r;
			continue;
		case '\n':
		case '\r':
			r = eat_newline(P);
			if (r < 0)
				return r;
			continue;
		case '[':
			r = parse_header(P);
			after = "the table header";
			break;
		case '\0':
			if (at_eof(P))
				return 0;
			return perr(P, P->p, "control character U+0000 is not allowed here");
		default:
			r = parse_keyval(P, P->cur, P->cur_depth);
			after = "the value";
			break;
		}
		if (r < 0)
			return r;
		skip_ws(P);
		if (*P->p == '#') {
			r = skip_comment(P);
			if (r < 0)
				return r;
		}
		if (*P->p == '\n' || *P->p == '\r') {
			r = eat_newline(P);
			if (r < 0)
				return r;
		} else if (!at_eof(P)) {
			char what[64];
			snprintf(what, sizeof(what), "a new line or a comment after %s", after);
			return pexpect(P, P->p, what);
		}
	}
}

int lev_toml_parse(const char *buf, size_t len, const char *name, struct lev_toml_doc **out,
		   struct lev_err *err)
{
	struct lev_toml_doc *doc;
	struct parser P;
	char *copy;
	int r;

	pthread_once(&toml_once, toml_init_once);
	if (!name)
		name = "<input>";
	if (len > TOML_MAX_INPUT)
		return lev_err_set(err, LEV_EPARSE, "%s: document too large (%zu bytes; the limit "
				   "is %zu)", name, len, TOML_MAX_INPUT);
	if (!c_locale)
		return lev_err_set(err, -ENOMEM, "cannot create the C locale");
	copy = xmalloc(len + SENTINEL);
	if (len)
		memcpy(copy, buf, len);
	memset(copy + len, 0, SENTINEL);

	doc = xcalloc(1, sizeof(*doc));
	doc->next_block = len / 2 > ARENA_MIN_BLOCK ? (len / 2 < ARENA_MAX_BLOCK ?
						       len / 2 : ARENA_MAX_BLOCK) : ARENA_MIN_BLOCK;
	doc->root = table_new(doc, TK_HEADER, 1, 1);

	memset(&P, 0, sizeof(P));
	P.p = P.base = P.text = P.line_start = P.col_at = copy;
	P.col_val = 1;
	P.end = copy + len;
	P.line = 1;
	P.name = name;
	P.err = err;
	P.doc = doc;
	P.cur = doc->root;

	section_open(doc, doc->root);
	r = parse_document(&P);
	section_close(doc);
	free(doc->sec_e);
	doc->sec_e = NULL;
	doc->sec_cap = 0;
	free(copy);
	free(P.scratch);
	free(P.stk);
	if (r < 0) {
		lev_toml_free(doc);
		return r;
	}
	*out = doc;
	return 0;
}

struct lev_toml_doc *lev_toml_free(struct lev_toml_doc *doc)
{
	struct arena_block *b, *next;

	if (!doc)
		return NULL;
	for (b = doc->blocks; b; b = next) {
		next = b->next;
		UNPOISON(b->data, b->size);
		free(b);
	}
	free(doc);
	return NULL;
}

int lev_toml_parse_file(const char *path, struct lev_toml_doc **out, struct lev_err *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = lev_read_file(path, LEV_TOML_MAX_FILE, &buf, &len, err);
	if (r < 0)
		return r;
	return lev_toml_parse(buf, len, path, out, err);
}

const struct lev_toml_table *lev_toml_root(const struct lev_toml_doc *doc)
{
	return doc->root;
}

size_t lev_toml_table_len(const struct lev_toml_table *t)
{
	return t->len;
}

const char *lev_toml_table_key(const struct lev_toml_table *t, size_t i, size_t *len_out)
{
	if (i >= t->len)
		return NULL;
	if (len_out)
		*len_out = t->e[i].klen;
	return t->e[i].key;
}

const struct lev_toml_value *lev_toml_table_value(const struct lev_toml_table *t, size_t i)
{
	return i < t->len ? &t->e[i].val : NULL;
}

void lev_toml_table_key_pos(const struct lev_toml_table *t, size_t i, unsigned *line,
			    unsigned *col)
{
	if (i >= t->len) {
		*line = *col = 0;
		return;
	}
	*line = t->e[i].line;
	*col = t->e[i].col;
}

const struct lev_toml_value *lev_toml_table_getn(const struct lev_toml_table *t, const char *key,
						  size_t len)
{
	const struct tentry *e;
	uint32_t hash = 0;

	e = table_find(t, key, len, &hash);
	return e ? &e->val : NULL;
}

const struct lev_toml_value *lev_toml_table_get(const struct lev_toml_table *t, const char *key)
{
	return lev_toml_table_getn(t, key, strlen(key));
}

void lev_toml_table_pos(const struct lev_toml_table *t, unsigned *line, unsigned *col)
{
	*line = t->line;
	*col = t->col;
}

size_t lev_toml_array_len(const struct lev_toml_array *a)
{
	return a->len;
}

const struct lev_toml_value *lev_toml_array_at(const struct lev_toml_array *a, size_t i)
{
	return i < a->len ? &a->v[i] : NULL;
}

const char *lev_toml_type_name(enum lev_toml_type t)
{
	switch (t) {
	case LEV_TOML_STRING: return "string";
	case LEV_TOML_INTEGER: return "integer";
	case LEV_TOML_FLOAT: return "float";
	case LEV_TOML_BOOL: return "boolean";
	case LEV_TOML_DATETIME: return "offset date-time";
	case LEV_TOML_DATETIME_LOCAL: return "local date-time";
	case LEV_TOML_DATE_LOCAL: return "local date";
	case LEV_TOML_TIME_LOCAL: return "local time";
	case LEV_TOML_ARRAY: return "array";
	case LEV_TOML_TABLE: return "table";
	}
	return "unknown";
}
