#!/bin/bash
# Fan-out workers run in parallel, each in a process of its own, at most
# max_workers at once (docs/sub-agents.md "Running in parallel"), driven by a
# mock model through the real HTTP client path.  Concurrency is proven from
# outside: the mock model holds each worker's answer until four requests are
# in flight at once, and records how many were.  Results come back in the
# order of the items; a failed worker is merged under on_worker_failure;
# cancelling the parent ends every worker's process; a worker's calls still
# meet the parent stage's deny; what a worker read raises the parent's label.
. "$SRC_DIR/tests/lib.sh"

export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" work outside && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
CONFIG="$LEVIATH_HOME/.leviath/config.toml"
export MOCK_OPENAI_KEY=sk-mock-openai-KEY-0123456789abcdef
echo "public words" >work/public.txt
echo "PRIVATE-LINE-42" >outside/secret.txt
OUT="$TRASH/outside"
printf '[[allowlist]]\ntool = "web_fetch"\nto = ["127.0.0.1"]\nmax_sensitivity = "internal"\n' \
	>"$LEVIATH_HOME/.leviath/policy.toml"
chmod 600 "$LEVIATH_HOME/.leviath/policy.toml"

# start SCRIPT: the mock model serving SCRIPT, and a config naming it
start() {
	lev_mock_config "$1" <<-EOF
	taint_tracking = true
	[security]
	allow_blueprint_read_paths = true
	[tool_permissions]
	web_fetch = "allow"
	EOF
}

# bp DIR SPLIT-KEYS: split fans out to `one` (read_file, submit_output), merge answers
bp() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-EOF
	[agent]
	name = "$1"
	[read_paths]
	allow = ["$OUT"]
	[stages.split]
	mode = "fan_out"
	model = { provider = "mock", model = "mock-1" }
	worker_stage = "one"
	merge_stage = "merge"
	split_prompt = "SPLIT-HERE"
	$2
	[stages.one]
	model = { provider = "mock", model = "mock-1" }
	allow_as_worker = true
	available_tools = ["read_file", "submit_output"]
	require_output = true
	max_iterations = 3
	[stages.merge]
	model = { provider = "mock", model = "mock-1" }
	system_prompt = "MERGE-HERE"
	available_tools = ["web_fetch"]
	EOF
}

# script N HOLD [WORKER-FIRST-CALL-JSON] [MERGE-CALL-JSON]: items i1..iN; each
# worker's answer is held until HOLD requests are in flight (0: not held)
script() {
	python3 - "$@" <<-'PY' >script.json
	import json, sys
	n, hold = int(sys.argv[1]), int(sys.argv[2])
	first = json.loads(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else None
	merge = json.loads(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else None
	r = []
	r.append({"match": "MERGE-HERE", "text": "merged"} if not merge else
	         {"match": "MERGE-HERE", "calls": [merge]})
	r.append({"match": "MERGE-HERE", "text": "merged", "repeat": True})
	r.append({"match": "SPLIT-HERE", "calls": [{"name": "fan_out", "id": "f1", "arguments":
	         {"items": [{"id": "i%d" % i, "context": "part %d" % i} for i in range(1, n + 1)]}}]})
	for i in range(1, n + 1):
	    m = "Work item 'i%d'" % i
	    if first:
	        a = {"match": m, "calls": [first]}
	        if hold: a["hold_until"] = hold
	        r.append(a)
	    a = {"match": m, "calls": [{"name": "submit_output", "id": "s%d" % i,
	         "arguments": {"output": "answer-i%d" % i}}]}
	    if hold and not first: a["hold_until"] = hold
	    r.append(a)
	print(json.dumps({"responses": r}))
	PY
}

# run DIR [ARGS]: a foreground run, its events in DIR.ev
run() {
	local d=$1
	shift
	setsid -w "$LEV" run --foreground "$d" --task t --workdir work --json "$@" >"$d.ev" 2>"$d.err"
}

check() {
	python3 - "$1.ev" "$2" <<-'PY'
	import json, os, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	end = ev[-1]
	req = [json.loads(l) for l in open("requests.jsonl")]
	work = [q for q in req if "Work item" in json.dumps(q["body"])]
	def of(name, evs=None):
	    return [e for e in (ev if evs is None else evs) if e["event"] == name]
	def kid(e):
	    return [json.loads(l) for l in open(os.path.join(e["record"], "events.jsonl"))]
	exec(sys.argv[2])
	PY
}

# ---- eight items, four at once --------------------------------------------------

bp par "max_workers = 4"
script 8 4
start script.json
test_expect_success 'eight workers, max_workers = 4: four run at once, each in a process of its own' '
	run par &&
	check par "
assert end[\"event\"] == \"run_finished\" and end[\"status\"] == \"complete\", end
assert max(q[\"in_flight\"] for q in work) == 4, [q[\"in_flight\"] for q in work]
assert len(work) == 8, len(work)
st = of(\"child_started\")
assert len(st) == 8 and len({e[\"pid\"] for e in st}) == 8, st
fin = of(\"child_finished\")
assert len(fin) == 8 and all(e[\"ok\"] for e in fin), fin
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0][\"text\"]
assert \"8 succeeded, 0 failed\" in fo, fo
pos = [fo.index(\"## worker i%d\n\" % i) for i in range(1, 9)]
assert pos == sorted(pos), fo
assert all(\"answer-i%d\" % i in fo for i in range(1, 9)), fo
"
'
lev_stop_mock_model

bp par2 "max_workers = 2"
script 8 2
start script.json
test_expect_success 'max_workers = 2: never more than two at once (twin)' '
	run par2 &&
	check par2 "
assert end[\"status\"] == \"complete\", end
assert max(q[\"in_flight\"] for q in work) == 2, [q[\"in_flight\"] for q in work]
assert len(of(\"child_finished\")) == 8
"
'
lev_stop_mock_model

# ---- a failed worker -------------------------------------------------------------

for mode in continue fail; do
	bp "wf_$mode" "max_workers = 3
on_worker_failure = \"$mode\""
done
script 3 0
python3 - <<'PY'
import json
s = json.load(open("script.json"))
for r in s["responses"]:
    if r.get("match") == "Work item 'i2'":
        r.pop("calls"); r["status"] = 400; r["body"] = "{\"error\": {\"message\": \"bad\"}}"
json.dump(s, open("script.json", "w"))
PY
start script.json
test_expect_success 'on_worker_failure = "continue": the failed worker is merged as FAILED' '
	run wf_continue &&
	check wf_continue "
assert end[\"status\"] == \"complete\", end
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0][\"text\"]
assert \"2 succeeded, 1 failed\" in fo and \"## worker i2 FAILED\" in fo, fo
"
'
lev_stop_mock_model
start script.json
test_expect_success 'on_worker_failure = "fail": the stage fails naming the worker' '
	! run wf_fail &&
	check wf_fail "
assert end[\"status\"] == \"error\", end
assert \"worker \x27i2\x27 failed (on_worker_failure\" in end[\"error\"], end
"
'
lev_stop_mock_model

# ---- cancel ---------------------------------------------------------------------

bp cancel "max_workers = 4"
script 4 99
start script.json
test_expect_success 'cancelling the parent ends every worker: no process is left' '
	(setsid "$LEV" run --foreground cancel --task t --workdir work --json >cancel.ev 2>cancel.err & echo $! >lev.pid) &&
	for i in $(seq 300); do
		[ "$(grep -c "Work item" requests.jsonl 2>/dev/null)" = 4 ] && break
		sleep 0.1
	done &&
	test "$(grep -c "Work item" requests.jsonl)" = 4 &&
	pids=$(python3 -c "import json; print(\" \".join(str(json.loads(l)[\"pid\"]) for l in open(\"cancel.ev\") if \"child_started\" in l))") &&
	test -n "$pids" &&
	for p in $pids; do kill -0 $p; done &&
	kill -TERM $(cat lev.pid) &&
	for i in $(seq 300); do kill -0 $(cat lev.pid) 2>/dev/null || break; sleep 0.1; done &&
	! kill -0 $(cat lev.pid) 2>/dev/null &&
	for p in $pids; do ! kill -0 $p 2>/dev/null || { echo "worker $p is left"; false; }; done &&
	check cancel "
assert end[\"status\"] == \"cancelled\", end
fin = of(\"child_finished\")
assert len(fin) == 4 and not any(e[\"ok\"] for e in fin), fin
"
'
lev_stop_mock_model

# ---- spawn_agent children run beside each other ------------------------------------

# kidbp NAME TOOLS [MAIN-KEYS]: main (PARENT-HERE) offers TOOLS; `one` is the child
kidbp() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-EOF
	[agent]
	name = "$1"
	[stages.main]
	model = { provider = "mock", model = "mock-1" }
	system_prompt = "PARENT-HERE"
	available_tools = [$2]
	${3:-}
	[stages.one]
	model = { provider = "mock", model = "mock-1" }
	allow_as_worker = true
	available_tools = ["submit_output"]
	require_output = true
	max_iterations = 2
	EOF
}
kidbp kids '"spawn_agent", "wait_for_agent", "check_agent"'
python3 - <<'PY'
import json
sp = lambda i, t: {"name": "spawn_agent", "id": "s%d" % i,
                   "arguments": {"blueprint": "one", "task": t}}
wt = lambda i, c: {"name": "wait_for_agent", "id": "w%d" % i, "arguments": {"agent_id": c}}
r = [{"match": "PARENT-HERE", "calls": [sp(1, "CHILD-A"), sp(2, "CHILD-B")]},
     {"match": "PARENT-HERE", "calls": [wt(1, "c1"), wt(2, "c2")]},
     {"match": "PARENT-HERE", "text": "both answered"}]
for c in "AB":
    r.append({"match": "CHILD-" + c, "hold_until": 2, "calls": [{"name": "submit_output",
              "id": "o" + c, "arguments": {"output": "answer-" + c}}]})
json.dump({"responses": r}, open("kids.json", "w"))
PY
start kids.json
test_expect_success 'two spawn_agent children without wait run at once; wait_for_agent takes each answer' '
	run kids &&
	python3 - <<-'PY'
	import json
	ev = [json.loads(l) for l in open("kids.ev")]
	req = [json.loads(l) for l in open("requests.jsonl")]
	kid = [q for q in req if "PARENT-HERE" not in json.dumps(q["body"])]
	assert len(kid) == 2 and max(q["in_flight"] for q in kid) == 2, kid
	assert ev[-1]["status"] == "complete", ev[-1]
	res = [e["text"] for e in ev if e["event"] == "tool_result"]
	assert "running" in res[0] and "running" in res[1], res
	assert res[2] == "answer-A" and res[3] == "answer-B", res
	PY
'
lev_stop_mock_model

# ---- requires_children -------------------------------------------------------------

for rc in true false; do
	kidbp "rc_$rc" '"spawn_agent"' "requires_children = $rc"
done
# the child's answer is held 15 s: the parent has long said it is done
python3 - <<'PY'
import json
r = [{"match": "PARENT-HERE", "calls": [{"name": "spawn_agent", "id": "s1",
      "arguments": {"blueprint": "one", "task": "CHILD-A"}}]},
     {"match": "PARENT-HERE", "text": "parent done", "repeat": True},
     {"match": "CHILD-A", "hold_until": 99, "hold_ms": 15000, "calls": [{"name": "submit_output",
      "id": "o", "arguments": {"output": "answer-A"}}]}]
json.dump({"responses": r}, open("rc.json", "w"))
PY
start rc.json
test_expect_success 'requires_children holds the stage until its running child has ended' '
	run rc_true &&
	check rc_true "
assert end[\"status\"] == \"complete\", end
names = [e[\"event\"] for e in ev]
assert names.index(\"child_finished\") < names.index(\"stage_finished\"), names
assert of(\"child_finished\")[0][\"ok\"], of(\"child_finished\")
"
'
lev_stop_mock_model
start rc.json
test_expect_success 'without it the stage ends at once and the child is cancelled with the run (twin)' '
	run rc_false &&
	check rc_false "
assert end[\"status\"] == \"complete\", end
assert not of(\"child_finished\"), of(\"child_finished\")
pid = of(\"child_started\")[0][\"pid\"]
try:
    os.kill(pid, 0)
    raise AssertionError(\"child %d is left\" % pid)
except ProcessLookupError:
    pass
"
'
lev_stop_mock_model

# ---- policy parity and labels in parallel ----------------------------------------

RF='{"name": "read_file", "id": "r1", "arguments": {"path": "public.txt"}}'
bp deny "max_workers = 4
tool_permissions = { read_file = \"deny\" }"
bp allow "max_workers = 4"
script 4 4 "$RF"
start script.json
test_expect_success 'a read the parent stage denies is denied in every parallel worker' '
	run deny &&
	check deny "
assert max(q[\"in_flight\"] for q in work) == 4
for k in of(\"child_finished\"):
    c = [e for e in kid(k) if e[\"event\"] == \"tool_call\"][0]
    assert c[\"tool\"] == \"read_file\" and c[\"decision\"] == \"deny\", c
    assert c[\"gate\"] == \"permission\" and \"parent run\" in c[\"rule\"], c
"
'
lev_stop_mock_model
start script.json
test_expect_success 'without the deny the same reads are allowed (benign twin)' '
	run allow &&
	check allow "
for k in of(\"child_finished\"):
    c = [e for e in kid(k) if e[\"event\"] == \"tool_call\"][0]
    assert c[\"tool\"] == \"read_file\" and c[\"decision\"] == \"allow\", c
"
'
lev_stop_mock_model

WF='{"name": "web_fetch", "id": "w1", "arguments": {"url": "http://127.0.0.1:9/send"}}'
for what in secret public; do
	bp "taint_$what" "max_workers = 4"
done
script 2 2 "{\"name\": \"read_file\", \"id\": \"r1\", \"arguments\": {\"path\": \"$OUT/secret.txt\"}}" "$WF"
start script.json
test_expect_success 'a private file read in a parallel worker makes the parent private: its post is refused' '
	run taint_secret &&
	check taint_secret "
assert all(k[\"label\"] == \"private\" for k in of(\"child_finished\")), of(\"child_finished\")
w = [e for e in of(\"tool_call\") if e[\"tool\"] == \"web_fetch\"][0]
assert w[\"decision\"] == \"deny\" and w[\"gate\"] == \"taint\" and w[\"taint\"] == \"private\", w
"
'
lev_stop_mock_model
script 2 2 "$RF" "$WF"
start script.json
test_expect_success 'with a public file read, the same post passes the gates (benign twin)' '
	run taint_public &&
	check taint_public "
assert all(k[\"label\"] != \"private\" for k in of(\"child_finished\"))
w = [e for e in of(\"tool_call\") if e[\"tool\"] == \"web_fetch\"][0]
assert w[\"decision\"] == \"allow\", w
"
'
lev_stop_mock_model

test_done
