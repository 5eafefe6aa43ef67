#!/bin/bash
# lev dash, under tmux: a run's running fan-out workers are listed nested
# under it, as lev ps lists them (the daemon's ps, nothing decided here), and
# a run with none has no rows under it (the twin); the new-run screen (n)
# picks an installed agent, takes the task and starts the run as lev run
# --detach does, which lev ps then lists and whose model got that task; its twin:
# closing the screen with Esc starts nothing.  ncurses is mapped by lev dash
# alone, never by lev version.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"

if ! command -v tmux >/dev/null 2>&1; then
	test_skip 'lev dash under tmux' 'tmux is not installed (scripts/install-deps installs it)'
	test_done
fi

TMUX_SOCK="$TRASH/tmux.sock"
tm() {
	tmux -S "$TMUX_SOCK" "$@"
}
stop_all() {
	tm kill-server >/dev/null 2>&1
	stop_daemon
	_lev_cleanup
}
trap stop_all EXIT
screen() {
	tm capture-pane -p -t dash
}
on_screen() {
	screen | grep -qF -- "$1"
}
keys() {
	tm send-keys -t dash "$@"
}
dump() {
	echo "--- the pane:" >&2
	screen >&2
	return 1
}
# the number of runs lev ps --all knows
nruns() {
	"$LEV" ps --all --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(len(j.get("runs", [])) + len(j.get("finished", [])))'
}

mkdir -p work fan hello lone
# split fans out to two workers, each held at the model
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
r.append({"match": "the-typed-task", "text": "got-the-typed-task", "repeat": True})
print(json.dumps({"responses": r}))
PY
mock_daemon script.json
# a run with no sub-agent: it waits on an approval
cat >lone/agent.leviath <<-EOT
[agent]
name = "lone"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOT
cat >lone/turns.toml <<-'EOT'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo ran >> made.txt" }
[[turn]]
text = "ok"
EOT
# the agent the new-run screen starts: the mock model answers only the typed task
cat >hello/agent.leviath <<-EOT
[agent]
name = "hello"
[stages.main]
model = { provider = "mockoa", model = "mock-1" }
EOT

two_workers() {
	test "$("$LEV" ps --json | python3 -c '
import json, sys
r = [r for r in json.load(sys.stdin)["runs"] if r["id"] == sys.argv[1]]
print(len(r[0].get("workers", [])) if r else 0)' "$1")" = 2
}
# nested ID: the pane shows run ID, then right under it its workers w1 and w2, indented
nested() {
	screen | python3 -c '
import re, sys
rows = sys.stdin.read().splitlines()
at = [i for i, l in enumerate(rows) if re.match(r"^ %s " % re.escape(sys.argv[1]), l)]
assert len(at) == 1, rows
kids = rows[at[0] + 1:at[0] + 3]
assert sorted(re.match(r"^   (w\d) ", l).group(1) for l in kids) == ["w1", "w2"], kids
assert all("running (worker, pid " in l for l in kids), kids' "$1"
}
# alone ID: the row after run ID is no sub-agent's
alone() {
	screen | python3 -c '
import re, sys
rows = sys.stdin.read().splitlines()
at = [i for i, l in enumerate(rows) if re.match(r"^ %s " % re.escape(sys.argv[1]), l)]
assert len(at) == 1, rows
assert at[0] + 1 == len(rows) or not re.match(r"^   \S", rows[at[0] + 1]), rows' "$1"
}

test_expect_success 'set-up: a run with two workers, a run with none, an installed agent' '
	"$LEV" daemon start >/dev/null &&
	"$LEV" add ./hello >/dev/null &&
	"$LEV" run ./fan --workdir work --task t --detach >fan.id &&
	"$LEV" run ./lone --workdir work --task t --detach >lone.id &&
	wait_for status_is "$(cat lone.id)" "waiting: tool approval" &&
	wait_for two_workers "$(cat fan.id)"
'

test_expect_success 'the run'"'"'s workers are nested under it, as lev ps lists them' '
	tm new-session -d -s dash -x 160 -y 40 -c "$TRASH/work" \
		"\"$LEV\" dash; echo \$? >\"$TRASH/dash.rc\"" &&
	wait_for on_screen "lev dash" &&
	wait_for nested "$(cat fan.id)" &&
	"$LEV" ps | grep -q "^  w1 .*running (worker, pid" || dump
'

test_expect_success 'the twin: a run with no sub-agent has no row under it' '
	wait_for alone "$(cat lone.id)" || dump
'

test_expect_success 'the twin: n, a task typed, then Esc twice starts nothing' '
	n0=$(nruns) &&
	keys n && wait_for on_screen "pick the agent" &&
	on_screen "> hello" &&
	keys Tab && keys -l "never-started" && wait_for on_screen "task> never-started_" &&
	keys Escape && keys Escape && wait_for on_screen "no run started" &&
	test "$(nruns)" = "$n0" &&
	! "$LEV" ps --all | grep -q "hello" || dump
'

test_expect_success 'n: the picked agent runs the typed task, and lev ps lists the run' '
	n0=$(nruns) &&
	keys n && wait_for on_screen "pick the agent" &&
	keys Enter && keys -l "the-typed-task" && wait_for on_screen "task> the-typed-task_" &&
	keys Enter && wait_for on_screen "started run " &&
	id=$(screen | sed -n "s/.*started run \([A-Za-z0-9_-]*\).*/\1/p" | head -1) &&
	test -n "$id" &&
	wait_for on_screen "run $id   agent hello" &&
	test "$(nruns)" = $((n0 + 1)) &&
	"$LEV" ps --all | grep -q "^$id  *hello " &&
	wait_for status_is "$id" complete &&
	test "$("$LEV" result "$id")" = got-the-typed-task || dump
'

# ncurses (and the libtinfo behind it) is opened by lev dash alone
# (src/lev/cursesapi.c): no other lev process maps it
ld_dash_up() {
	tm capture-pane -p -t ld | grep -q "lev dash"
}
test_expect_success 'lev dash loads ncurses; lev version does not' '
	LD_DEBUG=files "$LEV" version >/dev/null 2>ld.err &&
	grep -q "file=libjansson" ld.err &&
	! grep -q "file=libncursesw" ld.err &&
	! grep -q "file=libtinfo" ld.err &&
	tm new-session -d -s ld -x 100 -y 30 \
		"LD_DEBUG=files \"$LEV\" dash 2>\"$TRASH/ld-dash.err\"" &&
	wait_for ld_dash_up &&
	tm send-keys -t ld q &&
	wait_for eval "! tm has-session -t ld 2>/dev/null" &&
	grep -q "file=libncursesw" ld-dash.err
'

test_expect_success 'q quits with status 0' '
	keys Escape && wait_for on_screen "Enter open" && keys q &&
	wait_for test -s "$TRASH/dash.rc" &&
	test "$(cat "$TRASH/dash.rc")" = 0
'

test_done
