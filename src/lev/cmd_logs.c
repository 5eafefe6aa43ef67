/*
 * cmd_logs.c - lev logs RUN [-f]: a run's events (its record's events.jsonl).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/proto.h"

const char lev_usage_logs[] =
	"usage: lev logs RUN [-f|--follow]\n"
	"\n"
	"Print a run's events, one JSON object a line (the run record's\n"
	"events.jsonl).  With -f, keep printing them as they come until the run ends.\n";

/* The run's doc from the daemon, or NULL (a message was printed). */
static json_t *get_run(const char *id)
{
	json_t *req = lev_proto_request("get"), *reply = NULL, *run;

	json_object_set_new(req, "run", json_string(id));
	if (lev_daemon_call(req, &reply) != LEV_EXIT_OK)
		return NULL;
	run = json_incref(json_object_get(reply, "run"));
	json_decref(reply);
	return run;
}

static bool ended(const json_t *run)
{
	const char *s = lev_json_str(run, "status");

	return lev_streq(s, "complete") || lev_streq(s, "error") || lev_streq(s, "cancelled");
}

/* Copy what FD holds from *OFF on to stdout, whole lines only. */
static void copy_new(int fd, off_t *off)
{
	char buf[65536];

	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), *off), keep;

		if (n <= 0)
			return;
		for (keep = n; keep > 0 && buf[keep - 1] != '\n'; keep--)
			;
		if (keep == 0) {
			if (n < (ssize_t)sizeof(buf))
				return;	/* a line still being written */
			keep = n;	/* a line longer than the buffer */
		}
		fwrite(buf, 1, (size_t)keep, stdout);
		fflush(stdout);
		*off += keep;
	}
}

int cmd_logs(int argc, char **argv, struct lev_ctx *ctx)
{
	static const struct option longopts[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	bool follow = false;
	_cleanup_close_ int fd = -1;
	json_t *run;
	off_t off = 0;
	int c;

	(void)ctx;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f", longopts, NULL)) != -1) {
		if (c != 'f')
			return lev_usage_error("logs", "unknown option '%s'", argv[optind - 1]);
		follow = true;
	}
	if (optind >= argc)
		return lev_usage_error("logs", "which run? give its RUN id");
	if (optind + 1 < argc)
		return lev_usage_error("logs", "unexpected argument '%s'", argv[optind + 1]);
	run = get_run(argv[optind]);
	if (!run)
		return LEV_EXIT_FAIL;
	for (;;) {
		bool done = ended(run);

		if (fd < 0 && lev_json_str(run, "record")) {
			_cleanup_free_ char *p = lev_path_join(lev_json_str(run, "record"),
							       "events.jsonl");

			fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0 && errno != ENOENT) {
				json_decref(run);
				return lev_fail("cannot open '%s': %s", p, strerror(errno));
			}
		}
		if (fd >= 0)
			copy_new(fd, &off);
		if (!follow || done)
			break;
		usleep(200 * 1000);
		json_decref(run);
		run = get_run(argv[optind]);
		if (!run)
			return LEV_EXIT_FAIL;
	}
	if (fd < 0 && !follow)
		lev_warn("run %s has no record yet", lev_json_str(run, "id"));
	json_decref(run);
	return LEV_EXIT_OK;
}
