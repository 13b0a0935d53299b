#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `record`'s memory under process churn, as test_agent_hardening's churn case runs it (199 Hz,
# machine-wide, a cpu_split survivor, two churners of N fork/exec'd processes each): VmHWM,
# RssAnon, RssFile and [heap] at the peak (read every 0.5 s), and the record's sample and
# process counts. Root. docs/performance.md, "Agent record memory under process churn".
# usage: bench/bench-record-churn-memory.sh [--build DIR] [--processes N] [--rounds R]
set -eu
cd "$(dirname "$0")/.."
BUILD=build
N=10000
ROUNDS=1
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--processes) N="$2"; shift 2 ;;
	--rounds) ROUNDS="$2"; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--processes N] [--rounds R]" >&2; exit 2 ;;
	esac
done
H="$BUILD/tests/helpers"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

status_kb() { # pid field
	awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"
}

heap_kb() { # smaps file
	awk '/^[0-9a-f]+-[0-9a-f]+ / {heap = ($6 == "[heap]")} heap && /^Rss:/ {print $2}' "$1"
}

for round in $(seq 1 "$ROUNDS"); do
	"$H/cpu_split" 300 >/dev/null &
	survivor=$!
	"$BUILD/roottrace-agent" record --duration 10m --frequency 199 \
		--output "$out/p.pb.gz" >"$out/record.log" 2>&1 &
	rec=$!
	sleep 5
	"$H/churn" "$N" 300 >/dev/null &
	c1=$!
	"$H/churn" "$N" 300 >/dev/null &
	c2=$!
	peak=0
	while kill -0 "$c1" 2>/dev/null || kill -0 "$c2" 2>/dev/null; do
		rss=$(status_kb "$rec" VmRSS)
		if [ "$rss" -gt "$peak" ]; then
			peak=$rss
			cp "/proc/$rec/status" "$out/status.peak"
			cp "/proc/$rec/smaps" "$out/smaps.peak"
		fi
		sleep 0.5
	done
	churn_hwm=$(status_kb "$rec" VmHWM)
	kill -INT "$rec"
	hwm=$churn_hwm
	while kill -0 "$rec" 2>/dev/null; do # the final drain and encode count too, as in the test
		h=$(status_kb "$rec" VmHWM 2>/dev/null || true)
		[ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
		sleep 0.05
	done
	wait "$rec" || true
	kill "$survivor" 2>/dev/null || true
	wait "$survivor" 2>/dev/null || true
	printf 'round %d: VmHWM %d kB through the exit, %d kB by the churn'"'"'s end (at the peak: RssAnon %d kB, RssFile %d kB, [heap] %d kB); %s\n' \
		"$round" "$hwm" "$churn_hwm" "$(awk '$1 == "RssAnon:" {print $2}' "$out/status.peak")" \
		"$(awk '$1 == "RssFile:" {print $2}' "$out/status.peak")" \
		"$(heap_kb "$out/smaps.peak")" "$(grep -a -m1 '^samples:' "$out/record.log")"
done
