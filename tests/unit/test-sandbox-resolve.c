/*
 * test-sandbox-resolve.c - the [sandbox] clamps (leviath-spec §5.2, §8
 * "Sandbox clamps", Appendix A section A: crates/leviath-core/src/sandbox.rs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "liblev/sandbox/sandbox.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"

/* A block as a config or blueprint would write it. */
static struct lev_sandbox_spec block(int kind, const char *image, const char *engine,
				     int network, const char *mount1, const char *mount2,
				     int onun)
{
	struct lev_sandbox_spec s;

	memset(&s, 0, sizeof(s));
	s.present = true;
	if (kind >= 0) {
		s.has_kind = true;
		s.kind = (enum lev_sandbox_kind)kind;
	}
	s.image = image ? xstrdup(image) : NULL;
	s.engine = engine ? xstrdup(engine) : NULL;
	if (network >= 0) {
		s.has_network = true;
		s.network = network;
	}
	if (mount1)
		s.mounts = lev_strv_push(s.mounts, mount1);
	if (mount2)
		s.mounts = lev_strv_push(s.mounts, mount2);
	if (onun >= 0) {
		s.has_on_unavailable = true;
		s.on_unavailable = (enum lev_on_unavailable)onun;
	}
	return s;
}

#define NONE LEV_SANDBOX_NONE
#define NS LEV_SANDBOX_NAMESPACE
#define CT LEV_SANDBOX_CONTAINER
#define ERR LEV_ON_UNAVAILABLE_ERROR
#define WARN LEV_ON_UNAVAILABLE_WARN
#define UNSET -1

static void assert_complete(const struct lev_sandbox_spec *o)
{
	assert_true(o->present);
	assert_true(o->has_kind);
	assert_true(o->has_network);
	assert_true(o->has_on_unavailable);
}

static void test_isolation_ranks_container_above_namespace_above_host(void **state)
{
	(void)state;
	assert_true(LEV_SANDBOX_CONTAINER > LEV_SANDBOX_NAMESPACE);
	assert_true(LEV_SANDBOX_NAMESPACE > LEV_SANDBOX_NONE);
}

static void test_nothing_set_is_host(void **state)
{
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(NULL, NULL, NULL, &o);
	assert_complete(&o);
	assert_int_equal(o.kind, NONE);
	assert_true(o.network);
	assert_int_equal(o.on_unavailable, ERR);
	assert_null(o.image);
	assert_null(o.engine);
	assert_null(o.mounts);
	lev_sandbox_spec_release(&o);
}

static void test_default_is_host_passthrough(void **state)
{
	struct lev_sandbox_spec absent, o;

	(void)state;
	memset(&absent, 0, sizeof(absent));
	lev_sandbox_resolve(&absent, &absent, &absent, &o);
	assert_int_equal(o.kind, NONE);
	lev_sandbox_spec_release(&o);
}

static void test_global_used_when_no_agent_or_stage(void **state)
{
	struct lev_sandbox_spec g = block(CT, "debian:bookworm-slim", "podman", 0, "/opt/tool", NULL, WARN);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(&g, NULL, NULL, &o);
	assert_complete(&o);
	assert_int_equal(o.kind, CT);
	assert_string_equal(o.image, "debian:bookworm-slim");
	assert_string_equal(o.engine, "podman");
	assert_false(o.network);
	assert_int_equal(lev_strv_len(o.mounts), 1);
	assert_string_equal(o.mounts[0], "/opt/tool");
	assert_int_equal(o.on_unavailable, WARN);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
}

static void test_manifest_cannot_disable_the_users_sandbox(void **state)
{
	struct lev_sandbox_spec g = block(CT, "debian", NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec agent = block(NONE, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec no_kind = block(UNSET, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	/* agent level */
	lev_sandbox_resolve(&g, &agent, NULL, &o);
	assert_int_equal(o.kind, CT);
	assert_string_equal(o.image, "debian");
	lev_sandbox_spec_release(&o);
	/* stage level */
	lev_sandbox_resolve(&g, NULL, &agent, &o);
	assert_int_equal(o.kind, CT);
	lev_sandbox_spec_release(&o);
	/* a block without kind means none, and is refused the same way */
	lev_sandbox_resolve(&g, &no_kind, NULL, &o);
	assert_int_equal(o.kind, CT);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
	lev_sandbox_spec_release(&no_kind);
}

static void test_a_manifest_cannot_trade_a_container_for_a_namespace(void **state)
{
	struct lev_sandbox_spec g = block(CT, "debian", NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec agent = block(NS, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(&g, &agent, NULL, &o);
	assert_int_equal(o.kind, CT);
	assert_string_equal(o.image, "debian");
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
}

static void test_a_manifest_cannot_widen_a_sandbox_the_user_configured(void **state)
{
	struct lev_sandbox_spec g = block(CT, "debian", "podman", 0, "/opt/tool", NULL, ERR);
	struct lev_sandbox_spec agent = block(CT, "evil:latest", "/tmp/evil-engine", 1, "/home/me",
					      "/opt/tool", WARN);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(&g, &agent, NULL, &o);
	assert_int_equal(o.kind, CT);
	assert_false(o.network);			/* cannot turn the network back on */
	assert_int_equal(lev_strv_len(o.mounts), 1);	/* only mounts the user listed */
	assert_string_equal(o.mounts[0], "/opt/tool");
	assert_string_equal(o.engine, "podman");	/* never the manifest's engine */
	assert_string_equal(o.image, "debian");		/* the user's pinned image wins */
	assert_int_equal(o.on_unavailable, ERR);	/* the user's on_unavailable wins */
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
}

static void test_mounts_are_the_users_whatever_the_blueprint_lists(void **state)
{
	struct lev_sandbox_spec g = block(NS, NULL, NULL, UNSET, "/opt/tool", NULL, UNSET);
	struct lev_sandbox_spec agent = block(CT, "x", NULL, UNSET, "/opt/tool/", "/opt", UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(&g, &agent, NULL, &o);
	assert_int_equal(lev_strv_len(o.mounts), 1);
	assert_string_equal(o.mounts[0], "/opt/tool");
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
}

static void test_a_manifest_can_never_choose_the_container_engine(void **state)
{
	struct lev_sandbox_spec agent = block(CT, "x", "/tmp/evil-engine", UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec g_noengine = block(CT, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec g_inactive = block(NONE, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(NULL, &agent, NULL, &o);		/* opting in from nothing */
	assert_int_equal(o.kind, CT);
	assert_null(o.engine);
	lev_sandbox_spec_release(&o);
	lev_sandbox_resolve(&g_noengine, &agent, NULL, &o);	/* clamped, the user named none */
	assert_null(o.engine);
	lev_sandbox_spec_release(&o);
	lev_sandbox_resolve(&g_inactive, NULL, &agent, &o);	/* the user's block is inactive */
	assert_null(o.engine);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&agent);
	lev_sandbox_spec_release(&g_noengine);
	lev_sandbox_spec_release(&g_inactive);
}

static void test_the_users_engine_survives_a_manifest_that_names_none(void **state)
{
	struct lev_sandbox_spec g = block(CT, "debian", "podman", UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec agent = block(CT, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(&g, &agent, NULL, &o);
	assert_string_equal(o.engine, "podman");
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
}

static void test_a_manifest_may_still_choose_its_own_isolation_and_narrow(void **state)
{
	struct lev_sandbox_spec g = block(NS, NULL, NULL, 1, "/a", "/b", UNSET);
	struct lev_sandbox_spec agent = block(CT, "node:22-slim", NULL, 0, "/a", NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(&g, &agent, NULL, &o);
	assert_int_equal(o.kind, CT);			/* stronger kind */
	assert_null(o.image);				/* never its own image */
	assert_false(o.network);			/* narrowed */
	assert_int_equal(lev_strv_len(o.mounts), 2);	/* the user's mounts */
	assert_string_equal(o.mounts[0], "/a");
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
}

static void test_a_manifest_opting_in_from_nothing_keeps_only_its_fence(void **state)
{
	struct lev_sandbox_spec agent = block(CT, "node:22", "docker", 1, "/data", NULL, WARN);
	struct lev_sandbox_spec g_inactive = block(NONE, "debian", NULL, 0, NULL, NULL, ERR);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(NULL, &agent, NULL, &o);
	assert_int_equal(o.kind, CT);
	assert_null(o.image);				/* the image is the user's only */
	assert_true(o.network);
	assert_null(o.mounts);				/* so are the mounts */
	assert_int_equal(o.on_unavailable, ERR);	/* the user's default, error, wins */
	assert_null(o.engine);				/* engine still stripped */
	lev_sandbox_spec_release(&o);
	/* issue 13 class 2: a user block with kind none still holds its other fields */
	lev_sandbox_resolve(&g_inactive, &agent, NULL, &o);
	assert_int_equal(o.kind, CT);
	assert_string_equal(o.image, "debian");
	assert_false(o.network);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&agent);
	lev_sandbox_spec_release(&g_inactive);
}

static void test_manifest_may_opt_into_a_sandbox_the_user_did_not_set(void **state)
{
	struct lev_sandbox_spec agent = block(NS, NULL, NULL, 0, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(NULL, &agent, NULL, &o);
	assert_int_equal(o.kind, NS);
	assert_false(o.network);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&agent);
}

static void test_stage_overrides_agent_and_global(void **state)
{
	struct lev_sandbox_spec g = block(NS, NULL, NULL, UNSET, "/m", NULL, UNSET);
	struct lev_sandbox_spec agent = block(CT, "a:1", NULL, 1, "/m", NULL, UNSET);
	struct lev_sandbox_spec stage = block(CT, "b:2", NULL, 0, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(&g, &agent, &stage, &o);
	assert_int_equal(o.kind, CT);
	assert_null(o.image);
	assert_false(o.network);	/* the stage's false; the agent's true is not merged in */
	assert_int_equal(lev_strv_len(o.mounts), 1);	/* the user's */
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
	lev_sandbox_spec_release(&stage);
}

static void test_a_stage_block_without_kind_replaces_the_agent_block(void **state)
{
	struct lev_sandbox_spec agent = block(CT, "a:1", NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec stage = block(UNSET, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(NULL, &agent, &stage, &o);
	assert_int_equal(o.kind, NONE);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&agent);
	lev_sandbox_spec_release(&stage);
}

static void test_agent_overrides_global_when_no_stage(void **state)
{
	struct lev_sandbox_spec g = block(NS, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec agent = block(CT, "a:1", NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec absent_stage;
	struct lev_sandbox_spec o;

	(void)state;
	memset(&absent_stage, 0, sizeof(absent_stage));
	lev_sandbox_resolve(&g, &agent, &absent_stage, &o);
	assert_int_equal(o.kind, CT);
	assert_null(o.image);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
}

static void test_network_defaults_to_on_and_either_side_can_turn_it_off(void **state)
{
	struct lev_sandbox_spec g_on = block(NS, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec g_off = block(NS, NULL, NULL, 0, NULL, NULL, UNSET);
	struct lev_sandbox_spec a_on = block(NS, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec a_off = block(NS, NULL, NULL, 0, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(&g_on, &a_on, NULL, &o);
	assert_true(o.network);
	lev_sandbox_spec_release(&o);
	lev_sandbox_resolve(&g_on, &a_off, NULL, &o);
	assert_false(o.network);
	lev_sandbox_spec_release(&o);
	lev_sandbox_resolve(&g_off, &a_on, NULL, &o);
	assert_false(o.network);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g_on);
	lev_sandbox_spec_release(&g_off);
	lev_sandbox_spec_release(&a_on);
	lev_sandbox_spec_release(&a_off);
}

static void test_deny_read_is_always_the_users(void **state)
{
	struct lev_sandbox_spec g = block(NONE, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec agent = block(NS, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	g.deny_read = lev_strv_push(NULL, "~/private");
	agent.deny_read = lev_strv_push(NULL, "/ignored-from-a-blueprint");
	lev_sandbox_resolve(&g, &agent, NULL, &o);
	assert_int_equal(lev_strv_len(o.deny_read), 1);
	assert_string_equal(o.deny_read[0], "~/private");
	lev_sandbox_spec_release(&o);
	lev_sandbox_resolve(NULL, &agent, NULL, &o);
	assert_null(o.deny_read);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
}

/* [sandbox] writable: the user's list; a blueprint's only narrows it. */
static void test_writable_is_the_users_narrowed_by_the_blueprint(void **state)
{
	struct lev_sandbox_spec g = block(NONE, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec agent = block(NONE, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	g.writable = lev_strv_push(lev_strv_push(NULL, "~/.cache"), "~/.cargo");
	lev_sandbox_resolve(&g, &agent, NULL, &o);	/* the blueprint writes none */
	assert_int_equal(lev_strv_len(o.writable), 2);
	lev_sandbox_spec_release(&o);
	agent.has_writable = true;
	agent.writable = lev_strv_push(lev_strv_push(lev_strv_push(NULL, "~/.cache/pip"), "/etc"),
				       "~/.cargo-evil");
	lev_sandbox_resolve(&g, &agent, NULL, &o);
	assert_int_equal(lev_strv_len(o.writable), 1);
	assert_string_equal(o.writable[0], "~/.cache/pip");
	lev_sandbox_spec_release(&o);
	lev_sandbox_resolve(NULL, &agent, NULL, &o);	/* no user list: nothing */
	assert_null(o.writable);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
}

static void test_is_active_true_for_isolating_kinds(void **state)
{
	struct lev_sandbox_spec g_ns = block(NS, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec a_none = block(NONE, NULL, NULL, UNSET, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	/* a namespace user sandbox is active: a blueprint cannot switch it off */
	lev_sandbox_resolve(&g_ns, &a_none, NULL, &o);
	assert_int_equal(o.kind, NS);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g_ns);
	lev_sandbox_spec_release(&a_none);
}

/*
 * Issue 13, class 2: every field merges by its own rule, whatever the other
 * fields say.  The whole cross product of a user block and a blueprint block
 * (each absent, or present with every field unset or set to each value) is
 * resolved with the blueprint block at the agent level, at the stage level,
 * and at the stage level over an agent block that must not leak in; each
 * field of the result is checked against its own table below.
 */
enum { F_ABSENT, F_UNSET, F_V1, F_V2, F_V3 };	/* column/row index of a table */

/* kind: absent, unset (none), none, namespace, container */
static const int kind_table[5][5] = {
	/* bp:     absent unset none  ns   ct */
	/* absent */ { NONE, NONE, NONE, NS, CT },
	/* unset  */ { NONE, NONE, NONE, NS, CT },
	/* none   */ { NONE, NONE, NONE, NS, CT },
	/* ns     */ { NS, NS, NS, NS, CT },
	/* ct     */ { CT, CT, CT, CT, CT },
};

/* network: absent, unset, true, false; 1 = on */
static const int net_table[4][4] = {
	/* bp:      absent unset true false */
	/* absent */ { 1, 1, 1, 0 },
	/* unset  */ { 1, 1, 1, 0 },
	/* true   */ { 1, 1, 1, 0 },
	/* false  */ { 0, 0, 0, 0 },
};

/* on_unavailable: absent, unset, error, warn */
static const int onun_table[4][4] = {
	/* bp:      absent unset error warn */
	/* absent */ { ERR, ERR, ERR, ERR },
	/* unset  */ { ERR, ERR, ERR, ERR },
	/* error  */ { ERR, ERR, ERR, ERR },
	/* warn   */ { WARN, WARN, ERR, WARN },
};

/* One side's state: kind 0..4, network 0..3, on_unavailable 0..3, strings 0..2. */
struct side {
	int kind, net, onun, strs;
};

#define N_KIND 5
#define N_NET 4
#define N_ONUN 4
#define N_STRS 3	/* absent, unset, set: image, engine, mounts, deny_read */

/* Every state of a side: one absent block, then every present combination. */
static size_t sides(struct side *out)
{
	size_t n = 0;
	int k, nw, ou, st;

	out[n++] = (struct side){ F_ABSENT, F_ABSENT, F_ABSENT, F_ABSENT };
	for (k = F_UNSET; k < N_KIND; k++)
		for (nw = F_UNSET; nw < N_NET; nw++)
			for (ou = F_UNSET; ou < N_ONUN; ou++)
				for (st = F_UNSET; st < N_STRS; st++)
					out[n++] = (struct side){ k, nw, ou, st };
	return n;
}

static struct lev_sandbox_spec side_block(const struct side *sd, const char *tag)
{
	static const int kinds[] = { 0, UNSET, NONE, NS, CT };
	static const int nets[] = { 0, UNSET, 1, 0 };
	static const int onuns[] = { 0, UNSET, ERR, WARN };
	struct lev_sandbox_spec s;
	char image[32], engine[32], mount[32], deny[32];

	if (sd->kind == F_ABSENT) {
		memset(&s, 0, sizeof(s));
		return s;
	}
	snprintf(image, sizeof(image), "%s-image", tag);
	snprintf(engine, sizeof(engine), "/%s/engine", tag);
	snprintf(mount, sizeof(mount), "/%s/mount", tag);
	snprintf(deny, sizeof(deny), "~/%s-secret", tag);
	s = block(kinds[sd->kind], sd->strs == F_V1 ? image : NULL,
		  sd->strs == F_V1 ? engine : NULL, nets[sd->net],
		  sd->strs == F_V1 ? mount : NULL, NULL, onuns[sd->onun]);
	if (sd->strs == F_V1)
		s.deny_read = lev_strv_push(NULL, deny);
	return s;
}

static void check_merged(const struct lev_sandbox_spec *o, const struct side *u, const struct side *b)
{
	bool user_strs = u->strs == F_V1;

	assert_complete(o);
	assert_int_equal(o->kind, kind_table[u->kind][b->kind]);
	assert_int_equal(o->network, net_table[u->net][b->net]);
	assert_int_equal(o->on_unavailable, onun_table[u->onun][b->onun]);
	if (user_strs) {
		assert_string_equal(o->image, "user-image");
		assert_string_equal(o->engine, "/user/engine");
		assert_int_equal(lev_strv_len(o->mounts), 1);
		assert_string_equal(o->mounts[0], "/user/mount");
		assert_int_equal(lev_strv_len(o->deny_read), 1);
		assert_string_equal(o->deny_read[0], "~/user-secret");
	} else {
		assert_null(o->image);
		assert_null(o->engine);
		assert_null(o->mounts);
		assert_null(o->deny_read);
	}
}

static void test_every_field_merges_by_its_own_rule_in_every_combination(void **state)
{
	static struct side all[1 + (N_KIND - 1) * (N_NET - 1) * (N_ONUN - 1) * (N_STRS - 1)];
	/* an agent block a stage block replaces: its values must never show */
	struct side loud = { F_V3, F_V2, F_V1, F_V1 };	/* container, network false, error */
	struct lev_sandbox_spec agent_loud = side_block(&loud, "agent");
	size_t n = sides(all), i, j, runs = 0;

	(void)state;
	assert_int_equal(n, sizeof(all) / sizeof(all[0]));
	for (i = 0; i < n; i++) {
		struct lev_sandbox_spec g = side_block(&all[i], "user");

		for (j = 0; j < n; j++) {
			struct lev_sandbox_spec bp = side_block(&all[j], "bp");
			struct lev_sandbox_spec o;

			lev_sandbox_resolve(&g, &bp, NULL, &o);		/* agent level */
			check_merged(&o, &all[i], &all[j]);
			lev_sandbox_spec_release(&o);
			lev_sandbox_resolve(&g, NULL, &bp, &o);		/* stage level */
			check_merged(&o, &all[i], &all[j]);
			lev_sandbox_spec_release(&o);
			if (all[j].kind != F_ABSENT) {			/* stage over agent */
				lev_sandbox_resolve(&g, &agent_loud, &bp, &o);
				check_merged(&o, &all[i], &all[j]);
				lev_sandbox_spec_release(&o);
			}
			lev_sandbox_spec_release(&bp);
			runs++;
		}
		lev_sandbox_spec_release(&g);
	}
	assert_int_equal(runs, n * n);
	lev_sandbox_spec_release(&agent_loud);
}

/* The red-team's case, spelled out: tightening the kind keeps the network closed. */
static void test_a_stronger_kind_does_not_reopen_the_users_network(void **state)
{
	struct lev_sandbox_spec g = block(NONE, NULL, NULL, 0, NULL, NULL, UNSET);
	struct lev_sandbox_spec agent = block(NS, NULL, NULL, 1, NULL, NULL, UNSET);
	struct lev_sandbox_spec o;

	(void)state;
	lev_sandbox_resolve(&g, &agent, NULL, &o);
	assert_int_equal(o.kind, NS);
	assert_false(o.network);
	lev_sandbox_spec_release(&o);
	lev_sandbox_resolve(&g, NULL, &agent, &o);
	assert_int_equal(o.kind, NS);
	assert_false(o.network);
	lev_sandbox_spec_release(&o);
	lev_sandbox_spec_release(&g);
	lev_sandbox_spec_release(&agent);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_isolation_ranks_container_above_namespace_above_host),
		cmocka_unit_test(test_nothing_set_is_host),
		cmocka_unit_test(test_default_is_host_passthrough),
		cmocka_unit_test(test_global_used_when_no_agent_or_stage),
		cmocka_unit_test(test_manifest_cannot_disable_the_users_sandbox),
		cmocka_unit_test(test_a_manifest_cannot_trade_a_container_for_a_namespace),
		cmocka_unit_test(test_a_manifest_cannot_widen_a_sandbox_the_user_configured),
		cmocka_unit_test(test_mounts_are_the_users_whatever_the_blueprint_lists),
		cmocka_unit_test(test_a_manifest_can_never_choose_the_container_engine),
		cmocka_unit_test(test_the_users_engine_survives_a_manifest_that_names_none),
		cmocka_unit_test(test_a_manifest_may_still_choose_its_own_isolation_and_narrow),
		cmocka_unit_test(test_a_manifest_opting_in_from_nothing_keeps_only_its_fence),
		cmocka_unit_test(test_manifest_may_opt_into_a_sandbox_the_user_did_not_set),
		cmocka_unit_test(test_stage_overrides_agent_and_global),
		cmocka_unit_test(test_a_stage_block_without_kind_replaces_the_agent_block),
		cmocka_unit_test(test_agent_overrides_global_when_no_stage),
		cmocka_unit_test(test_network_defaults_to_on_and_either_side_can_turn_it_off),
		cmocka_unit_test(test_deny_read_is_always_the_users),
		cmocka_unit_test(test_writable_is_the_users_narrowed_by_the_blueprint),
		cmocka_unit_test(test_is_active_true_for_isolating_kinds),
		cmocka_unit_test(test_every_field_merges_by_its_own_rule_in_every_combination),
		cmocka_unit_test(test_a_stronger_kind_does_not_reopen_the_users_network),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
