/*
 * runevents.c - a run's events from its record (runevents.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lev/runevents.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define EVENTS_MAX (256u << 20)	/* a record's events.jsonl is bounded well below this */

static bool run_id_ok(const char *id)
{
	size_t n = strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");

	return n > 0 && n <= 128 && !id[n];
}

/* The events.jsonl FD (consumed) as a new array, up to EVENTS_MAX bytes read. */
static json_t *events_of_fd(int fd)
{
	json_error_t je;
	json_t *arr;
	FILE *f = fdopen(fd, "r");

	if (!f) {
		close(fd);
		return NULL;
	}
	arr = json_array();
	for (;;) {
		json_t *ev = json_loadf(f, JSON_DISABLE_EOF_CHECK, &je);

		if (!ev)
			break;
		json_array_append_new(arr, ev);
		if (ftell(f) > (long)EVENTS_MAX)
			break;
	}
	fclose(f);
	return arr;
}

json_t *lev_run_events_at(int dirfd)
{
	int fd = openat(dirfd, "events.jsonl", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	return fd < 0 ? NULL : events_of_fd(fd);
}

int lev_run_events(struct lev_ctx *ctx, const char *id, json_t **out)
{
	_cleanup_free_ char *p = NULL;
	int fd;

	if (!run_id_ok(id))
		return lev_fail("'%s' is not a run id", id);
	if (lev_setup(ctx, CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	p = xasprintf("%s/%s/events.jsonl", ctx->paths.runs, id);
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return lev_fail(errno == ENOENT ? "no run '%s' here (no record at '%s')"
						: "cannot read the record of run '%s' ('%s')",
				id, p);
	*out = events_of_fd(fd);
	if (!*out)
		return lev_fail("cannot read '%s': %s", p, strerror(errno));
	return 0;
}
