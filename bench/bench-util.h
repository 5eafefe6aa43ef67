/*
 * bench-util.h - the clock and the median every bench program uses.
 *
 * Wall time is liblev's own monotonic clock (lev_monotonic_ns(),
 * CLOCK_MONOTONIC), so a figure here and a time liblev measures agree;
 * CPU time is the thread's or the process's CPU clock.  bench_sort() sorts
 * a sample ascending; bench_median() sorts it and returns its middle
 * element (the upper one of an even count).
 */
#pragma once

#include <stdlib.h>
#include <time.h>

#include "liblev/base/util.h"

/* Wall time, CLOCK_MONOTONIC, in seconds / milliseconds / nanoseconds. */
static inline double bench_now(void)
{
	return (double)lev_monotonic_ns() / 1e9;
}

static inline double bench_now_ms(void)
{
	return (double)lev_monotonic_ns() / 1e6;
}

static inline double bench_now_ns(void)
{
	return (double)lev_monotonic_ns();
}

/* CPU time of CLOCK (CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID), in seconds. */
static inline double bench_cpu_s(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static inline void bench_sort(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
}

static inline double bench_median(double *v, size_t n)
{
	bench_sort(v, n);
	return v[n / 2];
}
