#!/bin/bash
# MCP over streamable HTTP (docs/mcp.md), with the hostile server of
# tests/helpers/mcp-hostile in its --http mode on 127.0.0.1: reached only
# through lev's network guard, the session id and protocol version carried,
# ${VAR} headers expanded, JSON and server-sent-event answers, and each
# hostile act (100 MiB, garbage, no answer, a rug pull) costing only its call.
. "$SRC_DIR/tests/lib.sh"

# no controlling terminal: a call that needs an answer is denied, never asked
lev() {
	setsid -w "$LEV" "$@"
}

export LEVIATH_HOME="$HOME"
mkdir -p "$HOME/.leviath" work && chmod 700 "$HOME/.leviath"
CONFIG="$HOME/.leviath/config.toml"
SRV=
cleanup_t5402() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null
	_lev_cleanup
}
trap cleanup_t5402 EXIT

# startsrv MODE: the hostile server serving HTTP in MODE; sets PORT
startsrv() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null
	rm -f "$TRASH/port" "$TRASH/port.log"
	"$SRC_DIR/tests/helpers/mcp-hostile" --http "$TRASH/port" "$1" 2>"$TRASH/srv.err" &
	SRV=$!
	for _ in $(seq 1 300); do [ -s "$TRASH/port" ] && break; sleep 0.1; done
	PORT=$(cat "$TRASH/port")
	: >"$TRASH/port.log"
}

# setconfig URL [EXTRA...]: one url server "h"
setconfig() {
	local url=$1
	shift
	{
		[ -n "${TAINT:-}" ] && echo 'taint_tracking = true'
		echo '[tool_permissions]'
		echo 'h__echo = "allow"'
		echo 'h__probe = "allow"'
		echo '[[mcp_servers]]'
		echo 'name = "h"'
		echo "url = \"$url\""
		echo 'headers = { Authorization = "Bearer ${T5402_HDR}" }'
		echo 'timeout_secs = 5'
		for l in "$@"; do echo "$l"; done
	} >"$CONFIG"
	chmod 600 "$CONFIG"
	rm -rf "$HOME/.leviath/mcp-pins"
}
export T5402_HDR=tok-5402

mkdir -p twice
cat >twice/agent.leviath <<'EOF'
[agent]
name = "m"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_connectors = ["h"]
system_prompt = "test"
EOF
cat >twice/turns.toml <<'EOF'
[[turn]]
text = "first"
[[turn.call]]
tool = "h__echo"
args = { text = "one" }
[[turn]]
text = "second"
[[turn.call]]
tool = "h__echo"
args = { text = "two" }
[[turn.call]]
tool = "h__probe"
args = {}
[[turn]]
text = "done"
EOF

# results FILE: "tool decision gate | text" per call of a --json stream
results() {
	python3 "$SRC_DIR/tests/helpers/mcp-results" "$1"
}

startsrv echo
test_expect_success 'a loopback server is refused by the network guard; it never gets a request' '
	setconfig "http://127.0.0.1:$PORT/mcp" &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	grep -q "MCP server .h. is not available: MCP server .h.: .127.0.0.1. is 127.0.0.1 (a loopback address); set allow_local_network = true" ev &&
	results ev >res &&
	grep -q "^h__echo deny offered" res &&
	! test -s "$TRASH/port.log"
'

test_expect_success 'benign twin: allow_local_network = true; session, version and ${VAR} header carried' '
	setconfig "http://127.0.0.1:$PORT/mcp" "allow_local_network = true" &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | one$" res &&
	grep -q "^h__echo allow permission | two$" res &&
	# the header reached the server, which echoes it: a secret by its role,
	# redacted on its way back (base/secrets.h)
	grep -q "^h__probe allow permission | .*; auth: Bearer \*\*\*\*\*\*\*\*$" res &&
	! grep -q "tok-5402" ev &&
	grep -qx "tools/call" "$TRASH/port.log"
'

test_expect_success 'a cloud metadata address is refused even with allow_local_network' '
	setconfig "http://169.254.169.254/mcp" "allow_local_network = true" &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	grep -q "MCP server .h. is not available: .*(a cloud metadata address); cloud metadata addresses are always refused" ev
'

test_expect_success 'a ${VAR} that is not set keeps the server from starting' '
	setconfig "http://127.0.0.1:$PORT/mcp" "allow_local_network = true" &&
	sed -i "s/T5402_HDR/T5402_UNSET_VAR/" "$CONFIG" &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	grep -q "MCP server .h. is not available: MCP server .h.: a header names \${T5402_UNSET_VAR}, which is not set" ev
'

startsrv rugpull
test_expect_success 'server-sent events: answers and a rug pull in the stream' '
	setconfig "http://127.0.0.1:$PORT/mcp" "allow_local_network = true" &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | one$" res &&
	grep -q "^h__echo allow permission | \[changed\] MCP server .h. changed tool .echo. since lev listed it: its description changed" res &&
	grep -q "^h__probe allow permission | ssh" res
'

startsrv big
test_expect_success 'a 100 MiB answer fails that call; the next call works' '
	setconfig "http://127.0.0.1:$PORT/mcp" "allow_local_network = true" "timeout_secs = 60" &&
	sed -i "/^timeout_secs = 5$/d" "$CONFIG" &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | \[error\] MCP server .h. answered .tools/call. with more than 1048576 bytes (max_result_bytes)" res &&
	grep -q "^h__echo allow permission | two$" res &&
	test $(wc -c <ev) -lt 200000
'

startsrv garbage
test_expect_success 'an answer that is not JSON fails that call; the next call works' '
	setconfig "http://127.0.0.1:$PORT/mcp" "allow_local_network = true" &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | \[error\] MCP server .h. answered with a body that is not JSON-RPC" res &&
	grep -q "^h__echo allow permission | two$" res
'

startsrv hang
test_expect_success 'a server that never answers costs each call its timeout, not the run' '
	setconfig "http://127.0.0.1:$PORT/mcp" "allow_local_network = true" "timeout_secs = 1" &&
	sed -i "/^timeout_secs = 5$/d" "$CONFIG" &&
	lev run --follow twice --task t --workdir work --json >ev 2>err &&
	results ev >res &&
	grep -q "^h__echo allow permission | \[timed out\] MCP server .h. did not answer .tools/call. within 1 s" res &&
	grep -q "\"event\":\"run_finished\".*\"status\":\"complete\"" ev
'

startsrv echo
test_expect_success 'lev mcp test reaches an HTTP server the same way' '
	setconfig "http://127.0.0.1:$PORT/mcp" &&
	test_must_fail "$LEV" mcp test h 2>err &&
	grep -q "loopback address" err &&
	setconfig "http://127.0.0.1:$PORT/mcp" "allow_local_network = true" &&
	"$LEV" mcp test h >out &&
	grep -q "MCP server .h. (mcp-hostile 1, protocol 2025-06-18): 3 tools" out
'

test_done
