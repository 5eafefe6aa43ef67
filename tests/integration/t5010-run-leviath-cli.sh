#!/bin/bash
# lev run as Leviath's docs/cli.md writes it: each documented command line,
# its exit status and its output shape (the spawn object, --count's array,
# -t FILE|TEXT, --output-*, --max-depth, -m), --follow/-f for following;
# meta.json, lev ps --json and lev respond in Leviath's names.
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

. "$SRC_DIR/tests/daemon-lib.sh"

mkdir -p work ag
echo note >work/note.txt
cat >ag/agent.leviath <<'EOF2'
[agent]
name = "ag"

[context.regions.task]
seed = "task"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
system_prompt = "test"
EOF2
cat >ag/turns.toml <<'EOF2'
[[turn]]
text = "looking"
[[turn.call]]
tool = "read_file"
args = { path = "note.txt" }

[[turn]]
text = "all done"
EOF2
mkdir -p asker
sed 's/"ag"/"asker"/; s/"read_file"/"shell"/' ag/agent.leviath >asker/agent.leviath
printf '[[turn]]\ntext = "x"\n[[turn.call]]\ntool = "shell"\nargs = { command = "echo line >> appended.txt" }\n\n[[turn]]\ntext = "asked"\n' >asker/turns.toml

# meta RUN KEY: KEY of RUN's meta.json, once the run has ended
meta_ended() {
	python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
sys.exit(0 if m["status"] in ("complete", "error", "cancelled") else 1)
' "$ROOT/runs/$1/meta.json"
}
meta() {
	python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))[sys.argv[2]]; print("" if v is None else v)' \
		"$ROOT/runs/$1/meta.json" "$2"
}
runs() {
	ls "$ROOT/runs" 2>/dev/null | wc -l
}

test_expect_success 'lev run AGENT -t TEXT --json: one spawn object, and it returns' '
	lev run ./ag -t "find the note" --json --workdir work >out 2>err &&
	python3 - out "$PWD" <<-PY &&
	import json, sys
	o = json.load(open(sys.argv[1]))
	assert set(o) == {"run_id", "blueprint_path", "workdir", "yolo"}, o
	assert o["blueprint_path"] == sys.argv[2] + "/ag" and o["workdir"] == sys.argv[2] + "/work", o
	assert o["yolo"] is False, o
	open("id", "w").write(o["run_id"])
	PY
	test -s "$ROOT/daemon.pid" &&
	wait_for meta_ended "$(cat id)" &&
	test "$(meta "$(cat id)" status)" = complete &&
	test "$(meta "$(cat id)" tool_calls)" = 1 &&
	"$LEV" result "$(cat id)" >res && grep -q "all done" res
'

test_expect_success 'lev run AGENT -t TEXT: the run id on stdout, one line, exit 0' '
	lev run ./ag -t "find the note" --workdir work >id 2>err &&
	assert_one_line id &&
	# the record (and meta.json in it) is made by the worker of the run, after the spawn returns
	wait_for test -d "$ROOT/runs/$(cat id)" &&
	grep -q "handed to the daemon" err &&
	wait_for meta_ended "$(cat id)"
'

test_expect_success 'lev run AGENT --count 3 --json: an array of three runs, each its own id' '
	lev run ./ag -t go --count 3 --json --yolo --workdir work >out &&
	python3 - out <<-PY
	import json, sys
	a = json.load(open(sys.argv[1]))
	assert isinstance(a, list) and len(a) == 3, a
	assert len({o["run_id"] for o in a}) == 3 and all(o["yolo"] is True for o in a), a
	PY
'

test_expect_success '--count 1 --json is one object, as Leviath prints it' '
	lev run ./ag -t go --count 1 --json --workdir work >out &&
	python3 -c "import json, sys; assert isinstance(json.load(open(sys.argv[1])), dict)" out
'

test_expect_success 'a bad --count is a usage error (exit 2), nothing spawned' '
	n=$(runs) &&
	test_expect_code 2 lev run ./ag -t go --count 0 --workdir work 2>err &&
	grep -q "count takes a number" err &&
	test_expect_code 2 lev run ./ag -t go --count many --workdir work 2>err &&
	test_expect_code 2 lev run ./ag -t go --count 2 --follow --workdir work 2>err &&
	grep -q "does not go with --follow" err &&
	test "$(runs)" = "$n"
'

test_expect_success '-t FILE reads the task from the file; -t TEXT is the text' '
	printf "the task, from a file" >task.txt &&
	lev run ./ag -t task.txt --workdir work >id 2>/dev/null &&
	wait_for meta_ended "$(cat id)" &&
	grep "\"event\":\"seed\"" "$ROOT/runs/$(cat id)/events.jsonl" | grep -q "\"bytes\":21" &&
	lev run ./ag -t "task.txt is not read here" --workdir work >id 2>/dev/null &&
	wait_for meta_ended "$(cat id)" &&
	grep "\"event\":\"seed\"" "$ROOT/runs/$(cat id)/events.jsonl" | grep -q "\"bytes\":25"
'

test_expect_success '-t naming a file that is not there is an error, nothing spawned' '
	n=$(runs) &&
	test_must_fail lev run ./ag -t ./no-such-task.md --workdir work 2>err &&
	grep -q "looks like a file name and there is no such file" err &&
	test_must_fail lev run ./ag -t "~/no-such-task.md" --workdir work 2>err &&
	test "$(runs)" = "$n"
'

test_expect_success 'lev run --follow (and -f) follows: progress, output, exit status' '
	lev run ./ag -t go --follow --workdir work >out 2>err &&
	grep -q "all done" out && grep -q "complete" err &&
	lev run ./ag -t go -f --json --workdir work >ev 2>err &&
	grep -q "\"event\":\"run_finished\"" ev
'

test_expect_success 'lev run --detach is still accepted: the id, and it returns' '
	lev run ./ag -t go --detach --workdir work >id 2>err &&
	assert_one_line id && wait_for meta_ended "$(cat id)"
'

test_expect_success '--detach with --follow or --foreground is a usage error; --follow --foreground runs here' '
	test_expect_code 2 lev run ./ag -t go --detach --follow --workdir work 2>err &&
	grep -q "detach and --follow do not go together" err &&
	test_expect_code 2 lev run ./ag -t go --detach --foreground --workdir work 2>err &&
	lev run ./ag -t go --follow --foreground --workdir work >out 2>err &&
	grep -q "all done" out
'

test_expect_success '--output-format, --output-instructions, --output-schema JSON|@FILE are taken' '
	lev run ./ag -t go --output-format json --output-instructions "one object" \
		--output-schema "{\"type\": \"object\"}" --json --workdir work >out &&
	echo "{\"type\": \"object\"}" >schema.json &&
	lev run ./ag -t go --output-format xml --output-schema @schema.json --workdir work >id &&
	wait_for meta_ended "$(cat id)"
'

test_expect_success 'an --output-schema that is not a JSON object is refused, nothing spawned' '
	n=$(runs) &&
	test_must_fail lev run ./ag -t go --output-schema "[1]" --workdir work 2>err &&
	grep -q "output-schema: not a JSON object" err &&
	test_must_fail lev run ./ag -t go --output-schema "{nope" --workdir work 2>err &&
	test "$(runs)" = "$n"
'

test_expect_success '--max-depth N is taken; a non-number is a usage error' '
	lev run ./ag -t go --max-depth 1 --workdir work >id &&
	wait_for meta_ended "$(cat id)" &&
	test_expect_code 2 lev run ./ag -t go --max-depth deep --workdir work 2>err
'

test_expect_success '-m MODEL is the run model, as meta.json says' '
	lev run ./ag -t go -m script/other --workdir work >id &&
	wait_for meta_ended "$(cat id)" &&
	test "$(meta "$(cat id)" model)" = script/other
'

test_expect_success 'a waiting run: meta.json waiting_input, ps --json and respond --json in Leviath names' '
	lev run ./asker -t go --workdir work >id &&
	wait_for status_is "$(cat id)" "waiting: tool approval" &&
	test "$(meta "$(cat id)" status)" = waiting_input &&
	test "$(meta "$(cat id)" wait_reason)" = "tool approval" &&
	"$LEV" ps --json >ps.json &&
	"$LEV" respond --json >rq.json &&
	python3 - ps.json rq.json "$(cat id)" <<-PY
	import json, sys
	ps = json.load(open(sys.argv[1]))
	r = [r for r in ps["runs"] if r["run_id"] == sys.argv[3]][0]
	assert r["status"] == "waiting: tool approval" and r["wait_reason"] == "tool approval", r
	assert r["tool_calls"] == r["tools"] and isinstance(r["last_progress_at"], int), r
	assert "title" in r, r
	rq = json.load(open(sys.argv[2]))
	assert isinstance(rq, list) and len(rq) == 1, rq
	q = rq[0]
	assert q["agent_id"] == sys.argv[3] and q["kind"] == "tool_approval", q
	assert q["lev_kind"] == "permission" and q["stage_name"] == "main", q
	open("q", "w").write(q["id"])
	PY
'

test_expect_success 'lev respond ID --approve prints answered, and the run goes on' '
	"$LEV" respond "$(cat q)" --approve >out &&
	tail -n 1 out >last && echo answered >want && test_cmp want last &&
	wait_for meta_ended "$(cat id)" &&
	test "$(meta "$(cat id)" status)" = complete
'

# a checkpoint (a stage's interaction point) and a parent holding for its child
mkdir -p ip kid parent
cat >ip/agent.leviath <<'EOF2'
[agent]
name = "ip"
[stages.plan]
model = { provider = "script", script = "turns.toml" }
mode = "interactive_points"
[[stages.plan.interaction_points]]
name = "plan_approval"
prompt = "Approve the plan?"
style = "confirm"
EOF2
printf '[[turn]]\ntext = "plan v1"\n' >ip/turns.toml
cat >kid/agent.leviath <<'EOF2'
[agent]
name = "kid"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF2
printf '[[turn]]\n[[turn.call]]\ntool = "shell"\nargs = { command = "sleep 5" }\n[[turn]]\ntext = "kid done"\n' >kid/turns.toml
cat >parent/agent.leviath <<'EOF2'
[agent]
name = "parent"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["spawn_agent"]
EOF2
printf '[[turn]]\n[[turn.call]]\ntool = "spawn_agent"\nargs = { blueprint = "kid", task = "wait", wait = true }\n[[turn]]\ntext = "parent done"\n' >parent/turns.toml

test_expect_success 'a run at an interaction point is waiting: checkpoint (meta.json: waiting_input, checkpoint)' '
	lev run ./ip -t go --workdir work >id &&
	wait_for status_is "$(cat id)" "waiting: checkpoint" &&
	test "$(meta "$(cat id)" status)" = waiting_input &&
	test "$(meta "$(cat id)" wait_reason)" = checkpoint &&
	"$LEV" respond --json >rq.json &&
	python3 -c "import json, sys; q = json.load(open(sys.argv[1]))[0]; assert q[\"kind\"] == \"confirm\", q" rq.json &&
	"$LEV" respond "$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))[0][\"id\"])" rq.json)" --approve >out &&
	wait_for meta_ended "$(cat id)" &&
	test "$(meta "$(cat id)" status)" = complete
'

test_expect_success 'the benign twin: an agent question is still waiting: user prompt' '
	mkdir -p asks &&
	printf "[agent]\nname = \"asks\"\n[stages.main]\nmodel = { provider = \"script\", script = \"turns.toml\" }\navailable_tools = [\"ask_user_text\"]\n" >asks/agent.leviath &&
	printf "[[turn]]\n[[turn.call]]\ntool = \"ask_user_text\"\nargs = { question = \"which?\" }\n[[turn]]\ntext = \"ok\"\n" >asks/turns.toml &&
	lev run ./asks -t go --workdir work >id &&
	wait_for status_is "$(cat id)" "waiting: user prompt" &&
	test "$(meta "$(cat id)" wait_reason)" = "user prompt" &&
	"$LEV" cancel "$(cat id)" && wait_for meta_ended "$(cat id)"
'

test_expect_success 'a parent holding for its spawned child is waiting: children(1), then completes' '
	printf "[sandbox]\nkind = \"none\"\n" >"$ROOT/config.toml" && chmod 600 "$ROOT/config.toml" &&
	"$LEV" add ./kid >/dev/null &&
	lev run ./parent -t go --yolo --workdir work >id &&
	wait_for status_is "$(cat id)" "waiting: children(1)" &&
	test "$(meta "$(cat id)" wait_reason)" = "children(1)" &&
	wait_for meta_ended "$(cat id)" &&
	test "$(meta "$(cat id)" status)" = complete
'

test_done
