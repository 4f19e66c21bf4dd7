#!/usr/bin/env bash
# Benchmark `cpiflame record` against `perf record` on a fixed-work workload
# (fixtures/workloads/threads.c), with the same events, the same sampling period and the same
# DWARF stack copy size for both recorders, plus cpiflame with its own defaults.
#
# Usage (from anywhere; paths are relative to the repository root):
#   scripts/bench-record.sh
#
# Environment:
#   OUT        output directory (default target/bench)
#   RUNS       timed runs of every command of every configuration (default 5); medians reported
#   PERIOD     sampling period given to both recorders with -c (default 1000000: cpu-clock and
#              task-clock count nanoseconds, so 1000000 is 1 kHz, the same as -F 1000)
#   SCALE      workload scale (`threads SCALE`); default: calibrated so that the bare workload
#              takes about BARE_SECS seconds of wall time
#   BARE_SECS  target bare wall time for the calibration (default 2)
#
# Configurations (each: RUNS rounds of bare workload, cpiflame record, perf record and
# perf record --no-bpf-event, in a rotating order so that no command always runs right after the
# same other one):
#   c8    -e cpu-clock            --call-graph dwarf,8192  (perf's default stack size)
#   c32   -e cpu-clock            cpiflame --call-graph dwarf (32768) vs perf dwarf,32768
#   p8    -e cpu-clock,task-clock --call-graph dwarf,8192  (the CPI pair without a PMU)
#   p32   -e cpu-clock,task-clock cpiflame --call-graph dwarf vs perf dwarf,32768
#   def   cpiflame with no -e/-c/-F/--call-graph (its defaults: cpu-clock every 250000 ns = 4 kHz,
#         32 KiB stack copies, when there is no PMU) vs perf with those settings spelled out
#
# perf record is run as asked for the comparison (`perf record -N -q ...`) and once more with
# --no-bpf-event: perf 6.1 polls a BPF side-band event list on a thread whose poll timeout is
# 1 s, and joining it at exit adds up to ~1 s of wall time (visible on `perf record -- true`);
# the second row shows perf without that fixed cost. Only the first one's files are read back
# with fold/script (the format is the same).
#
# Writes into OUT: fixtures/ (the built workloads), record/ (the last run's data files, folded
# and `perf script` outputs, runs/ with raw per-run rows and the last run's stderr of every
# command) and bench-record.md (the report printed at the end).
#
# Wall time is measured with `date +%s%N` around `/usr/bin/time -f '%e %M %U %S'`; peak RSS is
# /usr/bin/time's %M, which for a recorder is the largest of the recorder and the workload it
# ran (the workload's is ~1-2 MiB). "extra CPU" is the recorder's user+sys time (which includes
# its workload's) minus the bare workload's, medians of each.
# Samples and lost samples are read back from each file with
# `perf script --show-lost-events -F event` (samples: one line each; lost: the sum of the
# PERF_RECORD_LOST records); cpiflame's own counts (its stderr) and perf's LOST_SAMPLES
# (`perf report --stats`) are compared against them.
set -euo pipefail

script_start=$SECONDS
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

RUNS="${RUNS:-5}"
PERIOD="${PERIOD:-1000000}"
SCALE="${SCALE:-}"
BARE_SECS="${BARE_SECS:-2}"
OUT="${OUT:-target/bench}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-record: error: %s\n' "$*" >&2; exit 1; }

case "$RUNS" in '' | *[!0-9]* | 0) die "RUNS must be a positive integer, got '$RUNS'" ;; esac
case "$PERIOD" in '' | *[!0-9]* | 0) die "PERIOD must be a positive integer, got '$PERIOD'" ;; esac

# ---------------------------------------------------------------------------------------------
# 1. Tools
# ---------------------------------------------------------------------------------------------
# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
bench_paths
install_bench_tools

# ---------------------------------------------------------------------------------------------
# 2. Build cpiflame and the workload
# ---------------------------------------------------------------------------------------------
build_cpiflame
build_fixtures threads

# Everything below runs in W, so that the commands in the report are the literal ones.
W="$OUT/record"
mkdir -p "$W/runs"
cd "$W"
rm -f runs/* ./*.data ./*.data.old ./*.folded ./*.script

# ---------------------------------------------------------------------------------------------
# 3. Helpers
# ---------------------------------------------------------------------------------------------
# measure NAME CMD... : runs CMD once under /usr/bin/time; sets M_WALL (ns), M_RSS (KiB) and
# M_CPU (user + sys seconds); stdout and stderr go to runs/NAME.stdout and runs/NAME.stderr.
measure() {
	local name=$1 status=0 t0 t1 e u s
	shift
	t0=$(date +%s%N)
	/usr/bin/time -f '%e %M %U %S' -o "runs/$name.time" "$@" </dev/null >"runs/$name.stdout" 2>"runs/$name.stderr" || status=$?
	t1=$(date +%s%N)
	if [ "$status" -ne 0 ]; then
		printf 'bench-record: error: %s failed (exit %d): %s\n' "$name" "$status" "$*" >&2
		sed 's/^/    /' "runs/$name.stderr" | tail -n 20 >&2
		exit 1
	fi
	read -r e M_RSS u s < <(tail -n 1 "runs/$name.time")
	M_WALL=$((t1 - t0))
	M_CPU="$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')"
}

# count_file FILE: prints "SAMPLES LOST LOST_RECORDS EVENT=N,EVENT=N" read back with perf script.
count_file() {
	perf script -i "$1" --show-lost-events -F event 2>/dev/null | awk '
		/PERF_RECORD_LOST lost/ { lost += $3; chunks++; next }
		NF == 1 && $1 ~ /:$/ { ev = $1; sub(/:$/, "", ev); n[ev]++; total++ }
		END {
			printf "%d %d %d ", total, lost, chunks
			sep = ""
			for (e in n) { printf "%s%s=%d", sep, e, n[e]; sep = "," }
			if (sep == "") printf "none"
			printf "\n"
		}'
}

# perf_stats_lost FILE: perf's own per-event LOST_SAMPLES total (`perf report --stats`).
perf_stats_lost() {
	perf report --stats -i "$1" 2>/dev/null | awk '
		/stats:$/ { per_event = ($1 != "Aggregated"); next }
		per_event && /LOST_SAMPLES events:/ { s += $3 }
		END { print s + 0 }'
}

# cpiflame's stderr: "cpiflame: wrote FILE: N samples (...)" and, when any, "lost N of M samples".
cf_samples() { sed -n 's/^cpiflame: wrote .*: \([0-9][0-9]*\) samples.*/\1/p' "$1" | tail -n 1; }
cf_lost() { sed -n 's/.*warning: lost \([0-9][0-9]*\) of [0-9]* samples.*/\1/p' "$1" | tail -n 1; }

# ---------------------------------------------------------------------------------------------
# 4. Workload scale
# ---------------------------------------------------------------------------------------------
if [ -z "$SCALE" ]; then
	log "calibrating the workload scale for ~${BARE_SECS} s bare (../fixtures/threads 1, twice)"
	measure calibrate ../fixtures/threads 1 # warm-up (page cache)
	measure calibrate ../fixtures/threads 1
	SCALE="$(awk -v t="$M_WALL" -v want="$BARE_SECS" 'BEGIN { s = want * 1e9 / t; printf "%.2f", s }')"
	log "threads 1 took $(awk -v t="$M_WALL" 'BEGIN { printf "%.3f", t / 1e9 }') s; scale $SCALE"
fi
WORKLOAD="../fixtures/threads $SCALE"

# ---------------------------------------------------------------------------------------------
# 5. Configurations
# ---------------------------------------------------------------------------------------------
configs=(c8 c32 p8 p32 def)
declare -A title cf_args perf_args fold_args
title[c8]="cpu-clock, 1 sample per ${PERIOD} ns, DWARF stack copy 8192 B (perf's default)"
cf_args[c8]="-e cpu-clock -c $PERIOD --call-graph dwarf,8192"
perf_args[c8]="-e cpu-clock -c $PERIOD --call-graph dwarf,8192"
title[c32]="cpu-clock, 1 sample per ${PERIOD} ns, DWARF stack copy 32768 B (cpiflame's default)"
cf_args[c32]="-e cpu-clock -c $PERIOD --call-graph dwarf"
perf_args[c32]="-e cpu-clock -c $PERIOD --call-graph dwarf,32768"
title[p8]="cpu-clock + task-clock (the CPI pair without a PMU), 1 sample per ${PERIOD} ns each, DWARF 8192 B"
cf_args[p8]="-e cpu-clock,task-clock -c $PERIOD --call-graph dwarf,8192"
perf_args[p8]="-e cpu-clock,task-clock -c $PERIOD --call-graph dwarf,8192"
title[p32]="cpu-clock + task-clock, 1 sample per ${PERIOD} ns each, DWARF 32768 B"
cf_args[p32]="-e cpu-clock,task-clock -c $PERIOD --call-graph dwarf"
perf_args[p32]="-e cpu-clock,task-clock -c $PERIOD --call-graph dwarf,32768"
title[def]="cpiflame's defaults (no -e/-c/-F/--call-graph) vs perf given the same settings (cpu-clock every 250000 ns = 4 kHz, DWARF 32768 B)"
cf_args[def]=""
perf_args[def]="-e cpu-clock -c 250000 --call-graph dwarf,32768"
for k in "${configs[@]}"; do fold_args[$k]=""; done
fold_args[p8]="--stalls task-clock --cycles cpu-clock"
fold_args[p32]="--stalls task-clock --cycles cpu-clock"

cf_cmd() { echo "$CPIFLAME record -o cf-$1.data ${cf_args[$1]:+${cf_args[$1]} }-- $WORKLOAD"; }
perf_cmd() { echo "perf record -N -q -o perf-$1.data ${perf_args[$1]} -- $WORKLOAD"; }
perfnb_cmd() { echo "perf record -N -q --no-bpf-event -o perfnb-$1.data ${perf_args[$1]} -- $WORKLOAD"; }

# Rows of runs/KEY-TOOL.tsv:
#   WALL_NS RSS_KB CPU_S FILE_BYTES SAMPLES LOST LOST_RECORDS TOOL_SAMPLES TOOL_LOST PER_EVENT
# (bare rows: WALL_NS RSS_KB CPU_S). TOOL_* are the recorder's own counts: cpiflame's stderr, and
# for perf its `perf report --stats` LOST_SAMPLES (TOOL_SAMPLES is then the file's count).
run_bare() {
	# shellcheck disable=SC2086
	measure "$1-bare" $WORKLOAD
	echo "$M_WALL $M_RSS $M_CPU" >>"runs/$1-bare.tsv"
}

run_cf() {
	local k=$1 f="cf-$1.data" n lost chunks per ts tl
	rm -f "$f" "$f.old"
	# shellcheck disable=SC2086
	measure "$k-cf" $(cf_cmd "$k")
	[ -s "$f" ] || die "cpiflame record did not write $W/$f"
	read -r n lost chunks per < <(count_file "$f")
	ts="$(cf_samples "runs/$k-cf.stderr")"
	tl="$(cf_lost "runs/$k-cf.stderr")"
	echo "$M_WALL $M_RSS $M_CPU $(stat -c %s "$f") $n $lost $chunks ${ts:-NA} ${tl:-0} $per" >>"runs/$k-cf.tsv"
}

run_perf() {
	local k=$1 f="perf-$1.data" n lost chunks per tl
	rm -f "$f" "$f.old"
	# shellcheck disable=SC2086
	measure "$k-perf" $(perf_cmd "$k")
	[ -s "$f" ] || die "perf record did not write $W/$f"
	read -r n lost chunks per < <(count_file "$f")
	tl="$(perf_stats_lost "$f")"
	echo "$M_WALL $M_RSS $M_CPU $(stat -c %s "$f") $n $lost $chunks $n $tl $per" >>"runs/$k-perf.tsv"
}

run_perfnb() {
	local k=$1 f="perfnb-$1.data" n lost chunks per tl
	rm -f "$f" "$f.old"
	# shellcheck disable=SC2086
	measure "$k-perfnb" $(perfnb_cmd "$k")
	[ -s "$f" ] || die "perf record --no-bpf-event did not write $W/$f"
	read -r n lost chunks per < <(count_file "$f")
	tl="$(perf_stats_lost "$f")"
	echo "$M_WALL $M_RSS $M_CPU $(stat -c %s "$f") $n $lost $chunks $n $tl $per" >>"runs/$k-perfnb.tsv"
	rm -f "$f"
}

minmax() { awk -v c="$2" 'NR == 1 || $c < lo { lo = $c } NR == 1 || $c > hi { hi = $c } END { printf "%.3f–%.3f", lo / 1e9, hi / 1e9 }' "$1"; }
secs() { awk -v x="$1" 'BEGIN { printf "%.3f", x / 1e9 }'; }
mib_k() { awk -v x="$1" 'BEGIN { printf "%.1f", x / 1024 }'; }
mib_b() { awk -v x="$1" 'BEGIN { printf "%.2f", x / 1048576 }'; }
bps() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.0f", a / b }'; }
sub_() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }

# Stack completeness of a file, as read by each reader: share of samples whose stack reaches
# the root of its thread (start_thread for the workers, __libc_start_main for the main thread).
# fold_check KEY TOOL: cpiflame fold FILE > KEY-TOOL.folded; prints "STATUS TOTAL FULL".
fold_check() {
	local k=$1 t=$2 status=0
	# shellcheck disable=SC2086
	"$CPIFLAME" fold ${fold_args[$k]} "$t-$k.data" >"$t-$k.folded" 2>"runs/$k-$t.fold.stderr" || status=$?
	awk -v st="$status" '
		{ total += $NF; if ($0 ~ /start_thread|__libc_start_call_main|__libc_start_main/) full += $NF }
		END { printf "%d %d %d\n", st, total, full }' "$t-$k.folded"
}
# script_check KEY TOOL: perf script -i FILE > KEY-TOOL.script; prints "STATUS TOTAL FULL".
script_check() {
	local k=$1 t=$2 status=0
	perf script -i "$t-$k.data" >"$t-$k.script" 2>"runs/$k-$t.script.stderr" || status=$?
	awk -v st="$status" 'BEGIN { RS = "" }
		{ total++; if ($0 ~ /start_thread|__libc_start_call_main|__libc_start_main/) full++ }
		END { printf "%d %d %d\n", st, total, full }' "$t-$k.script"
}
# Samples in a cpiflame file whose user stack copy is empty (perf report -D: "ustack: size 0").
empty_stacks() {
	perf report -D -i "$1" 2>/dev/null | grep -c '^\.\.\. ustack: size 0,' || true
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.1f%%", 100 * a / b }'; }

# ---------------------------------------------------------------------------------------------
# 6. Run
# ---------------------------------------------------------------------------------------------
log "workload: $WORKLOAD; $RUNS runs per command per configuration"
log "warm-up (untimed): each command once (configuration c8)"
run_bare c8
run_cf c8
run_perf c8
run_perfnb c8
rm -f runs/c8-*.tsv

order=(bare cf perf perfnb)

declare -A fold_cf fold_perf script_cf script_perf empty_cf
for k in "${configs[@]}"; do
	log "configuration $k: ${title[$k]}"
	log "  $(cf_cmd "$k")"
	log "  $(perf_cmd "$k")"
	log "  $(perfnb_cmd "$k")"
	for ((i = 1; i <= RUNS; i++)); do
		# Round i starts with command (i - 1) mod 4 of `order` and goes round.
		for ((j = 0; j < ${#order[@]}; j++)); do
			"run_${order[(i - 1 + j) % ${#order[@]}]}" "$k"
		done
		log "  run $i/$RUNS: bare $(tail -n1 "runs/$k-bare.tsv" | awk '{printf "%.3f s", $1/1e9}'), cpiflame $(
			tail -n1 "runs/$k-cf.tsv" | awk '{printf "%.3f s, %d samples, %d lost, %.2f MB", $1/1e9, $5, $6, $4/1e6}'), perf $(
			tail -n1 "runs/$k-perf.tsv" | awk '{printf "%.3f s, %d samples, %d lost, %.2f MB", $1/1e9, $5, $6, $4/1e6}'), perf --no-bpf-event $(
			tail -n1 "runs/$k-perfnb.tsv" | awk '{printf "%.3f s", $1/1e9}')"
	done
	log "  reading back the last run's files (cpiflame fold and perf script on both)"
	fold_cf[$k]="$(fold_check "$k" cf)"
	fold_perf[$k]="$(fold_check "$k" perf)"
	script_cf[$k]="$(script_check "$k" cf)"
	script_perf[$k]="$(script_check "$k" perf)"
	empty_cf[$k]="$(empty_stacks "cf-$k.data")"
	log "  fold: cf ${fold_cf[$k]}, perf ${fold_perf[$k]}; perf script: cf ${script_cf[$k]}, perf ${script_perf[$k]} (status total full)"
done

# ---------------------------------------------------------------------------------------------
# 7. Report
# ---------------------------------------------------------------------------------------------
warnings() {
	local f=$1
	if [ -s "$f" ]; then
		awk 'NF && !seen[$0]++' "$f" | tr -s '\n' ' ' | sed 's/|/\\|/g; s/ *$//' | cut -c 1-400
	else
		echo "none"
	fi
}

cpu_model="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
cpiflame_version="$("$CPIFLAME" --version)"
git_rev="$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
perf_version="$(perf --version)"
cat runs/*-bare.tsv >runs/all-bare.tsv
bare_all="$(median runs/all-bare.tsv 1)"

summary=()
md="$OUT/bench-record.md"
{
	echo "# cpiflame record vs. perf record"
	echo
	echo "| | |"
	echo "| --- | --- |"
	echo "| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |"
	echo "| machine | $(nproc) CPUs, ${cpu_model:-unknown CPU}, kernel $(uname -r); perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?'), perf_event_mlock_kb $(cat /proc/sys/kernel/perf_event_mlock_kb 2>/dev/null || echo '?') |"
	echo "| perf | $perf_version |"
	echo "| cpiflame | $cpiflame_version ($git_rev) |"
	echo "| workload | \`$WORKLOAD\` (fixtures/workloads/threads.c: 3 threads + main, ~$(awk -v s="$SCALE" 'BEGIN { printf "%.1f", 6 * s }') units of CPU work), bare median $(secs "$bare_all") s over all $(wc -l <runs/all-bare.tsv) bare runs |"
	echo "| runs | $RUNS timed runs of each command per configuration (after one untimed warm-up of each), rotating order; medians below |"
	echo "| directory | commands run in \`$W\` |"
	echo
	echo "Commands (each under \`/usr/bin/time -f '%e %M %U %S'\`; wall time from a nanosecond clock around it):"
	echo
	echo '```sh'
	echo "# bare"
	echo "$WORKLOAD"
	for k in "${configs[@]}"; do
		echo "# $k: ${title[$k]}"
		cf_cmd "$k"
		perf_cmd "$k"
		perfnb_cmd "$k"
	done
	echo "# read back (last run of each configuration; KEY = c8, c32, p8, p32, def; TOOL = cf, perf)"
	echo "perf script -i TOOL-KEY.data --show-lost-events -F event   # samples, PERF_RECORD_LOST (every run)"
	echo "perf report --stats -i perf-KEY.data                      # perf's LOST_SAMPLES (every run)"
	echo "$CPIFLAME fold TOOL-KEY.data > TOOL-KEY.folded            # p8/p32: fold --stalls task-clock --cycles cpu-clock"
	echo "perf script -i TOOL-KEY.data > TOOL-KEY.script"
	echo '```'
	echo
	for k in "${configs[@]}"; do
		b="runs/$k-bare.tsv" c="runs/$k-cf.tsv" p="runs/$k-perf.tsv" q="runs/$k-perfnb.tsv"
		bt="$(median "$b" 1)" ct="$(median "$c" 1)" pt="$(median "$p" 1)" qt="$(median "$q" 1)"
		bc="$(median "$b" 3)" cc="$(median "$c" 3)" pc="$(median "$p" 3)" qc="$(median "$q" 3)"
		qs="$(median "$q" 4)" qn="$(median "$q" 5)" q_slow="$(ratio "$qt" "$bt")"
		cs="$(median "$c" 4)" ps="$(median "$p" 4)"
		cn="$(median "$c" 5)" pn="$(median "$p" 5)"
		c_bps="$(bps "$cs" "$cn")" p_bps="$(bps "$ps" "$pn")"
		c_slow="$(ratio "$ct" "$bt")" p_slow="$(ratio "$pt" "$bt")"
		read -r fcs fct fcf <<<"${fold_cf[$k]}"
		read -r fps fpt fpf <<<"${fold_perf[$k]}"
		read -r scs sct scf <<<"${script_cf[$k]}"
		read -r sps spt spf <<<"${script_perf[$k]}"
		echo "## $k: ${title[$k]}"
		echo
		echo "\`$(cf_cmd "$k")\`"
		echo
		echo "\`$(perf_cmd "$k")\`"
		echo
		echo "\`$(perfnb_cmd "$k")\`"
		echo
		echo "| tool | median wall (s) | min–max (s) | slowdown | extra CPU (s) | peak RSS (MiB) | file size (MiB) | samples | bytes/sample | lost (median / max) | stacks to thread root: cpiflame fold / perf script |"
		echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
		echo "| bare workload | $(secs "$bt") | $(minmax "$b" 1) | 1.00 | – | $(mib_k "$(median "$b" 2)") | – | – | – | – | – |"
		echo "| **cpiflame record** | $(secs "$ct") | $(minmax "$c" 1) | **${c_slow}×** | $(sub_ "$cc" "$bc") | $(mib_k "$(median "$c" 2)") | $(mib_b "$cs") | $cn | **$c_bps** | $(median "$c" 6) / $(colmax "$c" 6) | $(pct "$fcf" "$fct") / $(pct "$scf" "$sct") |"
		echo "| **perf record** | $(secs "$pt") | $(minmax "$p" 1) | **${p_slow}×** | $(sub_ "$pc" "$bc") | $(mib_k "$(median "$p" 2)") | $(mib_b "$ps") | $pn | **$p_bps** | $(median "$p" 6) / $(colmax "$p" 6) | $(pct "$fpf" "$fpt") / $(pct "$spf" "$spt") |"
		echo "| perf record --no-bpf-event | $(secs "$qt") | $(minmax "$q" 1) | ${q_slow}× | $(sub_ "$qc" "$bc") | $(mib_k "$(median "$q" 2)") | $(mib_b "$qs") | $qn | $(bps "$qs" "$qn") | $(median "$q" 6) / $(colmax "$q" 6) | (not read back) |"
		echo

		slow_ok="$(awk -v a="$c_slow" -v b="$p_slow" 'BEGIN { print (a <= b) ? 1 : 0 }')"
		slownb_ok="$(awk -v a="$c_slow" -v b="$q_slow" 'BEGIN { print (a <= b) ? 1 : 0 }')"
		bps_ratio="$(ratio "$c_bps" "$p_bps")"
		bps_ok="$(awk -v r="$bps_ratio" 'BEGIN { print (r <= 0.5) ? 1 : 0 }')"
		cf_maxlost="$(colmax "$c" 6)"
		cf_maxtoollost="$(colmax "$c" 9)"
		lost_ok=$([ "$cf_maxlost" -eq 0 ] && [ "$cf_maxtoollost" -eq 0 ] && echo 1 || echo 0)
		# Counts: cpiflame's own sample count vs the file read by perf script, every run.
		mism="$(awk '$8 != $5 { n++ } END { print n + 0 }' "$c")"
		lostmism="$(awk '$9 != $6 { n++ } END { print n + 0 }' "$c")"
		plostmism="$(awk '$9 != $6 { n++ } END { print n + 0 }' "$p")"
		echo "| check | result |"
		echo "| --- | --- |"
		echo "| slowdown: cpiflame ${c_slow}× vs perf ${p_slow}× (target: cpiflame ≤ perf) | $(yesno "$slow_ok") |"
		echo "| slowdown: cpiflame ${c_slow}× vs perf --no-bpf-event ${q_slow}× (same target, without perf's ~1 s exit wait) | $(yesno "$slownb_ok") |"
		echo "| bytes/sample: cpiflame $c_bps vs perf $p_bps = **${bps_ratio}×** (target: ≤ 0.50×) | $(yesno "$bps_ok") |"
		echo "| lost samples, cpiflame (file / its stderr, max over runs): $cf_maxlost / $cf_maxtoollost; perf (file / LOST_SAMPLES, max): $(colmax "$p" 6) / $(colmax "$p" 9) | $([ "$lost_ok" = 1 ] && echo "cpiflame lost none" || echo "**cpiflame lost samples**") |"
		echo "| samples per event (last run) | cpiflame $(tail -n1 "$c" | awk '{print $10}'), perf $(tail -n1 "$p" | awk '{print $10}') |"
		echo "| cpiflame's own count = \`perf script -F event\` count of its file | $([ "$mism" -eq 0 ] && echo "yes, all $RUNS runs" || echo "**no, in $mism of $RUNS runs** (own: $(awk '{printf "%s ", $8}' "$c"); file: $(awk '{printf "%s ", $5}' "$c"))") |"
		echo "| cpiflame's own lost count = PERF_RECORD_LOST sum in its file | $([ "$lostmism" -eq 0 ] && echo yes || echo "**no, in $lostmism runs**") |"
		echo "| perf's LOST_SAMPLES = PERF_RECORD_LOST sum in its file | $([ "$plostmism" -eq 0 ] && echo yes || echo "no, in $plostmism runs") |"
		echo "| \`cpiflame fold\` of cpiflame's file | exit $fcs, $fct samples, $fcf reach the thread root ($(pct "$fcf" "$fct")) |"
		echo "| \`cpiflame fold\` of perf's file | exit $fps, $fpt samples, $fpf reach the thread root ($(pct "$fpf" "$fpt")) |"
		echo "| \`perf script\` of cpiflame's file | exit $scs, $sct samples, $scf reach the thread root ($(pct "$scf" "$sct")) |"
		echo "| \`perf script\` of perf's file | exit $sps, $spt samples, $spf reach the thread root ($(pct "$spf" "$spt")) |"
		echo "| samples with an empty user stack copy in cpiflame's file (\`perf report -D\`: ustack size 0) | ${empty_cf[$k]} |"
		echo "| stderr, cpiflame record (last run) | $(warnings "runs/$k-cf.stderr") |"
		echo "| stderr, perf record (last run) | $(warnings "runs/$k-perf.stderr") |"
		echo "| stderr, cpiflame fold (cpiflame's file / perf's) | $(warnings "runs/$k-cf.fold.stderr") / $(warnings "runs/$k-perf.fold.stderr") |"
		echo "| stderr, perf script (cpiflame's file / perf's) | $(warnings "runs/$k-cf.script.stderr") / $(warnings "runs/$k-perf.script.stderr") |"
		echo
		summary+=("| $k | ${c_slow}× vs ${p_slow}× → $(yesno "$slow_ok") | ${c_slow}× vs ${q_slow}× → $(yesno "$slownb_ok") | ${bps_ratio}× → $(yesno "$bps_ok") | $cf_maxlost$([ "$k" = def ] && echo " → $(yesno "$lost_ok")") | $(pct "$fcf" "$fct") vs $(pct "$fpf" "$fpt") | $(pct "$scf" "$sct") vs $(pct "$spf" "$spt") |")
	done
	echo "## Targets"
	echo
	echo "Slowdown: cpiflame's ≤ perf's (median wall / median bare wall of the same configuration), against \`perf record -N -q\` as specified and, as a stricter check, against \`perf record -N -q --no-bpf-event\`. Bytes/sample: cpiflame's ≤ 0.50 × perf's. Lost: none for cpiflame at its default rate (configuration def, every run, both its own count and the file's PERF_RECORD_LOST records)."
	echo "The last two columns are not targets: the share of samples (last run) whose call chain reaches its thread's root, cpiflame's file vs perf's, read by each reader."
	echo
	echo "| configuration | slowdown cpiflame vs perf | slowdown cpiflame vs perf --no-bpf-event | bytes/sample ratio | cpiflame lost (max over runs) | stacks to root, cpiflame fold: cf file vs perf file | stacks to root, perf script: cf file vs perf file |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	printf '%s\n' "${summary[@]}"
	echo
	echo "Script run time up to this report: $((SECONDS - script_start)) s."
} >"$md"

echo
cat "$md"
echo
log "report written to $md (total script time $((SECONDS - script_start)) s)"
