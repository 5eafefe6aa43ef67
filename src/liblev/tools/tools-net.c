#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/http.h"
#include "liblev/policy/netguard.h"
#include "liblev/tools/tools-net.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define DEFAULT_MAX_DOWNLOAD ((size_t)2 << 20)
#define DEFAULT_MAX_RESULT ((size_t)64 << 10)
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_TIMEOUT_MS 30000L
#define MAX_REDIRECTS 5
#define MAX_POST_BODY ((size_t)1 << 20)
#define MAX_QUERY 1000

/* ---- results ---------------------------------------------------------------- */

void lev_net_result_release(struct lev_net_result *r)
{
	if (!r)
		return;
	free(r->text);
	free(r->target_host);
	free(r->final_url);
	lev_strv_free(r->hop_urls);
	memset(r, 0, sizeof(*r));
}

const char *lev_net_outcome_name(enum lev_net_outcome o)
{
	static const char *const names[_LEV_NET_OUTCOME_MAX] = {
		[LEV_NET_OK] = "ok",
		[LEV_NET_BAD_ARGS] = "bad_args",
		[LEV_NET_NETWORK_OFF] = "network_off",
		[LEV_NET_ADDRESS_REFUSED] = "address_refused",
		[LEV_NET_URL_REFUSED] = "url_refused",
		[LEV_NET_NOT_CONFIGURED] = "not_configured",
		[LEV_NET_FAILED] = "failed",
	};
	return (unsigned)o < _LEV_NET_OUTCOME_MAX ? names[o] : "unknown";
}

static int result_error(struct lev_net_result *out, enum lev_net_outcome o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int result_error(struct lev_net_result *out, enum lev_net_outcome o, const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(4096);
	va_list ap;

	va_start(ap, fmt);
	lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	free(out->text);
	out->text = lev_buf_detach(&b, NULL);
	out->is_error = true;
	out->outcome = o;
	return 0;
}

/* ---- UTF-8 and text ------------------------------------------------------------ */

/* Largest cut <= MAX that does not split a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
	size_t n = len < max ? len : max;

	if (n == len)
		return n;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

static void add_utf8(struct lev_buf *b, uint32_t cp)
{
	char u[4];

	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		lev_buf_addch(b, (char)cp);
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		lev_buf_add(b, u, 2);
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		lev_buf_add(b, u, 3);
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		lev_buf_add(b, u, 4);
	}
}

/* The body as valid UTF-8 (Latin-1 bodies converted, other bad bytes U+FFFD). */
static void body_to_utf8(struct lev_buf *b, const char *body, size_t len, const char *ctype)
{
	const char *cs = ctype ? strcasestr(ctype, "charset=") : NULL;

	if (cs) {
		cs += 8;
		while (*cs == '"' || *cs == ' ')
			cs++;
		if (strncasecmp(cs, "iso-8859-1", 10) == 0 || strncasecmp(cs, "latin1", 6) == 0 ||
		    strncasecmp(cs, "windows-1252", 12) == 0) {
			for (size_t i = 0; i < len; i++)
				add_utf8(b, (unsigned char)body[i]);
			return;
		}
	}
	(void)lev_buf_add_utf8(b, body, len, false, NULL);
}

/* ---- HTML to text ------------------------------------------------------------- */

struct h2t {
	struct lev_buf out;
	int pending_nl;
	bool pending_space;
	bool pending_bullet;
	int pre;
};

static void h2t_flush(struct h2t *s)
{
	if (s->pending_nl && s->out.len) {
		/* Drop trailing spaces before breaking the line. */
		while (s->out.len && s->out.buf[s->out.len - 1] == ' ')
			lev_buf_truncate(&s->out, s->out.len - 1);
		for (int i = 0; i < s->pending_nl; i++)
			lev_buf_addch(&s->out, '\n');
	} else if (s->pending_space && s->out.len && s->out.buf[s->out.len - 1] != '\n' &&
		   s->out.buf[s->out.len - 1] != ' ') {
		lev_buf_addch(&s->out, ' ');
	}
	if (s->pending_bullet)
		lev_buf_adds(&s->out, "- ");
	s->pending_nl = 0;
	s->pending_space = false;
	s->pending_bullet = false;
}

static void h2t_text(struct h2t *s, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (s->pre > 0) {
			h2t_flush(s);
			lev_buf_addch(&s->out, c == '\t' ? ' ' : c);
		} else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
			s->pending_space = true;
		} else {
			h2t_flush(s);
			lev_buf_addch(&s->out, c);
		}
	}
}

static void h2t_break(struct h2t *s, int n)
{
	if (n > s->pending_nl)
		s->pending_nl = n;
	if (s->pending_nl > 2)
		s->pending_nl = 2;
	s->pending_space = false;
}

static const struct {
	const char *name;
	uint32_t cp;
} entities[] = {
	{ "amp", '&' },	     { "lt", '<' },	    { "gt", '>' },	  { "quot", '"' },
	{ "apos", '\'' },    { "nbsp", ' ' },	    { "copy", 0xa9 },	  { "reg", 0xae },
	{ "mdash", 0x2014 }, { "ndash", 0x2013 },   { "hellip", 0x2026 }, { "laquo", 0xab },
	{ "raquo", 0xbb },   { "lsquo", 0x2018 },   { "rsquo", 0x2019 },  { "ldquo", 0x201c },
	{ "rdquo", 0x201d }, { "bull", 0x2022 },    { "middot", 0xb7 },	  { "trade", 0x2122 },
	{ "times", 0xd7 },   { "euro", 0x20ac },    { "deg", 0xb0 },	  { "para", 0xb6 },
	{ "sect", 0xa7 },    { "shy", 0xad },
};

/* Decode the entity at P (just after '&'); returns bytes consumed or 0. */
static size_t h2t_entity(struct h2t *s, const char *p, size_t n)
{
	struct lev_buf u = LEV_BUF_INIT_MAX(8);
	size_t i = 0;
	uint32_t cp = 0;
	bool ok = false;

	if (n > 0 && p[0] == '#') {
		bool hex = n > 1 && (p[1] == 'x' || p[1] == 'X');
		size_t digits = 0;
		i = hex ? 2 : 1;
		while (i < n && digits < 8 && (hex ? isxdigit((unsigned char)p[i]) : isdigit((unsigned char)p[i]))) {
			cp = cp * (hex ? 16 : 10) +
			     (uint32_t)(isdigit((unsigned char)p[i]) ? p[i] - '0'
								     : (tolower((unsigned char)p[i]) - 'a' + 10));
			i++;
			digits++;
		}
		ok = digits > 0;
	} else {
		for (size_t k = 0; k < ARRAY_SIZE(entities); k++) {
			size_t len = strlen(entities[k].name);
			if (len <= n && memcmp(p, entities[k].name, len) == 0 &&
			    (len == n || p[len] == ';' || !isalnum((unsigned char)p[len]))) {
				cp = entities[k].cp;
				i = len;
				ok = true;
				break;
			}
		}
	}
	if (!ok)
		return 0;
	if (i < n && p[i] == ';')
		i++;
	if (cp == 0xad)		/* soft hyphen: invisible */
		return i;
	add_utf8(&u, cp);
	h2t_text(s, u.buf, u.len);
	lev_buf_release(&u);
	return i;
}

static bool name_in(const char *name, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(name, *set) == 0)
			return true;
	return false;
}

/* Position just past "</NAME ...>" from P, or END when there is none. */
static const char *skip_element(const char *p, const char *end, const char *name)
{
	size_t nl = strlen(name);

	for (; p < end; p++) {
		if (p[0] != '<' || p + 2 + nl > end || p[1] != '/' || strncasecmp(p + 2, name, nl) != 0)
			continue;
		if (p + 2 + nl < end && isalnum((unsigned char)p[2 + nl]))
			continue;
		p = memchr(p, '>', (size_t)(end - p));
		return p ? p + 1 : end;
	}
	return end;
}

char *lev_html_to_text(const char *html, size_t len, size_t max)
{
	static const char *const skipped[] = { "script", "style", "noscript", "template", "svg",
					       "iframe", "object", NULL };
	static const char *const para[] = { "p", "h1", "h2", "h3", "h4", "h5", "h6", "title",
					    "table", "blockquote", "section", "article", NULL };
	static const char *const line[] = { "br", "div", "tr", "ul", "ol", "dl", "dt", "dd",
					    "header", "footer", "nav", "main", "aside", "hr",
					    "form", "figure", "figcaption", "address", "details",
					    "summary", "fieldset", "pre", "li", NULL };
	struct h2t s = { .out = LEV_BUF_INIT };
	struct lev_buf clean = LEV_BUF_INIT;
	const char *p, *end;
	size_t cut;
	char *r;

	(void)lev_buf_add_utf8(&clean, html ? html : "", html ? len : 0, false, NULL);
	p = clean.buf;
	end = clean.buf + clean.len;
	while (p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p));
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *next = lt && (!amp || lt < amp) ? lt : amp;

		if (!next) {
			h2t_text(&s, p, (size_t)(end - p));
			break;
		}
		h2t_text(&s, p, (size_t)(next - p));
		p = next;
		if (*p == '&') {
			size_t used = h2t_entity(&s, p + 1, (size_t)(end - p - 1));
			if (used == 0)
				h2t_text(&s, "&", 1);
			p += 1 + used;
			continue;
		}
		/* A tag, a comment, a declaration, or a lone '<'. */
		if (p + 4 <= end && memcmp(p, "<!--", 4) == 0) {
			const char *c = memmem(p + 4, (size_t)(end - p - 4), "-->", 3);
			p = c ? c + 3 : end;
			continue;
		}
		if (p + 1 < end && (p[1] == '!' || p[1] == '?')) {
			const char *gt = memchr(p, '>', (size_t)(end - p));
			p = gt ? gt + 1 : end;
			continue;
		}
		{
			const char *q = p + 1;
			bool closing = false;
			char name[16];
			size_t nl = 0;
			char quote = 0;

			if (q < end && *q == '/') {
				closing = true;
				q++;
			}
			if (q >= end || !isalpha((unsigned char)*q)) {
				h2t_text(&s, "<", 1);
				p++;
				continue;
			}
			while (q < end && (isalnum((unsigned char)*q) || *q == '-')) {
				if (nl < sizeof(name) - 1)
					name[nl++] = (char)tolower((unsigned char)*q);
				q++;
			}
			name[nl] = '\0';
			/* Skip the attributes, respecting quotes. */
			while (q < end && (quote || *q != '>')) {
				if (quote && *q == quote)
					quote = 0;
				else if (!quote && (*q == '"' || *q == '\''))
					quote = *q;
				q++;
			}
			p = q < end ? q + 1 : end;
			if (!closing && name_in(name, skipped)) {
				p = skip_element(p, end, name);
				continue;
			}
			if (strcmp(name, "pre") == 0) {
				if (closing && s.pre > 0)
					s.pre--;
				else if (!closing)
					s.pre++;
			}
			if (name_in(name, para))
				h2t_break(&s, 2);
			else if (name_in(name, line))
				h2t_break(&s, 1);
			else if (strcmp(name, "td") == 0 || strcmp(name, "th") == 0)
				s.pending_space = true;
			if (!closing && strcmp(name, "li") == 0)
				s.pending_bullet = true;
		}
	}
	lev_buf_release(&clean);
	/* Trim trailing whitespace. */
	while (s.out.len && (s.out.buf[s.out.len - 1] == ' ' || s.out.buf[s.out.len - 1] == '\n'))
		lev_buf_truncate(&s.out, s.out.len - 1);
	cut = utf8_cut(s.out.buf, s.out.len, max);
	lev_buf_truncate(&s.out, cut);
	r = lev_buf_detach(&s.out, NULL);
	return r;
}

/* ---- the guarded request --------------------------------------------------------- */

struct guard {
	bool allow_local;
	bool exempt;		/* the user's own search endpoint, first hop */
	const char *host;
	bool refused;
	enum lev_netaddr_class cls;
	char addr[INET6_ADDRSTRLEN + 8];
};

static int guard_hook(void *ud, const struct sockaddr *sa, socklen_t len, struct lev_err *err)
{
	struct guard *g = ud;
	enum lev_netaddr_class c = lev_netaddr_classify(sa, len);

	if (c == LEV_NETADDR_PUBLIC && !g->allow_local && !g->exempt &&
	    lev_netaddr_is_host_address(sa, len))
		c = LEV_NETADDR_HOST;
	if (c == LEV_NETADDR_METADATA || !(g->exempt || lev_netaddr_allowed(c, g->allow_local))) {
		g->refused = true;
		g->cls = c;
		lev_netaddr_format(sa, len, g->addr, sizeof(g->addr));
		return lev_err_set(err, -EACCES, "'%s' is %s (a %s address)", g->host, g->addr,
				   lev_netaddr_class_name(c));
	}
	return 0;
}

static const char *refusal_hint(const struct guard *g)
{
	if (g->cls == LEV_NETADDR_METADATA)
		return "cloud metadata addresses are always refused";
	return "local, private and link-local addresses are refused unless "
	       "[security] allow_local_network = true";
}

struct fetch_opts {
	const char *tool;
	const char *method;
	const char *body;
	size_t body_len;
	const char *content_type;
	bool follow;
	bool exempt_first;
};

/*
 * Request URL hop by hop under POLICY.  On an HTTP answer returns 0 with
 * *resp filled (caller releases); on a refusal or failure returns -1 with
 * OUT already holding the error result.  OUT's target_host, final_url and
 * hops track the hops made.
 */
static int guarded_request(const char *url, const struct lev_net_policy *pol,
			   const struct fetch_opts *o, struct lev_net_result *out,
			   struct lev_http_response *resp)
{
	_cleanup_free_ char *current = xstrdup(url);
	unsigned max_redirects = pol->max_redirects == 0 || pol->max_redirects > MAX_REDIRECTS
					 ? MAX_REDIRECTS
					 : pol->max_redirects;
	_cleanup_free_ char *ctype_hdr = NULL;
	const char *headers[3] = { NULL, NULL, NULL };

	if (o->content_type) {
		ctype_hdr = xasprintf("Content-Type: %s", o->content_type);
		headers[0] = ctype_hdr;
	}
	for (unsigned hop = 0;; hop++) {
		struct lev_url u;
		struct lev_err e = LEV_ERR_INIT;
		struct guard g = { .allow_local = pol->allow_local_network,
				   .exempt = o->exempt_first && hop == 0 };
		struct lev_http_request req = {
			.method = o->method,
			.headers = headers,
			.body = o->body,
			.body_len = o->body_len,
			.connect_timeout_ms = pol->connect_timeout_ms > 0 ? pol->connect_timeout_ms
									  : DEFAULT_CONNECT_TIMEOUT_MS,
			.timeout_ms = pol->timeout_ms > 0 ? pol->timeout_ms : DEFAULT_TIMEOUT_MS,
			.max_response = pol->max_download ? pol->max_download : DEFAULT_MAX_DOWNLOAD,
			.proxy = NULL,
			.user_agent = pol->user_agent,
			.resolve = pol->resolve,
			.connect_hook = guard_hook,
			.connect_hook_data = &g,
			.cancel = pol->cancel,
		};
		int r;

		if (lev_url_parse(current, &u, &e) < 0)
			return result_error(out, LEV_NET_URL_REFUSED, "%s refused: %s%s", o->tool, e.msg,
					    hop ? " (in a redirect)" : ""),
			       -1;
		free(out->target_host);
		out->target_host = xstrdup(u.host);
		free(out->final_url);
		out->final_url = xstrdup(u.url);
		if (hop > 0 && pol->redirect_hook &&
		    pol->redirect_hook(pol->redirect_hook_data, o->tool, u.url, &e) < 0) {
			lev_url_release(&u);
			return result_error(out, LEV_NET_URL_REFUSED,
					    "%s refused to follow a redirect to '%.300s': %s", o->tool,
					    out->final_url, e.msg),
			       -1;
		}
		g.host = out->target_host;
		req.url = u.url;
		out->hops = hop + 1;
		/* every URL requested: the result is labelled from each of them */
		out->hop_urls = lev_strv_push(out->hop_urls, u.url);
		r = lev_http_perform(&req, resp, &e);
		lev_url_release(&u);
		if (r == -EACCES && g.refused)
			return result_error(out, LEV_NET_ADDRESS_REFUSED, "%s refused: %s; %s%s", o->tool,
					    e.msg, refusal_hint(&g),
					    hop ? " (reached through a redirect)" : ""),
			       -1;
		if (r < 0)
			return result_error(out, LEV_NET_FAILED, "%s failed: '%s': %s", o->tool,
					    out->final_url, e.msg),
			       -1;
		out->http_status = resp->status;
		if (!o->follow || resp->status < 300 || resp->status >= 400 || !resp->redirect_url)
			return 0;
		if (hop >= max_redirects) {
			lev_http_response_release(resp);
			return result_error(out, LEV_NET_URL_REFUSED,
					    "%s refused: more than %u redirects (last to '%.300s')",
					    o->tool, max_redirects, out->final_url),
			       -1;
		}
		free(current);
		current = xstrdup(resp->redirect_url);
		lev_http_response_release(resp);
	}
}

static bool is_text_type(const char *ct)
{
	static const char *const words[] = { "json", "xml", "javascript", "ecmascript", "yaml",
					     "toml", "csv", "x-www-form-urlencoded", "markdown" };

	if (!ct || !*ct)
		return true;	/* decided by sniffing */
	if (strncasecmp(ct, "text/", 5) == 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (strcasestr(ct, words[i]))
			return true;
	return false;
}

static bool is_html(const char *ct, const char *body, size_t len)
{
	if (ct && *ct)
		return strncasecmp(ct, "text/html", 9) == 0 || strcasestr(ct, "xhtml");
	while (len && isspace((unsigned char)*body)) {
		body++;
		len--;
	}
	return len >= 5 && (strncasecmp(body, "<!doc", 5) == 0 || strncasecmp(body, "<html", 5) == 0);
}

/*
 * Append the readable text of RESP to B, at most MAX bytes, with a note
 * when cut.  Returns false (B untouched) when the body is not text.
 */
static bool append_body_text(struct lev_buf *b, const struct lev_http_response *resp, size_t max)
{
	struct lev_buf t = LEV_BUF_INIT;
	size_t sniff = resp->body_len < 8192 ? resp->body_len : 8192;
	size_t cut;

	if (!is_text_type(resp->content_type) || memchr(resp->body, '\0', sniff))
		return false;
	body_to_utf8(&t, resp->body, resp->body_len, resp->content_type);
	if (is_html(resp->content_type, t.buf, t.len)) {
		char *h = lev_html_to_text(t.buf, t.len, (size_t)-1);
		lev_buf_reset(&t);
		lev_buf_adds(&t, h);
		free(h);
	}
	cut = utf8_cut(t.buf, t.len, max);
	lev_buf_add(b, t.buf, cut);
	if (cut < t.len)
		lev_buf_addf(b, "\n[truncated: %zu of %zu bytes of text shown]", cut, t.len);
	lev_buf_release(&t);
	return true;
}

/* ---- arguments ---------------------------------------------------------------- */

static int arg_string(const json_t *args, const char *key, bool required, const char **out,
		      size_t *len_out)
{
	const json_t *v = json_object_get(args, key);

	if (!v || json_is_null(v)) {
		*out = NULL;
		*len_out = 0;
		return required ? -ENOENT : 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	*out = json_string_value(v);
	*len_out = json_string_length(v);
	return 0;
}

static int check_common(const char *tool, const json_t *args, const struct lev_net_policy *pol,
			struct lev_net_result *out)
{
	memset(out, 0, sizeof(*out));
	if (!pol->network_allowed)
		return result_error(out, LEV_NET_NETWORK_OFF,
				    "%s refused: this stage runs without network access "
				    "([sandbox] network = false)",
				    tool),
		       -1;
	if (!json_is_object(args))
		return result_error(out, LEV_NET_BAD_ARGS, "%s: arguments must be a JSON object", tool),
		       -1;
	return 0;
}

static int get_url(const char *tool, const json_t *args, struct lev_net_result *out,
		   const char **url)
{
	size_t len;
	int r = arg_string(args, "url", true, url, &len);

	if (r == -ENOENT)
		return result_error(out, LEV_NET_BAD_ARGS, "%s: missing required argument 'url'", tool),
		       -1;
	if (r < 0)
		return result_error(out, LEV_NET_BAD_ARGS, "%s: 'url' must be a string", tool), -1;
	if (strlen(*url) != len)
		return result_error(out, LEV_NET_BAD_ARGS, "%s: 'url' holds a NUL byte", tool), -1;
	return 0;
}

/* ---- the tools ---------------------------------------------------------------- */

int lev_tool_web_fetch(const json_t *args, const struct lev_net_policy *pol,
		       struct lev_net_result *out, struct lev_err *err)
{
	struct fetch_opts o = { .tool = lev_tooltable_name(LEV_OP_WEB_FETCH), .method = "GET", .follow = true };
	struct lev_http_response resp;
	struct lev_buf b = LEV_BUF_INIT;
	size_t max = pol->max_result ? pol->max_result : DEFAULT_MAX_RESULT;
	const char *url;

	(void)err;
	if (check_common(o.tool, args, pol, out) < 0 || get_url(o.tool, args, out, &url) < 0)
		return 0;
	if (guarded_request(url, pol, &o, out, &resp) < 0)
		return 0;
	out->outcome = LEV_NET_OK;
	out->is_error = resp.status >= 400;
	lev_buf_addf(&b, "URL: %s\nStatus: %ld", out->final_url, resp.status);
	if (resp.content_type)
		lev_buf_addf(&b, " (%.100s)", resp.content_type);
	lev_buf_adds(&b, "\n\n");
	if (resp.status >= 300 && resp.status < 400) {
		lev_buf_addf(&b, "[redirect to '%.500s' not followed]",
			     resp.redirect_url ? resp.redirect_url : "");
	} else if (!append_body_text(&b, &resp, max)) {
		lev_buf_reset(&b);
		lev_buf_addf(&b,
			     "web_fetch: '%s' is not text (content type '%.100s', %zu bytes); "
			     "web_fetch returns text only",
			     out->final_url, resp.content_type ? resp.content_type : "unknown",
			     resp.body_len);
		out->is_error = true;
		out->outcome = LEV_NET_FAILED;
	}
	out->text = lev_buf_detach(&b, NULL);
	lev_http_response_release(&resp);
	return 0;
}

static bool header_value_ok(const char *s, size_t len)
{
	if (len == 0 || len > 200 || strlen(s) != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

int lev_tool_http_post(const json_t *args, const struct lev_net_policy *pol,
		       struct lev_net_result *out, struct lev_err *err)
{
	struct fetch_opts o = { .tool = lev_tooltable_name(LEV_OP_HTTP_POST), .method = "POST", .follow = false };
	struct lev_http_response resp;
	struct lev_buf b = LEV_BUF_INIT;
	size_t max = pol->max_result ? pol->max_result : DEFAULT_MAX_RESULT;
	const char *url, *body, *ctype;
	size_t body_len, ctype_len;
	int r;

	(void)err;
	if (check_common(o.tool, args, pol, out) < 0 || get_url(o.tool, args, out, &url) < 0)
		return 0;
	r = arg_string(args, "body", false, &body, &body_len);
	if (r < 0)
		return result_error(out, LEV_NET_BAD_ARGS, "http_post: 'body' must be a string");
	if (body_len > MAX_POST_BODY)
		return result_error(out, LEV_NET_BAD_ARGS, "http_post: 'body' is larger than %zu bytes",
				    MAX_POST_BODY);
	r = arg_string(args, "content_type", false, &ctype, &ctype_len);
	if (r < 0 || (ctype && !header_value_ok(ctype, ctype_len)))
		return result_error(out, LEV_NET_BAD_ARGS,
				    "http_post: 'content_type' must be 1..200 printable characters");
	o.body = body ? body : "";
	o.body_len = body_len;
	o.content_type = ctype ? ctype : "application/json";
	if (guarded_request(url, pol, &o, out, &resp) < 0)
		return 0;
	out->outcome = LEV_NET_OK;
	out->is_error = resp.status >= 400;
	lev_buf_addf(&b, "URL: %s\nStatus: %ld", out->final_url, resp.status);
	if (resp.content_type)
		lev_buf_addf(&b, " (%.100s)", resp.content_type);
	lev_buf_adds(&b, "\n");
	if (resp.status >= 300 && resp.status < 400)
		lev_buf_addf(&b, "\n[redirect to '%.500s' not followed: http_post never follows "
				 "redirects]",
			     resp.redirect_url ? resp.redirect_url : "");
	else if (resp.body_len == 0)
		;
	else if (lev_buf_addch(&b, '\n') < 0 || !append_body_text(&b, &resp, max))
		lev_buf_addf(&b, "[%zu bytes of '%.100s' not shown]", resp.body_len,
			     resp.content_type ? resp.content_type : "binary data");
	out->text = lev_buf_detach(&b, NULL);
	lev_http_response_release(&resp);
	return 0;
}

static char *search_url(const char *endpoint, const char *query, const char *range)
{
	_cleanup_free_ char *q = lev_http_urlencode(query);

	return xasprintf("%s%cq=%s&format=json%s%s", endpoint, strchr(endpoint, '?') ? '&' : '?',
			 q, range ? "&time_range=" : "", range ? range : "");
}

/* web_search's 'freshness' (Leviath's pd/pw/pm/py) as SearXNG's time_range into *RANGE. */
static int search_range(const json_t *args, const char **range)
{
	static const char *const map[][2] = {
		{ "pd", "day" }, { "pw", "week" }, { "pm", "month" }, { "py", "year" },
	};
	const json_t *f = json_object_get(args, "freshness");

	*range = NULL;
	if (!f || json_is_null(f))
		return 0;
	for (size_t i = 0; json_is_string(f) && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(json_string_value(f), map[i][0])) {
			*range = map[i][1];
			return 0;
		}
	return -EINVAL;
}

static void add_field(struct lev_buf *b, const char *prefix, const json_t *v, size_t max)
{
	struct lev_buf t = LEV_BUF_INIT;
	size_t cut;

	if (!json_is_string(v) || json_string_length(v) == 0)
		return;
	/* One line per field: newlines and tabs become spaces. */
	for (const char *p = json_string_value(v); *p; p++)
		lev_buf_addch(&t, *p == '\n' || *p == '\r' || *p == '\t' ? ' ' : *p);
	cut = utf8_cut(t.buf, t.len, max);
	lev_buf_addf(b, "%s%.*s%s\n", prefix, (int)cut, t.buf, cut < t.len ? "..." : "");
	lev_buf_release(&t);
}

int lev_tool_web_search(const json_t *args, const struct lev_net_policy *pol,
			struct lev_net_result *out, struct lev_err *err)
{
	struct fetch_opts o = { .tool = lev_tooltable_name(LEV_OP_WEB_SEARCH), .method = "GET", .follow = true,
				.exempt_first = true };
	struct lev_http_response resp;
	struct lev_buf b = LEV_BUF_INIT;
	size_t max = pol->max_result ? pol->max_result : DEFAULT_MAX_RESULT;
	_cleanup_free_ char *url = NULL;
	const json_t *mr, *results, *item;
	json_t *root;
	json_int_t limit = 5;
	const char *query, *range = NULL;
	size_t qlen, i, shown = 0;
	int r;

	(void)err;
	if (check_common(o.tool, args, pol, out) < 0)
		return 0;
	r = arg_string(args, "query", true, &query, &qlen);
	if (r < 0 || qlen == 0 || qlen > MAX_QUERY || strlen(query) != qlen)
		return result_error(out, LEV_NET_BAD_ARGS,
				    "web_search: 'query' must be a string of 1..%d bytes", MAX_QUERY);
	mr = json_object_get(args, "count");
	if (mr && !json_is_null(mr)) {
		if (!json_is_integer(mr) || json_integer_value(mr) < 1 || json_integer_value(mr) > 20)
			return result_error(out, LEV_NET_BAD_ARGS,
					    "web_search: 'count' must be an integer from 1 to 20");
		limit = json_integer_value(mr);
	}
	if (search_range(args, &range) < 0)
		return result_error(out, LEV_NET_BAD_ARGS,
				    "web_search: 'freshness' must be pd, pw, pm or py (past day, "
				    "week, month, year); a date range is not supported by the "
				    "SearXNG endpoint lev searches through");
	if (!pol->search_endpoint || !*pol->search_endpoint)
		return result_error(out, LEV_NET_NOT_CONFIGURED,
				    "web_search is not configured: set [tools.web_search] endpoint "
				    "(a SearXNG-compatible /search URL) in config.toml");
	url = search_url(pol->search_endpoint, query, range);
	if (guarded_request(url, pol, &o, out, &resp) < 0)
		return 0;
	if (resp.status >= 300) {
		r = result_error(out, LEV_NET_OK, "web_search: the search endpoint answered HTTP %ld",
				 resp.status);
		lev_http_response_release(&resp);
		return r;
	}
	root = json_loadb(resp.body, resp.body_len, 0, NULL);
	lev_http_response_release(&resp);
	results = json_object_get(root, "results");
	if (!json_is_array(results)) {
		json_decref(root);
		return result_error(out, LEV_NET_FAILED,
				    "web_search: the endpoint did not answer with SearXNG JSON "
				    "(is the json format enabled in its settings?)");
	}
	b.max = max + 64;
	lev_buf_addf(&b, "Results for \"%.200s\":\n", query);
	json_array_foreach(results, i, item) {
		struct lev_buf one = LEV_BUF_INIT;

		if ((json_int_t)shown >= limit)
			break;
		if (!json_is_object(item))
			continue;
		size_t before;

		lev_buf_addf(&one, "%zu. ", shown + 1);
		before = one.len;
		add_field(&one, "", json_object_get(item, "title"), 200);
		if (one.len == before)
			lev_buf_adds(&one, "(untitled)\n");
		add_field(&one, "   ", json_object_get(item, "url"), 500);
		add_field(&one, "   ", json_object_get(item, "content"), 300);
		if (lev_buf_add(&b, one.buf, one.len) < 0) {
			lev_buf_release(&one);
			break;
		}
		lev_buf_release(&one);
		shown++;
	}
	if (shown == 0) {
		lev_buf_reset(&b);
		lev_buf_addf(&b, "No results for \"%.200s\".", query);
	}
	json_decref(root);
	out->text = lev_buf_detach(&b, NULL);
	out->outcome = LEV_NET_OK;
	out->is_error = false;
	return 0;
}

/* The network op NAME runs (any spelling), or LEV_OP_NONE. */
static enum lev_tool_op net_op(const char *tool)
{
	const struct lev_tool_desc *d = lev_tooltable_find(tool);

	return d && !(d->flags & LEV_TOOLF_FOREIGN) && d->kind == LEV_TOOL_NET ? d->op : LEV_OP_NONE;
}

bool lev_tool_is_net(const char *tool)
{
	return net_op(tool) != LEV_OP_NONE;
}

int lev_tool_net_run(const char *tool, const json_t *args, const struct lev_net_policy *policy,
		     struct lev_net_result *out, struct lev_err *err)
{
	if (!policy || !out)
		return lev_err_set(err, -EINVAL, "no policy or result");
	switch (net_op(tool)) {
	case LEV_OP_WEB_FETCH:
		return lev_tool_web_fetch(args, policy, out, err);
	case LEV_OP_HTTP_POST:
		return lev_tool_http_post(args, policy, out, err);
	case LEV_OP_WEB_SEARCH:
		return lev_tool_web_search(args, policy, out, err);
	default:
		return lev_err_set(err, -ENOENT, "'%s' is not a network tool", tool ? tool : "");
	}
}

int lev_tool_net_target(const char *tool, const json_t *args,
			const struct lev_net_policy *policy, char **out, struct lev_err *err)
{
	const char *url = NULL;
	struct lev_url u;
	int r;

	enum lev_tool_op op = net_op(tool);

	if (op == LEV_OP_WEB_SEARCH)
		url = policy ? policy->search_endpoint : NULL;
	else if (op != LEV_OP_NONE)
		url = json_string_value(json_object_get(args, "url"));
	else
		return lev_err_set(err, -ENOENT, "'%s' is not a network tool", tool ? tool : "");
	if (!url)
		return lev_err_set(err, -EINVAL, "%s: no URL to take a target from", tool);
	r = lev_url_parse(url, &u, err);
	if (r < 0)
		return r;
	*out = TAKE_PTR(u.host);
	lev_url_release(&u);
	return 0;
}

json_t *lev_tool_net_parameters(enum lev_tool_op op)
{
	switch (op) {
	case LEV_OP_WEB_FETCH:
		return json_pack("{s:s, s:{s:{s:s, s:s}}, s:[s], s:b}", "type", "object",
				 "properties", "url", "type", "string", "description",
				 "The http:// or https:// URL to fetch", "required", "url",
				 "additionalProperties", 0);
	case LEV_OP_HTTP_POST:
		return json_pack("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s}}, s:[s], s:b}",
				 "type", "object", "properties", "url", "type", "string",
				 "description", "The http:// or https:// URL to post to", "body",
				 "type", "string", "description", "The request body (default empty)",
				 "content_type", "type", "string", "description",
				 "The Content-Type of the body (default application/json)",
				 "required", "url", "additionalProperties", 0);
	case LEV_OP_WEB_SEARCH:
		return json_pack("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:i, s:i, s:s}, s:{s:s, s:[s,s,s,s], "
				 "s:s}}, s:[s], s:b}",
				 "type", "object", "properties", "query", "type", "string",
				 "description", "What to search the web for", "count", "type",
				 "integer", "minimum", 1, "maximum", 20, "description",
				 "How many results to return (default 5)", "freshness", "type",
				 "string", "enum", "pd", "pw", "pm", "py", "description",
				 "Only results from the past day, week, month or year", "required",
				 "query", "additionalProperties", 0);
	default:
		return NULL;
	}
}
