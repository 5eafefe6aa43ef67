/*
 * datadir.c - the data root and the paths beneath it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "liblev/base/cleanup.h"
#include "liblev/conf/datadir.h"
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
	return under_root(LEV_DATADIR_CONFIG, out, err);
}

int lev_datadir_policy_path(char **out, struct lev_err *err)
{
	return under_root(LEV_DATADIR_POLICY, out, err);
}

int lev_datadir_rules_dir(char **out, struct lev_err *err)
{
	return under_root(LEV_DATADIR_RULES, out, err);
}

int lev_datadir_runs_dir(char **out, struct lev_err *err)
{
	return under_root(LEV_DATADIR_RUNS, out, err);
}

/* ${XDG_CONFIG_HOME:-~/.config}/REL (XDG_CONFIG_HOME only when absolute) */
static int xdg_config(const char *rel, char **out, struct lev_err *err)
{
	const char *xdg = secure_getenv("XDG_CONFIG_HOME");
	_cleanup_free_ char *home = NULL;
	int r;

	if (xdg && *xdg == '/') {
		*out = lev_path_join(xdg, rel);
		return 0;
	}
	r = lev_home_dir(&home, err);
	if (r < 0)
		return r;
	*out = xasprintf("%s/.config/%s", home, rel);
	return 0;
}

int lev_datadir_leviath_dir(char **out, struct lev_err *err)
{
	return xdg_config("leviath", out, err);
}

int lev_datadir_leviath_policy_path(char **out, struct lev_err *err)
{
	return xdg_config("leviath/policy.toml", out, err);
}

int lev_datadir_leviath_rules_dir(char **out, struct lev_err *err)
{
	return xdg_config("leviath/rules", out, err);
}

int lev_datadir_unit_path(char **out, struct lev_err *err)
{
	return xdg_config("systemd/user/" LEV_UNIT_NAME, out, err);
}

int lev_datadir_socket_path(char **out, struct lev_err *err)
{
	return under_root(LEV_DATADIR_SOCKET, out, err);
}

int lev_datadir_lock_path(char **out, struct lev_err *err)
{
	return under_root(LEV_DATADIR_LOCK, out, err);
}

int lev_datadir_db_path(char **out, struct lev_err *err)
{
	return under_root(LEV_DATADIR_DB, out, err);
}

int lev_datadir_credentials_path(char **out, struct lev_err *err)
{
	return under_root(LEV_DATADIR_CREDENTIALS, out, err);
}

int lev_datadir_agents_dir(char **out, struct lev_err *err)
{
	return under_root(LEV_DATADIR_AGENTS, out, err);
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
