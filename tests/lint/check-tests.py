#!/usr/bin/env python3
"""The test suite leans on nothing the machine it was written on happens to have.

usage: check-tests.py SRC_DIR      (TAP, one line per rule)

Each rule is a pattern that made a test pass or fail on our machines for a
reason a user's machine does not share:
  - a server whose port is read from its (buffered) output: use
    lev_start_http_server (tests/lib.sh), which hands the port over in a file;
  - PYTHONUNBUFFERED: our machines set it, a user's does not;
  - the project's shared/ folder: a user's clone has none.  The one
    exception is a line marked "# optional reference" in a test that runs the
    same without it and says so in a TAP comment (t7000-compat.sh checks the
    Leviath reference blueprints only where they exist).
"""
import os
import re
import subprocess
import sys

RULES = [
    ("servers hand over their port in a file (lev_start_http_server), not in their output",
     re.compile(r"python3? -m http\.server")),
    ("no test relies on PYTHONUNBUFFERED", re.compile(r"PYTHONUNBUFFERED")),
    ("no test reads the project's shared/ folder", re.compile(r"(SRC_DIR|top)[^\n]*\.\./shared|/work/shared")),
]


def main():
    src = sys.argv[1]
    files = []
    for d in ("tests/integration", "tests/scenarios", "tests/injection", "tests/parity",
              "tests/shelldiff"):
        for root, _, names in os.walk(os.path.join(src, d)):
            files += [os.path.join(root, n) for n in sorted(names)
                      if n.endswith((".sh", ".py", ".toml", ".leviath")) or n in ("setup",)]
    print("1..%d" % (len(RULES) + 1))
    failed = 0
    for i, (what, pat) in enumerate(RULES, 1):
        hits = []
        for p in files:
            for n, line in enumerate(open(p, encoding="utf-8", errors="replace"), 1):
                if pat.search(line) and not line.rstrip().endswith("# optional reference"):
                    hits.append("%s:%d: %s" % (os.path.relpath(p, src), n, line.strip()[:100]))
        if hits:
            failed += 1
            print("not ok %d - %s" % (i, what))
            for h in hits:
                print("#   " + h)
        else:
            print("ok %d - %s (%d files)" % (i, what, len(files)))
    # a test file that does not parse (an apostrophe closing a test body's
    # quotes) dies before its first check and reports nothing it could fail
    shells = [p for p in files if p.endswith(".sh")] + \
        [os.path.join(src, "tests", n) for n in sorted(os.listdir(os.path.join(src, "tests")))
         if n.endswith(".sh")]
    bad = []
    for p in shells:
        r = subprocess.run(["bash", "-n", p], capture_output=True, text=True)
        if r.returncode != 0:
            bad.append(r.stderr.strip().splitlines()[0] if r.stderr.strip() else p)
    n = len(RULES) + 1
    if bad:
        failed += 1
        print("not ok %d - every test script parses (bash -n)" % n)
        for b in bad:
            print("#   " + b)
    else:
        print("ok %d - every test script parses (bash -n) (%d files)" % (n, len(shells)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
