/*
 * main.c - global options, the command table, fd 0/1/2 check, exit codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lev-version.h"
#include "liblev/base/buf.h"
#include "liblev/base/secrets.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/daemon.h"
#include "lev/cmd.h"
#include "lev/termout.h"

#define USAGE_HELP "usage: lev help [COMMAND]\n"
#define USAGE_VERSION "usage: lev version\n"

/* Keep sorted by how often people reach for them. */
const struct lev_cmd lev_cmds[] = {
	{ "help", cmd_help, "show help for lev or one of its commands", USAGE_HELP, 0 },
	{ "version", cmd_version, "print lev's version", USAGE_VERSION, 0 },
	{ "validate", cmd_validate, "check a blueprint against your config and show what it asks for",
	  lev_usage_validate, CMD_NEEDS_CONFIG },
	{ "add", cmd_add, "install a blueprint and show what it asks for", lev_usage_add,
	  CMD_NEEDS_CONFIG },
	{ "list", cmd_list, "list installed agents", lev_usage_list, CMD_NEEDS_CONFIG },
	{ "remove", cmd_remove, "remove an installed agent", lev_usage_remove, 0 },
	{ "create", cmd_create, "create a new blueprint from a template", lev_usage_create, 0 },
	{ "sandbox", cmd_sandbox, "run a command in a sandbox, or show what this machine offers",
	  lev_usage_sandbox, CMD_NEEDS_CONFIG | CMD_NEEDS_SANDBOX },
	{ "policy", cmd_policy, "list, add or test taint policy rules", lev_usage_policy,
	  CMD_NEEDS_DATA_ROOT },
	{ "mcp", cmd_mcp, "add, list, test, approve or remove MCP servers", lev_usage_mcp,
	  CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT },
	{ "label", cmd_label, "show or clear the label a file keeps from the run that wrote it",
	  lev_usage_label, CMD_NEEDS_DATA_ROOT },
	{ "check", cmd_check, "ask whether an agent may make one tool call here", lev_usage_check,
	  CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT },
	{ "run", cmd_run, "run an agent, every tool call through every gate",
	  lev_usage_run, CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT | CMD_NEEDS_SANDBOX },
	{ "ps", cmd_ps, "list the daemon's runs and what they wait on", lev_usage_ps, 0 },
	{ "respond", cmd_respond, "answer a question a run is waiting on", lev_usage_respond, 0 },
	{ "result", cmd_result, "show how a run ended and its output", lev_usage_result, 0 },
	{ "logs", cmd_logs, "show a run's events, or follow them", lev_usage_logs, 0 },
	{ "cancel", cmd_cancel, "cancel a run the daemon holds", lev_usage_cancel, 0 },
	{ "doctor", cmd_doctor, "check the provider wiring and what this machine offers",
	  lev_usage_doctor, 0 },
	{ "auth", cmd_auth, "store, list, remove or migrate provider API keys", lev_usage_auth,
	  CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT },
	{ "attach", cmd_attach, "follow a run the daemon holds", lev_usage_attach, 0 },
	{ "pause", cmd_pause, "pause a run at its next step", lev_usage_pause, 0 },
	{ "resume", cmd_resume, "let a paused run go on", lev_usage_resume, 0 },
	{ "msg", cmd_msg, "send a message to a run's current stage", lev_usage_msg, 0 },
	{ "serve", cmd_serve, "serve the HTTP API and the web console in front of the daemon",
	  lev_usage_serve, CMD_NEEDS_CONFIG },
	{ "dash", cmd_dash, "watch the daemon's runs and answer them in a terminal dashboard",
	  lev_usage_dash, CMD_NEEDS_DATA_ROOT },
	{ "agent-client", cmd_agent_client, "serve an agent to an editor over the Agent Client Protocol",
	  lev_usage_agent_client, CMD_NEEDS_DATA_ROOT },
	{ "daemon", cmd_daemon, "run the daemon, or start, stop or ask it", lev_usage_daemon, 0 },
	{ "kill", cmd_cancel, "cancel a run (Leviath's alias of cancel)", lev_usage_kill, 0 },
	{ "tools", cmd_tools, "list the built-in tools, their defaults and arguments",
	  lev_usage_tools, 0 },
	{ "update", cmd_update, "say how lev is updated (it never replaces itself)",
	  lev_usage_update, 0 },
	{ "stages", cmd_stages, "a run's per-stage token ledger, from its record",
	  lev_usage_stages, CMD_NEEDS_DATA_ROOT },
	{ "context", cmd_context, "how a run's context window went, from its record",
	  lev_usage_context, CMD_NEEDS_DATA_ROOT },
	{ "models", cmd_models, "list the providers a stage's model may name here",
	  lev_usage_models, CMD_NEEDS_CONFIG },
	{ "setup", cmd_setup, "say how lev is set up (keys never as arguments)", lev_usage_setup,
	  0 },
	{ "pack", cmd_pack, "refused: lev shares a blueprint as its directory", lev_usage_pack, 0 },
	{ "test", cmd_test, "refused: lev checks calls with 'lev check' instead", lev_usage_test,
	  0 },
	{ "approvals", cmd_approvals, "show what runs without a prompt, and which file says so",
	  lev_usage_approvals, CMD_NEEDS_CONFIG },
	{ NULL, NULL, NULL, NULL, 0 },
};

const struct lev_cmd *lev_cmd_find(const char *name)
{
	const struct lev_cmd *c;

	for (c = lev_cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

void lev_cmd_usage(const char *name, FILE *f)
{
	const struct lev_cmd *c = lev_cmd_find(name);

	if (c)
		fputs(c->usage, f);
}

int lev_usage_error(const char *name, const char *fmt, ...)
{
	const struct lev_cmd *c = lev_cmd_find(name);
	va_list ap;

	fprintf(stderr, "lev %s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (c) {
		/* the first line of the usage text only */
		const char *nl = strchr(c->usage, '\n');
		fprintf(stderr, "%.*s\n", nl ? (int)(nl - c->usage) : (int)strlen(c->usage),
			c->usage);
	}
	fprintf(stderr, "Try 'lev help %s' for more.\n", name);
	return LEV_EXIT_USAGE;
}

/* PREFIX and FMT on stderr, redacted with the process's secret set (base/secrets.h). */
static void put_redacted(const char *prefix, const char *fmt, va_list ap)
{
	struct lev_buf b = LEV_BUF_INIT;

	(void)lev_buf_vaddf(&b, fmt, ap);
	lev_secrets_redact(b.buf);
	fprintf(stderr, "%s%s\n", prefix, b.buf);
	lev_buf_release(&b);
}

int lev_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	put_redacted("lev: error: ", fmt, ap);
	va_end(ap);
	return LEV_EXIT_FAIL;
}

void lev_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	put_redacted("lev: warning: ", fmt, ap);
	va_end(ap);
}

bool lev_wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return false;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	}
	return false;
}

static void print_overview(FILE *f)
{
	const struct lev_cmd *c;

	fputs("usage: lev [--version] [--help] COMMAND [ARGS...]\n\n"
	      "lev runs LLM agent blueprints behind permission, path, taint and sandbox gates.\n\n"
	      "Commands:\n",
	      f);
	for (c = lev_cmds; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fputs("\nRun 'lev help COMMAND' for a command's options.\n"
	      "Exit status: 0 ok, 1 failed or denied, 2 usage error (some commands add more).\n",
	      f);
}

int cmd_help(int argc, char **argv, struct lev_ctx *ctx)
{
	(void)ctx;
	if (argc > 2)
		return lev_usage_error("help", "too many arguments");
	if (argc < 2) {
		print_overview(stdout);
		return LEV_EXIT_OK;
	}
	if (!lev_cmd_find(argv[1]))
		return lev_usage_error("help", "unknown command '%s'", argv[1]);
	lev_cmd_usage(argv[1], stdout);
	return LEV_EXIT_OK;
}

int cmd_version(int argc, char **argv, struct lev_ctx *ctx)
{
	(void)ctx;
	if (argc > 1)
		return lev_usage_error("version", "unexpected argument '%s'", argv[1]);
	printf("lev %s\n", LEV_VERSION);
	return LEV_EXIT_OK;
}

static int data_paths(struct lev_data_paths *p, struct lev_err *err)
{
	if (lev_datadir_root(&p->root, err) < 0 || lev_datadir_runs_dir(&p->runs, err) < 0 ||
	    lev_datadir_policy_path(&p->policy, err) < 0 || lev_datadir_rules_dir(&p->rules, err) < 0 ||
	    lev_datadir_credentials_path(&p->credentials, err) < 0 ||
	    lev_datadir_config_path(&p->config, err) < 0)
		return -1;
	return 0;
}

int lev_setup(struct lev_ctx *ctx, unsigned needs)
{
	if (needs & ~ctx->cmd->needs)
		abort();	/* the command's row in lev_cmds[] does not declare it */
	if (needs & ~ctx->done & CMD_NEEDS_CONFIG) {
		if (lev_config_load(&ctx->cfg, &ctx->err) < 0)
			goto fail;
		ctx->done |= CMD_NEEDS_CONFIG;
	}
	if (needs & ~ctx->done & CMD_NEEDS_DATA_ROOT) {
		if (data_paths(&ctx->paths, &ctx->err) < 0)
			goto fail;
		ctx->done |= CMD_NEEDS_DATA_ROOT;
	}
	return 0;
fail:
	lev_fail("%s", ctx->err.msg);
	return -1;
}

/* What lev_setup() and the run of the command set up, once it returned. */
static void ctx_release(struct lev_ctx *ctx)
{
	if (ctx->done & CMD_NEEDS_CONFIG)
		lev_config_release(&ctx->cfg);
	free(ctx->paths.root);
	free(ctx->paths.config);
	free(ctx->paths.policy);
	free(ctx->paths.rules);
	free(ctx->paths.runs);
	free(ctx->paths.credentials);
	free(ctx->oci_helper);
}

/* git's run_builtin(): set up what the command declares, run it, clean up. */
static int run_cmd(const struct lev_cmd *c, int argc, char **argv, struct lev_ctx *ctx)
{
	int r;

	ctx->cmd = c;
	if (c->needs & CMD_NEEDS_SANDBOX) {
		ctx->oci_helper = lev_find_oci_helper();
		ctx->done |= CMD_NEEDS_SANDBOX;
	}
	r = c->fn(argc, argv, ctx);
	ctx_release(ctx);
	return r;
}

/* Make sure fds 0, 1 and 2 are open, so no file we open lands on them. */
static void check_std_fds(void)
{
	int fd;

	for (fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", O_RDWR);
			if (n < 0)
				_exit(LEV_EXIT_FAIL);
			if (n != fd)
				close(n);
		}
	}
}

/* A full disk or closed pipe must not be reported as success. */
static int finish(int r)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "lev: error: cannot write to standard output: %s\n", strerror(errno));
		return LEV_EXIT_FAIL;
	}
	return r;
}

int main(int argc, char **argv)
{
	struct lev_ctx ctx = { .argv0 = argv[0], .verbose = 0, .err = LEV_ERR_INIT };
	const struct lev_cmd *c;
	struct lev_err err = LEV_ERR_INIT;
	int i = 1, r;

	/* first: nothing of ours (API keys, the environment) is readable
	 * through /proc or ptrace by a process lev starts */
	if (lev_credentials_protect_process(&err) < 0)
		return lev_fail("%s", err.msg);
	check_std_fds();
	umask(077);
	lev_termout_install();

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			print_overview(stdout);
			return finish(LEV_EXIT_OK);
		} else if (!strcmp(argv[i], "--version")) {
			printf("lev %s\n", LEV_VERSION);
			return finish(LEV_EXIT_OK);
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			ctx.verbose++;
			i++;
		} else {
			fprintf(stderr, "lev: unknown option '%s'\n", argv[i]);
			fputs("usage: lev [--version] [--help] COMMAND [ARGS...]\n", stderr);
			return LEV_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		print_overview(stderr);
		return LEV_EXIT_USAGE;
	}
	/* a run's worker process, started by the daemon; not a command for people */
	if (!strcmp(argv[i], LEV_DAEMON_WORKER_CMD))
		return finish(cmd_worker(argc - i, argv + i, &ctx));
	c = lev_cmd_find(argv[i]);
	if (!c) {
		fprintf(stderr, "lev: '%s' is not a lev command; see 'lev --help'\n", argv[i]);
		return LEV_EXIT_USAGE;
	}
	if (lev_wants_help(argc - i, argv + i)) {
		/* every command answers -h/--help the same way */
		fputs(c->usage, stdout);
		r = LEV_EXIT_OK;
	} else {
		r = run_cmd(c, argc - i, argv + i, &ctx);
	}
	return finish(r);
}
