/*
 * credstore.c - `lev auth`'s store: credentials.toml and config.toml
 * edited as text, the keychain, and migration between them (credstore.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/config-edit.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/credstore.h"
#include "liblev/conf/datadir.h"
#include "liblev/conf/keychain.h"
#include "liblev/conf/toml.h"

/* One key a file holds: where, so it can be cut or replaced. */
struct entry {
	char *provider;
	char *key;		/* a secret; NULL: the table holds none */
	unsigned key_line;	/* the line of its `api_key =` (or flat key); 0: none */
	unsigned table_line;	/* credentials.toml: [providers.NAME]'s line */
};

struct entries {
	struct entry *v;
	size_t n;
};

static void entries_release(struct entries *e)
{
	for (size_t i = 0; i < e->n; i++) {
		free(e->v[i].provider);
		lev_secret_free(e->v[i].key);
	}
	free(e->v);
	e->v = NULL;
	e->n = 0;
}

/* The first entry for PROVIDER holding a key, else the first at all, else NULL. */
static const struct entry *entries_find(const struct entries *e, const char *provider)
{
	const struct entry *any = NULL;

	for (size_t i = 0; i < e->n; i++) {
		if (strcmp(e->v[i].provider, provider))
			continue;
		if (e->v[i].key)
			return &e->v[i];
		if (!any)
			any = &e->v[i];
	}
	return any;
}

static void entries_add(struct entries *e, const char *provider, const struct lev_toml_value *v,
			unsigned key_line, unsigned table_line)
{
	struct entry *n;

	e->v = xreallocarray(e->v, e->n + 1, sizeof(*e->v));
	n = &e->v[e->n++];
	n->provider = xstrdup(provider);
	n->key = v ? xstrdup(v->u.str.ptr) : NULL;
	n->key_line = key_line;
	n->table_line = table_line;
}

/* V (named WHAT in NAME) must be a usable key. */
static int check_key(const struct lev_toml_value *v, const char *name, const char *what,
		     struct lev_err *err)
{
	if (v->type != LEV_TOML_STRING)
		return lev_err_set(err, LEV_EPARSE, "%s:%u:%u: '%s' must be a string", name,
				   v->line, v->col, what);
	if (strlen(v->u.str.ptr) != v->u.str.len || !lev_api_key_valid(v->u.str.ptr))
		return lev_err_set(err, -EINVAL,
				   "%s:%u:%u: '%s' must be 1..%d printable characters with no spaces",
				   name, v->line, v->col, what, LEV_API_KEY_MAX);
	return 0;
}

/* credentials.toml's [providers.NAME] api_key entries. */
static int parse_creds(const struct lev_toml_table *root, const char *name, struct entries *out,
		       struct lev_err *err)
{
	const struct lev_toml_value *pv = lev_toml_table_get(root, "providers");

	if (!pv)
		return 0;
	if (pv->type != LEV_TOML_TABLE)
		return lev_err_set(err, LEV_EPARSE, "%s:%u:%u: 'providers' must be a table", name,
				   pv->line, pv->col);
	for (size_t i = 0; i < lev_toml_table_len(pv->u.table); i++) {
		const char *p = lev_toml_table_key(pv->u.table, i, NULL);
		const struct lev_toml_value *t = lev_toml_table_value(pv->u.table, i), *k;
		unsigned tl, tc, kl = 0, kc;
		_cleanup_free_ char *what = NULL;
		int r;

		if (t->type != LEV_TOML_TABLE)
			return lev_err_set(err, LEV_EPARSE, "%s:%u:%u: 'providers.%s' must be a table",
					   name, t->line, t->col, p);
		lev_toml_table_pos(t->u.table, &tl, &tc);
		k = lev_toml_table_get(t->u.table, "api_key");
		if (k) {
			what = xasprintf("providers.%s.api_key", p);
			if ((r = check_key(k, name, what, err)) < 0)
				return r;
			for (size_t j = 0; j < lev_toml_table_len(t->u.table); j++)
				if (!strcmp(lev_toml_table_key(t->u.table, j, NULL), "api_key"))
					lev_toml_table_key_pos(t->u.table, j, &kl, &kc);
		}
		entries_add(out, p, k, kl, tl);
	}
	return 0;
}

/* config.toml's flat keys: [providers] NAME_api_key and top-level openrouter_api_key. */
static int parse_flat(const struct lev_toml_table *root, const char *name, struct entries *out,
		      struct lev_err *err)
{
	const struct lev_toml_value *pv = lev_toml_table_get(root, "providers");
	static const char suffix[] = "_api_key";
	int r;

	for (size_t i = 0; pv && pv->type == LEV_TOML_TABLE && i < lev_toml_table_len(pv->u.table);
	     i++) {
		size_t len;
		const char *k = lev_toml_table_key(pv->u.table, i, &len);
		const struct lev_toml_value *v = lev_toml_table_value(pv->u.table, i);
		_cleanup_free_ char *prov = NULL, *what = NULL;
		unsigned kl, kc;

		if (len <= strlen(suffix) || strlen(k) != len ||
		    strcmp(k + len - strlen(suffix), suffix))
			continue;
		prov = xstrndup(k, len - strlen(suffix));
		what = xasprintf("providers.%s", k);
		if ((r = check_key(v, name, what, err)) < 0)
			return r;
		lev_toml_table_key_pos(pv->u.table, i, &kl, &kc);
		entries_add(out, prov, v, kl, 0);
	}
	for (size_t i = 0; i < lev_toml_table_len(root); i++) {
		const char *k = lev_toml_table_key(root, i, NULL);
		unsigned kl, kc;

		if (strcmp(k, "openrouter_api_key"))
			continue;
		if ((r = check_key(lev_toml_table_value(root, i), name, k, err)) < 0)
			return r;
		lev_toml_table_key_pos(root, i, &kl, &kc);
		entries_add(out, "openrouter", lev_toml_table_value(root, i), kl, 0);
	}
	return 0;
}

/* The entries of TEXT (NAME in messages; NULL text: none), flat (config) or not. */
static int parse_entries(const char *text, const char *name, bool flat, struct entries *out,
			 struct lev_err *err)
{
	struct lev_toml_doc *doc = NULL;
	int r;

	out->v = NULL;
	out->n = 0;
	if (!text)
		return 0;
	r = lev_credentials_parse(text, strlen(text), name, &doc, err);
	if (r < 0)
		return r;
	r = flat ? parse_flat(lev_toml_root(doc), name, out, err)
		 : parse_creds(lev_toml_root(doc), name, out, err);
	lev_toml_free(doc);
	if (r < 0)
		entries_release(out);
	return r;
}

/* ---- text edits ---------------------------------------------------------- */

/* Where 1-based LINE starts in TEXT (its length past the last line). */
static size_t line_off(const char *text, unsigned line)
{
	size_t off = 0;

	for (unsigned l = 1; l < line && text[off]; l++) {
		const char *nl = strchr(text + off, '\n');

		if (!nl)
			return strlen(text);
		off = (size_t)(nl - text) + 1;
	}
	return off;
}

/* TEXT without the lines LINES (N of them, 0 entries ignored), fresh. */
static char *drop_lines(const char *text, const unsigned *lines, size_t n)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(LEV_CONFIG_MAX_FILE + 1);
	unsigned line = 1;

	for (const char *p = text; *p; line++) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
		bool drop = false;

		for (size_t i = 0; i < n; i++)
			if (lines[i] == line)
				drop = true;
		if (!drop)
			(void)lev_buf_add(&b, p, len);
		p += len;
	}
	return lev_buf_detach(&b, NULL);
}

/* TEXT with INS put at the start of LINE (REPLACE: instead of that line), fresh. */
static char *put_line(const char *text, unsigned line, const char *ins, bool replace)
{
	size_t at = line_off(text, line), end = at;
	const char *nl;

	if (replace) {
		nl = strchr(text + at, '\n');
		end = nl ? (size_t)(nl - text) + 1 : strlen(text);
	}
	return xasprintf("%.*s%s%s%s", (int)at, text, at && text[at - 1] != '\n' ? "\n" : "", ins,
			 text + end);
}

/*
 * AFTER (NAME, FLAT as parse_entries()) must hold BEFORE's keys with only
 * PROVIDER changed: to KEY, or gone when KEY is NULL.  (PROVIDER NULL: the
 * providers in GONE are all gone.)
 */
static int check_edit(const struct entries *before, const char *after, const char *name,
		      bool flat, const char *provider, const char *key, char *const *gone,
		      struct lev_err *err)
{
	struct entries now;
	const struct entry *e;
	int r;

	r = parse_entries(after, name, flat, &now, err);
	if (r < 0)
		return lev_err_wrap(err, "editing '%s' would break it; nothing was written", name);
	if (flat) {
		struct lev_config cfg;

		r = lev_config_parse(after, strlen(after), name, &cfg, err);
		if (r < 0) {
			entries_release(&now);
			return lev_err_wrap(err, "editing '%s' would break it; nothing was written",
					    name);
		}
		lev_config_release(&cfg);
	}
	for (size_t pass = 0; pass < 2; pass++) {
		const struct entries *a = pass ? &now : before, *b = pass ? before : &now;

		for (size_t i = 0; i < a->n; i++) {
			const char *p = a->v[i].provider;
			const struct entry *o = entries_find(b, p);
			const char *want = a->v[i].key;

			if (provider ? !strcmp(p, provider) : lev_strv_contains(gone, p))
				continue;
			if (!!want != !!(o && o->key) || (want && strcmp(want, o->key)))
				goto fail;
		}
	}
	e = provider ? entries_find(&now, provider) : NULL;
	if (provider && (!!key != !!(e && e->key) || (key && strcmp(key, e->key))))
		goto fail;
	for (char *const *g = gone; !provider && g && *g; g++)
		if ((e = entries_find(&now, *g)) && e->key)
			goto fail;
	entries_release(&now);
	return 0;
fail:
	entries_release(&now);
	return lev_err_set(err, -EPROTO,
			   "'%s' is not laid out so lev can edit it as text (a key in an inline "
			   "table, or on a line shared with another); nothing was written: edit "
			   "the file yourself",
			   name);
}

/* credentials.toml's TEXT (NULL: none) with PROVIDER's key set to KEY (NULL: cut), fresh. */
static int creds_edit(const char *text, const char *name, const char *provider, const char *key,
		      char **out, struct lev_err *err)
{
	struct entries before;
	const struct entry *e;
	_cleanup_free_ char *line = NULL;
	char *after = NULL;
	int r;

	r = parse_entries(text, name, false, &before, err);
	if (r < 0)
		return r;
	if (!text)
		text = "";
	e = entries_find(&before, provider);
	line = key ? xasprintf("api_key = \"%s\"\n", key) : NULL;	/* printable, no '"' checked below */
	if (key && (strchr(key, '"') || strchr(key, '\\'))) {
		entries_release(&before);
		return lev_err_set(err, -EINVAL, "a key for credentials.toml cannot hold '\"' or '\\'");
	}
	if (!key) {
		unsigned *lines = xcalloc(before.n + 1, sizeof(*lines));
		size_t n = 0;

		for (size_t i = 0; i < before.n; i++)
			if (!strcmp(before.v[i].provider, provider) && before.v[i].key_line)
				lines[n++] = before.v[i].key_line;
		after = drop_lines(text, lines, n);
		free(lines);
	} else if (e && e->key_line) {
		after = put_line(text, e->key_line, line, true);
	} else if (e && e->table_line) {
		after = put_line(text, e->table_line + 1, line, false);
	} else {
		size_t len = strlen(text);

		after = xasprintf("%s%s%s[providers.%s]\n%s", text,
				  len && text[len - 1] != '\n' ? "\n" : "", len ? "\n" : "", provider,
				  line);
	}
	if (line)
		explicit_bzero(line, strlen(line));
	r = check_edit(&before, after, name, false, provider, key, NULL, err);
	entries_release(&before);
	if (r < 0) {
		lev_secret_free(after);
		return r;
	}
	*out = after;
	return 0;
}

/* ---- files --------------------------------------------------------------- */

/* credentials.toml's text (NULL: missing), checked as a secret file. */
static int read_creds(const char *path, char **out, struct lev_err *err)
{
	return lev_credentials_read(path, "credentials file", LEV_CREDENTIALS_MAX_FILE, out, NULL,
				    err);
}

/* Write TEXT to credentials.toml (0600, atomically; NULL: remove the file). */
static int write_creds(const char *path, const char *text, struct lev_err *err)
{
	_cleanup_free_ char *dir = NULL;
	const char *slash = strrchr(path, '/');

	if (!text) {
		if (unlink(path) < 0 && errno != ENOENT)
			return lev_err_errno(err, -errno, "cannot remove '%s'", path);
		return 0;
	}
	dir = xstrndup(path, slash ? (size_t)(slash - path) : 0);
	if (*dir && lev_mkdir_p(dir, LEV_DIR_MODE, err) < 0)
		return err->code;
	return lev_write_file_atomic(path, text, strlen(text), LEV_FILE_MODE, err);
}

/* ---- the backend ----------------------------------------------------------- */

int lev_credstore_set(const struct lev_credstore *s, const char *provider, const char *key,
		      struct lev_err *err)
{
	char *text = NULL, *after = NULL;
	int r;

	if (!lev_keychain_name_valid(provider))
		return lev_err_set(err, -EINVAL,
				   "provider name '%s' must be 1..%d of a-z, 0-9, '_' and '-'",
				   provider, LEV_KEYCHAIN_NAME_MAX);
	if (!lev_api_key_valid(key))
		return lev_err_set(err, -EINVAL,
				   "a key must be 1..%d printable characters with no spaces",
				   LEV_API_KEY_MAX);
	if (s->kind == LEV_CRED_KEYCHAIN)
		return lev_keychain_store(provider, key, err);
	r = read_creds(s->credentials_path, &text, err);
	if (r == 0)
		r = creds_edit(text, s->credentials_path, provider, key, &after, err);
	if (r == 0)
		r = write_creds(s->credentials_path, after, err);
	lev_secret_free(text);
	lev_secret_free(after);
	return r;
}

int lev_credstore_get(const struct lev_credstore *s, const char *name, char **out,
		      struct lev_err *err)
{
	*out = NULL;
	if (s->kind == LEV_CRED_KEYCHAIN)
		return lev_keychain_lookup(name, out, err);
	if (!s->credentials_path)
		return 0;
	return lev_credentials_lookup(s->credentials_path, name, out, err);
}

int lev_credstore_remove(const struct lev_credstore *s, const char *provider, bool *removed,
			 struct lev_err *err)
{
	char *text = NULL, *after = NULL;
	struct entries before = { 0 };
	const struct entry *e;
	int r;

	*removed = false;
	if (s->kind == LEV_CRED_KEYCHAIN)
		return lev_keychain_remove(provider, removed, err);
	r = read_creds(s->credentials_path, &text, err);
	if (r == 0)
		r = parse_entries(text, s->credentials_path, false, &before, err);
	e = r == 0 ? entries_find(&before, provider) : NULL;
	if (e && e->key) {
		r = creds_edit(text, s->credentials_path, provider, NULL, &after, err);
		if (r == 0)
			r = write_creds(s->credentials_path, after, err);
		*removed = r == 0;
	}
	entries_release(&before);
	lev_secret_free(text);
	lev_secret_free(after);
	return r;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The providers of E that hold a key, sorted, fresh (NULL: none). */
static char **key_names(const struct entries *e)
{
	char **v = NULL;
	size_t n = 0;

	for (size_t i = 0; i < e->n; i++)
		if (e->v[i].key && !lev_strv_contains(v, e->v[i].provider)) {
			v = lev_strv_push(v, e->v[i].provider);
			n++;
		}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_str);
	return v;
}

int lev_credstore_file_keys(const struct lev_credstore *s, char ***file_out, char ***config_out,
			    struct lev_err *err)
{
	char *text = NULL, *real = NULL;
	struct entries e;
	mode_t mode;
	int r;

	if (file_out) {
		*file_out = NULL;
		r = read_creds(s->credentials_path, &text, err);
		if (r == 0)
			r = parse_entries(text, s->credentials_path, false, &e, err);
		lev_secret_free(text);
		text = NULL;
		if (r < 0)
			return r;
		*file_out = key_names(&e);
		entries_release(&e);
	}
	if (config_out && s->config_path) {
		*config_out = NULL;
		r = lev_config_read_for_edit(s->config_path, &real, &text, &mode, err);
		if (r == 0)
			r = parse_entries(text, s->config_path, true, &e, err);
		free(real);
		lev_secret_free(text);
		if (r < 0)
			return r;
		*config_out = key_names(&e);
		entries_release(&e);
	} else if (config_out) {
		*config_out = NULL;
	}
	return 0;
}

int lev_credstore_list(const struct lev_credstore *s, char ***out, struct lev_err *err)
{
	if (s->kind == LEV_CRED_KEYCHAIN)
		return lev_keychain_list(out, err);
	return lev_credstore_file_keys(s, out, NULL, err);
}

/* ---- migration ----------------------------------------------------------- */

/* What the keychain held before a migration wrote to it, to put back. */
struct undo {
	char **names;
	char **old;		/* secrets, parallel to names; NULL entries: there was none */
	size_t n;
};

static void undo_keychain(struct undo *u)
{
	for (size_t i = u->n; i-- > 0;) {
		if (u->old[i])
			(void)lev_keychain_store(u->names[i], u->old[i], NULL);
		else
			(void)lev_keychain_remove(u->names[i], NULL, NULL);
	}
}

static void undo_release(struct undo *u)
{
	for (size_t i = 0; i < u->n; i++) {
		free(u->names[i]);
		lev_secret_free(u->old[i]);
	}
	free(u->names);
	free(u->old);
}

static void undo_push(struct undo *u, const char *name, char *old)
{
	u->names = xreallocarray(u->names, u->n + 1, sizeof(*u->names));
	u->old = xreallocarray(u->old, u->n + 1, sizeof(*u->old));
	u->names[u->n] = xstrdup(name);
	u->old[u->n++] = old;
}

/* TEXT (NAME, FLAT) without every key of E (*out NULL when E has none), checked. */
static int cut_keys(const struct entries *e, const char *text, const char *name, bool flat,
		    char *const *names, char **out, struct lev_err *err)
{
	unsigned *lines;
	size_t n = 0;
	int r;

	*out = NULL;
	if (!e->n)
		return 0;
	lines = xcalloc(e->n, sizeof(*lines));
	for (size_t i = 0; i < e->n; i++)
		if (e->v[i].key_line)
			lines[n++] = e->v[i].key_line;
	*out = drop_lines(text, lines, n);
	free(lines);
	r = check_edit(e, *out, name, flat, NULL, NULL, names, err);
	if (r < 0) {
		lev_secret_free(*out);
		*out = NULL;
	}
	return r;
}

static int migrate_in(const struct lev_credstore *s, bool dry_run, char ***moved,
		      struct lev_err *err)
{
	char *creds = NULL, *conf = NULL, *real = NULL, *creds_after = NULL, *conf_after = NULL;
	struct entries ce = { 0 }, fe = { 0 };
	struct undo u = { 0 };
	char **names = NULL;
	mode_t mode = LEV_FILE_MODE;
	int r;

	r = read_creds(s->credentials_path, &creds, err);
	if (r == 0)
		r = parse_entries(creds, s->credentials_path, false, &ce, err);
	if (r == 0 && s->config_path)
		r = lev_config_read_for_edit(s->config_path, &real, &conf, &mode, err);
	if (r == 0)
		r = parse_entries(conf, s->config_path, true, &fe, err);
	if (r < 0)
		goto out;
	/* config.toml's key first, as the lookup reads them */
	for (size_t pass = 0; pass < 2; pass++) {
		const struct entries *e = pass ? &ce : &fe;

		for (size_t i = 0; i < e->n; i++) {
			if (!e->v[i].key || lev_strv_contains(names, e->v[i].provider))
				continue;
			names = lev_strv_push(names, e->v[i].provider);
			if (moved)
				*moved = lev_strv_push_take(*moved,
							    xasprintf("%s\t%s", e->v[i].provider,
								      pass ? s->credentials_path
									   : s->config_path));
		}
	}
	/* every other copy goes too (a key in both files) */
	for (size_t i = 0; i < ce.n; i++)
		if (ce.v[i].key && entries_find(&fe, ce.v[i].provider) &&
		    entries_find(&fe, ce.v[i].provider)->key && moved)
			*moved = lev_strv_push_take(*moved, xasprintf("%s\t%s (a second copy, "
								      "dropped)",
								      ce.v[i].provider,
								      s->credentials_path));
	if (dry_run || !names)
		goto out;

	/* the new text of both files, checked, before anything changes */
	r = cut_keys(&ce, creds, s->credentials_path, false, names, &creds_after, err);
	if (r == 0)
		r = cut_keys(&fe, conf, s->config_path, true, names, &conf_after, err);
	if (r < 0)
		goto out;

	/* 1. into the keychain, remembering what it held */
	for (char **p = names; *p; p++) {
		const struct entry *e = entries_find(&fe, *p);
		char *old = NULL;

		if (!e || !e->key)
			e = entries_find(&ce, *p);
		r = lev_keychain_lookup(*p, &old, err);
		if (r < 0)
			goto undo;
		undo_push(&u, *p, old);
		r = lev_keychain_store(*p, e->key, err);
		if (r < 0)
			goto undo;
	}
	/* 2. out of credentials.toml, 3. out of config.toml */
	if (creds_after) {
		r = write_creds(s->credentials_path, creds_after, err);
		if (r < 0)
			goto undo;
	}
	if (conf_after) {
		r = lev_write_file_atomic(real, conf_after, strlen(conf_after), mode, err);
		if (r < 0) {
			if (creds_after)
				(void)write_creds(s->credentials_path, creds, NULL);
			goto undo;
		}
	}
	goto out;
undo:
	lev_err_wrap(err, "nothing was moved");
	undo_keychain(&u);
out:
	undo_release(&u);
	lev_strv_free(names);
	entries_release(&ce);
	entries_release(&fe);
	lev_secret_free(creds);
	lev_secret_free(conf);
	lev_secret_free(creds_after);
	lev_secret_free(conf_after);
	free(real);
	return r;
}

static int migrate_out(const struct lev_credstore *s, bool dry_run, char ***moved,
		       struct lev_err *err)
{
	char *creds = NULL, *text = NULL;
	char **names = NULL, **keys = NULL;
	size_t n = 0, removed = 0;
	int r;

	r = lev_keychain_list(&names, err);
	if (r == 0)
		r = read_creds(s->credentials_path, &creds, err);
	if (r < 0)
		goto out;
	n = lev_strv_len(names);
	keys = xcalloc(n + 1, sizeof(*keys));
	text = creds ? xstrdup(creds) : NULL;
	for (size_t i = 0; i < n; i++) {
		char *after = NULL;

		if (moved)
			*moved = lev_strv_push_take(*moved, xasprintf("%s\tkeychain", names[i]));
		r = lev_keychain_lookup(names[i], &keys[i], err);
		if (r == 0 && !keys[i])
			continue;	/* gone meanwhile */
		if (r == 0)
			r = creds_edit(text, s->credentials_path, names[i], keys[i], &after, err);
		if (r < 0)
			goto out;
		lev_secret_free(text);
		text = after;
	}
	if (dry_run || !n)
		goto out;
	/* 1. into credentials.toml, 2. out of the keychain */
	r = write_creds(s->credentials_path, text, err);
	if (r < 0)
		goto out;
	for (removed = 0; removed < n; removed++) {
		if (!keys[removed])
			continue;
		r = lev_keychain_remove(names[removed], NULL, err);
		if (r < 0)
			break;
	}
	if (r < 0) {
		lev_err_wrap(err, "nothing was moved");
		for (size_t i = 0; i < removed; i++)
			if (keys[i])
				(void)lev_keychain_store(names[i], keys[i], NULL);
		(void)write_creds(s->credentials_path, creds, NULL);
	}
out:
	for (size_t i = 0; keys && i < n; i++)
		lev_secret_free(keys[i]);
	free(keys);
	lev_strv_free(names);
	lev_secret_free(creds);
	lev_secret_free(text);
	return r;
}

int lev_credstore_migrate(const struct lev_credstore *s, bool to_file, bool dry_run,
			  char ***moved, struct lev_err *err)
{
	if (moved)
		*moved = NULL;
	if (!to_file && s->kind != LEV_CRED_KEYCHAIN)
		return lev_err_set(err, -EINVAL,
				   "credential_store is \"file\": set [security] credential_store = "
				   "\"keychain\" in config.toml first, or lev would not read the "
				   "keys it moved");
	if (to_file && s->kind != LEV_CRED_FILE)
		return lev_err_set(err, -EINVAL,
				   "credential_store is \"keychain\": set [security] credential_store "
				   "= \"file\" in config.toml first, or lev would not read the keys "
				   "it moved");
	return to_file ? migrate_out(s, dry_run, moved, err) : migrate_in(s, dry_run, moved, err);
}
