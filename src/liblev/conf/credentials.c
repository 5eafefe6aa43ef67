#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/toml.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

void lev_secret_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
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
static int open_checked(const char *path, int *fd_out, struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ELOOP)
			return lev_err_set(err, -EPERM,
					   "refusing credentials file '%s': it is a symbolic link", path);
		return lev_err_errno(err, -errno, "cannot open credentials file '%s'", path);
	}
	if (fstat(fd, &st) < 0)
		return lev_err_errno(err, -errno, "cannot stat credentials file '%s'", path);
	if (!S_ISREG(st.st_mode))
		return lev_err_set(err, -EPERM, "refusing credentials file '%s': not a regular file",
				   path);
	if (st.st_uid != geteuid())
		return lev_err_set(err, -EPERM,
				   "refusing credentials file '%s': owned by uid %u, not by you (uid %u)",
				   path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 077)
		return lev_err_set(err, -EPERM,
				   "refusing credentials file '%s': mode %04o lets others read it; "
				   "run 'chmod 600 %s'",
				   path, (unsigned)(st.st_mode & 07777), path);
	if ((size_t)st.st_size > LEV_CREDENTIALS_MAX_FILE)
		return lev_err_set(err, -EFBIG, "refusing credentials file '%s': larger than %zu bytes",
				   path, LEV_CREDENTIALS_MAX_FILE);
	*fd_out = TAKE_FD(fd);
	return 0;
}

int lev_credentials_lookup(const char *path, const char *provider, char **out,
			   struct lev_err *err)
{
	_cleanup_close_ int fd = -1;
	struct lev_toml_doc *doc = NULL;
	const struct lev_toml_value *v;
	const struct lev_toml_table *t;
	char *buf = NULL;
	size_t len = 0;
	int r;

	*out = NULL;
	if (!path)
		return 0;
	r = open_checked(path, &fd, err);
	if (r < 0 || fd < 0)
		return r;
	r = lev_read_fd(fd, path, LEV_CREDENTIALS_MAX_FILE, &buf, &len, err);
	if (r < 0)
		return r;
	r = lev_toml_parse(buf, len, path, &doc, err);
	explicit_bzero(buf, len);
	free(buf);
	if (r < 0)
		return r;

	v = lev_toml_table_get(lev_toml_root(doc), "providers");
	if (!v)
		goto none;
	if (v->type != LEV_TOML_TABLE) {
		r = lev_err_set(err, LEV_EPARSE, "%s:%u:%u: 'providers' must be a table", path,
				v->line, v->col);
		goto out;
	}
	v = lev_toml_table_get(v->u.table, provider);
	if (!v)
		goto none;
	if (v->type != LEV_TOML_TABLE) {
		r = lev_err_set(err, LEV_EPARSE, "%s:%u:%u: 'providers.%s' must be a table", path,
				v->line, v->col, provider);
		goto out;
	}
	t = v->u.table;
	v = lev_toml_table_get(t, "api_key");
	if (!v)
		goto none;
	if (v->type != LEV_TOML_STRING) {
		r = lev_err_set(err, LEV_EPARSE, "%s:%u:%u: 'providers.%s.api_key' must be a string",
				path, v->line, v->col, provider);
		goto out;
	}
	if (strlen(v->u.str.ptr) != v->u.str.len || !lev_api_key_valid(v->u.str.ptr)) {
		r = lev_err_set(err, -EINVAL,
				"%s:%u:%u: 'providers.%s.api_key' must be 1..%d printable characters "
				"with no spaces",
				path, v->line, v->col, provider, LEV_API_KEY_MAX);
		goto out;
	}
	*out = xstrdup(v->u.str.ptr);
none:
	r = 0;
out:
	lev_toml_free(doc);
	return r;
}

int lev_api_key_resolve(const char *provider, const char *env_name,
			const char *credentials_path, char **out,
			enum lev_key_source *source_out, struct lev_err *err)
{
	const char *v;
	char *key = NULL;
	int r;

	if (env_name && *env_name) {
		v = secure_getenv(env_name);
		if (v && *v) {
			if (!lev_api_key_valid(v))
				return lev_err_set(err, -EINVAL,
						   "the key in $%s must be 1..%d printable characters "
						   "with no spaces or newlines",
						   env_name, LEV_API_KEY_MAX);
			*out = xstrdup(v);
			*source_out = LEV_KEY_ENV;
			return 0;
		}
	}
	r = lev_credentials_lookup(credentials_path, provider, &key, err);
	if (r < 0)
		return r;
	*out = key;
	*source_out = key ? LEV_KEY_FILE : LEV_KEY_NONE;
	return 0;
}
