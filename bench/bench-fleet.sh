#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Fleet-mode ingest benchmark (bench/bench_fleet.py): CPU per upload, SQLite vs PostgreSQL +
# ClickHouse, every cost an upload causes (merges and the tier build included); then
# what one INSERT costs ClickHouse by schema (bench/bench_ch_insert.py).
#   bench/bench-fleet.sh --build DIR [--seconds N]
set -eu
cd "$(dirname "$0")/.."
python3 bench/bench_fleet.py "$@"
python3 bench/bench_ch_insert.py
