#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "liblev/base/curlapi.h"

#ifndef LEV_LIBCURL_SONAME
#define LEV_LIBCURL_SONAME "libcurl.so.4"
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct lev_curlapi api;
static const struct lev_curlapi *loaded;
static struct lev_err load_err;

/* dlsym() returns a data pointer; POSIX guarantees it converts to a function pointer. */
#define SYM(field, name)							\
	do {									\
		void *p_ = dlsym(dl, name);					\
		if (!p_) {							\
			r = lev_err_set(err, LEV_EUNSUPP,			\
					"%s lacks %s (libcurl too old?)",	\
					soname, name);				\
			goto fail;						\
		}								\
		memcpy(&out->field, &p_, sizeof(p_));				\
	} while (0)

int lev_curlapi_open(const char *soname, struct lev_curlapi *out, struct lev_err *err)
{
	void *dl;
	int r;

	dl = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return lev_err_set(err, LEV_EUNSUPP, "cannot load %s (install libcurl4): %s",
				   soname, dlerror());
	SYM(global_init, "curl_global_init");
	SYM(easy_init, "curl_easy_init");
	SYM(easy_setopt, "curl_easy_setopt");
	SYM(easy_perform, "curl_easy_perform");
	SYM(easy_getinfo, "curl_easy_getinfo");
	SYM(easy_cleanup, "curl_easy_cleanup");
	SYM(easy_strerror, "curl_easy_strerror");
	SYM(slist_append, "curl_slist_append");
	SYM(slist_free_all, "curl_slist_free_all");
	SYM(getdate, "curl_getdate");
	SYM(url, "curl_url");
	SYM(url_set, "curl_url_set");
	SYM(url_get, "curl_url_get");
	SYM(url_cleanup, "curl_url_cleanup");
	SYM(url_strerror, "curl_url_strerror");
	SYM(free, "curl_free");
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	dlclose(dl);
	return r;
}

/*
 * libcurl's memory, zeroed when it is given back: its request buffer holds
 * the "Authorization: Bearer <key>" line, and freed heap is what a child
 * lev forks for a sandbox copies (base/secrets.h).
 */
static void zfree(void *p)
{
	if (!p)
		return;
	explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

static void *zrealloc(void *p, size_t n)
{
	void *q;
	size_t old;

	if (!p)
		return malloc(n);
	old = malloc_usable_size(p);
	q = malloc(n ? n : 1);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	zfree(p);
	return q;
}

typedef CURLcode (*init_mem_fn)(long, curl_malloc_callback, curl_free_callback,
				curl_realloc_callback, curl_strdup_callback, curl_calloc_callback);

static CURLcode global_init(void *dl_any)
{
	void *p = dlsym(dl_any, "curl_global_init_mem");
	init_mem_fn init_mem;

	if (!p)
		return api.global_init(CURL_GLOBAL_DEFAULT);
	memcpy(&init_mem, &p, sizeof(p));
	return init_mem(CURL_GLOBAL_DEFAULT, malloc, zfree, zrealloc, strdup, calloc);
}

static void load(void)
{
	CURLcode rc;

	if (lev_curlapi_open(LEV_LIBCURL_SONAME, &api, &load_err) < 0)
		return;
	rc = global_init(dlopen(LEV_LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD));
	if (rc != CURLE_OK) {
		lev_err_set(&load_err, -EIO, "cannot initialise libcurl: %s", api.easy_strerror(rc));
		return;
	}
	__atomic_store_n(&loaded, &api, __ATOMIC_RELEASE);
}

int lev_curlapi_get(const struct lev_curlapi **out, struct lev_err *err)
{
	pthread_once(&load_once, load);
	*out = loaded;
	if (!loaded)
		return lev_err_set(err, load_err.code ? load_err.code : -EIO, "%s", load_err.msg);
	return 0;
}

bool lev_curlapi_loaded(void)
{
	return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE) != NULL;
}
