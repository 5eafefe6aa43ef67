#!/bin/bash
# bench/run-daemon.sh - what the daemon costs (issue 15's figures), each
# figure beside a baseline measured in the same run:
#
#   boot      exec of `lev daemon` until its socket answers a ping
#             (baseline: exec of `lev version` to its exit)
#   cold      `lev run --detach` with no daemon running until the first model
#             request reaches a mock model server (baseline: the same run
#             in-process, `lev run` without --detach)
#   submit    `lev run --detach` to a running daemon, exec to exit
#             (baseline: `lev version`; the bare submit round trip)
#   idle      live memory of an idle daemon (baseline: a daemon with no
#             runs is the baseline of `runs`)
#   runs      N concurrent scripted runs (read_file calls, then a question
#             left open so each run stays alive), N from SIZES: live memory
#             of the daemon and all its workers, then the settled figure
#             once every run has been answered and has finished
#   ps        `lev ps --json` with 1,000 runs in the database
#             (baseline: `lev version`)
#   calls     per-call cost of the run record and the journal: a run of
#             CALLS read_file calls through the daemon vs the same run
#             in-process (`lev run`), each beside its own zero-call run, and
#             bench-gates' record-off/record-on rows
#   kill9     `kill -9` of the daemon during 100 running runs, restart: runs
#             accounted for, finished calls run again, time from restart to a
#             reloaded run's first progress
#
#   bench/run-daemon.sh [BUILD_DIR] [SECTIONS] [SIZES]
#       BUILD_DIR   default build-bench (configured -Dbench=true -Dtests=false
#                   -Dbuildtype=release when missing)
#       SECTIONS    comma list, default boot,cold,submit,idle,runs,ps,calls,kill9
#       SIZES       comma list for `runs`, default 10,100,1000 (10000 on request)
#
# Live memory is PSS minus LazyFree (/proc/PID/smaps_rollup), summed over the
# daemon and every process it owns (its descendants), never RSS.  The script
# raises RLIMIT_NOFILE and RLIMIT_NPROC to their hard limits and says which
# limit stopped a size it could not reach.  Nothing is asserted: the figures
# go in the issue notes.  Needs python3.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build-bench}
sections=${2:-boot,cold,submit,idle,runs,ps,calls,kill9}
sizes=${3:-10,100,1000}
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$top" -Dbench=true -Dtests=false -Dbuildtype=release >/dev/null
fi
ninja -C "$build" src/lev/lev bench/bench-gates >/dev/null

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
ulimit -u "$(ulimit -Hu)" 2>/dev/null || true

scratch=$(mktemp -d "${TMPDIR:-/tmp}/lev-bench-daemon.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
echo "# $(uptime)"
echo "# limits: open files $(ulimit -n), processes $(ulimit -u), pid_max $(cat /proc/sys/kernel/pid_max)"
python3 "$top/bench/daemon-bench.py" "$build/src/lev/lev" "$scratch" "$sections" "$sizes"
case ",$sections," in
*,calls,*)
	echo "calls: bench-gates, the run record's own share (in-process, no daemon):"
	"$build/bench/bench-gates" 20000 | grep -v "^bench-gates:" | sed 's/^/   /'
	;;
esac
echo "# $(uptime)"
