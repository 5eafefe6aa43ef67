#include <stdint.h>
#include <string.h>

#include "liblev/base/termtext.h"
#include "liblev/base/util.h"

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
		n = s[i] >= 0x80 ? lev_utf8_decode(s + i, len - i, &cp) : 0;
		if (n == 0)
			(void)lev_buf_addf(out, "\\x%02x", s[i++]);
		else if (hidden(cp))
			(void)lev_buf_addf(out, cp > 0xffff ? "\\U%08x" : "\\u%04x", (unsigned)cp);
		else
			(void)lev_buf_add(out, str + i, n);
		i += n;
	}
}
