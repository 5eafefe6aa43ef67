/*
 * agent-info.c - the inline tools that answer questions about the machine
 * and the run: current_time, which_command, locale_info, system_info,
 * environment_info, runtime_info, context_list.
 *
 * They read; they start nothing and change nothing.  What they show of the
 * environment is what the run's commands get (a->envp: already filtered by
 * [security] shell_env, with the provider key variables taken out), and of
 * variables only their names.
 */
#include "liblev/run/agent-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/provider/provider.h"
#include "liblev/run/context.h"

/* NAME's value in the commands' environment, or NULL. */
static const char *env_get(const struct lev_agent *a, const char *name)
{
	size_t n = strlen(name);

	for (char **e = a->envp; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* current_time: local time with its offset, and UTC (ISO 8601). */
static void current_time(struct lev_buf *b)
{
	char local[64] = "", utc[64] = "";
	time_t now = time(NULL);
	struct tm tm;

	if (localtime_r(&now, &tm))
		strftime(local, sizeof(local), "%Y-%m-%dT%H:%M:%S%z (%Z, %A)", &tm);
	if (gmtime_r(&now, &tm))
		strftime(utc, sizeof(utc), "%Y-%m-%dT%H:%M:%SZ", &tm);
	(void)lev_buf_addf(b, "local: %s\nutc: %s", local, utc);
}

/* which_command: the first executable COMMAND on the commands' PATH; nothing is run. */
static bool which_command(const struct lev_agent *a, const json_t *args, struct lev_buf *b)
{
	const char *cmd = agent_arg_str(args, "command");
	const char *path = env_get(a, "PATH");
	_cleanup_free_ char *dirs = xstrdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
	char *save = NULL;

	if (!cmd || !*cmd || strchr(cmd, '/') || !strcmp(cmd, ".") || !strcmp(cmd, "..")) {
		(void)lev_buf_adds(b, "[error] give a program's name, without a '/'");
		return true;
	}
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		_cleanup_free_ char *p = NULL;
		struct stat st;

		if (*d != '/')
			continue;	/* a relative PATH entry would depend on the cwd */
		p = lev_path_join(d, cmd);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
			(void)lev_buf_addf(b, "%s: %s", cmd, p);
			goto note;
		}
	}
	(void)lev_buf_addf(b, "%s: not found on PATH", cmd);
note:
	if (a->stages[a->cur].eff.kind == LEV_SANDBOX_CONTAINER)
		(void)lev_buf_adds(b, "\n(looked up on the host: this stage's commands run in a "
				      "container image, whose programs may differ)");
	return false;
}

/* locale_info: LC_ALL, LC_MESSAGES, LANG (the first set, not C/POSIX) as a BCP-47 tag. */
static void locale_info(const struct lev_agent *a, struct lev_buf *b)
{
	static const char *const vars[] = { "LC_ALL", "LC_MESSAGES", "LANG" };

	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		const char *v = env_get(a, vars[i]);
		size_t n;

		if (!v || !*v || !strcmp(v, "C") || !strcmp(v, "POSIX") || !strncmp(v, "C.", 2))
			continue;
		n = strcspn(v, ".@");
		(void)lev_buf_adds(b, "tag: ");
		for (size_t k = 0; k < n && k < 32; k++)
			(void)lev_buf_addch(b, v[k] == '_' ? '-' : v[k]);
		(void)lev_buf_addf(b, "\nfrom: %s=%.64s", vars[i], v);
		return;
	}
	(void)lev_buf_adds(b, "tag: und\nfrom: no locale is set (the C locale)");
}

static void system_info(const struct lev_agent *a, struct lev_buf *b)
{
	struct utsname u;
	struct statvfs vfs;

	if (uname(&u) == 0)
		(void)lev_buf_addf(b, "os: %s %s\narch: %s\nhostname: %s\n", u.sysname, u.release,
				   u.machine, u.nodename);
	(void)lev_buf_addf(b, "cpus: %ld\npath separator: /\nline ending: \\n\n",
			   sysconf(_SC_NPROCESSORS_ONLN));
	if (statvfs(a->workdir, &vfs) == 0)
		(void)lev_buf_addf(b, "free disk in the working directory: %llu MiB",
				   (unsigned long long)vfs.f_bavail * vfs.f_frsize >> 20);
}

static void environment_info(const struct lev_agent *a, struct lev_buf *b)
{
	const char *home = env_get(a, "HOME"), *tmp = env_get(a, "TMPDIR");
	const char *path = env_get(a, "PATH");
	bool first = true;

	(void)lev_buf_addf(b, "working directory: %s\nhome: %s\ntemporary: %s\nPATH:\n",
			   a->workdir, home ? home : "(unset)", tmp ? tmp : "/tmp");
	for (const char *p = path; p && *p;) {
		size_t n = strcspn(p, ":");

		(void)lev_buf_addf(b, "  %.*s\n", (int)n, p);
		p += n + (p[n] == ':');
	}
	(void)lev_buf_adds(b, "variables commands see (names only):");
	for (char **e = a->envp; e && *e; e++) {
		size_t n = strcspn(*e, "=");

		(void)lev_buf_addf(b, "%s%.*s", first ? " " : ", ", (int)n, *e);
		first = false;
	}
}

static void runtime_info(const struct lev_agent *a, struct lev_buf *b)
{
	const struct stage_rt *s = &a->stages[a->cur];

	(void)lev_buf_addf(b, "agent: %s\nstage: %s\niteration: %u of %llu\n", a->bp->name,
			   s->st->name, a->iteration,
			   (unsigned long long)agent_max_iterations(a, s->st));
	if (s->prov)
		(void)lev_buf_addf(b, "model: %s/%s\n", lev_provider_name(s->prov),
				   lev_provider_model(s->prov) ? lev_provider_model(s->prov) : "");
	(void)lev_buf_addf(b, "context: %llu of %llu tokens\n",
			   (unsigned long long)lev_context_tokens(a->ctx),
			   (unsigned long long)lev_context_window(a->ctx));
	(void)lev_buf_addf(b, "someone can answer a question: %s",
			   a->o.hooks.question && !a->seeding ? "yes" : "no");
}

static bool context_list(const struct lev_agent *a, const json_t *args, struct lev_buf *b)
{
	const char *only = agent_arg_str(args, "region");
	int one = only ? lev_context_region_find(a->ctx, only) : -1;

	if (only && one < 0) {
		(void)lev_buf_addf(b, "[error] there is no context region '%s'", only);
		return true;
	}
	for (size_t i = 0; i < lev_context_region_count(a->ctx); i++) {
		uint64_t lim = lev_context_region_limit(a->ctx, i);

		if (one >= 0 && (size_t)one != i)
			continue;
		(void)lev_buf_addf(b, "%s%s (%s): %zu entries, %llu tokens", b->len ? "\n" : "",
				   lev_context_region_name(a->ctx, i),
				   lev_region_kind_name(lev_context_region_kind(a->ctx, i)),
				   lev_context_region_items(a->ctx, i),
				   (unsigned long long)lev_context_region_tokens(a->ctx, i));
		if (lim)
			(void)lev_buf_addf(b, " of %llu", (unsigned long long)lim);
	}
	return false;
}

bool agent_run_info(struct lev_agent *a, enum lev_tool_op op, const json_t *args,
		    struct lev_tool_output *out)
{
	struct lev_buf b = LEV_BUF_INIT_MAX(64 << 10);
	bool is_error = false;

	switch (op) {
	case LEV_OP_CURRENT_TIME:
		current_time(&b);
		break;
	case LEV_OP_WHICH_COMMAND:
		is_error = which_command(a, args, &b);
		break;
	case LEV_OP_LOCALE_INFO:
		locale_info(a, &b);
		break;
	case LEV_OP_SYSTEM_INFO:
		system_info(a, &b);
		break;
	case LEV_OP_ENVIRONMENT_INFO:
		environment_info(a, &b);
		break;
	case LEV_OP_RUNTIME_INFO:
		runtime_info(a, &b);
		break;
	case LEV_OP_CONTEXT_LIST:
		is_error = context_list(a, args, &b);
		break;
	default:
		lev_buf_release(&b);
		return false;
	}
	lev_tool_output_set(out, b.buf ? b.buf : "", is_error);
	lev_buf_release(&b);
	return true;
}
