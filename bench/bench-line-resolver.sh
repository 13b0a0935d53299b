#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# On-demand lines (issue 32; bench/bench_line_resolver.py; docs/performance.md): 1,000 file offsets
# resolved against a ~100 MB generated debug file by the collector's resolver (first and cached)
# and by eu-addr2line on the same offsets. bench/bench-line-resolver.sh --build DIR [--copies N].
set -eu
cd "$(dirname "$0")/.."
BUILD=build
ARGS=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	*) ARGS+=("$1"); shift ;;
	esac
done
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bench/lines-resolve"
python3 bench/bench_line_resolver.py --build "$BUILD" "${ARGS[@]+"${ARGS[@]}"}"
