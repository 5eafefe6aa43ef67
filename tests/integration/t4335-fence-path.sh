#!/bin/bash
# The confined reads of a pre-approved host line (kind none) open the
# directories on PATH, so that the line can run what its PATH names: the
# PATH of the environment the command is spawned with, never lev's own
# (issue 27, stand-in fix).  Under the daemon a run's commands carry its
# caller's PATH, not the one the daemon was started with: a program in a
# directory only the caller's PATH names runs, and a directory on the
# daemon's PATH alone is not opened to the line.  (The daemon's worker is
# exec'd with its caller's environment, so lev's own PATH and the
# command's agree today and this test also passes with the old getenv();
# it holds the behaviour, not the stand-in.)
. "$SRC_DIR/tests/lib.sh"

if ! "$LEV" sandbox probe --json 2>/dev/null | grep -q '"landlock_abi": [1-9]'; then
	test_skip 'confined reads by the command'"'"'s PATH' 'this kernel has no Landlock'
	test_done
	exit $?
fi

CFG_DIR="$HOME/.leviath"
BP="$TRASH/bp"
WD="$TRASH/wd"
mkdir -p "$CFG_DIR" "$BP" "$WD" "$TRASH/callerbin" "$TRASH/daemonbin"
chmod 700 "$CFG_DIR"
printf '[safe_commands]\nshell = ["mytool"]\n' >"$CFG_DIR/config.toml"
chmod 600 "$CFG_DIR/config.toml"
cat >"$BP/agent.leviath" <<EOF_BP
[agent]
name = "pathfence"
[sandbox]
kind = "none"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF_BP
printf '#!/bin/sh\necho MYTOOL-RAN\n' >"$TRASH/callerbin/mytool"
chmod 755 "$TRASH/callerbin/mytool"
echo DAEMON-DIR-SECRET >"$TRASH/daemonbin/notes"

turns() {
	python3 - "$@" >"$BP/turns.toml" <<-'EOF_PY'
	import json, sys
	print("[[turn]]")
	for line in sys.argv[1:]:
	    print('[[turn.call]]\ntool = "shell"\nargs = { command = %s }' % json.dumps(line))
	print('[[turn]]\ntext = "done"')
	EOF_PY
}
results() {
	jq -r 'select(.event == "tool_result") | .text' ev
}

test_expect_success 'the daemon starts with a PATH of its own' '
	PATH="$TRASH/daemonbin:/usr/local/bin:/usr/bin:/bin" setsid -w "$LEV" daemon start >out 2>&1
'

test_expect_success 'a pre-approved program on the caller'"'"'s PATH runs under the daemon' '
	turns "mytool" &&
	PATH="$TRASH/callerbin:/usr/local/bin:/usr/bin:/bin" setsid -w "$LEV" run --follow "$BP" \
		--workdir "$WD" --json >ev 2>err &&
	jq -r "select(.event == \"tool_call\") | .gate" ev | grep -q permission &&
	results | grep -q "^MYTOOL-RAN$"
'

test_expect_success 'a directory on the daemon'"'"'s PATH alone is not opened to a pre-approved line' '
	echo "$TRASH/daemonbin/notes" >"$WD/list.rsp" &&
	turns "strings @list.rsp" &&
	PATH="$TRASH/callerbin:/usr/local/bin:/usr/bin:/bin" setsid -w "$LEV" run --follow "$BP" \
		--workdir "$WD" --json >ev 2>err &&
	jq -r "select(.event == \"tool_call\") | .verdict" ev | grep -q "^allow$" &&
	! results | grep -q DAEMON-DIR-SECRET
'

test_expect_success 'twin: in the foreground (one PATH) the same program runs' '
	turns "mytool" &&
	PATH="$TRASH/callerbin:/usr/local/bin:/usr/bin:/bin" setsid -w "$LEV" run --foreground "$BP" \
		--workdir "$WD" --json >ev 2>err &&
	results | grep -q "^MYTOOL-RAN$"
'

test_done
