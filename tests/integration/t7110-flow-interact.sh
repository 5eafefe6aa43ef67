#!/bin/bash
# A stage's interaction points go to the person through the same path as the
# agent's own questions: for a daemon run, `lev respond`.  Revise sends the
# directive and runs the stage again, Edit replaces the stage's output with
# the person's text, Approve moves on; Abort cancels the run.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

has_request() {
	"$LEV" respond | grep -q "^q[0-9]"
}

# the open requests show TEXT
listed() {
	"$LEV" respond | grep -q "$1"
}

# the open request's id (there is one)
open_request() {
	"$LEV" respond --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert len(r) == 1, r
print(r[0]["id"])
'
}

mkdir -p work ip
cat >ip/agent.leviath <<'EOF'
[agent]
name = "ip"
[stages.plan]
model = { provider = "script", script = "turns.toml" }
mode = "interactive_points"
next = "build"
[[stages.plan.interaction_points]]
name = "plan_approval"
prompt = "Approve the plan?"
style = "multiple_choice"
options = ["Approve", "Revise", "Edit", "Abort"]
abort_options = ["Abort"]
edit_options = ["Edit"]
directives = { "Revise" = "Make the plan shorter." }
followups = { "Approve" = "Build exactly the approved plan." }
[stages.build]
model = { provider = "script", script = "turns.toml" }
EOF
cat >ip/turns.toml <<'EOF'
[[turn]]
text = "plan v1"
[[turn]]
text = "plan v2"
[[turn]]
text = "built"
EOF

test_expect_success 'the point is asked through lev respond, with the stage output shown' '
	"$LEV" daemon start >/dev/null &&
	setsid -w "$LEV" run ip --task t --workdir work --detach >id 2>/dev/null &&
	wait_for listed "^plan v1" &&
	"$LEV" respond >list &&
	grep -q "Approve the plan?" list &&
	grep -q "plan v1" list &&
	grep -q "^    3) Abort$" list
'

test_expect_success 'Revise runs the stage again, Edit takes the text, Approve moves on' '
	id=$(cat id) &&
	"$LEV" respond "$(open_request)" --choice 1 &&
	wait_for listed "^plan v2" &&
	"$LEV" respond "$(open_request)" --choice 2 &&
	wait_for listed "your text replaces it" &&
	"$LEV" respond "$(open_request)" "the plan, by the user" &&
	wait_for listed "^the plan, by the user" &&
	"$LEV" respond "$(open_request)" --choice 0 &&
	wait_for status_is "$id" complete &&
	"$LEV" logs "$id" >ev &&
	python3 - ev <<-'"'"'PY'"'"'
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	out = [e["outcome"] for e in ev if e["event"] == "interaction"]
	assert out == ["revise", "edited", "approved"], out
	fin = [e for e in ev if e["event"] == "stage_finished"]
	assert fin[0]["stage"] == "plan" and fin[0]["output"] == "the plan, by the user", fin[0]
	assert ev[-1]["status"] == "complete" and ev[-1]["output"] == "built", ev[-1]
	PY
'

test_expect_success 'Abort cancels the run at the point: no next stage' '
	setsid -w "$LEV" run ip --task t --workdir work --detach >id2 2>/dev/null &&
	wait_for listed "^plan v1" &&
	"$LEV" respond "$(open_request)" --choice 3 &&
	wait_for status_is "$(cat id2)" cancelled &&
	"$LEV" logs "$(cat id2)" >ev2 &&
	python3 - ev2 <<-'"'"'PY'"'"'
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	assert [e["stage"] for e in ev if e["event"] == "stage_started"] == ["plan"]
	assert ev[-1]["status"] == "cancelled" and "aborted at interaction point" in ev[-1]["error"], ev[-1]
	PY
'

mkdir -p rv
cat >rv/agent.leviath <<'EOF'
[agent]
name = "rv"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["present_for_review"]
EOF
cat >rv/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "present_for_review"
args = { title = "The plan", markdown = "step 1, step 2" }
[[turn]]
text = "done"
EOF

test_expect_success 'present_for_review: the person edits the document; their text is the result' '
	setsid -w "$LEV" run rv --task t --workdir work --detach >id3 2>/dev/null &&
	wait_for listed "^step 1, step 2" &&
	"$LEV" respond "$(open_request)" --choice 1 &&
	wait_for listed "your text replaces it" &&
	"$LEV" respond "$(open_request)" "step 1 only" &&
	wait_for status_is "$(cat id3)" complete &&
	"$LEV" logs "$(cat id3)" >ev3 &&
	python3 - ev3 <<-'"'"'PY'"'"'
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	r = [e for e in ev if e["event"] == "tool_result"][0]
	assert r["ok"] and r["text"].endswith("It is now:\n\nstep 1 only"), r
	PY
'

test_expect_success 'present_for_review: Abort cancels the run' '
	setsid -w "$LEV" run rv --task t --workdir work --detach >id4 2>/dev/null &&
	wait_for listed "^step 1, step 2" &&
	"$LEV" respond "$(open_request)" --choice 2 &&
	wait_for status_is "$(cat id4)" cancelled
'

test_done
