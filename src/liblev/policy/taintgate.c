/*
 * taintgate.c - the taint gate, its run-scoped state and its audit records.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/conf/datadir.h"
#include "liblev/policy/taintgate.h"
#include "liblev/policy/tighter.h"
#include "liblev/policy/target.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static const char *const result_names[] = { "allowed", "needs_user", "blocked" };
static const char *const source_names[] = {
	"taint_disabled", "not_outbound", "within_clearance", "allowlist", "rule", "yolo",
	"none", "user_once", "user_run", "user_deny", "no_answer",
};

const char *lev_gate_result_name(enum lev_gate_result r)
{
	return r < _LEV_GATE_RESULT_MAX ? result_names[r] : "blocked";
}

const char *lev_gate_source_name(enum lev_gate_source s)
{
	return s < _LEV_GATE_SRC_MAX ? source_names[s] : "none";
}

struct lev_gate {
	char *policy_path;
	char *leviath_path;		/* Leviath's policy.toml, merged in; NULL: none */
	char *rules_dir;
	bool enabled, yolo, read_grant, fixed;
	int64_t recheck_ns;
	struct lev_rules_limits rule_limits;
	bool has_rule_limits;

	struct lev_policy *policy;	/* last good */
	struct lev_file_stamp policy_stamp, leviath_stamp;
	char *policy_error;		/* the policy file stopped parsing: no allowlist */
	struct lev_rules *rules;
	char *rules_error;		/* the rules directory became unusable: no rules */
	uint64_t last_check;		/* lev_monotonic_coarse_ns() */

	char **raised;			/* tools allowed for the run (clearance Private) */
	char **integ_raised;		/* consequential tools allowed for the run */
};

void lev_gate_decision_release(struct lev_gate_decision *d)
{
	free(d->tool);
	lev_strv_free(d->targets);
	free(d->target_error);
	free(d->regions);
	free(d->rule_name);
	lev_strv_free(d->diags);
	memset(d, 0, sizeof(*d));
}

static int load_rules(struct lev_gate *g, struct lev_rules **out, struct lev_err *err)
{
	if (!g->rules_dir) {
		*out = lev_rules_new(g->has_rule_limits ? &g->rule_limits : NULL);
		return 0;
	}
	return lev_rules_load_dir(g->rules_dir, g->has_rule_limits ? &g->rule_limits : NULL, out,
				  err);
}

int lev_gate_new(const struct lev_gate_options *opts, struct lev_gate **out, struct lev_err *err)
{
	struct lev_gate *g = xcalloc(1, sizeof(*g));
	int r;

	g->enabled = opts->enabled;
	g->yolo = opts->yolo;
	g->read_grant = opts->read_grant_active;
	g->fixed = opts->fixed;
	g->recheck_ns = opts->recheck_ns ? opts->recheck_ns : (int64_t)LEV_GATE_RECHECK_DEFAULT_NS;
	if (opts->rule_limits) {
		g->rule_limits = *opts->rule_limits;
		g->has_rule_limits = true;
	}
	g->policy_path = opts->policy_path ? xstrdup(opts->policy_path) : NULL;
	g->rules_dir = opts->rules_dir ? xstrdup(opts->rules_dir) : NULL;
	if (g->policy_path && opts->leviath_policy) {
		if (opts->leviath_policy_path) {
			g->leviath_path = xstrdup(opts->leviath_policy_path);
		} else if (lev_datadir_leviath_policy_path(&g->leviath_path, err) < 0) {
			r = err->code;
			goto fail;
		}
	}
	if (g->policy_path) {
		r = lev_policy_load_both(g->policy_path, g->leviath_path, &g->policy,
					 &g->policy_stamp, &g->leviath_stamp, err);
		if (r < 0)
			goto fail;
	} else {
		g->policy = lev_policy_new_empty("policy.toml");
	}
	r = load_rules(g, &g->rules, err);
	if (r < 0)
		goto fail;
	g->last_check = lev_monotonic_coarse_ns();
	*out = g;
	return 0;
fail:
	lev_gate_free(g);
	return r;
}

struct lev_gate *lev_gate_free(struct lev_gate *g)
{
	if (!g)
		return NULL;
	free(g->policy_path);
	free(g->leviath_path);
	free(g->rules_dir);
	lev_policy_free(g->policy);
	free(g->policy_error);
	lev_rules_free(g->rules);
	free(g->rules_error);
	lev_strv_free(g->raised);
	lev_strv_free(g->integ_raised);
	free(g);
	return NULL;
}

void lev_gate_tighten(struct lev_gate *g, const struct lev_policy *next)
{
	lev_policy_tighten(g->policy, next);
}

const struct lev_policy *lev_gate_policy(const struct lev_gate *g)
{
	return g->policy;
}

struct lev_rules *lev_gate_rules(struct lev_gate *g)
{
	return g->rules;
}

char *const *lev_gate_rules_load_errors(const struct lev_gate *g)
{
	return lev_rules_load_errors(g->rules);
}

/* Re-read policy.toml and the rules when they changed (at most every recheck_ns). */
static void maybe_reload(struct lev_gate *g)
{
	uint64_t now;

	if (g->fixed)
		return;
	if (g->recheck_ns > 0) {
		now = lev_monotonic_coarse_ns();
		if (now - g->last_check < (uint64_t)g->recheck_ns)
			return;
		g->last_check = now;
	}
	if (g->policy_path) {
		struct lev_file_stamp st;

		struct lev_file_stamp lst;

		if (lev_file_stamp_get(g->policy_path, &st) < 0 ||
		    !lev_file_stamp_equal(&st, &g->policy_stamp) ||
		    (g->leviath_path && (lev_file_stamp_get(g->leviath_path, &lst) < 0 ||
					 !lev_file_stamp_equal(&lst, &g->leviath_stamp)))) {
			struct lev_err e = LEV_ERR_INIT;
			struct lev_policy *p = NULL;

			if (lev_policy_load_both(g->policy_path, g->leviath_path, &p,
						 &g->policy_stamp, &g->leviath_stamp, &e) == 0) {
				lev_policy_free(g->policy);
				g->policy = p;
				free(g->policy_error);
				g->policy_error = NULL;
			} else {
				/* remember this version so it is not parsed on every call */
				(void)lev_file_stamp_get(g->policy_path, &g->policy_stamp);
				if (g->leviath_path)
					(void)lev_file_stamp_get(g->leviath_path, &g->leviath_stamp);
				free(g->policy_error);
				g->policy_error = xstrdup(e.msg);
			}
		}
	}
	if (g->rules_dir && lev_rules_changed(g->rules)) {
		struct lev_err e = LEV_ERR_INIT;
		struct lev_rules *nr = NULL;

		if (load_rules(g, &nr, &e) == 0) {
			free(g->rules_error);
			g->rules_error = NULL;
		} else {
			/* fail closed: an unsafe directory contributes no rules */
			free(g->rules_error);
			g->rules_error = xstrdup(e.msg);
			nr = lev_rules_new(g->has_rule_limits ? &g->rule_limits : NULL);
		}
		lev_rules_free(g->rules);
		g->rules = nr;
	}
}

void lev_gate_enable(struct lev_gate *g)
{
	g->enabled = true;
}

bool lev_gate_enabled(const struct lev_gate *g)
{
	return g->enabled;
}

bool lev_gate_yolo(const struct lev_gate *g)
{
	return g->yolo;
}

bool lev_gate_integrity_raised(const struct lev_gate *g, const char *tool)
{
	for (char *const *t = g->integ_raised; t && *t; t++)
		if (lev_policy_tool_same(*t, tool))
			return true;
	return false;
}

void lev_gate_integrity_raise(struct lev_gate *g, const char *tool)
{
	if (!lev_gate_integrity_raised(g, tool) && lev_strv_len(g->integ_raised) < 4096)
		g->integ_raised = lev_strv_push(g->integ_raised, tool);
}

void lev_gate_refresh(struct lev_gate *g)
{
	maybe_reload(g);
}

static bool raised_for_run(const struct lev_gate *g, const char *tool)
{
	char *const *t;

	for (t = g->raised; t && *t; t++)
		if (lev_policy_tool_same(*t, tool))
			return true;
	return false;
}

void lev_gate_classify(struct lev_gate *g, const char *tool, struct lev_tool_class *out)
{
	lev_policy_classify(g->policy, tool, out);
	lev_taint_read_grant_bump(tool, g->read_grant, out);
	if (raised_for_run(g, tool))
		out->clearance = LEV_PRIVATE;
}

static void add_diag(struct lev_gate_decision *d, char *msg)
{
	if (lev_strv_len(d->diags) < 64)
		d->diags = lev_strv_push_take(d->diags, msg);
	else
		free(msg);
}

/* Canonicalise caller-given targets; a bad one makes the call target-less. */
static void given_targets(struct lev_gate_decision *d, char *const *raw)
{
	struct lev_err e = LEV_ERR_INIT;
	char **v = NULL;

	for (; raw && *raw; raw++) {
		char *c = NULL;

		if (lev_strv_len(v) >= LEV_TAINT_TARGETS_MAX) {
			lev_strv_free(v);
			d->target_error = xasprintf("more than %d targets", LEV_TAINT_TARGETS_MAX);
			return;
		}
		if (lev_target_value_canon(*raw, &c, &e) < 0) {
			lev_strv_free(v);
			d->target_error = xstrdup(e.msg);
			return;
		}
		if (lev_strv_contains(v, c))
			free(c);
		else
			v = lev_strv_push_take(v, c);
	}
	d->targets = v;
}

int lev_gate_check(struct lev_gate *g, const struct lev_gate_call *call,
		   struct lev_gate_decision *out, struct lev_err *err)
{
	struct lev_gate_decision d;
	struct lev_tool_class cls;
	json_t *owned = NULL;
	const json_t *args = call->args;
	bool args_ok = true;
	int idx;

	if (!call->tool || !*call->tool)
		return lev_err_set(err, -EINVAL, "no tool name");
	if (strlen(call->tool) > LEV_POLICY_TOOL_MAX)
		return lev_err_set(err, -EINVAL, "tool name is longer than %d bytes",
				   LEV_POLICY_TOOL_MAX);
	memset(&d, 0, sizeof(d));
	clock_gettime(CLOCK_REALTIME, &d.time);
	d.tool = xstrdup(call->tool);
	d.taint = call->ctx ? lev_taint_current(call->ctx) : call->taint;
	if ((unsigned)d.taint >= _LEV_LEVEL_MAX)
		d.taint = LEV_PRIVATE;

	maybe_reload(g);
	lev_gate_classify(g, call->tool, &cls);
	d.sensitivity = cls.sensitivity;
	d.direction = cls.direction;
	d.clearance = cls.clearance;
	d.clearance_raised = raised_for_run(g, call->tool);
	d.outbound = cls.direction == LEV_DIR_OUTBOUND;
	d.result = LEV_GATE_ALLOWED;

	if (!g->enabled) {
		d.source = LEV_GATE_SRC_TAINT_DISABLED;
		goto done;
	}
	if (!d.outbound) {
		d.source = LEV_GATE_SRC_NOT_OUTBOUND;
		goto done;
	}

	/* the real target, for the record and for the rules */
	if (args && !json_is_object(args)) {
		args_ok = false;
		if (!call->targets_given)
			d.target_error = xstrdup("tool arguments are not a JSON object");
		add_diag(&d, xstrdup("arguments: not a JSON object"));
	} else if (!args && call->args_json) {
		struct lev_err e = LEV_ERR_INIT;

		if (lev_taint_args_parse(call->args_json, call->args_len, &owned, &e) < 0) {
			args_ok = false;
			if (!call->targets_given)
				d.target_error = xstrdup(e.msg);
			add_diag(&d, xasprintf("arguments: %s", e.msg));
		}
		args = owned;
	}
	if (call->targets_given) {
		given_targets(&d, call->targets);
	} else if (args_ok) {
		struct lev_err e = LEV_ERR_INIT;

		if (lev_taint_target_of_json(call->tool, &cls, args, &d.targets, &e) < 0)
			d.target_error = xstrdup(e.msg);
	}

	if (d.taint <= d.clearance) {
		d.source = LEV_GATE_SRC_WITHIN_CLEARANCE;
		goto done;
	}
	if (call->ctx) {
		struct lev_buf b = LEV_BUF_INIT_MAX(4096);

		if (lev_taint_contributors(call->ctx, d.clearance, &b) > 0)
			d.regions = lev_buf_detach(&b, NULL);
		lev_buf_release(&b);
	}

	if (g->policy_error) {
		add_diag(&d, xasprintf("policy: %s (allowlist ignored until fixed)", g->policy_error));
	} else {
		idx = lev_policy_match(g->policy, call->tool, d.targets, d.taint);
		if (idx >= 0) {
			d.source = LEV_GATE_SRC_ALLOWLIST;
			d.rule_index = (size_t)idx + 1;
			d.rule_line = g->policy->rules[idx].line;
			goto done;
		}
	}

	if (g->rules_error)
		add_diag(&d, xasprintf("rules: %s (no Lua rules until fixed)", g->rules_error));
	if (!args_ok) {
		add_diag(&d, xstrdup("rules: not consulted (arguments unreadable)"));
	} else if (lev_rules_count(g->rules) > 0) {
		struct lev_rule_input in = { call->tool, d.targets, d.taint, args };

		idx = lev_rules_first_allowing(g->rules, &in, &d.diags);
		if (idx >= 0) {
			d.source = LEV_GATE_SRC_RULE;
			d.rule_name = xstrdup(lev_rules_name(g->rules, (size_t)idx));
			goto done;
		}
	}

	if (g->yolo) {
		d.source = LEV_GATE_SRC_YOLO;
		goto done;
	}
	d.result = LEV_GATE_NEEDS_USER;
	d.source = LEV_GATE_SRC_NONE;
done:
	json_decref(owned);
	*out = d;
	return 0;
}

int lev_gate_answer(struct lev_gate *g, struct lev_gate_decision *d, enum lev_gate_answer a)
{
	if (d->result != LEV_GATE_NEEDS_USER)
		return -EINVAL;
	clock_gettime(CLOCK_REALTIME, &d->time);
	switch (a) {
	case LEV_GATE_ANSWER_ONCE:
		d->result = LEV_GATE_ALLOWED;
		d->source = LEV_GATE_SRC_USER_ONCE;
		break;
	case LEV_GATE_ANSWER_RUN:
		d->result = LEV_GATE_ALLOWED;
		d->source = LEV_GATE_SRC_USER_RUN;
		if (!raised_for_run(g, d->tool) && lev_strv_len(g->raised) < 4096)
			g->raised = lev_strv_push(g->raised, d->tool);
		break;
	case LEV_GATE_ANSWER_DENY:
		d->result = LEV_GATE_BLOCKED;
		d->source = LEV_GATE_SRC_USER_DENY;
		break;
	case LEV_GATE_ANSWER_NONE:
	default:
		d->result = LEV_GATE_BLOCKED;
		d->source = LEV_GATE_SRC_NO_ANSWER;
		break;
	}
	return 0;
}

int lev_gate_describe(const struct lev_gate_decision *d, struct lev_buf *out)
{
	_cleanup_free_ char *tool = lev_printable(d->tool, strlen(d->tool), 128);
	int r;

	if (!d->outbound)
		return lev_buf_addf(out, "'%s' is not an outbound tool", tool);
	r = lev_buf_addf(out, "'%s' would send %s data over a channel cleared for %s", tool,
			 lev_level_name(d->taint), lev_level_name(d->clearance));
	if (r == 0 && d->regions)
		r = lev_buf_addf(out, " (tainted by: %s)", d->regions);
	return r;
}
