#!/usr/bin/env bash
# The main job on the bundled demo: builds cpiflame and the seed's cpu_bound/memory_bound
# program (fixtures/demo/cpu_mem_bound.c), records it with DWARF call chains and renders
# cpi.svg in the repository root.
#
# Events: the seed's stall/cycles pair when this CPU has one that opens (Intel first, then
# AMD); on machines without a hardware PMU (most VMs) cpu-clock alone, which gives a plain
# flame graph whose subtitle says there is no stall data.
# Until `cpiflame record` exists, the recording is done by perf.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=target/demo
mkdir -p "$out"

if ! command -v perf >/dev/null 2>&1; then
	echo "demo.sh: perf is needed to record (apt-get install linux-perf)" >&2
	exit 1
fi
cargo build --release -q -p cpiflame
gcc -O2 -g -o "$out/cpu_mem_bound" fixtures/demo/cpu_mem_bound.c

# Candidate (stalls, cycles) pairs from shared/EVENTS.md, tried in order.
pairs=(
	"cpu/event=0xa3,umask=0x4,cmask=4,name=cycle_activity_stalls_total/ cpu/event=0x3c,umask=0x0,name=cpu_clk_unhalted_thread_p/"
	"cpu/event=0xa2,umask=0x1,name=resource_stalls_any/ cpu/event=0x3c,umask=0x0,name=cpu_clk_unhalted_thread_p/"
	"cpu/event=0xd6,umask=0x1b,name=ex_no_retire_all/ cpu/event=0x76,name=ls_not_halted_cyc/"
)
events=cpu-clock
for pair in "${pairs[@]}"; do
	set -- $pair
	if perf stat -e "$1,$2" true >/dev/null 2>&1 &&
		! perf stat -e "$1,$2" true 2>&1 | grep -q "not supported"; then
		events="$1,$2"
		break
	fi
done
if [ "$events" = cpu-clock ]; then
	echo "demo.sh: no hardware stall/cycles counters here; recording cpu-clock (no stall colours)" >&2
fi

if [ "$events" = cpu-clock ]; then
	# perf's default frequency; a software clock has no cycle period to fix.
	perf record -q -e cpu-clock --call-graph dwarf -o "$out/out.data" -- "$out/cpu_mem_bound"
else
	# The seed's recipe: both events on the same fixed period.
	perf record -q -e "$events" -c 2000003 --call-graph dwarf -o "$out/out.data" \
		-- "$out/cpu_mem_bound"
fi
target/release/cpiflame render "$out/out.data" --title "CPI Flame Graph: cpu_mem_bound" >cpi.svg
echo "demo.sh: wrote cpi.svg (from $out/out.data, events $events)" >&2
