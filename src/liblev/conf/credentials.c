#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/secrets.h"
#include "liblev/conf/config.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/keychain.h"
#include "liblev/conf/toml.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

void lev_secret_free(char *s)
{
	if (!s || lev_secret_release(s))
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

int lev_credentials_protect_process(struct lev_err *err)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return lev_err_errno(err, -errno, "cannot make the process non-dumpable");
	return 0;
}

/* ---- variables taken out of the environment ---- */

struct scrubbed {
	char *name;
	char *value;	/* a secret; NULL when the variable was unset or empty */
};

static pthread_mutex_t scrub_lock = PTHREAD_MUTEX_INITIALIZER;
static struct scrubbed *scrub_v;
static size_t scrub_n;

/* The kernel's [env_start, env_end) of this process (fields 50 and 51 of
 * /proc/self/stat), or false when it cannot be read. */
static bool env_block(uintptr_t *start, uintptr_t *end)
{
	char buf[2048], *p, *q;
	ssize_t n;
	int fd, field;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return false;
	p++;
	/* field 3 (state) follows the command name */
	for (field = 3; field < 50; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return false;
	}
	errno = 0;
	*start = (uintptr_t)strtoumax(p + 1, &q, 10);
	if (errno || q == p + 1 || *q != ' ')
		return false;
	*end = (uintptr_t)strtoumax(q + 1, &p, 10);
	if (errno || p == q + 1 || *end <= *start)
		return false;
	return true;
}

static struct scrubbed *scrub_find(const char *name)
{
	for (size_t i = 0; i < scrub_n; i++)
		if (!strcmp(scrub_v[i].name, name))
			return &scrub_v[i];
	return NULL;
}

void lev_credentials_scrub_env(char *const *names)
{
	extern char **environ;
	uintptr_t start = 0, end = 0;
	bool have_block;

	pthread_mutex_lock(&scrub_lock);
	have_block = env_block(&start, &end);
	for (char *const *nm = names; nm && *nm; nm++) {
		size_t len = strlen(*nm);
		struct scrubbed *s;

		if (!len || strchr(*nm, '='))
			continue;
		s = scrub_find(*nm);
		if (!s) {
			const char *v = getenv(*nm);

			scrub_v = xreallocarray(scrub_v, scrub_n + 1, sizeof(*scrub_v));
			s = &scrub_v[scrub_n++];
			s->name = xstrdup(*nm);
			s->value = v && *v ? lev_secret_dup(v) : NULL;
			lev_secrets_add(s->value);
		}
		/* overwrite every copy that lives in the block the kernel shows */
		for (char **e = environ; have_block && e && *e; e++) {
			uintptr_t a = (uintptr_t)*e;
			char *val;

			if (strncmp(*e, *nm, len) != 0 || (*e)[len] != '=')
				continue;
			val = *e + len + 1;
			if (a >= start && a < end && (uintptr_t)val + strlen(val) < end)
				explicit_bzero(val, strlen(val));
		}
		(void)unsetenv(*nm);
	}
	pthread_mutex_unlock(&scrub_lock);
}

/* The value lev_credentials_scrub_env() kept for NAME, as a fresh secret. */
static char *scrubbed_value(const char *name)
{
	struct scrubbed *s;
	char *v = NULL;

	pthread_mutex_lock(&scrub_lock);
	s = scrub_find(name);
	if (s && s->value)
		v = xstrdup(s->value);
	pthread_mutex_unlock(&scrub_lock);
	return v;
}

char *lev_credentials_env(const char *name)
{
	const char *v = secure_getenv(name);

	if (v && *v)
		return xstrdup(v);
	/* taken out of the environment earlier in this process */
	if (getuid() == geteuid() && getgid() == getegid())
		return scrubbed_value(name);
	return NULL;
}

bool lev_api_key_valid(const char *key)
{
	size_t n;

	if (!key)
		return false;
	n = strlen(key);
	if (n == 0 || n > LEV_API_KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)key[i] < 0x21 || (unsigned char)key[i] > 0x7e)
			return false;
	return true;
}

/* Open PATH for reading only if it is safe to take a secret from it. */
static int open_checked(const char *path, const char *noun, int *fd_out, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ELOOP)
			return lev_err_set(err, -EPERM,
					   "refusing %s '%s': it is a symbolic link", noun, path);
		return lev_err_errno(err, -errno, "cannot open %s '%s'", noun, path);
	}
	if (fstat(fd, &st) < 0)
		return lev_err_errno(err, -errno, "cannot stat %s '%s'", noun, path);
	if (!S_ISREG(st.st_mode))
		return lev_err_set(err, -EPERM, "refusing %s '%s': not a regular file",
				   noun, path);
	if (st.st_uid != geteuid())
		return lev_err_set(err, -EPERM,
				   "refusing %s '%s': owned by uid %u, not by you (uid %u)",
				   noun, path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 077)
		return lev_err_set(err, -EPERM,
				   "refusing %s '%s': mode %04o lets others read it; "
				   "run 'chmod 600 %s'",
				   noun, path, (unsigned)(st.st_mode & 07777), path);
	if ((size_t)st.st_size > LEV_CREDENTIALS_MAX_FILE)
		return lev_err_set(err, -EFBIG, "refusing %s '%s': larger than %zu bytes",
				   noun, path, LEV_CREDENTIALS_MAX_FILE);
	*fd_out = TAKE_FD(fd);
	return 0;
}

int lev_credentials_read(const char *path, const char *noun, size_t max, char **out,
			 size_t *len_out, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	int r;

	*out = NULL;
	if (len_out)
		*len_out = 0;
	r = open_checked(path, noun, &fd, err);
	if (r < 0 || fd < 0)
		return r;
	return lev_read_fd(fd, path, max, out, len_out, err);
}

/* A quoted span of 1..3 punctuation bytes ('=', '"', '"""'): the parser's own words. */
static bool punct_span(const char *open, const char *close)
{
	if (close - open - 1 < 1 || close - open - 1 > 3)
		return false;
	for (const char *p = open + 1; p < close; p++)
		if ((*p >= '0' && *p <= '9') || ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z'))
			return false;
	return true;
}

/*
 * ERR's message with what the parser quoted from the file withheld: from
 * the first quote that does not open a short punctuation span to the last
 * quote of the message (a key may hold a quote of its own).
 */
static void withhold_quoted(struct lev_err *err)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(sizeof(err->msg) - 1);
	const char *m = err->msg, *last = strrchr(m, '\'');

	while (*m) {
		const char *close = *m == '\'' ? strchr(m + 1, '\'') : NULL;

		if (close && punct_span(m, close)) {
			(void)lev_buf_add(&b, m, (size_t)(close - m + 1));
			m = close + 1;
		} else if (*m == '\'') {
			(void)lev_buf_adds(&b, "(withheld)");
			m = last > m ? last + 1 : m + strlen(m);
		} else {
			(void)lev_buf_addch(&b, *m++);
		}
	}
	explicit_bzero(err->msg, sizeof(err->msg));
	memcpy(err->msg, b.buf, b.len + 1);
	lev_buf_release(&b);
}

int lev_credentials_parse(const char *buf, size_t len, const char *name,
			  struct lev_toml_doc **out, struct lev_err *err)
{
	int r = lev_toml_parse(buf, len, name, out, err);

	if (r < 0 && err)
		withhold_quoted(err);
	return r;
}

/* The string at V (named WHAT in PATH), checked as a key: a fresh secret in *out. */
static int take_key(const struct lev_toml_value *v, const char *path, const char *what,
		    char **out, struct lev_err *err)
{
	if (v->type != LEV_TOML_STRING)
		return lev_err_set(err, LEV_EPARSE, "%s:%u:%u: '%s' must be a string", path, v->line,
				   v->col, what);
	if (strlen(v->u.str.ptr) != v->u.str.len || !lev_api_key_valid(v->u.str.ptr))
		return lev_err_set(err, -EINVAL,
				   "%s:%u:%u: '%s' must be 1..%d printable characters with no spaces",
				   path, v->line, v->col, what, LEV_API_KEY_MAX);
	*out = xstrdup(v->u.str.ptr);
	return 0;
}

/*
 * PROVIDER's key in the TOML file PATH (NOUN in messages): with FLAT,
 * Leviath's [providers] PROVIDER_api_key (and top-level
 * openrouter_api_key), else [providers.PROVIDER] api_key.
 */
static int lookup(const char *path, const char *noun, const char *provider, bool flat,
		  char **out, struct lev_err *err)
{
	_cleanup_free_ char *what = NULL;
	_cleanup_free_ char *flat_key = NULL;
	struct lev_toml_doc *doc = NULL;
	const struct lev_toml_value *v, *top = NULL;
	char *buf = NULL;
	size_t len = 0;
	int r;

	*out = NULL;
	if (!path)
		return 0;
	r = lev_credentials_read(path, noun, flat ? LEV_CONFIG_MAX_FILE : LEV_CREDENTIALS_MAX_FILE,
				 &buf, &len, err);
	if (r < 0 || !buf)
		return r;
	r = lev_credentials_parse(buf, len, path, &doc, err);
	explicit_bzero(buf, len);
	free(buf);
	if (r < 0)
		return r;

	flat_key = xasprintf("%s_api_key", provider);
	if (flat && !strcmp(provider, "openrouter"))
		top = lev_toml_table_get(lev_toml_root(doc), flat_key);
	v = lev_toml_table_get(lev_toml_root(doc), "providers");
	if (v && v->type != LEV_TOML_TABLE) {
		r = lev_err_set(err, LEV_EPARSE, "%s:%u:%u: 'providers' must be a table", path,
				v->line, v->col);
		goto out;
	}
	if (v)
		v = lev_toml_table_get(v->u.table, flat ? flat_key : provider);
	if (!flat && v && v->type != LEV_TOML_TABLE) {
		r = lev_err_set(err, LEV_EPARSE, "%s:%u:%u: 'providers.%s' must be a table", path,
				v->line, v->col, provider);
		goto out;
	}
	if (!flat && v)
		v = lev_toml_table_get(v->u.table, "api_key");
	if (!v)
		v = top;
	what = flat ? xasprintf(v == top ? "%s" : "providers.%s", flat_key)
		    : xasprintf("providers.%s.api_key", provider);
	r = v ? take_key(v, path, what, out, err) : 0;
out:
	lev_toml_free(doc);
	return r;
}

int lev_credentials_lookup(const char *path, const char *provider, char **out,
			   struct lev_err *err)
{
	return lookup(path, "credentials file", provider, false, out, err);
}

int lev_credentials_lookup_config(const char *path, const char *provider, char **out,
				  struct lev_err *err)
{
	return lookup(path, "config", provider, true, out, err);
}

static int resolve(const char *provider, const char *env_name, const char *config_path,
		   const char *credentials_path, bool keychain, char **out,
		   enum lev_key_source *source_out, struct lev_err *err);

/* Every key lev resolves is secret by that role: the process's one set redacts it (secrets.h). */
int lev_api_key_resolve(const char *provider, const char *env_name, const char *config_path,
			const char *credentials_path, bool keychain, char **out,
			enum lev_key_source *source_out, struct lev_err *err)
{
	int r = resolve(provider, env_name, config_path, credentials_path, keychain, out,
			source_out, err);

	if (r == 0 && *out) {
		/* kept where no child of lev can read it (secrets.h) */
		char *k = lev_secret_dup(*out);

		lev_secret_free(*out);
		*out = k;
		lev_secrets_add(k);
	}
	return r;
}

static int resolve(const char *provider, const char *env_name, const char *config_path,
		   const char *credentials_path, bool keychain, char **out,
		   enum lev_key_source *source_out, struct lev_err *err)
{
	char *key = NULL;
	int r;

	*out = NULL;
	*source_out = LEV_KEY_NONE;
	/* Leviath's order: the config file's key, then the variable; the
	 * keychain takes the files' place, never read beside it */
	r = keychain ? 0 : lev_credentials_lookup_config(config_path, provider, &key, err);
	if (r < 0)
		return r;
	if (key) {
		*out = key;
		*source_out = LEV_KEY_CONFIG;
		return 0;
	}

	if (env_name && *env_name) {
		char *kept = lev_credentials_env(env_name);

		if (kept) {
			if (!lev_api_key_valid(kept)) {
				lev_secret_free(kept);
				return lev_err_set(err, -EINVAL,
						   "the key in $%s must be 1..%d printable characters "
						   "with no spaces or newlines",
						   env_name, LEV_API_KEY_MAX);
			}
			*out = kept;
			*source_out = LEV_KEY_ENV;
			return 0;
		}
	}
	if (keychain) {
		r = lev_keychain_lookup(provider, &key, err);
		if (r < 0)
			return r;
		*out = key;
		*source_out = key ? LEV_KEY_KEYCHAIN : LEV_KEY_NONE;
		return 0;
	}
	r = lev_credentials_lookup(credentials_path, provider, &key, err);
	if (r < 0)
		return r;
	*out = key;
	*source_out = key ? LEV_KEY_FILE : LEV_KEY_NONE;
	return 0;
}
