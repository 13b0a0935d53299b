#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# On-demand lines: a generated -g C library (one translation unit of F functions compiled once,
# linked C times under prefixed symbol names: C compile units, a ~100 MB debug file), split as
# Debian does (objcopy --only-keep-debug, strip), laid out by build-id; 1,000 file offsets inside
# random functions resolved by the collector's resolver (build/bench/lines-resolve: the first
# pass opens the file and reads the line tables, the second is answered from the cache) and by
# eu-addr2line on the same addresses; both must agree. bench/bench-line-resolver.sh --build DIR.
import argparse
import os
import random
import re
import shutil
import subprocess
import time

OFFSETS = 1000


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


def generate(path, functions):
    with open(path, "w") as f:
        for i in range(functions):
            f.write("struct s%d { int a; long b; double c; struct s%d *next; };\n" % (i, i))
            f.write("long fn_%d(struct s%d *p, long n)\n{\n\tlong acc = %d;\n" % (i, i, i))
            for k in range(12):
                f.write("\tacc += p->a * n + %d;\n\tif (acc > %d)\n\t\tacc -= p->b;\n"
                        % (k, k * 1000))
            f.write("\treturn acc + (long)p->c;\n}\n")


def build_big(d, functions, copies):
    lib = os.path.join(d, "libbig.so")
    if os.path.exists(lib + ".debug"):
        return lib
    os.makedirs(d, exist_ok=True)
    src, obj = os.path.join(d, "big.c"), os.path.join(d, "big.o")
    generate(src, functions)
    run(["gcc", "-O1", "-g", "-fPIC", "-c", src, "-o", obj])
    objs = []
    for c in range(copies):
        o = os.path.join(d, "big%d.o" % c)
        run(["objcopy", "--prefix-symbols=c%d_" % c, obj, o])
        objs.append(o)
    run(["gcc", "-shared", "-o", lib] + objs)
    for o in objs:
        os.unlink(o)
    run(["objcopy", "--only-keep-debug", lib, lib + ".debug"])
    run(["strip", "--strip-debug", lib, "-o", lib + ".stripped"])
    return lib


def loads(path):
    out = run(["readelf", "-lW", path]).stdout
    return [(int(m[0], 16), int(m[1], 16), int(m[2], 16))
            for m in re.findall(r"LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+"
                                r"(0x[0-9a-f]+)", out)]


def vaddr_to_offset(segments, vaddr):
    for off, va, size in segments:
        if va <= vaddr < va + size:
            return vaddr - va + off
    raise ValueError("0x%x" % vaddr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--functions", type=int, default=2000)
    ap.add_argument("--copies", type=int, default=80)
    args = ap.parse_args()
    d = os.path.join(os.path.abspath(args.build), "bench", "lines")
    t0 = time.monotonic()
    lib = build_big(d, args.functions, args.copies)
    built_s = time.monotonic() - t0
    debug = lib + ".debug"
    build_id = re.search(r"Build ID: ([0-9a-f]+)", run(["eu-readelf", "-n", lib]).stdout).group(1)
    root = os.path.join(d, "debug")
    shutil.rmtree(root, ignore_errors=True)
    sub = os.path.join(root, ".build-id", build_id[:2])
    os.makedirs(sub)
    os.symlink(debug, os.path.join(sub, build_id[2:] + ".debug"))
    os.symlink(lib + ".stripped", os.path.join(sub, build_id[2:]))

    syms = [(int(a, 16), int(s, 16)) for a, s in
            re.findall(r"^([0-9a-f]+) ([0-9a-f]+) T c\d+_fn_\d+$",
                       run(["nm", "-S", lib]).stdout, re.M)]
    rnd = random.Random(32)
    vaddrs = [a + rnd.randrange(s) for a, s in rnd.sample(syms, OFFSETS)]
    segments = loads(lib)
    offsets = [vaddr_to_offset(segments, v) for v in vaddrs]

    resolver = os.path.join(os.path.abspath(args.build), "bench", "lines-resolve")
    stdin = "".join("0x%x\n" % o for o in offsets)
    r = run([resolver, "--debug-dir", root, build_id], input=stdin)
    ours = [line.split(" ", 1)[1] for line in r.stdout.splitlines()]
    r = run([resolver, "--debug-dir", root, "--time", "1", build_id], input=stdin)
    m = re.search(r"first ([\d.]+) ms cpu ([\d.]+) ms cached ([\d.]+) ms cpu ([\d.]+) ms",
                  r.stderr)
    first_ms, first_cpu, cached_ms, cached_cpu = (float(g) for g in m.groups())

    t0, c0 = time.monotonic(), os.times()
    peer = run(["eu-addr2line", "-e", debug] + ["0x%x" % v for v in vaddrs]).stdout
    peer_ms, c1 = (time.monotonic() - t0) * 1e3, os.times()
    peer_cpu = (c1.children_user + c1.children_system - c0.children_user
                - c0.children_system) * 1e3
    peer_lines = [line.rsplit(":", 1)[0] if line.count(":") > 1 else line
                  for line in peer.splitlines()]
    agree = sum(1 for a, b in zip(ours, peer_lines) if a == b)

    size_mb = os.path.getsize(debug) / 1e6
    print("debug file: %.1f MB (%d compile units of %d functions, built in %.0f s), "
          "%d offsets" % (size_mb, args.copies, args.functions, built_s, OFFSETS))
    print("| %d offsets | wall | CPU | CPU per offset |" % OFFSETS)
    print("|---|---|---|---|")
    print("| resolver, first (open, unit ranges, line tables) | %.0f ms | %.0f ms | %.0f us |"
          % (first_ms, first_cpu, first_cpu * 1e3 / OFFSETS))
    print("| resolver, cached | %.2f ms | %.2f ms | %.2f us |"
          % (cached_ms, cached_cpu, cached_cpu * 1e3 / OFFSETS))
    print("| eu-addr2line -e debug file (one process, page cache warm) | %.0f ms | %.0f ms | "
          "%.0f us |" % (peer_ms, peer_cpu, peer_cpu * 1e3 / OFFSETS))
    print("agreement with eu-addr2line: %d / %d" % (agree, OFFSETS))
    if agree != OFFSETS:
        for a, b in list(zip(ours, peer_lines))[:5]:
            print("  ours %s / peer %s" % (a, b))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
