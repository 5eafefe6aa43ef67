#!/usr/bin/env python3
"""Every repo-relative path the docs cite exists.  Prints TAP.

usage: check-doc-paths.py SRC_DIR

Reads README.md, HACKING.md and docs/**/*.md.  A citation is
  - a backquoted word with a '/' whose first component is a top-level entry
    of the repository (`src/liblev/run/agent.c`, `tests/integration/tNNNN-*.sh`,
    `scripts/test`); bare names such as `config.toml` are file formats,
    not paths, and are not checked;
  - in HACKING.md, each module its "One module per concern" list names
    (`toml`, `sandbox-*`): a src/liblev/**/NAME.c must exist;
  - the target of a relative Markdown link ([text](docs/run.md#anchor)),
    relative to the file that holds it.
Templates match as globs: <name>, NAME-style placeholders in capitals
(NNNN, N), * and {a,b}.  A build output (build/..., build-*/...) matches
its source: the same path under the source tree, with or without an
extension (build/src/lev/lev matches src/lev/ from lev's sources, a
helper binary its .c file); a path also matches a file it begins
(`tests/integration/t4000` names t4000-sandbox-ns.sh).  One TAP line per document; a failure lists
each missing citation as FILE:LINE: `PATH`.
"""
import glob
import os
import re
import sys

BACKQUOTED = re.compile(r"`([^`\s]+)`")
MDLINK = re.compile(r"\]\(([^)\s]+)\)")


def to_glob(word):
    g = re.sub(r"<[^>]*>", "*", word)
    g = re.sub(r"N{2,}|\b[A-Z]{1,8}\b", "*", g)    # tNNNN, NAME, N
    g = re.sub(r"\{[^}]*\}", "*", g)                # {a,b}
    return g


def exists(src, rel):
    rel = rel.rstrip("/")
    if not rel or rel.startswith(("/", "~", "$")) or ".." in rel.split("/"):
        return True  # not repo-relative: not ours to check
    g = to_glob(rel)
    # the path itself, a source of a program of that name (tests/helpers/mock-model
    # is built from mock-model.c), or a file it is the start of (tests/integration/t4000)
    if glob.glob(os.path.join(src, g)) or glob.glob(os.path.join(src, g) + ".*") or \
            glob.glob(os.path.join(src, g) + "-*"):
        return True
    m = re.match(r"build[^/]*/(.*)", rel)
    if m:
        inner = to_glob(m.group(1))
        if glob.glob(os.path.join(src, inner)) or glob.glob(os.path.join(src, inner) + ".*"):
            return True
        # a program built from a directory of the same name (build/src/lev/lev)
        d = os.path.dirname(inner)
        if d and os.path.basename(inner) == os.path.basename(d) and os.path.isdir(os.path.join(src, d)):
            return True
    return False


def citations(src, path):
    tops = set(os.listdir(src)) - {".git"}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            for m in BACKQUOTED.finditer(line):
                w = m.group(1).strip(".,;:")
                first = w.split("/", 1)[0]
                if "/" in w and first in tops:
                    yield n, w, os.path.relpath(os.path.join(src, w), src)
            for m in MDLINK.finditer(line):
                t = m.group(1).split("#", 1)[0]
                if not t or re.match(r"[a-z]+:", t):
                    continue
                yield n, t, os.path.relpath(os.path.join(os.path.dirname(path), t), src)


def module_citations(src, path):
    """HACKING.md's list of liblev modules ("One module per concern ...")."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    on = False
    for n, line in enumerate(lines, 1):
        if "One module per concern" in line:
            on = True
        elif on and line.lstrip().startswith("- "):
            break
        if on:
            for m in BACKQUOTED.finditer(line):
                w = m.group(1)
                if re.fullmatch(r"[a-z][a-z0-9-]*\*?", w):
                    pat = os.path.join(src, "src", "liblev", "**", w.rstrip("*") + ("*" if w.endswith("*") else "") + ".c")
                    yield n, w, bool(glob.glob(pat, recursive=True))


def main():
    src = os.path.abspath(sys.argv[1])
    docs = ["README.md", "HACKING.md"] + sorted(
        os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "**", "*.md"), recursive=True))
    docs = [d for d in docs if os.path.isfile(os.path.join(src, d))]
    print("1..%d" % len(docs))
    failed = 0
    for i, d in enumerate(docs, 1):
        bad = []
        count = 0
        for n, w, rel in citations(src, os.path.join(src, d)):
            count += 1
            if rel is None or not exists(src, rel):
                bad.append("%s:%d: `%s`" % (d, n, w))
        if d == "HACKING.md":
            for n, w, ok in module_citations(src, os.path.join(src, d)):
                count += 1
                if not ok:
                    bad.append("%s:%d: module `%s` (no src/liblev/%s.c)" % (d, n, w, w))
        if bad:
            failed += 1
            print("not ok %d - %s cites paths that do not exist" % (i, d))
            for b in bad:
                print("# " + b)
        else:
            print("ok %d - %s: %d citations, all present" % (i, d, count))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
