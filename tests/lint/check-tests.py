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
    print("1..%d" % len(RULES))
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
