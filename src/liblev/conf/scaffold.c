/*
 * scaffold.c - new blueprints from templates (scaffold.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/conf/datadir.h"
#include "liblev/conf/scaffold.h"

#define MODELS(big)                                                                          \
	"model = { models = [\n"                                                             \
	"  { provider = \"anthropic\", model = \"claude-sonnet-4-5\" },\n"                  \
	"  { provider = \"openai\", model = \"" big "\" },\n"                               \
	"  { provider = \"openrouter\", model = \"anthropic/claude-sonnet-4.5\" },\n"       \
	"  { provider = \"google\", model = \"gemini-2.5-pro\" },\n"                        \
	"] }\n"

#define HEAD                                                                                 \
	"# @NAME@: a lev agent (docs/blueprint.md).\n"                                       \
	"#   lev validate @NAME@                 what it asks for, what you grant\n"        \
	"#   lev run @NAME@ --task \"...\"         run it, every call through every gate\n"  \
	"\n"                                                                                 \
	"[agent]\n"                                                                          \
	"name = \"@NAME@\"\n"                                                                \
	"version = \"0.1.0\"\n"                                                              \
	"description = \"@DESC@\"\n"                                                         \
	"\n"                                                                                 \
	"# Commands run in lev's namespace sandbox: read-only host, writable\n"             \
	"# workdir, secrets masked, no network.\n"                                           \
	"[sandbox]\n"                                                                        \
	"kind = \"namespace\"\n"                                                             \
	"network = false\n"                                                                  \
	"\n"                                                                                 \
	"# Every command asks you first: a blueprint may tighten your settings,\n"         \
	"# never loosen them.\n"                                                           \
	"[tool_permissions]\n"                                                              \
	"shell = \"ask\"\n"                                                                 \
	"\n"

static const char tpl_default[] =
	HEAD
	"[stages.main]\n"
	"description = \"do the task in the working directory\"\n"
	MODELS("gpt-4o")
	"available_tools = [\"list_dir\", \"read_file\", \"write_file\", \"edit_file\", \"shell\"]\n"
	"max_iterations = 30\n"
	"system_prompt = \"\"\"\n"
	"You work in the current directory. Read what you need, make the change the\n"
	"task asks for, check it by running the project's tests, and say what you did.\n"
	"\"\"\"\n";

static const char tpl_coder[] =
	HEAD
	"[stages.plan]\n"
	"description = \"read the code and write a plan\"\n"
	MODELS("gpt-4o")
	"available_tools = [\"list_dir\", \"read_file\", \"shell\"]\n"
	"max_iterations = 20\n"
	"next = \"implement\"\n"
	"system_prompt = \"\"\"\n"
	"Read the code the task is about and write a short, numbered plan: which\n"
	"files change and how, and how the change will be tested. Change nothing.\n"
	"\"\"\"\n"
	"\n"
	"[stages.implement]\n"
	"description = \"carry out the plan\"\n"
	MODELS("gpt-4o")
	"available_tools = [\"list_dir\", \"read_file\", \"write_file\", \"edit_file\", \"shell\"]\n"
	"max_iterations = 40\n"
	"next = \"verify\"\n"
	"system_prompt = \"\"\"\n"
	"Carry out the plan you are given, one step at a time, with small edits.\n"
	"\"\"\"\n"
	"\n"
	"[stages.verify]\n"
	"description = \"run the tests and report\"\n"
	MODELS("gpt-4o")
	"available_tools = [\"list_dir\", \"read_file\", \"shell\"]\n"
	"max_iterations = 20\n"
	"system_prompt = \"\"\"\n"
	"Run the project's tests and read the diff. Report what changed, what the\n"
	"tests say, and anything left to do.\n"
	"\"\"\"\n";

static const struct {
	const char *name;
	const char *text;
	const char *desc;
} templates[] = {
	{ "default", tpl_default, "A one-stage agent: reads, edits, runs the tests" },
	{ "coder", tpl_coder, "Plans, implements and verifies a code change" },
};

const char *const *lev_scaffold_templates(void)
{
	static const char *const names[] = { "default", "coder", NULL };

	return names;
}

/* TEXT with @NAME@ and @DESC@ replaced. */
static char *fill(const char *text, const char *name, const char *desc)
{
	struct lev_buf b = LEV_BUF_INIT;

	for (const char *p = text; *p;) {
		if (!strncmp(p, "@NAME@", 6)) {
			(void)lev_buf_adds(&b, name);
			p += 6;
		} else if (!strncmp(p, "@DESC@", 6)) {
			(void)lev_buf_adds(&b, desc);
			p += 6;
		} else {
			(void)lev_buf_addch(&b, *p++);
		}
	}
	return lev_buf_detach(&b, NULL);
}

int lev_scaffold_create(const char *parent, const char *name, const char *template,
			char **dir_out, struct lev_err *err)
{
	_cleanup_free_ char *dir = NULL, *tmp = NULL, *file = NULL, *text = NULL;
	const char *want = template ? template : "default";
	size_t t;
	int r;

	for (t = 0; t < ARRAY_SIZE(templates); t++)
		if (!strcmp(templates[t].name, want))
			break;
	if (t == ARRAY_SIZE(templates))
		return lev_err_set(err, -EINVAL, "no template '%s' (there are: default, coder)", want);
	if (!lev_agent_name_valid(name))
		return lev_err_set(err, -EINVAL,
				   "'%s' is not a valid agent name (letters, digits, '.', '-' "
				   "and '_', starting with a letter or digit)",
				   name);
	dir = lev_path_join(parent, name);
	tmp = xasprintf("%s/.%s.new-XXXXXX", parent, name);
	if (!mkdtemp(tmp))
		return lev_err_errno(err, -errno, "cannot create a directory in '%s'", parent);
	file = lev_path_join(tmp, "agent.leviath");
	text = fill(templates[t].text, name, templates[t].desc);
	r = lev_write_file_atomic(file, text, strlen(text), 0644, err);
	if (r == 0 && chmod(tmp, 0755) < 0)
		r = lev_err_errno(err, -errno, "cannot set the mode of '%s'", tmp);
	/* into place, never over something that is there */
	if (r == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) < 0)
		r = errno == EEXIST ? lev_err_set(err, -EEXIST, "'%s' already exists", dir)
				    : lev_err_errno(err, -errno, "cannot create '%s'", dir);
	if (r < 0) {
		(void)lev_rm_rf(tmp, NULL);
		return r;
	}
	if (dir_out)
		*dir_out = TAKE_PTR(dir);
	return 0;
}
