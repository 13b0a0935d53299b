#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Span link store benchmark: bytes per stored link and span query latency with LINKS links
# stored (default 10 million), on SQLite (one collector's roottrace-links.db) and on ClickHouse
# (fleet mode, tests/lib/fleet_servers.py). The links are written in bulk by the database
# itself, not through 10M HTTP uploads: one INSERT ... SELECT over a generated sequence in each
# (SQLite: a recursive CTE, with the collector stopped; ClickHouse: numbers()). 10 spans per
# trace, the first the parent of the other nine, over STACKS stacks (default 500) of 20-40
# frames named from 997 functions, times spread
# evenly over 3 days; ids look random (their first 8 hex digits a multiplicative hash of the
# number, the rest the number itself: unique, and scattered over the index as real ids are,
# so neither the SQLite B-trees nor ClickHouse's compression get sequential keys). Then
# QUERIES random spans are
# read through the collector's HTTP API: flamegraph?span_id= (the span's links), and with
# include_children=true (the tree walk: the span's and its trace's rows, then the family's
# links); then QUERIES / 4 random traces, traces/{id}/profile?include_children=true (every span
# of the trace with its family). Latency includes the HTTP round trip (urllib, one connection
# per request). SQLite link stacks are written in the layout the collector's file has: function
# ids (`functions`, link_stacks.ids) or, for a collector before them, joined frame text keyed
# by a hash, so the same script measures both.
#   bench/bench_links.py --build DIR [--links N] [--queries N] [--stacks N]
#                        [--backend sqlite|clickhouse|both]
import argparse
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "lib"))
from bench_fleet import start_collector  # noqa: E402 -- after the path is set

FUNCTIONS = 997
SPANS_PER_TRACE = 10
SPREAD_S = 3 * 86400
CH_CHUNK = 1_000_000
LINK_TABLES = ("span_links", "span_traces", "span_roots", "span_names")
MIX = 2654435761  # Knuth's multiplicative hash: (n * MIX) mod 2^32 scatters n


def span_hex(i):
    """Span i's id (16 hex digits): its hash, then i (unique)."""
    return "%08x%08x" % ((i * MIX) % 2**32, i)


def trace_hex(i):
    """The trace of span i (10 spans a trace), 32 hex digits."""
    t = i // SPANS_PER_TRACE + 1
    return "%016x%08x%08x" % (0, (t * MIX) % 2**32, t)


def stop(proc):
    proc.terminate()
    proc.wait(timeout=60)


def cli(binary, *args):
    return subprocess.run([binary] + list(args), check=True, capture_output=True,
                          text=True).stdout.strip()


def percentile(sorted_ms, p):
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * p))]


def latencies(port, token, paths):
    """p50 and p99 ms of GET each path (an empty answer is an error: the fill went wrong)."""
    lat = []
    for path in paths:
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                     headers={"Authorization": "Bearer " + token})
        t = time.monotonic()
        with urllib.request.urlopen(req, timeout=120) as r:
            body = r.read()
        lat.append((time.monotonic() - t) * 1000)
        if b'"total":0,' in body or b'"spans":[]' in body:
            raise RuntimeError("%s read nothing: %s" % (path, body[:200]))
    lat.sort()
    return percentile(lat, 0.5), percentile(lat, 0.99)


def span_paths(links, queries, start, end, children):
    rng = random.Random(2)
    return ["/api/apm/profiles/flamegraph?service=bench&profile_type=cpu&span_id=%s&start=%d"
            "&end=%d%s" % (span_hex(rng.randrange(links)), start, end,
                           "&include_children=true" if children else "")
            for _ in range(queries)]


def trace_paths(links, queries):
    rng = random.Random(3)
    return ["/api/apm/traces/%s/profile?include_children=true" % trace_hex(rng.randrange(links))
            for _ in range(queries)]


def report(backend, links, stacks, fill_s, size, port, token, queries, t0):
    print("%s: %d links over %d stacks written in %.0f s; %d bytes, %.1f bytes per link" %
          (backend, links, stacks, fill_s, size, size / links))
    for children in (False, True):
        p50, p99 = latencies(port, token,
                             span_paths(links, queries, t0, t0 + SPREAD_S + 300, children))
        print("%s: flamegraph?span_id=%s, %d random spans: p50 %.2f ms, p99 %.2f ms" %
              (backend, "&include_children=true" if children else "", queries, p50, p99))
    traces = max(1, queries // 4)  # each answers its 10 spans, with their families
    p50, p99 = latencies(port, token, trace_paths(links, traces))
    print("%s: traces/{id}/profile?include_children=true, %d random traces of %d spans: p50 %.2f"
          " ms, p99 %.2f ms" % (backend, traces, SPANS_PER_TRACE, p50, p99))


# ---------------------------------------------------------------------------------- SQLite ----

SQLITE_FILL = """
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < :links)
INSERT INTO span_links (time, environment, service, profile_type, trace_id, span_id, span_name,
  stack_id, value, samples, root_span_id, parent_span_id)
SELECT :t0 + i * :spread / :links, 'production', 'bench', 'cpu',
  printf('%016x%08x%08x', 0, ((i / 10 + 1) * :mix) % 4294967296, i / 10 + 1),
  printf('%08x%08x', (i * :mix) % 4294967296, i), 'GET /x',
  1 + (i * 7919) % :stacks, 10000000, 1, '',
  CASE WHEN i % 10 THEN printf('%08x%08x', ((i - i % 10) * :mix) % 4294967296, i - i % 10)
  ELSE '' END
FROM n
"""


def stack_functions(i):
    """Stack i's frames as function numbers (0..996): the first two tell i (unique for
    i < 997^2), the rest a pattern."""
    fns = [(i * 31 + x) % FUNCTIONS for x in range(20 + i % 21)]
    fns[1] = i // FUNCTIONS % FUNCTIONS
    return fns


def varints(values):
    out = bytearray()
    for v in values:
        while v >= 0x80:
            out.append(v & 0x7F | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


def fill_sqlite_stacks(db, stacks):
    """Stacks 1..stacks in the file's layout: function ids (function number + 1) or text."""
    columns = [r[1] for r in db.execute("PRAGMA table_info(link_stacks)")]
    if "ids" in columns:
        db.executemany("INSERT INTO functions (id, name) VALUES (?, ?)",
                       [(f + 1, "bench.fn%d" % f) for f in range(FUNCTIONS)])
        db.executemany("INSERT INTO link_stacks (id, n_frames, ids) VALUES (?, ?, ?)",
                       [(i + 1, len(fns), varints(f + 1 for f in fns))
                        for i, fns in ((i, stack_functions(i)) for i in range(stacks))])
    else:
        db.executemany("INSERT INTO link_stacks (id, hash, n_frames, frames)"
                       " VALUES (?, ?, ?, ?)",
                       [(i + 1, os.urandom(32), len(fns), "\n".join("bench.fn%d" % f for f in fns))
                        for i, fns in ((i, stack_functions(i)) for i in range(stacks))])


def fill_sqlite(path, links, stacks, t0):
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=OFF")  # a bulk load into a throwaway file
    db.execute("PRAGMA synchronous=OFF")
    db.execute("PRAGMA cache_size=-262144")
    db.execute("BEGIN")
    fill_sqlite_stacks(db, stacks)
    db.execute(SQLITE_FILL, {"links": links, "t0": t0, "spread": SPREAD_S, "mix": MIX,
                             "stacks": stacks})
    db.commit()
    db.execute("PRAGMA journal_mode=WAL")
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    pages -= db.execute("PRAGMA freelist_count").fetchone()[0]
    size = pages * db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    return size


def bench_sqlite(binary, tmp, links, stacks, queries, t0):
    data = os.path.join(tmp, "sqlite")
    cli(binary, "init", "--data", data)
    token = cli(binary, "token", "create", "--data", data, "--environment", "production",
                "--kind", "user", "--role", "viewer")
    proc, _ = start_collector(binary, ["--data", data], os.path.join(tmp, "sqlite.log"))
    stop(proc)  # the link store's file and schema exist now
    started = time.monotonic()
    size = fill_sqlite(os.path.join(data, "roottrace-links.db"), links, stacks, t0)
    fill_s = time.monotonic() - started
    proc, port = start_collector(binary, ["--data", data, "--link-retention-hours", "1000"],
                                 os.path.join(tmp, "sqlite.log"))
    try:
        report("SQLite", links, stacks, fill_s, size, port, token, queries, t0)
    finally:
        stop(proc)


# ------------------------------------------------------------------------------ ClickHouse ----

def hex_digits(expr, digits):
    """ClickHouse SQL: expr (an unsigned integer) as `digits` lowercase hex digits."""
    h = "lower(hex(toUInt64(%s)))" % expr
    return "substring(concat('%s', %s), length(%s) + 1, %d)" % ("0" * digits, h, h, digits)


def id_sql(n):
    """ClickHouse SQL of span_hex / the last 16 digits of trace_hex, n its number."""
    return "concat(%s, %s)" % (hex_digits("((%s) * %d) %% 4294967296" % (n, MIX), 8),
                               hex_digits(n, 8))


def fill_clickhouse(ch, db, links, stacks, t0):
    frames = ("arrayStringConcat(arrayMap(x -> concat('bench.fn', toString((number * 31 + x)"
              " %% 997)), range(toUInt64(20 + number %% 21))), '\\n')")
    # today's stacks partition: every link below is dated earlier (ch_stacks.c's invariant)
    ch.query("INSERT INTO %s.stacks SELECT number + 2, %s, toUInt32(intDiv(toUInt32(now()),"
             " 86400)) FROM numbers(%d)" % (db, frames % (), stacks))
    for first in range(0, links, CH_CHUNK):  # one INSERT a million: each well within a minute
        ch.query(
            "INSERT INTO {db}.span_links SELECT 'production', toUInt32({t0} + intDiv(number *"
            " {spread}, {links})), 'bench', 'cpu', concat('0000000000000000', {trace}), {span},"
            " if(number % 10 = 0, '', {parent}), '', 'GET /x', '', 2 + (number * 7919) % {stacks},"
            " toInt64(10000000), toInt64(1) FROM (SELECT number + {first} AS number FROM"
            " numbers({n}))".format(
                db=db, t0=t0, spread=SPREAD_S, links=links, stacks=stacks, first=first,
                n=min(CH_CHUNK, links - first), trace=id_sql("intDiv(number, 10) + 1"),
                span=id_sql("number"), parent=id_sql("number - number % 10")))
    # Steady state: the bulk insert left a dozen parts a day, which background merges would
    # fold over the next minutes; reads right after it take about twice as long.
    for table in LINK_TABLES:
        ch.query("OPTIMIZE TABLE %s.%s FINAL" % (db, table))
    return int(ch.query(
        "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = '%s' AND active AND table"
        " IN ('%s')" % (db, "', '".join(LINK_TABLES))))


def bench_clickhouse(binary, tmp, links, stacks, queries, t0):
    import fleet_servers
    why = fleet_servers.available()
    if why:
        print("ClickHouse: not measured: %s" % why)
        return
    pg, ch_url = fleet_servers.fresh_databases()
    stores = ["--control-store", pg, "--profile-store", ch_url]
    cli(binary, "migrate", *stores)
    cli(binary, "init", *stores)
    token = cli(binary, "token", "create", "--control-store", pg, "--environment", "production",
                "--kind", "user", "--role", "viewer")
    ch, db = fleet_servers.servers().ch, ch_url.rsplit("/", 1)[1]
    started = time.monotonic()
    size = fill_clickhouse(ch, db, links, stacks, t0)
    fill_s = time.monotonic() - started
    proc, port = start_collector(binary, stores + ["--link-retention-hours", "1000"],
                                 os.path.join(tmp, "clickhouse.log"))
    try:
        report("ClickHouse", links, stacks, fill_s, size, port, token, queries, t0)
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--links", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--stacks", type=int, default=500)
    ap.add_argument("--backend", choices=("sqlite", "clickhouse", "both"), default="both")
    a = ap.parse_args()
    os.environ["ROOTTRACE_BUILD"] = os.path.abspath(a.build)
    binary = os.path.join(a.build, "roottrace-collector")
    if not os.access(binary, os.X_OK):
        sys.exit("bench-links: build %s first (make)" % binary)
    load = open("/proc/loadavg").read().split()[:3]
    t0 = int(time.time()) - SPREAD_S
    with tempfile.TemporaryDirectory(prefix="rt-bench-links-") as tmp:
        if a.backend in ("sqlite", "both"):
            bench_sqlite(binary, tmp, a.links, a.stacks, a.queries, t0)
        if a.backend in ("clickhouse", "both"):
            bench_clickhouse(binary, tmp, a.links, a.stacks, a.queries, t0)
    print("%d cores; load average before: %s, after: %s" %
          (os.cpu_count(), " ".join(load), " ".join(open("/proc/loadavg").read().split()[:3])))


if __name__ == "__main__":
    main()
