/*
 * cmd_policy.c - lev policy list | add | test
 *
 * `list` shows the taint policy: the allowlist rules of
 * <data root>/policy.toml (numbered as the gate reports them), the Lua
 * rules in <data root>/rules/ in the order they are tried, and the tool
 * overrides.  `add` appends one allowlist rule to policy.toml without
 * touching the rest of the file.  `test` runs the real gate on one
 * hypothetical call and says what it would decide.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lev/cmd.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/tooltable.h"
#include "liblev/policy/integrity.h"
#include "liblev/policy/policy.h"
#include "liblev/policy/rules.h"
#include "liblev/base/strv.h"
#include "liblev/policy/taint.h"
#include "liblev/policy/taintgate.h"
#include "liblev/policy/target.h"
#include "liblev/run/gatechain.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"

const char lev_usage_policy[] =
	"usage: lev policy list [--json]\n"
	"   or: lev policy add TOOL [--target PATTERN] [--max-sensitivity LEVEL]\n"
	"   or: lev policy test TOOL [--target T]... [--taint LEVEL] [--args JSON] [--json]\n"
	"                      [--integrity trusted|untrusted] [--untrusted-arg NAME]...\n"
	"\n"
	"The taint policy lives in <data root>/policy.toml ([[allowlist]] rules and\n"
	"[mcp_overrides]) and <data root>/rules/*.lua (Lua rules); see docs/taint.md.\n"
	"Leviath's ${XDG_CONFIG_HOME:-~/.config}/leviath/policy.toml is merged in, the\n"
	"stricter winning; add writes lev's file only (docs/policy.md).\n"
	"\n"
	"list  shows the allowlist rules numbered 1.., the Lua rules in the order\n"
	"      they are tried, and the tool overrides.\n"
	"add   appends an [[allowlist]] rule letting TOOL send data up to LEVEL\n"
	"      (default internal) to targets matching PATTERN (default: any target).\n"
	"      Patterns: '*', '*.example.com' (sub-domains, not the apex),\n"
	"      '*@example.com', 'prefix*', or an exact host, address or name.\n"
	"      The rest of policy.toml is kept byte for byte.\n"
	"test  runs the gate on one call to TOOL with the context at LEVEL (default\n"
	"      private).  The target is --target, or read from --args as at run time.\n"
	"      With --integrity, the integrity gate too ([integrity] in policy.toml,\n"
	"      docs/integrity.md): the context holds untrusted content or not, and\n"
	"      --untrusted-arg NAME came from untrusted text.  It says which gate and\n"
	"      rule decided.\n"
	"\n"
	"LEVEL is public, internal or private.\n"
	"Exit status of test: 0 allowed, 1 blocked (a run would ask the user), 2 usage.\n";

#define usage(...) lev_usage_error("policy", __VA_ARGS__)

/* A JSON string for S; odd bytes are shown escaped rather than dropped. */
static json_t *jstr(const char *s)
{
	json_t *j;
	char *p;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j)
		return j;
	p = lev_printable(s, strlen(s), 4096);
	j = json_string(p);
	free(p);
	return j ? j : json_null();
}

static json_t *jstrv(char *const *v)
{
	json_t *a = json_array();

	for (; v && *v; v++)
		json_array_append_new(a, jstr(*v));
	return a;
}

static int print_json(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);

	json_decref(j);
	if (!s)
		return lev_fail("cannot format JSON");
	puts(s);
	free(s);
	return LEV_EXIT_OK;
}

/* Print the printable form of S (policy and rule text may hold anything). */
static void put_safe(const char *s)
{
	char *p = lev_printable(s, strlen(s), 512);

	fputs(p, stdout);
	free(p);
}

static void print_patterns(const struct lev_allow_rule *r)
{
	char *const *lists[2] = { r->to, r->channel };
	bool any = false;
	size_t i;

	fputs(" -> ", stdout);
	for (i = 0; i < 2; i++) {
		char *const *p;

		for (p = lists[i]; p && *p; p++) {
			if (any)
				fputs(", ", stdout);
			put_safe(*p);
			any = true;
		}
	}
	if (!any)
		fputs("any target", stdout);
}

static const char *opt_level(bool has, enum lev_level l)
{
	return has ? lev_level_name(l) : NULL;
}

static int list_json(const char *ppath, const char *rdir, const struct lev_policy *pol,
		     const struct lev_rules *rules)
{
	json_t *root = json_object(), *a = json_array(), *lr = json_array(), *ov = json_array();
	size_t i;

	json_object_set_new(root, "policy", jstr(ppath));
	json_object_set_new(root, "leviath_policy", jstr(pol->also_file));
	json_object_set_new(root, "rules_dir", jstr(rdir));
	for (i = 0; i < pol->n_rules; i++) {
		const struct lev_allow_rule *ar = &pol->rules[i];

		json_array_append_new(
			a, json_pack("{s:I,s:o,s:I,s:o,s:o,s:o,s:s}", "index", (json_int_t)i + 1,
				     "file", jstr(ar->source ? pol->also_file : ppath),
				     "line", (json_int_t)ar->line, "tool", jstr(ar->tool), "to",
				     jstrv(ar->to), "channel", jstrv(ar->channel),
				     "max_sensitivity", lev_level_name(ar->max_sensitivity)));
	}
	for (i = 0; i < lev_rules_count(rules); i++)
		json_array_append_new(lr, json_pack("{s:o,s:o}", "name",
						    jstr(lev_rules_name(rules, i)), "file",
						    jstr(lev_rules_file(rules, i))));
	for (i = 0; i < pol->n_overrides + (pol->leviath ? pol->leviath->n_overrides : 0); i++) {
		/* lev's, then Leviath's (kept apart: each file classifies on its own) */
		const struct lev_tool_override *o = i < pol->n_overrides ? &pol->overrides[i] :
						    &pol->leviath->overrides[i - pol->n_overrides];

		json_array_append_new(
			ov, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "tool", jstr(o->name),
				      "file", jstr(o->source ? pol->also_file : ppath),
				      "sensitivity",
				      jstr(opt_level(o->has_sensitivity, o->sensitivity)),
				      "direction",
				      jstr(o->has_direction ? lev_direction_name(o->direction) : NULL),
				      "clearance", jstr(opt_level(o->has_clearance, o->clearance)),
				      "target", jstr(o->target)));
	}
	json_object_set_new(root, "allowlist", a);
	json_object_set_new(root, "lua_rules", lr);
	json_object_set_new(root, "overrides", ov);
	json_object_set_new(root, "warnings", jstrv(pol->warnings));
	json_object_set_new(root, "skipped", jstrv(lev_rules_load_errors(rules)));
	return print_json(root);
}

static void print_override(const struct lev_tool_override *o, const char *file)
{
	const char *sep = "";

	fputs("  ", stdout);
	put_safe(o->name);
	fputs(" [", stdout);
	if (o->has_sensitivity) {
		printf("%ssensitivity=%s", sep, lev_level_name(o->sensitivity));
		sep = ", ";
	}
	if (o->has_direction) {
		printf("%sdirection=%s", sep, lev_direction_name(o->direction));
		sep = ", ";
	}
	if (o->has_clearance) {
		printf("%sclearance=%s", sep, lev_level_name(o->clearance));
		sep = ", ";
	}
	if (o->target)
		printf("%starget=%s", sep, o->target);
	printf("]  (%s:%u)\n", file, o->line);
}

static void list_text(const char *ppath, const char *rdir, const struct lev_policy *pol,
		      const struct lev_rules *rules)
{
	size_t i;

	printf("policy: %s\n", ppath);
	if (pol->also_file)
		printf("Leviath's policy: %s (merged: the stricter wins)\n", pol->also_file);
	if (pol->n_rules == 0) {
		puts("no allowlist rules");
	} else {
		printf("allowlist rules (%zu), first match wins:\n", pol->n_rules);
		for (i = 0; i < pol->n_rules; i++) {
			const struct lev_allow_rule *ar = &pol->rules[i];

			printf("  %zu. ", i + 1);
			put_safe(ar->tool);
			printf(" [max: %s]", lev_level_name(ar->max_sensitivity));
			print_patterns(ar);
			printf("  (%s:%u)\n", ar->source ? pol->also_file : ppath, ar->line);
		}
	}
	if (lev_rules_count(rules) == 0) {
		printf("no Lua rules in %s\n", rdir);
	} else {
		printf("Lua rules (%zu), tried in this order:\n", lev_rules_count(rules));
		for (i = 0; i < lev_rules_count(rules); i++) {
			fputs("  - ", stdout);
			put_safe(lev_rules_name(rules, i));
			fputs(" (", stdout);
			put_safe(lev_rules_file(rules, i));
			puts(")");
		}
	}
	if (pol->n_overrides) {
		printf("tool overrides (%zu):\n", pol->n_overrides);
		for (i = 0; i < pol->n_overrides; i++)
			print_override(&pol->overrides[i], ppath);
	}
	if (pol->leviath && pol->leviath->n_overrides) {
		printf("Leviath's tool overrides (%zu; a call gets the stricter of each field):\n",
		       pol->leviath->n_overrides);
		for (i = 0; i < pol->leviath->n_overrides; i++)
			print_override(&pol->leviath->overrides[i], pol->also_file);
	}
}

static int policy_list(int argc, char **argv, struct lev_ctx *ctx)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const char *ppath, *rdir;
	_cleanup_free_ char *lpath = NULL, *lrules = NULL;
	_cleanup_strv_ char **rhai = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_policy *pol = NULL;
	struct lev_rules *rules = NULL;
	char *const *w;
	bool json = false;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else
			return usage("list: unknown option '%s'", argv[optind - 1]);
	}
	if (optind < argc)
		return usage("list: unexpected argument '%s'", argv[optind]);
	if (lev_setup(ctx, CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	ppath = ctx->paths.policy;
	rdir = ctx->paths.rules;
	(void)lev_datadir_leviath_policy_path(&lpath, NULL);
	(void)lev_datadir_leviath_rules_dir(&lrules, NULL);
	if (lev_policy_load_both(ppath, lpath, &pol, NULL, NULL, &err) < 0)
		return lev_fail("%s", err.msg);
	rhai = lev_policy_rhai_findings(lrules, rdir);
	for (w = rhai; w && *w; w++)
		lev_warn("%s", *w);
	if (lev_rules_load_dir(rdir, NULL, &rules, &err) < 0) {
		lev_policy_free(pol);
		return lev_fail("%s", err.msg);
	}
	for (w = pol->warnings; w && *w; w++)
		lev_warn("%s", *w);
	for (w = lev_rules_load_errors(rules); w && *w; w++)
		lev_warn("skipped %s", *w);
	if (json) {
		r = list_json(ppath, rdir, pol, rules);
	} else {
		list_text(ppath, rdir, pol, rules);
		r = LEV_EXIT_OK;
	}
	lev_policy_free(pol);
	lev_rules_free(rules);
	return r;
}

static int parse_level(const char *what, const char *s, enum lev_level *out)
{
	if (lev_level_parse(s, out) < 0)
		return usage("invalid %s '%s' (one of public, internal, private)", what, s);
	return 0;
}

static int policy_add(int argc, char **argv, struct lev_ctx *ctx)
{
	static const struct option opts[] = {
		{ "target", required_argument, NULL, 't' },
		{ "max-sensitivity", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_free_ char *canon = NULL;
	const char *ppath;
	struct lev_err err = LEV_ERR_INIT;
	enum lev_level max = LEV_INTERNAL;
	const char *target = NULL, *tool;
	size_t idx = 0;
	int c, r;

	optind = 0;
	opterr = 0;
	for (;;) {
		c = getopt_long(argc, argv, ":", opts, NULL);
		if (c == -1)
			break;
		switch (c) {
		case 't':
			if (target)
				return usage("add: --target given twice (add one rule per target)");
			target = optarg;
			break;
		case 'm':
			r = parse_level("max sensitivity", optarg, &max);
			if (r)
				return r;
			break;
		case ':':
			return usage("add: option '%s' needs a value", argv[optind - 1]);
		default:
			return usage("add: unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage("add: missing TOOL");
	if (optind + 1 < argc)
		return usage("add: unexpected argument '%s'", argv[optind + 1]);
	tool = argv[optind];
	if (target && lev_target_pattern_canon(target, &canon, &err) < 0)
		return usage("add: invalid --target: %s", err.msg);
	{
		struct lev_buf probe = LEV_BUF_INIT_MAX(4096);

		r = lev_policy_rule_text(tool, NULL, max, &probe, &err);
		lev_buf_release(&probe);
		if (r < 0)
			return usage("add: %s", err.msg);
	}
	if (lev_setup(ctx, CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	ppath = ctx->paths.policy;
	{
		/* show what the existing file says about itself (the append re-checks it) */
		struct lev_policy *old = NULL;
		char *const *w;

		if (lev_policy_load(ppath, &old, NULL, NULL) == 0)
			for (w = old->warnings; w && *w; w++)
				lev_warn("%s", *w);
		lev_policy_free(old);
	}
	if (lev_policy_append_rule(ppath, tool, target, max, &idx, &err) < 0)
		return lev_fail("%s", err.msg);
	printf("added allowlist rule #%zu: ", idx);
	put_safe(tool);
	printf(" [max: %s] -> ", lev_level_name(max));
	if (canon)
		put_safe(canon);
	else
		fputs("any target", stdout);
	printf("\nsaved to %s\n", ppath);
	return LEV_EXIT_OK;
}

static void print_result_text(const struct lev_gate_decision *d)
{
	switch (d->source) {
	case LEV_GATE_SRC_NOT_OUTBOUND:
		puts("result: allowed (the tool is not outbound: the gate does not apply)");
		break;
	case LEV_GATE_SRC_WITHIN_CLEARANCE:
		printf("result: allowed (taint %s <= clearance %s)\n", lev_level_name(d->taint),
		       lev_level_name(d->clearance));
		break;
	case LEV_GATE_SRC_ALLOWLIST:
		printf("result: allowed by allowlist rule #%zu (policy.toml line %u)\n", d->rule_index,
		       d->rule_line);
		break;
	case LEV_GATE_SRC_RULE:
		fputs("result: allowed by Lua rule '", stdout);
		put_safe(d->rule_name);
		puts("'");
		break;
	default:
		printf("result: blocked (taint %s > clearance %s, and no allowlist or Lua rule "
		       "allows it)\n",
		       lev_level_name(d->taint), lev_level_name(d->clearance));
		puts("  a run would ask the user: allow once, allow for this run, or deny");
		break;
	}
}

struct test_opts {
	char **targets;			/* --target, in order; NULL: none given */
	enum lev_level taint;		/* --taint; default private */
	const char *args;		/* --args, checked to be a JSON object */
	bool json;
	bool integrity_given;		/* --integrity: run the integrity gate too */
	enum lev_integrity integrity;
	char **untrusted_args;		/* --untrusted-arg, in order */
};

/* Parse `lev policy test`'s arguments into O and the tool's name; 0 or an exit status. */
static int test_parse(int argc, char **argv, struct test_opts *o, const char **tool)
{
	static const struct option opts[] = {
		{ "target", required_argument, NULL, 't' },
		{ "taint", required_argument, NULL, 'T' },
		{ "args", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "integrity", required_argument, NULL, 'I' },
		{ "untrusted-arg", required_argument, NULL, 'U' },
		{ NULL, 0, NULL, 0 },
	};
	struct lev_err err = LEV_ERR_INIT;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (lev_strv_len(o->targets) >= LEV_TAINT_TARGETS_MAX)
				return usage("test: more than %d targets", LEV_TAINT_TARGETS_MAX);
			o->targets = lev_strv_push(o->targets, optarg);
			break;
		case 'T':
			r = parse_level("taint", optarg, &o->taint);
			if (r)
				return r;
			break;
		case 'a':
			o->args = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'I':
			if (lev_integrity_parse(optarg, &o->integrity) < 0)
				return usage("test: invalid integrity '%s' (trusted or untrusted)",
					     optarg);
			o->integrity_given = true;
			break;
		case 'U':
			if (!*optarg || lev_strv_len(o->untrusted_args) >= 256)
				return usage("test: --untrusted-arg needs a name (at most 256)");
			o->untrusted_args = lev_strv_push(o->untrusted_args, optarg);
			break;
		case ':':
			return usage("test: option '%s' needs a value", argv[optind - 1]);
		default:
			return usage("test: unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage("test: missing TOOL");
	if (optind + 1 < argc)
		return usage("test: unexpected argument '%s'", argv[optind + 1]);
	*tool = argv[optind];
	if (o->args) {
		struct json_t *j = NULL;

		if (lev_taint_args_parse(o->args, strlen(o->args), &j, &err) < 0)
			return usage("test: invalid --args: %s", err.msg);
		json_decref(j);
	}
	return 0;
}

static void print_test_json(const struct lev_gate_decision *d,
			    const struct lev_integrity_decision *id)
{
	json_t *o = json_object();

	json_object_set_new(o, "tool", jstr(d->tool));
	json_object_set_new(o, "outbound", json_boolean(d->outbound));
	json_object_set_new(o, "clearance", json_string(lev_level_name(d->clearance)));
	json_object_set_new(o, "taint", json_string(lev_level_name(d->taint)));
	json_object_set_new(o, "result", json_string(d->result == LEV_GATE_ALLOWED ? "allowed"
										    : "blocked"));
	json_object_set_new(o, "source", json_string(lev_gate_source_name(d->source)));
	if (d->source == LEV_GATE_SRC_ALLOWLIST)
		json_object_set_new(o, "rule", json_integer((json_int_t)d->rule_index));
	else if (d->source == LEV_GATE_SRC_RULE)
		json_object_set_new(o, "rule", jstr(d->rule_name));
	else
		json_object_set_new(o, "rule", json_null());
	if (id) {
		bool by_integ = d->result == LEV_GATE_ALLOWED &&
				(id->result != LEV_GATE_ALLOWED || id->source == LEV_INTEG_SRC_ALLOW ||
				 id->source == LEV_INTEG_SRC_RULE);

		json_object_set_new(o, "integrity", json_string(lev_integrity_name(id->integrity)));
		json_object_set_new(o, "consequential", json_boolean(id->consequential));
		json_object_set_new(o, "integrity_result",
				    json_string(id->result == LEV_GATE_ALLOWED ? "allowed"
									      : "blocked"));
		json_object_set_new(o, "integrity_source",
				    json_string(lev_integrity_source_name(id->source)));
		json_object_set_new(o, "integrity_rule",
				    id->source == LEV_INTEG_SRC_ALLOW
					    ? json_integer((json_int_t)id->rule_index)
				    : id->source == LEV_INTEG_SRC_RULE ? jstr(id->rule_name)
								       : json_null());
		json_object_set_new(o, "gate", json_string(by_integ ? "integrity" : "taint"));
		if (id->result != LEV_GATE_ALLOWED)
			json_object_set_new(o, "result", json_string("blocked"));
	}
	(void)print_json(o);
}

static void print_integrity_text(const struct lev_integrity_decision *id)
{
	printf("integrity:\n  context: %s\n  consequential: %s%s\n",
	       lev_integrity_name(id->integrity), id->consequential ? "yes" : "no",
	       id->protected_file ? " (a protected file)" : "");
	switch (id->source) {
	case LEV_INTEG_SRC_ALLOW:
		printf("result: allowed by the integrity gate, [[integrity.allow]] #%zu (policy.toml "
		       "line %u)\n", id->rule_index, id->rule_line);
		break;
	case LEV_INTEG_SRC_RULE:
		fputs("result: allowed by the integrity gate, Lua rule '", stdout);
		put_safe(id->rule_name);
		puts("'");
		break;
	case LEV_INTEG_SRC_NONE:
		puts("result: blocked by the integrity gate (consequential, untrusted context, and "
		     "no [[integrity.allow]] entry or Lua rule allows it)");
		puts("  a run would ask the user: allow once, allow for this run, or deny");
		break;
	default:
		printf("result: the integrity gate allows it (%s)\n",
		       lev_integrity_source_name(id->source));
		break;
	}
}

static void print_test_text(const struct lev_gate_decision *d,
			    const struct lev_integrity_decision *id)
{
	char *const *t;

	fputs("tool: ", stdout);
	put_safe(d->tool);
	printf("\n  sensitivity: %s\n  direction: %s\n  clearance: %s%s\n",
	       lev_level_name(d->sensitivity), lev_direction_name(d->direction),
	       lev_level_name(d->clearance), d->clearance_raised ? " (raised for this run)" : "");
	printf("scenario:\n  taint: %s\n", lev_level_name(d->taint));
	if (!d->outbound) {
		/* targets are only read for outbound tools */
	} else if (d->target_error) {
		fputs("  target: none usable (", stdout);
		put_safe(d->target_error);
		puts(")");
	} else if (!d->targets) {
		puts("  target: none");
	} else {
		for (t = d->targets; *t; t++) {
			fputs("  target: ", stdout);
			put_safe(*t);
			putchar('\n');
		}
	}
	print_result_text(d);
	if (id)
		print_integrity_text(id);
}

/*
 * The real gates (policy.toml and rules/) on CALL, in a context holding one
 * entry at TAINT, built and judged as the run's (gatechain.h
 * lev_gatechain_env_build(), lev_gatechain_flow()); *D gets the taint
 * gate's decision, *ID the integrity gate's.  0, or an exit status after a
 * message.
 */
/* CALL in the scenario CTX (at TAINT) through the chain's flow gates. */
static int test_flow(struct lev_gate *g, const struct lev_taint_ctx *ctx,
		     const struct lev_gate_call *call, enum lev_level taint, const struct test_opts *o,
		     struct lev_gate_decision *d, struct lev_integrity_decision *id,
		     struct lev_err *err)
{
	struct lev_gatechain_site site = { .taint = g, .taint_enabled = true };
	struct lev_gatechain_ctx cc = {
		.taint_ctx = ctx,
		.taint = taint,
		.integrity = o->integrity,
		.untrusted_args = o->untrusted_args,
	};
	struct lev_gatechain_env env;
	json_t *args = NULL;
	int r;

	if (call->args_json)
		(void)lev_taint_args_parse(call->args_json, call->args_len, &args, NULL);
	lev_gatechain_env_build(&env, &site, LEV_GATECHAIN_CALL, NULL, &cc);
	r = lev_gatechain_flow(&env, call->tool, args, call->targets, call->targets_given,
			       o->integrity_given, d, id, err);
	json_decref(args);
	return r;
}

static int test_decide(struct lev_ctx *lctx, struct lev_gate_call *call, enum lev_level taint,
		       const struct test_opts *o, struct lev_gate_decision *d,
		       struct lev_integrity_decision *id)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_gate_options go = { 0 };
	struct lev_taint_ctx *ctx;
	struct lev_gate *g = NULL;
	char *const *w;
	int r, region;

	if (lev_setup(lctx, CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	go.policy_path = lctx->paths.policy;
	go.leviath_policy = true;
	go.rules_dir = lctx->paths.rules;
	go.enabled = true;
	go.recheck_ns = -1;
	if (lev_gate_new(&go, &g, &err) < 0)
		return lev_fail("%s", err.msg);
	for (w = lev_gate_policy(g)->warnings; w && *w; w++)
		lev_warn("%s", *w);
	for (w = lev_gate_rules_load_errors(g); w && *w; w++)
		lev_warn("skipped %s", *w);

	/* the scenario: a context holding one entry at the given taint */
	ctx = lev_taint_ctx_new();
	region = lev_taint_region_add(ctx, "context", NULL);
	if (region < 0 || lev_taint_add_entry(ctx, (size_t)region, taint, NULL, &err) < 0) {
		lev_taint_ctx_free(ctx);
		lev_gate_free(g);
		return lev_fail("cannot build the test context");
	}
	r = test_flow(g, ctx, call, taint, o, d, id, &err);
	lev_taint_ctx_free(ctx);
	lev_gate_free(g);
	if (r < 0)
		return lev_fail("%s", err.msg);
	return 0;
}

static int policy_test(int argc, char **argv, struct lev_ctx *ctx)
{
	struct test_opts o = { .taint = LEV_PRIVATE };
	_cleanup_strv_ char **targets = NULL, **untrusted = NULL;
	struct lev_gate_call call = { 0 };
	struct lev_gate_decision d;
	struct lev_integrity_decision id = { 0 };
	char *const *w;
	int r;

	r = test_parse(argc, argv, &o, &call.tool);
	targets = o.targets;
	untrusted = o.untrusted_args;
	if (r)
		return r;
	if (o.args) {
		call.args_json = o.args;
		call.args_len = strlen(o.args);
	}
	call.targets_given = targets != NULL;
	call.targets = targets;
	r = test_decide(ctx, &call, o.taint, &o, &d, &id);
	if (r)
		return r;
	for (w = d.diags; w && *w; w++)
		lev_warn("%s", *w);
	for (w = id.diags; w && *w; w++)
		lev_warn("%s", *w);
	if (o.json)
		print_test_json(&d, o.integrity_given ? &id : NULL);
	else
		print_test_text(&d, o.integrity_given ? &id : NULL);
	r = d.result == LEV_GATE_ALLOWED && id.result == LEV_GATE_ALLOWED ? LEV_EXIT_OK
									   : LEV_EXIT_FAIL;
	lev_gate_decision_release(&d);
	lev_integrity_decision_release(&id);
	return r;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv, struct lev_ctx *ctx);
} subcommands[] = {
	{ "list", policy_list },
	{ "add", policy_add },
	{ "test", policy_test },
};

int cmd_policy(int argc, char **argv, struct lev_ctx *ctx)
{
	size_t i;

	if (argc < 2)
		return usage("missing subcommand (list, add or test)");
	for (i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (!strcmp(argv[1], subcommands[i].name))
			return subcommands[i].fn(argc - 1, argv + 1, ctx);
	return usage("unknown subcommand '%s'", argv[1]);
}
