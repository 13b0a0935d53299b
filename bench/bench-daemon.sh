#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Agent daemon overhead (`roottrace-agent run`): 99 Hz on a saturated machine, 200 CPU-bound
# processes in 20 cgroups, uploading every 10 s to a real collector on 127.0.0.1. Reports the
# agent's CPU, the BPF run time, RSS and bytes uploaded per minute (bench/bench_daemon.py).
#   bench/bench-daemon.sh [--build DIR]      env: BENCH_SECONDS (60)
set -eu
cd "$(dirname "$0")/.."
BUILD=build
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	*) echo "usage: $0 [--build DIR]" >&2; exit 2 ;;
	esac
done
BUILD="$(cd "$BUILD" && pwd)"
[ "$(id -u)" -eq 0 ] || { echo "bench-daemon: needs root (BPF, cgroups)" >&2; exit 1; }
for b in roottrace-agent roottrace-collector; do
	[ -x "$BUILD/$b" ] || { echo "bench-daemon: $BUILD/$b not built" >&2; exit 1; }
done
ROOTTRACE_BUILD="$BUILD" ROOTTRACE_SRC="$PWD" PYTHONPATH="$PWD/tests/lib" \
	python3 bench/bench_daemon.py
