/*
 * configjson.h - the configuration lev uses, as GET /api/config shows it.
 *
 * Redacted by construction: the document is written field by field from
 * the parsed configuration (conf/config.h), and only the fields that are
 * settings, never a secret, are copied.  A key, a token or a credential is
 * shown only as its presence: a provider's stored key as "key_set", an MCP
 * server's environment and headers by their names with their values
 * withheld, its arguments as a count (an argument may be a token).  No
 * field is looked at by the name of a key to decide what is secret.
 */
#pragma once

#include <jansson.h>

#include "liblev/base/error.h"

/* 0 and *out (a new reference), or a negative errno and ERR. */
int lev_config_redacted(json_t **out, struct lev_err *err);
