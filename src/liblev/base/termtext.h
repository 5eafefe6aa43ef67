/*
 * termtext.h - text that is safe to show on a terminal.
 *
 * Much of what `lev run` shows comes from the model or from files it read:
 * its answers, the commands and paths it asks to run, the question in a
 * permission prompt.  Shown raw, such text can drive the terminal: "\r"
 * or an escape sequence can overwrite "rm -rf ~" with "ls" in the very
 * prompt that asks the user to approve it, clear the screen, set the
 * window title, or (on some terminals) answer back.  Unicode bidi controls
 * can reorder what is displayed (Trojan Source) and zero-width characters
 * hide text.
 *
 * lev_termtext_add() copies text, keeping printable ASCII, newline, tab and
 * well-formed UTF-8 letters, and writes everything else visibly:
 *
 *	C0 controls (ESC, CR, BS, BEL, ...) and DEL	\x1b
 *	bytes that are not well-formed UTF-8		\xNN, one per byte
 *	C1 controls, bidi and zero-width formatting	\u202e
 *	characters, line/paragraph separators, BOM
 *
 * so the text the user reads is the text that was sent, byte for byte
 * recoverable.  It never fails (the buffer's cap truncates, as always).
 */
#pragma once

#include <stddef.h>

#include "liblev/base/buf.h"

/* Append the terminal-safe form of S (LEN bytes) to OUT. */
void lev_termtext_add(struct lev_buf *out, const char *s, size_t len);
