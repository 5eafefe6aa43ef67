/*
 * bench-toml - parse throughput of lev's TOML parser.
 *
 * usage: bench-toml FILE [REPS]
 *
 * Reads FILE once, then parses (and frees) it REPS times, timing each run
 * in process CPU time (CLOCK_PROCESS_CPUTIME_ID: steadier than wall time on
 * a shared machine; the parser is single-threaded).  Prints one line:
 *	lev: SIZE bytes, REPS runs, best X MB/s, median Y MB/s, N values
 * N (every value and table in the tree) lets the caller check that both
 * harnesses saw the same document.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench-util.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/toml.h"
#include "liblev/base/util.h"

static size_t count_value(const struct lev_toml_value *v);

static size_t count_table(const struct lev_toml_table *t)
{
	size_t i, n = 0;

	for (i = 0; i < lev_toml_table_len(t); i++)
		n += count_value(lev_toml_table_value(t, i));
	return n;
}

static size_t count_value(const struct lev_toml_value *v)
{
	size_t i, n = 1;

	if (v->type == LEV_TOML_TABLE)
		n += count_table(v->u.table);
	else if (v->type == LEV_TOML_ARRAY)
		for (i = 0; i < lev_toml_array_len(v->u.array); i++)
			n += count_value(lev_toml_array_at(v->u.array, i));
	return n;
}

int main(int argc, char **argv)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *buf = NULL;
	_cleanup_free_ double *t = NULL;
	struct lev_toml_doc *doc = NULL;
	size_t len = 0, values;
	int reps = argc > 2 ? atoi(argv[2]) : 10, i;
	double mb;

	if (argc < 2 || reps < 1 || reps > 10000) {
		fprintf(stderr, "usage: bench-toml FILE [REPS]\n");
		return 2;
	}
	if (lev_read_file(argv[1], (size_t)1 << 30, &buf, &len, &err) < 0) {
		fprintf(stderr, "bench-toml: error: %s\n", err.msg);
		return 1;
	}
	/* one untimed run: checks the document and counts its values */
	if (lev_toml_parse(buf, len, argv[1], &doc, &err) < 0) {
		fprintf(stderr, "bench-toml: error: %s\n", err.msg);
		return 1;
	}
	values = count_table(lev_toml_root(doc));
	lev_toml_free(doc);

	t = calloc((size_t)reps, sizeof(*t));
	if (!t)
		return 1;
	for (i = 0; i < reps; i++) {
		double t0 = bench_cpu_s(CLOCK_PROCESS_CPUTIME_ID);
		if (lev_toml_parse(buf, len, argv[1], &doc, &err) < 0)
			return 1;
		lev_toml_free(doc);
		t[i] = bench_cpu_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
	}
	bench_sort(t, (size_t)reps);
	mb = (double)len / (1024.0 * 1024.0);
	printf("lev: %zu bytes, %d runs, best %.1f MB/s, median %.1f MB/s, %zu values\n", len, reps,
	       mb / t[0], mb / t[reps / 2], values);
	return 0;
}
