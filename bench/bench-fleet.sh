#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Fleet-mode ingest benchmark (bench/bench_fleet.py): SQLite vs PostgreSQL + ClickHouse.
#   bench/bench-fleet.sh --build DIR [--seconds N]
set -eu
cd "$(dirname "$0")/.."
exec python3 bench/bench_fleet.py "$@"
