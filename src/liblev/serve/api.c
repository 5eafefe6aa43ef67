/*
 * api.c - lev serve's route table, its dispatch and its OpenAPI document.
 */
#include <dirent.h>
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/config.h"
#include "liblev/daemon/client.h"
#include "liblev/daemon/proto.h"
#include "liblev/policy/fsconfine.h"
#include "liblev/run/runrecord.h"
#include "liblev/serve/admin.h"
#include "liblev/serve/api.h"
#include "liblev/serve/configjson.h"
#include "liblev/serve/fsdirs.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define LIST_LIMIT_DEFAULT 100
#define LIST_LIMIT_MAX 1000
#define FILE_READ_MAX ((size_t)4 << 20)

struct route;
typedef unsigned (*handler_fn)(const struct lev_api_opts *o, const struct route *rt,
			       const char *id, const json_t *body, const struct lev_api_call *c,
			       json_t **reply);

struct route {
	const char *method;
	const char *pattern;	/* "{id}" matches one run or request id */
	enum lev_api_kind kind;
	bool admin;		/* a mutating admin route: 403 without --allow-admin */
	const struct lev_apibody_field *fields;	/* the body it takes; NULL: none */
	size_t n_fields;
	handler_fn fn;
	const char *summary;
};

/* ---- replies ----------------------------------------------------------------- */

static unsigned fail(json_t **reply, unsigned status, const char *msg)
{
	*reply = json_pack("{s:s}", "error", msg);
	return status;
}

/* A daemon call's error as an HTTP status: who is at fault. */
static unsigned daemon_fail(json_t **reply, int r, const struct lev_err *err)
{
	if (r == -EREMOTEIO && (lev_startswith(err->msg, "no run ") ||
				lev_startswith(err->msg, "no open request ")))
		return fail(reply, 404, err->msg);
	if (r == -EREMOTEIO)
		return fail(reply, 409, err->msg);
	if (r == -ENOENT || r == -ECONNREFUSED)
		return fail(reply, 503, "no daemon answers: start one with 'lev daemon start'");
	return fail(reply, 502, err->msg);
}

/* Send REQ (consumed); 0 and *out (may be NULL: dropped), or the failure's status. */
static unsigned call_daemon(json_t *req, json_t **out, json_t **reply)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *r = NULL;
	int rc = lev_client_call(req, &r, &err);

	json_decref(req);
	if (rc < 0)
		return daemon_fail(reply, rc, &err);
	if (out)
		*out = r;
	else
		json_decref(r);
	return 0;
}

static json_t *run_request(const char *op, const char *id)
{
	json_t *req = lev_proto_request(op);

	json_object_set_new(req, "run", json_string(id));
	return req;
}

/* ---- runs ---------------------------------------------------------------------- */

/*
 * The list a daemon that does not know "items" replied (BODY, consumed):
 * the API's list as a new JSON string of its text, or NULL.
 */
static json_t *list_of_ps(char *body, size_t len)
{
	json_t *ps = NULL, *items = json_array(), *list;
	char *text;

	(void)lev_proto_decode(body, len, &ps, NULL);
	free(body);
	json_array_extend(items, json_object_get(ps, "runs"));
	json_array_extend(items, json_object_get(ps, "finished"));
	list = json_pack("{s:o,s:O}", "items", items, "next_cursor",
			 json_object_get(ps, "next") ? json_object_get(ps, "next") : json_null());
	json_decref(ps);
	text = json_dumps(list, JSON_COMPACT);
	json_decref(list);
	if (!text)
		return NULL;
	list = json_string_nocheck(text);
	free(text);
	return list;
}

/*
 * The daemon writes the page as the API sends it, after its reply's
 * LEV_PROTO_OK_PREFIX ("items" and "next_cursor", ps's "items"): it goes
 * on unparsed, the prefix's '{' put back before it.
 */
static unsigned h_list(const struct lev_api_opts *o, const struct route *rt, const char *id,
		       const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	static const char head[] = "\"items\":[";
	const char *cursor = c->query(c->qctx, "cursor"), *lim = c->query(c->qctx, "limit");
	const size_t pre = strlen(LEV_PROTO_OK_PREFIX);
	struct lev_err err = LEV_ERR_INIT;
	json_t *req = lev_proto_request("ps");
	uint64_t limit = LIST_LIMIT_DEFAULT;
	char *text = NULL;
	size_t len = 0;
	int rc;

	(void)o, (void)rt, (void)id, (void)body;
	if (lim && (lev_parse_u64(lim, &limit) < 0 || !limit || limit > LIST_LIMIT_MAX)) {
		json_decref(req);
		return fail(reply, 400, "query 'limit' must be a number from 1 to 1000");
	}
	json_object_set_new(req, "all", json_true());
	json_object_set_new(req, "items", json_true());
	json_object_set_new(req, "limit", json_integer((json_int_t)limit));
	if (cursor)
		json_object_set_new(req, "after", json_string(cursor));
	rc = lev_client_call_raw(req, &text, &len, &err);
	json_decref(req);
	if (rc < 0)
		return daemon_fail(reply, rc, &err);
	if (len > pre && !strncmp(text + pre, head, strlen(head))) {
		text[pre - 1] = '{';
		*reply = json_stringn_nocheck(text + pre - 1, len - pre + 1);
		free(text);
	} else {
		*reply = list_of_ps(text, len);
	}
	if (!*reply)
		return fail(reply, 502, "the daemon's list could not be read");
	return 200;
}

static unsigned h_get(const struct lev_api_opts *o, const struct route *rt, const char *id,
		      const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	json_t *r = NULL;
	unsigned st;

	(void)o, (void)rt, (void)body, (void)c;
	st = call_daemon(run_request("get", id), &r, reply);
	if (st)
		return st;
	*reply = json_incref(json_object_get(r, "run"));
	json_decref(r);
	if (!*reply)
		return fail(reply, 502, "the daemon's reply holds no run");
	return 200;
}

static unsigned h_result(const struct lev_api_opts *o, const struct route *rt, const char *id,
			 const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	static const char *const keys[] = { "id", "status", "result", "error", "record",
					    "result_in_record" };
	json_t *run = NULL;
	unsigned st = h_get(o, rt, id, body, c, &run);

	if (st != 200) {
		*reply = run;
		return st;
	}
	*reply = json_object();
	for (size_t i = 0; i < ARRAY_LEN(keys); i++)
		if (json_object_get(run, keys[i]))
			json_object_set(*reply, keys[i], json_object_get(run, keys[i]));
	json_decref(run);
	return 200;
}

/* A run's sub-agents as the daemon lists them under it (`lev ps`): a new array. */
static json_t *children_of(const json_t *run)
{
	const json_t *ws = json_object_get(run, "workers");

	return json_is_array(ws) ? json_deep_copy(ws) : json_array();
}

static unsigned h_children(const struct lev_api_opts *o, const struct route *rt,
			   const char *id, const json_t *body, const struct lev_api_call *c,
			   json_t **reply)
{
	json_t *run = NULL;
	unsigned st = h_get(o, rt, id, body, c, &run);

	if (st != 200) {
		*reply = run;
		return st;
	}
	*reply = json_pack("{s:s,s:o}", "run", id, "children", children_of(run));
	json_decref(run);
	return 200;
}

/* The daemon's runs (`lev ps`: live, then the recently ended), each with its sub-agents. */
static unsigned h_tree(const struct lev_api_opts *o, const struct route *rt, const char *id,
		       const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	static const char *const lists[] = { "runs", "finished" };
	json_t *ps = NULL, *items = json_array(), *e;
	unsigned st;
	size_t i;

	(void)o, (void)rt, (void)id, (void)body, (void)c;
	st = call_daemon(lev_proto_request("ps"), &ps, reply);
	if (st) {
		json_decref(items);
		return st;
	}
	for (size_t l = 0; l < ARRAY_LEN(lists); l++)
		json_array_foreach(json_object_get(ps, lists[l]), i, e) {
			json_t *node = json_pack("{s:O*,s:O*,s:O*,s:O*,s:o}", "id",
						 json_object_get(e, "id"), "agent",
						 json_object_get(e, "agent"), "status",
						 json_object_get(e, "status"), "stage",
						 json_object_get(e, "stage"), "children", children_of(e));

			json_array_append_new(items, node);
		}
	json_decref(ps);
	*reply = json_pack("{s:o}", "runs", items);
	return 200;
}

/* OP (cancel, pause, resume) on the run ID: the daemon's answer, as `lev OP` sends it. */
static unsigned h_runop(const struct lev_api_opts *o, const struct route *rt, const char *id,
			const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	const char *op = lev_streq(rt->method, "DELETE") ? "cancel"
			 : strrchr(rt->pattern, '/') + 1;
	unsigned st;

	(void)o, (void)body, (void)c;
	st = call_daemon(run_request(op, id), NULL, reply);
	if (st)
		return st;
	*reply = json_pack("{s:s,s:s}", "run", id, "done", op);
	return 200;
}

static const struct lev_apibody_field message_fields[] = {
	{ "text", LEV_APIBODY_STRING, true },
};

static unsigned h_message(const struct lev_api_opts *o, const struct route *rt, const char *id,
			  const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	json_t *req = run_request("msg", id);
	unsigned st;

	(void)o, (void)rt, (void)c;
	json_object_set(req, "text", json_object_get(body, "text"));
	st = call_daemon(req, NULL, reply);
	if (st)
		return st;
	*reply = json_pack("{s:s,s:b}", "run", id, "queued", 1);
	return 200;
}

static const struct lev_apibody_field spawn_fields[] = {
	{ "blueprint", LEV_APIBODY_STRING, true },
	{ "task", LEV_APIBODY_STRING, false },
	{ "workdir", LEV_APIBODY_STRING, false },
	{ "model", LEV_APIBODY_STRING, false },
	{ "allow", LEV_APIBODY_STRINGS, false },
	{ "no_seed_commands", LEV_APIBODY_BOOL, false },
	{ "yolo", LEV_APIBODY_BOOL, false },
	{ "callback_url", LEV_APIBODY_STRING, false },
	{ "callback_secret", LEV_APIBODY_STRING, false },
};

static unsigned h_spawn(const struct lev_api_opts *o, const struct route *rt, const char *id,
			const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	struct lev_err err = LEV_ERR_INIT;
	char *run = NULL;

	(void)rt, (void)id, (void)c;
	if (json_is_true(json_object_get(body, "yolo")))
		return fail(reply, 403, "field 'yolo': a run started over HTTP is never unattended; "
					"answer its questions at /api/agents/{id}/interaction");
	if (!o->spawn)
		return fail(reply, 501, "this server does not start runs");
	if (o->spawn(o->spawn_ctx, body, &run, &err) < 0)
		return fail(reply, err.code == LEV_EPARSE ? 400 : err.code == -EACCES ? 403 :
				   err.code == -EHOSTUNREACH ? 422 : 502, err.msg);
	*reply = json_pack("{s:s,s:s}", "run_id", run, "agent_id", run);
	free(run);
	return 200;
}

/* ---- what lev's own commands show ------------------------------------------ */

/* The route's command's --json (route.cmd, then ARG when it takes one). */
static unsigned show_cmd(const struct lev_api_opts *o, const char *const *args, json_t **reply)
{
	struct lev_err err = LEV_ERR_INIT;

	if (!o->lev_json)
		return fail(reply, 501, "this server runs no lev command");
	if (o->lev_json(o->spawn_ctx, args, reply, &err) < 0)
		return fail(reply, 502, err.msg);
	if (!json_is_object(*reply) && !json_is_array(*reply)) {
		json_decref(*reply);
		return fail(reply, 502, "lev printed no JSON");
	}
	return 200;
}

static unsigned h_blueprints(const struct lev_api_opts *o, const struct route *rt,
			     const char *id, const json_t *body, const struct lev_api_call *c,
			     json_t **reply)
{
	static const char *const args[] = { "list", "--json", NULL };

	(void)rt, (void)id, (void)body, (void)c;
	return show_cmd(o, args, reply);
}

static unsigned h_doctor(const struct lev_api_opts *o, const struct route *rt, const char *id,
			 const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	static const char *const args[] = { "doctor", "--json", NULL };

	(void)rt, (void)id, (void)body, (void)c;
	return show_cmd(o, args, reply);
}

static unsigned h_mcp(const struct lev_api_opts *o, const struct route *rt, const char *id,
		      const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	static const char *const args[] = { "mcp", "list", "--json", NULL };
	unsigned st;

	(void)rt, (void)id, (void)body, (void)c;
	st = show_cmd(o, args, reply);
	if (st == 200 && json_is_array(*reply))
		*reply = json_pack("{s:o}", "servers", *reply);
	return st;
}

/*
 * The entry named NAME of ALL's array KEY (ALL consumed, with its status ST:
 * a failure passes through): 200 and it, or 404 and NONE.
 */
static unsigned named_entry(unsigned st, json_t *all, const char *key, const char *name,
			    const char *none, json_t **reply)
{
	json_t *e, *hit = NULL;
	size_t i;

	if (st != 200) {
		*reply = all;
		return st;
	}
	json_array_foreach(json_object_get(all, key), i, e)
		if (!hit && lev_streq(lev_json_str(e, "name"), name))
			hit = json_incref(e);
	json_decref(all);
	if (!hit)
		return fail(reply, 404, none);
	*reply = hit;
	return 200;
}

/* One configured MCP server NAME: its entry of `lev mcp list --json` (which starts each). */
static unsigned h_mcp_status(const struct lev_api_opts *o, const struct route *rt,
			     const char *id, const json_t *body, const struct lev_api_call *c,
			     json_t **reply)
{
	json_t *all = NULL;
	unsigned st = h_mcp(o, rt, id, body, c, &all);

	return named_entry(st, all, "servers", id, "no MCP server of that name in the config "
				"(GET /api/mcp/servers lists them)", reply);
}

/*
 * Start MCP server NAME in its sandbox, initialize it, list its tools: what
 * `lev mcp test NAME --json` prints (reachable false and its error when it
 * did not start: still a 200).  An admin route: it starts a process.
 */
static unsigned h_mcp_test(const struct lev_api_opts *o, const struct route *rt,
			   const char *id, const json_t *body, const struct lev_api_call *c,
			   json_t **reply)
{
	const char *args[] = { "mcp", "test", id, "--json", NULL };
	unsigned st;

	(void)rt, (void)body, (void)c;
	st = show_cmd(o, args, reply);
	if (st == 502 && lev_json_str(*reply, "error") &&
	    strstr(lev_json_str(*reply, "error"), "has no MCP server")) {
		json_decref(*reply);
		return fail(reply, 404, "no MCP server of that name in the config (GET "
					"/api/mcp/servers lists them)");
	}
	return st;
}

static unsigned h_models(const struct lev_api_opts *o, const struct route *rt, const char *id,
			 const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	static const char *const args[] = { "models", "list", "--json", NULL };

	(void)rt, (void)id, (void)body, (void)c;
	return show_cmd(o, args, reply);
}

static unsigned h_tools(const struct lev_api_opts *o, const struct route *rt, const char *id,
			const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	static const char *const args[] = { "tools", "--json", NULL };

	(void)rt, (void)id, (void)body, (void)c;
	return show_cmd(o, args, reply);
}

/* What `lev stages RUN --json` or `lev context RUN --json` shows of a run the daemon knows. */
static unsigned h_run_show(const struct lev_api_opts *o, const struct route *rt, const char *id,
			   const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	const char *args[] = { strstr(rt->pattern, "/stages") ? "stages" : "context", id, "--json",
			       NULL };
	json_t *r = NULL;
	unsigned st;

	(void)body, (void)c;
	st = call_daemon(run_request("get", id), &r, reply);	/* 404 when the daemon knows none */
	json_decref(r);
	if (st)
		return st;
	return show_cmd(o, args, reply);
}

#define HISTORY_LIMIT_DEFAULT 50
#define HISTORY_LIMIT_MAX 100

/*
 * The run's context history (`lev context RUN --json`'s "history": each model
 * request's window, eviction, transform, seed, from its record), paged as
 * Leviath pages it: the cursor is a point's index (the record only grows).
 */
static unsigned h_context_history(const struct lev_api_opts *o, const struct route *rt,
				  const char *id, const json_t *body,
				  const struct lev_api_call *c, json_t **reply)
{
	const char *cursor = c->query(c->qctx, "cursor"), *lim = c->query(c->qctx, "limit");
	uint64_t from = 0, limit = HISTORY_LIMIT_DEFAULT;
	json_t *all = NULL, *hist, *items;
	unsigned st;
	size_t n;

	if (lim && (lev_parse_u64(lim, &limit) < 0 || !limit || limit > HISTORY_LIMIT_MAX))
		return fail(reply, 400, "query 'limit' must be a number from 1 to 100");
	if (cursor && lev_parse_u64(cursor, &from) < 0)
		return fail(reply, 400, "query 'cursor' must be a point index (the last "
					"'next_cursor')");
	st = h_run_show(o, rt, id, body, c, &all);
	if (st != 200) {
		*reply = all;
		return st;
	}
	hist = json_object_get(all, "history");
	n = json_array_size(hist);
	from = from < n ? from : n;
	items = json_array();
	for (uint64_t i = from; i < n && i < from + limit; i++)
		json_array_append(items, json_array_get(hist, (size_t)i));
	*reply = json_pack("{s:s,s:o,s:o}", "run", id, "items", items, "next_cursor",
			   from + limit < n ? json_sprintf("%llu", (unsigned long long)(from + limit))
					    : json_null());
	json_decref(all);
	return 200;
}

/* What `lev logs RUN` prints of a run the daemon knows: its events, one a line. */
static unsigned h_logs(const struct lev_api_opts *o, const struct route *rt, const char *id,
		       const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	const char *args[] = { "logs", "--", id, NULL };
	json_t *r = NULL;
	unsigned st;

	(void)rt, (void)body, (void)c;
	st = call_daemon(run_request("get", id), &r, reply);
	json_decref(r);
	if (st)
		return st;
	st = show_cmd(o, args, reply);
	if (st == 200)
		*reply = json_pack("{s:s,s:o}", "run", id, "events", *reply);
	return st;
}

/* ---- a run's files: read beneath its workdir, never outside ---------------------- */

/* One level of the directory FD (consumed) as [{"name", "type"}], sorted by name. */
static unsigned list_dir(int fd, const char *path, json_t **reply)
{
	DIR *d = fdopendir(fd);
	json_t *items = json_array();
	struct dirent *e;

	if (!d) {
		close(fd);
		json_decref(items);
		return fail(reply, 500, "cannot list that directory");
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			json_array_append_new(items, json_pack("{s:s,s:s}", "name", e->d_name, "type",
						e->d_type == DT_DIR ? "dir" : e->d_type == DT_REG ? "file"
						: e->d_type == DT_LNK ? "symlink" : "other"));
	closedir(d);
	*reply = json_pack("{s:s,s:o}", "path", path, "entries", lev_fs_sorted_by_name(items));
	return 200;
}

/* The regular file FD (consumed), up to FILE_READ_MAX bytes, as UTF-8 text. */
static unsigned read_file(int fd, const char *path, json_t **reply)
{
	char *text = NULL;
	size_t len = 0;
	json_t *s;
	int r = lev_read_fd(fd, path, FILE_READ_MAX, &text, &len, NULL);

	close(fd);
	if (r < 0)
		return fail(reply, r == -EFBIG ? 413 : 500,
			    "cannot read that file (a file over 4 MiB is not served)");
	s = json_stringn(text, len);
	free(text);
	if (!s)
		return fail(reply, 415, "that file is not UTF-8 text");
	*reply = json_pack("{s:s,s:I,s:o}", "path", path, "size", (json_int_t)len, "content", s);
	return 200;
}

/*
 * ?path= (default: the workdir itself) of the run ID, opened beneath its
 * workdir's fd by lev_confine_open(): openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS, the file tools' one confined open.  "..", an
 * absolute path or a symlink out is refused by the kernel, not by a look at
 * the string.
 */
static unsigned h_files(const struct lev_api_opts *o, const struct route *rt, const char *id,
			const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	const char *path = c->query(c->qctx, "path");
	json_t *run = NULL;
	struct stat sb;
	int root, pfd, fd, r;
	unsigned st = h_get(o, rt, id, body, c, &run);

	if (st != 200) {
		*reply = run;
		return st;
	}
	path = path && *path ? path : ".";
	root = lev_json_str(run, "workdir")
		       ? open(lev_json_str(run, "workdir"), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	json_decref(run);
	if (root < 0)
		return fail(reply, 404, "the run has no workdir on this machine");
	/* O_PATH first: a FIFO or a device is looked at, never opened */
	r = lev_confine_open(root, NULL, path, O_PATH, LEV_CONFINE_AUTO, &pfd, NULL);
	close(root);
	if (r == -EXDEV || r == -ELOOP)
		return fail(reply, 403, "query 'path': it leaves the run's workdir (an absolute "
					"path, '..' or a symlink out); give a path inside it");
	if (r == -ENOENT || r == -ENOTDIR)
		return fail(reply, 404, "query 'path': no such file in the run's workdir");
	if (r < 0)
		return fail(reply, 400, "query 'path': cannot open it in the run's workdir");
	if (fstat(pfd, &sb) < 0 || !(S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode))) {
		close(pfd);
		return fail(reply, 400, "query 'path': neither a file nor a directory");
	}
	r = lev_confine_reopen(pfd, S_ISDIR(sb.st_mode) ? O_RDONLY | O_DIRECTORY : O_RDONLY, &fd,
			       NULL);
	close(pfd);
	if (r < 0)
		return fail(reply, 409, "query 'path': it changed while it was opened; ask again");
	return S_ISDIR(sb.st_mode) ? list_dir(fd, path, reply) : read_file(fd, path, reply);
}

/* The configuration in use, redacted by construction (configjson.h). */
static unsigned h_config(const struct lev_api_opts *o, const struct route *rt, const char *id,
			 const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	struct lev_err err = LEV_ERR_INIT;

	(void)o, (void)rt, (void)id, (void)body, (void)c;
	if (lev_config_redacted(reply, &err) < 0)
		return fail(reply, 500, err.msg);
	return 200;
}

static const struct lev_apibody_field validate_fields[] = {
	{ "blueprint", LEV_APIBODY_STRING, true },
};

static unsigned h_validate(const struct lev_api_opts *o, const struct route *rt, const char *id,
			   const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	const char *bp = lev_json_str(body, "blueprint");
	const char *args[] = { "validate", "--json", "--", bp, NULL };

	(void)rt, (void)id, (void)c;
	if (!*bp)
		return fail(reply, 400, "field 'blueprint' must name an installed agent or a path");
	return show_cmd(o, args, reply);
}

/* One installed agent NAME as `lev list --json` gives it: the same entry, or 404. */
static unsigned h_blueprint(const struct lev_api_opts *o, const struct route *rt,
			    const char *id, const json_t *body, const struct lev_api_call *c,
			    json_t **reply)
{
	static const char *const args[] = { "list", "--json", NULL };
	json_t *all = NULL;
	unsigned st = show_cmd(o, args, &all);

	(void)rt, (void)body, (void)c;
	return named_entry(st, all, "agents", id, "no installed agent of that name "
				"(GET /api/blueprints lists them)", reply);
}

static const struct lev_apibody_field config_validate_fields[] = {
	{ "config", LEV_APIBODY_STRING, true },
};

/* One finding, "config.toml:LINE[:COL]: what", as {"line", "column", "message"}. */
static json_t *finding(const char *msg)
{
	static const char name[] = "config.toml:";
	unsigned line = 0, col = 0;
	int n = 0;

	if (lev_startswith(msg, name) &&
	    (sscanf(msg + strlen(name), "%u:%u: %n", &line, &col, &n) == 2 ||
	     (col = 0, sscanf(msg + strlen(name), "%u: %n", &line, &n) == 1)) && n > 0)
		return json_pack("{s:I,s:o,s:s}", "line", (json_int_t)line, "column",
				 col ? json_integer(col) : json_null(), "message", msg);
	return json_pack("{s:n,s:n,s:s}", "line", "column", "message", msg);
}

/*
 * The posted config text, parsed by lev_config_parse() (the loader's own
 * parser, every key's check) as "config.toml": its error and its warnings.
 * Nothing is written; an invalid config is a 200 with valid false.
 */
static unsigned h_config_validate(const struct lev_api_opts *o, const struct route *rt,
				  const char *id, const json_t *body,
				  const struct lev_api_call *c, json_t **reply)
{
	const json_t *text = json_object_get(body, "config");
	struct lev_err err = LEV_ERR_INIT;
	struct lev_config cfg;
	json_t *errors = json_array(), *warnings = json_array();

	(void)o, (void)rt, (void)id, (void)c;
	if (lev_config_parse(json_string_value(text), json_string_length(text), "config.toml",
			     &cfg, &err) < 0) {
		json_array_append_new(errors, finding(err.msg));
	} else {
		for (char **w = cfg.warnings; w && *w; w++)
			json_array_append_new(warnings, finding(*w));
		lev_config_release(&cfg);
	}
	*reply = json_pack("{s:b,s:o,s:o}", "valid", json_array_size(errors) == 0, "errors",
			   errors, "warnings", warnings);
	return 200;
}

/* A folder picker's one level, beneath the server's root (fsdirs.h). */
static unsigned h_fs_dirs(const struct lev_api_opts *o, const struct route *rt, const char *id,
			  const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	const char *hidden = c->query(c->qctx, "hidden");
	char *home = NULL;
	unsigned st;

	(void)rt, (void)id, (void)body;
	if (hidden && !lev_streq(hidden, "true") && !lev_streq(hidden, "false"))
		return fail(reply, 400, "query 'hidden' must be true or false");
	if (!o->fs_root && lev_home_dir(&home, NULL) < 0)
		return fail(reply, 500, "no home directory to list beneath");
	st = lev_fs_dirs(o->fs_root ? o->fs_root : home, c->query(c->qctx, "path"),
			 lev_streq(hidden, "true"), reply);
	free(home);
	return st;
}

/* ---- interaction --------------------------------------------------------------- */

/* The open question of run ID (a new reference), or NULL and the status. */
static unsigned open_question(const char *id, json_t **q, json_t **reply)
{
	json_t *r = NULL, *e;
	unsigned st = call_daemon(lev_proto_request("requests"), &r, reply);
	size_t i;

	*q = NULL;
	if (st)
		return st;
	json_array_foreach(json_object_get(r, "requests"), i, e)
		if (lev_streq(lev_json_str(e, "run"), id))
			*q = json_incref(e);
	json_decref(r);
	return 0;
}

static unsigned h_question(const struct lev_api_opts *o, const struct route *rt, const char *id,
			   const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	json_t *q;
	unsigned st = open_question(id, &q, reply);

	(void)o, (void)rt, (void)body, (void)c;
	if (st)
		return st;
	*reply = json_pack("{s:s,s:o}", "run", id, "pending", q ? q : json_null());
	return 200;
}

static unsigned h_questions(const struct lev_api_opts *o, const struct route *rt, const char *id,
			    const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	json_t *r = NULL;
	unsigned st = call_daemon(lev_proto_request("requests"), &r, reply);

	(void)o, (void)rt, (void)id, (void)body, (void)c;
	if (st)
		return st;
	*reply = json_pack("{s:O}", "requests", json_object_get(r, "requests"));
	json_decref(r);
	return 200;
}

static const struct lev_apibody_field answer_fields[] = {
	{ "request", LEV_APIBODY_STRING, true },
	{ "answer", LEV_APIBODY_STRING, false },
	{ "scope", LEV_APIBODY_STRING, false },
	{ "choice", LEV_APIBODY_UINT, false },
	{ "text", LEV_APIBODY_STRING, false },
	{ "digest", LEV_APIBODY_STRING, false },
};

/* The answer's own shape: what `lev respond` checks of its flags, nothing of the call. */
static const char *answer_shape(const json_t *b)
{
	const char *answer = lev_json_str(b, "answer"), *scope = lev_json_str(b, "scope");

	if (answer && !lev_streq(answer, "approve") && !lev_streq(answer, "deny"))
		return "field 'answer' must be \"approve\" or \"deny\"";
	if (scope && !lev_streq(scope, "once") && !lev_streq(scope, "stage") &&
	    !lev_streq(scope, "run"))
		return "field 'scope' must be \"once\", \"stage\" or \"run\"";
	if (scope && !lev_streq(answer, "approve"))
		return "field 'scope' goes with \"answer\": \"approve\"";
	if (!answer && !json_object_get(b, "text") && !json_object_get(b, "choice"))
		return "no answer: give 'answer', 'choice' or 'text'";
	return NULL;
}

static unsigned h_answer(const struct lev_api_opts *o, const struct route *rt, const char *id,
			 const json_t *body, const struct lev_api_call *c, json_t **reply)
{
	static const char *const keys[] = { "answer", "scope", "choice", "text", "digest" };
	const char *why = answer_shape(body), *kind;
	json_t *q = NULL, *req;
	unsigned st;

	(void)o, (void)rt, (void)c;
	if (why)
		return fail(reply, 400, why);
	st = open_question(id, &q, reply);
	if (st)
		return st;
	if (!q || !lev_streq(lev_json_str(q, "id"), lev_json_str(body, "request"))) {
		json_decref(q);
		return fail(reply, 409, "that question is no longer open: read the run's "
					"interaction again");
	}
	kind = lev_json_str(q, "kind");
	/* a call is approved only as it was shown: the client says which it saw */
	if (!lev_streq(kind, "question") && !json_object_get(body, "digest")) {
		json_decref(q);
		return fail(reply, 400, "field 'digest' is required: the digest of the call you "
					"were shown (the question's 'digest')");
	}
	json_decref(q);
	req = lev_proto_request("respond");
	json_object_set(req, "id", json_object_get(body, "request"));
	for (size_t i = 0; i < ARRAY_LEN(keys); i++)
		if (json_object_get(body, keys[i]))
			json_object_set(req, keys[i], json_object_get(body, keys[i]));
	/* the daemon decides, as for `lev respond`: a digest of another call is refused */
	st = call_daemon(req, NULL, reply);
	if (st)
		return st;
	*reply = json_pack("{s:s,s:O}", "run", id, "answered", json_object_get(body, "request"));
	return 200;
}

/* ---- a run's tree status: its sub-agents and the token roll-up --------------- */

/*
 * The run ID and its sub-agents, recursively, each with its status and
 * tokens, and the totals: `lev stages ID --tree --json` (from the run's
 * record and its sub-records), the root's status, agent and stage the
 * daemon's.  400 for what is no run id, 404 for a run the daemon does not
 * know.
 */
static unsigned h_tree_status(const struct lev_api_opts *o, const struct route *rt,
			      const char *id, const json_t *body, const struct lev_api_call *c,
			      json_t **reply)
{
	static const char *const keys[] = { "status", "agent", "stage" };
	const char *args[] = { "stages", id, "--tree", "--json", NULL };
	json_t *run = NULL;
	unsigned st;

	if (!lev_run_id_valid(id))
		return fail(reply, 400, "not a run id (lev's look like 20260101-120000-000-abcdef)");
	st = h_get(o, rt, id, body, c, &run);
	if (st != 200) {
		*reply = run;
		return st;
	}
	st = show_cmd(o, args, reply);
	if (st == 200 && json_is_object(*reply))
		for (size_t i = 0; i < ARRAY_LEN(keys); i++)
			json_object_set(*reply, keys[i], json_object_get(run, keys[i]) ?
					json_object_get(run, keys[i]) : json_null());
	json_decref(run);
	return st;
}

/* ---- the table ---------------------------------------------------------------- */

/* ---- admin: the mutating routes, --allow-admin only (admin.c) ---------------- */

static unsigned h_bp_install(const struct lev_api_opts *o, const struct route *rt,
			     const char *id, const json_t *body, const struct lev_api_call *c,
			     json_t **reply)
{
	(void)o, (void)c;
	return lev_admin_blueprint_put(id, body, !strcmp(rt->method, "PUT"), reply);
}

static unsigned h_bp_remove(const struct lev_api_opts *o, const struct route *rt,
			    const char *id, const json_t *body, const struct lev_api_call *c,
			    json_t **reply)
{
	(void)o, (void)rt, (void)body, (void)c;
	return lev_admin_blueprint_delete(id, reply);
}

static unsigned h_mcp_add(const struct lev_api_opts *o, const struct route *rt,
			  const char *id, const json_t *body, const struct lev_api_call *c,
			  json_t **reply)
{
	(void)o, (void)rt, (void)id, (void)c;
	return lev_admin_mcp_add(body, reply);
}

static unsigned h_mcp_remove(const struct lev_api_opts *o, const struct route *rt,
			     const char *id, const json_t *body, const struct lev_api_call *c,
			     json_t **reply)
{
	(void)o, (void)rt, (void)body, (void)c;
	return lev_admin_mcp_delete(id, reply);
}

static unsigned h_config_put(const struct lev_api_opts *o, const struct route *rt,
			     const char *id, const json_t *body, const struct lev_api_call *c,
			     json_t **reply)
{
	(void)o, (void)rt, (void)id, (void)c;
	return lev_admin_config_put(body, reply);
}

#define BODY(f) f, ARRAY_LEN(f)

static const struct route routes[] = {
	{ "GET", "/api/runs", LEV_API_TEXT, false, NULL, 0, h_list,
	  "List runs (the daemon's, live and ended), paged by 'cursor' and 'limit'" },
	{ "GET", "/api/agents", LEV_API_TEXT, false, NULL, 0, h_list,
	  "List runs (Leviath's older path; as /api/runs)" },
	{ "GET", "/api/agents/tree", LEV_API_JSON, false, NULL, 0, h_tree,
	  "The daemon's runs, each with its running sub-agents under it, as 'lev ps' lists them" },
	{ "POST", "/api/agents", LEV_API_JSON, false, BODY(spawn_fields), h_spawn,
	  "Spawn a run, as 'lev run --detach' does" },
	{ "GET", "/api/agents/{id}", LEV_API_JSON, false, NULL, 0, h_get, "One run" },
	{ "DELETE", "/api/agents/{id}", LEV_API_JSON, false, NULL, 0, h_runop,
	  "Cancel a run, as 'lev cancel' does (its record stays)" },
	{ "GET", "/api/agents/{id}/result", LEV_API_JSON, false, NULL, 0, h_result,
	  "The run's status, output and error" },
	{ "POST", "/api/agents/{id}/pause", LEV_API_JSON, false, NULL, 0, h_runop,
	  "Pause a run at its next step" },
	{ "POST", "/api/agents/{id}/resume", LEV_API_JSON, false, NULL, 0, h_runop,
	  "Resume a paused run" },
	{ "POST", "/api/agents/{id}/message", LEV_API_JSON, false, BODY(message_fields), h_message,
	  "Steer a running agent, as 'lev msg' does" },
	{ "GET", "/api/agents/{id}/interaction", LEV_API_JSON, false, NULL, 0, h_question,
	  "The question this run waits on, with the whole call and its digest" },
	{ "POST", "/api/agents/{id}/interaction", LEV_API_JSON, false, BODY(answer_fields),
	  h_answer, "Answer it, bound to the digest of the call shown, as 'lev respond' does" },
	{ "GET", "/api/blueprints", LEV_API_JSON, false, NULL, 0, h_blueprints,
	  "The installed agents, as 'lev list --json'" },
	{ "POST", "/api/blueprints/validate", LEV_API_JSON, false, BODY(validate_fields),
	  h_validate, "Check a blueprint, as 'lev validate --json'" },
	{ "GET", "/api/doctor", LEV_API_JSON, false, NULL, 0, h_doctor,
	  "The checks of 'lev doctor --json' (a failing check is a 200)" },
	{ "GET", "/api/mcp/servers", LEV_API_JSON, false, NULL, 0, h_mcp,
	  "The configured MCP servers, as 'lev mcp list --json'" },
	{ "GET", "/api/interactions", LEV_API_JSON, false, NULL, 0, h_questions,
	  "Every question a run waits on, as 'lev respond' lists them" },
	{ "GET", "/api/runs/{id}/events", LEV_API_EVENTS, false, NULL, 0, NULL,
	  "The run's live events as server-sent events, as 'lev attach' follows them" },
	{ "GET", "/api/openapi.json", LEV_API_OPENAPI, false, NULL, 0, NULL,
	  "This document" },
	{ "GET", "/ws/agents/{id}", LEV_API_WS, false, NULL, 0, NULL,
	  "The run's live events over WebSocket (token as ?token=; Origin: this server's or --cors)" },
	{ "GET", "/ws", LEV_API_WS, false, NULL, 0, NULL,
	  "Every run's events over WebSocket, each tagged with its run_id and agent_id, runs "
	  "started later included (token as ?token=; Origin: this server's or --cors)" },
	{ "GET", "/api/events", LEV_API_EVENTS, false, NULL, 0, NULL,
	  "Every run's events as server-sent events, as /ws sends them" },
	{ "GET", "/api/models", LEV_API_JSON, false, NULL, 0, h_models,
	  "The models lev knows, as 'lev models list --json'" },
	{ "GET", "/api/tools", LEV_API_JSON, false, NULL, 0, h_tools,
	  "The built-in tools, as 'lev tools --json'" },
	{ "GET", "/api/agents/{id}/stages", LEV_API_JSON, false, NULL, 0, h_run_show,
	  "The run's stages, as 'lev stages RUN --json'" },
	{ "GET", "/api/agents/{id}/context", LEV_API_JSON, false, NULL, 0, h_run_show,
	  "The run's context, as 'lev context RUN --json'" },
	{ "GET", "/api/agents/{id}/children", LEV_API_JSON, false, NULL, 0, h_children,
	  "The run's running sub-agents (workers, children), as 'lev ps' lists them under it" },
	{ "GET", "/api/agents/{id}/logs", LEV_API_JSON, false, NULL, 0, h_logs,
	  "The run's events, as 'lev logs RUN' prints them" },
	{ "GET", "/api/agents/{id}/files", LEV_API_JSON, false, NULL, 0, h_files,
	  "One level of the run's workdir, or one file of it (?path=, opened beneath the workdir)" },
	/* Leviath's routes lev does not serve: each a 501 that says why (REFUSED) */
	{ "DELETE", "/api/runs", LEV_API_REFUSED, false, NULL, 0, NULL,
	  "not served: lev keeps every ended run's record (its audit trail); nothing deletes it over HTTP" },
	{ "DELETE", "/api/runs/{id}", LEV_API_REFUSED, false, NULL, 0, NULL,
	  "not served: lev keeps every ended run's record (its audit trail); nothing deletes it over HTTP" },
	{ "GET", "/api/agents/{id}/tree-status", LEV_API_JSON, false, NULL, 0, h_tree_status,
	  "The run and its sub-agents (children, fan-out workers, theirs), each with its status "
	  "and tokens, and the totals with every descendant's, as 'lev stages RUN --tree --json'" },
	{ "GET", "/api/agents/{id}/context/history", LEV_API_JSON, false, NULL, 0,
	  h_context_history, "The run's context history, as 'lev context RUN --json', paged "
	  "by 'cursor' (a point index) and 'limit' (1 to 100)" },
	{ "GET", "/api/blueprints/{name}", LEV_API_JSON, false, NULL, 0, h_blueprint,
	  "One installed agent, its entry of 'lev list --json' (404: none of that name)" },
	{ "POST", "/api/blueprints", LEV_API_JSON, true, BODY(lev_admin_blueprint_fields),
	  h_bp_install, "admin: install a blueprint from its manifest text ({name, manifest}) "
	  "with every check of 'lev add' (409: one of that name is installed)" },
	{ "PUT", "/api/blueprints/{name}", LEV_API_JSON, true, BODY(lev_admin_blueprint_fields),
	  h_bp_install, "admin: replace an installed blueprint's manifest ({manifest}), its other "
	  "files kept, as 'lev add --force' (404: none of that name)" },
	{ "DELETE", "/api/blueprints/{name}", LEV_API_JSON, true, NULL, 0, h_bp_remove,
	  "admin: remove an installed blueprint, as 'lev remove' (404: none of that name)" },
	{ "POST", "/api/mcp/servers", LEV_API_JSON, true, BODY(lev_admin_mcp_fields), h_mcp_add,
	  "admin (a stdio server is a program lev starts): add an MCP server to config.toml, as "
	  "'lev mcp add' (409: one of that name is configured)" },
	{ "DELETE", "/api/mcp/servers/{name}", LEV_API_JSON, true, NULL, 0, h_mcp_remove,
	  "admin: remove an MCP server from config.toml and its approved tools, as 'lev mcp "
	  "remove' (404: none of that name)" },
	{ "GET", "/api/mcp/servers/{name}/status", LEV_API_JSON, false, NULL, 0, h_mcp_status,
	  "One MCP server's entry of 'lev mcp list --json' (404: none of that name)" },
	{ "POST", "/api/mcp/servers/{name}/login", LEV_API_REFUSED, false, NULL, 0, NULL,
	  "not served: an MCP server's OAuth login opens a browser on this machine: lev mcp login NAME" },
	{ "POST", "/api/mcp/servers/{name}/test", LEV_API_JSON, true, NULL, 0, h_mcp_test,
	  "admin (it starts a process): start an MCP server in its sandbox, as 'lev mcp test "
	  "NAME --json'" },
	{ "GET", "/api/fs/dirs", LEV_API_JSON, false, NULL, 0, h_fs_dirs,
	  "One level of subdirectories for a workdir picker (?path=, ?hidden=), opened beneath "
	  "the home of the user lev serve runs as; lev's own files and credential stores never listed" },
	{ "POST", "/api/fs/dirs", LEV_API_REFUSED, false, NULL, 0, NULL,
	  "not served: lev serve makes no directory on the client's say" },
	{ "GET", "/api/config", LEV_API_JSON, false, NULL, 0, h_config,
	  "The configuration in use, redacted: a key, token or credential only as its presence" },
	{ "PUT", "/api/config", LEV_API_JSON, true, BODY(lev_admin_config_fields), h_config_put,
	  "admin: replace config.toml with the text {config}, parsed by lev's config loader "
	  "first (400 naming line and column; nothing written), then written atomically" },
	{ "POST", "/api/config/validate", LEV_API_JSON, false, BODY(config_validate_fields),
	  h_config_validate, "Check a config.toml text as lev's config loader parses it: "
	  "{valid, errors, warnings}, each finding with line and column; nothing written" },
	{ "GET", "/api/scripts", LEV_API_REFUSED, false, NULL, 0, NULL,
	  "not served: lev has no Leviath scripts; a tool is a blueprint's" },
	{ "POST", "/api/scripts/validate", LEV_API_REFUSED, false, NULL, 0, NULL,
	  "not served: lev has no Leviath scripts; a tool is a blueprint's" },
	{ "GET", "/api/scripts/{kind}/{name}", LEV_API_REFUSED, false, NULL, 0, NULL,
	  "not served: lev has no Leviath scripts; a tool is a blueprint's" },
	{ "PUT", "/api/scripts/{kind}/{name}", LEV_API_REFUSED, true, NULL, 0, NULL,
	  "admin: lev has no Leviath scripts; a tool is a blueprint's" },
	{ "DELETE", "/api/scripts/{kind}/{name}", LEV_API_REFUSED, true, NULL, 0, NULL,
	  "admin: lev has no Leviath scripts; a tool is a blueprint's" },
};

/* ID is one run or request id: no '/', no dot or dash first, no control or odd byte. */
static bool id_ok(const char *s, size_t n)
{
	if (!n || n > 128 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", s[i]))
			return false;
	return true;
}

/* Whether PATH matches PATTERN; *id (owned) the last segment a "{...}" matched. */
static bool match(const char *pattern, const char *path, char **id)
{
	const char *p = pattern, *s = path;

	*id = NULL;
	while (*p && *s) {
		if (*p == '{') {
			size_t n = strcspn(s, "/");

			if (!id_ok(s, n)) {
				free(*id);
				*id = NULL;
				return false;
			}
			free(*id);
			*id = xstrndup(s, n);
			p += strcspn(p, "}") + 1;
			s += n;
			continue;
		}
		if (*p++ != *s++)
			break;
		if (!*p && !*s)
			return true;
	}
	if (!*p && !*s)
		return true;
	free(*id);
	*id = NULL;
	return false;
}

unsigned lev_api_dispatch(const struct lev_api_opts *o, const struct lev_api_call *call,
			  enum lev_api_kind *kind, char **run, json_t **reply)
{
	struct lev_err err = LEV_ERR_INIT;
	bool path_known = false;
	json_t *body = NULL;
	unsigned st;

	*kind = LEV_API_JSON;
	*run = NULL;
	*reply = NULL;
	for (size_t i = 0; i < ARRAY_LEN(routes); i++) {
		const struct route *rt = &routes[i];
		char *id = NULL;

		if (!match(rt->pattern, call->path, &id))
			continue;
		path_known = true;
		if (strcmp(rt->method, call->method)) {
			free(id);
			continue;
		}
		if (rt->admin && !o->allow_admin) {
			free(id);
			return fail(reply, 403, "a mutating admin route: lev serve needs --allow-admin");
		}
		if (rt->kind == LEV_API_REFUSED) {
			free(id);
			return fail(reply, 501, rt->summary);
		}
		if (!rt->fields && call->len) {
			free(id);
			return fail(reply, 400, "this route takes no body");
		}
		if (rt->fields && lev_apibody_parse(call->body, call->len, rt->fields, rt->n_fields,
						    &body, &err) < 0) {
			free(id);
			return fail(reply, err.code == -EMSGSIZE ? 413 : 400, err.msg);
		}
		*kind = rt->kind;
		if (rt->kind != LEV_API_JSON && rt->kind != LEV_API_TEXT) {
			*run = id;
			return 200;
		}
		st = rt->fn(o, rt, id, body, call, reply);
		json_decref(body);
		free(id);
		return st;
	}
	if (path_known)
		return fail(reply, 405, "method not allowed on this path");
	return fail(reply, 404, "no such route");
}

/* ---- OpenAPI ------------------------------------------------------------------ */

static const char *schema_type(enum lev_apibody_type t)
{
	return t == LEV_APIBODY_STRING ? "string" : t == LEV_APIBODY_BOOL ? "boolean"
					: t == LEV_APIBODY_UINT ? "integer" : "array";
}

static json_t *body_schema(const struct route *rt)
{
	json_t *props = json_object(), *req = json_array();

	for (size_t i = 0; i < rt->n_fields; i++) {
		const struct lev_apibody_field *f = &rt->fields[i];
		json_t *p = json_pack("{s:s}", "type", schema_type(f->type));

		if (f->type == LEV_APIBODY_UINT)
			json_object_set_new(p, "minimum", json_integer(0));
		if (f->type == LEV_APIBODY_STRINGS)
			json_object_set_new(p, "items", json_pack("{s:s}", "type", "string"));
		json_object_set_new(props, f->name, p);
		if (f->required)
			json_array_append_new(req, json_string(f->name));
	}
	return json_pack("{s:b,s:{s:{s:{s:s,s:o,s:o,s:b}}}}", "required", 1, "content",
			 "application/json", "schema", "type", "object", "properties", props,
			 "required", req, "additionalProperties", 0);
}

static json_t *operation(const struct route *rt)
{
	json_t *op = json_pack("{s:s,s:s,s:{s:{s:s},s:{s:s},s:{s:s}}}", "summary", rt->summary,
			       "operationId", "", "responses", "200", "description", "ok", "400",
			       "description", "bad request (the error names the field)", "401",
			       "description", "no or wrong bearer token");
	char *opid = xasprintf("%s %s", rt->method, rt->pattern);

	json_object_set_new(op, "operationId", json_string(opid));
	free(opid);
	for (const char *b = strchr(rt->pattern, '{'); b; b = strchr(b + 1, '{')) {
		char *name = xstrndup(b + 1, strcspn(b + 1, "}"));

		if (!json_object_get(op, "parameters"))
			json_object_set_new(op, "parameters", json_array());
		json_array_append_new(json_object_get(op, "parameters"),
				      json_pack("{s:s,s:s,s:b,s:{s:s}}", "name", name, "in", "path",
						"required", 1, "schema", "type", "string"));
		free(name);
	}
	if (rt->admin)
		json_object_set_new(json_object_get(op, "responses"), "403",
				    json_pack("{s:s}", "description", "without --allow-admin"));
	if (rt->kind == LEV_API_REFUSED)
		json_object_set_new(json_object_get(op, "responses"), "501",
				    json_pack("{s:s}", "description", rt->summary));
	if (rt->fields)
		json_object_set_new(op, "requestBody", body_schema(rt));
	if (rt->kind == LEV_API_EVENTS)
		json_object_set_new(json_object_get(json_object_get(op, "responses"), "200"),
				    "content", json_pack("{s:{}}", "text/event-stream"));
	if (rt->kind == LEV_API_WS)
		json_object_set_new(json_object_get(op, "responses"), "101",
				    json_pack("{s:s}", "description", "switching to WebSocket"));
	return op;
}

json_t *lev_api_openapi(const struct lev_api_opts *o)
{
	(void)o;
	json_t *paths = json_object();

	for (size_t i = 0; i < ARRAY_LEN(routes); i++) {
		const struct route *rt = &routes[i];
		json_t *item = json_object_get(paths, rt->pattern);
		char *m = xstrdup(rt->method);

		if (!item) {
			item = json_object();
			json_object_set_new(paths, rt->pattern, item);
		}
		for (char *p = m; *p; p++)
			*p = (char)(*p - 'A' + 'a');
		json_object_set_new(item, m, operation(rt));
		free(m);
	}
	return json_pack("{s:s,s:{s:s,s:s},s:o,s:{s:{s:{s:s,s:s}}},s:[{s:[]}]}", "openapi", "3.0.3",
			 "info", "title", "lev serve", "version", "1", "paths", paths,
			 "components", "securitySchemes", "bearer", "type", "http", "scheme",
			 "bearer", "security", "bearer");
}
