/*
 * perm-config.c - struct lev_perm_input from config.toml and a blueprint
 * (see perm-config.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/base/buf.h"
#include "liblev/policy/perm-config.h"
#include "liblev/policy/shellkeys.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"

/* Keep S alive in the setup and return it. */
static const char *keep(struct lev_perm_setup *s, char *str)
{
	if (s->n_strings == s->cap_strings) {
		s->cap_strings = s->cap_strings ? s->cap_strings * 2 : 32;
		s->strings = xreallocarray(s->strings, s->cap_strings, sizeof(*s->strings));
	}
	s->strings[s->n_strings++] = str;
	return str;
}

static size_t add_rules(struct lev_perm_setup *s, size_t at, const struct lev_tool_perms *t,
			const char *source)
{
	size_t i;

	for (i = 0; t && i < t->n; i++) {
		s->rules[at + i].tool = keep(s, xstrdup(t->v[i].tool));
		s->rules[at + i].verdict = t->v[i].verdict;
		s->rules[at + i].source = source;
	}
	return t ? t->n : 0;
}

static void add_safe(struct lev_perm_setup *s, size_t *n, size_t *cap, const char *key,
		     const char *source)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		s->safe = xreallocarray(s->safe, *cap, sizeof(*s->safe));
	}
	s->safe[*n].key = key;
	s->safe[*n].source = source;
	(*n)++;
}

/* At most this many warnings are kept. */
#define MAX_WARNINGS 64

static void warn(struct lev_perm_setup *s, char *msg)
{
	if (lev_strv_len(s->warnings) < MAX_WARNINGS)
		s->warnings = lev_strv_push_take(s->warnings, msg);
	else
		free(msg);
}

static void add_safe_lists(struct lev_perm_setup *s, size_t *n, size_t *cap, char *const *tools,
			   char *const *shell, const char *source)
{
	for (; tools && *tools; tools++) {
		if (!strncmp(*tools, "shell:", 6)) {
			warn(s, xasprintf("%s: tools entry '%s' is spelled as a shell key; skipped "
					  "(put shell commands under shell)",
					  source, *tools));
			continue;
		}
		add_safe(s, n, cap, keep(s, xstrdup(*tools)), source);
	}
	for (; shell && *shell; shell++) {
		if (lev_shellkeys_runs_operands(*shell)) {
			warn(s, xasprintf("%s: shell entry '%s' names a program that runs its "
					  "operands; a line is keyed through to the program it "
					  "runs, so list that program instead; skipped",
					  source, *shell));
			continue;
		}
		if (!lev_shellkeys_is_valid_prefix(*shell)) {
			warn(s, xasprintf("%s: shell entry '%s' is not a command prefix a call can "
					  "produce; skipped",
					  source, *shell));
			continue;
		}
		add_safe(s, n, cap, keep(s, xasprintf("shell:%s", *shell)), source);
	}
}

static const struct lev_tool_perms *agent_ceiling(const struct lev_config *cfg, const char *agent)
{
	size_t i;

	for (i = 0; i < cfg->n_agent_tool_permissions; i++)
		if (!strcmp(cfg->agent_tool_permissions[i].agent, agent))
			return &cfg->agent_tool_permissions[i].perms;
	return NULL;
}

char *lev_perm_withheld_grants(const struct lev_config *cfg, const struct lev_blueprint *bp)
{
	const struct lev_tool_perms *agent_perms = agent_ceiling(cfg, bp->name);
	const struct lev_agent_read_paths *arp = lev_config_agent_read_paths(cfg, bp->name);
	const struct lev_agent_safe_commands *asc = lev_config_agent_safe_commands(cfg, bp->name);
	struct lev_buf what = LEV_BUF_INIT;
	char *msg;
	size_t i;
	bool loosen = false;

	if (bp->identity_verified)
		return NULL;
	for (i = 0; agent_perms && i < agent_perms->n; i++)
		if (agent_perms->v[i].verdict != LEV_DENY)
			loosen = true;
	if (loosen)
		(void)lev_buf_addf(&what, "[agent_tool_permissions.%s] entries looser than "
				   "[tool_permissions], ", bp->name);
	if (arp && arp->allow)
		(void)lev_buf_addf(&what, "[agent_read_paths.%s], ", bp->name);
	if (asc && (asc->tools || asc->shell || asc->allow_blueprint))
		(void)lev_buf_addf(&what, "[agent_safe_commands.%s], ", bp->name);
	if (!what.len) {
		lev_buf_release(&what);
		return NULL;
	}
	lev_buf_truncate(&what, what.len - 2);
	msg = xasprintf("per-agent grants for '%s' are not applied (%s; its stricter entries "
			"still are): %s",
			bp->name, what.buf,
			bp->identity_note ? bp->identity_note
					  : "the blueprint was not checked against an installed agent");
	lev_buf_release(&what);
	return msg;
}

/*
 * Every safe key in force for BP (NULL: no agent) under CFG, with its source:
 * the built-in list, [safe_commands], [agent_safe_commands.<agent>], then the
 * blueprint's [safe_commands] where the user honours it.
 */
static void add_safe_keys(struct lev_perm_setup *s, const struct lev_config *cfg,
			  const struct lev_blueprint *bp, const char *grant_name)
{
	const struct lev_agent_safe_commands *asc =
		bp ? lev_config_agent_safe_commands(cfg, grant_name) : NULL;
	size_t n_safe = 0, cap_safe = 0, i;

	if (cfg->safe_defaults)
		for (i = 0; lev_safe_shell_default[i]; i++)
			add_safe(s, &n_safe, &cap_safe,
				 keep(s, xasprintf("shell:%s", lev_safe_shell_default[i])),
				 "built-in list");
	add_safe_lists(s, &n_safe, &cap_safe, cfg->safe_tools, cfg->safe_shell,
		       "[safe_commands]");
	if (asc)
		add_safe_lists(s, &n_safe, &cap_safe, asc->tools, asc->shell,
			       keep(s, xasprintf("[agent_safe_commands.%s]", bp->name)));
	if (bp && lev_config_honours_blueprint_safe_commands(cfg, grant_name))
		add_safe_lists(s, &n_safe, &cap_safe, bp->safe_tools, bp->safe_shell,
			       "blueprint [safe_commands]");
	s->in.safe = s->safe;
	s->in.n_safe = n_safe;
}

void lev_perm_safe_init(struct lev_perm_setup *s, const struct lev_config *cfg,
			const struct lev_blueprint *bp)
{
	memset(s, 0, sizeof(*s));
	add_safe_keys(s, cfg, bp, bp ? lev_blueprint_grant_name(bp) : NULL);
}

int lev_perm_setup_init(struct lev_perm_setup *s, const struct lev_config *cfg,
			const struct lev_blueprint *bp, const char *stage, bool yolo,
			char *const *allow, struct lev_err *err)
{
	const struct lev_tool_perms *agent_perms = agent_ceiling(cfg, bp->name);
	/* loosening goes by the installed agent, tightening by the name */
	const char *grant_name = lev_blueprint_grant_name(bp);
	const struct lev_stage *st;
	size_t total, at = 0, n;

	memset(s, 0, sizeof(*s));
	st = lev_blueprint_stage(bp, stage ? stage : bp->entry_stage);
	if (!st)
		return lev_err_set(err, -ENOENT, "agent '%s' has no stage '%s'", bp->name,
				   stage ? stage : bp->entry_stage);
	s->stage = xstrdup(st->name);

	total = cfg->tool_permissions.n + (agent_perms ? agent_perms->n : 0) +
		st->tool_permissions.n + bp->tool_permissions.n;
	s->rules = xcalloc(total ? total : 1, sizeof(*s->rules));

	n = add_rules(s, at, &cfg->tool_permissions, "[tool_permissions]");
	s->in.user_global = s->rules + at;
	s->in.n_user_global = n;
	at += n;
	n = add_rules(s, at, agent_perms,
		      keep(s, xasprintf("[agent_tool_permissions.%s]", bp->name)));
	s->in.user_agent = s->rules + at;
	s->in.n_user_agent = n;
	s->in.user_agent_tighten_only = !bp->identity_verified;
	at += n;
	n = add_rules(s, at, &st->tool_permissions,
		      keep(s, xasprintf("blueprint [stages.%s.tool_permissions]", st->name)));
	s->in.bp_stage = s->rules + at;
	s->in.n_bp_stage = n;
	at += n;
	n = add_rules(s, at, &bp->tool_permissions, "blueprint [tool_permissions]");
	s->in.bp_agent = s->rules + at;
	s->in.n_bp_agent = n;
	s->in.blueprint_may_loosen = cfg->allow_blueprint_permissions;

	s->in.yolo = yolo;
	s->allow = lev_strv_copy(allow);
	s->in.allow = (const char *const *)s->allow;

	add_safe_keys(s, cfg, bp, grant_name);
	{
		char *w = lev_perm_withheld_grants(cfg, bp);

		if (w)
			warn(s, w);
	}
	return 0;
}

void lev_perm_setup_release(struct lev_perm_setup *s)
{
	size_t i;

	free(s->rules);
	free(s->safe);
	for (i = 0; i < s->n_strings; i++)
		free(s->strings[i]);
	free(s->strings);
	lev_strv_free(s->allow);
	lev_strv_free(s->warnings);
	free(s->stage);
	memset(s, 0, sizeof(*s));
}
