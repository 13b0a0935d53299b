# SPDX-License-Identifier: Apache-2.0
# Shared preamble of bench/bench-*.sh, sourced after `set -eu`: moves to the repository root;
# bench_args parses --build DIR into BUILD; the checks stop a benchmark with one line naming
# what is missing; bench_start_collector runs a fresh collector; bench_python_env sets what
# tests/lib's Python modules expect.
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

# bench_temp_dir: TMP, removed at exit after stopping the collector in PID (if any)
bench_temp_dir() {
	TMP=$(mktemp -d)
	PID=""
	trap 'if [ -n "$PID" ]; then kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; fi; rm -rf "$TMP"' EXIT
}

# bench_start_collector NAME BIN DATA LOG SERVE_ARGS...: a fresh data dir DATA with a collector
# token, `serve` on a free loopback port in the background; sets PID, PORT and TOKEN.
bench_start_collector() {
	local name="$1" bin="$2" data="$3" log="$4"
	shift 4
	"$bin" init --data "$data" >/dev/null 2>&1
	TOKEN=$("$bin" token create --data "$data" --environment production --kind collector 2>/dev/null)
	"$bin" serve --data "$data" --listen 127.0.0.1:0 "$@" 2>"$log" &
	PID=$!
	PORT=""
	for _ in $(seq 100); do
		PORT=$(grep -o 'listening on [0-9.]*:[0-9]*' "$log" | sed 's/.*://' || true)
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	[ -n "$PORT" ] || { echo "$name: collector did not start" >&2; exit 1; }
}

bench_python_env() {
	ROOTTRACE_BUILD="$(cd "$BUILD" && pwd)"
	export ROOTTRACE_BUILD
	export ROOTTRACE_SRC="$PWD"
	export PYTHONPATH="$ROOTTRACE_SRC/tests/lib"
	export PYTHONDONTWRITEBYTECODE=1
}
