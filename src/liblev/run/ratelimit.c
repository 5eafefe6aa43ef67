/*
 * ratelimit.c - the machine-wide per-provider rate limiter (ratelimit.h).
 *
 * The state file holds one line per event of the last window,
 * "MS KIND N": KIND r (a request let through, N = 1) or t (N tokens
 * charged).  Under the lock the old lines are dropped, the window counted,
 * and either the new request is appended or the caller sleeps and asks again.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/run/ratelimit.h"

#define WINDOW_MS 60000
#define SLICE_MS 100	/* a waiter looks again (and for a cancel) this often */

const struct lev_rate_limit *lev_ratelimit_find(const struct lev_config *cfg, const char *provider)
{
	for (size_t i = 0; cfg && provider && i < cfg->n_rate_limits; i++)
		if (!strcmp(cfg->rate_limits[i].provider, provider))
			return &cfg->rate_limits[i];
	return NULL;
}

static uint64_t now_ms(void)
{
	const char *f = secure_getenv("LEV_TEST_RATELIMIT_CLOCK");
	struct timespec ts;

	if (f && *f) {
		FILE *fp = fopen(f, "re");
		uint64_t v = 0;

		if (fp) {
			if (fscanf(fp, "%" SCNu64, &v) != 1)
				v = 0;
			fclose(fp);
		}
		return v;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* CLOCK_MONOTONIC is the machine's, shared by every process on it */
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The state file of RL's provider, opened (created 0600) and locked: its fd, or -errno. */
static int open_locked(const struct lev_rate_limit *rl, struct lev_err *err)
{
	_cleanup_free_ char *root = NULL, *dir = NULL, *name = NULL, *path = NULL;
	int fd, r = lev_datadir_root(&root, err);

	if (r < 0)
		return r;
	dir = lev_path_join(root, "ratelimit");
	r = lev_datadir_ensure(dir, err);
	if (r < 0)
		return r;
	/* a provider name is a TOML key: anything but [A-Za-z0-9_-] becomes '_' */
	name = xstrdup(rl->provider);
	for (char *p = name; *p; p++)
		if (!(((*p | 32) >= 'a' && (*p | 32) <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			*p = '_';
	path = lev_path_join(dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, LEV_FILE_MODE);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot open the rate limit state %s", path);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			r = -errno;
			close(fd);
			return lev_err_errno(err, r, "cannot lock the rate limit state %s", path);
		}
	}
	return fd;
}

struct window {
	uint64_t requests, tokens;
	uint64_t first_request, first_tokens;	/* the oldest of each kind in the window */
};

/*
 * Read FD's events, keep those of the window ending at NOW in KEPT (and
 * count them in W), then append ADD (NULL: none) and write KEPT back.
 */
static void sweep(int fd, uint64_t now, uint64_t window, struct window *w, const char *add)
{
	_cleanup_buf_ struct lev_buf in = LEV_BUF_INIT;
	_cleanup_buf_ struct lev_buf kept = LEV_BUF_INIT;
	char chunk[4096];
	ssize_t n;
	char *line, *save = NULL;

	memset(w, 0, sizeof(*w));
	(void)lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		if (lev_buf_add(&in, chunk, (size_t)n) < 0)
			break;
	}
		for (line = strtok_r(in.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t t, v;
		char kind;

		if (sscanf(line, "%" SCNu64 " %c %" SCNu64, &t, &kind, &v) != 3 || t > now ||
		    now - t >= window)
			continue;	/* out of the window (or a clock that went back) */
		if (kind == 'r') {
			if (!w->requests++)
				w->first_request = t;
		} else if (kind == 't') {
			if (!w->tokens)
				w->first_tokens = t;
			w->tokens += v;
		}
		(void)lev_buf_addf(&kept, "%s\n", line);
	}
	if (add)
		(void)lev_buf_adds(&kept, add);
	if (ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0 && kept.len)
		(void)!write(fd, kept.buf, kept.len);
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static uint64_t window_ms(void)
{
	return WINDOW_MS;
}

/* Under the lock: count the request and return 0, or how long to wait (ms). */
static uint64_t try_take(int fd, const struct lev_rate_limit *rl)
{
	uint64_t now = now_ms(), win = window_ms();
	struct window w;
	char add[64];

	sweep(fd, now, win, &w, NULL);
	if (rl->requests_per_minute && w.requests >= rl->requests_per_minute)
		return w.first_request + win - now;
	if (rl->tokens_per_minute && w.tokens >= rl->tokens_per_minute)
		return w.first_tokens + win - now;
	snprintf(add, sizeof(add), "%" PRIu64 " r 1\n", now);
	sweep(fd, now, win, &w, add);
	return 0;
}

int lev_ratelimit_take(const struct lev_rate_limit *rl, bool (*cancelled)(void *), void *data,
		       struct lev_err *err)
{
	for (;;) {
		uint64_t wait;
		int fd = open_locked(rl, err);

		if (fd < 0)
			return fd;
		wait = try_take(fd, rl);
		close(fd);	/* the lock goes with it */
		if (!wait)
			return 0;
		if (cancelled && cancelled(data))
			return lev_err_set(err, -ECANCELED, "the run was cancelled");
		sleep_ms(wait < SLICE_MS ? wait : SLICE_MS);
	}
}

void lev_ratelimit_charge(const struct lev_rate_limit *rl, uint64_t tokens)
{
	struct lev_err err = LEV_ERR_INIT;
	struct window w;
	char add[64];
	uint64_t now;
	int fd;

	if (!rl->tokens_per_minute || !tokens)
		return;
	fd = open_locked(rl, &err);
	if (fd < 0)
		return;	/* the request was answered; a charge lost only lets more through */
	now = now_ms();
	snprintf(add, sizeof(add), "%" PRIu64 " t %" PRIu64 "\n", now, tokens);
	sweep(fd, now, window_ms(), &w, add);
	close(fd);
}
