/*
 * mhdapi.c - libmicrohttpd opened on first use (mhdapi.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "liblev/base/mhdapi.h"

struct lev_mhdapi lev_mhd;

int lev_mhdapi_load(struct lev_err *err)
{
	struct lev_mhdapi api;
	void *dl, *p;

	if (lev_mhd.start_daemon)
		return 0;
	dl = dlopen(LEV_LIBMICROHTTPD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return lev_err_set(err, -ENOENT, "cannot load %s (lev serve needs it): %s",
				   LEV_LIBMICROHTTPD_SONAME, dlerror());
#define LEV_MHD_SYM(f)                                                                    \
	p = dlsym(dl, "MHD_" #f);                                                                \
	if (!p) {                                                                         \
		dlclose(dl);                                                              \
		return lev_err_set(err, -ENOENT, "%s has no MHD_%s", LEV_LIBMICROHTTPD_SONAME, #f); \
	}                                                                                 \
	memcpy(&api.f, &p, sizeof(p));
	LEV_MHD_FUNCS(LEV_MHD_SYM)
#undef LEV_MHD_SYM
	lev_mhd = api;
	return 0;
}
