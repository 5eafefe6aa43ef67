/*
 * context.h - what the model sees: named context regions, their budgets,
 * eviction, the taint label of every entry, and rendering into a provider
 * request.
 *
 * Regions come from the blueprint's [context.regions] (struct lev_region);
 * with none, the default layout is used: `system` (pinned, 8000 tokens) and
 * `conversation` (sliding_window, 10 items, 10000 tokens).
 *
 *	pinned		always present, never evicted.  Adding an entry that
 *			would take the region past its budget fails with -E2BIG
 *			(at the start of a run: the run fails, naming it).
 *	sliding_window	keeps the newest entries: past max_items or its token
 *			budget, the oldest entries are evicted.
 *	temporary	evicted oldest first past its budget, and first of all
 *			when the whole context passes the model window.
 *	clearable	like temporary; the model may also replace (context_write)
 *			or extend (context_append) it.
 *
 * The conversation is the region named "conversation", else the first
 * sliding_window region; when the blueprint has neither, one is added with
 * the default settings.  It holds the message list: user turns, assistant
 * turns (text and tool calls) and tool results.  An assistant turn and the
 * results of its calls form one eviction unit: they are evicted together,
 * so every tool_use the model sees has its tool_result, and the newest unit
 * of a region is never evicted.  Every other region is rendered into the
 * system text, after the stage's system prompt, as "## <region>" sections
 * in blueprint order.
 *
 * Budgets.  A region's token limit is the smaller of max_tokens and
 * budget = "N%" of the model window (LEV_CONTEXT_DEFAULT_WINDOW tokens
 * unless the caller says otherwise); with neither, only the window bounds
 * it.  Tokens are ESTIMATED, since providers only count them after the
 * fact: lev_context_estimate() = ceil(bytes / 4) for the text of an entry
 * (for an assistant turn: its text, plus each call's tool name and argument
 * text).  This is the usual rule of thumb for English text and code with
 * BPE tokenisers; it over-counts dense non-Latin scripts' characters and
 * may under-count very short tokens, so budgets are approximate by design.
 * When the whole context passes the window, temporary regions are evicted
 * first, then clearable ones, then sliding windows (never a newest unit).
 *
 * Oversize tool results are cut (at a UTF-8 boundary) to
 * lev_context_result_cap() bytes and end with a note saying how much was
 * shown; they are never dropped.
 *
 * Taint.  Every entry is mirrored in a struct lev_taint_ctx (taint.h),
 * region for region: runtime text (task, seeds, hand-offs, tool results)
 * carries the label the runtime gives it; text the model wrote (assistant
 * turns, notes) goes through lev_taint_add_model_text(), so it keeps the
 * taint that was live when it was produced after its sources are evicted
 * (no laundering through notes or summaries).  Evicting an entry evicts its
 * taint entry, so taint recovers as entries leave.
 *
 * Ownership: the context owns its regions, entries and taint ctx; getters
 * borrow.  Nothing here prints.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "liblev/conf/blueprint.h"
#include "liblev/base/error.h"
#include "liblev/provider/provider.h"
#include "liblev/policy/taint.h"
#include "liblev/base/types.h"

/* The model window assumed when the caller gives none (tokens). */
#define LEV_CONTEXT_DEFAULT_WINDOW 128000ULL
/* Tool result cap before the per-region share is applied (bytes). */
#define LEV_CONTEXT_DEFAULT_RESULT_MAX ((size_t)64 << 10)
/* The per-result cap never goes below this (bytes). */
#define LEV_CONTEXT_RESULT_FLOOR ((size_t)512)
/* Bytes in one entry, at most (longer text is cut with a note). */
#define LEV_CONTEXT_ENTRY_MAX ((size_t)4 << 20)

/* ceil(BYTES / 4): the documented token estimate. */
static inline uint64_t lev_context_estimate(size_t bytes)
{
	return ((uint64_t)bytes + 3) / 4;
}

enum lev_item_kind {
	LEV_ITEM_TEXT,		/* runtime text in a region: task, seed, hand-off */
	LEV_ITEM_NOTE,		/* text the model wrote into a region */
	LEV_ITEM_USER,		/* a user turn in the conversation */
	LEV_ITEM_ASSISTANT,	/* an assistant turn: text and tool calls */
	LEV_ITEM_TOOL_RESULT,	/* the result of one tool call */
};

/* Told about each eviction to fit a budget (for the run record); may be NULL. */
typedef void (*lev_context_evict_fn)(void *data, const char *region, enum lev_item_kind kind,
				     uint64_t tokens, enum lev_level label);

struct lev_context_opts {
	uint64_t window_tokens;		/* 0: LEV_CONTEXT_DEFAULT_WINDOW */
	size_t result_max;		/* 0: LEV_CONTEXT_DEFAULT_RESULT_MAX */
	lev_context_evict_fn on_evict;
	void *evict_data;
};

struct lev_context;

/*
 * Build the regions (N may be 0: the default layout).  Fails with LEV_EPARSE
 * on a region the taint ctx cannot name (empty, too long, not printable) or
 * a duplicate name.
 */
int lev_context_new(const struct lev_region *regions, size_t n, const struct lev_context_opts *opts,
		    struct lev_context **out, struct lev_err *err);
/* Accepts NULL; returns NULL. */
struct lev_context *lev_context_free(struct lev_context *ctx);

size_t lev_context_region_count(const struct lev_context *ctx);
/* Index of region NAME, or -ENOENT. */
int lev_context_region_find(const struct lev_context *ctx, const char *name);
/* The same, -ENOENT also for a region the current view hides (lev_context_set_view()). */
int lev_context_region_find_shown(const struct lev_context *ctx, const char *name);
const char *lev_context_region_name(const struct lev_context *ctx, size_t region);
enum lev_region_kind lev_context_region_kind(const struct lev_context *ctx, size_t region);
/* Token limit of REGION (0: only the window bounds it). */
uint64_t lev_context_region_limit(const struct lev_context *ctx, size_t region);
size_t lev_context_region_items(const struct lev_context *ctx, size_t region);
uint64_t lev_context_region_tokens(const struct lev_context *ctx, size_t region);
/* The region's taint level (max over its live entries). */
enum lev_level lev_context_region_level(const struct lev_context *ctx, size_t region);
/* The conversation region's index. */
size_t lev_context_conversation(const struct lev_context *ctx);
/* The first pinned region, or -ENOENT. */
int lev_context_first_pinned(const struct lev_context *ctx);

/* Estimated tokens of everything held. */
uint64_t lev_context_tokens(const struct lev_context *ctx);
uint64_t lev_context_window(const struct lev_context *ctx);
/* Entries evicted so far to fit budgets (clearing a region is not counted). */
uint64_t lev_context_evictions(const struct lev_context *ctx);

/* The taint mirror (borrowed; the context keeps it in step). */
struct lev_taint_ctx *lev_context_taint(struct lev_context *ctx);
/* The run's taint: max over all regions. */
enum lev_level lev_context_taint_level(const struct lev_context *ctx);
/* The live context's integrity (taint.h lev_taint_integrity()). */
enum lev_integrity lev_context_integrity(const struct lev_context *ctx);
/*
 * The entry added last (a tool result, a seed, a hand-off) is untrusted
 * (docs/integrity.md); nothing when it is gone already.
 */
void lev_context_mark_untrusted(struct lev_context *ctx);

/*
 * Add runtime text (task, seed, stage hand-off) with the label LABEL to
 * REGION.  In the conversation it becomes a user turn.  -E2BIG when a pinned
 * region would pass its budget (nothing is added).
 */
int lev_context_add_text(struct lev_context *ctx, size_t region, const char *text, size_t len,
			 enum lev_level label, struct lev_err *err);

/*
 * Add a note the model wrote to REGION (temporary or clearable only:
 * -EPERM otherwise), labelled max(SEEN, current taint).
 */
int lev_context_add_note(struct lev_context *ctx, size_t region, const char *text, size_t len,
			 enum lev_level seen, struct lev_err *err);

/*
 * Replace REGION's content with a note (context_write): the region is
 * cleared, then the note is added labelled max(SEEN, taint before the
 * clear), so clearing the sources cannot launder the note.
 */
/*
 * A note under KEY (context_write / context_append with a key): with
 * REPLACE the region's newest note keyed KEY is replaced (else the note is
 * added), without it the note is added beside any of that key.  Checked as
 * lev_context_add_note() is.
 */
int lev_context_keyed_note(struct lev_context *ctx, size_t region, const char *key,
			   const char *text, size_t len, bool replace, enum lev_level seen,
			   struct lev_err *err);
/* The index of REGION's newest note keyed KEY (0 the oldest entry), or -1. */
ssize_t lev_context_keyed_index(const struct lev_context *ctx, size_t region, const char *key);
/* The text of REGION's newest note keyed KEY (a fresh string), or NULL when none is. */
char *lev_context_keyed_text(const struct lev_context *ctx, size_t region, const char *key);
int lev_context_write_note(struct lev_context *ctx, size_t region, const char *text, size_t len,
			   enum lev_level seen, struct lev_err *err);

/* Remove every entry of REGION (pinned regions: -EPERM). */
int lev_context_clear(struct lev_context *ctx, size_t region, struct lev_err *err);

/*
 * Release COUNT entries of REGION from entry FIRST on (0: the oldest;
 * fewer when the region holds fewer): context_delete.  Not an eviction:
 * their labels leave with them (text the model wrote from them keeps its
 * own).  Returns how many went, *tokens_out (optional) their tokens;
 * -EPERM for a pinned region or the conversation, -ENOENT when FIRST is
 * past the end.
 */
int lev_context_delete(struct lev_context *ctx, size_t region, size_t first, size_t count,
		       uint64_t *tokens_out, struct lev_err *err);

/* REGION's entries joined by blank lines (caller frees). */
char *lev_context_region_text(const struct lev_context *ctx, size_t region);

/*
 * Add the model's turn RESP to the conversation (its text and every call,
 * valid or not), labelled max(SEEN, current taint), opening a new eviction
 * unit.  SEEN is the taint when the request was rendered.
 */
int lev_context_add_assistant(struct lev_context *ctx, const struct lev_infer_response *resp,
			      enum lev_level seen, struct lev_err *err);

/*
 * The byte cap for each result of the current unit: the smaller of
 * opts.result_max and half the conversation's limit shared among the
 * unit's N_CALLS calls, and never below LEV_CONTEXT_RESULT_FLOOR.
 */
size_t lev_context_result_cap(const struct lev_context *ctx, size_t n_calls);

/*
 * Add the result of call CALL_ID (of the current unit) labelled LABEL.
 * TEXT longer than CAP bytes (0: lev_context_result_cap() for the unit) is
 * cut with a note; *truncated_out (optional) says whether it was.
 */
int lev_context_add_tool_result(struct lev_context *ctx, const char *call_id, const char *text,
				size_t len, bool is_error, enum lev_level label, size_t cap,
				bool *truncated_out, struct lev_err *err);

/*
 * lev_context_add_tool_result() with a token ceiling MAX_TOKENS (0: none,
 * else the result is cut to MAX_TOKENS * 4 bytes when that is below CAP, with
 * a note naming the ceiling): tool_routing's max_result_tokens.
 */
int lev_context_add_tool_result_max(struct lev_context *ctx, const char *call_id,
				    const char *text, size_t len, bool is_error,
				    enum lev_level label, size_t cap, uint64_t max_tokens,
				    bool *truncated_out, struct lev_err *err);

/*
 * Add a tool result routed (tool_routing) to REGION, which is not the
 * conversation: runtime text labelled LABEL (never lower: the region's taint
 * carries it), cut to MAX_TOKENS (0: none) and to opts.result_max with a
 * note saying so.  TAG (0: none) marks it for lev_context_drop_tagged().
 * -ENOSPC when the region has admission = "reject" and is full, -E2BIG when
 * a pinned region would pass its budget; nothing is added then.
 */
int lev_context_add_routed(struct lev_context *ctx, size_t region, const char *text, size_t len,
			   enum lev_level label, uint64_t max_tokens, uint64_t tag,
			   bool *truncated_out, struct lev_err *err);

/* Remove every entry added with TAG (routed results that do not persist). */
void lev_context_drop_tagged(struct lev_context *ctx, uint64_t tag);

/*
 * Render only the regions NAMES lists (and the conversation) from now on;
 * NULL: all.  NAMES is borrowed and must outlive its use (a stage's
 * context_regions).  Hidden regions keep their entries and their taint.
 */
void lev_context_set_view(struct lev_context *ctx, char *const *names);

/*
 * Compacting regions (strategy = "compact", Leviath's compacting kinds).
 * With a compactor set, such a region is not evicted past its budget;
 * instead, before each request the run asks lev_context_compact_due() and,
 * when due, takes the oldest entries' text (lev_context_compact_source():
 * *count entries, *label the summary's label), has a model summarise it and
 * puts the summary in with lev_context_compact_apply(): the COUNT oldest
 * entries are replaced by one entry (in the region itself as its oldest
 * entry, or in the compact_history region whose source_region it is).
 * When no summary can be had, lev_context_enforce() evicts as usual.
 */
void lev_context_set_compactor(struct lev_context *ctx, bool on);
bool lev_context_compact_due(const struct lev_context *ctx, size_t region);
/* A summary's labels: its sensitivity and its integrity. */
struct lev_context_label {
	enum lev_level level;
	enum lev_integrity integrity;
};
/* What a summary of the conversation's earlier turns starts with. */
#define LEV_CONTEXT_SUMMARY_NOTE "[a summary of the earlier turns of this conversation]"
char *lev_context_compact_source(const struct lev_context *ctx, size_t region, size_t *count,
				 struct lev_context_label *label);
int lev_context_compact_apply(struct lev_context *ctx, size_t region, size_t count,
			      const char *summary, size_t len, struct lev_context_label label,
			      struct lev_err *err);
void lev_context_enforce(struct lev_context *ctx, size_t region);
/*
 * The labels of a summary of text labelled SOURCES[0..N): the highest
 * sensitivity of them, untrusted when any is (one place: a summary never
 * lowers a label).
 */
struct lev_context_label lev_context_summary_label(const struct lev_context_label *sources,
						   size_t n);

/*
 * Render into REQ (initialised by the caller; tools are the caller's):
 * the system text is SYSTEM_PROMPT (may be NULL) followed by every non-empty
 * region other than the conversation; the messages are the conversation.
 * When the conversation does not start with a user turn (its start was
 * evicted), a short user turn saying so comes first.
 */
void lev_context_render(const struct lev_context *ctx, const char *system_prompt,
			struct lev_infer_request *req);
