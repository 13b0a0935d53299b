#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Off-CPU cost at 10k and 50k context switches per second against bcc's offcputime
# (docs/performance.md): bench/bench-offcpu.sh --build DIR [--seconds 8] [--against OLD_DIR
# --rounds N] (two builds alternated cell by cell, medians). Needs root.
set -eu
cd "$(dirname "$0")/.."
BUILD=build
ARGS=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	*) ARGS+=("$1"); shift ;;
	esac
done
exec python3 bench/bench_offcpu.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
