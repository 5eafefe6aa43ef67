#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

int lev_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned d;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

bool lev_startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool lev_endswith(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

int lev_read_fd(int fd, const char *name, size_t max, char **out, size_t *len_out,
		struct lev_err *err)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(max);
	struct stat st;

	if (fstat(fd, &st) < 0)
		return lev_err_errno(err, -errno, "cannot stat '%s'", name);
	if (S_ISDIR(st.st_mode))
		return lev_err_set(err, -EISDIR, "'%s' is a directory", name);
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max)
		return lev_err_set(err, -EFBIG, "'%s' is too large (%jd bytes; the limit is %zu)",
				   name, (intmax_t)st.st_size, max);
	for (;;) {
		size_t room;
		ssize_t n;
		int r;

		if (b.len == max) {
			/* full: one more byte means the file is too large */
			char c;
			do
				n = read(fd, &c, 1);
			while (n < 0 && errno == EINTR);
			if (n == 0)
				break;
			lev_buf_release(&b);
			return lev_err_set(err, -EFBIG, "'%s' is too large (the limit is %zu bytes)",
					   name, max);
		}
		r = lev_buf_grow(&b, max - b.len < 65536 ? max - b.len : 65536);
		if (r < 0) {
			lev_buf_release(&b);
			return lev_err_set(err, r, "cannot read '%s'", name);
		}
		room = b.alloc - b.len - 1;
		if (room > max - b.len)
			room = max - b.len;
		n = read(fd, b.buf + b.len, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			lev_buf_release(&b);
			return lev_err_errno(err, r, "cannot read '%s'", name);
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
		b.buf[b.len] = '\0';
	}
	*out = lev_buf_detach(&b, len_out);
	return 0;
}

int lev_read_file(const char *path, size_t max, char **out, size_t *len_out, struct lev_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot open '%s'", path);
	return lev_read_fd(fd, path, max, out, len_out, err);
}

ssize_t lev_write_nosig(int fd, const void *p, size_t len)
{
	sigset_t pipe_set, old, pending;
	bool was_pending;
	ssize_t n;
	int saved;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	n = write(fd, p, len);
	saved = errno;
	if (n < 0 && errno == EPIPE && !was_pending) {
		const struct timespec zero = { 0, 0 };

		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return n;
}

int lev_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

int lev_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
			  struct lev_err *err)
{
	_cleanup_free_ char *dir = dir_of(path);
	_cleanup_free_ char *tmp = xasprintf("%s.tmp.XXXXXX", path);
	_cleanup_close_ int fd = -1;
	_cleanup_close_ int dfd = -1;
	int r;

	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot create a temporary file next to '%s'", path);
	if (fchmod(fd, mode) < 0) {
		r = -errno;
		goto fail;
	}
	r = lev_write_all(fd, data, len);
	if (r < 0)
		goto fail;
	if (fsync(fd) < 0) {
		r = -errno;
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto fail;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		(void)fsync(dfd);
	return 0;
fail:
	unlink(tmp);
	return lev_err_errno(err, r, "cannot write '%s'", path);
}

int lev_mkdir_p(const char *path, mode_t mode, struct lev_err *err)
{
	_cleanup_free_ char *p = xstrdup(path);
	char *s;

	for (s = p + 1; ; s++) {
		char c = *s;
		if (c != '/' && c != '\0')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return lev_err_errno(err, -errno, "cannot create directory '%s'", p);
		*s = c;
		if (!c)
			break;
	}
	return 0;
}

static int rm_rf_at(int dfd, const char *name, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return lev_err_errno(err, -errno, "cannot remove '%s'", name);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot open '%s'", name);
	d = fdopendir(fd);
	if (!d)
		return lev_err_errno(err, -errno, "cannot list '%s'", name);
	fd = -1;
	while (r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = rm_rf_at(dirfd(d), de->d_name, err);
	}
	closedir(d);
	if (r < 0)
		return r;
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return lev_err_errno(err, -errno, "cannot remove '%s'", name);
	return 0;
}

int lev_rm_rf(const char *path, struct lev_err *err)
{
	return rm_rf_at(AT_FDCWD, path, err);
}

int lev_home_dir(char **out, struct lev_err *err)
{
	const char *h = secure_getenv("HOME");
	struct passwd *pw;

	if (h && h[0] == '/') {
		*out = xstrdup(h);
		return 0;
	}
	pw = getpwuid(getuid());
	if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/')
		return lev_err_set(err, -ENOENT, "cannot find the home directory (set HOME)");
	*out = xstrdup(pw->pw_dir);
	return 0;
}

char *lev_path_join(const char *a, const char *b)
{
	size_t la = strlen(a);

	while (la > 1 && a[la - 1] == '/')
		la--;
	while (*b == '/')
		b++;
	if (la == 1 && a[0] == '/')
		return xasprintf("/%s", b);
	return xasprintf("%.*s/%s", (int)la, a, b);
}

bool lev_path_under(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (n == 1 && root[0] == '/')
		return true;
	return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}

char *lev_path_lexical(const char *dir, const char *p)
{
	_cleanup_free_ char *full = p[0] == '/' ? xstrdup(p) : lev_path_join(dir, p);
	struct lev_buf b = LEV_BUF_INIT;
	const char *s = full;

	while (*s) {
		size_t n;

		while (*s == '/')
			s++;
		n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.')) {
			/* nothing */
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			char *slash = b.len ? strrchr(b.buf, '/') : NULL;

			if (slash)
				lev_buf_truncate(&b, (size_t)(slash - b.buf));
		} else {
			lev_buf_addf(&b, "/%.*s", (int)n, s);
		}
		s += n;
	}
	if (!b.len)
		lev_buf_adds(&b, "/");
	return lev_buf_detach(&b, NULL);
}

size_t lev_utf8_decode(const void *str, size_t n, uint32_t *cp)
{
	const unsigned char *s = str;
	uint32_t c = s[0];
	size_t len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, c &= 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, c &= 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, c &= 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t lev_monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t lev_monotonic_coarse_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC_COARSE);
}
