#!/bin/bash
# lev stages RUN and lev context RUN: the per-stage ledger of a finished run, read from its
# record without a daemon: every stage entered, how it ended, its requests;
# the context window of each request.
. "$SRC_DIR/tests/lib.sh"

mkdir -p work pick
cat >pick/agent.leviath <<'EOF'
[agent]
name = "pick"
[stages.a]
model = { provider = "script", script = "turns.toml" }
[stages.a.transitions.b]
hint = "more sources are needed"
[stages.a.transitions.c]
hint = "ready to write"
[stages.b]
model = { provider = "script", script = "turns.toml" }
[stages.c]
model = { provider = "script", script = "turns.toml" }
EOF
cat >pick/turns.toml <<'EOF'
[[turn]]
text = "analysed"
[[turn]]
[[turn.call]]
tool = "transition"
args = { target = "c" }
[[turn]]
text = "written in c"
EOF

test_expect_success 'a two-stage run: one row per stage entered, in order, and a total' '
	setsid -w "$LEV" run --foreground ./pick --task t --workdir work >out 2>err &&
	run=$(sed -n "s/^lev: run \([^ ]*\) complete.*/\1/p" err) && test -n "$run" &&
	echo "$run" >runid &&
	lev stages "$run" >table &&
	sed -n 1p table | grep -q "^STAGE  *STATUS  *PROMPT  *OUTPUT  *CACHE RD  *CACHE WR$" &&
	sed -n 2p table | grep -q "^a  *complete " &&
	sed -n 3p table | grep -q "^c  *complete " &&
	! grep -q "^b " table &&
	sed -n 4p table | grep -q "^TOTAL "
'

test_expect_success 'stages --json: the same ledger, iterations and the window high-water' '
	lev stages "$(cat runid)" --json --regions >j &&
	python3 -c "
import json
d = json.load(open(\"j\"))
s = {r[\"stage\"]: r for r in d[\"stages\"]}
assert list(s) == [\"a\", \"c\"], s
# the next stage is asked in a request of its own (no tools), not an iteration of a
assert s[\"a\"][\"iterations\"] == 1 and s[\"c\"][\"iterations\"] == 1, s
assert s[\"a\"][\"context_high_water\"] > 0 and s[\"a\"][\"cache_read_tokens\"] is None
assert d[\"total\"] == {\"prompt_tokens\": 0, \"output_tokens\": 0}
" &&
	lev stages "$(cat runid)" --regions | sed -n 1p | grep -q "CONTEXT$"
'

test_expect_success 'stages: no such run, a path for a run id, no run at all: each fails' '
	test_must_fail --code 1 lev stages 20990101-000000-000-abcdef 2>err &&
	grep -q "no run" err &&
	test_must_fail --code 1 lev stages ../../etc 2>err &&
	grep -q "not a run id" err &&
	test_must_fail --code 2 lev stages
'

test_expect_success 'lev context: each stage and each request with its window, from the record' '
	lev context "$(cat runid)" >ctx &&
	sed -n 1p ctx | grep -q "^== stage .a.$" &&
	test $(grep -c "^  request [0-9]*: window [0-9]* tokens (public)$" ctx) -eq 2 &&
	grep -q "^== stage .c.$" ctx &&
	lev context "$(cat runid)" --json >j &&
	python3 -c "
import json
d = json.load(open(\"j\"))
k = [e[\"event\"] for e in d[\"history\"]]
assert k.count(\"model_request\") == 2 and k[0] == \"stage_started\", k
assert \"tool_call\" not in k
"
'

test_expect_success 'lev context --full is refused with the reason; no run id is usage' '
	test_must_fail --code 2 lev context "$(cat runid)" --full 2>err &&
	grep -q "keeps no region contents" err &&
	test_must_fail --code 2 lev context
'

test_done
