/*
 * oci-helper-path.c - where the container fast path's helper binary is:
 * $LEV_OCI_HELPER, else next to the running lev, else the installed
 * libexec directory.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lev-version.h"
#include "lev/cmd.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

static bool is_file(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

char *lev_find_oci_helper(void)
{
	const char *env = secure_getenv("LEV_OCI_HELPER");
	char self[PATH_MAX];
	ssize_t n;

	if (env && *env)
		return is_file(env) ? xstrdup(env) : NULL;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			char *p;

			*slash = '\0';
			p = lev_path_join(self, "lev-oci-helper");
			if (is_file(p))
				return p;
			free(p);
		}
	}
	if (is_file(LEV_LIBEXECDIR "/lev-oci-helper"))
		return xstrdup(LEV_LIBEXECDIR "/lev-oci-helper");
	return NULL;
}
