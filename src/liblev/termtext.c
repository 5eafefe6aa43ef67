#include <stdint.h>
#include <string.h>

#include "liblev/termtext.h"

/*
 * Decode one well-formed UTF-8 sequence (RFC 3629: no overlongs, no
 * surrogates, at most U+10FFFF) at S.  Returns its length and the code
 * point, or 0 when the bytes are not one.
 */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
	uint32_t c;
	size_t n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		c = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10ffff ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* Code points that steer or hide what a terminal shows. */
static bool hidden(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) ||		/* C1 controls (CSI is 0x9b) */
	       c == 0xad ||				/* soft hyphen */
	       c == 0x61c ||				/* Arabic letter mark */
	       (c >= 0x200b && c <= 0x200f) ||		/* zero-width, LRM, RLM */
	       (c >= 0x2028 && c <= 0x202e) ||		/* separators, bidi embeddings */
	       (c >= 0x2060 && c <= 0x2069) ||		/* word joiner, bidi isolates */
	       c == 0xfeff ||				/* BOM / zero-width no-break space */
	       (c >= 0xfff9 && c <= 0xfffb) ||		/* interlinear annotations */
	       (c >= 0xe0000 && c <= 0xe007f);		/* tag characters */
}

static size_t safe_run(const unsigned char *s, size_t len, size_t i)
{
	while (i < len && ((s[i] >= 0x20 && s[i] < 0x7f) || s[i] == '\n' || s[i] == '\t'))
		i++;
	return i;
}

void lev_termtext_add(struct lev_buf *out, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		size_t j = safe_run(s, len, i);
		uint32_t cp;
		size_t n;

		if (j > i) {
			(void)lev_buf_add(out, str + i, j - i);
			i = j;
			continue;
		}
		n = s[i] >= 0x80 ? utf8_decode(s + i, len - i, &cp) : 0;
		if (n == 0)
			(void)lev_buf_addf(out, "\\x%02x", s[i++]);
		else if (hidden(cp))
			(void)lev_buf_addf(out, cp > 0xffff ? "\\U%08x" : "\\u%04x", (unsigned)cp);
		else
			(void)lev_buf_add(out, str + i, n);
		i += n;
	}
}

char *lev_termtext(const char *s)
{
	struct lev_buf b = LEV_BUF_INIT;

	lev_termtext_add(&b, s ? s : "", s ? strlen(s) : 0);
	return lev_buf_detach(&b, NULL);
}

bool lev_termtext_is_safe(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n;

		i = safe_run(s, len, i);
		if (i == len)
			break;
		n = s[i] >= 0x80 ? utf8_decode(s + i, len - i, &cp) : 0;
		if (n == 0 || hidden(cp))
			return false;
		i += n;
	}
	return true;
}
