#!/usr/bin/env bash
#
# bench-vs-fio.sh - side-by-side IOPS / CPU-cost comparison of iomatrix and fio.
#
# For every pattern, runs fio and iomatrix alternately (fio, iomatrix, fio,
# iomatrix, ...) against the same target with equivalent settings, then prints
# per-pair IOPS, the iomatrix/fio IOPS ratio, and CPU-seconds per million I/Os.
#
# Requirements: bash, coreutils, awk, sed, fio and an iomatrix binary.
# Nothing is installed by this script.

set -u -o pipefail
export LC_ALL=C

PROG=bench-vs-fio

usage() {
	cat <<'EOF'
Usage: scripts/bench-vs-fio.sh [options] TARGET

Benchmark iomatrix against fio on TARGET (a regular file or a block device),
alternating fio and iomatrix runs for each pattern, and print per-pair IOPS,
the iomatrix/fio IOPS ratio, its median, and the median CPU-seconds per
million I/Os of both tools.

Options:
  -b, --bin PATH         iomatrix binary (default: ./iomatrix if executable,
                         else `iomatrix` on PATH)
  -p, --pairs N          alternating pairs per pattern (default 3)
  -r, --runtime SECONDS  runtime of each run (default 10)
      --ramp SECONDS     ramp time for both tools (default 1)
  -s, --size SIZE        file size when TARGET is a regular file (default 4GiB;
                         iomatrix size syntax, 4GiB == fio 4g)
  -e, --engine ENGINE    iomatrix engine: uring|psync (default uring).
                         uring: fio ioengine=io_uring, iodepth=QD, numjobs=JOBS.
                         psync: fio ioengine=psync, iodepth=1, numjobs=QD*JOBS;
                                iomatrix --engine psync --qd QD --jobs JOBS.
      --pattern SPEC     repeatable; SPEC = RW:BS:QD[:RWMIX[:JOBS]]
                         RW    randread|randwrite|randrw|read|write
                         BS    block size, e.g. 4k, 16k, 1m (same string is
                               given to both tools)
                         QD    queue depth (per job)
                         RWMIX read percentage for randrw (default 50)
                         JOBS  number of jobs (default 1); RWMIX may be left
                               empty: randread:4k:32::4
                         e.g. randread:4k:32, randrw:16k:8:50
                         default set: randread:4k:1 randread:4k:32
                                      randwrite:4k:32 randrw:16k:8:50
      --fio-extra ARGS   extra args appended to every fio command, split on
                         whitespace (e.g. "--registerfiles=1 --fixedbufs=1";
                         "--allow_mounted_write=1" for a mounted device)
      --allow-destructive
                         pass --allow-destructive to iomatrix and allow write
                         patterns on a block device (DESTROYS ITS DATA)
  -o, --out DIR          keep every raw JSON output (and stderr, commands.log,
                         summary.txt) in DIR (default: a mktemp dir, removed
                         at exit unless --keep)
  -k, --keep             keep the default mktemp output dir
  -h, --help             show this help

Details:
  * If TARGET is a regular file, one short iomatrix warm-up run
    (randread, 1s) is done first so that the file is created/laid out by
    iomatrix before anything is timed; fio then reuses the same file with
    --size=<bytes>. For block devices fio gets no --size.
  * fio runs: --direct=1 --group_reporting --time_based --randrepeat=0
    --norandommap --output-format=json; IOPS = read.iops + write.iops.
  * CPU time is user+sys of each tool's process tree, measured from outside
    with the shell's `times` builtin (same method for both tools); it
    includes start-up and ramp time for both. CPU-s/Mio = cpu_seconds /
    (total I/Os / 1e6), where total I/Os are fio's read+write total_ios and
    iomatrix's results[0].total.ios (both exclude ramp).
  * The table goes to stdout, progress to stderr.

Exit status: 0 all runs succeeded, 1 some runs failed (shown as n/a),
2 usage or setup error.
EOF
}

die() {
	printf '%s: error: %s\n' "$PROG" "$*" >&2
	exit 2
}

warn() {
	printf '%s: warning: %s\n' "$PROG" "$*" >&2
}

progress() {
	printf '%s: %s\n' "$PROG" "$*" >&2
}

# ---------------------------------------------------------------------------
# JSON helpers (pure awk, works with mawk/gawk/busybox awk).
#
# json_fields FILE PATH... prints the scalar value at each dotted PATH (array
# indices are numbers, e.g. jobs.0.read.iops) on one line, separated by
# spaces, "NA" for a missing path. Any text before the first line starting
# with '{' (or, failing that, before the first '{') is ignored, as is
# anything after the top-level value closes. Works on pretty-printed and
# single-line documents alike.
# ---------------------------------------------------------------------------
json_fields() {
	local file=$1
	shift
	awk -v want="$*" '
	function curpath(   p, k) {
		p = ""
		for (k = 1; k <= d; k++)
			p = (k == 1) ? key[k] : p "." key[k]
		return p
	}
	function emit(v,   p) {
		p = curpath()
		if ((p in wanted) && !(p in val))
			val[p] = v
	}
	{ buf = buf $0 "\n" }
	END {
		nw = split(want, wl, " ")
		for (w = 1; w <= nw; w++)
			wanted[wl[w]] = 1
		s = buf
		n = length(s)
		if (substr(s, 1, 1) == "{")
			i = 1
		else {
			i = index(s, "\n{")
			if (i > 0)
				i++
			else
				i = index(s, "{")
		}
		d = 0
		expect_key = 0
		started = 0
		while (i > 0 && i <= n) {
			c = substr(s, i, 1)
			if (c == "{" || c == "[") {
				d++
				typ[d] = (c == "{") ? "o" : "a"
				key[d] = (c == "{") ? "" : 0
				expect_key = (c == "{")
				started = 1
				i++
			} else if (c == "}" || c == "]") {
				d--
				i++
				if (started && d <= 0)
					break
			} else if (c == ",") {
				if (typ[d] == "a")
					key[d]++
				else
					expect_key = 1
				i++
			} else if (c == ":" || index(" \t\r\n", c) > 0) {
				i++
			} else if (c == "\"") {
				j = i + 1
				str = ""
				while (j <= n) {
					ch = substr(s, j, 1)
					if (ch == "\\") {
						str = str substr(s, j, 2)
						j += 2
						continue
					}
					if (ch == "\"")
						break
					str = str ch
					j++
				}
				i = j + 1
				if (typ[d] == "o" && expect_key) {
					key[d] = str
					expect_key = 0
				} else
					emit(str)
			} else {
				# number, true, false, null
				j = i
				while (j <= n && index(",}] \t\r\n", substr(s, j, 1)) == 0)
					j++
				emit(substr(s, i, j - i))
				i = j
			}
		}
		out = ""
		for (w = 1; w <= nw; w++)
			out = out (w > 1 ? " " : "") ((wl[w] in val) ? val[wl[w]] : "NA")
		print out
	}' "$file"
}

is_number() {
	[[ $1 =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]
}

# ---------------------------------------------------------------------------
# Small numeric helpers (awk; always fixed-point output, never 1e+06 style).
# ---------------------------------------------------------------------------

# parse_size SIZE -> bytes on stdout, or nothing when unparsable.
# KiB/MiB/GiB/TiB/PiB and bare K/M/G/T/P (any case) are powers of 1024,
# kB/MB/GB/TB/PB are powers of 1000.
parse_size() {
	printf '%s\n' "$1" | awk '
	{
		s = $0
		gsub(/[ \t]/, "", s)
		if (!match(s, /^[0-9]+(\.[0-9]+)?/))
			exit
		num = substr(s, 1, RLENGTH) + 0
		suf = tolower(substr(s, RLENGTH + 1))
		if (suf == "" || suf == "b")
			mul = 1
		else {
			u = substr(suf, 1, 1)
			rest = substr(suf, 2)
			p = index("kmgtp", u)
			if (p == 0)
				exit
			if (rest == "" || rest == "ib")
				base = 1024
			else if (rest == "b")
				base = 1000
			else
				exit
			mul = 1
			for (k = 0; k < p; k++)
				mul *= base
		}
		printf "%.0f\n", int(num * mul)
	}'
}

# median of the numeric arguments ("NA" entries ignored); prints NA if none.
median() {
	printf '%s\n' "$@" | awk '
	$1 != "NA" && $1 != "" { v[++n] = $1 + 0 }
	END {
		if (n == 0) { print "NA"; exit }
		for (i = 2; i <= n; i++) {
			x = v[i]
			for (j = i - 1; j >= 1 && v[j] > x; j--)
				v[j + 1] = v[j]
			v[j + 1] = x
		}
		if (n % 2) m = v[(n + 1) / 2]
		else m = (v[n / 2] + v[n / 2 + 1]) / 2
		printf "%.6f\n", m
	}'
}

# calc EXPR VAR=VALUE... evaluates an awk expression; prints NA when any
# input is NA or on division by zero.
calc() {
	local expr=$1
	shift
	local a
	for a in "$@"; do
		[[ ${a#*=} == NA || -z ${a#*=} ]] && { echo NA; return; }
	done
	local vars=()
	for a in "$@"; do vars+=(-v "$a"); done
	awk "${vars[@]}" "BEGIN {
		r = \"NA\"
		$expr
		if (r == \"NA\") print \"NA\"; else printf \"%.6f\\n\", r
	}"
}

# fmt VALUE PRINTF-FORMAT: format a number, passing NA through as n/a.
fmt() {
	if [[ $1 == NA || -z $1 ]]; then
		printf 'n/a'
	else
		awk -v v="$1" -v f="$2" 'BEGIN { printf f, v }'
	fi
}

# ---------------------------------------------------------------------------
# CPU accounting: user+sys of reaped children of this shell, read via `times`.
# `times` must run in this shell (not in $(...), whose subshell starts with
# zeroed child counters), so snapshots go to files and are parsed afterwards.
# ---------------------------------------------------------------------------
times_seconds() { # FILE -> children user+sys seconds
	awk 'function secs(t,   m) {
		m = t
		sub(/m.*/, "", m)
		sub(/^[0-9]+m/, "", t)
		sub(/s$/, "", t)
		return m * 60 + t
	}
	NR == 2 { printf "%.6f\n", secs($1) + secs($2) }' "$1"
}

# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------
bin=""
pairs=3
runtime=10
ramp=1
size=4GiB
engine=uring
patterns=()
fio_extra=()
allow_destructive=0
out_dir=""
keep=0
target=""

need_arg() { # OPTION NEXT-ARG-COUNT
	[[ $2 -ge 2 ]] || die "option $1 requires an argument (see --help)"
}

while [[ $# -gt 0 ]]; do
	opt=$1
	val=""
	has_inline=0
	if [[ $opt == --*=* ]]; then
		val=${opt#*=}
		opt=${opt%%=*}
		has_inline=1
	fi
	takes_arg=1
	case $opt in
	-h | --help | --allow-destructive | -k | --keep | --) takes_arg=0 ;;
	-b | --bin | -p | --pairs | -r | --runtime | --ramp | -s | --size | \
		-e | --engine | --pattern | --fio-extra | -o | --out) ;;
	-*) die "unknown option: $opt (see --help)" ;;
	*) takes_arg=0 ;;
	esac
	if [[ $takes_arg == 1 && $has_inline == 0 ]]; then
		need_arg "$opt" $#
		val=$2
		shift
	elif [[ $takes_arg == 0 && $has_inline == 1 ]]; then
		die "option $opt takes no argument"
	fi
	case $opt in
	-h | --help)
		usage
		exit 0
		;;
	-b | --bin) bin=$val ;;
	-p | --pairs) pairs=$val ;;
	-r | --runtime) runtime=$val ;;
	--ramp) ramp=$val ;;
	-s | --size) size=$val ;;
	-e | --engine) engine=$val ;;
	--pattern) patterns+=("$val") ;;
	--fio-extra)
		read -r -a _extra <<<"$val"
		fio_extra+=("${_extra[@]}")
		;;
	--allow-destructive) allow_destructive=1 ;;
	-o | --out) out_dir=$val ;;
	-k | --keep) keep=1 ;;
	--)
		shift
		[[ $# -ge 1 ]] && { [[ -z $target ]] || die "only one TARGET may be given"; target=$1; shift; }
		[[ $# -eq 0 ]] || die "unexpected argument: $1"
		break
		;;
	*)
		[[ -z $target ]] || die "only one TARGET may be given (got '$target' and '$opt')"
		target=$opt
		;;
	esac
	shift
done

[[ -n $target ]] || { usage >&2; die "missing TARGET"; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || die "--pairs must be a positive integer, got '$pairs'"
[[ $runtime =~ ^[1-9][0-9]*$ ]] || die "--runtime must be a positive integer number of seconds, got '$runtime'"
[[ $ramp =~ ^[0-9]+$ ]] || die "--ramp must be a non-negative integer number of seconds, got '$ramp'"
case $engine in
uring) fio_engine=io_uring ;;
psync) fio_engine=psync ;;
*) die "--engine must be uring or psync, got '$engine'" ;;
esac
[[ ${#patterns[@]} -gt 0 ]] || patterns=(randread:4k:1 randread:4k:32 randwrite:4k:32 randrw:16k:8:50)

# Parse patterns up front so that typos fail before anything runs.
p_rw=() p_bs=() p_qd=() p_mix=() p_jobs=() p_label=() p_slug=()
any_write=0
for spec in "${patterns[@]}"; do
	IFS=: read -r rw bs qd mix jobs extra <<<"$spec"
	[[ -z ${extra:-} ]] || die "pattern '$spec': too many fields (RW:BS:QD[:RWMIX[:JOBS]])"
	case ${rw:-} in
	randread | randwrite | randrw | read | write) ;;
	*) die "pattern '$spec': RW must be randread|randwrite|randrw|read|write" ;;
	esac
	[[ ${bs:-} =~ ^[1-9][0-9]*[kKmM]?$ ]] || die "pattern '$spec': BS must look like 4k, 16k, 1m or 4096"
	[[ ${qd:-} =~ ^[1-9][0-9]*$ ]] || die "pattern '$spec': QD must be a positive integer"
	jobs=${jobs:-1}
	[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "pattern '$spec': JOBS must be a positive integer"
	label="$rw $bs qd$qd"
	if [[ $rw == randrw ]]; then
		mix=${mix:-50}
		[[ $mix =~ ^[0-9]+$ && $mix -le 100 ]] || die "pattern '$spec': RWMIX must be 0..100"
		label+=" r$mix"
	else
		[[ -z ${mix:-} ]] || warn "pattern '$spec': RWMIX is ignored for $rw"
		mix=""
	fi
	label+=" j$jobs"
	[[ $rw == read ]] || [[ $rw == randread ]] || any_write=1
	p_rw+=("$rw") p_bs+=("$bs") p_qd+=("$qd") p_mix+=("$mix") p_jobs+=("$jobs")
	p_label+=("$label") p_slug+=("${label// /-}")
done

# Tools.
command -v fio >/dev/null 2>&1 ||
	die "fio not found in PATH; install fio (e.g. 'apt-get install fio') - this script installs nothing"
if [[ -z $bin ]]; then
	if [[ -x ./iomatrix && ! -d ./iomatrix ]]; then
		bin=./iomatrix
	elif command -v iomatrix >/dev/null 2>&1; then
		bin=$(command -v iomatrix)
	else
		die "iomatrix binary not found (neither ./iomatrix nor 'iomatrix' on PATH); build it or pass --bin PATH"
	fi
elif [[ $bin != */* ]]; then
	command -v "$bin" >/dev/null 2>&1 || die "iomatrix binary '$bin' not found on PATH"
	bin=$(command -v "$bin")
else
	[[ -e $bin ]] || die "iomatrix binary not found: $bin"
	[[ -f $bin && -x $bin ]] || die "iomatrix binary is not an executable file: $bin"
fi

# Target.
size_bytes=""
if [[ -b $target ]]; then
	target_kind="block device"
	if [[ $any_write == 1 && $allow_destructive == 0 ]]; then
		die "$target is a block device and the pattern set includes writes; pass --allow-destructive to overwrite its data, or use read-only patterns"
	fi
elif [[ -d $target ]]; then
	die "TARGET $target is a directory; give a file path or a block device"
elif [[ -e $target && ! -f $target ]]; then
	die "TARGET $target is neither a regular file nor a block device"
else
	target_kind="regular file"
	tdir=$(dirname -- "$target")
	[[ -d $tdir ]] || die "directory of TARGET does not exist: $tdir"
	size_bytes=$(parse_size "$size")
	[[ -n $size_bytes ]] || warn "cannot parse --size '$size'; fio will use the size of the file iomatrix lays out"
	[[ -z $size_bytes || $size_bytes -gt 0 ]] || die "--size must be > 0"
fi

# Output directory.
cleanup_dir=""
if [[ -n $out_dir ]]; then
	mkdir -p -- "$out_dir" || die "cannot create output directory $out_dir"
	keep=1
else
	out_dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-vs-fio.XXXXXX") || die "mktemp failed"
	[[ $keep == 1 ]] || cleanup_dir=$out_dir
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-vs-fio-work.XXXXXX") || die "mktemp failed"
# shellcheck disable=SC2317  # invoked via trap
cleanup() {
	rm -rf -- "$work"
	[[ -z $cleanup_dir ]] || rm -rf -- "$cleanup_dir"
}
trap cleanup EXIT
trap 'progress "interrupted"; exit 130' INT TERM
cmdlog=$out_dir/commands.log
summary=""
[[ $keep == 1 ]] && summary=$out_dir/summary.txt
: >"$cmdlog"
[[ -z $summary ]] || : >"$summary"

# Prints a line on stdout (and into summary.txt when the output is kept).
say() {
	printf '%s\n' "$*"
	[[ -z $summary ]] || printf '%s\n' "$*" >>"$summary"
}

# run_timed NAME OUT ERR CMD...: runs CMD in this shell with stdout->OUT,
# stderr->ERR; sets RUN_RC, RUN_CPU (user+sys seconds), RUN_WALL (seconds).
# A generous timeout guards against a hung tool.
run_timed() {
	local name=$1 out=$2 err=$3
	shift 3
	local limit=$((2 * (runtime + ramp) + 120))
	printf '%q ' "$@" >>"$cmdlog"
	printf '\n' >>"$cmdlog"
	local t0 t1
	t0=$(date +%s.%N)
	times >"$work/times.before"
	timeout --foreground -k 10 "$limit" "$@" >"$out" 2>"$err"
	RUN_RC=$?
	times >"$work/times.after"
	t1=$(date +%s.%N)
	RUN_CPU=$(calc 'r = b - a' "a=$(times_seconds "$work/times.before")" "b=$(times_seconds "$work/times.after")")
	RUN_WALL=$(calc 'r = b - a' "a=$t0" "b=$t1")
	if [[ $RUN_RC == 124 || $RUN_RC == 137 ]]; then
		warn "$name timed out after ${limit}s"
	fi
}

show_err_tail() { # FILE
	[[ -s $1 ]] || return 0
	sed -n '1,15p' "$1" | sed 's/^/    | /' >&2
}

iomatrix_args_common=()
[[ $allow_destructive == 1 ]] && iomatrix_args_common+=(--allow-destructive)

# ---------------------------------------------------------------------------
# Warm-up: lets iomatrix create / lay out a regular file outside the timed
# runs, and checks that the binary works and emits parseable JSON.
# ---------------------------------------------------------------------------
warm_args=(run "$target" --rw randread --runtime 1s --ramp 0s)
[[ $target_kind == "regular file" ]] && warm_args+=(--size "$size")
warm_args+=(--engine "$engine" --format json "${iomatrix_args_common[@]}")
if [[ $target_kind == "regular file" && ! -e $target ]]; then
	progress "warm-up: iomatrix creates and lays out $target ($size), this may take a while"
else
	progress "warm-up: iomatrix 1s randread on $target"
fi
run_timed "iomatrix warm-up" "$out_dir/warmup.iomatrix.json" "$out_dir/warmup.iomatrix.stderr" "$bin" "${warm_args[@]}"
if [[ $RUN_RC != 0 ]]; then
	show_err_tail "$out_dir/warmup.iomatrix.stderr"
	die "iomatrix warm-up failed (exit $RUN_RC): $bin ${warm_args[*]}"
fi
read -r w_schema w_iops <<<"$(json_fields "$out_dir/warmup.iomatrix.json" schema_version results.0.total.iops)"
is_number "$w_iops" || die "cannot parse results[0].total.iops from iomatrix JSON output (see $out_dir/warmup.iomatrix.json; use --out DIR to keep it)"
[[ $w_schema == 1 ]] || warn "iomatrix JSON schema_version is '$w_schema', this script expects 1"

fio_size_args=()
size_desc=""
if [[ $target_kind == "regular file" ]]; then
	[[ -f $target ]] || die "iomatrix warm-up did not create $target"
	actual=$(stat -c %s -- "$target") || die "cannot stat $target"
	fio_bytes=$actual
	if [[ -n $size_bytes ]]; then
		if ((actual < size_bytes)); then
			warn "$target is $actual bytes, smaller than --size $size ($size_bytes bytes); fio uses $actual bytes"
		else
			fio_bytes=$size_bytes
		fi
	fi
	((fio_bytes > 0)) || die "$target is empty after the iomatrix warm-up"
	fio_size_args=(--size="$fio_bytes")
	size_desc="$size, fio --size=$fio_bytes bytes"
else
	dev_bytes=$(blockdev --getsize64 "$target" 2>/dev/null) || dev_bytes=""
	size_desc="whole device${dev_bytes:+, $dev_bytes bytes}"
fi

# ---------------------------------------------------------------------------
# Header
# ---------------------------------------------------------------------------
fio_version=$(fio --version 2>/dev/null | sed -n 1p)
iom_version=""
for vflag in --version version; do
	if v=$(timeout 10 "$bin" "$vflag" 2>/dev/null </dev/null); then
		v=$(printf '%s\n' "$v" | sed -n '/[^[:space:]]/{p;q;}')
		[[ -n $v ]] && { iom_version=$v; break; }
	fi
done
cpu_model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | sed -n 1p)
fio_layout="iodepth=QD numjobs=JOBS"
[[ $engine == psync ]] && fio_layout="iodepth=1 numjobs=QD*JOBS"
est=$(( ${#patterns[@]} * pairs * 2 * (runtime + ramp + 1) ))

say "# iomatrix vs fio  $(date '+%Y-%m-%d %H:%M:%S %z')"
say "# host:      $(uname -n), kernel $(uname -r) $(uname -m), $(nproc 2>/dev/null || echo '?') CPUs${cpu_model:+, $cpu_model}"
say "# fio:       ${fio_version:-unknown} (ioengine=$fio_engine, $fio_layout${fio_extra[*]:+, extra: ${fio_extra[*]}})"
say "# iomatrix:  ${iom_version:-unknown (no --version)} ($bin, engine $engine)"
say "# target:    $target ($target_kind, $size_desc)"
say "# runs:      $pairs pair(s) per pattern, alternating fio/iomatrix, runtime ${runtime}s, ramp ${ramp}s"
say "# cpu_s/Mio: user+sys CPU seconds of the whole process (incl. start-up and ramp) per 1e6 I/Os"
say "# raw JSON:  $out_dir$([[ $keep == 1 ]] || printf ' (removed at exit; use --out DIR or --keep)')"
progress "${#patterns[@]} pattern(s) x $pairs pair(s) x 2 tools, about $((est / 60))m$((est % 60))s"

lw=7
for l in "${p_label[@]}"; do ((${#l} > lw)) && lw=${#l}; done
row() {
	say "$(printf "%-${lw}s %6s %10s %13s %6s %13s %18s" "$@")"
}
say ""
row pattern pair fio_iops iomatrix_iops ratio fio_cpu_s/Mio iomatrix_cpu_s/Mio

# ---------------------------------------------------------------------------
# Benchmark
# ---------------------------------------------------------------------------
failures=0
sum_rows=()
np=${#patterns[@]}
for ((pi = 0; pi < np; pi++)); do
	rw=${p_rw[pi]} bs=${p_bs[pi]} qd=${p_qd[pi]} mix=${p_mix[pi]} jobs=${p_jobs[pi]}
	label=${p_label[pi]}
	base=$(printf '%s/p%02d-%s' "$out_dir" $((pi + 1)) "${p_slug[pi]}")

	if [[ $engine == psync ]]; then
		fio_depth=1 fio_numjobs=$((qd * jobs))
	else
		fio_depth=$qd fio_numjobs=$jobs
	fi
	fio_cmd=(fio --name=bench --filename="$target" --direct=1 --ioengine="$fio_engine"
		--rw="$rw" --bs="$bs" --iodepth="$fio_depth" --numjobs="$fio_numjobs"
		--group_reporting --time_based --runtime="${runtime}s" --ramp_time="${ramp}s")
	[[ -n $mix ]] && fio_cmd+=(--rwmixread="$mix")
	fio_cmd+=(--randrepeat=0 --norandommap --output-format=json "${fio_size_args[@]}" "${fio_extra[@]}")

	iom_cmd=("$bin" run "$target" --rw "$rw" --bs "$bs")
	[[ -n $mix ]] && iom_cmd+=(--rwmix "$mix")
	iom_cmd+=(--qd "$qd" --jobs "$jobs" --runtime "${runtime}s" --ramp "${ramp}s")
	[[ $target_kind == "regular file" ]] && iom_cmd+=(--size "$size")
	iom_cmd+=(--engine "$engine" --format json "${iomatrix_args_common[@]}")

	f_iops=() i_iops=() ratios=() f_cpu=() i_cpu=()
	for ((k = 1; k <= pairs; k++)); do
		tag="[$((pi + 1))/$np $label, pair $k/$pairs]"

		# --- fio ---
		fj=$base.pair$k.fio.json
		progress "$tag fio ..."
		run_timed "fio" "$fj" "${fj%.json}.stderr" "${fio_cmd[@]}"
		fi_iops=NA fi_cpu=NA
		if [[ $RUN_RC != 0 ]]; then
			warn "$tag fio exited with status $RUN_RC"
			show_err_tail "${fj%.json}.stderr"
		else
			read -r err rio wio rtot wtot <<<"$(json_fields "$fj" jobs.0.error jobs.0.read.iops jobs.0.write.iops jobs.0.read.total_ios jobs.0.write.total_ios)"
			if [[ $err != 0 && $err != NA ]]; then
				warn "$tag fio reported error $err"
				show_err_tail "${fj%.json}.stderr"
			elif is_number "$rio" && is_number "$wio" && is_number "$rtot" && is_number "$wtot"; then
				fi_iops=$(calc 'r = x + y' "x=$rio" "y=$wio")
				fi_cpu=$(calc 'n = x + y; if (n > 0) r = c / (n / 1e6)' "x=$rtot" "y=$wtot" "c=$RUN_CPU")
			else
				warn "$tag cannot parse fio JSON output ($fj)"
			fi
		fi
		[[ $fi_iops == NA ]] && failures=$((failures + 1))
		progress "$tag fio: $(fmt "$fi_iops" '%.0f') IOPS, $(fmt "$RUN_CPU" '%.2f') cpu-s, $(fmt "$fi_cpu" '%.3f') cpu-s/Mio ($(fmt "$RUN_WALL" '%.1f')s)"

		# --- iomatrix ---
		ij=$base.pair$k.iomatrix.json
		progress "$tag iomatrix ..."
		run_timed "iomatrix" "$ij" "${ij%.json}.stderr" "${iom_cmd[@]}"
		im_iops=NA im_cpu=NA
		if [[ $RUN_RC != 0 ]]; then
			warn "$tag iomatrix exited with status $RUN_RC"
			show_err_tail "${ij%.json}.stderr"
		else
			read -r tio tios dur <<<"$(json_fields "$ij" results.0.total.iops results.0.total.ios results.0.duration_ns)"
			if is_number "$tio"; then
				im_iops=$(calc 'r = x' "x=$tio")
				if ! is_number "$tios" && is_number "$dur"; then
					tios=$(calc 'r = x * d / 1e9' "x=$tio" "d=$dur")
					warn "$tag iomatrix JSON has no results[0].total.ios; using iops*duration"
				fi
				is_number "$tios" && im_cpu=$(calc 'if (n > 0) r = c / (n / 1e6)' "n=$tios" "c=$RUN_CPU")
			else
				warn "$tag cannot parse iomatrix JSON output ($ij)"
			fi
		fi
		[[ $im_iops == NA ]] && failures=$((failures + 1))
		progress "$tag iomatrix: $(fmt "$im_iops" '%.0f') IOPS, $(fmt "$RUN_CPU" '%.2f') cpu-s, $(fmt "$im_cpu" '%.3f') cpu-s/Mio ($(fmt "$RUN_WALL" '%.1f')s)"

		ratio=$(calc 'if (f > 0) r = i / f' "i=$im_iops" "f=$fi_iops")
		f_iops+=("$fi_iops") i_iops+=("$im_iops") ratios+=("$ratio") f_cpu+=("$fi_cpu") i_cpu+=("$im_cpu")
		row "$label" "$k" "$(fmt "$fi_iops" '%.0f')" "$(fmt "$im_iops" '%.0f')" "$(fmt "$ratio" '%.3f')" \
			"$(fmt "$fi_cpu" '%.3f')" "$(fmt "$im_cpu" '%.3f')"
	done
	m_f=$(median "${f_iops[@]}") m_i=$(median "${i_iops[@]}") m_r=$(median "${ratios[@]}")
	m_fc=$(median "${f_cpu[@]}") m_ic=$(median "${i_cpu[@]}")
	med=("$label" median "$(fmt "$m_f" '%.0f')" "$(fmt "$m_i" '%.0f')" "$(fmt "$m_r" '%.3f')" \
		"$(fmt "$m_fc" '%.3f')" "$(fmt "$m_ic" '%.3f')")
	row "${med[@]}"
	say ""
	sum_rows+=("${med[@]}")
done

if ((np > 1)); then
	say "# medians (ratio = median of per-pair iomatrix/fio IOPS ratios)"
	row pattern "" fio_iops iomatrix_iops ratio fio_cpu_s/Mio iomatrix_cpu_s/Mio
	for ((i = 0; i < ${#sum_rows[@]}; i += 7)); do
		row "${sum_rows[@]:i:7}"
	done
fi

if ((failures > 0)); then
	if [[ $keep == 1 ]]; then
		warn "$failures run(s) failed or could not be parsed (n/a in the table); raw output in $out_dir"
	else
		warn "$failures run(s) failed or could not be parsed (n/a in the table); re-run with --out DIR to keep the raw output"
	fi
	exit 1
fi
[[ $keep == 1 ]] && progress "raw output kept in $out_dir"
exit 0
