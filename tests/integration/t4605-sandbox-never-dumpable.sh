#!/bin/bash
# Issue 26 class 2: no copy of lev's memory is ever dumpable.  A namespace
# sandbox's children are cloned from lev (its warm helper, each cell, a cold
# PID 1, the kernel probe's child): they hold a copy of lev's memory, the API
# key's neighbourhood included.  lev made each dumpable for the moment it
# wrote the child's uid/gid maps, and a process of the same user that opened
# /proc/<child>/mem in that window kept it open.  Proven from outside at
# every system call: tests/helpers/dump-watch runs the whole tree under a
# seccomp filter that stops each call until the watcher has looked at the
# caller's /proc/PID/mem (owned by the caller's own uid only while it is
# dumpable), so a window of any length is seen at the call that closes it.
# The watcher's own control: a forked child made dumpable for one write is
# caught, one that is not is not.  Benign twins: the commands of every path
# (warm, cold, a real run's shell calls) still run and print.
. "$SRC_DIR/tests/lib.sh"

WATCH="$BUILD_DIR/tests/helpers/dump-watch"
CALLS="$BUILD_DIR/tests/helpers/sbx-ns-calls"
KEY_A=sk-test-dumpable-
KEY_B=1618033988749894

# Dumpability shows in the owner of /proc/PID/mem only for a process that is
# not root: the tree runs as nobody (from root) or as the user running this.
AS=
if [ "$(id -u)" = 0 ]; then
	if ! command -v setpriv >/dev/null; then
		test_skip 'no copy of lev is ever dumpable' "root without setpriv: cannot run lev as another user"
		test_done
		exit $?
	fi
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi

ROOTDIR=$(mktemp -d /var/tmp/lev-t4605.XXXXXX)
chmod 755 "$ROOTDIR"
cleanup_t4605() {
	rm -rf "$ROOTDIR"
	_lev_cleanup
}
trap cleanup_t4605 EXIT
mkdir -p "$ROOTDIR/home" "$ROOTDIR/work" "$ROOTDIR/out"
chmod 777 "$ROOTDIR/out"
[ -n "$AS" ] && chown -R 65534:65534 "$ROOTDIR/home" "$ROOTDIR/work"
chmod 700 "$ROOTDIR/home"

if ! $AS env HOME="$ROOTDIR/home" "$LEV" sandbox probe --json >"$TRASH/probe.json" 2>&1 ||
   ! grep -q '"userns": true' "$TRASH/probe.json"; then
	test_skip 'no copy of lev is ever dumpable' "no user namespaces here: $(cat "$TRASH/probe.json")"
	test_done
	exit $?
fi
"$WATCH" "$TRASH/self" "$WATCH" "$WATCH" --fork >/dev/null 2>"$TRASH/self.err"
if [ $? = 125 ]; then
	test_skip 'no copy of lev is ever dumpable' "no seccomp user notification here: $(cat "$TRASH/self.err")"
	test_done
	exit $?
fi

# LeakSanitizer makes every process of a sanitized build dumpable as it exits
# (its tracer must attach to it to look for leaks): the runtime's doing, not
# lev's, so the watched tree of such a build runs without leak detection.
if ldd "$LEV" 2>/dev/null | grep -q libasan; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

# watched OUT EXE CMD...: CMD as the unprivileged user, watched
watched() {
	local out=$1 exe=$2
	shift 2
	"$WATCH" "$out" "$exe" $AS "$@"
}

test_control WATCHER 'the watcher catches a forked copy made dumpable for one write' '
	watched w1 "$WATCH" "$WATCH" --fork window >out &&
	grep -q "^forked$" out &&
	assert_file_has_content w1 "^copy [0-9]" &&
	assert_file_has_content w1 "^dumpable [0-9]* 1$" &&
	assert_file_has_content w1 "^calls [1-9]"
'

test_expect_success WATCHER 'its twin: a forked copy never made dumpable is not reported' '
	watched w2 "$WATCH" "$WATCH" --fork >out &&
	grep -q "^forked$" out &&
	assert_file_has_content w2 "^copy [0-9]" &&
	assert_not_file_has_content w2 "^dumpable"
'

for mode in cold warm; do
	flag=
	[ $mode = warm ] && flag=--warm
	test_expect_success WATCHER "lev sandbox exec, $mode (the probe, the helper or the cold child): no copy dumpable" '
		watched "$TRASH/w3-$mode" "$LEV" env HOME="$ROOTDIR/home" "$LEV" sandbox exec $flag \
			--kind namespace --on-unavailable error --workdir "$ROOTDIR/work" \
			-- sh -c "echo one; echo two" >out &&
		grep -q "^one$" out && grep -q "^two$" out &&
		assert_file_has_content "$TRASH/w3-$mode" "^copy [0-9]" &&
		assert_not_file_has_content "$TRASH/w3-$mode" "^dumpable"
	'
done

for mode in warm cold; do
	flag=
	[ $mode = cold ] && flag=--cold
	test_expect_success WATCHER "several commands of one sandbox, $mode: no copy dumpable" '
		(cd "$ROOTDIR/work" && watched "$TRASH/w-$mode" "$CALLS" "$CALLS" $flag "$ROOTDIR/work" 300 \
			"echo one" "echo two" "echo three") >out &&
		test "$(grep -c "^rc=0 warm=$([ $mode = warm ] && echo 1 || echo 0)$" out)" = 3 &&
		grep -q "^three$" out &&
		assert_file_has_content w-$mode "^copy [0-9]" &&
		assert_not_file_has_content w-$mode "^dumpable"
	'
done

# A real run: the key in lev's environment and memory, a namespace stage
# whose shell calls run in the warm helper's cells.
cat >"$TRASH/conversation.json" <<EOF
{ "responses": [
  { "calls": [ { "id": "c1", "name": "shell", "arguments": { "command": "echo ns-one" } } ] },
  { "calls": [ { "id": "c2", "name": "shell", "arguments": { "command": "echo ns-two" } } ] },
  { "text": "done" }
] }
EOF
mkdir -p "$ROOTDIR/lh/.leviath" "$ROOTDIR/agent"
cat >"$ROOTDIR/agent/agent.leviath" <<EOF
[agent]
name = "watched"

[stages.main]
model = { provider = "mock", model = "mock-1" }
available_tools = ["shell"]
system_prompt = "You are watched."
EOF
lev_start_mock_model "$TRASH/conversation.json"
cat >"$ROOTDIR/lh/.leviath/config.toml" <<EOF
[tool_permissions]
shell = "allow"
[sandbox]
kind = "namespace"
on_unavailable = "error"
[providers.mock]
kind = "openai"
base_url = "http://127.0.0.1:$PORT/v1"
api_key_env = "OPENAI_API_KEY"
model = "mock-1"
timeout_secs = 30
EOF
chmod 700 "$ROOTDIR/lh" "$ROOTDIR/lh/.leviath"
chmod 600 "$ROOTDIR/lh/.leviath/config.toml"
[ -n "$AS" ] && chown -R 65534:65534 "$ROOTDIR/lh" "$ROOTDIR/agent"

test_expect_success WATCHER 'lev run, a namespace stage with the key: no copy dumpable, lev never again' '
	watched w-run "$LEV" env HOME="$ROOTDIR/home" LEVIATH_HOME="$ROOTDIR/lh" \
		OPENAI_API_KEY="$KEY_A$KEY_B" "$LEV" run --foreground "$ROOTDIR/agent" \
		--task watched --workdir "$ROOTDIR/work" --json >ev 2>err &&
	grep -q "ns-one" ev && grep -q "ns-two" ev &&
	assert_file_has_content w-run "^copy [0-9]" &&
	assert_not_file_has_content w-run "^dumpable" &&
	! grep -q "$KEY_A$KEY_B" ev err
'
lev_stop_mock_model

test_done
