#!/usr/bin/env bash
# Benchmark `cpiflame render` against the seed's CPI flame graph pipeline done with inferno
# (perf script | inferno-collapse-perf ×2 | inferno-diff-folded -n | inferno-flamegraph),
# on one perf.data file recorded here with two software events and DWARF call graphs.
#
# Usage (from anywhere; paths are relative to the repository root):
#   scripts/bench-render.sh
#
# Environment:
#   OUT          output directory (default target/bench)
#   RUNS         timed runs of each side (default 5); the medians are reported
#   RATE         perf record -F sampling rate per event (default 4000)
#   SCALE        first workload scale to try (default 1); doubled until MIN_SAMPLES is reached
#   MIN_SAMPLES  minimum number of samples (both events together) in the file (default 10000)
#   TOOLS        cargo install root for inferno's CLI if it is not on PATH
#                (default target/bench-tools; binaries in $TOOLS/bin)
#   INFERNO_VERSION  version for that cargo install (default: the newest)
#
# Writes into OUT: bench.data, the SVGs and intermediate files, runs/ (raw timings and the
# stderr of the last run of every stage) and bench-render.md (the table printed at the end).
#
# Wall time is measured with `date +%s%N` around `/usr/bin/time -f '%e %M %U %S'` (nanosecond clock;
# %e only has 10 ms resolution, it is kept in runs/*.tsv); peak RSS is /usr/bin/time's %M.
# The pipeline's wall time is the sum of its stages (they run one after the other) and its
# peak RSS the largest of its stages' peaks, per run; then the median over the runs.
set -euo pipefail

script_start=$SECONDS
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

RUNS="${RUNS:-5}"
RATE="${RATE:-4000}"
SCALE="${SCALE:-1}"
MIN_SAMPLES="${MIN_SAMPLES:-10000}"
OUT="${OUT:-target/bench}"
TOOLS="${TOOLS:-target/bench-tools}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-render: error: %s\n' "$*" >&2; exit 1; }

case "$RUNS" in '' | *[!0-9]* | 0) die "RUNS must be a positive integer, got '$RUNS'" ;; esac

mkdir -p "$OUT" "$TOOLS"
OUT="$(cd "$OUT" && pwd)"
TOOLS="$(cd "$TOOLS" && pwd)"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$root/$TARGET_DIR" ;; esac
CPIFLAME="$TARGET_DIR/release/cpiflame"

# ---------------------------------------------------------------------------------------------
# 1. Tools
# ---------------------------------------------------------------------------------------------
# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
install_bench_tools

export PATH="$TOOLS/bin:$PATH"
inferno_tools=(inferno-collapse-perf inferno-diff-folded inferno-flamegraph)
have_inferno() {
	local t
	for t in "${inferno_tools[@]}"; do
		command -v "$t" >/dev/null 2>&1 || return 1
	done
}
if ! have_inferno; then
	log "cargo install inferno --locked --root $TOOLS ${INFERNO_VERSION:+--version $INFERNO_VERSION}"
	cargo install inferno --locked --root "$TOOLS" ${INFERNO_VERSION:+--version "$INFERNO_VERSION"}
	have_inferno || die "cargo install inferno did not provide ${inferno_tools[*]}"
fi
for t in "${inferno_tools[@]}"; do
	log "$t: $(command -v "$t")"
done

# ---------------------------------------------------------------------------------------------
# 2. Build cpiflame and the workload
# ---------------------------------------------------------------------------------------------
log "cargo build --release -p cpiflame"
cargo build --release -p cpiflame
[ -x "$CPIFLAME" ] || die "cargo build did not produce $CPIFLAME"

FIX="$OUT/fixtures"
if [ -f "$root/scripts/build-fixtures.sh" ]; then
	log "bash scripts/build-fixtures.sh $FIX"
	bash "$root/scripts/build-fixtures.sh" "$FIX"
else
	log "scripts/build-fixtures.sh not found; compiling threads.c directly"
	mkdir -p "$FIX"
	gcc -O2 -g -fomit-frame-pointer -pthread -o "$FIX/threads" "$root/fixtures/workloads/threads.c"
fi
[ -x "$FIX/threads" ] || die "workload $FIX/threads was not built"

# Everything below runs in OUT, so that the commands are the literal ones of the table.
cd "$OUT"
mkdir -p runs
rm -f runs/*.tsv runs/*.time runs/*.stderr

# ---------------------------------------------------------------------------------------------
# 3. Record
# ---------------------------------------------------------------------------------------------
# Prints "TOTAL LOST LOST_CHUNKS EVENT=N EVENT=N..." for bench.data.
count_samples() {
	perf script -i bench.data --show-lost-events -F event 2>/dev/null | awk '
		/PERF_RECORD_LOST lost/ { lost += $3; chunks++; next }
		NF == 1 && $1 ~ /:$/ { ev = $1; sub(/:$/, "", ev); n[ev]++; total++ }
		END {
			printf "%d %d %d", total, lost, chunks
			for (e in n) printf " %s=%d", e, n[e]
			printf "\n"
		}'
}

scale="$SCALE"
record_cmd=""
for attempt in 1 2 3 4 5 6; do
	record_cmd="perf record -e cpu-clock,task-clock --call-graph dwarf -F $RATE -o bench.data -- ./fixtures/threads $scale"
	log "$record_cmd"
	rm -f bench.data bench.data.old
	# shellcheck disable=SC2086
	$record_cmd 2>runs/record.stderr >/dev/null || {
		cat runs/record.stderr >&2
		die "perf record failed"
	}
	cat runs/record.stderr >&2
	read -r n_samples n_lost n_lost_chunks per_event < <(count_samples)
	log "bench.data: $n_samples samples ($per_event), $n_lost lost in $n_lost_chunks chunks"
	if [ "$n_samples" -ge "$MIN_SAMPLES" ]; then
		break
	fi
	[ "$attempt" -lt 6 ] || die "only $n_samples samples after $attempt attempts (scale $scale)"
	scale="$(awk -v s="$scale" 'BEGIN { print s * 2 }')"
	log "fewer than $MIN_SAMPLES samples; retrying with scale $scale"
done
file_bytes="$(stat -c %s bench.data)"

# ---------------------------------------------------------------------------------------------
# 4. Time both sides
# ---------------------------------------------------------------------------------------------
# measure NAME STDIN STDOUT CMD... : runs CMD once under /usr/bin/time, appends
# "WALL_NS MAXRSS_KB TIME_E CPU_S" to runs/NAME.tsv (CPU_S = user + system seconds, %U + %S);
# stderr goes to runs/NAME.stderr.
measure() {
	local name=$1 in=$2 out=$3 status=0 t0 t1 e m u s
	shift 3
	t0=$(date +%s%N)
	/usr/bin/time -f '%e %M %U %S' -o "runs/$name.time" "$@" <"$in" >"$out" 2>"runs/$name.stderr" || status=$?
	t1=$(date +%s%N)
	if [ "$status" -ne 0 ]; then
		printf 'bench-render: error: %s failed (exit %d): %s\n' "$name" "$status" "$*" >&2
		sed 's/^/    /' "runs/$name.stderr" | tail -n 20 >&2
		exit 1
	fi
	read -r e m u s < <(tail -n 1 "runs/$name.time")
	echo "$((t1 - t0)) $m $e $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')" >>"runs/$name.tsv"
}

check_svg() {
	local f=$1 who=$2
	[ -s "$f" ] || die "$who produced an empty or missing $OUT/$f"
	grep -q '<svg' "$f" || die "$who: $OUT/$f does not contain <svg ($(head -c 200 "$f"))"
}

run_cpiflame() {
	measure cpiflame /dev/null cpi.svg "$CPIFLAME" render bench.data --stalls task-clock --cycles cpu-clock
	check_svg cpi.svg cpiflame
}

run_pipeline() {
	measure perf-script /dev/null out.perf perf script -i bench.data
	measure collapse-stalls /dev/null stalls.folded inferno-collapse-perf --event-filter task-clock out.perf
	measure collapse-cycles /dev/null cycles.folded inferno-collapse-perf --event-filter cpu-clock out.perf
	measure diff-folded /dev/null diff.folded inferno-diff-folded -n stalls.folded cycles.folded
	measure flamegraph diff.folded classic.svg inferno-flamegraph
	for f in out.perf stalls.folded cycles.folded diff.folded; do
		[ -s "$f" ] || die "pipeline stage produced an empty $OUT/$f"
	done
	check_svg classic.svg "inferno pipeline"
}

stages=(perf-script collapse-stalls collapse-cycles diff-folded flamegraph)

log "warm-up (untimed): cpiflame and the pipeline once each"
run_cpiflame
run_pipeline
for s in cpiflame "${stages[@]}"; do
	cp "runs/$s.stderr" "runs/$s.warmup.stderr"
	rm -f "runs/$s.tsv"
done

for ((i = 1; i <= RUNS; i++)); do
	# Alternate the order so that neither side always runs right after the other.
	if ((i % 2)); then
		run_cpiflame
		run_pipeline
	else
		run_pipeline
		run_cpiflame
	fi
	log "run $i/$RUNS: cpiflame $(tail -n1 runs/cpiflame.tsv | awk '{printf "%.3f s", $1/1e9}'), pipeline $(
		for s in "${stages[@]}"; do tail -n1 "runs/$s.tsv"; done | awk '{t += $1} END {printf "%.3f s", t/1e9}')"
done

# Pipeline per run: sum of the stage times, max of the stage peaks, sum of the CPU times
# (same columns as the stages' files, column 3 unused).
# shellcheck disable=SC2046
paste -d ' ' $(printf 'runs/%s.tsv ' "${stages[@]}") | awk '{
	t = 0; m = 0; c = 0
	for (i = 1; i <= NF; i += 4) { t += $i; if ($(i+1) > m) m = $(i+1); c += $(i+3) }
	printf "%d %d - %.2f\n", t, m, c
}' >runs/pipeline.tsv

# median FILE COLUMN
median() {
	awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ a[NR] = $1 } END {
		if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
minmax() { awk -v c="$2" 'NR == 1 || $c < lo { lo = $c } NR == 1 || $c > hi { hi = $c } END { printf "%.3f–%.3f", lo / 1e9, hi / 1e9 }' "$1"; }
secs() { awk -v x="$1" 'BEGIN { printf "%.3f", x / 1e9 }'; }
mib() { awk -v x="$1" 'BEGIN { printf "%.1f", x / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

declare -A med_t med_m med_c
for s in cpiflame pipeline "${stages[@]}"; do
	med_t[$s]="$(median "runs/$s.tsv" 1)"
	med_m[$s]="$(median "runs/$s.tsv" 2)"
	med_c[$s]="$(median "runs/$s.tsv" 4)"
done

# Warnings printed by the tools (warm-up run), for the report.
warnings() {
	local f=$1
	if [ -s "$f" ]; then
		tr -s '\n' ' ' <"$f" | sed 's/|/\\|/g; s/ *$//' | cut -c 1-300
	else
		echo "none"
	fi
}

# ---------------------------------------------------------------------------------------------
# 5. Report
# ---------------------------------------------------------------------------------------------
cpu_model="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
cpiflame_version="$("$CPIFLAME" --version)"
git_rev="$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
# inferno 0.12's CLIs have no --version; fall back to cargo's record of the install that provides
# inferno-flamegraph (its root is the parent of its bin/ directory).
inferno_version="$(inferno-flamegraph --version 2>/dev/null || true)"
if [ -z "$inferno_version" ]; then
	inferno_bin="$(command -v inferno-flamegraph)"
	inferno_version="$(cargo install --list --root "$(dirname "$(dirname "$inferno_bin")")" 2>/dev/null |
		awk '/^inferno v/ { sub(/:$/, "", $2); print "inferno " $2; exit }')"
	inferno_version="${inferno_version:-unknown} (\`inferno-flamegraph --version\` is not supported; from \`cargo install --list\`, $inferno_bin)"
fi
perf_version="$(perf --version)"
elapsed=$((SECONDS - script_start))

md="$OUT/bench-render.md"
{
	echo "# cpiflame render vs. perf script + inferno"
	echo
	echo "| | |"
	echo "| --- | --- |"
	echo "| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |"
	echo "| machine | $(nproc) CPUs, ${cpu_model:-unknown CPU}, kernel $(uname -r) |"
	echo "| perf | $perf_version |"
	echo "| inferno | $inferno_version |"
	echo "| cpiflame | $cpiflame_version ($git_rev) |"
	echo "| workload | \`threads $scale\` (fixtures/workloads/threads.c) |"
	echo "| samples | $n_samples ($per_event) |"
	echo "| lost | $n_lost samples in $n_lost_chunks PERF_RECORD_LOST records |"
	echo "| bench.data | $file_bytes bytes ($(mib $((file_bytes / 1024))) MiB) |"
	echo "| out.perf (perf script output) | $(stat -c %s out.perf) bytes, $(wc -l <out.perf) lines |"
	echo "| runs | $RUNS timed (after 1 untimed warm-up each), medians below |"
	echo
	echo "| command | median wall (s) | min–max (s) | median peak RSS (MiB) | median CPU user+sys (s) |"
	echo "| --- | ---: | ---: | ---: | ---: |"
	echo "| **cpiflame render** | **$(secs "${med_t[cpiflame]}")** | $(minmax runs/cpiflame.tsv 1) | **$(mib "${med_m[cpiflame]}")** | ${med_c[cpiflame]} |"
	echo "| **perf script + inferno (sum of stages / max of peaks)** | **$(secs "${med_t[pipeline]}")** | $(minmax runs/pipeline.tsv 1) | **$(mib "${med_m[pipeline]}")** | ${med_c[pipeline]} |"
	for s in "${stages[@]}"; do
		echo "| &nbsp;&nbsp;$s | $(secs "${med_t[$s]}") | $(minmax "runs/$s.tsv" 1) | $(mib "${med_m[$s]}") | ${med_c[$s]} |"
	done
	echo
	echo "| ratio | value |"
	echo "| --- | ---: |"
	echo "| pipeline time / cpiflame time | **$(ratio "${med_t[pipeline]}" "${med_t[cpiflame]}")×** |"
	echo "| pipeline peak RSS / cpiflame peak RSS | **$(ratio "${med_m[pipeline]}" "${med_m[cpiflame]}")×** |"
	echo "| perf script alone / cpiflame time | $(ratio "${med_t[perf-script]}" "${med_t[cpiflame]}")× |"
	echo "| perf script share of pipeline time | $(awk -v a="${med_t[perf-script]}" -v b="${med_t[pipeline]}" 'BEGIN { printf "%.0f%%", 100 * a / b }') |"
	echo
	echo "Commands (run in \`$OUT\`, each under \`/usr/bin/time -f '%e %M %U %S'\`; wall time from a nanosecond clock around it):"
	echo
	echo '```sh'
	echo "$record_cmd"
	echo "# cpiflame"
	echo "$CPIFLAME render bench.data --stalls task-clock --cycles cpu-clock > cpi.svg"
	echo "# the seed's pipeline with inferno"
	echo "perf script -i bench.data > out.perf"
	echo "inferno-collapse-perf --event-filter task-clock out.perf > stalls.folded"
	echo "inferno-collapse-perf --event-filter cpu-clock out.perf > cycles.folded"
	echo "inferno-diff-folded -n stalls.folded cycles.folded > diff.folded"
	echo "inferno-flamegraph < diff.folded > classic.svg"
	echo '```'
	echo
	echo "Warnings (stderr of the warm-up run):"
	echo
	echo "* perf record: $(warnings runs/record.stderr)"
	for s in cpiflame "${stages[@]}"; do
		echo "* $s: $(warnings "runs/$s.warmup.stderr")"
	done
	echo
	echo "SVGs: cpi.svg $(stat -c %s cpi.svg) bytes, classic.svg $(stat -c %s classic.svg) bytes. Script run time up to this table: ${elapsed} s."
} >"$md"

echo
cat "$md"
echo
log "table written to $md (total script time $((SECONDS - script_start)) s)"
