#!/usr/bin/env bash
# The main job on the bundled demo: builds cpiflame and the seed's cpu_bound/memory_bound
# program (fixtures/demo/cpu_mem_bound.c), records it with `cpiflame record` and renders
# cpi.svg in the repository root.
#
# cpiflame record picks this CPU's stall/cycles pair (see `cpiflame list`); on machines
# without a hardware PMU (most VMs) it records cpu-clock alone and the graph says so.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=target/demo
mkdir -p "$out"

cargo build --release -q -p cpiflame
gcc -O2 -g -o "$out/cpu_mem_bound" fixtures/demo/cpu_mem_bound.c

target/release/cpiflame record -o "$out/out.data" -- "$out/cpu_mem_bound"
target/release/cpiflame render "$out/out.data" --title "CPI Flame Graph: cpu_mem_bound" >cpi.svg
echo "demo.sh: wrote cpi.svg (from $out/out.data)" >&2
