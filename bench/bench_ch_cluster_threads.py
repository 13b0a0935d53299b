#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Where a ClickHouse cluster's CPU per upload goes (docs/performance.md, "Fleet mode on a
# cluster"): bench_fleet.py's load (16 clients, 500-stack uploads) on one collector over the
# cluster of tests/lib/fleet_servers.py, with each server's CPU per upload split by thread name
# (/proc/PID/task/*/stat: ClickHouse's HTTPHandler, TCPHandler, BackgrProcPool, ZooKeeper
# client threads; ZooKeeper's SyncThread, NIO workers, JIT compilers) and each ClickHouse
# node's system.events over the load per INSERT (ZooKeeper requests by kind, merges).
#   bench/bench_ch_cluster_threads.py --build DIR [--cluster 2x1] [--seconds N] [--rounds N]
#                                     [--collector BINARY]
import argparse
import collections
import os
import re
import subprocess
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "lib"))
sys.path.insert(0, os.path.join(SRC, "bench"))

import bench_fleet as bf  # noqa: E402 (after the path)

EVENTS = ("InsertQuery", "ZooKeeperTransactions", "ZooKeeperMulti", "ZooKeeperCreate",
          "ZooKeeperRemove", "ZooKeeperGet", "ZooKeeperList", "ZooKeeperExists",
          "ReplicatedPartMerges", "MergeTreeDataWriterBlocks", "InsertedRows")


def thread_ticks(pid):
    """CPU ticks of pid's threads and its children's, by thread name (digits folded)."""
    out = collections.Counter()

    def walk(p):
        try:
            for t in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/stat" % (p, t)) as f:
                    st = f.read()
                fields = st.rsplit(")", 1)[1].split()
                name = re.sub(r"\d+", "#", st[st.index("(") + 1:st.rindex(")")])
                out[name] += int(fields[11]) + int(fields[12])
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    for c in f.read().split():
                        walk(int(c))
        except OSError:
            pass  # exited meanwhile
    walk(pid)
    return out


def events(node):
    rows = node.query("SELECT event, value FROM system.events FORMAT TSV").splitlines()
    return {k: int(v) for k, v in (r.split("\t") for r in rows)}


def one_round(args, fleet_servers, binary, load, profile, tmp):
    store_args, token, _ = bf.setup_fleet(binary, fleet_servers, tmp)
    pids, names = bf.server_pids(fleet_servers), bf.pid_names(fleet_servers)
    nodes = fleet_servers.servers().nodes
    proc, port = bf.start_collector(binary, store_args + ["--tier-build-interval-ms", "0"]
                                    + bf.tier_args(fleet_servers),
                                    os.path.join(tmp, "log"))
    try:
        bf.settle(nodes[0], fleet_servers=fleet_servers)
        th0, ev0 = [thread_ticks(p) for p in pids], [events(n) for n in nodes]
        c0 = bf.proc_cpu(proc.pid)
        uploads, ups, _ = bf.run_load(load, port, token, profile, args.clients, args.seconds)
        th1, ev1 = [thread_ticks(p) for p in pids], [events(n) for n in nodes]
        collector = bf.proc_cpu(proc.pid) - c0
        groups = bf.commits(port)[0]
    finally:
        proc.terminate()
        proc.wait()
    tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK")
    print("%d uploads, %.1f/s, %.1f per INSERT; collector %.2f ms/upload (during the load,"
          " merges after it not counted)" % (uploads, ups, uploads / max(1, groups),
                                             collector * 1000 / uploads))
    for name, a, b in zip(names, th0, th1):
        d = b - a
        print("- %s %.2f ms/upload: %s" % (name, sum(d.values()) * tick_ms / uploads, ", ".join(
            "%s %.2f" % (k, v * tick_ms / uploads) for k, v in d.most_common(7) if v)))
    for node, a, b in zip(nodes, ev0, ev1):
        print("- %s per group INSERT: %s" % (os.path.basename(node.dir), ", ".join(
            "%s %.1f" % (e, (b.get(e, 0) - a.get(e, 0)) / max(1, groups)) for e in EVENTS)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--cluster", default="2x1")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--collector", default="", help="another build's roottrace-collector")
    args = ap.parse_args()
    os.environ["ROOTTRACE_FLEET_CLUSTER"] = args.cluster
    build = os.path.abspath(args.build)
    os.environ["ROOTTRACE_BUILD"] = build
    import fleet_servers
    why = fleet_servers.available()
    if why:
        print("bench-ch-cluster-threads: skipped: " + why)
        return 0
    binary = args.collector or os.path.join(build, "roottrace-collector")
    load = os.path.join(build, "tests", "helpers", "ingest-load")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        profile = os.path.join(tmp, "cpu.pb.gz")
        at = int(time.time()) // 86400 * 86400 - 86400 + 36000 + 7
        subprocess.run([sys.executable, os.path.join(SRC, "bench", "gen-cpu-profile.py"),
                        profile, "--stacks", str(bf.STACKS), "--gzip", "--time", str(at)],
                       check=True, capture_output=True)
        for rnd in range(args.rounds):
            print("round %d (ZooKeeper's JVM is fresh in round 1):" % (rnd + 1))
            one_round(args, fleet_servers, binary, load, profile, os.path.join(tmp, str(rnd)))
    print("load average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
