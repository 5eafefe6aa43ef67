# container-lib.sh - the set-up the container tests (t45xx) share; source it
# after lib.sh and call oci_setup.
#
# oci_setup NAME WHAT TIMEOUT builds the test image localhost/lev-test-NAME
# from lev-probe and sets:
#   ENGINE  the engine (LEV_TEST_ENGINE, default podman)
#   IMAGE   the image; PROBE the lev-probe it holds
#   SHOME   a home of its own (HOME points there; ~/.leviath exists)
#   WD      the workdir, under SHOME; RUNAS the uid:gid commands run as
# and defines ours (this test's lev containers), cbx and cbx_on (lev sandbox
# exec in the container kind, network off / on, TIMEOUT seconds).  At exit
# it kills $HOSTPIDS, calls oci_cleanup_extra when the test defines it,
# removes our containers, the image and SHOME.  Without the engine or the
# image, WHAT is skipped with the reason and the test ends there.

oci_setup() {
	local name=$1 what=$2 out
	OCI_TIMEOUT=$3
	PROBE=$(lev_helper_path lev-probe)
	ENGINE=${LEV_TEST_ENGINE:-podman}
	IMAGE="localhost/lev-test-$name:$$"
	SHOME=$(mktemp -d "/var/tmp/lev-$name-home.XXXXXX")
	chmod 755 "$SHOME"
	HOSTPIDS=
	trap oci_cleanup EXIT
	export HOME="$SHOME"
	mkdir -p "$HOME/.leviath" && chmod 700 "$HOME/.leviath"
	WD="$SHOME/work"
	mkdir -p "$WD"
	# Commands never run as root: as root, lev runs them as the workdir's
	# owner (else nobody, who could not write a root-owned workdir).
	if [ "$(id -u)" = 0 ]; then
		chown 65534:65534 "$WD"
		RUNAS=65534:65534
	else
		RUNAS=$(id -u):$(id -g)
	fi
	if ! command -v "$ENGINE" >/dev/null; then
		test_skip "$what" "no '$ENGINE' on PATH (scripts/install-deps installs podman)"
		test_done
		exit $?
	fi
	if ! out=$("$SRC_DIR/tests/helpers/oci-test-image.sh" "$ENGINE" "$IMAGE" "$PROBE" 2>&1); then
		test_skip "$what" "cannot build the test image: $out"
		test_done
		exit $?
	fi
}

# Our containers: lev's, with our workdir mounted (other lev runs may be
# going on at the same time; they are none of this test's business).
ours() {
	"$ENGINE" ps -a --filter label=lev.sandbox=1 --filter "label=lev.uid=$(id -u)" \
		--format '{{.ID}} {{.Mounts}}' 2>/dev/null | grep -F "$SHOME" | cut -d' ' -f1
}

oci_cleanup() {
	local p ids
	for p in $HOSTPIDS; do kill "$p" 2>/dev/null; done
	if declare -F oci_cleanup_extra >/dev/null; then
		oci_cleanup_extra
	fi
	if command -v "$ENGINE" >/dev/null; then
		ids=$(ours)
		[ -n "$ids" ] && "$ENGINE" rm -f $ids >/dev/null 2>&1
		"$ENGINE" rmi -f "$IMAGE" >/dev/null 2>&1
	fi
	rm -rf "$SHOME"
	_lev_cleanup
}

cbx() {
	"$LEV" sandbox exec --kind container --engine "$ENGINE" --image "$IMAGE" --network off \
		--timeout "$OCI_TIMEOUT" --workdir "$WD" "$@"
}
cbx_on() {
	"$LEV" sandbox exec --kind container --engine "$ENGINE" --image "$IMAGE" --network on \
		--timeout "$OCI_TIMEOUT" --workdir "$WD" "$@"
}
