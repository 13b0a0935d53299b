#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Collector query latency over 30 days of 5-minute buckets vs go tool pprof over the same
# data: bench/bench-query.sh --build DIR   (BENCH_DAYS=N for a shorter run); then the fleet
# backend again on a two-shard ClickHouse cluster (ZooKeeper installed), for its 30-day reads.
set -eu
. "$(dirname "$0")/lib.sh"
bench_args "$@"
bench_python_env
python3 bench/bench_query.py
if [ -e /usr/share/java/zookeeper.jar ] && [ -z "${BENCH_BACKENDS:-}" ]; then
	BENCH_BACKENDS=fleet ROOTTRACE_FLEET_CLUSTER=2x1 python3 bench/bench_query.py
fi
