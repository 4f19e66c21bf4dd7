#!/usr/bin/env bash
# Build cpiflame's workload fixtures (see fixtures/README.md).
#
# Usage: scripts/build-fixtures.sh OUTDIR
#
# Produces in OUTDIR:
#   cpu_mem_bound     fixtures/demo/cpu_mem_bound.c        (gcc -O2 -g)
#   threads           fixtures/workloads/threads.c         (gcc -O2 -g -pthread)
#   forks             fixtures/workloads/forks.c           (gcc -O2 -g)
#   faults            fixtures/workloads/faults.c          (gcc -O2 -g)
#   swarm             fixtures/workloads/swarm.c           (gcc -O2 -g -pthread)
#   churn             fixtures/workloads/churn.c           (gcc -O2 -g -pthread)
#   pingpong          fixtures/workloads/pingpong.c        (gcc -O2 -g -pthread)
#   shift             fixtures/workloads/shift.c           (gcc -O2 -g)
#   rate              fixtures/workloads/rate.c            (gcc -O2 -g; scripts/bench-system.sh)
#   hotloop           fixtures/workloads/hotloop.c         (gcc -O2 -g)
#   hotloop_cpp       fixtures/workloads/hotloop_cpp.cpp   (g++ -O2 -g)
#   hotloop_rust      fixtures/workloads/hotloop_rust.rs   (rustc -C opt-level=2 -g)
#   coldpart          fixtures/workloads/coldpart.c        (gcc -O2 -g)
#   false_sharing     fixtures/workloads/false_sharing.c   (gcc -O2 -g -pthread)
#   offcpu            fixtures/workloads/offcpu.c          (gcc -O2 -g -pthread)
#   mangled           fixtures/workloads/mangled.cpp       (g++ -O2 -g)
#   rust_workload     fixtures/workloads/rust_workload.rs  (rustc, legacy mangling)
#   rust_workload_v0  same source, -C symbol-mangling-version=v0
#   jitdump           fixtures/workloads/jitdump.c         (gcc -O2 -g -fno-omit-frame-pointer)
#   raytrace          fixtures/workloads/raytrace.c        (gcc -O2 -g -DRAYTRACE_NO_MARKERS
#                                                           -pthread -lm: the bare ray tracer;
#                                                           its marked build links the markers'
#                                                           C library, built by the tests)
#
# All but jitdump are built without frame pointers (the x86_64 default at -O2,
# and -C force-frame-pointers=no for rustc), so only DWARF CFI can unwind them.
# jitdump's C frames keep them: its JIT code is unwound by either rule, and the
# C frames around it must be too.
# Environment overrides: CC (default gcc), CXX (default g++), RUSTC (default
# rustc).
set -euo pipefail

if [ "$#" -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1"
mkdir -p "$out"

CC="${CC:-gcc}"
CXX="${CXX:-g++}"
RUSTC="${RUSTC:-rustc}"

for tool in "$CC" "$CXX" "$RUSTC"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "build-fixtures: required compiler '$tool' not found on PATH" >&2
		exit 1
	fi
done

run() {
	echo "+ $*" >&2
	"$@"
}

run "$CC" -O2 -g -fomit-frame-pointer \
	-o "$out/cpu_mem_bound" "$root/fixtures/demo/cpu_mem_bound.c"
run "$CC" -O2 -g -fomit-frame-pointer -pthread \
	-o "$out/threads" "$root/fixtures/workloads/threads.c"
run "$CC" -O2 -g -fomit-frame-pointer \
	-o "$out/forks" "$root/fixtures/workloads/forks.c"
run "$CC" -O2 -g -o "$out/faults" "$root/fixtures/workloads/faults.c"
run "$CC" -O2 -g -pthread -o "$out/swarm" "$root/fixtures/workloads/swarm.c"
run "$CC" -O2 -g -pthread -o "$out/churn" "$root/fixtures/workloads/churn.c"
run "$CC" -O2 -g -pthread -o "$out/pingpong" "$root/fixtures/workloads/pingpong.c"
run "$CC" -O2 -g -o "$out/shift" "$root/fixtures/workloads/shift.c"
run "$CC" -O2 -g -o "$out/rate" "$root/fixtures/workloads/rate.c"
run "$CC" -O2 -g -o "$out/hotloop" "$root/fixtures/workloads/hotloop.c"
run "$CXX" -O2 -g -o "$out/hotloop_cpp" "$root/fixtures/workloads/hotloop_cpp.cpp"
run "$RUSTC" --edition 2021 -C opt-level=2 -g -C force-frame-pointers=no \
	-o "$out/hotloop_rust" "$root/fixtures/workloads/hotloop_rust.rs"
run "$CC" -O2 -g -o "$out/coldpart" "$root/fixtures/workloads/coldpart.c"
run "$CC" -O2 -g -pthread \
	-o "$out/false_sharing" "$root/fixtures/workloads/false_sharing.c"
run "$CC" -O2 -g -pthread -o "$out/offcpu" "$root/fixtures/workloads/offcpu.c"
run "$CXX" -O2 -g -fomit-frame-pointer \
	-o "$out/mangled" "$root/fixtures/workloads/mangled.cpp"
run "$RUSTC" --edition 2021 -C opt-level=2 -g -C force-frame-pointers=no \
	-o "$out/rust_workload" "$root/fixtures/workloads/rust_workload.rs"
run "$RUSTC" --edition 2021 -C opt-level=2 -g -C force-frame-pointers=no \
	-C symbol-mangling-version=v0 \
	-o "$out/rust_workload_v0" "$root/fixtures/workloads/rust_workload.rs"
run "$CC" -O2 -g -fno-omit-frame-pointer \
	-o "$out/jitdump" "$root/fixtures/workloads/jitdump.c"
run "$CC" -O2 -g -DRAYTRACE_NO_MARKERS -pthread \
	-o "$out/raytrace" "$root/fixtures/workloads/raytrace.c" -lm

echo "build-fixtures: built cpu_mem_bound threads forks faults swarm churn pingpong shift rate hotloop hotloop_cpp hotloop_rust coldpart false_sharing offcpu mangled rust_workload rust_workload_v0 jitdump raytrace in $out" >&2
