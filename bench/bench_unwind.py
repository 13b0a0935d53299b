# SPDX-License-Identifier: Apache-2.0
# Runs `record --pid` on a CPU-bound workload 30 frames deep (tests/fixtures/unwind/edge.c,
# mode "deep"), built with and without frame pointers, alternating --unwind=auto and fp for
# several rounds; prints medians of BPF ns per sample and their ratio, completeness (share of
# the workload's samples whose stack reaches main / _start), BPF load time and table figures.
# The program also runs (and returns at once) for every other process's samples: their cost,
# measured per round on a sleeping target, is taken out of the per-sample figure. In the same
# rounds, when installed: perf record --call-graph dwarf on the no-FP workload and bpftrace's
# profile:hz:99 (bench_unwind_peers.py), and the record's CPU + BPF share of a core and RSS.
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_py  # noqa: E402
import bench_unwind_peers as peers  # noqa: E402

DEPTH = 30


def run_once(build, exe, unwind, seconds, freq, early_ns=0.0):
    out = tempfile.mktemp(prefix="rt-bench-unwind-", suffix=".pb.gz")
    argv = [exe, "deep", str(seconds + 3), str(DEPTH)] if exe else ["sleep", str(seconds + 3)]
    procs = [subprocess.Popen(argv)]
    log = tempfile.TemporaryFile(mode="w+")
    try:
        time.sleep(0.3)
        start = time.monotonic()
        rc, cpu_s, rss_kib = peers.run_with_rusage(
            [os.path.join(build, "roottrace-agent"), "record", "--pid", str(procs[0].pid),
             "--unwind", unwind, "--duration", "%ds" % seconds, "--frequency", str(freq),
             "--output", out], stdout=subprocess.DEVNULL, stderr=log)
        wall_s = time.monotonic() - start
    finally:
        for p in procs:
            p.kill()
            p.wait()
    log.seek(0)
    err = log.read()
    if rc:
        raise SystemExit("record failed: " + err)
    prof = pprof_py.parse_file(out)
    os.unlink(out)
    m = re.search(r"BPF run time: ([\d.]+) ms over (\d+) runs", err)
    run_ns = float(m.group(1)) * 1e6 if m else 0
    runs = int(m.group(2)) if m else 0
    samples = sum(s.values[0] for s in prof.samples)
    # burn is the leaf: a frame-pointer walk skips its caller recurse_leaf
    work = [s for s in prof.samples if "burn" in s.stack]
    complete = sum(s.values[0] for s in work if s.stack[-1] == "_start")
    to_main = sum(s.values[0] for s in work if "main" in s.stack)
    total = sum(s.values[0] for s in work)
    load = re.search(r"BPF load \(verifier\): (\d+) ms", err)
    tables = re.search(r"unwind tables: (\d+) built in ([\d.]+) ms, \d+ big ones building; "
                       r"(\d+) loaded, (\d+) rows "
                       r"\(([\d.]+) MiB\) of (\d+) \(([\d.]+) MiB", err)
    return {
        # the record's whole life (BPF load, tables, drain, encode) plus its BPF run time
        "core_share": (cpu_s + run_ns / 1e9) / wall_s,
        "bpf_core_share": run_ns / 1e9 / wall_s,
        "rss_kib": rss_kib,
        "ns_per_sample": (run_ns - (runs - samples) * early_ns) / samples if samples else 0,
        "ns_per_run": run_ns / runs if runs else 0,
        "complete": complete / total if total else 0,
        "to_main": to_main / total if total else 0,
        "load_ms": int(load.group(1)) if load else None,
        "tables": tables.groups() if tables else None,
    }


def nofp_cells(round_index, with_perf):
    """The no-FP workload's cells of one round, rotated so each goes first in turn."""
    cells = ["auto", "fp"] + (["perf"] if with_perf else [])
    k = round_index % len(cells)
    return cells[k:] + cells[:k]


def run_cell(a, results, r, build_kind, cell, early):
    exe = os.path.join(a.build, "unwind", "edge-" + build_kind)
    if cell == "perf":
        res = peers.run_perf(exe, DEPTH, a.seconds, a.frequency)
        print("round %d nofp perf dwarf    %5.2f%% of a core, %.0f us CPU/sample, "
              "reaching main %5.1f%%" % (r + 1, 100 * res["record_core_share"],
                                         res["cpu_us_per_sample"], 100 * res["to_main"]),
              file=sys.stderr)
    else:
        res = run_once(a.build, exe, cell, a.seconds, a.frequency, early[cell])
        print("round %d %-4s --unwind=%-4s %8.0f ns/sample  complete %5.1f%%  %.2f%% of a core"
              % (r + 1, build_kind, cell, res["ns_per_sample"], 100 * res["complete"],
                 100 * res["core_share"]), file=sys.stderr)
    results.setdefault((build_kind, cell), []).append(res)


def run_bpftrace_cell(a, results, r):
    res = peers.run_bpftrace(a.seconds)
    print("round %d bpftrace profile:hz:99  %.0f ns/run, %.0f runs/s" %
          (r + 1, res["ns_per_run"], res["runs_per_s"]), file=sys.stderr)
    results.setdefault(("host", "bpftrace"), []).append(res)


def run_rounds(a, with_perf, with_bpftrace):
    results = {}
    for r in range(a.rounds):
        if with_bpftrace and r % 2 == 0:
            run_bpftrace_cell(a, results, r)
        early = {u: run_once(a.build, None, u, 3, a.frequency)["ns_per_run"]
                 for u in ("auto", "fp")}
        print("round %d: a run for another process costs %.0f ns (auto), %.0f ns (fp)" %
              (r + 1, early["auto"], early["fp"]), file=sys.stderr)
        for cell in nofp_cells(r, with_perf):
            run_cell(a, results, r, "nofp", cell, early)
        for cell in (("auto", "fp") if r % 2 == 0 else ("fp", "auto")):
            run_cell(a, results, r, "fp", cell, early)
        if with_bpftrace and r % 2 == 1:
            run_bpftrace_cell(a, results, r)
    return results


def median_of(results, key, field):
    return statistics.median(x[field] for x in results[key])


def print_agent(results):
    auto = ("nofp", "auto")
    print("agent record --unwind=auto, nofp: %.2f%% of one core (CPU over its whole run, BPF "
          "load included, + BPF run time; %.3f%% in BPF), peak RSS %.1f MiB" % (
              100 * median_of(results, auto, "core_share"),
              100 * median_of(results, auto, "bpf_core_share"),
              median_of(results, auto, "rss_kib") / 1024))


def print_perf(results):
    perf = ("nofp", "perf")
    agent = median_of(results, ("nofp", "auto"), "core_share")
    share = median_of(results, perf, "record_core_share")
    total = median_of(results, perf, "total_core_share")
    print("perf record --call-graph dwarf, nofp: %.2f%% of one core while recording "
          "(%.2fx the agent's), %.2f%% with perf script's unwinding (%.1fx), "
          "%.0f us CPU/sample, %.0f bytes/sample, peak RSS %.1f MiB, stacks reaching main "
          "%.1f%%" % (100 * share, share / agent, 100 * total, total / agent,
                      median_of(results, perf, "cpu_us_per_sample"),
                      median_of(results, perf, "bytes_per_sample"),
                      median_of(results, perf, "rss_kib") / 1024,
                      100 * median_of(results, perf, "to_main")))


def print_bpftrace(results):
    bt = ("host", "bpftrace")
    auto = ("nofp", "auto")
    ns = median_of(results, bt, "ns_per_run")
    bpf_share = median_of(results, bt, "bpf_core_share")
    print("bpftrace %s: %.0f BPF ns/run (%.2fx the agent's ns/sample on nofp), %.0f runs/s, "
          "%.3f%% of one core in BPF (%.2fx the agent's), bpftrace CPU %.2f s, peak RSS %.1f MiB"
          % (peers.BPFTRACE_PROGRAM, ns, ns / median_of(results, auto, "ns_per_sample"),
             median_of(results, bt, "runs_per_s"), 100 * bpf_share,
             bpf_share / median_of(results, auto, "bpf_core_share"),
             median_of(results, bt, "cpu_s"), median_of(results, bt, "rss_kib") / 1024))


def print_peers(results, with_perf, with_bpftrace):
    print()
    print_agent(results)
    if with_perf:
        print_perf(results)
    else:
        print("perf: not installed, not measured")
    if with_bpftrace:
        print_bpftrace(results)
    else:
        print("bpftrace: not installed, not measured")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--frequency", type=int, default=99)
    a = ap.parse_args()
    if os.geteuid():
        raise SystemExit("bench-unwind needs root")
    with_perf = peers.perf_available()
    stats_fd = peers.enable_bpf_stats() if peers.bpftrace_available() else None
    with_bpftrace = stats_fd is not None
    results = run_rounds(a, with_perf, with_bpftrace)
    print("| build | --unwind | BPF ns/sample (median) | auto/fp | BPF ns/run (median) | "
          "stacks reaching main | reaching _start |")
    print("|---|---|---|---|---|---|---|")
    for build_kind in ("nofp", "fp"):
        fp_ns = statistics.median(x["ns_per_sample"] for x in results[(build_kind, "fp")])
        for unwind in ("auto", "fp"):
            rs = results[(build_kind, unwind)]
            ns = statistics.median(x["ns_per_sample"] for x in rs)
            print("| %s | %s | %.0f | %s | %.0f | %.1f%% | %.1f%% |" % (
                build_kind, unwind, ns, "%.2f" % (ns / fp_ns) if unwind == "auto" else "1",
                statistics.median(x["ns_per_run"] for x in rs),
                100 * statistics.median(x["to_main"] for x in rs),
                100 * statistics.median(x["complete"] for x in rs)))
    auto = [x for k, v in results.items() if k[1] == "auto" for x in v]
    print()
    print("BPF load (verifier) ms, auto: median %d" % statistics.median(
        x["load_ms"] for x in auto if x["load_ms"] is not None))
    fp_loads = [x["load_ms"] for k, v in results.items() if k[1] == "fp" for x in v
                if x["load_ms"] is not None]
    if fp_loads:
        print("BPF load ms, fp: median %d" % statistics.median(fp_loads))
    t = auto[-1]["tables"]
    if t:
        print("tables of one workload process: %s built in %s ms, %s rows (%s MiB) loaded; "
              "rows map %s rows (%s MiB)" % (t[0], t[1], t[3], t[4], t[5], t[6]))
    print_peers(results, with_perf, with_bpftrace)
    if stats_fd is not None:
        os.close(stats_fd)


if __name__ == "__main__":
    main()
