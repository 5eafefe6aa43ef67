/*
 * meta.c - meta.json and daemon.pid, Leviath's files (meta.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/daemon/meta.h"
#include "liblev/daemon/proto.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/run/runrecord.h"

#define WAITING "waiting: "

const char *lev_meta_status(const char *s, const char **reason, size_t *reason_len)
{
	static const char *const same[] = { "paused", "complete", "error", "cancelled", NULL };

	if (reason)
		*reason = NULL;
	if (reason_len)
		*reason_len = 0;
	if (!s || lev_streq(s, "idle"))
		return "starting";
	if (lev_streq(s, "active"))
		return "running";
	if (lev_startswith(s, WAITING)) {
		if (reason)
			*reason = s + strlen(WAITING);
		if (reason_len)
			*reason_len = strlen(s + strlen(WAITING));
		return "waiting_input";
	}
	for (size_t i = 0; same[i]; i++)
		if (lev_streq(s, same[i]))
			return same[i];
	return "error";
}

/* DOC's time KEY (seconds, a real) as whole seconds, as Leviath writes them; NULL: none. */
static json_t *secs(const json_t *doc, const char *key)
{
	const json_t *v = json_object_get(doc, key);

	return json_is_number(v) ? json_integer((json_int_t)floor(json_number_value(v)))
				 : json_null();
}

static json_t *num(const json_t *doc, const char *key)
{
	const json_t *v = json_object_get(doc, key);

	return json_is_integer(v) ? json_incref((json_t *)v) : json_integer(0);
}

static json_t *str(const json_t *doc, const char *key)
{
	const char *s = lev_json_str(doc, key);

	return s ? json_string(s) : json_null();
}

json_t *lev_meta_of(const json_t *doc)
{
	const char *reason;
	size_t rlen;
	const char *status = lev_meta_status(lev_json_str(doc, "status"), &reason, &rlen);
	json_t *m = json_object();

	json_object_set_new(m, "run_id", str(doc, "id"));
	json_object_set_new(m, "agent", str(doc, "agent"));
	json_object_set_new(m, "blueprint_path", str(doc, "blueprint_path"));
	json_object_set_new(m, "title", str(doc, "title"));
	json_object_set_new(m, "status", json_string(status));
	json_object_set_new(m, "wait_reason",
			    reason ? json_stringn(reason, rlen) : json_null());
	json_object_set_new(m, "current_stage", str(doc, "stage"));
	json_object_set_new(m, "iteration", num(doc, "iteration"));
	json_object_set_new(m, "tool_calls", num(doc, "tools"));
	json_object_set_new(m, "prompt_tokens", num(doc, "prompt_tokens"));
	json_object_set_new(m, "completion_tokens", num(doc, "completion_tokens"));
	json_object_set_new(m, "cached_tokens", num(doc, "cached_tokens"));
	json_object_set_new(m, "cache_write_tokens", num(doc, "cache_write_tokens"));
	json_object_set_new(m, "model", str(doc, "model"));
	json_object_set_new(m, "workdir", str(doc, "workdir"));
	json_object_set_new(m, "yolo", json_boolean(json_is_true(json_object_get(doc, "yolo"))));
	json_object_set_new(m, "started_at", secs(doc, "created"));
	json_object_set_new(m, "updated_at", secs(doc, "updated"));
	json_object_set_new(m, "last_progress_at", secs(doc, "moved"));
	json_object_set_new(m, "finished_at", secs(doc, "finished"));
	json_object_set_new(m, "error", str(doc, "error"));
	json_object_set_new(m, "pid", json_integer(0));
	json_object_set_new(m, "lev_status", str(doc, "status"));
	return m;
}

/* Replace NAME in DIRFD with the LEN bytes of TEXT: a temporary file renamed over it. */
static int replace_at(int dirfd, const char *name, const char *text, size_t len,
		      struct lev_err *err)
{
	_cleanup_free_ char *tmp = xasprintf(".%s.tmp", name);
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r = 0;

	if (fd < 0)
		return lev_err_errno(err, -errno, "cannot write '%s'", name);
	if (lev_write_all(fd, text, len) < 0)
		r = lev_err_errno(err, -errno, "cannot write '%s'", name);
	if (close(fd) < 0 && r == 0)
		r = lev_err_errno(err, -errno, "cannot write '%s'", name);
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = lev_err_errno(err, -errno, "cannot rename '%s'", tmp);
	if (r < 0)
		(void)unlinkat(dirfd, tmp, 0);
	return r;
}

int lev_meta_write(const char *runs_dir, const json_t *doc, struct lev_err *err)
{
	const char *id = lev_json_str(doc, "id");
	_cleanup_free_ char *dir = NULL, *text = NULL;
	_cleanup_close_ int dfd = -1;
	json_t *m;
	int r;

	if (!runs_dir || !id || !*id || strchr(id, '/') || id[0] == '.')
		return 0;
	dir = lev_path_join(runs_dir, id);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : lev_err_errno(err, -errno, "cannot open '%s'", dir);
	m = lev_meta_of(doc);
	text = json_dumps(m, JSON_COMPACT);
	json_decref(m);
	if (!text)
		return lev_err_set(err, -ENOMEM, "cannot encode the meta.json of run %s", id);
	r = replace_at(dfd, "meta.json", text, strlen(text), err);
	return r;
}

int lev_meta_submit(const char *runs_dir, const json_t *doc, struct lev_err *err)
{
	const char *id = lev_json_str(doc, "id");
	_cleanup_free_ char *dir = NULL;
	int r;

	if (!runs_dir || !lev_run_id_valid(id))
		return lev_err_set(err, -EINVAL, "'%s' is not a run id", id ? id : "");
	dir = lev_path_join(runs_dir, id);
	/* the runs' folder made only when it is missing: not a mkdir per level a run */
	r = mkdir(dir, LEV_DIR_MODE) < 0 ? -errno : 0;
	if (r == -ENOENT) {
		r = lev_datadir_ensure(runs_dir, err);
		if (r < 0)
			return r;
		r = mkdir(dir, LEV_DIR_MODE) < 0 ? -errno : 0;
	}
	if (r < 0 && r != -EEXIST)
		return lev_err_errno(err, r, "cannot create run directory '%s'", dir);
	return lev_meta_write(runs_dir, doc, err);
}

int lev_meta_pidfile(const char *path, struct lev_err *err)
{
	_cleanup_free_ char *dir = xstrdup(path), *text = xasprintf("%d\n", (int)getpid());
	char *slash = strrchr(dir, '/');
	_cleanup_close_ int dfd = -1;

	if (!slash)
		return lev_err_set(err, -EINVAL, "'%s' is not an absolute path", path);
	*slash = '\0';
	dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return lev_err_errno(err, -errno, "cannot open '%s'", dir);
	return replace_at(dfd, slash + 1, text, strlen(text), err);
}
