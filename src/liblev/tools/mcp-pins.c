/*
 * mcp-pins.c - the MCP tools a user approved, across runs (mcp-pins.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/base/sha256.h"
#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/conf/config-edit.h"
#include "liblev/tools/mcp-pins.h"

int lev_mcp_pins_path(const char *data_root, const char *server, char **out,
		      struct lev_err *err)
{
	_cleanup_free_ char *root = NULL;

	if (!lev_mcp_server_name_ok(server))
		return lev_err_set(err, -EINVAL, "'%s' is not an MCP server name", server);
	if (!data_root) {
		if (lev_datadir_root(&root, err) < 0)
			return err->code;
		data_root = root;
	}
	*out = xasprintf("%s/%s/%s.json", data_root, LEV_MCP_PINS_DIR, server);
	return 0;
}

static void hash_text(const char *s, char out[LEV_SHA256_HEX_LEN + 1])
{
	struct lev_sha256 c;
	uint8_t d[LEV_SHA256_LEN];

	lev_sha256_init(&c);
	lev_sha256_update(&c, s, strlen(s));
	lev_sha256_final(&c, d);
	lev_sha256_hex(d, out);
}

static void hash_schema(const json_t *schema, char out[LEV_SHA256_HEX_LEN + 1])
{
	_cleanup_free_ char *js = json_dumps(schema, JSON_COMPACT | JSON_SORT_KEYS);

	hash_text(js ? js : "", out);
}

int lev_mcp_pins_load(const char *data_root, const char *server, json_t **out,
		      struct lev_err *err)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	json_t *j;
	size_t len = 0;
	int r;

	r = lev_mcp_pins_path(data_root, server, &path, err);
	if (r < 0)
		return r;
	r = lev_read_file(path, LEV_MCP_PINS_MAX, &text, &len, err);
	if (r == -ENOENT) {
		*out = NULL;
		return 0;
	}
	if (r < 0)
		return r;
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(json_object_get(j, "tools"))) {
		json_decref(j);
		return lev_err_set(err, LEV_EPARSE, "'%s' is not a record of approved MCP tools; "
				   "remove it and approve the server again", path);
	}
	*out = j;
	return 0;
}

const char *lev_mcp_pins_diff(const json_t *record, const struct lev_mcp_tool *t)
{
	const json_t *e = json_object_get(json_object_get(record, "tools"), t->name);
	const char *pin = json_string_value(json_object_get(e, "pin"));
	const char *desc = json_string_value(json_object_get(e, "description"));
	char dh[LEV_SHA256_HEX_LEN + 1];
	bool d;

	if (!pin)
		return "it is new";
	if (!strcmp(pin, t->pin))
		return NULL;
	hash_text(t->description, dh);
	d = !desc || strcmp(desc, dh);
	return d ? "its description changed" : "its input schema changed";
}

char **lev_mcp_pins_gone(const json_t *record, const struct lev_mcp_server *s)
{
	const char *name;
	const json_t *v;
	char **gone = NULL;

	json_object_foreach((json_t *)json_object_get(record, "tools"), name, v) {
		size_t i;

		for (i = 0; i < lev_mcp_tool_count(s); i++)
			if (!strcmp(lev_mcp_tool_at(s, i)->name, name))
				break;
		if (i == lev_mcp_tool_count(s))
			gone = lev_strv_push(gone, name);
	}
	return gone;
}

int lev_mcp_pins_approve(const struct lev_mcp_server *s, const char *data_root,
			 struct lev_err *err)
{
	_cleanup_free_ char *path = NULL, *dir = NULL, *text = NULL;
	json_t *tools = json_object(), *rec;
	int r;

	r = lev_mcp_pins_path(data_root, lev_mcp_name(s), &path, err);
	if (r < 0) {
		json_decref(tools);
		return r;
	}
	for (size_t i = 0; i < lev_mcp_tool_count(s); i++) {
		const struct lev_mcp_tool *t = lev_mcp_tool_at(s, i);
		char dh[LEV_SHA256_HEX_LEN + 1], sh[LEV_SHA256_HEX_LEN + 1];

		hash_text(t->description, dh);
		hash_schema(t->schema, sh);
		json_object_set_new(tools, t->name, json_pack("{s:s, s:s, s:s}", "pin", t->pin,
							      "description", dh, "schema", sh));
	}
	rec = json_pack("{s:s, s:o}", "server", lev_mcp_name(s), "tools", tools);
	text = json_dumps(rec, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(rec);
	dir = xstrndup(path, (size_t)(strrchr(path, '/') - path));
	r = lev_mkdir_p(dir, LEV_DIR_MODE, err);
	if (r == 0)
		r = lev_write_file_atomic(path, text, strlen(text), LEV_FILE_MODE, err);
	return r;
}

int lev_mcp_pins_forget(const char *data_root, const char *server, struct lev_err *err)
{
	_cleanup_free_ char *path = NULL;
	int r = lev_mcp_pins_path(data_root, server, &path, err);

	if (r < 0)
		return r;
	if (unlink(path) < 0 && errno != ENOENT)
		return lev_err_errno(err, -errno, "cannot remove '%s'", path);
	return 0;
}

int lev_mcp_server_remove(const char *config_path, const char *data_root, const char *name,
			  struct lev_err *err)
{
	int r = lev_config_mcp_remove(config_path, name, err);

	if (r < 0)
		return r;
	return lev_mcp_pins_forget(data_root, name, err) < 0 ? 1 : 0;
}

int lev_mcp_pins_enforce(struct lev_mcp_server *s, const char *data_root, char ***notes,
			 struct lev_err *err)
{
	const char *name = lev_mcp_name(s);
	json_t *rec = NULL;
	char **gone, **v = NULL;
	int r;

	r = lev_mcp_pins_load(data_root, name, &rec, err);
	if (r < 0)
		return r;
	if (!rec) {
		r = lev_mcp_pins_approve(s, data_root, err);
		if (r == 0)
			*notes = lev_strv_push_take(NULL, xasprintf(
				"MCP server '%s': its first use; lev recorded its %zu tools as "
				"approved ('lev mcp approve %s' records them again)", name,
				lev_mcp_tool_count(s), name));
		return r;
	}
	for (size_t i = 0; i < lev_mcp_tool_count(s); i++) {
		const struct lev_mcp_tool *t = lev_mcp_tool_at(s, i);
		const char *why = lev_mcp_pins_diff(rec, t);
		_cleanup_free_ char *msg = NULL;

		if (!why)
			continue;
		msg = xasprintf("%s since you approved server '%s'; 'lev mcp approve %s' "
				"approves it", why, name, name);
		lev_mcp_tool_refuse(s, i, msg);
	}
	gone = lev_mcp_pins_gone(rec, s);
	for (char **g = gone; g && *g; g++)
		v = lev_strv_push_take(v, xasprintf("MCP server '%s': tool '%s' you approved is "
						    "gone (removed)", name, *g));
	lev_strv_free(gone);
	json_decref(rec);
	*notes = v;
	return 0;
}
