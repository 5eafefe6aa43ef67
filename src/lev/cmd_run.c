/*
 * cmd_run.c - lev run NAME|PATH -t TEXT|FILE [--workdir DIR] [--yolo]
 *             [--allow TOOL]... [-m [PROVIDER/]MODEL] [--no-seed-commands]
 *             [--max-depth N] [--output-format|--output-instructions|--output-schema X]
 *             [--json] [--count N] [--follow | --foreground | --detach]
 *
 * Runs an agent.  On stderr: the progress (stages, each tool call with its
 * decision and the gate that made it, a spinner while the model thinks
 * when stderr is a terminal); prompts are asked and read on /dev/tty; the
 * final output goes to stdout.  With --json, stdout carries one JSON object
 * per event instead.  Exit 0 complete, 1 error, 130 interrupted.
 *
 * By default the run is spawned in the daemon and lev run returns, as
 * Leviath's does (spawn()).  With --follow this process follows it (the
 * daemon's frames drive the same front end; answers go back as `lev
 * respond` sends them; Ctrl-C detaches, exit 0).  --foreground runs it
 * here.  lev attach follows a run through the same code (lev_run_attach()).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lev/cmd.h"
#include "lev/run-editor.h"
#include "lev/termout.h"
#include "liblev/run/agent.h"
#include "liblev/run/callshow.h"
#include "liblev/run/runrecord.h"
#include "liblev/conf/agentstore.h"
#include "liblev/conf/blueprint.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/secrets.h"
#include "liblev/conf/config.h"
#include "liblev/conf/datadir.h"
#include "liblev/policy/lint.h"
#include "liblev/base/strv.h"
#include "liblev/provider/provider.h"
#include "liblev/base/termtext.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/client.h"
#include "liblev/daemon/proto.h"
#include "liblev/policy/envfilter.h"

extern char **environ;

#define EXIT_INTERRUPTED 130
#define TASK_FILE_MAX ((size_t)1 << 20)
#define RUN_COUNT_MAX 10000

const char lev_usage_run[] =
	"usage: lev run NAME|PATH [-t TEXT|FILE] [--workdir DIR] [--yolo] [--allow TOOL]...\n"
	"               [-m [PROVIDER/]MODEL] [--no-seed-commands] [--max-depth N]\n"
	"               [--output-format LABEL] [--output-instructions TEXT]\n"
	"               [--output-schema JSON|@FILE] [--json] [--count N]\n"
	"               [--follow | --foreground | --detach]\n"
	"\n"
	"Run an agent: every tool call passes permission, paths, the network switch\n"
	"and the taint gate, and runs in the stage's sandbox.  The run is spawned in\n"
	"the daemon (started when none runs) and lev run returns, as Leviath's does:\n"
	"the run's id on stdout; see 'lev ps', 'lev respond', 'lev result RUN' and\n"
	"<data root>/runs/RUN/meta.json.  --follow follows it here.\n"
	"\n"
	"  -t, --task TEXT|FILE|@FILE\n"
	"                        the task: a file that exists is read; a value that looks\n"
	"                        like a path with no file is an error\n"
	"  --input KEY=TEXT|@FILE, --KEY TEXT|@FILE\n"
	"                        an input of the agent other than the task (a region\n"
	"                        seeded with seed = \"KEY\"; KEY may be the region's name)\n"
	"  --workdir DIR         the working directory (default: the current one)\n"
	"  --yolo                allow every permission ask (deny still holds); taint and\n"
	"                        integrity asks still need someone to answer them\n"
	"  --yolo-flow           with --yolo: allow taint and integrity asks too (no\n"
	"                        information-flow defence: docs/integrity.md)\n"
	"  --allow TOOL          allow TOOL without asking (repeatable; deny still holds)\n"
	"  -m, --model [PROV/]MODEL\n"
	"                        use this model for every stage (a bare id keeps the stage's provider)\n"
	"  --no-seed-commands    refuse the blueprint's command seeds\n"
	"  --max-depth N         how deep sub-agents may nest (over max_child_depth)\n"
	"  --output-format LABEL, --output-instructions TEXT, --output-schema JSON|@FILE\n"
	"                        the final output's shape, over the blueprint's\n"
	"  --json                the spawn object {run_id, blueprint_path, workdir, yolo};\n"
	"                        with --follow: one JSON object per event on stdout\n"
	"  --count N             spawn N runs (--json: an array when N > 1)\n"
	"  -f, --follow          follow the run here: progress, questions, output, exit\n"
	"                        status; Ctrl-C detaches ('lev attach RUN' follows again)\n"
	"  --foreground          run it in this process, no daemon (Ctrl-C stops it)\n"
	"  --detach              spawn and return (what lev run does without --follow)\n"
	"\n"
	"Questions are asked on the terminal (/dev/tty) when followed; with none, a\n"
	"call that needs an answer is denied and the agent's own questions (ask_user_*)\n"
	"are not offered.  The run record is kept in <data root>/runs/<id>/.\n"
	"Exit status: 0 spawned (--follow, --foreground: complete, or detached), 1 error,\n"
	"2 usage, 130 interrupted (--foreground) or cancelled.\n";

/* ---- signals -------------------------------------------------------------- */

static volatile sig_atomic_t run_cancel;
static int cancel_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	run_cancel = 1;
	if (cancel_pipe[1] >= 0)
		(void)!write(cancel_pipe[1], "x", 1);
	errno = saved;
}

static void on_sigpipe(int sig)
{
	(void)sig;
}

static int install_signals(void)
{
	struct sigaction sa;

	if (pipe2(cancel_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;	/* no SA_RESTART: a prompt's read() must wake up */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/*
	 * A reader of --json that goes away must not kill the run mid-record:
	 * catch SIGPIPE (a handler, not SIG_IGN, which commands would inherit).
	 */
	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, NULL);
	return 0;
}

/* ---- the front end -------------------------------------------------------- */

struct front {
	bool json;
	bool tty;		/* stderr is a terminal */
	int tty_fd;		/* /dev/tty for prompts, -1 when there is none */
	uint64_t ask_timeout_secs;	/* 0: no deadline (following a daemon run) */
	unsigned calls;
	char *last_allowed;	/* id of the last call that was allowed */
	/* following a daemon run */
	int watch_fd;		/* the daemon's stream: a prompt gives way when it speaks; -1 */
	bool interrupted;	/* a prompt gave way to the daemon */
	json_t *open_q;		/* the question the run waits on, not answered here yet */
	/* spinner */
	pthread_t spin_thread;
	bool spin_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool thinking;
	bool stop;
	bool drawn;
};

static void spinner_clear(struct front *f)
{
	if (f->drawn) {
		lev_termout_raw(STDERR_FILENO, "\r\033[K");
		f->drawn = false;
	}
}

static void *spinner_main(void *data)
{
	static const char frames[] = "|/-\\";
	struct front *f = data;
	unsigned i = 0;

	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		if (!f->thinking) {
			pthread_cond_wait(&f->cond, &f->lock);
			continue;
		}
		{
			char frame[] = "\r  . thinking...";

			frame[3] = frames[i++ % 4];
			lev_termout_raw(STDERR_FILENO, frame);
		}
		f->drawn = true;
		{
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 120 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&f->cond, &f->lock, &ts);
		}
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static void hook_thinking(void *data, bool on)
{
	struct front *f = data;

	if (!f->spin_started)
		return;
	pthread_mutex_lock(&f->lock);
	f->thinking = on;
	if (!on)
		spinner_clear(f);
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/* Print on stderr without fighting the spinner. */
static void say(struct front *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct front *f, const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT;
	va_list ap;

	if (f->spin_started)
		pthread_mutex_lock(&f->lock);
	spinner_clear(f);
	va_start(ap, fmt);
	(void)lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	lev_secrets_redact(b.buf);	/* the terminal is an exit too (base/secrets.h) */
	fputs(b.buf, stderr);
	lev_buf_release(&b);
	fflush(stderr);
	if (f->spin_started)
		pthread_mutex_unlock(&f->lock);
}

static const char *jstr(const json_t *ev, const char *key)
{
	const json_t *v = json_object_get(ev, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}


/* "lev: WHAT was produced under untrusted influence (sources: ...)" when EV says so. */
static void untrusted_line(struct front *f, const json_t *ev, const char *what)
{
	struct lev_buf b = LEV_BUF_INIT;
	size_t i;
	json_t *s;

	if (!lev_streq(jstr(ev, "integrity"), "untrusted"))
		return;
	json_array_foreach(json_object_get(ev, "sources"), i, s)
		(void)lev_buf_addf(&b, "%s%s", i ? ", " : "", json_string_value(s));
	say(f, "lev: %s was produced under untrusted influence (sources: %s)\n", what,
	    b.len ? b.buf : "?");
	lev_buf_release(&b);
}

/* One line describing a call's arguments, short. */
static char *args_summary(const json_t *ev)
{
	const json_t *args = json_object_get(ev, "args");
	const char *keys[] = { "command", "path", "url", "query", "region", NULL };
	char *s;

	if (json_is_object(args)) {
		for (int i = 0; keys[i]; i++) {
			const json_t *v = json_object_get(args, keys[i]);

			if (json_is_string(v)) {
				const char *t = json_string_value(v);
				size_t n = strcspn(t, "\n");

				return n > 80 ? xasprintf("%.77s...", t) : xstrndup(t, n);
			}
		}
		if (json_is_array(json_object_get(args, "paths")))
			return xasprintf("%zu files", json_array_size(json_object_get(args, "paths")));
		if (json_is_string(json_object_get(args, "output")))
			return xstrdup("(output)");
	}
	s = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
	if (s && strlen(s) > 80)
		s[80] = '\0';
	return s ? s : xstrdup("");
}

static void hook_event(void *data, const json_t *ev, const char *line)
{
	struct front *f = data;
	const char *name = jstr(ev, "event");

	if (f->json) {
		fputs(line, stdout);
		fputc('\n', stdout);
		fflush(stdout);
		return;
	}
	if (!name)
		return;
	if (!strcmp(name, "run_started")) {
		say(f, "lev: run %s: agent '%s' in %s\n", jstr(ev, "run") ? jstr(ev, "run") : "-",
		    jstr(ev, "agent"), jstr(ev, "workdir"));
	} else if (!strcmp(name, "stage_started")) {
		say(f, "== stage '%s' (sandbox %s%s, model %s/%s)\n", jstr(ev, "stage"),
		    jstr(ev, "sandbox"),
		    json_is_false(json_object_get(ev, "network")) ? ", network off" : "",
		    jstr(ev, "provider") ? jstr(ev, "provider") : "?",
		    jstr(ev, "model") ? jstr(ev, "model") : "?");
	} else if (!strcmp(name, "model_response")) {
		const char *text = jstr(ev, "text");

		if (text && *text) {
			size_t n = strcspn(text, "\n");

			say(f, "  model: %.*s%s\n", (int)(n > 100 ? 100 : n), text,
			    n > 100 || text[n] ? " ..." : "");
		}
	} else if (!strcmp(name, "tool_call")) {
		_cleanup_free_ char *sum = args_summary(ev);
		bool allowed = lev_streq(jstr(ev, "decision"), "allow");
		const char *gate = jstr(ev, "gate"), *rule = jstr(ev, "rule");

		f->calls++;
		free(f->last_allowed);
		f->last_allowed = allowed && jstr(ev, "id") ? xstrdup(jstr(ev, "id")) : NULL;
		if (allowed)
			say(f, "  [%u] %s %s -> allow%s%s%s%s%s\n", f->calls, jstr(ev, "tool"), sum,
			    gate && strcmp(gate, "none") ? " (" : "",
			    gate && strcmp(gate, "none") ? gate : "",
			    gate && strcmp(gate, "none") && rule ? ": " : "",
			    gate && strcmp(gate, "none") && rule ? rule : "",
			    gate && strcmp(gate, "none") ? ")" : "");
		else
			say(f, "  [%u] %s %s -> DENIED by %s: %s\n", f->calls, jstr(ev, "tool"), sum,
			    gate ? gate : "?", jstr(ev, "reason") ? jstr(ev, "reason") : "");
	} else if (!strcmp(name, "tool_result")) {
		const char *text = jstr(ev, "text");

		/* what an allowed call did, in one line */
		if (f->last_allowed && lev_streq(f->last_allowed, jstr(ev, "id")) && text) {
			bool ok = json_is_true(json_object_get(ev, "ok"));
			size_t n = strcspn(text, "\n"), len = strlen(text), e = len, b;

			/* for a failure, its last line says most */
			while (e > 0 && text[e - 1] == '\n')
				e--;
			b = e;
			while (b > 0 && text[b - 1] != '\n')
				b--;
			if (!ok && b > n && e - b > 0)
				say(f, "       ! %.*s | %.*s\n", (int)(n > 60 ? 60 : n), text,
				    (int)(e - b > 100 ? 100 : e - b), text + b);
			else
				say(f, "       %s %.*s%s\n", ok ? "=" : "!", (int)(n > 100 ? 100 : n),
				    text, n > 100 || (text[n] && text[n + 1]) ? " ..." : "");
		}
	} else if (!strcmp(name, "warning")) {
		say(f, "lev: warning: %s\n", jstr(ev, "message"));
	} else if (!strcmp(name, "seed")) {
		if (json_is_false(json_object_get(ev, "ok")))
			say(f, "lev: warning: seed for region '%s': %s\n", jstr(ev, "region"),
			    jstr(ev, "error") ? jstr(ev, "error") : "failed");
	} else if (!strcmp(name, "stage_finished")) {
		say(f, "== stage '%s' ended (%s) after %lld iteration(s)\n", jstr(ev, "stage"),
		    jstr(ev, "end"), (long long)json_integer_value(json_object_get(ev, "iterations")));
		untrusted_line(f, ev, "its output");
	} else if (!strcmp(name, "run_finished")) {
		untrusted_line(f, ev, "the answer");
	}
}

/*
 * Read one answer line from the terminal, waiting at most ask_timeout_secs
 * (0: as long as the daemon's stream, watch_fd, is quiet: a frame, the run's
 * end or a daemon gone wakes it, so that stream is the liveness check).
 */
static int read_answer(struct front *f, char *buf, size_t size)
{
	size_t n = 0;
	int timeout_ms = !f->ask_timeout_secs ? -1
			 : f->ask_timeout_secs > INT_MAX / 1000 ? INT_MAX
								: (int)f->ask_timeout_secs * 1000;

	while (n + 1 < size) {
		/* the signal's pipe too: a Ctrl-C just before poll() must not be lost */
		struct pollfd p[3] = { { .fd = f->tty_fd, .events = POLLIN },
				       { .fd = cancel_pipe[0], .events = POLLIN },
				       { .fd = f->watch_fd, .events = POLLIN } };
		char c;
		ssize_t r;
		int pr;

		if (run_cancel)
			return -1;
		pr = poll(p, f->watch_fd >= 0 ? 3 : 2, timeout_ms);
		if (pr <= 0 || run_cancel)
			return -1;	/* timeout, signal or error: no answer */
		if (f->watch_fd >= 0 && p[2].revents) {
			f->interrupted = true;	/* answered elsewhere, most likely */
			return -1;
		}
		if (!p[0].revents)
			continue;
		r = read(f->tty_fd, &c, 1);
		if (r <= 0)
			return -1;
		if (c == '\n')
			break;
		buf[n++] = c;
	}
	buf[n] = '\0';
	return 0;
}

static void tty_printf(struct front *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tty_printf(struct front *f, const char *fmt, ...)
{
	struct lev_buf b = LEV_BUF_INIT;
	struct lev_buf safe = LEV_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	(void)lev_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	/* the prompt quotes the model's command: it must not steer the terminal */
	lev_termtext_add(&safe, b.buf, b.len);
	(void)lev_write_all(f->tty_fd, safe.buf, safe.len);
	lev_buf_release(&b);
	lev_buf_release(&safe);
}

/*
 * The whole call under the question (callshow.h: every line, every byte
 * visible, nothing cut), and what an answer for the stage or the run
 * would allow beyond it.
 */
static void tty_call(struct front *f, const struct lev_ask *q)
{
	struct lev_buf b = LEV_BUF_INIT;
	struct lev_buf safe = LEV_BUF_INIT;

	(void)lev_buf_adds(&b, "  the call, in full:\n");
	lev_callshow_indent(&b, q->call ? q->call : "(not shown: nothing to approve)\n", "    ");
	lev_termtext_add(&safe, b.buf, b.len);
	(void)lev_write_all(f->tty_fd, safe.buf, safe.len);
	lev_buf_release(&b);
	lev_buf_release(&safe);
}

static enum lev_ask_answer hook_ask(void *data, const struct lev_ask *q)
{
	struct front *f = data;
	char line[64];

	if (f->tty_fd < 0)
		return LEV_ANSWER_NONE;
	if (f->spin_started)
		pthread_mutex_lock(&f->lock);
	spinner_clear(f);
	if (q->kind == LEV_ASK_TAINT)
		tty_printf(f, "\n? taint gate: %s\n", q->prompt);
	else
		tty_printf(f, "\n? %s\n", q->prompt);
	if (q->detail)
		tty_printf(f, "  %s\n", q->detail);
	tty_call(f, q);
	if (q->kind == LEV_ASK_PERMISSION)
		tty_printf(f, "  1) Allow once\n  2) %s\n  3) %s\n  4) Deny\n  answer [1-4, default "
			      "4]: ",
			   q->stage_label, q->run_label);
	else
		tty_printf(f, "  1) Allow once\n  2) Allow for this run\n  3) Deny\n  answer [1-3, "
			      "default 3]: ");
	if (f->spin_started)
		pthread_mutex_unlock(&f->lock);
	if (read_answer(f, line, sizeof(line)) < 0) {
		if (!f->interrupted && !(f->watch_fd >= 0 && run_cancel))
			tty_printf(f, "\n  (no answer: denied)\n");
		return LEV_ANSWER_NONE;
	}
	if (!strcmp(line, "1"))
		return LEV_ANSWER_ONCE;
	if (q->kind == LEV_ASK_PERMISSION) {
		if (!strcmp(line, "2"))
			return LEV_ANSWER_STAGE;
		if (!strcmp(line, "3"))
			return LEV_ANSWER_RUN;
	} else if (!strcmp(line, "2")) {
		return LEV_ANSWER_RUN;
	}
	return LEV_ANSWER_DENY;
}

/* ask_user_*: the model's question, shown as text, and the user's answer. */
static int hook_question(void *data, const struct lev_question *q, char **answer)
{
	struct front *f = data;
	char line[4096];
	size_t n = 0;
	int r;

	if (f->tty_fd < 0)
		return -1;
	if (f->spin_started)
		pthread_mutex_lock(&f->lock);
	spinner_clear(f);
	tty_printf(f, "\n? the agent asks (stage '%s'):\n  %s\n", q->stage, q->question);
	if (q->kind == LEV_QUESTION_CHOICE) {
		for (char *const *c = q->choices; c && *c; c++, n++)
			tty_printf(f, "  %zu) %s\n", n + 1, *c);
		tty_printf(f, "  answer [1-%zu]: ", n);
	} else if (q->kind == LEV_QUESTION_CONFIRM) {
		tty_printf(f, "  answer [y/n]: ");
	} else {
		tty_printf(f, "  answer (one line): ");
	}
	if (f->spin_started)
		pthread_mutex_unlock(&f->lock);
	for (;;) {
		r = read_answer(f, line, sizeof(line));
		if (r < 0) {
			if (!f->interrupted && !(f->watch_fd >= 0 && run_cancel))
				tty_printf(f, "\n  (no answer)\n");
			return -1;
		}
		if (q->kind == LEV_QUESTION_TEXT) {
			*answer = xstrdup(line);
			return 0;
		}
		if (q->kind == LEV_QUESTION_CONFIRM) {
			if (!strcasecmp(line, "y") || !strcasecmp(line, "yes")) {
				*answer = xstrdup("yes");
				return 0;
			}
			if (!strcasecmp(line, "n") || !strcasecmp(line, "no")) {
				*answer = xstrdup("no");
				return 0;
			}
			tty_printf(f, "  please answer y or n: ");
			continue;
		}
		{
			uint64_t k;

			if (lev_parse_u64(line, &k) == 0 && k >= 1 && k <= n) {
				*answer = xstrdup(q->choices[k - 1]);
				return 0;
			}
			tty_printf(f, "  please answer a number from 1 to %zu: ", n);
		}
	}
}

/* ---- setup helpers --------------------------------------------------------- */

/*
 * The text of ARG (from the file after '@'), for the option WHAT; a file's
 * identity is added to *FILES as "KEY=DEV:INO:PATH", for the run to label
 * the text as read_file of it would be (lev_agent_opts.input_files).  The
 * text, the identity and the real path all come from the one descriptor
 * read (PATH is /proc/self/fd's name for it, never the name given resolved
 * again), so a link swapped after the read cannot lend the text another
 * file's label: the run labels PATH only while it is still that object.
 */
static int load_text(const char *what, const char *key, const char *arg, char **out,
		     char ***files)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *link = NULL;
	char real[PATH_MAX];
	struct stat st;
	size_t len = 0;
	ssize_t n;

	if (arg[0] != '@') {
		*out = xstrdup(arg);
		return 0;
	}
	fd = open(arg + 1, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		(void)lev_err_errno(&err, -errno, "cannot open '%s'", arg + 1);
		return lev_fail("%s: %s", what, err.msg);
	}
	if (lev_read_fd(fd, arg + 1, TASK_FILE_MAX, out, &len, &err) < 0)
		return lev_fail("%s: %s", what, err.msg);
	if (memchr(*out, '\0', len)) {
		free(*out);
		*out = NULL;
		return lev_fail("%s: '%s' holds a NUL byte; it must be text", what, arg + 1);
	}
	/*
	 * A pipe, a terminal or a file with no name left (lev serve hands the
	 * task in a memfd as @/dev/stdin) is what the caller gave: there is no
	 * file to label it by.
	 */
	if (!S_ISREG(st.st_mode) || st.st_nlink == 0)
		return 0;
	link = xasprintf("/proc/self/fd/%d", fd);
	n = readlink(link, real, sizeof(real) - 1);
	if (n <= 0 || real[0] != '/') {
		free(*out);
		*out = NULL;
		return lev_fail("%s: cannot name the file '%s' was read from", what, arg + 1);
	}
	real[n] = '\0';
	*files = lev_strv_push_take(*files, xasprintf("%s=%ju:%ju:%s", key, (uintmax_t)st.st_dev,
						      (uintmax_t)st.st_ino, real));
	return 0;
}

/*
 * Leviath's -t: a value naming a file that exists is read from it; one that
 * looks like a path (no space, and a '/', a '\\' or a leading '~') with no
 * file behind it is an error, so a mistyped file name never becomes the
 * prompt; anything else is the task itself.  lev's @FILE reads FILE.
 */
static int load_task(const char *arg, char **out, char ***files)
{
	_cleanup_free_ char *home = NULL, *at = NULL;
	bool pathlike = !strchr(arg, ' ') && (strchr(arg, '/') || strchr(arg, '\\') ||
					       arg[0] == '~');
	const char *file = arg;
	struct stat st;

	if (arg[0] == '@' || !*arg)
		return load_text("--task", "task", arg, out, files);
	if (arg[0] == '~' && arg[1] == '/' && lev_home_dir(&home, NULL) == 0)
		file = at = lev_path_join(home, arg + 2);
	if (stat(file, &st) == 0 && S_ISREG(st.st_mode)) {
		_cleanup_free_ char *ref = xasprintf("@%s", file);

		return load_text("--task", "task", ref, out, files);
	}
	if (pathlike)
		return lev_fail("--task: '%s' looks like a file name and there is no such file (give "
				"the task text, or the path of a file that exists)", arg);
	*out = xstrdup(arg);
	return 0;
}

/*
 * The caller inputs IN ("KEY=VALUE|@FILE") as "KEY=TEXT" in *out: each KEY
 * must name an input of BP (lev_blueprint_caller_input()), else nothing
 * would read it.
 */
static int load_inputs(const struct lev_blueprint *bp, char **in, char ***out, char ***files)
{
	char **v = NULL;

	for (; in && *in; in++) {
		const char *eq = strchr(*in, '=');
		_cleanup_free_ char *key = xstrndup(*in, (size_t)(eq - *in));
		_cleanup_free_ char *what = xasprintf("--%s", key);
		char *text = NULL;

		if (lev_streq(key, "task") || !lev_blueprint_caller_input(bp, key)) {
			lev_strv_free(v);
			if (lev_streq(key, "task"))
				return lev_usage_error("run", "the task is given with --task");
			return lev_usage_error("run", "unknown option '--%s': agent '%s' has no input "
					       "'%s' (a region seeded by it)", key,
					       bp->name ? bp->name : "?", key);
		}
		if (load_text(what, key, eq + 1, &text, files) != 0) {
			lev_strv_free(v);
			return LEV_EXIT_FAIL;
		}
		v = lev_strv_push_take(v, xasprintf("%s=%s", key, text));
		free(text);
	}
	*out = v;
	return 0;
}

/* True when DIR is under one of the [security] allowed_workdirs. */
static bool workdir_allowed(const struct lev_config *cfg, const char *dir, const char *home)
{
	for (char **w = cfg->allowed_workdirs; w && *w; w++) {
		_cleanup_free_ char *e = NULL;
		char real[PATH_MAX];
		size_t n;

		e = home && (lev_streq(*w, "~") || lev_startswith(*w, "~/"))
			    ? xasprintf("%s%s", home, *w + 1)
			    : xstrdup(*w);
		if (!realpath(e, real))
			continue;
		n = strlen(real);
		if (!strcmp(real, "/") || (!strncmp(dir, real, n) && (dir[n] == '/' || !dir[n])))
			return true;
	}
	return false;
}

/*
 * The workdir guard: the home directory or the filesystem root as a
 * workdir needs a yes on the terminal (or an allowed_workdirs entry).
 * Without a terminal the run goes on with a warning.  Returns 0 to go on.
 */
static int workdir_guard(struct front *f, const struct lev_config *cfg, const char *dir,
			 const char *home)
{
	char line[16];
	bool risky = !strcmp(dir, "/");

	if (home) {
		char real[PATH_MAX];

		if (realpath(home, real) && !strcmp(real, dir))
			risky = true;
	}
	if (!risky || workdir_allowed(cfg, dir, home))
		return 0;
	if (f->tty_fd < 0) {
		lev_warn("the workdir '%s' is %s: the agent can read and write everything under "
			 "it; to stop this warning, add it to your config.toml:\n"
			 "  [security]\n  allowed_workdirs = [\"%s\"]",
			 dir, !strcmp(dir, "/") ? "the filesystem root" : "your home directory",
			 dir);
		return 0;
	}
	tty_printf(f, "? Use %s as the working directory? The agent can read and write "
		      "everything under it. [y/N] ",
		   dir);
	if (read_answer(f, line, sizeof(line)) < 0 || (strcmp(line, "y") && strcmp(line, "yes")))
		return lev_fail("not using '%s' as the workdir; pass --workdir DIR", dir);
	return 0;
}

/* The read-path warning of `lev run` (with the stanza to add). */
static void read_path_warning(const struct lev_blueprint *bp, const struct lev_config *cfg,
			      const char *workdir, const char *home)
{
	enum lev_grant_status *status = NULL;
	struct lev_err err = LEV_ERR_INIT;
	size_t granted = 0, n = lev_strv_len(bp->read_paths);
	struct lev_buf allow = LEV_BUF_INIT;

	if (!n)
		return;
	if (lev_lint_grant_report(bp, cfg, workdir, home, &status, &granted, &err) < 0) {
		lev_warn("%s", err.msg);
		return;
	}
	if (granted < n) {
		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *q = NULL;

			if (status[i] != LEV_GRANT_NOT_GRANTED)
				continue;
			q = lev_toml_quote(bp->read_paths[i]);
			if (allow.len)
				(void)lev_buf_adds(&allow, ", ");
			(void)lev_buf_adds(&allow, q);
		}
		lev_warn("agent '%s' declares [read_paths] your config does not grant (%zu "
			 "declared, %zu granted); reads outside the workdir will be refused%s%s%s%s%s",
			 bp->name, n, granted, allow.len ? "\n  add to your config.toml:\n"
								 "    [agent_read_paths."
							    : "",
			 allow.len ? bp->name : "", allow.len ? "]\n    allow = [" : "",
			 allow.len ? allow.buf : "", allow.len ? "]" : "");
	}
	lev_buf_release(&allow);
	free(status);
}

/* ---- --detach ---------------------------------------------------------------- */

static void env_add(json_t *env, const char *name)
{
	const char *v = name ? getenv(name) : NULL;
	json_t *s;

	if (!v)
		return;
	s = json_sprintf("%s=%s", name, v);
	if (s)
		json_array_append_new(env, s);
}

/*
 * What the run's worker gets as its environment: ours as [security]
 * shell_env lets it through, plus lev's own variables (where the data root
 * and config are) and the variables secret by their role (SECRET: the
 * providers' keys, MCP servers' ${VAR}s), which the worker needs and its
 * commands never see (the run filters them again).  The request names
 * SECRET in "secret_env": the daemon never keeps their values.
 */
static json_t *detach_env(const struct lev_config *cfg, char *const *secret)
{
	struct lev_envfilter ef = { cfg->shell_env, cfg->shell_env_withhold, cfg->allow_env_vars };
	char **kept = lev_envfilter_apply(&ef, environ);
	_cleanup_strv_ char **builtin = NULL;
	json_t *env = json_array();

	for (char **e = kept; e && *e; e++) {
		json_t *s = json_string(*e);

		if (s)
			json_array_append_new(env, s);
	}
	lev_strv_free(kept);
	env_add(env, "LEVIATH_HOME");
	env_add(env, "LEVIATH_CONFIG_PATH");
	/* the worker reads keys from the keychain over the session bus (never its commands) */
	if (cfg->credential_store == LEV_CRED_KEYCHAIN)
		env_add(env, "DBUS_SESSION_BUS_ADDRESS");
	builtin = lev_builtin_provider_vars(false);
	for (char **v = builtin; v && *v; v++)
		env_add(env, *v);
	for (char *const *v = secret; v && *v; v++)
		env_add(env, *v);
	return env;
}

/* The names of the variables secret by their role (lev_config_secret_vars()), a new array. */
static json_t *secret_env(char *const *secret)
{
	json_t *names = json_array();

	for (char *const *v = secret; v && *v; v++)
		json_array_append_new(names, json_string(*v));
	return names;
}

/* The daemon's submit request for this run (a new reference), or NULL. */
static json_t *submit_request(const struct lev_agent_opts *o, const char *path,
			      const struct lev_launch_override *lo)
{
	json_t *req = lev_proto_request("submit"), *r = json_object(), *allow = json_array();
	_cleanup_strv_ char **secret = lev_config_secret_vars(o->cfg);
	char bp_real[PATH_MAX];

	if (!realpath(path, bp_real)) {
		json_decref(req);
		json_decref(r);
		json_decref(allow);
		lev_fail("cannot resolve '%s': %s", path, strerror(errno));
		return NULL;
	}
	for (char *const *a = o->allow; a && *a; a++)
		json_array_append_new(allow, json_string(*a));
	json_object_set_new(r, "blueprint", json_string(bp_real));
	json_object_set_new(r, "agent", json_string(o->bp->name ? o->bp->name : "?"));
	json_object_set_new(r, "workdir", json_string(o->workdir));
	if (o->task)
		json_object_set_new(r, "task", json_string(o->task));
	if (o->task && !o->cfg->title_off)	/* Leviath's [title]: the task's first line */
		json_object_set_new(r, "title", lev_run_title(o->task));
	if (o->inputs) {
		json_t *in = json_array();

		for (char *const *i = o->inputs; *i; i++)
			json_array_append_new(in, json_string(*i));
		json_object_set_new(r, "inputs", in);
	}
	if (o->input_files) {
		json_t *in = json_array();

		for (char *const *i = o->input_files; *i; i++)
			json_array_append_new(in, json_string(*i));
		json_object_set_new(r, "input_files", in);
	}
	if (o->model)
		json_object_set_new(r, "model", json_string(o->model));
	if (o->oci_helper)
		json_object_set_new(r, "oci_helper", json_string(o->oci_helper));
	json_object_set_new(r, "yolo", json_boolean(o->yolo));
	json_object_set_new(r, "yolo_flow", json_boolean(o->yolo_flow));
	json_object_set_new(r, "no_seed_commands", json_boolean(o->no_seed_commands));
	json_object_set_new(r, "allow", allow);
	if (lo->output_format)
		json_object_set_new(r, "output_format", json_string(lo->output_format));
	if (lo->output_instructions)
		json_object_set_new(r, "output_instructions", json_string(lo->output_instructions));
	if (lo->output_schema)
		json_object_set_new(r, "output_schema", json_string(lo->output_schema));
	if (lo->max_depth >= 0)
		json_object_set_new(r, "max_depth", json_integer(lo->max_depth));
	json_object_set_new(r, "env", detach_env(o->cfg, secret));
	json_object_set_new(r, "secret_env", secret_env(secret));
	json_object_set_new(req, "request", r);
	if (o->task && !json_object_get(r, "task")) {
		json_decref(req);
		lev_fail("--task: the task must be UTF-8 text");
		return NULL;
	}
	/* a daemon this starts goes away 5 minutes after its last run */
	if (lev_daemon_start(true, 300) != LEV_EXIT_OK) {
		json_decref(req);
		return NULL;
	}
	return req;
}

/* Leviath's spawn object for run ID of REQ (a new reference). */
static json_t *spawn_object(const char *id, const json_t *req)
{
	const json_t *r = json_object_get(req, "request");

	return json_pack("{s:s, s:s?, s:s?, s:b}", "run_id", id, "blueprint_path",
			 lev_json_str(r, "blueprint"), "workdir", lev_json_str(r, "workdir"), "yolo",
			 json_is_true(json_object_get(r, "yolo")));
}

/*
 * Spawn COUNT runs of REQ (taken) in the daemon and return, as Leviath's lev
 * run does: each run's id on stdout (its spawn object with JSON: an array
 * when COUNT is above 1).  The runs spawned before one fails stay, and are
 * printed.
 */
static int spawn(json_t *req, unsigned long count, bool json)
{
	json_t *all = json_array();
	int rc = LEV_EXIT_OK;

	for (unsigned long i = 0; i < (count ? count : 1); i++) {
		json_t *reply = NULL;
		const char *id;

		if (lev_daemon_call(json_incref(req), &reply) != LEV_EXIT_OK) {
			rc = LEV_EXIT_FAIL;
			break;
		}
		id = lev_json_str(reply, "run") ? lev_json_str(reply, "run") : "-";
		json_array_append_new(all, spawn_object(id, req));
		if (!json)
			printf("%s\n", id);
		json_decref(reply);
	}
	if (json && json_array_size(all)) {
		char *text = json_dumps(count > 1 ? all : json_array_get(all, 0), JSON_COMPACT);

		puts(text ? text : "{}");
		free(text);
	} else if (!json && json_array_size(all) == 1) {
		const char *id = lev_json_str(json_array_get(all, 0), "run_id");

		fprintf(stderr, "lev: run %s handed to the daemon; see 'lev ps', 'lev attach %s', "
				"'lev result %s'\n",
			id, id, id);
	}
	fflush(stdout);
	json_decref(all);
	json_decref(req);
	return rc;
}

/* ---- following a daemon run ------------------------------------------------ */

static int report_end_as(struct front *f, const char *status, const char *id, const char *record,
			 const char *output, const char *error);

/* The respond request for the answer given on the terminal to Q; NULL: none. */
static json_t *answer_on_tty(struct front *f, const json_t *q)
{
	static const char *const qkinds[] = { "text", "choice", "confirm" };
	json_t *req = lev_proto_request("respond");
	const char *kind = lev_json_str(q, "kind");

	f->interrupted = false;
	json_object_set_new(req, "id", json_string(lev_json_str(q, "id")));
	if (!lev_streq(kind, "question")) {
		char digest[LEV_SHA256_HEX_LEN + 1];
		struct lev_ask a = {
			.kind = lev_streq(kind, "taint") ? LEV_ASK_TAINT : LEV_ASK_PERMISSION,
			.stage = lev_json_str(q, "stage"),
			.call_id = lev_json_str(q, "call_id"),
			.tool = lev_json_str(q, "tool"),
			.prompt = lev_json_str(q, "prompt") ? lev_json_str(q, "prompt") : "",
			.detail = lev_json_str(q, "detail"),
			.stage_label = lev_json_str(q, "stage_label") ? lev_json_str(q, "stage_label")
								      : "Allow for this stage",
			.run_label = lev_json_str(q, "run_label") ? lev_json_str(q, "run_label")
								  : "Allow for this run",
			.call = lev_json_str(q, "call"),
		};
		enum lev_ask_answer ans = hook_ask(f, &a);

		/* the answer approves what the terminal showed, and says so */
		lev_callshow_digest(a.call, digest);
		json_object_set_new(req, "digest", json_string(digest));
		const char *scope = ans == LEV_ANSWER_STAGE ? "stage"
				    : ans == LEV_ANSWER_RUN ? "run" : "once";

		json_object_set_new(req, "answer", json_string(ans == LEV_ANSWER_ONCE ||
							       ans == LEV_ANSWER_STAGE ||
							       ans == LEV_ANSWER_RUN
								       ? "approve" : "deny"));
		if (ans == LEV_ANSWER_ONCE || ans == LEV_ANSWER_STAGE || ans == LEV_ANSWER_RUN)
			json_object_set_new(req, "scope", json_string(scope));
	} else {
		struct lev_question qq = { .kind = LEV_QUESTION_TEXT };
		char **choices = NULL, *text = NULL;
		size_t i;
		json_t *c;
		int r;

		for (i = 0; i < 3; i++)
			if (lev_streq(lev_json_str(q, "question_kind"), qkinds[i]))
				qq.kind = (enum lev_question_kind)i;
		json_array_foreach(json_object_get(q, "choices"), i, c)
			if (json_is_string(c))
				choices = lev_strv_push(choices, json_string_value(c));
		qq.stage = lev_json_str(q, "stage") ? lev_json_str(q, "stage") : "";
		qq.call_id = lev_json_str(q, "call_id");
		qq.question = lev_json_str(q, "prompt") ? lev_json_str(q, "prompt") : "";
		qq.choices = choices;
		r = hook_question(f, &qq, &text);
		lev_strv_free(choices);
		if (r == 0)
			json_object_set_new(req, "text", json_string(text));
		free(text);
		if (r < 0)
			goto none;
	}
	if (f->interrupted || run_cancel)
		goto none;
	return req;
none:
	json_decref(req);
	return NULL;
}

/* Ask the open question on the terminal and send the answer to the daemon. */
static void follow_prompt(struct front *f, const char *run)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *req, *reply = NULL;
	int r;

	if (f->tty_fd < 0) {
		say(f, "lev: run %s waits for an answer: lev respond %s\n", run,
		    lev_json_str(f->open_q, "id"));
		goto done;
	}
	req = answer_on_tty(f, f->open_q);
	if (!req) {
		if (f->interrupted || run_cancel)
			return;	/* the daemon spoke first, or we detach: keep it open */
		goto done;	/* no answer in time: the run's own timeout decides */
	}
	r = lev_client_call(req, &reply, &err);
	json_decref(req);
	json_decref(reply);
	if (r == -EREMOTEIO && lev_startswith(err.msg, "no open request"))
		tty_printf(f, "  (answered elsewhere)\n");
	else if (r < 0)
		lev_warn("%s", err.msg);
done:
	json_decref(f->open_q);
	f->open_q = NULL;
}

/* One frame of the daemon's stream; true when the run ended (*rc: the exit code). */
static bool follow_frame(struct front *f, const json_t *m, const char *run, int *rc)
{
	const char *op = lev_json_str(m, "op");

	if (lev_streq(op, "event") && json_is_object(json_object_get(m, "event"))) {
		const json_t *ev = json_object_get(m, "event");
		char *line = json_dumps(ev, JSON_COMPACT | JSON_ENSURE_ASCII);
		bool thinking = lev_streq(lev_json_str(ev, "event"), "model_request");

		hook_thinking(f, false);
		hook_event(f, ev, line ? line : "{}");
		if (thinking)
			hook_thinking(f, true);
		free(line);
	} else if (lev_streq(op, "ask") && json_is_object(json_object_get(m, "question"))) {
		hook_thinking(f, false);
		json_decref(f->open_q);
		f->open_q = json_incref(json_object_get(m, "question"));
	} else if (lev_streq(op, "answered")) {
		if (f->open_q && lev_streq(lev_json_str(f->open_q, "id"), lev_json_str(m, "id"))) {
			if (f->tty_fd >= 0)
				tty_printf(f, "\n  (answered elsewhere: %s)\n",
					   lev_json_str(m, "answer") ? lev_json_str(m, "answer") : "-");
			json_decref(f->open_q);
			f->open_q = NULL;
		}
	} else if (lev_streq(op, "paused") && !f->json) {
		hook_thinking(f, false);
		say(f, "lev: run %s paused; continue it with 'lev resume %s'\n", run, run);
	} else if (lev_streq(op, "resumed") && !f->json) {
		say(f, "lev: run %s resumed\n", run);
	} else if (lev_streq(op, "dropped") && !f->json) {
		say(f, "lev: (%lld earlier event(s) not shown: lev logs %s)\n",
		    (long long)json_integer_value(json_object_get(m, "events")), run);
	} else if (lev_streq(op, "end")) {
		json_t *res = NULL;
		const char *out = lev_json_str(m, "result");

		/* an output too large for a frame is read from the record (docs/daemon.md) */
		if (json_is_true(json_object_get(m, "result_in_record")) && lev_json_str(m, "record") &&
		    lev_runrecord_result_load(lev_json_str(m, "record"), &res, NULL) == 0)
			out = lev_json_str(res, "output");
		hook_thinking(f, false);
		*rc = report_end_as(f, lev_json_str(m, "status"), run, lev_json_str(m, "record"),
				    out, lev_json_str(m, "error"));
		json_decref(res);
		return true;
	}
	return false;
}

/*
 * Follow the run the daemon streams on FD until it ends: its exit code as
 * for an in-process run.  Ctrl-C (SIGINT, SIGTERM, SIGHUP) detaches: the
 * run goes on, exit 0.
 */
static int follow(struct front *f, int fd, const char *run)
{
	int rc = LEV_EXIT_FAIL;

	f->watch_fd = fd;
	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = cancel_pipe[0], .events = POLLIN } };
		struct lev_err err = LEV_ERR_INIT;
		json_t *m = NULL;
		bool end;

		if (f->open_q && !run_cancel)
			follow_prompt(f, run);
		if (run_cancel)
			break;
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (run_cancel)
			break;
		if (!p[0].revents)
			continue;
		if (lev_proto_recv(fd, &m, &err) < 0 || !m) {
			hook_thinking(f, false);
			return lev_fail("lost the daemon's stream of run %s (this terminal read too "
					"slowly, or the daemon stopped); follow it again with 'lev "
					"attach %s'",
					run, run);
		}
		end = follow_frame(f, m, run, &rc);
		json_decref(m);
		if (end)
			return rc;
	}
	hook_thinking(f, false);
	say(f, "\nlev: detached from run %s, which goes on; follow it again with 'lev attach %s' "
	       "(its result: 'lev result %s')\n",
	    run, run, run);
	run_cancel = 0;	/* a detach is not an interruption */
	return LEV_EXIT_OK;
}

/* Submit the run to the daemon and follow it. */
static int submit_follow(struct front *f, const struct lev_agent_opts *o, const char *path,
			 const struct lev_launch_override *lo)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *req = submit_request(o, path, lo), *reply = NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *id = NULL;

	if (!req)
		return LEV_EXIT_FAIL;
	json_object_set_new(req, "follow", json_true());
	/* with nobody to ask, nothing is asked: as an in-process run without a terminal */
	json_object_set_new(json_object_get(req, "request"), "interactive",
			    json_boolean(f->tty_fd >= 0));
	if (lev_client_open(req, &fd, &reply, &err) < 0) {
		json_decref(req);
		return lev_fail("%s", err.msg);
	}
	json_decref(req);
	id = xstrdup(lev_json_str(reply, "run") ? lev_json_str(reply, "run") : "-");
	json_decref(reply);
	return follow(f, fd, id);
}

/* ---- the command ------------------------------------------------------------ */

/* What the command line asked for. */
struct run_args {
	char *task_arg;
	char *output_format;	/* --output-format LABEL */
	char *output_instructions;	/* --output-instructions TEXT */
	char *output_schema;	/* --output-schema JSON|@FILE, as given */
	long max_depth;		/* --max-depth N; -1: the blueprint's */
	unsigned long count;	/* --count N: spawn N runs; 0: one */
	char **inputs;		/* --input KEY=VALUE and --KEY VALUE, as "KEY=VALUE" */
	char *workdir;
	char *model;
	char **allow;
	const char *agent;	/* argv's NAME|PATH */
	bool yolo;
	bool yolo_flow;
	bool no_seed_commands;
	bool json;
	bool detach;
	bool follow;		/* --follow: follow the run here until it ends */
	bool foreground;
};

static void run_args_release(struct run_args *a)
{
	free(a->task_arg);
	free(a->output_format);
	free(a->output_instructions);
	free(a->output_schema);
	lev_strv_free(a->inputs);
	free(a->workdir);
	free(a->model);
	lev_strv_free(a->allow);
}

/* True when NAME (up to LEN bytes) is one of LONGOPTS; *has_arg gets whether it takes a value. */
static bool known_option(const struct option *longopts, const char *name, size_t len,
			 bool *has_arg)
{
	for (const struct option *o = longopts; o->name; o++)
		if (strlen(o->name) == len && !strncmp(o->name, name, len)) {
			*has_arg = o->has_arg != no_argument;
			return true;
		}
	return false;
}

/*
 * Leviath's caller inputs: `--KEY VALUE` or `--KEY=VALUE` for an option
 * lev run does not have becomes the input KEY (checked against the
 * blueprint once it is loaded).  The rest of ARGV, in order, goes to
 * *rest (an argv of borrowed strings, NULL-terminated).
 */
static int take_inputs(int argc, char **argv, const struct option *longopts, struct run_args *a,
		       char ***rest, int *n_rest)
{
	char **out = xcalloc((size_t)argc + 1, sizeof(*out));
	int n = 0, i = 0;

	if (argc > 0)
		out[n++] = argv[i++];
	for (; i < argc; i++) {
		const char *s = argv[i], *name = s + 2, *eq;
		size_t len;
		bool has_arg = false;

		if (!strcmp(s, "--")) {
			while (i < argc)
				out[n++] = argv[i++];
			break;
		}
		if (strncmp(s, "--", 2) || !*name) {
			out[n++] = argv[i];
			continue;
		}
		eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		if (known_option(longopts, name, len, &has_arg)) {
			out[n++] = argv[i];
			if (has_arg && !eq && i + 1 < argc)
				out[n++] = argv[++i];
			continue;
		}
		if (!eq && i + 1 >= argc) {
			free(out);
			return lev_usage_error("run", "unknown option '%s' (as an input to the agent "
					       "it needs a value: %s VALUE)", s, s);
		}
		a->inputs = lev_strv_push_take(a->inputs, eq ? xasprintf("%.*s=%s", (int)len, name,
									    eq + 1)
							     : xasprintf("%s=%s", name, argv[++i]));
	}
	out[n] = NULL;
	*rest = out;
	*n_rest = n;
	return 0;
}

/* The options Leviath's lev run has beside lev's: 0 taken, -1 not one of them, else a usage exit. */
static int parse_leviath_arg(int c, struct run_args *a)
{
	char **dst = c == 'O' ? &a->output_format : c == 'I' ? &a->output_instructions
		   : c == 'C' ? &a->output_schema : NULL;
	uint64_t n;

	if (dst) {
		free(*dst);
		*dst = xstrdup(optarg);
		return 0;
	}
	if (c == 'f') {
		a->follow = true;
		return 0;
	}
	if (c == 'n' || c == 'M') {
		if (lev_parse_u64(optarg, &n) < 0 || (c == 'n' && (n < 1 || n > RUN_COUNT_MAX)) ||
		    n > INT_MAX)
			return lev_usage_error("run", "--%s takes a number%s, got '%s'",
					       c == 'n' ? "count" : "max-depth",
					       c == 'n' ? " from 1 to 10000" : "", optarg);
		if (c == 'n')
			a->count = (unsigned long)n;
		else
			a->max_depth = (long)n;
		return 0;
	}
	return -1;
}

/* Parse the command line into A: 0, or the usage error's exit code. */
static int parse_run_args(int argc, char **argv, struct run_args *a)
{
	static const struct option longopts[] = {
		{ "task", required_argument, NULL, 't' },
		{ "input", required_argument, NULL, 'i' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "yolo", no_argument, NULL, 'y' },
		{ "yolo-flow", no_argument, NULL, 'Y' },
		{ "allow", required_argument, NULL, 'a' },
		{ "model", required_argument, NULL, 'm' },
		{ "no-seed-commands", no_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "detach", no_argument, NULL, 'D' },
		{ "foreground", no_argument, NULL, 'F' },
		{ "follow", no_argument, NULL, 'f' },
		{ "count", required_argument, NULL, 'n' },
		{ "output-format", required_argument, NULL, 'O' },
		{ "output-instructions", required_argument, NULL, 'I' },
		{ "output-schema", required_argument, NULL, 'C' },
		{ "max-depth", required_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_free_ char **rest = NULL;
	int c, r;

	r = take_inputs(argc, argv, longopts, a, &rest, &argc);
	if (r != 0)
		return r;
	argv = rest;
	optind = 0;
	opterr = 0;
	a->max_depth = -1;
	while ((c = getopt_long(argc, argv, "t:w:m:f", longopts, NULL)) != -1) {
		r = parse_leviath_arg(c, a);
		if (r > 0)
			return r;
		if (r == 0)
			continue;
		switch (c) {
		case 't':
			free(a->task_arg);
			a->task_arg = xstrdup(optarg);
			break;
		case 'i': {
			const char *eq = strchr(optarg, '=');

			if (!eq || eq == optarg)
				return lev_usage_error("run", "--input takes KEY=VALUE, got '%s'",
						       optarg);
			a->inputs = lev_strv_push(a->inputs, optarg);
			break;
		}
		case 'w':
			free(a->workdir);
			a->workdir = xstrdup(optarg);
			break;
		case 'y':
			a->yolo = true;
			break;
		case 'Y':
			a->yolo_flow = true;
			break;
		case 'a':
			if (!*optarg)
				return lev_usage_error("run", "--allow needs a tool name");
			a->allow = lev_strv_push(a->allow, optarg);
			break;
		case 'm':
			free(a->model);
			a->model = xstrdup(optarg);
			break;
		case 'S':
			a->no_seed_commands = true;
			break;
		case 'j':
			a->json = true;
			break;
		case 'D':
			a->detach = true;
			break;
		case 'F':
			a->foreground = true;
			break;
		default:
			if (optopt && strchr("twmnOICM", optopt) && optopt > ' ')
				return lev_usage_error("run", "option '-%c' needs a value", optopt);
			return lev_usage_error("run", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return lev_usage_error("run", "which agent? give a NAME or PATH");
	if (optind + 1 < argc)
		return lev_usage_error("run", "unexpected argument '%s'", argv[optind + 1]);
	/* --foreground follows too, in this process: --follow adds nothing to it */
	if (a->detach + (a->foreground || a->follow) > 1)
		return lev_usage_error("run", "--detach and --%s do not go together",
				       a->foreground ? "foreground" : "follow");
	if (a->foreground)
		a->follow = false;
	if (a->count > 1 && (a->follow || a->foreground))
		return lev_usage_error("run", "--count spawns runs and returns: it does not go with "
				       "--%s", a->follow ? "follow" : "foreground");
	if (a->model && (!a->model[0] || a->model[0] == '/'))
		return lev_usage_error("run", "--model takes PROVIDER/MODEL or a model id, got '%s'",
				       a->model);
	a->agent = argv[optind];	/* REST borrows argv's strings */
	return 0;
}

/* The workdir ARG (NULL: the current directory) made real into REAL[PATH_MAX]. */
static int resolve_workdir(const char *arg, char *real)
{
	_cleanup_free_ char *cwd = arg ? NULL : getcwd(NULL, 0);
	const char *dir = arg ? arg : cwd;
	struct stat st;

	if (!dir || !realpath(dir, real)) {
		lev_fail("--workdir '%s' is not a usable directory: %s", dir ? dir : ".",
			 strerror(errno));
		return -1;
	}
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		lev_fail("--workdir '%s' is not a directory", dir);
		return -1;
	}
	return 0;
}

static void spinner_start(struct front *f)
{
	if (!f->tty || f->json)
		return;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->spin_started = pthread_create(&f->spin_thread, NULL, spinner_main, f) == 0;
}

static void spinner_stop(struct front *f)
{
	if (!f->spin_started)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->spin_thread, NULL);
	spinner_clear(f);
}

/* The run's options from the command line, the data paths and the front end. */
static void fill_opts(struct lev_agent_opts *o, struct lev_ctx *ctx, struct front *f)
{
	const struct lev_data_paths *at = &ctx->paths;

	o->runs_dir = at->runs;
	o->data_root = at->root;
	o->policy_path = at->policy;
	o->rules_dir = at->rules;
	o->credentials_path = at->credentials;
	o->config_path = at->config;
	o->envp = environ;
	o->cancel = &run_cancel;
	o->cancel_fd = cancel_pipe[0];
	o->hooks.ask = hook_ask;
	if (f->tty_fd >= 0)
		o->hooks.question = hook_question;
	o->hooks.event = hook_event;
	o->hooks.thinking = hook_thinking;
	o->hooks.data = f;
}

/* Say how a run ended (STATUS as lev_run_status_name() spells it); its exit code. */
static int report_end_as(struct front *f, const char *status, const char *id, const char *record,
			 const char *output, const char *error)
{
	id = id ? id : "-";
	record = record ? record : "none";
	if (lev_streq(status, "complete")) {
		if (f->json)
			return LEV_EXIT_OK;
		say(f, "lev: run %s complete (record: %s)\n", id, record);
		if (output) {
			_cleanup_free_ char *shown = lev_secrets_redacted(output);

			fputs(shown, stdout);
			if (*shown && shown[strlen(shown) - 1] != '\n')
				fputc('\n', stdout);
		}
		return LEV_EXIT_OK;
	}
	if (lev_streq(status, "cancelled")) {
		if (!f->json)
			say(f, "lev: run %s interrupted (record: %s)\n", id, record);
		return EXIT_INTERRUPTED;
	}
	if (!f->json)
		lev_fail("run %s failed: %s (record: %s)", id, error ? error : "unknown error",
			 record);
	return LEV_EXIT_FAIL;
}

static int report_end(struct front *f, const struct lev_agent *agent)
{
	return report_end_as(f, lev_run_status_name(lev_agent_status(agent)),
			     lev_agent_run_id(agent), lev_agent_record_dir(agent),
			     lev_agent_output(agent), lev_agent_error(agent));
}

/* lev attach: follow a daemon run from another terminal. */
int lev_run_attach(const char *run, bool json)
{
	struct front f = { .tty_fd = -1, .watch_fd = -1, .json = json };
	struct lev_err err = LEV_ERR_INIT;
	json_t *req = lev_proto_request("attach"), *reply = NULL;
	_cleanup_close_ int fd = -1;
	int rc;

	json_object_set_new(req, "run", json_string(run));
	rc = lev_client_open(req, &fd, &reply, &err);
	json_decref(req);
	json_decref(reply);
	if (rc < 0)
		return lev_fail("%s", err.msg);
	f.tty = isatty(STDERR_FILENO);
	f.tty_fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	/* no deadline of its own: the run's interaction timeout decides, and the
	 * stream says when the run (or the daemon) is gone */
	f.ask_timeout_secs = 0;
	if (install_signals() < 0) {
		if (f.tty_fd >= 0)
			close(f.tty_fd);
		return lev_fail("cannot set up signal handling: %s", strerror(errno));
	}
	spinner_start(&f);
	rc = follow(&f, fd, run);
	spinner_stop(&f);
	if (f.tty_fd >= 0)
		close(f.tty_fd);
	free(f.last_allowed);
	json_decref(f.open_q);
	return rc;
}

/*
 * What A asks over BP's own output and depth, into *LO (borrowing A and
 * *SCHEMA, which gets --output-schema's text), applied to BP: 0, or the
 * exit code of an error it printed.
 */
static int launch_override(const struct run_args *a, struct lev_blueprint *bp, char **schema,
			   struct lev_launch_override *lo)
{
	struct lev_err err = LEV_ERR_INIT;
	_cleanup_strv_ char **files = NULL;	/* a schema is not in the context: no label */

	*schema = NULL;
	if (a->output_schema &&
	    load_text("--output-schema", "output_schema", a->output_schema, schema, &files) != 0)
		return LEV_EXIT_FAIL;
	*lo = (struct lev_launch_override){ a->output_format, a->output_instructions, *schema,
					    a->max_depth };
	if (lev_blueprint_launch_override(bp, lo, &err) < 0)
		return lev_fail("%s", err.msg);
	return 0;
}

int cmd_run(int argc, char **argv, struct lev_ctx *ctx)
{
	struct run_args a = { 0 };
	struct front f = { .tty_fd = -1, .watch_fd = -1 };
	struct lev_agent_opts o = { .cancel_fd = -1 };
	struct lev_err err = LEV_ERR_INIT;
	struct lev_blueprint *bp = NULL;
	struct lev_agent *agent = NULL;
	const struct lev_config *cfg = &ctx->cfg;
	_cleanup_free_ char *task = NULL, *schema = NULL;
	struct lev_launch_override lo;
	char **inputs = NULL;
	_cleanup_strv_ char **input_files = NULL;
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *home = NULL;
	char real[PATH_MAX];
	int rc = LEV_EXIT_FAIL;

	rc = parse_run_args(argc, argv, &a);
	if (rc != 0) {
		run_args_release(&a);
		return rc;
	}
	rc = LEV_EXIT_FAIL;
	f.json = a.json;
	if (a.task_arg && load_task(a.task_arg, &task, &input_files) != 0)
		goto out;

	/* the blueprint (with what the launch asks over it) and the config */
	if (lev_agentstore_resolve(a.agent, &path, &err) < 0 ||
	    lev_blueprint_load(path, &bp, &err) < 0) {
		lev_fail("%s", err.msg);
		goto out;
	}
	if (launch_override(&a, bp, &schema, &lo) != 0)
		goto out;
	if (!a.task_arg && lev_run_task_from_editor(bp, a.agent, &task) != 0)
		goto out;
	rc = load_inputs(bp, a.inputs, &inputs, &input_files);
	if (rc != 0)
		goto out;
	rc = LEV_EXIT_FAIL;
	/* per-agent grants go to the installed agent, unchanged, only */
	lev_agentstore_bind(bp);
	for (char **w = bp->warnings; w && *w; w++)
		lev_warn("%s", *w);
	if (lev_setup(ctx, CMD_NEEDS_CONFIG) < 0)
		goto out;
	for (char **w = cfg->warnings; w && *w; w++)
		lev_warn("%s", *w);

	if (resolve_workdir(a.workdir, real) < 0)
		goto out;
	if (lev_home_dir(&home, NULL) < 0)
		home = NULL;
	/* where things live */
	if (lev_setup(ctx, CMD_NEEDS_DATA_ROOT) < 0)
		goto out;

	f.tty = isatty(STDERR_FILENO);
	f.tty_fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	f.ask_timeout_secs = cfg->limits.interaction_timeout_secs ? cfg->limits.interaction_timeout_secs
								 : 3600;
	if (install_signals() < 0) {
		lev_fail("cannot set up signal handling: %s", strerror(errno));
		goto out;
	}
	if (workdir_guard(&f, cfg, real, home) != 0)
		goto out;
	read_path_warning(bp, cfg, real, home);

	o.bp = bp;
	o.cfg = cfg;
	o.workdir = real;
	o.task = task;
	o.inputs = inputs;
	o.input_files = input_files;
	o.allow = a.allow;
	o.model = a.model;
	o.yolo = a.yolo;
	o.yolo_flow = a.yolo_flow;
	o.no_seed_commands = a.no_seed_commands;
	o.oci_helper = ctx->oci_helper;
	if (a.follow) {
		spinner_start(&f);
		rc = submit_follow(&f, &o, path, &lo);
		goto out;
	}
	if (!a.foreground) {
		json_t *req = submit_request(&o, path, &lo);

		rc = req ? spawn(req, a.count, f.json) : LEV_EXIT_FAIL;
		goto out;
	}
	o.home = home;
	fill_opts(&o, ctx, &f);
	spinner_start(&f);

	if (lev_agent_new(&o, &agent, &err) < 0) {
		lev_fail("%s", err.msg);
		goto out;
	}
	if (lev_agent_run(agent, &err) < 0)
		lev_warn("%s", err.msg);
	rc = report_end(&f, agent);
out:
	spinner_stop(&f);
	/* freeing the agent kills commands and removes containers */
	lev_agent_free(agent);
	lev_strv_free(inputs);
	if (rc != EXIT_INTERRUPTED && run_cancel)
		rc = EXIT_INTERRUPTED;
	if (f.tty_fd >= 0)
		close(f.tty_fd);
	free(f.last_allowed);
	json_decref(f.open_q);
	lev_blueprint_free(bp);
	run_args_release(&a);
	return rc;
}
