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
 *	yolo_allows_flow	off wins
 *	[agent_tool_permissions.X], [agent_read_paths.X],
 *	[agent_safe_commands.X]	for each agent either side names, the
 *				tighter of what each side gives X (its entries
 *				laid over the machine-wide ones), taken before
 *				those change
 *
 * Providers and mounts keep the run's values.
 */
#pragma once

#include "liblev/conf/config.h"
#include "liblev/policy/policy.h"

/* Make RUN the tighter of RUN and NEXT (borrowed), field by field (see above). */
void lev_policy_tighter(struct lev_config *run, const struct lev_config *next);

/* The built-in verdict for TOOL when no config names it: allow or ask. */
enum lev_verdict lev_policy_default_verdict(const char *tool);

/*
 * Make RUN the tighter of RUN and NEXT (borrowed), two parsed policy.toml
 * files, so that RUN allows only what both allow:
 *
 *	[[allowlist]]		for each pair of rules for one tool, one of
 *				each side, a rule with the patterns both
 *				hold (a rule without patterns holds any)
 *				and the lower max_sensitivity; a pair that
 *				shares no pattern gives none.  A rule only
 *				one side has is gone.
 *	[mcp_overrides]		per name either side overrides: each field
 *				either sets, the tighter of the two sides'
 *				classification (higher sensitivity, lower
 *				clearance, outbound > internal > inbound);
 *				the run's declared target argument stays
 *	[integrity] trusted	intersected
 *	untrusted, protected	joined
 *	workdir = "untrusted",
 *	writes = "all"		either wins
 *	[[integrity.allow]]	kept when the new file has the same tool and
 *				target (args_from_trusted: either wins)
 *	[[sources]]		per place (host, path, server), the higher
 *				sensitivity and untrusted win; a field one
 *				side sets alone stays only at private /
 *				untrusted
 */
void lev_policy_tighten(struct lev_policy *run, const struct lev_policy *next);
