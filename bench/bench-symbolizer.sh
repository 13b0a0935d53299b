#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Symboliser cost on this machine: capture every process, name one address per executable
# mapping cold and warm, load kallsyms; peak RSS. bench/bench-symbolizer.sh --build DIR
set -eu
cd "$(dirname "$0")/.."
BUILD=build
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	*) echo "usage: $0 [--build DIR]" >&2; exit 2 ;;
	esac
done
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bench/bench-symbolizer"
"$BUILD/bench/bench-symbolizer"
