/*
 * shellkeys-expand.c - the fields bash makes of one word after the
 * parser's quote removal: brace expansion (comma lists and sequences),
 * empty-word removal, tilde expansion and pathname patterns.
 *
 * A word holds its raw text and a mask (shellkeys-internal.h), so only
 * unquoted braces, commas, tildes and pattern characters count, as in bash.
 * Whatever this file does not predict exactly (a zero-padded or mixed-case
 * sequence, ~user, a tilde after '=' in an assignment-like word, too many
 * fields) makes the word opaque: its fields are not known, and a command
 * with an opaque argument gets no key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/policy/shellkeys-internal.h"
#include "liblev/base/xalloc.h"

/* Fields one word may expand into before it counts as unpredictable. */
#define SK_MAX_FIELDS 256

/* Text and mask of LEN bytes each (not NUL-terminated). */
struct span {
	const char *r, *m;
	size_t len;
};

/*
 * The fields a brace expansion makes so far.  Every piece's text and mask
 * lie in TEXT, one after the other, NUL-terminated: one allocation for all
 * of them (a word's braces make dozens of pieces on the way to its fields).
 */
struct piece {
	size_t off;	/* text at TEXT + OFF, mask right after its NUL */
	size_t len;
};

/* Pieces and text most words need, kept in the struct (on the stack) until they do not fit. */
#define PIECES_INLINE 8
#define TEXT_INLINE 256

struct pieces {
	struct piece *v;	/* INLINE_V, or allocated */
	size_t n, cap;
	char *text;		/* INLINE_TEXT, or allocated */
	size_t text_len, text_cap;
	bool bad;	/* could not predict */
	struct piece inline_v[PIECES_INLINE];
	char inline_text[TEXT_INLINE];
};

/* Room for one more piece of LEN bytes (text and mask, each NUL-terminated). */
static void pieces_room(struct pieces *ps, size_t len)
{
	size_t want = 2 * (len + 1), cap;

	if (!ps->v) {
		ps->v = ps->inline_v;
		ps->cap = PIECES_INLINE;
		ps->text = ps->inline_text;
		ps->text_cap = TEXT_INLINE;
	}
	if (ps->n == ps->cap) {
		struct piece *v = xreallocarray(NULL, ps->cap * 2, sizeof(*v));

		memcpy(v, ps->v, ps->n * sizeof(*v));
		if (ps->v != ps->inline_v)
			free(ps->v);
		ps->v = v;
		ps->cap *= 2;
	}
	if (ps->text_cap - ps->text_len < want) {
		char *t;

		for (cap = ps->text_cap * 2; cap - ps->text_len < want; cap *= 2)
			;
		t = xmalloc(cap);
		memcpy(t, ps->text, ps->text_len);
		if (ps->text != ps->inline_text)
			free(ps->text);
		ps->text = t;
		ps->text_cap = cap;
	}
}

static struct span piece_span(const struct pieces *ps, size_t k)
{
	const char *r = ps->text + ps->v[k].off;

	return (struct span){ r, r + ps->v[k].len + 1, ps->v[k].len };
}

/* SP's text to R and mask to M (most spans are a few bytes, many none). */
static inline void span_copy(char *r, char *m, const struct span *sp)
{
	if (!sp->len)
		return;
	memcpy(r, sp->r, sp->len);
	memcpy(m, sp->m, sp->len);
}

/* Append A B C (text and mask each) as one piece.  None of them may lie in PS. */
static void pieces_push3(struct pieces *ps, const struct span *a, const struct span *b,
			 const struct span *c)
{
	size_t len = a->len + b->len + c->len;
	struct piece *pc;
	char *r, *m;

	if (ps->bad)
		return;
	if (ps->n >= SK_MAX_FIELDS) {
		ps->bad = true;
		return;
	}
	pieces_room(ps, len);
	pc = &ps->v[ps->n++];
	pc->off = ps->text_len;
	pc->len = len;
	r = ps->text + pc->off;
	m = r + len + 1;
	span_copy(r, m, a);
	span_copy(r + a->len, m + a->len, b);
	span_copy(r + a->len + b->len, m + a->len + b->len, c);
	r[len] = m[len] = '\0';
	ps->text_len += 2 * (len + 1);
}

static void pieces_push(struct pieces *ps, const char *r, const char *m, size_t len)
{
	struct span a = { r, m, len }, none = { "", "", 0 };

	pieces_push3(ps, &a, &none, &none);
}

/* An empty set (the inline arrays are left as they are: they are large). */
static void pieces_init(struct pieces *ps)
{
	ps->v = NULL;
	ps->text = NULL;
	ps->n = ps->cap = ps->text_len = ps->text_cap = 0;
	ps->bad = false;
}

static void pieces_release(struct pieces *ps)
{
	if (ps->v != ps->inline_v)
		free(ps->v);
	if (ps->text != ps->inline_text)
		free(ps->text);
	ps->v = NULL;
	ps->text = NULL;
	ps->n = ps->cap = ps->text_len = ps->text_cap = 0;
	ps->bad = false;
}

static bool unq(const char *m, size_t i, const char *r, char c)
{
	return m[i] == SK_UNQ && r[i] == c;
}

/* An optionally signed decimal without leading zeros; false otherwise. */
static bool seq_int(const char *s, size_t len, long *out)
{
	size_t i = 0;
	long v = 0;

	if (i < len && s[i] == '-')
		i++;
	if (i >= len || len - i > 6)
		return false;
	if (s[i] == '0' && len - i > 1)
		return false; /* zero padding: bash pads the output; not modelled */
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = s[0] == '-' ? -v : v;
	return true;
}

/*
 * A sequence expression between the braces (R[0..LEN), every byte
 * unquoted): {1..5}, {a..e}, {1..10..2}.  1: expanded into OUT;
 * 0: not a sequence (the brace is literal); -1: a sequence this file does
 * not predict.
 */
static int sequence(const char *r, const char *m, size_t len, struct pieces *out)
{
	const char *d1, *d2 = NULL;
	long a, b, incr = 1, v;
	bool letters = false;
	size_t i;

	for (i = 0; i < len; i++)
		if (m[i] != SK_UNQ)
			return 0;
	d1 = len >= 2 ? strstr(r, "..") : NULL;
	if (!d1 || (size_t)(d1 - r) >= len)
		return 0;
	d2 = strstr(d1 + 2, "..");
	{
		size_t l1 = (size_t)(d1 - r);
		size_t l2 = (d2 ? (size_t)(d2 - d1) : len - l1) - 2;
		const char *s2 = d1 + 2;

		if (l1 == 1 && l2 == 1 && ((r[0] >= 'a' && r[0] <= 'z') || (r[0] >= 'A' && r[0] <= 'Z'))) {
			if (!((s2[0] >= 'a' && s2[0] <= 'z') || (s2[0] >= 'A' && s2[0] <= 'Z')))
				return 0;
			if ((r[0] >= 'a') != (s2[0] >= 'a'))
				return -1; /* across cases bash walks through [\]^_` too */
			a = r[0];
			b = s2[0];
			letters = true;
		} else {
			if (!seq_int(r, l1, &a) || !seq_int(s2, l2, &b)) {
				/* a padded number still is a sequence bash expands */
				for (i = 0; i < len; i++)
					if (!strchr("-0123456789.", r[i]))
						return 0;
				return -1;
			}
		}
		if (d2) {
			size_t l3 = len - (size_t)(d2 + 2 - r);

			if (!seq_int(d2 + 2, l3, &incr))
				return strspn(d2 + 2, "-0123456789") == l3 && l3 ? -1 : 0;
			if (incr < 0)
				incr = -incr;
			if (incr == 0)
				return -1;
		}
	}
	if ((a > b ? a - b : b - a) / incr >= SK_MAX_FIELDS)
		return -1;
	for (v = a;; v += a <= b ? incr : -incr) {
		char buf[16], mk[16];
		size_t n;

		if ((a <= b && v > b) || (a > b && v < b))
			break;
		if (letters) {
			buf[0] = (char)v;
			n = 1;
		} else {
			/* "%ld" of V (at most six digits and a sign), without printf */
			unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
			char *e = buf + sizeof(buf);

			do {
				*--e = (char)('0' + u % 10);
				u /= 10;
			} while (u);
			if (v < 0)
				*--e = '-';
			n = (size_t)(buf + sizeof(buf) - e);
			memmove(buf, e, n);
		}
		memset(mk, SK_UNQ, n);
		pieces_push(out, buf, mk, n);
	}
	return 1;
}

static void brace_expand(const char *r, const char *m, size_t len, struct pieces *out,
			 unsigned depth);

/* OUT += PRE x ALTS x POST (each already expanded). */
static void cross(const char *pr, const char *pm, size_t plen, const struct pieces *alts,
		  const struct pieces *post, struct pieces *out)
{
	struct span pre = { pr, pm, plen };
	size_t a, s;

	for (a = 0; a < alts->n && !out->bad; a++) {
		struct span alt = piece_span(alts, a);

		for (s = 0; s < post->n && !out->bad; s++) {
			struct span rest = piece_span(post, s);

			pieces_push3(out, &pre, &alt, &rest);
		}
	}
}

static void brace_expand(const char *r, const char *m, size_t len, struct pieces *out,
			 unsigned depth)
{
	size_t i, j;

	if (depth > 16) {
		out->bad = true;
		return;
	}
	for (i = 0; i < len; i++) {
		unsigned level = 0;
		bool comma = false;

		if (!unq(m, i, r, '{'))
			continue;
		for (j = i + 1; j < len; j++) {
			if (unq(m, j, r, '{'))
				level++;
			else if (unq(m, j, r, '}')) {
				if (level == 0)
					break;
				level--;
			} else if (level == 0 && unq(m, j, r, ',')) {
				comma = true;
			}
		}
		if (j >= len)
			continue; /* no matching '}' */
		{
			struct pieces alts, post;
			int sq = 0;

			pieces_init(&alts);
			pieces_init(&post);
			if (comma) {
				size_t s = i + 1, k;

				level = 0;
				for (k = i + 1; k <= j; k++) {
					if (k < j && unq(m, k, r, '{'))
						level++;
					else if (k < j && unq(m, k, r, '}'))
						level--;
					if (k == j || (level == 0 && unq(m, k, r, ','))) {
						brace_expand(r + s, m + s, k - s, &alts, depth + 1);
						s = k + 1;
					}
				}
			} else {
				/* the text between the braces, NUL-terminated for sequence() */
				char small[2 * 64];
				char *sr = j - i <= 64 ? small : xmalloc(2 * (j - i));
				char *sm = sr + (j - i);

				memcpy(sr, r + i + 1, j - i - 1);
				memcpy(sm, m + i + 1, j - i - 1);
				sr[j - i - 1] = sm[j - i - 1] = '\0';
				sq = sequence(sr, sm, j - i - 1, &alts);
				if (sr != small)
					free(sr);
				if (sq < 0)
					alts.bad = true;
				if (sq == 0) {
					size_t k;

					pieces_release(&alts);
					/*
					 * A literal brace with an unquoted comma after it:
					 * bash may match this '{' with a later '}' ("{-v}x,}"
					 * is "-v}x"), which this file does not model.  The
					 * word is unpredictable, so the line gets no key.
					 */
					for (k = j + 1; k < len; k++)
						if (unq(m, k, r, ',')) {
							out->bad = true;
							return;
						}
					continue; /* a literal brace: look further on */
				}
			}
			brace_expand(r + j + 1, m + j + 1, len - j - 1, &post, depth + 1);
			if (alts.bad || post.bad)
				out->bad = true;
			else
				cross(r, m, i, &alts, &post, out);
			pieces_release(&alts);
			pieces_release(&post);
			return;
		}
	}
	pieces_push(out, r, m, len);
}

/* NAME= at the start of a field, all unquoted: bash expands '~' after '=' and ':'. */
static bool assignment_tilde(const char *r, const char *m, size_t len)
{
	size_t i, eq;

	for (eq = 0; eq < len && unq(m, eq, r, '=') == false; eq++)
		if (m[eq] != SK_UNQ)
			return false;
	if (eq >= len || !sk_is_name(r, eq))
		return false;
	for (i = eq; i + 1 < len; i++)
		if ((unq(m, i, r, '=') || unq(m, i, r, ':')) && unq(m, i + 1, r, '~'))
			return true;
	return false;
}

static struct sk_word *push_field(struct lev_arena *a, struct sk_word **out, size_t *n,
				  size_t *cap)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;

		*out = lev_arena_grow(a, *out, *cap * sizeof(**out), c * sizeof(**out));
		*cap = c;
	}
	memset(&(*out)[*n], 0, sizeof(**out));
	return &(*out)[(*n)++];
}

static void push_opaque(struct lev_arena *a, const struct sk_word *w, struct sk_word **out,
			size_t *n, size_t *cap)
{
	struct sk_word *f = push_field(a, out, n, cap);

	f->val = w->val; /* shared: both in the arena */
	f->len = strlen(f->val);
	f->quoted = w->quoted;
	f->expanded = true;
	f->opaque = true;
	f->dollar = w->dollar;
	f->nonascii = w->nonascii;
}

/* No unquoted character brace, tilde or pattern expansion looks at. */
static bool plain(const char *r, const char *m, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (m[i] != SK_UNQ)
			continue;
		switch (r[i]) {
		case '{':
		case '~':
		case '*':
		case '?':
		case '[':
			return false;
		}
	}
	return true;
}

bool sk_expand_word(struct lev_arena *a, struct sk_word *w, struct sk_word **out, size_t *n,
		    size_t *cap)
{
	const char *raw = w->raw ? w->raw : w->val;
	struct pieces ps;
	size_t k;
	bool ok = true;

	if (w->opaque || (!w->mask && !w->plain) || (w->expanded && w->procsubst_only)) {
		if (w->procsubst_only) {
			struct sk_word *f = push_field(a, out, n, cap);

			f->val = w->val;
			f->expanded = true;
			f->procsubst_only = true;
			return true;
		}
		push_opaque(a, w, out, n, cap);
		return !w->opaque;
	}
	if (w->dollar) {
		push_opaque(a, w, out, n, cap);
		return false;
	}
	if (w->plain || plain(raw, w->mask, w->raw_len)) {
		/* the common case: one field, the word's own text */
		struct sk_word *f;

		if (w->raw_len == 0)
			return true; /* an empty unquoted word is removed */
		f = push_field(a, out, n, cap);
		f->val = w->val;
		f->len = w->len;
		f->quoted = w->quoted;
		f->nonascii = w->nonascii;
		return true;
	}
	pieces_init(&ps);
	brace_expand(raw, w->mask, w->raw_len, &ps, 0);
	if (ps.bad) {
		pieces_release(&ps);
		push_opaque(a, w, out, n, cap);
		return false;
	}
	for (k = 0; k < ps.n; k++) {
		struct span sp = piece_span(&ps, k);
		const char *r = sp.r, *m = sp.m;
		size_t len = sp.len, i, j;
		struct sk_word *f;
		bool quoted = false, glob = false, bracket = false;
		char *val;

		if (len == 0)
			continue; /* an empty unquoted word is removed */
		for (i = 0; i < len; i++) {
			if (m[i] != SK_UNQ)
				quoted = true;
			else if (r[i] == '*' || r[i] == '?')
				glob = true;
			else if (r[i] == '[')
				bracket = true;
			else if (r[i] == ']' && bracket)
				glob = true;
		}
		if ((unq(m, 0, r, '~') && !(len == 1 || unq(m, 1, r, '/'))) ||
		    assignment_tilde(r, m, len)) {
			ok = false; /* ~user, ~+, ~-, NAME=~/x: the home of someone */
		}
		val = lev_arena_alloc(a, len + 1);
		for (i = 0, j = 0; i < len; i++)
			if (m[i] != SK_MARK)
				val[j++] = r[i];
		val[j] = '\0';
		f = push_field(a, out, n, cap);
		f->val = val;
		f->len = j;
		f->quoted = quoted;
		f->glob = glob;
		f->from_brace = ps.n > 1 || len != w->raw_len;
		f->expanded = glob || f->from_brace || !ok;
		f->opaque = !ok;
		f->tilde = ok && unq(m, 0, r, '~');
		for (i = 0; i < j; i++)
			if ((unsigned char)val[i] >= 0x80)
				f->nonascii = true;
		if (!ok)
			break;
	}
	pieces_release(&ps);
	return ok;
}
