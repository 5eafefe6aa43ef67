/*
 * argcheck.h - check a tool call's JSON arguments against the tool's JSON
 * Schema, before anything else looks at them.
 *
 * Only a small subset of JSON Schema is understood, the part tool schemas
 * use.  A schema using anything else is refused by lev_argcheck_schema()
 * (a keyword we do not understand could be a constraint we would skip: fail
 * closed), and lev_argcheck() treats an unknown keyword the same way.
 *
 *	type			"object" "string" "integer" "number" "boolean"
 *				"array" "null" (one word, not a list)
 *	properties		object: name -> subschema
 *	required		array of property names
 *	additionalProperties	false (refuse names not in properties), or
 *				true / absent (allow them, unchecked)
 *	items			array: the subschema every element must match
 *	enum			array of strings, integers or booleans
 *	minimum, maximum	integer/number bounds (inclusive)
 *	minLength, maxLength	string length in bytes
 *	minItems, maxItems	array length
 *	description, title, default, examples, $schema	annotations (ignored)
 *
 * "integer" accepts a JSON integer, and a real with no fractional part
 * (2.0), which some models write.  Schemas nest at most
 * LEV_ARGCHECK_MAX_DEPTH deep; arguments are checked to the same depth and a
 * deeper value is refused.
 *
 * Messages name the argument by its path ("argument 'paths[2]' must be a
 * string, got integer") so the model can fix its call.  Nothing here
 * allocates on the success path of lev_argcheck() except through ERR.
 */
#pragma once

#include <jansson.h>

#include "liblev/base/error.h"

#define LEV_ARGCHECK_MAX_DEPTH 32

/*
 * Check that SCHEMA stays inside the subset above.  Returns 0, or LEV_EPARSE
 * naming the first offending keyword and where it is.
 */
int lev_argcheck_schema(const json_t *schema, struct lev_err *err);

/*
 * Validate ARGS against SCHEMA (NULL schema: ARGS must be an object, and
 * anything in it goes).  Returns 0 when valid, -EINVAL with a message for
 * the model when not, or LEV_EPARSE when SCHEMA itself is outside the
 * subset (the call is then refused too).
 */
int lev_argcheck(const json_t *schema, const json_t *args, struct lev_err *err);

/*
 * The same for a SCHEMA that already passed lev_argcheck_schema() (the tool
 * registry checks every schema once): no schema check per call.
 */
int lev_argcheck_checked(const json_t *schema, const json_t *args, struct lev_err *err);
