#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Line detail benchmark (issue 32), on the SQLite store of a real collector over HTTP:
# 1. bytes per stored value: the ingest benchmark's 500-stack CPU profile (bench/gen-cpu-profile.py)
#    uploaded into BUCKETS five-minute buckets (default 96), once as it is (names only) and once
#    with a file and line on every location (--lines: Go's runtime/pprof shape); the database
#    file after a checkpoint over the five-minute rollup values it holds, and the line tables'
#    own bytes (dbstat);
# 2. a lines query over DAYS days (default 30) of that profile with lines in every five-minute
#    bucket (8,640 uploads through Pyroscope's POST /ingest, whose from= sets the bucket): p50 and
#    p99 of QUERIES reads of GET /api/apm/profiles/lines over those days for the hottest leaf
#    function, beside GET /api/apm/profiles/top over the same window. Latency includes the HTTP
#    round trip (urllib, one connection per request).
# --backend fleet runs part 2 only, on the ClickHouse store (throwaway PostgreSQL and ClickHouse
# of tests/lib/fleet_servers.py), and times the lookup of a group's line marks as the writer
# sends it (collector/store/clickhouse/profiles_ch_lines.c).
#   bench/bench_lines.py --build DIR [--buckets N] [--days N] [--queries N] [--backend fleet]
import argparse
import base64
import concurrent.futures
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "lib"))


BACKEND = "sqlite"


def collector(build):
    os.environ["ROOTTRACE_BUILD"] = os.path.abspath(build)
    from collector_fixture import Collector
    if BACKEND == "fleet":
        return Collector(backend="fleet")
    return Collector(backend="sqlite", serve_args=("--sync", "normal"))


def profile(tmp, lines):
    out = os.path.join(tmp, "cpu-lines.pb" if lines else "cpu.pb")
    subprocess.run([sys.executable, os.path.join(SRC, "bench", "gen-cpu-profile.py"), out,
                    "--stacks", "500", "--time", "1"] + (["--lines"] if lines else []),
                   check=True, capture_output=True)
    with open(out, "rb") as f:
        return f.read()


def ingest(c, token, body, service, at):
    q = urllib.parse.urlencode({"name": service + ".cpu", "from": at, "format": "pprof"})
    req = urllib.request.Request("http://127.0.0.1:%d/ingest?%s" % (c.port, q), data=body,
                                 method="POST")
    req.add_header("Authorization", "Basic " + base64.b64encode(
        ("bench:" + token).encode()).decode())
    req.add_header("Content-Type", "application/octet-stream")
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 200, r.status


def upload_buckets(c, token, body, service, first, n, workers=2):
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        list(ex.map(lambda i: ingest(c, token, body, service, first + i * 300), range(n)))


def table_bytes(db, like):
    try:
        return db.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE ?",
                          (like,)).fetchone()[0]
    except sqlite3.OperationalError:
        return None  # no dbstat in this SQLite


def bytes_per_value(build, tmp, buckets):
    print("| line detail | profile bytes | five-minute values | database bytes | bytes per value"
          " | line tables bytes |")
    print("|---|---|---|---|---|---|")
    rows = {}
    first = int(time.time()) - 3 * 86400
    first -= first % 86400
    for lines in (False, True):
        body = profile(tmp, lines)
        c = collector(build)
        try:
            tok = c.create_token("collector")
            upload_buckets(c, tok, body, "bench", first, buckets)
            c.stop()
            path = os.path.join(c.data, "roottrace.db")
            db = sqlite3.connect(path)
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            values = db.execute("SELECT count(*) FROM rollups").fetchone()[0]
            line_bytes = table_bytes(db, "line_%")
            db.close()
            size = os.path.getsize(path)
        finally:
            c.close()
        rows[lines] = size / values
        print("| %s | %d | %d | %d | %.1f | %s |" % ("with" if lines else "without", len(body),
                                                    values, size, size / values,
                                                    line_bytes if line_bytes is not None else "-"))
    print("\nline detail costs %+.1f %% bytes per stored value (%d buckets of the 500-stack "
          "profile)" % ((rows[True] / rows[False] - 1) * 100, buckets))


def timed_get(c, token, path, params):
    url = "http://127.0.0.1:%d%s?%s" % (c.port, path, urllib.parse.urlencode(params))
    req = urllib.request.Request(url)
    req.add_header("Authorization", "Bearer " + token)
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as r:
        r.read()
        assert r.status == 200, r.status
    return (time.perf_counter() - t0) * 1000


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def query_30_days(build, tmp, days, queries):
    body = profile(tmp, True)
    c = collector(build)
    try:
        tok = c.create_token("collector")
        viewer = c.create_token("user", role="viewer")
        now = int(time.time())
        n = days * 288
        first = now - now % 300 - (n - 1) * 300
        t0 = time.time()
        upload_buckets(c, tok, body, "bench", first, n)
        upload_s = time.time() - t0
        params = {"service": "bench", "profile_type": "cpu", "start": first,
                  "end": first + n * 300}
        status, top = c.get_json("/api/apm/profiles/top", viewer, params=dict(params, limit=1))
        assert status == 200, top
        hot = top["functions"][0]["name"]
        status, doc = c.get_json("/api/apm/profiles/lines", viewer,
                                 params=dict(params, function=hot))
        assert status == 200, doc
        lines = [timed_get(c, viewer, "/api/apm/profiles/lines", dict(params, function=hot))
                 for _ in range(queries)]
        tops = [timed_get(c, viewer, "/api/apm/profiles/top", params) for _ in range(queries)]
        print("\n| query over %d days (%d five-minute buckets, %d uploads in %.0f s) | p50 ms |"
              " p99 ms |" % (days, n, n, upload_s))
        print("|---|---|---|")
        print("| lines of %s (%d lines) | %.1f | %.1f |" % (hot, doc["n_lines"],
                                                          percentile(lines, 0.5),
                                                          percentile(lines, 0.99)))
        print("| top (for comparison) | %.1f | %.1f |" % (percentile(tops, 0.5),
                                                          percentile(tops, 0.99)))
        if BACKEND == "fleet":
            mark_lookup(c, queries)
    finally:
        c.close()


def mark_lookup(c, queries):
    """The writer's lookup of one group's line marks (8 uploads of the bench series) among
    the 30 days' marks, timed over HTTP as ClickHouse answers it."""
    marks = c.clickhouse("SELECT environment, bucket, position FROM {db}.profile_lines"
                         " WHERE function = '' AND kind = 255 LIMIT 8").split("\n")
    cond = " OR ".join(
        "(environment = '%s' AND service = 'bench' AND profile_type = 'cpu' AND bucket = %s"
        " AND position = %s)" % tuple(m.split("\t")) for m in marks if m)
    sql = ("SELECT position FROM {db}.profile_lines WHERE function = '' AND kind = 255 AND (%s)"
           " GROUP BY position" % cond)
    for name, q in (("a group's mark lookup (8 uploads; %s marks stored)" % c.clickhouse(
            "SELECT count() FROM {db}.profile_lines WHERE kind = 255").strip(), sql),
                    ("SELECT 1 (the round trip alone, for comparison)", "SELECT 1")):
        took = []
        for _ in range(queries):
            t0 = time.perf_counter()
            c.clickhouse(q)
            took.append((time.perf_counter() - t0) * 1000)
        print("| %s | %.1f | %.1f |" % (name, percentile(took, 0.5), percentile(took, 0.99)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--buckets", type=int, default=96)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--backend", choices=("sqlite", "fleet"), default="sqlite")
    a = ap.parse_args()
    global BACKEND
    BACKEND = a.backend
    with tempfile.TemporaryDirectory() as tmp:
        if BACKEND == "sqlite":
            bytes_per_value(a.build, tmp, a.buckets)
        query_30_days(a.build, tmp, a.days, a.queries)
    print("\n%d cores; load average after: %s" % (os.cpu_count(),
                                                 open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
