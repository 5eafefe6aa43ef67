/*
 * bench-paths - the cost of the path gates, each beside a baseline measured
 * in the same run.
 *
 *  (b) one [read_paths] decision (lev_readpath_policy_decide) on an
 *      already-resolved real path against 1,000 grants (a third exact, a
 *      third glob, a third regex, all under the same home as the path):
 *      when none grants it and when only the last one does; and a worst
 *      case where all 1,000 share the path's prefix and must each be tried.
 *      Baseline: 1,000 strcmp()s.
 *  (c) the full confinement check read_file makes before reading
 *      (lev_fs_open_read: argument checks, openat2 beneath the workdir fd or
 *      the walk, the file type check) vs a bare openat() of the same file;
 *      and the same for a granted file outside the workdir (O_PATH open, real
 *      path read back and verified, decision, reopen) vs a bare openat().
 *
 * Every figure is the median over many batches, in ns per operation.
 * usage: bench-paths [BATCHES]
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench-util.h"
#include "liblev/conf/readpaths.h"
#include "liblev/base/strv.h"
#include "liblev/tools/tools-fs.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define NGRANTS 1000

static volatile int sink;

typedef void (*op_fn)(void *arg);

/* Median ns per call of FN over BATCHES batches of PER calls. */
static double measure(op_fn fn, void *arg, int batches, int per)
{
	double *t = xcalloc((size_t)batches, sizeof(*t)), med;
	int b, i;

	for (i = 0; i < per * 4; i++)	/* warm up */
		fn(arg);
	for (b = 0; b < batches; b++) {
		double t0 = bench_now_ns();
		for (i = 0; i < per; i++)
			fn(arg);
		t[b] = (bench_now_ns() - t0) / per;
	}
	med = bench_median(t, (size_t)batches);
	free(t);
	return med;
}

/*
 * Paired: batches of A and of B alternate, so a noisy neighbour slows both
 * alike.  Returns the medians of each and the median of the per-pair ratio
 * A/B.
 */
static void measure_pair(op_fn a, void *aa, op_fn b, void *ba, int batches, int per,
			 double *ma, double *mb, double *ratio)
{
	double *ta = xcalloc((size_t)batches, sizeof(double));
	double *tb = xcalloc((size_t)batches, sizeof(double));
	double *tr = xcalloc((size_t)batches, sizeof(double));
	int k, i;

	for (i = 0; i < per * 4; i++) {
		a(aa);
		b(ba);
	}
	for (k = 0; k < batches; k++) {
		double t0 = bench_now_ns();
		for (i = 0; i < per; i++)
			a(aa);
		ta[k] = (bench_now_ns() - t0) / per;
		t0 = bench_now_ns();
		for (i = 0; i < per; i++)
			b(ba);
		tb[k] = (bench_now_ns() - t0) / per;
		tr[k] = ta[k] / tb[k];
	}
	bench_sort(ta, (size_t)batches);
	bench_sort(tb, (size_t)batches);
	bench_sort(tr, (size_t)batches);
	*ma = ta[batches / 2];
	*mb = tb[batches / 2];
	*ratio = tr[batches / 2];
	free(ta);
	free(tb);
	free(tr);
}

/* ---- (b) ---------------------------------------------------------------- */

struct decide_arg {
	struct lev_readpath_policy pol;
	const char *path;
	int want;
};

static void op_decide(void *arg)
{
	struct decide_arg *a = arg;
	int d = (int)lev_readpath_policy_decide(&a->pol, a->path);

	if (d != a->want)
		abort();
	sink += d;
}

struct strcmp_arg {
	char **v;
	const char *path;
};

static void op_strcmp(void *arg)
{
	struct strcmp_arg *a = arg;
	int i, n = 0;

	for (i = 0; i < NGRANTS; i++)
		n += strcmp(a->v[i], a->path) == 0;
	sink += n;
}

/*
 * 1,000 grants in the shape users write them: all under the same home
 * directory as the path being decided, a third exact directories (they
 * exist, as granted directories do), a third globs, a third regexes.
 * LAST, when given, replaces the last one.
 */
static char **make_grants(const char *home, const char *last)
{
	char **g = NULL;
	int i;

	for (i = 0; i < NGRANTS; i++) {
		if (i == NGRANTS - 1 && last) {
			g = lev_strv_push(g, last);
		} else if (i % 3 == 0) {
			char *d = xasprintf("%s/exact%03d", home, i);
			if (lev_mkdir_p(d, 0755, NULL) < 0)
				abort();
			g = lev_strv_push_take(g, d);
		} else if (i % 3 == 1) {
			g = lev_strv_push_take(g, xasprintf("glob:%s/proj%03d/**/*.md", home, i));
		} else {
			g = lev_strv_push_take(g, xasprintf("regex:%s/archive%03d/[0-9]{4}/.*\\.log",
							    home, i));
		}
	}
	return g;
}

/* 1,000 globs that all share the path's literal prefix: each one is tried. */
static char **make_adversarial(const char *home)
{
	char **g = NULL;
	int i;

	for (i = 0; i < NGRANTS; i++)
		g = lev_strv_push_take(g, xasprintf("glob:%s/**/name%03d.md", home, i));
	return g;
}

static void bench_b(const char *tmp, int batches)
{
	char *home = xasprintf("%s/home/user", tmp);
	char *path = xasprintf("%s/projects/lev/docs/design/notes.md", home);
	char *decl_e = xasprintf("glob:%s/projects/**", home);
	char *last = xasprintf("glob:%s/projects/lev/**/*.md", home);
	char *decl[] = { decl_e, NULL };
	char **g1 = make_grants(home, NULL), **g2 = make_grants(home, last);
	char **g3 = make_adversarial(home);
	struct lev_readpaths *d = NULL, *s1 = NULL, *s2 = NULL, *s3 = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct decide_arg a1, a2, a3;
	struct strcmp_arg sa = { g1, path };
	double none, lastg, adv, base;

	if (lev_readpaths_new(decl, "/w", home, &d, &err) < 0 ||
	    lev_readpaths_new(g1, "/w", home, &s1, &err) < 0 ||
	    lev_readpaths_new(g2, "/w", home, &s2, &err) < 0 ||
	    lev_readpaths_new(g3, "/w", home, &s3, &err) < 0) {
		fprintf(stderr, "bench-paths: %s\n", err.msg);
		exit(1);
	}
	a1 = (struct decide_arg){ { d, s1, false }, path, LEV_READPATH_NOT_GRANTED };
	a2 = (struct decide_arg){ { d, s2, false }, path, LEV_READPATH_ALLOWED };
	a3 = (struct decide_arg){ { d, s3, false }, path, LEV_READPATH_NOT_GRANTED };
	none = measure(op_decide, &a1, batches, 100);
	lastg = measure(op_decide, &a2, batches, 100);
	adv = measure(op_decide, &a3, batches, 20);
	base = measure(op_strcmp, &sa, batches, 100);
	printf("(b) one read-path decision on a resolved path, 1000 grants under the same home\n"
	       "    (334 exact, 333 glob, 333 regex):\n");
	printf("    not granted:                   %8.0f ns median  (goal <= 2000 ns)\n", none);
	printf("    granted by the last grant:     %8.0f ns median\n", lastg);
	printf("    worst case, 1000 globs that must all be tried (glob:~/**/nameNNN.md):\n"
	       "                                   %8.0f ns median\n", adv);
	printf("    baseline, 1000 strcmp():       %8.0f ns median\n", base);
	lev_readpaths_free(d);
	lev_readpaths_free(s1);
	lev_readpaths_free(s2);
	lev_readpaths_free(s3);
	lev_strv_free(g1);
	lev_strv_free(g2);
	lev_strv_free(g3);
	free(home), free(path), free(decl_e), free(last);
}

/* ---- (c) ---------------------------------------------------------------- */

struct open_arg {
	struct lev_fs_ctx *ctx;
	const char *path;
};

static void op_open_read(void *arg)
{
	struct open_arg *a = arg;
	int fd = -1;

	if (lev_fs_open_read(a->ctx, a->path, false, &fd, NULL) < 0)
		abort();
	close(fd);
}

struct bare_arg {
	int dirfd;
	const char *path;
	bool stat;
};

static void op_bare(void *arg)
{
	struct bare_arg *a = arg;
	int fd = openat(a->dirfd, a->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		abort();
	if (a->stat) {
		struct stat st;
		if (fstat(fd, &st) < 0)
			abort();
	}
	close(fd);
}

static struct lev_fs_ctx *ctx_for(const char *wd, const char *granted, enum lev_confine_mode m)
{
	char *v[] = { (char *)granted, NULL };
	struct lev_fs_opts o;
	struct lev_fs_ctx *c = NULL;
	struct lev_err err = LEV_ERR_INIT;

	memset(&o, 0, sizeof(o));
	o.workdir = wd;
	o.agent = "bench";
	o.home = "/nonexistent";
	o.declared = v;
	o.grants = v;
	o.confine = m;
	if (lev_fs_ctx_new(&o, &c, &err) < 0) {
		fprintf(stderr, "bench-paths: %s\n", err.msg);
		exit(1);
	}
	return c;
}

static void bench_c(const char *tmp, int batches)
{
	char *wd = xasprintf("%s/wd", tmp), *src = xasprintf("%s/wd/src/lev", tmp);
	char *gr = xasprintf("%s/granted/docs", tmp), *file, *ofile;
	struct lev_fs_ctx *ca, *cw;
	double ours_a, ours_w, bare, bare_st, out_a, out_w, out_bare;
	int wdfd;
	FILE *f;

	if (lev_mkdir_p(src, 0755, NULL) < 0 || lev_mkdir_p(gr, 0755, NULL) < 0)
		abort();
	file = xasprintf("%s/main.c", src);
	ofile = xasprintf("%s/design.md", gr);
	if (!(f = fopen(file, "w")))
		abort();
	fputs("int main(void) { return 0; }\n", f);
	fclose(f);
	if (!(f = fopen(ofile, "w")))
		abort();
	fputs("# design\n", f);
	fclose(f);
	wdfd = open(wd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ca = ctx_for(wd, gr, LEV_CONFINE_AUTO);
	cw = ctx_for(wd, gr, LEV_CONFINE_WALK);

	{
		struct open_arg oa_a = { ca, "src/lev/main.c" }, oa_w = { cw, "src/lev/main.c" };
		struct bare_arg bare_in = { wdfd, "src/lev/main.c", false };
		struct bare_arg bare_in_st = { wdfd, "src/lev/main.c", true };
		struct open_arg out_oa = { ca, ofile }, out_ow = { cw, ofile };
		struct bare_arg bare_out = { AT_FDCWD, ofile, false };
		double r_a, r_st, r_w, r_oa, r_ow;

		measure_pair(op_open_read, &oa_a, op_bare, &bare_in, batches, 50, &ours_a, &bare,
			     &r_a);
		measure_pair(op_open_read, &oa_a, op_bare, &bare_in_st, batches, 50, &ours_a,
			     &bare_st, &r_st);
		measure_pair(op_open_read, &oa_w, op_bare, &bare_in, batches, 50, &ours_w, &bare,
			     &r_w);
		measure_pair(op_open_read, &out_oa, op_bare, &bare_out, batches, 20, &out_a,
			     &out_bare, &r_oa);
		measure_pair(op_open_read, &out_ow, op_bare, &bare_out, batches, 20, &out_w,
			     &out_bare, &r_ow);

		printf("(c) read_file confinement check (open + close), file in the workdir "
		       "(src/lev/main.c);\n    measured in alternating batches, ratio = median "
		       "of per-batch ratios:\n");
		printf("    bare openat(workdir fd):       %8.0f ns median  (baseline)\n", bare);
		printf("    bare openat + fstat:           %8.0f ns median\n", bare_st);
		printf("    lev, openat2:                  %8.0f ns median  = %.2fx bare openat "
		       "(goal <= 2x), %.2fx openat+fstat\n", ours_a, r_a, r_st);
		printf("    lev, forced walk:              %8.0f ns median  = %.2fx bare openat\n",
		       ours_w, r_w);
		printf("(c') granted file outside the workdir (O_PATH open, real path read back and "
		       "verified,\n     decision, reopen through /proc/self/fd):\n");
		printf("    bare openat(absolute path):    %8.0f ns median  (baseline)\n", out_bare);
		printf("    lev, openat2:                  %8.0f ns median  = %.2fx bare\n", out_a,
		       r_oa);
		printf("    lev, forced walk:              %8.0f ns median  = %.2fx bare\n", out_w,
		       r_ow);
		printf("    (openat2 available: %s)\n", lev_confine_have_openat2() ? "yes" : "no");
	}
	lev_fs_ctx_free(ca);
	lev_fs_ctx_free(cw);
	close(wdfd);
	free(wd), free(src), free(gr), free(file), free(ofile);
}

int main(int argc, char **argv)
{
	char t[] = "/tmp/lev-bench-paths-XXXXXX";
	int batches = argc > 1 ? atoi(argv[1]) : 2001;
	char *tmp;

	if (batches < 11)
		batches = 11;
	if (!mkdtemp(t))
		return 1;
	tmp = realpath(t, NULL);
	bench_b(tmp, batches);
	bench_c(tmp, batches);
	lev_rm_rf(tmp, NULL);
	free(tmp);
	return 0;
}
