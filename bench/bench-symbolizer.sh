#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Symboliser cost on this machine: capture every process, name one address per executable
# mapping cold and warm, load kallsyms; peak RSS. bench/bench-symbolizer.sh --build DIR
set -eu
. "$(dirname "$0")/lib.sh"
bench_args "$@"
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bench/bench-symbolizer"
"$BUILD/bench/bench-symbolizer"
