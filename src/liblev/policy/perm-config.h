/*
 * perm-config.h - build the permission input (perm.h) for one agent and
 * stage from the user's config and the agent's blueprint.
 *
 * This is the only place that knows where each layer lives:
 *   user ceiling  [tool_permissions], [agent_tool_permissions.<agent>] (its
 *                 looser entries only for the verified installed agent)
 *   blueprint     [stages.<stage>.tool_permissions], [tool_permissions]
 *   safe keys     the built-in list (when [safe_commands] defaults), then
 *                 [safe_commands], [agent_safe_commands.<agent>], then the
 *                 blueprint's [safe_commands] only when the user opted in
 *                 (allow_blueprint_safe_commands, or the agent entry's
 *                 allow_blueprint).  A `tools` entry spelled "shell:..."
 *                 and a `shell` entry that is not a command prefix
 *                 (lev_shellkeys_is_valid_prefix()) are skipped, each with
 *                 a warning.
 * Each rule's source names its table ("[agent_tool_permissions.coder]",
 * "blueprint [stages.build.tool_permissions]") for the audit trail.
 *
 * Ownership: the setup owns copies of everything the input points to; the
 * config and blueprint may be freed afterwards.  Release with
 * lev_perm_setup_release().
 */
#pragma once

#include <stdbool.h>

#include "liblev/conf/blueprint.h"
#include "liblev/conf/config.h"
#include "liblev/base/error.h"
#include "liblev/policy/perm.h"

struct lev_perm_setup {
	struct lev_perm_input in;	/* points into the storage below */
	struct lev_perm_rule *rules;
	struct lev_perm_safe *safe;
	char **strings;			/* every string the input points to */
	size_t n_strings, cap_strings;
	char **allow;			/* copy of --allow */
	char **warnings;		/* skipped safe entries (strv, may be NULL) */
	char *stage;			/* the stage resolved for (entry stage by default) */
};

/*
 * Build S for BP's agent in STAGE (NULL: the entry stage; an unknown name
 * is -ENOENT) under CFG, with the launch flags YOLO and ALLOW (--allow
 * TOOL..., may be NULL).  On failure S holds nothing to release.
 */
int lev_perm_setup_init(struct lev_perm_setup *s, const struct lev_config *cfg,
			const struct lev_blueprint *bp, const char *stage, bool yolo,
			char *const *allow, struct lev_err *err);
void lev_perm_setup_release(struct lev_perm_setup *s);

/*
 * Only the safe keys in force (S->in.safe, each with its source) under CFG,
 * for the agent BP (NULL: none, so only the built-in list and
 * [safe_commands]): what `lev approvals safe` shows.  Release with
 * lev_perm_setup_release().
 */
void lev_perm_safe_init(struct lev_perm_setup *s, const struct lev_config *cfg,
			const struct lev_blueprint *bp);

/*
 * Per-agent grants follow identity: the user's loosening entries for an
 * agent (([agent_tool_permissions.X] entries looser than [tool_permissions],
 * [agent_read_paths.X], [agent_safe_commands.X]) apply only when
 * bp->identity_verified (agentstore.h lev_agentstore_bind()); its deny and
 * stricter entries apply to any blueprint named X.  When BP does not get
 * loosening the config holds for its name, a fresh sentence saying which and
 * why (also among the setup's warnings); else NULL.
 */
char *lev_perm_withheld_grants(const struct lev_config *cfg, const struct lev_blueprint *bp);
