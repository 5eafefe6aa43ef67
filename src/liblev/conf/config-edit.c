/*
 * config-edit.c - add and remove [[mcp_servers]] blocks in config.toml as
 * text (config-edit.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/config-edit.h"
#include "liblev/conf/datadir.h"

static void toml_str(struct lev_buf *b, const char *s)
{
	(void)lev_buf_addch(b, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			(void)lev_buf_addf(b, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			(void)lev_buf_addf(b, "\\u%04x", *p);
		else
			(void)lev_buf_addch(b, (char)*p);
	}
	(void)lev_buf_addch(b, '"');
}

static void toml_key(struct lev_buf *b, const char *k, size_t len)
{
	bool bare = len > 0;
	_cleanup_free_ char *t = xstrndup(k, len);

	for (size_t i = 0; i < len; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '_' || k[i] == '-'))
			bare = false;
	if (bare)
		(void)lev_buf_add(b, k, len);
	else
		toml_str(b, t);
}

/* KEY = { K = "v", ... } from "K<sep>v" entries. */
static void toml_map(struct lev_buf *b, const char *key, char *const *v, const char *sep)
{
	(void)lev_buf_addf(b, "%s = {", key);
	for (char *const *e = v; e && *e; e++) {
		const char *s = strstr(*e, sep);
		size_t klen = s ? (size_t)(s - *e) : strlen(*e);

		(void)lev_buf_add(b, e == v ? " " : ", ", e == v ? 1 : 2);
		toml_key(b, *e, klen);
		(void)lev_buf_add(b, " = ", 3);
		toml_str(b, s ? s + strlen(sep) : "");
	}
	(void)lev_buf_add(b, " }\n", 3);
}

char *lev_config_mcp_block(const struct lev_mcp_server_conf *s)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(LEV_CONFIG_MAX_FILE);

	(void)lev_buf_addf(&b, "[[mcp_servers]]\nname = ");
	toml_str(&b, s->name);
	if (s->command) {
		(void)lev_buf_add(&b, "\ncommand = ", 11);
		toml_str(&b, s->command);
	}
	if (s->args) {
		(void)lev_buf_add(&b, "\nargs = [", 9);
		for (char *const *a = s->args; *a; a++) {
			if (a != s->args)
				(void)lev_buf_add(&b, ", ", 2);
			toml_str(&b, *a);
		}
		(void)lev_buf_addch(&b, ']');
	}
	if (s->url) {
		(void)lev_buf_add(&b, "\nurl = ", 7);
		toml_str(&b, s->url);
	}
	(void)lev_buf_addch(&b, '\n');
	if (s->env)
		toml_map(&b, "env", s->env, "=");
	if (s->headers)
		toml_map(&b, "headers", s->headers, ": ");
	if (s->cwd) {
		(void)lev_buf_add(&b, "cwd = ", 6);
		toml_str(&b, s->cwd);
		(void)lev_buf_addch(&b, '\n');
	}
	if (s->timeout_secs && s->timeout_secs != LEV_MCP_DEFAULT_TIMEOUT_SECS)
		(void)lev_buf_addf(&b, "timeout_secs = %llu\n", (unsigned long long)s->timeout_secs);
	if (s->max_result_bytes && s->max_result_bytes != LEV_MCP_DEFAULT_RESULT_MAX)
		(void)lev_buf_addf(&b, "max_result_bytes = %llu\n",
				   (unsigned long long)s->max_result_bytes);
	if (s->sandbox_none)
		(void)lev_buf_add(&b, "sandbox = \"none\"\n", 17);
	if (s->allow_local_network)
		(void)lev_buf_add(&b, "allow_local_network = true\n", 27);
	return lev_buf_detach(&b, NULL);
}

static bool strv_same(char *const *a, char *const *b)
{
	for (; a && *a && b && *b; a++, b++)
		if (strcmp(*a, *b))
			return false;
	return !(a && *a) && !(b && *b);
}

static bool str_same(const char *a, const char *b)
{
	return a == b || lev_streq(a, b);
}

static bool server_same(const struct lev_mcp_server_conf *a, const struct lev_mcp_server_conf *b)
{
	return str_same(a->name, b->name) && str_same(a->command, b->command) &&
	       strv_same(a->args, b->args) && strv_same(a->env, b->env) &&
	       str_same(a->cwd, b->cwd) && str_same(a->url, b->url) &&
	       strv_same(a->headers, b->headers) && a->timeout_secs == b->timeout_secs &&
	       a->max_result_bytes == b->max_result_bytes && a->sandbox_none == b->sandbox_none &&
	       a->allow_local_network == b->allow_local_network;
}

/*
 * AFTER must parse, hold every server of BEFORE but SKIP unchanged and in
 * order, and (with ADDED) end with one server equal to ADDED.
 */
static int check_edit(const struct lev_config *before, const char *after, const char *fname,
		      const char *skip, const struct lev_mcp_server_conf *added,
		      struct lev_err *err)
{
	struct lev_config cfg;
	size_t j = 0;
	int r;

	r = lev_config_parse(after, strlen(after), fname, &cfg, err);
	if (r < 0)
		return lev_err_wrap(err, "the edited config would not be valid, so nothing was "
				    "written");
	for (size_t i = 0; i < before->n_mcp_servers && r == 0; i++) {
		if (skip && !strcmp(before->mcp_servers[i].name, skip))
			continue;
		if (j >= cfg.n_mcp_servers || !server_same(&before->mcp_servers[i],
							   &cfg.mcp_servers[j++]))
			r = -EPROTO;
	}
	if (r == 0 && added && (j + 1 != cfg.n_mcp_servers ||
				!server_same(added, &cfg.mcp_servers[j])))
		r = -EPROTO;
	if (r == 0 && !added && j != cfg.n_mcp_servers)
		r = -EPROTO;
	lev_config_release(&cfg);
	if (r < 0)
		return lev_err_set(err, r, "the edit of %s would change more than MCP server '%s' "
				   "(it is not laid out as one [[mcp_servers]] block), so nothing "
				   "was written; edit the file yourself", fname,
				   skip ? skip : added->name);
	return 0;
}

int lev_config_mcp_add_text(const char *text, const char *name_in_msg,
			    const struct lev_mcp_server_conf *s, char **out, struct lev_err *err)
{
	struct lev_config before;
	struct lev_mcp_server_conf want = *s;	/* as the parser fills it in */
	_cleanup_free_ char *block = NULL, *after = NULL;
	size_t len = strlen(text);
	int r;

	if (!want.timeout_secs)
		want.timeout_secs = LEV_MCP_DEFAULT_TIMEOUT_SECS;
	if (!want.max_result_bytes)
		want.max_result_bytes = LEV_MCP_DEFAULT_RESULT_MAX;

	if (!lev_mcp_server_name_ok(s->name))
		return lev_err_set(err, -EINVAL, "'%s' is not a valid MCP server name (1 to 64 of "
				   "A-Z a-z 0-9 _ - . without '__')", s->name);
	r = lev_config_parse(text, len, name_in_msg, &before, err);
	if (r < 0)
		return r;
	if (lev_config_mcp_server(&before, s->name)) {
		lev_config_release(&before);
		return lev_err_set(err, -EEXIST, "MCP server '%s' is already in %s", s->name,
				   name_in_msg);
	}
	block = lev_config_mcp_block(s);
	after = xasprintf("%s%s%s%s", text, len && text[len - 1] != '\n' ? "\n" : "",
			  len ? "\n" : "", block);
	r = check_edit(&before, after, name_in_msg, NULL, &want, err);
	lev_config_release(&before);
	if (r < 0)
		return r;
	*out = TAKE_PTR(after);
	return 0;
}

/* The offset where line N (1-based) of TEXT starts, or the end. */
static size_t line_start(const char *text, unsigned n)
{
	const char *p = text;

	while (--n && (p = strchr(p, '\n')))
		p++;
	return p ? (size_t)(p - text) : strlen(text);
}

static const char *skip_blank(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Is the line at P the header [[mcp_servers]] (spaces allowed)? */
static bool is_server_header(const char *p)
{
	static const char *const parts[] = { "[", "[", "mcp_servers", "]", "]" };

	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		p = skip_blank(p);
		if (strncmp(p, parts[i], strlen(parts[i])))
			return false;
		p += strlen(parts[i]);
	}
	p = skip_blank(p);
	return !*p || *p == '\n' || *p == '\r' || *p == '#';
}

/* Where the block starting at START ends: the next header, less the comments above it. */
static size_t block_end(const char *text, size_t start)
{
	const char *p = strchr(text + start, '\n');
	size_t end, keep;

	if (!p)
		return strlen(text);
	p++;
	while (*p && *skip_blank(p) != '[')
		p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p);
	end = keep = (size_t)(p - text);
	if (!*p)
		return end;
	/* step back over the comment and blank lines just above the header */
	while (keep > start) {
		size_t ls = keep - 1;
		const char *q;

		while (ls > start && text[ls - 1] != '\n')
			ls--;
		q = skip_blank(text + ls);
		if (*q != '#' && *q != '\n' && *q != '\r')
			break;
		keep = ls;
	}
	return keep;
}

int lev_config_mcp_remove_text(const char *text, const char *name_in_msg, const char *name,
			       char **out, struct lev_err *err)
{
	struct lev_config before;
	const struct lev_mcp_server_conf *c;
	size_t start, end;
	char *after;
	int r;

	r = lev_config_parse(text, strlen(text), name_in_msg, &before, err);
	if (r < 0)
		return r;
	c = lev_config_mcp_server(&before, name);
	if (!c) {
		lev_config_release(&before);
		return lev_err_set(err, -ENOENT, "%s has no MCP server '%s'", name_in_msg, name);
	}
	start = line_start(text, c->line);
	if (!is_server_header(text + start)) {
		unsigned line = c->line;	/* c goes with `before` */

		lev_config_release(&before);
		return lev_err_set(err, -EPROTO, "MCP server '%s' in %s is not a [[mcp_servers]] "
				   "block of its own (line %u), so nothing was written; edit the "
				   "file yourself", name, name_in_msg, line);
	}
	end = block_end(text, start);
	/* the blank line add put before the block goes with it */
	if (start >= 2 && text[start - 1] == '\n' && text[start - 2] == '\n')
		start--;
	after = xasprintf("%.*s%s", (int)start, text, text + end);
	r = check_edit(&before, after, name_in_msg, name, NULL, err);
	lev_config_release(&before);
	if (r < 0) {
		free(after);
		return r;
	}
	*out = after;
	return 0;
}

int lev_config_read_for_edit(const char *path, char **real, char **text, mode_t *mode,
			     struct lev_err *err)
{
	char buf[PATH_MAX];
	struct stat st;
	int r;

	*real = xstrdup(realpath(path, buf) ? buf : path);
	*mode = LEV_FILE_MODE;
	if (stat(*real, &st) == 0)
		*mode = st.st_mode & 07777;
	r = lev_read_file(*real, LEV_CONFIG_MAX_FILE, text, NULL, err);
	if (r == -ENOENT) {
		*text = xstrdup("");
		return 0;
	}
	return r;
}

/* Replace the file REAL with LEN bytes of TEXT, atomically, mode MODE, its directory made. */
static int put_file(const char *real, const char *text, size_t len, mode_t mode,
		    struct lev_err *err)
{
	_cleanup_free_ char *dir = NULL;

	dir = xstrndup(real, strrchr(real, '/') ? (size_t)(strrchr(real, '/') - real) : 0);
	if (*dir && lev_mkdir_p(dir, LEV_DIR_MODE, err) < 0)
		return err->code;
	return lev_write_file_atomic(real, text, len, mode, err);
}

static int edit_file(const char *path, const struct lev_mcp_server_conf *add, const char *remove,
		     struct lev_err *err)
{
	_cleanup_free_ char *real = NULL, *text = NULL, *after = NULL;
	mode_t mode;
	int r;

	r = lev_config_read_for_edit(path, &real, &text, &mode, err);
	if (r < 0) {
		free(TAKE_PTR(real));
		return r;
	}
	if (add)
		r = lev_config_mcp_add_text(text, path, add, &after, err);
	else
		r = lev_config_mcp_remove_text(text, path, remove, &after, err);
	if (r < 0)
		return r;
	return put_file(real, after, strlen(after), mode, err);
}

int lev_config_mcp_add(const char *path, const struct lev_mcp_server_conf *s,
		       struct lev_err *err)
{
	return edit_file(path, s, NULL, err);
}

int lev_config_mcp_remove(const char *path, const char *name, struct lev_err *err)
{
	return edit_file(path, NULL, name, err);
}

bool lev_config_mcp_pair(char ***list, const char *kv, const char *sep)
{
	const char *eq = strchr(kv, '=');

	if (!eq || eq == kv)
		return false;
	*list = lev_strv_push_take(*list, xasprintf("%.*s%s%s", (int)(eq - kv), kv, sep, eq + 1));
	return true;
}

/* Write TEXT to the config at PATH (its real file, mode kept). */
static int write_config(const char *path, const char *text, size_t len, struct lev_err *err)
{
	_cleanup_free_ char *real = NULL, *old = NULL;
	mode_t mode;
	int r;

	r = lev_config_read_for_edit(path, &real, &old, &mode, err);
	if (r < 0)
		return r;
	return put_file(real, text, len, mode, err);
}

int lev_config_replace(const char *path, const char *text, size_t len, const char *name_in_msg,
		       char ***warnings_out, struct lev_err *err)
{
	struct lev_config cfg;
	int r;

	if (memchr(text, '\0', len))
		return lev_err_set(err, -EINVAL, "%s holds a NUL byte", name_in_msg);
	r = lev_config_parse(text, len, name_in_msg, &cfg, err);
	if (r < 0)
		return r;
	r = write_config(path, text, len, err);
	if (r == 0 && warnings_out)
		*warnings_out = TAKE_PTR(cfg.warnings);
	lev_config_release(&cfg);
	return r;
}
