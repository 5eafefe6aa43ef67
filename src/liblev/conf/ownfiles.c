/*
 * ownfiles.c - the one list of lev's own files (see ownfiles.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/conf/ownfiles.h"

/*
 * The directory the last real_prefix() resolved, and what it resolved to:
 * lev's own files are mostly in one directory, whose components need not
 * be read again for each (a one-shot `lev sandbox exec` lists them all).
 */
static _Thread_local char *memo_dir, *memo_real;

static char *real_prefix(const char *p);

/* The memo holds for one lev_ownfiles_list() only: files come and go between. */
static void memo_clear(void)
{
	free(memo_dir);
	free(memo_real);
	memo_dir = memo_real = NULL;
}

/* DIR resolved as real_prefix() does, through the memo. A new string or NULL. */
static char *real_dir(const char *dir)
{
	char *r;

	if (memo_dir && !strcmp(memo_dir, dir))
		return memo_real ? xstrdup(memo_real) : NULL;
	r = real_prefix(dir);
	free(memo_dir);
	free(memo_real);
	memo_dir = xstrdup(dir);
	memo_real = r ? xstrdup(r) : NULL;
	return r;
}

/*
 * P with its longest existing prefix resolved (symlinks, ".."); NULL when
 * unknown.  A last component that is a plain name and no symlink is joined
 * to its resolved directory; only a symlink (or ".", "..") is resolved whole.
 */
static char *real_prefix(const char *p)
{
	_cleanup_free_ char *dir = NULL;
	const char *slash = strrchr(p, '/');
	const char *leaf = slash ? slash + 1 : p;
	struct stat st;
	bool exists = lstat(p, &st) == 0;
	char *r;

	if (p[0] != '/' || slash == p || !*leaf || !strcmp(leaf, ".") || !strcmp(leaf, "..") ||
	    (exists && S_ISLNK(st.st_mode))) {
		r = realpath(p, NULL);
		if (r || p[0] != '/' || slash == p)
			return r;
	}
	dir = xstrndup(p, (size_t)(slash - p));
	r = real_dir(dir);
	if (!r)
		return NULL;
	{
		char *j = xasprintf("%s%s", strcmp(r, "/") ? r : "", slash);
		free(r);
		return j;
	}
}

/* Append WHAT at PATH (taken; ignored when NULL or relative) with GUARD (copied). */
static void add(struct lev_ownfiles *l, const char *what, char *path, const char *guard, bool dir)
{
	struct lev_ownfile *e;
	size_t i;

	if (!path || path[0] != '/') {
		free(path);
		return;
	}
	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].path, path)) {
			free(path);
			return;
		}
	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	e = &l->v[l->n++];
	memset(e, 0, sizeof(*e));
	e->what = what;
	e->path = path;
	e->real = real_prefix(path);
	if (e->real && !strcmp(e->real, path)) {
		free(e->real);
		e->real = NULL;
	}
	e->guard = guard ? xstrdup(guard) : NULL;
	e->dir = dir;
}

/* A path from a datadir getter, or NULL when it cannot be known. */
static char *got(int (*getter)(char **, struct lev_err *))
{
	char *p = NULL;

	return getter(&p, NULL) == 0 ? p : NULL;
}

/* The data root and what lives beneath it; ROOT's missing files are guarded by ROOT. */
static void add_data_root(struct lev_ownfiles *l, const char *root)
{
	static const struct {
		const char *what, *name;
		bool dir;
	} beneath[] = {
		{ "the config", LEV_DATADIR_CONFIG, false },
		{ "the taint policy", LEV_DATADIR_POLICY, false },
		{ "the Lua rules", LEV_DATADIR_RULES, true },
		{ "the credentials", LEV_DATADIR_CREDENTIALS, false },
		{ "the installed agents", LEV_DATADIR_AGENTS, true },
		{ "the run records", LEV_DATADIR_RUNS, true },
		{ "the daemon's socket", LEV_DATADIR_SOCKET, false },
		{ "the daemon's lock", LEV_DATADIR_LOCK, false },
		{ "the daemon's database", LEV_DATADIR_DB, false },
		{ "the pending webhooks", LEV_DATADIR_WEBHOOKS, true },
	};
	size_t i;

	add(l, "the data root", xstrdup(root), root, true);
	for (i = 0; i < ARRAY_SIZE(beneath); i++)
		add(l, beneath[i].what, lev_path_join(root, beneath[i].name), root, beneath[i].dir);
}

/* A config file outside the data root: guarded by nothing (its directory is the user's). */
static void add_config(struct lev_ownfiles *l, char *path, const char *root)
{
	add(l, "the config", path, root && path && lev_path_under(path, root) ? root : NULL, false);
}

int lev_ownfiles_list(const struct lev_ownfiles_opts *o, struct lev_ownfiles *out,
		      struct lev_err *err)
{
	struct lev_ownfiles l = { 0 };
	_cleanup_free_ char *root = NULL, *leviath = NULL, *unit = NULL, *unit_dir = NULL;

	memo_clear();
	if (o && o->data_root)
		root = xstrdup(o->data_root);
	else
		root = got(lev_datadir_root);
	if (root)
		add_data_root(&l, root);
	add_config(&l, got(lev_datadir_config_path), root);
	if (o && o->config_path)
		add_config(&l, xstrdup(o->config_path), root);

	/* Leviath's policy and rules: a missing one is guarded by Leviath's directory */
	leviath = got(lev_datadir_leviath_dir);
	if (leviath) {
		add(&l, "Leviath's policy", got(lev_datadir_leviath_policy_path), leviath, false);
		add(&l, "Leviath's rules", got(lev_datadir_leviath_rules_dir), leviath, true);
	}

	/* the systemd unit: missing, its directory is masked (a planted unit would run) */
	unit = got(lev_datadir_unit_path);
	if (unit) {
		char *slash;

		/* cut in a copy: GCC 12 at -O3 took a pointer into UNIT for one into got()'s frame */
		unit_dir = xstrdup(unit);
		slash = strrchr(unit_dir, '/');
		if (slash)
			*slash = '\0';
		add(&l, "the systemd unit", TAKE_PTR(unit), unit_dir, false);
	}
	memo_clear();

	if (!l.n)
		return lev_err_set(err, -ENOENT,
				   "cannot tell where lev's own files are: no home directory and "
				   "no LEVIATH_HOME");
	*out = l;
	return 0;
}

void lev_ownfiles_release(struct lev_ownfiles *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++) {
		free(l->v[i].path);
		free(l->v[i].real);
		free(l->v[i].guard);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

const struct lev_ownfile *lev_ownfiles_find(const struct lev_ownfiles *l, const char *real,
					    const char **matched)
{
	const struct lev_ownfile *best = NULL;
	const char *best_hit = NULL;
	size_t i;

	/* the most specific entry: "the credentials" rather than "the data root" */
	for (i = 0; real && l && i < l->n; i++) {
		const struct lev_ownfile *e = &l->v[i];
		const char *hit = lev_path_under(real, e->path) ? e->path :
				  e->real && lev_path_under(real, e->real) ? e->real : NULL;

		if (hit && (!best_hit || strlen(hit) > strlen(best_hit))) {
			best = e;
			best_hit = hit;
		}
	}
	if (best && matched)
		*matched = best_hit;
	return best;
}

char **lev_ownfiles_paths(const struct lev_ownfiles *l)
{
	char **v = NULL;
	size_t i;

	for (i = 0; l && i < l->n; i++) {
		if (!lev_strv_contains(v, l->v[i].path))
			v = lev_strv_push(v, l->v[i].path);
		if (l->v[i].real && !lev_strv_contains(v, l->v[i].real))
			v = lev_strv_push(v, l->v[i].real);
	}
	return v;
}

const char *lev_ownfile_mask(const struct lev_ownfile *e)
{
	struct stat st;

	if (lstat(e->path, &st) == 0 || (e->real && lstat(e->real, &st) == 0))
		return e->path;
	return e->guard;
}
