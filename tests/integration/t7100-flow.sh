#!/bin/bash
# Leviath's stage flow, run with the script provider: the model picks an edge
# (the transition tool, or its answer to the transition prompt), an edge's
# gate refuses it until the work is done, stuck triggers and dead ends fire,
# the output spec is checked, required_tools and the nudge hold a stage,
# interaction points ask the person, an edge's transform clears and
# summarises regions (the summary keeps its taint).  Each effect is shown
# from the run's events, with a twin where it must not happen.
. "$SRC_DIR/tests/lib.sh"

mkdir -p work "$HOME/.leviath"
# the user lets file writes run (a blueprint cannot)
printf '[tool_permissions]\nwrite_file = "allow"\n' >"$HOME/.leviath/config.toml"
chmod 600 "$HOME/.leviath/config.toml"

# bp DIR: the blueprint from stdin, every stage on DIR/turns.toml
bp() {
	mkdir -p "$1" && cat >"$1/agent.leviath"
}
# turns DIR: the script from stdin
turns() {
	cat >"$1/turns.toml"
}
# run DIR: a foreground run with no terminal; its events in DIR.ev
run() {
	setsid -w "$LEV" run --foreground "$1" --task t --workdir work --json >"$1.ev" 2>"$1.err"
}
# check DIR PYTHON: PYTHON runs with `ev` (the events) and `stages` (entered, in order)
check() {
	python3 - "$1.ev" "$2" <<-'PY'
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	stages = [e["stage"] for e in ev if e["event"] == "stage_started"]
	end = ev[-1]
	def of(name):
	    return [e for e in ev if e["event"] == name]
	exec(sys.argv[2])
	PY
}

M='model = { provider = "script", script = "turns.toml" }'

# ---- choosing an edge ------------------------------------------------------

for d in pick pick_text; do
bp $d <<EOF
[agent]
name = "$d"
[stages.a]
$M
[stages.a.transitions.b]
hint = "more sources are needed"
[stages.a.transitions.c]
hint = "ready to write"
[stages.b]
$M
[stages.c]
$M
EOF
done
turns pick <<'EOF'
[[turn]]
text = "analysed"
[[turn]]
[[turn.call]]
tool = "transition"
args = { target = "c" }
[[turn]]
text = "written in c"
EOF
turns pick_text <<'EOF'
[[turn]]
text = "analysed"
[[turn]]
text = "b"
[[turn]]
text = "gathered in b"
EOF

test_expect_success 'two edges: the model is asked, and the transition tool takes the one it names' '
	lev validate pick >val && ! grep -q "choosing among transitions" val &&
	run pick &&
	check pick "
assert stages == [\"a\", \"c\"], stages
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"written in c\", end
p = of(\"transition_prompt\")[0][\"text\"]
assert \"- b: more sources are needed\" in p and \"- c: ready to write\" in p, p
t = of(\"stage_transition\")[0]
assert t[\"to\"] == \"c\" and t[\"how\"] == \"chosen\", t
assert of(\"transition_chosen\")[0][\"how\"] == \"transition tool\"
# the hand-off is the stage output, not the answer to the prompt
assert of(\"stage_finished\")[0][\"output\"] == \"analysed\"
"
'

test_expect_success 'the same stage, answered with the stage name: the other edge' '
	run pick_text &&
	check pick_text "
assert stages == [\"a\", \"b\"], stages
assert of(\"transition_chosen\")[0][\"how\"] == \"answer\"
"
'

bp prompt <<EOF
[agent]
name = "prompt"
[stages.a]
$M
allow_complete = true
transition_prompt = "Decide: respond with b, or DONE."
[stages.a.transitions.b]
hint = "go on"
[stages.b]
$M
EOF
turns prompt <<'EOF'
[[turn]]
text = "the answer is 42"
[[turn]]
text = "DONE"
EOF

test_expect_success 'transition_prompt is what the model is asked; DONE (allow_complete) ends the run' '
	run prompt &&
	check prompt "
assert stages == [\"a\"], stages
assert of(\"transition_prompt\")[0][\"text\"].startswith(\"Decide: respond with b, or DONE.\")
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"the answer is 42\", end
"
'

test_expect_success 'a name that is no choice is refused by the transition tool' '
	bp badpick <pick/agent.leviath && sed -i "s/\"pick\"/\"badpick\"/" badpick/agent.leviath &&
	printf "%s\n" "[[turn]]" "[[turn.call]]" "tool = \"transition\"" \
		"args = { target = \"nowhere\" }" "[[turn]]" "text = \"analysed\"" \
		"[[turn]]" "text = \"c\"" "[[turn]]" "text = \"written in c\"" >badpick/turns.toml &&
	run badpick;
	check badpick "
r = [e for e in of(\"tool_result\") if e[\"tool\"] == \"transition\"][0]
assert not r[\"ok\"] and \"is not one of this stage\" in r[\"text\"], r
assert stages == [\"a\", \"c\"], stages
"
'

test_expect_success 'an answer to the transition prompt naming no choice takes the first edge (Leviath)' '
	bp nopick <pick/agent.leviath && sed -i "s/\"pick\"/\"nopick\"/" nopick/agent.leviath &&
	printf "%s\n" "[[turn]]" "text = \"analysed\"" "[[turn]]" \
		"text = \"I cannot decide yet\"" \
		"[[turn]]" "text = \"gathered\"" >nopick/turns.toml &&
	run nopick &&
	check nopick "
assert stages == [\"a\", \"b\"], stages
assert of(\"transition_chosen\")[0][\"how\"] == \"default\", of(\"transition_chosen\")
"
'

# ---- gates -----------------------------------------------------------------

for d in gate gate_ok; do
bp $d <<EOF
[agent]
name = "$d"
[stages.impl]
$M
available_tools = ["write_file"]
nudge = { enabled = false }	# the gate's refusals alone
[stages.impl.transitions.review]
hint = "implemented"
gate = { require_modifications = true, max_attempts = 2, message = "Write the change first." }
[stages.review]
$M
EOF
done
turns gate <<'EOF'
[[turn]]
text = "done, trust me"
[[turn]]
text = "really done"
[[turn]]
text = "done again"
[[turn]]
text = "reviewed"
EOF
turns gate_ok <<'EOF'
[[turn]]
[[turn.call]]
tool = "write_file"
args = { path = "change.txt", content = "new" }
[[turn]]
text = "done"
[[turn]]
text = "reviewed"
EOF

test_expect_success 'a gate refuses the edge with its message, max_attempts times, then lets it through' '
	run gate &&
	check gate "
r = of(\"gate_refused\")
assert len(r) == 2 and r[0][\"message\"] == \"Write the change first.\", r
assert len(of(\"gate_forced\")) == 1
assert stages == [\"impl\", \"review\"], stages
assert any(\"the edge is taken anyway\" in w[\"message\"] for w in of(\"warning\"))
"
'

test_expect_success 'a stage that did the work passes its gate at once' '
	run gate_ok &&
	check gate_ok "
assert not of(\"gate_refused\") and not of(\"gate_forced\")
assert stages == [\"impl\", \"review\"] and end[\"status\"] == \"complete\", (stages, end)
" &&
	test "$(cat work/change.txt)" = new
'

# ---- stuck triggers and dead ends --------------------------------------------

for n in 3 10; do
bp stuck$n <<EOF
[agent]
name = "stuck$n"
[stages.work]
$M
available_tools = ["current_time"]
[stages.work.transitions.finish]
hint = "finished"
[stages.work.transitions.reassess]
condition = "stuck"
stuck_after_tool_calls = $n
[stages.reassess]
$M
[stages.finish]
$M
EOF
turns stuck$n <<'EOF'
[[turn]]
[[turn.call]]
tool = "current_time"
[[turn]]
[[turn.call]]
tool = "current_time"
[[turn]]
[[turn.call]]
tool = "current_time"
[[turn]]
text = "work done"
[[turn]]
text = "next stage done"
EOF
done

test_expect_success 'a stuck trigger fires the stuck edge; the next stage is told why' '
	run stuck3 &&
	check stuck3 "
assert stages == [\"work\", \"reassess\"], stages
s = of(\"stuck\")[0]
assert s[\"target\"] == \"reassess\" and \"3 tool calls\" in s[\"reason\"], s
assert of(\"stage_finished\")[0][\"end\"] == \"stuck\"
assert of(\"stage_transition\")[0][\"how\"] == \"stuck\"
"
'

test_expect_success 'under its threshold the stage ends normally, by its done edge' '
	run stuck10 &&
	check stuck10 "
assert not of(\"stuck\") and stages == [\"work\", \"finish\"], stages
"
'

for d in deadend nodead; do
bp $d <<EOF
[agent]
name = "$d"
[stages.plan]
$M
[stages.plan.transitions.review]
hint = "plan ready"
[stages.review]
$M
max_revisits = 0
[stages.review.transitions.plan]
hint = "revise"
[stages.answer]
$M
EOF
turns $d <<'EOF'
[[turn]]
text = "plan 1"
[[turn]]
text = "review: revise"
[[turn]]
text = "plan 2"
[[turn]]
text = "the answer"
EOF
done
cat >>deadend/agent.leviath <<'EOF'
[stages.plan.transitions.answer]
condition = "dead_end"
EOF

test_expect_success 'a dead_end edge is taken only when every other edge is out of revisits' '
	run deadend &&
	check deadend "
assert stages == [\"plan\", \"review\", \"plan\", \"answer\"], stages
assert of(\"stage_transition\")[-1][\"how\"] == \"dead_end\"
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"the answer\", end
"
'

test_expect_success 'without one the run stops at the revisit limit' '
	test_expect_code 1 run nodead &&
	check nodead "
assert stages == [\"plan\", \"review\", \"plan\"], stages
assert end[\"status\"] == \"error\" and \"max_revisits\" in end[\"error\"], end
"
'

# ---- output spec, required_tools, nudge -------------------------------------

bp out <<EOF
[agent]
name = "out"
[stages.main]
$M
mode = "output"
[stages.main.output]
format = "json"
instructions = "one object"
schema = { type = "object", required = ["n"], properties = { n = { type = "integer" } } }
EOF
turns out <<'EOF'
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { output = "Here it is: {\"n\": 3}" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { output = "{\"n\": \"three\"}" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { output = "{\"n\": 3}" }
EOF

test_expect_success 'submit_output is checked: not JSON, then not the schema, then accepted' '
	run out &&
	check out "
r = of(\"output_rejected\")
assert len(r) == 2, r
assert \"does not parse\" in r[0][\"reason\"], r[0]
assert \"does not match the stage\" in r[1][\"reason\"] and \"n\" in r[1][\"reason\"], r[1]
res = [e for e in of(\"tool_result\") if e[\"tool\"] == \"submit_output\"]
assert [x[\"ok\"] for x in res] == [False, False, True], res
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"{\\\"n\\\": 3}\", end
"
'

test_expect_success 'three refused submissions fail the stage with a clear message' '
	bp out3 <out/agent.leviath && sed -i "s/\"out\"/\"out3\"/" out3/agent.leviath &&
	sed "s/{\\\\\"n\\\\\": 3}\" }\$/nope\" }/" out/turns.toml >out3/turns.toml &&
	! grep -q "n.: 3}\" }$" out3/turns.toml &&
	test_expect_code 1 run out3 &&
	check out3 "
assert end[\"status\"] == \"error\" and \"the output was refused 3 times\" in end[\"error\"], end
"
'

test_expect_success 'a schema outside the subset lev checks fails closed, and validate says so' '
	bp badschema <out/agent.leviath &&
	sed -i "s/\"out\"/\"badschema\"/; s/type = \"object\", required/type = \"object\", patternProperties = {}, required/" badschema/agent.leviath &&
	cp out/turns.toml badschema/ &&
	lev validate badschema >val &&
	grep -q "output-schema-unchecked" val &&
	test_expect_code 1 run badschema &&
	check badschema "
r = [x[\"reason\"] for x in of(\"output_rejected\")]
assert len(r) == 3 and all(\"outside what lev can check\" in x for x in r[1:]), r
assert end[\"status\"] == \"error\", end
"
'

for d in req req_ok; do
bp $d <<EOF
[agent]
name = "$d"
[stages.main]
$M
available_tools = ["current_time"]
required_tools = ["current_time"]
nudge = { enabled = false }	# required_tools' reminders alone
EOF
done
turns req <<'EOF'
[[turn]]
text = "done"
[[turn]]
text = "done"
[[turn]]
text = "done"
[[turn]]
text = "done"
EOF
turns req_ok <<'EOF'
[[turn]]
text = "done"
[[turn]]
[[turn.call]]
tool = "current_time"
[[turn]]
text = "done, with the time"
EOF

test_expect_success 'required_tools: the stage may not end before the tool was called' '
	run req_ok &&
	check req_ok "
assert len(of(\"required_tools_missing\")) == 1
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"done, with the time\", end
"
'

test_expect_success 'required_tools never called: the stage fails after the reminders' '
	test_expect_code 1 run req &&
	check req "
assert len(of(\"required_tools_missing\")) == 3
assert \"without calling its required tools: current_time\" in end[\"error\"], end
"
'

for d in nudge nonudge; do
bp $d <<EOF
[agent]
name = "$d"
[stages.main]
$M
available_tools = ["current_time"]
EOF
turns $d <<'EOF'
[[turn]]
text = "I would check the time"
[[turn]]
text = "fine, no tools"
EOF
done
cat >>nudge/agent.leviath <<'EOF'
nudge = { max = 1, text = "Use your tools in {stage}." }
EOF
cat >>nonudge/agent.leviath <<'EOF'
nudge = { enabled = false }
EOF

test_expect_success 'a stage nudge sends its text when the model answers before any tool call' '
	run nudge &&
	check nudge "
n = of(\"nudge\")
assert len(n) == 1 and n[0][\"text\"] == \"Use your tools in main.\", n
assert end[\"output\"] == \"fine, no tools\", end
"
'

test_expect_success 'nudge enabled = false: the first answer ends the stage' '
	run nonudge &&
	check nonudge "
assert not of(\"nudge\") and end[\"output\"] == \"I would check the time\", end
"
'

# ---- transforms --------------------------------------------------------------

for d in compact compact_pub; do
bp $d <<EOF
[agent]
name = "$d"
[security]
taint_tracking = true
[context.regions]
notes = { kind = "temporary", max_tokens = 4000, seed = { literal = "sh is installed" } }
scratch = { kind = "clearable", max_tokens = 4000, seed = { literal = "scratch work" } }
conversation = { kind = "sliding_window", max_tokens = 20000 }
[stages.a]
$M
available_tools = ["which_command"]
nudge = { enabled = false }
[stages.a.transitions.b]
hint = "go on"
transform = "custom"
transform_config = { compact = ["notes"], clear = ["scratch"], compact_prompt = "Keep the facts" }
[stages.b]
$M
available_tools = ["context_read"]
EOF
done
cat >compact/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "which_command"
args = { command = "sh" }
[[turn]]
text = "a done"
[[turn]]
text = "SUMMARY: sh is there"
[[turn]]
[[turn.call]]
tool = "context_read"
args = { region = "notes" }
[[turn.call]]
tool = "context_read"
args = { region = "scratch" }
[[turn]]
text = "b done"
EOF
sed '1,4d' compact/turns.toml >compact_pub/turns.toml

test_expect_success 'custom transform: clear empties a region, compact replaces it by the summary' '
	run compact &&
	check compact "
t = {(e[\"region\"], e[\"op\"]) for e in of(\"transform\")}
assert t == {(\"notes\", \"compact\"), (\"scratch\", \"clear\")}, t
reads = [e[\"text\"] for e in of(\"tool_result\") if e[\"tool\"] == \"context_read\"]
assert \"SUMMARY: sh is there\" in reads[0] and \"scratch work\" not in reads[1], reads
assert end[\"status\"] == \"complete\", end
"
'

test_expect_success 'the summary carries the taint of what it summarised (internal), never less' '
	check compact "
c = [e for e in of(\"transform\") if e[\"op\"] == \"compact\"][0]
assert c[\"label\"] == \"internal\", c
" &&
	run compact_pub &&
	check compact_pub "
c = [e for e in of(\"transform\") if e[\"op\"] == \"compact\"][0]
assert c[\"label\"] == \"public\", c
"
'

# ---- interaction points --------------------------------------------------------

for d in ip_auto ip_ask; do
bp $d <<EOF
[agent]
name = "$d"
[stages.plan]
$M
mode = "interactive_points"
next = "build"
[[stages.plan.interaction_points]]
name = "plan_approval"
prompt = "Approve the plan?"
style = "multiple_choice"
options = ["Approve", "Revise", "Abort"]
abort_options = ["Abort"]
directives = { "Revise" = "Ask what to change, then re-plan." }
[stages.build]
$M
EOF
turns $d <<'EOF'
[[turn]]
text = "the plan"
[[turn]]
text = "built"
EOF
done
sed -i 's/^abort_options = \["Abort"\]$/&\nunattended = "ask"/' ip_ask/agent.leviath

test_expect_success 'nobody to answer: an auto_approve point takes its first option, recorded' '
	run ip_auto &&
	check ip_auto "
i = of(\"interaction\")[0]
assert i[\"automatic\"] and i[\"answer\"] == \"Approve\" and i[\"outcome\"] == \"auto_approved\", i
assert stages == [\"plan\", \"build\"] and end[\"status\"] == \"complete\", (stages, end)
"
'

test_expect_success 'unattended = "ask" with nobody to answer stops the run' '
	test_expect_code 1 run ip_ask &&
	check ip_ask "
assert stages == [\"plan\"], stages
assert \"interaction point .plan_approval. needs an answer\" in end[\"error\"] or \"plan_approval\" in end[\"error\"], end
"
'

# ---- what the model is told (a mock model on loopback records each request) --

export MOCK_KEY=sk-mock-flow-0123456789
. "$SRC_DIR/tests/compat/mock-providers.sh"
bp told <<'EOF'
[agent]
name = "told"
[stages.a]
model = "mock/mock-1"
transition_prompt = "PICK-NOW: b or c?"
[stages.a.output]
instructions = "INSTR-A: one line"
[stages.a.transitions.b]
hint = "HINT-B: go wide"
[stages.a.transitions.c]
hint = "HINT-C: go deep"
[stages.b]
model = "mock/mock-1"
[stages.c]
model = "mock/mock-1"
EOF
cat >told/conversation.json <<'EOF'
{ "responses": [ { "text": "analysed" }, { "text": "b" }, { "text": "done in b" } ] }
EOF

test_expect_success 'the output spec, the choices and their hints, the transition prompt reach the model' '
	lev_start_mock_model told/conversation.json &&
	{ cat "$HOME/.leviath/config.toml"; mock_providers; } >told.toml &&
	cp told.toml "$HOME/.leviath/config.toml" &&
	run told; rc=$?; lev_stop_mock_model; test $rc = 0 &&
	python3 - requests.jsonl <<-'"'"'PY'"'"'
	import json, sys
	reqs = [json.loads(l)["body"] for l in open(sys.argv[1])]
	assert len(reqs) == 3, len(reqs)
	def said(r):
	    return json.dumps(r["messages"])
	first, second, third = (said(r) for r in reqs)
	assert "INSTR-A: one line" in first and "HINT-B: go wide" in first, first
	assert "transition" in [t["function"]["name"] for t in reqs[0]["tools"]]
	assert "PICK-NOW: b or c?" in second and "- c: HINT-C: go deep" in second, second
	assert "analysed" in third and "HINT-B: go wide" in third, third
	assert "PICK-NOW" not in third, third
	PY
'

test_done
