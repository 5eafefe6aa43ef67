/*
 * cmd_check.c - lev check AGENT|PATH --tool NAME [--args JSON] [--workdir DIR]
 *               [--stage S] [--taint LEVEL] [--yolo] [--allow TOOL]... [--json]
 *
 * Run every gate for one hypothetical tool call (liblev/run/check.h) against
 * the real filesystem, without running it, and print the decision, the
 * gate that made it, and the rule.  Exit 0 allow, 1 deny, 3 ask, 2 usage.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "lev/report.h"
#include "liblev/conf/agentstore.h"
#include "liblev/conf/blueprint.h"
#include "liblev/run/check.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/config.h"
#include "liblev/base/strv.h"

enum { EXIT_ASK = 3 };

#define MAX_ALLOW 64

const char lev_usage_check[] =
	"usage: lev check AGENT|PATH --tool NAME [--args JSON] [--workdir DIR] [--stage S]\n"
	"       lev check AGENT|PATH --calls FILE [--workdir DIR] [options]\n"
	"                 [--taint public|internal|private] [--yolo] [--allow TOOL]...\n"
	"                 [--integrity trusted|untrusted] [--untrusted-arg NAME]...\n"
	"                 [--yolo-flow] [--no-terminal] [--json]\n"
	"\n"
	"Ask whether AGENT would be allowed to make one tool call here, without making\n"
	"it.  The call goes through the runtime's own gate chain, against the real\n"
	"filesystem: offered, schema, redirect (shell lines), permission, workdir /\n"
	"read_paths (file tools), network, taint (outbound tools), integrity\n"
	"(consequential tools).  The first gate\n"
	"that refuses decides; else a gate that asks; else the call is allowed by\n"
	"the gate that approved it.\n"
	"\n"
	"  --tool NAME       the tool (bash and shell are one tool)\n"
	"  --args JSON       the call's arguments, a JSON object (default {}), e.g.\n"
	"                    '{\"command\": \"ls -la\"}' or '{\"path\": \"src/main.c\"}'\n"
	"  --workdir DIR     the working directory (default: the current directory)\n"
	"  --stage S         the stage (default: the entry stage)\n"
	"  --taint LEVEL     the taint of the context so far (default: public)\n"
	"  --integrity I     the context holds untrusted content (untrusted) or not\n"
	"                    (trusted, the default)\n"
	"  --untrusted-arg NAME  the argument NAME came from untrusted text (repeatable)\n"
	"  --yolo            as under 'lev run --yolo' (never lifts a deny)\n"
	"  --yolo-flow       as under 'lev run --yolo --yolo-flow'\n"
	"  --allow TOOL      as under 'lev run --allow TOOL' (repeatable)\n"
	"  --no-terminal     as a run with nobody at the terminal (ask_user_* not offered)\n"
	"  --json            print {decision, gate, reason, path, rule, keys, text, host,\n"
	"                    integrity, untrusted_args}\n"
	"  --calls FILE      check many calls, one JSON object a line ({tool, args,\n"
	"                    stage, taint, integrity, id}; FILE - is stdin), one JSON\n"
	"                    answer a line\n"
	"\n"
	"AGENT is an installed agent's name; PATH a blueprint directory or file.\n"
	"Exit status: 0 allow, 1 deny (or an error), 3 ask, 2 usage.\n";

struct check_args {
	const char *agent;
	struct lev_check_opts o;
	const char *allow[MAX_ALLOW + 1];
	size_t n_allow;
	const char *untrusted[MAX_ALLOW + 1];
	size_t n_untrusted;
	bool json;
	bool taint_given;
	const char *calls;	/* --calls FILE ("-": stdin) */
};

/* "--name VALUE" or "--name=VALUE"; returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *matched)
{
	size_t len = strlen(name);

	*matched = false;
	if (strncmp(argv[*i], name, len) != 0)
		return NULL;
	if (argv[*i][len] == '=') {
		*matched = true;
		return argv[*i] + len + 1;
	}
	if (argv[*i][len] != '\0')
		return NULL;
	*matched = true;
	if (*i + 1 >= argc)
		return NULL;
	(*i)++;
	return argv[*i];
}

/* Fill A from ARGV; no I/O.  Returns 0 or a usage error (already printed). */
static int parse_args(int argc, char **argv, struct check_args *a)
{
	static const char *const valued[] = { "--tool", "--args", "--workdir", "--stage",
					      "--taint", "--allow", "--calls", "--integrity",
					      "--untrusted-arg", NULL };
	bool opts_done = false;
	int i;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];
		bool handled = false;
		size_t k;

		if (!opts_done && !strcmp(arg, "--")) {
			opts_done = true;
			continue;
		}
		if (!opts_done && !strcmp(arg, "--json")) {
			a->json = true;
			continue;
		}
		if (!opts_done && !strcmp(arg, "--no-terminal")) {
			a->o.no_terminal = true;
			continue;
		}
		if (!opts_done && !strcmp(arg, "--yolo")) {
			a->o.yolo = true;
			continue;
		}
		if (!opts_done && !strcmp(arg, "--yolo-flow")) {
			a->o.yolo_flow = true;
			continue;
		}
		for (k = 0; !opts_done && valued[k] && !handled; k++) {
			bool matched;
			const char *v = opt_value(argc, argv, &i, valued[k], &matched);

			if (!matched)
				continue;
			handled = true;
			if (!v)
				return lev_usage_error("check", "option '%s' needs a value", valued[k]);
			if (!strcmp(valued[k], "--tool")) {
				a->o.tool = v;
			} else if (!strcmp(valued[k], "--calls")) {
				a->calls = v;
			} else if (!strcmp(valued[k], "--args")) {
				a->o.args_json = v;
			} else if (!strcmp(valued[k], "--workdir")) {
				a->o.workdir = v;
			} else if (!strcmp(valued[k], "--stage")) {
				a->o.stage = v;
			} else if (!strcmp(valued[k], "--taint")) {
				if (lev_level_parse(v, &a->o.taint) < 0)
					return lev_usage_error("check",
							       "--taint '%s' is not one of public, "
							       "internal, private",
							       v);
				a->taint_given = true;
			} else if (!strcmp(valued[k], "--integrity")) {
				if (lev_integrity_parse(v, &a->o.integrity) < 0)
					return lev_usage_error("check", "--integrity '%s' is not one "
							       "of trusted, untrusted", v);
			} else if (!strcmp(valued[k], "--untrusted-arg")) {
				if (a->n_untrusted == MAX_ALLOW || !*v)
					return lev_usage_error("check", "--untrusted-arg needs a "
							       "name (at most %d)", MAX_ALLOW);
				a->untrusted[a->n_untrusted++] = v;
			} else {
				if (a->n_allow == MAX_ALLOW)
					return lev_usage_error("check", "more than %d --allow options",
							       MAX_ALLOW);
				if (!*v)
					return lev_usage_error("check", "--allow needs a tool name");
				a->allow[a->n_allow++] = v;
			}
		}
		if (handled)
			continue;
		if (!opts_done && arg[0] == '-' && arg[1])
			return lev_usage_error("check", "unknown option '%s'", arg);
		if (a->agent)
			return lev_usage_error("check", "too many arguments ('%s')", arg);
		a->agent = arg;
	}
	if (!a->agent)
		return lev_usage_error("check", "name an agent or a blueprint path");
	if ((!a->o.tool || !*a->o.tool) && !a->calls)
		return lev_usage_error("check", "--tool is required");
	if (a->o.tool && a->calls)
		return lev_usage_error("check", "--tool and --calls do not go together");
	a->allow[a->n_allow] = NULL;
	a->o.allow = a->n_allow ? (char *const *)a->allow : NULL;
	a->untrusted[a->n_untrusted] = NULL;
	a->o.untrusted_args = a->n_untrusted ? (char *const *)a->untrusted : NULL;
	return 0;
}

static json_t *jstr_or_null(const char *s)
{
	return s ? lev_report_jstr(s) : json_null();
}

static json_t *result_json(const struct lev_check_result *r)
{
	json_t *o = json_object();
	json_t *keys = json_array();
	char *const *k;

	for (k = r->keys; k && *k; k++)
		json_array_append_new(keys, lev_report_jstr(*k));
	json_object_set_new(o, "decision", json_string(lev_verdict_name(r->decision)));
	json_object_set_new(o, "gate", json_string(lev_gate_id_name(r->gate)));
	json_object_set_new(o, "reason", jstr_or_null(r->reason));
	json_object_set_new(o, "path", jstr_or_null(r->path));
	json_object_set_new(o, "rule", jstr_or_null(r->rule));
	json_object_set_new(o, "keys", keys);
	json_object_set_new(o, "text", jstr_or_null(r->text));
	json_object_set_new(o, "host", jstr_or_null(r->host));
	json_object_set_new(o, "integrity", json_string(lev_integrity_name(r->integrity)));
	{
		json_t *ua = json_array();

		for (char **s = r->untrusted_args; s && *s; s++)
			json_array_append_new(ua, lev_report_jstr(*s));
		json_object_set_new(o, "untrusted_args", ua);
	}
	return o;
}

static void print_result(const struct lev_check_result *r, bool json)
{
	char *const *k;

	if (json) {
		lev_report_print_json(result_json(r));
		return;
	}
	printf("%s (gate: %s)\n", lev_verdict_name(r->decision), lev_gate_id_name(r->gate));
	printf("  reason: %s\n", r->reason ? r->reason : "");
	if (r->rule)
		printf("  rule: %s\n", r->rule);
	if (r->path)
		printf("  path: %s\n", r->path);
	if (r->integrity == LEV_UNTRUSTED)
		printf("  integrity: untrusted\n");
	if (r->keys) {
		printf("  keys:");
		for (k = r->keys; *k; k++)
			printf(" %s", *k);
		putchar('\n');
	}
}

/* OUT as one line (taken). */
static void print_line(json_t *out)
{
	(void)json_dumpf(out, stdout, JSON_COMPACT);
	fputc('\n', stdout);
	json_decref(out);
}

/*
 * --calls: one call per line, {"tool": ..., "args": {...}, "stage": ...,
 * "taint": ..., "integrity": ..., "id": ...} (all but tool optional), each
 * answered by one JSON line as --json prints it, with "id" echoed, or
 * {"id", "error"} for a line that cannot be checked.  Exit 0 when every
 * line was answered.
 */
static int run_calls(const struct lev_config *cfg, const struct lev_blueprint *bp,
		     const struct check_args *a)
{
	FILE *f = strcmp(a->calls, "-") ? fopen(a->calls, "re") : stdin;
	char *line = NULL;
	size_t cap = 0;
	int rc = LEV_EXIT_OK;

	if (!f)
		return lev_fail("cannot open '%s': %s", a->calls, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		struct lev_check_opts o = a->o;
		struct lev_check_result res = { 0 };
		struct lev_err err = LEV_ERR_INIT;
		json_error_t je;
		json_t *in = json_loads(line, 0, &je), *out;
		const json_t *id = in ? json_object_get(in, "id") : NULL;
		const char *taint = in ? json_string_value(json_object_get(in, "taint")) : NULL;
		const char *integ = in ? json_string_value(json_object_get(in, "integrity")) : NULL;
		_cleanup_free_ char *args = NULL;

		if (!json_is_object(in)) {
			json_decref(in);
			if (strspn(line, " \t\r\n") == strlen(line))
				continue;
			out = json_pack("{s:n, s:s}", "id", "error", "the line is not a JSON object");
			print_line(out);
			rc = LEV_EXIT_FAIL;
			continue;
		}
		o.tool = json_string_value(json_object_get(in, "tool"));
		o.stage = json_string_value(json_object_get(in, "stage"));
		if (integ)
			(void)lev_integrity_parse(integ, &o.integrity);
		if (json_object_get(in, "args"))
			args = json_dumps(json_object_get(in, "args"), JSON_COMPACT | JSON_ENCODE_ANY);
		o.args_json = args;
		if (taint && lev_level_parse(taint, &o.taint) < 0)
			taint = NULL;
		if (!o.tool) {
			out = json_pack("{s:s}", "error", "the line names no tool");
		} else if (lev_check_run(cfg, bp, &o, &res, &err) < 0) {
			out = json_pack("{s:s}", "error", err.msg);
			rc = LEV_EXIT_FAIL;
		} else {
			out = result_json(&res);
			lev_check_result_release(&res);
		}
		json_object_set(out, "id", id ? (json_t *)id : json_null());
		print_line(out);
		json_decref(in);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return rc;
}

int cmd_check(int argc, char **argv, struct lev_ctx *ctx)
{
	struct check_args a = { 0 };
	struct lev_check_result res = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	struct lev_blueprint *bp = NULL;
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *cwd = NULL;
	char *const *w;
	int r, rc;

	a.o.confine = LEV_CONFINE_AUTO;
	a.o.taint = LEV_PUBLIC;
	r = parse_args(argc, argv, &a);
	if (r)
		return r;
	if (!a.o.workdir) {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return lev_fail("cannot read the current directory: %s", strerror(errno));
		a.o.workdir = cwd;
	}
	if (lev_agentstore_resolve(a.agent, &path, &err) < 0 ||
	    lev_blueprint_load(path, &bp, &err) < 0)
		return lev_fail("%s", err.msg);
	/* per-agent grants go to the installed agent, unchanged, only */
	lev_agentstore_bind(bp);
	if (lev_setup(ctx, CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT) < 0) {
		lev_blueprint_free(bp);
		return LEV_EXIT_FAIL;
	}
	a.o.policy_path = ctx->paths.policy;
	a.o.rules_dir = ctx->paths.rules;
	/* the stage's MCP servers start as a run starts them */
	a.o.data_root = ctx->paths.root;
	a.o.credentials_path = ctx->paths.credentials;
	a.o.envp = environ;

	if (a.calls) {
		rc = run_calls(&ctx->cfg, bp, &a);
		lev_blueprint_free(bp);
		return rc;
	}
	r = lev_check_run(&ctx->cfg, bp, &a.o, &res, &err);
	lev_blueprint_free(bp);
	if (r == LEV_EUSAGE)
		return lev_usage_error("check", "%s", err.msg);
	if (r < 0)
		return lev_fail("%s", err.msg);

	for (w = res.warnings; w && *w; w++)
		lev_warn("%s", *w);
	print_result(&res, a.json);
	rc = res.decision == LEV_ALLOW ? LEV_EXIT_OK : res.decision == LEV_ASK ? EXIT_ASK
									: LEV_EXIT_FAIL;
	lev_check_result_release(&res);
	return rc;
}
