#!/bin/sh
# Per-command wall time of /bin/true through (a) a bare fork+exec, (b) lev's
# namespace sandbox with its warm helper, (b') the same cold, (b") the first
# command of a new sandbox, (c) bubblewrap with the same namespaces, (d)
# `podman exec` into a warm container, (e) lev's container fast path, (f)
# kind none, (g) kind none in the read fence: all in one run, medians (and
# p90) in milliseconds, and each as a multiple of (a).  (a), (b) and (b')
# are interleaved.  Goals: (b) <= 1.5x (a); (b') <= (c) while adding
# Landlock and seccomp; (e) <= 5 ms.  `uptime` before and after: on a loaded
# machine the figures are mostly scheduling delay.
#
# usage: bench/bench-sandbox.sh [RUNS]      (default 200 runs per row)
#
# Builds in $BENCH_BUILD_DIR (default build-bench-sandbox; release,
# -Dbench=true), imports a tiny busybox image into podman (offline), and
# removes it at the end.  Set LEV_BENCH_ENGINE=none to skip (d) and (e).
# The machine should be otherwise idle.
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BENCH_BUILD_DIR:-$src/build-bench-sandbox}
runs=${1:-200}
engine=${LEV_BENCH_ENGINE:-podman}
image="localhost/lev-bench-sandbox:$$"

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" -Dbench=true -Dtests=false -Dbuildtype=release >/dev/null
fi
ninja -C "$build" bench/bench-sandbox src/lev/lev-oci-helper >/dev/null

work=$(mktemp -d /var/tmp/lev-bench-sandbox.XXXXXX)
cleanup() {
	rm -rf "$work"
	[ "$engine" = none ] || "$engine" rmi -f "$image" >/dev/null 2>&1 || true
}
trap cleanup EXIT

set -- -n "$runs" -w "$work"
if [ "$engine" != none ] && command -v "$engine" >/dev/null; then
	"$src/tests/helpers/oci-test-image.sh" "$engine" "$image" /bin/busybox
	set -- "$@" -e "$engine" -i "$image" -H "$build/src/lev/lev-oci-helper"
fi
echo "== $(uname -r), $(nproc) CPUs, $(id -un); bubblewrap $(bwrap --version 2>/dev/null | cut -d' ' -f2)"
echo "== before: $(uptime)"
"$build/bench/bench-sandbox" "$@"
echo "== after: $(uptime)"
