#!/bin/bash
# Fan-out stages and sub-agents (docs/sub-agents.md), run with the script
# provider: a fan_out call runs one worker per item and merges their answers;
# on_worker_failure, max_items and max_attempts; every worker runs under its
# parent's policy or tighter (read paths, permissions, taint); spawn_agent,
# its max_child_depth and a configured deny.  Each effect is shown from the
# run's events and the workers' sub-records, with a twin where it must not
# happen.
. "$SRC_DIR/tests/lib.sh"

mkdir -p work "$HOME/.leviath" outside
echo "public words" >work/public.txt
echo "PRIVATE-LINE-42" >outside/secret.txt
OUT="$TRASH/outside"
CONFIG="$HOME/.leviath/config.toml"
# the user trusts the blueprints' [read_paths] and lets web_fetch run: the
# taint gate is what decides where private words may go
printf '[security]\nallow_blueprint_read_paths = true\n[tool_permissions]\nweb_fetch = "allow"\n' \
	>"$CONFIG"
chmod 600 "$CONFIG"

M='model = { provider = "script", script = "turns.toml" }'

# bp DIR: the blueprint from stdin; turns DIR: its script from stdin
bp() {
	mkdir -p "$1" && cat >"$1/agent.leviath"
}
turns() {
	cat >"$1/turns.toml"
}
# run DIR [ARGS]: a foreground run with no terminal; its events in DIR.ev
run() {
	local d=$1
	shift
	setsid -w "$LEV" run --foreground "$d" --task t --workdir work --json "$@" >"$d.ev" \
		2>"$d.err"
}
# check DIR PYTHON: PYTHON runs with `ev` (the events), `end` (the last), of(name),
# and kid(event): the events of a child's sub-record
check() {
	python3 - "$1.ev" "$2" <<-'PY'
	import json, os, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	end = ev[-1]
	def of(name, evs=None):
	    return [e for e in (ev if evs is None else evs) if e["event"] == name]
	def kid(e):
	    return [json.loads(l) for l in open(os.path.join(e["record"], "events.jsonl"))]
	def audit(e):
	    return [json.loads(l) for l in open(os.path.join(e["record"], "audit.jsonl"))]
	exec(sys.argv[2])
	PY
}

# fanbp NAME EXTRA-SPLIT-KEYS: split fans out to `one`, merge reads the region
fanbp() {
	bp "$1" <<-EOF
	[agent]
	name = "$1"
	[read_paths]
	allow = ["$OUT"]
	[stages.split]
	mode = "fan_out"
	$M
	worker_stage = "one"
	merge_stage = "merge"
	results_region = "rows"
	$2
	[stages.one]
	$M
	allow_as_worker = true
	available_tools = ["read_file", "submit_output"]
	require_output = true
	max_iterations = 2
	[stages.merge]
	$M
	available_tools = ["context_read", "web_fetch"]
	[context.regions]
	rows = { kind = "temporary" }
	EOF
}

# ---- a fan-out merges its workers ----------------------------------------------

fanbp merge3 ""
turns merge3 <<'EOF'
[[turn]]
[[turn.call]]
tool = "fan_out"
args = { items = [{ id = "a", context = { slice = "first" } }, { id = "b", context = "second" }, { id = "c", context = { slice = "third" } }] }
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "public.txt" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { output = "rows of a" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { output = "rows of b" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { output = "rows of c" }
[[turn]]
[[turn.call]]
tool = "context_read"
args = { region = "rows" }
[[turn]]
text = "merged"
EOF

test_expect_success 'a fan-out runs one worker per item and merges them: N blocks, "N succeeded"' '
	lev validate merge3 >val && grep -q "0 error(s)" val &&
	run merge3 &&
	check merge3 "
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"merged\", end
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert fo[\"ok\"] and fo[\"text\"].startswith(\"[fan_out results: 3 succeeded, 0 failed]\"), fo
kids = of(\"child_finished\")
assert [k[\"child\"] for k in kids] == [\"w1\", \"w2\", \"w3\"], kids
assert [k[\"output\"] for k in kids] == [\"rows of a\", \"rows of b\", \"rows of c\"], kids
# each worker got its own item and nothing else
first = kid(kids[0])
assert first[0][\"event\"] == \"run_started\" and first[0][\"entry_stage\"] == \"one\", first[0]
# the merge stage is where the run went, and the region holds one block per worker
assert [e[\"stage\"] for e in of(\"stage_started\")] == [\"split\", \"merge\"]
rows = [e for e in of(\"tool_result\") if e[\"tool\"] == \"context_read\"][0][\"text\"]
assert rows.count(\"## worker \") == 3 and \"rows of b\" in rows, rows
# the worker calls are in its sub-record, decided by the gate chain
a = audit(kids[0])
assert any(l[\"tool\"] == \"read_file\" and l[\"gate\"] == \"permission\" for l in a), a
"
'

# ---- on_worker_failure -------------------------------------------------------

for mode in continue fail; do
	fanbp "onfail_$mode" "on_worker_failure = \"$mode\""
	turns "onfail_$mode" <<-'EOF'
	[[turn]]
	[[turn.call]]
	tool = "fan_out"
	args = { items = [{ id = "good", context = "x" }, { id = "bad", context = "y" }, { id = "late", context = "z" }] }
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "good rows" }
	[[turn]]
	text = "no submit"
	[[turn]]
	text = "still no submit"
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "late rows" }
	[[turn]]
	text = "merged what there is"
	EOF
done

test_expect_success 'on_worker_failure = "continue": a failed worker is reported, the run goes on' '
	run onfail_continue &&
	check onfail_continue "
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert fo[\"text\"].startswith(\"[fan_out results: 2 succeeded, 1 failed]\"), fo
assert \"- bad: FAILED\" in fo[\"text\"], fo
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"merged what there is\", end
"
'

test_expect_success 'on_worker_failure = "fail": the first failure fails the stage, later items are not run' '
	run onfail_fail;
	check onfail_fail "
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert not fo[\"ok\"] and fo[\"text\"].startswith(\"[fan_out results: 1 succeeded, 1 failed]\"), fo
assert \"1 item(s) not run: a worker failed\" in fo[\"text\"], fo
assert len(of(\"child_started\")) == 2
assert end[\"status\"] == \"error\" and \"worker \x27bad\x27 failed\" in end[\"error\"], end
assert [e[\"stage\"] for e in of(\"stage_started\")] == [\"split\"]
"
'

# ---- max_items -----------------------------------------------------------------

for cap in 2 3; do
	fanbp "cap$cap" "max_items = $cap"
	turns "cap$cap" <<-'EOF'
	[[turn]]
	[[turn.call]]
	tool = "fan_out"
	args = { items = [{ id = "a", context = "x" }, { id = "b", context = "y" }, { id = "c", context = "z" }] }
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "rows a" }
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "rows b" }
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "rows c" }
	[[turn]]
	text = "merged"
	EOF
done

test_expect_success 'max_items caps the items run; the rest are reported, not run' '
	run cap2 &&
	check cap2 "
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert fo[\"text\"].startswith(\"[fan_out results: 2 succeeded, 0 failed]\"), fo
assert \"1 item(s) not run: over max_items = 2\" in fo[\"text\"], fo
assert len(of(\"child_started\")) == 2
"
'

test_expect_success 'with room for every item, every item runs (benign twin)' '
	run cap3 &&
	check cap3 "
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert fo[\"text\"].startswith(\"[fan_out results: 3 succeeded, 0 failed]\"), fo
assert \"not run\" not in fo[\"text\"] and len(of(\"child_started\")) == 3
"
'

# ---- a stage that never fans out -------------------------------------------------

fanbp never "max_attempts = 1"
cat >>never/agent.leviath <<'EOF'
[stages.split.transitions.recover]
condition = "error"
[stages.recover]
model = { provider = "script", script = "turns.toml" }
EOF
turns never <<'EOF'
[[turn]]
text = "I would rather not split"
[[turn]]
text = "still not"
[[turn]]
text = "recovered"
EOF

test_expect_success 'a fan-out stage that never calls fan_out is asked again, then takes its error edge' '
	run never &&
	check never "
assert [e[\"stage\"] for e in of(\"stage_started\")] == [\"split\", \"recover\"], ev
f = of(\"stage_finished\")[0]
assert f[\"end\"] == \"error\", f
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"recovered\", end
assert not of(\"child_started\")
"
'

test_done
