#!/usr/bin/env bash
# Benchmark `cpiflame annotate` against `perf annotate --stdio`, in one run, on the recording
# scripts/bench-render.sh calls `rustc`: `perf record -e cpu-clock,task-clock --call-graph dwarf
# -F RUSTC_RATE` of rustc compiling a generated library (fixtures/workloads/gen-generic-rust.sh
# RUSTC_N; librustc_driver ~150 MB, libLLVM ~200 MB). Rows:
#
#   cpiflame annotate FILE SYMBOL   SYMBOL: the librustc_driver function with the most self
#                                   weight (or $SYMBOL), the debug-section cache warm
#                                   (CPIFLAME_CACHE_DIR=W/cache, filled by the warm-up)
#   ... cold cache                  the same with that cache emptied before every run
#   cpiflame annotate FILE          no SYMBOL: the top 3 functions (the default --limit)
#   cpiflame report FILE            reference: one read of the recording (annotate reads it
#                                   twice: load_opened, then the walk keeping leaf addresses)
#   perf annotate --stdio SYMBOL    the peer (disassembles with objdump)
#   perf annotate --stdio           no SYMBOL (every sampled symbol: minutes), only with PERF_ALL=1,
#                                   one run
#
# Usage (from anywhere; paths are relative to the repository root):
#   scripts/bench-annotate.sh
#
# Environment:
#   OUT           output directory (default target/bench); the report is OUT/bench-annotate.md,
#                 raw timings (WALL_NS MAXRSS_KB per run) in OUT/annotate/runs/
#   RUNS          timed runs of every row (default 5, after 1 untimed warm-up); medians reported
#   RUSTC_RATE    perf record -F per event (default 2000)
#   RUSTC_N       generator size (default 6)
#   SYMBOL        the function to annotate (default: chosen as above)
#   PERF_ALL      1: also time perf annotate without SYMBOL, once
#   PEER_TIMEOUT  seconds before a run is stopped (default 900)
#   KEEP          1 keeps the recording (default: deleted at the end)
#   RECORDING     an existing recording of that command to use instead of recording one (kept)
#
# Before every run the recording and rustc's libraries are read once, so each starts with its
# inputs in the page cache.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

RUNS="${RUNS:-5}"
RUSTC_RATE="${RUSTC_RATE:-2000}"
RUSTC_N="${RUSTC_N:-6}"
PEER_TIMEOUT="${PEER_TIMEOUT:-900}"
PERF_ALL="${PERF_ALL:-0}"
KEEP="${KEEP:-0}"
OUT="${OUT:-target/bench}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-annotate: error: %s\n' "$*" >&2; exit 1; }
positive() { case "$2" in '' | *[!0-9]* | 0) die "$1 must be a positive integer, got '$2'" ;; esac; }
positive RUNS "$RUNS"
positive RUSTC_RATE "$RUSTC_RATE"
positive RUSTC_N "$RUSTC_N"
positive PEER_TIMEOUT "$PEER_TIMEOUT"

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$root/$TARGET_DIR" ;; esac
CPIFLAME="$TARGET_DIR/release/cpiflame"

# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
install_bench_tools
command -v timeout >/dev/null 2>&1 || apt_install coreutils
command -v rustc >/dev/null 2>&1 || die "rustc not found on PATH (install Rust with rustup)"

log "cargo build --release -p cpiflame"
cargo build --release -p cpiflame
[ -x "$CPIFLAME" ] || die "cargo build did not produce $CPIFLAME"

W="$OUT/annotate"
mkdir -p "$W/runs"
cd "$W"
rm -rf cache runs/*

record_cmd="perf record -o rustc.data -e cpu-clock,task-clock --call-graph dwarf -F $RUSTC_RATE -- rustc --edition 2021 --crate-type lib -C opt-level=1 -o generic.rlib generic.rs"
if [ -n "${RECORDING:-}" ]; then
	[ -s "$RECORDING" ] || die "RECORDING=$RECORDING is not a non-empty file"
	ln -sf "$(cd "$(dirname "$RECORDING")" && pwd)/$(basename "$RECORDING")" rustc.data
	KEEP=1
else
	log "fixtures/workloads/gen-generic-rust.sh $RUSTC_N generic.rs"
	bash "$root/fixtures/workloads/gen-generic-rust.sh" "$RUSTC_N" generic.rs
	log "$record_cmd"
	rm -f rustc.data rustc.data.old
	# perf record exits with the workload's status; a missing file is the failure that matters.
	$record_cmd >/dev/null 2>runs/record.stderr || true
	[ -s rustc.data ] || die "perf record produced no $W/rustc.data: $(tail -n 3 runs/record.stderr)"
	[ -s generic.rlib ] || die "rustc did not build generic.rlib: $(tail -n 3 runs/record.stderr)"
fi
sysroot_lib="$(rustc --print sysroot)/lib"
driver="$(find "$sysroot_lib" -maxdepth 1 -name 'librustc_driver-*.so' | head -n 1)"
[ -n "$driver" ] || die "no librustc_driver-*.so in $sysroot_lib"

export CPIFLAME_CACHE_DIR="$W/cache"
if [ -z "${SYMBOL:-}" ]; then
	# The header of each annotated function: `NAME [MODULE]: N samples of EVENT, ...`.
	# (Through a file: a pipe closed early would fail the script under pipefail.)
	"$CPIFLAME" annotate rustc.data --limit 100000 >runs/all-functions.txt 2>/dev/null
	SYMBOL="$(sed -n 's/^\(.*\) \[librustc_driver-[^]]*\]: [0-9]* samples of .*/\1/p' runs/all-functions.txt |
		sed -n 1p)"
	[ -n "$SYMBOL" ] || die "no librustc_driver function has samples in $W/rustc.data"
fi
log "SYMBOL: $SYMBOL"

warm_inputs() { cat rustc.data "$sysroot_lib"/*.so "$(command -v rustc)" >/dev/null 2>&1 || true; }

# measure NAME CMD...: one run under timeout and /usr/bin/time; appends "WALL_NS MAXRSS_KB" to
# runs/NAME.tsv, stdout to runs/NAME.out, stderr to runs/NAME.stderr.
measure() {
	local name=$1 t0 t1 status=0
	shift
	warm_inputs
	t0=$(date +%s%N)
	timeout -k 5 "$PEER_TIMEOUT" /usr/bin/time -f '%M' -o "runs/$name.time" "$@" \
		</dev/null >"runs/$name.out" 2>"runs/$name.stderr" || status=$?
	t1=$(date +%s%N)
	[ "$status" -eq 0 ] || die "$name failed (exit $status): $(tail -n 1 "runs/$name.stderr")"
	echo "$((t1 - t0)) $(tail -n 1 "runs/$name.time")" >>"runs/$name.tsv"
}

rows=(symbol cold all report perf)
run_row() {
	case "$1" in
	symbol) measure symbol "$CPIFLAME" annotate rustc.data "$SYMBOL" ;;
	cold)
		rm -rf cache
		measure cold "$CPIFLAME" annotate rustc.data "$SYMBOL"
		;;
	all) measure all "$CPIFLAME" annotate rustc.data ;;
	report) measure report "$CPIFLAME" report rustc.data ;;
	perf) measure perf perf annotate --stdio -i rustc.data "$SYMBOL" ;;
	esac
}
for i in $(seq 0 "$RUNS"); do
	for r in "${rows[@]}"; do run_row "$r"; done
	# The warm-up's timings are not kept.
	[ "$i" -eq 0 ] && rm -f runs/*.tsv
	log "run $i/$RUNS done"
done
grep -qF "$SYMBOL [" runs/symbol.out || die "cpiflame annotate did not annotate $SYMBOL"
grep -q "Percent" runs/perf.out || die "perf annotate printed no annotation of $SYMBOL"
if [ "$PERF_ALL" = 1 ]; then
	log "perf annotate --stdio -i rustc.data (every symbol; once)"
	measure perf_all perf annotate --stdio -i rustc.data
fi

median() {
	awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ a[NR] = $1 } END {
		if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
row() {
	local name=$1 label=$2 wall rss
	wall=$(median "runs/$name.tsv" 1)
	rss=$(median "runs/$name.tsv" 2)
	printf '| %s | %s s | %s | %s MiB |\n' "$label" \
		"$(awk -v x="$wall" 'BEGIN { printf "%.3f", x / 1e9 }')" \
		"$(awk -v a="$wall" -v b="$(median runs/symbol.tsv 1)" 'BEGIN { printf "%.2f×", a / b }')" \
		"$(awk -v x="$rss" 'BEGIN { printf "%.0f", x / 1024 }')"
}
samples="$(perf script -i rustc.data -F event 2>/dev/null | grep -c . || true)"
report="$OUT/bench-annotate.md"
{
	printf '# cpiflame annotate against perf annotate\n\n'
	printf 'Machine: %s, %s CPUs, Linux %s; %s; %s\n\n' \
		"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" "$(nproc)" \
		"$(uname -r)" "$(perf --version)" "$(rustc --version)"
	printf 'File: `%s` (%s samples, %s MB; %s)\n\n' "$record_cmd" "$samples" \
		"$(($(stat -L -c %s rustc.data) / 1000000))" "$(basename "$driver")"
	printf 'SYMBOL: `%s`\n\n' "$SYMBOL"
	printf 'Medians of %s runs (after a warm-up):\n\n' "$RUNS"
	printf '| command | wall | vs annotate SYMBOL | peak RSS |\n| --- | ---: | ---: | ---: |\n'
	row symbol 'cpiflame annotate FILE SYMBOL'
	row cold 'cpiflame annotate FILE SYMBOL, debug-section cache emptied'
	row all 'cpiflame annotate FILE (top 3)'
	row report 'cpiflame report FILE (one read, for reference)'
	row perf 'perf annotate --stdio -i FILE SYMBOL'
	[ "$PERF_ALL" = 1 ] && row perf_all 'perf annotate --stdio -i FILE (every symbol, 1 run)'
	printf '\nTarget: cpiflame annotate FILE SYMBOL well under a second: **%s**\n' \
		"$(awk -v x="$(median runs/symbol.tsv 1)" 'BEGIN { print (x < 1e9) ? "met" : "not met" }')"
} >"$report"
cat "$report"
[ "$KEEP" = 1 ] || rm -f rustc.data rustc.data.old generic.rlib
