#!/bin/bash
# bench/run-track.sh - lev on the scenarios of Leviath's performance track
# (its public benchmark repository: coldstart, memory, pools), each figure
# beside its baseline measured in the same run, Leviath 0.2.0's published
# figure and lev's goal (issue 31):
#
#   boot      exec of `lev daemon` until its socket answers (baseline `lev version`)
#   cold      a new run with no daemon running, exec of `lev run --detach`
#             until the first model request reaches a mock model (baseline:
#             the same run in-process)
#   crash     kill -9 of the daemon with 1 and with BENCH_CRASH_RUNS runs going
#             (one busy, the rest waiting on a question), `lev daemon start`,
#             until the busy run and the last run progress again (the time
#             in the runs' own events.jsonl, so polling adds nothing)
#   pause     a paused run, kill -9, `lev daemon start`, `lev resume` until
#             the run's next event (baseline: pause and resume in one daemon)
#   runs      memory at SIZES agents: PSS - LazyFree over the daemon and
#             every process it owns, the spawn time, the drain time and the
#             settled figure
#   sbx       whole-process `lev sandbox exec --kind namespace /bin/true`
#             against bubblewrap with the same namespaces, interleaved
#   fanout    BENCH_FAN_RUNS (100) runs each fanning out to 4 workers against
#             a model taking BENCH_LATENCY_MS (200): drain time beside one run
#             alone, live peak (issue 29); only on request
#   pools     BENCH_POOL_RUNS (200) runs of one model call each against a
#             model taking BENCH_LATENCY_MS (200), at each [limits]
#             max_concurrent_inferences of BENCH_POOLS (8,128): drain time
#             beside calls x latency / pool, and the most requests the model
#             saw at once
#
#   bench/run-track.sh [BUILD_DIR] [SECTIONS] [SIZES]
#       defaults: build-bench, boot,cold,crash,pause,sbx,runs,pools, 10,100,1000
#
# 10,000 agents run only on request (SIZES 10000): about 2 GiB of memory
# and some 10 minutes on 2 cores.  Nothing is asserted.  Needs python3.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build-bench}
sections=${2:-boot,cold,crash,pause,sbx,runs,pools}
sizes=${3:-10,100,1000}
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$top" -Dbench=true -Dtests=false -Dbuildtype=release >/dev/null
fi
ninja -C "$build" src/lev/lev >/dev/null
build=$(cd "$build" && pwd)

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
ulimit -u "$(ulimit -Hu)" 2>/dev/null || true

scratch=$(mktemp -d "${TMPDIR:-/tmp}/lev-bench-track.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
echo "# $(uptime)"
python3 "$top/bench/daemon-bench.py" "$build/src/lev/lev" "$scratch" "$sections" "$sizes"
echo "# $(uptime)"
