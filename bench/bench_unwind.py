# SPDX-License-Identifier: Apache-2.0
# Runs `record --pid` on a CPU-bound workload 30 frames deep (tests/fixtures/unwind/edge.c,
# mode "deep"), built with and without frame pointers, alternating --unwind=auto and fp for
# several rounds; prints medians of BPF ns per sample and their ratio, completeness (share of
# the workload's samples whose stack reaches main / _start), BPF load time and table figures.
# The program also runs (and returns at once) for every other process's samples: their cost,
# measured per round on a sleeping target, is taken out of the per-sample figure.
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

DEPTH = 30


def run_once(build, exe, unwind, seconds, freq, early_ns=0.0):
    out = tempfile.mktemp(prefix="rt-bench-unwind-", suffix=".pb.gz")
    argv = [exe, "deep", str(seconds + 3), str(DEPTH)] if exe else ["sleep", str(seconds + 3)]
    procs = [subprocess.Popen(argv)]
    try:
        time.sleep(0.3)
        res = subprocess.run([os.path.join(build, "roottrace-agent"), "record", "--pid",
                              str(procs[0].pid), "--unwind", unwind, "--duration",
                              "%ds" % seconds, "--frequency", str(freq), "--output", out],
                             capture_output=True, text=True, timeout=120)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    if res.returncode:
        raise SystemExit("record failed: " + res.stderr)
    err = res.stderr
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
    tables = re.search(r"unwind tables: (\d+) built in ([\d.]+) ms; (\d+) loaded, (\d+) rows "
                       r"\(([\d.]+) MiB\) of (\d+) \(([\d.]+) MiB", err)
    return {
        "ns_per_sample": (run_ns - (runs - samples) * early_ns) / samples if samples else 0,
        "ns_per_run": run_ns / runs if runs else 0,
        "complete": complete / total if total else 0,
        "to_main": to_main / total if total else 0,
        "load_ms": int(load.group(1)) if load else None,
        "tables": tables.groups() if tables else None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--frequency", type=int, default=99)
    a = ap.parse_args()
    if os.geteuid():
        raise SystemExit("bench-unwind needs root")
    results = {}
    for r in range(a.rounds):
        early = {u: run_once(a.build, None, u, 3, a.frequency)["ns_per_run"]
                 for u in ("auto", "fp")}
        print("round %d: a run for another process costs %.0f ns (auto), %.0f ns (fp)" %
              (r + 1, early["auto"], early["fp"]), file=sys.stderr)
        for build_kind in ("nofp", "fp"):
            exe = os.path.join(a.build, "unwind", "edge-" + build_kind)
            for unwind in (("auto", "fp") if r % 2 == 0 else ("fp", "auto")):
                res = run_once(a.build, exe, unwind, a.seconds, a.frequency, early[unwind])
                results.setdefault((build_kind, unwind), []).append(res)
                print("round %d %-4s --unwind=%-4s %8.0f ns/sample  complete %5.1f%%" %
                      (r + 1, build_kind, unwind, res["ns_per_sample"], 100 * res["complete"]),
                      file=sys.stderr)
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


if __name__ == "__main__":
    main()
