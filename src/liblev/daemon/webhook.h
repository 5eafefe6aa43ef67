/*
 * webhook.h - signed completion webhooks, as Leviath's API documents them,
 * delivered by the daemon.
 *
 * A spawn over lev serve (POST /api/agents) may carry "callback_url" and
 * "callback_secret".  The URL is checked against lev's network policy at
 * spawn (lev_webhook_check(): every address its host resolves to must be
 * one a network tool may reach, with [security] allow_local_network as the
 * switch); a refused one refuses the spawn.  lev serve then hands the
 * callback to the daemon (the "webhook" request, daemon.h), which keeps it
 * in <data root>/webhooks/RUN (lev_webhook_keep(): 0600 in a 0700
 * directory beneath the data root, which no sandbox sees, like
 * credentials.toml) until it is delivered.  So the delivery survives the
 * lev serve that took the spawn, and a daemon restart: a pending one is
 * fired again when the daemon starts (lev_webhook_pending()).  When the run
 * ends (complete, error, cancelled) one thread of the daemon POSTs
 *
 *   {"type":"agent_completed","delivery_id":"agent_completed:RUN",
 *    "agent_id":RUN,"run_id":RUN,"status":...,"result":ERROR|null,
 *    "final_output":ANSWER|null,"empty_output":BOOL}
 *
 * with "X-Leviath-Signature: sha256=HEX" (HMAC-SHA256 of the exact body
 * bytes keyed by the secret) and "X-Leviath-Delivery: agent_completed:RUN".
 * Every connect is checked again on the address actually connected
 * (DNS rebinding), with the daemon's config at delivery, and a redirect is
 * never followed.  A network error, a timeout, 5xx, 429 and 408 are
 * retried with exponential backoff ([webhook], conf/config.h).  The file
 * goes once the delivery is done or given up.  The secret is never passed
 * to the run, never written to its record, lev.db, a log or a reply.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"
#include "liblev/conf/config.h"

/* "sha256=" and 64 hex digits */
#define LEV_WEBHOOK_SIG_LEN (7 + 64)
/* Longest callback_url and callback_secret (bytes) */
#define LEV_WEBHOOK_URL_MAX 4096
#define LEV_WEBHOOK_SECRET_MAX 1024

struct lev_webhook_opts {
	bool allow_local;		/* [security] allow_local_network */
	struct lev_webhook_conf conf;	/* [webhook] */
	/* One line on how a delivery went (no URL, no secret), or NULL; any thread. */
	void (*log)(void *data, const char *line);
	void *log_data;
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
 * Keep RUN's callback (URL, SECRET) in DIR (created 0700) as the file RUN,
 * 0600: 0, or -EEXIST when RUN has one already, or < 0 with ERR.
 */
int lev_webhook_keep(const char *dir, const char *run, const char *url, const char *secret,
		     struct lev_err *err);

/* Does RUN have a callback kept in DIR? */
bool lev_webhook_kept(const char *dir, const char *run);

/* The runs with a callback kept in DIR, a new strv (NULL: none). */
char **lev_webhook_pending(const char *dir);

/*
 * RUN ended with the daemon's end frame END: deliver its kept callback on a
 * detached thread, which removes the file once delivered or given up.  0,
 * or < 0 with ERR (nothing kept, the file unreadable: it is removed).
 */
int lev_webhook_fire(const char *dir, const char *run, const json_t *end,
		     const struct lev_webhook_opts *o, struct lev_err *err);
