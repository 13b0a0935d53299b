#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Writes a realistic CPU pprof for the ingest benchmark: about 500 distinct stacks of depth
# 20-40 drawn from a shared tree of Go-like function names, cpu/nanoseconds at 10 ms a sample.
#   bench/gen-cpu-profile.py OUT [--stacks 500] [--gzip]
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import pprof_py  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--stacks", type=int, default=500)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time", type=int, default=0,
                    help="the profile's start, unix seconds (default now); it also varies the"
                         " values, not the stacks")
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
    data = pprof_py.build(samples, sample_types=[("samples", "count"), ("cpu", "nanoseconds")],
                          time_nanos=a.time * 10**9 if a.time else time.time_ns(), duration_nanos=10_000_000_000,
                          period_type=("cpu", "nanoseconds"), period=10_000_000)
    if a.gzip:
        data = pprof_py.gzipped(data)
    with open(a.out, "wb") as f:
        f.write(data)
    print("%s: %d stacks, %d bytes" % (a.out, len(samples), len(data)), file=sys.stderr)


if __name__ == "__main__":
    main()
