#!/bin/bash
# A daemon killed with -9: its workers end with it (PR_SET_PDEATHSIG), and
# after a restart every run it held is accounted for.  Each worker runs
# under its own limits.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

gone() {
	! kill -0 "$1" 2>/dev/null
}

mkdir -p work asker
cat >asker/agent.leviath <<'EOF'
[agent]
name = "asker"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
cat >asker/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo ran >> ran.txt" }
[[turn]]
text = "done"
EOF

# an AddressSanitizer build reserves terabytes of shadow: no data limit there
if ldd "$LEV" 2>/dev/null | grep -q libasan; then
	DATA_LIMIT=unlimited
else
	DATA_LIMIT=4294967296
fi

test_expect_success 'a worker runs in its own session, with no core dumps and a data limit' '
	"$LEV" daemon start >/dev/null &&
	setsid -w "$LEV" run asker --workdir work --detach >id 2>/dev/null &&
	wait_for status_is "$(cat id)" "waiting: tool approval" &&
	pid=$(field "$(cat id)" pid) && echo "$pid" >pid &&
	dpid=$("$LEV" daemon status | sed -n "s/^running: pid \([0-9]*\),.*/\1/p") &&
	echo "$dpid" >dpid &&
	test "$(ps -o ppid= -p "$pid" | tr -d " ")" = "$dpid" &&
	test "$(ps -o sid= -p "$pid" | tr -d " ")" = "$pid" &&
	grep -q "^Max core file size  *0  *0 " /proc/$pid/limits &&
	grep -q "^Max data size  *$DATA_LIMIT  *$DATA_LIMIT " /proc/$pid/limits
'

test_expect_success 'kill -9 of the daemon: its worker ends too, nothing ran' '
	kill -9 "$(cat dpid)" &&
	wait_for gone "$(cat dpid)" &&
	wait_for gone "$(cat pid)" &&
	test ! -e work/ran.txt
'

test_expect_success 'after a restart the run is accounted for, marked failed' '
	"$LEV" daemon start >out && grep -q "daemon started" out &&
	status_is "$(cat id)" "error: the daemon stopped while the run was going" &&
	test "$(field "$(cat id)" error)" = "the daemon stopped while the run was going" &&
	test -z "$(field "$(cat id)" pid)" &&
	grep -q "run $(cat id): marked failed: the daemon stopped while it ran" "$ROOT/daemon.log"
'

test_expect_success 'the restarted daemon runs new runs (the twin)' '
	setsid -w "$LEV" run asker --workdir work --detach --allow shell --allow write_file >id2 2>/dev/null &&
	wait_for status_is "$(cat id2)" complete &&
	test "$(cat work/ran.txt)" = ran
'

test_expect_success 'daemon restart: a new daemon, the ended runs still listed' '
	old=$("$LEV" daemon status | sed -n "s/^running: pid \([0-9]*\),.*/\1/p") &&
	"$LEV" daemon restart >out &&
	grep -q "^lev: daemon stopped$" out && grep -q "^lev: daemon started (pid [0-9]*)$" out &&
	new=$("$LEV" daemon status | sed -n "s/^running: pid \([0-9]*\),.*/\1/p") &&
	test -n "$new" && test "$new" != "$old" &&
	status_is "$(cat id2)" complete
'

test_done
