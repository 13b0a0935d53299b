#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# BPF time per sample of a 30-deep Python stack (python3.11, interpreter frames walked) against
# a 30-deep native stack (tests/fixtures/unwind/edge.c, no frame pointers), both with
# --unwind=auto (docs/performance.md): bench/bench-python.sh --build DIR [--rounds 3]. Root.
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
exec python3 bench/bench_python.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
