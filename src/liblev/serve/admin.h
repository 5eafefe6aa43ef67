/*
 * admin.h - lev serve's mutating admin routes (api.c mounts them only with
 * --allow-admin; without it each is a 403 and nothing is read).
 *
 * Each is a client of the one liblev function its lev command calls, so a
 * write over HTTP makes exactly the checks the command makes:
 *
 *	POST   /api/blueprints		lev_agentstore_install_manifest()  (lev add)
 *	PUT    /api/blueprints/{name}	the same, replacing              (lev add --force)
 *	DELETE /api/blueprints/{name}	lev_agentstore_remove()            (lev remove)
 *	POST   /api/mcp/servers		lev_config_mcp_add()               (lev mcp add)
 *	DELETE /api/mcp/servers/{name}	lev_mcp_server_remove()            (lev mcp remove)
 *	PUT    /api/config		lev_config_replace()
 *
 * Each returns the HTTP status and *reply (a new reference): {"ok": true,
 * ...} or {"error": "..."} (400 bad input, 404 none of that name, 409
 * already there, 500 lev could not write).  A failure writes nothing.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "liblev/serve/apibody.h"

/* The bodies: {name, manifest}; {name, command | url, ...}; {config}. */
#define LEV_ADMIN_BLUEPRINT_FIELDS 2
#define LEV_ADMIN_MCP_FIELDS 9
#define LEV_ADMIN_CONFIG_FIELDS 1
extern const struct lev_apibody_field lev_admin_blueprint_fields[LEV_ADMIN_BLUEPRINT_FIELDS];
extern const struct lev_apibody_field lev_admin_mcp_fields[LEV_ADMIN_MCP_FIELDS];
extern const struct lev_apibody_field lev_admin_config_fields[LEV_ADMIN_CONFIG_FIELDS];

/* Install BODY's manifest as NAME (the path's; NULL: BODY's 'name'); REPLACE: PUT. */
unsigned lev_admin_blueprint_put(const char *name, const json_t *body, bool replace,
				 json_t **reply);
unsigned lev_admin_blueprint_delete(const char *name, json_t **reply);
unsigned lev_admin_mcp_add(const json_t *body, json_t **reply);
unsigned lev_admin_mcp_delete(const char *name, json_t **reply);
unsigned lev_admin_config_put(const json_t *body, json_t **reply);
