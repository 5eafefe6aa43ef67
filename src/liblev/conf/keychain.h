/*
 * keychain.h - provider API keys in the OS keychain, through the Secret
 * Service API (libsecret), for [security] credential_store = "keychain".
 *
 * Each key is one item of the schema "dev.lev.Credential" with the
 * attribute provider=NAME, labelled "lev: NAME API key", in the default
 * collection.  gnome-keyring, KeePassXC and KWallet (5.97+) all serve it.
 *
 * libsecret drags in glib, gio and D-Bus; most runs never need it
 * (HACKING.md rule 8), so it is not linked: the first call here dlopen()s
 * "libsecret-1.so.0" once for the process and it stays loaded.  Its few
 * prototypes and structs are declared in keychain.c (no glib headers).
 *
 * Every failure to reach the keychain is an error naming the fix (start
 * gnome-keyring-daemon or another Secret Service provider, or set
 * credential_store = "file"); nothing here ever falls back to
 * credentials.toml.  With neither $DBUS_SESSION_BUS_ADDRESS nor
 * $XDG_RUNTIME_DIR/bus there is no session bus and libsecret is not even
 * loaded.  Keys are secrets: fresh buffers freed with lev_secret_free()
 * (credentials.h), never in a message.
 */
#pragma once

#include <stdbool.h>

#include "liblev/base/error.h"

/* The longest provider name lev stores: [a-z0-9_-], 1..64 bytes. */
#define LEV_KEYCHAIN_NAME_MAX 64

/* True when NAME is a provider name lev stores keys under (above). */
bool lev_keychain_name_valid(const char *name);

/*
 * 0 when a Secret Service answers (it may still have no keys), else
 * LEV_EUNSUPP (no libsecret, no session bus) or -EIO with ERR naming the
 * fix.  Talks to the service.
 */
int lev_keychain_check(struct lev_err *err);

/*
 * PROVIDER's key: 0 with *out a fresh secret, or 0 with *out = NULL when
 * the keychain holds none.  A stored key that is not a valid key
 * (lev_api_key_valid()) is -EINVAL.
 */
int lev_keychain_lookup(const char *provider, char **out, struct lev_err *err);

/* Store KEY for PROVIDER, replacing any earlier one. */
int lev_keychain_store(const char *provider, const char *key, struct lev_err *err);

/* Remove PROVIDER's key; *removed (may be NULL) says whether there was one. */
int lev_keychain_remove(const char *provider, bool *removed, struct lev_err *err);

/*
 * The providers the keychain holds a lev key for, sorted, as a fresh strv
 * (NULL when none).  Keys are not read.
 */
int lev_keychain_list(char ***out, struct lev_err *err);

/*
 * For tests: load SONAME instead of "libsecret-1.so.0" on first use (call
 * before anything else here).  NULL keeps the default.
 */
void lev_keychain_set_soname(const char *soname);
