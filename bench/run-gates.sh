#!/bin/sh
# The per-call cost of every gate, old binary and new, in one run: bench-gates
# of two builds, interleaved ROUNDS times each, so both see the same machine.
#
# usage: bench/run-gates.sh OLD_BUILD NEW_BUILD [N] [ROUNDS]
#        (defaults: N = 20000 read_file calls per round, ROUNDS = 3)
#
# OLD_BUILD and NEW_BUILD are build directories configured with -Dbench=true
# (build the old one from another checkout, e.g. `git archive main`); each
# row is prefixed with the build it came from.  bench-gates prints three
# rows per run: no record and taint off; taint on; taint on and the run
# record on.  Nothing is asserted: the figures go in the issue notes.
set -eu

old=${1:?usage: bench/run-gates.sh OLD_BUILD NEW_BUILD [N] [ROUNDS]}
new=${2:?usage: bench/run-gates.sh OLD_BUILD NEW_BUILD [N] [ROUNDS]}
n=${3:-20000}
rounds=${4:-3}

for b in "$old" "$new"; do
	if [ ! -x "$b/bench/bench-gates" ]; then
		echo "run-gates: $b/bench/bench-gates is missing (configure with -Dbench=true)" >&2
		exit 1
	fi
done

i=1
while [ "$i" -le "$rounds" ]; do
	echo "== round $i"
	for which in old new; do
		if [ "$which" = old ]; then b=$old; else b=$new; fi
		"$b/bench/bench-gates" "$n" | grep -v "^bench-gates:" |
			sed "s/^/$which  /"
	done
	i=$((i + 1))
done
