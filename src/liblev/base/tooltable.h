/*
 * tooltable.h - the tool table: every tool name lev knows, once, with
 * everything a layer may ask about it.
 *
 * Each entry says what a tool is: its name and other spellings ("bash" is
 * "shell"), which handler family runs it and which handler (op), what it
 * touches, its policy facts (runs without asking when nobody configured it,
 * a blueprint may pre-approve it, its results are file contents), and its
 * taint class (the label of its results, its direction, where the gate
 * finds its target).  No code outside this table compares tool names: a
 * layer that needs to know what a tool is looks its entry up (by name, when
 * the name comes from a config file or a model) or asks for the entry of an
 * op.  tests/lint/check-tool-names.py keeps it that way.
 *
 * Some entries are foreign (LEV_TOOLF_FOREIGN): names from the original
 * tool set and common agent tools that lev classifies for policy and taint
 * (so a script or MCP tool by that name is treated as reviewed) but does
 * not implement.  The registry (tools.h) offers the others, adding each
 * one's JSON schema and handler.
 *
 * The table lives in the lowest layer because every layer asks it: conf/
 * (a blueprint's output stage offers submit_output), policy/ (defaults, the
 * write clamp, taint classes), tools/ (dispatch by op) and run/.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "liblev/base/types.h"

enum lev_tool_kind {
	LEV_TOOL_FS,		/* tools-fs.h */
	LEV_TOOL_SHELL,		/* the sandboxed shell */
	LEV_TOOL_NET,		/* tools-net.h */
	LEV_TOOL_INLINE,	/* run by the runtime itself (output, notes, time) */
	LEV_TOOL_ASK,		/* a question for the user, through the front end */
	LEV_TOOL_MCP,		/* a tool of an MCP server (tools/mcp.h); run-time entries only */
	LEV_TOOL_SCRIPT,	/* a blueprint's Lua script tool (tools/script.h); run-time only */
	LEV_TOOL_AGENT,		/* sub-agents: fan_out, spawn_agent & co. (run/fanout.c) */
};

/* Which handler runs the tool; LEV_OP_NONE: lev has none (a foreign entry). */
enum lev_tool_op {
	LEV_OP_NONE,
	LEV_OP_SUBMIT_OUTPUT,
	LEV_OP_TRANSITION,
	LEV_OP_CONTEXT_WRITE,
	LEV_OP_CONTEXT_APPEND,
	LEV_OP_CONTEXT_READ,
	LEV_OP_CURRENT_TIME,
	LEV_OP_WHICH_COMMAND,
	LEV_OP_LOCALE_INFO,
	LEV_OP_SYSTEM_INFO,
	LEV_OP_ENVIRONMENT_INFO,
	LEV_OP_RUNTIME_INFO,
	LEV_OP_CONTEXT_LIST,
	LEV_OP_ASK_TEXT,
	LEV_OP_ASK_CHOICE,
	LEV_OP_ASK_CONFIRM,
	LEV_OP_PRESENT_FOR_REVIEW,
	LEV_OP_EDIT_DOCUMENT,
	LEV_OP_READ_FILE,
	LEV_OP_READ_FILES,
	LEV_OP_LIST_DIR,
	LEV_OP_WRITE_FILE,
	LEV_OP_EDIT_FILE,
	LEV_OP_SHELL,
	LEV_OP_WEB_FETCH,
	LEV_OP_HTTP_POST,
	LEV_OP_WEB_SEARCH,
	LEV_OP_CONTEXT_DELETE,
	LEV_OP_TODO_ADD,
	LEV_OP_TODO_DONE,
	LEV_OP_TODO_NOTE,
	LEV_OP_FAN_OUT,
	LEV_OP_SPAWN_AGENT,
	LEV_OP_CHECK_AGENT,
	LEV_OP_WAIT_FOR_AGENT,
	LEV_OP_KILL_AGENT,
	LEV_OP_SEND_TO_AGENT,
	_LEV_OP_MAX,
};

/* What a tool touches (lev_tool_desc.touches). */
enum {
	LEV_TOUCH_READS = 1u << 0,	/* reads files */
	LEV_TOUCH_WRITES = 1u << 1,	/* writes files */
	LEV_TOUCH_NETWORK = 1u << 2,	/* reaches the network */
	LEV_TOUCH_SHELL = 1u << 3,	/* runs a shell line */
	LEV_TOUCH_PROCESS = 1u << 4,	/* starts processes */
	LEV_TOUCH_RUN = 1u << 5,	/* changes the run itself (context, stage) */
	LEV_TOUCH_USER = 1u << 6,	/* puts a question to the person */
};

/* Policy facts (lev_tool_desc.flags). */
enum {
	/*
	 * Runs without asking when nobody configured it: it reads, keeps the
	 * agent's own notes, talks to the person at the keyboard, or manages
	 * sub-agents (which still pass through policy, so a configured deny
	 * holds).  Adding the flag is a security decision; the unit test
	 * only_reviewed_tools_run_without_asking pins the set.
	 */
	LEV_TOOLF_DEFAULT_ALLOW = 1u << 0,
	/* A blueprint may pre-approve it even where the user said nothing. */
	LEV_TOOLF_BLUEPRINT_ALLOW = 1u << 1,
	/* Its results are file contents or listings (a [read_paths] grant makes them Private). */
	LEV_TOOLF_FILE_RESULT = 1u << 2,
	/* The taint gate has a built-in class for it (label, direction, target_from). */
	LEV_TOOLF_CLASSIFIED = 1u << 3,
	/* lev does not implement it: known for policy and taint only. */
	LEV_TOOLF_FOREIGN = 1u << 4,
	/*
	 * It changes state or leaves the machine: while the context holds
	 * untrusted content a call needs an integrity rule or the user
	 * (policy/integrity.h).  The unit test consequential_tools pins the set.
	 */
	LEV_TOOLF_CONSEQUENTIAL = 1u << 5,
};

enum lev_direction {
	LEV_DIR_INBOUND,
	LEV_DIR_INTERNAL,
	LEV_DIR_OUTBOUND,
	_LEV_DIR_MAX,
};

/* Where the taint gate reads the target of a call to a tool. */
enum lev_target_from {
	LEV_TARGET_FROM_NONE,		/* no target (shell, web_search: see docs/taint.md) */
	LEV_TARGET_FROM_URL,		/* the host of the `url` argument */
	LEV_TARGET_FROM_ARG,		/* the declared argument `target_arg` */
	LEV_TARGET_FROM_RECIPIENTS,	/* every present to/cc/bcc/recipient(s)/channel/url */
};

struct lev_tool_desc {
	const char *name;		/* canonical */
	const char *const *aliases;	/* other spellings, NULL-terminated; may be NULL */
	const char *description;	/* what the model is told; NULL for foreign entries */
	enum lev_tool_kind kind;	/* which handler family runs it (not for foreign entries) */
	enum lev_tool_op op;
	unsigned touches;		/* LEV_TOUCH_* */
	unsigned flags;			/* LEV_TOOLF_* */
	const char *detail_arg;		/* the argument a prompt shows ("command", "path", "url") */
	const char *detail_arg2;	/* ... when the first is absent ("query"), or NULL */
	/* the taint class, with LEV_TOOLF_CLASSIFIED (clearance is Public for every entry) */
	enum lev_level label;
	enum lev_direction direction;
	enum lev_target_from target_from;
	/*
	 * other names of its arguments, NULL-terminated pairs { alias, canonical, ... }:
	 * lev's earlier names beside Leviath's; the gate chain renames them once
	 * (gatechain.c canon_args()), so every gate and the approval see one name
	 */
	const char *const *arg_aliases;
};

/* The entry for NAME under any spelling, or NULL for a name lev does not know. */
const struct lev_tool_desc *lev_tooltable_find(const char *name);
/* The entry whose handler is OP (never NULL for a valid op other than LEV_OP_NONE). */
const struct lev_tool_desc *lev_tooltable_op(enum lev_tool_op op);
/* The canonical name of the tool that OP runs (shorthand for lev_tooltable_op(op)->name). */
const char *lev_tooltable_name(enum lev_tool_op op);
size_t lev_tooltable_count(void);
const struct lev_tool_desc *lev_tooltable_at(size_t i);

/* The flags of NAME's entry (any spelling); 0 for a name lev does not know. */
unsigned lev_tooltable_flags(const char *name);
/* Does NAME (any spelling) name the tool whose handler is OP? */
bool lev_tooltable_is(const char *name, enum lev_tool_op op);
/* Does NAME (any spelling) name a tool that touches any of TOUCHES? */
bool lev_tooltable_touches(const char *name, unsigned touches);

/* The canonical spelling of a tool name: "bash" is "shell"; unknown names are themselves. */
const char *lev_tool_canonical(const char *name);
/* True when A and B name the same tool. */
bool lev_tool_same(const char *a, const char *b);
