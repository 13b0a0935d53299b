#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# BPF time per sample of a node stack 30 JS frames deep (JS frames named from V8's structures)
# against 30-deep native stacks (tests/fixtures/unwind/edge.c, with and without frame
# pointers), all with --unwind=auto (docs/performance.md):
# bench/bench-v8.sh --build DIR [--rounds 3] [--seconds 5]. Root, /usr/bin/node.
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
exec python3 bench/bench_v8.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
