/*
 * perm-redirect.c - the redirect gate: a shell line may not write outside
 * the workdir through a redirect, whatever the permissions say.
 *
 * Relative targets are resolved by the kernel beneath the workdir's fd
 * (fsconfine: openat2 RESOLVE_BENEATH, or its walk), so symlinks and ".."
 * mean what they will mean to the shell.  A target that does not exist yet
 * is judged by its deepest existing ancestor (opened the same way) and the
 * plain names after it.  The gate is a check made before the shell opens
 * anything, so it is not race-free against the line itself; the sandbox
 * (Landlock) is what confines the shell's writes at the kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/policy/fsconfine.h"
#include "liblev/policy/perm.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

/* Path components a target may have before it is refused as unreadable. */
#define MAX_COMPONENTS 256

void lev_redirect_decision_release(struct lev_redirect_decision *d)
{
	free(d->target);
	free(d->path);
	free(d->reason);
	memset(d, 0, sizeof(*d));
	d->verdict = LEV_ALLOW;
}

char *lev_perm_real_path(const char *abs)
{
	_cleanup_free_ char *cur = xstrdup(abs);
	_cleanup_free_ char *tail = NULL;
	int i;

	for (i = 0; i < MAX_COMPONENTS; i++) {
		_cleanup_close_ int fd = -1;
		char *slash, *real = NULL, *t;
		int r = lev_confine_open_abs(cur, O_PATH, LEV_CONFINE_AUTO, &fd, NULL);

		if (r == 0 && lev_confine_fd_path(fd, &real, NULL) == 0) {
			if (!tail)
				return real;
			t = lev_path_join(real, tail);
			free(real);
			return t;
		}
		if (r != -ENOENT)
			break;
		slash = strrchr(cur, '/');
		if (!slash || slash == cur)
			break;
		t = tail ? lev_path_join(slash + 1, tail) : xstrdup(slash + 1);
		free(tail);
		tail = t;
		*slash = '\0';
	}
	return xstrdup(abs);
}

static void refuse(struct lev_redirect_decision *out, const char *target, char *path,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void refuse(struct lev_redirect_decision *out, const char *target, char *path,
		   const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	out->verdict = LEV_DENY;
	out->target = target ? xstrdup(target) : NULL;
	out->path = path;
	out->reason = msg;
}

/* Split REL into its non-empty components.  Returns the count, or -1 if too many. */
static int split(char *rel, char **comps)
{
	int n = 0;
	char *s = rel, *slash;

	for (;;) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		if (n == MAX_COMPONENTS)
			return -1;
		comps[n++] = s;
		slash = strchr(s, '/');
		if (!slash)
			break;
		*slash = '\0';
		s = slash + 1;
	}
	return n;
}

static char *join_comps(char **comps, int from, int to)
{
	struct lev_buf b = LEV_BUF_INIT;
	int i;

	if (from >= to)
		return xstrdup(".");
	for (i = from; i < to; i++) {
		if (i > from)
			(void)lev_buf_addch(&b, '/');
		(void)lev_buf_adds(&b, comps[i]);
	}
	return lev_buf_detach(&b, NULL);
}

static const char outside_fmt[] =
	"[denied] The shell redirect to '%s' writes outside the working directory (%s): it "
	"lands in '%s'. write_file refuses the same path and a redirect is no way around it; "
	"this holds under --yolo too. Write inside the working directory instead.";

/* Check one relative target REL (T as written).  Fills OUT on refusal. */
static int check_rel(int wd_fd, const char *wd_real, const char *t, const char *rel,
		     struct lev_redirect_decision *out, struct lev_err *err)
{
	_cleanup_free_ char *copy = xstrdup(rel);
	_cleanup_free_ char *abs = lev_path_join(wd_real, rel);
	_cleanup_close_ int fd = -1;
	char *comps[MAX_COMPONENTS];
	int n, k, r;
	struct stat st;

	r = lev_confine_open(wd_fd, wd_real, *rel ? rel : ".", O_PATH, LEV_CONFINE_AUTO, &fd, NULL);
	if (r == 0)
		return 0;
	if (r == -EXDEV || r == -ELOOP) {
		char *p = lev_perm_real_path(abs);

		refuse(out, t, p, outside_fmt, t, wd_real, p);
		return 0;
	}
	if (r != -ENOENT) {
		refuse(out, t, NULL,
		       "[denied] The shell redirect to '%s' cannot be resolved inside the working "
		       "directory (%s): %s.",
		       t, wd_real, strerror(-r));
		return 0;
	}

	/* It does not exist yet: find the deepest existing ancestor. */
	n = split(copy, comps);
	if (n <= 0) {
		refuse(out, t, NULL, "[denied] The shell redirect to '%s' has too many components.",
		       t);
		return 0;
	}
	for (k = n - 1; k >= 0; k--) {
		_cleanup_free_ char *prefix = join_comps(comps, 0, k);

		if (fd >= 0) {
			close(fd);
			fd = -1;
		}
		r = lev_confine_open(wd_fd, wd_real, prefix, O_PATH | O_DIRECTORY, LEV_CONFINE_AUTO,
				     &fd, NULL);
		if (r == 0)
			break;
		if (r == -ENOENT && k > 0)
			continue;
		if (r == -EXDEV || r == -ELOOP) {
			char *p = lev_perm_real_path(abs);

			refuse(out, t, p, outside_fmt, t, wd_real, p);
			return 0;
		}
		refuse(out, t, NULL,
		       "[denied] The shell redirect to '%s' cannot be resolved inside the working "
		       "directory (%s): %s.",
		       t, wd_real, strerror(-r));
		return 0;
	}
	if (k < 0)
		return lev_err_set(err, -ENOENT, "the working directory '%s' vanished", wd_real);
	for (r = k; r < n; r++)
		if (!strcmp(comps[r], "..")) {
			refuse(out, t, NULL,
			       "[denied] The shell redirect to '%s' climbs with '..' out of a directory "
			       "that does not exist yet, so lev cannot tell where it lands. Use a plain "
			       "path inside the working directory (%s).",
			       t, wd_real);
			return 0;
		}
	if (fstatat(fd, comps[k], &st, AT_SYMLINK_NOFOLLOW) == 0) {
		refuse(out, t, NULL,
		       S_ISLNK(st.st_mode)
			       ? "[denied] The shell redirect to '%s' goes through a symbolic link to "
				 "something that does not exist; lev will not create a file through it "
				 "(working directory: %s)."
			       : "[denied] The shell redirect to '%s' changed while lev checked it "
				 "(working directory: %s).",
		       t, wd_real);
		return 0;
	}
	if (errno != ENOENT) {
		refuse(out, t, NULL,
		       "[denied] The shell redirect to '%s' cannot be resolved inside the working "
		       "directory (%s): %s.",
		       t, wd_real, strerror(errno));
		return 0;
	}
	return 0;
}

int lev_perm_redirect_check(int wd_fd, const char *wd_real, const char *home,
			    const struct lev_shellkeys *sk, struct lev_redirect_decision *out,
			    struct lev_err *err)
{
	char *const *t;
	size_t wl = strlen(wd_real);

	memset(out, 0, sizeof(*out));
	out->verdict = LEV_ALLOW;
	if (!sk)
		return 0;
	if (sk->unlocatable_write) {
		refuse(out, NULL, NULL,
		       "[denied] lev cannot tell where this shell line writes (%s), so it is refused "
		       "whatever the permissions say, --yolo included. Redirect only to literal paths "
		       "inside the working directory (%s).",
		       sk->write_reason ? sk->write_reason : "the target is not literal", wd_real);
		return 0;
	}
	for (t = sk->write_targets; t && *t; t++) {
		_cleanup_free_ char *abs = NULL;
		const char *rel = *t;
		int r;

		if ((*t)[0] == '~') {
			if (!home) {
				refuse(out, *t, NULL,
				       "[denied] The shell redirect to '%s' names the home directory, which "
				       "lev cannot locate.",
				       *t);
				return 0;
			}
			abs = (*t)[1] ? lev_path_join(home, *t + 2) : xstrdup(home);
		} else if ((*t)[0] == '/') {
			abs = xstrdup(*t);
		}
		if (abs) {
			if (!strcmp(wd_real, "/")) {
				rel = abs + 1;
			} else if (!strncmp(abs, wd_real, wl) && (abs[wl] == '/' || !abs[wl])) {
				rel = abs + wl + (abs[wl] == '/');
			} else {
				char *p = lev_perm_real_path(abs);

				refuse(out, *t, p, outside_fmt, *t, wd_real, p);
				return 0;
			}
		}
		r = check_rel(wd_fd, wd_real, *t, rel, out, err);
		if (r < 0)
			return r;
		if (out->verdict == LEV_DENY)
			return 0;
	}
	return 0;
}
