#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Sanitizer pass: rebuilds with ASan+UBSan (mk/sanitize.mk), runs every unit test and a
# chosen subset of integration tests against the instrumented binaries; any ASan, UBSan or
# LeakSanitizer report fails the case. One PASS/FAIL/SKIP line per program.
set -u
SRC="${ROOTTRACE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
BUILD="${ROOTTRACE_BUILD:-$SRC/build}"
SAN="${SAN_BUILD:-$BUILD/asan}"
# Integration tests run against the instrumented binaries: the collector suites, which feed
# outside bytes (pprof, gzip, JSON, query strings) through the parsers and stop the collector
# with SIGTERM (its graceful exit runs LeakSanitizer). The agent daemon suite (~100 s
# uninstrumented, BPF) is left out for time; the agent's parsers are covered by the unit tests
# here and by the fuzz suite. Missing files are skipped. Override: SAN_INTEGRATION="a.py b.py".
SAN_INTEGRATION="${SAN_INTEGRATION:-test_collector_ingest.py test_collector_config.py test_collector_auth.py test_collector_server.py test_collector_tiers.py test_queries.py test_collector_idempotent.py test_pyroscope_ingest.py test_otlp_trace.py test_links_stack_dictionary.py test_contract_gaps.py test_spans_route.py}"
TIMEOUT_S="${SAN_TIMEOUT_S:-120}"
cd "$SRC" || exit 1
export PYTHONPATH="$SRC/tests/lib${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1

LOGS="$SAN/san-logs"
rm -rf "$LOGS"
mkdir -p "$LOGS"
failed=0

if ! make -s -j"$(nproc)" sanitize-build BUILD="$BUILD" SAN_BUILD="$SAN" >"$LOGS/build.log" 2>&1; then
	echo "FAIL sanitize.build: make sanitize-build failed; see $LOGS/build.log"
	tail -n 30 "$LOGS/build.log"
	exit 1
fi
echo "PASS sanitize.build"

# halt on the first report; leak check at exit; reports go to files as well as stderr so that
# a report from a daemon whose stderr a test discards is still seen.
san_env() { # name
	local dir="$LOGS/$1"
	mkdir -p "$dir"
	export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=86:log_path=$dir/asan:detect_stack_use_after_return=1:strict_string_checks=1"
	export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$dir/ubsan"
	export LSAN_OPTIONS="exitcode=86"
}

first_report() { # dir -> first line naming the finding (report files, then the output)
	cat "$1"/asan.* "$1"/ubsan.* "$1.out" 2>/dev/null |
		grep -a -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY:'
}

# The program's own failed cases, on one line: run-tests.sh shows only lines that start with
# PASS/FAIL/SKIP, so the indented copies above them never reach make check's summary.
failed_cases() { # out-file -> "case: why; case: why" (the first three)
	grep -a -E '^FAIL ' "$1" 2>/dev/null | head -n 3 | sed 's/^FAIL //' | paste -s -d ';' - |
		sed 's/;/; /g'
}

check_case() { # name rc dir
	local name="$1" rc="$2" dir="$3" report cases
	report="$(first_report "$dir")"
	cases="$(failed_cases "$dir.out")"
	if [ -n "$report" ]; then
		echo "FAIL $name: $report (logs in $dir)"
		failed=1
	elif [ "$rc" -ne 0 ]; then
		echo "FAIL $name: exited $rc${cases:+ (failed: $cases)}"
		failed=1
	else
		echo "PASS $name"
	fi
}

# The unit tests run two at a time (each is one process, most CPU-bound), then report in order.
run_unit() { # binary
	local t="$1" base
	base="$(basename "$t")"
	(san_env "$base" && exec timeout "$TIMEOUT_S" "$t") >"$LOGS/$base.out" 2>&1
	echo $? >"$LOGS/$base.rc"
}
UNIT_JOBS="${SAN_UNIT_JOBS:-$(nproc)}"
for t in "$SAN"/tests/test-*; do
	[ -x "$t" ] || continue
	while [ "$(jobs -rp | wc -l)" -ge "$UNIT_JOBS" ]; do
		wait -n
	done
	run_unit "$t" &
done
wait
for t in "$SAN"/tests/test-*; do
	[ -x "$t" ] || continue
	base="$(basename "$t")"
	rc="$(cat "$LOGS/$base.rc" 2>/dev/null || echo 1)"
	grep -a -E '^(FAIL|SKIP) ' "$LOGS/$base.out" | sed 's/^/  /'
	check_case "sanitize.unit.$base" "$rc" "$LOGS/$base"
done

for f in $SAN_INTEGRATION; do
	name="sanitize.integration.${f%.py}"
	if [ ! -f "tests/integration/$f" ]; then
		echo "SKIP $name: tests/integration/$f does not exist"
		continue
	fi
	(san_env "${f%.py}" && ROOTTRACE_BUILD="$SAN" exec timeout "$TIMEOUT_S" python3 \
		"tests/integration/$f") >"$LOGS/${f%.py}.out" 2>&1
	rc=$?
	grep -a -E '^(FAIL|SKIP) ' "$LOGS/${f%.py}.out" | sed 's/^/  /'
	check_case "$name" "$rc" "$LOGS/${f%.py}"
done
exit $failed
