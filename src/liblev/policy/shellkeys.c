/*
 * shellkeys.c - the public face of the shell-line keys: convenience
 * wrappers around lev_shellkeys_parse() (shellkeys-parse.c), the built-in
 * safe list, and the coverage rule a grant or a safe list is judged by.
 */
#include <stdlib.h>
#include <string.h>

#include "liblev/policy/shellkeys-internal.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"

/*
 * The built-in safe list (spec DEFAULT_SAFE_SHELL).  Admission rule:
 * nothing here can write a file, run another program or open a
 * connection under any flag the parser still lets through as grantable
 * (shellkeys-cmd.c refuses `date -s`, `file -C`, `test -v`, `hostname NAME`,
 * `git --output`, `git branch NAME`, `git remote add` ...).  "[" is test's
 * other spelling and is listed beside it.
 */
const char *const lev_safe_shell_default[] = {
	"ls", "cat", "head", "tail", "wc", "cut", "tr", "grep", "egrep", "fgrep", "diff", "cmp",
	"file", "stat", "du", "df", "jq", "column", "od", "strings", "basename", "dirname",
	"realpath", "readlink", "pwd", "cd", "echo", "printf", "date", "seq", "sleep", "true",
	"false", "test", "[", "which", "type", "uname", "hostname", "whoami", "id", "ps", "pgrep",
	"git status", "git diff", "git log", "git show", "git branch", "git remote",
	"git rev-parse", "git blame", "git describe", "git ls-files", NULL,
};

void lev_shellkeys_release(struct lev_shellkeys *k)
{
	if (!k)
		return;
	lev_strv_free(k->keys);
	lev_strv_free(k->write_targets);
	free(k->reads_outside);
	memset(k, 0, sizeof(*k));
}

char **lev_shellkeys_keys(const char *line)
{
	struct lev_shellkeys k;
	char **r;

	lev_shellkeys_parse(line, &k);
	r = k.keys;
	k.keys = NULL;
	lev_shellkeys_release(&k);
	return r;
}

bool lev_shellkeys_writes_a_file(const char *line)
{
	struct lev_shellkeys k;
	bool r;

	lev_shellkeys_parse(line, &k);
	r = k.writes;
	lev_shellkeys_release(&k);
	return r;
}

char **lev_shellkeys_write_targets(const char *line)
{
	struct lev_shellkeys k;
	char **r;

	lev_shellkeys_parse(line, &k);
	r = k.write_targets;
	k.write_targets = NULL;
	lev_shellkeys_release(&k);
	return r;
}

char *lev_shellkeys_program_of(const char *key)
{
	const char *sp = strchr(key, ' ');

	return sp ? xstrndup(key, (size_t)(sp - key)) : xstrdup(key);
}

bool lev_shellkeys_is_program_key(const char *key)
{
	return key && !strncmp(key, "shell:", 6) && key[6] && strncmp(key, "shell:env:", 10) != 0 &&
	       key[6] != '>';
}

bool lev_shellkeys_is_valid_prefix(const char *entry)
{
	char **keys;
	char *want;
	bool ok;

	if (!entry || !*entry || entry[0] == '>' || strlen(entry) > 1024)
		return false;
	if (!strncmp(entry, "env:", 4))
		return sk_is_name(entry + 4, strlen(entry + 4));
	keys = lev_shellkeys_keys(entry);
	want = xasprintf("shell:%s", entry);
	ok = keys && keys[0] && !keys[1] && !strcmp(keys[0], want) &&
	     lev_shellkeys_is_program_key(keys[0]);
	free(want);
	lev_strv_free(keys);
	return ok;
}

/* True when the program part of KEY (text before the first space) is in V. */
static bool program_in(char *const *v, const char *key)
{
	const char *sp = strchr(key, ' ');
	size_t len = sp ? (size_t)(sp - key) : strlen(key);

	for (; v && *v; v++)
		if (strlen(*v) == len && !strncmp(*v, key, len))
			return true;
	return false;
}

bool lev_shellkeys_all_covered(char *const *keys, char *const *safe, char *const *granted)
{
	if (!keys || !keys[0])
		return false;
	for (; *keys; keys++) {
		if (lev_strv_contains(safe, *keys) || lev_strv_contains(granted, *keys))
			continue;
		if (lev_shellkeys_is_program_key(*keys) && program_in(safe, *keys))
			continue;
		return false;
	}
	return true;
}

char **lev_safe_shell_default_keys(void)
{
	char **v = NULL;
	size_t i;

	for (i = 0; lev_safe_shell_default[i]; i++)
		v = lev_strv_push_take(v, xasprintf("shell:%s", lev_safe_shell_default[i]));
	return v;
}

bool lev_safecmd_default_covers(const char *cmdline)
{
	char **keys = lev_shellkeys_keys(cmdline);
	char **safe = lev_safe_shell_default_keys();
	bool r = lev_shellkeys_all_covered(keys, safe, NULL);

	lev_strv_free(keys);
	lev_strv_free(safe);
	return r;
}
