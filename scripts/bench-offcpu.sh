#!/usr/bin/env bash
# Benchmark `cpiflame record --off-cpu` against perf's two ways of recording off-CPU stacks, on
# a context-switch-heavy workload (fixtures/workloads/pingpong.c: two threads handing a token
# over pipes, ~270,000 switches a second here):
#
#   cf       cpiflame record --off-cpu                         (its defaults: cpu-clock at 4 kHz,
#            DWARF stacks; context-switches with switch records and the stack at switch-out,
#            8 KiB copies, trimmed; sched:sched_waking)
#   sw       perf record -e sched:sched_switch --call-graph dwarf        (stack at switch-out)
#   se       perf record --switch-events --call-graph dwarf -e cpu-clock  (switch records; the
#            stack only from cpu-clock samples)
#
# Usage (from anywhere; paths are relative to the repository root):
#   scripts/bench-offcpu.sh
#
# Environment:
#   OUT      output directory (default target/bench)
#   RUNS     timed runs of every command (default 5); medians reported
#   ROUNDS   round trips of the workload (default 100000)
#
# Per tool: slowdown (median wall / median bare wall), bytes per switch (file size / the
# switch-outs the file holds: PERF_RECORD_SWITCH OUT records for cf and se, sched_switch
# samples for sw), lost records (the PERF_RECORD_LOST sum, read back with perf script), and
# whether `perf script` reads the file without a word on stderr. Targets: cf no slower than
# either perf, and at most half the bytes per switch of sw (the one that keeps stacks at
# switch-out).
#
# Writes into OUT: fixtures/ (the built workloads), offcpu/ (the last run's data files and
# runs/ with raw per-run rows and stderr) and bench-offcpu.md (the report printed at the end).
set -euo pipefail

script_start=$SECONDS
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

RUNS="${RUNS:-5}"
ROUNDS="${ROUNDS:-100000}"
OUT="${OUT:-target/bench}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-offcpu: error: %s\n' "$*" >&2; exit 1; }

case "$RUNS" in '' | *[!0-9]* | 0) die "RUNS must be a positive integer, got '$RUNS'" ;; esac
case "$ROUNDS" in '' | *[!0-9]* | 0) die "ROUNDS must be a positive integer, got '$ROUNDS'" ;; esac


# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
bench_paths
install_bench_tools

build_cpiflame
build_fixtures pingpong

W="$OUT/offcpu"
mkdir -p "$W/runs"
cd "$W"
rm -f runs/* ./*.data ./*.data.old

WORKLOAD="../fixtures/pingpong $ROUNDS"
tools=(cf sw se)
declare -A cmd title
cmd[cf]="$CPIFLAME record --off-cpu -o cf.data -- $WORKLOAD"
cmd[sw]="perf record -N -q -e sched:sched_switch --call-graph dwarf -o sw.data -- $WORKLOAD"
cmd[se]="perf record -N -q --switch-events --call-graph dwarf -e cpu-clock -o se.data -- $WORKLOAD"
title[cf]="cpiflame record --off-cpu"
title[sw]="perf record -e sched:sched_switch --call-graph dwarf"
title[se]="perf record --switch-events --call-graph dwarf -e cpu-clock"

# measure NAME CMD...: runs CMD once; sets M_WALL (ns), M_CPU (user + sys s), M_RSS (KiB).
measure() {
	local name=$1 status=0 t0 t1 e u s
	shift
	t0=$(date +%s%N)
	/usr/bin/time -f '%e %M %U %S' -o "runs/$name.time" "$@" </dev/null >"runs/$name.stdout" 2>"runs/$name.stderr" || status=$?
	t1=$(date +%s%N)
	if [ "$status" -ne 0 ]; then
		printf 'bench-offcpu: error: %s failed (exit %d): %s\n' "$name" "$status" "$*" >&2
		tail -n 20 "runs/$name.stderr" | sed 's/^/    /' >&2
		exit 1
	fi
	read -r e M_RSS u s < <(tail -n 1 "runs/$name.time")
	M_WALL=$((t1 - t0))
	M_CPU="$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')"
}

# count_file TOOL FILE: prints "SWITCH_OUTS SAMPLES LOST SCRIPT_STDERR_BYTES".
count_file() {
	local t=$1 f=$2
	perf script -i "$f" --show-switch-events --show-lost-events -F event \
		>"runs/$t.script" 2>"runs/$t.script.stderr" || die "perf script -i $f failed"
	# The last words perf script had for a file of this tool, for the report.
	if [ -s "runs/$t.script.stderr" ]; then cp "runs/$t.script.stderr" "runs/$t.script.said"; fi
	awk -v t="$t" -v errs="$(stat -c %s "runs/$t.script.stderr")" '
		/PERF_RECORD_SWITCH OUT/ { outs++; next }
		/PERF_RECORD_SWITCH/ { next }
		/PERF_RECORD_LOST lost/ { lost += $3; next }
		NF >= 1 && $1 ~ /:$/ { samples++; if ($1 == "sched:sched_switch:") sw++ }
		END { printf "%d %d %d %d\n", (t == "sw") ? sw : outs, samples, lost, errs }' "runs/$t.script"
}

run_bare() {
	# shellcheck disable=SC2086
	measure bare $WORKLOAD
	echo "$M_WALL $M_RSS $M_CPU" >>runs/bare.tsv
}

run_tool() {
	local t=$1 outs samples lost errs
	rm -f "$t.data" "$t.data.old"
	# shellcheck disable=SC2086
	measure "$t" ${cmd[$t]}
	[ -s "$t.data" ] || die "${title[$t]} did not write $W/$t.data"
	read -r outs samples lost errs < <(count_file "$t" "$t.data")
	echo "$M_WALL $M_RSS $M_CPU $(stat -c %s "$t.data") $outs $samples $lost $errs" >>"runs/$t.tsv"
}

secs() { awk -v x="$1" 'BEGIN { printf "%.3f", x / 1e9 }'; }

log "workload: $WORKLOAD; $RUNS runs of each command"
log "warm-up (untimed): each command once"
run_bare
for t in "${tools[@]}"; do run_tool "$t"; done
rm -f runs/*.tsv runs/*.said

order=(bare cf sw se)
for ((i = 1; i <= RUNS; i++)); do
	for ((j = 0; j < ${#order[@]}; j++)); do
		k="${order[(i - 1 + j) % ${#order[@]}]}"
		if [ "$k" = bare ]; then run_bare; else run_tool "$k"; fi
	done
	log "run $i/$RUNS: bare $(tail -n1 runs/bare.tsv | awk '{printf "%.3f s", $1/1e9}'); $(
		for t in "${tools[@]}"; do
			tail -n1 "runs/$t.tsv" | awk -v t="$t" '{printf "%s %.3f s, %.1f MB, %d switch-outs, %d lost; ", t, $1/1e9, $4/1e6, $5, $7}'
		done)"
done

bt="$(median runs/bare.tsv 1)"
md="$OUT/bench-offcpu.md"
{
	echo "# cpiflame record --off-cpu vs. perf record"
	echo
	report_facts
	echo "| workload | \`$WORKLOAD\`, bare median $(secs "$bt") s |"
	echo "| runs | $RUNS timed runs of each command after one untimed warm-up, rotating order; medians |"
	echo
	echo '```sh'
	echo "$WORKLOAD"
	for t in "${tools[@]}"; do echo "${cmd[$t]}"; done
	echo "perf script -i FILE --show-switch-events --show-lost-events -F event   # switch-outs, lost"
	echo '```'
	echo
	echo "| tool | median wall (s) | slowdown | extra CPU (s) | file (MB) | switch-outs | bytes/switch | samples | lost (median / max) | perf script said something |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	echo "| bare workload | $(secs "$bt") | 1.00 | – | – | – | – | – | – | – |"
	for t in "${tools[@]}"; do
		f="runs/$t.tsv"
		tt="$(median "$f" 1)" size="$(median "$f" 4)" outs="$(median "$f" 5)"
		echo "| ${title[$t]} | $(secs "$tt") | $(ratio "$tt" "$bt")× | $(awk -v a="$(median "$f" 3)" -v b="$(median runs/bare.tsv 3)" 'BEGIN { printf "%.2f", a - b }') | $(awk -v x="$size" 'BEGIN { printf "%.1f", x / 1e6 }') | $outs | $(per "$size" "$outs") | $(median "$f" 6) | $(median "$f" 7) / $(colmax "$f" 7) | $(awk '$8 > 0 { n++ } END { print n + 0 }' "$f") of $RUNS runs$([ -s "runs/$t.script.said" ] && echo ", e.g. \"$(tr -s '\n ' ' ' <"runs/$t.script.said" | sed 's/|/\\|/g' | cut -c 1-160)\"") |"
	done
	echo
	cf_t="$(median runs/cf.tsv 1)" sw_t="$(median runs/sw.tsv 1)" se_t="$(median runs/se.tsv 1)"
	cf_b="$(per "$(median runs/cf.tsv 4)" "$(median runs/cf.tsv 5)")"
	sw_b="$(per "$(median runs/sw.tsv 4)" "$(median runs/sw.tsv 5)")"
	echo "| target | result |"
	echo "| --- | --- |"
	echo "| slowdown: cpiflame $(ratio "$cf_t" "$bt")× ≤ perf sched_switch $(ratio "$sw_t" "$bt")× | $(yesno "$(awk -v a="$cf_t" -v b="$sw_t" 'BEGIN { print (a <= b) ? 1 : 0 }')") |"
	echo "| slowdown: cpiflame $(ratio "$cf_t" "$bt")× ≤ perf --switch-events $(ratio "$se_t" "$bt")× | $(yesno "$(awk -v a="$cf_t" -v b="$se_t" 'BEGIN { print (a <= b) ? 1 : 0 }')") |"
	echo "| bytes/switch: cpiflame $cf_b ≤ 0.5 × perf sched_switch $sw_b (ratio $(ratio "$cf_b" "$sw_b")) | $(yesno "$(awk -v a="$cf_b" -v b="$sw_b" 'BEGIN { print (a <= 0.5 * b) ? 1 : 0 }')") |"
	echo "| stderr, cpiflame record (last run) | $(awk 'NF && !seen[$0]++' runs/cf.stderr | tr '\n' ' ' | sed 's/|/\\|/g' | cut -c 1-400) |"
	echo
	echo "Script run time: $((SECONDS - script_start)) s."
} >"$md"

echo
cat "$md"
echo
log "report written to $md"
