/*
 * context.c - context regions, budgets, eviction and rendering (context.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/run/context.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

struct ctx_call {
	char *id;
	char *name;
	char *raw;
	json_t *input;
};

struct item {
	enum lev_item_kind kind;
	char *text;
	size_t len;
	uint64_t taint_id;
	uint64_t tokens;
	uint64_t unit;
	/* LEV_ITEM_ASSISTANT */
	struct ctx_call *calls;
	size_t n_calls;
	/* LEV_ITEM_TOOL_RESULT */
	char *call_id;
	bool is_error;
	uint64_t tag;		/* lev_context_add_routed()'s TAG; 0: none */
	char *key;		/* LEV_ITEM_NOTE: the key the model gave it, or NULL */
};

struct region {
	char *name;
	enum lev_region_kind kind;
	uint64_t limit;		/* tokens; 0: none */
	uint64_t max_items;	/* 0: none */
	bool keep;		/* persistent: never evicted */
	bool reject;		/* admission = "reject": a write that does not fit fails */
	bool notes;		/* context_write / context_append may write here */
	enum lev_volatility volatility;
	enum lev_strategy strategy;
	uint64_t overflow;
	uint64_t compact_count;
	uint64_t compact_trigger;	/* tokens past which compaction is due; 0: the limit */
	bool no_summary;	/* summarizable = false */
	size_t summary_to;	/* where its summaries go: itself, or a compact_history region */
	size_t taint_idx;
	struct item *items;
	size_t n, alloc;
	uint64_t tokens;
};

struct lev_context {
	struct region *regions;
	size_t n_regions;
	size_t conv;
	uint64_t window;
	size_t result_max;
	uint64_t total;
	uint64_t next_unit;
	uint64_t evictions;
	bool compactor;		/* compacting regions are summarised before each request */
	char *const *view;	/* borrowed: the regions rendered (NULL: all) */
	struct lev_taint_ctx *taint;
	uint64_t last_taint_id;		/* the entry added last (lev_context_mark_untrusted()) */
	lev_context_evict_fn on_evict;
	void *evict_data;
};

static void item_release(struct item *it)
{
	free(it->text);
	free(it->key);
	for (size_t i = 0; i < it->n_calls; i++) {
		free(it->calls[i].id);
		free(it->calls[i].name);
		free(it->calls[i].raw);
		json_decref(it->calls[i].input);
	}
	free(it->calls);
	free(it->call_id);
	memset(it, 0, sizeof(*it));
}

static uint64_t region_limit(const struct lev_region *r, uint64_t window)
{
	uint64_t lim = 0;

	if (r->budget_pct)
		lim = window * r->budget_pct / 100;
	/* min_tokens is a floor for the percentage; max_tokens caps either */
	if (r->budget_pct && r->min_tokens > lim)
		lim = r->min_tokens;
	if (r->max_tokens && (!lim || r->max_tokens < lim))
		lim = r->max_tokens;
	return lim;
}

static int add_region(struct lev_context *ctx, const char *name, enum lev_region_kind kind,
		      uint64_t limit, uint64_t max_items, struct lev_err *err)
{
	struct region *r;
	int idx;

	for (size_t i = 0; i < ctx->n_regions; i++)
		if (!strcmp(ctx->regions[i].name, name))
			return lev_err_set(err, LEV_EPARSE, "context region '%s' is declared twice",
					   name);
	idx = lev_taint_region_add(ctx->taint, name, err);
	if (idx < 0)
		return idx == -EEXIST ? idx : lev_err_wrap(err, "context region");
	ctx->regions = xreallocarray(ctx->regions, ctx->n_regions + 1, sizeof(*ctx->regions));
	r = &ctx->regions[ctx->n_regions++];
	memset(r, 0, sizeof(*r));
	r->name = xstrdup(name);
	r->kind = kind;
	r->limit = limit;
	r->max_items = max_items;
	r->notes = kind == LEV_REGION_TEMPORARY || kind == LEV_REGION_CLEARABLE;
	r->taint_idx = (size_t)idx;
	return 0;
}

/* Leviath's region keys, on a region add_region() made. */
static void region_keys(struct region *r, const struct lev_region *rg)
{
	r->keep = rg->persistent;
	r->reject = rg->admission_reject;
	r->volatility = rg->volatility;
	r->strategy = rg->strategy;
	r->overflow = rg->overflow;
	r->compact_count = rg->compact_count;
	r->no_summary = rg->not_summarizable;
	/*
	 * Leviath's agents keep their bibliography, plan and findings in pinned
	 * regions and sliding windows they fill themselves (sources_index,
	 * discovery, claims).  A pinned region the blueprint fills (a seed: the
	 * task, a caller input, files, a literal) and the task's region stay
	 * closed to notes: they are the person's and the author's words.
	 */
	if (r->kind == LEV_REGION_SLIDING_WINDOW ||
	    (r->kind == LEV_REGION_PINNED && rg->seed.kind == LEV_SEED_NONE &&
	     strcmp(rg->name, "task") != 0))
		r->notes = true;
	if (rg->compact_at_pct && r->limit)
		r->compact_trigger = r->limit * rg->compact_at_pct / 100;
	if (rg->threshold_tokens &&
	    (!r->compact_trigger || rg->threshold_tokens < r->compact_trigger))
		r->compact_trigger = rg->threshold_tokens;
}

/* Region I's summaries go to the first region naming it as source_region, else to itself. */
static void summary_target(struct lev_context *ctx, const struct lev_region *regions, size_t n,
			   size_t i)
{
	ctx->regions[i].summary_to = i;
	for (size_t j = 0; j < n; j++) {
		if (j != i && regions[j].source_region &&
		    !strcmp(regions[j].source_region, regions[i].name)) {
			ctx->regions[i].summary_to = j;
			return;
		}
	}
}

int lev_context_new(const struct lev_region *regions, size_t n, const struct lev_context_opts *opts,
		    struct lev_context **out, struct lev_err *err)
{
	struct lev_context *ctx = xcalloc(1, sizeof(*ctx));
	bool have_conv = false;
	int r = 0;

	ctx->window = opts && opts->window_tokens ? opts->window_tokens : LEV_CONTEXT_DEFAULT_WINDOW;
	ctx->result_max = opts && opts->result_max ? opts->result_max
						   : LEV_CONTEXT_DEFAULT_RESULT_MAX;
	if (opts) {
		ctx->on_evict = opts->on_evict;
		ctx->evict_data = opts->evict_data;
	}
	ctx->taint = lev_taint_ctx_new();
	ctx->next_unit = 1;

	if (n == 0) {
		r = add_region(ctx, "system", LEV_REGION_PINNED, 8000, 0, err);
		if (r == 0)
			r = add_region(ctx, "conversation", LEV_REGION_SLIDING_WINDOW, 10000, 10, err);
		if (r < 0)
			goto fail;
		ctx->conv = 1;
		*out = ctx;
		return 0;
	}

	if (n > LEV_BLUEPRINT_MAX_REGIONS) {
		r = lev_err_set(err, LEV_EPARSE, "too many context regions (at most %d)",
				LEV_BLUEPRINT_MAX_REGIONS);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		r = add_region(ctx, regions[i].name, regions[i].kind,
			       region_limit(&regions[i], ctx->window), regions[i].max_items, err);
		if (r < 0)
			goto fail;
		region_keys(&ctx->regions[i], &regions[i]);
	}
	for (size_t i = 0; i < n; i++)
		summary_target(ctx, regions, n, i);
	/* the conversation: "conversation", else the first sliding window */
	for (size_t i = 0; i < ctx->n_regions; i++) {
		if (!strcmp(ctx->regions[i].name, "conversation")) {
			if (ctx->regions[i].kind == LEV_REGION_PINNED) {
				r = lev_err_set(err, LEV_EPARSE,
						"context region 'conversation' cannot be pinned: it "
						"holds the messages, which must be able to leave");
				goto fail;
			}
			ctx->conv = i;
			have_conv = true;
			break;
		}
	}
	for (size_t i = 0; !have_conv && i < ctx->n_regions; i++) {
		if (ctx->regions[i].kind == LEV_REGION_SLIDING_WINDOW) {
			ctx->conv = i;
			have_conv = true;
		}
	}
	if (!have_conv) {
		r = add_region(ctx, "conversation", LEV_REGION_SLIDING_WINDOW, 10000, 10, err);
		if (r < 0)
			goto fail;
		ctx->conv = ctx->n_regions - 1;
	}
	*out = ctx;
	return 0;
fail:
	lev_context_free(ctx);
	return r;
}

struct lev_context *lev_context_free(struct lev_context *ctx)
{
	if (!ctx)
		return NULL;
	for (size_t i = 0; i < ctx->n_regions; i++) {
		for (size_t j = 0; j < ctx->regions[i].n; j++)
			item_release(&ctx->regions[i].items[j]);
		free(ctx->regions[i].items);
		free(ctx->regions[i].name);
	}
	free(ctx->regions);
	lev_taint_ctx_free(ctx->taint);
	free(ctx);
	return NULL;
}

size_t lev_context_region_count(const struct lev_context *ctx)
{
	return ctx->n_regions;
}

int lev_context_region_find(const struct lev_context *ctx, const char *name)
{
	for (size_t i = 0; name && i < ctx->n_regions; i++)
		if (!strcmp(ctx->regions[i].name, name))
			return (int)i;
	return -ENOENT;
}

int lev_context_region_find_shown(const struct lev_context *ctx, const char *name)
{
	int idx = lev_context_region_find(ctx, name);

	if (idx >= 0 && (size_t)idx != ctx->conv && ctx->view &&
	    !lev_strv_contains(ctx->view, name))
		return -ENOENT;
	return idx;
}

const char *lev_context_region_name(const struct lev_context *ctx, size_t region)
{
	return region < ctx->n_regions ? ctx->regions[region].name : NULL;
}

enum lev_region_kind lev_context_region_kind(const struct lev_context *ctx, size_t region)
{
	return ctx->regions[region].kind;
}

uint64_t lev_context_region_limit(const struct lev_context *ctx, size_t region)
{
	return ctx->regions[region].limit;
}

size_t lev_context_region_items(const struct lev_context *ctx, size_t region)
{
	return ctx->regions[region].n;
}

uint64_t lev_context_region_tokens(const struct lev_context *ctx, size_t region)
{
	return ctx->regions[region].tokens;
}

enum lev_level lev_context_region_level(const struct lev_context *ctx, size_t region)
{
	return lev_taint_region_level(ctx->taint, ctx->regions[region].taint_idx);
}

size_t lev_context_conversation(const struct lev_context *ctx)
{
	return ctx->conv;
}

int lev_context_first_pinned(const struct lev_context *ctx)
{
	for (size_t i = 0; i < ctx->n_regions; i++)
		if (ctx->regions[i].kind == LEV_REGION_PINNED)
			return (int)i;
	return -ENOENT;
}

uint64_t lev_context_tokens(const struct lev_context *ctx)
{
	return ctx->total;
}

uint64_t lev_context_window(const struct lev_context *ctx)
{
	return ctx->window;
}

uint64_t lev_context_evictions(const struct lev_context *ctx)
{
	return ctx->evictions;
}

struct lev_taint_ctx *lev_context_taint(struct lev_context *ctx)
{
	return ctx->taint;
}

enum lev_level lev_context_taint_level(const struct lev_context *ctx)
{
	return lev_taint_current(ctx->taint);
}

enum lev_integrity lev_context_integrity(const struct lev_context *ctx)
{
	return lev_taint_integrity(ctx->taint);
}

void lev_context_mark_untrusted(struct lev_context *ctx)
{
	if (ctx->last_taint_id)
		(void)lev_taint_set_untrusted(ctx->taint, ctx->last_taint_id);
}

/* ---- eviction ----------------------------------------------------------- */

static void remove_front(struct lev_context *ctx, struct region *r, size_t count, bool evict)
{
	for (size_t i = 0; i < count; i++) {
		struct item *it = &r->items[i];
		enum lev_level label = LEV_PUBLIC;

		(void)lev_taint_entry_label(ctx->taint, it->taint_id, &label);
		(void)lev_taint_evict(ctx->taint, it->taint_id, NULL);
		r->tokens -= it->tokens;
		ctx->total -= it->tokens;
		if (evict)
			ctx->evictions++;
		if (evict && ctx->on_evict)
			ctx->on_evict(ctx->evict_data, r->name, it->kind, it->tokens, label);
		item_release(it);
	}
	memmove(r->items, r->items + count, (r->n - count) * sizeof(*r->items));
	r->n -= count;
}

/* Remove item IDX of R (not an eviction: the run asked for it). */
static void remove_at(struct lev_context *ctx, struct region *r, size_t idx)
{
	struct item *it = &r->items[idx];

	(void)lev_taint_evict(ctx->taint, it->taint_id, NULL);
	r->tokens -= it->tokens;
	ctx->total -= it->tokens;
	item_release(it);
	memmove(r->items + idx, r->items + idx + 1, (r->n - idx - 1) * sizeof(*r->items));
	r->n--;
}

static void remove_at_range(struct lev_context *ctx, struct region *r, size_t first,
			    size_t count)
{
	for (size_t i = 0; i < count && first < r->n; i++)
		remove_at(ctx, r, first);
}

/* Items in the oldest unit of R. */
static size_t oldest_unit_len(const struct region *r)
{
	size_t k = 1;

	while (k < r->n && r->items[k].unit == r->items[0].unit)
		k++;
	return k;
}

/* True when R holds more than one unit. */
static bool several_units(const struct region *r)
{
	return r->n > 0 && r->items[0].unit != r->items[r->n - 1].unit;
}

static bool region_over(const struct region *r)
{
	return (r->max_items && r->n > r->max_items) || (r->limit && r->tokens > r->limit);
}

static void enforce_region(struct lev_context *ctx, struct region *r)
{
	uint64_t dropped = 0;

	if (r->kind == LEV_REGION_PINNED || r->keep || r->reject)
		return;
	/* summarised before the next request (lev_context_compact_due()) */
	if (r->strategy == LEV_STRATEGY_COMPACT && !r->no_summary && ctx->compactor)
		return;
	if (r->strategy == LEV_STRATEGY_BULK && r->overflow) {
		/* once over, `overflow` entries go at once (so it is not over again at once) */
		while (several_units(r) && (region_over(r) || (dropped && dropped < r->overflow))) {
			size_t k = oldest_unit_len(r);

			remove_front(ctx, r, k, true);
			dropped += k;
		}
		return;
	}
	while (region_over(r) && several_units(r))
		remove_front(ctx, r, oldest_unit_len(r), true);
}

/* Evict one unit somewhere to relieve the window; false when nothing can go. */
static bool evict_for_window(struct lev_context *ctx)
{
	static const enum lev_region_kind order[] = {
		LEV_REGION_TEMPORARY,
		LEV_REGION_CLEARABLE,
		LEV_REGION_SLIDING_WINDOW,
	};

	for (size_t k = 0; k < ARRAY_SIZE(order); k++) {
		for (size_t i = 0; i < ctx->n_regions; i++) {
			struct region *r = &ctx->regions[i];

			if (r->kind != order[k] || r->n == 0 || r->keep ||
			    (r->reject && i != ctx->conv))
				continue;
			/* the conversation keeps its newest unit (calls awaiting results) */
			if (i == ctx->conv && !several_units(r))
				continue;
			remove_front(ctx, r, oldest_unit_len(r), true);
			return true;
		}
	}
	return false;
}

static void enforce(struct lev_context *ctx, struct region *r)
{
	enforce_region(ctx, r);
	while (ctx->total > ctx->window && evict_for_window(ctx))
		;
}

/* ---- adding ------------------------------------------------------------- */

static char *memdup_nul(const char *p, size_t n)
{
	char *s = xmalloc(n + 1);

	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/*
 * Cut TEXT to at most CAP bytes at a UTF-8 boundary, with a note (naming
 * the token ceiling CAP_TOKENS when it is what set CAP).
 */
static char *cut_text_tokens(const char *text, size_t len, size_t cap, uint64_t cap_tokens,
			     size_t *len_out, bool *cut)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t keep;

	if (len <= cap) {
		*cut = false;
		*len_out = len;
		return memdup_nul(text, len);
	}
	keep = cap;
	while (keep > 0 && ((unsigned char)text[keep] & 0xc0) == 0x80)
		keep--;
	(void)lev_buf_add(&b, text, keep);
	if (cap_tokens)
		(void)lev_buf_addf(&b, "\n[output truncated to the result ceiling of %llu tokens: "
				   "the first %zu of %zu bytes are shown]",
				   (unsigned long long)cap_tokens, keep, len);
	else
		(void)lev_buf_addf(&b, "\n[output truncated: the first %zu of %zu bytes are shown]",
				   keep, len);
	*cut = true;
	return lev_buf_detach(&b, len_out);
}

static char *cut_text(const char *text, size_t len, size_t cap, size_t *len_out, bool *cut)
{
	return cut_text_tokens(text, len, cap, 0, len_out, cut);
}

/* The byte cap for a token ceiling MAX_TOKENS (0: none) under CAP. */
static size_t token_cap(uint64_t max_tokens, size_t cap)
{
	if (max_tokens && max_tokens < cap / 4)
		cap = (size_t)max_tokens * 4;
	return cap;
}

static struct item *push_item(struct region *r)
{
	if (r->n == r->alloc) {
		r->alloc = r->alloc ? r->alloc * 2 : 8;
		r->items = xreallocarray(r->items, r->alloc, sizeof(*r->items));
	}
	memset(&r->items[r->n], 0, sizeof(r->items[0]));
	return &r->items[r->n++];
}

/* Register the taint entry for the item about to be pushed, then push it. */
static int add_item(struct lev_context *ctx, size_t region, enum lev_item_kind kind, char *text,
		    size_t len, uint64_t tokens, bool model_text, enum lev_level label,
		    uint64_t unit, struct item **out, struct lev_err *err)
{
	struct region *r = &ctx->regions[region];
	struct item *it;
	uint64_t id = 0;
	int ret;

	if (r->kind == LEV_REGION_PINNED && r->limit && r->tokens + tokens > r->limit) {
		ret = lev_err_set(err, -E2BIG,
				  "context region '%s' is pinned with a budget of %llu tokens, and "
				  "this entry (about %llu tokens) would take it to %llu",
				  r->name, (unsigned long long)r->limit, (unsigned long long)tokens,
				  (unsigned long long)(r->tokens + tokens));
		free(text);
		return ret;
	}
	if (r->reject && region != ctx->conv &&
	    ((r->limit && r->tokens + tokens > r->limit) ||
	     (r->max_items && r->n + 1 > r->max_items))) {
		ret = lev_err_set(err, -ENOSPC,
				  "context region '%s' is full (%llu of %llu tokens, %zu entries) "
				  "and rejects this entry (about %llu tokens); release something "
				  "with context_delete first",
				  r->name, (unsigned long long)r->tokens,
				  (unsigned long long)r->limit, r->n, (unsigned long long)tokens);
		free(text);
		return ret;
	}
	if (model_text)
		ret = lev_taint_add_model_text(ctx->taint, r->taint_idx, label, &id, err);
	else
		ret = lev_taint_add_entry(ctx->taint, r->taint_idx, label, &id, err);
	if (ret < 0) {
		free(text);
		return ret;
	}
	it = push_item(r);
	it->kind = kind;
	it->text = text;
	it->len = len;
	it->tokens = tokens;
	it->taint_id = id;
	ctx->last_taint_id = id;
	it->unit = unit ? unit : ctx->next_unit++;
	r->tokens += tokens;
	ctx->total += tokens;
	if (out)
		*out = it;
	return 0;
}

static int check_region(const struct lev_context *ctx, size_t region, struct lev_err *err)
{
	if (region >= ctx->n_regions)
		return lev_err_set(err, -ENOENT, "no such context region");
	return 0;
}

int lev_context_add_text(struct lev_context *ctx, size_t region, const char *text, size_t len,
			 enum lev_level label, struct lev_err *err)
{
	size_t n;
	bool cut;
	char *t;
	int r;

	r = check_region(ctx, region, err);
	if (r < 0)
		return r;
	t = cut_text(text, len, LEV_CONTEXT_ENTRY_MAX, &n, &cut);
	r = add_item(ctx, region, region == ctx->conv ? LEV_ITEM_USER : LEV_ITEM_TEXT, t, n,
		     lev_context_estimate(n), false, label, 0, NULL, err);
	if (r < 0)
		return r;
	enforce(ctx, &ctx->regions[region]);
	return 0;
}

static int note_region_ok(const struct lev_context *ctx, size_t region, struct lev_err *err)
{
	const struct region *r;
	int ret = check_region(ctx, region, err);

	if (ret < 0)
		return ret;
	r = &ctx->regions[region];
	if (region == ctx->conv || !r->notes)
		return lev_err_set(err, -EPERM,
				   "region '%s' is %s; notes go to temporary, clearable and "
				   "sliding_window regions, and to pinned regions without a seed",
				   r->name,
				   region == ctx->conv ? "the conversation"
				   : r->kind == LEV_REGION_PINNED ? "pinned and filled by its seed"
								  : lev_region_kind_name(r->kind));
	return 0;
}

static int add_note(struct lev_context *ctx, size_t region, const char *text, size_t len,
		    const char *key, enum lev_level seen, struct lev_err *err)
{
	struct region *r = &ctx->regions[region];
	size_t cap = LEV_CONTEXT_ENTRY_MAX, n;
	struct item *it = NULL;
	bool cut;
	char *t;
	int ret;

	/* a note alone may not outgrow its region: cut it to fit */
	if (r->limit && r->limit * 4 < cap)
		cap = (size_t)r->limit * 4;
	if (cap < LEV_CONTEXT_RESULT_FLOOR)
		cap = LEV_CONTEXT_RESULT_FLOOR;
	t = cut_text(text, len, cap, &n, &cut);
	ret = add_item(ctx, region, LEV_ITEM_NOTE, t, n, lev_context_estimate(n), true, seen, 0,
		       &it, err);
	if (ret < 0)
		return ret;
	if (key)
		it->key = xstrdup(key);
	enforce(ctx, r);
	return 0;
}

int lev_context_add_note(struct lev_context *ctx, size_t region, const char *text, size_t len,
			 enum lev_level seen, struct lev_err *err)
{
	int r = note_region_ok(ctx, region, err);

	if (r < 0)
		return r;
	return add_note(ctx, region, text, len, NULL, seen, err);
}

int lev_context_write_note(struct lev_context *ctx, size_t region, const char *text, size_t len,
			   enum lev_level seen, struct lev_err *err)
{
	enum lev_level before;
	int r = note_region_ok(ctx, region, err);

	if (r < 0)
		return r;
	/* the note may be a copy of what is being cleared: keep its label */
	before = lev_level_max(seen, lev_taint_current(ctx->taint));
	/* a pinned region open to notes is the agent's: its notes are replaced */
	if (ctx->regions[region].n)
		remove_front(ctx, &ctx->regions[region], ctx->regions[region].n, false);
	return add_note(ctx, region, text, len, NULL, before, err);
}

/* The index of REGION's newest note keyed KEY, or -1. */
static ssize_t keyed_at(const struct region *r, const char *key)
{
	for (size_t i = r->n; i-- > 0;)
		if (r->items[i].key && !strcmp(r->items[i].key, key))
			return (ssize_t)i;
	return -1;
}

int lev_context_keyed_note(struct lev_context *ctx, size_t region, const char *key,
			   const char *text, size_t len, bool replace, enum lev_level seen,
			   struct lev_err *err)
{
	enum lev_level before = seen;
	ssize_t at;
	int r = note_region_ok(ctx, region, err);

	if (r < 0)
		return r;
	at = replace ? keyed_at(&ctx->regions[region], key) : -1;
	if (at >= 0) {
		/* the note may be a copy of what it replaces: keep its label */
		before = lev_level_max(seen, lev_taint_current(ctx->taint));
		remove_at(ctx, &ctx->regions[region], (size_t)at);
	}
	return add_note(ctx, region, text, len, key, before, err);
}

ssize_t lev_context_keyed_index(const struct lev_context *ctx, size_t region, const char *key)
{
	return region < ctx->n_regions ? keyed_at(&ctx->regions[region], key) : -1;
}

char *lev_context_keyed_text(const struct lev_context *ctx, size_t region, const char *key)
{
	const struct region *r;
	ssize_t at;

	if (region >= ctx->n_regions)
		return NULL;
	r = &ctx->regions[region];
	at = keyed_at(r, key);
	return at < 0 ? NULL : xstrndup(r->items[at].text ? r->items[at].text : "",
					r->items[at].text ? r->items[at].len : 0);
}

int lev_context_clear(struct lev_context *ctx, size_t region, struct lev_err *err)
{
	struct region *r;
	int ret = check_region(ctx, region, err);

	if (ret < 0)
		return ret;
	r = &ctx->regions[region];
	if (r->kind == LEV_REGION_PINNED)
		return lev_err_set(err, -EPERM, "region '%s' is pinned and cannot be cleared",
				   r->name);
	if (r->n)
		remove_front(ctx, r, r->n, false);
	return 0;
}

int lev_context_delete(struct lev_context *ctx, size_t region, size_t first, size_t count,
		       uint64_t *tokens_out, struct lev_err *err)
{
	struct region *r;
	uint64_t before;
	int ret = check_region(ctx, region, err);

	if (ret < 0)
		return ret;
	r = &ctx->regions[region];
	if (r->kind == LEV_REGION_PINNED || region == ctx->conv)
		return lev_err_set(err, -EPERM, "region '%s' is %s: its entries cannot be released",
				   r->name, region == ctx->conv ? "the conversation" : "pinned");
	if (first >= r->n)
		return lev_err_set(err, -ENOENT,
				   "region '%s' has %zu entries; there is no entry %zu", r->name,
				   r->n, first);
	if (count > r->n - first)
		count = r->n - first;
	before = r->tokens;
	for (size_t i = 0; i < count; i++)
		remove_at(ctx, r, first);
	if (tokens_out)
		*tokens_out = before - r->tokens;
	return (int)count;
}

char *lev_context_region_text(const struct lev_context *ctx, size_t region)
{
	const struct region *r;
	struct lev_buf b = LEV_BUF_INIT;

	if (region >= ctx->n_regions)
		return xstrdup("");
	r = &ctx->regions[region];
	for (size_t i = 0; i < r->n; i++) {
		if (i)
			(void)lev_buf_adds(&b, "\n\n");
		if (r->items[i].text)
			(void)lev_buf_add(&b, r->items[i].text, r->items[i].len);
	}
	return lev_buf_detach(&b, NULL);
}

int lev_context_add_assistant(struct lev_context *ctx, const struct lev_infer_response *resp,
			      enum lev_level seen, struct lev_err *err)
{
	struct item *it = NULL;
	const char *text = resp->text ? resp->text : "";
	size_t len = strlen(text), n;
	uint64_t tokens;
	bool cut;
	char *t;
	int r;

	t = cut_text(text, len, LEV_CONTEXT_ENTRY_MAX, &n, &cut);
	tokens = lev_context_estimate(n);
	for (size_t i = 0; i < resp->n_calls; i++)
		tokens += lev_context_estimate(strlen(resp->calls[i].name ? resp->calls[i].name : "") +
					       strlen(resp->calls[i].raw_arguments
							      ? resp->calls[i].raw_arguments
							      : ""));
	r = add_item(ctx, ctx->conv, LEV_ITEM_ASSISTANT, t, n, tokens, true, seen, 0, &it, err);
	if (r < 0)
		return r;
	if (resp->n_calls) {
		it->calls = xcalloc(resp->n_calls, sizeof(*it->calls));
		it->n_calls = resp->n_calls;
		for (size_t i = 0; i < resp->n_calls; i++) {
			const struct lev_tool_call *c = &resp->calls[i];

			it->calls[i].id = xstrdup(lev_tool_call_wire_id(c));
			it->calls[i].name = xstrdup(c->name ? c->name : "");
			it->calls[i].raw = c->raw_arguments ? xstrdup(c->raw_arguments) : NULL;
			it->calls[i].input = c->arguments ? json_incref(c->arguments) : NULL;
		}
	}
	enforce(ctx, &ctx->regions[ctx->conv]);
	return 0;
}

/* The newest assistant item of the conversation, or NULL. */
static const struct item *current_assistant(const struct lev_context *ctx)
{
	const struct region *r = &ctx->regions[ctx->conv];

	for (size_t i = r->n; i > 0; i--) {
		if (r->items[i - 1].kind == LEV_ITEM_ASSISTANT)
			return &r->items[i - 1];
		if (r->items[i - 1].kind != LEV_ITEM_TOOL_RESULT)
			return NULL;
	}
	return NULL;
}

size_t lev_context_result_cap(const struct lev_context *ctx, size_t n_calls)
{
	const struct region *conv = &ctx->regions[ctx->conv];
	uint64_t limit = conv->limit ? conv->limit : ctx->window;
	uint64_t share = limit * 4 / 2 / (n_calls ? n_calls : 1);
	size_t cap = ctx->result_max;

	if (share < cap)
		cap = (size_t)share;
	if (cap < LEV_CONTEXT_RESULT_FLOOR)
		cap = LEV_CONTEXT_RESULT_FLOOR;
	return cap;
}

int lev_context_add_tool_result_max(struct lev_context *ctx, const char *call_id,
				    const char *text, size_t len, bool is_error,
				    enum lev_level label, size_t cap, uint64_t max_tokens,
				    bool *truncated_out, struct lev_err *err)
{
	const struct item *a = current_assistant(ctx);
	struct item *it = NULL;
	bool known = false, cut;
	size_t n;
	char *t;
	int r;

	if (!a)
		return lev_err_set(err, -EINVAL, "a tool result needs the assistant turn that made "
				   "the call");
	for (size_t i = 0; i < a->n_calls; i++)
		if (lev_streq(a->calls[i].id, call_id))
			known = true;
	if (!known)
		return lev_err_set(err, -ENOENT, "no call '%s' in the current turn", call_id);
	if (!cap)
		cap = lev_context_result_cap(ctx, a->n_calls);
	t = cut_text_tokens(text ? text : "", text ? len : 0, token_cap(max_tokens, cap),
			    max_tokens && max_tokens * 4 < cap ? max_tokens : 0, &n, &cut);
	r = add_item(ctx, ctx->conv, LEV_ITEM_TOOL_RESULT, t, n, lev_context_estimate(n), false,
		     label, a->unit, &it, err);
	if (r < 0)
		return r;
	it->call_id = xstrdup(call_id);
	it->is_error = is_error;
	if (truncated_out)
		*truncated_out = cut;
	enforce(ctx, &ctx->regions[ctx->conv]);
	return 0;
}

int lev_context_add_tool_result(struct lev_context *ctx, const char *call_id, const char *text,
				size_t len, bool is_error, enum lev_level label, size_t cap,
				bool *truncated_out, struct lev_err *err)
{
	return lev_context_add_tool_result_max(ctx, call_id, text, len, is_error, label, cap, 0,
					       truncated_out, err);
}

int lev_context_add_routed(struct lev_context *ctx, size_t region, const char *text, size_t len,
			   enum lev_level label, uint64_t max_tokens, uint64_t tag,
			   bool *truncated_out, struct lev_err *err)
{
	struct item *it = NULL;
	size_t n, cap = ctx->result_max;
	bool cut;
	char *t;
	int r = check_region(ctx, region, err);

	if (r < 0)
		return r;
	if (region == ctx->conv)
		return lev_err_set(err, -EINVAL, "a routed result goes to a region other than the "
				   "conversation");
	t = cut_text_tokens(text ? text : "", text ? len : 0, token_cap(max_tokens, cap),
			    max_tokens && max_tokens * 4 < cap ? max_tokens : 0, &n, &cut);
	r = add_item(ctx, region, LEV_ITEM_TEXT, t, n, lev_context_estimate(n), false, label, 0,
		     &it, err);
	if (r < 0)
		return r;
	it->tag = tag;
	if (truncated_out)
		*truncated_out = cut;
	enforce(ctx, &ctx->regions[region]);
	return 0;
}

void lev_context_drop_tagged(struct lev_context *ctx, uint64_t tag)
{
	for (size_t i = 0; tag && i < ctx->n_regions; i++) {
		struct region *r = &ctx->regions[i];

		for (size_t j = r->n; j > 0; j--)
			if (r->items[j - 1].tag == tag)
				remove_at(ctx, r, j - 1);
	}
}

/* ---- compaction --------------------------------------------------------- */

void lev_context_set_view(struct lev_context *ctx, char *const *names)
{
	ctx->view = names;
}

void lev_context_set_compactor(struct lev_context *ctx, bool on)
{
	ctx->compactor = on;
}

bool lev_context_compact_due(const struct lev_context *ctx, size_t region)
{
	const struct region *r;

	if (region >= ctx->n_regions)
		return false;
	r = &ctx->regions[region];
	if (r->strategy != LEV_STRATEGY_COMPACT || r->no_summary || r->n < 2)
		return false;
	/* the conversation folds whole units and keeps its newest one */
	if (region == ctx->conv && !several_units(r))
		return false;
	return region_over(r) || (r->compact_trigger && r->tokens > r->compact_trigger);
}

struct lev_context_label lev_context_summary_label(const struct lev_context_label *sources,
						   size_t n)
{
	struct lev_context_label l = { LEV_PUBLIC, LEV_TRUSTED };

	/*
	 * a summary is a copy of all its sources: it carries the highest of
	 * their sensitivities, and is untrusted when any of them is
	 */
	for (size_t i = 0; i < n; i++) {
		l.level = lev_level_max(l.level, sources[i].level);
		if (sources[i].integrity != LEV_TRUSTED)
			l.integrity = LEV_UNTRUSTED;
	}
	return l;
}

/*
 * How many of R's oldest entries one summary folds: compact_count, else
 * half (at least 2).  The conversation folds whole units (a model turn with
 * its results) and never its newest unit.
 */
static size_t compact_n(const struct lev_context *ctx, const struct region *r)
{
	size_t n = r->compact_count ? (size_t)r->compact_count : r->n / 2;
	size_t last = r->n;

	if (n < 2)
		n = 2;
	if (r != &ctx->regions[ctx->conv])
		return n > r->n ? r->n : n;
	while (last > 0 && r->items[last - 1].unit == r->items[r->n - 1].unit)
		last--;
	while (n < last && r->items[n].unit == r->items[n - 1].unit)
		n++;
	return n > last ? last : n;
}

/* ITEM as the summariser reads it: a conversation entry says whose it is. */
static void source_text(const struct lev_context *ctx, const struct region *r,
			const struct item *it, struct lev_buf *b)
{
	static const char *const who[] = {
		[LEV_ITEM_USER] = "user", [LEV_ITEM_ASSISTANT] = "assistant",
		[LEV_ITEM_TOOL_RESULT] = "tool result",
	};

	if (r != &ctx->regions[ctx->conv]) {
		(void)lev_buf_add(b, it->text, it->len);
		return;
	}
	(void)lev_buf_addf(b, "[%s]", (size_t)it->kind < ARRAY_SIZE(who) && who[it->kind]
					      ? who[it->kind] : "note");
	if (it->len) {
		(void)lev_buf_adds(b, " ");
		(void)lev_buf_add(b, it->text, it->len);
	}
	for (size_t c = 0; c < it->n_calls; c++)
		(void)lev_buf_addf(b, "\n(called %s with %s)", it->calls[c].name,
				   it->calls[c].raw ? it->calls[c].raw : "{}");
}

char *lev_context_compact_source(const struct lev_context *ctx, size_t region, size_t *count,
				 struct lev_context_label *label)
{
	const struct region *r = &ctx->regions[region];
	size_t n = compact_n(ctx, r);
	struct lev_context_label *labels = xcalloc(n ? n : 1, sizeof(*labels));
	struct lev_buf b = LEV_BUF_INIT;

	for (size_t i = 0; i < n; i++) {
		/* an entry whose labels cannot be read is private and untrusted */
		labels[i] = (struct lev_context_label){ LEV_PRIVATE, LEV_UNTRUSTED };
		(void)lev_taint_entry_label(ctx->taint, r->items[i].taint_id, &labels[i].level);
		(void)lev_taint_entry_integrity(ctx->taint, r->items[i].taint_id,
						&labels[i].integrity);
		if (i)
			(void)lev_buf_adds(&b, "\n\n");
		source_text(ctx, r, &r->items[i], &b);
	}
	*label = lev_context_summary_label(labels, n);
	*count = n;
	free(labels);
	return lev_buf_detach(&b, NULL);
}

int lev_context_compact_apply(struct lev_context *ctx, size_t region, size_t count,
			      const char *summary, size_t len, struct lev_context_label label,
			      struct lev_err *err)
{
	struct region *r = &ctx->regions[region];
	bool conv = region == ctx->conv;
	size_t to = conv ? region : r->summary_to;
	struct region *t = &ctx->regions[to];
	struct item *it = NULL, held;
	size_t n;
	bool cut;
	char *text;
	int ret;

	if (count > r->n)
		return lev_err_set(err, -EINVAL, "region '%s' has only %zu entries", r->name, r->n);
	if (conv) {
		/* the model reads it as the conversation's first user turn */
		_cleanup_free_ char *s = xasprintf("%s\n\n%.*s", LEV_CONTEXT_SUMMARY_NOTE,
						   (int)(len > INT_MAX ? INT_MAX : len), summary);

		text = cut_text(s, strlen(s), LEV_CONTEXT_ENTRY_MAX, &n, &cut);
	} else {
		text = cut_text(summary, len, LEV_CONTEXT_ENTRY_MAX, &n, &cut);
	}
	/* add the summary first: its labels are in place before its sources' leave */
	ret = add_item(ctx, to, conv ? LEV_ITEM_USER : LEV_ITEM_TEXT, text, n,
		       lev_context_estimate(n), false, label.level, 0, &it, err);
	if (ret < 0)
		return ret;
	if (label.integrity != LEV_TRUSTED)
		(void)lev_taint_set_untrusted(ctx->taint, it->taint_id);
	if (to == region) {
		/* in place, as the oldest entry, ahead of what it replaces */
		held = *it;
		memmove(t->items + 1, t->items, (t->n - 1) * sizeof(*t->items));
		t->items[0] = held;
		remove_at_range(ctx, t, 1, count);
	} else {
		remove_at_range(ctx, r, 0, count);
	}
	enforce(ctx, t);
	return 0;
}

void lev_context_enforce(struct lev_context *ctx, size_t region)
{
	bool on = ctx->compactor;

	if (region >= ctx->n_regions)
		return;
	ctx->compactor = false;
	enforce(ctx, &ctx->regions[region]);
	ctx->compactor = on;
}

/* ---- rendering ---------------------------------------------------------- */

static void render_region(const struct region *r, struct lev_buf *sys)
{
	if (r->n == 0)
		return;
	if (sys->len)
		(void)lev_buf_adds(sys, "\n\n");
	(void)lev_buf_addf(sys, "## %s\n\n", r->name);
	for (size_t j = 0; j < r->n; j++) {
		if (j)
			(void)lev_buf_adds(sys, "\n\n");
		(void)lev_buf_add(sys, r->items[j].text, r->items[j].len);
	}
}

void lev_context_render(const struct lev_context *ctx, const char *system_prompt,
			struct lev_infer_request *req)
{
	const struct region *conv = &ctx->regions[ctx->conv];
	struct lev_buf sys = LEV_BUF_INIT;
	struct lev_message *m = NULL;

	if (system_prompt && *system_prompt)
		(void)lev_buf_adds(&sys, system_prompt);
	/* volatility: stable regions first (the cacheable prefix), rewritten ones last */
	for (int vol = _LEV_VOL_MAX - 1; vol >= 0; vol--)
		for (size_t i = 0; i < ctx->n_regions; i++)
			if (i != ctx->conv &&
			    ctx->regions[i].volatility == (enum lev_volatility)vol &&
			    (!ctx->view || lev_strv_contains(ctx->view, ctx->regions[i].name)))
				render_region(&ctx->regions[i], &sys);
	lev_request_set_system(req, sys.len ? sys.buf : NULL);
	lev_buf_release(&sys);

	if (conv->n && conv->items[0].kind != LEV_ITEM_USER) {
		m = lev_request_add_message(req, LEV_ROLE_USER);
		lev_message_add_text(m, "[earlier turns of this conversation were removed to fit "
					"the context budget]");
	}
	for (size_t i = 0; i < conv->n; i++) {
		const struct item *it = &conv->items[i];

		switch (it->kind) {
		case LEV_ITEM_ASSISTANT:
			m = lev_request_add_message(req, LEV_ROLE_ASSISTANT);
			if (it->len)
				lev_message_add_text(m, it->text);
			for (size_t c = 0; c < it->n_calls; c++)
				lev_message_add_tool_use(m, it->calls[c].id, it->calls[c].name,
							 it->calls[c].input, it->calls[c].raw);
			break;
		case LEV_ITEM_TOOL_RESULT:
			if (!m || m->role != LEV_ROLE_USER)
				m = lev_request_add_message(req, LEV_ROLE_USER);
			lev_message_add_tool_result(m, it->call_id, it->text, it->is_error);
			break;
		default:
			if (!m || m->role != LEV_ROLE_USER)
				m = lev_request_add_message(req, LEV_ROLE_USER);
			lev_message_add_text(m, it->text);
			break;
		}
	}
}
