/*
 * types.h - the small vocabulary every policy module shares: permission
 * verdicts, sensitivity levels, sandbox kinds and the sandbox spec as the
 * user's config or a blueprint writes it.  Tool names: tooltable.h.
 *
 * Parsers here never fail open: an unknown word is an error, never a
 * default.
 */
#pragma once

#include <stdbool.h>

/* Ordered by restrictiveness: stricter(a, b) == max(a, b). */
enum lev_verdict {
	LEV_ALLOW,
	LEV_ASK,
	LEV_DENY,
	_LEV_VERDICT_MAX,
};

enum lev_level {
	LEV_PUBLIC,
	LEV_INTERNAL,
	LEV_PRIVATE,
	_LEV_LEVEL_MAX,
};

/*
 * Integrity, the second axis of a label (docs/integrity.md): may this text
 * steer what the agent does?  Ordered by restrictiveness: untrusted wins.
 */
enum lev_integrity {
	LEV_TRUSTED,
	LEV_UNTRUSTED,
	_LEV_INTEGRITY_MAX,
};

/* Ranked: container > namespace > none. */
enum lev_sandbox_kind {
	LEV_SANDBOX_NONE,
	LEV_SANDBOX_NAMESPACE,
	LEV_SANDBOX_CONTAINER,
	_LEV_SANDBOX_KIND_MAX,
};

enum lev_on_unavailable {
	LEV_ON_UNAVAILABLE_ERROR,
	LEV_ON_UNAVAILABLE_WARN,
	_LEV_ON_UNAVAILABLE_MAX,
};

/* "allow", "ask", "deny"; parse is case-insensitive.  Returns 0 or -EINVAL. */
extern const char *const lev_verdict_names[_LEV_VERDICT_MAX];	/* the one table of the words */
const char *lev_verdict_name(enum lev_verdict v);
int lev_verdict_parse(const char *s, enum lev_verdict *out);
static inline enum lev_verdict lev_verdict_stricter(enum lev_verdict a, enum lev_verdict b)
{
	return a > b ? a : b;
}

/* "public", "internal", "private"; parse is case-insensitive. */
const char *lev_level_name(enum lev_level l);
int lev_level_parse(const char *s, enum lev_level *out);

/* "trusted", "untrusted"; parse is case-insensitive.  Returns 0 or -EINVAL. */
const char *lev_integrity_name(enum lev_integrity i);
int lev_integrity_parse(const char *s, enum lev_integrity *out);

/* "none", "namespace", "container". */
const char *lev_sandbox_kind_name(enum lev_sandbox_kind k);
int lev_sandbox_kind_parse(const char *s, enum lev_sandbox_kind *out);

/* "error", "warn". */
const char *lev_on_unavailable_name(enum lev_on_unavailable o);
int lev_on_unavailable_parse(const char *s, enum lev_on_unavailable *out);

/*
 * A [sandbox] block as written (user config, blueprint agent level, or a
 * stage).  The has_* flags say which keys were written; `present` says the
 * block exists at all.  Strings and strvs are owned by the struct.
 */
struct lev_sandbox_spec {
	bool present;
	bool has_kind;
	enum lev_sandbox_kind kind;
	char *image;		/* NULL: not set */
	char *engine;		/* NULL: not set (always stripped from blueprints) */
	bool has_network;
	bool network;
	char **mounts;		/* strv; NULL: none */
	bool has_on_unavailable;
	enum lev_on_unavailable on_unavailable;
	char **deny_read;	/* user config only: extra paths to mask */
	/*
	 * Paths (absolute or ~/...) a command may write besides the workdir
	 * and its scratch /tmp (build caches: ~/.cache, ~/.cargo).  The user's
	 * config names them; a blueprint's list can only narrow it.
	 */
	bool has_writable;
	char **writable;
};

void lev_sandbox_spec_release(struct lev_sandbox_spec *s);
void lev_sandbox_spec_copy(struct lev_sandbox_spec *dst, const struct lev_sandbox_spec *src);
