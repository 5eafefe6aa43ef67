#!/usr/bin/env python3
"""Run every case of toml-test's TOML 1.0 list through toml-decoder; print TAP.

usage: run-toml-test.py TOML-DECODER

Where the suite comes from, first found wins:
  1. $LEV_TOML_TEST_DIR (a toml-test checkout: tests/files-toml-1.0.0 lists
     the TOML 1.0 cases);
  2. $SRC_DIR/../shared/toml-test (the same, on the project's own machines);
  3. the copy Debian ships in golang-github-burntsushi-toml-dev (installed by
     scripts/install-deps): it has no TOML 1.0 listing, so every case under
     valid/ and invalid/ runs, less the TOML 1.1 cases named, each with its
     reason, in tests/toml/exclude-debian.txt.
No suite, or a suite with no cases, is a failure, never a skip.  The first TAP
comment line says which suite ran and how many cases.

valid/*.toml: the decoder must exit 0 and print JSON equal to the .json file
beside it (same structure, same type tags; integers, strings and booleans
compared as text, floats numerically with nan == nan, date-times after the
normalisation toml-test itself applies: ' '/'t' -> 'T', 'z' -> 'Z', then
compared as values, offset date-times as instants).

invalid/*.toml: the decoder must exit 1 (not crash) and name the place of
the error as "<stdin>:LINE:COL: ..." on stderr.

Either way no sanitizer report may appear on stderr.
"""
import datetime
import json
import math
import os
import re
import subprocess
import sys

SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:")
ERROR_POS = re.compile(r"<stdin>:\d+:\d+: ")


HERE = os.path.dirname(os.path.abspath(__file__))
DEBIAN_SUITE = "/usr/share/gocode/src/github.com/BurntSushi/toml/internal/toml-test/tests"
LISTING = os.path.join("tests", "files-toml-1.0.0")


def read_exclusions(path):
    """Names (relative to the suite's tests/ folder) that the list excludes.

    One case a line: 'NAME  reason'; the reason is required."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            if len(parts) != 2:
                raise SystemExit("%s:%d: an exclusion needs a reason" % (path, n))
            out[parts[0]] = parts[1]
    return out


def find_suite():
    """Return (description, tests folder, [case names]) or raise SystemExit."""
    env = os.environ.get("LEV_TOML_TEST_DIR")
    src = os.environ.get("SRC_DIR") or os.path.join(HERE, "..", "..")
    shared = os.path.normpath(os.path.join(src, "..", "shared", "toml-test"))
    for label, root in (("$LEV_TOML_TEST_DIR", env), ("shared", shared)):
        if not root:
            continue
        listing = os.path.join(root, LISTING)
        if os.path.isfile(listing):
            with open(listing, encoding="utf-8") as f:
                names = [l.strip() for l in f if l.strip().endswith(".toml")]
            return ("toml-test at %s (%s, its TOML 1.0 list)" % (os.path.normpath(root), label),
                    os.path.join(root, "tests"), names)
        if label == "$LEV_TOML_TEST_DIR":
            raise SystemExit("LEV_TOML_TEST_DIR='%s' has no %s" % (root, LISTING))
    if os.path.isdir(os.path.join(DEBIAN_SUITE, "valid")):
        excl = read_exclusions(os.path.join(HERE, "exclude-debian.txt"))
        names = []
        for top in ("valid", "invalid"):
            for d, _, files in os.walk(os.path.join(DEBIAN_SUITE, top)):
                for fn in files:
                    if fn.endswith(".toml"):
                        names.append(os.path.relpath(os.path.join(d, fn), DEBIAN_SUITE))
        names.sort()
        stale = sorted(set(excl) - set(names))
        if stale:
            raise SystemExit("exclude-debian.txt names cases the suite does not have: %s"
                             % ", ".join(stale))
        names = [n for n in names if n not in excl]
        return ("toml-test from Debian's golang-github-burntsushi-toml-dev at %s "
                "(all of valid/ and invalid/, %d TOML 1.1 case(s) excluded by "
                "tests/toml/exclude-debian.txt)" % (DEBIAN_SUITE, len(excl)),
                DEBIAN_SUITE, names)
    raise SystemExit("toml-test suite not found: no $LEV_TOML_TEST_DIR, no '%s', no '%s' "
                     "(scripts/install-deps installs golang-github-burntsushi-toml-dev)"
                     % (os.path.join(shared, LISTING), DEBIAN_SUITE))


def norm_datetime(kind, s):
    """Turn a toml-test date-time string into a comparable value."""
    s = s.replace(" ", "T").replace("t", "T").replace("z", "Z")
    m = re.fullmatch(
        r"(?:(\d{4})-(\d{2})-(\d{2}))?T?(?:(\d{2}):(\d{2})(?::(\d{2}))?(?:\.(\d+))?)?"
        r"(Z|[+-]\d{2}:\d{2})?", s)
    if not m:
        raise ValueError("not a date-time: %r" % s)
    y, mo, d, h, mi, sec, frac, off = m.groups()
    has_date = y is not None
    has_time = h is not None
    want_date = kind in ("datetime", "datetime-local", "date-local")
    want_time = kind in ("datetime", "datetime-local", "time-local")
    if has_date != want_date or has_time != want_time or (off is not None) != (kind == "datetime"):
        raise ValueError("%r is not a %s" % (s, kind))
    ns = int((frac or "")[:9].ljust(9, "0"))
    parts = (int(y or 0), int(mo or 0), int(d or 0), int(h or 0), int(mi or 0), int(sec or 0), ns)
    if kind != "datetime":
        return parts
    offmin = 0
    if off != "Z":
        sign = -1 if off[0] == "-" else 1
        offmin = sign * (int(off[1:3]) * 60 + int(off[4:6]))
    # an instant: seconds since the epoch (leap second 60 kept additive) and ns
    days = datetime.date(parts[0], parts[1], parts[2]).toordinal()
    secs = days * 86400 + parts[3] * 3600 + parts[4] * 60 + parts[5] - offmin * 60
    return (secs, ns)


def is_value(x):
    return isinstance(x, dict) and set(x.keys()) == {"type", "value"} and isinstance(x["type"], str)


def compare(want, have, path):
    """Return None when equal, else a description of the first difference."""
    if is_value(want):
        if not is_value(have):
            return "%s: expected a %s value, got %s" % (path, want["type"], json.dumps(have)[:80])
        wt, ht = want["type"], have["type"]
        if wt != ht:
            return "%s: expected type %s, got %s" % (path, wt, ht)
        wv, hv = want["value"], have["value"]
        if not isinstance(hv, str):
            return "%s: value is not a string" % path
        if wt == "float":
            try:
                wf, hf = float(wv), float(hv)
            except ValueError as e:
                return "%s: %s" % (path, e)
            if math.isnan(wf) or math.isnan(hf):
                ok = math.isnan(wf) and math.isnan(hf)
            else:
                ok = wf == hf
            return None if ok else "%s: expected float %s, got %s" % (path, wv, hv)
        if wt in ("datetime", "datetime-local", "date-local", "time-local"):
            try:
                ok = norm_datetime(wt, wv) == norm_datetime(wt, hv)
            except ValueError as e:
                return "%s: %s" % (path, e)
            return None if ok else "%s: expected %s %s, got %s" % (path, wt, wv, hv)
        if wt not in ("string", "integer", "bool"):
            return "%s: unknown type %s" % (path, wt)
        return None if wv == hv else "%s: expected %s %r, got %r" % (path, wt, wv, hv)
    if isinstance(want, dict):
        if not isinstance(have, dict) or is_value(have):
            return "%s: expected a table, got %s" % (path, json.dumps(have)[:80])
        if set(want) != set(have):
            missing = sorted(set(want) - set(have))
            extra = sorted(set(have) - set(want))
            return "%s: keys differ (missing %s, unexpected %s)" % (path, missing, extra)
        for k in want:
            r = compare(want[k], have[k], path + "." + k)
            if r:
                return r
        return None
    if isinstance(want, list):
        if not isinstance(have, list):
            return "%s: expected an array, got %s" % (path, json.dumps(have)[:80])
        if len(want) != len(have):
            return "%s: expected %d elements, got %d" % (path, len(want), len(have))
        for i, (w, h) in enumerate(zip(want, have)):
            r = compare(w, h, "%s[%d]" % (path, i))
            if r:
                return r
        return None
    return "%s: unexpected JSON in the expected output: %r" % (path, want)


def run(decoder, toml_path):
    with open(toml_path, "rb") as f:
        data = f.read()
    try:
        p = subprocess.run([decoder], input=data, capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None, b"", b"timed out"
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) != 2:
        print("usage: run-toml-test.py TOML-DECODER", file=sys.stderr)
        return 2
    decoder = sys.argv[1]
    try:
        what, tests, names = find_suite()
    except SystemExit as e:
        print("1..1")
        print("not ok 1 - %s" % e)
        return 1
    if not names:
        print("1..1")
        print("not ok 1 - %s holds no cases" % what)
        return 1
    print("1..%d" % len(names))
    print("# suite: %s; %d cases" % (what, len(names)))
    failed = 0
    for i, name in enumerate(names, 1):
        path = os.path.join(tests, name)
        valid = name.startswith("valid/")
        problem = None
        if not os.path.isfile(path):
            problem = "listed file is missing"
        else:
            rc, out, err = run(decoder, path)
            errs = err.decode("utf-8", "replace")
            if rc is None:
                problem = "decoder timed out"
            elif rc < 0:
                problem = "decoder killed by signal %d" % -rc
            elif SANITIZER.search(errs):
                problem = "sanitizer report: " + errs.strip().splitlines()[0][:200]
            elif valid:
                if rc != 0:
                    problem = "rejected a valid document: " + errs.strip()[:300]
                else:
                    with open(path[:-5] + ".json", encoding="utf-8") as f:
                        want = json.load(f)
                    try:
                        have = json.loads(out.decode("utf-8"))
                    except (ValueError, UnicodeDecodeError) as e:
                        problem = "decoder printed invalid JSON: %s" % e
                    else:
                        problem = compare(want, have, "$")
            else:
                if rc == 0:
                    problem = "accepted an invalid document"
                elif rc != 1:
                    problem = "exit status %d (expected 1)" % rc
                elif not ERROR_POS.search(errs):
                    problem = "error message without <stdin>:LINE:COL: %r" % errs.strip()[:200]
        if problem:
            failed += 1
            print("not ok %d - %s" % (i, name))
            for line in problem.splitlines():
                print("# " + line)
        else:
            print("ok %d - %s" % (i, name))
    print("# toml-test: %d cases, %d passed, %d failed" % (len(names), len(names) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
