#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Collector query latency over 30 days of 5-minute buckets vs go tool pprof over the same
# data: bench/bench-query.sh --build DIR   (BENCH_DAYS=N for a shorter run)
set -eu
. "$(dirname "$0")/lib.sh"
bench_args "$@"
bench_python_env
exec python3 bench/bench_query.py
