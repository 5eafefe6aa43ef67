#!/bin/bash
# oci-test-image.sh ENGINE IMAGE PROBE: build a tiny local image offline (no
# registry): Debian's static busybox with its applet links, lev-probe at
# /usr/local/bin/lev-probe, a passwd with root and nobody, and a /tmp.
# Prints nothing on success; exits non-zero with the reason otherwise.
set -euo pipefail

engine=$1
image=$2
probe=$3
busybox=${BUSYBOX:-/bin/busybox}

if ! file -L "$busybox" 2>/dev/null | grep -q 'statically linked'; then
	echo "oci-test-image: '$busybox' is not a static busybox (install busybox-static)" >&2
	exit 1
fi
root=$(mktemp -d "${TMPDIR:-/tmp}/lev-oci-rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/usr/local/bin" "$root/etc" "$root/tmp" "$root/root" "$root/proc" \
	"$root/sys" "$root/dev"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	[ "$applet" = busybox ] && continue
	ln -sf busybox "$root/bin/$applet"
done
cp "$probe" "$root/usr/local/bin/lev-probe"
chmod 755 "$root/usr/local/bin/lev-probe"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
if ! out=$(tar -C "$root" --numeric-owner --owner=0 --group=0 -cf - . | "$engine" import \
	--change 'ENV PATH=/usr/local/bin:/bin' --change 'CMD ["/bin/sh"]' - "$image" 2>&1); then
	echo "oci-test-image: $engine import failed: $out" >&2
	exit 1
fi
