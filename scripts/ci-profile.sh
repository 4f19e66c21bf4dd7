#!/usr/bin/env bash
# Profiles a command in CI: records it with cpiflame, renders cpi.svg, writes the summary
# (text and JSON) and, given a baseline recording, the comparison (diff.svg, diff summary),
# all into one output folder to upload as an artifact.
#
# Usage: scripts/ci-profile.sh OUTDIR [--runs N] [--baseline BASE.data] [--fail-above PCT] -- COMMAND [ARGS...]
#
#   OUTDIR/profile.data   the recording (perf.data; keep OUTDIR as the next run's baseline)
#   OUTDIR/profile.K.data with --runs N: runs 2..N, recorded the same way; the pictures and
#                         reports are of profile.data, the gate uses every run
#   OUTDIR/cpi.svg        the CPI flame graph (time only, no stall colours, without a PMU)
#   OUTDIR/report.txt     top frames by cycles, self and total, with stall share
#   OUTDIR/report.json    the same, schema cpiflame-report/1
#   OUTDIR/profile.pb.gz  pprof (every event two sample types), for go tool pprof or a
#                         fleet profiler (docs/ci.md: uploading it to Pyroscope)
#   OUTDIR/diff.svg       with --baseline: differential flame graph, baseline -> this run
#   OUTDIR/diff.txt       with --baseline: frames whose share changed most
#   OUTDIR/diff.json      with --baseline: schema cpiflame-diff/1
#
# Exit status: the command's own when it fails; 3 when --fail-above PCT tripped (a frame's
# share of the total grew by more than PCT percentage points against the baseline, with the
# growth's whole 95% interval above PCT). With one run per side the gate knows only sampling
# noise; with --runs N (3 to 5, docs/ci.md) it also knows run-to-run noise: the baseline's
# runs are BASE.data and the profile.K.data files beside it (as this script leaves them), this
# run's are its own N. 0 else.
# CPIFLAME names the cpiflame binary (default: cpiflame on PATH, else target/release/cpiflame).
set -euo pipefail

usage() {
	echo "usage: $0 OUTDIR [--runs N] [--baseline BASE.data] [--fail-above PCT] -- COMMAND [ARGS...]" >&2
	exit 2
}
[ "$#" -ge 3 ] || usage
out="$1"
shift
baseline=""
fail_above=""
runs=1
while [ "$#" -gt 0 ]; do
	case "$1" in
	--runs) runs="$2"; shift 2 ;;
	--baseline) baseline="$2"; shift 2 ;;
	--fail-above) fail_above="$2"; shift 2 ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
[ "$#" -ge 1 ] || usage
case "$runs" in
'' | *[!0-9]* | 0) echo "ci-profile: --runs $runs: not a whole number of runs >= 1" >&2; exit 2 ;;
esac

if [ -z "${CPIFLAME:-}" ]; then
	if command -v cpiflame >/dev/null 2>&1; then
		CPIFLAME=cpiflame
	else
		CPIFLAME="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/release/cpiflame"
	fi
fi
mkdir -p "$out"

status=0
"$CPIFLAME" record -o "$out/profile.data" -- "$@" || status=$?
if [ ! -s "$out/profile.data" ]; then
	echo "ci-profile: no recording was written" >&2
	exit "${status:-1}"
fi
# Runs 2..N for the gate's run-to-run variance.
for ((k = 2; k <= runs; k++)); do
	rm -f "$out/profile.$k.data"
	"$CPIFLAME" record -o "$out/profile.$k.data" -- "$@" || status=$?
	if [ ! -s "$out/profile.$k.data" ]; then
		echo "ci-profile: run $k of $runs wrote no recording" >&2
		exit "${status:-1}"
	fi
done
# The pictures leave out frames under one pixel (the default, FlameGraph's, is 0.1 px): the
# deep, thin stacks of interrupts and page faults otherwise stack up rows of sub-pixel frames
# that read as blank space above the graph. The recording keeps them: `cpiflame render
# profile.data` (or `cpiflame diff BASE.data profile.data`) draws them all.
"$CPIFLAME" render --minwidth 1 "$out/profile.data" -o "$out/cpi.svg"
"$CPIFLAME" report "$out/profile.data" >"$out/report.txt"
"$CPIFLAME" report --json "$out/profile.data" >"$out/report.json"
"$CPIFLAME" convert "$out/profile.data" --to pprof -o "$out/profile.pb.gz"

gate=0
if [ -n "$baseline" ]; then
	"$CPIFLAME" diff --minwidth 1 "$baseline" "$out/profile.data" -o "$out/diff.svg"
	# The other runs of each side: this run's profile.K.data, and the baseline's siblings
	# named the same way (a baseline recorded with fewer runs gives fewer).
	more=()
	for ((k = 2; k <= runs; k++)); do
		more+=(--after "$out/profile.$k.data")
	done
	base_dir="$(dirname "$baseline")"
	for sibling in "$base_dir"/profile.[0-9]*.data; do
		[ -s "$sibling" ] && [ "$sibling" != "$baseline" ] && more+=(--before "$sibling")
	done
	"$CPIFLAME" diff --summary --json "$baseline" "$out/profile.data" "${more[@]}" >"$out/diff.json"
	args=(diff --summary "$baseline" "$out/profile.data" "${more[@]}")
	if [ -n "$fail_above" ]; then
		args+=(--fail-above "$fail_above")
	fi
	"$CPIFLAME" "${args[@]}" >"$out/diff.txt" || gate=$?
fi
echo "ci-profile: wrote $(ls "$out" | tr '\n' ' ')" >&2
if [ "$status" -ne 0 ]; then
	exit "$status"
fi
exit "$gate"
