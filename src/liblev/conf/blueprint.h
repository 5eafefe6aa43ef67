/*
 * blueprint.h - an agent blueprint (agent.leviath) as plain data.
 *
 * A blueprint is what somebody else wrote: it may ask for things (tools,
 * read paths, a sandbox, safe commands, taint tracking) but every ask is
 * only an ask; the user's config (config.h) decides.  The parser's job is to
 * read exactly what was written, refuse anything it cannot read
 * unambiguously, and keep it in a form the policy, sandbox and runtime
 * modules consume directly.
 *
 * Parsing rules (docs/blueprint.md has the user-facing reference):
 *   - [agent] is required with a valid `name` (it names the install
 *     directory); `version` defaults to "0.1.0".
 *   - At least one [stages.<name>]; stage order is document order; the entry
 *     stage defaults to the first stage.
 *   - Unknown keys inside a stage (and inside its model, transitions,
 *     sandbox and security tables), inside any [sandbox], [security],
 *     [read_paths] or [safe_commands] are errors naming the key and the valid
 *     set.  Elsewhere (top level, [agent], regions) they are warnings in
 *     `warnings`.
 *   - Every key of Leviath's blueprint schema is known: lev either runs it
 *     or type-checks it as Leviath does and keeps a finding in `findings`
 *     ("not run by lev: ...; use ..."), never silently (blueprint-compat.c).
 *     Leviath words lev has no meaning for (mode fan_out, region kind
 *     compacting, condition stuck, ...) map to the nearest lev behaviour
 *     and leave a finding saying so.
 *   - Every enum (mode, region kind, verdicts, sandbox kind,
 *     on_unavailable, script permissions) is checked; a bad word is an
 *     error naming FILE:LINE:COL and the valid words.
 *   - `bash` in available_tools/required_tools is stored as `shell`.
 *   - [sandbox] accepts `mount` and `mounts` (both are read); `engine` is
 *     type-checked and then dropped (only the user picks the engine binary),
 *     with a warning.
 *   - [security] with no `taint_tracking` key means true.
 *   - [read_paths] allow entries are syntax-checked one by one; one bad
 *     entry fails the parse naming it.
 *   - References are checked: next, transitions, entry_stage name stages;
 *     required_tools is a subset of available_tools.
 *
 * Ownership: struct lev_blueprint owns everything in it;
 * lev_blueprint_free() frees it all.  Nothing points into the TOML
 * document, which is freed before the parse returns.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/conf/config.h"
#include "liblev/base/error.h"
#include "liblev/conf/scripttool.h"
#include "liblev/base/types.h"

#define LEV_BLUEPRINT_FILE "agent.leviath"
#define LEV_BLUEPRINT_MAX_FILE ((size_t)1 << 20)
#define LEV_BLUEPRINT_MAX_STAGES 256
#define LEV_BLUEPRINT_MAX_REGIONS 256

enum lev_stage_mode {
	LEV_MODE_AUTONOMOUS,	/* default: nobody is expected to answer */
	LEV_MODE_INTERACTIVE,	/* a person is at the terminal */
	LEV_MODE_OUTPUT,	/* must end with submit_output (added to the tools) */
	_LEV_MODE_MAX,
};

enum lev_region_kind {
	LEV_REGION_PINNED,		/* always present, never evicted */
	LEV_REGION_SLIDING_WINDOW,	/* keeps the last max_items entries */
	LEV_REGION_TEMPORARY,		/* default: evicted first under pressure */
	LEV_REGION_CLEARABLE,		/* the model may clear it */
	_LEV_REGION_KIND_MAX,
};

enum lev_seed_kind {
	LEV_SEED_NONE,
	LEV_SEED_CALLER,	/* seed = "task": `value` is the caller-input key */
	LEV_SEED_FILES,		/* seed = { files = [..] }: `list` */
	LEV_SEED_GLOB,		/* seed = { glob = ".." }: `value` */
	LEV_SEED_LITERAL,	/* seed = { literal = ".." }: `value` */
	LEV_SEED_COMMAND,	/* seed = { command = ".." }: `value`, runs at spawn */
	LEV_SEED_TOOL,		/* seed = { tool = "..", args = {..} }: `value`, `args_json` */
	_LEV_SEED_KIND_MAX,
};

struct lev_seed {
	enum lev_seed_kind kind;
	char *value;		/* see the kind */
	char **list;		/* LEV_SEED_FILES: the paths as written */
	char *args_json;	/* LEV_SEED_TOOL: the args table as JSON ("{}" when none) */
};

struct lev_region {
	char *name;
	enum lev_region_kind kind;
	unsigned budget_pct;	/* budget = "N%": 1..100; 0 = not set */
	uint64_t max_tokens;	/* 0 = not set */
	uint64_t max_items;	/* 0 = not set */
	struct lev_seed seed;
	bool required;		/* the run fails if the seed yields nothing */
	char *required_message;	/* NULL: none */
};

enum lev_transition_when {
	LEV_WHEN_DONE,		/* default: the stage finished normally */
	LEV_WHEN_ERROR,
	LEV_WHEN_MAX_ITERATIONS,
	LEV_WHEN_STUCK,		/* Leviath's stuck triggers: parsed, never fired (a finding) */
	LEV_WHEN_DEAD_END,	/* Leviath's dead end: parsed, never fired (a finding) */
	_LEV_WHEN_MAX,
};

struct lev_transition {
	char *target;		/* an existing stage name */
	char *hint;		/* NULL: none; shown to the model */
	enum lev_transition_when when;
};

/* One entry of a Leviath model list (models = [...], fallbacks = [...]). */
struct lev_model_choice {
	char *provider;
	char *model;
	unsigned line, col;	/* where the entry was written */
};

/*
 * model = { provider, model, script } or "provider/model", or Leviath's
 * model = { models = [{ provider, model }, ...], fallbacks = [...] }: then
 * `choices` holds the list in order (fallbacks appended) and provider/model
 * are the first entry's unless written directly.
 */
struct lev_model_ref {
	char *provider;		/* NULL: the runtime's default */
	char *model;		/* NULL: the provider's default */
	char *script;		/* provider "script": path relative to the blueprint dir,
				 * checked to stay inside it; else NULL */
	uint64_t max_tokens;	/* 0 = not set */
	uint64_t timeout_secs;	/* request_timeout_secs; 0 = not set (the config's) */
	bool no_user_default;	/* allow_user_default = false: the config's
				 * default_provider / default_model do not apply */
	bool has_temperature;
	double temperature;
	struct lev_model_choice *choices;	/* NULL: no list written */
	size_t n_choices;
};

struct lev_stage {
	char *name;
	char *description;	/* NULL: none */
	enum lev_stage_mode mode;
	struct lev_model_ref model;
	char **available_tools;	/* canonical names (bash -> shell), unique, in order */
	char **required_tools;	/* subset of available_tools, canonical */
	char **available_connectors;	/* MCP server names: every tool they offer (strv) */
	struct lev_tool_perms tool_permissions;	/* as written; stage over agent */
	struct lev_sandbox_spec sandbox;	/* .present: replaces the agent block
						 * wholesale; engine always NULL */
	char *system_prompt;	/* NULL: none */
	uint64_t max_iterations;	/* 0: the config's [limits] max_iterations */
	char *next;		/* NULL: none; mutually exclusive with transitions */
	struct lev_transition *transitions;
	size_t n_transitions;
	bool has_security;	/* [stages.X.security] was written */
	bool taint_tracking;	/* with has_security: opt in (turns taint on for the run) */
	bool allow_complete;	/* the model may finish the run from this stage */
	bool require_output;	/* set by mode = "output" or require_output = true
				 * (either adds submit_output to the tools) */
	bool accepts_messages;	/* lev msg reaches a run in this stage (daemon runs) */
	bool has_max_revisits;	/* max_revisits was written */
	uint64_t max_revisits;	/* re-entries allowed after the first visit */
};

/*
 * A key of Leviath's blueprint format that lev parses and type-checks but
 * does not run: `lev validate` shows it as a warning at FILE:LINE:COL.
 */
struct lev_blueprint_finding {
	char *file;		/* NULL: the blueprint file; else another file (tools/x.rhai) */
	char *key;		/* dotted path, e.g. "stages.plan.hooks"; or the file name */
	char *stage;		/* NULL: not inside a stage */
	unsigned line, col;
	char *message;		/* "not run by lev: <what>; use <instead>" */
};

#define LEV_BLUEPRINT_MAX_FINDINGS 500

struct lev_blueprint {
	char *dir;		/* the blueprint directory as given (never NULL) */
	char *path;		/* the agent.leviath file read */

	/* [agent] */
	char *name;		/* lev_agent_name_valid() */
	char *version;
	char *description;	/* "" when not written */
	char *entry_stage;	/* a stage name; defaults to the first stage */

	struct lev_stage *stages;	/* document order */
	size_t n_stages;

	struct lev_region *regions;	/* document order */
	size_t n_regions;
	bool default_regions;	/* no [context.regions]: the default layout was used */

	struct lev_tool_perms tool_permissions;	/* agent level, as written */

	bool has_security;	/* [security] was written */
	bool taint_tracking;	/* with has_security: true unless written false */

	struct lev_sandbox_spec sandbox;	/* agent level; engine always NULL */

	bool has_read_paths;	/* [read_paths] was written (maybe empty) */
	char **read_paths;	/* allow entries as written (syntax-checked), NULL if none */

	bool has_safe_commands;
	char **safe_tools;	/* [safe_commands] tools */
	char **safe_shell;	/* [safe_commands] shell */

	bool has_script_permissions;
	struct lev_script_perms script_permissions;	/* may only tighten */

	char **warnings;	/* "FILE:LINE: ..." for unknown keys, ignored engine, ... */

	/* tools/NAME.lua (scripttool.h), read by lev_blueprint_load(); sorted by name */
	struct lev_script_tool *script_tools;
	size_t n_script_tools;

	/* keys of Leviath's format lev reads and checks but does not run */
	struct lev_blueprint_finding *findings;
	size_t n_findings;

	/*
	 * Who this is, as far as the user's per-agent grants go: set by
	 * lev_agentstore_bind() (agentstore.h).  True only for the installed
	 * agent <data root>/agents/<name> whose files still match the
	 * fingerprint `lev add` recorded; otherwise identity_note says why not
	 * (NULL when nobody checked).  Fail closed: a blueprint nobody bound
	 * gets no per-agent loosening.
	 */
	bool identity_verified;
	char *identity_note;
};

/*
 * The agent name per-agent loosening in the user's config
 * ([agent_tool_permissions.X] allow, [agent_read_paths.X],
 * [agent_safe_commands.X]) is looked up by: BP's name when its identity is
 * verified, else NULL (none applies).  Per-agent tightening (deny, ask)
 * always goes by bp->name.
 */
const char *lev_blueprint_grant_name(const struct lev_blueprint *bp);

/*
 * Load the blueprint at PATH: a directory holding agent.leviath, or the
 * agent.leviath file itself (any name).  The file must be a regular file of
 * at most LEV_BLUEPRINT_MAX_FILE bytes.  On success *out is a fresh
 * blueprint (free with lev_blueprint_free()).
 */
int lev_blueprint_load(const char *path, struct lev_blueprint **out, struct lev_err *err);

/*
 * Parse LEN bytes at BUF; NAME is used in messages and DIR becomes the
 * blueprint directory (for relative script paths).
 */
int lev_blueprint_parse(const char *buf, size_t len, const char *name, const char *dir,
			struct lev_blueprint **out, struct lev_err *err);

struct lev_blueprint *lev_blueprint_free(struct lev_blueprint *bp);

/* Borrowed lookups; NULL when absent. */
const struct lev_stage *lev_blueprint_stage(const struct lev_blueprint *bp, const char *name);
const struct lev_region *lev_blueprint_region(const struct lev_blueprint *bp, const char *name);

/* The sandbox block in force for STAGE as written (stage block, else agent block). */
const struct lev_sandbox_spec *lev_blueprint_stage_sandbox(const struct lev_blueprint *bp,
							   const struct lev_stage *stage);

/*
 * Whether the blueprint opts in to taint tracking ([security] at agent
 * level, or any stage's [stages.X.security], taint_tracking true).  The run
 * tracks taint when this or the config's taint_tracking is true.
 */
bool lev_blueprint_wants_taint(const struct lev_blueprint *bp);

/*
 * The blueprint's own verdict for TOOL in STAGE (stage table, else agent
 * table; any spelling, strictest if several).  Returns false when neither
 * sets one.
 */
bool lev_blueprint_tool_verdict(const struct lev_blueprint *bp, const struct lev_stage *stage,
				const char *tool, enum lev_verdict *out);

/*
 * The script tools the blueprint ships: the regular files in DIR/tools,
 * names without their extension, sorted.  NULL when none.  (A listing
 * failure also gives NULL: this is for reporting.)
 */
char **lev_blueprint_script_tools(const char *dir);

const char *lev_stage_mode_name(enum lev_stage_mode m);
const char *lev_region_kind_name(enum lev_region_kind k);
const char *lev_seed_kind_name(enum lev_seed_kind k);
