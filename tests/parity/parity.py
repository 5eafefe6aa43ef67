#!/usr/bin/env python3
"""Parity: `lev run` and `lev check` give the same answer for every call.

For each configuration (sandbox kind none / namespace, network on / off,
no flag / --yolo / --allow, read grant present / absent) this generates one
blueprint run with the script provider holding many calls (every tool,
both stages, schema errors, symlinks in and out of the workdir, shell lines
with many constructs, network targets), runs it once with `lev run --json`,
then asks `lev check --calls` every call the run made, with the run's
stage and the taint the call was decided under, and compares the verdict,
gate, rule and reason.  Allowed calls included: both name the gate that
approved.

Nested callers too: stage one offers a Lua script tool ("host") whose host
functions (read_file, write_file, shell, http_get, http_post) make the
generated calls from inside the script; each host call is a tool_call of
its own, decided in the script's context, and `lev check` must give it the
same answer as a model's call in that context (the script tool's own call
too).  And a host call's context is never lower than the script tool call's
it runs in (taint and integrity): the script holds everything its caller saw.

Usage: parity.py --lev LEV --dir SCRATCH [--kinds none,namespace] [--tap]
Prints one TAP line per configuration and a summary line:
"# parity: N calls, M mismatches".
"""
import argparse
import json
import os
import random
import subprocess
import sys

TOOLS_ONE = ["read_file", "read_files", "list_dir", "write_file", "edit_file", "shell",
             "web_fetch", "http_post", "web_search", "current_time", "context_write",
             "context_append", "context_read", "ask_user_text"]
TOOLS_TWO = ["read_file", "list_dir", "shell", "web_fetch"]

SHELL_LINES = [
    "ls", "ls -la src", "cat notes.md | wc -l", "echo hi > gen/s{i}.txt",
    "echo x > ../outside/y{i}.txt", "echo x >> ~/.bashrc-lev-parity", "grep -r main src",
    "sort notes.md && wc -c notes.md", "true || false", "(cd src && ls)",
    "{ echo a; echo b; } | sort", "echo $(date +%F)", "echo `id -u`", "printf '%s\\n' x",
    "test -f notes.md", "date +%F", "git status", "find . -name '*.c'",
    "python3 -c 'print(1)'", "curl --version", "eval 'echo hi'", "bash -c 'echo hi'",
    "cat < notes.md", "echo x 2>&1 | tee gen/t{i}.txt", "x=1; echo $x",
    "for f in src/*; do echo $f; done", "cat notes.md > /dev/null", "echo {a,b}", "ls ~",
    "cat ../outside/secret.txt", "rm -f gen/nothing-{i}", "mkdir -p gen/d{i}", "sleep 0",
    "echo x > link-out/z{i}.txt", "echo x > link-in/z{i}.txt", "cat notes.md; ls",
    "wc -l < notes.md > gen/c{i}.txt", "echo $HOME", "ls | head -n 1", "echo 'a > b'",
    "echo \"$(ls src)\"", "cat <<< hi", "ls > \"gen/q{i}.txt\"", "echo x > $HOME/lev-par{i}",
    "env | sort | head -n 1", "head -n 1 notes.md", "tail -n 1 notes.md", "uname -s",
    "echo done &", "cat /etc/hostname", "exec echo hi", "source /dev/null", ". /dev/null",
    "time ls", "nohup true", "echo x | xargs echo", "ls -- -x 2>/dev/null", "",
]


HOST_LUA = """-- @tool host
-- @description make one host call
-- @requires network, shell
-- @param fn string required "read_file, write_file, shell, http_get or http_post"
-- @param a string optional "first argument"
-- @param b string optional "second argument"
local f = ({ read_file = read_file, write_file = write_file, shell = shell,
             http_get = http_get, http_post = http_post })[params.fn]
local ok, r = pcall(f, params.a, params.b)
return tostring(r)
"""

# the built-in tool each host function is
HOST_FNS = {"read_file": "read_file", "write_file": "write_file", "shell": "shell",
            "http_get": "web_fetch", "http_post": "http_post"}


def host_call(rng, t, i):
    """A script tool call making one generated call through a host function."""
    fn = rng.choice(sorted(HOST_FNS))
    _, args = gen_call(rng, [HOST_FNS[fn]], t, i)
    while not all(isinstance(v, str) for v in args.values()):
        _, args = gen_call(rng, [HOST_FNS[fn]], t, i)
    vals = list(args.values())
    out = {"fn": fn}
    if vals:
        out["a"] = vals[0]
    if len(vals) > 1:
        out["b"] = vals[1]
    return "host", out


def read_paths(t):
    o, s = t["outside"], t["shared"]
    return ["notes.md", "src/main.c", "link-in/main.c", "link-out/secret.txt",
            "../outside/secret.txt", o + "/secret.txt", "link-shared/a.md", s + "/a.md",
            s + "/ssh/id", "dangling", "missing.txt", "/dev/null",
            "/proc/self/root/etc/hostname", "~/.ssh/id", "src/../notes.md", "."]


def gen_call(rng, tools, t, i):
    tool = rng.choice(tools + ["frobnicate"] * 0 + ([] if rng.random() > 0.03 else ["frobnicate"]))
    paths = read_paths(t)
    if rng.random() < 0.04:
        # arguments that do not fit the schema
        return tool, {"path": 7, "command": 3, "url": 5, "paths": "x", "region": 1}
    if tool == "read_file":
        return tool, {"path": rng.choice(paths)}
    if tool == "read_files":
        return tool, {"paths": rng.sample(paths, rng.randint(1, 3))}
    if tool == "list_dir":
        p = rng.choice([".", "src", "link-out", t["shared"], "notes.md", None, "../outside",
                        "link-shared", "/"])
        return tool, ({} if p is None else {"path": p})
    if tool == "write_file":
        p = rng.choice(["gen/w{i}.txt", "../outside/w{i}.txt", "link-out/w{i}.txt",
                        t["shared"] + "/w{i}.md", "link-in/w{i}.c", "/dev/null",
                        "link-shared/w{i}.md", "gen/sub{i}/deep/w.txt"])
        return tool, {"path": p.replace("{i}", str(i)), "content": "x"}
    if tool == "edit_file":
        p = rng.choice(["notes.md", "link-out/secret.txt", "missing.txt", "src/main.c",
                        "link-shared/a.md"])
        return tool, {"path": p, "old_str": "ZZZ-not-there", "new_str": "y"}
    if tool == "shell":
        return tool, {"command": rng.choice(SHELL_LINES).replace("{i}", str(i))}
    if tool == "web_fetch":
        return tool, {"url": rng.choice(["http://10.1.2.3/x", "https://127.0.0.1:1/",
                                         "http://10.9.9.9/", "ftp://10.1.2.3/",
                                         "http://[::1]:1/", "not a url"])}
    if tool == "http_post":
        return tool, {"url": rng.choice(["http://10.9.9.9/post", "http://10.1.2.3/post"]),
                      "body": "b"}
    if tool == "web_search":
        return tool, {"query": "lev"}
    if tool in ("context_write", "context_append"):
        return tool, {"region": rng.choice(["notes", "nope"]), "content": "c"}
    if tool == "context_read":
        return tool, {"region": rng.choice(["notes", "nope"])}
    if tool == "ask_user_text":
        return tool, {"question": "q?"}
    return tool, {}


def toml_str(s):
    return json.dumps(s)


def toml_inline(d):
    parts = []
    for k, v in d.items():
        if isinstance(v, str):
            parts.append("%s = %s" % (k, toml_str(v)))
        elif isinstance(v, list):
            parts.append("%s = [%s]" % (k, ", ".join(toml_str(x) for x in v)))
        else:
            parts.append("%s = %s" % (k, json.dumps(v)))
    return "{ " + ", ".join(parts) + " }"


def write_tree(root):
    t = {"work": os.path.join(root, "work"), "outside": os.path.join(root, "outside"),
         "shared": os.path.join(root, "shared", "docs")}
    os.makedirs(os.path.join(t["work"], "src"), exist_ok=True)
    os.makedirs(os.path.join(t["work"], "gen"), exist_ok=True)
    os.makedirs(t["outside"], exist_ok=True)
    os.makedirs(t["shared"], exist_ok=True)
    home = os.environ["HOME"]
    os.makedirs(os.path.join(home, ".ssh"), exist_ok=True)

    def put(p, s):
        with open(p, "w") as f:
            f.write(s)
    put(os.path.join(t["work"], "notes.md"), "notes\n")
    put(os.path.join(t["work"], "src", "main.c"), "int main;\n")
    put(os.path.join(t["outside"], "secret.txt"), "secret\n")
    put(os.path.join(t["shared"], "a.md"), "doc\n")
    put(os.path.join(home, ".ssh", "id"), "key\n")
    for name, target in [("link-in", "src"), ("link-out", "../outside"),
                         ("link-shared", t["shared"]), ("dangling", "/nonexistent-lev/x")]:
        p = os.path.join(t["work"], name)
        if not os.path.lexists(p):
            os.symlink(target, p)
    p = os.path.join(t["shared"], "ssh")
    if not os.path.lexists(p):
        os.symlink(os.path.join(home, ".ssh"), p)
    return t


def write_config(kind, network, grant, t):
    d = os.path.join(os.environ["HOME"], ".leviath")
    os.makedirs(d, mode=0o700, exist_ok=True)
    cfg = ['taint_tracking = true', '[sandbox]', 'kind = "%s"' % kind,
           'network = %s' % ("true" if network else "false"), 'on_unavailable = "error"']
    cfg += ['[tool_permissions]', 'host = "allow"']
    if grant:
        cfg += ['[agent_read_paths.par]', 'allow = [%s]' % toml_str(t["shared"])]
    p = os.path.join(d, "config.toml")
    with open(p, "w") as f:
        f.write("\n".join(cfg) + "\n")
    os.chmod(p, 0o600)
    p = os.path.join(d, "policy.toml")
    with open(p, "w") as f:
        f.write('[[allowlist]]\ntool = "http_post"\nto = ["10.9.9.9"]\n'
                'max_sensitivity = "internal"\n'
                # the script tool itself passes; its host calls meet every gate
                '[mcp_overrides."host"]\ndirection = "internal"\n'
                '[[integrity.allow]]\ntool = "host"\n')
    os.chmod(p, 0o600)


def write_blueprint(bp, t, rng, n_one, n_two):
    os.makedirs(os.path.join(bp, "tools"), exist_ok=True)
    with open(os.path.join(bp, "tools", "host.lua"), "w") as f:
        f.write(HOST_LUA)
    with open(os.path.join(bp, "agent.leviath"), "w") as f:
        f.write("""[agent]
name = "par"

[read_paths]
allow = [%s]

[context.regions]
task = { kind = "pinned", seed = "task" }
notes = { kind = "clearable", max_tokens = 2000 }
conversation = { kind = "sliding_window", max_items = 400 }

[stages.one]
model = { provider = "script", script = "turns.toml" }
available_tools = [%s]
next = "two"
max_iterations = 20

[stages.one.tool_permissions]
edit_file = "deny"

[stages.two]
model = { provider = "script", script = "turns.toml" }
available_tools = [%s]
max_iterations = 20

[stages.two.tool_permissions]
read_file = "ask"
web_fetch = "deny"
""" % (toml_str(t["shared"]), ", ".join(toml_str(x) for x in TOOLS_ONE + ["host"]),
            ", ".join(toml_str(x) for x in TOOLS_TWO)))
    lines = []
    i = 0
    for tools, n in ((TOOLS_ONE, n_one), (TOOLS_TWO, n_two)):
        left = n
        while left > 0:
            lines.append("[[turn]]")
            for _ in range(min(left, 100)):
                if tools is TOOLS_ONE and rng.random() < 0.25:
                    tool, args = host_call(rng, t, i)
                else:
                    tool, args = gen_call(rng, tools, t, i)
                i += 1
                lines.append("[[turn.call]]")
                lines.append("tool = %s" % toml_str(tool))
                lines.append("args = %s" % toml_inline(args))
            left -= 100
        lines.append('[[turn]]\ntext = "stage done"')
    with open(os.path.join(bp, "turns.toml"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lev", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--kinds", default="none,namespace")
    ap.add_argument("--per-run", type=int, default=90)
    ap.add_argument("--seed", type=int, default=5300)
    a = ap.parse_args()

    root = a.dir
    t = write_tree(root)
    total = mismatches = n = nested_total = 0
    failed = False
    seen = {}
    for kind in a.kinds.split(","):
        for network in (True, False):
            for flags in ([], ["--yolo"], ["--allow", "shell", "--allow", "write_file"]):
                for grant in (True, False):
                    n += 1
                    name = "%s net=%s %s grant=%s" % (kind, "on" if network else "off",
                                                     " ".join(flags) or "-",
                                                     "yes" if grant else "no")
                    rng = random.Random(a.seed * 1000 + n)
                    write_config(kind, network, grant, t)
                    bp = os.path.join(root, "bp%d" % n)
                    write_blueprint(bp, t, rng, a.per_run * 2 // 3, a.per_run - a.per_run * 2 // 3)
                    # per-agent grants bind to the installed agent: run and check
                    # the installed copy, so grant=yes grants
                    add = subprocess.run([a.lev, "add", "--force", bp], capture_output=True,
                                         text=True)
                    if add.returncode != 0:
                        print("not ok %d - %s: lev add failed: %s" % (n, name, add.stderr.strip()))
                        failed = True
                        continue
                    bp = "par"
                    run = subprocess.run(["setsid", "-w", a.lev, "run", "--foreground", bp, "--workdir", t["work"],
                                          "--task", "parity", "--json"] + flags,
                                         stdin=subprocess.DEVNULL, capture_output=True,
                                         text=True)
                    events = [json.loads(l) for l in run.stdout.splitlines() if l.startswith("{")]
                    calls = [e for e in events if e.get("event") == "tool_call"]
                    n_nested = sum(1 for e in calls if "." in str(e.get("id")))
                    if run.returncode != 0 or not calls:
                        print("not ok %d - %s: the run failed (exit %d): %s" %
                              (n, name, run.returncode, run.stderr.strip()[-400:]))
                        failed = True
                        continue
                    lines = []
                    for k, e in enumerate(calls):
                        lines.append(json.dumps({"id": k, "tool": e["tool"], "args": e["args"],
                                                 "stage": e["stage"], "taint": e["taint"],
                                                 "integrity": e["integrity"]}))
                    chk = subprocess.run([a.lev, "check", bp, "--workdir", t["work"],
                                          "--no-terminal", "--calls", "-"] + flags,
                                         input="\n".join(lines) + "\n", capture_output=True,
                                         text=True)
                    answers = {}
                    for l in chk.stdout.splitlines():
                        o = json.loads(l)
                        answers[o.get("id")] = o
                    bad = []
                    rank = {"public": 0, "internal": 1, "private": 2, "trusted": 0,
                            "untrusted": 1}
                    by_id = {str(e.get("id")): e for e in calls}
                    for e in calls:
                        parent = by_id.get(str(e.get("id")).rsplit(".", 1)[0])
                        if "." not in str(e.get("id")) or not parent:
                            continue
                        for key in ("taint", "integrity"):
                            if rank[e[key]] < rank[parent[key]]:
                                bad.append((e["tool"], e["args"], e["stage"], e["taint"],
                                            "%s %s" % (key, e[key]),
                                            "below its script's %s" % parent[key]))
                    for k, e in enumerate(calls):
                        c = answers.get(k, {"error": "no answer"})
                        got_run = (e["verdict"], e["gate"], e["rule"], e["reason"])
                        got_chk = (c.get("decision"), c.get("gate"), c.get("rule"),
                                   c.get("reason"))
                        if got_run != got_chk:
                            bad.append((e["tool"], e["args"], e["stage"], e["taint"], got_run,
                                        got_chk if "error" not in c else c["error"]))
                    for e in calls:
                        key = "%s/%s taint=%s" % (e["verdict"], e["gate"], e["taint"])
                        seen[key] = seen.get(key, 0) + 1
                    total += len(calls)
                    nested_total += n_nested
                    if not n_nested:
                        failed = True
                        print("not ok %d - %s: no host function call was made" % (n, name))
                        continue
                    mismatches += len(bad)
                    if bad:
                        failed = True
                        print("not ok %d - %s: %d of %d calls differ" % (n, name, len(bad),
                                                                        len(calls)))
                        for b in bad[:8]:
                            print("#   %s %s stage=%s taint=%s\n#     run:   %s\n#     check: %s"
                                  % (b[0], json.dumps(b[1])[:200], b[2], b[3], b[4], b[5]))
                    else:
                        print("ok %d - %s: %d calls agree (%d from a script's host functions)"
                              % (n, name, len(calls), n_nested))
                    sys.stdout.flush()
    for k in sorted(seen):
        print("#   %5d %s" % (seen[k], k))
    print("1..%d" % n)
    print("# parity: %d calls (%d nested), %d mismatches" % (total, nested_total, mismatches))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
