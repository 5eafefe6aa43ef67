/*
 * taint.c - tool classifications, labelled context regions, call targets.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/policy/taint.h"
#include "liblev/policy/target.h"
#include "liblev/base/xalloc.h"

static const char *const dir_names[] = { "inbound", "internal", "outbound" };

const char *lev_direction_name(enum lev_direction d)
{
	return d < _LEV_DIR_MAX ? dir_names[d] : "outbound";
}

int lev_direction_parse(const char *s, enum lev_direction *out)
{
	int i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < _LEV_DIR_MAX; i++) {
		if (!strcasecmp(s, dir_names[i])) {
			*out = (enum lev_direction)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- built-in classifications ---- */

/* Every entry of the tool table that carries a class; clearance is Public for each. */
void lev_taint_builtin_class(const char *tool, struct lev_tool_class *out)
{
	const struct lev_tool_desc *d = lev_tooltable_find(tool);

	memset(out, 0, sizeof(*out));
	out->clearance = LEV_PUBLIC;
	if (d && (d->flags & LEV_TOOLF_CLASSIFIED)) {
		out->sensitivity = d->label;
		out->direction = d->direction;
		out->target_from = d->target_from;
		out->known = true;
	} else {
		/* MCP, script and anything new: third-party code talking to a third party */
		out->sensitivity = LEV_PUBLIC;
		out->direction = LEV_DIR_OUTBOUND;
		out->target_from = LEV_TARGET_FROM_RECIPIENTS;
		out->known = false;
	}
}

bool lev_taint_is_read_tool(const char *tool)
{
	return lev_tooltable_flags(tool) & LEV_TOOLF_FILE_RESULT;
}

void lev_taint_read_grant_bump(const char *tool, bool grant_active, struct lev_tool_class *cls)
{
	if (grant_active && lev_taint_is_read_tool(tool))
		cls->sensitivity = LEV_PRIVATE;
}

/* ---- targets ---- */

int lev_taint_args_parse(const char *args_json, size_t len, struct json_t **out,
			 struct lev_err *err)
{
	json_error_t jerr;
	json_t *j;

	if (len > LEV_TAINT_ARGS_MAX)
		return lev_err_set(err, LEV_EPARSE, "tool arguments are larger than %zu bytes",
				   LEV_TAINT_ARGS_MAX);
	j = json_loadb(args_json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		return lev_err_set(err, LEV_EPARSE, "tool arguments are not valid JSON: %s at %d:%d",
				   jerr.text, jerr.line, jerr.column);
	if (!json_is_object(j)) {
		json_decref(j);
		return lev_err_set(err, LEV_EPARSE, "tool arguments are not a JSON object");
	}
	*out = j;
	return 0;
}

/* Canonicalise one argument value (a string or an array of strings) into *v. */
static int add_values(const json_t *val, const char *key, bool is_url, char ***v,
		      struct lev_err *err)
{
	size_t i, n = json_is_array(val) ? json_array_size(val) : 1;

	if (!json_is_array(val) && !json_is_string(val))
		return lev_err_set(err, LEV_EPARSE, "argument '%s' is not a string or a list of strings",
				   key);
	for (i = 0; i < n; i++) {
		const json_t *s = json_is_array(val) ? json_array_get(val, i) : val;
		char *c = NULL;
		int r;

		if (!json_is_string(s))
			return lev_err_set(err, LEV_EPARSE, "argument '%s' holds a value that is not a string",
					   key);
		if (lev_strv_len(*v) >= LEV_TAINT_TARGETS_MAX)
			return lev_err_set(err, LEV_EPARSE, "more than %d targets", LEV_TAINT_TARGETS_MAX);
		if (strlen(json_string_value(s)) != json_string_length(s))
			return lev_err_set(err, LEV_EPARSE, "argument '%s' holds a NUL byte", key);
		if (is_url) {
			struct lev_target_url u = { 0 };

			r = lev_target_url_parse(json_string_value(s), &u, err);
			if (r == 0)
				c = TAKE_PTR(u.host);
			lev_target_url_release(&u);
		} else {
			r = lev_target_value_canon(json_string_value(s), &c, err);
		}
		if (r < 0)
			return lev_err_wrap(err, "argument '%s'", key);
		if (lev_strv_contains(*v, c))
			free(c);
		else
			*v = lev_strv_push_take(*v, c);
	}
	return 0;
}

static const char *const recipient_keys[] = {
	"to", "cc", "bcc", "recipient", "recipients", "channel", "url",
};

int lev_taint_target_of_json(const char *tool, const struct lev_tool_class *cls,
			     const struct json_t *args, char ***out, struct lev_err *err)
{
	struct lev_tool_class builtin;
	char **v = NULL;
	const json_t *val;
	size_t i;
	int r = 0;

	if (!cls) {
		lev_taint_builtin_class(tool, &builtin);
		cls = &builtin;
	}
	if (args && !json_is_object(args))
		return lev_err_set(err, LEV_EPARSE, "tool arguments are not a JSON object");

	switch (cls->target_from) {
	case LEV_TARGET_FROM_NONE:
		break;
	case LEV_TARGET_FROM_URL:
		val = args ? json_object_get(args, "url") : NULL;
		if (!val)
			return lev_err_set(err, LEV_EPARSE, "no 'url' argument");
		r = add_values(val, "url", true, &v, err);
		break;
	case LEV_TARGET_FROM_ARG:
		if (!cls->target_arg)
			return lev_err_set(err, LEV_EPARSE, "no target argument declared");
		val = args ? json_object_get(args, cls->target_arg) : NULL;
		if (!val)
			return lev_err_set(err, LEV_EPARSE, "no '%s' argument", cls->target_arg);
		r = add_values(val, cls->target_arg, false, &v, err);
		break;
	case LEV_TARGET_FROM_RECIPIENTS:
		for (i = 0; args && r == 0 && i < ARRAY_SIZE(recipient_keys); i++) {
			val = json_object_get(args, recipient_keys[i]);
			if (val)
				r = add_values(val, recipient_keys[i], !strcmp(recipient_keys[i], "url"),
					       &v, err);
		}
		break;
	}
	if (r < 0) {
		lev_strv_free(v);
		return r;
	}
	*out = v;
	return 0;
}

int lev_taint_target_of(const char *tool, const struct lev_tool_class *cls, const char *args_json,
			size_t len, char ***out, struct lev_err *err)
{
	json_t *args = NULL;
	int r;

	if (args_json) {
		r = lev_taint_args_parse(args_json, len, &args, err);
		if (r < 0)
			return r;
	}
	r = lev_taint_target_of_json(tool, cls, args, out, err);
	json_decref(args);
	return r;
}

/* ---- context regions ---- */

struct entry {
	uint64_t id;
	uint32_t region;
	uint8_t label;
	bool untrusted;
	bool live;
};

struct region {
	char *name;
	size_t count[_LEV_LEVEL_MAX];
	size_t n_untrusted;	/* live untrusted entries */
};

struct lev_taint_ctx {
	struct region *regions;
	size_t n_regions;
	struct entry *entries;	/* sorted by id; dead ones are swept now and then */
	size_t n_entries, alloc_entries, n_live;
	size_t count[_LEV_LEVEL_MAX];
	size_t n_untrusted;	/* live untrusted entries */
	bool seen_untrusted;	/* the context the model was last shown was untrusted */
	uint64_t next_id;
};

struct lev_taint_ctx *lev_taint_ctx_new(void)
{
	struct lev_taint_ctx *ctx = xcalloc(1, sizeof(*ctx));

	ctx->next_id = 1;
	return ctx;
}

struct lev_taint_ctx *lev_taint_ctx_free(struct lev_taint_ctx *ctx)
{
	size_t i;

	if (!ctx)
		return NULL;
	for (i = 0; i < ctx->n_regions; i++)
		free(ctx->regions[i].name);
	free(ctx->regions);
	free(ctx->entries);
	free(ctx);
	return NULL;
}

int lev_taint_region_add(struct lev_taint_ctx *ctx, const char *name, struct lev_err *err)
{
	size_t len = strnlen(name, LEV_TAINT_REGION_NAME_MAX + 1), i;

	if (len == 0 || len > LEV_TAINT_REGION_NAME_MAX)
		return lev_err_set(err, -EINVAL, "region name must be 1 to %d bytes",
				   LEV_TAINT_REGION_NAME_MAX);
	for (i = 0; i < len; i++)
		if ((unsigned char)name[i] <= 0x20 || (unsigned char)name[i] >= 0x7f)
			return lev_err_set(err, -EINVAL, "region name holds a space or non-ASCII byte");
	if (lev_taint_region_find(ctx, name) >= 0)
		return lev_err_set(err, -EEXIST, "region '%s' exists", name);
	if (ctx->n_regions >= LEV_TAINT_REGIONS_MAX)
		return lev_err_set(err, -E2BIG, "more than %d regions", LEV_TAINT_REGIONS_MAX);
	ctx->regions = xreallocarray(ctx->regions, ctx->n_regions + 1, sizeof(*ctx->regions));
	memset(&ctx->regions[ctx->n_regions], 0, sizeof(*ctx->regions));
	ctx->regions[ctx->n_regions].name = xstrdup(name);
	return (int)ctx->n_regions++;
}

int lev_taint_region_find(const struct lev_taint_ctx *ctx, const char *name)
{
	size_t i;

	for (i = 0; i < ctx->n_regions; i++)
		if (!strcmp(ctx->regions[i].name, name))
			return (int)i;
	return -ENOENT;
}

size_t lev_taint_region_count(const struct lev_taint_ctx *ctx)
{
	return ctx->n_regions;
}

const char *lev_taint_region_name(const struct lev_taint_ctx *ctx, size_t region)
{
	return region < ctx->n_regions ? ctx->regions[region].name : NULL;
}

static enum lev_level level_of(const size_t count[_LEV_LEVEL_MAX])
{
	if (count[LEV_PRIVATE])
		return LEV_PRIVATE;
	if (count[LEV_INTERNAL])
		return LEV_INTERNAL;
	return LEV_PUBLIC;
}

enum lev_level lev_taint_region_level(const struct lev_taint_ctx *ctx, size_t region)
{
	return region < ctx->n_regions ? level_of(ctx->regions[region].count) : LEV_PUBLIC;
}

enum lev_level lev_taint_current(const struct lev_taint_ctx *ctx)
{
	return level_of(ctx->count);
}

size_t lev_taint_entry_count(const struct lev_taint_ctx *ctx)
{
	return ctx->n_live;
}

/* Drop dead entries once they outnumber the live ones. */
static void sweep(struct lev_taint_ctx *ctx)
{
	size_t i, j = 0;

	if (ctx->n_entries - ctx->n_live < 64 || ctx->n_entries - ctx->n_live < ctx->n_live)
		return;
	for (i = 0; i < ctx->n_entries; i++)
		if (ctx->entries[i].live)
			ctx->entries[j++] = ctx->entries[i];
	ctx->n_entries = j;
}

static struct entry *find_live(const struct lev_taint_ctx *ctx, uint64_t id);

static int push_entry(struct lev_taint_ctx *ctx, size_t region, enum lev_level label,
		      enum lev_integrity integ, uint64_t *id_out, struct lev_err *err)
{
	struct entry *e;

	if (region >= ctx->n_regions)
		return lev_err_set(err, -EINVAL, "no region %zu", region);
	if ((unsigned)label >= _LEV_LEVEL_MAX)
		return lev_err_set(err, -EINVAL, "invalid label");
	if (ctx->n_live >= LEV_TAINT_ENTRIES_MAX)
		return lev_err_set(err, -E2BIG, "more than %zu live entries", LEV_TAINT_ENTRIES_MAX);
	sweep(ctx);
	if (ctx->n_entries == ctx->alloc_entries) {
		ctx->alloc_entries = ctx->alloc_entries ? ctx->alloc_entries * 2 : 64;
		ctx->entries = xreallocarray(ctx->entries, ctx->alloc_entries, sizeof(*ctx->entries));
	}
	e = &ctx->entries[ctx->n_entries++];
	e->id = ctx->next_id++;
	e->region = (uint32_t)region;
	e->label = (uint8_t)label;
	e->untrusted = integ != LEV_TRUSTED;
	e->live = true;
	ctx->n_live++;
	ctx->count[label]++;
	ctx->regions[region].count[label]++;
	if (e->untrusted) {
		ctx->n_untrusted++;
		ctx->regions[region].n_untrusted++;
	}
	if (id_out)
		*id_out = e->id;
	return 0;
}

int lev_taint_add_entry(struct lev_taint_ctx *ctx, size_t region, enum lev_level label,
			uint64_t *id_out, struct lev_err *err)
{
	return push_entry(ctx, region, label, LEV_TRUSTED, id_out, err);
}

int lev_taint_add_labelled(struct lev_taint_ctx *ctx, size_t region, enum lev_level label,
			   enum lev_integrity integ, uint64_t *id_out, struct lev_err *err)
{
	return push_entry(ctx, region, label, integ, id_out, err);
}

int lev_taint_add_model_text(struct lev_taint_ctx *ctx, size_t region, enum lev_level seen,
			     uint64_t *id_out, struct lev_err *err)
{
	if ((unsigned)seen >= _LEV_LEVEL_MAX)
		seen = LEV_PRIVATE;
	return push_entry(ctx, region, lev_level_max(seen, lev_taint_current(ctx)),
			  lev_taint_model_integrity(ctx), id_out, err);
}

/* ---- integrity ---- */

enum lev_integrity lev_taint_integrity(const struct lev_taint_ctx *ctx)
{
	return ctx->n_untrusted ? LEV_UNTRUSTED : LEV_TRUSTED;
}

enum lev_integrity lev_taint_region_integrity(const struct lev_taint_ctx *ctx, size_t region)
{
	return region < ctx->n_regions && ctx->regions[region].n_untrusted ? LEV_UNTRUSTED
									    : LEV_TRUSTED;
}

void lev_taint_mark_seen(struct lev_taint_ctx *ctx)
{
	ctx->seen_untrusted = ctx->n_untrusted > 0;
}

enum lev_integrity lev_taint_model_integrity(const struct lev_taint_ctx *ctx)
{
	return ctx->seen_untrusted || ctx->n_untrusted ? LEV_UNTRUSTED : LEV_TRUSTED;
}

int lev_taint_set_untrusted(struct lev_taint_ctx *ctx, uint64_t id)
{
	struct entry *e = find_live(ctx, id);

	if (!e)
		return -ENOENT;
	if (!e->untrusted) {
		e->untrusted = true;
		ctx->n_untrusted++;
		ctx->regions[e->region].n_untrusted++;
	}
	return 0;
}

int lev_taint_entry_integrity(const struct lev_taint_ctx *ctx, uint64_t id,
			      enum lev_integrity *out)
{
	const struct entry *e = find_live(ctx, id);

	if (!e)
		return -ENOENT;
	*out = e->untrusted ? LEV_UNTRUSTED : LEV_TRUSTED;
	return 0;
}

int lev_taint_untrusted_regions(const struct lev_taint_ctx *ctx, struct lev_buf *out)
{
	int n = 0;

	for (size_t i = 0; i < ctx->n_regions; i++) {
		if (!ctx->regions[i].n_untrusted)
			continue;
		if ((n && lev_buf_adds(out, ", ") < 0) || lev_buf_adds(out, ctx->regions[i].name) < 0)
			return -E2BIG;
		n++;
	}
	return n;
}

static struct entry *find_live(const struct lev_taint_ctx *ctx, uint64_t id)
{
	size_t lo = 0, hi = ctx->n_entries;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ctx->entries[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ctx->n_entries && ctx->entries[lo].id == id && ctx->entries[lo].live)
		return &ctx->entries[lo];
	return NULL;
}

static void kill_entry(struct lev_taint_ctx *ctx, struct entry *e)
{
	e->live = false;
	ctx->n_live--;
	ctx->count[e->label]--;
	ctx->regions[e->region].count[e->label]--;
	if (e->untrusted) {
		ctx->n_untrusted--;
		ctx->regions[e->region].n_untrusted--;
	}
}

int lev_taint_evict(struct lev_taint_ctx *ctx, uint64_t id, struct lev_err *err)
{
	struct entry *e = find_live(ctx, id);

	if (!e)
		return lev_err_set(err, -ENOENT, "no live entry %llu", (unsigned long long)id);
	kill_entry(ctx, e);
	return 0;
}

int lev_taint_compact(struct lev_taint_ctx *ctx, size_t region, const uint64_t *ids, size_t n,
		      enum lev_level seen, uint64_t *id_out, struct lev_err *err)
{
	size_t i;
	int r;

	for (i = 0; i < n; i++)
		if (!find_live(ctx, ids[i]))
			return lev_err_set(err, -ENOENT, "no live entry %llu",
					   (unsigned long long)ids[i]);
	/* label first, while the summarised entries still count */
	r = lev_taint_add_model_text(ctx, region, seen, id_out, err);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		struct entry *e = find_live(ctx, ids[i]);

		if (e)	/* an id listed twice is already gone */
			kill_entry(ctx, e);
	}
	return 0;
}

int lev_taint_region_clear(struct lev_taint_ctx *ctx, size_t region, struct lev_err *err)
{
	size_t i;

	if (region >= ctx->n_regions)
		return lev_err_set(err, -EINVAL, "no region %zu", region);
	for (i = 0; i < ctx->n_entries; i++)
		if (ctx->entries[i].live && ctx->entries[i].region == region)
			kill_entry(ctx, &ctx->entries[i]);
	return 0;
}

int lev_taint_entry_label(const struct lev_taint_ctx *ctx, uint64_t id, enum lev_level *out)
{
	const struct entry *e = find_live(ctx, id);

	if (!e)
		return -ENOENT;
	*out = (enum lev_level)e->label;
	return 0;
}

int lev_taint_contributors(const struct lev_taint_ctx *ctx, enum lev_level above,
			   struct lev_buf *out)
{
	size_t i;
	int n = 0;

	for (i = 0; i < ctx->n_regions; i++) {
		if (level_of(ctx->regions[i].count) <= above)
			continue;
		if ((n && lev_buf_adds(out, ", ") < 0) || lev_buf_adds(out, ctx->regions[i].name) < 0)
			return -E2BIG;
		n++;
	}
	return n;
}
