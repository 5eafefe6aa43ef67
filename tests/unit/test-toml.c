#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/base/buf.h"
#include "liblev/base/error.h"
#include "liblev/conf/toml.h"

static struct lev_toml_doc *parse_ok(const char *text)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_toml_doc *doc = NULL;
	int r = lev_toml_parse(text, strlen(text), "t.toml", &doc, &err);

	if (r != 0)
		fail_msg("unexpected parse error: %s", err.msg);
	assert_non_null(doc);
	return doc;
}

/* Parse TEXT, which must fail with exactly message WANT. */
static void parse_fails(const char *text, const char *want)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_toml_doc *doc = (struct lev_toml_doc *)&err; /* must stay untouched */
	int r = lev_toml_parse(text, strlen(text), "t.toml", &doc, &err);

	assert_int_equal(r, LEV_EPARSE);
	assert_int_equal(err.code, LEV_EPARSE);
	assert_ptr_equal(doc, (struct lev_toml_doc *)&err);
	if (strcmp(err.msg, want) != 0)
		fail_msg("for input:\n%s\nwant: %s\ngot:  %s", text, want, err.msg);
}

static const struct lev_toml_value *get(const struct lev_toml_table *t, const char *key,
					enum lev_toml_type type)
{
	const struct lev_toml_value *v = lev_toml_table_get(t, key);

	if (!v)
		fail_msg("key '%s' missing", key);
	assert_int_equal(v->type, type);
	return v;
}

static void test_scalars(void **state)
{
	struct lev_toml_doc *doc = parse_ok(
		"s = \"tab\\there \\u00e9 \\U0001F600\"\n"
		"lit = 'C:\\path'\n"
		"ml = \"\"\"\n  one \\\n    two\"\"\"\n"
		"mll = '''\nraw \\n'''\n"
		"i = -42\nhex = 0xDEAD_beef\noct = 0o755\nbin = 0b1010\n"
		"max = 9223372036854775807\nmin = -9223372036854775808\n"
		"f = 6.626e-34\nf2 = -0.0\npinf = +inf\nninf = -inf\nn = nan\n"
		"t = true\nff = false\n");
	const struct lev_toml_table *root = lev_toml_root(doc);
	const struct lev_toml_value *v;

	(void)state;
	v = get(root, "s", LEV_TOML_STRING);
	assert_string_equal(v->u.str.ptr, "tab\there \xc3\xa9 \xf0\x9f\x98\x80");
	assert_int_equal(v->u.str.len, strlen(v->u.str.ptr));
	assert_string_equal(get(root, "lit", LEV_TOML_STRING)->u.str.ptr, "C:\\path");
	assert_string_equal(get(root, "ml", LEV_TOML_STRING)->u.str.ptr, "  one two");
	assert_string_equal(get(root, "mll", LEV_TOML_STRING)->u.str.ptr, "raw \\n");
	assert_int_equal(get(root, "i", LEV_TOML_INTEGER)->u.integer, -42);
	assert_int_equal(get(root, "hex", LEV_TOML_INTEGER)->u.integer, 0xdeadbeef);
	assert_int_equal(get(root, "oct", LEV_TOML_INTEGER)->u.integer, 0755);
	assert_int_equal(get(root, "bin", LEV_TOML_INTEGER)->u.integer, 10);
	assert_true(get(root, "max", LEV_TOML_INTEGER)->u.integer == INT64_MAX);
	assert_true(get(root, "min", LEV_TOML_INTEGER)->u.integer == INT64_MIN);
	assert_true(get(root, "f", LEV_TOML_FLOAT)->u.flt == 6.626e-34);
	v = get(root, "f2", LEV_TOML_FLOAT);
	assert_true(v->u.flt == 0.0 && signbit(v->u.flt));
	assert_true(isinf(get(root, "pinf", LEV_TOML_FLOAT)->u.flt));
	assert_true(get(root, "ninf", LEV_TOML_FLOAT)->u.flt < 0);
	assert_true(isnan(get(root, "n", LEV_TOML_FLOAT)->u.flt));
	assert_true(get(root, "t", LEV_TOML_BOOL)->u.boolean);
	assert_false(get(root, "ff", LEV_TOML_BOOL)->u.boolean);
	assert_null(lev_toml_table_get(root, "nope"));
	lev_toml_free(doc);
}

static void test_datetimes(void **state)
{
	struct lev_toml_doc *doc = parse_ok(
		"odt = 1979-05-27T00:32:00.999999-07:00\n"
		"z = 1979-05-27 07:32:00z\n"
		"ldt = 2000-02-29t23:59:60.1234567891\n"
		"ld = 2024-12-31\n"
		"lt = 07:32:00\n");
	const struct lev_toml_table *root = lev_toml_root(doc);
	const struct lev_toml_datetime *dt;

	(void)state;
	dt = &get(root, "odt", LEV_TOML_DATETIME)->u.dt;
	assert_int_equal(dt->year, 1979);
	assert_int_equal(dt->month, 5);
	assert_int_equal(dt->day, 27);
	assert_int_equal(dt->hour, 0);
	assert_int_equal(dt->minute, 32);
	assert_int_equal(dt->second, 0);
	assert_int_equal(dt->nanosecond, 999999000);
	assert_int_equal(dt->frac_digits, 6);
	assert_true(dt->has_offset);
	assert_false(dt->offset_z);
	assert_int_equal(dt->offset_minutes, -7 * 60);
	dt = &get(root, "z", LEV_TOML_DATETIME)->u.dt;
	assert_true(dt->has_offset && dt->offset_z);
	assert_int_equal(dt->offset_minutes, 0);
	assert_int_equal(dt->hour, 7);
	dt = &get(root, "ldt", LEV_TOML_DATETIME_LOCAL)->u.dt;
	assert_false(dt->has_offset);
	assert_int_equal(dt->second, 60);
	/* extra precision is truncated, not rounded */
	assert_int_equal(dt->nanosecond, 123456789);
	assert_int_equal(dt->frac_digits, 9);
	dt = &get(root, "ld", LEV_TOML_DATE_LOCAL)->u.dt;
	assert_int_equal(dt->year * 10000 + dt->month * 100 + dt->day, 20241231);
	dt = &get(root, "lt", LEV_TOML_TIME_LOCAL)->u.dt;
	assert_int_equal(dt->hour * 10000 + dt->minute * 100 + dt->second, 73200);
	assert_int_equal(dt->frac_digits, 0);
	lev_toml_free(doc);

	parse_fails("d = 2023-02-29\n",
		    "t.toml:1:5: invalid date '2023-02-29': day out of range for the month");
	parse_fails("d = 1900-02-29\n",
		    "t.toml:1:5: invalid date '1900-02-29': day out of range for the month");
	parse_fails("d = 2023-04-31\n",
		    "t.toml:1:5: invalid date '2023-04-31': day out of range for the month");
	parse_fails("t = 12:00:61\n", "t.toml:1:5: invalid time '12:00:61': hour must be 00-23, "
		    "minute 00-59, second 00-60");
	parse_fails("t = 12:00\n",
		    "t.toml:1:5: invalid time: expected HH:MM:SS (seconds are required)");
	parse_fails("t = 2000-01-01T00:00:00+24:00\n",
		    "t.toml:1:24: invalid time offset '+24:00'");
}

static void test_embedded_nul(void **state)
{
	struct lev_toml_doc *doc = parse_ok("\"k\\u0000x\" = \"a\\u0000b\"\nplain = 1\n");
	const struct lev_toml_table *root = lev_toml_root(doc);
	const struct lev_toml_value *v;
	const char *k;
	size_t klen = 0;

	(void)state;
	assert_int_equal(lev_toml_table_len(root), 2);
	k = lev_toml_table_key(root, 0, &klen);
	assert_int_equal(klen, 3);
	assert_memory_equal(k, "k\0x", 4);	/* NUL-terminated too */
	/* the C-string lookup cannot see past the NUL; the counted one can */
	assert_null(lev_toml_table_get(root, "k"));
	v = lev_toml_table_getn(root, "k\0x", 3);
	assert_non_null(v);
	assert_int_equal(v->type, LEV_TOML_STRING);
	assert_int_equal(v->u.str.len, 3);
	assert_memory_equal(v->u.str.ptr, "a\0b", 4);
	lev_toml_free(doc);

	/* a raw NUL byte in the input is never allowed */
	{
		static const char raw[] = "a = \"x\0y\"\n";
		struct lev_err err = LEV_ERR_INIT;
		struct lev_toml_doc *d = NULL;
		assert_int_equal(lev_toml_parse(raw, sizeof(raw) - 1, "n.toml", &d, &err),
				 LEV_EPARSE);
		assert_string_equal(err.msg, "n.toml:1:7: control character U+0000 must be "
				    "escaped in a string");
		assert_null(d);
	}
}

static void test_order_and_big_tables(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;
	struct lev_toml_doc *doc;
	const struct lev_toml_table *root, *t;
	char key[32];
	size_t i, n = 5000;

	(void)state;
	/* descending names: document order must not be sorted order */
	for (i = 0; i < n; i++)
		lev_buf_addf(&b, "k%05zu = %zu\n", n - i, i);
	lev_buf_adds(&b, "[t]\nz = 1\ny = 2\na = 3\n");
	doc = parse_ok(b.buf);
	root = lev_toml_root(doc);
	assert_int_equal(lev_toml_table_len(root), n + 1);
	for (i = 0; i < n; i++) {
		const struct lev_toml_value *v;
		snprintf(key, sizeof(key), "k%05zu", n - i);
		assert_string_equal(lev_toml_table_key(root, i, NULL), key);
		v = lev_toml_table_get(root, key);
		assert_non_null(v);
		assert_int_equal(v->u.integer, (int64_t)i);
		assert_ptr_equal(v, lev_toml_table_value(root, i));
	}
	assert_null(lev_toml_table_get(root, "k00000"));
	assert_null(lev_toml_table_key(root, n + 1, NULL));
	assert_null(lev_toml_table_value(root, n + 1));
	t = get(root, "t", LEV_TOML_TABLE)->u.table;
	assert_string_equal(lev_toml_table_key(t, 0, NULL), "z");
	assert_string_equal(lev_toml_table_key(t, 1, NULL), "y");
	assert_string_equal(lev_toml_table_key(t, 2, NULL), "a");
	lev_toml_free(doc);

	/* a duplicate at the end of a big (hash-indexed) table is found */
	lev_buf_reset(&b);
	for (i = 0; i < n; i++)
		lev_buf_addf(&b, "k%zu = 1\n", i);
	lev_buf_adds(&b, "k1234 = 2\n");
	parse_fails(b.buf, "t.toml:5001:1: duplicate key 'k1234' (first defined at line 1235, "
		    "column 1)");
	lev_buf_release(&b);
}

static void assert_pos(unsigned line, unsigned col, unsigned want_line, unsigned want_col)
{
	if (line != want_line || col != want_col)
		fail_msg("position %u:%u, want %u:%u", line, col, want_line, want_col);
}

static void assert_key_pos(const struct lev_toml_table *t, const char *key, unsigned want_line,
			   unsigned want_col)
{
	size_t i, n = lev_toml_table_len(t);

	for (i = 0; i < n; i++) {
		if (strcmp(lev_toml_table_key(t, i, NULL), key) == 0) {
			unsigned line, col;
			lev_toml_table_key_pos(t, i, &line, &col);
			assert_pos(line, col, want_line, want_col);
			return;
		}
	}
	fail_msg("key '%s' missing", key);
}

static void test_positions(void **state)
{
	struct lev_toml_doc *doc = parse_ok(
		"# comment\n"					/* 1 */
		"name = \"x\"\n"				/* 2 */
		"  \"\xc3\xa9\" = \"\xc3\xa9\"  # columns count characters\n" /* 3 */
		"a.b.c = 1\n"					/* 4 */
		"\n"						/* 5 */
		"[srv]\n"					/* 6 */
		"  port =   8080\n"				/* 7 */
		"  inl = { x = 1, y = [1, 2] }\n"		/* 8 */
		"[x.y.z]\r\n"					/* 9 */
		"[ x . y ]\r\n"					/* 10 */
		"w = 0\n"					/* 11 */
		"[[arr]]\n"					/* 12 */
		"[[arr]]\n"					/* 13 */
		"q = '''\n"					/* 14 */
		"multi\n"					/* 15 */
		"line'''\n"					/* 16 */
		"after = 1\n");					/* 17 */
	const struct lev_toml_table *root = lev_toml_root(doc), *t;
	const struct lev_toml_value *v;
	unsigned line, col;

	(void)state;
	lev_toml_table_pos(root, &line, &col);
	assert_pos(line, col, 1, 1);
	assert_key_pos(root, "name", 2, 1);
	v = get(root, "name", LEV_TOML_STRING);
	assert_pos(v->line, v->col, 2, 8);
	assert_key_pos(root, "\xc3\xa9", 3, 3);
	v = get(root, "\xc3\xa9", LEV_TOML_STRING);
	assert_pos(v->line, v->col, 3, 9);

	/* dotted keys: each part where written; the tables where first named */
	assert_key_pos(root, "a", 4, 1);
	t = get(root, "a", LEV_TOML_TABLE)->u.table;
	lev_toml_table_pos(t, &line, &col);
	assert_pos(line, col, 4, 1);
	assert_key_pos(t, "b", 4, 3);
	t = get(t, "b", LEV_TOML_TABLE)->u.table;
	assert_key_pos(t, "c", 4, 5);
	v = get(t, "c", LEV_TOML_INTEGER);
	assert_pos(v->line, v->col, 4, 9);

	/* a [header] table: at its header */
	v = get(root, "srv", LEV_TOML_TABLE);
	assert_pos(v->line, v->col, 6, 1);
	t = v->u.table;
	lev_toml_table_pos(t, &line, &col);
	assert_pos(line, col, 6, 1);
	assert_key_pos(t, "port", 7, 3);
	v = get(t, "port", LEV_TOML_INTEGER);
	assert_pos(v->line, v->col, 7, 12);
	v = get(t, "inl", LEV_TOML_TABLE);
	assert_pos(v->line, v->col, 8, 9);
	lev_toml_table_pos(v->u.table, &line, &col);
	assert_pos(line, col, 8, 9);
	assert_key_pos(v->u.table, "y", 8, 18);
	v = get(v->u.table, "y", LEV_TOML_ARRAY);
	assert_pos(v->line, v->col, 8, 22);
	assert_int_equal(lev_toml_array_len(v->u.array), 2);
	assert_pos(lev_toml_array_at(v->u.array, 1)->line, lev_toml_array_at(v->u.array, 1)->col,
		   8, 26);
	assert_null(lev_toml_array_at(v->u.array, 2));

	/* an implicit table takes the position of its later [header] (CRLF lines) */
	t = get(root, "x", LEV_TOML_TABLE)->u.table;
	lev_toml_table_pos(t, &line, &col);
	assert_pos(line, col, 9, 2);
	v = get(t, "y", LEV_TOML_TABLE);
	assert_pos(v->line, v->col, 10, 1);
	lev_toml_table_pos(v->u.table, &line, &col);
	assert_pos(line, col, 10, 1);
	assert_key_pos(v->u.table, "w", 11, 1);

	/* arrays of tables: each element at its header */
	v = get(root, "arr", LEV_TOML_ARRAY);
	assert_int_equal(lev_toml_array_len(v->u.array), 2);
	t = lev_toml_array_at(v->u.array, 1)->u.table;
	lev_toml_table_pos(t, &line, &col);
	assert_pos(line, col, 13, 1);
	v = get(t, "q", LEV_TOML_STRING);
	assert_string_equal(v->u.str.ptr, "multi\nline");
	assert_pos(v->line, v->col, 14, 5);
	/* lines keep counting after a multi-line string */
	assert_key_pos(t, "after", 17, 1);
	lev_toml_free(doc);
}

static void test_error_messages(void **state)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "a = \n", "t.toml:1:5: expected a value, found end of line" },
		{ "a = b\n", "t.toml:1:5: expected a value, found 'b' (strings must be quoted)" },
		{ "a 1\n", "t.toml:1:3: expected '=' after key 'a', found '1'" },
		{ "x = 1\n\n  = 2\n",
		  "t.toml:3:3: expected a key (bare, \"quoted\" or 'literal'), found '='" },
		{ "a = 1 2\n", "t.toml:1:7: expected a new line or a comment after the value, "
		  "found '2'" },
		{ "[t] x = 1\n", "t.toml:1:5: expected a new line or a comment after the table "
		  "header, found 'x'" },
		{ "[t\n", "t.toml:1:3: expected ']' to close the table header, found end of line" },
		{ "[[t]\n", "t.toml:1:5: expected a second ']' to close the array of tables "
		  "header, found end of line" },
		{ "[[t\n", "t.toml:1:4: expected ']]' to close the array of tables header, found "
		  "end of line" },
		{ "a = [1, 2\n", "t.toml:2:1: expected ',' or ']' in array, found end of input" },
		{ "a = {x = 1\n", "t.toml:1:11: an inline table must be on one line (expected ',' "
		  "or '}')" },
		{ "a = {x = 1,}\n", "t.toml:1:12: a trailing comma is not allowed in an inline "
		  "table" },
		{ "s = \"abc\n", "t.toml:1:5: unterminated string: expected the closing '\"' "
		  "before the end of the line" },
		{ "s = \"\"\"abc", "t.toml:1:5: unterminated multi-line string: expected the "
		  "closing '\"\"\"' before the end of the input" },
		{ "s = \"\\x41\"\n", "t.toml:1:6: invalid escape sequence: expected one of \\b \\t "
		  "\\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX after '\\', found 'x'" },
		{ "s = \"\\ud800\"\n", "t.toml:1:6: '\\ud800' is not a Unicode scalar value" },
		{ "s = \"\xc3\xa9\xff\"\n", "t.toml:1:7: invalid UTF-8 in string" },
		{ "s = \"\xed\xa0\x80\"\n", "t.toml:1:6: invalid UTF-8 in string" },
		{ "s = \"\xc0\xaf\"\n", "t.toml:1:6: invalid UTF-8 in string" },
		{ "# \xf4\x90\x80\x80\n", "t.toml:1:3: invalid UTF-8 in comment" },
		{ "# \x7f\n", "t.toml:1:3: control character U+007F is not allowed in a comment" },
		{ "a = 1\r", "t.toml:1:6: a carriage return must be followed by a line feed" },
		{ "i = 9223372036854775808\n",
		  "t.toml:1:5: integer '9223372036854775808' does not fit in 64 bits" },
		{ "i = -9223372036854775809\n",
		  "t.toml:1:5: integer '-9223372036854775809' does not fit in 64 bits" },
		{ "i = 0x1_0000_0000_0000_0000\n",
		  "t.toml:1:5: integer '0x1_0000_0000_0000_0000' does not fit in 64 bits" },
		{ "i = 012\n", "t.toml:1:5: leading zeros are not allowed in a number" },
		{ "i = 1__2\n", "t.toml:1:6: an underscore in a number must be between two "
		  "digits" },
		{ "i = +0x1\n", "t.toml:1:5: a sign is not allowed on hexadecimal, octal or binary "
		  "integers" },
		{ "i = 0b102\n", "t.toml:1:5: invalid number '0b102'" },
		{ "f = 1.\n", "t.toml:1:7: expected a digit after the decimal point, found end "
		  "of line" },
		{ "f = 1e\n", "t.toml:1:7: expected a digit in the exponent, found end of line" },
		{ "f = 1e400\n", "t.toml:1:5: float '1e400' is out of range" },
		{ "f = infinity\n", "t.toml:1:5: invalid number 'infinity'" },
		{ "a = 1\na = 2\n", "t.toml:2:1: duplicate key 'a' (first defined at line 1, "
		  "column 1)" },
		{ "a.b = 1\n\"a\".'b' = 2\n", "t.toml:2:5: duplicate key 'a.b' (first defined at "
		  "line 1, column 3)" },
		{ "\"a b\" = 1\n\"a b\" = 2\n", "t.toml:2:1: duplicate key '\"a b\"' (first "
		  "defined at line 1, column 1)" },
		{ "[a]\n[a]\n", "t.toml:2:1: table 'a' is defined twice (first at line 1, "
		  "column 1)" },
		{ "[a.b]\n[a]\n[a]\n", "t.toml:3:1: table 'a' is defined twice (first at line 2, "
		  "column 1)" },
		{ "a.b = 1\n[a]\n", "t.toml:2:1: cannot define table 'a': it was already defined "
		  "by dotted keys (at line 1, column 1)" },
		{ "[a]\nb.c = 1\n[a.b]\n", "t.toml:3:1: cannot define table 'a.b': it was "
		  "already defined by dotted keys (at line 2, column 1)" },
		{ "a = {}\n[a]\n", "t.toml:2:2: cannot extend 'a': it is an inline table (at line "
		  "1, column 5), which is closed once written" },
		{ "a = {b = 1}\na.c = 2\n", "t.toml:2:1: cannot add keys to table 'a' with "
		  "dotted keys: it is an inline table, which cannot be extended (at line 1, "
		  "column 5)" },
		{ "a = {b = {c = 1}, b.d = 2}\n", "t.toml:1:19: cannot add keys to table 'b' with "
		  "dotted keys: it is an inline table, which cannot be extended (at line 1, "
		  "column 10)" },
		{ "[a.b.c]\n[a]\nb.c.d = 1\n", "t.toml:3:1: cannot add keys to table 'b' with "
		  "dotted keys: it is defined by a [table] header (at line 1, column 4)" },
		{ "a = 1\n[a.b]\n", "t.toml:2:2: cannot use 'a' as a table: it is already an "
		  "integer (at line 1, column 1)" },
		{ "a = [1]\n[[a]]\n", "t.toml:2:3: cannot use 'a' as a table: it is already an "
		  "array (at line 1, column 1)" },
		{ "a = []\n[a.b]\n", "t.toml:2:2: cannot use 'a' as a table: it is already an "
		  "array (at line 1, column 1)" },
		{ "[[a]]\n[a]\n", "t.toml:2:1: cannot define table 'a': it is already an array of "
		  "tables (at line 1, column 1)" },
		{ "[a]\n[[a]]\n", "t.toml:2:1: cannot define 'a' as an array of tables: it is "
		  "already a table (at line 1, column 1)" },
		{ "[[a.b]]\n[a]\nb.c = 1\n", "t.toml:3:1: cannot use 'b' as a table: it is "
		  "already an array of tables (at line 1, column 5)" },
		{ "k = \"\"\"x\"\"\"\"\"\"\n", "t.toml:1:14: too many quotes at the end of a "
		  "multi-line string" },
		{ "\"\"\"k\"\"\" = 1\n", "t.toml:1:1: a multi-line string cannot be a key" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		parse_fails(cases[i].text, cases[i].msg);
}

static void test_valid_redefinitions(void **state)
{
	/* what TOML 1.0 allows: defining an implicit table once, sub-tables of
	 * dotted tables, arrays of tables with sub-tables, dotted keys inside
	 * one inline table */
	struct lev_toml_doc *doc = parse_ok(
		"[x.y.z]\n[x]\n[x.y]\n"
		"[fruit]\napple.color = 'red'\napple.taste.sweet = true\n"
		"[fruit.apple.texture]\nsmooth = true\n"
		"[[arr]]\n[arr.sub]\nv = 1\n[[arr]]\n[arr.sub]\nv = 2\n"
		"[[a.b]]\n[a]\nc = 1\n"
		"[t]\ni = { p.q = 1, p.r = 2 }\n");
	const struct lev_toml_table *root = lev_toml_root(doc), *t;
	const struct lev_toml_value *v;

	(void)state;
	t = get(get(root, "fruit", LEV_TOML_TABLE)->u.table, "apple", LEV_TOML_TABLE)->u.table;
	assert_int_equal(lev_toml_table_len(t), 3);
	assert_true(get(get(t, "texture", LEV_TOML_TABLE)->u.table, "smooth",
			LEV_TOML_BOOL)->u.boolean);
	v = get(root, "arr", LEV_TOML_ARRAY);
	assert_int_equal(lev_toml_array_len(v->u.array), 2);
	t = lev_toml_array_at(v->u.array, 1)->u.table;
	assert_int_equal(get(get(t, "sub", LEV_TOML_TABLE)->u.table, "v",
			     LEV_TOML_INTEGER)->u.integer, 2);
	t = get(get(root, "t", LEV_TOML_TABLE)->u.table, "i", LEV_TOML_TABLE)->u.table;
	assert_int_equal(lev_toml_table_len(get(t, "p", LEV_TOML_TABLE)->u.table), 2);
	lev_toml_free(doc);
}

/* N copies of A, then MID, then M copies of B (caller frees). */
static char *repeat(const char *a, size_t n, const char *mid, const char *b, size_t m)
{
	struct lev_buf buf = LEV_BUF_INIT;
	size_t i;

	for (i = 0; i < n; i++)
		lev_buf_adds(&buf, a);
	lev_buf_adds(&buf, mid);
	for (i = 0; i < m; i++)
		lev_buf_adds(&buf, b);
	return lev_buf_detach(&buf, NULL);
}

static void assert_too_deep(const char *text)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_toml_doc *doc = NULL;

	assert_int_equal(lev_toml_parse(text, strlen(text), "t.toml", &doc, &err), LEV_EPARSE);
	assert_null(doc);
	if (!strstr(err.msg, "nesting too deep (the limit is 128)") &&
	    !strstr(err.msg, "too many dotted key parts (the limit is 128)"))
		fail_msg("unexpected error: %s", err.msg);
}

static void test_depth_limit(void **state)
{
	struct lev_toml_doc *doc;
	const struct lev_toml_value *v;
	char *s, *t, want[128];
	int depth;

	(void)state;
	/* arrays: exactly the limit is fine */
	s = repeat("[", LEV_TOML_MAX_DEPTH, "", "]", LEV_TOML_MAX_DEPTH);
	t = repeat("a = ", 1, s, "\n", 1);
	doc = parse_ok(t);
	v = lev_toml_table_get(lev_toml_root(doc), "a");
	for (depth = 0; v && v->type == LEV_TOML_ARRAY; depth++)
		v = lev_toml_array_len(v->u.array) ? lev_toml_array_at(v->u.array, 0) : NULL;
	assert_int_equal(depth, LEV_TOML_MAX_DEPTH);
	lev_toml_free(doc);
	free(t);
	free(s);

	/* one more is refused, at the bracket that goes too deep */
	s = repeat("a = ", 1, "", "[", LEV_TOML_MAX_DEPTH + 1);
	snprintf(want, sizeof(want), "t.toml:1:%d: nesting too deep (the limit is %d)",
		 4 + LEV_TOML_MAX_DEPTH + 1, LEV_TOML_MAX_DEPTH);
	parse_fails(s, want);
	free(s);

	/* hostile depth does not recurse deeply: a million brackets */
	s = repeat("a = ", 1, "", "[", 1000000);
	assert_too_deep(s);
	free(s);

	/* inline tables */
	s = repeat("{a=", LEV_TOML_MAX_DEPTH + 1, "1", "}", LEV_TOML_MAX_DEPTH + 1);
	t = repeat("x = ", 1, s, "", 0);
	assert_too_deep(t);
	free(t);
	free(s);

	/* dotted keys and headers count too */
	s = repeat("a.", LEV_TOML_MAX_DEPTH, "a", "", 0);
	t = repeat("", 0, s, " = 1", 1);
	assert_too_deep(t);
	free(t);
	t = repeat("[", 1, s, "]", 1);
	assert_too_deep(t);
	free(t);
	free(s);
	s = repeat("[[a]]\n[", 1, "a", ".a", LEV_TOML_MAX_DEPTH - 1);
	t = repeat("", 0, s, "]", 1);
	assert_too_deep(t);	/* an array of tables counts twice (array + table) */
	free(t);
	free(s);

	/* a header 100 deep plus a value 100 deep exceed the limit together */
	s = repeat("a.", 99, "a", "", 0);
	{
		char *arr = repeat("[", 100, "", "]", 100);
		struct lev_buf b = LEV_BUF_INIT;
		lev_buf_addf(&b, "[%s]\nv = %s\n", s, arr);
		snprintf(want, sizeof(want), "t.toml:2:%d: nesting too deep (the limit is 128)",
			 4 + 29);
		parse_fails(b.buf, want);
		lev_buf_release(&b);
		free(arr);
	}
	free(s);
}

static void test_misc_api(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_toml_doc *doc = NULL;
	char path[] = "/tmp/test-toml-XXXXXX";
	int fd;

	(void)state;
	assert_null(lev_toml_free(NULL));
	assert_string_equal(lev_toml_type_name(LEV_TOML_STRING), "string");
	assert_string_equal(lev_toml_type_name(LEV_TOML_DATETIME), "offset date-time");
	assert_string_equal(lev_toml_type_name(LEV_TOML_TABLE), "table");

	/* an empty document, and one with only a BOM and comments */
	doc = parse_ok("");
	assert_int_equal(lev_toml_table_len(lev_toml_root(doc)), 0);
	lev_toml_free(doc);
	doc = parse_ok("\xef\xbb\xbf# c\n\n");
	assert_int_equal(lev_toml_table_len(lev_toml_root(doc)), 0);
	lev_toml_free(doc);
	/* a BOM does not shift the columns */
	parse_fails("\xef\xbb\xbf" "a = ?\n", "t.toml:1:5: expected a value, found '?'");

	/* no name: "<input>" */
	assert_int_equal(lev_toml_parse("x", 1, NULL, &doc, &err), LEV_EPARSE);
	assert_string_equal(err.msg, "<input>:1:2: expected '=' after key 'x', found end of input");

	/* a buffer that is not NUL-terminated is read only up to LEN */
	assert_int_equal(lev_toml_parse("a = 12345", 5, "n", &doc, &err), 0);
	assert_int_equal(lev_toml_table_get(lev_toml_root(doc), "a")->u.integer, 1);
	lev_toml_free(doc);

	/* files: errors name the path */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "[s]\nk = 'v'\nbad\n", 16), 16);
	close(fd);
	assert_int_equal(lev_toml_parse_file(path, &doc, &err), LEV_EPARSE);
	assert_int_equal(strncmp(err.msg, path, strlen(path)), 0);
	assert_string_equal(err.msg + strlen(path),
			    ":3:4: expected '=' after key 'bad', found end of line");
	unlink(path);
	assert_true(lev_toml_parse_file(path, &doc, &err) < 0);
	assert_int_equal(err.code, -ENOENT);
}

static void test_file_size_limit(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_toml_doc *doc = NULL;
	char path[] = "/tmp/test-toml-big-XXXXXX";
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)LEV_TOML_MAX_FILE + 1), 0);
	close(fd);
	assert_int_equal(lev_toml_parse_file(path, &doc, &err), -EFBIG);
	assert_null(doc);
	unlink(path);
}

static void test_growth_paths(void **state)
{
	struct lev_buf b = LEV_BUF_INIT;
	const struct lev_toml_table *root, *t;
	const struct lev_toml_value *v;
	struct lev_toml_doc *doc;
	char key[64];
	size_t i;

	(void)state;
	/* a long array of tables: every element kept, in order, with sub-tables */
	for (i = 0; i < 300; i++)
		lev_buf_addf(&b, "[[srv]]\nid = %zu\n[srv.sub]\nx = %zu\n", i, i * 2);
	doc = parse_ok(b.buf);
	v = get(lev_toml_root(doc), "srv", LEV_TOML_ARRAY);
	assert_int_equal(lev_toml_array_len(v->u.array), 300);
	for (i = 0; i < 300; i++) {
		t = lev_toml_array_at(v->u.array, i)->u.table;
		assert_int_equal(get(t, "id", LEV_TOML_INTEGER)->u.integer, (int64_t)i);
		t = get(t, "sub", LEV_TOML_TABLE)->u.table;
		assert_int_equal(get(t, "x", LEV_TOML_INTEGER)->u.integer, (int64_t)(i * 2));
	}
	lev_toml_free(doc);

	/* long keys in a hash-indexed table (and a duplicate among them) */
	lev_buf_reset(&b);
	for (i = 0; i < 100; i++)
		lev_buf_addf(&b, "a_rather_long_key_name_number_%03zu = %zu\n", i, i);
	doc = parse_ok(b.buf);
	root = lev_toml_root(doc);
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "a_rather_long_key_name_number_%03zu", i);
		assert_int_equal(get(root, key, LEV_TOML_INTEGER)->u.integer, (int64_t)i);
	}
	assert_null(lev_toml_table_get(root, "a_rather_long_key_name_number_100"));
	assert_null(lev_toml_table_get(root, "a_rather_long_key_name_number_00"));
	lev_toml_free(doc);
	lev_buf_adds(&b, "a_rather_long_key_name_number_042 = 0\n");
	parse_fails(b.buf, "t.toml:101:1: duplicate key 'a_rather_long_key_name_number_042' (first "
		    "defined at line 43, column 1)");

	/* an implicit table with many sub-tables, defined afterwards */
	lev_buf_reset(&b);
	for (i = 0; i < 50; i++)
		lev_buf_addf(&b, "[top.k%zu]\n", i);
	lev_buf_adds(&b, "[top]\nlast = 1\n[top.k50]\n");
	doc = parse_ok(b.buf);
	t = get(lev_toml_root(doc), "top", LEV_TOML_TABLE)->u.table;
	assert_int_equal(lev_toml_table_len(t), 52);
	assert_string_equal(lev_toml_table_key(t, 0, NULL), "k0");
	assert_string_equal(lev_toml_table_key(t, 50, NULL), "last");
	assert_string_equal(lev_toml_table_key(t, 51, NULL), "k50");
	get(t, "k49", LEV_TOML_TABLE);
	lev_toml_free(doc);
	lev_buf_release(&b);
}

static void test_messages_quote_keys(void **state)
{
	char *long_key, *text, want[128];

	(void)state;
	/* odd keys are quoted and escaped in messages */
	parse_fails("\"a\\u0001\\\"b\" = 1\n\"a\\u0001\\\"b\" = 2\n",
		    "t.toml:2:1: duplicate key '\"a\\u0001\\\"b\"' (first defined at line 1, "
		    "column 1)");
	parse_fails("\"\" = 1\n'' = 2\n",
		    "t.toml:2:1: duplicate key '\"\"' (first defined at line 1, column 1)");
	/* a very long key is shortened */
	long_key = repeat("k", 300, "", "", 0);
	{
		struct lev_buf b = LEV_BUF_INIT;
		struct lev_err err = LEV_ERR_INIT;
		struct lev_toml_doc *doc = NULL;
		lev_buf_addf(&b, "%s = 1\n%s = 2\n", long_key, long_key);
		assert_int_equal(lev_toml_parse(b.buf, b.len, "t.toml", &doc, &err), LEV_EPARSE);
		assert_non_null(strstr(err.msg, "t.toml:2:1: duplicate key 'kkkk"));
		assert_non_null(strstr(err.msg, "k...' (first defined at line 1, column 1)"));
		lev_buf_release(&b);
	}
	free(long_key);
	/* found: a quote */
	parse_fails("a = 1'\n", "t.toml:1:6: expected a new line or a comment after the value, "
		    "found \"'\"");
	/* UTF-8: U+0800 is fine, its overlong form is not */
	parse_fails("a = \"\xe0\xa0\x80\"\nb = \"\xe0\x80\x80\"\n",
		    "t.toml:2:6: invalid UTF-8 in string");
	/* header depth and dotted depth add up */
	text = repeat("a.", 99, "a", "", 0);
	{
		char *dotted = repeat("b.", 29, "b", "", 0);
		struct lev_buf b = LEV_BUF_INIT;
		lev_buf_addf(&b, "[%s]\n%s = 1\n", text, dotted);
		snprintf(want, sizeof(want), "t.toml:2:1: nesting too deep (the limit is %d)",
			 LEV_TOML_MAX_DEPTH);
		parse_fails(b.buf, want);
		lev_buf_release(&b);
		free(dotted);
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_datetimes),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_order_and_big_tables),
		cmocka_unit_test(test_positions),
		cmocka_unit_test(test_error_messages),
		cmocka_unit_test(test_valid_redefinitions),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_misc_api),
		cmocka_unit_test(test_file_size_limit),
		cmocka_unit_test(test_growth_paths),
		cmocka_unit_test(test_messages_quote_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
