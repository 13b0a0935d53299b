#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Stripped Go names (bench/bench_gosyms.py; docs/performance.md): a generated Go program of
# 60k functions, its name table's build time, memory and lookup time against `go tool
# addr2line` and `go tool nm` on the same file; the agent's steady CPU at 99 Hz with stripped
# Go processes running. bench/bench-gosyms.sh --build DIR [--functions N]. Needs root, go.
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
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bench/bench-gosyms" "$BUILD/bench/bench-go-rows"
python3 bench/bench_gosyms.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
