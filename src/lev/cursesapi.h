/*
 * cursesapi.h - ncurses, opened when `lev dash` starts (dlopen), as
 * libmicrohttpd is when lev serve starts (liblev/base/mhdapi.h): no other
 * lev process maps libncursesw or the libtinfo behind it.  Include it after
 * <curses.h>: the curses names lev dash uses (the functions its macros
 * expand to, and the screen's variables) go through the table below, typed
 * as the header declares them.
 */
#pragma once

#include <curses.h>

#include "liblev/base/error.h"

#ifndef LEV_LIBNCURSESW_SONAME
#define LEV_LIBNCURSESW_SONAME "libncursesw.so.6"
#endif

#define LEV_CURSES_FUNCS(X)                                                        \
	X(newterm) X(endwin) X(delscreen) X(raw) X(noecho) X(keypad) X(set_escdelay) \
	X(curs_set) X(wtimeout) X(wgetch) X(werase) X(wrefresh) X(wmove) X(waddnstr) \
	X(whline) X(wclrtobot) X(wattr_on) X(wattr_off)

struct lev_cursesapi {
#define LEV_CURSES_FIELD(f) __typeof__(f) *fn_##f;
	LEV_CURSES_FUNCS(LEV_CURSES_FIELD)
#undef LEV_CURSES_FIELD
	int *v_lines, *v_cols;
	WINDOW **v_stdscr;
	chtype *v_acs_map;
};

extern struct lev_cursesapi lev_curses;

/* Open ncurses and fill lev_curses (once); < 0 with ERR when it cannot. */
int lev_cursesapi_load(struct lev_err *err);

#define newterm lev_curses.fn_newterm
#define endwin lev_curses.fn_endwin
#define delscreen lev_curses.fn_delscreen
#define raw lev_curses.fn_raw
#define noecho lev_curses.fn_noecho
#define keypad lev_curses.fn_keypad
#define set_escdelay lev_curses.fn_set_escdelay
#define curs_set lev_curses.fn_curs_set
#define wtimeout lev_curses.fn_wtimeout
#define wgetch lev_curses.fn_wgetch
#define werase lev_curses.fn_werase
#define wrefresh lev_curses.fn_wrefresh
#define wmove lev_curses.fn_wmove
#define waddnstr lev_curses.fn_waddnstr
#define whline lev_curses.fn_whline
#define wclrtobot lev_curses.fn_wclrtobot
#define wattr_on lev_curses.fn_wattr_on
#define wattr_off lev_curses.fn_wattr_off
#define LINES (*lev_curses.v_lines)
#define COLS (*lev_curses.v_cols)
#define stdscr (*lev_curses.v_stdscr)
#define acs_map (lev_curses.v_acs_map)
