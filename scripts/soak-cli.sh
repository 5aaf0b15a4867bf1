#!/usr/bin/env bash
# soak-cli.sh: run the real iomatrix binary for a long randrw pattern at
# QD256 x 4 jobs on a terminal (its live line redraws every second) and
# sample the process from outside every minute (the run lasts 20 s
# longer than the sampled minutes): threads, RSS, anonymous
# and file-backed memory. The in-process soak (scripts/soak) also counts
# goroutines and heap allocations; this one checks what users run.
#
#   scripts/soak-cli.sh [--bin PATH] [--minutes N] [--size SIZE] TARGET
set -euo pipefail

bin=iomatrix minutes=10 size=4GiB
while [[ $# -gt 1 ]]; do
	case $1 in
	--bin) bin=$2; shift 2 ;;
	--minutes) minutes=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	*) echo "soak-cli.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[[ $# -eq 1 ]] || { echo "usage: soak-cli.sh [--bin PATH] [--minutes N] [--size SIZE] TARGET" >&2; exit 2; }
target=$1
command -v script >/dev/null || { echo "soak-cli.sh: needs script(1) from util-linux for a terminal" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Lay the file out first so the sampled run starts measuring at once.
"$bin" run "$target" --size "$size" --rw randread --runtime 1s --ramp 0s >/dev/null
# script(1) gives the run a terminal: the live progress line is drawn.
script -qfec "$(printf '%q ' "$bin" run "$target" --rw randrw --rwmix 50 --bs 4k --qd 256 --jobs 4 \
	--runtime "$((minutes * 60 + 20))s" --ramp 0s -o "$out/result.json")" /dev/null >"$out/tty.log" 2>&1 &
pid=
for _ in $(seq 50); do
	pid=$(pgrep -n -f -- "run $target --rw randrw" | head -1 || true)
	[[ -n $pid && $(cat /proc/"$pid"/comm 2>/dev/null) != script ]] && break
	pid=
	sleep 0.1
done
[[ -n $pid ]] || { echo "soak-cli.sh: the run did not start" >&2; cat "$out/tty.log" >&2; exit 1; }

field() { awk -v k="$1:" '$1 == k {print $2}' /proc/"$pid"/status; }
printf '%6s %8s %9s %9s %9s\n' minute threads "RSS KiB" "anon KiB" "file KiB"
for ((m = 1; m <= minutes; m++)); do
	sleep 60
	[[ -d /proc/$pid ]] || break
	printf '%6d %8s %9s %9s %9s\n' "$m" "$(field Threads)" "$(field VmRSS)" "$(field RssAnon)" "$(field RssFile)"
done
wait || { echo "soak-cli.sh: the run failed:" >&2; cat "$out/tty.log" >&2; exit 1; }
python3 - "$out/result.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f'{r["total"]["iops"]:.0f} IOPS; submitted {r["submitted"]}, completed {r["completed"]}; '
      f'histogram counts {r["read"]["lat_ns"]["count"]} + {r["write"]["lat_ns"]["count"]} = ios {r["read"]["ios"]} + {r["write"]["ios"]}')
EOF
