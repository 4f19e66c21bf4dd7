# shellcheck shell=bash
# Shared by the benchmark scripts (sourced, not run): installs the tools a benchmark needs,
# builds cpiflame and the fixtures, and the statistics of the reports. The sourcing script
# defines log MESSAGE and die MESSAGE (and root, OUT, CPIFLAME) first.

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

# OUT made and absolute, TARGET_DIR absolute, CPIFLAME the release binary in it.
bench_paths() {
	mkdir -p "$OUT"
	OUT="$(cd "$OUT" && pwd)"
	case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$root/$TARGET_DIR" ;; esac
	CPIFLAME="$TARGET_DIR/release/cpiflame"
}

# The first rows of a report's table of facts: date, machine, perf, cpiflame.
report_facts() {
	local cpu_model git_rev
	cpu_model="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	git_rev="$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "| | |"
	echo "| --- | --- |"
	echo "| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |"
	echo "| machine | $(nproc) CPUs, ${cpu_model:-unknown CPU}, kernel $(uname -r); perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?'), perf_event_mlock_kb $(cat /proc/sys/kernel/perf_event_mlock_kb 2>/dev/null || echo '?'); load average at the end $(cut -d' ' -f1-3 /proc/loadavg) |"
	echo "| perf | $(perf --version) |"
	echo "| cpiflame | $("$CPIFLAME" --version) ($git_rev) |"
}

# The release binary: $CPIFLAME built with cargo.
build_cpiflame() {
	log "cargo build --release -p cpiflame"
	cargo build --release -p cpiflame
	[ -x "$CPIFLAME" ] || die "cargo build did not produce $CPIFLAME"
}

# build_fixtures WORKLOAD...: scripts/build-fixtures.sh into FIX=$OUT/fixtures, each WORKLOAD
# checked.
build_fixtures() {
	local w
	command -v rustc >/dev/null 2>&1 || die "rustc not found on PATH (scripts/build-fixtures.sh needs it)"
	FIX="$OUT/fixtures"
	log "bash scripts/build-fixtures.sh $FIX"
	bash "$root/scripts/build-fixtures.sh" "$FIX"
	for w in "$@"; do
		[ -x "$FIX/$w" ] || die "workload $FIX/$w was not built"
	done
}

# median FILE COLUMN
median() {
	awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ a[NR] = $1 } END {
		if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# colmax FILE COLUMN
colmax() { awk -v c="$2" 'NR == 1 || $c > m { m = $c } END { print m }' "$1"; }
# ratio A B: A / B to two decimals; per A B: A / B rounded (n/a when B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2f", a / b }'; }
per() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.0f", a / b }'; }
yesno() { if [ "$1" = 1 ]; then echo "**met**"; else echo "**NOT met**"; fi; }
