#!/usr/bin/env bash
# The main job on the bundled demo: builds cpiflame and the seed's cpu_bound/memory_bound
# program (fixtures/demo/cpu_mem_bound.c), records it with `cpiflame record` and renders
# cpi.svg in the repository root.
#
# cpiflame record picks this CPU's stall/cycles pair (see `cpiflame list`); on machines
# without a hardware PMU (most VMs) it records cpu-clock alone and the graph says so.
#
# Then the second picture, wall.svg: `record --off-cpu` of fixtures/workloads/offcpu.c, whose
# threads compute, sleep, wait on a mutex and a pipe, and share a CPU, drawn in wall time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=target/demo
mkdir -p "$out"

cargo build --release -q -p cpiflame
gcc -O2 -g -o "$out/cpu_mem_bound" fixtures/demo/cpu_mem_bound.c

target/release/cpiflame record -o "$out/out.data" -- "$out/cpu_mem_bound"
target/release/cpiflame render "$out/out.data" --title "CPI Flame Graph: cpu_mem_bound" >cpi.svg
echo "demo.sh: wrote cpi.svg (from $out/out.data)" >&2

gcc -O2 -g -pthread -o "$out/offcpu" fixtures/workloads/offcpu.c
target/release/cpiflame record --off-cpu -o "$out/offcpu.data" -- "$out/offcpu" >/dev/null
target/release/cpiflame render "$out/offcpu.data" --title "Wall time: offcpu" >wall.svg
echo "demo.sh: wrote wall.svg (from $out/offcpu.data)" >&2
