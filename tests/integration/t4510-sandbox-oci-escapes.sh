#!/bin/bash
# The container kind against the red-team's five classes (issue 13, 7-11),
# each checked from the outside with a benign twin:
#   7  outputs that outlive the sandbox: never root, no setuid bit or device
#      node left in the workdir
#   8  the environment is exactly lev's: no proxy variable the engine adds
#   9  each call's processes die with the call, however they fork, and the
#      command cannot escape by killing its supervisor
#   10 nothing makes the engine pull: no connection to a registry, ever
#   11 a missing layer is named, and on_unavailable = "error" refuses
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/container-lib.sh"

CALLS="$BUILD_DIR/tests/helpers/sbx-calls"
HELPER="$BUILD_DIR/src/lev/lev-oci-helper"
MARK="t4510-mark-$$"
# the chain's own processes only (not a shell or helper naming it in argv)
CHAIN="^sh \./$MARK\.sh"
oci_cleanup_extra() {
	pkill -f "$CHAIN" 2>/dev/null
}
oci_setup t4510 'container escape tests' 120

# --- 7: outputs that outlive the sandbox ---

SUID_LINE="cp /bin/busybox ./x; chmod 4755 ./x; chmod g+s ./x; mkdir -p d/e/f;
	cp /bin/busybox d/e/f/y; chmod 6755 d/e/f/y; ls -l ./x d/e/f/y;
	mknod ./cdev c 1 3; mknod ./bdev b 8 0; true"
no_suid_left() {
	test -f "$WD/x" && ! test -u "$WD/x" && ! test -g "$WD/x" &&
	test -f "$WD/d/e/f/y" && ! test -u "$WD/d/e/f/y" && ! test -g "$WD/d/e/f/y" &&
	[ "$(stat -c %u "$WD/x")" != 0 ] && [ "$(stat -c %u:%g "$WD/x")" = "$RUNAS" ] &&
	! test -e "$WD/cdev" && ! test -e "$WD/bdev"
}

test_expect_success '7: setuid bits are refused at the source (the helper'"'"'s filter)' '
	cbx -- sh -c "$SUID_LINE" >out 2>&1 &&
	! grep -q "^-rws" out && grep -q "Operation not permitted" out &&
	no_suid_left && rm -rf "$WD/x" "$WD/d" &&
	cbx -- sh -c "lev-probe create-mode $WD/z 4755; lev-probe create-mode $WD/z2 0755" >out &&
	[ "$(cat out | tr "\n" " ")" = "EPERM ok " ] && ! test -e "$WD/z" && test -f "$WD/z2"
'

test_expect_success '7: without the helper'"'"'s filter, lev strips what the call left' '
	LEV_OCI_HELPER=/nonexistent cbx --on-unavailable warn -- sh -c "$SUID_LINE" >out 2>&1 &&
	grep -q "^-rws" out && no_suid_left && rm -rf "$WD/x" "$WD/d"
'

test_expect_success '7: commands never run as root, even in a root-owned workdir' '
	mkdir -p "$SHOME/rootwd" &&
	if [ "$(id -u)" = 0 ]; then
		"$LEV" sandbox exec --kind container --engine "$ENGINE" --image "$IMAGE" \
			--network off --workdir "$SHOME/rootwd" -- id -u >out &&
		[ "$(cat out)" = 65534 ]
	else
		cbx -- id -u >out && [ "$(cat out)" = "$(id -u)" ] || [ "$(cat out)" = 0 ]
	fi
'

test_expect_success '7 (benign): a file the command writes keeps its content and mode' '
	cbx -- sh -c "printf \"hello\\n\" >note.txt; chmod 644 note.txt;
		printf \"#!/bin/sh\\necho run\\n\" >run.sh; chmod 755 run.sh" &&
	[ "$(cat "$WD/note.txt")" = hello ] && [ "$(stat -c %a "$WD/note.txt")" = 644 ] &&
	[ "$(stat -c %a "$WD/run.sh")" = 755 ] && grep -q "echo run" "$WD/run.sh" &&
	[ "$(stat -c %u:%g "$WD/note.txt")" = "$RUNAS" ]
'

# --- 8: the environment the engine adds ---

cat >"$HOME/.leviath/config.toml" <<'EOT'
[security]
allow_env_vars = ["LEV_T4510_OK"]
EOT
chmod 600 "$HOME/.leviath/config.toml"

test_expect_success '8: host proxy variables (with credentials) never reach the command' '
	HTTPS_PROXY=http://user:secret@127.0.0.1:9 http_proxy=http://user:secret@127.0.0.1:9 \
	ALL_PROXY=socks5://user:secret@127.0.0.1:9 NO_PROXY=example.invalid \
		cbx -- env >out &&
	! grep -qi proxy out && ! grep -q secret out && grep -q "^PATH=/usr/local/bin:/bin$" out &&
	HTTPS_PROXY=http://user:secret@127.0.0.1:9 LEV_OCI_HELPER=/nonexistent \
		cbx --on-unavailable warn -- env >out2 2>/dev/null &&
	! grep -qi proxy out2 && ! grep -q secret out2 && grep -q "^PATH=" out2
'

test_expect_success '8 (benign): a variable the policy passes is there, with its value' '
	LEV_T4510_OK=passed LEV_T4510_NOT=withheld cbx -- env >out &&
	grep -q "^LEV_T4510_OK=passed$" out && ! grep -q LEV_T4510_NOT out
'
rm -f "$HOME/.leviath/config.toml"

# --- 9: supervision that can be escaped ---

cat >"$WD/$MARK.sh" <<'EOT'
d=$1
if [ "$d" -gt 0 ]; then (sh "$0" $((d - 1)) &); fi
sleep 1000
EOT
chmod 644 "$WD/$MARK.sh"

cat >"$WD/respawn-$$.sh" <<EOT
while :; do (sh ./$MARK.sh 0 &); done
EOT
chmod 644 "$WD/respawn-$$.sh"

# the lines the calls run (inside: busybox sh and ps; on the host: pgrep)
export CHAIN
COUNT='n=0; for i in $(seq 200); do n=$(ps -o args | grep -c "^sh \./t4510-mark"); [ "$n" -ge 51 ] && break; sleep 0.1; done; echo chain=$n'
NONE_ON_HOST='host:! pgrep -f "$CHAIN"'
NONE_INSIDE='ps -o args | grep -c "^sh \./t4510-mark"; true'
KILL_SUPERVISOR='for p in $(ps -o pid,args | grep "[l]ev-oci-helper" | sed "s/^ *//" | cut -d" " -f1); do kill -9 $p 2>/dev/null; done; echo still-here'

test_expect_success '9: a 50-deep double-forked chain dies with its call' '
	LEV_OCI_HELPER="$HELPER" "$CALLS" "$WD" "$ENGINE" "$IMAGE" 60 \
		"(sh ./$MARK.sh 50 &); $COUNT" "$NONE_ON_HOST" "$NONE_INSIDE" >out &&
	[ "$(sed -n 1p out)" = chain=51 ] && [ "$(sed -n 2p out)" = rc=0 ] &&
	[ "$(sed -n 3p out)" = rc=0 ] &&
	[ "$(sed -n 4p out)" = 0 ] && [ "$(sed -n 5p out)" = rc=0 ] &&
	! pgrep -f "$CHAIN"
'

test_expect_success '9: a command that kills its supervisor cannot outlive the call' '
	LEV_OCI_HELPER="$HELPER" "$CALLS" "$WD" "$ENGINE" "$IMAGE" 60 \
		"(sh ./$MARK.sh 3 &); $KILL_SUPERVISOR" "$NONE_ON_HOST" "echo alive" >out &&
	[ "$(sed -n 1p out)" = still-here ] && [ "$(sed -n 3p out)" = rc=0 ] &&
	[ "$(sed -n 4p out)" = alive ] && ! pgrep -f "$CHAIN"
'

test_expect_success '9: past the timeout the whole chain is gone' '
	LEV_OCI_HELPER="$HELPER" "$CALLS" "$WD" "$ENGINE" "$IMAGE" 5 \
		"(sh ./$MARK.sh 10 &); sleep 1000" "$NONE_ON_HOST" >out &&
	grep -q "^timed-out$" out && [ "$(tail -1 out)" = rc=0 ] && ! pgrep -f "$CHAIN"
'

test_expect_success '9: a loop that keeps spawning orphans dies with its call' '
	LEV_OCI_HELPER="$HELPER" "$CALLS" "$WD" "$ENGINE" "$IMAGE" 60 \
		"(sh ./respawn-$$.sh &); sleep 1; echo spawned" "$NONE_ON_HOST" \
		"host:! pgrep -f \"^sh \\./respawn-$$\"" "$NONE_INSIDE" >out &&
	[ "$(sed -n 1p out)" = spawned ] && [ "$(sed -n 3p out)" = rc=0 ] &&
	[ "$(sed -n 4p out)" = rc=0 ] && [ "$(sed -n 5p out)" = 0 ] && ! pgrep -f "$CHAIN"
'

# the per-command supervisors: helpers whose parent is the container's
# first helper (itself the child of the engine's monitor, not a helper)
supervisors() {
	for p in $(pgrep -f "^/.lev/lev-oci-helper serve"); do
		pp=$(ps -o ppid= -p "$p" | tr -d " ") && [ -n "$pp" ] || continue
		ppp=$(ps -o ppid= -p "$pp" | tr -d " ") && [ -n "$ppp" ] || continue
		[ "$(ps -o comm= -p "$pp")" = lev-oci-helper ] &&
			[ "$(ps -o comm= -p "$ppp")" != lev-oci-helper ] && echo "$p"
	done
	true
}

test_expect_success '9: losing the supervisor kills the call' '
	(exec "$LEV" sandbox exec --kind container --engine "$ENGINE" --image "$IMAGE" \
		--network off --timeout 300 --workdir "$WD" -- \
		sh -c "(sh ./$MARK.sh 5 &); sleep 1000" >/dev/null 2>&1) &
	pid=$! &&
	for i in $(seq 300); do [ "$(pgrep -f "$CHAIN" | wc -l)" -ge 6 ] && break; sleep 0.1; done &&
	[ "$(pgrep -f "$CHAIN" | wc -l)" -ge 6 ] &&
	sv=$(supervisors) && [ -n "$sv" ] && kill -9 $sv &&
	for i in $(seq 300); do pgrep -f "$CHAIN" >/dev/null || break; sleep 0.1; done &&
	! pgrep -f "$CHAIN" &&
	wait $pid; rc=$?; [ $rc != 0 ] && [ -z "$(ours)" ]
'

test_expect_success '9 (benign): a background job the command waits for completes' '
	cbx -- sh -c "(sleep 1; echo bg-done >bg.txt) & wait; cat bg.txt" >out &&
	grep -q "^bg-done$" out
'

# --- 10: a blueprint choosing what the host fetches ---

python3 - "$TRASH/conns" >"$TRASH/listener.port" <<'EOT' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
s.settimeout(600)
while True:
    try:
        c, a = s.accept()
    except Exception:
        break
    open(sys.argv[1], "a").write("connection from %s\n" % (a,))
    c.close()
EOT
HOSTPIDS="$HOSTPIDS $!"
for i in $(seq 100); do [ -s "$TRASH/listener.port" ] && break; sleep 0.1; done
LPORT=$(cat "$TRASH/listener.port")
mkdir -p "$TRASH/fetcher"
cat >"$TRASH/fetcher/agent.leviath" <<EOT
[agent]
name = "fetcher"
[sandbox]
kind = "container"
image = "127.0.0.1:$LPORT/lev/evil:latest"
EOT

test_expect_success '10: an image that is not here is never pulled, dry run or not' '
	test -n "$LPORT" &&
	test_expect_code 125 "$LEV" sandbox exec --kind container --engine "$ENGINE" \
		--image "127.0.0.1:$LPORT/lev/evil:latest" --workdir "$WD" -- true 2>err &&
	grep -q "never pulls" err && grep -q "pull 127.0.0.1:$LPORT/lev/evil:latest" err &&
	"$LEV" sandbox exec --kind container --engine "$ENGINE" \
		--image "127.0.0.1:$LPORT/lev/evil:latest" --workdir "$WD" --dry-run -- true >/dev/null 2>&1;
	"$LEV" sandbox exec --agent "$TRASH/fetcher" --workdir "$WD" --dry-run -- true >/dev/null 2>&1;
	"$LEV" sandbox exec --agent "$TRASH/fetcher" --workdir "$WD" -- true >/dev/null 2>&1;
	! test -s "$TRASH/conns" && [ -z "$(ours)" ]
'

test_expect_success '10 (benign): the listener does record a connection' '
	python3 -c "import socket; socket.create_connection((\"127.0.0.1\", $LPORT)).close()" &&
	for i in $(seq 50); do test -s "$TRASH/conns" && break; sleep 0.1; done &&
	test -s "$TRASH/conns"
'

# --- 11: a layer dropped without a word ---

test_expect_success '11: without the helper, on_unavailable = error refuses and names the layers' '
	test_expect_code 125 env LEV_OCI_HELPER=/nonexistent "$LEV" sandbox exec --kind container \
		--engine "$ENGINE" --image "$IMAGE" --workdir "$WD" -- true 2>err &&
	grep -q "seccomp, pidns" err && grep -q "lev-oci-helper" err && [ -z "$(ours)" ]
'

test_expect_success '11: under warn the plan, the warning and the probe name the missing layers' '
	LEV_OCI_HELPER=/nonexistent cbx --on-unavailable warn --dry-run --json -- true >plan.json 2>err &&
	python3 -c "import json,sys; d=json.load(open(\"plan.json\")); m=d[\"missing\"]; assert \"seccomp\" in m and \"pidns\" in m, m; assert \"seccomp\" not in d[\"layers\"], d[\"layers\"]" &&
	grep -q "sandbox degraded: seccomp, pidns" err &&
	LEV_OCI_HELPER=/nonexistent "$LEV" sandbox probe >probe &&
	grep -q "^  container .*without: seccomp, pidns" probe
'

# the run record: a lev run --follow against a mock model on loopback
MOCK="$BUILD_DIR/tests/helpers/mock-model"
mkdir -p "$TRASH/agent11"
cat >"$TRASH/agent11/agent.leviath" <<'EOT'
[agent]
name = "layers"
[stages.main]
model = { provider = "mockoa", model = "mock-1" }
available_tools = ["shell"]
system_prompt = "You are tested."
EOT
cat >"$TRASH/conv11.json" <<'EOT'
{ "responses": [
  { "text": "running", "calls": [ { "id": "c1", "name": "shell", "arguments": { "command": "echo ran-inside" } } ] },
  { "text": "done" }
] }
EOT

test_expect_success '11: the run record names the missing layers' '
	rm -f port &&
	"$MOCK" --script "$TRASH/conv11.json" --port-file port >/dev/null 2>mock.err &
	mpid=$! &&
	for i in $(seq 100); do [ -s port ] && break; sleep 0.05; done &&
	cat >"$HOME/.leviath/config.toml" <<-EOT &&
	[tool_permissions]
	shell = "allow"
	[sandbox]
	kind = "container"
	engine = "$ENGINE"
	image = "$IMAGE"
	network = false
	on_unavailable = "warn"
	[providers.mockoa]
	kind = "openai"
	base_url = "http://127.0.0.1:$(cat port)/v1"
	api_key_env = "MOCK_T4510_KEY"
	model = "mock-1"
	timeout_secs = 5
	EOT
	chmod 600 "$HOME/.leviath/config.toml" &&
	MOCK_T4510_KEY=sk-mock LEV_OCI_HELPER=/nonexistent setsid -w "$LEV" run --foreground "$TRASH/agent11" \
		--task "go" --workdir "$WD" --json >ev 2>err;
	rc=$?; kill $mpid; wait $mpid; rm -f "$HOME/.leviath/config.toml";
	[ $rc = 0 ] && d=$(ls -d "$HOME/.leviath/runs"/* | sort | tail -n 1) &&
	grep -q "ran-inside" "$d/events.jsonl" &&
	grep -q "sandbox runs without seccomp, pidns" "$d/events.jsonl" && [ -z "$(ours)" ]
'

test_expect_success '11 (benign): with the helper nothing is missing' '
	cbx --dry-run --json -- true >plan.json &&
	python3 -c "import json; d=json.load(open(\"plan.json\")); assert d[\"missing\"] == [], d[\"missing\"]; assert \"seccomp\" in d[\"layers\"] and \"pidns\" in d[\"layers\"]" &&
	LEV_OCI_HELPER="$HELPER" "$LEV" sandbox probe >probe && ! grep -q "without:" probe
'

test_expect_success 'the host is unharmed: no containers, no marker processes left' '
	[ -z "$(ours)" ] && ! pgrep -f "$CHAIN"
'

test_done
