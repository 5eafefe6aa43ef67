#!/bin/bash
# A missing layer is never dropped silently: under on_unavailable = error the
# run fails naming it (exit 125); under warn it runs with the remaining
# layers and says which.  Missing layers are simulated with no-feature, a
# seccomp shim that makes landlock_*, seccomp(), user namespaces or openat2
# fail for the whole process tree as they do on kernels without them.
. "$SRC_DIR/tests/lib.sh"

PROBE=$(lev_helper_path lev-probe)
NF="$BUILD_DIR/tests/helpers/no-feature"
# `lev sandbox exec` starts its one command cold; T_SBX_WARM=1 (the
# t4101 twin of this file) runs the same probes in a cell of the warm helper.
WARM=
[ -n "${T_SBX_WARM:-}" ] && WARM=--warm

SHOME=$(mktemp -d /var/tmp/lev-t4100-home.XXXXXX)
chmod 755 "$SHOME"
cleanup_t4100() {
	rm -rf "$SHOME"
	_lev_cleanup
}
trap cleanup_t4100 EXIT
export HOME="$SHOME"
mkdir -p "$HOME/.ssh" "$HOME/.leviath" && chmod 700 "$HOME/.leviath"
echo SECRET-KEY >"$HOME/.ssh/id_rsa"
echo not-secret >"$HOME/notes.txt"
WD="$SHOME/work"
mkdir -p "$WD"
# Without a PID namespace nothing caps root's processes (RLIMIT_NPROC does
# not bind root), so for root the rlimits layer is reported missing too.
RL=", rlimits"
[ "$(id -u)" = 0 ] && RL=

if ! lev sandbox probe --json >"$TRASH/probe.json" 2>&1 ||
   ! grep -q '"userns": true' "$TRASH/probe.json" ||
   ! grep -q '"landlock_abi": [1-9]' "$TRASH/probe.json" ||
   ! grep -q '"seccomp": true' "$TRASH/probe.json"; then
	test_skip 'layer tests' "this machine lacks a layer already: $(cat "$TRASH/probe.json")"
	test_done
	exit $?
fi

without() {
	local flags=$1
	shift
	# shellcheck disable=SC2086
	"$NF" $flags -- "$LEV" sandbox exec $WARM --network off --timeout 300 --workdir "$WD" "$@"
}

test_expect_success 'no-feature really hides the features (probe)' '
	"$NF" --no-landlock --no-seccomp --no-userns --no-openat2 -- "$LEV" sandbox probe >out &&
	grep -q "^user namespaces: no" out &&
	grep -q "^landlock: *no" out &&
	grep -q "^seccomp: *no" out &&
	grep -q "^openat2: *no" out &&
	grep -q "namespace  nnp, caps$RL$" out
'

test_expect_success 'without the shim every layer is there (positive control)' '
	"$LEV" sandbox exec $WARM --network off --workdir "$WD" --dry-run -- true >plan &&
	grep -q "^missing: (none)" plan
'

for layer in landlock seccomp userns; do
	test_expect_success "no $layer, on_unavailable = error: exit 125 naming it" '
		test_expect_code 125 without --no-'$layer' -- "$PROBE" write "$WD/x" >out 2>err &&
		grep -q "unavailable: .*'$layer'" err &&
		grep -q "on_unavailable = \"warn\"" err &&
		test ! -e "$WD/x"
	'
done

test_expect_success 'on_unavailable = warn in config.toml: runs and says what is missing' '
	printf "[sandbox]\nkind = \"namespace\"\non_unavailable = \"warn\"\n" >"$HOME/.leviath/config.toml" &&
	chmod 600 "$HOME/.leviath/config.toml" &&
	"$NF" --no-landlock -- "$LEV" sandbox exec --workdir "$WD" -- "$PROBE" write "$WD/y" >out 2>err;
	rc=$?; rm -f "$HOME/.leviath/config.toml";
	[ $rc = 0 ] && grep -q ok out &&
	grep -q "warning: sandbox degraded: landlock" err &&
	grep -q "layers in force: userns, mountns, pidns, ipcns, utsns, seccomp, nnp, caps, rlimits$" err
'

test_expect_success 'no landlock, warn: the other layers still hold' '
	without --no-landlock --on-unavailable warn -- "$PROBE" write /etc/lev-t4100 >out 2>err &&
	grep -q "^EROFS$" out && test ! -e /etc/lev-t4100 &&
	without --no-landlock --on-unavailable warn -- "$PROBE" socket inet >out 2>err &&
	grep -q "^EPERM$" out &&
	without --no-landlock --on-unavailable warn -- "$PROBE" cat "$HOME/.ssh/id_rsa" >out 2>err;
	! grep -q SECRET out
'

test_expect_success 'no landlock, warn: the plan lists it as missing' '
	without --no-landlock --on-unavailable warn --dry-run -- true >plan 2>err &&
	grep -q "^missing:$" plan && grep -A1 "^missing:$" plan | grep -q "landlock" &&
	! grep -q "^landlock:" plan
'

HOSTPIDS=
trap 'for p in $HOSTPIDS; do kill "$p" 2>/dev/null; done; cleanup_t4100' EXIT
lev_start_http_server 127.0.0.1

test_control HOSTWEB 'a host server answers outside any sandbox (the control for the network check)' '
	test -n "$PORT" && "$PROBE" connect 127.0.0.1 "$PORT" >out && grep -q "^ok$" out
'

test_expect_success HOSTWEB 'no seccomp, warn: runs; the filtered calls now work, which the warning said' '
	without --no-seccomp --on-unavailable warn -- "$PROBE" io_uring >out 2>err &&
	grep -q "^ok$" out &&
	grep -q "warning: sandbox degraded: seccomp" err &&
	without --no-seccomp --on-unavailable warn -- "$PROBE" write /etc/lev-t4100 >out 2>err &&
	grep -q "^EROFS$" out &&
	without --no-seccomp --on-unavailable warn -- "$PROBE" connect 127.0.0.1 "$PORT" >out 2>err &&
	test -s out && ! grep -q "^ok$" out
'

test_expect_success 'no user namespaces, warn: Landlock and seccomp fence the host run' '
	without --no-userns --on-unavailable warn -- "$PROBE" write /etc/lev-t4100 >out 2>err &&
	grep -q "^EACCES$" out && test ! -e /etc/lev-t4100 &&
	grep -q "warning: sandbox degraded: userns" err &&
	grep -q "layers in force: landlock, seccomp, nnp, caps$RL$" err &&
	without --no-userns --on-unavailable warn -- "$PROBE" write "$WD/inside" >out 2>err &&
	grep -q "^ok$" out && test -e "$WD/inside" &&
	without --no-userns --on-unavailable warn -- "$PROBE" socket inet >out 2>err &&
	grep -q "^EPERM$" out &&
	without --no-userns --on-unavailable warn -- "$PROBE" io_uring >out 2>err &&
	grep -q "^EPERM$" out
'

test_expect_success 'no user namespaces, warn: Landlock keeps the secrets out' '
	without --no-userns --on-unavailable warn -- "$PROBE" cat "$HOME/.ssh/id_rsa" >out 2>err;
	! grep -q SECRET out && grep -q "^EACCES$" out &&
	without --no-userns --on-unavailable warn -- "$PROBE" cat "$HOME/notes.txt" >out 2>err &&
	grep -q not-secret out
'

test_expect_success 'no user namespaces, warn: a private TMPDIR, removed afterwards' '
	without --no-userns --on-unavailable warn -- sh -c "\"$PROBE\" write \"\$TMPDIR/t\"; echo \$TMPDIR" >out 2>err &&
	grep -q "^ok$" out &&
	dir=$(tail -1 out) && case "$dir" in /tmp/lev-sandbox-*) ;; *) false ;; esac &&
	test ! -e "$dir" &&
	without --no-userns --on-unavailable warn -- "$PROBE" write /tmp/lev-t4100-shared >out 2>err &&
	grep -q "^EACCES$" out && test ! -e /tmp/lev-t4100-shared
'

test_expect_success 'no user namespaces, warn: honestly, host processes are visible' '
	without --no-userns --on-unavailable warn -- "$PROBE" pid-visible 1 >out 2>err &&
	grep -q "^ok$" out
'

test_expect_success 'nothing but nnp, caps and rlimits: still runs under warn, and says so' '
	"$NF" --no-landlock --no-seccomp --no-userns -- "$LEV" sandbox exec --on-unavailable warn \
		--workdir "$WD" -- "$PROBE" caps >out 2>err &&
	grep -q "NoNewPrivs=1" out &&
	grep -q "userns: .*landlock: .*seccomp: " err &&
	grep -q "layers in force: nnp, caps$RL$" err
'

test_expect_success 'no openat2: the namespace sandbox is complete anyway' '
	"$NF" --no-openat2 -- "$LEV" sandbox exec $WARM --network off --workdir "$WD" -- "$PROBE" write /etc/lev-t4100 >out 2>err &&
	grep -q "^EROFS$" out && ! grep -q degraded err
'

test_expect_success 'a container engine that is not there: error, or the host under warn' '
	test_expect_code 125 "$LEV" sandbox exec --kind container --engine /nonexistent/podman \
		--image x --workdir "$WD" -- true 2>err &&
	grep -q "engine ./nonexistent/podman. not found" err &&
	"$LEV" sandbox exec --kind container --engine /nonexistent/podman --image x \
		--on-unavailable warn --workdir "$WD" -- "$PROBE" hostname >out 2>err &&
	grep -q "warning: sandbox degraded: container: .*running on the host" err &&
	grep -q "layers in force: none" err &&
	[ "$(cat out)" = "$(hostname)" ]
'

test_expect_success 'a container without an image: error naming the key' '
	test_expect_code 125 "$LEV" sandbox exec --kind container --workdir "$WD" -- true 2>err &&
	grep -q "needs an image" err
'

test_done
