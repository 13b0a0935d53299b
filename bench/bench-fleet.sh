#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Fleet-mode ingest benchmark (bench/bench_fleet.py): SQLite vs PostgreSQL + ClickHouse; then
# one server against a two-shard ClickHouse cluster; then what one INSERT costs ClickHouse by
# schema (bench/bench_ch_insert.py).
#   bench/bench-fleet.sh --build DIR [--seconds N]
set -eu
cd "$(dirname "$0")/.."
python3 bench/bench_fleet.py "$@"
# One server against the two-shard cluster, same uploads, one after the other.
if [ -e /usr/share/java/zookeeper.jar ]; then
	python3 bench/bench_fleet.py "$@" --fleet-only
	python3 bench/bench_fleet.py "$@" --fleet-only --cluster 2x1
	python3 bench/bench_ch_cluster_insert.py "$@"
fi
python3 bench/bench_ch_insert.py
