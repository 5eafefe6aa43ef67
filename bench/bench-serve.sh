#!/bin/bash
# bench/bench-serve.sh - what lev serve costs:
#
#   1. GET /api/runs?limit=1000 with 1,000 runs in the daemon's store (one
#      real run's row copied 999 times): the median and worst of 20 requests;
#   2. an event's way to a WebSocket and to an SSE client: the time from an
#      approval's POST to the daemon's `answered` frame arriving on each (an
#      upper bound: it includes the POST's own round trip), over 10 asks;
#      and to a client of every run's stream (GET /ws, the daemon's watch);
#   3. 100 concurrent WebSocket followers of one run: the resident memory of
#      lev serve and of the daemon, before and with them.
#
#   bench/bench-serve.sh [BUILD_DIR]     (default build)
#
# BENCH_OLD=1: the 999 copies are old runs (no longer in the daemon's
# memory), so each page is read from lev.db.  BENCH_BASE_LEV=PATH: another
# build's lev serve on the same daemon and store, its pages compared byte
# for byte with this build's and its requests alternated with them.
#
# Goals (issue 30): (1) <= 20 ms, (2) <= 5 ms, (3) <= 10 MiB.  Figures are
# printed, never asserted.  Needs python3, curl and sqlite3.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
ninja -C "$build" src/lev/lev >/dev/null
lev="$build/src/lev/lev"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/lev-bench-serve.XXXXXX")
export HOME="$scratch/home" LEVIATH_HOME="$scratch/lh"
mkdir -p "$HOME" "$LEVIATH_HOME/.leviath" "$scratch/work"
chmod 700 "$HOME" "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
token=tok-bench-0123456789abcdef
spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	"$lev" daemon stop >/dev/null 2>&1 || true
	rm -rf "$scratch"
}
trap cleanup EXIT

# an agent that asks to run ASKS shell commands, one a turn, then answers
asks=10
mkdir -p "$scratch/bp"
cat >"$scratch/bp/agent.leviath" <<'EOT'
[agent]
name = "bench"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOT
{
	for i in $(seq "$asks"); do
		printf '[[turn]]\n[[turn.call]]\ntool = "shell"\nargs = { command = "echo %s >> n.txt" }\n' "$i"
	done
	printf '[[turn]]\ntext = "done"\n'
} >"$scratch/bp/turns.toml"

"$lev" daemon start >/dev/null
LEVIATH_API_TOKEN=$token "$lev" serve --port 0 2>"$scratch/serve.log" >/dev/null &
spid=$!
for _ in $(seq 100); do
	port=$(sed -n 's|^lev serve: listening on .*:\([0-9]*\)/$|\1|p' "$scratch/serve.log")
	[ -n "$port" ] && break
	sleep 0.1
done

python3 - "$port" "$token" "$scratch" "$lev" "$spid" "$asks" <<'PY'
import json, os, socket, sqlite3, statistics, subprocess, sys, threading, time, urllib.request
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(sys.argv[4])), "..", "..", "..", "tests", "helpers"))
port, token, scratch, lev, spid, asks = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
base = f"http://127.0.0.1:{port}"
H = {"Authorization": "Bearer " + token}

def api(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, headers=H,
                                 data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(req) as r:
        return json.load(r)

def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0

def daemon_pid():
    import re
    out = subprocess.run([lev, "daemon", "status"], capture_output=True, text=True).stdout
    m = re.search(r"^running: pid (\d+),", out, re.M)
    return int(m.group(1)) if m else None

# --- 2 and 3 need a run that waits: spawn it
run = api("POST", "/api/agents", {"blueprint": scratch + "/bp", "workdir": scratch + "/work"})["run_id"]

def pending():
    for _ in range(600):
        p = api("GET", f"/api/agents/{run}/interaction")["pending"]
        if p:
            return p
        time.sleep(0.05)
    raise SystemExit("the run never asked")

# --- 3: 100 WebSocket followers
import wsclient  # noqa: E402  (tests/helpers: the test's own client)
class A: pass
def ws_open(path):
    a = A(); a.url = f"ws://127.0.0.1:{port}{path}?token={token}"; a.origin = None; a.timeout = 60; a.cacert = None
    import io, contextlib
    with contextlib.redirect_stdout(io.StringIO()):
        s, rest = wsclient.handshake(a)
    return s, rest

pending()
dpid = daemon_pid()
time.sleep(0.5)
before = (rss(spid), rss(dpid) if dpid else 0.0)
socks = []
for _ in range(100):
    s, _rest = ws_open(f"/ws/agents/{run}")
    socks.append(s)
drain = threading.Event()
def reader(s):
    s.settimeout(1)
    while not drain.is_set():
        try:
            if not s.recv(65536):
                return
        except socket.timeout:
            pass
        except OSError:
            return
threads = [threading.Thread(target=reader, args=(s,), daemon=True) for s in socks]
for t in threads: t.start()
time.sleep(2)
with_ = (rss(spid), rss(dpid) if dpid else 0.0)
drain.set()
for s in socks: s.close()
print(f"3. 100 WebSocket followers: lev serve RSS {before[0]:.1f} -> {with_[0]:.1f} MiB "
      f"(+{with_[0]-before[0]:.1f}); daemon RSS {before[1]:.1f} -> {with_[1]:.1f} MiB (+{with_[1]-before[1]:.1f})")

# --- 2: an event to a WebSocket and to an SSE client
ws, rest = ws_open(f"/ws/agents/{run}")
wr = wsclient.Reader(ws, rest)
sse = socket.create_connection(("127.0.0.1", int(port)))
sse.sendall(f"GET /api/runs/{run}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
wsa, rest_a = ws_open("/ws")
wra = wsclient.Reader(wsa, rest_a)
got = {"ws": [], "sse": [], "all": []}
def ws_loop(rd, key):
    while True:
        try:
            fin, op, data = rd.frame()
        except Exception:
            return
        if op == 1 and json.loads(data).get("op") == "answered" and \
                json.loads(data).get("run_id", run) == run:
            got[key].append(time.monotonic())
def sse_loop():
    buf = b""
    while True:
        try:
            c = sse.recv(65536)
        except OSError:
            return
        if not c:
            return
        buf += c
        while b"event: answered" in buf:
            got["sse"].append(time.monotonic())
            buf = buf[buf.index(b"event: answered") + 15:]
threading.Thread(target=ws_loop, args=(wr, "ws"), daemon=True).start()
threading.Thread(target=ws_loop, args=(wra, "all"), daemon=True).start()
threading.Thread(target=sse_loop, daemon=True).start()
time.sleep(1)
ws_ms, sse_ms, all_ms, post_ms = [], [], [], []
for i in range(asks):
    p = pending()
    n = len(got["ws"]), len(got["sse"]), len(got["all"])
    t0 = time.monotonic()
    api("POST", f"/api/agents/{run}/interaction", {"request": p["id"], "answer": "approve", "digest": p["digest"]})
    post_ms.append((time.monotonic() - t0) * 1000)
    for _ in range(2000):
        if len(got["ws"]) > n[0] and len(got["sse"]) > n[1] and len(got["all"]) > n[2]:
            break
        time.sleep(0.001)
    ws_ms.append((got["ws"][-1] - t0) * 1000)
    all_ms.append((got["all"][-1] - t0) * 1000)
    sse_ms.append((got["sse"][-1] - t0) * 1000)
print(f"2. approval POST -> 'answered' frame, median (worst) of {asks}: WebSocket "
      f"{statistics.median(ws_ms):.1f} ({max(ws_ms):.1f}) ms, SSE {statistics.median(sse_ms):.1f} "
      f"({max(sse_ms):.1f}) ms; the POST's own round trip {statistics.median(post_ms):.1f} ms")
print(f"   every run's stream (GET /ws): {statistics.median(all_ms):.1f} ({max(all_ms):.1f}) ms")

# --- 1: 1,000 runs
for _ in range(600):
    if api("GET", f"/api/agents/{run}/result").get("status") not in (None, "running", "waiting"):
        break
    time.sleep(0.05)
subprocess.run([lev, "daemon", "stop"], capture_output=True)
time.sleep(1)
db = sqlite3.connect(os.path.join(os.environ["LEVIATH_HOME"], ".leviath", "lev.db"))
cols = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
sel = ", ".join("printf('bench-%04d', n)" if c == "id" else
                "json_set(doc, '$.id', printf('bench-%04d', n))" if c == "doc" else
                "json_set(summary, '$.id', printf('bench-%04d', n), '$.run_id', printf('bench-%04d', n))"
                if c == "summary" else
                # BENCH_OLD=1: the copies ended long ago, so the daemon keeps them in lev.db only
                "0" if c == "updated" and os.environ.get("BENCH_OLD") == "1" else c for c in cols)
db.execute(f"WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 999) "
           f"INSERT INTO runs ({', '.join(cols)}) SELECT {sel} FROM k, runs WHERE runs.id = ?", (run,))
db.commit()
total = db.execute("SELECT count(*) FROM runs").fetchone()[0]
db.close()
subprocess.run([lev, "daemon", "start"], capture_output=True)
api("GET", "/api/runs?limit=1")
def cpu_ms(pid):
    # utime + stime of PID, in ms: what a request costs whatever else the machine runs
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000 / os.sysconf("SC_CLK_TCK")
dpid = daemon_pid()
cpu0 = (cpu_ms(spid), cpu_ms(dpid))
ms = []
for _ in range(20):
    t0 = time.monotonic()
    items = api("GET", "/api/runs?limit=1000")["items"]
    ms.append((time.monotonic() - t0) * 1000)
cpu1 = (cpu_ms(spid), cpu_ms(dpid))
t0 = time.monotonic()
subprocess.run([lev, "ps", "--all", "--json"], capture_output=True)
ps_ms = (time.monotonic() - t0) * 1000
print(f"   (beside it: 'lev ps --all --json', the daemon's own page plus a process start, {ps_ms:.1f} ms)")
print(f"1. GET /api/runs?limit=1000 with {total} runs ({len(items)} in the page): median "
      f"{statistics.median(ms):.1f} ms, worst {max(ms):.1f} ms over 20; CPU a request: lev serve "
      f"{(cpu1[0]-cpu0[0])/20:.1f} ms, the daemon {(cpu1[1]-cpu0[1])/20:.1f} ms")

# BENCH_BASE_LEV=PATH: a second lev serve, another build's, on the same daemon and store:
# both pages compared byte for byte (whole and walked 100 at a time), then the two
# servers' requests alternated, 20 each
other = os.environ.get("BENCH_BASE_LEV")
if other:
    import re
    log = open(os.path.join(scratch, "serve-base.log"), "w+")
    bp = subprocess.Popen([other, "serve", "--port", "0"], stdout=subprocess.DEVNULL, stderr=log,
                          env=dict(os.environ, LEVIATH_API_TOKEN=token))
    for _ in range(100):
        log.seek(0)
        m = re.search(r"listening on .*:(\d+)/$", log.read(), re.M)
        if m:
            break
        time.sleep(0.1)
    def raw(b, path):
        req = urllib.request.Request(b + path, headers=H)
        with urllib.request.urlopen(req) as r:
            return r.read()
    def walk(b):
        out, q = [], "?limit=100"
        while True:
            t = raw(b, "/api/runs" + q)
            out.append(t)
            n = json.loads(t)["next_cursor"]
            if n is None:
                return out
            q = "?limit=100&cursor=" + n
    ob = f"http://127.0.0.1:{m.group(1)}"
    same = raw(base, "/api/runs?limit=1000") == raw(ob, "/api/runs?limit=1000")
    pages = walk(base)
    same_pages = pages == walk(ob)
    print(f"   this build's pages and {other}'s: limit=1000 {'identical' if same else 'DIFFER'}, "
          f"{len(pages)} pages of 100 {'identical' if same_pages else 'DIFFER'}")
    ms = {base: [], ob: []}
    cpu = {base: 0.0, ob: 0.0}
    for _ in range(20):
        for b, pid in ((base, spid), (ob, bp.pid)):
            c0 = cpu_ms(pid)
            t0 = time.monotonic()
            raw(b, "/api/runs?limit=1000")
            ms[b].append((time.monotonic() - t0) * 1000)
            cpu[b] += cpu_ms(pid) - c0
    for name, b in (("this build", base), ("base " + other, ob)):
        print(f"   alternated, {name}: median {statistics.median(ms[b]):.1f} ms, worst "
              f"{max(ms[b]):.1f} ms over 20; CPU a request in lev serve {cpu[b]/20:.1f} ms")
    bp.terminate()
    bp.wait()
PY
