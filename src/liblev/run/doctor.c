/*
 * doctor.c - lev doctor's checks (doctor.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/modelpick.h"
#include "liblev/conf/tomlval.h"
#include "liblev/provider/provider.h"
#include "liblev/run/doctor.h"
#include "liblev/sandbox/sandbox.h"

void lev_doctor_add(struct lev_doctor *d, const char *name, enum lev_doctor_status status,
		    const char *detail, const char *fix)
{
	d->v = xreallocarray(d->v, d->n + 1, sizeof(*d->v));
	d->v[d->n++] = (struct lev_doctor_row){
		.name = xstrdup(name),
		.status = status,
		.detail = detail ? xstrdup(detail) : NULL,
		.fix = fix ? xstrdup(fix) : NULL,
	};
}

void lev_doctor_release(struct lev_doctor *d)
{
	for (size_t i = 0; d && i < d->n; i++) {
		free(d->v[i].name);
		free(d->v[i].detail);
		free(d->v[i].fix);
	}
	if (d) {
		free(d->v);
		*d = (struct lev_doctor){ 0 };
	}
}

bool lev_doctor_passed(const struct lev_doctor *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].status == LEV_DOCTOR_FAIL)
			return false;
	return true;
}

const char *lev_doctor_status_name(enum lev_doctor_status s)
{
	static const char *const names[] = { "ok", "fail", "warn", "skip" };

	return (unsigned)s < ARRAY_SIZE(names) ? names[s] : "?";
}

/* ---- provider wiring ------------------------------------------------------ */

/* The provider and model MODEL names (see doctor.h); both freed by the caller. */
static void pick(const struct lev_config *cfg, const char *model, const char *creds,
		 char **prov_out, char **model_out)
{
	struct lev_model_ref none = { 0 };
	struct lev_model_picks picks;

	if (model && lev_model_override(cfg, &none, model, creds, prov_out, model_out) == 0)
		return;
	lev_model_pick(cfg, &none, creds, &picks);
	*prov_out = xstrdup(picks.v[0].provider);
	*model_out = picks.v[0].model ? xstrdup(picks.v[0].model) : NULL;
	lev_model_picks_release(&picks);
}

/* One small request: the inference row. */
static void infer_row(struct lev_doctor *d, struct lev_provider *p)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_infer_request req;
	struct lev_infer_response resp = { 0 };
	_cleanup_free_ char *detail = NULL, *said = NULL;
	double t0 = ((double)lev_monotonic_ns() / 1e9);

	lev_request_init(&req);
	lev_request_add_user_text(&req, "Reply with the single word PONG.");
	req.max_tokens = 64;
	if (lev_provider_infer(p, &req, &resp, &err) < 0) {
		lev_doctor_add(d, "inference", LEV_DOCTOR_FAIL, err.msg,
			       err.code == -EACCES ? "check the provider's key (lev doctor names where "
						     "it was read in the resolve row)"
						   : "check the model id and that the provider is up");
		lev_request_release(&req);
		return;
	}
	said = lev_printable(resp.text, strlen(resp.text), 40);
	detail = xasprintf("%llu in / %llu out tokens, replied %s  (%.1fs)",
			   (unsigned long long)resp.prompt_tokens,
			   (unsigned long long)resp.completion_tokens, said, ((double)lev_monotonic_ns() / 1e9) - t0);
	lev_doctor_add(d, "inference", LEV_DOCTOR_OK, detail, NULL);
	lev_response_release(&resp);
	lev_request_release(&req);
}

void lev_doctor_models(struct lev_doctor *d, const struct lev_config *cfg, const char *model,
		       const char *credentials_path, bool inference)
{
	_cleanup_free_ char *prov = NULL, *mod = NULL, *detail = NULL;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_provider_spec spec;
	struct lev_provider *p = NULL;

	pick(cfg, model, credentials_path, &prov, &mod);
	if (!strcmp(prov, "script")) {
		lev_doctor_add(d, "resolve", LEV_DOCTOR_OK,
			       "script: a script provider is resolved by name, per blueprint", NULL);
		lev_doctor_add(d, "inference", LEV_DOCTOR_SKIP, "a script provider sends no request",
			       NULL);
		return;
	}
	lev_provider_spec_init(&spec);
	spec.retry.max_attempts = 2;
	spec.max_tokens = 64;
	if (lev_provider_spec_from_config(&spec, cfg, prov, mod, NULL, NULL,
					  cfg->credential_store == LEV_CRED_FILE ? credentials_path
										 : NULL,
					  &err) < 0 ||
	    lev_provider_new(&spec, &p, &err) < 0) {
		lev_provider_spec_release(&spec);
		lev_doctor_add(d, "resolve", LEV_DOCTOR_FAIL, err.msg,
			       "set default_provider (and its key) in config.toml, or name one "
			       "with --model PROVIDER/MODEL (docs/providers.md)");
		lev_doctor_add(d, "inference", LEV_DOCTOR_SKIP, "resolve failed", NULL);
		return;
	}
	detail = xasprintf("%s / %s%s", prov, spec.model ? spec.model : "(the provider's model)",
			   cfg->default_provider && !model ? "  (default_provider)" : "");
	lev_provider_spec_release(&spec);
	lev_doctor_add(d, "resolve", LEV_DOCTOR_OK, detail, NULL);
	if (inference)
		infer_row(d, p);
	else
		lev_doctor_add(d, "inference", LEV_DOCTOR_SKIP, "not asked", NULL);
	lev_provider_free(p);
}

/* ---- the machine --------------------------------------------------------- */

static void feature(struct lev_doctor *d, const char *name, int r, const char *what,
		    const char *fix)
{
	_cleanup_free_ char *detail = r == 0 ? xstrdup(what)
					     : xasprintf("%s: %s", what, strerror(-r));

	lev_doctor_add(d, name, r == 0 ? LEV_DOCTOR_OK : LEV_DOCTOR_WARN, detail,
		       r == 0 ? NULL : fix);
}

static void engines(struct lev_doctor *d, const struct lev_sandbox_probe *p)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(1024);
	bool any = false;

	for (size_t k = 0; k < p->n_engines; k++) {
		const struct lev_sandbox_engine_info *e = &p->engines[k];

		if (!e->path)
			continue;
		(void)lev_buf_addf(&b, "%s%s (%s)", b.len ? ", " : "", e->name,
				   e->responds ? "responds" : "does not respond");
		any = any || e->responds;
	}
	lev_doctor_add(d, "engines", any ? LEV_DOCTOR_OK : LEV_DOCTOR_WARN,
		       b.len ? b.buf : "no docker or podman on PATH",
		       any ? NULL : "install podman (apt install podman) for sandbox kind \"container\"");
	lev_buf_release(&b);
}

void lev_doctor_machine(struct lev_doctor *d)
{
	struct lev_sandbox_probe p;
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *ll = NULL;

	if (lev_sandbox_probe(NULL, &p, &err) < 0) {
		lev_doctor_add(d, "sandbox", LEV_DOCTOR_FAIL, err.msg, NULL);
		return;
	}
	feature(d, "userns", p.userns, "user namespaces (sandbox kind \"namespace\")",
		"allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; "
		"on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0), or use "
		"kind = \"container\"");
	ll = p.landlock_abi > 0 ? xasprintf("Landlock ABI %d (the filesystem fence)", p.landlock_abi)
				: xstrdup("Landlock (the filesystem fence)");
	feature(d, "landlock", p.landlock_abi > 0 ? 0 : p.landlock_abi, ll,
		"boot Linux 5.13+ with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and "
		"'landlock' in the lsm= list)");
	feature(d, "seccomp", p.seccomp, "seccomp filters (the syscall fence)",
		"a kernel with CONFIG_SECCOMP_FILTER=y");
	feature(d, "openat2", p.openat2, "openat2 RESOLVE_BENEATH (file tools)",
		"Linux 5.6+ (without it file tools refuse to run)");
	feature(d, "mount_api", p.mount_api, "the mount API in a user namespace (masks)",
		"Linux 5.12+ (mount_setattr)");
	engines(d, &p);
	lev_sandbox_probe_release(&p);
}
