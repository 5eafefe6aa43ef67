/*
 * taint.h - taint tracking: tool classifications, labelled context regions,
 * and the targets of outbound calls.
 *
 * Levels are `enum lev_level` from types.h: Public < Internal < Private.
 *
 * Every tool has a classification: the sensitivity of what it returns (the
 * label its results get), its direction (only outbound tools are gated) and
 * its clearance (the most sensitive context it may run under without a
 * rule or the user's say-so).  Built-ins follow the original tool, with
 * read_files classified like read_file; every tool that can send bytes off
 * the machine is outbound, and a tool lev does not know fails closed as
 * public/outbound/public.
 *
 * A `struct lev_taint_ctx` mirrors the runtime's context window: named
 * regions holding entries, each with a label.  A region's level is the max
 * over its live entries, the run's taint the max over regions, so evicting
 * an entry lowers taint again.  Text the model writes (assistant turns,
 * notes, summaries) is labelled with the taint that was live when it was
 * produced and keeps that label when its sources go: there is no way to
 * launder a Private result by copying it and evicting the original.
 *
 * Every entry also carries an integrity (types.h): trusted (the user's
 * task, the blueprint's prompts, files the user trusts) or untrusted
 * (network results, MCP and script results, files the policy marks
 * untrusted).  The context's integrity is untrusted while any untrusted
 * entry is live.  Model text is untrusted when the context the model was
 * shown (lev_taint_mark_seen()) or the live context is untrusted, and keeps
 * that label when its sources are evicted: the same no-laundering rule.
 *
 * Ownership: the ctx owns its regions and entries; names returned by
 * getters borrow from it.  Target lists (strv) returned through `char ***`
 * belong to the caller (lev_strv_free()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "liblev/base/buf.h"
#include "liblev/base/error.h"
#include "liblev/base/tooltable.h"
#include "liblev/base/types.h"

struct json_t;

/* "inbound", "internal", "outbound"; parse is case-insensitive, 0 or -EINVAL. */
const char *lev_direction_name(enum lev_direction d);
int lev_direction_parse(const char *s, enum lev_direction *out);

static inline enum lev_level lev_level_max(enum lev_level a, enum lev_level b)
{
	return a > b ? a : b;
}

struct lev_tool_class {
	enum lev_level sensitivity;	/* label of the tool's results */
	enum lev_direction direction;
	enum lev_level clearance;
	enum lev_target_from target_from;
	const char *target_arg;		/* with LEV_TARGET_FROM_ARG; borrowed */
	bool known;			/* false: the fail-closed default for unknown tools */
};

/* The built-in classification of TOOL ("bash" is "shell"). */
void lev_taint_builtin_class(const char *tool, struct lev_tool_class *out);

/* True for tools whose results are file contents or listings. */
bool lev_taint_is_read_tool(const char *tool);

/*
 * While a [read_paths] grant is active, read_file, read_files and list_dir
 * results are Private: raise CLS's sensitivity for those tools.
 */
void lev_taint_read_grant_bump(const char *tool, bool grant_active, struct lev_tool_class *cls);

/* Outbound and the taint is above the clearance: the gate has work to do. */
static inline bool lev_taint_exceeds(const struct lev_tool_class *cls, enum lev_level taint)
{
	return cls->direction == LEV_DIR_OUTBOUND && taint > cls->clearance;
}

/*
 * Taint tracking is on when the user's config turns it on (top-level
 * `taint_tracking`) or the blueprint opts in (`[security] taint_tracking =
 * true`); a blueprint can never turn it off.
 */
static inline bool lev_taint_enabled(bool config_taint_tracking, bool blueprint_taint_tracking)
{
	return config_taint_tracking || blueprint_taint_tracking;
}

/* ---- targets ---- */

/* Bounds on what target extraction reads. */
#define LEV_TAINT_ARGS_MAX ((size_t)16 << 20)
#define LEV_TAINT_TARGETS_MAX 64

/*
 * Extract the canonical targets of a call to TOOL with arguments ARGS_JSON
 * (LEN bytes, a JSON object) according to CLS (NULL: the built-in
 * classification).  On success *out is a strv of canonical targets (see
 * target.h), or NULL when the call has none.  Fails with LEV_EPARSE when
 * the arguments are not a JSON object (duplicate keys are refused) or a
 * target argument does not canonicalise; the gate then treats the call as
 * having no usable target.
 */
int lev_taint_target_of(const char *tool, const struct lev_tool_class *cls, const char *args_json,
			size_t len, char ***out, struct lev_err *err);

/* The same on an already parsed object (jansson). */
int lev_taint_target_of_json(const char *tool, const struct lev_tool_class *cls,
			     const struct json_t *args, char ***out, struct lev_err *err);

/* Parse LEN bytes of tool arguments; the caller owns *out (json_decref). */
int lev_taint_args_parse(const char *args_json, size_t len, struct json_t **out,
			 struct lev_err *err);

/* ---- context regions ---- */

struct lev_taint_ctx;

#define LEV_TAINT_REGIONS_MAX 256
#define LEV_TAINT_REGION_NAME_MAX 64
#define LEV_TAINT_ENTRIES_MAX ((size_t)1 << 24)

struct lev_taint_ctx *lev_taint_ctx_new(void);
/* Accepts NULL; returns NULL. */
struct lev_taint_ctx *lev_taint_ctx_free(struct lev_taint_ctx *ctx);

/*
 * Add a region NAME (1..64 bytes, printable ASCII, unique).  Returns its
 * index (>= 0), or -EEXIST, -EINVAL or -E2BIG.
 */
int lev_taint_region_add(struct lev_taint_ctx *ctx, const char *name, struct lev_err *err);
/* The index of region NAME, or -ENOENT. */
int lev_taint_region_find(const struct lev_taint_ctx *ctx, const char *name);
size_t lev_taint_region_count(const struct lev_taint_ctx *ctx);
const char *lev_taint_region_name(const struct lev_taint_ctx *ctx, size_t region);
/* Max over the region's live entries (Public when empty). */
enum lev_level lev_taint_region_level(const struct lev_taint_ctx *ctx, size_t region);

/*
 * Add an entry the runtime labelled (a tool result, the task, a seed, a
 * user turn, or an entry restored from a run record with its stored
 * label).  *id_out (optional) gets its id; ids start at 1 and only grow.
 */
int lev_taint_add_entry(struct lev_taint_ctx *ctx, size_t region, enum lev_level label,
			uint64_t *id_out, struct lev_err *err);

/*
 * Add text the model wrote (an assistant turn, a note it writes to a
 * region).  Its label is max(SEEN, current taint): pass as SEEN the value
 * of lev_taint_current() taken when the prompt that produced the text was
 * built, so an eviction between the request and the answer cannot lower
 * it (LEV_PUBLIC when there is no such gap).
 */
int lev_taint_add_model_text(struct lev_taint_ctx *ctx, size_t region, enum lev_level seen,
			     uint64_t *id_out, struct lev_err *err);

/*
 * Compaction: add a summary to REGION labelled max(SEEN, current taint,
 * which still includes the N entries IDS) and only then evict IDS.  Every
 * id must be live (else -ENOENT and nothing changes).
 */
int lev_taint_compact(struct lev_taint_ctx *ctx, size_t region, const uint64_t *ids, size_t n,
		      enum lev_level seen, uint64_t *id_out, struct lev_err *err);

/* The same with an integrity (lev_taint_add_entry() adds trusted entries). */
int lev_taint_add_labelled(struct lev_taint_ctx *ctx, size_t region, enum lev_level label,
			   enum lev_integrity integ, uint64_t *id_out, struct lev_err *err);

/*
 * Lower live entry ID to untrusted (labels only ever get more restrictive).
 * 0, or -ENOENT.
 */
int lev_taint_set_untrusted(struct lev_taint_ctx *ctx, uint64_t id);

/* The integrity of live entry ID, or -ENOENT. */
int lev_taint_entry_integrity(const struct lev_taint_ctx *ctx, uint64_t id,
			      enum lev_integrity *out);

/* The live context's integrity: untrusted while any untrusted entry is live. */
enum lev_integrity lev_taint_integrity(const struct lev_taint_ctx *ctx);
enum lev_integrity lev_taint_region_integrity(const struct lev_taint_ctx *ctx, size_t region);

/*
 * The model is shown the context now (a request is rendered): model text
 * added until the next call is untrusted when the context is untrusted
 * now, even if the untrusted entries are evicted before the text arrives.
 */
void lev_taint_mark_seen(struct lev_taint_ctx *ctx);

/* The integrity text the model writes now gets (what lev_taint_add_model_text() uses). */
enum lev_integrity lev_taint_model_integrity(const struct lev_taint_ctx *ctx);

/*
 * Append to OUT the names of the regions holding live untrusted entries,
 * separated by ", ".  Returns the number named, or -E2BIG.
 */
int lev_taint_untrusted_regions(const struct lev_taint_ctx *ctx, struct lev_buf *out);

/* Evict entry ID (-ENOENT when unknown or already gone). */
int lev_taint_evict(struct lev_taint_ctx *ctx, uint64_t id, struct lev_err *err);

/*
 * Remove every entry of REGION.  Entries elsewhere, including text derived
 * from the removed ones, keep their labels.
 */
int lev_taint_region_clear(struct lev_taint_ctx *ctx, size_t region, struct lev_err *err);

/* The label of live entry ID, or -ENOENT. */
int lev_taint_entry_label(const struct lev_taint_ctx *ctx, uint64_t id, enum lev_level *out);

/* Live entries in the whole context. */
size_t lev_taint_entry_count(const struct lev_taint_ctx *ctx);

/* The run's taint: max over every region's level. */
enum lev_level lev_taint_current(const struct lev_taint_ctx *ctx);

/*
 * Append to OUT the names of the regions whose level is above ABOVE
 * (typically the tool's clearance), separated by ", ".  Returns the number
 * of regions named, or -E2BIG when OUT's cap is reached.
 */
int lev_taint_contributors(const struct lev_taint_ctx *ctx, enum lev_level above,
			   struct lev_buf *out);
