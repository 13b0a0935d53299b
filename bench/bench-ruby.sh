#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# BPF time per sample of a Ruby stack 30 frames deep (ruby3.1, control frames named Class#method)
# against 30-deep native stacks (tests/fixtures/unwind/edge.c, with and without frame
# pointers), all with --unwind=auto (docs/performance.md):
# bench/bench-ruby.sh --build DIR [--rounds 3] [--seconds 5]. Root, /usr/bin/ruby3.1.
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
exec python3 bench/bench_ruby.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
