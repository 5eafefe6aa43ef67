/*
 * datadir.c - the data root and the paths beneath it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "liblev/base/cleanup.h"
#include "liblev/conf/datadir.h"
#include "liblev/base/strv.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

int lev_datadir_root(char **out, struct lev_err *err)
{
	const char *lh = secure_getenv("LEVIATH_HOME");
	_cleanup_free_ char *home = NULL;
	int r;

	if (lh && *lh) {
		if (lh[0] != '/')
			return lev_err_set(err, -EINVAL,
					   "LEVIATH_HOME must be an absolute path, not '%s'", lh);
		*out = lev_path_join(lh, ".leviath");
		return 0;
	}
	r = lev_home_dir(&home, err);
	if (r < 0)
		return r;
	*out = lev_path_join(home, ".leviath");
	return 0;
}

static int under_root(const char *rel, char **out, struct lev_err *err)
{
	_cleanup_free_ char *root = NULL;
	int r = lev_datadir_root(&root, err);

	if (r < 0)
		return r;
	*out = lev_path_join(root, rel);
	return 0;
}

int lev_datadir_config_path(char **out, struct lev_err *err)
{
	const char *p = secure_getenv("LEVIATH_CONFIG_PATH");

	if (p && *p) {
		*out = xstrdup(p);
		return 0;
	}
	return under_root("config.toml", out, err);
}

/* P with its longest existing prefix resolved (symlinks, "..") */
static char *real_prefix(const char *p)
{
	_cleanup_free_ char *dir = NULL;
	char *r = realpath(p, NULL);
	const char *slash;

	if (r || p[0] != '/')
		return r;
	slash = strrchr(p, '/');
	if (!slash || slash == p)
		return NULL;
	dir = xstrndup(p, (size_t)(slash - p));
	r = real_prefix(dir);
	if (!r)
		return NULL;
	{
		char *j = xasprintf("%s%s", strcmp(r, "/") ? r : "", slash);
		free(r);
		return j;
	}
}

static char **push_own(char **v, const char *p)
{
	_cleanup_free_ char *real = NULL;

	if (!p || p[0] != '/')
		return v;
	if (!lev_strv_contains(v, p))
		v = lev_strv_push(v, p);
	real = real_prefix(p);
	if (real && !lev_strv_contains(v, real))
		v = lev_strv_push(v, real);
	return v;
}

char **lev_datadir_own_paths(const char *data_root, const char *config_path)
{
	_cleanup_free_ char *root = NULL, *cfg = NULL;
	char **v = NULL;

	if (data_root)
		v = push_own(v, data_root);
	else if (lev_datadir_root(&root, NULL) == 0)
		v = push_own(v, root);
	if (lev_datadir_config_path(&cfg, NULL) == 0)
		v = push_own(v, cfg);
	v = push_own(v, config_path);
	return v;
}

int lev_datadir_policy_path(char **out, struct lev_err *err)
{
	return under_root("policy.toml", out, err);
}

int lev_datadir_rules_dir(char **out, struct lev_err *err)
{
	return under_root("rules", out, err);
}

int lev_datadir_runs_dir(char **out, struct lev_err *err)
{
	return under_root("runs", out, err);
}

static int leviath_config(const char *rel, char **out, struct lev_err *err)
{
	const char *xdg = secure_getenv("XDG_CONFIG_HOME");
	_cleanup_free_ char *home = NULL;
	int r;

	if (xdg && *xdg == '/') {
		*out = xasprintf("%s/leviath/%s", xdg, rel);
		return 0;
	}
	r = lev_home_dir(&home, err);
	if (r < 0)
		return r;
	*out = xasprintf("%s/.config/leviath/%s", home, rel);
	return 0;
}

int lev_datadir_leviath_policy_path(char **out, struct lev_err *err)
{
	return leviath_config("policy.toml", out, err);
}

int lev_datadir_leviath_rules_dir(char **out, struct lev_err *err)
{
	return leviath_config("rules", out, err);
}

int lev_datadir_credentials_path(char **out, struct lev_err *err)
{
	return under_root("credentials.toml", out, err);
}

int lev_datadir_agents_dir(char **out, struct lev_err *err)
{
	return under_root("agents", out, err);
}

bool lev_agent_name_valid(const char *name)
{
	size_t i, n;

	if (!name)
		return false;
	n = strlen(name);
	if (n == 0 || n > LEV_AGENT_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');
		if (i == 0 && !alnum)
			return false;	/* also rules out ".", ".." and "-x" */
		if (!alnum && c != '.' && c != '_' && c != '-')
			return false;
	}
	return true;
}

int lev_datadir_agent_dir(const char *name, char **out, struct lev_err *err)
{
	_cleanup_free_ char *agents = NULL;
	int r;

	if (!lev_agent_name_valid(name)) {
		_cleanup_free_ char *p = lev_printable(name ? name : "", name ? strlen(name) : 0,
						       LEV_AGENT_NAME_MAX);
		return lev_err_set(err, -EINVAL,
				   "'%s' is not a valid agent name (use letters, digits, '.', '_' "
				   "and '-', starting with a letter or digit, at most %d bytes)",
				   p, LEV_AGENT_NAME_MAX);
	}
	r = lev_datadir_agents_dir(&agents, err);
	if (r < 0)
		return r;
	*out = lev_path_join(agents, name);
	return 0;
}

int lev_datadir_ensure(const char *dir, struct lev_err *err)
{
	return lev_mkdir_p(dir, LEV_DIR_MODE, err);
}
