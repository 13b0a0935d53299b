#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Line detail benchmark (bench/bench_lines.py): bytes per stored value of the 500-stack ingest
# profile with and without line detail, and the time of a lines query over 30 days.
#   bench/bench-lines.sh --build DIR [--buckets N] [--days N] [--queries N] [--backend fleet]
set -eu
cd "$(dirname "$0")/.."
exec python3 bench/bench_lines.py "$@"
