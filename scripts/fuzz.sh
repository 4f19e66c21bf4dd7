#!/usr/bin/env bash
# Fuzz cpiflame's readers with cargo-fuzz (libFuzzer).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#
#   SECONDS  how long each target runs (default 600)
#   TARGET   perf_data sample_record event_specs folded perf_script elf_image tracing_data
#            jitdump marker_file symbol_cache (default: all)
#
# Targets run JOBS at a time (default 2). Each starts from fuzz/corpus/TARGET, seeded from
# fixtures/ on first use (recordings of the fixture programs by perf and by cpiflame, their
# folded output, their binaries in several builds, event specs from EVENTS.md); what the
# fuzzer learns stays there for the next run. Crashes land in fuzz/artifacts/TARGET/; copy
# each into fuzz/regressions/TARGET/ so crates/hostile's tests replay it on stable Rust.
# A summary line per target goes to target/fuzz/results.txt. Exit status 1 if anything
# crashed.
#
# Needs a nightly toolchain (`cargo +nightly`); without one, the stable compiler is asked to
# accept nightly flags (RUSTC_BOOTSTRAP=1). Installs cargo-fuzz if it is missing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
seconds="${1:-600}"
shift || true
all_targets=(perf_data sample_record event_specs folded perf_script elf_image tracing_data jitdump marker_file symbol_cache)
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=("${all_targets[@]}")
jobs="${JOBS:-2}"
work="$root/target/fuzz"
mkdir -p "$work"

if ! command -v cargo-fuzz >/dev/null 2>&1; then
	echo "fuzz: installing cargo-fuzz" >&2
	cargo install cargo-fuzz --locked
fi
if cargo +nightly --version >/dev/null 2>&1; then
	fuzz=(cargo +nightly fuzz)
else
	echo "fuzz: no nightly toolchain; using stable with RUSTC_BOOTSTRAP=1" >&2
	export RUSTC_BOOTSTRAP=1
	fuzz=(cargo fuzz)
fi

# Largest input per target: the seeds fit, and mutations stay fast.
max_len() {
	case "$1" in
	perf_data) echo 262144 ;;
	elf_image) echo 131072 ;;
	sample_record) echo 65536 ;;
	tracing_data) echo 65536 ;;
	jitdump) echo 65536 ;;
	*) echo 16384 ;;
	esac
}

seed() {
	local fixtures="$work/fixtures" rec="$work/recordings"
	if [ ! -x "$fixtures/threads" ]; then
		"$root/scripts/build-fixtures.sh" "$fixtures" 2>/dev/null
	fi
	cargo build --release -q -p cpiflame
	local cpiflame="$root/target/release/cpiflame"
	mkdir -p "$rec"

	# perf.data: small recordings by perf and by cpiflame, in the layouts each writes.
	local c="$root/fuzz/corpus/perf_data"
	if [ -z "$(ls -A "$c" 2>/dev/null)" ]; then
		mkdir -p "$c"
		local p="$rec/perf" q="$rec/cpiflame"
		perf record -q -o "$p-dwarf.data" -e cpu-clock,task-clock -c 2000000 \
			--call-graph dwarf,1024 -- "$fixtures/threads" 0.02 >/dev/null 2>&1
		perf record -q -o "$p-fp.data" -e cpu-clock -c 1000000 -g \
			-- "$fixtures/forks" 0.02 >/dev/null 2>&1
		perf record -q -o "$p-plain.data" -e cpu-clock,page-faults -c 1000000 \
			-- "$fixtures/faults" 2000 >/dev/null 2>&1
		"$cpiflame" record -o "$q-pair.data" -e cpu-clock,task-clock -c 2000000 \
			--call-graph dwarf,2048 -- "$fixtures/mangled" 0.02 >/dev/null 2>&1
		"$cpiflame" record -o "$q-one.data" -c 1000000 \
			-- "$fixtures/cpu_mem_bound" 0.02 >/dev/null 2>&1
		# Off-CPU: switch records, switch samples, sched_waking with raw data and tracing data.
		"$cpiflame" record --off-cpu -o "$q-offcpu.data" -c 1000000 --call-graph none \
			-- "$fixtures/offcpu" 0.02 >/dev/null 2>&1
		perf record -q -o "$p-switch.data" --switch-events -e cpu-clock -c 1000000 -g \
			-- "$fixtures/offcpu" 0.02 >/dev/null 2>&1
		# CGROUP and NAMESPACES records, samples with cgroup ids.
		perf record -q -o "$p-cgroups.data" --namespaces --all-cgroups -e cpu-clock -c 1000000 \
			-- "$fixtures/shift" 50 0.02 >/dev/null 2>&1
		for f in "$rec"/*.data; do
			[ "$(stat -c %s "$f")" -le "$(max_len perf_data)" ] && cp "$f" "$c/"
		done
	fi

	# One record each, with its attr's layout in front (see cpiflame_hostile::sample_record).
	c="$root/fuzz/corpus/sample_record"
	if [ -z "$(ls -A "$c" 2>/dev/null)" ]; then
		mkdir -p "$c"
		python3 - "$c" "$rec"/*.data <<'PY'
import struct, sys
out, files = sys.argv[1], sys.argv[2:]
n = 0
for path in files:
    b = open(path, "rb").read()
    if b[:8] != b"PERFILE2":
        continue
    attr_size, attrs_off = struct.unpack_from("<QQ", b, 16)
    data_off, data_size = struct.unpack_from("<QQ", b, 40)
    sample_type, read_format, flags = struct.unpack_from("<QQQ", b, attrs_off + 24)
    regs = struct.unpack_from("<Q", b, attrs_off + 80)[0]
    flag_byte = 2 if flags & (1 << 18) else 0
    seen = {}
    pos, end = data_off, data_off + (data_size or len(b) - data_off)
    while pos + 8 <= end:
        rtype, misc, size = struct.unpack_from("<IHH", b, pos)
        if size < 8:
            break
        if seen.get(rtype, 0) < (20 if rtype == 9 else 3):
            seen[rtype] = seen.get(rtype, 0) + 1
            head = struct.pack("<QQQBI", sample_type, read_format, regs, flag_byte, rtype)
            open(f"{out}/{n:04}", "wb").write(head + b[pos:pos + size])
            n += 1
        pos += size
PY
	fi

	c="$root/fuzz/corpus/folded"
	if [ -z "$(ls -A "$c" 2>/dev/null)" ]; then
		mkdir -p "$c"
		for f in "$rec"/*.data; do
			local name
			name="$(basename "$f" .data)"
			"$cpiflame" fold --pid "$f" 2>/dev/null | head -c 16000 >"$c/$name.folded" || true
			"$cpiflame" fold --event cpu-clock "$f" 2>/dev/null | head -c 16000 \
				>"$c/$name-one.folded" || true
		done
		printf 'main;a;b 3 10\nmain;a [k] 0 4\nmain;c_[k] 1 2\n' >"$c/annotated.folded"
		find "$c" -size 0 -delete
	fi

	# perf script text of the same recordings, in several -F layouts (and with the header).
	c="$root/fuzz/corpus/perf_script"
	if [ -z "$(ls -A "$c" 2>/dev/null)" ]; then
		mkdir -p "$c"
		for f in "$rec"/perf-*.data; do
			local name
			name="$(basename "$f" .data)"
			perf script -i "$f" 2>/dev/null | head -c 16000 >"$c/$name.perf" || true
			perf script -i "$f" --header 2>/dev/null | head -c 16000 >"$c/$name-header.perf" || true
			perf script -i "$f" -F comm,tid,time,event,ip,sym 2>/dev/null | head -c 16000 \
				>"$c/$name-fields.perf" || true
		done
		find "$c" -size 0 -delete
	fi

	c="$root/fuzz/corpus/event_specs"
	if [ -z "$(ls -A "$c" 2>/dev/null)" ]; then
		mkdir -p "$c"
		local i=0
		while IFS= read -r line; do
			printf '%s\n' "$line" >"$c/spec-$i"
			i=$((i + 1))
		done <<'SPECS'
cycles,instructions
cpu/event=0xa2,umask=0x01,name=resource_stalls_any/
cpu/event=0xa3,umask=0x04,cmask=4,period=100003/u
r1a2,r3c:pp
cpu_core/event=0xa3,umask=0x04,cmask=0x4/
amd_core/event=0xd1,umask=0x0/k
armv8_pmuv3_0/event=0x24/
stalled-cycles-backend:u,cpu-clock:k,task-clock
r0400_04a3,cpu/config=0x3c,config1=1,config2=2/H
{cycles,instructions}:S
SPECS
		cp /proc/cpuinfo "$c/cpuinfo" 2>/dev/null || true
		grep -hoE '(r[0-9a-fA-Fx_]+|[a-z_0-9]+/[^ `|]*/[a-zA-Z]*)' "$root/../shared/EVENTS.md" \
			2>/dev/null | sort -u | head -100 >"$c/events-md" || true
		find "$c" -size 0 -delete
	fi

	# Marker files (--region): the regression inputs, written by the markers library.
	c="$root/fuzz/corpus/marker_file"
	if [ -z "$(ls -A "$c" 2>/dev/null)" ]; then
		mkdir -p "$c"
		cp "$root"/fuzz/regressions/marker_file/*.txt "$c/" 2>/dev/null || true
	fi

	# Symbol-index cache entries, each with the file it indexes: the regression inputs (real
	# entries with their string table moved into the input).
	c="$root/fuzz/corpus/symbol_cache"
	if [ -z "$(ls -A "$c" 2>/dev/null)" ]; then
		mkdir -p "$c"
		cp "$root"/fuzz/regressions/symbol_cache/seed-* "$c/" 2>/dev/null || true
	fi

	# JIT dumps: CPython 3.13's (-X perf_jit: loads with unwinding info, machine 0) and
	# node's (--perf-prof: loads, debug info, unwinding info), cut to the largest input.
	c="$root/fuzz/corpus/jitdump"
	if [ -z "$(ls -A "$c" 2>/dev/null)" ]; then
		mkdir -p "$c"
		local jd="$rec/jit" py
		mkdir -p "$jd"
		printf 'def f(n):\n    return n if n < 2 else f(n-1) + f(n-2)\nf(18)\n' >"$jd/f.py"
		py="$(ls -d "$(pyenv root 2>/dev/null)"/versions/3.13*/bin/python3.13 2>/dev/null | head -1)"
		(cd "$jd" && "$py" -X perf_jit -c 'import os; print(os.getpid()); exec(open("f.py").read())' \
			>"$jd/pid" 2>/dev/null) || true
		[ -s "$jd/pid" ] && mv "/tmp/jit-$(cat "$jd/pid").dump" "$jd/python.dump" 2>/dev/null || true
		printf 'function f(n){return n<2?n:f(n-1)+f(n-2)}\nf(25)\n' >"$jd/f.js"
		(cd "$jd" && node --perf-prof --perf-prof-unwinding-info f.js) >/dev/null 2>&1 || true
		for f in "$jd"/*.dump; do
			[ -s "$f" ] && head -c "$(max_len jitdump)" "$f" >"$c/$(basename "$f")"
		done
		cp "$root"/fuzz/regressions/jitdump/*.dump "$c/" 2>/dev/null || true
	fi

	# Tracing data: the payload of perf's PERF_RECORD_HEADER_TRACING_DATA in pipe recordings of
	# tracepoints (the format files of the events recorded).
	c="$root/fuzz/corpus/tracing_data"
	if [ -z "$(ls -A "$c" 2>/dev/null)" ]; then
		mkdir -p "$c"
		local tp
		for tp in sched:sched_switch sched:sched_switch,sched:sched_wakeup,irq:irq_handler_entry; do
			perf record -q -e "$tp" -o - -- sleep 0.05 2>/dev/null >"$rec/tp.pipe" || continue
			python3 - "$rec/tp.pipe" "$c/${tp//[:,]/-}" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
pos = 16
while pos + 8 <= len(b):
    rtype, misc, size = struct.unpack_from("<IHH", b, pos)
    if size < 8:
        break
    if rtype == 66:
        n = struct.unpack_from("<I", b, pos + 8)[0]
        open(sys.argv[2], "wb").write(b[pos + size:pos + size + n])
        break
    pos += size
PY
		done
		find "$c" -size 0 -delete
	fi

	# ELF: the fixture programs as built, stripped, as separate debug files, with compressed
	# DWARF and DWARF 4, and an object file.
	c="$root/fuzz/corpus/elf_image"
	if [ -z "$(ls -A "$c" 2>/dev/null)" ]; then
		mkdir -p "$c"
		local src="$root/fixtures/demo/cpu_mem_bound.c"
		gcc -O2 -g -o "$c/gcc" "$src"
		gcc -O2 -g -gz -o "$c/gcc-gz" "$src"
		gcc -O0 -gdwarf-4 -o "$c/gcc-dwarf4" "$src"
		gcc -O2 -g -c -o "$c/gcc.o" "$src"
		strip -o "$c/gcc-stripped" "$c/gcc"
		objcopy --only-keep-debug "$c/gcc" "$c/gcc.debug"
		cp "$fixtures/mangled" "$c/gpp"
		for f in "$c"/*; do
			[ "$(stat -c %s "$f")" -le "$(max_len elf_image)" ] || rm "$f"
		done
	fi
}

seed
echo "fuzz: building targets" >&2
(cd fuzz && "${fuzz[@]}" build -O >/dev/null)

run_target() {
	local t="$1" log="$work/$1.log" started=$SECONDS
	mkdir -p "fuzz/artifacts/$t"
	# -malloc_limit_mb: a single allocation larger than this is a finding (the reader must
	# not trust sizes a file claims); -timeout: an input that takes 20 s is a hang.
	(cd fuzz && "${fuzz[@]}" run -O "$t" "corpus/$t" -- \
		-max_total_time="$seconds" -max_len="$(max_len "$t")" \
		-rss_limit_mb=4096 -malloc_limit_mb=1024 -timeout=20 \
		-artifact_prefix="artifacts/$t/" -print_final_stats=1) >"$log" 2>&1 || true
	local ran=$((SECONDS - started)) execs cov crashes corpus
	execs="$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)"
	cov="$(grep -aoE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo '?')"
	corpus="$(find "fuzz/corpus/$t" -type f | wc -l)"
	crashes="$(find "fuzz/artifacts/$t" -type f | wc -l)"
	echo "$t: ${ran}s, ${execs:-0} execs, coverage $cov edges, corpus $corpus, crashes $crashes" \
		| tee -a "$work/results.txt"
}

echo "# $(date -u +%FT%TZ) scripts/fuzz.sh $seconds ${targets[*]}" >>"$work/results.txt"
running=0
for t in "${targets[@]}"; do
	run_target "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait
if [ -n "$(find fuzz/artifacts -type f 2>/dev/null)" ]; then
	echo "fuzz: crashes in fuzz/artifacts/ (logs in $work/)" >&2
	exit 1
fi
