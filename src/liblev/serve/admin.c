/*
 * admin.c - lev serve's mutating admin routes (admin.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/agentstore.h"
#include "liblev/conf/config-edit.h"
#include "liblev/conf/datadir.h"
#include "liblev/daemon/proto.h"
#include "liblev/tools/mcp-pins.h"
#include "liblev/serve/admin.h"

const struct lev_apibody_field lev_admin_blueprint_fields[LEV_ADMIN_BLUEPRINT_FIELDS] = {
	{ "name", LEV_APIBODY_STRING, false },	/* POST: required; PUT: the path's, if given */
	{ "manifest", LEV_APIBODY_STRING, true },
};

const struct lev_apibody_field lev_admin_mcp_fields[LEV_ADMIN_MCP_FIELDS] = {
	{ "name", LEV_APIBODY_STRING, true },
	{ "command", LEV_APIBODY_STRING, false },
	{ "args", LEV_APIBODY_STRINGS, false },
	{ "env", LEV_APIBODY_STRINGS, false },		/* "NAME=value", as --env */
	{ "url", LEV_APIBODY_STRING, false },
	{ "headers", LEV_APIBODY_STRINGS, false },	/* "Name=value", as --header */
	{ "timeout_secs", LEV_APIBODY_UINT, false },
	{ "sandbox", LEV_APIBODY_STRING, false },	/* only "none", as --sandbox */
	{ "allow_local_network", LEV_APIBODY_BOOL, false },
};

const struct lev_apibody_field lev_admin_config_fields[LEV_ADMIN_CONFIG_FIELDS] = {
	{ "config", LEV_APIBODY_STRING, true },
};

static unsigned fail(json_t **reply, unsigned status, const char *msg)
{
	*reply = json_pack("{s:s}", "error", msg);
	return status;
}

/* A liblev failure R as an HTTP status: who is at fault. */
static unsigned fail_err(json_t **reply, int r, const struct lev_err *err)
{
	switch (r) {
	case -EINVAL:
	case -EPROTO:
	case LEV_EPARSE:
		return fail(reply, 400, err->msg);
	case -ENOENT:
		return fail(reply, 404, err->msg);
	case -EEXIST:
		return fail(reply, 409, err->msg);
	case -EFBIG:
	case -EMSGSIZE:
		return fail(reply, 413, err->msg);
	default:
		return fail(reply, 500, err->msg);
	}
}

unsigned lev_admin_blueprint_put(const char *name, const json_t *body, bool replace,
				 json_t **reply)
{
	const char *given = lev_json_str(body, "name");
	const json_t *mf = json_object_get(body, "manifest");
	struct lev_err err = LEV_ERR_INIT;
	struct lev_blueprint *bp = NULL;
	int r;

	if (name && given && strcmp(name, given))
		return fail(reply, 400, "field 'name' differs from the path's name");
	if (!name)
		name = given;
	if (!name)
		return fail(reply, 400, "field 'name' is required");
	r = lev_agentstore_install_manifest(name, json_string_value(mf), json_string_length(mf),
					    replace, &bp, &err);
	if (r < 0)
		return fail_err(reply, r, &err);
	*reply = json_pack("{s:b,s:s,s:s?,s:s}", "ok", 1, "name", bp->name, "version",
			   bp->version, "dir", bp->dir);
	lev_blueprint_free(bp);
	return 200;
}

unsigned lev_admin_blueprint_delete(const char *name, json_t **reply)
{
	struct lev_err err = LEV_ERR_INIT;
	int r = lev_agentstore_remove(name, &err);

	if (r < 0)
		return fail_err(reply, r, &err);
	*reply = json_pack("{s:b,s:s}", "ok", 1, "name", name);
	return 200;
}

/* Each "NAME=value" of BODY's array KEY pushed onto *list as "NAME<SEP>value". */
static int pairs(const json_t *body, const char *key, const char *sep, char ***list,
		 json_t **reply)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(body, key), i, e)
		if (!lev_config_mcp_pair(list, json_string_value(e), sep)) {
			_cleanup_free_ char *m = xasprintf("field '%s': each entry is NAME=value",
							   key);
			return (int)fail(reply, 400, m);
		}
	return 0;
}

/* BODY as the server S (*s owned by the caller, conf fields); 0 or the status of a 400. */
static unsigned mcp_conf(const json_t *body, struct lev_mcp_server_conf *s, json_t **reply)
{
	const json_t *e;
	size_t i;
	int r;

	s->name = xstrdup(lev_json_str(body, "name"));
	if (lev_json_str(body, "command"))
		s->command = xstrdup(lev_json_str(body, "command"));
	if (lev_json_str(body, "url"))
		s->url = xstrdup(lev_json_str(body, "url"));
	json_array_foreach(json_object_get(body, "args"), i, e)
		s->args = lev_strv_push(s->args, json_string_value(e));
	r = pairs(body, "env", "=", &s->env, reply);
	if (r == 0)
		r = pairs(body, "headers", ": ", &s->headers, reply);
	if (r)
		return (unsigned)r;
	if (json_object_get(body, "timeout_secs")) {
		/* 0 would be written as no timeout_secs (the default), not refused */
		s->timeout_secs = (uint64_t)json_integer_value(json_object_get(body,
									    "timeout_secs"));
		if (!s->timeout_secs)
			return fail(reply, 400, "field 'timeout_secs' must be 1 to 86400 seconds");
	}
	if (lev_json_str(body, "sandbox") && strcmp(lev_json_str(body, "sandbox"), "none"))
		return fail(reply, 400, "field 'sandbox' takes only \"none\"");
	s->sandbox_none = lev_json_str(body, "sandbox") != NULL;
	s->allow_local_network = json_is_true(json_object_get(body, "allow_local_network"));
	return 0;
}

/*
 * Add the server BODY describes to config.toml as `lev mcp add` does: the
 * block appended, the result parsed by the loader (a command and a url, a
 * url with env, a timeout out of range ... are refused there) and checked
 * to change nothing else before it is written.
 */
unsigned lev_admin_mcp_add(const json_t *body, json_t **reply)
{
	struct lev_mcp_server_conf s = { 0 };
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *path = NULL;
	unsigned st;
	int r;

	st = mcp_conf(body, &s, reply);
	if (!st) {
		r = lev_datadir_config_path(&path, &err);
		if (r == 0)
			r = lev_config_mcp_add(path, &s, &err);
		if (r < 0) {
			st = fail_err(reply, r, &err);
		} else {
			*reply = json_pack("{s:b,s:s}", "ok", 1, "name", s.name);
			st = 200;
		}
	}
	free(s.name);
	free(s.command);
	free(s.url);
	lev_strv_free(s.args);
	lev_strv_free(s.env);
	lev_strv_free(s.headers);
	return st;
}

unsigned lev_admin_mcp_delete(const char *name, json_t **reply)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *path = NULL;
	int r = lev_datadir_config_path(&path, &err);

	if (r == 0)
		r = lev_mcp_server_remove(path, NULL, name, &err);
	if (r < 0)
		return fail_err(reply, r, &err);
	*reply = json_pack("{s:b,s:s,s:s?}", "ok", 1, "name", name, "warning",
			   r > 0 ? err.msg : NULL);
	return 200;
}

/*
 * Replace config.toml with BODY's text (lev_config_replace()): parsed by
 * the loader first, a 400 naming the line and column when it does not
 * parse, then written atomically with its mode kept.  Nothing is merged:
 * GET /api/config shows a secret only as its presence (a boolean, a list
 * of names), never as a value or a placeholder, so there is nothing a
 * client could write back in its place; the text is the whole file.
 */
unsigned lev_admin_config_put(const json_t *body, json_t **reply)
{
	const json_t *text = json_object_get(body, "config");
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_free_ char *path = NULL;
	_cleanup_strv_ char **warnings = NULL;
	json_t *w;
	int r;

	r = lev_datadir_config_path(&path, &err);
	if (r == 0)
		r = lev_config_replace(path, json_string_value(text), json_string_length(text),
				       "config.toml", &warnings, &err);
	if (r < 0)
		return fail_err(reply, r == -ENOENT ? -EINVAL : r, &err);
	w = json_array();
	for (char **p = warnings; p && *p; p++)
		json_array_append_new(w, json_string(*p));
	*reply = json_pack("{s:b,s:o}", "ok", 1, "warnings", w);
	return 200;
}
