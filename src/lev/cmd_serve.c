/*
 * cmd_serve.c - lev serve: the HTTP API and the web console, a client of
 * the daemon's protocol (liblev/serve/api.h) served by libmicrohttpd.
 *
 * This file is the HTTP front end only: the token, the bind address, TLS,
 * CORS, the body cap, the static console and the event stream.  Every
 * route's work is lev_api_dispatch()'s, and every decision the daemon's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microhttpd.h>

#include "lev/cmd.h"
#include "lev/console-files.h"
#include "liblev/base/mhdapi.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/client.h"
#include "liblev/daemon/proto.h"
#include "liblev/serve/api.h"
#include "liblev/serve/ws.h"
#include "liblev/daemon/webhook.h"

extern char **environ;

const char lev_usage_serve[] =
	"usage: lev serve [--port N] [--host ADDR] [--token TOKEN] [--cors ORIGIN]\n"
	"                 [--tls-cert FILE --tls-key FILE] [--allow-admin]\n"
	"\n"
	"Serve the HTTP API and the web console in front of the daemon.  A token\n"
	"of at least 16 characters is required (--token, or LEVIATH_API_TOKEN,\n"
	"which other users cannot read in the process table); every request but\n"
	"the console's own files must carry 'Authorization: Bearer TOKEN'.\n"
	"\n"
	"  --port N          the TCP port (default 3000; 0: one the kernel picks)\n"
	"  --host ADDR       the address to bind (default 127.0.0.1)\n"
	"  --cors ORIGIN     let pages of ORIGIN call the API (default: no origin)\n"
	"  --tls-cert FILE   serve HTTPS with this certificate (PEM) ...\n"
	"  --tls-key FILE    ... and this key\n"
	"  --allow-admin     mount the mutating admin routes\n";

#define TOKEN_MIN 16
#define SSE_POLL_MS 1000
#define SSE_KEEPALIVE_POLLS 15
/* connections at once, a thread each: enough for a few hundred live followers */
#define CONN_MAX 256u
#define SPAWN_OUT_MAX ((size_t)64 << 10)
/* what a read-only command may print (a run's event log) */
#define LEV_OUT_MAX ((size_t)16 << 20)

struct serve {
	char *token;		/* owned; never logged */
	const char *cors;	/* the one origin allowed, or NULL */
	char *self;		/* this lev binary, for spawning a run */
	bool tls;		/* served over HTTPS: a page's own origin is https:// */
	struct lev_api_opts api;
	bool hook_allow_local;		/* [security] allow_local_network: webhooks (daemon/webhook.h) */
};

static atomic_bool stopping;

/* ---- spawning a run: `lev run --detach`, the same checks as on a terminal --- */

static int memfd_with(const char *what, const char *data, size_t len)
{
	int fd = memfd_create(what, MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (len && lev_write_all(fd, data, len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ARGV for `lev run` from the checked spawn BODY (a strv to free), or NULL and *why. */
static char **spawn_argv(const struct serve *s, const json_t *body, const char **why)
{
	const char *bp = lev_json_str(body, "blueprint");
	char **argv = NULL;
	size_t i;
	json_t *a;

	if (!*bp || bp[0] == '-') {
		*why = "field 'blueprint' must name an installed agent or a blueprint's path";
		return NULL;
	}
	argv = lev_strv_push(argv, s->self);
	argv = lev_strv_push(argv, "run");
	argv = lev_strv_push(argv, "--detach");
	argv = lev_strv_push(argv, "--json");
	if (json_object_get(body, "task"))
		argv = lev_strv_push(argv, "--task=@/dev/stdin");	/* never an @FILE of the client's */
	if (lev_json_str(body, "workdir"))
		argv = lev_strv_push_take(argv, xasprintf("--workdir=%s", lev_json_str(body, "workdir")));
	if (lev_json_str(body, "model"))
		argv = lev_strv_push_take(argv, xasprintf("--model=%s", lev_json_str(body, "model")));
	if (json_is_true(json_object_get(body, "no_seed_commands")))
		argv = lev_strv_push(argv, "--no-seed-commands");
	json_array_foreach(json_object_get(body, "allow"), i, a)
		argv = lev_strv_push_take(argv, xasprintf("--allow=%s", json_string_value(a)));
	argv = lev_strv_push(argv, bp);
	return argv;
}

/* The last "lev...: " line of what `lev run` said on stderr, without its prefix. */
static char *spawn_error(int fd)
{
	char *out = NULL, *line, *msg;
	size_t len = 0;

	if (lseek(fd, 0, SEEK_SET) < 0 || lev_read_fd(fd, "stderr", SPAWN_OUT_MAX, &out, &len,
						     NULL) < 0)
		return xstrdup("lev failed");
	while (len && out[len - 1] == '\n')
		out[--len] = '\0';
	line = strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out;
	msg = strstr(line, ": error: ") ? strstr(line, ": error: ") + 9
	      : strchr(line, ':')	  ? strchr(line, ':') + 2 : line;
	msg = xstrdup(*msg ? msg : "lev failed");
	free(out);
	return msg;
}

/*
 * What a lev command printed: one JSON object or array, or JSON lines (an
 * event log, as `lev logs` prints it) as an array of them; NULL otherwise.
 */
static json_t *parse_output(const char *o, size_t len)
{
	json_t *j = json_loadb(o, len, JSON_REJECT_DUPLICATES, NULL), *arr;
	const char *p = o, *end = o + len;

	if (json_is_object(j) || json_is_array(j))
		return j;
	json_decref(j);
	arr = json_array();
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n && json_array_append_new(arr, json_loadb(p, n, JSON_REJECT_DUPLICATES,
							      NULL)) < 0) {
			json_decref(arr);
			return NULL;
		}
		p += n + 1;
	}
	return arr;
}

/*
 * Run this lev with ARGV (TEXT, may be NULL, on its standard input, no
 * terminal): 0, its exit status in *status and what it printed, parsed, in
 * *out (a new reference, NULL when it was not one JSON object or array), *why (owned)
 * the last error line it printed when it exited non-zero.
 */
static int run_lev(const struct serve *s, char **argv, const char *text, int *status,
		   json_t **out, char **why, struct lev_err *err)
{
	_cleanup_close_ int in = -1, ofd = -1, efd = -1;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	char *o = NULL;
	size_t len;
	pid_t pid;
	int r, st;

	in = memfd_with("stdin", text ? text : "", text ? strlen(text) : 0);
	ofd = memfd_with("stdout", NULL, 0);
	efd = memfd_with("stderr", NULL, 0);
	if (in < 0 || ofd < 0 || efd < 0 || lseek(in, 0, SEEK_SET) < 0)
		return lev_err_set(err, -errno, "cannot start lev: %s", strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	posix_spawn_file_actions_adddup2(&fa, ofd, 1);
	posix_spawn_file_actions_adddup2(&fa, efd, 2);
	posix_spawnattr_init(&at);
	/*
	 * No terminal: lev asks nothing of anybody, its guards refuse.  And
	 * none of the signals this server blocks (a daemon `lev run` starts
	 * would keep them blocked and never stop).
	 */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
				      POSIX_SPAWN_SETSIGDEF);
	r = posix_spawn(&pid, s->self, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (r)
		return lev_err_set(err, -r, "cannot start lev: %s", strerror(r));
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return lev_err_set(err, -errno, "lev: %s", strerror(errno));
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	*out = NULL;
	if (lseek(ofd, 0, SEEK_SET) == 0 &&
	    lev_read_fd(ofd, "stdout", LEV_OUT_MAX, &o, &len, NULL) == 0) {
		*out = parse_output(o, len);
		free(o);
	}
	*why = *status ? spawn_error(efd) : NULL;
	return 0;
}

/* A spawn's callback_url and callback_secret: both or neither, the URL one the policy allows. */
static int spawn_hook_check(const struct serve *s, const json_t *body, struct lev_err *err)
{
	const char *url = lev_json_str(body, "callback_url");
	const char *secret = lev_json_str(body, "callback_secret");

	if (!url && !secret)
		return 0;
	if (!url || !secret || !*secret)
		return lev_err_set(err, LEV_EPARSE, "fields 'callback_url' and 'callback_secret' go "
				   "together: a completion webhook is always signed");
	if (strlen(secret) > LEV_WEBHOOK_SECRET_MAX)	/* the daemon keeps no more */
		return lev_err_set(err, LEV_EPARSE, "field 'callback_secret': longer than %d bytes",
				   LEV_WEBHOOK_SECRET_MAX);
	return lev_webhook_check(url, s->hook_allow_local, err);
}

/* Hand RUN's webhook to the daemon, which delivers it when RUN ends (daemon/webhook.h). */
static int spawn_hook_give(const char *run, const json_t *body, struct lev_err *err)
{
	json_t *req = lev_proto_request("webhook"), *reply = NULL;
	int r;

	json_object_set_new(req, "run", json_string(run));
	json_object_set_new(req, "url", json_string(lev_json_str(body, "callback_url")));
	json_object_set_new(req, "secret", json_string(lev_json_str(body, "callback_secret")));
	r = lev_client_call(req, &reply, err);
	json_decref(req);
	json_decref(reply);
	return r;
}

static int spawn_run(void *ctx, const json_t *body, char **run, struct lev_err *err)
{
	const struct serve *s = ctx;
	const char *why = NULL;
	char **argv = spawn_argv(s, body, &why), *msg = NULL;
	json_t *out = NULL;
	int st, r;

	if (!argv)
		return lev_err_set(err, LEV_EPARSE, "%s", why);
	if ((r = spawn_hook_check(s, body, err)) < 0) {
		lev_strv_free(argv);
		return r;
	}
	r = run_lev(s, argv, lev_json_str(body, "task"), &st, &out, &msg, err);
	lev_strv_free(argv);
	if (r < 0)
		return r;
	/* lev run --detach --json prints Leviath's spawn object: {"run_id", ...} */
	if (st || !lev_json_str(out, "run_id")) {
		r = lev_err_set(err, st && st < 128 ? LEV_EPARSE : -EIO, "the run was not started: %s",
				msg ? msg : "lev run said no run id");
		free(msg);
		json_decref(out);
		return r;
	}
	*run = xstrdup(lev_json_str(out, "run_id"));
	json_decref(out);
	if (lev_json_str(body, "callback_url") && spawn_hook_give(*run, body, err) < 0) {
		char why2[sizeof(err->msg)];

		snprintf(why2, sizeof(why2), "%s", err->msg);
		r = lev_err_set(err, -EIO, "run %s started, but the daemon did not take its "
				"webhook: %s", *run, why2);
		free(*run);
		*run = NULL;
		return r;
	}
	return 0;
}

/* A read-only lev command's --json, for the routes that show what it shows. */
static int lev_json(void *ctx, const char *const *args, json_t **out, struct lev_err *err)
{
	const struct serve *s = ctx;
	char **argv = lev_strv_push(NULL, s->self), *msg = NULL;
	int st, r;

	for (; *args; args++)
		argv = lev_strv_push(argv, *args);
	r = run_lev(s, argv, NULL, &st, out, &msg, err);
	lev_strv_free(argv);
	/* a command that failed and printed nothing is a failure, not an empty log */
	if (r == 0 && *out && st && json_is_array(*out) && !json_array_size(*out)) {
		json_decref(*out);
		*out = NULL;
	}
	if (r == 0 && !*out)
		r = lev_err_set(err, -EIO, "%s", msg ? msg : "lev printed no JSON");
	free(msg);
	return r;
}

/* ---- one request ------------------------------------------------------------- */

struct conn {
	struct lev_buf body;
	bool too_big;
};

static const char *hdr(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static const char *query(void *qctx, const char *key)
{
	return MHD_lookup_connection_value(qctx, MHD_GET_ARGUMENT_KIND, key);
}

/* Every reply's headers: no caching, no sniffing, CORS only for the one origin. */
static void add_headers(const struct serve *s, struct MHD_Connection *c, struct MHD_Response *r)
{
	const char *origin = hdr(c, "Origin");

	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	if (s->cors && origin && (lev_streq(s->cors, "*") || lev_streq(s->cors, origin))) {
		MHD_add_response_header(r, "Access-Control-Allow-Origin", s->cors);
		MHD_add_response_header(r, "Access-Control-Allow-Headers",
					"Authorization, Content-Type");
		MHD_add_response_header(r, "Access-Control-Allow-Methods",
					"GET, POST, PUT, DELETE, OPTIONS");
		MHD_add_response_header(r, "Vary", "Origin");
	}
}

static enum MHD_Result reply_with(const struct serve *s, struct MHD_Connection *c, unsigned st,
				  struct MHD_Response *r)
{
	enum MHD_Result ret;

	add_headers(s, c, r);
	ret = MHD_queue_response(c, st, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_json(const struct serve *s, struct MHD_Connection *c, unsigned st,
				  json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT);
	struct MHD_Response *r;

	json_decref(j);
	if (!text)
		text = xstrdup("{\"error\":\"the reply could not be encoded\"}");
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	if (st == 401)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
	return reply_with(s, c, st, r);
}

/* A JSON reply already encoded: J (consumed) is a JSON string holding its text. */
static enum MHD_Result reply_text(const struct serve *s, struct MHD_Connection *c, unsigned st,
				  json_t *j)
{
	struct MHD_Response *r;

	r = MHD_create_response_from_buffer(json_string_length(j), (void *)json_string_value(j),
					    MHD_RESPMEM_MUST_COPY);
	json_decref(j);
	MHD_add_response_header(r, "Content-Type", "application/json");
	return reply_with(s, c, st, r);
}

static enum MHD_Result reply_error(const struct serve *s, struct MHD_Connection *c, unsigned st,
				   const char *msg)
{
	return reply_json(s, c, st, json_pack("{s:s}", "error", msg));
}

/* The console's files, with no token: they hold no data, and the page asks for the token. */
static enum MHD_Result console(const struct serve *s, struct MHD_Connection *c, const char *url)
{
	const struct lev_console_file *f = lev_console_find(lev_streq(url, "/") ? "/index.html"
										 : url);
	struct MHD_Response *r;

	if (!f)
		return MHD_NO;
	r = MHD_create_response_from_buffer(f->len, (void *)f->data, MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, "Content-Type", f->type);
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'none'; script-src 'self'; style-src 'self'; "
				"connect-src 'self'; img-src 'self'; base-uri 'none'; "
				"form-action 'none'; frame-ancestors 'none'");
	return reply_with(s, c, 200, r);
}

static bool authorized(const struct serve *s, struct MHD_Connection *c)
{
	const char *a = hdr(c, MHD_HTTP_HEADER_AUTHORIZATION);

	return a && !strncmp(a, "Bearer ", 7) && lev_apibody_token_eq(a + 7, s->token);
}

/* ---- live events: the daemon's attach stream as server-sent events ----------- */

struct sse {
	int fd;			/* the follower's connection to the daemon */
	struct lev_buf out;	/* what is formatted and not yet handed to MHD */
	size_t off;
	bool ended;
	unsigned idle;
};

/* One daemon frame as an SSE event: "event: OP" and its JSON on one data line. */
static void sse_frame(struct sse *e, json_t *m)
{
	const char *op;
	/* a watch's frames are wrapped: one run's end is not the stream's */
	bool end = lev_streq(lev_json_str(m, "op"), "end");
	char *text = lev_serve_event_text(m, &op);

	(void)lev_buf_addf(&e->out, "event: %s\ndata: %s\n\n", op, text);
	free(text);
	if (end)
		e->ended = true;
}

/* Block until there is something to send (or the stream ends). */
static void sse_fill(struct sse *e)
{
	struct pollfd p = { .fd = e->fd, .events = POLLIN };
	json_t *m = NULL;

	while (!stopping && !e->ended && e->off == e->out.len) {
		int r = poll(&p, 1, SSE_POLL_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 && ++e->idle >= SSE_KEEPALIVE_POLLS) {
			e->idle = 0;
			(void)lev_buf_adds(&e->out, ": keepalive\n\n");
		}
		if (r <= 0)
			continue;
		e->idle = 0;
		if (lev_proto_recv(e->fd, &m, NULL) < 0 || !m) {
			e->ended = true;
			break;
		}
		sse_frame(e, m);
		json_decref(m);
	}
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sse *e = cls;
	size_t n;

	(void)pos;
	if (e->off == e->out.len) {
		lev_buf_reset(&e->out);
		e->off = 0;
		sse_fill(e);
	}
	if (e->off == e->out.len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	n = e->out.len - e->off < max ? e->out.len - e->off : max;
	memcpy(buf, e->out.buf + e->off, n);
	e->off += n;
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	struct sse *e = cls;

	close(e->fd);
	lev_buf_release(&e->out);
	free(e);
}

/* Follow RUN on a new daemon connection (*fd): 0, or the HTTP status and *err. */
static unsigned attach(const char *run, int *fd, struct lev_err *err)
{
	json_t *req = lev_proto_request("attach"), *reply = NULL;
	int rc;

	json_object_set_new(req, "run", json_string(run));
	rc = lev_client_open(req, fd, &reply, err);
	json_decref(req);
	json_decref(reply);
	return rc < 0 ? (rc == -EREMOTEIO ? 404 : 503) : 0;
}

/*
 * Follow every run on a new daemon connection (*fd), the daemon's `watch`:
 * each run's frames wrapped with its id, runs started later included.
 */
static unsigned watch_all(int *fd, struct lev_err *err)
{
	json_t *req = lev_proto_request("watch"), *reply = NULL;
	int rc = lev_client_open(req, fd, &reply, err);

	json_decref(req);
	json_decref(reply);
	return rc < 0 ? (rc == -EREMOTEIO ? 502 : 503) : 0;
}

/* RUN's stream, or every run's (RUN NULL). */
static unsigned follow_stream(const char *run, int *fd, struct lev_err *err)
{
	return run ? attach(run, fd, err) : watch_all(fd, err);
}

static enum MHD_Result events(const struct serve *s, struct MHD_Connection *c, const char *run)
{
	struct lev_err err = LEV_ERR_INIT;
	struct MHD_Response *r;
	struct sse *e;
	unsigned st;
	int fd = -1;

	st = follow_stream(run, &fd, &err);
	if (st)
		return reply_error(s, c, st, err.msg);
	e = xcalloc(1, sizeof(*e));
	e->fd = fd;
	lev_buf_init(&e->out, (size_t)16 << 20);
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 << 10, sse_read, e, sse_free);
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	return reply_with(s, c, 200, r);
}

/* ---- live events over WebSocket: MHD's upgrade, libwslay's frames (serve/ws.c) -- */

struct wsup {
	int dfd;		/* the follower's connection to the daemon */
	MHD_socket sock;
	struct MHD_UpgradeResponseHandle *urh;
	char *extra;
	size_t n;
};

static void *ws_thread(void *p)
{
	struct wsup *u = p;

	lev_ws_follow(u->sock, u->extra, u->n, u->dfd, &stopping);
	close(u->dfd);
	MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
	free(u->extra);
	free(u);
	return NULL;
}

/* The connection is a WebSocket now: one thread of its own follows the run. */
static void ws_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra,
			size_t n, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct wsup *u = cls;
	pthread_attr_t at;
	pthread_t t;

	(void)c, (void)con_cls;
	u->sock = sock;
	u->urh = urh;
	u->extra = n ? xmemdup(extra, n) : NULL;
	u->n = n;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, ws_thread, u) != 0) {
		close(u->dfd);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		free(u->extra);
		free(u);
	}
	pthread_attr_destroy(&at);
}

/*
 * A page may open the stream only from this server's own origin or the
 * --cors one: a browser sends any site's page's WebSocket with no CORS
 * check of its own.  No Origin at all is not a browser; the token decides.
 */
static bool ws_origin_ok(const struct serve *s, struct MHD_Connection *c)
{
	const char *o = hdr(c, "Origin"), *host = hdr(c, "Host");
	_cleanup_free_ char *self = NULL;

	if (!o)
		return true;
	if (s->cors && (lev_streq(s->cors, "*") || lev_streq(s->cors, o)))
		return true;
	if (!host)
		return false;
	self = xasprintf("%s://%s", s->tls ? "https" : "http", host);
	return lev_streq(o, self);
}

static bool has_word(const char *v, const char *word)
{
	return v && strcasestr(v, word);
}

/*
 * GET /ws/agents/{id}?token=T (one run) or GET /ws?token=T (every run): the
 * checks, the follower, then 101.
 */
static enum MHD_Result ws_handshake(const struct serve *s, struct MHD_Connection *c,
				    const char *url)
{
	bool all = lev_streq(url, "/ws");
	const char *tok = query(c, "token"), *run = all ? NULL : url + strlen("/ws/agents/");
	char accept[LEV_WS_ACCEPT_LEN + 1];
	struct lev_err err = LEV_ERR_INIT;
	struct MHD_Response *r;
	struct wsup *u;
	unsigned st;
	int fd = -1;

	if (!all && (!lev_startswith(url, "/ws/agents/") || !*run || strchr(run, '/')))
		return reply_error(s, c, 404, "no such stream: /ws/agents/{id} follows one run, "
					      "/ws every run");
	if (!(tok && lev_apibody_token_eq(tok, s->token)) && !authorized(s, c))
		return reply_error(s, c, 401, "a token is required: ?token=TOKEN");
	if (!ws_origin_ok(s, c))
		return reply_error(s, c, 403, "this Origin may not open the stream "
					      "(only the server's own, or --cors)");
	if (!has_word(hdr(c, "Upgrade"), "websocket") || !has_word(hdr(c, "Connection"), "upgrade"))
		return reply_error(s, c, 400, "not a WebSocket handshake: 'Upgrade: websocket' "
					      "and 'Connection: Upgrade' are required");
	if (!lev_streq(hdr(c, "Sec-WebSocket-Version"), "13")) {
		r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "Sec-WebSocket-Version", "13");
		return reply_with(s, c, 426, r);
	}
	if (lev_ws_accept(hdr(c, "Sec-WebSocket-Key"), accept) < 0)
		return reply_error(s, c, 400, "header 'Sec-WebSocket-Key' is not 16 bytes in base64");
	st = follow_stream(run, &fd, &err);
	if (st)
		return reply_error(s, c, st, err.msg);
	u = xcalloc(1, sizeof(*u));
	u->dfd = fd;
	r = MHD_create_response_for_upgrade(ws_upgraded, u);
	MHD_add_response_header(r, MHD_HTTP_HEADER_UPGRADE, "websocket");
	MHD_add_response_header(r, "Sec-WebSocket-Accept", accept);
	return reply_with(s, c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
}

/* ---- the access handler --------------------------------------------------------- */

static enum MHD_Result api(const struct serve *s, struct MHD_Connection *c, const char *url,
			   const char *method, struct conn *k)
{
	struct lev_api_call call = {
		.method = method, .path = url, .body = k->body.buf, .len = k->body.len,
		.query = query, .qctx = c,
	};
	enum lev_api_kind kind;
	json_t *reply = NULL;
	char *run = NULL;
	unsigned st;
	enum MHD_Result ret;

	if (k->too_big)
		return reply_error(s, c, 413, "the body is over the 65536 bytes allowed");
	st = lev_api_dispatch(&s->api, &call, &kind, &run, &reply);
	if (kind == LEV_API_OPENAPI)
		ret = reply_json(s, c, 200, lev_api_openapi(&s->api));
	else if (kind == LEV_API_EVENTS)
		ret = events(s, c, run);
	else if (kind == LEV_API_TEXT && json_is_string(reply))
		ret = reply_text(s, c, st, reply);
	else
		ret = reply_json(s, c, st, reply);
	free(run);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	const struct serve *s = cls;
	struct conn *k = *con_cls;

	(void)version;
	if (!k) {
		k = xcalloc(1, sizeof(*k));
		lev_buf_init(&k->body, LEV_APIBODY_MAX + 1);
		*con_cls = k;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!k->too_big && lev_buf_add(&k->body, upload, *upload_size) < 0)
			k->too_big = true;
		*upload_size = 0;
		return MHD_YES;
	}
	if (lev_streq(method, "OPTIONS"))
		return reply_with(s, c, s->cors ? 204 : 403,
				  MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT));
	if (lev_streq(method, "GET") && !lev_startswith(url, "/api/") &&
	    lev_console_find(lev_streq(url, "/") ? "/index.html" : url))
		return console(s, c, url);
	if (lev_streq(method, "GET") && (lev_streq(url, "/ws") || lev_startswith(url, "/ws/")))
		return ws_handshake(s, c, url);
	if (!authorized(s, c))
		return reply_error(s, c, 401, "a bearer token is required: "
					      "'Authorization: Bearer TOKEN'");
	return api(s, c, url, method, k);
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
		 enum MHD_RequestTerminationCode why)
{
	struct conn *k = *con_cls;

	(void)cls, (void)c, (void)why;
	if (!k)
		return;
	lev_buf_release(&k->body);
	free(k);
	*con_cls = NULL;
}

/* One line a request, on stderr: the method, the path, never the query or a header. */
static void *log_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls, (void)c;
	fprintf(stderr, "lev serve: %.*s\n", (int)strcspn(uri, "?"), uri);
	return NULL;
}

/* ---- the command ------------------------------------------------------------- */

struct serve_args {
	unsigned port;
	const char *host, *token, *cors, *cert, *key;
	bool admin;
};

static int parse_args(int argc, char **argv, struct serve_args *a)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "host", required_argument, NULL, 'H' },
		{ "token", required_argument, NULL, 't' },
		{ "cors", required_argument, NULL, 'c' },
		{ "tls-cert", required_argument, NULL, 'C' },
		{ "tls-key", required_argument, NULL, 'K' },
		{ "allow-admin", no_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t port;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (lev_parse_u64(optarg, &port) < 0 || port > 65535)
				return lev_usage_error("serve", "--port takes 0 to 65535, got '%s'",
						       optarg);
			a->port = (unsigned)port;
			break;
		case 'H': a->host = optarg; break;
		case 't': a->token = optarg; break;
		case 'c': a->cors = optarg; break;
		case 'C': a->cert = optarg; break;
		case 'K': a->key = optarg; break;
		case 'A': a->admin = true; break;
		default:
			if (optopt)
				return lev_usage_error("serve", "option '%s' needs a value",
						       argv[optind - 1]);
			return lev_usage_error("serve", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return lev_usage_error("serve", "unexpected argument '%s'", argv[optind]);
	if (!a->cert != !a->key)
		return lev_usage_error("serve", "--tls-cert and --tls-key go together");
	return 0;
}

/* The token: --token, else LEVIATH_API_TOKEN (then unset: no run inherits it). */
static int take_token(const struct serve_args *a, char **out)
{
	const char *t = a->token ? a->token : getenv("LEVIATH_API_TOKEN");

	if (!t || !*t)
		return lev_fail("lev serve needs a token: --token TOKEN or LEVIATH_API_TOKEN "
				"(try: export LEVIATH_API_TOKEN=$(openssl rand -hex 16))");
	if (strlen(t) < TOKEN_MIN)
		return lev_fail("the token is %zu characters; it needs at least %d",
				strlen(t), TOKEN_MIN);
	*out = xstrdup(t);
	unsetenv("LEVIATH_API_TOKEN");
	return 0;
}

static int read_pem(const char *what, const char *path, char **out)
{
	struct lev_err err = LEV_ERR_INIT;
	size_t len;

	if (lev_read_file(path, (size_t)1 << 20, out, &len, &err) < 0)
		return lev_fail("%s: %s", what, err.msg);
	return 0;
}

static struct MHD_Daemon *start(struct serve *s, const struct serve_args *a,
				const struct sockaddr *sa, char *cert, char *key)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_ALLOW_UPGRADE |
			 (sa->sa_family == AF_INET6 ? MHD_USE_IPv6 : 0) | (cert ? MHD_USE_TLS : 0);

	(void)a;
	if (cert)
		return MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
			MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_CONNECTION_LIMIT, CONN_MAX,
			MHD_OPTION_CONNECTION_TIMEOUT, 120u,
			MHD_OPTION_NOTIFY_COMPLETED, done, s, MHD_OPTION_URI_LOG_CALLBACK, log_uri, s,
			MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
			MHD_OPTION_END);
	return MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
		MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_CONNECTION_LIMIT, CONN_MAX,
		MHD_OPTION_CONNECTION_TIMEOUT, 120u,
		MHD_OPTION_NOTIFY_COMPLETED, done, s, MHD_OPTION_URI_LOG_CALLBACK, log_uri, s,
		MHD_OPTION_END);
}

/* Serve until SIGINT or SIGTERM. */
static int serve_until_signal(struct serve *s, const struct serve_args *a)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(a->port) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(a->port) };
	const struct sockaddr *sa = (const struct sockaddr *)&a4;
	_cleanup_free_ char *cert = NULL, *key = NULL;
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *d;
	sigset_t set;
	int sig;

	if (inet_pton(AF_INET, a->host, &a4.sin_addr) != 1) {
		if (inet_pton(AF_INET6, a->host, &a6.sin6_addr) != 1)
			return lev_fail("--host: '%s' is not an IPv4 or IPv6 address", a->host);
		sa = (const struct sockaddr *)&a6;
	}
	s->tls = a->cert != NULL;
	if (a->cert && (read_pem("--tls-cert", a->cert, &cert) || read_pem("--tls-key", a->key, &key)))
		return LEV_EXIT_FAIL;
	{
		struct lev_err err = LEV_ERR_INIT;

		if (lev_mhdapi_load(&err) < 0)
			return lev_fail("%s", err.msg);
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);	/* the server's threads inherit it */
	d = start(s, a, sa, cert, key);
	if (!d)
		return lev_fail("cannot serve on %s port %u: %s", a->host, a->port,
				errno ? strerror(errno) : "libmicrohttpd refused the set-up");
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	fprintf(stderr, "lev serve: listening on %s://%s%s%s:%u/\n", cert ? "https" : "http",
		sa->sa_family == AF_INET6 ? "[" : "", a->host, sa->sa_family == AF_INET6 ? "]" : "",
		info ? info->port : a->port);
	sigdelset(&set, SIGPIPE);
	while (sigwait(&set, &sig) != 0)
		;
	atomic_store(&stopping, true);
	MHD_stop_daemon(d);
	return LEV_EXIT_OK;
}

/*
 * Each request runs on a thread of its own, and a page of runs is a few
 * MB of short-lived JSON: kept in malloc's heap rather than mapped and
 * unmapped (or trimmed) every time, the next request finds it faulted in
 * (a 1,000-run page cost lev serve more in page faults than in parsing).
 */
static void keep_heap(void)
{
	(void)mallopt(M_MMAP_THRESHOLD, 16 << 20);
	(void)mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

int cmd_serve(int argc, char **argv, struct lev_ctx *ctx)
{
	struct serve_args a = { .port = 3000, .host = "127.0.0.1" };
	struct serve s = { 0 };
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	if (lev_setup(ctx, CMD_NEEDS_CONFIG) < 0)	/* [security] allow_local_network: webhooks */
		return LEV_EXIT_FAIL;
	if (take_token(&a, &s.token) != 0)
		return LEV_EXIT_FAIL;
	s.self = realpath("/proc/self/exe", NULL);
	if (!s.self) {
		free(s.token);
		return lev_fail("cannot find this lev binary: %s", strerror(errno));
	}
	s.cors = a.cors;
	s.api.allow_admin = a.admin;
	s.api.spawn = spawn_run;
	s.api.spawn_ctx = &s;
	s.api.lev_json = lev_json;
	s.hook_allow_local = ctx->cfg.allow_local_network;
	keep_heap();
	rc = serve_until_signal(&s, &a);
	explicit_bzero(s.token, strlen(s.token));
	free(s.token);
	free(s.self);
	return rc;
}
