/*
 * provider-internal.h - what the provider files share (not for other
 * modules): the script provider's state and small helpers of the codecs.
 */
#pragma once

#include <jansson.h>

#include "liblev/base/buf.h"
#include "liblev/base/error.h"
#include "liblev/provider/provider.h"

/* Cap on a request body we are willing to send. */
#define LEV_PROVIDER_MAX_REQUEST ((size_t)64 << 20)

struct lev_script;

/* Load and check the turns file at PATH (see docs/providers.md). */
int lev_script_load(const char *path, struct lev_script **out, struct lev_err *err);
/* The next turn, or a LEV_FINISH_SCRIPT_END response when none is left. */
int lev_script_next(struct lev_script *s, struct lev_infer_response *out, struct lev_err *err);
size_t lev_script_turns(const struct lev_script *s);
/* Move past the next turn without playing it (a run replayed from its journal). */
void lev_script_skip(struct lev_script *s);
struct lev_script *lev_script_free(struct lev_script *s);

/* Compact JSON text of V (caller frees); "{}" for NULL. */
char *lev__json_compact(const json_t *v);

/*
 * Fill C's arguments from the LEN bytes at RAW: raw_arguments gets a copy,
 * and arguments the parsed object, or parse_error a message when RAW is not
 * a JSON object.  Empty RAW means {}.
 */
void lev__tool_call_set_raw(struct lev_tool_call *c, const char *raw, size_t len);

/* Append a zeroed call to R (bounded by LEV_PROVIDER_MAX_CALLS by the caller). */
struct lev_tool_call *lev__response_add_call(struct lev_infer_response *r);

/* Parse LEN bytes at BODY as a JSON object (-EBADMSG otherwise). */
int lev__json_parse_object(const char *body, size_t len, json_t **out, struct lev_err *err);

/* A copy of S limited to LEV_PROVIDER_MAX_NAME bytes, or -EBADMSG. */
int lev__bounded_name(const json_t *v, const char *what, char **out, struct lev_err *err);

/*
 * A JSON string for S; bytes that are not valid UTF-8 become U+FFFD (text
 * from files and tools may hold anything; jansson only takes UTF-8).
 */
json_t *lev__jstr(const char *s);
json_t *lev__jstrn(const char *s, size_t len);
