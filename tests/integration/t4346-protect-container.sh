#!/bin/bash
# [integrity] protected files under the container sandbox (issue 27, class
# 1): while untrusted content is live a line runs in a container that has
# each protected file bound read-only over the workdir (pooled: it starts
# once), so `>>`, `sed -i`, `cp`, `mv`, `ln -sf`, `truncate` and `rm` over
# one leave it as it was, while the workdir's other files stay writable.  A
# protected file in a subdirectory (a command could rename the directory
# away) is refused.  Each writer is a script in the workdir (`sh w.sh`),
# which no key parser reads.  Twins: with only trusted content live the same
# line changes the file; other files are written either way.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/container-lib.sh"

oci_setup t4346 'protected files under the container sandbox' 120

BP="$TRASH/bp"
mkdir -p "$BP" "$WD/inbox"
cat >"$HOME/.leviath/config.toml" <<EOF_C
[sandbox]
kind = "container"
engine = "$ENGINE"
image = "$IMAGE"
EOF_C
policy() {
	printf '[integrity]\nuntrusted = ["inbox/*"]\nprotected = [%s]\n' "$1" \
		>"$HOME/.leviath/policy.toml"
	chmod 600 "$HOME/.leviath/policy.toml"
}
policy '"payees.csv"'
chmod 600 "$HOME/.leviath/config.toml"
cat >"$BP/agent.leviath" <<EOF_BP
[agent]
name = "protect-ct"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell", "read_file"]
EOF_BP
echo "page text" >"$WD/inbox/page.html"

# turns UNTRUSTED SCRIPT: optionally read the untrusted page, then run `sh SCRIPT`
turns() {
	python3 - "$1" "$2" >"$BP/turns.toml" <<-'EOF_PY'
	import sys
	if sys.argv[1] == "yes":
	    print('[[turn]]\n[[turn.call]]\ntool = "read_file"\nargs = { path = "inbox/page.html" }')
	print('[[turn]]\n[[turn.call]]\ntool = "shell"\nargs = { command = "sh %s" }' % sys.argv[2])
	print('[[turn]]\ntext = "done"')
	EOF_PY
}
run() {
	setsid -w "$LEV" run --foreground "$BP" --workdir "$WD" --json --yolo >ev 2>err
}
results() {
	jq -r 'select(.event == "tool_result" and .tool == "shell") | .text' ev
}
WRITES=('echo mallory,9 >> payees.csv' 'sed -i s/alice/mallory/ payees.csv'
	'cp other.csv payees.csv' 'mv other.csv payees.csv' 'ln -sf other.csv payees.csv'
	'truncate -s 0 payees.csv' 'rm -f payees.csv')
i=0
for w in "${WRITES[@]}"; do
	printf '%s\necho ok%d >> notes.txt\n' "$w" "$i" >"$WD/w$i.sh"
	i=$((i + 1))
done
reset_files() {
	rm -f "$WD/payees.csv" "$WD/other.csv" &&
	printf 'alice,1\n' >"$WD/payees.csv" && printf 'free\n' >"$WD/notes.txt" &&
	printf 'x\n' >"$WD/other.csv" && chmod -R a+rwX "$WD"
}

for k in "${!WRITES[@]}"; do
	test_expect_success "untrusted content live: '${WRITES[$k]}' leaves the protected file, notes.txt is written" '
		reset_files && turns yes "w$k.sh" && run &&
		test "$(cat "$WD/payees.csv")" = "alice,1" &&
		test "$(tail -1 "$WD/notes.txt")" = "ok$k"
	'
done

test_expect_success 'benign twin: only trusted content live, every writer changes the file' '
	fails=0 &&
	for k in "${!WRITES[@]}"; do
		reset_files && turns no "w$k.sh" && run &&
		if test "$(cat "$WD/payees.csv" 2>/dev/null)" = "alice,1"; then
			echo "writer $k did not change the file" && fails=$((fails + 1))
		fi
	done &&
	test "$fails" = 0
'

test_expect_success 'a protected file in a subdirectory: the line is refused while untrusted content is live' '
	policy "\"payees.csv\", \"sub/*.csv\"" && mkdir -p "$WD/sub" &&
	printf "bob,2\n" >"$WD/sub/more.csv" && printf "echo m >> sub/more.csv\n" >"$WD/ws.sh" &&
	chmod -R a+rwX "$WD" && turns yes ws.sh && run &&
	test "$(cat "$WD/sub/more.csv")" = "bob,2" &&
	results | grep -q "cannot hold in place"
'

test_expect_success 'benign twin: the same, only trusted content live, writes it' '
	turns no ws.sh && run && test "$(tail -1 "$WD/sub/more.csv")" = m
'

test_done
