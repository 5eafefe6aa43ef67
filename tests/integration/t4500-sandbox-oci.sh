#!/bin/bash
# The container backend, for real: podman (rootful here, runc runtime) and a
# small image imported offline.  lev-probe runs inside the container and
# reports what the kernel allowed; each refusal has a positive control.
# Warm containers are shared by identical configs and every container is
# removed when the run ends, after an error or a kill too, and orphans of
# a lev that died are removed the next time.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/container-lib.sh"

POOL="$BUILD_DIR/tests/helpers/sbx-pool"
# The host directory (helper, filter, socket) of container ID, remembered so
# the last test can check it is gone.
helper_dir() {
	"$ENGINE" inspect --format '{{index .Config.Labels "lev.dir"}}' "$1" | tee -a "$TRASH/helper-dirs"
}
oci_setup t4500 'container sandbox tests' 300

GW=$("$ENGINE" network inspect podman --format '{{range .Subnets}}{{.Gateway}}{{end}}' 2>/dev/null)
lev_start_http_server 0.0.0.0
sleep 300 &
VICTIM=$!
HOSTPIDS="$HOSTPIDS $VICTIM"

test_expect_success 'no lev containers before the tests' '
	[ -z "$(ours)" ]
'

cat >"$TRASH/check-plan.py" <<'EOF_PY'
import json, sys
d = json.load(open(sys.argv[2]))
a = d["container"]["run_argv"]
def after(flag):
    return [a[i + 1] for i, x in enumerate(a) if x == flag]
assert d["kind"] == "container", d["kind"]
assert "ALL" in after("--cap-drop"), a
assert "no-new-privileges" in after("--security-opt"), a
assert after("--pids-limit") == ["512"], a
assert after("--network") == ["none"], a
assert after("--user") == [sys.argv[1]], a
assert "--read-only" in a, a
assert d["container"]["commands"].startswith("fast path"), d["container"]
assert "seccomp" in d["layers"], d["layers"]
EOF_PY

test_expect_success 'the plan: caps dropped, no-new-privileges, limits, --user, read-only, fast path' '
	cbx --dry-run --json -- lev-probe whoami >plan.json &&
	python3 "$TRASH/check-plan.py" "$RUNAS" plan.json &&
	[ -z "$(ours)" ]
'

test_expect_success 'writing in the workdir works, owned by the invoking uid (as root: the owner)' '
	cbx -- lev-probe write "$WD/made-inside" >out && grep -q "^ok$" out &&
	grep -q lev-probe "$WD/made-inside" &&
	[ "$(stat -c %u:%g "$WD/made-inside")" = "$RUNAS" ]
'

test_expect_success 'writing outside the workdir fails; /tmp is the container'"'"'s own' '
	cbx -- sh -c "lev-probe write /etc/lev-t4500; lev-probe write /usr/lev-t4500; lev-probe write /tmp/lev-t4500-private" >out &&
	[ "$(sed -n 1p out)" = EROFS ] && [ "$(sed -n 2p out)" = EROFS ] && [ "$(sed -n 3p out)" = ok ] &&
	test ! -e /etc/lev-t4500 && test ! -e /usr/lev-t4500 && test ! -e /tmp/lev-t4500-private
'

test_expect_success 'host files outside the workdir are not there at all' '
	echo SECRET-OUTSIDE >"$SHOME/outside-secret" &&
	cbx -- lev-probe cat "$SHOME/outside-secret" >out 2>&1;
	! grep -q SECRET out && grep -q "^ENOENT$" out
'

test_expect_success 'secrets inside the workdir are masked; their neighbours are not' '
	mkdir -p "$WD/home/.ssh" && echo SECRET-KEY >"$WD/home/.ssh/id_rsa" &&
	echo SECRET-NETRC >"$WD/home/.netrc" && echo not-secret >"$WD/home/notes" &&
	HOME="$WD/home" "$LEV" sandbox exec --kind container --engine "$ENGINE" --image "$IMAGE" \
		--network off --workdir "$WD" -- sh -c \
		"lev-probe cat $WD/home/.ssh/id_rsa; lev-probe cat $WD/home/.netrc; lev-probe cat $WD/home/notes" >out 2>&1 &&
	! grep -q SECRET out && grep -q not-secret out &&
	[ "$(grep -c "^EACCES$" out)" = 2 ]
'

test_expect_success 'extra mounts are read-only; refused mounts are errors' '
	mkdir -p "$SHOME/toolchain" && echo tool >"$SHOME/toolchain/t" &&
	cbx --mount "$SHOME/toolchain" -- sh -c "cat $SHOME/toolchain/t; lev-probe write $SHOME/toolchain/x" >out &&
	grep -q "^tool$" out && grep -q "^EROFS$" out && test ! -e "$SHOME/toolchain/x" &&
	test_expect_code 125 cbx --mount /etc -- true 2>err && grep -q "not allowed" err &&
	test_expect_code 125 cbx --mount /var/run/docker.sock -- true 2>err &&
	test_expect_code 125 cbx --mount relative/dir -- true 2>err && grep -q "not absolute" err &&
	test_expect_code 125 cbx --mount "$SHOME/toolchain:ro" -- true 2>err && grep -q "read-only" err &&
	test_expect_code 125 cbx --mount "$SHOME/../etc" -- true 2>err && grep -q "\.\." err &&
	ln -s /etc "$SHOME/etc-link" &&
	test_expect_code 125 cbx --mount "$SHOME/etc-link" -- true 2>err && grep -q "resolves to" err &&
	[ -z "$(ours)" ]
'

test_control NETON 'the positive control: with network on the host server answers' '
	test -n "$GW" && test -n "$PORT" &&
	cbx_on -- sh -c "lev-probe connect $GW $PORT; timeout 5 wget -q -O /dev/null http://$GW:$PORT/ && echo fetched" >out &&
	grep -q "^ok$" out && grep -q "^fetched$" out
'

test_expect_success NETON 'no inet socket and no host server with network off' '
	cbx -- sh -c "lev-probe socket inet; lev-probe socket inet6; lev-probe socket unix; lev-probe connect $GW $PORT" >out &&
	[ "$(sed -n 1p out)" = EPERM ] && [ "$(sed -n 2p out)" = EPERM ] &&
	[ "$(sed -n 3p out)" = ok ] && [ "$(sed -n 4p out)" = EPERM ]
'

test_expect_success NETON 'busybox wget and nc fail with network off' '
	test_must_fail cbx -- timeout 5 wget -q -O /dev/null "http://$GW:$PORT/" &&
	test_must_fail cbx -- nc -w 2 "$GW" "$PORT" </dev/null
'


test_expect_success 'host processes are invisible; tracing, io_uring, TIOCSTI, unshare refused' '
	cbx -- sh -c "lev-probe pid-visible $VICTIM; lev-probe kill $VICTIM 9; lev-probe ptrace 1; lev-probe io_uring; lev-probe tiocsti; lev-probe unshare-remount /tmp; lev-probe mount-tmpfs /tmp; lev-probe keyctl; lev-probe bpf" >out &&
	[ "$(cat out | tr "\n" " ")" = "ENOENT ESRCH EPERM EPERM EPERM EPERM EPERM EPERM EPERM " ] &&
	kill -0 "$VICTIM" &&
	n=$(cbx -- lev-probe list-pids) && [ "$n" -le 6 ]
'

test_expect_success 'no capabilities, no_new_privs, our seccomp filter; setuid gains nothing' '
	cp "$PROBE" "$WD/suid-probe" && chown 0:0 "$WD/suid-probe" && chmod 4755 "$WD/suid-probe" &&
	cbx -- sh -c "lev-probe caps; $WD/suid-probe caps" >out &&
	[ "$(grep -c "CapEff=0000000000000000 CapBnd=0000000000000000 NoNewPrivs=1 Seccomp=2" out)" = 2 ]
'

test_expect_success 'a fork bomb is stopped' '
	cbx -- lev-probe fork-bomb >out 2>&1 &&
	grep -q "^EAGAIN after [0-9]*$" out &&
	n=$(sed -n "s/^EAGAIN after //p" out) && [ "$n" -lt 2000 ]
'

test_expect_success 'a memory bomb is stopped (killed or refused at the limit)' '
	cbx --memory 128 -- lev-probe alloc-bomb 4096 touch >out 2>err;
	rc=$?;
	{ [ $rc = 137 ] || grep -q "^ENOMEM" out; } && ! grep -q "^ok" out &&
	cbx --memory 512 -- lev-probe alloc-bomb 64 touch >out2 && grep -q "^ok 64" out2
'

test_expect_success 'a runaway loop is killed at the timeout, inside the container too' '
	test_must_fail --code 137 cbx --timeout 2 -- sh -c "lev-probe background 300 t4500-$$; exec lev-probe spin t4500-$$" 2>err &&
	grep -q "timed out after 2 s" err &&
	! pgrep -f "spin t4500-$$" && ! pgrep -f "background 300 t4500-$$"
'

test_expect_success 'exit codes pass through: code, 127, 126, 128+n' '
	test_expect_code 42 cbx -- lev-probe exit 42 &&
	test_expect_code 127 cbx -- no-such-command &&
	test_expect_code 126 cbx -- /etc/passwd &&
	test_expect_code 139 cbx -- lev-probe signal 11
'

test_expect_success 'stdout and stderr pass through, capped at 1 MiB' '
	cbx -- sh -c "echo out; echo err >&2" >o 2>e &&
	grep -q "^out$" o && grep -q "^err$" e &&
	cbx -- lev-probe flood 2000000 >big 2>e &&
	[ "$(wc -c <big)" -eq 1048576 ] && grep -q "cut at 1048576" e
'

test_expect_success 'the host environment never reaches the container' '
	LEV_T4500=visible GITHUB_TOKEN=x cbx -- env >out &&
	! grep -q LEV_T4500 out && ! grep -q GITHUB_TOKEN out && grep -q "^PATH=" out
'

test_expect_success 'identical configs share one warm container; others get their own' '
	LEV_OCI_HELPER="$BUILD_DIR/src/lev/lev-oci-helper" "$POOL" t4500-share "$WD" "$ENGINE" "$IMAGE" >out &&
	grep -q "^pool=2$" out && grep -q "^same=yes$" out && grep -q "^distinct=yes$" out &&
	grep -q "^running=2$" out && grep -q "^freed$" out &&
	[ -z "$("$ENGINE" ps -a -q --filter label=lev.run=t4500-share)" ]
'

test_expect_success 'after an error every container is removed' '
	LEV_OCI_HELPER="$BUILD_DIR/src/lev/lev-oci-helper" "$POOL" t4500-fail "$WD" "$ENGINE" "$IMAGE" --then-fail >out &&
	grep -q "^bad-mount=mount ./etc. is not allowed" out &&
	grep -q "^huge-argv=.*Argument list too long" out &&
	grep -q "^freed$" out &&
	[ -z "$("$ENGINE" ps -a -q --filter label=lev.run=t4500-fail)" ] &&
	test_expect_code 125 cbx -- lev-probe $(printf "%0100000d " $(seq 12)) 2>err &&
	grep -q "too long" err &&
	[ -z "$(ours)" ]
'

test_expect_success 'a lev killed by a signal removes its containers' '
	(exec "$LEV" sandbox exec --kind container --engine "$ENGINE" --image "$IMAGE" \
		--workdir "$WD" -- lev-probe sleep 300 >/dev/null 2>&1) &
	pid=$! &&
	for i in $(seq 100); do [ -n "$(ours)" ] && break; sleep 0.1; done &&
	[ -n "$(ours)" ] && sleep 1 &&
	dir=$(helper_dir "$(ours)") && test -d "$dir" &&
	kill -TERM $pid && wait $pid; rc=$?;
	[ $rc = 143 ] && [ -z "$(ours)" ] && test ! -e "$dir"
'

test_expect_success 'orphans of a lev that died hard are removed at the next start' '
	(exec "$LEV" sandbox exec --kind container --engine "$ENGINE" --image "$IMAGE" \
		--workdir "$WD" -- lev-probe sleep 300 >/dev/null 2>&1) &
	pid=$! &&
	for i in $(seq 100); do [ -n "$(ours)" ] && break; sleep 0.1; done &&
	orphan=$(ours) && [ -n "$orphan" ] &&
	dir=$(helper_dir "$orphan") && test -d "$dir" &&
	kill -KILL $pid; wait $pid;
	# (another lev starting a container meanwhile, t4510 in parallel, may
	# have swept it already: that is the same rule at work)
	{ { [ "$(ours)" = "$orphan" ] && test -d "$dir"; } || [ -z "$(ours)" ]; } &&
	cbx -- true &&
	[ -z "$(ours)" ] && test ! -e "$dir"
'

test_expect_success NETON 'the exec path (no fast-path helper) works and is fenced too, under warn' '
	LEV_OCI_HELPER=/nonexistent cbx --on-unavailable warn --dry-run -- true >plan &&
	grep -q "exec_argv:" plan &&
	LEV_OCI_HELPER=/nonexistent cbx --on-unavailable warn -- sh -c "lev-probe write /etc/x; lev-probe write $WD/via-exec; lev-probe connect $GW $PORT" >out &&
	[ "$(sed -n 1p out)" = EROFS ] && [ "$(sed -n 2p out)" = ok ] && ! grep -q "^ok$" <(sed -n 3p out) &&
	test_expect_code 42 env LEV_OCI_HELPER=/nonexistent "$LEV" sandbox exec --kind container \
		--engine "$ENGINE" --image "$IMAGE" --workdir "$WD" --on-unavailable warn -- lev-probe exit 42 &&
	[ -z "$(ours)" ]
'

# --- an unprivileged caller with rootless podman ---

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	PAUSE_BEFORE=$(pgrep -u 65534 -x catatonit)
	UH=$(mktemp -d /var/tmp/lev-t4500-rootless.XXXXXX)
	mkdir -p "$UH/run" "$UH/wd"
	touch "$UH/.start"
	chown -R 65534:65534 "$UH"
	chmod 755 "$UH"
	as_nobody() {
		(cd "$UH" && setpriv --reuid=65534 --regid=65534 --clear-groups \
			env HOME="$UH" XDG_RUNTIME_DIR="$UH/run" "$@")
	}
	test_expect_success 'rootless podman: files in the workdir belong to the caller' '
		as_nobody "$SRC_DIR/tests/helpers/oci-test-image.sh" "$ENGINE" localhost/lev-t4500-rl:1 "$PROBE" &&
		as_nobody "$LEV" sandbox exec --kind container --engine "$ENGINE" --image localhost/lev-t4500-rl:1 \
			--network off --on-unavailable warn --workdir "$UH/wd" -- \
			sh -c "lev-probe write $UH/wd/mine; lev-probe socket inet; lev-probe caps" >out 2>err &&
		grep -q "^ok$" out && grep -q "^EPERM$" out && grep -q "CapEff=0000000000000000" out &&
		[ "$(stat -c %u:%g "$UH/wd/mine")" = 65534:65534 ] &&
		[ -z "$(as_nobody "$ENGINE" ps -a -q --filter label=lev.sandbox=1)" ] &&
		[ -z "$(find /tmp -maxdepth 1 -name "lev-oci-*" -user 65534 -newer "$UH/.start")" ]
	'
	as_nobody "$ENGINE" rmi -f localhost/lev-t4500-rl:1 >/dev/null 2>&1
	# rootless podman leaves a pause process behind; stop it when we started it
	if [ -z "$PAUSE_BEFORE" ]; then
		for f in "$UH/run/libpod/tmp/pause.pid" /tmp/podman-run-65534/libpod/tmp/pause.pid; do
			pause=$(cat "$f" 2>/dev/null) && [ -n "$pause" ] && kill "$pause" 2>/dev/null
		done
	fi
	rm -rf "$UH"
else
	test_skip 'rootless podman: files in the workdir belong to the caller' 'not root: cannot switch to a test user'
fi

test_expect_success 'the host is unharmed: no containers, no helper directories left' '
	[ -z "$(ours)" ] && kill -0 "$VICTIM" &&
	for d in $(cat "$TRASH/helper-dirs" 2>/dev/null); do test ! -e "$d" || exit 1; done
'

test_done
