/*
 * webhook.c - signed completion webhooks (see webhook.h).
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <microhttpd.h>

#include "liblev/base/http.h"
#include "liblev/base/mhdapi.h"
#include "liblev/base/sha256.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/client.h"
#include "liblev/daemon/proto.h"
#include "liblev/policy/netguard.h"
#include "liblev/serve/webhook.h"

void lev_webhook_defaults(struct lev_webhook_opts *o)
{
	*o = (struct lev_webhook_opts){
		.max_retries = LEV_WEBHOOK_MAX_RETRIES,
		.base_delay_ms = LEV_WEBHOOK_BASE_DELAY_MS,
		.max_delay_ms = LEV_WEBHOOK_MAX_DELAY_MS,
		.timeout_secs = LEV_WEBHOOK_TIMEOUT_SECS,
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

/* across a daemon restart: attach again every second, for ten minutes at most */
#define REATTACH_TRIES 600u
#define REATTACH_MS 1000u

/* ---- delivery ---------------------------------------------------------------- */

struct hook {
	char *run, *url, *secret;
	struct lev_webhook_opts o;
	int fd;			/* the daemon connection following the run */
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
	h->o.log(line);
}

static bool transient(long status)
{
	return status >= 500 || status == 429 || status == 408;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* One attempt: 0 delivered, 1 worth retrying, -1 not (status or error in *why). */
static int attempt(const struct hook *h, const char *body, char *const *hdrs, char *why,
		   size_t n)
{
	struct lev_http_response resp = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	struct lev_http_request req = {
		.method = "POST", .url = h->url, .headers = (const char *const *)hdrs,
		.body = body, .body_len = strlen(body),
		.timeout_ms = (long)h->o.timeout_secs * 1000, .max_response = 64 << 10,
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

static void deliver(const struct hook *h, const char *body)
{
	char sig[LEV_WEBHOOK_SIG_LEN + 1], why[sizeof(((struct lev_err *)0)->msg) + 16] = "";
	struct lev_err err = LEV_ERR_INIT;
	unsigned delay = h->o.base_delay_ms, i;
	char **hdrs = NULL;
	int r = 1;

	if (lev_webhook_sign(h->secret, body, strlen(body), sig, &err) < 0) {
		hook_log(h, "webhook for run %s: not sent: %s", h->run, err.msg);
		return;
	}
	hdrs = lev_strv_push(hdrs, "Content-Type: application/json");
	hdrs = lev_strv_push_take(hdrs, xasprintf("X-Leviath-Signature: %s", sig));
	hdrs = lev_strv_push_take(hdrs, xasprintf("X-Leviath-Delivery: agent_completed:%s", h->run));
	for (i = 0; r > 0 && i <= h->o.max_retries; i++) {
		if (i) {
			sleep_ms(delay);
			delay = delay > h->o.max_delay_ms / 2 ? h->o.max_delay_ms : delay * 2;
		}
		r = attempt(h, body, hdrs, why, sizeof(why));
	}
	if (r == 0)
		hook_log(h, "webhook for run %s: delivered (attempt %u, %s)", h->run, i, why);
	else
		hook_log(h, "webhook for run %s: not delivered after %u attempt%s: %s", h->run, i,
			 i == 1 ? "" : "s", why);
	lev_strv_free(hdrs);
}

static void hook_free(struct hook *h)
{
	if (h->fd >= 0)
		close(h->fd);
	explicit_bzero(h->secret, strlen(h->secret));
	free(h->secret);
	free(h->url);
	free(h->run);
	free(h);
}

/* A new daemon connection following H's run (h->fd): 0 or < 0 (-EREMOTEIO: no such run). */
static int hook_attach(struct hook *h, struct lev_err *err)
{
	json_t *req = lev_proto_request("attach"), *reply = NULL;
	int r;

	json_object_set_new(req, "run", json_string(h->run));
	r = lev_client_open(req, &h->fd, &reply, err);
	json_decref(req);
	json_decref(reply);
	return r;
}

/*
 * The run's end frame, or NULL.  A daemon that goes away (a restart) takes
 * the stream with it: the run is reloaded when the daemon starts again, so
 * attach again, for a while, and go on waiting for the same end.
 */
static json_t *wait_end(struct hook *h)
{
	struct lev_err err = LEV_ERR_INIT;
	unsigned tries = 0;
	json_t *m = NULL;

	for (;;) {
		while (lev_proto_recv(h->fd, &m, NULL) == 0 && m) {
			if (lev_streq(lev_json_str(m, "op"), "end"))
				return m;
			json_decref(m);
			m = NULL;
		}
		close(h->fd);
		h->fd = -1;
		do {
			if (tries++ >= REATTACH_TRIES)
				return NULL;
			sleep_ms(REATTACH_MS);
		} while (hook_attach(h, &err) < 0 && err.code != -EREMOTEIO);
		if (h->fd < 0)
			return NULL;	/* the daemon no longer knows the run */
	}
}

static void *hook_thread(void *p)
{
	struct hook *h = p;
	json_t *end = wait_end(h);
	char *body;

	if (!end) {
		hook_log(h, "webhook for run %s: not sent: the daemon's stream ended before the "
			 "run did", h->run);
		hook_free(h);
		return NULL;
	}
	body = lev_webhook_payload(h->run, end);
	json_decref(end);
	deliver(h, body);
	free(body);
	hook_free(h);
	return NULL;
}

int lev_webhook_start(const char *run, const char *url, const char *secret,
		      const struct lev_webhook_opts *o, struct lev_err *err)
{
	struct hook *h = xcalloc(1, sizeof(*h));
	pthread_attr_t at;
	pthread_t t;
	int r;

	h->run = xstrdup(run);
	h->url = xstrdup(url);
	h->secret = xstrdup(secret ? secret : "");
	h->o = *o;
	h->fd = -1;
	r = hook_attach(h, err);
	if (r < 0) {
		hook_free(h);
		return r;
	}
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &at, hook_thread, h);
	pthread_attr_destroy(&at);
	if (r != 0) {
		hook_free(h);
		return lev_err_set(err, -r, "webhook: cannot start a thread: %s", strerror(r));
	}
	return 0;
}
