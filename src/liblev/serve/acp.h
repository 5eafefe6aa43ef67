/*
 * acp.h - the Agent Client Protocol's wire: newline-delimited JSON-RPC 2.0
 * on stdio (lev agent-client, docs/agent-client.md).
 *
 * The one reader of what a host writes: lines are cut from the stream by
 * struct lev_acp_in (a line longer than LEV_ACP_LINE_MAX is dropped whole
 * and reported once), and each line is checked by lev_acp_parse() into a
 * request, a notification or a response before anything acts on it.  A
 * bad line is a JSON-RPC error code and one line saying why, never a crash.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"

/* The longest line read (bytes, without its newline). */
#define LEV_ACP_LINE_MAX ((size_t)256 << 10)

/* JSON-RPC 2.0's error codes. */
enum {
	LEV_ACP_PARSE_ERROR = -32700,
	LEV_ACP_INVALID_REQUEST = -32600,
	LEV_ACP_METHOD_NOT_FOUND = -32601,
	LEV_ACP_INVALID_PARAMS = -32602,
	LEV_ACP_INTERNAL_ERROR = -32603,
};

/* Lines being cut from a stream. */
struct lev_acp_in {
	char *buf;		/* owned */
	size_t len, cap;
	bool skipping;		/* inside a line over the max: dropped up to its newline */
	bool oversized;		/* one was dropped and not yet reported */
};

#define LEV_ACP_IN_INIT { NULL, 0, 0, false, false }

/* Take N bytes the stream brought (N at most LEV_ACP_LINE_MAX). */
void lev_acp_in_push(struct lev_acp_in *in, const char *data, size_t n);
/*
 * The next complete line: 1 and *line (owned, NUL-terminated, without its
 * newline or a CR before it; *len bytes, which may hold a NUL); 0 when more
 * is needed; -EMSGSIZE once for each line over LEV_ACP_LINE_MAX (dropped).
 */
int lev_acp_in_next(struct lev_acp_in *in, char **line, size_t *len);
/* What is left after the stream ended: a last line without a newline, as lev_acp_in_next(). */
int lev_acp_in_last(struct lev_acp_in *in, char **line, size_t *len);
void lev_acp_in_release(struct lev_acp_in *in);

/* One checked message; the pointers borrow from root. */
struct lev_acp_msg {
	json_t *root;		/* owned; NULL when the line was no JSON */
	const char *method;	/* a request or notification; NULL for a response */
	const json_t *id;	/* a string or an integer; NULL for a notification */
	const json_t *params;	/* an object, or NULL when absent */
	const json_t *result;	/* a response: exactly one of result and error */
	const json_t *error;
};

#define LEV_ACP_MSG_INIT { NULL, NULL, NULL, NULL, NULL, NULL }

/*
 * Check LINE (LEN bytes) as one JSON-RPC 2.0 message: 0, or
 * LEV_ACP_PARSE_ERROR (not one JSON object: no NUL, no duplicate key) or
 * LEV_ACP_INVALID_REQUEST (no "jsonrpc": "2.0", an id that is not a
 * string or integer, a method that is not a string, params that are not
 * an object, a response with both or neither of result and error), with
 * ERR saying which field.  M->id is set whenever the id itself was good,
 * so an error can answer it.  Release M either way.
 */
int lev_acp_parse(const char *line, size_t len, struct lev_acp_msg *m, struct lev_err *err);
void lev_acp_msg_release(struct lev_acp_msg *m);

/*
 * The text of a session/prompt's PARAMS: its "prompt" array's text blocks
 * and embedded text resources, in order (*text owned).  LEV_ACP_INVALID_PARAMS
 * with ERR naming the field for anything else: no array, a block that is
 * not an object with a string "type", an image or audio block (lev takes
 * text), an empty prompt, or more than LEV_ACP_LINE_MAX bytes.
 */
int lev_acp_prompt_text(const json_t *params, char **text, struct lev_err *err);

/*
 * The string member KEY of PARAMS (borrowed): 0, or LEV_ACP_INVALID_PARAMS
 * naming KEY when it is missing or not a non-empty string without a NUL.
 */
int lev_acp_param_str(const json_t *params, const char *key, const char **out,
		      struct lev_err *err);
