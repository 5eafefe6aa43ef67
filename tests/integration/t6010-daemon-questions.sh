#!/bin/bash
# The daemon relays the agent's own questions (ask_user_*) to `lev respond`:
# text, choice and confirm, each answered from a second process; wrong
# answers are refused and the question stays open.  A tool approval's scope
# (once, --session) reaches the run.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

has_request() {
	"$LEV" respond | grep -q "^q[0-9]"
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

mkdir -p work asks
cat >asks/agent.leviath <<'EOF'
[agent]
name = "asks"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["ask_user_text", "ask_user_choice", "ask_user_confirm"]
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
[[turn]]
text = "done"
EOF

test_expect_success 'a detached run offers ask_user_* and waits on a user prompt' '
	"$LEV" daemon start >/dev/null &&
	setsid -w "$LEV" run asks --workdir work --detach >id 2>/dev/null &&
	wait_for status_is "$(cat id)" "waiting: user prompt" &&
	"$LEV" ps >ps &&
	grep -q "waiting: user prompt" ps &&
	grep -q "^1 run needs an answer: lev respond$" ps
'

test_expect_success 'the question is listed as text: an escape in it is shown, never sent' '
	"$LEV" respond >list &&
	grep -q "the agent asks: Which colour?\\\\x1b\[2J" list &&
	! grep -q "$(printf "\033")" list &&
	grep -q "answer: lev respond q[0-9]* --text TEXT" list
'

test_expect_success 'a wrong kind of answer is refused and the question stays open' '
	q=$(open_request) &&
	test_must_fail "$LEV" respond "$q" --approve 2>err &&
	grep -q "the agent asks for text: give it with --text TEXT or as VALUE" err &&
	test_must_fail "$LEV" respond "$q" --approve --stage 2>err &&
	test_expect_code 2 "$LEV" respond "$q" "$(printf "\377")" 2>err &&
	grep -q "the answer must be UTF-8 text" err &&
	test "$(open_request)" = "$q"
'

test_expect_success 'text, choice (from 0) and confirm answers reach the agent' '
	id=$(cat id) &&
	"$LEV" respond "$(open_request)" blue &&
	wait_for has_request &&
	q=$(open_request) &&
	"$LEV" respond >list && grep -q "^    1) dev$" list &&
	test_must_fail "$LEV" respond "$q" --choice 3 2>err &&
	grep -q "answer with --choice N, N from 0 to 2" err &&
	"$LEV" respond "$q" --choice 1 &&
	wait_for has_request &&
	"$LEV" respond "$(open_request)" --approve &&
	wait_for status_is "$id" complete &&
	"$LEV" logs "$id" | python3 -c "
import json, sys
got = [(e[\"tool\"], e[\"text\"]) for e in map(json.loads, sys.stdin) if e[\"event\"] == \"tool_result\"]
assert got == [(\"ask_user_text\", \"blue\"), (\"ask_user_choice\", \"dev\"), (\"ask_user_confirm\", \"yes\")], got
"
'

mkdir -p twice
cat >twice/agent.leviath <<'EOF'
[agent]
name = "twice"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
cat >twice/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo ran >> twice.txt" }
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo ran >> twice.txt" }
[[turn]]
text = "done"
EOF

# asked RUN: how many questions RUN put
asked() {
	python3 -c '
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("select count(*) from questions where run = ?", (sys.argv[2],)).fetchone()[0])
' "$ROOT/lev.db" "$1"
}

test_expect_success 'approve once: the same call is asked again' '
	rm -f work/twice.txt &&
	setsid -w "$LEV" run twice --workdir work --detach >id1 2>/dev/null &&
	wait_for has_request && "$LEV" respond "$(open_request)" --approve &&
	wait_for has_request && "$LEV" respond "$(open_request)" --approve &&
	wait_for status_is "$(cat id1)" complete &&
	test "$(asked "$(cat id1)")" = 2 &&
	test "$(cat work/twice.txt)" = "$(printf "ran\nran")"
'

test_expect_success 'approve --session: the same call is not asked again in the run' '
	rm -f work/twice.txt &&
	setsid -w "$LEV" run twice --workdir work --detach >id2 2>/dev/null &&
	wait_for has_request && "$LEV" respond "$(open_request)" --approve --session &&
	wait_for status_is "$(cat id2)" complete &&
	test "$(asked "$(cat id2)")" = 1 &&
	test "$(cat work/twice.txt)" = "$(printf "ran\nran")"
'

test_done
