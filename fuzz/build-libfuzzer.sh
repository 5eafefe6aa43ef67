#!/bin/sh
# Build the real libFuzzer binaries (clang, -fsanitize=fuzzer,address,undefined)
# for every fuzz/fuzz-<target>.c, as BUILD_DIR/fuzz-<target>.
#
# usage: fuzz/build-libfuzzer.sh [BUILD_DIR]     (default: build-libfuzzer)
#
# Needs clang-14 and libclang-rt-14-dev (scripts/install-deps installs them).
# liblev is built by meson in BUILD_DIR with -fsanitize=fuzzer-no-link (so
# the library is instrumented for coverage), then each target is linked
# with -fsanitize=fuzzer, which supplies libFuzzer's main().
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-libfuzzer}
cc=${CC:-$(command -v clang-14 || command -v clang || echo clang)}
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
deps="jansson libcurl lua5.4 libpcre2-8 libseccomp sqlite3 libmicrohttpd libidn2"

if [ ! -f "$build/build.ninja" ]; then
	CC="$cc" CFLAGS="-fsanitize=fuzzer-no-link $san -fno-omit-frame-pointer -g" \
	LDFLAGS="$san" \
		meson setup "$build" "$src" -Dbuildtype=debugoptimized -Dwerror=false \
			-Db_lundef=false -Dtests=false
fi
ninja -C "$build" src/liblev/liblev.a

for f in "$src"/fuzz/fuzz-*.c; do
	t=$(basename "$f" .c)
	echo "building $build/$t"
	# shellcheck disable=SC2046,SC2086
	"$cc" -std=gnu17 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
		-fsanitize=fuzzer $san \
		-I"$src" -I"$src/src" -I"$build" \
		$(pkg-config --cflags $deps) \
		"$f" "$build/src/liblev/liblev.a" \
		$(pkg-config --libs $deps) -lm \
		-o "$build/$t"
done
