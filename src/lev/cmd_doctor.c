/*
 * cmd_doctor.c - lev doctor [-m|--model PROVIDER/MODEL] [--no-daemon] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/credstore.h"
#include "liblev/policy/policy.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/client.h"
#include "liblev/run/doctor.h"

const char lev_usage_doctor[] =
	"usage: lev doctor [-m|--model PROVIDER/MODEL] [--no-daemon] [--json]\n"
	"\n"
	"Check that lev works here. In order, the first failure stopping the rest:\n"
	"config (config.toml loads), credentials (the credential store answers),\n"
	"resolve (your default, or --model, picks a\n"
	"provider that has a key and a model), inference (one real request, at\n"
	"most 64 tokens: it is billed), daemon (one answers on the socket; not\n"
	"with --no-daemon). Then what this machine offers lev's sandboxes, each\n"
	"missing piece with its fix. Exits 1 when a check failed.\n"
	"\n"
	"  --json   print {\"checks\": [{name, status, detail, fix}], \"passed\": bool}\n";

static void daemon_row(struct lev_doctor *d)
{
	json_t *reply = NULL;
	_cleanup_free_ char *detail = NULL;

	if (!lev_client_ping(&reply)) {
		lev_doctor_add(d, "daemon", LEV_DOCTOR_WARN, "no daemon answers on this data root",
			       "lev run starts one when it needs it; 'lev daemon start' keeps one");
		return;
	}
	detail = xasprintf("running: pid %lld, %lld run(s)",
			   (long long)json_integer_value(json_object_get(reply, "pid")),
			   (long long)json_integer_value(json_object_get(reply, "runs")));
	lev_doctor_add(d, "daemon", LEV_DOCTOR_OK, detail, NULL);
	json_decref(reply);
}

static void print_json(const struct lev_doctor *d)
{
	json_t *o = json_object(), *a = json_array();
	char *s;

	for (size_t i = 0; i < d->n; i++) {
		const struct lev_doctor_row *r = &d->v[i];

		json_array_append_new(a, json_pack("{s:s, s:s, s:s?, s:s?}", "name", r->name,
						   "status", lev_doctor_status_name(r->status),
						   "detail", r->detail, "fix", r->fix));
	}
	json_object_set_new(o, "checks", a);
	json_object_set_new(o, "passed", json_boolean(lev_doctor_passed(d)));
	s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	puts(s);
	free(s);
	json_decref(o);
}

static void print_text(const struct lev_doctor *d)
{
	size_t failed = 0;

	for (size_t i = 0; i < d->n; i++) {
		const struct lev_doctor_row *r = &d->v[i];
		_cleanup_free_ char *st = xstrdup(lev_doctor_status_name(r->status));

		for (char *c = st; *c; c++)
			*c = (char)(*c - 'a' + 'A');
		printf("  %-10s %-5s %s\n", r->name, st, r->detail ? r->detail : "");
		if (r->fix)
			printf("  %-10s       fix: %s\n", "", r->fix);
		failed += r->status == LEV_DOCTOR_FAIL;
	}
	if (failed)
		printf("\ndoctor failed: %zu check(s)\n", failed);
	else
		printf("\ndoctor passed\n");
}

/* The credential store: where keys live, and that it answers. */
static void credentials_row(struct lev_doctor *d, const struct lev_config *cfg, const char *creds)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_strv_ char **names = NULL, **file = NULL, **conf = NULL;
	_cleanup_free_ char *detail = NULL;
	struct lev_credstore s = { cfg->credential_store, creds, cfg->path };

	if (lev_credstore_list(&s, &names, &err) < 0) {
		lev_doctor_add(d, "credentials", LEV_DOCTOR_FAIL, err.msg,
			       cfg->credential_store == LEV_CRED_KEYCHAIN
				       ? "start a Secret Service (gnome-keyring-daemon), or set "
					 "[security] credential_store = \"file\""
				       : "fix the file named");
		return;
	}
	if (cfg->credential_store == LEV_CRED_FILE) {
		detail = xasprintf("file '%s': %zu key(s)", creds, lev_strv_len(names));
		lev_doctor_add(d, "credentials", LEV_DOCTOR_OK, detail, NULL);
		return;
	}
	detail = xasprintf("keychain (Secret Service): %zu key(s)", lev_strv_len(names));
	if (lev_credstore_file_keys(&s, &file, &conf, NULL) == 0 && (file || conf))
		lev_doctor_add(d, "credentials", LEV_DOCTOR_WARN, detail,
			       "credentials.toml or config.toml still hold keys lev does not read "
			       "with credential_store = \"keychain\": run 'lev auth migrate'");
	else
		lev_doctor_add(d, "credentials", LEV_DOCTOR_OK, detail, NULL);
}

/* Leviath's policy.toml, merged into ours, and its Rhai rules lev does not run. */
static void leviath_policy_row(struct lev_doctor *d)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *ours = NULL, *theirs = NULL, *rhai_dir = NULL, *lua_dir = NULL,
			    *detail = NULL;
	_cleanup_strv_ char **rhai = NULL;
	struct lev_policy *pol = NULL;
	size_t n = 0;

	if (lev_datadir_policy_path(&ours, NULL) < 0 ||
	    lev_datadir_leviath_policy_path(&theirs, NULL) < 0 ||
	    lev_datadir_leviath_rules_dir(&rhai_dir, NULL) < 0 ||
	    lev_datadir_rules_dir(&lua_dir, NULL) < 0)
		return;
	rhai = lev_policy_rhai_findings(rhai_dir, lua_dir);
	if (access(theirs, F_OK) == 0) {
		if (lev_policy_load_both(ours, theirs, &pol, NULL, NULL, &err) < 0) {
			lev_doctor_add(d, "leviath", LEV_DOCTOR_FAIL, err.msg,
				       "fix the file at the place named: no run starts until then");
			return;
		}
		for (size_t i = 0; i < pol->n_rules; i++)
			n += pol->rules[i].source == 1;
		lev_policy_free(pol);
		detail = xasprintf("'%s' merged into lev's policy (the stricter wins): %zu "
				   "allowlist rule(s)", theirs, n);
	} else if (!rhai) {
		return;
	}
	if (rhai)
		lev_doctor_add(d, "leviath", LEV_DOCTOR_WARN,
			       detail ? detail : "no Leviath policy.toml",
			       rhai[0]);
	else
		lev_doctor_add(d, "leviath", LEV_DOCTOR_OK, detail, NULL);
	for (size_t i = 1; rhai && rhai[i]; i++)
		lev_doctor_add(d, "leviath", LEV_DOCTOR_WARN, "another Rhai rule", rhai[i]);
}

/* The config row, then Leviath's checks in order: the first failure skips the rest. */
static void wiring(struct lev_doctor *d, const char *model, bool daemon)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *creds = NULL, *detail = NULL;
	struct lev_config cfg;
	bool ok;

	if (lev_config_load(&cfg, &err) < 0) {
		lev_doctor_add(d, "config", LEV_DOCTOR_FAIL, err.msg, "fix the file at the place named");
		for (const char *const *n = (const char *const[]){ "resolve", "inference", "daemon", NULL };
		     *n; n++)
			lev_doctor_add(d, *n, LEV_DOCTOR_SKIP, "config failed", NULL);
		return;
	}
	detail = xasprintf("%s; default_provider=%s; %zu provider table(s)",
			   cfg.path ? cfg.path : "no config.toml (the defaults)",
			   cfg.default_provider ? cfg.default_provider : "(unset)", cfg.n_providers);
	lev_doctor_add(d, "config", LEV_DOCTOR_OK, detail, NULL);
	(void)lev_datadir_credentials_path(&creds, NULL);
	credentials_row(d, &cfg, creds);
	lev_doctor_models(d, &cfg, model, creds, true);
	ok = lev_doctor_passed(d);
	if (!daemon)
		lev_doctor_add(d, "daemon", LEV_DOCTOR_SKIP, "--no-daemon", NULL);
	else if (!ok)
		lev_doctor_add(d, "daemon", LEV_DOCTOR_SKIP, "an earlier check failed", NULL);
	else
		daemon_row(d);
	lev_config_release(&cfg);
}

int cmd_doctor(int argc, char **argv, struct lev_ctx *ctx)
{
	struct lev_doctor d = { 0 };
	const char *model = NULL;
	bool json = false, daemon = true;
	int i, rc;

	(void)ctx;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) {
			if (++i >= argc)
				return lev_usage_error("doctor", "%s needs PROVIDER/MODEL", argv[i - 1]);
			model = argv[i];
		} else if (!strcmp(argv[i], "--no-daemon")) {
			daemon = false;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else {
			return lev_usage_error("doctor", "unknown argument '%s'", argv[i]);
		}
	}
	wiring(&d, model, daemon);
	leviath_policy_row(&d);
	lev_doctor_machine(&d);
	if (json)
		print_json(&d);
	else
		print_text(&d);
	rc = lev_doctor_passed(&d) ? LEV_EXIT_OK : LEV_EXIT_FAIL;
	lev_doctor_release(&d);
	return rc;
}
