/*
 * fuzz-blueprint.c - lev_blueprint_parse() on arbitrary bytes.
 *
 * Besides "no crash, no leak, no UB": a failed parse leaves a one-line
 * message; a successful one satisfies the documented invariants (at least
 * one stage, entry stage and every next/transition name a stage, tools are
 * canonical, required tools are offered, engines are stripped, regions
 * exist).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/conf/blueprint.h"
#include "liblev/conf/datadir.h"
#include "liblev/policy/lint.h"
#include "liblev/base/strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lev_blueprint *bp = NULL;
	struct lev_err err = LEV_ERR_INIT;
	enum lev_verdict v;
	size_t i, j;

	if (lev_blueprint_parse((const char *)data, size, "fuzz", "/fuzz", &bp, &err) < 0) {
		CHECK(bp == NULL);
		CHECK(err.msg[0] != '\0');
		CHECK(!strchr(err.msg, '\n'));
		return 0;
	}
	CHECK(lev_agent_name_valid(bp->name));
	CHECK(bp->n_stages >= 1 && bp->n_regions >= 1);
	CHECK(lev_blueprint_stage(bp, bp->entry_stage));
	CHECK(bp->sandbox.engine == NULL);
	for (i = 0; i < bp->n_stages; i++) {
		const struct lev_stage *st = &bp->stages[i];

		CHECK(st->mode < _LEV_MODE_MAX);
		CHECK(st->sandbox.engine == NULL);
		CHECK(!st->next || lev_blueprint_stage(bp, st->next));
		for (j = 0; j < st->n_transitions; j++)
			CHECK(lev_blueprint_stage(bp, st->transitions[j].target));
		CHECK(!lev_strv_contains(st->available_tools, "bash"));
		for (j = 0; st->required_tools && st->required_tools[j]; j++)
			CHECK(lev_strv_contains(st->available_tools, st->required_tools[j]));
		(void)lev_blueprint_tool_verdict(bp, st, "shell", &v);
		(void)lev_blueprint_stage_sandbox(bp, st);
	}
	for (i = 0; i < bp->n_regions; i++) {
		CHECK(bp->regions[i].kind < _LEV_REGION_KIND_MAX);
		CHECK(bp->regions[i].budget_pct <= 100);
		CHECK(bp->regions[i].seed.kind != LEV_SEED_TOOL || bp->regions[i].seed.args_json);
	}
	(void)lev_blueprint_wants_taint(bp);

	/* the findings and the inventory, with no config and with the defaults */
	{
		struct lev_findings f = { NULL, 0 };
		struct lev_config c;
		char **lines = NULL;

		lev_config_init(&c);
		CHECK(lev_lint(bp, NULL, "/work", "/home/u", &f, &err) == 0);
		CHECK(lev_lint(bp, &c, "/work", "/home/u", &f, &err) == 0);
		for (i = 0; i < f.n; i++)
			CHECK(f.v[i].severity < _LEV_SEV_MAX && !strchr(f.v[i].message, '\n'));
		lev_findings_release(&f);
		lev_lint_inventory(bp, &c, "/work", "/home/u", &lines);
		lev_strv_free(lines);
		lev_config_release(&c);
	}
	lev_blueprint_free(bp);
	return 0;
}
