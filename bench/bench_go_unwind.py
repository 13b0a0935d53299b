#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# BPF cost of a Go sample walked by the pcsp rows (agent/unwind/go_rows.c) against frame
# pointers: `record --pid` on a stripped Go process spinning (tests/helpers/goleaf: a frameless
# leaf under main.ledgerPass; tests/helpers/gohot: every frame with a frame pointer), with
# --unwind=auto and fp, and with --unwind=auto of a second build (--before DIR: the agent
# before the rows, for which auto was frame pointers for Go), rounds alternating; medians of
# BPF ns per sample (the runs of the machine's other samples, measured on a sleeping target,
# taken out) and the share of the leaf's samples with its direct caller under it.
# bench/bench-go-unwind.sh --build DIR [--before DIR] [--rounds N] [--seconds S]. Needs root.
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
import pprof_py  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# workload -> (helper folder, leaf, its direct caller)
WORKLOADS = {
    "goleaf": ("goleaf", "main.mixLeaf", "main.ledgerPass"),
    "gohot": ("gohot", "main.settleInvoices", "main.billingRun"),
}


def go_env(build):
    return dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
                GOCACHE=os.path.join(build, "gocache"), CGO_ENABLED="0")


def build_workload(build, name):
    exe = os.path.join(build, "bench", "go-unwind", name + "-stripped")
    if not os.path.exists(exe):
        os.makedirs(os.path.dirname(exe), exist_ok=True)
        subprocess.run(["go", "build", "-ldflags=-s -w", "-o", exe, "."],
                       cwd=os.path.join(SRC, "tests", "helpers", WORKLOADS[name][0]),
                       env=go_env(build), check=True, capture_output=True)
    return exe


def record(agent, argv, unwind, seconds):
    """BPF run ns, runs, and the profile of one record --pid of argv."""
    out = tempfile.mktemp(prefix="rt-bench-go-unwind-", suffix=".pb.gz")
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        r = subprocess.run([agent, "record", "--pid", str(p.pid), "--unwind", unwind,
                            "--duration", "%ds" % seconds, "--frequency", "99", "--output",
                            out], capture_output=True, text=True)
    finally:
        p.kill()
        p.wait()
    if r.returncode:
        raise SystemExit("record failed: " + r.stderr)
    m = re.search(r"BPF run time: ([\d.]+) ms over (\d+) runs", r.stderr)
    prof = pprof_py.parse_file(out)
    os.unlink(out)
    return (float(m.group(1)) * 1e6 if m else 0.0), (int(m.group(2)) if m else 0), prof


def cell(agent, exe, name, unwind, seconds):
    early_ns, early_runs, _ = record(agent, ["sleep", str(seconds + 3)], unwind, seconds)
    early = early_ns / early_runs if early_runs else 0.0
    run_ns, runs, prof = record(agent, [exe, str(seconds + 3)], unwind, seconds)
    samples = sum(s.values[0] for s in prof.samples)
    _, leaf, caller = WORKLOADS[name]
    hot = [s for s in prof.samples if s.stack and s.stack[0] == leaf]
    total = sum(s.values[0] for s in hot) or 1
    return {
        "ns_per_sample": (run_ns - (runs - samples) * early) / samples if samples else 0,
        "caller": sum(s.values[0] for s in hot if s.stack[1:2] == [caller]) / total,
        "goexit": sum(s.values[0] for s in hot if s.stack[-1] == "runtime.goexit") / total,
        "depth": statistics.median(len(s.stack) for s in hot) if hot else 0,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--before", help="another build: its --unwind=auto as a third cell")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cells = [("pcsp rows (auto)", os.path.join(build, "roottrace-agent"), "auto"),
             ("frame pointers (fp)", os.path.join(build, "roottrace-agent"), "fp")]
    if a.before:
        cells.append(("before: auto", os.path.join(os.path.abspath(a.before),
                                                   "roottrace-agent"), "auto"))
    exes = {name: build_workload(build, name) for name in WORKLOADS}
    results = {(name, label): [] for name in WORKLOADS for label, _, _ in cells}
    for r in range(a.rounds):
        for name in WORKLOADS:
            order = cells[r % len(cells):] + cells[:r % len(cells)]
            for label, agent, unwind in order:
                res = cell(agent, exes[name], name, unwind, a.seconds)
                results[(name, label)].append(res)
                print("round %d %-7s %-20s %s" % (r + 1, name, label, res), file=sys.stderr)
    print("| workload | walk | BPF ns per sample | leaf's caller under it | ends at "
          "runtime.goexit | frames |")
    print("|---|---|---|---|---|---|")
    for (name, label), rs in results.items():
        med = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
        print("| %s | %s | %.0f | %.1f %% | %.1f %% | %d |" % (
            name, label, med["ns_per_sample"], 100 * med["caller"], 100 * med["goexit"],
            med["depth"]))


if __name__ == "__main__":
    main()
