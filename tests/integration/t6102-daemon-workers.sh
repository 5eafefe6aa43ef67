#!/bin/bash
# A daemon run's fan-out workers are processes of their own, under the run's
# worker: lev ps lists each under its run (with its pid) and the run as
# "waiting: workers(N)"; lev cancel ends every one of them.  A worker's ask
# reaches lev respond through its parent, and the answer reaches the worker:
# approved, its write happens; denied (the twin), it does not.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

mkdir -p work
# bp DIR WORKER-TOOLS: split fans out to `one`, three at once
bp() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-EOF
	[agent]
	name = "$1"
	[stages.split]
	mode = "fan_out"
	model = { provider = "mockoa", model = "mock-1" }
	worker_stage = "one"
	split_prompt = "SPLIT-HERE"
	max_workers = 3
	[stages.one]
	model = { provider = "mockoa", model = "mock-1" }
	allow_as_worker = true
	available_tools = [$2"submit_output"]
	require_output = true
	max_iterations = 3
	EOF
}

# script N HOLD [FIRST-CALL-TEMPLATE]: items i1..iN; each worker's first
# answer is held until HOLD requests are in flight (or 60 s)
script() {
	python3 - "$@" <<-'PY' >script.json
	import json, sys
	n, hold = int(sys.argv[1]), int(sys.argv[2])
	first = sys.argv[3] if len(sys.argv) > 3 else None
	r = [{"match": "SPLIT-HERE", "calls": [{"name": "fan_out", "id": "f1", "arguments":
	     {"items": [{"id": "i%d" % i, "context": "part %d" % i} for i in range(1, n + 1)]}}]}]
	for i in range(1, n + 1):
	    m = "Work item 'i%d'" % i
	    if first:
	        r.append({"match": m, "hold_until": hold, "hold_ms": 60000,
	                  "calls": [json.loads(first.replace("@", str(i)))]})
	    a = {"match": m, "calls": [{"name": "submit_output", "id": "s%d" % i,
	         "arguments": {"output": "answer-i%d" % i}}]}
	    if not first:
	        a.update({"hold_until": hold, "hold_ms": 60000})
	    r.append(a)
	r.append({"match": "SPLIT-HERE", "text": "done", "repeat": True})
	print(json.dumps({"responses": r}))
	PY
}

pids_of() {
	"$LEV" ps --json | python3 -c '
import json, sys
r = [r for r in json.load(sys.stdin)["runs"] if r["id"] == sys.argv[1]][0]
print(" ".join(str(w["pid"]) for w in r.get("workers", [])))
' "$1"
}

three_listed() {
	test "$(pids_of "$1" | wc -w)" = 3
}

bp held ""
script 3 99
mock_daemon script.json
test_expect_success 'lev ps lists the three workers under their run, which is waiting: workers(3)' '
	"$LEV" daemon start >/dev/null &&
	"$LEV" run ./held --workdir work --task t --detach >id 2>err &&
	id=$(cat id) &&
	wait_for three_listed "$id" &&
	wait_for status_is "$id" "waiting: workers(3)" &&
	"$LEV" ps >ps.out &&
	grep -q "^  w1 .*running (worker, pid [0-9]*)" ps.out &&
	grep -q "^  w3 .*running (worker, pid [0-9]*)" ps.out &&
	! grep -q "an answer: lev respond" ps.out &&
	for p in $(pids_of "$id"); do kill -0 "$p"; done &&
	pids_of "$id" >pids
'

test_expect_success 'lev cancel ends the run and every worker process' '
	id=$(cat id) &&
	"$LEV" cancel "$id" >/dev/null &&
	wait_for status_is "$id" cancelled &&
	for p in $(cat pids); do wait_for gone "$p" || return 1; done
'
lev_stop_mock_model

WF='{"name": "write_file", "id": "w@", "arguments": {"path": "out@.txt", "content": "from worker @"}}'
for a in approve deny; do
	bp "ask_$a" '"write_file", '
done
script 2 2 "$WF"
mock_daemon script.json
# answer_all ANSWER RUN: answer each of RUN's two asks as they come
answer_all() {
	local q n=0
	while [ $n -lt 2 ]; do
		wait_for request_of "$2" || return 1
		q=$(request_of "$2") &&
		"$LEV" respond --json | grep -q "w[12]/call_1" &&
		"$LEV" respond "$q" "--$1" >/dev/null || return 1
		n=$((n + 1))
	done
}
test_expect_success 'each parallel worker asks through lev respond; approved, each write happens' '
	"$LEV" run ./ask_approve --workdir work --task t --detach >id 2>err &&
	id=$(cat id) &&
	answer_all approve "$id" &&
	wait_for status_is "$id" complete &&
	grep -q "from worker 1" work/out1.txt &&
	grep -q "from worker 2" work/out2.txt
'
lev_stop_mock_model
rm -f work/out*.txt
mock_daemon script.json
test_expect_success 'denied, neither write happens (twin)' '
	"$LEV" run ./ask_deny --workdir work --task t --detach >id 2>err &&
	id=$(cat id) &&
	answer_all deny "$id" &&
	wait_for status_is "$id" complete &&
	! test -e work/out1.txt && ! test -e work/out2.txt
'
lev_stop_mock_model

test_done
