/*
 * unit.h - the systemd --user unit of `lev daemon install`.
 *
 *	$XDG_CONFIG_HOME/systemd/user/lev.service   (default ~/.config/...)
 *
 * It runs `EXE daemon` (the daemon in the foreground, logging to the
 * journal), restarts it when it fails, and starts it at login
 * (WantedBy=default.target).  A LEVIATH_HOME of the installing user is
 * written into it, so the unit's daemon serves the same data root.
 * Nothing here runs systemctl: the command does.
 */
#pragma once

#include "liblev/base/error.h"
#include "liblev/conf/datadir.h"

/* The unit's path (a fresh string): lev_datadir_unit_path(), one of lev's own files. */
int lev_unit_path(char **out, struct lev_err *err);

/*
 * The unit for the lev binary EXE (absolute) and LEVIATH_HOME (NULL: none)
 * (a fresh string); NULL with a message when either cannot be written in
 * a unit (a newline, or a relative EXE).
 */
char *lev_unit_text(const char *exe, const char *leviath_home, struct lev_err *err);

/* Write TEXT to PATH atomically (0644), making its directories. */
int lev_unit_write(const char *path, const char *text, struct lev_err *err);
