#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Large-upload ingest (issue 17): one gzipped CPU pprof with 200,000 distinct stacks of depth
# 20-40 (bench/gen-cpu-profile.py) POSTed to a fresh collector (--sync normal): answer time,
# collector CPU and peak RSS growth (VmHWM); the same four at once on --threads 4; the
# 500-stack profile's per-stack CPU in the same run; and `go tool pprof -top` reading the same
# file (time and peak RSS) as the peer.
#   bench/bench-ingest-large.sh --build DIR        (BENCH_STACKS=N for another size)
set -eu
. "$(dirname "$0")/lib.sh"
bench_args "$@"
bench_need_built bench-ingest-large roottrace-collector tests/helpers/ingest-load
BIN="$BUILD/roottrace-collector"
LOAD="$BUILD/tests/helpers/ingest-load"
STACKS="${BENCH_STACKS:-200000}"

bench_collector_tmp

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
python3 bench/gen-cpu-profile.py "$TMP/big.pb.gz" --stacks "$STACKS" --gzip 2>/dev/null
python3 bench/gen-cpu-profile.py "$TMP/small.pb.gz" --stacks 500 --gzip 2>/dev/null
BIG_BYTES=$(stat -c %s "$TMP/big.pb.gz")
BIG_RAW=$(gzip -dc "$TMP/big.pb.gz" | wc -c)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hwm_kib() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
ms_of_ticks() { awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", t * 1000 / hz / n}'; }

# start_collector NAME ARGS...: a fresh collector (--sync normal); sets PID, PORT, TOKEN
start_collector() {
	local name="$1" data="$TMP/data-$1"
	shift
	"$BIN" init --data "$data" >/dev/null 2>&1
	TOKEN=$("$BIN" token create --data "$data" --environment production --kind collector 2>/dev/null)
	"$BIN" serve --data "$data" --listen 127.0.0.1:0 --sync normal "$@" 2>"$TMP/log-$name" &
	PID=$!
	bench_collector_port bench-ingest-large "$TMP/log-$name"
}

stop_collector() {
	kill "$PID"
	wait "$PID" || true
	PID=""
}

# post SERVICE FILE: prints "status seconds"
post() {
	curl -s -o /dev/null -w '%{http_code} %{time_total}\n' \
		-H "Authorization: Collector $TOKEN" -H 'Content-Type: application/octet-stream' \
		--data-binary @"$2" "http://127.0.0.1:$PORT/api/apm/profiles?service=$1&profile_type=cpu"
}

# concurrent N: N uploads of the big profile at once on a fresh collector with --threads N
concurrent() {
	local n="$1" h0 t0 i
	start_collector "x$n" --threads "$n"
	h0=$(hwm_kib "$PID")
	t0=$(cpu_ticks "$PID")
	for i in $(seq "$n"); do
		post "big$i" "$TMP/big.pb.gz" >"$TMP/post-$n-$i" &
	done
	wait $(jobs -p | grep -vx "$PID")
	local statuses times
	statuses=$(cut -d' ' -f1 "$TMP"/post-"$n"-* | sort | uniq -c | awk '{printf "%s x%s ", $2, $1}')
	times=$(cut -d' ' -f2 "$TMP"/post-"$n"-* | sort -n | tr '\n' ' ')
	echo "| $n at once (--threads $n) | $statuses| $times| $(ms_of_ticks $(($(cpu_ticks "$PID") - t0)) "$n") | $(((($(hwm_kib "$PID") - h0)) / 1024)) |"
	stop_collector
}

echo "| uploads | status | answer s | collector CPU ms/upload | VmHWM growth MiB |"
echo "|---|---|---|---|---|"
concurrent 1
concurrent 4

# The 500-stack profile, same run: CPU per stack against the large profile's.
start_collector small
t0=$(cpu_ticks "$PID")
out=$("$LOAD" "$PORT" "$TOKEN" "service=small&profile_type=cpu" "$TMP/small.pb.gz" 1 5)
n=$(sed 's/.*uploads=\([0-9]*\).*/\1/' <<<"$out")
small_ms=$(ms_of_ticks $(($(cpu_ticks "$PID") - t0)) "$n")
ups=$(sed 's/.*uploads_per_s=\([0-9.]*\).*/\1/' <<<"$out")
stop_collector
echo
echo "500-stack profile, 1 client, 5 s: $ups uploads/s, $small_ms ms collector CPU/upload" \
	"($(awk -v m="$small_ms" 'BEGIN {printf "%.2f", m * 1000 / 500}') µs/stack)"

if command -v go >/dev/null; then
	export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOCACHE="$TMP/gocache" HOME="$TMP"
	/usr/bin/time -f '%e %M' -o "$TMP/go-time" go tool pprof -top -symbolize=none \
		"$TMP/big.pb.gz" >/dev/null 2>&1
	read -r go_s go_kib <"$TMP/go-time"
	echo "go tool pprof -top -symbolize=none, same file: $go_s s, peak RSS $((go_kib / 1024)) MiB"
else
	echo "go tool pprof: go not installed, no peer figure"
fi
echo "profile: $STACKS stacks, $BIG_BYTES bytes gzipped, $BIG_RAW bytes decompressed; $(nproc) cores;" \
	"load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
