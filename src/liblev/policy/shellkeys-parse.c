/*
 * shellkeys-parse.c - the shell-line lexer and list parser behind
 * lev_shellkeys_parse().
 *
 * It reads a line the way bash reads `bash -c LINE`: line continuations
 * (backslash-newline) vanish everywhere except inside single quotes,
 * $'...', comments and quoted heredoc bodies; quotes and escapes are
 * removed; $( ), <( ), >( ) are parsed recursively and keyed on their own;
 * redirections are classified as they are met; each simple command is
 * handed to sk_command() (shellkeys-cmd.c).  Whatever this file is not sure
 * it reads exactly as bash does stops the parse (sk_stop()).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/policy/shellkeys-internal.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

/* Redirections and changes of directory a line may carry before it is refused as unreadable. */
#define SK_MAX_TARGETS 256
#define SK_MAX_CDS 256

/* ---- accumulators ------------------------------------------------------- */

void sk_vec_push_take(struct sk_vec *vec, char *s)
{
	if (vec->n + 1 >= vec->cap) {
		vec->cap = vec->cap ? vec->cap * 2 : 16;
		vec->v = xreallocarray(vec->v, vec->cap, sizeof(*vec->v));
	}
	vec->v[vec->n++] = s;
	vec->v[vec->n] = NULL;
}

void sk_vec_release(struct sk_vec *vec)
{
	size_t i;

	for (i = 0; i < vec->n; i++)
		free(vec->v[i]);
	free(vec->v);
	memset(vec, 0, sizeof(*vec));
}

void sk_list_push(struct lev_arena *a, struct sk_list *l, char *s)
{
	if (l->n + 1 >= l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;

		l->v = lev_arena_grow(a, l->v, l->cap * sizeof(*l->v), cap * sizeof(*l->v));
		l->cap = cap;
	}
	l->v[l->n++] = s;
	l->v[l->n] = NULL;
}

void sk_word_release(struct sk_word *w)
{
	memset(w, 0, sizeof(*w));
}

/* A..B..C (LEN bytes, LEN bytes or NULL, NUL-terminated) joined in the arena. */
static char *cat3(struct lev_arena *a, const char *x, size_t xl, const char *y, size_t yl,
		  const char *z)
{
	size_t zl = z ? strlen(z) : 0;
	char *r = lev_arena_alloc(a, xl + yl + zl + 1);

	memcpy(r, x, xl);
	memcpy(r + xl, y, yl);
	memcpy(r + xl + yl, z ? z : "", zl);
	r[xl + yl + zl] = '\0';
	return r;
}

void sk_refuse(struct sk *p, const char *reason)
{
	if (!p->ungrantable) {
		p->ungrantable = true;
		p->reason = reason;
	}
}

void sk_stop(struct sk *p, const char *reason)
{
	if (!p->stopped) {
		p->stopped = true;
		p->stop_reason = reason;
	}
	sk_refuse(p, reason);
	sk_need_fence(p, reason);
}

void sk_need_fence(struct sk *p, const char *reason)
{
	if (!p->fence) {
		p->fence = true;
		p->fence_reason = reason;
	}
}

void sk_add_key(struct sk *p, const char *text, size_t len, const char *arg)
{
	/* "shell:TEXT" or "shell:TEXT ARG", put together without printf (a key per command) */
	size_t tl = strnlen(text, len), al = arg ? strlen(arg) : 0;
	char *k = lev_arena_alloc(&p->arena, 6 + tl + (arg ? 1 + al : 0) + 1), *e = k;

	memcpy(e, "shell:", 6);
	e += 6;
	memcpy(e, text, tl);
	e += tl;
	if (arg) {
		*e++ = ' ';
		memcpy(e, arg, al);
		e += al;
	}
	*e = '\0';
	sk_list_push(&p->arena, &p->keys, k);
}

void sk_bind(struct sk *p, const char *name, size_t len)
{
	sk_list_push(&p->arena, &p->keys, cat3(&p->arena, "shell:env:", 10, name, len, NULL));
	if (len == 4 && !strncmp(name, "HOME", 4))
		p->binds_home = true;
	if (len == 6 && !strncmp(name, "CDPATH", 6))
		p->binds_cdpath = true;
}

void sk_unlocatable(struct sk *p, const char *why)
{
	p->writes = true;
	if (!p->unlocatable) {
		p->unlocatable = true;
		p->write_reason = why;
	}
	sk_refuse(p, "a write whose destination cannot be named before it runs");
}

/* A ".." path component in V: at the start, after '/', or after '=' (--opt=..). */
static bool has_dotdot(const char *v)
{
	for (size_t i = 0; v[i]; i++)
		if ((i == 0 || v[i - 1] == '/' || v[i - 1] == '=') && v[i] == '.' &&
		    v[i + 1] == '.' && (v[i + 2] == '/' || v[i + 2] == '\0'))
			return true;
	return false;
}

/*
 * Whether a word, read as a path or an option carrying one, may name
 * something outside the working directory: an absolute path, the home
 * directory, a ".." component, or a $ expansion (which can be anything).
 * Options: "--file=/x", "--file=~/x", and a short option with the path
 * attached ("-f/x").  A relative glob cannot climb out (no "..", no '/'
 * start), so globs alone do not count.
 */
static bool reaches_out(const struct sk_word *w)
{
	const char *v = w->val;

	if (w->dollar || w->tilde || v[0] == '/' || v[0] == '~' || has_dotdot(v))
		return true;
	if (v[0] == '-')
		return strstr(v, "=/") || strstr(v, "=~") ||
		       (v[1] != '-' && v[1] && v[2] == '/');
	return false;
}

void sk_note_outside(struct sk *p, const struct sk_word *w)
{
	if (p->outside || !reaches_out(w))
		return;
	if (w->dollar) {
		const char *v = *w->val ? w->val : "$...";

		p->outside = cat3(&p->arena, v, strlen(v), "", 0, " (a $ expansion)");
	} else {
		p->outside = lev_arena_strndup(&p->arena, w->val, strlen(w->val));
	}
}

void sk_add_cd(struct sk *p, const char *dir, bool cdpath)
{
	if (p->n_cds >= SK_MAX_CDS) {
		sk_stop(p, "too many changes of directory");
		return;
	}
	if (p->n_cds == p->cap_cds) {
		size_t cap = p->cap_cds ? p->cap_cds * 2 : 8;

		p->cds = lev_arena_grow(&p->arena, p->cds, p->cap_cds * sizeof(*p->cds),
					cap * sizeof(*p->cds));
		p->cap_cds = cap;
	}
	/* after a cd out of the workdir, every relative path is outside it */
	if (!p->outside && (!dir || dir[0] == '/' || dir[0] == '~' || has_dotdot(dir)))
		p->outside = cat3(&p->arena, "cd ", 3, "", 0,
				  dir ? dir : "(to a directory that cannot be named)");
	p->cds[p->n_cds].dir = dir ? lev_arena_strdup(&p->arena, dir) : NULL;
	p->cds[p->n_cds].cdpath = cdpath;
	p->n_cds++;
}

static void add_target(struct sk *p, const struct sk_word *t)
{
	if (p->n_targets >= SK_MAX_TARGETS) {
		sk_stop(p, "too many redirections");
		return;
	}
	if (p->n_targets == p->cap_targets) {
		size_t cap = p->cap_targets ? p->cap_targets * 2 : 8;

		p->targets = lev_arena_grow(&p->arena, p->targets,
					    p->cap_targets * sizeof(*p->targets),
					    cap * sizeof(*p->targets));
		p->cap_targets = cap;
	}
	p->targets[p->n_targets].path = t->val; /* both in the arena */
	p->targets[p->n_targets].tilde = t->tilde;
	p->targets[p->n_targets].n_cd = p->n_cds;
	p->n_targets++;
}

/* ---- the cursor ---------------------------------------------------------- */

/* peekc() at a backslash or the end: skip the line continuations. */
__attribute__((noinline)) static int peekc_slow(struct sk *p)
{
	while (p->i + 1 < p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == '\n')
		p->i += 2;
	return p->i < p->n ? (unsigned char)p->s[p->i] : -1;
}

/* The current character, after removing line continuations; -1 at the end. */
static inline int peekc(struct sk *p)
{
	/* the common case: a byte that is not a backslash */
	if (__builtin_expect(p->i < p->n && p->s[p->i] != '\\', 1))
		return (unsigned char)p->s[p->i];
	return peekc_slow(p);
}

/* The character after the current one (continuations removed). */
static int peek2(struct sk *p)
{
	size_t save;
	int c;

	if (peekc(p) < 0)
		return -1;
	save = p->i;
	p->i++;
	c = peekc(p);
	p->i = save;
	return c;
}

static void adv(struct sk *p)
{
	if (peekc(p) >= 0)
		p->i++;
}

static void skip_blanks(struct sk *p)
{
	int c;

	while ((c = peekc(p)) == ' ' || c == '\t')
		adv(p);
}

static bool enter(struct sk *p)
{
	if (p->depth >= SK_MAX_DEPTH) {
		sk_stop(p, "substitutions nested too deeply");
		return false;
	}
	p->depth++;
	return true;
}

static void parse_list(struct sk *p, int closer);

/* ---- words ----------------------------------------------------------------- */

struct wctx {
	struct lev_arena *a;	/* the parse's: where B (and OWN_M) grow */
	struct sk_text b;	/* the raw text, SK_MARK bytes included */
	struct sk_text *m;	/* its mask: the parser's (p->mask) or OWN_M */
	struct sk_text own_m;
	bool special;		/* an unquoted byte brace, tilde or pattern expansion reads */
	struct sk_word w;
	bool plain_prefix;	/* nothing quoted or expanded yet (assignment names) */
	bool tilde_start;	/* the word began with an unquoted '~' */
	bool brace;		/* an unquoted '{' or '}' */
	bool bracket;		/* an unquoted '[' (a pattern once a ']' follows) */
	bool other;		/* anything besides one process substitution */
	bool marks;		/* an SK_MARK byte was added */
	unsigned procsubsts;
};

/* The bytes a word's buffer starts with (most words are shorter). */
#define WORD_ROOM 32

/* An empty text of CAP bytes (its NUL included) in arena A. */
static void text_init(struct lev_arena *a, struct sk_text *t, size_t cap)
{
	t->buf = lev_arena_alloc(a, cap);
	t->buf[0] = '\0';
	t->len = 0;
	t->cap = cap;
}

__attribute__((noinline)) static void text_grow(struct lev_arena *a, struct sk_text *t)
{
	size_t cap = t->cap * 2;

	t->buf = lev_arena_grow(a, t->buf, t->cap, cap);
	t->cap = cap;
}

/*
 * Add C to T: a word is read byte by byte (and is never longer than the
 * line).  Room for the NUL is kept, but it is written by text_end().
 */
static inline void addch(struct lev_arena *a, struct sk_text *t, char c)
{
	if (__builtin_expect(t->len + 1 >= t->cap, 0))
		text_grow(a, t);
	t->buf[t->len++] = c;
}

/* T's text as a C string. */
static inline char *text_end(struct sk_text *t)
{
	t->buf[t->len] = '\0';
	return t->buf;
}

/* MASK: a text to reuse for the mask (emptied here), or NULL for one of its own. */
static void wctx_init(struct sk *p, struct wctx *x, struct sk_text *mask)
{
	/* member by member: a memset() of the whole context costs more than the word */
	*x = (struct wctx){ .a = &p->arena, .plain_prefix = true };
	/* room for most words at once */
	text_init(x->a, &x->b, WORD_ROOM);
	if (mask) {
		x->m = mask;
		x->m->len = 0;
	} else {
		text_init(x->a, &x->own_m, WORD_ROOM);
		x->m = &x->own_m;
	}
}

/* Add C to the word; Q is its mask byte (SK_UNQ, SK_QUO or SK_MARK). */
static void putq(struct wctx *x, int c, char q)
{
	addch(x->a, &x->b, (char)c);
	addch(x->a, x->m, q);
	if (q == SK_UNQ && (c == '{' || c == '~' || c == '*' || c == '?' || c == '['))
		x->special = true;
	if (c >= 0x80)
		x->w.nonascii = true;
	x->other = true;
}

/* A quoted character. */
static void put(struct wctx *x, int c)
{
	putq(x, c, SK_QUO);
}

/* A quote opened here: it keeps an empty word alive. */
static void put_mark(struct wctx *x)
{
	putq(x, 0x01, SK_MARK);
	x->marks = true;
}

static void read_dquote(struct sk *p, struct wctx *x);
static void read_dollar(struct sk *p, struct wctx *x, bool in_dq);

/*
 * Arithmetic from the current position to the matching "))": `$(( ))` and
 * the `(( ))` command.  Literal arithmetic on numbers is data; names make
 * the line ungrantable; anything this does not read (expansions, quotes,
 * separators) stops the parse.
 */
static void scan_arith(struct sk *p)
{
	unsigned depth = 0;
	bool ident = false;

	for (;;) {
		int c = peekc(p);

		if (c < 0) {
			sk_stop(p, "an unterminated arithmetic expression");
			return;
		}
		if (c == '(') {
			depth++;
		} else if (c == ')') {
			if (depth == 0) {
				if (peek2(p) != ')') {
					sk_stop(p, "an arithmetic expression this parser does not read");
					return;
				}
				adv(p);
				adv(p);
				break;
			}
			depth--;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
			ident = true;
		} else if (!strchr("0123456789 \t+-*/%<>=!&|^~?:,", c)) {
			sk_stop(p, "an arithmetic expression this parser does not read");
			return;
		}
		adv(p);
	}
	if (ident)
		sk_refuse(p, "arithmetic on variables");
}

/*
 * The word of a ${NAME op word} expansion, up to the closing '}' (which is
 * consumed).  Nested substitutions are parsed and keyed; the text itself is
 * data.
 */
static void scan_brace_word(struct sk *p, bool in_dq)
{
	struct wctx scratch;

	wctx_init(p, &scratch, NULL);
	while (!p->stopped) {
		int c = peekc(p);

		if (c < 0) {
			sk_stop(p, "an unterminated ${ } expansion");
			break;
		}
		if (c == '}') {
			adv(p);
			break;
		}
		if (c == '{') {
			sk_stop(p, "a brace inside a ${ } expansion");
			break;
		}
		if (c == '\\') {
			p->i++;
			if (p->i >= p->n) {
				sk_stop(p, "an unterminated ${ } expansion");
				break;
			}
			p->i++;
			continue;
		}
		if (c == '\'') {
			const char *q;

			if (in_dq) {
				sk_stop(p, "a single quote inside ${ } inside double quotes");
				break;
			}
			q = memchr(p->s + p->i + 1, '\'', p->n - p->i - 1);
			if (!q) {
				sk_stop(p, "an unterminated single quote");
				break;
			}
			p->i = (size_t)(q - p->s) + 1;
			continue;
		}
		if (c == '"') {
			adv(p);
			read_dquote(p, &scratch);
			continue;
		}
		if (c == '$') {
			read_dollar(p, &scratch, in_dq);
			continue;
		}
		if (c == '`') {
			sk_stop(p, "a backtick substitution");
			break;
		}
		adv(p);
	}
}

static bool is_name_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_name_char(int c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

/* After "${": NAME, then '}' or an operator and a word. */
static void scan_param(struct sk *p, bool in_dq)
{
	struct sk_text name;
	int c = peekc(p);
	bool length = false, bind = false;

	text_init(&p->arena, &name, WORD_ROOM);

	if (c == '!') {
		sk_stop(p, "an indirect ${! } expansion");
		return;
	}
	if (c == '#') {
		adv(p);
		if (peekc(p) == '}') {
			adv(p);
			return;
		}
		length = true;
	}
	c = peekc(p);
	if (is_name_start(c)) {
		while (is_name_char(c = peekc(p))) {
			addch(&p->arena, &name, (char)c);
			adv(p);
		}
	} else if (c >= '0' && c <= '9') {
		while ((c = peekc(p)) >= '0' && c <= '9')
			adv(p);
	} else if (c > 0 && strchr("@*#?-$!", c)) {
		adv(p);
	} else {
		sk_stop(p, "a ${ } expansion this parser does not read");
		return;
	}
	c = peekc(p);
	if (c == '}') {
		adv(p);
		return;
	}
	if (length) {
		sk_stop(p, "a ${# } expansion this parser does not read");
		return;
	}
	if (c == '[') {
		sk_stop(p, "an array subscript (it evaluates arithmetic)");
		return;
	}
	if (c == ':') {
		adv(p);
		c = peekc(p);
		if (c == '=') {
			bind = true;
			adv(p);
		} else if (c == '-' || c == '?' || c == '+') {
			adv(p);
		} else {
			sk_refuse(p, "a substring expansion (it evaluates arithmetic)");
		}
	} else if (c == '=') {
		bind = true;
		adv(p);
	} else if (c > 0 && strchr("-?+#%/^,", c)) {
		adv(p);
	} else {
		sk_stop(p, "a ${ } expansion this parser does not read");
		return;
	}
	if (bind && name.len)
		sk_bind(p, name.buf, name.len);
	scan_brace_word(p, in_dq);
}

/* Drop the SK_MARK bytes (0x01) from B. */
static void strip_marks(struct sk_text *b)
{
	size_t i, j;

	for (i = 0, j = 0; i < b->len; i++)
		if (b->buf[i] != 0x01)
			b->buf[j++] = b->buf[i];
	b->len = j;
	b->buf[j] = '\0';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * After "$" at a single quote: $'...' decoded the way bash does (quoted
 * text).  Escapes whose result depends on the locale (\u, \U), control
 * escapes (\cX) and control bytes besides tab and newline make the word
 * opaque (they could also not be told apart from the mask's marks).
 */
static void read_ansi_c(struct sk *p, struct wctx *x)
{
	static const char simple[] = "a\ab\be\033E\033f\fn\nr\rt\tv\v\\\\''\"\"??";

	x->w.quoted = true;
	put_mark(x);
	p->i++; /* the quote */
	while (p->i < p->n && p->s[p->i] != '\'') {
		int c = (unsigned char)p->s[p->i++];
		const char *e;
		int v, d, k;

		if (c != '\\') {
			put(x, c);
			continue;
		}
		if (p->i >= p->n)
			break;
		c = (unsigned char)p->s[p->i++];
		e = strchr(simple, c);
		if (e && ((e - simple) % 2) == 0 && c) {
			v = (unsigned char)e[1];
		} else if (c >= '0' && c <= '7') {
			v = c - '0';
			for (k = 0; k < 2 && p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '7'; k++)
				v = v * 8 + (p->s[p->i++] - '0');
			v &= 0xff;
		} else if (c == 'x' && p->i < p->n && hexval((unsigned char)p->s[p->i]) >= 0) {
			v = 0;
			for (k = 0; k < 2 && p->i < p->n && (d = hexval((unsigned char)p->s[p->i])) >= 0;
			     k++, p->i++)
				v = v * 16 + d;
		} else if (c == 'u' || c == 'U' || c == 'c' || c == 'x') {
			x->w.opaque = true;
			x->w.expanded = true;
			continue;
		} else {
			put(x, '\\');
			put(x, c);
			continue;
		}
		if ((v < 0x20 && v != '\t' && v != '\n') || v == 0x7f) {
			x->w.opaque = true;
			x->w.expanded = true;
			continue;
		}
		put(x, v);
	}
	if (p->i >= p->n) {
		sk_stop(p, "an unterminated $'...' string");
		return;
	}
	p->i++;
}

/* At '$': an expansion of some kind.  Marks the word expanded. */
static void read_dollar(struct sk *p, struct wctx *x, bool in_dq)
{
	int c;

	adv(p); /* '$' */
	x->plain_prefix = false;
	x->other = true;
	c = peekc(p);
	if (c == '\'' && !in_dq) {
		read_ansi_c(p, x);
		return;
	}
	x->w.expanded = true;
	x->w.dollar = true;
	x->w.opaque = true;
	if (c == '(') {
		if (peek2(p) == '(') {
			adv(p);
			adv(p);
			scan_arith(p);
			return;
		}
		adv(p);
		if (!enter(p))
			return;
		parse_list(p, ')');
		p->depth--;
		return;
	}
	if (c == '{') {
		adv(p);
		if (!enter(p))
			return;
		scan_param(p, in_dq);
		p->depth--;
		return;
	}
	if (c == '[') {
		sk_stop(p, "a $[ ] arithmetic expansion");
		return;
	}
	if (c == '"' && !in_dq) {
		/* $"...": translated through the locale's message catalogue */
		x->w.quoted = true;
		adv(p);
		read_dquote(p, x);
		return;
	}
	if (is_name_start(c)) {
		while (is_name_char(peekc(p)))
			adv(p);
		return;
	}
	if (c > 0 && ((c >= '0' && c <= '9') || strchr("@*#?-$!", c))) {
		adv(p);
		return;
	}
	/* a bare '$' stands for itself, but the word is still not plain */
	putq(x, '$', in_dq ? SK_QUO : SK_UNQ);
}

/* After an opening '"': up to and including the closing one. */
static void read_dquote(struct sk *p, struct wctx *x)
{
	put_mark(x);
	x->w.quoted = true;
	x->plain_prefix = false;
	x->other = true;
	while (!p->stopped) {
		int c = peekc(p);

		if (c < 0) {
			sk_stop(p, "an unterminated double quote");
			return;
		}
		if (c == '"') {
			adv(p);
			return;
		}
		if (c == '\\') {
			char e = p->i + 1 < p->n ? p->s[p->i + 1] : '\0';

			if (e && strchr("$`\"\\", e)) {
				put(x, e);
				p->i += 2;
			} else {
				put(x, '\\');
				p->i++;
			}
			continue;
		}
		if (c == '$') {
			read_dollar(p, x, true);
			continue;
		}
		if (c == '`') {
			sk_stop(p, "a backtick substitution");
			return;
		}
		put(x, c);
		adv(p);
	}
}

/*
 * Read one word at the current position into *out (always filled; release
 * it).  DBRACKET: inside [[ ]], where '(' and ')' end a word and process
 * substitutions are not read.
 */
/* The word ends before C (a '(' after NAME= is an array assignment: not read). */
static bool word_ends(struct sk *p, const struct wctx *x, int c, bool dbracket)
{
	if (c < 0 || c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' ||
	    c == ')')
		return true;
	if (c == '(') {
		if (!dbracket && x->w.assign && x->b.len == x->w.name_len + 1 +
				      (x->b.buf[x->w.name_len] == '+'))
			sk_stop(p, "an array assignment");
		return true;
	}
	return (c == '<' || c == '>') && peek2(p) != '(';
}

/* A process substitution <( ) or >( ) inside the word; false: the word ends. */
static bool read_procsubst(struct sk *p, struct wctx *x, bool dbracket)
{
	if (dbracket) {
		sk_stop(p, "a process substitution inside [[ ]]");
		return false;
	}
	adv(p);
	adv(p);
	x->w.expanded = true;
	x->plain_prefix = false;
	x->procsubsts++;
	if (!enter(p))
		return false;
	parse_list(p, ')');
	p->depth--;
	return true;
}

/* A backslash and the byte it quotes; false: the line ends after it. */
static bool read_escape(struct sk *p, struct wctx *x)
{
	p->i++;
	if (p->i >= p->n) {
		sk_stop(p, "a trailing backslash");
		return false;
	}
	put(x, (unsigned char)p->s[p->i]);
	p->i++;
	x->w.quoted = true;
	x->plain_prefix = false;
	return true;
}

/* A single-quoted string; false: it is not terminated. */
static bool read_squote(struct sk *p, struct wctx *x)
{
	const char *q = memchr(p->s + p->i + 1, '\'', p->n - p->i - 1);
	size_t k;

	if (!q) {
		sk_stop(p, "an unterminated single quote");
		return false;
	}
	put_mark(x);
	for (k = p->i + 1; k < (size_t)(q - p->s); k++)
		put(x, (unsigned char)p->s[k]);
	x->other = true;
	p->i = (size_t)(q - p->s) + 1;
	x->w.quoted = true;
	x->plain_prefix = false;
	return true;
}

/* An unquoted byte C: what bash may expand in it, and the NAME of NAME=value. */
static void put_unquoted(struct wctx *x, int c, bool first)
{
	if (c == '*' || c == '?')
		x->w.expanded = true;
	if (c == '[')
		x->bracket = true;
	if (c == ']' && x->bracket)
		x->w.expanded = true; /* a [...] pattern; a lone '[' is literal */
	if (c == '{' || c == '}')
		x->brace = true;
	if (c == '~' && first)
		x->tilde_start = true;
	if (c == '=' && !x->w.assign && x->plain_prefix && !x->w.expanded) {
		if (sk_is_name(x->b.buf, x->b.len)) {
			x->w.assign = true;
			x->w.name_len = x->b.len;
		} else if (x->b.len > 1 && x->b.buf[x->b.len - 1] == '+' &&
			   sk_is_name(x->b.buf, x->b.len - 1)) {
			x->w.assign = true;
			x->w.name_len = x->b.len - 1;
		}
	}
	putq(x, c, SK_UNQ);
}

/* The word read into X, with what its text says about it, into *OUT. */
static void finish_word(struct wctx *x, struct sk_word *out)
{
	text_end(&x->b);
	x->w.raw_len = x->b.len;
	/*
	 * A substitution inside the word parsed words of its own with the
	 * shared mask buffer; such a word is opaque (or one process
	 * substitution) and its mask is never read, but say so.
	 */
	if (x->m->len != x->b.len) {
		x->w.opaque = x->w.opaque || !(x->procsubsts == 1 && !x->other);
		x->special = x->marks = false;
	}
	/* the mask outlives the word only when an expansion will read it */
	if (x->special || x->marks)
		x->w.mask = lev_arena_strndup(x->a, x->m->buf, x->m->len);
	x->w.plain = !x->special;
	if (x->marks) {
		/* RAW keeps the marks; VAL drops them */
		x->w.raw = lev_arena_strndup(x->a, x->b.buf, x->b.len);
		strip_marks(&x->b);
	}
	if (x->tilde_start) {
		if (!x->w.expanded && (!strcmp(x->b.buf, "~") || !strncmp(x->b.buf, "~/", 2)))
			x->w.tilde = true;
		else
			x->w.expanded = true;
	}
	if (x->brace && (x->w.quoted || (strcmp(x->b.buf, "{") && strcmp(x->b.buf, "}"))))
		x->w.expanded = true;
	x->w.procsubst_only = x->procsubsts == 1 && !x->other;
	if (x->procsubsts && !x->w.procsubst_only)
		x->w.opaque = true; /* a /dev/fd/N path glued to other text */
	x->w.val = x->b.buf;
	x->w.len = x->b.len;
	*out = x->w;
}

/* The bytes that end a word or start a quote, an escape or an expansion in it. */
static const bool word_special[256] = {
	[' '] = true, ['\t'] = true, ['\n'] = true, [';'] = true, ['&'] = true, ['|'] = true,
	['('] = true, [')'] = true, ['<'] = true, ['>'] = true, ['\\'] = true, ['\''] = true,
	['"'] = true, ['$'] = true, ['`'] = true,
};

/*
 * Plain-text bytes put_unquoted() adds and does nothing else for: not
 * special to the word (above), not read by brace, tilde or pattern
 * expansion, not '=' (assignments), not '~', ASCII.
 */
static const bool word_run[256] = {
	['!'] = true, ['#'] = true, ['%'] = true, ['+'] = true, [','] = true, ['-'] = true,
	['.'] = true, ['/'] = true, ['0'] = true, ['1'] = true, ['2'] = true, ['3'] = true,
	['4'] = true, ['5'] = true, ['6'] = true, ['7'] = true, ['8'] = true, ['9'] = true,
	[':'] = true, ['@'] = true, ['A'] = true, ['B'] = true, ['C'] = true, ['D'] = true,
	['E'] = true, ['F'] = true, ['G'] = true, ['H'] = true, ['I'] = true, ['J'] = true,
	['K'] = true, ['L'] = true, ['M'] = true, ['N'] = true, ['O'] = true, ['P'] = true,
	['Q'] = true, ['R'] = true, ['S'] = true, ['T'] = true, ['U'] = true, ['V'] = true,
	['W'] = true, ['X'] = true, ['Y'] = true, ['Z'] = true, ['^'] = true, ['_'] = true,
	['a'] = true, ['b'] = true, ['c'] = true, ['d'] = true, ['e'] = true, ['f'] = true,
	['g'] = true, ['h'] = true, ['i'] = true, ['j'] = true, ['k'] = true, ['l'] = true,
	['m'] = true, ['n'] = true, ['o'] = true, ['p'] = true, ['q'] = true, ['r'] = true,
	['s'] = true, ['t'] = true, ['u'] = true, ['v'] = true, ['w'] = true, ['x'] = true,
	['y'] = true, ['z'] = true,
};

/* The run of word_run bytes at the cursor, added at once; false when there is none. */
static bool read_run(struct sk *p, struct wctx *x)
{
	size_t j = p->i, len;

	while (j < p->n && word_run[(unsigned char)p->s[j]])
		j++;
	len = j - p->i;
	if (!len)
		return false;
	while (x->b.len + len >= x->b.cap)
		text_grow(x->a, &x->b);
	while (x->m->len + len >= x->m->cap)
		text_grow(x->a, x->m);
	memcpy(x->b.buf + x->b.len, p->s + p->i, len);
	memset(x->m->buf + x->m->len, SK_UNQ, len);
	x->b.len += len;
	x->m->len += len;
	x->other = true;
	p->i = j;
	return true;
}

static void read_word(struct sk *p, struct sk_word *out, bool dbracket)
{
	struct wctx x;
	bool first = true, more = true;

	wctx_init(p, &x, &p->mask);
	while (more && !p->stopped) {
		int c;

		if (read_run(p, &x)) {
			first = false;
			continue;
		}
		c = peekc(p);
		if (c >= 0 && !word_special[c]) {
			/* the common case: a byte of plain text (peekc() stands on it) */
			put_unquoted(&x, c, first);
			p->i++;
			first = false;
			continue;
		}
		if (word_ends(p, &x, c, dbracket))
			break;
		if (c == '<' || c == '>') {
			more = read_procsubst(p, &x, dbracket);
		} else if (c == '\\') {
			more = read_escape(p, &x);
		} else if (c == '\'') {
			more = read_squote(p, &x);
		} else if (c == '"') {
			adv(p);
			read_dquote(p, &x);
		} else if (c == '$') {
			read_dollar(p, &x, false);
		} else {
			sk_stop(p, "a backtick substitution");	/* '`' */
			more = false;
		}
		first = false;
	}
	finish_word(&x, out);
}

/* ---- heredocs ---------------------------------------------------------------- */

static void drop_heredocs(struct sk *p)
{
	p->n_heredocs = 0;
}

/* After a newline token: the bodies of the pending heredocs, in order. */
static void read_heredocs(struct sk *p)
{
	size_t h;

	for (h = 0; h < p->n_heredocs && !p->stopped; h++) {
		const char *delim = p->heredocs[h].delim;
		size_t dlen = strlen(delim);

		while (p->i < p->n) {
			const char *line = p->s + p->i;
			const char *nl = memchr(line, '\n', p->n - p->i);
			size_t len = nl ? (size_t)(nl - line) : p->n - p->i;
			size_t t = 0;

			if (p->heredocs[h].strip_tabs)
				while (t < len && line[t] == '\t')
					t++;
			if (!p->heredocs[h].quoted) {
				size_t k;

				if (len > 0 && line[len - 1] == '\\') {
					sk_stop(p, "a line continuation inside a heredoc");
					break;
				}
				for (k = 0; k < len; k++)
					if (line[k] == '`' ||
					    (line[k] == '$' && k + 1 < len && strchr("({[", line[k + 1]))) {
						sk_stop(p, "a substitution inside a heredoc");
						break;
					}
				if (p->stopped)
					break;
			}
			p->i += len + (nl ? 1 : 0);
			if (len - t == dlen && !memcmp(line + t, delim, dlen))
				break;
		}
	}
	drop_heredocs(p);
}

/* ---- redirections ------------------------------------------------------------ */

enum redir_kind {
	R_READ,
	R_WRITE,
	R_DUP_IN,
	R_DUP_OUT,
	R_HEREDOC,
	R_HEREDOC_STRIP,
	R_HERESTRING,
};

static bool is_dup_word(const struct sk_word *t)
{
	size_t d;

	if (t->quoted || t->expanded || t->len == 0)
		return false;
	if (!strcmp(t->val, "-"))
		return true;
	d = strspn(t->val, "0123456789");
	return d > 0 && (d == t->len || (d + 1 == t->len && t->val[d] == '-'));
}

static bool is_discarded(const char *v)
{
	size_t d;

	if (!strcmp(v, "/dev/null") || !strcmp(v, "/dev/stdout") || !strcmp(v, "/dev/stderr"))
		return true;
	if (strncmp(v, "/dev/fd/", 8) != 0)
		return false;
	d = strspn(v + 8, "0123456789");
	return d > 0 && v[8 + d] == '\0';
}

static bool is_network_path(const char *v)
{
	return !strncmp(v, "/dev/tcp/", 9) || !strncmp(v, "/dev/udp/", 9);
}

static void write_target(struct sk *p, const struct sk_word *t)
{
	if (t->procsubst_only)
		return; /* > >(cmd) feeds a pipe, like | cmd */
	if (t->expanded) {
		sk_unlocatable(p, "the redirect target is expanded at run time");
		return;
	}
	if (t->len == 0) {
		sk_refuse(p, "an empty redirect target");
		return;
	}
	if (is_discarded(t->val))
		return;
	p->writes = true;
	if (is_network_path(t->val))
		sk_refuse(p, "a /dev/tcp or /dev/udp redirect opens a network connection");
	else
		sk_list_push(&p->arena, &p->keys,
			     cat3(&p->arena, "shell:>", 7, t->val, strlen(t->val), NULL));
	add_target(p, t);
}

/* At '<', '>' or "&>": one redirection and its target. */
static void redirect(struct sk *p)
{
	enum redir_kind kind;
	struct sk_word t;
	int c = peekc(p);

	if (c == '&') {
		adv(p);
		adv(p);
		if (peekc(p) == '>')
			adv(p);
		kind = R_WRITE;
	} else if (c == '<') {
		adv(p);
		c = peekc(p);
		if (c == '<') {
			adv(p);
			c = peekc(p);
			if (c == '<') {
				adv(p);
				kind = R_HERESTRING;
			} else if (c == '-') {
				adv(p);
				kind = R_HEREDOC_STRIP;
			} else {
				kind = R_HEREDOC;
			}
		} else if (c == '>') {
			adv(p);
			kind = R_WRITE;
		} else if (c == '&') {
			adv(p);
			kind = R_DUP_IN;
		} else {
			kind = R_READ;
		}
	} else {
		adv(p);
		c = peekc(p);
		if (c == '>' || c == '|') {
			adv(p);
			kind = R_WRITE;
		} else if (c == '&') {
			adv(p);
			kind = R_DUP_OUT;
		} else {
			kind = R_WRITE;
		}
	}
	skip_blanks(p);
	c = peekc(p);
	if ((kind == R_DUP_OUT || kind == R_DUP_IN) && c == '-') {
		/* ">&-" closes the descriptor: bash takes the '-' alone, and what
		 * follows it ("1" in ">&-1") is the next word of the command */
		adv(p);
		return;
	}
	if (c < 0 || c == '\n' || c == '#' || c == '(' || (c != '<' && c != '>' && strchr(";&|)", c)) ||
	    ((c == '<' || c == '>') && peek2(p) != '(')) {
		sk_stop(p, "a redirection without a target");
		return;
	}
	read_word(p, &t, false);
	if (p->stopped) {
		sk_word_release(&t);
		return;
	}
	switch (kind) {
	case R_HEREDOC:
	case R_HEREDOC_STRIP:
		sk_refuse(p, "a heredoc");
		if (t.expanded || t.procsubst_only) {
			sk_stop(p, "a heredoc delimiter this parser does not read");
		} else if (p->n_heredocs >= SK_MAX_HEREDOCS) {
			sk_stop(p, "too many heredocs");
		} else {
			p->heredocs[p->n_heredocs].delim = t.val; /* in the arena */
			p->heredocs[p->n_heredocs].strip_tabs = kind == R_HEREDOC_STRIP;
			p->heredocs[p->n_heredocs].quoted = t.quoted;
			p->n_heredocs++;
		}
		break;
	case R_READ:
	case R_HERESTRING:
	case R_DUP_IN:
		if (kind == R_READ)
			sk_note_outside(p, &t);
		if (t.expanded && kind != R_HERESTRING && !t.procsubst_only)
			sk_refuse(p, "an expanded redirect target");
		else if (kind != R_HERESTRING && is_network_path(t.val))
			sk_refuse(p, "a /dev/tcp or /dev/udp redirect opens a network connection");
		break;
	case R_DUP_OUT:
		if (is_dup_word(&t))
			break;
		write_target(p, &t);
		break;
	case R_WRITE:
		write_target(p, &t);
		break;
	}
	sk_word_release(&t);
}

/* ---- lists and compound commands --------------------------------------------- */

enum pstate {
	S_START,	/* command position: keywords are recognised */
	S_ARGS,		/* after the program word */
	S_AFTER,	/* after fi / done / } / ) / ]] / )): only redirections */
	S_FOR_NAME,	/* after for / select */
	S_FOR_IN,	/* after for NAME: "in", "do", or a separator */
	S_FOR_WORDS,	/* the words after "in" */
	S_FUNC_NAME,	/* after "function" */
	S_FUNC_AFTER,	/* after "function NAME": "()" or the body */
	S_DBRACKET,	/* inside [[ ]] */
};

struct cmd {
	struct sk_word *w;
	size_t n, cap;
	bool started;	/* an assignment, the program or a redirection was seen */
	bool after_time;
};

static void cmd_push(struct sk *p, struct cmd *c, struct sk_word *w)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;

		c->w = lev_arena_grow(&p->arena, c->w, c->cap * sizeof(*c->w), cap * sizeof(*c->w));
		c->cap = cap;
	}
	c->w[c->n++] = *w;
	memset(w, 0, sizeof(*w));
	c->started = true;
}

static void cmd_clear(struct cmd *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		sk_word_release(&c->w[i]);
	c->n = 0;
	c->started = false;
	c->after_time = false;
}

static void end_command(struct sk *p, struct cmd *c)
{
	if (c->n && !p->stopped)
		sk_command(p, c->w, c->n);
	cmd_clear(c);
}

/* A separator or a newline ends the command; some states may not end here. */
static void boundary(struct sk *p, struct cmd *c, enum pstate *st, bool newline)
{
	end_command(p, c);
	switch (*st) {
	case S_FOR_NAME:
	case S_FUNC_NAME:
	case S_DBRACKET:
		sk_stop(p, "a compound command this parser does not read");
		break;
	case S_FOR_IN:
		if (!newline)
			*st = S_START;
		break;
	default:
		*st = S_START;
		break;
	}
}

/* The reserved words (and the few other words) a command position may hold. */
enum kw {
	KW_NONE,
	/* prefix keywords: the command goes on after them */
	KW_IF, KW_THEN, KW_ELSE, KW_ELIF, KW_DO, KW_WHILE, KW_UNTIL, KW_BANG, KW_LBRACE,
	/* closing keywords */
	KW_FI, KW_DONE, KW_ESAC, KW_RBRACE,
	KW_TIME, KW_TIME_P, KW_FOR, KW_SELECT, KW_CASE, KW_COPROC, KW_FUNCTION, KW_DBRACKET,
	KW_DPAREN, KW_DBRACKET_END, KW_IN, KW_MATCH,
};

/* The keyword W spells (unquoted and unexpanded), once per word: a switch, not a dozen strcmp()s. */
static enum kw keyword(const struct sk_word *w)
{
	const char *v = w->val;

	if (w->quoted || w->expanded || w->len > 8)
		return KW_NONE;
#define KW(text, k)                 \
	if (!strcmp(v, text))        \
		return k;
	switch (v[0]) {
	case 'i': KW("if", KW_IF) KW("in", KW_IN) break;
	case 't': KW("then", KW_THEN) KW("time", KW_TIME) break;
	case 'e': KW("else", KW_ELSE) KW("elif", KW_ELIF) KW("esac", KW_ESAC) break;
	case 'd': KW("do", KW_DO) KW("done", KW_DONE) break;
	case 'w': KW("while", KW_WHILE) break;
	case 'u': KW("until", KW_UNTIL) break;
	case '!': KW("!", KW_BANG) break;
	case '{': KW("{", KW_LBRACE) break;
	case '}': KW("}", KW_RBRACE) break;
	case 'f': KW("fi", KW_FI) KW("for", KW_FOR) KW("function", KW_FUNCTION) break;
	case 's': KW("select", KW_SELECT) break;
	case 'c': KW("case", KW_CASE) KW("coproc", KW_COPROC) break;
	case '[': KW("[[", KW_DBRACKET) break;
	case ']': KW("]]", KW_DBRACKET_END) break;
	case '(': KW("((", KW_DPAREN) break;
	case '-': KW("-p", KW_TIME_P) break;
	case '=': KW("=~", KW_MATCH) break;
	}
#undef KW
	return KW_NONE;
}

/* One word in state *ST; takes ownership of *W. */
static void handle_word(struct sk *p, struct cmd *c, enum pstate *st, struct sk_word *w)
{
	enum kw kw = keyword(w);

	switch (*st) {
	case S_START:
		if (!c->started) {
			if (c->after_time && kw == KW_TIME_P) {
				c->after_time = false;
				break;
			}
			c->after_time = false;
			if (kw >= KW_IF && kw <= KW_LBRACE)
				break;
			if (kw == KW_TIME) {
				c->after_time = true;
				break;
			}
			if (kw >= KW_FI && kw <= KW_RBRACE) {
				*st = S_AFTER;
				break;
			}
			if (kw == KW_FOR) {
				*st = S_FOR_NAME;
				break;
			}
			if (kw == KW_SELECT) {
				sk_refuse(p, "a select loop");
				*st = S_FOR_NAME;
				break;
			}
			if (kw == KW_CASE) {
				sk_stop(p, "a case statement");
				break;
			}
			if (kw == KW_COPROC) {
				sk_stop(p, "a coprocess");
				break;
			}
			if (kw == KW_FUNCTION) {
				sk_refuse(p, "a function definition");
				*st = S_FUNC_NAME;
				break;
			}
			if (kw == KW_DBRACKET) {
				sk_refuse(p, "a [[ ]] test");
				*st = S_DBRACKET;
				break;
			}
			if (kw == KW_DPAREN || kw == KW_DBRACKET_END || kw == KW_IN) {
				sk_stop(p, "a reserved word out of place");
				break;
			}
		}
		if (!w->assign)
			*st = S_ARGS;
		cmd_push(p, c, w);
		return;
	case S_ARGS:
		cmd_push(p, c, w);
		return;
	case S_AFTER:
		sk_stop(p, "a word after the end of a compound command");
		break;
	case S_FOR_NAME:
		if (!w->quoted && !w->expanded && sk_is_name(w->val, w->len)) {
			sk_bind(p, w->val, w->len);
			*st = S_FOR_IN;
		} else {
			sk_stop(p, "a loop variable that is not a plain name");
		}
		break;
	case S_FOR_IN:
		if (kw == KW_IN)
			*st = S_FOR_WORDS;
		else if (kw == KW_DO)
			*st = S_START;
		else
			sk_stop(p, "a for loop this parser does not read");
		break;
	case S_FOR_WORDS:
		break; /* data; substitutions in it were keyed while reading */
	case S_FUNC_NAME:
		if (w->expanded)
			sk_stop(p, "a function name that is expanded");
		*st = S_FUNC_AFTER;
		break;
	case S_FUNC_AFTER:
		*st = S_START;
		handle_word(p, c, st, w);
		return;
	case S_DBRACKET:
		if (kw == KW_DBRACKET_END)
			*st = S_AFTER;
		else if (kw == KW_MATCH)
			sk_stop(p, "a regular expression inside [[ ]]");
		break;
	}
	sk_word_release(w);
}

/* Inside [[ ]]: '<', '>', '(', ')', '!', '&&' and '||' are operators, not syntax. */
static void dbracket_token(struct sk *p, struct cmd *c, enum pstate *st)
{
	struct sk_word w;
	int ch = peekc(p);

	if (ch == '\n' || ch == ';') {
		sk_stop(p, "a separator inside [[ ]]");
		return;
	}
	if (ch == '<' || ch == '>' || ch == '(' || ch == ')' || ch == '!') {
		if ((ch == '<' || ch == '>') && peek2(p) == '(') {
			sk_stop(p, "a process substitution inside [[ ]]");
			return;
		}
		adv(p);
		return;
	}
	if (ch == '&' || ch == '|') {
		if (peek2(p) != ch) {
			sk_stop(p, "a separator inside [[ ]]");
			return;
		}
		adv(p);
		adv(p);
		return;
	}
	read_word(p, &w, true);
	if (p->stopped) {
		sk_word_release(&w);
		return;
	}
	handle_word(p, c, st, &w);
}

/* A function definition NAME ( ): the one word so far is its name. */
static bool function_parens(struct sk *p)
{
	adv(p);
	skip_blanks(p);
	if (peekc(p) != ')') {
		sk_stop(p, "an unexpected '('");
		return false;
	}
	adv(p);
	sk_refuse(p, "a function definition");
	return true;
}

/*
 * Parse commands until the end of the line (CLOSER 0) or the ')' that
 * closes a $( ), <( ) or >( ) (CLOSER ')', consumed).
 */
/* One list (the line, a $( ), a subshell's body) as parse_list() reads it. */
struct list {
	struct cmd c;
	enum pstate st;
	unsigned parens;		/* subshells opened in this list and not closed */
	size_t heredocs_before;		/* heredocs pending when the list began */
	int closer;			/* ')' for a $( ), 0 for the line */
};

/* What parse_list() does after a part: go on, stop, or (an operator) it was not one. */
enum step {
	STEP_NONE,
	STEP_ON,
	STEP_END,
};

/* The end of the input: whatever is still open cannot be read. */
static void list_eof(struct sk *p, struct list *l)
{
	if (l->closer)
		sk_stop(p, "an unterminated $( ) substitution");
	else if (l->parens)
		sk_stop(p, "an unterminated subshell");
	else
		boundary(p, &l->c, &l->st, true);
}

/* A comment: raw up to the newline (continuations do not apply). */
static void skip_comment(struct sk *p)
{
	const char *nl = memchr(p->s + p->i, '\n', p->n - p->i);

	p->i = nl ? (size_t)(nl - p->s) : p->n;
}

/* A redirection where a command may have one. */
static void list_redirect(struct sk *p, struct list *l)
{
	if (l->st == S_START)
		l->c.started = true;
	else if (l->st != S_ARGS && l->st != S_AFTER)
		sk_stop(p, "a redirection inside a compound command header");
	redirect(p);
}

/* A newline, ';', '&>', '&', '&&', '|', '||' or '|&' at CH (STEP_NONE: none of them). */
static enum step list_operator(struct sk *p, struct list *l, int ch)
{
	if (ch == '\n') {
		adv(p);
		boundary(p, &l->c, &l->st, true);
		if (p->n_heredocs) {
			if (l->heredocs_before)
				sk_stop(p, "a heredoc around a substitution");
			else
				read_heredocs(p);
		}
		return STEP_ON;
	}
	if (ch == ';') {
		if (peek2(p) == ';' || peek2(p) == '&') {
			sk_stop(p, "a case terminator");
			return STEP_END;
		}
		adv(p);
		boundary(p, &l->c, &l->st, false);
		return STEP_ON;
	}
	if (ch == '&' && peek2(p) == '>') {
		list_redirect(p, l);
		return STEP_ON;
	}
	if (ch == '&' || ch == '|') {
		int ch2 = peek2(p);

		adv(p);
		if (ch2 == ch || (ch == '|' && ch2 == '&'))
			adv(p);
		boundary(p, &l->c, &l->st, false);
		return STEP_ON;
	}
	return STEP_NONE;
}

/* '(': a subshell, an arithmetic command, or the "()" of a function definition. */
static enum step list_open(struct sk *p, struct list *l)
{
	if (l->st == S_START && !l->c.started) {
		if (peek2(p) == '(') {
			adv(p);
			adv(p);
			scan_arith(p);
			sk_refuse(p, "an arithmetic command");
			l->st = S_AFTER;
			return STEP_ON;
		}
		if (!enter(p))
			return STEP_END;
		l->parens++;
		adv(p);
		return STEP_ON;
	}
	if ((l->st == S_ARGS && l->c.n == 1 && !l->c.w[0].assign) || l->st == S_FUNC_AFTER) {
		if (!function_parens(p))
			return STEP_END;
		cmd_clear(&l->c);
		l->st = S_START;
		return STEP_ON;
	}
	sk_stop(p, "an unexpected '('");
	return STEP_END;
}

/* ')': a subshell of this list closes, or the $( ) this list reads ends. */
static enum step list_close(struct sk *p, struct list *l)
{
	boundary(p, &l->c, &l->st, false);
	if (p->stopped)
		return STEP_END;
	adv(p);
	if (l->parens) {
		l->parens--;
		p->depth--;
		l->st = S_AFTER;
		return STEP_ON;
	}
	if (l->closer != ')') {
		sk_stop(p, "an unexpected ')'");
		return STEP_END;
	}
	if (p->n_heredocs > l->heredocs_before)
		sk_stop(p, "a heredoc inside a substitution");
	return STEP_END;
}

/* A word, or the descriptor a redirection names before its operator ("2>", "{fd}>"). */
static enum step list_word(struct sk *p, struct list *l)
{
	struct sk_word w;
	int ch;

	read_word(p, &w, false);
	if (p->stopped) {
		sk_word_release(&w);
		return STEP_END;
	}
	ch = peekc(p);
	if ((ch == '<' || ch == '>') && peek2(p) != '(' && !w.quoted && !w.expanded &&
	    w.len > 0 && strspn(w.val, "0123456789") == w.len) {
		/* N>file: the digits name the descriptor */
		sk_word_release(&w);
		list_redirect(p, l);
		return STEP_ON;
	}
	if ((ch == '<' || ch == '>') && peek2(p) != '(' && !w.quoted && w.len > 2 &&
	    w.val[0] == '{' && w.val[w.len - 1] == '}') {
		/* {var}>file: bash allocates a descriptor and binds var */
		sk_word_release(&w);
		sk_refuse(p, "a redirection that binds a variable to a descriptor");
		if (l->st == S_START)
			l->c.started = true;
		redirect(p);
		return STEP_ON;
	}
	handle_word(p, &l->c, &l->st, &w);
	return STEP_ON;
}

static void parse_list(struct sk *p, int closer)
{
	struct list l = { .st = S_START, .heredocs_before = p->n_heredocs, .closer = closer };
	enum step s = STEP_ON;

	while (!p->stopped && s != STEP_END) {
		int ch;

		skip_blanks(p);
		ch = peekc(p);
		if (ch < 0) {
			list_eof(p, &l);
			break;
		}
		if (ch == '#') {
			skip_comment(p);
			continue;
		}
		if (l.st == S_DBRACKET) {
			dbracket_token(p, &l.c, &l.st);
			continue;
		}
		s = list_operator(p, &l, ch);
		if (s != STEP_NONE)
			continue;
		if (ch == '(')
			s = list_open(p, &l);
		else if (ch == ')')
			s = list_close(p, &l);
		else if ((ch == '<' || ch == '>') && peek2(p) != '(')
			list_redirect(p, &l);
		else
			s = list_word(p, &l);
	}
	while (l.parens--)
		p->depth--;
	cmd_clear(&l.c);
}

/* ---- the whole line ------------------------------------------------------------ */

/* The eight bytes at S are all ' ' to '~'. */
static inline bool printable8(const unsigned char *s)
{
	uint64_t v, lo, hi;

	memcpy(&v, s, 8);
	/* a byte below 0x20 or above 0x7e sets its top bit in LO or HI; none is above 0x7f */
	lo = v - 0x2020202020202020ULL;
	hi = v + 0x0101010101010101ULL;
	return !((v | lo | hi) & 0x8080808080808080ULL);
}

/* Valid UTF-8, no control bytes besides tab and newline. */
static const char *check_bytes(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i];
		uint32_t cp;
		size_t len;

		/* the common case: printable ASCII, eight bytes at a time */
		while (i + 8 <= n && printable8(s + i))
			i += 8;
		if (i >= n)
			break;
		c = s[i];
		if (c < 0x80) {
			if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
				return "a control character (a carriage return, for one) that the shell "
				       "and this parser may read differently";
			i++;
			continue;
		}
		len = lev_utf8_decode(s + i, n - i, &cp);
		if (len == 0)
			return "bytes that are not valid UTF-8";
		/* C1 controls, line/paragraph separators, BOM: read differently by some tools */
		if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff)
			return "a Unicode control or separator character";
		i += len;
	}
	return NULL;
}

static char *join_dir(const char *dir, const char *rel)
{
	if (!*dir)
		return xstrdup(rel);
	if (dir[strlen(dir) - 1] == '/')
		return xasprintf("%s%s", dir, rel);
	return xasprintf("%s/%s", dir, rel);
}

static bool vec_has(const struct sk_vec *v, const char *s)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], s))
			return true;
	return false;
}

/*
 * Where each write target may land: as written, and joined onto every
 * directory the line's literal cds may have reached before it.
 */
static void resolve_targets(struct sk *p, struct sk_vec *out)
{
	size_t t, k;

	for (t = 0; t < p->n_targets; t++) {
		const struct sk_target *tg = &p->targets[t];
		struct sk_vec cands = { 0 };

		if (!vec_has(out, tg->path))
			sk_vec_push_take(out, xstrdup(tg->path));
		if (tg->tilde) {
			if (p->binds_home)
				sk_unlocatable(p, "the line rebinds HOME, so '~' cannot be named");
			continue;
		}
		if (tg->path[0] == '/' || tg->n_cd == 0)
			continue;
		sk_vec_push_take(&cands, xstrdup(""));
		for (k = 0; k < tg->n_cd && !p->unlocatable; k++) {
			const struct sk_cd *cd = &p->cds[k];
			size_t j, n = cands.n;

			if (!cd->dir) {
				sk_unlocatable(p, "a relative redirect after a change of directory that "
						  "cannot be followed");
				break;
			}
			if ((cd->dir[0] == '~' && p->binds_home) || (cd->cdpath && p->binds_cdpath)) {
				sk_unlocatable(p, "a relative redirect after a change of directory the "
						  "line itself redirects (HOME or CDPATH)");
				break;
			}
			if (cd->dir[0] == '/' || cd->dir[0] == '~') {
				if (!vec_has(&cands, cd->dir))
					sk_vec_push_take(&cands, xstrdup(cd->dir));
			} else {
				for (j = 0; j < n; j++) {
					char *d = join_dir(cands.v[j], cd->dir);

					if (vec_has(&cands, d))
						free(d);
					else
						sk_vec_push_take(&cands, d);
				}
			}
			if (cands.n > SK_MAX_CWDS) {
				sk_unlocatable(p, "too many changes of directory before a relative "
						  "redirect");
				break;
			}
		}
		for (k = 1; k < cands.n && !p->unlocatable; k++) {
			char *full = join_dir(cands.v[k], tg->path);

			if (vec_has(out, full))
				free(full);
			else
				sk_vec_push_take(out, full);
		}
		sk_vec_release(&cands);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys sorted and deduplicated, in place (they stay in the arena). */
static void sort_keys(struct sk_list *keys)
{
	size_t i, j;

	if (keys->n > 1)
		qsort(keys->v, keys->n, sizeof(*keys->v), cmp_str);
	for (i = 0, j = 0; i < keys->n; i++) {
		if (j && !strcmp(keys->v[j - 1], keys->v[i]))
			continue;
		keys->v[j++] = keys->v[i];
	}
	keys->n = j;
}

/* A heap strv of the N strings V (the caller's to free). */
static char **copy_strv(char *const *v, size_t n)
{
	char **r = xreallocarray(NULL, n + 1, sizeof(*r));
	size_t i;

	for (i = 0; i < n; i++)
		r[i] = xstrdup(v[i]);
	r[n] = NULL;
	return r;
}

static void free_parser(struct sk *p)
{
	drop_heredocs(p);
	lev_arena_release(&p->arena);
}

static void finish_unreadable(const char *line, size_t len, const char *reason,
			      struct lev_shellkeys *out)
{
	out->grantable = false;
	out->reason = reason;
	out->writes = true;
	out->needs_fence = true;
	out->fence_reason = reason;
	if (line && memchr(line, '>', len)) {
		out->unlocatable_write = true;
		out->write_reason = "the line cannot be read with certainty and holds a '>'";
	}
}

/* The memory on the stack a parse starts with: most lines need no more. */
#define SK_ARENA_ROOM 4096

static void parse_traced(const char *line, struct lev_shellkeys *out, struct sk_vec *trace)
{
	_Alignas(LEV_ARENA_ALIGN) char room[SK_ARENA_ROOM];
	struct sk p = { .trace = trace };
	struct sk_vec targets = { 0 };
	const char *bad;
	size_t len, i;

	memset(out, 0, sizeof(*out));
	if (!line) {
		finish_unreadable(NULL, 0, "there is no command", out);
		return;
	}
	len = strnlen(line, LEV_SHELLKEYS_MAX_LINE + 1);
	if (len > LEV_SHELLKEYS_MAX_LINE) {
		finish_unreadable(line, len, "the line is too long to read", out);
		return;
	}
	bad = check_bytes((const unsigned char *)line, len);
	if (bad) {
		finish_unreadable(line, len, bad, out);
		return;
	}

	p.s = line;
	p.n = len;
	lev_arena_init(&p.arena, room, sizeof(room));
	/* the shared mask: no word is longer than the line */
	text_init(&p.arena, &p.mask, len + 1);
	parse_list(&p, 0);
	if (p.stopped) {
		finish_unreadable(line, len, p.stop_reason, out);
		free_parser(&p);
		return;
	}
	resolve_targets(&p, &targets);

	sort_keys(&p.keys);
	for (i = 0; i < p.keys.n && !p.ungrantable; i++) {
		const unsigned char *k;

		for (k = (const unsigned char *)p.keys.v[i]; *k; k++)
			if (*k >= 0x80) {
				sk_refuse(&p, "a key would hold non-ASCII bytes");
				break;
			}
	}
	if (!p.ungrantable && p.keys.n == 0)
		sk_refuse(&p, "the line runs nothing that can be keyed");

	out->grantable = !p.ungrantable;
	out->reason = p.ungrantable ? p.reason : NULL;
	if (out->grantable)
		out->keys = copy_strv(p.keys.v, p.keys.n);
	out->write_targets = targets.v;
	out->reads_outside = p.outside ? xstrdup(p.outside) : NULL;
	out->writes = p.writes || p.unlocatable;
	out->unlocatable_write = p.unlocatable;
	out->write_reason = p.unlocatable ? p.write_reason : NULL;
	if (p.unlocatable)
		sk_need_fence(&p, p.write_reason);
	out->needs_fence = p.fence;
	out->fence_reason = p.fence ? p.fence_reason : NULL;
	free_parser(&p);
}

void lev_shellkeys_parse(const char *line, struct lev_shellkeys *out)
{
	parse_traced(line, out, NULL);
}

char **lev_shellkeys_commands(const char *line)
{
	struct lev_shellkeys k;
	struct sk_vec trace = { 0 };

	parse_traced(line, &k, &trace);
	if (!k.grantable) {
		sk_vec_release(&trace);
		lev_shellkeys_release(&k);
		return NULL;
	}
	lev_shellkeys_release(&k);
	if (!trace.v)
		sk_vec_push_take(&trace, xstrdup(""));
	return trace.v;
}
