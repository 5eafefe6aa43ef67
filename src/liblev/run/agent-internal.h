/*
 * agent-internal.h - what the run's modules share (agent.c, agent-setup.c,
 * agent-call.c, agent-seed.c); nothing outside src/liblev/run/ includes it.
 *
 *	agent.c		events and audit lines, the stage loop, lev_agent_run()
 *	agent-setup.c	building a run (lev_agent_new()) and freeing it
 *	agent-call.c	one tool call: the gate chain's record, asks, execution
 *	agent-seed.c	the regions' seeds, before the first inference
 */
#ifndef LEV_RUN_AGENT_INTERNAL_H
#define LEV_RUN_AGENT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "liblev/run/agent.h"
#include "liblev/run/gatechain.h"

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
	unsigned visits;
};

/* A script tool's call in progress (agent-script.c): its host functions' calls. */
struct agent_nested {
	struct lev_agent *a;
	const char *parent_id;		/* the script tool's call */
	unsigned n;			/* host calls so far */
	char **offered;			/* the stage's offer and what the header asked for */
	enum lev_level level;		/* the highest label the script has seen */
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
	struct agent_mcp *mcp;		/* the run's MCP servers (agent-mcp.c), or NULL */
	struct agent_nested *nested;	/* a script tool runs (agent-script.c), or NULL */
	struct prov_entry *provs;
	size_t n_provs;
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

	char *last_text;		/* the model's last answer text */
	bool started;			/* run_started was recorded */
	char **pending_warnings;	/* warnings found before it */
	char *internal_error;		/* record or context trouble seen on the way */

	enum lev_run_status status;
	char *output;
	char *error;
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

/* agent-script.c: the blueprint's script tools into the registry; one call of one */
int agent_script_start(struct lev_agent *a, struct lev_err *err);
/*
 * Run an allowed call to the script tool TI; returns the highest label of
 * what its host functions gave it (the result is at least that).
 */
enum lev_level agent_script_call(struct lev_agent *a, const char *call_id,
				 const struct lev_tool_info *ti, const json_t *args,
				 struct lev_tool_output *out);

/* agent-seed.c */
int agent_run_seeds(struct lev_agent *a, struct lev_err *err);

#endif
