#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runtime detection time per process (bench/bench_runtime_detect.c; docs/performance.md): idle
# python3.11, ruby, php and node processes, N of each, detected by a fresh process registry and
# runtimes each round: the first of a binary reads it, the next ones reuse what was read.
# bench/bench-runtime-detect.sh --build DIR [--processes N] [--rounds R]. Needs root.
set -eu
cd "$(dirname "$0")/.."
BUILD=build
N=8
ROUNDS=15
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--processes) N="$2"; shift 2 ;;
	--rounds) ROUNDS="$2"; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bench/bench-runtime-detect"
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT
group() { # LABEL COMMAND...: starts N idle processes, prints LABEL:PID,PID,...
	local label=$1 list=""
	shift
	command -v "$1" >/dev/null || return 0
	for _ in $(seq "$N"); do
		"$@" >/dev/null 2>&1 &
		PIDS+=($!)
		list="$list${list:+,}$!"
	done
	echo "$label:$list"
}
GROUPS_ARGS=(
	$(group python python3.11 -c "import time; time.sleep(600)")
	$(group ruby ruby -e "sleep 600")
	$(group php php8.2 -r "sleep(600);")
	$(group node node -e "setTimeout(() => {}, 600000)")
)
sleep 3 # loaded: libraries mapped, ruby's TLS module id written
"$BUILD/bench/bench-runtime-detect" "$ROUNDS" "${GROUPS_ARGS[@]}"
