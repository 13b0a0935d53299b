#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Fleet-mode ingest benchmark (issue 30): the CPU per upload of everything an upload causes,
# for one collector on SQLite (--sync full) and one collector on PostgreSQL + one ClickHouse
# server (the collector, both servers with ClickHouse's merges, and the build of the hour and
# day tiers of the period the uploads went into), with 16 keep-alive clients POSTing a
# 500-stack gzipped CPU pprof as 16 nodes x 4 services with unique upload ids
# (tests/helpers/ingest-load, acknowledgements after the store committed), the configurations
# alternating over --rounds rounds, medians; each store also with its files on tmpfs, which
# takes away the cost of creating and deleting files on this machine's root file system
# (ClickHouse creates ~25 files a part, two parts an INSERT, more as it merges: most of its
# CPU on the ext4 root here, docs/performance.md); uploads/s; then bytes on disk per (bucket, stack)
# value in each store for the same uploads spread over many buckets. Servers:
# tests/lib/fleet_servers.py.
# --cluster 2x1: the ClickHouse configurations on a two-shard cluster (docs/performance.md,
# "Fleet mode on a cluster"), after one unmeasured warm-up run (its ZooKeeper JVM's JIT); each
# fleet round also prints each server's share (PostgreSQL, each ClickHouse node, ZooKeeper).
# --before BINARY: another build's collector (main's, before a change) measured on the fleet
# configurations right after this build's, alternating.
#   bench/bench_fleet.py --build DIR [--seconds N] [--rounds N] [--buckets N] [--cluster SxR]
#                        [--before BINARY]
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "lib"))

STACKS = 500


def cpu_ticks(pid, reaped=False):
    """utime + stime of pid; reaped: and of its children that exited and were waited for."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15 if reaped else 13])


def tree_ticks(pid):
    """CPU ticks of pid and its descendants, live or exited (a server and its worker
    processes: PostgreSQL's backends exit with their connections, and their CPU moves to the
    postmaster's reaped children's)."""
    total = 0
    try:
        total = cpu_ticks(pid, reaped=True)
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                total += sum(tree_ticks(int(c)) for c in f.read().split())
    except OSError:
        pass  # exited meanwhile
    return total


def server_pids(fleet_servers):
    """The throwaway PostgreSQL postmaster and ClickHouse servers, and the ZooKeeper of a
    cluster (--cluster; their process trees)."""
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


def uploads_per_commit(port):
    count, total = commits(port)
    return total / count if count else float("nan")


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


def setup_sqlite(binary, tmp):
    os.makedirs(tmp, exist_ok=True)
    data = os.path.join(tmp, "sqlite")
    subprocess.run([binary, "init", "--data", data], check=True, capture_output=True)
    token = subprocess.run([binary, "token", "create", "--data", data, "--environment",
                            "production", "--kind", "collector"], check=True,
                           capture_output=True, text=True).stdout.strip()
    return ["--data", data, "--sync", "full"], token, data


def setup_fleet(binary, fleet_servers, tmp, ch_server=None):
    """Fresh databases (ClickHouse's on ch_server when given), migrated and initialised."""
    pg, ch = fleet_servers.fresh_databases()
    if ch_server is not None:
        ch = ch_server.url(ch.rsplit("/", 1)[1])
    os.makedirs(tmp, exist_ok=True)
    stores = ["--control-store", pg, "--profile-store", ch]
    subprocess.run([binary, "init"] + stores, check=True, capture_output=True)
    data = tempfile.mkdtemp(dir=tmp)  # span links stay under --data, in fleet mode too
    stores += ["--data", data]
    token = subprocess.run([binary, "token", "create", "--control-store", pg, "--environment",
                            "production", "--kind", "collector"], check=True,
                           capture_output=True, text=True).stdout.strip()
    return stores, token, ch.rsplit("/", 1)[1]


QUERY = ("service=svc{turn4}&profile_type=cpu&node=node{client}"
         "&upload_id=node{client}-{seq}")  # 16 clients: 16 nodes x 4 services, ids unique


def server_cpu(pids):
    return sum(tree_ticks(pid) for pid in pids) / os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    return cpu_ticks(pid) / os.sysconf("SC_CLK_TCK")


def idle_rate(pids, seconds=2.0):
    """The servers' own CPU per second doing nothing (subtracted from the waits below), of
    each of pids."""
    c0 = [server_cpu([p]) for p in pids]
    time.sleep(seconds)
    return [(server_cpu([p]) - c) / seconds for p, c in zip(pids, c0)]


def pid_names(fleet_servers):
    """Names of server_pids()' processes, in their order."""
    nodes = fleet_servers.servers().nodes
    names = ["PostgreSQL"] + (["ClickHouse %s" % os.path.basename(n.dir) for n in nodes]
                              if len(nodes) > 1 else ["ClickHouse"])
    return names + (["ZooKeeper"] if fleet_servers.servers().zk else [])


def settle(ch, timeout=120, fleet_servers=None):
    """Waits until ClickHouse runs no merge (the merges an INSERT causes are its cost): on ch,
    and on every node of a cluster when fleet_servers is given."""
    nodes = [ch]
    if fleet_servers is not None and fleet_servers.cluster_shape():
        nodes = fleet_servers.servers().nodes
    deadline = time.time() + timeout
    time.sleep(0.5)
    while time.time() < deadline and any(
            n.query("SELECT count() FROM system.merges").strip() != "0" for n in nodes):
        time.sleep(0.2)


def tier_args(fleet_servers):
    """On a cluster, where `tiers build` reaches each shard (their HTTP ports differ here)."""
    if not fleet_servers.cluster_shape():
        return []
    return ["--clickhouse-servers", fleet_servers.http_servers()]


def run_load(load, port, token, profile, clients, seconds):
    """clients keep-alive clients for `seconds`: (uploads, uploads/s, failures)."""
    out = subprocess.run([load, str(port), token, QUERY, profile, str(clients), str(seconds)],
                         capture_output=True, text=True, check=True).stdout
    return (int(re.search(r"uploads=(\d+)", out).group(1)),
            float(re.search(r"uploads_per_s=([0-9.]+)", out).group(1)),
            int(re.search(r"failures=(\d+)", out).group(1)))


def measure_sqlite_tmpfs(binary, load, profile, tmp, args, fleet_servers):
    shm = tempfile.mkdtemp(prefix="rt-bench-sqlite-", dir="/dev/shm")
    try:
        return measure_sqlite(binary, load, profile, shm, args, fleet_servers)
    finally:
        import shutil
        shutil.rmtree(shm, ignore_errors=True)


def measure_sqlite(binary, load, profile, tmp, args, _fleet_servers):
    """One collector on SQLite: its CPU over the load and a second after it (what the commits
    leave, a WAL checkpoint)."""
    store_args, token, _ = setup_sqlite(binary, tmp)
    proc, port = start_collector(binary, store_args, os.path.join(tmp, "log-sqlite"))
    try:
        c0 = proc_cpu(proc.pid)
        uploads, ups, failures = run_load(load, port, token, profile, args.clients, args.seconds)
        time.sleep(1)
        collector = proc_cpu(proc.pid) - c0
        per_commit = uploads_per_commit(port)
    finally:
        proc.terminate()
        proc.wait()
    return {"uploads": uploads, "ups": ups, "failures": failures, "collector": collector,
            "servers": 0.0, "build": 0.0, "pg": 0.0, "per_commit": per_commit}


_tmpfs_ch = None


def tmpfs_clickhouse(fleet_servers):
    """A second throwaway ClickHouse whose data is on tmpfs (/dev/shm): the same server without
    the cost of creating and deleting its part files on this machine's root file system."""
    global _tmpfs_ch
    if _tmpfs_ch is None:
        import atexit
        import shutil
        root = tempfile.mkdtemp(prefix="rt-bench-ch-", dir="/dev/shm")
        os.chmod(root, 0o755)
        _tmpfs_ch = fleet_servers._ClickHouse(root)
        atexit.register(lambda: (_tmpfs_ch.stop(), shutil.rmtree(root, ignore_errors=True)))
    return _tmpfs_ch


def measure_fleet_tmpfs(binary, load, profile, tmp, args, fleet_servers):
    return measure_fleet(binary, load, profile, tmp, args, fleet_servers,
                         tmpfs_clickhouse(fleet_servers))


def measure_fleet(binary, load, profile, tmp, args, fleet_servers, ch=None):
    """One collector on one PostgreSQL + one ClickHouse: the collector and both servers during
    the load, the servers until ClickHouse's merges are done (their idle CPU over that wait
    taken off), then `tiers build` of the period the uploads went into."""
    store_args, token, db = setup_fleet(binary, fleet_servers, tmp, ch)
    pids = server_pids(fleet_servers)
    if ch is None:
        ch = fleet_servers.servers().ch
    else:
        pids[1] = ch.proc.pid
    # On a cluster the collector is told its servers (their HTTP ports differ here), as an
    # operator does (operations.md): it writes each shard's rows to them (ch_route.c).
    proc, port = start_collector(binary, store_args + ["--tier-build-interval-ms", "0"]
                                 + tier_args(fleet_servers) + getattr(args, "fleet_args", []),
                                 os.path.join(tmp, "log-fleet"))
    try:
        settle(ch, fleet_servers=fleet_servers)
        idle = idle_rate(pids)
        c0, t0 = proc_cpu(proc.pid), time.time()
        each0 = [server_cpu([p]) for p in pids]
        uploads, ups, failures = run_load(load, port, token, profile, args.clients, args.seconds)
        pg = server_cpu(pids[:1]) - each0[0]
        per_commit = uploads_per_commit(port)
        settle(ch, fleet_servers=fleet_servers)
        collector = proc_cpu(proc.pid) - c0
        wait = max(0.0, time.time() - t0 - args.seconds)
        each = [server_cpu([p]) - e0 - i * wait for p, e0, i in zip(pids, each0, idle)]
        servers = sum(each)
    finally:
        proc.terminate()
        proc.wait()
    # The build: the CLI's CPU and the servers' while it runs (a second or less, so their idle
    # CPU is not taken off; the few parts it writes merge later, not counted).
    s0 = server_cpu(pids)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([binary, "tiers", "build", "--delay-s", "0", "--days", "3"]
                         + store_args[:4] + tier_args(fleet_servers), capture_output=True,
                         text=True, check=True).stdout
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    build = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime + server_cpu(pids) - s0)
    settle(ch, fleet_servers=fleet_servers)
    if "days built: 1" not in out:
        raise RuntimeError("tiers build: " + out)
    return {"uploads": uploads, "ups": ups, "failures": failures, "collector": collector,
            "servers": servers, "build": build, "pg": pg, "per_commit": per_commit,
            "each": dict(zip(pid_names(fleet_servers), each))}


# name, measure(binary, load, profile, tmp, args, fleet_servers) -> dict of CPU seconds; more
# configurations (a ClickHouse cluster) add a row here.
CONFIGS = [("SQLite (--sync full)", measure_sqlite),
           ("PostgreSQL + one ClickHouse server", measure_fleet),
           ("SQLite (--sync full), its file on tmpfs", measure_sqlite_tmpfs),
           ("PostgreSQL + one ClickHouse server, its data on tmpfs", measure_fleet_tmpfs)]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def with_before(configs, before):
    """configs and, when before (another build's roottrace-collector, e.g. main's) is given,
    its fleet configurations, each right after ours: before and after alternate."""
    if not before:
        return configs
    out = []
    for name, measure in configs:
        out.append((name, measure))
        if name.startswith("PostgreSQL"):
            out.append((name + ", before (--before)",
                        lambda _binary, *rest, m=measure: m(before, *rest)))
    return out


def warm_up(args, binary, load, profile, tmp, fleet_servers):
    """One unmeasured fleet run on a cluster first: its ZooKeeper is a JVM started with the
    servers, whose JIT compilers spend about 2 ms per upload of CPU in its first 10 s of load
    and little after (docs/performance.md); a fleet's ZooKeeper has long been warm."""
    r = measure_fleet(binary, load, profile, os.path.join(tmp, "warm-up"), args, fleet_servers)
    print("(warm-up run, not counted: %d uploads, ZooKeeper %.2f ms/upload)\n" % (
        r["uploads"], r["each"].get("ZooKeeper", 0.0) * 1000 / max(1, r["uploads"])),
        flush=True)


def cpu_per_upload(args, binary, load, profile, tmp, fleet_servers):
    """The configurations in turn, `rounds` times (alternating, so that the machine's load
    falls on each alike); the medians and each one against SQLite on the same file system."""
    configs = with_before(CONFIGS, args.before)
    if fleet_servers.cluster_shape():
        warm_up(args, binary, load, profile, tmp, fleet_servers)
    print("| round | store | uploads | uploads/s | uploads per commit | collector ms/upload"
          " | servers ms/upload (with merges; of it PostgreSQL) | tier build ms/upload"
          " | total CPU ms/upload | failed | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    results = {name: [] for name, _ in configs}
    for rnd in range(1, args.rounds + 1):
        for i, (name, measure) in enumerate(configs):
            r = measure(binary, load, profile, os.path.join(tmp, "r%d-%d" % (rnd, i)), args,
                        fleet_servers)
            n = r["uploads"]
            r["total"] = (r["collector"] + r["servers"] + r["build"]) * 1000 / n
            results[name].append(r)
            print("| %d | %s | %d | %.1f | %.1f | %.2f | %.2f (%.2f) | %.2f | **%.2f** | %d | %s |"
                  % (rnd, name, n, r["ups"], r["per_commit"], r["collector"] * 1000 / n,
                     r["servers"] * 1000 / n, r["pg"] * 1000 / n, r["build"] * 1000 / n,
                     r["total"], r["failures"],
                open("/proc/loadavg").read().split()[0]), flush=True)
            if r.get("each"):
                print("|   | of the servers, ms/upload: %s |" % ", ".join(
                    "%s %.2f" % (k, v * 1000 / n) for k, v in r["each"].items()), flush=True)
    print()
    print("| store | uploads/s | collector | servers (with merges) | tier build"
          " | total CPU ms/upload | against SQLite on the same file system |")
    print("|---|---|---|---|---|---|---|")
    for name, _ in configs:
        rs = results[name]
        med = median([r["total"] for r in rs])
        # against the SQLite row on the same file system
        base = median([r["total"] for r in results[CONFIGS[2 if "tmpfs" in name else 0][0]]])
        print("| %s | %.1f | %.2f | %.2f | %.2f | **%.2f** | %.2fx |" % (
            name, median([r["ups"] for r in rs]),
            median([r["collector"] * 1000 / r["uploads"] for r in rs]),
            median([r["servers"] * 1000 / r["uploads"] for r in rs]),
            median([r["build"] * 1000 / r["uploads"] for r in rs]), med, med / base))
    print("(medians of %d rounds)" % args.rounds)

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
    subprocess.run([binary, "tiers", "build", "--delay-s", "0", "--days", "3"] + store_args[:4]
                   + tier_args(fleet_servers), check=True, capture_output=True)
    # On a cluster: each node's shard tables (_local), summed over the nodes.
    local = "_local" if fleet_servers.cluster_shape() else ""
    nodes = fleet_servers.servers().nodes
    unmerged = []
    for node in nodes:
        for table in ("rollups", "rollups_hour", "rollups_day", "uploads", "stacks"):
            try:
                node.query("OPTIMIZE TABLE %s.%s%s FINAL" % (db, table, local))
            except OSError as e:  # 18.16 on a Replicated table: "Unknown log entry type: 0"
                unmerged.append("%s%s (%s)" % (table, local, getattr(e, "read", bytes)()
                                               .decode(errors="replace").strip()[:80]))
    values = int(ch.query("SELECT count() FROM %s.rollups"
                          " WHERE stack_hash != toFixedString('', 16)" % db))
    by_table = {}
    for node in nodes:
        parts = node.query("SELECT table, sum(bytes_on_disk) FROM system.parts WHERE"
                           " database = '%s' AND active GROUP BY table FORMAT TSV" % db)
        for t, b in (line.split("\t") for line in parts.splitlines()):
            t = t[:-len(local)] if local and t.endswith(local) else t
            by_table[t] = by_table.get(t, 0) + int(b)
    total = sum(by_table.values())
    print()
    print("| store | (bucket, stack) values | bytes on disk | bytes per value |")
    print("|---|---|---|---|")
    print("| SQLite (all tables, WAL checkpointed at close) | %d | %d | %.1f |" % (
        values, sqlite_bytes, sqlite_bytes / values))
    print("| ClickHouse (all tables) | %d | %d | %.1f |" % (values, total, total / values))
    print("| ClickHouse rollups only (five-minute tier) | %d | %d | %.1f |" % (
        values, by_table.get("rollups", 0), by_table.get("rollups", 0) / values))
    if unmerged:
        print("\nOPTIMIZE FINAL refused, as merged as ClickHouse left them: "
              + "; ".join(sorted(set(unmerged))))
    print("\nClickHouse bytes by table: " + ", ".join(
        "%s %d" % kv for kv in sorted(by_table.items())))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--buckets", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--before", default="",
                    help="another build's roottrace-collector (e.g. main's): its fleet"
                    " configurations alternate with this build's")
    ap.add_argument("--cluster", default="",
                    help="SxR: ClickHouse as a cluster of S shards of R replicas (migrate"
                    " --cluster, tests/lib/fleet_servers.py)")
    args = ap.parse_args()
    if args.cluster:
        os.environ["ROOTTRACE_FLEET_CLUSTER"] = args.cluster
        # The tmpfs ClickHouse is one server beside the cluster: its rows compare nothing.
        CONFIGS[:] = [("SQLite (--sync full)", measure_sqlite),
                      ("PostgreSQL + ClickHouse cluster %s (shards x replicas)" % args.cluster,
                       measure_fleet)]
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
        # Dated yesterday 10:00: its hour and day are closed, so their tiers can be built.
        at = int(time.time()) // 86400 * 86400 - 86400 + 36000 + 7
        subprocess.run([sys.executable, os.path.join(SRC, "bench", "gen-cpu-profile.py"),
                        profile, "--stacks", str(STACKS), "--gzip", "--time", str(at)],
                       check=True, capture_output=True)
        before = open("/proc/loadavg").read().split()[:3]
        cpu_per_upload(args, binary, load, profile, tmp, fleet_servers)
        bytes_per_value(args, binary, tmp, fleet_servers)
        print("\n%d s per run; %d cores; load average before: %s, after: %s" % (
            args.seconds, os.cpu_count(), " ".join(before),
            " ".join(open("/proc/loadavg").read().split()[:3])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
