#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Steady-state CPU + BPF share of a whole-machine record at 99 Hz, --unwind auto against fp
# (bench/bench_steady_overhead.py; docs/performance.md). It reuses bench-agent.sh's spin
# workload, so it runs after it (make bench runs the benchmarks in name order):
# bench/bench-steady-overhead.sh --build DIR [--rounds N] [--window S]
# [--workload spin|runtimes|interpreters,native].
# Needs root.
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
python3 bench/bench_steady_overhead.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
