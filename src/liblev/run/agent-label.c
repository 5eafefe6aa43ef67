/*
 * agent-label.c - labels from what a call touched (docs/integrity.md
 * "Labels from what was touched"): a file tool's result from the real path
 * of each object it read and the label ledger (policy/filelabel.h), a
 * network result from every hop it requested; and the ledger fed with what
 * the run writes while untrusted or private content is live (file tools,
 * and the workdir files a shell command changed).
 */
#include "liblev/run/agent-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/policy/filelabel.h"
#include "liblev/policy/integrity.h"
#include "liblev/policy/target.h"
#include "liblev/run/context.h"
#include "liblev/run/runrecord.h"

/* A shell command's changes: at most this many workdir entries are looked at. */
#define WALK_MAX 50000
#define WALK_DEPTH 64

static struct lev_filelabels *ledger(struct lev_agent *a)
{
	_cleanup_free_ char *root = NULL;

	if (a->labels)
		return a->labels;
	if (!a->o.data_root && lev_datadir_root(&root, NULL) < 0)
		return NULL;
	a->labels = lev_filelabels_new(a->o.data_root ? a->o.data_root : root);
	return a->labels;
}

void agent_label_free(struct lev_agent *a)
{
	a->labels = lev_filelabels_free(a->labels);
}

static const struct lev_integrity_policy *ipol(struct lev_agent *a)
{
	return lev_policy_integrity(lev_gate_policy(a->gate));
}

/* REAL relative to the workdir ("." for the workdir itself), or NULL outside it. */
static const char *workdir_rel(const struct lev_agent *a, const char *real)
{
	size_t n = strlen(a->workdir);

	if (!strcmp(real, a->workdir))
		return ".";
	if (!strncmp(real, a->workdir, n) && (real[n] == '/' || !strcmp(a->workdir, "/")))
		return real + n + (real[n] == '/');
	return NULL;
}

/* The [[sources]] path entries and [integrity] globs for the object at REAL. */
static void policy_label(struct lev_agent *a, const char *real, enum lev_integrity *i,
			 enum lev_level *l)
{
	const struct lev_integrity_policy *p = ipol(a);
	const char *rel = workdir_rel(a, real);
	const struct lev_source_label *s;

	*i = LEV_TRUSTED;
	if (!p)
		return;
	s = lev_integrity_source(p, NULL, rel, real, NULL);
	*i = s && s->has_integrity ? s->integrity : lev_integrity_of_file(p, rel, real);
	if (s && s->has_sensitivity)
		*l = lev_level_max(*l, s->sensitivity);
}

/*
 * One object read: its policy labels (a directory's: those its entries
 * get, "DIR/" as matched by "DIR/ *" and "DIR/ **"), then the ledger's.
 * Raises *I and *L.
 */
static void object_label(struct lev_agent *a, const struct lev_fs_touched *t,
			 enum lev_integrity *i, enum lev_level *l)
{
	struct lev_filelabels *lg = ledger(a);
	struct lev_filelabel fl = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	enum lev_integrity oi;

	if (t->dir) {
		/* a listing is the names of its entries: labelled as they are */
		_cleanup_free_ char *inside = xasprintf("%s/", strcmp(t->real, "/") ? t->real : "");

		policy_label(a, inside, &oi, l);
	} else {
		policy_label(a, t->real, &oi, l);
	}
	if (oi == LEV_UNTRUSTED)
		*i = LEV_UNTRUSTED;
	if (!lg)
		fl = (struct lev_filelabel){ true, LEV_UNTRUSTED, LEV_PRIVATE };
	else
		(void)lev_filelabels_of(lg, t->fd, t->real, &fl, &err);
	if (err.code && !a->labels_warned) {
		/* fail closed, and say so once */
		a->labels_warned = true;
		agent_warn(a, "the label ledger cannot be read (%s): every file read is labelled "
			   "untrusted and private until it is mended", err.msg);
	}
	if (fl.has) {
		if (fl.integrity == LEV_UNTRUSTED)
			*i = LEV_UNTRUSTED;
		*l = lev_level_max(*l, fl.sensitivity);
	}
}

bool agent_label_fs(struct lev_agent *a, const struct lev_fs_targets *fs, enum lev_level *level,
		    enum lev_integrity *integ)
{
	struct lev_fs_touched *t = NULL;
	size_t n = lev_fs_targets_touched(fs, &t);
	enum lev_integrity i = LEV_TRUSTED;

	for (size_t k = 0; k < n; k++)
		if (!t[k].written)
			object_label(a, &t[k], &i, level);
	lev_fs_touched_free(t, n);
	if (n)
		*integ = i;
	return n > 0;
}

/*
 * The object an input was read from, "DEV:INO:PATH" (lev_agent_opts
 * input_files): opened at PATH into *FD, its real path in REAL; false when
 * it is gone, or PATH is no longer the object the text was read from.
 */
static bool input_object(const char *spec, int *fd, char real[PATH_MAX])
{
	uintmax_t dev, ino;
	char *end;
	struct stat st;
	_cleanup_free_ char *link = NULL;
	ssize_t len;

	errno = 0;
	dev = strtoumax(spec, &end, 10);
	if (errno || *end != ':')
		return false;
	ino = strtoumax(end + 1, &end, 10);
	if (errno || *end != ':' || end[1] != '/')
		return false;
	*fd = open(end + 1, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (*fd < 0 || fstat(*fd, &st) < 0 || (uintmax_t)st.st_dev != dev ||
	    (uintmax_t)st.st_ino != ino)
		return false;
	/* the real path of the object opened, not of the name */
	link = xasprintf("/proc/self/fd/%d", *fd);
	len = readlink(link, real, PATH_MAX - 1);
	if (len <= 0 || real[0] != '/')
		return false;
	real[len] = '\0';
	return true;
}

bool agent_label_input(struct lev_agent *a, const char *key, enum lev_level *level,
		       enum lev_integrity *integ)
{
	size_t n = strlen(key);
	enum lev_integrity i = LEV_TRUSTED;
	bool any = false;

	for (char *const *f = a->o.input_files; f && *f; f++) {
		struct lev_fs_touched t = { .fd = -1 };
		_cleanup_close_ int fd = -1;
		char real[PATH_MAX];

		if (strncmp(*f, key, n) != 0 || (*f)[n] != '=')
			continue;
		any = true;
		if (!input_object(*f + n + 1, &fd, real)) {
			/* gone, moved or replaced since it was read: labelled as nothing vouches */
			i = LEV_UNTRUSTED;
			*level = lev_level_max(*level, LEV_PRIVATE);
			continue;
		}
		t.fd = fd;
		t.real = real;
		object_label(a, &t, &i, level);
	}
	if (any)
		*integ = i == LEV_UNTRUSTED ? LEV_UNTRUSTED : *integ;
	return any;
}

bool agent_label_hops(struct lev_agent *a, char *const *hops, enum lev_level *level,
		      enum lev_integrity *integ)
{
	const struct lev_integrity_policy *p = ipol(a);
	enum lev_integrity i = LEV_TRUSTED;

	if (!hops || !*hops)
		return false;
	for (char *const *h = hops; *h; h++) {
		struct lev_target_url u = { 0 };
		const struct lev_source_label *s = NULL;

		if (lev_target_url_parse(*h, &u, NULL) == 0)
			s = lev_integrity_source(p, u.host, NULL, NULL, NULL);
		lev_target_url_release(&u);
		/* a host no [[sources]] entry trusts is untrusted; any such hop taints it all */
		if (!(s && s->has_integrity && s->integrity == LEV_TRUSTED))
			i = LEV_UNTRUSTED;
		if (s && s->has_sensitivity)
			*level = lev_level_max(*level, s->sensitivity);
	}
	*integ = i;
	return true;
}

/* ---- writing: the ledger ----------------------------------------------------- */

/*
 * The label a write made now carries: the model's integrity and the
 * highest sensitivity it saw.  True when it needs an entry (untrusted or
 * private content was live).
 */
static bool write_label(struct lev_agent *a, enum lev_integrity *i, enum lev_level *l)
{
	if (!a->taint_enabled)
		return false;
	*i = lev_taint_model_integrity(lev_context_taint(a->ctx));
	*l = lev_level_max(a->seen, lev_context_taint_level(a->ctx));
	if (a->nested)
		*l = lev_level_max(*l, a->nested->level);
	return *i == LEV_UNTRUSTED || *l >= LEV_PRIVATE;
}

static void record(struct lev_agent *a, int fd, const char *real, enum lev_integrity i,
		   enum lev_level l, bool by_content)
{
	struct lev_filelabels *lg = ledger(a);
	struct lev_err err = LEV_ERR_INIT;

	if (lg && lev_filelabels_record(lg, fd, real, i, l, a->rec ? lev_runrecord_id(a->rec) : NULL,
					by_content, &err) < 0)
		agent_warn(a, "cannot record the label of '%s': %s", real, err.msg);
}

void agent_label_written(struct lev_agent *a, const struct lev_fs_targets *fs)
{
	struct lev_fs_touched *t = NULL;
	enum lev_integrity i;
	enum lev_level l;
	size_t n;

	if (!write_label(a, &i, &l))
		return;
	n = lev_fs_targets_touched(fs, &t);
	for (size_t k = 0; k < n; k++)
		if (t[k].written && !t[k].dir)
			record(a, t[k].fd, t[k].real, i, l, true);
	lev_fs_touched_free(t, n);
}

bool agent_label_shell_start(struct lev_agent *a, struct timespec *t0)
{
	enum lev_integrity i;
	enum lev_level l;

	/* the clock the kernel stamps files with: a change made after this is not older */
	return write_label(a, &i, &l) && clock_gettime(CLOCK_REALTIME_COARSE, t0) == 0;
}

struct walk {
	struct lev_agent *a;
	struct timespec t0;
	enum lev_integrity i;
	enum lev_level l;
	size_t seen;
	char *skip;		/* the data root's real path: the ledger is not a workdir file */
};

static bool changed_since(const struct stat *st, const struct timespec *t0)
{
	const struct timespec *c = &st->st_ctim, *m = &st->st_mtim;

	return c->tv_sec > t0->tv_sec || (c->tv_sec == t0->tv_sec && c->tv_nsec >= t0->tv_nsec) ||
	       m->tv_sec > t0->tv_sec || (m->tv_sec == t0->tv_sec && m->tv_nsec >= t0->tv_nsec);
}

/* Label every regular file under DFD (real path DIR) changed since the command started. */
static void walk_dir(struct walk *w, int dfd, const char *dir, unsigned depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)) && w->seen < WALK_MAX) {
		_cleanup_free_ char *path = NULL;
		struct stat st;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		w->seen++;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		path = xasprintf("%s/%s", dir, de->d_name);
		if (w->skip && lev_path_under(path, w->skip))
			continue;
		if (S_ISDIR(st.st_mode) && depth < WALK_DEPTH) {
			fd = openat(dirfd(d), de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				walk_dir(w, fd, path, depth + 1);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !changed_since(&st, &w->t0))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		record(w->a, fd, path, w->i, w->l, false);
		close(fd);
	}
	if (w->seen >= WALK_MAX && depth == 0)
		agent_warn(w->a, "a command changed the workdir while untrusted or private content "
			   "was live; only its first %d entries were looked at for labels",
			   WALK_MAX);
	closedir(d);
}

void agent_label_shell_done(struct lev_agent *a, const struct timespec *t0)
{
	_cleanup_free_ char *root = NULL;
	struct walk w = { .a = a, .t0 = *t0 };
	int fd;

	if (!write_label(a, &w.i, &w.l))
		return;
	if (a->o.data_root || lev_datadir_root(&root, NULL) == 0)
		w.skip = realpath(a->o.data_root ? a->o.data_root : root, NULL);
	fd = openat(lev_fs_ctx_root_fd(a->fs), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		walk_dir(&w, fd, a->workdir, 0);
	free(w.skip);
}
