# lib.sh - the shell integration test library (git t/test-lib.sh vocabulary,
# bubblewrap's assertions).  Every test file sources it, then calls
# test_expect_success / test_skip ... and finally test_done.  Output is TAP.
#
# Each file gets its own scratch directory with its own HOME, so ~/.leviath
# is private to the file.  $LEV is the lev binary under test; $BUILD_DIR the
# build tree (for helpers such as lev-probe); $SRC_DIR the source tree.

set -u

: "${LEV:?LEV must name the lev binary}"
: "${BUILD_DIR:?BUILD_DIR must name the build directory}"
: "${SRC_DIR:?SRC_DIR must name the source directory}"

# No test may reach the terminal of the person running the suite (lev run
# asks on /dev/tty): a test file runs in a session of its own, with no
# controlling terminal, wherever it was started from.
if [ -z "${_LEV_TEST_SETSID:-}" ] && (: </dev/tty) 2>/dev/null; then
	export _LEV_TEST_SETSID=1
	exec setsid -w bash "$0" "$@"
fi

TEST_NAME=$(basename "$0" .sh)
TRASH=$(mktemp -d "${TMPDIR:-/tmp}/lev-$TEST_NAME.XXXXXX")
# Tests run scripts they write (fake engines, stub programs): where the
# temporary directory is mounted noexec, use /var/tmp instead.
printf '#!/bin/sh\nexit 0\n' >"$TRASH/.exec-check" && chmod +x "$TRASH/.exec-check"
if ! "$TRASH/.exec-check" 2>/dev/null; then
	rm -rf "$TRASH"
	TRASH=$(mktemp -d "/var/tmp/lev-$TEST_NAME.XXXXXX")
fi
export HOME="$TRASH/home"
mkdir -p "$HOME"
chmod 700 "$HOME"
unset LEVIATH_HOME LEVIATH_CONFIG_PATH
export LC_ALL=C
cd "$TRASH" || exit 1

test_count=0
test_failed=0

# The namespace sandbox gives commands a private /tmp, so a build tree under
# /tmp (a CI clone, say) is invisible inside it.  Then helpers that must run
# inside a sandbox are copied to a directory under /var/tmp, made here in the
# test file's own shell so the EXIT trap removes it.
_LEV_VISIBLE_DIR=
case "$(cd "$BUILD_DIR" && pwd -P)/" in
/tmp/*|/run/*|/dev/shm/*)
	_LEV_VISIBLE_DIR=$(mktemp -d /var/tmp/lev-test-helpers.XXXXXX) || exit 1
	chmod 755 "$_LEV_VISIBLE_DIR"
	;;
esac

# A daemon a test started (plain `lev run` starts one) must not outlive the
# test file: stop the one of either data root it may have used.
_lev_stop_daemons() {
	local lh
	for lh in "${LEVIATH_HOME:-$HOME}" "$HOME"; do
		if [ -S "$lh/.leviath/daemon.sock" ]; then
			LEVIATH_HOME="$lh" "$LEV" daemon stop >/dev/null 2>&1
		fi
	done
}

_lev_cleanup() {
	_lev_stop_daemons
	cd / && rm -rf "$TRASH"
	if [ -n "$_LEV_VISIBLE_DIR" ]; then
		rm -rf "$_LEV_VISIBLE_DIR"
	fi
}

# lev_helper_path NAME: the path of the test helper NAME (tests/helpers/NAME
# in the build tree) where a namespace sandbox can see it.
lev_helper_path() {
	local src="$BUILD_DIR/tests/helpers/$1"

	if [ -n "$_LEV_VISIBLE_DIR" ]; then
		cp "$src" "$_LEV_VISIBLE_DIR/$1" || return 1
		echo "$_LEV_VISIBLE_DIR/$1"
	else
		echo "$src"
	fi
}
trap _lev_cleanup EXIT

lev() {
	"$LEV" "$@"
}

# Prerequisites (git's vocabulary): a positive control that passed sets one,
# and a negative check that names it counts only when it is set.
_lev_prereqs=" "

test_set_prereq() {
	_lev_prereqs="$_lev_prereqs$1 "
}

test_have_prereq() {
	case "$_lev_prereqs" in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

# test_expect_success [PREREQS] DESC BODY: BODY is evaluated in a subshell and
# must exit 0.  PREREQS (comma-separated) name positive controls that must
# have passed first: a check such as "cannot reach the server" proves nothing
# unless the server was shown reachable, so a missing prerequisite is a
# failure, never a pass and never a silent skip.
test_expect_success() {
	local prereqs="" p missing=""
	if [ $# -eq 3 ]; then
		prereqs=$1
		shift
	fi
	test_count=$((test_count + 1))
	for p in ${prereqs//,/ }; do
		test_have_prereq "$p" || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $1 # its positive control did not pass:$missing"
		return
	fi
	if (eval "$2") >"$TRASH/.out" 2>&1; then
		echo "ok $test_count - $1"
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $1"
		sed 's/^/#   /' "$TRASH/.out"
	fi
}

# test_control PREREQ DESC BODY: a positive control; when it passes, PREREQ
# is set for the checks that rely on it.
test_control() {
	local before=$test_failed
	test_expect_success "$2" "$3"
	[ "$test_failed" -eq "$before" ] && test_set_prereq "$1"
}

# lev_start_http_server ADDR: serve $TRASH/www on ADDR, a port the kernel
# picks; sets PORT (empty when the server did not come up in 30 s) and adds
# the server to HOSTPIDS.  The port comes through a file, never a child's
# (buffered) output.
lev_start_http_server() {
	local i pf="$TRASH/http-port.$$.$RANDOM"

	mkdir -p "$TRASH/www"
	echo "lev test page" >"$TRASH/www/index.html"
	python3 "$SRC_DIR/tests/helpers/http-server.py" "$1" "$pf" "$TRASH/www" \
		>"$TRASH/http.log" 2>&1 &
	HOSTPIDS="${HOSTPIDS:-} $!"
	PORT=
	for i in $(seq 300); do
		[ -s "$pf" ] && { PORT=$(cat "$pf"); break; }
		sleep 0.1
	done
}

# lev_start_mock_model SCRIPT: serve SCRIPT (JSON, see tests/helpers/mock-model.c)
# on loopback, recording each request to requests.jsonl; sets PORT and
# MOCK_PID.  lev_stop_mock_model stops it.
lev_start_mock_model() {
	rm -f port requests.jsonl
	"$BUILD_DIR/tests/helpers/mock-model" --script "$1" --port-file port \
		--record requests.jsonl >/dev/null 2>mock.err &
	MOCK_PID=$!
	for _ in $(seq 100); do
		[ -s port ] && break
		sleep 0.05
	done
	PORT=$(cat port)
}

lev_stop_mock_model() {
	kill "$MOCK_PID" 2>/dev/null
	wait "$MOCK_PID" 2>/dev/null
	true
}

# test_skip DESC REASON: a test that cannot run here.  Under
# LEV_TEST_MUST_WORK=1 a skip is a failure.
test_skip() {
	test_count=$((test_count + 1))
	if [ "${LEV_TEST_MUST_WORK:-0}" = 1 ]; then
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $1 # skipped but LEV_TEST_MUST_WORK=1: $2"
	else
		echo "ok $test_count - $1 # SKIP $2"
	fi
}

# test_must_fail [--code N] CMD...: CMD must fail (non-zero, not a crash);
# with --code, with exactly that status.
test_must_fail() {
	local want=""
	if [ "$1" = "--code" ]; then
		want=$2
		shift 2
	fi
	"$@"
	local rc=$?
	if [ $rc -eq 0 ]; then
		echo "test_must_fail: '$*' succeeded" >&2
		return 1
	fi
	if [ $rc -gt 128 ] && [ $rc -ne 130 ] && [ "$want" != "$rc" ]; then
		echo "test_must_fail: '$*' died by signal $((rc - 128))" >&2
		return 1
	fi
	if [ -n "$want" ] && [ "$rc" -ne "$want" ]; then
		echo "test_must_fail: '$*' exited $rc, wanted $want" >&2
		return 1
	fi
	return 0
}

# test_expect_code N CMD...: CMD must exit with status N.
test_expect_code() {
	local want=$1
	shift
	"$@"
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "test_expect_code: '$*' exited $rc, wanted $want" >&2
		return 1
	fi
	return 0
}

assert_file_has_content() {
	if ! grep -q -e "$2" "$1"; then
		echo "assert_file_has_content: '$1' does not match '$2'; it holds:" >&2
		cat "$1" >&2
		return 1
	fi
}

assert_not_file_has_content() {
	if grep -q -e "$2" "$1"; then
		echo "assert_not_file_has_content: '$1' matches '$2'; it holds:" >&2
		cat "$1" >&2
		return 1
	fi
}

# assert_one_line FILE: FILE holds exactly one non-empty line.
assert_one_line() {
	local n
	n=$(grep -c . "$1")
	if [ "$n" -ne 1 ]; then
		echo "assert_one_line: '$1' has $n lines:" >&2
		cat "$1" >&2
		return 1
	fi
}

test_cmp() {
	diff -u "$1" "$2"
}

test_done() {
	echo "1..$test_count"
	[ "$test_failed" -eq 0 ]
}

# lev_mock_config SCRIPT: the mock model serving SCRIPT (lev_start_mock_model)
# and $CONFIG (0600) made of stdin, the test's own keys, then provider
# 'mock' naming it, its key in $MOCK_OPENAI_KEY
lev_mock_config() {
	lev_start_mock_model "$1"
	{
		cat
		cat <<-EOF
		[providers.mock]
		kind = "openai"
		base_url = "http://127.0.0.1:$PORT/v1"
		api_key_env = "MOCK_OPENAI_KEY"
		model = "mock-1"
		timeout_secs = 60
		EOF
	} >"$CONFIG"
	chmod 600 "$CONFIG"
}

# lev_shell_turns FILE UNTRUSTED LINE...: a script model's turns, in FILE:
# with UNTRUSTED "yes" a turn that reads the untrusted page inbox/page.html
# first, then one turn that runs each LINE with shell, then "done"
lev_shell_turns() {
	local file=$1
	shift
	python3 - "$@" >"$file" <<-'EOF_PY'
	import json, sys
	if sys.argv[1] == "yes":
	    print('[[turn]]\n[[turn.call]]\ntool = "read_file"\nargs = { path = "inbox/page.html" }')
	print("[[turn]]")
	for line in sys.argv[2:]:
	    print('[[turn.call]]\ntool = "shell"\nargs = { command = %s }' % json.dumps(line))
	print('[[turn]]\ntext = "done"')
	EOF_PY
}

# lev_turns FILE [ID TOOL ARGS]...: a script model's turns, in FILE: one turn
# a call, call ID of TOOL with ARGS (a TOML inline table), then "done"
lev_turns() {
	local file=$1
	shift
	{
		while [ $# -ge 3 ]; do
			printf '[[turn]]\n[[turn.call]]\nid = "%s"\ntool = "%s"\nargs = %s\n' "$1" "$2" "$3"
			shift 3
		done
		printf '[[turn]]\ntext = "done"\n'
	} >"$file"
}
