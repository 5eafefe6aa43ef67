#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "lev/termout.h"
#include "liblev/base/buf.h"
#include "liblev/base/termtext.h"
#include "liblev/base/util.h"

struct termout {
	int fd;
	unsigned char carry[4];	/* the start of a UTF-8 sequence cut by a write */
	size_t ncarry;
};

static struct termout out_state = { .fd = STDOUT_FILENO };
static struct termout err_state = { .fd = STDERR_FILENO };

/* How many bytes at the end of S (LEN) start a UTF-8 sequence not yet complete. */
static size_t incomplete_tail(const unsigned char *s, size_t len)
{
	for (size_t k = 1; k <= 3 && k <= len; k++) {
		unsigned char c = s[len - k];
		size_t need;

		if ((c & 0xc0) == 0x80)
			continue;		/* a continuation byte: look further back */
		need = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3
		     : c >= 0xc2 && c <= 0xdf ? 2 : 1;
		return need > k ? k : 0;
	}
	return 0;
}

static ssize_t termout_write(void *cookie, const char *buf, size_t size)
{
	struct termout *t = cookie;
	struct lev_buf in = LEV_BUF_INIT_MAX(SIZE_MAX / 2);
	struct lev_buf out = LEV_BUF_INIT_MAX(SIZE_MAX / 2);
	const char *text = buf;
	size_t len = size, tail;
	int r;

	/* only a sequence cut by the last write needs joining to this one */
	if (t->ncarry) {
		(void)lev_buf_add(&in, t->carry, t->ncarry);
		(void)lev_buf_add(&in, buf, size);
		text = in.buf;
		len = in.len;
	}
	tail = incomplete_tail((const unsigned char *)text, len);
	memcpy(t->carry, text + len - tail, tail);
	t->ncarry = tail;
	lev_termtext_add(&out, text, len - tail);
	r = lev_write_all(t->fd, out.buf, out.len);
	lev_buf_release(&in);
	lev_buf_release(&out);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return (ssize_t)size;
}

static FILE *wrap(struct termout *t, int mode)
{
	cookie_io_functions_t io = { .write = termout_write };
	FILE *f = fopencookie(t, "w", io);

	if (f)
		setvbuf(f, NULL, mode, BUFSIZ);
	return f;
}

void lev_termout_install(void)
{
	FILE *f;

	if (isatty(STDOUT_FILENO) && (f = wrap(&out_state, _IOLBF)))
		stdout = f;
	if (isatty(STDERR_FILENO) && (f = wrap(&err_state, _IONBF)))
		stderr = f;
}

void lev_termout_raw(int fd, const char *s)
{
	fflush(stderr);
	(void)lev_write_all(fd, s, strlen(s));
}
