#!/usr/bin/env python3
"""No code compares tool names outside the tool table.

usage: check-tool-names.py SRC_DIR     TAP: one line per rule, each hit as a comment
       check-tool-names.py --self-test TAP: the checker catches what it must

Every tool name lev knows is an entry of src/liblev/base/tooltable.c (its
`.name` and its aliases).  Code elsewhere asks the entry (lev_tooltable_find()
for a name from a config file or a model, lev_tooltable_op() /
lev_tooltable_name() for the tool that does something) and switches on its
op.  This lint reads the names from the table and fails when a .c or .h file
under src/ other than the table
  1. passes a tool-name literal to a comparison or a lookup (strcmp & co.,
     lev_streq, lev_strv_contains, lev_tool_same, lev_tooltable_find, ...);
  2. spells a hand list of tool names: an array initializer holding two or
     more of them (the old per-module tables);
  3. spells a tool's name as a string literal anywhere else (passing
     "read_file" to a gate is naming the tool without its entry: use
     lev_tooltable_name(LEV_OP_READ_FILE)).
Comments do not count; nor do names inside longer strings (messages).
The user's documentation of the table is checked against it too:
  4. docs/permissions.md's built-in defaults allow exactly the entries with
     LEV_TOOLF_DEFAULT_ALLOW, and docs/taint.md's built-in classifications
     list exactly the entries with LEV_TOOLF_CLASSIFIED.

ALLOWED below lists the few places that must spell a tool's name for
something that is not the tool: each entry says why.
"""
import os
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tap  # noqa: E402

TABLE = os.path.join("src", "liblev", "base", "tooltable.c")

# Functions whose string argument is compared with something, or looked up as a tool.
COMPARE = (
    "strcmp", "strncmp", "strcasecmp", "strncasecmp", "memcmp", "strstr",
    "lev_streq", "streq", "lev_strv_contains", "lev_tool_same", "lev_tool_canonical",
    "lev_tooltable_find", "lev_tooltable_flags", "lev_tooltable_is", "lev_tooltable_touches",
    "lev_tools_find",
)

# (file, name, why): a literal the file may spell although it is a tool's name.
ALLOWED = [
    # mode = "fan_out" is a stage mode of the blueprint format, spelled like the tool.
    ("src/liblev/conf/blueprint.c", "fan_out", "a stage mode word"),
    # The Agent Client Protocol's kinds of a tool call (what an editor shows a call as).
    ("src/lev/cmd_agent_client.c", "fetch", "an Agent Client Protocol tool call kind"),
    # [tool_script_permissions] keys name what a script tool may do on the host
    # (its own http_get, shell, read_file ...), not lev's tools.
    ("src/liblev/conf/config.c", "http_get", "a [tool_script_permissions] key"),
    ("src/liblev/conf/config.c", "http_post", "a [tool_script_permissions] key"),
    ("src/liblev/conf/config.c", "shell", "a [tool_script_permissions] key"),
    ("src/liblev/conf/config.c", "read_file", "a [tool_script_permissions] key"),
    ("src/liblev/conf/config.c", "write_file", "a [tool_script_permissions] key"),
    ("src/liblev/policy/lint.c", "http_get", "lev lint names [tool_script_permissions] keys"),
    ("src/liblev/policy/lint.c", "http_post", "lev lint names [tool_script_permissions] keys"),
    ("src/liblev/policy/lint.c", "shell", "lev lint names [tool_script_permissions] keys"),
    ("src/liblev/policy/lint.c", "read_file", "lev lint names [tool_script_permissions] keys"),
    ("src/liblev/policy/lint.c", "write_file", "lev lint names [tool_script_permissions] keys"),
    # A Lua script tool's host functions (tools/script.c) and its -- @requires
    # capabilities (conf/scripttool.c, shown by lev validate): names a script
    # sees, each mapped to a tool's op (LEV_OP_*) where it runs one.
    ("src/liblev/tools/script.c", "http_get", "a script tool's host function"),
    ("src/liblev/tools/script.c", "http_post", "a script tool's host function"),
    ("src/liblev/tools/script.c", "shell", "a script tool's host function and @requires"),
    ("src/liblev/tools/script.c", "read_file", "a script tool's host function"),
    ("src/liblev/tools/script.c", "write_file", "a script tool's host function"),
    ("src/liblev/conf/scripttool.c", "shell", "the @requires shell capability"),
    ("src/lev/cmd_validate.c", "shell", "the @requires shell capability"),
    # Landlock's access rights are called read_file / write_file (LANDLOCK_ACCESS_FS_*).
    ("src/liblev/sandbox/landlock-rules.c", "read_file", "a Landlock access right"),
    ("src/liblev/sandbox/landlock-rules.c", "write_file", "a Landlock access right"),
    # Config keys that are spelled like a tool: [tools.web_search] holds the
    # search endpoint, [safe_commands] shell the safe shell lines.
    ("src/liblev/conf/config.c", "web_search", "the [tools.web_search] table"),
    ("src/liblev/conf/blueprint.c", "shell", "the [safe_commands] shell key"),
    # The shells a command line may start (bash -c ...), not the shell tool.
    ("src/liblev/policy/shellkeys-cmd.c", "bash", "a shell program"),
    # Pending: gatechain.c belongs to the gate-chain work; its output stage's
    # offer should read lev_tooltable_name(LEV_OP_SUBMIT_OUTPUT), as
    # conf/blueprint.c does, and the seed gate ask lev_perm_decide() about
    # lev_tooltable_name(LEV_OP_SHELL).  Remove these entries with that change.
]


def table_names(src):
    text = strip_comments(open(os.path.join(src, TABLE), encoding="utf-8").read())
    names = set(re.findall(r'\.name\s*=\s*"([^"]+)"', text))
    for body in re.findall(r'_aliases\[\]\s*=\s*\{([^}]*)\}', text):
        names.update(re.findall(r'"([^"]+)"', body))
    return names


FLAG_SPELLINGS = {"DEFAULT_ALLOW": ("LEV_TOOLF_DEFAULT_ALLOW", "DA"),
                  "CLASSIFIED": ("LEV_TOOLF_CLASSIFIED", "CL")}


def table_flags(src, flag):
    """The canonical names of the entries whose .flags hold FLAG."""
    text = strip_comments(open(os.path.join(src, TABLE), encoding="utf-8").read())
    out = set()
    for entry in re.findall(r'\{\s*\.name\s*=\s*"[^"]+".*?\},?\n', text, re.S):
        name = re.search(r'\.name\s*=\s*"([^"]+)"', entry).group(1)
        m = re.search(r"\.flags\s*=\s*([^,]*)", entry)
        words = set(re.findall(r"\w+", m.group(1))) if m else set()
        if words & set(FLAG_SPELLINGS[flag]):
            out.add(name)
    return out


def doc_rows(src, doc, marker, keep):
    """The backticked names in the first column of the first table after the line holding
    MARKER in docs/DOC, of the rows whose columns KEEP accepts."""
    names, seen, in_table = set(), False, False
    for line in open(os.path.join(src, "docs", doc), encoding="utf-8"):
        seen = seen or marker in line
        if not seen:
            continue
        if not line.startswith("|"):
            if in_table:
                break
            continue
        in_table = True
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) >= 2 and keep(cols):
            names.update(re.findall(r"`([a-z_]+)`", cols[0]))
    return names


def docs_disagree(src):
    """How docs/permissions.md and docs/taint.md differ from the table."""
    if not os.path.isdir(os.path.join(src, "docs")):
        return []
    names = table_names(src)
    out = []
    checks = [
        ("permissions.md", "## Built-in defaults", "built-in default allow", "DEFAULT_ALLOW",
         lambda cols: cols[-1].startswith("allow")),
        ("taint.md", "Built-in classifications", "built-in classification", "CLASSIFIED",
         lambda cols: cols[1] in ("public", "internal", "private") and "any other" not in cols[0]),
    ]
    text = strip_comments(open(os.path.join(src, TABLE), encoding="utf-8").read())
    aliases = names - set(re.findall(r'\.name\s*=\s*"([^"]+)"', text))
    for doc, marker, what, flag, keep in checks:
        want = table_flags(src, flag)
        got = doc_rows(src, doc, marker, keep) - aliases  # "`shell` (`bash`)" is one entry
        out += ["docs/%s: '%s' has a %s, the table says not" % (doc, n, what)
                for n in sorted(got - want)]
        out += ["docs/%s: '%s' is missing from the %s list" % (doc, n, what)
                for n in sorted(want - got)]
    return out


def skip_literal(text, i):
    """The index just past the string or char literal that starts at I."""
    q, j = text[i], i + 1
    while j < len(text) and text[j] != q:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def strip_comments(text):
    """TEXT with every comment blanked (newlines kept), strings and chars untouched."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = skip_literal(text, i)
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def string_literals(text, start=0, end=None):
    """(position, content) of every string literal in TEXT[START:END] (comments stripped)."""
    i, end = start, len(text) if end is None else end
    while i < end:
        c = text[i]
        if c in "\"'":
            j = skip_literal(text, i)
            if c == '"':
                yield i, text[i + 1:j - 1]
            i = j
        else:
            i += 1


def call_args(text, open_paren):
    """The top-level arguments of the call whose '(' is at OPEN_PAREN."""
    depth, i, start, args = 0, open_paren, open_paren + 1, []
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = skip_literal(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args
        elif c == "," and depth == 1:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return args


def matching_brace(text, open_brace):
    depth, i = 0, open_brace
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = skip_literal(text, i)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)


CALL = re.compile(r"\b(%s)\s*\(" % "|".join(COMPARE))
LIST = re.compile(r"\[[^\]\n]*\]\s*(=|\))\s*\{")
LITERAL = re.compile(r'^\s*"([^"\\]*)"\s*$')


def scan_file(path, rel, names, allowed):
    text = strip_comments(open(path, encoding="utf-8", errors="replace").read())
    ok = {n for f, n, _ in allowed if f == rel}
    compares, lists, spelled = [], [], []
    reported = set()

    def line_of(pos):
        return text.count("\n", 0, pos) + 1

    for m in CALL.finditer(text):
        for a in call_args(text, m.end() - 1):
            lit = LITERAL.match(a)
            if lit and lit.group(1) in names and lit.group(1) not in ok:
                compares.append("%s:%d: %s(..., \"%s\")"
                                % (rel, line_of(m.start()), m.group(1), lit.group(1)))
                reported.add(text.find('"%s"' % lit.group(1), m.end() - 1))
    for m in LIST.finditer(text):
        end = matching_brace(text, m.end() - 1)
        hit = sorted({s for _, s in string_literals(text, m.end(), end) if s in names} - ok)
        if len(hit) >= 2:
            lists.append("%s:%d: a list of tool names: %s" % (rel, line_of(m.start()), ", ".join(hit)))
            reported.update(pos for pos, _ in string_literals(text, m.end(), end))
    for pos, lit in string_literals(text):
        if lit in names and lit not in ok and pos not in reported:
            spelled.append("%s:%d: \"%s\"" % (rel, line_of(pos), lit))
    return compares, lists, spelled


def check(src, allowed=ALLOWED):
    names = table_names(src)
    compares, lists, spelled = [], [], []
    for root, dirs, files in os.walk(os.path.join(src, "src")):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            p = os.path.join(root, f)
            rel = os.path.relpath(p, src)
            if rel == TABLE:
                continue
            c, l, n = scan_file(p, rel, names, allowed)
            compares += c
            lists += l
            spelled += n
    return names, compares, lists, spelled, docs_disagree(src)


def report(names, compares, lists, spelled, docs):
    return tap.report([
        ("no code outside the tool table compares a tool name (%d names)" % len(names), compares),
        ("no code outside the tool table keeps a list of tool names", lists),
        ("no code outside the tool table spells a tool name", spelled),
        ("docs/permissions.md and docs/taint.md document the table", docs),
    ], "ask the entry instead: lev_tooltable_find(), lev_tooltable_op(), lev_tooltable_name(), "
       "its op/touches/flags (src/liblev/base/tooltable.h)")


TABLE_FIXTURE = """
static const char *const shell_aliases[] = { "bash", NULL };
static const struct lev_tool_desc table[] = {
	{ .name = "read_file", .op = LEV_OP_READ_FILE, .flags = DA | CL },
	{ .name = "shell", .aliases = shell_aliases, .op = LEV_OP_SHELL, .flags = CL },
	{ .name = "web_fetch", .op = LEV_OP_WEB_FETCH,
	  .flags = LEV_TOOLF_CLASSIFIED | LEV_TOOLF_BLUEPRINT_ALLOW },
};
"""


class Docs(dict):
    """A docs fixture the cases edit with replace()."""

    def replace(self, old, new):
        return Docs({k: v.replace(old, new) for k, v in self.items()})


DOCS_FIXTURE = Docs({
    "permissions.md": "## Built-in defaults\n\n| tools | default |\n|---|---|\n| `read_file` | allow |\n"
                      "| `shell` (`bash`) | ask |\n| everything else | **ask** |\n",
    "taint.md": "Built-in classifications:\n\n| tool | sensitivity | direction |\n|---|---|---|\n"
                "| `read_file` | internal | inbound |\n| `shell` (`bash`) | public | outbound |\n"
                "| `web_fetch` | public | outbound |\n"
                "| **any other tool** (MCP) | public | outbound |\n",
})


def self_test():
    cases = [
        # (what, code, [compares, lists, other spellings], file)
        ("strcmp against a tool name is caught",
         'bool f(const char *t) { return !strcmp(t, "shell"); }', [1, 0, 0]),
        ("an alias is a tool name too",
         'bool f(const char *t) { return lev_streq(t, "bash"); }', [1, 0, 0]),
        ("a call spread over lines is caught",
         'bool f(char **v) {\n\treturn lev_strv_contains(v,\n\t\t"web_fetch");\n}', [1, 0, 0]),
        ("asking the table by a literal name is caught",
         'bool f(void) { return lev_tooltable_find("read_file") != NULL; }', [1, 0, 0]),
        ("a hand list of tool names is caught",
         'static const char *const l[] = { "read_file", "web_fetch", NULL };', [0, 1, 0]),
        ("a compound-literal list is caught",
         'void f(void) { g((const char *[]){ "shell", "read_file", NULL }); }', [0, 1, 0]),
        ("a name handed to a gate is caught",
         'void f(void) { lev_gate_classify(g, "read_file", &cls); }', [0, 0, 1]),
        ("a list holding one tool name is no list, but spells it",
         'static const char *const sh[] = { "sh", "bash", "zsh", NULL };', [0, 0, 1]),
        ("asking the entry passes",
         'bool f(const char *t) { return lev_tooltable_is(t, LEV_OP_SHELL); }\n'
         'void g(void) { lev_gate_classify(g, lev_tooltable_name(LEV_OP_READ_FILE), &c); }',
         [0, 0, 0]),
        ("a name inside a message passes",
         'void f(void) { msg("web_fetch: no url"); msg("use read_file"); }', [0, 0, 0]),
        ("a name in a comment passes",
         '/* strcmp(t, "shell") */\n// lev_streq(t, "bash")\nint x;', [0, 0, 0]),
        ("a word that is no tool name passes",
         'bool f(const char *t) { return !strcmp(t, "shellfish"); }', [0, 0, 0]),
        ("an allowed name in its own file passes",
         'bool f(const char *k) { return !strcmp(k, "shell"); }', [0, 0, 0], "src/x/allowed.c"),
        ("the allowance covers its file only",
         'bool f(const char *k) { return !strcmp(k, "shell"); }', [1, 0, 0], "src/x/other.c"),
        ("docs that match the table pass", DOCS_FIXTURE, [0, 0, 0, 0], "docs"),
        ("a default allow the table does not give is caught",
         DOCS_FIXTURE.replace("| `shell` (`bash`) | ask |", "| `shell` (`bash`) | allow |"),
         [0, 0, 0, 1], "docs"),
        ("a classification missing from the docs is caught",
         DOCS_FIXTURE.replace("| `web_fetch` | public | outbound |\n", ""), [0, 0, 0, 1], "docs"),
    ]
    allowed = [("src/x/allowed.c", "shell", "self-test")]
    print("1..%d" % len(cases))
    failed = 0
    for i, case in enumerate(cases, 1):
        desc, code, want = case[:3]
        where = case[3] if len(case) > 3 else "src/x/a.c"
        d = tempfile.mkdtemp(prefix="lev-toolnames.")
        try:
            os.makedirs(os.path.join(d, os.path.dirname(TABLE)))
            os.makedirs(os.path.join(d, where if where == "docs" else os.path.dirname(where)),
                        exist_ok=True)
            open(os.path.join(d, TABLE), "w").write(TABLE_FIXTURE)
            if where == "docs":
                for doc, body in code.items():
                    open(os.path.join(d, "docs", doc), "w").write(body)
            else:
                open(os.path.join(d, where), "w").write(code + "\n")
            got = check(d, allowed)[1:1 + len(want)]
        finally:
            shutil.rmtree(d)
        counts = [len(h) for h in got]
        if counts == want:
            print("ok %d - %s" % (i, desc))
        else:
            failed += 1
            print("not ok %d - %s (got %s, want %s)" % (i, desc, counts, want))
            for hits in got:
                for h in hits:
                    print("#   " + h)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(tap.main(sys.argv, __doc__, lambda src: report(*check(src)), self_test))
