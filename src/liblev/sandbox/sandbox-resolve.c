/*
 * sandbox-resolve.c - the effective [sandbox] for a stage (leviath-spec §5.2).
 *
 * The user's block and the blueprint's block (the stage block replacing the
 * agent block wholesale) are merged field by field, each field by its own
 * rule, so tightening one field can never reopen another the user closed:
 *
 *   kind            the stronger fence of the two (none < namespace < container)
 *   network         on only when both allow it (an unwritten network allows)
 *   on_unavailable  error when either side says error (the user's unwritten
 *                   value is error, a blueprint's unwritten value is no opinion)
 *   image, engine,  the user's only: the engine runs on the host and the image
 *   mounts,         is fetched by it before any prompt, mounts expose host
 *   deny_read       paths, masks hide them
 *   writable        the user's list of paths a command may write (kind none's
 *                   fence); a blueprint's list narrows it: an entry of its is
 *                   kept only when it lies under one of the user's, as written
 *
 * Limits and timeouts ([limits], [sandbox] timeout_secs) are user-only keys:
 * a blueprint cannot write them, so there is nothing of its to merge.
 */
#include <stdlib.h>
#include <string.h>

#include "liblev/sandbox/sandbox.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static bool present(const struct lev_sandbox_spec *s)
{
	return s && s->present;
}

/* A written block's kind: a block without `kind` means none (the host). */
static enum lev_sandbox_kind kind_of(const struct lev_sandbox_spec *s)
{
	return s && s->has_kind ? s->kind : LEV_SANDBOX_NONE;
}

/* A block's network: true unless written false. */
static bool network_of(const struct lev_sandbox_spec *s)
{
	return s && s->has_network ? s->network : true;
}

static bool under_any(const char *p, char *const *list)
{
	for (; list && *list; list++)
		if (lev_path_under(p, *list))
			return true;
	return false;
}

/* The user's writable list, narrowed by the blueprint's when it writes one. */
static char **writable_of(const struct lev_sandbox_spec *g, const struct lev_sandbox_spec *n)
{
	char **out = NULL;

	if (!g)
		return NULL;
	if (!n || !n->has_writable)
		return lev_strv_copy(g->writable);
	for (char *const *w = n->writable; w && *w; w++)
		if (under_any(*w, g->writable) && !lev_strv_contains(out, *w))
			out = lev_strv_push(out, *w);
	return out;
}

void lev_sandbox_resolve(const struct lev_sandbox_spec *global, const struct lev_sandbox_spec *agent,
			 const struct lev_sandbox_spec *stage, struct lev_sandbox_spec *out)
{
	const struct lev_sandbox_spec *n = present(stage) ? stage : present(agent) ? agent : NULL;
	const struct lev_sandbox_spec *g = present(global) ? global : NULL;

	memset(out, 0, sizeof(*out));
	out->present = true;

	out->has_kind = true;
	out->kind = kind_of(g);
	if (kind_of(n) > out->kind)
		out->kind = kind_of(n);		/* a blueprint's none never lowers it */

	out->has_network = true;
	out->network = network_of(g) && network_of(n);

	out->has_on_unavailable = true;
	out->on_unavailable = g && g->has_on_unavailable ? g->on_unavailable
							 : LEV_ON_UNAVAILABLE_ERROR;
	if (n && n->has_on_unavailable && n->on_unavailable == LEV_ON_UNAVAILABLE_ERROR)
		out->on_unavailable = LEV_ON_UNAVAILABLE_ERROR;

	/* Only the user ever names the image, the engine, the mounts or the masks. */
	out->image = g && g->image ? xstrdup(g->image) : NULL;
	out->engine = g && g->engine ? xstrdup(g->engine) : NULL;
	out->mounts = g ? lev_strv_copy(g->mounts) : NULL;
	out->deny_read = g ? lev_strv_copy(g->deny_read) : NULL;
	out->has_writable = true;
	out->writable = writable_of(g, n);
}
