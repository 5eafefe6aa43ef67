/*
 * credstore.h - the credential store `lev auth` manages (docs/providers.md).
 *
 * [security] credential_store picks the backend:
 *	file      <data root>/credentials.toml, [providers.NAME] api_key
 *	keychain  the Secret Service (keychain.h)
 *
 * credentials.toml and config.toml are edited as text: a set replaces the
 * `api_key` line (or adds one under [providers.NAME], or appends that
 * table), a remove cuts the line; the user's comments and every other byte
 * stay.  The result is parsed before anything is written and must hold the
 * change and every other key unchanged, else nothing is written.  Files are
 * replaced atomically; credentials.toml is created 0600 and a file others
 * can read is refused as the lookup refuses it (credentials.h).
 *
 * Migration moves every key out of one side into the other:
 *	to the keychain  the keys of credentials.toml and config.toml's
 *	                 [providers] NAME_api_key (and top-level
 *	                 openrouter_api_key), config.toml's winning where both
 *	                 hold one, as the lookup does
 *	to the file      every lev key the keychain holds, into credentials.toml
 * It is all or nothing: the keys are written to the new side first, then
 * taken off the old; a failure at any step undoes the steps before it
 * (earlier keychain values restored, files rewritten with their old text),
 * so both sides stay as they were.
 *
 * Keys never appear in a message or in the lists returned here.
 */
#pragma once

#include <stdbool.h>

#include "liblev/base/error.h"
#include "liblev/conf/config.h"

struct lev_credstore {
	enum lev_credential_store kind;
	const char *credentials_path;	/* credentials.toml, borrowed */
	const char *config_path;	/* config.toml, borrowed; NULL: none */
};

/* Store KEY for PROVIDER in S's backend, replacing any earlier one. */
int lev_credstore_set(const struct lev_credstore *s, const char *provider, const char *key,
		      struct lev_err *err);

/*
 * NAME's key as S's backend holds it (never the environment, never
 * config.toml): 0 with *out a fresh secret (lev_secret_free()), or 0 with
 * *out = NULL when it holds none.  MCP OAuth tokens live here too
 * (liblev/tools/mcp-oauth.h).
 */
int lev_credstore_get(const struct lev_credstore *s, const char *name, char **out,
		      struct lev_err *err);

/* Remove PROVIDER's key from S's backend; *removed says whether it had one. */
int lev_credstore_remove(const struct lev_credstore *s, const char *provider, bool *removed,
			 struct lev_err *err);

/* The providers S's backend holds a key for, sorted, as a fresh strv (NULL: none). */
int lev_credstore_list(const struct lev_credstore *s, char ***out, struct lev_err *err);

/*
 * The providers the files hold keys for, whatever the backend: in
 * credentials.toml (*file_out) and as config.toml flat keys (*config_out),
 * each a fresh strv or NULL.  Either out may be NULL.
 */
int lev_credstore_file_keys(const struct lev_credstore *s, char ***file_out, char ***config_out,
			    struct lev_err *err);

/*
 * Move the keys (above): TO_FILE moves the keychain's into credentials.toml,
 * else the files' into the keychain.  S's kind must be the destination
 * (-EINVAL naming the setting to change).  *moved (may be NULL) gets one
 * "PROVIDER\tFROM" line per key, FROM being the file or "keychain".  With
 * DRY_RUN only *moved is filled.
 */
int lev_credstore_migrate(const struct lev_credstore *s, bool to_file, bool dry_run,
			  char ***moved, struct lev_err *err);
