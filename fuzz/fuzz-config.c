/*
 * fuzz-config.c - lev_config_parse() on arbitrary bytes.
 *
 * Besides "no crash, no leak, no UB": a failed parse leaves a one-line
 * message naming "fuzz:", a successful one leaves enums in range and
 * one-line warnings, and the per-agent helpers work on whatever parsed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/conf/config.h"
#include "liblev/base/strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lev_config c;
	struct lev_err err = LEV_ERR_INIT;
	struct lev_tool_perms p;
	enum lev_verdict v;
	char **g, **tools = NULL, **shell = NULL, **w;
	bool defaults;
	size_t i;

	if (lev_config_parse((const char *)data, size, "fuzz", &c, &err) < 0) {
		CHECK(err.msg[0] != '\0');
		CHECK(!strchr(err.msg, '\n'));
		return 0;
	}
	CHECK(c.shell_env < _LEV_SHELL_ENV_MAX);
	CHECK(c.credential_store < _LEV_CRED_MAX);
	CHECK(c.sandbox.kind < _LEV_SANDBOX_KIND_MAX);
	for (i = 0; i < c.tool_permissions.n; i++)
		CHECK(c.tool_permissions.v[i].verdict < _LEV_VERDICT_MAX);
	for (w = c.warnings; w && *w; w++)
		CHECK(!strchr(*w, '\n') && !strncmp(*w, "fuzz:", 5));
	for (i = 0; i < c.n_agent_tool_permissions; i++) {
		const char *agent = c.agent_tool_permissions[i].agent;

		lev_config_permissions_for_agent(&c, agent, &p);
		(void)lev_tool_perms_lookup(&p, "bash", &v);
		lev_tool_perms_release(&p);
	}
	for (i = 0; i < c.n_agent_read_paths; i++) {
		g = lev_config_read_path_grants_for_agent(&c, c.agent_read_paths[i].agent);
		CHECK(lev_strv_len(g) >= lev_strv_len(c.read_paths));
		lev_strv_free(g);
	}
	lev_config_safe_commands_for_agent(&c, "x", NULL, NULL, &defaults, &tools, &shell);
	lev_strv_free(tools);
	lev_strv_free(shell);
	lev_config_release(&c);
	return 0;
}
