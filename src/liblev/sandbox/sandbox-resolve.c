/*
 * sandbox-resolve.c - the effective [sandbox] for a stage (leviath-spec §5.2).
 *
 * The user's block is both the default and the ceiling.  A blueprint's block
 * (the stage block replacing the agent block wholesale) may ask for a
 * stronger kind or narrow the user's settings, never loosen them; its engine
 * is never used, because the engine binary runs on the host before any
 * prompt.
 */
#include <stdlib.h>
#include <string.h>

#include "liblev/sandbox/sandbox.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"

static bool present(const struct lev_sandbox_spec *s)
{
	return s && s->present;
}

/* A written block's kind: a block without `kind` means none (the host). */
static enum lev_sandbox_kind kind_of(const struct lev_sandbox_spec *s)
{
	return s->has_kind ? s->kind : LEV_SANDBOX_NONE;
}

/* A written block's network: true unless written false. */
static bool network_of(const struct lev_sandbox_spec *s)
{
	return s->has_network ? s->network : true;
}

static enum lev_on_unavailable onun_of(const struct lev_sandbox_spec *s)
{
	return s->has_on_unavailable ? s->on_unavailable : LEV_ON_UNAVAILABLE_ERROR;
}

/* Copy S as written, filling every default, without its engine. */
static void as_written(const struct lev_sandbox_spec *s, struct lev_sandbox_spec *out)
{
	memset(out, 0, sizeof(*out));
	out->present = true;
	out->has_kind = true;
	out->kind = kind_of(s);
	out->image = s->image ? xstrdup(s->image) : NULL;
	out->engine = NULL;
	out->has_network = true;
	out->network = network_of(s);
	out->mounts = lev_strv_copy(s->mounts);
	out->has_on_unavailable = true;
	out->on_unavailable = onun_of(s);
	out->deny_read = NULL;
}

/* The blueprint block N clamped by the user's active block G. */
static void clamp(const struct lev_sandbox_spec *n, const struct lev_sandbox_spec *g,
		  struct lev_sandbox_spec *out)
{
	char *const *m;

	memset(out, 0, sizeof(*out));
	out->present = true;
	out->has_kind = true;
	out->kind = kind_of(n) > kind_of(g) ? kind_of(n) : kind_of(g);
	if (g->image)
		out->image = xstrdup(g->image);
	else if (n->image)
		out->image = xstrdup(n->image);
	out->has_network = true;
	out->network = network_of(n) && network_of(g);
	for (m = n->mounts; m && *m; m++)
		if (lev_strv_contains(g->mounts, *m) && !lev_strv_contains(out->mounts, *m))
			out->mounts = lev_strv_push(out->mounts, *m);
	out->has_on_unavailable = true;
	out->on_unavailable = onun_of(g);
}

void lev_sandbox_resolve(const struct lev_sandbox_spec *global, const struct lev_sandbox_spec *agent,
			 const struct lev_sandbox_spec *stage, struct lev_sandbox_spec *out)
{
	const struct lev_sandbox_spec *n = present(stage) ? stage : present(agent) ? agent : NULL;
	const struct lev_sandbox_spec *g = present(global) ? global : NULL;
	bool g_active = g && kind_of(g) != LEV_SANDBOX_NONE;

	if (n && g_active && kind_of(n) == LEV_SANDBOX_NONE)
		as_written(g, out);		/* a blueprint cannot turn the user's sandbox off */
	else if (n && g_active)
		clamp(n, g, out);
	else if (n)
		as_written(n, out);		/* opting in from nothing stands as written */
	else if (g)
		as_written(g, out);
	else {
		static const struct lev_sandbox_spec host = { .present = false };
		as_written(&host, out);		/* nothing anywhere: the host */
	}

	/* Only the user ever names the engine binary or the masks. */
	free(out->engine);
	out->engine = g && g->engine ? xstrdup(g->engine) : NULL;
	lev_strv_free(out->deny_read);
	out->deny_read = g ? lev_strv_copy(g->deny_read) : NULL;
}
