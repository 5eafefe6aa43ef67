/*
 * agent-mcp.c - the run's MCP servers (docs/mcp.md): which to start, in
 * which sandbox, their tools into the registry, and their calls.
 *
 * A server the user configured is started when a stage names it: in
 * available_connectors, or by a tool "<server>__<tool>" in available_tools.
 * A bare name in available_tools that no built-in has starts every
 * configured server, and resolves to the one tool of that name when
 * exactly one server offers it.
 *
 * A server runs in the sandbox of the first stage that names it; where that
 * stage's kind is none, in a namespace sandbox of its own (the same
 * network setting), or, when the user's config says sandbox = "none" for
 * that server, on the host.  A server that cannot start is a warning and
 * its tools are absent: a call to them is refused like any unknown tool.
 *
 * A server's tool descriptions and input schemas are its text, in every
 * request of a stage that offers them: unless a [[sources]] entry labels
 * the server trusted, they feed argument provenance as untrusted text, and
 * every call of such a stage is decided in an untrusted context
 * (agent_chain_env(); docs/mcp.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/agent-internal.h"
#include "liblev/tools/mcp-pins.h"
#include "liblev/tools/mcp.h"

struct agent_mcp_tool {
	char *name;			/* "<server>__<tool>" as offered */
	char *bare[2];			/* the bare alias when it resolves, NULL-terminated */
	size_t server;			/* index into agent_mcp.v */
	const struct lev_mcp_tool *t;	/* borrowed from the server */
};

struct agent_mcp_server {
	const struct lev_mcp_server_conf *conf;
	struct lev_sandbox *own_sb;	/* a namespace sandbox made for it, or NULL */
	struct lev_mcp_server *srv;	/* NULL: not started */
};

struct agent_mcp {
	struct agent_mcp_server *v;
	size_t n;
	struct agent_mcp_tool *tools;
	size_t n_tools;
};

/* Does stage ST name server C (a connector, or a "<server>__" tool)? */
static bool stage_names(const struct lev_stage *st, const struct lev_mcp_server_conf *c,
			bool *bare_unknown)
{
	_cleanup_free_ char *prefix = lev_mcp_qualified_name(c->name, "");
	bool named = lev_strv_contains(st->available_connectors, c->name);

	for (char **t = st->available_tools; t && *t; t++) {
		if (!strncmp(*t, prefix, strlen(prefix)))
			named = true;
		else if (!lev_tooltable_find(*t) && !strstr(*t, "__"))
			*bare_unknown = true;
	}
	return named;
}

/* The sandbox server C runs in, for stage S (NULL with ERR set: refused). */
static struct lev_sandbox *server_sandbox(struct lev_agent *a, struct stage_rt *s,
					  struct agent_mcp_server *m, struct lev_err *err)
{
	struct lev_sandbox_opts so = LEV_SANDBOX_OPTS_INIT;
	struct lev_sandbox_spec spec = s->eff;

	if (lev_sandbox_kind(s->sb) != LEV_SANDBOX_NONE || m->conf->sandbox_none)
		return s->sb;
	spec.kind = LEV_SANDBOX_NAMESPACE;
	spec.on_unavailable = LEV_ON_UNAVAILABLE_ERROR;
	so.workdir = a->workdir;
	so.home = a->o.home;
	so.data_root = a->o.data_root;
	so.env.mode = a->cfg->shell_env;
	so.env.withhold = a->cfg->shell_env_withhold;
	so.env.allow = a->cfg->allow_env_vars;
	if (lev_sandbox_new(&spec, &so, &m->own_sb, err) < 0) {
		lev_err_wrap(err, "stage '%s' runs commands on the host, and MCP server '%s' needs "
			     "at least a namespace sandbox; set sandbox = \"none\" for it in "
			     "config.toml to run it on the host", s->st->name, m->conf->name);
		return NULL;
	}
	return m->own_sb;
}

/* Hold the server's tools to what the user approved in earlier runs (mcp-pins.h). */
static int check_pins(struct lev_agent *a, struct agent_mcp_server *m, struct lev_err *err)
{
	_cleanup_strv_ char **notes = NULL;

	if (lev_mcp_pins_enforce(m->srv, a->o.data_root, &notes, err) < 0) {
		m->srv = lev_mcp_free(m->srv);
		return err->code;
	}
	for (char **n = notes; n && *n; n++)
		agent_warn(a, "%s", *n);
	return 0;
}

static void start_one(struct lev_agent *a, struct stage_rt *s, struct agent_mcp_server *m)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_credstore store = { a->cfg->credential_store, a->o.credentials_path, NULL };
	struct lev_mcp_opts o = { .conf = m->conf, .envp = a->envp,
				  .allow_local_network = a->cfg->allow_local_network,
				  .store = &store };

	/* a url server runs elsewhere: lev reaches it through its network guard */
	o.sandbox = m->conf->url ? NULL : server_sandbox(a, s, m, &err);
	if ((!o.sandbox && !m->conf->url) || lev_mcp_start(&o, &m->srv, &err) < 0 ||
	    check_pins(a, m, &err) < 0) {
		agent_warn(a, "MCP server '%s' is not available: %s", m->conf->name, err.msg);
		return;
	}
	for (size_t i = 0; i < lev_mcp_tool_count(m->srv); i++) {
		const struct lev_mcp_tool *t = lev_mcp_tool_at(m->srv, i);
		struct agent_mcp *mc = a->mcp;
		struct agent_mcp_tool *at;

		if (t->unusable) {
			agent_warn(a, "MCP server '%s': tool '%s' is not offered: %s",
				   m->conf->name, t->name, t->unusable);
			continue;
		}
		mc->tools = xreallocarray(mc->tools, mc->n_tools + 1, sizeof(*mc->tools));
		at = &mc->tools[mc->n_tools++];
		memset(at, 0, sizeof(*at));
		at->name = lev_mcp_qualified_name(m->conf->name, t->name);
		at->server = (size_t)(m - mc->v);
		at->t = t;
	}
}

static bool name_taken(const struct lev_agent *a, size_t upto, const char *name)
{
	if (lev_tools_find(a->tools, name))
		return true;
	for (size_t j = 0; j < upto; j++)
		if (!strcmp(a->mcp->tools[j].name, name))
			return true;
	return false;
}

/* Names: "_2" on a clash; the bare alias when exactly one server offers it. */
static void name_tools(struct lev_agent *a)
{
	struct agent_mcp *mc = a->mcp;

	for (size_t i = 0; i < mc->n_tools; i++) {
		struct agent_mcp_tool *at = &mc->tools[i];
		bool unique = !lev_tooltable_find(at->t->name) &&
			      !lev_tools_find(a->tools, at->t->name);
		unsigned k = 2;

		while (name_taken(a, i, at->name)) {
			char *n = lev_mcp_qualified_name(mc->v[at->server].conf->name, at->t->name);

			free(at->name);
			at->name = xasprintf("%s_%u", n, k++);
			free(n);
		}
		for (size_t j = 0; j < mc->n_tools && unique; j++)
			if (j != i && !strcmp(mc->tools[j].t->name, at->t->name))
				unique = false;
		if (unique)
			at->bare[0] = xstrdup(at->t->name);
	}
}

static int register_tools(struct lev_agent *a, struct lev_err *err)
{
	struct agent_mcp *mc = a->mcp;

	for (size_t i = 0; i < mc->n_tools; i++) {
		struct agent_mcp_tool *at = &mc->tools[i];
		struct lev_tool_info ti = {
			.name = at->name,
			.aliases = at->bare[0] ? (const char *const *)at->bare : NULL,
			.description = at->t->description,
			.kind = LEV_TOOL_MCP,
			.op = LEV_OP_NONE,
			.touches = LEV_TOUCH_PROCESS | LEV_TOUCH_NETWORK,
			.outbound = true,
			.label = LEV_PRIVATE,
			.schema = at->t->schema,
			.group = mc->v[at->server].conf->name,
			.origin = at->t->name,
		};
		int r = lev_tools_add(a->tools, &ti, err);

		if (r < 0)
			return r;
	}
	return 0;
}

/* Every tool's description and schema, as the server's text (untrusted unless a source trusts it). */
static void feed_descriptions(struct lev_agent *a)
{
	struct agent_mcp *mc = a->mcp;

	for (size_t i = 0; i < mc->n_tools; i++) {
		const struct lev_mcp_tool *t = mc->tools[i].t;
		enum lev_integrity in = agent_server_trusted(a, mc->v[mc->tools[i].server].conf->name)
						? LEV_TRUSTED : LEV_UNTRUSTED;
		_cleanup_free_ char *schema = t->schema ? json_dumps(t->schema, JSON_COMPACT) : NULL;

		if (t->description)
			lev_provenance_add(a->prov, in, t->description, strlen(t->description));
		if (schema)
			lev_provenance_add(a->prov, in, schema, strlen(schema));
	}
}

int agent_mcp_start(struct lev_agent *a, struct lev_err *err)
{
	const struct lev_config *cfg = a->cfg;
	struct agent_mcp *mc;
	bool bare = false;

	if (!cfg->n_mcp_servers)
		return 0;
	mc = a->mcp = xcalloc(1, sizeof(*mc));
	mc->v = xcalloc(cfg->n_mcp_servers, sizeof(*mc->v));
	mc->n = cfg->n_mcp_servers;
	for (size_t i = 0; i < mc->n; i++)
		mc->v[i].conf = &cfg->mcp_servers[i];
	for (size_t i = 0; i < mc->n; i++)
		for (size_t k = 0; k < a->n_stages && !mc->v[i].srv; k++)
			if (stage_names(a->stages[k].st, mc->v[i].conf, &bare))
				start_one(a, &a->stages[k], &mc->v[i]);
	for (size_t i = 0; bare && a->n_stages && i < mc->n; i++)
		if (!mc->v[i].srv && !mc->v[i].own_sb)
			start_one(a, &a->stages[0], &mc->v[i]);
	name_tools(a);
	feed_descriptions(a);
	return register_tools(a, err);
}

char **agent_mcp_offering(struct lev_agent *a, char *const *offered)
{
	char **v = NULL;

	for (char *const *t = offered; a->mcp && t && *t; t++) {
		const struct lev_tool_info *ti = lev_tools_find(a->tools, *t);

		if (ti && ti->kind == LEV_TOOL_MCP && ti->group && !lev_strv_contains(v, ti->group))
			v = lev_strv_push(v, ti->group);
	}
	return v;
}

bool agent_mcp_untrusted(struct lev_agent *a, char *const *servers)
{
	for (char *const *s = servers; s && *s; s++)
		if (!agent_server_trusted(a, *s))
			return true;
	return false;
}

void agent_mcp_free(struct lev_agent *a)
{
	struct agent_mcp *mc = a->mcp;

	if (!mc)
		return;
	for (size_t i = 0; i < mc->n_tools; i++) {
		free(mc->tools[i].name);
		free(mc->tools[i].bare[0]);
	}
	free(mc->tools);
	for (size_t i = 0; i < mc->n; i++) {
		lev_mcp_free(mc->v[i].srv);
		lev_sandbox_free(mc->v[i].own_sb);
	}
	free(mc->v);
	free(mc);
	a->mcp = NULL;
}

void agent_mcp_call(struct lev_agent *a, const struct lev_tool_info *ti, const json_t *args,
		    struct lev_tool_output *out)
{
	struct agent_mcp *mc = a->mcp;
	struct lev_err err = LEV_ERR_INIT;

	for (size_t i = 0; mc && i < mc->n_tools; i++) {
		struct agent_mcp_tool *at = &mc->tools[i];

		if (strcmp(at->name, ti->name))
			continue;
		if (lev_mcp_call(mc->v[at->server].srv, at->t->name, args, a->o.cancel_fd, out,
				 &err) < 0) {
			_cleanup_free_ char *t = xasprintf("[error] %s", err.msg);

			lev_tool_output_set(out, t, true);
		}
		return;
	}
	lev_tool_output_set(out, "[error] no MCP server runs this tool", true);
}
