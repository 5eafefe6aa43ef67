#!/bin/bash
# Real MCP servers from npm (tests/mcp: @modelcontextprotocol/server-filesystem
# and server-everything, pinned by tests/mcp/package-lock.json and installed
# by scripts/install-deps with npm ci) under every gate.  The servers run in
# the namespace sandbox; the file server is given a wider root than the
# workdir, and lev's sandbox still refuses what lies outside it.
. "$SRC_DIR/tests/lib.sh"

# no controlling terminal: a call that needs an answer is denied, never asked
lev() {
	setsid -w "$LEV" "$@"
}

NM="$SRC_DIR/tests/mcp/node_modules"
FS_JS="$NM/@modelcontextprotocol/server-filesystem/dist/index.js"
EV_JS="$NM/@modelcontextprotocol/server-everything/dist/index.js"
if ! command -v node >/dev/null 2>&1; then
	test_skip 'MCP servers from npm' "node is not installed (scripts/install-deps installs it)"
	test_done
	exit $?
fi
if { [ ! -f "$FS_JS" ] || [ ! -f "$EV_JS" ]; } && [ -s "$SRC_DIR/tests/mcp/.npm-unreachable" ]; then
	# the network, not lev: scripts/install-deps recorded npm's own error
	echo "ok 1 - MCP servers from npm # SKIP the npm registry was unreachable when scripts/install-deps ran: $(head -c 300 "$SRC_DIR/tests/mcp/.npm-unreachable" | tr '\n' ' ')"
	echo "1..1"
	exit 0
fi
if [ ! -f "$FS_JS" ] || [ ! -f "$EV_JS" ]; then
	test_skip 'MCP servers from npm' "tests/mcp/node_modules is absent: run scripts/install-deps (npm ci --prefix tests/mcp)"
	test_done
	exit $?
fi
if ! lev sandbox probe --json >"$TRASH/probe.json" 2>&1 ||
   ! grep -q '"userns": true' "$TRASH/probe.json" ||
   ! grep -q '"mount_api": true' "$TRASH/probe.json"; then
	test_skip 'MCP servers from npm' "no namespace sandbox here: $(cat "$TRASH/probe.json")"
	test_done
	exit $?
fi

# The home lives outside /tmp (the sandbox's /tmp is private, which would
# hide it for the wrong reason); so do the servers when the source tree is
# under /tmp.
SHOME=$(mktemp -d /var/tmp/lev-t5410-home.XXXXXX)
chmod 755 "$SHOME"
trap 'rm -rf "$SHOME"; _lev_cleanup' EXIT
case "$(cd "$NM" && pwd -P)/" in
/tmp/*|/run/*|/dev/shm/*)
	cp -r "$SRC_DIR/tests/mcp" "$SHOME/mcp"
	NM="$SHOME/mcp/node_modules"
	FS_JS="$NM/@modelcontextprotocol/server-filesystem/dist/index.js"
	EV_JS="$NM/@modelcontextprotocol/server-everything/dist/index.js"
	;;
esac
export HOME="$SHOME"
export LEVIATH_HOME="$SHOME"
mkdir -p "$HOME/.leviath" "$HOME/.ssh" "$HOME/work" && chmod 700 "$HOME/.leviath"
echo "SECRET-SSH-KEY-5410" >"$HOME/.ssh/id_rsa"
echo "hello from the workdir" >"$HOME/work/hello.txt"
CONFIG="$HOME/.leviath/config.toml"
RUNS="$HOME/.leviath/runs"
W="$HOME/work"

# setconfig [EXTRA...]: the file server with root $HOME (wider than the
# workdir) and the everything server, both through lev mcp add
setconfig() {
	{
		[ -n "${TAINT:-}" ] && echo 'taint_tracking = true'
		echo '[sandbox]'
		echo 'kind = "namespace"'
		echo 'network = false'
		echo '[tool_permissions]'
		echo 'fs__read_text_file = "allow"'
		for l in "$@"; do echo "$l"; done
	} >"$CONFIG"
	chmod 600 "$CONFIG"
	"$LEV" mcp add fs -- node "$FS_JS" "$HOME" >/dev/null &&
	"$LEV" mcp add ev -- node "$EV_JS" stdio >/dev/null
}

# mkagent DIR: an agent offering both servers' tools, whose turns are stdin
mkagent() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-'EOF2'
	[agent]
	name = "n"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_connectors = ["fs", "ev"]
	system_prompt = "test"
	EOF2
	cat >"$1/turns.toml"
}

call() {
	printf '[[turn.call]]\ntool = "%s"\nargs = %s\n' "$1" "$2"
}

# results FILE: "tool decision gate | text" per call of a --json stream
results() {
	python3 "$SRC_DIR/tests/helpers/mcp-results" "$1"
}

last_run() {
	ls -d "$RUNS"/* | sort | tail -n 1
}

mkagent read <<EOF
[[turn]]
text = "read"
$(call fs__read_text_file "{ path = \"$W/hello.txt\" }")
[[turn]]
text = "done"
EOF

test_expect_success 'a call to the real file server goes through and is audited' '
	setconfig &&
	lev run --follow read --task t --workdir "$W" --json >ev 2>err &&
	results ev >res &&
	grep -q "^fs__read_text_file allow permission | hello from the workdir" res &&
	grep -q "\"tool\":\"fs__read_text_file\",\"gate\":\"permission\".*\"decision\":\"allow\"" "$(last_run)/audit.jsonl"
'

mkagent secret <<EOF
[[turn]]
text = "read the key"
$(call fs__read_text_file "{ path = \"$HOME/.ssh/id_rsa\" }")
[[turn]]
text = "done"
EOF

test_expect_success 'a file outside the workdir but inside the server root: lev refuses it' '
	setconfig &&
	lev run --follow secret --task t --workdir "$W" --json >ev 2>err &&
	results ev >res &&
	grep -q "^fs__read_text_file allow permission | " res &&
	! grep -q SECRET-SSH-KEY ev "$(last_run)/events.jsonl" "$(last_run)/audit.jsonl"
'

mkagent write <<EOF
[[turn]]
text = "write"
$(call fs__write_file "{ path = \"$HOME/pwned.txt\", content = \"pwned\" }")
$(call fs__write_file "{ path = \"$W/ok.txt\", content = \"fine\" }")
[[turn]]
text = "done"
EOF

test_expect_success 'ask holds without --allow: nothing is written' '
	setconfig &&
	lev run --follow write --task t --workdir "$W" --json >ev 2>err &&
	results ev >res &&
	test $(grep -c "^fs__write_file deny permission" res) = 2 &&
	! test -e "$W/ok.txt" && ! test -e "$HOME/pwned.txt"
'

test_expect_success 'with --allow: the workdir write lands, the one outside it does not' '
	setconfig &&
	lev run --follow write --task t --workdir "$W" --json --allow fs__write_file >ev 2>err &&
	results ev >res &&
	test "$(cat "$W/ok.txt")" = fine &&
	! test -e "$HOME/pwned.txt"
'

mkagent taint <<EOF
[[turn]]
text = "read then echo"
$(call fs__read_text_file "{ path = \"$W/hello.txt\" }")
[[turn]]
text = "echo"
$(call ev__echo "{ message = \"hello from the workdir\" }")
[[turn]]
text = "done"
EOF

test_expect_success 'taint: a private file-server result cannot flow to an outbound MCP tool' '
	TAINT=1 setconfig &&
	# both servers trusted (their descriptions and results are their text,
	# mcp.md#integrity), so only the taint gate stands between them
	printf "[[sources]]\nserver = \"fs\"\nintegrity = \"trusted\"\n[[sources]]\nserver = \"ev\"\nintegrity = \"trusted\"\n" \
		>"$HOME/.leviath/policy.toml" &&
	chmod 600 "$HOME/.leviath/policy.toml" &&
	lev run --follow taint --task t --workdir "$W" --json --allow ev__echo >ev 2>err &&
	rm -f "$HOME/.leviath/policy.toml" &&
	results ev >res &&
	grep -q "^fs__read_text_file allow permission | hello from the workdir" res &&
	grep -q "^ev__echo deny taint" res &&
	! grep -q "Echo: hello" res
'

test_expect_success 'benign twin: the file server classified public flows to the same tool' '
	TAINT=1 setconfig &&
	# public, and both servers trusted: MCP text is untrusted unless [[sources]] says so (mcp.md)
	printf "[mcp_overrides.\"fs\"]\nsensitivity = \"public\"\n[[sources]]\nserver = \"fs\"\nintegrity = \"trusted\"\n[[sources]]\nserver = \"ev\"\nintegrity = \"trusted\"\n" \
		>"$HOME/.leviath/policy.toml" &&
	chmod 600 "$HOME/.leviath/policy.toml" &&
	lev run --follow taint --task t --workdir "$W" --json --allow ev__echo >ev 2>err &&
	rm -f "$HOME/.leviath/policy.toml" &&
	results ev >res &&
	grep -q "^ev__echo allow permission | Echo: hello from the workdir$" res
'

test_done
