#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test program and prints one closing line: "N passed, N failed, N skipped".
# Each program prints "PASS name" / "FAIL name: why" / "SKIP name: why" per case; a program
# that exits non-zero without printing a FAIL line counts as one failure of its own.
#   tests/run-tests.sh [--build DIR] [--only unit|bpf|integration|fleet|fleet-cluster|e2e|sanitize|fuzz] [PATTERN]
# "fleet" runs the store-level integration suites again with ROOTTRACE_TEST_BACKEND=fleet: the
# same cases against PostgreSQL + ClickHouse (throwaway servers each program starts and stops).
# "fleet-cluster" (make check-fleet, not in make check) runs them and the fleet suites on a
# ClickHouse cluster of two shards (ROOTTRACE_FLEET_CLUSTER=2x1: ZooKeeper + two servers).
set -u
cd "$(dirname "$0")/.."
BUILD=build
ONLY=""
PATTERN=""
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--only) ONLY="$2"; shift 2 ;;
	*) PATTERN="$1"; shift ;;
	esac
done
export ROOTTRACE_BUILD="$(cd "$BUILD" && pwd)"
export ROOTTRACE_SRC="$(pwd)"
export PYTHONPATH="$ROOTTRACE_SRC/tests/lib${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1

LOG_DIR="$ROOTTRACE_BUILD/test-logs"
mkdir -p "$LOG_DIR"
passed=0 failed=0 skipped=0
failed_names=()

run_one() { # suite file program [args...]
	local suite="$1" file="$2" prog="$3"
	shift 3
	local name log start
	name="$suite/$(basename "$file")"
	log="$LOG_DIR/${suite}-$(basename "$file").log"
	start=$(date +%s)
	echo "== $name" >&2
	"$prog" "$@" >"$log" 2>&1
	local rc=$?
	local p f s
	p=$(grep -c '^PASS ' "$log")
	f=$(grep -c '^FAIL ' "$log")
	s=$(grep -c '^SKIP ' "$log")
	grep -E '^(PASS|FAIL|SKIP) ' "$log" | sed 's/^/   /' >&2
	if [ "$f" -eq 0 ] && [ "$rc" -ne 0 ]; then
		f=1
		echo "   FAIL $name: exited $rc without a FAIL line" >&2
	fi
	if [ "$f" -gt 0 ]; then
		echo "   --- log of $name (last 60 lines) ---" >&2
		tail -n 60 "$log" | sed 's/^/   | /' >&2
		failed_names+=("$name")
	fi
	echo "   ($(( $(date +%s) - start ))s)" >&2
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
}

want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }
matches() { [ -z "$PATTERN" ] || [[ "$1" == *"$PATTERN"* ]]; }

if want unit; then
	for t in "$BUILD"/tests/test-*; do
		[ -x "$t" ] && matches "$t" && run_one unit "$t" "$t"
	done
fi
for suite in bpf integration e2e sanitize fuzz; do
	want "$suite" || continue
	for t in tests/$suite/test_*.py tests/$suite/test-*.sh; do
		[ -f "$t" ] && matches "$t" || continue
		case "$t" in
		*.py) run_one "$suite" "$t" python3 "$t" ;;
		*.sh) run_one "$suite" "$t" bash "$t" ;;
		esac
	done
done

# The store-level suites whose expected answers are the same on both backends.
FLEET_SUITES="test_collector_config test_collector_auth test_collector_idempotent test_queries
test_collector_ingest test_profile_lines"
if want fleet; then
	for s in $FLEET_SUITES; do
		t="tests/integration/$s.py"
		matches "$t" || continue
		ROOTTRACE_TEST_BACKEND=fleet run_one fleet "$t" python3 "$t"
	done
fi

if [ "$ONLY" = fleet-cluster ]; then
	for s in $FLEET_SUITES test_collector_fleet test_fleet_stacks test_fleet_span_round_trips; do
		t="tests/integration/$s.py"
		matches "$t" || continue
		ROOTTRACE_TEST_BACKEND=fleet ROOTTRACE_FLEET_CLUSTER=2x1 run_one fleet-cluster "$t" \
			python3 "$t"
	done
fi

if [ ${#failed_names[@]} -gt 0 ]; then
	echo "failed programs: ${failed_names[*]}" >&2
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ $((passed + failed)) -gt 0 ]
