# SPDX-License-Identifier: Apache-2.0
# Shared preamble of bench/bench-*.sh, sourced after `set -eu`: moves to the repository root;
# bench_args parses --build DIR into BUILD; the checks stop a benchmark with one line naming
# what is missing; bench_collector_port waits for a collector's port; bench_python_env sets what tests/lib's Python modules expect.
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bench_args() {
	BUILD=build
	while [ $# -gt 0 ]; do
		case "$1" in
		--build) BUILD="$2"; shift 2 ;;
		*) echo "usage: $0 [--build DIR]" >&2; exit 2 ;;
		esac
	done
}

# bench_need_root NAME WHY
bench_need_root() {
	[ "$(id -u)" -eq 0 ] || { echo "$1: needs root ($2)" >&2; exit 1; }
}

# bench_need_built NAME PROGRAM...: each one built under $BUILD
bench_need_built() {
	local name="$1" prog
	shift
	for prog in "$@"; do
		[ -x "$BUILD/$prog" ] || { echo "$name: $BUILD/$prog not built" >&2; exit 1; }
	done
}

# bench_collector_tmp: a scratch dir in TMP, removed at exit with the collector whose pid is in
# PID (when set)
bench_collector_tmp() {
	TMP=$(mktemp -d)
	PID=""
	trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$TMP"' EXIT
}

# bench_collector_port NAME LOG: waits for `serve --listen 127.0.0.1:0` to log its port, sets PORT
bench_collector_port() {
	PORT=""
	for _ in $(seq 100); do
		PORT=$(grep -o 'listening on [0-9.]*:[0-9]*' "$2" | sed 's/.*://' || true)
		[ -n "$PORT" ] && return 0
		sleep 0.05
	done
	echo "$1: collector did not start" >&2
	exit 1
}

bench_python_env() {
	ROOTTRACE_BUILD="$(cd "$BUILD" && pwd)"
	export ROOTTRACE_BUILD
	export ROOTTRACE_SRC="$PWD"
	export PYTHONPATH="$ROOTTRACE_SRC/tests/lib"
	export PYTHONDONTWRITEBYTECODE=1
}
