#!/usr/bin/env python3
"""One vocabulary: gate names, verdicts and the gate chain's reasons come from one table each.

usage: check-vocabulary.py SRC_DIR      TAP, one line per rule
       check-vocabulary.py --self-test  TAP: the checker catches what it must

The tables: gate names and the chain's own rules (reasons) in
src/liblev/run/gatechain.c (lev_gate_id_name(), lev_gate_reason_name()),
verdicts in src/liblev/base/types.c (lev_verdict_names[], lev_verdict_name()).
The audit record, the --json events and `lev check --json` print them
through those functions; this lint fails when
  1. a .c file under src/ other than the tables writes a gate, a reason or a
     verdict as a literal into a record (`.gate = "..."`, `.rule = "<a reason>"`,
     `? "allow" : "deny"`, `json_string("deny")`, `"gate", json_string("...")`);
  2. docs/run.md does not name every gate and every reason of the tables;
  3. docs/commands.md's `lev check --json` gate list names a gate the table
     does not have.
"""
import os
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tap  # noqa: E402

GATECHAIN = os.path.join("src", "liblev", "run", "gatechain.c")
TYPES = os.path.join("src", "liblev", "base", "types.c")
VERDICTS = ("allow", "ask", "deny")

# (path prefix, the literal text, why): a record literal that may stay for
# now, with the change that removes it.  Empty: every record is spelled by the tables.
PENDING = []


def table(text, name):
    m = re.search(r"%s\[[^\]]*\]\s*=\s*\{(.*?)\n\};" % re.escape(name), text, re.S)
    if not m:
        raise SystemExit("no table '%s'" % name)
    return re.findall(r'=\s*"((?:[^"\\]|\\.)*)"', m.group(1))


def vocabulary(src):
    text = open(os.path.join(src, GATECHAIN), encoding="utf-8").read()
    return table(text, "gate_names"), table(text, "reason_names")


def strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)


def record_literals(src, reasons, pending=PENDING):
    verdict = "|".join(VERDICTS)
    reason = "|".join(re.escape(r) for r in reasons)
    rules = [
        (re.compile(r'\.gate\s*=\s*"[^"]*"'), "a gate spelled out: use lev_gate_id_name()"),
        (re.compile(r'\.rule\s*=\s*"(%s)"' % reason), "a reason spelled out: use lev_gate_reason_name()"),
        (re.compile(r'\?\s*"(%s)"\s*:\s*"(%s)"' % (verdict, verdict)),
         "a verdict spelled out: use lev_verdict_name()"),
        (re.compile(r'json_string\(\s*"(%s)"\s*\)' % verdict), "a verdict spelled out: use lev_verdict_name()"),
        (re.compile(r'"gate"\s*,\s*json_string\(\s*"'), "a gate spelled out: use lev_gate_id_name()"),
    ]
    hits = []
    for root, dirs, files in os.walk(os.path.join(src, "src")):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            rel = os.path.relpath(p, src)
            if not f.endswith(".c") or rel in (GATECHAIN, TYPES):
                continue
            text = strip_comments(open(p, encoding="utf-8", errors="replace").read())
            for pat, why in rules:
                for m in pat.finditer(text):
                    if any(rel.startswith(pre) and lit in m.group(0) for pre, lit, _ in pending):
                        continue
                    hits.append("%s:%d: %s (%s)" % (rel, text.count("\n", 0, m.start()) + 1,
                                                    m.group(0), why))
    return hits


def docs_missing(src, gates, reasons):
    run = open(os.path.join(src, "docs", "run.md"), encoding="utf-8").read()
    run = re.sub(r"\s+", " ", run)
    miss = ["docs/run.md: gate `%s` is not named" % g for g in gates
            if g != "none" and "`%s`" % g not in run]
    miss += ["docs/run.md: reason `%s` is not named" % r for r in reasons if "`%s`" % r not in run]
    return miss


def docs_unknown(src, gates):
    cmds = open(os.path.join(src, "docs", "commands.md"), encoding="utf-8").read()
    bad = []
    for m in re.finditer(r'"gate":\s*((?:"[a-z_]+"\|?)+)', cmds):
        bad += ["docs/commands.md: gate \"%s\" is not in the table" % g
                for g in re.findall(r'"([a-z_]+)"', m.group(1)) if g not in gates]
    return bad


def check(src, pending=PENDING):
    gates, reasons = vocabulary(src)
    return [
        ("no record spells a gate, a reason or a verdict (%d gates, %d reasons)"
         % (len(gates), len(reasons)), record_literals(src, reasons, pending)),
        ("docs/run.md names every gate and reason", docs_missing(src, gates, reasons)),
        ("docs/commands.md names only gates of the table", docs_unknown(src, gates)),
    ]


GATECHAIN_FIXTURE = """
static const char *const gate_names[_LEV_GATE_ID_MAX] = {
	[LEV_GATE_NONE] = "none",
	[LEV_GATE_PERMISSION] = "permission",
	[LEV_GATE_TAINT] = "taint",
};
static const char *const reason_names[_LEV_REASON_MAX] = {
	[LEV_REASON_SAFE_LIST] = "safe list",
	[LEV_REASON_TAINT_ERROR] = "error",
};
"""
RUN_MD = "The gates: `permission`, `taint`; the reasons: `safe list`,\n`error`.\n"
COMMANDS_MD = '     "gate": "permission"|"taint",\n'


def self_test():
    cases = [
        ("a clean tree passes", {}, [0, 0, 0]),
        ("a gate spelled in a record is caught",
         {"src/x/a.c": 'audit(&(struct l){ .gate = "taint" });'}, [1, 0, 0]),
        ("a reason spelled in a record is caught",
         {"src/x/a.c": 'audit(&(struct l){ .rule = "safe list" });'}, [1, 0, 0]),
        ("a verdict spelled in an event is caught",
         {"src/x/a.c": 'json_object_set_new(ev, "decision", json_string(ok ? "allow" : "deny"));'},
         [1, 0, 0]),
        ("a gate spelled into JSON is caught",
         {"src/x/a.c": 'json_object_set_new(o, "gate", json_string("permission"));'}, [1, 0, 0]),
        ("the functions pass",
         {"src/x/a.c": 'json_object_set_new(o, "gate", json_string(lev_gate_id_name(g)));\n'
                       'l.rule = lev_gate_reason_name(LEV_REASON_TAINT_ERROR);'}, [0, 0, 0]),
        ("a rule from the config passes", {"src/x/a.c": 'l.rule = "allowlist #2";'}, [0, 0, 0]),
        ("a pending entry passes where it is pending",
         {"src/run/a.c": 'l.decision = ok ? "allow" : "deny";'}, [0, 0, 0]),
        ("... and nowhere else", {"src/x/a.c": 'l.decision = ok ? "allow" : "deny";'}, [1, 0, 0]),
        ("a reason missing from docs/run.md is caught",
         {"docs/run.md": "The gates: `permission`, `taint`; the reasons: `safe list`.\n"}, [0, 1, 0]),
        ("a gate missing from docs/run.md is caught",
         {"docs/run.md": "The gates: `permission`; the reasons: `safe list`, `error`.\n"}, [0, 1, 0]),
        ("an unknown gate in docs/commands.md is caught",
         {"docs/commands.md": '     "gate": "permission"|"paths",\n'}, [0, 0, 1]),
    ]
    pending = [("src/run/", '? "allow" : "deny"', "self-test")]
    print("1..%d" % len(cases))
    failed = 0
    for i, (desc, files, want) in enumerate(cases, 1):
        d = tempfile.mkdtemp(prefix="lev-vocab.")
        try:
            tree = {GATECHAIN: GATECHAIN_FIXTURE, "docs/run.md": RUN_MD,
                    "docs/commands.md": COMMANDS_MD}
            tree.update(files)
            for f, body in tree.items():
                os.makedirs(os.path.join(d, os.path.dirname(f)), exist_ok=True)
                open(os.path.join(d, f), "w").write(body)
            got = check(d, pending)
        finally:
            shutil.rmtree(d)
        counts = [len(h) for _, h in got]
        if counts == want:
            print("ok %d - %s" % (i, desc))
        else:
            failed += 1
            print("not ok %d - %s (got %s, want %s)" % (i, desc, counts, want))
            for _, hits in got:
                for h in hits:
                    print("#   " + h)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(tap.main(sys.argv, __doc__, lambda src: tap.report(check(src)), self_test))
