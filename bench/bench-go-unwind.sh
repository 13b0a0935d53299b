#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# BPF cost of a stripped Go sample walked by its .gopclntab pcsp rows against frame pointers
# (bench/bench_go_unwind.py; docs/performance.md, "Agent: stripped Go names"):
# bench/bench-go-unwind.sh --build DIR [--before DIR] [--rounds N] [--seconds S]. Needs root.
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
python3 bench/bench_go_unwind.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
