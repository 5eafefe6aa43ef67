/*
 * mock-model - a scripted model server (and small web fixture) on loopback,
 * so tests run the real HTTP client path without a real model.
 *
 *	mock-model --script FILE [--port-file FILE] [--record FILE]
 *
 * Listens on 127.0.0.1 on a port the kernel picks, prints "port N" on
 * stdout and, with --port-file, writes N to FILE (atomically: tests wait
 * for it to appear).  Dies with its parent (PR_SET_PDEATHSIG) or on
 * SIGTERM/SIGINT.
 *
 * FILE is JSON:
 *
 *   { "responses": [ RESP, ... ],     model turns, consumed in order by
 *                                     POST /v1/chat/completions (OpenAI) and
 *                                     POST /v1/messages (Anthropic): each
 *                                     request takes the first response not
 *                                     yet used whose "match" it satisfies
 *     "routes": { "/path": RESP } }   fixed answers for any other path (the
 *                                     web fixture; never consumed)
 *
 * RESP (every key optional):
 *   "match": "marker" or [ ... ]      only for a request whose body holds the
 *                                     string (every string of the list), as
 *                                     the client sent it (JSON-escaped); a
 *                                     response without "match" takes any
 *                                     request.  So one script can drive
 *                                     several stages or parallel workers,
 *                                     each by a marker of its own prompt
 *   "repeat": true                    never used up: answers every request it
 *                                     matches (give it a "match")
 *   "text": "..."                     the assistant text
 *   "calls": [ {"name": "...", "id": "...", "arguments": {...}} ]
 *             ("${PORT}" in the arguments is replaced by the listening port)
 *             or "arguments_raw": "..." sent as the arguments text verbatim
 *             (OpenAI) / as a string "input" (Anthropic): invalid JSON
 *   "status": 500                     HTTP status (default 200)
 *   "body": "..."                     the raw body, replacing the generated one
 *   "body_latin1": "..."              the same, each character (< U+0100) sent as
 *                                     one byte (to serve ISO-8859-1 pages)
 *   "content_type": "text/html"       (default application/json)
 *   "headers": {"Retry-After": "2"}   extra headers; "${PORT}" in a value is
 *                                     replaced by the listening port
 *   "hold_until": 4                   hold the answer until that many model
 *                                     requests are in flight at once (all of
 *                                     them are then answered), or hold_ms
 *                                     (default 20000) passed: concurrency
 *                                     proven from outside, without timing
 *   "delay_ms": 1000                  (without "fault") answer that much later
 *   "fault": "drop"                   close the connection without an answer
 *            "drop_mid"               send headers and part of the body, then drop
 *            "slow"                   wait delay_ms (default 5000) first
 *            "hold"                   wait until the file "until_file" exists
 *                                     (at most two minutes) first
 *            "huge"                   a valid answer of huge_bytes (default
 *                                     10 MiB) of text (a route: that many 'x')
 *
 * When the responses run out, the model answers "(mock-model: no more
 * responses)" with no calls.  With --record, every request is appended to
 * FILE as one JSON line: {"n","method","path","query","headers":{...},
 * "body": <JSON or string>, "in_flight": N}, N the model requests being
 * answered when this one arrived, itself included (held by "slow").
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#define MAX_BODY ((size_t)64 << 20)

static json_t *script;
static unsigned char *used;	/* one flag per response */
static unsigned request_count;
static unsigned in_flight;	/* model requests arrived and not yet answered */
static unsigned port;
static FILE *record;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t moved = PTHREAD_COND_INITIALIZER;
static unsigned released;	/* hold_until releases so far */

struct conn {
	char *body;
	size_t len;
	bool too_big;
};

static void die(const char *msg)
{
	fprintf(stderr, "mock-model: %s\n", msg);
	exit(2);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	json_t *h = cls;
	char lower[128];
	size_t i;

	(void)kind;
	for (i = 0; key[i] && i < sizeof(lower) - 1; i++)
		lower[i] = (char)(key[i] >= 'A' && key[i] <= 'Z' ? key[i] - 'A' + 'a' : key[i]);
	lower[i] = '\0';
	json_object_set_new(h, lower, json_string(value ? value : ""));
	return MHD_YES;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	(void)kind;
	json_object_set_new(cls, key, json_string(value ? value : ""));
	return MHD_YES;
}

static void record_request(struct MHD_Connection *c, const char *method, const char *url,
			   const struct conn *cn, unsigned n, unsigned busy)
{
	json_t *line, *headers = json_object(), *query = json_object(), *body;
	char *s;

	if (!record)
		return;
	MHD_get_connection_values(c, MHD_HEADER_KIND, collect_header, headers);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, query);
	body = cn->len ? json_loadb(cn->body, cn->len, 0, NULL) : NULL;
	if (!body)
		body = json_stringn(cn->body ? cn->body : "", cn->len);
	line = json_pack("{s:i, s:s, s:s, s:o, s:o, s:o, s:i}", "n", (int)n, "method", method,
			 "path", url, "query", query, "headers", headers, "body",
			 body ? body : json_null(), "in_flight", (int)busy);
	s = json_dumps(line, JSON_COMPACT);
	fprintf(record, "%s\n", s);
	fflush(record);
	free(s);
	json_decref(line);
}

/* V with every "${PORT}" replaced by the listening port (allocated). */
static char *substitute_port(const char *v)
{
	size_t cap = strlen(v) + 1, len = 0;
	char *r = malloc(cap), num[16];
	int nlen = snprintf(num, sizeof(num), "%u", port);

	if (!r)
		die("out of memory");
	while (*v) {
		if (strncmp(v, "${PORT}", 7) == 0) {
			/* the port's digits are never longer than the 7 bytes they replace */
			memcpy(r + len, num, (size_t)nlen);
			len += (size_t)nlen;
			v += 7;
		} else {
			r[len++] = *v++;
		}
	}
	r[len] = '\0';
	return r;
}

/* Does the request body BODY (LEN bytes) hold RESP's "match" marker(s)? */
static bool matches(const json_t *resp, const char *body, size_t len)
{
	const json_t *m = json_object_get(resp, "match"), *one;
	size_t i;

	if (!m)
		return true;
	if (json_is_string(m))
		return body && memmem(body, len, json_string_value(m), json_string_length(m));
	json_array_foreach(m, i, one) {
		if (!json_is_string(one) || !body ||
		    !memmem(body, len, json_string_value(one), json_string_length(one)))
			return false;
	}
	return true;
}

/* The first response not used yet that the request matches; marks it used. */
static const json_t *take_response(const struct conn *cn)
{
	const json_t *list = json_object_get(script, "responses");

	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *r = json_array_get(list, i);
		if (!used[i] && matches(r, cn->body, cn->len)) {
			used[i] = !json_is_true(json_object_get(r, "repeat"));
			return r;
		}
	}
	return NULL;
}

/* The generated model answer for RESP in the wire format of PATH. */
static char *model_body(const json_t *resp, bool anthropic, const json_t *req, unsigned n,
			size_t extra_text)
{
	const char *text = json_string_value(json_object_get(resp, "text"));
	const json_t *calls = json_object_get(resp, "calls"), *c;
	const char *model = json_string_value(json_object_get(req, "model"));
	json_t *root, *tcalls = json_array(), *content = json_array();
	char *big = NULL, *s;
	size_t i;
	int prompt = (int)(json_dumpb(req, NULL, 0, JSON_COMPACT) / 4);

	if (extra_text) {
		big = malloc(extra_text + 1);
		if (!big)
			die("out of memory");
		memset(big, 'x', extra_text);
		big[extra_text] = '\0';
		text = big;
	}
	json_array_foreach(calls, i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *id = json_string_value(json_object_get(c, "id"));
		const char *raw = json_string_value(json_object_get(c, "arguments_raw"));
		json_t *args = json_object_get(c, "arguments"), *owned = NULL;
		char idbuf[64];
		char *argtext;

		snprintf(idbuf, sizeof(idbuf), anthropic ? "toolu_mock_%u_%zu" : "call_mock_%u_%zu", n,
			 i + 1);
		if (!id)
			id = idbuf;
		argtext = raw ? strdup(raw) : json_dumps(args ? args : json_object(), JSON_COMPACT);
		if (!argtext)
			die("out of memory");
		if (!raw && strstr(argtext, "${PORT}")) {
			char *sub = substitute_port(argtext);
			json_t *parsed = json_loads(sub, 0, NULL);
			free(argtext);
			argtext = sub;
			if (parsed)
				args = owned = parsed;	/* Anthropic's input: the substituted one */
		}
		if (anthropic) {
			json_t *input = raw ? json_string(raw) : json_incref(args ? args : NULL);
			if (!input)
				input = json_object();
			json_array_append_new(content, json_pack("{s:s, s:s, s:s, s:o}", "type",
								 "tool_use", "id", id, "name",
								 name ? name : "", "input", input));
		} else {
			json_array_append_new(tcalls,
					      json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id, "type",
							"function", "function", "name",
							name ? name : "", "arguments", argtext));
		}
		free(argtext);
		json_decref(owned);
	}
	if (anthropic) {
		if (text)
			json_array_insert_new(content, 0,
					      json_pack("{s:s, s:s}", "type", "text", "text", text));
		root = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:{s:i, s:i}}", "id", "msg_mock",
				 "type", "message", "role", "assistant", "model",
				 model ? model : "mock", "content", content, "stop_reason",
				 json_array_size(calls) ? "tool_use" : "end_turn", "usage",
				 "input_tokens", prompt, "output_tokens", 7);
		json_decref(tcalls);
	} else {
		json_t *msg = json_pack("{s:s, s:o}", "role", "assistant", "content",
					text ? json_string(text) : json_null());
		if (json_array_size(tcalls))
			json_object_set_new(msg, "tool_calls", tcalls);
		else
			json_decref(tcalls);
		root = json_pack("{s:s, s:s, s:s, s:[{s:i, s:o, s:s}], s:{s:i, s:i, s:i}}", "id",
				 "chatcmpl-mock", "object", "chat.completion", "model",
				 model ? model : "mock", "choices", "index", 0, "message", msg,
				 "finish_reason", json_array_size(calls) ? "tool_calls" : "stop",
				 "usage", "prompt_tokens", prompt, "completion_tokens", 7,
				 "total_tokens", prompt + 7);
		json_decref(content);
	}
	s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	free(big);
	if (!s)
		die("cannot encode an answer");
	return s;
}

struct partial {
	char *data;
	size_t len;
	size_t sent;
};

static ssize_t partial_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct partial *p = cls;
	size_t n;

	(void)pos;
	if (p->sent >= p->len / 2)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = p->len / 2 - p->sent;
	if (n > max)
		n = max;
	memcpy(buf, p->data + p->sent, n);
	p->sent += n;
	return (ssize_t)n;
}

static void partial_free(void *cls)
{
	struct partial *p = cls;

	free(p->data);
	free(p);
}

/* "hold_until": wait (LOCK held) until that many model requests are in flight. */
static void hold(const json_t *resp)
{
	json_int_t want = json_integer_value(json_object_get(resp, "hold_until"));
	json_int_t ms = json_integer_value(json_object_get(resp, "hold_ms"));
	unsigned gen = released;
	struct timespec until;

	if (want <= 0)
		return;
	if (in_flight >= (unsigned)want) {
		released++;
		pthread_cond_broadcast(&moved);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (ms > 0 ? ms : 20000) / 1000;
	while (released == gen)
		if (pthread_cond_timedwait(&moved, &lock, &until) != 0)
			break;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct conn *cn = *con_cls;
	const json_t *resp;
	json_t *req = NULL;
	struct MHD_Response *r;
	const char *fault, *ctype;
	bool is_model, anthropic;
	json_int_t status;
	char *body;
	unsigned n;
	enum MHD_Result ret;

	(void)cls;
	(void)version;
	if (!cn) {
		cn = calloc(1, sizeof(*cn));
		if (!cn)
			return MHD_NO;
		*con_cls = cn;
		return MHD_YES;
	}
	if (*upload_size) {
		if (cn->len + *upload_size > MAX_BODY) {
			cn->too_big = true;
		} else {
			char *nb = realloc(cn->body, cn->len + *upload_size + 1);
			if (!nb)
				return MHD_NO;
			cn->body = nb;
			memcpy(cn->body + cn->len, upload, *upload_size);
			cn->len += *upload_size;
			cn->body[cn->len] = '\0';
		}
		*upload_size = 0;
		return MHD_YES;
	}

	anthropic = strcmp(url, "/v1/messages") == 0;
	is_model = anthropic || strcmp(url, "/v1/chat/completions") == 0;
	pthread_mutex_lock(&lock);
	n = ++request_count;
	if (is_model)
		in_flight++;
	record_request(c, method, url, cn, n, is_model ? in_flight : 0);
	if (is_model) {
		resp = take_response(cn);
	} else {
		resp = json_object_get(json_object_get(script, "routes"), url);
	}
	if (is_model)
		hold(resp);
	pthread_mutex_unlock(&lock);

	if (!resp && !is_model) {
		static const char nf[] = "not found\n";
		r = MHD_create_response_from_buffer(sizeof(nf) - 1, (void *)nf,
						    MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_response(c, MHD_HTTP_NOT_FOUND, r);
		MHD_destroy_response(r);
		return ret;
	}
	fault = json_string_value(json_object_get(resp, "fault"));
	if (!fault && json_integer_value(json_object_get(resp, "delay_ms")) > 0)
		sleep_ms((long)json_integer_value(json_object_get(resp, "delay_ms")));
	if (fault && strcmp(fault, "slow") == 0) {
		json_int_t ms = json_integer_value(json_object_get(resp, "delay_ms"));
		sleep_ms(ms > 0 ? (long)ms : 5000);
	}
	if (fault && strcmp(fault, "hold") == 0) {
		const char *f = json_string_value(json_object_get(resp, "until_file"));

		/* at most two minutes: a test that never makes the file still ends */
		for (int i = 0; f && i < 2400 && access(f, F_OK) != 0; i++)
			sleep_ms(50);
	}
	if (is_model) {
		pthread_mutex_lock(&lock);
		in_flight--;
		pthread_mutex_unlock(&lock);
	}
	if (fault && strcmp(fault, "drop") == 0)
		return MHD_NO;
	status = json_integer_value(json_object_get(resp, "status"));
	if (status <= 0)
		status = 200;

	if (json_is_string(json_object_get(resp, "body_latin1"))) {
		const unsigned char *u =
			(const unsigned char *)json_string_value(json_object_get(resp, "body_latin1"));
		size_t k = 0;
		body = malloc(strlen((const char *)u) + 1);
		if (!body)
			die("out of memory");
		while (*u) {
			if (u[0] >= 0xc2 && u[0] <= 0xc3 && (u[1] & 0xc0) == 0x80) {
				body[k++] = (char)(((u[0] & 0x1f) << 6) | (u[1] & 0x3f));
				u += 2;
			} else {
				body[k++] = (char)*u++;
			}
		}
		body[k] = '\0';
	} else if (json_is_string(json_object_get(resp, "body"))) {
		body = substitute_port(json_string_value(json_object_get(resp, "body")));
	} else if (is_model) {
		size_t extra = 0;
		if (fault && strcmp(fault, "huge") == 0) {
			json_int_t hb = json_integer_value(json_object_get(resp, "huge_bytes"));
			extra = hb > 0 ? (size_t)hb : (size_t)10 << 20;
		}
		req = cn->len ? json_loadb(cn->body, cn->len, 0, NULL) : NULL;
		if (!resp) {
			json_t *done = json_pack("{s:s}", "text", "(mock-model: no more responses)");
			body = model_body(done, anthropic, req, n, 0);
			json_decref(done);
		} else {
			body = model_body(resp, anthropic, req, n, extra);
		}
		json_decref(req);
	} else if (fault && strcmp(fault, "huge") == 0) {
		json_int_t hb = json_integer_value(json_object_get(resp, "huge_bytes"));
		size_t size = hb > 0 ? (size_t)hb : (size_t)10 << 20;
		body = malloc(size + 1);
		if (!body)
			die("out of memory");
		memset(body, 'x', size);
		body[size] = '\0';
	} else {
		body = strdup("");
		if (!body)
			die("out of memory");
	}

	if (fault && strcmp(fault, "drop_mid") == 0) {
		struct partial *p = calloc(1, sizeof(*p));
		if (!p)
			die("out of memory");
		p->data = body;
		p->len = strlen(body);
		r = MHD_create_response_from_callback(p->len, 4096, partial_reader, p, partial_free);
	} else {
		r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	}
	ctype = json_string_value(json_object_get(resp, "content_type"));
	MHD_add_response_header(r, "Content-Type", ctype ? ctype : "application/json");
	{
		const char *k;
		json_t *v;
		json_object_foreach(json_object_get(resp, "headers"), k, v) {
			if (json_is_string(v)) {
				char *val = substitute_port(json_string_value(v));
				MHD_add_response_header(r, k, val);
				free(val);
			}
		}
	}
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct conn *cn = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (cn) {
		free(cn->body);
		free(cn);
		*con_cls = NULL;
	}
}

static void write_port_file(const char *path)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		die("port file path too long");
	f = fopen(tmp, "we");
	if (!f)
		die("cannot write the port file");
	fprintf(f, "%u\n", port);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		die("cannot write the port file");
}

int main(int argc, char **argv)
{
	const char *script_path = NULL, *port_file = NULL, *record_path = NULL;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *d;
	json_error_t jerr;
	sigset_t set;
	int sig;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--script") == 0 && i + 1 < argc)
			script_path = argv[++i];
		else if (strcmp(argv[i], "--port-file") == 0 && i + 1 < argc)
			port_file = argv[++i];
		else if (strcmp(argv[i], "--record") == 0 && i + 1 < argc)
			record_path = argv[++i];
		else
			die("usage: mock-model --script FILE [--port-file FILE] [--record FILE]");
	}
	if (!script_path)
		die("usage: mock-model --script FILE [--port-file FILE] [--record FILE]");
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	script = json_load_file(script_path, 0, &jerr);
	if (!json_is_object(script)) {
		fprintf(stderr, "mock-model: %s:%d: %s\n", script_path, jerr.line, jerr.text);
		return 2;
	}
	used = calloc(json_array_size(json_object_get(script, "responses")) + 1, 1);
	if (!used)
		die("out of memory");
	if (record_path) {
		record = fopen(record_path, "ae");
		if (!record)
			die("cannot open the record file");
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = 0;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
			     NULL, NULL, answer, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			     MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
	if (!d)
		die("cannot start the HTTP daemon on 127.0.0.1");
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (!info || info->port == 0)
		die("cannot learn the listening port");
	port = info->port;
	printf("port %u\n", port);
	fflush(stdout);
	if (port_file)
		write_port_file(port_file);

	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	if (record)
		fclose(record);
	json_decref(script);
	free(used);
	return 0;
}
