/*
 * tooltable.c - the tool table (tooltable.h): every tool name lev knows.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "liblev/base/tooltable.h"
#include "liblev/base/cleanup.h"

static const char *const shell_aliases[] = { "bash", NULL };

/* lev's earlier argument names, each before the name Leviath gives it */
static const char *const submit_args[] = { "output", "content", NULL };
static const char *const ask_args[] = { "question", "prompt", NULL };
static const char *const choice_args[] = { "question", "prompt", "choices", "options", NULL };
static const char *const edit_doc_args[] = { "title", "prompt", NULL };
static const char *const search_args[] = { "max_results", "count", NULL };

#define R LEV_TOUCH_READS
#define W LEV_TOUCH_WRITES
#define N LEV_TOUCH_NETWORK

#define DA LEV_TOOLF_DEFAULT_ALLOW
#define CL LEV_TOOLF_CLASSIFIED
#define FOREIGN LEV_TOOLF_FOREIGN
#define CQ LEV_TOOLF_CONSEQUENTIAL

/* Taint classes: the label of a result, the direction, where the target is. */
#define PUBLIC_OUT .label = LEV_PUBLIC, .direction = LEV_DIR_OUTBOUND
#define PUBLIC_IN .label = LEV_PUBLIC, .direction = LEV_DIR_INBOUND
#define INTERNAL_IN .label = LEV_INTERNAL, .direction = LEV_DIR_INBOUND
#define INTERNAL_ONLY .label = LEV_INTERNAL, .direction = LEV_DIR_INTERNAL

/* lev's own tools first (the registry offers them in this order), then the foreign names. */
static const struct lev_tool_desc table[] = {
	{ .name = "read_file", .kind = LEV_TOOL_FS, .op = LEV_OP_READ_FILE, .touches = R,
	  .flags = DA | CL | LEV_TOOLF_FILE_RESULT, INTERNAL_IN, .detail_arg = "path",
	  .description = "Read a text file inside the working directory (or a path the user "
			 "granted). Long files are cut at 256 KiB with a note saying where to "
			 "continue." },
	{ .name = "read_files", .kind = LEV_TOOL_FS, .op = LEV_OP_READ_FILES, .touches = R,
	  .flags = DA | CL | LEV_TOOLF_FILE_RESULT, INTERNAL_IN, .detail_arg = "path",
	  .description = "Read several text files at once." },
	{ .name = "list_dir", .kind = LEV_TOOL_FS, .op = LEV_OP_LIST_DIR, .touches = R,
	  .flags = DA | CL | LEV_TOOLF_FILE_RESULT, INTERNAL_IN, .detail_arg = "path",
	  .description = "List a directory: one entry per line, directories end in '/', "
			 "symlinks in '@'." },
	{ .name = "write_file", .kind = LEV_TOOL_FS, .op = LEV_OP_WRITE_FILE, .touches = W,
	  .flags = CL | CQ, INTERNAL_ONLY, .detail_arg = "path",
	  .description = "Create or replace a file inside the working directory with the given "
			 "content." },
	{ .name = "edit_file", .kind = LEV_TOOL_FS, .op = LEV_OP_EDIT_FILE, .touches = R | W,
	  .flags = CL | CQ, INTERNAL_ONLY, .detail_arg = "path",
	  .description = "Replace the one occurrence of old_str in a file with new_str." },
	{ .name = "shell", .aliases = shell_aliases, .kind = LEV_TOOL_SHELL, .op = LEV_OP_SHELL,
	  .touches = R | W | N | LEV_TOUCH_SHELL | LEV_TOUCH_PROCESS, .flags = CL | CQ, PUBLIC_OUT,
	  .detail_arg = "command",
	  .description = "Run a shell command line in the working directory and return its "
			 "output. Commands time out after 60 seconds; output is capped at 1 MiB "
			 "per stream." },
	{ .name = "web_fetch", .kind = LEV_TOOL_NET, .op = LEV_OP_WEB_FETCH, .touches = N,
	  .flags = CL | CQ | LEV_TOOLF_BLUEPRINT_ALLOW, PUBLIC_OUT,
	  .target_from = LEV_TARGET_FROM_URL,
	  .detail_arg = "url",
	  .description = "Fetch a web page or text document over http(s) and return its text. "
			 "HTML is reduced to readable text; binary content is refused." },
	{ .name = "http_post", .kind = LEV_TOOL_NET, .op = LEV_OP_HTTP_POST, .touches = N,
	  .flags = CL | CQ, PUBLIC_OUT, .target_from = LEV_TARGET_FROM_URL, .detail_arg = "url",
	  .description = "Send an HTTP POST with a body to a URL and return the status and the "
			 "response text. Redirects are not followed." },
	{ .name = "web_search", .kind = LEV_TOOL_NET, .op = LEV_OP_WEB_SEARCH, .touches = N,
	  .flags = CL | LEV_TOOLF_BLUEPRINT_ALLOW, PUBLIC_OUT, .detail_arg = "url",
	  .detail_arg2 = "query",
	  .arg_aliases = search_args,
	  .description = "Search the web and return a short list of results (title, URL, "
			 "snippet)." },
	{ .name = "submit_output", .kind = LEV_TOOL_INLINE, .op = LEV_OP_SUBMIT_OUTPUT,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_ONLY,
	  .arg_aliases = submit_args,
	  .description = "Submit the final output of this stage. The stage ends when you call "
			 "it." },
	/* ends the stage by one of its edges: run/flow.c checks the edge and its gate */
	{ .name = "transition", .kind = LEV_TOOL_INLINE, .op = LEV_OP_TRANSITION,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_ONLY,
	  .description = "End this stage and go on to the next one: name the stage to go to "
			 "(one of the choices the stage lists), or DONE when the stage allows "
			 "finishing the run." },
	{ .name = "context_write", .kind = LEV_TOOL_INLINE, .op = LEV_OP_CONTEXT_WRITE,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_ONLY,
	  .description = "Replace the content of a temporary or clearable context region with a "
			 "note." },
	{ .name = "context_append", .kind = LEV_TOOL_INLINE, .op = LEV_OP_CONTEXT_APPEND,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_ONLY,
	  .description = "Add a note to a temporary or clearable context region." },
	{ .name = "context_read", .kind = LEV_TOOL_INLINE, .op = LEV_OP_CONTEXT_READ,
	  .flags = DA | CL, INTERNAL_ONLY,
	  .description = "Return the current content of a context region." },
	{ .name = "ask_user_text", .kind = LEV_TOOL_ASK, .op = LEV_OP_ASK_TEXT,
	  .touches = LEV_TOUCH_USER, .flags = DA | CL, INTERNAL_ONLY,
	  .arg_aliases = ask_args,
	  .description = "Ask the user a question and wait for a free-text answer. Use it only "
			 "when you cannot go on without them." },
	{ .name = "ask_user_choice", .kind = LEV_TOOL_ASK, .op = LEV_OP_ASK_CHOICE,
	  .touches = LEV_TOUCH_USER, .flags = DA | CL, INTERNAL_ONLY,
	  .arg_aliases = choice_args,
	  .description = "Ask the user to pick one of several answers; returns the chosen "
			 "answer's text." },
	{ .name = "ask_user_confirm", .kind = LEV_TOOL_ASK, .op = LEV_OP_ASK_CONFIRM,
	  .touches = LEV_TOUCH_USER, .flags = DA | CL, INTERNAL_ONLY,
	  .arg_aliases = ask_args,
	  .description = "Ask the user a yes/no question; returns \"yes\" or \"no\"." },
	/* interactions (run/interact.c): the person sees a document and answers */
	{ .name = "present_for_review", .kind = LEV_TOOL_ASK, .op = LEV_OP_PRESENT_FOR_REVIEW,
	  .touches = LEV_TOUCH_USER, .flags = DA | CL, INTERNAL_ONLY,
	  .description = "Show the user a markdown document for review: they approve it, edit "
			 "it (their text is returned) or abort the run." },
	{ .name = "edit_document", .kind = LEV_TOOL_ASK, .op = LEV_OP_EDIT_DOCUMENT,
	  .touches = LEV_TOUCH_USER, .flags = DA | CL, INTERNAL_ONLY,
	  .arg_aliases = edit_doc_args,
	  .description = "Hand the user a document to edit; returns their edited text." },
	{ .name = "current_time", .kind = LEV_TOOL_INLINE, .op = LEV_OP_CURRENT_TIME,
	  .flags = DA | CL, PUBLIC_IN,
	  .description = "The current date and time: local time with its UTC offset, and UTC." },
	{ .name = "which_command", .kind = LEV_TOOL_INLINE, .op = LEV_OP_WHICH_COMMAND,
	  .flags = DA | CL, INTERNAL_IN, .detail_arg = "command",
	  .description = "Whether a program is installed and where, looked up on the PATH that "
			 "commands get, without running it." },
	{ .name = "locale_info", .kind = LEV_TOOL_INLINE, .op = LEV_OP_LOCALE_INFO,
	  .flags = DA | CL, PUBLIC_IN,
	  .description = "The user's language and region as a BCP-47 tag (such as en-US), with "
			 "the locale it comes from." },
	{ .name = "system_info", .kind = LEV_TOOL_INLINE, .op = LEV_OP_SYSTEM_INFO,
	  .flags = DA | CL, INTERNAL_IN,
	  .description = "The operating system and its version, the architecture, the CPU count, "
			 "and the free disk space in the working directory." },
	{ .name = "environment_info", .kind = LEV_TOOL_INLINE, .op = LEV_OP_ENVIRONMENT_INFO,
	  .flags = DA | CL, INTERNAL_IN,
	  .description = "The working directory, the home and temporary directories, the "
			 "entries on PATH, and the names of the environment variables commands "
			 "see." },
	{ .name = "runtime_info", .kind = LEV_TOOL_INLINE, .op = LEV_OP_RUNTIME_INFO,
	  .flags = DA | CL, INTERNAL_IN,
	  .description = "This run on itself: agent, stage, iteration and its limit, the model, "
			 "the context's tokens, and whether anyone can answer a question." },
	{ .name = "context_list", .kind = LEV_TOOL_INLINE, .op = LEV_OP_CONTEXT_LIST,
	  .flags = DA | CL, INTERNAL_ONLY,
	  .description = "List the context regions (or one) with their kind, entries, tokens "
			 "and limit." },
	{ .name = "context_delete", .kind = LEV_TOOL_INLINE, .op = LEV_OP_CONTEXT_DELETE,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_ONLY,
	  .description = "Release entries of a context region you are finished with: one by "
			 "'index' (0 is the oldest), the 'oldest' N, or, with neither, every "
			 "entry of a clearable region. Not for pinned regions or the "
			 "conversation." },
	{ .name = "todo_add", .kind = LEV_TOOL_INLINE, .op = LEV_OP_TODO_ADD,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_ONLY,
	  .description = "Add an open item to a checklist region; returns its id." },
	{ .name = "todo_done", .kind = LEV_TOOL_INLINE, .op = LEV_OP_TODO_DONE,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_ONLY,
	  .description = "Tick off the checklist item with this id." },
	{ .name = "todo_note", .kind = LEV_TOOL_INLINE, .op = LEV_OP_TODO_NOTE,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_ONLY,
	  .description = "Record a note against a checklist item without closing it." },
	/*
	 * sub-agents (run/fanout.c): allowed by default as in Leviath, but
	 * through the permission gate, so a configured deny holds.  What a
	 * child hands back is labelled at least Internal, and as high as
	 * anything the child read (the run raises it).
	 */
	{ .name = "fan_out", .kind = LEV_TOOL_AGENT, .op = LEV_OP_FAN_OUT,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_IN,
	  .description = "Hand out work items, one worker agent each; returns one report of "
			 "every worker's answer. Each item's context is all its worker gets. "
			 "Make it the only call of its turn." },
	{ .name = "spawn_agent", .kind = LEV_TOOL_AGENT, .op = LEV_OP_SPAWN_AGENT,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_IN, .detail_arg = "blueprint",
	  .description = "Start a sub-agent (an installed agent, or a stage of this blueprint "
			 "that allows workers) on a task. With wait = true it returns the "
			 "child's answer; else its id, for check_agent / wait_for_agent." },
	{ .name = "check_agent", .kind = LEV_TOOL_AGENT, .op = LEV_OP_CHECK_AGENT,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_IN, .detail_arg = "agent_id",
	  .description = "The status of a sub-agent, and its answer once it is done." },
	{ .name = "wait_for_agent", .kind = LEV_TOOL_AGENT, .op = LEV_OP_WAIT_FOR_AGENT,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_IN, .detail_arg = "agent_id",
	  .description = "Wait until a sub-agent finishes, then return its answer." },
	{ .name = "kill_agent", .kind = LEV_TOOL_AGENT, .op = LEV_OP_KILL_AGENT,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_ONLY, .detail_arg = "agent_id",
	  .description = "Stop a sub-agent that has not finished (and its own children)." },
	{ .name = "send_to_agent", .kind = LEV_TOOL_AGENT, .op = LEV_OP_SEND_TO_AGENT,
	  .touches = LEV_TOUCH_RUN, .flags = DA | CL, INTERNAL_ONLY, .detail_arg = "agent_id",
	  .description = "Add a message to a sub-agent that has not started yet (it reads it "
			 "after its task)." },

	/* foreign: classified for policy and taint, not implemented */
	{ .name = "fetch", .flags = FOREIGN | CL | CQ, PUBLIC_OUT, .target_from = LEV_TARGET_FROM_URL },
	{ .name = "http_get", .flags = FOREIGN | CL | CQ, PUBLIC_OUT,
	  .target_from = LEV_TARGET_FROM_URL },
	{ .name = "todo_read", .flags = FOREIGN | CL, INTERNAL_ONLY },
	{ .name = "todo_write", .flags = FOREIGN | CL, INTERNAL_ONLY },
};

#undef R
#undef W
#undef N
#undef DA
#undef CL
#undef FOREIGN
#undef CQ
#undef PUBLIC_OUT
#undef PUBLIC_IN
#undef INTERNAL_IN
#undef INTERNAL_ONLY

/*
 * Every spelling (names and aliases) in an open-addressing hash, built once
 * on first use: a lookup runs on every gate of every call, and is one hash
 * and, for a known name, one strcmp.
 */
#define SLOTS 256	/* a power of two, well over twice the spellings */

static const struct lev_tool_desc *slots[SLOTS];
static const char *slot_names[SLOTS];
static size_t n_slots_used;
static pthread_once_t slots_once = PTHREAD_ONCE_INIT;

static size_t spelling_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h & (SLOTS - 1);
}

/* Keep the hash at most half full (a spelling that does not fit is not found: the tests say so). */
static void slot_add(const char *name, const struct lev_tool_desc *d)
{
	size_t i = spelling_hash(name);

	if (2 * ++n_slots_used > SLOTS)
		return;
	while (slot_names[i])
		i = (i + 1) & (SLOTS - 1);
	slot_names[i] = name;
	slots[i] = d;
}

static void slots_build(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		slot_add(table[i].name, &table[i]);
		for (const char *const *al = table[i].aliases; al && *al; al++)
			slot_add(*al, &table[i]);
	}
}

const struct lev_tool_desc *lev_tooltable_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	pthread_once(&slots_once, slots_build);
	for (i = spelling_hash(name); slot_names[i]; i = (i + 1) & (SLOTS - 1))
		if (!strcmp(slot_names[i], name))
			return slots[i];
	return NULL;
}

const struct lev_tool_desc *lev_tooltable_op(enum lev_tool_op op)
{
	/* lev's own tools come first, so the op of entry i is found at most at i */
	for (size_t i = 0; op != LEV_OP_NONE && i < ARRAY_SIZE(table); i++)
		if (table[i].op == op)
			return &table[i];
	return NULL;
}

const char *lev_tooltable_name(enum lev_tool_op op)
{
	const struct lev_tool_desc *d = lev_tooltable_op(op);

	return d ? d->name : "";
}

size_t lev_tooltable_count(void)
{
	return ARRAY_SIZE(table);
}

const struct lev_tool_desc *lev_tooltable_at(size_t i)
{
	return i < ARRAY_SIZE(table) ? &table[i] : NULL;
}

unsigned lev_tooltable_flags(const char *name)
{
	const struct lev_tool_desc *d = lev_tooltable_find(name);

	return d ? d->flags : 0;
}

bool lev_tooltable_is(const char *name, enum lev_tool_op op)
{
	const struct lev_tool_desc *d = lev_tooltable_find(name);

	return d && op != LEV_OP_NONE && d->op == op;
}

bool lev_tooltable_touches(const char *name, unsigned touches)
{
	const struct lev_tool_desc *d = lev_tooltable_find(name);

	return d && (d->touches & touches);
}

const char *lev_tool_canonical(const char *name)
{
	const struct lev_tool_desc *d = lev_tooltable_find(name);

	return d ? d->name : name;
}

bool lev_tool_same(const char *a, const char *b)
{
	return strcmp(lev_tool_canonical(a), lev_tool_canonical(b)) == 0;
}
