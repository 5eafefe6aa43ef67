#!/bin/bash
# lev dash, driven under tmux (send-keys in, capture-pane out): not on a
# terminal, one line; the runs with their status, and an empty list; a
# waiting run's question showing the whole call as lev respond shows it
# (every line of a call taller and wider than the pane); an approval from the
# dashboard lets the call run and the run finish, a deny in the twin run keeps
# the call from running (both checked from outside: lev ps, lev logs, the work
# directory); a question answered elsewhere while shown; the agent's own
# questions (text, choice, confirm); a run whose output holds escape
# sequences cannot clear the pane or set its title; cancel only after a y;
# pause and resume refused by the daemon; the daemon going away and coming
# back; a resize; quit exits 0.  Every wait is a bounded poll of the pane.
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

# the pane as text
screen() {
	tm capture-pane -p -t dash
}
# on_screen TEXT: the pane shows TEXT (a fixed string)
on_screen() {
	screen | grep -qF -- "$1"
}
# not_on_screen TEXT
not_on_screen() {
	! screen | grep -qF -- "$1"
}
keys() {
	tm send-keys -t dash "$@"
}
# show_run RUN: filter the list down to RUN (Esc first clears any filter)
show_run() {
	keys Escape && keys / && keys -l "$1" && keys Enter &&
	wait_for row_shown "$1"
}
row_says() {
	screen | grep "^ *$1 " | grep -q "$2"
}
row_shown() {
	screen | grep -q "^ *$1 "
}
# field_has_request RUN PROMPT: RUN's open request asks PROMPT
field_has_request() {
	"$LEV" respond --json | python3 -c '
import json, sys
assert [q for q in json.load(sys.stdin) if q["run"] == sys.argv[1] and q["prompt"] == sys.argv[2]]
' "$1" "$2"
}
# ask_shown TEXT: i pressed, and the answer view shows TEXT.  The dash
# learns of a run's next question at its next poll, which can come after
# lev respond --json already lists it (the run's status reads the same
# before and after), so wait_for presses i again until it shows.
ask_shown() {
	keys i && sleep 0.2 && on_screen "$1"
}
test_no_session() {
	! tm has-session -t dash 2>/dev/null
}
dump() {
	echo "--- the pane:" >&2
	screen >&2
	return 1
}

mkdir -p asks esc long qs work1 work2 work3 work4 work5 work6 work7
cat >asks/agent.leviath <<'EOF'
[agent]
name = "asks"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
cat >asks/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo first-line >> ran.txt\necho second-line-ran >> ran.txt" }
[[turn]]
text = "done"
EOF
# a call taller than the pane, with a line wider than it
cat >long/agent.leviath <<'EOF'
[agent]
name = "long"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
python3 - <<'PY'
import json
lines = ["echo line-%d >> f.txt" % i for i in range(1, 61)]
lines.append("echo " + "w" * 300 + "-TAIL-OF-THE-WIDE-LINE >> f.txt")
lines.append("echo end-of-call >> f.txt")
open("long/turns.toml", "w").write('[[turn]]\n[[turn.call]]\ntool = "shell"\n'
    'args = { command = %s }\n[[turn]]\ntext = "done"\n' % json.dumps("\n".join(lines)))
PY
# the agent's own questions: text, choice, confirm
cat >qs/agent.leviath <<'EOF'
[agent]
name = "qs"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["ask_user_text", "ask_user_choice", "ask_user_confirm"]
EOF
cat >qs/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "ask_user_text"
args = { question = "Which colour?" }
[[turn.call]]
tool = "ask_user_choice"
args = { question = "Which branch?", choices = ["main", "dev", "release"] }
[[turn.call]]
tool = "ask_user_confirm"
args = { question = "Push it?" }
[[turn]]
text = "done"
EOF
cat >esc/agent.leviath <<'EOF'
[agent]
name = "esc"
[stages.main]
model = { provider = "script", script = "turns.toml" }
EOF
cat >esc/turns.toml <<'EOF'
[[turn]]
text = "before-the-escapes\u001b[2J\u001b[H\u001b]0;PWNED-TITLE\u0007after-the-escapes"
EOF

test_expect_success 'not on a terminal: one line and a failure; an argument: usage (2)' '
	test_must_fail "$LEV" dash >out 2>err </dev/null &&
	test "$(wc -l <err)" = 1 &&
	grep -q "^lev: error: lev dash draws on a terminal" err &&
	test ! -s out &&
	test_must_fail --code 2 "$LEV" dash extra 2>err &&
	grep -q "unexpected argument .extra." err
'

test_expect_success 'stdin a terminal, stdout a file: one line and a failure' '
	tm new-session -d -s pipe -x 80 -y 24 \
		"\"$LEV\" dash >\"$TRASH/pipe.out\" 2>\"$TRASH/pipe.err\"; echo \$? >\"$TRASH/pipe.rc\"" &&
	wait_for test -s "$TRASH/pipe.rc" &&
	test "$(cat "$TRASH/pipe.rc")" = 1 &&
	test "$(wc -l <"$TRASH/pipe.err")" = 1 &&
	grep -q "^lev: error: lev dash draws on a terminal" "$TRASH/pipe.err" &&
	test ! -s "$TRASH/pipe.out"
'

test_expect_success 'no runs: the list says so' '
	"$LEV" daemon start >/dev/null &&
	tm new-session -d -s dash -x 160 -y 40 "\"$LEV\" dash" &&
	wait_for on_screen "(no runs: start one with" &&
	on_screen "lev dash   0 runs, 0 waiting for an answer" &&
	keys q && wait_for test_no_session || dump
'

test_expect_success 'set-up: runs that ask, one whose output holds escapes' '
	setsid -w "$LEV" run asks --workdir work1 --detach >id1 2>/dev/null &&
	setsid -w "$LEV" run asks --workdir work2 --detach >id2 2>/dev/null &&
	setsid -w "$LEV" run esc --workdir work3 --detach >id3 2>/dev/null &&
	setsid -w "$LEV" run asks --workdir work4 --detach >id4 2>/dev/null &&
	setsid -w "$LEV" run asks --workdir work5 --detach >id5 2>/dev/null &&
	setsid -w "$LEV" run long --workdir work6 --detach >id6 2>/dev/null &&
	wait_for status_is "$(cat id6)" "waiting: tool approval" &&
	wait_for status_is "$(cat id5)" "waiting: tool approval" &&
	wait_for status_is "$(cat id1)" "waiting: tool approval" &&
	wait_for status_is "$(cat id2)" "waiting: tool approval" &&
	wait_for status_is "$(cat id4)" "waiting: tool approval" &&
	wait_for status_is "$(cat id3)" complete
'

test_expect_success 'the dashboard lists the runs with their status' '
	tm new-session -d -s dash -x 160 -y 40 \
		"\"$LEV\" dash; echo \$? >\"$TRASH/dash.rc\"" &&
	wait_for on_screen "lev dash" &&
	wait_for row_shown "$(cat id1)" &&
	screen | grep "^ *$(cat id1) " | grep -q "asks  *waiting: tool approval  *main" &&
	screen | grep "^ *$(cat id2) " | grep -q "waiting: tool approval" &&
	screen | grep "^ *$(cat id3) " | grep -q "esc  *complete" &&
	on_screen "5 waiting for an answer" || dump
'

test_expect_success 'opening a waiting run shows the whole call, as lev respond shows it' '
	show_run "$(cat id1)" && keys Enter &&
	wait_for on_screen "status: waiting: tool approval" &&
	keys i &&
	wait_for on_screen "the call, in full:" &&
	"$LEV" respond >list &&
	for l in "tool approval:" "command: (2 lines)" "| echo first-line >> ran.txt" \
		"| echo second-line-ran >> ran.txt" "--stage: " "answer: lev respond"; do
		on_screen "$l" && grep -qF -- "$l" list || return 1
	done || dump
'

test_expect_success 'approving it from the dashboard runs the call and the run finishes' '
	keys a &&
	wait_for on_screen "answered" &&
	wait_for status_is "$(cat id1)" complete &&
	test "$(field "$(cat id1)" status)" = complete &&
	test "$(cat work1/ran.txt)" = "$(printf "first-line\nsecond-line-ran")" &&
	"$LEV" result "$(cat id1)" | grep -q done || dump
'

test_expect_success 'the twin: denying it from the dashboard, the call never runs' '
	keys Escape && wait_for on_screen "Enter open" &&
	show_run "$(cat id2)" && keys i &&
	wait_for on_screen "the call, in full:" &&
	keys d &&
	wait_for on_screen "answered" &&
	wait_for status_is "$(cat id2)" complete &&
	test ! -e work2/ran.txt &&
	"$LEV" logs "$(cat id2)" | grep "\"event\":\"tool_call\"" | grep -q "\"decision\":\"deny\"" ||
	dump
'

test_expect_success 'a question answered elsewhere while shown: the view says so, leaves it' '
	keys Escape && wait_for on_screen "Enter open" &&
	show_run "$(cat id4)" && keys i &&
	wait_for on_screen "the call, in full:" &&
	"$LEV" respond "$(request_of "$(cat id4)")" --deny >/dev/null &&
	wait_for on_screen "the question was answered elsewhere" &&
	not_on_screen "the call, in full:" &&
	wait_for status_is "$(cat id4)" complete &&
	test ! -e work4/ran.txt || dump
'

test_expect_success 'a run whose output holds escapes shows them as text: the pane is intact' '
	title=$(tm display-message -p -t dash "#{pane_title}") &&
	keys Escape && wait_for on_screen "Enter open" &&
	show_run "$(cat id3)" && keys Enter &&
	wait_for on_screen "after-the-escapes" &&
	on_screen "before-the-escapes\\x1b[2J\\x1b[H\\x1b]0;PWNED-TITLE\\x07after-the-escapes" &&
	screen | head -1 | grep -q "lev dash" &&
	on_screen "run $(cat id3)   agent esc" &&
	on_screen "status: complete" &&
	test "$(tm display-message -p -t dash "#{pane_title}")" = "$title" &&
	test "$title" != PWNED-TITLE || dump
'

test_expect_success 'a call taller and wider than the pane: every line of it is there to read' '
	keys Escape && wait_for on_screen "Enter open" &&
	show_run "$(cat id6)" && keys i &&
	wait_for on_screen "command: (62 lines)" &&
	on_screen "more below" &&
	screen >seen &&
	for i in $(seq 1 20); do
		on_screen "end-of-call" && break
		keys NPage && screen >>seen
	done &&
	wait_for on_screen "end-of-call" && screen >>seen &&
	for i in $(seq 1 60); do
		grep -qF "| echo line-$i >> f.txt" seen || return 1
	done &&
	tr -d " \n" <seen | grep -q "|echow\{300\}-TAIL-OF-THE-WIDE-LINE>>f.txt" &&
	keys d && wait_for status_is "$(cat id6)" complete &&
	test ! -e work6/f.txt || dump
'

test_expect_success 'the agent'"'"'s questions: typed text, a choice by number, a confirm' '
	setsid -w "$LEV" run qs --workdir work7 --detach >id7 2>/dev/null &&
	wait_for status_is "$(cat id7)" "waiting: user prompt" &&
	keys Escape && wait_for on_screen "Enter open" &&
	show_run "$(cat id7)" && keys i &&
	wait_for on_screen "the agent asks: Which colour?" &&
	on_screen "t or Enter type the answer" &&
	keys t && keys -l "dark blue" && wait_for on_screen "answer> dark blue" &&
	keys Enter && wait_for on_screen "answered (text)" &&
	wait_for field_has_request "$(cat id7)" "Which branch?" &&
	wait_for ask_shown "    1) dev" &&
	keys 1 && wait_for on_screen "answered (choice)" &&
	wait_for field_has_request "$(cat id7)" "Push it?" &&
	wait_for ask_shown "the agent asks: Push it?" &&
	keys y && wait_for status_is "$(cat id7)" complete &&
	"$LEV" logs "$(cat id7)" | python3 -c "
import json, sys
got = [e[\"text\"] for e in map(json.loads, sys.stdin) if e[\"event\"] == \"tool_result\"]
assert got == [\"dark blue\", \"dev\", \"yes\"], got
" || dump
'

test_expect_success 'x cancels a run after asking; any other key keeps it' '
	keys Escape && wait_for on_screen "Enter open" &&
	show_run "$(cat id5)" &&
	keys x && wait_for on_screen "cancel run $(cat id5)? y: cancel it" &&
	keys n && wait_for on_screen "not cancelled" &&
	status_is "$(cat id5)" "waiting: tool approval" &&
	keys x && wait_for on_screen "cancel run $(cat id5)? y: cancel it" &&
	keys y && wait_for status_is "$(cat id5)" cancelled &&
	wait_for row_says "$(cat id5)" cancelled &&
	test ! -e work5/ran.txt || dump
'

test_expect_success 'p and r are the daemon'"'"'s pause and resume: its refusal is shown' '
	keys r && wait_for on_screen "refused: run '"'"'$(cat id5)'"'"' has already ended" &&
	keys "?" && keys z && wait_for not_on_screen "refused:" &&
	keys p && wait_for on_screen "refused: run '"'"'$(cat id5)'"'"' has already ended" || dump
'

test_expect_success 'the daemon going away is shown, and its coming back' '
	"$LEV" daemon stop >/dev/null &&
	wait_for on_screen "daemon not answering" &&
	"$LEV" daemon start >/dev/null &&
	wait_for not_on_screen "daemon not answering" || dump
'

test_expect_success 'a resize redraws at the new size' '
	tm resize-window -t dash -x 90 -y 20 &&
	wait_for on_screen "lev dash" &&
	test "$(screen | wc -l)" -le 20 &&
	keys Escape && wait_for on_screen "Enter open" &&
	screen | head -1 | grep -q "lev dash" || dump
'

test_expect_success 'help, then q quits with status 0' '
	keys "?" && wait_for on_screen "lev dash: keys" &&
	keys x && wait_for not_on_screen "lev dash: keys" &&
	keys Escape && keys q &&
	wait_for test -s "$TRASH/dash.rc" &&
	test "$(cat "$TRASH/dash.rc")" = 0
'

test_done
