/*
 * keychain.c - provider keys in the Secret Service, libsecret loaded on
 * first use (keychain.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/keychain.h"

#define SONAME_DEFAULT "libsecret-1.so.0"
#define FIX "start gnome-keyring-daemon (or another Secret Service provider) in your session, " \
	    "or set [security] credential_store = \"file\" in config.toml"

/*
 * The few glib and libsecret declarations lev needs (libsecret 0.19+,
 * ABI-stable), so nothing here includes glib.
 */
struct g_error {
	unsigned domain;
	int code;
	char *message;
};

struct g_list {
	void *data;
	struct g_list *next, *prev;
};

struct secret_schema_attribute {
	const char *name;
	int type;		/* SECRET_SCHEMA_ATTRIBUTE_STRING = 0 */
};

struct secret_schema {
	const char *name;
	int flags;		/* SECRET_SCHEMA_NONE = 0 */
	struct secret_schema_attribute attributes[32];
	int reserved;
	void *reserved1, *reserved2, *reserved3, *reserved4, *reserved5, *reserved6, *reserved7;
};

#define SECRET_SEARCH_ALL (1 << 1)

struct secret_api {
	char *(*lookup_sync)(const struct secret_schema *schema, void *cancellable,
			     struct g_error **error, ...);
	int (*store_sync)(const struct secret_schema *schema, const char *collection,
			  const char *label, const char *password, void *cancellable,
			  struct g_error **error, ...);
	int (*clear_sync)(const struct secret_schema *schema, void *cancellable,
			  struct g_error **error, ...);
	struct g_list *(*search_sync)(const struct secret_schema *schema, int flags,
				      void *cancellable, struct g_error **error, ...);
	void *(*retrievable_get_attributes)(void *retrievable);
	void (*password_free)(char *password);
	void *(*hash_table_lookup)(void *table, const void *key);
	void (*hash_table_unref)(void *table);
	void (*list_free_full)(struct g_list *list, void (*free_func)(void *));
	void (*object_unref)(void *object);
	void (*error_free)(struct g_error *error);
};

static const struct secret_schema schema = {
	.name = "dev.lev.Credential",
	.flags = 0,
	.attributes = { { "provider", 0 }, { NULL, 0 } },
};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *soname = SONAME_DEFAULT;
static struct secret_api api;
static bool loaded;
static struct lev_err load_err;

void lev_keychain_set_soname(const char *name)
{
	soname = name ? name : SONAME_DEFAULT;
}

#define SYM(field, name)							\
	do {									\
		void *p_ = dlsym(dl, name);					\
		if (!p_) {							\
			lev_err_set(&load_err, LEV_EUNSUPP,			\
				    "%s lacks %s (libsecret older than 0.19?); " FIX, \
				    soname, name);				\
			memset(&api, 0, sizeof(api));				\
			dlclose(dl);						\
			return;							\
		}								\
		memcpy(&api.field, &p_, sizeof(p_));				\
	} while (0)

static void load(void)
{
	void *dl = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		lev_err_set(&load_err, LEV_EUNSUPP,
			    "the keychain needs libsecret, which cannot be loaded (%s): install "
			    "libsecret-1-0, or set [security] credential_store = \"file\" in "
			    "config.toml",
			    soname);
		return;
	}
	SYM(lookup_sync, "secret_password_lookup_sync");
	SYM(store_sync, "secret_password_store_sync");
	SYM(clear_sync, "secret_password_clear_sync");
	SYM(search_sync, "secret_password_search_sync");
	SYM(retrievable_get_attributes, "secret_retrievable_get_attributes");
	SYM(password_free, "secret_password_free");
	/* glib's, reached through libsecret's own dependencies */
	SYM(hash_table_lookup, "g_hash_table_lookup");
	SYM(hash_table_unref, "g_hash_table_unref");
	SYM(list_free_full, "g_list_free_full");
	SYM(object_unref, "g_object_unref");
	SYM(error_free, "g_error_free");
	loaded = true;		/* stays loaded: glib cannot be unloaded */
}

/* A session bus libsecret could reach without autolaunching one (which needs X11). */
static bool have_session_bus(void)
{
	const char *addr = getenv("DBUS_SESSION_BUS_ADDRESS");
	const char *rt = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	char path[4096];

	if (addr && *addr)
		return true;
	if (!rt || *rt != '/' || (size_t)snprintf(path, sizeof(path), "%s/bus", rt) >= sizeof(path))
		return false;
	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

static int get_api(const struct secret_api **out, struct lev_err *err)
{
	if (!have_session_bus())
		return lev_err_set(err, LEV_EUNSUPP,
				   "credential_store is \"keychain\" but there is no D-Bus session "
				   "bus ($DBUS_SESSION_BUS_ADDRESS is unset) to reach a Secret "
				   "Service on: " FIX);
	pthread_once(&load_once, load);
	if (!loaded)
		return lev_err_set(err, load_err.code, "%s", load_err.msg);
	*out = &api;
	return 0;
}

/* ERR from glib's error GE (freed), one line, with the fix. */
static int service_error(const struct secret_api *a, struct g_error *ge, const char *what,
			 struct lev_err *err)
{
	char msg[256];
	size_t i;

	snprintf(msg, sizeof(msg), "%s", ge && ge->message ? ge->message : "unknown error");
	for (i = 0; msg[i]; i++)
		if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f)
			msg[i] = ' ';
	if (ge)
		a->error_free(ge);
	return lev_err_set(err, -EIO, "cannot %s the keychain (Secret Service): %s; " FIX, what,
			   msg);
}

bool lev_keychain_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > LEV_KEYCHAIN_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_' || name[i] == '-'))
			return false;
	return true;
}

static int check_name(const char *provider, struct lev_err *err)
{
	if (!lev_keychain_name_valid(provider))
		return lev_err_set(err, -EINVAL,
				   "provider name '%s' must be 1..%d of a-z, 0-9, '_' and '-'",
				   provider ? provider : "", LEV_KEYCHAIN_NAME_MAX);
	return 0;
}

int lev_keychain_lookup(const char *provider, char **out, struct lev_err *err)
{
	const struct secret_api *a;
	struct g_error *ge = NULL;
	char *pw;
	int r;

	*out = NULL;
	if ((r = check_name(provider, err)) < 0 || (r = get_api(&a, err)) < 0)
		return r;
	pw = a->lookup_sync(&schema, NULL, &ge, "provider", provider, NULL);
	if (ge) {
		if (pw)
			a->password_free(pw);
		return service_error(a, ge, "read", err);
	}
	if (!pw)
		return 0;
	if (!lev_api_key_valid(pw)) {
		a->password_free(pw);
		return lev_err_set(err, -EINVAL,
				   "the keychain's key for '%s' must be 1..%d printable characters "
				   "with no spaces or newlines: set it again with 'lev auth set %s'",
				   provider, LEV_API_KEY_MAX, provider);
	}
	*out = xstrdup(pw);
	a->password_free(pw);	/* zeroes it */
	return 0;
}

int lev_keychain_store(const char *provider, const char *key, struct lev_err *err)
{
	const struct secret_api *a;
	struct g_error *ge = NULL;
	char label[LEV_KEYCHAIN_NAME_MAX + 32];
	int r;

	if ((r = check_name(provider, err)) < 0)
		return r;
	if (!lev_api_key_valid(key))
		return lev_err_set(err, -EINVAL,
				   "a key must be 1..%d printable characters with no spaces",
				   LEV_API_KEY_MAX);
	if ((r = get_api(&a, err)) < 0)
		return r;
	snprintf(label, sizeof(label), "lev: %s API key", provider);
	if (!a->store_sync(&schema, NULL, label, key, NULL, &ge, "provider", provider, NULL) ||
	    ge)
		return service_error(a, ge, "write to", err);
	return 0;
}

int lev_keychain_remove(const char *provider, bool *removed, struct lev_err *err)
{
	const struct secret_api *a;
	struct g_error *ge = NULL;
	int r, gone;

	if (removed)
		*removed = false;
	if ((r = check_name(provider, err)) < 0 || (r = get_api(&a, err)) < 0)
		return r;
	gone = a->clear_sync(&schema, NULL, &ge, "provider", provider, NULL);
	if (ge)
		return service_error(a, ge, "remove from", err);
	if (removed)
		*removed = gone != 0;
	return 0;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

int lev_keychain_list(char ***out, struct lev_err *err)
{
	const struct secret_api *a;
	struct g_error *ge = NULL;
	struct g_list *items;
	char **names = NULL;
	size_t n = 0;
	int r;

	*out = NULL;
	if ((r = get_api(&a, err)) < 0)
		return r;
	items = a->search_sync(&schema, SECRET_SEARCH_ALL, NULL, &ge, NULL);
	if (ge) {
		if (items)
			a->list_free_full(items, a->object_unref);
		return service_error(a, ge, "search", err);
	}
	for (struct g_list *l = items; l; l = l->next) {
		void *attrs = a->retrievable_get_attributes(l->data);
		const char *p = attrs ? a->hash_table_lookup(attrs, "provider") : NULL;

		if (p && lev_keychain_name_valid(p) && !lev_strv_contains(names, p)) {
			names = lev_strv_push(names, p);
			n++;
		}
		if (attrs)
			a->hash_table_unref(attrs);
	}
	if (items)
		a->list_free_full(items, a->object_unref);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	*out = names;
	return 0;
}

int lev_keychain_check(struct lev_err *err)
{
	char **names = NULL;
	int r = lev_keychain_list(&names, err);

	lev_strv_free(names);
	return r;
}
