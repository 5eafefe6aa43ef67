/*
 * cursesapi.c - ncurses opened when lev dash starts (cursesapi.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "lev/cursesapi.h"

struct lev_cursesapi lev_curses;

/* Symbol NAME of DL in *OUT: 0, or < 0 with ERR. */
static int sym(void *dl, const char *name, void *out, struct lev_err *err)
{
	void *p = dlsym(dl, name);

	if (!p)
		return lev_err_set(err, -ENOENT, "%s has no %s", LEV_LIBNCURSESW_SONAME, name);
	memcpy(out, &p, sizeof(p));
	return 0;
}

int lev_cursesapi_load(struct lev_err *err)
{
	struct lev_cursesapi api;
	void *dl;

	if (lev_curses.fn_newterm)
		return 0;
	dl = dlopen(LEV_LIBNCURSESW_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return lev_err_set(err, -ENOENT, "cannot load %s (lev dash needs it): %s",
				   LEV_LIBNCURSESW_SONAME, dlerror());
#define LEV_CURSES_SYM(f)                                   \
	if (sym(dl, #f, &api.fn_##f, err) < 0) { \
		dlclose(dl);                                \
		return -ENOENT;                             \
	}
	LEV_CURSES_FUNCS(LEV_CURSES_SYM)
#undef LEV_CURSES_SYM
	if (sym(dl, "LINES", &api.v_lines, err) < 0 || sym(dl, "COLS", &api.v_cols, err) < 0 ||
	    sym(dl, "stdscr", &api.v_stdscr, err) < 0 || sym(dl, "acs_map", &api.v_acs_map, err) < 0) {
		dlclose(dl);
		return -ENOENT;
	}
	lev_curses = api;
	return 0;
}
