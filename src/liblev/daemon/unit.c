/*
 * unit.c - the systemd --user unit (see unit.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/unit.h"

#define UNIT_MAX ((size_t)64 << 10)

int lev_unit_path(char **out, struct lev_err *err)
{
	return lev_datadir_unit_path(out, err);
}

/* S quoted for a unit's command line or Environment= ("...", with \ " % escaped). */
static void add_quoted(struct lev_buf *b, const char *s)
{
	(void)lev_buf_adds(b, "\"");
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			(void)lev_buf_addf(b, "\\%c", *s);
		else if (*s == '%')
			(void)lev_buf_adds(b, "%%");
		else
			(void)lev_buf_addch(b, *s);
	}
	(void)lev_buf_adds(b, "\"");
}

char *lev_unit_text(const char *exe, const char *leviath_home, struct lev_err *err)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(UNIT_MAX);

	if (!exe || exe[0] != '/' || strchr(exe, '\n') ||
	    (leviath_home && strchr(leviath_home, '\n'))) {
		lev_err_set(err, -EINVAL, "'%s' cannot be written in a unit: it must be an "
					  "absolute path without a newline",
			    exe && strchr(exe, '\n') ? "(a path with a newline)" : exe ? exe : "");
		return NULL;
	}
	(void)lev_buf_adds(&b, "# Written by 'lev daemon install'; 'lev daemon uninstall' removes it.\n"
			       "[Unit]\n"
			       "Description=lev daemon: agent runs that outlive the terminal\n"
			       "\n"
			       "[Service]\n"
			       "ExecStart=");
	add_quoted(&b, exe);
	(void)lev_buf_adds(&b, " daemon\n");
	if (leviath_home) {
		_cleanup_free_ char *kv = xasprintf("LEVIATH_HOME=%s", leviath_home);

		(void)lev_buf_adds(&b, "Environment=");
		add_quoted(&b, kv);
		(void)lev_buf_adds(&b, "\n");
	}
	(void)lev_buf_adds(&b, "Restart=on-failure\n"
			       "\n"
			       "[Install]\n"
			       "WantedBy=default.target\n");
	return lev_buf_detach(&b, NULL);
}

int lev_unit_write(const char *path, const char *text, struct lev_err *err)
{
	_cleanup_free_ char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	int r;

	if (slash && slash != dir) {
		*slash = '\0';
		r = lev_mkdir_p(dir, 0755, err);
		if (r < 0)
			return r;
	}
	return lev_write_file_atomic(path, text, strlen(text), 0644, err);
}
