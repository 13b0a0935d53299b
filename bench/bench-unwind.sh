#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# BPF cost of the .eh_frame unwinder vs the frame-pointer walk (docs/performance.md):
# bench/bench-unwind.sh --build DIR [--rounds 3] [--seconds 5]. Needs root.
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
exec python3 bench/bench_unwind.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
