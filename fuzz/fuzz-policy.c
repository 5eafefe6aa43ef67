/*
 * fuzz-policy.c - lev_policy_parse() on arbitrary bytes.
 *
 * Besides "no crash, no leak, no UB": a failed parse leaves a one-line
 * message naming "fuzz:"; a successful one has levels and directions in
 * range, canonical patterns (canonicalising again changes nothing),
 * one-line warnings, and matching and classification work on it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/policy/policy.h"
#include "liblev/base/strv.h"
#include "liblev/policy/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

/* A target PAT matches (for "*.x": "a.x", "*@x": "u@x", "p*": "pa"). */
static char *sample_target(const char *pat)
{
	size_t l = strlen(pat);
	char *t = malloc(l + 4);

	CHECK(t);
	if (pat[0] == '*' && pat[1] == '.')
		sprintf(t, "a%s", pat + 1);
	else if (pat[0] == '*' && pat[1] == '@')
		sprintf(t, "u%s", pat + 1);
	else if (l && pat[l - 1] == '*')
		sprintf(t, "%.*sa", (int)(l - 1), pat);
	else
		sprintf(t, "%s", pat);
	return t;
}

/* The index must agree with trying every rule, for targets the rules name. */
static void check_index(const struct lev_policy *p)
{
	size_t i, k;
	int lvl;

	for (i = 0; i < p->n_rules; i++) {
		char *const *lists[2] = { p->rules[i].to, p->rules[i].channel };

		for (lvl = 0; lvl < _LEV_LEVEL_MAX; lvl++)
			CHECK(lev_policy_match(p, p->rules[i].tool, NULL, (enum lev_level)lvl) ==
			      lev_policy_match_linear(p, p->rules[i].tool, NULL, (enum lev_level)lvl));
		for (k = 0; k < 2; k++) {
			char *const *q;

			for (q = lists[k]; q && *q; q++) {
				char *t = sample_target(*q);
				char *one[] = { t, NULL };
				char *two[] = { t, (char *)"b.example.com", NULL };

				for (lvl = 0; lvl < _LEV_LEVEL_MAX; lvl++) {
					CHECK(lev_policy_match(p, p->rules[i].tool, one, (enum lev_level)lvl) ==
					      lev_policy_match_linear(p, p->rules[i].tool, one,
								      (enum lev_level)lvl));
					CHECK(lev_policy_match(p, p->rules[i].tool, two, (enum lev_level)lvl) ==
					      lev_policy_match_linear(p, p->rules[i].tool, two,
								      (enum lev_level)lvl));
				}
				free(t);
			}
		}
	}
}

static void check_patterns(char *const *v)
{
	for (; v && *v; v++) {
		char *again = NULL;

		CHECK(lev_target_pattern_canon(*v, &again, NULL) == 0);
		CHECK(strcmp(again, *v) == 0);
		free(again);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *targets[] = { (char *)"a.example.com", (char *)"bob@example.com",
				   (char *)"#team", NULL };
	struct lev_err err = LEV_ERR_INIT;
	struct lev_policy *p = NULL;
	struct lev_tool_class c;
	char **w;
	size_t i;
	int m;

	if (lev_policy_parse((const char *)data, size, "fuzz", &p, &err) < 0) {
		CHECK(p == NULL);
		CHECK(err.msg[0] != '\0');
		CHECK(!strchr(err.msg, '\n'));
		return 0;
	}
	for (w = p->warnings; w && *w; w++)
		CHECK(!strchr(*w, '\n') && !strncmp(*w, "fuzz:", 5));
	for (i = 0; i < p->n_rules; i++) {
		const struct lev_allow_rule *r = &p->rules[i];

		CHECK(r->tool && r->tool[0]);
		CHECK(r->max_sensitivity < _LEV_LEVEL_MAX);
		check_patterns(r->to);
		check_patterns(r->channel);
		m = lev_policy_match(p, r->tool, targets, LEV_PUBLIC);
		CHECK(m >= -1 && m < (int)p->n_rules);
		/* a rule without patterns matches any target at any level it covers */
		if (!r->to && !r->channel)
			CHECK(m >= 0 && (size_t)m <= i);
		CHECK(lev_policy_match(p, r->tool, NULL, LEV_PRIVATE) < (int)p->n_rules);
	}
	check_index(p);
	for (i = 0; i < p->n_overrides; i++) {
		const struct lev_tool_override *o = &p->overrides[i];

		lev_policy_classify(p, o->name, &c);
		CHECK(c.sensitivity < _LEV_LEVEL_MAX && c.clearance < _LEV_LEVEL_MAX);
		CHECK(c.direction < _LEV_DIR_MAX);
		if (o->has_direction)
			CHECK(c.direction == o->direction);
		if (o->target)
			CHECK(c.target_from == LEV_TARGET_FROM_ARG && !strcmp(c.target_arg, o->target));
	}
	lev_policy_free(p);
	return 0;
}
