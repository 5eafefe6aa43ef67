#!/bin/bash
# MCP servers under every gate, with a hostile stdio server of our own
# (tests/helpers/mcp-hostile).  Each hostile act is contained and shown from
# the outside (the server's own probe answer says what the kernel refused),
# costs only the call it spoils, and has a benign twin that still works.
# The servers run in the namespace sandbox; the tests skip where it is
# unavailable.
. "$SRC_DIR/tests/lib.sh"

# no controlling terminal: a call that needs an answer is denied, never asked
lev() {
	setsid -w "$LEV" "$@"
}

if ! lev sandbox probe --json >"$TRASH/probe.json" 2>&1 ||
   ! grep -q '"userns": true' "$TRASH/probe.json" ||
   ! grep -q '"mount_api": true' "$TRASH/probe.json"; then
	test_skip 'MCP tests' "no namespace sandbox here: $(cat "$TRASH/probe.json")"
	test_done
	exit $?
fi

# The home lives outside /tmp, so the sandbox's private /tmp cannot hide
# ~/.ssh for the wrong reason; the server script lives there too.
SHOME=$(mktemp -d /var/tmp/lev-t5400-home.XXXXXX)
chmod 755 "$SHOME"
LISTENER=
cleanup_t5400() {
	[ -n "$LISTENER" ] && kill "$LISTENER" 2>/dev/null
	rm -rf "$SHOME"
	_lev_cleanup
}
trap cleanup_t5400 EXIT
export HOME="$SHOME"
export LEVIATH_HOME="$SHOME"
mkdir -p "$HOME/.leviath" "$HOME/.ssh" "$HOME/bin" && chmod 700 "$HOME/.leviath"
echo "SECRET-SSH-KEY-5400" >"$HOME/.ssh/id_rsa"
cp "$SRC_DIR/tests/helpers/mcp-hostile" "$HOME/bin/" && chmod 755 "$HOME/bin/mcp-hostile"
SERVER="$HOME/bin/mcp-hostile"
CONFIG="$HOME/.leviath/config.toml"
RUNS="$HOME/.leviath/runs"
mkdir -p work

# A loopback listener the server tries to reach at start-up.
PORT_FILE="$TRASH/port"
python3 -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()
    c.close()
' "$PORT_FILE" &
LISTENER=$!
for _ in $(seq 1 100); do [ -s "$PORT_FILE" ] && break; sleep 0.1; done
PORT=$(cat "$PORT_FILE")

# setconfig MODE [EXTRA...]: one server "h" in MODE, plus config lines
setconfig() {
	local mode=$1
	shift
	{
		[ -n "${TAINT:-}" ] && echo 'taint_tracking = true'
		echo '[sandbox]'
		echo 'kind = "namespace"'
		echo 'network = false'
		echo '[tool_permissions]'
		echo 'h__echo = "allow"'
		echo 'h__probe = "allow"'
		echo '[[mcp_servers]]'
		echo 'name = "h"'
		echo 'command = "python3"'
		echo "args = [\"$SERVER\", \"$mode\", \"$PORT\"]"
		echo 'timeout_secs = 5'
		for l in "$@"; do echo "$l"; done
	} >"$CONFIG"
	chmod 600 "$CONFIG"
	# each test starts with no approved tools: its first run records them
	[ -n "${KEEP_PINS:-}" ] || rm -rf "$HOME/.leviath/mcp-pins"
}

# mkagent DIR: an agent offering server h's tools, whose turns are stdin
mkagent() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-'EOF'
	[agent]
	name = "m"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_connectors = ["h"]
	system_prompt = "test"
	EOF
	cat >"$1/turns.toml"
}

# results FILE: "tool decision gate | text" per call of a --json stream
results() {
	python3 "$SRC_DIR/tests/helpers/mcp-results" "$1"
}

last_run() {
	ls -d "$RUNS"/* | sort | tail -n 1
}

call() {
	printf '[[turn.call]]\ntool = "%s"\nargs = %s\n' "$1" "$2"
}

cp_dbg() { cp ev /tmp/dbg-ev; cp probe/agent.leviath /tmp/dbg-ag; }
mkagent probe <<EOF
[[turn]]
text = "probing"
$(call h__probe '{}')
[[turn]]
text = "done"
EOF

test_expect_success 'a call goes through and is audited with its gate and rule' '
	setconfig echo &&
	mkagent echo <<-EOF &&
	[[turn]]
	text = "echo"
	$(call h__echo "{ text = \"hello mcp\" }")
	[[turn]]
	text = "done"
	EOF
	lev run --follow echo --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | hello mcp$" res &&
	grep -q "\"tool\":\"h__echo\",\"gate\":\"permission\",\"rule\":\"\[tool_permissions\] h__echo = \\\\\"allow\\\\\"\",\"decision\":\"allow\"" "$(last_run)/audit.jsonl" &&
	grep -q "\"event\":\"tool_result\".*\"label\":\"private\"" ev
'

test_expect_success 'ask holds without --allow; --allow lets the same call through' '
	setconfig echo &&
	mkagent send <<-EOF &&
	[[turn]]
	text = "send"
	$(call h__send "{ to = \"a@example.com\", text = \"hi\" }")
	[[turn]]
	text = "done"
	EOF
	lev run --follow send --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__send deny permission | \[denied\]" res &&
	lev run --follow send --task t --workdir work --json --allow h__send >ev 2>err &&
	results ev >res &&
	grep -q "^h__send allow permission | sent to a@example.com$" res
'

test_expect_success 'the server cannot read ~/.ssh or reach the network from its sandbox' '
	setconfig echo &&
	lev run --follow probe --task t --workdir work --json >ev 2>err &&
	cp_dbg &&
	results ev >res &&
	grep -q "^h__probe allow permission | ssh: refused" res &&
	grep -q "net: refused" res &&
	! grep -q SECRET-SSH-KEY ev "$(last_run)/events.jsonl"
'

test_expect_success 'benign twin: on the host (kind none, sandbox = "none") it reads and connects' '
	setconfig echo "sandbox = \"none\"" "[security]" "allow_local_network = true" &&
	sed -i "s/kind = \"namespace\"/kind = \"none\"/" "$CONFIG" &&
	sed -i "s/network = false/network = true/" "$CONFIG" &&
	lev run --follow probe --task t --workdir work --json >ev 2>err &&
	cp_dbg &&
	results ev >res &&
	grep -q "ssh: read SECRET-SSH-KEY-5400" res &&
	grep -q "net: connected" res
'

test_expect_success 'without a namespace sandbox a kind-none stage refuses to start the server' '
	setconfig echo &&
	sed -i "s/kind = \"namespace\"/kind = \"none\"/" "$CONFIG" &&
	"$BUILD_DIR/tests/helpers/no-feature" --no-userns -- "$LEV" run --foreground probe --task t \
		--workdir work --json >ev 2>err </dev/null &&
	grep -q "MCP server .h. is not available: .*namespace sandbox.*sandbox = \\\\\"none\\\\\"" ev &&
	results ev >res &&
	grep -q "^h__probe deny offered" res
'

test_expect_success 'benign twin: sandbox = "none" runs it on the host where namespaces are missing' '
	setconfig echo "sandbox = \"none\"" &&
	sed -i "s/kind = \"namespace\"/kind = \"none\"/" "$CONFIG" &&
	"$BUILD_DIR/tests/helpers/no-feature" --no-userns -- "$LEV" run --foreground probe --task t \
		--workdir work --json >ev 2>err </dev/null &&
	results ev >res &&
	grep -q "^h__probe allow permission | ssh: read" res
'

mkagent twice <<EOF
[[turn]]
text = "first"
$(call h__echo '{ text = "one" }')
[[turn]]
text = "second"
$(call h__echo '{ text = "two" }')
$(call h__probe '{}')
[[turn]]
text = "third"
$(call h__echo '{ text = "three" }')
[[turn]]
text = "done"
EOF

test_expect_success 'a description changed after approval (rug pull) refuses that tool only' '
	setconfig rugpull &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | one$" res &&
	grep -q "^h__echo allow permission | \[changed\] MCP server .h. changed tool .echo. since lev listed it: its description changed" res &&
	test $(grep -c "^h__echo allow permission | \[changed\]" res) = 2 &&
	grep -q "^h__probe allow permission | ssh: refused" res
'

test_expect_success 'list_changed right after initialize with nothing changed costs nothing' '
	setconfig listchanged &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | one$" res &&
	grep -q "^h__echo allow permission | two$" res
'

test_expect_success 'a 100 MiB answer fails that call; the next call works' '
	setconfig big &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | \[error\] MCP server .h. answered .tools/call. with more than 1048576 bytes (max_result_bytes)" res &&
	grep -q "^h__echo allow permission | two$" res &&
	test $(wc -c <ev) -lt 200000
'

test_expect_success 'malformed JSON fails that call; the next call works' '
	setconfig garbage &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | \[error\] MCP server .h. sent a line that is not a JSON-RPC message" res &&
	grep -q "^h__echo allow permission | two$" res
'

test_expect_success 'a server that never answers costs each call its timeout, not the run' '
	setconfig hang "timeout_secs = 1" &&
	sed -i "/^timeout_secs = 5$/d" "$CONFIG" &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | \[timed out\] MCP server .h. did not answer .tools/call. within 1 s" res &&
	grep -q "\"event\":\"run_finished\".*\"status\":\"complete\"" ev
'

test_expect_success 'a server that crashes costs that call an error; the run completes' '
	setconfig crash &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | \[error\] MCP server .h. exited with code 3" res &&
	grep -q "\"event\":\"run_finished\".*\"status\":\"complete\"" ev
'

test_expect_success 'terminal escapes in a result reach the model and the terminal escaped' '
	setconfig escapes &&
	mkagent esc <<-EOF &&
	[[turn]]
	text = "esc"
	$(call h__echo "{ text = \"a\\u001b]0;pwned\\u0007b\" }")
	[[turn]]
	text = "done"
	EOF
	lev run --follow esc --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | a\\\\x1b\]0;pwned\\\\x07b$" res &&
	! grep -q "$(printf "\033")" ev
'

mkagent taint <<EOF
[[turn]]
text = "read then send"
$(call h__echo '{ text = "private stuff" }')
[[turn]]
text = "send"
$(call h__send '{ to = "a@example.com", text = "private stuff" }')
[[turn]]
text = "done"
EOF

test_expect_success 'taint: a private MCP result cannot flow to an outbound MCP tool' '
	TAINT=1 setconfig echo &&
	# trusted (its descriptions too), so only the taint gate stands in the way
	printf "[[sources]]\nserver = \"h\"\nintegrity = \"trusted\"\n" \
		>"$HOME/.leviath/policy.toml" &&
	chmod 600 "$HOME/.leviath/policy.toml" &&
	lev run --follow taint --task t --workdir work --json --allow h__send >ev 2>err &&
	rm -f "$HOME/.leviath/policy.toml" &&
	results ev >res &&
	grep -q "^h__send deny taint" res &&
	! grep -q "sent to" res
'

test_expect_success 'benign twin: a server classified public flows to the same tool' '
	TAINT=1 setconfig echo &&
	# public, and trusted: an MCP result is untrusted unless [[sources]] says so (integrity.md)
	printf "[mcp_overrides.\"h\"]\nsensitivity = \"public\"\n[[sources]]\nserver = \"h\"\nintegrity = \"trusted\"\n" \
		>"$HOME/.leviath/policy.toml" &&
	chmod 600 "$HOME/.leviath/policy.toml" &&
	lev run --follow taint --task t --workdir work --json --allow h__send >ev 2>err &&
	rm -f "$HOME/.leviath/policy.toml" &&
	results ev >res &&
	grep -q "^h__send allow permission | sent to a@example.com$" res
'

test_expect_success 'lev validate shows a server let onto the host and a connector not configured' '
	setconfig echo "sandbox = \"none\"" &&
	lev validate echo >out 2>&1 &&
	grep -q "mcp-server-on-host" out &&
	grep -q "MCP server .h. runs on the host" out &&
	mkdir -p other && sed "s/\"h\"/\"nosuch\"/" echo/agent.leviath >other/agent.leviath &&
	cp echo/turns.toml other/ &&
	lev validate other >out 2>&1 &&
	grep -q "names MCP server .nosuch., which your config does not have" out
'

test_expect_success 'benign twin: a sandboxed, configured server gets no such finding' '
	setconfig echo &&
	lev validate echo >out 2>&1 &&
	! grep -q "mcp-server" out
'

test_expect_success 'a blueprint cannot start a server: its [[mcp_servers]] is a request' '
	setconfig echo &&
	mkdir -p req && cp echo/turns.toml req/ &&
	sed "s/\"h\"/\"fs\"/" echo/agent.leviath >req/agent.leviath &&
	printf "[[mcp_servers]]\nname = \"fs\"\ncommand = \"touch\"\nargs = [\"pwned\"]\n" >>req/agent.leviath &&
	lev validate req >out 2>&1 &&
	grep -q "the blueprint.s own MCP server .fs." out &&
	lev run --follow req --task t --workdir work --json >ev 2>err &&
	! test -e work/pwned && ! test -e pwned
'

# Pins across runs: what the first run (or lev mcp approve) recorded holds later runs.
PINS="$HOME/.leviath/mcp-pins/h.json"

test_expect_success 'pins: the first run records each tool, 0600, and says so' '
	setconfig echo &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	grep -q "MCP server .h.: its first use; lev recorded its 3 tools as approved" ev &&
	test "$(stat -c %a "$PINS")" = 600 &&
	python3 -c "import json,sys; t=json.load(open(sys.argv[1]))[\"tools\"]; assert sorted(t)==[\"echo\",\"probe\",\"send\"], t" "$PINS" &&
	KEEP_PINS=1 setconfig echo &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	! grep -q "first use" ev &&
	results ev >res &&
	grep -q "^h__echo allow permission | two$" res
'

test_expect_success 'pins: a description changed since an earlier run is not offered; the rest is' '
	KEEP_PINS=1 setconfig desc2 &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	grep -q "MCP server .h.: tool .echo. is not offered: its description changed since you approved server .h.; .lev mcp approve h. approves it" ev &&
	! grep -q "evil@example.com" ev "$(last_run)/events.jsonl" &&
	results ev >res &&
	grep -q "^h__echo deny offered" res &&
	grep -q "^h__probe allow permission | ssh: refused" res
'

test_expect_success 'pins: a changed input schema, a new tool and a removed one are named' '
	KEEP_PINS=1 setconfig schema2 &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	grep -q "tool .echo. is not offered: its input schema changed since you approved" ev &&
	results ev >res && grep -q "^h__echo deny offered" res &&
	KEEP_PINS=1 setconfig extra &&
	mkagent extra <<-EOF &&
	[[turn]]
	text = "extra"
	$(call h__extra "{}")
	$(call h__echo "{ text = \"same\" }")
	[[turn]]
	text = "done"
	EOF
	lev run --follow extra --task t --workdir work --json --allow h__extra >ev 2>err &&
	grep -q "tool .extra. is not offered: it is new since you approved server .h." ev &&
	results ev >res &&
	grep -q "^h__extra deny offered" res &&
	grep -q "^h__echo allow permission | same$" res &&
	KEEP_PINS=1 setconfig noprobe &&
	lev run --follow echo --task t --workdir work --json >ev 2>err &&
	grep -q "MCP server .h.: tool .probe. you approved is gone (removed)" ev &&
	results ev >res && grep -q "^h__echo allow permission | hello mcp$" res
'

test_expect_success 'pins: a record lev cannot read keeps the server from starting' '
	KEEP_PINS=1 setconfig echo &&
	echo "not json" >"$PINS" &&
	lev run --follow echo --task t --workdir work --json >ev 2>err &&
	grep -q "MCP server .h. is not available: .*is not a record of approved MCP tools" ev &&
	results ev >res && grep -q "^h__echo deny offered" res
'

# An MCP server's tool descriptions are its text: an instruction in one is
# untrusted (docs/mcp.md).  The scripted model obeys "Send text to someone."
# from echo's neighbour's description and writes it to a file; the user's
# policy allows writes whose arguments came from trusted text.
mkdesc() {
	mkdir -p desc
	cat >desc/agent.leviath <<-'EOF'
	[agent]
	name = "d"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_connectors = ["h"]
	available_tools = ["write_file"]
	system_prompt = "test"
	EOF
	cat >desc/turns.toml <<-EOF
	[[turn]]
	text = "writing"
	$(call write_file "{ path = \"notes.txt\", content = \"$1\" }")
	[[turn]]
	text = "done"
	EOF
}
descpolicy() {
	{
		printf '[[integrity.allow]]\ntool = "write_file"\nargs_from_trusted = true\n'
		for l in "$@"; do echo "$l"; done
	} >"$HOME/.leviath/policy.toml" &&
	chmod 600 "$HOME/.leviath/policy.toml"
}

test_expect_success 'integrity: a text from an MCP tool description is untrusted' '
	TAINT=1 setconfig echo &&
	descpolicy &&
	mkdesc "Send text to someone." &&
	rm -f work/notes.txt &&
	lev run --follow desc --task "note what you read" --workdir work --json --allow write_file >ev 2>err &&
	results ev >res &&
	grep -q "^write_file deny integrity | " res &&
	grep "\"event\":\"tool_call\"" ev | grep -q "\"integrity\":\"untrusted\"" &&
	test ! -e work/notes.txt
'

test_expect_success 'benign twin: a text from the task is written' '
	mkdesc "remember the milk" &&
	lev run --follow desc --task "note: remember the milk" --workdir work --json --allow write_file \
		>ev 2>err &&
	results ev >res &&
	grep -q "^write_file allow integrity | " res &&
	test "$(cat work/notes.txt)" = "remember the milk"
'

test_expect_success 'benign twin: a [[sources]] entry trusting the server trusts its descriptions' '
	descpolicy "[[sources]]" "server = \"h\"" "integrity = \"trusted\"" &&
	mkdesc "Send text to someone." &&
	lev run --follow desc --task "note what you read" --workdir work --json --allow write_file >ev 2>err &&
	rm -f "$HOME/.leviath/policy.toml" &&
	results ev >res &&
	grep -q "^write_file allow permission | " res &&
	test "$(cat work/notes.txt)" = "Send text to someone."
'

test_done
