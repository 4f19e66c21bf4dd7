# shellcheck shell=bash
# Shared by the benchmark scripts (sourced, not run): installs the tools a benchmark needs.
# The sourcing script defines log MESSAGE and die MESSAGE first.

# Runs a command as root (directly, or with sudo).
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root to run: $*"
	fi
}

apt_updated=0
apt_install() {
	command -v apt-get >/dev/null 2>&1 || die "cannot install $*: no apt-get on this machine"
	if [ "$apt_updated" -eq 0 ]; then
		log "apt-get update"
		as_root apt-get update
		apt_updated=1
	fi
	log "apt-get install -y $*"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}

# perf (the competitor), GNU time (peak RSS), the fixture compilers and cargo.
install_bench_tools() {
	# shellcheck disable=SC2015 # installs when perf is missing or does not run
	command -v perf >/dev/null 2>&1 && perf --version >/dev/null 2>&1 || apt_install linux-perf
	[ -x /usr/bin/time ] || apt_install time
	command -v gcc >/dev/null 2>&1 || apt_install gcc
	command -v g++ >/dev/null 2>&1 || apt_install g++
	command -v cargo >/dev/null 2>&1 || die "cargo not found on PATH (install Rust with rustup)"
	perf --version >/dev/null 2>&1 || die "perf is installed but does not run: $(perf --version 2>&1 | head -n1)"
}
