#!/bin/bash
# `lev ps` returns summaries (no run's output) and `--all` comes in pages, so
# one run with a huge output cannot blind ps for all (docs/daemon.md "lev
# ps"): a run whose output is 2 MB completes (its output reaches `lev
# result` and `lev run` from its record), three runs of 400 KB each (more
# than one reply together) and twenty small ones are all listed by `lev ps
# --all --json`, and pages of any size list every run exactly once.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

mkdir -p work huge wide small
python3 -c '
import json
print(json.dumps({"responses": [{"match": "TASK-HUGE", "repeat": True,
                                 "text": "h" * (2 << 20)}]}))' >huge.json
cat >huge/agent.leviath <<'EOF'
[agent]
name = "huge"
[stages.main]
model = { provider = "mockoa", model = "mock-1" }
available_tools = []
EOF
for a in wide small; do
	cat >$a/agent.leviath <<-EOF
	[agent]
	name = "$a"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_tools = []
	EOF
done
python3 -c 'print("[[turn]]\ntext = \"%s\"" % ("w" * 400000))' >wide/turns.toml
printf '[[turn]]\ntext = "small and done"\n' >small/turns.toml

mock_daemon huge.json

submit() {
	(cd work && setsid -w "$LEV" run ../"$1" --task "TASK-HUGE" --detach >>../ids 2>/dev/null)
}

test_expect_success 'a run with a 2 MB output completes; lev result prints all of it' '
	"$LEV" daemon start >/dev/null &&
	submit huge &&
	h=$(tail -1 ids) &&
	wait_for status_is "$h" complete &&
	"$LEV" result "$h" >out &&
	test "$(tr -d "\n" <out | wc -c)" = $((2 << 20)) &&
	test "$(tr -d "h\n" <out | wc -c)" = 0 &&
	"$LEV" result --json "$h" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d[\"status\"] == \"complete\" and len(d[\"result\"]) == 2 << 20, d[\"status\"]"
'

test_expect_success 'lev run --follow follows it to the end and prints the whole output' '
	(cd work && setsid -w "$LEV" run --follow ../huge --task "TASK-HUGE" >../followed 2>../followed.err) &&
	test "$(tr -d "\n" <followed | wc -c)" = $((2 << 20))
'

test_expect_success 'three 400 KB outputs and twenty small runs: ps --all --json lists them all' '
	for i in 1 2 3; do submit wide || return 1; done &&
	for i in $(seq 20); do submit small || return 1; done &&
	for i in $(cat ids); do wait_for status_is "$i" complete || return 1; done &&
	"$LEV" ps --all --json >all.json &&
	"$LEV" ps --json >recent.json &&
	python3 - all.json recent.json ids <<-PY
	import json, sys
	ids = set(open(sys.argv[3]).read().split())
	assert len(ids) == 24, len(ids)
	for f in sys.argv[1:3]:
	    d = json.load(open(f))
	    runs = d["runs"] + d["finished"]
	    got = [r["id"] for r in runs]
	    assert len(got) == len(set(got)), f
	    assert ids <= set(got), (f, ids - set(got))
	    assert all("result" not in r for r in runs), f
	    assert all(r["status"] == "complete" for r in runs), f
	    assert "next" not in d, f
	PY
'

test_expect_success 'pages of any size list every run exactly once, in id order' '
	for p in 1 4 7 23 24 5000; do
		"$LEV" ps --all --json --page $p >page-$p.json || return 1
	done &&
	python3 - all.json page-*.json <<-PY
	import json, sys
	want = sorted(r["id"] for r in json.load(open(sys.argv[1]))["finished"])
	assert len(want) == 25, len(want)
	for f in sys.argv[2:]:
	    got = [r["id"] for r in json.load(open(f))["finished"]]
	    assert got == want, (f, len(got), len(set(got)))
	PY
'

test_expect_success 'benign twin: a small run summary keeps its status, its output is lev result' '
	s=$(tail -1 ids) &&
	test "$(field "$s" status)" = complete &&
	test "$(field "$s" agent)" = small &&
	test "$("$LEV" result "$s")" = "small and done" &&
	test_must_fail --code 2 "$LEV" ps --all --page 0 2>err &&
	grep -q "page takes a number" err
'
lev_stop_mock_model

test_done
