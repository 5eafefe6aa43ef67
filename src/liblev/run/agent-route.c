/*
 * agent-route.c - a stage's tool_routing at run time (docs/context.md):
 * a tool's result lands in its region, cut to its token ceiling, and a short
 * pointer answers the call in the conversation.
 *
 * The routed copy is runtime text carrying the result's own label, so the
 * region (and with it the run) is exactly as tainted as if the result had
 * stayed in the conversation; the pointer holds only lev's words (the tool,
 * the region, sizes).  A failed or refused call is not routed: the model
 * reads its error where it made the call.
 */
#include <errno.h>
#include <string.h>

#include "liblev/run/agent-internal.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/context.h"

/* The tag of the current stage's results that do not persist (0: they do). */
static uint64_t stage_tag(const struct lev_agent *a)
{
	const struct lev_tool_routing *rt = &a->stages[a->cur].st->routing;

	return rt->present && !rt->persist ? (uint64_t)a->cur + 1 : 0;
}

static char *pointer_text(const char *tool, const char *region, size_t bytes, bool cut,
			  uint64_t max_tokens)
{
	if (cut)
		return xasprintf("[routed] the result of '%s' (%zu bytes) was cut to its ceiling "
				 "of %llu tokens and put in context region '%s': it is in your "
				 "system prompt under '## %s'",
				 tool, bytes, (unsigned long long)max_tokens, region, region);
	return xasprintf("[routed] the result of '%s' (%zu bytes) is in context region '%s': it "
			 "is in your system prompt under '## %s'",
			 tool, bytes, region, region);
}

int agent_route_result(struct lev_agent *a, const struct lev_tool_call *call,
		       const struct lev_tool_output *out, enum lev_level label, bool *truncated,
		       struct lev_err *err)
{
	const struct lev_stage *st = a->stages[a->cur].st;
	const char *region = NULL;
	_cleanup_free_ char *ptr = NULL;
	uint64_t max_tokens = 0;
	int idx, r;

	if (!st->routing.present)
		return 1;
	lev_blueprint_route(st, call->name, &region, &max_tokens);
	idx = region ? lev_context_region_find(a->ctx, region) : -ENOENT;
	if (out->is_error || idx < 0 || (size_t)idx == lev_context_conversation(a->ctx))
		/* stays in the conversation, under its ceiling */
		return lev_context_add_tool_result_max(a->ctx, lev_tool_call_wire_id(call),
						       out->text ? out->text : "", out->len,
						       out->is_error, label, 0, max_tokens, truncated,
						       err);
	r = lev_context_add_routed(a->ctx, (size_t)idx, out->text ? out->text : "", out->len,
				   label, max_tokens, stage_tag(a), truncated, err);
	if (r < 0) {
		/* the region refused it: the model is told why, and nothing is kept */
		ptr = xasprintf("[error] the result of '%s' was not kept: %s", call->name,
				err->msg);
		lev_err_clear(err);
		*truncated = false;
		r = lev_context_add_tool_result(a->ctx, lev_tool_call_wire_id(call), ptr,
						strlen(ptr), true, LEV_PUBLIC, 0, NULL, err);
	} else {
		ptr = pointer_text(call->name, region, out->len, *truncated, max_tokens);
		r = lev_context_add_tool_result(a->ctx, lev_tool_call_wire_id(call), ptr,
						strlen(ptr), false, LEV_PUBLIC, 0, NULL, err);
	}
	free(a->route_note);
	a->route_note = TAKE_PTR(ptr);
	return r;
}

void agent_route_stage_end(struct lev_agent *a)
{
	uint64_t tag = stage_tag(a);

	if (tag)
		lev_context_drop_tagged(a->ctx, tag);
	a->required_nudges = 0;
}

/* MSG with each "{region}" replaced by NAME. */
static char *fill_message(const char *msg, const char *name)
{
	struct lev_buf b = LEV_BUF_INIT;
	const char *p;

	while ((p = strstr(msg, "{region}"))) {
		(void)lev_buf_add(&b, msg, (size_t)(p - msg));
		(void)lev_buf_adds(&b, name);
		msg = p + strlen("{region}");
	}
	(void)lev_buf_adds(&b, msg);
	return lev_buf_detach(&b, NULL);
}

/* Can the stage fill a region itself (context_write or context_append offered)? */
static bool can_write_context(const struct lev_agent *a)
{
	char **offered = a->stages[a->cur].offered;

	return lev_strv_contains(offered, lev_tooltable_name(LEV_OP_CONTEXT_WRITE)) ||
	       lev_strv_contains(offered, lev_tooltable_name(LEV_OP_CONTEXT_APPEND));
}

/* Region RG is empty, required of the agent, and one this stage sees. */
static bool unmet(struct lev_agent *a, const struct lev_region *rg)
{
	const struct lev_stage *st = a->stages[a->cur].st;
	int idx = lev_context_region_find(a->ctx, rg->name);

	return rg->required_fill && idx >= 0 && !lev_context_region_items(a->ctx, (size_t)idx) &&
	       (!st->has_context || lev_strv_contains(st->context_regions, rg->name));
}

bool agent_required_nudge(struct lev_agent *a)
{
	const struct lev_stage *st = a->stages[a->cur].st;
	struct lev_err err = LEV_ERR_INIT;
	uint64_t cap = st->has_max_revisits ? st->max_revisits : REQUIRED_NUDGES_MAX;
	struct lev_buf names = LEV_BUF_INIT;

	/* as Leviath: a stage that cannot write context is never nagged */
	if (!can_write_context(a))
		return false;
	for (size_t i = 0; i < a->bp->n_regions; i++) {
		const struct lev_region *rg = &a->bp->regions[i];
		_cleanup_free_ char *m = NULL;

		if (!unmet(a, rg))
			continue;
		if (a->required_nudges >= cap) {
			/* the round is spent: the stage ends with the region empty */
			(void)lev_buf_addf(&names, "%s'%s'", names.len ? ", " : "", rg->name);
			continue;
		}
		m = rg->required_message
			    ? fill_message(rg->required_message, rg->name)
			    : xasprintf("Context region '%s' is required and still empty: fill it "
					"(%s with region=\"%s\") before you finish this stage.",
					rg->name, lev_tooltable_name(LEV_OP_CONTEXT_WRITE),
					rg->name);
		if (lev_context_add_text(a->ctx, lev_context_conversation(a->ctx), m, strlen(m),
					 LEV_PUBLIC, &err) < 0)
			break;
		(void)lev_buf_addf(&names, "%s'%s'", names.len ? ", " : "", rg->name);
	}
	if (!names.len)
		return false;
	if (a->required_nudges >= cap) {
		agent_warn(a, "stage '%s' ends with required region %s still empty after %u "
			   "reminder(s)", st->name, names.buf, a->required_nudges);
		lev_buf_release(&names);
		return false;
	}
	a->required_nudges++;
	agent_warn(a, "stage '%s' tried to end with required region %s empty; the model was "
		   "asked to fill it (%u of %llu)",
		   st->name, names.buf, a->required_nudges, (unsigned long long)cap);
	lev_buf_release(&names);
	return true;
}
