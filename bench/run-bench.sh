#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs every bench/bench-*.sh in turn: `make bench` or bench/run-bench.sh --build DIR [NAME].
set -u
cd "$(dirname "$0")/.."
BUILD=build
ONLY=""
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	*) ONLY="$1"; shift ;;
	esac
done
rc=0
for b in bench/bench-*.sh; do
	[ -f "$b" ] || continue
	[ -z "$ONLY" ] || [[ "$b" == *"$ONLY"* ]] || continue
	echo "== $b" >&2
	bash "$b" --build "$BUILD" || { echo "bench failed: $b" >&2; rc=1; }
done
exit $rc
