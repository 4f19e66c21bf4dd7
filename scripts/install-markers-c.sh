#!/usr/bin/env bash
# Install the C ABI of the region markers (crates/markers-c): the header, the shared and the
# static library, and a pkg-config file.
#
# Usage (from anywhere):
#   scripts/install-markers-c.sh [--prefix DIR] [--from DIR]
#
#   --prefix DIR  where to install (default /usr/local):
#                   DIR/include/cpiflame_markers.h
#                   DIR/lib/libcpiflame_markers.so.0.1.0, .so.0 and .so (links)
#                   DIR/lib/libcpiflame_markers.a
#                   DIR/lib/pkgconfig/cpiflame_markers.pc         (links the shared library)
#                   DIR/lib/pkgconfig/cpiflame_markers-static.pc  (links the static one in)
#   --from DIR    a cargo output folder that already holds libcpiflame_markers_c.so and .a
#                 (target/debug after `cargo build -p cpiflame-markers-c`); default: build
#                 them with `cargo build --release -p cpiflame-markers-c` and use
#                 target/release (CARGO_TARGET_DIR is honoured)
#
# Then (docs/markers.md):
#   cc app.c $(pkg-config --cflags --libs cpiflame_markers)
#   cc app.c $(pkg-config --cflags --libs cpiflame_markers-static)
# with PKG_CONFIG_PATH=DIR/lib/pkgconfig for a prefix pkg-config does not search, and
# -Wl,-rpath,DIR/lib (or LD_LIBRARY_PATH) for one the dynamic linker does not. Under /usr
# and /usr/local the script runs ldconfig when it can.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix=/usr/local
from=""
die() { printf 'install-markers-c: error: %s\n' "$*" >&2; exit 1; }
while [ "$#" -gt 0 ]; do
	case "$1" in
	--prefix) [ "$#" -ge 2 ] || die "--prefix needs a directory"; prefix="$2"; shift 2 ;;
	--from) [ "$#" -ge 2 ] || die "--from needs a directory"; from="$2"; shift 2 ;;
	-h | --help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)"
[ -n "$version" ] || die "no version in $root/Cargo.toml"
major="${version%%.*}"

if [ -z "$from" ]; then
	target="${CARGO_TARGET_DIR:-$root/target}"
	case "$target" in /*) ;; *) target="$root/$target" ;; esac
	printf '==> cargo build --release -p cpiflame-markers-c\n' >&2
	(cd "$root" && cargo build --release -q -p cpiflame-markers-c)
	from="$target/release"
fi
for f in libcpiflame_markers_c.so libcpiflame_markers_c.a; do
	[ -f "$from/$f" ] || die "$from/$f not found (build with cargo build -p cpiflame-markers-c)"
done

lib="$prefix/lib"
mkdir -p "$prefix/include" "$lib/pkgconfig"
install -m 644 "$root/crates/markers-c/include/cpiflame_markers.h" "$prefix/include/"
install -m 755 "$from/libcpiflame_markers_c.so" "$lib/libcpiflame_markers.so.$version"
ln -sfn "libcpiflame_markers.so.$version" "$lib/libcpiflame_markers.so.$major"
ln -sfn "libcpiflame_markers.so.$major" "$lib/libcpiflame_markers.so"
install -m 644 "$from/libcpiflame_markers_c.a" "$lib/libcpiflame_markers.a"
# What the Rust standard library in the static library needs (rustc --print
# native-static-libs on x86_64-unknown-linux-gnu).
native="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
cat >"$lib/pkgconfig/cpiflame_markers.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: cpiflame_markers
Description: cpiflame's region markers: perf event counts and statistics per code region
Version: $version
Libs: -L\${libdir} -lcpiflame_markers
Libs.private: $native
Cflags: -I\${includedir}
PC
# The static library linked into the program (the C library and libgcc_s stay shared):
# pkg-config's --static would still pick the .so beside the .a.
cat >"$lib/pkgconfig/cpiflame_markers-static.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: cpiflame_markers-static
Description: cpiflame's region markers, linked statically into the program
Version: $version
Libs: \${libdir}/libcpiflame_markers.a $native
Cflags: -I\${includedir}
PC

case "$prefix" in
/usr | /usr/local)
	if [ "$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null 2>&1; then ldconfig; fi ;;
esac
printf 'install-markers-c: installed cpiflame_markers %s into %s\n' "$version" "$prefix" >&2
