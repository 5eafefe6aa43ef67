/*
 * cmd_label.c - lev label [--clear] PATH...: the labels files keep across
 * runs (liblev/policy/filelabel.h, docs/integrity.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/policy/filelabel.h"
#include "liblev/policy/fsconfine.h"

const char lev_usage_label[] =
	"usage: lev label [--clear] PATH...\n"
	"\n"
	"Show the label each file keeps from the run that wrote it: a file written\n"
	"while untrusted or private content was live is read back untrusted (or\n"
	"private) by every later run, whatever its name or path says.  The label\n"
	"follows the file by its inode, its path and its contents, so a rename or a\n"
	"copy keeps it.\n"
	"\n"
	"  --clear   forget every label that matches PATH: it is read as the policy\n"
	"            says again (say so only once you have read it yourself)\n";

/* The object at PATH: an O_PATH fd (-1 when it is gone) and its real path. */
static int resolve(const char *path, int *fd, char **real)
{
	_cleanup_free_ char *cwd = NULL;

	*fd = open(path, O_PATH | O_CLOEXEC);
	if (*fd >= 0)
		return lev_confine_fd_path(*fd, real, NULL);
	if (errno != ENOENT)
		return -errno;
	/* gone: its labels can still be named by the path it had */
	if (path[0] == '/') {
		*real = xstrdup(path);
		return 0;
	}
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return -errno;
	*real = lev_path_join(cwd, path);
	return 0;
}

static void show(const char *path, const struct lev_filelabel_entry *const *e, const char **why,
		 long n)
{
	if (!n) {
		printf("%s: no label\n", path);
		return;
	}
	for (long i = 0; i < n; i++) {
		char when[32] = "?";
		time_t t = (time_t)e[i]->at;
		struct tm tm;

		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		printf("%s: %s, %s (written by run %s at %s as '%s'; matched by %s)\n", path,
		       lev_integrity_name(e[i]->integrity), lev_level_name(e[i]->sensitivity),
		       e[i]->run ? e[i]->run : "?", when, e[i]->path, why[i]);
	}
}

static int one(struct lev_filelabels *l, const char *path, bool clear)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *real = NULL;
	_cleanup_close_ int fd = -1;
	int r = resolve(path, &fd, &real);

	if (r < 0)
		return lev_fail("'%s': %s", path, strerror(-r));
	if (clear) {
		size_t n = 0;

		if (lev_filelabels_clear(l, fd, real, &n, &err) < 0)
			return lev_fail("%s", err.msg);
		printf(n ? "%s: label cleared (%zu entries)\n" : "%s: no label\n", path, n);
	} else {
		const struct lev_filelabel_entry **e = NULL;
		const char **why = NULL;
		long n = lev_filelabels_find(l, fd, real, &e, &why, &err);

		if (n < 0)
			return lev_fail("%s", err.msg);
		show(path, e, why, n);
		free(e);
		free(why);
	}
	return LEV_EXIT_OK;
}

int cmd_label(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_filelabels *l;
	bool clear = false, opts_done = false;
	char **paths = NULL;
	size_t n = 0;
	int rc = LEV_EXIT_OK;

	for (int i = 1; i < argc; i++) {
		if (!opts_done && !strcmp(argv[i], "--"))
			opts_done = true;
		else if (!opts_done && !strcmp(argv[i], "--clear"))
			clear = true;
		else if (!opts_done && argv[i][0] == '-' && argv[i][1])
			return lev_usage_error("label", "unknown option '%s'", argv[i]);
		else
			paths = xreallocarray(paths, ++n, sizeof(*paths)), paths[n - 1] = argv[i];
	}
	if (!n) {
		free(paths);
		return lev_usage_error("label", "which file? give its path");
	}
	if (lev_setup(ctx, CMD_NEEDS_DATA_ROOT) < 0) {
		free(paths);
		return LEV_EXIT_FAIL;
	}
	l = lev_filelabels_new(ctx->paths.root);
	for (size_t i = 0; i < n; i++)
		if (one(l, paths[i], clear) != LEV_EXIT_OK)
			rc = LEV_EXIT_FAIL;
	lev_filelabels_free(l);
	free(paths);
	return rc;
}
