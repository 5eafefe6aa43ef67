/*
 * shellkeys.h - split a shell command line into per-program grant keys,
 * and the built-in list of safe commands.
 *
 * A shell call is granted (or pre-approved by a safe-commands list) key by
 * key, never as a whole line, so approving `ls` does not approve
 * `ls && curl x | sh`.  The parser models POSIX sh / bash syntax as the
 * shell tool runs it (`bash -c LINE` or `sh -c LINE`, C or UTF-8 locale,
 * CDPATH unset, no exported functions); it is deliberately conservative:
 * whatever it cannot read with certainty makes the whole line ungrantable,
 * and an ungrantable line always asks.
 *
 * Keys:
 *	shell:PROG            a program (`shell:ls`)
 *	shell:PROG WORD       a program with its first argument folded in when
 *	                      that argument is a bare literal word that is not a
 *	                      flag or a number (`shell:git status`); `cd`, `echo`,
 *	                      `printf`, `test` never fold
 *	shell:env:NAME        the line binds variable NAME (`NAME=x cmd`,
 *	                      `export NAME`, `read NAME`, `for NAME in ...`)
 *	shell:>PATH           a redirect writes PATH (as written); discarded
 *	                      targets (/dev/null, /dev/stdout, /dev/stderr,
 *	                      /dev/fd/N, fd duplications) and reads add no key
 *
 * Boundaries: ; && || | |& & ( ) newline, and every $( ), <( ), >( )
 * substitution is keyed on its own.  Separators inside quotes are data.
 *
 * Ungrantable (no keys at all): eval, source, ., trap, function
 * definitions, alias, unalias, enable, hash, fc, shopt, let, getopts,
 * coproc, select, case, [[ ]], (( )), arithmetic on variables, xargs,
 * `sh -c` and other shells' -c, find -exec, backticks, heredocs,
 * unterminated quotes or substitutions, expanded program names, expanded
 * redirect targets, /dev/tcp and /dev/udp, `git --output`, safe-listed
 * programs given an argument shape that writes or runs code (`printf -v`,
 * `git -c`, `file -C`, `date -s`, `test -v`, `find -delete` ...), control
 * characters (CR included) and invalid UTF-8 anywhere, non-ASCII bytes in a
 * key, lines longer than LEV_SHELLKEYS_MAX_LINE.
 *
 * Words are judged as the fields bash passes (shellkeys-expand.c): brace
 * expansion, quote removal, $'...', tilde; so a quoted or brace-made flag is
 * a flag.  An argument whose value is only known at run time ($x, $( ),
 * $(( )), $"...", ~user ...) or a pathname pattern that may produce a
 * leading '-' (`*`, `*.md`; `./` then `*` is fine) makes the line
 * ungrantable.
 *
 * Ownership: every char ** returned is a strv the caller frees with
 * lev_strv_free(); lev_shellkeys_release() frees a parse result.  Nothing
 * here fails: a line that cannot be read is reported as such.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define LEV_SHELLKEYS_MAX_LINE ((size_t)64 * 1024)

struct lev_shellkeys {
	/* Sorted, deduplicated keys; NULL when the line is ungrantable. */
	char **keys;
	/*
	 * Where the line's literal write redirects may land, deduplicated,
	 * in line order: an absolute path, "~" or "~/...", or a path
	 * relative to the working directory.  A redirect after a literal
	 * `cd DIR` is listed both as written and joined onto DIR.
	 */
	char **write_targets;
	/* False: no key can ever cover this line; it always asks. */
	bool grantable;
	/*
	 * The line writes a file: a write redirect, a line that cannot be
	 * read, or code the parser cannot see (eval, source, sh -c ...).
	 */
	bool writes;
	/*
	 * A write redirect whose destination cannot be named: an expanded
	 * target (`> $OUT`), a relative target after a directory change
	 * that cannot be followed, or an unreadable line containing '>'.
	 * The redirect gate refuses such a line outright.
	 */
	bool unlocatable_write;
	/*
	 * The first argument, read redirect or directory change that may
	 * name something outside the working directory ("/etc/passwd",
	 * "~/.ssh/id_rsa", "../x", "$HOME/x (a $ expansion)", "cd /tmp"),
	 * owned; NULL when the line only names paths inside it.  Safe lists
	 * pre-approve only lines without one (see perm.h).  Arguments of
	 * echo, printf and other programs that never open them are not
	 * counted.
	 */
	char *reads_outside;
	/* Static text: why the line is ungrantable (NULL when grantable). */
	const char *reason;
	/* Static text: why a write cannot be located (NULL when it can). */
	const char *write_reason;
	/*
	 * The parser cannot fully analyse the line: code it does not see
	 * (eval, source, ., a shell running a file or its input, sh -c, a
	 * program name expanded at run time, anything unreadable), `exec`,
	 * or a write it cannot locate.  Such a line may only run inside a
	 * sandbox that fences writes to the workdir (namespace or
	 * container), whatever approved it; see lev_perm_fence_check().
	 */
	bool needs_fence;
	/* Static text: why (NULL when needs_fence is false). */
	const char *fence_reason;
};

/* Parse LINE (NULL counts as unreadable).  Always fills OUT. */
void lev_shellkeys_parse(const char *line, struct lev_shellkeys *out);
void lev_shellkeys_release(struct lev_shellkeys *k);

/*
 * For tests and `lev check`: the simple commands of a grantable LINE that
 * get a key, in line order, each as its fields joined by 0x1f; every field
 * starts with its kind: 'L' known text, 'T' a path starting with "~"
 * (the home directory), 'G' a pathname pattern (zero or more matching
 * names, or the pattern itself), 'g' a pattern starting with "~", 'P' a
 * process substitution's /dev/fd/N.
 * NULL when the line is ungrantable.  Caller frees.
 */
char **lev_shellkeys_commands(const char *line);

/* The keys of LINE (caller frees), or NULL when it is ungrantable. */
char **lev_shellkeys_keys(const char *line);

/* True when LINE writes a file (an unreadable line counts as writing). */
bool lev_shellkeys_writes_a_file(const char *line);

/* The literal write targets of LINE, as in struct lev_shellkeys (caller frees). */
char **lev_shellkeys_write_targets(const char *line);

/*
 * The program part of KEY: the text before the first space
 * ("shell:git status" -> "shell:git").  Caller frees.
 */
char *lev_shellkeys_program_of(const char *key);

/* True when KEY is a program key (not shell:env:..., not shell:>...). */
bool lev_shellkeys_is_program_key(const char *key);

/*
 * True when ENTRY (a [safe_commands] shell entry, without "shell:") is a
 * usable prefix: "env:NAME" with a valid variable name, or a line whose
 * keys are exactly { "shell:" ENTRY }.  Write keys are never valid.
 */
bool lev_shellkeys_is_valid_prefix(const char *entry);

/*
 * True when the program ENTRY starts with (its first word; a path by its
 * last component) runs the program its operands name: env, timeout, nice, nohup, stdbuf, setsid,
 * xargs, flock, ionice, chrt, taskset, watch.  A line is keyed through to
 * the program they run, so a safe-list entry for one of them alone would
 * pre-approve whatever it runs; it is refused.
 */
bool lev_shellkeys_runs_operands(const char *entry);

/*
 * True when KEYS is non-empty and every key is in SAFE, or is a program
 * key whose program_of() is in SAFE (widening applies to SAFE only, and
 * never to env or write keys), or is exactly in GRANTED.  SAFE and GRANTED
 * are strvs of full keys ("shell:ls", "read_files"); either may be NULL.
 */
bool lev_shellkeys_all_covered(char *const *keys, char *const *safe, char *const *granted);

/*
 * The built-in safe shell list (spec DEFAULT_SAFE_SHELL), entries without
 * the "shell:" prefix, NULL-terminated.  Nothing on it can write a file,
 * run another program or open a connection under any flag the parser lets
 * through as grantable.
 */
extern const char *const lev_safe_shell_default[];

/* The built-in list as full keys ("shell:ls", ...); caller frees. */
char **lev_safe_shell_default_keys(void);

/*
 * True when every key of CMDLINE is covered by the built-in safe list;
 * false when the line is ungrantable or names anything else.
 */
bool lev_safecmd_default_covers(const char *cmdline);
