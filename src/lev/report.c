/*
 * report.c - shared output for validate, list and add.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "lev/report.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/tomlval.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

/* Parse ":LINE:COL: " at P; the length of the match, or 0. */
static size_t pos_at(const char *p, unsigned long *line, unsigned long *col)
{
	const char *q = p;
	char *end;

	if (*q++ != ':' || *q < '0' || *q > '9')
		return 0;
	*line = strtoul(q, &end, 10);
	if (*end != ':' || end[1] < '0' || end[1] > '9')
		return 0;
	*col = strtoul(end + 1, &end, 10);
	if (end[0] != ':' || end[1] != ' ')
		return 0;
	return (size_t)(end + 2 - p);
}

json_t *lev_report_error_json(const char *source, const char *msg)
{
	json_t *o = json_object();
	unsigned long line = 0, col = 0;
	const char *p;
	size_t n = 0;

	if (!msg)
		msg = "";
	for (p = strchr(msg, ':'); p; p = strchr(p + 1, ':')) {
		n = pos_at(p, &line, &col);
		if (n)
			break;
	}
	json_object_set_new(o, "source", json_string(source));
	if (p && n && p > msg) {
		_cleanup_free_ char *file = xstrndup(msg, (size_t)(p - msg));

		json_object_set_new(o, "file", lev_report_jstr(file));
		json_object_set_new(o, "line", json_integer((json_int_t)line));
		json_object_set_new(o, "column", json_integer((json_int_t)col));
		json_object_set_new(o, "message", lev_report_jstr(p + n));
	} else {
		json_object_set_new(o, "file", json_null());
		json_object_set_new(o, "line", json_null());
		json_object_set_new(o, "column", json_null());
		json_object_set_new(o, "message", lev_report_jstr(msg));
	}
	return o;
}

json_t *lev_report_jstr(const char *s)
{
	json_t *j;

	if (!s)
		return json_null();
	j = json_string(s);
	if (!j) {
		_cleanup_free_ char *p = lev_printable(s, strlen(s), 65536);
		j = json_string(p);
	}
	return j ? j : json_null();
}

void lev_report_findings(FILE *f, const struct lev_findings *fs)
{
	int sev;
	size_t i;

	for (sev = LEV_SEV_ERROR; sev < _LEV_SEV_MAX; sev++) {
		for (i = 0; i < fs->n; i++) {
			const struct lev_finding *x = &fs->v[i];

			if ((int)x->severity != sev)
				continue;
			fprintf(f, "  %s: ", lev_severity_name(x->severity));
			if (x->stage)
				fprintf(f, "stage '%s': ", x->stage);
			fprintf(f, "%s [%s]\n", x->message, x->code);
			if (x->fix)
				fprintf(f, "    fix: %s\n", x->fix);
		}
	}
}

json_t *lev_report_findings_json(const struct lev_findings *fs)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < fs->n; i++) {
		const struct lev_finding *x = &fs->v[i];
		json_t *o = json_object();

		json_object_set_new(o, "severity", json_string(lev_severity_name(x->severity)));
		json_object_set_new(o, "code", lev_report_jstr(x->code));
		json_object_set_new(o, "stage", lev_report_jstr(x->stage));
		json_object_set_new(o, "message", lev_report_jstr(x->message));
		json_object_set_new(o, "fix", lev_report_jstr(x->fix));
		json_array_append_new(a, o);
	}
	return a;
}

int lev_report_print_json(json_t *json)
{
	int r = json_dumpf(json, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	json_decref(json);
	fputc('\n', stdout);
	return r;
}

void lev_report_lint_dirs(char **workdir_out, char **home_out)
{
	char *home = NULL;

	*workdir_out = getcwd(NULL, 0);
	if (lev_home_dir(&home, NULL) < 0)
		home = NULL;
	*home_out = home;
}
