#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# What a group's INSERT costs a two-shard ClickHouse cluster (tests/lib/fleet_servers.py with
# ROOTTRACE_FLEET_CLUSTER=2x1, schema by migrate --cluster) written the two ways a collector
# could (docs/performance.md, "Fleet mode on a cluster"): through the Distributed `rollups`
# table, synchronously (what the collector does), or split by shard in the client and sent to
# each shard's `rollups_local` directly. Each INSERT carries UPLOADS 500-stack uploads of
# services spread over both shards; CPU is every ClickHouse node's process tree from the first
# INSERT until no merge runs, less their idle CPU over the same time (and ZooKeeper's); wall time
# per INSERT too.
#   bench/bench_ch_cluster_insert.py --build DIR [--inserts N] [--uploads N]
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
SERVICES = ["svc-%02d" % i for i in range(16)]
SETTINGS = "insert_distributed_sync=1&insert_deduplicate=0"


def put_string(out, s):
    b = s.encode()
    n = len(b)
    while True:  # LEB128 length
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            break
    out.extend(b)


def series_id(service):
    """A series id per service (schema v7's rollups name a series by a UInt64; the collector's
    ids are hashes of the strings, any spread of ids does here)."""
    return int.from_bytes(service.encode().ljust(8, b"_")[:8], "little") * 0x9E3779B97F4A7C15 \
        % (1 << 64)


def upload_rows(rnd, service, bucket, now):
    """One upload's rollups rows (RowBinary, schema v7's rollups columns)."""
    out = bytearray()
    series = struct.pack("<Q", series_id(service))
    for s in range(STACKS + 1):  # + the mark row counting the upload
        out += series
        out += struct.pack("<I", bucket)
        out += b"\0" * 16 if s == STACKS else rnd.getrandbits(128).to_bytes(16, "little")
        out += struct.pack("<qqI", 1 if s == STACKS else rnd.randrange(1, 10**7), 10**7, now)
    return bytes(out)


def post(port, sql, data=None):
    url = "http://127.0.0.1:%d/?%s&query=%s" % (port, SETTINGS, urllib.parse.quote(sql))
    return urllib.request.urlopen(urllib.request.Request(url, data=data or b""),
                                  timeout=300).read()


def cpu(nodes):
    """Every ClickHouse node's CPU and ZooKeeper's (each part is a ZooKeeper transaction)."""
    import fleet_servers
    pids = [n.proc.pid for n in nodes] + [fleet_servers.servers().zk.proc.pid]
    return sum(tree_ticks(p) for p in pids) / os.sysconf("SC_CLK_TCK")


def settle(nodes, db):
    """Waits until no merge runs on any node; seconds waited."""
    t0 = time.time()
    while time.time() - t0 < 120:
        busy = sum(int(n.query("SELECT count() FROM system.merges WHERE database = '%s'" % db))
                   for n in nodes)
        if not busy:
            break
        time.sleep(0.2)
    return time.time() - t0


def run(mode, nodes, db, groups, shard_of):
    idle0, t_idle = cpu(nodes), time.time()
    time.sleep(2)
    idle_rate = (cpu(nodes) - idle0) / (time.time() - t_idle)
    c0, t0 = cpu(nodes), time.time()
    for group in groups:
        if mode == "distributed":
            post(nodes[0].port, "INSERT INTO %s.rollups FORMAT RowBinary" % db,
                 b"".join(rows for _, rows in group))
        else:
            for shard, node in enumerate(nodes):
                part = b"".join(rows for service, rows in group if shard_of[service] == shard)
                if part:
                    post(node.port, "INSERT INTO %s.rollups_local FORMAT RowBinary" % db, part)
    insert_s = time.time() - t0
    settle(nodes, db)
    spent = cpu(nodes) - c0 - idle_rate * (time.time() - t0)
    return spent, insert_s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--inserts", type=int, default=40)
    ap.add_argument("--uploads", type=int, default=8, help="uploads per INSERT (a group)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_known_args()[0]  # bench-fleet.sh passes bench_fleet.py's options too
    os.environ["ROOTTRACE_BUILD"] = os.path.abspath(args.build)
    os.environ["ROOTTRACE_FLEET_CLUSTER"] = "2x1"
    import fleet_servers
    why = fleet_servers.available()
    if why:
        print("bench-ch-cluster-insert: skipped: " + why)
        return 0
    nodes = fleet_servers.servers().nodes
    print("ClickHouse %s, 2 shards x 1 replica; %d INSERTs of %d uploads x %d stacks each"
          % (nodes[0].query("SELECT version()").strip(), args.inserts, args.uploads, STACKS))
    print("| write path | ClickHouse + ZooKeeper CPU ms per upload (merges included) |"
          " wall ms per INSERT |")
    print("|---|---|---|")
    rnd = random.Random(7)
    now = int(time.time())
    bucket = now - now % 300
    for mode in ["distributed", "direct"] * args.rounds:
        db = fleet_servers.fresh_databases()[1].rsplit("/", 1)[1]
        shard_of = {}
        for s in SERVICES:  # the Distributed table's own choice: series_id % 2 shards
            shard_of[s] = series_id(s) % 2
        groups = [[(s, upload_rows(rnd, s, bucket, now))
                   for s in rnd.sample(SERVICES, args.uploads)] for _ in range(args.inserts)]
        spent, insert_s = run(mode, nodes, db, groups, shard_of)
        uploads = args.inserts * args.uploads
        print("| %s | %.2f | %.1f |" % (
            "through Distributed (insert_distributed_sync=1)" if mode == "distributed"
            else "direct to each shard's rollups_local", spent * 1000 / uploads,
            insert_s * 1000 / args.inserts))
    print("load average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
