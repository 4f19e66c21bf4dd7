#!/usr/bin/env bash
# Pushes the closed files of a continuous recording to a fleet profiler: every closed file of
# `cpiflame record -a --switch-output TIME -o DIR/perf.data` (or perf's, same names) is
# converted to pprof (`cpiflame convert FILE --to pprof`) and uploaded with curl to Grafana
# Pyroscope (its HTTP ingest API, POST /ingest?format=pprof, multipart field `profile`) and/or
# Parca (POST /profiles/writeraw, the JSON form of ProfileStoreService.WriteRaw), then
# deleted (or, with --keep, kept and marked pushed). See docs/fleet.md.
#
# Usage: scripts/fleet-push.sh [OPTIONS] DIR
#
#   --pyroscope URL   Pyroscope server (e.g. http://pyroscope:4040); repeatable with --parca
#   --parca URL       Parca server's HTTP port (e.g. http://parca:7070)
#   --app NAME        application name: Pyroscope's `name`, Parca's `__name__` (default cpiflame)
#   --label K=V       a label on every upload (repeatable; K: [A-Za-z_][A-Za-z0-9_]*)
#   --header 'H: V'   an HTTP header on every upload (repeatable; e.g. 'X-Scope-OrgID: team'
#                     for a multi-tenant Pyroscope, 'Authorization: Bearer ...')
#   --prefix NAME     the recording's file name, -o's last part (default perf.data): the files
#                     pushed are NAME.TIMESTAMP (digits only, perf's --switch-output names)
#   --span SECS       seconds a file covers, for `from` (default 60: --switch-output 1m)
#   --interval SECS   seconds between passes over DIR (default 10)
#   --once            one pass, then exit: 0 when every closed file was pushed, 1 if any failed
#   --keep            keep pushed files (marked in DIR/.fleet-push/) instead of deleting them
#   --cpiflame PATH   the cpiflame binary (default $CPIFLAME, else cpiflame on PATH)
#
# A file is closed when it has its timestamped name and its perf.data header gives the data
# section's size: perf and cpiflame write NAME while recording and rename it NAME.TIMESTAMP once
# complete, and a file still being written (or left by a killed recorder) has a data size of
# 0 in its header. NAME itself is never touched. Idempotent: a target that took a file is
# marked (DIR/.fleet-push/FILE.TARGET), so a pass after a failure sends each file only to the
# targets that did not take it; the file is deleted (or marked FILE.done with --keep) once
# every target took it. Errors are one line each on stderr: the file and what failed.
set -euo pipefail

prog=fleet-push
die_usage() { printf '%s: error: %s\n' "$prog" "$1" >&2; exit 2; }
say() { printf '%s: %s\n' "$prog" "$*" >&2; }

pyroscope=() parca=() labels=() headers=()
app=cpiflame prefix=perf.data span=60 interval=10 once=0 keep=0 dir=""
cpiflame="${CPIFLAME:-}"
need_value() { [ "$#" -ge 2 ] || die_usage "$1 needs a value"; }
while [ "$#" -gt 0 ]; do
	case "$1" in
	--pyroscope) need_value "$@"; pyroscope+=("${2%/}"); shift 2 ;;
	--parca) need_value "$@"; parca+=("${2%/}"); shift 2 ;;
	--app) need_value "$@"; app=$2; shift 2 ;;
	--label) need_value "$@"; labels+=("$2"); shift 2 ;;
	--header) need_value "$@"; headers+=(-H "$2"); shift 2 ;;
	--prefix) need_value "$@"; prefix=$2; shift 2 ;;
	--span) need_value "$@"; span=$2; shift 2 ;;
	--interval) need_value "$@"; interval=$2; shift 2 ;;
	--cpiflame) need_value "$@"; cpiflame=$2; shift 2 ;;
	--once) once=1; shift ;;
	--keep) keep=1; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) die_usage "unknown option $1 (see --help)" ;;
	*) [ -z "$dir" ] || die_usage "one DIR only ('$dir' and '$1' given)"; dir=$1; shift ;;
	esac
done
if [ "$#" -gt 0 ]; then
	[ -z "$dir" ] && [ "$#" -eq 1 ] || die_usage "one DIR only"
	dir=$1
fi
[ -n "$dir" ] || die_usage "no DIR given (the folder of --switch-output files)"
[ -d "$dir" ] || die_usage "DIR $dir: not a folder"
[ "${#pyroscope[@]}" -gt 0 ] || [ "${#parca[@]}" -gt 0 ] || die_usage "nowhere to push: give --pyroscope URL and/or --parca URL"
for v in span interval; do
	case "${!v}" in '' | *[!0-9]* | 0) die_usage "--$v must be a positive number of seconds, got '${!v}'" ;; esac
done
case "$prefix" in '' | */*) die_usage "--prefix must be a file name (no /), got '$prefix'" ;; esac
for l in "${labels[@]}"; do
	k=${l%%=*}
	[[ "$l" == *=* && "$k" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die_usage "--label $l: expected NAME=VALUE, NAME of letters, digits and _"
	[[ "${l#*=}" != *[$'\x01'-$'\x1f'\"\\{},=]* ]] || die_usage "--label $l: the value may not hold quotes, backslashes, braces, commas, = or control characters"
done
[[ "$app" =~ ^[A-Za-z0-9_.:-]+$ ]] || die_usage "--app $app: use letters, digits and . _ - :"
if [ -z "$cpiflame" ]; then
	cpiflame=$(command -v cpiflame) || die_usage "cpiflame not found on PATH (give --cpiflame PATH or set CPIFLAME)"
fi
[ -x "$cpiflame" ] || die_usage "--cpiflame $cpiflame: not an executable"
command -v curl >/dev/null 2>&1 || die_usage "curl not found on PATH"

state="$dir/.fleet-push"
mkdir -p "$state"

# Percent-encoding of a query value (RFC 3986 unreserved characters kept).
urlencode() {
	local LC_ALL=C s=$1 out="" c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case "$c" in [A-Za-z0-9._~-]) out+=$c ;; *) out+=$(printf '%%%02X' "'$c") ;; esac
	done
	printf '%s' "$out"
}

# closed FILE: whether FILE is a complete perf.data (magic PERFILE2, data size in the header
# non-zero: the u64 at byte 48 of perf_file_header).
closed() {
	[ "$(head -c 8 "$1" 2>/dev/null)" = PERFILE2 ] || return 1
	local size
	size=$(od -An -tu8 -j48 -N8 "$1" 2>/dev/null | tr -d ' ')
	[ -n "$size" ] && [ "$size" != 0 ]
}

# push_pyroscope URL PPROF FROM UNTIL: one POST /ingest.
push_pyroscope() {
	local name=$app"{" sep="" l
	for l in "${labels[@]}"; do name+="$sep$l"; sep=","; done
	name+="}"
	curl -sS --fail-with-body -o "$state/response" -X POST ${headers[@]+"${headers[@]}"} \
		"$1/ingest?name=$(urlencode "$name")&from=$3&until=$4&format=pprof&spyName=cpiflame" \
		-F "profile=@$2;type=application/octet-stream" 2>"$state/curl.err"
}

# push_parca URL PPROF: one POST /profiles/writeraw (WriteRawRequest as JSON, the profile's
# gzip bytes in base64).
push_parca() {
	local body="$state/writeraw.json" l
	{
		printf '{"series":[{"labels":{"labels":[{"name":"__name__","value":"%s"}' "$app"
		for l in "${labels[@]}"; do printf ',{"name":"%s","value":"%s"}' "${l%%=*}" "${l#*=}"; done
		printf ']},"samples":[{"rawProfile":"'
		base64 -w0 "$2"
		printf '"}]}]}\n'
	} >"$body"
	curl -sS --fail-with-body -o "$state/response" -X POST ${headers[@]+"${headers[@]}"} "$1/profiles/writeraw" \
		-H 'Content-Type: application/json' --data-binary "@$body" 2>"$state/curl.err"
}

# One line naming what failed: curl's own error, or the server's status and first words.
failed() {
	local why
	why=$(tr -s '\n' ' ' <"$state/curl.err")
	[ -s "$state/response" ] && why+=" ($(head -c 200 "$state/response" | tr -s '\n\r' '  '))"
	say "error: $1: ${why:-failed}"
}

# One pass; returns 1 when any file could not be converted or pushed.
pass() {
	local status=0 f base pprof until from t url key all
	# Marks of kept files the recorder has since removed (--max-files).
	for f in "$state"/*.done; do
		[ -e "$f" ] || continue
		base=${f##*/}
		[ -e "$dir/${base%.done}" ] || rm -f "$f"
	done
	for f in "$dir/$prefix".*; do
		base=${f##*/}
		case "${base#"$prefix".}" in '' | *[!0-9]*) continue ;; esac
		[ -f "$f" ] || continue
		[ -e "$state/$base.done" ] && continue
		closed "$f" || continue
		pprof="$state/$base.pb.gz"
		if [ ! -s "$pprof" ]; then
			if ! "$cpiflame" convert "$f" --to pprof -o "$pprof.tmp" 2>"$state/convert.err"; then
				say "error: $f: cpiflame convert failed: $(tail -n 1 "$state/convert.err")"
				rm -f "$pprof.tmp"
				status=1
				continue
			fi
			mv "$pprof.tmp" "$pprof"
		fi
		until=$(stat -c %Y "$f")
		from=$((until - span))
		all=1
		for t in pyroscope parca; do
			[ "$t" = pyroscope ] && set -- ${pyroscope[@]+"${pyroscope[@]}"}
			[ "$t" = parca ] && set -- ${parca[@]+"${parca[@]}"}
			for url in "$@"; do
				key="$state/$base.$t.$(printf '%s' "$url" | cksum | cut -d' ' -f1)"
				[ -e "$key" ] && continue
				if { [ "$t" = pyroscope ] && push_pyroscope "$url" "$pprof" "$from" "$until"; } ||
					{ [ "$t" = parca ] && push_parca "$url" "$pprof"; }; then
					: >"$key"
				else
					failed "$f: upload to $t $url"
					all=0
					status=1
				fi
			done
		done
		[ "$all" = 1 ] || continue
		rm -f "$pprof" "$state/$base".*.*
		if [ "$keep" = 1 ]; then
			: >"$state/$base.done"
			say "pushed $f (kept)"
		else
			rm -f "$f"
			say "pushed $f (deleted)"
		fi
	done
	rm -f "$state/response" "$state/curl.err" "$state/convert.err" "$state/writeraw.json"
	return "$status"
}

if [ "$once" = 1 ]; then
	pass
	exit $?
fi
trap 'exit 0' INT TERM
while :; do
	pass || true
	sleep "$interval" &
	wait $! || true
done
