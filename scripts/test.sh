#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what the tests need (perf as the oracle,
# C and C++ compilers for the fixture workloads, node, setpriv, ...: the table below), then
# checks formatting and lints and runs every test. Used by .ci/run; run it from anywhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Every command the tests run (grep crates/*/tests for Command::new) and this script's own
# steps, each with the Debian package that provides it. A test whose tool is missing fails
# under CI=true (cpiflame_testkit::unavailable), so what is missing is installed here.
tools=(
	perf:linux-perf    # the oracle: perf record / script / report / inject --jit
	gcc:gcc            # fixture workloads (scripts/build-fixtures.sh), the CI artifact
	g++:g++            # the C++ fixture (mangled names)
	c++filt:binutils   # unwind's C++ names are checked against c++filt
	node:nodejs        # node --check of the flame graphs' JavaScript; jit_runtimes.rs: node's JIT
	java:openjdk-17-jdk-headless  # jit_runtimes.rs: HotSpot's perf map (JDK 17 and later)
	javac:openjdk-17-jdk-headless # jit_runtimes.rs: compiles fixtures/jit/Fib.java
	chromium:chromium  # timeline.rs: the timeline page driven in headless Chromium
	python3:python3    # the CI artifact check below; markers-c's ctypes smoke test
	script:bsdutils    # threads_and_progress.rs: a terminal for the progress display
	setpriv:util-linux # faults.rs: an unprivileged user under perf_event_paranoid 2 and 3
	mount:mount        # faults.rs: a full disk (a small tmpfs); containers.rs: a tmpfs in a mount namespace
	unshare:util-linux # containers.rs: a process in its own mount namespace
	umount:mount
	useradd:passwd     # faults.rs: the test user
	id:coreutils
	mkfifo:coreutils   # unwind's hostile paths
	xz:xz-utils        # lbr.rs: the expected stacks of the perf 3.8 file
	nm:binutils        # lbr.rs: the fixture's function addresses
	addr2line:binutils # c2c.rs: the source lines of the fixtures' instructions
	strip:binutils     # c2c.rs: a fixture without DWARF
	aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu # annotate's AArch64 function (fixtures/aarch64)
	aarch64-linux-gnu-objdump:binutils-aarch64-linux-gnu # its oracle text
	cc:gcc             # unwind's in-memory source test builds a tiny C program; markers-c's C programs
	c++:g++            # markers-c: the header compiled as C++
	pkg-config:pkgconf # markers-c: programs built with the installed library's pkg-config files
	ldd:libc-bin       # markers-c: the statically linked library is not a dynamic dependency
	go:golang-go       # pprof.rs: go tool pprof reads convert --to pprof's output
	curl:curl          # fleet.rs: scripts/fleet-push.sh uploads with curl
	base64:coreutils   # fleet.rs: the script's Parca body, and the test's decoding of it
	npm:npm            # viewers.rs: the speedscope npm package (schema and offline viewer)
	gzip:gzip          # viewers.rs: convert --to firefox -o x.json.gz read back
	od:coreutils       # fleet.rs: the script reads perf.data headers with od
	bash:bash
	sh:dash
)
missing=()
for entry in "${tools[@]}"; do
	command -v "${entry%%:*}" >/dev/null 2>&1 || missing+=("${entry#*:}")
done
# Not a command: unwind's dwarf_units.rs reads the system libc's separate debug file (found
# by build id; package libc6-dbg).
libc_debug_file() {
	local libc id
	libc=$(ldd /bin/sh 2>/dev/null | awk '/libc\.so/ {print $3}')
	id=$(readelf -n "$libc" 2>/dev/null | sed -n 's/.*Build ID: //p')
	[ -n "$id" ] && [ -e "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ]
}
libc_debug_file || missing+=(libc6-dbg)
# Not a command: viewers.rs validates speedscope files with Debian's python3-jsonschema.
jsonschema() { /usr/bin/python3 -c 'import jsonschema' >/dev/null 2>&1; }
jsonschema || missing+=(python3-jsonschema)
if [ "${#missing[@]}" -gt 0 ]; then
	mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
	echo "test.sh: installing ${missing[*]}" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "test.sh: need root to install ${missing[*]} (or install them and rerun)" >&2
		exit 1
	fi
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi
# CPython 3.13 (jit_runtimes.rs: -X perf_jit and -X perf), which Debian 12 does not package:
# pyenv's, as the test looks for it ($(pyenv root)/versions/3.13.*, else python3.13 on PATH),
# installed with pyenv where pyenv is and it is missing.
python313() {
	local root
	if command -v pyenv >/dev/null 2>&1; then
		root=$(pyenv root)
		compgen -G "$root/versions/3.13.*/bin/python3.13" >/dev/null && return 0
	fi
	python3.13 -c 'import sys; assert sys.version_info[:2] == (3, 13)' >/dev/null 2>&1
}
if ! python313 && command -v pyenv >/dev/null 2>&1; then
	echo "test.sh: installing CPython 3.13 with pyenv" >&2
	pyenv install -s 3.13 || echo "test.sh: pyenv install 3.13 failed" >&2
fi
# An install that did not provide a tool is a failure here, not a skipped test later.
absent=()
python313 || absent+=("CPython 3.13 (pyenv install 3.13, or python3.13 on PATH)")
for entry in "${tools[@]}"; do
	command -v "${entry%%:*}" >/dev/null 2>&1 || absent+=("${entry%%:*} (package ${entry#*:})")
done
libc_debug_file || absent+=("the system libc's debug file (package libc6-dbg)")
jsonschema || absent+=("Debian's python3 module jsonschema (package python3-jsonschema)")
for tool in cargo rustc; do # the toolchain (rustup), not from apt
	command -v "$tool" >/dev/null 2>&1 || absent+=("$tool (the Rust toolchain)")
done
if [ "${#absent[@]}" -gt 0 ]; then
	printf 'test.sh: missing after install: %s\n' "${absent[@]}" >&2
	exit 1
fi
# viewers.rs's oracles, under target/tools: the speedscope npm package (its file-format
# schema and its offline viewer, dist/release) and samply (`samply import` of the perf.data
# that convert --to firefox reads). Installed once; a failed install fails here.
tools_dir=target/tools
if [ ! -f "$tools_dir/speedscope/package/dist/release/index.html" ]; then
	echo "test.sh: installing the speedscope npm package into $tools_dir/speedscope" >&2
	rm -rf "$tools_dir/speedscope" && mkdir -p "$tools_dir/speedscope"
	(cd "$tools_dir/speedscope" && npm pack --silent speedscope@1.25.0 >/dev/null &&
		tar xzf speedscope-*.tgz)
fi
if [ ! -x "$tools_dir/samply/bin/samply" ]; then
	echo "test.sh: installing samply into $tools_dir/samply (cargo install, a few minutes)" >&2
	cargo install --locked --quiet --root "$tools_dir/samply" samply@0.13.1
fi

# The fault tests mount a tmpfs, set kernel.perf_event_paranoid and add a user: under CI
# they must run, so CI must be root (a developer without root sees them skipped).
ci="${CI:-}"
case "${ci,,}" in
true | 1)
	if [ "$(id -u)" -ne 0 ]; then
		echo "test.sh: CI=${CI}: the fault tests need root (mount, sysctl, useradd)" >&2
		exit 1
	fi
	;;
esac

# The oracle must be able to record: a failure here is a machine problem, say so plainly.
if ! perf record -q -e cpu-clock -o /dev/null true >/dev/null 2>&1; then
	echo "test.sh: 'perf record -e cpu-clock' does not work here" \
		"(kernel.perf_event_paranoid is $(cat /proc/sys/kernel/perf_event_paranoid))" >&2
	exit 1
fi

echo "== cargo fmt --check" >&2
cargo fmt --all -- --check
echo "== cargo clippy" >&2
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo doc" >&2
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
echo "== cargo test" >&2
cargo test --workspace

# The CI recipe on the bundled demo, leaving its flame graphs in target/ci-artifacts (the
# artifact a CI run would upload), then a check that they are what they claim to be.
echo "== CI artifact (scripts/ci-profile.sh on the demo)" >&2
cargo build -q -p cpiflame
art=target/ci-artifacts
rm -rf "$art" && mkdir -p "$art"
gcc -O2 -g -o "$art/cpu_mem_bound" fixtures/demo/cpu_mem_bound.c
export CPIFLAME="$PWD/target/debug/cpiflame"
bash scripts/ci-profile.sh "$art/baseline" --runs 3 -- "$art/cpu_mem_bound" 0.2
bash scripts/ci-profile.sh "$art/run" --runs 3 --baseline "$art/baseline/profile.data" \
	--fail-above 50 -- "$art/cpu_mem_bound" 0.2
python3 - "$art" <<'PY'
import sys, xml.etree.ElementTree as ET
art = sys.argv[1]
for svg in ("baseline/cpi.svg", "run/cpi.svg", "run/diff.svg"):
    text = open(f"{art}/{svg}", encoding="utf-8").read()
    ET.fromstring(text)  # well-formed
    for fn in ("memory_bound", "cpu_bound"):
        assert fn in text, f"{svg}: {fn} missing"
report = open(f"{art}/run/report.txt").read()
assert "memory_bound" in report and "cpu_bound" in report, report
import json
diff = json.load(open(f"{art}/run/diff.json"))
assert diff["runs"] == {"before": 3, "after": 3}, diff["runs"]
print("ci artifact: 3 SVGs well-formed with memory_bound and cpu_bound; report and diff (3 runs a side) written")
PY
# The pprof artifact, read by pprof itself.
top="$(go tool pprof -top -symbolize=none "$art/run/profile.pb.gz")"
for fn in memory_bound cpu_bound; do
	grep -q " $fn\$" <<<"$top" || { echo "ci artifact: profile.pb.gz: $fn missing in go tool pprof -top" >&2; exit 1; }
done
echo "ci artifact: profile.pb.gz read by go tool pprof, memory_bound and cpu_bound in -top"
