#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Span link store benchmark (bench/bench_links.py): bytes per link and span query latency with
# 10M links stored, on SQLite and on ClickHouse.
#   bench/bench-links.sh --build DIR [--links N] [--queries N] [--stacks N]
#                        [--backend sqlite|clickhouse|both]
set -eu
cd "$(dirname "$0")/.."
exec python3 bench/bench_links.py "$@"
