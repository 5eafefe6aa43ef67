/*
 * test-tooltable.c - the tool table: one entry per name and per op, the
 * facts each layer reads from it, and the registry built from it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/base/tooltable.h"
#include "liblev/tools/tools.h"

/* Every spelling in the table, once. */
static void test_every_name_and_alias_is_unique(void **state)
{
	size_t i, j, n = lev_tooltable_count();

	(void)state;
	for (i = 0; i < n; i++) {
		const struct lev_tool_desc *a = lev_tooltable_at(i);

		assert_ptr_equal(lev_tooltable_find(a->name), a);
		for (const char *const *al = a->aliases; al && *al; al++) {
			assert_ptr_equal(lev_tooltable_find(*al), a);
			assert_string_equal(lev_tool_canonical(*al), a->name);
		}
		for (j = i + 1; j < n; j++)
			assert_string_not_equal(a->name, lev_tooltable_at(j)->name);
	}
	assert_null(lev_tooltable_at(n));
	assert_null(lev_tooltable_find(NULL));
	assert_null(lev_tooltable_find("github__create_issue"));
	assert_string_equal(lev_tool_canonical("github__create_issue"), "github__create_issue");
	assert_true(lev_tool_same("bash", lev_tooltable_name(LEV_OP_SHELL)));
	assert_false(lev_tool_same("bash", lev_tooltable_name(LEV_OP_READ_FILE)));
}

/* Each handler runs exactly one tool; a foreign name has none. */
static void test_each_op_has_one_entry(void **state)
{
	size_t i, n = lev_tooltable_count();
	unsigned seen[_LEV_OP_MAX] = { 0 };

	(void)state;
	for (i = 0; i < n; i++) {
		const struct lev_tool_desc *d = lev_tooltable_at(i);

		if (d->flags & LEV_TOOLF_FOREIGN) {
			assert_int_equal(d->op, LEV_OP_NONE);
			assert_null(d->description);
			assert_int_equal(d->touches, 0);
			continue;
		}
		assert_true(d->op > LEV_OP_NONE && d->op < _LEV_OP_MAX);
		assert_non_null(d->description);
		seen[d->op]++;
		assert_ptr_equal(lev_tooltable_op(d->op), d);
		assert_true(lev_tooltable_is(d->name, d->op));
	}
	for (i = LEV_OP_NONE + 1; i < _LEV_OP_MAX; i++)
		assert_int_equal(seen[i], 1);
	assert_null(lev_tooltable_op(LEV_OP_NONE));
	assert_string_equal(lev_tooltable_name(LEV_OP_NONE), "");
	assert_false(lev_tooltable_is("fetch", LEV_OP_NONE));
}

/* The facts the lower layers read: what the old per-module lists said. */
static void test_facts(void **state)
{
	(void)state;
	assert_true(lev_tooltable_is("bash", LEV_OP_SHELL));
	assert_true(lev_tooltable_touches("bash", LEV_TOUCH_SHELL));
	assert_false(lev_tooltable_touches("read_file", LEV_TOUCH_SHELL | LEV_TOUCH_WRITES));
	assert_true(lev_tooltable_touches("edit_file", LEV_TOUCH_WRITES));
	assert_int_equal(lev_tooltable_flags("unknown_tool"), 0);
	/* only the read-only web tools may be pre-approved by a blueprint */
	for (size_t i = 0; i < lev_tooltable_count(); i++) {
		const struct lev_tool_desc *d = lev_tooltable_at(i);
		bool web = d->op == LEV_OP_WEB_FETCH || d->op == LEV_OP_WEB_SEARCH;
		bool file = d->op == LEV_OP_READ_FILE || d->op == LEV_OP_READ_FILES ||
			    d->op == LEV_OP_LIST_DIR;

		assert_int_equal(!!(d->flags & LEV_TOOLF_BLUEPRINT_ALLOW), web);
		assert_int_equal(!!(d->flags & LEV_TOOLF_FILE_RESULT), file);
		/* nothing that writes, runs or sends is allowed without asking */
		if (d->touches & (LEV_TOUCH_WRITES | LEV_TOUCH_NETWORK | LEV_TOUCH_SHELL))
			assert_false(d->flags & LEV_TOOLF_DEFAULT_ALLOW);
	}
}

/* The registry offers lev's own tools, in table order, each with its entry. */
static void test_registry_is_the_table(void **state)
{
	struct lev_tools *t = NULL;
	size_t i, k = 0;

	(void)state;
	assert_int_equal(lev_tools_new(&t, NULL), 0);
	for (i = 0; i < lev_tooltable_count(); i++) {
		const struct lev_tool_desc *d = lev_tooltable_at(i);
		const struct lev_tool_info *ti = lev_tools_find(t, d->name);

		if (d->flags & LEV_TOOLF_FOREIGN) {
			assert_null(ti);
			continue;
		}
		assert_non_null(ti);
		assert_ptr_equal(lev_tools_at(t, k++), ti);
		assert_ptr_equal(ti->desc, d);
		assert_int_equal(ti->op, d->op);
		assert_int_equal(ti->kind, d->kind);
		assert_int_equal(ti->outbound, d->direction == LEV_DIR_OUTBOUND);
		assert_non_null(ti->schema);
	}
	assert_int_equal(lev_tools_count(t), k);
	assert_ptr_equal(lev_tools_find(t, "bash"), lev_tools_find(t, "shell"));
	lev_tools_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_name_and_alias_is_unique),
		cmocka_unit_test(test_each_op_has_one_entry),
		cmocka_unit_test(test_facts),
		cmocka_unit_test(test_registry_is_the_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
