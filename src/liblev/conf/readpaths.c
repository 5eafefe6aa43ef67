/*
 * readpaths.c - compile and match [read_paths] entries.
 *
 * Globs are compiled to a list of path components ("segments"): a literal
 * component (from the workdir, the home directory, or user text without
 * wildcards), a wildcard component ('*', '?', '[...]' inside one
 * component), or '**' (zero or more whole components).  The workdir and
 * home are never parsed as glob text, so metacharacters in them match
 * themselves.  Matching is the classic two-pointer wildcard walk, once over
 * components (with '**' as the star) and once inside a component (with '*'),
 * so it is O(n*m) with no recursion and no exponential cases.
 *
 * Regexes are PCRE2, compiled once as "^(?:BODY)\z" with PCRE2_ANCHORED and
 * PCRE2_ENDANCHORED (so neither an alternation nor (*ACCEPT) can unanchor
 * it), JIT-compiled when the library supports it, and matched under match,
 * depth and heap limits; a limit hit is a non-match, which fails closed on
 * both sides of the policy.  Each regex also keeps the literal prefix every
 * match must start with, so most non-matching entries cost one memcmp.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <errno.h>
#include <limits.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/readpaths.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define MAX_COMPONENTS (PATH_MAX / 2 + 1)
#define MAX_SEGMENTS 1024
#define REGEX_MATCH_LIMIT 200000
#define REGEX_DEPTH_LIMIT 2000
#define REGEX_HEAP_LIMIT_KIB 2048
#define PROBE "_leviath_probe"
/* an entry plus an escaped home, with room to spare */
#define REGEX_TEXT_MAX (4 * LEV_READPATH_ENTRY_MAX + 4 * PATH_MAX)

/* A stand-in workdir for checks that have none (syntax, broad, report). */
static const char placeholder_workdir[] =
	"/\001lev-workdir/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16";
static const char placeholder_home[] = "/\001lev-home/user";

enum seg_type {
	SEG_LIT,
	SEG_PAT,
	SEG_STAR2,
};

struct seg {
	enum seg_type type;
	size_t len;
	char *text;
};

struct entry {
	enum lev_readpath_kind kind;
	char *raw;
	/* exact */
	char *root;		/* absolute, as joined (not normalised) */
	char *lexroot;		/* lexically normalised */
	char *realroot;		/* canonical, or NULL when it did not resolve */
	size_t realroot_len;
	/* glob */
	struct seg *segs;
	size_t nsegs;
	bool never;		/* a drive-letter pattern: matches nothing here */
	bool relative;		/* resolved against the workdir */
	/* regex */
	pcre2_code *code;
	char *prefix;		/* every match starts with these bytes */
	size_t prefix_len;
};

/*
 * The index: a trie over the literal leading components every match of an
 * entry must start with (an exact root's components, a glob's leading
 * literal segments, the whole components of a regex's literal prefix).
 * An entry hangs at the node its literal components lead to; a lookup walks
 * the path's components down the trie and tries only the entries it meets,
 * in entry order.  Entries with no literal lead (a root that did not
 * resolve, a glob starting with a wildcard) hang at the root and are
 * always tried.
 */
struct tnode {
	char *name;
	size_t len;
	struct tnode *kids;	/* sorted by name once built */
	size_t nkids;
	size_t *ents;		/* increasing entry indices */
	size_t nents;
};

struct lev_readpaths {
	struct entry *e;
	size_t n;
	pcre2_match_context *mctx;
	struct tnode root;
};

enum {
	C_NO_FS = 1 << 0,	/* never touch the filesystem */
	C_LENIENT = 1 << 1,	/* stand-in workdir: folding past '/' clamps */
};

/* A path split into components, without copying. */
struct split {
	const char *s;
	size_t n;
	uint16_t off[MAX_COMPONENTS];
	uint16_t len[MAX_COMPONENTS];
};

/* ---- small helpers ---------------------------------------------------- */

/* Render S for a one-line message: bounded, control bytes escaped. */
static const char *disp(const char *s, char *out, size_t outsz)
{
	size_t o = 0, i;

	for (i = 0; s[i] && o + 8 < outsz; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(out + o, outsz - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	if (s[i] && outsz > 4) {
		if (o > outsz - 4)
			o = outsz - 4;
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

#define DISP(s) disp((s), (char[160]){ 0 }, 160)

static int entry_err(struct lev_err *err, const char *raw, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int entry_err(struct lev_err *err, const char *raw, const char *fmt, ...)
{
	char what[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return lev_err_set(err, LEV_EPARSE, "read_paths entry '%s': %s", DISP(raw), what);
}

/* Decode one UTF-8 character; an invalid byte decodes as itself, alone. */
static size_t u8dec(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = lev_utf8_decode(s, n, cp);

	if (len)
		return len;
	*cp = 0x110000u + s[0];
	return 1;
}

static bool path_under(const char *path, size_t plen, const char *root, size_t rlen)
{
	if (rlen == 1 && root[0] == '/')
		return true;
	return plen >= rlen && memcmp(path, root, rlen) == 0 && (plen == rlen || path[rlen] == '/');
}

/*
 * Split a real path.  Returns false unless P is absolute and canonical in
 * form: no empty, "." or ".." components, not too long.
 */
static bool split_real(const char *p, struct split *sp)
{
	size_t n, i = 1;

	if (!p || p[0] != '/')
		return false;
	n = strlen(p);
	if (n >= PATH_MAX)
		return false;
	sp->s = p;
	sp->n = 0;
	if (n == 1)
		return true;
	while (i <= n) {
		size_t j = i;
		while (j < n && p[j] != '/')
			j++;
		if (j == i)
			return false;
		if ((j - i == 1 && p[i] == '.') || (j - i == 2 && p[i] == '.' && p[i + 1] == '.'))
			return false;
		sp->off[sp->n] = (uint16_t)i;
		sp->len[sp->n] = (uint16_t)(j - i);
		sp->n++;
		i = j + 1;
	}
	return true;
}

/* ---- glob ------------------------------------------------------------- */

/*
 * Length of the class starting at P[0] == '[' within a component of PL
 * bytes, or 0 when it is not terminated.
 */
static size_t class_len(const char *p, size_t pl)
{
	size_t i = 1;

	if (i < pl && (p[i] == '!' || p[i] == '^'))
		i++;
	if (i < pl && p[i] == ']')
		i++;
	while (i < pl && p[i] != ']')
		i++;
	return i < pl ? i + 1 : 0;
}

static bool class_has(const char *p, size_t clen, uint32_t c)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 1, end = clen - 1;
	bool neg = false, hit = false;

	if (u[i] == '!' || u[i] == '^') {
		neg = true;
		i++;
	}
	while (i < end) {
		uint32_t lo, hi;
		i += u8dec(u + i, end - i, &lo);
		hi = lo;
		if (i + 1 < end && u[i] == '-') {
			i++;
			i += u8dec(u + i, end - i, &hi);
		}
		if (c >= lo && c <= hi)
			hit = true;
	}
	return hit != neg;
}

/* Match one component S against the wildcard component P. */
static bool comp_match(const char *p, size_t pl, const char *s, size_t sl)
{
	const unsigned char *us = (const unsigned char *)s;
	size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;

	while (si < sl) {
		if (pi < pl && p[pi] == '*') {
			while (pi < pl && p[pi] == '*')
				pi++;
			star_p = pi;
			star_s = si;
			continue;
		}
		if (pi < pl) {
			uint32_t c;
			size_t clen;
			if (p[pi] == '?') {
				pi++;
				si += u8dec(us + si, sl - si, &c);
				continue;
			}
			if (p[pi] == '[' && (clen = class_len(p + pi, pl - pi))) {
				size_t adv = u8dec(us + si, sl - si, &c);
				if (class_has(p + pi, clen, c)) {
					pi += clen;
					si += adv;
					continue;
				}
			} else if (p[pi] == s[si]) {
				pi++;
				si++;
				continue;
			}
		}
		if (star_p == SIZE_MAX)
			return false;
		{
			uint32_t c;
			star_s += u8dec(us + star_s, sl - star_s, &c);
		}
		pi = star_p;
		si = star_s;
	}
	while (pi < pl && p[pi] == '*')
		pi++;
	return pi == pl;
}

static bool seg_match(const struct seg *g, const char *c, size_t cl)
{
	if (g->type == SEG_LIT)
		return g->len == cl && memcmp(g->text, c, cl) == 0;
	return comp_match(g->text, g->len, c, cl);
}

/* Match the components FIRST.. of SP against segments SEGS. */
static bool glob_match_split(const struct seg *segs, size_t ns, const struct split *sp)
{
	size_t si = 0, ci = 0, star_s = SIZE_MAX, star_c = 0;

	while (ci < sp->n) {
		if (si < ns && segs[si].type == SEG_STAR2) {
			star_s = ++si;
			star_c = ci;
			continue;
		}
		if (si < ns && seg_match(&segs[si], sp->s + sp->off[ci], sp->len[ci])) {
			si++;
			ci++;
			continue;
		}
		if (star_s == SIZE_MAX)
			return false;
		si = star_s;
		ci = ++star_c;
	}
	while (si < ns && segs[si].type == SEG_STAR2)
		si++;
	return si == ns;
}

static void push_seg(struct entry *e, enum seg_type t, const char *text, size_t len)
{
	struct seg *g;

	e->segs = xreallocarray(e->segs, e->nsegs + 1, sizeof(*e->segs));
	g = &e->segs[e->nsegs++];
	g->type = t;
	g->len = len;
	g->text = xstrndup(text, len);
}

/* Push the components of the absolute path P as literal segments. */
static void push_literal_path(struct entry *e, const char *p)
{
	_cleanup_free_ char *n = lev_path_lexical("/", p);
	const char *s = n + 1;

	while (*s) {
		const char *slash = strchr(s, '/');
		size_t len = slash ? (size_t)(slash - s) : strlen(s);
		push_seg(e, SEG_LIT, s, len);
		s += len;
		if (*s == '/')
			s++;
	}
}

static bool is_drive(const char *s)
{
	return ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')) && s[1] == ':';
}

static int compile_glob(struct entry *e, const char *body, const char *workdir, const char *home,
			unsigned flags, struct lev_err *err)
{
	_cleanup_free_ char *pat = xstrdup(body);
	const char *rest;
	char *q;

	for (q = pat; *q; q++)
		if (*q == '\\')
			*q = '/';
	if (pat[0] == '~') {
		if (pat[1] != '\0' && pat[1] != '/')
			return entry_err(err, e->raw, "only '~/' home expansion is supported");
		if (!home)
			return entry_err(err, e->raw, "no home directory resolved for '~' expansion");
		push_literal_path(e, home);
		rest = pat + 1;
	} else if (pat[0] == '/') {
		rest = pat;
	} else if (is_drive(pat)) {
		e->never = true;
		rest = pat + 2;
	} else {
		_cleanup_free_ char *wd = NULL;
		size_t o;

		e->relative = true;
		if (!workdir)
			return entry_err(err, e->raw, "a relative entry needs a workdir");
		wd = lev_path_lexical("/", workdir);
		o = strlen(wd);
		rest = pat;
		/* fold the leading run of "." and ".." into the workdir */
		for (;;) {
			while (*rest == '/')
				rest++;
			if (rest[0] == '.' && (rest[1] == '/' || rest[1] == '\0')) {
				rest += 1;
			} else if (rest[0] == '.' && rest[1] == '.' &&
				   (rest[2] == '/' || rest[2] == '\0')) {
				rest += 2;
				if (o == 1) {
					if (flags & C_LENIENT)
						continue;
					return entry_err(err, e->raw, "relative pattern escapes the "
							 "filesystem root");
				}
				while (o > 1 && wd[o - 1] != '/')
					o--;
				if (o > 1)
					o--;
				wd[o] = '\0';
			} else {
				break;
			}
		}
		wd[o] = '\0';
		push_literal_path(e, wd);
	}
	while (*rest) {
		const char *c, *end;
		size_t len, i;
		bool wild = false;

		while (*rest == '/')
			rest++;
		if (!*rest)
			break;
		c = rest;
		end = strchr(c, '/');
		len = end ? (size_t)(end - c) : strlen(c);
		rest = c + len;
		if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return entry_err(err, e->raw,
					 "glob patterns cannot contain '.' or '..' components (relative "
					 "entries fold them against the workdir at the start only)");
		if (len == 2 && c[0] == '*' && c[1] == '*') {
			if (!e->nsegs || e->segs[e->nsegs - 1].type != SEG_STAR2)
				push_seg(e, SEG_STAR2, c, len);
			continue;
		}
		for (i = 0; i < len; i++) {
			if (c[i] == '*' && i + 1 < len && c[i + 1] == '*')
				return entry_err(err, e->raw, "'**' must be a whole path component");
			if (c[i] == '*' || c[i] == '?') {
				wild = true;
			} else if (c[i] == '[') {
				size_t cl = class_len(c + i, len - i);
				if (!cl)
					return entry_err(err, e->raw,
							 "unterminated '[' character class");
				wild = true;
				i += cl - 1;
			}
		}
		if (e->nsegs >= MAX_SEGMENTS)
			return entry_err(err, e->raw, "too many path components");
		push_seg(e, wild ? SEG_PAT : SEG_LIT, c, len);
	}
	return 0;
}

/* ---- regex ------------------------------------------------------------ */

static void regex_escape(struct lev_buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f)
			lev_buf_addf(b, "\\x%02x", c);
		else if (strchr("\\^$.|?*+()[]{}# ", c))
			lev_buf_addch(b, '\\'), lev_buf_addch(b, (char)c);
		else
			lev_buf_addch(b, (char)c);
	}
}

static bool is_ascii_punct(unsigned char c)
{
	return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) ||
	       (c >= 0x7b && c <= 0x7e);
}

/*
 * The literal bytes every match of BODY (anchored at the start) begins
 * with: ordinary characters and backslash-escaped punctuation, up to the
 * first metacharacter, minus a last atom that a quantifier makes optional.
 * A body with '|' anywhere gets no prefix (conservative).
 */
static void regex_literal_prefix(const char *body, struct lev_buf *out)
{
	const char *p = body;

	if (strchr(body, '|'))
		return;
	for (;;) {
		unsigned char c = (unsigned char)*p, atom;
		size_t adv = 1;

		if (!c)
			return;
		if (c == '\\') {
			if (!is_ascii_punct((unsigned char)p[1]) && p[1] != ' ')
				return;
			atom = (unsigned char)p[1];
			adv = 2;
		} else if (strchr(".[](){}*+?|^$", c)) {
			return;
		} else {
			atom = c;
		}
		p += adv;
		if (*p == '*' || *p == '+' || *p == '?' || *p == '{')
			return;
		lev_buf_addch(out, (char)atom);
	}
}

static int compile_regex(struct entry *e, const char *body, const char *home, struct lev_err *err)
{
	_cleanup_buf_ struct lev_buf full = LEV_BUF_INIT_MAX(REGEX_TEXT_MAX);
	_cleanup_buf_ struct lev_buf pfx = LEV_BUF_INIT_MAX(REGEX_TEXT_MAX);
	_cleanup_buf_ struct lev_buf expanded = LEV_BUF_INIT_MAX(REGEX_TEXT_MAX);
	pcre2_code *alone;
	int ecode;
	PCRE2_SIZE eoff;
	const uint32_t opts = PCRE2_NEVER_UTF | PCRE2_NEVER_UCP | PCRE2_NEVER_BACKSLASH_C;

	if (body[0] == '~') {
		if (body[1] != '\0' && body[1] != '/')
			return entry_err(err, e->raw, "only '~/' home expansion is supported");
		if (!home)
			return entry_err(err, e->raw, "no home directory resolved for '~' expansion");
		{
			_cleanup_free_ char *h = lev_path_lexical("/", home);
			/* "/" as home: "~/x" must not become "//x" */
			regex_escape(&expanded, strcmp(h, "/") ? h : "");
		}
		lev_buf_adds(&expanded, body + 1);
	} else if (body[0] == '/' || is_drive(body)) {
		lev_buf_adds(&expanded, body);
	} else {
		return entry_err(err, e->raw,
				 "regex entries must start with '/', a drive letter, or '~/'; "
				 "use 'glob:' for workdir-relative patterns");
	}

	/* The body must be a complete regex on its own (balanced groups). */
	alone = pcre2_compile((PCRE2_SPTR)expanded.buf, expanded.len, opts, &ecode, &eoff, NULL);
	if (!alone) {
		PCRE2_UCHAR msg[160];
		pcre2_get_error_message(ecode, msg, sizeof(msg));
		return entry_err(err, e->raw, "invalid regex: %s at offset %zu", (char *)msg,
				 (size_t)eoff);
	}
	pcre2_code_free(alone);

	lev_buf_adds(&full, "^(?:");
	lev_buf_add(&full, expanded.buf, expanded.len);
	lev_buf_adds(&full, ")\\z");
	e->code = pcre2_compile((PCRE2_SPTR)full.buf, full.len,
				opts | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &ecode, &eoff, NULL);
	if (!e->code) {
		PCRE2_UCHAR msg[160];
		pcre2_get_error_message(ecode, msg, sizeof(msg));
		return entry_err(err, e->raw, "invalid regex: %s", (char *)msg);
	}
	(void)pcre2_jit_compile(e->code, PCRE2_JIT_COMPLETE);
	regex_literal_prefix(expanded.buf, &pfx);
	e->prefix = lev_buf_detach(&pfx, &e->prefix_len);
	return 0;
}

static bool regex_match(const struct entry *e, pcre2_match_context *mctx,
			pcre2_match_data **md, const char *s, size_t n)
{
	int rc;

	if (e->prefix_len && (n < e->prefix_len || memcmp(s, e->prefix, e->prefix_len) != 0))
		return false;
	if (!*md)
		*md = pcre2_match_data_create(1, NULL);
	if (!*md)
		return false;
	rc = pcre2_match(e->code, (PCRE2_SPTR)s, n, 0, 0, *md, mctx);
	return rc >= 0;	/* 0: matched, ovector too small; limits: no match */
}

/* ---- entries ------------------------------------------------------------ */

static void entry_release(struct entry *e)
{
	size_t i;

	free(e->raw);
	free(e->root);
	free(e->lexroot);
	free(e->realroot);
	for (i = 0; i < e->nsegs; i++)
		free(e->segs[i].text);
	free(e->segs);
	pcre2_code_free(e->code);
	free(e->prefix);
	memset(e, 0, sizeof(*e));
}

static bool all_space(const char *s)
{
	for (; *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\v' && *s != '\f')
			return false;
	return true;
}

static int compile_entry(struct entry *e, const char *raw, const char *workdir, const char *home,
			 unsigned flags, struct lev_err *err)
{
	size_t n, i;
	int r = 0;

	memset(e, 0, sizeof(*e));
	if (!raw || all_space(raw))
		return lev_err_set(err, LEV_EPARSE, "read_paths entry is empty");
	n = strlen(raw);
	if (n > LEV_READPATH_ENTRY_MAX)
		return lev_err_set(err, LEV_EPARSE,
				   "read_paths entry '%s' is too long (%zu bytes; the limit is %d)",
				   DISP(raw), n, LEV_READPATH_ENTRY_MAX);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)raw[i];
		if (c < 0x20 || c == 0x7f)
			return lev_err_set(err, LEV_EPARSE,
					   "read_paths entry '%s' contains a control character",
					   DISP(raw));
	}
	if (home && home[0] != '/')
		home = NULL;
	e->raw = xstrdup(raw);

	if (lev_startswith(raw, "glob:")) {
		e->kind = LEV_READPATH_GLOB;
		if (all_space(raw + 5))
			r = entry_err(err, raw, "glob pattern is empty");
		else
			r = compile_glob(e, raw + 5, workdir, home, flags, err);
	} else if (lev_startswith(raw, "regex:")) {
		e->kind = LEV_READPATH_REGEX;
		if (all_space(raw + 6))
			r = entry_err(err, raw, "regex pattern is empty");
		else
			r = compile_regex(e, raw + 6, home, err);
	} else {
		e->kind = LEV_READPATH_EXACT;
		if (raw[0] == '~') {
			if (raw[1] != '\0' && raw[1] != '/' && raw[1] != '\\')
				r = entry_err(err, raw, "only '~/' home expansion is supported");
			else if (!home)
				r = entry_err(err, raw, "no home directory resolved for '~' expansion");
			else
				e->root = raw[1] ? lev_path_join(home, raw + 2) : xstrdup(home);
		} else if (raw[0] == '/') {
			e->root = xstrdup(raw);
		} else if (!workdir) {
			r = entry_err(err, raw, "a relative entry needs a workdir");
		} else {
			e->relative = true;
			e->root = lev_path_join(workdir, raw);
		}
		if (r == 0) {
			e->lexroot = lev_path_lexical("/", e->root);
			if (!(flags & C_NO_FS)) {
				e->realroot = realpath(e->root, NULL);
				e->realroot_len = e->realroot ? strlen(e->realroot) : 0;
			}
		}
	}
	if (r < 0)
		entry_release(e);
	return r;
}

static bool exact_match(const struct entry *e, const char *p, size_t n)
{
	_cleanup_free_ char *now = NULL;

	if (e->realroot)
		return path_under(p, n, e->realroot, e->realroot_len);
	/* The root did not exist when the set was compiled: try again. */
	now = realpath(e->root, NULL);
	return now && path_under(p, n, now, strlen(now));
}

static bool entry_match(const struct entry *e, const struct split *sp, pcre2_match_context *mctx,
			pcre2_match_data **md, size_t n)
{
	switch (e->kind) {
	case LEV_READPATH_EXACT:
		return exact_match(e, sp->s, n);
	case LEV_READPATH_GLOB:
		if (e->never)
			return false;
		/* a literal last segment must be the last component: cheap reject */
		if (e->nsegs && e->segs[e->nsegs - 1].type == SEG_LIT &&
		    (!sp->n || !seg_match(&e->segs[e->nsegs - 1], sp->s + sp->off[sp->n - 1],
					  sp->len[sp->n - 1])))
			return false;
		return glob_match_split(e->segs, e->nsegs, sp);
	case LEV_READPATH_REGEX:
		return regex_match(e, mctx, md, sp->s, n);
	}
	return false;
}

/* ---- the index ---------------------------------------------------------- */

static int name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

static int tnode_cmp(const void *a, const void *b)
{
	const struct tnode *x = a, *y = b;
	return name_cmp(x->name, x->len, y->name, y->len);
}

static struct tnode *tnode_child(struct tnode *n, const char *name, size_t len, bool add)
{
	size_t i;

	for (i = 0; i < n->nkids; i++)
		if (n->kids[i].len == len && !memcmp(n->kids[i].name, name, len))
			return &n->kids[i];
	if (!add)
		return NULL;
	n->kids = xreallocarray(n->kids, n->nkids + 1, sizeof(*n->kids));
	memset(&n->kids[n->nkids], 0, sizeof(*n->kids));
	n->kids[n->nkids].name = xstrndup(name, len);
	n->kids[n->nkids].len = len;
	return &n->kids[n->nkids++];
}

static void tnode_sort(struct tnode *n)
{
	size_t i;

	if (n->nkids > 1)
		qsort(n->kids, n->nkids, sizeof(*n->kids), tnode_cmp);
	for (i = 0; i < n->nkids; i++)
		tnode_sort(&n->kids[i]);
}

static void tnode_release(struct tnode *n)
{
	size_t i;

	for (i = 0; i < n->nkids; i++)
		tnode_release(&n->kids[i]);
	free(n->kids);
	free(n->ents);
	free(n->name);
}

/* Walk the '/'-separated components of P[0..LEN) down from N, adding nodes. */
static struct tnode *tnode_path(struct tnode *n, const char *p, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t j;
		while (i < len && p[i] == '/')
			i++;
		j = i;
		while (j < len && p[j] != '/')
			j++;
		if (j > i)
			n = tnode_child(n, p + i, j - i, true);
		i = j;
	}
	return n;
}

static void index_entry(struct lev_readpaths *s, size_t idx)
{
	const struct entry *e = &s->e[idx];
	struct tnode *n = &s->root;
	size_t i;

	switch (e->kind) {
	case LEV_READPATH_EXACT:
		if (e->realroot)
			n = tnode_path(n, e->realroot, e->realroot_len);
		break;
	case LEV_READPATH_GLOB:
		if (e->never)
			return;	/* matches nothing here: not worth trying */
		for (i = 0; i < e->nsegs && e->segs[i].type == SEG_LIT; i++)
			n = tnode_child(n, e->segs[i].text, e->segs[i].len, true);
		break;
	case LEV_READPATH_REGEX:
		if (e->prefix_len && e->prefix[0] == '/') {
			const char *last = memrchr(e->prefix, '/', e->prefix_len);
			n = tnode_path(n, e->prefix, (size_t)(last - e->prefix));
		}
		break;
	}
	n->ents = xreallocarray(n->ents, n->nents + 1, sizeof(*n->ents));
	n->ents[n->nents++] = idx;
}

static const struct tnode *tnode_find(const struct tnode *n, const char *name, size_t len)
{
	size_t lo = 0, hi = n->nkids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = name_cmp(name, len, n->kids[mid].name, n->kids[mid].len);
		if (!c)
			return &n->kids[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int size_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- public: sets ------------------------------------------------------ */

static struct lev_readpaths *set_alloc(size_t n)
{
	struct lev_readpaths *s = xcalloc(1, sizeof(*s));

	s->e = xcalloc(n ? n : 1, sizeof(*s->e));
	s->mctx = pcre2_match_context_create(NULL);
	if (!s->mctx)
		abort();	/* allocation failure, as xmalloc */
	pcre2_set_match_limit(s->mctx, REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(s->mctx, REGEX_DEPTH_LIMIT);
	pcre2_set_heap_limit(s->mctx, REGEX_HEAP_LIMIT_KIB);
	return s;
}

static int set_compile(char *const *entries, const char *workdir, const char *home,
		       unsigned flags, struct lev_readpaths **out, struct lev_err *err)
{
	size_t n = lev_strv_len(entries), i;
	struct lev_readpaths *s;

	if (n > LEV_READPATHS_MAX)
		return lev_err_set(err, LEV_EPARSE, "too many read_paths entries (%zu; the limit is %d)",
				   n, LEV_READPATHS_MAX);
	if (workdir && workdir[0] != '/')
		return lev_err_set(err, -EINVAL, "workdir '%s' is not an absolute path", DISP(workdir));
	s = set_alloc(n);
	for (i = 0; i < n; i++) {
		int r = compile_entry(&s->e[i], entries[i], workdir, home, flags, err);
		if (r < 0) {
			lev_readpaths_free(s);
			return r;
		}
		s->n++;
	}
	for (i = 0; i < s->n; i++)
		index_entry(s, i);
	tnode_sort(&s->root);
	*out = s;
	return 0;
}

int lev_readpaths_new(char *const *entries, const char *workdir, const char *home,
		      struct lev_readpaths **out, struct lev_err *err)
{
	return set_compile(entries, workdir, home, 0, out, err);
}

struct lev_readpaths *lev_readpaths_free(struct lev_readpaths *s)
{
	size_t i;

	if (!s)
		return NULL;
	for (i = 0; i < s->n; i++)
		entry_release(&s->e[i]);
	free(s->e);
	tnode_release(&s->root);
	pcre2_match_context_free(s->mctx);
	free(s);
	return NULL;
}

size_t lev_readpaths_count(const struct lev_readpaths *s)
{
	return s ? s->n : 0;
}

const char *lev_readpaths_entry(const struct lev_readpaths *s, size_t i)
{
	return s && i < s->n ? s->e[i].raw : NULL;
}

enum lev_readpath_kind lev_readpaths_kind(const struct lev_readpaths *s, size_t i)
{
	return s && i < s->n ? s->e[i].kind : LEV_READPATH_EXACT;
}

long lev_readpaths_find(const struct lev_readpaths *s, const char *real_path)
{
	struct split sp;
	pcre2_match_data *md = NULL;
	const struct tnode *node;
	size_t stackbuf[64], *cand = stackbuf, ncand = 0, nodes = 0, i, n;
	long hit = -1;

	if (!s || !s->n || !split_real(real_path, &sp))
		return -1;
	n = strlen(real_path);
	/* collect the entries along the path's components */
	for (node = &s->root, i = 0;; i++) {
		if (node->nents) {
			if (ncand + node->nents > ARRAY_SIZE(stackbuf) && cand == stackbuf) {
				cand = xmalloc(s->n * sizeof(*cand));
				memcpy(cand, stackbuf, ncand * sizeof(*cand));
			}
			memcpy(cand + ncand, node->ents, node->nents * sizeof(*cand));
			ncand += node->nents;
			nodes++;
		}
		if (i == sp.n)
			break;
		node = tnode_find(node, sp.s + sp.off[i], sp.len[i]);
		if (!node)
			break;
	}
	if (nodes > 1)
		qsort(cand, ncand, sizeof(*cand), size_cmp);
	for (i = 0; i < ncand; i++) {
		if (entry_match(&s->e[cand[i]], &sp, s->mctx, &md, n)) {
			hit = (long)cand[i];
			break;
		}
	}
	pcre2_match_data_free(md);
	if (cand != stackbuf)
		free(cand);
	return hit;
}

bool lev_readpaths_match_lexically(const struct lev_readpaths *s, const char *path)
{
	_cleanup_free_ char *norm = NULL;
	struct split sp;
	pcre2_match_data *md = NULL;
	size_t i, n;
	bool hit = false;

	if (!s || !path || path[0] != '/')
		return false;
	norm = lev_path_lexical("/", path);
	if (!split_real(norm, &sp))
		return false;
	n = strlen(norm);
	for (i = 0; i < s->n && !hit; i++) {
		const struct entry *e = &s->e[i];
		if (e->kind == LEV_READPATH_EXACT)
			hit = path_under(norm, n, e->lexroot, strlen(e->lexroot));
		else
			hit = entry_match(e, &sp, s->mctx, &md, n);
	}
	pcre2_match_data_free(md);
	return hit;
}

/* ---- public: policy ---------------------------------------------------- */

bool lev_readpath_policy_active(const struct lev_readpath_policy *p)
{
	return p && lev_readpaths_count(p->declared) > 0;
}

enum lev_readpath_decision lev_readpath_policy_decide(const struct lev_readpath_policy *p,
						      const char *real_path)
{
	if (!lev_readpath_policy_active(p) || !lev_readpaths_match(p->declared, real_path))
		return LEV_READPATH_NOT_DECLARED;
	if (p->allow_blueprint || lev_readpaths_match(p->grants, real_path))
		return LEV_READPATH_ALLOWED;
	return LEV_READPATH_NOT_GRANTED;
}

const char *lev_readpath_decision_name(enum lev_readpath_decision d)
{
	switch (d) {
	case LEV_READPATH_NOT_DECLARED:
		return "not-declared";
	case LEV_READPATH_ALLOWED:
		return "allowed";
	case LEV_READPATH_NOT_GRANTED:
		return "not-granted";
	}
	return "?";
}

/* ---- public: syntax and lint ------------------------------------------ */

int lev_readpath_check_syntax(const char *raw, struct lev_err *err)
{
	struct entry e;
	int r = compile_entry(&e, raw, placeholder_workdir, placeholder_home, C_NO_FS | C_LENIENT,
			      err);

	if (r == 0)
		entry_release(&e);
	return r;
}

static bool spec_broad(const char *raw)
{
	_cleanup_free_ char *s = NULL;
	size_t n;
	char *q;

	if (lev_startswith(raw, "glob:"))
		raw += 5;
	else if (lev_startswith(raw, "regex:"))
		raw += 6;
	s = xstrdup(raw);
	for (q = s; *q; q++)
		if (*q == '\\')
			*q = '/';
	n = strlen(s);
	while (n && s[n - 1] == '/')
		s[--n] = '\0';
	return !strcmp(s, "") || !strcmp(s, "~") || !strcmp(s, "/**") || !strcmp(s, "~/**") ||
	       lev_startswith(s, "**") || lev_startswith(s, "/**/") || lev_startswith(s, "~/**/") ||
	       lev_startswith(s, "/.*") || lev_startswith(s, "~/.*") || !strcmp(s, "/.+") ||
	       !strcmp(s, "~/.+");
}

bool lev_readpath_is_broad(const char *raw)
{
	/* Probes: a path anywhere on the machine, and one anywhere in the home. */
	static const char *const probes[] = {
		"/" PROBE "a/" PROBE "b/" PROBE "c",
		"/\001lev-home/user/" PROBE "d/" PROBE "e",
	};
	struct entry e;
	struct split sp;
	size_t i;
	bool broad = false;

	if (!raw || spec_broad(raw))
		return raw != NULL;
	if (compile_entry(&e, raw, placeholder_workdir, placeholder_home, C_NO_FS | C_LENIENT,
			  NULL) < 0)
		return false;
	for (i = 0; i < ARRAY_SIZE(probes) && !broad; i++) {
		pcre2_match_context *mctx = pcre2_match_context_create(NULL);
		pcre2_match_data *md = NULL;
		size_t n = strlen(probes[i]);

		if (!mctx)
			break;
		pcre2_set_match_limit(mctx, REGEX_MATCH_LIMIT);
		pcre2_set_depth_limit(mctx, REGEX_DEPTH_LIMIT);
		pcre2_set_heap_limit(mctx, REGEX_HEAP_LIMIT_KIB);
		if (split_real(probes[i], &sp)) {
			if (e.kind == LEV_READPATH_EXACT)
				broad = path_under(probes[i], n, e.lexroot, strlen(e.lexroot));
			else
				broad = entry_match(&e, &sp, mctx, &md, n);
		}
		pcre2_match_data_free(md);
		pcre2_match_context_free(mctx);
	}
	entry_release(&e);
	return broad;
}

/* ---- public: report ---------------------------------------------------- */

const char *lev_grant_status_label(enum lev_grant_status s)
{
	switch (s) {
	case LEV_GRANT_GRANTED:
		return "granted";
	case LEV_GRANT_NOT_GRANTED:
		return "NOT granted";
	case LEV_GRANT_UNDETERMINED:
		return "cannot be checked from the pattern alone";
	}
	return "?";
}

static bool entry_matches_str(const struct entry *e, const char *p)
{
	pcre2_match_context *mctx;
	pcre2_match_data *md = NULL;
	struct split sp;
	bool hit = false;

	if (!split_real(p, &sp))
		return false;
	if (e->kind == LEV_READPATH_EXACT)
		return path_under(p, strlen(p), e->lexroot, strlen(e->lexroot));
	mctx = pcre2_match_context_create(NULL);
	if (!mctx)
		return false;
	pcre2_set_match_limit(mctx, REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(mctx, REGEX_DEPTH_LIMIT);
	pcre2_set_heap_limit(mctx, REGEX_HEAP_LIMIT_KIB);
	hit = entry_match(e, &sp, mctx, &md, strlen(p));
	pcre2_match_data_free(md);
	pcre2_match_context_free(mctx);
	return hit;
}

/*
 * A representative path for entry E (caller frees), or NULL when none can
 * be built honestly.  Every sample is checked against its own entry.
 */
static char *sample_path(const struct entry *e)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(4 * PATH_MAX);
	size_t i;

	switch (e->kind) {
	case LEV_READPATH_EXACT:
		return xstrdup(e->lexroot);
	case LEV_READPATH_GLOB:
		if (e->never)
			return NULL;
		for (i = 0; i < e->nsegs; i++) {
			const struct seg *g = &e->segs[i];
			size_t j;

			lev_buf_addch(&b, '/');
			if (g->type == SEG_STAR2) {
				lev_buf_adds(&b, PROBE);
				continue;
			}
			if (g->type == SEG_LIT) {
				lev_buf_add(&b, g->text, g->len);
				continue;
			}
			for (j = 0; j < g->len; j++) {
				if (g->text[j] == '[') {
					lev_buf_release(&b);
					return NULL;
				}
				if (g->text[j] == '?') {
					lev_buf_addch(&b, 'x');
				} else if (g->text[j] == '*') {
					while (j + 1 < g->len && g->text[j + 1] == '*')
						j++;
					lev_buf_adds(&b, PROBE);
				} else {
					lev_buf_addch(&b, g->text[j]);
				}
			}
		}
		if (!b.len)
			lev_buf_addch(&b, '/');
		break;
	case LEV_READPATH_REGEX: {
		const char *slash;
		_cleanup_free_ char *first = NULL;

		if (!e->prefix_len || e->prefix[0] != '/')
			return NULL;
		slash = strrchr(e->prefix, '/');
		first = xasprintf("%.*s/%s", (int)(slash - e->prefix), e->prefix, PROBE);
		if (entry_matches_str(e, first))
			return TAKE_PTR(first);
		lev_buf_adds(&b, e->prefix);
		break;
	}
	}
	if (!entry_matches_str(e, b.buf)) {
		lev_buf_release(&b);
		return NULL;
	}
	return lev_buf_detach(&b, NULL);
}

int lev_readpaths_report(char *const *declared, char *const *grants, bool allow_blueprint,
			 const char *workdir, const char *home, enum lev_grant_status *status_out,
			 struct lev_err *err)
{
	struct lev_readpaths *g = NULL;
	size_t n = lev_strv_len(declared), i;
	const char *wd = workdir ? workdir : placeholder_workdir;
	unsigned flags = C_NO_FS | (workdir ? 0 : C_LENIENT);
	enum lev_grant_status *st;
	int r;

	if (n > LEV_READPATHS_MAX)
		return lev_err_set(err, LEV_EPARSE, "too many read_paths entries (%zu; the limit is %d)",
				   n, LEV_READPATHS_MAX);
	r = set_compile(grants, wd, home, flags, &g, err);
	if (r < 0)
		return r;
	st = xcalloc(n ? n : 1, sizeof(*st));
	for (i = 0; i < n; i++) {
		struct entry e;
		_cleanup_free_ char *sample = NULL;
		bool relative;

		if (allow_blueprint) {
			st[i] = LEV_GRANT_GRANTED;
			continue;
		}
		if (!g->n) {
			st[i] = LEV_GRANT_NOT_GRANTED;
			continue;
		}
		if (compile_entry(&e, declared[i], wd, home, flags, NULL) < 0) {
			st[i] = LEV_GRANT_UNDETERMINED;
			continue;
		}
		sample = sample_path(&e);
		relative = e.relative;
		entry_release(&e);
		if (!sample)
			st[i] = LEV_GRANT_UNDETERMINED;
		else if (lev_readpaths_match_lexically(g, sample))
			st[i] = LEV_GRANT_GRANTED;
		else if (relative && !workdir)
			st[i] = LEV_GRANT_UNDETERMINED;	/* relative; the workdir is unknown */
		else
			st[i] = LEV_GRANT_NOT_GRANTED;
	}
	memcpy(status_out, st, n * sizeof(*st));
	free(st);
	lev_readpaths_free(g);
	return 0;
}
