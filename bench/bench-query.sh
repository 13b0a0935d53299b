#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Collector query latency over 30 days of 5-minute buckets vs go tool pprof over the same
# data: bench/bench-query.sh --build DIR   (BENCH_DAYS=N for a shorter run)
set -eu
cd "$(dirname "$0")/.."
BUILD=build
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	*) echo "usage: $0 [--build DIR]" >&2; exit 2 ;;
	esac
done
export ROOTTRACE_BUILD="$(cd "$BUILD" && pwd)"
export ROOTTRACE_SRC="$(pwd)"
export PYTHONPATH="$ROOTTRACE_SRC/tests/lib"
export PYTHONDONTWRITEBYTECODE=1
exec python3 bench/bench_query.py
