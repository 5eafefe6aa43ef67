/*
 * provenance.c - argument provenance (provenance.h).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"
#include "liblev/policy/provenance.h"

struct corpus {
	char *text;		/* normalised, each piece ends with '\n' (never inside one) */
	size_t len, alloc;
	bool overflow;
};

struct lev_provenance {
	struct corpus c[_LEV_INTEGRITY_MAX];
};

struct lev_provenance *lev_provenance_new(void)
{
	return xcalloc(1, sizeof(struct lev_provenance));
}

struct lev_provenance *lev_provenance_free(struct lev_provenance *p)
{
	if (!p)
		return NULL;
	for (int i = 0; i < _LEV_INTEGRITY_MAX; i++)
		free(p->c[i].text);
	free(p);
	return NULL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Case, whitespace and %XX into OUT (room for LEN + 1 bytes); returns the length. */
static size_t fold(const char *s, size_t len, char *out)
{
	size_t n = 0;
	bool space = false;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%' && i + 2 < len + 0 && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			c = (unsigned char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		}
		if (is_space(c) || c == '\0') {
			space = n > 0;
			continue;
		}
		if (space)
			out[n++] = ' ';
		space = false;
		out[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	out[n] = '\0';
	return n;
}

/* A URL value: "scheme://[user@]host[:port]/path?query#frag" becomes "host[:port]/path". */
static size_t url_host_path(char *s, size_t n)
{
	char *p = strstr(s, "://"), *start, *at, *end;

	if (!p || p == s || memchr(s, ' ', (size_t)(p - s)))
		return n;
	start = p + 3;
	end = start + strcspn(start, "?# ");
	at = memchr(start, '@', (size_t)(strcspn(start, "/?# ")));
	if (at)
		start = at + 1;
	n = (size_t)(end - start);
	memmove(s, start, n);
	s[n] = '\0';
	return n;
}

char *lev_provenance_normalise(const char *s, size_t len, bool value, size_t *out_len)
{
	char *out = xmalloc(len + 1);
	size_t n = fold(s, len, out);

	if (value) {
		n = url_host_path(out, n);
		while (n && strchr(".,;:!?'\")]}>/", out[n - 1]))
			out[--n] = '\0';
	}
	if (out_len)
		*out_len = n;
	return out;
}

/* Room in C for LEN more bytes and a separator; false when it overflows. */
static bool corpus_room(struct corpus *c, size_t len)
{
	size_t need;

	if (c->overflow)
		return false;
	if (len > LEV_PROVENANCE_TEXT_MAX - c->len) {
		c->overflow = true;
		return false;
	}
	need = c->len + len + 2;
	if (need > c->alloc) {
		c->alloc = need > 2 * c->alloc ? need : 2 * c->alloc;
		c->text = xrealloc(c->text, c->alloc);
	}
	return true;
}

void lev_provenance_add(struct lev_provenance *p, enum lev_integrity i, const char *text,
			size_t len)
{
	struct corpus *c;

	if (!p || !text)
		return;
	c = &p->c[i == LEV_TRUSTED ? LEV_TRUSTED : LEV_UNTRUSTED];
	if (!corpus_room(c, len))
		return;
	c->len += fold(text, len, c->text + c->len);
	c->text[c->len++] = '\n';
	c->text[c->len] = '\0';
}

/* Is C a byte that separates the words of an argument (space, quotes, shell and query syntax)? */
static bool word_break(char c)
{
	return c == ' ' || (c && strchr("'\"`;|&<>()=,:/?#", c));
}

/* Cut every occurrence of W (N bytes) out of TEXT (LEN bytes): each becomes separators. */
static void cut_word(char *text, size_t len, const char *w, size_t n)
{
	char *at = text;

	if (n < LEV_PROVENANCE_MIN)
		return;
	while ((at = memmem(at, len - (size_t)(at - text), w, n)) != NULL)
		memset(at, '\n', n);
}

/* Cut V (a JSON value) out of TEXT: each string whole, and each of its words. */
static void cut_value(char *text, size_t len, const json_t *v, int depth)
{
	const char *k;
	json_t *e;
	size_t i;

	if (depth > 32)
		return;
	if (json_is_array(v)) {
		json_array_foreach((json_t *)v, i, e)
			cut_value(text, len, e, depth + 1);
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, e)
			cut_value(text, len, e, depth + 1);
	} else if (json_is_string(v) && json_string_length(v) <= LEV_PROVENANCE_VALUE_MAX) {
		_cleanup_free_ char *f = xmalloc(json_string_length(v) + 1);
		size_t n = fold(json_string_value(v), json_string_length(v), f), w;

		cut_word(text, len, f, n);
		for (size_t s = 0; s < n; s += w + 1) {
			for (w = 0; s + w < n && !word_break(f[s + w]); w++)
				;
			cut_word(text, len, f + s, w);
		}
	}
}

void lev_provenance_add_reply(struct lev_provenance *p, enum lev_integrity i, const char *text,
			      size_t len, const json_t *args, enum lev_integrity model)
{
	struct corpus *c = p ? &p->c[LEV_TRUSTED] : NULL;
	size_t n;

	if (!p || !text)
		return;
	if (i != LEV_TRUSTED || model == LEV_TRUSTED || !args) {
		lev_provenance_add(p, i, text, len);
		return;
	}
	if (!corpus_room(c, len))
		return;
	n = fold(text, len, c->text + c->len);
	/* the model's words, echoed: as trusted as the model, so no evidence at all */
	cut_value(c->text + c->len, n, args, 0);
	c->len += n;
	c->text[c->len++] = '\n';
	c->text[c->len] = '\0';
}

bool lev_provenance_has_untrusted(const struct lev_provenance *p)
{
	return p && (p->c[LEV_UNTRUSTED].len || p->c[LEV_UNTRUSTED].overflow);
}

static bool occurs(const struct corpus *c, const char *v, size_t n)
{
	return c->len && memmem(c->text, c->len, v, n) != NULL;
}

/* V (N bytes, normalised): long enough, in no trusted text, in untrusted text. */
static bool value_marked(const struct lev_provenance *p, const char *v, size_t n)
{
	if (n > LEV_PROVENANCE_VALUE_MAX)
		n = LEV_PROVENANCE_VALUE_MAX;
	if (n < LEV_PROVENANCE_MIN || occurs(&p->c[LEV_TRUSTED], v, n))
		return false;
	return p->c[LEV_UNTRUSTED].overflow || occurs(&p->c[LEV_UNTRUSTED], v, n);
}

/*
 * A URL's query values (FOLDED: the whole value, case- and %XX-folded):
 * the part of a URL an attacker fills in (?title=..., ?to=...), judged one
 * by one, so a trusted host and path cannot carry untrusted words.  With
 * OUT NULL: stop at the first marked value; else push "ARG?KEY" for every
 * marked one onto *OUT (once each).
 */
static bool query_marked(const struct lev_provenance *p, char *folded, const char *arg,
			 char ***out)
{
	char *q = strstr(folded, "://") ? strchr(folded, '?') : NULL, *save = NULL, *kv;
	bool any = false;

	if (!q)
		return false;
	q[strcspn(q, "#")] = '\0';
	for (kv = strtok_r(q + 1, "&;", &save); kv; kv = strtok_r(NULL, "&;", &save)) {
		char *v = strchr(kv, '=');
		size_t n;

		if (!v)
			continue;
		*v++ = '\0';
		for (char *c = v; *c; c++)
			if (*c == '+')
				*c = ' ';
		n = strlen(v);
		while (n && strchr(".,;:!?'\")]}>/ ", v[n - 1]))
			v[--n] = '\0';
		if (!value_marked(p, v, n))
			continue;
		if (!out)
			return true;
		any = true;
		if (lev_strv_len(*out) < 256 && strlen(kv) <= 256) {
			char *name = xasprintf("%s?%s", arg, kv);

			if (lev_strv_contains(*out, name))
				free(name);
			else
				*out = lev_strv_push_take(*out, name);
		}
	}
	return any;
}

bool lev_provenance_marked(const struct lev_provenance *p, const char *s, size_t len)
{
	size_t n = 0;
	char *v, *folded;
	bool marked;

	if (!lev_provenance_has_untrusted(p))
		return false;
	v = lev_provenance_normalise(s, len, true, &n);
	marked = value_marked(p, v, n);
	free(v);
	if (!marked && len <= LEV_PROVENANCE_TEXT_MAX) {
		folded = xmalloc(len + 1);
		(void)fold(s, len, folded);
		marked = query_marked(p, folded, NULL, NULL);
		free(folded);
	}
	return marked;
}

/* Any string inside V marked?  DEPTH bounds the walk. */
static bool any_marked(const struct lev_provenance *p, const json_t *v, int depth)
{
	const char *k;
	json_t *e;
	size_t i;

	if (depth > 32)
		return false;
	switch (json_typeof(v)) {
	case JSON_STRING:
		return lev_provenance_marked(p, json_string_value(v), json_string_length(v));
	case JSON_ARRAY:
		json_array_foreach((json_t *)v, i, e)
			if (any_marked(p, e, depth + 1))
				return true;
		return false;
	case JSON_OBJECT:
		json_object_foreach((json_t *)v, k, e)
			if (any_marked(p, e, depth + 1))
				return true;
		return false;
	default:
		return false;
	}
}

void lev_provenance_untrusted_args(const struct lev_provenance *p, const struct json_t *args,
				   char ***out)
{
	const char *k;
	json_t *v;

	*out = NULL;
	if (!lev_provenance_has_untrusted(p) || !json_is_object(args))
		return;
	json_object_foreach((json_t *)args, k, v) {
		if (!any_marked(p, v, 0) || lev_strv_len(*out) >= 256)
			continue;
		*out = lev_strv_push(*out, k);
		/* a URL's query: which of its parameters ("url?hotel") */
		if (json_is_string(v) && json_string_length(v) <= LEV_PROVENANCE_TEXT_MAX) {
			_cleanup_free_ char *folded = xmalloc(json_string_length(v) + 1);

			(void)fold(json_string_value(v), json_string_length(v), folded);
			(void)query_marked(p, folded, k, out);
		}
	}
}
