#!/bin/bash
# lev run --follow follows a daemon run: the progress, output and exit codes of
# `lev run --foreground`; prompts on the terminal (a pseudo-terminal here),
# answered there or by `lev respond` from a second process; Ctrl-C detaches
# and the run goes on; lev attach; a cancelled run exits 130.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

ON_PTY="$SRC_DIR/tests/helpers/on-pty.py"

# run ids and record paths vary from run to run
norm() {
	sed -E -e 's/[0-9]{8}-[0-9]{6}-[0-9]{3}-[0-9a-f]{6}/RUN/g' -e 's/\r$//' "$1"
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

has_request() {
	"$LEV" respond | grep -q "^q[0-9]"
}

mkdir -p work
# basic: a safe command, then an answer
mkdir -p basic
cat >basic/agent.leviath <<'EOF2'
[agent]
name = "basic"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF2
cat >basic/turns.toml <<'EOF2'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo hi" }
[[turn]]
text = "all done"
EOF2
# asker: a command that needs an answer (it appends to f.txt)
mkdir -p asker
cat >asker/agent.leviath <<'EOF2'
[agent]
name = "asker"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF2
cat >asker/turns.toml <<'EOF2'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo ran >> f.txt" }
[[turn]]
text = "asker done"
EOF2
# loop: fails at max_iterations
mkdir -p loop
cat >loop/agent.leviath <<'EOF2'
[agent]
name = "loop"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
max_iterations = 1
EOF2
cat >loop/turns.toml <<'EOF2'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo one" }
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo two" }
EOF2

test_expect_success 'lev run follows a daemon run: the same progress and output as --foreground' '
	setsid -w "$LEV" run --foreground ./basic --workdir work >fg.out 2>fg.err &&
	setsid -w "$LEV" run --follow ./basic --workdir work >d.out 2>d.err &&
	test_cmp fg.out d.out &&
	norm fg.err >fg.n && norm d.err >d.n &&
	test_cmp fg.n d.n &&
	grep -q "^all done$" d.out &&
	id=$(sed -n "s/^lev: run \([^:]*\): agent .*/\1/p" d.err) &&
	status_is "$id" complete &&
	fid=$(sed -n "s/^lev: run \([^:]*\): agent .*/\1/p" fg.err) &&
	! "$LEV" ps --all | grep -q "^$fid"
'

test_expect_success 'lev run --json through the daemon: the same events as --foreground' '
	setsid -w "$LEV" run --foreground ./basic --workdir work --json >fg.ev 2>/dev/null &&
	setsid -w "$LEV" run --follow ./basic --workdir work --json >d.ev 2>/dev/null &&
	python3 -c "
import json, sys
a, b = ([json.loads(l)[\"event\"] for l in open(f)] for f in sys.argv[1:])
assert a == b and a, (a, b)
" fg.ev d.ev
'

test_expect_success 'a failing run exits 1 with the same message either way' '
	test_must_fail --code 1 setsid -w "$LEV" run --foreground ./loop --workdir work >/dev/null 2>fg.err &&
	test_must_fail --code 1 setsid -w "$LEV" run --follow ./loop --workdir work >/dev/null 2>d.err &&
	norm fg.err >fg.n && norm d.err >d.n &&
	test_cmp fg.n d.n &&
	grep -q "failed: stage .main. reached max_iterations" d.err
'

test_expect_success 'without a terminal a call that needs an answer is denied at once, as --foreground' '
	setsid -w "$LEV" run --foreground ./asker --workdir work >fg.out 2>fg.err &&
	setsid -w "$LEV" run --follow ./asker --workdir work >d.out 2>d.err &&
	norm fg.err >fg.n && norm d.err >d.n &&
	test_cmp fg.n d.n &&
	grep -q "DENIED by permission" d.err &&
	test ! -e work/f.txt
'

test_expect_success 'the prompt is on the terminal; answering it there runs the call' '
	python3 "$ON_PTY" "answer [1-4" 1 -- "$LEV" run --follow ./asker --workdir work >pty.out &&
	grep -q "? Allow tool call: .shell. - .echo ran >> f.txt.?" pty.out &&
	grep -q "^asker done" pty.out &&
	test "$(cat work/f.txt)" = ran
'

test_expect_success 'benign twin: answering deny there refuses the call' '
	rm -f work/f.txt &&
	python3 "$ON_PTY" "answer [1-4" 4 -- "$LEV" run --follow ./asker --workdir work >pty.out &&
	grep -q "DENIED by permission" pty.out &&
	test ! -e work/f.txt
'

test_expect_success 'lev respond from a second process answers first; the prompt says so' '
	{ python3 "$ON_PTY" "answer [1-4" - -- "$LEV" run --follow ./asker --workdir work >pty.out & pid=$!; } &&
	wait_for has_request &&
	"$LEV" respond "$(open_request)" --approve &&
	wait $pid &&
	grep -q "(answered elsewhere: once)" pty.out &&
	grep -q "^asker done" pty.out &&
	test "$(cat work/f.txt)" = ran
'

test_expect_success 'Ctrl-C detaches: exit 0, the run goes on and lev result has its output' '
	rm -f work/f.txt &&
	python3 "$ON_PTY" "answer [1-4" ^C -- "$LEV" run --follow ./asker --workdir work >pty.out &&
	grep -q "detached from run .*, which goes on; follow it again with .lev attach " pty.out &&
	id=$(sed -n "s/^lev: detached from run \([^,]*\),.*/\1/p" pty.out) &&
	status_is "$id" "waiting: tool approval" &&
	"$LEV" respond "$(open_request)" --approve &&
	wait_for status_is "$id" complete &&
	test "$("$LEV" result "$id")" = "asker done" &&
	test "$(cat work/f.txt)" = ran &&
	echo "$id" >detached.id
'

test_expect_success 'lev attach follows a run to its end; an ended run shows how it ended' '
	id=$(cat detached.id) &&
	setsid -w "$LEV" attach "$id" >out 2>err &&
	grep -q "^asker done$" out &&
	grep -q "lev: run $id complete" err &&
	test_must_fail --code 1 "$LEV" attach nosuchrun 2>err &&
	grep -q "no run .nosuchrun." err &&
	test_must_fail --code 2 "$LEV" attach 2>err
'

test_expect_success 'lev attach while it waits: the prompt is on the terminal there' '
	rm -f work/f.txt &&
	setsid -w "$LEV" run ./asker --workdir work --detach >id 2>/dev/null &&
	wait_for status_is "$(cat id)" "waiting: tool approval" &&
	python3 "$ON_PTY" "answer [1-4" 1 -- "$LEV" attach "$(cat id)" >pty.out &&
	grep -q "^asker done" pty.out &&
	test "$(cat work/f.txt)" = ran
'

mkdir -p sleeper
cat >sleeper/agent.leviath <<'EOF2'
[agent]
name = "sleeper"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF2
cat >sleeper/turns.toml <<'EOF2'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "sleep 60" }
[[turn]]
text = "woke"
EOF2

test_expect_success 'a followed run that is cancelled exits 130, as an interrupted one' '
	{ setsid -w "$LEV" run --follow ./sleeper --workdir work --allow shell >out 2>err & pid=$!; } &&
	wait_for grep -q "\[1\] shell sleep 60" err &&
	id=$(sed -n "s/^lev: run \([^:]*\): agent .*/\1/p" err) &&
	"$LEV" cancel "$id" >/dev/null &&
	{ wait $pid; rc=$?; } ;
	test "$rc" = 130 &&
	grep -q "lev: run $id interrupted" err
'

test_done
