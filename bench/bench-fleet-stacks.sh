#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The ClickHouse stacks dictionary before and after retention (bench/bench_fleet_stacks.py).
#   bench/bench-fleet-stacks.sh --build DIR [--days 3] [--common 400] [--per-day 100]
set -eu
cd "$(dirname "$0")/.."
exec python3 bench/bench_fleet_stacks.py "$@"
