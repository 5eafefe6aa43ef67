/*
 * shellkeys-cmd.c - what one simple command of a shell line contributes:
 * variable bindings, the program key (with its folded subcommand), the
 * builtins that run hidden code (which stop the parse), the builtins that
 * only bind variables or launch nothing, and the flags that turn a
 * safe-listed program into one that writes or runs code.
 *
 * The lexer (shellkeys-parse.c) hands over the words of one simple command
 * after quote removal; redirections were already handled there.
 */
#include <stdbool.h>
#include <string.h>

#include "liblev/policy/shellkeys-internal.h"

static bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static bool startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* An unquoted, unexpanded word with exactly the text S. */
static bool word_is(const struct sk_word *w, const char *s)
{
	return !w->quoted && !w->expanded && streq(w->val, s);
}

/* "-abc": a cluster of short options (not "-", not "--..."). */
static bool is_short_cluster(const struct sk_word *w)
{
	return !w->expanded && w->val[0] == '-' && w->val[1] && w->val[1] != '-';
}

static bool short_cluster_has(const struct sk_word *w, char c)
{
	return is_short_cluster(w) && strchr(w->val + 1, c) != NULL;
}

/*
 * "--NAME" or "--NAME=...", where NAME is a non-empty prefix of LONGOPT
 * at least MINLEN long (getopt_long accepts unambiguous abbreviations).
 */
static bool long_opt_abbrev(const struct sk_word *w, const char *longopt, size_t minlen)
{
	const char *v = w->val, *eq;
	size_t len;

	if (w->expanded || strncmp(v, "--", 2) != 0)
		return false;
	v += 2;
	eq = strchr(v, '=');
	len = eq ? (size_t)(eq - v) : strlen(v);
	return len >= minlen && len <= strlen(longopt) && strncmp(v, longopt, len) == 0;
}

static const char *base_name(const char *s)
{
	const char *slash = strrchr(s, '/');

	return slash ? slash + 1 : s;
}

bool sk_is_name(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') ||
			  s[0] == '_'))
		return false;
	for (i = 1; i < len; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return false;
	}
	return true;
}

static bool is_number(const char *s)
{
	bool digit = false;

	for (; *s; s++) {
		if (*s >= '0' && *s <= '9')
			digit = true;
		else if (*s != '.')
			return false;
	}
	return digit;
}

static const char *const shell_names[] = {
	"sh", "bash", "rbash", "dash", "zsh", "ksh", "ksh93", "mksh", "lksh", "pdksh", "oksh",
	"loksh", "yash", "ash", "posh", "fish", "csh", "tcsh", "busybox", NULL,
};

static bool is_shell_name(const struct sk_word *w)
{
	const char *b;
	size_t i;

	if (w->expanded)
		return false;
	b = base_name(w->val);
	for (i = 0; shell_names[i]; i++)
		if (streq(b, shell_names[i]))
			return true;
	return false;
}

/* Builtins that run code the line does not show. */
static const struct {
	const char *name;
	const char *reason;
} hidden_code[] = {
	{ "eval", "'eval' runs a string as shell code" },
	{ "source", "'source' runs the code of another file in this shell" },
	{ ".", "'.' runs the code of another file in this shell" },
	{ "trap", "'trap' installs code to run later" },
	{ "alias", "'alias' changes what later words mean" },
	{ "unalias", "'unalias' changes what later words mean" },
	{ "fc", "'fc' re-runs commands from the history" },
	{ "enable", "'enable' loads or changes builtins" },
	{ "hash", "'hash' changes which file a program name runs" },
	{ "shopt", "'shopt' changes how the shell reads the rest of the line" },
	{ "mapfile", "'mapfile' can run a callback" },
	{ "readarray", "'readarray' can run a callback" },
	{ "compgen", "'compgen' can run commands and functions" },
	{ "complete", "'complete' installs commands to run later" },
	{ "compopt", "'compopt' changes completion code" },
	{ "bind", "'bind' can install commands to run" },
	{ "coproc", "'coproc' is not read by this parser" },
	{ NULL, NULL },
};

/* Builtins that launch nothing and bind nothing: no key at all. */
static const char *const no_key_builtins[] = {
	":", "shift", "exit", "return", "break", "continue", "wait", "jobs", "times", "umask",
	NULL,
};

/* Programs whose arguments are never folded into the key. */
static const char *const no_fold[] = { "cd", "echo", "printf", "test", "[", NULL };

static bool in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (streq(*list, s))
			return true;
	return false;
}

/*
 * Skip the options of `command` / `builtin` / `exec` starting at W[I].
 * Returns the index of the program word, or N after sk_stop() on an option
 * this parser does not know.
 */
static size_t skip_prefix_options(struct sk *p, struct sk_word *w, size_t i, size_t n,
				  const char *prefix)
{
	const char *letters = streq(prefix, "command") ? "pvV" : streq(prefix, "exec") ? "cla" : "";

	for (; i < n; i++) {
		const char *v = w[i].val;

		if (w[i].expanded || w[i].quoted || v[0] != '-' || !v[1])
			return i;
		if (streq(v, "--"))
			return i + 1;
		for (v++; *v; v++) {
			if (!strchr(letters, *v)) {
				sk_stop(p, "an option of 'command', 'builtin' or 'exec' this parser "
					   "does not know");
				return n;
			}
			if (*v == 'a') {
				/* exec -a NAME: the rest of the cluster, or the next word */
				if (!v[1])
					i++;
				break;
			}
		}
	}
	return i;
}

static void bind_word(struct sk *p, const struct sk_word *w)
{
	const char *eq;

	if (w->assign) {
		sk_bind(p, w->val, w->name_len);
		return;
	}
	if (w->expanded) {
		sk_stop(p, "a variable name that is expanded at run time");
		return;
	}
	eq = strchr(w->val, '=');
	if (eq && eq > w->val && eq[-1] == '+')
		eq--;
	if (sk_is_name(w->val, eq ? (size_t)(eq - w->val) : w->len)) {
		sk_bind(p, w->val, eq ? (size_t)(eq - w->val) : w->len);
		return;
	}
	sk_stop(p, "a variable name that is not a plain name (a subscript can run code)");
}

/*
 * export / readonly / declare / typeset / local / unset: every operand
 * names a variable the line binds.  Only the options in FLAGS are
 * understood; the others (-n namerefs, -i integers, -a/-A arrays) make
 * values evaluate as code and stop the parse.
 */
static void declaration(struct sk *p, struct sk_word *w, size_t i, size_t n, const char *flags)
{
	bool opts = true;
	size_t k;

	for (k = i + 1; k < n && !p->stopped; k++) {
		const char *v = w[k].val;

		if (opts && !w[k].expanded && !w[k].assign && (v[0] == '-' || v[0] == '+') && v[1]) {
			if (streq(v, "--")) {
				opts = false;
				continue;
			}
			for (v++; *v; v++)
				if (!strchr(flags, *v)) {
					sk_stop(p, "a declaration option that evaluates values as code");
					return;
				}
			continue;
		}
		opts = false;
		bind_word(p, &w[k]);
	}
}

/* read [-ers] [-a NAME] [-d D] [-i T] [-n N] [-N N] [-p P] [-t T] [-u FD] [NAME...] */
static void read_builtin(struct sk *p, struct sk_word *w, size_t i, size_t n)
{
	size_t k, names = 0;

	for (k = i + 1; k < n && !p->stopped; k++) {
		const char *v = w[k].val;

		if (!w[k].expanded && v[0] == '-' && v[1]) {
			if (streq(v, "--")) {
				k++;
				break;
			}
			for (v++; *v; v++) {
				if (strchr("ers", *v))
					continue;
				if (!strchr("adinNptu", *v)) {
					sk_stop(p, "a 'read' option this parser does not know");
					return;
				}
				if (!v[1]) {
					k++;
					if (k >= n)
						return;
				}
				if (*v == 'a') {
					if (v[1]) {
						if (!sk_is_name(v + 1, strlen(v + 1))) {
							sk_stop(p, "a variable name that is not a plain name");
							return;
						}
						sk_bind(p, v + 1, strlen(v + 1));
					} else {
						bind_word(p, &w[k]);
					}
					names++;
				}
				break;
			}
			continue;
		}
		break;
	}
	for (; k < n && !p->stopped; k++) {
		bind_word(p, &w[k]);
		names++;
	}
	if (!names)
		sk_bind(p, "REPLY", 5);
}

/* printf -v NAME: binds NAME. */
static void printf_builtin(struct sk *p, struct sk_word *w, size_t i, size_t n)
{
	const char *v;

	if (i + 1 >= n || w[i + 1].expanded)
		return;
	v = w[i + 1].val;
	if (streq(v, "-v")) {
		if (i + 2 < n)
			bind_word(p, &w[i + 2]);
	} else if (startswith(v, "-v")) {
		if (sk_is_name(v + 2, strlen(v + 2)))
			sk_bind(p, v + 2, strlen(v + 2));
		else
			sk_stop(p, "a variable name that is not a plain name");
	}
}

/* cd [-L|-P|-e|-@] [DIR]: record where later relative redirects land. */
static void cd_builtin(struct sk *p, struct sk_word *w, size_t i, size_t n)
{
	const struct sk_word *d = NULL;
	size_t k;

	for (k = i + 1; k < n; k++) {
		const char *v = w[k].val;

		if (!w[k].expanded && !w[k].quoted && v[0] == '-' && v[1]) {
			if (streq(v, "--")) {
				k++;
				break;
			}
			if (strspn(v + 1, "LPe@") != strlen(v + 1)) {
				sk_add_cd(p, NULL, false);
				return;
			}
			continue;
		}
		break;
	}
	if (k < n)
		d = &w[k];
	if (!d) {
		sk_add_cd(p, p->binds_home ? NULL : "~", false);
		return;
	}
	if (d->expanded || d->len == 0 || streq(d->val, "-")) {
		sk_add_cd(p, NULL, false);
		return;
	}
	if (d->tilde) {
		sk_add_cd(p, d->val, false);
		return;
	}
	sk_add_cd(p, d->val,
		  d->val[0] != '/' && !streq(d->val, ".") && !streq(d->val, "..") &&
			  !startswith(d->val, "./") && !startswith(d->val, "../"));
}

static const char *const set_short_ok = "abefhmnuvxBCEHP";
static const char *const set_long_ok[] = {
	"allexport", "braceexpand", "errexit", "errtrace", "hashall", "histexpand", "history",
	"ignoreeof", "monitor", "noclobber", "noexec", "noglob", "nolog", "notify", "nounset",
	"physical", "pipefail", "verbose", "xtrace", NULL,
};

/* set: only options that do not change how the line is read or run. */
static void set_builtin(struct sk *p, struct sk_word *w, size_t i, size_t n)
{
	size_t k;

	for (k = i + 1; k < n; k++) {
		const char *v = w[k].val;

		if (w[k].expanded || (v[0] != '-' && v[0] != '+') || streq(v, "--") ||
		    streq(v, "-"))
			return; /* positional parameters: data */
		for (v++; *v; v++) {
			if (*v == 'o') {
				if (v[1] || k + 1 >= n)
					goto bad;
				k++;
				if (w[k].expanded || !in_list(set_long_ok, w[k].val))
					goto bad;
				break;
			}
			if (!strchr(set_short_ok, *v))
				goto bad;
		}
	}
	return;
bad:
	sk_stop(p, "a 'set' option that changes how the rest of the line is read or run");
}

static const char *const branch_ok[] = {
	"-a", "--all", "-r", "--remotes", "-l", "--list", "-v", "-vv", "--verbose", "-q",
	"--quiet", "--show-current", "--no-color", "--color", "--column", "--no-column", "-i",
	"--ignore-case", "--no-abbrev", "--merged", "--no-merged", "--contains", "--no-contains",
	"--points-at", NULL,
};
static const char *const branch_ok_prefix[] = {
	"--color=", "--column=", "--sort=", "--format=", "--abbrev=", "--merged=", "--no-merged=",
	"--contains=", "--no-contains=", "--points-at=", NULL,
};

/* `git branch ...` that only lists. */
static bool git_branch_lists(struct sk_word *w, size_t i, size_t n)
{
	bool list = false, positional = false;
	size_t k, j;

	for (k = i; k < n; k++) {
		const char *v = w[k].val;
		bool ok = false;

		if (w[k].expanded)
			return false;
		if (v[0] != '-') {
			positional = true;
			continue;
		}
		if (in_list(branch_ok, v))
			ok = true;
		for (j = 0; !ok && branch_ok_prefix[j]; j++)
			ok = startswith(v, branch_ok_prefix[j]);
		if (!ok)
			return false;
		if (streq(v, "-l") || streq(v, "--list") || startswith(v, "--merged") ||
		    startswith(v, "--no-merged") || startswith(v, "--contains") ||
		    startswith(v, "--no-contains") || startswith(v, "--points-at"))
			list = true;
	}
	return !positional || list;
}

/* `git remote ...` that neither changes the config nor contacts a remote. */
static bool git_remote_reads(struct sk_word *w, size_t i, size_t n)
{
	size_t k;

	for (k = i; k < n; k++) {
		if (w[k].expanded)
			return false;
		if (word_is(&w[k], "-v") || word_is(&w[k], "--verbose"))
			continue;
		if (word_is(&w[k], "get-url"))
			return true;
		if (word_is(&w[k], "show")) {
			for (k++; k < n; k++)
				if (word_is(&w[k], "-n"))
					return true;
			return false;
		}
		return false;
	}
	return true;
}

static const char *const hostname_ok[] = {
	"-a", "--alias", "-A", "--all-fqdns", "-d", "--domain", "-f", "--fqdn", "--long", "-i",
	"--ip-address", "-I", "--all-ip-addresses", "-s", "--short", "-y", "--yp", "--nis", "-V",
	"--version", "-h", "--help", NULL,
};

/*
 * Flags that make a safe-listed program write a file, change the system or
 * run code, and the programs that run commands the line does not name.
 */
static void program_misuse(struct sk *p, const char *base, struct sk_word *w, size_t i, size_t n)
{
	size_t k;

	if (streq(base, "git")) {
		for (k = i + 1; k < n; k++)
			if (!w[k].expanded &&
			    (streq(w[k].val, "--output") || startswith(w[k].val, "--output="))) {
				sk_refuse(p, "'git --output' writes a file");
				p->writes = true;
			}
		if (i + 1 < n && word_is(&w[i + 1], "branch") && !git_branch_lists(w, i + 2, n))
			sk_refuse(p, "'git branch' with these arguments changes the repository");
		if (i + 1 < n && word_is(&w[i + 1], "remote") && !git_remote_reads(w, i + 2, n))
			sk_refuse(p, "'git remote' with these arguments changes the configuration or "
				     "contacts a remote");
	} else if (streq(base, "date")) {
		for (k = i + 1; k < n; k++)
			if (short_cluster_has(&w[k], 's') || long_opt_abbrev(&w[k], "set", 1))
				sk_refuse(p, "'date -s' sets the clock");
	} else if (streq(base, "file")) {
		for (k = i + 1; k < n; k++)
			if (short_cluster_has(&w[k], 'C') || long_opt_abbrev(&w[k], "compile", 2)) {
				sk_refuse(p, "'file -C' writes a compiled magic file");
				p->writes = true;
			}
	} else if (streq(base, "test") || streq(base, "[")) {
		for (k = i + 1; k < n; k++)
			if (word_is(&w[k], "-v") || word_is(&w[k], "-R"))
				sk_refuse(p, "'test -v' evaluates an array subscript, which can run code");
	} else if (streq(base, "hostname")) {
		for (k = i + 1; k < n; k++)
			if (w[k].expanded || !in_list(hostname_ok, w[k].val))
				sk_refuse(p, "'hostname' with an argument can change the host name");
	} else if (streq(base, "xargs")) {
		sk_refuse(p, "'xargs' runs commands built from its input");
	} else if (streq(base, "find")) {
		for (k = i + 1; k < n; k++)
			if (word_is(&w[k], "-exec") || word_is(&w[k], "-execdir") ||
			    word_is(&w[k], "-ok") || word_is(&w[k], "-okdir"))
				sk_refuse(p, "'find -exec' runs other programs");
	} else if (streq(base, "env")) {
		for (k = i + 1; k < n; k++)
			if (short_cluster_has(&w[k], 'S') || long_opt_abbrev(&w[k], "split-string", 2))
				sk_stop(p, "'env -S' runs a command given as one string");
	}
}

/* A shell given -c somewhere in the command runs a string as code. */
static void shell_string(struct sk *p, struct sk_word *w, size_t i, size_t n)
{
	size_t k, m;

	for (k = i; k < n; k++) {
		if (!is_shell_name(&w[k]))
			continue;
		for (m = k + 1; m < n; m++)
			if (short_cluster_has(&w[m], 'c')) {
				sk_stop(p, "a shell given -c runs a string as code");
				return;
			}
	}
}

/* Programs whose arguments are text, never paths they open or list. */
static const char *const never_open[] = {
	"echo", "printf", "basename", "dirname", "true", "false", "seq", "sleep", "pwd",
	"uname", "whoami", "id", "hostname", "which", "type", NULL,
};

static void program(struct sk *p, struct sk_word *w, size_t i, size_t n)
{
	const struct sk_word *prog = &w[i];
	const char *name = prog->val, *base = base_name(prog->val);
	const char *fold = NULL;
	size_t k;

	if (prog->expanded) {
		sk_stop(p, "the program name is expanded at run time");
		return;
	}
	if (prog->quoted)
		sk_refuse(p, "the program name is quoted");
	if (!*name || name[0] == '-' || startswith(name, "env:")) {
		sk_refuse(p, "the program name cannot be keyed");
		return;
	}
	for (k = 0; hidden_code[k].name; k++)
		if (streq(name, hidden_code[k].name)) {
			sk_stop(p, hidden_code[k].reason);
			return;
		}
	/* programs that only print their arguments never open them */
	if (!in_list(never_open, base))
		for (k = i + 1; k < n; k++)
			sk_note_outside(p, &w[k]);
	shell_string(p, w, i, n);
	program_misuse(p, base, w, i, n);
	if (p->stopped)
		return;

	if (in_list(no_key_builtins, name))
		return;
	if (streq(name, "set")) {
		set_builtin(p, w, i, n);
		return;
	}
	if (streq(name, "let")) {
		sk_refuse(p, "'let' evaluates arithmetic on variables");
		return;
	}
	if (streq(name, "getopts")) {
		sk_refuse(p, "'getopts' binds variables from its arguments");
		return;
	}
	if (streq(name, "export")) {
		declaration(p, w, i, n, "fnp");
		return;
	}
	if (streq(name, "readonly")) {
		declaration(p, w, i, n, "fp");
		return;
	}
	if (streq(name, "declare") || streq(name, "typeset") || streq(name, "local")) {
		declaration(p, w, i, n, "rxgpfFlut");
		return;
	}
	if (streq(name, "unset")) {
		declaration(p, w, i, n, "fvn");
		return;
	}
	if (streq(name, "read")) {
		read_builtin(p, w, i, n);
		return;
	}
	if (streq(name, "printf"))
		printf_builtin(p, w, i, n);
	else if (streq(name, "cd"))
		cd_builtin(p, w, i, n);
	else if (streq(name, "pushd") || streq(name, "popd"))
		sk_add_cd(p, NULL, false);
	if (p->stopped)
		return;

	if (i + 1 < n && !in_list(no_fold, name)) {
		const struct sk_word *a = &w[i + 1];

		if (!a->quoted && !a->expanded && !a->tilde && a->len > 0 && a->val[0] != '-' &&
		    !is_number(a->val))
			fold = a->val;
	}
	sk_add_key(p, name, strlen(name), fold);
}

void sk_command(struct sk *p, struct sk_word *w, size_t n)
{
	size_t i = 0;

	while (i < n && w[i].assign) {
		sk_bind(p, w[i].val, w[i].name_len);
		i++;
	}
	while (i < n && !p->stopped) {
		const struct sk_word *prog = &w[i];

		if (!prog->expanded &&
		    (streq(prog->val, "command") || streq(prog->val, "builtin") ||
		     streq(prog->val, "exec"))) {
			if (prog->quoted)
				sk_refuse(p, "the program name is quoted");
			i = skip_prefix_options(p, w, i + 1, n, prog->val);
			continue;
		}
		program(p, w, i, n);
		return;
	}
}
