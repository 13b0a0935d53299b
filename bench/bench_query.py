# SPDX-License-Identifier: Apache-2.0
# Query latency over 30 days of 5-minute buckets for one service (8,640 buckets, ~2,000
# distinct stacks, a few hundred per bucket), loaded through the real ingest with backdated
# time_nanos, on SQLite and on PostgreSQL + ClickHouse (fleet mode, when both servers are
# installed); then `go tool pprof -top` merging the same data as one pprof per bucket.
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import pprof_py
from collector_fixture import Collector

BUCKET = 300
DAYS = int(os.environ.get("BENCH_DAYS", "30"))
N_BUCKETS = DAYS * 86400 // BUCKET
N_STACKS = 2000
PER_BUCKET = 300
PERIOD = 10000000  # 100 Hz
SEC = 1000000000


def stack_universe(rnd):
    pkgs = ["svc/%s" % w for w in ("http", "db", "json", "cache", "auth", "render", "queue",
                                   "log", "grpc", "tls", "gzip", "sql", "runtime", "sync")]
    funcs = ["%s.%s%d" % (p, v, i) for p in pkgs for v in ("Handle", "Read", "Write", "Encode")
             for i in range(6)]
    stacks = set()
    while len(stacks) < N_STACKS:
        depth = rnd.randint(4, 14)
        frames = ["main", "svc/http.Serve"] + [rnd.choice(funcs[:40 + depth * 20])
                                              for _ in range(depth - 2)]
        stacks.add(tuple(frames))
    stacks = sorted(stacks)
    rnd.shuffle(stacks)
    weights = [1.0 / (i + 1) ** 0.8 for i in range(N_STACKS)]  # a few hot stacks
    return stacks, weights


def bucket_profile(rnd, stacks, weights, t):
    idx = rnd.sample(range(N_STACKS), PER_BUCKET)
    samples = [(stacks[i], max(1, int(weights[i] * 400 * rnd.random())) * PERIOD) for i in idx]
    return pprof_py.build_gz(samples, sample_types=(("cpu", "nanoseconds"),),
                             period_type=("cpu", "nanoseconds"), period=PERIOD,
                             time_nanos=t * SEC, duration_nanos=BUCKET * SEC)


def load(c, token, files_dir, now_bucket):
    rnd = random.Random(42)
    stacks, weights = stack_universe(rnd)
    first = now_bucket - (N_BUCKETS - 1) * BUCKET
    profiles = []
    t0 = time.time()
    for b in range(N_BUCKETS):
        pb = bucket_profile(rnd, stacks, weights, first + b * BUCKET + 1)
        if files_dir:
            with open(os.path.join(files_dir, "b%05d.pb.gz" % b), "wb") as f:
                f.write(pb)
        profiles.append(pb)
    gen_s = time.time() - t0

    def send(pb):
        status, body = c.upload(token, pb, "bench", "cpu")
        if status != 200:
            raise RuntimeError("upload failed: %s %s" % (status, body))

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=4) as ex:
        list(ex.map(send, profiles))
    return gen_s, time.time() - t0


def timed(c, token, path, params, runs=5):
    times = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        status, _, body = c.request("GET", path, token, params=params, timeout=600)
        dt = time.perf_counter() - t0
        if status != 200:
            raise RuntimeError("%s: %s %s" % (path, status, body[:300]))
        if i:  # the first run warms the page cache
            times.append(dt)
    return statistics.median(times), body


def go_pprof(files_dir):
    go = shutil.which("go")
    if not go:
        return None
    env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
               GOCACHE=os.path.join(files_dir, "gocache"), HOME=files_dir)
    files = sorted(os.path.join(files_dir, f) for f in os.listdir(files_dir)
                   if f.endswith(".pb.gz"))
    t0 = time.perf_counter()
    r = subprocess.run([go, "tool", "pprof", "-top", "-symbolize=none"] + files, env=env,
                       capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError("go tool pprof: %s" % r.stderr[-500:])
    return dt


def measure(backend, tmp, write_files):
    """Loads the 30 days into a fresh collector on backend and times the reads; the files of
    the per-bucket pprofs are written the first time only. [(query, seconds)]."""
    serve_args = ["--sync", "normal"] if backend == "sqlite" else []
    with Collector(backend=backend, serve_args=serve_args) as c:
        token = c.create_token("collector")
        viewer = c.create_token("user", role="viewer")
        now = int(time.time())
        now_bucket = now - now % BUCKET
        gen_s, load_s = load(c, token, tmp if write_files else None, now_bucket)
        print("%s: loaded %d buckets x %d stacks (%d distinct) in %.1f s (+%.1f s generating)"
              % (backend, N_BUCKETS, PER_BUCKET, N_STACKS, load_s, gen_s))
        if backend == "sqlite":
            print("database: %.1f MB" % (os.path.getsize(os.path.join(c.data, "roottrace.db"))
                                         / 1e6))
        else:  # the hour and day tiers of the closed days, as a collector's builder makes them
            t0 = time.time()
            out = subprocess.run([c.binary, "tiers", "build", "--delay-s", "0", "--days",
                                  str(DAYS + 1)] + c.server_args(), capture_output=True,
                                 text=True, check=True, timeout=3600).stdout.strip()
            print("%s: tiers build in %.1f s: %s" % (backend, time.time() - t0,
                                                      out.replace("\n", "; ")))
        rng = "%dd" % DAYS
        base = {"service": "bench", "profile_type": "cpu"}
        whole = {"time_range": "30d"} if DAYS == 30 else {
            "start": now - DAYS * 86400, "end": now}
        results = []
        results.append(("flamegraph %s" % rng, timed(c, viewer, "/api/apm/profiles/flamegraph",
                                                     dict(base, **whole))[0]))
        results.append(("top %s" % rng, timed(c, viewer, "/api/apm/profiles/top",
                                              dict(base, **whole))[0]))
        week = 7 * 86400
        end = now_bucket + BUCKET
        results.append(("diff 7d vs 7d", timed(c, viewer, "/api/apm/profiles/diff", dict(
            base, before_start=end - 2 * week, before_end=end - week,
            after_start=end - week, after_end=end))[0]))
        results.append(("cost %s" % rng, timed(c, viewer, "/api/apm/profiles/cost",
                                               dict(base, **whole))[0]))
        return results


def backends():
    """sqlite, and fleet (PostgreSQL + ClickHouse) when both servers are installed; the
    BENCH_BACKENDS variable (space-separated) chooses."""
    chosen = os.environ.get("BENCH_BACKENDS")
    if chosen:
        return chosen.split()
    import fleet_servers
    why = fleet_servers.available()
    if why:
        print("fleet backend skipped: " + why)
        return ["sqlite"]
    return ["sqlite", "fleet"]


def main():
    tmp = tempfile.mkdtemp(prefix="rt-bench-query-")
    try:
        names = backends()
        if os.environ.get("ROOTTRACE_FLEET_CLUSTER"):
            print("fleet: ClickHouse as a cluster of %s (shards x replicas), reads through"
                  " Distributed tables" % os.environ["ROOTTRACE_FLEET_CLUSTER"])
        by_backend = {b: measure(b, tmp, i == 0) for i, b in enumerate(names)}
        print("\n| query | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for q in range(len(by_backend[names[0]])):
            print("| %s | %s |" % (by_backend[names[0]][q][0], " | ".join(
                "%.1f ms" % (by_backend[b][q][1] * 1000) for b in names)))
        print("(median of 5 after one warm-up run each)")
        pp = go_pprof(tmp)
        ok = True
        for b in names:
            fg = by_backend[b][0][1]
            if pp is None:
                print("%s: go tool pprof: go not installed, no ratio" % b)
            else:
                print("%s: go tool pprof -top over %d files: %.2f s; flamegraph is %.0fx faster"
                      % (b, N_BUCKETS, pp, pp / fg))
            ok = ok and fg < 0.5 and (pp is None or pp / fg >= 20)
        print("targets (flamegraph < 500 ms, >= 20x pprof, every backend): %s"
              % ("met" if ok else "NOT met"))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
