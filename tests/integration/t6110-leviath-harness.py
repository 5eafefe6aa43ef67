#!/usr/bin/env python3
"""Drive lev the way Leviath's benchmark harness drives Leviath (its commands
and files; this is our own code): an isolated LEVIATH_HOME with the agent
installed under .leviath/agents, `lev daemon` in its own session, readiness
by `lev ps --json`, spawns with `lev run AGENT --yolo --json --count N
--workdir W --task T`, per-run truth from runs/<id>/meta.json polled on
disk, pause/resume/cancel by run id, a daemon killed with SIGKILL through
its daemon.pid and `lev daemon start`, and the interrupted run going on.

Usage: t6110-leviath-harness.py LEV HOME.  Prints one line per check and
exits 1 at the first that fails.  No timing assertion: every wait is
bounded (a hang fails), never measured."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

LEV, HOME = sys.argv[1], Path(sys.argv[2])
ROOT = HOME / ".leviath"
RUNS = ROOT / "runs"
WORK = HOME / "work"
TERMINAL = {"complete", "error", "cancelled", "complete_interactive"}
WAIT = float(os.environ.get("LEV_TEST_WAIT", "120"))
ENV = dict(os.environ, LEVIATH_HOME=str(HOME), LEVIATH_SKIP_DOTENV="1")
step = 0


def check(cond, what, detail=""):
    global step
    step += 1
    if not cond:
        print(f"not ok {step} - {what}: {detail}")
        sys.exit(1)
    print(f"ok {step} - {what}")


def lev(*args, check_rc=True):
    out = subprocess.run([LEV, *args], env=ENV, capture_output=True, text=True, timeout=300,
                         stdin=subprocess.DEVNULL)
    if check_rc and out.returncode != 0:
        check(False, "lev " + " ".join(args), out.stderr.strip()[:600])
    return out


def meta(run_id):
    try:
        return json.loads((RUNS / run_id / "meta.json").read_text())
    except (OSError, ValueError):
        return None


def wait_meta(run_id, pred, what):
    end = time.time() + WAIT
    m = None
    while time.time() < end:
        m = meta(run_id)
        if m and pred(m):
            return m
        time.sleep(0.05)
    check(False, what, f"meta.json never matched; last: {m}")


def start_daemon():
    d = subprocess.Popen([LEV, "daemon"], env=ENV, stdout=subprocess.DEVNULL,
                         stderr=open(ROOT / "daemon.log", "ab"), start_new_session=True)
    end = time.time() + WAIT
    while time.time() < end:
        if d.poll() is not None:
            check(False, "lev daemon starts", f"exited {d.returncode}")
        if lev("ps", "--json", check_rc=False).returncode == 0:
            return d
        time.sleep(0.05)
    check(False, "lev daemon answers lev ps --json", "never")


def spawn(agent, task, count=None):
    args = ["run", agent, "--task", task, "--json", "--workdir", str(WORK), "--yolo"]
    if count:
        args += ["--count", str(count)]
    return json.loads(lev(*args).stdout)


def daemon_pid():
    return int((ROOT / "daemon.pid").read_text().split()[0])


# -- the daemon, its pid file, readiness ------------------------------------
daemon = start_daemon()
check(daemon_pid() == daemon.pid, "daemon.pid names the daemon", (ROOT / "daemon.pid").read_text())

# -- a batch: --json --count N is an array of spawn objects ------------------
batch = spawn("quick", "bench quick", count=3)
check(isinstance(batch, list) and len(batch) == 3, "--json --count 3 prints an array of 3", batch)
for o in batch:
    check(set(o) == {"run_id", "blueprint_path", "workdir", "yolo"} and o["yolo"] is True and
          o["workdir"] == str(WORK) and o["blueprint_path"] == str(ROOT / "agents" / "quick"),
          "a spawn object has run_id, blueprint_path, workdir, yolo", o)
check(len({o["run_id"] for o in batch}) == 3, "each run of the batch has its own id", batch)
for o in batch:
    m = wait_meta(o["run_id"], lambda m: m.get("status") in TERMINAL, "a batch run ends")
    check(m["status"] == "complete" and m["tool_calls"] == 1 and m["iteration"] >= 2 and
          m["current_stage"] == "main" and m["run_id"] == o["run_id"] and
          isinstance(m["started_at"], int) and isinstance(m["updated_at"], int) and
          isinstance(m["last_progress_at"], int),
          "meta.json says complete, with Leviath's fields", m)
statuses = {}
for d in RUNS.iterdir():
    s = json.loads((d / "meta.json").read_text()).get("status")
    statuses[s] = statuses.get(s, 0) + 1
check(statuses == {"complete": 3}, "the runs dir counts three complete runs", statuses)
out = lev("result", batch[0]["run_id"], "--json")
check("quick done" in out.stdout, "lev result --json has the answer", out.stdout)

# -- pause, resume, cancel, read back from meta.json -------------------------
slow = spawn("slow", "bench pause")
check(isinstance(slow, dict) and set(slow) == {"run_id", "blueprint_path", "workdir", "yolo"},
      "--json without --count prints one object", slow)
rid = slow["run_id"]
wait_meta(rid, lambda m: m["status"] == "running" and m["iteration"] >= 1, "the slow run runs")
lev("pause", rid)
m = wait_meta(rid, lambda m: m["status"] == "paused", "lev pause: meta.json says paused")
ps = json.loads(lev("ps", "--json").stdout)
row = [r for r in ps["runs"] if r["run_id"] == rid]
check(len(row) == 1 and row[0]["status"] == "paused" and "tool_calls" in row[0] and
      "last_progress_at" in row[0] and "title" in row[0],
      "ps --json carries run_id, tool_calls, last_progress_at, title", row)
lev("resume", rid)
wait_meta(rid, lambda m: m["status"] in ("running", "complete"), "lev resume: it runs again")
lev("cancel", rid)
m = wait_meta(rid, lambda m: m["status"] in TERMINAL, "lev cancel ends it")
check(m["status"] == "cancelled", "meta.json says cancelled", m)

# -- kill -9 the daemon mid-run; lev daemon start; the run goes on ----------
rid = spawn("slow", "bench crash")["run_id"]
pre_m = wait_meta(rid, lambda m: m["status"] == "running" and m["iteration"] >= 2,
                  "the crash run is mid-flight")
pre = (pre_m["iteration"], pre_m["updated_at"])
pid = daemon_pid()
os.killpg(os.getpgid(pid), signal.SIGKILL)
daemon.wait()
check(daemon.returncode == -signal.SIGKILL, "the daemon died of SIGKILL", daemon.returncode)
boot = lev("daemon", "start")
check(boot.returncode == 0, "lev daemon start boots a new daemon", boot.stderr)
check(daemon_pid() != pid, "daemon.pid names the new daemon", (ROOT / "daemon.pid").read_text())
m = wait_meta(rid, lambda m: (m["iteration"], m["updated_at"]) > pre and
              m["status"] in ("running", "complete"), "the interrupted run makes progress")
m = wait_meta(rid, lambda m: m["status"] in TERMINAL, "the interrupted run ends")
check(m["status"] == "complete" and m["tool_calls"] >= 4, "the interrupted run completes", m)

# -- stop by the pid file, as the harness does -------------------------------
pid = daemon_pid()
os.kill(pid, signal.SIGTERM)
end = time.time() + WAIT
while time.time() < end and os.path.exists(f"/proc/{pid}"):
    time.sleep(0.05)
check(not os.path.exists(f"/proc/{pid}"), "SIGTERM to daemon.pid stops the daemon", pid)
check(not (ROOT / "daemon.pid").exists(), "a stopped daemon leaves no daemon.pid")
print("1..%d" % step)
