#!/usr/bin/env bash
# Benchmark `cpiflame record -a` (system-wide) against `perf record -a`: what each costs a load
# it did not start. Two copies of fixtures/workloads/rate.c (one thread each, a hash loop five
# calls deep) run for the whole benchmark, started outside any recorder; each reports the work
# it has done (and its CPU time) on SIGUSR1. Every run is a window: the recorder records the
# whole machine while its command, `bash window.sh`, asks both loads for their counts, sleeps
# SECS seconds and asks again, so the loads' rates are measured while the recorder records
# (its start and its finishing work, e.g. perf's build-id pass, are in its CPU time and wall
# time instead). The same command with no recorder is the baseline. Windows alternate in a
# rotating order: no recorder, cpiflame, perf.
#
#   cf    cpiflame record -a -N -e cpu-clock -c PERIOD --call-graph dwarf,STACK -- bash window.sh
#   perf  perf record -a -N -q -e cpu-clock -c PERIOD --call-graph dwarf,STACK -- bash window.sh
#
# Per recorder, medians over the runs: the loads' work rate while it records, as a share of
# their rate with no recorder in the same round, per second of wall time (what the recorder,
# and everything else running, took from them) and per second of the loads' own CPU time (the
# sampling work done in their context: interrupts, stack copies; other programs on the machine
# do not move it), bytes per sample (file size / samples the file holds), lost samples (the
# PERF_RECORD_LOST sum; both read back with `perf script`), the recorder's peak RSS, CPU time
# (user + sys, `/usr/bin/time`, its start and finish included; window.sh's are negligible) and
# wall time, and the ratio cpiflame / perf of each. Targets (issue 26): slowdown no worse than
# perf's, at most half its bytes per sample.
#
# Usage (from anywhere; paths are relative to the repository root):
#   scripts/bench-system.sh
#
# Environment:
#   OUT     output directory (default target/bench)
#   RUNS    windows of each kind (default 5)
#   SECS    seconds each recorder records (default 3)
#   PERIOD  sampling period of cpu-clock for both, nanoseconds (default 250000: 4 kHz per CPU,
#           cpiflame's default rate without a PMU)
#   STACK   DWARF stack copy size for both (default 8192, perf's default)
#
# Everything else running on the machine is recorded too (that is what -a means): bytes per
# sample depend on it, so run both recorders in the same conditions (this script alternates).
# Writes into OUT: fixtures/ (the built workloads), system/ (the last run's files, runs/ with
# raw per-run rows and the last stderr of every command) and bench-system.md (the report).
set -euo pipefail

script_start=$SECONDS
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

RUNS="${RUNS:-5}"
SECS="${SECS:-3}"
PERIOD="${PERIOD:-250000}"
STACK="${STACK:-8192}"
OUT="${OUT:-target/bench}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-system: error: %s\n' "$*" >&2; exit 1; }

for v in RUNS SECS PERIOD STACK; do
	case "${!v}" in '' | *[!0-9]* | 0) die "$v must be a positive integer, got '${!v}'" ;; esac
done


# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
bench_paths
install_bench_tools
# System-wide recording needs perf_event_paranoid <= 0 or CAP_PERFMON: root, or say so.
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 0 ]; then
	die "record -a needs root or kernel.perf_event_paranoid <= 0 (it is $(cat /proc/sys/kernel/perf_event_paranoid))"
fi

build_cpiflame
build_fixtures rate

W="$OUT/system"
mkdir -p "$W/runs"
cd "$W"
rm -f runs/* ./*.data ./*.data.old

tools=(bare cf perf)
declare -A cmd title
cmd[bare]="bash window.sh"
cmd[cf]="$CPIFLAME record -a -N -o cf.data -e cpu-clock -c $PERIOD --call-graph dwarf,$STACK -- bash window.sh"
cmd[perf]="perf record -a -N -q -o perf.data -e cpu-clock -c $PERIOD --call-graph dwarf,$STACK -- bash window.sh"
title[bare]="no recorder"
title[cf]="cpiflame record -a"
title[perf]="perf record -a"

# The loads: two `rate` processes, each printing "UNITS NS CPU_NS" to loadN.out on SIGUSR1.
load_pids=()
stop_loads() {
	local p
	for p in "${load_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${load_pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop_loads EXIT
for n in 1 2; do
	: >"runs/load$n.out"
	"$FIX/rate" >"runs/load$n.out" &
	load_pids+=("$!")
done
for n in 1 2; do
	until grep -q ready "runs/load$n.out"; do sleep 0.05; done
done

# The recorded command: both loads' counts (each load answers SIGUSR1 with a line), SECS
# seconds, both loads' counts again; runs/window.marks gets the two lines
# "UNITS1 NS1 CPU_NS1 UNITS2 NS2 CPU_NS2 RECORDER_TICKS".
cat >window.sh <<EOF
mark() {
	local n pid before lines=""
	for n in 1 2; do
		pid=\$([ "\$n" = 1 ] && echo ${load_pids[0]} || echo ${load_pids[1]})
		before=\$(wc -l <"runs/load\$n.out")
		kill -USR1 "\$pid"
		until [ "\$(wc -l <"runs/load\$n.out")" -gt "\$before" ]; do sleep 0.01; done
		lines="\$lines\$(tail -n 1 "runs/load\$n.out") "
	done
	# The recorder's CPU time so far (utime + stime, clock ticks): window.sh's parent.
	echo "\$lines\$(awk '{ print \$14 + \$15 }' /proc/\$PPID/stat)"
}
{ mark; sleep $SECS; mark; } >runs/window.marks
EOF

# count_file FILE: prints "SAMPLES LOST" read back with perf script.
count_file() {
	perf script -i "$1" --show-lost-events -F event 2>/dev/null | awk '
		/PERF_RECORD_LOST lost/ { lost += $3; next }
		NF == 1 && $1 ~ /:$/ { total++ }
		END { printf "%d %d\n", total, lost }'
}

# One window of TOOL; appends to runs/TOOL.tsv:
#   RATE CPU_RATE WALL_NS RSS_KB CPU_S FILE_BYTES SAMPLES LOST OWN_SAMPLES WINDOW_CPU_S
# (RATE: units per second of wall time, both loads added; CPU_RATE: units per second of the
# loads' CPU time; WINDOW_CPU_S: the recorder's CPU time while window.sh ran)
run_window() {
	local t=$1 status=0 t0 t1 m0 m1 e rss u s rates rate cpu_rate window_cpu size=0 n=0 lost=0 own=NA
	rm -f "$t.data" "$t.data.old" runs/window.marks
	t0=$(date +%s%N)
	# shellcheck disable=SC2086
	/usr/bin/time -f '%e %M %U %S' -o "runs/$t.time" ${cmd[$t]} </dev/null >"runs/$t.stdout" 2>"runs/$t.stderr" || status=$?
	t1=$(date +%s%N)
	if [ "$status" -ne 0 ]; then
		printf 'bench-system: error: %s failed (exit %d): %s\n' "$t" "$status" "${cmd[$t]}" >&2
		tail -n 20 "runs/$t.stderr" | sed 's/^/    /' >&2
		exit 1
	fi
	read -r e rss u s < <(tail -n 1 "runs/$t.time")
	{ read -r m0 && read -r m1; } <runs/window.marks || die "$t: no counts from the loads in runs/window.marks"
	rates=$(awk -v a="$m0" -v b="$m1" -v tck="$(getconf CLK_TCK)" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		wall = (y[1] - x[1]) / ((y[2] - x[2]) / 1e9) + (y[4] - x[4]) / ((y[5] - x[5]) / 1e9)
		cpu = (y[1] - x[1] + y[4] - x[4]) / ((y[3] - x[3] + y[6] - x[6]) / 1e9)
		printf "%.1f %.1f %.2f", wall, cpu, (y[7] - x[7]) / tck }')
	if [ "$t" != bare ]; then
		[ -s "$t.data" ] || die "${title[$t]} did not write $W/$t.data"
		size=$(stat -c %s "$t.data")
		read -r n lost < <(count_file "$t.data")
		[ "$t" = cf ] && own=$(sed -n 's/^cpiflame: wrote .*: \([0-9][0-9]*\) samples.*/\1/p' "runs/cf.stderr" | tail -n 1)
	fi
	read -r rate cpu_rate window_cpu <<<"$rates"
	echo "$rate $cpu_rate $((t1 - t0)) $rss $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }') $size $n $lost ${own:-NA} $window_cpu" >>"runs/$t.tsv"
}


log "loads: 2 × $FIX/rate (pids ${load_pids[*]}); $RUNS windows of each kind, $SECS s each"
log "warm-up (untimed): each kind once"
for t in "${tools[@]}"; do run_window "$t"; done
rm -f runs/*.tsv

for ((i = 1; i <= RUNS; i++)); do
	for ((j = 0; j < ${#tools[@]}; j++)); do
		run_window "${tools[(i - 1 + j) % ${#tools[@]}]}"
	done
	log "run $i/$RUNS: $(for t in "${tools[@]}"; do
		tail -n1 "runs/$t.tsv" | awk -v t="$t" '{ printf "%s %.0f units/s (%.0f per CPU s), %.1f MB, %d samples, %d lost; ", t, $1, $2, $6 / 1e6, $7, $8 }'
	done)"
done

# paired TOOL COLUMN: the median over rounds of TOOL's value / the no-recorder window's value
# of the same round (each round runs every kind once, next to each other).
paired() {
	paste -d' ' <(awk -v c="$2" '{ print $c }' "runs/$1.tsv") <(awk -v c="$2" '{ print $c }' runs/bare.tsv) |
		awk '{ print $1 / $2 }' | sort -g | awk '{ a[NR] = $1 } END {
			if (NR % 2) m = a[(NR + 1) / 2]; else m = (a[NR / 2] + a[NR / 2 + 1]) / 2
			printf "%.3f", m }'
}
mib() { awk -v x="$1" 'BEGIN { printf "%.1f", x / 1024 }'; }
mb() { awk -v x="$1" 'BEGIN { printf "%.1f", x / 1e6 }'; }
secs() { awk -v x="$1" 'BEGIN { printf "%.2f", x / 1e9 }'; }

md="$OUT/bench-system.md"
declare -A wall_r cpu_r bps
for t in cf perf; do
	wall_r[$t]="$(paired "$t" 1)"
	cpu_r[$t]="$(paired "$t" 2)"
	bps[$t]="$(per "$(median "runs/$t.tsv" 6)" "$(median "runs/$t.tsv" 7)")"
done
{
	echo "# cpiflame record -a vs. perf record -a"
	echo
	report_facts
	echo "| load | 2 × \`rate\` (fixtures/workloads/rate.c), started outside the recorders; with no recorder: $(median runs/bare.tsv 1 | cut -d. -f1) units/s (median; $(awk 'NR == 1 || $1 < lo { lo = $1 } NR == 1 || $1 > hi { hi = $1 } END { printf "%.0f–%.0f", lo, hi }' runs/bare.tsv) over the windows), $(median runs/bare.tsv 2 | cut -d. -f1) units per CPU second |"
	echo "| runs | $RUNS rounds after an untimed warm-up, each a window of every kind, rotating order; medians |"
	echo
	echo '```sh'
	for t in cf perf; do echo "${cmd[$t]}"; done
	echo "perf script -i FILE --show-lost-events -F event   # samples, lost"
	echo '```'
	echo
	echo "Work rates are the median over rounds of the window's rate over the same round's window with no recorder."
	echo
	echo "| recorder | load's rate per wall s (vs none) | per load CPU s (vs none) | recorder CPU while recording (s) | recorder CPU, all (s) | recorder wall (s) | peak RSS (MiB) | file (MB) | samples | bytes/sample | lost (median / max) |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for t in cf perf; do
		f="runs/$t.tsv"
		echo "| ${title[$t]} | ${wall_r[$t]} | ${cpu_r[$t]} | $(median "$f" 10) | $(median "$f" 5) | $(secs "$(median "$f" 3)") | $(mib "$(median "$f" 4)") | $(mb "$(median "$f" 6)") | $(median "$f" 7) | ${bps[$t]} | $(median "$f" 8) / $(colmax "$f" 8) |"
	done
	echo "| **cpiflame / perf** | $(ratio "${wall_r[cf]}" "${wall_r[perf]}") | $(ratio "${cpu_r[cf]}" "${cpu_r[perf]}") | $(ratio "$(median runs/cf.tsv 10)" "$(median runs/perf.tsv 10)") | $(ratio "$(median runs/cf.tsv 5)" "$(median runs/perf.tsv 5)") | $(ratio "$(median runs/cf.tsv 3)" "$(median runs/perf.tsv 3)") | $(ratio "$(median runs/cf.tsv 4)" "$(median runs/perf.tsv 4)") | $(ratio "$(median runs/cf.tsv 6)" "$(median runs/perf.tsv 6)") | $(ratio "$(median runs/cf.tsv 7)" "$(median runs/perf.tsv 7)") | $(ratio "${bps[cf]}" "${bps[perf]}") | |"
	echo
	mism="$(awk '$9 != $7 { n++ } END { print n + 0 }' runs/cf.tsv)"
	echo "| target | result |"
	echo "| --- | --- |"
	echo "| slowdown no worse than perf's: load's rate per wall second under cpiflame ${wall_r[cf]} ≥ under perf ${wall_r[perf]} | $(yesno "$(awk -v a="${wall_r[cf]}" -v b="${wall_r[perf]}" 'BEGIN { print (a >= b) ? 1 : 0 }')") |"
	echo "| the same per second of the load's CPU time: ${cpu_r[cf]} ≥ ${cpu_r[perf]} | $(yesno "$(awk -v a="${cpu_r[cf]}" -v b="${cpu_r[perf]}" 'BEGIN { print (a >= b) ? 1 : 0 }')") |"
	echo "| recorder CPU time no more than perf's: $(median runs/cf.tsv 5) s ≤ $(median runs/perf.tsv 5) s | $(yesno "$(awk -v a="$(median runs/cf.tsv 5)" -v b="$(median runs/perf.tsv 5)" 'BEGIN { print (a <= b) ? 1 : 0 }')") |"
	echo "| bytes/sample at most half perf's: ${bps[cf]} ≤ 0.5 × ${bps[perf]} (ratio $(ratio "${bps[cf]}" "${bps[perf]}")) | $(yesno "$(awk -v a="${bps[cf]}" -v b="${bps[perf]}" 'BEGIN { print (a <= 0.5 * b) ? 1 : 0 }')") |"
	echo "| cpiflame's own sample count = \`perf script\`'s count of its file | $([ "$mism" -eq 0 ] && echo "yes, all $RUNS runs" || echo "**no, in $mism of $RUNS runs**") |"
	echo "| stderr, cpiflame record (last run) | $(awk 'NF && !seen[$0]++' runs/cf.stderr | tr '\n' ' ' | sed 's/|/\\|/g' | cut -c 1-400) |"
	echo
	echo "Per-window rows (rate per wall s, rate per CPU s, wall ns, RSS KiB, CPU s, bytes, samples, lost, own count, recorder CPU s while recording), in round order:"
	echo
	echo '```'
	for t in "${tools[@]}"; do sed "s/^/$t /" "runs/$t.tsv"; done
	echo '```'
	echo
	echo "Script run time: $((SECONDS - script_start)) s."
} >"$md"

echo
cat "$md"
echo
log "report written to $md"
