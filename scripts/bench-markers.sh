#!/usr/bin/env bash
# Benchmark the region markers (crates/markers): the cost of one region (a start and a stop)
# for each way of reading the counters, with the same event group, in the same run:
#
#   - markers, read() of the group   this library, rdpmc off: 2 read() calls per region,
#                                    clock reads, deltas, multiplex scaling, statistics
#   - markers, rdpmc                 this library through the mmap pages (0 system calls);
#                                    only where every event is on a hardware counter that user
#                                    space may read, otherwise the row says why not
#   - seed pattern                   the seed's libpfm4 code per pixel: 2 read() calls of the
#                                    group, deltas into an array, no statistics
#   - one read() / two clock reads   the parts, for reference
#   - C ABI rows                     the same regions through the C library (crates/markers-c,
#                                    installed into OUT/markers-c-prefix, called from
#                                    crates/markers-c/bench/marker_cost.c built with pkg-config):
#                                    start/stop and lap by id, by name, the LIKWID-style macros;
#                                    a second process right after the Rust rows, same settings
#
# Then runs the per-pixel example (crates/markers/examples/pixels.rs), whose table is the
# seed's, and whose last lines give the instrumentation's overhead on a real loop.
#
# Usage (from anywhere; paths are relative to the repository root):
#   scripts/bench-markers.sh
#
# Environment:
#   OUT      output directory (default target/bench); the report is OUT/bench-markers.md
#   EVENTS   event specs (default: instructions,cycles,branches,branch-misses where they open,
#            else task-clock,page-faults,context-switches)
#   REPS     repetitions per row (default 31); the median is reported
#   ITERS    regions per repetition (default 20000)
#
# Target (from the issue): under 100 ns per region where rdpmc is available.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

OUT="${OUT:-target/bench}"
REPS="${REPS:-31}"
ITERS="${ITERS:-20000}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"

die() { printf 'bench-markers: error: %s\n' "$*" >&2; exit 1; }
case "$REPS" in '' | *[!0-9]* | 0) die "REPS must be a positive integer, got '$REPS'" ;; esac
case "$ITERS" in '' | *[!0-9]* | 0) die "ITERS must be a positive integer, got '$ITERS'" ;; esac

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$root/$TARGET_DIR" ;; esac

printf '==> building (release)\n' >&2
cargo build --release -q -p cpiflame-markers --example marker_cost --example pixels
cargo build --release -q -p cpiflame-markers-c
prefix="$OUT/markers-c-prefix"
bash scripts/install-markers-c.sh --prefix "$prefix" --from "$TARGET_DIR/release" 2>/dev/null
${CC:-cc} -O2 -o "$OUT/marker_cost_c" crates/markers-c/bench/marker_cost.c \
	$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs cpiflame_markers) \
	-Wl,-rpath,"$prefix/lib"

args=(--reps "$REPS" --iters "$ITERS")
if [ -n "${EVENTS:-}" ]; then
	args+=(--events "$EVENTS")
fi

report="$OUT/bench-markers.md"
{
	printf '# Region markers: cost per region\n\n'
	printf 'Machine: %s, %s CPUs, Linux %s; perf_event_paranoid %s\n\n' \
		"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
		"$(nproc)" "$(uname -r)" "$(cat /proc/sys/kernel/perf_event_paranoid)"
	printf 'rdpmc setting: %s\n\n' \
		"$(cat /sys/bus/event_source/devices/cpu/rdpmc 2>/dev/null || echo 'no cpu PMU in sysfs')"
	"$TARGET_DIR/release/examples/marker_cost" "${args[@]}"
	"$OUT/marker_cost_c" "${EVENTS:-default}" "$REPS" "$ITERS"
	printf '\nTarget: under 100 ns per region where rdpmc is available.\n'
	printf '\n## Per-pixel example (crates/markers/examples/pixels.rs)\n\n```\n'
	"$TARGET_DIR/release/examples/pixels" 2>&1
	printf '```\n'
} | tee "$report"
printf '==> wrote %s\n' "$report" >&2
