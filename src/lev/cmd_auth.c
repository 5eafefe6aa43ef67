/*
 * cmd_auth.c - lev auth status|set|list|remove|migrate: provider keys in
 * the credential store (liblev/conf/credstore.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/credstore.h"
#include "liblev/conf/keychain.h"

const char lev_usage_auth[] =
	"usage: lev auth status\n"
	"       lev auth set PROVIDER          (the key is read from stdin)\n"
	"       lev auth list\n"
	"       lev auth remove PROVIDER\n"
	"       lev auth migrate [--to-file] [--dry-run]\n"
	"\n"
	"Manage provider API keys in the store [security] credential_store names:\n"
	"\"file\" (<data root>/credentials.toml, 0600) or \"keychain\" (the OS keychain,\n"
	"through the Secret Service: gnome-keyring, KeePassXC, KWallet). Keys are\n"
	"never printed.\n"
	"\n"
	"  status    the store, whether it answers, and where each provider's key\n"
	"            comes from (the environment, the keychain, a file)\n"
	"  set       store a key: typed without echo on a terminal, or piped in\n"
	"            (one line); never taken from the command line\n"
	"  list      the providers the store holds a key for\n"
	"  remove    delete a provider's key from the store\n"
	"  migrate   move the keys of credentials.toml and config.toml's [providers]\n"
	"            NAME_api_key into the keychain (set credential_store = \"keychain\"\n"
	"            first); --to-file moves the keychain's back into credentials.toml\n"
	"            (set credential_store = \"file\" first); --dry-run only lists\n"
	"            them. All or nothing: a failure leaves both sides as they were.\n";

static const char *store_name(enum lev_credential_store k)
{
	return k == LEV_CRED_KEYCHAIN ? "keychain" : "file";
}

static void store_of(struct lev_ctx *ctx, struct lev_credstore *s)
{
	s->kind = ctx->cfg.credential_store;
	s->credentials_path = ctx->paths.credentials;
	s->config_path = ctx->cfg.path ? ctx->cfg.path : ctx->paths.config;
}

/* Read one key from stdin: without echo on a terminal.  A fresh secret or NULL. */
static char *read_key(const char *provider)
{
	char buf[LEV_API_KEY_MAX + 3];
	struct termios old, quiet;
	bool tty = isatty(STDIN_FILENO), echo_off = false;
	size_t n = 0;
	char *key = NULL;

	if (tty) {
		fprintf(stderr, "API key for %s (not shown): ", provider);
		fflush(stderr);
		if (tcgetattr(STDIN_FILENO, &old) == 0) {
			quiet = old;
			quiet.c_lflag &= ~(tcflag_t)ECHO;
			quiet.c_lflag |= ECHONL;
			echo_off = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0;
		}
	}
	while (n < sizeof(buf) - 1) {
		ssize_t r = read(STDIN_FILENO, buf + n, sizeof(buf) - 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (tty && memchr(buf, '\n', n))
			break;
	}
	if (echo_off)
		(void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (n && buf[n - 1] == '\r')
		buf[--n] = '\0';
	if (lev_api_key_valid(buf))
		key = xstrdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return key;
}

/* SUB's one PROVIDER argument, checked, then the set-up: LEV_EXIT_OK or the exit code. */
static int provider_arg(struct lev_ctx *ctx, int argc, char **argv, const char *sub)
{
	if (argc != 2)
		return lev_usage_error("auth", "%s needs one PROVIDER", sub);
	if (!lev_keychain_name_valid(argv[1]))
		return lev_usage_error("auth", "provider name '%s' must be 1..%d of a-z, 0-9, '_' "
				       "and '-'", argv[1], LEV_KEYCHAIN_NAME_MAX);
	if (lev_setup(ctx, CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	return LEV_EXIT_OK;
}

static int auth_set(struct lev_ctx *ctx, int argc, char **argv)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_credstore s;
	char *key;
	int r;

	if (argc > 2)
		return lev_usage_error("auth", "the key is read from stdin, never from the "
				       "command line (it would stay in your shell history)");
	if ((r = provider_arg(ctx, argc, argv, "set")) != LEV_EXIT_OK)
		return r;
	key = read_key(argv[1]);
	if (!key)
		return lev_fail("no key read from stdin: a key is one line of 1..%d printable "
				"characters with no spaces", LEV_API_KEY_MAX);
	store_of(ctx, &s);
	r = lev_credstore_set(&s, argv[1], key, &err);
	lev_secret_free(key);
	if (r < 0)
		return lev_fail("%s", err.msg);
	if (s.kind == LEV_CRED_KEYCHAIN)
		printf("stored the key for '%s' in the keychain\n", argv[1]);
	else
		printf("stored the key for '%s' in '%s'\n", argv[1], s.credentials_path);
	return LEV_EXIT_OK;
}

static int auth_remove(struct lev_ctx *ctx, int argc, char **argv)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_credstore s;
	bool removed = false;
	int r;

	if ((r = provider_arg(ctx, argc, argv, "remove")) != LEV_EXIT_OK)
		return r;
	store_of(ctx, &s);
	if (lev_credstore_remove(&s, argv[1], &removed, &err) < 0)
		return lev_fail("%s", err.msg);
	if (!removed)
		return lev_fail("the %s holds no key for '%s'", store_name(s.kind), argv[1]);
	if (s.kind == LEV_CRED_KEYCHAIN)
		printf("removed the key for '%s' from the keychain\n", argv[1]);
	else
		printf("removed the key for '%s' from '%s'\n", argv[1], s.credentials_path);
	return LEV_EXIT_OK;
}

static int auth_list(struct lev_ctx *ctx, int argc)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_strv_ char **names = NULL;
	struct lev_credstore s;

	if (argc != 1)
		return lev_usage_error("auth", "list takes no arguments");
	if (lev_setup(ctx, CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	store_of(ctx, &s);
	if (lev_credstore_list(&s, &names, &err) < 0)
		return lev_fail("%s", err.msg);
	for (char **n = names; n && *n; n++)
		puts(*n);
	return LEV_EXIT_OK;
}

/* Keys the store will not read: in the files while the store is the keychain. */
static void warn_stray(const struct lev_credstore *s)
{
	_cleanup_strv_ char **file = NULL, **conf = NULL;

	if (s->kind != LEV_CRED_KEYCHAIN ||
	    lev_credstore_file_keys(s, &file, &conf, NULL) < 0)
		return;
	if (file)
		lev_warn("'%s' holds key(s) lev does not read with credential_store = \"keychain\" "
			 "(%zu); move them with 'lev auth migrate'", s->credentials_path,
			 lev_strv_len(file));
	if (conf)
		lev_warn("'%s' holds [providers] NAME_api_key key(s) lev does not read with "
			 "credential_store = \"keychain\" (%zu); move them with 'lev auth migrate'",
			 s->config_path, lev_strv_len(conf));
}

static const char *source_name(enum lev_key_source src)
{
	switch (src) {
	case LEV_KEY_ENV:
		return "environment";
	case LEV_KEY_FILE:
		return "credentials.toml";
	case LEV_KEY_CONFIG:
		return "config.toml";
	case LEV_KEY_KEYCHAIN:
		return "keychain";
	case LEV_KEY_NONE:
		break;
	}
	return "none";
}

/* One status line for PROVIDER (its key variable ENV). */
static void status_row(const struct lev_config *cfg, const struct lev_credstore *s,
		       const char *provider, const char *env)
{
	struct lev_err err = LEV_ERR_INIT;
	const struct lev_flat_provider *f = lev_config_flat_provider(cfg, provider);
	enum lev_key_source src = LEV_KEY_NONE;
	char *key = NULL;
	bool kc = s->kind == LEV_CRED_KEYCHAIN;

	if (lev_api_key_resolve(provider, env, f && f->has_key ? cfg->path : NULL,
				kc ? NULL : s->credentials_path, kc, &key, &src, &err) < 0) {
		printf("  %-12s error: %s\n", provider, err.msg);
		return;
	}
	lev_secret_free(key);
	if (src == LEV_KEY_ENV)
		printf("  %-12s key from $%s\n", provider, env);
	else if (src != LEV_KEY_NONE)
		printf("  %-12s key in %s\n", provider, source_name(src));
	else
		printf("  %-12s no key%s%s\n", provider, env ? ": set $" : "", env ? env : "");
}

static int auth_status(struct lev_ctx *ctx, int argc)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_strv_ char **names = NULL, **shown = NULL;
	const struct lev_config *cfg = &ctx->cfg;
	const struct lev_builtin_provider *b;
	struct lev_credstore s;

	if (argc != 1)
		return lev_usage_error("auth", "status takes no arguments");
	if (lev_setup(ctx, CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	store_of(ctx, &s);
	if (lev_credstore_list(&s, &names, &err) < 0) {
		printf("credential store: %s: unusable\n", store_name(s.kind));
		return lev_fail("%s", err.msg);
	} else if (s.kind == LEV_CRED_KEYCHAIN) {
		printf("credential store: keychain (Secret Service), %zu key(s)\n",
		       lev_strv_len(names));
	} else {
		printf("credential store: file '%s', %zu key(s)\n", s.credentials_path,
		       lev_strv_len(names));
	}
	for (size_t i = 0; (b = lev_builtin_provider_at(i)); i++) {
		if (!b->key_env)
			continue;
		status_row(cfg, &s, b->name, b->key_env);
		shown = lev_strv_push(shown, b->name);
	}
	for (size_t i = 0; i < cfg->n_providers; i++) {
		if (lev_strv_contains(shown, cfg->providers[i].name))
			continue;
		status_row(cfg, &s, cfg->providers[i].name, cfg->providers[i].api_key_env);
		shown = lev_strv_push(shown, cfg->providers[i].name);
	}
	for (char **n = names; n && *n; n++)
		if (!lev_strv_contains(shown, *n))
			status_row(cfg, &s, *n, NULL);
	warn_stray(&s);
	return LEV_EXIT_OK;
}

static int auth_migrate(struct lev_ctx *ctx, int argc, char **argv)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_strv_ char **moved = NULL;
	struct lev_credstore s;
	bool to_file = false, dry_run = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--to-file"))
			to_file = true;
		else if (!strcmp(argv[i], "--dry-run"))
			dry_run = true;
		else
			return lev_usage_error("auth", "unknown argument '%s'", argv[i]);
	}
	if (lev_setup(ctx, CMD_NEEDS_CONFIG | CMD_NEEDS_DATA_ROOT) < 0)
		return LEV_EXIT_FAIL;
	store_of(ctx, &s);
	if (lev_credstore_migrate(&s, to_file, dry_run, &moved, &err) < 0)
		return lev_fail("%s", err.msg);
	for (char **m = moved; m && *m; m++) {
		char *tab = strchr(*m, '\t');

		*tab = '\0';
		printf("%s %s: from %s to %s\n", dry_run ? "would move" : "moved", *m, tab + 1,
		       to_file ? s.credentials_path : "the keychain");
	}
	if (!moved)
		printf("nothing to move: %s holds no keys\n",
		       to_file ? "the keychain" : "neither credentials.toml nor config.toml");
	return LEV_EXIT_OK;
}

int cmd_auth(int argc, char **argv, struct lev_ctx *ctx)
{
	const char *sub = argc > 1 ? argv[1] : "status";

	if (argc > 1) {
		argc--;
		argv++;
	}
	if (!strcmp(sub, "status"))
		return auth_status(ctx, argc);
	if (!strcmp(sub, "set"))
		return auth_set(ctx, argc, argv);
	if (!strcmp(sub, "list"))
		return auth_list(ctx, argc);
	if (!strcmp(sub, "remove"))
		return auth_remove(ctx, argc, argv);
	if (!strcmp(sub, "migrate"))
		return auth_migrate(ctx, argc, argv);
	return lev_usage_error("auth", "unknown subcommand '%s'", sub);
}
