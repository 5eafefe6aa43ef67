/*
 * tomlval.h - typed reads from a parsed TOML document, for the modules that
 * turn a document into a model (config, blueprint).
 *
 * Every reader checks the value's type and, for enums, its word, and on a
 * mismatch fails with LEV_EPARSE and a one-line message
 *
 *	FILE:LINE:COL: 'security.shell_env' must be one of filtered, strict,
 *	custom, inherit (got 'x')
 *
 * naming the key by its dotted path.  Strings with an embedded NUL byte are
 * refused (a C consumer would silently see a shorter string), and every
 * string is capped at LEV_TOMLVAL_STR_MAX bytes.
 *
 * Strings returned through OUT are fresh copies the caller owns; outputs are
 * written only on success.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/conf/toml.h"

#define LEV_TOMLVAL_STR_MAX ((size_t)256 << 10)
#define LEV_TOMLVAL_LIST_MAX 4096
#define LEV_TOMLVAL_WARN_MAX 200

struct lev_tomlval_ctx {
	const char *file;	/* the file name used in messages */
	char ***warnings;	/* strv that collects warnings; NULL: drop them */
};

/*
 * A printable, bounded copy of S (LEN bytes) for a message: control bytes,
 * quotes, backslashes and non-ASCII bytes are written as \xNN, and anything
 * past MAX bytes becomes "...".  The caller frees the result.
 */
char *lev_printable(const char *s, size_t len, size_t max);

/* Append "FILE:LINE: MSG" to the context's warnings (capped). */
void lev_tomlval_warn(const struct lev_tomlval_ctx *c, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Fail with "FILE:LINE:COL: MSG"; returns LEV_EPARSE. */
int lev_tomlval_fail(const struct lev_tomlval_ctx *c, unsigned line, unsigned col,
		     struct lev_err *err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* True when the I-th key of T is exactly WORD (keys may hold NUL bytes). */
bool lev_tomlval_key_is(const struct lev_toml_table *t, size_t i, const char *word);

/*
 * The I-th key of T as a C string (a printable copy if it holds odd bytes);
 * caller frees.
 */
char *lev_tomlval_key_dup(const struct lev_toml_table *t, size_t i);

int lev_tomlval_type(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		     enum lev_toml_type want, const char *path, struct lev_err *err);
int lev_tomlval_string(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		       const char *path, char **out, struct lev_err *err);
int lev_tomlval_bool(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		     const char *path, bool *out, struct lev_err *err);
/* An integer in [MIN, MAX]. */
int lev_tomlval_u64(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		    const char *path, uint64_t min, uint64_t max, uint64_t *out,
		    struct lev_err *err);
/* An array of strings (at most LEV_TOMLVAL_LIST_MAX); an empty array gives NULL. */
int lev_tomlval_strv(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		     const char *path, char ***out, struct lev_err *err);
/* "TABLE.KEY" of T's I-th key for messages ("KEY" when TABLE is ""); caller frees. */
char *lev_tomlval_key_path(const char *table, const struct lev_toml_table *t, size_t i);
/* V as a table: *out borrows V's table. */
int lev_tomlval_table(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		      const char *path, const struct lev_toml_table **out, struct lev_err *err);
/* Replace *DST (freed) with V's string / string list; *DST unchanged on error. */
int lev_tomlval_set_str(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			const char *path, char **dst, struct lev_err *err);
int lev_tomlval_set_strv(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
			 const char *path, char ***dst, struct lev_err *err);
/*
 * A string that must be one of the N words in NAMES (case-insensitive);
 * *out gets its index.
 */
int lev_tomlval_enum(const struct lev_tomlval_ctx *c, const struct lev_toml_value *v,
		     const char *path, const char *const *names, size_t n, int *out,
		     struct lev_err *err);

/*
 * Check the keys of T (named TABLE in messages, e.g. "[security]") against
 * the NULL-terminated KNOWN list.  Unknown keys become warnings
 * "FILE:LINE: unknown key 'k' in TABLE", or with UNKNOWN_IS_ERROR an error
 * "FILE:LINE:COL: unknown key 'k' in TABLE (valid: a, b, c)".
 */
int lev_tomlval_check_keys(const struct lev_tomlval_ctx *c, const struct lev_toml_table *t,
			   const char *table, const char *const *known, bool unknown_is_error,
			   struct lev_err *err);
