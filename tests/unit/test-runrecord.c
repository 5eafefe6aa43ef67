/*
 * test-runrecord.c - the run record's lines: an event is written exactly as
 * json_dumps(JSON_COMPACT | JSON_ENSURE_ASCII) gives it (runrecord.c writes
 * the text itself), behind "ts" and "seq"; audit lines and events share
 * the record's buffers without leaking into each other.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/run/runrecord.h"

struct fx {
	char *dir;
	struct lev_runrecord *rr;
};

static int setup(void **state)
{
	char tmpl[] = "/tmp/lev-test-runrecord.XXXXXX";
	struct fx *f = xcalloc(1, sizeof(*f));

	assert_non_null(mkdtemp(tmpl));
	f->dir = xstrdup(tmpl);
	assert_int_equal(lev_runrecord_create(f->dir, &f->rr, NULL), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	lev_runrecord_free(f->rr);
	(void)lev_rm_rf(f->dir, NULL);
	free(f->dir);
	free(f);
	return 0;
}

/* The line for OBJ is {"ts":"...","seq":N followed by jansson's text of OBJ after its '{'. */
static void expect_jansson(struct fx *f, json_t *obj, unsigned long long seq)
{
	char *line = NULL, *want = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);
	char head[64];
	const char *rest;

	assert_non_null(want);
	assert_int_equal(lev_runrecord_event(f->rr, obj, &line, NULL), 0);
	assert_non_null(line);
	assert_int_equal(strncmp(line, "{\"ts\":\"", 7), 0);
	snprintf(head, sizeof(head), "\",\"seq\":%llu", seq);
	rest = strstr(line, head);
	assert_non_null(rest);
	rest += strlen(head);
	if (strcmp(want, "{}") == 0) {
		assert_string_equal(rest, "}");
	} else {
		assert_int_equal(rest[0], ',');
		assert_string_equal(rest + 1, want + 1);
	}
	free(want);
	free(line);
	json_decref(obj);
}

/* Every escape jansson writes, in the order it writes them. */
static void test_event_text_is_jansson_text(void **state)
{
	static const char odd[] = "a\"b\\c/d\b\f\n\r\t\x01\x1f\x7f"	/* controls, DEL */
				  "\xc3\xa9\xe2\x80\xa8\xef\xbf\xbd"		/* e-acute, U+2028, U+FFFD */
				  "\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf";		/* astral: surrogates */
	struct fx *f = *state;
	unsigned long long seq = 0;
	json_t *o;

	o = json_object();
	expect_jansson(f, o, ++seq);

	o = json_pack("{s:s, s:i, s:b, s:b, s:n}", "event", "x", "n", -42, "t", 1, "f", 0, "z");
	json_object_set_new(o, "s", json_stringn(odd, sizeof(odd) - 1));
	json_object_set_new(o, "nul", json_stringn("a\0b", 3));
	json_object_set_new(o, "big", json_integer(INT64_MAX));
	json_object_set_new(o, "small", json_integer(INT64_MIN));
	json_object_set_new(o, odd, json_string("key with escapes"));
	json_object_set_new(o, "arr", json_pack("[s,i,[],{},[{s:[n]}]]", "\xc3\xa9", 0, "k"));
	json_object_set_new(o, "empty", json_string(""));
	expect_jansson(f, o, ++seq);

	/* a real is left to jansson's own formatting */
	o = json_pack("{s:s, s:f, s:{s:f}}", "event", "r", "a", 0.1, "b", "c", 1e5);
	expect_jansson(f, o, ++seq);

	/* deep nesting is left to jansson too, with the same text */
	o = json_object();
	{
		json_t *cur = o;

		for (int i = 0; i < 100; i++) {
			json_t *next = json_object();

			json_object_set_new(cur, "d", next);
			cur = next;
		}
	}
	expect_jansson(f, o, ++seq);
}

/* Many generated objects: the same text as jansson, byte for byte. */
static void test_generated_events(void **state)
{
	static const char *const pieces[] = {
		"plain", "", "\"", "\\", "\n", "\x02", "\x7f", "\xc3\xa9", "\xe4\xb8\xad",
		"\xf0\x9f\x8e\x89", "/", " ", "{}", "\xed\x9f\xbf", "\xee\x80\x80",
	};
	struct fx *f = *state;
	unsigned long long seq = 0;
	unsigned x = 12345;

	for (int n = 0; n < 300; n++) {
		json_t *o = json_object(), *arr = json_array();

		for (int k = 0; k < 6; k++) {
			char key[32], val[128] = "";
			size_t parts;

			x = x * 1103515245u + 12345u;
			parts = (x >> 16) % 8;
			for (size_t p = 0; p < parts; p++) {
				x = x * 1103515245u + 12345u;
				strcat(val, pieces[(x >> 16) % (sizeof(pieces) / sizeof(*pieces))]);
			}
			snprintf(key, sizeof(key), "k%d%s", k, k == 3 ? "\xc3\xa9" : "");
			json_object_set_new(o, key, json_string(val));
			json_array_append_new(arr, (x >> 8) & 1 ? json_string(val)
							       : json_integer((json_int_t)x - 99999));
		}
		json_object_set_new(o, "list", arr);
		expect_jansson(f, o, ++seq);
	}
}

/* Audit lines and events share the record's buffers: each comes out whole and alone. */
static void test_audit_and_events_interleave(void **state)
{
	struct fx *f = *state;
	struct lev_audit a = {
		.stage = "main", .call_id = "c1", .tool = "read_file", .gate = "workdir",
		.rule = "confined to the workdir", .decision = "allow", .target = "/w/a.txt",
		.has_taint = true, .taint = LEV_PUBLIC,
	};
	char *path = xasprintf("%s/%s/audit.jsonl", f->dir, lev_runrecord_id(f->rr));
	char *text = NULL;
	size_t len = 0;
	json_t *ev = json_pack("{s:s, s:s}", "event", "tool_call", "id", "c1");
	json_error_t je;
	int lines = 0;

	assert_int_equal(lev_runrecord_audit(f->rr, &a, NULL), 0);
	assert_int_equal(lev_runrecord_event(f->rr, ev, NULL, NULL), 0);
	a.gate = "taint";
	a.rule = "not_outbound";
	assert_int_equal(lev_runrecord_audit(f->rr, &a, NULL), 0);
	assert_int_equal(lev_runrecord_flush(f->rr, NULL), 0);
	json_decref(ev);

	assert_int_equal(lev_read_file(path, 1 << 20, &text, &len, NULL), 0);
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		json_t *j = json_loads(l, 0, &je);

		assert_non_null(j);
		assert_string_equal(json_string_value(json_object_get(j, "call")), "c1");
		assert_null(json_object_get(j, "event"));
		assert_string_equal(json_string_value(json_object_get(j, "gate")),
				    lines ? "taint" : "workdir");
		assert_int_equal(json_integer_value(json_object_get(j, "seq")), lines + 1);
		json_decref(j);
		lines++;
	}
	assert_int_equal(lines, 2);
	free(text);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_event_text_is_jansson_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_generated_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_and_events_interleave, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
