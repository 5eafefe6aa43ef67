#!/bin/bash
# A daemon killed with -9: its workers end with it (PR_SET_PDEATHSIG), and
# after a restart every run it held is accounted for: resumed from the
# journal (t6030 tests the replay), or marked failed when it cannot be.
# Each worker runs under its own limits.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

# the open request's id (there is one)
open_request() {
	"$LEV" respond --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert len(r) == 1, r
print(r[0]["id"])
'
}

# drop RUN's kept request from lev.db, as a database of the first daemon has none
forget_request() {
	python3 - "$ROOT/lev.db" "$1" <<-PY
	import sqlite3, sys
	db = sqlite3.connect(sys.argv[1])
	db.execute("delete from requests where run = ?", (sys.argv[2],))
	db.commit()
	PY
}

mkdir -p work asker
script_agent asker '"shell"'
lev_shell_turns asker/turns.toml no "echo ran >> ran.txt"

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

test_expect_success 'kill -9 of the daemon and its worker (t6104: the worker alone adopted): nothing ran' '
	kill -9 "$(cat dpid)" &&
	wait_for gone "$(cat dpid)" &&
	kill -9 "$(cat pid)" && wait_for gone "$(cat pid)" &&
	test ! -e work/ran.txt
'

test_expect_success 'after a restart the run is resumed: its approval is asked again' '
	"$LEV" daemon start >out && grep -q "daemon started" out &&
	wait_for status_is "$(cat id)" "waiting: tool approval" &&
	test "$(field "$(cat id)" restarts)" = 1 &&
	grep -q "run $(cat id): resumed from the journal in worker [0-9]*" "$ROOT/daemon.log" &&
	test ! -e work/ran.txt &&
	"$LEV" respond "$(open_request)" --approve &&
	wait_for status_is "$(cat id)" complete &&
	test "$(cat work/ran.txt)" = ran
'

test_expect_success 'a run whose request was not kept is marked failed after a restart' '
	setsid -w "$LEV" run asker --workdir work --detach >id3 2>/dev/null &&
	wait_for status_is "$(cat id3)" "waiting: tool approval" &&
	dpid=$("$LEV" daemon status | sed -n "s/^running: pid \([0-9]*\),.*/\1/p") &&
	pid=$(field "$(cat id3)" pid) &&
	kill -9 "$dpid" && wait_for gone "$dpid" && kill -9 "$pid" && wait_for gone "$pid" &&
	forget_request "$(cat id3)" &&
	"$LEV" daemon start >/dev/null &&
	status_is "$(cat id3)" "error: the daemon stopped while the run was going" &&
	test "$(field "$(cat id3)" error)" = "the daemon stopped while the run was going" &&
	test -z "$(field "$(cat id3)" pid)" &&
	grep -q "run $(cat id3): marked failed: the daemon stopped while it ran" "$ROOT/daemon.log"
'

test_expect_success 'the restarted daemon runs new runs (the twin)' '
	setsid -w "$LEV" run asker --workdir work --detach --allow shell --allow write_file >id2 2>/dev/null &&
	wait_for status_is "$(cat id2)" complete &&
	test "$(cat work/ran.txt)" = "ran
ran"
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
