/*
 * scripttool.h - a blueprint's Lua script tools, tools/NAME.lua, read at
 * blueprint load (docs/script-tools.md).
 *
 * A script tool declares itself in its leading comment lines:
 *
 *	-- @tool NAME				required; NAME is the file's stem
 *	-- @description TEXT			what the model is told
 *	-- @param NAME TYPE [required] "TEXT"	repeatable; TYPE is string, number,
 *						integer, boolean, array or object
 *	-- @requires network|shell		repeatable (or a list: "network, shell")
 *
 * The header ends at the first line that is neither blank nor a comment.
 * A directive lev does not know, a bad name or type, a duplicate, or a
 * missing @tool is an error at FILE:LINE:COL.  The source is kept as read:
 * the run compiles what was checked, never the file again.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"

#define LEV_SCRIPTTOOL_MAX 64			/* per blueprint */
#define LEV_SCRIPTTOOL_PARAMS_MAX 32
#define LEV_SCRIPTTOOL_FILE_MAX ((size_t)256 << 10)
#define LEV_SCRIPTTOOL_NAME_MAX 64

enum lev_script_type {
	LEV_SCRIPT_STRING,
	LEV_SCRIPT_NUMBER,
	LEV_SCRIPT_INTEGER,
	LEV_SCRIPT_BOOLEAN,
	LEV_SCRIPT_ARRAY,
	LEV_SCRIPT_OBJECT,
	_LEV_SCRIPT_TYPE_MAX,
};

/* What a script may reach (@requires). */
enum {
	LEV_SCRIPT_NEEDS_NETWORK = 1u << 0,	/* http_get, http_post */
	LEV_SCRIPT_NEEDS_SHELL = 1u << 1,	/* shell */
};

struct lev_script_param {
	char *name;
	enum lev_script_type type;
	bool required;
	char *description;	/* "" when not written */
};

struct lev_script_tool {
	char *name;
	char *file;		/* the path it was read from */
	char *description;	/* "" when not written */
	struct lev_script_param *params;
	size_t n_params;
	unsigned needs;		/* LEV_SCRIPT_NEEDS_* */
	char *source;		/* the whole file, NUL-terminated */
	size_t len;
};

/* "string", "number", ... (the JSON schema's type names). */
const char *lev_script_type_name(enum lev_script_type t);

/* "network, shell", "network", "shell" or "nothing" (static). */
const char *lev_script_needs_text(unsigned needs);

/*
 * Parse the header of LEN bytes at SRC read from FILE (whose stem must be
 * the tool's name).  On success *out owns a copy of everything (release it).
 */
int lev_scripttool_parse(const char *src, size_t len, const char *file,
			 struct lev_script_tool *out, struct lev_err *err);
void lev_scripttool_release(struct lev_script_tool *t);

/*
 * Read every DIR/tools/NAME.lua (regular files, owned by the user or root,
 * not writable by group or others).  A script tool named like a built-in
 * tool is an error.  On success *out (NULL when none) and *n own them:
 * free with lev_scripttools_free().
 */
int lev_scripttools_load(const char *dir, struct lev_script_tool **out, size_t *n,
			 struct lev_err *err);
void lev_scripttools_free(struct lev_script_tool *v, size_t n);
