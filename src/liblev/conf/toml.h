/*
 * toml.h - our TOML 1.0 parser (Debian packages no C TOML library).
 *
 * lev_toml_parse() turns a buffer into a read-only document tree.  The whole
 * tree is owned by the `struct lev_toml_doc` and freed by one call to
 * lev_toml_free(); every pointer obtained from it (tables, values, keys,
 * strings) borrows from the document and dies with it.
 *
 * Every value and key remembers the line and column (1-based) where it was
 * written, so callers that validate a document can name the place of a
 * wrong type or an unknown key.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/error.h"

enum lev_toml_type {
	LEV_TOML_STRING,
	LEV_TOML_INTEGER,
	LEV_TOML_FLOAT,
	LEV_TOML_BOOL,
	LEV_TOML_DATETIME,	/* offset date-time */
	LEV_TOML_DATETIME_LOCAL,
	LEV_TOML_DATE_LOCAL,
	LEV_TOML_TIME_LOCAL,
	LEV_TOML_ARRAY,
	LEV_TOML_TABLE,
};

struct lev_toml_datetime {
	int year, month, day;		/* date part, when present */
	int hour, minute, second;	/* time part, when present */
	uint32_t nanosecond;
	unsigned frac_digits;		/* digits of fraction written (0..9) */
	bool has_offset;
	int offset_minutes;		/* with has_offset: minutes east of UTC; 'Z' is 0 */
	bool offset_z;			/* written as 'Z' or 'z' */
};

struct lev_toml_doc;
struct lev_toml_table;
struct lev_toml_array;

struct lev_toml_value {
	enum lev_toml_type type;
	unsigned line, col;
	union {
		struct {
			const char *ptr;	/* NUL-terminated; may hold NUL bytes (see len) */
			size_t len;
		} str;
		int64_t integer;
		double flt;
		bool boolean;
		struct lev_toml_datetime dt;
		const struct lev_toml_array *array;
		const struct lev_toml_table *table;
	} u;
};

/* Size limits for one document (every input is bounded). */
#define LEV_TOML_MAX_DEPTH 128

/*
 * Parse LEN bytes at BUF.  NAME (a file name, for messages) is used in
 * errors as "NAME:LINE:COL: what was expected".  On success *out owns the
 * document.  On failure returns LEV_EPARSE with the message in ERR.
 */
int lev_toml_parse(const char *buf, size_t len, const char *name, struct lev_toml_doc **out,
		   struct lev_err *err);

/* Free the document; accepts NULL; returns NULL. */
struct lev_toml_doc *lev_toml_free(struct lev_toml_doc *doc);

const struct lev_toml_table *lev_toml_root(const struct lev_toml_doc *doc);

/* Tables keep their keys in document order. */
size_t lev_toml_table_len(const struct lev_toml_table *t);
/* The I-th key (and optionally its length; keys may hold NUL) and value. */
const char *lev_toml_table_key(const struct lev_toml_table *t, size_t i, size_t *len_out);
const struct lev_toml_value *lev_toml_table_value(const struct lev_toml_table *t, size_t i);
/* Where the I-th key was first written. */
void lev_toml_table_key_pos(const struct lev_toml_table *t, size_t i, unsigned *line,
			    unsigned *col);
/* Look KEY up (NULL if absent). */
const struct lev_toml_value *lev_toml_table_get(const struct lev_toml_table *t, const char *key);
/* Look up the LEN bytes at KEY (which may hold NUL bytes); NULL if absent. */
const struct lev_toml_value *lev_toml_table_getn(const struct lev_toml_table *t, const char *key,
						  size_t len);
/* Where the table itself was defined (its header, or its first key). */
void lev_toml_table_pos(const struct lev_toml_table *t, unsigned *line, unsigned *col);

size_t lev_toml_array_len(const struct lev_toml_array *a);
const struct lev_toml_value *lev_toml_array_at(const struct lev_toml_array *a, size_t i);

/* "string", "integer", ..., for messages. */
const char *lev_toml_type_name(enum lev_toml_type t);

/* Convenience: parse the file at PATH (at most 4 MiB). */
#define LEV_TOML_MAX_FILE ((size_t)4 << 20)
int lev_toml_parse_file(const char *path, struct lev_toml_doc **out, struct lev_err *err);
