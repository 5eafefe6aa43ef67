/*
 * webhook.c - signed completion webhooks (see webhook.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <microhttpd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/http.h"
#include "liblev/base/mhdapi.h"
#include "liblev/base/sha256.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/proto.h"
#include "liblev/daemon/webhook.h"
#include "liblev/policy/netguard.h"

void lev_webhook_defaults(struct lev_webhook_opts *o)
{
	*o = (struct lev_webhook_opts){
		.conf = { LEV_WEBHOOK_MAX_RETRIES, LEV_WEBHOOK_BASE_DELAY_MS,
			  LEV_WEBHOOK_MAX_DELAY_MS, LEV_WEBHOOK_TIMEOUT_SECS },
	};
}

/* The one decision on an address, at spawn and on every connect: 0 or -EACCES. */
static int addr_check(const struct sockaddr *sa, socklen_t len, bool allow_local,
		      struct lev_err *err)
{
	enum lev_netaddr_class c = lev_netaddr_classify(sa, len);
	char addr[INET6_ADDRSTRLEN + 8];

	if (c == LEV_NETADDR_PUBLIC && !allow_local && lev_netaddr_is_host_address(sa, len))
		c = LEV_NETADDR_HOST;
	if (c != LEV_NETADDR_METADATA && lev_netaddr_allowed(c, allow_local))
		return 0;
	lev_netaddr_format(sa, len, addr, sizeof(addr));
	return lev_err_set(err, -EACCES, "field 'callback_url': %s is a %s address (%s)", addr,
			   lev_netaddr_class_name(c),
			   c == LEV_NETADDR_METADATA ? "cloud metadata addresses are always refused" :
			   "refused unless [security] allow_local_network = true");
}

static int guard_hook(void *ud, const struct sockaddr *sa, socklen_t len, struct lev_err *err)
{
	return addr_check(sa, len, *(const bool *)ud, err);
}

int lev_webhook_check(const char *url, bool allow_local, struct lev_err *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *a;
	struct lev_url u = { 0 };
	int r = lev_url_parse(url, &u, err);

	if (strlen(url) > LEV_WEBHOOK_URL_MAX)
		return lev_err_set(err, LEV_EPARSE, "field 'callback_url': longer than %d bytes",
				   LEV_WEBHOOK_URL_MAX);
	if (r < 0) {
		lev_err_wrap(err, "field 'callback_url'");
		err->code = LEV_EPARSE;
		return LEV_EPARSE;
	}
	r = getaddrinfo(u.host, NULL, &hints, &res);
	if (r != 0) {
		r = lev_err_set(err, -EHOSTUNREACH, "field 'callback_url': host '%s' does not "
				"resolve: %s", u.host, gai_strerror(r));
		lev_url_release(&u);
		return r;
	}
	for (a = res; a && r == 0; a = a->ai_next)
		r = addr_check(a->ai_addr, a->ai_addrlen, allow_local, err);
	freeaddrinfo(res);
	lev_url_release(&u);
	return r;
}

int lev_webhook_sign(const char *secret, const char *body, size_t len,
		     char out[LEV_WEBHOOK_SIG_LEN + 1], struct lev_err *err)
{
	uint8_t mac[LEV_SHA256_LEN];
	char hex[LEV_SHA256_HEX_LEN + 1];

	if (!lev_gnutls.hmac_fast)
		return lev_err_set(err, -ENOSYS, "webhook: GnuTLS is not loaded");
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, secret, strlen(secret), body, len, mac) < 0)
		return lev_err_set(err, -EIO, "webhook: GnuTLS could not compute the HMAC");
	lev_sha256_hex(mac, hex);
	explicit_bzero(mac, sizeof(mac));
	snprintf(out, LEV_WEBHOOK_SIG_LEN + 1, "sha256=%s", hex);
	return 0;
}

char *lev_webhook_payload(const char *run, const json_t *end)
{
	const json_t *res = json_object_get(end, "result");
	const json_t *error = json_object_get(end, "error");
	/* an answer too large for a frame is in the run's record (result_in_record) */
	bool empty = !json_is_true(json_object_get(end, "result_in_record")) &&
		     (!res || json_is_null(res) || (json_is_string(res) && !*json_string_value(res)));
	char *id = xasprintf("agent_completed:%s", run), *text;
	json_t *p = json_pack("{s:s,s:s,s:s,s:s,s:s,s:O,s:O,s:b}", "type", "agent_completed",
			      "delivery_id", id, "agent_id", run, "run_id", run,
			      "status", lev_json_str(end, "status") ? lev_json_str(end, "status")
								    : "failed",
			      "result", error ? error : json_null(),
			      "final_output", res ? res : json_null(), "empty_output", empty);

	text = json_dumps(p, JSON_COMPACT);
	json_decref(p);
	free(id);
	return text;
}

/* ---- the kept callbacks ----------------------------------------------------------- */

/* A run id as a file name: what lev_run_id_new() makes, nothing that walks */
static bool run_name_ok(const char *run)
{
	size_t n = run ? strlen(run) : 0;

	if (n == 0 || n > 64 || run[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)run[i]) || run[i] == '-' || run[i] == '_'))
			return false;
	return true;
}

int lev_webhook_keep(const char *dir, const char *run, const char *url, const char *secret,
		     struct lev_err *err)
{
	_cleanup_free_ char *path = NULL;
	char *text;
	json_t *j;
	int r;

	struct lev_url u = { 0 };

	if (!run_name_ok(run))
		return lev_err_set(err, -EINVAL, "webhook: '%s' is not a run id", run);
	/* http(s) only, bounded: the daemon delivers to nothing else, whoever asked */
	if (strlen(url) > LEV_WEBHOOK_URL_MAX)
		return lev_err_set(err, LEV_EPARSE, "field 'callback_url': longer than %d bytes",
				   LEV_WEBHOOK_URL_MAX);
	r = lev_url_parse(url, &u, err);
	lev_url_release(&u);
	if (r < 0)
		return lev_err_wrap(err, "field 'callback_url'");
	if (strlen(secret) > LEV_WEBHOOK_SECRET_MAX)
		return lev_err_set(err, LEV_EPARSE, "field 'callback_secret': longer than %d bytes",
				   LEV_WEBHOOK_SECRET_MAX);
	r = lev_mkdir_p(dir, LEV_DIR_MODE, err);
	if (r < 0)
		return r;
	path = lev_path_join(dir, run);
	if (access(path, F_OK) == 0)
		return lev_err_set(err, -EEXIST, "run %s has a webhook already", run);
	j = json_pack("{s:s,s:s,s:s}", "run", run, "url", url, "secret", secret);
	text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!text)
		return lev_err_set(err, LEV_EPARSE, "webhook: the callback is not UTF-8 text");
	r = lev_write_file_atomic(path, text, strlen(text), LEV_FILE_MODE, err);
	explicit_bzero(text, strlen(text));
	free(text);
	return r;
}

bool lev_webhook_kept(const char *dir, const char *run)
{
	_cleanup_free_ char *path = run_name_ok(run) ? lev_path_join(dir, run) : NULL;

	return path && access(path, F_OK) == 0;
}

char **lev_webhook_pending(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **out = NULL;

	if (!d)
		return NULL;
	while ((e = readdir(d)))
		if (run_name_ok(e->d_name))
			out = lev_strv_push(out, e->d_name);
	closedir(d);
	return out;
}

/* ---- delivery ---------------------------------------------------------------- */

struct hook {
	char *run, *url, *secret, *path, *body;
	struct lev_webhook_opts o;
};

static void hook_log(const struct hook *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void hook_log(const struct hook *h, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!h->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	h->o.log(h->o.log_data, line);
}

static bool transient(long status)
{
	return status >= 500 || status == 429 || status == 408;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* One attempt: 0 delivered, 1 worth retrying, -1 not (status or error in *why). */
static int attempt(const struct hook *h, char *const *hdrs, char *why, size_t n)
{
	struct lev_http_response resp = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	struct lev_http_request req = {
		.method = "POST", .url = h->url, .headers = (const char *const *)hdrs,
		.body = h->body, .body_len = strlen(h->body),
		.timeout_ms = (long)h->o.conf.timeout_secs * 1000, .max_response = 64 << 10,
		.connect_hook = guard_hook, .connect_hook_data = (void *)&h->o.allow_local,
	};
	int r = lev_http_perform(&req, &resp, &err);

	if (r < 0) {
		snprintf(why, n, "%s", err.msg);
		return r == -EACCES || r == -EINVAL ? -1 : 1;
	}
	snprintf(why, n, "HTTP %ld", resp.status);
	r = resp.status >= 200 && resp.status < 300 ? 0 : transient(resp.status) ? 1 : -1;
	lev_http_response_release(&resp);
	return r;
}

static void deliver(const struct hook *h)
{
	char sig[LEV_WEBHOOK_SIG_LEN + 1], why[sizeof(((struct lev_err *)0)->msg) + 16] = "";
	struct lev_err err = LEV_ERR_INIT;
	uint64_t delay = h->o.conf.base_delay_ms, i;
	char **hdrs = NULL;
	int r = 1;

	if (lev_webhook_sign(h->secret, h->body, strlen(h->body), sig, &err) < 0) {
		hook_log(h, "webhook for run %s: not sent: %s", h->run, err.msg);
		return;
	}
	hdrs = lev_strv_push(hdrs, "Content-Type: application/json");
	hdrs = lev_strv_push_take(hdrs, xasprintf("X-Leviath-Signature: %s", sig));
	hdrs = lev_strv_push_take(hdrs, xasprintf("X-Leviath-Delivery: agent_completed:%s", h->run));
	for (i = 0; r > 0 && i <= h->o.conf.max_retries; i++) {
		if (i) {
			sleep_ms(delay);
			delay = delay > h->o.conf.max_delay_ms / 2 ? h->o.conf.max_delay_ms
								   : delay * 2;
		}
		r = attempt(h, hdrs, why, sizeof(why));
	}
	if (r == 0)
		hook_log(h, "webhook for run %s: delivered (attempt %llu, %s)", h->run,
			 (unsigned long long)i, why);
	else
		hook_log(h, "webhook for run %s: not delivered after %llu attempt%s: %s", h->run,
			 (unsigned long long)i, i == 1 ? "" : "s", why);
	lev_strv_free(hdrs);
}

static void hook_free(struct hook *h)
{
	if (h->secret) {
		explicit_bzero(h->secret, strlen(h->secret));
		free(h->secret);
	}
	free(h->url);
	free(h->run);
	free(h->path);
	free(h->body);
	free(h);
}

static void *hook_thread(void *p)
{
	struct hook *h = p;

	deliver(h);
	(void)unlink(h->path);	/* done or given up: a restart does not send it again */
	hook_free(h);
	return NULL;
}

/* H's url and secret from its file (h->path): 0 or < 0 with ERR. */
static int hook_load(struct hook *h, struct lev_err *err)
{
	char *text = NULL;
	size_t len = 0;
	json_t *j;
	int r = lev_read_file(h->path, 2 * (LEV_WEBHOOK_URL_MAX + LEV_WEBHOOK_SECRET_MAX) + 256,
			      &text, &len, err);

	if (r < 0)
		return r;
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	explicit_bzero(text, len);
	free(text);
	if (!lev_streq(lev_json_str(j, "run"), h->run) || !lev_json_str(j, "url") ||
	    !lev_json_str(j, "secret")) {
		json_decref(j);
		return lev_err_set(err, LEV_EPARSE, "webhook for run %s: its file is not one "
				   "lev wrote", h->run);
	}
	h->url = xstrdup(lev_json_str(j, "url"));
	h->secret = xstrdup(lev_json_str(j, "secret"));
	/* the secret's copy in J goes with it */
	explicit_bzero((char *)lev_json_str(j, "secret"), strlen(h->secret));
	json_decref(j);
	return 0;
}

int lev_webhook_fire(const char *dir, const char *run, const json_t *end,
		     const struct lev_webhook_opts *o, struct lev_err *err)
{
	struct hook *h;
	pthread_attr_t at;
	pthread_t t;
	int r;

	if (!run_name_ok(run))
		return lev_err_set(err, -EINVAL, "webhook: '%s' is not a run id", run);
	h = xcalloc(1, sizeof(*h));
	h->run = xstrdup(run);
	h->path = lev_path_join(dir, run);
	h->o = *o;
	r = hook_load(h, err);
	if (r == 0)
		r = lev_mhdapi_load(err);	/* the HMAC is GnuTLS's */
	if (r < 0) {
		(void)unlink(h->path);
		hook_free(h);
		return r;
	}
	h->body = lev_webhook_payload(run, end);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &at, hook_thread, h);
	pthread_attr_destroy(&at);
	if (r != 0) {
		hook_free(h);	/* kept: the next daemon sends it */
		return lev_err_set(err, -r, "webhook: cannot start a thread: %s", strerror(r));
	}
	return 0;
}
