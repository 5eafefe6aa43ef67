/*
 * agent-internal.h - what the run's modules share (agent.c, agent-setup.c,
 * agent-call.c, agent-seed.c); nothing outside src/liblev/run/ includes it.
 *
 *	agent.c		events and audit lines, the stage loop, lev_agent_run()
 *	agent-setup.c	building a run (lev_agent_new()) and freeing it
 *	agent-call.c	one tool call: the gate chain's record, asks, execution
 *	agent-seed.c	the regions' seeds, before the first inference
 *	flow.c		how a stage ends and where the run goes (edges, gates, transforms)
 *	interact.c	interaction points, present_for_review, edit_document
 *	fanout.c	sub-agents: fan_out, spawn_agent & co., a fan-out stage's steps
 */
#ifndef LEV_RUN_AGENT_INTERNAL_H
#define LEV_RUN_AGENT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "liblev/run/agent.h"
#include "liblev/policy/provenance.h"
#include "liblev/run/gatechain.h"
#include "liblev/base/buf.h"

/* Bounds. */
#define DEFAULT_MAX_ITERATIONS 50
#define MAX_STAGE_VISITS 100		/* a stage re-entered more often ends the run */
#define SEED_GLOB_MAX 64
#define OUTPUT_EVENT_MAX ((size_t)64 << 10)	/* text shown in one event */

struct prov_entry {
	char *key;			/* "provider\nmodel\nscript" */
	struct lev_provider *p;
};

struct stage_rt {
	const struct lev_stage *st;
	struct lev_sandbox_spec eff;
	struct lev_sandbox *sb;
	struct lev_provider *prov;	/* borrowed from a->provs: the one in use */
	struct lev_provider **alts;	/* a model list's usable entries, in order (alts[0]
					 * is the first prov); NULL: no list */
	size_t n_alts;
	size_t alt;			/* the entry in use */
	char **offered;			/* canonical tool names offered */
	char *offered_list;		/* "a, b" for messages */
	char **mcp_servers;		/* the MCP servers whose tools it offers (NULL: none) */
	unsigned visits;
};

/* What run/flow.c keeps about the stage being run (reset on entry) and the run. */
struct flow_state {
	uint64_t calls;			/* tool calls made in this visit */
	uint64_t mods;			/* of them, successful modifications (gate rule) */
	uint64_t start;			/* lev_monotonic_ns(): when the stage was entered */
	char **edit_paths;		/* paths written or edited, with their counts */
	unsigned *edit_counts;
	char **called;			/* canonical tools called (required_tools) */
	int chosen;			/* the edge the model chose, -1: none */
	bool complete;			/* the model chose DONE (allow_complete) */
	bool choosing;			/* the stage's output is in; the model is picking an edge */
	bool points_done;		/* the interaction points were answered in this visit */
	int stuck;			/* the stuck edge that fired, -1: none */
	char *stuck_why;
	unsigned *refusals;		/* per edge: gate refusals in this visit */
	char **entry_texts;		/* per edge: its require_region_updated region at entry */
	unsigned choice_asks, required_asks, nudges, output_attempts, ip_rounds;
	unsigned output_nudges;		/* reminders to call submit_output in this visit */
	char *fail_why;			/* the stage fails with this (attempts spent) */
	char *abort_why;		/* an interaction point aborted the run */
	char *handoff_extra;		/* answers and follow-ups for the next stage */
	json_t *schema;			/* the stage's output schema, or NULL */
	bool schema_bad;		/* outside lev's subset: every submission is refused */
	unsigned gates_forced;		/* run-wide: edges taken with their gate unsatisfied */
};

/* agent_flow_may_end(): what happens to a stage whose model says it is done */
enum flow_verdict {
	FLOW_END,		/* it ends */
	FLOW_GO_ON,		/* a note went to the model; the stage runs on */
	FLOW_FAIL,		/* it fails: flow.fail_why */
	FLOW_ABORT,		/* the person aborted the run: flow.abort_why */
};

/* A script tool's call in progress (agent-script.c): its host functions' calls. */
struct agent_nested {
	struct lev_agent *a;
	const char *parent_id;		/* the script tool's call */
	unsigned n;			/* host calls so far */
	char **offered;			/* the stage's offer and what the header asked for */
	enum lev_level level;		/* the highest label the script has seen */
	enum lev_integrity integrity;	/* untrusted once a host call returned untrusted text */
};

struct lev_agent {
	struct lev_agent_opts o;
	const struct lev_blueprint *bp;
	const struct lev_config *cfg;
	char *workdir;			/* real */

	struct lev_runrecord *rec;
	struct lev_tools *tools;
	struct lev_fs_ctx *fs;
	struct lev_gate *gate;
	struct lev_context *ctx;
	struct lev_perm_setup *perms;	/* one per stage */
	struct lev_perm_input safe_only;	/* the safe lists alone (command seeds) */
	struct lev_sandbox_pool *pool;
	struct stage_rt *stages;
	size_t n_stages;
	struct lev_run_mcp *mcp;	/* the run's MCP servers (agent-mcp.c), or NULL */
	struct agent_nested *nested;	/* a script tool runs (agent-script.c), or NULL */
	struct prov_entry *provs;
	size_t n_provs;
	struct lev_provider *compactor;	/* [compaction]'s provider (in provs), or NULL: the stage's */
	char **envp;			/* base environment for commands */
	char **key_vars;		/* provider key variables, never passed on */
	bool taint_enabled;
	bool seeding;			/* a tool seed is being dispatched: nobody is asked */
	bool landlock;			/* the kernel has Landlock (the kind-none read fence) */

	size_t cur;			/* current stage */
	unsigned iteration;
	enum lev_level seen;		/* taint when the current request was rendered */
	struct lev_grants grants;
	uint64_t calls;

	bool stage_done;
	char *stage_output;
	enum lev_level stage_output_label;
	const char *stage_end;	/* "answer", "submit_output", ... (static strings) */

	struct flow_state flow;		/* run/flow.c */

	char *last_text;		/* the model's last answer text */
	bool started;			/* run_started was recorded */
	char **pending_warnings;	/* warnings found before it */
	char *internal_error;		/* record or context trouble seen on the way */
	struct agent_watch *watch;	/* agent-watch.c, or NULL */
	unsigned repetition_hits;	/* repetition notes given (a stuck signal) */
	bool compact_failed;		/* compact.c: a summary failed; evict from now on */
	struct agent_todos *todos;	/* agent-todo.c: the checklist items, or NULL */
	unsigned required_nudges;	/* agent_required_nudge() in this stage */
	char *route_note;		/* agent-route.c: what answered a routed call in the
					 * conversation (the tool_result event's "routed") */

	enum lev_run_status status;
	char *output;
	char *error;

	/* integrity (agent-integrity.c) */
	struct lev_provenance *prov;	/* what entered the context, by integrity */
	char **untrusted_sources;	/* "tool host" of each untrusted result (strv, capped) */
	struct lev_filelabels *labels;	/* the label ledger (agent-label.c), opened on first use */
	bool labels_warned;		/* said once that the ledger cannot be read */
	enum lev_integrity stage_output_integrity;
	bool handoff_untrusted;		/* the hand-off enter_stage() adds is untrusted */

	/* sub-agents (fanout.c) */
	struct lev_agent *parent;	/* a sub-agent's parent run, or NULL */
	unsigned depth;			/* 0: the run the user started */
	unsigned depth_limit;		/* the deepest a sub-agent below this run may be */
	enum lev_level task_label;	/* the task's label (a child: its parent's taint) */
	bool task_untrusted;		/* a child's task came from an untrusted context */
	bool fs_borrowed;		/* a child reads through its parent's file context */
	const struct lev_perm_input **ceilings;	/* a child: each ancestor's permission input
						 * (in force while it runs); NULL-terminated */
	enum lev_level peak;		/* the highest label the run has seen */
	bool ever_untrusted;		/* the run has seen untrusted content */
	struct agent_kids *kids;	/* spawned children, or NULL */
	unsigned fanout_attempts;	/* a fan-out stage's turns without a fan_out result */
	char *fanout_fail;		/* the fan-out failed (on_worker_failure = "fail") */

	/* lev's own call ids (agent.c agent_number_calls()) */
	uint64_t call_no;		/* the model's calls numbered so far, run-wide */
	char *call_prefix;		/* a sub-agent: its place under its parent ("c1/"), owned */
};

/* How a sub-agent is built (fanout.c -> agent-setup.c agent_new()). */
struct agent_child_spec {
	struct lev_agent *parent;
	const char *entry;		/* the stage it starts in; NULL: the blueprint's entry */
	unsigned depth_limit;
	enum lev_level task_label;
	bool task_untrusted;
};

struct audit_line {
	const char *call_id;
	const char *tool;
	const char *gate;
	const char *rule;
	bool allowed;
	bool asked;
	const char *answer;
	const char *target;
	bool has_clearance;
	enum lev_level clearance;
	const char *reason;
};

/* agent.c: events and audit */
bool agent_cancelled(const struct lev_agent *a);
/* A provider's retry waits its turn under [rate_limits] (provider.h before_retry). */
int agent_ratelimit_retry(void *data, const char *provider, struct lev_err *err);
/*
 * Every model request of the run (a turn, an edge's choice, a summary): the one
 * place that decides when it may go, [rate_limits] then the daemon's pool.
 */
int agent_infer(struct lev_agent *a, struct lev_provider *p, const struct lev_infer_request *req,
		struct lev_infer_response *resp, struct lev_err *err);
/* Record EV (stealing the reference) and show it to the front end. */
void agent_emit(struct lev_agent *a, json_t *ev);
json_t *agent_event_new(const char *name);
json_t *agent_jtext(const char *s);
/* A JSON string of S cut to OUTPUT_EVENT_MAX bytes for an event. */
json_t *agent_jtext_capped(const char *s);
void agent_warn(struct lev_agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void agent_audit(struct lev_agent *a, const struct audit_line *l);

/* agent-call.c: one call */
const char *agent_arg_str(const json_t *args, const char *key);
/* agent.c: a stage's iteration limit (its own, the config's, or the default) */
uint64_t agent_max_iterations(const struct lev_agent *a, const struct lev_stage *st);
/* agent-info.c: the information tools; false when OP is not one of them */
bool agent_run_info(struct lev_agent *a, enum lev_tool_op op, const json_t *args,
		    struct lev_tool_output *out);
/* The chain's environment for the current stage. */
void agent_chain_env(struct lev_agent *a, enum lev_gatechain_mode mode, const char *home,
		     struct lev_gatechain_env *env);
void agent_audit_steps(struct lev_agent *a, const char *call_id, const char *tool,
		       const struct lev_gatechain_decision *gd, const char *target);
enum lev_level agent_grant_floor(const struct lev_agent *a, enum lev_level l);
/* Dispatch CALL, add its result to the context and record the result event. */
void agent_run_call(struct lev_agent *a, const struct lev_tool_call *call);
/* A question for the person (ask_user_*, interaction points): -1 when nobody can answer. */
int agent_question(struct lev_agent *a, const struct lev_question *q, char **answer);
/* The tool_result event of CALL (when anybody observes the run). */
void agent_result_event(struct lev_agent *a, const struct lev_tool_call *call,
			const struct lev_tool_output *out, const struct lev_call_decision *dec,
			enum lev_level label, bool truncated);
/* Every call of an interrupted turn still gets a result. */
void agent_skip_call(struct lev_agent *a, const struct lev_tool_call *call, const char *why);

/* agent-mcp.c: start the servers the stages name and add their tools; free them */
int agent_mcp_start(struct lev_agent *a, struct lev_err *err);
void agent_mcp_free(struct lev_agent *a);
/* Run an allowed call to the MCP tool TI (a failure is an error result). */
void agent_mcp_call(struct lev_agent *a, const struct lev_tool_info *ti, const json_t *args,
		    struct lev_tool_output *out);
/*
 * The MCP servers whose tools OFFERED holds (strv, NULL: none): their
 * descriptions and schemas are in every request of the stage.
 */
char **agent_mcp_offering(struct lev_agent *a, char *const *offered);
/* True when one of SERVERS is trusted by no [[sources]] entry: its tools' texts are untrusted. */
bool agent_mcp_untrusted(struct lev_agent *a, char *const *servers);

/*
 * agent-route.c: add CALL's result OUT (labelled LABEL) where the stage's
 * tool_routing puts it.  1: the stage routes nothing (the caller adds it);
 * 0: added (*truncated says whether it was cut); negative: error in ERR.
 */
int agent_route_result(struct lev_agent *a, const struct lev_tool_call *call,
		       const struct lev_tool_output *out, enum lev_level label, bool *truncated,
		       struct lev_err *err);
/* The stage is over: its routed results that do not persist leave the context. */
void agent_route_stage_end(struct lev_agent *a);
/*
 * The model answered to end the stage: when a region with Leviath's
 * `required` (no seed) that the stage sees is still empty, and the stage
 * can write context (context_write or context_append offered), ask it to
 * fill it instead (a user turn with required_message) and return true; at
 * most the stage's max_revisits (else REQUIRED_NUDGES_MAX) times a visit,
 * then the stage ends anyway with a warning.
 */
#define REQUIRED_NUDGES_MAX 3
bool agent_required_nudge(struct lev_agent *a);

/*
 * agent-todo.c: context_delete and the checklist tools (todo_add, todo_done,
 * todo_note); false when OP is not one of them.  agent_todos_free() frees
 * the run's checklist items.
 */
bool agent_run_todo(struct lev_agent *a, enum lev_tool_op op, const json_t *args,
		    struct lev_tool_output *out);
void agent_todos_free(struct lev_agent *a);

/*
 * agent-watch.c: [repetition_detection] and [context.file_tracking].
 * agent_watch_call() after each call (RAN: it was allowed and executed;
 * FAILED: its result is an error); agent_watch_turn_end() after a turn's
 * calls puts the notes it gathered in the conversation.
 */
void agent_watch_call(struct lev_agent *a, const struct lev_tool_call *call, bool ran,
		      bool failed);
void agent_watch_turn_end(struct lev_agent *a);
void agent_watch_free(struct lev_agent *a);

/* compact.c: summarise the compacting regions that are due (before a request) */
void agent_compact_regions(struct lev_agent *a);
/*
 * The provider a summary is asked of ([compaction] provider, else the
 * stage's), with REQ's model set to [compaction] model where it names one
 * of the stage's provider.  Compacting regions and compact edges alike.
 */
struct lev_provider *agent_compaction_provider(struct lev_agent *a, struct lev_infer_request *req);

/* flow.c: transitions, gates, stuck triggers, nudges, output checks */
void agent_flow_enter(struct lev_agent *a);
void agent_flow_release(struct lev_agent *a);
/* What the model is told on entering the stage (output spec, edges to choose). */
void agent_flow_kick(struct lev_agent *a, struct lev_buf *kick);
/* After each dispatched call: the stage's counters. */
void agent_flow_after_call(struct lev_agent *a, const struct lev_tool_call *call, bool ok);
/* The transition tool's target in REQ as an enum of the open edges (and DONE). */
void agent_flow_offer_schema(const struct lev_agent *a, struct lev_infer_request *req);
/* The model answered with no call: nudge it (true), or let the stage end (false). */
bool agent_flow_nudge(struct lev_agent *a);
/* The model answered with no call in a stage owing an output: remind it, or end (forced). */
void agent_flow_owes_output(struct lev_agent *a);
/* The model is picking an edge: its text answers that, not the stage. */
bool agent_flow_choosing(const struct lev_agent *a);
/* submit_output's value: 0 when valid, else the reason for the model in *why. */
int agent_flow_check_output(struct lev_agent *a, const char *text, char **why);
/* The transition tool's handler. */
void agent_flow_transition_tool(struct lev_agent *a, const json_t *args,
				struct lev_tool_output *out);
/* After a turn: has a stuck edge's threshold tripped?  *why says which. */
bool agent_flow_stuck(struct lev_agent *a, char **why);
enum flow_verdict agent_flow_may_end(struct lev_agent *a);
/*
 * The stage the run goes to after the current one ended WHEN
 * (LEV_WHEN_DONE, ...), with *edge its edge (NULL for `next`); or NULL:
 * then *terminal says whether the run completes there (else it fails, with
 * *why when set, allocated).  *how says how it was chosen (static).
 */
const char *agent_flow_next(struct lev_agent *a, enum lev_transition_when when,
			    const struct lev_transition **edge, bool *terminal, const char **how,
			    char **why);
/*
 * The edge's transform on the regions, before the next stage is entered;
 * *summary (allocated, or NULL) is the conversation's summary for the next
 * stage, labelled *label.
 */
int agent_flow_transform(struct lev_agent *a, const struct lev_transition *tr, char **summary,
			 enum lev_level *label, struct lev_err *err);

/* interact.c: the stage's interaction points, at its end */
enum flow_verdict agent_interact_points(struct lev_agent *a);
/* interact.c: present_for_review and edit_document; false when OP is neither */
bool agent_interact_tool(struct lev_agent *a, enum lev_tool_op op, const json_t *args,
			 struct lev_tool_output *out);

/* agent-script.c: the blueprint's script tools into the registry; one call of one */
int agent_script_start(struct lev_agent *a, struct lev_err *err);
/*
 * Run an allowed call to the script tool TI; returns the highest label of
 * what its host functions gave it (the result is at least that).
 */
enum lev_level agent_script_call(struct lev_agent *a, const char *call_id,
				 const struct lev_tool_info *ti, const json_t *args,
				 struct lev_tool_output *out);

/* agent-setup.c: a sub-agent of CS->parent (opts as for lev_agent_new()) */
int agent_new_child(const struct lev_agent_opts *opts, const struct agent_child_spec *cs,
		    struct lev_agent **out, struct lev_err *err);
/* The run the user started (A itself when it is no sub-agent). */
struct lev_agent *agent_root(struct lev_agent *a);

/*
 * fanout.c: the sub-agent tools (fan_out, spawn_agent, check_agent,
 * wait_for_agent, kill_agent): run the allowed call, raising *label and
 * setting *untrusted from what the children saw.
 */
void agent_children_tool(struct lev_agent *a, const struct lev_tool_info *ti, const json_t *args,
			 struct lev_tool_output *out, enum lev_level *label, bool *untrusted);
/*
 * fanout.c: serve the run's spawn_agent children between steps: relay what
 * they asked, take what they answered, start queued ones as slots free.
 * Does nothing when the run has none.
 */
void agent_children_pump(struct lev_agent *a);
/* fanout.c: a stage with requires_children is held here until every child has ended. */
void agent_children_settle(struct lev_agent *a);
/* Every fan-out stage's worker_agent is installed (a run does not start without). */
int agent_fanout_check(struct lev_agent *a, struct lev_err *err);
/* A fan-out stage's turn ended without fan_out: nudge (false) or give up (true, *why). */
bool agent_fanout_no_call(struct lev_agent *a, char **why);
/* The text a fan-out stage adds to its entry message (split_prompt, the call's shape). */
void agent_fanout_kick(struct lev_agent *a, struct lev_buf *kick);
/* Where a finished fan-out stage goes: its merge_stage, or NULL (its edges). */
const char *agent_fanout_merge(const struct lev_agent *a);
void agent_children_free(struct lev_agent *a);

/* agent-seed.c */
int agent_run_seeds(struct lev_agent *a, struct lev_err *err);

/* agent-integrity.c: labels and provenance (docs/integrity.md) */
void agent_integrity_setup(struct lev_agent *a);
void agent_integrity_free(struct lev_agent *a);
/* The integrity of an allowed call's result (the call to TI with ARGS; PATH: the file it read). */
enum lev_integrity agent_result_integrity(struct lev_agent *a, const struct lev_tool_info *ti,
					  const json_t *args, const char *path);
/* The integrity of the file at PATH (workdir-relative or absolute; NULL: any file). */
enum lev_integrity agent_file_integrity(struct lev_agent *a, const char *path);
/* Is a redirect's Location from FROM (the URL that answered) untrusted text?  True unless a
 * [[sources]] entry labels FROM's host trusted. */
bool agent_hop_untrusted(struct lev_agent *a, const char *from);
/* A [[sources]] sensitivity for a network or MCP result, raising L. */
enum lev_level agent_source_level(struct lev_agent *a, const struct lev_tool_info *ti,
				  const json_t *args, enum lev_level l);
/*
 * The result TEXT just added to the context has integrity I: label it, feed
 * provenance, and (SOURCE: it came from outside, not a refusal) name it
 * among the run's untrusted sources.
 */
void agent_integrity_result(struct lev_agent *a, const char *tool, const json_t *args,
			    enum lev_integrity i, const char *text, size_t len, bool source);
/* Add "integrity" and, when untrusted, "sources" to EV for I. */
void agent_integrity_json(const struct lev_agent *a, enum lev_integrity i, json_t *ev);

/* agent-label.c: labels from what a call touched (docs/integrity.md) */
void agent_label_free(struct lev_agent *a);
/*
 * A read file tool's result labels from the objects it read (FS, the
 * gate's targets): *INTEG set from their real paths ([[sources]] path
 * entries, [integrity] globs) and the label ledger, *LEVEL raised.  False
 * (nothing set) when it read nothing.
 */
bool agent_label_fs(struct lev_agent *a, const struct lev_fs_targets *fs, enum lev_level *level,
		    enum lev_integrity *integ);
/* The [integrity] protected globs a shell line decided under INTEGRITY keeps read-only, or NULL. */
char *const *agent_shell_protects(const struct lev_agent *a, enum lev_integrity integrity);
/*
 * The caller input KEY ("task" for the task) read from a file (opts
 * input_files): labelled as read_file of that file would be, *INTEG set
 * untrusted when it is, *LEVEL raised.  False: KEY came from no file.
 */
bool agent_label_input(struct lev_agent *a, const char *key, enum lev_level *level,
		       enum lev_integrity *integ);
/* A network result from every URL requested (HOPS): untrusted if any hop is; false: none. */
bool agent_label_hops(struct lev_agent *a, char *const *hops, enum lev_level *level,
		      enum lev_integrity *integ);
/* A write tool wrote FS's targets: label them in the ledger when the context calls for it. */
void agent_label_written(struct lev_agent *a, const struct lev_fs_targets *fs);
/* Around a shell command: the files it changed in the workdir get the context's label. */
bool agent_label_shell_start(struct lev_agent *a, struct timespec *t0);
void agent_label_shell_done(struct lev_agent *a, const struct timespec *t0);

#endif
