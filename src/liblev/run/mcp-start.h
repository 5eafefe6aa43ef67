/*
 * mcp-start.h - start the MCP servers a stage names, as a run starts them
 * (docs/mcp.md): which servers, in which sandbox, held to the tools the
 * user approved (mcp-pins.h), their tools into a registry and their
 * descriptions and schemas into provenance as the server's text.  The run
 * (agent-mcp.c) and `lev check` (check.c) both start them here, so a check
 * knows the same tools, under the same names, as the run.
 *
 * A server is started when a stage names it: in available_connectors, or
 * by a tool "<server>__<tool>" in available_tools.  A bare name in
 * available_tools that no built-in has starts every configured server, and
 * resolves to the one tool of that name when exactly one server offers it.
 * A server runs in the sandbox of the first stage that names it; where that
 * stage's kind is none, in a namespace sandbox of its own (the same network
 * setting), or, when the user's config says sandbox = "none" for that
 * server, on the host.
 *
 * Ownership: a set owns its servers and the sandboxes made for them; the
 * options are borrowed for the call only.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "liblev/base/error.h"
#include "liblev/conf/blueprint.h"
#include "liblev/conf/config.h"
#include "liblev/policy/integrity.h"
#include "liblev/policy/provenance.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/tools/tools.h"

struct lev_run_mcp;

/* A stage as set up: its sandbox (as made for it) and its resolved settings. */
struct lev_run_mcp_stage {
	const struct lev_stage *st;
	struct lev_sandbox *sb;
	const struct lev_sandbox_spec *eff;
};

struct lev_run_mcp_opts {
	const struct lev_config *cfg;
	const struct lev_integrity_policy *ipol;	/* [[sources]]; NULL: nothing trusted */
	const char *workdir, *home, *data_root;
	const char *credentials_path;		/* an HTTP server's OAuth tokens; NULL: none */
	char *const *envp;			/* the servers' environment, before the filter */
	const struct lev_run_mcp_stage *stages;
	size_t n_stages;
	struct lev_tools *tools;		/* the servers' tools are added here */
	struct lev_provenance *prov;		/* their texts go here (NULL: nowhere) */
	/*
	 * `lev check`: a server a stage names that does not start is an error
	 * (the run warns and goes on without its tools; one only a bare tool
	 * name started is a note in both), and a server's first use records
	 * no approval (the run records the tools it lists then: the same ones).
	 */
	bool check;
	void (*warn)(void *ud, const char *msg);	/* notes (a server that is not available, ...) */
	void *ud;
};

/*
 * The one environment a run's children start from, its commands' and its
 * MCP servers', and `lev check`'s servers': ENVP (a new array) without the
 * variables secret by their role (lev_config_secret_vars(): the providers'
 * key variables, the servers' ${VAR}s), whatever their names, whose values
 * join the secret set (base/secrets.h), and with credential_store =
 * "keychain" without the session bus's address, through which a command
 * could ask the keychain for every key.  agent-setup.c's build_env() and
 * check.c both call it; t5306 holds them to the same answer.
 */
char **lev_run_env(const struct lev_config *cfg, char *const *envp);

/* Does stage ST name a configured server (see above)? */
bool lev_run_mcp_wanted(const struct lev_config *cfg, const struct lev_stage *st);
/* Start the servers O's stages name, add their tools: *out (NULL when none is configured). */
int lev_run_mcp_start(const struct lev_run_mcp_opts *o, struct lev_run_mcp **out,
		      struct lev_err *err);
/* Accepts NULL; returns NULL. */
struct lev_run_mcp *lev_run_mcp_free(struct lev_run_mcp *mc);
/* Is SERVER trusted by a [[sources]] entry of IPOL? */
bool lev_run_mcp_server_trusted(const struct lev_integrity_policy *ipol, const char *server);
/*
 * The MCP servers whose tools OFFERED holds (strv, NULL: none): their
 * descriptions and schemas are in every request of the stage.
 */
char **lev_run_mcp_offering(const struct lev_run_mcp *mc, const struct lev_tools *tools,
			    char *const *offered);
/* True when one of SERVERS is trusted by no [[sources]] entry: its tools' texts are untrusted. */
bool lev_run_mcp_untrusted(const struct lev_integrity_policy *ipol, char *const *servers);
/* Run the MCP tool NAME (as registered) with ARGS; a failure is an error result. */
void lev_run_mcp_call(struct lev_run_mcp *mc, const char *name, const json_t *args, int cancel_fd,
		      struct lev_tool_output *out);
