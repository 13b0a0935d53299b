#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (mk/fuzz.mk) and runs each from its committed corpus, so every
# committed crash input is replayed first, then for FUZZ_RUNS new inputs (default 10000, what
# make check runs: a second or two a target, the slowest ~15 s) or FUZZ_SECONDS (default 15),
# whichever ends first. `make fuzz` is the long run: FUZZ_RUNS=0 (no bound), 60 s a target.
# One PASS/FAIL line per target; targets run in parallel, one per CPU.
set -u
SRC="${ROOTTRACE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
BUILD="${ROOTTRACE_BUILD:-$SRC/build}"
FUZZ="${FUZZ_BUILD:-$BUILD/fuzz}"
SECONDS_EACH="${FUZZ_SECONDS:-15}"
RUNS_EACH="${FUZZ_RUNS:-10000}"
RUNS_ARG=()
[ "$RUNS_EACH" -gt 0 ] && RUNS_ARG=(-runs="$RUNS_EACH")
TARGETS="${FUZZ_TARGETS:-}"
JOBS="${FUZZ_JOBS:-$(nproc)}"
cd "$SRC" || exit 1
case "$FUZZ" in /*) ;; *) FUZZ="$SRC/$FUZZ" ;; esac

mkdir -p "$FUZZ/logs" "$FUZZ/artifacts"
if ! make -s -j"$(nproc)" fuzz-build BUILD="$BUILD" FUZZ_BUILD="$FUZZ" >"$FUZZ/logs/build.log" 2>&1; then
	echo "FAIL fuzz.build: make fuzz-build failed; see $FUZZ/logs/build.log"
	tail -n 30 "$FUZZ/logs/build.log"
	exit 1
fi
echo "PASS fuzz.build"

run_target() { # name
	local name="$1" bin="$FUZZ/fuzzers/fuzz-$1" log="$FUZZ/logs/$1.log"
	local corpus="tests/fuzz/corpus/$1" work="$FUZZ/work/$1"
	local start
	mkdir -p "$work" "$corpus"
	start=$(date +%s)
	# the first corpus dir receives new inputs: the work dir, never the committed one
	ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" \
	UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
	"$bin" -max_total_time="$SECONDS_EACH" "${RUNS_ARG[@]}" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$FUZZ/artifacts/$name-" -print_final_stats=1 \
		"$work" "$corpus" >"$log" 2>&1
	local rc=$? took=$(($(date +%s) - start))
	if [ "$rc" -eq 0 ]; then
		local execs
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		echo "PASS fuzz.$name (${execs:-?} runs in ${took}s)"
	else
		local why
		why=$(grep -m1 -E 'ERROR: |runtime error:|deadly signal|out-of-memory|timeout' "$log")
		echo "FAIL fuzz.$name: ${why:-exited $rc} (log $log; input in $FUZZ/artifacts/)"
		# a CI run keeps only this output: the log's end and the input, to replay it here
		tail -n 25 "$log" | sed "s/^/  fuzz.$name| /"
		for input in "$FUZZ/artifacts/$name-"*; do
			[ -f "$input" ] || continue
			echo "  fuzz.$name| input $(basename "$input"), base64:"
			head -c 2048 "$input" | base64 -w 100 | sed "s/^/  fuzz.$name| /"
		done
	fi
	return $rc
}

names=()
for src in tests/fuzz/fuzz-*.c; do
	name=$(basename "$src" .c)
	name=${name#fuzz-}
	if [ -n "$TARGETS" ] && [[ " $TARGETS " != *" $name "* ]]; then
		continue
	fi
	names+=("$name")
done

failed=0
running=0
for name in "${names[@]}"; do
	if [ "$running" -ge "$JOBS" ]; then
		wait -n || failed=1
		running=$((running - 1))
	fi
	run_target "$name" &
	running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
	wait -n || failed=1
	running=$((running - 1))
done
exit $failed
