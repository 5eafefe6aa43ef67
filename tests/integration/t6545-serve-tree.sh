#!/bin/bash
# lev serve's sub-agent routes show what lev ps shows: a run's running
# workers under it (GET /api/agents/{id}/children) and every run with its
# own (GET /api/agents/tree), decided by the daemon, not by the server.
# The twin: a run with no sub-agent has an empty list, never another's.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

mkdir -p work fan
# split fans out to two workers, each held at the model until both ask
cat >fan/agent.leviath <<-EOT
[agent]
name = "fan"
[stages.split]
mode = "fan_out"
model = { provider = "mockoa", model = "mock-1" }
worker_stage = "one"
split_prompt = "SPLIT-HERE"
max_workers = 2
[stages.one]
model = { provider = "mockoa", model = "mock-1" }
allow_as_worker = true
available_tools = ["submit_output"]
require_output = true
max_iterations = 3
EOT
python3 - <<-'PY' >script.json
import json
r = [{"match": "SPLIT-HERE", "calls": [{"name": "fan_out", "id": "f1", "arguments":
     {"items": [{"id": "i1", "context": "part 1"}, {"id": "i2", "context": "part 2"}]}}]}]
for i in (1, 2):
    r.append({"match": "Work item 'i%d'" % i, "hold_until": 99, "hold_ms": 60000,
              "calls": [{"name": "submit_output", "id": "s%d" % i,
                         "arguments": {"output": "answer-i%d" % i}}]})
r.append({"match": "SPLIT-HERE", "text": "done", "repeat": True})
print(json.dumps({"responses": r}))
PY
mock_daemon script.json
approval_agent lone 'all done'

"$LEV" daemon start >/dev/null
serve_start

two_workers() {
	test "$("$LEV" ps --json | python3 -c '
import json, sys
r = [r for r in json.load(sys.stdin)["runs"] if r["id"] == sys.argv[1]]
print(len(r[0].get("workers", [])) if r else 0)' "$1")" = 2
}

test_expect_success 'children: the run workers, as lev ps lists them under it' '
	"$LEV" run ./fan --workdir work --task t --detach >id &&
	wait_for two_workers "$(cat id)" &&
	"$LEV" ps --json >ps.json &&
	test "$(api GET /api/agents/$(cat id)/children)" = 200 &&
	test "$(json out "j[\"run\"]")" = "$(cat id)" &&
	python3 - out ps.json "$(cat id)" <<-PY
	import json, sys
	got = json.load(open(sys.argv[1]))["children"]
	run = [r for r in json.load(open(sys.argv[2]))["runs"] if r["id"] == sys.argv[3]][0]
	key = lambda w: w["child"]
	assert sorted(w["child"] for w in got) == ["w1", "w2"], got
	assert sorted(got, key=key) == sorted(run["workers"], key=key), (got, run)
	assert all(w["kind"] == "worker" and w["pid"] > 0 for w in got), got
	PY
'

test_expect_success 'a run with no sub-agent: an empty list (benign twin)' '
	"$LEV" run ./lone --workdir work --task t --detach >lone.id &&
	wait_for status_is "$(cat lone.id)" "waiting: tool approval" &&
	test "$(api GET /api/agents/$(cat lone.id)/children)" = 200 &&
	test "$(json out "j[\"children\"]")" = "[]"
'

test_expect_success 'the tree: every run of lev ps, each with its own sub-agents' '
	test "$(api GET /api/agents/tree)" = 200 &&
	python3 - out "$(cat id)" "$(cat lone.id)" <<-PY
	import json, sys
	runs = {r["id"]: r for r in json.load(open(sys.argv[1]))["runs"]}
	assert sorted(w["child"] for w in runs[sys.argv[2]]["children"]) == ["w1", "w2"], runs
	assert runs[sys.argv[3]]["children"] == [], runs
	assert runs[sys.argv[3]]["status"] == "waiting: tool approval", runs
	PY
'

test_expect_success 'children of a run the daemon does not know: 404' '
	test "$(api GET /api/agents/nosuchrun/children)" = 404 &&
	grep -q "no run" out
'

test_done
