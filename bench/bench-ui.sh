#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The web UI's flame graph in headless Chromium on a 100k-node tree and on a 1M-sample profile:
# data received to first paint, redraw after a zoom, page memory; and go tool pprof -http's
# flame graph on the same pprof in the same run: bench/bench-ui.sh --build DIR
set -eu
. "$(dirname "$0")/lib.sh"
bench_args "$@"
bench_need_built bench-ui roottrace-collector
bench_python_env
exec python3 bench/bench_ui.py
