/*
 * effective.c - one effective policy per run (see effective.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/conf/toml.h"
#include "liblev/policy/effective.h"
#include "liblev/policy/tighter.h"

/* ---- the config's policy fields, as the snapshot keeps them ---- */

enum field_type { F_BOOL, F_STRV, F_U64 };

/* Every field lev_policy_tighter() reads but the tables (below). */
static const struct field {
	const char *name;
	enum field_type type;
	size_t off;
} fields[] = {
#define B(f) { #f, F_BOOL, offsetof(struct lev_config, f) }
#define S(f) { #f, F_STRV, offsetof(struct lev_config, f) }
#define U(f) { #f, F_U64, offsetof(struct lev_config, f) }
	B(taint_tracking), B(yolo_allows_flow), B(allow_seed_commands), B(allow_local_network),
	B(allow_blueprint_read_paths), B(allow_blueprint_safe_commands),
	B(allow_blueprint_permissions), B(safe_defaults),
	S(allowed_workdirs), S(allow_env_vars), S(shell_env_withhold), S(read_paths),
	S(safe_tools), S(safe_shell),
	U(sandbox_timeout_secs), U(limits.script_shell_timeout_secs),
	U(limits.shell_timeout_secs), U(limits.interaction_timeout_secs),
	U(limits.max_tool_call_write_bytes), U(limits.max_run_write_bytes),
	U(limits.max_tool_output_bytes), U(limits.max_iterations),
	B(sandbox.has_kind), B(sandbox.has_network), B(sandbox.network),
#undef B
#undef S
#undef U
};

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();

	for (; v && *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

static json_t *perms_json(const struct lev_tool_perms *p)
{
	json_t *o = json_object();

	for (size_t i = 0; i < p->n; i++)
		json_object_set_new(o, p->v[i].tool, json_string(lev_verdict_name(p->v[i].verdict)));
	return o;
}

static int json_perms(const json_t *o, struct lev_tool_perms *p)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v) {
		enum lev_verdict vd;

		if (!json_is_string(v) || lev_verdict_parse(json_string_value(v), &vd) < 0)
			return -EINVAL;
		lev_tool_perms_set(p, k, vd);
	}
	return 0;
}

static json_t *config_json(const struct lev_config *c)
{
	json_t *o = json_object(), *agents = json_object();

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		const void *at = (const char *)c + fields[i].off;

		if (fields[i].type == F_BOOL)
			json_object_set_new(o, fields[i].name, json_boolean(*(const bool *)at));
		else if (fields[i].type == F_STRV)
			json_object_set_new(o, fields[i].name, strv_json(*(char **const *)at));
		else
			json_object_set_new(o, fields[i].name,
					    json_integer((json_int_t)*(const uint64_t *)at));
	}
	json_object_set_new(o, "shell_env", json_string(lev_shell_env_name(c->shell_env)));
	json_object_set_new(o, "sandbox.kind", json_integer(c->sandbox.kind));
	json_object_set_new(o, "tool_permissions", perms_json(&c->tool_permissions));
	/* a per-agent table is kept as the tighter already made it: whole */
	for (size_t i = 0; i < c->n_agent_tool_permissions; i++)
		json_object_set_new(agents, c->agent_tool_permissions[i].agent,
				    json_pack("{s:o}", "tools",
					      perms_json(&c->agent_tool_permissions[i].perms)));
	for (size_t i = 0; i < c->n_agent_read_paths; i++) {
		json_t *a = json_object_get(agents, c->agent_read_paths[i].agent);

		if (!a)
			json_object_set_new(agents, c->agent_read_paths[i].agent, a = json_object());
		json_object_set_new(a, "read_paths", strv_json(c->agent_read_paths[i].allow));
	}
	for (size_t i = 0; i < c->n_agent_safe_commands; i++) {
		const struct lev_agent_safe_commands *s = &c->agent_safe_commands[i];
		json_t *a = json_object_get(agents, s->agent);

		if (!a)
			json_object_set_new(agents, s->agent, a = json_object());
		json_object_set_new(a, "safe_tools", strv_json(s->tools));
		json_object_set_new(a, "safe_shell", strv_json(s->shell));
		json_object_set_new(a, "safe_blueprint", json_boolean(s->allow_blueprint));
	}
	json_object_set_new(o, "agents", agents);
	return o;
}

/* One agent's tables of the snapshot into C. */
static int json_agent(const char *name, const json_t *a, struct lev_config *c)
{
	const json_t *t = json_object_get(a, "tools");

	if (t) {
		struct lev_agent_tool_perms *p;

		c->agent_tool_permissions = xreallocarray(c->agent_tool_permissions,
							  c->n_agent_tool_permissions + 1,
							  sizeof(*p));
		p = &c->agent_tool_permissions[c->n_agent_tool_permissions++];
		memset(p, 0, sizeof(*p));
		p->agent = xstrdup(name);
		if (json_perms(t, &p->perms) < 0)
			return -EINVAL;
	}
	if (json_object_get(a, "read_paths")) {
		struct lev_agent_read_paths *r;

		c->agent_read_paths = xreallocarray(c->agent_read_paths, c->n_agent_read_paths + 1,
						    sizeof(*r));
		r = &c->agent_read_paths[c->n_agent_read_paths++];
		r->agent = xstrdup(name);
		r->allow = lev_strv_from_json(json_object_get(a, "read_paths"));
	}
	if (json_object_get(a, "safe_tools")) {
		struct lev_agent_safe_commands *s;

		c->agent_safe_commands = xreallocarray(c->agent_safe_commands,
						       c->n_agent_safe_commands + 1, sizeof(*s));
		s = &c->agent_safe_commands[c->n_agent_safe_commands++];
		memset(s, 0, sizeof(*s));
		s->agent = xstrdup(name);
		s->tools = lev_strv_from_json(json_object_get(a, "safe_tools"));
		s->shell = lev_strv_from_json(json_object_get(a, "safe_shell"));
		s->allow_blueprint = json_is_true(json_object_get(a, "safe_blueprint"));
	}
	return 0;
}

/* The snapshot's config O into C (lev_config_init()ed); every field must be there. */
static int json_config(const json_t *o, struct lev_config *c)
{
	const char *env = json_string_value(json_object_get(o, "shell_env")), *k;
	json_t *v;

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		void *at = (char *)c + fields[i].off;
		const json_t *j = json_object_get(o, fields[i].name);

		if (fields[i].type == F_BOOL && json_is_boolean(j))
			*(bool *)at = json_is_true(j);
		else if (fields[i].type == F_STRV && json_is_array(j))
			*(char ***)at = lev_strv_from_json(j);
		else if (fields[i].type == F_U64 && json_is_integer(j) && json_integer_value(j) >= 0)
			*(uint64_t *)at = (uint64_t)json_integer_value(j);
		else
			return -EINVAL;
	}
	c->shell_env = _LEV_SHELL_ENV_MAX;
	for (int e = 0; env && e < _LEV_SHELL_ENV_MAX; e++)
		if (!strcmp(env, lev_shell_env_name((enum lev_shell_env)e)))
			c->shell_env = (enum lev_shell_env)e;
	if (c->shell_env == _LEV_SHELL_ENV_MAX || !json_is_integer(json_object_get(o, "sandbox.kind")))
		return -EINVAL;
	c->sandbox.kind = (enum lev_sandbox_kind)json_integer_value(json_object_get(o, "sandbox.kind"));
	if (json_perms(json_object_get(o, "tool_permissions"), &c->tool_permissions) < 0)
		return -EINVAL;
	json_object_foreach(json_object_get(o, "agents"), k, v)
		if (json_agent(k, v, c) < 0)
			return -EINVAL;
	return 0;
}

/* ---- policy.toml and Leviath's, as texts ---- */

/* PATH's text (NULL: missing, or no PATH), for the snapshot; a new reference. */
static json_t *text_of(const char *path, struct lev_err *err, int *r)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if (!path || *r < 0)
		return json_null();
	*r = lev_read_file(path, LEV_TOML_MAX_FILE, &buf, &len, err);
	if (*r == -ENOENT) {
		*r = 0;
		lev_err_clear(err);
		return json_null();
	}
	return *r < 0 ? json_null() : json_stringn(buf, len);
}

static bool gen_same(const json_t *a, const json_t *b)
{
	return json_equal(json_object_get(a, "policy"), json_object_get(b, "policy")) &&
	       json_equal(json_object_get(a, "leviath"), json_object_get(b, "leviath"));
}

/* Add GEN (borrowed) to RUN's generations unless it is there. */
static void gen_add(struct lev_effective *run, const json_t *gen)
{
	size_t i;
	json_t *g;

	json_array_foreach(run->gens, i, g)
		if (gen_same(g, gen))
			return;
	if (json_array_size(run->gens) >= LEV_EFFECTIVE_GENS_MAX) {
		run->gens_full = true;
		return;
	}
	json_array_append(run->gens, (json_t *)gen);
}

/* The policy one generation's texts give (as lev_policy_load_both() merges them). */
static int gen_policy(const json_t *gen, struct lev_policy **out, struct lev_err *err)
{
	const json_t *ours = json_object_get(gen, "policy"), *theirs = json_object_get(gen, "leviath");
	struct lev_policy *p = NULL, *t = NULL;
	int r = 0;

	if (json_is_string(ours))
		r = lev_policy_parse(json_string_value(ours), json_string_length(ours),
				     "policy.toml (the run's snapshot)", &p, err);
	else
		p = lev_policy_new_empty("policy.toml (the run's snapshot)");
	if (r == 0 && json_is_string(theirs)) {
		r = lev_policy_parse(json_string_value(theirs), json_string_length(theirs),
				     "Leviath's policy.toml (the run's snapshot)", &t, err);
		if (r == 0)
			r = lev_policy_merge(p, t, err);
	}
	if (r < 0) {
		lev_policy_free(p);
		return r;
	}
	*out = p;
	return 0;
}

/* ---- the object ---- */

int lev_effective_load(struct lev_effective *e, const struct lev_effective_paths *p,
		       struct lev_err *err)
{
	_cleanup_free_ char *cfg_path = NULL, *pol_path = NULL, *lev_path = NULL;
	struct lev_effective n = { .gens = json_array() };
	json_t *gen;
	int r = 0;

	if (!p->config)
		r = lev_datadir_config_path(&cfg_path, err);
	if (r == 0 && !p->policy)
		r = lev_datadir_policy_path(&pol_path, err);
	if (r == 0 && !p->leviath)
		r = lev_datadir_leviath_policy_path(&lev_path, err);
	if (r == 0)
		r = lev_config_load_file(p->config ? p->config : cfg_path, &n.cfg, err);
	if (r < 0) {
		json_decref(n.gens);
		return r;
	}
	r = lev_policy_load_both(p->policy ? p->policy : pol_path,
				 p->leviath ? p->leviath : lev_path, &n.pol, NULL, NULL, err);
	gen = json_object();
	json_object_set_new(gen, "policy", text_of(p->policy ? p->policy : pol_path, err, &r));
	json_object_set_new(gen, "leviath", text_of(p->leviath ? p->leviath : lev_path, err, &r));
	json_array_append_new(n.gens, gen);
	if (r < 0) {
		lev_effective_release(&n);
		return r;
	}
	*e = n;
	return 0;
}

void lev_effective_release(struct lev_effective *e)
{
	lev_config_release(&e->cfg);
	e->pol = lev_policy_free(e->pol);
	json_decref(e->gens);
	e->gens = NULL;
}

void lev_effective_tighten(struct lev_effective *run, const struct lev_effective *next)
{
	size_t i;
	json_t *g;

	lev_policy_tighter(&run->cfg, &next->cfg);
	lev_policy_tighten(run->pol, next->pol);
	json_array_foreach(next->gens, i, g)
		gen_add(run, g);
	run->gens_full = run->gens_full || next->gens_full;
}

json_t *lev_effective_snapshot(const struct lev_effective *e)
{
	return json_pack("{s:i, s:o, s:O, s:b}", "v", 1, "config", config_json(&e->cfg),
			 "policies", e->gens, "incomplete", e->gens_full);
}

int lev_effective_restore(struct lev_effective *e, const json_t *snap, struct lev_err *err)
{
	struct lev_config c;
	size_t i;
	json_t *g;
	int r;

	if (json_integer_value(json_object_get(snap, "v")) != 1 ||
	    !json_is_array(json_object_get(snap, "policies")))
		return lev_err_set(err, -EINVAL, "the run's policy snapshot cannot be read");
	if (json_is_true(json_object_get(snap, "incomplete")))
		return lev_err_set(err, -EINVAL, "the run's policy snapshot lost some of the "
						 "policy it had (more policy files, or larger, "
						 "than it keeps); it cannot be resumed under "
						 "another");
	lev_config_init(&c);
	r = json_config(json_object_get(snap, "config"), &c);
	if (r < 0) {
		lev_config_release(&c);
		return lev_err_set(err, -EINVAL, "the run's policy snapshot cannot be read");
	}
	lev_policy_tighter(&e->cfg, &c);
	lev_config_release(&c);
	json_array_foreach(json_object_get(snap, "policies"), i, g) {
		struct lev_policy *p = NULL;

		r = gen_policy(g, &p, err);
		if (r < 0)
			return lev_err_wrap(err, "the run's policy snapshot");
		lev_policy_tighten(e->pol, p);
		lev_policy_free(p);
		gen_add(e, g);
	}
	return 0;
}
