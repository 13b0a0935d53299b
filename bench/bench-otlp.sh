#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# OTLP ingest and span links benchmark. The ingest benchmark's CPU profile (500 stacks, depth
# 20-40, bench/gen-cpu-profile.py) sent as a gzipped pprof to POST /api/apm/profiles, as the
# same samples in a gzipped OTLP request to POST /v1development/profiles, and as that OTLP
# request with every sample linked to its own span (500 span links per upload); 1 client,
# --sync normal. Then the link store's bytes per link, and the latency of a span query
# (flamegraph?span_id=) with LINKS links stored (distinct spans of 10 per trace, written
# straight into the link store's SQLite file while the collector is stopped).
#   bench/bench-otlp.sh --build DIR [--seconds N] [--links N]
set -eu
. "$(dirname "$0")/lib.sh"
BUILD=build
SECONDS_PER_RUN=10
LINKS=1000000
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
	--links) LINKS="$2"; shift 2 ;;
	*) echo "usage: $0 --build DIR [--seconds N] [--links N]" >&2; exit 2 ;;
	esac
done
bench_need_built bench-otlp roottrace-collector tests/helpers/ingest-load
BIN="$BUILD/roottrace-collector"
LOAD="$BUILD/tests/helpers/ingest-load"

bench_collector_tmp

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start_collector() { # data dir
	"$BIN" serve --data "$1" --listen 127.0.0.1:0 --sync normal 2>"$1.log" &
	PID=$!
	bench_collector_port bench-otlp "$1.log"
}

stop_collector() {
	kill "$PID"
	wait "$PID" || true
	PID=""
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
python3 bench/gen-cpu-profile.py "$TMP/cpu.pb.gz" --gzip 2>/dev/null
python3 bench/gen-cpu-profile.py "$TMP/otlp.pb.gz" --otlp --gzip 2>/dev/null
python3 bench/gen-cpu-profile.py "$TMP/links.pb.gz" --otlp --links --gzip 2>/dev/null

DATA="$TMP/data"
"$BIN" init --data "$DATA" >/dev/null 2>&1
TOKEN=$("$BIN" token create --data "$DATA" --environment production --kind collector 2>/dev/null)
start_collector "$DATA"
echo "| upload | bytes (gzip) | uploads/s | p50 ms | p99 ms | collector CPU ms/upload |"
echo "|---|---|---|---|---|---|"
run() { # name file query path content-type
	local t0 t1 out n
	t0=$(cpu_ticks "$PID")
	out=$("$LOAD" "$PORT" "$TOKEN" "$3" "$2" 1 "$SECONDS_PER_RUN" "$4" "$5")
	t1=$(cpu_ticks "$PID")
	n=$(sed 's/.*uploads=\([0-9]*\).*/\1/' <<<"$out")
	echo "| $1 | $(stat -c %s "$2") | $(sed 's/.*uploads_per_s=\([0-9.]*\).*/\1/' <<<"$out") |" \
		"$(sed 's/.*p50_ms=\([0-9.]*\).*/\1/' <<<"$out") |" \
		"$(sed 's/.*p99_ms=\([0-9.]*\).*/\1/' <<<"$out") |" \
		"$(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$(getconf CLK_TCK)" \
			'BEGIN {printf "%.2f", n ? (b - a) * 1000 / hz / n : 0}') |"
}
run "pprof, POST /api/apm/profiles" "$TMP/cpu.pb.gz" "service=bench&profile_type=cpu" \
	/api/apm/profiles application/octet-stream
run "OTLP, same samples" "$TMP/otlp.pb.gz" "" /v1development/profiles application/x-protobuf
run "OTLP, 500 span links each" "$TMP/links.pb.gz" "" /v1development/profiles \
	application/x-protobuf
stop_collector

# Bytes per stored link: the link store's pages in use over its links (after a checkpoint).
python3 - "$DATA/roottrace-links.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
n = db.execute("SELECT count(*) FROM span_links").fetchone()[0]
pages = db.execute("PRAGMA page_count").fetchone()[0] - db.execute("PRAGMA freelist_count").fetchone()[0]
size = pages * db.execute("PRAGMA page_size").fetchone()[0]
print()
print("span links from the run above: %d, link store %d bytes in use, %.1f bytes per link"
      " (rows and their indexes; each stack kept once)" % (n, size, size / n if n else 0))
PY

# A span query with LINKS links stored: 10 spans per trace over 500 stacks, written directly.
python3 - "$DATA/roottrace-links.db" "$LINKS" <<'PY'
import random, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
links = int(sys.argv[2])
stacks = [r[0] for r in db.execute("SELECT id FROM link_stacks")]
now = int(time.time())
rng = random.Random(1)
def rows():
    for i in range(links):
        yield (now - rng.randint(0, 3 * 86400 - 1), "production", "bench", "cpu",
               "%032x" % (i // 10 + 1), "%016x" % (i + 1_000_000), "GET /x", rng.choice(stacks),
               10_000_000, 1, "")
db.execute("DELETE FROM span_links")
db.executemany("INSERT INTO span_links (time, environment, service, profile_type, trace_id,"
               " span_id, span_name, stack_id, value, samples, root_span_id)"
               " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows())
db.commit()
PY
"$BIN" token create --data "$DATA" --environment production --kind user --role viewer \
	>"$TMP/user" 2>/dev/null
start_collector "$DATA"
python3 - "$PORT" "$(cat "$TMP/user")" "$LINKS" <<'PY'
import random, sys, time, urllib.request
port, token, links = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(2)
lat = []
now = int(time.time())
for _ in range(200):
    span = "%016x" % (rng.randrange(links) + 1_000_000)
    url = ("http://127.0.0.1:%s/api/apm/profiles/flamegraph?service=bench&profile_type=cpu"
           "&span_id=%s&start=%d&end=%d" % (port, span, now - 3 * 86400, now + 300))
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    t = time.monotonic()
    with urllib.request.urlopen(req) as r:
        r.read()
    lat.append((time.monotonic() - t) * 1000)
lat.sort()
print("span query (flamegraph?span_id=, one span of %d links stored, 200 random spans):"
      " p50 %.2f ms, p99 %.2f ms" % (links, lat[len(lat) // 2], lat[int(len(lat) * 0.99) - 1]))
PY
stop_collector
echo
echo "$SECONDS_PER_RUN s per ingest run, 1 client, --sync normal; $(nproc) cores;" \
	"load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
