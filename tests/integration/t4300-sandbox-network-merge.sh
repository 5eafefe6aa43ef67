#!/bin/bash
# Issue 13, class 2: the user's and a blueprint's [sandbox] merge field by
# field, and network = false holds under every kind, kind none included, for
# every command lev runs (lev sandbox exec, a model's shell call, a
# pre-approved line, a command seed).  Proven from the outside: lev-probe
# tries to connect to a loopback TCP server that is first shown reachable
# without any sandbox; every refusal has a twin with the network allowed.
. "$SRC_DIR/tests/lib.sh"

PROBE=$(lev_helper_path lev-probe)
BIN="$TRASH/bin"
mkdir -p "$BIN"
ln -s "$PROBE" "$BIN/lev-probe"
export PATH="$BIN:$PATH"

export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
CONFIG="$LEVIATH_HOME/.leviath/config.toml"
WD="$TRASH/wd"
mkdir -p "$WD"

HOSTPIDS=
cleanup_t4300() {
	for p in $HOSTPIDS; do kill "$p" 2>/dev/null; done
	_lev_cleanup
}
trap cleanup_t4300 EXIT

config() {
	cat >"$CONFIG" && chmod 600 "$CONFIG"
}
bp() {
	mkdir -p "$TRASH/$1" && cat >"$TRASH/$1/agent.leviath"
}
# connect_word ARGS...: what lev-probe says about a TCP connect to the server
# when run through `lev sandbox exec ARGS`
connect_word() {
	"$LEV" sandbox exec --workdir "$WD" "$@" -- "$PROBE" connect 127.0.0.1 "$PORT" 2>"$TRASH/.err"
}

lev_start_http_server 127.0.0.1

test_control HOSTWEB 'positive control: the loopback server is reachable without a sandbox' '
	test -n "$PORT" &&
	test "$(lev-probe connect 127.0.0.1 "$PORT")" = ok
'

test_expect_success 'kind none, network = false: inet sockets refused, AF_UNIX allowed' '
	printf "[sandbox]\nkind = \"none\"\nnetwork = false\n" | config &&
	test "$(connect_word)" = EPERM &&
	test "$("$LEV" sandbox exec --workdir "$WD" -- lev-probe socket inet6)" = EPERM &&
	test "$("$LEV" sandbox exec --workdir "$WD" -- lev-probe socket netlink)" = EPERM &&
	test "$("$LEV" sandbox exec --workdir "$WD" -- lev-probe socket-hi inet)" = EPERM &&
	test "$("$LEV" sandbox exec --workdir "$WD" -- lev-probe io_uring)" = EPERM &&
	test "$("$LEV" sandbox exec --workdir "$WD" -- lev-probe socket unix)" = ok
'

test_expect_success HOSTWEB 'kind none, network = false: bash /dev/tcp and curl fail too' '
	printf "[sandbox]\nkind = \"none\"\nnetwork = false\n" | config &&
	test_must_fail "$LEV" sandbox exec --workdir "$WD" -- bash -c "echo hi >/dev/tcp/127.0.0.1/$PORT" &&
	if command -v curl >/dev/null; then
		test_must_fail "$LEV" sandbox exec --workdir "$WD" -- curl -sS -m 5 -o /dev/null "http://127.0.0.1:$PORT/"
	fi
'

test_expect_success 'benign twin: kind none, network = true connects' '
	printf "[sandbox]\nkind = \"none\"\nnetwork = true\n" | config &&
	test "$(connect_word)" = ok &&
	"$LEV" sandbox exec --workdir "$WD" -- bash -c "echo hi >/dev/tcp/127.0.0.1/$PORT"
'

test_expect_success 'the dry-run names the layers kind none gets with network = false' '
	printf "[sandbox]\nkind = \"none\"\nnetwork = false\n" | config &&
	"$LEV" sandbox exec --workdir "$WD" --dry-run --json -- true >plan.json &&
	python3 -c "import json; d=json.load(open(\"plan.json\")); assert \"seccomp\" in d[\"layers\"] and \"nnp\" in d[\"layers\"], d[\"layers\"]; assert d[\"network\"] is False"
'

bp widen <<EOF
[agent]
name = "widen"
[sandbox]
kind = "namespace"
network = true
[stages.main]
EOF

if lev sandbox probe --json 2>/dev/null | grep -q '"userns": true'; then
	test_expect_success HOSTWEB 'class 2: a blueprint that tightens the kind does not reopen the network' '
		printf "[sandbox]\nkind = \"none\"\nnetwork = false\n" | config &&
		"$LEV" sandbox exec --workdir "$WD" --agent "$TRASH/widen" --dry-run --json -- true >plan.json &&
		python3 -c "import json; d=json.load(open(\"plan.json\")); assert d[\"kind\"] == \"namespace\" and d[\"network\"] is False, d" &&
		w=$(connect_word --agent "$TRASH/widen") && test "$w" != ok && test -n "$w"
	'
	test_expect_success 'benign twin: the same blueprint connects when the user allows the network' '
		printf "[sandbox]\nkind = \"none\"\nnetwork = true\n" | config &&
		test "$(connect_word --agent "$TRASH/widen")" = ok
	'
else
	test_skip 'class 2 through a namespace sandbox' 'no user namespaces here'
fi

# --- lev run: a model's call, a pre-approved line, a command seed ---

bp runner <<'EOF'
[agent]
name = "runner"

[context.regions]
probe = { kind = "pinned", seed = { command = "lev-probe connect 127.0.0.1 PORT" } }
conversation = { kind = "sliding_window", max_items = 10 }

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
sed -i "s/PORT/$PORT/" "$TRASH/runner/agent.leviath"
cat >"$TRASH/runner/turns.toml" <<EOF
[[turn]]
text = "probing"
[[turn.call]]
tool = "shell"
args = { command = "lev-probe connect 127.0.0.1 $PORT" }
[[turn]]
text = "done"
EOF

# run_words: "seed=<word> call=<word>" from the --json events of one run.
# The seed event carries no text, only its size: lev-probe prints "ok\n"
# (3 bytes) or "EPERM\n" (6); any other size is reported as such.
run_words() {
	setsid -w "$LEV" run --foreground "$TRASH/runner" --workdir "$WD" --json >ev 2>err || { cat err >&2; return 1; }
	python3 - ev <<-'PY'
	import json, sys
	seed = call = "missing"
	for line in open(sys.argv[1]):
	    e = json.loads(line)
	    if e.get("event") == "seed" and e.get("region") == "probe":
	        seed = {3: "ok", 6: "EPERM"}.get(e["bytes"], "bytes:%s" % e["bytes"]) if e["ok"] else "failed:%s" % e["error"]
	    if e.get("event") == "tool_result" and e.get("tool") == "shell":
	        call = e["text"].strip()
	print("seed=%s call=%s" % (seed, call))
	PY
}

for how in safe allow; do
	if [ $how = safe ]; then
		grant='[safe_commands]
shell = ["lev-probe connect"]'
	else
		grant='[tool_permissions]
shell = "allow"
[safe_commands]
shell = ["lev-probe connect"]'
	fi
	test_expect_success HOSTWEB "lev run --follow ($how): kind none, network = false holds for a seed and a call" '
		printf "[sandbox]\nkind = \"none\"\nnetwork = false\n%s\n" "$grant" | config &&
		w=$(run_words) && echo "$w" &&
		test "$w" = "seed=EPERM call=EPERM"
	'
	test_expect_success "benign twin ($how): network = true, the seed and the call connect" '
		printf "[sandbox]\nkind = \"none\"\nnetwork = true\n%s\n" "$grant" | config &&
		w=$(run_words) && echo "$w" &&
		test "$w" = "seed=ok call=ok"
	'
done

test_done
