/*
 * tools-fs.h - the five file tools (read_file, read_files, list_dir,
 * write_file, edit_file) and the path decision they share with `lev check`.
 *
 * Every path an agent names is opened through fsconfine (never checked as a
 * string and opened later) beneath the workdir's directory fd.  Only the
 * read tools may leave the workdir, and only when the [read_paths] policy
 * (readpaths.h) allows the REAL path read back from the opened fd.
 * write_file and edit_file never leave the workdir, whatever is granted,
 * and never write lev's own files (its data root and config, see
 * lev_datadir_own_paths()) even when they lie inside the workdir.
 *
 * Paths: relative paths resolve against the workdir; an absolute path under
 * the workdir (its real path, or the path it was given as) is made relative
 * to it first.  "/dev/null" reads as empty and swallows writes.  A path must
 * be non-empty, valid UTF-8, without NUL bytes, shorter than PATH_MAX.
 *
 * Results: each tool fills a `struct lev_fs_result`: owned text (release with
 * lev_fs_result_release()) and is_error.  A refusal or failure is a result
 * whose text starts with "[error] ", never a C error: the tools cannot fail
 * in the C sense.  Refusal texts say how to fix the cause (which stanza to
 * add to which file).
 *
 * Threads: a context is immutable after lev_fs_ctx_new(); tools may run on
 * it from several threads at once.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/error.h"
#include "liblev/policy/fsconfine.h"
#include "liblev/base/types.h"

/* read_file output cap (a truncation note follows the cut). */
#define LEV_FS_READ_CAP (256 * 1024)
/* Files larger than this are refused by read_file (use the shell). */
#define LEV_FS_READ_FILE_MAX ((uint64_t)256 << 20)
/* Files larger than this are refused by edit_file. */
#define LEV_FS_EDIT_FILE_MAX ((size_t)16 << 20)
/* write_file content and edit_file new_str limit. */
#define LEV_FS_WRITE_MAX ((size_t)64 << 20)
/* read_files: paths per call. */
#define LEV_FS_READ_FILES_MAX 64
/* list_dir: entries shown. */
#define LEV_FS_LIST_MAX 5000

struct lev_fs_opts {
	const char *workdir;		/* required; opened once, symlinks followed */
	const char *agent;		/* for messages; NULL: "<agent>" */
	const char *home;		/* NULL: lev_home_dir() */
	char *const *declared;		/* the blueprint's [read_paths] allow (strv) */
	char *const *grants;		/* [security] read_paths ++ [agent_read_paths.<agent>] allow */
	bool allow_blueprint;		/* [security] allow_blueprint_read_paths */
	const char *config_path;	/* named in messages, never written;
					   NULL: "your config.toml" */
	const char *data_root;		/* lev's data root, never written; NULL: the env's */
	enum lev_confine_mode confine;	/* LEV_CONFINE_AUTO, or _WALK to force the fallback */
};

struct lev_fs_ctx;

/*
 * Open the workdir, read its real path back, and compile both [read_paths]
 * sets against it (and the real home).  Errors: the workdir cannot be opened
 * or is not a directory; a malformed declaration ("agent 'x' [read_paths]:
 * ...") or grant ("read_paths grant in your config.toml: ...").
 * Free *OUT with lev_fs_ctx_free().
 */
int lev_fs_ctx_new(const struct lev_fs_opts *opts, struct lev_fs_ctx **out, struct lev_err *err);
/*
 * A reload (the run's effective policy, only ever tighter): CTX's read
 * grants become GRANTS, and allow_blueprint_read_paths stays only when
 * ALLOW_BLUEPRINT says so too, from the next call on.
 */
int lev_fs_ctx_regrant(struct lev_fs_ctx *ctx, char *const *grants, bool allow_blueprint,
		       struct lev_err *err);
struct lev_fs_ctx *lev_fs_ctx_free(struct lev_fs_ctx *ctx);

/* The workdir's real path, as read back from its fd (borrowed). */
const char *lev_fs_ctx_workdir(const struct lev_fs_ctx *ctx);
/* The workdir's O_PATH directory fd (borrowed; for shell redirect checks). */
int lev_fs_ctx_root_fd(const struct lev_fs_ctx *ctx);
/* True when the blueprint declares [read_paths] (the policy is active). */
bool lev_fs_ctx_read_paths_active(const struct lev_fs_ctx *ctx);
/* True when some declared entry is granted (for the taint "Private" bump). */
bool lev_fs_ctx_read_paths_granted(const struct lev_fs_ctx *ctx);

struct lev_fs_result {
	char *text;		/* owned, NUL-terminated */
	size_t len;
	bool is_error;		/* text starts with "[error] " */
};

void lev_fs_result_release(struct lev_fs_result *r);

/*
 * read_file: the text of PATH.  OFFSET is the 1-based number of the first
 * line to return (0 means 1); LIMIT the most lines to return (0: no limit).
 * Output stops at LEV_FS_READ_CAP bytes, at a line boundary when it can,
 * with a note saying which offset reads on.  Invalid UTF-8 is replaced with
 * U+FFFD (and noted).  Refused: directories, non-regular files, files with
 * a NUL byte in their first 8 KiB ("binary"), files over
 * LEV_FS_READ_FILE_MAX.
 */
void lev_fs_read_file(struct lev_fs_ctx *ctx, const char *path, uint64_t offset, uint64_t limit,
		      struct lev_fs_result *out);

/*
 * read_files: each of PATHS (at most LEV_FS_READ_FILES_MAX) as
 * "### [<path>]\n<text>\n", with "[error] ..." in place of the text for a
 * file that could not be read.  The LEV_FS_READ_CAP budget is shared.
 * is_error only when every file failed.
 */
void lev_fs_read_files(struct lev_fs_ctx *ctx, const char *const *paths, size_t n,
		       struct lev_fs_result *out);

/*
 * list_dir: the entries of PATH (NULL: the workdir), sorted bytewise, one
 * per line, "." and ".." left out, with a type marker: "name/" directory,
 * "name@" symlink (not followed), "name|" FIFO, "name=" socket, "name#"
 * device, plain name for a regular file.  Names that are not valid UTF-8 or
 * hold control bytes are shown with \xNN escapes and flagged.
 */
void lev_fs_list_dir(struct lev_fs_ctx *ctx, const char *path, struct lev_fs_result *out);

/*
 * write_file: replace (or create) PATH inside the workdir with CONTENT,
 * atomically: a temporary file created O_EXCL in the target's directory
 * (opened confined), written, fsync'ed, renamed over the target with
 * renameat() in that same directory fd, and the directory fsync'ed.  Missing
 * parent directories are created (each one mkdirat() in a confined
 * directory fd).  A new file gets 0666 minus the umask; an existing file
 * keeps its permission bits.  A target that is a symlink is refused (the
 * rename itself would replace the link, never follow it).
 */
void lev_fs_write_file(struct lev_fs_ctx *ctx, const char *path, const char *content, size_t len,
		       struct lev_fs_result *out);

/*
 * edit_file: replace the one occurrence of OLD_STR in PATH with NEW_STR and
 * write the file back as write_file does.  Zero or several occurrences
 * (overlapping ones count) are an error naming the count.  The file must
 * exist inside the workdir, be a regular text file, and be at most
 * LEV_FS_EDIT_FILE_MAX bytes.
 */
void lev_fs_edit_file(struct lev_fs_ctx *ctx, const char *path, const char *old_str,
		      size_t old_len, const char *new_str, size_t new_len, struct lev_fs_result *out);

/*
 * Open PATH for reading exactly as read_file (or, with WANT_DIR, list_dir)
 * does: workdir confinement first, then [read_paths] on the real path of
 * the opened object.  For other readers that must obey the same policy
 * (seed files, `lev check` helpers).  *FD_OUT is an O_RDONLY fd of a
 * regular file (or a directory with WANT_DIR).  A refusal returns
 * LEV_EDENIED with the refusal text (the tool's, without "[error] ") in ERR;
 * any other failure a negative errno with a message.
 */
int lev_fs_open_read(struct lev_fs_ctx *ctx, const char *path, bool want_dir, int *fd_out,
		     struct lev_err *err);

/* True for the five tool names above. */
bool lev_fs_is_tool(const char *name);

/*
 * Run TOOL with its JSON arguments: read_file {path, offset?, limit?},
 * read_files {paths: [...]}, list_dir {path?}, write_file {path, content},
 * edit_file {path, old_str, new_str}.  Wrong or missing arguments, and
 * strings holding NUL bytes, are "[error] ..." results.
 */
void lev_fs_call(struct lev_fs_ctx *ctx, const char *tool, const json_t *args,
		 struct lev_fs_result *out);

/* ---- the decision without the action (`lev check`) -------------------- */

/*
 * Which of the path gates decided; their names are the gate chain's
 * (LEV_GATE_WORKDIR, LEV_GATE_READ_PATHS and lev_gate_id_name() in
 * run/gatechain.h), never spelled here.
 */
enum lev_fs_gate {
	LEV_FS_GATE_NONE,
	LEV_FS_GATE_WORKDIR,
	LEV_FS_GATE_READ_PATHS,
};

struct lev_fs_decision {
	enum lev_verdict verdict;	/* LEV_ALLOW or LEV_DENY */
	enum lev_fs_gate gate;		/* which gate decided */
	char *reason;			/* owned; for a deny, the tool's refusal text without "[error] " */
	char *path;			/* owned; the resolved real path (for a path that does not
					 * exist yet, its real parent plus the rest); NULL if none */
};

void lev_fs_decision_release(struct lev_fs_decision *d);

/*
 * Decide whether TOOL (one of the five) may touch PATH, exactly as the tool
 * itself would, against the real filesystem, without reading or writing
 * anything (nothing is created).  A deny here is the same refusal, word for
 * word, as the tool's "[error] " result; an allow means the tool would not
 * refuse on policy grounds (it may still fail: a missing file, a binary
 * file ...).  PATH NULL means "." (list_dir).  Returns 0, or LEV_EUSAGE for
 * an unknown tool or a malformed path (empty, NUL byte, not UTF-8, too long).
 */
int lev_fs_check(struct lev_fs_ctx *ctx, const char *tool, const char *path,
		 struct lev_fs_decision *out, struct lev_err *err);

/*
 * The same for a whole call's JSON arguments (lev_fs_decide() without
 * keeping what it opened).
 */
int lev_fs_check_call(struct lev_fs_ctx *ctx, const char *tool, const json_t *args,
		      struct lev_fs_decision *out, struct lev_err *err);

/* ---- decide once, act on what the decision opened (the gate chain) ------ */

/* Every path of one call, resolved and opened (fds held); opaque. */
struct lev_fs_targets;

/*
 * Resolve every path of TOOL's call ARGS once, against the real filesystem,
 * and decide: the workdir gate (confinement) and the [read_paths] gate (on
 * the real path read back from the opened fd).  Read tools hold an fd of
 * each object open for reading (list_dir: the directory); outside the
 * workdir the object is opened O_PATH, decided on, and only then reopened
 * (never a device or FIFO outside).  Write tools hold the directory fd that
 * will hold the file and its final name.  Nothing is created or written.
 * REAL_PATHS: also read back the real path of objects inside the workdir
 * (out->path; `lev check` shows it; a run does not need it).
 *
 * The call's decision is the first path refused (read_files is refused as
 * a whole when any one path is refused: nothing is read); else the first
 * path that left the workdir through [read_paths]; else the last path.  A
 * path that would fail (missing file ...) is an allow whose reason says so.
 *
 * With TARGETS_OUT, *TARGETS_OUT receives the opened targets (free them
 * with lev_fs_targets_free()), which lev_fs_run() acts on.  Returns 0, or
 * LEV_EUSAGE for arguments no file tool can use (no path, an empty path, a
 * NUL byte, not UTF-8, too many paths).
 */
int lev_fs_decide(struct lev_fs_ctx *ctx, const char *tool, const json_t *args, bool real_paths,
		  struct lev_fs_decision *out, struct lev_fs_targets **targets_out,
		  struct lev_err *err);

/*
 * Run TOOL on the targets lev_fs_decide() opened for the same ARGS: reads
 * upgrade the very O_PATH fd the decision was made on (never the path
 * again), writes create and rename beneath the directory fd it opened.  A
 * refused target (only reachable when the caller ignored the decision) is
 * an "[error] ..." result, inline for read_files.
 */
void lev_fs_run(struct lev_fs_ctx *ctx, const char *tool, const json_t *args,
		struct lev_fs_targets *targets, struct lev_fs_result *out);

/* True when a target the call reads lies outside the workdir ([read_paths]). */
bool lev_fs_targets_outside(const struct lev_fs_targets *targets);

/* Accepts NULL; returns NULL. */
struct lev_fs_targets *lev_fs_targets_free(struct lev_fs_targets *targets);

/* One object a call touched, for its labels (lev_fs_targets_touched()). */
struct lev_fs_touched {
	int fd;			/* owned: O_RDONLY, or O_PATH for a read outside the workdir */
	char *real;		/* owned: its real path, read back from FD */
	bool dir;		/* a directory (list_dir) */
	bool written;		/* the file a write tool wrote */
};

/*
 * The objects the call on TARGETS touched, after lev_fs_run() (or before,
 * for a read): for a read tool each regular file or directory the decision
 * opened (the very object the tool read, a fresh fd of it); for a write tool
 * the file now under the name it wrote, opened O_NOFOLLOW beneath the
 * directory fd the decision opened (nothing when it is not a regular file).
 * Refused or missing targets are left out.  *OUT (free it with
 * lev_fs_touched_free()) gets the array; returns its length.
 */
size_t lev_fs_targets_touched(const struct lev_fs_targets *targets, struct lev_fs_touched **out);
void lev_fs_touched_free(struct lev_fs_touched *t, size_t n);
