#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Fleet-mode ingest benchmark (bench/bench_fleet.py): CPU per upload, SQLite vs PostgreSQL +
# ClickHouse, every cost an upload causes (merges and the tier build included); then
# what one INSERT costs ClickHouse by schema (bench/bench_ch_insert.py); then, with ZooKeeper
# installed, a two-shard cluster's INSERT through Distributed against direct to the shards
# (bench/bench_ch_cluster_insert.py).
#   bench/bench-fleet.sh --build DIR [--seconds N]
set -eu
cd "$(dirname "$0")/.."
python3 bench/bench_fleet.py "$@"
python3 bench/bench_ch_insert.py
if [ -e /usr/share/java/zookeeper.jar ]; then
	python3 bench/bench_ch_cluster_insert.py "$@"
fi
