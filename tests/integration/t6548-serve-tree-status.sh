#!/bin/bash
# lev serve's GET /api/agents/{id}/tree-status: the run and its sub-agents
# (a spawn_agent child here), each with its status and the tokens its own
# record's model responses reported, and the totals with every
# descendant's: what `lev stages RUN --tree --json` reads from the run's
# record and its sub-records.  The twin: a run with no sub-agent is one
# node, its children empty.  An unknown run is 404, what is no run id 400.
# A sub-record swapped for a symlink to forged events is not followed.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

mkdir -p work sp
cat >sp/agent.leviath <<-EOT
[agent]
name = "sp"
[stages.main]
model = { provider = "mockoa", model = "mock-1" }
system_prompt = "PARENT-HERE"
available_tools = ["spawn_agent"]
[stages.one]
model = { provider = "mockoa", model = "mock-1" }
system_prompt = "CHILD-HERE"
allow_as_worker = true
available_tools = ["submit_output"]
require_output = true
max_iterations = 3
EOT
python3 - <<-'PY' >script.json
import json
r = [{"match": "PARENT-HERE", "calls": [{"name": "spawn_agent", "id": "sp1", "arguments":
     {"blueprint": "one", "task": "CHILD-TASK", "wait": True}}]},
     {"match": "CHILD-HERE", "calls": [{"name": "submit_output", "id": "so1",
      "arguments": {"output": "child answer"}}]},
     {"match": "CHILD-HERE", "text": "child done", "repeat": True},
     {"match": "PARENT-HERE", "text": "parent done", "repeat": True}]
print(json.dumps({"responses": r}))
PY
mock_daemon script.json
approval_agent lone 'all done'

"$LEV" daemon start >/dev/null
serve_start

test_expect_success 'a run that spawns a child: the tree, statuses and tokens from the records' '
	"$LEV" run ./sp --workdir work --task t --detach >id &&
	wait_for status_is "$(cat id)" complete &&
	test "$(api GET /api/agents/$(cat id)/tree-status)" = 200 &&
	"$LEV" logs "$(cat id)" >ev.jsonl &&
	python3 - out ev.jsonl "$(cat id)" <<-PY
	import json, os, sys
	t = json.load(open(sys.argv[1]))
	ev = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
	def toks(evs):
	    m = [e for e in evs if e["event"] == "model_response"]
	    return {"prompt_tokens": sum(e.get("prompt_tokens", 0) for e in m),
	            "output_tokens": sum(e.get("completion_tokens", 0) for e in m)}
	fin = [e for e in ev if e["event"] == "child_finished"]
	assert len(fin) == 1, fin
	kid = [json.loads(l) for l in open(os.path.join(fin[0]["record"], "events.jsonl"))]
	assert t["id"] == t["run"] == sys.argv[3] and t["kind"] == "run", t
	assert t["status"] == "complete" and t["agent"] == "sp", t
	assert t["tokens"] == toks(ev), (t["tokens"], toks(ev))
	assert t["tokens"]["output_tokens"] > 0, t
	assert len(t["children"]) == 1, t
	c = t["children"][0]
	assert c["id"] == fin[0]["child"] and c["kind"] == "child" and c["status"] == "complete", c
	assert c["tokens"] == toks(kid) and c["tokens"]["output_tokens"] > 0, (c, toks(kid))
	assert c["children"] == [] and c["total"]["agents"] == 1, c
	for k in ("prompt_tokens", "output_tokens"):
	    assert t["total"][k] == t["tokens"][k] + c["tokens"][k], t
	assert t["total"]["agents"] == 2, t
	PY
'

test_expect_success 'lev stages RUN --tree shows the same tree' '
	"$LEV" stages "$(cat id)" --tree --json >cli.json &&
	python3 -c "
import json, sys
a, b = json.load(open(\"out\")), json.load(open(\"cli.json\"))
for k in (\"status\", \"agent\", \"stage\"):
    a.pop(k)
assert a == b, (a, b)
" &&
	"$LEV" stages "$(cat id)" --tree | grep -q "^  c1 .*complete"
'

test_expect_success 'a run with no sub-agent: one node, no children (benign twin)' '
	"$LEV" run ./lone --workdir work --task t --detach >lone.id &&
	wait_for status_is "$(cat lone.id)" "waiting: tool approval" &&
	test "$(api GET /api/agents/$(cat lone.id)/tree-status)" = 200 &&
	test "$(json out "j[\"children\"]")" = "[]" &&
	test "$(json out "j[\"total\"][\"agents\"]")" = 1 &&
	test "$(json out "j[\"id\"]")" = "$(cat lone.id)"
'

test_expect_success 'an unknown run is 404, what is no run id 400, no token 401' '
	test "$(api GET /api/agents/20200101-000000-000-abcdef/tree-status)" = 404 &&
	grep -q "no run" out &&
	test "$(api GET /api/agents/nosuchrun/tree-status)" = 400 &&
	grep -q "not a run id" out &&
	test "$(api GET /api/agents/$(cat id)x/tree-status)" = 400 &&
	test "$(curl -s -o out -w "%{http_code}" "$URL/api/agents/$(cat id)/tree-status")" = 401 &&
	! grep -q total out
'

# the sub-record swapped for a symlink to a forged one outside the record
test_expect_success 'a sub-record that is a symlink is not followed: no forged tokens' '
	rec=$(python3 -c "import json,sys; print([json.loads(l) for l in open(\"ev.jsonl\") if l.strip() and json.loads(l)[\"event\"] == \"child_finished\"][0][\"record\"])") &&
	mkdir -p forged &&
	echo "{\"event\": \"model_response\", \"prompt_tokens\": 999999, \"completion_tokens\": 999999}" >forged/events.jsonl &&
	mv "$rec" real-sub &&
	ln -s "$TRASH/forged" "$rec" &&
	test "$(api GET /api/agents/$(cat id)/tree-status)" = 200 &&
	! grep -q 999999 out &&
	test "$(json out "j[\"children\"][0][\"tokens\"][\"recorded\"]")" = False &&
	test "$(json out "j[\"total\"][\"agents\"]")" = 2
'

test_done
