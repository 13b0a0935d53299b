#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Agent daemon overhead (`roottrace-agent run`): 99 Hz on a saturated machine, 200 CPU-bound
# processes in 20 cgroups, uploading every 10 s to a real collector on 127.0.0.1. Reports the
# agent's CPU, the BPF run time, RSS and bytes uploaded per minute (bench/bench_daemon.py).
#   bench/bench-daemon.sh [--build DIR]      env: BENCH_SECONDS (60)
set -eu
. "$(dirname "$0")/lib.sh"
bench_args "$@"
BUILD="$(cd "$BUILD" && pwd)"
bench_need_root bench-daemon "BPF, cgroups"
bench_need_built bench-daemon roottrace-agent roottrace-collector
bench_python_env
python3 bench/bench_daemon.py
