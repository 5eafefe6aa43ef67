#!/bin/bash
# Shell-key parser throughput, this tree against another commit, in one run.
#
#	bench/run-shellkeys.sh [BASE] [SECS] [LINES]	# defaults: main, 2, 20000
#
# Writes two sets of LINES command lines - "lines": the differential
# test's corpus, grammar and mutations, heavy in braces, quotes and
# expansions; "plain": plain words only, as agents mostly send - builds bench/bench-shellkeys.c
# twice with the same compiler and flags (-O2) - once against this tree's
# src/liblev, once against BASE's (git archive) - and runs both three times,
# alternating, printing each run and the medians in lines per second of
# process CPU time.  Only the shellkeys sources and what they need (arena, buf,
# strv, xalloc, util, error) are compiled, from each tree.
#
# BENCH_CALLGRIND=1 also counts, with valgrind's callgrind, the instructions
# per line of each build on each set (one untimed and one timed pass):
# the comparison a loaded machine does not move.
set -euo pipefail
BASE=${1:-main}
SECS=${2:-2}
LINES=${3:-20000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench-shellkeys.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
CC=${CC:-cc}
FLAGS="-O2 -std=gnu17 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64"

python3 "$SRC/tests/shelldiff/shelldiff.py" gen "$LINES" >"$TMP/lines"
python3 "$SRC/tests/shelldiff/shelldiff.py" gen "$LINES" plain >"$TMP/plain"

build() { # build TREE OUT (flat src/liblev or one folder per layer)
	local objs=() f hdr
	hdr=$(cd "$1/src" && find liblev -name shellkeys.h | head -n 1)
	for f in $(find "$1/src/liblev" \( -name 'shellkeys*.c' -o -name arena.c -o -name buf.c -o -name strv.c \
			-o -name xalloc.c -o -name util.c -o -name error.c \)); do
		$CC $FLAGS -I"$1/src" -c "$f" -o "$TMP/$(basename "$2").$(basename "$f").o"
		objs+=("$TMP/$(basename "$2").$(basename "$f").o")
	done
	$CC $FLAGS -I"$1/src" -DSHELLKEYS_H="\"$hdr\"" "$SRC/bench/bench-shellkeys.c" \
		"${objs[@]}" -o "$2"
}

mkdir -p "$TMP/old"
git -C "$SRC" archive "$BASE" src/liblev | tar -x -C "$TMP/old"
build "$TMP/old" "$TMP/bench-old"
build "$SRC" "$TMP/bench-new"

med() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
for set in lines plain; do
	old=() new=()
	for i in 1 2 3; do
		o=$("$TMP/bench-old" "$TMP/$set" "$SECS")
		n=$("$TMP/bench-new" "$TMP/$set" "$SECS")
		echo "$set run $i: old ($BASE) $o"
		echo "$set run $i: new (this tree) $n"
		old+=("$(echo "$o" | awk '{print $2}')")
		new+=("$(echo "$n" | awk '{print $2}')")
	done
	mo=$(med "${old[@]}")
	mn=$(med "${new[@]}")
	echo "$set: median lines/s: old ($BASE) $mo, new $mn, new/old" \
		"$(awk -v a="$mn" -v b="$mo" 'BEGIN{printf "%.2f", a/b}')"
done

if [ "${BENCH_CALLGRIND:-0}" = 1 ]; then
	for set in lines plain; do
		for which in old new; do
			# SECS 0: the set is parsed twice (the untimed count, one timed pass)
			valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" \
				"$TMP/bench-$which" "$TMP/$set" 0 >/dev/null 2>&1
			awk -v w="$which" -v s="$set" -v n="$LINES" \
				'/^totals:/ { printf "%s: instructions per line: %s %.0f\n", s, w, $2 / (2 * n) }' \
				"$TMP/cg.out"
		done
	done
fi
