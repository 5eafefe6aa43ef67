#!/usr/bin/env python3
"""liblev's layers: no file includes a header of a higher layer.

usage: check-layers.py SRC_DIR [STAMP]     check the tree; touch STAMP when clean
       check-layers.py --self-test         TAP: the checker catches what it must

The layers and their order are the list `liblev_layers = [...]` in
src/liblev/meson.build, lowest first; each is a folder of src/liblev.  Rules:
  1. every .c and .h of src/liblev lives in a layer folder;
  2. a file in layer L includes liblev headers only from L and layers before it;
  3. an include names the header's folder ("liblev/base/buf.h"), and the
     header exists;
  4. a NAME-internal.h header is included only from its own folder (and by
     unit tests);
  5. src/lev (the CLI) includes no -internal.h header.
Each violation is one line, FILE:LINE: what is wrong; the exit status is 1.
"""
import os
import re
import shutil
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"liblev/([^"]+)"')


def layers_of(src):
    text = open(os.path.join(src, "src", "liblev", "meson.build"), encoding="utf-8").read()
    m = re.search(r"liblev_layers\s*=\s*\[([^\]]*)\]", text)
    if not m:
        raise SystemExit("src/liblev/meson.build: no 'liblev_layers = [...]' list")
    return re.findall(r"'([a-z0-9_-]+)'", m.group(1))


def check(src):
    layers = layers_of(src)
    rank = {l: i for i, l in enumerate(layers)}
    lib = os.path.join(src, "src", "liblev")
    bad = []

    def rel(p):
        return os.path.relpath(p, src)

    files = []
    for root, _, names in os.walk(lib):
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                p = os.path.join(root, n)
                layer = os.path.relpath(root, lib)
                if layer not in rank:
                    bad.append("%s:1: not in a layer folder (%s)" % (rel(p), ", ".join(layers)))
                    continue
                files.append((p, layer))
    for p, layer in files:
        for n, line in enumerate(open(p, encoding="utf-8", errors="replace"), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            parts = target.split("/")
            if len(parts) != 2 or parts[0] not in rank:
                bad.append("%s:%d: \"liblev/%s\" names no layer folder" % (rel(p), n, target))
                continue
            tl, th = parts
            if not os.path.isfile(os.path.join(lib, tl, th)):
                bad.append("%s:%d: \"liblev/%s\" does not exist" % (rel(p), n, target))
            if rank[tl] > rank[layer]:
                bad.append("%s:%d: layer '%s' includes \"liblev/%s\" of the higher layer '%s'"
                           % (rel(p), n, layer, target, tl))
            if th.endswith("-internal.h") and tl != layer:
                bad.append("%s:%d: \"liblev/%s\" is internal to '%s'" % (rel(p), n, target, tl))
    cli = os.path.join(src, "src", "lev")
    if os.path.isdir(cli):
        for n_ in sorted(os.listdir(cli)):
            if not n_.endswith((".c", ".h")):
                continue
            p = os.path.join(cli, n_)
            for n, line in enumerate(open(p, encoding="utf-8", errors="replace"), 1):
                m = INCLUDE.match(line)
                if m and m.group(1).endswith("-internal.h"):
                    bad.append("%s:%d: the CLI includes the internal \"liblev/%s\""
                               % (rel(p), n, m.group(1)))
    return bad


def self_test():
    cases = [
        ("a lower layer including a higher one is refused", {"base/a.c": "run/x.h"}, True),
        ("the same include the other way round passes", {"run/a.c": "base/x.h"}, False),
        ("an include of its own layer passes", {"run/a.c": "run/x.h"}, False),
        ("an include without its folder is refused", {"run/a.c": "x.h"}, True),
        ("an include of a missing header is refused", {"run/a.c": "base/nope.h"}, True),
        ("another folder's -internal.h is refused", {"run/a.c": "base/y-internal.h"}, True),
        ("a file outside the layer folders is refused", {"loose.c": None}, True),
    ]
    print("1..%d" % len(cases))
    failed = 0
    for i, (desc, files, want_bad) in enumerate(cases, 1):
        d = tempfile.mkdtemp(prefix="lev-layers.")
        try:
            lib = os.path.join(d, "src", "liblev")
            for l in ("base", "run"):
                os.makedirs(os.path.join(lib, l))
            open(os.path.join(lib, "meson.build"), "w").write("liblev_layers = ['base', 'run']\n")
            for h in ("base/x.h", "run/x.h", "base/y-internal.h"):
                open(os.path.join(lib, h), "w").write("#pragma once\n")
            for f, inc in files.items():
                with open(os.path.join(lib, f), "w") as fh:
                    if inc:
                        fh.write('#include "liblev/%s"\n' % inc)
            got = check(d)
        finally:
            shutil.rmtree(d)
        if bool(got) == want_bad:
            print("ok %d - %s" % (i, desc))
        else:
            failed += 1
            print("not ok %d - %s" % (i, desc))
            for g in got:
                print("#   " + g)
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    bad = check(sys.argv[1])
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print("check-layers: %d include(s) break liblev's layers (see src/liblev/meson.build)"
              % len(bad), file=sys.stderr)
        return 1
    if len(sys.argv) == 3:
        open(sys.argv[2], "w").close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
