#!/bin/bash
# The namespace sandbox, proven from inside: lev-probe runs in it and reports
# what the kernel allowed.  Every refusal has a positive control (the same
# probe succeeding in the workdir, with the network on, or with --kind none)
# so a broken probe cannot pass vacuously; the host is checked afterwards.
. "$SRC_DIR/tests/lib.sh"

PROBE=$(lev_helper_path lev-probe)
# `lev sandbox exec` starts its one command cold; T_SBX_WARM=1 (the
# t4001 twin of this file) runs the same probes in a cell of the warm helper.
WARM=
[ -n "${T_SBX_WARM:-}" ] && WARM=--warm

# The fake home lives outside /tmp: the sandbox's private /tmp would hide a
# home under /tmp entirely, and the secret tests would pass for the wrong
# reason.  It must be reachable by the unprivileged test user too.
SHOME=$(mktemp -d /var/tmp/lev-t4000-home.XXXXXX)
chmod 755 "$SHOME"
HOSTPIDS=
cleanup_t4000() {
	for p in $HOSTPIDS; do kill "$p" 2>/dev/null; done
	rm -rf "$SHOME"
	_lev_cleanup
}
trap cleanup_t4000 EXIT
export HOME="$SHOME"
mkdir -p "$HOME/.leviath" && chmod 700 "$HOME/.leviath"

WD="$TRASH/wd"
mkdir -p "$WD"
# Marks this file's long-running probes, so the leftover checks never see
# another test run's processes.
MARK="t4000-$$"

# Is the namespace sandbox possible here at all?
if ! lev sandbox probe --json >"$TRASH/probe.json" 2>&1 ||
   ! grep -q '"userns": true' "$TRASH/probe.json" ||
   ! grep -q '"mount_api": true' "$TRASH/probe.json"; then
	test_skip 'namespace sandbox tests' "no user namespaces here: $(cat "$TRASH/probe.json")"
	test_done
	exit $?
fi

# A generous timeout: only the timeout test is about timeouts, and a loaded
# machine must not turn a slow probe into a failure.
sbx() {
	"$LEV" sandbox exec $WARM --network off --timeout 300 --workdir "$WD" "$@"
}
inside() {
	sbx -- "$PROBE" "$@"
}
host() {
	"$LEV" sandbox exec --kind none --timeout 300 --workdir "$WD" -- "$PROBE" "$@"
}
expect_word() {
	local want=$1
	shift
	local got
	got=$("$@" 2>"$TRASH/.err")
	case "$got" in
	$want) return 0 ;;
	esac
	echo "expected '$want' from '$*', got '$got'" >&2
	cat "$TRASH/.err" >&2
	return 1
}
expect_not_word() {
	local bad=$1
	shift
	local got
	got=$("$@" 2>"$TRASH/.err")
	case "$got" in
	$bad)
		echo "did not expect '$bad' from '$*', got '$got'" >&2
		return 1 ;;
	esac
	[ -n "$got" ] || { echo "no answer from '$*'" >&2; cat "$TRASH/.err" >&2; return 1; }
	return 0
}

test_expect_success 'probe reports the layers of the namespace kind' '
	lev sandbox probe >out &&
	grep -q "^user namespaces: yes" out &&
	grep -q "^landlock: *ABI [0-9]" out &&
	grep -q "^seccomp: *yes" out &&
	grep -q "namespace  userns, mountns, pidns, ipcns, utsns, netns, landlock, seccomp, nnp, caps, rlimits" out
'

test_expect_success 'the plan lists namespaces, masks, Landlock and seccomp rules' '
	sbx --dry-run -- true >plan &&
	grep -q "^kind: namespace" plan &&
	grep -q "net (no interfaces up)" plan &&
	grep -q "mount a tmpfs on .\/tmp." plan &&
	grep -q "$SHOME/.ssh" plan &&
	grep -q "io_uring_setup: EPERM" plan &&
	grep -q "socket: EPERM unless AF_UNIX" plan &&
	grep -q "^  abi: [0-9]" plan &&
	sbx --dry-run --json -- true >plan.json &&
	python3 -c "import json,sys; d=json.load(open(\"plan.json\")); assert d[\"kind\"]==\"namespace\"; assert \"landlock\" in d[\"layers\"]; assert d[\"missing\"]==[]"
'

# --- the filesystem ---

test_expect_success 'writing in the workdir works, and the file lands on the host' '
	expect_word ok inside write "$WD/made-inside" &&
	grep -q lev-probe "$WD/made-inside"
'

test_expect_success 'files written in the workdir belong to the caller, with a normal umask' '
	inside write "$WD/owned" >/dev/null &&
	[ "$(stat -c %u "$WD/owned")" = "$(id -u)" ] &&
	expect_word 0022 inside umask
'

test_expect_success 'writing outside the workdir fails and the host is unharmed' '
	expect_word EROFS inside write /etc/lev-t4000-evil &&
	test ! -e /etc/lev-t4000-evil &&
	expect_word EROFS inside write "$SHOME/outside" &&
	test ! -e "$SHOME/outside" &&
	expect_word EROFS inside write /var/tmp/lev-t4000-evil &&
	test ! -e /var/tmp/lev-t4000-evil &&
	# the build tree: read-only, or (under /tmp) not there at all
	case "$(cd "$BUILD_DIR" && pwd -P)/" in
	/tmp/*|/run/*) want=ENOENT ;;
	*) want=EROFS ;;
	esac &&
	expect_word $want inside write "$BUILD_DIR/lev-t4000-evil" &&
	test ! -e "$BUILD_DIR/lev-t4000-evil"
'

test_expect_success 'the positive control: the same write outside works on the host' '
	expect_word ok host write "$SHOME/outside" &&
	test -e "$SHOME/outside" && rm -f "$SHOME/outside"
'

test_expect_success '/tmp is private: writes there never reach the host' '
	expect_word ok inside write /tmp/lev-t4000-private &&
	test ! -e /tmp/lev-t4000-private &&
	expect_word ok inside write "$TRASH/beside-workdir" &&
	test ! -e "$TRASH/beside-workdir"
'

test_expect_success 'the host filesystem stays readable (tools work)' '
	expect_word ok inside read /etc/passwd &&
	sbx -- sh -c "ls / >/dev/null && echo fine" >out &&
	grep -q fine out
'

test_expect_success 'writes through /dev/stdout, /dev/null and /dev/shm work' '
	sbx -- sh -c "echo via-stdout >/dev/stdout; echo x >/dev/null; echo y >/dev/shm/z && cat /dev/shm/z" >out &&
	grep -q via-stdout out && grep -q "^y$" out
'

test_expect_success 'secrets are masked; their neighbours are not' '
	mkdir -p "$HOME/.ssh" "$HOME/.aws" "$HOME/.config/gcloud" "$HOME/.kube" "$HOME/.docker" "$HOME/.gnupg" &&
	echo SECRET-SSH-KEY >"$HOME/.ssh/id_rsa" &&
	echo SECRET-AWS >"$HOME/.aws/credentials" &&
	echo SECRET-GCLOUD >"$HOME/.config/gcloud/creds" &&
	echo SECRET-KUBE >"$HOME/.kube/config" &&
	echo SECRET-DOCKER >"$HOME/.docker/config.json" &&
	echo SECRET-GPG >"$HOME/.gnupg/key" &&
	echo SECRET-NETRC >"$HOME/.netrc" &&
	echo SECRET-LEV >"$HOME/.leviath/credentials.toml" &&
	echo not-secret >"$HOME/notes.txt" &&
	echo other-config >"$HOME/.config/other" &&
	inside cat "$HOME/notes.txt" >out && grep -q not-secret out &&
	inside cat "$HOME/.config/other" >out && grep -q other-config out &&
	for f in .ssh/id_rsa .aws/credentials .config/gcloud/creds .kube/config .docker/config.json \
		 .gnupg/key .netrc .leviath/credentials.toml; do
		inside cat "$HOME/$f" >out 2>&1
		if grep -q SECRET out; then echo "read $f: $(cat out)"; exit 1; fi
		grep -q "^E" out || { echo "no refusal for $f: $(cat out)"; exit 1; }
	done &&
	expect_word EACCES inside ls "$HOME/.ssh"
'

test_expect_success 'the positive control: the secrets are readable on the host' '
	host cat "$HOME/.ssh/id_rsa" >out && grep -q SECRET-SSH-KEY out
'

test_expect_success '[sandbox] deny_read masks more paths (~/ expanded)' '
	echo PRIVATE-PLAN >"$HOME/plans.txt" &&
	printf "[sandbox]\ndeny_read = [\"~/plans.txt\"]\n" >"$HOME/.leviath/config.toml" &&
	chmod 600 "$HOME/.leviath/config.toml" &&
	inside cat "$HOME/plans.txt" >out 2>&1;
	rm -f "$HOME/.leviath/config.toml";
	! grep -q PRIVATE-PLAN out && grep -q "^E" out &&
	inside cat "$HOME/plans.txt" >out2 && grep -q PRIVATE-PLAN out2
'

test_expect_success 'a masked path cannot be renamed away or unmounted' '
	echo SECRET-SSH-KEY >"$HOME/.ssh/id_rsa" &&
	"$LEV" sandbox exec $WARM --network off --workdir "$HOME" -- mv "$HOME/.ssh" "$HOME/ssh-moved" 2>err;
	test -d "$HOME/.ssh" && test ! -e "$HOME/ssh-moved" &&
	expect_not_word ok inside umount "$HOME/.ssh"
'

# --- the network ---

lev_start_http_server 127.0.0.1

# Positive controls first: every "cannot reach" check below counts only when
# the same server was reachable without the sandbox, and with network on.
test_control HOSTWEB 'a host web server is up for the network tests (no sandbox)' '
	test -n "$PORT" && curl -sS -m 5 -o page "http://127.0.0.1:$PORT/" &&
	grep -q "lev test page" page &&
	nc -z -w 2 127.0.0.1 "$PORT" &&
	bash -c "echo hi >/dev/tcp/127.0.0.1/$PORT"
'

test_control NETON 'the positive control: inet sockets and the tools work with network on' '
	test -n "$PORT" &&
	expect_word ok "$LEV" sandbox exec $WARM --network on --workdir "$WD" -- "$PROBE" socket inet &&
	expect_word ok "$LEV" sandbox exec $WARM --network on --workdir "$WD" -- "$PROBE" connect 127.0.0.1 "$PORT" &&
	"$LEV" sandbox exec $WARM --network on --workdir "$WD" -- curl -sS -m 5 -o /dev/null "http://127.0.0.1:$PORT/" &&
	"$LEV" sandbox exec $WARM --network on --workdir "$WD" -- wget -q -t 1 -T 5 -O /dev/null "http://127.0.0.1:$PORT/" &&
	"$LEV" sandbox exec $WARM --network on --workdir "$WD" -- nc -z -w 2 127.0.0.1 "$PORT" &&
	"$LEV" sandbox exec $WARM --network on --workdir "$WD" -- bash -c "echo hi >/dev/tcp/127.0.0.1/$PORT"
'

test_expect_success 'no inet socket with network off (any family but AF_UNIX)' '
	expect_word EPERM inside socket inet &&
	expect_word EPERM inside socket inet6 &&
	expect_word EPERM inside socket netlink &&
	expect_word EPERM inside socket packet &&
	expect_word EPERM inside socket vsock &&
	expect_word EPERM inside socket-hi inet &&
	expect_word ok inside socket unix
'

test_expect_success HOSTWEB,NETON 'connect to a host server fails with network off' '
	expect_word EPERM inside connect 127.0.0.1 "$PORT"
'

test_expect_success HOSTWEB,NETON 'curl, wget, nc and bash /dev/tcp fail with network off' '
	test_must_fail sbx -- curl -sS -m 5 -o /dev/null "http://127.0.0.1:$PORT/" &&
	test_must_fail sbx -- wget -q -t 1 -T 5 -O /dev/null "http://127.0.0.1:$PORT/" &&
	test_must_fail sbx -- nc -z -w 2 127.0.0.1 "$PORT" &&
	test_must_fail sbx -- bash -c "echo hi >/dev/tcp/127.0.0.1/$PORT"
'

# A UDP listener on loopback stands in for a name server: it records every
# datagram, so the host's send (the control) and the sandbox's (refused) are
# both seen from outside.
python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
open(sys.argv[1] + ".tmp", "w").write("%d\n" % s.getsockname()[1])
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    data, _ = s.recvfrom(4096)
    with open(sys.argv[2], "ab") as f:
        f.write(data + b"\n")
' "$TRASH/udp-port" "$TRASH/udp.log" >/dev/null 2>&1 &
HOSTPIDS="$HOSTPIDS $!"
for i in $(seq 300); do [ -s "$TRASH/udp-port" ] && break; sleep 0.1; done
UPORT=$(cat "$TRASH/udp-port" 2>/dev/null)

test_control HOSTUDP 'a datagram from the host reaches the UDP listener (no sandbox)' '
	test -n "$UPORT" && bash -c "echo from-host >/dev/udp/127.0.0.1/$UPORT" &&
	for i in $(seq 50); do grep -q from-host "$TRASH/udp.log" 2>/dev/null && break; sleep 0.1; done &&
	grep -q from-host "$TRASH/udp.log"
'

test_expect_success HOSTUDP 'no datagram leaves with network off (a name server query would not)' '
	test_must_fail sbx -- bash -c "echo from-sandbox >/dev/udp/127.0.0.1/$UPORT" &&
	bash -c "echo after >/dev/udp/127.0.0.1/$UPORT" &&
	for i in $(seq 50); do grep -q after "$TRASH/udp.log" && break; sleep 0.1; done &&
	! grep -q from-sandbox "$TRASH/udp.log"
'

test_expect_success 'names from /etc/hosts still resolve with network off' '
	sbx -- getent hosts localhost >out && grep -Eq "127\.0\.0\.1|::1" out
'

# --- processes ---

sleep 100000 &	# the victim: alive however long a loaded machine takes
VICTIM=$!
HOSTPIDS="$HOSTPIDS $VICTIM"

test_expect_success 'host processes are invisible and untouchable' '
	expect_word ENOENT inside pid-visible "$VICTIM" &&
	expect_word ESRCH inside kill "$VICTIM" 9 &&
	expect_word EPERM inside ptrace "$VICTIM" &&
	expect_word EPERM inside ptrace 1 &&
	expect_word EPERM inside vmread 1 &&
	kill -0 "$VICTIM"
'

test_expect_success 'only the sandbox processes are visible' '
	n=$(inside list-pids) && [ "$n" -le 3 ] &&
	m=$(host list-pids) && [ "$m" -gt 10 ]
'

test_expect_success 'the positive control: the host process is visible on the host' '
	expect_word ok host pid-visible "$VICTIM"
'

test_expect_success 'no new user namespace, mount, unmount or setns' '
	expect_word EPERM inside unshare-user &&
	expect_word EPERM inside unshare-remount /tmp &&
	expect_word ENOSYS inside clone3-user &&
	expect_word EPERM inside mount-tmpfs "$WD" &&
	expect_word EPERM inside umount /proc &&
	expect_not_word ok inside setns
'

# a warm cell sets itself up with these after its helper installed the
# seccomp filter, which leaves them to the kernel: no capability, no call
ALL_EPERM="mount=EPERM open_tree=EPERM move_mount=EPERM mount_setattr=EPERM clone_newns=EPERM clone_newpid=EPERM clone_newipc=EPERM"
ALL_OK="mount=ok open_tree=ok move_mount=ok mount_setattr=ok clone_newns=ok clone_newpid=ok clone_newipc=ok"
test_expect_success 'the calls a warm cell sets itself up with are refused to its command' '
	test "$(inside mount-ops /tmp)" = "$ALL_EPERM" &&
	test "$(inside mount-ops "$WD")" = "$ALL_EPERM"
'

test_expect_success 'the positive control: they work in a namespace of our own on the host' '
	mkdir -p "$TRASH/mnt-ops" &&
	test "$("$PROBE" mount-ops "$TRASH/mnt-ops" own-ns)" = "$ALL_OK"
'

test_expect_success 'unshare -r then remounting fails (util-linux)' '
	test_must_fail sbx -- unshare -r sh -c "mount -t tmpfs none /tmp" &&
	test_must_fail sbx -- unshare -rm sh -c "umount /proc"
'

# not through kind none: its commands hold no capabilities, and root needs
# CAP_SETFCAP to map uid 0 in a new user namespace
test_expect_success 'the positive control: unshare and remount work on the host' '
	mkdir -p "$TRASH/mnt" &&
	expect_word ok "$PROBE" unshare-remount "$TRASH/mnt"
'

test_expect_success 'io_uring, bpf, perf, keyctl and userfaultfd are refused' '
	expect_word EPERM inside io_uring &&
	expect_word EPERM inside bpf &&
	expect_word EPERM inside perf &&
	expect_word EPERM inside keyctl &&
	expect_word EPERM inside userfaultfd
'

test_expect_success 'the positive control: io_uring works on the host' '
	expect_word ok host io_uring
'

test_expect_success 'TIOCSTI is refused (also with garbage in the high bits)' '
	expect_word EPERM inside tiocsti &&
	expect_word EPERM inside tiocsti-hi
'

test_expect_success 'the positive control: TIOCSTI is not refused by a filter on the host' '
	expect_not_word EPERM host tiocsti
'

test_expect_success 'no capabilities, no_new_privs and a seccomp filter' '
	inside caps >out &&
	grep -q "CapEff=0000000000000000" out &&
	grep -q "CapPrm=0000000000000000" out &&
	grep -q "CapBnd=0000000000000000" out &&
	grep -q "NoNewPrivs=1" out &&
	grep -q "Seccomp=2" out
'

test_expect_success 'a fork bomb is stopped and leaves nothing behind' '
	inside fork-bomb 100000 "$MARK" >out 2>&1 &&
	grep -q "^EAGAIN after [0-9]*$" out &&
	n=$(sed -n "s/^EAGAIN after //p" out) && [ "$n" -lt 2000 ] &&
	! pgrep -f "fork-bomb 100000 $MARK" &&
	inside fork-bomb 50 >out2 && grep -q "^ok 50$" out2
'

test_expect_success 'a memory bomb is stopped' '
	inside alloc-bomb 65536 >out &&
	grep -q "^ENOMEM after" out &&
	mb=$(sed -n "s/^ENOMEM after \([0-9]*\).*/\1/p" out) && [ "$mb" -le 4096 ] &&
	"$LEV" sandbox exec $WARM --network off --workdir "$WD" --memory 256 -- "$PROBE" alloc-bomb 65536 >out3 &&
	mb=$(sed -n "s/^ENOMEM after \([0-9]*\).*/\1/p" out3) && [ "$mb" -le 256 ]
'

test_expect_success 'the positive control: the same allocation succeeds on the host' '
	"$LEV" sandbox exec --kind none --timeout 600 --workdir "$WD" -- "$PROBE" alloc-bomb 6144 >out &&
	grep -q "^ok 6144" out
'

test_expect_success 'a runaway loop is killed at the timeout, with everything it started' '
	test_must_fail --code 137 sbx --timeout 1 -- sh -c "\"$PROBE\" background 300 $MARK; exec \"$PROBE\" spin $MARK" 2>err &&
	grep -q "timed out after 1 s" err &&
	! pgrep -f "spin $MARK" && ! pgrep -f "background 300 $MARK"
'

test_expect_success 'background processes die with the command' '
	inside background 300 "$MARK" >out && grep -q ok out &&
	! pgrep -f "background 300 $MARK"
'

test_expect_success 'a setuid-root binary gains nothing inside' '
	cp "$PROBE" "$SHOME/suid-probe" && chown 0:0 "$SHOME/suid-probe" && chmod 4755 "$SHOME/suid-probe" &&
	sbx -- "$SHOME/suid-probe" caps >out &&
	grep -q "CapEff=0000000000000000" out &&
	"$SHOME/suid-probe" caps >host-out &&
	! grep -q "CapEff=0000000000000000" host-out
'

# --- environment, output, exit codes ---

test_expect_success 'credential-shaped variables are withheld (shell_env = filtered)' '
	AWS_SECRET_ACCESS_KEY=a GITHUB_TOKEN=b MY_PASSWORD=c SSH_AUTH_SOCK=/x LEV_T4000=plain \
		sbx -- env >out &&
	! grep -q AWS_SECRET out && ! grep -q GITHUB_TOKEN out && ! grep -q MY_PASSWORD out &&
	grep -q "^SSH_AUTH_SOCK=/x$" out && grep -q "^LEV_T4000=plain$" out && grep -q "^PATH=" out
'

test_expect_success 'shell_env = strict also withholds SSH_AUTH_SOCK; allow_env_vars keeps one' '
	printf "[security]\nshell_env = \"strict\"\nallow_env_vars = [\"GITHUB_TOKEN\"]\n" >"$HOME/.leviath/config.toml" &&
	chmod 600 "$HOME/.leviath/config.toml" &&
	SSH_AUTH_SOCK=/x GITHUB_TOKEN=b sbx -- env >out;
	rm -f "$HOME/.leviath/config.toml";
	! grep -q SSH_AUTH_SOCK out && grep -q "^GITHUB_TOKEN=b$" out
'

test_expect_success 'stdout and stderr pass through; each is capped at 1 MiB' '
	sbx -- sh -c "echo out; echo err >&2" >o 2>e &&
	grep -q "^out$" o && grep -q "^err$" e &&
	sbx -- "$PROBE" flood 3000000 >big 2>e &&
	[ "$(wc -c <big)" -eq 1048576 ] &&
	grep -q "standard output was cut at 1048576 bytes (3000000 written)" e
'

test_expect_success 'exit codes: the command, 127 not found, 126 not executable, 128+n signal' '
	test_expect_code 42 inside exit 42 &&
	test_expect_code 127 sbx -- no-such-command-t4000 &&
	test_expect_code 126 sbx -- /etc/passwd &&
	test_expect_code 139 inside signal 11 &&
	test_expect_code 0 inside exit 0
'

test_expect_success '125 when the sandbox cannot be set up, with the reason' '
	test_expect_code 125 "$LEV" sandbox exec --workdir "$TRASH/no-such-dir" -- true 2>err &&
	grep -q "no-such-dir" err &&
	test_expect_code 125 "$LEV" sandbox exec --workdir / -- true 2>err &&
	grep -q "system directory" err &&
	test_expect_code 125 "$LEV" sandbox exec --workdir "$HOME/.ssh" -- true 2>err &&
	grep -q "masked" err
'

test_expect_success 'usage errors exit 2' '
	test_expect_code 2 "$LEV" sandbox exec &&
	test_expect_code 2 "$LEV" sandbox exec --kind bogus -- true &&
	test_expect_code 2 "$LEV" sandbox exec --timeout 0 -- true &&
	test_expect_code 2 "$LEV" sandbox frob
'

test_expect_success 'the hostname inside is the sandbox'"'"'s' '
	expect_word lev-sandbox inside hostname
'

# --- an unprivileged caller ---

USER_OK=
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	UWD=$(mktemp -d /var/tmp/lev-t4000-user.XXXXXX)
	chown 65534:65534 "$UWD"
	chmod 755 "$UWD"
	USER_OK=1
fi
as_user() {
	setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$UWD" \
		"$LEV" sandbox exec $WARM --network off --workdir "$UWD" -- "$PROBE" "$@"
}

if [ -n "$USER_OK" ]; then
	test_expect_success 'as an unprivileged user: the same fences hold' '
		expect_word ok as_user write "$UWD/mine" &&
		[ "$(stat -c %u "$UWD/mine")" = 65534 ] &&
		expect_word EROFS as_user write "$SHOME/evil" &&
		expect_word EROFS as_user write /var/tmp/lev-t4000-evil-user &&
		expect_word EPERM as_user socket inet &&
		expect_word EPERM as_user io_uring &&
		expect_word EPERM as_user ptrace "$VICTIM" &&
		expect_word ENOENT as_user pid-visible "$VICTIM" &&
		expect_word EPERM as_user unshare-remount /tmp &&
		expect_word EPERM as_user tiocsti &&
		as_user whoami >out && grep -q "^uid=65534 euid=65534" out &&
		as_user caps >out && grep -q "CapEff=0000000000000000" out &&
		as_user fork-bomb >out && grep -q "^EAGAIN after" out
	'
	test_expect_success 'as an unprivileged user: a setuid-root binary stays unprivileged inside' '
		setpriv --reuid=65534 --regid=65534 --clear-groups "$SHOME/suid-probe" whoami >host-out &&
		grep -q "euid=0" host-out &&
		setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$UWD" \
			"$LEV" sandbox exec $WARM --network off --workdir "$UWD" -- "$SHOME/suid-probe" whoami >out &&
		grep -q "^uid=65534 euid=65534" out
	'
	test_expect_success 'as an unprivileged user: secrets in its home are masked' '
		mkdir -p "$UWD/.ssh" && echo SECRET-U >"$UWD/.ssh/id_rsa" && chown -R 65534:65534 "$UWD/.ssh" &&
		mkdir -p "$UWD/proj" && chown 65534:65534 "$UWD/proj" &&
		setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$UWD" \
			"$LEV" sandbox exec $WARM --network off --workdir "$UWD/proj" -- "$PROBE" cat "$UWD/.ssh/id_rsa" >out 2>&1;
		! grep -q SECRET-U out && grep -q "^E" out
	'
	rm_uwd() { rm -rf "$UWD"; }
else
	test_skip 'as an unprivileged user: the same fences hold' 'not root, or no setpriv'
	rm_uwd() { :; }
fi

test_expect_success 'the host is unharmed: no leftovers' '
	kill -0 "$VICTIM" &&
	! pgrep -f "$MARK"
'

rm_uwd
test_done
