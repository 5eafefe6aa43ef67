/*
 * credentials.h - where provider API keys come from.
 *
 * A key is looked up, in this order:
 *   1. the environment variable named by [providers.<name>] api_key_env
 *      (read with secure_getenv(); an empty value counts as unset);
 *   2. with [security] credential_store = "keychain", the Secret Service
 *      (keychain.h), and nothing else: neither file below is read;
 *   3. with [security] credential_store = "file", <data root>/credentials.toml:
 *
 *	[providers.openai]
 *	api_key = "sk-..."
 *
 *      The file must be a regular file (not a symlink) owned by the user
 *      running lev, with no permission bits for group or others (0600 or
 *      0400), and at most LEV_CREDENTIALS_MAX_FILE bytes; anything else is
 *      refused with a message saying how to fix it, never read.
 *
 * Keys are secrets: they are returned in fresh buffers the caller frees
 * with lev_secret_free() (which zeroes them first), they never appear in
 * an error message, and a key holding control characters (a header
 * injection) is refused.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/error.h"

struct lev_toml_doc;

#define LEV_CREDENTIALS_MAX_FILE ((size_t)64 << 10)
#define LEV_API_KEY_MAX 4096

enum lev_key_source {
	LEV_KEY_NONE,
	LEV_KEY_ENV,
	LEV_KEY_FILE,
	LEV_KEY_CONFIG,		/* Leviath's [providers] NAME_api_key in config.toml */
	LEV_KEY_KEYCHAIN,	/* the Secret Service (credential_store = "keychain") */
};

/*
 * Read [providers.PROVIDER] api_key from the credentials file at PATH.
 * A missing file, table or key is not an error: 0 with *out = NULL.  A
 * file with unsafe ownership or mode is refused with -EPERM; a malformed
 * file with LEV_EPARSE; a key that is not a plain string of printable
 * characters with -EINVAL.  *out (a secret) is freed with lev_secret_free().
 */
int lev_credentials_lookup(const char *path, const char *provider, char **out,
			   struct lev_err *err);

/*
 * Read Leviath's flat key for PROVIDER from the config file at PATH:
 * [providers] PROVIDER_api_key (for openrouter also the top-level
 * openrouter_api_key).  The same checks as lev_credentials_lookup(): a
 * file others can read is refused.
 */
int lev_credentials_lookup_config(const char *path, const char *provider, char **out,
				  struct lev_err *err);

/*
 * Resolve PROVIDER's key: CONFIG_PATH's flat key (may be NULL: none), then
 * the variable ENV_NAME (may be NULL; a variable
 * taken out by lev_credentials_scrub_env() still counts), then
 * CREDENTIALS_PATH (may be NULL: no file store).  With KEYCHAIN: the
 * variable, then the keychain, and neither file (a keychain that cannot
 * be reached is an error, never a fall back to them).  0 with *out = NULL
 * and *source_out = LEV_KEY_NONE when none has one.
 */
int lev_api_key_resolve(const char *provider, const char *env_name, const char *config_path,
			const char *credentials_path, bool keychain, char **out,
			enum lev_key_source *source_out, struct lev_err *err);

/*
 * Read the secret-holding file PATH (NOUN in messages) with the checks
 * above (regular, yours, 0600, at most MAX bytes): 0 with *out a fresh
 * NUL-terminated buffer, or 0 with *out = NULL when it does not exist.
 * The caller zeroes and frees *out (lev_secret_free()).
 */
int lev_credentials_read(const char *path, const char *noun, size_t max, char **out,
			 size_t *len_out, struct lev_err *err);

/*
 * The value of the variable NAME (secure_getenv(); empty counts as unset),
 * or the one lev_credentials_scrub_env() took out of the environment: a
 * fresh secret (lev_secret_free()), or NULL.
 */
char *lev_credentials_env(const char *name);

/* A key may be sent in a header: 1..LEV_API_KEY_MAX printable ASCII bytes. */
bool lev_api_key_valid(const char *key);

/*
 * Parse the secret-holding TOML text BUF (LEN bytes) named NAME, as
 * lev_toml_parse(): a parse error names NAME:line:col and what was
 * expected, never the text it found there (every quoted span longer than
 * 3 bytes reads "(withheld)"), which may be a key.
 */
int lev_credentials_parse(const char *buf, size_t len, const char *name,
			  struct lev_toml_doc **out, struct lev_err *err);

/* Zero and free a secret; accepts NULL. */
void lev_secret_free(char *s);

/*
 * Keep this process's secrets from other processes: mark it non-dumpable
 * (PR_SET_DUMPABLE 0), so /proc/<pid>/environ, mem, maps, fd, ... and
 * ptrace need CAP_SYS_PTRACE, which a lev of the same uid does not have and
 * every kind-none command drops.  Children are not affected: execve makes
 * them dumpable again.  Call once, first thing.  0 or -errno.
 */
int lev_credentials_protect_process(struct lev_err *err);

/*
 * Take the variables NAMES (NULL-terminated; NULL is none) out of this
 * process's environment: their values are kept in a process-wide store
 * that lev_api_key_resolve() reads when the variable is no longer set, the
 * bytes of each value are overwritten in place in the environment block
 * the kernel shows as /proc/<pid>/environ (unsetenv() alone leaves them
 * there), and the variables are unset.  Idempotent.
 */
void lev_credentials_scrub_env(char *const *names);
