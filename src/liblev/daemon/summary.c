/*
 * summary.c - what `lev ps` shows of a run (see summary.h).
 */
#include "liblev/base/secrets.h"
#include "liblev/daemon/meta.h"
#include "liblev/daemon/summary.h"

/*
 * Leviath's names beside lev's in a run of `lev ps --json`: run_id,
 * tool_calls, last_progress_at (whole seconds), title (the task's first
 * line, Leviath's [title]), wait_reason (what "waiting: REASON" waits on).
 */
static void leviath_names(json_t *sum)
{
	json_t *m = lev_meta_of(sum);
	const char *keys[] = { "run_id", "tool_calls", "last_progress_at", "title",
			       "wait_reason", NULL };

	for (size_t i = 0; keys[i]; i++)
		json_object_set(sum, keys[i], json_object_get(m, keys[i]));
	json_decref(m);
}

char *lev_run_summary(const json_t *doc)
{
	/* redacted whole, as lev.db's doc is, before the error is cut: a cut secret matches nothing */
	json_t *sum = lev_secrets_redact_take(json_copy((json_t *)doc));
	json_t *e = json_object_get(sum, "error");
	char *text;

	json_object_del(sum, "result");
	leviath_names(sum);
	if (json_is_string(e) && json_string_length(e) > LEV_SUMMARY_ERROR_MAX) {
		const char *s = json_string_value(e);
		size_t n = LEV_SUMMARY_ERROR_MAX;

		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;	/* never cut a UTF-8 sequence */
		json_object_set_new(sum, "error", json_sprintf("%.*s...", (int)n, s));
	}
	text = json_dumps(sum, JSON_COMPACT);
	json_decref(sum);
	return text;
}
