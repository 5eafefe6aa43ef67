/*
 * agent-mcp.c - the run's MCP servers (docs/mcp.md): which to start, in
 * which sandbox, their tools into the registry, and their calls
 * (mcp-start.h: the run and `lev check` start them here alike).
 *
 * A server that cannot start is a warning in a run and its tools are
 * absent: a call to them is refused like any unknown tool (`lev check`
 * says it as an error instead).
 *
 * A server's tool descriptions and input schemas are its text, in every
 * request of a stage that offers them: unless a [[sources]] entry labels
 * the server trusted, they feed argument provenance as untrusted text, and
 * every call of such a stage is decided in an untrusted context
 * (agent_chain_env(), lev_check_run(); docs/mcp.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/secrets.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/agent-internal.h"
#include "liblev/run/mcp-start.h"
#include "liblev/tools/mcp-pins.h"
#include "liblev/tools/mcp-probe.h"
#include "liblev/tools/mcp.h"

struct run_mcp_tool {
	char *name;			/* "<server>__<tool>" as offered */
	char *bare[2];			/* the bare alias when it resolves, NULL-terminated */
	size_t server;			/* index into lev_run_mcp.v */
	const struct lev_mcp_tool *t;	/* borrowed from the server */
};

struct run_mcp_server {
	const struct lev_mcp_server_conf *conf;
	struct lev_sandbox *own_sb;	/* a namespace sandbox made for it, or NULL */
	struct lev_mcp_server *srv;	/* NULL: not started */
};

struct lev_run_mcp {
	struct run_mcp_server *v;
	size_t n;
	struct run_mcp_tool *tools;
	size_t n_tools;
};

/* Say MSG (taken) where O's caller wants notes. */
static void note(const struct lev_run_mcp_opts *o, char *msg)
{
	if (o->warn)
		o->warn(o->ud, msg);
	free(msg);
}

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

bool lev_run_mcp_wanted(const struct lev_config *cfg, const struct lev_stage *st)
{
	bool bare = false, named = false;

	for (size_t i = 0; i < cfg->n_mcp_servers; i++)
		named |= stage_names(st, &cfg->mcp_servers[i], &bare);
	return named || (bare && cfg->n_mcp_servers);
}

/* The sandbox server M runs in, for stage S (NULL with ERR set: refused). */
static struct lev_sandbox *server_sandbox(const struct lev_run_mcp_opts *o,
					  const struct lev_run_mcp_stage *s,
					  struct run_mcp_server *m, struct lev_err *err)
{
	struct lev_sandbox_opts so = LEV_SANDBOX_OPTS_INIT;
	struct lev_sandbox_spec spec = *s->eff;

	if (lev_sandbox_kind(s->sb) != LEV_SANDBOX_NONE || m->conf->sandbox_none)
		return s->sb;
	spec.kind = LEV_SANDBOX_NAMESPACE;
	spec.on_unavailable = LEV_ON_UNAVAILABLE_ERROR;
	lev_mcp_sandbox_opts(o->cfg, o->workdir, o->home, o->data_root, &so);
	if (lev_sandbox_new(&spec, &so, &m->own_sb, err) < 0) {
		lev_err_wrap(err, "stage '%s' runs commands on the host, and MCP server '%s' needs "
			     "at least a namespace sandbox; set sandbox = \"none\" for it in "
			     "config.toml to run it on the host", s->st->name, m->conf->name);
		return NULL;
	}
	return m->own_sb;
}

/*
 * Hold the server's tools to what the user approved in earlier runs
 * (mcp-pins.h).  A check records nothing: with no record yet the run would
 * record the tools listed now, and offer them all.
 */
static int check_pins(const struct lev_run_mcp_opts *o, struct run_mcp_server *m,
		      struct lev_err *err)
{
	_cleanup_strv_ char **notes = NULL;
	json_t *rec = NULL;

	if (o->check) {
		if (lev_mcp_pins_load(o->data_root, m->conf->name, &rec, err) < 0)
			goto fail;
		json_decref(rec);
		if (!rec)
			return 0;
	}
	if (lev_mcp_pins_enforce(m->srv, o->data_root, &notes, err) < 0)
		goto fail;
	for (char **n = notes; n && *n; n++)
		note(o, xstrdup(*n));
	return 0;
fail:
	m->srv = lev_mcp_free(m->srv);
	return err->code;
}

/*
 * Start M for stage S and take its usable tools.  A run goes on without a
 * server that fails; a check stops at one S names (NAMED), and goes on as
 * the run does without one only a bare tool name started.
 */
static int start_one(const struct lev_run_mcp_opts *o, struct lev_run_mcp *mc,
		     const struct lev_run_mcp_stage *s, struct run_mcp_server *m, bool named,
		     struct lev_err *err)
{
	struct lev_err e = LEV_ERR_INIT;
	struct lev_credstore store = { o->cfg->credential_store, o->credentials_path, NULL };
	struct lev_mcp_opts mo = { .conf = m->conf, .envp = o->envp,
				   .allow_local_network = o->cfg->allow_local_network,
				   .store = &store };

	/* a url server runs elsewhere: lev reaches it through its network guard */
	mo.sandbox = m->conf->url ? NULL : server_sandbox(o, s, m, &e);
	if ((!mo.sandbox && !m->conf->url) || lev_mcp_start(&mo, &m->srv, &e) < 0 ||
	    check_pins(o, m, &e) < 0) {
		if (o->check && named)
			return lev_err_set(err, e.code < 0 && e.code != LEV_EUSAGE ? e.code : -EIO,
					   "MCP server '%s' did not start: %s", m->conf->name,
					   e.msg);
		note(o, xasprintf("MCP server '%s' is not available: %s", m->conf->name, e.msg));
		return 0;
	}
	for (size_t i = 0; i < lev_mcp_tool_count(m->srv); i++) {
		const struct lev_mcp_tool *t = lev_mcp_tool_at(m->srv, i);
		struct run_mcp_tool *at;

		if (t->unusable) {
			note(o, xasprintf("MCP server '%s': tool '%s' is not offered: %s",
					   m->conf->name, t->name, t->unusable));
			continue;
		}
		mc->tools = xreallocarray(mc->tools, mc->n_tools + 1, sizeof(*mc->tools));
		at = &mc->tools[mc->n_tools++];
		memset(at, 0, sizeof(*at));
		at->name = lev_mcp_qualified_name(m->conf->name, t->name);
		at->server = (size_t)(m - mc->v);
		at->t = t;
	}
	return 0;
}

static bool name_taken(const struct lev_tools *tools, const struct lev_run_mcp *mc, size_t upto,
		       const char *name)
{
	if (lev_tools_find(tools, name))
		return true;
	for (size_t j = 0; j < upto; j++)
		if (!strcmp(mc->tools[j].name, name))
			return true;
	return false;
}

/* Names: "_2" on a clash; the bare alias when exactly one server offers it. */
static void name_tools(struct lev_run_mcp *mc, const struct lev_tools *tools)
{
	for (size_t i = 0; i < mc->n_tools; i++) {
		struct run_mcp_tool *at = &mc->tools[i];
		bool unique = !lev_tooltable_find(at->t->name) &&
			      !lev_tools_find(tools, at->t->name);
		unsigned k = 2;

		while (name_taken(tools, mc, i, at->name)) {
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

static int register_tools(struct lev_run_mcp *mc, struct lev_tools *tools, struct lev_err *err)
{
	for (size_t i = 0; i < mc->n_tools; i++) {
		struct run_mcp_tool *at = &mc->tools[i];
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
		int r = lev_tools_add(tools, &ti, err);

		if (r < 0)
			return r;
	}
	return 0;
}

bool lev_run_mcp_server_trusted(const struct lev_integrity_policy *ipol, const char *server)
{
	const struct lev_source_label *s = lev_integrity_source(ipol, NULL, NULL, NULL, server);

	return s && s->has_integrity && s->integrity == LEV_TRUSTED;
}

/* Every tool's description and schema, as the server's text (untrusted unless a source trusts it). */
static void feed_descriptions(const struct lev_run_mcp_opts *o, struct lev_run_mcp *mc)
{
	for (size_t i = 0; o->prov && i < mc->n_tools; i++) {
		const struct lev_mcp_tool *t = mc->tools[i].t;
		enum lev_integrity in =
			lev_run_mcp_server_trusted(o->ipol, mc->v[mc->tools[i].server].conf->name)
				? LEV_TRUSTED : LEV_UNTRUSTED;
		_cleanup_free_ char *schema = t->schema ? json_dumps(t->schema, JSON_COMPACT) : NULL;

		if (t->description)
			lev_provenance_add(o->prov, in, t->description, strlen(t->description));
		if (schema)
			lev_provenance_add(o->prov, in, schema, strlen(schema));
	}
}

/* Start every server a stage of O names (see mcp-start.h). */
static int start_named(const struct lev_run_mcp_opts *o, struct lev_run_mcp *mc,
		       struct lev_err *err)
{
	bool bare = false;
	int r = 0;

	for (size_t i = 0; i < mc->n && r == 0; i++)
		for (size_t k = 0; k < o->n_stages && !mc->v[i].srv && r == 0; k++)
			if (stage_names(o->stages[k].st, mc->v[i].conf, &bare))
				r = start_one(o, mc, &o->stages[k], &mc->v[i], true, err);
	for (size_t i = 0; r == 0 && bare && o->n_stages && i < mc->n; i++)
		if (!mc->v[i].srv && !mc->v[i].own_sb)
			r = start_one(o, mc, &o->stages[0], &mc->v[i], false, err);
	return r;
}

int lev_run_mcp_start(const struct lev_run_mcp_opts *o, struct lev_run_mcp **out,
		      struct lev_err *err)
{
	const struct lev_config *cfg = o->cfg;
	struct lev_run_mcp *mc;
	int r;

	*out = NULL;
	if (!cfg->n_mcp_servers)
		return 0;
	mc = xcalloc(1, sizeof(*mc));
	mc->v = xcalloc(cfg->n_mcp_servers, sizeof(*mc->v));
	mc->n = cfg->n_mcp_servers;
	for (size_t i = 0; i < mc->n; i++)
		mc->v[i].conf = &cfg->mcp_servers[i];
	r = start_named(o, mc, err);
	if (r == 0) {
		name_tools(mc, o->tools);
		feed_descriptions(o, mc);
		r = register_tools(mc, o->tools, err);
	}
	*out = mc;	/* the caller frees it, registered or not */
	return r;
}

char **lev_run_mcp_offering(const struct lev_run_mcp *mc, const struct lev_tools *tools,
			    char *const *offered)
{
	char **v = NULL;

	for (char *const *t = offered; mc && t && *t; t++) {
		const struct lev_tool_info *ti = lev_tools_find(tools, *t);

		if (ti && ti->kind == LEV_TOOL_MCP && ti->group && !lev_strv_contains(v, ti->group))
			v = lev_strv_push(v, ti->group);
	}
	return v;
}

bool lev_run_mcp_untrusted(const struct lev_integrity_policy *ipol, char *const *servers)
{
	for (char *const *s = servers; s && *s; s++)
		if (!lev_run_mcp_server_trusted(ipol, *s))
			return true;
	return false;
}

struct lev_run_mcp *lev_run_mcp_free(struct lev_run_mcp *mc)
{
	if (!mc)
		return NULL;
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
	return NULL;
}

void lev_run_mcp_call(struct lev_run_mcp *mc, const char *name, const json_t *args, int cancel_fd,
		      struct lev_tool_output *out)
{
	struct lev_err err = LEV_ERR_INIT;

	for (size_t i = 0; mc && i < mc->n_tools; i++) {
		struct run_mcp_tool *at = &mc->tools[i];

		if (strcmp(at->name, name))
			continue;
		if (lev_mcp_call(mc->v[at->server].srv, at->t->name, args, cancel_fd, out,
				 &err) < 0) {
			_cleanup_free_ char *t = xasprintf("[error] %s", err.msg);

			lev_tool_output_set(out, t, true);
		}
		return;
	}
	lev_tool_output_set(out, "[error] no MCP server runs this tool", true);
}

char **lev_run_env(const struct lev_config *cfg, char *const *envp)
{
	_cleanup_strv_ char **roles = lev_config_secret_vars(cfg);
	bool keychain = cfg->credential_store == LEV_CRED_KEYCHAIN;
	char **out = NULL;

	for (char *const *e = envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		bool secret = false;

		if (!eq || (keychain && lev_startswith(*e, "DBUS_SESSION_BUS_ADDRESS=")))
			continue;
		for (char **k = roles; !secret && k && *k; k++)
			secret = strlen(*k) == (size_t)(eq - *e) &&
				 !strncmp(*e, *k, (size_t)(eq - *e));
		if (secret)
			lev_secrets_add(eq + 1);
		else
			out = lev_strv_push(out, *e);
	}
	return out;
}

/* The run's side: its stages, sandboxes and warnings. */
static void run_warn(void *ud, const char *msg)
{
	agent_warn(ud, "%s", msg);
}

int agent_mcp_start(struct lev_agent *a, struct lev_err *err)
{
	struct lev_run_mcp_stage *stages = xcalloc(a->n_stages + 1, sizeof(*stages));
	struct lev_run_mcp_opts o = {
		.cfg = a->cfg,
		.ipol = lev_policy_integrity(lev_gate_policy(a->gate)),
		.workdir = a->workdir,
		.home = a->o.home,
		.data_root = a->o.data_root,
		.credentials_path = a->o.credentials_path,
		.envp = a->envp,
		.stages = stages,
		.n_stages = a->n_stages,
		.tools = a->tools,
		.prov = a->prov,
		.warn = run_warn,
		.ud = a,
	};
	int r;

	for (size_t k = 0; k < a->n_stages; k++)
		stages[k] = (struct lev_run_mcp_stage){ .st = a->stages[k].st,
							.sb = a->stages[k].sb,
							.eff = &a->stages[k].eff };
	r = lev_run_mcp_start(&o, &a->mcp, err);
	free(stages);
	return r;
}

char **agent_mcp_offering(struct lev_agent *a, char *const *offered)
{
	return lev_run_mcp_offering(a->mcp, a->tools, offered);
}

bool agent_mcp_untrusted(struct lev_agent *a, char *const *servers)
{
	return lev_run_mcp_untrusted(lev_policy_integrity(lev_gate_policy(a->gate)), servers);
}

void agent_mcp_free(struct lev_agent *a)
{
	a->mcp = lev_run_mcp_free(a->mcp);
}

void agent_mcp_call(struct lev_agent *a, const struct lev_tool_info *ti, const json_t *args,
		    struct lev_tool_output *out)
{
	lev_run_mcp_call(a->mcp, ti->name, args, a->o.cancel_fd, out);
}
