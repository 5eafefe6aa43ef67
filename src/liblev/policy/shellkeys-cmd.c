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
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/xalloc.h"
#include "liblev/policy/shellkeys-internal.h"
#include "liblev/policy/shellkeys.h"

/* Most names are compared against tables of others: the first byte tells most apart. */
static inline bool streq(const char *a, const char *b)
{
	return a[0] == b[0] && strcmp(a, b) == 0;
}

static bool startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * A field whose text is known: quoting does not matter (bash passes the
 * text either way: '-exec' is -exec), patterns and opaque words do.
 */
static bool known(const struct sk_word *w)
{
	return !w->opaque && !w->glob && !w->procsubst_only;
}

/* A known field with exactly the text S. */
static bool word_is(const struct sk_word *w, const char *s)
{
	return known(w) && streq(w->val, s);
}

/* "-abc": a cluster of short options (not "-", not "--..."). */
static bool is_short_cluster(const struct sk_word *w)
{
	return known(w) && w->val[0] == '-' && w->val[1] && w->val[1] != '-';
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

	if (!known(w) || strncmp(v, "--", 2) != 0)
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
	size_t i, len;

	if (w->expanded)
		return false;
	b = base_name(w->val);
	/* every name below ends in "sh", "93" or "box" */
	len = strlen(b);
	if (len < 2 || !((b[len - 2] == 's' && b[len - 1] == 'h') ||
			 (b[len - 2] == '9' && b[len - 1] == '3') ||
			 (b[len - 2] == 'o' && b[len - 1] == 'x')))
		return false;
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
 * git's options before the subcommand that change nothing but how it
 * prints or matches (-C DIR is followed by reads_outside like any path).
 * Everything else (-c, --config-env, --exec-path, --git-dir, --work-tree,
 * --namespace, -p/--paginate, --super-prefix ...) can point git at other
 * code or another repository.
 */
static const char *const git_global_ok[] = {
	"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
	"--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--version",
	"--no-advice", NULL,
};

/*
 * Options of git's reading commands that write a file (--output), run a
 * program the repository configures (--ext-diff, --textconv, signature
 * checks through gpg.program) or open an editor/pager; long options are
 * matched with getopt-style abbreviations.
 */
static const struct {
	const char *opt;
	size_t min;
	const char *reason;
} git_bad_long[] = {
	{ "output", 4, "'git --output' writes a file" },
	{ "ext-diff", 3, "'git --ext-diff' runs the diff program the repository names" },
	{ "textconv", 3, "'git --textconv' runs the converter the repository names" },
	{ "show-signature", 6, "'git --show-signature' runs the repository's gpg program" },
	{ "verify-signatures", 3, "a signature check runs the repository's gpg program" },
	{ "exec-path", 3, "'git --exec-path' picks the programs git runs" },
	{ "upload-pack", 3, "'--upload-pack' runs a program" },
	{ "edit-description", 3, "an editor runs" },
	{ "open-files-in-pager", 3, "a pager runs" },
	{ "paginate", 3, "a pager runs" },
	{ NULL, 0, NULL },
};

/* `git ...`: the subcommand index, or N after refusing a global option. */
static size_t git_globals(struct sk *p, struct sk_word *w, size_t i, size_t n)
{
	size_t k;

	for (k = i + 1; k < n; k++) {
		const char *v = w[k].val;

		if (!known(&w[k]) || v[0] != '-')
			return k;
		if (in_list(git_global_ok, v))
			continue;
		if (streq(v, "-C") && k + 1 < n) {
			k++;
			continue;
		}
		sk_refuse(p, "a git option before the subcommand that can point git at other code "
			     "or another repository (-c, --exec-path, --git-dir, --work-tree ...)");
		return n;
	}
	return k;
}

static void git_misuse(struct sk *p, struct sk_word *w, size_t i, size_t n)
{
	size_t sub = git_globals(p, w, i, n), k, j;

	for (k = i + 1; k < n; k++) {
		const char *v = w[k].val;

		for (j = 0; git_bad_long[j].opt; j++)
			if (long_opt_abbrev(&w[k], git_bad_long[j].opt, git_bad_long[j].min)) {
				sk_refuse(p, git_bad_long[j].reason);
				if (j == 0)
					p->writes = true;
			}
		/* a pretty format's %G? verifies signatures (gpg.program) */
		if (known(&w[k]) && (startswith(v, "--format=") || startswith(v, "--pretty=")) &&
		    strstr(v, "%G"))
			sk_refuse(p, "a '%G' format runs the repository's gpg program");
		if (word_is(&w[k], "core.fsmonitor") || strstr(v, "fsmonitor") ||
		    strstr(v, "hooksPath") || strstr(v, "hookspath"))
			sk_refuse(p, "the line names git's fsmonitor or hooks setting");
	}
	if (sub >= n)
		return;
	if (word_is(&w[sub], "branch") && !git_branch_lists(w, sub + 1, n))
		sk_refuse(p, "'git branch' with these arguments changes the repository");
	if (word_is(&w[sub], "remote") && !git_remote_reads(w, sub + 1, n))
		sk_refuse(p, "'git remote' with these arguments changes the configuration or "
			     "contacts a remote");
}

/* find's actions that run programs, delete or write files. */
static const char *const find_bad[] = {
	"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
	NULL,
};

/*
 * Flags that make a safe-listed program (built in or the user's own) write
 * a file, change the system or run code, and the programs that run
 * commands the line does not name.  They are checked on the fields bash
 * passes, so a quoted or brace-made flag is still a flag.
 */
static void program_misuse(struct sk *p, const char *base, struct sk_word *w, size_t i, size_t n)
{
	size_t k;

	if (streq(base, "git")) {
		git_misuse(p, w, i, n);
	} else if (streq(base, "printf")) {
		/* printf -v NAME assigns, and a subscript in NAME runs code */
		if (i + 1 < n && known(&w[i + 1]) && startswith(w[i + 1].val, "-v"))
			sk_refuse(p, "'printf -v' assigns a variable");
	} else if (streq(base, "date")) {
		for (k = i + 1; k < n; k++)
			if (short_cluster_has(&w[k], 's') || long_opt_abbrev(&w[k], "set", 1))
				sk_refuse(p, "'date -s' sets the clock");
	} else if (streq(base, "file")) {
		for (k = i + 1; k < n; k++) {
			if (short_cluster_has(&w[k], 'C') || long_opt_abbrev(&w[k], "compile", 2)) {
				sk_refuse(p, "'file -C' writes a compiled magic file");
				p->writes = true;
			}
			if (short_cluster_has(&w[k], 'm') || long_opt_abbrev(&w[k], "magic-file", 2))
				sk_refuse(p, "'file -m' loads a magic file the line names");
		}
	} else if (streq(base, "test") || streq(base, "[")) {
		for (k = i + 1; k < n; k++)
			if (word_is(&w[k], "-v") || word_is(&w[k], "-R"))
				sk_refuse(p, "'test -v' evaluates an array subscript, which can run code");
	} else if (streq(base, "hostname")) {
		for (k = i + 1; k < n; k++)
			if (!known(&w[k]) || !in_list(hostname_ok, w[k].val))
				sk_refuse(p, "'hostname' with an argument can change the host name");
	} else if (streq(base, "xargs")) {
		sk_refuse(p, "'xargs' runs commands built from its input");
	} else if (streq(base, "find")) {
		for (k = i + 1; k < n; k++)
			if (known(&w[k]) && in_list(find_bad, w[k].val))
				sk_refuse(p, "'find -exec' and '-delete', '-fprint' ... run programs or "
					     "write files");
	} else if (streq(base, "sort")) {
		for (k = i + 1; k < n; k++)
			if (short_cluster_has(&w[k], 'o') || long_opt_abbrev(&w[k], "output", 3) ||
			    long_opt_abbrev(&w[k], "compress-program", 3)) {
				sk_refuse(p, "'sort -o' writes a file; '--compress-program' runs one");
				p->writes = true;
			}
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

/*
 * A shell program W[I] given no script file (`sh`, `bash -s`, `... | sh`):
 * it runs code the line does not show.  A script file is a file the
 * person asked can read.
 */
static bool shell_reads_input(struct sk_word *w, size_t i, size_t n)
{
	size_t k;

	for (k = i + 1; k < n; k++) {
		const char *v = w[k].val;

		if (!known(&w[k]))
			return true;
		if (streq(v, "-s") || streq(v, "-"))
			return true;
		if (streq(v, "--"))
			return k + 1 >= n;
		if (streq(v, "-o") || streq(v, "+o") || streq(v, "-O") || streq(v, "+O") ||
		    streq(v, "--rcfile") || streq(v, "--init-file")) {
			k++;
			continue;
		}
		if (v[0] != '-' && v[0] != '+')
			return false;
	}
	return true;
}

/* Programs whose arguments are text, never paths they open or list. */
static const char *const never_open[] = {
	"echo", "printf", "basename", "dirname", "true", "false", "seq", "sleep", "pwd",
	"uname", "whoami", "id", "hostname", "which", "type", NULL,
};

/*
 * With lev_shellkeys_commands(): the fields of the command W[I..N), each
 * with its kind in front (shellkeys.h).
 */
static void trace(struct sk *p, struct sk_word *w, size_t i, size_t n)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(LEV_SHELLKEYS_MAX_LINE * 2);
	size_t k;

	if (!p->trace)
		return;
	for (k = i; k < n; k++) {
		char kind = w[k].opaque		? 'O'
			    : w[k].procsubst_only	? 'P'
			    : w[k].glob && w[k].tilde ? 'g'
			    : w[k].glob		? 'G'
			    : w[k].tilde		? 'T'
						: 'L';

		if (k > i)
			(void)lev_buf_addch(&b, '\x1f');
		(void)lev_buf_addch(&b, kind);
		(void)lev_buf_adds(&b, w[k].val);
	}
	sk_vec_push_take(p->trace, lev_buf_detach(&b, NULL));
}

static void program(struct sk *p, struct sk_word *w, size_t i, size_t n)
{
	const struct sk_word *prog = &w[i];
	const char *name = prog->val, *base = base_name(prog->val);
	const char *fold = NULL;
	size_t k;

	if (prog->expanded || prog->opaque || prog->glob || prog->from_brace) {
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
	if (is_shell_name(prog) && shell_reads_input(w, i, n))
		sk_need_fence(p, "a shell reads commands from its input");
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

	for (k = i + 1; k < n; k++) {
		if (w[k].opaque) {
			sk_refuse(p, "an argument whose value is only known when the line runs");
			break;
		}
		/* a pattern may match a file named like a flag ("-rf", "--output=x") */
		if (w[k].glob && (w[k].val[0] == '-' || strchr("*?[", w[k].val[0]))) {
			sk_refuse(p, "a pattern that may match a file whose name starts with '-' "
				     "(write ./* instead of *)");
			break;
		}
	}
	trace(p, w, i, n);

	if (i + 1 < n && !in_list(no_fold, name)) {
		const struct sk_word *a = &w[i + 1];

		if (!a->quoted && !a->expanded && !a->tilde && a->len > 0 && a->val[0] != '-' &&
		    !is_number(a->val))
			fold = a->val;
	}
	sk_add_key(p, name, strlen(name), fold);
}

/*
 * Programs that run their operands (`env curl ...`, `timeout 5 curl ...`):
 * the line is keyed through to the program they run, so a safe list or a
 * grant names that program, never the runner.  Each runner's options are
 * known here: SHORT_ARG letters take an argument (attached or the next
 * word), SHORT_REST letters take the rest of their cluster (optional
 * arguments), SHORT_FLAG letters none; long options likewise (getopt_long's
 * unambiguous abbreviations accepted).  OPERANDS come before the program
 * (timeout's duration, flock's lock file, taskset's mask).  An option this
 * parser does not know stops the parse: it could take the program word as
 * its argument.  NOPROG letters make it act on another process instead
 * (`ionice -p`) or move the program elsewhere (`env -C DIR`), refused.
 */
struct runner {
	const char *name;
	const char *short_arg, *short_rest, *short_flag, *noprog;
	const char *const *long_arg, *const *long_flag;
	unsigned operands;
	bool assigns;		/* NAME=VALUE operands set the program's environment (env) */
	bool string;		/* the operands are joined into a shell string (watch without -x) */
	const char *refuse;	/* why the line is never pre-approved, or NULL */
};

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })
static const struct runner runners[] = {
	{ "env", "u", "", "i0v", "C", L("unset"),
	  L("ignore-environment", "null", "debug"), 0, true, false, NULL },
	{ "timeout", "sk", "", "v", "", L("signal", "kill-after"),
	  L("preserve-status", "foreground", "verbose"), 1, false, false, NULL },
	{ "nice", "n", "", "", "", L("adjustment"), L("-"), 0, false, false, NULL },
	{ "nohup", "", "", "", "", L("-"), L("-"), 0, false, false, NULL },
	{ "stdbuf", "ioe", "", "", "", L("input", "output", "error"), L("-"), 0, false, false,
	  NULL },
	{ "setsid", "", "", "cfw", "", L("-"), L("ctty", "fork", "wait"), 0, false, false,
	  "'setsid' leaves the process group lev stops at the timeout" },
	{ "xargs", "adEILnPs", "eil", "0prtx", "",
	  L("arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs",
	    "max-chars", "process-slot-var"),
	  L("null", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits",
	    "open-tty"), 0, false, false, "'xargs' runs commands built from its input" },
	{ "flock", "wE", "", "sxeunoF", "", L("timeout", "wait", "conflict-exit-code"),
	  L("shared", "exclusive", "unlock", "nonblock", "nb", "close", "no-fork", "verbose"),
	  1, false, false, "'flock' creates the lock file it names" },
	{ "ionice", "cn", "", "t", "pPu", L("class", "classdata"), L("ignore"), 0, false, false,
	  NULL },
	{ "chrt", "TPD", "", "abdfiorRv", "pm",
	  L("sched-runtime", "sched-period", "sched-deadline"),
	  L("all-tasks", "batch", "deadline", "fifo", "idle", "other", "rr", "reset-on-fork",
	    "verbose"), 1, false, false, NULL },
	{ "taskset", "", "", "ac", "p", L("-"), L("all-tasks", "cpu-list"), 1, false, false,
	  NULL },
	{ "watch", "nq", "d", "bcegtxprw", "", L("interval", "equexit"),
	  L("beep", "color", "no-color", "differences", "errexit", "chgexit", "exec", "precise",
	    "no-title", "no-wrap", "no-linewrap"), 0, false, true, NULL },
};
#undef L

static const struct runner *runner_of(const struct sk_word *prog)
{
	if (!known(prog) || prog->expanded)
		return NULL;
	for (size_t k = 0; k < ARRAY_SIZE(runners); k++)
		if (streq(runners[k].name, base_name(prog->val)))
			return &runners[k];
	return NULL;
}

bool lev_shellkeys_runs_operands(const char *entry)
{
	size_t len;
	const char *base;

	if (!entry)
		return false;
	len = strcspn(entry, " \t");
	base = entry;
	for (size_t k = 0; k < len; k++)
		if (entry[k] == '/')
			base = entry + k + 1;
	for (size_t k = 0; k < ARRAY_SIZE(runners); k++)
		if (strlen(runners[k].name) == (size_t)(entry + len - base) &&
		    !strncmp(runners[k].name, base, (size_t)(entry + len - base)))
			return true;
	return false;
}

/* The long option NAME (before any '='): 1 takes an argument, 0 not, -1 unknown. */
static int runner_long(const struct runner *r, const char *name, size_t len)
{
	int found = -1, n = 0;

	for (const char *const *o = r->long_arg; *o; o++)
		if (!strncmp(*o, name, len) && (*o)[0] != '-') {
			if (strlen(*o) == len)
				return 1;
			found = 1, n++;
		}
	for (const char *const *o = r->long_flag; *o; o++)
		if (!strncmp(*o, name, len) && (*o)[0] != '-') {
			if (strlen(*o) == len)
				return 0;
			found = 0, n++;
		}
	return n == 1 ? found : -1;
}

/* Skip one option word W[I] of R; returns the next index, or N after a stop. */
static size_t runner_option(struct sk *p, const struct runner *r, struct sk_word *w, size_t i,
			    size_t n, bool *exec)
{
	const char *v = w[i].val;

	if (v[1] == '-') {
		const char *eq = strchr(v + 2, '=');
		size_t len = eq ? (size_t)(eq - v - 2) : strlen(v + 2);
		int a = len ? runner_long(r, v + 2, len) : -1;

		if (a < 0)
			goto unknown;
		if (!strncmp(v + 2, "exec", len) && len)
			*exec = true;
		return a == 1 && !eq ? i + 2 : i + 1;
	}
	if (streq(r->name, "nice") && v[1] && strspn(v + 1, "0123456789") == strlen(v + 1))
		return i + 1;	/* nice -5: the old spelling of -n 5 */
	for (v++; *v; v++) {
		if (strchr(r->noprog, *v)) {
			sk_refuse(p, "the runner acts on another process, or runs its program "
				     "in another directory");
			return n;
		}
		if (*v == 'x' && streq(r->name, "watch"))
			*exec = true;
		if (strchr(r->short_rest, *v))
			return i + 1;
		if (strchr(r->short_arg, *v))
			return v[1] ? i + 1 : i + 2;
		if (!strchr(r->short_flag, *v))
			goto unknown;
	}
	return i + 1;
unknown:
	sk_stop(p, "an option of a program that runs its operands this parser does not know");
	return n;
}

/*
 * W[I] runs R: skip its options and operands (noting paths outside the
 * workdir among them) and return the index of the program it runs, or N
 * when there is none or the parse stopped.
 */
static size_t runner_skip(struct sk *p, const struct runner *r, struct sk_word *w, size_t i,
			  size_t n)
{
	unsigned operands = 0;
	bool exec = false;
	size_t k;

	if (r->refuse)
		sk_refuse(p, r->refuse);
	for (k = i + 1; k < n && !p->stopped;) {
		const char *v = w[k].val;

		if (!known(&w[k]) || w[k].expanded) {
			sk_stop(p, "an operand of a program that runs its operands is only known "
				   "when the line runs");
			return n;
		}
		sk_note_outside(p, &w[k]);
		if (streq(v, "--") && operands == 0) {
			k++;
			break;
		}
		if (v[0] == '-' && v[1] && operands == 0) {
			size_t next = runner_option(p, r, w, k, n, &exec);

			for (size_t j = k + 1; j < next && j < n; j++)
				sk_note_outside(p, &w[j]);
			k = next;
			continue;
		}
		if (streq(v, "-") && r->assigns) {
			k++;
			continue;
		}
		if (r->assigns && strchr(v, '=') && v[0] != '=') {
			bind_word(p, &w[k]);
			k++;
			continue;
		}
		if (operands < r->operands) {
			operands++;
			k++;
			continue;
		}
		break;
	}
	if (p->stopped || k >= n)
		return n;
	if (r->string && !exec) {
		sk_stop(p, "'watch' runs its operands as a shell string");
		return n;
	}
	return k;
}

/* Declaration builtins: their assignment-like operands are assignments, not fields. */
static const char *const declarations[] = {
	"export", "readonly", "declare", "typeset", "local", NULL,
};

static void command_fields(struct sk *p, struct sk_word *w, size_t n);

void sk_command(struct sk *p, struct sk_word *w, size_t n)
{
	struct sk_word *f = NULL;
	size_t i = 0, nf = 0, cap = 0, k;

	while (i < n && w[i].assign) {
		sk_bind(p, w[i].val, w[i].name_len);
		i++;
	}
	if (i >= n)
		return;
	if (!w[i].quoted && !w[i].expanded && in_list(declarations, w[i].val)) {
		command_fields(p, w + i, n - i);
		return;
	}
	/* the program word as written; every later word as the fields bash makes of it */
	cap = n - i + 4;
	f = lev_arena_array(&p->arena, cap, sizeof(*f));
	nf = 1;
	f[0] = w[i];
	memset(&w[i], 0, sizeof(w[i]));
	for (k = i + 1; k < n; k++)
		(void)sk_expand_word(&p->arena, &w[k], &f, &nf, &cap);
	command_fields(p, f, nf);
}

static void command_fields(struct sk *p, struct sk_word *w, size_t n)
{
	size_t i = 0;

	while (i < n && !p->stopped) {
		const struct sk_word *prog = &w[i];

		if (!prog->expanded &&
		    (streq(prog->val, "command") || streq(prog->val, "builtin") ||
		     streq(prog->val, "exec"))) {
			if (prog->quoted)
				sk_refuse(p, "the program name is quoted");
			if (streq(prog->val, "exec"))
				sk_need_fence(p, "'exec' replaces the shell or rewires its descriptors");
			i = skip_prefix_options(p, w, i + 1, n, prog->val);
			continue;
		}
		if (runner_of(prog)) {
			const struct runner *r = runner_of(prog);

			if (prog->quoted)
				sk_refuse(p, "the program name is quoted");
			program_misuse(p, r->name, w, i, n);
			if (p->stopped)
				return;
			i = runner_skip(p, r, w, i, n);
			continue;
		}
		program(p, w, i, n);
		return;
	}
}
