#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Collector ingest benchmark: a realistic gzipped CPU pprof (500 distinct stacks, depth 20-40)
# POSTed over loopback by 1 and by 4 keep-alive clients, acknowledgements after commit, for
# both --sync modes. Prints uploads/s, stack values/s, p50/p99 latency and collector RSS, and
# the rollup rows the same profile makes from no node, one node and four nodes.
#   bench/bench-ingest.sh --build DIR [--seconds N]
set -eu
. "$(dirname "$0")/lib.sh"
BUILD=build
SECONDS_PER_RUN=10
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
	*) echo "usage: $0 --build DIR [--seconds N]" >&2; exit 2 ;;
	esac
done
BIN="$BUILD/roottrace-collector"
LOAD="$BUILD/tests/helpers/ingest-load"
for f in "$BIN" "$LOAD"; do
	[ -x "$f" ] || { echo "bench-ingest: $f missing (make BUILD=$BUILD all)" >&2; exit 1; }
done

bench_collector_tmp

STACKS=500
ROWS=""
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
python3 bench/gen-cpu-profile.py "$TMP/cpu.pb.gz" --stacks "$STACKS" --gzip 2>/dev/null
BYTES=$(stat -c %s "$TMP/cpu.pb.gz")

# Collector CPU (user+system clock ticks) from /proc/PID/stat: a figure that does not depend on
# how much of the machine other work leaves to the collector.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

echo "| sync | clients | uploads/s | stack values/s | p50 ms | p99 ms | collector CPU ms/upload | collector RSS MiB (peak) |"
echo "|---|---|---|---|---|---|---|---|"
for sync in full normal; do
	DATA="$TMP/data-$sync"
	"$BIN" init --data "$DATA" >/dev/null 2>&1
	TOKEN=$("$BIN" token create --data "$DATA" --environment production --kind collector 2>/dev/null)
	"$BIN" serve --data "$DATA" --listen 127.0.0.1:0 --sync "$sync" 2>"$TMP/log-$sync" &
	PID=$!
	bench_collector_port bench-ingest "$TMP/log-$sync"
	for clients in 1 4; do
		t0=$(cpu_ticks "$PID")
		out=$("$LOAD" "$PORT" "$TOKEN" "service=bench&profile_type=cpu" "$TMP/cpu.pb.gz" \
			"$clients" "$SECONDS_PER_RUN")
		t1=$(cpu_ticks "$PID")
		n=$(sed 's/.*uploads=\([0-9]*\).*/\1/' <<<"$out")
		cpu=$(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$(getconf CLK_TCK)" \
			'BEGIN {printf "%.2f", n ? (b - a) * 1000 / hz / n : 0}')
		ups=$(sed 's/.*uploads_per_s=\([0-9.]*\).*/\1/' <<<"$out")
		p50=$(sed 's/.*p50_ms=\([0-9.]*\).*/\1/' <<<"$out")
		p99=$(sed 's/.*p99_ms=\([0-9.]*\).*/\1/' <<<"$out")
		rss=$(awk '/VmRSS/ {r=$2} /VmHWM/ {h=$2} END {printf "%.1f (%.1f)", r/1024, h/1024}' \
			"/proc/$PID/status")
		svs=$(awk -v u="$ups" -v s="$STACKS" 'BEGIN {printf "%.0f", u * s}')
		echo "| $sync | $clients | $ups | $svs | $p50 | $p99 | $cpu | $rss |"
	done
	if [ "$sync" = normal ]; then
		# Rollup rows with and without the node (host comparison): the same profile from no
		# node, from one node, and from four nodes in turn.
		q="profile_type=cpu&service"
		"$LOAD" "$PORT" "$TOKEN" "$q=rows-no-node" "$TMP/cpu.pb.gz" 1 1 >/dev/null
		"$LOAD" "$PORT" "$TOKEN" "$q=rows-one-node&node=node-1" "$TMP/cpu.pb.gz" 1 1 >/dev/null
		for n in 1 2 3 4; do
			"$LOAD" "$PORT" "$TOKEN" "$q=rows-four-nodes&node=node-$n" "$TMP/cpu.pb.gz" 1 1 \
				>/dev/null
		done
		ROWS=$(python3 - "$DATA/roottrace.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = {s: db.execute("SELECT count(*) FROM rollups r JOIN series s ON s.id = r.series_id"
                   " WHERE s.service = ?", (s,)).fetchone()[0]
     for s in ("rows-no-node", "rows-one-node", "rows-four-nodes")}
print("five-minute rollup rows of the same profile: no node %d, one node %d (x%.2f), four nodes %d"
      " (x%.2f)" % (n["rows-no-node"], n["rows-one-node"],
                    n["rows-one-node"] / n["rows-no-node"], n["rows-four-nodes"],
                    n["rows-four-nodes"] / n["rows-no-node"]))
PY
		)
	fi
	kill "$PID"
	wait "$PID" || true
	PID=""
done
echo
echo "$ROWS"
echo "profile: $STACKS stacks, $BYTES bytes gzipped; $SECONDS_PER_RUN s per run; $(nproc) cores;" \
	"load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
