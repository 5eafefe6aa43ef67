/*
 * toml-decoder - the toml-test decoder interface for lev's TOML parser.
 *
 * Reads a TOML document on stdin and writes it to stdout as toml-test's
 * tagged JSON: tables become objects, arrays become arrays, and every other
 * value becomes {"type": "<type>", "value": "<text>"}.  Invalid input exits
 * 1 with the parser's message on stderr.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/toml.h"
#include "liblev/base/util.h"

/* The largest document read from stdin. */
#define DECODER_MAX_INPUT ((size_t)256 << 20)

static void emit_value(struct lev_buf *b, const struct lev_toml_value *v);

static void emit_table(struct lev_buf *b, const struct lev_toml_table *t)
{
	size_t i, n = lev_toml_table_len(t);

	lev_buf_addch(b, '{');
	for (i = 0; i < n; i++) {
		size_t klen;
		const char *k = lev_toml_table_key(t, i, &klen);

		if (i)
			lev_buf_addch(b, ',');
		lev_buf_add_json_str(b, k, klen);
		lev_buf_addch(b, ':');
		emit_value(b, lev_toml_table_value(t, i));
	}
	lev_buf_addch(b, '}');
}

static void emit_float(struct lev_buf *b, double d)
{
	char tmp[64];
	int prec;

	if (isnan(d)) {
		lev_buf_adds(b, "nan");
		return;
	}
	if (isinf(d)) {
		lev_buf_adds(b, d < 0 ? "-inf" : "inf");
		return;
	}
	/* the shortest form that reads back as the same double */
	for (prec = 15; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	lev_buf_adds(b, tmp);
}

static void emit_datetime(struct lev_buf *b, const struct lev_toml_value *v)
{
	const struct lev_toml_datetime *dt = &v->u.dt;

	if (v->type != LEV_TOML_TIME_LOCAL)
		lev_buf_addf(b, "%04d-%02d-%02d", dt->year, dt->month, dt->day);
	if (v->type == LEV_TOML_DATE_LOCAL)
		return;
	if (v->type != LEV_TOML_TIME_LOCAL)
		lev_buf_addch(b, 'T');
	lev_buf_addf(b, "%02d:%02d:%02d", dt->hour, dt->minute, dt->second);
	if (dt->frac_digits) {
		char frac[16];
		snprintf(frac, sizeof(frac), "%09u", (unsigned)dt->nanosecond);
		lev_buf_addf(b, ".%.*s", (int)dt->frac_digits, frac);
	}
	if (v->type != LEV_TOML_DATETIME)
		return;
	if (dt->offset_z) {
		lev_buf_addch(b, 'Z');
	} else {
		int m = dt->offset_minutes;
		lev_buf_addf(b, "%c%02d:%02d", m < 0 ? '-' : '+', abs(m) / 60, abs(m) % 60);
	}
}

static void emit_tagged(struct lev_buf *b, const char *type, const char *s, size_t len)
{
	lev_buf_adds(b, "{\"type\":\"");
	lev_buf_adds(b, type);
	lev_buf_adds(b, "\",\"value\":");
	lev_buf_add_json_str(b, s, len);
	lev_buf_addch(b, '}');
}

static void emit_value(struct lev_buf *b, const struct lev_toml_value *v)
{
	struct lev_buf tmp = LEV_BUF_INIT;
	const char *type = NULL;
	size_t i, n;

	switch (v->type) {
	case LEV_TOML_TABLE:
		emit_table(b, v->u.table);
		return;
	case LEV_TOML_ARRAY:
		n = lev_toml_array_len(v->u.array);
		lev_buf_addch(b, '[');
		for (i = 0; i < n; i++) {
			if (i)
				lev_buf_addch(b, ',');
			emit_value(b, lev_toml_array_at(v->u.array, i));
		}
		lev_buf_addch(b, ']');
		return;
	case LEV_TOML_STRING:
		emit_tagged(b, "string", v->u.str.ptr, v->u.str.len);
		return;
	case LEV_TOML_INTEGER:
		type = "integer";
		lev_buf_addf(&tmp, "%jd", (intmax_t)v->u.integer);
		break;
	case LEV_TOML_FLOAT:
		type = "float";
		emit_float(&tmp, v->u.flt);
		break;
	case LEV_TOML_BOOL:
		type = "bool";
		lev_buf_adds(&tmp, v->u.boolean ? "true" : "false");
		break;
	case LEV_TOML_DATETIME:
		type = "datetime";
		emit_datetime(&tmp, v);
		break;
	case LEV_TOML_DATETIME_LOCAL:
		type = "datetime-local";
		emit_datetime(&tmp, v);
		break;
	case LEV_TOML_DATE_LOCAL:
		type = "date-local";
		emit_datetime(&tmp, v);
		break;
	case LEV_TOML_TIME_LOCAL:
		type = "time-local";
		emit_datetime(&tmp, v);
		break;
	}
	emit_tagged(b, type, tmp.buf, tmp.len);
	lev_buf_release(&tmp);
}

int main(int argc, char **argv)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_buf out = LEV_BUF_INIT;
	_cleanup_free_ char *in = NULL;
	struct lev_toml_doc *doc = NULL;
	size_t len = 0;
	int r;

	if (argc > 1) {
		fprintf(stderr, "usage: toml-decoder < FILE.toml\n");
		return 2;
	}
	r = lev_read_fd(STDIN_FILENO, "<stdin>", DECODER_MAX_INPUT, &in, &len, &err);
	if (r < 0) {
		fprintf(stderr, "toml-decoder: error: %s\n", err.msg);
		return 1;
	}
	r = lev_toml_parse(in, len, "<stdin>", &doc, &err);
	if (r < 0) {
		fprintf(stderr, "toml-decoder: error: %s\n", err.msg);
		return 1;
	}
	emit_table(&out, lev_toml_root(doc));
	lev_buf_addch(&out, '\n');
	lev_toml_free(doc);
	r = lev_write_all(STDOUT_FILENO, out.buf, out.len);
	lev_buf_release(&out);
	if (r < 0) {
		perror("toml-decoder: error: cannot write the output");
		return 1;
	}
	return 0;
}
