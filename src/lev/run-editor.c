/*
 * run-editor.c - lev run AGENT with no task: the task written in the user's
 * editor, as Leviath's lev run does (docs/run.md, "Writing the task in
 * your editor").
 *
 * The editor is $VISUAL, then $EDITOR (split on whitespace, so
 * "code --wait" works), then the first of vim, nano, vi on PATH.  Stdin
 * must be a terminal, as Leviath's: a script, a pipe or lev serve's
 * runner gets one line saying to give the task with -t, never an editor
 * started with nobody at it.  It edits a private temporary file holding a short
 * commented template; lines beginning with '#' are stripped and an empty
 * result cancels the run before anything is spawned.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "lev/cmd.h"
#include "lev/run-editor.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/blueprint.h"

extern char **environ;

#define TASK_EDIT_MAX ((size_t)1 << 20)

/* The editor's words: $VISUAL, $EDITOR, or vim, nano, vi on PATH; NULL: none. */
static char **editor_argv(void)
{
	static const char *const fallback[] = { "vim", "nano", "vi", NULL };
	const char *env[] = { getenv("VISUAL"), getenv("EDITOR") };
	const char *path = getenv("PATH");
	char **v = NULL;

	for (size_t i = 0; i < 2 && !v; i++) {
		_cleanup_free_ char *copy = env[i] ? xstrdup(env[i]) : NULL;
		char *save = NULL;

		for (char *w = copy ? strtok_r(copy, " \t\n", &save) : NULL; w;
		     w = strtok_r(NULL, " \t\n", &save))
			v = lev_strv_push(v, w);
	}
	if (v)
		return v;
	for (size_t i = 0; fallback[i] && path; i++) {
		_cleanup_free_ char *dirs = xstrdup(path);
		char *save = NULL;

		for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			_cleanup_free_ char *p = lev_path_join(d, fallback[i]);

			if (*d == '/' && access(p, X_OK) == 0)
				return lev_strv_push(NULL, p);
		}
	}
	return NULL;
}

/* Run ARGV + FILE with the terminal's stdin and stderr as its output; 0 when it exits 0. */
static int run_editor(char **argv, const char *file)
{
	char **full = lev_strv_push(lev_strv_copy(argv), file);
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st = 0, r;

	posix_spawn_file_actions_init(&fa);
	/* stdout may be the --json a caller parses: the editor draws on stderr */
	posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	r = posix_spawnp(&pid, full[0], &fa, NULL, full, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0) {
		lev_fail("cannot start the editor '%s': %s (set $VISUAL or $EDITOR, or give the "
			 "task with -t)", full[0], strerror(r));
		lev_strv_free(full);
		return -1;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		lev_fail("the editor '%s' did not exit cleanly: the run is cancelled, nothing "
			 "was started", full[0]);
		lev_strv_free(full);
		return -1;
	}
	lev_strv_free(full);
	return 0;
}

/* TEXT without its '#' lines and the blank lines around it; NULL when nothing is left. */
static char *strip_template(const char *text)
{
	struct lev_buf b;
	const char *p = text;
	char *s, *end;

	lev_buf_init(&b, TASK_EDIT_MAX + 1);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);

		if (*p != '#')
			(void)lev_buf_add(&b, p, n);
		p += n;
	}
	s = lev_buf_detach(&b, NULL);
	if (!s)
		s = xstrdup("");
	for (end = s + strlen(s); end > s && strchr(" \t\r\n", end[-1]); end--)
		;
	*end = '\0';
	p = s + strspn(s, " \t\r\n");
	if (!*p) {
		free(s);
		return NULL;
	}
	memmove(s, p, strlen(p) + 1);
	return s;
}

int lev_run_task_from_editor(const struct lev_blueprint *bp, const char *agent, char **out)
{
	_cleanup_strv_ char **argv = NULL;
	const char *tmpdir = getenv("TMPDIR");
	_cleanup_free_ char *file = NULL, *text = NULL, *tmpl = NULL;
	struct lev_err err = LEV_ERR_INIT;
	size_t len = 0;
	int fd, r = -1;

	*out = NULL;
	/* a blueprint that takes no task gets none (Leviath refuses one) */
	if (!lev_blueprint_caller_input(bp, "task"))
		return 0;
	if (!isatty(STDIN_FILENO))
		return lev_fail("no task: give it with -t TEXT|FILE (stdin is not a terminal, so no "
				"editor opens)");
	argv = editor_argv();
	if (!argv)
		return lev_fail("no task: give it with -t TEXT|FILE (no editor found: set $VISUAL "
				"or $EDITOR)");
	file = lev_path_join(tmpdir && *tmpdir == '/' ? tmpdir : "/tmp", "lev-task-XXXXXX.md");
	fd = mkstemps(file, 3);
	if (fd < 0)
		return lev_fail("cannot make the task's file '%s': %s", file, strerror(errno));
	tmpl = xasprintf("\n# The task for %s: write it above, save and quit.\n"
			 "# Lines beginning with '#' are removed. An empty file cancels the run.\n",
			 agent);
	if (lev_write_all(fd, tmpl, strlen(tmpl)) < 0) {
		lev_fail("cannot write '%s': %s", file, strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	if (run_editor(argv, file) < 0)
		goto out;
	if (lev_read_file(file, TASK_EDIT_MAX, &text, &len, &err) < 0) {
		lev_fail("%s", err.msg);
		goto out;
	}
	if (memchr(text, '\0', len)) {
		lev_fail("the task written in the editor holds a NUL byte; it must be text");
		goto out;
	}
	*out = strip_template(text);
	if (!*out) {
		lev_fail("the task is empty: the run is cancelled, nothing was started");
		goto out;
	}
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	(void)unlink(file);
	lev_err_clear(&err);
	return r < 0 ? LEV_EXIT_FAIL : 0;
}

#define TITLE_MAX 80

json_t *lev_run_title(const char *task)
{
	const char *p = task + strspn(task, " \t\r\n");
	size_t n = strcspn(p, "\r\n");

	while (n > 0 && strchr(" \t", p[n - 1]))
		n--;
	if (n > TITLE_MAX) {
		n = TITLE_MAX;
		while (n > 0 && ((unsigned char)p[n] & 0xc0) == 0x80)
			n--;	/* never cut a UTF-8 sequence */
	}
	return json_stringn(p, n);
}
