#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

char lev_buf_empty[1];

void lev_buf_init(struct lev_buf *b, size_t max)
{
	b->buf = lev_buf_empty;
	b->len = 0;
	b->alloc = 0;
	b->max = max;
}

void lev_buf_release(struct lev_buf *b)
{
	if (b->alloc)
		free(b->buf);
	lev_buf_init(b, b->max);
}

char *lev_buf_detach(struct lev_buf *b, size_t *len_out)
{
	char *r;

	if (len_out)
		*len_out = b->len;
	r = b->alloc ? b->buf : xstrdup("");
	lev_buf_init(b, b->max);
	return r;
}

void lev_buf_reset(struct lev_buf *b)
{
	lev_buf_truncate(b, 0);
}

int lev_buf_grow(struct lev_buf *b, size_t extra)
{
	size_t want, n;

	if (extra > b->max || b->len > b->max - extra)
		return -E2BIG;
	want = b->len + extra + 1;
	if (want <= b->alloc)
		return 0;
	n = b->alloc ? b->alloc : 16;
	while (n < want)
		n = n > ((size_t)-1) / 2 ? want : n * 2;
	if (b->alloc) {
		b->buf = xrealloc(b->buf, n);
	} else {
		b->buf = xmalloc(n);
		b->buf[0] = '\0';
	}
	b->alloc = n;
	return 0;
}

void lev_buf_truncate(struct lev_buf *b, size_t len)
{
	if (len > b->len)
		return;
	b->len = len;
	if (b->alloc)
		b->buf[len] = '\0';
}

int lev_buf_add(struct lev_buf *b, const void *data, size_t len)
{
	int r;

	/* the common case, room already there: no growth check beyond this */
	if (len < b->alloc - b->len && len <= b->max - b->len) {
		memcpy(b->buf + b->len, data, len);
		b->len += len;
		b->buf[b->len] = '\0';
		return 0;
	}
	r = lev_buf_grow(b, len);

	if (r < 0)
		return r;
	if (len)
		memcpy(b->buf + b->len, data, len);
	b->len += len;
	b->buf[b->len] = '\0';
	return 0;
}

int lev_buf_adds(struct lev_buf *b, const char *s)
{
	return lev_buf_add(b, s, strlen(s));
}

int lev_buf_addch(struct lev_buf *b, char c)
{
	if (b->len + 1 < b->alloc && b->len < b->max) {
		b->buf[b->len++] = c;
		b->buf[b->len] = '\0';
		return 0;
	}
	return lev_buf_add(b, &c, 1);
}

/* Room made for a formatted append to a buffer that has none. */
#define VADDF_GUESS 120

int lev_buf_vaddf(struct lev_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, r;

	/*
	 * first into the room there is (git strbuf): one pass in the common
	 * case.  An empty buffer gets room for a short line first, so a
	 * message is not formatted twice (once to measure it).
	 */
	if (b->alloc <= b->len + 1)
		(void)lev_buf_grow(b, b->max - b->len < VADDF_GUESS ? b->max - b->len
								   : VADDF_GUESS);
	if (b->alloc > b->len + 1) {
		va_copy(cp, ap);
		n = vsnprintf(b->buf + b->len, b->alloc - b->len, fmt, cp);
		va_end(cp);
		if (n < 0) {
			b->buf[b->len] = '\0';
			return -EINVAL;
		}
		if ((size_t)n < b->alloc - b->len) {
			if ((size_t)n > b->max - b->len) {
				b->buf[b->len] = '\0';
				return -E2BIG;
			}
			b->len += (size_t)n;
			return 0;
		}
		b->buf[b->len] = '\0';
	} else {
		va_copy(cp, ap);
		n = vsnprintf(NULL, 0, fmt, cp);
		va_end(cp);
		if (n < 0)
			return -EINVAL;
	}
	r = lev_buf_grow(b, (size_t)n);
	if (r < 0)
		return r;
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int lev_buf_addf(struct lev_buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = lev_buf_vaddf(b, fmt, ap);
	va_end(ap);
	return r;
}

/* S escaped for the inside of a JSON string literal (no quotes). */
static int add_json_escaped(struct lev_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0;
	int r = 0;

	while (r == 0 && i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t j = i;

		/* a run that needs no escape, in one piece */
		while (j < len && (unsigned char)s[j] >= 0x20 && s[j] != '"' && s[j] != '\\' &&
		       s[j] != 0x7f)
			j++;
		if (j > i) {
			r = lev_buf_add(b, s + i, j - i);
			i = j;
			continue;
		}
		switch (c) {
		case '"': r = lev_buf_add(b, "\\\"", 2); break;
		case '\\': r = lev_buf_add(b, "\\\\", 2); break;
		case '\b': r = lev_buf_add(b, "\\b", 2); break;
		case '\f': r = lev_buf_add(b, "\\f", 2); break;
		case '\n': r = lev_buf_add(b, "\\n", 2); break;
		case '\r': r = lev_buf_add(b, "\\r", 2); break;
		case '\t': r = lev_buf_add(b, "\\t", 2); break;
		default: {
			/* the other controls and DEL */
			char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			r = lev_buf_add(b, u, 6);
		}
		}
		i++;
	}
	return r;
}

int lev_buf_add_json_str(struct lev_buf *b, const char *s, size_t len)
{
	int r = lev_buf_addch(b, '"');

	if (r == 0)
		r = add_json_escaped(b, s, len);
	if (r == 0)
		r = lev_buf_addch(b, '"');
	return r;
}

int lev_buf_add_json_text(struct lev_buf *b, const char *s, size_t len, bool ascii)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	int r = lev_buf_addch(b, '"');

	while (r == 0 && i < len) {
		size_t start = i, n;
		uint32_t cp;
		char u[16];

		while (i < len && p[i] < 0x80)
			i++;
		if (i > start) {
			r = add_json_escaped(b, s + start, i - start);
			continue;
		}
		n = lev_utf8_decode(p + i, len - i, &cp);
		if (n == 0) {
			r = lev_buf_adds(b, "\\ufffd");
			i++;
		} else if (!ascii) {
			r = lev_buf_add(b, s + i, n);
			i += n;
		} else {
			if (cp > 0xffff)
				snprintf(u, sizeof(u), "\\u%04x\\u%04x",
					 (unsigned)(0xd800 + ((cp - 0x10000) >> 10)),
					 (unsigned)(0xdc00 + ((cp - 0x10000) & 0x3ff)));
			else
				snprintf(u, sizeof(u), "\\u%04x", (unsigned)cp);
			r = lev_buf_adds(b, u);
			i += n;
		}
	}
	return r ? r : lev_buf_addch(b, '"');
}

int lev_buf_add_utf8(struct lev_buf *b, const void *s, size_t len, bool nul_bad, size_t *replaced)
{
	const unsigned char *p = s;
	size_t i = 0, start = 0, bad = 0;
	int r = 0;

	while (i < len && r == 0) {
		uint32_t cp;
		size_t n = p[i] < 0x80 ? (p[i] || !nul_bad) : lev_utf8_decode(p + i, len - i, &cp);

		if (n) {
			i += n;
			continue;
		}
		if (b) {
			r = lev_buf_add(b, p + start, i - start);
			if (r == 0)
				r = lev_buf_add(b, "\xef\xbf\xbd", 3);
		}
		bad++;
		start = ++i;
	}
	if (r == 0 && b)
		r = lev_buf_add(b, p + start, len - start);
	if (replaced)
		*replaced = bad;
	return r;
}

/*
 * The JSON text json_dumps(V, JSON_COMPACT | JSON_ENSURE_ASCII) gives, byte
 * for byte, appended to B without building it through jansson's per-byte
 * callbacks (the record writes several events per tool call).  Returns
 * false for what it does not write itself - a real number, invalid UTF-8,
 * nesting deeper than JSON_DEPTH - and the caller uses json_dumps().
 */
#define JSON_DEPTH 64

/* "\uXXXX" for the UTF-16 unit V at U, upper-case hex as jansson writes it */
static void put_u(char *u, uint32_t v)
{
	static const char hex[] = "0123456789ABCDEF";

	u[0] = '\\';
	u[1] = 'u';
	u[2] = hex[(v >> 12) & 15];
	u[3] = hex[(v >> 8) & 15];
	u[4] = hex[(v >> 4) & 15];
	u[5] = hex[v & 15];
}

static bool add_json_string(struct lev_buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	(void)lev_buf_addch(b, '"');
	while (i < len) {
		size_t j = i, n;
		uint32_t cp;
		char u[12];

		/* a run that needs no escape, in one piece (DEL is not escaped) */
		while (j < len && p[j] >= 0x20 && p[j] < 0x80 && p[j] != '"' && p[j] != '\\')
			j++;
		if (j > i) {
			(void)lev_buf_add(b, s + i, j - i);
			i = j;
			continue;
		}
		switch (p[i]) {
		case '"': (void)lev_buf_add(b, "\\\"", 2); i++; continue;
		case '\\': (void)lev_buf_add(b, "\\\\", 2); i++; continue;
		case '\b': (void)lev_buf_add(b, "\\b", 2); i++; continue;
		case '\f': (void)lev_buf_add(b, "\\f", 2); i++; continue;
		case '\n': (void)lev_buf_add(b, "\\n", 2); i++; continue;
		case '\r': (void)lev_buf_add(b, "\\r", 2); i++; continue;
		case '\t': (void)lev_buf_add(b, "\\t", 2); i++; continue;
		default:
			break;
		}
		n = lev_utf8_decode(p + i, len - i, &cp);
		if (!n)
			return false;	/* jansson refuses it too: its own error */
		if (cp >= 0x10000) {
			put_u(u, 0xd800 + ((cp - 0x10000) >> 10));
			put_u(u + 6, 0xdc00 + ((cp - 0x10000) & 0x3ff));
			(void)lev_buf_add(b, u, 12);
		} else {
			put_u(u, cp);
			(void)lev_buf_add(b, u, 6);
		}
		i += n;
	}
	(void)lev_buf_addch(b, '"');
	return true;
}

static bool add_json(struct lev_buf *b, const json_t *v, unsigned depth)
{
	const char *key;
	const json_t *m;
	size_t i;
	void *it;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (depth >= JSON_DEPTH)
			return false;
		(void)lev_buf_addch(b, '{');
		i = 0;
		for (it = json_object_iter((json_t *)v); it;
		     it = json_object_iter_next((json_t *)v, it), i++) {
			key = json_object_iter_key(it);
			if (i)
				(void)lev_buf_addch(b, ',');
			if (!add_json_string(b, key, json_object_iter_key_len(it)))
				return false;
			(void)lev_buf_addch(b, ':');
			if (!add_json(b, json_object_iter_value(it), depth + 1))
				return false;
		}
		(void)lev_buf_addch(b, '}');
		return true;
	case JSON_ARRAY:
		if (depth >= JSON_DEPTH)
			return false;
		(void)lev_buf_addch(b, '[');
		json_array_foreach(v, i, m) {
			if (i)
				(void)lev_buf_addch(b, ',');
			if (!add_json(b, m, depth + 1))
				return false;
		}
		(void)lev_buf_addch(b, ']');
		return true;
	case JSON_STRING:
		return add_json_string(b, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		(void)lev_buf_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return true;
	case JSON_TRUE:
		(void)lev_buf_add(b, "true", 4);
		return true;
	case JSON_FALSE:
		(void)lev_buf_add(b, "false", 5);
		return true;
	case JSON_NULL:
		(void)lev_buf_add(b, "null", 4);
		return true;
	default:
		return false;	/* a real: jansson's own formatting */
	}
}

bool lev_buf_add_json(struct lev_buf *b, const json_t *v)
{
	size_t at = b->len;

	if (add_json(b, v, 0))
		return true;
	lev_buf_truncate(b, at);
	return false;
}
