/*
 * secrets.h - the one secret set of a lev process, and its redactor.
 *
 * A value is secret because of its role, never its name: every key a
 * provider's credentials resolve to (its api_key_env variable, the
 * credential file, the keychain, Leviath's flat key), every value a
 * `${VAR}` of an MCP server's headers or env names, every variable the
 * client marked secret when it handed a run to the daemon.  Whoever reads
 * such a value adds it here (lev_secrets_add()); every place text leaves
 * lev (an event, the run record, lev.db, the daemon's log and frames, an
 * error printed) passes it through lev_secrets_redact() or
 * lev_secrets_redacted_json() first.  Nothing else decides what is secret.
 *
 * Redaction: every token (a run of letters, digits and "-_.*+/=") that
 * shares 8 or more consecutive bytes with a secret, and every run of
 * bytes made of such 8-byte windows, becomes "[redacted]" (a region of
 * fewer than 10 bytes becomes '*'s): text shrinks or keeps its length,
 * and no 8 consecutive bytes of a secret are left in it.  Values shorter
 * than LEV_SECRET_MIN bytes are not kept (they would redact ordinary
 * words).
 *
 * The set keeps only the secrets' 8-byte windows, in memory mapped
 * MADV_WIPEONFORK and MADV_DONTDUMP: a child lev forks or clones without
 * sharing its memory (a sandbox's helper, a namespace child) sees zeros
 * there, and a core dump leaves it out.  Thread-safe.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#define LEV_SECRET_MIN 8

/* Add VALUE (NULL or shorter than LEV_SECRET_MIN: ignored) to the set. */
void lev_secrets_add(const char *value);

/* How many values were added (their windows may be shared). */
size_t lev_secrets_count(void);

/* Redact S in place with the set (the rule above).  NULL is a no-op. */
void lev_secrets_redact(char *s);

/* A redacted copy of S (NULL for NULL); the caller frees it. */
char *lev_secrets_redacted(const char *s);

/*
 * V with every string and object key redacted: a new reference, to V
 * itself when nothing changes, else to a copy (copy on write: V and what
 * it shares, a call's arguments as they run, are never touched).
 */
json_t *lev_secrets_redacted_json(json_t *v);

/* The same, taking V's reference: V = lev_secrets_redact_take(V). */
json_t *lev_secrets_redact_take(json_t *v);

/* Forget every secret, zeroing what the set held. */
void lev_secrets_wipe(void);

/*
 * A copy of the secret S (NULL for NULL) in pages of its own, mapped
 * MADV_WIPEONFORK and MADV_DONTDUMP like the set: a child that does not
 * share lev's memory reads zeros there.  Give it back with
 * lev_secret_release() (conf's lev_secret_free() does).
 */
char *lev_secret_dup(const char *s);

/* Zero and unmap S when lev_secret_dup() made it: true; else false (S untouched). */
bool lev_secret_release(char *s);

/* Redact S in place with SECRET alone (the same rule; NULL or short: a no-op). */
void lev_redact_secret(char *s, const char *secret);
