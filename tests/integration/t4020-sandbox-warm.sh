#!/bin/bash
# The namespace sandbox's warm helper, proven from inside: several commands
# of one sandbox run in cells of one helper (tests/helpers/sbx-ns-calls), and
# still cannot see or signal each other, leave nothing running for the next,
# inherit no descriptor of the helper, and a killed helper is replaced by one
# that fences as well.  Every refusal has a benign twin.  (The t4000/t4100
# probes run through the same warm path: `lev sandbox exec --warm` uses it.)
. "$SRC_DIR/tests/lib.sh"

PROBE=$(lev_helper_path lev-probe)
CALLS="$BUILD_DIR/tests/helpers/sbx-ns-calls"
MARK="t4020-$$"

SHOME=$(mktemp -d /var/tmp/lev-t4020-home.XXXXXX)
chmod 755 "$SHOME"
WDT=
cleanup_t4020() {
	pkill -f "^$PROBE [a-z]* [0-9]* $MARK" 2>/dev/null
	rm -rf "$SHOME" ${WDT:+"$WDT"}
	_lev_cleanup
}
trap cleanup_t4020 EXIT
export HOME="$SHOME"
mkdir -p "$HOME/.leviath" "$HOME/.ssh" && chmod 700 "$HOME/.leviath"
echo "secret-$MARK" >"$HOME/.ssh/id_t4020"

WD="$TRASH/wd"
mkdir -p "$WD"
echo fine >"$WD/ok.txt"

if ! lev sandbox probe --json >"$TRASH/probe.json" 2>&1 ||
   ! grep -q '"userns": true' "$TRASH/probe.json" ||
   ! grep -q '"mount_api": true' "$TRASH/probe.json"; then
	test_skip 'warm namespace sandbox tests' "no user namespaces here: $(cat "$TRASH/probe.json")"
	test_done
	exit $?
fi

# calls WORKDIR LINE...: the lines in one sandbox (generous timeout: a loaded
# machine must not turn a slow call into a failure)
calls() {
	local wd=$1
	shift
	(cd "$wd" && "$CALLS" "$wd" 300 "$@")
}
# the helper of this sbx-ns-calls (a host: line's $PPID), by name
HELPER_PID='for p in $(pgrep -P "$PPID" -x lev-ns-helper); do echo "helper $p"; done; true'
# kill it, and wait until it is dead (a zombie: lev reaps it when it
# notices), so the next call meets a dead helper, not a dying one
KILL_HELPER='for p in $(pgrep -P "$PPID" -x lev-ns-helper); do
	kill -9 "$p" && echo killed
	while [ "$(sed "s/.*) //" /proc/$p/stat | cut -c1)" != Z ]; do sleep 0.1; done
done; true'

test_control WARM 'commands of one sandbox run in cells of its warm helper' '
	calls "$WD" "echo one" "echo two" "host:$HELPER_PID" >out &&
	test "$(grep -c "^rc=0 warm=1$" out)" = 2 &&
	grep -q "^one$" out && grep -q "^two$" out &&
	grep -q "^helper [0-9]" out && ! grep -q "^cold:" out
'

test_expect_success 'the plan names the warm helper, and lev sandbox exec --warm uses it' '
	lev sandbox exec --warm --network off --workdir "$WD" --dry-run -- true >plan &&
	grep -q "warm helper" plan && ! grep -q "cold start" plan &&
	lev sandbox exec --warm --network off --workdir "$WD" -- "$PROBE" list-pids >out 2>err &&
	test "$(cat out)" = 2 && ! grep -q "starts cold" err
'

# its twin: one command alone starts cold (no helper to start for it), in
# the same fences, and says so in its plan, not as a warning
test_expect_success 'lev sandbox exec without --warm starts its one command cold' '
	lev sandbox exec --network off --workdir "$WD" --dry-run -- true >plan &&
	grep -q "cold start per command" plan && ! grep -q "warm helper" plan &&
	lev sandbox exec --network off --workdir "$WD" -- "$PROBE" list-pids >out 2>err &&
	test "$(cat out)" = 2 && test ! -s err
'

# B sees 4 processes (its cell, sh, its own sleep, the probe: the benign
# twin), never A's; its kill -9 -1 reaches none of A's, which waits for B's
# file and ends normally; A sees its own 3
test_expect_success WARM 'a command sees and signals only its own processes' '
	rm -f "$WD/B.done" &&
	calls "$WD" \
		"bg:\"$PROBE\" list-pids; while [ ! -e B.done ]; do \"$PROBE\" sleep 1 x; done; echo A-survived" \
		"sleep 300 & \"$PROBE\" list-pids; kill -9 -1; echo killed-all; touch B.done" \
		wait >out &&
	cat out &&
	test "$(sed -n 1p out)" = 4 && test "$(sed -n 2p out)" = killed-all &&
	test "$(sed -n 4p out)" = 3 &&
	grep -q "^A-survived$" out &&
	test "$(sed -n "/^A-survived/{n;p}" out)" = "rc=0 warm=1" &&
	test "$(grep -c "^rc=0 warm=1$" out)" = 2
'

test_expect_success WARM 'what a command leaves running is gone before the next starts' '
	calls "$WD" \
		"\"$PROBE\" background 300 $MARK; setsid sh -c \"exec \\\"$PROBE\\\" sleep 300 $MARK\" & echo started" \
		"host:pgrep -f \"^$PROBE [a-z]* 300 $MARK\" || echo none-left" \
		"(echo from-bg) & wait" >out &&
	cat out &&
	grep -q "^started$" out && grep -q "^none-left$" out && grep -q "^from-bg$" out &&
	test "$(grep -c "^rc=0 warm=1$" out)" = 2
'

test_expect_success WARM 'a command inherits no descriptor of the helper (benign twin: its own)' '
	calls "$WD" "\"$PROBE\" fds" "exec 7</dev/null; \"$PROBE\" fds" >out &&
	cat out &&
	test "$(sed -n 1p out)" = "0:/dev/null 1:pipe 2:pipe" &&
	test "$(sed -n 3p out)" = "0:/dev/null 1:pipe 2:pipe 7:/dev/null"
'

test_expect_success WARM '/tmp is fresh for each command; the workdir is shared' '
	calls "$WD" "echo x >/tmp/left-$MARK && echo y >kept-$MARK && echo wrote" \
		"\"$PROBE\" read /tmp/left-$MARK; \"$PROBE\" cat kept-$MARK" >out &&
	cat out &&
	grep -q "^wrote$" out && grep -q "^ENOENT" out && grep -q "^y$" out
'

test_expect_success WARM 'a killed helper is replaced, and the new one fences as well' '
	calls "$WD" "echo before" "host:$HELPER_PID" \
		"host:$KILL_HELPER" \
		"echo after; \"$PROBE\" read \"$HOME/.ssh/id_t4020\"; \"$PROBE\" write /etc/lev-$MARK; \"$PROBE\" list-pids; \"$PROBE\" read ok.txt" \
		"host:$HELPER_PID" >out &&
	cat out &&
	grep -q "^killed$" out && grep -q "^after$" out &&
	test "$(grep -c "^helper [0-9]" out)" = 2 &&
	test "$(grep "^helper" out | sort -u | wc -l)" = 2 &&
	test "$(sed -n "/^after$/{n;p}" out)" = EACCES &&
	test "$(sed -n "/^after$/{n;n;p}" out)" = EROFS &&
	test "$(sed -n "/^after$/{n;n;n;p}" out)" = 3 &&
	test "$(sed -n "/^after$/{n;n;n;n;p}" out)" = ok &&
	test "$(grep -c "^rc=0 warm=1$" out)" = 2 &&
	! grep -rq "secret-$MARK" out
'

test_expect_success WARM 'past the timeout the whole chain is gone, and the next command runs' '
	(cd "$WD" && "$CALLS" "$WD" 2 \
		"\"$PROBE\" background 300 $MARK; exec \"$PROBE\" spin 0 $MARK" \
		"host:pgrep -f \"^$PROBE [a-z]* [0-9]* $MARK\" || echo none-left" \
		"echo next") >out &&
	cat out &&
	grep -q "^rc=137 warm=1$" out && grep -q "^timed-out$" out &&
	grep -q "^none-left$" out && grep -q "^next$" out
'

test_expect_success WARM 'a workdir under /tmp is there in every cell, /tmp itself fresh' '
	WDT=$(mktemp -d /tmp/lev-t4020-wd.XXXXXX) &&
	calls "$WDT" "echo a >in-wd && echo b >/tmp/x-$MARK && echo wrote" \
		"cat in-wd; cat /tmp/x-$MARK || echo no-tmp-file" >out &&
	cat out &&
	grep -q "^wrote$" out && grep -q "^a$" out && grep -q "^no-tmp-file$" out &&
	test "$(cat "$WDT/in-wd")" = a
'

test_expect_success 'cold start stays available and says so' '
	(cd "$WD" && "$CALLS" --cold "$WD" 300 "echo cold-ok") >out &&
	grep -q "^cold-ok$" out && grep -q "^rc=0 warm=0$" out &&
	grep -q "^cold: cold start asked for$" out
'

test_done
