/*
 * cmd_mcp.c - lev mcp add | list | test | approve | remove (docs/mcp.md)
 *
 * add and remove edit config.toml as text (liblev/conf/config-edit.h);
 * test, list and approve start a server the way a run would
 * (liblev/tools/mcp-probe.h) and hold its tools to the approved record
 * (liblev/tools/mcp-pins.h).
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/config-edit.h"
#include "liblev/conf/tomlval.h"
#include "liblev/tools/mcp-oauth.h"
#include "liblev/tools/mcp-pins.h"
#include "liblev/tools/mcp-probe.h"

extern char **environ;

const char lev_usage_mcp[] =
	"usage: lev mcp add NAME [--env K=V]... [--timeout SECS] [--sandbox none] -- CMD [ARGS...]\n"
	"   or: lev mcp add NAME --command CMD [--arg A]... [--env K=V]... [--timeout SECS]\n"
	"                        [--sandbox none]\n"
	"   or: lev mcp add NAME --url URL [--header K=V]... [--timeout SECS] [--allow-local-network]\n"
	"                        [--no-login]\n"
	"   or: lev mcp list [--json] [--workdir DIR]\n"
	"   or: lev mcp test NAME [--json] [--workdir DIR]\n"
	"   or: lev mcp approve NAME [--workdir DIR]\n"
	"   or: lev mcp remove NAME\n"
	"   or: lev mcp login NAME [--no-browser] [--timeout SECS]\n"
	"   or: lev mcp logout NAME\n"
	"\n"
	"MCP servers are [[mcp_servers]] entries in your config.toml (docs/mcp.md).\n"
	"\n"
	"add      appends a server's entry to config.toml; the rest of the file is kept\n"
	"         byte for byte, and nothing is written unless the result is valid.\n"
	"         --command CMD --arg A... is Leviath's spelling of '-- CMD A...';\n"
	"         A --url server that answers 401 needs 'lev mcp login NAME';\n"
	"         --no-login skips asking it.\n"
	"list     shows each server, its tools (it is started to list them) and whether\n"
	"         each is the tool you approved.\n"
	"test     starts one server in its sandbox, initializes it, lists its tools\n"
	"         (--json: its entry of 'lev mcp list --json'; exit 1 when not reachable).\n"
	"approve  starts one server and records the tools it lists now as approved:\n"
	"         later runs refuse a tool that changed, is new or is gone until you\n"
	"         approve the server again.\n"
	"remove   cuts the server's entry out of config.toml and forgets its approval.\n"
	"login    OAuth 2.1 + PKCE for a --url server that asks for it: prints the URL\n"
	"         to open (and opens $BROWSER unless --no-browser), waits up to SECS\n"
	"         (300) for the answer on 127.0.0.1, stores the tokens in the credential\n"
	"         store, bound to the server's origin.\n"
	"logout   deletes those tokens (revoked at the server when it offers that).\n"
	"\n"
	"A server starts where a run would start it: in the [sandbox] of your config,\n"
	"at least a namespace sandbox (unless its entry says sandbox = \"none\"), with DIR\n"
	"as its workdir; without --workdir, in a fresh empty scratch directory (removed\n"
	"afterwards), never the current directory.\n"
	"Exit status: 0 ok, 1 failed (test: the server did not start), 2 usage.\n";

#define usage(...) lev_usage_error("mcp", __VA_ARGS__)

/* "K=V" into "K<sep>V" on *list; false when it has no '=' or no K. */
/* One option of add at argv[*i] (its value after it); 0, or a usage error's code. */
static int add_option(int argc, char **argv, int *i, struct lev_mcp_server_conf *s,
		      bool *no_login)
{
	const char *o = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	uint64_t n;

	if (!strcmp(o, "--allow-local-network")) {
		s->allow_local_network = true;
		return 0;
	}
	if (!strcmp(o, "--no-login")) {
		*no_login = true;
		return 0;
	}
	if (strcmp(o, "--url") && strcmp(o, "--header") && strcmp(o, "--env") &&
	    strcmp(o, "--timeout") && strcmp(o, "--sandbox") && strcmp(o, "--command") &&
	    strcmp(o, "--arg"))
		return usage("add: unknown option '%s'", o);
	if (!v)
		return usage("add: '%s' needs a value", o);
	(*i)++;
	if (!strcmp(o, "--command")) {
		if (s->command)
			return usage("add: one command: --command once, or '-- CMD [ARGS...]'");
		s->command = xstrdup(v);
	} else if (!strcmp(o, "--arg")) {
		s->args = lev_strv_push(s->args, v);
	} else if (!strcmp(o, "--url")) {
		free(s->url);
		s->url = xstrdup(v);
	} else if (!strcmp(o, "--header")) {
		if (!lev_config_mcp_pair(&s->headers, v, ": "))
			return usage("add: --header wants NAME=VALUE, not '%s'", v);
	} else if (!strcmp(o, "--env")) {
		if (!lev_config_mcp_pair(&s->env, v, "="))
			return usage("add: --env wants NAME=VALUE, not '%s'", v);
	} else if (!strcmp(o, "--timeout")) {
		if (lev_parse_u64(v, &n) < 0 || n == 0 || n > 86400)
			return usage("add: --timeout wants 1 to 86400 seconds, not '%s'", v);
		s->timeout_secs = n;
	} else if (strcmp(v, "none")) {
		return usage("add: --sandbox takes only 'none', not '%s'", v);
	} else {
		s->sandbox_none = true;
	}
	return 0;
}

static void conf_release(struct lev_mcp_server_conf *s)
{
	free(s->name);
	free(s->command);
	lev_strv_free(s->args);
	lev_strv_free(s->env);
	free(s->url);
	lev_strv_free(s->headers);
}

/* Does the new --url server want a login?  Said, never an error: the entry is written. */
static void add_ask_login(struct lev_ctx *ctx, const struct lev_mcp_server_conf *s)
{
	struct lev_err err = LEV_ERR_INIT;
	bool needs = false;

	if (lev_setup(ctx, CMD_NEEDS_CONFIG) < 0)
		return;
	if (lev_mcp_oauth_probe(s, ctx->cfg.allow_local_network || s->allow_local_network,
				&needs, &err) < 0)
		lev_warn("could not ask MCP server '%s' whether it needs a login: %s", s->name,
			 err.msg);
	else if (needs)
		printf("MCP server '%s' answered 401: run 'lev mcp login %s' to log in\n",
		       s->name, s->name);
	else
		printf("MCP server '%s' needs no login\n", s->name);
}

static int mcp_add(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_mcp_server_conf s = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	bool no_login = false;
	int i, r = 0;

	if (argc < 2 || argv[1][0] == '-')
		return usage("add: which server? (a NAME)");
	s.name = xstrdup(argv[1]);
	for (i = 2; i < argc && r == 0 && strcmp(argv[i], "--"); i++)
		r = add_option(argc, argv, &i, &s, &no_login);
	if (r == 0 && i < argc && ++i < argc) {
		if (s.command || s.args)
			r = usage("add: give the command once: '--command CMD --arg A...' or "
				  "'-- CMD [ARGS...]'");
		else
			s.command = xstrdup(argv[i]);
		while (r == 0 && ++i < argc)
			s.args = lev_strv_push(s.args, argv[i]);
	}
	if (r == 0 && s.args && !s.command)
		r = usage("add: --arg is an argument of --command CMD");
	else if (r == 0 && !s.command == !s.url)
		r = usage("add: give either '-- CMD [ARGS...]' or '--url URL'");
	else if (r == 0 && s.command && s.allow_local_network)
		r = usage("add: --allow-local-network is for a --url, not a command");
	else if (r == 0 && s.url && (s.env || s.sandbox_none))
		r = usage("add: --env and --sandbox are for a command, not a --url");
	else if (r == 0 && s.command && s.headers)
		r = usage("add: --header is for a --url, not a command");
	if (r == 0 && lev_setup(ctx, CMD_NEEDS_DATA_ROOT) < 0)
		r = LEV_EXIT_FAIL;
	if (r == 0 && lev_config_mcp_add(ctx->paths.config, &s, &err) < 0)
		r = lev_fail("%s", err.msg);
	if (r == 0)
		printf("added MCP server '%s' to %s; 'lev mcp test %s' starts it\n", s.name,
		       ctx->paths.config, s.name);
	if (r == 0 && s.url && !no_login)
		add_ask_login(ctx, &s);
	conf_release(&s);
	return r;
}

static int mcp_remove(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_err err = LEV_ERR_INIT;
	int r;

	if (argc != 2)
		return usage("remove: give exactly one server NAME");
	if (lev_setup(ctx, CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	r = lev_mcp_server_remove(ctx->paths.config, ctx->paths.root, argv[1], &err);
	if (r < 0)
		return lev_fail("%s", err.msg);
	if (r > 0)
		lev_warn("%s", err.msg);
	printf("removed MCP server '%s' from %s\n", argv[1], ctx->paths.config);
	return LEV_EXIT_OK;
}

/* Options of list/test/approve: --workdir DIR, --json (list, test); NAME when WANT_NAME. */
struct probe_args {
	const char *name;
	const char *workdir;
	char *scratch;		/* the empty directory made when no --workdir was given */
	bool json;
};

/*
 * Without --workdir, servers start in a fresh empty scratch directory, never
 * the current directory: typed in ~, a server (a stdio one runs a program)
 * would otherwise have the home as its read-write workdir and could write
 * ~/.bashrc or lev's own files.  -1 after the error.
 */
static int probe_scratch(struct probe_args *a)
{
	const char *tmp = secure_getenv("TMPDIR");

	if (a->workdir)
		return 0;
	a->scratch = xasprintf("%s/lev-mcp-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(a->scratch)) {
		lev_fail("cannot create a scratch workdir '%s' for the server: %s", a->scratch,
			 strerror(errno));
		free(a->scratch);
		a->scratch = NULL;
		return -1;
	}
	a->workdir = a->scratch;
	return 0;
}

/* Remove the scratch workdir and what the servers left in it. */
static void probe_args_release(struct probe_args *a)
{
	if (a->scratch)
		(void)lev_rm_rf(a->scratch, NULL);
	free(a->scratch);
	a->scratch = NULL;
}

static int probe_args(int argc, char **argv, bool want_name, bool json_ok, struct probe_args *a)
{
	const char *sub = argv[0];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && json_ok)
			a->json = true;
		else if (!strcmp(argv[i], "--workdir") && i + 1 < argc)
			a->workdir = argv[++i];
		else if (argv[i][0] == '-')
			return usage("%s: unknown option '%s'", sub, argv[i]);
		else if (want_name && !a->name)
			a->name = argv[i];
		else
			return usage("%s: unexpected argument '%s'", sub, argv[i]);
	}
	if (want_name && !a->name)
		return usage("%s: which server? (a NAME)", sub);
	return 0;
}

static void store_of(struct lev_ctx *ctx, struct lev_credstore *s)
{
	s->kind = ctx->cfg.credential_store;
	s->credentials_path = ctx->paths.credentials;
	s->config_path = NULL;		/* OAuth tokens never go into config.toml */
}

/* Start server C from the config in WORKDIR (--workdir, or the scratch): *out, or an error in ERR. */
static int start(struct lev_ctx *ctx, const struct lev_mcp_server_conf *c, const char *workdir,
		 struct lev_mcp_probe **out, struct lev_err *err)
{
	char buf[PATH_MAX];
	struct lev_credstore store;
	struct lev_mcp_probe_opts o = {
		.cfg = &ctx->cfg,
		.data_root = ctx->paths.root,
		.envp = environ,
		.store = &store,
	};

	store_of(ctx, &store);

	o.workdir = realpath(workdir, buf);
	if (!o.workdir)
		return lev_err_errno(err, -errno, "cannot use '%s' as the workdir", workdir);
	return lev_mcp_probe_start(&o, c, out, err);
}

static const struct lev_mcp_server_conf *find_server(struct lev_ctx *ctx, const char *name)
{
	const struct lev_mcp_server_conf *c = lev_config_mcp_server(&ctx->cfg, name);

	if (!c)
		lev_fail("your config has no MCP server '%s' (see 'lev mcp list')", name);
	return c;
}

/* One tool's standing against RECORD: "approved", "not approved: ...", or its unusable reason. */
static char *tool_status(const json_t *record, const struct lev_mcp_tool *t)
{
	const char *why = record ? lev_mcp_pins_diff(record, t) : "the server has no approved tools yet";

	if (t->unusable)
		return xasprintf("not offered: %s", t->unusable);
	return why ? xasprintf("not approved: %s", why) : xstrdup("approved");
}

/* A description's first line, at most 100 bytes (it is terminal-safe already). */
static char *short_desc(const char *d)
{
	size_t n = strcspn(d, "\n");

	if (n <= 100)
		return xstrndup(d, n);
	n = 100;
	while (n && ((unsigned char)d[n] & 0xc0) == 0x80)
		n--;	/* not inside a UTF-8 sequence */
	return xasprintf("%.*s...", (int)n, d);
}

static void print_tools(const struct lev_mcp_server *s, const json_t *record)
{
	_cleanup_strv_ char **gone = record ? lev_mcp_pins_gone(record, s) : NULL;

	for (size_t i = 0; i < lev_mcp_tool_count(s); i++) {
		const struct lev_mcp_tool *t = lev_mcp_tool_at(s, i);
		_cleanup_free_ char *q = lev_mcp_qualified_name(lev_mcp_name(s), t->name);
		_cleanup_free_ char *st = tool_status(record, t), *d = short_desc(t->description);

		printf("  %s: %s\n      %s\n", q, st, d);
	}
	for (char **g = gone; g && *g; g++) {
		_cleanup_free_ char *p = lev_printable(*g, strlen(*g), 200);

		printf("  %s: approved, but the server no longer lists it (removed)\n", p);
	}
}

/* test and approve: start NAME, show its tools against the record; APPROVE records them. */
static json_t *server_json(struct lev_ctx *ctx, const struct lev_mcp_server_conf *c,
			   const char *workdir);

/* `lev mcp test NAME --json`: the server's entry as `lev mcp list --json` gives it. */
static int test_json(struct lev_ctx *ctx, const struct lev_mcp_server_conf *c,
		     struct probe_args *a)
{
	json_t *o = server_json(ctx, c, a->workdir);
	_cleanup_free_ char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int r = json_is_true(json_object_get(o, "reachable")) ? LEV_EXIT_OK : LEV_EXIT_FAIL;

	puts(s ? s : "{}");
	json_decref(o);
	probe_args_release(a);
	return r;
}

static int test_or_approve(int argc, char **argv, struct lev_ctx *ctx, bool approve)
{
	struct probe_args a = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	const struct lev_mcp_server_conf *c;
	struct lev_mcp_probe *p = NULL;
	json_t *record = NULL;
	int r = probe_args(argc, argv, true, !approve, &a);

	if (r)
		return r;
	if (lev_setup(ctx, CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	c = find_server(ctx, a.name);
	if (!c || probe_scratch(&a) < 0)
		return LEV_EXIT_FAIL;
	if (a.json)
		return test_json(ctx, c, &a);
	r = start(ctx, c, a.workdir, &p, &err);
	if (r < 0) {
		probe_args_release(&a);
		return lev_fail("MCP server '%s' did not start: %s", c->name, err.msg);
	}
	if (lev_mcp_pins_load(ctx->paths.root, c->name, &record, &err) < 0) {
		if (!approve) {
			lev_mcp_probe_free(p);
			probe_args_release(&a);
			return lev_fail("%s", err.msg);
		}
		record = NULL;	/* approving replaces an unreadable record */
	}
	printf("MCP server '%s' (%s, protocol %s): %zu tools\n", c->name,
	       *lev_mcp_server_info(p->srv) ? lev_mcp_server_info(p->srv) : "no name",
	       lev_mcp_version(p->srv), lev_mcp_tool_count(p->srv));
	print_tools(p->srv, record);
	if (approve && lev_mcp_pins_approve(p->srv, ctx->paths.root, &err) < 0)
		r = lev_fail("%s", err.msg);
	else if (approve)
		printf("approved the %zu tools MCP server '%s' lists now\n",
		       lev_mcp_tool_count(p->srv), c->name);
	json_decref(record);
	lev_mcp_probe_free(p);
	probe_args_release(&a);
	return r;
}

static json_t *gone_json(const json_t *record, const struct lev_mcp_server *s)
{
	_cleanup_strv_ char **gone = record ? lev_mcp_pins_gone(record, s) : NULL;
	json_t *a = json_array();

	for (char **g = gone; g && *g; g++)
		json_array_append_new(a, json_string(*g));
	return a;
}

/* "logged in" when the store holds tokens for C's origin, else "none" (for now). */
static const char *auth_status(struct lev_ctx *ctx, const struct lev_mcp_server_conf *c)
{
	struct lev_credstore store;
	struct lev_err err = LEV_ERR_INIT;
	bool has = false;

	if (!c->url)
		return "none";
	store_of(ctx, &store);
	if (lev_mcp_oauth_has(&store, c->url, &has, &err) < 0)
		return "unknown (the credential store cannot be read)";
	return has ? "logged in" : "none";
}

static json_t *server_json(struct lev_ctx *ctx, const struct lev_mcp_server_conf *c,
			   const char *workdir)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_mcp_probe *p = NULL;
	json_t *record = NULL, *tools = json_array(), *o;

	o = json_pack("{s:s, s:s, s:s?, s:s?, s:s, s:b}", "name", c->name, "transport",
		      c->command ? "stdio" : "http", "command", c->command, "url", c->url,
		      "sandbox", c->sandbox_none ? "none" : "inherit", "reachable", false);
	if (lev_mcp_pins_load(ctx->paths.root, c->name, &record, &err) < 0)
		json_object_set_new(o, "pins_error", json_string(err.msg));
	json_object_set_new(o, "approved", record ? json_integer((json_int_t)json_object_size(
					json_object_get(record, "tools"))) : json_null());
	json_object_set_new(o, "auth", json_string(auth_status(ctx, c)));
	if (start(ctx, c, workdir, &p, &err) < 0) {
		if (err.code == LEV_MCP_NEEDS_LOGIN && !lev_streq(json_string_value(
				json_object_get(o, "auth")), "logged in"))
			json_object_set_new(o, "auth", json_string("needs login"));
		json_object_set_new(o, "error", json_string(err.msg));
	} else {
		json_object_set_new(o, "reachable", json_true());
		for (size_t i = 0; i < lev_mcp_tool_count(p->srv); i++) {
			const struct lev_mcp_tool *t = lev_mcp_tool_at(p->srv, i);
			_cleanup_free_ char *q = lev_mcp_qualified_name(c->name, t->name);
			_cleanup_free_ char *st = tool_status(record, t);

			json_array_append_new(tools, json_pack("{s:s, s:s, s:s, s:s}", "name",
				q, "server_name", t->name, "status", st, "description",
				t->description));
		}
		json_object_set_new(o, "gone", gone_json(record, p->srv));
	}
	json_object_set_new(o, "tools", tools);
	json_decref(record);
	lev_mcp_probe_free(p);
	return o;
}

static void print_server(const json_t *o)
{
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *cmd = json_string_value(json_object_get(o, "command"));
	const json_t *approved = json_object_get(o, "approved"), *t;
	size_t i;

	printf("%s: %s %s", name, cmd ? "stdio" : "http",
	       cmd ? cmd : json_string_value(json_object_get(o, "url")));
	if (!strcmp(json_string_value(json_object_get(o, "sandbox")), "none"))
		fputs(" (sandbox = \"none\")", stdout);
	if (json_is_integer(approved))
		printf(", %lld tools approved", (long long)json_integer_value(approved));
	else
		fputs(", no tools approved yet", stdout);
	printf(", auth: %s\n", json_string_value(json_object_get(o, "auth")));
	if (json_object_get(o, "pins_error"))
		printf("  error: %s\n", json_string_value(json_object_get(o, "pins_error")));
	if (json_object_get(o, "error"))
		printf("  not reachable: %s\n", json_string_value(json_object_get(o, "error")));
	json_array_foreach(json_object_get(o, "tools"), i, t) {
		_cleanup_free_ char *d = short_desc(json_string_value(json_object_get(t,
										"description")));

		printf("  %s: %s\n      %s\n", json_string_value(json_object_get(t, "name")),
		       json_string_value(json_object_get(t, "status")), d);
	}
	json_array_foreach(json_object_get(o, "gone"), i, t)
		printf("  %s: approved, but the server no longer lists it (removed)\n",
		       json_string_value(t));
}

static int mcp_list(int argc, char **argv, struct lev_ctx *ctx)
{
	struct probe_args a = { 0 };
	json_t *all;
	int r = probe_args(argc, argv, false, true, &a);

	if (r)
		return r;
	if (lev_setup(ctx, CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	if (ctx->cfg.n_mcp_servers && probe_scratch(&a) < 0)
		return LEV_EXIT_FAIL;
	all = json_array();
	for (size_t i = 0; i < ctx->cfg.n_mcp_servers; i++)
		json_array_append_new(all, server_json(ctx, &ctx->cfg.mcp_servers[i], a.workdir));
	probe_args_release(&a);
	if (a.json) {
		_cleanup_free_ char *s = json_dumps(all, JSON_COMPACT | JSON_PRESERVE_ORDER);

		puts(s ? s : "[]");
	} else if (!json_array_size(all)) {
		puts("no MCP servers configured ('lev mcp add NAME -- CMD' adds one)");
	} else {
		size_t i;
		json_t *o;

		json_array_foreach(all, i, o)
			print_server(o);
	}
	json_decref(all);
	return LEV_EXIT_OK;
}

/* Show the authorization URL; open it with $BROWSER (argv, no shell) unless --no-browser. */
static void show_url(void *ud, const char *url)
{
	const bool *browser = ud;
	const char *b = secure_getenv("BROWSER");

	printf("open this URL in your browser to log in:\n  %s\n", url);
	fflush(stdout);
	if (*browser && b && *b) {
		char *argv[] = { (char *)b, (char *)url, NULL };
		pid_t pid;
		int e = posix_spawnp(&pid, b, NULL, NULL, argv, environ);

		if (e)
			lev_warn("cannot start $BROWSER '%s': %s", b, strerror(e));
	}
}

static int mcp_login(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_credstore store;
	const struct lev_mcp_server_conf *c;
	const char *name = NULL;
	bool browser = true, not_needed = false;
	uint64_t secs = 300;
	struct lev_mcp_oauth_login_opts o = { .show_url = show_url, .ud = &browser };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-browser"))
			browser = false;
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			if (lev_parse_u64(argv[++i], &secs) < 0 || !secs || secs > 3600)
				return usage("login: --timeout wants 1 to 3600 seconds");
		} else if (argv[i][0] == '-' || name)
			return usage("login: unexpected argument '%s'", argv[i]);
		else
			name = argv[i];
	}
	if (!name)
		return usage("login: which server? (a NAME)");
	if (lev_setup(ctx, CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	if (!(c = find_server(ctx, name)))
		return LEV_EXIT_FAIL;
	store_of(ctx, &store);
	o.conf = c;
	o.store = &store;
	o.allow_local = ctx->cfg.allow_local_network || c->allow_local_network;
	o.wait_secs = (unsigned)secs;
	if (lev_mcp_oauth_login(&o, &not_needed, &err) < 0)
		return lev_fail("%s", err.msg);
	if (not_needed)
		printf("MCP server '%s' needs no login: it answered without one\n", name);
	else
		printf("logged in to MCP server '%s'; its tokens are in the credential store\n",
		       name);
	return LEV_EXIT_OK;
}

static int mcp_logout(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_credstore store;
	const struct lev_mcp_server_conf *c;
	bool had = false, revoked = false;

	if (argc != 2 || argv[1][0] == '-')
		return usage("logout: give exactly one server NAME");
	if (lev_setup(ctx, CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	if (!(c = find_server(ctx, argv[1])))
		return LEV_EXIT_FAIL;
	if (!c->url)
		return lev_fail("MCP server '%s' is a command: it has no login", c->name);
	store_of(ctx, &store);
	if (lev_mcp_oauth_logout(&store, c->url, ctx->cfg.allow_local_network ||
				 c->allow_local_network, &had, &revoked, &err) < 0)
		return lev_fail("%s", err.msg);
	if (!had)
		printf("MCP server '%s' has no stored login\n", c->name);
	else
		printf("logged out of MCP server '%s': tokens deleted%s\n", c->name,
		       revoked ? " and revoked at the server" : "");
	return LEV_EXIT_OK;
}

int cmd_mcp(int argc, char **argv, struct lev_ctx *ctx)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub)
		return usage("which subcommand? (add, list, test, approve, remove)");
	if (!strcmp(sub, "add"))
		return mcp_add(argc - 1, argv + 1, ctx);
	if (!strcmp(sub, "remove"))
		return mcp_remove(argc - 1, argv + 1, ctx);
	if (!strcmp(sub, "list"))
		return mcp_list(argc - 1, argv + 1, ctx);
	if (!strcmp(sub, "test"))
		return test_or_approve(argc - 1, argv + 1, ctx, false);
	if (!strcmp(sub, "login"))
		return mcp_login(argc - 1, argv + 1, ctx);
	if (!strcmp(sub, "logout"))
		return mcp_logout(argc - 1, argv + 1, ctx);
	if (!strcmp(sub, "approve"))
		return test_or_approve(argc - 1, argv + 1, ctx, true);
	return usage("unknown subcommand '%s'", sub);
}
