#!/usr/bin/env python3
"""shelldiff - the shell-key parser against real bash (issue 13, class 1).

Lines come from three sources: the red-team corpus (corpus.txt, every case
commented), a small grammar of the constructs bash expands (braces, quotes,
$'...', tildes, patterns, substitutions, compound commands), and random
mutations of both.  Each line goes through the parser (`test-tool
shellkeys-dump`: grantable, keys, the argument vectors it predicts, safe
or not) and, when the parser grants it a key, through `bash -c` with PATH
pointing at a directory of argv-log stubs (echo, printf, test, [, pwd and
type are disabled as builtins so the stubs see them too), in a throw-away
directory whose files are named like flags ("-v", "--output=o", "-rf").

A line fails when bash runs a program or an argument vector that the keys
and the parser's prediction did not name, or when a line the built-in safe
list pre-approves makes a safe-listed program run with an argument shape
the safe list forbids (printf -v, git -c/--output/..., date -s, file -C/-m,
test -v, find -exec ...) or with a path outside the workdir.

    shelldiff.py run --test-tool T --argv-log A [--lev L] [--count N] [--seed S]
        generate, parse, then execute: inside `L sandbox exec --kind
        namespace --network off` when L is given and works (the executing
        half re-runs this script there), else directly with `env -i`, a
        scratch HOME and no line that redirects anything.
    shelldiff.py gen N
        write N lines (corpus, grammar, mutations), NUL-terminated, for
        bench/run-shellkeys.sh.
    shelldiff.py exec WORKDIR LINES-FILE STUB-DIR OUT-FILE
        (internal) run each line in bash and record what the stubs saw.

Output is TAP-ish: a summary line, then one "# FAIL" block per failure;
the exit status is 1 when anything failed.
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))

PROGRAMS = ["ls", "cat", "git", "printf", "echo", "date", "file", "test", "[", "grep",
            "find", "sort", "wc", "head", "diff", "du", "stat", "rm", "curl", "make",
            "env", "tail", "pwd", "type", "seq", "basename", "jq", "uname"]
DISABLED_BUILTINS = ["echo", "printf", "test", "[", "pwd", "type"]
# Programs that run their operands are keyed through to the program they run
# (test-shellkeys, t4330); here the stub only logs, so the runner's own argv
# is not compared.
RUNNERS = {"env", "timeout", "nice", "nohup", "stdbuf", "setsid", "xargs", "flock", "ionice",
           "chrt", "taskset", "watch"}
NEVER_OPEN = {"echo", "printf", "basename", "dirname", "true", "false", "seq", "sleep",
              "pwd", "uname", "whoami", "id", "hostname", "which", "type"}
PLAY_FILES = ["-v", "--output=o", "-rf", "-s", "-C", "a.md", "b.md", "x", "README.md",
              ".hidden", "-exec", "y.c"]
PLAY_DIRS = ["sub"]

# ---- generation -------------------------------------------------------------------

WORDS = [
    "a", "x", "README.md", "-la", "-v", "--output=o", "status", "log", "'%s\\n'", "+%F",
    "-f", "-r", "foo", ".", "--oneline", "-n", "1", "'-v'", '"-v"', "\\-v", "$'-v'",
    "$'\\055v'", "$'\\x2dv'", "$'a\\tb'", "{-v,}", "{a,b}", "{1..3}", "{a..c}", "x{,}",
    "{~,.}/x", "{{a,b}", "{a}{b,c}", '"{a,b}"', "{a\\,b,c}", "{01..03}", "~", "~/x",
    "~root", "a=~/x", "*", "./*", "*.md", "a*", "[ab]*", "?", "'*'", "$x", '"$x"',
    "$(echo a)", "$((1+2))", "${x:-a}", "<(ls)", "''", '""', "--", "-C", "sub",
    "{-s,}", "'--set=1'", "-exec", "{-exec,}", "'-delete'", "{--git-dir=..,}", "-c",
    "core.pager=x", "{-C,} .", "'{'", "}", "{", "-{v,}", "{,-}v", "{-,}{v,}",
    "{a..e..2}", "{5..1}", "{-1..1}", "$'\\''", "\"a b\"", "a\\ b", "x'y'z",
    "\"$(echo a)\"", "'$x'", "\\$x", "{x,y}z{1,2}", "{a,{b,c}}", "{.,~}",
]

PLAIN_WORDS = ["a", "x", "README.md", "-la", "-n", "status", "log", "--oneline", "-r", "foo",
               ".", "src/main.c", "-f", "1", "+%F", "-c", "diff", "HEAD", "--stat", "-l"]

SEPS = [" ; ", " && ", " || ", " | ", "\n"]
REDIRS = ["", "", "", " > out", " 2>/dev/null", " < x", " >> log", " 2>&1"]


def gen_simple(rng):
    prog = rng.choice(PROGRAMS)
    args = [rng.choice(WORDS) for _ in range(rng.randint(0, 4))]
    pre = ""
    if rng.random() < 0.08:
        pre = rng.choice(["X=1 ", "command ", "x=-v; ", "time "])
    return pre + " ".join([prog] + args) + rng.choice(REDIRS)


def gen_line(rng):
    r = rng.random()
    if r < 0.6:
        parts = [gen_simple(rng) for _ in range(rng.randint(1, 3))]
        out = parts[0]
        for p in parts[1:]:
            out += rng.choice(SEPS) + p
        return out
    if r < 0.7:
        return "( %s )" % gen_simple(rng)
    if r < 0.8:
        return "{ %s; %s; }" % (gen_simple(rng), gen_simple(rng))
    if r < 0.9:
        return "if %s; then %s; else %s; fi" % (gen_simple(rng), gen_simple(rng),
                                                gen_simple(rng))
    return "for i in %s %s; do %s; done" % (rng.choice(WORDS), rng.choice(WORDS),
                                              gen_simple(rng))


MUT_CHARS = " '\"\\{},*?~$-;|&<>()`\n=.[]/"


def mutate(rng, line):
    s = list(line)
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        if op < 0.45 or not s:
            s.insert(rng.randint(0, len(s)), rng.choice(MUT_CHARS))
        elif op < 0.75:
            del s[rng.randrange(len(s))]
        else:
            i = rng.randrange(len(s))
            j = min(len(s), i + rng.randint(1, 6))
            s[i:i] = s[i:j]
    return "".join(s)


def load_corpus(path):
    lines = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            if not raw or raw.startswith("#"):
                continue
            lines.append(raw.replace("\\\\n", "\x00").replace("\\n", "\n").replace("\x00", "\\n"))
    return lines


# ---- the parser's view ----------------------------------------------------------

def parse_all(test_tool, lines):
    data = b"".join(l.encode() + b"\0" for l in lines)
    out = subprocess.run([test_tool, "shellkeys-dump"], input=data, stdout=subprocess.PIPE,
                         check=True).stdout
    recs = out.split(b"\0")[:-1]
    assert len(recs) == len(lines), (len(recs), len(lines))
    res = []
    for r in recs:
        g, fence, safe, keys, cmds, reason, outside = r.decode(errors="surrogateescape").split("\x1d")
        res.append({
            "grantable": g == "1", "fence": fence == "1", "safe": safe == "1" and outside == "0",
            "keys": keys.split("\x1e") if keys else [],
            "cmds": [c.split("\x1f") for c in cmds.split("\x1e")] if cmds else [],
            "reason": reason,
        })
    return res


# ---- bash's view ------------------------------------------------------------------

def reset_play(play):
    keep = set(PLAY_FILES) | set(PLAY_DIRS) | {"home"}
    for name in os.listdir(play):
        if name not in keep:
            p = os.path.join(play, name)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)


def make_play(play):
    os.makedirs(os.path.join(play, "home"), exist_ok=True)
    for d in PLAY_DIRS:
        os.makedirs(os.path.join(play, d), exist_ok=True)
    for f in PLAY_FILES:
        with open(os.path.join(play, f), "w") as fh:
            fh.write("x\n")


def run_one(line, play, stubs, log):
    prelude = "enable -n %s\n" % " ".join(DISABLED_BUILTINS)
    if os.path.exists(log):
        os.unlink(log)
    env = {"PATH": stubs, "HOME": os.path.join(play, "home"), "ARGV_LOG": log, "LC_ALL": "C"}
    try:
        subprocess.run(["/bin/bash", "-c", prelude + line], cwd=play, env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=3, start_new_session=True)
    except subprocess.TimeoutExpired:
        pass
    runs = []
    if os.path.exists(log):
        with open(log, "rb") as f:
            parts = f.read().split(b"\0")
        i = 0
        while i < len(parts) - 1:
            n = int(parts[i])
            runs.append([x.decode(errors="surrogateescape") for x in parts[i + 1:i + 1 + n]])
            i += 1 + n
    reset_play(play)
    return runs


def exec_main(workdir, lines_file, stubs, out_file):
    with open(lines_file, encoding="utf-8", errors="surrogateescape") as f:
        lines = json.load(f)
    plays = []
    for w in range(2):
        play = os.path.join(workdir, "play%d" % w)
        make_play(play)
        plays.append(play)

    def worker(w):
        # one log per line: a process substitution may still be writing after bash exits
        res = {}
        for idx in range(w, len(lines), 2):
            res[idx] = [plays[w], run_one(lines[idx], plays[w], stubs,
                                          os.path.join(workdir, "log.%d" % idx))]
        return res

    with ThreadPoolExecutor(2) as ex:
        results = {}
        for r in ex.map(worker, range(2)):
            results.update(r)
    with open(out_file, "w", encoding="utf-8", errors="surrogateescape") as f:
        json.dump([results[i] for i in range(len(lines))], f)


# ---- comparing -----------------------------------------------------------------------

def glob_match(pat, s):
    if pat == s:
        return True
    if pat.count("/") != s.count("/"):
        return False
    rx, i = "", 0
    while i < len(pat):
        c = pat[i]
        if c == "*":
            rx += "[^/]*"
        elif c == "?":
            rx += "[^/]"
        elif c == "[":
            j = pat.find("]", i + 2)
            if j < 0:
                rx += re.escape(c)
            else:
                body = pat[i + 1:j]
                if body[:1] in "!^":
                    body = "^" + body[1:]
                rx += "[" + body.replace("\\", "\\\\") + "]"
                i = j
        else:
            rx += re.escape(c)
        i += 1
    try:
        return re.fullmatch(rx, s) is not None
    except re.error:
        return True


def fields_match(fields, args, home, play):
    memo = {}

    def m(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(fields):
            r = j == len(args)
        else:
            kind, val = fields[i][:1], fields[i][1:]
            if kind == "g":
                kind, val = "G", home + val[1:]
            if kind == "G":
                # zero or more matching names, or the pattern itself
                r = m(i + 1, j)
                k = j
                while not r and k < len(args) and glob_match(val, args[k]):
                    k += 1
                    r = m(i + 1, k)
            elif j >= len(args):
                r = False
            elif kind == "L":
                r = args[j] == val and m(i + 1, j + 1)
            elif kind == "T":
                r = args[j] == home + val[1:] and m(i + 1, j + 1)
            elif kind == "P":
                r = re.fullmatch(r"/dev/fd/\d+", args[j]) is not None and m(i + 1, j + 1)
            else:
                r = False
        memo[(i, j)] = r
        return r

    return m(0, 0)


def key_names(keys, argv):
    want = "shell:" + argv[0]
    for k in keys:
        prog, _, fold = k.partition(" ")
        if prog == want and (not fold or (len(argv) > 1 and argv[1] == fold)):
            return True
    return False


def forbidden_shape(argv):
    """The independent statement of what a safe-listed program must never get."""
    p, a = argv[0], argv[1:]

    def cluster(x, c):
        return x.startswith("-") and not x.startswith("--") and c in x[1:]

    def long_opt(x, full, unique):
        """X names the long option --FULL as getopt_long reads it: the name
        before any '=' is FULL or an abbreviation of at least UNIQUE bytes
        (shorter ones are ambiguous or name another option)."""
        if not x.startswith("--") or x == "--":
            return False
        name = x[2:].split("=", 1)[0]
        return len(name) >= unique and full.startswith(name)

    if p == "printf" and a and a[0].startswith("-v"):
        return "printf -v"
    if p == "git":
        for x in a:
            if x in ("-c", "-p", "--paginate") or x.startswith(("--output", "--exec-path",
                     "--git-dir", "--work-tree", "--config-env", "--ext-diff", "--textconv",
                     "--show-signature", "--namespace")):
                return "git " + x
            if "fsmonitor" in x or "hooksPath" in x:
                return "git " + x
    if p == "date":
        for x in a:
            if cluster(x, "s") or long_opt(x, "set", 1):
                return "date " + x
    if p == "file":
        for x in a:
            if (cluster(x, "C") or cluster(x, "m") or long_opt(x, "compile", 2) or
                    long_opt(x, "magic-file", 2)):
                return "file " + x
    if p in ("test", "["):
        for x in a:
            if x in ("-v", "-R"):
                return p + " " + x
    if p == "find":
        for x in a:
            if x in ("-exec", "-execdir", "-ok", "-okdir", "-delete") or x.startswith("-fprint"):
                return "find " + x
    return None


def outside(argv, home, play):
    if argv[0] in NEVER_OPEN:
        return None
    for x in argv[1:]:
        for part in (x, x.split("=", 1)[-1]):
            if part.startswith(home) or (part.startswith("/") and not part.startswith(play)
                                         and part != "/dev/null"
                                         and not re.fullmatch(r"/dev/fd/\d+", part)) \
                    or part == ".." or part.startswith("../") or "/../" in part:
                return x
    return None


def compare(lines, parsed, runs):
    fails = []
    for line, pr, pr_runs in zip(lines, parsed, runs):
        if not pr["grantable"] or pr_runs is None:
            continue
        play, rn = pr_runs
        home = os.path.join(play, "home")
        for argv in rn:
            if argv[0] in RUNNERS:
                continue
            if not key_names(pr["keys"], argv):
                fails.append((line, "bash ran %r, which no key names (keys %r)" % (argv, pr["keys"])))
                continue
            if not any(f and f[0][1:].rsplit("/", 1)[-1] == argv[0] and
                       fields_match(f[1:], argv[1:], home, play) for f in pr["cmds"]):
                fails.append((line, "bash ran %r; the parser predicted %r" % (argv, pr["cmds"])))
                continue
            if pr["safe"]:
                bad = forbidden_shape(argv)
                if bad:
                    fails.append((line, "pre-approved, but bash ran '%s' (%r)" % (bad, argv)))
                out = outside(argv, home, play)
                if out:
                    fails.append((line, "pre-approved, but bash passed %r, outside the "
                                  "workdir (%r)" % (out, argv)))
    return fails


# ---- main ----------------------------------------------------------------------------

def sandbox_works(lev):
    try:
        return subprocess.run([lev, "sandbox", "exec", "--kind", "namespace", "--network", "off",
                               "--", "/bin/true"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run_main(argv):
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--test-tool", required=True)
    ap.add_argument("--argv-log", required=True)
    ap.add_argument("--lev")
    ap.add_argument("--count", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--corpus", default=os.path.join(HERE, "corpus.txt"))
    o = ap.parse_args(argv)

    rng = random.Random(o.seed)
    corpus = load_corpus(o.corpus)
    lines = list(corpus)
    n_gen = o.count // 2
    gen = [gen_line(rng) for _ in range(n_gen)]
    lines += gen
    seeds = corpus + gen
    lines += [mutate(rng, rng.choice(seeds)) for _ in range(o.count - n_gen)]
    parsed = parse_all(o.test_tool, lines)

    sandboxed = bool(o.lev) and sandbox_works(o.lev)
    todo = [i for i, p in enumerate(parsed) if p["grantable"] and
            (sandboxed or ">" not in lines[i])]
    work = tempfile.mkdtemp(prefix="shelldiff.")
    try:
        stubs = os.path.join(work, "stubs")
        os.makedirs(stubs)
        # the sandbox sees the workdir but may hide where the source and build
        # trees live (a private /tmp): the stub and this script go into WORK
        shutil.copy(o.argv_log, os.path.join(work, "argv-log"))
        shutil.copy(os.path.abspath(__file__), os.path.join(work, "shelldiff.py"))
        for p in PROGRAMS + ["sh", "bash", "true", "false", "sleep", "id", "xargs", "tee"]:
            os.symlink(os.path.join(work, "argv-log"), os.path.join(stubs, p))
        lf = os.path.join(work, "lines.json")
        of = os.path.join(work, "out.json")
        with open(lf, "w", encoding="utf-8", errors="surrogateescape") as f:
            json.dump([lines[i] for i in todo], f)
        cmd = [sys.executable, os.path.join(work, "shelldiff.py"), "exec", work, lf, stubs, of]
        if sandboxed:
            cmd = [o.lev, "sandbox", "exec", "--kind", "namespace", "--network", "off",
                   "--workdir", work, "--timeout", "600", "--"] + cmd
        else:
            cmd = ["env", "-i", "HOME=" + work, "PATH=/usr/bin:/bin"] + cmd
        subprocess.run(cmd, check=True)
        with open(of, encoding="utf-8", errors="surrogateescape") as f:
            res = json.load(f)
        runs = [None] * len(lines)
        for k, i in enumerate(todo):
            runs[i] = res[k]
        fails = compare(lines, parsed, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    n_runs = sum(len(r[1]) for r in runs if r)
    print("# %d lines (%d corpus, %d generated, %d mutated): %d grantable, %d run in bash%s, "
          "%d program runs compared, %d failures" %
          (len(lines), len(corpus), n_gen, o.count - n_gen,
           sum(p["grantable"] for p in parsed), len(todo),
           " (namespace sandbox)" if sandboxed else " (env -i, no redirects)", n_runs,
           len(fails)))
    for line, why in fails[:50]:
        print("# FAIL %r\n#   %s" % (line, why))
    if n_runs == 0:
        print("# FAIL no program run was compared: the harness tested nothing")
        return 1
    return 1 if fails else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "exec":
        exec_main(*sys.argv[2:6])
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[1] == "gen":
        # N lines, NUL-terminated, for bench/run-shellkeys.sh: corpus, grammar, mutations;
        # "gen N plain": lines made of plain words only (what agents mostly send)
        rng = random.Random(13)
        corpus = load_corpus(os.path.join(HERE, "corpus.txt"))
        n = int(sys.argv[2])
        if len(sys.argv) > 3 and sys.argv[3] == "plain":
            WORDS[:] = PLAIN_WORDS
            corpus = [l for l in corpus if not re.search(r"[{}$*?~\\'\"\[]", l)]
        gen = [gen_line(rng) for _ in range(n // 2)]
        out = (corpus + gen + [mutate(rng, rng.choice(corpus + gen))
                               for _ in range(n - n // 2)])[:n]
        sys.stdout.buffer.write(b"".join(l.encode() + b"\0" for l in out))
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        sys.exit(run_main(sys.argv[2:]))
    print(__doc__)
    sys.exit(2)
