/*
 * cmd_sandbox.c - lev sandbox exec | probe
 *
 * `exec` runs one command the way the runtime would: the effective sandbox
 * is the user's [sandbox] (with the command-line flags laid over it, since
 * they are the user's own choice), or with --agent the agent's block
 * clamped by it.  Standard streams pass through (each capped at the output
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
	"                        [--memory MIB] [--pids N]\n"
	"                        [--dry-run [--json]] -- CMD [ARG...]\n"
	"   or: lev sandbox probe [--json]\n"
	"\n"
	"exec runs CMD the way the runtime runs a shell command: in the user's\n"
	"[sandbox] with these flags laid over it (namespace when nothing is set),\n"
	"or with --agent in the agent's sandbox clamped by the user's config.\n"
	"--memory and --pids lower the limits (defaults 4096 MiB, 512 processes).\n"
	"--dry-run prints the plan (mounts, masks, Landlock and seccomp rules,\n"
	"limits, environment, container argv) instead of running.\n"
	"\n"
	"probe shows user namespaces, the Landlock ABI, seccomp, openat2, the\n"
	"container engines and what each kind would use.\n"
	"\n"
	"Exit status of exec: the command's; 126 cannot execute, 127 not found,\n"
	"128+n killed by signal n (137 at the timeout); 125 the sandbox could not\n"
	"be set up (the reason is on stderr); 2 usage.\n";

#define exec_usage(...) lev_usage_error("sandbox", __VA_ARGS__)

/* The helper that becomes each container's main process. */
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
		lev_fail("'%s' timed out after %llu s and was killed with everything it started",
			 argv[0], (unsigned long long)(timeout_ms / 1000));
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

static int cmd_exec(int argc, char **argv, struct lev_ctx *ctx)
{
	const char *agent_name = NULL, *stage_name = NULL, *workdir = NULL;
	const char *kind_s = NULL, *net_s = NULL, *image = NULL, *engine = NULL, *onun_s = NULL;
	char **mounts = NULL;
	bool dry_run = false, json = false;
	uint64_t timeout_s = 0, mem_mib = 0, pids = 0;
	struct lev_config cfg;
	struct lev_sandbox_spec global, eff;
	const struct lev_sandbox_spec *agent = NULL, *stage = NULL;
	struct lev_blueprint *bp = NULL;
	struct lev_sandbox_opts o = LEV_SANDBOX_OPTS_INIT;
	struct lev_sandbox_pool *pool = NULL;
	struct lev_sandbox *sb = NULL;
	struct lev_sandbox_proc *proc = NULL;
	struct lev_sandbox_result res;
	struct lev_sandbox_io io = { 0, 1, 2, -1 };
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *helper = NULL;
	_cleanup_free_ char *cwd = NULL;
	char run_id[64];
	sigset_t sigs;
	int i, rc = EXIT_SETUP, sfd = -1, cancel_sig = 0;

	for (i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (!strcmp(a, "--dry-run")) {
			dry_run = true;
			continue;
		}
		if (!strcmp(a, "--json")) {
			json = true;
			continue;
		}
		if (!v)
			return exec_usage("option '%s' needs a value", a);
		if (!strcmp(a, "--agent"))
			agent_name = v;
		else if (!strcmp(a, "--stage"))
			stage_name = v;
		else if (!strcmp(a, "--kind"))
			kind_s = v;
		else if (!strcmp(a, "--network"))
			net_s = v;
		else if (!strcmp(a, "--workdir"))
			workdir = v;
		else if (!strcmp(a, "--image"))
			image = v;
		else if (!strcmp(a, "--engine"))
			engine = v;
		else if (!strcmp(a, "--mount"))
			mounts = lev_strv_push(mounts, v);
		else if (!strcmp(a, "--on-unavailable"))
			onun_s = v;
		else if (!strcmp(a, "--memory")) {
			if (lev_parse_u64(v, &mem_mib) < 0 || mem_mib < 16 || mem_mib > (1ULL << 24)) {
				lev_strv_free(mounts);
				return exec_usage("--memory wants MiB from 16 to 16777216, not '%s'", v);
			}
		} else if (!strcmp(a, "--pids")) {
			if (lev_parse_u64(v, &pids) < 0 || pids < 8 || pids > 1000000) {
				lev_strv_free(mounts);
				return exec_usage("--pids wants a count from 8 to 1000000, not '%s'", v);
			}
		}
		else if (!strcmp(a, "--timeout")) {
			if (parse_secs(v, &timeout_s) < 0) {
				lev_strv_free(mounts);
				return exec_usage("--timeout wants whole seconds from 1 to 604800, not '%s'", v);
			}
		} else {
			lev_strv_free(mounts);
			return exec_usage("unknown option '%s'", a);
		}
		i++;
	}
	if (i >= argc) {
		lev_strv_free(mounts);
		return exec_usage("%s", "no command given (write it after '--')");
	}
	if (stage_name && !agent_name) {
		lev_strv_free(mounts);
		return exec_usage("%s", "--stage needs --agent");
	}
	if (json && !dry_run) {
		lev_strv_free(mounts);
		return exec_usage("%s", "--json goes with --dry-run");
	}

	if (lev_config_load(&cfg, &err) < 0) {
		lev_strv_free(mounts);
		lev_fail("%s", err.msg);
		return EXIT_SETUP;
	}
	print_warnings(cfg.warnings);

	/* the user's [sandbox], with the flags laid over it */
	lev_sandbox_spec_copy(&global, &cfg.sandbox);
	if (kind_s) {
		if (lev_sandbox_kind_parse(kind_s, &global.kind) < 0) {
			rc = exec_usage("--kind wants none, namespace or container, not '%s'", kind_s);
			goto out;
		}
		global.has_kind = global.present = true;
	} else if (!agent_name && !(global.present && global.has_kind)) {
		global.kind = LEV_SANDBOX_NAMESPACE;	/* the command is called sandbox */
		global.has_kind = global.present = true;
	}
	if (net_s) {
		if (strcmp(net_s, "on") && strcmp(net_s, "off")) {
			rc = exec_usage("--network wants on or off, not '%s'", net_s);
			goto out;
		}
		global.network = !strcmp(net_s, "on");
		global.has_network = global.present = true;
	}
	if (onun_s) {
		if (lev_on_unavailable_parse(onun_s, &global.on_unavailable) < 0) {
			rc = exec_usage("--on-unavailable wants error or warn, not '%s'", onun_s);
			goto out;
		}
		global.has_on_unavailable = global.present = true;
	}
	if (image) {
		free(global.image);
		global.image = xstrdup(image);
		global.present = true;
	}
	if (engine) {
		free(global.engine);
		global.engine = xstrdup(engine);
		global.present = true;
	}
	for (char **m = mounts; m && *m; m++)
		if (!lev_strv_contains(global.mounts, *m))
			global.mounts = lev_strv_push(global.mounts, *m);

	if (agent_name && load_agent(agent_name, stage_name, &bp, &agent, &stage) < 0)
		goto out;
	lev_sandbox_resolve(&global, agent, stage, &eff);

	if (!workdir) {
		cwd = getcwd(NULL, 0);
		if (!cwd) {
			lev_fail("cannot find the current directory: %s", strerror(errno));
			goto out_eff;
		}
		workdir = cwd;
	}
	snprintf(run_id, sizeof(run_id), "exec-%d", (int)getpid());
	helper = lev_find_oci_helper();

	o.workdir = workdir;
	o.engine_args = cfg.sandbox_engine_args;
	o.oci_helper = helper;
	o.env.mode = cfg.shell_env;
	o.env.withhold = cfg.shell_env_withhold;
	o.env.allow = cfg.allow_env_vars;
	if (timeout_s)
		o.limits.timeout_ms = timeout_s * 1000;
	else if (cfg.sandbox_timeout_secs)
		o.limits.timeout_ms = cfg.sandbox_timeout_secs * 1000;
	else if (cfg.limits.shell_timeout_secs)
		o.limits.timeout_ms = cfg.limits.shell_timeout_secs * 1000;
	if (cfg.limits.max_tool_output_bytes)
		o.limits.output_max = cfg.limits.max_tool_output_bytes;
	if (mem_mib)
		o.limits.mem_bytes = mem_mib << 20;
	if (pids)
		o.limits.nproc = pids;
	lev_sandbox_limits_fill(&o.limits);

	/* Ctrl-C and friends cancel the command (and remove containers) */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	io.cancel_fd = sfd;

	if (lev_sandbox_pool_new(run_id, &pool, &err) < 0) {
		lev_fail("%s", err.msg);
		goto out_eff;
	}
	o.pool = pool;
	if (lev_sandbox_new(&eff, &o, &sb, &err) < 0) {
		lev_fail("%s", err.msg);
		goto out_pool;
	}
	if (lev_sandbox_degraded(sb)) {
		struct lev_buf b = LEV_BUF_INIT_MAX(4096);

		(void)lev_sandbox_layers_format(lev_sandbox_layers(sb), &b);
		lev_warn("sandbox degraded: %s; layers in force: %s", lev_sandbox_degraded(sb), b.buf);
		lev_buf_release(&b);
	} else if (ctx->verbose) {
		struct lev_buf b = LEV_BUF_INIT_MAX(4096);

		(void)lev_sandbox_layers_format(lev_sandbox_layers(sb), &b);
		fprintf(stderr, "lev: sandbox %s: %s\n", lev_sandbox_kind_name(lev_sandbox_kind(sb)),
			b.buf);
		lev_buf_release(&b);
	}

	if (dry_run) {
		struct lev_buf b = LEV_BUF_INIT_MAX(8 << 20);

		if (lev_sandbox_describe(sb, argv + i, NULL, json, &b, &err) < 0) {
			lev_fail("%s", err.msg);
		} else {
			fputs(b.buf, stdout);
			rc = LEV_EXIT_OK;
		}
		lev_buf_release(&b);
		goto out_sb;
	}

	if (lev_sandbox_spawn(sb, argv + i, environ, NULL, NULL, &io, &proc, &err) < 0) {
		lev_fail("%s", err.msg);
		goto out_sb;
	}
	if (lev_sandbox_wait(proc, &res, &err) < 0) {
		lev_fail("%s", err.msg);
	} else {
		if (res.cancelled && sfd >= 0) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				cancel_sig = (int)si.ssi_signo;
		}
		rc = report_result(&res, argv + i, o.limits.timeout_ms, o.limits.output_max,
				   cancel_sig);
		lev_sandbox_result_release(&res);
	}
	lev_sandbox_proc_free(proc);
out_sb:
	lev_sandbox_free(sb);
out_pool:
	if (lev_sandbox_pool_teardown(pool, &err) < 0)
		lev_warn("%s", err.msg);
	lev_sandbox_pool_free(pool);
out_eff:
	lev_sandbox_spec_release(&eff);
out:
	if (sfd >= 0)
		close(sfd);
	lev_blueprint_free(bp);
	lev_sandbox_spec_release(&global);
	lev_config_release(&cfg);
	lev_strv_free(mounts);
	return rc;
}

static const char *yesno(int r)
{
	return r == 0 ? "yes" : "no";
}

static int cmd_probe(int argc, char **argv)
{
	struct lev_sandbox_probe p;
	struct lev_err err = LEV_ERR_INIT;
	const struct scmp_version *sv = seccomp_version();
	_cleanup_free_ char *helper = lev_find_oci_helper();
	unsigned ns_off, ns_on;
	bool json = false;
	size_t k;
	int i;
	struct lev_buf b1 = LEV_BUF_INIT_MAX(4096), b2 = LEV_BUF_INIT_MAX(4096);
	const struct lev_sandbox_engine_info *pick;

	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else
			return exec_usage("unknown argument '%s'", argv[i]);
	}
	if (lev_sandbox_probe(NULL, &p, &err) < 0)
		return lev_fail("%s", err.msg);
	ns_off = lev_sandbox_probe_layers(&p, false);
	ns_on = lev_sandbox_probe_layers(&p, true);
	pick = p.engine_pick >= 0 ? &p.engines[p.engine_pick] : NULL;

	if (json) {
		json_t *o = json_object(), *e = json_array(), *kinds = json_object(), *ct;

#define RES(r) ((r) == 0 ? json_null() : json_string(strerror(-(r))))
		json_object_set_new(o, "userns", json_boolean(p.userns == 0));
		json_object_set_new(o, "userns_error", RES(p.userns));
		json_object_set_new(o, "mount_api", json_boolean(p.mount_api == 0));
		json_object_set_new(o, "mount_api_error", RES(p.mount_api));
		json_object_set_new(o, "landlock_abi", json_integer(p.landlock_abi > 0 ? p.landlock_abi : 0));
		json_object_set_new(o, "landlock_error", p.landlock_abi > 0 ? json_null() :
					    json_string(strerror(-p.landlock_abi)));
		json_object_set_new(o, "seccomp", json_boolean(p.seccomp == 0));
		json_object_set_new(o, "seccomp_error", RES(p.seccomp));
		json_object_set_new(o, "libseccomp", json_sprintf("%u.%u.%u", sv->major, sv->minor, sv->micro));
		json_object_set_new(o, "openat2", json_boolean(p.openat2 == 0));
		json_object_set_new(o, "pidmax_ns", json_boolean(p.pidmax_ns == 0));
		json_object_set_new(o, "root", json_boolean(p.root));
#undef RES
		for (k = 0; k < p.n_engines; k++) {
			json_t *x = json_object();

			json_object_set_new(x, "name", json_string(p.engines[k].name));
			json_object_set_new(x, "path", p.engines[k].path ? json_string(p.engines[k].path) : json_null());
			json_object_set_new(x, "version", p.engines[k].version ? json_string(p.engines[k].version) : json_null());
			json_object_set_new(x, "responds", json_boolean(p.engines[k].responds));
			json_array_append_new(e, x);
		}
		json_object_set_new(o, "engines", e);
		(void)lev_sandbox_layers_format(ns_off, &b1);
		(void)lev_sandbox_layers_format(ns_on, &b2);
		json_object_set_new(kinds, "none", json_string("host: timeout, output cap, environment filter"));
		json_object_set_new(kinds, "namespace", json_string(b1.buf));
		json_object_set_new(kinds, "namespace_network_on", json_string(b2.buf));
		ct = json_object();
		json_object_set_new(ct, "engine", pick ? json_string(pick->name) : json_null());
		json_object_set_new(ct, "fast_path_helper", helper ? json_string(helper) : json_null());
		json_object_set_new(kinds, "container", ct);
		json_object_set_new(o, "kinds", kinds);
		{
			char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
			puts(s);
			free(s);
		}
		json_decref(o);
	} else {
		printf("user namespaces: %s%s%s\n", yesno(p.userns), p.userns ? " - " : "",
		       p.userns ? strerror(-p.userns) : "");
		printf("mount API:       %s%s%s\n", yesno(p.mount_api), p.mount_api ? " - " : "",
		       p.mount_api ? strerror(-p.mount_api) : "");
		if (p.landlock_abi > 0)
			printf("landlock:        ABI %d%s%s\n", p.landlock_abi,
			       p.landlock_abi >= 4 ? " (filesystem, TCP" : " (filesystem",
			       p.landlock_abi >= 6 ? ", scopes)" : ")");
		else
			printf("landlock:        no - %s\n", strerror(-p.landlock_abi));
		printf("seccomp:         %s%s%s (libseccomp %u.%u.%u)\n", yesno(p.seccomp),
		       p.seccomp ? " - " : "", p.seccomp ? strerror(-p.seccomp) : "", sv->major,
		       sv->minor, sv->micro);
		printf("openat2:         %s%s%s\n", yesno(p.openat2), p.openat2 ? " - " : "",
		       p.openat2 ? strerror(-p.openat2) : "");
		printf("pid_max per PID namespace: %s%s%s\n", yesno(p.pidmax_ns),
		       p.pidmax_ns ? " - " : "", p.pidmax_ns ? strerror(-p.pidmax_ns) : "");
		printf("running as:      %s (uid %u)\n", p.root ? "root" : "a normal user",
		       (unsigned)getuid());
		printf("engines:\n");
		for (k = 0; k < p.n_engines; k++) {
			const struct lev_sandbox_engine_info *x = &p.engines[k];

			if (!x->path)
				printf("  %-7s not found\n", x->name);
			else
				printf("  %-7s %s, %s, %s\n", x->name, x->path,
				       x->version ? x->version : "version unknown",
				       x->responds ? "responds" : "does not respond");
		}
		(void)lev_sandbox_layers_format(ns_off, &b1);
		(void)lev_sandbox_layers_format(ns_on, &b2);
		printf("kinds:\n");
		printf("  none       the host: timeout, output cap, environment filter\n");
		printf("  namespace  %s\n", b1.buf);
		printf("             (network on: %s)\n", b2.buf);
		if (pick)
			printf("  container  %s%s; commands %s\n", pick->name,
			       pick->responds ? "" : " (does not respond)",
			       helper ? "through the fast-path helper" : "through '<engine> exec'");
		else
			printf("  container  unavailable: no docker or podman on PATH\n");
	}
	lev_buf_release(&b1);
	lev_buf_release(&b2);
	lev_sandbox_probe_release(&p);
	return LEV_EXIT_OK;
}

int cmd_sandbox(int argc, char **argv, struct lev_ctx *ctx)
{
	if (argc < 2)
		return lev_usage_error("sandbox", "missing subcommand (exec or probe)");
	if (!strcmp(argv[1], "exec"))
		return cmd_exec(argc, argv, ctx);
	if (!strcmp(argv[1], "probe"))
		return cmd_probe(argc, argv);
	return lev_usage_error("sandbox", "unknown subcommand '%s'", argv[1]);
}
