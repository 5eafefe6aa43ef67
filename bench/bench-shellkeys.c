/*
 * bench-shellkeys - shell-key parser throughput: lines parsed per second.
 *
 *	bench-shellkeys LINES-FILE [SECS]
 *
 * LINES-FILE holds NUL-terminated command lines (`tests/shelldiff/shelldiff.py
 * gen` writes one).  Every line is parsed once untimed (the count of
 * grantable lines is printed, so two builds can be checked for reading the
 * same input), then the whole set is parsed again and again until SECS
 * (default 2) seconds of process CPU time have passed.  Prints
 * "lines/s N grantable G of T".  bench/run-shellkeys.sh builds this file
 * against the parser of another commit too and runs both, alternating.
 * Only the public API is used, so it compiles against any version (the
 * header's path comes from SHELLKEYS_H when the tree's layout differs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* bench/run-shellkeys.sh names the header of an older tree's layout */
#ifndef SHELLKEYS_H
#define SHELLKEYS_H "liblev/policy/shellkeys.h"
#endif
#include SHELLKEYS_H

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 2.0, t0, el;
	char *data = NULL, **lines = NULL;
	size_t len = 0, cap = 0, n = 0, i, granted = 0;
	unsigned long long parsed = 0;
	FILE *f;

	if (argc < 2) {
		fprintf(stderr, "usage: bench-shellkeys LINES-FILE [SECS]\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	for (;;) {
		size_t r;

		if (len + 65536 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			data = realloc(data, cap);
			if (!data)
				return 1;
		}
		r = fread(data + len, 1, cap - len - 1, f);
		if (!r)
			break;
		len += r;
	}
	fclose(f);
	data[len] = '\0';
	for (i = 0; i < len; i += strlen(data + i) + 1) {
		lines = realloc(lines, (n + 1) * sizeof(*lines));
		if (!lines)
			return 1;
		lines[n++] = data + i;
	}
	if (!n) {
		fprintf(stderr, "no lines\n");
		return 1;
	}
	for (i = 0; i < n; i++) {
		struct lev_shellkeys k;

		lev_shellkeys_parse(lines[i], &k);
		granted += k.grantable;
		lev_shellkeys_release(&k);
	}
	t0 = cpu_now();
	do {
		for (i = 0; i < n; i++) {
			struct lev_shellkeys k;

			lev_shellkeys_parse(lines[i], &k);
			lev_shellkeys_release(&k);
		}
		parsed += n;
		el = cpu_now() - t0;
	} while (el < secs);
	printf("lines/s %.0f grantable %zu of %zu\n", (double)parsed / el, granted, n);
	free(lines);
	free(data);
	return 0;
}
