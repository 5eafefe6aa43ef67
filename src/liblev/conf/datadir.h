/*
 * datadir.h - where lev keeps its files.
 *
 * The data root is `$LEVIATH_HOME/.leviath` when LEVIATH_HOME is set (it must
 * then be an absolute path), otherwise `~/.leviath`.  Beneath it:
 *
 *	config.toml		the user's config (LEVIATH_CONFIG_PATH overrides)
 *	policy.toml		taint allowlist rules
 *	rules/			Lua gate rules
 *	agents/<name>/		installed blueprints
 *	runs/<id>/		run records
 *	credentials.toml	provider keys (credential_store = "file")
 *
 * Directories lev creates are 0700 and files 0600 (LEV_DIR_MODE,
 * LEV_FILE_MODE).  Environment variables are read with secure_getenv(), so
 * a setuid context never honours them.
 *
 * Every getter returns a fresh string through OUT that the caller frees; on
 * failure OUT is untouched.  Nothing here creates anything except
 * lev_datadir_ensure().
 */
#pragma once

#include <stdbool.h>

#include "liblev/base/error.h"

#define LEV_DIR_MODE 0700
#define LEV_FILE_MODE 0600

/* The names beneath the data root (and the unit's), each spelled only here. */
#define LEV_DATADIR_CONFIG "config.toml"
#define LEV_DATADIR_POLICY "policy.toml"
#define LEV_DATADIR_RULES "rules"
#define LEV_DATADIR_RUNS "runs"
#define LEV_DATADIR_AGENTS "agents"
#define LEV_DATADIR_CREDENTIALS "credentials.toml"
#define LEV_DATADIR_SOCKET "daemon.sock"
#define LEV_DATADIR_LOCK "daemon.lock"
#define LEV_DATADIR_DB "lev.db"
#define LEV_DATADIR_WEBHOOKS "webhooks"	/* the daemon's pending completion webhooks */
#define LEV_UNIT_NAME "lev.service"

/* Longest agent name (bytes). */
#define LEV_AGENT_NAME_MAX 64

int lev_datadir_root(char **out, struct lev_err *err);
/* LEVIATH_CONFIG_PATH when set and non-empty, else <root>/config.toml. */
int lev_datadir_config_path(char **out, struct lev_err *err);
int lev_datadir_policy_path(char **out, struct lev_err *err);
int lev_datadir_rules_dir(char **out, struct lev_err *err);
int lev_datadir_runs_dir(char **out, struct lev_err *err);
int lev_datadir_credentials_path(char **out, struct lev_err *err);
/* The daemon's socket, its lock and its database, beneath the data root. */
int lev_datadir_socket_path(char **out, struct lev_err *err);
int lev_datadir_lock_path(char **out, struct lev_err *err);
int lev_datadir_db_path(char **out, struct lev_err *err);
/* The systemd --user unit: ${XDG_CONFIG_HOME:-~/.config}/systemd/user/lev.service. */
int lev_datadir_unit_path(char **out, struct lev_err *err);

/*
 * Leviath's own policy, read beside lev's (docs/policy.md): the directory
 * ${XDG_CONFIG_HOME:-~/.config}/leviath (XDG_CONFIG_HOME only when
 * absolute), its policy.toml, and its rules/ (Rhai rules lev does not run).
 */
int lev_datadir_leviath_dir(char **out, struct lev_err *err);
int lev_datadir_leviath_policy_path(char **out, struct lev_err *err);
int lev_datadir_leviath_rules_dir(char **out, struct lev_err *err);
int lev_datadir_agents_dir(char **out, struct lev_err *err);
/* <root>/agents/NAME; fails with -EINVAL when NAME is not a valid agent name. */
int lev_datadir_agent_dir(const char *name, char **out, struct lev_err *err);

/*
 * An agent name is 1..LEV_AGENT_NAME_MAX bytes of [A-Za-z0-9._-], starts
 * with a letter or digit, and is never "." or "..": it is used as a
 * directory name and must not be able to name anything else.
 */
bool lev_agent_name_valid(const char *name);

/* mkdir -p DIR, creating missing directories with LEV_DIR_MODE. */
int lev_datadir_ensure(const char *dir, struct lev_err *err);
