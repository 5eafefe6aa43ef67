/*
 * agent-integrity.c - a run's integrity labels: what each result is
 * labelled, what the provenance index is fed, where untrusted text came
 * from (docs/integrity.md).
 */
#include "liblev/run/agent-internal.h"

#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/policy/integrity.h"
#include "liblev/policy/target.h"
#include "liblev/run/context.h"

#define SOURCES_MAX 32

static void feed(struct lev_agent *a, enum lev_integrity i, const char *s)
{
	if (s)
		lev_provenance_add(a->prov, i, s, strlen(s));
}

void agent_integrity_setup(struct lev_agent *a)
{
	a->prov = lev_provenance_new();
	/* what the user and the blueprint wrote */
	/* a sub-agent's task is as trusted as the context its parent wrote it from */
	feed(a, a->task_untrusted ? LEV_UNTRUSTED : LEV_TRUSTED, a->o.task);
	for (size_t i = 0; i < a->n_stages; i++) {
		feed(a, LEV_TRUSTED, a->stages[i].st->system_prompt);
		feed(a, LEV_TRUSTED, a->stages[i].st->description);
	}
}

void agent_integrity_free(struct lev_agent *a)
{
	a->prov = lev_provenance_free(a->prov);
	lev_strv_free(a->untrusted_sources);
	a->untrusted_sources = NULL;
	agent_label_free(a);
}

static const struct lev_integrity_policy *ipol(struct lev_agent *a)
{
	return lev_policy_integrity(lev_gate_policy(a->gate));
}

/* The canonical host of a network call's url, or NULL (caller frees). */
static char *call_host(const json_t *args)
{
	const char *url = agent_arg_str(args, "url");
	struct lev_target_url u = { 0 };
	char *h = NULL;

	if (url && lev_target_url_parse(url, &u, NULL) == 0)
		h = TAKE_PTR(u.host);
	lev_target_url_release(&u);
	return h;
}

static const struct lev_source_label *net_source(struct lev_agent *a, const struct lev_tool_info *ti,
						 const json_t *args)
{
	_cleanup_free_ char *host = NULL;

	if (ti->kind == LEV_TOOL_MCP)
		return lev_integrity_source(ipol(a), NULL, NULL, NULL, ti->group);
	host = call_host(args);
	return host ? lev_integrity_source(ipol(a), host, NULL, NULL, NULL) : NULL;
}

bool agent_hop_untrusted(struct lev_agent *a, const char *from)
{
	_cleanup_free_ char *host = NULL;
	const struct lev_source_label *s;
	struct lev_target_url u = { 0 };

	if (from && lev_target_url_parse(from, &u, NULL) == 0)
		host = TAKE_PTR(u.host);
	lev_target_url_release(&u);
	s = host ? lev_integrity_source(ipol(a), host, NULL, NULL, NULL) : NULL;
	return !(s && s->has_integrity && s->integrity == LEV_TRUSTED);
}

enum lev_level agent_source_level(struct lev_agent *a, const struct lev_tool_info *ti,
				  const json_t *args, enum lev_level l)
{
	const struct lev_source_label *s;

	if (!ti || (ti->kind != LEV_TOOL_NET && ti->kind != LEV_TOOL_MCP))
		return l;
	s = net_source(a, ti, args);
	return s && s->has_sensitivity ? lev_level_max(l, s->sensitivity) : l;
}

enum lev_integrity agent_file_integrity(struct lev_agent *a, const char *path)
{
	const struct lev_integrity_policy *p = ipol(a);
	const struct lev_source_label *s;
	_cleanup_free_ char *abs = NULL;
	const char *rel = NULL;
	size_t n = strlen(a->workdir);

	if (!p)
		return LEV_TRUSTED;
	if (!path)
		return p->workdir_untrusted || p->untrusted ? LEV_UNTRUSTED : LEV_TRUSTED;
	if (path[0] != '/') {
		rel = path;
		abs = xasprintf("%s/%s", a->workdir, path);
	} else {
		abs = xstrdup(path);
		if (!strncmp(path, a->workdir, n) && path[n] == '/')
			rel = path + n + 1;
	}
	s = lev_integrity_source(p, NULL, rel, abs, NULL);
	if (s && s->has_integrity)
		return s->integrity;
	return lev_integrity_of_file(p, rel, abs);
}

enum lev_integrity agent_result_integrity(struct lev_agent *a, const struct lev_tool_info *ti,
					  const json_t *args, const char *path)
{
	const struct lev_integrity_policy *p = ipol(a);
	const struct lev_source_label *s;

	if (!ti)
		return lev_taint_model_integrity(lev_context_taint(a->ctx));
	switch (ti->kind) {
	case LEV_TOOL_NET:
	case LEV_TOOL_MCP:
		s = net_source(a, ti, args);
		return s && s->has_integrity ? s->integrity : LEV_UNTRUSTED;
	case LEV_TOOL_FS:
		if (ti->op == LEV_OP_READ_FILES && json_is_array(json_object_get(args, "paths"))) {
			const json_t *v;
			size_t i;

			json_array_foreach(json_object_get(args, "paths"), i, v)
				if (agent_file_integrity(a, json_string_value(v)) == LEV_UNTRUSTED)
					return LEV_UNTRUSTED;
		}
		return agent_file_integrity(a, path);
	case LEV_TOOL_SHELL:
		/* it may read what the policy distrusts, or fetch from the network */
		if (p && (p->workdir_untrusted || p->untrusted))
			return LEV_UNTRUSTED;
		return a->stages[a->cur].eff.network ? LEV_UNTRUSTED : LEV_TRUSTED;
	case LEV_TOOL_INLINE:
		if (ti->op == LEV_OP_CONTEXT_READ) {
			int idx = lev_context_region_find(a->ctx, agent_arg_str(args, "region"));

			if (idx >= 0)
				return lev_taint_region_integrity(lev_context_taint(a->ctx),
								  (size_t)idx);
		}
		return LEV_TRUSTED;
	case LEV_TOOL_ASK:
		return LEV_TRUSTED;	/* the user's answer */
	case LEV_TOOL_AGENT:
		return LEV_TRUSTED;	/* lev's report; a child that saw untrusted text raises it */
	case LEV_TOOL_SCRIPT:
		/* the blueprint's code, and whatever its host functions fetched */
		return LEV_UNTRUSTED;
	}
	/* run-time entries lev does not know (script tools): untrusted */
	return LEV_UNTRUSTED;
}

void agent_integrity_result(struct lev_agent *a, const char *tool, const json_t *args,
			    enum lev_integrity i, const char *text, size_t len, bool source)
{
	/* a refusal quotes what the model wrote: it is nobody's evidence; nor is an echo */
	if (text && source)
		lev_provenance_add_reply(a->prov, i, text, len, args,
					 lev_taint_model_integrity(lev_context_taint(a->ctx)));
	if (i != LEV_UNTRUSTED)
		return;
	lev_context_mark_untrusted(a->ctx);
	if (source && lev_strv_len(a->untrusted_sources) < SOURCES_MAX) {
		_cleanup_free_ char *host = call_host(args);
		const char *path = agent_arg_str(args, "path");
		_cleanup_free_ char *src = host ? xasprintf("%s %s", tool, host)
				       : path  ? xasprintf("%s %s", tool, path)
					       : xstrdup(tool);

		if (!lev_strv_contains(a->untrusted_sources, src))
			a->untrusted_sources = lev_strv_push(a->untrusted_sources, src);
	}
}

void agent_integrity_json(const struct lev_agent *a, enum lev_integrity i, json_t *ev)
{
	json_t *src;

	json_object_set_new(ev, "integrity", json_string(lev_integrity_name(i)));
	if (i != LEV_UNTRUSTED)
		return;
	src = json_array();
	for (char **s = a->untrusted_sources; s && *s; s++)
		json_array_append_new(src, json_string(*s));
	json_object_set_new(ev, "sources", src);
}
