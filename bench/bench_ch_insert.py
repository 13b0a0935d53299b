#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# What one INSERT of N 500-stack uploads costs ClickHouse's CPU, by schema (docs/performance.md,
# "Where the CPU goes"): schema v4's rollups with its hour, day and upload-count views against
# cheaper shapes (v6's: the upload-count view only; v7's: a series id instead of the five
# series strings), down to the rollups table alone; 128-bit stack keys (FixedString(16)) as schema v4 and later store. A Python client
# POSTs RowBinary to the throwaway ClickHouse of tests/lib/fleet_servers.py and reads the server
# process's CPU from /proc from the first INSERT of a cell until no merge runs any more (the
# merges the INSERTs cause are part of their cost), less the server's idle CPU over the wait.
#   bench/bench_ch_insert.py [--inserts N] [--rounds N]
import argparse
import os
import random
import struct
import sys
import time
import urllib.parse
import urllib.request

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "lib"))
sys.path.insert(0, os.path.join(SRC, "bench"))

from bench_fleet import tree_ticks  # noqa: E402 (after the path)

STACKS = 500
SERIES = "environment String, service String, profile_type String, deployment String, node String"
KEY = "environment, service, profile_type, deployment, node"
NODELESS = "environment String, service String, profile_type String, deployment String"
NODELESS_KEY = "environment, service, profile_type, deployment"
BY_DAY = " PARTITION BY intDiv(bucket, 86400)"


class Server:
    def __init__(self, ch):
        self.port = ch.port
        self.pid = ch.proc.pid

    def query(self, sql, data=None):
        if data is None:
            req = urllib.request.Request("http://127.0.0.1:%d/" % self.port, data=sql.encode())
        else:
            req = urllib.request.Request("http://127.0.0.1:%d/?query=%s" % (
                self.port, urllib.parse.quote(sql)), data=data)
        return urllib.request.urlopen(req, timeout=120).read()

    def cpu_seconds(self):
        """CPU of the server's process tree (runuser's child when started as root)."""
        return tree_ticks(self.pid) / os.sysconf("SC_CLK_TCK")


def rollups(db, tier_column=False):
    tier = "tier UInt8, " if tier_column else ""
    return ("CREATE TABLE %s.rollups(%s, %sbucket UInt32, stack_hash FixedString(16), value Int64,"
            " period Int64, received_at UInt32) ENGINE = SummingMergeTree(value)%s"
            " ORDER BY (%s, %sbucket, stack_hash)" % (db, SERIES, tier, BY_DAY, KEY,
                                                       "tier, " if tier_column else ""))


def tier_views(db, columns, key, grouped):
    out = []
    for table, unit in (("rollups_hour", 3600), ("rollups_day", 86400)):
        out.append("CREATE TABLE %s.%s(%s, bucket UInt32, stack_hash FixedString(16), value Int64)"
                   " ENGINE = SummingMergeTree(value)%s ORDER BY (%s, bucket, stack_hash)"
                   % (db, table, columns, BY_DAY, key))
        value = "sum(value) AS value" if grouped else "value"
        group = " GROUP BY %s, bucket, stack_hash" % key if grouped else ""
        out.append("CREATE MATERIALIZED VIEW %s.%s_mv TO %s.%s AS SELECT %s,"
                   " toUInt32(intDiv(bucket, %d) * %d) AS bucket, stack_hash, %s"
                   " FROM %s.rollups WHERE stack_hash != toFixedString('', 16)%s"
                   % (db, table, db, table, key, unit, unit, value, db, group))
    return out


def upload_view(db, extra=""):
    return ["CREATE TABLE %s.uploads(%s, bucket UInt32, uploads AggregateFunction(sum, Int64),"
            " last_upload AggregateFunction(max, UInt32),"
            " period AggregateFunction(argMax, Int64, UInt32)) ENGINE = AggregatingMergeTree%s"
            " ORDER BY (%s, bucket)" % (db, SERIES, BY_DAY, KEY),
            "CREATE MATERIALIZED VIEW %s.uploads_mv TO %s.uploads AS SELECT %s, bucket,"
            " sumState(value) AS uploads, maxState(received_at) AS last_upload,"
            " argMaxState(period, received_at) AS period FROM %s.rollups"
            " WHERE stack_hash = toFixedString('', 16)%s GROUP BY %s, bucket" % (db, db, KEY, db, extra, KEY)]


def one_tier_view(db):
    """Both tiers in one table, fed by one view that emits each row twice (ARRAY JOIN)."""
    return [rollups(db),
            "CREATE TABLE %s.rollups_tiers(%s, tier UInt8, bucket UInt32, stack_hash FixedString(16),"
            " value Int64) ENGINE = SummingMergeTree(value)%s"
            " ORDER BY (%s, tier, bucket, stack_hash)" % (db, SERIES, BY_DAY, KEY),
            "CREATE MATERIALIZED VIEW %s.tiers_mv TO %s.rollups_tiers AS SELECT %s, tier,"
            " toUInt32(intDiv(bucket, unit) * unit) AS bucket, stack_hash, value FROM %s.rollups"
            " ARRAY JOIN [1, 2] AS tier, [3600, 86400] AS unit WHERE stack_hash != toFixedString('', 16)"
            % (db, db, KEY, db)] + upload_view(db)


# name, statements, whether the collector writes the tier rows itself (tier column)
SCHEMAS = [
    ("schema v4 (rollups + hour, day and upload-count views)",
     lambda db: [rollups(db)] + tier_views(db, SERIES, KEY, False) + upload_view(db), False),
    ("one tier table fed by one view (ARRAY JOIN)", one_tier_view, False),
    ("tiers without the node column, the views grouping the block",
     lambda db: [rollups(db)] + tier_views(db, NODELESS, NODELESS_KEY, True) + upload_view(db),
     False),
    ("the views summing a block's rows (GROUP BY in the view)",
     lambda db: [rollups(db)] + tier_views(db, SERIES, KEY, True) + upload_view(db), False),
    ("one table with a tier column, tier rows written by the collector (3x the rows)",
     lambda db: [rollups(db, True)] + upload_view(db, " AND tier = 0"), True),
    ("schema v6: rollups + the upload-count view (tiers built after ingest)",
     lambda db: [rollups(db)] + upload_view(db), False),
    ("rollups alone, no view", lambda db: [rollups(db)], False),
    ("schema v7, today's: a series id (UInt64) instead of the five series strings, + the"
     " upload-count view",
     lambda db: [s.replace(SERIES, "series UInt64").replace(KEY, "series")
                 for s in [rollups(db)] + upload_view(db)], "series_id"),
]


def string(s):
    b = s.encode()
    return bytes([len(b)]) + b


def block(rnd, stacks, uploads, bucket, tiered):
    """RowBinary of `uploads` uploads from different nodes of 4 services, one bucket."""
    out = bytearray()
    tiers = [(0, bucket), (1, bucket // 3600 * 3600), (2, bucket // 86400 * 86400)]
    series_id, tiered = tiered == "series_id", tiered is True
    for u in range(uploads):
        head = b"".join(string(x) for x in ("production", "svc-%d" % (u % 4), "cpu", "v1",
                                            "node-%d" % u))
        if series_id:
            head = struct.pack("<Q", hash(head) & (2**64 - 1))
        for tier, b in (tiers if tiered else [(None, bucket)]):
            t = bytes([tier]) if tiered else b""
            out += head + t + struct.pack("<I16sqqI", b, bytes(16), 1, 10_000_000,
                                          int(time.time()))
            for h in stacks:
                out += head + t + struct.pack("<I16sqqI", b, h, rnd.randint(1, 100), 0, 0)
    return bytes(out)


def settle(server):
    """Waits until the server runs no merge (what earlier work left behind)."""
    for _ in range(300):
        if server.query("SELECT count() FROM system.merges").strip() == b"0":
            return
        time.sleep(0.1)


def measure(server, db, uploads, tiered, inserts):
    """Server CPU per INSERT, the merges they cause included: from the first INSERT until no
    merge runs any more."""
    rnd = random.Random(1)
    stacks = [(rnd.getrandbits(127) | 1).to_bytes(16, "little") for _ in range(STACKS)]
    first = int(time.time()) // 86400 * 86400 - 3 * 86400
    blocks = [block(rnd, stacks, uploads, first + 300 * i, tiered) for i in range(inserts)]
    settle(server)
    c0 = server.cpu_seconds()
    for data in blocks:
        server.query("INSERT INTO %s.rollups FORMAT RowBinary" % db, data)
    time.sleep(1)
    settle(server)
    return (server.cpu_seconds() - c0 - idle_cpu(server, 1)) * 1000 / inserts


def idle_cpu(server, seconds):
    """The server's own CPU over `seconds` doing nothing (subtracted from each cell's wait)."""
    c0 = server.cpu_seconds()
    time.sleep(seconds)
    return server.cpu_seconds() - c0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inserts", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    import fleet_servers
    if fleet_servers.available():
        print("skipped: %s" % fleet_servers.available())
        return
    server = Server(fleet_servers.servers().ch)
    counter = 0
    print("| schema | round | CPU ms per INSERT with its merges, 8 uploads (4,000 rows)"
          " | 16 uploads (8,000 rows) |")
    print("|---|---|---|---|")
    for rnd in range(1, args.rounds + 1):
        for name, statements, tiered in SCHEMAS:
            cells = []
            for uploads in (8, 16):
                counter += 1
                db = "ins%d" % counter
                server.query("CREATE DATABASE %s" % db)
                for sql in statements(db):
                    server.query(sql)
                cells.append("%.1f" % measure(server, db, uploads, tiered, args.inserts))
                server.query("DROP DATABASE %s" % db)
            print("| %s | %d | %s | %s |" % (name, rnd, cells[0], cells[1]))
    print("\nload average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
