#!/bin/bash
# Crash recovery: kill -9 of the daemon with runs mid-call and mid-question,
# a restart, and each run is rebuilt from the journal and finishes.  A call
# that finished is replayed from the journal, never run again (the line it
# appended is there once); the call in flight comes back to the model as
# "may or may not have happened"; the question nobody answered is asked
# again and answered with `lev respond`.  Every gate decides every replayed
# call again: a call the policy now denies is refused, not replayed.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

# the tool_result events of RUN's record, as "replayed|ok|text" lines
results() {
	python3 - "$ROOT/runs/$1/events.jsonl" <<-PY
	import json, sys
	for l in open(sys.argv[1]):
	    e = json.loads(l)
	    if e["event"] == "tool_result":
	        print("%s|%s|%s" % (e.get("replayed", "-"), e["ok"], e["text"].strip()))
	PY
}

mkdir -p work appender asker
cat >appender/agent.leviath <<'EOF'
[agent]
name = "appender"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
cat >appender/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo one >> log.txt" }
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo two >> log.txt; touch started; sleep 120" }
[[turn]]
text = "all done"
EOF
cat >asker/agent.leviath <<'EOF'
[agent]
name = "asker"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell", "ask_user_text"]
EOF
cat >asker/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo asked >> asked.txt" }
[[turn]]
[[turn.call]]
tool = "ask_user_text"
args = { question = "Which colour?" }
[[turn]]
text = "thanks"
EOF

test_expect_success 'two runs: one mid-call (a command that appended, then sleeps), one on a question' '
	"$LEV" daemon start >/dev/null &&
	(cd work && setsid -w "$LEV" run ../appender --detach --allow shell --allow write_file >../a 2>/dev/null) &&
	(cd work && setsid -w "$LEV" run ../asker --detach --allow shell --allow write_file >../q 2>/dev/null) &&
	wait_for test -e work/started &&
	wait_for status_is "$(cat q)" "waiting: user prompt" &&
	test "$(cat work/log.txt)" = "one
two" &&
	test "$(cat work/asked.txt)" = asked
'

test_expect_success 'kill -9 of the daemon: both workers end with it' '
	crash "$(cat a)" "$(cat q)" &&
	rm work/started
'

test_expect_success 'a restart resumes both runs from the journal' '
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat a)" complete &&
	wait_for status_is "$(cat q)" "waiting: user prompt" &&
	test "$(field "$(cat a)" restarts)" = 1 &&
	test "$(field "$(cat q)" restarts)" = 1 &&
	test "$("$LEV" result "$(cat a)")" = "all done"
'

test_expect_success 'no call ran twice: each appended line is there once' '
	test "$(cat work/log.txt)" = "one
two" &&
	test "$(cat work/asked.txt)" = asked &&
	test ! -e work/started
'

test_expect_success 'the record goes on: the finished call replayed, the one in flight told so' '
	results "$(cat a)" >res &&
	grep -q "^-|True|(command succeeded with no output)\$" res &&
	grep -q "^done|True|(command succeeded with no output)\$" res &&
	grep -q "^in_flight|False|\[error\] this call was in flight when lev stopped: it may or may not have happened; check before repeating it\$" res &&
	grep -q "\"event\":\"run_resumed\"" "$ROOT/runs/$(cat a)/events.jsonl" &&
	grep -q "\"resumed\":true" "$ROOT/runs/$(cat a)/events.jsonl"
'

test_expect_success 'the question is asked again and answered with lev respond' '
	"$LEV" respond "$(request_of "$(cat q)")" --text blue &&
	wait_for status_is "$(cat q)" complete &&
	test "$("$LEV" result "$(cat q)")" = thanks &&
	results "$(cat q)" >res &&
	grep -q "^done|True|(command succeeded with no output)\$" res &&
	grep -q "^-|True|blue\$" res &&
	test "$(cat work/asked.txt)" = asked
'

test_expect_success 'the journal: every call done, none dispatched, the kept requests gone' '
	python3 - "$ROOT/lev.db" "$(cat a)" "$(cat q)" <<-PY
	import sqlite3, sys
	db = sqlite3.connect(sys.argv[1])
	for run in sys.argv[2:]:
	    rows = db.execute("select state from journal where run = ? order by seq",
	                      (run,)).fetchall()
	    assert rows and all(r == ("done",) for r in rows), (run, rows)
	    assert db.execute("select count(*) from requests where run = ?",
	                      (run,)).fetchone() == (0,)
	    assert db.execute("select count(*) from turns where run = ?",
	                      (run,)).fetchone()[0] >= 2
	PY
'

test_expect_success 'a policy tightened before the restart: the finished call is refused, not replayed' '
	rm -f work/log.txt &&
	(cd work && setsid -w "$LEV" run ../appender --detach --allow shell --allow write_file >../t 2>/dev/null) &&
	wait_for test -e work/started &&
	crash "$(cat t)" &&
	printf "[tool_permissions]\nshell = \"deny\"\n" >"$ROOT/config.toml" &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat t)" complete &&
	test "$(cat work/log.txt)" = "one
two" &&
	results "$(cat t)" >res &&
	test "$(grep -c "^-|False|\[denied\]" res)" = 2 &&
	! grep -q "^done|" res &&
	rm "$ROOT/config.toml"
'

mkdir -p finisher
cat >finisher/agent.leviath <<'EOF'
[agent]
name = "finisher"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
cat >finisher/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "touch started; sleep 2; echo ran >> fin.txt" }
[[turn]]
text = "finished"
EOF

# the daemon is stopped (SIGSTOP) while the run completes, then killed:
# it never heard the run end, and the record alone says it did
test_expect_success 'a run that completed just before kill -9 is taken from its record, not run again' '
	rm -f work/started work/fin.txt &&
	(cd work && setsid -w "$LEV" run ../finisher --detach --allow shell --allow write_file >../f 2>/dev/null) &&
	wait_for test -e work/started &&
	dpid=$(daemon_pid) && kill -STOP "$dpid" &&
	wait_for grep -q "\"status\": \"complete\"" "$ROOT/runs/$(cat f)/result.json" &&
	kill -9 "$dpid" && wait_for gone "$dpid" &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat f)" complete &&
	test "$("$LEV" result "$(cat f)")" = finished &&
	test -z "$(field "$(cat f)" restarts)" &&
	test "$(grep -c "\"event\":\"run_started\"" "$ROOT/runs/$(cat f)/events.jsonl")" = 1 &&
	test "$(cat work/fin.txt)" = ran
'

test_expect_success 'the twin: a run started after the restart runs live, nothing replayed' '
	rm -f work/log.txt work/started &&
	sed -i "s/; sleep 120//" appender/turns.toml &&
	(cd work && setsid -w "$LEV" run ../appender --detach --allow shell --allow write_file >../b 2>/dev/null) &&
	wait_for status_is "$(cat b)" complete &&
	test "$(cat work/log.txt)" = "one
two" &&
	test -z "$(field "$(cat b)" restarts)" &&
	! grep -q "\"replayed\"" "$ROOT/runs/$(cat b)/events.jsonl"
'

test_done
