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
 *     compacting, ...) map to the nearest lev behaviour and leave a
 *     finding saying so.  The flow keys (an edge's condition, transform,
 *     gate, stuck_after_*; a stage's output, nudge, interaction_points,
 *     transition_prompt) are read into the structs below
 *     (blueprint-flow.c) and run by run/flow.c and run/interact.c.
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
#define LEV_CHILD_DEPTH_DEFAULT 3	/* max_child_depth when not written */
#define LEV_CHILD_DEPTH_MAX 8		/* the most any blueprint may ask for */

enum lev_stage_mode {
	LEV_MODE_AUTONOMOUS,	/* default: nobody is expected to answer */
	LEV_MODE_INTERACTIVE,	/* a person is at the terminal */
	LEV_MODE_OUTPUT,	/* must end with submit_output (added to the tools) */
	LEV_MODE_FAN_OUT,	/* one fan_out call: a worker per item (docs/sub-agents.md) */
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

/* volatility: where a region sits in the system text (stable first) */
enum lev_volatility {
	LEV_VOL_REWRITTEN,	/* default: rendered last */
	LEV_VOL_GROWS,
	LEV_VOL_STABLE,		/* rendered first: the prompt-cache prefix */
	_LEV_VOL_MAX,
};

/* strategy: how a region that is over its budget makes room */
enum lev_strategy {
	LEV_STRATEGY_PER_ITEM,	/* default: the oldest entries go one by one */
	LEV_STRATEGY_BULK,	/* `overflow` of the oldest go at once */
	LEV_STRATEGY_COMPACT,	/* the oldest are summarised into one entry ([compaction]) */
	_LEV_STRATEGY_MAX,
};

struct lev_region {
	char *name;
	enum lev_region_kind kind;
	unsigned budget_pct;	/* budget = "N%": 1..100; 0 = not set */
	uint64_t max_tokens;	/* 0 = not set */
	uint64_t min_tokens;	/* floor for budget_pct; 0 = not set */
	uint64_t max_items;	/* 0 = not set (max_entries is read into it too) */
	struct lev_seed seed;
	bool required;		/* the run fails if the seed yields nothing */
	bool required_fill;	/* Leviath's required (no seed): a stage may not end
				 * while the region is empty (context.md) */
	char *required_message;	/* NULL: none */
	bool persistent;	/* never evicted (pinned-like), still writable */
	bool admission_reject;	/* admission = "reject": a write that does not fit fails */
	bool not_summarizable;	/* summarizable = false */
	enum lev_volatility volatility;
	enum lev_strategy strategy;	/* Leviath's compacting kinds: COMPACT */
	uint64_t overflow;	/* BULK: entries dropped at once; 0: as needed */
	uint64_t compact_count;	/* COMPACT: entries folded into one summary; 0: half */
	unsigned compact_at_pct;	/* compact_at = "N%" of the budget; 0 = not set */
	uint64_t threshold_tokens;	/* compact past this too; 0 = not set */
	char *source_region;	/* compact_history: the region whose summaries land here */
};

/* One tool_routing override: TOOL's result goes to REGION and/or is capped. */
struct lev_route {
	char *tool;		/* canonical tool name (bash -> shell), or as written */
	char *region;		/* NULL: the stage's default region */
	bool has_max;
	uint64_t max_result_tokens;	/* with has_max; 0: no cap */
};

/* [stages.X.tool_routing] (docs/context.md "Routing tool output") */
struct lev_tool_routing {
	bool present;
	char *default_region;	/* NULL: the conversation */
	uint64_t max_result_tokens;	/* 0: not set */
	bool persist;		/* default true; false: routed results leave with the stage */
	struct lev_route *routes;
	size_t n_routes;
};

enum lev_transition_when {
	LEV_WHEN_DONE,		/* default: the stage finished normally (Leviath's llm_choice) */
	LEV_WHEN_ERROR,
	LEV_WHEN_MAX_ITERATIONS,
	LEV_WHEN_STUCK,		/* a stuck_after_* threshold of this edge tripped (flow.c) */
	LEV_WHEN_DEAD_END,	/* the stage finished and every done edge is out of revisits */
	_LEV_WHEN_MAX,
};

/* What an edge does to the context regions on its way (Leviath's transform). */
enum lev_transform {
	LEV_TRANSFORM_DIRECT,	/* default: everything carried as it is */
	LEV_TRANSFORM_CLEAR,	/* every region that is not pinned is emptied */
	LEV_TRANSFORM_COMPACT,	/* "compact" / "summarize": each region that is not pinned
				 * is replaced by a model-written summary */
	LEV_TRANSFORM_CUSTOM,	/* transform_config's carry / compact / clear lists */
	_LEV_TRANSFORM_MAX,
};

/* An edge's gate: the edge is refused with `message` until it holds. */
struct lev_edge_gate {
	bool present;
	bool require_modifications;
	char **require_regions;		/* each must hold content */
	char *require_region_updated;	/* NULL: none; must change during the stage */
	char *require_no_open_items;	/* NULL: none; a region with no "[ ]" line left */
	char *message;			/* NULL: a generated one */
	char *region;			/* NULL: none; non-empty satisfies require_modifications */
	char **tools;			/* more tools that count as modifying (canonical) */
	uint64_t max_attempts;		/* refusals before the edge goes through (default 3) */
};

struct lev_transition {
	char *target;		/* an existing stage name */
	char *hint;		/* NULL: none; shown to the model */
	enum lev_transition_when when;
	bool always;		/* condition = "always": taken without asking the model */
	enum lev_transform transform;
	char **carry, **compact, **clear;	/* LEV_TRANSFORM_CUSTOM: region names */
	char *compact_prompt;	/* NULL: the built-in summarising prompt */
	/* LEV_WHEN_STUCK thresholds; 0 = not set */
	uint64_t stuck_iterations, stuck_minutes, stuck_tool_calls, stuck_same_file_edits;
	struct lev_edge_gate gate;
	unsigned line, col;	/* where the edge was written */
};

/* output = { format, instructions, example, schema, validator } */
struct lev_output_spec {
	bool present;
	char *format;		/* NULL: none; "json" is parsed */
	char *instructions;	/* NULL: none; given to the model */
	char *example;		/* NULL: none; given to the model */
	char *schema_json;	/* NULL: none; a JSON Schema (argcheck.h subset), as JSON text */
	bool has_validator;	/* a Rhai validator: a finding, never run */
};

/* nudge = { enabled, max, text }: a stage block over the [agent] one */
enum lev_ip_style {
	LEV_IP_FREE_TEXT,
	LEV_IP_MULTIPLE_CHOICE,
	LEV_IP_CONFIRM,
	_LEV_IP_STYLE_MAX,
};

/* [[stages.X.interaction_points]]: asked at the stage's end, every time */
struct lev_interaction_point {
	char *name;		/* NULL: "point N" */
	char *prompt;		/* NULL: "Approve the output of stage 'X'?" */
	bool required;
	bool unattended_ask;	/* unattended = "ask"; default auto_approve */
	enum lev_ip_style style;
	char **options;		/* options and choices, in order */
	char **abort_options;
	char **edit_options;
	char **directive_keys, **directive_texts;	/* directives, in order */
	char **followup_keys, **followup_texts;		/* followups, in order */
	char *document_region;	/* NULL: none */
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

/* on_worker_failure */
enum lev_worker_failure {
	LEV_WORKERS_CONTINUE,	/* default: merge what succeeded */
	LEV_WORKERS_FAIL,	/* "fail" / "fail_all": one failed worker fails the fan-out */
};

#define LEV_FANOUT_MAX_WORKERS_DEFAULT 30
#define LEV_FANOUT_MAX_ATTEMPTS_DEFAULT 3
#define LEV_FANOUT_ITEMS_MAX 1000	/* the most items one fan_out call may carry */

/*
 * A fan-out stage's keys (mode = "fan_out", blueprint-fanout.c).  At most
 * one of worker_stage (a stage of this blueprint with allow_as_worker) and
 * worker_agent (an installed agent) names the worker; worker_query is read
 * and left with a finding (lev matches no agent types).
 */
struct lev_fanout_spec {
	char *worker_stage;	/* NULL: none */
	char *worker_agent;	/* NULL: none */
	char *worker_query;	/* NULL: none */
	char *merge_stage;	/* NULL: the stage's own edges */
	char *results_region;	/* NULL: the conversation */
	char *split_prompt;	/* NULL: none */
	uint64_t max_workers;	/* default 30; 0: no cap (lev runs them one at a time) */
	uint64_t max_items;	/* 0: no cap */
	uint64_t max_attempts;	/* default 3: asks for a fan_out call before the error edge */
	enum lev_worker_failure on_failure;
	unsigned line, col;	/* where worker_stage / worker_agent was written */
	unsigned merge_line, merge_col, region_line, region_col;
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
	bool accepts_messages;	/* lev msg reaches a run in this stage (daemon runs);
				 * true unless written false */
	bool has_max_revisits;	/* max_revisits was written */
	uint64_t max_revisits;	/* re-entries allowed after the first visit */
	struct lev_tool_routing routing;	/* tool_routing */
	bool has_context;	/* [stages.X.context.regions] was written */
	char **context_regions;	/* with has_context: the regions shown in this stage
				 * (a region first declared here is added to the
				 * blueprint's regions, shown only where listed) */
	struct lev_region *parse_regions;	/* during the parse only; then NULL */
	size_t n_parse_regions;
	char *transition_prompt;	/* NULL: the built-in one (asking which edge to take) */
	struct lev_output_spec output;	/* the stage's, else the [agent] one's fields */
	struct lev_nudge nudge;		/* the stage's, over the [agent] one */
	struct lev_interaction_point *points;
	size_t n_points;
	struct lev_fanout_spec fanout;	/* mode = "fan_out" (its keys are read on any stage) */
	bool allow_as_worker;	/* a fan-out's worker_stage must say so */
	bool requires_children;	/* hold the stage until its children have ended (fanout.c) */
};

/* [repetition_detection] (Leviath's agents.md): nudges, never stops a run */
struct lev_repetition {
	bool present;		/* the table was written: lev runs it only then */
	bool enabled;		/* default true */
	uint64_t max_repeat_calls;	/* default 3: the same call back to back */
	uint64_t max_readonly_streak;	/* default 10: read-only calls, nothing changed */
};

/* [compaction]: who writes a compacting region's summaries */
struct lev_compaction {
	char *provider;		/* NULL: the stage's own provider */
	char *model;		/* NULL: the stage's */
	char *system_prompt;	/* NULL: lev's */
	uint64_t max_summary_tokens;	/* default 2000 */
	double temperature;	/* default 0.2 */
};

/* [context.file_tracking]: the files the run read and wrote, listed in a region */
struct lev_file_tracking {
	bool present;
	char *region;		/* default "files" */
	bool track_reads;	/* default true */
	bool track_writes;	/* default true */
	uint64_t max_file_tokens;	/* 0: not set */
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
	bool has_max_child_depth;
	uint64_t max_child_depth;	/* how deep sub-agents may nest below a run of it
					 * (0: none); see lev_blueprint_child_depth() */

	struct lev_stage *stages;	/* document order */
	size_t n_stages;

	struct lev_region *regions;	/* document order */
	size_t n_regions;
	bool default_regions;	/* no [context.regions]: the default layout was used */

	struct lev_tool_perms tool_permissions;	/* agent level, as written */
	struct lev_output_spec output;	/* [agent] output: each stage's default */
	struct lev_nudge nudge;		/* [agent] nudge: each stage's default */

	struct lev_repetition repetition;
	struct lev_compaction compaction;
	struct lev_file_tracking file_tracking;

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
 * The region seeded by the caller input NAME (seed = "NAME", or Leviath's
 * { caller = "NAME" }), matched on the input's key or on the region's name
 * (Leviath's `lev run --<region>`); NULL when none is.  "task" is --task.
 */
const struct lev_region *lev_blueprint_caller_input(const struct lev_blueprint *bp,
						    const char *name);

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

/*
 * Where the result of TOOL (any spelling) lands in STAGE: *region gets the
 * region name (NULL: the conversation) and *max_tokens its ceiling (0: none),
 * by Leviath's precedence: the override's own ceiling, then
 * max_result_tokens_per_tool, then the stage's max_result_tokens.
 */
void lev_blueprint_route(const struct lev_stage *stage, const char *tool, const char **region,
			 uint64_t *max_tokens);

/* max_child_depth as written, else LEV_CHILD_DEPTH_DEFAULT. */
unsigned lev_blueprint_child_depth(const struct lev_blueprint *bp);

/*
 * What the caller of a run asked for at launch (`lev run --output-format
 * --output-instructions --output-schema --max-depth`), over the blueprint's
 * own: NULL / a negative max_depth leave a field as written.
 */
struct lev_launch_override {
	const char *output_format;
	const char *output_instructions;
	const char *output_schema;	/* a JSON Schema, as JSON text */
	long max_depth;
};

/*
 * Apply LO to BP, as Leviath combines them: the launch request wins per
 * field, in every stage that produces an output (mode = "output",
 * require_output, an output block), or every stage when none does; a format
 * with no schema drops the blueprint's schema.  -EINVAL when the schema is
 * not a JSON object.
 */
int lev_blueprint_launch_override(struct lev_blueprint *bp, const struct lev_launch_override *lo,
				  struct lev_err *err);

const char *lev_stage_mode_name(enum lev_stage_mode m);
const char *lev_volatility_name(enum lev_volatility v);
const char *lev_region_kind_name(enum lev_region_kind k);
const char *lev_seed_kind_name(enum lev_seed_kind k);
const char *lev_transform_name(enum lev_transform t);
const char *lev_transition_when_name(enum lev_transition_when w);
