/*
 * compact.c - summarising compacting regions before a request
 * (docs/context.md "Compacting regions").
 *
 * A region with strategy = "compact" (Leviath's `compacting` and
 * `compact_history` kinds) that passes compact_at, threshold_tokens, its
 * budget or max_items has its oldest entries summarised by one model call
 * and replaced by the summary.  The call goes to the stage's provider with
 * [compaction]'s model, system_prompt, max_summary_tokens and temperature;
 * it carries no tools and only the entries being folded (the conversation's
 * whole units, never its newest).  The summary's labels (sensitivity and
 * integrity) are lev_context_summary_label() over what it replaced: never
 * lower.  When no
 * summary can be had (the provider fails or answers nothing: then for the
 * rest of the run; a replayed run), the region is evicted as a per_item
 * region would be.
 */
#include <errno.h>
#include <string.h>

#include "liblev/run/agent-internal.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/context.h"

#define COMPACT_ROUNDS_MAX 4	/* summaries of one region before one request */

static const char default_prompt[] =
	"You compact an agent's working context. Summarise the entries below for the agent "
	"that will keep working from your summary alone: keep facts, names, paths, numbers, "
	"decisions and open questions; drop repetition. Answer with the summary only.";

struct lev_provider *agent_compaction_provider(struct lev_agent *a, struct lev_infer_request *req)
{
	const struct lev_compaction *cp = &a->bp->compaction;

	/*
	 * [compaction] model names a model of [compaction] provider (its
	 * provider was built with it); without a provider of its own it is the
	 * model asked of the stage's provider
	 */
	if (cp->model && !a->compactor && !cp->provider) {
		free(req->model);
		req->model = xstrdup(cp->model);
	}
	return a->compactor ? a->compactor : a->stages[a->cur].prov;
}

static int summarise(struct lev_agent *a, const char *text, char **out, struct lev_err *err)
{
	const struct lev_compaction *cp = &a->bp->compaction;
	struct lev_provider *prov;
	struct lev_infer_request req;
	struct lev_infer_response resp;
	struct lev_message *m;
	int r;

	lev_request_init(&req);
	lev_request_set_system(&req, cp->system_prompt ? cp->system_prompt : default_prompt);
	m = lev_request_add_message(&req, LEV_ROLE_USER);
	lev_message_add_text(m, text);
	prov = agent_compaction_provider(a, &req);
	req.max_tokens = (unsigned)(cp->max_summary_tokens ? cp->max_summary_tokens : 2000);
	req.has_temperature = true;
	req.temperature = cp->max_summary_tokens ? cp->temperature : 0.2;
	memset(&resp, 0, sizeof(resp));
	r = agent_infer(a, prov, &req, &resp, err);
	lev_request_release(&req);
	if (r == 0 && (resp.finish == LEV_FINISH_SCRIPT_END || !resp.text || !*resp.text ||
		       resp.n_calls))
		r = lev_err_set(err, -ENODATA, "the model gave no summary");
	if (r == 0)
		*out = xstrdup(resp.text);
	lev_response_release(&resp);
	return r;
}

static void compacted_event(struct lev_agent *a, size_t region, size_t entries,
			    uint64_t before, struct lev_context_label label)
{
	json_t *ev = agent_event_new("context_compacted");

	json_object_set_new(ev, "region", agent_jtext(lev_context_region_name(a->ctx, region)));
	json_object_set_new(ev, "entries", json_integer((json_int_t)entries));
	json_object_set_new(ev, "tokens_before", json_integer((json_int_t)before));
	json_object_set_new(ev, "tokens_after",
			    json_integer((json_int_t)lev_context_region_tokens(a->ctx, region)));
	json_object_set_new(ev, "label", json_string(lev_level_name(label.level)));
	json_object_set_new(ev, "integrity", json_string(label.integrity == LEV_TRUSTED
								 ? "trusted" : "untrusted"));
	agent_emit(a, ev);
}

/* One summary of REGION's oldest entries; false when none could be had. */
static bool compact_once(struct lev_agent *a, size_t region)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_context_label label = { LEV_PRIVATE, LEV_UNTRUSTED };
	uint64_t before = lev_context_region_tokens(a->ctx, region);
	_cleanup_free_ char *summary = NULL;
	size_t count = 0;
	_cleanup_free_ char *text = lev_context_compact_source(a->ctx, region, &count, &label);

	if (summarise(a, text, &summary, &err) < 0 ||
	    lev_context_compact_apply(a->ctx, region, count, summary, strlen(summary), label,
				      &err) < 0) {
		agent_warn(a, "cannot compact context region '%s' (%s): its oldest entries are evicted "
			   "instead, and the run evicts rather than summarises from now on",
			   lev_context_region_name(a->ctx, region), err.msg);
		return false;
	}
	compacted_event(a, region, count, before, label);
	return true;
}

void agent_compact_regions(struct lev_agent *a)
{
	bool on = !a->o.replay && !a->compact_failed;

	lev_context_set_compactor(a->ctx, on);
	for (size_t i = 0; i < lev_context_region_count(a->ctx); i++) {
		unsigned rounds = 0;

		while (lev_context_compact_due(a->ctx, i)) {
			if (on && rounds++ < COMPACT_ROUNDS_MAX && compact_once(a, i))
				continue;
			/* one failure is enough: the run evicts from now on */
			if (on && rounds <= COMPACT_ROUNDS_MAX)
				a->compact_failed = true;
			lev_context_set_compactor(a->ctx, false);
			lev_context_enforce(a->ctx, i);
			break;
		}
	}
}
