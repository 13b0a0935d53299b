#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Fleet-mode ingest benchmark: uploads/s, collector and database-server CPU ms/upload and
# uploads per store commit of one collector on SQLite (--sync full), one collector on
# PostgreSQL + ClickHouse (also with the settings before issue 13's batching work: 4 threads,
# no linger; and with two INSERTs in flight) and two collectors sharing the servers, with 4
# and 16 keep-alive clients POSTing a 500-stack gzipped CPU pprof (tests/helpers/ingest-load,
# acknowledgements after the store committed); then bytes on disk per (bucket, stack) value in
# each store for the same uploads spread over many buckets. Servers: tests/lib/fleet_servers.py.
# --cluster SxR runs the fleet configuration on a ClickHouse cluster of S shards of R replicas
# instead (migrate --cluster; server CPU counts every ClickHouse node, ZooKeeper and
# PostgreSQL); --fleet-only runs only that configuration (one collector, 16 clients), so that
# one server and the cluster can be compared run after run.
#   bench/bench_fleet.py --build DIR [--seconds N] [--cluster 2x1] [--fleet-only]
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "lib"))

STACKS = 500


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def tree_ticks(pid):
    """CPU ticks of pid and its live descendants (a server and its worker processes)."""
    total = 0
    try:
        total = cpu_ticks(pid)
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                total += sum(tree_ticks(int(c)) for c in f.read().split())
    except OSError:
        pass  # exited meanwhile
    return total


def server_pids(fleet_servers):
    """The throwaway PostgreSQL postmaster and ClickHouse servers, and the ZooKeeper of a
    cluster (their process trees)."""
    s = fleet_servers.servers()
    with open(os.path.join(s.pg.data, "postmaster.pid")) as f:
        pids = [int(f.readline())] + [n.proc.pid for n in s.nodes]
    return pids + ([s.zk.proc.pid] if s.zk else [])


def commits(port):
    """(commits, uploads) of the collector's ingest group commit, from /metrics."""
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30).read()
    found = {}
    for line in text.decode().splitlines():
        m = re.match(r'roottrace_ingest_batch_uploads_(count|sum)\{[^}]*\} (\d+)', line)
        if m:
            found[m.group(1)] = int(m.group(2))
    return found.get("count", 0), found.get("sum", 0)


def start_collector(binary, args, log):
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0"] + args,
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    for _ in range(300):
        with open(log) as f:
            m = re.search(r"listening on [0-9.]+:(\d+)", f.read())
        if m:
            return proc, int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError("collector did not start: " + open(log).read())


def run_load(load, collectors, token, profile, clients, seconds, servers):
    """ingest-load against each (proc, port), clients split evenly; (uploads/s, collector CPU
    ms/upload, server CPU ms/upload or None, uploads per commit, failures)."""
    c0 = [commits(port) for _, port in collectors]
    s0 = sum(tree_ticks(pid) for pid in servers)
    t0 = [cpu_ticks(p.pid) for p, _ in collectors]
    loads = [subprocess.Popen([load, str(port), token, "service=bench&profile_type=cpu", profile,
                               str(clients // len(collectors)), str(seconds)],
                              stdout=subprocess.PIPE, text=True) for _, port in collectors]
    outs = [p.communicate()[0] for p in loads]
    t1 = [cpu_ticks(p.pid) for p, _ in collectors]
    s1 = sum(tree_ticks(pid) for pid in servers)
    c1 = [commits(port) for _, port in collectors]
    groups = sum(b[0] - a[0] for a, b in zip(c0, c1))
    per_commit = sum(b[1] - a[1] for a, b in zip(c0, c1)) / groups if groups else float("nan")
    uploads = sum(int(re.search(r"uploads=(\d+)", o).group(1)) for o in outs)
    ups = sum(float(re.search(r"uploads_per_s=([0-9.]+)", o).group(1)) for o in outs)
    failures = sum(int(re.search(r"failures=(\d+)", o).group(1)) for o in outs)
    ticks = sum(b - a for a, b in zip(t0, t1))
    hz = os.sysconf("SC_CLK_TCK")
    cpu_ms = ticks * 1000 / hz / uploads if uploads else float("nan")
    server_ms = (s1 - s0) * 1000 / hz / uploads if uploads and servers else None
    return ups, cpu_ms, server_ms, per_commit, failures


def setup_sqlite(binary, tmp):
    os.makedirs(tmp, exist_ok=True)
    data = os.path.join(tmp, "sqlite")
    subprocess.run([binary, "init", "--data", data], check=True, capture_output=True)
    token = subprocess.run([binary, "token", "create", "--data", data, "--environment",
                            "production", "--kind", "collector"], check=True,
                           capture_output=True, text=True).stdout.strip()
    return ["--data", data, "--sync", "full"], token, data


def setup_fleet(binary, fleet_servers, tmp):
    pg, ch = fleet_servers.fresh_databases()
    stores = ["--control-store", pg, "--profile-store", ch]
    subprocess.run([binary, "init"] + stores, check=True, capture_output=True)
    data = tempfile.mkdtemp(dir=tmp)  # span links stay under --data, in fleet mode too
    stores += ["--data", data]
    token = subprocess.run([binary, "token", "create", "--control-store", pg, "--environment",
                            "production", "--kind", "collector"], check=True,
                           capture_output=True, text=True).stdout.strip()
    return stores, token, ch.rsplit("/", 1)[1]


def throughput(args, binary, load, profile, tmp, fleet_servers):
    print("| store | collectors | clients | uploads/s | stack values/s | collector CPU ms/upload"
          " | server CPU ms/upload | uploads per commit | failed uploads |")
    print("|---|---|---|---|---|---|---|---|---|")
    sqlite = setup_sqlite(binary, tmp)[:2]
    fleet = setup_fleet(binary, fleet_servers, tmp)[:2]
    before = (fleet[0] + ["--threads", "4", "--ingest-in-flight", "1",
                          "--ingest-linger-ms", "0"], fleet[1])
    pipelined = (fleet[0] + ["--ingest-in-flight", "2"], fleet[1])
    shape = fleet_servers.cluster_shape()
    if args.fleet_only:
        name = "PostgreSQL + ClickHouse%s" % (
            " cluster (%d shards x %d replicas, through Distributed)" % shape if shape else "")
        configs = [(name, 1, fleet, server_pids(fleet_servers))]
        args.clients = [16]
    else:
        args.clients = [4, 16]
        configs = []
    configs = configs or [("SQLite (--sync full)", 1, sqlite, []),
               ("PostgreSQL + ClickHouse, before (--threads 4, one INSERT in flight, no linger)",
                1, before, server_pids(fleet_servers)),
               ("PostgreSQL + ClickHouse", 1, fleet, server_pids(fleet_servers)),
               ("PostgreSQL + ClickHouse, --ingest-in-flight 2", 1, pipelined,
                server_pids(fleet_servers)),
               ("PostgreSQL + ClickHouse", 2, fleet, server_pids(fleet_servers))]
    for name, n, (store_args, token), servers in configs:
        procs = [start_collector(binary, store_args, os.path.join(tmp, "log-%s-%d" % (n, i)))
                 for i in range(n)]
        try:
            for clients in args.clients:
                ups, cpu_ms, server_ms, per_commit, failures = run_load(
                    load, procs, token, profile, clients, args.seconds, servers)
                print("| %s | %d | %d | %.1f | %.0f | %.2f | %s | %.1f | %d |" % (
                    name, n, clients, ups, ups * STACKS, cpu_ms,
                    "%.2f" % server_ms if server_ms is not None else "– (in the collector)",
                    per_commit, failures))
        finally:
            for p, _ in procs:
                p.terminate()
                p.wait()


def spread_uploads(binary, store_args, token, tmp, buckets):
    """One upload of a fresh 500-stack profile into each of `buckets` five-minute buckets."""
    proc, port = start_collector(binary, store_args, os.path.join(tmp, "log-spread"))
    try:
        import urllib.request
        now = int(time.time()) // 300 * 300
        for b in range(buckets):
            path = os.path.join(tmp, "p%d.pb.gz" % b)
            subprocess.run([sys.executable, os.path.join(SRC, "bench", "gen-cpu-profile.py"),
                            path, "--stacks", str(STACKS), "--gzip", "--time",
                            str(now - (b + 1) * 300 + 7)], check=True, capture_output=True)
            req = urllib.request.Request(
                "http://127.0.0.1:%d/api/apm/profiles?service=spread&profile_type=cpu" % port,
                data=open(path, "rb").read(),
                headers={"Authorization": "Collector " + token,
                         "Content-Type": "application/octet-stream"})
            urllib.request.urlopen(req, timeout=60).read()
    finally:
        proc.terminate()
        proc.wait()


def bytes_per_value(args, binary, tmp, fleet_servers):
    buckets = args.buckets
    store_args, token, data = setup_sqlite(binary, tmp + "/bytes")
    spread_uploads(binary, store_args, token, tmp, buckets)
    sqlite_bytes = sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data)
                       if f.startswith("roottrace.db"))
    store_args, token, db = setup_fleet(binary, fleet_servers, tmp)
    spread_uploads(binary, store_args, token, tmp, buckets)
    ch = fleet_servers.servers().ch
    for table in ("rollups", "rollups_hour", "rollups_day", "uploads", "stacks"):
        ch.query("OPTIMIZE TABLE %s.%s FINAL" % (db, table))
    values = int(ch.query("SELECT count() FROM %s.rollups"
                          " WHERE stack_hash != toFixedString('', 16)" % db))
    parts = ch.query("SELECT table, sum(bytes_on_disk) FROM system.parts WHERE database = '%s'"
                     " AND active GROUP BY table FORMAT TSV" % db)
    by_table = {t: int(b) for t, b in (line.split("\t") for line in parts.splitlines())}
    total = sum(by_table.values())
    print()
    print("| store | (bucket, stack) values | bytes on disk | bytes per value |")
    print("|---|---|---|---|")
    print("| SQLite (all tables, WAL checkpointed at close) | %d | %d | %.1f |" % (
        values, sqlite_bytes, sqlite_bytes / values))
    print("| ClickHouse (all tables) | %d | %d | %.1f |" % (values, total, total / values))
    print("| ClickHouse rollups only (five-minute tier) | %d | %d | %.1f |" % (
        values, by_table.get("rollups", 0), by_table.get("rollups", 0) / values))
    print("\nClickHouse bytes by table: " + ", ".join(
        "%s %d" % kv for kv in sorted(by_table.items())))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--buckets", type=int, default=200)
    ap.add_argument("--cluster", default="", help="SxR: ClickHouse as S shards of R replicas")
    ap.add_argument("--fleet-only", action="store_true")
    args = ap.parse_args()
    if args.cluster:
        os.environ["ROOTTRACE_FLEET_CLUSTER"] = args.cluster
    build = os.path.abspath(args.build)
    os.environ["ROOTTRACE_BUILD"] = build
    import fleet_servers
    why = fleet_servers.available()
    if why:
        print("bench-fleet: skipped: " + why)
        return 0
    binary = os.path.join(build, "roottrace-collector")
    load = os.path.join(build, "tests", "helpers", "ingest-load")
    with tempfile.TemporaryDirectory() as tmp:
        profile = os.path.join(tmp, "cpu.pb.gz")
        subprocess.run([sys.executable, os.path.join(SRC, "bench", "gen-cpu-profile.py"),
                        profile, "--stacks", str(STACKS), "--gzip"], check=True,
                       capture_output=True)
        before = open("/proc/loadavg").read().split()[:3]
        throughput(args, binary, load, profile, tmp, fleet_servers)
        if not args.fleet_only:
            bytes_per_value(args, binary, tmp, fleet_servers)
        print("\n%d s per run; %d cores; load average before: %s, after: %s" % (
            args.seconds, os.cpu_count(), " ".join(before),
            " ".join(open("/proc/loadavg").read().split()[:3])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
