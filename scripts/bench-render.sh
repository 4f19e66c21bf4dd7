#!/usr/bin/env bash
# Benchmark `cpiflame render` against its peers, in one run, on perf.data files recorded here
# with `perf record -e cpu-clock,task-clock --call-graph dwarf`:
#
#   samply     `samply import FILE --save-only -o FILE.samply.json.gz` (unwinds, names nothing)
#   perfparser hotspot's `hotspot-perfparser --input FILE --output /dev/null` (unwinds, names)
#   pipeline   the seed's CPI flame graph pipeline done with inferno: `perf script` once,
#              `inferno-collapse-perf --event-filter` per event, `inferno-diff-folded -n`,
#              `inferno-flamegraph`
#
# cpiflame runs twice in the rotation: `cpiflame` with its cache of decompressed debug
# sections (CPIFLAME_CACHE_DIR=W/cache, filled by the warm-up, as on any run after the first
# with the same libraries), and `cpiflame_cold` with that cache emptied before every run (a
# first run: debug sections decompressed in memory and written to the cache).
#
# Files:
#   deep   fixtures/workloads/deep.c: 2 threads, each 40 frames deep, DEEP_SECS of CPU each
#          (perf's default 8 KiB stack copies; ~2 x 2 x RATE x DEEP_SECS samples)
#   rustc  `rustc` (librustc_driver ~150 MB, libLLVM ~200 MB) compiling a generated library with
#          many generic instantiations (fixtures/workloads/gen-generic-rust.sh RUSTC_N)
#   scaling: deep at SCALE_SAMPLES samples (default 10k, 100k, 1M; smaller stack copies and a
#          higher rate), cpiflame render and, for reference, samply import: time per sample
#          against the smallest file's.
#
# Usage (from anywhere; paths are relative to the repository root):
#   scripts/bench-render.sh
#
# Environment:
#   OUT            output directory (default target/bench)
#   RUNS           timed runs of every tool on deep and rustc (default 5, after 1 untimed warm-up);
#                  medians are reported
#   PEER_TIMEOUT   seconds before a tool (or a pipeline stage) is stopped (default 120); a tool
#                  that times out or fails is not run again on that file and is reported so
#   RATE           perf record -F per event for deep (default 4000)
#   DEEP_SECS      CPU seconds per thread of deep (default 4)
#   RUSTC_RATE     perf record -F per event for rustc (default 2000)
#   RUSTC_N        generator size (default 6); doubled until RUSTC_MIN_SAMPLES (default 10000)
#   SCALE_SAMPLES  sample counts of the scaling run (default "10000 100000 1000000"; empty: skip)
#   SCALE_RATE     perf record -F per event for the scaling run (default 20000)
#   SCALE_STACK    DWARF stack copy size for the scaling run (default 2048: deep's stacks fit)
#   SCALE_RUNS     timed runs of cpiflame render per scaling file (default 3)
#   KEEP           1 keeps the perf.data files and outputs (default: deleted at the end)
#   TOOLS          cargo install root for inferno and samply if they are not on PATH
#                  (default target/bench-tools; binaries in $TOOLS/bin)
#   INFERNO_VERSION, SAMPLY_VERSION  versions for those cargo installs (default: the newest)
#
# Writes OUT/bench-render.md (the tables printed at the end) and OUT/render/runs/ (raw timings,
# one row per run: WALL_NS MAXRSS_KB TIME_E CPU_S, and the stderr of the last run of every tool).
#
# Wall time is measured with `date +%s%N` around `/usr/bin/time -f '%e %M %U %S'`; peak RSS is
# /usr/bin/time's %M. The pipeline's wall time is the sum of its stages (they run one after the
# other) and its peak RSS the largest of its stages' peaks, per run; then the median.
#
# Before every run of every tool the recording and the files its build-id table lists (with
# their separate debug files and the kernel's symbols in perf's cache) are read once: each tool
# starts with its inputs in the page cache, which this VM's kernel otherwise gives back within
# seconds.
set -euo pipefail

script_start=$SECONDS
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

RUNS="${RUNS:-5}"
PEER_TIMEOUT="${PEER_TIMEOUT:-120}"
RATE="${RATE:-4000}"
DEEP_SECS="${DEEP_SECS:-4}"
RUSTC_RATE="${RUSTC_RATE:-2000}"
RUSTC_N="${RUSTC_N:-6}"
RUSTC_MIN_SAMPLES="${RUSTC_MIN_SAMPLES:-10000}"
SCALE_SAMPLES="${SCALE_SAMPLES-10000 100000 1000000}"
SCALE_RATE="${SCALE_RATE:-20000}"
SCALE_STACK="${SCALE_STACK:-2048}"
SCALE_RUNS="${SCALE_RUNS:-3}"
KEEP="${KEEP:-0}"
OUT="${OUT:-target/bench}"
TOOLS="${TOOLS:-target/bench-tools}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-render: error: %s\n' "$*" >&2; exit 1; }

positive() { case "$2" in '' | *[!0-9]* | 0) die "$1 must be a positive integer, got '$2'" ;; esac; }
positive RUNS "$RUNS"
positive PEER_TIMEOUT "$PEER_TIMEOUT"
positive RATE "$RATE"
positive RUSTC_RATE "$RUSTC_RATE"
positive RUSTC_N "$RUSTC_N"
positive RUSTC_MIN_SAMPLES "$RUSTC_MIN_SAMPLES"
positive SCALE_RATE "$SCALE_RATE"
positive SCALE_STACK "$SCALE_STACK"
positive SCALE_RUNS "$SCALE_RUNS"
for n in $SCALE_SAMPLES; do positive SCALE_SAMPLES "$n"; done
awk -v s="$DEEP_SECS" 'BEGIN { exit !(s + 0 > 0) }' || die "DEEP_SECS must be a positive number, got '$DEEP_SECS'"

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
command -v timeout >/dev/null 2>&1 || apt_install coreutils
command -v rustc >/dev/null 2>&1 || die "rustc not found on PATH (install Rust with rustup)"

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
if ! command -v samply >/dev/null 2>&1; then
	log "cargo install samply --locked --root $TOOLS ${SAMPLY_VERSION:+--version $SAMPLY_VERSION}"
	cargo install samply --locked --root "$TOOLS" ${SAMPLY_VERSION:+--version "$SAMPLY_VERSION"}
	command -v samply >/dev/null 2>&1 || die "cargo install samply did not provide samply"
fi
find_perfparser() {
	command -v hotspot-perfparser 2>/dev/null && return
	dpkg -L hotspot 2>/dev/null | grep '/hotspot-perfparser$' | head -n 1
}
PERFPARSER="$(find_perfparser || true)"
if [ -z "$PERFPARSER" ]; then
	apt_install hotspot
	PERFPARSER="$(find_perfparser || true)"
	[ -n "$PERFPARSER" ] || die "apt-get install hotspot did not provide hotspot-perfparser (dpkg -L hotspot)"
fi
for t in "${inferno_tools[@]}" samply; do
	log "$t: $(command -v "$t")"
done
log "hotspot-perfparser: $PERFPARSER"

# ---------------------------------------------------------------------------------------------
# 2. Build cpiflame and the workloads
# ---------------------------------------------------------------------------------------------
log "cargo build --release -p cpiflame"
cargo build --release -p cpiflame
[ -x "$CPIFLAME" ] || die "cargo build did not produce $CPIFLAME"

W="$OUT/render"
mkdir -p "$W/runs"
cd "$W"
rm -rf cache cold-cache
rm -f runs/*
log "gcc -O2 -g -fomit-frame-pointer -pthread -o $W/deep fixtures/workloads/deep.c"
gcc -O2 -g -fomit-frame-pointer -pthread -o deep "$root/fixtures/workloads/deep.c"

# ---------------------------------------------------------------------------------------------
# 3. Measuring
# ---------------------------------------------------------------------------------------------
# Prints "TOTAL LOST EVENT=N EVENT=N..." for a perf.data file (perf script prints no callchain
# with -F event, so it reads no debug info and is quick even on the rustc file).
count_samples() {
	timeout "$PEER_TIMEOUT" perf script -i "$1" --show-lost-events -F event 2>/dev/null | awk '
		/PERF_RECORD_LOST lost/ { lost += $3; next }
		NF == 1 && $1 ~ /:$/ { ev = $1; sub(/:$/, "", ev); n[ev]++; total++ }
		END {
			printf "%d %d", total, lost
			for (e in n) printf " %s=%d", e, n[e]
			printf "\n"
		}'
}

# record NAME ARGS...: `perf record -o NAME.data -e cpu-clock,task-clock ARGS...` (ARGS end with
# -- and the workload); sets samples, lost, per_event, bytes, record_cmd and record_secs[NAME].
declare -A samples lost per_event bytes record_cmd record_secs workload
record() {
	local name=$1 t0 n l e
	shift
	record_cmd[$name]="perf record -o $name.data -e cpu-clock,task-clock $*"
	log "${record_cmd[$name]}"
	rm -f "$name.data" "$name.data.old"
	t0=$SECONDS
	# perf record exits with the workload's status; a missing file is the failure that matters.
	perf record -o "$name.data" -e cpu-clock,task-clock "$@" >/dev/null 2>"runs/$name.record.stderr" || true
	record_secs[$name]=$((SECONDS - t0))
	# Written back now, so that no later timing shares the disk with the write-back.
	sync "$name.data"
	[ -s "$name.data" ] || die "perf record produced no $W/$name.data: $(tail -n 3 "runs/$name.record.stderr")"
	read -r n l e < <(count_samples "$name.data")
	[ "${n:-0}" -gt 0 ] || die "perf script -F event counted no samples in $W/$name.data (or took over $PEER_TIMEOUT s)"
	samples[$name]=$n
	lost[$name]=$l
	per_event[$name]=$e
	bytes[$name]=$(stat -c %s "$name.data")
	log "$name.data: $n samples ($e), $l lost, ${bytes[$name]} bytes, recorded in ${record_secs[$name]} s"
}

# measure NAME STDOUT CMD...: runs CMD once under timeout and /usr/bin/time, appends
# "WALL_NS MAXRSS_KB TIME_E CPU_S" to runs/NAME.tsv; stderr goes to runs/NAME.stderr.
# Returns CMD's exit status (124: timed out).
measure() {
	local name=$1 out=$2 status=0 t0 t1 e m u s
	shift 2
	t0=$(date +%s%N)
	timeout -k 5 "$PEER_TIMEOUT" /usr/bin/time -f '%e %M %U %S' -o "runs/$name.time" "$@" \
		</dev/null >"$out" 2>"runs/$name.stderr" || status=$?
	t1=$(date +%s%N)
	[ "$status" -eq 0 ] || return "$status"
	read -r e m u s < <(tail -n 1 "runs/$name.time")
	echo "$((t1 - t0)) $m $e $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')" >>"runs/$name.tsv"
}

# state[FILE.TOOL]: "ok", "timeout after N s" or "failed (exit N): last line of stderr".
declare -A state
# fail KEY NAME STATUS: records why a tool stopped on a file.
fail() {
	local key=$1 name=$2 status=$3 last
	if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
		state[$key]="timeout after $PEER_TIMEOUT s"
	else
		last="$(grep -v '^Command exited with non-zero status' "runs/$name.stderr" 2>/dev/null | tail -n 1 | cut -c 1-200)"
		state[$key]="failed (exit $status): ${last:-no stderr}"
	fi
	log "$name: ${state[$key]}"
}

check_out() {
	local f=$1 who=$2 pattern=$3
	[ -s "$f" ] || die "$who produced an empty or missing $W/$f"
	[ -z "$pattern" ] || grep -q "$pattern" "$f" || die "$who: $W/$f does not contain $pattern ($(head -c 200 "$f"))"
}

# run_TOOL FILE: one run of TOOL on FILE.data.
run_cpiflame() {
	local f=$1 st=0
	measure "$f.cpiflame" "$f.cpi.svg" env CPIFLAME_CACHE_DIR="$W/cache" \
		"$CPIFLAME" render "$f.data" --stalls task-clock --cycles cpu-clock || st=$?
	[ "$st" -eq 0 ] || { fail "$f.cpiflame" "$f.cpiflame" "$st"; return; }
	check_out "$f.cpi.svg" cpiflame '<svg'
}
# The same with the cache emptied first: a first run.
run_cpiflame_cold() {
	local f=$1 st=0
	rm -rf "$W/cold-cache"
	measure "$f.cpiflame_cold" "$f.cold.svg" env CPIFLAME_CACHE_DIR="$W/cold-cache" \
		"$CPIFLAME" render "$f.data" --stalls task-clock --cycles cpu-clock || st=$?
	[ "$st" -eq 0 ] || { fail "$f.cpiflame_cold" "$f.cpiflame_cold" "$st"; return; }
	cmp -s "$f.cold.svg" "$f.cpi.svg" || [ ! -s "$f.cpi.svg" ] ||
		die "cpiflame with an empty cache drew other bytes than with a filled one ($W/$f.cold.svg)"
}
run_samply() {
	local f=$1 st=0
	measure "$f.samply" /dev/null samply import "$f.data" --save-only -o "$f.samply.json.gz" || st=$?
	[ "$st" -eq 0 ] || { fail "$f.samply" "$f.samply" "$st"; return; }
	check_out "$f.samply.json.gz" samply ''
}
run_perfparser() {
	local f=$1 st=0
	measure "$f.perfparser" /dev/null "$PERFPARSER" --input "$f.data" --output /dev/null || st=$?
	[ "$st" -eq 0 ] || fail "$f.perfparser" "$f.perfparser" "$st"
}
stages=(perf-script collapse-stalls collapse-cycles diff-folded flamegraph)
run_pipeline() {
	local f=$1 st=0 s
	measure "$f.perf-script" "$f.out.perf" perf script -i "$f.data" || st=$?
	[ "$st" -eq 0 ] || { fail "$f.pipeline" "$f.perf-script" "$st"; return; }
	measure "$f.collapse-stalls" "$f.stalls.folded" inferno-collapse-perf --event-filter task-clock "$f.out.perf" || st=$?
	[ "$st" -eq 0 ] || { fail "$f.pipeline" "$f.collapse-stalls" "$st"; return; }
	measure "$f.collapse-cycles" "$f.cycles.folded" inferno-collapse-perf --event-filter cpu-clock "$f.out.perf" || st=$?
	[ "$st" -eq 0 ] || { fail "$f.pipeline" "$f.collapse-cycles" "$st"; return; }
	measure "$f.diff-folded" "$f.diff.folded" inferno-diff-folded -n "$f.stalls.folded" "$f.cycles.folded" || st=$?
	[ "$st" -eq 0 ] || { fail "$f.pipeline" "$f.diff-folded" "$st"; return; }
	measure "$f.flamegraph" "$f.classic.svg" inferno-flamegraph "$f.diff.folded" || st=$?
	[ "$st" -eq 0 ] || { fail "$f.pipeline" "$f.flamegraph" "$st"; return; }
	for s in out.perf stalls.folded cycles.folded diff.folded; do
		check_out "$f.$s" "pipeline stage" ''
	done
	check_out "$f.classic.svg" "inferno pipeline" '<svg'
}

tools=(cpiflame cpiflame_cold samply perfparser pipeline)

# inputs FILE: writes runs/FILE.inputs, the files the tools read for FILE.data: the recording,
# the binaries its build-id table lists, their separate debug files and the kernel's symbols
# in perf's build-id cache.
inputs() {
	local f=$1 id path
	{
		echo "$f.data"
		perf buildid-list -i "$f.data" 2>/dev/null | while read -r id path; do
			case "$path" in
			'[kernel.kallsyms]') echo "$HOME/.debug/[kernel.kallsyms]/$id/kallsyms" ;;
			/*) echo "$path" ;;
			esac
			echo "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
		done
		# Executables mapped without a build id are not in the table (rustup's rustc and
		# its libraries): from the mmap events (-G: no call chains to unwind).
		perf script -i "$f.data" -G --show-mmap-events -F pid 2>/dev/null |
			sed -n 's/.*PERF_RECORD_MMAP.* r-xp \(\/.*\)$/\1/p' | sort -u
	} | sort -u | while read -r path; do [ -f "$path" ] && echo "$path"; done >"runs/$f.inputs" || true
}
# warm FILE: reads FILE's inputs once, so that every tool starts with them in the page cache
# (this VM's kernel gives page cache back within seconds, which would otherwise time disk
# reads, and more of them for the tools that read the binaries).
warm() {
	local path
	while read -r path; do cat -- "$path" >/dev/null 2>&1 || true; done <"runs/$1.inputs"
}

# bench FILE: a warm-up and RUNS timed runs of every tool still "ok", in a rotating order.
bench() {
	local f=$1 i j t line
	for t in "${tools[@]}"; do state[$f.$t]=ok; done
	inputs "$f"
	for ((i = 0; i <= RUNS; i++)); do
		line=""
		for ((j = 0; j < ${#tools[@]}; j++)); do
			t=${tools[$(((i + j) % ${#tools[@]}))]}
			[ "${state[$f.$t]}" = ok ] || continue
			warm "$f"
			"run_$t" "$f"
		done
		if [ "$i" -eq 0 ]; then
			# The warm-up's timings are dropped; its stderr is kept for the report.
			for t in cpiflame samply perfparser "${stages[@]}"; do
				[ -f "runs/$f.$t.stderr" ] && cp "runs/$f.$t.stderr" "runs/$f.$t.warmup.stderr"
				rm -f "runs/$f.$t.tsv"
			done
			log "$f: warm-up done"
			continue
		fi
		for t in cpiflame cpiflame_cold samply perfparser; do
			[ "${state[$f.$t]}" = ok ] && line+=" $t $(tail -n1 "runs/$f.$t.tsv" | awk '{printf "%.3f s", $1/1e9}')"
		done
		log "$f run $i/$RUNS:$line"
	done
	if [ "${state[$f.pipeline]}" = ok ]; then
		# Pipeline per run: sum of the stage times, max of the stage peaks, sum of the CPU times.
		# The sum printed with %.0f, not %d: mawk's %d stops at 2^31 - 1 (nanoseconds: a
		# pipeline of over 2.147 s read 2.147 s).
		# shellcheck disable=SC2046
		paste -d ' ' $(printf "runs/$f.%s.tsv " "${stages[@]}") | awk '{
			t = 0; m = 0; c = 0
			for (i = 1; i <= NF; i += 4) { t += $i; if ($(i+1) > m) m = $(i+1); c += $(i+3) }
			printf "%.0f %d - %.2f\n", t, m, c
		}' >"runs/$f.pipeline.tsv"
	fi
}

# median FILE COLUMN
median() {
	awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ a[NR] = $1 } END {
		if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
secs() { awk -v x="$1" 'BEGIN { printf "%.3f", x / 1e9 }'; }
mib() { awk -v x="$1" 'BEGIN { printf "%.1f", x / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# target VALUE OP LIMIT: "met" or "**not met**"
target() { awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { ok = (op == ">=") ? v >= l : v <= l; print ok ? "met" : "**not met**" }'; }

# ---------------------------------------------------------------------------------------------
# 4. The two kinds of file
# ---------------------------------------------------------------------------------------------
record deep --call-graph dwarf -F "$RATE" -- ./deep "$DEEP_SECS"
workload[deep]="\`deep $DEEP_SECS\` (fixtures/workloads/deep.c: 2 threads, recursion 40 deep)"

n=$RUSTC_N
for attempt in 1 2 3 4; do
	log "fixtures/workloads/gen-generic-rust.sh $n generic.rs"
	bash "$root/fixtures/workloads/gen-generic-rust.sh" "$n" generic.rs
	record rustc --call-graph dwarf -F "$RUSTC_RATE" -- rustc --edition 2021 --crate-type lib -C opt-level=1 -o generic.rlib generic.rs
	[ -s generic.rlib ] || die "rustc did not build generic.rlib: $(tail -n 3 runs/rustc.record.stderr)"
	[ "${samples[rustc]}" -ge "$RUSTC_MIN_SAMPLES" ] && break
	[ "$attempt" -lt 4 ] || die "only ${samples[rustc]} samples of rustc after $attempt attempts (RUSTC_N=$n)"
	n=$((n * 2))
	log "fewer than $RUSTC_MIN_SAMPLES samples; retrying with RUSTC_N=$n"
done
rustc_version="$(rustc --version)"
driver="$(find "$(rustc --print sysroot)/lib" -maxdepth 1 -name 'librustc_driver-*.so' | head -n 1)"
workload[rustc]="\`rustc -C opt-level=1\` on \`gen-generic-rust.sh $n\` ($rustc_version; $(basename "$driver") $(mib $(($(stat -c %s "$driver") / 1024))) MiB)"

for f in deep rustc; do
	log "timing on $f.data"
	bench "$f"
done

# ---------------------------------------------------------------------------------------------
# 5. Scaling: cpiflame render on the same workload at growing sample counts
# ---------------------------------------------------------------------------------------------
scale_names=()
for target_n in $SCALE_SAMPLES; do
	f="scale$target_n"
	# Samples = 2 threads x 2 events x rate x CPU seconds per thread.
	s="$(awk -v n="$target_n" -v r="$SCALE_RATE" 'BEGIN { printf "%.3f", n / (4 * r) }')"
	record "$f" --call-graph "dwarf,$SCALE_STACK" -F "$SCALE_RATE" -- ./deep "$s"
	state[$f.cpiflame]=ok
	# samply alongside, for reference: a peer's fixed cost spread over the same sizes.
	state[$f.samply]=ok
	inputs "$f"
	for ((i = 0; i <= SCALE_RUNS; i++)); do
		for t in cpiflame samply; do
			[ "${state[$f.$t]}" = ok ] || continue
			warm "$f"
			"run_$t" "$f"
			[ "$i" -gt 0 ] || rm -f "runs/$f.$t.tsv"
		done
		[ "${state[$f.cpiflame]}" = ok ] || break
	done
	[ "${state[$f.cpiflame]}" != ok ] || log "$f: cpiflame render median $(secs "$(median "runs/$f.cpiflame.tsv" 1)") s"
	scale_names+=("$f")
	[ "$KEEP" = 1 ] || rm -f "$f.data" "$f.cpi.svg" "$f.samply.json.gz"
done

# ---------------------------------------------------------------------------------------------
# 6. Report
# ---------------------------------------------------------------------------------------------
declare -A med_t med_m
for f in deep rustc; do
	for t in "${tools[@]}"; do
		[ "${state[$f.$t]}" = ok ] || continue
		med_t[$f.$t]="$(median "runs/$f.$t.tsv" 1)"
		med_m[$f.$t]="$(median "runs/$f.$t.tsv" 2)"
	done
done
cell() {
	local k=$1
	if [ "${state[$k]}" = ok ]; then
		echo "$(secs "${med_t[$k]}") s, $(mib "${med_m[$k]}") MiB"
	else
		echo "${state[$k]//|/\\|}"
	fi
}
# speed F PEER LIMIT [CPIFLAME]: "PEER time / cpiflame time" with the verdict against LIMIT
# (≥); CPIFLAME is the tool (cpiflame, or cpiflame_cold for the empty cache).
speed() {
	local f=$1 p=$2 limit=$3 c=${4:-cpiflame} r
	if [ "${state[$f.$c]}" != ok ]; then
		echo "– (cpiflame ${state[$f.$c]})"
	elif [ "${state[$f.$p]}" = ok ]; then
		r="$(ratio "${med_t[$f.$p]}" "${med_t[$f.$c]}")"
		echo "$r× ($(target "$r" '>=' "$limit"))"
	elif [ "${state[$f.$p]#timeout}" != "${state[$f.$p]}" ]; then
		r="$(ratio "$((PEER_TIMEOUT * 1000000000))" "${med_t[$f.$c]}")"
		echo "> $r× (met: $p timed out)"
	else
		echo "– ($p failed)"
	fi
}
memory() {
	local f=$1 c=${2:-cpiflame} r
	if [ "${state[$f.$c]}" = ok ] && [ "${state[$f.samply]}" = ok ]; then
		r="$(ratio "${med_m[$f.$c]}" "${med_m[$f.samply]}")"
		echo "$r× ($(target "$r" '<=' 0.5))"
	else
		echo "–"
	fi
}
warnings() {
	if [ -s "$1" ]; then
		grep -v '^[[:space:]]*$' "$1" | sort | uniq -c | sort -rn | head -n 5 | awk '{ $1 = $1 "×"; print }' | tr '\n' ';' |
			sed 's/|/\\|/g; s/;$//; s/;/; /g' | cut -c 1-400
	else
		echo "none"
	fi
}

cpu_model="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
git_rev="$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
inferno_version="$(cargo install --list --root "$(dirname "$(dirname "$(command -v inferno-flamegraph)")")" 2>/dev/null |
	awk '/^inferno v/ { sub(/:$/, "", $2); print $2; exit }')"
hotspot_version="$(dpkg-query -W -f '${Version}' hotspot 2>/dev/null || "$PERFPARSER" --version 2>/dev/null | tail -n 1)"
elapsed=$((SECONDS - script_start))

md="$OUT/bench-render.md"
{
	echo "# cpiflame render vs. samply import, hotspot's perfparser, perf script + inferno"
	echo
	echo "| | |"
	echo "| --- | --- |"
	echo "| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average at the end $(cut -d ' ' -f 1-3 /proc/loadavg) |"
	echo "| machine | $(nproc) CPUs, ${cpu_model:-unknown CPU}, kernel $(uname -r) |"
	echo "| cpiflame | $("$CPIFLAME" --version) ($git_rev) |"
	echo "| peers | $(perf --version); $(samply --version); hotspot $hotspot_version; inferno ${inferno_version:-unknown} |"
	echo "| runs | $RUNS timed after 1 untimed warm-up, medians; timeout $PEER_TIMEOUT s per tool or stage |"
	echo
	echo "| file | workload | samples | lost | size | record command |"
	echo "| --- | --- | ---: | ---: | ---: | --- |"
	for f in deep rustc; do
		echo "| $f.data | ${workload[$f]} | ${samples[$f]} (${per_event[$f]}) | ${lost[$f]} | $(mib $((bytes[$f] / 1024))) MiB | \`${record_cmd[$f]}\` |"
	done
	echo
	echo "Median wall time and peak RSS:"
	echo
	echo "| file | cpiflame render | cpiflame render, empty cache | samply import | hotspot perfparser | perf script + inferno |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: |"
	for f in deep rustc; do
		echo "| $f | **$(cell "$f.cpiflame")** | $(cell "$f.cpiflame_cold") | $(cell "$f.samply") | $(cell "$f.perfparser") | $(cell "$f.pipeline") |"
	done
	echo
	echo "Targets (peer time / cpiflame time; cpiflame peak RSS / samply's; a first run, with the cache empty, ≥ 1.5× samply):"
	echo
	echo "| file | vs samply (≥ 2×) | vs perfparser (≥ 10×) | vs perf script + inferno (≥ 15×) | RSS vs samply (≤ 0.5×) |"
	echo "| --- | ---: | ---: | ---: | ---: |"
	for f in deep rustc; do
		echo "| $f | $(speed "$f" samply 2) | $(speed "$f" perfparser 10) | $(speed "$f" pipeline 15) | $(memory "$f") |"
		echo "| $f, empty cache | $(speed "$f" samply 1.5 cpiflame_cold) | $(speed "$f" perfparser 10 cpiflame_cold) | $(speed "$f" pipeline 15 cpiflame_cold) | $(memory "$f" cpiflame_cold) |"
	done
	if [ "${#scale_names[@]}" -gt 0 ]; then
		base=""
		echo
		echo "Scaling: \`cpiflame render\` (its cache filled) on \`deep\` recorded with \`--call-graph dwarf,$SCALE_STACK -F $SCALE_RATE\`, median of $SCALE_RUNS runs after a warm-up. \"per sample vs first\" is the time per sample over the first file's (linear: 1 ± 0.2; below means a fixed cost spread thinner); \"marginal\" is the extra time per extra sample against the previous file (the fixed cost taken out). samply import ran on the same files, in turn with cpiflame, for reference."
		echo
		echo "| samples | lost | file size | record (s) | render wall (s) | peak RSS (MiB) | µs per sample | per sample vs first | linear vs first (±20%) | per sample vs previous | marginal µs per sample | samply import wall (s), RSS (MiB) | samply per sample vs first |"
		echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"
		prev_t="" prev_n="" prev_per="" sbase=""
		for f in "${scale_names[@]}"; do
			if [ "${state[$f.cpiflame]}" != ok ]; then
				echo "| ${samples[$f]} | ${lost[$f]} | $(mib $((bytes[$f] / 1024))) MiB | ${record_secs[$f]} | ${state[$f.cpiflame]} | | | | | | | | |"
				continue
			fi
			t="$(median "runs/$f.cpiflame.tsv" 1)"
			m="$(median "runs/$f.cpiflame.tsv" 2)"
			per="$(awk -v t="$t" -v n="${samples[$f]}" 'BEGIN { printf "%.3f", t / 1000 / n }')"
			[ -n "$base" ] || base=$per
			rel="$(ratio "$per" "$base")"
			if [ -n "$prev_t" ]; then
				lin="$(awk -v r="$rel" 'BEGIN { print (r < 0.8) ? "**no**: below (fixed cost of the first spread thinner)" : (r > 1.2) ? "**no**: above" : "yes" }')"
				vs_prev="$(ratio "$per" "$prev_per")×"
			else
				lin="(reference)" vs_prev="–"
			fi
			if [ -n "$prev_t" ]; then
				marg="$(awk -v t="$t" -v p="$prev_t" -v n="${samples[$f]}" -v q="$prev_n" 'BEGIN { printf "%.3f", (t - p) / 1000 / (n - q) }')"
			else
				marg="–"
			fi
			if [ "${state[$f.samply]}" = ok ]; then
				st="$(median "runs/$f.samply.tsv" 1)"
				sper="$(awk -v t="$st" -v n="${samples[$f]}" 'BEGIN { printf "%.3f", t / 1000 / n }')"
				[ -n "$sbase" ] || sbase=$sper
				scell="$(secs "$st"), $(mib "$(median "runs/$f.samply.tsv" 2)")"
				srel="$(ratio "$sper" "$sbase")×"
			else
				scell="${state[$f.samply]}" srel=""
			fi
			echo "| ${samples[$f]} | ${lost[$f]} | $(mib $((bytes[$f] / 1024))) MiB | ${record_secs[$f]} | $(secs "$t") | $(mib "$m") | $per | ${rel}× | $lin | $vs_prev | $marg | $scell | $srel |"
			prev_t=$t prev_n=${samples[$f]} prev_per=$per
		done
	fi
	echo
	echo "Commands (run in \`$W\`, each under \`timeout $PEER_TIMEOUT /usr/bin/time -f '%e %M %U %S'\`):"
	echo
	echo '```sh'
	echo "CPIFLAME_CACHE_DIR=cache cpiflame render F.data --stalls task-clock --cycles cpu-clock > F.cpi.svg"
	echo "rm -rf cold-cache; CPIFLAME_CACHE_DIR=cold-cache cpiflame render F.data --stalls task-clock --cycles cpu-clock > F.cold.svg"
	echo "samply import F.data --save-only -o F.samply.json.gz"
	echo "$PERFPARSER --input F.data --output /dev/null"
	echo "perf script -i F.data > F.out.perf"
	echo "inferno-collapse-perf --event-filter task-clock F.out.perf > F.stalls.folded"
	echo "inferno-collapse-perf --event-filter cpu-clock F.out.perf > F.cycles.folded"
	echo "inferno-diff-folded -n F.stalls.folded F.cycles.folded > F.diff.folded"
	echo "inferno-flamegraph F.diff.folded > F.classic.svg"
	echo '```'
	echo
	echo "Stderr of the warm-up runs (most frequent lines):"
	echo
	for f in deep rustc; do
		for t in cpiflame samply perfparser perf-script; do
			[ -f "runs/$f.$t.warmup.stderr" ] && echo "* $f, $t: $(warnings "runs/$f.$t.warmup.stderr")"
		done
	done
	echo
	echo "Script run time up to this table: ${elapsed} s. \`record\` against \`perf record\`: \`scripts/bench-record.sh\`."
} >"$md"

if [ "$KEEP" != 1 ]; then
	rm -f ./*.data ./*.data.old ./*.out.perf ./*.folded ./*.svg ./*.samply.json.gz generic.rlib
fi

echo
cat "$md"
echo
log "table written to $md (total script time $((SECONDS - script_start)) s)"
