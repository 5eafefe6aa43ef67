/*
 * callshow.c - a tool call as every ask surface shows it (see callshow.h).
 */
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/termtext.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/callshow.h"

/* No cap: a call is shown whole, never cut. */
#define SHOW_MAX ((size_t)1 << 30)

static bool plain_key(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || *k == '_' || *k == '.' || *k == '-'))
			return false;
	return true;
}

/* One line of a string (LEN bytes, no newline), every byte visible. */
static void add_line(struct lev_buf *b, const char *s, size_t len, bool first)
{
	size_t end = len, i = 0;

	while (end > 0 && s[end - 1] == ' ')
		end--;	/* spaces that end a line are written \x20 */
	if (first && len && s[0] == '(') {
		(void)lev_buf_adds(b, "\\(");
		i = 1;
	}
	while (i < end) {
		size_t j = i;

		while (j < end && s[j] != '\\' && s[j] != '\t')
			j++;
		lev_termtext_add(b, s + i, j - i);
		if (j < end)
			(void)lev_buf_adds(b, s[j] == '\\' ? "\\\\" : "\\t");
		i = j + (j < end);
	}
	for (; end < len; end++)
		(void)lev_buf_adds(b, "\\x20");
}

static void add_string(struct lev_buf *b, const char *s, size_t len)
{
	size_t lines = 1;

	if (!len) {
		(void)lev_buf_adds(b, " (empty)\n");
		return;
	}
	for (size_t i = 0; i < len; i++)
		lines += s[i] == '\n';
	if (lines == 1) {
		(void)lev_buf_addch(b, ' ');
		add_line(b, s, len, true);
		(void)lev_buf_addch(b, '\n');
		return;
	}
	(void)lev_buf_addf(b, " (%zu lines)\n", lines);
	for (size_t i = 0; i <= len;) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (s + i)) : len - i;

		(void)lev_buf_adds(b, "  | ");
		add_line(b, s + i, n, false);
		(void)lev_buf_addch(b, '\n');
		i += n + 1;
	}
}

/* V's JSON, all ASCII and printable: DEL (only ever in a string) escaped too. */
static void add_json(struct lev_buf *b, const json_t *v)
{
	char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII);

	for (const char *p = t ? t : "null"; *p; p++) {
		if (*p == 0x7f)
			(void)lev_buf_adds(b, "\\u007f");
		else
			(void)lev_buf_addch(b, *p);
	}
	free(t);
}

static void add_key(struct lev_buf *b, const char *k)
{
	json_t *j;

	if (plain_key(k)) {
		(void)lev_buf_adds(b, k);
		return;
	}
	j = json_string(k);
	add_json(b, j);
	json_decref(j);
}

static int cmp_keys(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

char *lev_callshow_text(const char *tool, const json_t *args, const char *raw, const char *hop)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(SHOW_MAX);
	size_t n = json_is_object(args) ? json_object_size(args) : 0, i = 0;
	const char **keys = xcalloc(n + 1, sizeof(*keys));
	const char *k;
	json_t *v;

	(void)lev_buf_adds(&b, "tool:");
	add_string(&b, tool ? tool : "", tool ? strlen(tool) : 0);
	if (!json_is_object(args)) {
		(void)lev_buf_adds(&b, "(arguments that are not JSON):");
		add_string(&b, raw ? raw : "", raw ? strlen(raw) : 0);
	}
	json_object_foreach((json_t *)args, k, v)
		keys[i++] = k;
	qsort(keys, n, sizeof(*keys), cmp_keys);
	for (i = 0; i < n; i++) {
		v = json_object_get(args, keys[i]);
		add_key(&b, keys[i]);
		if (json_is_string(v)) {
			(void)lev_buf_addch(&b, ':');
			add_string(&b, json_string_value(v), json_string_length(v));
		} else {
			(void)lev_buf_adds(&b, " = ");
			add_json(&b, v);
			(void)lev_buf_addch(&b, '\n');
		}
	}
	free(keys);
	if (hop) {
		(void)lev_buf_adds(&b, "(redirect to):");
		add_string(&b, hop, strlen(hop));
	}
	return lev_buf_detach(&b, NULL);
}

void lev_callshow_indent(struct lev_buf *out, const char *shown, const char *indent)
{
	for (const char *p = shown; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		(void)lev_buf_adds(out, indent);
		(void)lev_buf_add(out, p, n);
		(void)lev_buf_addch(out, '\n');
		p += n + (nl != NULL);
	}
}

void lev_callshow_digest(const char *shown, char out[LEV_SHA256_HEX_LEN + 1])
{
	static const char domain[] = "lev-call-v1\n";
	struct lev_sha256 c;
	uint8_t d[LEV_SHA256_LEN];

	lev_sha256_init(&c);
	lev_sha256_update(&c, domain, sizeof(domain) - 1);
	lev_sha256_update(&c, shown ? shown : "", shown ? strlen(shown) : 0);
	lev_sha256_final(&c, d);
	lev_sha256_hex(d, out);
}
