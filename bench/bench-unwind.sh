#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# BPF cost of the .eh_frame unwinder vs the frame-pointer walk, perf --call-graph dwarf and
# bpftrace (docs/performance.md):
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
# The peers (bench/bench_unwind_peers.py), installed as bench/bench-agent.sh does; the
# benchmark says so and goes on without one that cannot be installed.
missing=""
command -v perf >/dev/null || missing="$missing linux-perf"
command -v bpftrace >/dev/null || missing="$missing bpftrace"
if [ -n "$missing" ]; then
	echo "bench-unwind: installing$missing" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
		>/dev/null || echo "bench-unwind: could not install$missing" >&2
fi
exec python3 bench/bench_unwind.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
