/*
 * doctor.h - `lev doctor`: does the provider wiring work here, and what
 * does this machine offer lev's sandboxes?
 *
 * Leviath's checks, in order (the first failure stops the rest):
 *	config	   config.toml parses (the caller adds this row: it loads it)
 *	resolve	   the default picks a provider that is configured, and it builds
 *		   (a key is found, the model is named)
 *	inference  one real request (64 tokens at most) reaches the model
 *	daemon	   (the caller adds this row: the daemon answers on its socket)
 * and rows of lev's own, always run: user namespaces, Landlock, seccomp,
 * openat2, the mount API, and the container engines, each with its fix.
 * Nothing here prints.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/conf/config.h"

enum lev_doctor_status {
	LEV_DOCTOR_OK,
	LEV_DOCTOR_FAIL,	/* lev doctor exits non-zero */
	LEV_DOCTOR_WARN,	/* a kind of sandbox is missing; lev still runs */
	LEV_DOCTOR_SKIP,	/* not run (an earlier check failed, or not asked) */
};

struct lev_doctor_row {
	char *name;
	enum lev_doctor_status status;
	char *detail;
	char *fix;		/* NULL when there is nothing to fix */
};

struct lev_doctor {
	struct lev_doctor_row *v;
	size_t n;
};

/* Append a row (strings copied; DETAIL and FIX may be NULL). */
void lev_doctor_add(struct lev_doctor *d, const char *name, enum lev_doctor_status status,
		    const char *detail, const char *fix);
void lev_doctor_release(struct lev_doctor *d);
/* True when no row failed. */
bool lev_doctor_passed(const struct lev_doctor *d);
const char *lev_doctor_status_name(enum lev_doctor_status s);

/*
 * The resolve and inference rows for CFG: MODEL (NULL: the config's
 * default_provider / default_model, else its first [providers.NAME], else
 * anthropic) as "provider/model" or a bare model on default_provider;
 * CREDENTIALS_PATH may be NULL.  Without INFERENCE the inference row is
 * skipped.
 */
void lev_doctor_models(struct lev_doctor *d, const struct lev_config *cfg, const char *model,
		       const char *credentials_path, bool inference);

/* The machine's rows (lev sandbox probe's findings, each with its fix). */
void lev_doctor_machine(struct lev_doctor *d);
