/*
 * forcecancel.c - a run written cancelled without its daemon (forcecancel.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/forcecancel.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/sock.h"
#include "liblev/daemon/store.h"

static double now_secs(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static bool status_final(const char *s)
{
	return lev_streq(s, "complete") || lev_streq(s, "error") || lev_streq(s, "cancelled");
}

/* The run's row, checked: not ended, no worker of it alive. */
static int cancel_row(struct lev_store *st, const char *id, struct lev_err *err)
{
	json_t *doc = NULL;
	json_int_t pid;
	double t = now_secs();
	int r = lev_store_run_get(st, id, &doc, err);

	if (r < 0)
		return r;
	if (!doc)
		return lev_err_set(err, -ENOENT, "no run '%s'", id);
	pid = json_integer_value(json_object_get(doc, "pid"));
	if (status_final(lev_json_str(doc, "status"))) {
		r = lev_err_set(err, -EALREADY, "run '%s' has already ended (%s)", id,
				lev_json_str(doc, "status"));
	} else if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
		/* a process by that number is there: maybe its worker, never ended blind */
		r = lev_err_set(err, -ETXTBSY, "run '%s': its worker (pid %lld) may still be "
				"running; start the daemon (lev daemon start), which recovers "
				"it, then cancel it", id, (long long)pid);
	} else {
		json_object_set_new(doc, "status", json_string("cancelled"));
		json_object_set_new(doc, "moved", json_real(t));
		json_object_set_new(doc, "finished", json_real(t));
		json_object_set_new(doc, "error", json_string("cancelled with --force while no "
							      "daemon ran"));
		json_object_del(doc, "pid");
		r = lev_store_run_put(st, doc, err);
		if (r == 0)
			r = lev_store_request_drop(st, id, err);
		if (r == 0)
			r = lev_store_commit(st, err);
	}
	json_decref(doc);
	return r;
}

int lev_force_cancel(const char *id, struct lev_err *err)
{
	_cleanup_free_ char *root = NULL, *lock = NULL, *db = NULL;
	struct lev_store *st = NULL;
	int lockfd = -1, r;

	if (lev_datadir_root(&root, err) < 0 || lev_sock_lock_path(&lock, err) < 0)
		return err ? err->code : -EINVAL;
	r = lev_sock_lock(lock, &lockfd, err);
	if (r < 0)
		return r;
	db = lev_path_join(root, LEV_DATADIR_DB);
	r = lev_store_open(db, &st, err);
	if (r == 0)
		r = cancel_row(st, id, err);
	lev_store_close(st);
	close(lockfd);
	return r;
}
