#!/bin/bash
# A finished run leaves the daemon's memory once it has been over for the
# retention (LEV_DAEMON_RETENTION seconds, five minutes unless set): `lev
# ps` stops listing it, while `lev ps --all`, `lev result` and `lev logs`
# read it from the database; a daemon that starts loads only the runs going
# and those that ended within the retention.  health.in_memory says how
# many runs the daemon holds.  Each eviction has a benign twin: with the
# default retention the same run stays.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

mkdir -p work quick
cat >quick/agent.leviath <<'EOF2'
[agent]
name = "quick"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF2
cat >quick/turns.toml <<'EOF2'
[[turn]]
text = "quick done"
EOF2

health() {
	"$LEV" ps --json | python3 -c '
import json, sys
print(json.load(sys.stdin)["health"][sys.argv[1]])
' "$1"
}
in_memory_is() {
	test "$(health in_memory)" = "$1"
}
listed() {
	"$LEV" ps | grep -q "^$1 "
}
quick_run() {
	"$LEV" run ./quick --workdir work --detach >"$1" &&
	wait_for status_is "$(cat "$1")" complete
}

test_expect_success 'a run over for longer than the retention leaves memory and lev ps' '
	LEV_DAEMON_RETENTION=2 "$LEV" daemon start &&
	quick_run id1 && id1=$(cat id1) &&
	wait_for in_memory_is 0 &&
	! listed "$id1" &&
	"$LEV" ps --all | grep -q "^$id1 .*complete"
'

test_expect_success 'lev result, logs and attach still read it; it leaves memory again' '
	id1=$(cat id1) &&
	test "$("$LEV" result "$id1")" = "quick done" &&
	"$LEV" logs "$id1" | grep -q "\"run_started\"" &&
	"$LEV" attach "$id1" >attached 2>&1 &&
	grep -q "^quick done$" attached &&
	"$LEV" ps --all --json | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert [r[\"id\"] for r in d[\"finished\"]] == [sys.argv[1]], d
assert d[\"finished\"][0][\"status\"] == \"complete\", d
" "$id1" &&
	wait_for in_memory_is 0
'

test_expect_success 'benign twin: with the default retention finished runs stay (the first one is back)' '
	"$LEV" daemon stop &&
	"$LEV" daemon start &&
	quick_run id2 && id2=$(cat id2) &&
	sleep 3 &&
	in_memory_is 2 &&
	listed "$id2" && listed "$(cat id1)"
'

test_expect_success 'a daemon starting loads only the runs that ended within the retention' '
	"$LEV" daemon stop &&
	sleep 3 &&
	LEV_DAEMON_RETENTION=2 "$LEV" daemon start &&
	in_memory_is 0 &&
	"$LEV" ps --all >all &&
	grep -q "^$(cat id1) .*complete" all &&
	grep -q "^$(cat id2) .*complete" all &&
	! listed "$(cat id2)"
'

test_expect_success 'benign twin: with the default retention it loads both' '
	"$LEV" daemon stop &&
	"$LEV" daemon start &&
	in_memory_is 2 &&
	listed "$(cat id1)" && listed "$(cat id2)"
'

test_expect_success 'a retention that is not a number of seconds is refused' '
	"$LEV" daemon stop &&
	test_must_fail env LEV_DAEMON_RETENTION=soon "$LEV" daemon 2>err &&
	grep -q "LEV_DAEMON_RETENTION: .soon. is not a number of seconds" err
'

test_done
