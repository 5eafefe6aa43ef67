/*
 * envfilter.c - the [security] shell_env rules (leviath-spec §3.8).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "liblev/base/cleanup.h"
#include "liblev/policy/envfilter.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

/* Longest name we bother upper-casing; longer names are judged sensitive. */
#define NAME_MAX_LEN 256

static const char *const hints[] = {
	"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "APIKEY",
	"API_KEY", "ACCESS_KEY", "PRIVATE_KEY", "KEY", "_PAT", "SESSION", "COOKIE", "AUTH",
	"BEARER", "SIGNATURE", "SIGNING", "DSN", "NETRC", "KUBECONFIG",
};

static const char *const exact[] = {
	"DATABASE_URL", "DATABASE_DSN", "REDIS_URL", "MONGO_URL", "MONGODB_URI", "AMQP_URL",
	"SSH_AUTH_SOCK",
};

static const char *const prefixes[] = {
	"LEVIATH_", "AWS_", "AZURE_", "GOOGLE_", "GCP_",
};

int lev_shell_env_parse(const char *s, enum lev_shell_env *out)
{
	int i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < _LEV_SHELL_ENV_MAX; i++) {
		if (!strcasecmp(s, lev_shell_env_name((enum lev_shell_env)i))) {
			*out = (enum lev_shell_env)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool lev_env_name_sensitive(const char *name)
{
	char up[NAME_MAX_LEN + 1];
	size_t i, n = strlen(name);

	if (n > NAME_MAX_LEN)
		return true;	/* fail closed on absurd names */
	for (i = 0; i < n; i++)
		up[i] = (char)toupper((unsigned char)name[i]);
	up[n] = '\0';

	for (i = 0; i < ARRAY_SIZE(exact); i++)
		if (!strcmp(up, exact[i]))
			return true;
	for (i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (lev_startswith(up, prefixes[i]))
			return true;
	for (i = 0; i < ARRAY_SIZE(hints); i++)
		if (strstr(up, hints[i]))
			return true;
	return false;
}

static bool list_has_nocase(char *const *v, const char *name)
{
	for (; v && *v; v++)
		if (!strcasecmp(*v, name))
			return true;
	return false;
}

bool lev_env_name_shell_startup(const char *name)
{
	static const char *const names[] = {
		"BASH_ENV", "ENV", "CDPATH", "SHELLOPTS", "BASHOPTS", "GLOBIGNORE",
		"PS4", "PROMPT_COMMAND", "IFS", NULL,
	};
	size_t i;

	if (!strncmp(name, "BASH_FUNC_", 10))
		return true;
	for (i = 0; names[i]; i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

bool lev_envfilter_withholds(const struct lev_envfilter *f, const char *name)
{
	bool withheld;

	/* these change how the shell parses or what it runs first: always gone */
	if (lev_env_name_shell_startup(name))
		return true;
	switch (f->mode) {
	case LEV_SHELL_ENV_INHERIT:
		return false;
	case LEV_SHELL_ENV_CUSTOM:
		withheld = list_has_nocase(f->withhold, name);
		break;
	case LEV_SHELL_ENV_FILTERED:
		withheld = lev_env_name_sensitive(name) && strcasecmp(name, "SSH_AUTH_SOCK") != 0;
		break;
	case LEV_SHELL_ENV_STRICT:
	default:
		/* an unknown mode is treated as the strictest */
		withheld = lev_env_name_sensitive(name);
		break;
	}
	return withheld && !list_has_nocase(f->allow, name);
}

char **lev_envfilter_apply(const struct lev_envfilter *f, char *const *envp)
{
	char **out = NULL;

	for (; envp && *envp; envp++) {
		const char *eq = strchr(*envp, '=');
		char name[NAME_MAX_LEN + 1];
		size_t n;

		if (!eq || eq == *envp)
			continue;
		n = (size_t)(eq - *envp);
		if (n > NAME_MAX_LEN) {
			/* too long to judge: keep only when nothing is withheld */
			if (f->mode == LEV_SHELL_ENV_INHERIT)
				out = lev_strv_push(out, *envp);
			continue;
		}
		memcpy(name, *envp, n);
		name[n] = '\0';
		if (!lev_envfilter_withholds(f, name))
			out = lev_strv_push(out, *envp);
	}
	return out;
}
