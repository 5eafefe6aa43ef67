#!/bin/bash
# [integrity] protected files are read-only to commands while untrusted
# content is live, under every sandbox kind (issue 27, class 1; kind none:
# t4330).  Namespace: each protected file is bound onto itself read-only,
# and each directory between it and the workdir onto itself (a mount point
# is neither replaced nor renamed); without user namespaces Landlock splits
# the workdir's write grant; with neither the line is refused.  Container:
# t4346; its fallback to the host: t4345.  Every writer is hidden from the key parser (code in a
# variable's value) and run under --yolo, so only the kernel stands in the
# way.  Twins: the same lines with only trusted content live go through,
# and the workdir's other files stay writable while untrusted content is.
. "$SRC_DIR/tests/lib.sh"

if ! "$LEV" sandbox probe --json >"$TRASH/probe.json" 2>&1 ||
   ! grep -q '"userns": true' "$TRASH/probe.json" ||
   ! grep -q '"mount_api": true' "$TRASH/probe.json" ||
   ! grep -q '"landlock_abi": [1-9]' "$TRASH/probe.json"; then
	test_skip 'protected files under the namespace sandbox' \
		"no user namespaces, mount API or Landlock here: $(cat "$TRASH/probe.json")"
	test_done
	exit $?
fi

lev() {
	setsid -w "$LEV" "$@"
}
NF=$(lev_helper_path no-feature)

CFG_DIR="$HOME/.leviath"
BP="$TRASH/bp"
WD="$TRASH/work"
mkdir -p "$CFG_DIR" "$BP" "$WD/inbox" "$WD/sub/deep"
chmod 700 "$CFG_DIR"
cat >"$BP/agent.leviath" <<EOF_BP
[agent]
name = "protect"
[sandbox]
kind = "namespace"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell", "read_file"]
EOF_BP
cat >"$CFG_DIR/policy.toml" <<EOF_P
[integrity]
untrusted = ["inbox/*"]
protected = ["payees.csv", "sub/deep/*.csv"]
EOF_P
chmod 600 "$CFG_DIR/policy.toml"
# the degraded runs below: the user's config lets a stage run with the layers left
printf '[sandbox]\non_unavailable = "warn"\n' >"$CFG_DIR/config.toml"
chmod 600 "$CFG_DIR/config.toml"
echo "page text" >"$WD/inbox/page.html"

# hidden LINE: LINE run from a variable's value, which the key parser cannot see
hidden() {
	printf "x='a[\$(%s)]'; echo \$((x))" "$1"
}
# turns UNTRUSTED LINE...: optionally read the untrusted page, then run each LINE
turns() {
	lev_shell_turns "$BP/turns.toml" "$@"
}
reset_files() {
	rm -f "$WD/payees.csv" "$WD/sub/deep/more.csv" "$WD/other.csv" &&
	printf 'alice,1\n' >"$WD/payees.csv" && printf 'bob,2\n' >"$WD/sub/deep/more.csv" &&
	printf 'free\n' >"$WD/notes.txt" && printf 'x\n' >"$WD/other.csv" &&
	printf 'y\n' >"$WD/sub/deep/free.txt"
}
# unchanged: both protected files as reset_files left them
unchanged() {
	test "$(cat "$WD/payees.csv" 2>/dev/null)" = "alice,1" &&
	test "$(cat "$WD/sub/deep/more.csv" 2>/dev/null)" = "bob,2"
}
# run: the namespace sandbox; run_plain: the same without user namespaces
run() {
	lev run --foreground "$BP" --workdir "$WD" --json --yolo >ev 2>err
}
run_plain() {
	setsid -w "$NF" --no-userns -- "$LEV" run --foreground "$BP" --workdir "$WD" --json \
		--yolo >ev 2>err
}
results() {
	jq -r 'select(.event == "tool_result") | .text' ev
}

WRITES=('echo mallory,9 >> payees.csv' 'sed -i s/alice/mallory/ payees.csv'
	'cp other.csv payees.csv' 'mv other.csv payees.csv' 'ln -sf other.csv payees.csv'
	'truncate -s 0 payees.csv' 'rm -f payees.csv' 'echo m >> sub/deep/more.csv'
	'mv sub/deep sub/gone && mkdir sub/deep && echo evil > sub/deep/more.csv'
	'mv sub elsewhere && mkdir -p sub/deep && echo evil > sub/deep/more.csv')

for mode in run run_plain; do
	for w in "${WRITES[@]}"; do
		test_expect_success "$mode, untrusted content live: '$w' leaves the protected files as they were" '
			rm -rf "$WD/elsewhere" "$WD/sub/gone" && reset_files &&
			turns yes "$(hidden "$w")" "$(hidden "echo ok >> notes.txt")" &&
			$mode && unchanged && test "$(tail -1 "$WD/notes.txt")" = ok
		'
		test_expect_success "$mode, benign twin: with only trusted content live '$w' goes through" '
			rm -rf "$WD/elsewhere" "$WD/sub/gone" && reset_files &&
			turns no "$(hidden "$w")" && $mode && ! unchanged
		'
	done
	test_expect_success "$mode, untrusted content live: the protected files read, every other file written" '
		rm -rf "$WD/elsewhere" "$WD/sub/gone" && reset_files &&
		turns yes "cat payees.csv sub/deep/more.csv" \
			"$(hidden "echo y >> other.csv; echo z >> sub/deep/free.txt; touch sub/deep/new")" &&
		$mode && results | grep -q "alice,1" && results | grep -q "bob,2" &&
		test "$(tail -1 "$WD/other.csv")" = y && test "$(tail -1 "$WD/sub/deep/free.txt")" = z &&
		test -e "$WD/sub/deep/new" && unchanged
	'
done

test_expect_success 'the plain run was the degraded sandbox (no user namespace)' '
	turns yes "echo hi" && run_plain &&
	jq -r "select(.event == \"warning\") | .message // .text // tostring" ev | grep -q "userns: cannot create"
'

test_expect_success 'neither user namespaces nor Landlock: a line is refused while a protected file is there' '
	reset_files &&
	turns yes "$(hidden "echo mallory >> payees.csv")" &&
	setsid -w "$NF" --no-userns --no-landlock -- "$LEV" run --foreground "$BP" --workdir "$WD" \
		--json --yolo >ev 2>err;
	unchanged && results | grep -q "neither a mount namespace nor Landlock"
'

test_expect_success 'benign twin: neither, but only trusted content live: the line runs' '
	reset_files &&
	turns no "$(hidden "echo mallory >> payees.csv")" &&
	setsid -w "$NF" --no-userns --no-landlock -- "$LEV" run --foreground "$BP" --workdir "$WD" \
		--json --yolo >ev 2>err &&
	! unchanged
'

test_done
