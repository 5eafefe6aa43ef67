#!/bin/sh
# Parse throughput of lev's TOML parser vs toml++, on the same generated
# document, in one run.
#
# usage: bench/run-toml.sh [SIZE_MB] [REPS]     (defaults: 10 MB, 15 runs)
#
# Builds in $BENCH_BUILD_DIR (default build-bench; release, -Dbench=true),
# generates the document with bench/gen-toml.py, runs each harness twice
# (alternating, REPS runs each time) and prints MB/s for each and the ratio
# of the medians lev/toml++ (> 1 means lev is faster).
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BENCH_BUILD_DIR:-$src/build-bench}
size=${1:-10}
reps=${2:-15}

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" -Dbench=true -Dtests=false -Dbuildtype=release >/dev/null
fi
ninja -C "$build" bench/bench-toml bench/bench-tomlpp >/dev/null

doc="$build/bench/bench-$size.toml"
[ -f "$doc" ] || python3 "$src/bench/gen-toml.py" "$size" > "$doc"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in 1 2; do
	"$build/bench/bench-toml" "$doc" "$reps" | tee -a "$out"
	"$build/bench/bench-tomlpp" "$doc" "$reps" | tee -a "$out"
done

awk '
/^lev:/    { m = $(NF-3) + 0; if (m > lev) lev = m; lv = $(NF-1) }
/^toml\+\+:/ { m = $(NF-3) + 0; if (m > pp) pp = m; pv = $(NF-1) }
END {
	if (lv != pv)
		printf("warning: the parsers count different numbers of values (%s vs %s)\n", lv, pv)
	printf("median MB/s (best of 2 rounds): lev %.1f, toml++ %.1f, ratio lev/toml++ %.2f\n",
	       lev, pp, lev / pp)
}' "$out"
