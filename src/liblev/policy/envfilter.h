/*
 * envfilter.h - which environment variables a sandboxed command may see.
 *
 * `[security] shell_env` (config.h, enum lev_shell_env) decides what shells,
 * script shell() calls and command seeds lose:
 *
 *	filtered  every credential-shaped name except SSH_AUTH_SOCK (default)
 *	strict    every credential-shaped name
 *	custom    exactly `shell_env_withhold`
 *	inherit   nothing
 *
 * In every mode, names listed in `[security] allow_env_vars` (exact,
 * case-insensitive, no wildcards) are kept -- except the variables that
 * change what a shell runs at start-up or how it splits a line (BASH_ENV,
 * ENV, CDPATH, SHELLOPTS, BASHOPTS, GLOBIGNORE, PS4, PROMPT_COMMAND, IFS and
 * exported functions BASH_FUNC_*), which are removed in every mode, inherit
 * included: the shell-key parser that decides which commands are safe
 * assumes a shell started without them.
 *
 * A name is credential-shaped (lev_env_name_sensitive) when, upper-cased,
 * it contains one of TOKEN SECRET PASSWORD PASSWD PASSPHRASE CREDENTIAL
 * APIKEY API_KEY ACCESS_KEY PRIVATE_KEY KEY _PAT SESSION COOKIE AUTH BEARER
 * SIGNATURE SIGNING DSN NETRC KUBECONFIG, is one of DATABASE_URL
 * DATABASE_DSN REDIS_URL MONGO_URL MONGODB_URI AMQP_URL SSH_AUTH_SOCK, or
 * starts with LEVIATH_ AWS_ AZURE_ GOOGLE_ GCP_.
 *
 * The filter borrows its string lists; lev_envfilter_apply() returns a
 * fresh strv the caller frees with lev_strv_free().
 */
#pragma once

#include <stdbool.h>

#include "liblev/conf/config.h"

struct lev_envfilter {
	enum lev_shell_env mode;
	char *const *withhold;	/* shell_env_withhold (custom mode), borrowed, may be NULL */
	char *const *allow;	/* allow_env_vars, borrowed, may be NULL */
};

/* The default: filtered, nothing extra withheld or allowed. */
#define LEV_ENVFILTER_INIT { LEV_SHELL_ENV_FILTERED, NULL, NULL }

/* Parse "filtered", "strict", "custom", "inherit" (case-insensitive); 0 or -EINVAL. */
int lev_shell_env_parse(const char *s, enum lev_shell_env *out);

/* True when NAME looks like it holds a credential (the rules above). */
bool lev_env_name_sensitive(const char *name);

/* True for the shell start-up variables removed in every mode (above). */
bool lev_env_name_shell_startup(const char *name);

/* True when F removes the variable NAME. */
bool lev_envfilter_withholds(const struct lev_envfilter *f, const char *name);

/*
 * The entries of ENVP ("NAME=VALUE", NULL-terminated; NULL means empty)
 * that F keeps, in order, as a fresh strv (NULL when none are kept).
 * Entries without '=' or with an empty name are dropped.
 */
char **lev_envfilter_apply(const struct lev_envfilter *f, char *const *envp);
