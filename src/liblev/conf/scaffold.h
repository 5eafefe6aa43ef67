/*
 * scaffold.h - `lev create`: a new blueprint directory from a template.
 *
 * Templates (lev_scaffold_templates()):
 *	default	one stage that reads, edits and runs commands in a namespace
 *		sandbox with no network
 *	coder	plan -> implement -> verify, as Leviath's coder template has it:
 *		the plan stage reads only, the implement stage edits, the
 *		verify stage runs the tests and may send the work back
 * Both validate with no config, and name models on every built-in HTTP
 * provider so any configured key works (docs/providers.md).
 */
#pragma once

#include "liblev/base/error.h"

/* The templates' names, NULL-terminated. */
const char *const *lev_scaffold_templates(void);

/*
 * Create PARENT/NAME/agent.leviath from TEMPLATE (NULL: "default").  NAME
 * must be a valid agent name; PARENT/NAME must not exist (-EEXIST).  The
 * directory appears whole or not at all (built beside it, then renamed
 * into place without replacing anything).  *dir_out (may be NULL) gets the
 * new directory's path.
 */
int lev_scaffold_create(const char *parent, const char *name, const char *template,
			char **dir_out, struct lev_err *err);
