#!/bin/bash
# Every worker is forked from the daemon's zygote (daemon/zygote.h) and is
# still the daemon's own child: its parent is the daemon (so it is reaped,
# killed and recovered as an exec'd worker), never the zygote; it has the
# run's environment (the client's variable reaches its command, the
# daemon's does not).  A zygote killed with -9: the next runs' workers are
# exec'd and finish.  The daemon killed with -9: its zygote goes with it.
# The twin: LEV_DAEMON_ZYGOTE=0, no zygote, the same run the same way.
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

. "$SRC_DIR/tests/daemon-lib.sh"

mkdir -p work asker
cat >asker/agent.leviath <<'EOF2'
[agent]
name = "asker"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
system_prompt = "test"
EOF2
cat >asker/turns.toml <<'EOF2'
[[turn]]
text = "looking"
[[turn.call]]
tool = "shell"
args = { command = "echo \"[$DAEMON_ONLY_VAR][$CLIENT_VAR]\" >> appended.txt" }

[[turn]]
text = "all done"
EOF2

zygote_pid() {
	"$LEV" ps --json | python3 -c '
import json, sys
print(json.load(sys.stdin)["health"].get("zygote", ""))'
}

no_zygote() {
	test -z "$(zygote_pid)"
}

ppid_of() {
	awk '{ print $4 }' "/proc/$1/stat"
}

# one run through: asks, its worker's parent checked, approved, finished
one_run() {
	CLIENT_VAR="$1" lev run asker --task go --workdir work --detach >id &&
	id=$(cat id) &&
	wait_for status_is "$id" "waiting: tool approval" &&
	w=$(field "$id" pid) && test -n "$w" &&
	test "$(ppid_of "$w")" = "$(daemon_pid)" &&
	"$LEV" respond "$(request_of "$id")" --approve &&
	wait_for status_is "$id" complete &&
	test "$(tail -n 1 work/appended.txt)" = "[][$1]"
}

test_expect_success 'the daemon starts one zygote, its own child' '
	DAEMON_ONLY_VAR=from-daemon "$LEV" daemon start >out &&
	z=$(zygote_pid) && test -n "$z" && echo "$z" >zygote &&
	test "$(ppid_of "$z")" = "$(daemon_pid)"
'

test_expect_success 'a worker forked from it: the daemon is its parent, the run its environment' '
	one_run client-1 &&
	test "$(zygote_pid)" = "$(cat zygote)"
'

test_expect_success 'the zygote killed: the next run is exec'"'"'d and finishes' '
	kill -9 "$(cat zygote)" &&
	wait_for gone "$(cat zygote)" &&
	wait_for no_zygote &&
	one_run client-2
'

test_expect_success 'the daemon killed with -9: its zygote goes with it' '
	"$LEV" daemon stop >/dev/null &&
	"$LEV" daemon start >/dev/null &&
	z=$(zygote_pid) && test -n "$z" &&
	crash &&
	wait_for gone "$z"
'

test_expect_success 'twin: LEV_DAEMON_ZYGOTE=0, no zygote, the same run' '
	LEV_DAEMON_ZYGOTE=0 "$LEV" daemon start >/dev/null &&
	test -z "$(zygote_pid)" &&
	one_run client-3
'

test_done
