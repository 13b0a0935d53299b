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
# A full run (no --only): unit, bpf, the integration programs that run the agent; then two
# streams in the background (the e2e suite and a few collector programs; the ClickHouse cluster
# and fleet programs of integration, then the fleet suites) beside the foreground's other
# collector programs and the sanitize and fuzz suites (see below). The background lines come last.
# Python cases print "(Ns)" after PASS when they took 5 s+.
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
timings=() # "seconds suite/program", for the closing list of the slowest
RUN_START=$(date +%s)

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
	timings+=("$(( $(date +%s) - start )) $name")
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
suite_files() { # suite
	local t
	for t in tests/$1/test_*.py tests/$1/test-*.sh; do
		[ -f "$t" ] && matches "$t" && echo "$t"
	done
}
run_file() { # suite file
	case "$2" in
	*.py) run_one "$1" "$2" python3 "$2" ;;
	*.sh) run_one "$1" "$2" bash "$2" ;;
	esac
}

# A full run splits the integration suite. Its programs that run the agent (BPF, shares of the
# machine's CPU) or a language SDK whose profile shares are asserted run first, on a quiet
# machine. The rest drive only the collector and its servers: no share or timing assertions, so
# once the quiet programs are done they run beside other work. The two background streams start
# there (see below); the collector programs named in BESIDE_E2E and BESIDE_CH move to the ends of
# those streams, and the others run in the foreground, beside them, before the sanitizer and fuzz
# suites. --only integration (make check-quick) runs every program in place, in file order.
QUIET_INTEGRATION="test_packaging.py test_pyroscope_nodejs.py"
quiet_integration() { [[ "$(basename "$1")" == test_agent_* ]] ||
	[[ " $QUIET_INTEGRATION " == *" $(basename "$1") "* ]]; }
BESIDE_CH="test_fleet_cluster.py test_fleet_replicas.py test_collector_fleet.py
test_fleet_stacks.py test_fleet_series.py"
BESIDE_E2E="test_collector_large_upload.py test_collector_hardening.py test_otlp_trace.py"
moved() { # file list -> is it moved to a background stream (full runs only)?
	[ -z "$ONLY" ] && [[ " $(echo $2) " == *" $(basename "$1") "* ]]
}
moved_to_background() { moved "$1" "$BESIDE_CH" || moved "$1" "$BESIDE_E2E"; }

if want bpf; then
	for t in $(suite_files bpf); do
		run_file bpf "$t"
	done
fi
if want integration; then
	for t in $(suite_files integration); do
		{ [ -n "$ONLY" ] || quiet_integration "$t"; } && run_file integration "$t"
	done
fi

# A background stream: its own counters, its lines to a file, its totals on the file's last
# line; bg_collect prints the file and adds the totals once the stream ends.
BG_STREAMS=() # "pid:file:tag"
bg_start() { # file-stem tag function
	local out="$LOG_DIR/$1-background.txt"
	(
		passed=0 failed=0 skipped=0 failed_names=()
		"$3"
		echo "BG_TOTALS $passed $failed $skipped ${failed_names[*]}" >&2
	) 2>"$out" &
	BG_STREAMS+=("$!:$out:$2")
}
bg_collect() {
	local entry pid out tag line p f s names
	for entry in "${BG_STREAMS[@]}"; do
		IFS=: read -r pid out tag <<<"$entry"
		wait "$pid"
		grep -v '^BG_TOTALS ' "$out" >&2
		while read -r line; do
			timings+=("$line ($tag)")
		done < <(awk '/^== /{n=$2} /^   \([0-9]+s\)$/{gsub(/[()s ]/,""); print $0, n}' "$out")
		p="" f="" s="" names=""
		read -r _ p f s names < <(grep '^BG_TOTALS ' "$out")
		if [ -z "${p:-}" ]; then
			p=0 f=1 s=0 names="$tag (no totals: the background run died)"
		fi
		passed=$((passed + p))
		failed=$((failed + f))
		skipped=$((skipped + s))
		[ -n "${names:-}" ] && failed_names+=($names)
	done
}

# The store-level suites whose expected answers are the same on both backends.
FLEET_SUITES="test_collector_config test_collector_auth test_collector_idempotent test_queries
test_collector_ingest test_profile_lines"
fleet_suites() {
	local s t
	for s in $FLEET_SUITES; do
		t="tests/integration/$s.py"
		matches "$t" || continue
		ROOTTRACE_TEST_BACKEND=fleet run_one fleet "$t" python3 "$t"
	done
}
moved_programs() { # list: the integration files of list, in file order
	local t
	for t in $(suite_files integration); do
		moved "$t" "$1" && run_file integration "$t"
	done
}

# The end-to-end suite spends 3-6 minutes, most of it waiting for a five-minute bucket boundary
# (its deploy scenario needs one between v1 and v2), with one workload thread at half a core:
# its own assertions compare the profile with the cgroup's CPU, which load does not change. In
# a full run it waits in the background, followed by the BESIDE_E2E collector programs only
# (about 2 minutes there), so that a 6-minute wait still ends before the foreground does.
e2e_suite() {
	local t
	for t in $(suite_files e2e); do
		run_file e2e "$t"
	done
}
e2e_stream() {
	e2e_suite
	moved_programs "$BESIDE_E2E"
}
# The ClickHouse stream: the cluster programs (a ZooKeeper and two servers, or two replicas),
# the fleet programs on one server, then the fleet suites; each program starts servers of its
# own, on free ports, in a directory of its own. They mostly wait (~0.5 core of CPU: ZooKeeper,
# merges, tier builds, retries), so they overlap the foreground's collector programs and the
# CPU-bound sanitizer and fuzz builds instead of following them. --only fleet runs the fleet
# suites alone, in the foreground.
clickhouse_stream() {
	moved_programs "$BESIDE_CH"
	fleet_suites
}
if [ -z "$ONLY" ]; then
	bg_start e2e background e2e_stream
	bg_start clickhouse beside clickhouse_stream
	echo "== e2e, fleet and ClickHouse cluster programs: running in the background" >&2
	for t in $(suite_files integration); do
		quiet_integration "$t" || moved_to_background "$t" || run_file integration "$t"
	done
elif [ "$ONLY" = e2e ]; then
	e2e_suite
fi

for suite in sanitize fuzz; do
	want "$suite" || continue
	for t in $(suite_files "$suite"); do
		run_file "$suite" "$t"
	done
done

if [ "$ONLY" = fleet ]; then
	fleet_suites
fi

if [ "$ONLY" = fleet-cluster ]; then
	for s in $FLEET_SUITES test_collector_fleet test_fleet_stacks test_fleet_series \
		test_fleet_lines test_fleet_span_round_trips; do
		t="tests/integration/$s.py"
		matches "$t" || continue
		ROOTTRACE_TEST_BACKEND=fleet ROOTTRACE_FLEET_CLUSTER=2x1 run_one fleet-cluster "$t" \
			python3 "$t"
	done
fi

bg_collect

if [ ${#timings[@]} -gt 1 ]; then
	echo "slowest programs (s): $(printf '%s\n' "${timings[@]}" | sort -rn | head -n 8 |
		tr '\n' ';' | sed 's/;$//; s/;/; /g'); all: $(( $(date +%s) - RUN_START ))s" >&2
fi
if [ ${#failed_names[@]} -gt 0 ]; then
	echo "failed programs: ${failed_names[*]}" >&2
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ $((passed + failed)) -gt 0 ]
