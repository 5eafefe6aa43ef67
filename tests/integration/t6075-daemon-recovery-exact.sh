#!/bin/bash
# Crash recovery loses nothing and repeats nothing (docs/daemon.md "Crash
# recovery"):
#  - a model turn of any size is journalled (one over a frame in parts), so
#    after kill -9 of the daemon a call of a 1.1 MB turn is replayed, never
#    run again: the line it appends is there once (twin: a small turn);
#  - a paused run stays paused across kill -9 and a restart, and `lev resume`
#    and `lev cancel` work on it;
#  - `lev daemon start` after kill -9 does not wait for the old workers: one
#    that is still there (stopped) is still there when start returns, and its
#    run is recovered once it is gone (the grace before SIGKILL is set to an
#    hour, so no timing decides the test);
#  - a worker's exit is judged after every frame it sent is read: forty short
#    runs finishing while the config changes (so the daemon writes to workers
#    that are exiting) all end complete, with their output.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

CONFIG="$ROOT/config.toml"

# script SIZE MARK: a mock model whose first turn (SIZE bytes of text) calls
# a shell command that appends to log.txt; the second asks a question; the
# third ends.  The first is "repeat": a run that asked it again live (its
# turn lost) would get the same call again.  Each later turn matches what
# only its request holds, so it is listed first.
script() {
	python3 - "$1" "$2" <<-'PY'
	import json, sys
	size, mark = int(sys.argv[1]), sys.argv[2]
	print(json.dumps({"responses": [
	    {"match": ["TASK-" + mark, "colour-" + mark], "text": "finished " + mark},
	    {"match": ["TASK-" + mark, "APPENDED-" + mark],
	     "calls": [{"id": "q1", "name": "ask_user_text",
	                "arguments": {"question": "Which colour?"}}]},
	    {"match": "TASK-" + mark, "repeat": True, "text": "x" * size,
	     "calls": [{"id": "s1", "name": "shell",
	                "arguments": {"command": "echo %s >> log.txt; echo APPENDED-%s" % (mark, mark)}}]},
	]}))
	PY
}

mkdir -p work big
cat >big/agent.leviath <<'EOF'
[agent]
name = "big"
[stages.main]
model = { provider = "mockoa", model = "mock-1" }
available_tools = ["shell", "ask_user_text"]
EOF
{ script 1153434 BIG; } >big.json
python3 - big.json small.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["responses"]:
    s = json.dumps(r).replace("BIG", "SMALL")
    r.clear(); r.update(json.loads(s))
d["responses"][2]["text"] = "a small turn"
json.dump(d, open(sys.argv[2], "w"))
PY
python3 - big.json small.json >all.json <<'PY'
import json, sys
out = []
for f in sys.argv[1:]:
    out += json.load(open(f))["responses"]
print(json.dumps({"responses": out}))
PY

mock_daemon all.json

# the longest turn RUN has in the journal, in bytes
longest_turn() {
	python3 - "$ROOT/lev.db" "$1" <<-'PY'
	import sqlite3, sys
	db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
	print(db.execute("select max(length(turn)) from turns where run = ?",
	                 (sys.argv[2],)).fetchone()[0] or 0)
	PY
}

# crash_and_answer MARK: a run of MARK's script on its question, kill -9,
# restart, answer, finished; its line is in log.txt
crash_and_answer() {
	(cd work && setsid -w "$LEV" run ../big --task "TASK-$1" --detach --allow shell \
		--allow write_file >../id-$1 2>/dev/null) &&
	id=$(cat id-$1) &&
	wait_for status_is "$id" "waiting: user prompt" &&
	test "$(grep -c "^$1\$" work/log.txt)" = 1 &&
	crash "$id" &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$id" "waiting: user prompt" &&
	"$LEV" respond "$(request_of "$id")" --text "colour-$1" &&
	wait_for status_is "$id" complete &&
	test "$("$LEV" result "$id")" = "finished $1"
}

test_expect_success 'a 1.1 MB turn: journalled whole, its call replayed after kill -9, not run again' '
	"$LEV" daemon start >/dev/null &&
	crash_and_answer BIG &&
	test "$(grep -c "^BIG\$" work/log.txt)" = 1 &&
	test "$(longest_turn "$(cat id-BIG)")" -gt 1153434 &&
	test "$(field "$(cat id-BIG)" restarts)" = 1
'

test_expect_success 'benign twin: a small turn, the same crash: its line once too' '
	crash_and_answer SMALL &&
	test "$(grep -c "^SMALL\$" work/log.txt)" = 1 &&
	test "$(longest_turn "$(cat id-SMALL)")" -lt 10000
'
lev_stop_mock_model

mkdir -p pauser asker
cat >pauser/agent.leviath <<'EOF'
[agent]
name = "pauser"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell", "ask_user_confirm"]
EOF
cat >pauser/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "ask_user_confirm"
args = { question = "Go on?" }
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo paused-run >> paused.txt" }
[[turn]]
text = "pauser done"
EOF

# pause_one: a pauser run held paused at the step after its question
pause_one() {
	(cd work && setsid -w "$LEV" run ../pauser --detach --allow shell --allow write_file \
		>../"$1" 2>/dev/null) &&
	wait_for status_is "$(cat "$1")" "waiting: user prompt" &&
	"$LEV" pause "$(cat "$1")" >/dev/null &&
	"$LEV" respond "$(request_of "$(cat "$1")")" --approve &&
	wait_for status_is "$(cat "$1")" paused
}

test_expect_success 'two paused runs, kill -9 of the daemon, a restart: both still paused' '
	pause_one p1 && pause_one p2 &&
	crash "$(cat p1)" "$(cat p2)" &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat p1)" paused &&
	wait_for status_is "$(cat p2)" paused &&
	"$LEV" ps --all --json >ps.json &&
	python3 - ps.json "$(cat p1)" "$(cat p2)" <<-PY &&
	import json, sys
	d = json.load(open(sys.argv[1]))
	runs = {r["id"]: r for r in d["runs"]}
	for id in sys.argv[2:]:
	    assert runs[id]["status"] == "paused", runs[id]
	PY
	test_must_fail --code 1 "$LEV" pause "$(cat p1)" 2>err &&
	grep -q "is already paused" err &&
	test ! -e work/paused.txt
'

test_expect_success 'lev resume resumes one from the journal: it finishes, its call once' '
	"$LEV" resume "$(cat p1)" >/dev/null &&
	wait_for status_is "$(cat p1)" complete &&
	test "$("$LEV" result "$(cat p1)")" = "pauser done" &&
	test "$(cat work/paused.txt)" = paused-run &&
	test "$(field "$(cat p1)" restarts)" = 1
'

test_expect_success 'lev cancel ends the other, which never runs again' '
	"$LEV" cancel "$(cat p2)" >/dev/null &&
	wait_for status_is "$(cat p2)" cancelled &&
	test "$(cat work/paused.txt)" = paused-run &&
	test_must_fail --code 1 "$LEV" resume "$(cat p2)" 2>err &&
	grep -q "has already ended" err
'

cat >asker/agent.leviath <<'EOF'
[agent]
name = "asker"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["ask_user_text"]
EOF
cat >asker/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "ask_user_text"
args = { question = "Which colour?" }
[[turn]]
text = "thanks"
EOF

test_expect_success 'lev daemon start after kill -9 does not wait for an old worker still there' '
	(cd work && setsid -w "$LEV" run ../asker --detach >../s 2>/dev/null) &&
	s=$(cat s) &&
	wait_for status_is "$s" "waiting: user prompt" &&
	wpid=$(field "$s" pid) && test -n "$wpid" &&
	kill -STOP "$wpid" &&
	dpid=$(daemon_pid) &&
	kill -9 "$dpid" && wait_for gone "$dpid" &&
	LEV_DAEMON_OLD_WORKER_GRACE=3600 "$LEV" daemon start >/dev/null &&
	kill -0 "$wpid" &&
	grep -q "^T" <(sed "s/^.*) //" /proc/$wpid/stat) &&
	"$LEV" daemon status >/dev/null &&
	test "$(field "$s" pid)" = "$wpid" &&
	kill -CONT "$wpid" &&
	wait_for request_of "$s" &&
	"$LEV" respond "$(request_of "$s")" --text red &&
	wait_for status_is "$s" complete &&
	test -z "$(field "$s" restarts)"
'

test_expect_success 'benign twin: with the old workers gone, the run is resumed at once' '
	(cd work && setsid -w "$LEV" run ../asker --detach >../s2 2>/dev/null) &&
	wait_for status_is "$(cat s2)" "waiting: user prompt" &&
	crash "$(cat s2)" &&
	"$LEV" daemon start >/dev/null &&
	test -z "$(field "$(cat s2)" old_worker)" &&
	wait_for status_is "$(cat s2)" "waiting: user prompt" &&
	"$LEV" respond "$(request_of "$(cat s2)")" --text red &&
	wait_for status_is "$(cat s2)" complete
'

mkdir -p quick
cat >quick/agent.leviath <<'EOF'
[agent]
name = "quick"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = []
EOF
python3 -c 'print("[[turn]]\ntext = \"%s\"" % ("q" * 300000))' >quick/turns.toml

test_expect_success 'forty short runs end while the daemon writes to their workers: all complete' '
	(while [ ! -e stop-touching ]; do
		touch "$CONFIG"; sleep 0.05
	done) &
	toucher=$! &&
	for i in $(seq 40); do
		(cd work && setsid -w "$LEV" run ../quick --detach >>../quick-ids 2>/dev/null) ||
			{ touch stop-touching; wait $toucher; return 1; }
	done;
	for i in $(cat quick-ids); do
		wait_for status_is "$i" complete || wait_for status_is "$i" error || break
	done;
	touch stop-touching; wait $toucher;
	test "$(wc -l <quick-ids)" = 40 &&
	"$LEV" ps --all --json >quick.json &&
	python3 - quick.json quick-ids <<-PY &&
	import json, sys
	d = json.load(open(sys.argv[1]))
	ids = open(sys.argv[2]).read().split()
	runs = {r["id"]: r for r in d["finished"]}
	bad = [(i, runs[i]["status"], runs[i].get("error")) for i in ids
	       if runs[i]["status"] != "complete"]
	assert not bad, bad
	PY
	test "$("$LEV" result "$(head -1 quick-ids)" | wc -c)" = 300001 &&
	! grep -q "before the run ended" "$ROOT/daemon.log"
'

test_done
