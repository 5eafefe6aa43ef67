/*
 * test-tool - liblev functions exposed to shell tests (git t/helper style).
 *
 *   test-tool readpath-match [--workdir W] [--home H] ENTRY PATH
 *	exit 0 when ENTRY matches the real path PATH, 1 when not, 2 on a bad entry
 *   test-tool readpath-syntax ENTRY		prints "ok" or the error; exit 0/1
 *   test-tool readpath-broad ENTRY		prints "broad" or "narrow"; exit 0/1
 *   test-tool readpath-report [--workdir W] [--home H] [--allow-blueprint]
 *		[--grant G]... DECLARED...	one "<status>\t<entry>" line each
 *   test-tool fs-check [FS-OPTIONS] TOOL PATH
 *	prints {"decision","gate","reason","path"}; exit 0 allow, 1 deny, 2 error
 *   test-tool fs-tool [FS-OPTIONS] TOOL ARGS-JSON
 *	runs the file tool; prints its result; exit 0, or 1 for an error result
 *   test-tool have-openat2			prints "yes" or "no" (what AUTO will use)
 *   test-tool shellkeys-dump			reads NUL-terminated lines on stdin; for
 *	each writes one NUL-terminated record of 0x1d-separated parts:
 *	grantable (0/1), needs_fence (0/1), covered by the built-in safe list
 *	(0/1), the keys (0x1e-separated), lev_shellkeys_commands() (0x1e-
 *	separated), the reason, whether it names a path outside the
 *	workdir (0/1)
 *
 * FS-OPTIONS: --workdir W (required) --home H --agent A --declare E...
 *	--grant E... --allow-blueprint --walk (force the fallback walk)
 *	--config PATH (named in messages)
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/base/error.h"
#include "liblev/conf/readpaths.h"
#include "liblev/base/strv.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/run/gatechain.h"
#include "liblev/tools/tools-fs.h"

struct opts {
	const char *workdir, *home, *agent, *config;
	char **declare, **grant;
	bool allow_bp, walk;
	int argi;
};

static int usage(void)
{
	fprintf(stderr, "usage: test-tool readpath-match|readpath-syntax|readpath-broad|"
			"readpath-report|fs-check|fs-tool|have-openat2 ...\n");
	return 2;
}

/* Parse the leading --options; returns -1 on a bad option. */
static int parse(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	for (i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--allow-blueprint")) {
			o->allow_bp = true;
			continue;
		}
		if (!strcmp(a, "--walk")) {
			o->walk = true;
			continue;
		}
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (strncmp(a, "--", 2))
			break;
		if (!v)
			return -1;
		if (!strcmp(a, "--workdir"))
			o->workdir = v;
		else if (!strcmp(a, "--home"))
			o->home = v;
		else if (!strcmp(a, "--agent"))
			o->agent = v;
		else if (!strcmp(a, "--config"))
			o->config = v;
		else if (!strcmp(a, "--declare"))
			o->declare = lev_strv_push(o->declare, v);
		else if (!strcmp(a, "--grant"))
			o->grant = lev_strv_push(o->grant, v);
		else
			return -1;
		i++;
	}
	o->argi = i;
	return 0;
}

static void opts_free(struct opts *o)
{
	lev_strv_free(o->declare);
	lev_strv_free(o->grant);
}

static int cmd_match(int argc, char **argv, struct opts *o)
{
	char *v[2] = { NULL, NULL };
	struct lev_readpaths *s = NULL;
	struct lev_err err = LEV_ERR_INIT;
	int r;

	if (argc - o->argi != 2)
		return usage();
	v[0] = argv[o->argi];
	if (lev_readpaths_new(v, o->workdir ? o->workdir : "/w", o->home ? o->home : "/h", &s,
			      &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 2;
	}
	r = lev_readpaths_match(s, argv[o->argi + 1]) ? 0 : 1;
	lev_readpaths_free(s);
	return r;
}

static int cmd_syntax(int argc, char **argv, struct opts *o)
{
	struct lev_err err = LEV_ERR_INIT;

	if (argc - o->argi != 1)
		return usage();
	if (lev_readpath_check_syntax(argv[o->argi], &err) < 0) {
		printf("%s\n", err.msg);
		return 1;
	}
	printf("ok\n");
	return 0;
}

static int cmd_broad(int argc, char **argv, struct opts *o)
{
	bool b;

	if (argc - o->argi != 1)
		return usage();
	b = lev_readpath_is_broad(argv[o->argi]);
	printf("%s\n", b ? "broad" : "narrow");
	return b ? 0 : 1;
}

static int cmd_report(int argc, char **argv, struct opts *o)
{
	char **d = NULL;
	enum lev_grant_status *st;
	struct lev_err err = LEV_ERR_INIT;
	size_t n, i;
	int r;

	for (i = (size_t)o->argi; i < (size_t)argc; i++)
		d = lev_strv_push(d, argv[i]);
	n = lev_strv_len(d);
	st = calloc(n ? n : 1, sizeof(*st));
	if (!st)
		return 2;
	r = lev_readpaths_report(d, o->grant, o->allow_bp, o->workdir, o->home, st, &err);
	if (r < 0) {
		fprintf(stderr, "%s\n", err.msg);
		free(st);
		lev_strv_free(d);
		return 2;
	}
	for (i = 0; i < n; i++)
		printf("%s\t%s\n", lev_grant_status_label(st[i]), d[i]);
	free(st);
	lev_strv_free(d);
	return 0;
}

static struct lev_fs_ctx *make_ctx(struct opts *o)
{
	struct lev_fs_opts fo;
	struct lev_fs_ctx *c = NULL;
	struct lev_err err = LEV_ERR_INIT;

	memset(&fo, 0, sizeof(fo));
	fo.workdir = o->workdir;
	fo.agent = o->agent ? o->agent : "agent";
	fo.home = o->home;
	fo.declared = o->declare;
	fo.grants = o->grant;
	fo.allow_blueprint = o->allow_bp;
	fo.config_path = o->config;
	fo.confine = o->walk ? LEV_CONFINE_WALK : LEV_CONFINE_AUTO;
	if (!o->workdir) {
		fprintf(stderr, "test-tool: --workdir is required\n");
		return NULL;
	}
	if (lev_fs_ctx_new(&fo, &c, &err) < 0) {
		fprintf(stderr, "test-tool: %s\n", err.msg);
		return NULL;
	}
	return c;
}

static int cmd_fs_check(int argc, char **argv, struct opts *o)
{
	struct lev_fs_ctx *c;
	struct lev_fs_decision d;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_buf b = LEV_BUF_INIT;
	int rc;

	if (argc - o->argi != 2)
		return usage();
	c = make_ctx(o);
	if (!c)
		return 2;
	if (lev_fs_check(c, argv[o->argi], argv[o->argi + 1], &d, &err) < 0) {
		fprintf(stderr, "test-tool: %s\n", err.msg);
		lev_fs_ctx_free(c);
		return 2;
	}
	/* the gate chain's words (gatechain.h), as lev check prints them */
	lev_buf_addf(&b, "{\"decision\":\"%s\",\"gate\":\"%s\",\"reason\":",
		     lev_verdict_name(d.verdict),
		     lev_gate_id_name(d.gate == LEV_FS_GATE_READ_PATHS ? LEV_GATE_READ_PATHS
								: LEV_GATE_WORKDIR));
	lev_buf_add_json_str(&b, d.reason, strlen(d.reason));
	lev_buf_adds(&b, ",\"path\":");
	if (d.path)
		lev_buf_add_json_str(&b, d.path, strlen(d.path));
	else
		lev_buf_adds(&b, "null");
	lev_buf_adds(&b, "}\n");
	fputs(b.buf, stdout);
	lev_buf_release(&b);
	rc = d.verdict == LEV_ALLOW ? 0 : 1;
	lev_fs_decision_release(&d);
	lev_fs_ctx_free(c);
	return rc;
}

static int cmd_fs_tool(int argc, char **argv, struct opts *o)
{
	struct lev_fs_ctx *c;
	struct lev_fs_result r;
	json_error_t jerr;
	json_t *args;
	int rc;

	if (argc - o->argi != 2)
		return usage();
	args = json_loads(argv[o->argi + 1], JSON_ALLOW_NUL, &jerr);
	if (!args) {
		fprintf(stderr, "test-tool: bad JSON: %s\n", jerr.text);
		return 2;
	}
	c = make_ctx(o);
	if (!c) {
		json_decref(args);
		return 2;
	}
	lev_fs_call(c, argv[o->argi], args, &r);
	fwrite(r.text, 1, r.len, stdout);
	if (r.len && r.text[r.len - 1] != '\n')
		putchar('\n');
	rc = r.is_error ? 1 : 0;
	lev_fs_result_release(&r);
	lev_fs_ctx_free(c);
	json_decref(args);
	return rc;
}

static int cmd_have_openat2(int argc, char **argv, struct opts *o)
{
	bool y = lev_confine_have_openat2();

	printf("%s\n", y ? "yes" : "no");
	return 0;
}

static void put_joined(char *const *v, int sep)
{
	for (size_t i = 0; v && v[i]; i++) {
		if (i)
			putchar(sep);
		fputs(v[i], stdout);
	}
}

static int cmd_shellkeys_dump(int argc, char **argv, struct opts *o)
{
	struct lev_buf line = LEV_BUF_INIT_MAX(LEV_SHELLKEYS_MAX_LINE * 2);
	int c;

	while ((c = getchar()) != EOF) {
		struct lev_shellkeys k;
		char **cmds;

		if (c) {
			if (lev_buf_addch(&line, (char)c) < 0)
				return 2;
			continue;
		}
		lev_shellkeys_parse(line.buf, &k);
		cmds = lev_shellkeys_commands(line.buf);
		printf("%d\x1d%d\x1d%d\x1d", k.grantable, k.needs_fence,
		       lev_safecmd_default_covers(line.buf));
		put_joined(k.keys, 0x1e);
		putchar(0x1d);
		put_joined(cmds, 0x1e);
		printf("\x1d%s\x1d%d", k.reason ? k.reason : "", k.reads_outside != NULL);
		putchar('\0');
		lev_strv_free(cmds);
		lev_shellkeys_release(&k);
		lev_buf_truncate(&line, 0);
	}
	lev_buf_release(&line);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **, struct opts *);
	} cmds[] = {
		{ "readpath-match", cmd_match },   { "readpath-syntax", cmd_syntax },
		{ "readpath-broad", cmd_broad },   { "readpath-report", cmd_report },
		{ "fs-check", cmd_fs_check },	   { "fs-tool", cmd_fs_tool },
		{ "have-openat2", cmd_have_openat2 }, { "shellkeys-dump", cmd_shellkeys_dump },
	};
	struct opts o;
	size_t i;
	int r;

	if (argc < 2)
		return usage();
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		if (parse(argc, argv, &o) < 0) {
			opts_free(&o);
			return usage();
		}
		r = cmds[i].fn(argc, argv, &o);
		opts_free(&o);
		if (fflush(stdout) != 0 || ferror(stdout))
			return 2;
		return r;
	}
	return usage();
}
