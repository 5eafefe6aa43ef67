/*
 * run-editor.h - the task of lev run written in the user's editor.
 */
#ifndef LEV_RUN_EDITOR_H
#define LEV_RUN_EDITOR_H

struct lev_blueprint;

/*
 * When BP takes a task (a region seeded by the caller's "task"), the task
 * for AGENT written in $VISUAL/$EDITOR on a commented template, '#' lines
 * stripped, in *out (the caller frees it): 0, or a one-line error printed
 * and LEV_EXIT_FAIL (stdin is no terminal, no editor, the editor failed,
 * or the task is empty: the run is cancelled).  *out stays NULL when BP
 * takes no task.
 */
int lev_run_task_from_editor(const struct lev_blueprint *bp, const char *agent, char **out);

/* A run's title (Leviath's [title]): TASK's first non-blank line, trimmed, at most 80 bytes. */
struct json_t;
struct json_t *lev_run_title(const char *task);

#endif
