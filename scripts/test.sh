#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what the tests need (perf as the oracle,
# C and C++ compilers for the fixture workloads), then checks formatting and lints and runs
# every test. Used by .ci/run; run it from anywhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

missing=()
command -v perf >/dev/null 2>&1 || missing+=(linux-perf)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
if [ "${#missing[@]}" -gt 0 ]; then
	echo "test.sh: installing ${missing[*]}" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "test.sh: need root to install ${missing[*]} (or install them and rerun)" >&2
		exit 1
	fi
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

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
