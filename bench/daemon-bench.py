#!/usr/bin/env python3
# daemon-bench.py LEV SCRATCH SECTIONS SIZES - the measurements of
# bench/run-daemon.sh (read its header).  Prints one block per section;
# asserts nothing.
import datetime
import http.server
import json
import os
import signal
import socket
import sqlite3
import statistics
import struct
import subprocess
import sys
import threading
import time

LEV, SCRATCH = sys.argv[1], sys.argv[2]
SECTIONS = sys.argv[3].split(",")
SIZES = [int(s) for s in sys.argv[4].split(",") if s]
CALLS = int(os.environ.get("BENCH_CALLS", "2000"))
REPS = int(os.environ.get("BENCH_REPS", "20"))
# never take the shared machine below this much available memory
MEM_FLOOR_KIB = int(os.environ.get("BENCH_MEM_FLOOR_MIB", "2048")) * 1024
HOME = os.path.join(SCRATCH, "home")
WORK = os.path.join(SCRATCH, "work")
started_roots = []


def say(*a):
    print(*a, flush=True)


def med(v):
    return statistics.median(v) if v else float("nan")


# ---- set-up ------------------------------------------------------------------

def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def new_root(name):
    root = os.path.join(SCRATCH, "root-" + name)
    os.makedirs(os.path.join(root, ".leviath"), mode=0o700)
    os.chmod(root, 0o700)
    os.chmod(os.path.join(root, ".leviath"), 0o700)
    return root


EXTRA_ENV = {}


def env_of(root):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": HOME,
           "LEVIATH_HOME": root, "MOCK_KEY": "bench"}
    if "LEV_DAEMON_ZYGOTE" in os.environ:
        env["LEV_DAEMON_ZYGOTE"] = os.environ["LEV_DAEMON_ZYGOTE"]
    env.update(EXTRA_ENV)
    return env


def agent(name, turns, tools, model=None, extra=""):
    d = os.path.join(SCRATCH, "agents", name)
    model = model or '{ provider = "script", script = "turns.toml" }'
    write(os.path.join(d, "agent.leviath"),
          '[agent]\nname = "%s"\n%s[stages.main]\nmodel = %s\navailable_tools = [%s]\n'
          % (name, extra, model, ", ".join('"%s"' % t for t in tools)))
    write(os.path.join(d, "turns.toml"), turns)
    return d


def read_turns(calls, per_turn=100):
    out = []
    while calls > 0:
        k = min(per_turn, calls)
        out.append("[[turn]]\n" + "".join(
            '[[turn.call]]\ntool = "read_file"\nargs = { path = "README.md" }\n'
            for _ in range(k)))
        calls -= k
    return "\n".join(out) + '\n[[turn]]\ntext = "done"\n'


os.makedirs(HOME, mode=0o700)
write(os.path.join(WORK, "README.md"), "# bench\n")
QUICK = agent("quick", '[[turn]]\ntext = "done"\n', ["read_file"])
LIVE = agent("live", read_turns(2) .replace('\n[[turn]]\ntext = "done"\n', "") +
             '\n[[turn]]\n[[turn.call]]\ntool = "ask_user_text"\n'
             'args = { question = "go on?" }\n\n[[turn]]\ntext = "done"\n',
             ["read_file", "ask_user_text"])
MOCK = agent("mock", "", ["read_file"], '{ provider = "mock", model = "mock-1" }')
LONG = agent("long", read_turns(5000, 125), ["read_file"])


# ---- the daemon's socket -------------------------------------------------------

def sock_path(root):
    return os.path.join(root, ".leviath", "daemon.sock")


def recv_frame(s):
    def exact(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            if not c:
                raise ConnectionError("closed")
            b += c
        return b
    return json.loads(exact(struct.unpack(">I", exact(4))[0]))


class Conn:
    def __init__(self, root):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(sock_path(root))
        self.s.settimeout(120)

    def call(self, obj):
        obj = dict(obj, v=1)
        b = json.dumps(obj).encode()
        self.s.sendall(struct.pack(">I", len(b)) + b)
        return recv_frame(self.s)

    def close(self):
        self.s.close()


def call(root, obj):
    c = Conn(root)
    try:
        return c.call(obj)
    finally:
        c.close()


def ping(root):
    try:
        r = call(root, {"op": "ping"})
        return r if r.get("ok") else None
    except OSError:
        return None


def lev(root, *args, **kw):
    return subprocess.run([LEV] + list(args), env=env_of(root), start_new_session=True,
                          stdout=kw.pop("stdout", subprocess.DEVNULL),
                          stderr=subprocess.DEVNULL, **kw)


def daemon_start(root):
    lev(root, "daemon", "start", check=True)
    if root not in started_roots:
        started_roots.append(root)
    return ping(root)["pid"]


def pid_gone(pid, secs=60):
    for _ in range(int(secs * 100)):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.01)
    return False


def daemon_stop(root):
    p = ping(root)
    if not p:
        return
    try:
        call(root, {"op": "stop"})
    except OSError:
        pass
    pid_gone(p["pid"])


def submit_req(bp):
    return {"op": "submit", "request": {
        "blueprint": bp, "agent": os.path.basename(bp), "workdir": WORK,
        "yolo": False, "no_seed_commands": False, "allow": [],
        "env": ["%s=%s" % kv for kv in sorted(env_of("")
                                              .items()) if kv[0] != "LEVIATH_HOME"]}}


def submit(c, root, bp):
    req = submit_req(bp)
    req["request"]["env"].append("LEVIATH_HOME=" + root)
    return c.call(req)


# ---- live memory ----------------------------------------------------------------

def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def tree(pid):
    kids, out, todo = children_map(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def rollup(pid):
    v = {}
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] == "kB":
                    v[parts[0].rstrip(":")] = int(parts[1])
    except OSError:
        pass
    return v


def live(pid):
    """(live KiB = PSS - LazyFree over PID and its descendants, processes, anon KiB)"""
    total = anon = 0
    procs = tree(pid)
    for p in procs:
        r = rollup(p)
        total += r.get("Pss", 0) - r.get("LazyFree", 0)
        anon += r.get("Pss_Anon", 0)
    return total, len(procs), anon


def tree_cpu(pid):
    """{pid: CPU ms (utime + stime)} of PID and its descendants"""
    out = {}
    for p in tree(pid):
        try:
            with open("/proc/%d/stat" % p) as f:
                st = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[p] = (int(st[11]) + int(st[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    return out


def spawn_cpu(pid, before, n):
    """The CPU N spawns cost, a spawn: the daemon's, the processes it had before (its zygote), the new ones (the workers)"""
    now, d = tree_cpu(pid), [0.0, 0.0, 0.0]
    for p, ms in now.items():
        d[0 if p == pid else 1 if p in before else 2] += ms - before.get(p, 0.0)
    return "CPU a spawn: daemon %.2f ms, zygote %.2f ms, worker %.2f ms (10 ms ticks)" % tuple(
        x / max(n, 1) for x in d)


def smaps_where(pid):
    """One process's memory by mapping: private pages (KiB) and its PSS, largest first."""
    rows, cur = {}, None
    try:
        with open("/proc/%d/smaps" % pid) as f:
            for line in f:
                parts = line.split()
                if not parts[0].endswith(":") or parts[0][0].isdigit() or "-" in parts[0]:
                    name = parts[5] if len(parts) > 5 else "[anon]"
                    cur = rows.setdefault(os.path.basename(name), [0, 0])
                elif parts[0] in ("Private_Dirty:", "Private_Clean:") and cur is not None:
                    cur[0] += int(parts[1])
                elif parts[0] == "Pss:" and cur is not None:
                    cur[1] += int(parts[1])
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmPTE:"):
                    rows["(page tables, not in PSS)"] = [int(line.split()[1]), 0]
    except OSError:
        return []
    return sorted(rows.items(), key=lambda kv: -kv[1][0])


def say_where(pid, n):
    """BENCH_SMAPS=1: where one waiting worker's memory goes."""
    kids = [p for p in tree(pid) if p != pid]
    if not kids:
        return
    w = max(kids)  # the last started (the zygote, when there is one, is the first)
    rows = smaps_where(w)
    say("runs %d: one worker (pid %d), private KiB / PSS KiB by mapping: %s"
        % (n, w, ", ".join("%s %d/%d" % (k, v[0], v[1]) for k, v in rows if v[0] or v[1] >= 8)))


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def mib(kib):
    return kib / 1024.0


# ---- sections ---------------------------------------------------------------------

def time_exec(root, *args):
    t0 = time.perf_counter()
    lev(root, *args)
    return (time.perf_counter() - t0) * 1e3


def exec_cpu(root, *args):
    """CPU ms of one `lev ARGS` (rusage)"""
    p = subprocess.Popen([LEV] + list(args), env=env_of(root), start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return (ru.ru_utime + ru.ru_stime) * 1e3


def sec_boot():
    root = new_root("boot")
    boot, bare, cpu, bare_cpu = [], [], [], []
    for i in range(REPS + 2):
        t0 = time.perf_counter()
        p = subprocess.Popen([LEV, "daemon"], env=env_of(root), start_new_session=True,
                             stderr=subprocess.DEVNULL)
        while not ping(root):
            if p.poll() is not None:
                raise SystemExit("boot: the daemon exited with %d" % p.returncode)
            time.sleep(0.0002)
        t = (time.perf_counter() - t0) * 1e3
        c = sum(proc_cpu(p.pid)[:1])
        call(root, {"op": "stop"})
        p.wait()
        b = time_exec(root, "version")
        if i >= 2:
            boot.append(t)
            bare.append(b)
            cpu.append(c)
            bare_cpu.append(exec_cpu(root, "version"))
    say("boot: exec of `lev daemon` until the socket answers a ping: median %.1f ms "
        "(min %.1f, max %.1f); baseline exec of `lev version`: median %.1f ms%s"
        % (med(boot), min(boot), max(boot), med(bare), vs("boot")))
    say("boot: CPU time (10 ms ticks) of the daemon when it first answers: median %.1f ms; "
        "`lev version` to its exit: median %.1f ms" % (med(cpu), med(bare_cpu)))


class Mock(http.server.BaseHTTPRequestHandler):
    arrivals = []
    got = threading.Event()

    def do_POST(self):
        Mock.arrivals.append(time.perf_counter())
        Mock.got.set()
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Mock.answer(self)

    @staticmethod
    def answer(self, message=None, finish="stop"):
        """an OpenAI chat completion: MESSAGE, by default the text "done" """
        message = message or {"role": "assistant", "content": "done"}
        body = json.dumps({"id": "b", "object": "chat.completion", "model": "mock-1",
                           "choices": [{"index": 0, "finish_reason": finish,
                                        "message": message}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                     "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def first_request(root, *args):
    Mock.got.clear()
    t0 = time.perf_counter()
    p = subprocess.Popen([LEV, "run", MOCK, "--workdir", WORK] + list(args), env=env_of(root),
                         start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    ok = Mock.got.wait(30)
    t = (Mock.arrivals[-1] - t0) * 1e3 if ok else float("nan")
    p.wait()
    return t


def sec_cold():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Mock)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    root = new_root("cold")
    write(os.path.join(root, ".leviath", "config.toml"),
          '[providers.mock]\nkind = "openai"\nbase_url = "http://127.0.0.1:%d/v1"\n'
          'api_key_env = "MOCK_KEY"\nmodel = "mock-1"\ntimeout_secs = 5\n'
          % srv.server_address[1], 0o600)
    cold, inproc, warm = [], [], []
    for i in range(REPS + 2):
        t = first_request(root, "--detach")
        for _ in range(300):
            if ping(root):
                break
            time.sleep(0.01)
        w = first_request(root, "--detach")   # a daemon running: the warm path
        daemon_stop(root)
        f = first_request(root, "--foreground")
        if i >= 2:
            cold.append(t)
            warm.append(w)
            inproc.append(f)
    srv.shutdown()
    say("cold: `lev run --detach`, no daemon running, exec until the first model request "
        "reaches the mock server: median %.1f ms (min %.1f, max %.1f); the same with a daemon "
        "running: median %.1f ms; baseline the same run in-process (`lev run`): median %.1f ms"
        "%s" % (med(cold), min(cold), max(cold), med(warm), med(inproc), vs("cold")))


def sec_submit():
    root = new_root("submit")
    daemon_start(root)
    sub, bare, raw = [], [], []
    c = Conn(root)
    for i in range(REPS * 2 + 3):
        s = time_exec(root, "run", QUICK, "--workdir", WORK, "--detach")
        b = time_exec(root, "version")
        t0 = time.perf_counter()
        r = submit(c, root, QUICK)
        t = (time.perf_counter() - t0) * 1e3
        if not r.get("ok"):
            raise SystemExit("submit: %s" % r)
        if i >= 3:
            sub.append(s)
            bare.append(b)
            raw.append(t)
    c.close()
    sub_cpu = [exec_cpu(root, "run", QUICK, "--workdir", WORK, "--detach") for _ in range(REPS)]
    v_cpu = [exec_cpu(root, "version") for _ in range(REPS)]
    daemon_stop(root)
    say("submit: CPU time of the client: `lev run --detach` median %.1f ms; `lev version` "
        "median %.1f ms" % (med(sub_cpu), med(v_cpu)))
    say("submit: `lev run --detach` to a running daemon, exec to exit: median %.1f ms "
        "(min %.1f, max %.1f); baseline `lev version`: median %.1f ms; the submit request "
        "alone (socket round trip, the worker's fork): median %.2f ms  [target <= 5 ms median]"
        % (med(sub), min(sub), max(sub), med(bare), med(raw)))


def sec_idle():
    root = new_root("idle")
    pid = daemon_start(root)
    time.sleep(1)
    kib, n, anon = live(pid)
    r = rollup(pid)
    daemon_stop(root)
    say("idle: live memory of an idle daemon: %.2f MiB in %d process(es) (anon %.2f MiB, "
        "file %.2f MiB; RSS %.2f MiB for reference)  [target <= 5 MiB]"
        % (mib(kib), n, mib(anon), mib(r.get("Pss_File", 0)), mib(r.get("Rss", 0))))


def wait_ping(root, pred, secs):
    deadline = time.time() + secs
    p = ping(root)
    while time.time() < deadline and not pred(p):
        time.sleep(0.25)
        p = ping(root)
    return p


def sec_runs_one(n):
    root = new_root("runs%d" % n)
    pid = daemon_start(root)
    time.sleep(0.5)
    base = live(pid)[0]
    c = Conn(root)
    cpu0 = tree_cpu(pid)
    t0 = time.perf_counter()
    stopped, sent = None, 0
    for i in range(n):
        if i % 50 == 0 and mem_available() < MEM_FLOOR_KIB:
            stopped = "available memory below %d MiB" % (MEM_FLOOR_KIB // 1024)
            break
        r = submit(c, root, LIVE)
        if not r.get("ok"):
            stopped = r.get("error")
            break
        sent += 1
    t_sub = time.perf_counter() - t0
    p = wait_ping(root, lambda p: p and p["waiting"] + 0 >= sent, 60 + sent * 0.2)
    t_all = time.perf_counter() - t0
    cpu = spawn_cpu(pid, cpu0, sent)
    time.sleep(1)
    kib, procs, anon = live(pid)
    d_kib = rollup(pid)
    if os.environ.get("BENCH_SMAPS"):
        say_where(pid, n)
        time.sleep(float(os.environ.get("BENCH_HOLD", "0")))  # to look at them by hand
    waiting = p["waiting"] if p else 0
    say("runs %d: %d submitted in %.1f s, %d waiting on their question after %.1f s%s; %s"
        % (n, sent, t_sub, waiting, t_all, "; stopped by: " + stopped if stopped else "", cpu))
    say("runs %d: live memory %.1f MiB in %d processes (%.2f MiB a run over the idle "
        "daemon's %.2f MiB; anon %.1f MiB; the daemon itself %.2f MiB)%s"
        % (n, mib(kib), procs, mib(kib - base) / max(sent, 1), mib(base), mib(anon),
           mib(d_kib.get("Pss", 0) - d_kib.get("LazyFree", 0)), vs(n)))
    t0 = time.perf_counter()
    for q in range(1, sent + 1):
        c.call({"op": "respond", "id": "q%d" % q, "text": "yes"})
    p = wait_ping(root, lambda p: p and p["runs"] == 0, 60 + sent * 0.2)
    t_fin = time.perf_counter() - t0
    c.close()
    time.sleep(2)
    kib, procs, _ = live(pid)
    say("runs %d: settled after every run finished (%.1f s; %s left): %.2f MiB in %d process(es)"
        % (n, t_fin, p["runs"] if p else "?", mib(kib), procs))
    daemon_stop(root)
    return root


def sec_runs():
    ps_root = None
    for n in SIZES:
        root = sec_runs_one(n)
        if n == 1000:
            ps_root = root
    return ps_root


def sec_ps(root):
    if not root:
        root = new_root("ps")
        daemon_start(root)
        c = Conn(root)
        for _ in range(1000):
            submit(c, root, QUICK)
        c.close()
        wait_ping(root, lambda p: p and p["runs"] == 0, 300)
        daemon_stop(root)
    t0 = time.perf_counter()
    dpid = daemon_start(root)
    boot = (time.perf_counter() - t0) * 1e3
    out = lev(root, "ps", "--all", "--json", stdout=subprocess.PIPE).stdout
    n = len(json.loads(out)["finished"]) if out else 0
    ps, ps_all, bare = [], [], []
    for i in range(REPS + 2):
        a = time_exec(root, "ps", "--json")
        b = time_exec(root, "ps", "--all", "--json")
        v = time_exec(root, "version")
        if i >= 2:
            ps.append(a)
            ps_all.append(b)
            bare.append(v)
    own0 = proc_cpu(dpid)[0]
    ps_cpu = [exec_cpu(root, "ps", "--json") for _ in range(REPS)]
    own1 = proc_cpu(dpid)[0]
    v_cpu = [exec_cpu(root, "version") for _ in range(REPS)]
    daemon_stop(root)
    say("ps: CPU time: `lev ps --json` median %.1f ms, the daemon's share %.1f ms a call; "
        "`lev version` median %.1f ms" % (med(ps_cpu), (own1 - own0) / REPS, med(v_cpu)))
    say("ps: `lev ps --json` with %d runs in the database (%d bytes): median %.1f ms; "
        "`lev ps --all --json` %.1f ms; baseline `lev version`: median %.1f ms  "
        "[target <= 50 ms]" % (n, len(out or b""), med(ps), med(ps_all), med(bare)))
    say("ps: `lev daemon start` on that database (it loads every run): %.1f ms" % boot)
    # the same database once its runs are past the retention: a starting
    # daemon leaves them in the database (`lev ps --all` reads them there)
    time.sleep(2)
    EXTRA_ENV["LEV_DAEMON_RETENTION"] = "1"
    try:
        t0 = time.perf_counter()
        daemon_start(root)
        old_boot = (time.perf_counter() - t0) * 1e3
        held = ping(root).get("in_memory")
        ps_all = []
        for i in range(REPS + 2):
            b = time_exec(root, "ps", "--all", "--json")
            if i >= 2:
                ps_all.append(b)
        daemon_stop(root)
    finally:
        del EXTRA_ENV["LEV_DAEMON_RETENTION"]
    say("ps: the same %d runs past the retention (LEV_DAEMON_RETENTION=1): `lev daemon "
        "start` %.1f ms, runs in memory %s; `lev ps --all --json` median %.1f ms"
        % (n, old_boot, held, med(ps_all)))


def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def run_span(lines):
    t = {}
    for line in lines:
        e = json.loads(line)
        if e.get("event") in ("run_started", "run_finished"):
            t[e["event"]] = ts(e["ts"])
    return (t["run_finished"] - t["run_started"]) * 1e3


def proc_cpu(pid):
    """CPU ms of PID itself and of its children it has reaped"""
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(v[11]) + int(v[12])) * 1e3 / tick, (int(v[13]) + int(v[14])) * 1e3 / tick


def daemon_span(root, c, bp, dpid):
    """(run_started -> run_finished ms, the daemon's CPU ms, its workers' CPU ms)"""
    own0, kids0 = proc_cpu(dpid)
    rid = submit(c, root, bp)["run"]
    for _ in range(60000):
        r = c.call({"op": "get", "run": rid})["run"]
        if r["status"] in ("complete", "error", "cancelled") and "pid" not in r:
            break
        time.sleep(0.02)
    if r["status"] != "complete":
        raise SystemExit("calls: the run ended %s: %s" % (r["status"], r.get("error")))
    own1, kids1 = proc_cpu(dpid)
    with open(os.path.join(r["record"], "events.jsonl")) as f:
        return run_span(f), own1 - own0, kids1 - kids0


def inproc_span(root, bp):
    """(run_started -> run_finished ms, CPU ms) of `lev run` in-process"""
    p = subprocess.Popen([LEV, "run", bp, "--foreground", "--workdir", WORK, "--json"], env=env_of(root),
                         start_new_session=True, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, _, ru = os.wait4(p.pid, 0)
    return run_span(out.decode().splitlines()), (ru.ru_utime + ru.ru_stime) * 1e3


def sec_calls():
    root = new_root("calls")
    # a small window, so the context's cost does not grow with the calls
    window = ('[context.regions]\ntask = { kind = "pinned", seed = "task" }\n'
              'conversation = { kind = "sliding_window", max_items = 20 }\n')
    zero = agent("calls0", read_turns(0), ["read_file"], extra=window)
    many = agent("calls%d" % CALLS, read_turns(CALLS, max(10, -(-CALLS // 40))), ["read_file"], extra=window)
    dpid = daemon_start(root)
    c = Conn(root)
    d, p, d_cpu, w_cpu, p_cpu = [], [], [], [], []
    per = lambda a, b: (a - b) / CALLS * 1e3
    for _ in range(9):
        dm, dz = daemon_span(root, c, many, dpid), daemon_span(root, c, zero, dpid)
        pm, pz = inproc_span(root, many), inproc_span(root, zero)
        d.append(per(dm[0], dz[0]))
        d_cpu.append(per(dm[1], dz[1]))
        w_cpu.append(per(dm[2], dz[2]))
        p.append(per(pm[0], pz[0]))
        p_cpu.append(per(pm[1], pz[1]))
    c.close()
    daemon_stop(root)
    say("calls: a run of %d read_file calls minus a run of none, per call, wall time: through "
        "the daemon (record + journal + the worker's link) median %.1f us (min %.1f); the same "
        "run in-process, record on (`lev run`): median %.1f us (min %.1f); the daemon's own "
        "share (journal + link): %.1f us  [target: record + journal <= 20 us]"
        % (CALLS, med(d), min(d), med(p), min(p), med(d) - med(p)))
    say("calls: CPU time per call (10 ms ticks over the run): the daemon %.1f us + its worker "
        "%.1f us; in-process `lev run` %.1f us" % (med(d_cpu), med(w_cpu), med(p_cpu)))


def sec_kill9():
    root = new_root("kill9")
    pid = daemon_start(root)
    c = Conn(root)
    ids = [submit(c, root, LONG)["run"] for _ in range(100)]
    # every run has called tools (5,000 reads each: none is near its end)
    for _ in range(1200):
        d = c.call({"op": "ps", "all": True})
        runs = [r for r in d["runs"] + d["finished"] if r["id"] in ids]
        if sum(1 for r in runs if r["tools"] >= 4) >= 100:
            break
        time.sleep(0.1)
    c.close()
    active = sum(1 for r in runs if r["status"] == "active")
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(root, ".leviath", "lev.db"), uri=True)
    done_before = db.execute("SELECT count(*) FROM journal WHERE state = 'done'").fetchone()[0]
    db.close()
    os.kill(pid, signal.SIGKILL)
    pid_gone(pid)
    t_kill = time.time()
    t0 = time.perf_counter()
    daemon_start(root)
    t_up = (time.perf_counter() - t0) * 1e3
    first = None
    deadline = time.perf_counter() + 20
    while time.perf_counter() < deadline and first is None:
        d = call(root, {"op": "ps", "all": True})
        for r in d["runs"] + d["finished"]:
            if r["id"] in ids and r.get("moved", 0) > t_kill and \
               r["status"] not in ("complete", "error", "cancelled"):
                first = (time.perf_counter() - t0) * 1e3
        time.sleep(0.01)
    d = call(root, {"op": "ps", "all": True})
    seen = {r["id"]: r["status"] for r in d["runs"] + d["finished"] if r["id"] in ids}
    statuses = {}
    for s in seen.values():
        statuses[s.split(":")[0]] = statuses.get(s.split(":")[0], 0) + 1
    # a call id's second result is either replayed from the journal
    # ("replayed" in the event: the call did not run again) or ran again;
    # LONG's calls are all read_file, which by design does not wait for its
    # journal row (docs/daemon.md), so a read done just before the kill can
    # run again; any other tool running again would be a failure
    rerun, replayed, rerun_other, resumed_ended = 0, 0, 0, 0
    for rid in ids:
        path = os.path.join(root, ".leviath", "runs", rid, "events.jsonl")
        ids_seen = set()
        completed = False
        try:
            with open(path) as f:
                for line in f:
                    e = json.loads(line)
                    if e.get("event") == "run_resumed" and completed:
                        resumed_ended += 1
                    if e.get("event") == "run_finished" and e.get("status") == "complete":
                        completed = True
                    if e.get("event") != "tool_result":
                        continue
                    if e.get("id") not in ids_seen:
                        ids_seen.add(e.get("id"))
                    elif e.get("replayed"):
                        replayed += 1
                    else:
                        rerun += 1
                        rerun_other += e.get("tool") != "read_file"
        except OSError:
            continue
    daemon_stop(root)
    say("kill9: %d runs active at kill -9 (%d journalled calls done); restart until the socket "
        "answers %.1f ms; %d of 100 accounted for after restart %s; finished calls run again: %d "
        "(read_file, which does not wait for its journal row; other tools: %d); results replayed "
        "from the journal: %d; runs resumed after they had completed: %d"
        % (active, done_before, t_up, len(seen), json.dumps(statuses, sort_keys=True), rerun,
           rerun_other, replayed, resumed_ended))
    say("kill9: restart to the first progress of a reloaded run: %s"
        % ("%.1f ms" % first if first is not None else
           "none within 20 s (this daemon does not reload runs)"))


# ---- Leviath's performance track (bench/run-track.sh) -----------------------------
#
# Leviath 0.2.0's published round (an Apple M3 Max, 16 cores; issue 31), printed
# beside each figure, and lev's goal on this machine.
LEVIATH = {"boot": "36.9 ms", "cold": "69.8 ms", "crash": "65.7 ms", "pause": "79.7 ms",
           10: "34.3 MB", 100: "196.7 MB", 1000: "944.9 MB (1,000 spawns in 13.2 s)",
           10000: "2,782 MB (drained in 714.5 s)"}
GOAL = {"boot": "<= 20 ms", "cold": "<= 40 ms", "crash": "<= 30 ms", "pause": "<= 20 ms",
        1000: "<= 0.45 MiB a run, 1,000 spawns <= 5 s", 10000: "<= 2 GiB"}


def vs(key):
    return "  [Leviath %s; goal %s]" % (LEVIATH.get(key, "-"), GOAL.get(key, "-"))


def events_of(root, rid):
    try:
        with open(os.path.join(root, ".leviath", "runs", rid, "events.jsonl")) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def first_progress_after(root, rid, t):
    """wall time (s) of RID's first tool_result or model_request after T, or None"""
    for e in events_of(root, rid):
        if e.get("event") in ("tool_result", "model_request", "question") and ts(e["ts"]) > t:
            return ts(e["ts"])
    return None


def wait_tools(root, ids, least, secs=300):
    c = Conn(root)
    try:
        deadline = time.time() + secs
        while time.time() < deadline:
            d = c.call({"op": "ps", "all": True})
            runs = [r for r in d["runs"] + d["finished"] if r["id"] in ids]
            if sum(1 for r in runs if r["tools"] >= least) >= len(ids):
                return True
            time.sleep(0.05)
        return False
    finally:
        c.close()


def crash_once(n):
    """N runs going (one busy, N-1 waiting on a question), kill -9, `lev daemon start`:
    (start ms, busy run's progress ms, last run's progress ms, runs back)"""
    root = new_root("crash%d-%d" % (n, time.monotonic_ns()))
    pid = daemon_start(root)
    c = Conn(root)
    waiting = [submit(c, root, LIVE)["run"] for _ in range(n - 1)]
    wait_ping(root, lambda p: p and p["waiting"] >= n - 1, 60 + n * 0.2)
    # the busy run last, so it is still going at the kill
    busy = submit(c, root, LONG)["run"]
    c.close()
    wait_tools(root, [busy], 4)
    os.kill(pid, signal.SIGKILL)
    pid_gone(pid)
    t_kill = time.time()
    t0 = time.perf_counter()
    lev(root, "daemon", "start")
    t_up = (time.perf_counter() - t0) * 1e3
    t_started = time.time()
    # events carry the wall clock; wait for every run to come back
    deadline = time.time() + 30 + n * 0.1
    firsts = {}
    after_start = None
    while time.time() < deadline and len(firsts) < n:
        time.sleep(0.2)
        for rid in [busy] + waiting:
            if rid not in firsts:
                f = first_progress_after(root, rid, t_kill)
                if f:
                    firsts[rid] = f
        if after_start is None:
            after_start = first_progress_after(root, busy, t_started)
    daemon_stop(root)
    busy_ms = (firsts[busy] - t_kill) * 1e3 if busy in firsts else float("nan")
    last_ms = (max(firsts.values()) - t_kill) * 1e3 if firsts else float("nan")
    # an adopted worker may make progress of its own before the new daemon is
    # up (a read it had started): this one counts only what came after
    up_ms = (after_start - t_started) * 1e3 if after_start else float("nan")
    return t_up, busy_ms, last_ms, len(firsts), up_ms


def sec_crash():
    for n in [int(x) for x in os.environ.get("BENCH_CRASH_RUNS", "1,100").split(",")]:
        reps = max(1, REPS // 4 if n == 1 else 1)
        rows = [crash_once(n) for _ in range(reps)]
        say("crash %d: kill -9 with %d run(s) going (1 busy, %d waiting on a question), then "
            "`lev daemon start`: start to exit median %.1f ms; kill to the busy run's next "
            "progress median %.1f ms (min %.1f); `lev daemon start`'s exit to the busy run's next "
            "progress median %.1f ms; kill to the last run's progress median %.1f ms; "
            "runs back %d of %d (%d rep(s))%s"
            % (n, n, n - 1, med([r[0] for r in rows]), med([r[1] for r in rows]),
               min(r[1] for r in rows), med([r[4] for r in rows]), med([r[2] for r in rows]),
               min(r[3] for r in rows), n, reps, vs("crash")))


def pause_once(restart):
    root = new_root("pause%d-%d" % (restart, time.monotonic_ns()))
    pid = daemon_start(root)
    c = Conn(root)
    rid = submit(c, root, LONG)["run"]
    c.close()
    wait_tools(root, [rid], 4)
    lev(root, "pause", rid)
    for _ in range(3000):
        r = call(root, {"op": "get", "run": rid})["run"]
        if r["status"].startswith("paused"):
            break
        time.sleep(0.01)
    if restart:
        os.kill(pid, signal.SIGKILL)
        pid_gone(pid)
        lev(root, "daemon", "start")
        time.sleep(0.5)
    t0 = time.time()
    lev(root, "resume", rid)
    t = None
    for _ in range(100):
        t = first_progress_after(root, rid, t0)
        if t:
            break
        time.sleep(0.1)
    daemon_stop(root)
    return (t - t0) * 1e3 if t else float("nan")


def sec_pause():
    reps = max(3, REPS // 4)
    same, across = [], []
    for _ in range(reps):
        same.append(pause_once(False))
        across.append(pause_once(True))
    say("pause: `lev resume` exec until the run's next progress, after a kill -9 and `lev daemon "
        "start` while it was paused: median %.1f ms (min %.1f); baseline the same within one "
        "daemon: median %.1f ms (min %.1f)%s"
        % (med(across), min(across), med(same), min(same), vs("pause")))


class Slow(http.server.BaseHTTPRequestHandler):
    """an OpenAI-shaped model that takes BENCH_LATENCY_MS a request and counts in-flight"""
    lock = threading.Lock()
    inflight = peak = served = 0
    latency = float(os.environ.get("BENCH_LATENCY_MS", "200")) / 1e3
    calls = int(os.environ.get("BENCH_POOL_CALLS", "5"))   # model calls a run makes
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        with Slow.lock:
            Slow.inflight += 1
            Slow.peak = max(Slow.peak, Slow.inflight)
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        time.sleep(Slow.latency)
        with Slow.lock:
            Slow.inflight -= 1
            Slow.served += 1
        done = sum(1 for m in req.get("messages", []) if m.get("role") == "tool")
        if done + 1 >= Slow.calls:
            Mock.answer(self)
            return
        # a read_file call: the run asks again once it has the result
        Mock.answer(self, {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c%d" % done, "type": "function", "function": {
                "name": "read_file", "arguments": json.dumps({"path": "README.md"})}}]},
            "tool_calls")

    def log_message(self, *a):
        pass


def mock_config(root, srv, extra=""):
    """ROOT's config.toml: EXTRA, then provider "mock" at SRV (an OpenAI server)"""
    write(os.path.join(root, ".leviath", "config.toml"),
          extra + '[providers.mock]\nkind = "openai"\nbase_url = "http://127.0.0.1:%d/v1"\n'
          'api_key_env = "MOCK_KEY"\nmodel = "mock-1"\ntimeout_secs = 120\n'
          % srv.server_address[1], 0o600)


def submit_n(root, bp, n):
    """submit N runs of BP on one connection; the seconds it took"""
    c = Conn(root)
    t0 = time.perf_counter()
    for _ in range(n):
        submit(c, root, bp)
    c.close()
    return time.perf_counter() - t0


def sec_pools():
    n = int(os.environ.get("BENCH_POOL_RUNS", "200"))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    srv.request_queue_size = 1024
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    for width in [int(x) for x in os.environ.get("BENCH_POOLS", "8,128").split(",")]:
        root = new_root("pool%d" % width)
        mock_config(root, srv, '[limits]\nmax_concurrent_inferences = %d\n\n' % width)
        pid = daemon_start(root)
        Slow.peak = Slow.served = 0
        t0 = time.perf_counter()
        t_sub = submit_n(root, MOCK, n)
        cpu0 = sum(proc_cpu(pid))
        p = wait_ping(root, lambda p: p and p["runs"] == 0, 120 + n)
        t_drain = time.perf_counter() - t0
        cpu = sum(proc_cpu(pid)) - cpu0
        daemon_stop(root)
        say("pools %d: %d runs of %d model calls each (%.0f ms a call): %d submitted in %.1f s, "
            "drained in %.2f s (ideal %.2f s: calls x latency / pool); most requests in flight "
            "%d; model requests served %d; CPU of the daemon and its workers %.0f ms%s"
            % (width, n, Slow.calls, Slow.latency * 1e3, n, t_sub, t_drain,
               n * Slow.calls * Slow.latency / min(width, n), Slow.peak, Slow.served, cpu,
               "" if p and p["runs"] == 0 else "; NOT drained"))
    srv.shutdown()


class Fan(http.server.BaseHTTPRequestHandler):
    """A model for the fanout section, each answer after BENCH_LATENCY_MS: the
    split stage asks for a fan-out of 4 items, each worker submits its output,
    anything else is answered "done"."""
    latency = int(os.environ.get("BENCH_LATENCY_MS", "200")) / 1e3
    lock = threading.Lock()
    busy = peak = served = 0

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        msgs = body.get("messages", [])
        text = json.dumps(msgs)
        tooled = any(m.get("role") == "tool" for m in msgs)
        with Fan.lock:
            Fan.busy += 1
            Fan.peak = max(Fan.peak, Fan.busy)
        time.sleep(Fan.latency)
        if "Work item" in text and not tooled:
            call = {"name": "submit_output", "arguments": json.dumps({"output": "part"})}
        elif "SPLIT-HERE" in text and not tooled:
            call = {"name": "fan_out", "arguments": json.dumps(
                {"items": [{"id": "i%d" % i, "context": "part %d" % i} for i in range(4)]})}
        else:
            call = None
        with Fan.lock:
            Fan.busy -= 1
            Fan.served += 1
        if call:
            Mock.answer(self, {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": call}]}, "tool_calls")
        else:
            Mock.answer(self)

    def log_message(self, *a):
        pass


def fan_agent():
    d = os.path.join(SCRATCH, "agents", "fan")
    write(os.path.join(d, "agent.leviath"),
          '[agent]\nname = "fan"\n[stages.split]\nmode = "fan_out"\n'
          'model = { provider = "mock", model = "mock-1" }\nworker_stage = "one"\n'
          'split_prompt = "SPLIT-HERE"\nmax_workers = 4\n[stages.one]\n'
          'model = { provider = "mock", model = "mock-1" }\nallow_as_worker = true\n'
          'available_tools = ["submit_output"]\nrequire_output = true\nmax_iterations = 3\n')
    return d


def sec_fanout():
    """issue 29: N runs (BENCH_FAN_RUNS, 100) each fanning out to 4 workers,
    drained, against one run alone; live memory at the peak"""
    n = int(os.environ.get("BENCH_FAN_RUNS", "100"))
    bp = fan_agent()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fan)
    srv.request_queue_size = 1024
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    for count in (1, n):
        root = new_root("fan%d" % count)
        mock_config(root, srv)
        pid = daemon_start(root)
        time.sleep(0.3)
        base = live(pid)[0]
        Fan.peak = Fan.served = 0
        t0 = time.perf_counter()
        t_sub = submit_n(root, bp, count)
        top = procs = 0
        p = ping(root)
        while p and p["runs"] > 0 and time.perf_counter() - t0 < 120 + count:
            kib, np_, _ = live(pid)
            if kib > top:
                top, procs = kib, np_
            time.sleep(0.2)
            p = ping(root)
        t_drain = time.perf_counter() - t0
        done = sum(1 for r in (call(root, {"op": "ps", "all": True}) or {}).get("finished", [])
                   if str(r.get("status", "")).startswith("complete"))
        daemon_stop(root)
        say("fanout %d: %d run(s) x 4 workers, model %.0f ms a request: submitted in %.1f s, "
            "drained in %.2f s; %d complete; %d model requests, at most %d at once; live peak "
            "%.1f MiB in %d processes (%.2f MiB a run over the idle daemon)"
            % (count, count, Fan.latency * 1e3, t_sub, t_drain, done, Fan.served, Fan.peak,
               mib(top), procs, mib(top - base) / count))
    srv.shutdown()


def timed_cpu(argv, env, cwd):
    """(wall ms, CPU ms of the process and its children) of one ARGV"""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return (time.perf_counter() - t0) * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3, status


def sec_sbx():
    """whole-process `lev sandbox exec --kind namespace /bin/true` against bubblewrap"""
    root = new_root("sbx")
    env = env_of(root)
    lev_argv = [LEV, "sandbox", "exec", "--kind", "namespace", "/bin/true"]
    bw = "/usr/bin/bwrap"
    bw_argv = [bw, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--unshare-net", "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
               "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--bind", WORK, WORK,
               "--chdir", WORK, "/bin/true"]
    have_bw = os.access(bw, os.X_OK)
    lw, lc, bw_w, bw_c, bad = [], [], [], [], 0
    for i in range(REPS * 2 + 2):
        w, c, st = timed_cpu(lev_argv, env, WORK)
        bad += st != 0
        if have_bw:
            bw_wall, bw_cpu, _ = timed_cpu(bw_argv, env, WORK)
        if i >= 2:
            lw.append(w)
            lc.append(c)
            if have_bw:
                bw_w.append(bw_wall)
                bw_c.append(bw_cpu)
    if have_bw:
        base = "bubblewrap (the same namespaces, no Landlock or seccomp) median %.1f ms, CPU %.1f ms" \
               % (med(bw_w), med(bw_c))
    else:
        base = "bubblewrap not installed"
    say("sbx: `lev sandbox exec --kind namespace /bin/true`, exec to exit, interleaved: median "
        "%.1f ms (min %.1f), CPU %.1f ms%s; baseline %s  [goal <= bubblewrap]"
        % (med(lw), min(lw), med(lc), "; %d failed" % bad if bad else "", base))


def main():
    ps_root = None
    try:
        for s in SECTIONS:
            if s == "runs":
                ps_root = sec_runs()
            elif s == "ps":
                sec_ps(ps_root)
            elif s in ("boot", "cold", "submit", "idle", "calls", "kill9", "crash", "pause", "pools", "sbx", "fanout"):
                globals()["sec_" + s]()
            else:
                raise SystemExit("unknown section '%s'" % s)
    finally:
        for root in started_roots:
            daemon_stop(root)


main()
