#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Writes a realistic CPU pprof for the ingest benchmark: about 500 distinct stacks of depth
# 20-40 drawn from a shared tree of Go-like function names, cpu/nanoseconds at 10 ms a sample.
# --otlp writes the same samples as an OTLP ExportProfilesServiceRequest ((samples, count)
# every 10 ms of cpu), --links gives every OTLP sample its own span (one trace). --lines gives
# every location a file and line, as Go's runtime/pprof does (a function's locations at up to
# eight lines of it; the same stacks of names): the line detail's cost.
#   bench/gen-cpu-profile.py OUT [--stacks 500] [--gzip] [--otlp [--links]] [--lines]
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import otlp_py  # noqa: E402
import pprof_py  # noqa: E402


def otlp_request(stacks_values, links):
    """The same samples as one OTLP profile: (samples, count) with a 10 ms cpu period."""
    r = otlp_py.Request()
    locations = {}
    samples = []
    for i, (frames, n) in enumerate(stacks_values):
        ids = []
        for name in reversed(frames):  # leaf first
            if name not in locations:
                locations[name] = r.location([name])
            ids.append(locations[name])
        s = {"stack": r.stack(ids), "values": [n]}
        if links:
            s["link"] = r.link("0af7651916cd43dd8448eb211c80319c", "%016x" % (i + 1))
        samples.append(s)
    r.resource({"service.name": "bench"}).profile(
        ("samples", "count"), samples, period_type=("cpu", "nanoseconds"), period=10_000_000,
        time_nanos=time.time_ns())
    return r.protobuf()


def with_lines(frames, rng):
    """Each frame as (name, file, line): its package's file, one of eight lines of it."""
    out = []
    for name in frames:
        pkg = name.split(".(")[0].split(".")[0]
        base = 20 + sum(map(ord, name)) % 400
        out.append((name, "/src/%s/%s.go" % (pkg, pkg.rsplit("/", 1)[-1]),
                    base + rng.randint(0, 7)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--stacks", type=int, default=500)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time", type=int, default=0,
                    help="the profile's start, unix seconds (default now); it also varies the"
                         " values, not the stacks")
    ap.add_argument("--otlp", action="store_true")
    ap.add_argument("--links", action="store_true")
    ap.add_argument("--lines", action="store_true")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    pkgs = ["net/http", "encoding/json", "runtime", "database/sql", "github.com/acme/api/handlers",
            "github.com/acme/api/store", "compress/gzip", "crypto/tls", "sync", "bufio"]
    funcs = ["%s.(*T%d).%s" % (rng.choice(pkgs), i % 17, rng.choice(
        ["Serve", "Decode", "Encode", "Query", "Write", "Read", "handle", "mallocgc", "Lock",
         "scan", "next", "flush"])) + str(i) for i in range(400)]
    base = ["runtime.goexit", "net/http.(*conn).serve", "net/http.serverHandler.ServeHTTP"]
    stacks = set()
    while len(stacks) < a.stacks:
        depth = rng.randint(20, 40)
        prefix = rng.randint(3, 12)  # shared prefixes, as real call trees have
        stack = base + [funcs[(j * 7 + prefix) % 60] for j in range(prefix)]
        stack += [rng.choice(funcs) for _ in range(depth - len(stack))]
        stacks.add(tuple(stack))
    samples = []
    if a.time:
        rng = random.Random(a.time)
    for s in sorted(stacks):
        n = rng.randint(1, 30)
        samples.append((list(s), [n, n * 10_000_000]))
    if a.lines and not a.otlp:  # OTLP: names only
        samples = [(with_lines(f, rng), v) for f, v in samples]
    if a.otlp:
        data = otlp_request([(f, v[0]) for f, v in samples], a.links)
    else:
        data = pprof_py.build(samples, sample_types=[("samples", "count"), ("cpu", "nanoseconds")],
                              time_nanos=a.time * 10**9 if a.time else time.time_ns(),
                              duration_nanos=10_000_000_000,
                              period_type=("cpu", "nanoseconds"), period=10_000_000)
    if a.gzip:
        data = pprof_py.gzipped(data)
    with open(a.out, "wb") as f:
        f.write(data)
    print("%s: %d stacks, %d bytes" % (a.out, len(samples), len(data)), file=sys.stderr)


if __name__ == "__main__":
    main()
