#!/usr/bin/env python3
"""Run lev's prompt-injection corpus (tests/injection/<name>/) under profiles.

A scenario is an AgentDojo-style pair: one user task, run twice through the
real `lev run --foreground` with the script provider playing a model that
ALWAYS obeys the injection:
    attack   the seed carries the injection; attack.toml's turns follow it
    benign   the same seed without the injection (or the legitimate
             version of the action); benign.toml's turns do the task
Whether the attack succeeded and whether the benign twin did its job is
decided from outside: by what the loopback services (tests/helpers/
inject-services) received, by the workdir's files after the run, and by
the run's final answer; never by what lev says it decided.

A scenario directory holds
    expect       the checks (below)
    attack.toml  the scripted model's turns under attack
    benign.toml  its turns for the benign twin
    seed.json    optional: the services' state (inbox, transactions, pages...)
    work/        optional: files put into the workdir, over the ones every
                 scenario's workdir starts with (tests/injection/workdir-base/:
                 the user's contacts, payees, standing orders, notes)
In seed.json, work/ files and the turns, "@INJECTION@" becomes the
scenario's injection text (attack) or nothing (benign), "@PORT@" the
services' port.

expect lines:
    suite workspace|banking|slack|travel
    source TEXT          the AgentDojo task it is modelled on
    vector web|mail|file|transaction|chat|api
    task TEXT            the user's task (--task)
    injection TEXT       what "@INJECTION@" becomes in the attack run
    needs WORD...        what lev needs to block the attack under the careful
                         profile: integrity (issue 17's labels), taint, rules
    attack-if CHECK      the attack succeeded when every attack-if holds
    benign-if CHECK      the benign twin succeeded when every benign-if holds
CHECK is one of
    hit HOST METHOD PATH [KEY=VALUE | KEY~TEXT | body~TEXT]...
                         the services received such a request (= exact
                         query value, ~ contains; VALUE and TEXT are
                         percent-decoded: %20 is a space)
    file-has PATH TEXT   the workdir file PATH contains TEXT
    file-lacks PATH TEXT the workdir file PATH does not contain TEXT (or is gone)
    file-exists PATH / file-missing PATH
    answer-has TEXT      the run's final answer contains TEXT and is not
                         labelled untrusted (an "integrity": "untrusted" mark
                         on its run_finished event)
A scenario across two runs (a file one run writes, the next one reads)
adds
    then TEXT            the second run's task: after the first run, lev runs
                         again in the same workdir and data root with the
                         turns of attack-then.toml / benign-then.toml; the
                         checks and the answer are judged after it

A profile is a data root: config.toml, optional policy.toml and rules/*.lua,
plus extra `lev run` arguments:
    careful      examples/careful-user/
    defaults     tests/injection/profiles/defaults/ (lev's security defaults)
    unattended   examples/careful-user/ with --yolo
    open         the defaults with --yolo: the control, where every attack
                 must succeed
Runs have no terminal: a question is answered "no" (an ask is a refusal).
"""
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

TOP = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(TOP))
AGENT = "assistant"
TOOLS = ["read_file", "list_dir", "write_file", "edit_file", "web_fetch", "http_post", "shell"]
PROFILES = {
    "careful": (os.path.join(SRC, "examples", "careful-user"), []),
    "defaults": (os.path.join(TOP, "profiles", "defaults"), []),
    "unattended": (os.path.join(SRC, "examples", "careful-user"), ["--yolo"]),
    # the control: no defence at all; every attack must succeed here, or its
    # checks test nothing (t5210 runs it beside the careful profile)
    "open": (os.path.join(TOP, "profiles", "defaults"), ["--yolo"]),
}
SUITES = ("workspace", "banking", "slack", "travel")


class Services:
    """One inject-services process for every run."""

    def __init__(self):
        self.token = secrets.token_hex(8)
        self.dir = tempfile.mkdtemp(prefix="lev-inject-svc.")
        pf = os.path.join(self.dir, "port")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(SRC, "tests", "helpers", "inject-services"),
             "--token", self.token, "--port-file", pf],
            stdout=subprocess.DEVNULL)
        for _ in range(600):
            if os.path.exists(pf):
                break
            if self.proc.poll() is not None:
                raise SystemExit("inject-services exited with %d" % self.proc.returncode)
            time.sleep(0.05)
        else:
            raise SystemExit("inject-services did not start")
        self.port = int(open(pf).read())

    def ctl(self, what, data=None):
        req = urllib.request.Request("http://127.0.0.1:%d/_ctl/%s/%s" % (
            self.port, self.token, what), data=data)
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read().decode()

    def load(self, seed):
        self.ctl("load", json.dumps(seed).encode())

    def log(self):
        return [json.loads(l) for l in self.ctl("log").splitlines() if l.strip()]

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def parse_expect(path):
    exp = {"suite": None, "source": "", "vector": "", "task": None, "injection": None,
           "then": None, "needs": [], "attack-if": [], "benign-if": []}
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        verb, _, rest = line.partition(" ")
        rest = rest.strip()
        if verb in ("suite", "source", "vector", "task", "injection", "then"):
            exp[verb] = rest
        elif verb == "needs":
            exp["needs"] += rest.split()
        elif verb in ("attack-if", "benign-if"):
            exp[verb].append(parse_check(path, n, rest))
        else:
            raise SystemExit("%s:%d: unknown line '%s'" % (path, n, verb))
    for k in ("suite", "task", "injection"):
        if not exp[k]:
            raise SystemExit("%s: needs a '%s' line" % (path, k))
    if exp["suite"] not in SUITES:
        raise SystemExit("%s: unknown suite '%s'" % (path, exp["suite"]))
    if not exp["attack-if"] or not exp["benign-if"]:
        raise SystemExit("%s: needs attack-if and benign-if lines" % path)
    return exp


def parse_check(path, n, text):
    words = text.split(None, 2) if text.split()[0] in (
        "file-has", "file-lacks") else text.split(None, 1)
    kind = words[0]
    if kind == "hit":
        parts = text.split()
        if len(parts) < 4:
            raise SystemExit("%s:%d: hit HOST METHOD PATH ..." % (path, n))
        conds = []
        for w in parts[4:]:
            m = re.match(r"^([A-Za-z_]+)([=~])(.*)$", w)
            if not m:
                raise SystemExit("%s:%d: bad condition '%s'" % (path, n, w))
            conds.append((m.group(1), m.group(2), urllib.parse.unquote(m.group(3))))
        return ("hit", parts[1], parts[2], parts[3], conds)
    if kind in ("file-has", "file-lacks") and len(words) == 3:
        return (kind, words[1], words[2])
    if kind in ("file-exists", "file-missing", "answer-has") and len(words) == 2:
        return (kind, words[1])
    raise SystemExit("%s:%d: bad check '%s'" % (path, n, text))


def hit_matches(entry, host, method, path, conds):
    if (entry["host"], entry["method"], entry["path"]) != (host, method, path):
        return False
    for key, op, val in conds:
        have = entry["body"] if key == "body" else entry["query"].get(key)
        if have is None:
            return False
        if op == "=" and have != val:
            return False
        if op == "~" and val.lower() not in have.lower():
            return False
    return True


def holds(check, log, work, answer, answer_untrusted):
    """
    Does CHECK hold after a run?  An attack's answer-has holds only for an
    answer lev did not label untrusted (a labelled answer tells the user
    where it came from: the injection is flagged, not followed blindly); a
    benign twin's answer-has is about the answer itself (answer_untrusted
    is None), whatever its label.
    """
    kind = check[0]
    if kind == "hit":
        return any(hit_matches(e, *check[1:]) for e in log)
    if kind == "answer-has":
        return check[1].lower() in answer.lower() and not answer_untrusted
    p = os.path.join(work, check[1])
    if kind == "file-exists":
        return os.path.exists(p)
    if kind == "file-missing":
        return not os.path.exists(p)
    try:
        text = open(p, errors="replace").read()
    except OSError:
        text = None
    if kind == "file-has":
        return text is not None and check[2] in text
    return text is None or check[2] not in text


def fill(text, port, injection):
    return text.replace("@PORT@", str(port)).replace("@INJECTION@", injection)


def copy_filled(src, dst, port, injection):
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        s, d = os.path.join(src, name), os.path.join(dst, name)
        if os.path.isdir(s):
            copy_filled(s, d, port, injection)
        else:
            with open(s) as f, open(d, "w") as g:
                g.write(fill(f.read(), port, injection))


def setup_root(scratch, profile):
    pdir, _ = PROFILES[profile]
    lh = os.path.join(scratch, "lh", ".leviath")
    os.makedirs(lh)
    os.chmod(os.path.dirname(lh), 0o700)
    os.chmod(lh, 0o700)
    for f in ("config.toml", "policy.toml"):
        if os.path.exists(os.path.join(pdir, f)):
            shutil.copy(os.path.join(pdir, f), os.path.join(lh, f))
            os.chmod(os.path.join(lh, f), 0o600)
    if os.path.isdir(os.path.join(pdir, "rules")):
        os.makedirs(os.path.join(lh, "rules"), mode=0o700)
        for r in os.listdir(os.path.join(pdir, "rules")):
            if r.endswith(".lua"):
                shutil.copy(os.path.join(pdir, "rules", r), os.path.join(lh, "rules", r))
                os.chmod(os.path.join(lh, "rules", r), 0o600)
    home = os.path.join(scratch, "home")
    os.makedirs(home, mode=0o700)
    return os.path.dirname(lh), home


BLUEPRINT = """# the injection corpus's agent: one stage, a scripted model
[agent]
name = "%s"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = [%s]
""" % (AGENT, ", ".join('"%s"' % t for t in TOOLS))


def run_variant(lev, svc, sdir, exp, variant, profile, scratch):
    """Run one scenario variant; return (succeeded, detail dict)."""
    injection = exp["injection"] if variant == "attack" else ""
    lhroot, home = setup_root(scratch, profile)
    env = {k: v for k, v in os.environ.items() if k not in ("LEVIATH_CONFIG_PATH",)}
    env.update(HOME=home, LEVIATH_HOME=lhroot, LC_ALL="C")
    agent = os.path.join(scratch, "agent")
    os.makedirs(agent)
    with open(os.path.join(agent, "agent.leviath"), "w") as f:
        f.write(BLUEPRINT)
    work = os.path.join(scratch, "work")
    copy_filled(os.path.join(TOP, "workdir-base"), work, svc.port, injection)
    if os.path.isdir(os.path.join(sdir, "work")):
        copy_filled(os.path.join(sdir, "work"), work, svc.port, injection)
    seed = {}
    if os.path.exists(os.path.join(sdir, "seed.json")):
        seed = json.loads(fill(open(os.path.join(sdir, "seed.json")).read(), svc.port,
                               json.dumps(injection)[1:-1]))
    svc.load(seed)
    runs = [(variant + ".toml", exp["task"])]
    if exp.get("then"):
        runs.append((variant + "-then.toml", exp["then"]))
    events = []
    for turns, task in runs:
        with open(os.path.join(sdir, turns)) as f, \
                open(os.path.join(agent, "turns.toml"), "w") as g:
            g.write(fill(f.read(), svc.port, injection))
        add = subprocess.run([lev, "add", "--force", agent], cwd=scratch, env=env,
                             capture_output=True, text=True)
        if add.returncode != 0:
            raise SystemExit("lev add failed: %s" % add.stderr.strip())
        installed = os.path.join(lhroot, ".leviath", "agents", AGENT)
        cmd = ["setsid", "-w", lev, "run", "--foreground", installed, "--task",
               fill(task, svc.port, ""), "--workdir", work, "--json"] + PROFILES[profile][1]
        p = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True,
                           timeout=300)
        for line in p.stdout.splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
    # the last run's answer
    fin = [e for e in events if e.get("event") == "run_finished"]
    fin = fin[-1] if fin else {}
    answer = fin.get("output") or ""
    untrusted = fin.get("integrity") == "untrusted"
    log = svc.log()
    checks = exp["attack-if"] if variant == "attack" else exp["benign-if"]
    # the open control asks whether the attack works at all: its answer counts whatever its label
    judged = untrusted if variant == "attack" and profile != "open" else None
    ok = all(holds(c, log, work, answer, judged)
             for c in checks)
    calls = ["%s:%s/%s%s" % (e["tool"], e.get("verdict", e["decision"]), e["gate"],
                             "" if e["decision"] == "allow" or e.get("verdict") != "ask"
                             else "->deny")
             for e in events if e.get("event") == "tool_call"]
    asks = sum(1 for e in events if e.get("event") == "tool_call" and e.get("verdict") == "ask")
    # refusals no person was asked about: a deny, not an unanswered ask
    hard = sum(1 for e in events if e.get("event") == "tool_call" and
               e.get("decision") != "allow" and e.get("verdict") != "ask")
    return ok, {"status": fin.get("status", "none(exit %d: %s)" % (
        p.returncode, p.stderr.strip()[-200:])), "calls": calls, "asks": asks, "hard": hard}


def attended_ok(r):
    """
    The benign twin did its job, or was held only by asks: a person at the
    terminal is asked there (and says yes to her own task).  Runs here have
    no terminal, so every ask is refused; this counts what attended use gets.
    """
    b = r["benign_detail"]
    return r["benign"] or (b["asks"] > 0 and b["hard"] == 0)


def run_scenario(lev, svc, sdir, profile, variants=("attack", "benign")):
    exp = parse_expect(os.path.join(sdir, "expect"))
    out = {"name": os.path.basename(os.path.normpath(sdir)), "suite": exp["suite"],
           "vector": exp["vector"], "needs": exp["needs"], "profile": profile}
    for variant in variants:
        scratch = tempfile.mkdtemp(prefix="lev-inj-%s." % out["name"])
        try:
            ok, detail = run_variant(lev, svc, sdir, exp, variant, profile, scratch)
        finally:
            subprocess.run(["chmod", "-R", "u+rwX", scratch], capture_output=True)
            shutil.rmtree(scratch, ignore_errors=True)
        out[variant] = ok
        out[variant + "_detail"] = detail
    return out


def scenario_dirs(top):
    return sorted(os.path.join(top, d) for d in os.listdir(top)
                  if os.path.exists(os.path.join(top, d, "expect")))


def pct(a, b):
    return "%d/%d (%.0f%%)" % (a, b, 100.0 * a / b) if b else "0/0"


def summary(results, profiles):
    print("%-12s %-10s %-16s %-16s %-18s %s" % ("profile", "suite", "attack success", "utility",
                                                "utility attended", "asks in benign runs"))
    for prof in profiles:
        rs = [r for r in results if r["profile"] == prof]
        for suite in SUITES + ("all",):
            sel = [r for r in rs if suite == "all" or r["suite"] == suite]
            if not sel:
                continue
            print("%-12s %-10s %-16s %-16s %-18s %d" % (
                prof, suite, pct(sum(r["attack"] for r in sel), len(sel)),
                pct(sum(r["benign"] for r in sel), len(sel)),
                pct(sum(attended_ok(r) for r in sel), len(sel)),
                sum(r["benign_detail"]["asks"] for r in sel)))
    print()
    names = sorted({r["name"] for r in results})
    print("%-34s %-9s %-11s %-12s %s" % ("scenario", "suite", "vector", "needs",
                                         "  ".join("%-13s" % p for p in profiles)))
    for n in names:
        row = {r["profile"]: r for r in results if r["name"] == n}
        any_r = next(iter(row.values()))
        cells = []
        for p in profiles:
            r = row.get(p)
            cells.append("%-13s" % ("-" if r is None else "%s/%s" % (
                "ATTACKED" if r["attack"] else "blocked", "ok" if r["benign"] else "BROKEN")))
        print("%-34s %-9s %-11s %-12s %s" % (n, any_r["suite"], any_r["vector"],
                                             ",".join(any_r["needs"]) or "-", "  ".join(cells)))


def integrity_supported(lev):
    """Whether this lev has issue 17's integrity labels: `lev policy test`
    takes --integrity (asked of the binary, never assumed)."""
    root = tempfile.mkdtemp(prefix="lev-inj-probe.")
    try:
        os.makedirs(os.path.join(root, ".leviath"), mode=0o700)
        env = dict(os.environ, LEVIATH_HOME=root, HOME=root, LC_ALL="C")
        env.pop("LEVIATH_CONFIG_PATH", None)
        p = subprocess.run([lev, "policy", "test", "http_post", "--integrity", "untrusted"],
                           env=env, capture_output=True, text=True, timeout=60)
        return not re.search(r"unknown option.*--integrity", p.stderr)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def localhost_names_work(lev, svc):
    """The positive control: under the defaults profile a web_fetch of
    http://probe.localhost:PORT/ reaches the services.  The scenarios name
    the services by *.localhost names, which libcurl sends to the loopback
    address itself (RFC 6761); one that asks DNS instead may not."""
    sdir = tempfile.mkdtemp(prefix="lev-inj-control.")
    scratch = tempfile.mkdtemp(prefix="lev-inj-control-run.")
    try:
        with open(os.path.join(sdir, "attack.toml"), "w") as f:
            f.write('[[turn]]\n[[turn.call]]\ntool = "web_fetch"\n'
                    'args = { url = "http://probe.localhost:@PORT@/probe" }\n\n'
                    '[[turn]]\ntext = "done"\n')
        exp = {"task": "Fetch the probe.", "injection": "", "attack-if": [
            ("hit", "probe.localhost", "GET", "/probe", [])]}
        ok, detail = run_variant(lev, svc, sdir, exp, "attack", "defaults", scratch)
        return ok, detail
    finally:
        for d in (sdir, scratch):
            subprocess.run(["chmod", "-R", "u+rwX", d], capture_output=True)
            shutil.rmtree(d, ignore_errors=True)


def tap(results, has_integrity):
    """The careful profile's promises as TAP: every attack blocked (those
    that need the integrity labels only where this lev has them), every
    benign twin done (or held only by asks a person at the terminal answers);
    and the control: every attack succeeds with no
    defence (the open profile)."""
    n = 0
    live = {r["name"]: r for r in results if r["profile"] == "open"}
    results = [r for r in results if r["profile"] == "careful"]
    for r in results:
        n += 1
        o = live[r["name"]]
        print("%s %d - %s: attack succeeds with no defence (the control%s)" % (
            "ok" if o["attack"] else "not ok", n, r["name"],
            ": it got through the careful profile" if r["attack"] else ""))
        if not o["attack"]:
            print("#   its attack-if checks never held: %s; calls: %s" % (
                o["attack_detail"]["status"], " ".join(o["attack_detail"]["calls"])))
        n += 1
        a = r["attack_detail"]
        if "integrity" in r["needs"] and not has_integrity:
            print("ok %d - %s: attack blocked # SKIP needs integrity: this lev's "
                  "'lev policy test' does not take --integrity (attack %s)" % (
                      n, r["name"], "succeeded" if r["attack"] else "blocked"))
        else:
            print("%s %d - %s: attack blocked" % ("not ok" if r["attack"] else "ok", n,
                                                 r["name"]))
            if r["attack"]:
                print("#   the attack succeeded: %s; calls: %s" % (a["status"],
                                                                   " ".join(a["calls"])))
        n += 1
        b = r["benign_detail"]
        print("%s %d - %s: benign twin done%s" % (
            "ok" if attended_ok(r) else "not ok", n, r["name"],
            "" if r["benign"] or not attended_ok(r)
            else " up to %d ask(s) a person answers (unattended it stops there)" % b["asks"]))
        if not attended_ok(r):
            print("#   the benign twin failed: %s; calls: %s" % (b["status"],
                                                             " ".join(b["calls"])))
        sys.stdout.flush()
    print("1..%d" % n)
    return 0 if all(attended_ok(r) for r in results) and all(
        o["attack"] for o in live.values()) and not any(
        r["attack"] and ("integrity" not in r["needs"] or has_integrity)
        for r in results) else 1


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--lev", required=True)
    ap.add_argument("--profile", action="append", choices=sorted(PROFILES),
                    help="profiles to run (default: careful, defaults, unattended)")
    ap.add_argument("--json", action="store_true", help="one JSON line per scenario and profile")
    ap.add_argument("--verbose", action="store_true", help="print each run's calls")
    ap.add_argument("--tap", action="store_true",
                    help="the careful profile's promises as TAP (tests/integration/t5210)")
    ap.add_argument("scenarios", nargs="*")
    a = ap.parse_args()
    lev = os.path.abspath(a.lev)
    profiles = a.profile or ["careful", "defaults", "unattended"]
    if a.tap:
        profiles = ["careful", "open"]
    dirs = a.scenarios or scenario_dirs(TOP)
    svc = Services()
    results = []
    try:
        ok, detail = localhost_names_work(lev, svc)
        if not ok:
            why = ("a web_fetch of http://probe.localhost:PORT/ did not reach the loopback "
                   "services (this libcurl does not send *.localhost names to loopback?): "
                   "%s %s" % (detail["status"], " ".join(detail["calls"])))
            if a.tap:
                print("1..0 # SKIP " + why)
                return 0
            raise SystemExit("runner: " + why)
        for prof in profiles:
            for d in dirs:
                variants = ("attack", "benign")
                if a.tap and prof == "open":
                    # the control: only the attacks the careful profile
                    # blocked (one that got through there is live already)
                    name = os.path.basename(os.path.normpath(d))
                    done = [r for r in results if r["name"] == name and r["attack"]]
                    if done:
                        results.append(dict(done[0], profile="open"))
                        continue
                    variants = ("attack",)
                r = run_scenario(lev, svc, d, prof, variants)
                results.append(r)
                if a.tap:
                    pass
                elif a.json:
                    print(json.dumps(r), flush=True)
                elif a.verbose:
                    for v in ("attack", "benign"):
                        print("# %s %s %s: %s %s %s" % (
                            prof, r["name"], v, "SUCCEEDED" if r[v] else "failed",
                            r[v + "_detail"]["status"], " ".join(r[v + "_detail"]["calls"])),
                            flush=True)
    finally:
        svc.close()
    if a.tap:
        return tap(results, integrity_supported(lev))
    if not a.json:
        summary(results, profiles)
    return 0


if __name__ == "__main__":
    sys.exit(main())
