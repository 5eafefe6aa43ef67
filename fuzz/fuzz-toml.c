/*
 * fuzz-toml.c - lev_toml_parse() on arbitrary bytes.
 *
 * Besides "no crash, no leak, no UB", it checks invariants of a parsed
 * tree: every key is found again by lookup and maps to its own value,
 * lengths match the NUL-terminated copies, nesting stays within
 * LEV_TOML_MAX_DEPTH, positions are 1-based, and a failed parse leaves a
 * message naming "fuzz:LINE:COL".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/conf/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

static void walk_value(const struct lev_toml_value *v, unsigned depth);

static void walk_table(const struct lev_toml_table *t, unsigned depth)
{
	size_t i, n = lev_toml_table_len(t);
	unsigned line, col;

	CHECK(depth <= LEV_TOML_MAX_DEPTH);
	lev_toml_table_pos(t, &line, &col);
	CHECK(line >= 1 && col >= 1);
	for (i = 0; i < n; i++) {
		size_t klen;
		const char *k = lev_toml_table_key(t, i, &klen);
		const struct lev_toml_value *v = lev_toml_table_value(t, i);

		CHECK(k && v && k[klen] == '\0');
		CHECK(lev_toml_table_getn(t, k, klen) == v);
		if (strlen(k) == klen)
			CHECK(lev_toml_table_get(t, k) == v);
		lev_toml_table_key_pos(t, i, &line, &col);
		CHECK(line >= 1 && col >= 1);
		walk_value(v, depth);
	}
	CHECK(lev_toml_table_value(t, n) == NULL);
}

static void walk_value(const struct lev_toml_value *v, unsigned depth)
{
	size_t i, n;

	CHECK(v->line >= 1 && v->col >= 1);
	CHECK(lev_toml_type_name(v->type) != NULL);
	switch (v->type) {
	case LEV_TOML_TABLE:
		walk_table(v->u.table, depth + 1);
		break;
	case LEV_TOML_ARRAY:
		CHECK(depth + 1 <= LEV_TOML_MAX_DEPTH);
		n = lev_toml_array_len(v->u.array);
		for (i = 0; i < n; i++)
			walk_value(lev_toml_array_at(v->u.array, i), depth + 1);
		CHECK(lev_toml_array_at(v->u.array, n) == NULL);
		break;
	case LEV_TOML_STRING:
		CHECK(v->u.str.ptr[v->u.str.len] == '\0');
		break;
	case LEV_TOML_DATETIME:
	case LEV_TOML_DATETIME_LOCAL:
	case LEV_TOML_DATE_LOCAL:
	case LEV_TOML_TIME_LOCAL:
		CHECK(v->u.dt.hour >= 0 && v->u.dt.hour <= 23);
		CHECK(v->u.dt.minute >= 0 && v->u.dt.minute <= 59);
		CHECK(v->u.dt.second >= 0 && v->u.dt.second <= 60);
		CHECK(v->u.dt.nanosecond < 1000000000u && v->u.dt.frac_digits <= 9);
		if (v->type != LEV_TOML_TIME_LOCAL)
			CHECK(v->u.dt.month >= 1 && v->u.dt.month <= 12 && v->u.dt.day >= 1 &&
			      v->u.dt.day <= 31);
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_toml_doc *doc = NULL;

	if (size > LEV_TOML_MAX_FILE)
		return 0;
	if (lev_toml_parse((const char *)data, size, "fuzz", &doc, &err) < 0) {
		CHECK(doc == NULL);
		CHECK(err.code == LEV_EPARSE);
		CHECK(strncmp(err.msg, "fuzz:", 5) == 0);
		return 0;
	}
	walk_table(lev_toml_root(doc), 0);
	lev_toml_free(doc);
	return 0;
}
