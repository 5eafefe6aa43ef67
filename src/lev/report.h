/*
 * report.h - printing shared by validate, list and add: findings as text
 * and JSON.
 */
#pragma once

#include <jansson.h>
#include <stdio.h>

#include "liblev/conf/config.h"
#include "liblev/policy/lint.h"

/* A JSON string for S that is always valid UTF-8 (odd bytes escaped). */
json_t *lev_report_jstr(const char *s);

/*
 * "  warning: stage 'x': message [code]" then "    fix: ..." for each
 * finding, errors first, then warnings, then notes.
 */
void lev_report_findings(FILE *f, const struct lev_findings *fs);

/* [{severity, code, stage, message, fix}, ...] */
json_t *lev_report_findings_json(const struct lev_findings *fs);

/*
 * An error message as {"source", "file", "line", "column", "message"}: a
 * "FILE:LINE:COL: text" message is split into its parts; any other has
 * file, line and column null and the whole text as message.  SOURCE names
 * what failed ("blueprint", "config").
 */
json_t *lev_report_error_json(const char *source, const char *msg);

/* Print `json` to stdout (indented, one trailing newline); frees it. */
int lev_report_print_json(json_t *json);

/* The current directory and home directory for lint (either may be NULL). */
void lev_report_lint_dirs(char **workdir_out, char **home_out);
