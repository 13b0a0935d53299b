#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The agent's whole cost at 99 Hz with a python3.11, a ruby and a php process spinning (their
# frames walked and named) against three native processes spinning, alternating rounds, on the
# same machine (bench/bench_steady_overhead.py --workload interpreters,native;
# docs/performance.md): bench/bench-steady-interpreters.sh --build DIR [--rounds N] [--window S].
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
python3 bench/bench_steady_overhead.py --build "$BUILD" --workload interpreters,native \
	"${ARGS[@]+"${ARGS[@]}"}"
