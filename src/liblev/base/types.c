#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "liblev/base/strv.h"
#include "liblev/base/types.h"
#include "liblev/base/xalloc.h"

const char *const lev_verdict_names[_LEV_VERDICT_MAX] = { "allow", "ask", "deny" };
static const char *const level_names[] = { "public", "internal", "private" };
static const char *const kind_names[] = { "none", "namespace", "container" };
static const char *const onun_names[] = { "error", "warn" };

static int parse_word(const char *s, const char *const *names, int n)
{
	int i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!strcasecmp(s, names[i]))
			return i;
	return -EINVAL;
}

const char *lev_verdict_name(enum lev_verdict v)
{
	return v < _LEV_VERDICT_MAX ? lev_verdict_names[v] : "deny";
}

int lev_verdict_parse(const char *s, enum lev_verdict *out)
{
	int i = parse_word(s, lev_verdict_names, _LEV_VERDICT_MAX);

	if (i < 0)
		return i;
	*out = (enum lev_verdict)i;
	return 0;
}

const char *lev_level_name(enum lev_level l)
{
	return l < _LEV_LEVEL_MAX ? level_names[l] : "private";
}

int lev_level_parse(const char *s, enum lev_level *out)
{
	int i = parse_word(s, level_names, _LEV_LEVEL_MAX);

	if (i < 0)
		return i;
	*out = (enum lev_level)i;
	return 0;
}

static const char *const integrity_names[_LEV_INTEGRITY_MAX] = { "trusted", "untrusted" };

const char *lev_integrity_name(enum lev_integrity i)
{
	return (unsigned)i < _LEV_INTEGRITY_MAX ? integrity_names[i] : "untrusted";
}

int lev_integrity_parse(const char *s, enum lev_integrity *out)
{
	int i = parse_word(s, integrity_names, _LEV_INTEGRITY_MAX);

	if (i < 0)
		return i;
	*out = (enum lev_integrity)i;
	return 0;
}

const char *lev_sandbox_kind_name(enum lev_sandbox_kind k)
{
	return k < _LEV_SANDBOX_KIND_MAX ? kind_names[k] : "container";
}

int lev_sandbox_kind_parse(const char *s, enum lev_sandbox_kind *out)
{
	int i = parse_word(s, kind_names, _LEV_SANDBOX_KIND_MAX);

	if (i < 0)
		return i;
	*out = (enum lev_sandbox_kind)i;
	return 0;
}

const char *lev_on_unavailable_name(enum lev_on_unavailable o)
{
	return o < _LEV_ON_UNAVAILABLE_MAX ? onun_names[o] : "error";
}

int lev_on_unavailable_parse(const char *s, enum lev_on_unavailable *out)
{
	int i = parse_word(s, onun_names, _LEV_ON_UNAVAILABLE_MAX);

	if (i < 0)
		return i;
	*out = (enum lev_on_unavailable)i;
	return 0;
}

void lev_sandbox_spec_release(struct lev_sandbox_spec *s)
{
	free(s->image);
	free(s->engine);
	lev_strv_free(s->mounts);
	lev_strv_free(s->deny_read);
	lev_strv_free(s->writable);
	memset(s, 0, sizeof(*s));
}

void lev_sandbox_spec_copy(struct lev_sandbox_spec *dst, const struct lev_sandbox_spec *src)
{
	*dst = *src;
	dst->image = src->image ? xstrdup(src->image) : NULL;
	dst->engine = src->engine ? xstrdup(src->engine) : NULL;
	dst->mounts = lev_strv_copy(src->mounts);
	dst->deny_read = lev_strv_copy(src->deny_read);
	dst->writable = lev_strv_copy(src->writable);
}
