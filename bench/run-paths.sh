#!/bin/sh
# Cost of the path gates, each beside a baseline measured in the same run:
# (b) one [read_paths] decision against 1,000 grants, (c) read_file's full
# confinement check vs a bare openat() of the same file.
#
# usage: bench/run-paths.sh [BATCHES] [ROUNDS]     (defaults: 2001 batches, 3 rounds)
#
# Builds in $BENCH_BUILD_DIR (default build-bench-paths; release, -Dbench=true)
# and runs bench-paths ROUNDS times; every figure printed is a median in ns.
# The machine should be otherwise idle: the (c) figures are system calls.
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BENCH_BUILD_DIR:-$src/build-bench-paths}
batches=${1:-2001}
rounds=${2:-3}

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" -Dbench=true -Dtests=false -Dbuildtype=release >/dev/null
fi
ninja -C "$build" bench/bench-paths >/dev/null

i=1
while [ "$i" -le "$rounds" ]; do
	echo "== round $i"
	"$build/bench/bench-paths" "$batches"
	i=$((i + 1))
done
