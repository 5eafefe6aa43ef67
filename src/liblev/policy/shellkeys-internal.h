/*
 * shellkeys-internal.h - shared between the shell-line lexer/parser
 * (shellkeys-parse.c) and the simple-command semantics (shellkeys-cmd.c).
 * Not a public API: nothing outside the shellkeys module includes it.
 *
 * Two failure levels while reading a line:
 *   sk_refuse()  the line is ungrantable, but its structure is still read
 *                with certainty, so the parse goes on to locate every
 *                write redirect (heredocs, [[ ]], function definitions ...);
 *   sk_stop()    the parser cannot be sure it reads the line as the shell
 *                will (unterminated quotes, backticks, eval, sh -c ...):
 *                parsing stops, the line counts as writing, and any '>'
 *                byte in it makes its writes unlocatable.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/arena.h"
#include "liblev/base/buf.h"

/* Nesting of $( ), ${ } and subshells. */
#define SK_MAX_DEPTH 32
/* Pending heredocs on one line. */
#define SK_MAX_HEREDOCS 16
/* Directory candidates a relative redirect may land in. */
#define SK_MAX_CWDS 16

/* A growable array of owned strings. */
struct sk_vec {
	char **v;
	size_t n, cap;
};

void sk_vec_push_take(struct sk_vec *vec, char *s);
void sk_vec_release(struct sk_vec *vec);

/*
 * Everything one parse makes and drops again (words, fields, keys before
 * they are handed out, targets, directories) lives in the parse's arena
 * (struct sk.arena) and goes with it: nothing in it is freed on its own.
 */

/* A growable array of strings in the parse's arena. */
struct sk_list {
	char **v;
	size_t n, cap;
};

void sk_list_push(struct lev_arena *a, struct sk_list *l, char *s);

/*
 * One word of a simple command, after quote removal.  MASK runs beside VAL,
 * one byte per byte of RAW (VAL before SK_MARK bytes are dropped): SK_UNQ for an unquoted character (it may still
 * be expanded: braces, globs, '~'), SK_QUO for a quoted or escaped one, and
 * SK_MARK for the place of a quote that added nothing (RAW holds 0x01 there,
 * a byte no accepted line contains): `""{a,}` keeps an empty word, `{a,}`
 * does not.  A word read from a $ expansion, $"..." or an $'...' escape
 * this parser does not decode is OPAQUE: its text is not known.
 */
#define SK_UNQ 'u'
#define SK_QUO 'q'
#define SK_MARK 'm'

struct sk_word {
	char *val;		/* in the arena; the literal text (expansions add nothing) */
	size_t len;
	char *raw;		/* in the arena: VAL with the SK_MARK bytes, RAW_LEN bytes;
				 * NULL when there are none (RAW is VAL then) */
	char *mask;		/* in the arena, RAW_LEN bytes (see above); NULL: not read by
				 * the lexer */
	size_t raw_len;
	bool opaque;		/* the text is only known when the line runs */
	bool glob;		/* a field that is a pathname pattern */
	bool from_brace;	/* a field that brace expansion produced */
	bool plain;		/* no unquoted byte brace, tilde or pattern expansion reads */
	bool quoted;		/* held quotes or backslash escapes */
	bool expanded;		/* $, globs, braces, ~user, $'..': not literal */
	bool dollar;		/* holds a $ expansion (a variable, $( ), $(( ))): any text */
	bool tilde;		/* unquoted leading "~" or "~/": the home directory */
	bool nonascii;		/* holds a byte >= 0x80 */
	bool assign;		/* NAME=... or NAME+=... with an unquoted literal NAME */
	size_t name_len;	/* with assign: the length of NAME */
	bool procsubst_only;	/* exactly one <( ) or >( ) and nothing else */
};

/* Forget W (its bytes stay in the arena until the parse ends). */
void sk_word_release(struct sk_word *w);

/* A literal change of directory (cd), in line order. */
struct sk_cd {
	char *dir;		/* in the arena: "~", "~/x", "/abs", "rel"; NULL: cannot be
				 * followed */
	bool cdpath;		/* a relative dir CDPATH could redirect */
};

/* A literal write redirect target. */
struct sk_target {
	char *path;		/* in the arena: as written, after quote removal */
	bool tilde;		/* "~" or "~/..." */
	size_t n_cd;		/* directory changes before it */
};

/* Text built in the parse's arena, NUL-terminated (LEN excludes it; CAP includes it). */
struct sk_text {
	char *buf;
	size_t len, cap;
};

struct sk {
	const char *s;
	size_t n, i;
	struct lev_arena arena;	/* this parse's memory */
	struct sk_vec *trace;	/* with lev_shellkeys_commands(): each keyed command */
	bool fence;		/* the line needs a sandbox that fences writes */
	struct sk_text mask;	/* the mask of the word being read (shared, reused) */
	const char *fence_reason;
	unsigned depth;

	struct sk_list keys;	/* in the arena; unsorted, may repeat */
	struct sk_target *targets;
	size_t n_targets, cap_targets;
	struct sk_cd *cds;
	size_t n_cds, cap_cds;
	bool binds_home, binds_cdpath;

	bool ungrantable;
	const char *reason;	/* first reason it is ungrantable */
	bool stopped;
	const char *stop_reason;

	bool writes;
	bool unlocatable;
	const char *write_reason;

	char *outside;		/* in the arena: the first path that may lie outside the workdir */

	struct {
		char *delim;	/* in the arena */
		bool strip_tabs;
		bool quoted;
	} heredocs[SK_MAX_HEREDOCS];
	size_t n_heredocs;
};

/* The line is ungrantable; parsing goes on.  REASON is static text. */
void sk_refuse(struct sk *p, const char *reason);
/* The parser cannot read the line with certainty; parsing stops. */
void sk_stop(struct sk *p, const char *reason);

/* Add "shell:" + TEXT (LEN bytes) + optional " " + ARG as a key. */
void sk_add_key(struct sk *p, const char *text, size_t len, const char *arg);
/* The line binds variable NAME (LEN bytes): adds shell:env:NAME. */
void sk_bind(struct sk *p, const char *name, size_t len);
/* A write nobody can locate (an expanded target ...). */
void sk_unlocatable(struct sk *p, const char *why);
/* Record a change of directory (DIR NULL: cannot be followed). */
void sk_add_cd(struct sk *p, const char *dir, bool cdpath);
/* Note W when, as a path, it may name something outside the working directory. */
void sk_note_outside(struct sk *p, const struct sk_word *w);

/* The line may only run inside a sandbox that fences writes (REASON static). */
void sk_need_fence(struct sk *p, const char *reason);

/*
 * Expand the word W the way bash does after quote removal (brace, tilde,
 * and the shape of a pathname pattern) into fields appended to *OUT
 * (*N used, *CAP allocated, in arena A; the fields' text too).  An opaque
 * word yields one opaque field.  A field may share W's text.  Returns
 * false when the expansion cannot be predicted (the caller marks the word
 * opaque).
 */
bool sk_expand_word(struct lev_arena *a, struct sk_word *w, struct sk_word **out, size_t *n,
		    size_t *cap);

/* True when S[0..LEN) is a shell variable name. */
bool sk_is_name(const char *s, size_t len);

/* Key the simple command W[0..N) (assignments first, then the program). */
void sk_command(struct sk *p, struct sk_word *w, size_t n);
