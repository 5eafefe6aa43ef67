/*
 * lint.h - findings about a parsed blueprint, judged against the user's
 * config: what it asks for, which asks the config honours, and what will
 * quietly not work.
 *
 * A finding has a severity (error: the blueprint cannot run as written;
 * warning: it runs, but something it asks for is refused, ignored or risky;
 * note: worth knowing, nothing wrong), a stable code (scripts match on it;
 * docs/blueprint.md lists them), an optional stage, a one-line message and a
 * one-line fix.  Codes:
 *
 *	read-paths-declared	note	the blueprint reads outside the workdir
 *	read-paths-not-granted	warning	declared entries the config does not grant
 *	read-paths-grant-invalid warning a read-path grant in config.toml is malformed
 *	broad-read-path		warning	an entry that can match the home dir or /
 *	implicit-shell-policy	warning	a stage offers shell with no verdict set
 *	command-seed		note/warning a region runs a command at spawn
 *	tool-seed		note	a region calls a tool at spawn
 *	sandbox-none-requested	warning/note a block asks for no sandbox
 *	preapproved-tools	note/warning tools the blueprint sets to "allow"
 *	orphan-stage-permission	warning	a stage permission for a tool it does not offer
 *	safe-commands-declared	note	[safe_commands] and whether it is honoured
 *	taint-opt-in		note	the blueprint turns taint tracking on
 *	ignored-setting		warning	something in the blueprint lev ignores
 *	model-entry-skipped	warning	a model-list entry names a provider lev does not have
 *	no-usable-model		error	no entry of a stage's model list is usable
 *	provider-not-run	error	a stage's one provider is one lev cannot run (a
 *				[model_providers] Rhai script provider, or unknown)
 *	unknown-tool		error	available_tools names a tool nothing provides (a
 *				warning for a bare name when MCP servers are configured)
 *	not-run-by-lev		warning	a key of Leviath's format lev checks but does not
 *				run (with file, line, col and key)
 *	config-unknown-key	warning	something in config.toml lev ignores
 *	agent-grants-withheld	warning	per-agent grants not applied: not the installed
 *				agent of that name, or its files changed since `lev add`
 *
 * Ownership: struct lev_findings owns its findings and their strings.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/conf/blueprint.h"
#include "liblev/conf/config.h"
#include "liblev/base/error.h"
#include "liblev/conf/readpaths.h"

enum lev_severity {
	LEV_SEV_ERROR,
	LEV_SEV_WARNING,
	LEV_SEV_NOTE,
	_LEV_SEV_MAX,
};

struct lev_finding {
	enum lev_severity severity;
	char *code;
	char *stage;		/* NULL: the whole blueprint */
	char *message;
	char *fix;		/* NULL: nothing to do */
	char *file;		/* NULL: not tied to a place in a file */
	unsigned line, col;	/* with file */
	char *key;		/* NULL, or the dotted key the finding is about */
};

struct lev_findings {
	struct lev_finding *v;
	size_t n;
};

/* "error", "warning", "note". */
const char *lev_severity_name(enum lev_severity s);

void lev_findings_add(struct lev_findings *f, enum lev_severity sev, const char *code,
		      const char *stage, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* A finding at FILE:LINE:COL about KEY (any may be NULL / 0), without a fix. */
void lev_findings_add_at(struct lev_findings *f, enum lev_severity sev, const char *code,
			 const char *stage, const char *file, unsigned line, unsigned col,
			 const char *key, const char *message);
size_t lev_findings_count(const struct lev_findings *f, enum lev_severity sev);
void lev_findings_release(struct lev_findings *f);

/*
 * Lint BP against CFG (NULL: no config, judge the blueprint alone).
 * WORKDIR anchors relative read-path entries (NULL: unknown) and HOME
 * expands "~" (NULL: none).  Findings are appended to *out (initialise it
 * to zero).  Fails only on an internal error; a malformed grant in the
 * config is a finding, not a failure.
 */
int lev_lint(const struct lev_blueprint *bp, const struct lev_config *cfg, const char *workdir,
	     const char *home, struct lev_findings *out, struct lev_err *err);

/*
 * The read-path grant report for BP under CFG: *status_out gets one status
 * per bp->read_paths entry (a fresh array, NULL when BP declares nothing)
 * and *granted_out the number granted.  A malformed grant fails with
 * LEV_EPARSE naming it.
 */
int lev_lint_grant_report(const struct lev_blueprint *bp, const struct lev_config *cfg,
			  const char *workdir, const char *home,
			  enum lev_grant_status **status_out, size_t *granted_out,
			  struct lev_err *err);

/*
 * TOML-quote S for a fix line the user pastes into config.toml
 * ("a\"b" style, control bytes as \uXXXX).  Caller frees.
 */
char *lev_toml_quote(const char *s);

/*
 * What BP asks for, in plain words, one line per ask (for `lev add`):
 * script tools it ships, tools it pre-approves, the sandbox it requests or
 * declines, read paths declared vs granted, commands and tools it runs at
 * start, safe commands it declares, script host access, taint opt-in.
 * CFG may be NULL.  *lines_out is a fresh strv (NULL: nothing to report).
 */
void lev_lint_inventory(const struct lev_blueprint *bp, const struct lev_config *cfg,
			const char *workdir, const char *home, char ***lines_out);
