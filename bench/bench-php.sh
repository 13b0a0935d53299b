#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# BPF time per sample of a PHP stack 30 frames deep (php8.2-cli, PHP frames named from executor_globals)
# against 30-deep native stacks (tests/fixtures/unwind/edge.c, with and without frame
# pointers), all with --unwind=auto (docs/performance.md):
# bench/bench-php.sh --build DIR [--rounds 3] [--seconds 5]. Root, /usr/bin/php8.2.
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
exec python3 bench/bench_php.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
