#!/bin/bash
# compat-report.sh [BUILD_DIR] [RUNS]: how far lev gets with Leviath's files.
#
#   - the real blueprints that validate: N of M under
#     ../shared/reference/leviath/examples (when it is there), and lev's own
#     equivalents of the bundled agents (tests/compat/agents/);
#   - Leviath's blueprint schema keys lev accepts / warns on / rejects
#     (tests/compat/count-keys.py);
#   - the time of each bundled agent's run, entry stage to end, under the
#     mock model (tests/compat/bundled-run.sh, --model variant), from its
#     record (run_started to run_finished: lev's start and exit and the test
#     harness are not in it): the median of RUNS runs (default 3).
set -u
SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=$(cd "${1:-$SRC_DIR/build}" && pwd)
RUNS=${2:-3}
LEV="$BUILD_DIR/src/lev/lev"
export SRC_DIR BUILD_DIR LEV
. "$SRC_DIR/tests/lib.sh" >/dev/null
export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
. "$SRC_DIR/tests/compat/bundled-run.sh"

REF="$SRC_DIR/../shared/reference/leviath"
[ -d "$REF" ] || REF="$SRC_DIR/../../shared/reference/leviath"
OURS="$SRC_DIR/tests/compat/agents"

# validates DIR...: how many of them lev validate accepts
validates() {
	local n=0 d
	for d in "$@"; do
		LEVIATH_CONFIG_PATH="$SRC_DIR/tests/compat/config/providers.toml" "$LEV" validate "$d" \
			>/dev/null 2>&1 && n=$((n + 1))
	done
	echo "$n of $#"
}

echo "== blueprints that validate"
if [ -d "$REF/examples" ]; then
	echo "Leviath's examples ($REF/examples): $(validates "$REF"/examples/*/*/)"
else
	echo "Leviath's examples: not here ($REF/examples)"
fi
echo "lev's equivalents of the bundled agents: $(validates "$OURS"/*/)"

echo "== Leviath blueprint schema keys"
if [ -f "$REF/schema/blueprint.schema.json" ]; then
	python3 "$SRC_DIR/tests/compat/count-keys.py" "$LEV" "$REF/schema/blueprint.schema.json"
else
	echo "not counted: no $REF/schema/blueprint.schema.json"
fi

echo "== bundled agents under the mock model (run_started to run_finished, median of $RUNS runs, --model openai/mock-1)"
printf '%-16s %-8s %s\n' agent where seconds
for name in coder data-analyst deep-researcher log-analyzer researcher reviewer wide-researcher; do
	for where in ours leviath; do
		dir="$OURS/$name"
		[ $where = leviath ] && dir="$REF/examples/bundled/$name"
		[ -d "$dir" ] || continue
		times=()
		for _ in $(seq "$RUNS"); do
			if ! bundled_run "$dir" "$name" model >/dev/null 2>&1 ||
			   ! bundled_check "$name" model >/dev/null 2>&1; then
				times=(failed)
				break
			fi
			# run_started to run_finished in the record: the run itself, not
			# the start of the processes around it
			times+=("$(python3 - "$run_dir/events.jsonl" <<-'PY'
			import datetime, json, sys
			ev = [json.loads(l) for l in open(sys.argv[1])]
			t = [datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00")) for e in (ev[0], ev[-1])]
			print("%.3f" % (t[1] - t[0]).total_seconds())
			PY
			)")
		done
		printf '%-16s %-8s %s\n' "$name" $where \
			"$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (a[1]=="failed") ? "failed" : a[int((NR+1)/2)]}')"
	done
done
