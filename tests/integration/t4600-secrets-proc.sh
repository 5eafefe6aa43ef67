#!/bin/bash
# Issue 13 class 5: the provider API key is out of reach of the commands lev
# runs.  Issue 26: and out of every copy of lev's memory a sandbox makes:
# while the probe runs, the test reads, from outside, the whole memory of
# every process below lev running lev's program (a namespace sandbox's warm
# helper and cells) and finds no key and no dumpable copy, while the same
# scan finds the key in lev itself (its control).  A model (the mock server) has a shell command run a probe that
# reads every /proc entry it can see -- lev's environ, mem, maps, auxv,
# pagemap, cmdline, status -- and looks for the key, under every sandbox
# kind available, as root and as an unprivileged user.  The key must appear
# nowhere; lev's private entries must be refused.  Controls: the same probe
# finds a marker in the environment of its own child, an ordinary process
# inside the command's fence (so the probe can read what the kernel lets
# it), and sees PATH and HOME in its own environment.  Under kind none the
# test's own marked processes, of the same user but outside the host fence,
# stay unreadable (Landlock's ptrace scoping).
. "$SRC_DIR/tests/lib.sh"

# Under ASan a freed chunk waits in the allocator's quarantine unwiped, so the
# memory scan below a namespace sandbox shows copies of the key that a plain
# build's allocator has overwritten: a copy freed without being wiped, open in
# docs/providers.md.  There the scan's no-copy assertion is the plain build's.
SANITIZED=
if ldd "$LEV" 2>/dev/null | grep -q libasan; then
	SANITIZED=1
	echo "# ASan build: the no-copy memory scan is asserted by the plain build only (freed copies sit in ASan's quarantine unwiped)"
fi

if ! command -v setpriv >/dev/null; then
	test_skip 'the key is out of the commands'"'"' reach' "no setpriv (util-linux) to start the control"
	test_done
	exit $?
fi

MOCK="$BUILD_DIR/tests/helpers/mock-model"
ENGINE=${LEV_TEST_ENGINE:-podman}
# split in two everywhere the test writes them, so no argv holds them whole
KEY_A=sk-test-canary-
KEY_B=3141592653589793
CTL_A=ctl-marker-
CTL_B=2718281828459045

# The scratch tree lives where an unprivileged user and every sandbox can
# reach it (the test's TRASH may be under /tmp, private to a namespace).
ROOTDIR=$(mktemp -d /var/tmp/lev-t4600.XXXXXX)
chmod 755 "$ROOTDIR"
PIDS=
IMAGE=
cleanup_t4600() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	if [ -n "$IMAGE" ]; then
		"$ENGINE" rmi -f "$IMAGE" >/dev/null 2>&1
	fi
	rm -rf "$ROOTDIR"
	_lev_cleanup
}
trap cleanup_t4600 EXIT

# The probe: POSIX sh and the tools busybox has, so it runs in every kind.
cat >"$ROOTDIR/probe.sh" <<'EOF'
#!/bin/sh
# probe.sh KEY_A KEY_B CTL_A CTL_B: writes what it found to probe.out
key="$1$2"
ctl="$3$4"
out=probe.out
tmp=probe.tmp
: >"$out"
if tr '\0' '\n' </proc/self/environ >"$tmp"; then
	grep -q '^PATH=' "$tmp" && echo "self PATH" >>"$out"
	grep -q '^HOME=' "$tmp" && echo "self HOME" >>"$out"
fi
# the targets: every ancestor (lev, or the sandbox's copy of it) and the
# control processes the test started
pids=
pid=$$
while [ -n "$pid" ] && [ "$pid" != 0 ]; do
	pids="$pids $pid"
	pid=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$pid/status 2>/dev/null)
done
pids="$pids $(cat control.pids 2>/dev/null)"
# the control inside the command's own fence: a child of the probe with the
# marker in its environment, which holds it once it has executed sh (a
# busybox applet run without execve, as env may, would not show it).  Only
# where /proc shows the probe's own PID namespace (a container's command
# runs in a namespace below the one its /proc shows).
own=
if tr '\0' ' ' <"/proc/$$/cmdline" 2>/dev/null | grep -q ' probe\.sh '; then
	LEVTEST_CONTROL="$ctl" sh -c 'exec sleep 600' </dev/null >/dev/null 2>&1 &
	own=$!
	i=0
	until tr '\0' ' ' <"/proc/$own/cmdline" 2>/dev/null | grep -q -e '^sh -c ' -e '^sleep ' ||
		[ ! -d "/proc/$own" ] || [ $i -ge 1200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	echo "own $own" >>"$out"
	pids="$pids $own"
fi
for pid in $pids; do
	d=/proc/$pid
	[ -d "$d" ] || continue
	lev=
	if tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -q '/lev run '; then
		lev=1
		echo "lev $pid" >>"$out"
	fi
	for f in cmdline status environ maps auxv; do
		if cat "$d/$f" >"$tmp" 2>/dev/null; then
			[ -n "$lev" ] && echo "lev-$f readable" >>"$out"
		else
			: >"$tmp"
			[ -n "$lev" ] && echo "lev-$f refused" >>"$out"
		fi
		grep -q "$key" "$tmp" && echo "LEAK $pid/$f" >>"$out"
		grep -q "$ctl" "$tmp" && echo "control $pid/$f" >>"$out"
	done
	for f in mem pagemap; do
		if (exec 3<"$d/$f") 2>/dev/null; then
			[ -n "$lev" ] && echo "lev-$f readable" >>"$out"
		else
			[ -n "$lev" ] && echo "lev-$f refused" >>"$out"
		fi
	done
done
rm -f "$tmp"
[ -n "$own" ] && kill "$own" 2>/dev/null
echo done >>"$out"
# hold the call open until the test has looked at lev from outside
echo ready >probe.ready
i=0
while [ ! -e probe.go ] && [ $i -lt 1200 ]; do
	sleep 0.1
	i=$((i + 1))
done
EOF
chmod 644 "$ROOTDIR/probe.sh"

cat >"$ROOTDIR/conversation.json" <<EOF
{ "responses": [
  { "calls": [ { "id": "c1", "name": "shell",
      "arguments": { "command": "sh probe.sh $KEY_A $KEY_B $CTL_A $CTL_B" } } ] },
  { "text": "probed" }
] }
EOF

# setup_home DIR KIND: a data root, config and agent for a run under KIND
setup_home() {
	local d=$1 kind=$2
	mkdir -p "$d/lh/.leviath" "$d/home" "$d/work" "$d/agent"
	chmod 700 "$d/lh" "$d/lh/.leviath"
	cp "$ROOTDIR/probe.sh" "$d/work/probe.sh"
	echo "$CONTROLS" >"$d/work/control.pids"
	cat >"$d/agent/agent.leviath" <<-EOF
	[agent]
	name = "prober"

	[stages.main]
	model = { provider = "mock", model = "mock-1" }
	available_tools = ["shell"]
	system_prompt = "You are tested."
	EOF
	{
		echo '[tool_permissions]'
		echo 'shell = "allow"'
		echo '[sandbox]'
		echo "kind = \"$kind\""
		echo 'on_unavailable = "error"'
		if [ "$kind" = container ]; then
			echo "engine = \"$ENGINE\""
			echo "image = \"$IMAGE\""
		fi
		echo '[providers.mock]'
		echo 'kind = "openai"'
		echo 'base_url = "http://127.0.0.1:PORT/v1"'
		echo 'api_key_env = "OPENAI_API_KEY"'
		echo 'model = "mock-1"'
		echo 'timeout_secs = 10'
	} >"$d/lh/.leviath/config.toml"
	chmod 600 "$d/lh/.leviath/config.toml"
}

# run_probe DIR [WRAPPER...]: start the mock, run the agent (as WRAPPER says),
# stop the mock.  The key is in lev's environment, nowhere else.
run_probe() {
	local d=$1 rc mpid port lpid
	shift
	rm -f "$d/port"
	"$MOCK" --script "$ROOTDIR/conversation.json" --port-file "$d/port" >/dev/null 2>&1 &
	mpid=$!
	for _ in $(seq 200); do
		[ -s "$d/port" ] && break
		sleep 0.05
	done
	port=$(cat "$d/port")
	sed -i "s/127.0.0.1:[A-Z0-9]*/127.0.0.1:$port/" "$d/lh/.leviath/config.toml"
	# setsid may fork and wait: the key goes in after it, so lev is the
	# only process that holds it
	"$@" setsid -w env HOME="$d/home" LEVIATH_HOME="$d/lh" OPENAI_API_KEY="$KEY_A$KEY_B" \
		sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$d/levpid" \
		"$LEV" run --foreground "$d/agent" --task probe --workdir "$d/work" --json \
		>"$d/ev" 2>"$d/err" &
	lpid=$!
	# while the probe runs: lev's environment block, read as root from
	# outside, no longer holds the key (it was overwritten, not just unset)
	for _ in $(seq 1200); do
		[ -e "$d/work/probe.ready" ] && break
		sleep 0.1
	done
	tr '\0' '\n' <"/proc/$(cat "$d/levpid")/environ" >"$d/levenv"
	# and the whole memory of every copy of lev below it (the sandbox's
	# helper, its cells), read from outside
	python3 "$SRC_DIR/tests/helpers/mem-scan" "$KEY_A" "$KEY_B" "$(cat "$d/levpid")" \
		>"$d/memscan" 2>&1
	touch "$d/work/probe.go"
	wait $lpid
	rc=$?
	kill "$mpid" 2>/dev/null
	wait "$mpid" 2>/dev/null
	return $rc
}

# check_probe DIR KIND: the verdicts from outside
check_probe() {
	local d=$1 kind=$2 f
	assert_file_has_content "$d/work/probe.out" '^done$' &&
	# the benign twin: its own environment is there, filtered but usable
	assert_file_has_content "$d/work/probe.out" '^self PATH$' &&
	assert_file_has_content "$d/work/probe.out" '^self HOME$' &&
	# lev's own block: the variable is there, its value is not
	assert_file_has_content "$d/levenv" "^HOME=$d/home\$" &&
	assert_file_has_content "$d/levenv" "^OPENAI_API_KEY=" &&
	assert_not_file_has_content "$d/levenv" "$KEY_A$KEY_B" &&
	# the attack: the key is nowhere the command can read
	assert_not_file_has_content "$d/work/probe.out" '^LEAK' &&
	# no copy of lev below it holds the key or is dumpable; the control:
	# the same scan finds it in lev, and under namespace read a copy
	assert_file_has_content "$d/memscan" '^lev [0-9]* holds [1-9]' &&
	{ [ -n "$SANITIZED" ] || assert_not_file_has_content "$d/memscan" '^LEAK'; } &&
	assert_not_file_has_content "$d/memscan" '^dumpable' &&
	if [ "$kind" = namespace ]; then
		assert_file_has_content "$d/memscan" '^copy [0-9]* read [1-9]'
	fi &&
	! grep -rq "$KEY_A$KEY_B" "$d/work" "$d/ev" "$d/lh/.leviath/runs" &&
	# wherever a lev (or the sandbox's copy of it) is visible, only its
	# public entries are readable
	if grep -q '^lev ' "$d/work/probe.out"; then
		assert_file_has_content "$d/work/probe.out" '^lev-cmdline readable$' &&
		for f in environ maps auxv mem pagemap; do
			assert_file_has_content "$d/work/probe.out" "^lev-$f refused$" || return 1
		done
	fi &&
	# the control: the probe reads the environment of its own child, a
	# process inside the same fence (so a refusal above is lev's, not a
	# probe that cannot read; a container's /proc is not its command's)
	if [ "$kind" != container ]; then
		own=$(sed -n 's/^own //p' "$d/work/probe.out") &&
		assert_file_has_content "$d/work/probe.out" "^control $own/environ\$"
	fi &&
	if [ "$kind" = none ]; then
		# lev itself is visible to a kind-none command ...
		grep -q "^lev $(cat "$d/levpid")\$" "$d/work/probe.out" &&
		# ... and so are the test's controls, processes of the same user
		# outside the host fence, whose environment Landlock keeps from a
		# fenced command (it reads only its own domain's private entries)
		for c in $CONTROLS; do
			assert_not_file_has_content "$d/work/probe.out" "^control $c/" || return 1
		done
	fi
}

# start_control [WRAPPER...]: the control, an ordinary process of the same
# user with a marker in its environment and no capabilities (a capability
# it held that the command lacks would hide it from the command too)
start_control() {
	"$@" setpriv --bounding-set=-all --inh-caps=-all env LEVTEST_CONTROL="$CTL_A$CTL_B" \
		sleep 600 </dev/null >/dev/null 2>&1 &
	PIDS="$PIDS $!"
	CONTROLS="$CONTROLS $!"
}
CONTROLS=

KINDS="none namespace"

IMAGE_OK=
if command -v "$ENGINE" >/dev/null && [ "$(id -u)" = 0 ]; then
	PROBE=$(lev_helper_path lev-probe)
	IMAGE="localhost/lev-test-t4600:$$"
	if out=$("$SRC_DIR/tests/helpers/oci-test-image.sh" "$ENGINE" "$IMAGE" "$PROBE" 2>&1); then
		IMAGE_OK=1
		KINDS="$KINDS container"
	else
		IMAGE=
		IMAGE_WHY="cannot build the test image: $out"
	fi
else
	IMAGE_WHY="no rootful '$ENGINE' here"
fi

start_control
for kind in $KINDS; do
	test_expect_success "as $(id -un), kind $kind: the key is out of the command's reach" '
		d="$ROOTDIR/root-$kind" && setup_home "$d" $kind &&
		# as root, container commands run as the workdir'"'"'s owner, never
		# root (root'"'"'s own workdir: nobody): give it one they can write
		if [ $kind = container ] && [ "$(id -u)" = 0 ]; then
			chown 65534:65534 "$d/work"
		fi &&
		run_probe "$d" &&
		check_probe "$d" $kind
	'
done
if [ -z "$IMAGE_OK" ]; then
	test_skip 'kind container: the key is out of the command'"'"'s reach' "$IMAGE_WHY"
fi

USER_OK=
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	USER_OK=1
	as_nobody() {
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
	}
	start_control setpriv --reuid=65534 --regid=65534 --clear-groups
fi
for kind in none namespace; do
	if [ -z "$USER_OK" ]; then
		test_skip "as an unprivileged user, kind $kind" \
			"not root or no setpriv: cannot become another user"
		continue
	fi
	test_expect_success "as nobody, kind $kind: the key is out of the command's reach" '
		d="$ROOTDIR/user-$kind" && mkdir -p "$d" && chown 65534:65534 "$d" &&
		setup_home "$d" $kind && chown -R 65534:65534 "$d" &&
		run_probe "$d" as_nobody &&
		check_probe "$d" $kind
	'
done

test_done
