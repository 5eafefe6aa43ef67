/*
 * mock-server.h - start and stop tests/helpers/mock-model from a unit test.
 *
 *	struct mock m;
 *	mock_start(&m, "{\"responses\": [...]}");   // script as JSON text
 *	... requests to m.base_url (http://127.0.0.1:PORT/v1) ...
 *	n = mock_requests(&m, &lines);              // recorded requests
 *	mock_stop(&m);
 *
 * The server runs on loopback only; it dies with the test process.
 * $BUILD_DIR (set by meson) locates the helper.
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct mock {
	pid_t pid;
	unsigned port;
	char dir[64];
	char script[128];
	char port_file[128];
	char record[128];
	char base_url[64];	/* http://127.0.0.1:PORT/v1 */
	char root_url[64];	/* http://127.0.0.1:PORT */
};

static inline void mock_die(const char *what)
{
	fprintf(stderr, "mock-server: %s: %s\n", what, strerror(errno));
	abort();
}

static inline void mock_start(struct mock *m, const char *script_json)
{
	const char *build = getenv("BUILD_DIR");
	char helper[4096];
	FILE *f;

	memset(m, 0, sizeof(*m));
	if (!build)
		build = ".";
	snprintf(helper, sizeof(helper), "%s/tests/helpers/mock-model", build);
	snprintf(m->dir, sizeof(m->dir), "/tmp/lev-mock.XXXXXX");
	if (!mkdtemp(m->dir))
		mock_die("mkdtemp");
	snprintf(m->script, sizeof(m->script), "%s/script.json", m->dir);
	snprintf(m->port_file, sizeof(m->port_file), "%s/port", m->dir);
	snprintf(m->record, sizeof(m->record), "%s/record.jsonl", m->dir);
	f = fopen(m->script, "we");
	if (!f || fputs(script_json, f) < 0 || fclose(f) != 0)
		mock_die("writing the script");
	m->pid = fork();
	if (m->pid < 0)
		mock_die("fork");
	if (m->pid == 0) {
		int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (devnull >= 0)
			dup2(devnull, STDOUT_FILENO);
		execl(helper, "mock-model", "--script", m->script, "--port-file", m->port_file,
		      "--record", m->record, (char *)NULL);
		_exit(127);
	}
	/* Wait for the port file (bounded: 20 s). */
	for (int i = 0; i < 2000; i++) {
		struct timespec ts = { 0, 10 * 1000000L };
		int status;
		f = fopen(m->port_file, "re");
		if (f) {
			if (fscanf(f, "%u", &m->port) != 1)
				m->port = 0;
			fclose(f);
			if (m->port)
				break;
		}
		if (waitpid(m->pid, &status, WNOHANG) == m->pid) {
			fprintf(stderr, "mock-server: mock-model exited early (%s)\n", helper);
			abort();
		}
		nanosleep(&ts, NULL);
	}
	if (!m->port) {
		fprintf(stderr, "mock-server: mock-model did not start\n");
		abort();
	}
	snprintf(m->root_url, sizeof(m->root_url), "http://127.0.0.1:%u", m->port);
	snprintf(m->base_url, sizeof(m->base_url), "http://127.0.0.1:%u/v1", m->port);
}

/* The recorded requests as a JSON array (new reference). */
static inline json_t *mock_requests(const struct mock *m)
{
	json_t *a = json_array();
	char line[1 << 16];
	FILE *f = fopen(m->record, "re");

	if (!f)
		return a;
	while (fgets(line, sizeof(line), f)) {
		json_t *v = json_loads(line, 0, NULL);
		if (v)
			json_array_append_new(a, v);
	}
	fclose(f);
	return a;
}

static inline void mock_stop(struct mock *m)
{
	char path[256];

	if (m->pid > 0) {
		kill(m->pid, SIGTERM);
		waitpid(m->pid, NULL, 0);
		m->pid = 0;
	}
	unlink(m->script);
	unlink(m->port_file);
	unlink(m->record);
	snprintf(path, sizeof(path), "%s/port.tmp", m->dir);
	unlink(path);
	rmdir(m->dir);
}
