/*
 * tools-fs.c - read_file, read_files, list_dir, write_file, edit_file, and
 * lev_fs_check(), all built on one resolver per direction so that the
 * check and the tools cannot disagree.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/ownfiles.h"
#include "liblev/conf/readpaths.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/tools/tools-fs.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define BINARY_SNIFF 8192
#define CHUNK 65536
#define MSG_MAX (64 * 1024)

struct lev_fs_ctx {
	int root_fd;
	char *workdir;		/* as given */
	char *root_real;	/* read back from root_fd */
	char *agent;
	char *home;
	char *config_path;
	struct lev_readpaths *declared;
	struct lev_readpaths *grants;
	bool allow_blueprint;
	enum lev_confine_mode mode;
	struct lev_ownfiles own;	/* lev's own files: never read nor written (ownfiles.h) */
	bool own_inside;	/* one of them lies inside the workdir (reads check it) */
};

enum want {
	W_FILE,		/* to read bytes */
	W_DIR,		/* to list */
	W_PATH,		/* to decide only */
};

enum tstatus {
	T_OK,		/* allowed, and opened when asked to */
	T_DENY,		/* refused by a gate: msg is the refusal */
	T_FAIL,		/* allowed, but failed (missing file ...): msg says why */
};

/* What the resolver found for one path. */
struct target {
	enum tstatus status;
	enum lev_fs_gate gate;
	int fd;
	char *real;
	char *msg;
	/* write side */
	int dfd;		/* the target's directory (O_RDONLY|O_DIRECTORY) */
	char *name;		/* the final component */
	char *missing;		/* directories still to create beneath dfd ("a/b"), or NULL */
	bool exists;
	mode_t mode;
	int errnum;		/* T_FAIL: the negative errno, when there is one */
	bool is_path;		/* fd is an O_PATH fd (W_PATH): upgrade it before reading */
};

static void target_init(struct target *t)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->dfd = -1;
}

static void target_release(struct target *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->dfd >= 0)
		close(t->dfd);
	free(t->real);
	free(t->msg);
	free(t->name);
	free(t->missing);
	target_init(t);
}

static void set_msg(struct target *t, enum tstatus st, enum lev_fs_gate gate, char *msg)
{
	if (st == T_FAIL && !t->errnum)
		t->errnum = -EIO;
	t->status = st;
	t->gate = gate;
	free(t->msg);
	t->msg = msg;
}

/* ---- strings ------------------------------------------------------------ */

static bool utf8_valid(const char *s, size_t n)
{
	size_t bad;

	(void)lev_buf_add_utf8(NULL, s, n, false, &bad);
	return bad == 0;
}

/* Length of the valid UTF-8 sequence at S (N bytes left), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t cp;

	return lev_utf8_decode(s, n, &cp);
}

/* Quote a path for a one-line message: control bytes and bad UTF-8 escaped. */
static void add_disp(struct lev_buf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n = strlen(s);

	while (i < n) {
		size_t run = i, l;

		/* plain printable ASCII goes in as one run */
		while (run < n && u[run] >= 0x20 && u[run] < 0x7f)
			run++;
		if (run > i) {
			lev_buf_add(b, s + i, run - i);
			i = run;
			continue;
		}
		l = utf8_seq(u + i, n - i);
		if (l == 1 && u[i] >= 0x20 && u[i] != 0x7f) {
			lev_buf_addch(b, (char)u[i]);
		} else if (l > 1) {
			lev_buf_add(b, s + i, l);
		} else {
			lev_buf_addf(b, "\\x%02x", u[i]);
			l = 1;
		}
		i += l;
	}
}

static char *disp(const char *s)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(4 * PATH_MAX + 16);

	add_disp(&b, s);
	return lev_buf_detach(&b, NULL);
}

static char *msgf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *msgf(const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(MSG_MAX);
	va_list ap;

	va_start(ap, fmt);
	lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	return lev_buf_detach(&b, NULL);
}

/* Validate a path argument; returns NULL or a message (caller frees). */
static char *bad_path(const char *p, size_t len)
{
	if (!p || len == 0)
		return xstrdup("path is empty");
	if (memchr(p, '\0', len))
		return xstrdup("path contains a NUL byte");
	if (len >= PATH_MAX)
		return msgf("path is too long (%zu bytes; the limit is %d)", len, PATH_MAX - 1);
	if (!utf8_valid(p, len))
		return xstrdup("path is not valid UTF-8");
	return NULL;
}

static bool path_under(const char *path, const char *root)
{
	size_t rl = strlen(root);

	if (rl == 1 && root[0] == '/')
		return path[0] == '/';
	return !strncmp(path, root, rl) && (path[rl] == '\0' || path[rl] == '/');
}

/*
 * PATH relative to the workdir: as given when relative; an absolute path
 * under the workdir (real or as given) loses that prefix; NULL otherwise.
 * Borrowed from PATH.
 */
static const char *to_relative(const struct lev_fs_ctx *c, const char *path)
{
	const char *roots[2] = { c->root_real, c->workdir };
	size_t i;

	if (path[0] != '/')
		return path;
	for (i = 0; i < 2; i++) {
		if (roots[i] && path_under(path, roots[i])) {
			const char *rest = path + (strcmp(roots[i], "/") ? strlen(roots[i]) : 0);
			while (*rest == '/')
				rest++;
			return *rest ? rest : ".";
		}
	}
	return NULL;
}

/* Does the relative path REL stay inside when ".." is folded lexically? */
static bool lexically_inside(const char *rel)
{
	long depth = 0;
	const char *s = rel;

	while (*s) {
		size_t len;
		while (*s == '/')
			s++;
		len = strcspn(s, "/");
		if (len == 2 && s[0] == '.' && s[1] == '.') {
			if (--depth < 0)
				return false;
		} else if (len && !(len == 1 && s[0] == '.')) {
			depth++;
		}
		s += len;
	}
	return true;
}

/* The absolute, lexically folded form of PATH (caller frees). */
static char *lexical_abs(const struct lev_fs_ctx *c, const char *path)
{
	_cleanup_free_ char *joined = path[0] == '/' ? xstrdup(path) :
				      lev_path_join(c->root_real, path);
	size_t n = strlen(joined), o = 0, i = 0;
	char *out = xmalloc(n + 2);

	out[o++] = '/';
	while (i < n) {
		size_t j;
		while (i < n && joined[i] == '/')
			i++;
		j = i;
		while (j < n && joined[j] != '/')
			j++;
		if (j == i)
			break;
		if (j - i == 2 && joined[i] == '.' && joined[i + 1] == '.') {
			while (o > 1 && out[o - 1] != '/')
				o--;
			if (o > 1)
				o--;
		} else if (!(j - i == 1 && joined[i] == '.')) {
			if (o > 1)
				out[o++] = '/';
			memcpy(out + o, joined + i, j - i);
			o += j - i;
		}
		i = j;
	}
	out[o] = '\0';
	return out;
}

/* The file op TOOL runs (any spelling), or LEV_OP_NONE for a name that is no file tool. */
static enum lev_tool_op fs_op(const char *tool)
{
	const struct lev_tool_desc *d = lev_tooltable_find(tool);

	return d && !(d->flags & LEV_TOOLF_FOREIGN) && d->kind == LEV_TOOL_FS ? d->op : LEV_OP_NONE;
}

static bool is_write_tool(const char *tool)
{
	return fs_op(tool) != LEV_OP_NONE && lev_tooltable_touches(tool, LEV_TOUCH_WRITES);
}

/* ---- messages ----------------------------------------------------------- */

enum why {
	WHY_LEXICAL,	/* ".." or an absolute path */
	WHY_SYMLINK,	/* a symlink on the way points out */
	WHY_LOOP,	/* ELOOP: a symlink loop or a /proc magic link */
};

static char *msg_workdir(const struct lev_fs_ctx *c, const char *path, enum why why,
			 const char *tool)
{
	_cleanup_free_ char *p = disp(path), *wd = disp(c->root_real);
	struct lev_buf b = LEV_BUF_INIT_MAX(MSG_MAX);

	switch (why) {
	case WHY_LEXICAL:
		lev_buf_addf(&b, "path '%s' is outside the working directory (%s); use a path inside "
			     "it - a relative path resolves against it", p, wd);
		break;
	case WHY_SYMLINK:
		lev_buf_addf(&b, "path '%s' resolves outside the working directory (%s) through a "
			     "symlink; use a path inside it", p, wd);
		break;
	case WHY_LOOP:
		lev_buf_addf(&b, "path '%s' cannot be resolved: it loops through symlinks or goes "
			     "through a /proc magic link, which file tools never follow", p);
		return lev_buf_detach(&b, NULL);
	}
	if (tool && is_write_tool(tool))
		lev_buf_addf(&b, " (%s never writes outside the working directory, whatever "
			     "[read_paths] grants)", tool);
	else if (tool && !lev_readpaths_count(c->declared))
		lev_buf_adds(&b, " (this agent's blueprint declares no [read_paths], so nothing "
			     "outside the working directory can be read)");
	return lev_buf_detach(&b, NULL);
}

static char *msg_not_declared(const char *path, const char *real)
{
	_cleanup_free_ char *p = disp(path);

	if (real) {
		_cleanup_free_ char *r = disp(real);
		return msgf("path '%s' resolves to '%s', which is outside the working directory and "
			    "not in this agent's [read_paths]", p, r);
	}
	return msgf("path '%s' is outside the working directory and not in this agent's "
		    "[read_paths]", p);
}

static char *msg_not_granted(const struct lev_fs_ctx *c, const char *path, const char *real)
{
	_cleanup_free_ char *p = disp(path), *entry = NULL;
	long i = lev_readpaths_find(c->declared, real);
	const char *agent = c->agent ? c->agent : "<agent>";
	const char *cfg = c->config_path ? c->config_path : "your config.toml";
	struct lev_buf b = LEV_BUF_INIT_MAX(MSG_MAX);

	entry = disp(i >= 0 ? lev_readpaths_entry(c->declared, (size_t)i) : real);
	lev_buf_addf(&b, "path '%s' ", p);
	if (strcmp(path, real)) {
		_cleanup_free_ char *r = disp(real);
		lev_buf_addf(&b, "(really '%s') ", r);
	}
	lev_buf_addf(&b, "matches this agent's [read_paths] entry '%s', but your config does not "
		     "grant it; to allow it, add allow = [\"%s\"] under [agent_read_paths.%s] in "
		     "%s (or set allow_blueprint_read_paths = true under [security])",
		     entry, entry, agent, cfg);
	return lev_buf_detach(&b, NULL);
}

/* ---- the read resolver --------------------------------------------------- */

static int want_flags(enum want want)
{
	switch (want) {
	case W_FILE:
		return O_RDONLY | O_NONBLOCK;
	case W_DIR:
		return O_RDONLY | O_DIRECTORY;
	case W_PATH:
		return O_PATH;
	}
	return O_PATH;
}

static char *errno_msg(const char *verb, const char *path, int r)
{
	_cleanup_free_ char *p = disp(path);

	if (r == -ENOTDIR)
		return msgf("cannot %s '%s': a component of it is not a directory", verb, p);
	return msgf("cannot %s '%s': %s", verb, p, strerror(-r));
}

static void fail_errno(struct target *t, enum lev_fs_gate gate, const char *verb,
		       const char *path, int r)
{
	t->errnum = r;
	set_msg(t, T_FAIL, gate, errno_msg(verb, path, r));
}

static char *own_refusal(const struct lev_fs_ctx *c, const char *path, const char *real,
			 const char *tool);

/*
 * The outside-the-workdir half of the read resolver: open ABS with O_PATH,
 * read its real path back from the fd, decide on that, and only then open
 * the same object for reading.
 */
static void resolve_outside(struct lev_fs_ctx *c, const char *path, const char *abs,
			    enum want want, struct target *t)
{
	struct lev_readpath_policy pol = { c->declared, c->grants, c->allow_blueprint };
	_cleanup_close_ int pfd = -1;
	_cleanup_free_ char *real = NULL, *lex = lexical_abs(c, abs);
	enum lev_readpath_decision d;
	struct stat st;
	int r;

	r = lev_confine_open_abs(abs, O_PATH, c->mode, &pfd, NULL);
	if (r < 0) {
		/*
		 * Decide on the lexical path, so a refusal reads the same whether
		 * or not the file exists: no existence oracle outside the grants.
		 */
		t->real = xstrdup(lex);
		d = lev_readpath_policy_decide(&pol, lex);
		if (d == LEV_READPATH_NOT_DECLARED)
			set_msg(t, T_DENY, LEV_FS_GATE_READ_PATHS, msg_not_declared(path, NULL));
		else if (d == LEV_READPATH_NOT_GRANTED)
			set_msg(t, T_DENY, LEV_FS_GATE_READ_PATHS, msg_not_granted(c, path, lex));
		else if (r == -ELOOP)
			set_msg(t, T_DENY, LEV_FS_GATE_READ_PATHS,
				msg_workdir(c, path, WHY_LOOP, NULL));
		else
			fail_errno(t, LEV_FS_GATE_READ_PATHS, "open", path, r);
		return;
	}
	r = lev_confine_fd_path(pfd, &real, NULL);
	if (r < 0) {
		_cleanup_free_ char *p = disp(path);
		t->real = xstrdup(lex);
		set_msg(t, T_DENY, LEV_FS_GATE_READ_PATHS,
			msgf("path '%s' cannot be verified against [read_paths]: %s", p,
			     r == -ESTALE ? "it changed while it was being checked" : strerror(-r)));
		return;
	}
	t->real = xstrdup(real);
	{
		/* a grant never reaches lev's own files, nor does a way back in */
		char *own = own_refusal(c, path, real, "read");

		if (own) {
			set_msg(t, T_DENY, LEV_FS_GATE_READ_PATHS, own);
			return;
		}
	}
	if (path_under(real, c->root_real)) {
		/* it left and came back: a file of the workdir after all */
		t->gate = LEV_FS_GATE_WORKDIR;
	} else {
		d = lev_readpath_policy_decide(&pol, real);
		if (d == LEV_READPATH_NOT_DECLARED) {
			set_msg(t, T_DENY, LEV_FS_GATE_READ_PATHS,
				msg_not_declared(path, strcmp(real, lex) ? real : NULL));
			return;
		}
		if (d == LEV_READPATH_NOT_GRANTED) {
			set_msg(t, T_DENY, LEV_FS_GATE_READ_PATHS, msg_not_granted(c, path, real));
			return;
		}
		t->gate = LEV_FS_GATE_READ_PATHS;
	}
	t->status = T_OK;
	if (want == W_PATH) {
		t->fd = TAKE_FD(pfd);
		return;
	}
	if (fstat(pfd, &st) < 0) {
		fail_errno(t, t->gate, "stat", path, -errno);
		return;
	}
	if (want == W_DIR && !S_ISDIR(st.st_mode)) {
		_cleanup_free_ char *p = disp(path);
		set_msg(t, T_FAIL, t->gate, msgf("'%s' is not a directory; use read_file", p));
		return;
	}
	if (want == W_FILE && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		_cleanup_free_ char *p = disp(path);
		/* never open a device or FIFO outside the workdir, even for reading */
		set_msg(t, T_FAIL, t->gate, msgf("'%s' is not a regular file", p));
		return;
	}
	r = lev_confine_reopen(pfd, want_flags(want), &t->fd, NULL);
	if (r < 0)
		fail_errno(t, t->gate, "open", path, r);
}

/*
 * Resolve PATH for a read tool (or, with TOOL a write tool, only ever
 * inside).  NEED_REAL asks for the real path even inside the workdir.
 */

static void resolve_read(struct lev_fs_ctx *c, const char *path, enum want want, bool need_real,
			 struct target *t)
{
	const char *rel;
	char *own;
	int r;

	target_init(t);
	t->is_path = want == W_PATH;
	if (!strcmp(path, "/dev/null")) {
		t->real = xstrdup("/dev/null");
		t->gate = LEV_FS_GATE_WORKDIR;
		if (want == W_DIR) {
			set_msg(t, T_FAIL, LEV_FS_GATE_WORKDIR,
				xstrdup("'/dev/null' is not a directory"));
			return;
		}
		t->status = T_OK;
		if (want == W_FILE) {
			t->fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (t->fd < 0)
				fail_errno(t, LEV_FS_GATE_WORKDIR, "open", path, -errno);
		}
		return;
	}
	rel = to_relative(c, path);
	if (rel) {
		r = lev_confine_open(c->root_fd, c->root_real, rel, want_flags(want), c->mode, &t->fd,
				     NULL);
		if (r == 0) {
			t->status = T_OK;
			t->gate = LEV_FS_GATE_WORKDIR;
			if ((need_real || c->own_inside) &&
			    lev_confine_fd_path(t->fd, &t->real, NULL) < 0)
				t->real = lexical_abs(c, rel);
			own = c->own_inside ? own_refusal(c, path, t->real, "read") : NULL;
			if (own) {
				/* the data root in the workdir ($HOME): its keys stay unread */
				close(t->fd);
				t->fd = -1;
				set_msg(t, T_DENY, LEV_FS_GATE_WORKDIR, own);
			}
			return;
		}
		if (r == -ELOOP) {
			t->real = lexical_abs(c, rel);
			set_msg(t, T_DENY, LEV_FS_GATE_WORKDIR, msg_workdir(c, path, WHY_LOOP, NULL));
			return;
		}
		if (r != -EXDEV) {
			t->real = lexical_abs(c, rel);
			/* a missing file of lev's reads as refused: no existence oracle */
			own = c->own_inside ? own_refusal(c, path, t->real, "read") : NULL;
			if (own) {
				set_msg(t, T_DENY, LEV_FS_GATE_WORKDIR, own);
			} else if (r == -ENOTDIR && want == W_DIR) {
				_cleanup_free_ char *p = disp(path);
				set_msg(t, T_FAIL, LEV_FS_GATE_WORKDIR,
					msgf("'%s' is not a directory; use read_file", p));
			} else {
				fail_errno(t, LEV_FS_GATE_WORKDIR, "open", path, r);
			}
			return;
		}
	}
	/* The path leaves the workdir. */
	if (!lev_readpaths_count(c->declared)) {
		t->real = lexical_abs(c, path);
		set_msg(t, T_DENY, LEV_FS_GATE_WORKDIR,
			msg_workdir(c, path, rel && lexically_inside(rel) ? WHY_SYMLINK : WHY_LEXICAL,
				    "read"));
		return;
	}
	{
		_cleanup_free_ char *abs = path[0] == '/' ? xstrdup(path) :
					   lev_path_join(c->root_real, path);
		resolve_outside(c, path, abs, want, t);
	}
}

/* ---- the write resolver -------------------------------------------------- */

/* Open the directory REL_DIR beneath the root, creating what is missing. */
static int open_dir_creating(struct lev_fs_ctx *c, const char *rel_dir, bool create, int *fd_out,
			     char **missing_out)
{
	_cleanup_close_ int prev = -1;
	_cleanup_free_ char *prefix = NULL;
	const char *s = rel_dir;
	int r;

	r = lev_confine_open(c->root_fd, c->root_real, rel_dir, O_RDONLY | O_DIRECTORY, c->mode,
			     fd_out, NULL);
	if (r != -ENOENT)
		return r;
	r = lev_confine_open(c->root_fd, c->root_real, ".", O_RDONLY | O_DIRECTORY, c->mode, &prev,
			     NULL);
	if (r < 0)
		return r;
	prefix = xstrdup("");
	while (*s) {
		_cleanup_free_ char *comp = NULL, *next = NULL;
		size_t len;
		int fd = -1;

		while (*s == '/')
			s++;
		len = strcspn(s, "/");
		if (!len)
			break;
		comp = xstrndup(s, len);
		s += len;
		next = *prefix ? xasprintf("%s/%s", prefix, comp) : xstrdup(comp);
		r = lev_confine_open(c->root_fd, c->root_real, next, O_RDONLY | O_DIRECTORY, c->mode,
				     &fd, NULL);
		if (r == -ENOENT && strcmp(comp, ".") && strcmp(comp, "..")) {
			if (!create) {
				/* COMP and everything after it would be created */
				*missing_out = xasprintf("%s%s", comp, s);
				*fd_out = TAKE_FD(prev);
				return 0;
			}
			if (mkdirat(prev, comp, 0777) < 0 && errno != EEXIST)
				return -errno;
			r = lev_confine_open(c->root_fd, c->root_real, next, O_RDONLY | O_DIRECTORY,
					     c->mode, &fd, NULL);
		}
		if (r < 0)
			return r;
		close(prev);
		prev = fd;
		free(prefix);
		prefix = TAKE_PTR(next);
	}
	*fd_out = TAKE_FD(prev);
	return 0;
}

/*
 * The refusal (a fresh string) when the real path REAL is or lies beneath
 * one of lev's own files (ownfiles.h), or NULL.  Whatever the workdir: with
 * the workdir at $HOME, ~/.leviath is inside it, and still no tool may touch
 * it.  TOOL is "read" or the writing tool's name.
 */
static char *own_refusal(const struct lev_fs_ctx *c, const char *path, const char *real,
			 const char *tool)
{
	_cleanup_free_ char *p = NULL, *o = NULL;
	const char *under = NULL;
	const struct lev_ownfile *e = lev_ownfiles_find(&c->own, real, &under);

	if (!e)
		return NULL;
	p = disp(path);
	o = disp(under);
	return msgf("'%s' is one of lev's own files (%s, '%s'): %s never %s lev's config, "
		    "policy, rules, keys or state, whatever the workdir; edit it yourself outside "
		    "the run", p, e->what, o, strcmp(tool, "read") ? tool : "a file tool",
		    strcmp(tool, "read") ? "writes" : "reads");
}

/* The real path a write would reach: DFD's real path, then MISSING, then NAME. */
static char *write_real(const struct lev_fs_ctx *c, int dfd, const char *dir, const char *missing,
			const char *name)
{
	_cleanup_free_ char *dreal = NULL;

	if (lev_confine_fd_path(dfd, &dreal, NULL) < 0)
		dreal = lexical_abs(c, dir);
	if (missing) {
		/* nothing of MISSING exists yet: its '..' are lexical */
		_cleanup_free_ char *j = xasprintf("%s%s%s/%s", dreal, strcmp(dreal, "/") ? "/" : "",
						   missing, name);

		return lexical_abs(c, j);
	}
	return lev_path_join(dreal, name);
}

/* Refuse T when REAL is one of lev's own files; true when refused. */
static bool refuse_own(const struct lev_fs_ctx *c, const char *tool, const char *path,
		       const char *real, struct target *t)
{
	char *msg = own_refusal(c, path, real, tool);

	if (!msg)
		return false;
	set_msg(t, T_DENY, LEV_FS_GATE_WORKDIR, msg);
	return true;
}

/*
 * Resolve PATH for write_file / edit_file (TOOL): the directory that will
 * hold it, opened confined, and its final name.  CREATE makes missing
 * parent directories (write_file running for real), only once the target
 * is known not to be one of lev's own files.
 */
static void resolve_write(struct lev_fs_ctx *c, const char *tool, const char *path, bool create,
			  bool need_real, struct target *t)
{
	_cleanup_free_ char *dir = NULL, *missing = NULL, *p = disp(path);
	const char *rel, *slash, *name;
	struct stat st;
	size_t n;
	int r;

	target_init(t);
	t->gate = LEV_FS_GATE_WORKDIR;
	if (!strcmp(path, "/dev/null")) {
		t->status = T_OK;
		t->real = xstrdup("/dev/null");
		return;
	}
	rel = to_relative(c, path);
	if (!rel || !lexically_inside(rel)) {
		t->real = lexical_abs(c, path);
		set_msg(t, T_DENY, LEV_FS_GATE_WORKDIR, msg_workdir(c, path, WHY_LEXICAL, tool));
		return;
	}
	n = strlen(rel);
	if (rel[n - 1] == '/') {
		t->real = lexical_abs(c, rel);
		set_msg(t, T_FAIL, LEV_FS_GATE_WORKDIR,
			msgf("'%s' names a directory; %s needs a file name", p, tool));
		return;
	}
	slash = strrchr(rel, '/');
	name = slash ? slash + 1 : rel;
	dir = slash ? xstrndup(rel, (size_t)(slash - rel)) : xstrdup(".");
	if (!*dir) {
		free(dir);
		dir = xstrdup(".");
	}
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		t->real = lexical_abs(c, rel);
		set_msg(t, T_FAIL, LEV_FS_GATE_WORKDIR,
			msgf("'%s' names a directory; %s needs a file name", p, tool));
		return;
	}
	if (strlen(name) > NAME_MAX) {
		t->real = lexical_abs(c, rel);
		set_msg(t, T_FAIL, LEV_FS_GATE_WORKDIR, msgf("the file name in '%s' is too long", p));
		return;
	}
	t->name = xstrdup(name);
	r = open_dir_creating(c, dir, false, &t->dfd, &missing);
	if (r == 0 && missing && create) {
		/* decide before creating anything, then create and decide again */
		_cleanup_free_ char *would = write_real(c, t->dfd, dir, missing, name);

		if (refuse_own(c, tool, path, would, t)) {
			t->real = TAKE_PTR(would);
			return;
		}
		close(t->dfd);
		t->dfd = -1;
		free(missing);
		missing = NULL;
		r = open_dir_creating(c, dir, true, &t->dfd, &missing);
	}
	if (r < 0) {
		t->real = lexical_abs(c, rel);
		if (r == -EXDEV)
			set_msg(t, T_DENY, LEV_FS_GATE_WORKDIR, msg_workdir(c, path, WHY_SYMLINK, tool));
		else if (r == -ELOOP)
			set_msg(t, T_DENY, LEV_FS_GATE_WORKDIR, msg_workdir(c, path, WHY_LOOP, tool));
		else
			fail_errno(t, LEV_FS_GATE_WORKDIR,
				   create ? "create the directory for" : "open the directory of",
				   path, r);
		return;
	}
	/* the real path is always needed: lev's own files are decided on it */
	t->real = write_real(c, t->dfd, dir, missing, name);
	(void)need_real;
	if (refuse_own(c, tool, path, t->real, t))
		return;
	if (missing) {
		/* nothing exists there yet: the tool creates it beneath dfd, confined */
		t->missing = TAKE_PTR(missing);
		t->status = T_OK;
		return;
	}
	if (fstatat(t->dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT) {
			fail_errno(t, LEV_FS_GATE_WORKDIR, "stat", path, -errno);
			return;
		}
		t->status = T_OK;
		return;
	}
	t->exists = true;
	t->mode = st.st_mode;
	if (S_ISLNK(st.st_mode)) {
		set_msg(t, T_DENY, LEV_FS_GATE_WORKDIR,
			msgf("'%s' is a symlink; %s never follows a symlink - name the file it points "
			     "to instead", p, tool));
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		set_msg(t, T_FAIL, LEV_FS_GATE_WORKDIR, msgf("'%s' is a directory", p));
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		set_msg(t, T_FAIL, LEV_FS_GATE_WORKDIR, msgf("'%s' is not a regular file", p));
		return;
	}
	t->status = T_OK;
}

/* ---- results ------------------------------------------------------------- */

void lev_fs_result_release(struct lev_fs_result *r)
{
	if (!r)
		return;
	free(r->text);
	r->text = NULL;
	r->len = 0;
	r->is_error = false;
}

static void result_error(struct lev_fs_result *out, const char *msg)
{
	out->text = xasprintf("[error] %s", msg);
	out->len = strlen(out->text);
	out->is_error = true;
}

static void result_buf(struct lev_fs_result *out, struct lev_buf *b, bool is_error)
{
	out->text = lev_buf_detach(b, &out->len);
	out->is_error = is_error;
}

/* ---- context ------------------------------------------------------------- */

int lev_fs_ctx_new(const struct lev_fs_opts *o, struct lev_fs_ctx **out, struct lev_err *err)
{
	struct lev_fs_ctx *c;
	struct stat st;
	int r;

	if (!o || !o->workdir || !o->workdir[0])
		return lev_err_set(err, -EINVAL, "no workdir");
	c = xcalloc(1, sizeof(*c));
	c->root_fd = -1;
	c->mode = o->confine;
	c->allow_blueprint = o->allow_blueprint;
	c->agent = o->agent ? xstrdup(o->agent) : NULL;
	c->config_path = o->config_path ? xstrdup(o->config_path) : NULL;
	c->root_fd = open(o->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c->root_fd < 0) {
		r = lev_err_errno(err, -errno, "cannot open the workdir '%s'", o->workdir);
		goto fail;
	}
	if (fstat(c->root_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		r = lev_err_set(err, -ENOTDIR, "the workdir '%s' is not a directory", o->workdir);
		goto fail;
	}
	r = lev_confine_fd_path(c->root_fd, &c->root_real, err);
	if (r < 0) {
		lev_err_wrap(err, "workdir '%s'", o->workdir);
		goto fail;
	}
	if (o->workdir[0] == '/') {
		c->workdir = xstrdup(o->workdir);
		{
			size_t n = strlen(c->workdir);
			while (n > 1 && c->workdir[n - 1] == '/')
				c->workdir[--n] = '\0';
		}
	}
	if (o->home) {
		c->home = xstrdup(o->home);
	} else if (lev_home_dir(&c->home, NULL) < 0) {
		c->home = NULL;
	}
	if (c->home) {
		/* match "~" entries against the home's real path */
		char *real = realpath(c->home, NULL);
		if (real) {
			free(c->home);
			c->home = real;
		}
	}
	{
		struct lev_ownfiles_opts oo = { .data_root = o->data_root,
						.config_path = o->config_path };

		if (lev_ownfiles_list(&oo, &c->own, err) < 0)
			goto fail;
		for (size_t i = 0; i < c->own.n; i++)
			if (path_under(c->own.v[i].path, c->root_real) ||
			    (c->own.v[i].real && path_under(c->own.v[i].real, c->root_real)))
				c->own_inside = true;
	}
	r = lev_readpaths_new(o->declared, c->root_real, c->home, &c->declared, err);
	if (r < 0) {
		lev_err_wrap(err, "agent '%s' [read_paths]", o->agent ? o->agent : "?");
		goto fail;
	}
	r = lev_readpaths_new(o->grants, c->root_real, c->home, &c->grants, err);
	if (r < 0) {
		lev_err_wrap(err, "read_paths grant in %s",
			     o->config_path ? o->config_path : "your config.toml");
		goto fail;
	}
	*out = c;
	return 0;
fail:
	lev_fs_ctx_free(c);
	return r;
}

int lev_fs_ctx_regrant(struct lev_fs_ctx *c, char *const *grants, bool allow_blueprint,
		       struct lev_err *err)
{
	struct lev_readpaths *g = NULL;
	int r = lev_readpaths_new(grants, c->root_real, c->home, &g, err);

	if (r < 0)
		return lev_err_wrap(err, "read_paths grant in %s",
				    c->config_path ? c->config_path : "your config.toml");
	lev_readpaths_free(c->grants);
	c->grants = g;
	c->allow_blueprint = c->allow_blueprint && allow_blueprint;
	return 0;
}

struct lev_fs_ctx *lev_fs_ctx_free(struct lev_fs_ctx *c)
{
	if (!c)
		return NULL;
	if (c->root_fd >= 0)
		close(c->root_fd);
	free(c->workdir);
	free(c->root_real);
	free(c->agent);
	free(c->home);
	free(c->config_path);
	lev_readpaths_free(c->declared);
	lev_readpaths_free(c->grants);
	lev_ownfiles_release(&c->own);
	free(c);
	return NULL;
}

const char *lev_fs_ctx_workdir(const struct lev_fs_ctx *c)
{
	return c->root_real;
}

int lev_fs_ctx_root_fd(const struct lev_fs_ctx *c)
{
	return c->root_fd;
}

bool lev_fs_ctx_read_paths_active(const struct lev_fs_ctx *c)
{
	return lev_readpaths_count(c->declared) > 0;
}

bool lev_fs_ctx_read_paths_granted(const struct lev_fs_ctx *c)
{
	return lev_readpaths_count(c->declared) > 0 &&
	       (c->allow_blueprint || lev_readpaths_count(c->grants) > 0);
}

/* ---- read_file ------------------------------------------------------------- */

/*
 * May FD (shown as P) be read as text?  False with *ERRMSG for a directory,
 * a device, a special file or one too large; true with *EMPTY for
 * /dev/null (there is nothing to read).
 */
static bool readable_text(int fd, const char *path, const char *p, bool *empty, char **errmsg)
{
	struct stat st;

	*empty = false;
	if (fstat(fd, &st) < 0) {
		*errmsg = errno_msg("stat", path, -errno);
		return false;
	}
	if (S_ISDIR(st.st_mode)) {
		*errmsg = msgf("'%s' is a directory; use list_dir", p);
		return false;
	}
	if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
		*errmsg = msgf("'%s' is not a regular file", p);
		return false;
	}
	if (S_ISCHR(st.st_mode)) {
		/* only /dev/null gets here (resolve_read never opens other devices
		 * outside; inside, a device is refused below by its size 0 read) */
		struct stat nul;
		if (stat("/dev/null", &nul) < 0 || nul.st_rdev != st.st_rdev) {
			*errmsg = msgf("'%s' is not a regular file", p);
			return false;
		}
		*empty = true;
		return true;
	}
	if ((uint64_t)st.st_size > LEV_FS_READ_FILE_MAX) {
		*errmsg = msgf("'%s' is too large (%jd bytes; read_file reads files up to %ju MiB) - "
			       "use the shell (head, tail, sed -n) to read part of it",
			       p, (intmax_t)st.st_size, (uintmax_t)(LEV_FS_READ_FILE_MAX >> 20));
		return false;
	}
	return true;
}

/* One read_file pass over a file: the lines wanted and where it stopped. */
struct text_read {
	uint64_t first, limit;		/* the first line wanted (1-based), how many (0: all) */
	size_t cap;			/* bytes of output at most */
	struct lev_buf raw;		/* the wanted lines as read */
	uint64_t line;			/* the line the next byte belongs to */
	uint64_t last_out;		/* the last line kept, 0: none */
	uint64_t nl_total, total;	/* newlines and bytes seen */
	bool truncated;			/* the cap cut the output */
	bool more;			/* lines past the limit remain */
	bool ended_nl;			/* the last byte seen was a newline */
	bool long_line;			/* one line was longer than the cap */
};

/* Take the lines of CHUNK (N bytes) that R wants; stops at the cap or the limit. */
static void take_lines(struct text_read *r, const char *chunk, size_t n)
{
	size_t pos = 0;

	while (pos < n && !r->truncated && !r->more) {
		const char *nl = memchr(chunk + pos, '\n', n - pos);
		size_t end = nl ? (size_t)(nl - chunk) + 1 : n;
		size_t seg = end - pos;

		if (r->line >= r->first && (!r->limit || r->line - r->first < r->limit)) {
			if (r->raw.len + seg > r->cap) {
				lev_buf_add(&r->raw, chunk + pos, r->cap - r->raw.len);
				r->truncated = true;
				break;
			}
			lev_buf_add(&r->raw, chunk + pos, seg);
			r->last_out = r->line;
		} else if (r->line >= r->first) {
			r->more = true;
			break;
		}
		if (nl) {
			r->line++;
			r->nl_total++;
		}
		r->ended_nl = nl != NULL;
		pos = end;
	}
}

/* Read FD (shown as P) into R until its end, the cap or the limit; false with *ERRMSG. */
static bool read_lines(int fd, const char *path, const char *p, struct text_read *r,
		       char **errmsg)
{
	_cleanup_free_ char *chunk = xmalloc(CHUNK);

	for (;;) {
		ssize_t n = read(fd, chunk, CHUNK);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			*errmsg = errno_msg("read", path, -errno);
			return false;
		}
		if (n == 0)
			return true;
		if (r->total < BINARY_SNIFF &&
		    memchr(chunk, '\0', (size_t)n < BINARY_SNIFF - r->total ? (size_t)n :
					 BINARY_SNIFF - r->total)) {
			*errmsg = msgf("'%s' looks like a binary file (it has NUL bytes); read_file "
				       "returns text only", p);
			return false;
		}
		r->total += (uint64_t)n;
		if (r->total > LEV_FS_READ_FILE_MAX) {
			*errmsg = msgf("'%s' is too large (it grew past %ju MiB while being read)", p,
				       (uintmax_t)(LEV_FS_READ_FILE_MAX >> 20));
			return false;
		}
		take_lines(r, chunk, (size_t)n);
		if (r->truncated || r->more)
			return true;
	}
}

/* How much of R's output to keep: after a cut, up to its last whole line. */
static size_t keep_whole_lines(struct text_read *r)
{
	size_t cut = r->raw.len;
	const char *lastnl;

	if (!r->truncated)
		return cut;
	lastnl = r->raw.len ? memrchr(r->raw.buf, '\n', r->raw.len) : NULL;
	r->last_out = r->first;
	if (lastnl) {
		cut = (size_t)(lastnl - r->raw.buf) + 1;
		/* last_out counted the partial line: step back to the last whole one */
		for (size_t i = 0; i + 1 < cut; i++)
			if (r->raw.buf[i] == '\n')
				r->last_out++;
	} else {
		/* one line longer than the cap: cut at a character boundary */
		while (cut > 0 && ((unsigned char)r->raw.buf[cut] & 0xc0) == 0x80)
			cut--;
		r->long_line = true;
	}
	return cut;
}

/* The notes after the text: where to read on, an offset past the end, bytes replaced. */
static void add_read_notes(struct lev_buf *out, const struct text_read *r, const char *p,
			   size_t bad)
{
	if (!r->truncated && !r->more && r->first > 1 && r->last_out == 0) {
		uint64_t lines = r->nl_total + (r->ended_nl ? 0 : 1);
		lev_buf_addf(out, "[note: offset %ju is past the end of '%s', which has %ju line%s]",
			     (uintmax_t)r->first, p, (uintmax_t)lines, lines == 1 ? "" : "s");
	}
	if (r->truncated && r->long_line)
		lev_buf_addf(out, "\n[truncated: line %ju of '%s' is longer than the %d KiB output "
			     "cap; only its start is shown. Call read_file with offset=%ju to read "
			     "on from the next line]", (uintmax_t)r->first, p, LEV_FS_READ_CAP / 1024,
			     (uintmax_t)(r->first + 1));
	else if (r->truncated)
		lev_buf_addf(out, "[truncated at the %d KiB output cap after line %ju of '%s'. "
			     "Call read_file with offset=%ju to read on]", LEV_FS_READ_CAP / 1024,
			     (uintmax_t)r->last_out, p, (uintmax_t)(r->last_out + 1));
	else if (r->more)
		lev_buf_addf(out, "[showing lines %ju-%ju of '%s'; it goes on. Call read_file "
			     "with offset=%ju to read on]", (uintmax_t)r->first,
			     (uintmax_t)r->last_out, p, (uintmax_t)(r->last_out + 1));
	if (bad)
		lev_buf_addf(out, "%s[note: %zu byte%s of '%s' %s not valid UTF-8 and %s replaced "
			     "with U+FFFD]", out->len && out->buf[out->len - 1] != '\n' ? "\n" : "",
			     bad, bad == 1 ? "" : "s", p, bad == 1 ? "was" : "were",
			     bad == 1 ? "was" : "were");
}

/*
 * Append the text of the open regular file FD (shown as PATH) to OUT,
 * lines OFFSET.. (LIMIT of them), within CAP bytes.  Returns false with an
 * error message in *ERRMSG.
 */
static bool read_text(int fd, const char *path, uint64_t offset, uint64_t limit, size_t cap,
		      struct lev_buf *out, char **errmsg)
{
	_cleanup_free_ char *p = disp(path);
	struct text_read r = {
		.first = offset ? offset : 1,
		.limit = limit,
		.cap = cap,
		.raw = LEV_BUF_INIT_MAX(cap + 8),
		.line = 1,
		.ended_nl = true,
	};
	size_t bad, cut;
	bool empty;

	if (!readable_text(fd, path, p, &empty, errmsg))
		return false;
	if (empty)
		return true;
	if (!read_lines(fd, path, p, &r, errmsg)) {
		lev_buf_release(&r.raw);
		return false;
	}
	cut = keep_whole_lines(&r);
	(void)lev_buf_add_utf8(out, r.raw.buf, cut, false, &bad);
	lev_buf_release(&r.raw);
	add_read_notes(out, &r, p, bad);
	return true;
}

/*
 * Upgrade the O_PATH fd the resolver opened (W_PATH) to one that reads
 * (W_FILE) or lists (W_DIR) the very same object: never the path again.
 * Returns the new fd, or -1 with *ERRMSG set.
 */
static int target_open(struct target *t, const char *path, enum want want, char **errmsg)
{
	_cleanup_free_ char *p = NULL;
	struct stat st;
	int fd = -1, r;

	if (t->status != T_OK) {
		*errmsg = xstrdup(t->msg ? t->msg : "refused");
		return -1;
	}
	if (t->fd >= 0 && !t->is_path) {
		/* opened for reading (or listing) by the resolver itself: that very
		 * object; the target keeps its fd for the labels (lev_fs_targets_touched) */
		fd = fcntl(t->fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			*errmsg = errno_msg("open", path, -errno);
		return fd;
	}
	if (t->fd < 0) {
		/* "/dev/null", the one path the resolver does not open */
		if (want == W_DIR) {
			*errmsg = xstrdup("'/dev/null' is not a directory");
			return -1;
		}
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			*errmsg = errno_msg("open", path, -errno);
		return fd;
	}
	if (fstat(t->fd, &st) < 0) {
		*errmsg = errno_msg("stat", path, -errno);
		return -1;
	}
	/* the path is quoted for a refusal only */
	if (want == W_DIR && !S_ISDIR(st.st_mode)) {
		*errmsg = msgf("'%s' is not a directory; use read_file", p = disp(path));
		return -1;
	}
	if (want == W_FILE && S_ISDIR(st.st_mode)) {
		*errmsg = msgf("'%s' is a directory; use list_dir", p = disp(path));
		return -1;
	}
	if (want == W_FILE && !S_ISREG(st.st_mode)) {
		/* never open a device or FIFO, even for reading */
		*errmsg = msgf("'%s' is not a regular file", p = disp(path));
		return -1;
	}
	r = lev_confine_reopen(t->fd, want_flags(want), &fd, NULL);
	if (r < 0) {
		*errmsg = errno_msg("open", path, r);
		return -1;
	}
	return fd;
}

/* Read the file the resolver opened (T) for read_file / read_files into OUT. */
static bool read_target(struct target *t, const char *path, uint64_t offset,
			uint64_t limit, size_t cap, struct lev_buf *out, char **errmsg)
{
	_cleanup_close_ int fd = target_open(t, path, W_FILE, errmsg);

	if (fd < 0)
		return false;
	return read_text(fd, path, offset, limit, cap, out, errmsg);
}

/* Read one file for read_file / read_files into OUT. */
static bool read_one(struct lev_fs_ctx *c, const char *path, uint64_t offset, uint64_t limit,
		     size_t cap, struct lev_buf *out, char **errmsg)
{
	struct target t;
	bool ok;

	resolve_read(c, path, W_FILE, false, &t);
	ok = read_target(&t, path, offset, limit, cap, out, errmsg);
	target_release(&t);
	return ok;
}

void lev_fs_read_file(struct lev_fs_ctx *c, const char *path, uint64_t offset, uint64_t limit,
		      struct lev_fs_result *out)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(2 * LEV_FS_READ_CAP + MSG_MAX);
	_cleanup_free_ char *bad = bad_path(path, path ? strlen(path) : 0), *emsg = NULL;

	if (bad) {
		result_error(out, bad);
		return;
	}
	if (!read_one(c, path, offset, limit, LEV_FS_READ_CAP, &b, &emsg)) {
		lev_buf_release(&b);
		result_error(out, emsg);
		return;
	}
	result_buf(out, &b, false);
}

/* read_files over PATHS; TS, when given, holds the targets the gate resolved. */
static void read_files_do(struct lev_fs_ctx *c, const char *const *paths, size_t n,
			  struct target *ts, struct lev_fs_result *out)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(2 * LEV_FS_READ_CAP +
					    (LEV_FS_READ_FILES_MAX + 1) * (MSG_MAX + PATH_MAX * 4));
	size_t i, failed = 0, used = 0;

	if (!n) {
		result_error(out, "read_files needs at least one path");
		return;
	}
	if (n > LEV_FS_READ_FILES_MAX) {
		char *m = msgf("read_files reads at most %d files per call (%zu given)",
			       LEV_FS_READ_FILES_MAX, n);
		result_error(out, m);
		free(m);
		return;
	}
	for (i = 0; i < n; i++) {
		const char *p = paths[i];
		_cleanup_free_ char *d = disp(p ? p : ""), *bad = bad_path(p, p ? strlen(p) : 0);
		_cleanup_free_ char *emsg = NULL;
		size_t before;

		lev_buf_addf(&b, "%s### [%s]\n", i ? "\n" : "", d);
		before = b.len;
		if (bad) {
			lev_buf_addf(&b, "[error] %s\n", bad);
			failed++;
			continue;
		}
		if (used >= LEV_FS_READ_CAP) {
			lev_buf_addf(&b, "[error] not read: the %d KiB output cap of read_files was "
				     "reached; read it with read_file\n", LEV_FS_READ_CAP / 1024);
			failed++;
			continue;
		}
		if (ts ? !read_target(&ts[i], p, 0, 0, LEV_FS_READ_CAP - used, &b, &emsg)
		       : !read_one(c, p, 0, 0, LEV_FS_READ_CAP - used, &b, &emsg)) {
			lev_buf_truncate(&b, before);
			lev_buf_addf(&b, "[error] %s\n", emsg);
			failed++;
			continue;
		}
		used += b.len - before;
		if (b.len == before || b.buf[b.len - 1] != '\n')
			lev_buf_addch(&b, '\n');
	}
	result_buf(out, &b, failed == n);
}

void lev_fs_read_files(struct lev_fs_ctx *c, const char *const *paths, size_t n,
		       struct lev_fs_result *out)
{
	read_files_do(c, paths, n, NULL, out);
}

/* ---- list_dir -------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* list_dir of the directory the resolver opened (T). */
static void list_target(struct target *t, const char *path, struct lev_fs_result *out)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(2 * LEV_FS_READ_CAP + MSG_MAX);
	_cleanup_free_ char *emsg = NULL;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, i, hidden = 0;
	bool flagged = false, capped = false;
	int fd;
	DIR *d;

	fd = target_open(t, path, W_DIR, &emsg);
	if (fd < 0) {
		result_error(out, emsg);
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		char *m = errno_msg("list", path, -errno);
		result_error(out, m);
		free(m);
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n >= LEV_FS_LIST_MAX) {
			hidden++;
			continue;
		}
		{
			struct lev_buf e = LEV_BUF_INIT_MAX(4 * NAME_MAX + 64);
			unsigned char type = de->d_type;
			bool odd = !utf8_valid(de->d_name, strlen(de->d_name));
			const char *s;

			for (s = de->d_name; *s && !odd; s++)
				if ((unsigned char)*s < 0x20 || *s == 0x7f)
					odd = true;
			add_disp(&e, de->d_name);
			if (type == DT_UNKNOWN) {
				struct stat st;
				if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
					type = IFTODT(st.st_mode);
			}
			switch (type) {
			case DT_DIR: lev_buf_addch(&e, '/'); break;
			case DT_LNK: lev_buf_addch(&e, '@'); break;
			case DT_FIFO: lev_buf_addch(&e, '|'); break;
			case DT_SOCK: lev_buf_addch(&e, '='); break;
			case DT_CHR:
			case DT_BLK: lev_buf_addch(&e, '#'); break;
			default: break;
			}
			if (odd) {
				lev_buf_adds(&e, "  [name is not plain UTF-8 text; shown escaped]");
				flagged = true;
			}
			names = xreallocarray(names, n + 1, sizeof(*names));
			names[n++] = lev_buf_detach(&e, NULL);
		}
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		if (!capped && b.len + strlen(names[i]) + 1 > LEV_FS_READ_CAP) {
			capped = true;
			hidden += n - i;
		}
		if (!capped)
			lev_buf_addf(&b, "%s\n", names[i]);
		free(names[i]);
	}
	free(names);
	if (!n)
		lev_buf_adds(&b, "(empty directory)\n");
	if (hidden)
		lev_buf_addf(&b, "[%zu more entries not shown: the listing is capped at %d entries "
			     "or %d KiB]\n", hidden, LEV_FS_LIST_MAX, LEV_FS_READ_CAP / 1024);
	if (flagged)
		lev_buf_adds(&b, "[names flagged above cannot be passed to the file tools as "
			     "written; use the shell]\n");
	result_buf(out, &b, false);
}

void lev_fs_list_dir(struct lev_fs_ctx *c, const char *path, struct lev_fs_result *out)
{
	_cleanup_free_ char *bad = NULL;
	struct target t;

	if (!path)
		path = ".";
	bad = bad_path(path, strlen(path));
	if (bad) {
		result_error(out, bad);
		return;
	}
	resolve_read(c, path, W_DIR, false, &t);
	list_target(&t, path, out);
	target_release(&t);
}

/* ---- write_file / edit_file ------------------------------------------------ */

/*
 * Replace NAME in the directory DFD with DATA: O_EXCL temporary file, write,
 * fsync, rename, fsync the directory.  KEEP_MODE (when EXISTED) is the old
 * file's permission bits.  Returns 0 or a negative errno.
 */
static int atomic_replace(int dfd, const char *name, const char *data, size_t len, bool existed,
			  mode_t keep_mode)
{
	char tmp[64];
	int fd = -1, r = 0, tries;

	for (tries = 0; tries < 32; tries++) {
		unsigned char rnd[8];
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -EIO;
		snprintf(tmp, sizeof(tmp), ".lev-tmp-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0],
			 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0)
		return -errno;
	r = lev_write_all(fd, data, len);
	if (r == 0 && existed && fchmod(fd, keep_mode & 07777) < 0)
		r = -errno;
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return r;
	}
	(void)fsync(dfd);
	return 0;
}

/*
 * Create T's missing directories beneath its directory fd, one component at
 * a time, never following a symlink, and move T's dfd to the last one.
 */
static int make_missing(struct target *t)
{
	_cleanup_free_ char *rest = t->missing;
	char *save = NULL, *comp;

	t->missing = NULL;
	for (comp = strtok_r(rest, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		int fd;

		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, ".."))
			return -EINVAL;
		if (mkdirat(t->dfd, comp, 0777) < 0 && errno != EEXIST)
			return -errno;
		fd = openat(t->dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		close(t->dfd);
		t->dfd = fd;
	}
	return 0;
}

/*
 * write_file into the directory the resolver opened (T): nothing of the
 * path is resolved again; the final name is looked at without following it.
 */
static void write_target(struct target *t, const char *path, const char *content, size_t len,
			 struct lev_fs_result *out)
{
	_cleanup_free_ char *p = disp(path);
	struct stat st;
	int r;

	if (t->status != T_OK) {
		result_error(out, t->msg);
		return;
	}
	if (t->dfd < 0) {	/* /dev/null */
		out->text = msgf("wrote %zu bytes to '%s'", len, p);
		out->len = strlen(out->text);
		out->is_error = false;
		return;
	}
	if (t->missing) {
		r = make_missing(t);
		if (r < 0) {
			char *m = errno_msg("create the directory for", path, r);
			result_error(out, m);
			free(m);
			return;
		}
		t->exists = false;
	} else if (fstatat(t->dfd, t->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode)) {
			char *m = S_ISLNK(st.st_mode)
					  ? msgf("'%s' is a symlink; write_file never follows a "
						 "symlink - name the file it points to instead", p)
					  : msgf("'%s' is not a regular file", p);
			result_error(out, m);
			free(m);
			return;
		}
		t->exists = true;
		t->mode = st.st_mode;
	} else {
		t->exists = false;
	}
	r = atomic_replace(t->dfd, t->name, content ? content : "", len, t->exists, t->mode);
	if (r < 0) {
		char *m = errno_msg("write", path, r);
		result_error(out, m);
		free(m);
	} else {
		out->text = msgf("%s '%s' (%zu bytes)", t->exists ? "updated" : "created", p, len);
		out->len = strlen(out->text);
		out->is_error = false;
	}
}

void lev_fs_write_file(struct lev_fs_ctx *c, const char *path, const char *content, size_t len,
		       struct lev_fs_result *out)
{
	_cleanup_free_ char *bad = bad_path(path, path ? strlen(path) : 0);
	struct target t;

	if (bad) {
		result_error(out, bad);
		return;
	}
	if (len > LEV_FS_WRITE_MAX) {
		char *m = msgf("content is too large (%zu bytes; write_file writes at most %zu MiB)",
			       len, LEV_FS_WRITE_MAX >> 20);
		result_error(out, m);
		free(m);
		return;
	}
	resolve_write(c, lev_tooltable_name(LEV_OP_WRITE_FILE), path, false, false, &t);
	write_target(&t, path, content, len, out);
	target_release(&t);
}

static size_t count_occurrences(const char *hay, size_t hn, const char *needle, size_t nn,
				size_t *first)
{
	size_t count = 0, i = 0;

	while (i + nn <= hn) {
		const char *f = memmem(hay + i, hn - i, needle, nn);
		if (!f)
			break;
		if (!count)
			*first = (size_t)(f - hay);
		count++;
		i = (size_t)(f - hay) + 1;	/* overlapping occurrences count */
	}
	return count;
}

/* edit_file of the file in the directory the resolver opened (T). */
static void edit_target(const struct target *t, const char *path, const char *old_str,
			size_t old_len, const char *new_str, size_t new_len,
			struct lev_fs_result *out)
{
	_cleanup_free_ char *p = disp(path);
	_cleanup_free_ char *data = NULL;
	struct lev_buf nb = LEV_BUF_INIT_MAX(LEV_FS_EDIT_FILE_MAX + LEV_FS_WRITE_MAX);
	struct lev_err e = LEV_ERR_INIT;
	_cleanup_close_ int fd = -1;
	size_t dlen = 0, count, at = 0;
	struct stat st;
	char *m = NULL;
	int r;

	if (!old_str || !old_len) {
		result_error(out, "old_str is empty; give the exact text to replace");
		return;
	}
	if (new_len > LEV_FS_WRITE_MAX) {
		result_error(out, "new_str is too large");
		return;
	}
	if (t->status != T_OK) {
		result_error(out, t->msg);
		return;
	}
	if (t->dfd < 0) {
		result_error(out, "'/dev/null' cannot be edited");
		return;
	}
	if (!t->exists || t->missing) {
		m = msgf("'%s' does not exist; create it with write_file", p);
		goto fail;
	}
	fd = openat(t->dfd, t->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		m = errno_msg("open", path, -errno);
		goto fail;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		m = msgf("'%s' is not a regular file", p);
		goto fail;
	}
	r = lev_read_fd(fd, path, LEV_FS_EDIT_FILE_MAX, &data, &dlen, &e);
	if (r < 0) {
		m = r == -EFBIG ? msgf("'%s' is too large for edit_file (the limit is %zu MiB)", p,
				       LEV_FS_EDIT_FILE_MAX >> 20)
				: msgf("cannot read '%s': %s", p, e.msg);
		goto fail;
	}
	if (memchr(data, '\0', dlen < BINARY_SNIFF ? dlen : BINARY_SNIFF)) {
		m = msgf("'%s' looks like a binary file (it has NUL bytes); edit_file edits text "
			 "only", p);
		goto fail;
	}
	count = count_occurrences(data, dlen, old_str, old_len, &at);
	if (count == 0) {
		m = msgf("old_str was not found in '%s'; read the file and copy the exact text, "
			 "whitespace included", p);
		goto fail;
	}
	if (count > 1) {
		m = msgf("old_str occurs %zu times in '%s'; include more of the surrounding text so "
			 "it matches exactly once", count, p);
		goto fail;
	}
	if (lev_buf_add(&nb, data, at) < 0 || lev_buf_add(&nb, new_str, new_len) < 0 ||
	    lev_buf_add(&nb, data + at + old_len, dlen - at - old_len) < 0) {
		m = msgf("the edited '%s' would be too large", p);
		goto fail;
	}
	r = atomic_replace(t->dfd, t->name, nb.buf, nb.len, true, st.st_mode);
	if (r < 0) {
		m = errno_msg("write", path, r);
		goto fail;
	}
	out->text = msgf("edited '%s': replaced 1 occurrence (%zu bytes -> %zu bytes)", p, old_len,
			 new_len);
	out->len = strlen(out->text);
	out->is_error = false;
	lev_buf_release(&nb);
	return;
fail:
	result_error(out, m);
	free(m);
	lev_buf_release(&nb);
}

void lev_fs_edit_file(struct lev_fs_ctx *c, const char *path, const char *old_str, size_t old_len,
		      const char *new_str, size_t new_len, struct lev_fs_result *out)
{
	_cleanup_free_ char *bad = bad_path(path, path ? strlen(path) : 0);
	struct target t;

	if (bad) {
		result_error(out, bad);
		return;
	}
	if (!old_str || !old_len) {
		result_error(out, "old_str is empty; give the exact text to replace");
		return;
	}
	resolve_write(c, lev_tooltable_name(LEV_OP_EDIT_FILE), path, false, false, &t);
	edit_target(&t, path, old_str, old_len, new_str, new_len, out);
	target_release(&t);
}

int lev_fs_open_read(struct lev_fs_ctx *c, const char *path, bool want_dir, int *fd_out,
		     struct lev_err *err)
{
	_cleanup_free_ char *bad = bad_path(path, path ? strlen(path) : 0);
	struct target t;
	struct stat st;
	int r;

	if (bad)
		return lev_err_set(err, -EINVAL, "%s", bad);
	resolve_read(c, path, want_dir ? W_DIR : W_FILE, false, &t);
	if (t.status != T_OK) {
		r = lev_err_set(err, t.status == T_DENY ? LEV_EDENIED : t.errnum, "%s", t.msg);
		target_release(&t);
		return r;
	}
	if (t.fd < 0 || fstat(t.fd, &st) < 0) {
		target_release(&t);
		return lev_err_set(err, -EIO, "cannot open '%s'", path);
	}
	if (!want_dir && !S_ISREG(st.st_mode) && strcmp(path, "/dev/null")) {
		bool dir = S_ISDIR(st.st_mode);

		r = lev_err_set(err, dir ? -EISDIR : -EINVAL, "'%s' is %s", path,
				dir ? "a directory" : "not a regular file");
		target_release(&t);
		return r;
	}
	*fd_out = TAKE_FD(t.fd);
	target_release(&t);
	return 0;
}

/* ---- JSON entry ------------------------------------------------------------ */

bool lev_fs_is_tool(const char *name)
{
	return fs_op(name) != LEV_OP_NONE;
}

/* Fetch string KEY of ARGS; returns NULL and sets *MSG when wrong. */
static const char *arg_str(const char *tool, const json_t *args, const char *key, bool required,
			   size_t *len, char **msg)
{
	const json_t *v = json_is_object(args) ? json_object_get(args, key) : NULL;
	const char *s;

	if (!v || json_is_null(v)) {
		if (required)
			*msg = msgf("%s: missing argument '%s'", tool, key);
		return NULL;
	}
	if (!json_is_string(v)) {
		*msg = msgf("%s: argument '%s' must be a string", tool, key);
		return NULL;
	}
	s = json_string_value(v);
	*len = json_string_length(v);
	if (memchr(s, '\0', *len)) {
		*msg = msgf("%s: argument '%s' contains a NUL byte", tool, key);
		return NULL;
	}
	return s;
}

static bool arg_uint(const char *tool, const json_t *args, const char *key, uint64_t *out,
		     char **msg)
{
	const json_t *v = json_is_object(args) ? json_object_get(args, key) : NULL;

	*out = 0;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		*msg = msgf("%s: argument '%s' must be a non-negative integer", tool, key);
		return false;
	}
	*out = (uint64_t)json_integer_value(v);
	return true;
}

static void result_msg_error(struct lev_fs_result *out, char *m)
{
	result_error(out, m);
	free(m);
}

void lev_fs_call(struct lev_fs_ctx *c, const char *tool, const json_t *args,
		 struct lev_fs_result *out)
{
	enum lev_tool_op op = fs_op(tool);
	char *m = NULL;
	size_t len = 0, l2 = 0, l3 = 0;
	const char *path;

	memset(out, 0, sizeof(*out));
	if (op == LEV_OP_NONE) {
		result_msg_error(out, msgf("'%s' is not a file tool", tool ? tool : ""));
		return;
	}
	if (args && !json_is_object(args)) {
		result_msg_error(out, msgf("%s: arguments must be a JSON object", tool));
		return;
	}
	if (op == LEV_OP_READ_FILES) {
		const json_t *arr = args ? json_object_get(args, "paths") : NULL;
		const char **paths;
		size_t i, n;

		if (!json_is_array(arr)) {
			result_msg_error(out, msgf("read_files: argument 'paths' must be an array of "
						   "strings"));
			return;
		}
		n = json_array_size(arr);
		if (n > LEV_FS_READ_FILES_MAX) {
			lev_fs_read_files(c, NULL, n, out);
			return;
		}
		paths = xcalloc(n ? n : 1, sizeof(*paths));
		for (i = 0; i < n; i++) {
			const json_t *v = json_array_get(arr, i);
			if (!json_is_string(v) ||
			    memchr(json_string_value(v), '\0', json_string_length(v))) {
				free(paths);
				result_msg_error(out, msgf("read_files: paths[%zu] must be a string "
							   "without NUL bytes", i));
				return;
			}
			paths[i] = json_string_value(v);
		}
		lev_fs_read_files(c, paths, n, out);
		free(paths);
		return;
	}
	path = arg_str(tool, args, "path", op != LEV_OP_LIST_DIR, &len, &m);
	if (m) {
		result_msg_error(out, m);
		return;
	}
	if (op == LEV_OP_LIST_DIR) {
		lev_fs_list_dir(c, path, out);
	} else if (op == LEV_OP_READ_FILE) {
		uint64_t offset, limit;
		if (!arg_uint(tool, args, "offset", &offset, &m) ||
		    !arg_uint(tool, args, "limit", &limit, &m)) {
			result_msg_error(out, m);
			return;
		}
		lev_fs_read_file(c, path, offset, limit, out);
	} else if (op == LEV_OP_WRITE_FILE) {
		const char *content = arg_str(tool, args, "content", true, &l2, &m);
		if (m) {
			/* content may legitimately hold NUL bytes: allow them */
			const json_t *v = json_object_get(args, "content");
			if (!json_is_string(v)) {
				result_msg_error(out, m);
				return;
			}
			free(m);
			m = NULL;
			content = json_string_value(v);
			l2 = json_string_length(v);
		}
		lev_fs_write_file(c, path, content, l2, out);
	} else {
		const char *o = arg_str(tool, args, "old_str", true, &l2, &m), *nw = NULL;
		if (!m)
			nw = arg_str(tool, args, "new_str", true, &l3, &m);
		if (m) {
			result_msg_error(out, m);
			return;
		}
		lev_fs_edit_file(c, path, o, l2, nw, l3, out);
	}
}

/* ---- check ------------------------------------------------------------------- */

void lev_fs_decision_release(struct lev_fs_decision *d)
{
	if (!d)
		return;
	free(d->reason);
	free(d->path);
	memset(d, 0, sizeof(*d));
}

static char *allow_reason(const struct lev_fs_ctx *c, const char *path, const struct target *t)
{
	_cleanup_free_ char *p = NULL;
	long di, gi;

	if (t->gate == LEV_FS_GATE_WORKDIR) {
		/* every call inside the workdir says so: put together without printf,
		 * in one buffer */
		struct lev_buf b = LEV_BUF_INIT_MAX(MSG_MAX);

		(void)lev_buf_grow(&b, strlen(path) + 40);
		(void)lev_buf_addch(&b, '\'');
		add_disp(&b, path);
		(void)lev_buf_adds(&b, "' is inside the working directory");
		return lev_buf_detach(&b, NULL);
	}
	p = disp(path);
	di = lev_readpaths_find(c->declared, t->real);
	gi = lev_readpaths_find(c->grants, t->real);
	if (c->allow_blueprint && gi < 0)
		return msgf("'%s' matches this agent's [read_paths] entry '%s', and "
			    "allow_blueprint_read_paths = true honours it", p,
			    di >= 0 ? lev_readpaths_entry(c->declared, (size_t)di) : "?");
	return msgf("'%s' matches this agent's [read_paths] entry '%s' and your grant '%s'", p,
		    di >= 0 ? lev_readpaths_entry(c->declared, (size_t)di) : "?",
		    gi >= 0 ? lev_readpaths_entry(c->grants, (size_t)gi) : "?");
}

struct lev_fs_targets {
	bool write;
	size_t n;
	struct target *t;	/* one per path of the call, in order (allocated with the struct) */
	char **paths;		/* the paths as given */
};

struct lev_fs_targets *lev_fs_targets_free(struct lev_fs_targets *ts)
{
	if (!ts)
		return NULL;
	for (size_t i = 0; i < ts->n; i++)
		target_release(&ts->t[i]);
	lev_strv_free(ts->paths);
	free(ts);
	return NULL;
}

bool lev_fs_targets_outside(const struct lev_fs_targets *ts)
{
	for (size_t i = 0; ts && i < ts->n; i++)
		if (ts->t[i].status == T_OK && ts->t[i].gate == LEV_FS_GATE_READ_PATHS)
			return true;
	return false;
}

void lev_fs_touched_free(struct lev_fs_touched *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++) {
		if (t[i].fd >= 0)
			close(t[i].fd);
		free(t[i].real);
	}
	free(t);
}

/* The file a write target wrote, opened afresh beneath its directory fd, or -1. */
static int open_written(const struct target *t)
{
	if (t->dfd < 0 || !t->name || t->missing)
		return -1;
	return openat(t->dfd, t->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
}

size_t lev_fs_targets_touched(const struct lev_fs_targets *ts, struct lev_fs_touched **out)
{
	struct lev_fs_touched *v = NULL;
	size_t n = 0;

	for (size_t i = 0; ts && i < ts->n; i++) {
		const struct target *t = &ts->t[i];
		struct lev_fs_touched one = { .fd = -1, .written = ts->write };
		struct stat st;

		if (t->status == T_DENY)
			continue;
		one.fd = ts->write ? open_written(t)
			 : t->fd >= 0 ? fcntl(t->fd, F_DUPFD_CLOEXEC, 0) : -1;
		if (one.fd < 0)
			continue;
		if (fstat(one.fd, &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) ||
		    lev_confine_fd_path(one.fd, &one.real, NULL) < 0) {
			close(one.fd);
			continue;
		}
		one.dir = S_ISDIR(st.st_mode);
		v = xreallocarray(v, n + 1, sizeof(*v));
		v[n++] = one;
	}
	*out = v;
	return n;
}

/* The paths of TOOL's call ARGS (a strv), or LEV_EUSAGE for ones no tool can use. */
static int call_paths(const char *tool, const json_t *args, char ***out, struct lev_err *err)
{
	const json_t *v;
	char **paths = NULL;
	size_t i;
	enum lev_tool_op op = fs_op(tool);

	if (op == LEV_OP_NONE)
		return lev_err_set(err, LEV_EUSAGE, "'%s' is not a file tool", tool ? tool : "");
	if (args && !json_is_object(args))
		return lev_err_set(err, LEV_EUSAGE, "%s: arguments must be a JSON object", tool);
	if (op != LEV_OP_READ_FILES) {
		v = args ? json_object_get(args, "path") : NULL;
		if (!v && op == LEV_OP_LIST_DIR) {
			*out = lev_strv_push(NULL, ".");
			return 0;
		}
		if (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)))
			return lev_err_set(err, LEV_EUSAGE, "%s: 'path' must be a string without NUL "
					   "bytes", tool);
		*out = lev_strv_push(NULL, json_string_value(v));
		return 0;
	}
	v = args ? json_object_get(args, "paths") : NULL;
	if (!json_is_array(v) || !json_array_size(v))
		return lev_err_set(err, LEV_EUSAGE, "read_files: 'paths' must be a non-empty array");
	if (json_array_size(v) > LEV_FS_READ_FILES_MAX)
		return lev_err_set(err, LEV_EUSAGE, "read_files: at most %d paths",
				   LEV_FS_READ_FILES_MAX);
	for (i = 0; i < json_array_size(v); i++) {
		const json_t *s = json_array_get(v, i);

		if (!json_is_string(s) || memchr(json_string_value(s), '\0', json_string_length(s))) {
			lev_strv_free(paths);
			return lev_err_set(err, LEV_EUSAGE, "read_files: paths[%zu] must be a string "
					   "without NUL bytes", i);
		}
		paths = lev_strv_push(paths, json_string_value(s));
	}
	*out = paths;
	return 0;
}

/* Fill OUT from the resolved target T of PATH. */
static void decision_of(const struct lev_fs_ctx *c, const char *path, struct target *t,
			struct lev_fs_decision *out)
{
	memset(out, 0, sizeof(*out));
	out->gate = t->gate ? t->gate : LEV_FS_GATE_WORKDIR;
	out->path = t->real ? xstrdup(t->real) : NULL;
	if (t->status == T_DENY) {
		out->verdict = LEV_DENY;
		out->reason = xstrdup(t->msg);
	} else {
		out->verdict = LEV_ALLOW;
		if (t->status == T_FAIL) {
			_cleanup_free_ char *base = allow_reason(c, path, t);
			out->reason = msgf("%s (but the call would fail: %s)", base, t->msg);
		} else {
			out->reason = allow_reason(c, path, t);
		}
	}
}

int lev_fs_decide(struct lev_fs_ctx *c, const char *tool, const json_t *args, bool real_paths,
		  struct lev_fs_decision *out, struct lev_fs_targets **targets_out,
		  struct lev_err *err)
{
	enum want want = fs_op(tool) == LEV_OP_LIST_DIR ? W_DIR : W_FILE;
	struct lev_fs_targets *ts;
	char **paths = NULL;
	size_t i, pick = 0;
	bool picked = false;
	int r;

	r = call_paths(tool, args, &paths, err);
	if (r < 0)
		return r;
	for (i = 0; paths[i]; i++) {
		_cleanup_free_ char *bad = bad_path(paths[i], strlen(paths[i]));

		if (bad) {
			lev_strv_free(paths);
			return lev_err_set(err, LEV_EUSAGE, "%s", bad);
		}
	}
	i = lev_strv_len(paths);
	/* the targets in the same allocation as the struct: one per call (not
	 * calloc: one allocator path less on every call, bench/cg-gates.sh) */
	ts = xmalloc(sizeof(*ts) + i * sizeof(*ts->t));
	memset(ts, 0, sizeof(*ts) + i * sizeof(*ts->t));
	ts->write = is_write_tool(tool);
	ts->n = i;
	ts->t = (struct target *)(ts + 1);
	ts->paths = paths;
	for (i = 0; i < ts->n; i++) {
		if (ts->write)
			resolve_write(c, tool, paths[i], false, real_paths, &ts->t[i]);
		else
			resolve_read(c, paths[i], want, real_paths, &ts->t[i]);
	}
	/*
	 * The call's decision: the first path refused (read_files is refused
	 * as a whole: nothing is read when any path is refused); else the
	 * first path that needed [read_paths], else the last path.
	 */
	for (i = 0; i < ts->n && !picked; i++)
		if (ts->t[i].status == T_DENY) {
			pick = i;
			picked = true;
		}
	for (i = 0; i < ts->n && !picked; i++)
		if (ts->t[i].status != T_DENY && ts->t[i].gate == LEV_FS_GATE_READ_PATHS) {
			pick = i;
			picked = true;
		}
	if (!picked)
		pick = ts->n - 1;
	decision_of(c, paths[pick], &ts->t[pick], out);
	if (targets_out)
		*targets_out = ts;
	else
		lev_fs_targets_free(ts);
	return 0;
}

void lev_fs_run(struct lev_fs_ctx *c, const char *tool, const json_t *args,
		struct lev_fs_targets *ts, struct lev_fs_result *out)
{
	enum lev_tool_op op = fs_op(tool);
	char *m = NULL;
	size_t l2 = 0, l3 = 0;
	const char *path;

	(void)c;
	memset(out, 0, sizeof(*out));
	if (!ts || !ts->n || op == LEV_OP_NONE) {
		result_error(out, "the call's paths were not resolved");
		return;
	}
	path = ts->paths[0];
	if (op == LEV_OP_READ_FILES) {
		read_files_do(c, (const char *const *)ts->paths, ts->n, ts->t, out);
	} else if (op == LEV_OP_LIST_DIR) {
		list_target(&ts->t[0], path, out);
	} else if (op == LEV_OP_READ_FILE) {
		struct lev_buf b = LEV_BUF_INIT_MAX(2 * LEV_FS_READ_CAP + MSG_MAX);
		_cleanup_free_ char *emsg = NULL;
		uint64_t offset, limit;

		if (!arg_uint(tool, args, "offset", &offset, &m) ||
		    !arg_uint(tool, args, "limit", &limit, &m)) {
			result_msg_error(out, m);
			return;
		}
		if (!read_target(&ts->t[0], path, offset, limit, LEV_FS_READ_CAP, &b, &emsg)) {
			lev_buf_release(&b);
			result_error(out, emsg);
			return;
		}
		result_buf(out, &b, false);
	} else if (op == LEV_OP_WRITE_FILE) {
		const json_t *v = json_object_get(args, "content");

		if (!json_is_string(v)) {
			result_msg_error(out, msgf("%s: argument 'content' must be a string", tool));
			return;
		}
		l2 = json_string_length(v);
		if (l2 > LEV_FS_WRITE_MAX) {
			result_msg_error(out, msgf("content is too large (%zu bytes; write_file "
						   "writes at most %zu MiB)", l2,
						   LEV_FS_WRITE_MAX >> 20));
			return;
		}
		write_target(&ts->t[0], path, json_string_value(v), l2, out);
	} else {
		const char *o = arg_str(tool, args, "old_str", true, &l2, &m), *nw = NULL;

		if (!m)
			nw = arg_str(tool, args, "new_str", true, &l3, &m);
		if (m) {
			result_msg_error(out, m);
			return;
		}
		edit_target(&ts->t[0], path, o, l2, nw, l3, out);
	}
}

int lev_fs_check(struct lev_fs_ctx *c, const char *tool, const char *path,
		 struct lev_fs_decision *out, struct lev_err *err)
{
	_cleanup_free_ char *bad = NULL;
	struct target t;

	if (!lev_fs_is_tool(tool))
		return lev_err_set(err, LEV_EUSAGE, "'%s' is not a file tool", tool ? tool : "");
	if (!path)
		path = ".";
	bad = bad_path(path, strlen(path));
	if (bad)
		return lev_err_set(err, LEV_EUSAGE, "%s", bad);
	if (is_write_tool(tool))
		resolve_write(c, tool, path, false, true, &t);
	else
		resolve_read(c, path, W_PATH, true, &t);
	decision_of(c, path, &t, out);
	target_release(&t);
	return 0;
}

int lev_fs_check_call(struct lev_fs_ctx *c, const char *tool, const json_t *args,
		      struct lev_fs_decision *out, struct lev_err *err)
{
	return lev_fs_decide(c, tool, args, true, out, NULL, err);
}
