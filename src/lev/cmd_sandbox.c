/*
 * cmd_sandbox.c - lev sandbox exec | probe
 *
 * `exec` runs one command the way the runtime would: the effective sandbox
 * is the user's [sandbox] (with the command-line flags laid over it, since
 * they are the user's own choice), or with --agent the agent's block
 * merged with it field by field.  Standard streams pass through (each capped at the output
 * limit); the exit status is the command's, and 125 means the sandbox
 * itself could not be set up.
 *
 * `probe` says what this machine offers and what each kind would use.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "liblev/conf/agentstore.h"
#include "liblev/conf/blueprint.h"
#include "liblev/base/cleanup.h"
#include "liblev/conf/config.h"
#include "liblev/conf/ownfiles.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

#define EXIT_SETUP 125

extern char **environ;

const char lev_usage_sandbox[] =
	"usage: lev sandbox exec [--agent NAME [--stage S]] [--kind none|namespace|container]\n"
	"                        [--network on|off] [--workdir DIR] [--image IMG] [--engine E]\n"
	"                        [--mount PATH]... [--timeout SECS] [--on-unavailable error|warn]\n"
	"                        [--memory MIB] [--pids N] [--warm] [-v]\n"
	"                        [--dry-run [--json]] -- CMD [ARG...]\n"
	"   or: lev sandbox probe [--json]\n"
	"   or: lev sandbox own-files [--json]\n"
	"\n"
	"exec runs CMD the way the runtime runs a shell command: in the user's\n"
	"[sandbox] with these flags laid over it (namespace when nothing is set),\n"
	"or with --agent in the agent's sandbox merged field by field with the\n"
	"user's config (the stronger kind, network only if both allow it).\n"
	"--memory and --pids lower the limits (defaults 4096 MiB, 512 processes).\n"
	"--dry-run prints the plan (mounts, masks, Landlock and seccomp rules,\n"
	"limits, environment, container argv) instead of running; it never starts\n"
	"a container.  The namespace kind starts the one command cold (its own\n"
	"namespaces, no helper process); --warm starts it in a cell of a warm\n"
	"helper, as a run's commands start.  -v (--verbose) prints the kind, the layers in force and the\n"
	"layers missing on stderr before running.\n"
	"\n"
	"probe shows user namespaces, the Landlock ABI, seccomp, openat2, the\n"
	"container engines and what each kind would use.\n"
	"\n"
	"own-files lists lev's own files: every sandbox masks them, the file\n"
	"tools never read or write them, kind none refuses a workdir holding one.\n"
	"\n"
	"Exit status of exec: the command's; 126 cannot execute, 127 not found,\n"
	"128+n killed by signal n (137 at the timeout); 125 the sandbox could not\n"
	"be set up (the reason is on stderr); 2 usage.\n";

#define exec_usage(...) lev_usage_error("sandbox", __VA_ARGS__)

/* --timeout: whole seconds from 1 to a week. */
static int parse_secs(const char *s, uint64_t *out)
{
	uint64_t v;

	if (lev_parse_u64(s, &v) < 0 || v == 0 || v > 7 * 24 * 3600)
		return -EINVAL;
	*out = v;
	return 0;
}

static void print_warnings(char *const *w)
{
	for (; w && *w; w++)
		lev_warn("%s", *w);
}

/* Load the agent's blueprint and point AGENT/STAGE at its sandbox blocks. */
static int load_agent(const char *name, const char *stage_name, struct lev_blueprint **bp_out,
		      const struct lev_sandbox_spec **agent, const struct lev_sandbox_spec **stage)
{
	_cleanup_free_ char *path = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_blueprint *bp = NULL;
	const struct lev_stage *st;

	if (lev_agentstore_resolve(name, &path, &err) < 0 ||
	    lev_blueprint_load(path, &bp, &err) < 0) {
		lev_fail("%s", err.msg);
		return -1;
	}
	st = lev_blueprint_stage(bp, stage_name ? stage_name : bp->entry_stage);
	if (!st) {
		lev_fail("agent '%s' has no stage '%s'", bp->name, stage_name);
		lev_blueprint_free(bp);
		return -1;
	}
	*agent = &bp->sandbox;
	*stage = &st->sandbox;
	*bp_out = bp;
	return 0;
}

/* -v: the kind, the network, the layers in force and the layers missing. */
static void print_layers(const struct lev_sandbox *sb)
{
	struct lev_buf in = LEV_BUF_INIT_MAX(4096), out = LEV_BUF_INIT_MAX(4096);

	(void)lev_sandbox_layers_format(lev_sandbox_layers(sb), &in);
	(void)lev_sandbox_layers_format(lev_sandbox_missing(sb), &out);
	fprintf(stderr, "lev: sandbox %s, network %s\n", lev_sandbox_kind_name(lev_sandbox_kind(sb)),
		lev_sandbox_network(sb) ? "on" : "off");
	fprintf(stderr, "lev: layers in force: %s\nlev: layers missing: %s\n", in.buf, out.buf);
	lev_buf_release(&in);
	lev_buf_release(&out);
}

static int report_result(const struct lev_sandbox_result *res, char *const *argv,
			 uint64_t timeout_ms, uint64_t cap, int cancel_sig)
{
	if (res->out_truncated)
		lev_warn("standard output was cut at %llu bytes (%llu written)",
			 (unsigned long long)cap, (unsigned long long)res->out_total);
	if (res->err_truncated)
		lev_warn("standard error was cut at %llu bytes (%llu written)",
			 (unsigned long long)cap, (unsigned long long)res->err_total);
	if (res->timed_out) {
		uint64_t ms = res->timeout_ms ? res->timeout_ms : timeout_ms;

		lev_fail("'%s' timed out after %llu s and was killed with everything it started",
			 argv[0], (unsigned long long)((ms + 999) / 1000));
		return res->exit_code;
	}
	if (res->cancelled)
		return 128 + (cancel_sig > 0 ? cancel_sig : SIGINT);
	if (res->exec_errno) {
		if (res->exec_errno == ENOENT)
			lev_fail("'%s': command not found in the sandbox", argv[0]);
		else
			lev_fail("cannot execute '%s': %s", argv[0], strerror(res->exec_errno));
	}
	return res->exit_code;
}

/* What `lev sandbox exec` was asked on its command line. */
struct exec_args {
	const char *agent_name, *stage_name, *workdir;
	const char *kind_s, *net_s, *image, *engine, *onun_s;
	char **mounts;
	bool dry_run, json, verbose, warm;
	uint64_t timeout_s, mem_mib, pids;
	int cmd;	/* argv index of CMD */
};

/* An option taking a value: 0, or the usage error's exit status. */
static int exec_option(struct exec_args *a, const char *opt, const char *v)
{
	if (!strcmp(opt, "--agent"))
		a->agent_name = v;
	else if (!strcmp(opt, "--stage"))
		a->stage_name = v;
	else if (!strcmp(opt, "--kind"))
		a->kind_s = v;
	else if (!strcmp(opt, "--network"))
		a->net_s = v;
	else if (!strcmp(opt, "--workdir"))
		a->workdir = v;
	else if (!strcmp(opt, "--image"))
		a->image = v;
	else if (!strcmp(opt, "--engine"))
		a->engine = v;
	else if (!strcmp(opt, "--mount"))
		a->mounts = lev_strv_push(a->mounts, v);
	else if (!strcmp(opt, "--on-unavailable"))
		a->onun_s = v;
	else if (!strcmp(opt, "--memory")) {
		if (lev_parse_u64(v, &a->mem_mib) < 0 || a->mem_mib < 16 || a->mem_mib > (1ULL << 24))
			return exec_usage("--memory wants MiB from 16 to 16777216, not '%s'", v);
	} else if (!strcmp(opt, "--pids")) {
		if (lev_parse_u64(v, &a->pids) < 0 || a->pids < 8 || a->pids > 1000000)
			return exec_usage("--pids wants a count from 8 to 1000000, not '%s'", v);
	} else if (!strcmp(opt, "--timeout")) {
		if (parse_secs(v, &a->timeout_s) < 0)
			return exec_usage("--timeout wants whole seconds from 1 to 604800, not '%s'", v);
	} else {
		return exec_usage("unknown option '%s'", opt);
	}
	return 0;
}

/* 0, or the usage error's exit status (A->mounts is then freed). */
static int exec_parse(int argc, char **argv, struct exec_args *a)
{
	int i, r;

	for (i = 2; i < argc; i++) {
		const char *opt = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(opt, "--")) {
			i++;
			break;
		}
		if (opt[0] != '-')
			break;
		if (!strcmp(opt, "--dry-run")) {
			a->dry_run = true;
			continue;
		}
		if (!strcmp(opt, "--json")) {
			a->json = true;
			continue;
		}
		if (!strcmp(opt, "--warm")) {
			a->warm = true;
			continue;
		}
		if (!strcmp(opt, "-v") || !strcmp(opt, "--verbose")) {
			a->verbose = true;
			continue;
		}
		r = v ? exec_option(a, opt, v) : exec_usage("option '%s' needs a value", opt);
		if (r)
			goto fail;
		i++;
	}
	a->cmd = i;
	if (i >= argc)
		r = exec_usage("%s", "no command given (write it after '--')");
	else if (a->stage_name && !a->agent_name)
		r = exec_usage("%s", "--stage needs --agent");
	else if (a->json && !a->dry_run)
		r = exec_usage("%s", "--json goes with --dry-run");
	else
		return 0;
fail:
	lev_strv_free(a->mounts);
	a->mounts = NULL;
	return r;
}

/*
 * The user's [sandbox] with the flags laid over it, into GLOBAL (released
 * by the caller either way).  0, or the usage error's exit status.
 */
static int exec_global_spec(const struct lev_config *cfg, const struct exec_args *a,
			    struct lev_sandbox_spec *global)
{
	lev_sandbox_spec_copy(global, &cfg->sandbox);
	if (a->kind_s) {
		if (lev_sandbox_kind_parse(a->kind_s, &global->kind) < 0)
			return exec_usage("--kind wants none, namespace or container, not '%s'",
					  a->kind_s);
		global->has_kind = global->present = true;
	} else if (!a->agent_name && !(global->present && global->has_kind)) {
		global->kind = LEV_SANDBOX_NAMESPACE;	/* the command is called sandbox */
		global->has_kind = global->present = true;
	}
	if (a->net_s) {
		if (strcmp(a->net_s, "on") && strcmp(a->net_s, "off"))
			return exec_usage("--network wants on or off, not '%s'", a->net_s);
		global->network = !strcmp(a->net_s, "on");
		global->has_network = global->present = true;
	}
	if (a->onun_s) {
		if (lev_on_unavailable_parse(a->onun_s, &global->on_unavailable) < 0)
			return exec_usage("--on-unavailable wants error or warn, not '%s'", a->onun_s);
		global->has_on_unavailable = global->present = true;
	}
	if (a->image) {
		free(global->image);
		global->image = xstrdup(a->image);
		global->present = true;
	}
	if (a->engine) {
		free(global->engine);
		global->engine = xstrdup(a->engine);
		global->present = true;
	}
	for (char **m = a->mounts; m && *m; m++)
		if (!lev_strv_contains(global->mounts, *m))
			global->mounts = lev_strv_push(global->mounts, *m);
	return 0;
}

/* The sandbox options from the config and the flags (not the pool). */
static void exec_opts(const struct lev_config *cfg, const struct exec_args *a,
		      const char *workdir, const char *helper, struct lev_sandbox_opts *o)
{
	o->workdir = workdir;
	o->engine_args = cfg->sandbox_engine_args;
	o->oci_helper = helper;
	o->env.mode = cfg->shell_env;
	o->env.withhold = cfg->shell_env_withhold;
	o->env.allow = cfg->allow_env_vars;
	if (a->timeout_s)
		o->limits.timeout_ms = a->timeout_s * 1000;
	else if (cfg->sandbox_timeout_secs)
		o->limits.timeout_ms = cfg->sandbox_timeout_secs * 1000;
	else if (cfg->limits.shell_timeout_secs)
		o->limits.timeout_ms = cfg->limits.shell_timeout_secs * 1000;
	if (cfg->limits.max_tool_output_bytes)
		o->limits.output_max = cfg->limits.max_tool_output_bytes;
	if (a->mem_mib)
		o->limits.mem_bytes = a->mem_mib << 20;
	if (a->pids)
		o->limits.nproc = a->pids;
	o->plan_only = a->dry_run;
	/* one command: a warm helper would only add its own start */
	o->cold = !a->warm;
	lev_sandbox_limits_fill(&o->limits);
}

/* Ctrl-C and friends cancel the command (and remove containers): a signalfd, or -1. */
static int block_cancel_signals(void)
{
	sigset_t sigs;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	return signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* Warn when the sandbox is degraded; with -v print what it uses. */
static void exec_announce(const struct lev_sandbox *sb, bool verbose)
{
	if (lev_sandbox_degraded(sb)) {
		struct lev_buf b = LEV_BUF_INIT_MAX(4096);

		(void)lev_sandbox_layers_format(lev_sandbox_layers(sb), &b);
		lev_warn("sandbox degraded: %s; layers in force: %s", lev_sandbox_degraded(sb), b.buf);
		lev_buf_release(&b);
	}
	if (verbose)
		print_layers(sb);
}

/* --dry-run: print the plan for CMD. */
static int exec_plan(struct lev_sandbox *sb, char *const *cmd, bool json)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(8 << 20);
	struct lev_err err = LEV_ERR_INIT;
	int rc = EXIT_SETUP;

	if (lev_sandbox_describe(sb, cmd, NULL, json, &b, &err) < 0) {
		lev_fail("%s", err.msg);
	} else {
		fputs(b.buf, stdout);
		rc = LEV_EXIT_OK;
	}
	lev_buf_release(&b);
	return rc;
}

/* Run CMD in SB with our standard streams; its exit status, or EXIT_SETUP. */
static int exec_run(struct lev_sandbox *sb, char *const *cmd, const struct lev_sandbox_opts *o,
		    bool warm, int sfd)
{
	struct lev_sandbox_io io = { 0, 1, 2, sfd };
	struct lev_err err = LEV_ERR_INIT;
	struct lev_sandbox_proc *proc = NULL;
	struct lev_sandbox_result res;
	int rc = EXIT_SETUP, cancel_sig = 0;

	if (lev_sandbox_spawn(sb, cmd, environ, NULL, NULL, &io, &proc, &err) < 0) {
		lev_fail("%s", err.msg);
		return EXIT_SETUP;
	}
	if (warm && lev_sandbox_cold(sb))
		lev_warn("sandbox: the command starts cold: %s", lev_sandbox_cold(sb));
	if (lev_sandbox_wait(proc, &res, &err) < 0) {
		lev_fail("%s", err.msg);
	} else {
		if (res.cancelled && sfd >= 0) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				cancel_sig = (int)si.ssi_signo;
		}
		rc = report_result(&res, cmd, o->limits.timeout_ms, o->limits.output_max,
				   cancel_sig);
		lev_sandbox_result_release(&res);
	}
	lev_sandbox_proc_free(proc);
	return rc;
}

/* Make the sandbox EFF asks for in a pool of its own and run (or plan) CMD in it. */
static int exec_in_pool(const struct lev_sandbox_spec *eff, struct lev_sandbox_opts *o,
			const struct exec_args *a, char *const *cmd)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_sandbox_pool *pool = NULL;
	struct lev_sandbox *sb = NULL;
	char run_id[64];
	int rc = EXIT_SETUP, sfd;

	snprintf(run_id, sizeof(run_id), "exec-%d", (int)getpid());
	sfd = block_cancel_signals();
	if (lev_sandbox_pool_new(run_id, &pool, &err) < 0) {
		lev_fail("%s", err.msg);
		goto out;
	}
	o->pool = pool;
	if (lev_sandbox_new(eff, o, &sb, &err) < 0) {
		lev_fail("%s", err.msg);
		goto out_pool;
	}
	exec_announce(sb, a->verbose);
	rc = a->dry_run ? exec_plan(sb, cmd, a->json) : exec_run(sb, cmd, o, a->warm, sfd);
	lev_sandbox_free(sb);
out_pool:
	if (lev_sandbox_pool_teardown(pool, &err) < 0)
		lev_warn("%s", err.msg);
	lev_sandbox_pool_free(pool);
out:
	if (sfd >= 0)
		close(sfd);
	return rc;
}

static int cmd_exec(int argc, char **argv, struct lev_ctx *ctx)
{
	struct exec_args a = { .verbose = ctx->verbose > 0 };
	const struct lev_config *cfg;
	struct lev_sandbox_spec global, eff;
	const struct lev_sandbox_spec *agent = NULL, *stage = NULL;
	struct lev_blueprint *bp = NULL;
	struct lev_sandbox_opts o = LEV_SANDBOX_OPTS_INIT;
	_cleanup_free_ char *cwd = NULL;
	const char *workdir;
	int rc;

	rc = exec_parse(argc, argv, &a);
	if (rc)
		return rc;
	if (lev_setup(ctx, CMD_NEEDS_CONFIG) < 0) {
		lev_strv_free(a.mounts);
		return EXIT_SETUP;
	}
	cfg = &ctx->cfg;
	print_warnings(cfg->warnings);

	rc = exec_global_spec(cfg, &a, &global);
	if (rc)
		goto out;
	rc = EXIT_SETUP;
	if (a.agent_name && load_agent(a.agent_name, a.stage_name, &bp, &agent, &stage) < 0)
		goto out;
	lev_sandbox_resolve(&global, agent, stage, &eff);

	workdir = a.workdir;
	if (!workdir) {
		cwd = getcwd(NULL, 0);
		if (!cwd) {
			lev_fail("cannot find the current directory: %s", strerror(errno));
			goto out_eff;
		}
		workdir = cwd;
	}
	exec_opts(cfg, &a, workdir, ctx->oci_helper, &o);
	rc = exec_in_pool(&eff, &o, &a, argv + a.cmd);
out_eff:
	lev_sandbox_spec_release(&eff);
out:
	lev_blueprint_free(bp);
	lev_sandbox_spec_release(&global);
	lev_strv_free(a.mounts);
	return rc;
}

static const char *yesno(int r)
{
	return r == 0 ? "yes" : "no";
}

/* What each kind of sandbox would use here. */
struct probe_kinds {
	const char *helper;	/* the fast-path helper, or NULL */
	const struct lev_sandbox_engine_info *pick;	/* the container engine, or NULL */
	const char *ns_off, *ns_on;	/* the namespace kind's layers, network off and on */
};

static json_t *probe_engines_json(const struct lev_sandbox_probe *p)
{
	json_t *e = json_array();
	size_t k;

	for (k = 0; k < p->n_engines; k++) {
		json_t *x = json_object();

		json_object_set_new(x, "name", json_string(p->engines[k].name));
		json_object_set_new(x, "path", p->engines[k].path ? json_string(p->engines[k].path) : json_null());
		json_object_set_new(x, "version", p->engines[k].version ? json_string(p->engines[k].version) : json_null());
		json_object_set_new(x, "responds", json_boolean(p->engines[k].responds));
		json_array_append_new(e, x);
	}
	return e;
}

static json_t *probe_kinds_json(const struct probe_kinds *pk)
{
	json_t *kinds = json_object(), *ct = json_object();
	/* what the container kind lacks without the helper */
	json_t *miss = json_array();

	json_object_set_new(kinds, "none", json_string("host: timeout, output cap, environment filter"));
	json_object_set_new(kinds, "namespace", json_string(pk->ns_off));
	json_object_set_new(kinds, "namespace_network_on", json_string(pk->ns_on));
	json_object_set_new(ct, "engine", pk->pick ? json_string(pk->pick->name) : json_null());
	json_object_set_new(ct, "fast_path_helper", pk->helper ? json_string(pk->helper) : json_null());
	if (!pk->helper) {
		json_array_append_new(miss, json_string("seccomp"));
		json_array_append_new(miss, json_string("pidns"));
	}
	json_object_set_new(ct, "missing", miss);
	json_object_set_new(kinds, "container", ct);
	return kinds;
}

static void probe_print_json(const struct lev_sandbox_probe *p, const struct probe_kinds *pk)
{
	const struct scmp_version *sv = seccomp_version();
	json_t *o = json_object();
	char *s;

#define RES(r) ((r) == 0 ? json_null() : json_string(strerror(-(r))))
	json_object_set_new(o, "userns", json_boolean(p->userns == 0));
	json_object_set_new(o, "userns_error", RES(p->userns));
	json_object_set_new(o, "mount_api", json_boolean(p->mount_api == 0));
	json_object_set_new(o, "mount_api_error", RES(p->mount_api));
	json_object_set_new(o, "landlock_abi", json_integer(p->landlock_abi > 0 ? p->landlock_abi : 0));
	json_object_set_new(o, "landlock_error", p->landlock_abi > 0 ? json_null() :
				    json_string(strerror(-p->landlock_abi)));
	json_object_set_new(o, "seccomp", json_boolean(p->seccomp == 0));
	json_object_set_new(o, "seccomp_error", RES(p->seccomp));
	json_object_set_new(o, "libseccomp", json_sprintf("%u.%u.%u", sv->major, sv->minor, sv->micro));
	json_object_set_new(o, "openat2", json_boolean(p->openat2 == 0));
	json_object_set_new(o, "pidmax_ns", json_boolean(p->pidmax_ns == 0));
	json_object_set_new(o, "root", json_boolean(p->root));
#undef RES
	json_object_set_new(o, "engines", probe_engines_json(p));
	json_object_set_new(o, "kinds", probe_kinds_json(pk));
	s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	puts(s);
	free(s);
	json_decref(o);
}

/* The only argument of probe and own-files: --json.  -1 after the usage error. */
static int json_flag(int argc, char **argv, bool *json)
{
	int i;

	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json")) {
			(void)exec_usage("unknown argument '%s'", argv[i]);
			return -1;
		}
		*json = true;
	}
	return 0;
}

static void probe_print_text(const struct lev_sandbox_probe *p, const struct probe_kinds *pk)
{
	const struct scmp_version *sv = seccomp_version();
	size_t k;

	printf("user namespaces: %s%s%s\n", yesno(p->userns), p->userns ? " - " : "",
	       p->userns ? strerror(-p->userns) : "");
	printf("mount API:       %s%s%s\n", yesno(p->mount_api), p->mount_api ? " - " : "",
	       p->mount_api ? strerror(-p->mount_api) : "");
	if (p->landlock_abi > 0)
		printf("landlock:        ABI %d%s%s\n", p->landlock_abi,
		       p->landlock_abi >= 4 ? " (filesystem, TCP" : " (filesystem",
		       p->landlock_abi >= 6 ? ", scopes)" : ")");
	else
		printf("landlock:        no - %s\n", strerror(-p->landlock_abi));
	printf("seccomp:         %s%s%s (libseccomp %u.%u.%u)\n", yesno(p->seccomp),
	       p->seccomp ? " - " : "", p->seccomp ? strerror(-p->seccomp) : "", sv->major,
	       sv->minor, sv->micro);
	printf("openat2:         %s%s%s\n", yesno(p->openat2), p->openat2 ? " - " : "",
	       p->openat2 ? strerror(-p->openat2) : "");
	printf("pid_max per PID namespace: %s%s%s\n", yesno(p->pidmax_ns),
	       p->pidmax_ns ? " - " : "", p->pidmax_ns ? strerror(-p->pidmax_ns) : "");
	printf("running as:      %s (uid %u)\n", p->root ? "root" : "a normal user",
	       (unsigned)getuid());
	printf("engines:\n");
	for (k = 0; k < p->n_engines; k++) {
		const struct lev_sandbox_engine_info *x = &p->engines[k];

		if (!x->path)
			printf("  %-7s not found\n", x->name);
		else
			printf("  %-7s %s, %s, %s\n", x->name, x->path,
			       x->version ? x->version : "version unknown",
			       x->responds ? "responds" : "does not respond");
	}
	printf("kinds:\n");
	printf("  none       the host: timeout, output cap, environment filter\n");
	printf("  namespace  %s\n", pk->ns_off);
	printf("             (network on: %s)\n", pk->ns_on);
	if (pk->pick)
		printf("  container  %s%s; commands %s\n", pk->pick->name,
		       pk->pick->responds ? "" : " (does not respond)",
		       pk->helper ? "through the fast-path helper" :
				"through '<engine> exec', without: seccomp, pidns "
				"(lev-oci-helper not found)");
	else
		printf("  container  unavailable: no docker or podman on PATH\n");
}

static int cmd_probe(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_sandbox_probe p;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_buf b1 = LEV_BUF_INIT_MAX(4096), b2 = LEV_BUF_INIT_MAX(4096);
	struct probe_kinds pk = { .helper = ctx->oci_helper };
	bool json = false;

	if (json_flag(argc, argv, &json) < 0)
		return LEV_EXIT_USAGE;
	if (lev_sandbox_probe(NULL, &p, &err) < 0)
		return lev_fail("%s", err.msg);
	(void)lev_sandbox_layers_format(lev_sandbox_probe_layers(&p, false), &b1);
	(void)lev_sandbox_layers_format(lev_sandbox_probe_layers(&p, true), &b2);
	pk.ns_off = b1.buf;
	pk.ns_on = b2.buf;
	pk.pick = p.engine_pick >= 0 ? &p.engines[p.engine_pick] : NULL;
	if (json)
		probe_print_json(&p, &pk);
	else
		probe_print_text(&p, &pk);
	lev_buf_release(&b1);
	lev_buf_release(&b2);
	lev_sandbox_probe_release(&p);
	return LEV_EXIT_OK;
}

/* own-files: the one list (liblev/conf/ownfiles.h), one line or object per entry. */
static int cmd_own_files(int argc, char **argv)
{
	struct lev_ownfiles l = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	json_t *all;
	bool json = false;
	size_t k;

	if (json_flag(argc, argv, &json) < 0)
		return LEV_EXIT_USAGE;
	if (lev_ownfiles_list(NULL, &l, &err) < 0)
		return lev_fail("%s", err.msg);
	all = json_array();
	for (k = 0; k < l.n; k++) {
		const struct lev_ownfile *e = &l.v[k];

		if (!json) {
			printf("%s\t%s%s\n", e->path, e->what, e->dir ? " (directory)" : "");
			continue;
		}
		json_array_append_new(all, json_pack("{s:s, s:s, s:s?, s:s?, s:b}", "what", e->what,
						     "path", e->path, "real", e->real, "guard",
						     e->guard, "dir", e->dir));
	}
	if (json) {
		char *s = json_dumps(all, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

		puts(s);
		free(s);
	}
	json_decref(all);
	lev_ownfiles_release(&l);
	return LEV_EXIT_OK;
}

int cmd_sandbox(int argc, char **argv, struct lev_ctx *ctx)
{
	if (argc < 2)
		return lev_usage_error("sandbox", "missing subcommand (exec, probe or own-files)");
	if (!strcmp(argv[1], "own-files"))
		return cmd_own_files(argc, argv);
	if (!strcmp(argv[1], "exec"))
		return cmd_exec(argc, argv, ctx);
	if (!strcmp(argv[1], "probe"))
		return cmd_probe(argc, argv, ctx);
	return lev_usage_error("sandbox", "unknown subcommand '%s'", argv[1]);
}
