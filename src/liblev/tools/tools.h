/*
 * tools.h - the built-in tools lev offers to models: their names,
 * descriptions and argument schemas (the registry), and the shell tool.
 *
 *	read_file read_files list_dir write_file edit_file	tools-fs.h
 *	shell (alias bash)					below, through sandbox.h
 *	web_fetch http_post web_search				tools-net.h
 *	submit_output context_write context_append context_read	inline: the runtime
 *	current_time						(agent-call.c) runs them
 *	ask_user_text ask_user_choice ask_user_confirm		questions for the user,
 *								through the front end
 *
 * Every schema is checked against the argcheck subset when the registry is
 * built, so the runtime validates arguments with lev_argcheck_checked().
 *
 * The shell tool runs `bash -c COMMAND` (`sh -c` when there is no
 * /bin/bash, and always inside a container) through the stage's sandbox:
 * kind none runs on the host, but still through lev_sandbox_spawn(), so the
 * environment filter, the timeout (60 s by default) and the 1 MiB per
 * stream cap apply the same way everywhere.  Its result text follows the
 * original tool:
 *
 *	success		the standard output, or "(command succeeded with no
 *			output)"; standard error, when there is any, follows
 *			after "stderr:"
 *	failure		"[exit code N]\nstdout:\n...\nstderr:\n..."
 *	timeout		"[timed out] Command exceeded Ns: COMMAND" and whatever
 *			output came before
 *	cancelled	"[cancelled] ..."
 * with "[output truncated ...]" notes where a stream passed its cap.
 *
 * Ownership: the registry owns its schemas (json_t, one reference each);
 * lev_tool_info pointers borrow from it.  struct lev_tool_output owns its
 * strings.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/provider/provider.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/types.h"

/*
 * One tool, one entry: every question about a tool is answered from it
 * (no code outside the tool table compares tool names).  Built-in entries
 * come from the tool table (tooltable.h, DESC) with their schema added;
 * run-time entries (MCP, script tools) are added with lev_tools_add().
 */
struct lev_tool_info {
	const struct lev_tool_desc *desc;	/* the tool table's entry; NULL for run-time tools */
	const char *name;		/* canonical */
	const char *const *aliases;	/* other spellings ("bash"), NULL-terminated; may be NULL */
	const char *description;
	enum lev_tool_kind kind;	/* which handler family runs it */
	enum lev_tool_op op;		/* which handler runs it */
	unsigned touches;		/* LEV_TOUCH_* */
	const char *detail_arg;		/* the argument a prompt shows ("command", "path", "url") */
	const char *detail_arg2;	/* ... when the first is absent ("query"), or NULL */
	bool outbound;			/* the taint gate's default direction (policy may override) */
	enum lev_level label;		/* the default label of its result (policy may override) */
	json_t *schema;			/* borrowed from the registry */
	const char *group;		/* LEV_TOOL_MCP: the server's name, else NULL */
	const char *origin;		/* LEV_TOOL_MCP: the server's own name for the tool */
};

/* True when the tool has no effect outside the run (its calls need no record sync first). */
static inline bool lev_tool_read_only(const struct lev_tool_info *ti)
{
	return ti && !(ti->touches & (LEV_TOUCH_WRITES | LEV_TOUCH_NETWORK | LEV_TOUCH_SHELL |
				      LEV_TOUCH_PROCESS | LEV_TOUCH_RUN | LEV_TOUCH_USER));
}

struct lev_tools;

/* Build the registry of built-in tools; fails only on a bad schema. */
int lev_tools_new(struct lev_tools **out, struct lev_err *err);
/* Accepts NULL; returns NULL. */
struct lev_tools *lev_tools_free(struct lev_tools *t);

/*
 * Add a run-time entry (an MCP or script tool): ENTRY is copied, its
 * strings must outlive the registry, its schema is referenced (and must pass
 * the argcheck subset).  A name or alias already taken is -EEXIST.  Add
 * entries before borrowing any (the table may move when it grows).
 */
int lev_tools_add(struct lev_tools *t, const struct lev_tool_info *entry, struct lev_err *err);

/* The tool NAME (any spelling: "bash" finds "shell"), or NULL. */
const struct lev_tool_info *lev_tools_find(const struct lev_tools *t, const char *name);
size_t lev_tools_count(const struct lev_tools *t);
const struct lev_tool_info *lev_tools_at(const struct lev_tools *t, size_t i);

/*
 * Offer the tools named in NAMES (a strv; unknown names are skipped) to the
 * model: one lev_request_add_tool() each, in NAMES order.
 */
void lev_tools_offer(const struct lev_tools *t, char *const *names, struct lev_infer_request *req);

/* What a tool gives back to the model. */
struct lev_tool_output {
	char *text;		/* owned, NUL-terminated (may hold no NUL inside) */
	size_t len;
	bool is_error;
	bool truncated;		/* some output was cut by a cap */
};

void lev_tool_output_release(struct lev_tool_output *o);
/* Set O to a copy of TEXT. */
void lev_tool_output_set(struct lev_tool_output *o, const char *text, bool is_error);

struct lev_shell_opts {
	struct lev_sandbox *sandbox;	/* the stage's sandbox (required) */
	char *const *envp;		/* the environment before filtering; NULL: empty */
	const char *cwd;		/* NULL: the workdir */
	uint64_t timeout_ms;		/* 0: the sandbox's default (60 s) */
	uint64_t output_max;		/* per stream; 0: 1 MiB */
	int cancel_fd;			/* -1: none; readable: kill the command now */
	bool read_fence;		/* kind none: see lev_sandbox_limits.read_fence */
	char *const *protect;		/* kind none: see lev_sandbox_limits.protect */
	/*
	 * The line runs pre-approved (a safe list covered it): every git it
	 * starts runs with hooks and fsmonitor off, as with
	 * `git -c core.hooksPath=/dev/null -c core.fsmonitor=false`
	 * (GIT_CONFIG_PARAMETERS replaces any the environment had).
	 */
	bool git_hooks_off;
};

/* The GIT_CONFIG_PARAMETERS entry git_hooks_off sets. */
#define LEV_SHELL_GIT_SAFE_ENV \
	"GIT_CONFIG_PARAMETERS='core.hooksPath=/dev/null' 'core.fsmonitor=false'"

/* The shell argv for COMMAND in a sandbox of KIND (caller frees the strv). */
char **lev_shell_argv(enum lev_sandbox_kind kind, const char *command);

/*
 * Run COMMAND and fill *out with the result text described above.  A
 * sandbox that cannot run the command (a layer failed) is an "[error] ..."
 * result, as is a command that cannot be started; a negative return is
 * only for caller errors.
 */
int lev_tool_shell(const struct lev_shell_opts *opts, const char *command,
		   struct lev_tool_output *out, struct lev_err *err);

/* Format a finished command's result as above (pure; for tests). */
void lev_shell_format(const char *command, const struct lev_sandbox_result *res,
		      uint64_t timeout_ms, struct lev_tool_output *out);
