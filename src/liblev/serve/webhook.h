/*
 * webhook.h - lev serve's signed completion webhooks, as Leviath's API
 * documents them.
 *
 * A spawn (POST /api/agents) may carry "callback_url" and
 * "callback_secret".  The URL is checked against lev's network policy at
 * spawn (lev_webhook_check(): every address its host resolves to must be
 * one a network tool may reach, with [security] allow_local_network as the
 * switch); a refused one refuses the spawn.  When the run ends (complete,
 * error, cancelled) one thread of its own POSTs
 *
 *   {"type":"agent_completed","delivery_id":"agent_completed:RUN",
 *    "agent_id":RUN,"run_id":RUN,"status":...,"result":ERROR|null,
 *    "final_output":ANSWER|null,"empty_output":BOOL}
 *
 * with "X-Leviath-Signature: sha256=HEX" (HMAC-SHA256 of the exact body
 * bytes keyed by the secret) and "X-Leviath-Delivery: agent_completed:RUN".
 * Every connect is checked again on the address actually connected
 * (DNS rebinding), and a redirect is never followed.  A network error,
 * a timeout, 5xx, 429 and 408 are retried with exponential backoff.  The
 * run is followed across a daemon restart (it is attached to again).  The
 * secret lives only in this process's memory: it is never passed to the
 * run, never written to its record and never in a message.
 *
 * lev_mhdapi_load() must have run (the HMAC is GnuTLS's).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"

/* Leviath's [webhook] defaults. */
#define LEV_WEBHOOK_MAX_RETRIES 3
#define LEV_WEBHOOK_BASE_DELAY_MS 500
#define LEV_WEBHOOK_MAX_DELAY_MS 30000
#define LEV_WEBHOOK_TIMEOUT_SECS 10

/* "sha256=" and 64 hex digits */
#define LEV_WEBHOOK_SIG_LEN (7 + 64)

struct lev_webhook_opts {
	bool allow_local;		/* [security] allow_local_network */
	unsigned max_retries;		/* retries after the first attempt */
	unsigned base_delay_ms;		/* first backoff; doubles per retry */
	unsigned max_delay_ms;		/* cap on any single backoff */
	unsigned timeout_secs;		/* per attempt */
	/* One line on how a delivery went (no URL, no secret), or NULL. */
	void (*log)(const char *line);
};

/* Fill O with Leviath's defaults. */
void lev_webhook_defaults(struct lev_webhook_opts *o);

/*
 * May the completion of a run be POSTed to URL?  0, or LEV_EPARSE (a URL
 * that is not http(s), ...) / -EACCES (its host is or resolves to an address
 * the policy refuses) / -EHOSTUNREACH with ERR naming the field.
 */
int lev_webhook_check(const char *url, bool allow_local, struct lev_err *err);

/* "sha256=HEX" of BODY (LEN bytes) keyed by SECRET into OUT: 0 or < 0 with ERR. */
int lev_webhook_sign(const char *secret, const char *body, size_t len,
		     char out[LEV_WEBHOOK_SIG_LEN + 1], struct lev_err *err);

/* The payload for run RUN from the daemon's end frame END (a new string). */
char *lev_webhook_payload(const char *run, const json_t *end);

/*
 * Follow RUN and, when it ends, deliver its completion to URL signed with
 * SECRET, on a detached thread (URL and SECRET are copied; the copy of the
 * secret is wiped when done).  0, or < 0 with ERR when the run cannot be
 * followed.
 */
int lev_webhook_start(const char *run, const char *url, const char *secret,
		      const struct lev_webhook_opts *o, struct lev_err *err);
