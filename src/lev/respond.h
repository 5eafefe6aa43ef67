/*
 * respond.h - an open request as every terminal surface shows it, and the
 * answer to it as every one of them sends it (lev respond, lev dash).
 *
 * A request Q is one object of the daemon's "requests" reply.  The text
 * shows its whole call (callshow.h); the answer is a "respond" request
 * carrying the digest of that same text, so the daemon takes an approval
 * only for the call the person saw.
 */
#pragma once

#include <jansson.h>

#include "liblev/base/buf.h"

/*
 * Append to OUT what `lev respond` lists of Q: who asks, the question, the
 * whole call and what --stage / --session would allow, the choices, and
 * the answer line.  Every string from the run goes through termtext.
 */
void lev_respond_format(struct lev_buf *out, const json_t *q);

/* Append to OUT the call of Q in full, as under lev_respond_format()'s question. */
void lev_respond_format_call(struct lev_buf *out, const json_t *q);

/*
 * Append to OUT the question of Q and its whole call, without who asks or
 * the answer line (an editor shows its own choices): lev agent-client.
 */
void lev_respond_describe(struct lev_buf *out, const json_t *q);

/*
 * A "respond" request for Q (new reference): its id and, for a tool
 * approval, the digest of its call as shown (DIGEST instead, when not
 * NULL: the caller showed the call some other way).  The caller adds the
 * answer ("answer", "scope", "text", "choice") and sends it.
 */
json_t *lev_respond_request(const json_t *q, const char *digest);
