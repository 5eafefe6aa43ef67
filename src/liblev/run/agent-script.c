/*
 * agent-script.c - the blueprint's Lua script tools in a run
 * (docs/script-tools.md): their entries in the registry, their calls, and
 * the calls their host functions make.
 *
 * A script tool is a run-time entry like an MCP tool: asked about by
 * default, offered where a stage's available_tools names it, classified by
 * the taint gate like any tool lev did not write (outbound; [mcp_overrides]
 * by its name applies).  Its result is labelled Private unless policy gives
 * it a sensitivity, and never lower than anything its host functions read.
 *
 * A host function (shell, http_get, http_post, read_file, write_file) is a
 * nested call of the built-in tool with the id "<call>.<n>", dispatched
 * through lev_agent_dispatch(): the one gate chain, with the stage of the
 * script tool's call, asks, audit lines and events, the stage's sandbox.
 * While a script runs, the chain's environment (agent_chain_env(), built
 * by lev_gatechain_env_build() as for every caller) differs in two ways
 * only: the offer is the stage's plus the built-in tools the script's
 * header asked for, and the context is the run's raised by what the
 * script's earlier host calls returned (their results are not in the
 * context, but the script holds them): their highest label, untrusted once
 * one of them was.  Their texts feed argument provenance as a result the
 * model read would, so a value the script copies from a fetched page into
 * http_post() is marked as from untrusted text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/agent-internal.h"
#include "liblev/run/context.h"
#include "liblev/tools/script.h"

static const struct lev_script_tool *script_of(const struct lev_agent *a, const char *name)
{
	for (size_t i = 0; i < a->bp->n_script_tools; i++)
		if (!strcmp(a->bp->script_tools[i].name, name))
			return &a->bp->script_tools[i];
	return NULL;
}

int agent_script_start(struct lev_agent *a, struct lev_err *err)
{
	return lev_script_tools_add(a->tools, a->bp->script_tools, a->bp->n_script_tools, err);
}

/* The offer inside a script: the stage's, and the built-in tools the header asked for. */
static char **nested_offer(const struct lev_agent *a, const struct lev_script_tool *st)
{
	char **v = lev_strv_copy(a->stages[a->cur].offered);
	enum lev_tool_op ops[5];
	size_t n = 0;

	ops[n++] = LEV_OP_READ_FILE;
	ops[n++] = LEV_OP_WRITE_FILE;
	if (st->needs & LEV_SCRIPT_NEEDS_SHELL)
		ops[n++] = LEV_OP_SHELL;
	if (st->needs & LEV_SCRIPT_NEEDS_NETWORK) {
		ops[n++] = LEV_OP_WEB_FETCH;
		ops[n++] = LEV_OP_HTTP_POST;
	}
	for (size_t i = 0; i < n; i++)
		if (!lev_strv_contains(v, lev_tooltable_name(ops[i])))
			v = lev_strv_push(v, lev_tooltable_name(ops[i]));
	return v;
}

/* [tool_script_permissions] for the host function that runs OP (config, then blueprint). */
static bool script_perm_denies(const struct lev_script_perms *p, enum lev_tool_op op)
{
	enum lev_script_perm v;

	switch (op) {
	case LEV_OP_READ_FILE:
		v = p->read_file;
		break;
	case LEV_OP_WRITE_FILE:
		v = p->write_file;
		break;
	case LEV_OP_SHELL:
		v = p->shell;
		break;
	case LEV_OP_WEB_FETCH:
		v = p->http_get;
		break;
	default:
		v = p->http_post;
		break;
	}
	return v == LEV_SCRIPT_DENY;
}

/* A host function: one call of the built-in tool OP, through the gate chain. */
static void host_call(void *data, enum lev_tool_op op, const json_t *args,
		      struct lev_tool_output *out)
{
	struct agent_nested *ns = data;
	struct lev_agent *a = ns->a;
	_cleanup_free_ char *id = xasprintf("%s.%u", ns->parent_id, ++ns->n);
	_cleanup_free_ char *raw = json_dumps(args, JSON_COMPACT);
	struct lev_tool_call call = {
		.id = id,
		.name = (char *)lev_tooltable_name(op),
		.arguments = (json_t *)args,
		.raw_arguments = raw ? raw : (char *)"",
	};
	struct lev_call_decision dec = { 0 };
	struct lev_err err = LEV_ERR_INIT;

	if (script_perm_denies(&a->cfg->script_permissions, op) ||
	    (a->bp->has_script_permissions && script_perm_denies(&a->bp->script_permissions, op))) {
		lev_tool_output_set(out, "[denied] [tool_script_permissions] denies it to script "
				    "tools", true);
		return;
	}
	if (lev_agent_dispatch(a, &call, out, &dec, &err) < 0)
		lev_tool_output_set(out, "[error] internal error", true);
	/* what the script now holds: the result, or a refusal's text */
	ns->level = lev_level_max(ns->level, dec.label);
	if (dec.integrity == LEV_UNTRUSTED)
		ns->integrity = LEV_UNTRUSTED;
	/* a result is evidence of where later arguments came from; a refusal is lev's text */
	if (dec.allowed && out->text)
		lev_provenance_add_reply(a->prov, dec.integrity, out->text, out->len, args,
					 ns->integrity == LEV_UNTRUSTED
						 ? LEV_UNTRUSTED
						 : lev_taint_model_integrity(lev_context_taint(a->ctx)));
	agent_result_event(a, &call, out, &dec, dec.label, false);
	lev_call_decision_release(&dec);
}

enum lev_level agent_script_call(struct lev_agent *a, const char *call_id,
				 const struct lev_tool_info *ti, const json_t *args,
				 struct lev_tool_output *out)
{
	const struct lev_script_tool *st = script_of(a, ti->name);
	struct agent_nested ns = { .a = a, .parent_id = call_id, .level = LEV_PUBLIC,
				   .integrity = LEV_TRUSTED };
	struct lev_script_host host = { host_call, &ns };
	struct agent_nested *outer = a->nested;

	if (!st) {
		lev_tool_output_set(out, "[error] the blueprint has no such script tool", true);
		return LEV_PUBLIC;
	}
	ns.offered = nested_offer(a, st);
	a->nested = &ns;
	lev_script_run(st, args, NULL, &host, out);
	a->nested = outer;
	lev_strv_free(ns.offered);
	return ns.level;
}
