#!/bin/bash
# bench/bench-fanout.sh - a fan-out stage's wall time with parallel workers:
#
#   8 items, max_workers = 4, each worker's one model answer taking 1 s
#   (tests/helpers/mock-model, delay_ms), against ONE worker alone (1 item)
#   on the same mock in the same run; and 8 items with max_workers = 1 (the
#   workers one after another) for scale.  Each row is the median of RUNS
#   `lev run --foreground` runs, from exec to exit, through the real HTTP
#   client.
#
#   bench/bench-fanout.sh [BUILD_DIR] [RUNS]      (default: build, 3)
#
# Goal: 8 items with max_workers = 4 in <= 2.6x one worker's time (two
# rounds of four).  Figures are printed, never asserted.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
runs=${2:-3}
ninja -C "$build" src/lev/lev tests/helpers/mock-model >/dev/null
lev="$build/src/lev/lev"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/lev-bench-fanout.XXXXXX")
mock_pid=
trap '[ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$scratch"' EXIT
export HOME="$scratch/home" LEVIATH_HOME="$scratch/lh" MOCK_KEY=sk-bench
mkdir -p "$HOME" "$LEVIATH_HOME/.leviath" "$scratch/work"
chmod 700 "$HOME" "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
cd "$scratch"

# the mock: the split answers at once with N items; every worker's answer
# (any request naming a work item) takes 1 s
python3 - <<'PY' >script.json
import json
r = []
for n in (1, 8):
    r.append({"match": ["SPLIT-HERE", "ITEMS-%d" % n], "repeat": True,
              "calls": [{"name": "fan_out", "id": "f", "arguments": {"items":
                         [{"id": "i%d" % i, "context": "part %d" % i} for i in range(n)]}}]})
r.append({"match": "Work item", "repeat": True, "delay_ms": 1000,
          "calls": [{"name": "submit_output", "id": "s", "arguments": {"output": "done"}}]})
print(json.dumps({"responses": r}))
PY
"$build/tests/helpers/mock-model" --script script.json --port-file port >/dev/null 2>&1 &
mock_pid=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
cat >"$LEVIATH_HOME/.leviath/config.toml" <<EOF
[providers.mock]
kind = "openai"
base_url = "http://127.0.0.1:$(cat port)/v1"
api_key_env = "MOCK_KEY"
model = "mock-1"
timeout_secs = 30
EOF
chmod 600 "$LEVIATH_HOME/.leviath/config.toml"

# bp NAME ITEMS MAX_WORKERS
bp() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-EOF
	[agent]
	name = "$1"
	[stages.split]
	mode = "fan_out"
	model = { provider = "mock", model = "mock-1" }
	worker_stage = "one"
	split_prompt = "SPLIT-HERE ITEMS-$2"
	max_workers = $3
	[stages.one]
	model = { provider = "mock", model = "mock-1" }
	allow_as_worker = true
	available_tools = ["submit_output"]
	require_output = true
	EOF
}
bp one 1 4
bp par 8 4
bp seq 8 1

# median wall seconds of RUNS runs of blueprint $1
timed() {
	local i t=()
	for i in $(seq "$runs"); do
		t+=("$(python3 - "$lev" "$1" <<-'PY'
		import subprocess, sys, time
		t0 = time.monotonic()
		subprocess.run([sys.argv[1], "run", "--foreground", sys.argv[2], "--task", "t",
		                "--workdir", "work"], stdin=subprocess.DEVNULL,
		               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
		print("%.3f" % (time.monotonic() - t0))
		PY
		)")
	done
	printf '%s\n' "${t[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p"
}

one=$(timed one)
par=$(timed par)
seq=$(timed seq)
printf 'one worker (1 item)                 %6.2f s\n' "$one"
printf '8 items, max_workers = 4            %6.2f s   %.2fx one worker (goal <= 2.6x)\n' \
	"$par" "$(python3 -c "print($par / $one)")"
printf '8 items, max_workers = 1 (in turn)  %6.2f s   %.2fx one worker\n' \
	"$seq" "$(python3 -c "print($seq / $one)")"
