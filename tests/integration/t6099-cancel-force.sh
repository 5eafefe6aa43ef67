#!/bin/bash
# lev cancel --force (and lev kill --force): with a daemon, the run's worker
# is killed and the run ends cancelled; with none (the daemon was killed and
# its worker is gone), the run is written cancelled in the store, so the next
# daemon does not resume it.  The twin: without --force a run left by a dead
# daemon is resumed by the next one.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"

mkdir -p work asker
script_agent asker '"shell"'
lev_shell_turns asker/turns.toml no "echo ran >> ran.txt"

# wpid RUN: the pid of RUN's worker, as lev ps --json shows it
wpid() {
	"$LEV" ps --all --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for r in d["runs"] + d.get("finished", []):
    if sys.argv[1] in (r.get("id"), r.get("run_id")):
        print(r.get("pid") or "")
' "$1"
}
# spawn: a run waiting for an approval; its id in ./id
spawn() {
	setsid -w "$LEV" run ./asker --workdir work --task t --detach >id 2>/dev/null &&
	wait_for status_is "$(tail -n 1 id)" "waiting: tool approval"
}
# kill_daemon: kill -9 the daemon and RUN's worker (which would wait to be
# adopted); wait until both are gone
kill_daemon() {
	local d w
	d=$(daemon_pid) && w=$(wpid "$1") && test -n "$d" && test -n "$w" &&
	kill -9 "$d" && wait_for gone "$d" && kill -9 "$w" && wait_for gone "$w"
}

test_expect_success 'with a daemon: cancel --force kills the worker, the run ends cancelled' '
	"$LEV" daemon start >/dev/null &&
	spawn && run=$(tail -n 1 id) && w=$(wpid "$run") && test -n "$w" &&
	"$LEV" cancel --force "$run" >out &&
	grep -q "cancelling run $run (its worker killed)" out &&
	wait_for gone "$w" &&
	wait_for status_is "$run" cancelled &&
	test ! -e work/ran.txt
'

test_expect_success 'the twin: a run left by a killed daemon is resumed by the next one' '
	spawn && run=$(tail -n 1 id) && kill_daemon "$run" &&
	test_must_fail --code 1 "$LEV" cancel "$run" 2>err &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$run" "waiting: tool approval" &&
	"$LEV" cancel "$run" && wait_for status_is "$run" cancelled
'

test_expect_success 'no daemon: cancel --force writes the run cancelled; the next daemon keeps it so' '
	spawn && run=$(tail -n 1 id) && kill_daemon "$run" &&
	"$LEV" kill --force "$run" >out &&
	grep -q "run $run cancelled (no daemon ran" out &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$run" cancelled &&
	test_must_fail --code 1 "$LEV" result "$run" 2>err &&
	grep -q "was cancelled" err &&
	test ! -e work/ran.txt
'

test_expect_success 'cancel --force of an ended run, or of no run, fails and says why' '
	"$LEV" daemon stop >/dev/null &&
	test_must_fail --code 1 "$LEV" cancel --force "$(tail -n 1 id)" 2>err &&
	grep -q "already ended" err &&
	test_must_fail --code 1 "$LEV" cancel --force 20990101-000000-000-abcdef 2>err &&
	grep -q "no run" err
'

test_expect_success 'cancel: an unknown option or two runs is a usage error' '
	test_must_fail --code 2 "$LEV" cancel --frob x &&
	test_must_fail --code 2 "$LEV" cancel a b
'

test_done
