/*
 * mcp-probe.h - start one configured MCP server outside a run, for
 * `lev mcp test`, `lev mcp list` and `lev mcp approve` (docs/mcp.md).
 *
 * The server starts where a run's stage of the config's own sandbox would
 * start it: in that sandbox when its kind is namespace or container, else
 * in a namespace sandbox of its own (refused where none can be made, unless
 * its entry says sandbox = "none"); initialized and its tools listed.  A
 * url server is reached through lev's network guard (mcp-http.h).
 *
 * Ownership: a probe owns its server and the sandbox it runs in.
 */
#pragma once

#include "liblev/base/error.h"
#include "liblev/conf/config.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/tools/mcp.h"

struct lev_mcp_probe_opts {
	const struct lev_config *cfg;	/* required: [sandbox], [security] shell_env */
	const char *workdir;		/* required: read-write inside the sandbox */
	const char *home;		/* NULL: $HOME */
	const char *data_root;		/* masked; NULL: from the environment */
	char *const *envp;		/* the environment, before the sandbox's filter */
	const struct lev_credstore *store;	/* OAuth tokens for url servers; NULL: none */
};

struct lev_mcp_probe {
	struct lev_sandbox *sb;
	struct lev_mcp_server *srv;
};

/*
 * The options of a sandbox a server runs in (its workdir, home, masked data
 * root and [security] shell_env filter), into SO: the probe, a run and
 * `lev check` (run/mcp-start.h) set them alike.
 */
void lev_mcp_sandbox_opts(const struct lev_config *cfg, const char *workdir, const char *home,
			  const char *data_root, struct lev_sandbox_opts *so);

/* Start server C as above: *out is owned (free it with lev_mcp_probe_free()). */
int lev_mcp_probe_start(const struct lev_mcp_probe_opts *o, const struct lev_mcp_server_conf *c,
			struct lev_mcp_probe **out, struct lev_err *err);
/* Accepts NULL; returns NULL. */
struct lev_mcp_probe *lev_mcp_probe_free(struct lev_mcp_probe *p);
