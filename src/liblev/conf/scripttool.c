/*
 * scripttool.c - the headers of a blueprint's Lua script tools.  See scripttool.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/scripttool.h"

static const char *const type_names[] = {
	[LEV_SCRIPT_STRING] = "string", [LEV_SCRIPT_NUMBER] = "number",
	[LEV_SCRIPT_INTEGER] = "integer", [LEV_SCRIPT_BOOLEAN] = "boolean",
	[LEV_SCRIPT_ARRAY] = "array", [LEV_SCRIPT_OBJECT] = "object",
};

const char *lev_script_type_name(enum lev_script_type t)
{
	return (size_t)t < ARRAY_SIZE(type_names) ? type_names[t] : "string";
}

const char *lev_script_needs_text(unsigned needs)
{
	switch (needs & (LEV_SCRIPT_NEEDS_NETWORK | LEV_SCRIPT_NEEDS_SHELL)) {
	case LEV_SCRIPT_NEEDS_NETWORK | LEV_SCRIPT_NEEDS_SHELL:
		return "network, shell";
	case LEV_SCRIPT_NEEDS_NETWORK:
		return "network";
	case LEV_SCRIPT_NEEDS_SHELL:
		return "shell";
	default:
		return "nothing";
	}
}

/* The line being read: where its words are, for FILE:LINE:COL. */
struct hdr {
	const char *file;
	const char *line;	/* start of the line */
	const char *p;		/* the cursor */
	const char *end;	/* end of the line */
	unsigned lineno;
	struct lev_script_tool *t;
	struct lev_err *err;
};

static int fail(struct hdr *h, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct hdr *h, const char *at, const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(1024);
	va_list ap;
	int r;

	va_start(ap, fmt);
	(void)lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	r = lev_err_set(h->err, LEV_EPARSE, "%s:%u:%u: %s", h->file, h->lineno,
			(unsigned)(at - h->line) + 1, b.buf);
	lev_buf_release(&b);
	return r;
}

static void skip_space(struct hdr *h)
{
	while (h->p < h->end && (*h->p == ' ' || *h->p == '\t'))
		h->p++;
}

/* The next word ([^ \t,]+), or NULL at the end of the line. */
static char *word(struct hdr *h, const char **at)
{
	const char *s;

	skip_space(h);
	s = h->p;
	while (h->p < h->end && *h->p != ' ' && *h->p != '\t' && *h->p != ',' && *h->p != '\r')
		h->p++;
	*at = s;
	return h->p > s ? xstrndup(s, (size_t)(h->p - s)) : NULL;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > LEV_SCRIPTTOOL_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* The rest of the line, trimmed (printable: control bytes become spaces). */
static char *rest(struct hdr *h)
{
	const char *e = h->end;
	char *s;

	skip_space(h);
	while (e > h->p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	s = xstrndup(h->p, (size_t)(e - h->p));
	for (char *q = s; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = ' ';
	h->p = h->end;
	return s;
}

static int dir_tool(struct hdr *h, const char *stem)
{
	const char *at;
	_cleanup_free_ char *n = word(h, &at);

	if (h->t->name)
		return fail(h, at, "a second @tool");
	if (!n || !name_ok(n))
		return fail(h, at, "@tool needs a name of 1 to %d bytes of [A-Za-z0-9_-]",
			    LEV_SCRIPTTOOL_NAME_MAX);
	if (strcmp(n, stem))
		return fail(h, at, "the tool '%s' must be in a file named '%s.lua'", n, n);
	skip_space(h);
	if (h->p < h->end && *h->p != '\r')
		return fail(h, h->p, "@tool takes one name");
	h->t->name = TAKE_PTR(n);
	return 0;
}

static int param_text(struct hdr *h, struct lev_script_param *p)
{
	const char *s;

	skip_space(h);
	if (h->p >= h->end || *h->p == '\r') {
		p->description = xstrdup("");
		return 0;
	}
	if (*h->p != '"')
		return fail(h, h->p, "the parameter's description goes in double quotes");
	s = ++h->p;
	while (h->p < h->end && *h->p != '"')
		h->p++;
	if (h->p >= h->end)
		return fail(h, s - 1, "the description has no closing quote");
	p->description = xstrndup(s, (size_t)(h->p - s));
	for (char *q = p->description; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = ' ';
	h->p++;
	skip_space(h);
	if (h->p < h->end && *h->p != '\r')
		return fail(h, h->p, "nothing may follow the description");
	return 0;
}

static int dir_param(struct hdr *h)
{
	struct lev_script_tool *t = h->t;
	struct lev_script_param p = { 0 };
	const char *at, *tat;
	_cleanup_free_ char *n = word(h, &at);
	_cleanup_free_ char *ty = NULL, *req = NULL;
	size_t k;
	int r;

	if (!n || !name_ok(n))
		return fail(h, at, "@param needs a name of 1 to %d bytes of [A-Za-z0-9_-]",
			    LEV_SCRIPTTOOL_NAME_MAX);
	for (k = 0; k < t->n_params; k++)
		if (!strcmp(t->params[k].name, n))
			return fail(h, at, "a second @param '%s'", n);
	if (t->n_params >= LEV_SCRIPTTOOL_PARAMS_MAX)
		return fail(h, at, "more than %d parameters", LEV_SCRIPTTOOL_PARAMS_MAX);
	ty = word(h, &tat);
	for (k = 0; ty && k < ARRAY_SIZE(type_names); k++)
		if (!strcmp(ty, type_names[k]))
			break;
	if (!ty || k == ARRAY_SIZE(type_names))
		return fail(h, tat, "@param '%s' needs a type: string, number, integer, boolean, "
			    "array or object", n);
	p.type = (enum lev_script_type)k;
	skip_space(h);
	if (h->p < h->end && *h->p != '"' && *h->p != '\r') {
		req = word(h, &at);
		if (!req || (strcmp(req, "required") && strcmp(req, "optional")))
			return fail(h, at, "expected 'required', 'optional' or a quoted description");
		p.required = !strcmp(req, "required");
	}
	r = param_text(h, &p);
	if (r < 0) {
		free(p.description);
		return r;
	}
	p.name = TAKE_PTR(n);
	t->params = xreallocarray(t->params, t->n_params + 1, sizeof(*t->params));
	t->params[t->n_params++] = p;
	return 0;
}

static int dir_requires(struct hdr *h)
{
	const char *at;
	bool any = false;

	for (;;) {
		_cleanup_free_ char *w = NULL;

		skip_space(h);
		if (h->p < h->end && *h->p == ',') {
			h->p++;
			continue;
		}
		w = word(h, &at);
		if (!w)
			break;
		if (!strcmp(w, "network"))
			h->t->needs |= LEV_SCRIPT_NEEDS_NETWORK;
		else if (!strcmp(w, "shell"))
			h->t->needs |= LEV_SCRIPT_NEEDS_SHELL;
		else
			return fail(h, at, "unknown requirement '%s' (network or shell)", w);
		any = true;
	}
	return any ? 0 : fail(h, h->p, "@requires needs network or shell");
}

/* One header line (after "--"): a directive, or a plain comment. */
static int header_line(struct hdr *h, const char *stem)
{
	const char *at;
	_cleanup_free_ char *d = NULL;

	skip_space(h);
	if (h->p >= h->end || *h->p != '@')
		return 0;
	d = word(h, &at);
	if (!strcmp(d, "@tool"))
		return dir_tool(h, stem);
	if (!strcmp(d, "@description")) {
		if (h->t->description)
			return fail(h, at, "a second @description");
		h->t->description = rest(h);
		return 0;
	}
	if (!strcmp(d, "@param"))
		return dir_param(h);
	if (!strcmp(d, "@requires"))
		return dir_requires(h);
	return fail(h, at, "unknown directive '%s' (@tool, @description, @param, @requires)", d);
}

int lev_scripttool_parse(const char *src, size_t len, const char *file,
			 struct lev_script_tool *out, struct lev_err *err)
{
	struct lev_script_tool t = { 0 };
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	_cleanup_free_ char *stem = xstrndup(base, strcspn(base, "."));
	struct hdr h = { .file = file, .p = src, .t = &t, .err = err };
	const char *e = src + len;
	int r = 0;

	if (memchr(src, '\0', len))
		return lev_err_set(err, LEV_EPARSE, "%s: not a text file", file);
	while (h.p < e && r == 0) {
		h.line = h.p;
		h.end = memchr(h.p, '\n', (size_t)(e - h.p));
		if (!h.end)
			h.end = e;
		h.lineno++;
		skip_space(&h);
		if (h.p + 2 <= h.end && h.p[0] == '-' && h.p[1] == '-') {
			h.p += 2;
			r = header_line(&h, stem);
		} else if (h.p < h.end && *h.p != '\r') {
			break;	/* the code begins */
		}
		h.p = h.end + 1;
	}
	if (r == 0 && !t.name)
		r = lev_err_set(err, LEV_EPARSE, "%s:1:1: no '-- @tool %s' line in the header",
				file, stem);
	if (r < 0) {
		lev_scripttool_release(&t);
		return r;
	}
	if (!t.description)
		t.description = xstrdup("");
	t.file = xstrdup(file);
	t.source = xstrndup(src, len);
	t.len = len;
	*out = t;
	return 0;
}

void lev_scripttool_release(struct lev_script_tool *t)
{
	for (size_t i = 0; i < t->n_params; i++) {
		free(t->params[i].name);
		free(t->params[i].description);
	}
	free(t->params);
	free(t->name);
	free(t->file);
	free(t->description);
	free(t->source);
	memset(t, 0, sizeof(*t));
}

void lev_scripttools_free(struct lev_script_tool *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		lev_scripttool_release(&v[i]);
	free(v);
}

/* Read DFD/NAME (a checked regular file) into *T. */
static int load_one(int dfd, const char *path, const char *name, struct lev_script_tool *t,
		    struct lev_err *err)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
						   O_NONBLOCK);
	_cleanup_free_ char *src = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	if (fd < 0 || fstat(fd, &st) < 0)
		return lev_err_errno(err, -errno, "cannot open script tool '%s'", path);
	if (!S_ISREG(st.st_mode))
		return lev_err_set(err, -EINVAL, "script tool '%s' is not a regular file", path);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return lev_err_set(err, -EPERM, "script tool '%s' is writable by group or "
				   "others; run 'chmod go-w %s'", path, path);
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return lev_err_set(err, -EPERM, "script tool '%s' is owned by another user", path);
	r = lev_read_fd(fd, path, LEV_SCRIPTTOOL_FILE_MAX, &src, &len, err);
	if (r < 0)
		return r;
	return lev_scripttool_parse(src, len, path, t, err);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.lua names in DFD, sorted (NULL: none). */
static char **lua_names(int dfd)
{
	int fd2 = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	char **names = NULL;
	struct dirent *de;
	DIR *d;

	if (fd2 < 0)
		return NULL;
	d = fdopendir(fd2);
	if (!d) {
		close(fd2);
		return NULL;
	}
	while ((de = readdir(d)) && lev_strv_len(names) <= LEV_SCRIPTTOOL_MAX) {
		size_t l = strlen(de->d_name);

		if (de->d_name[0] != '.' && l > 4 && !strcmp(de->d_name + l - 4, ".lua"))
			names = lev_strv_push(names, de->d_name);
	}
	closedir(d);
	if (names)
		qsort(names, lev_strv_len(names), sizeof(*names), cmp_str);
	return names;
}

int lev_scripttools_load(const char *dir, struct lev_script_tool **out, size_t *n,
			 struct lev_err *err)
{
	_cleanup_free_ char *tools = lev_path_join(dir, "tools");
	_cleanup_close_ int dfd = open(tools, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_strv_ char **names = NULL;
	struct lev_script_tool *v = NULL;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (dfd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0
			: lev_err_errno(err, -errno, "cannot open '%s'", tools);
	names = lua_names(dfd);
	if (lev_strv_len(names) > LEV_SCRIPTTOOL_MAX)
		return lev_err_set(err, -E2BIG, "'%s' holds more than %d script tools", tools,
				   LEV_SCRIPTTOOL_MAX);
	for (char **nm = names; nm && *nm; nm++) {
		_cleanup_free_ char *path = lev_path_join(tools, *nm);
		const struct lev_tool_desc *bi;
		int r;

		v = xreallocarray(v, k + 1, sizeof(*v));
		r = load_one(dfd, path, *nm, &v[k], err);
		if (r < 0) {
			lev_scripttools_free(v, k);
			return r;
		}
		k++;
		bi = lev_tooltable_find(v[k - 1].name);
		if (bi && !(bi->flags & LEV_TOOLF_FOREIGN)) {
			r = lev_err_set(err, -EEXIST, "%s:1:1: the script tool '%s' has the name of "
					"lev's built-in tool '%s'; rename it", path, v[k - 1].name,
					bi->name);
			lev_scripttools_free(v, k);
			return r;
		}
	}
	*out = v;
	*n = k;
	return 0;
}
