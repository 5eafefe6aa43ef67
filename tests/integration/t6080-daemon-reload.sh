#!/bin/bash
# Hot reload: the daemon watches config.toml (and policy.toml and the
# rules).  A broken edit is reported (log with FILE:LINE:COL, `lev daemon
# status`, `lev ps --json` health) and kept out: runs go on, new ones start
# from the last good copy.  A good edit reaches running runs as the tighter
# of old and new from their next decision on (an allow -> deny applies to
# the next call), while a loosening waits for the next run.  Edits saved by
# rename, as editors do, are followed.  The same holds for policy.toml: an
# allowlist entry removed while a run waits at a question no longer allows
# its next outbound call; an entry added waits for the next run.  Leviath's
# policy.toml (merged in) has its last good copy too: a run resumed while
# it is broken is handed that copy.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

CONFIG="$ROOT/config.toml"

# write CONFIG as an editor saves it: a new file renamed over the old one
save_config() {
	printf "$1" >"$CONFIG.tmp" && chmod 600 "$CONFIG.tmp" && mv "$CONFIG.tmp" "$CONFIG"
}

# the daemon logged its Nth "config: reloaded" (N = $1)
reloaded() {
	test "$(grep -c "config: reloaded" "$ROOT/daemon.log")" -ge "$1"
}

# the decision on RUN's call CALL_ID, from its record
decision() {
	python3 - "$ROOT/runs/$1/events.jsonl" "$2" <<-PY
	import json, sys
	for l in open(sys.argv[1]):
	    e = json.loads(l)
	    if e["event"] == "tool_call" and sys.argv[2] in (e["id"], e.get("label")):
	        print(e["decision"])
	PY
}

mkdir -p work waiter asker
script_agent waiter '"shell"'
lev_turns waiter/turns.toml \
	wait shell '{ command = "touch waiting; while [ ! -e go ]; do sleep 0.1; done" }' \
	after shell '{ command = "touch after" }'
script_agent asker '"shell", "ask_user_text"'
lev_turns asker/turns.toml \
	ask ask_user_text '{ question = "Go on?" }' \
	after shell '{ command = "touch loose" }'

test_expect_success 'a tightening (shell allow -> deny) applies to a running run from its next call' '
	save_config "[tool_permissions]\nshell = \"allow\"\n" &&
	"$LEV" daemon start >/dev/null &&
	(cd work && setsid -w "$LEV" run ../waiter --detach >../t 2>/dev/null) &&
	wait_for test -e work/waiting &&
	save_config "[tool_permissions]\nshell = \"deny\"\n" &&
	wait_for reloaded 1 &&
	touch work/go &&
	wait_for status_is "$(cat t)" complete &&
	test "$(decision "$(cat t)" wait)" = allow &&
	test "$(decision "$(cat t)" after)" = deny &&
	test ! -e work/after &&
	grep -q "run $(cat t): took the tighter of its config and the new one" "$ROOT/daemon.log"
'

test_expect_success 'a loosening waits for the next run: the running one keeps its deny' '
	rm -f work/go work/waiting &&
	(cd work && setsid -w "$LEV" run ../asker --detach >../l 2>/dev/null) &&
	wait_for status_is "$(cat l)" "waiting: user prompt" &&
	save_config "[tool_permissions]\nshell = \"allow\"\n" &&
	wait_for reloaded 2 &&
	"$LEV" respond "$(request_of "$(cat l)")" --text yes &&
	wait_for status_is "$(cat l)" complete &&
	test "$(decision "$(cat l)" after)" = deny &&
	test ! -e work/loose
'

test_expect_success 'the twin: a new run gets the loosened config' '
	(cd work && setsid -w "$LEV" run ../waiter --detach >../n 2>/dev/null) &&
	wait_for test -e work/waiting && touch work/go &&
	wait_for status_is "$(cat n)" complete &&
	test "$(decision "$(cat n)" after)" = allow &&
	test -e work/after
'

test_expect_success 'a broken edit is reported and kept out; a running run goes on' '
	rm -f work/go work/waiting work/after &&
	(cd work && setsid -w "$LEV" run ../waiter --detach >../b 2>/dev/null) &&
	wait_for test -e work/waiting &&
	printf "[tool_permissions\nshell = \"deny\"\n" >"$CONFIG" &&
	wait_for grep -q "config: .*config.toml:1:[0-9]*: .*the last good copy stays in force" "$ROOT/daemon.log" &&
	"$LEV" daemon status >st &&
	grep -q "^config error: .*config.toml:1:[0-9]*: .*(the last good copy stays in force)\$" st &&
	"$LEV" ps --json | python3 -c "import json, sys; assert \"config.toml:1:\" in json.load(sys.stdin)[\"health\"][\"config_error\"]" &&
	touch work/go &&
	wait_for status_is "$(cat b)" complete &&
	test "$(decision "$(cat b)" after)" = allow
'

test_expect_success 'while it is broken, lev run --follow refuses, naming FILE:LINE:COL' '
	! (cd work && "$LEV" run ../waiter --detach >../g 2>../err) &&
	grep -q "config.toml:1:[0-9]*: " err
'

test_expect_success 'fixing the file clears the report' '
	save_config "[tool_permissions]\nshell = \"allow\"\n" &&
	wait_for reloaded 3 &&
	"$LEV" daemon status >st &&
	! grep -q "config error" st &&
	"$LEV" ps --json | python3 -c "import json, sys; assert \"config_error\" not in json.load(sys.stdin)[\"health\"]"
'

test_expect_success 'a run resumed while the file is broken starts from the last good copy' '
	rm -f work/go work/waiting work/after &&
	(cd work && setsid -w "$LEV" run ../waiter --detach >../c 2>/dev/null) &&
	wait_for test -e work/waiting &&
	dpid=$("$LEV" daemon status | sed -n "s/^running: pid \([0-9]*\),.*/\1/p") &&
	pid=$(field "$(cat c)" pid) &&
	kill -9 "$dpid" && wait_for gone "$dpid" && kill -9 "$pid" && wait_for gone "$pid" &&
	printf "[tool_permissions\n" >"$CONFIG" &&
	"$LEV" daemon start >/dev/null &&
	"$LEV" daemon status | grep -q "^config error: " &&
	wait_for status_is "$(cat c)" complete &&
	test "$(decision "$(cat c)" after)" = allow &&
	test -e work/after
'

POLICY="$ROOT/policy.toml"

save_policy() {
	printf "$1" >"$POLICY.tmp" && chmod 600 "$POLICY.tmp" && mv "$POLICY.tmp" "$POLICY"
}

# the number of "config: reloaded" lines so far, and waiting for one more
reloads() {
	grep -c "config: reloaded" "$ROOT/daemon.log"
}
reloaded_past() {
	test "$(reloads)" -gt "$1"
}

# reading hello.txt taints the context (internal); fetching from
# 127.0.0.1 or localhost is outbound (a refused connection: the call's
# result does not matter, its decision does)
mkdir -p fetcher && echo hello >work/hello.txt
cat >fetcher/agent.leviath <<'EOF'
[agent]
name = "fetcher"
[security]
taint_tracking = true
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file", "ask_user_text", "web_fetch"]
EOF
lev_turns fetcher/turns.toml \
	read read_file '{ path = "hello.txt" }' \
	ask ask_user_text '{ question = "Go on?" }' \
	fetch web_fetch '{ url = "http://127.0.0.1:9/x" }' \
	fetch2 web_fetch '{ url = "http://localhost:9/y" }'
INTEG='[[integrity.allow]]\ntool = "web_fetch"\ntarget = "127.0.0.1"\n[[integrity.allow]]\ntool = "web_fetch"\ntarget = "localhost"\n'
ALLOW_IP='[[allowlist]]\ntool = "web_fetch"\nto = ["127.0.0.1"]\nmax_sensitivity = "internal"\n'
ALLOW_LOCALHOST='[[allowlist]]\ntool = "web_fetch"\nto = ["localhost"]\nmax_sensitivity = "internal"\n'

# start a fetcher run (its id in file $2) with policy.toml as $1; it waits at its question
start_fetcher() {
	n=$(reloads) &&
	save_policy "$1" &&
	wait_for reloaded_past "$n" &&
	(cd work && setsid -w "$LEV" run ../fetcher --detach >../"$2" 2>/dev/null) &&
	wait_for status_is "$(cat "$2")" "waiting: user prompt"
}

# answer RUN's question after saving policy.toml as $2
edit_and_go_on() {
	n=$(reloads) &&
	save_policy "$2" &&
	wait_for reloaded_past "$n" &&
	"$LEV" respond "$(request_of "$1")" --text yes
}

test_expect_success 'policy.toml: set up (a good config, the daemon takes it)' '
	n=$(reloads) &&
	save_config "[security]\nallow_local_network = true\n[tool_permissions]\nweb_fetch = \"allow\"\n" &&
	wait_for reloaded_past "$n" &&
	! "$LEV" daemon status | grep -q "config error"
'

test_expect_success 'policy.toml: an allowlist entry removed reaches a run waiting at a question' '
	start_fetcher "$ALLOW_IP$ALLOW_LOCALHOST$INTEG" p1 &&
	edit_and_go_on "$(cat p1)" "$ALLOW_LOCALHOST$INTEG" &&
	wait_for status_is "$(cat p1)" "waiting: taint gate" &&
	"$LEV" respond "$(request_of "$(cat p1)")" --deny &&
	wait_for status_is "$(cat p1)" complete &&
	test "$(decision "$(cat p1)" fetch)" = deny &&
	test "$(decision "$(cat p1)" fetch2)" = allow &&
	grep -q "run $(cat p1): took the tighter of its config and the new one" "$ROOT/daemon.log"
'

test_expect_success 'policy.toml: the twin, an unrelated loosening does not loosen the running run' '
	start_fetcher "$ALLOW_IP$INTEG" p2 &&
	edit_and_go_on "$(cat p2)" "$ALLOW_IP$ALLOW_LOCALHOST$INTEG" &&
	wait_for status_is "$(cat p2)" "waiting: taint gate" &&
	test "$(decision "$(cat p2)" fetch)" = allow &&
	"$LEV" respond "$(request_of "$(cat p2)")" --deny &&
	wait_for status_is "$(cat p2)" complete &&
	test "$(decision "$(cat p2)" fetch2)" = deny
'

test_expect_success 'policy.toml: a new run gets the loosened file' '
	start_fetcher "$ALLOW_IP$ALLOW_LOCALHOST$INTEG" p3 &&
	"$LEV" respond "$(request_of "$(cat p3)")" --text yes &&
	wait_for status_is "$(cat p3)" complete &&
	test "$(decision "$(cat p3)" fetch)" = allow &&
	test "$(decision "$(cat p3)" fetch2)" = allow
'

LPOL="${XDG_CONFIG_HOME:-$HOME/.config}/leviath/policy.toml"

test_expect_success "Leviath's policy.toml: a run resumed while it is broken starts from its last good copy" '
	mkdir -p "${LPOL%/*}" &&
	printf "$ALLOW_IP$ALLOW_LOCALHOST" >"$LPOL" &&
	save_policy "$INTEG" &&
	"$LEV" daemon stop >/dev/null && "$LEV" daemon start >/dev/null &&
	! "$LEV" daemon status | grep -q "config error" &&
	(cd work && setsid -w "$LEV" run ../fetcher --detach >../p4 2>/dev/null) &&
	wait_for status_is "$(cat p4)" "waiting: user prompt" &&
	dpid=$("$LEV" daemon status | sed -n "s/^running: pid \([0-9]*\),.*/\1/p") &&
	pid=$(field "$(cat p4)" pid) &&
	kill -9 "$dpid" && wait_for gone "$dpid" && kill -9 "$pid" && wait_for gone "$pid" &&
	printf "[[allowlist]\n" >"$LPOL" &&
	"$LEV" daemon start >/dev/null &&
	"$LEV" daemon status >st &&
	grep -q "^config error: .*leviath/policy.toml:1:" st &&
	wait_for status_is "$(cat p4)" "waiting: user prompt" &&
	"$LEV" respond "$(request_of "$(cat p4)")" --text yes &&
	wait_for status_is "$(cat p4)" complete &&
	test "$(decision "$(cat p4)" fetch)" = allow &&
	test "$(decision "$(cat p4)" fetch2)" = allow
'

test_expect_success "Leviath's policy.toml: the twin, once fixed a new run takes the file itself" '
	printf "$ALLOW_IP" >"$LPOL.tmp" && mv "$LPOL.tmp" "$LPOL" &&
	wait_for sh -c "! \"$LEV\" daemon status | grep -q \"config error\"" &&
	(cd work && setsid -w "$LEV" run ../fetcher --detach >../p5 2>/dev/null) &&
	wait_for status_is "$(cat p5)" "waiting: user prompt" &&
	"$LEV" respond "$(request_of "$(cat p5)")" --text yes &&
	wait_for status_is "$(cat p5)" "waiting: taint gate" &&
	"$LEV" respond "$(request_of "$(cat p5)")" --deny &&
	wait_for status_is "$(cat p5)" complete &&
	test "$(decision "$(cat p5)" fetch)" = allow &&
	test "$(decision "$(cat p5)" fetch2)" = deny
'

test_done
