/*
 * check.c - compose the gates for one hypothetical call (see check.h).
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/policy/argcheck.h"
#include "liblev/base/buf.h"
#include "liblev/run/check.h"
#include "liblev/run/gatechain.h"
#include "liblev/run/mcp-start.h"
#include "liblev/sandbox/landlock-rules.h"
#include "liblev/base/cleanup.h"
#include "liblev/policy/perm-config.h"
#include "liblev/policy/perm.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/base/strv.h"
#include "liblev/sandbox/sandbox.h"
#include "liblev/policy/taintgate.h"
#include "liblev/tools/mcp-probe.h"
#include "liblev/tools/script.h"
#include "liblev/tools/tools.h"
#include "liblev/tools/tools-fs.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"

void lev_check_result_release(struct lev_check_result *r)
{
	free(r->reason);
	free(r->rule);
	free(r->path);
	free(r->text);
	free(r->host);
	lev_strv_free(r->keys);
	lev_strv_free(r->warnings);
	lev_strv_free(r->untrusted_args);
	memset(r, 0, sizeof(*r));
}

/*
 * The stage's sandbox as the run would set it up (a namespace sandbox is
 * built to see its layers; one that cannot be set up is NULL, and fences
 * nothing, as the run would not run the shell either).  Caller frees.
 */
static struct lev_sandbox *check_sandbox(const struct lev_sandbox_spec *eff, const char *workdir)
{
	struct lev_sandbox_opts so = LEV_SANDBOX_OPTS_INIT;
	struct lev_sandbox *sb = NULL;

	if (eff->kind != LEV_SANDBOX_NAMESPACE)
		return NULL;
	so.workdir = workdir;
	if (lev_sandbox_new(eff, &so, &sb, NULL) < 0)
		return NULL;
	return sb;
}

/* O's tool, workdir and --args, checked; the arguments into *ARGS_OUT. */
static int check_call_args(const struct lev_check_opts *o, json_t **args_out,
			   struct lev_err *err)
{
	const char *args_text;
	json_error_t je;
	json_t *args;

	if (!o->tool || !*o->tool)
		return lev_err_set(err, LEV_EUSAGE, "no tool named");
	if (!o->workdir)
		return lev_err_set(err, LEV_EUSAGE, "no working directory");
	args_text = o->args_json ? o->args_json : "{}";
	if (strlen(args_text) > LEV_CHECK_ARGS_MAX)
		return lev_err_set(err, LEV_EUSAGE, "--args is longer than %zu bytes",
				   LEV_CHECK_ARGS_MAX);
	args = json_loads(args_text, JSON_REJECT_DUPLICATES, &je);
	if (!args)
		return lev_err_set(err, LEV_EUSAGE, "--args is not valid JSON: %s (at %d:%d)", je.text,
				   je.line, je.column);
	if (!json_is_object(args)) {
		json_decref(args);
		return lev_err_set(err, LEV_EUSAGE, "--args must be a JSON object");
	}
	*args_out = args;
	return 0;
}

/* The stage O names (default: the entry stage), or a usage error naming the stages. */
static int check_stage(const struct lev_blueprint *bp, const struct lev_check_opts *o,
		       const struct lev_stage **out, struct lev_err *err)
{
	const char *stage_name = o->stage ? o->stage : bp->entry_stage;
	_cleanup_free_ char *names = NULL;
	struct lev_buf b = LEV_BUF_INIT_MAX(65536);
	size_t i;

	*out = lev_blueprint_stage(bp, stage_name);
	if (*out)
		return 0;
	for (i = 0; i < bp->n_stages; i++)
		(void)lev_buf_addf(&b, "%s%s", i ? ", " : "", bp->stages[i].name);
	names = lev_buf_detach(&b, NULL);
	return lev_err_set(err, LEV_EUSAGE, "agent '%s' has no stage '%s' (stages: %s)", bp->name,
			   stage_name, names);
}

/* The file tools' context: the workdir and the read paths the config grants (GRANTS). */
static int check_fs_ctx(const struct lev_config *cfg, const struct lev_blueprint *bp,
			const struct lev_check_opts *o, char **grants, struct lev_fs_ctx **out,
			struct lev_err *err)
{
	struct lev_fs_opts fo = {
		.workdir = o->workdir,
		.agent = bp->name,
		.home = o->home,
		.declared = bp->read_paths,
		.grants = grants,
		.allow_blueprint = cfg->allow_blueprint_read_paths,
		.config_path = cfg->path,
		.confine = o->confine,
	};

	return lev_fs_ctx_new(&fo, out, err);
}

/* The taint gate as a run would make it; *ENABLED says whether taint is tracked. */
static int check_taint_gate(const struct lev_config *cfg, const struct lev_blueprint *bp,
			    const struct lev_check_opts *o, struct lev_gate **out, bool *enabled,
			    struct lev_err *err)
{
	struct lev_gate_options go = {
		.policy_path = o->policy_path,
		.leviath_policy = true,
		.rules_dir = o->rules_dir,
		.enabled = lev_taint_enabled(cfg->taint_tracking, lev_blueprint_wants_taint(bp)),
		.yolo = o->yolo && (o->yolo_flow || cfg->yolo_allows_flow),
		.read_grant_active = false,	/* labels only: not a decision */
		.recheck_ns = -1,
	};

	*enabled = go.enabled;
	return lev_gate_new(&go, out, err);
}

/* The decision D (its strings move) and the permission warnings, into OUT. */
static void check_result(struct lev_gatechain_decision *d, char *const *warnings,
			 struct lev_check_result *out)
{
	out->warnings = lev_strv_copy(warnings);
	out->decision = d->verdict;
	out->gate = d->gate;
	/* the record's reason and rule may point at fixed text: keep copies */
	out->reason = xstrdup(d->reason);
	out->rule = d->rule ? xstrdup(d->rule) : NULL;
	out->text = TAKE_PTR(d->text);
	out->path = TAKE_PTR(d->path);
	out->host = TAKE_PTR(d->host);
	if (d->have_sk && d->sk.grantable)
		out->keys = lev_strv_copy(d->sk.keys);
	out->integrity = d->integrity;
	out->untrusted_args = TAKE_PTR(d->untrusted_args);
}

/* The stage's MCP servers as a run starts them (mcp-start.h), and what they bring. */
struct check_mcp {
	struct lev_run_mcp *mc;
	struct lev_sandbox *sb;		/* the stage's sandbox, as the run makes it */
	struct lev_provenance *prov;	/* their descriptions and schemas */
	char **notes;
	char **envp;			/* the run's servers' environment (lev_run_env) */
};

static void check_mcp_note(void *ud, const char *msg)
{
	struct check_mcp *m = ud;

	m->notes = lev_strv_push(m->notes, msg);
}

/* What the check has built that the servers start from. */
struct check_mcp_in {
	const struct lev_stage *st;
	const struct lev_sandbox_spec *eff;
	char *const *grants;
	struct lev_tools *tools;
	struct lev_gate *taint;
	const char *workdir, *home;
};

/*
 * Start the servers IN's stage names, in its sandbox as the run sets it
 * up, their tools into its tools; a server that does not start is an error.
 */
static int check_mcp_start(const struct lev_config *cfg, const struct lev_check_opts *o,
			   const struct check_mcp_in *in, struct check_mcp *m, struct lev_err *err)
{
	struct lev_sandbox_opts so = LEV_SANDBOX_OPTS_INIT;
	struct lev_run_mcp_stage stage = { .st = in->st, .eff = in->eff };
	struct lev_run_mcp_opts mo = {
		.cfg = cfg,
		.ipol = lev_policy_integrity(lev_gate_policy(in->taint)),
		.workdir = in->workdir,
		.home = in->home,
		.data_root = o->data_root,
		.credentials_path = o->credentials_path,
		.envp = o->envp,
		.stages = &stage,
		.n_stages = 1,
		.tools = in->tools,
		.check = true,
		.warn = check_mcp_note,
		.ud = m,
	};
	int r;

	if (!lev_run_mcp_wanted(cfg, in->st))
		return 0;
	lev_mcp_sandbox_opts(cfg, in->workdir, in->home, o->data_root, &so);
	so.read_paths = in->grants;
	so.engine_args = cfg->sandbox_engine_args;
	r = lev_sandbox_new(in->eff, &so, &m->sb, err);
	if (r < 0)
		return lev_err_wrap(err, "sandbox for stage '%s'", in->st->name);
	stage.sb = m->sb;
	m->prov = mo.prov = lev_provenance_new();
	m->envp = lev_run_env(cfg, o->envp);
	mo.envp = m->envp;
	return lev_run_mcp_start(&mo, &m->mc, err);
}

static void check_mcp_release(struct check_mcp *m)
{
	lev_run_mcp_free(m->mc);
	lev_sandbox_free(m->sb);
	lev_provenance_free(m->prov);
	lev_strv_free(m->notes);
	lev_strv_free(m->envp);
}

int lev_check_run(const struct lev_config *cfg, const struct lev_blueprint *bp,
		  const struct lev_check_opts *o, struct lev_check_result *out, struct lev_err *err)
{
	struct lev_gatechain_env env;
	struct lev_gatechain_site site = { 0 };
	struct lev_gatechain_call call = { 0 };
	struct lev_gatechain_decision d = { 0 };
	struct lev_gatechain_ctx ctx = { .taint = o->taint, .integrity = o->integrity,
					 .untrusted_args = o->untrusted_args };
	struct check_mcp mcp = { 0 };
	struct lev_perm_setup ps;
	bool have_ps = false;
	struct lev_sandbox_spec eff = { 0 };
	struct lev_fs_ctx *fs = NULL;
	struct lev_tools *tools = NULL;
	struct lev_gate *tg = NULL;
	struct lev_sandbox *sb = NULL;
	char **grants = NULL, **offered = NULL, **servers = NULL;
	_cleanup_free_ char *offered_list = NULL, *own_home = NULL;
	const char *home = o->home;
	const struct lev_stage *st;
	json_t *args = NULL;
	int r;

	memset(out, 0, sizeof(*out));
	r = check_call_args(o, &args, err);
	if (r < 0)
		return r;
	r = check_stage(bp, o, &st, err);
	if (r < 0)
		goto out;
	r = lev_tools_new(&tools, err);
	if (r < 0)
		goto out;
	/* the blueprint's script tools, registered as the run registers them */
	r = lev_script_tools_add(tools, bp->script_tools, bp->n_script_tools, err);
	if (r < 0)
		goto out;

	/* the workdir: the file tools and the redirect gate both need it */
	grants = lev_config_read_path_grants_for_agent(cfg, lev_blueprint_grant_name(bp));
	r = check_fs_ctx(cfg, bp, o, grants, &fs, err);
	if (r < 0)
		goto out;
	r = lev_perm_setup_init(&ps, cfg, bp, st->name, o->yolo, o->allow, err);
	if (r < 0)
		goto out;
	have_ps = true;
	if (!o->home && lev_home_dir(&own_home, NULL) == 0)
		home = own_home;
	lev_sandbox_resolve(&cfg->sandbox, &bp->sandbox, &st->sandbox, &eff);
	r = check_taint_gate(cfg, bp, o, &tg, &site.taint_enabled, err);
	if (r < 0)
		goto out;
	/* then the MCP servers, and the offer, as the run makes them */
	r = check_mcp_start(cfg, o, &(struct check_mcp_in){ .st = st, .eff = &eff, .grants = grants,
							     .tools = tools, .taint = tg,
							     .workdir = lev_fs_ctx_workdir(fs),
							     .home = home }, &mcp, err);
	if (r < 0)
		goto out;
	offered = lev_gatechain_offered(tools, st, !o->no_terminal, o->yolo, &offered_list, NULL);
	/* an MCP server's tool descriptions are in the request: its text, as trusted as it is */
	servers = lev_run_mcp_offering(mcp.mc, tools, offered);
	if (lev_run_mcp_untrusted(lev_policy_integrity(lev_gate_policy(tg)), servers))
		ctx.integrity = LEV_UNTRUSTED;
	ctx.provenance = mcp.prov;
	sb = check_sandbox(&eff, lev_fs_ctx_workdir(fs));
	site.tools = tools;
	site.stage = st->name;
	site.offered = offered;
	site.offered_list = offered_list;
	site.perm = &ps.in;
	site.fs = fs;
	site.real_paths = true;
	site.eff = &eff;
	site.sb = sb;
	site.landlock = lev_landlock_abi() >= 1;
	site.taint = tg;
	lev_gatechain_env_build(&env, &site, LEV_GATECHAIN_CALL, home, &ctx);
	call.name = o->tool;
	call.args = args;
	r = lev_gatechain_decide(&env, &call, &d, err);
	if (r < 0)
		goto out;
	check_result(&d, ps.warnings, out);
	for (char **n = mcp.notes; n && *n; n++)
		out->warnings = lev_strv_push(out->warnings, *n);
	r = 0;
out:
	if (r < 0)
		lev_check_result_release(out);
	lev_gatechain_decision_release(&d);
	lev_gate_free(tg);
	lev_sandbox_free(sb);
	lev_strv_free(offered);
	lev_strv_free(servers);
	check_mcp_release(&mcp);
	if (have_ps)
		lev_perm_setup_release(&ps);
	lev_sandbox_spec_release(&eff);
	lev_fs_ctx_free(fs);
	lev_tools_free(tools);
	lev_strv_free(grants);
	json_decref(args);
	return r;
}
