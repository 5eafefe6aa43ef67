/*
 * provenance.h - argument provenance: did this argument's value come from
 * text the attacker could have written?
 *
 * The run feeds every text that enters the context with its integrity: the
 * user's task and answers, the blueprint's prompts and trusted files as
 * trusted; network, MCP and script results and untrusted files as
 * untrusted.  A call's string argument (recursively: arrays and objects
 * too) is marked when its value occurs in untrusted text and nowhere in
 * trusted text.  Matching is on normalised text: ASCII case folded,
 * whitespace runs collapsed to one space, %XX decoded; a value also loses
 * trailing punctuation, and a URL value is compared by host and path only.
 * Values shorter than 4 bytes after normalising are never marked.  A value
 * longer than LEV_PROVENANCE_VALUE_MAX is judged by its first that many
 * bytes.  When the untrusted text outgrows LEV_PROVENANCE_TEXT_MAX, a value
 * found in no trusted text is marked (fail closed).
 *
 * Ownership: the index owns copies of everything fed; *out strvs belong to
 * the caller.  Nothing prints.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/types.h"

struct json_t;
struct lev_provenance;

#define LEV_PROVENANCE_TEXT_MAX ((size_t)32 << 20)
#define LEV_PROVENANCE_VALUE_MAX 4096
#define LEV_PROVENANCE_MIN 4

struct lev_provenance *lev_provenance_new(void);
/* Accepts NULL; returns NULL. */
struct lev_provenance *lev_provenance_free(struct lev_provenance *p);

/* Feed LEN bytes of TEXT with integrity I. */
void lev_provenance_add(struct lev_provenance *p, enum lev_integrity i, const char *text,
			size_t len);

/*
 * Feed a tool's reply: LEN bytes of TEXT with integrity I, for a call with
 * the arguments ARGS (a JSON object) the model wrote with integrity MODEL.
 * What lev and the tool write around an argument (an error quoting a path,
 * an echo, a confirmation) is the model's text, not the source's: with I
 * trusted and MODEL untrusted, every string of ARGS, and each of its words
 * (split at spaces, quotes and shell and URL punctuation) of at least
 * LEV_PROVENANCE_MIN bytes, is cut out of TEXT before it counts as
 * trusted, so a value from untrusted text cannot be laundered by passing
 * it to a tool that repeats it.  Otherwise as lev_provenance_add().
 */
void lev_provenance_add_reply(struct lev_provenance *p, enum lev_integrity i, const char *text,
			      size_t len, const struct json_t *args, enum lev_integrity model);

/* True when some untrusted text has been fed. */
bool lev_provenance_has_untrusted(const struct lev_provenance *p);

/*
 * Normalise LEN bytes of S as text (case, whitespace, %XX); *out_len gets
 * the length.  VALUE: also trim trailing punctuation and reduce a URL to
 * host and path.  Caller frees.
 */
char *lev_provenance_normalise(const char *s, size_t len, bool value, size_t *out_len);

/* Is the value S marked (occurs only in untrusted text)? */
bool lev_provenance_marked(const struct lev_provenance *p, const char *s, size_t len);

/*
 * The names of ARGS' top-level keys (a JSON object) with a marked string
 * value anywhere inside, in key order, into *out (strv; NULL when none).
 * A marked URL argument is followed by "NAME?KEY" for each query parameter
 * whose value is marked (KEY case- and %XX-folded, each once), so a rule
 * can tell the hotel a page named from the dates the user gave.  P NULL or
 * nothing untrusted fed: none.
 */
void lev_provenance_untrusted_args(const struct lev_provenance *p, const struct json_t *args,
				   char ***out);
