/*
 * mcp.c - the stdio MCP client (mcp.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/termtext.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "lev-version.h"
#include "liblev/policy/argcheck.h"
#include "liblev/tools/mcp-http.h"
#include "liblev/tools/mcp.h"

const char *const lev_mcp_versions[] = { "2025-06-18", "2025-03-26", "2024-11-05", NULL };

#define CHUNK (64 * 1024)
#define ERRTAIL 2048
#define NAME_MAX_LEN 128

/* What reading one message gave besides a message. */
enum {
	MSG_OK = 0,
	MSG_TOO_BIG = 1,	/* a line over the cap was (or is being) thrown away */
	MSG_BAD = 2,		/* a line that is not a JSON object */
};

struct lev_mcp_server {
	const struct lev_mcp_server_conf *conf;
	struct lev_sandbox_proc *proc;	/* stdio */
	struct lev_mcp_http *http;	/* streamable HTTP (then no proc and no fds) */
	int in_fd, out_fd, err_fd;
	int reap_timer;			/* the proc's cancel_fd: armed once it is gone */
	struct lev_buf rbuf;		/* unread bytes from the server's stdout */
	size_t rpos;
	bool discarding;		/* inside a line over the cap */
	char errtail[ERRTAIL];		/* the end of its standard error */
	size_t errtail_len;
	uint64_t timeout_ms, max_bytes;
	int64_t next_id;
	char *dead;			/* why it is gone, or NULL */
	bool list_stale;		/* notifications/tools/list_changed arrived */
	char *version, *info;
	struct lev_mcp_tool *tools;	/* as listed at start-up: the pins */
	size_t n_tools;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- names and pins --------------------------------------------------- */

char *lev_mcp_qualified_name(const char *server, const char *tool)
{
	char *q = xasprintf("%s__%s", server, tool);

	for (char *p = q; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			*p = '_';
	return q;
}

void lev_mcp_pin(const char *name, const char *description, const json_t *schema,
		 char out[LEV_SHA256_HEX_LEN + 1])
{
	struct lev_sha256 c;
	uint8_t d[LEV_SHA256_LEN];
	_cleanup_free_ char *js = json_dumps(schema, JSON_COMPACT | JSON_SORT_KEYS);

	lev_sha256_init(&c);
	lev_sha256_update(&c, name, strlen(name) + 1);
	lev_sha256_update(&c, description, strlen(description) + 1);
	if (js)
		lev_sha256_update(&c, js, strlen(js));
	lev_sha256_final(&c, d);
	lev_sha256_hex(d, out);
}

static char *safe_text(const char *s, size_t len, size_t max)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(max);

	lev_termtext_add(&b, s, len);
	return lev_buf_detach(&b, NULL);
}

static void tools_release(struct lev_mcp_tool *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].description);
		json_decref(v[i].schema);
		free(v[i].unusable);
		free(v[i].changed);
	}
	free(v);
}

/* ---- the pipes -------------------------------------------------------- */

static void drain_stderr(struct lev_mcp_server *s)
{
	char chunk[4096];
	ssize_t n = read(s->err_fd, chunk, sizeof(chunk));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_fd(&s->err_fd);
		return;
	}
	if ((size_t)n >= ERRTAIL) {
		memcpy(s->errtail, chunk + n - ERRTAIL, ERRTAIL);
		s->errtail_len = ERRTAIL;
		return;
	}
	if (s->errtail_len + (size_t)n > ERRTAIL) {
		size_t drop = s->errtail_len + (size_t)n - ERRTAIL;

		memmove(s->errtail, s->errtail + drop, s->errtail_len - drop);
		s->errtail_len -= drop;
	}
	memcpy(s->errtail + s->errtail_len, chunk, (size_t)n);
	s->errtail_len += (size_t)n;
}

/* The end of the server's standard error, one line, terminal-safe ("" when none). */
static char *stderr_note(const struct lev_mcp_server *s)
{
	size_t start = 0, len = s->errtail_len;
	_cleanup_free_ char *t = NULL;

	while (len && (s->errtail[len - 1] == '\n' || s->errtail[len - 1] == '\r'))
		len--;
	for (size_t i = 0; i < len; i++)
		if (s->errtail[i] == '\n')
			start = i + 1;
	if (start >= len)
		return xstrdup("");
	t = safe_text(s->errtail + start, len - start, 512);
	return xasprintf(" (its last error output: %s)", t);
}

/*
 * Wait until FD is ready for EVENTS (draining stderr meanwhile), the
 * deadline passes (-ETIMEDOUT) or CANCEL_FD is readable (-ECANCELED).
 */
static int wait_fd(struct lev_mcp_server *s, int fd, short events, uint64_t deadline,
		   int cancel_fd)
{
	for (;;) {
		struct pollfd pf[3] = { { fd, events, 0 }, { s->err_fd, POLLIN, 0 },
					{ cancel_fd, POLLIN, 0 } };
		uint64_t now = lev_monotonic_ms();
		int n;

		if (now >= deadline)
			return -ETIMEDOUT;
		n = poll(pf, 3, (int)(deadline - now > 60000 ? 60000 : deadline - now));
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (pf[2].revents)
			return -ECANCELED;
		if (pf[1].revents)
			drain_stderr(s);
		if (pf[0].revents)
			return 0;
	}
}

static int write_all(struct lev_mcp_server *s, const char *p, size_t len, uint64_t deadline,
		     int cancel_fd)
{
	while (len) {
		/* a server that has exited is EPIPE, never a SIGPIPE */
		ssize_t n = lev_write_nosig(s->in_fd, p, len);
		int r;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		r = wait_fd(s, s->in_fd, POLLOUT, deadline, cancel_fd);
		if (r < 0)
			return r;
	}
	return 0;
}

static int send_json(struct lev_mcp_server *s, json_t *msg, uint64_t deadline, int cancel_fd)
{
	_cleanup_free_ char *t = json_dumps(msg, JSON_COMPACT);
	_cleanup_free_ char *line = NULL;

	json_decref(msg);
	if (!t)
		return -ENOMEM;
	if (s->http) {
		/* a notification or an answer: whatever comes back is not awaited */
		struct lev_err e = LEV_ERR_INIT;
		json_t *msgs = NULL;
		uint64_t now = lev_monotonic_ms();
		int r = lev_mcp_http_post(s->http, t, deadline > now ? deadline - now : 1,
					  s->max_bytes, &msgs, &e);

		json_decref(msgs);
		return r;
	}
	line = xasprintf("%s\n", t);
	return write_all(s, line, strlen(line), deadline, cancel_fd);
}

/* One complete line out of the read buffer, or NULL. */
static char *take_line(struct lev_mcp_server *s, size_t *len)
{
	char *start = s->rbuf.buf + s->rpos;
	char *nl = memchr(start, '\n', s->rbuf.len - s->rpos);
	char *line;

	if (!nl)
		return NULL;
	*len = (size_t)(nl - start);
	line = xmemdup(start, *len + 1);
	line[*len] = '\0';
	s->rpos += *len + 1;
	if (s->rpos == s->rbuf.len) {
		lev_buf_reset(&s->rbuf);
		s->rpos = 0;
	}
	return line;
}

/* Read one chunk; MSG_TOO_BIG when the line in progress just passed the cap. */
static int read_chunk(struct lev_mcp_server *s)
{
	char chunk[CHUNK];
	ssize_t n = read(s->out_fd, chunk, sizeof(chunk));
	const char *p = chunk, *nl;
	size_t done;

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (n == 0)
		return -EPIPE;
	if (s->discarding) {
		nl = memchr(chunk, '\n', (size_t)n);
		if (!nl)
			return 0;
		s->discarding = false;
		n -= nl + 1 - chunk;
		p = nl + 1;
	}
	if (s->rpos) {
		size_t rest = s->rbuf.len - s->rpos;

		memmove(s->rbuf.buf, s->rbuf.buf + s->rpos, rest);
		lev_buf_truncate(&s->rbuf, rest);
		s->rpos = 0;
	}
	if (lev_buf_add(&s->rbuf, p, (size_t)n) < 0)
		return -ENOMEM;
	/* the line in progress (after the last newline) stays within the cap */
	nl = memrchr(s->rbuf.buf, '\n', s->rbuf.len);
	done = nl ? (size_t)(nl - s->rbuf.buf) + 1 : 0;
	if (s->rbuf.len - done > s->max_bytes) {
		lev_buf_truncate(&s->rbuf, done);
		s->discarding = true;
		return MSG_TOO_BIG;
	}
	return 0;
}

/* The next message: MSG_OK with *out, MSG_TOO_BIG, MSG_BAD, or -errno. */
static int read_message(struct lev_mcp_server *s, uint64_t deadline, int cancel_fd, json_t **out)
{
	for (;;) {
		size_t len = 0;
		_cleanup_free_ char *line = take_line(s, &len);
		int r;

		if (line) {
			json_t *j;

			if (len > s->max_bytes)
				return MSG_TOO_BIG;
			if (len == 0 || (len == 1 && line[0] == '\r'))
				continue;
			j = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
			if (!json_is_object(j)) {
				json_decref(j);
				return MSG_BAD;
			}
			*out = j;
			return MSG_OK;
		}
		if (s->out_fd < 0)
			return -EPIPE;
		r = wait_fd(s, s->out_fd, POLLIN, deadline, cancel_fd);
		if (r == 0)
			r = read_chunk(s);
		if (r != 0)
			return r;
	}
}

/* ---- JSON-RPC --------------------------------------------------------- */

/* The server is gone: learn how, once. */
static void mark_dead(struct lev_mcp_server *s)
{
	struct lev_sandbox_result res;
	struct lev_err e = LEV_ERR_INIT;
	_cleanup_free_ char *note = NULL;

	if (s->dead)
		return;
	close_fd(&s->in_fd);
	close_fd(&s->out_fd);
	while (s->err_fd >= 0 && wait_fd(s, s->err_fd, POLLIN, lev_monotonic_ms() + 1000, -1) == 0)
		drain_stderr(s);
	note = stderr_note(s);
	{
		/* a server that closed its pipes but lives on is killed after a grace */
		struct itimerspec its = { .it_value = { .tv_sec = 2 } };

		(void)timerfd_settime(s->reap_timer, 0, &its, NULL);
	}
	if (lev_sandbox_wait(s->proc, &res, &e) < 0)
		s->dead = xasprintf("could not start: %s%s", e.msg, note);
	else if (res.exec_errno)
		s->dead = xasprintf("could not run '%s': %s%s", s->conf->command,
				    strerror(res.exec_errno), note);
	else if (res.cancelled)
		s->dead = xasprintf("closed its output and was killed%s", note);
	else if (res.signaled)
		s->dead = xasprintf("was killed by signal %d%s", res.signal, note);
	else
		s->dead = xasprintf("exited with code %d%s", res.exit_code, note);
	lev_sandbox_result_release(&res);
}

static json_t *rpc_msg(const char *method, json_t *params, int64_t id)
{
	json_t *m = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);

	if (id > 0)
		json_object_set_new(m, "id", json_integer(id));
	if (params)
		json_object_set_new(m, "params", params);
	return m;
}

/* A request from the server: ping is answered, anything else is not supported. */
static void answer_server(struct lev_mcp_server *s, json_t *m, uint64_t deadline)
{
	const char *method = json_string_value(json_object_get(m, "method"));
	json_t *a = json_pack("{s:s, s:O}", "jsonrpc", "2.0", "id", json_object_get(m, "id"));

	if (method && !strcmp(method, "ping"))
		json_object_set_new(a, "result", json_object());
	else
		json_object_set_new(a, "error", json_pack("{s:i, s:s}", "code", -32601, "message",
							  "lev does not offer this method"));
	(void)send_json(s, a, deadline, -1);
}

static void send_cancel(struct lev_mcp_server *s, int64_t id, const char *why)
{
	json_t *p = json_pack("{s:I, s:s}", "requestId", (json_int_t)id, "reason", why);

	(void)send_json(s, rpc_msg("notifications/cancelled", p, 0), lev_monotonic_ms() + 1000, -1);
}

/* Why a request failed, as an error naming the server; fills ERR, returns its code. */
static int rpc_fail(struct lev_mcp_server *s, const char *method, int r, struct lev_err *err)
{
	const char *n = s->conf->name;

	switch (r) {
	case MSG_TOO_BIG:
		return lev_err_set(err, -EMSGSIZE, "MCP server '%s' answered '%s' with more than "
				   "%llu bytes (max_result_bytes)", n, method,
				   (unsigned long long)s->max_bytes);
	case MSG_BAD:
		return lev_err_set(err, LEV_EPARSE, "MCP server '%s' sent a line that is not a "
				   "JSON-RPC message while lev waited for '%s'", n, method);
	case -ETIMEDOUT:
		return lev_err_set(err, -ETIMEDOUT, "MCP server '%s' did not answer '%s' within "
				   "%llu s (timeout_secs)", n, method,
				   (unsigned long long)s->timeout_ms / 1000);
	case -ECANCELED:
		return lev_err_set(err, -ECANCELED, "'%s' to MCP server '%s' was cancelled",
				   method, n);
	default:
		mark_dead(s);
		return lev_err_set(err, -EPIPE, "MCP server '%s' %s", n, s->dead);
	}
}

static int rpc_error(struct lev_mcp_server *s, const char *method, const json_t *e,
		     struct lev_err *err)
{
	const char *msg = json_string_value(json_object_get(e, "message"));
	_cleanup_free_ char *t = safe_text(msg ? msg : "", msg ? strlen(msg) : 0, 1024);

	return lev_err_set(err, -EPROTO, "MCP server '%s' answered '%s' with error %lld: %s",
			   s->conf->name, method,
			   (long long)json_integer_value(json_object_get(e, "code")), t);
}

/* What the server sent with its answer: a request is answered, a notification noted. */
static void http_other(struct lev_mcp_server *s, json_t *m)
{
	const char *mm = json_string_value(json_object_get(m, "method"));

	if (json_object_get(m, "id"))
		answer_server(s, m, lev_monotonic_ms() + 1000);
	else if (mm && !strcmp(mm, "notifications/tools/list_changed"))
		s->list_stale = true;
}

/* rpc() over HTTP: MSG (taken) is one POST; its answer comes with the response. */
static int rpc_http(struct lev_mcp_server *s, const char *method, json_t *msg, int64_t id,
		    json_t **result, struct lev_err *err)
{
	_cleanup_free_ char *t = json_dumps(msg, JSON_COMPACT);
	struct lev_err e = LEV_ERR_INIT;
	json_t *msgs = NULL, *m, *answer = NULL;
	size_t i;
	int r;

	json_decref(msg);
	r = t ? lev_mcp_http_post(s->http, t, s->timeout_ms, s->max_bytes, &msgs, &e) : -ENOMEM;
	if (r == -EFBIG || r == -ETIMEDOUT) {
		send_cancel(s, id, "lev gave up");
		return rpc_fail(s, method, r == -EFBIG ? MSG_TOO_BIG : r, err);
	}
	if (r < 0)
		return lev_err_set(err, r, "%s", e.msg);
	json_array_foreach(msgs, i, m) {
		const json_t *mid = json_object_get(m, "id");

		if (json_object_get(m, "method"))
			http_other(s, m);
		else if (!answer && json_is_integer(mid) && json_integer_value(mid) == id)
			answer = m;
	}
	if (!answer)
		r = lev_err_set(err, -EPROTO, "MCP server '%s' answered '%s' without its result",
				s->conf->name, method);
	else if (json_object_get(answer, "error"))
		r = rpc_error(s, method, json_object_get(answer, "error"), err);
	else if (!json_is_object(json_object_get(answer, "result")))
		r = lev_err_set(err, LEV_EPARSE, "MCP server '%s' answered '%s' with a result that "
				"is not an object", s->conf->name, method);
	else
		*result = json_incref(json_object_get(answer, "result"));
	json_decref(msgs);
	return r;
}

/* Send METHOD with PARAMS (taken) and wait for its answer: *result is owned. */
static int rpc(struct lev_mcp_server *s, const char *method, json_t *params, int cancel_fd,
	       json_t **result, struct lev_err *err)
{
	uint64_t deadline = lev_monotonic_ms() + s->timeout_ms;
	int64_t id = ++s->next_id;
	int r;

	if (s->dead) {
		json_decref(params);
		return lev_err_set(err, -EPIPE, "MCP server '%s' %s", s->conf->name, s->dead);
	}
	if (s->http)
		return rpc_http(s, method, rpc_msg(method, params, id), id, result, err);
	r = send_json(s, rpc_msg(method, params, id), deadline, cancel_fd);
	while (r == 0) {
		json_t *m = NULL;
		const json_t *mid;

		r = read_message(s, deadline, cancel_fd, &m);
		if (r != MSG_OK)
			break;
		if (json_object_get(m, "method")) {
			const char *mm = json_string_value(json_object_get(m, "method"));

			if (json_object_get(m, "id"))
				answer_server(s, m, deadline);
			else if (mm && !strcmp(mm, "notifications/tools/list_changed"))
				s->list_stale = true;
			json_decref(m);
			continue;
		}
		mid = json_object_get(m, "id");
		if (!json_is_integer(mid) || json_integer_value(mid) != id) {
			json_decref(m);		/* an answer to a request we gave up on */
			continue;
		}
		if (json_object_get(m, "error"))
			r = rpc_error(s, method, json_object_get(m, "error"), err);
		else if (!json_is_object(json_object_get(m, "result")))
			r = rpc_fail(s, method, MSG_BAD, err);
		else
			*result = json_incref(json_object_get(m, "result"));
		json_decref(m);
		return r;
	}
	if (r == MSG_TOO_BIG || r == MSG_BAD || r == -ETIMEDOUT || r == -ECANCELED)
		send_cancel(s, id, r == -ECANCELED ? "cancelled by the user" : "lev gave up");
	return rpc_fail(s, method, r, err);
}

/* ---- start-up --------------------------------------------------------- */

static int parse_tool(const json_t *j, struct lev_mcp_tool *t, struct lev_err *err)
{
	const char *name = json_string_value(json_object_get(j, "name"));
	const char *desc = json_string_value(json_object_get(j, "description"));
	json_t *schema = json_object_get(j, "inputSchema");
	struct lev_err e = LEV_ERR_INIT;

	if (!name || !*name || strlen(name) > NAME_MAX_LEN ||
	    strlen(name) != json_string_length(json_object_get(j, "name")))
		return lev_err_set(err, LEV_EPARSE, "a tool without a usable name");
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return lev_err_set(err, LEV_EPARSE, "a tool name with a control character");
	memset(t, 0, sizeof(*t));
	t->name = xstrdup(name);
	t->description = safe_text(desc ? desc : "", desc ? json_string_length(
				   json_object_get(j, "description")) : 0, 16 * 1024);
	t->schema = json_is_object(schema) ? json_deep_copy(schema)
					   : json_pack("{s:s}", "type", "object");
	lev_mcp_pin(t->name, t->description, t->schema, t->pin);
	if (lev_argcheck_schema(t->schema, &e) < 0)
		t->unusable = xasprintf("its input schema is outside what lev checks: %s", e.msg);
	return 0;
}

/* tools/list, every page: a fresh array into *out. */
static int list_tools(struct lev_mcp_server *s, struct lev_mcp_tool **out, size_t *n_out,
		      struct lev_err *err)
{
	struct lev_mcp_tool *v = NULL;
	_cleanup_free_ char *cursor = NULL;
	size_t n = 0;
	int r = 0;

	for (int page = 0; r == 0; page++) {
		json_t *res = NULL, *tools, *params = json_object(), *it;
		const char *next;
		size_t i;

		if (page == LEV_MCP_LIST_PAGES_MAX) {
			r = lev_err_set(err, -E2BIG, "MCP server '%s' lists more than %d pages of "
					"tools", s->conf->name, LEV_MCP_LIST_PAGES_MAX);
			json_decref(params);
			break;
		}
		if (cursor)
			json_object_set_new(params, "cursor", json_string(cursor));
		r = rpc(s, "tools/list", params, -1, &res, err);
		if (r < 0)
			break;
		tools = json_object_get(res, "tools");
		json_array_foreach(tools, i, it) {
			if (n == LEV_MCP_TOOLS_MAX) {
				r = lev_err_set(err, -E2BIG, "MCP server '%s' offers more than %d "
						"tools", s->conf->name, LEV_MCP_TOOLS_MAX);
				break;
			}
			v = xreallocarray(v, n + 1, sizeof(*v));
			if (parse_tool(it, &v[n], err) < 0) {
				r = lev_err_wrap(err, "MCP server '%s'", s->conf->name);
				break;
			}
			n++;
		}
		next = json_string_value(json_object_get(res, "nextCursor"));
		free(cursor);
		cursor = next && *next ? xstrdup(next) : NULL;
		json_decref(res);
		if (!cursor)
			break;
	}
	if (r < 0) {
		tools_release(v, n);
		return r;
	}
	*out = v;
	*n_out = n;
	return 0;
}

static int initialize(struct lev_mcp_server *s, struct lev_err *err)
{
	json_t *res = NULL, *params;
	const char *v, *name, *ver;
	size_t i;
	int r;

	params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", lev_mcp_versions[0],
			   "capabilities", "clientInfo", "name", "lev", "version", LEV_VERSION);
	r = rpc(s, "initialize", params, -1, &res, err);
	if (r < 0)
		return r;
	v = json_string_value(json_object_get(res, "protocolVersion"));
	for (i = 0; v && lev_mcp_versions[i] && strcmp(v, lev_mcp_versions[i]); i++)
		;
	if (!v || !lev_mcp_versions[i]) {
		_cleanup_free_ char *t = safe_text(v ? v : "", v ? strlen(v) : 0, 64);

		json_decref(res);
		return lev_err_set(err, -EPROTO, "MCP server '%s' speaks protocol version '%s'; lev "
				   "speaks %s, %s and %s", s->conf->name, t, lev_mcp_versions[0],
				   lev_mcp_versions[1], lev_mcp_versions[2]);
	}
	s->version = xstrdup(v);
	name = json_string_value(json_object_get(json_object_get(res, "serverInfo"), "name"));
	ver = json_string_value(json_object_get(json_object_get(res, "serverInfo"), "version"));
	{
		_cleanup_free_ char *t = xasprintf("%s%s%s", name ? name : "", ver ? " " : "",
						   ver ? ver : "");

		s->info = safe_text(t, strlen(t), 256);
	}
	json_decref(res);
	if (s->http)	/* every later POST carries it */
		lev_mcp_http_set_version(s->http, s->version);
	r = send_json(s, rpc_msg("notifications/initialized", NULL, 0), lev_monotonic_ms() + s->timeout_ms, -1);
	if (r < 0)
		return lev_err_errno(err, r, "MCP server '%s' did not take "
				     "'notifications/initialized'", s->conf->name);
	return 0;
}

static int spawn(struct lev_mcp_server *s, const struct lev_mcp_opts *o, struct lev_err *err)
{
	const struct lev_mcp_server_conf *c = o->conf;
	/* the server lives as long as the run: mark_dead() ends its wait */
	struct lev_sandbox_limits lim = {
		.timeout_ms = (uint64_t)86400 * 1000,
		.cpu_secs = 86400,
	};
	struct lev_sandbox_io io = LEV_SANDBOX_IO_CAPTURE;
	_cleanup_strv_ char **argv = lev_strv_push(NULL, c->command);
	_cleanup_strv_ char **envp = NULL;
	int p[2], r;

	for (char *const *a = c->args; a && *a; a++)
		argv = lev_strv_push(argv, *a);
	for (char *const *e = o->envp; e && *e; e++)
		envp = lev_strv_push(envp, *e);
	for (char *const *e = c->env; e && *e; e++) {
		char *x = NULL;

		/* the server's own env: ${VAR} is read here, withheld from commands */
		r = lev_mcp_expand(c->name, "its env", *e, &x, err);
		if (r < 0)
			return r;
		envp = lev_strv_push_take(envp, x);
	}
	s->reap_timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (s->reap_timer < 0)
		return lev_err_errno(err, -errno, "cannot make a timer");
	if (pipe2(p, O_CLOEXEC) < 0)
		return lev_err_errno(err, -errno, "cannot make a pipe");
	io.stdin_fd = p[0];
	io.cancel_fd = s->reap_timer;
	r = lev_sandbox_spawn(o->sandbox, argv, envp, c->cwd, &lim, &io, &s->proc, err);
	close(p[0]);
	if (r < 0) {
		close(p[1]);
		return lev_err_wrap(err, "MCP server '%s'", c->name);
	}
	s->in_fd = p[1];
	(void)fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
	if (lev_sandbox_proc_take_output(s->proc, &s->out_fd, &s->err_fd) < 0)
		return lev_err_set(err, LEV_EUNSUPP, "MCP server '%s': this sandbox cannot keep a "
				   "server's pipes open", c->name);
	return 0;
}

int lev_mcp_start(const struct lev_mcp_opts *o, struct lev_mcp_server **out, struct lev_err *err)
{
	struct lev_mcp_server *s;
	uint64_t call_ms;
	int r;

	if (!o || !o->conf || (!o->sandbox && o->conf->command))
		return lev_err_set(err, -EINVAL, "an MCP server needs a config and a sandbox");
	s = xcalloc(1, sizeof(*s));
	s->conf = o->conf;
	s->in_fd = s->out_fd = s->err_fd = s->reap_timer = -1;
	s->timeout_ms = (o->conf->timeout_secs ? o->conf->timeout_secs
					       : LEV_MCP_DEFAULT_TIMEOUT_SECS) * 1000;
	s->max_bytes = o->conf->max_result_bytes ? o->conf->max_result_bytes
						 : LEV_MCP_DEFAULT_RESULT_MAX;
	lev_buf_init(&s->rbuf, s->max_bytes + CHUNK + 1);
	if (o->conf->url)
		r = lev_mcp_http_new(o->conf, o->allow_local_network, o->store, &s->http, err);
	else
		r = spawn(s, o, err);
	/* start-up (an interpreter, npx) may take longer than a call */
	call_ms = s->timeout_ms;
	if (s->timeout_ms < LEV_MCP_START_TIMEOUT_MS)
		s->timeout_ms = LEV_MCP_START_TIMEOUT_MS;
	if (r == 0)
		r = initialize(s, err);
	if (r == 0)
		r = list_tools(s, &s->tools, &s->n_tools, err);
	s->timeout_ms = call_ms;
	if (r < 0) {
		lev_mcp_free(s);
		return r;
	}
	s->list_stale = false;	/* what came with start-up is what we listed */
	*out = s;
	return 0;
}

struct lev_mcp_server *lev_mcp_free(struct lev_mcp_server *s)
{
	if (!s)
		return NULL;
	close_fd(&s->in_fd);
	close_fd(&s->out_fd);
	close_fd(&s->err_fd);
	lev_sandbox_proc_free(s->proc);
	lev_mcp_http_free(s->http);
	close_fd(&s->reap_timer);
	lev_buf_release(&s->rbuf);
	free(s->dead);
	free(s->version);
	free(s->info);
	tools_release(s->tools, s->n_tools);
	free(s);
	return NULL;
}

const char *lev_mcp_name(const struct lev_mcp_server *s)
{
	return s->conf->name;
}

const char *lev_mcp_version(const struct lev_mcp_server *s)
{
	return s->version;
}

const char *lev_mcp_server_info(const struct lev_mcp_server *s)
{
	return s->info ? s->info : "";
}

size_t lev_mcp_tool_count(const struct lev_mcp_server *s)
{
	return s->n_tools;
}

const struct lev_mcp_tool *lev_mcp_tool_at(const struct lev_mcp_server *s, size_t i)
{
	return i < s->n_tools ? &s->tools[i] : NULL;
}

void lev_mcp_tool_refuse(struct lev_mcp_server *s, size_t i, const char *why)
{
	if (i < s->n_tools && !s->tools[i].unusable)
		s->tools[i].unusable = xstrdup(why);
}

/* ---- calls ------------------------------------------------------------ */

static const struct lev_mcp_tool *tool_named(const struct lev_mcp_tool *v, size_t n,
					     const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

/*
 * The list changed, or says it did: list again and compare every tool
 * with its pin.  A tool that changed or went away stays refused for the
 * rest of the run (its reason in ->changed).
 */
static void relist(struct lev_mcp_server *s)
{
	struct lev_err e = LEV_ERR_INIT;
	struct lev_mcp_tool *now = NULL;
	size_t n = 0;

	s->list_stale = false;
	if (list_tools(s, &now, &n, &e) < 0) {
		for (size_t i = 0; i < s->n_tools; i++)
			if (!s->tools[i].changed)
				s->tools[i].changed = xasprintf("its tool list cannot be read "
								"again: %s", e.msg);
		return;
	}
	for (size_t i = 0; i < s->n_tools; i++) {
		struct lev_mcp_tool *p = &s->tools[i];
		const struct lev_mcp_tool *t = tool_named(now, n, p->name);

		if (p->changed)
			continue;
		if (!t)
			p->changed = xstrdup("the tool is gone");
		else if (strcmp(t->pin, p->pin))
			p->changed = xasprintf("its %s changed", strcmp(t->description,
									p->description)
								     ? "description"
								     : "input schema");
	}
	tools_release(now, n);
}

/*
 * Read what the server sent since the last answer (a list_changed after
 * it, a ping) without waiting.
 */
static void read_pending(struct lev_mcp_server *s)
{
	for (;;) {
		struct pollfd pf = { s->out_fd, POLLIN, 0 };
		json_t *m = NULL;
		const char *method;
		int r;

		if (s->dead || s->out_fd < 0 || s->http)
			return;
		if (!memchr(s->rbuf.buf + s->rpos, '\n', s->rbuf.len - s->rpos) &&
		    poll(&pf, 1, 0) <= 0)
			return;
		r = read_message(s, lev_monotonic_ms() + 1000, -1, &m);
		if (r < 0 && r != -ETIMEDOUT) {
			mark_dead(s);
			return;
		}
		if (r != MSG_OK)
			return;
		method = json_string_value(json_object_get(m, "method"));
		if (method && json_object_get(m, "id"))
			answer_server(s, m, lev_monotonic_ms() + 1000);
		else if (method && !strcmp(method, "notifications/tools/list_changed"))
			s->list_stale = true;
		json_decref(m);
	}
}

static void render_content(const json_t *res, size_t max, struct lev_tool_output *out)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(max);
	const json_t *content = json_object_get(res, "content"), *it;
	size_t i;

	json_array_foreach(content, i, it) {
		const char *type = json_string_value(json_object_get(it, "type"));
		const json_t *text = json_object_get(it, "text");

		if (b.len)
			(void)lev_buf_addch(&b, '\n');
		if (type && !strcmp(type, "text") && json_is_string(text))
			lev_termtext_add(&b, json_string_value(text), json_string_length(text));
		else if (type && !strcmp(type, "resource") &&
			 json_is_string(json_object_get(json_object_get(it, "resource"), "text"))) {
			text = json_object_get(json_object_get(it, "resource"), "text");
			lev_termtext_add(&b, json_string_value(text), json_string_length(text));
		} else {
			_cleanup_free_ char *t = safe_text(type ? type : "?", type ? strlen(type)
										    : 1, 64);

			(void)lev_buf_addf(&b, "[%s content not shown]", t);
		}
	}
	if (!json_array_size(content) && json_object_get(res, "structuredContent")) {
		_cleanup_free_ char *js = json_dumps(json_object_get(res, "structuredContent"),
						     JSON_COMPACT);

		if (js)
			lev_termtext_add(&b, js, strlen(js));
	}
	free(out->text);
	out->truncated = b.len + 1 >= max;
	out->text = lev_buf_detach(&b, &out->len);
	out->is_error = json_is_true(json_object_get(res, "isError"));
}

int lev_mcp_call(struct lev_mcp_server *s, const char *tool, const json_t *args, int cancel_fd,
		 struct lev_tool_output *out, struct lev_err *err)
{
	const struct lev_mcp_tool *pinned;
	struct lev_err e = LEV_ERR_INIT;
	json_t *res = NULL, *params;
	int r;

	if (!s || !tool || !out)
		return lev_err_set(err, -EINVAL, "an MCP call needs a server, a tool and an output");
	pinned = tool_named(s->tools, s->n_tools, tool);
	if (!pinned)
		return lev_err_set(err, -ENOENT, "MCP server '%s' offers no tool '%s'",
				   s->conf->name, tool);
	read_pending(s);
	if (s->list_stale && !s->dead)
		relist(s);
	if (pinned->changed) {
		_cleanup_free_ char *t = xasprintf(
			"[changed] MCP server '%s' changed tool '%s' since lev listed it: %s; lev "
			"will not call it in this run", s->conf->name, tool, pinned->changed);

		lev_tool_output_set(out, t, true);
		return 0;
	}
	params = json_pack("{s:s, s:o}", "name", tool, "arguments",
			   args ? json_deep_copy(args) : json_object());
	r = rpc(s, "tools/call", params, cancel_fd, &res, &e);
	if (r < 0) {
		_cleanup_free_ char *t = xasprintf("[%s] %s",
						   r == -ETIMEDOUT ? "timed out"
						   : r == -ECANCELED ? "cancelled" : "error", e.msg);

		lev_tool_output_set(out, t, true);
		return 0;
	}
	render_content(res, s->max_bytes, out);
	json_decref(res);
	return 0;
}
