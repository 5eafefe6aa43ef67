#!/bin/bash
# One effective policy per run (policy/effective.h): every field of it
# (per-agent permissions, read grants, the taint switch, shell_env,
# Leviath's policy.toml) takes a tightening edit mid-run, as the tighter of
# old and new, while an edit that does not concern the call lets it run
# (the benign twins).  The run's policy is kept in lev.db: after a daemon
# crash, a config loosened while it was down does not reach the resumed
# run.  A run submitted with LEVIATH_CONFIG_PATH is watched through its own
# file and never runs under another.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

CONFIG="$ROOT/config.toml"
POLICY="$ROOT/policy.toml"
LDIR="$HOME/.config/leviath"

# save FILE TEXT: as an editor saves it, a new file renamed over the old one
save() {
	printf "$2" >"$1.tmp" && chmod 600 "$1.tmp" && mv "$1.tmp" "$1"
}
reloads() {
	grep -c "config: reloaded" "$ROOT/daemon.log" || :
}
reloaded_past() {
	test "$(reloads)" -gt "$1"
}
# save FILE TEXT and wait until the daemon has handed it to the runs
edit() {
	local n
	n=$(reloads) && save "$1" "$2" && wait_for reloaded_past "$n"
}
# RUN took the tighter of its policy and the files (N times at least)
took() {
	test "$(grep -c "run $1: took the tighter" "$ROOT/daemon.log")" -ge "${2:-1}"
}
# decision RUN ID: the decision on RUN's call the script named ID (its
# label: lev numbers the calls itself, call_N)
decision() {
	python3 - "$ROOT/runs/$1/events.jsonl" "$2" <<-PY
	import json, sys
	for l in open(sys.argv[1]):
	    e = json.loads(l)
	    if e["event"] == "tool_call" and e.get("label") == sys.argv[2]:
	        print(e["decision"])
	PY
}
# start AGENT (its id in file $2), wait for it to be at $3
start() {
	(cd work && SSH_AUTH_SOCK=/tmp/agent.sock setsid -w "$LEV" run ../"$1" --detach \
		>../"$2" 2>/dev/null) &&
	{ [ -z "$3" ] || wait_for status_is "$(cat "$2")" "$3"; }
}
finish() {
	wait_for status_is "$(cat "$1")" complete
}

mkdir -p work waiter reader tfetch lfetch outside
echo hello >work/hello.txt
echo a >outside/a.txt && echo b >outside/b.txt
OUT="$(pwd)/outside"

# the waiter's first call holds until work/go exists, its second until work/go2;
# its third shows its environment.  A reload reaches a run between two calls.
script_agent waiter '"shell"'
cat >waiter/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
id = "wait"
tool = "shell"
args = { command = "rm -f after.txt; touch waiting; while [ ! -e go ]; do sleep 0.1; done" }
[[turn]]
[[turn.call]]
id = "wait2"
tool = "shell"
args = { command = "touch waiting2; while [ ! -e go2 ]; do sleep 0.1; done" }
[[turn]]
[[turn.call]]
id = "after"
tool = "shell"
args = { command = "echo \"[$SSH_AUTH_SOCK]\" > after.txt" }
[[turn]]
text = "done"
EOF
cat >reader/agent.leviath <<EOF
[agent]
name = "reader"
[read_paths]
allow = ["$OUT/a.txt", "$OUT/b.txt"]
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell", "read_file"]
EOF
cat >reader/turns.toml <<EOF
[[turn]]
[[turn.call]]
id = "wait"
tool = "shell"
args = { command = "touch waiting; while [ ! -e go ]; do sleep 0.1; done" }
[[turn]]
[[turn.call]]
id = "read"
tool = "read_file"
args = { path = "$OUT/a.txt" }
[[turn]]
text = "done"
EOF
# tfetch: no taint tracking of its own; reads hello.txt (internal), asks, fetches
script_agent tfetch '"read_file", "ask_user_text", "web_fetch"'
lev_turns tfetch/turns.toml \
	read read_file '{ path = "hello.txt" }' \
	ask ask_user_text '{ question = "Go on?" }' \
	fetch web_fetch '{ url = "http://127.0.0.1:9/x" }'
# lfetch: tracks taint; asks, then reads hello.txt and fetches
sed -e 's/name = "tfetch"/name = "lfetch"\n[security]\ntaint_tracking = true/' \
	tfetch/agent.leviath >lfetch/agent.leviath
lev_turns lfetch/turns.toml \
	ask ask_user_text '{ question = "Go on?" }' \
	read read_file '{ path = "hello.txt" }' \
	fetch web_fetch '{ url = "http://127.0.0.1:9/x" }'

PERMS='[tool_permissions]\nshell = "allow"\nread_file = "allow"\nweb_fetch = "allow"\nwrite_file = "allow"\n'
INTEG='[[integrity.allow]]\ntool = "web_fetch"\ntarget = "127.0.0.1"\n'
ALLOW_IP='[[allowlist]]\ntool = "web_fetch"\nto = ["127.0.0.1"]\nmax_sensitivity = "internal"\n'

# waiter_case ID EDIT: a waiter run whose config gets EDIT while its first call holds
waiter_case() {
	rm -f work/go work/go2 work/waiting work/waiting2 &&
	edit "$CONFIG" "$PERMS" &&
	start waiter "$1" "" && wait_for test -e work/waiting &&
	edit "$CONFIG" "$2" &&
	touch work/go work/go2 && finish "$1" && took "$(cat "$1")"
}

test_expect_success 'set up: the daemon runs' '
	save "$CONFIG" "$PERMS" && save "$POLICY" "$INTEG" &&
	"$LEV" daemon start >/dev/null
'

test_expect_success '[agent_tool_permissions.X] shell = deny added mid-run reaches X' '
	waiter_case a1 "$PERMS[agent_tool_permissions.waiter]\nshell = \"deny\"\n" &&
	test "$(decision "$(cat a1)" after)" = deny && test ! -e work/after.txt
'

test_expect_success 'the twin: a deny for another agent lets the call run' '
	waiter_case a2 "$PERMS[agent_tool_permissions.other]\nshell = \"deny\"\n" &&
	test "$(decision "$(cat a2)" after)" = allow && test -e work/after.txt
'

test_expect_success 'shell_env = "strict" added mid-run withholds SSH_AUTH_SOCK from the next command' '
	waiter_case e1 "[security]\nshell_env = \"strict\"\n$PERMS" &&
	test "$(decision "$(cat e1)" after)" = allow &&
	test "$(cat work/after.txt)" = "[]"
'

test_expect_success 'the twin: an unrelated tightening leaves the filtered environment' '
	waiter_case e2 "$PERMS[agent_tool_permissions.waiter]\nweb_search = \"deny\"\n" &&
	test "$(cat work/after.txt)" = "[/tmp/agent.sock]"
'

test_expect_success 'a loosening waits: shell_env = "inherit" does not reach a strict run' '
	edit "$CONFIG" "[security]\nshell_env = \"strict\"\n$PERMS" &&
	rm -f work/go work/go2 work/waiting &&
	start waiter e3 "" && wait_for test -e work/waiting &&
	edit "$CONFIG" "[security]\nshell_env = \"inherit\"\n$PERMS" &&
	touch work/go work/go2 && finish e3 && took "$(cat e3)" &&
	test "$(cat work/after.txt)" = "[]"
'

# reader_case ID GRANTS: a reader run granted a.txt and b.txt, whose grants become GRANTS
reader_case() {
	rm -f work/go work/waiting &&
	edit "$CONFIG" "[security]\nread_paths = [\"$OUT/a.txt\", \"$OUT/b.txt\"]\n$PERMS" &&
	start reader "$1" "" && wait_for test -e work/waiting &&
	edit "$CONFIG" "[security]\nread_paths = [$2]\n$PERMS" &&
	touch work/go && finish "$1" && took "$(cat "$1")"
}

test_expect_success 'a read grant removed mid-run is gone for the next read' '
	reader_case r1 "\"$OUT/b.txt\"" &&
	test "$(decision "$(cat r1)" read)" = deny
'

test_expect_success 'the twin: removing another grant leaves the read allowed' '
	reader_case r2 "\"$OUT/a.txt\"" &&
	test "$(decision "$(cat r2)" read)" = allow
'

# tfetch_case ID EDIT: a tfetch run (taint off) whose config gets EDIT at its question
tfetch_case() {
	edit "$CONFIG" "[security]\nallow_local_network = true\n$PERMS" &&
	start tfetch "$1" "waiting: user prompt" &&
	edit "$CONFIG" "$2" &&
	"$LEV" respond "$(request_of "$(cat "$1")")" --text yes
}

test_expect_success 'taint_tracking = true added mid-run reaches the run: its outbound call is asked' '
	tfetch_case t1 "taint_tracking = true\n[security]\nallow_local_network = true\n$PERMS" &&
	wait_for status_is "$(cat t1)" "waiting: taint gate" &&
	"$LEV" respond "$(request_of "$(cat t1)")" --deny &&
	finish t1 &&
	test "$(decision "$(cat t1)" fetch)" = deny
'

test_expect_success 'the twin: an unrelated tightening lets the fetch through' '
	tfetch_case t2 "[security]\nallow_local_network = true\n$PERMS[agent_tool_permissions.tfetch]\nweb_search = \"deny\"\n" &&
	finish t2 &&
	test "$(decision "$(cat t2)" fetch)" = allow
'

# lfetch_case ID TEXT: Leviath's policy.toml, in a directory that did not
# exist when the daemon started, is created as TEXT at the run's question
lfetch_case() {
	"$LEV" daemon stop >/dev/null && rm -rf "$LDIR" && "$LEV" daemon start >/dev/null &&
	edit "$POLICY" "$ALLOW_IP$INTEG" &&
	edit "$CONFIG" "[security]\nallow_local_network = true\n$PERMS" &&
	start lfetch "$1" "waiting: user prompt" &&
	n=$(reloads) && mkdir -p "$LDIR" && save "$LDIR/policy.toml" "$2" &&
	wait_for reloaded_past "$n" &&
	"$LEV" respond "$(request_of "$(cat "$1")")" --text yes
}

test_expect_success "a new Leviath policy.toml (its directory made mid-run) reaches the run" '
	lfetch_case l1 "[mcp_overrides.read_file]\nsensitivity = \"private\"\n" &&
	wait_for status_is "$(cat l1)" "waiting: taint gate" &&
	"$LEV" respond "$(request_of "$(cat l1)")" --deny &&
	finish l1 &&
	test "$(decision "$(cat l1)" fetch)" = deny
'

test_expect_success "the twin: a Leviath policy that does not concern the call lets it run" '
	lfetch_case l2 "[mcp_overrides.web_search]\nsensitivity = \"private\"\n" &&
	finish l2 &&
	test "$(decision "$(cat l2)" fetch)" = allow &&
	rm -rf "$LDIR"
'

# crash_case ID EDIT: a waiter run takes EDIT (between its two holds); the
# daemon is killed (-9), the config loosened (shell allowed, nothing
# else), the daemon restarted, and the resumed run goes on
crash_case() {
	rm -f work/go work/go2 work/waiting work/waiting2 &&
	edit "$CONFIG" "$PERMS" &&
	start waiter "$1" "" && wait_for test -e work/waiting &&
	edit "$CONFIG" "$2" && touch work/go &&
	wait_for took "$(cat "$1")" && wait_for test -e work/waiting2 &&
	dpid=$(daemon_pid) && pid=$(field "$(cat "$1")" pid) &&
	kill -9 "$dpid" && wait_for gone "$dpid" && kill -9 "$pid" && wait_for gone "$pid" &&
	save "$CONFIG" "$PERMS" &&
	"$LEV" daemon start >/dev/null &&
	touch work/go2 && finish "$1"
}

test_expect_success 'after a crash, a resumed run keeps its stricter snapshot, not the loosened file' '
	crash_case c1 "[security]\nshell_env = \"strict\"\n$PERMS" &&
	test "$(cat work/after.txt)" = "[]"
'

test_expect_success 'the twin: a snapshot tightened elsewhere lets the call run after a crash' '
	crash_case c2 "$PERMS[agent_tool_permissions.waiter]\nweb_search = \"deny\"\n" &&
	test "$(cat work/after.txt)" = "[/tmp/agent.sock]"
'

OWN="$TRASH/own/config.toml"

test_expect_success 'a run with LEVIATH_CONFIG_PATH is reloaded from its own file' '
	mkdir -p "${OWN%/*}" && save "$OWN" "$PERMS" &&
	rm -f work/go work/go2 work/waiting &&
	(cd work && LEVIATH_CONFIG_PATH="$OWN" setsid -w "$LEV" run ../waiter --detach >../o1 2>/dev/null) &&
	wait_for test -e work/waiting &&
	n=$(reloads) && save "$OWN" "[tool_permissions]\nshell = \"deny\"\n" &&
	wait_for reloaded_past "$n" &&
	touch work/go work/go2 && finish o1 && took "$(cat o1)" &&
	test "$(decision "$(cat o1)" after)" = deny
'

test_expect_success 'the twin: its file untouched, the daemon config tightened, it runs' '
	save "$OWN" "$PERMS" && rm -f work/go work/go2 work/waiting &&
	(cd work && LEVIATH_CONFIG_PATH="$OWN" setsid -w "$LEV" run ../waiter --detach >../o2 2>/dev/null) &&
	wait_for test -e work/waiting &&
	edit "$CONFIG" "[tool_permissions]\nshell = \"deny\"\n" &&
	touch work/go work/go2 && finish o2 && took "$(cat o2)" &&
	test "$(decision "$(cat o2)" after)" = allow
'

test_done
