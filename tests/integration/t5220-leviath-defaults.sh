#!/bin/bash
# Leviath's defaults, run against a mock model through the real HTTP client
# path (docs/blueprint.md "Stage flow", docs/context.md, docs/run.md):
#   - a stage that answers in text before any tool call is nudged (on by
#     default; nudge = { enabled = false } turns it off);
#   - the required-region reminder runs only in a stage that can write
#     context, only for the regions the stage sees, at most max_revisits times;
#   - an output stage that never submits is reminded 3 times, then the run
#     moves on (output_forced) instead of spending max_iterations;
#   - --yolo hides the ask_user_* tools, and a --yolo --detach run with an
#     interaction point finishes without `lev respond`.
# Each with its benign twin.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"

mkdir -p work
echo "hello" >work/hello.txt

# cfg: the mock model as provider mockoa (foreground and daemon runs)
cfg() {
	mock_daemon "$1"
}
# bp DIR: the blueprint from stdin
bp() {
	mkdir -p "$1" && cat >"$1/agent.leviath"
}
# run DIR SCRIPT [ARGS]: a foreground run with no terminal against SCRIPT; events in DIR.ev
run() {
	local d=$1 s=$2
	shift 2
	cfg "$s"
	printf '%b' "${EXTRA_CFG:-}" >>"$ROOT/config.toml"
	setsid -w "$LEV" run --foreground "./$d" --task t --workdir work --json "$@" \
		>"$d.ev" 2>"$d.err"
	local rc=$?
	lev_stop_mock_model
	cp requests.jsonl "$d.req"
	return $rc
}
# check DIR PYTHON: PYTHON runs with ev (events), reqs (request bodies), end
check() {
	python3 - "$1.ev" "$1.req" "$2" <<-'PY'
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	reqs = [json.loads(l)["body"] for l in open(sys.argv[2])]
	end = ev[-1]
	def of(name):
	    return [e for e in ev if e["event"] == name]
	def tools(body):
	    return [t["function"]["name"] for t in body.get("tools", [])]
	exec(sys.argv[3])
	PY
}

M='model = { provider = "mockoa", model = "mock-1" }'

# ---- the nudge --------------------------------------------------------------

for d in nudged unnudged notools; do
bp $d <<EOF
[agent]
name = "$d"
[stages.main]
$M
$([ $d != notools ] && echo 'available_tools = ["read_file"]')
$([ $d = unnudged ] && echo 'nudge = { enabled = false }')
EOF
done
cat >nudge.json <<'EOF'
{ "responses": [
  { "text": "I would read hello.txt" },
  { "calls": [ { "id": "c1", "name": "read_file", "arguments": { "path": "hello.txt" } } ] },
  { "text": "read it" }
] }
EOF

test_expect_success 'a stage with tools that answers in text first is nudged (on by default)' '
	run nudged nudge.json &&
	check nudged "
assert len(of(\"nudge\")) == 1, of(\"nudge\")
assert len(reqs) == 3, len(reqs)
assert \"You have tools available\" in json.dumps(reqs[1][\"messages\"][-1]), reqs[1][\"messages\"][-1]
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"read it\", end
"
'

test_expect_success 'nudge = { enabled = false }: the first answer ends the stage (twin)' '
	run unnudged nudge.json &&
	check unnudged "
assert not of(\"nudge\") and len(reqs) == 1, len(reqs)
assert end[\"output\"] == \"I would read hello.txt\", end
"
'

test_expect_success 'the config [nudge] is every blueprint default' '
	EXTRA_CFG="[nudge]\nenabled = false\n" run nudged nudge.json &&
	check nudged "assert not of(\"nudge\") and len(reqs) == 1, len(reqs)" &&
	EXTRA_CFG="[nudge]\nmax = 1\ntext = \"config nudge for {stage}\"\n" run nudged nudge.json &&
	check nudged "
assert [n[\"text\"] for n in of(\"nudge\")] == [\"config nudge for main\"], of(\"nudge\")
"
'

test_expect_success 'a stage nudge table beats the config [nudge] (twin)' '
	sed "s/^available_tools.*/&\nnudge = { enabled = true }/" nudged/agent.leviath >on.leviath &&
	mkdir -p on && mv on.leviath on/agent.leviath &&
	EXTRA_CFG="[nudge]\nenabled = false\n" run on nudge.json &&
	check on "assert len(of(\"nudge\")) == 1, of(\"nudge\")"
'

test_expect_success 'a stage offered no tool for its work is not nudged (twin)' '
	run notools nudge.json &&
	check notools "
assert not of(\"nudge\") and len(reqs) == 1, len(reqs)
"
'

# ---- the required region ------------------------------------------------------

for d in req_write req_nowrite req_other req_cap; do
bp $d <<EOF
[agent]
name = "$d"
[context.regions]
findings = { kind = "clearable", required = true }
scratch = { kind = "clearable" }
[stages.main]
$M
nudge = { enabled = false }
$([ $d != req_nowrite ] && echo 'available_tools = ["context_write"]')
$([ $d = req_nowrite ] && echo 'available_tools = ["read_file"]')
$([ $d = req_other ] && echo 'context = { regions = { scratch = { kind = "clearable" } } }')
$([ $d = req_cap ] && echo 'max_revisits = 1')
EOF
done
cat >req.json <<'EOF'
{ "responses": [
  { "text": "done" }, { "text": "done" }, { "text": "done" }, { "text": "done" },
  { "text": "done" }
] }
EOF

test_expect_success 'a stage that can write context is reminded of its empty required region, 3 times' '
	run req_write req.json &&
	check req_write "
assert len(reqs) == 4, len(reqs)
assert \"findings\" in json.dumps(reqs[1][\"messages\"][-1]), reqs[1][\"messages\"][-1]
assert end[\"status\"] == \"complete\", end
" &&
	grep -q "asked to fill it (3 of 3)" req_write.ev &&
	grep -q "still empty after 3 reminder" req_write.ev
'

test_expect_success 'max_revisits caps the reminders' '
	run req_cap req.json &&
	check req_cap "assert len(reqs) == 2, len(reqs)"
'

test_expect_success 'a stage that cannot write context is never reminded (twin)' '
	run req_nowrite req.json &&
	check req_nowrite "assert len(reqs) == 1, len(reqs)" &&
	! grep -q "asked to fill" req_nowrite.ev
'

test_expect_success 'a required region outside the stage context view is not asked for (twin)' '
	run req_other req.json &&
	check req_other "assert len(reqs) == 1, len(reqs)"
'

# ---- the output stage that never submits ---------------------------------------

bp out <<EOF
[agent]
name = "out"
[stages.main]
$M
mode = "output"
max_iterations = 50
EOF
cat >never.json <<'EOF'
{ "responses": [ { "text": "here is my answer, in prose", "repeat": true, "match": "mock" } ] }
EOF
cat >late.json <<'EOF'
{ "responses": [
  { "text": "here is my answer, in prose" },
  { "calls": [ { "id": "s1", "name": "submit_output", "arguments": { "output": "the answer" } } ] }
] }
EOF

test_expect_success 'an output stage that never submits is reminded 3 times, then the run moves on' '
	run out never.json &&
	check out "
assert len(reqs) == 4, len(reqs)
assert len(of(\"output_nudge\")) == 3 and len(of(\"output_forced\")) == 1, ev
assert \"submit_output\" in json.dumps(reqs[1][\"messages\"][-1])
fin = of(\"stage_finished\")[-1]
assert fin[\"end\"] == \"output_forced\", fin
assert end[\"status\"] == \"complete\", end
"
'

test_expect_success 'an output stage that submits after one reminder keeps its output (twin)' '
	run out late.json &&
	check out "
assert len(reqs) == 2 and not of(\"output_forced\"), len(reqs)
assert end[\"output\"] == \"the answer\", end
"
'

# ---- --yolo ---------------------------------------------------------------------

bp asker <<EOF
[agent]
name = "asker"
[stages.main]
$M
available_tools = ["read_file", "ask_user_confirm"]
[[stages.main.interaction_points]]
name = "ok"
prompt = "Approve?"
style = "confirm"
EOF
cat >ask.json <<'EOF'
{ "responses": [
  { "calls": [ { "id": "c1", "name": "read_file", "arguments": { "path": "hello.txt" } } ] },
  { "text": "all read" }
] }
EOF

# body_tools N: the tool names of the Nth request (0-based) the mock recorded
body_tools() {
	python3 -c '
import json, sys
reqs = [json.loads(l)["body"] for l in open("requests.jsonl")]
print(" ".join(t["function"]["name"] for t in reqs[int(sys.argv[1])].get("tools", [])))
' "$1"
}

test_expect_success '--yolo --detach: no ask_user_* tool offered, the point is auto-approved, no lev respond' '
	cfg ask.json &&
	setsid -w "$LEV" run ./asker --workdir work --task t --yolo --detach >id 2>/dev/null &&
	wait_for status_is "$(cat id)" complete;
	rc=$?; lev_stop_mock_model; test $rc = 0 &&
	body_tools 0 >tools && grep -q read_file tools && ! grep -q ask_user tools &&
	"$LEV" logs "$(cat id)" | grep -q "auto_approved"
'

test_expect_success 'without --yolo a daemon run is offered ask_user_confirm and shows waiting: checkpoint at its point (twin)' '
	cfg ask.json &&
	setsid -w "$LEV" run ./asker --workdir work --task t --detach >id 2>/dev/null &&
	wait_for status_is "$(cat id)" "waiting: checkpoint" &&
	body_tools 0 >tools && grep -q ask_user_confirm tools &&
	"$LEV" cancel "$(cat id)" >/dev/null;
	lev_stop_mock_model
'

# ---- choosing the next stage --------------------------------------------------------

bp route <<EOF
[agent]
name = "route"
[stages.a]
$M
available_tools = ["read_file"]
nudge = { enabled = false }
[stages.a.transitions.b]
hint = "more sources are needed"
[stages.a.transitions.c]
hint = "ready to write"
[stages.b]
$M
[stages.c]
$M
EOF
cat >route.json <<'EOF'
{ "responses": [
  { "text": "analysed" },
  { "text": "Thinking it over, there is enough.\n\nc" },
  { "text": "written in c" }
] }
EOF
cat >noroute.json <<'EOF'
{ "responses": [
  { "text": "analysed" },
  { "text": "I cannot decide yet, there is a lot to weigh" },
  { "text": "gathered in b" }
] }
EOF

test_expect_success 'the next stage is asked for in a request of its own, with no tools (Leviath)' '
	run route route.json &&
	check route "
assert [e[\"stage\"] for e in of(\"stage_started\")] == [\"a\", \"c\"], ev
r = reqs[1]
assert \"tools\" not in r or not r[\"tools\"], r.get(\"tools\")
assert r.get(\"temperature\") == 0, r.get(\"temperature\")
assert 256 in [v for k, v in r.items() if \"max\" in k], r
last = json.dumps(r[\"messages\"][-1])
assert \"Available next stages\" in last and \"- b: more sources are needed\" in last, last
assert \"Respond with ONLY the stage name\" in last, last
assert tools(reqs[0]), reqs[0]
assert of(\"transition_answer\")[0][\"text\"].endswith(\"c\"), of(\"transition_answer\")
assert end[\"output\"] == \"written in c\", end
"
'

test_expect_success 'an answer naming no stage takes the first open edge (twin)' '
	run route noroute.json &&
	check route "
assert [e[\"stage\"] for e in of(\"stage_started\")] == [\"a\", \"b\"], ev
assert of(\"transition_chosen\")[0][\"how\"] == \"default\"
"
'

# the transition tool lists the open edges as an enum (b closes once visited)
for d in enum enumdone; do
bp $d <<EOF
[agent]
name = "$d"
[stages.a]
$M
available_tools = ["read_file"]
nudge = { enabled = false }
$([ $d = enumdone ] && echo 'allow_complete = true')
[stages.a.transitions.b]
[stages.a.transitions.c]
[stages.b]
$M
max_revisits = 0
next = "a"
[stages.c]
$M
EOF
done
cat >enum.json <<'EOF'
{ "responses": [
  { "text": "analysed" },
  { "text": "b" },
  { "text": "looked in b" },
  { "text": "analysed again" },
  { "text": "c" },
  { "text": "written in c" }
] }
EOF
# enums DIR: the transition tool's target enum in each request that offers it
enums() {
	check "$1" '
for r in reqs:
    for t in r.get("tools", []):
        if t["function"]["name"] == "transition":
            print(" ".join(t["function"]["parameters"]["properties"]["target"].get("enum", ["-"])))
'
}

test_expect_success 'the transition tool offers the open edges as an enum, a closed one gone' '
	run enum enum.json &&
	enums enum >enum.out &&
	printf "%s\n" "b c" "c" >enum.want &&
	test_cmp enum.want enum.out &&
	check enum "assert [e[\"stage\"] for e in of(\"stage_started\")] == [\"a\", \"b\", \"a\", \"c\"], ev"
'

test_expect_success 'with allow_complete the enum also offers DONE (twin)' '
	run enumdone enum.json &&
	enums enumdone >enumdone.out &&
	head -n 1 enumdone.out | grep -qx "b c DONE"
'

# ---- a compact edge is summarised by the [compaction] model -----------------------

for d in cedge cedge_stage; do
bp $d <<EOF
[agent]
name = "$d"
$([ $d = cedge ] && printf '[compaction]\nmodel = "summary-model"')
[stages.a]
$M
[stages.a.transitions.b]
transform = "compact"
[stages.b]
$M
EOF
done
cat >cedge.json <<'EOF'
{ "responses": [
  { "match": "You summarise one part", "repeat": true, "text": "SUMMARY: notes taken" },
  { "text": "notes taken" },
  { "text": "done in b" }
] }
EOF

# models_of: "summary" or "stage", and the model each request asked for
models_of() {
	python3 -c '
import json
for l in open("requests.jsonl"):
    b = json.loads(l)["body"]
    kind = "summary" if "You summarise one part" in json.dumps(b.get("messages", [])[:1]) else "stage"
    print(kind, b["model"])
'
}

test_expect_success 'a compact edge asks the [compaction] model for its summary' '
	run cedge cedge.json &&
	models_of >models &&
	grep -q "^summary summary-model$" models && ! grep -q "^stage summary-model$" models &&
	check cedge "assert [e for e in of(\"transform\") if e[\"op\"] == \"compact\"], ev"
'

test_expect_success 'without [compaction] the summary is the stage model (twin)' '
	run cedge_stage cedge.json &&
	models_of >models &&
	grep -q "^summary mock-1$" models && ! grep -q "summary-model" models
'

test_done
