/*
 * mhdapi.c - libmicrohttpd opened on first use (mhdapi.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "liblev/base/mhdapi.h"

struct lev_mhdapi lev_mhd;
struct lev_gnutlsapi lev_gnutls;

/* GnuTLS's few functions (mapped already by libmicrohttpd): < 0 with ERR. */
static int gnutls_load(struct lev_err *err)
{
	struct lev_gnutlsapi api;
	void *dl = dlopen(LEV_LIBGNUTLS_SONAME, RTLD_NOW | RTLD_LOCAL), *p;

	if (!dl)
		return lev_err_set(err, -ENOENT, "cannot load %s: %s", LEV_LIBGNUTLS_SONAME,
				   dlerror());
#define LEV_GNUTLS_SYM(f)                                                                \
	p = dlsym(dl, "gnutls_" #f);                                                     \
	if (!p) {                                                                        \
		dlclose(dl);                                                             \
		return lev_err_set(err, -ENOENT, "%s has no gnutls_%s", LEV_LIBGNUTLS_SONAME, #f); \
	}                                                                                \
	memcpy(&api.f, &p, sizeof(p));
	LEV_GNUTLS_FUNCS(LEV_GNUTLS_SYM)
#undef LEV_GNUTLS_SYM
	api.free_fn = dlsym(dl, "gnutls_free");
	if (!api.free_fn || !*api.free_fn) {
		dlclose(dl);
		return lev_err_set(err, -ENOENT, "%s has no gnutls_free", LEV_LIBGNUTLS_SONAME);
	}
	lev_gnutls = api;
	return 0;
}

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
	if (gnutls_load(err) < 0) {
		dlclose(dl);
		return -ENOENT;
	}
	lev_mhd = api;
	return 0;
}
