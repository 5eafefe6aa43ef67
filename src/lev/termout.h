/*
 * termout.h - everything lev prints on a terminal goes through termtext.
 *
 * Model answers, commands, paths, blueprint names and error messages that
 * quote them all reach stdout and stderr.  When either is a terminal,
 * lev_termout_install() swaps its FILE for one that passes every byte
 * through lev_termtext_add(), so no escape sequence or bidi control from
 * that text reaches the terminal, whichever command printed it.  A UTF-8
 * sequence split between two writes is held back until it is complete.
 * Pipes and files get the bytes unchanged.
 *
 * The one thing lev draws on purpose (the run spinner) writes to the file
 * descriptor directly with lev_termout_raw().
 */
#pragma once

#include <stddef.h>

/* Wrap stdout and stderr where they are terminals.  Call once, first. */
void lev_termout_install(void);

/* Write S to FD unfiltered (after flushing stderr). */
void lev_termout_raw(int fd, const char *s);
