#!/bin/bash
# [rate_limits.PROVIDER] requests_per_minute / tokens_per_minute: a
# machine-wide window per provider (run/ratelimit.h), shared by the daemon's
# worker processes and foreground runs.  A request over the limit waits
# (queued, never failed) until the window has room.  The limiter's clock is
# the file LEV_TEST_RATELIMIT_CLOCK names, so the test moves time on itself:
# it asserts counts and order (how many requests the mock model saw before
# and after the minute moved), never a duration.
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

. "$SRC_DIR/tests/daemon-lib.sh"

export LEV_TEST_RATELIMIT_CLOCK="$TRASH/clock"
echo 1000 >"$LEV_TEST_RATELIMIT_CLOCK"

cat >script.json <<'EOF'
{"responses": [
 {"match": "rl-", "repeat": true, "text": "ok"}
]}
EOF
mock_daemon script.json
keep_config_base
mkdir -p work
mock_agent ag
clock() {
	echo "$1" >clock.new && mv clock.new "$LEV_TEST_RATELIMIT_CLOCK"
}
requests_for() {
	grep -c "$1" requests.jsonl || true
}
has_requests() {
	test "$(requests_for "$1")" = "$2" ||
	{ echo "$1: $(requests_for "$1") requests, not $2" >&2; false; }
}
# at_least MARKER N: the mock model saw N requests of MARKER or more
at_least() {
	test "$(requests_for "$1")" -ge "$2"
}
# foreground3 T: three `lev run --foreground` at once, tasks rl-T-a..c,
# output in Ta..Tc and exit status in Ta.rc..Tc.rc
foreground3() {
	for x in a b c; do
		(lev run --foreground ./ag -t "rl-$1-$x" --workdir work >"$1$x" 2>&1; echo $? >"$1$x.rc") &
	done
}
spawn() {
	lev run ./ag --json --workdir work -t "$1" >out 2>err &&
	python3 -c 'import json; print(json.load(open("out"))["run_id"])'
}
done_run() {
	status_is "$1" complete
}

test_expect_success 'rate_limits is read, not warned as a key lev does not run' '
	config <<-EOF &&
	[rate_limits.mockoa]
	requests_per_minute = 2
	tokens_per_minute = 100000
	EOF
	"$LEV" validate ./ag >v 2>verr &&
	! grep -q "rate_limits" verr
'

test_expect_success 'daemon: 2 requests per minute over 3 runs: 2 go, the third waits for the next minute' '
	config <<-EOF &&
	[rate_limits.mockoa]
	requests_per_minute = 2
	EOF
	a=$(spawn rl-d-a) && b=$(spawn rl-d-b) && c=$(spawn rl-d-c) &&
	wait_for at_least rl-d- 2 &&

	sleep 1 &&
	has_requests rl-d- 2 &&
	clock 61000 &&
	wait_for done_run $a && wait_for done_run $b && wait_for done_run $c &&
	has_requests rl-d- 3
'

test_expect_success 'foreground: three runs of their own processes share the minute too' '
	clock 200000 &&
	config <<-EOF &&
	[rate_limits.mockoa]
	requests_per_minute = 2
	EOF
	foreground3 f &&
	{ wait_for at_least rl-f- 2 || { cat fa fb fc; false; }; } &&
	sleep 1 &&
	{ has_requests rl-f- 2 || { cat "$ROOT/ratelimit/mockoa" clock fa fb fc; false; }; } &&
	clock 260001 &&
	wait &&
	test "$(cat fa.rc fb.rc fc.rc)" = "0
0
0" &&
	has_requests rl-f- 3
'

test_expect_success 'tokens_per_minute: charged from the reported usage, the next request waits' '
	clock 400000 &&
	config <<-EOF &&
	[rate_limits.mockoa]
	tokens_per_minute = 1
	EOF
	(lev run --foreground ./ag -t rl-t-a --workdir work >ta 2>&1; echo $? >ta.rc) &
	wait_for test -s ta.rc &&
	{ (lev run --foreground ./ag -t rl-t-b --workdir work >tb 2>&1; echo $? >tb.rc) & } &&
	sleep 1 &&
	has_requests rl-t- 1 &&
	clock 460001 &&
	wait &&
	test "$(cat ta.rc tb.rc)" = "0
0" &&
	has_requests rl-t- 2
'

test_expect_success 'benign twin: without [rate_limits] every run goes at once, the clock never moving' '
	clock 900000 &&
	config </dev/null &&
	foreground3 n &&
	wait &&
	{ test "$(cat na.rc nb.rc nc.rc)" = "0
0
0" || { cat na nb nc; false; }; } &&
	has_requests rl-n- 3
'

test_expect_success 'benign twin: a limit on another provider does not throttle this one' '
	config <<-EOF &&
	[rate_limits.anthropic]
	requests_per_minute = 1
	EOF
	lev run --foreground ./ag -t rl-o-a --workdir work >oa 2>&1 &&
	lev run --foreground ./ag -t rl-o-b --workdir work >ob 2>&1 &&
	has_requests rl-o- 2
'

test_done
