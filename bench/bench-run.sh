#!/bin/bash
# bench/bench-run.sh - what `lev run` costs, with the script provider (no model):
#
#   1. time from `lev run` start to the first tool call executed (read_file),
#      beside the start-up of `lev version` (the bare process) in the same run;
#   2. peak RSS of a run holding a ~100k-token context (~400 KB of file text
#      in a 128k-token window), beside the peak RSS of `lev version`;
#   3. the per-call overhead of every gate (no sandbox) against calling the
#      tool directly, in the same run (bench-gates, a C program linking liblev).
#
#   bench/bench-run.sh [BUILD_DIR]     (default build-run-bench; configured with -Dbench=true)
#
# Goals: (1) <= 20 ms, (2) <= 20 MB, (3) <= 10 us per call.  Figures are
# printed, never asserted.  Needs python3, and GNU time (/usr/bin/time) for (2).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build-run-bench}
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$top" -Dbench=true -Dbuildtype=release >/dev/null
fi
ninja -C "$build" src/lev/lev bench/bench-gates >/dev/null
lev="$build/src/lev/lev"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/lev-bench-run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export HOME="$scratch/home" LEVIATH_HOME="$scratch/lh"
mkdir -p "$HOME" "$LEVIATH_HOME/.leviath" "$scratch/work" "$scratch/first" "$scratch/big"
chmod 700 "$HOME" "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
echo "# bench" >"$scratch/work/README.md"

# --- 1. time to the first tool call -------------------------------------------
cat >"$scratch/first/agent.leviath" <<'EOF'
[agent]
name = "first"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
EOF
cat >"$scratch/first/turns.toml" <<'EOF'
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "README.md" }
[[turn]]
text = "done"
EOF

python3 - "$lev" "$scratch" <<'PY'
import os, statistics, subprocess, sys, time
lev, scratch = sys.argv[1], sys.argv[2]
import json, datetime
inproc = []
def ts(line):
    s = json.loads(line)["ts"]
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
def first_call():
    t0 = time.perf_counter()
    p = subprocess.Popen([lev, "run", "--foreground", os.path.join(scratch, "first"),
                          "--workdir", os.path.join(scratch, "work"), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         start_new_session=True)
    t = None
    started = None
    for line in p.stdout:
        if started is None and '"event":"run_started"' in line:
            started = ts(line)
        if t is None and '"event":"tool_result"' in line:
            t = time.perf_counter() - t0
            inproc.append((ts(line) - started) * 1e3)
    p.wait()
    return t
def bare():
    t0 = time.perf_counter()
    subprocess.run([lev, "version"], stdout=subprocess.DEVNULL, check=True,
                   start_new_session=True)
    return time.perf_counter() - t0
for _ in range(3):
    first_call(); bare()
f = [first_call() * 1e3 for _ in range(30)]
b = [bare() * 1e3 for _ in range(30)]
print("1. lev run start -> first tool call executed: median %.1f ms (min %.1f, max %.1f); "
      "baseline `lev version`: median %.1f ms  [goal <= 20 ms]"
      % (statistics.median(f), min(f), max(f), statistics.median(b)))
print("   of which inside lev, from run_started to the first tool_result event: median %.0f ms "
      "(event timestamps have 1 ms resolution)" % statistics.median(inproc))
PY

# --- 2. peak RSS with a ~100k-token context ------------------------------------
python3 - "$scratch" <<'PY'
import os, sys
scratch = sys.argv[1]
# 7 files of 57 KiB: each read result fits the 64 KiB result cap: ~100k tokens in all
for i in range(7):
    with open(os.path.join(scratch, "work", "part%d.txt" % i), "w") as f:
        line = "line %06d of part %d: lorem ipsum dolor sit amet, consectetur adipiscing\n"
        n = 0
        while n < 57 * 1024:
            s = line % (n, i)
            f.write(s)
            n += len(s)
with open(os.path.join(scratch, "big", "agent.leviath"), "w") as f:
    f.write('[agent]\nname = "big"\n[context.regions]\n'
            'task = { kind = "pinned", seed = "task" }\n'
            'conversation = { kind = "sliding_window", max_items = 100, max_tokens = 120000 }\n'
            '[stages.main]\nmodel = { provider = "script", script = "turns.toml" }\n'
            'available_tools = ["read_file"]\n')
with open(os.path.join(scratch, "big", "turns.toml"), "w") as f:
    for i in range(7):
        f.write('[[turn]]\n[[turn.call]]\ntool = "read_file"\nargs = { path = "part%d.txt" }\n\n' % i)
    f.write('[[turn]]\ntext = "done"\n')
PY
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f "%M" -o "$scratch/rss.run" setsid -w "$lev" run --foreground "$scratch/big" \
		--task "read all parts" --workdir "$scratch/work" --json >"$scratch/big.events" 2>/dev/null
	/usr/bin/time -f "%M" -o "$scratch/rss.bare" setsid -w "$lev" version >/dev/null
	tokens=$(grep '"event":"model_request"' "$scratch/big.events" | tail -n 1 |
		sed 's/.*"context_tokens":\([0-9]*\).*/\1/')
	awk -v t="$tokens" -v r="$(tail -n 1 "$scratch/rss.run")" -v b="$(tail -n 1 "$scratch/rss.bare")" \
		'BEGIN { printf "2. peak RSS of a run holding %s context tokens: %.1f MB; baseline `lev version`: %.1f MB  [goal <= 20 MB]\n", t, r / 1024, b / 1024 }'
else
	echo "2. peak RSS: skipped (needs GNU time, /usr/bin/time: apt-get install time)"
fi

# --- 3. per-call overhead of the gates ---------------------------------------------
echo "3. per-call overhead of every gate vs the tool alone (bench-gates):"
"$build/bench/bench-gates" 20000 | sed 's/^/   /'
echo "   [goal <= 10 us per call; the run record (events + audit, no fsync for reads) is shown apart]"
