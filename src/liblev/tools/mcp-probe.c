/*
 * mcp-probe.c - one configured MCP server started outside a run (mcp-probe.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "liblev/base/xalloc.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/tools/mcp-probe.h"

void lev_mcp_sandbox_opts(const struct lev_config *cfg, const char *workdir, const char *home,
			  const char *data_root, struct lev_sandbox_opts *so)
{
	so->workdir = workdir;
	so->home = home;
	so->data_root = data_root;
	so->env.mode = cfg->shell_env;
	so->env.withhold = cfg->shell_env_withhold;
	so->env.allow = cfg->allow_env_vars;
}

static int probe_sandbox(const struct lev_mcp_probe_opts *o, const struct lev_mcp_server_conf *c,
			 struct lev_sandbox **out, struct lev_err *err)
{
	struct lev_sandbox_opts so = LEV_SANDBOX_OPTS_INIT;
	struct lev_sandbox_spec eff;
	bool own;
	int r;

	lev_sandbox_resolve(&o->cfg->sandbox, NULL, NULL, &eff);
	own = eff.kind == LEV_SANDBOX_NONE && !c->sandbox_none;
	if (own) {
		eff.kind = LEV_SANDBOX_NAMESPACE;
		eff.on_unavailable = LEV_ON_UNAVAILABLE_ERROR;
	}
	lev_mcp_sandbox_opts(o->cfg, o->workdir, o->home, o->data_root, &so);
	r = lev_sandbox_new(&eff, &so, out, err);
	lev_sandbox_spec_release(&eff);
	if (r < 0 && own)
		lev_err_wrap(err, "MCP server '%s' needs at least a namespace sandbox; set "
			     "sandbox = \"none\" for it in config.toml to run it on the host",
			     c->name);
	return r;
}

int lev_mcp_probe_start(const struct lev_mcp_probe_opts *o, const struct lev_mcp_server_conf *c,
			struct lev_mcp_probe **out, struct lev_err *err)
{
	struct lev_mcp_probe *p = xcalloc(1, sizeof(*p));
	struct lev_mcp_opts mo = { .conf = c, .envp = o->envp,
				   .allow_local_network = o->cfg->allow_local_network,
				   .store = o->store };
	int r = 0;

	if (!c->url)
		r = probe_sandbox(o, c, &p->sb, err);
	mo.sandbox = p->sb;
	if (r == 0)
		r = lev_mcp_start(&mo, &p->srv, err);
	if (r < 0) {
		lev_mcp_probe_free(p);
		return r;
	}
	*out = p;
	return 0;
}

struct lev_mcp_probe *lev_mcp_probe_free(struct lev_mcp_probe *p)
{
	if (!p)
		return NULL;
	lev_mcp_free(p->srv);
	lev_sandbox_free(p->sb);
	free(p);
	return NULL;
}
