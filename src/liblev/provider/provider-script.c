/*
 * provider-script.c - the deterministic script provider.
 *
 * The turns file (docs/providers.md):
 *
 *	[[turn]]
 *	text = "Reading the README first."
 *	[[turn.call]]
 *	tool = "read_file"
 *	args = { path = "README.md" }
 *
 *	[[turn]]
 *	text = "Done."		# no calls: the stage ends
 *
 * Each infer returns the next turn whatever the request holds.  A turn
 * may also carry `raw_args` (a string) instead of `args`, sent as the
 * arguments text exactly, to play a model that writes invalid JSON, and
 * an `id` for a call (default "call_<turn>_<n>").  When every turn has
 * been played, infer answers with LEV_FINISH_SCRIPT_END: the run is
 * complete.  Unknown keys are errors naming FILE:LINE:COL.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/provider/provider-internal.h"
#include "liblev/conf/toml.h"
#include "liblev/base/xalloc.h"

#define SCRIPT_MAX_TURNS 10000

struct script_call {
	char *id;
	char *tool;
	char *raw;		/* arguments text */
};

struct script_turn {
	char *text;
	struct script_call *calls;
	size_t n_calls;
};

struct lev_script {
	struct script_turn *turns;
	size_t n_turns;
	size_t next;
};

struct lev_script *lev_script_free(struct lev_script *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n_turns; i++) {
		for (size_t j = 0; j < s->turns[i].n_calls; j++) {
			free(s->turns[i].calls[j].id);
			free(s->turns[i].calls[j].tool);
			free(s->turns[i].calls[j].raw);
		}
		free(s->turns[i].calls);
		free(s->turns[i].text);
	}
	free(s->turns);
	free(s);
	return NULL;
}

size_t lev_script_turns(const struct lev_script *s)
{
	return s ? s->n_turns : 0;
}

static int fail_at(struct lev_err *err, const char *file, const struct lev_toml_value *v,
		   const char *fmt, const char *what)
{
	return lev_err_set(err, LEV_EPARSE, "%s:%u:%u: %s %s", file, v ? v->line : 0,
			   v ? v->col : 0, what, fmt);
}

static int key_fail(struct lev_err *err, const char *file, const struct lev_toml_table *t,
		    size_t i, const char *where, const char *valid)
{
	unsigned line = 0, col = 0;
	size_t klen = 0;
	const char *k = lev_toml_table_key(t, i, &klen);

	lev_toml_table_key_pos(t, i, &line, &col);
	return lev_err_set(err, LEV_EPARSE, "%s:%u:%u: unknown key '%.*s' in %s (valid: %s)", file,
			   line, col, (int)(klen > 64 ? 64 : klen), k, where, valid);
}

static bool key_is(const struct lev_toml_table *t, size_t i, const char *word)
{
	size_t len = 0;
	const char *k = lev_toml_table_key(t, i, &len);

	return len == strlen(word) && memcmp(k, word, len) == 0;
}

static void datetime_str(const struct lev_toml_value *v, struct lev_buf *b)
{
	const struct lev_toml_datetime *d = &v->u.dt;

	if (v->type != LEV_TOML_TIME_LOCAL)
		lev_buf_addf(b, "%04d-%02d-%02d", d->year, d->month, d->day);
	if (v->type == LEV_TOML_DATE_LOCAL)
		return;
	if (v->type != LEV_TOML_TIME_LOCAL)
		lev_buf_addch(b, 'T');
	lev_buf_addf(b, "%02d:%02d:%02d", d->hour, d->minute, d->second);
	if (d->frac_digits) {
		char frac[16];
		snprintf(frac, sizeof(frac), "%09u", d->nanosecond);
		lev_buf_addf(b, ".%.*s", (int)d->frac_digits, frac);
	}
	if (v->type == LEV_TOML_DATETIME) {
		if (d->offset_z || d->offset_minutes == 0)
			lev_buf_addch(b, 'Z');
		else
			lev_buf_addf(b, "%c%02d:%02d", d->offset_minutes < 0 ? '-' : '+',
				     abs(d->offset_minutes) / 60, abs(d->offset_minutes) % 60);
	}
}

/* TOML value -> JSON (tables become objects, datetimes RFC 3339 strings). */
static int to_json(const struct lev_toml_value *v, const char *file, json_t **out,
		   struct lev_err *err)
{
	switch (v->type) {
	case LEV_TOML_STRING:
		*out = lev__jstrn(v->u.str.ptr, v->u.str.len);
		return 0;
	case LEV_TOML_INTEGER:
		*out = json_integer(v->u.integer);
		return 0;
	case LEV_TOML_FLOAT:
		if (!isfinite(v->u.flt))
			return fail_at(err, file, v, "cannot be inf or nan in JSON", "a float");
		*out = json_real(v->u.flt);
		return 0;
	case LEV_TOML_BOOL:
		*out = json_boolean(v->u.boolean);
		return 0;
	case LEV_TOML_DATETIME:
	case LEV_TOML_DATETIME_LOCAL:
	case LEV_TOML_DATE_LOCAL:
	case LEV_TOML_TIME_LOCAL: {
		struct lev_buf b = LEV_BUF_INIT;
		datetime_str(v, &b);
		*out = json_stringn(b.buf, b.len);
		lev_buf_release(&b);
		return 0;
	}
	case LEV_TOML_ARRAY: {
		json_t *a = json_array();
		for (size_t i = 0; i < lev_toml_array_len(v->u.array); i++) {
			json_t *e;
			int r = to_json(lev_toml_array_at(v->u.array, i), file, &e, err);
			if (r < 0) {
				json_decref(a);
				return r;
			}
			json_array_append_new(a, e);
		}
		*out = a;
		return 0;
	}
	case LEV_TOML_TABLE: {
		json_t *o = json_object();
		const struct lev_toml_table *t = v->u.table;
		for (size_t i = 0; i < lev_toml_table_len(t); i++) {
			size_t klen = 0;
			const char *k = lev_toml_table_key(t, i, &klen);
			json_t *e;
			int r;
			if (memchr(k, '\0', klen)) {
				json_decref(o);
				return fail_at(err, file, lev_toml_table_value(t, i),
					       "holds a NUL byte", "a key");
			}
			r = to_json(lev_toml_table_value(t, i), file, &e, err);
			if (r < 0) {
				json_decref(o);
				return r;
			}
			json_object_setn_new(o, k, klen, e);
		}
		*out = o;
		return 0;
	}
	}
	return fail_at(err, file, v, "has an unsupported type", "a value");
}

static int parse_call(const struct lev_toml_value *cv, size_t turn, size_t n, const char *file,
		      struct script_call *c, struct lev_err *err)
{
	const struct lev_toml_table *t;
	const struct lev_toml_value *args = NULL, *raw = NULL;

	if (cv->type != LEV_TOML_TABLE)
		return fail_at(err, file, cv, "must be a table", "'turn.call'");
	t = cv->u.table;
	for (size_t i = 0; i < lev_toml_table_len(t); i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		if (key_is(t, i, "tool")) {
			if (v->type != LEV_TOML_STRING || v->u.str.len == 0 ||
			    v->u.str.len > LEV_PROVIDER_MAX_NAME ||
			    memchr(v->u.str.ptr, '\0', v->u.str.len))
				return fail_at(err, file, v, "must be a non-empty string",
					       "'tool'");
			c->tool = xstrdup(v->u.str.ptr);
		} else if (key_is(t, i, "id")) {
			if (v->type != LEV_TOML_STRING || v->u.str.len == 0 ||
			    v->u.str.len > LEV_PROVIDER_MAX_NAME ||
			    memchr(v->u.str.ptr, '\0', v->u.str.len))
				return fail_at(err, file, v, "must be a non-empty string", "'id'");
			c->id = xstrdup(v->u.str.ptr);
		} else if (key_is(t, i, "args")) {
			if (v->type != LEV_TOML_TABLE)
				return fail_at(err, file, v, "must be a table", "'args'");
			args = v;
		} else if (key_is(t, i, "raw_args")) {
			if (v->type != LEV_TOML_STRING)
				return fail_at(err, file, v, "must be a string", "'raw_args'");
			raw = v;
		} else {
			return key_fail(err, file, t, i, "[[turn.call]]", "tool, args, raw_args, id");
		}
	}
	if (!c->tool) {
		unsigned line = 0, col = 0;
		lev_toml_table_pos(t, &line, &col);
		return lev_err_set(err, LEV_EPARSE, "%s:%u:%u: [[turn.call]] needs 'tool'", file,
				   line, col);
	}
	if (args && raw)
		return fail_at(err, file, raw, "cannot be combined with 'args'", "'raw_args'");
	if (raw) {
		c->raw = xstrndup(raw->u.str.ptr, raw->u.str.len);
	} else if (args) {
		json_t *j;
		int r = to_json(args, file, &j, err);
		if (r < 0)
			return r;
		c->raw = lev__json_compact(j);
		json_decref(j);
	} else {
		c->raw = xstrdup("{}");
	}
	if (!c->id)
		c->id = xasprintf("call_%zu_%zu", turn + 1, n + 1);
	return 0;
}

static int parse_turn(const struct lev_toml_value *tv, size_t idx, const char *file,
		      struct script_turn *turn, struct lev_err *err)
{
	const struct lev_toml_table *t;

	if (tv->type != LEV_TOML_TABLE)
		return fail_at(err, file, tv, "must be a table", "'turn'");
	t = tv->u.table;
	for (size_t i = 0; i < lev_toml_table_len(t); i++) {
		const struct lev_toml_value *v = lev_toml_table_value(t, i);
		if (key_is(t, i, "text")) {
			if (v->type != LEV_TOML_STRING)
				return fail_at(err, file, v, "must be a string", "'text'");
			turn->text = xstrndup(v->u.str.ptr, v->u.str.len);
		} else if (key_is(t, i, "call")) {
			size_t n;
			if (v->type != LEV_TOML_ARRAY)
				return fail_at(err, file, v, "must be an array of tables ([[turn.call]])",
					       "'call'");
			n = lev_toml_array_len(v->u.array);
			if (n > LEV_PROVIDER_MAX_CALLS)
				return fail_at(err, file, v, "has too many calls", "a turn");
			turn->calls = xcalloc(n ? n : 1, sizeof(*turn->calls));
			for (size_t j = 0; j < n; j++) {
				int r = parse_call(lev_toml_array_at(v->u.array, j), idx, j, file,
						   &turn->calls[j], err);
				turn->n_calls = j + 1;
				if (r < 0)
					return r;
			}
		} else {
			return key_fail(err, file, t, i, "[[turn]]", "text, call");
		}
	}
	return 0;
}

int lev_script_load(const char *path, struct lev_script **out, struct lev_err *err)
{
	struct lev_toml_doc *doc = NULL;
	const struct lev_toml_table *root;
	const struct lev_toml_value *turns = NULL;
	struct lev_script *s;
	size_t n;
	int r;

	if (!path)
		return lev_err_set(err, -EINVAL, "the script provider needs a script file");
	r = lev_toml_parse_file(path, &doc, err);
	if (r < 0)
		return r;
	root = lev_toml_root(doc);
	for (size_t i = 0; i < lev_toml_table_len(root); i++) {
		if (key_is(root, i, "turn")) {
			turns = lev_toml_table_value(root, i);
		} else {
			r = key_fail(err, path, root, i, "the script", "turn");
			lev_toml_free(doc);
			return r;
		}
	}
	if (turns && turns->type != LEV_TOML_ARRAY) {
		r = fail_at(err, path, turns, "must be an array of tables ([[turn]])", "'turn'");
		lev_toml_free(doc);
		return r;
	}
	n = turns ? lev_toml_array_len(turns->u.array) : 0;
	if (n > SCRIPT_MAX_TURNS) {
		r = fail_at(err, path, turns, "has more than 10000 turns", "the script");
		lev_toml_free(doc);
		return r;
	}
	s = xcalloc(1, sizeof(*s));
	s->turns = xcalloc(n ? n : 1, sizeof(*s->turns));
	for (size_t i = 0; i < n; i++) {
		s->n_turns = i + 1;
		r = parse_turn(lev_toml_array_at(turns->u.array, i), i, path, &s->turns[i], err);
		if (r < 0) {
			lev_script_free(s);
			lev_toml_free(doc);
			return r;
		}
	}
	lev_toml_free(doc);
	*out = s;
	return 0;
}

void lev_script_skip(struct lev_script *s)
{
	if (s && s->next < s->n_turns)
		s->next++;
}

int lev_script_next(struct lev_script *s, struct lev_infer_response *out, struct lev_err *err)
{
	struct lev_infer_response r = { 0 };
	const struct script_turn *t;

	(void)err;
	if (s->next >= s->n_turns) {
		r.text = xstrdup("");
		r.finish = LEV_FINISH_SCRIPT_END;
		*out = r;
		return 0;
	}
	t = &s->turns[s->next++];
	r.text = xstrdup(t->text ? t->text : "");
	for (size_t i = 0; i < t->n_calls; i++) {
		struct lev_tool_call *c = lev__response_add_call(&r);
		c->id = xstrdup(t->calls[i].id);
		c->name = xstrdup(t->calls[i].tool);
		lev__tool_call_set_raw(c, t->calls[i].raw, strlen(t->calls[i].raw));
	}
	r.finish = t->n_calls ? LEV_FINISH_TOOL_CALLS : LEV_FINISH_STOP;
	*out = r;
	return 0;
}
