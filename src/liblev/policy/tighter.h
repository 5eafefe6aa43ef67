/*
 * tighter.h - the tighter of two configs, field by field (hot reload).
 *
 * When config.toml changes while a run goes on, the run does not take the
 * new file as it is: it takes, for each field, whichever of its config and
 * the new one allows less, so an edit can only ever tighten a running run
 * (a loosening waits for the next run).
 *
 *	[tool_permissions]	per tool, deny > ask > allow; a tool the new
 *				file no longer names falls back to its
 *				built-in default, and the stricter of that and
 *				the old entry holds
 *	read_paths, allowed_workdirs, allow_env_vars, safe_tools,
 *	safe_shell		intersected
 *	allow_* switches,
 *	safe_defaults		off wins
 *	taint_tracking		on wins
 *	shell_env		stricter wins: strict > filtered > custom >
 *				inherit (two custom lists are joined)
 *	[sandbox] kind		stronger wins (container > namespace > none),
 *				when both name one
 *	[sandbox] network	off wins
 *	[limits]		lower wins (0, "no limit", loses to any)
 *
 * Per-agent tables, providers and mounts keep the run's values.
 */
#pragma once

#include "liblev/conf/config.h"

/* Make RUN the tighter of RUN and NEXT (borrowed), field by field (see above). */
void lev_policy_tighter(struct lev_config *run, const struct lev_config *next);

/* The built-in verdict for TOOL when no config names it: allow or ask. */
enum lev_verdict lev_policy_default_verdict(const char *tool);
