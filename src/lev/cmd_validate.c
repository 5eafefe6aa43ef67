/*
 * cmd_validate.c - lev validate [PATH|NAME] [--json] [--deny-warnings]
 *
 * Parse a blueprint and the user's config and say whether it is valid,
 * with a summary and every finding (severity, code, fix).  Exit 0 valid,
 * 1 invalid (or warnings under --deny-warnings), 2 usage.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lev/cmd.h"
#include "lev/report.h"
#include "liblev/conf/agentstore.h"
#include "liblev/conf/blueprint.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/conf/config.h"
#include "liblev/policy/lint.h"
#include "liblev/sandbox/sandbox.h"

/*
 * What a stage's shell lines may write, from its effective sandbox: the
 * workdir and a scratch /tmp always; with kind none, the host fence adds
 * [sandbox] writable (the user's, narrowed by the blueprint's).
 */
static char *stage_writes(const struct lev_config *cfg, const struct lev_blueprint *bp,
			  const struct lev_stage *st, enum lev_sandbox_kind *kind)
{
	struct lev_sandbox_spec eff;
	struct lev_buf b = LEV_BUF_INIT;

	lev_sandbox_resolve(&cfg->sandbox, &bp->sandbox, &st->sandbox, &eff);
	*kind = eff.kind;
	(void)lev_buf_adds(&b, "the workdir, a scratch /tmp");
	for (char **w = eff.kind == LEV_SANDBOX_NONE ? eff.writable : NULL; w && *w; w++)
		(void)lev_buf_addf(&b, ", %s", *w);
	lev_sandbox_spec_release(&eff);
	return lev_buf_detach(&b, NULL);
}

static void print_writes(const struct lev_config *cfg, const struct lev_blueprint *bp)
{
	printf("  stages write:\n");
	for (size_t i = 0; i < bp->n_stages; i++) {
		enum lev_sandbox_kind kind;
		_cleanup_free_ char *w = stage_writes(cfg, bp, &bp->stages[i], &kind);

		printf("    %s (sandbox %s): %s\n", bp->stages[i].name, lev_sandbox_kind_name(kind), w);
	}
}

static void print_summary(const struct lev_blueprint *bp)
{
	size_t i;

	printf("valid: blueprint '%s', version %s\n", bp->name, bp->version);
	printf("  stages: %zu (", bp->n_stages);
	for (i = 0; i < bp->n_stages; i++)
		printf("%s%s", i ? ", " : "", bp->stages[i].name);
	printf("), entry stage '%s'\n", bp->entry_stage);
	printf("  regions: %zu%s\n", bp->n_regions, bp->default_regions ? " (default layout)" : "");
	if (bp->n_script_tools)
		printf("  script tools: %zu\n", bp->n_script_tools);
	for (i = 0; i < bp->n_script_tools; i++)
		printf("    %s (tools/%s.lua): requires %s\n", bp->script_tools[i].name,
		       bp->script_tools[i].name, lev_script_needs_text(bp->script_tools[i].needs));
}

/* --json for a run that could not get as far as linting: {valid: false, error}. */
static void print_failure_json(const char *source, const char *msg)
{
	json_t *o = json_object();

	json_object_set_new(o, "valid", json_false());
	json_object_set_new(o, "blueprint", json_null());
	json_object_set_new(o, "error", lev_report_error_json(source, msg));
	json_object_set_new(o, "findings", json_array());
	lev_report_print_json(o);
}

static json_t *blueprint_json(const struct lev_config *cfg, const struct lev_blueprint *bp)
{
	json_t *o = json_object();
	json_t *stages = json_array(), *scripts = json_array(), *writes = json_object();
	size_t i;

	for (i = 0; i < bp->n_stages; i++) {
		enum lev_sandbox_kind kind;
		_cleanup_free_ char *w = stage_writes(cfg, bp, &bp->stages[i], &kind);

		json_array_append_new(stages, json_string(bp->stages[i].name));
		json_object_set_new(writes, bp->stages[i].name, json_string(w));
	}
	for (i = 0; i < bp->n_script_tools; i++) {
		const struct lev_script_tool *st = &bp->script_tools[i];
		json_t *req = json_array();

		if (st->needs & LEV_SCRIPT_NEEDS_NETWORK)
			json_array_append_new(req, json_string("network"));
		if (st->needs & LEV_SCRIPT_NEEDS_SHELL)
			json_array_append_new(req, json_string("shell"));
		json_array_append_new(scripts, json_pack("{s:s,s:s,s:o}", "name", st->name,
							 "file", st->file, "requires", req));
	}
	json_object_set_new(o, "name", json_string(bp->name));
	json_object_set_new(o, "version", lev_report_jstr(bp->version));
	json_object_set_new(o, "description", lev_report_jstr(bp->description));
	json_object_set_new(o, "stages", stages);
	json_object_set_new(o, "entry_stage", json_string(bp->entry_stage));
	json_object_set_new(o, "script_tools", scripts);
	json_object_set_new(o, "stages_write", writes);
	return o;
}

/* One line of the graph, cut to WIDTH columns (a cut line ends in "..."). */
static void graph_line(unsigned width, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void graph_line(unsigned width, const char *fmt, ...)
{
	_cleanup_free_ char *line = NULL;
	size_t n, cut;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	if (!line)
		return;
	n = strlen(line);
	if (n <= width) {
		printf("%s\n", line);
		return;
	}
	/* a character is never split: back up to a UTF-8 lead byte */
	cut = width - 3;
	while (cut > 0 && ((unsigned char)line[cut] & 0xc0) == 0x80)
		cut--;
	printf("%.*s...\n", (int)cut, line);
}

/*
 * The stage graph as plain text: each stage, then its edges (when each is
 * taken, its hint), escape edges (error, max_iterations, stuck, dead end)
 * included, and where the run may end.
 */
static void print_graph(const struct lev_blueprint *bp, unsigned width)
{
	printf("stage graph:\n");
	for (size_t i = 0; i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];
		bool entry = !strcmp(st->name, bp->entry_stage);

		graph_line(width, "  %s%s", st->name, entry ? " (entry)" : "");
		if (st->next)
			graph_line(width, "    -> %s  [next]", st->next);
		for (size_t j = 0; j < st->n_transitions; j++) {
			const struct lev_transition *t = &st->transitions[j];

			graph_line(width, "    -> %s  [%s%s]%s%s%s", t->target,
				   lev_transition_when_name(t->when), t->always ? ", always" : "",
				   t->hint ? "  \"" : "", t->hint ? t->hint : "", t->hint ? "\"" : "");
		}
		if (st->allow_complete || (!st->next && !st->n_transitions))
			graph_line(width, "    -> (end of run)");
	}
}

const char lev_usage_validate[] =
	"usage: lev validate [PATH|NAME] [--json] [--deny-warnings] [--graph [--width COLS]]\n"
	"\n"
	"Check a blueprint against your config.toml and say what it asks for.  PATH is\n"
	"a directory holding agent.leviath or the file itself; NAME an installed agent\n"
	"(default: the current directory).  Every finding has a severity (error,\n"
	"warning, note), a stable code and a fix.\n"
	"\n"
	"  --json            print {valid, blueprint, error, findings} as JSON, also\n"
	"                    when the blueprint or the config does not parse\n"
	"  --deny-warnings   fail when there is any warning\n"
	"  --graph           draw the stage graph after the report, as plain text:\n"
	"                    every edge with when it is taken, escape edges too;\n"
	"                    ignored with --json\n"
	"  --width COLS      the columns --graph may use (default 120, 20 to 1000): a\n"
	"                    longer line is cut, ending in '...'\n"
	"\n"
	"Exit status: 0 valid, 1 invalid (or a warning under --deny-warnings), 2 usage.\n";

int cmd_validate(int argc, char **argv, struct lev_ctx *ctx)
{
	bool json = false, deny_warnings = false, opts_done = false, graph = false;
	unsigned width = 120;
	const char *arg = NULL;
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *workdir = NULL;
	_cleanup_free_ char *home = NULL;
	struct lev_blueprint *bp = NULL;
	struct lev_findings fs = { NULL, 0 };
	struct lev_err err = LEV_ERR_INIT;
	size_t errors, warnings;
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (!opts_done && !strcmp(argv[i], "--json"))
			json = true;
		else if (!opts_done && !strcmp(argv[i], "--graph"))
			graph = true;
		else if (!opts_done && !strcmp(argv[i], "--width")) {
			uint64_t w;

			if (++i >= argc || lev_parse_u64(argv[i], &w) < 0 || w < 20 || w > 1000)
				return lev_usage_error("validate", "--width wants 20 to 1000 columns");
			width = (unsigned)w;
		}
		else if (!opts_done && !strcmp(argv[i], "--deny-warnings"))
			deny_warnings = true;
		else if (!opts_done && !strcmp(argv[i], "--"))
			opts_done = true;
		else if (!opts_done && argv[i][0] == '-' && argv[i][1])
			return lev_usage_error("validate", "unknown option '%s'", argv[i]);
		else if (arg)
			return lev_usage_error("validate", "too many arguments");
		else
			arg = argv[i];
	}
	if (!arg)
		arg = ".";

	if (lev_agentstore_resolve(arg, &path, &err) < 0 ||
	    lev_blueprint_load(path, &bp, &err) < 0) {
		if (json)
			print_failure_json("blueprint", err.msg);
		return lev_fail("%s", err.msg);
	}
	/* per-agent grants go to the installed agent, unchanged, only */
	lev_agentstore_bind(bp);
	if (lev_setup(ctx, CMD_NEEDS_CONFIG) < 0) {
		if (json)
			print_failure_json("config", ctx->err.msg);
		lev_blueprint_free(bp);
		return LEV_EXIT_FAIL;
	}
	lev_report_lint_dirs(&workdir, &home);
	if (lev_lint(bp, &ctx->cfg, workdir, home, &fs, &err) < 0) {
		if (json)
			print_failure_json("lint", err.msg);
		lev_blueprint_free(bp);
		return lev_fail("%s", err.msg);
	}
	errors = lev_findings_count(&fs, LEV_SEV_ERROR);
	warnings = lev_findings_count(&fs, LEV_SEV_WARNING);

	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "valid", json_boolean(errors == 0));
		json_object_set_new(o, "blueprint", blueprint_json(&ctx->cfg, bp));
		json_object_set_new(o, "error", json_null());
		json_object_set_new(o, "findings", lev_report_findings_json(&fs));
		lev_report_print_json(o);
	} else {
		if (errors == 0) {
			print_summary(bp);
			print_writes(&ctx->cfg, bp);
		}
		else
			printf("invalid: blueprint '%s', version %s\n", bp->name, bp->version);
		lev_report_findings(stdout, &fs);
		printf("  %zu error(s), %zu warning(s), %zu note(s)\n", errors, warnings,
		       lev_findings_count(&fs, LEV_SEV_NOTE));
		if (graph)
			print_graph(bp, width);
	}

	rc = LEV_EXIT_OK;
	if (errors) {
		rc = LEV_EXIT_FAIL;
	} else if (deny_warnings && warnings) {
		if (!json)
			lev_fail("%zu warning(s) and --deny-warnings", warnings);
		rc = LEV_EXIT_FAIL;
	}
	lev_findings_release(&fs);
	lev_blueprint_free(bp);
	return rc;
}
