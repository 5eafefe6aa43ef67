#!/bin/bash
# A container sandbox that falls back to the host (on_unavailable = "warn"
# and no container to be had: here, no image) runs its commands inside the
# host fence of kind none (issue 27, class 2): code hidden from the key
# parser cannot write ~/.bashrc, a pre-approved line reads no more than the
# system trees, the workdir and granted paths, and [integrity] protected
# files stay read-only while untrusted content is live.  Each has a twin
# that goes through.  The fence is decided on the sandbox in force, never
# on the kind the blueprint asked for.
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

if ! "$LEV" sandbox probe --json 2>/dev/null | grep -q '"landlock_abi": [1-9]'; then
	test_skip 'the fallback'"'"'s host fence' 'this kernel has no Landlock'
	test_done
	exit $?
fi

CFG_DIR="$HOME/.leviath"
BP="$TRASH/bp"
WD="$TRASH/wd"
mkdir -p "$CFG_DIR" "$BP" "$WD/inbox" "$HOME/docs"
chmod 700 "$CFG_DIR"
printf '[sandbox]\non_unavailable = "warn"\n' >"$CFG_DIR/config.toml"
chmod 600 "$CFG_DIR/config.toml"
cat >"$BP/agent.leviath" <<EOF_BP
[agent]
name = "fallback"
[sandbox]
kind = "container"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell", "read_file"]
EOF_BP

# turns UNTRUSTED LINE...: optionally read an untrusted page, then run each LINE
turns() {
	lev_shell_turns "$BP/turns.toml" "$@"
}
hidden() {
	printf "x='a[\$(%s)]'; echo \$((x))" "$1"
}
run() {
	lev run --foreground "$BP" --workdir "$WD" --json "$@" >ev 2>err
}
results() {
	jq -r 'select(.event == "tool_result") | .text' ev
}

test_expect_success 'the stage runs on the host, and says so' '
	turns no "echo on-host" && run --yolo && results | grep -q "^on-host$" &&
	jq -r "select(.event == \"warning\") | .message" ev | grep -q "running on the host"
'

test_expect_success 'hidden code under --yolo cannot append to ~/.bashrc; the workdir twin writes' '
	echo original >"$HOME/.bashrc" && rm -f "$WD/twin" &&
	turns no "$(hidden "echo pwned >> ~/.bashrc")" "$(hidden "echo twin >> twin")" &&
	run --yolo &&
	test "$(cat "$HOME/.bashrc")" = original && grep -q "^twin$" "$WD/twin"
'

test_expect_success 'a pre-approved line reads no file named in data outside the workdir' '
	echo "TOPSECRET-DOCS-LINE" >"$HOME/docs/secret" &&
	echo "$HOME/docs/secret" >"$WD/list.rsp" &&
	turns no "strings @list.rsp" && run &&
	! results | grep -q TOPSECRET
'

test_expect_success 'benign twin: the same line naming a workdir file reads it' '
	echo "WORKDIR-STRING-LINE" >"$WD/data.txt" && echo "$WD/data.txt" >"$WD/list.rsp" &&
	turns no "strings @list.rsp" && run && results | grep -q WORKDIR-STRING-LINE
'

cat >"$CFG_DIR/policy.toml" <<EOF_P
[integrity]
untrusted = ["inbox/*"]
protected = ["payees.csv"]
EOF_P
chmod 600 "$CFG_DIR/policy.toml"
echo "page text" >"$WD/inbox/page.html"

test_expect_success 'untrusted content live: hidden sed -i and >> leave a protected file; other files written' '
	printf "alice,1\n" >"$WD/payees.csv" && echo free >"$WD/notes.txt" &&
	turns yes "$(hidden "sed -i s/alice/mallory/ payees.csv; echo m >> payees.csv")" \
		"$(hidden "echo ok >> notes.txt")" &&
	run --yolo &&
	test "$(cat "$WD/payees.csv")" = "alice,1" && test "$(tail -1 "$WD/notes.txt")" = ok
'

test_expect_success 'benign twin: only trusted content live, the same line changes it' '
	printf "alice,1\n" >"$WD/payees.csv" &&
	turns no "$(hidden "sed -i s/alice/mallory/ payees.csv")" && run --yolo &&
	test "$(cat "$WD/payees.csv")" = "mallory,1"
'

test_done
