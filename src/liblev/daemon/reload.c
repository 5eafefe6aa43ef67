/*
 * reload.c - watching the config, the policy and the rules (see reload.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/config.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/reload.h"
#include "liblev/policy/policy.h"
#include "liblev/policy/rules.h"

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)
#define GOOD_MAX ((size_t)4 << 20)

struct lev_reload {
	int fd;
	char *config, *policy, *rules;	/* the watched paths */
	char *leviath;			/* Leviath's policy.toml, merged into ours by runs */
	char *root;
	char *good_config, *good_policy, *good_leviath;	/* <root>/daemon-good/... */
	char **run_configs;		/* other runs' own config files (LEVIATH_CONFIG_PATH) */
	char **dirs;			/* every directory to watch, existing or not */
	bool config_bad, policy_bad, leviath_bad;
	char *error;
	uint64_t max_inferences;	/* the last good config's [limits] max_concurrent_inferences */
	bool had_good;			/* a config was good once: the two below are its */
	struct lev_webhook_conf webhook;
	bool allow_local_network;
};

static char *dir_of(const char *path)
{
	_cleanup_free_ char *copy = xstrdup(path);

	return xstrdup(dirname(copy));
}

/*
 * Watch DIR, or while it does not exist the nearest parent that does: a
 * directory made later (~/.config/leviath/ for Leviath's policy) is seen
 * as it appears, and watched from then on (rewatch()).
 */
static void watch_one(struct lev_reload *rl, const char *dir)
{
	_cleanup_free_ char *d = xstrdup(dir);

	while (inotify_add_watch(rl->fd, d, WATCH_MASK | IN_ONLYDIR) < 0 && errno == ENOENT) {
		char *slash = strrchr(d, '/');

		if (!slash || slash == d)
			break;
		*slash = '\0';
	}
}

static void watch(struct lev_reload *rl, const char *dir)
{
	if (!lev_strv_contains(rl->dirs, dir))
		rl->dirs = lev_strv_push(rl->dirs, dir);
	watch_one(rl, dir);
}

/* After a change: a directory that appeared is watched itself (inotify adds no twice). */
static void rewatch(struct lev_reload *rl)
{
	for (char **d = rl->dirs; d && *d; d++)
		watch_one(rl, *d);
}

int lev_reload_open(struct lev_reload **out, struct lev_err *err)
{
	struct lev_reload *rl = xcalloc(1, sizeof(*rl));
	_cleanup_free_ char *cdir = NULL, *pdir = NULL, *good = NULL;

	rl->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (rl->fd < 0) {
		free(rl);
		return lev_err_errno(err, -errno, "cannot watch the config (inotify)");
	}
	if (lev_datadir_config_path(&rl->config, err) < 0 ||
	    lev_datadir_policy_path(&rl->policy, err) < 0 ||
	    lev_datadir_rules_dir(&rl->rules, err) < 0 || lev_datadir_root(&rl->root, err) < 0 ||
	    lev_datadir_leviath_policy_path(&rl->leviath, err) < 0) {
		lev_reload_free(rl);
		return err ? err->code : -EINVAL;
	}
	cdir = dir_of(rl->config);
	pdir = dir_of(rl->policy);
	watch(rl, cdir);
	watch(rl, pdir);
	watch(rl, rl->root);
	watch(rl, rl->rules);
	{
		_cleanup_free_ char *ldir = dir_of(rl->leviath);	/* same basename as ours */

		watch(rl, ldir);
	}
	good = lev_path_join(rl->root, "daemon-good");
	rl->good_config = lev_path_join(good, "config.toml");
	rl->good_policy = lev_path_join(good, "policy.toml");
	rl->good_leviath = lev_path_join(good, "leviath-policy.toml");
	*out = rl;
	return 0;
}

struct lev_reload *lev_reload_free(struct lev_reload *rl)
{
	if (!rl)
		return NULL;
	if (rl->fd >= 0)
		close(rl->fd);
	free(rl->config);
	free(rl->policy);
	free(rl->rules);
	free(rl->leviath);
	free(rl->root);
	free(rl->good_config);
	free(rl->good_policy);
	free(rl->good_leviath);
	free(rl->error);
	lev_strv_free(rl->run_configs);
	lev_strv_free(rl->dirs);
	free(rl);
	return NULL;
}

int lev_reload_fd(const struct lev_reload *rl)
{
	return rl ? rl->fd : -1;
}

static bool base_is(const char *path, const char *name)
{
	const char *b = strrchr(path, '/');

	return b && !strcmp(name, b + 1);
}

/* A directory named NAME is one of those watched, or on the way to one. */
static bool leads_to_watched(const struct lev_reload *rl, const char *name)
{
	size_t n = strlen(name);

	for (char **d = rl->dirs; d && *d; d++)
		for (const char *p = strchr(*d, '/'); p; p = strchr(p + 1, '/'))
			if (!strncmp(p + 1, name, n) && (p[1 + n] == '/' || !p[1 + n]))
				return true;
	return false;
}

/* EV names a watched file, or a directory that may lead to one. */
static bool is_watched(const struct lev_reload *rl, const struct inotify_event *ev)
{
	const char *name = ev->name;
	size_t n = strlen(name);

	if (ev->mask & IN_ISDIR)
		return leads_to_watched(rl, name);
	for (char **c = rl->run_configs; c && *c; c++)
		if (base_is(*c, name))
			return true;
	return base_is(rl->config, name) || base_is(rl->policy, name) ||
	       base_is(rl->rules, name) || base_is(rl->leviath, name) ||
	       (n > 4 && !strcmp(name + n - 4, ".lua"));
}

void lev_reload_watch_config(struct lev_reload *rl, const char *path)
{
	_cleanup_free_ char *dir = NULL;

	if (!rl || !path || lev_reload_is_config(rl, path) ||
	    lev_strv_contains(rl->run_configs, path))
		return;
	rl->run_configs = lev_strv_push(rl->run_configs, path);
	dir = dir_of(path);
	watch(rl, dir);
}

bool lev_reload_is_config(const struct lev_reload *rl, const char *path)
{
	return rl && path && !strcmp(path, rl->config);
}

bool lev_reload_pending(struct lev_reload *rl)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool changed = false;
	ssize_t n;

	while ((n = read(rl->fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->mask & IN_Q_OVERFLOW)
				changed = true;
			else if (ev->len && is_watched(rl, ev))
				changed = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	/* a directory may have just been made (the rules', Leviath's) */
	if (changed)
		rewatch(rl);
	return changed;
}

/* Copy SRC (a file just found good) to DST, 0600, atomically; a missing SRC removes DST. */
static void keep_good(const char *src, const char *dst)
{
	_cleanup_free_ char *dir = dir_of(dst), *tmp = xasprintf("%s.tmp", dst);
	_cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), out = -1;
	char buf[65536];
	size_t total = 0;
	ssize_t n;

	if (in < 0) {
		(void)unlink(dst);
		return;
	}
	(void)mkdir(dir, 0700);
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0)
		return;
	while ((n = read(in, buf, sizeof(buf))) > 0 && total < GOOD_MAX) {
		if (lev_write_all(out, buf, (size_t)n) < 0)
			break;
		total += (size_t)n;
	}
	if (n == 0 && fsync(out) == 0)
		(void)rename(tmp, dst);
	else
		(void)unlink(tmp);
}

/* The rules as a run loads them: a file it would skip is a problem here. */
static int check_rules(const char *dir, struct lev_err *err)
{
	struct lev_rules *rules = NULL;
	char *const *bad;
	int r = lev_rules_load_dir(dir, NULL, &rules, err);

	if (r < 0)
		return r;
	bad = lev_rules_load_errors(rules);
	if (bad && bad[0])
		r = lev_err_set(err, LEV_EPARSE, "%s", bad[0]);
	lev_rules_free(rules);
	return r;
}

int lev_reload_check(struct lev_reload *rl, struct lev_err *err)
{
	struct lev_config cfg;
	struct lev_policy *pol = NULL;
	struct lev_err e = LEV_ERR_INIT;
	int r;

	free(rl->error);
	rl->error = NULL;
	rl->config_bad = lev_config_load_file(rl->config, &cfg, &e) < 0;
	if (!rl->config_bad) {
		rl->max_inferences = cfg.limits.max_concurrent_inferences;
		rl->had_good = true;
		rl->webhook = cfg.webhook;
		rl->allow_local_network = cfg.allow_local_network;
		lev_config_release(&cfg);
		keep_good(rl->config, rl->good_config);
	} else {
		rl->error = xstrdup(e.msg);
	}
	lev_err_clear(&e);
	rl->policy_bad = lev_policy_load(rl->policy, &pol, NULL, &e) < 0;
	if (!rl->policy_bad) {
		lev_policy_free(pol);
		keep_good(rl->policy, rl->good_policy);
	} else if (!rl->error) {
		rl->error = xstrdup(e.msg);
	}
	lev_err_clear(&e);
	/* Leviath's is checked as runs load it: merged into ours (alone when ours is broken) */
	pol = NULL;
	rl->leviath_bad = (rl->policy_bad ? lev_policy_load(rl->leviath, &pol, NULL, &e)
					  : lev_policy_load_both(rl->policy, rl->leviath, &pol, NULL,
								 NULL, &e)) < 0;
	if (!rl->leviath_bad)
		keep_good(rl->leviath, rl->good_leviath);	/* none on disk: none kept */
	else if (!rl->error)
		rl->error = xstrdup(e.msg);
	lev_policy_free(pol);
	lev_err_clear(&e);
	if (!rl->error && check_rules(rl->rules, &e) < 0)
		rl->error = xstrdup(e.msg);
	if (!rl->error)
		return 0;
	r = lev_err_set(err, LEV_EPARSE, "%s", rl->error);
	return r;
}

uint64_t lev_reload_max_inferences(const struct lev_reload *rl)
{
	return rl ? rl->max_inferences : 0;
}

void lev_reload_webhook(const struct lev_reload *rl, struct lev_webhook_conf *conf,
			bool *allow_local)
{
	struct lev_config def;

	if (rl && rl->had_good) {
		*conf = rl->webhook;
		*allow_local = rl->allow_local_network;
		return;
	}
	lev_config_init(&def);
	*conf = def.webhook;
	*allow_local = false;
	lev_config_release(&def);
}

const char *lev_reload_error(const struct lev_reload *rl)
{
	return rl ? rl->error : NULL;
}

/* The last good copy at GOOD when the live file is BAD and a copy was kept, else NULL. */
static const char *good_copy(bool bad, const char *good)
{
	return bad && access(good, F_OK) == 0 ? good : NULL;
}

void lev_reload_good_paths(const struct lev_reload *rl, const char **config, const char **policy,
			   const char **leviath)
{
	*config = *policy = *leviath = NULL;
	if (!rl)
		return;
	*config = good_copy(rl->config_bad, rl->good_config);
	*policy = good_copy(rl->policy_bad, rl->good_policy);
	*leviath = good_copy(rl->leviath_bad, rl->good_leviath);
}
