#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# BPF time per sample of a JVM stack 30 Java frames deep (named from HotSpot's own structures)
# against 30-deep native stacks, and the agent's CPU and RSS at 99 Hz with a JVM and a node
# process spinning: the node daemon against a real collector, after a warm-up until a window
# built no unwind table, each window and the median (docs/performance.md):
# bench/bench-jvm.sh --build DIR [--rounds 3] [--seconds 5] [--steady daemon|record|both]
#   [--windows 3] [--window 60] [--max-warmup 600]. Root, java, node.
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
old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$old' EXIT
python3 bench/bench_jvm.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
