#!/bin/sh
# Instructions per gated call, old binary and new, counted by callgrind: the
# load-independent twin of bench/run-gates.sh (whose microseconds move by
# tens of percent on a shared machine).
#
# usage: bench/cg-gates.sh OLD_BUILD NEW_BUILD [N]	(default N = 400)
#
# Runs each build's bench-gates under `valgrind --tool=callgrind`, counting
# only inside lev_agent_dispatch() (the gate chain, the tool on the fds the
# path gate opened, the record), with one dump per bench-gates row, and
# prints the instructions per call of the three rows: no record and taint
# off; taint on; taint on and the run record on.  Then the same rows'
# instruction-cache (I1) misses per call, from callgrind's cache simulation
# of this machine's L1: what a hot path spread over too many cache lines
# costs (src/liblev/hot-path.ld).  Nothing is asserted.
set -eu

old=${1:?usage: bench/cg-gates.sh OLD_BUILD NEW_BUILD [N]}
new=${2:?usage: bench/cg-gates.sh OLD_BUILD NEW_BUILD [N]}
n=${3:-400}

if ! command -v valgrind >/dev/null 2>&1; then
	echo "cg-gates: valgrind is not installed" >&2
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cg-gates.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# bench-gates makes 9 rounds of N calls per row, N/4 for the record row
calls1=$((9 * n))
q=$((n / 4))
[ "$q" -gt 0 ] || q=1
calls3=$((9 * q))

for which in old new; do
	if [ "$which" = old ]; then b=$old; else b=$new; fi
	if [ ! -x "$b/bench/bench-gates" ]; then
		echo "cg-gates: $b/bench/bench-gates is missing (configure with -Dbench=true)" >&2
		exit 1
	fi
	valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$tmp/$which.out" \
		--dump-before=measure --toggle-collect=lev_agent_dispatch \
		"$b/bench/bench-gates" "$n" >/dev/null 2>"$tmp/$which.log"
	# dumps: .1 before the first row (empty), .2 row 1, .3 row 2, the final file row 3
	# totals: Ir Dr Dw I1mr ...
	r1=$(sed -n 's/^totals: //p' "$tmp/$which.out.2")
	r2=$(sed -n 's/^totals: //p' "$tmp/$which.out.3")
	r3=$(sed -n 's/^totals: //p' "$tmp/$which.out")
	awk -v w="$which" -v a="$r1" -v b="$r2" -v c="$r3" -v n1="$calls1" -v n3="$calls3" 'BEGIN {
		split(a, x, " "); split(b, y, " "); split(c, z, " ")
		printf "%-4s instructions per call: no record, taint off %7.0f   taint on %7.0f" \
		       "   run record on %7.0f\n", w, x[1] / n1, y[1] / n1, z[1] / n3
		printf "%-4s I1 misses per call:    no record, taint off %7.1f   taint on %7.1f" \
		       "   run record on %7.1f\n", w, x[4] / n1, y[4] / n1, z[4] / n3 }' >>"$tmp/rows"
done
# instructions first, then I1 misses, old above new
grep instructions "$tmp/rows"
grep 'I1 misses' "$tmp/rows"
